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
from proofs.catalog import CATALOGUE
from proofs.catalog.base import Obligation, scheduler_domain, split_call, split_params
from proofs.catalog.split import VARS, ends_by_next_multiple, lemma_hypothesis, reading_split
from proofs.engine.solver import PROVED, REFUTED, UNKNOWN, VACUOUS, replay, symbolic_inputs
from proofs.source import budget, reading, search
from proofs.source.cases import split_cases
from proofs.source.decide import Verdict, _check, _first_decided, _flags, _solver, _uniqueness, _values
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
# Lemmas about the shipped split that a theorem's statement takes as
# hypotheses under another reading (proofs/catalog/split.py): each is proved
# case by case on the shipped split, and the theorem is then decided once,
# for every split result that satisfies them. No jump asked case by case
# (with its free multiple k) was nonlinear enough that which cases a budget
# decided varied with what ran before in the process.
LEMMAS = {"split-no-jump": (Obligation("ends by the next multiple", VARS, ends_by_next_multiple),)}
# First, the witness definitions alone: every case of the 0.33.0 split is
# decided so within 160,000 rlimit; the lemma families only slow them.
WITNESS_RLIMIT = 1_000_000
# Whether a case satisfies a theorem's hypotheses: asked case after case
# until one does (PROVED needs one), a case undecided within it passed over.
ADMISSION_RLIMIT = 500_000


def prove_all(names, functions, rlimit: int = PATH_RLIMIT, progress=None) -> dict[str, Verdict]:
    """Each named theorem on `functions`' shipped split, from one exploration,
    all within one function's wall-clock budget (proofs/source/budget.py);
    a theorem left UNKNOWN, by the solver or by the budget, is searched
    concretely first (one search budget shared by them all)."""
    started = time.perf_counter()
    obligations = {name: _main(name) for name in names}
    variables = {v.name: v for o in obligations.values() for v in o.variables}
    x = symbolic_inputs(tuple(variables.values()), z3.main_ctx())  # where the symbolic executor builds its terms
    verdicts: dict[str, Verdict] = {}
    with arith.symbolic_context() as context, reading.capture() as built:
        try:
            with budget.function_budget() as seconds:
                domain = scheduler_domain(x)
                with exploring_under(domain.values()):
                    functions.split(split_params(x), split_call(x))
                shipped = built[0]
                base = [*context.witness_definitions, *(d for d in domain.values() if isinstance(d, z3.BoolRef))]
                cases = split_cases(shipped.exploration.returned, lambda path: shipped.value(path.value), base)
                shared = time.perf_counter() - started
                for name, obligation in obligations.items():
                    if progress:
                        progress(name)
                    began = time.perf_counter()
                    if name in LEMMAS:
                        verdict = _prove_from_lemmas(
                            LEMMAS[name], obligation, functions, context, x, shipped, cases, rlimit
                        )
                    else:
                        verdict = _prove(obligation, functions, context, x, shipped, cases, rlimit)
                    verdict.seconds = time.perf_counter() - began + shared / len(names)
                    verdicts[name] = verdict
        except reading.UnknownReading as refusal:
            return {name: Verdict(UNKNOWN, reason=f"the executor refused: {refusal}") for name in names}
        except budget.OutOfTime:
            paths = len(built[0].exploration.returned) if built else 0
            for name in names:
                if name not in verdicts:
                    reason = f"the budget of {seconds:g} s for the split theorems was spent"
                    verdicts[name] = Verdict(UNKNOWN, paths, reason=reason)
    searching = time.monotonic() + search.SEARCH_SECONDS
    for name, verdict in verdicts.items():
        if verdict.verdict == UNKNOWN and "the executor refused" not in verdict.reason:
            lemmas = [lemma_hypothesis(o.name) for o in LEMMAS.get(name, ())]
            left = max(searching - time.monotonic(), 0.5)
            verdicts[name] = _searched(obligations[name], functions, verdict, lemmas, left)
    return verdicts


def _searched(obligation, functions, verdict: Verdict, lemmas=(), seconds=search.SEARCH_SECONDS) -> Verdict:
    """The concrete search for the theorem's own statement (its lemmas
    dropped) with the shipped split run concretely, before an UNKNOWN."""

    def formula(variant, x):
        with reading_split(functions.split):
            return obligation.formula(variant, x)

    def violated(values: dict) -> bool:
        try:
            holds, _ = replay(formula, functions.variant, values, drop=lemmas)
        except Exception:  # the shipped code raised: a crash site's matter
            return False
        return holds

    values = search.search(obligation.variables, violated, domain=scheduler_domain, seconds=seconds)
    if values is None:
        verdict.reason += "; the concrete search found no counterexample"
        return verdict
    return Verdict(
        REFUTED, verdict.paths, counterexample=values, reason=f"found by the concrete search ({verdict.reason})"
    )


def prove(name: str, functions, rlimit: int = PATH_RLIMIT) -> Verdict:
    return prove_all((name,), functions, rlimit)[name]


def _main(name: str):
    theorem = CATALOGUE[name]
    return next(o for o in theorem.obligations if o.name == "main")


