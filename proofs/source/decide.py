"""Deciding an equivalence path by path.

One query over the whole if-then-else of a shipped function's paths against
the model's term ran out of budget (20M rlimit) for VALID and the split; a
query per path, its condition among the hypotheses, fixes most branches of
both readings and is decided in milliseconds. PROVED when every path's query
is unsat; a model of one is replayed on ints (the model and the shipped code
run concretely) before it is reported as REFUTED.
"""

from __future__ import annotations

import itertools
import random
import time
from dataclasses import dataclass, field

import z3

from models import arith
from models.variants import BASELINE
from proofs import interrupts
from proofs.solver import ERROR, PROVED, QUERY_PARAMETERS, REFUTED, UNKNOWN, Kind, replay, symbolic_inputs
from proofs.source import reading
from proofs.source.equivalence import Subject, exploring_under

PATH_RLIMIT = 2_000_000


@dataclass
class Verdict:
    verdict: str
    paths: int = 0
    seconds: float = 0.0
    counterexample: dict | None = None
    values: tuple | None = None  # (left, right) on the counterexample
    reason: str = ""
    undecided_paths: list[int] = field(default_factory=list)
    exploration: object = None  # the left reading's paths (paths.Exploration)
    hypotheses: dict = field(default_factory=dict)  # the domain, as terms of `inputs`
    inputs: dict = field(default_factory=dict)


def equivalence(subject: Subject, left, right=None, rlimit: int = PATH_RLIMIT) -> Verdict:
    """left's shipped reading against the model (right None) or right's."""
    started = time.perf_counter()
    try:
        verdict = _decide(subject, left, right, rlimit)
    except reading.UnknownReading as refusal:
        verdict = Verdict(UNKNOWN, reason=f"the executor refused: {refusal}")
    except Exception as error:  # an executor bug surfaces as ERROR, never as a verdict
        interrupts.raise_if_requested()  # not an interrupt that ctypes wrapped
        verdict = Verdict(ERROR, reason=f"{type(error).__name__}: {error}")
    verdict.seconds = time.perf_counter() - started
    return verdict


def _decide(subject: Subject, left, right, rlimit: int) -> Verdict:
    # The symbolic executor builds its terms in z3's main context (proofs/source/proxy.py).
    x = symbolic_inputs(subject.variables, z3.main_ctx())
    with arith.symbolic_context() as context, reading.capture() as built:
        hypotheses = subject.domain(x)
        with exploring_under(hypotheses.values()):
            subject.shipped(left, x)
            other = subject.model(x) if right is None else subject.shipped(right, x)
        shipped = built[0]
        returned = shipped.exploration.returned
        found = {"exploration": shipped.exploration, "hypotheses": hypotheses, "inputs": x}
        domain = [h for h in hypotheses.values() if isinstance(h, z3.BoolRef)]
        undecided = []
        for i, path in enumerate(returned):
            answer = _check_path(context, x, subject, path, shipped.value, other, domain, rlimit)
            if answer is None:
                undecided.append(i)
                continue
            if answer is z3.unsat:
                continue
            values = _values(answer, x, subject.variables)
            holds, _ = replay(subject.formula(left, right), BASELINE, values)
            if holds:
                difference = subject.difference(left, right, values)
                return Verdict(REFUTED, len(returned), counterexample=values, values=difference, **found)
            undecided.append(i)  # a model that does not replay decides nothing
    if undecided:
        values = _probe(subject, left, right)
        if values is not None:
            difference = subject.difference(left, right, values)
            return Verdict(REFUTED, len(returned), counterexample=values, values=difference, **found)
        return Verdict(
            UNKNOWN,
            len(returned),
            reason=f"{len(undecided)} of {len(returned)} paths undecided within rlimit {rlimit:,}",
            undecided_paths=undecided,
            **found,
        )
    return Verdict(PROVED, len(returned), **found)


PROBES = 3000


def _probe(subject: Subject, left, right, tries: int = PROBES) -> dict | None:
    """Random small inputs in the domain, run concretely on both readings:
    what a symbolic divisor hides from the solver (a nonlinear search) is
    often a few tokens away, where random testing finds it at once.
    Seeded: the same run finds the same input."""
    rng = random.Random(0)
    formula = subject.formula(left, right)
    for _ in range(tries):
        values = {}
        for v in subject.variables:
            if v.kind is Kind.BOOL:
                values[v.name] = rng.random() < 0.5
            else:
                values[v.name] = rng.randint(1, 16) if v.size else rng.randint(0, 48)
        if not all(subject.domain(values).values()):
            continue
        holds, _ = replay(formula, BASELINE, values)
        if holds:
            return values
    return None


