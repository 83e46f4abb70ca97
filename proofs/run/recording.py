"""`gridproof record`: the records `gridproof prove` holds entries to
(proofs/recorded/*.json), found afresh by running the catalogue.

Each record module reads its record and judges an entry against it: the
domain's edges (proofs/records/edges.py), the witnesses that each hypothesis is
needed (proofs/records/needed.py), the inputs each proof reads
(proofs/records/inputs_read.py), the counterexamples of the refutations expected
(proofs/records/counterexamples.py) and the enumerated domains' sizes
(proofs/engine/enumerated.py). Finding what a record holds means running the
catalogue, so the finders that run it live here, above the runner: no record
module imports the runner or the catalogue. A record is rewritten for the
theorems named (all by default), every other theorem's entries kept; the
change shows in the record's diff."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace

import z3

from proofs.catalog import CATALOGUE
from proofs.engine import enumerated
from proofs.engine.claims import UnknownConjunct, conjunct_alone, replay
from proofs.engine.solver import PROVED, REFUTED, SolverOptions, encode
from proofs.faults.handwritten import in_effect
from proofs.records import counterexamples, domains, edges, inputs_read, needed
from proofs.records.edges import small_inputs
from proofs.records.record import Record, RecordError, proved_variants, refuted_variants
from proofs.records.recorded_inputs import withheld
from proofs.run.runner import (
    conjuncts_refuted_alone,
    decide_obligation,
    load_manifest,
    refuted_alone_verdict,
    run_theorem,
)

Say = Callable[[str], None]  # where each item found is told, one line each

WITNESS_RLIMIT = 5_000_000  # per witness; a hypothesis without a witness found within it is not recorded
REPLAY_RETRIES = 8  # models excluded after one the concrete model refutes


def record(records: list[str], theorems: list[str] | None, say: Say) -> None:
    """Rewrites each of `records` (names of RECORDS) for `theorems` (all when
    None), in the order of RECORDS; RecordError when one cannot be found."""
    for name in RECORDS:
        if name in records:
            written, find = RECORDS[name]
            written.write(find(theorems, say))


def proved_obligations() -> Iterator[tuple]:
    """(theorem name, obligation, variant name, expectation) for every
    obligation of every theorem decided by Z3 and every variant (no hand
    mutant) the manifest expects to prove it: what each record of a proof covers."""
    manifest = load_manifest()
    for name, theorem in CATALOGUE.items():
        if theorem.enumeration is not None or name not in manifest:
            continue
        for obligation in theorem.obligations:
            for variant_name in proved_variants(manifest[name]):
                yield name, obligation, variant_name, manifest[name]


def per_obligation(written: Record, find: Callable) -> Callable[[list[str] | None, Say], dict]:
    """The rebuild of a record kept per proved obligation: for every
    obligation and every variant the manifest expects to prove it (of
    `theorems`, all when None), `find(obligation, variant, expectation)`;
    every other theorem's entries kept."""

    def rebuilt(theorems: list[str] | None, say: Say) -> dict:
        try:
            current = dict(written.theorems())
        except RecordError:
            current = {}
        found: dict = {}
        for name, obligation, variant_name, expectation in proved_obligations():
            if theorems is not None and name not in theorems:
                continue
            with in_effect(variant_name) as variant:
                items = find(obligation, variant, expectation)
            found.setdefault(name, {}).setdefault(obligation.name, {})[variant_name] = items
            say(f"{name} / {obligation.name} / {variant_name}: {len(items)} {written.what}")
        kept = {name: current[name] for name in current if theorems is not None and name not in theorems}
        return {name: found.get(name, kept.get(name)) for name in CATALOGUE if name in found or name in kept}

    return rebuilt


# --- the needed hypotheses' witnesses ----------------------------------------


def witnesses_of(obligation, variant, rlimit: int) -> list[dict]:
    """A replayed witness for each hypothesis the obligation's proof used:
    the obligation refuted with every other hypothesis the proof used and
    not that one. A hypothesis whose witness is not found within
    WITNESS_RLIMIT (one a deletion check left undecided: by the cheap
    refuters), or whose found one fails to make it false, is left out."""
    proof = decide_obligation(obligation, variant, SolverOptions(rlimit=rlimit), z3.Context())
    if proof.verdict != PROVED:
        raise RecordError(f"{obligation.name}: {proof.verdict} ({proof.reason}); only a proof is recorded")
    used = set(proof.hypotheses_used)
    stated = proof.hypothesis_names or []
    witnesses = []
    for name in sorted(used):
        drop = frozenset(h for h in stated if h not in used or h == name)
        # One a deletion check left undecided is sought by the cheap refuters
        # alone: over --tier all, a full query for those found none in time.
        search = SolverOptions(
            rlimit=WITNESS_RLIMIT, refute_first=True, drop=drop, probe_only=name in proof.hypotheses_unconfirmed
        )
        out = decide_obligation(replace(obligation, case_split=()), variant, search, z3.Context())
        values = out.counterexample if out.verdict == REFUTED else None
        if values is None or not _witnesses(obligation, variant, name, values, drop):
            # The refuters' counterexample, where there is one, divides by
            # zero (a divisor's positivity, which pins no goal) or did not
            # replay: sought again where the model is defined.
            values = _defined_witness(obligation, variant, name, used)
        if values is not None:
            witnesses.append({"hypothesis": name, "inputs": values})
    return witnesses


