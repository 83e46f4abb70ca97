"""Every feasible path of a function run on symbolic values.

The function is run again and again from the start. Each time a symbolic
condition's truth is asked (`decide`), the oracle either replays the choice
the current prefix recorded or, at a fresh branch, asks Z3 which outcomes are
feasible under the path so far: if both are, it takes True and schedules the
prefix with False. Depth first, each feasible path once; a branch Z3 cannot
decide within its budget is explored as feasible (never pruned on a guess).
"""

from __future__ import annotations

import contextlib
import contextvars
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

import z3

from models import arith
from proofs.runtime import interrupts
from proofs.source import budget

CHECK_RLIMIT = 2_000_000  # per feasibility check
# per pruned check: small queries; a larger budget let one nonlinear check
# of the page assert run for minutes (Z3 checks the limit coarsely there)
PRUNED_RLIMIT = 200_000
BARE_RLIMIT = 50_000  # the check without definitions that goes first
MAX_PATHS = 20_000

_oracle: contextvars.ContextVar[_Oracle | None] = contextvars.ContextVar("gridproof_path_oracle", default=None)


@dataclass
class Branch:
    """A fresh branch point: where it was asked, and which outcomes were
    found infeasible (an assert's failing side, a zero divisor, ...)."""

    file: str
    line: int
    kind: str  # "branch", or "division" for a divisor's zero test
    infeasible: tuple[bool, ...]
    undecided: bool  # a feasibility check ended unknown


@dataclass
class Path:
    condition: list[z3.BoolRef]
    outcome: str  # "return", "raise" or "refused"
    value: object = None  # the return value, or the exception
    line: int | None = None  # where it raised or was refused
    file: str | None = None
    undecided: bool = False  # feasibility of some choice was unknown

    @property
    def formula(self) -> z3.BoolRef:
        return z3.And(*self.condition) if self.condition else z3.BoolVal(True)


@dataclass
class Exploration:
    paths: list[Path] = field(default_factory=list)
    branches: list[Branch] = field(default_factory=list)
    checks: int = 0

    @property
    def returned(self) -> list[Path]:
        return [p for p in self.paths if p.outcome == "return"]

    @property
    def raised(self) -> list[Path]:
        return [p for p in self.paths if p.outcome == "raise"]

    @property
    def refused(self) -> list[Path]:
        return [p for p in self.paths if p.outcome == "refused"]


class PathLimit(Exception):
    pass


class Unreachable(Exception):
    """Raised inside `assuming(c)` when c contradicts the path: the side of
    a merged expression that cannot be taken here."""


class _Infeasible(Exception):
    """A replayed prefix turned out contradictory (a choice made while a
    check was undecided): the path does not exist."""


# A function's lemma provider: (context, owners) -> valid facts about the
# witnesses of those owners (proofs/source/platform.py: page_lemmas).
Lemmas = Callable[[arith.SymbolicContext, set[int]], list[z3.BoolRef]]


class _Feasibility:
    """Each check goes first to a fresh solver holding only the definitions
    the path and the condition read (exact: a witness nothing mentions can
    satisfy its definition), with `lemmas` about them where given. Only when
    that ends unknown is it asked of one solver kept for the whole
    exploration, every witness definition at its base and each path
    condition a tracked literal.

    The kept solver alone made the run's speed depend on everything it had
    been asked before: an edit of the split was decided in 20 s or ran out
    of its 120 s budget depending on which modules the process had imported
    first. And its every witness of every path, nonlinear definitions no
    path here reads among them, made most of `_align_hybrid_block_size`'s
    checks end unknown (that function's checks, with lemmas, are never
    asked of it)."""

    def __init__(
        self, assumptions: list[z3.BoolRef], context: arith.SymbolicContext, lemmas: Lemmas | None = None
    ) -> None:
        self.assumptions = assumptions
        self.lemmas = lemmas
        self.solver = z3.SimpleSolver()
        self.solver.set("arith.nl.grobner", False)
        for a in assumptions:
            self.solver.add(a)
        self.context = context
        self._defined = 0
        # By term id, the term kept alive with its literal: Z3 reuses the id
        # of a freed term.
        self._literals: dict[int, tuple[z3.BoolRef, z3.BoolRef]] = {}
        self.checks = 0

    def literal(self, condition: z3.BoolRef) -> z3.BoolRef:
        key = condition.get_id()
        if key not in self._literals:
            lit = z3.Bool(f"_path{len(self._literals)}")
            self.solver.add(z3.Implies(lit, condition))
            self._literals[key] = (condition, lit)
        return self._literals[key][1]

    def feasible(self, path: list[z3.BoolRef], condition: z3.BoolRef) -> z3.CheckSatResult:
        """z3.sat, z3.unsat or z3.unknown: whether `condition` can hold on `path` under the assumptions. A
        fresh solver decides it; without lemmas, its unknown goes to the solver kept for the exploration."""
        simplified = z3.simplify(condition)
        if z3.is_false(simplified):
            return z3.unsat
        if self._contradicts(path, condition):
            return z3.unsat
        self.checks += 1
        answer = self._fresh(path, condition)
        if answer != z3.unknown or self.lemmas is not None:
            return answer
        definitions = self.context.witness_definitions
        for d in definitions[self._defined :]:
            self.solver.add(d)
        self._defined = len(definitions)
        self.solver.set("rlimit", CHECK_RLIMIT)
        return budget.check(self.solver, *(self.literal(c) for c in path), self.literal(condition))

    def _fresh(self, path: list[z3.BoolRef], condition: z3.BoolRef) -> z3.CheckSatResult:
        owners = self.context.owners_read([*path, condition])
        solver = z3.SimpleSolver()
        solver.add(*self.assumptions, *self.context.definitions_of(owners))
        if self.lemmas is None:
            solver.set("arith.nl.grobner", False)
            solver.set("rlimit", CHECK_RLIMIT)
        else:
            solver.set("rlimit", PRUNED_RLIMIT)
            solver.add(*self.lemmas(self.context, owners))
        solver.add(*path, condition)
        return budget.check(solver)

    def _contradicts(self, path: list[z3.BoolRef], condition: z3.BoolRef) -> bool:
        """Whether the condition contradicts the domain and the path with no
        witness definition at all (a divisor's zero test where the domain
        makes it positive): unsat with fewer facts is unsat with all, and a
        check over every nonlinear definition once ran out of budget there."""
        solver = z3.SimpleSolver()
        solver.set("rlimit", BARE_RLIMIT)
        solver.add(*self.assumptions, *path, condition)
        return budget.check(solver) == z3.unsat


