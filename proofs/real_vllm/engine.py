"""The real vLLM 0.33.0 scheduler, end to end, on a CPU: a gridproof geometry made into the
engine's own configuration, a request's whole prefill driven step by step, and what later
requests are restored.

Real: `Scheduler` (`schedule`, `update_from_output`, the split), `KVCacheManager`,
`HybridKVCacheCoordinator`, the single-type managers, `BlockPool`, request block hashing and,
with `offload=True`, the native `OffloadingConnector`, its scheduler side and its worker side.
Stood in: the model's outputs (one sampled token when a prompt is done, vLLM's own scheduler
tests do the same), the model (a tiny Llama-shaped config.json, nothing downloaded), DCP > 1 (a
number the scheduler and the cache manager read; validating it would ask for several ranks), the
speculative configuration (an object with the flags the scheduler and `VllmConfig` read) and,
with offload, the transfers (each finishes when submitted) and, by default, the offload tier's
bookkeeping (a manager that remembers every key stored; see `OffloadSide`).

The cache groups come from the geometry as `EngineCore._initialize_kv_caches` would see them
(v1/engine/core.py:335-369): a `FullAttentionSpec` per target and draft group with its DCP
sharding and EAGLE annotation, a `MambaSpec` in align mode per recurrent group at the variant's
cadence, declaring the internal prefill checkpoint its layer class declares
(`prefill_checkpoint_alignment`); `cache_config.block_size` reset to the smallest spec block,
then the scheduler and hash block sizes and the hit alignment resolved by vLLM's own functions.

`python3 -m proofs.real_vllm.engine GEOMETRY --budget B --prompt-tokens P [--offload]` prints one
case's observations as JSON: the command a disagreement quotes.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from functools import cache
from types import SimpleNamespace

from models.errors import GridproofError
from models.geometry import DRAFT, RECURRENT, TARGET, Geometry, load_geometry
from models.plan import plan
from models.variants import BASELINE, Variant

# A Llama-shaped model small enough to build a ModelConfig from: only its config.json is read.
_TINY_MODEL = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "num_hidden_layers": 2,
    "vocab_size": 32000,
    "max_position_embeddings": 1 << 24,
    "torch_dtype": "float32",
}
# Enough blocks that nothing is evicted before a later request looks (`blocks_for` sizes a pool
# for given requests: a pool of 400,000 takes vLLM 3 s to build).
DEFAULT_NUM_BLOCKS = 400_000
SPECULATIVE_TOKENS = 3  # the draft length of the stand-in EAGLE drafter (a multi-module MTP drafts L)
OFFLOAD_SPEC = "GridproofOffloadingSpec"  # the offloading spec vLLM's factory finds in this module
OFFLOAD_TIERS = ("remembering", "cpu")  # the offload tier's bookkeeping: the stand-in, or vLLM's own
OFFLOAD_CPU_CHUNKS = 1 << 22  # room in the "cpu" tier: nothing is evicted before a later request looks
MAX_DRAIN_STEPS = 16  # steps a finished request's last store jobs may take to be built and completed


@cache
def _tiny_model_dir() -> str:
    directory = tempfile.mkdtemp(prefix="gridproof-tiny-model-")
    with open(os.path.join(directory, "config.json"), "w") as out:
        json.dump(_TINY_MODEL, out)
    return directory


def speculative_stand_in(
    eagle_block_drop: bool, lookahead: int, prefill_lookahead: int, has_draft: bool, draft_slots: int = 0
):
    """What vLLM's `SpeculativeConfig` answers the scheduler and `VllmConfig` for this geometry,
    or None for no drafter; `draft_slots`: its max_num_new_slots_for_drafting. The drafter's prefill
    lookahead k is 1 for EAGLE and k for a k-module MTP; the hash lookahead L is what
    `VllmConfig.num_hash_lookahead_tokens` resolves to: 0 with a KV connector or with lookahead hashes
    off, else k. So a geometry's L is 0 or its k."""
    if not eagle_block_drop and not has_draft:
        return None
    if lookahead not in (0, max(1, prefill_lookahead)):
        raise ValueError(
            f"hash_lookahead_tokens {lookahead}: vLLM hashes either no lookahead or the drafter's prefill "
            f"lookahead ({max(1, prefill_lookahead)})"
        )
    multi_module = prefill_lookahead > 1
    return SimpleNamespace(
        method="mtp" if multi_module else "eagle",
        num_speculative_tokens=prefill_lookahead if multi_module else SPECULATIVE_TOKENS,
        num_speculative_tokens_per_batch_size=None,
        max_num_new_slots_for_drafting=draft_slots,
        parallel_drafting=False,
        disable_eagle_block_drop=not eagle_block_drop,
        disable_lookahead_block_hashes=lookahead == 0,
        use_eagle=lambda: True,
        use_eagle_block_drop=lambda: eagle_block_drop,
        needs_eagle_block_drop=lambda: True,
        use_multi_module_mtp=lambda: multi_module,
        use_dflash=lambda: False,
        use_dspark=lambda: False,
        uses_draft_model=lambda: False,
    )


