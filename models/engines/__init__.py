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
    description: str = ""
