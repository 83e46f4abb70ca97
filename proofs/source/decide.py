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
import time
from dataclasses import dataclass, field, replace

import z3

from models import arith
from proofs.engine.solver import ERROR, PROVED, QUERY_PARAMETERS, REFUTED, UNKNOWN, Kind, replay, symbolic_inputs
from proofs.runtime import interrupts
from proofs.source import budget, reading, search
from proofs.source.cases import split_cases
from proofs.source.equivalence import Subject, exploring_under

PATH_RLIMIT = 2_000_000
WITNESS_FIRST_RLIMIT = 500_000
PROBE_SECONDS = 4.0  # replaying inputs of one undecided path
CASES_PROBED = 24  # cases of an undecided path whose inputs are replayed


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
    """left's shipped reading against the model (right None) or right's,
    within the function's wall-clock budget (proofs/source/budget.py). What
    is left undecided, by the solver or by the budget, is searched
    concretely (proofs/source/search.py) before the verdict is UNKNOWN."""
    started = time.perf_counter()
    rlimit = max(rlimit, subject.path_rlimit)
    if right is not None and not subject.lemmas_in_diff:
        subject = replace(subject, lemmas=None)
    found: dict = {}
    try:
        with budget.function_budget() as seconds:
            verdict = _decide(subject, left, right, rlimit, found)
    except budget.OutOfTime:
        paths = found.get("paths")
        done = f", {found.get('decided', 0)} of {paths} paths decided" if paths is not None else ""
        verdict = Verdict(UNKNOWN, reason=f"the budget of {seconds:g} s per function was spent{done}")
    except reading.UnknownReading as refusal:
        verdict = Verdict(UNKNOWN, reason=f"the executor refused: {refusal}")
    except Exception as error:  # an executor bug surfaces as ERROR, never as a verdict
        interrupts.raise_if_requested()  # not an interrupt that ctypes wrapped
        verdict = Verdict(ERROR, reason=f"{type(error).__name__}: {error}")
    if verdict.verdict == UNKNOWN and "the executor refused" not in verdict.reason:
        verdict = _searched(subject, left, right, verdict, found)
    verdict.seconds = time.perf_counter() - started
    return verdict


def _searched(subject: Subject, left, right, verdict: Verdict, found: dict) -> Verdict:
    """The concrete search, on the undecided paths' regions when there are
    any: REFUTED on a hit (which replays by construction), else `verdict`."""
    violated = search.replayer(subject.formula(left, right), subject.variant)
    values = search.search(
        subject.variables,
        violated,
        domain=subject.domain,
        regions=found.get("regions", ()),
        definitions=found.get("definitions", ()),
        inputs=found.get("inputs"),
    )
    if values is None:
        verdict.reason += "; the concrete search found no difference"
        return verdict
    difference = subject.difference(left, right, values)
    extra = {k: found[k] for k in ("exploration", "hypotheses", "inputs") if k in found}
    return Verdict(
        REFUTED,
        verdict.paths,
        counterexample=values,
        values=difference,
        reason=f"found by the concrete search ({verdict.reason})",
        **extra,
    )


