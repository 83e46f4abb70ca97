"""Running the catalogue: one entry per theorem and variant, compared with
the checked-in manifest (proofs/manifest.toml)."""

from __future__ import annotations

import contextlib
import contextvars
import copy
import functools
import hashlib
import sys
import time
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

import z3

from models.errors import GridproofError, did_you_mean
from models.variants import VARIANTS
from proofs.catalog import CATALOGUE, Obligation, Theorem
from proofs.engine.claims import UnknownConjunct, conjunct_alone, replay
from proofs.engine.enumerated import claim_text, decide_enumeration
from proofs.engine.solver import (
    DEFAULT_RLIMIT,
    ERROR,
    PROVED,
    REFUTED,
    UNKNOWN,
    VACUOUS,
    Kind,
    Outcome,
    Query,
    SolverOptions,
    decide,
    query_text,
)
from proofs.faults.handwritten import MUTANTS, in_effect, resolve
from proofs.faults.patch import PatchError
from proofs.records import edges, inputs_read, needed
from proofs.records.domains import DOMAINS, smaller_than_recorded
from proofs.records.recorded_inputs import recorded_inputs
from proofs.runtime import interrupts

MANIFEST = Path(__file__).parents[1] / "manifest.toml"
VERDICTS = (PROVED, REFUTED, UNKNOWN, VACUOUS, ERROR)


class ManifestError(GridproofError):
    pass


class NothingSelected(GridproofError):
    """A selection of theorem, variant and tier that names no obligation."""


@dataclass
class Expectation:
    theorem: str
    tier: str
    expected: dict[str, str]  # variant or mutant:NAME -> verdict
    reason: str = ""
    rlimit: int = DEFAULT_RLIMIT  # the budget of record per obligation
    slow: frozenset[str] = frozenset()  # variants in the slow tier whatever the theorem's tier
    # mutant:NAME -> the named goal conjuncts it must refute, each alone
    refuted_alone: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # named goal conjuncts no mutant of this theorem refutes alone -> why
    unrefuted_conjuncts: dict[str, str] = field(default_factory=dict)

    def tier_of(self, variant: str) -> str:
        return "slow" if variant in self.slow else self.tier


def load_manifest(path: Path = MANIFEST) -> dict[str, Expectation]:
    """The manifest at `path`: each theorem's Expectation, its `kills` expected REFUTED as mutant:NAME. Raises
    ManifestError for a theorem missing or not in the catalogue, an unknown mutant or verdict, a theorem
    nothing refutes without an unkilled_reason, or a bad rlimit or slow list."""
    data = _parsed(path.read_text(encoding="utf-8"))
    result = {}
    for name, entry in data.get("theorems", {}).items():
        if name not in CATALOGUE:
            raise ManifestError(f"{path}: theorem {name!r} is not in the catalogue")
        expected = dict(entry.get("expected", {}))
        for mutant in entry.get("kills", []):
            if mutant not in MUTANTS:
                raise ManifestError(f"{path}: {name}: unknown mutant {mutant!r}")
            expected[f"mutant:{mutant}"] = REFUTED
        for variant, verdict in expected.items():
            resolve(variant)
            if verdict not in VERDICTS:
                raise ManifestError(f"{path}: {name}: {variant}: unknown verdict {verdict!r}")
        refutable = entry.get("kills") or REFUTED in expected.values()
        if not refutable and not entry.get("unkilled_reason"):
            raise ManifestError(f"{path}: {name}: no mutant or variant refutes it, and no unkilled_reason says why")
        rlimit = entry.get("rlimit", DEFAULT_RLIMIT)
        if isinstance(rlimit, bool) or not isinstance(rlimit, int) or rlimit <= 0:
            raise ManifestError(f"{path}: {name}: rlimit must be a positive integer, got {rlimit!r}")
        slow = entry.get("slow", [])
        if not isinstance(slow, list) or any(v not in expected for v in slow):
            raise ManifestError(f"{path}: {name}: slow must list variants the theorem expects, got {slow!r}")
        result[name] = Expectation(
            name,
            entry.get("tier", "ci"),
            expected,
            entry.get("unkilled_reason", ""),
            rlimit,
            frozenset(slow),
            _refuted_alone(path, name, entry),
            _unrefuted_conjuncts(path, name, entry),
        )
    missing = set(CATALOGUE) - set(result)
    if missing:
        raise ManifestError(f"{path}: no expectation for {', '.join(sorted(missing))}")
    return result


