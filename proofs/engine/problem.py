"""One obligation as its queries are posed to Z3: the claim read with Z3
terms for its inputs (Encoding), the rlimit and wall-clock budget the
obligation is decided within (Budget), the claim at each recorded input on
the concrete model (RecordedReading), and the Problem that holds them and
poses each query, through the query cache. The decision procedure
(proofs/engine/solver.py), the cheap refuters (proofs/engine/refutation.py) and the
minimisation of the hypotheses a proof used (proofs/engine/minimisation.py) all
work on a Problem; this module imports none of them."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import z3
from z3 import z3core

from models import arith
from proofs.engine import queries
from proofs.engine.claims import Claim, Formula, Kind, Var, hypotheses_false, read_recording_crashes, symbolic_inputs
from proofs.engine.options import DEFAULT_WALL_LIMIT, SolverOptions
from proofs.engine.queries import Answer, QueryCache
from proofs.runtime import interrupts
from proofs.runtime.watchdog import WATCHDOG

# How a query is solved, a solver made in the obligation's Z3 context.
# "core": Z3's SMT core alone (SimpleSolver). "default":
# Z3's Solver(), which picks a strategy by the query's logic; for these
# nonlinear queries that strategy was measured slower on most obligations, its
# answers varied from run to run (some of its steps are bounded by wall-clock
# time), and more deletion queries ended unknown. No obligation uses it since
# the SMT core decides them all without Groebner bases (below).
STRATEGIES = {
    "core": lambda ctx: z3.SimpleSolver(ctx=ctx),
    "default": lambda ctx: z3.Solver(ctx=ctx),
}
# "linear": the SMT core after Z3's equation solving and simplification, for
# queries whose divisors are all constants (one deployment's hit law): linear,
# and there 5 to 20 times cheaper than the core alone (proofs/hitlaw.py).
STRATEGIES["linear"] = lambda ctx: z3.Then(
    "simplify", "propagate-values", "solve-eqs", "elim-uncnstr", "smt", ctx=ctx
).solver()

# Z3 parameters of every query (the SMT core's names; written into the
# exported SMT-LIB with the "smt." prefix). Without the Groebner-basis step of
# Z3's nonlinear solver the whole catalogue is decided on the SMT core, and sooner.
QUERY_PARAMETERS = (("arith.nl.grobner", False),)


def _resource_count(ctx: z3.Context, checked: z3.Solver | None = None) -> int:
    """Z3's resource counter for the context `ctx`. It grows with every check,
    simplification and unsat-core minimisation, cumulatively across solvers,
    and any solver's statistics read it as it stands: those of `checked`, or
    else of a fresh solver after a trivial check (a millisecond). Read from
    one solver kept for the purpose instead, the count no longer takes the
    fresh solver's own, the next obligation of the entry meets other term
    ids, and over --tier all 11 more hypotheses were left unconfirmed."""
    if checked is None:
        checked = z3.Solver(ctx=ctx)
        checked.check()
    return _statistic(checked, "rlimit count")


def _statistic(solver: z3.Solver, key: str) -> int:
    """One of `solver`'s statistics, read from the end, where Z3 lists the
    resource counter: Statistics.get_key_value converts every key first, and
    a solver after a long check has a hundred of them."""
    ctx = solver.ctx.ref()
    statistics = z3core.Z3_solver_get_statistics(ctx, solver.solver)
    z3core.Z3_stats_inc_ref(ctx, statistics)
    try:
        for i in reversed(range(z3core.Z3_stats_size(ctx, statistics))):
            if z3core.Z3_stats_get_key(ctx, statistics, i) == key:
                if z3core.Z3_stats_is_uint(ctx, statistics, i):
                    return z3core.Z3_stats_get_uint_value(ctx, statistics, i)
                return int(z3core.Z3_stats_get_double_value(ctx, statistics, i))
    finally:
        z3core.Z3_stats_dec_ref(ctx, statistics)
    raise KeyError(key)


class Budget:
    """An obligation's rlimit: everything Z3 counted in its context since it began."""

    def __init__(
        self, rlimit: int, ctx: z3.Context, counted: bool = True, wall_limit: float = DEFAULT_WALL_LIMIT
    ) -> None:
        """`counted` False: for a claim only read, never decided (no count to start from)."""
        self.limit = rlimit
        self.ctx = ctx
        self.start = _resource_count(ctx) if counted else 0
        self.used = 0
        self.wall_limit = wall_limit
        self.deadline = time.monotonic() + wall_limit

    def check(self, solver: z3.Solver, *assumptions) -> z3.CheckSatResult:
        """solver.check within the wall-clock outer limit (proofs/runtime/watchdog.py);
        unknown without a check once the limit is past."""
        if self.out_of_time():
            return z3.unknown
        with WATCHDOG.watching(self.ctx, self.deadline):
            answer = solver.check(*assumptions)
        interrupts.raise_if_requested()  # an unknown that was a Ctrl-C is no answer
        return answer

    def out_of_time(self) -> bool:
        return time.monotonic() >= self.deadline

    def timed_out(self, reason: str) -> str:
        """`reason` for an unknown answer, saying so when the outer limit stopped it."""
        if self.out_of_time():
            return f"the wall-clock outer limit of {self.wall_limit:g} s was reached ({reason})"
        return reason

    @property
    def remaining(self) -> int:
        return self.limit - self.used

    def charge(self, checked: z3.Solver | None = None) -> None:
        """`checked`: the solver just checked, when nothing has run since."""
        self.used = _resource_count(self.ctx, checked) - self.start


