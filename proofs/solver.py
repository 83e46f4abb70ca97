"""Deciding one obligation: building the Z3 query from a claim read
symbolically, budgeting it in rlimit, and turning the answer into an honest
verdict (DESIGN.md principle 4).

A claim is built by calling a theorem's formula with Z3 variables; the same
formula called with ints is the concrete model, used to replay every
counterexample before it is reported.
"""

from __future__ import annotations

import itertools
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum

import z3

from models import arith

PROVED, REFUTED, UNKNOWN, VACUOUS, ERROR = "PROVED", "REFUTED", "UNKNOWN", "VACUOUS", "ERROR"
DEFAULT_RLIMIT = 20_000_000

# Small concrete geometries tried before the fully symbolic search for a
# counterexample: a concrete divisor makes the query linear
# (../shared/reference/z3-encoding.md, "Finding counterexamples").
SIZE_LADDER = ((1, 2), (1, 2, 3, 4), (1, 2, 3, 4, 6, 8, 16), (16, 128, 768, 3840, 4096, 12288))
SPURIOUS_RETRIES = 8  # inputs excluded after a counterexample that does not replay
LADDER_TRIES = 12  # concrete geometries tried per rung
LADDER_RLIMIT = 400_000  # per try: a linear query either answers fast or is skipped


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
    counterexample: dict[str, int | bool] | None = None
    reason: str = ""
    smt2: str = ""


def symbolic_inputs(variables: Sequence[Var]) -> dict[str, z3.ExprRef]:
    return {v.name: (z3.Bool(v.name) if v.kind is Kind.BOOL else z3.Int(v.name)) for v in variables}


def replay(formula: Formula, variant, values: dict[str, int | bool]) -> tuple[bool, str]:
    """Evaluate the claim on ints: does it really violate the goal under the hypotheses?"""
    try:
        claim = formula(variant, dict(values))
    except ZeroDivisionError:
        return False, "the concrete model divides by zero: a divisor lacks a positivity hypothesis"
    failed = [name for name, h in claim.hypotheses.items() if not h]
    if failed:
        return False, f"hypotheses {', '.join(failed)} do not hold concretely"
    if claim.goal:
        return False, "the goal holds concretely"
    return True, ""


class _Budget:
    # Z3 counts resource use per context, cumulatively across solvers: a
    # query's cost is the growth of that counter over its check().
    _context_total = 0

    def __init__(self, rlimit: int) -> None:
        self.remaining = rlimit
        self.used = 0

    def solver(self) -> z3.Solver:
        solver = z3.Solver()
        solver.set("rlimit", max(self.remaining, 1))
        solver.set("core.minimize", True)
        return solver

    def charge(self, solver: z3.Solver) -> None:
        stats = solver.statistics()
        if "rlimit count" not in stats.keys():
            return
        total = int(stats.get_key_value("rlimit count"))
        used = max(total - _Budget._context_total, 0)
        _Budget._context_total = total
        self.used += used
        self.remaining -= used


def decide(
    formula: Formula,
    variables: Sequence[Var],
    variant,
    rlimit: int = DEFAULT_RLIMIT,
    drop: Sequence[str] = (),
    refute_first: bool = False,
    seed: int | None = None,
    case_split: Sequence[str] = (),
) -> Outcome:
    """PROVED, REFUTED (replayed), UNKNOWN, VACUOUS or ERROR for one obligation.

    `case_split` names Bool inputs to enumerate: each case substitutes the
    values, so the model's branches on them vanish before the solver sees
    them. PROVED needs every case PROVED, and covers are checked per case
    only where the case allows them."""
    started = time.perf_counter()
    budget = _Budget(rlimit)
    try:
        if case_split:
            outcome = _decide_cases(formula, variables, variant, budget, set(drop), refute_first, seed, case_split)
        else:
            outcome = _decide(formula, variables, variant, budget, set(drop), refute_first, seed)
    except Exception as error:  # an encoding bug must surface as ERROR, never as a verdict
        outcome = Outcome(ERROR, reason=f"{type(error).__name__}: {error}")
    outcome.rlimit = budget.used
    outcome.seconds = time.perf_counter() - started
    return outcome


