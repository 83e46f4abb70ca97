"""The variants of the engine semantics, as data passed to one set of functions.

`baseline` is vLLM 0.33.0; `pr457` is the change under verification as its
public description states it (an explicit --mamba-block-size kept as the
recurrent cadence R, the split on R, annotated EAGLE boundaries converted to
R's grid); `pr457-guarded` adds the configuration check this project proposes.
Deliberately broken copies of a variant are not here: each is a patch applied
to the model's code from outside, by the proofs package.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from models.errors import GridproofError


@dataclass(frozen=True)
class Variant:
    name: str
    keeps_explicit_cadence: bool  # config: an explicit --mamba-block-size survives align mode
    splits_on_cadence: bool  # the split reads the recurrent cadence R, not cache_config.block_size
    converts_annotated_eagle: bool  # lcp from annotated EAGLE groups' boundaries
    guarded: bool  # config check: the cadence is a multiple of every target span
    description: str = ""


BASELINE = Variant(
    "baseline",
    keeps_explicit_cadence=False,
    splits_on_cadence=False,
    converts_annotated_eagle=False,
    guarded=False,
    description="vLLM 0.33.0 align mode",
)
PR457 = Variant(
    "pr457",
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
VARIANTS = {v.name: v for v in (BASELINE, PR457, PR457_GUARDED)}


class UnknownVariantError(GridproofError):
    pass


def get_variant(name: str) -> Variant:
    if name in VARIANTS:
        return VARIANTS[name]
    raise UnknownVariantError(f"unknown variant {name!r} (known: {', '.join(VARIANTS)})")