def _decide(subject: Subject, left, right, rlimit: int, found: dict) -> Verdict:
    # The symbolic executor builds its terms in z3's main context (proofs/source/proxy.py).
    x = symbolic_inputs(subject.variables, z3.main_ctx())
    found["inputs"] = x
    with arith.symbolic_context() as context, reading.capture() as built:
        hypotheses = subject.domain(x)
        with exploring_under(hypotheses.values()):
            subject.shipped(left, x)
            other = subject.other(left, right, x)
        project = subject.projected(left, right)
        shipped = built[0]
        returned = shipped.exploration.returned
        found.update(exploration=shipped.exploration, hypotheses=hypotheses, paths=len(returned), decided=0)
        found["definitions"] = context.witness_definitions
        domain = [h for h in hypotheses.values() if isinstance(h, z3.BoolRef)]
        same = alike(context)
        # Every path is a region to search until it is decided.
        pending = {i: z3.And(*domain, path.formula) for i, path in enumerate(returned)}
        found["regions"] = pending.values()
        extra = {k: found[k] for k in ("exploration", "hypotheses", "inputs")}
        undecided = []
        violated = search.replayer(subject.formula(left, right), subject.variant)
        for i, path in enumerate(returned):

            def probe(region=pending[i], path=path):
                """A few inputs of the path, replayed, before the costlier attempts:
                a difference Z3 cannot find within its budget is often at hand there.
                Then of each case of its merged value (the stop it ends at, ...)."""
                definitions = context.witness_definitions
                try:
                    with budget.function_budget(PROBE_SECONDS):
                        found = search.in_region(region, definitions, x, subject.variables, violated)
                        value = shipped.value(path.value)
                        if found is not None or not isinstance(value, z3.ArithRef):
                            return found
                        for case in split_cases([path], lambda _: value, [*definitions, *domain])[:CASES_PROBED]:
                            region = z3.And(*domain, case.formula)
                            found = search.in_region(region, definitions, x, subject.variables, violated, 3)
                            if found is not None:
                                return found
                except budget.OutOfTime:
                    budget.poll()  # the function's own budget, if that is what ran out
                return None

            answer = _check_path(
                context, x, subject, path, lambda v: project(shipped.value(v)), other, domain, rlimit, same, probe
            )
            if isinstance(answer, dict):
                difference = subject.difference(left, right, answer)
                reason = "found by replaying inputs of a path the solver left undecided"
                return Verdict(REFUTED, len(returned), counterexample=answer, values=difference, reason=reason, **extra)
            if answer is None:
                undecided.append(i)
                continue
            if answer is z3.unsat:
                del pending[i]
                found["decided"] += 1
                continue
            values = _values(answer, x, subject.variables)
            holds, _ = replay(subject.formula(left, right), subject.variant, values)
            if holds:
                difference = subject.difference(left, right, values)
                return Verdict(REFUTED, len(returned), counterexample=values, values=difference, **extra)
            undecided.append(i)  # a model that does not replay decides nothing
        found["regions"] = [pending[i] for i in undecided]
    if undecided:
        return Verdict(
            UNKNOWN,
            len(returned),
            reason=f"{len(undecided)} of {len(returned)} paths undecided within rlimit {rlimit:,}",
            undecided_paths=undecided,
            **extra,
        )
    return Verdict(PROVED, len(returned), **extra)


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
    # Last, the witness definitions alone: with alike divisions substituted
    # (`alike`), three paths of the PR457 split's EAGLE conversion that the
    # uniqueness lemmas and the lemma families leave undecided are unsat at
    # a fifth of the rlimit.
    attempts = (
        context.witness_definitions + _uniqueness(context) + extra,
        context.definitions + extra,
        context.witness_definitions + extra,
    )
    if not extra:
        return attempts
    return (context.definitions_of(context.owners_read([*read, *extra])) + extra, *attempts)


def _check_path(context, x, subject, path, value, other, domain, rlimit, same=(), probe=None):
    """`same`: pairs (witness, the one it equals) to substitute (`alike`);
    `probe`: see `_check`."""
    shipped = _substituted(value(path.value), same)
    other = _substituted(other, same)
    condition = _substituted(path.formula, same)
    goal = z3.Not(_equal(shipped, other))
    facts = z3.And(*domain, condition)
    extra = list(subject.lemmas(context, x, facts, shipped, other)) if subject.lemmas is not None else []
    extra += _lcm_divisibility(context)
    attempts = _attempts(context, extra, read=[facts, goal])
    return _check(attempts, [*domain, condition], goal, _flags(x, subject), rlimit, case_split=True, probe=probe)


def _substituted(value, pairs):
    if not pairs:
        return value
    if isinstance(value, tuple):
        return tuple(_substituted(v, pairs) for v in value)
    return z3.substitute(value, *pairs) if isinstance(value, z3.ExprRef) else value


