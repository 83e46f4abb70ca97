"""Deciding one obligation: building the Z3 query from a claim read
symbolically, budgeting it in rlimit, and turning the answer into an honest
verdict: only PROVED proves; UNKNOWN and VACUOUS are never success.

A claim is built by calling a theorem's formula with Z3 variables; the same
formula called with ints is the concrete model, used to replay every
counterexample before it is reported.
"""

from __future__ import annotations

import contextlib
import contextvars
import itertools
import random
import re
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import Enum

import z3

from models import arith

PROVED, REFUTED, UNKNOWN, VACUOUS, ERROR = "PROVED", "REFUTED", "UNKNOWN", "VACUOUS", "ERROR"
DEFAULT_RLIMIT = 20_000_000

# Small concrete geometries tried before the fully symbolic search for a
# counterexample: a concrete divisor makes the query linear (on a one-token mutant
# of the split, 7.1 s with the block size symbolic, 0.016-0.11 s with it fixed).
SIZE_LADDER = ((1, 2), (1, 2, 3, 4), (1, 2, 3, 4, 6, 8, 16), (16, 128, 768, 3840, 4096, 12288))
SPURIOUS_RETRIES = 8  # inputs excluded after a counterexample that does not replay
CORE_RLIMIT = 300_000  # per deletion check when minimising a proof's hypotheses, at most
# A deletion query can cost more than a proof that was quick: the config
# theorems' took 60,000 to 90,000 after proofs of under 30,000.
CORE_MIN_RLIMIT = 150_000
# A deletion check capped below a quarter of the proof's own cost is not
# posed: over the whole catalogue, 48 of 48 such checks ended unknown (and
# kept their hypothesis), 25 s of a 109 s sequential run.
CORE_HOPELESS_RATIO = 4
# Before a deletion check, the same query with every size input pinned to a
# small range: a model shows the hypothesis needed, and the check is not
# posed. Every size 1 first (linear: a few milliseconds), then each size
# anywhere in 0..2 (nonlinear but bounded; most answer in milliseconds too;
# 0 breaks the goal's definedness, which shows a positivity hypothesis
# needed). Over the whole catalogue: 79 more hypotheses shown needed (64 of
# the 198 used left unconfirmed, against 143 with the checks alone), and in
# less time: most checks that ended unknown are no longer posed.
PINNED_RANGES = ((1, 1), (0, 2))
PINNED_RLIMIT = 100_000
VACUITY_RLIMIT = 100_000  # the hypotheses' first consistency check, before any search
LADDER_TRIES = 12  # concrete geometries tried per rung
LADDER_RLIMIT = 400_000  # per try: a linear query either answers fast or is skipped
PROBES = 300  # random concrete inputs tried before the ladder's queries
PROBE_INT_MAX = 40


# How a query is solved. "core": Z3's SMT core alone (SimpleSolver). "default":
# Z3's Solver(), which picks a strategy by the query's logic; for these
# nonlinear queries that strategy was measured slower on most obligations, its
# answers varied from run to run (some of its steps are bounded by wall-clock
# time), and more deletion queries ended unknown. No obligation uses it since
# the SMT core decides them all without Groebner bases (below).
STRATEGIES = {"core": z3.SimpleSolver, "default": z3.Solver}

# Z3 parameters of every query (the SMT core's names; written into the
# exported SMT-LIB with the "smt." prefix). Without the Groebner-basis step of
# Z3's nonlinear solver, one sequential --tier all took 36.7 s instead of
# 41.7 s, and 26.7 s once the three obligations that had needed Z3's default
# strategy went to the SMT core too: it now decides them, and sooner.
QUERY_PARAMETERS = (("arith.nl.grobner", False),)


class Kind(Enum):
    INT = "int"
    BOOL = "bool"


@dataclass(frozen=True)
class Var:
    name: str
    kind: Kind = Kind.INT
    size: bool = False  # a block size, span or cadence: pinned to small values by the ladder


@dataclass
class Claim:
    hypotheses: dict[str, object]
    goal: object
    covers: dict[str, object] = field(default_factory=dict)


Formula = Callable[[object, dict[str, object]], Claim]


@dataclass
class Outcome:
    verdict: str
    rlimit: int = 0
    seconds: float = 0.0
    hypotheses_used: list[str] = field(default_factory=list)
    # Used hypotheses kept without a deletion check that decided (unknown at
    # its cap, or not posed for the proof's cost): the set may not be minimal.
    hypotheses_unconfirmed: list[str] = field(default_factory=list)
    counterexample: dict[str, int | bool] | None = None
    reason: str = ""
    queries: list[Query] = field(default_factory=list)  # what the verdict rests on, for export
    reused: int = 0  # queries answered from an identical query posed before (QueryCache)
    hypothesis_names: list[str] | None = None  # the claim's, in order, when it was read symbolically

    @property
    def smt2(self) -> str:
        """The first query as `z3` poses it: its Z3 options, then its text."""
        return self.queries[0].z3_options + self.queries[0].text if self.queries else ""


@dataclass(frozen=True)
class Query:
    """One query a verdict rests on, for anyone to pose again: `text` is
    standard SMT-LIB 2.6 (any solver reads it); `z3_options` are the Z3-only
    settings gridproof decided it under, kept apart so other solvers never
    see them. `answer` is Z3's: unsat for a proved case (or one the
    hypotheses exclude), sat for a counterexample's query."""

    case: tuple[tuple[str, bool], ...]  # the case split's values, empty without a split
    answer: str
    text: str
    z3_options: str

    def to_json(self) -> dict:
        return {
            "case": [list(pair) for pair in self.case],
            "answer": self.answer,
            "text": self.text,
            "z3_options": self.z3_options,
        }

    @classmethod
    def from_json(cls, data: dict) -> Query:
        return cls(
            tuple((name, value) for name, value in data["case"]), data["answer"], data["text"], data["z3_options"]
        )


