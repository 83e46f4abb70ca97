"""The real vLLM 0.33.0, optional: its split (`split.RealSplit`), its block-size resolution
(`config.RealConfig`) and its config's reading of the speculative and budget flags
(`speculation.RealSpeculation`) called with the model's inputs, for the conformance tests, the
recorded answers and for replaying mined counterexamples.

vLLM is not a dependency of gridproof: `load_split` says so in one line when it is missing
(`bash tests/install-conformance.sh` installs the CPU build).
"""

from __future__ import annotations

import warnings
from dataclasses import replace

from models.errors import GridproofError
from models.geometry import builtin_geometry_names, load_geometry
from models.plan import plan
from models.prefill import run_prefill
from models.scheduler import SplitParams
from models.variants import BASELINE

INSTALL = "bash tests/install-conformance.sh"


class VllmMissing(GridproofError):
    """vLLM 0.33.0 is not installed, or not the version whose functions these adapters call."""


def quietly(load):
    """Call `load`, which imports vLLM, without torch's warning about its own deprecated API."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "`torch.jit.script_method` is deprecated", DeprecationWarning)
        return load()


def load_split():
    """The real split, CP and VALID; VllmMissing naming the missing module otherwise."""
    from proofs.real_vllm.split import RealSplit

    try:
        return quietly(RealSplit)
    except ImportError as error:
        raise VllmMissing(f"vLLM 0.33.0 is not installed ({error}); {INSTALL} installs it") from None


# A real baseline plan whose split parameters each prefill replaces: `run_prefill` reads the split
# from it (the geometry's cadence only sets the published flags, which vLLM's split does not return).
BASE_PLAN = plan(BASELINE, load_geometry(builtin_geometry_names()[0]))


def prefill_steps(p: SplitParams, budgets, prompt: int, outputs: int, split_function=None) -> list[tuple]:
    """(step, start, requested, end) of each step as `run_prefill` drives the split: the model's, or
    `split_function(p, call)` in its place."""
    trace = run_prefill(
        replace(BASE_PLAN, split=p),
        budgets,
        prompt_tokens=prompt,
        output_tokens=outputs,
        split_function=split_function,
    )
    return [(c.step, c.start, c.requested, c.end) for c in trace.every_chunk()]


def real_steps(real_split, p: SplitParams, budgets, prompt: int, outputs: int) -> list[tuple]:
    """The prefill's steps with vLLM's own split."""
    return prefill_steps(p, budgets, prompt, outputs, split_function=real_split.split)