class _Oracle:
    def __init__(self, forced: list[bool], feasibility: _Feasibility, exploration: Exploration, files: set[str]):
        self.forced = forced
        self.taken: list[bool] = []
        self.condition: list[z3.BoolRef] = []
        self.pending: list[list[bool]] = []
        self.feasibility = feasibility
        self.exploration = exploration
        self.files = files
        self.undecided = False
        self.scope: list[z3.BoolRef] = []  # conditions assumed by merged expressions

    def _site(self) -> tuple[str, int]:
        frame = sys._getframe(3)
        while frame is not None and frame.f_code.co_filename not in self.files:
            frame = frame.f_back
        if frame is None:
            return "?", 0
        return frame.f_code.co_filename, frame.f_lineno

    def decide(self, condition: z3.BoolRef, kind: str) -> bool:
        """The outcome of the next branch: the forced prefix's choice while it lasts, else True where both are
        feasible (the prefix with False left pending), else the feasible one; a fresh branch is recorded with
        its site. Neither feasible raises Unreachable inside `assuming`, else the path is dropped as
        infeasible."""
        k = len(self.taken)
        if k < len(self.forced):
            choice = self.forced[k]
        else:
            outcomes = {}
            for value in (True, False):
                literal = condition if value else z3.Not(condition)
                outcomes[value] = self.feasibility.feasible(self.condition + self.scope, literal)
            undecided = z3.unknown in outcomes.values()
            self.undecided |= undecided
            infeasible = tuple(v for v, answer in outcomes.items() if answer == z3.unsat)
            if len(infeasible) == 2:
                if self.scope:
                    raise Unreachable()
                raise _Infeasible()
            file, line = self._site()
            self.exploration.branches.append(Branch(file, line, kind, infeasible, undecided))
            if not infeasible:
                self.pending.append([*self.taken, False])
                choice = True
            else:
                choice = not infeasible[0]
        self.taken.append(choice)
        literal = condition if choice else z3.Not(condition)
        # A choice made while a merged expression assumes its condition
        # constrains the path only under that condition.
        self.condition.append(z3.Implies(z3.And(*self.scope), literal) if self.scope else literal)
        return choice


def decide(condition: z3.BoolRef, kind: str = "branch") -> bool:
    """The truth of a symbolic condition on the current path."""
    oracle = _oracle.get()
    if oracle is None:
        raise RuntimeError("a symbolic condition was branched on outside an exploration")
    budget.poll()
    simplified = z3.simplify(condition)
    if z3.is_true(simplified):
        return True
    if z3.is_false(simplified):
        return False
    return oracle.decide(condition, kind)


@contextlib.contextmanager
def assuming(condition: z3.BoolRef):
    """Within the block, branches are decided with `condition` assumed."""
    oracle = _oracle.get()
    if oracle is None:
        raise RuntimeError("a symbolic condition was assumed outside an exploration")
    oracle.scope.append(condition)
    try:
        yield
    finally:
        oracle.scope.pop()


def explore(
    run: Callable[[], object],
    classify: Callable[[BaseException], tuple[str, str, int] | None],
    files: set[str],
    assumptions: list[z3.BoolRef] = (),
    max_paths: int = MAX_PATHS,
    lemmas: Lemmas | None = None,
) -> Exploration:
    """Every feasible path of `run()`, which must be deterministic given the
    oracle's answers (it rebuilds its stand-ins each time). `classify` maps
    an exception to ("raise" | "refused", file, line), or None to let it
    propagate. `files`: the source files whose lines name branch sites.
    `lemmas`: valid facts about the witnesses, for the feasibility checks.
    Must be called inside an `arith.symbolic_context()`."""
    context = arith._context()
    feasibility = _Feasibility(list(assumptions), context, lemmas)
    exploration = Exploration()
    stack: list[list[bool]] = [[]]
    while stack:
        if len(exploration.paths) >= max_paths:
            raise PathLimit(f"more than {max_paths} paths")
        budget.poll()
        forced = stack.pop()
        oracle = _Oracle(forced, feasibility, exploration, files)
        token = _oracle.set(oracle)
        try:
            value = run()
            path = Path(list(oracle.condition), "return", value)
        except (_Infeasible, Unreachable):
            path = None
        except Exception as error:  # what the shipped code raised is a result
            interrupts.raise_if_requested()  # not an interrupt that ctypes wrapped
            kind = classify(error)
            if kind is None:
                raise
            outcome, file, line = kind
            path = Path(list(oracle.condition), outcome, error, line=line, file=file)
        finally:
            _oracle.reset(token)
        if path is not None:
            path.undecided = oracle.undecided
            exploration.paths.append(path)
        stack.extend(reversed(oracle.pending))
    exploration.checks = feasibility.checks
    return exploration