@functools.lru_cache(maxsize=4)
def _parsed_toml(text: str) -> dict:
    return tomllib.loads(text)


def _parsed(text: str) -> dict:
    """The manifest's TOML, parsed once per text: a process that reads the
    manifest again (the benchmark, the mutation run, the records' writers)
    parses it once."""
    return copy.deepcopy(_parsed_toml(text))


def _refuted_alone(path: Path, theorem: str, entry: dict) -> dict[str, tuple[str, ...]]:
    """`refuted_alone = { mutant = ["conjunct", ...] }`: goal conjuncts each
    mutant must refute alone, keyed as the expected verdicts are."""
    table = entry.get("refuted_alone", {})
    if not isinstance(table, dict):
        raise ManifestError(f"{path}: {theorem}: refuted_alone must be a table of mutants, got {table!r}")
    result = {}
    for mutant, names in table.items():
        if mutant not in entry.get("kills", []):
            raise ManifestError(f"{path}: {theorem}: refuted_alone names {mutant!r}, which kills does not list")
        if not isinstance(names, list) or not names or not all(isinstance(n, str) and n for n in names):
            raise ManifestError(f"{path}: {theorem}: refuted_alone.{mutant} must list conjunct names, got {names!r}")
        result[f"mutant:{mutant}"] = tuple(names)
    return result


def _unrefuted_conjuncts(path: Path, theorem: str, entry: dict) -> dict[str, str]:
    table = entry.get("unrefuted_conjuncts", {})
    if not isinstance(table, dict) or not all(isinstance(r, str) and r.strip() for r in table.values()):
        raise ManifestError(f"{path}: {theorem}: unrefuted_conjuncts must give a reason per conjunct, got {table!r}")
    return dict(table)


def conjuncts_refuted_alone(theorem: str, variant_name: str) -> tuple[str, ...]:
    """The goal conjuncts the checked-in manifest says `variant_name` (a hand
    mutant) refutes, each alone; () for anything else."""
    return _checked_in_refuted_alone().get(theorem, {}).get(variant_name, ())


@functools.cache
def _checked_in_refuted_alone() -> dict[str, dict[str, tuple[str, ...]]]:
    """Every theorem's refuted_alone table, as the manifest was read first in
    this process: validating the whole manifest per refuted entry cost 0.1 s
    over --tier all."""
    return {name: expectation.refuted_alone for name, expectation in load_manifest().items()}


_NOT_IN_JSON = ("queries", "choices_read", "witnesses")


@dataclass
class Entry:
    theorem: str
    variant: str
    verdict: str
    expected: str
    rlimit: int
    seconds: float
    hypotheses_used: list[str] = field(default_factory=list)
    # Of those, the ones kept without a deletion check that decided: while it
    # is not empty, the set is sufficient but not shown minimal.
    hypotheses_unconfirmed: list[str] = field(default_factory=list)
    hypotheses: list[str] = field(default_factory=list)
    counterexample: dict | None = None
    reason: str = ""
    ablations: dict[str, str] = field(default_factory=dict)
    # A mutant's verdict on each goal conjunct the manifest says it refutes
    # alone (refuted_alone): each must be REFUTED.
    conjuncts_alone: dict[str, str] = field(default_factory=dict)
    reproduce: str = ""
    reused_queries: int = 0  # answered from an identical query of an earlier obligation (solver.shared_queries)
    cached: bool = False  # taken from the proof cache (proofs/run/cache.py), not decided in this run
    # The variant decided earlier in the run whose entry this one takes:
    # every obligation's claim reads to the very same query (claim_key).
    same_claim_as: str = ""
    subject: str = ""
    statement: str = ""
    tier: str = "ci"
    source: str = ""  # path:line of the theorem's formula, for locating results
    # An enumerated entry's domain, cases and cases that reached the property (proofs/engine/enumerated.py).
    enumeration: dict = field(default_factory=dict)
    # Per obligation, the queries its verdict rests on (proofs/report/smt2.py); not in the JSON.
    queries: dict[str, list[Query]] = field(default_factory=dict, repr=False)
    # The variant's fields its decision read (ChoicesRead); None when not
    # decided in this process. Not in the JSON.
    choices_read: frozenset[str] | None = field(default=None, repr=False)
    # The inputs at which each REFUTED ablation and goal conjunct alone was
    # refuted ({"ablations": {hypothesis: inputs}, "conjuncts_alone": {name:
    # inputs}}), for the proof cache to replay them. Not in the JSON.
    witnesses: dict[str, dict[str, dict]] = field(default_factory=dict, repr=False)

    @property
    def ok(self) -> bool:
        return (
            self.verdict == self.expected
            and self.verdict in (PROVED, REFUTED)
            and all(v == REFUTED for v in self.ablations.values())
            and all(v == REFUTED for v in self.conjuncts_alone.values())
        )

    def to_json(self) -> dict:
        # Field by field: asdict would deep-copy every query's text only to drop it.
        data = {f.name: copy.deepcopy(getattr(self, f.name)) for f in fields(self) if f.name not in _NOT_IN_JSON}
        data["ok"] = self.ok
        return data


