"""vLLM 0.33.0's own reading of an OffloadingConnector's chunk size: the real
`build_offloading_config` (offloading/config.py), on real cache specs and
stub configs that carry only the fields it reads. Its `blocks_per_chunk`
is what `kv_connector_extra_config`'s `blocks_per_chunk` or `block_size`
resolve to over the offloaded groups' tokens per block.
"""

from __future__ import annotations

from types import SimpleNamespace

from models.deploy import SHARDED_DRAFT

# What vLLM raises on a chunk size it refuses: its own ValueError and assert,
# and int()'s TypeError (a list) and OverflowError (an infinity). Anything
# else (a stub missing a field) is not a refusal, and fails the recording.
REFUSALS = (ValueError, AssertionError, TypeError, OverflowError)


class RealOffload:
    """Loads vLLM and torch on construction: a missing or renamed vLLM fails loudly here."""

    def __init__(self) -> None:
        import torch
        from vllm.distributed.kv_transfer.kv_connector.v1.offloading.config import build_offloading_config
        from vllm.v1.kv_cache_interface import FullAttentionSpec, MambaSpec

        self._build = build_offloading_config
        self._attention, self._mamba, self._dtype = FullAttentionSpec, MambaSpec, torch.float16

    def read(self, extra_config: dict, block: int, dcp: int, draft: str) -> tuple[bool, int]:
        """(refused, blocks per chunk) for `extra_config` over a hybrid model's groups at
        `block` tokens per block and DCP `dcp`: the target attention (DCP-sharded when
        `dcp` > 1), the recurrent state, and a draft attention group where `draft` is
        SHARDED_DRAFT (an MTP layer's) or UNSHARDED_DRAFT (an EAGLE head's). Refused: the rest is 0."""

        def attention(sharded: bool):
            return self._attention(
                block_size=block, dcp_sharded=sharded, num_kv_heads=1, head_size=8, dtype=self._dtype
            )

        specs = [
            attention(dcp > 1),
            self._mamba(block_size=block, shapes=((8,),), dtypes=(self._dtype,), mamba_cache_mode="align"),
        ]
        if draft:
            specs.append(attention(draft == SHARDED_DRAFT and dcp > 1))
        groups = [SimpleNamespace(kv_cache_spec=spec, layer_names=[f"layer.{i}"]) for i, spec in enumerate(specs)]
        cache = SimpleNamespace(
            hisparse_host_num_blocks=None,
            prefix_cacheable_group_ids=tuple(range(len(groups))),
            kv_cache_groups=groups,
            num_blocks=0,
            kv_cache_tensors=[],
            kv_tp_replicas=1,
        )
        parallel = SimpleNamespace(
            decode_context_parallel_size=dcp,
            tensor_parallel_size=dcp,
            pipeline_parallel_size=1,
            prefill_context_parallel_size=1,
            world_size=dcp,
            distributed_executor_backend="mp",
            nnodes_within_dp=1,
            rank=0,
            data_parallel_index=0,
            data_parallel_size=1,
            data_parallel_rank_local=0,
        )
        config = SimpleNamespace(
            kv_transfer_config=SimpleNamespace(kv_connector_extra_config=extra_config, engine_id="gridproof"),
            parallel_config=parallel,
            model_config=SimpleNamespace(
                use_mla=False, get_total_num_kv_heads=lambda: 1, model="hybrid", dtype="float16", max_model_len=4096
            ),
            use_v2_model_runner=False,
            kv_events_config=None,
            cache_config=SimpleNamespace(
                cache_dtype="auto",
                kv_cache_layout=None,
                block_size=block,
                prefix_match_unit=None,
                enable_prefix_caching=True,
                mamba_cache_mode="align",
            ),
        )
        try:
            return False, self._build(config, cache).cache.blocks_per_chunk
        except REFUSALS:
            return True, 0
