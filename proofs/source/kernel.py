"""A Triton kernel's body run as Python: one program at a time.

`tl` is a stand-in: `program_id` is the launched program's (0 outside a
`Jit` launch), `arange(a, a + 1)` is the one lane `a`, a wider `arange` is a
`Block` (a small tensor of lanes, broadcast as Triton broadcasts, indexed
`[:, None]`-style), pointers are offsets into Python lists or into a
`Table` (which a symbolic offset may index), and `load`/`store` honour their
masks lane by lane (a symbolic mask forks; a store whose mask is false
writes nothing). A loaded int64 that is an `Address` becomes a pointer with
`.to(tl.pointer_type(...))`. `Jit` stands for a `@triton.jit` kernel that a
launcher launches as `kernel[grid](...)`: it runs the kernel's source once
per program of the grid. Loaded values are
`Lane`s: symbolic integers with Triton's integer semantics, where `//` and
`%` truncate toward zero. They are read as Python's floor division only on a
path where the dividend is non-negative and the divisor positive (the two
agree there); a path where that may fail is refused, never guessed.
Constant lanes are folded, so the kernel also runs concretely (a replay)
without a path oracle.
"""

from __future__ import annotations

import contextvars
import itertools
import operator
from dataclasses import dataclass

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


class Table:
    """A buffer read at symbolic offsets (a block table): the value at offset
    `o` is `Read(table, o)`, which records where it was read."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"Table({self.name})"


@dataclass(frozen=True)
class Read:
    """A value loaded from a `Table`: which one, and at which offset (a Lane)."""

    table: Table
    offset: Lane


class _Undefined:
    """What a masked-off `tl.load` without `other` gives: storing it records
    it, computing with it or branching on it is refused."""

    def __repr__(self) -> str:
        return "UNDEFINED"

    def _refuse(self, *_args):
        raise Unsupported("a masked-off load's undefined value used")

    __bool__ = __add__ = __radd__ = __sub__ = __mul__ = __lt__ = __gt__ = _refuse


UNDEFINED = _Undefined()


class Pointer:
    """A pointer into a Python list (only concrete offsets) or into a
    `Table` (any offset); `memory` None is a null pointer, never read."""

    def __init__(self, memory, offset=0) -> None:
        self.memory = memory
        self.offset = offset

    def __add__(self, k):
        if isinstance(k, Block):
            return NotImplemented
        if isinstance(self.memory, Table):
            return Pointer(self.memory, lane(self.offset) + lane(k))
        k = value_of(k)
        if not isinstance(k, int):
            raise Unsupported("a pointer into a list moved by a symbolic offset")
        return Pointer(self.memory, self.offset + k)

    __radd__ = __add__

    def read(self):
        if self.memory is None:
            raise Unsupported("a load through a null pointer")
        if isinstance(self.memory, Table):
            return Read(self.memory, lane(self.offset))
        if not 0 <= self.offset < len(self.memory):
            raise Unsupported(f"a load at offset {self.offset}, outside a buffer of {len(self.memory)}")
        return self.memory[self.offset]

    def write(self, value) -> None:
        if not isinstance(self.memory, list):
            raise Unsupported("a store through a pointer that is not into a buffer")
        if not 0 <= self.offset < len(self.memory):
            raise Unsupported(f"a store at offset {self.offset}, outside a buffer of {len(self.memory)}")
        self.memory[self.offset] = value


class PointerType:
    """`tl.pointer_type(dtype)`."""

    def __init__(self, dtype) -> None:
        self.dtype = dtype


@dataclass(frozen=True)
class Address:
    """An int64 holding a buffer's base address (a tensor's `data_ptr()`)."""

    memory: object

    def to(self, dtype):
        if not isinstance(dtype, PointerType):
            raise Unsupported("an address cast to a value type")
        return Pointer(self.memory, 0)


def _cast(value, dtype):
    """`value.to(dtype)` of one lane: an address or 0 (a null pointer) to a pointer; an integer stays itself."""
    if isinstance(value, Address):
        return value.to(dtype)
    if isinstance(dtype, PointerType):
        if value_of(value) == 0:
            return Pointer(None)
        raise Unsupported("an integer other than 0 cast to a pointer")
    return value


class Block:
    """A Triton tensor of a concrete shape: its lanes, row-major. Operators
    apply lane by lane with numpy-style broadcasting."""

    def __init__(self, shape: tuple[int, ...], items: list) -> None:
        self.shape = shape
        self.items = items

    def __repr__(self) -> str:
        return f"Block{self.shape}"

    def at(self, index: tuple[int, ...]):
        shape = (1,) * (len(index) - len(self.shape)) + self.shape
        flat = 0
        for size, i in zip(shape, index, strict=True):
            flat = flat * size + (0 if size == 1 else i)
        return self.items[flat]

    def __getitem__(self, key):
        """`[:, None]`-style indexing: a full slice keeps a dimension, None inserts one of size 1."""
        key = key if isinstance(key, tuple) else (key,)
        dims, shape = iter(self.shape), []
        for k in key:
            if k is None:
                shape.append(1)
            elif isinstance(k, slice) and k == slice(None):
                shape.append(next(dims))
            else:
                raise Unsupported(f"a tensor indexed by {k!r}, not by : or None")
        return Block((*shape, *dims), self.items)

    def __bool__(self):
        if len(self.items) != 1:
            raise Unsupported("the truth of a tensor of more than one lane")
        return bool(self.items[0])

    def to(self, dtype):
        return lanewise(lambda v: _cast(v, dtype), self)

    def __neg__(self):
        return lanewise(operator.neg, self)

    def __invert__(self):
        return lanewise(operator.invert, self)


def _operators():
    for name in ("add", "sub", "mul", "floordiv", "mod", "and", "or", "lt", "le", "gt", "ge", "eq", "ne"):
        op = getattr(operator, f"{name}_" if name in ("and", "or") else name)
        setattr(Block, f"__{name}__", lambda self, other, op=op: lanewise(op, self, other))
        if name not in ("lt", "le", "gt", "ge", "eq", "ne"):
            setattr(Block, f"__r{name}__", lambda self, other, op=op: lanewise(lambda a, b: op(b, a), self, other))
    Block.__hash__ = None


_operators()


def lanewise(function, *arguments):
    """`function` of each lane of the broadcast `Block`s (other arguments as they are)."""
    blocks = [a.shape for a in arguments if isinstance(a, Block)]
    if not blocks:
        return function(*arguments)
    rank = max(len(s) for s in blocks)
    shape = []
    for dim in range(rank):
        sizes = {s[dim - rank + len(s)] for s in blocks if dim - rank + len(s) >= 0} - {1}
        if len(sizes) > 1:
            raise Unsupported(f"tensors of shapes {blocks} do not broadcast")
        shape.append(sizes.pop() if sizes else 1)
    items = [
        function(*(a.at(index) if isinstance(a, Block) else a for a in arguments))
        for index in itertools.product(*(range(n) for n in shape))
    ]
    return Block(tuple(shape), items)


def _masked(mask) -> bool:
    return bool(mask)  # a symbolic mask forks the path


def _loaded(value):
    """A loaded lane: an integer as a Lane; an address, a table read or an undefined value as it is."""
    return value if isinstance(value, (Address, Read, _Undefined)) else lane(value)


_program: contextvars.ContextVar[tuple[int, ...]] = contextvars.ContextVar("gridproof_program", default=(0, 0, 0))


class Language:
    """The `tl` module, for one program at a time."""

    int32 = "int32"
    int64 = "int64"
    constexpr = "constexpr"
    pointer_type = PointerType

    @staticmethod
    def program_id(axis):
        return _program.get()[axis]

    @staticmethod
    def arange(start, end):
        first, last = value_of(start), value_of(end)
        if not (isinstance(first, int) and isinstance(last, int)) or last <= first:
            raise Unsupported("tl.arange over a symbolic or empty range")
        return Block((last - first,), list(range(first, last)))

    @staticmethod
    def load(pointer: Pointer, mask=True, other=None):
        if any(isinstance(a, Block) for a in (pointer, mask, other)):
            return lanewise(Language.load, pointer, mask, other)
        if not _masked(mask):
            return UNDEFINED if other is None else _loaded(other)
        return _loaded(pointer.read())

    @staticmethod
    def store(pointer: Pointer, value, mask=True):
        if any(isinstance(a, Block) for a in (pointer, value, mask)):
            lanewise(Language.store, pointer, value, mask)
        elif _masked(mask):
            pointer.write(value if isinstance(value, (Read, _Undefined)) else lane(value))

    @staticmethod
    def maximum(a, b):
        if isinstance(a, Block) or isinstance(b, Block):
            return lanewise(Language.maximum, a, b)
        a, b = lane(a), lane(b)
        return Lane(z3.simplify(z3.If(a.term >= b.term, a.term, b.term)))

    @staticmethod
    def where(condition, a, b):
        """Per lane, `a` where the condition holds, else `b`: one term, no fork."""
        if any(isinstance(v, Block) for v in (condition, a, b)):
            return lanewise(Language.where, condition, a, b)
        c = condition.term if isinstance(condition, SymBool) else z3.BoolVal(bool(condition))
        a, b = lane(a), lane(b)
        return Lane(z3.simplify(z3.If(c, a.term, b.term)))

    @staticmethod
    def minimum(a, b):
        if isinstance(a, Block) or isinstance(b, Block):
            return lanewise(Language.minimum, a, b)
        a, b = lane(a), lane(b)
        return Lane(z3.simplify(z3.If(a.term <= b.term, a.term, b.term)))


LAUNCH_OPTIONS = ("num_warps", "num_stages", "num_ctas")


class Jit:
    """A `@triton.jit` kernel as a launcher sees it: `kernel[grid](*args, **constexprs)` runs the kernel's
    source (`load()` gives it, its decorator dropped) once per program of the grid, in order; the launch
    options (num_warps, ...) only tune the GPU and are dropped."""

    def __init__(self, load) -> None:
        self._load = load

    def __getitem__(self, grid):
        grid = grid if isinstance(grid, tuple) else (grid,)
        sizes = tuple(value_of(g) for g in grid)
        if not all(isinstance(s, int) for s in sizes) or len(sizes) > 3:
            raise Unsupported("a launch grid that is not up to three concrete sizes")

        def launch(*args, **kwargs):
            for option in LAUNCH_OPTIONS:
                kwargs.pop(option, None)
            kernel = self._load()
            for ids in itertools.product(*(range(s) for s in sizes)):
                token = _program.set(ids + (0,) * (3 - len(ids)))
                try:
                    kernel(*args, **kwargs)
                finally:
                    _program.reset(token)

        return launch


class Triton:
    """The `triton` module as a launcher reads it: `cdiv` and `next_power_of_2` of concrete sizes."""

    @staticmethod
    def cdiv(x, y):
        x, y = value_of(x), value_of(y)
        if not (isinstance(x, int) and isinstance(y, int)) or y <= 0:
            raise Unsupported("triton.cdiv of a symbolic or non-positive size")
        return -(-x // y)

    @staticmethod
    def next_power_of_2(n):
        n = value_of(n)
        if not isinstance(n, int) or n < 1:
            raise Unsupported("triton.next_power_of_2 of a symbolic or non-positive size")
        return 1 << (n - 1).bit_length()
