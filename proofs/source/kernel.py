"""A Triton kernel's body run as Python: one program, one lane.

`tl` is a stand-in: `program_id` is 0, `arange(a, a + 1)` is the one lane
`a` (a wider block is refused), pointers are offsets into Python lists, and
`load`/`store` honour their masks (a symbolic mask forks). Loaded values are
`Lane`s: symbolic integers with Triton's integer semantics, where `//` and
`%` truncate toward zero. They are read as Python's floor division only on a
path where the dividend is non-negative and the divisor positive (the two
agree there); a path where that may fail is refused, never guessed.
Constant lanes are folded, so the kernel also runs concretely (a replay)
without a path oracle.
"""

from __future__ import annotations

import z3

from proofs.source import paths
from proofs.source.proxy import SymBool, SymInt, Unsupported, _int_operand


def lane(value: object) -> Lane:
    """An int, a Z3 term or a proxy as a lane."""
    t = _int_operand(value) if not isinstance(value, z3.ArithRef) else value
    if t is None:
        raise Unsupported(f"a {type(value).__name__} loaded where an integer is expected")
    return Lane(z3.simplify(t))


def value_of(x: object) -> object:
    """A lane's value: a Python int when it is constant, else the lane."""
    t = _int_operand(x)
    return t.as_long() if z3.is_int_value(t) else x


def _truth(condition: z3.BoolRef) -> bool:
    """A constant condition is its value (no oracle needed); any other forks."""
    simplified = z3.simplify(condition)
    if z3.is_true(simplified) or z3.is_false(simplified):
        return z3.is_true(simplified)
    return paths.decide(condition)


class LaneBool(SymBool):
    """A lane's comparison: Triton combines masks with `&`, `|` and `~`."""

    def __bool__(self):
        return _truth(self.term)

    def _combine(self, other, build):
        if isinstance(other, bool):
            other = z3.BoolVal(other)
        elif isinstance(other, SymBool):
            other = other.term
        else:
            return NotImplemented
        return LaneBool(z3.simplify(build(self.term, other)))

    def __and__(self, other):
        return self._combine(other, lambda a, b: z3.And(a, b))

    __rand__ = __and__

    def __or__(self, other):
        return self._combine(other, lambda a, b: z3.Or(a, b))

    __ror__ = __or__

    def __invert__(self):
        return LaneBool(z3.simplify(z3.Not(self.term)))


class Lane(SymInt):
    __slots__ = ()

    def __bool__(self):
        return _truth(self.term != 0)

    def _binary(self, other, build):
        o = _int_operand(other)
        return NotImplemented if o is None else Lane(z3.simplify(build(self.term, o)))

    def __neg__(self):
        return Lane(z3.simplify(-self.term))

    def _compare(self, other, build):
        o = _int_operand(other)
        return NotImplemented if o is None else LaneBool(z3.simplify(build(self.term, o)))

    def __eq__(self, other):
        return self._compare(other, lambda a, b: a == b)

    def __ne__(self, other):
        return self._compare(other, lambda a, b: a != b)

    def _divide(self, dividend, divisor, part):
        a, b = z3.simplify(dividend), z3.simplify(divisor)
        if z3.is_int_value(a) and z3.is_int_value(b):
            x, d = a.as_long(), b.as_long()
            if d == 0:
                raise Unsupported("a Triton division by zero (undefined on the GPU)")
            q = abs(x) // abs(d) * (1 if (x >= 0) == (d > 0) else -1)
            return Lane(z3.IntVal(q if part == "q" else x - q * d))
        if not _truth(z3.And(a >= 0, b > 0)):
            raise Unsupported("Triton's truncating division of a value that may be negative")
        return Lane(SymInt._divide(self, a, b, part).term)


class Pointer:
    """A pointer into a Python list: only concrete offsets."""

    def __init__(self, memory: list, offset: int = 0) -> None:
        self.memory = memory
        self.offset = offset

    def __add__(self, k):
        k = value_of(k)
        if not isinstance(k, int):
            raise Unsupported("a pointer moved by a symbolic offset")
        return Pointer(self.memory, self.offset + k)

    __radd__ = __add__


def _masked(mask) -> bool:
    return bool(mask)  # a symbolic mask forks the path


class Language:
    """The `tl` module, for one program of one lane."""

    @staticmethod
    def program_id(axis):
        return 0

    @staticmethod
    def arange(start, end):
        if value_of(end) - value_of(start) != 1:
            raise Unsupported("tl.arange over more than one lane")
        return start

    @staticmethod
    def load(pointer: Pointer, mask=True, other=0):
        return lane(pointer.memory[pointer.offset] if _masked(mask) else other)

    @staticmethod
    def store(pointer: Pointer, value, mask=True):
        if _masked(mask):
            pointer.memory[pointer.offset] = lane(value)

    @staticmethod
    def maximum(a, b):
        a, b = lane(a), lane(b)
        return Lane(z3.simplify(z3.If(a.term >= b.term, a.term, b.term)))

    @staticmethod
    def where(condition, a, b):
        """Per lane, `a` where the condition holds, else `b`: one term, no fork."""
        c = condition.term if isinstance(condition, SymBool) else z3.BoolVal(bool(condition))
        a, b = lane(a), lane(b)
        return Lane(z3.simplify(z3.If(c, a.term, b.term)))

    @staticmethod
    def minimum(a, b):
        a, b = lane(a), lane(b)
        return Lane(z3.simplify(z3.If(a.term <= b.term, a.term, b.term)))