class QueryCache:
    """Answers to the queries posed so far, for the same query posed again:
    a theorem's variants and mutants often read to the very same terms, and
    then its proof and vacuity queries repeat (deletion queries are posed on
    a solver of their own, _DeletionQueries, not through here). The key is the
    query's SMT-LIB text with Z3's let-names numbered in order of appearance
    (they come from term ids), so equal keys are equal queries. Only answers
    that hold whatever the budget are kept: unsat, and unknown with the rlimit
    it was reached under, reused under a budget no larger. A sat answer needs
    its model, so that query is always posed. Each answer keeps the rlimit it
    cost, which the minimisation reads as the proof's own cost."""

    def __init__(self) -> None:
        self._answers: dict[str, tuple[z3.CheckSatResult, int, str, int]] = {}
        self._minimised: dict[str, tuple[list[str], list[str]]] = {}

    def minimised(self, key: str) -> tuple[list[str], list[str]] | None:
        """A proof's minimised hypotheses (used, unconfirmed), by a key that
        holds the proof query's."""
        return self._minimised.get(key)

    def store_minimised(self, key: str, result: tuple[list[str], list[str]]) -> None:
        self._minimised[key] = result

    def lookup(self, key: str, cap: int) -> tuple[z3.CheckSatResult, str, int] | None:
        """The answer, why it is unknown (if it is), and what it cost."""
        found = self._answers.get(key)
        if found is None:
            return None
        answer, reached_under, reason, cost = found
        if answer == z3.unsat or cap <= reached_under:
            return answer, reason, cost
        return None

    def store(self, key: str, answer: z3.CheckSatResult, cap: int, reason: str, cost: int) -> None:
        if answer != z3.sat:
            self._answers[key] = (answer, cap, reason, cost)

    @staticmethod
    def key(solver: z3.Solver, extra: Sequence[z3.ExprRef], smt2: str | None = None) -> str:
        """`smt2`: the solver's to_smt2() text, when the caller has it already."""
        text = (solver.to_smt2() if smt2 is None else smt2) + "".join(f"(assume {e.sexpr()})" for e in extra)
        names: dict[str, str] = {}
        return _LET_NAME.sub(lambda m: names.setdefault(m.group(0), f"?n{len(names)}"), text)


_LET_NAME = re.compile(r"[$?][a-z]\d+\b")
_queries: contextvars.ContextVar[QueryCache | None] = contextvars.ContextVar("gridproof_query_cache", default=None)


@contextlib.contextmanager
def shared_queries() -> Iterator[QueryCache]:
    """Within the block, every obligation decided answers a query it poses
    again (an identical one, asked before in the block) from the first answer."""
    cache = QueryCache()
    token = _queries.set(cache)
    try:
        yield cache
    finally:
        _queries.reset(token)


@contextlib.contextmanager
def fresh_context() -> Iterator[None]:
    """Z3 terms built within the block live in a new main context, restored
    after. Term ids order the solver's choices, so in a shared context an
    obligation's cost and answers depend on what the process decided before
    it; in its own, a result is reproduced by its command alone, whatever ran
    before it. z3 keeps the main context in a module global."""
    saved = z3.z3._main_ctx
    z3.z3._main_ctx = None
    try:
        yield
    finally:
        z3.z3._main_ctx = saved


def symbolic_inputs(variables: Sequence[Var]) -> dict[str, z3.ExprRef]:
    return {v.name: (z3.Bool(v.name) if v.kind is Kind.BOOL else z3.Int(v.name)) for v in variables}


def replay(formula: Formula, variant, values: dict[str, int | bool], drop=()) -> tuple[bool, str]:
    """Evaluate the claim on ints: does it really violate the goal under the hypotheses?"""
    try:
        claim = formula(variant, dict(values))
    except ZeroDivisionError:
        return False, "the concrete model divides by zero: a divisor lacks a positivity hypothesis"
    failed = [name for name, h in claim.hypotheses.items() if name not in drop and not h]
    if failed:
        return False, f"hypotheses {', '.join(failed)} do not hold concretely"
    if claim.goal:
        return False, "the goal holds concretely"
    return True, ""


def _resource_count(checked: z3.Solver | None = None) -> int:
    """Z3's resource counter for this context. It grows with every check,
    simplification and unsat-core minimisation, cumulatively across solvers.
    A solver's statistics read it as of its last check: `checked`, if it was
    the last thing Z3 did, or else a trivial fresh check (a millisecond)."""
    if checked is None:
        checked = z3.Solver()
        checked.check()
    return int(checked.statistics().get_key_value("rlimit count"))


class _Budget:
    """An obligation's rlimit: everything Z3 counted since it began."""

    def __init__(self, rlimit: int, counted: bool = True) -> None:
        """`counted` False: for a claim only read, never decided (no count to start from)."""
        self.limit = rlimit
        self.start = _resource_count() if counted else 0
        self.used = 0

    @property
    def remaining(self) -> int:
        return self.limit - self.used

    def charge(self, checked: z3.Solver | None = None) -> None:
        """`checked`: the solver just checked, when nothing has run since."""
        self.used = _resource_count(checked) - self.start


