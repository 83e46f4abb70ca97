"""Stand-ins for KV cache groups and their specs, for the functions that read
the resolved groups (PR457's recurrent cadence, annotated EAGLE spans and
configuration check, in v1/core/kv_cache_utils.py) and the Mamba layers
(`get_mamba_prefill_checkpoint_alignment`).

A spec is an instance of a stand-in class named as vLLM's, so `isinstance`
and `type(spec).__name__` read as they do on the real specs; it holds the
fields the group functions read: the block size, whether DCP shards it, and
whether a draft model owns it. Sizes and flags may be Z3 terms.
"""

from __future__ import annotations

from proofs.source import paths
from proofs.source.standins import StandIn

KV_CACHE_UTILS = "vllm.v1.core.kv_cache_utils"
KV_CACHE_INTERFACE = "vllm.v1.kv_cache_interface"


class KVCacheSpec(StandIn):
    def __init__(self, block_size, dcp_sharded=False, is_draft=False) -> None:
        super().__init__(f"a {type(self).__name__}", block_size=block_size, dcp_sharded=dcp_sharded, is_draft=is_draft)


class AttentionSpec(KVCacheSpec):
    pass


class FullAttentionSpec(AttentionSpec):
    pass


class MambaSpec(KVCacheSpec):
    pass


def group(spec: KVCacheSpec, name: str, eagle=False) -> StandIn:
    """A KVCacheGroupSpec holding one layer; `eagle`: annotated as an EAGLE
    draft group (a Bool term forks when the group is built)."""
    annotated = eagle if isinstance(eagle, bool) else paths.decide(eagle)
    return StandIn(f"KV cache group {name}", layer_names=[name], kv_cache_spec=spec, is_eagle_group=annotated)


# The spec classes as the group functions' modules import them.
STAND_INS = {
    f"{module}.{cls.__name__}": cls
    for module in (KV_CACHE_UTILS, "vllm.v1.core.sched.scheduler")
    for cls in (KVCacheSpec, AttentionSpec, FullAttentionSpec, MambaSpec)
}
