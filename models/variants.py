"""The variants of the engine semantics, as data passed to one set of functions.

`baseline` is vLLM 0.33.0; `pr457` is the change under verification as its
public description states it (an explicit --mamba-block-size kept as the
recurrent cadence R, the split on R, annotated EAGLE boundaries converted to
R's grid); `pr457-guarded` adds the
configuration check this project proposes. Mutants are deliberately broken
copies of a variant: each names one `mutation` the model functions honour, so
the theorem catalogue can be shown to notice it.
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
    mutation: str | None = None
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

# Each mutant: (name, base variant, what it breaks). The model code tests
# `variant.mutation == NAME` at exactly one place per mutant.
_MUTANTS = (
    ("lcp-off-by-one", PR457_GUARDED, "the last cacheable position computed from N + 1 tokens"),
    ("stop-at-start", PR457_GUARDED, "a stop at the chunk start is taken: `start <= s` for `start < s`"),
    ("physical-block-cadence", PR457_GUARDED, "the split reads the physical block where the cadence belongs"),
    ("eagle-backoff-dropped", PR457_GUARDED, "with EAGLE and no annotated group, no one-block backoff"),
    ("conversion-rounds-up", PR457_GUARDED, "the EAGLE boundary converted to the cadence grid rounding up"),
    ("target-group-left-out", PR457_GUARDED, "the guard checks only the first target-attention group"),
    ("slot-off-by-one", PR457_GUARDED, "a resumed request reads its initial state from column h // R"),
)
MUTANTS = {name: replace(base, name=f"mutant:{name}", mutation=name, description=why) for name, base, why in _MUTANTS}


class UnknownVariantError(GridproofError):
    pass


def get_variant(name: str) -> Variant:
    if name in VARIANTS:
        return VARIANTS[name]
    bare = name.removeprefix("mutant:")
    if bare in MUTANTS:
        return MUTANTS[bare]
    known = ", ".join([*VARIANTS, *(f"mutant:{m}" for m in MUTANTS)])
    raise UnknownVariantError(f"unknown variant {name!r} (known: {known})")