def _witnesses(obligation, variant, name: str, values: dict, drop) -> bool:
    """On the concrete model, at `values`: `name` false, every hypothesis but those in `drop` true, the goal false."""
    try:
        without = not obligation.formula(variant, dict(values)).hypotheses[name]
    except ZeroDivisionError:
        return False  # a witness the concrete model cannot read is not recorded
    return without and replay(obligation.formula, variant, values, drop=drop)[0]


def _defined_witness(obligation, variant, name: str, used: set[str]) -> dict | None:
    """An input where `name` is false, the other hypotheses in `used` hold,
    the model divides by no zero and the goal fails, replayed; small inputs
    first (edges.small_inputs). A model the concrete reading refutes (a symbolic lcm's slack) is
    excluded and another sought, a few times."""
    encoding = encode(obligation.formula, obligation.variables, variant, z3.Context(), rlimit=WITNESS_RLIMIT)
    goal = encoding.claim.goal
    if not isinstance(goal, z3.ExprRef):
        return None
    stated = set(encoding.hypotheses)
    drop = frozenset(stated - (used - {name}))
    for bounded in (True, False):
        solver = encoding.solver(tracked=False, limit=WITNESS_RLIMIT // 4, only=used - {name}, lemmas=False)
        solver.add(z3.Not(encoding.hypotheses[name]), *encoding.context.obligations, z3.Not(goal))
        if bounded:
            solver.add(*small_inputs(encoding))
        for _ in range(REPLAY_RETRIES):
            if solver.check() != z3.sat:
                break
            model = solver.model()
            values = encoding.values(model)
            if _witnesses(obligation, variant, name, values, drop):
                return values
            solver.add(z3.Or(*(i != model.eval(i, model_completion=True) for i in encoding.ints)))
    return None


# --- the inputs each proof reads ---------------------------------------------


def inputs_read_by(obligation, variant, expectation) -> list[str]:
    """The inputs the obligation's proof reads; RecordError where it is not proved."""
    outcome = decide_obligation(obligation, variant, SolverOptions(rlimit=expectation.rlimit))
    if outcome.verdict != PROVED:
        raise RecordError(f"{obligation.name} / {variant.name}: {outcome.verdict}, not PROVED: {outcome.reason}")
    return outcome.inputs_read


# --- the counterexamples of the refutations expected -------------------------


def counterexamples_found(theorem_names: list[str] | None, say: Say) -> dict:
    """The record with `theorem_names` (all when None) decided afresh, every
    other theorem's kept."""
    try:
        current = dict(counterexamples.recorded())
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
            say(f"{name} / {variant_name}: {entry.verdict}, {len(found_rows)} recorded")
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


# --- the enumerated domains' sizes -------------------------------------------


def domains_found(theorems: list[str] | None, say: Say) -> dict:
    """The number of cases of each enumerated theorem's domain (of `theorems`,
    all when None) and how many times it makes each named check, for every
    variant the manifest expects to prove it; every other theorem's kept."""
    try:
        found = dict(domains.DOMAINS.theorems())
    except RecordError:
        found = {}
    manifest = load_manifest()
    for name, theorem in CATALOGUE.items():
        if theorem.enumeration is None or (theorems is not None and name not in theorems):
            continue
        found[name] = {}
        for variant_name in proved_variants(manifest[name]):
            with in_effect(variant_name) as variant:
                decision = enumerated.decide_enumeration(theorem.enumeration, variant)
            if decision.verdict != PROVED:
                raise RecordError(f"{name} / {variant_name}: {decision.verdict}, not PROVED: {decision.reason}")
            found[name][variant_name] = domains.domain_size(decision)
            made = sum(decision.checks.values())
            say(
                f"{name} / {variant_name}: {decision.cases} cases, {len(decision.checks)} named checks made "
                f"{made:,} times"
            )
    return {name: found[name] for name in CATALOGUE if name in found}


RECORDS: dict[str, tuple[Record, Callable[[list[str] | None, Say], dict]]] = {
    "edges": (
        edges.RECORDED,
        per_obligation(edges.RECORDED, lambda obligation, variant, _: edges.edges_of(obligation, variant)),
    ),
    "needed": (
        needed.RECORDED,
        per_obligation(
            needed.RECORDED,
            lambda obligation, variant, expectation: witnesses_of(obligation, variant, expectation.rlimit),
        ),
    ),
    "inputs-read": (inputs_read.RECORDED, per_obligation(inputs_read.RECORDED, inputs_read_by)),
    "counterexamples": (counterexamples.RECORDED, counterexamples_found),
    "domains": (domains.DOMAINS, domains_found),
}
