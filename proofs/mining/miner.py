"""Counterexample mining: distinct, minimal, explained ways a theorem fails.

Distinct means a different *class*: the truth values of a few view predicates
(views.py). After each counterexample its class is blocked, not its values, so
N counterexamples are N different failure modes (Apalache's --view).

The search walks a ladder of small concrete geometries: every size input
(`Var.size`) is fixed before encoding, so every division is by a constant and
the query is linear, where a symbolic divisor makes it nonlinear and slow.
Size vectors are taken in a fixed order: smallest total first, ties in
lexicographic order of the declared inputs. At each geometry one `z3.Optimize`
query, lexicographic over budgets, then token counts, then the other integers,
then the Booleans (false first), asks for the smallest
counterexample outside the classes found so far, until there is none. That
optimum is the smallest member of its class for that geometry, and the
geometry is the first that has the class, so each class's representative is
its minimum in the order above; it depends on no solver heuristic, so a rerun
finds the same counterexamples.

Every representative is then replayed on the concrete model (it must violate
the property there; one that does not is an encoding bug, reported as an
error, never as a result) and explained: for each input, whether it can vary
alone without the failure going away.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum

import z3

from models import arith
from models.errors import GridproofError, did_you_mean
from models.variants import Variant
from proofs.catalog import CATALOGUE, Obligation, Theorem
from proofs.catalog.base import GEOMETRY_VARS, deployment
from proofs.engine.claims import hypotheses_false
from proofs.engine.solver import Claim, Formula, Kind, encode
from proofs.faults.handwritten import in_effect, resolve
from proofs.mining.views import BOOL, INT, View, ViewError, compile_view

QUERY_RLIMIT = 10_000_000  # per Optimize query; a geometry that does not answer within it is skipped
EXPLAIN_RLIMIT = 2_000_000  # per input when explaining a counterexample
LADDER_EXTRA = 3  # size vectors up to this much above all-ones (165 vectors for 8 sizes)
SWEEP = tuple(range(0, 65)) + tuple(2**k for k in range(7, 17))  # values tried when Z3 cannot explain an input

# Default views per theorem: (label, expression). Names are the obligation's
# inputs, plus, for a symbolic deployment, `cadence`, `span1`, `span2`,
# `split_block` and `draft_span` (proofs/catalog/base.py `deployment`).
DEFAULT_VIEWS: dict[str, tuple[tuple[str, str], ...]] = {
    "prefill-published-on-target-boundaries": (
        ("EAGLE on", "eagle_drop"),
        ("budget below the cadence", "budget0 < cadence"),
        ("prompt a multiple of the cadence", "prompt % cadence == 0"),
        ("cadence a multiple of target span 1", "cadence % span1 == 0"),
        ("cadence a multiple of target span 2", "cadence % span2 == 0"),
    ),
    "prefill-restore-published": (
        ("EAGLE on", "eagle_drop"),
        ("EAGLE group annotated", "annotated"),
        ("cadence a multiple of target span 1", "cadence % span1 == 0"),
        ("cadence a multiple of target span 2", "cadence % span2 == 0"),
    ),
    "prefill-same-checkpoints-every-budget": (
        ("EAGLE on", "eagle_drop"),
        ("draft block below the cadence", "draft_block < cadence"),
        ("prompt a multiple of the cadence", "prompt % cadence == 0"),
    ),
}
FALLBACK_BOOL_VIEWS = 4  # a theorem without default views is classed by its first Bool inputs
DERIVED = ("cadence", "span1", "span2", "split_block", "draft_span")


class MiningError(GridproofError):
    """Bad input to the miner (unknown theorem, bad view, bad count): one line."""


# --- what is mined ------------------------------------------------------------------------------


def obligations_to_mine(theorem: Theorem) -> tuple[Obligation, ...]:
    """A property of a whole prefill is mined on its fresh-request trace search
    (real traces); any other theorem on its obligations."""
    return (theorem.trace_search,) if theorem.trace_search is not None else theorem.obligations


def kinds(obligation: Obligation) -> dict[str, str]:
    return {v.name: (BOOL if v.kind is Kind.BOOL else INT) for v in obligation.variables}


def has_deployment(obligation: Obligation) -> bool:
    return {v.name for v in GEOMETRY_VARS} <= set(kinds(obligation))


def derive_deployment(variant, x: dict) -> dict:
    d = deployment(variant, x)
    return {
        "cadence": d.cadence,
        "span1": d.target_spans[0],
        "span2": d.target_spans[1],
        "split_block": d.split_block,
        "draft_span": d.draft_span,
    }


def make_views(theorem: Theorem, obligation: Obligation, texts: Sequence[str] | None) -> list[View]:
    """The user's views, or the theorem's defaults, compiled for `obligation`."""
    derived = DERIVED if has_deployment(obligation) else ()
    derive = derive_deployment if derived else None
    if texts:
        pairs = [(None, t) for t in texts]
    elif theorem.name in DEFAULT_VIEWS and (derived or not _needs_derived(DEFAULT_VIEWS[theorem.name])):
        pairs = list(DEFAULT_VIEWS[theorem.name])
    else:
        bools = [v.name for v in obligation.variables if v.kind is Kind.BOOL][:FALLBACK_BOOL_VIEWS]
        pairs = [(None, b) for b in bools]
    views = [compile_view(text, kinds(obligation), derived, derive, label) for label, text in pairs]
    texts_seen = [v.text for v in views]
    duplicates = sorted({t for t in texts_seen if texts_seen.count(t) > 1})
    if duplicates:
        raise ViewError(f"--view: {duplicates[0]!r} is given twice")
    return views


def _needs_derived(pairs) -> bool:
    return any(name in text for _, text in pairs for name in DERIVED)


# --- results ------------------------------------------------------------------------------------


@dataclass
class Explanation:
    free: list[str] = field(default_factory=list)  # it varies alone and the failure stays
    matters: dict[str, object] = field(default_factory=dict)  # the nearest value of it alone that repairs it
    pinned: list[str] = field(default_factory=list)  # no other value is admissible with the rest kept
    undetermined: list[str] = field(default_factory=list)  # Z3 UNKNOWN and no repair among the values swept

    def to_json(self) -> dict:
        return {"free": self.free, "matters": self.matters, "pinned": self.pinned, "undetermined": self.undetermined}


@dataclass
class Found:
    theorem: str
    obligation: str
    variant: str
    views: list[str]
    cls: dict[str, bool]  # view text -> truth value
    inputs: dict[str, int | bool]
    sizes: dict[str, int]
    minimal: str  # how minimal the representative is, in words
    explanation: Explanation
    seconds: float  # the query that found it, minimised, and its explanation


@dataclass
class Problem:
    """A counterexample that does not replay: an encoding bug, never a result."""

    obligation: str
    inputs: dict
    message: str


@dataclass
class MiningResult:
    theorem: str
    variant: str
    views: list[View]
    found: list[Found] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    geometries: int = 0  # size vectors decided
    undecided: int = 0  # size vectors whose query did not finish within the rlimit
    complete: bool | None = None  # True: no further class exists; False: stopped at --max; None: unknown
    stop: str = ""
    seconds: float = 0.0
    rlimit: int = 0

    @property
    def possible_classes(self) -> int:
        return 2 ** len(self.views)


# --- concrete replay --------------------------------------------------------------------------

GUARD_HYPOTHESIS = "configuration accepted"
FAILS, HOLDS, REJECTED, OUTSIDE = "fails", "holds", "rejected", "outside"


def outcome(formula, variant: Variant, values: dict) -> str:
    """The claim on ints: `fails` (hypotheses hold, goal does not), `holds`,
    `rejected` (only the variant's configuration check refuses it) or
    `outside` (other hypotheses fail). A model that divides by zero is `outside`."""
    try:
        claim = formula(variant, dict(values))
    except ZeroDivisionError:
        return OUTSIDE
    failed = hypotheses_false(claim)
    if failed:
        return REJECTED if failed == [GUARD_HYPOTHESIS] else OUTSIDE
    return HOLDS if claim.goal else FAILS


# --- the search ---------------------------------------------------------------------------------


def size_vectors(count: int, extra: int):
    """Every vector of `count` positive sizes with total at most count + extra,
    smallest total first, ties in lexicographic order."""
    if count == 0:
        yield ()
        return
    for total in range(extra + 1):
        vectors = set()
        for combo in itertools.combinations_with_replacement(range(count), total):
            vector = [1] * count
            for i in combo:
                vector[i] += 1
            vectors.add(tuple(vector))
        yield from sorted(vectors)


def objective_order(obligation: Obligation) -> list[str]:
    """Inputs in minimisation priority after the sizes: budgets (per-step
    budgets first), token counts, other integers, Booleans."""
    names = [v.name for v in obligation.variables if not v.size]
    k = kinds(obligation)
    steps = [n for n in names if n.startswith("budget")]
    budgets = steps + [n for n in names if n in ("max_scheduled", "threshold")]
    token_names = ("prompt", "tokens", "computed", "requested", "local_hit", "external_hit", "junction", "end")
    tokens = [n for n in names if n in token_names]
    rest = [n for n in names if k[n] == INT and n not in budgets and n not in tokens]
    bools = [n for n in names if k[n] == BOOL]
    return budgets + tokens + rest + bools


def _rlimit_count(ctx: z3.Context) -> int:
    probe = z3.Solver(ctx=ctx)
    probe.check()
    return int(probe.statistics().get_key_value("rlimit count"))


def _with_views(formula, views: Sequence[View]):
    """The obligation's claim with each view as a cover term, so the views are
    read in the same symbolic context as the formula."""

    def wrapped(variant, x):
        claim = formula(variant, x)
        covers = {f"view:{i}": view.evaluate(variant, x) for i, view in enumerate(views)}
        return Claim(hypotheses=claim.hypotheses, goal=claim.goal, covers=covers)

    return wrapped


class Geometry(Enum):
    """How the search at one geometry ended."""

    EXHAUSTED = "exhausted"  # no counterexample outside the classes seen (or the geometry cannot be read)
    UNDECIDED = "undecided"  # a query did not finish within the rlimit


class NoRepair(Enum):
    """For one input of a counterexample, why no repairing value is named
    (besides None: Z3 shows no value of it repairs the failure, so it is free)."""

    PINNED = "pinned"  # no other value of it is admissible with the rest kept
    UNDETERMINED = "undetermined"  # Z3 cannot tell, and none of the values swept repairs it


@dataclass
class _Search:
    """One obligation's search, which every geometry reads and extends."""

    obligation: Obligation
    wrapped: Formula  # the obligation's claim with each view as a cover term
    views: list[View]
    result: MiningResult
    started: float  # the whole run's start, for the progress lines
    seen: list[tuple[bool, ...]] = field(default_factory=list)  # the classes found or blocked
    undecided: int = 0  # geometries searched so far whose query went UNKNOWN
    vectors: int = 0  # size vectors on the ladder

    def elapsed(self) -> str:
        return f"{time.perf_counter() - self.started:.0f} s"

    def view_terms(self, encoding) -> list[z3.ExprRef]:
        ctx = encoding.problem.context
        return [arith.as_term(encoding.claim.covers[f"view:{i}"], ctx) for i in range(len(self.views))]


class Miner:
    def __init__(
        self,
        theorem: str,
        variant: str,
        views: Sequence[str] | None = None,
        max_classes: int | None = None,
        rlimit: int = QUERY_RLIMIT,
        ladder: int = LADDER_EXTRA,
        progress: Callable[[str], None] | None = None,
        found: Callable[[int, Found, list], None] | None = None,
    ) -> None:
        if theorem not in CATALOGUE:
            raise MiningError(
                f"unknown theorem {theorem!r}{did_you_mean(theorem, CATALOGUE)} (known: {', '.join(CATALOGUE)})"
            )
        if max_classes is not None and max_classes <= 0:
            raise MiningError(f"--max: must be a positive integer, got {max_classes}")
        if rlimit <= 0:
            raise MiningError(f"--rlimit: must be a positive integer, got {rlimit}")
        if ladder < 0:
            raise MiningError(f"--ladder: must be a non-negative integer, got {ladder}")
        self.theorem = CATALOGUE[theorem]
        if self.theorem.enumeration is not None:
            raise MiningError(
                f"{theorem} is decided by enumeration, not by Z3: its counterexample is the failing case "
                f"`gridproof prove --theorem {theorem}` reports"
            )
        self.variant = resolve(variant)
        self.obligations = obligations_to_mine(self.theorem)
        self.view_texts = list(views or [])
        # Compile now, so a bad view is refused before any search.
        self.views = {o.name: make_views(self.theorem, o, self.view_texts) for o in self.obligations}
        self.max_classes = max_classes
        self.rlimit = rlimit
        self.ladder = ladder
        self.progress = progress or (lambda _message: None)
        self.on_found = found or (lambda _number, _found, _views: None)  # each class as found, with its views
        self.context = z3.Context()  # every term and query of the run is made in it

    def run(self) -> MiningResult:
        with in_effect(self.variant.name):
            return self._run()

    def _run(self) -> MiningResult:
        started = time.perf_counter()
        start_count = _rlimit_count(self.context)
        first = self.obligations[0]
        result = MiningResult(self.theorem.name, self.variant.name, self.views[first.name])
        stops = []
        for obligation in self.obligations:
            stops.append(self._mine(obligation, result, started))
            if self._full(result):
                break
        result.stop = "; ".join(s for s in stops if s)
        result.seconds = time.perf_counter() - started
        result.rlimit = _rlimit_count(self.context) - start_count
        return result

    def _full(self, result: MiningResult) -> bool:
        return self.max_classes is not None and len(result.found) >= self.max_classes

    # -- one obligation -----------------------------------------------------------------------

    def _mine(self, obligation: Obligation, result: MiningResult, started: float) -> str:
        views = self.views[obligation.name]
        search = _Search(obligation, _with_views(obligation.formula, views), views, result, started)
        sizes = [v.name for v in obligation.variables if v.size]
        vectors = list(size_vectors(len(sizes), self.ladder))
        search.vectors = len(vectors)
        for i, vector in enumerate(vectors, 1):
            fixed = dict(zip(sizes, vector, strict=True))
            self.progress(
                f"{obligation.name}: geometry {i}/{len(vectors)} "
                f"({', '.join(f'{k}={v}' for k, v in fixed.items() if v != 1) or 'every size 1'}), "
                f"{len(result.found)} classes, {search.elapsed()}"
            )
            answer = self._exhaust(search, fixed, search.undecided)
            result.geometries += 1
            if answer is Geometry.UNDECIDED:
                result.undecided += 1
                search.undecided += 1
            if self._full(result):
                result.complete = False
                return f"stopped at --max {self.max_classes}: more classes may exist"
            if len(search.seen) == 2 ** len(views):
                result.complete = True
                return f"no new class exists: all {len(search.seen)} combinations of the views are realised"
        return self._close(search)

    def _exhaust(self, search: _Search, fixed: dict, undecided_before: int) -> Geometry:
        """Every new class at one geometry. `undecided_before`: the smaller
        geometries that went UNKNOWN, which a class found here may hide behind."""
        obligation, views, seen, result = search.obligation, search.views, search.seen, search.result
        try:
            encoding = encode(search.wrapped, obligation.variables, self.variant, self.context, fixed=fixed)
        except ZeroDivisionError:
            return Geometry.EXHAUSTED  # the model divides by a size fixed to a value it cannot take
        terms = search.view_terms(encoding)
        while not self._full(result):
            asked = time.perf_counter()
            values = self._optimum(encoding, obligation, terms, seen)
            if isinstance(values, Geometry):
                return values
            cls = tuple(bool(view.evaluate(self.variant, values)) for view in views)
            verdict = outcome(obligation.formula, self.variant, values)
            if verdict != FAILS or cls in seen:
                why = (
                    f"the concrete model says {verdict!r}, not 'fails'"
                    if verdict != FAILS
                    else "its class was already blocked"
                )
                result.problems.append(
                    Problem(obligation.name, values, f"counterexample does not replay: {why} (an encoding bug)")
                )
                seen.append(cls)  # block it, so the search moves on
                continue
            seen.append(cls)
            minimal = (
                "no smaller counterexample of this class exists, in the order sizes, budgets, token counts, "
                "other inputs"
                if undecided_before == 0
                else f"minimal among the decided geometries ({undecided_before} smaller ones went UNKNOWN)"
            )
            explanation = self.explain(obligation, values, encoding)
            result.found.append(
                Found(
                    theorem=self.theorem.name,
                    obligation=obligation.name,
                    variant=self.variant.name,
                    views=[v.text for v in views],
                    cls={v.text: c for v, c in zip(views, cls, strict=True)},
                    inputs=values,
                    sizes=dict(fixed),
                    minimal=minimal,
                    explanation=explanation,
                    seconds=round(time.perf_counter() - asked, 3),
                )
            )
            self.on_found(len(result.found), result.found[-1], views)
            self.progress(f"{obligation.name}: class {len(result.found)} found, {search.elapsed()}")
        return Geometry.EXHAUSTED

    def _optimum(self, encoding, obligation: Obligation, terms, seen) -> dict | Geometry:
        """The lexicographically smallest counterexample outside `seen` at
        this geometry; EXHAUSTED when there is none, UNDECIDED when Z3 cannot tell."""
        constraints = [
            *encoding.context.witness_definitions,
            *encoding.hypotheses.values(),
            z3.Not(encoding.goal),
            *(z3.Not(z3.And(*(t == v for t, v in zip(terms, cls, strict=True)), self.context)) for cls in seen),
        ]
        optimize = z3.Optimize(ctx=self.context)
        optimize.set("rlimit", self.rlimit)
        optimize.set("priority", "lex")
        optimize.add(*constraints)
        objectives = []
        for name in objective_order(obligation):
            if name in encoding.fixed:
                continue
            x = encoding.inputs[name]
            term = z3.If(x, 1, 0) if z3.is_bool(x) else z3.If(x >= 0, x, -x)
            objectives.append((term, optimize.minimize(term)))
        answer = optimize.check()
        if answer != z3.sat:
            return Geometry.EXHAUSTED if answer == z3.unsat else Geometry.UNDECIDED
        # The optimum's objective values are reliable; the model Optimize
        # returns can disagree with them on 0/1 objectives, so the
        # counterexample is the model of every objective pinned to its value.
        pinned = z3.Solver(ctx=self.context)
        pinned.set("rlimit", self.rlimit)
        pinned.add(*constraints)
        for term, handle in objectives:
            value = handle.value()
            if not z3.is_int_value(value):
                return encoding.values(optimize.model())  # unbounded objective: no optimum to pin
            pinned.add(term == value)
        if pinned.check() != z3.sat:
            return encoding.values(optimize.model())
        return encoding.values(pinned.model())

    def _close(self, search: _Search) -> str:
        """The ladder is exhausted: is there a class outside it, for any sizes?"""
        obligation, seen, result = search.obligation, search.seen, search.result
        self.progress(f"{obligation.name}: asking Z3 for a class outside the {len(seen)} found, any sizes")
        encoding = encode(search.wrapped, obligation.variables, self.variant, self.context, rlimit=self.rlimit)
        terms = search.view_terms(encoding)
        solver = z3.Solver(ctx=self.context)
        solver.set("rlimit", self.rlimit)
        solver.add(*encoding.context.definitions, *encoding.hypotheses.values(), z3.Not(encoding.goal))
        for cls in seen:
            solver.add(z3.Not(z3.And(*(t == v for t, v in zip(terms, cls, strict=True)), self.context)))
        answer = solver.check()
        ladder = f"{search.vectors} geometries with sizes up to {self.ladder} above 1"
        if answer == z3.unsat:
            result.complete = True
            return f"no new class exists: Z3 shows every counterexample, of any size, is in the {len(seen)} found"
        if answer == z3.sat:
            values = encoding.values(solver.model())
            sizes = {v.name: values[v.name] for v in obligation.variables if v.size}
            before = len(result.found)
            # Beyond the ladder: not shown minimal, as if a smaller geometry had gone UNKNOWN.
            self._exhaust(search, sizes, search.undecided + 1)
            if len(result.found) > before and not self._full(result):
                return self._close(search)
            result.complete = None
            return f"a class outside the {ladder} exists at sizes {sizes}; stopped there"
        result.complete = None
        return (
            f"no new class in the {ladder}; whether one exists at larger sizes is UNKNOWN "
            f"(Z3: {solver.reason_unknown()} at rlimit {self.rlimit:,})"
        )

    # -- explanation ---------------------------------------------------------------------------

    def explain(self, obligation: Obligation, values: dict, encoding=None) -> Explanation:
        """Per input, varied alone with every other input kept: does some
        admissible value make the property hold? A Boolean is flipped on the
        concrete model; an integer is left symbolic for Z3 (the nearest value
        that repairs the failure, or a proof that none does). `encoding`, the
        query at this counterexample's geometry, serves every non-size input."""
        explanation = Explanation()
        for var in obligation.variables:
            name = var.name
            if var.kind is Kind.BOOL:
                flipped = outcome(obligation.formula, self.variant, {**values, name: not values[name]})
                if flipped == HOLDS:
                    explanation.matters[name] = not values[name]
                elif flipped == FAILS:
                    explanation.free.append(name)
                else:
                    explanation.pinned.append(name)
                continue
            if var.size or encoding is None or name in encoding.fixed:
                repair = self._repair(obligation, values, name, None)
            else:
                repair = self._repair(obligation, values, name, encoding)
            if repair is None:
                explanation.free.append(name)
            elif repair is NoRepair.PINNED:
                explanation.pinned.append(name)
            elif repair is NoRepair.UNDETERMINED:
                explanation.undetermined.append(name)
            else:
                explanation.matters[name] = repair
        return explanation

    def _repair(self, obligation: Obligation, values: dict, name: str, encoding) -> int | NoRepair | None:
        """The admissible value of `name` nearest its own that makes the
        property hold with every other input kept; None if Z3 shows there is
        none (PINNED if no other value is even admissible); UNDETERMINED if
        Z3 cannot tell and none of the values swept does."""
        if encoding is None:
            fixed = {k: v for k, v in values.items() if k != name}
            try:
                encoding = encode(obligation.formula, obligation.variables, self.variant, self.context, fixed=fixed)
            except ZeroDivisionError:
                return self._sweep(obligation, values, name)
        pins = [
            encoding.inputs[k] == arith.as_term(v, self.context)
            for k, v in values.items()
            if k != name and k not in encoding.fixed
        ]
        x = encoding.inputs[name]
        solver = z3.Optimize(ctx=self.context)
        solver.set("rlimit", EXPLAIN_RLIMIT)
        solver.add(*encoding.context.witness_definitions, *encoding.hypotheses.values(), encoding.goal, *pins)
        distance = x - values[name]
        solver.minimize(z3.If(distance >= 0, distance, -distance))
        answer = solver.check()
        if answer == z3.sat:
            value = solver.model().eval(x, model_completion=True).as_long()
            if outcome(obligation.formula, self.variant, {**values, name: value}) == HOLDS:
                return value
            return self._sweep(obligation, values, name)
        if answer == z3.unsat:
            other = z3.Solver(ctx=self.context)
            other.set("rlimit", EXPLAIN_RLIMIT)
            other.add(*encoding.context.witness_definitions, *encoding.hypotheses.values(), *pins)
            return NoRepair.PINNED if other.check(x != values[name]) == z3.unsat else None
        return self._sweep(obligation, values, name)

    def _sweep(self, obligation: Obligation, values: dict, name: str) -> int | NoRepair:
        current = values[name]
        candidates = {*SWEEP, current - 1, current + 1, 2 * current, current // 2} - {current}
        for value in sorted(candidates, key=lambda v: (abs(v - current), v)):
            if outcome(obligation.formula, self.variant, {**values, name: value}) == HOLDS:
                return value
        return NoRepair.UNDETERMINED


def mine(theorem: str, variant: str, **options) -> MiningResult:
    return Miner(theorem, variant, **options).run()


def class_label(found: Found, views: Sequence[View]) -> str:
    labels = {v.text: v.label for v in views}
    return ", ".join(f"{labels.get(t, t)}: {'yes' if c else 'no'}" for t, c in found.cls.items())


__all__ = [
    "DEFAULT_VIEWS",
    "Explanation",
    "Found",
    "Miner",
    "MiningError",
    "MiningResult",
    "ViewError",
    "mine",
    "outcome",
]
