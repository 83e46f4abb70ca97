"""The split theorems of proofs/catalog/split.py on the shipped split.

Each theorem's own formula is read with a fresh term in place of the split
(`reading_split`), and the shipped split is explored under the hypotheses
that do not read it; the theorem is then decided path by path, the path's
value substituted for the term. A counterexample is replayed by calling the
theorem's formula on ints with the shipped code run concretely as the split.
"""

from __future__ import annotations

import time

import z3

from models import arith
from models.variants import BASELINE
from proofs.catalog import CATALOGUE
from proofs.catalog.base import split_call, split_params
from proofs.catalog.split import reading_split
from proofs.solver import PROVED, REFUTED, UNKNOWN, VACUOUS, replay, symbolic_inputs
from proofs.source import reading
from proofs.source.decide import Verdict, _attempts, _check, _flags, _values
from proofs.source.equivalence import exploring_under

# The split's theorems whose statement reads only the split's result
# (split-default-equivalence compares with the model; the EAGLE theorems read
# the last cacheable position, not the split).
THEOREMS = (
    "split-bounds",
    "split-untouched-outside-prefill",
    "split-zero-exactly-when",
    "split-progress-cadence-above-budget",
    "split-grid-landing",
    "split-no-jump",
)
PATH_RLIMIT = 2_000_000


def prove(name: str, functions, rlimit: int = PATH_RLIMIT) -> Verdict:
    started = time.perf_counter()
    try:
        verdict = _prove(name, functions, rlimit)
    except reading.UnknownReading as refusal:
        verdict = Verdict(UNKNOWN, reason=f"the executor refused: {refusal}")
    verdict.seconds = time.perf_counter() - started
    return verdict


def _main(name: str):
    theorem = CATALOGUE[name]
    return next(o for o in theorem.obligations if o.name == "main")


def _prove(name: str, functions, rlimit: int) -> Verdict:
    obligation = _main(name)
    x = symbolic_inputs(obligation.variables, z3.main_ctx())  # where the symbolic executor builds its terms
    result = z3.Int("_shipped_split")
    with arith.symbolic_context() as context, reading.capture() as built:
        with reading_split(lambda p, call: result):
            claim = obligation.formula(BASELINE, x)
        hypotheses = [h for h in claim.hypotheses.values() if isinstance(h, z3.BoolRef)]
        free = [h for h in hypotheses if not _reads(h, result)]
        with exploring_under(free):
            functions.split(split_params(x), split_call(x))
        shipped = built[0]
        goal = z3.And(claim.goal, *context.obligations) if isinstance(claim.goal, z3.BoolRef) else claim.goal
        returned = shipped.exploration.returned
        undecided, admitted = [], 0
        subject = _Inputs(obligation.variables)
        for i, path in enumerate(returned):
            value = shipped.value(path.value)
            facts = [z3.substitute(h, (result, value)) for h in hypotheses] + [path.formula]
            admitted += _satisfiable(context, facts)
            negated = z3.Not(z3.substitute(goal, (result, value)))
            answer = _check(_attempts(context), facts, negated, _flags(x, subject), rlimit, case_split=True)
            if answer is None:
                undecided.append(i)
                continue
            if answer is z3.unsat:
                continue
            values = _values(answer, x, subject)
            with reading_split(functions.split):
                holds, _ = replay(obligation.formula, BASELINE, values)
            if holds:
                return Verdict(REFUTED, len(returned), counterexample=values, exploration=shipped.exploration)
            undecided.append(i)
    if undecided:
        reason = f"{len(undecided)} of {len(returned)} paths undecided within rlimit {rlimit:,}"
        return Verdict(UNKNOWN, len(returned), reason=reason, undecided_paths=undecided)
    if not admitted:
        return Verdict(VACUOUS, len(returned), reason="no path satisfies the hypotheses")
    return Verdict(PROVED, len(returned), exploration=shipped.exploration)


class _Inputs:
    def __init__(self, variables) -> None:
        self.variables = variables


def _reads(formula: z3.ExprRef, constant: z3.ExprRef) -> bool:
    stack, seen = [formula], set()
    while stack:
        t = stack.pop()
        if t.get_id() in seen:
            continue
        seen.add(t.get_id())
        if t.eq(constant):
            return True
        stack.extend(t.children())
    return False


def _satisfiable(context, facts) -> bool:
    solver = z3.SimpleSolver()
    solver.set("rlimit", 500_000)
    solver.add(*context.witness_definitions, *facts)
    return solver.check() == z3.sat
