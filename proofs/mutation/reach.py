"""Which theorems read which model functions, and with what kind of arguments.

Each theorem's claims are built once per variant, symbolically and with a
few concrete inputs, while a profiler records every call of a model
function. A mutant of a function that no claim of a theorem calls cannot
change that theorem's verdicts (the claim and its replay run the very same
code), so only the theorems that read the function are run on it. The
recorded arguments, as shapes (which values are Int or Bool terms, which are
fixed), are the inputs of the equivalence check (equivalence.py).
"""

from __future__ import annotations

import contextlib
import dataclasses
import random
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

import z3

from models import arith
from models.variants import VARIANTS, Variant
from proofs.catalog import CATALOGUE
from proofs.engine.enumerated import decide_enumeration
from proofs.engine.solver import Kind, symbolic_inputs
from proofs.faults.patch import live_function

SHAPES_PER_VARIANT = 16  # distinct argument shapes kept per function and variant (last_cacheable_position: 14)
CONCRETE_PROBES = 4  # concrete inputs each claim is also read with


@dataclass(frozen=True)
class IntLeaf:
    """A value read as an Int term."""


@dataclass(frozen=True)
class BoolLeaf:
    """A value read as a Bool term."""


@dataclass(frozen=True)
class Fixed:
    """A value passed as it is (a variant, a geometry, a Python int or bool)."""

    value: object


@dataclass(frozen=True)
class Record:
    cls: type
    fields: tuple[tuple[str, object], ...]


@dataclass(frozen=True)
class Sequence_:
    cls: type
    items: tuple


@dataclass(frozen=True)
class Call:
    variant: Variant
    arguments: tuple[tuple[str, object], ...]  # parameter name -> shape


@dataclass
class Reach:
    theorems: dict[str, set[str]] = field(default_factory=dict)  # "module:function" -> theorem names
    calls: dict[str, list[Call]] = field(default_factory=dict)  # "module:function" -> shapes
    # Functions called with more distinct shapes than SHAPES_PER_VARIANT keeps for some variant.
    truncated: set[str] = field(default_factory=set)


def key(module: str, function: str) -> str:
    return f"{module}:{function}"


def shape(value: object) -> object:
    if isinstance(value, z3.ExprRef):
        return BoolLeaf() if z3.is_bool(value) else IntLeaf()
    if isinstance(value, (tuple, list)):
        items = tuple(shape(v) for v in value)
        if any(not isinstance(i, Fixed) for i in items):
            return Sequence_(type(value), items)
        return Fixed(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, (type, Variant)):
        fields = tuple((f.name, shape(getattr(value, f.name))) for f in dataclasses.fields(value))
        if any(not isinstance(s, Fixed) for _, s in fields):
            return Record(type(value), fields)
    return Fixed(value)


def codes_of(functions: Iterable[tuple[str, str]]) -> dict:
    """The code object of each (module, function), keyed to its "module:function"."""
    return {live_function(m, f).__code__: key(m, f) for m, f in functions}


@contextlib.contextmanager
def profiled(codes: dict, on_call: Callable[[str, object], None]) -> Iterator[None]:
    """Within the block, `on_call(name, frame)` on every call of a code in `codes`."""

    def profile(frame, event, _arg):
        if event == "call" and frame.f_code in codes:
            on_call(codes[frame.f_code], frame)

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        yield
    finally:
        sys.setprofile(previous)


def capture(functions: Iterable[tuple[str, str]], theorems: dict[str, list[str]]) -> Reach:
    """`theorems`: theorem name -> the engine variants it is decided for."""
    reach = Reach()
    current: list[str] = [""]
    variant_now: list[Variant] = [VARIANTS["baseline"]]
    seen: set[tuple[str, str, str]] = set()

    def record(name: str, frame) -> None:
        """The profiler's hook: record that the current theorem reads `name`, and keep the call's argument
        shapes, unless all fixed, up to SHAPES_PER_VARIANT per variant (a function past that is truncated)."""
        reach.theorems.setdefault(name, set()).add(current[0])
        code = frame.f_code
        if code.co_flags & (inspect_varargs | inspect_varkeywords):
            return
        parameters = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
        arguments = tuple((p, shape(frame.f_locals[p])) for p in parameters)
        if all(isinstance(s, Fixed) for _, s in arguments):
            return  # a concrete read: no symbolic shape to learn from
        signature = (name, variant_now[0].name, repr(arguments))
        kept = reach.calls.setdefault(name, [])
        same_variant = sum(c.variant.name == variant_now[0].name for c in kept)
        if signature not in seen and same_variant < SHAPES_PER_VARIANT:
            seen.add(signature)
            kept.append(Call(variant_now[0], arguments))
        elif signature not in seen:
            reach.truncated.add(name)

    with profiled(codes_of(functions), record):
        for theorem_name, variants in theorems.items():
            theorem = CATALOGUE[theorem_name]
            current[0] = theorem_name
            obligations = [*theorem.obligations, *([theorem.trace_search] if theorem.trace_search else [])]
            for variant_name in variants:
                variant_now[0] = VARIANTS[variant_name]
                for obligation in obligations:
                    _read(obligation, variant_now[0])
                if theorem.enumeration is not None:
                    decide_enumeration(theorem.enumeration, variant_now[0])  # every case, as a decision runs them
    return reach


inspect_varargs, inspect_varkeywords = 0x04, 0x08  # CO_VARARGS, CO_VARKEYWORDS


def _read(obligation, variant: Variant) -> None:
    """The obligation's claim read symbolically, then with a few concrete inputs."""
    with arith.symbolic_context():
        obligation.formula(variant, symbolic_inputs(obligation.variables, z3.Context()))
    rng = random.Random(0)
    for probe in range(CONCRETE_PROBES):
        values = {
            v.name: (rng.random() < 0.5 if v.kind is Kind.BOOL else (1 if probe == 0 else rng.randint(1, 24)))
            for v in obligation.variables
        }
        try:
            obligation.formula(variant, values)
        except Exception:  # a probe outside the domain (a zero divisor) reads less, not wrongly
            continue
