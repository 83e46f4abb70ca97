"""Recorded counterexamples of every refutation the manifest expects.

`python3 -m proofs.counterexamples --write` decides every entry the manifest
expects to be REFUTED (a variant that breaks a theorem, a hand mutant),
with no recorded input offered, and records its counterexample and the
obligation it refutes. `gridproof prove` replays each recorded
counterexample on that obligation before it searches
(proofs/recorded_inputs.py), as Hypothesis replays its example database
first: a counterexample that still replays on the concrete model refutes the
entry at the cost of one reading, where the ladder's queries found it in up
to a second. One that no longer replays (the model or the mutant changed)
costs a reading and the search goes on as if none were recorded, so a
stale record slows a refutation and never decides one.
"""

from __future__ import annotations

import sys
from pathlib import Path

import z3

from proofs.claims import UnknownConjunct, conjunct_alone, replay
from proofs.mutation.handwritten import in_effect
from proofs.records import Record, RecordError, refuted_variants
from proofs.solver import REFUTED, SolverOptions

RECORD = Path(__file__).parent / "recorded" / "counterexamples.json"
RECORD_COMMAND = "python3 -m proofs.counterexamples --write"
RECORDED = Record(RECORD, RECORD_COMMAND, "counterexamples")


def recorded() -> dict:
    """theorem -> variant -> [{"obligation": name, "inputs": {...}}]."""
    return RECORDED.theorems()


def found(theorem_names: list[str] | None = None) -> dict:
    """The record with `theorem_names` (all when None) decided afresh, every
    other theorem's kept."""
    from proofs.catalog import CATALOGUE
    from proofs.recorded_inputs import withheld
    from proofs.runner import load_manifest, run_theorem

    try:
        current = dict(recorded())
    except RecordError:  # unreadable or absent: written afresh
        current = {}
    manifest = load_manifest()
    theorems: dict = {}
    for name, theorem in CATALOGUE.items():
        if theorem_names is not None and name not in theorem_names:
            if name in current:
                theorems[name] = current[name]
            continue
        if theorem.enumeration is not None or name not in manifest:
            continue
        rows = {}
        for variant_name in refuted_variants(manifest[name]):
            options = SolverOptions(rlimit=manifest[name].rlimit)
            with withheld():
                entry = run_theorem(theorem, variant_name, REFUTED, options)
                found_rows = _rows(theorem, variant_name, entry, options) if entry.verdict == REFUTED else []
            if not found_rows:
                # One found otherwise (a concrete search the solver's own does not reach within its budget)
                # is kept while it still refutes.
                found_rows = _still_refuting(theorem, variant_name, current.get(name, {}).get(variant_name, []))
            if found_rows:
                rows[variant_name] = found_rows
            print(f"{name} / {variant_name}: {entry.verdict}, {len(found_rows)} recorded", file=sys.stderr)
        if rows:
            theorems[name] = rows
    return theorems


def _still_refuting(theorem, variant_name: str, rows: list[dict]) -> list[dict]:
    """The recorded rows whose inputs still refute their obligation on the concrete model."""
    obligations = {o.name: o for o in (*theorem.obligations, *filter(None, [theorem.trace_search]))}
    kept = []
    with in_effect(variant_name) as variant:
        for row in rows:
            obligation = obligations.get(row.get("obligation"))
            if obligation is not None and replay(obligation.formula, variant, row["inputs"])[0]:
                kept.append(row)
    return kept


def _rows(theorem, variant_name: str, entry, options: SolverOptions) -> list[dict]:
    """The entry's counterexample, and that of each goal conjunct the
    manifest asks the mutant to refute alone where the whole goal's does not
    refute it (the runner tries the whole goal's first), each with the
    obligation it refutes."""
    from proofs.runner import conjuncts_refuted_alone, refuted_alone_verdict

    rows = []
    whole = entry.counterexample or {}
    refuted = _refuted_obligation(theorem, variant_name, whole)
    if refuted is not None:
        rows.append({"obligation": refuted, "inputs": whole})
    for conjunct in conjuncts_refuted_alone(theorem.name, variant_name):
        if _refuted_obligation(theorem, variant_name, whole, conjunct) is not None:
            continue
        with in_effect(variant_name) as variant:
            alone, _, _ = refuted_alone_verdict(theorem, conjunct, variant, options, z3.Context(), None)
        values = alone.counterexample or {}
        obligation = _refuted_obligation(theorem, variant_name, values, conjunct)
        if alone.verdict == REFUTED and obligation is not None:
            rows.append({"obligation": obligation, "inputs": values})
    return rows


def _refuted_obligation(theorem, variant_name: str, values: dict, conjunct: str | None = None) -> str | None:
    """The first obligation (the trace search first, as the runner decides
    them) whose inputs `values` are and whose goal, or its `conjunct` alone,
    they violate on the concrete model."""
    if not values:
        return None
    candidates = [*([theorem.trace_search] if theorem.trace_search else []), *theorem.obligations]
    with in_effect(variant_name) as variant:
        for obligation in candidates:
            if {v.name for v in obligation.variables} != set(values):
                continue
            formula = obligation.formula if conjunct is None else conjunct_alone(obligation.formula, conjunct)
            try:
                violated, _ = replay(formula, variant, values)
            except UnknownConjunct:
                continue
            if violated:
                return obligation.name
    return None


def main(argv: list[str] | None = None) -> int:
    return RECORDED.main(argv, "python3 -m proofs.counterexamples", __doc__.split("\n\n")[0], found)


if __name__ == "__main__":
    sys.exit(main())