def _decide_cases(formula, variables, variant, budget, drop, refute_first, seed, names) -> Outcome:
    unknown = [n for n in names if n not in {v.name for v in variables if v.kind is Kind.BOOL}]
    if unknown:
        raise ValueError(f"case split on unknown Bool inputs {unknown}")
    remaining = [v for v in variables if v.name not in names]
    used: set[str] = set()
    vacuous = 0
    for values in itertools.product((False, True), repeat=len(names)):
        fixed = dict(zip(names, values, strict=True))

        def case_formula(v, x, fixed=fixed):
            return formula(v, {**x, **fixed})

        out = _decide(case_formula, remaining, variant, budget, drop, refute_first, seed, check_covers=False)
        label = ", ".join(f"{k}={val}" for k, val in fixed.items())
        if out.verdict == VACUOUS and "contradict" in out.reason:
            vacuous += 1  # this case is excluded by the hypotheses
            continue
        if out.verdict == REFUTED:
            out.counterexample = {**(out.counterexample or {}), **fixed}
            return out
        if out.verdict != PROVED:
            out.reason = f"case {label}: {out.reason}"
            return out
        used.update(out.hypotheses_used)
    if vacuous == 2 ** len(names):
        return Outcome(VACUOUS, reason="the hypotheses exclude every case")
    covers = _decide(formula, variables, variant, budget, drop, False, seed, covers_only=True)
    if covers.verdict != PROVED:
        return covers
    return Outcome(PROVED, hypotheses_used=sorted(used))


def _decide(
    formula, variables, variant, budget, drop, refute_first, seed, check_covers=True, covers_only=False
) -> Outcome:
    inputs = symbolic_inputs(variables)
    with arith.symbolic_context() as context:
        claim = formula(variant, dict(inputs))
    unknown_names = drop - set(claim.hypotheses)
    if unknown_names:
        raise ValueError(f"cannot drop unknown hypotheses {sorted(unknown_names)}")
    hypotheses = {n: h for n, h in claim.hypotheses.items() if n not in drop}
    trackers = {n: z3.Bool(f"hyp:{n}") for n in hypotheses}
    goal = z3.And(_bool(claim.goal), *context.obligations)

    def base(solver: z3.Solver, tracked: bool) -> z3.Solver:
        if seed is not None:
            solver.set("random_seed", seed)
        solver.add(*context.definitions)
        for name, h in hypotheses.items():
            if tracked:
                solver.assert_and_track(_bool(h), trackers[name])
            else:
                solver.add(_bool(h))
        return solver

    # Vacuity: hypotheses that contradict each other prove anything. A model
    # with small concrete sizes settles it at once; otherwise ask the solver.
    if _ladder(base, z3.BoolVal(True), variables, inputs, budget) is None:
        check = base(budget.solver(), tracked=True)
        answer = check.check()
        budget.charge(check)
        if answer == z3.unsat:
            core = sorted(str(t).removeprefix("hyp:") for t in check.unsat_core())
            return Outcome(VACUOUS, reason=f"the hypotheses contradict each other: {', '.join(core)}")
        if answer == z3.unknown:
            return Outcome(UNKNOWN, reason=f"hypotheses alone: {check.reason_unknown()}")

    if covers_only:
        return _check_covers(claim, base, variables, inputs, budget, "")
    negated = base(budget.solver(), tracked=True)
    negated.add(z3.Not(goal))
    smt2 = negated.to_smt2()
    if refute_first:
        found = _ladder(base, z3.Not(goal), variables, inputs, budget)
        if found is not None:
            return _refuted(formula, variant, found, smt2)
    answer = negated.check()
    budget.charge(negated)
    for _ in range(SPURIOUS_RETRIES):
        if answer != z3.sat:
            break
        values = _values(negated.model(), variables, inputs)
        outcome = _refuted(formula, variant, values, smt2)
        if outcome.verdict == REFUTED:
            return outcome
        # A model that does not replay exploits an over-approximation (the
        # symbolic lcm): exclude exactly that input and ask again.
        negated.add(z3.Or(*(inputs[name] != value for name, value in values.items())))
        answer = negated.check()
        budget.charge(negated)
    if answer == z3.sat:
        return _refuted(formula, variant, _values(negated.model(), variables, inputs), smt2)
    if answer == z3.unknown:
        reason = negated.reason_unknown()
        if not refute_first:
            found = _ladder(base, z3.Not(goal), variables, inputs, budget)
            if found is not None:
                return _refuted(formula, variant, found, smt2)
        return Outcome(UNKNOWN, reason=f"goal: {reason}", smt2=smt2)
    used = sorted(str(t).removeprefix("hyp:") for t in negated.unsat_core())
    if not check_covers:
        return Outcome(PROVED, hypotheses_used=used, smt2=smt2)
    outcome = _check_covers(claim, base, variables, inputs, budget, smt2)
    outcome.hypotheses_used = used
    return outcome