def run_theorem(
    theorem: Theorem, variant_name: str, expected: str, options: SolverOptions | None = None, tier: str = "ci"
) -> Entry:
    """One entry: every obligation of `theorem` for one variant, decided
    under the run's `options` (budget and seed; the defaults when None), in
    a Z3 context of the entry's own (solver.decide says why). A hand
    mutant whose patch no longer applies to the model is an ERROR entry."""
    run = options or SolverOptions()
    with contextlib.ExitStack() as stack:
        try:
            variant = stack.enter_context(in_effect(variant_name))
        except PatchError as error:
            return _stale_mutant_entry(theorem, variant_name, expected, run, tier, error)
        choices = ChoicesRead(variant)
        if theorem.enumeration is not None:
            entry = _run_enumerated(theorem, choices, variant_name, expected, run, tier)
        else:
            entry = _run_theorem(theorem, choices, variant_name, expected, run, tier, z3.Context())
        entry.choices_read = frozenset(choices.read)
        return entry


def _stale_mutant_entry(
    theorem: Theorem, variant_name: str, expected: str, run: SolverOptions, tier: str, error: PatchError
) -> Entry:
    """The ERROR entry of a hand mutant whose patch's text is no longer where
    it was in the model: the model changed under it."""
    return Entry(
        theorem=theorem.name,
        variant=variant_name,
        verdict=ERROR,
        expected=expected,
        rlimit=0,
        seconds=0.0,
        reason=(
            f"the hand mutant's patch no longer applies to the model ({error}); the model changed under it: "
            "update it in proofs/faults/handwritten.py"
        ),
        reproduce=reproduce_command(theorem.name, [variant_name], run.rlimit, run.seed),
        subject=theorem.subject,
        statement=theorem.statement,
        tier=tier,
        source=theorem_location(theorem),
    )


def _run_enumerated(
    theorem: Theorem, variant, variant_name: str, expected: str, run: SolverOptions, tier: str
) -> Entry:
    decision = decide_enumeration(theorem.enumeration, variant)
    if decision.verdict == PROVED == expected and not variant_name.startswith("mutant:"):
        # Over the domain recorded (proofs/engine/enumerated.py), as a Z3 proof over its recorded edges: only where a
        # proof is expected, which is where sizes are recorded; an unexpected proof fails as a mismatch already.
        smaller = smaller_than_recorded(theorem.name, variant_name, decision)
        if smaller is not None:
            decision.verdict, decision.reason = smaller
    return Entry(
        theorem=theorem.name,
        variant=variant_name,
        verdict=decision.verdict,
        expected=expected,
        rlimit=0,
        seconds=round(decision.seconds, 3),
        counterexample=decision.counterexample,
        reason=decision.reason,
        reproduce=reproduce_command(theorem.name, [variant_name], run.rlimit, run.seed),
        subject=theorem.subject,
        statement=theorem.statement,
        tier=tier,
        source=theorem_location(theorem),
        enumeration={
            "domain": theorem.enumeration.domain,
            "cases": decision.cases,
            "exercised": decision.exercised,
            "checks": dict(decision.checks),
        },
    )


class ChoicesRead:
    """A variant that notes which of its fields (its semantic choices, its
    name too) are read, by attribute or through its repr or equality. The
    decision of an entry is a deterministic function of the theorem, the
    options and what it reads of the variant: a variant that agrees on every
    field read would be decided by the very same steps, to the same entry."""

    def __init__(self, variant) -> None:
        self._variant = variant
        self.read: set[str] = set()

    def __getattr__(self, name: str):
        self.read.add(name)
        return getattr(self._variant, name)

    def _everything(self):
        self.read.update(f.name for f in fields(self._variant))
        return self._variant

    def __repr__(self) -> str:
        return repr(self._everything())

    def __eq__(self, other) -> bool:
        return self._everything() == (other._everything() if isinstance(other, ChoicesRead) else other)

    def __hash__(self) -> int:
        return hash(self._everything())


