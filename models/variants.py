"""Every engine variant by name: the one list of them, in manifest order.

Each comes from its engine's module under models/engines/ (one per vLLM
release or patch). Deliberately broken copies of a variant are not here:
each is a patch applied to the model's code from outside, by the proofs
package.
"""

from __future__ import annotations

from models.engines import Variant, pr457, vllm_0_33, vllm_0_34
from models.engines.pr457 import PR457, PR457_GUARDED
from models.engines.vllm_0_33 import BASELINE
from models.engines.vllm_0_34 import VLLM_0_34
from models.errors import GridproofError, did_you_mean

ENGINES = (vllm_0_33, pr457, vllm_0_34)
VARIANTS: dict[str, Variant] = {v.name: v for engine in ENGINES for v in engine.VARIANTS}
# Each vLLM release modelled, oldest first, and the variant that answers for it as it ships: the
# engines that are a release (RELEASE, RELEASE_VARIANT), not a patch.
RELEASES: dict[str, Variant] = dict(
    sorted(
        ((e.RELEASE, e.RELEASE_VARIANT) for e in ENGINES if hasattr(e, "RELEASE")),
        key=lambda item: tuple(int(part) for part in item[0].split(".")),
    )
)
NEWEST_RELEASE = next(reversed(RELEASES))

__all__ = [
    "BASELINE",
    "NEWEST_RELEASE",
    "PR457",
    "PR457_GUARDED",
    "RELEASES",
    "VARIANTS",
    "VLLM_0_34",
    "UnknownVariantError",
    "Variant",
    "get_variant",
    "release_variant",
]


class UnknownVariantError(GridproofError):
    pass


def get_variant(name: str) -> Variant:
    if name in VARIANTS:
        return VARIANTS[name]
    raise UnknownVariantError(f"unknown variant {name!r}{did_you_mean(name, VARIANTS)} (known: {', '.join(VARIANTS)})")


class UnknownReleaseError(GridproofError):
    pass


def release_variant(version: str) -> Variant:
    """The variant that answers for vLLM `version` as it ships."""
    if version in RELEASES:
        return RELEASES[version]
    raise UnknownReleaseError(
        f"vLLM {version!r} is not a modelled release{did_you_mean(version, RELEASES)} (modelled: {', '.join(RELEASES)})"
    )
