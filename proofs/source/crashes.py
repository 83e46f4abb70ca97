"""Crash freedom: every assert, raise and division by a symbolic divisor the
shipped code reaches is an obligation. The exploration is exhaustive over
the domain, so a site no feasible path raises at is PROVED unreachable; a
raising path is solved for an input, which is replayed concretely: the real
function must raise there too."""

from __future__ import annotations

from dataclasses import dataclass

import z3

from proofs.engine.solver import PROVED, REFUTED, UNKNOWN, Kind
from proofs.source import budget, paths


@dataclass
class Site:
    file: str
    line: int
    kind: str  # "assert", "raise" or "division"
    evaluated: int  # fresh branch points at this site on feasible paths
    verdict: str
    counterexample: dict | None = None

    def describe(self) -> str:
        where = f"{self.file.rsplit('/', 1)[-1]}:{self.line}"
        if self.verdict == PROVED:
            return f"{self.kind} {where}: never fails in the domain ({self.evaluated} branch points checked)"
        return f"{self.kind} {where}: {self.verdict} {self.counterexample or ''}".rstrip()


def sites(
    exploration: paths.Exploration, declared, hypotheses: dict, inputs: dict, variables, replay_raises
) -> list[Site]:
    """`declared`: (file, line, kind) of the asserts and raises in the loaded
    functions; `replay_raises(values)`: whether the real code raises on them."""
    evaluated: dict[tuple[str, int], int] = {}
    for branch in exploration.branches:
        key = (branch.file, branch.line)
        evaluated[key] = evaluated.get(key, 0) + 1
    found = {(f, line): kind for f, line, kind in declared}
    for branch in exploration.branches:
        if branch.kind == "division":
            found.setdefault((branch.file, branch.line), "division")
    raising = {(p.file, p.line): p for p in exploration.raised}
    result = []
    for (file, line), kind in sorted(found.items()):
        path = raising.get((file, line))
        if path is None:
            result.append(Site(file, line, kind, evaluated.get((file, line), 0), PROVED))
            continue
        try:
            values = _solve(path, hypotheses, inputs, variables)
        except budget.OutOfTime:  # the site is undecided, not the run stopped
            values = None
        if values is not None and replay_raises(values):
            result.append(Site(file, line, kind, evaluated.get((file, line), 0), REFUTED, values))
        else:
            result.append(Site(file, line, kind, evaluated.get((file, line), 0), UNKNOWN))
    return result


def _solve(path: paths.Path, hypotheses: dict, inputs: dict, variables) -> dict | None:
    solver = z3.SimpleSolver()
    solver.set("rlimit", 5_000_000)
    solver.add(*(h for h in hypotheses.values() if isinstance(h, z3.BoolRef)), path.formula)
    if budget.check(solver) != z3.sat:
        return None
    model = solver.model()
    values = {}
    for v in variables:
        value = model.eval(inputs[v.name], model_completion=True)
        values[v.name] = z3.is_true(value) if v.kind is Kind.BOOL else value.as_long()
    return values
