"""The inputs the records hold for each obligation, offered to the solver
as candidate models: the counterexamples of the refutations the manifest
expects (proofs/records/counterexamples.py), the domain's edges (proofs/records/edges.py,
every hypothesis true) and the needed hypotheses' witnesses
(proofs/records/needed.py, the goal false with one hypothesis dropped). Each is read
on the concrete model before a query is posed, and a query is spared only
where the concrete reading answers it (proofs/engine/solver.py): a decision
replays them first, before the probe's random inputs, a cover check looks
among them for a model, and a deletion check for an input that shows its
hypothesis needed (proofs/engine/minimisation.py). An input recorded for one
variant is offered to every variant of the theorem (its own first): read on
the variant decided, it is as good a candidate as one of its own."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

from proofs.records import counterexamples, edges, needed
from proofs.records.record import RecordError

Inputs = tuple[tuple[str, int | bool], ...]  # (name, value) pairs

# Off while a record is written: what it records is what the search finds alone.
_offered: contextvars.ContextVar[bool] = contextvars.ContextVar("gridproof_recorded_inputs_offered", default=True)


@contextlib.contextmanager
def withheld() -> Iterator[None]:
    """Within the block, no recorded input is offered."""
    token = _offered.set(False)
    try:
        yield
    finally:
        _offered.reset(token)


def recorded_inputs(theorem: str, variant_name: str) -> dict[str, tuple[Inputs, ...]]:
    """obligation -> the distinct recorded inputs of `theorem`'s records,
    counterexamples first, each record's `variant_name`'s first; none from a
    record that cannot be read (the runner's checks of the records make that
    an ERROR where it matters), and none within `withheld`."""
    found: dict[str, dict[Inputs, None]] = {}
    if not _offered.get():
        return {}
    try:
        refuted = counterexamples.recorded().get(theorem, {})
    except RecordError:
        refuted = {}
    for _, rows in _own_first(refuted, variant_name):
        for row in rows:
            found.setdefault(row["obligation"], {})[as_inputs(row["inputs"])] = None
    for record in (edges.recorded, needed.recorded):
        try:
            obligations = record().get(theorem, {})
        except RecordError:
            continue
        for obligation, variants in obligations.items():
            inputs = found.setdefault(obligation, {})
            for _, rows in _own_first(variants, variant_name):
                inputs.update((as_inputs(row["inputs"]), None) for row in rows)
    return {obligation: tuple(inputs) for obligation, inputs in found.items()}


def _own_first(by_variant: dict, variant_name: str) -> list:
    return sorted(by_variant.items(), key=lambda item: item[0] != variant_name)


def as_inputs(values: dict) -> Inputs:
    """Named values as SolverOptions.recorded_inputs holds one input."""
    return tuple(sorted(values.items()))
