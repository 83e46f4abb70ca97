"""Recorded inputs that each proved obligation's claim reads.

An input the catalogue stops reading is one it has fixed: a flag of the
symbolic split set to a constant (no shared-prefix junction, say), a size
taken from another input. The hypotheses do not mention it, so the recorded
edges of the domain cannot see it go, and the proof, now over the fixed
value alone, still holds and states less. So for every obligation a variant
is expected to prove, `gridproof record --only inputs-read` records the
inputs its proof read (those the hypotheses and the goal mention, directly
or through the witnesses' definitions, in some case it decided; a case
split's inputs are read by the split), and `gridproof prove` makes a PROVED
entry whose proof reads fewer VACUOUS, naming the input. An input left
unread on purpose is recorded again, and the change shows in the record's
diff."""

from __future__ import annotations

from pathlib import Path

from proofs.engine.solver import ERROR, VACUOUS
from proofs.records.record import Record, RecordError

RECORD_COMMAND = "gridproof record --only inputs-read"
RECORDED = Record(Path(__file__).parents[1] / "recorded" / "inputs-read.json", RECORD_COMMAND, "inputs read")


def recorded() -> dict:
    """theorem -> obligation -> variant -> [input names]."""
    return RECORDED.theorems()


def fewer_than_recorded(theorem_name: str, variant_name: str, outcomes) -> tuple[str, str] | None:
    """(VACUOUS, why) when a proved obligation of `outcomes` ((obligation,
    outcome) pairs) read fewer inputs than recorded, (ERROR, why) when the
    record has none for it; None when each read at least the record."""
    again = f"{RECORD_COMMAND} --theorem {theorem_name}"
    try:
        record = recorded().get(theorem_name, {})
    except RecordError as error:
        return ERROR, str(error)
    for obligation, outcome in outcomes:
        names = record.get(obligation.name, {}).get(variant_name)
        if names is None:
            return ERROR, f"{obligation.name}: no recorded inputs read for {variant_name}; record them: {again}"
        unread = [name for name in names if name not in outcome.inputs_read]
        if unread:
            return VACUOUS, (
                f"{obligation.name}: the proof no longer reads {', '.join(unread)}, as recorded: an input fixed "
                f"in the catalogue proves less; if it is meant, record the inputs again ({again})"
            )
    return None
