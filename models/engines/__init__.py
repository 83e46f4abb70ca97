"""Engine versions, one module each: a vLLM release, or a release with a patch.

A variant is a set of semantic choices, the fields of `Variant`, each read at
exactly one place in models/. An engine module defines the variants it
contributes; models/variants.py lists the modules in manifest order. To add a
release or a patch: a module here with its variants (a new field on `Variant`
for a choice no earlier engine made, read at one place in models/), one line
in models/variants.py, and its expected verdicts in proofs/manifest.toml.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Variant:
    name: str
    engine: str  # the code this variant reads: a vLLM release, or one with a patch
    keeps_explicit_cadence: bool  # config: an explicit --mamba-block-size survives align mode
    splits_on_cadence: bool  # the split reads the recurrent cadence R, not cache_config.block_size
    converts_annotated_eagle: bool  # lcp from annotated EAGLE groups' boundaries
    guarded: bool  # config check: the cadence is a multiple of every target span
    # The vLLM release the variant's code is (a patch's: the release it patches); the recorded answers
    # of that release hold it (proofs/catalog/recorded.py).
    release: str = "0.33.0"
    # Choices a later release made; each default is vLLM 0.33.0's, which PR457 was written on.
    # CacheConfig.DEFAULT_BLOCK_SIZE: the block asked of the attention backend when --block-size is unset
    # (models/deploy.py, start_block).
    default_block_size: int = 16
    # The KV connectors whose class declares supports_lookahead_block_hashes, in a release that asks the
    # connector (0.34.0 _resolve_num_hash_lookahead_tokens): the hash lookahead stays on beside them, and the
    # scheduler turns the EAGLE block drop off; and those whose class does not. Both empty: the release asks
    # no connector and drops the hashes beside any (models/deploy.py, connector_keeps_lookahead_hashes).
    lookahead_hash_connectors: frozenset[str] = frozenset()
    connectors_without_lookahead_hashes: frozenset[str] = frozenset()
    # The offload connector keys its chunks by the request's lookahead block hashes and drops no EAGLE chunk
    # when the hash lookahead is on (use_lookahead_block_hashes; models/offload.py, offload_hit).
    offload_reads_lookahead_hashes: bool = False
    # The offload connector's hit window takes the last token off (beside a recurrent group) before the load
    # caps (max_num_new_tokens, the request's max_load_tokens) and not after them, then rounds to the
    # recurrent chunk (models/offload.py, hit_window).
    offload_last_token_before_caps: bool = False
    # use_multi_module_mtp counts the draft config's n_predict (num_mtp_modules), not its
    # num_nextn_predict_layers (models/deploy.py, mtp_modules).
    mtp_modules_from_n_predict: bool = False
    # SpeculativeConfig refuses parallel_drafting for any method but dflash and dspark, which always draft in
    # parallel: no P-EAGLE or PARD draft slots (models/deploy.py, speculation).
    parallel_drafting_block_drafters_only: bool = False
    # update_from_output hashes a hybrid request's blocks once more after each sampled token with no
    # drafter too, when scheduling is synchronous (models/prefix_cache.py, cached_prefix).
    hashes_after_sampling: bool = False
    # Speculative methods the release no longer has (no SpeculatorConfig: VllmConfig raises "Unsupported
    # speculative method"; models/deploy.py, speculation).
    dropped_speculative_methods: tuple[str, ...] = ()
    description: str = ""
