"""A merged path's value, split back into its cases.

Merging (merge.py) keeps the shipped split at 24 paths, but each path's
value is an if-then-else over the stops it took the minimum of. A theorem
about the chunk's end asked of that whole term is a nonlinear query per path
that 2M rlimit does not decide; asked of one case at a time (the end is the
next block boundary, the junction, the aligned end, ...), each query reads a
plain term whose divisions arith sees the structure of (a visible multiple
of the block has remainder 0), and most are unsat in milliseconds.

A case is the path's condition, the choices of the term's conditions that
select one leaf, and that leaf. The cases of a path partition it: every
if-then-else condition is taken both ways unless Z3 shows a side infeasible
under the path (a cheap check; undecided counts as feasible), so proving a
goal for every case proves it for the path.
"""

from __future__ import annotations

from dataclasses import dataclass

import z3

from proofs.source import budget

FEASIBILITY_RLIMIT = 5_000  # per choice: only the obviously infeasible are pruned


@dataclass(frozen=True)
class Case:
    path: int  # index among the reading's returning paths
    conditions: tuple[z3.BoolRef, ...]  # the path's condition, then the leaf's choices
    value: z3.ArithRef

    @property
    def formula(self) -> z3.BoolRef:
        return z3.And(*self.conditions) if self.conditions else z3.BoolVal(True)


def split_cases(paths, value_of, base: list[z3.BoolRef]) -> list[Case]:
    """Every case of every returning path. `value_of(path)` is the path's
    value as a term; `base` holds what is known (the domain, the witness
    definitions)."""
    solver = z3.SimpleSolver()
    solver.set("rlimit", FEASIBILITY_RLIMIT)
    solver.add(*base)
    cases: list[Case] = []
    for i, path in enumerate(paths):
        _leaves(solver, i, z3.simplify(value_of(path)), [path.formula], cases)
    return cases


def _leaves(solver, path: int, value: z3.ExprRef, conditions: list, out: list[Case]) -> None:
    choice = _first_condition(value)
    if choice is None:
        out.append(Case(path, tuple(conditions), value))
        return
    for literal, truth in ((choice, True), (z3.Not(choice), False)):
        if budget.check(solver, *conditions, literal) == z3.unsat:
            continue
        chosen = z3.simplify(z3.substitute(value, (choice, z3.BoolVal(truth))))
        _leaves(solver, path, chosen, [*conditions, literal], out)


def _first_condition(term: z3.ExprRef) -> z3.BoolRef | None:
    """The condition of the first integer if-then-else in `term`, or None."""
    stack, seen = [term], set()
    while stack:
        t = stack.pop()
        if t.get_id() in seen:
            continue
        seen.add(t.get_id())
        if z3.is_app_of(t, z3.Z3_OP_ITE) and not z3.is_bool(t):
            return t.arg(0)
        stack.extend(reversed(t.children()))
    return None