def same_choices(read: frozenset[str], decided: str, other: str) -> bool:
    """Whether the variant `other` agrees with `decided` on every field in
    `read` (ChoicesRead.read of `decided`'s entry). Mutants are not compared:
    their patches change the model, not the fields."""
    if decided.startswith("mutant:") or other.startswith("mutant:"):
        return False
    a, b = resolve(decided), resolve(other)
    choices = {f.name for f in fields(a)}
    # Anything read that is not a field (a probe for a method, say): not compared, so not alike.
    return read <= choices and all(getattr(a, name) == getattr(b, name) for name in read)


def _run_theorem(
    theorem: Theorem, variant, variant_name: str, expected: str, run: SolverOptions, tier: str, context: z3.Context
) -> Entry:
    """The entry of a theorem decided on Z3: its obligations (refute-first where a refutation is expected),
    the proof held to what was recorded, the trace search's word, then the ablations of a proof or the
    conjuncts of a refutation, each refuted alone."""
    started = time.perf_counter()
    recorded = recorded_inputs(theorem.name, variant_name)
    refuting = replace(run, refute_first=expected == REFUTED)
    found, outcomes = _decide_obligations(theorem, variant, variant_name, refuting, context, recorded)
    verdict, reason, counterexample, used, unconfirmed = _combine(theorem, outcomes)
    if verdict == PROVED == expected and not variant_name.startswith("mutant:"):
        # Only where a proof is expected, which is where edges are recorded: a
        # proof expected to be a refutation fails as a mismatch already.
        verdict, reason = _proof_as_recorded(theorem, variant, variant_name, outcomes) or (verdict, reason)
    decided = _Decided(
        verdict,
        reason,
        counterexample,
        found,
        spent=sum(out.rlimit for _, out in outcomes) + (found.rlimit if found is not None else 0),
        reused=sum(out.reused for _, out in outcomes) + (found.reused if found is not None else 0),
    )
    _settle_by_trace_search(decided, theorem.trace_search, outcomes, variant, run, context, recorded)
    witnesses: dict[str, dict[str, dict]] = {"ablations": {}, "conjuncts_alone": {}}
    ablations = {}
    if decided.verdict == PROVED:
        ablations = _ablations(theorem, variant, run, context, recorded, decided, witnesses["ablations"])
    conjuncts_alone = {}
    if decided.verdict == REFUTED:
        conjuncts_alone = _conjuncts_alone(
            theorem, variant_name, variant, run, context, recorded, outcomes, decided, witnesses["conjuncts_alone"]
        )
    found = decided.found
    return Entry(
        theorem=theorem.name,
        variant=variant_name,
        verdict=decided.verdict,
        expected=expected,
        rlimit=decided.spent,
        seconds=round(time.perf_counter() - started, 3),
        hypotheses_used=used,
        hypotheses_unconfirmed=unconfirmed,
        hypotheses=_hypothesis_names(variant, outcomes or [(theorem.trace_search, found)], context),
        counterexample=decided.counterexample,
        reason=decided.reason,
        ablations=ablations,
        conjuncts_alone=conjuncts_alone,
        reused_queries=decided.reused,
        reproduce=reproduce_command(theorem.name, [variant_name], run.rlimit, run.seed),
        subject=theorem.subject,
        statement=theorem.statement,
        tier=tier,
        source=formula_location(theorem.obligations[0].formula),
        queries=_queries(outcomes, found if decided.verdict == REFUTED and found is not None else None, theorem),
        witnesses=witnesses,
    )


def _proof_as_recorded(
    theorem: Theorem, variant, variant_name: str, outcomes: list[tuple[Obligation, Outcome]]
) -> tuple[str, str] | None:
    """The verdict and reason of a proof that states less than recorded, None for one that does not: proved
    over the domain recorded (proofs/records/edges.py), not a narrower one; failing, as recorded, at a
    witness that it needs each hypothesis (proofs/records/needed.py): a goal weakened to hold there states
    less; and reading every input it read when recorded (proofs/records/inputs_read.py)."""
    return (
        edges.excluded(theorem, variant_name, variant)
        or needed.weakened(theorem, variant_name, variant)
        or inputs_read.fewer_than_recorded(theorem.name, variant_name, outcomes)
    )


@dataclass
class _Decided:
    """A theorem's verdict for one variant as the phases of `_run_theorem` settle it, and what they cost."""

    verdict: str
    reason: str
    counterexample: dict | None
    found: Outcome | None  # the fresh-request trace search's outcome, where it ran
    spent: int  # rlimit
    reused: int  # queries answered from an identical one posed before


