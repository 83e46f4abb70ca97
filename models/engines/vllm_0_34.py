"""vLLM 0.34.0 align mode, as it ships: the current release, beside 0.33.0's `baseline`.

What it changes of 0.33.0's choices, each read from the two wheels (docs/releases.md gives the lines):

- `CacheConfig.DEFAULT_BLOCK_SIZE` is 64, not 16: an attention backend that accepts 64 (every
  backend gridproof models) is asked for 64 when --block-size is unset, so a hybrid model's
  resolved block is a multiple of 64.
- `OffloadingConnector.supports_lookahead_block_hashes` is True: the native offload connector opts
  in to lookahead block hashes, so beside it an EAGLE or MTP drafter hashes ahead and the scheduler
  turns the EAGLE block drop off; the connector keys its chunks by those hashes and drops no EAGLE
  chunk.
- `OffloadingConnectorScheduler._lookup_complete_chunks` takes the last token off its hit window
  (beside a recurrent group) before the load caps, not after them: a window the caps end keeps its
  last token, and rounds to the recurrent chunk from there (models/offload.py, hit_window).
- `Scheduler.update_from_output` hashes a hybrid request's blocks once more after each sampled
  token under synchronous scheduling, drafter or not (0.33.0 only with a drafter).
- `MambaSpec` rounds each state tensor up to 16 bytes with FlashInfer's ReplaySSM: not modelled
  (`check` reads no flag that selects that backend; docs/releases.md).

Unchanged: the split (`_mamba_block_aligned_split`), the checkpoint position and validity, the
coordinator (`kv_cache_coordinator.py`), the block-size resolution's arithmetic.
"""

from __future__ import annotations

from models.engines import Variant

VLLM_0_34 = Variant(
    "vllm-0.34.0",
    engine="vLLM 0.34.0",
    release="0.34.0",
    keeps_explicit_cadence=False,
    splits_on_cadence=False,
    converts_annotated_eagle=False,
    guarded=False,
    default_block_size=64,
    # Each registered connector's supports_lookahead_block_hashes as its class answers it (the recorded
    # `speculation` rows run it for several; MoRIIOConnector's, MooncakeConnector's and HF3FSKVConnector's
    # are read from the source, their modules needing optional packages). Not here: LMCacheMPConnector,
    # which the lmcache package replaces with its own class where installed.
    lookahead_hash_connectors=frozenset(
        {
            "OffloadingConnector",
            "SimpleCPUOffloadConnector",
            "NixlConnector",
            "NixlPullConnector",
            "NixlPushConnector",
            "MooncakeConnector",
            "MooncakeStoreConnector",
        }
    ),
    connectors_without_lookahead_hashes=frozenset(
        {
            "ExampleConnector",
            "ExampleHiddenStatesConnector",
            "LMCacheConnectorV1",
            "HiSparseConnector",
            "MoRIIOConnector",
            "DecodeBenchConnector",
            "UMBPStoreConnector",
            "FlexKVConnectorV1",
            "HF3FSKVConnector",
        }
    ),
    offload_reads_lookahead_hashes=True,
    offload_last_token_before_caps=True,
    mtp_modules_from_n_predict=True,
    parallel_drafting_block_drafters_only=True,
    hashes_after_sampling=True,
    dropped_speculative_methods=("medusa", "mlp_speculator"),
    description="vLLM 0.34.0 align mode",
)

VARIANTS = (VLLM_0_34,)
# The release this engine is, and the variant that answers for it as it ships (models/variants.py).
RELEASE = "0.34.0"
RELEASE_VARIANT = VLLM_0_34