def _prove(obligation, functions, context, x, shipped, cases, rlimit) -> Verdict:
    returned = shipped.exploration.returned
    flags = _flags(x, obligation)
    undecided: set[int] = set()
    admitted = z3.unsat  # sat once a case is shown to satisfy the hypotheses
    for case in cases:
        with reading_split(lambda p, call, value=case.value: value):
            claim = obligation.formula(functions.variant, x)
        facts = [h for h in claim.hypotheses.values() if isinstance(h, z3.BoolRef)] + [case.formula]
        negated = z3.Not(z3.And(claim.goal, *context.obligations))
        context.prune([*facts, negated])
        if admitted != z3.sat:
            admitted = _admits(context, facts, admitted)
        answer = _first_answer(context, facts, negated, flags, rlimit)
        if answer is None:
            undecided.add(case.path)
            continue
        if answer is z3.unsat:
            continue
        values = _values(answer, x, obligation.variables)
        with reading_split(functions.split):
            holds, _ = replay(obligation.formula, functions.variant, values)
        if holds:
            return Verdict(REFUTED, len(returned), counterexample=values, exploration=shipped.exploration)
        undecided.add(case.path)
    if undecided:
        reason = f"{len(undecided)} of {len(returned)} paths undecided within rlimit {rlimit:,}"
        return Verdict(UNKNOWN, len(returned), reason=reason, undecided_paths=sorted(undecided))
    if admitted == z3.unknown:
        reason = f"no case shown to satisfy the hypotheses within rlimit {ADMISSION_RLIMIT:,}"
        return Verdict(UNKNOWN, len(returned), reason=reason)
    if admitted == z3.unsat:
        return Verdict(VACUOUS, len(returned), reason="no path satisfies the hypotheses")
    return Verdict(PROVED, len(returned), exploration=shipped.exploration)


def _prove_from_lemmas(lemmas, obligation, functions, context, x, shipped, cases, rlimit) -> Verdict:
    """Each lemma on the shipped split, case by case; then the theorem for
    any split result the lemmas hold of. A refuted lemma's input is completed
    (the inputs only the theorem reads solved for) into one the theorem's own
    statement refutes with the shipped split run concretely."""
    paths = len(shipped.exploration.returned)
    for lemma in lemmas:
        verdict = _prove(lemma, functions, context, x, shipped, cases, rlimit)
        if verdict.verdict == REFUTED:
            values = _completed(obligation, functions, verdict.counterexample, [lemma_hypothesis(lemma.name)])
            if values is not None:
                return Verdict(REFUTED, paths, counterexample=values, exploration=shipped.exploration)
            reason = f"lemma '{lemma.name}' refuted by {verdict.counterexample}, the theorem not there"
            return Verdict(UNKNOWN, paths, reason=reason)
        if verdict.verdict != PROVED:
            verdict.reason = f"lemma '{lemma.name}': {verdict.reason}"
            return verdict
    result = z3.Int("split_result", z3.main_ctx())  # the split's result, free but for the lemmas
    with reading_split(lambda p, call: result):
        claim = obligation.formula(functions.variant, x)
    facts = [h for h in claim.hypotheses.values() if isinstance(h, z3.BoolRef)]
    negated = z3.Not(z3.And(claim.goal, *context.obligations))
    context.prune([*facts, negated])
    solver = _solver(context.definitions, rlimit)
    solver.add(*facts, negated)
    answer = budget.check(solver)
    if answer == z3.unsat:
        return Verdict(PROVED, paths, exploration=shipped.exploration)
    names = ", ".join(f"'{lemma.name}'" for lemma in lemmas)
    found = "a split result they admit violates it" if answer == z3.sat else f"undecided within rlimit {rlimit:,}"
    return Verdict(UNKNOWN, paths, reason=f"the lemmas {names} do not prove the theorem: {found}")


def _completed(obligation, functions, known: dict, lemmas: list[str]) -> dict | None:
    """`known` with the theorem's other inputs solved for, so that the
    theorem's statement proper (its hypotheses but the `lemmas`), the
    shipped split run concretely, is refuted there; None if no such values."""
    missing = [v for v in obligation.variables if v.name not in known]
    with arith.symbolic_context() as context, reading_split(functions.split):
        free = symbolic_inputs(missing, z3.main_ctx())
        claim = obligation.formula(functions.variant, {**known, **free})
        solver = z3.SimpleSolver()
        solver.set("rlimit", WITNESS_RLIMIT)
        solver.add(*context.definitions, *(_as_bool(h) for name, h in claim.hypotheses.items() if name not in lemmas))
        solver.add(z3.Not(_as_bool(claim.goal)))
        if budget.check(solver) != z3.sat:
            return None
        values = {**known, **_values(solver.model(), free, missing)}
    with reading_split(functions.split):
        holds, _ = replay(obligation.formula, functions.variant, values, drop=lemmas)
    return values if holds else None


def _as_bool(value) -> z3.BoolRef:
    return value if isinstance(value, z3.BoolRef) else z3.BoolVal(bool(value), z3.main_ctx())


def _first_answer(context, facts, negated, flags, rlimit):
    """unsat, a model or None. The witness definitions alone first; then
    with the lemma families; then those and the uniqueness lemmas, case by
    case over the Bool inputs. Built when tried: the lemma families and the
    uniqueness lemmas cost more to build than most cases take to decide."""
    attempts = (
        (lambda: context.witness_definitions, WITNESS_RLIMIT),
        (lambda: context.definitions, rlimit),
    )
    answer = _first_decided(((definitions(), budget) for definitions, budget in attempts), facts, negated)
    if answer is not None:
        return answer
    definitions = context.definitions + _uniqueness(context)
    return _check((definitions,), facts, negated, flags, rlimit, case_split=True, direct=False)


def _admits(context, facts, so_far):
    """sat if the case satisfies the hypotheses; else unknown if this case
    or an earlier one was undecided, unsat if all were shown not to."""
    solver = _solver(context.witness_definitions, ADMISSION_RLIMIT)
    solver.add(*facts)
    answer = budget.check(solver)
    if answer == z3.sat:
        return z3.sat
    return z3.unknown if z3.unknown in (answer, so_far) else z3.unsat