@dataclass(frozen=True)
class GroupSetting:
    kind: str
    block_size: int  # the spec's block size: per rank for attention, the cadence for recurrent state
    dcp_sharded: bool
    eagle: bool


@dataclass(frozen=True)
class EngineSetting:
    """Everything the real engine is built from, read off a geometry under a variant."""

    dcp_size: int
    budget: int
    long_prefill_token_threshold: int
    eagle_block_drop: bool
    lookahead: int
    prefill_lookahead: int
    hash_block_size: int  # 0: vLLM's own choice (the gcd of the spans)
    prefill_checkpoint_alignment: int | None
    shared_prefix_checkpoint: bool
    retention: int | None
    groups: tuple[GroupSetting, ...]
    offload_blocks_per_chunk: int = 1  # the OffloadingConnector's blocks_per_chunk (with offload=True)
    # An explicit --mamba-block-size, given as `CacheConfig(mamba_block_size=...)` (None: not given). Set
    # only for a variant that keeps it (PR457, whose patch records the explicit bit): vLLM 0.33.0's
    # platform overwrites it with the block in align mode, so the baseline engine is built without it.
    mamba_block_size: int | None = None
    # The scheduler's budgets as the flags give them, where a case reads them apart: max_num_batched_tokens
    # (None: `budget`, the token budget) and the drafter's slots taken off it per step (0: a geometry's
    # budget is already net of them).
    batched: int | None = None
    draft_slots: int = 0

    @classmethod
    def of(cls, geometry: Geometry, budget: int, variant: Variant = BASELINE) -> EngineSetting:
        """The setting of `geometry` at `budget` under `variant`: a GroupSetting per cache group (recurrent
        ones at the variant's cadence, never DCP-sharded), the deployment's scheduler and hashing inputs, and
        its explicit --mamba-block-size only where the variant keeps it."""
        resolved = plan(variant, geometry)
        d = geometry.deployment
        groups = []
        for group in geometry.groups:
            block = resolved.cadence if group.kind == RECURRENT else group.block_size
            sharded = group.dcp_sharded and group.kind != RECURRENT
            groups += [GroupSetting(group.kind, block, sharded, group.eagle)] * group.count
        # A token budget above the step's: the scheduler gets it as max_num_scheduled_tokens and the step's
        # budget as its batched tokens (what the batched tokens less the draft slots left).
        token_budget = max(budget, d.scheduler_token_budget or 0)
        return cls(
            dcp_size=d.dcp_size,
            budget=token_budget,
            batched=budget if token_budget > budget else None,
            long_prefill_token_threshold=d.long_prefill_token_threshold,
            eagle_block_drop=d.eagle_block_drop,
            lookahead=d.hash_lookahead_tokens,
            prefill_lookahead=d.prefill_lookahead,
            hash_block_size=d.hash_block_size,
            prefill_checkpoint_alignment=d.prefill_checkpoint_alignment,
            shared_prefix_checkpoint=d.shared_prefix_checkpoint,
            retention=d.prefix_cache_retention_interval,
            groups=tuple(groups),
            offload_blocks_per_chunk=d.offload_blocks_per_chunk,
            mamba_block_size=d.mamba_block_size if variant.keeps_explicit_cadence else None,
        )


