"""The records' inputs offered to the solver as candidate models
(proofs/records/recorded_inputs.py): they spare a query only where the concrete
model answers it, so a stale or unfit input decides nothing."""

import pytest

from models import arith
from proofs.catalog import CATALOGUE
from proofs.engine import minimisation, problem
from proofs.engine.claims import conjunct_alone, replay
from proofs.engine.solver import PROVED, REFUTED, UNKNOWN, VACUOUS, Claim, SolverOptions, Var, decide
from proofs.faults.handwritten import in_effect
from proofs.records import counterexamples
from proofs.records.record import refuted_variants
from proofs.records.recorded_inputs import as_inputs, recorded_inputs, withheld
from proofs.run.runner import load_manifest, run_theorem

A, B = Var("a", size=True), Var("b")


@pytest.mark.parametrize("refute_first", [True, False])
def test_a_recorded_counterexample_is_the_first_answer(refute_first, monkeypatch):
    def formula(variant, x):
        return Claim(hypotheses={"a positive": x["a"] >= 1}, goal=x["b"] != 37)

    monkeypatch.setattr(problem.Problem, "check", _no_query)
    recorded = SolverOptions(
        refute_first=refute_first, recorded_inputs=(as_inputs(dict(a=0, b=37)), as_inputs(dict(a=5, b=37)))
    )
    outcome = decide(formula, (A, B), None, recorded)
    assert outcome.verdict == REFUTED
    assert outcome.counterexample == {"a": 5, "b": 37}


def _no_query(*args, **kwargs):
    raise AssertionError("a query was posed")


def test_a_recorded_input_that_does_not_replay_decides_nothing():
    def formula(variant, x):
        return Claim(hypotheses={"a positive": x["a"] >= 1}, goal=x["b"] >= 0)

    # b = -1 violates the goal, but a = 0 violates the hypothesis: no counterexample.
    stale = (as_inputs(dict(a=0, b=-1)), as_inputs(dict(a=3, b=2)))
    only = SolverOptions(refute_first=True, probe_only=True, recorded_only=True, recorded_inputs=stale)
    assert decide(formula, (A, B), None, only).verdict == UNKNOWN
    searched = SolverOptions(refute_first=True, recorded_inputs=stale)
    outcome = decide(formula, (A, B), None, searched)
    assert outcome.verdict == REFUTED  # found by the search, as without the record
    assert outcome.counterexample["a"] >= 1 and outcome.counterexample["b"] < 0


def test_a_recorded_input_where_a_hypothesis_fails_reaches_no_cover_goal():
    def formula(variant, x):
        return Claim(
            hypotheses={"b above a": x["b"] > x["a"]}, goal=x["b"] >= x["a"], covers={"b is a": x["b"] == x["a"]}
        )

    # The cover holds at a = b = 2, where the hypothesis does not: the cover is still unreachable.
    offered = SolverOptions(recorded_inputs=(as_inputs(dict(a=2, b=2)), as_inputs(dict(a=1, b=3))))
    outcome = decide(formula, (A, B), None, offered)
    assert outcome.verdict == VACUOUS
    assert outcome.reason == "cover goal 'b is a' is unreachable"


def test_a_recorded_witness_shows_a_hypothesis_needed_only_where_the_goal_fails(monkeypatch):
    def formula(variant, x):
        return Claim(hypotheses={"a positive": x["a"] >= 1, "b small": x["b"] <= 3}, goal=x["a"] * 0 + x["b"] < 4)

    posed = []
    pinned_answer = minimisation.DeletionQueries.pinned_answer

    def spy(self, kept, name):
        posed.append(name)
        return pinned_answer(self, kept, name)

    monkeypatch.setattr(minimisation.DeletionQueries, "pinned_answer", spy)
    # a = 1, b = 9 shows "b small" needed with no query. The goal holds at
    # a = 0, b = 2, which shows nothing: "a positive" is checked, and dropped.
    offered = SolverOptions(recorded_inputs=(as_inputs(dict(a=0, b=2)), as_inputs(dict(a=1, b=9))))
    outcome = decide(formula, (A, B), None, offered)
    assert outcome.verdict == PROVED
    assert outcome.hypotheses_used == ["b small"]
    assert outcome.hypotheses_unconfirmed == []
    assert posed == ["a positive"]


def test_every_recorded_counterexample_still_refutes_its_obligation():
    # A stale one only slows a refutation; this says when to record them again.
    for theorem_name, variants in counterexamples.recorded().items():
        theorem = CATALOGUE[theorem_name]
        obligations = {o.name: o for o in (*theorem.obligations, *filter(None, [theorem.trace_search]))}
        for variant_name, rows in variants.items():
            with in_effect(variant_name) as variant:
                for row in rows:
                    formula = obligations[row["obligation"]].formula
                    refuted = replay(formula, variant, row["inputs"])[0] or any(
                        replay(conjunct_alone(formula, name), variant, row["inputs"])[0]
                        for name in _conjuncts(formula, variant, row["inputs"])
                    )
                    assert refuted, f"{theorem_name} / {variant_name}: {counterexamples.RECORD_COMMAND}"


def _conjuncts(formula, variant, values) -> list[str]:
    return list(formula(variant, dict(values)).conjuncts)


def test_every_expected_refutation_has_a_recorded_counterexample():
    manifest = load_manifest()
    record = counterexamples.recorded()
    for name, theorem in CATALOGUE.items():
        if theorem.enumeration is not None or name not in manifest:
            continue
        for variant_name in refuted_variants(manifest[name]):
            assert record.get(name, {}).get(variant_name), f"{name} / {variant_name}"


def test_an_entry_decides_alike_with_its_recorded_inputs_withheld():
    theorem = CATALOGUE["plan-reads-group-grid"]
    for variant_name in ("pr457", "mutant:scheduler-block-of-attention-spans"):
        expected = PROVED if variant_name == "pr457" else REFUTED
        offered = run_theorem(theorem, variant_name, expected)
        with withheld():
            assert recorded_inputs(theorem.name, variant_name) == {}
            alone = run_theorem(theorem, variant_name, expected)
        assert offered.verdict == alone.verdict == expected
        assert offered.conjuncts_alone == alone.conjuncts_alone


def test_a_recorded_input_where_the_model_divides_by_zero_refutes_as_a_crash(monkeypatch):
    def formula(variant, x):
        return Claim(hypotheses={"b non-negative": x["b"] >= 0}, goal=arith.floordiv(x["b"], x["a"]) >= 0)

    monkeypatch.setattr(problem.Problem, "check", _no_query)
    outcome = decide(formula, (A, B), None, SolverOptions(recorded_inputs=(as_inputs(dict(a=0, b=3)),)))
    assert outcome.verdict == REFUTED
    assert outcome.counterexample == {"a": 0, "b": 3}
    assert outcome.reason.startswith("the model divides by zero at tests/test_recorded_inputs.py:")
