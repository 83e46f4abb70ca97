"""The cheap refuters, tried before (or instead of) the symbolic proof
query: random small inputs on the concrete model (the probe, with
shrinking), then small concrete geometries in which every division is by a
constant and the query is linear (the ladder). Functions of the problem
being decided (proofs/engine/problem.py), called by the decision procedure
(proofs/engine/solver.py)."""

from __future__ import annotations

import itertools
import random

import z3

from proofs.engine.claims import Kind, replay
from proofs.engine.problem import Problem

# Small concrete geometries tried before the fully symbolic search for a
# counterexample: a concrete divisor makes the query linear, where a symbolic
# one leaves it nonlinear even when the answer is tiny.
SIZE_LADDER = ((1, 2), (1, 2, 3, 4), (1, 2, 3, 4, 6, 8, 16), (16, 128, 768, 3840, 4096, 12288))
LADDER_TRIES = 12  # concrete geometries tried per rung
LADDER_RLIMIT = 400_000  # per try: a linear query either answers fast or is skipped
PROBES = 300  # random concrete inputs tried before the ladder's queries
PROBE_INT_MAX = 40


def refute_small(problem: Problem, case: dict, rungs: tuple[int, int | None] = (0, None)) -> dict | None:
    """A replaying counterexample in `case` from the cheap refuters: the
    probe, then the ladder, rung by rung. `rungs`: the slice of SIZE_LADDER
    to climb; the probe runs with the first rung. Each rung draws the same
    geometries whichever slice is climbed."""
    start, stop = rungs
    values = probe(problem, case) if start == 0 else None
    if values is None:
        values = search(problem, case, _goal_violated, replayed=True, rungs=SIZE_LADDER[:stop], skip=start)
    return values


def _goal_violated(encoding) -> z3.BoolRef:
    return z3.Not(encoding.goal)


def probe(problem: Problem, case: dict) -> dict | None:
    """Random small inputs evaluated on the concrete model, before any
    query: where failures are dense this is the fastest refuter (random
    testing's strength). Seeded, so a rerun finds the same input; what it
    finds replays by construction. The recorded inputs were replayed before
    (solver.decide)."""
    rng = random.Random(problem.seed or 0)
    sizes = sorted({v for rung in SIZE_LADDER[:3] for v in rung})
    for _ in range(PROBES):
        values = {}
        for v in problem.variables:
            if v.name in case:
                values[v.name] = case[v.name]
            elif v.kind is Kind.BOOL:
                values[v.name] = rng.random() < 0.5
            elif v.size:
                values[v.name] = rng.choice(sizes)
            else:
                values[v.name] = rng.randint(0, PROBE_INT_MAX)
        if replay(problem.formula, problem.variant, values, problem.drop)[0]:
            return shrink(problem, values, case)
    return None


def shrink(problem: Problem, values: dict, case: dict) -> dict:
    """Greedily smaller inputs that still fail on the concrete model, so a
    probe's counterexample reads like the ladder's."""
    changed = True
    while changed:
        changed = False
        for v in problem.variables:
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
                if replay(problem.formula, problem.variant, trial, problem.drop)[0]:
                    values, changed = trial, True
                    break
    return values


def search(
    problem: Problem, case: dict, target, *, replayed: bool = False, rungs=SIZE_LADDER, skip: int = 0
) -> dict | None:
    """A model of `target` in small concrete geometries: every size input
    fixed to a value of the rung before encoding (all combinations, or a
    seeded sample), so every division is by a constant and the query is
    linear. With `replayed`, only a model that replays counts. The first
    `skip` rungs are drawn but not tried."""
    sizes = [v.name for v in problem.variables if v.size and v.name not in case]
    if not sizes:
        return None
    rng = random.Random(0)
    for index, rung in enumerate(rungs):
        if len(rung) ** len(sizes) <= LADDER_TRIES:
            assignments = list(itertools.product(rung, repeat=len(sizes)))
        else:
            uniform = [tuple(value for _ in sizes) for value in rung]
            assignments = uniform + [tuple(rng.choice(rung) for _ in sizes) for _ in range(LADDER_TRIES)]
        for assignment in assignments if index >= skip else ():
            if problem.budget.remaining <= 0:
                return None
            try:
                encoding = problem.encoding({**case, **dict(zip(sizes, assignment, strict=True))})
            except ZeroDivisionError:
                continue
            solver = encoding.solver(tracked=False, limit=LADDER_RLIMIT, lemmas=False)
            # Every size fixed, the folds over constant members are constants:
            # pinned exactly (and linearly), a family's lcm or bound cannot take
            # the slack its other members would allow, which the replay on the
            # members alone refuses.
            solver.add(*encoding.context.exact_definitions(linear_only=True))
            # Not shared: few ladder queries repeat, and their keys cost
            # more than the answers they would spare.
            if problem.check(solver, target(encoding), shared=False).result == z3.sat:
                values = encoding.values(solver.model())
                if not replayed or replay(problem.formula, problem.variant, values, problem.drop)[0]:
                    return values
    return None
