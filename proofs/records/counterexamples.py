"""Recorded counterexamples of every refutation the manifest expects.

`gridproof record --only counterexamples` decides every entry the manifest
expects to be REFUTED (a variant that breaks a theorem, a hand mutant),
with no recorded input offered, and records its counterexample and the
obligation it refutes. `gridproof prove` replays each recorded
counterexample on that obligation before it searches
(proofs/records/recorded_inputs.py), as Hypothesis replays its example database
first: a counterexample that still replays on the concrete model refutes the
entry at the cost of one reading, where the ladder's queries found it in up
to a second. One that no longer replays (the model or the mutant changed)
costs a reading and the search goes on as if none were recorded, so a
stale record slows a refutation and never decides one.
"""

from __future__ import annotations

from pathlib import Path

from proofs.records.record import Record

RECORD = Path(__file__).parents[1] / "recorded" / "counterexamples.json"
RECORD_COMMAND = "gridproof record --only counterexamples"
RECORDED = Record(RECORD, RECORD_COMMAND, "counterexamples")


def recorded() -> dict:
    """theorem -> variant -> [{"obligation": name, "inputs": {...}}]."""
    return RECORDED.theorems()