def _decide_obligations(
    theorem: Theorem,
    variant,
    variant_name: str,
    refuting: SolverOptions,
    context: z3.Context,
    recorded: dict[str, tuple],
) -> tuple[Outcome | None, list[tuple[Obligation, Outcome]]]:
    """(the trace search's outcome, None where it was not run; each obligation decided, with its outcome).
    Refute-first, the first refuted obligation ends the run: after the cheap refuters over every
    obligation, the ones the manifest names conjuncts of first."""
    search = theorem.trace_search
    found = None
    if refuting.refute_first and search is not None:
        # A fresh request's replayed trace refutes the theorem whatever its
        # step lemma says: for an expected refutation it is searched first,
        # and the step's obligations only where it finds none.
        found = decide_obligation(search, variant, refuting, context, recorded)
    outcomes = []
    obligations = theorem.obligations
    if refuting.refute_first and search is None and len(obligations) > 1:
        obligations = _stating_first(obligations, variant, conjuncts_refuted_alone(theorem.name, variant_name))
        for probing in _cheap_passes(refuting):
            refuted = _first_refuted(obligations, variant, probing, context, recorded)
            if refuted is not None:
                outcomes.append(refuted)
                break
        refuting = replace(refuting, probed=True)
    for o in obligations if not outcomes and (found is None or found.verdict != REFUTED) else ():
        outcomes.append((o, decide_obligation(o, variant, refuting, context, recorded)))
        if refuting.refute_first and outcomes[-1][1].verdict == REFUTED:
            break  # one refuted obligation refutes the theorem (or, with a trace search, starts it)
    return found, outcomes


def _settle_by_trace_search(
    decided: _Decided,
    search: Obligation | None,
    outcomes: list[tuple[Obligation, Outcome]],
    variant,
    run: SolverOptions,
    context: z3.Context,
    recorded: dict[str, tuple],
) -> None:
    """The trace search's word on `decided`: its refutation (or error) stands; a theorem left UNKNOWN by a
    refuted step lemma is refuted where the search (run now, if it was not) finds a fresh request's trace."""
    found = decided.found
    if found is not None and found.verdict in (REFUTED, ERROR):
        decided.verdict, decided.counterexample = found.verdict, found.counterexample
        decided.reason = (
            "a fresh request's trace violates it" if found.verdict == REFUTED else f"{search.name}: {found.reason}"
        )
    elif decided.verdict == UNKNOWN and search is not None and any(o.verdict == REFUTED for _, o in outcomes):
        if found is None:
            found = decided.found = decide_obligation(
                search, variant, replace(run, refute_first=True), context, recorded
            )
            decided.spent += found.rlimit
            decided.reused += found.reused
        if found.verdict == REFUTED:
            decided.verdict, decided.reason = REFUTED, "a fresh request's trace violates it"
            decided.counterexample = found.counterexample
        else:
            decided.reason = (
                "the step lemma fails at some state, and no fresh-request trace of the unrolled steps was found "
                f"({found.verdict}: {found.reason})"
            )


def _ablations(
    theorem: Theorem,
    variant,
    run: SolverOptions,
    context: z3.Context,
    recorded: dict[str, tuple],
    decided: _Decided,
    witnesses: dict[str, dict],
) -> dict[str, str]:
    """Each hypothesis the theorem ablates, dropped from a proof: REFUTED where an obligation then fails (its
    counterexample in `witnesses`), else the first obligation's verdict."""
    ablations = {}
    for hypothesis in theorem.ablate:
        ablation = replace(run, refute_first=True, drop=frozenset([hypothesis]))
        dropped = [decide_obligation(o, variant, ablation, context, recorded) for o in theorem.obligations]
        refuting = next((d for d in dropped if d.verdict == REFUTED), None)
        ablations[hypothesis] = REFUTED if refuting is not None else dropped[0].verdict
        if refuting is not None and refuting.counterexample:
            witnesses[hypothesis] = dict(refuting.counterexample)
        decided.reused += sum(d.reused for d in dropped)
    return ablations


