"""Recorded witnesses that each proved theorem needs its hypotheses.

A proof that no longer needs a hypothesis says the theorem changed: its goal
no longer reads what the hypothesis bounds (restore completeness asked of a
request of `tokens + 1` tokens instead of every later request of `new_tokens
>= tokens`), or the model it reads stopped depending on it. The entry still
proves, and states less than it did. So for every obligation a variant is
expected to prove, `gridproof record --only needed` records, for each
hypothesis its proof's deletion checks showed needed, a witness: an input at
which the goal fails, every other hypothesis the proof used holds and that one
does not, found by Z3 and replayed on the concrete model when recorded.
`gridproof prove` evaluates the goal at each recorded witness on the concrete
model again: a goal that holds at one makes the entry VACUOUS, naming the
hypothesis it no longer needs there. A goal changed on purpose is recorded
again, and the change shows in the record's diff.

Edges (proofs/records/edges.py) pin the domain from inside, where every hypothesis
holds; witnesses pin the goal from just outside it."""

from __future__ import annotations

from pathlib import Path

from proofs.engine.solver import ERROR, VACUOUS
from proofs.records.record import Record, RecordError

RECORD = Path(__file__).parents[1] / "recorded" / "hypotheses-needed.json"
RECORD_COMMAND = "gridproof record --only needed"
RECORDED = Record(RECORD, RECORD_COMMAND, "needed hypotheses")


def recorded() -> dict:
    """theorem -> obligation -> variant -> [{"hypothesis": name, "inputs": {...}}]."""
    return RECORDED.theorems()


def weakened(theorem, variant_name: str, variant) -> tuple[str, str] | None:
    """(VACUOUS, why) when the goal of an obligation of `theorem` holds at a
    recorded witness that it needs one of its hypotheses, (ERROR, why) when
    the record has none for it or names inputs or hypotheses it no longer
    has; None when the goal fails at every witness, as recorded."""
    again = f"{RECORD_COMMAND} --theorem {theorem.name}"
    try:
        record = recorded().get(theorem.name, {})
    except RecordError as error:
        return ERROR, str(error)
    for obligation in theorem.obligations:
        witnesses = record.get(obligation.name, {}).get(variant_name)
        if witnesses is None:
            return ERROR, f"{obligation.name}: no recorded needed hypotheses for {variant_name}; record them: {again}"
        names = {v.name for v in obligation.variables}
        for witness in witnesses:
            inputs, hypothesis = witness["inputs"], witness["hypothesis"]
            try:
                claim = obligation.formula(variant, dict(inputs))
            except ZeroDivisionError:
                continue  # the goal's definedness fails there, as when it was recorded
            if set(inputs) != names or hypothesis not in claim.hypotheses:
                return ERROR, (
                    f"{obligation.name}: its recorded needed hypotheses name other inputs or hypotheses than it "
                    f"has now; record them again: {again}"
                )
            if claim.goal:
                return VACUOUS, (
                    f"{obligation.name}: the goal holds at the recorded input where, without {hypothesis!r}, it "
                    f"failed ({_shown(inputs)}): the theorem no longer needs that hypothesis there, so it states "
                    f"less than it did; if that is meant, record again ({again})"
                )
    return None


def _shown(inputs: dict) -> str:
    return ", ".join(f"{name}={value}" for name, value in inputs.items())
