"""What a theorem states, as data: its inputs (`Var`), the claim a formula
returns (`Claim`: named hypotheses, a goal, cover goals), and the concrete
reading that replays a counterexample."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum

import z3

from models import arith


class Kind(Enum):
    INT = "int"
    BOOL = "bool"


@dataclass(frozen=True)
class Var:
    name: str
    kind: Kind = Kind.INT
    size: bool = False  # a block size, span or cadence: pinned to small values by the ladder


@dataclass(frozen=True)
class Applies:
    """A goal conjunct `when => holds` whose condition reaches its `edge`:
    some admissible input has `when` and `edge` (say `k >= 1` at `k == 1`).
    A Claim states that as a cover goal, so the condition narrowed past its
    edge leaves the cover unreachable and the entry VACUOUS."""

    when: object
    holds: object
    edge: object

    @property
    def term(self):
        return arith.implies(self.when, self.holds)

    def covers(self, name: str) -> dict[str, object]:
        return _edge_cover(name, self.when, self.edge)


def _edge_cover(name: str, when, edge) -> dict[str, object]:
    """The cover goal of a conjunct whose condition `when` must reach `edge`."""
    return {f"{name}: it applies at its edge": arith.all_of(when, edge)}


@dataclass(frozen=True)
class Bound:
    """A goal conjunct that bounds one quantity by another, `when` it
    applies: `low <= high`, or `low < high` if `strict`. The engine attains
    it: some admissible input has `when` with the two sides at their closest
    (`low == high`; strict, `low + 1 == high`). A Claim states that as a
    cover goal, so the bound loosened, by one or by more, leaves the cover
    unreachable and the entry VACUOUS, as a narrowed hypothesis does; a
    bound tightened is refuted where it is attained. With an `edge`, the
    condition reaches it too (as Applies)."""

    low: object
    high: object
    strict: bool = False
    when: object = True
    edge: object = None

    @property
    def term(self):
        return arith.implies(self.when, self.low < self.high if self.strict else self.low <= self.high)

    def covers(self, name: str) -> dict[str, object]:
        closest = (self.low + 1 if self.strict else self.low) == self.high
        covers = {f"{name}: the bound attained": arith.all_of(self.when, closest)}
        if self.edge is not None:
            covers.update(_edge_cover(name, self.when, self.edge))
        return covers


def at_most(low, high, when=True, edge=None) -> Bound:
    """`low <= high` where `when` holds, attained by the engine."""
    return Bound(low, high, when=when, edge=edge)


def below(low, high, when=True, edge=None) -> Bound:
    """`low < high` where `when` holds, attained by the engine (`low == high - 1`)."""
    return Bound(low, high, strict=True, when=when, edge=edge)


def at_least(high, low, when=True, edge=None) -> Bound:
    """`high >= low` where `when` holds, attained by the engine."""
    return Bound(low, high, when=when, edge=edge)


@dataclass
class Claim:
    """Named hypotheses, a goal and cover goals. A goal given as a dict is a
    conjunction of named conjuncts: `goal` is then their conjunction and
    `conjuncts` keeps them by name, so the manifest can ask that a mutant
    refute one of them alone (runner.py). A conjunct given as a Bound or
    Applies, or a whole goal given as one, is its implication, and what it
    must reach (the bound attained, the condition at its edge) is a cover
    goal of the claim's, named after the conjunct ("the goal" for a whole
    one)."""

    hypotheses: dict[str, object]
    goal: object
    covers: dict[str, object] = field(default_factory=dict)
    conjuncts: dict[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if isinstance(self.goal, Bound | Applies):
            self.covers = {**self.covers, **self.goal.covers("the goal")}
            self.goal = self.goal.term
        if isinstance(self.goal, dict):
            self.conjuncts = {}
            for name, conjunct in self.goal.items():
                if isinstance(conjunct, Bound | Applies):
                    self.covers = {**self.covers, **conjunct.covers(name)}
                    conjunct = conjunct.term
                self.conjuncts[name] = conjunct
            self.goal = arith.all_of(*self.conjuncts.values())


class UnknownConjunct(LookupError):
    """The manifest names a goal conjunct the theorem's claim does not have."""


def conjunct_alone(formula: Formula, name: str) -> Formula:
    """The claim of `formula` with its goal cut down to the conjunct `name`,
    its hypotheses kept and no covers: read symbolically and concretely alike."""

    def alone(variant, x: dict) -> Claim:
        claim = formula(variant, x)
        if name not in claim.conjuncts:
            known = ", ".join(repr(n) for n in claim.conjuncts) or "none"
            raise UnknownConjunct(f"the goal has no conjunct named {name!r} (it names {known})")
        return Claim(hypotheses=claim.hypotheses, goal=claim.conjuncts[name])

    return alone


Formula = Callable[[object, dict[str, object]], Claim]


def symbolic_inputs(variables: Sequence[Var], ctx: z3.Context) -> dict[str, z3.ExprRef]:
    """A Z3 constant per input, in `ctx`: every term of a claim read with them
    is built in that context (models/arith.py takes it from its arguments)."""
    return {v.name: (z3.Bool(v.name, ctx) if v.kind is Kind.BOOL else z3.Int(v.name, ctx)) for v in variables}


def hypotheses_false(claim: Claim, drop=()) -> list[str]:
    """The hypotheses of a claim read on ints that do not hold, but those in `drop`."""
    return [name for name, holds in claim.hypotheses.items() if name not in drop and not holds]


def replay(formula: Formula, variant, values: dict[str, int | bool], drop=()) -> tuple[bool, str]:
    """Evaluate the claim on ints: does it really violate the goal under the hypotheses?"""
    try:
        claim = formula(variant, dict(values))
    except ZeroDivisionError:
        return _replay_crash(formula, variant, values, drop)
    failed = hypotheses_false(claim, drop)
    if failed:
        return False, f"hypotheses {', '.join(failed)} do not hold concretely"
    if claim.goal:
        return False, "the goal holds concretely"
    return True, ""


def read_recording_crashes(formula: Formula, variant, values: dict[str, int | bool]) -> tuple[Claim | None, list]:
    """The claim read on ints with the divisions by zero recorded
    (models/arith.py), and those divisions; no claim when a division outside
    models/arith.py raised."""
    with arith.divisions_by_zero_recorded() as crashes:
        try:
            claim = formula(variant, dict(values))
        except ZeroDivisionError:
            claim = None
    return claim, crashes


def _replay_crash(formula: Formula, variant, values: dict[str, int | bool], drop) -> tuple[bool, str]:
    """The concrete model divided by zero on `values`. Read again with the
    divisions by zero recorded: if every hypothesis holds, the model crashes
    on an admissible input, which violates the goal's definedness
    obligation: a genuine counterexample."""
    claim, crashes = read_recording_crashes(formula, variant, values)
    if claim is None or not crashes:
        return False, "the concrete model divides by zero outside models/arith.py"
    failed = hypotheses_false(claim, drop)
    if failed:
        return False, f"the concrete model divides by zero, and hypotheses {', '.join(failed)} do not hold there"
    return True, f"the model divides by zero at {crashes[0]} on this input"
