"""A model that divides by zero on an input its hypotheses admit is refuted,
with the crash as the reason; a division by zero on an input they exclude is
still a counterexample that does not replay (ERROR)."""

from __future__ import annotations

import pytest

from models import arith
from proofs.catalog import CATALOGUE
from proofs.engine.claims import replay
from proofs.engine.solver import ERROR, PROVED, REFUTED, Claim, Var, decide
from proofs.faults.patch import applied
from proofs.mutation.operators import generate
from proofs.mutation.reach import key
from proofs.mutation.run import KILLED, decide_mutant, engine_runs, reach_of, summary
from proofs.records.recorded_inputs import withheld
from proofs.run.runner import run_theorem

pytestmark = pytest.mark.slow  # a mutate run

B = Var("b")

# A generated mutant of config.resolve: the kernel read as the recurrent
# block size, which may be 0 (no explicit --mamba-block-size), so the page
# alignment divides by zero on inputs every theorem of the config admits.
CRASHING = "config:resolve:size-name:7"


def test_a_division_by_zero_on_an_admissible_input_is_refuted_with_the_crash_as_reason():
    def formula(variant, x):
        return Claim(hypotheses={"b non-negative": x["b"] >= 0}, goal=arith.floordiv(12, x["b"]) <= 12)

    outcome = decide(formula, (B,), None)
    assert outcome.verdict == REFUTED
    assert outcome.counterexample == {"b": 0}
    assert outcome.reason.startswith("the model divides by zero at tests/test_crash_refutation.py:")
    assert outcome.reason.endswith("(formula) on this input")
    with pytest.raises(ZeroDivisionError):  # the crash reproduces
        formula(None, outcome.counterexample)
    # With zero excluded, the same goal is proved.
    positive = decide(lambda v, x: Claim({"b positive": x["b"] >= 1}, arith.floordiv(12, x["b"]) <= 12), (B,), None)
    assert positive.verdict == PROVED


def test_a_division_by_zero_where_a_hypothesis_fails_concretely_is_still_an_error():
    # An encoding bug: read symbolically b = 1 is admitted, read concretely
    # it is not, and there the model divides by zero.
    def formula(variant, x):
        if arith.is_symbolic(x["b"]):
            return Claim(hypotheses={"b admitted": x["b"] >= 1}, goal=x["b"] != 1)
        return Claim(hypotheses={"b admitted": x["b"] >= 2}, goal=arith.floordiv(1, x["b"] - 1) >= 0)

    outcome = decide(formula, (B,), None)
    assert outcome.verdict == ERROR
    assert outcome.reason == (
        "counterexample does not replay: "
        "the concrete model divides by zero, and hypotheses b admitted do not hold there"
    )


def test_a_crash_outside_the_dual_arithmetic_does_not_replay():
    def formula(variant, x):
        return Claim(hypotheses={}, goal=12 // x["b"] >= 0)

    assert replay(formula, None, {"b": 0}) == (False, "the concrete model divides by zero outside models/arith.py")


def test_divisions_by_zero_are_recorded_only_within_the_block():
    with arith.divisions_by_zero_recorded() as crashes:
        assert arith.floordiv(7, 0) == 0 and arith.mod(7, 0) == 0 and arith.cdiv(7, 0) == 0
    assert len(crashes) == 3 and all(c.startswith("tests/test_crash_refutation.py:") for c in crashes)
    with pytest.raises(ZeroDivisionError):
        arith.floordiv(7, 0)


@pytest.fixture(scope="module")
def crashing_mutant():
    (mutant,) = [m for m in generate(("config",), ("size-name",)) if m.ident == CRASHING]
    assert mutant.summary == "kernel  ->  c.mamba_block_size"
    return mutant


def test_the_generated_mutant_that_crashes_is_refuted_by_the_config_theorem(crashing_mutant):
    theorem = CATALOGUE["config-default-equivalence"]
    # Z3's model that crashes is what this reads: offered the recorded
    # inputs, a recorded edge refutes it first (the same crash, another input).
    with applied(crashing_mutant.patch), withheld():
        entry = run_theorem(theorem, "baseline", PROVED)
        assert entry.verdict == REFUTED, entry.reason
        assert entry.reason.startswith("the model divides by zero at models/config.py:")
        assert entry.reason.endswith("(resolve) on this input")
        counterexample = entry.counterexample
        assert replay(theorem.obligations[0].formula, _baseline(), counterexample) == (True, entry.reason)
        with pytest.raises(ZeroDivisionError):
            theorem.obligations[0].formula(_baseline(), dict(counterexample))
    # Unpatched, the model does not crash there.
    theorem.obligations[0].formula(_baseline(), dict(counterexample))


def test_mutate_counts_it_killed_by_a_refutation_not_by_an_error(crashing_mutant):
    runs = engine_runs()
    reach = reach_of([crashing_mutant], runs)
    function = key(crashing_mutant.patch.module, crashing_mutant.patch.function)
    readers = reach.theorems[function]
    selected = [r for r in runs if r.theorem.name in readers]
    with withheld():  # Z3's model, as above
        result = decide_mutant(crashing_mutant, selected, reach.calls.get(function, []))
    assert result.status == KILLED
    # The entry's reason is recorded with the kill: here the crash.
    assert result.killed_by == [
        "config-default-equivalence / baseline: REFUTED, expected PROVED "
        "(the model divides by zero at models/config.py:50 (resolve) on this input)"
    ]
    figures = summary([result], result.seconds)
    assert (figures["killed"], figures["killed_by_error"]) == (1, 0)


def _baseline():
    from models.variants import get_variant

    return get_variant("baseline")
