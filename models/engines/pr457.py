"""PR457 on vLLM 0.33.0, as its public description states it: an explicit
--mamba-block-size kept as the recurrent cadence R, the split on R, annotated
EAGLE boundaries converted to R's grid; and the same with the configuration
check this project proposes (`pr457-guarded`)."""

from __future__ import annotations

from dataclasses import replace

from models.engines import Variant

PR457 = Variant(
    "pr457",
    engine="vLLM 0.33.0 + PR457",
    keeps_explicit_cadence=True,
    splits_on_cadence=True,
    converts_annotated_eagle=True,
    guarded=False,
    description="PR457 as described: explicit cadence kept, no validation",
)
PR457_GUARDED = replace(
    PR457,
    name="pr457-guarded",
    guarded=True,
    description="PR457 plus the check: the cadence is a multiple of every target-attention span",
)

VARIANTS = (PR457, PR457_GUARDED)
