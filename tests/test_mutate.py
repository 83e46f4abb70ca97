"""gridproof mutate: the operators on small sources, a generated mutant
killed, equivalence proved and refuted by Z3, and the command's errors."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from helpers import gridproof

from models import prefill
from models.variants import VARIANTS
from proofs.faults.patch import Patch, applied, compile_patched, references_patched
from proofs.mutation import equivalence
from proofs.mutation.operators import mutants_of, size_kind
from proofs.mutation.reach import Call, Fixed, IntLeaf
from proofs.mutation.run import KILLED, REFERENCE_THEOREMS, decide_mutant, engine_runs, reach_of

pytestmark = pytest.mark.slow  # mutate runs (about 3 minutes)

TOY = '''
from models import arith


def grid(start, end, block, cadence):
    """A toy in the model's style."""
    aligned = arith.round_down(end, block)
    ok = arith.all_of(start < aligned, aligned <= end + 2)
    return arith.ite(ok, arith.minimum(aligned, cadence), arith.floordiv(start, cadence))


def stops(start, end):
    ends = []
    candidates = (start + 1, end - 1, 7)
    for stop in candidates:
        ends.append(stop)
    return ends
'''


@pytest.fixture
def toy(tmp_path, monkeypatch):
    (tmp_path / "toy_model.py").write_text(textwrap.dedent(TOY), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    import toy_model

    yield toy_model
    del sys.modules["toy_model"]


def summaries(module: str, function: str, operator: str) -> list[str]:
    return [m.summary for m in mutants_of(module, function, (operator,))]


def test_each_operator_on_a_small_source(toy):
    assert summaries("toy_model", "grid", "relational") == [
        "start < aligned  ->  start <= aligned",
        "aligned <= end + 2  ->  aligned < end + 2",
    ]
    assert "start < aligned  ->  start < aligned + 1" in summaries("toy_model", "grid", "compare+1")
    assert summaries("toy_model", "grid", "constant-1") == ["2  ->  1"]
    assert summaries("toy_model", "grid", "min<->max") == [
        "arith.minimum(aligned, cadence)  ->  arith.maximum(aligned, cadence)"
    ]
    assert summaries("toy_model", "grid", "floor<->ceil") == [
        "arith.round_down(end, block)  ->  arith.cdiv(end, block) * block",
        "arith.floordiv(start, cadence)  ->  arith.cdiv(start, cadence)",
    ]
    assert summaries("toy_model", "grid", "drop-conjunct") == [
        "arith.all_of(start < aligned, aligned <= end + 2)  ->  arith.all_of(aligned <= end + 2)",
        "arith.all_of(start < aligned, aligned <= end + 2)  ->  arith.all_of(start < aligned)",
    ]
    # block and cadence are sizes of one kind; start and end are not sizes
    assert summaries("toy_model", "grid", "size-name") == [
        "block  ->  cadence",
        "cadence  ->  block",
        "cadence  ->  block",
    ]
    assert summaries("toy_model", "stops", "drop-stop") == [
        "(start + 1, end - 1, 7)  ->  (end - 1, 7)",
        "(start + 1, end - 1, 7)  ->  (start + 1, 7)",
        "(start + 1, end - 1, 7)  ->  (start + 1, end - 1)",
    ]
    assert summaries("toy_model", "stops", "arith+1") == []  # a constant operand is constant+1's


def test_every_toy_mutant_applies_and_changes_the_code(toy):
    for function in ("grid", "stops"):
        original = getattr(toy, function).__code__
        for mutant in mutants_of("toy_model", function):
            assert compile_patched(mutant.patch).__code__.co_code != original.co_code or (
                compile_patched(mutant.patch).__code__.co_consts != original.co_consts
            ), mutant.summary
            with applied(mutant.patch):
                assert getattr(toy, function).__code__ is not original
            assert getattr(toy, function).__code__ is original


def test_size_kinds():
    assert size_kind("block") == size_kind("hash_block") == size_kind("cadence") == "tokens"
    assert size_kind("mamba_page") == size_kind("mamba_page_size_padded") == "bytes"
    assert size_kind("eagle_drop") is None and size_kind("tokens") is None and size_kind("eagle_spans") is None


def test_a_generated_mutant_is_killed_by_the_catalogue():
    (mutant,) = [m for m in mutants_of("models.prefill", "initial_state_column") if m.operator == "constant-1"]
    assert mutant.summary == "1  ->  0"
    runs = engine_runs()
    reach = reach_of([mutant], runs)
    readers = reach.theorems["models.prefill:initial_state_column"]
    assert "prefill-state-slot" in readers
    result = decide_mutant(mutant, [r for r in runs if r.theorem.name in readers], [])
    assert result.status == KILLED
    assert result.killed_by[0].startswith("prefill-state-slot / ")
    assert "REFUTED, expected PROVED" in result.killed_by[0]
    assert prefill.initial_state_column(VARIANTS["baseline"], 8, 4) == 1  # the worker's patch is gone


def test_a_mutant_of_the_plan_simulate_runs_is_killed_by_a_plan_theorem():
    (mutant,) = [m for m in mutants_of("models.plan", "plan") if m.summary == "r > hash_block  ->  r >= hash_block"]
    runs = [r for r in engine_runs() if r.theorem.name.startswith("plan-")]
    readers = reach_of([mutant], runs).theorems["models.plan:plan"]
    assert {"plan-default-equivalence", "plan-reads-group-grid"} <= readers
    result = decide_mutant(mutant, [r for r in runs if r.theorem.name in readers], [])
    assert result.status == KILLED
    assert "REFUTED, expected PROVED" in result.killed_by[0]


def test_with_the_reference_patched_a_shared_fault_needs_a_theorem_other_than_the_comparison():
    """A fault in code 0.33.0 shares moves the reference as a file edit would:
    the comparison with 0.33.0 no longer kills it, a property does."""
    (mutant,) = [m for m in mutants_of("models.config", "resolve") if m.ident == "config:resolve:min<->max:0"]
    runs = engine_runs()
    readers = reach_of([mutant], runs).theorems["models.config:resolve"]
    selected = [r for r in runs if r.theorem.name in readers]
    released = decide_mutant(mutant, selected, [])
    assert released.status == KILLED and released.killed_by[0].startswith("config-default-equivalence / ")
    with references_patched():
        patched = decide_mutant(mutant, selected, [])
    assert patched.status == KILLED
    assert patched.killed_by[0].split(" / ")[0] not in REFERENCE_THEOREMS, patched.killed_by


PUBLISHES_CALL = Call(VARIANTS["baseline"], (("end", IntLeaf()), ("cadence", IntLeaf()), ("tokens", IntLeaf())))


def test_an_equivalent_mutant_is_proved_equivalent():
    same = Patch("models.prefill", "publishes", "end > 0", "end >= 1")
    answer = equivalence.check(same, [PUBLISHES_CALL])
    assert answer.verdict == equivalence.EQUIVALENT, answer.detail


def test_a_different_mutant_is_refuted_with_a_witness_that_replays():
    different = Patch("models.prefill", "publishes", "end > 0", "end >= 0")
    answer = equivalence.check(different, [PUBLISHES_CALL])
    assert answer.verdict == equivalence.DIFFERS
    witness = answer.witness
    assert witness["end"] == 0 and witness["cadence"] != 0
    assert not prefill.publishes(0, witness["cadence"], witness["tokens"])
    assert compile_patched(different)(0, witness["cadence"], witness["tokens"])


def test_equivalence_needs_the_original_defined_only():
    """A mutant that divides where the original does not is not equivalent."""
    call = Call(VARIANTS["baseline"], (("end", IntLeaf()), ("cadence", Fixed(4))))
    crashing = Patch("models.prefill", "state_column", "arith.cdiv(end, cadence)", "arith.cdiv(end, end)")
    answer = equivalence.check(crashing, [call])
    assert answer.verdict == equivalence.DIFFERS


def mutate(*args: str) -> subprocess.CompletedProcess:
    return gridproof("mutate", *args, timeout=300)


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("--module", "nope"), "invalid choice: 'nope'"),
        (("--sample", "0"), "--sample: must be a positive integer"),
        (("--fail-under", "101"), "--fail-under: must be between 0 and 100"),
        (("--function", "no_such"), "no mutant of a function named 'no_such'"),
    ],
)
def test_bad_input_is_one_line_and_status_2(args, fragment):
    result = mutate(*args)
    assert result.returncode == 2 and result.stdout == ""
    assert len(result.stderr.splitlines()) == 1 and fragment in result.stderr


def test_a_small_run_reports_the_score_and_a_line_per_mutant():
    result = mutate("--module", "prefill", "--function", "initial_state_column")
    assert result.returncode == 0, result.stderr
    progress = [line for line in result.stderr.splitlines() if line.startswith("[")]
    assert len(progress) == 3 and all("killed by prefill-state-slot" in line for line in progress)
    assert "3 mutants: 3 killed" in result.stdout and "score 100.0%" in result.stdout