def decide(
    formula: Formula,
    variables: Sequence[Var],
    variant,
    rlimit: int = DEFAULT_RLIMIT,
    drop: Sequence[str] = (),
    refute_first: bool = False,
    seed: int | None = None,
    case_split: Sequence[str] = (),
    naive: bool = False,
    lemmas: bool = True,
    solver_options: Sequence[tuple[str, object]] = (),
    strategy: str = "core",
) -> Outcome:
    """PROVED, REFUTED (replayed), UNKNOWN, VACUOUS or ERROR for one obligation.

    `case_split` names Bool inputs to enumerate: each case substitutes its
    values before encoding, so the model's branches on them vanish. PROVED
    needs every case that the hypotheses admit to be PROVED. `naive` encodes
    division with Z3's own div and mod, for the benchmark only. `lemmas`
    False leaves the derived lemma families out (sound either way: they are
    valid facts, and some goals close sooner without them). `solver_options`
    are Z3 parameters set while it is decided, and written into the SMT-LIB
    text. `strategy` names how each query is solved (STRATEGIES)."""
    started = time.perf_counter()
    budget = _Budget(rlimit)
    problem = None
    try:
        problem = _Problem(
            formula,
            tuple(variables),
            variant,
            frozenset(drop),
            seed,
            budget,
            naive,
            lemmas,
            tuple(solver_options),
            strategy,
        )
        if strategy not in STRATEGIES:
            raise ValueError(f"unknown solver strategy {strategy!r} (known: {', '.join(STRATEGIES)})")
        with _global_parameters(problem.solver_options):
            outcome = problem.decide(tuple(case_split), refute_first)
    except Exception as error:  # an encoding bug must surface as ERROR, never as a verdict
        outcome = Outcome(ERROR, reason=f"{type(error).__name__}: {error}")
    budget.charge()
    outcome.rlimit = budget.used
    outcome.reused = problem.reused if problem is not None else 0
    outcome.hypothesis_names = problem.hypothesis_names if problem is not None else None
    outcome.seconds = time.perf_counter() - started
    return outcome


def query_text(formula: Formula, variables: Sequence[Var], variant) -> str:
    """The claim read symbolically as one query's text, every input free:
    the witness definitions, the hypotheses, the negated goal and the cover
    goals, with Z3's let-names numbered in order. Every query a decision
    poses is a function of it (and of the procedure's code), so equal texts
    are decided alike."""
    with fresh_context():
        problem = _Problem(formula, tuple(variables), variant, frozenset(), None, _Budget(1, counted=False))
        try:
            encoding = _Encoding(problem, {})
        except ZeroDivisionError as error:
            return f"ZeroDivisionError: {error}"
        query = encoding.solver(tracked=True, lemmas=False)
        covers = [z3.Bool(f"cover:{name}") == _bool(c) for name, c in encoding.claim.covers.items()]
        return QueryCache.key(query, [z3.Not(encoding.goal), *covers])


def encode(
    formula: Formula, variables: Sequence[Var], variant, fixed: dict | None = None, rlimit: int = DEFAULT_RLIMIT
):
    """The claim read symbolically, some inputs fixed to values: `.claim`,
    `.inputs` (Z3 terms or the fixed values), `.hypotheses`, `.goal` (with the
    model's definedness obligations), `.solver(tracked)` (definitions and
    hypotheses asserted, rlimit set), `.values(model)`. For tools that pose
    their own queries (mining); verdicts come from `decide`."""
    problem = _Problem(formula, tuple(variables), variant, frozenset(), None, _Budget(rlimit))
    return _Encoding(problem, dict(fixed or {}))


class _Encoding:
    """The claim read with Z3 terms for the inputs not fixed to values."""

    def __init__(self, problem: _Problem, fixed: dict) -> None:
        self.fixed = fixed
        self.free = [v for v in problem.variables if v.name not in fixed]
        self.inputs = {**symbolic_inputs(self.free), **fixed}
        self.sizes = [self.inputs[v.name] for v in self.free if v.size]  # the size inputs left symbolic
        with arith.symbolic_context(naive=problem.naive) as context:
            self.claim = problem.formula(problem.variant, dict(self.inputs))
        unknown = problem.drop - set(self.claim.hypotheses)
        if unknown:
            raise ValueError(f"cannot drop unknown hypotheses {sorted(unknown)}")
        self.context = context
        if problem.hypothesis_names is None:
            problem.hypothesis_names = list(self.claim.hypotheses)
        self.hypotheses = {n: _bool(h) for n, h in self.claim.hypotheses.items() if n not in problem.drop}
        self.goal = z3.And(_bool(self.claim.goal), *context.obligations)
        context.prune([self.goal, *self.hypotheses.values(), *self.claim.covers.values()])
        self.problem = problem

    def solver(
        self, tracked: bool, limit: int | None = None, only: set[str] | None = None, lemmas: bool | None = None
    ) -> z3.Solver:
        """Definitions and hypotheses (those named in `only`, or all) asserted,
        rlimit set; the lemma families as the problem says unless `lemmas`."""
        budget = self.problem.budget
        solver = STRATEGIES[self.problem.strategy]()
        solver.rlimit_cap = max(min(budget.remaining, limit or budget.remaining), 1)
        solver.set("rlimit", solver.rlimit_cap)
        solver.set("core.minimize", True)
        for name, value in QUERY_PARAMETERS:
            solver.set(name, value)
        if self.problem.seed is not None:
            solver.set("random_seed", self.problem.seed)
        lemmas = self.problem.lemmas if lemmas is None else lemmas
        _assert_all(solver, self.context.definitions if lemmas else self.context.witness_definitions)
        for name, h in self.hypotheses.items():
            if only is not None and name not in only:
                continue
            if tracked:
                solver.assert_and_track(h, z3.Bool(f"hyp:{name}"))
            else:
                solver.add(h)
        return solver

    def values(self, model: z3.ModelRef) -> dict[str, int | bool]:
        values = dict(self.fixed)
        for v in self.free:
            value = model.eval(self.inputs[v.name], model_completion=True)
            values[v.name] = z3.is_true(value) if v.kind is Kind.BOOL else value.as_long()
        return {v.name: values[v.name] for v in self.problem.variables}