def _check_covers(claim, base, variables, inputs, budget, smt2) -> Outcome:
    for name, cover in claim.covers.items():
        if _ladder(base, _bool(cover), variables, inputs, budget) is not None:
            continue
        reach = base(budget.solver(), tracked=False)
        reach.add(_bool(cover))
        answer = reach.check()
        budget.charge(reach)
        if answer == z3.unsat:
            return Outcome(VACUOUS, reason=f"cover goal {name!r} is unreachable", smt2=smt2)
        if answer == z3.unknown:
            return Outcome(UNKNOWN, reason=f"cover goal {name!r}: {reach.reason_unknown()}", smt2=smt2)
    return Outcome(PROVED, smt2=smt2)


def _ladder(base, target, variables, inputs, budget) -> dict | None:
    """A model of `target` in small concrete geometries: every size fixed to a
    value of the rung (all combinations, or a seeded sample of them), which
    makes each query linear."""
    sizes = [inputs[v.name] for v in variables if v.size]
    if not sizes:
        return None
    rng = random.Random(0)
    for rung in SIZE_LADDER:
        combinations = len(rung) ** len(sizes)
        if combinations <= LADDER_TRIES:
            assignments = itertools.product(rung, repeat=len(sizes))
        else:
            assignments = (tuple(rng.choice(rung) for _ in sizes) for _ in range(LADDER_TRIES))
        for assignment in assignments:
            solver = base(budget.solver(), tracked=False)
            solver.set("rlimit", max(min(budget.remaining, LADDER_RLIMIT), 1))
            solver.add(target)
            solver.add(*(size == value for size, value in zip(sizes, assignment, strict=True)))
            answer = solver.check()
            budget.charge(solver)
            if answer == z3.sat:
                return _values(solver.model(), variables, inputs)
            if budget.remaining <= 0:
                return None
    return None


def _refuted(formula, variant, values, smt2) -> Outcome:
    replays, why = replay(formula, variant, values)
    if not replays:
        return Outcome(ERROR, counterexample=values, reason=f"counterexample does not replay: {why}", smt2=smt2)
    return Outcome(REFUTED, counterexample=values, reason=why, smt2=smt2)


def _values(model: z3.ModelRef, variables, inputs) -> dict[str, int | bool]:
    values: dict[str, int | bool] = {}
    for v in variables:
        value = model.eval(inputs[v.name], model_completion=True)
        values[v.name] = z3.is_true(value) if v.kind is Kind.BOOL else value.as_long()
    return values


def _bool(x) -> z3.BoolRef:
    return x if isinstance(x, z3.ExprRef) else z3.BoolVal(bool(x))