def alike(context: arith.SymbolicContext) -> list[tuple[z3.ArithRef, z3.ArithRef]]:
    """Witnesses of one division written two ways: the same divisor term and
    dividends that are one polynomial ((q - 1) * s against q * s - s, once
    the witnesses they read are identified in turn). Floor division is a
    function, so each later quotient and remainder is the earlier one: the
    pairs to substitute. The uniqueness lemmas state the same, but a solver
    given a quadratic number of them left the PR457 split's EAGLE
    conversion (two readings of each draft group's reusable boundary
    rounded to the cadence) undecided at 20M rlimit; substituted, its paths
    are linear enough to decide in milliseconds."""
    pairs: list[tuple[z3.ArithRef, z3.ArithRef]] = []
    kept: dict[int, list[tuple[z3.ArithRef, z3.ArithRef, z3.ArithRef]]] = {}  # divisor id -> (dividend, q, r)
    for dividend, divisor, q, r in context._witnessed:
        budget.poll()
        dividend = z3.substitute(dividend, *pairs) if pairs else dividend
        same_divisor = kept.setdefault(divisor.get_id(), [])
        for other, q0, r0 in same_divisor:
            difference = z3.simplify(dividend - other, som=True)
            if z3.is_int_value(difference) and difference.as_long() == 0:
                pairs += [(q, q0), (r, r0)]
                break
        else:
            same_divisor.append((dividend, q, r))
    return pairs


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
        answer = budget.check(solver)
        if answer == z3.sat:
            return solver.model()
        if answer == z3.unsat:
            return z3.unsat
    return None


def _check(attempts, facts, goal, flags, rlimit, case_split=False, direct=True, probe=None):
    """unsat, a model, or None (undecided); or what `probe()` found (a
    replayed counterexample) when nothing else decides. Each set of
    definitions in turn (the witness definitions alone first, at a small
    budget: they decide most paths fastest); then, if `case_split`, with the
    first set, case by case over the Bool inputs (a fixed flag erases the
    merged branches it guards): the split's two paths with EAGLE drop and an
    internal checkpoint are decided so, and stay unknown without it. Facts
    are asserted, not passed as assumptions: Z3 preprocesses assertions
    only, and as assumptions most of the split's paths went undecided.
    `direct=False` goes to the case split at once."""
    answer = None
    if direct:
        first = [(attempts[-1], WITNESS_FIRST_RLIMIT)] if WITNESS_FIRST_RLIMIT else []
        answer = _first_decided([*first, *((d, rlimit) for d in attempts)], facts, goal)
    if answer is None and case_split:
        answer = _case_split(attempts[0], facts, goal, flags, rlimit)
    if answer is None and probe is not None:
        return probe()
    return answer


def _case_split(definitions, facts, goal, flags, rlimit):
    for values in itertools.product((False, True), repeat=len(flags)):
        substitution = list(zip(flags, map(z3.BoolVal, values), strict=True))
        solver = _solver(definitions, rlimit)
        solver.add(*(f if value else z3.Not(f) for f, value in zip(flags, values, strict=True)))
        solver.add(*(z3.simplify(z3.substitute(t, *substitution)) for t in (*facts, goal)))
        answer = budget.check(solver)
        if answer == z3.sat:
            return solver.model()
        if answer == z3.unknown:
            return None
    return z3.unsat


def _lcm_divisibility(context: arith.SymbolicContext) -> list[z3.BoolRef]:
    """For a quantity divided both by an lcm and by each of its terms: the
    lcm divides it exactly when every term does (positive terms). arith's
    lcm is any common multiple, so this fact of the true lcm is stated, as
    the uniqueness lemmas are: a guard written against the lcm of the spans
    and one written against each span then read alike. Valid for the true
    lcm, and a model is replayed on ints anyway."""
    lcms = {m.get_id(): terms for m, terms in context.lcms_of(set(context._reads))}
    if not lcms:
        return []
    remainders: dict[tuple[int, int], z3.ArithRef] = {}
    for x, d, _q, r in context._witnessed:
        remainders[(x.get_id(), d.get_id())] = r
    facts = []
    for x, d, _q, r in context._witnessed:
        terms = lcms.get(d.get_id())
        if terms is None:
            continue
        each = [remainders.get((x.get_id(), t.get_id())) for t in terms]
        if any(e is None for e in each):
            continue
        positive = z3.And(*(t > 0 for t in terms))
        facts.append(z3.Implies(positive, (r == 0) == z3.And(*(e == 0 for e in each))))
    return facts


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