class Encoding:
    """The claim read with Z3 terms for the inputs not fixed to values."""

    def __init__(self, problem: Problem, fixed: dict, total_lcm: bool = False) -> None:
        self.fixed = fixed
        self.free = [v for v in problem.variables if v.name not in fixed]
        self.inputs = {**symbolic_inputs(self.free, problem.context), **fixed}
        self.sizes = [self.inputs[v.name] for v in self.free if v.size]  # the size inputs left symbolic
        self.ints = [self.inputs[v.name] for v in self.free if v.kind is Kind.INT]  # every Int input left symbolic
        with arith.symbolic_context(naive=problem.options.naive, total_lcm=total_lcm) as context:
            self.claim = problem.formula(problem.variant, dict(self.inputs))
        unknown = problem.drop - set(self.claim.hypotheses)
        if unknown:
            raise ValueError(f"cannot drop unknown hypotheses {sorted(unknown)}")
        if not any(type(value) is int for value in fixed.values()):
            # With sizes pinned (the probe, the ladder), distinct conjuncts coincide as a matter of course.
            _distinct_conjuncts(self.claim, problem.context)
        self.context = context
        if problem.hypothesis_names is None:
            problem.hypothesis_names = list(self.claim.hypotheses)
        ctx = problem.context
        self.hypotheses = {n: as_bool(h, ctx) for n, h in self.claim.hypotheses.items() if n not in problem.drop}
        self.goal = z3.And(as_bool(self.claim.goal, ctx), *context.obligations)
        context.prune([self.goal, *self.hypotheses.values(), *self.claim.covers.values()])
        self.problem = problem
        self._pinned: dict[tuple[int, int], tuple[z3.Solver, dict[int, z3.BoolRef]]] = {}

    def solver(
        self, tracked: bool, limit: int | None = None, only: set[str] | None = None, lemmas: bool | None = None
    ) -> z3.Solver:
        """Definitions and hypotheses (those named in `only`, or all) asserted,
        rlimit set; the lemma families as the problem says unless `lemmas`."""
        budget, options = self.problem.budget, self.problem.options
        solver = STRATEGIES[options.strategy](self.problem.context)
        solver.rlimit_cap = max(min(budget.remaining, limit or budget.remaining), 1)
        solver.set("rlimit", solver.rlimit_cap)
        solver.set("core.minimize", True)
        for name, value in QUERY_PARAMETERS:
            solver.set(name, value)
        if options.seed is not None:
            solver.set("random_seed", options.seed)
        lemmas = options.lemmas if lemmas is None else lemmas
        assert_all(solver, self.context.definitions if lemmas else self.context.witness_definitions)
        for name, h in self.hypotheses.items():
            if only is not None and name not in only:
                continue
            if tracked:
                solver.assert_and_track(h, z3.Bool(f"hyp:{name}", self.problem.context))
            else:
                solver.add(h)
        return solver

    def pinned(self, pins: tuple[int, int], target: z3.BoolRef) -> tuple[z3.Solver, tuple[z3.BoolRef, ...]]:
        """A solver of the hypotheses with every size within `pins`, made
        once per encoding and range until released, and the assumption under
        which a check of it asks for `target` too (none for a target true
        outright): every cover goal read in one case poses its pinned
        queries to the one solver."""
        if pins not in self._pinned:
            solver = self.solver(tracked=False, lemmas=False)
            solver.add(*pinned(self.sizes, pins))
            self._pinned[pins] = (solver, {})
        solver, literals = self._pinned[pins]
        if z3.is_true(target):
            return solver, ()
        key = target.get_id()
        if key not in literals:
            literals[key] = z3.Bool(f"pinned target {len(literals)}", self.problem.context)
            solver.add(z3.Implies(literals[key], target))
        return solver, (literals[key],)

    def release_pinned(self) -> None:
        self._pinned.clear()

    def inputs_read(self) -> set[str]:
        """The free inputs the hypotheses and the goal read, directly or
        through the witnesses' definitions."""
        read = self.context.footprint(z3.And(self.goal, *self.hypotheses.values()))
        return {v.name for v in self.free if self.inputs[v.name].get_id() in read}

    def values(self, model: z3.ModelRef) -> dict[str, int | bool]:
        values = dict(self.fixed)
        for v in self.free:
            value = model.eval(self.inputs[v.name], model_completion=True)
            values[v.name] = z3.is_true(value) if v.kind is Kind.BOOL else value.as_long()
        return {v.name: values[v.name] for v in self.problem.variables}