@dataclass
class _Problem:
    formula: Formula
    variables: tuple[Var, ...]
    variant: object
    drop: frozenset
    seed: int | None
    budget: _Budget
    naive: bool = False
    lemmas: bool = True
    solver_options: tuple[tuple[str, object], ...] = ()
    strategy: str = "core"
    reused: int = 0
    last_reason: str = ""
    last_cost: int = 0  # the rlimit the last answer cost when it was decided, reused or not
    last_key: str = ""  # the last query's key in the query cache, if there is one
    hypothesis_names: list[str] | None = None
    _encodings: dict = field(default_factory=dict)

    def encoding(self, fixed: dict) -> _Encoding:
        """The claim read with the `fixed` inputs, built once per problem: the
        vacuity check, the ladder and each cover goal read the same small
        geometries, and a cover goal without a case split reads the case's."""
        key = tuple(sorted(fixed.items()))
        if key not in self._encodings:
            try:
                self._encodings[key] = _Encoding(self, fixed)
            except ZeroDivisionError as error:
                self._encodings[key] = str(error)  # raised afresh each time, not with a growing traceback
        found = self._encodings[key]
        if isinstance(found, str):
            raise ZeroDivisionError(found)
        return found

    def check(self, solver: z3.Solver, *extra, smt2: str | None = None, shared: bool = True) -> z3.CheckSatResult:
        """The solver's answer; `last_reason` says why, when unknown, and
        `last_cost` what it cost. `smt2`: the solver's to_smt2() text, if
        already written (it keys the query cache). `shared` False keeps the
        query out of the query cache."""
        cache = _queries.get() if shared else None
        if cache is not None:
            # The same text under another strategy, parameters or seed might
            # be decided where this one was not.
            key = f"{self.strategy} {self.solver_options} {self.seed}\n{QueryCache.key(solver, extra, smt2)}"
            self.last_key = key
            found = cache.lookup(key, solver.rlimit_cap)
            if found is not None:
                self.reused += 1
                answer, self.last_reason, self.last_cost = found
                return answer
        before = self.budget.used
        answer = solver.check(*extra)
        self.budget.charge(solver)
        self.last_cost = self.budget.used - before
        self.last_reason = solver.reason_unknown() if answer == z3.unknown else ""
        if cache is not None:
            cache.store(key, answer, solver.rlimit_cap, self.last_reason, self.last_cost)
        return answer

    def decide(self, case_split: tuple[str, ...], refute_first: bool) -> Outcome:
        booleans = {v.name for v in self.variables if v.kind is Kind.BOOL}
        unknown = [n for n in case_split if n not in booleans]
        if unknown:
            raise ValueError(f"case split on unknown Bool inputs {unknown}")
        cases = [
            dict(zip(case_split, values, strict=True))
            for values in itertools.product((False, True), repeat=len(case_split))
        ]
        if refute_first:
            # On the obligation whole, every flag free: the probe draws the
            # flags too, and a geometry's one query covers every case. Case
            # by case, prefill-restore-published's 8 cases cost its mutants
            # 8 probes and up to 8 readings per geometry: conversion-rounds-up
            # 0.67 s, against 0.15 s whole.
            values = self._refute_small({})
            if values is not None:
                return self._refuted(values, {})
        used: set[str] = set()
        unconfirmed: set[str] = set()
        # Shown needed by a check in some case: needed, whatever another case's check said.
        confirmed: set[str] = set()
        admitted = 0
        queries: list[Query] = []
        for case in cases:
            label = _case_label(case)
            known = set(used)
            out = self._decide_case(case, searched=refute_first, known_needed=known)
            # A case the hypotheses exclude is proved by the hypotheses that
            # exclude it: they are used, each checked. A proof keeps `known`
            # unchecked: that confirms none of them.
            checked = set(out.hypotheses_used) - (known if out.verdict == PROVED else set())
            used.update(out.hypotheses_used)
            unconfirmed.update(out.hypotheses_unconfirmed)
            confirmed.update(checked - set(out.hypotheses_unconfirmed))
            queries += out.queries
            if out.verdict == VACUOUS and case:
                continue
            admitted += 1
            if out.verdict != PROVED:
                out.reason = label + out.reason
                out.queries = queries
                return out
        if admitted == 0:
            return Outcome(VACUOUS, reason="the hypotheses exclude every case", queries=queries)
        covers = self._check_covers()
        if covers is not None:
            return covers
        return Outcome(
            PROVED,
            hypotheses_used=sorted(used),
            hypotheses_unconfirmed=sorted(unconfirmed - confirmed),
            queries=queries,
        )

    def _decide_case(self, case: dict, searched: bool, known_needed: set[str] = frozenset()) -> Outcome:
        """`searched`: the cheap refuters have already failed on this case
        (on the obligation whole, whose queries leave the flags free)."""
        encoding = self.encoding(case)
        # Vacuity: hypotheses that contradict each other prove anything. A
        # case's values can make a hypothesis false outright; otherwise a
        # model with every size pinned small settles most cases, then one in
        # the smallest geometries; then a short query without the lemma
        # families (a case that contradicts the hypotheses usually does so
        # plainly); then larger geometries; then the full query.
        simplified = {name: z3.simplify(h) for name, h in encoding.hypotheses.items()}
        false = [name for name, h in simplified.items() if z3.is_false(h)]
        if false:
            where = " in this case" if case else ""
            return self._excluded(case, encoding, false, f"hypotheses false{where}: {', '.join(false)}")
        answer = z3.sat
        found = self._pinned_model(encoding, z3.BoolVal(True)) or self._search(case, _anything, rungs=SIZE_LADDER[:1])
        if not found:
            answer = self.check(encoding.solver(tracked=False, limit=VACUITY_RLIMIT, lemmas=False))
            if answer == z3.unknown and self._search(case, _anything, rungs=SIZE_LADDER[1:]) is None:
                check = encoding.solver(tracked=False)
                answer = self.check(check)
                if answer == z3.unknown:
                    return Outcome(UNKNOWN, reason=f"hypotheses alone: {self.last_reason}")
        if answer == z3.unsat:
            core, _ = self._core(encoding, z3.BoolVal(True))
            return self._excluded(case, encoding, core, f"the hypotheses contradict each other: {', '.join(core)}")
        # Untracked: naming hypotheses for an unsat core blocks the solver's
        # equality solving, and measured slower by orders of magnitude here.
        independent = _independent_of_goal(encoding, simplified)
        negated = encoding.solver(tracked=False, only=set(encoding.hypotheses) - independent)
        negated.add(z3.Not(encoding.goal))
        # Written once: the exported file and the query cache's key.
        text = negated.to_smt2()
        answer = self.check(negated, smt2=text)
        # What the proof cost when first decided: a reused answer sizes the
        # deletion checks as the same query decided alone would.
        proof_cost, proof_key = self.last_cost, self.last_key
        spurious = None
        for _ in range(SPURIOUS_RETRIES):
            if answer != z3.sat:
                break
            values = encoding.values(negated.model())
            outcome = self._refuted(values, case, text)
            if outcome.verdict == REFUTED:
                return outcome
            if independent:
                # The cone of influence left these hypotheses out, so Z3 chose
                # their inputs freely: pose the query again with every
                # hypothesis asserted before calling the model spurious.
                negated.add(*(encoding.hypotheses[name] for name in sorted(independent)))
                independent = set()
                text = negated.to_smt2()
                answer = self.check(negated, smt2=text)
                continue
            # A model that does not replay exploits an over-approximation (the
            # symbolic lcm) or an encoding bug: look past it for a real
            # counterexample, but never report the theorem proved.
            spurious = spurious or outcome
            negated.add(z3.Or(*(encoding.inputs[v.name] != values[v.name] for v in encoding.free)))
            answer = self.check(negated)
        if answer == z3.sat:
            return self._refuted(encoding.values(negated.model()), case, negated.to_smt2())
        if spurious is not None:
            return spurious
        if answer == z3.unknown:
            reason = self.last_reason
            if not searched:
                found = self._refute_small(case)
                if found is not None:
                    return self._refuted(found, case)
            return Outcome(UNKNOWN, reason=f"goal: {reason}", queries=[self._query(case, "unknown", text)])
        # Not needed in this case, without a check: a hypothesis true outright,
        # and those the proof did without.
        idle = {name for name, h in simplified.items() if z3.is_true(h)} | independent
        used, unconfirmed = self._minimised(encoding, proof_key, proof_cost, known_needed, idle)
        queries = [self._query(case, "unsat", text)]
        return Outcome(PROVED, hypotheses_used=used, hypotheses_unconfirmed=unconfirmed, queries=queries)

    def _excluded(self, case: dict, encoding: _Encoding, names: list[str], reason: str) -> Outcome:
        """VACUOUS for a case that the hypotheses `names` exclude: they are the
        proof of that case. Each is confirmed needed when, in this case with
        every other hypothesis holding, the goal fails without it: in a pinned
        geometry (PINNED_RANGES), or else within CORE_MIN_RLIMIT. The others
        are unconfirmed."""
        deletions = _DeletionQueries(self, encoding, z3.Not(encoding.goal))

        def needed(name: str) -> bool:
            kept = encoding.hypotheses
            return deletions.needed_when_pinned(kept, name) or deletions.check(kept, name, CORE_MIN_RLIMIT) == z3.sat

        unconfirmed = [name for name in names if not needed(name)]
        # Exported as the proof of the case: every hypothesis and the negated goal, unsat.
        query = encoding.solver(tracked=False)
        query.add(z3.Not(encoding.goal))
        return Outcome(
            VACUOUS,
            reason=reason,
            hypotheses_used=list(names),
            hypotheses_unconfirmed=unconfirmed,
            queries=[self._query(case, "unsat", query.to_smt2())],
        )

    def _minimised(
        self, encoding: _Encoding, proof_key: str, proof_cost: int, known_needed: set[str], idle: set[str]
    ) -> tuple[list[str], list[str]]:
        """_core for a proof, answered once per identical proof query within
        shared_queries. Deletion queries do not go through the query cache,
        and after a reused proof Z3's term ids differ from those of the same
        proof decided alone, so recomputing could report another set than
        the entry's reproduce command does."""
        cache = _queries.get()
        key = ""
        # A budget nearly spent would cap the deletion checks lower than the first decision's.
        if cache is not None and proof_key and self.budget.remaining >= CORE_RLIMIT:
            known = f"{sorted(known_needed)} {sorted(idle)}"
            key = f"minimised {list(encoding.hypotheses)} {known} {proof_cost}\n{proof_key}"
            found = cache.minimised(key)
            if found is not None:
                self.reused += 1
                return found
        result = self._core(encoding, z3.Not(encoding.goal), proof_cost, known_needed, idle)
        if key:
            cache.store_minimised(key, result)
        return result

    def _query(self, case: dict, answer: str, text: str) -> Query:
        """A solver's to_smt2() `text` as an exported Query: standard SMT-LIB
        2.6, and apart from it the Z3 options it was decided under, so that
        `z3` poses it as it was posed here and other solvers read it as is."""
        return Query(tuple(case.items()), answer, standard_smt2(text, answer), self._z3_options())

    def _z3_options(self) -> str:
        options = [
            *((f"smt.{name}", value) for name, value in QUERY_PARAMETERS),
            *self.solver_options,
            *((("smt.random_seed", self.seed),) if self.seed is not None else ()),
            # What the SMT core alone (SimpleSolver) does; Z3's default for the logic differs.
            *((("tactic.default_tactic", "smt"),) if self.strategy == "core" else ()),
        ]
        return "".join(f"(set-option :{name} {_smt2_value(value)})\n" for name, value in options)

    def _core(
        self,
        encoding: _Encoding,
        negated_goal: z3.BoolRef,
        proof_cost: int = CORE_RLIMIT,
        known_needed: set[str] = frozenset(),
        idle: set[str] = frozenset(),
    ) -> tuple[list[str], list[str]]:
        """The hypotheses a proof used, minimal by deletion: drop each in
        turn and keep it out if the rest still prove the goal. Every set
        reported was itself checked unsat. A check that does not finish within
        a few times the proof's own cost keeps the hypothesis: the set is then
        sufficient, though perhaps not minimal; so is the whole set when the
        proof cost more than CORE_HOPELESS_RATIO times the check's cap, unless
        a pinned geometry shows a hypothesis needed (PINNED_RANGES).
        `known_needed` (an earlier case's core, which the reported union holds
        anyway) is kept unchecked; `idle` (true outright in this case) is left
        out unchecked. Returns the set and those of it kept without a check
        that decided."""
        limit = min(CORE_RLIMIT, max(CORE_MIN_RLIMIT, 3 * proof_cost))
        posed = proof_cost <= CORE_HOPELESS_RATIO * limit
        needed = {name: h for name, h in encoding.hypotheses.items() if name not in idle}
        deletions = _DeletionQueries(self, encoding, negated_goal)
        unconfirmed = []
        for name in [n for n in needed if n not in known_needed]:
            if deletions.needed_when_pinned(needed, name):
                continue
            if posed:
                answer = deletions.check(needed, name, limit)
                if answer == z3.unsat:
                    del needed[name]
                    continue
                if answer == z3.sat:
                    continue
                # The case's checks share a solver, which this one warmed up
                # to its cap: the checks decided after it cost little. Capped
                # lower from here, --tier all under three seeds took 5 to 8%
                # less rlimit, and reported the very same sets.
                limit = min(limit, CORE_MIN_RLIMIT)
            unconfirmed.append(name)
        return sorted(needed), sorted(unconfirmed)

    def _refute_small(self, case: dict) -> dict | None:
        """A replaying counterexample in `case` from the cheap refuters: the
        probe, then the ladder, rung by rung."""
        values = self._probe(case)
        if values is None:
            values = self._search(case, lambda e: z3.Not(e.goal), replayed=True)
        return values

    def _probe(self, case: dict) -> dict | None:
        """Random small inputs evaluated on the concrete model, before any
        query: where failures are dense this is the fastest refuter (random
        testing's strength). Seeded, so a
        rerun finds the same input; what it finds replays by construction."""
        rng = random.Random(self.seed or 0)
        sizes = sorted({v for rung in SIZE_LADDER[:3] for v in rung})
        for _ in range(PROBES):
            values = {}
            for v in self.variables:
                if v.name in case:
                    values[v.name] = case[v.name]
                elif v.kind is Kind.BOOL:
                    values[v.name] = rng.random() < 0.5
                elif v.size:
                    values[v.name] = rng.choice(sizes)
                else:
                    values[v.name] = rng.randint(0, PROBE_INT_MAX)
            if replay(self.formula, self.variant, values, self.drop)[0]:
                return self._shrink(values, case)
        return None

    def _shrink(self, values: dict, case: dict) -> dict:
        """Greedily smaller inputs that still fail on the concrete model, so a
        probe's counterexample reads like the ladder's."""
        changed = True
        while changed:
            changed = False
            for v in self.variables:
                if v.name in case:
                    continue
                current = values[v.name]
                if v.kind is Kind.BOOL:
                    candidates = [False] if current else []
                else:
                    low = 1 if v.size else 0
                    candidates = sorted({low, low + 1, current // 2, current - 1} - {current})
                    candidates = [c for c in candidates if low <= c < current]
                for candidate in candidates:
                    trial = {**values, v.name: candidate}
                    if replay(self.formula, self.variant, trial, self.drop)[0]:
                        values, changed = trial, True
                        break
        return values

    def _check_covers(self) -> Outcome | None:
        encoding = self.encoding({})
        for name in encoding.claim.covers:
            if self._pinned_model(encoding, _bool(encoding.claim.covers[name])):
                continue
            if self._search({}, lambda e, name=name: _bool(e.claim.covers[name])) is not None:
                continue
            reach = encoding.solver(tracked=False)
            answer = self.check(reach, _bool(encoding.claim.covers[name]))
            if answer == z3.unsat:
                return Outcome(VACUOUS, reason=f"cover goal {name!r} is unreachable")
            if answer == z3.unknown:
                return Outcome(UNKNOWN, reason=f"cover goal {name!r}: {self.last_reason}")
        return None

    def _pinned_model(self, encoding: _Encoding, target: z3.BoolRef) -> bool:
        """Whether `target` holds in some model of the hypotheses with every
        size pinned to one of PINNED_RANGES: the vacuity and cover checks'
        first try, on the claim already read (the ladder reads it again per
        geometry, about 15 ms each). Over --tier all this settled 72 of the 76
        vacuity checks and 21 of the 24 cover checks. Not shared: a query
        answered from the cache skips Z3's work, and what Z3 does shifts the
        term ids that later queries see, so an entry would differ from its
        reproduce command."""
        for pins in PINNED_RANGES if encoding.sizes else ():
            solver = encoding.solver(tracked=False, limit=PINNED_RLIMIT, lemmas=False)
            solver.add(*_pinned(encoding.sizes, pins), target)
            if self.check(solver, shared=False) == z3.sat:
                return True
        return False

    def _search(self, case: dict, target, replayed: bool = False, rungs=SIZE_LADDER) -> dict | None:
        """A model of `target` in small concrete geometries: every size input
        fixed to a value of the rung before encoding (all combinations, or a
        seeded sample), so every division is by a constant and the query is
        linear. With `replayed`, only a model that replays counts."""
        sizes = [v.name for v in self.variables if v.size and v.name not in case]
        if not sizes:
            return None
        rng = random.Random(0)
        for rung in rungs:
            if len(rung) ** len(sizes) <= LADDER_TRIES:
                assignments = list(itertools.product(rung, repeat=len(sizes)))
            else:
                uniform = [tuple(value for _ in sizes) for value in rung]
                assignments = uniform + [tuple(rng.choice(rung) for _ in sizes) for _ in range(LADDER_TRIES)]
            for assignment in assignments:
                if self.budget.remaining <= 0:
                    return None
                try:
                    encoding = self.encoding({**case, **dict(zip(sizes, assignment, strict=True))})
                except ZeroDivisionError:
                    continue
                solver = encoding.solver(tracked=False, limit=LADDER_RLIMIT, lemmas=False)
                # Not shared: over --tier all, 23 of 250 ladder queries were
                # answered before, sparing 75,000 rlimit in all; their keys
                # cost about 0.5 s.
                if self.check(solver, target(encoding), shared=False) == z3.sat:
                    values = encoding.values(solver.model())
                    if not replayed or replay(self.formula, self.variant, values, self.drop)[0]:
                        return values
        return None

    def _refuted(self, values: dict, case: dict, text: str = "") -> Outcome:
        """REFUTED if `values` replay, else ERROR. `text`: the query whose
        model they are; without one (the probe, the ladder), the exported
        query is the counterexample's: the obligation's full query with every
        input set to its value, sat."""
        replays, why = replay(self.formula, self.variant, values, self.drop)
        if not replays:
            queries = [self._query(case, "sat", text)] if text else []
            return Outcome(
                ERROR, counterexample=values, reason=f"counterexample does not replay: {why}", queries=queries
            )
        text = text or self._counterexample_text(case, values)
        return Outcome(REFUTED, counterexample=values, reason=why, queries=[self._query(case, "sat", text)])

    def _counterexample_text(self, case: dict, values: dict) -> str:
        encoding = self.encoding(case)
        query = encoding.solver(tracked=False)
        query.add(z3.Not(encoding.goal), *(encoding.inputs[v.name] == values[v.name] for v in encoding.free))
        return query.to_smt2()


class _DeletionQueries:
    """The deletion queries of one case: the hypotheses in `kept` other than
    `name`, and the negated goal, satisfiable exactly when `name` is needed.
    `name` negated too: the proof shows every model of the rest that misses
    the goal violates it, so the query is equisatisfiable, and the solver
    starts from the violation.

    One solver serves every hypothesis's query: each hypothesis, and its
    negation, is asserted behind a literal, and a query picks them by
    assumption. Over --tier all this gave the same answers as a fresh solver
    per query, in 3.7 s instead of 5.9 s; with the sizes pinned, 2 ms a query
    instead of 8 ms. Not through the query cache: these solvers differ per
    case, and a key costs about what a pinned query does."""

    def __init__(self, problem: _Problem, encoding: _Encoding, negated_goal: z3.BoolRef) -> None:
        self.problem, self.encoding, self.negated_goal = problem, encoding, negated_goal
        self.solvers: dict[tuple[int, int] | None, z3.Solver] = {}
        self.holds = {name: z3.Bool(f"deletion holds: {name}") for name in encoding.hypotheses}
        self.fails = {name: z3.Bool(f"deletion fails: {name}") for name in encoding.hypotheses}

    def check(self, kept: dict, name: str, limit: int) -> z3.CheckSatResult:
        """The full query, within `limit`."""
        return self._check(self._solver(None), kept, name, limit)

    def needed_when_pinned(self, kept: dict, name: str) -> bool:
        """Whether the query has a model with every size within one of
        PINNED_RANGES."""
        for pins in PINNED_RANGES if self.encoding.sizes else ():
            if self._check(self._solver(pins), kept, name, PINNED_RLIMIT) == z3.sat:
                return True
        return False

    def _check(self, solver: z3.Solver, kept: dict, name: str, limit: int) -> z3.CheckSatResult:
        """Capped per check, as a fresh solver would be: by `limit` and by
        what is left of the obligation's budget."""
        budget = self.problem.budget
        solver.set("rlimit", max(min(limit, budget.remaining), 1))
        answer = solver.check(*(self.holds[n] for n in kept if n != name), self.fails[name])
        budget.charge(solver)
        return answer

    def _solver(self, pins: tuple[int, int] | None) -> z3.Solver:
        """With `pins` (low, high), every size in that range. The lemma
        families are left out: with one value the query is linear, and
        unpinned they cost more than they help. Over --tier all under three
        seeds, the full deletion queries without them took 10% less rlimit
        for the whole run, and decided more: 38, 44 and 47 hypotheses left
        unconfirmed, against 39, 52 and 58 with them."""
        if pins not in self.solvers:
            solver = self.encoding.solver(tracked=False, only=set(), lemmas=False)
            solver.add(self.negated_goal)
            if pins is not None:
                solver.add(*_pinned(self.encoding.sizes, pins))
            for name, hypothesis in self.encoding.hypotheses.items():
                solver.add(z3.Implies(self.holds[name], hypothesis), z3.Implies(self.fails[name], z3.Not(hypothesis)))
            self.solvers[pins] = solver
        return self.solvers[pins]


@contextlib.contextmanager
def _global_parameters(options: Sequence[tuple[str, object]]):
    """Z3 parameters set for one obligation and restored after it. Global:
    some (the SAT core's) are read only from the global configuration, and a
    worker process decides many obligations in turn."""
    saved = []
    try:
        for name, value in options:
            try:
                saved.append((name, z3.get_param(name)))
            except z3.Z3Exception:
                raise ValueError(f"unknown Z3 parameter {name!r}") from None
            z3.set_param(name, value)
        yield
    finally:
        for name, value in reversed(saved):
            z3.set_param(name, value)


def _independent_of_goal(encoding: _Encoding, simplified: dict[str, z3.BoolRef]) -> set[str]:
    """The hypotheses that read nothing the goal reads, not even through
    other hypotheses (arith's footprint: inputs and witnesses): the goal's
    footprint grows by that of each conjunct of a hypothesis that shares
    some of it. The rest prove the goal if all of them do. The hypotheses
    are consistent (the vacuity check), and the definitions of the witnesses
    have a model for any inputs (the lemma families follow from them), so a
    model of the rest that breaks the goal combines with one of the dropped
    hypotheses on inputs and witnesses of their own. `simplified`: the
    hypotheses, simplified in this case."""
    context = encoding.context
    reads = {
        name: [context.footprint(c) for c in (h.children() if z3.is_and(h) else [h])] for name, h in simplified.items()
    }
    reached = context.footprint(encoding.goal)
    grown = True
    while grown:
        grown = False
        for read in (r for conjuncts in reads.values() for r in conjuncts):
            if read & reached and not read <= reached:
                reached |= read
                grown = True
    return {name for name, conjuncts in reads.items() if not any(r & reached for r in conjuncts)}


def _pinned(sizes, pins: tuple[int, int]) -> list[z3.BoolRef]:
    low, high = pins
    return [size == low if low == high else z3.And(low <= size, size <= high) for size in sizes]


def standard_smt2(text: str, answer: str) -> str:
    """A solver's to_smt2() text as a standard SMT-LIB 2.6 script: the logic
    declared (integers, nonlinear, no quantifiers), the answer Z3 gave as its
    status, one (check-sat). Z3 writes only declarations and assertions in
    between, with let-names that are plain SMT-LIB symbols."""
    body = text.removeprefix("; benchmark generated from python API\n").removeprefix("(set-info :status unknown)\n")
    head, found, tail = body.rpartition("(check-sat)")
    body = head if found else body
    status = answer if answer in ("sat", "unsat") else "unknown"
    return (
        f"(set-info :smt-lib-version 2.6)\n(set-logic QF_NIA)\n(set-info :status {status})\n{body}(check-sat)\n(exit)\n"
    )


def _smt2_value(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _case_label(case: dict) -> str:
    return f"case {', '.join(f'{k}={v}' for k, v in case.items())}: " if case else ""


def _anything(encoding: _Encoding) -> z3.BoolRef:
    return z3.BoolVal(True)


def _assert_all(solver: z3.Solver, formulas: Sequence[z3.BoolRef]) -> None:
    """solver.add(*formulas) for formulas known to be Bool terms of the
    solver's context, without z3's per-argument coercion (sort checks through
    the C API): about 22,000 definitions are asserted over --tier all."""
    context = solver.ctx.ref()
    for formula in formulas:
        z3.Z3_solver_assert(context, solver.solver, formula.as_ast())


def _bool(x) -> z3.BoolRef:
    return x if isinstance(x, z3.ExprRef) else z3.BoolVal(bool(x))
