"""Symbolic values the shipped Python runs on.

A `SymInt` carries a `models.arith` term: arithmetic builds terms (floor
division and modulo through the witness encoding, with Python's semantics),
comparisons build a `SymBool`, and a `SymBool`'s truth is asked of the path
oracle (proofs/source/paths.py), which forks the execution. Nothing symbolic
is ever turned into a Python int: `int()`, indexing and hashing refuse, and
the refusal names the source line.
"""

from __future__ import annotations

import z3

from models import arith
from proofs.source import paths


class Unsupported(Exception):
    """The executor cannot follow the code exactly here: the function's
    reading is UNKNOWN, with this message and the line that asked."""


def term(value: object) -> z3.ExprRef:
    """The Z3 term of a proxy or a concrete int or bool."""
    if isinstance(value, (SymInt, SymBool)):
        return value.term
    if isinstance(value, bool):
        return z3.BoolVal(value)
    if isinstance(value, int):
        return z3.IntVal(value)
    raise Unsupported(f"a {type(value).__name__} value where an int or bool is expected")


def wrap(value: object) -> object:
    """A proxy for a Z3 term; concrete values and proxies unchanged."""
    if isinstance(value, z3.BoolRef):
        return SymBool(value)
    if isinstance(value, z3.ArithRef):
        return SymInt(value)
    return value


def _int_operand(value: object) -> z3.ArithRef | None:
    if isinstance(value, SymInt):
        return value.term
    if isinstance(value, SymBool):
        return z3.If(value.term, z3.IntVal(1), z3.IntVal(0))
    if isinstance(value, (bool, int)):
        return z3.IntVal(int(value))
    return None


def _nonzero_divisor(divisor: z3.ArithRef) -> None:
    """Python raises ZeroDivisionError for a zero divisor: fork on it."""
    if z3.is_int_value(divisor):
        if divisor.as_long() == 0:
            raise ZeroDivisionError("integer division or modulo by zero")
        return
    if paths.decide(divisor == 0, kind="division"):
        raise ZeroDivisionError("integer division or modulo by zero")


def _negated(divisor: z3.ArithRef) -> z3.ArithRef | None:
    """d when `divisor` is visibly -d."""
    d = z3.simplify(divisor)
    if z3.is_mul(d) and d.num_args() == 2 and z3.is_int_value(d.arg(0)) and d.arg(0).as_long() == -1:
        return d.arg(1)
    return None


def _size(t: z3.ExprRef) -> int:
    return 1 + sum(_size(c) for c in t.children())


def _ceiling_of(dividend: z3.ArithRef, divisor: z3.ArithRef) -> z3.ArithRef | None:
    """x when the dividend is visibly x + divisor - 1 (what is left without
    `divisor - 1` is a smaller term), else None."""
    whole = z3.simplify(dividend)
    base = z3.simplify(dividend - divisor + 1)
    return base if _size(base) < _size(whole) else None


def _positive(divisor: z3.ArithRef) -> bool:
    """Whether the divisor is positive on this path (a fork if that is open)."""
    if z3.is_int_value(divisor):
        return divisor.as_long() > 0
    return paths.decide(divisor > 0, kind="division")


class _Opaque:
    """A value the executor does not model (a true division's float): it may
    be passed along (to a logger) but not computed with or branched on."""

    def __init__(self, what: str) -> None:
        self.what = what

    def _refuse(self, *_args, **_kwargs):
        raise Unsupported(f"{self.what} used in a computation or a branch")

    __bool__ = __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _refuse
    __lt__ = __le__ = __gt__ = __ge__ = __int__ = __index__ = __float__ = _refuse
    __truediv__ = __rtruediv__ = __floordiv__ = __mod__ = _refuse


