"""`gridproof source` tried as a reviewer would: single edits of vLLM 0.33.0's
source (and of it with the pr457-guarded patch), faults and refactors
(tests/source_edits.py). Every fault is REFUTED on an input that replays
(the edited function run concretely gives the value reported, the model the
other, and they differ), every refactor PROVED, each within its budget."""

from __future__ import annotations

import time

import pytest

from proofs.engine.solver import PROVED, REFUTED
from proofs.source import budget, report
from proofs.source.equivalence import subjects
from proofs.source.functions import ShippedFunctions
from proofs.source.loader import Loader
from proofs.source.search import SEARCH_SECONDS
from tests.source_edits import EDITS, tree

pytestmark = pytest.mark.slow  # source on edited trees (about 3 minutes)

FUNCTION_SECONDS = budget.FUNCTION_SECONDS  # the default `source --budget`
# the budget, the concrete search after an UNKNOWN, the crash sites' budget, and loading
WALL_SECONDS = FUNCTION_SECONDS + SEARCH_SECONDS + report.CRASH_SECONDS + 15


@pytest.mark.parametrize("edit", EDITS, ids=[e.name for e in EDITS])
def test_an_edit_is_refuted_with_a_replaying_input_or_proved(tmp_path, edit):
    source = tree(tmp_path, edit)
    started = time.monotonic()
    with budget.configured(function_seconds=FUNCTION_SECONDS):
        result = report.check(source, (edit.function,), progress=False, theorems=False, variant=edit.variant)
    elapsed = time.monotonic() - started
    entry = result["functions"][edit.function]
    assert elapsed < WALL_SECONDS, f"{edit.name}: {elapsed:.0f} s"
    if not edit.fault:
        assert entry["verdict"] == PROVED, entry.get("reason")
        assert all(s["verdict"] == PROVED for s in entry.get("crash_sites", []))
        return
    assert entry["verdict"] == REFUTED, entry.get("reason")
    values = entry["counterexample"]
    shipped_value, model_value = entry["values"]["first"], entry["values"]["second"]
    assert shipped_value != model_value
    subject = subjects(edit.variant)[edit.function]
    functions = ShippedFunctions(Loader(source), edit.variant)  # loaded afresh: the replay is independent
    assert _plain(subject.shipped(functions, values)) == shipped_value
    assert _plain(subject.expected(functions, values)) == model_value


def _plain(value):
    return list(value) if isinstance(value, tuple) else value


def test_the_suite_holds_faults_and_refactors_of_both_trees():
    kinds = {(e.fault, e.patch is not None) for e in EDITS}
    assert kinds == {(True, False), (False, False), (True, True), (False, True)}
    assert len(EDITS) >= 12