def _conjuncts_alone(
    theorem: Theorem,
    variant_name: str,
    variant,
    run: SolverOptions,
    context: z3.Context,
    recorded: dict[str, tuple],
    outcomes: list[tuple[Obligation, Outcome]],
    decided: _Decided,
    witnesses: dict[str, dict],
) -> dict[str, str]:
    """The verdict of each conjunct the manifest says a refuting mutant refutes alone (its counterexample in
    `witnesses`); one that is not refuted says why in `decided.reason`."""
    conjuncts_alone = {}
    refuted = next(((o, out) for o, out in outcomes if out.verdict == REFUTED), None)
    for name in conjuncts_refuted_alone(theorem.name, variant_name):
        alone, cost, shared = refuted_alone_verdict(theorem, name, variant, run, context, refuted, recorded)
        conjuncts_alone[name] = alone.verdict
        if alone.verdict == REFUTED and alone.counterexample:
            witnesses[name] = dict(alone.counterexample)
        decided.spent += cost
        decided.reused += shared
        if alone.verdict != REFUTED:
            decided.reason = "; ".join(r for r in (decided.reason, f"the conjunct {name!r} alone: {alone.reason}") if r)
    return conjuncts_alone


def refuted_alone_verdict(
    theorem: Theorem,
    name: str,
    variant,
    run: SolverOptions,
    context: z3.Context,
    refuted: tuple | None,
    recorded: dict[str, tuple] | None = None,
) -> tuple[Outcome, int, int]:
    """The theorem with its goal cut to the conjunct `name`, on each
    obligation that has it: REFUTED (replayed, as every refutation) by the
    first that refutes it. `refuted`, the (obligation, outcome) that refuted
    the whole goal, goes first: its counterexample, replayed on the conjunct
    alone, often refutes it with no query at all. A conjunct no obligation
    has is ERROR: the manifest names what the catalogue no longer states.
    With the rlimit and reused queries it cost."""
    order = sorted(theorem.obligations, key=lambda o: refuted is None or o is not refuted[0])
    alone = [replace(o, formula=conjunct_alone(o.formula, name)) for o in order]
    if refuted is not None and refuted[1].counterexample is not None:
        values = refuted[1].counterexample
        try:
            violated, _ = replay(alone[0].formula, variant, values)
        except UnknownConjunct:
            violated = False
        if violated:
            return Outcome(REFUTED, counterexample=values, reason="the whole goal's counterexample"), 0, 0
    refuting = replace(run, refute_first=True)
    verdicts, spent, reused = [], 0, 0
    # As a refutation of the whole: the cheap refuters on every obligation first, then each decided in turn.
    passes = [*_cheap_passes(refuting), replace(refuting, probed=True)] if len(alone) > 1 else [refuting]
    for options in passes:
        for obligation in alone:
            outcome = decide_obligation(obligation, variant, options, context, recorded)
            spent, reused = spent + outcome.rlimit, reused + outcome.reused
            if outcome.verdict == REFUTED:
                return outcome, spent, reused
            if not options.probe_only:
                verdicts.append(outcome)
    stated = [o for o in verdicts if not o.reason.startswith(UnknownConjunct.__name__)]
    return (stated or verdicts)[0], spent, reused


def _cheap_passes(refuting: SolverOptions) -> tuple[SolverOptions, ...]:
    """The cheap refuters of a refutation of several obligations, pass by
    pass, each pass over every obligation before the next: the recorded
    inputs alone (a recorded counterexample costs one reading wherever its
    obligation is in the order), the probe and the ladder's first rung,
    then its higher rungs. Nearly every
    counterexample of --tier all is found in the first rung; an obligation
    the fault leaves alone climbs every rung in vain (0.3 to 0.4 s), so it
    is not climbed before the first rung of the others."""
    return (
        replace(refuting, probe_only=True, recorded_only=True),
        replace(refuting, probe_only=True, rungs=(0, 1)),
        replace(refuting, probe_only=True, rungs=(1, None)),
    )


def _stating_first(obligations, variant, conjuncts: tuple[str, ...]) -> tuple:
    """The obligations whose goals name one of `conjuncts`, the ones a hand
    mutant must refute alone, first: the fault is there, and the others
    would climb the ladder in vain before it. Names are read off the claim
    on ints, every input 1 (a claim that cannot be read so keeps its place)."""
    if not conjuncts:
        return obligations

    def names(obligation) -> set[str]:
        ones = {v.name: True if v.kind is Kind.BOOL else 1 for v in obligation.variables}
        try:
            return set(obligation.formula(variant, ones).conjuncts)
        except Exception:  # read symbolically, the obligation says what is wrong with it
            interrupts.raise_if_requested()  # not an interrupt that ctypes wrapped
            return set()

    return tuple(sorted(obligations, key=lambda o: not names(o) & set(conjuncts)))


