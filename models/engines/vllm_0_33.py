"""vLLM 0.33.0 align mode, as it ships: the baseline every other engine is compared with."""

from __future__ import annotations

from models.engines import Variant

BASELINE = Variant(
    "baseline",
    engine="vLLM 0.33.0",
    keeps_explicit_cadence=False,
    splits_on_cadence=False,
    converts_annotated_eagle=False,
    guarded=False,
    release="0.33.0",
    default_block_size=16,
    offload_reads_lookahead_hashes=False,
    mtp_modules_from_n_predict=False,
    parallel_drafting_block_drafters_only=False,
    hashes_after_sampling=False,
    description="vLLM 0.33.0 align mode",
)

VARIANTS = (BASELINE,)
# The release this engine is, and the variant that answers for it as it ships (models/variants.py).
RELEASE = "0.33.0"
RELEASE_VARIANT = BASELINE
