"""The recorded witnesses that every proved theorem needs its hypotheses
(proofs/records/needed.py): a goal weakened so that it holds at one makes the entry
VACUOUS, naming the hypothesis, and the record covers every obligation."""

import pytest

from proofs.catalog import CATALOGUE
from proofs.engine.solver import ERROR, PROVED, VACUOUS
from proofs.faults.handwritten import in_effect
from proofs.faults.patch import Patch, applied
from proofs.records import needed
from proofs.run import recording
from proofs.run.recording import proved_obligations
from proofs.run.runner import load_manifest, run_theorem

_PUBLISHED_GOAL = "goal=arith.implies(step.published, _on_targets(step.end, d.target_spans)),"


def _proved_obligations():
    for name, obligation, variant, _ in proved_obligations():
        yield name, obligation, variant


def test_every_proved_obligation_has_a_record_and_most_a_witness():
    record = needed.recorded()
    obligations = witnessed = 0
    for name, obligation, variant in _proved_obligations():
        witnesses = record[name][obligation.name][variant]
        obligations += 1
        witnessed += bool(witnesses)
        for witness in witnesses:
            assert set(witness["inputs"]) == {v.name for v in obligation.variables}
    assert obligations >= 110 and witnessed >= 85


def test_at_every_recorded_witness_the_goal_fails_and_its_hypothesis_is_false():
    record = needed.recorded()
    for name, obligation, variant_name in _proved_obligations():
        with in_effect(variant_name) as variant:
            for witness in record[name][obligation.name][variant_name]:
                claim = obligation.formula(variant, dict(witness["inputs"]))
                where = f"{name} / {obligation.name} / {variant_name}: {witness['hypothesis']}"
                assert not claim.goal and not claim.hypotheses[witness["hypothesis"]], where


@pytest.mark.parametrize(
    "theorem, variant, patch",
    [
        # A published checkpoint held to every target group's boundary but the first (the one
        # sharded over DCP in the recorded witness).
        (
            "prefill-published-on-target-boundaries",
            "pr457-guarded",
            Patch(
                "proofs.catalog.prefill",
                "published_on_targets_step",
                _PUBLISHED_GOAL,
                _PUBLISHED_GOAL.replace("d.target_spans)", "d.target_spans[1:])"),
            ),
        ),
        # The split outside prefill bounded by the request, not equal to it.
        (
            "split-untouched-outside-prefill",
            "baseline",
            Patch("proofs.catalog.split", "outside_prefill", "goal=r == call.requested,", "goal=r <= call.requested,"),
        ),
    ],
)
def test_a_goal_weakened_to_hold_at_a_witness_makes_the_proved_entry_vacuous(theorem, variant, patch):
    assert run_theorem(CATALOGUE[theorem], variant, PROVED).ok
    with applied(patch):
        entry = run_theorem(CATALOGUE[theorem], variant, PROVED)
    assert entry.verdict == VACUOUS and not entry.ok
    assert "the goal holds at the recorded input where, without" in entry.reason
    assert needed.RECORD_COMMAND in entry.reason


def test_a_missing_or_stale_record_is_an_error_naming_what_to_run(monkeypatch):
    theorem = CATALOGUE["split-untouched-outside-prefill"]
    record = needed.recorded()
    monkeypatch.setattr(needed, "recorded", lambda: {k: v for k, v in record.items() if k != theorem.name})
    with in_effect("baseline") as variant:
        verdict, reason = needed.weakened(theorem, "baseline", variant)
        assert verdict == ERROR and "no recorded needed hypotheses for baseline" in reason
        assert needed.RECORD_COMMAND in reason
        witness = record[theorem.name]["main"]["baseline"][0]
        renamed = {"main": {"baseline": [{**witness, "hypothesis": "a hypothesis it no longer states"}]}}
        monkeypatch.setattr(needed, "recorded", lambda: {**record, theorem.name: renamed})
        verdict, reason = needed.weakened(theorem, "baseline", variant)
        assert verdict == ERROR and "other inputs or hypotheses than it has now" in reason


def test_recording_finds_a_witness_of_each_needed_hypothesis():
    theorem = CATALOGUE["split-untouched-outside-prefill"]
    obligation = theorem.obligations[0]
    with in_effect("baseline") as variant:
        witnesses = recording.witnesses_of(obligation, variant, load_manifest()[theorem.name].rlimit)
        assert [w["hypothesis"] for w in witnesses] == ["past the prefill"]
        claim = obligation.formula(variant, dict(witnesses[0]["inputs"]))
        assert not claim.goal and not claim.hypotheses["past the prefill"]
