"""A shipped function as a reading beside the model's: called with ints it
runs the real code concretely; called with Z3 terms (inside an
`arith.symbolic_context()`) it explores every feasible path and returns the
if-then-else of the path values, so it drops in wherever a model function
is read. A path that raises becomes a definedness obligation of the context,
as a model's divisor does: whatever claim reads the function proves it unreachable."""

from __future__ import annotations

import contextlib
import contextvars
import traceback
from collections.abc import Callable
from dataclasses import dataclass

import z3

from models import arith
from proofs.source import paths
from proofs.source.proxy import Unsupported, term

PROXY_FILE = __file__.replace("reading.py", "proxy.py")


_built: contextvars.ContextVar[list | None] = contextvars.ContextVar("gridproof_source_readings", default=None)


@contextlib.contextmanager
def capture():
    """The Readings built symbolically within the block, in order."""
    built: list[Reading] = []
    token = _built.set(built)
    try:
        yield built
    finally:
        _built.reset(token)


class UnknownReading(Exception):
    """The executor refused a construct: the function's reading is UNKNOWN."""


def classify(files: set[str]) -> Callable[[BaseException], tuple[str, str, int]]:
    """An exception of the shipped code: "raise" for what the code itself
    raises (an assert, a `raise`, a zero divisor), "refused" for anything the
    executor could not follow, each at the innermost line of the loaded code."""

    def kind(error: BaseException) -> tuple[str, str, int]:
        frames = traceback.extract_tb(error.__traceback__)
        inner = [f for f in frames if f.filename in files]
        file, line = (inner[-1].filename, inner[-1].lineno) if inner else ("?", 0)
        if isinstance(error, Unsupported):
            return "refused", file, line
        innermost = frames[-1].filename if frames else ""
        if isinstance(error, ZeroDivisionError) and innermost == PROXY_FILE:
            return "raise", file, line
        if innermost in files and isinstance(error, (AssertionError, ValueError, RuntimeError, ZeroDivisionError)):
            return "raise", file, line
        return "refused", file, line

    return kind


def describe(path: paths.Path) -> str:
    error = path.value
    where = f"{path.file}:{path.line}"
    if path.outcome == "refused":
        return f"{where}: {type(error).__name__ if not isinstance(error, Unsupported) else 'unsupported'}: {error}"
    return f"{where}: raises {type(error).__name__}"


@dataclass
class Reading:
    """The explored function, the value each path returns as a term."""

    exploration: paths.Exploration
    value: Callable[[object], object]  # a path's return value -> a term or a tuple of terms

    def term(self) -> object:
        """The if-then-else over the returning paths (the last one is the
        default: with the raising paths, the paths partition the inputs)."""
        returned = self.exploration.returned
        if not returned:
            raise UnknownReading("no path returns")
        result = self.value(returned[-1].value)
        for path in reversed(returned[:-1]):
            result = _ite(path.formula, self.value(path.value), result)
        return result


def _ite(condition, then, otherwise):
    if isinstance(then, tuple):
        return tuple(_ite(condition, a, b) for a, b in zip(then, otherwise, strict=True))
    return z3.If(condition, then, otherwise)


def explore(run: Callable[[], object], files: set[str], value=term, assumptions=(), lemmas=None) -> Reading:
    """Explore `run` and refuse (UnknownReading) if any path was refused."""
    exploration = paths.explore(run, classify(files), files, assumptions=list(assumptions), lemmas=lemmas)
    if exploration.refused:
        first = exploration.refused[0]
        raise UnknownReading(describe(first))
    return Reading(exploration, value)


def symbolic_or_concrete(
    run: Callable[[], object], files: set[str], symbolic: bool, value=term, domain=(), lemmas=None
):
    """Concretely: the code's own result. Symbolically: the reading's term,
    explored under `domain` (owed as obligations), with every raising path's
    negation added to the context's obligations. `lemmas`: see paths.explore."""
    if not symbolic:
        return run()
    assumptions = [d for d in domain if isinstance(d, z3.BoolRef)]
    reading = explore(run, files, value, assumptions, lemmas)
    context = arith._context()
    context.obligations.extend(assumptions)
    for path in reading.exploration.raised:
        context.obligations.append(z3.Not(path.formula))
    built = _built.get()
    if built is not None:
        built.append(reading)
    return reading.term()
