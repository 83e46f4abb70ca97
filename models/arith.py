"""The dual arithmetic every model function computes with.

Called on Python ints it computes exactly what Python does. Called with any Z3
term it returns Z3 terms, and every floor division becomes a fresh quotient and
remainder pinned by linear-in-the-witness constraints recorded in the active
`SymbolicContext` (see ../shared/reference/z3-encoding.md: `/` and `%` on a
symbolic divisor turn proofs into timeouts). Model code never writes `//`,
`%`, `min`, `max`, `and`, `or` or `if` on a value that may be symbolic.
"""

from __future__ import annotations

import contextvars
import math
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import z3

_active: contextvars.ContextVar[SymbolicContext | None] = contextvars.ContextVar(
    "gridproof_symbolic_context", default=None
)


def is_symbolic(*values: object) -> bool:
    return any(isinstance(v, z3.ExprRef) for v in values)


class SymbolicContext:
    """Collects what the symbolic reading of a model call introduced.

    `definitions` hold by construction (they define witnesses); `obligations`
    are facts the model relies on (a divisor is not zero) that the hypotheses
    of a theorem must imply: the runner proves them with the goal.
    """

    def __init__(self) -> None:
        self.definitions: list[z3.BoolRef] = []
        self.obligations: list[z3.BoolRef] = []
        self._divisions: dict[tuple[int, int], tuple[z3.ArithRef, z3.ArithRef]] = {}
        self._lcms: dict[tuple[int, ...], z3.ArithRef] = {}
        self._counter = 0

    def fresh(self, stem: str) -> z3.ArithRef:
        self._counter += 1
        return z3.Int(f"_{stem}{self._counter}")

    def divide(self, x: z3.ArithRef, d: z3.ArithRef) -> tuple[z3.ArithRef, z3.ArithRef]:
        key = (x.get_id(), d.get_id())
        if key not in self._divisions:
            q, r = self.fresh("q"), self.fresh("r")
            self.definitions.append(x == q * d + r)
            if z3.is_int_value(d):
                value = d.as_long()
                if value == 0:
                    raise ZeroDivisionError("model divides by the constant 0")
                bounds = z3.And(0 <= r, r < d) if value > 0 else z3.And(d < r, r <= 0)
                self.definitions.append(bounds)
            else:
                # Python floors: the remainder takes the divisor's sign.
                self.definitions.append(z3.Implies(d > 0, z3.And(0 <= r, r < d)))
                self.definitions.append(z3.Implies(d < 0, z3.And(d < r, r <= 0)))
                self.obligations.append(d != 0)
            self._divisions[key] = (q, r)
        return self._divisions[key]

    def lcm(self, terms: tuple[z3.ArithRef, ...]) -> z3.ArithRef:
        """A positive common multiple of positive `terms`, at most their product.

        The exact lcm is not expressible without quantifiers; every property
        proved about this over-approximation holds for the true lcm, and a
        counterexample that relies on the slack fails concrete replay.
        """
        key = tuple(t.get_id() for t in terms)
        if key not in self._lcms:
            result = self.fresh("lcm")
            product = z3.IntVal(1)
            for t in terms:
                witness = self.fresh("lcmw")
                self.definitions.append(result == witness * t)
                self.definitions.append(witness >= 1)
                product = product * t
                self.obligations.append(t > 0)
            self.definitions.append(result <= product)
            self._lcms[key] = result
        return self._lcms[key]


@contextmanager
def symbolic_context() -> Iterator[SymbolicContext]:
    context = SymbolicContext()
    token = _active.set(context)
    try:
        yield context
    finally:
        _active.reset(token)


def _context() -> SymbolicContext:
    context = _active.get()
    if context is None:
        raise RuntimeError("symbolic model call outside arith.symbolic_context()")
    return context


def _term(x: object) -> z3.ExprRef:
    if isinstance(x, z3.ExprRef):
        return x
    if isinstance(x, bool):
        return z3.BoolVal(x)
    return z3.IntVal(x)


def floordiv(x, d):
    if is_symbolic(x, d):
        return _context().divide(_term(x), _term(d))[0]
    return x // d


def mod(x, d):
    if is_symbolic(x, d):
        return _context().divide(_term(x), _term(d))[1]
    return x % d


def cdiv(x, d):
    """vLLM's `cdiv`: -(x // -d), i.e. the ceiling of x / d."""
    return -floordiv(-x, d)


def round_down(x, d):
    return floordiv(x, d) * d


def divides(d, x):
    """d | x. Only for goals and model branches; state hypotheses with witnesses."""
    return mod(x, d) == 0


def ite(condition, then, otherwise):
    if is_symbolic(condition, then, otherwise):
        return z3.If(_term(condition), _term(then), _term(otherwise))
    return then if condition else otherwise


def minimum(first, *rest):
    result = first
    for x in rest:
        result = ite(x < result, x, result)
    return result


def maximum(first, *rest):
    result = first
    for x in rest:
        result = ite(x > result, x, result)
    return result


def lcm(*xs):
    if is_symbolic(*xs):
        if len(xs) == 1:
            return xs[0]
        return _context().lcm(tuple(_term(x) for x in xs))
    return math.lcm(*xs)


def all_of(*conditions):
    if is_symbolic(*conditions):
        return z3.And(*(_term(c) for c in conditions))
    return all(conditions)


def any_of(*conditions):
    if is_symbolic(*conditions):
        return z3.Or(*(_term(c) for c in conditions))
    return any(conditions)


def negate(condition):
    if is_symbolic(condition):
        return z3.Not(condition)
    return not condition


def implies(premise, conclusion):
    return any_of(negate(premise), conclusion)


def all_in(conditions: Iterable):
    return all_of(True, *conditions)
