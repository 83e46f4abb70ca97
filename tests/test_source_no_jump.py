"""split-no-jump on the shipped split (proofs/source/theorems.py): its lemma
(the chunk ends by the next multiple of the cadence above its start) is
proved case by case, the theorem once over any split result the lemma holds
of; a split that breaks the lemma is refuted with an input that replays."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import z3

from models import arith
from proofs.catalog.base import split_call, split_params
from proofs.engine.solver import PROVED, REFUTED
from proofs.source import theorems
from proofs.source.functions import ShippedFunctions
from proofs.source.loader import Loader, VllmSource

INSTALLED = VllmSource.installed()
NEXT_BOUNDARY = "next_block_boundary = (start // block_size + 1) * block_size"


def _tree_with_scheduler(tmp_path: Path, old: str, new: str) -> VllmSource:
    """A vLLM tree holding the installed split (edited) and the helpers it calls."""
    assert INSTALLED is not None, "vLLM 0.33.0 is not installed: run tests/install-conformance.sh"
    root = tmp_path / "vllm"
    for module in ("v1.core.sched.scheduler", "v1.kv_cache_interface", "utils.math_utils"):
        target = root / (module.replace(".", "/") + ".py")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(INSTALLED.filename("vllm." + module), target)
    (root / "platforms").mkdir()
    scheduler = root / "v1" / "core" / "sched" / "scheduler.py"
    text = scheduler.read_text()
    assert text.count(old) == 1
    scheduler.write_text(text.replace(old, new))
    return VllmSource.from_path(str(tmp_path))


def test_no_jump_is_proved_on_the_installed_split():
    verdict = theorems.prove("split-no-jump", ShippedFunctions(Loader(INSTALLED)))
    assert verdict.verdict == PROVED, verdict.reason
    assert verdict.paths == 24


@pytest.mark.parametrize(
    "old, new",
    [
        (NEXT_BOUNDARY, NEXT_BOUNDARY + " + 1"),  # a mid-block chunk stops one token past the boundary
        ("if start % block_size != 0 and not", "if start % block_size == 0 and not"),  # the stop on the wrong starts
    ],
    ids=["boundary-one-late", "boundary-stop-inverted"],
)
def test_no_jump_notices_a_split_that_passes_a_boundary(tmp_path, old, new):
    """The lemma is refuted; its input, completed with the multiple passed,
    refutes the theorem itself, and replays: the broken split run on it
    ends past k * block from a start before it."""
    functions = ShippedFunctions(Loader(_tree_with_scheduler(tmp_path, old, new)))
    verdict = theorems.prove("split-no-jump", functions)
    assert verdict.verdict == REFUTED, verdict.reason
    x = verdict.counterexample
    start, scheduled = split_call(x).start, functions.split(split_params(x), split_call(x))
    assert start < x["k"] * x["block"] < start + scheduled


def test_a_theorem_is_vacuous_only_when_every_case_is_shown_to_admit_nothing():
    """A case that satisfies the hypotheses admits the theorem whatever came
    before; an undecided one keeps it from VACUOUS (UNKNOWN instead)."""
    x = z3.Int("x")
    context = arith.SymbolicContext()
    possible, impossible = [x > 0], [x > 0, x < 0]
    assert theorems._admits(context, possible, z3.unknown) == z3.sat
    assert theorems._admits(context, impossible, z3.unsat) == z3.unsat
    assert theorems._admits(context, impossible, z3.unknown) == z3.unknown