def _first_refuted(
    obligations, variant, options: SolverOptions, context: z3.Context, recorded: dict[str, tuple] | None = None
) -> tuple | None:
    """(obligation, outcome) of the first obligation `options` refutes, or None."""
    for o in obligations:
        outcome = decide_obligation(o, variant, options, context, recorded)
        if outcome.verdict == REFUTED:
            return o, outcome
    return None


def _queries(outcomes: list, trace: Outcome | None, theorem: Theorem) -> dict[str, list[Query]]:
    """Every obligation's queries, and the trace search's when it refuted."""
    queries = {o.name: out.queries for o, out in outcomes if out.queries}
    if trace is not None and trace.queries:
        queries[theorem.trace_search.name] = trace.queries
    return queries


def reproduce_command(theorem: str, variants: list[str], rlimit: int, seed: int | None) -> str:
    """The command that decides `variants` of `theorem` in one task, in
    manifest order, as the catalogue does: an entry's result is reproduced by
    deciding it after the variants its task decided before it."""
    command = f"gridproof prove --theorem {theorem} --variant {','.join(variants)} --rlimit {rlimit}"
    return command + (f" --seed {seed}" if seed is not None else "")


# Within claim_texts_kept: (theorem, variant) -> its claim texts, read once.
_texts_kept: contextvars.ContextVar[dict | None] = contextvars.ContextVar("gridproof_claim_texts", default=None)


@contextlib.contextmanager
def claim_texts_kept() -> Iterator[None]:
    """Within the block, each theorem's claim texts under a variant are read
    once: a task's proof cache key and its twins' keys both read them. Only
    around code that patches nothing while inside (one catalogue task)."""
    token = _texts_kept.set({})
    try:
        yield
    finally:
        _texts_kept.reset(token)


def claim_texts(theorem: Theorem, variant_name: str) -> list[str]:
    """Every obligation's claim, the trace search's too, as one query's text
    each (solver.query_text), read under `variant_name`: a mutant's with its
    patch applied. What a decision of the entry is a function of."""
    kept = _texts_kept.get()
    if kept is None:
        return _claim_texts(theorem, variant_name)
    if (theorem.name, variant_name) not in kept:
        kept[theorem.name, variant_name] = _claim_texts(theorem, variant_name)
    return list(kept[theorem.name, variant_name])


def _claim_texts(theorem: Theorem, variant_name: str) -> list[str]:
    obligations = [*theorem.obligations, *([theorem.trace_search] if theorem.trace_search else [])]
    with in_effect(variant_name) as variant:
        if theorem.enumeration is not None:
            return [claim_text(theorem.name, theorem.enumeration, variant_name)]
        return [query_text(o.formula, o.variables, variant) for o in obligations]


def claim_key(theorem: Theorem, variant_name: str, expected: str, rlimit: int, seed: int | None) -> str:
    """The claims' texts and how they are decided. Two variants with the same
    key pose the same queries in the same order, each in a fresh context,
    and so get the same entry."""
    digest = hashlib.sha256(repr((expected, rlimit, seed)).encode())
    for text in claim_texts(theorem, variant_name):
        digest.update(text.encode())
    return digest.hexdigest()


def decide_obligation(
    obligation: Obligation,
    variant,
    run: SolverOptions,
    context: z3.Context | None = None,
    recorded: dict[str, tuple] | None = None,
) -> Outcome:
    """`solver.decide` on an obligation under the run's options (budget,
    seed, refute-first, hypotheses dropped), decided as its theorem says
    (Obligation.options). `recorded`: the theorem's recorded inputs by
    obligation (proofs/records/recorded_inputs.py), offered to the solver as
    candidate models."""
    options = obligation.options(run)
    if recorded:
        options = replace(options, recorded_inputs=recorded.get(obligation.name, ()))
    return decide(obligation.formula, obligation.variables, variant, options, context)


def formula_location(formula) -> str:
    """repo-relative path:line where a theorem's formula is defined."""
    code = formula.__code__
    path = Path(code.co_filename).resolve()
    try:
        path = path.relative_to(Path(__file__).resolve().parents[2])
    except ValueError:
        pass
    return f"{path.as_posix()}:{code.co_firstlineno}"


def theorem_location(theorem: Theorem) -> str:
    """Where the theorem's first formula, or its enumerated check, is defined."""
    if theorem.enumeration is not None:
        return formula_location(theorem.enumeration.check)
    return formula_location(theorem.obligations[0].formula)