class SymInt:
    __slots__ = ("term",)

    def __init__(self, t: z3.ArithRef) -> None:
        self.term = t

    def __repr__(self) -> str:
        return f"SymInt({self.term})"

    def _binary(self, other, build):
        o = _int_operand(other)
        if o is None:
            return NotImplemented
        return SymInt(build(self.term, o))

    def __add__(self, other):
        return self._binary(other, lambda a, b: a + b)

    def __radd__(self, other):
        return self._binary(other, lambda a, b: b + a)

    def __sub__(self, other):
        return self._binary(other, lambda a, b: a - b)

    def __rsub__(self, other):
        return self._binary(other, lambda a, b: b - a)

    def __mul__(self, other):
        return self._binary(other, lambda a, b: a * b)

    def __rmul__(self, other):
        return self._binary(other, lambda a, b: b * a)

    def __neg__(self):
        return SymInt(-self.term)

    def __pos__(self):
        return self

    def _divide(self, dividend, divisor, part):
        _nonzero_divisor(divisor)
        # arith owes `divisor != 0` everywhere, as a model divides on every
        # branch; this division happens on this path only, where the fork
        # above has decided it: a zero divisor is a raising path of its own.
        obligations = arith._context().obligations
        owed = len(obligations)
        negated = _negated(divisor)
        if negated is not None:
            # x // -d == -x // d and x % -d == -(-x % d): one witness for the
            # division however it is written (vLLM's cdiv divides by -d,
            # arith's by d), so readings of one formula share their quotients.
            result = arith.floordiv(-dividend, negated) if part == "q" else -arith.mod(-dividend, negated)
        elif part == "q" and (base := _ceiling_of(dividend, divisor)) is not None and _positive(divisor):
            # (x + d - 1) // d == -(-x // d) for d > 0: a rounding up
            # written as vLLM's round_up (or a cdiv so rewritten) has the
            # witness cdiv's has, -x // d.
            result = -arith.floordiv(-base, divisor)
        else:
            result = arith.floordiv(dividend, divisor) if part == "q" else arith.mod(dividend, divisor)
        del obligations[owed:]
        return SymInt(result)

    def __floordiv__(self, other):
        o = _int_operand(other)
        return NotImplemented if o is None else self._divide(self.term, o, "q")

    def __rfloordiv__(self, other):
        o = _int_operand(other)
        return NotImplemented if o is None else self._divide(o, self.term, "q")

    def __mod__(self, other):
        o = _int_operand(other)
        return NotImplemented if o is None else self._divide(self.term, o, "r")

    def __rmod__(self, other):
        o = _int_operand(other)
        return NotImplemented if o is None else self._divide(o, self.term, "r")

    def __truediv__(self, other):
        return _Opaque("a true division (a float)")

    __rtruediv__ = __truediv__

    def _compare(self, other, build):
        o = _int_operand(other)
        if o is None:
            return NotImplemented
        return SymBool(build(self.term, o))

    def __lt__(self, other):
        return self._compare(other, lambda a, b: a < b)

    def __le__(self, other):
        return self._compare(other, lambda a, b: a <= b)

    def __gt__(self, other):
        return self._compare(other, lambda a, b: a > b)

    def __ge__(self, other):
        return self._compare(other, lambda a, b: a >= b)

    def __eq__(self, other):
        o = _int_operand(other)
        return False if o is None else SymBool(self.term == o)

    def __ne__(self, other):
        o = _int_operand(other)
        return True if o is None else SymBool(self.term != o)

    def __bool__(self):
        return paths.decide(self.term != 0)

    def _refuse(self, *_args):
        raise Unsupported("a symbolic int made concrete (int(), an index, a range bound or a hash)")

    __int__ = __index__ = __float__ = __hash__ = __abs__ = _refuse


class SymBool:
    __slots__ = ("term",)

    def __init__(self, t: z3.BoolRef) -> None:
        self.term = t

    def __repr__(self) -> str:
        return f"SymBool({self.term})"

    def __bool__(self):
        return paths.decide(self.term)

    def __eq__(self, other):
        if isinstance(other, (SymBool, bool)):
            return SymBool(self.term == term(other))
        o = _int_operand(other)
        return False if o is None else SymBool(_int_operand(self) == o)

    def __ne__(self, other):
        result = self.__eq__(other)
        return SymBool(z3.Not(result.term)) if isinstance(result, SymBool) else not result

    def _as_int(self) -> SymInt:
        return SymInt(_int_operand(self))

    def __add__(self, other):
        return self._as_int() + other

    def __radd__(self, other):
        return other + self._as_int()

    def _refuse(self, *_args):
        raise Unsupported("a symbolic bool made concrete (int(), an index or a hash)")

    __int__ = __index__ = __hash__ = _refuse