@dataclass(frozen=True)
class RecordedReading:
    """A recorded input and the claim the concrete model reads there."""

    values: dict
    claim: Claim
    crashed: bool  # the model divided by zero on the way: what follows is not the model's

    def in_case(self, case: dict) -> bool:
        return all(self.values[name] == value for name, value in case.items())

    def admitted(self, drop=()) -> bool:
        """Every hypothesis but those in `drop` holds."""
        return not hypotheses_false(self.claim, drop)


@dataclass
class Problem:
    """One obligation: the formula, its inputs and the variant it is read
    for, the options and budget it is decided under, and the Z3 context
    every term and solver of it is made in. Its encodings and recorded
    readings are made once and kept; its queries are posed through `check`.
    The decision procedure is proofs/engine/solver.py's."""

    formula: Formula
    variables: tuple[Var, ...]
    variant: object
    options: SolverOptions
    budget: Budget
    context: z3.Context  # where every term and solver of this obligation is made
    reused: int = 0
    hypothesis_names: list[str] | None = None
    _encodings: dict = field(default_factory=dict)
    _readings: list | None = None

    @property
    def drop(self) -> frozenset[str]:
        return frozenset(self.options.drop)

    @property
    def seed(self) -> int | None:
        return self.options.seed

    def encoding(self, fixed: dict) -> Encoding:
        """The claim read with the `fixed` inputs, built once per problem: the
        vacuity check, the ladder and each cover goal read the same small
        geometries, and a cover goal without a case split reads the case's."""
        key = tuple(sorted(fixed.items()))
        if key not in self._encodings:
            try:
                self._encodings[key] = Encoding(self, fixed)
            except ZeroDivisionError as error:
                self._encodings[key] = str(error)  # raised afresh each time, not with a growing traceback
        found = self._encodings[key]
        if isinstance(found, str):
            raise ZeroDivisionError(found)
        return found

    def check(self, solver: z3.Solver, *extra, smt2: str | None = None, shared: bool = True) -> Answer:
        """The solver's answer. `smt2`: the solver's to_smt2() text, if
        already written (it keys the query cache). `shared` False keeps the
        query out of the query cache."""
        cache = queries.active.get() if shared else None
        key = ""
        if cache is not None:
            # The same text under another strategy, parameters or seed might
            # be decided where this one was not.
            options = self.options
            key = f"{options.strategy} {options.z3_parameters} {options.seed}\n{QueryCache.key(solver, extra, smt2)}"
            found = cache.lookup(key, solver.rlimit_cap)
            if found is not None:
                self.reused += 1
                return Answer(*found, key)
        before = self.budget.used
        started = not self.budget.out_of_time()
        result = self.budget.check(solver, *extra)
        self.budget.charge(solver)
        reason = ""
        if result == z3.unknown:
            reason = self.budget.timed_out(solver.reason_unknown() if started else "not started")
        answer = Answer(result, reason, self.budget.used - before, key)
        if cache is not None and not (result == z3.unknown and self.budget.out_of_time()):
            # An answer the outer limit cut short says nothing of the query under its budget.
            cache.store(key, result, solver.rlimit_cap, answer.reason, answer.cost)
        return answer

    def recorded_readings(self) -> list[RecordedReading]:
        """The claim at each recorded input of this obligation's inputs that
        the concrete model reads, divisions by zero recorded as claims.replay
        reads them; read once per problem. Where the model reads a claim
        without dividing by zero, its reading is the symbolic one's at those
        inputs (one formula, two readings)."""
        if self._readings is None:
            self._readings = []
            names = {v.name for v in self.variables}
            for pairs in self.options.recorded_inputs:
                values = dict(pairs)
                if set(values) != names:
                    continue
                claim, crashes = read_recording_crashes(self.formula, self.variant, values)
                if claim is not None:
                    self._readings.append(RecordedReading(values, claim, bool(crashes)))
        return self._readings


