"""The recorded edges of every proved theorem's domain (proofs/records/edges.py): a
hypothesis narrowed in the catalogue makes the entry VACUOUS, naming the
edge it excludes, and the record covers every obligation it must."""

import dataclasses

import pytest
import z3

from proofs.catalog import CATALOGUE
from proofs.catalog.base import split_call
from proofs.engine.solver import ERROR, PROVED, REFUTED, VACUOUS
from proofs.faults.handwritten import in_effect
from proofs.faults.patch import Patch, applied
from proofs.records import edges
from proofs.run.recording import proved_obligations
from proofs.run.runner import run_theorem

_PAST_PREFILL = '"past the prefill": call.start >= call.prefill_end'


def _proved_obligations():
    for name, obligation, variant, _ in proved_obligations():
        yield name, obligation, variant


def test_every_proved_obligation_has_recorded_edges_of_its_inputs():
    record = edges.recorded()
    count = 0
    for name, obligation, variant in _proved_obligations():
        points = record[name][obligation.name][variant]
        assert points, f"{name} / {obligation.name} / {variant}: no edge recorded"
        for point in points:
            assert set(point["inputs"]) == {v.name for v in obligation.variables}
        count += 1
    assert count >= 90


def test_every_recorded_edge_is_admitted_by_the_catalogue_as_it_is():
    record = edges.recorded()
    for name, obligation, variant_name in _proved_obligations():
        with in_effect(variant_name) as variant:
            for point in record[name][obligation.name][variant_name]:
                assert not edges._hypotheses_false(obligation.formula, variant, point["inputs"]), (
                    f"{name} / {obligation.name} / {variant_name}: {point['edge']}"
                )


@pytest.mark.parametrize(
    "narrowed",
    [
        '"past the prefill": call.start > call.prefill_end',  # the edge start == prefill end left out
        '"past the prefill": call.start >= call.prefill_end + 1',
    ],
)
def test_a_narrowed_hypothesis_makes_the_proved_entry_vacuous(narrowed):
    theorem = CATALOGUE["split-untouched-outside-prefill"]
    assert run_theorem(theorem, "baseline", PROVED).ok
    with applied(Patch("proofs.catalog.split", "outside_prefill", _PAST_PREFILL, narrowed)):
        entry = run_theorem(theorem, "baseline", PROVED)
    assert entry.verdict == VACUOUS and not entry.ok
    assert "the hypotheses exclude the recorded edge of its domain" in entry.reason
    assert "past the prefill false there" in entry.reason


def test_a_widened_hypothesis_still_proves():
    widened = Patch("proofs.catalog.base", "call_domain", 'x["computed"] >= 0,', 'x["computed"] >= -1,')
    with applied(widened):
        entry = run_theorem(CATALOGUE["split-untouched-outside-prefill"], "baseline", PROVED)
    assert entry.verdict == PROVED and entry.ok  # a wider domain holds every recorded edge


def test_a_shape_left_out_of_a_theorem_is_vacuous():
    # A theorem that no longer decides a recorded obligation (a group shape dropped from its list) proves less.
    theorem = CATALOGUE["groups-published-on-target-boundaries"]
    fewer = dataclasses.replace(theorem, obligations=theorem.obligations[1:])
    with in_effect("pr457-guarded") as variant:
        assert edges.excluded(theorem, "pr457-guarded", variant) is None
        verdict, reason = edges.excluded(fewer, "pr457-guarded", variant)
    assert verdict == VACUOUS
    assert reason.startswith(f"{theorem.obligations[0].name}: an obligation recorded for pr457-guarded")


def test_a_missing_or_stale_record_is_an_error_naming_what_to_run(monkeypatch):
    theorem = CATALOGUE["split-untouched-outside-prefill"]
    record = edges.recorded()
    monkeypatch.setattr(edges, "recorded", lambda: {k: v for k, v in record.items() if k != theorem.name})
    verdict, reason = edges.excluded(theorem, "baseline", None)
    assert verdict == ERROR and "no recorded edges of its domain for baseline" in reason
    assert edges.RECORD_COMMAND in reason
    stale = {"main": {"baseline": [{"edge": "e", "inputs": {"block": 1}}]}}
    monkeypatch.setattr(edges, "recorded", lambda: {**record, theorem.name: stale})
    verdict, reason = edges.excluded(theorem, "baseline", None)
    assert verdict == ERROR and "name other inputs than it reads now" in reason


def test_a_fault_that_proves_an_expected_refutation_is_a_mismatch_not_an_error():
    # The baseline overwriting an explicit cadence is expected REFUTED, so no
    # edges are recorded for it: a model fault that makes it hold is reported
    # as what it is, PROVED where REFUTED was expected.
    keeps = Patch("models.config", "resolve", "overwrite = c.align_mode\n", "overwrite = False\n")
    with applied(keeps):
        entry = run_theorem(CATALOGUE["config-explicit-cadence-kept"], "baseline", REFUTED)
    assert entry.verdict == PROVED and not entry.ok, entry.reason


def test_recording_finds_the_edge_of_each_comparison():
    obligation = CATALOGUE["split-untouched-outside-prefill"].obligations[0]
    with in_effect("baseline") as variant:
        points = edges.edges_of(obligation, variant)
        for point in points:
            assert not edges._hypotheses_false(obligation.formula, variant, point["inputs"])
        # Some recorded input starts the chunk exactly at the prefill's end: the edge of "past the prefill".
        calls = [split_call(p["inputs"]) for p in points]
        assert any(call.start == call.prefill_end for call in calls)


def test_the_edges_of_a_comparison_are_tight_and_one_inside():
    ctx = z3.Context()  # the test's own: terms made in Z3's main context shift the ids later tests' get
    x, y = z3.Int("x", ctx), z3.Int("y", ctx)
    found = dict(edges._edges(_Reading({"h": z3.And(x >= 1, x < y)})))
    assert set(found) == {
        "h: x >= 1 is tight",
        "h: x >= 1 holds by one more",
        "h: x < y is tight",
        "h: x < y holds by one more",
    }

    def holds(edge, at_x, at_y):
        return z3.is_true(z3.simplify(z3.substitute(found[edge], (x, z3.IntVal(at_x, ctx)), (y, z3.IntVal(at_y, ctx)))))

    assert holds("h: x >= 1 is tight", 1, 0) and not holds("h: x >= 1 is tight", 2, 0)
    assert holds("h: x >= 1 holds by one more", 2, 0) and not holds("h: x >= 1 holds by one more", 1, 0)
    assert holds("h: x < y is tight", 3, 4) and not holds("h: x < y is tight", 3, 5)
    assert holds("h: x < y holds by one more", 3, 5) and not holds("h: x < y holds by one more", 3, 4)


class _Reading:
    """What edges._edges reads of an encoding: its hypotheses and free inputs."""

    def __init__(self, hypotheses):
        self.hypotheses, self.free, self.inputs = hypotheses, [], {}