def model_sources_hash() -> str:
    """sha256 over the model, catalogue and solver sources, the manifest, the
    recorded domain edges, needed hypotheses and enumerated domain sizes: what a verdict rests on."""
    root = Path(__file__).resolve().parents[2]
    digest = hashlib.sha256()
    sources = [*root.glob("models/**/*.py"), *root.glob("proofs/catalog/*.py"), root / "proofs/engine/solver.py"]
    files = sorted([*sources, MANIFEST, edges.RECORD, needed.RECORD, DOMAINS.path])
    for path in files:
        digest.update(path.relative_to(root).as_posix().encode())
        # A record not written yet (its command is writing it) counts as empty.
        digest.update(path.read_bytes() if path.exists() else b"")
    return digest.hexdigest()


def _combine(theorem: Theorem, outcomes: list) -> tuple[str, str, dict | None, list[str], list[str]]:
    """Verdict, reason, counterexample, hypotheses used and, of those, the unconfirmed."""
    for bad in (ERROR, VACUOUS):
        for obligation, out in outcomes:
            if out.verdict == bad:
                return bad, f"{obligation.name}: {out.reason}", out.counterexample, [], []
    if all(out.verdict == PROVED for _, out in outcomes):
        many = len(outcomes) > 1

        def named(attribute: str) -> list[str]:
            return sorted({(f"{o.name}: {h}" if many else h) for o, out in outcomes for h in getattr(out, attribute)})

        return PROVED, "", None, named("hypotheses_used"), named("hypotheses_unconfirmed")
    for _obligation, out in outcomes:
        if out.verdict == REFUTED and theorem.trace_search is None:
            return REFUTED, out.reason, out.counterexample, [], []
    unknown = [f"{o.name}: {out.reason}" for o, out in outcomes if out.verdict != PROVED]
    return UNKNOWN, "; ".join(unknown), None, [], []


def _hypothesis_names(variant, outcomes: list[tuple[Obligation, Outcome]], context: z3.Context) -> list[str]:
    """Every decided obligation's hypotheses in order: as its decision read
    them, or, when it built no symbolic claim (a probe refuted it first),
    read again; none of one whose reading raised (ERROR)."""
    from models import arith
    from proofs.engine.solver import symbolic_inputs

    names: list[str] = []
    for obligation, outcome in outcomes:
        read = outcome.hypothesis_names
        if read is None and outcome.verdict == ERROR:
            continue
        if read is None and outcome.verdict == REFUTED:
            read = list(obligation.formula(variant, dict(outcome.counterexample)).hypotheses)
        if read is None:
            with arith.symbolic_context():
                read = list(obligation.formula(variant, symbolic_inputs(obligation.variables, context)).hypotheses)
        names += [n for n in read if n not in names]
    return names


@dataclass(frozen=True)
class Run:
    theorem: Theorem
    variant: str
    expected: str
    tier: str
    rlimit: int


def plan_runs(manifest: dict[str, Expectation], theorem: str | None, variant: str | None, tier: str) -> list[Run]:
    """The selected obligations in manifest order; `variant` may name several,
    comma-separated."""
    if theorem is not None and theorem not in CATALOGUE:
        raise ManifestError(
            f"unknown theorem {theorem!r}{did_you_mean(theorem, CATALOGUE)} (known: {', '.join(CATALOGUE)})"
        )
    wanted = None if variant is None else variant.split(",")
    for name in wanted or ():
        resolve(name)
    runs = []
    for name, expectation in manifest.items():
        if theorem is not None and name != theorem:
            continue
        for v, verdict in expectation.expected.items():
            run_tier = expectation.tier_of(v)
            if theorem is None and tier != "all" and run_tier != tier:
                continue
            if wanted is None or v in wanted:
                runs.append(Run(CATALOGUE[name], v, verdict, run_tier, expectation.rlimit))
    if not runs:
        chosen = [f"theorem {theorem}" if theorem else f"tier {tier}", f"variant {variant}" if variant else ""]
        raise NothingSelected(f"no obligation selected ({' and '.join(c for c in chosen if c)} in the manifest)")
    return runs


def progress(message: str) -> None:
    """One status line: rewritten in place on a terminal, a line of its own
    in a log (CI), where the empty message that clears it prints nothing.
    Also a point where the run stops if it was interrupted (proofs/runtime/interrupts.py)."""
    interrupts.raise_if_requested()
    if sys.stderr.isatty():
        print(f"\r\033[K{message}", end="", file=sys.stderr, flush=True)
    elif message:
        print(message, file=sys.stderr, flush=True)


__all__ = ["Entry", "Outcome", "VARIANTS", "load_manifest", "plan_runs", "run_theorem"]
