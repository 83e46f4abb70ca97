"""The split theorems of proofs/catalog/split.py on the shipped split.

The shipped split is explored once, under the catalogue's domain, and each
returning path is split into its cases (cases.py: one leaf of the path's
merged value each). Every theorem's own formula is then read once per case
with that case's value as the split (`reading_split`), so its divisions see
the value's structure, and decided under the case's condition. The cases
partition the domain, so a theorem whose every case is unsat is PROVED. A
model of a case is replayed by calling the theorem's formula on ints with the
shipped code run concretely as the split.
"""

from __future__ import annotations

import time

import z3

from models import arith
from models.variants import BASELINE
from proofs.catalog import CATALOGUE
from proofs.catalog.base import split_call, split_params
from proofs.catalog.split import reading_split
from proofs.solver import PROVED, QUERY_PARAMETERS, REFUTED, UNKNOWN, VACUOUS, replay, symbolic_inputs
from proofs.source import reading
from proofs.source.cases import split_cases
from proofs.source.decide import Verdict, _check, _flags, _uniqueness, _values
from proofs.source.equivalence import SUBJECTS, exploring_under

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
# Which few cases of no jump a budget decides varies with the order Z3 met
# the terms in (what ran before in the process): a case still undecided is
# retried with other seeds of Z3's search.
RETRY_SEEDS = (1, 2, 3)
# A first, cheap try with the witness definitions alone: most cases are
# unsat from the stops' structure, and the lemma families only slow them.
QUICK_RLIMIT = 50_000


def prove_all(names, functions, rlimit: int = PATH_RLIMIT, progress=None) -> dict[str, Verdict]:
    """Each named theorem on `functions`' shipped split, from one exploration."""
    started = time.perf_counter()
    obligations = {name: _main(name) for name in names}
    variables = {v.name: v for o in obligations.values() for v in o.variables}
    x = symbolic_inputs(tuple(variables.values()), z3.main_ctx())  # where the symbolic executor builds its terms
    with arith.symbolic_context() as context, reading.capture() as built:
        try:
            domain = SUBJECTS["split"].domain(x)
            with exploring_under(domain.values()):
                functions.split(split_params(x), split_call(x))
        except reading.UnknownReading as refusal:
            return {name: Verdict(UNKNOWN, reason=f"the executor refused: {refusal}") for name in names}
        shipped = built[0]
        base = [*context.witness_definitions, *(d for d in domain.values() if isinstance(d, z3.BoolRef))]
        cases = split_cases(shipped.exploration.returned, lambda path: shipped.value(path.value), base)
        shared = time.perf_counter() - started
        verdicts = {}
        for name, obligation in obligations.items():
            if progress:
                progress(name)
            began = time.perf_counter()
            verdict = _prove(obligation, functions, context, x, shipped, cases, rlimit)
            verdict.seconds = time.perf_counter() - began + shared / len(names)
            verdicts[name] = verdict
    return verdicts


def prove(name: str, functions, rlimit: int = PATH_RLIMIT) -> Verdict:
    return prove_all((name,), functions, rlimit)[name]


def _main(name: str):
    theorem = CATALOGUE[name]
    return next(o for o in theorem.obligations if o.name == "main")


def _prove(obligation, functions, context, x, shipped, cases, rlimit) -> Verdict:
    returned = shipped.exploration.returned
    flags = _flags(x, obligation)
    undecided: set[int] = set()
    admitted = False
    for case in cases:
        with reading_split(lambda p, call, value=case.value: value):
            claim = obligation.formula(BASELINE, x)
        facts = [h for h in claim.hypotheses.values() if isinstance(h, z3.BoolRef)] + [case.formula]
        negated = z3.Not(z3.And(claim.goal, *context.obligations))
        context.prune([*facts, negated])
        if not admitted:
            admitted = _satisfiable(context, facts)
        # Built when tried: the lemma families and the uniqueness lemmas cost
        # more to build than most cases take to decide.
        attempts = (
            (lambda: context.witness_definitions, QUICK_RLIMIT, QUERY_PARAMETERS),
            (lambda: context.definitions, rlimit, QUERY_PARAMETERS),
            (lambda: context.definitions, rlimit, ()),
            *((lambda: context.definitions, rlimit, (("random_seed", seed),)) for seed in RETRY_SEEDS),
            (lambda: context.definitions + _uniqueness(context), rlimit, QUERY_PARAMETERS),
        )
        answer = _first_answer(attempts, facts, negated, flags, rlimit)
        if answer is None:
            undecided.add(case.path)
            continue
        if answer is z3.unsat:
            continue
        values = _values(answer, x, obligation)
        with reading_split(functions.split):
            holds, _ = replay(obligation.formula, BASELINE, values)
        if holds:
            return Verdict(REFUTED, len(returned), counterexample=values, exploration=shipped.exploration)
        undecided.add(case.path)
    if undecided:
        reason = f"{len(undecided)} of {len(returned)} paths undecided within rlimit {rlimit:,}"
        return Verdict(UNKNOWN, len(returned), reason=reason, undecided_paths=sorted(undecided))
    if not admitted:
        return Verdict(VACUOUS, len(returned), reason="no path satisfies the hypotheses")
    return Verdict(PROVED, len(returned), exploration=shipped.exploration)


def _first_answer(attempts, facts, negated, flags, rlimit):
    """unsat, a model or None. Z3's Grobner-basis reasoning, which the
    catalogue's queries turn off, is slower on most cases but decides a few
    of no jump's (a stop at the junction) that are undecided without it."""
    for definitions, budget, parameters in attempts:
        solver = z3.SimpleSolver()
        for name, value in parameters:
            solver.set(name, value)
        solver.set("rlimit", budget)
        solver.add(*definitions(), *facts, negated)
        answer = solver.check()
        if answer == z3.sat:
            return solver.model()
        if answer == z3.unsat:
            return z3.unsat
    return _check((attempts[-1][0](),), facts, negated, flags, rlimit, case_split=True, direct=False)


def _satisfiable(context, facts) -> bool:
    solver = z3.SimpleSolver()
    solver.set("rlimit", 500_000)
    solver.add(*context.witness_definitions, *facts)
    return solver.check() == z3.sat
