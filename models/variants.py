"""Every engine variant by name: the one list of them, in manifest order.

Each comes from its engine's module under models/engines/ (one per vLLM
release or patch). Deliberately broken copies of a variant are not here:
each is a patch applied to the model's code from outside, by the proofs
package.
"""

from __future__ import annotations

from models.engines import Variant, pr457, vllm_0_33
from models.engines.pr457 import PR457, PR457_GUARDED
from models.engines.vllm_0_33 import BASELINE
from models.errors import GridproofError, did_you_mean

ENGINES = (vllm_0_33, pr457)
VARIANTS: dict[str, Variant] = {v.name: v for engine in ENGINES for v in engine.VARIANTS}

__all__ = ["BASELINE", "PR457", "PR457_GUARDED", "VARIANTS", "UnknownVariantError", "Variant", "get_variant"]


class UnknownVariantError(GridproofError):
    pass


def get_variant(name: str) -> Variant:
    if name in VARIANTS:
        return VARIANTS[name]
    raise UnknownVariantError(f"unknown variant {name!r}{did_you_mean(name, VARIANTS)} (known: {', '.join(VARIANTS)})")