def _values(model: z3.ModelRef, x: dict, variables) -> dict:
    values = {}
    for v in variables:
        value = model.eval(x[v.name], model_completion=True)
        values[v.name] = z3.is_true(value) if v.kind is Kind.BOOL else value.as_long()
    return values


def _attempts(context, extra=(), read=()):
    """The definition sets to try in turn: the witness definitions with the
    uniqueness lemmas first, which on 0.33.0 decide every path the lemma
    families do, in a tenth of the time (the families made most of the
    split's paths take 0.1 to 1 s, a few near the budget). With a subject's
    lemmas, first only the definitions the query reads, and the lemmas: the
    lemma families over every witness of every path only widen that search."""
    extra = list(extra)
    attempts = (context.witness_definitions + _uniqueness(context) + extra, context.definitions + extra)
    if not extra:
        return attempts
    return (context.definitions_of(context.owners_read([*read, *extra])) + extra, *attempts)


def _check_path(context, x, subject, path, value, other, domain, rlimit):
    shipped = value(path.value)
    goal = z3.Not(_equal(shipped, other))
    facts = z3.And(*domain, path.formula)
    extra = subject.lemmas(context, x, facts, shipped, other) if subject.lemmas is not None else ()
    attempts = _attempts(context, extra, read=[facts, goal])
    return _check(attempts, [*domain, path.formula], goal, _flags(x, subject), rlimit, case_split=True)


def _flags(x: dict, subject: Subject) -> list:
    return [x[v.name] for v in subject.variables if v.kind is Kind.BOOL]


def _solver(definitions, rlimit: int) -> z3.Solver:
    solver = z3.SimpleSolver()
    for name, value in QUERY_PARAMETERS:
        solver.set(name, value)
    solver.set("rlimit", rlimit)
    solver.add(*definitions)
    return solver


def _first_decided(attempts, facts, goal):
    """A model or unsat from the first of the (definitions, rlimit) attempts
    that decides `facts` with `goal`, tried in turn; None when none does. A
    lazy iterable builds each set of definitions only when it is tried."""
    for definitions, rlimit in attempts:
        solver = _solver(definitions, rlimit)
        solver.add(*facts, goal)
        answer = solver.check()
        if answer == z3.sat:
            return solver.model()
        if answer == z3.unsat:
            return z3.unsat
    return None


def _check(attempts, facts, goal, flags, rlimit, case_split=False, direct=True):
    """unsat, a model, or None (undecided). Each set of definitions in turn;
    then, if `case_split`, with the first set, case by case over the Bool
    inputs (a fixed flag erases the merged branches it guards): the split's
    two paths with EAGLE drop and an internal checkpoint are decided so, and
    stay unknown without it. Facts are asserted, not passed as assumptions:
    Z3 preprocesses assertions only, and as assumptions most of the split's
    paths went undecided. `direct=False` goes to the case split at once."""
    answer = _first_decided(((d, rlimit) for d in attempts), facts, goal) if direct else None
    if answer is not None or not case_split:
        return answer
    for values in itertools.product((False, True), repeat=len(flags)):
        substitution = list(zip(flags, map(z3.BoolVal, values), strict=True))
        solver = _solver(attempts[0], rlimit)
        solver.add(*(f if value else z3.Not(f) for f, value in zip(flags, values, strict=True)))
        solver.add(*(z3.simplify(z3.substitute(t, *substitution)) for t in (*facts, goal)))
        answer = solver.check()
        if answer == z3.sat:
            return solver.model()
        if answer == z3.unknown:
            return None
    return z3.unsat


def _uniqueness(context: arith.SymbolicContext) -> list[z3.BoolRef]:
    """Floor division is unique: two witnesses of equal dividends and equal
    nonzero divisors are equal. The two readings divide the same quantities
    written differently (vLLM's `x % A` against the model's `x % (A or 1)`),
    and without this fact each such pair is a nonlinear problem of its own."""
    witnessed = context._witnessed
    lemmas = []
    for i, (x1, d1, q1, r1) in enumerate(witnessed):
        for x2, d2, q2, r2 in witnessed[i + 1 :]:
            if not _may_equal(d1, d2):
                continue
            same = z3.And(x1 == x2, d1 == d2, d1 != 0)
            lemmas.append(z3.Implies(same, z3.And(q1 == q2, r1 == r2)))
    return lemmas


def _may_equal(d1: z3.ExprRef, d2: z3.ExprRef) -> bool:
    """Divisors that are the same term, or one a branch of the other."""
    if d1.eq(d2):
        return True
    for outer, inner in ((d1, d2), (d2, d1)):
        if z3.is_app_of(outer, z3.Z3_OP_ITE) and any(c.eq(inner) for c in outer.children()[1:]):
            return True
    return False


def _equal(a, b):
    if isinstance(a, tuple):
        return z3.And(*(_equal(p, q) for p, q in zip(a, b, strict=True)))
    return a == b