def blocks_for(setting: EngineSetting, *requests: int) -> int:
    """A block pool no request of these lengths, run one after another, evicts from: every block
    each could hold at once (attention blocks over all its tokens, a recurrent group's states
    step by step), for all of them, with room to spare."""
    total = 64
    for tokens in requests:
        for group in setting.groups:
            span = group.block_size * (setting.dcp_size if group.dcp_sharded else 1)
            if group.kind == RECURRENT:
                total += 2 * (-(-tokens // max(1, min(group.block_size, setting.budget))) + 8)
            else:
                total += -(-tokens // span) + 2
    return 2 * total


@dataclass
class Prefill:
    """A request run from admission to its end."""

    hit: int  # tokens restored at admission (num_computed_tokens when first scheduled)
    group_hits: tuple[int, ...] | None  # each group's own hit, looked up alone, at admission (`_group_hits`)
    chunk_ends: list[int] = field(default_factory=list)  # num_computed_tokens after each step of its prefill
    keyed: dict[int, list[int]] = field(default_factory=dict)  # group -> positions keyed in the cache after it
    # With offload=True (else 0 and empty):
    local_hit: int = 0  # the GPU hit the scheduler presented to the connector (block-aligned)
    connector_hit: int = 0  # the connector's answer: get_num_new_matched_tokens beyond local_hit
    external_hit: int = 0  # what the scheduler took from it: num_external_tokens at update_state_after_alloc
    offered: dict[int, list[int]] = field(default_factory=dict)  # group -> Mamba boundary states handed off
    stored: dict[int, list[int]] = field(default_factory=dict)  # group -> token ends of the keys it stored


@dataclass
class OffloadRestore:
    """An identical resend restored from the offload tier alone (`RealEngine.offload_hit`)."""

    first: Prefill  # the request whose prefill the connector stored (`first.stored`)
    again: Prefill  # the resend, run after the GPU prefix cache was dropped

    @property
    def hit(self) -> int:
        """Tokens the scheduler took from the offload tier at the resend's admission."""
        return self.again.external_hit


def _vllm_config(setting: EngineSetting, max_model_len: int, offload_tier: str | None):
    """The `VllmConfig` of the tiny model under `setting`: one request at a time with chunked prefill,
    prefix caching with Mamba in align mode, the offload connector where `offload_tier` is given, and
    the setting's DCP size."""
    from vllm.config import CacheConfig, DeviceConfig, KVTransferConfig, ModelConfig, SchedulerConfig, VllmConfig

    s = setting
    model = ModelConfig(model=_tiny_model_dir(), skip_tokenizer_init=True, max_model_len=max_model_len)
    scheduler = SchedulerConfig(
        max_num_batched_tokens=s.batched or s.budget,
        max_num_scheduled_tokens=s.budget,
        max_num_seqs=1,  # one request at a time; vLLM asks for at least as many batched tokens
        max_model_len=max_model_len,
        enable_chunked_prefill=True,
        is_encoder_decoder=False,
        async_scheduling=False,
        long_prefill_token_threshold=s.long_prefill_token_threshold,
    )
    cache_config = CacheConfig(
        block_size=16,
        enable_prefix_caching=True,
        mamba_cache_mode="align",
        prefix_cache_retention_interval=s.retention,
        prefix_match_unit=s.hash_block_size or None,
        enable_mamba_shared_prefix_checkpoint=s.shared_prefix_checkpoint,
        **({} if s.mamba_block_size is None else {"mamba_block_size": s.mamba_block_size}),
    )
    transfer = None if offload_tier is None else KVTransferConfig(**offload_transfer_config(s, offload_tier))
    config = VllmConfig(
        model_config=model,
        scheduler_config=scheduler,
        cache_config=cache_config,
        device_config=DeviceConfig("cpu"),
        kv_transfer_config=transfer,
    )
    config.parallel_config.decode_context_parallel_size = s.dcp_size
    return config


def _set_speculative_stand_in(config, setting: EngineSetting) -> int:
    """Give `config` the speculative stand-in of `setting` (None without a drafter); the speculative
    blocks each recurrent group keeps."""
    has_draft = any(g.kind == DRAFT for g in setting.groups)
    speculative = speculative_stand_in(
        setting.eagle_block_drop, setting.lookahead, setting.prefill_lookahead, has_draft, setting.draft_slots
    )
    if speculative is None and setting.draft_slots:
        raise ValueError(f"{setting.draft_slots} draft slots without a drafter")
    object.__setattr__(config, "speculative_config", speculative)
    return speculative.num_speculative_tokens if speculative is not None else 0


def _kv_cache_spec(group: GroupSetting, setting: EngineSetting, speculative_blocks: int):
    """The KV cache spec of one group: a MambaSpec in align mode at its block, declaring the
    deployment's prefill checkpoint alignment, or a FullAttentionSpec with its DCP sharding, marked a
    draft for a drafter's group."""
    import torch
    from vllm.v1.kv_cache_interface import FullAttentionSpec, MambaSpec

    if group.kind == RECURRENT:
        alignment = setting.prefill_checkpoint_alignment
        return MambaSpec(
            block_size=group.block_size,
            shapes=((1,),),
            dtypes=(torch.float32,),
            mamba_cache_mode="align",
            num_speculative_blocks=speculative_blocks,
            num_prefill_checkpoint_blocks=int(alignment is not None),
            prefill_checkpoint_alignment=alignment,
        )
    return FullAttentionSpec(
        block_size=group.block_size,
        num_kv_heads=1,
        head_size=1,
        dtype=torch.float32,
        dcp_sharded=group.dcp_sharded,
        is_draft=group.kind == DRAFT,  # as the model runner marks a drafter's layers (compare=False)
    )


def _kv_cache_config(setting: EngineSetting, num_blocks: int, speculative_blocks: int):
    """The cache groups as `EngineCore._initialize_kv_caches` would see them: a layer and a spec per
    group, a drafter's EAGLE group marked, over a pool of `num_blocks`."""
    from vllm.v1.kv_cache_interface import KVCacheConfig, KVCacheGroupSpec

    return KVCacheConfig(
        num_blocks=num_blocks,
        kv_cache_tensors=[],
        kv_cache_groups=[
            KVCacheGroupSpec(
                [f"layer.{i}"],
                _kv_cache_spec(group, setting, speculative_blocks),
                is_eagle_group=group.kind == DRAFT and group.eagle,
            )
            for i, group in enumerate(setting.groups)
        ],
        prefix_cache_retention_interval=setting.retention,
    )


def _resolve_block_sizes(config, kv_cache_config, num_blocks: int) -> tuple[int, int]:
    """(scheduler block, hash block) as vLLM's own functions resolve them, once the cache block
    size is the smallest spec block; the hash block and the hit alignment set on `kv_cache_config`."""
    from vllm.v1.core.kv_cache_utils import resolve_cache_hit_alignment_tokens, resolve_kv_cache_block_sizes

    config.cache_config.num_gpu_blocks = num_blocks
    config.cache_config.block_size = min(g.kv_cache_spec.block_size for g in kv_cache_config.kv_cache_groups)
    scheduler_block, hash_block = resolve_kv_cache_block_sizes(kv_cache_config, config)
    kv_cache_config.hash_block_size = hash_block
    kv_cache_config.cache_hit_alignment_tokens = resolve_cache_hit_alignment_tokens(
        kv_cache_config, config, scheduler_block, hash_block
    )
    return scheduler_block, hash_block


def _request_block_hasher(config, hash_block: int):
    """The hasher of a request's blocks, with vLLM's initial hash set for the configured algorithm."""
    from vllm.utils.hashing import get_hash_fn_by_name
    from vllm.v1.core.kv_cache_utils import get_request_block_hasher, init_none_hash

    hash_function = get_hash_fn_by_name(config.cache_config.prefix_caching_hash_algo)
    init_none_hash(hash_function)
    return get_request_block_hasher(hash_block, hash_function, config.num_hash_lookahead_tokens)


class RealEngine:
    """The real scheduler for one engine setting; each `run` is a request added, run to its
    end and freed, later runs seeing what earlier ones cached.

    With `offload=True` the engine has vLLM's native `OffloadingConnector` as its KV connector,
    built by vLLM's own factory from `kv_transfer_config` as `EngineCore` builds it: its
    scheduler side (offloading/scheduler.py) decides what to store and answers lookups, and its
    worker side (offloading/worker.py) is vLLM's own too, around a stand-in transfer engine
    (`OffloadSide`); `offload_tier` is the offload tier's bookkeeping, the stand-in "remembering"
    or vLLM's own "cpu" manager. `offload_hit` reads the restore of an identical resend from the
    offload tier alone."""

    def __init__(
        self,
        setting: EngineSetting,
        num_blocks: int = DEFAULT_NUM_BLOCKS,
        max_model_len: int = 1 << 22,
        offload: bool = False,
        offload_tier: str = "remembering",
    ):
        from vllm.v1.core.sched.scheduler import Scheduler
        from vllm.v1.structured_output import StructuredOutputManager

        self.setting = s = setting
        logging.getLogger("vllm").setLevel(logging.ERROR)  # its notes on experimental APIs, each time
        if offload:
            check_offload_setting(s)
        config = _vllm_config(s, max_model_len, offload_tier if offload else None)
        # The explicit bit PR457's patch records (None on a release without it), and the cadence kept.
        self.explicit_cadence = getattr(config.cache_config, "user_specified_mamba_block_size", None)
        if s.mamba_block_size is not None and config.cache_config.mamba_block_size != s.mamba_block_size:
            raise RuntimeError(
                f"--mamba-block-size {s.mamba_block_size} became {config.cache_config.mamba_block_size} in VllmConfig"
            )
        speculative_blocks = _set_speculative_stand_in(config, s)
        kv_cache_config = _kv_cache_config(s, num_blocks, speculative_blocks)
        self.scheduler_block, self.hash_block = _resolve_block_sizes(config, kv_cache_config, num_blocks)
        self._hasher = _request_block_hasher(config, self.hash_block)
        self.scheduler = Scheduler(
            vllm_config=config,
            kv_cache_config=kv_cache_config,
            structured_output_manager=StructuredOutputManager(config),
            block_size=self.scheduler_block,
            hash_block_size=self.hash_block,
            log_stats=False,
        )
        self.coordinator = self.scheduler.kv_cache_manager.coordinator
        self._ids = 0
        self.offload = OffloadSide(self.scheduler, config, kv_cache_config) if offload else None

    def run(self, tokens: list[int], max_tokens: int = 1) -> Prefill:
        """Add a request for `tokens`, run it to its end (its prefill, then `max_tokens` sampled
        tokens, each a stand-in 1) and free it. With offload, the engine then keeps stepping, as
        `EngineCore` does while `Scheduler.has_requests()`, until the connector has built and
        completed the finished request's last store jobs."""
        from vllm import SamplingParams
        from vllm.v1.outputs import ModelRunnerOutput
        from vllm.v1.request import Request

        self._ids += 1
        params = SamplingParams(max_tokens=max_tokens, ignore_eos=True)
        request = Request(
            request_id=f"r{self._ids}",
            prompt_token_ids=list(tokens),
            sampling_params=params,
            pooling_params=None,
            block_hasher=self._hasher,
        )
        self.scheduler.add_request(request)
        result = Prefill(hit=-1, group_hits=self._group_hits(request))
        prompt = request.num_prompt_tokens
        drain_steps = 0
        steps = 0
        while self.scheduler.requests or (self.offload is not None and self.scheduler.has_requests()):
            steps += 1
            if steps > prompt + max_tokens + MAX_DRAIN_STEPS:
                raise EngineStalled(
                    f"r{self._ids} made no progress: {request.num_computed_tokens:,} of {prompt:,} tokens", result
                )
            drain_steps += not self.scheduler.requests
            if drain_steps > MAX_DRAIN_STEPS:
                raise RuntimeError(
                    f"the offload connector still has work {MAX_DRAIN_STEPS} steps after r{self._ids} ended"
                )
            output = self.scheduler.schedule()
            for new in output.scheduled_new_reqs:
                if new.req_id == request.request_id:
                    result.hit = new.num_computed_tokens
            if request.request_id in output.num_scheduled_tokens and len(result.chunk_ends) <= prompt:
                if not result.chunk_ends or result.chunk_ends[-1] < prompt:
                    result.chunk_ends.append(min(request.num_computed_tokens, prompt))
            ids = list(output.num_scheduled_tokens)
            sampled = [
                [1] if self.scheduler.requests[i].num_computed_tokens >= self.scheduler.requests[i].num_tokens else []
                for i in ids
            ]
            self.scheduler.update_from_output(
                output,
                ModelRunnerOutput(
                    req_ids=ids,
                    req_id_to_index={r: k for k, r in enumerate(ids)},
                    sampled_token_ids=sampled,
                    kv_connector_output=self.offload.worker_step(output) if self.offload is not None else None,
                ),
            )
        result.keyed = self.keyed_positions(request)
        if self.offload is not None:
            self.offload.observe(request.request_id, result)
        return result

    def _group_hits(self, request) -> tuple[int, ...] | None:
        """Each group's own hit, looked up alone from `max_cache_hit_length = num_tokens - 1`; None
        where vLLM's recurrent finder reads past the request's hashes, as it does for a request of
        k hash blocks and one token under a multi-token hash lookahead (it raises IndexError; the
        scheduler's own lookup asks the recurrent groups only below the attention hit)."""
        try:
            _, hits = self.coordinator.find_longest_cache_hit_per_group(request.block_hashes, request.num_tokens - 1)
        except IndexError:
            return None
        return tuple(hits)

    def drop_gpu_prefix_cache(self) -> None:
        """Forget every block the GPU prefix cache holds (`Scheduler.reset_prefix_cache`, the
        connector's store untouched), so that only the offload tier can serve a later hit."""
        if not self.scheduler.reset_prefix_cache(reset_connector=False):
            raise RuntimeError("the GPU prefix cache cannot be reset while a request holds blocks")

    def offload_hit(self, tokens: list[int]) -> OffloadRestore:
        """The offload tier's restore of `tokens`: a request for them run to its end with the
        connector storing, the GPU prefix cache dropped, then the identical request run."""
        if self.offload is None:
            raise ValueError("offload_hit needs RealEngine(setting, offload=True)")
        first = self.run(tokens)
        self.drop_gpu_prefix_cache()
        return OffloadRestore(first, self.run(tokens))

    def keyed_positions(self, request) -> dict[int, list[int]]:
        """Per group, the prefix lengths of `request` the cache holds a block keyed at."""
        from vllm.v1.core.kv_cache_utils import get_block_hash, get_group_id

        position = {h: (i + 1) * self.hash_block for i, h in enumerate(request.block_hashes)}
        keyed: dict[int, list[int]] = {i: [] for i in range(len(self.setting.groups))}
        for key in self.coordinator.block_pool.cached_block_hash_to_block._cache:
            at = position.get(get_block_hash(key))
            if at is not None:
                keyed[get_group_id(key)].append(at)
        return {group: sorted(positions) for group, positions in keyed.items()}


# --- the native KV offload connector ----------------------------------------------------------


class EngineStalled(RuntimeError):
    """A request the real scheduler never finishes: more steps than it has tokens. `prefill` holds
    what it did until then."""

    def __init__(self, message: str, prefill: Prefill):
        super().__init__(message)
        self.prefill = prefill


class OffloadSettingError(GridproofError):
    """An engine setting the offload connector cannot run as the geometry states it."""


def check_offload_setting(setting: EngineSetting) -> None:
    """Refuse a geometry whose block hashes look ahead: with any KV connector vLLM 0.33.0 hashes
    with no lookahead (`VllmConfig.num_hash_lookahead_tokens`, config/vllm.py:688-690), so the
    engine would silently run another setting than the geometry states."""
    if setting.lookahead > 0:
        raise OffloadSettingError(
            f"hash_lookahead_tokens = {setting.lookahead}, but with a KV connector vLLM 0.33.0 hashes "
            "with no lookahead (VllmConfig.num_hash_lookahead_tokens, config/vllm.py:688-690): "
            "a geometry run with offload must say hash_lookahead_tokens = 0"
        )


def offload_transfer_config(setting: EngineSetting, tier: str = "remembering") -> dict:
    """`KVTransferConfig` fields for the native `OffloadingConnector` over this module's spec,
    `offload_blocks_per_chunk` GPU blocks (of each group's DCP-scaled size) per offloaded chunk.
    `tier` is the offload tier's bookkeeping: the stand-in, or vLLM's CPU manager."""
    if tier not in OFFLOAD_TIERS:
        raise ValueError(f"offload tier {tier!r}: expected one of {', '.join(OFFLOAD_TIERS)}")
    return {
        "kv_connector": "OffloadingConnector",
        "kv_role": "kv_both",
        "kv_connector_extra_config": {
            "spec_name": OFFLOAD_SPEC,
            "spec_module_path": __name__,
            "blocks_per_chunk": setting.offload_blocks_per_chunk,
            "gridproof_tier": tier,
        },
    }


def __getattr__(name: str):
    """The stand-in offloading spec, built on first use so that importing this module does not
    import vLLM; `OffloadingSpecFactory` looks it up here by `spec_module_path` and `spec_name`."""
    if name == OFFLOAD_SPEC:
        return _offload_stand_ins().spec
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass
class StoreRecord:
    """One key the connector offered the offload tier and the tier accepted."""

    request_id: str
    group: int
    end: int  # the token position the connector keyed it at (a chunk's end, or a state's boundary)
    done: bool = False  # the store completed (the worker reported its job)


@cache
def _offload_stand_ins() -> SimpleNamespace:
    """The stand-ins below vLLM's connector, as classes of vLLM's own offloading interfaces
    (v1/kv_offload/base.py): built on first use, since they subclass vLLM's."""
    manager, transfers = _remembering_manager(), _instant_transfers()
    return SimpleNamespace(spec=_offloading_spec(manager, transfers), manager=manager, transfers=transfers)


def _remembering_manager() -> type:
    """The stand-in offload tier's bookkeeping (`RememberingManager`), and where it keeps a load or store."""
    from vllm.v1.kv_offload.base import (
        LoadStoreSpec,
        LookupResult,
        OffloadingManager,
        PrepareStoreOutput,
        RequestOffloadingContext,
    )

    class KeyList(LoadStoreSpec):
        """Where a stand-in tier keeps a load or store: the keys themselves."""

        def __init__(self, keys):
            self.keys = list(keys)

    class RememberingManager(OffloadingManager):
        """The offload tier's bookkeeping, unbounded: a key is MISS until `prepare_store` takes
        it, HIT_PENDING until its store completes, HIT after; nothing is evicted. These are the
        states vLLM's `CPUOffloadingManager` keeps (cpu/manager.py `lookup`, `prepare_store`,
        `complete_store`) when it has room for every chunk."""

        def __init__(self):
            self.ready: dict[bytes, bool] = {}

        def lookup(self, key, req_context):
            if key not in self.ready:
                return LookupResult.MISS
            return LookupResult.HIT if self.ready[key] else LookupResult.HIT_PENDING

        def prepare_load(self, keys, req_context):
            assert all(self.ready.get(key) for key in keys), "a load of a key not stored"
            return KeyList(keys)

        def prepare_store(self, keys, req_context):
            new = [key for key in dict.fromkeys(keys) if key not in self.ready]
            self.ready.update(dict.fromkeys(new, False))
            return PrepareStoreOutput(keys_to_store=new, store_spec=KeyList(new), evicted_keys=[])

        def complete_store(self, keys, req_context, success=True):
            for key in keys:
                if self.ready.get(key) is False:
                    if success:
                        self.ready[key] = True
                    else:
                        del self.ready[key]

        def on_new_request(self, req_context):
            return RequestOffloadingContext()

        def reset_cache(self):
            self.ready.clear()

    return RememberingManager


def _instant_transfers() -> type:
    """The stand-in transfer engine (`InstantTransfers`)."""
    from vllm.v1.kv_offload.base import OffloadingWorker, TransferResult

    class InstantTransfers(OffloadingWorker):
        """The transfer engine: each job finishes as it is submitted. No bytes move (no KV
        exists); what the scheduler learns is only which jobs completed, as from a real one."""

        def __init__(self):
            self.finished: list = []

        def submit_store(self, job_id, src_spec, dst_spec):
            self.finished.append(TransferResult(job_id=job_id, success=True))
            return True

        def submit_load(self, job_id, src_spec, dst_spec, expedited=False):
            self.finished.append(TransferResult(job_id=job_id, success=True))
            return True

        def get_finished(self):
            finished, self.finished = self.finished, []
            return finished

        def wait(self, job_ids):
            return None

    return InstantTransfers


def _offloading_spec(manager: type, transfers: type) -> type:
    """The offloading spec over the tier `manager` stands in for (or vLLM's CPU tier) and `transfers`."""
    from vllm.v1.kv_offload.base import OffloadingSpec

    class GridproofOffloadingSpec(OffloadingSpec):
        """The spec `OffloadingConnector` is built over: the "remembering" tier (`manager`,
        the stand-in) or the "cpu" tier (vLLM's `CPUOffloadingManager`, LRU, room for
        OFFLOAD_CPU_CHUNKS chunks), and the instant transfer engine."""

        def __init__(self, config):
            super().__init__(config)
            self._manager = None

        def get_manager(self):
            if self._manager is None:
                if self.extra_config.get("gridproof_tier", "remembering") == "cpu":
                    from vllm.v1.kv_offload.cpu.manager import CPUOffloadingManager

                    self._manager = CPUOffloadingManager(num_chunks=OFFLOAD_CPU_CHUNKS)
                else:
                    self._manager = manager()
            return self._manager

        def get_worker(self, kv_caches):
            return transfers()

    return GridproofOffloadingSpec


class OffloadSide:
    """The offload connector around one `Scheduler`: the worker side played each step, and what
    the scheduler side decided, read as it happens.

    Real: the scheduler-role `OffloadingConnector` the `Scheduler` built from
    `kv_transfer_config` (offloading/scheduler.py: what to store, what a lookup hits), and a
    worker-role `OffloadingConnector` (offloading/worker.py: it submits a step's stores at the
    next step's start, reports finished loads as `finished_recving` and completed jobs in
    `OffloadingWorkerMetadata`), called in the model runner's order (gpu_model_runner.py:3934-3937,
    kv_connector_model_runner_mixin.py:67-107). Stood in: the transfers (`InstantTransfers`) and,
    unless the tier is "cpu", the tier's bookkeeping (`RememberingManager`).

    Read, never changed: the connector's answer to each lookup, the external hit the scheduler
    takes, the Mamba boundary states the GPU manager hands the connector, and every store the
    tier accepts and completes (with the position the connector keyed it at)."""

    def __init__(self, scheduler, config, kv_cache_config):
        from vllm.distributed.kv_transfer.kv_connector.v1 import KVConnectorRole
        from vllm.distributed.kv_transfer.kv_connector.v1.offloading_connector import OffloadingConnector
        from vllm.v1.kv_offload.base import CanonicalKVCaches

        self.connector = scheduler.connector
        self.manager = self.connector.connector_scheduler.manager
        self.worker = OffloadingConnector(config, KVConnectorRole.WORKER, kv_cache_config)
        # Where `register_kv_caches` ends: the spec builds its transfer engine over the GPU
        # tensors. The stand-in engine reads none, so there are none to canonicalize.
        self.worker.connector_worker._init_worker(CanonicalKVCaches(tensors=[], group_data_refs=[]))
        self.num_groups = len(kv_cache_config.kv_cache_groups)
        self.answers: dict[str, tuple[int, int | None]] = {}  # req -> (local hit presented, answer)
        self.external: dict[str, int] = {}  # req -> num_external_tokens at its admission
        self.offered: list[tuple[str, int, int]] = []  # (req, group, boundary) handed to the connector
        self.stores: dict[bytes, StoreRecord] = {}  # key -> the store the tier accepted
        self._watch(scheduler)

    def _watch(self, scheduler) -> None:
        """Wrap the calls whose arguments or answers are read, each passing straight through."""
        connector, manager, cache = self.connector, self.manager, scheduler.kv_cache_manager
        matched, after_alloc = connector.get_num_new_matched_tokens, connector.update_state_after_alloc
        prepare_store, complete_store = manager.prepare_store, manager.complete_store
        handoffs = cache.take_boundary_state_offloads

        def get_num_new_matched_tokens(request, num_computed_tokens):
            answer = matched(request, num_computed_tokens)
            if request.request_id not in self.external:  # the lookup its admission used: the last before it
                self.answers[request.request_id] = (num_computed_tokens, answer[0])
            return answer

        def update_state_after_alloc(request, blocks, num_external_tokens):
            self.external.setdefault(request.request_id, num_external_tokens)
            return after_alloc(request, blocks, num_external_tokens)

        def take_boundary_state_offloads():
            offers = handoffs()
            self.offered += [(req, group, end) for req, entries in offers.items() for group, _, end in entries]
            return offers

        def prepare_store_watched(keys, req_context):
            from vllm.v1.kv_offload.base import get_offload_group_idx

            output = prepare_store(keys, req_context)
            for key in output.keys_to_store if output is not None else ():
                end = req_context.get_offload_key_position(key)
                self.stores[key] = StoreRecord(req_context.req_id, get_offload_group_idx(key), end)
            return output

        def complete_store_watched(keys, req_context, success=True):
            for key in keys:
                if success and key in self.stores:
                    self.stores[key].done = True
            return complete_store(keys, req_context, success)

        connector.get_num_new_matched_tokens = get_num_new_matched_tokens
        connector.update_state_after_alloc = update_state_after_alloc
        cache.take_boundary_state_offloads = take_boundary_state_offloads
        manager.prepare_store = prepare_store_watched
        manager.complete_store = complete_store_watched

    def worker_step(self, output):
        """The worker side of one step, as the model runner drives it: its `KVConnectorOutput`."""
        from vllm.v1.outputs import KVConnectorOutput

        worker, meta = self.worker, output.kv_connector_metadata
        worker.handle_preemptions(meta)
        worker.bind_connector_metadata(meta)
        worker.start_load_kv(None)  # the forward context, which OffloadingConnector does not read
        worker.wait_for_save()
        results = worker.get_transfer_results(output.finished_req_ids)
        worker_meta = worker.build_connector_worker_meta()
        worker.clear_connector_metadata()
        return KVConnectorOutput(
            finished_sending=results.finished_sending,
            finished_recving=results.finished_recving,
            kv_connector_worker_meta=worker_meta,
        )

    def observe(self, request_id: str, result: Prefill) -> None:
        """Fill `result`'s offload fields with what was read for `request_id`."""
        local, answer = self.answers.get(request_id, (0, 0))
        result.local_hit, result.connector_hit = local, answer or 0
        result.external_hit = self.external.get(request_id, 0)
        groups = range(self.num_groups)
        result.offered = {g: sorted({e for r, gr, e in self.offered if r == request_id and gr == g}) for g in groups}
        result.stored = {
            g: sorted(s.end for s in self.stores.values() if s.request_id == request_id and s.group == g and s.done)
            for g in groups
        }


def prompt_tokens(length: int, seed: int = 0) -> list[int]:
    """A prompt no other seed shares a block with."""
    return [1 + (seed * 7919 + i * 104729 + (i * i) % 9973) % 31999 for i in range(length)]


GROUP_KINDS = (TARGET, RECURRENT, DRAFT)


def observe(geometry: Geometry, budget: int, prompt: int, offload: bool) -> dict:
    """One case: a request for a `prompt`-token prompt run to its end, then the identical request,
    restored from the GPU prefix cache or (with `offload`) from the offload tier alone."""
    engine = RealEngine(EngineSetting.of(geometry, budget), offload=offload)
    tokens = prompt_tokens(prompt)
    if offload:
        restore = engine.offload_hit(tokens)
        first, again, hit = restore.first, restore.again, restore.hit
    else:
        first = engine.run(tokens)
        again = engine.run(tokens)
        hit = again.hit
    where = "offload" if offload else "gpu"
    return {"geometry": geometry.label, "budget": budget, "prompt_tokens": prompt, f"{where}_hit": hit} | {
        "first": asdict(first),
        "again": asdict(again),
    }


def main(argv: list[str] | None = None) -> int:
    """The command: one case's observations on the real engine, printed as JSON; the budget and prompt default
    to the geometry's. Exit status 0, or 2 on a GridproofError (one line on stderr)."""
    parser = argparse.ArgumentParser(prog="python3 -m proofs.real_vllm.engine", description=__doc__.split("\n")[0])
    parser.add_argument("geometry", help="a geometry file or built-in name")
    parser.add_argument("--budget", type=int, help="max_num_scheduled_tokens (default: the geometry's)")
    parser.add_argument("--prompt-tokens", type=int, help="prompt length (default: the geometry's request)")
    parser.add_argument("--offload", action="store_true", help="restore through the OffloadingConnector alone")
    args = parser.parse_args(argv)
    try:
        geometry = load_geometry(args.geometry)
        budget = args.budget or geometry.deployment.max_num_scheduled_tokens
        doc = observe(geometry, budget, args.prompt_tokens or geometry.request.prompt_tokens, args.offload)
    except GridproofError as error:
        print(error, file=sys.stderr)
        return 2
    print(json.dumps(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