def pinned(sizes, pins: tuple[int, int]) -> list[z3.BoolRef]:
    """Every size in `sizes` within `pins` (low, high): the small geometries
    the pinned queries try first (proofs/engine/minimisation.py's PINNED_RANGES)."""
    low, high = pins
    return [size == low if low == high else z3.And(low <= size, size <= high) for size in sizes]


def assert_all(solver: z3.Solver, formulas: Sequence[z3.BoolRef]) -> None:
    """solver.add(*formulas) for formulas known to be Bool terms of the
    solver's context, without z3's per-argument coercion (sort checks through
    the C API): about 22,000 definitions are asserted over --tier all."""
    context = solver.ctx.ref()
    for formula in formulas:
        z3.Z3_solver_assert(context, solver.solver, formula.as_ast())


def _distinct_conjuncts(claim, ctx: z3.Context) -> None:
    """Two named goal conjuncts built as the same term: one of them was meant to say something else (a
    bound pointed at the wrong quantity), and what the manifest asks each to refute alone no longer pins
    it. Terms as built, not simplified: distinct conditions can coincide in one obligation's case."""
    seen: dict[int, str] = {}
    for name, conjunct in claim.conjuncts.items():
        term = as_bool(conjunct, ctx)
        if z3.is_true(term) or z3.is_false(term):
            continue  # constant under the inputs fixed here: compared where they are free
        if term.get_id() in seen:
            raise ValueError(f"the goal's conjuncts {seen[term.get_id()]!r} and {name!r} are the same condition")
        seen[term.get_id()] = name


def as_bool(x, ctx: z3.Context) -> z3.BoolRef:
    """A claim's hypothesis, goal or cover as a Z3 Bool of `ctx`."""
    if isinstance(x, z3.ExprRef):
        return x
    if not isinstance(x, bool):
        # Any other object would read as true: a goal that always holds.
        raise TypeError(f"a claim's hypothesis, goal or cover must be a condition, not {type(x).__name__}")
    return z3.BoolVal(x, ctx)
