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
    description="vLLM 0.33.0 align mode",
)

VARIANTS = (BASELINE,)
