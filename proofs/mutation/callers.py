"""The callers of a private helper of the model.

A helper whose name is read nowhere but in the bodies of other top-level
functions of its own module (`_strictly_inside`, read only by `chunk_end`)
is seen by the engine and by every theorem only through those callers. A
mutant of it that changes what it returns on some input, but on no input its
callers pass, changes nothing: equivalence.py then compares the callers."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

from proofs.faults.patch import REPO

# Where a model function may be read: the engine and every tool built on it.
READERS = ("models", "proofs")


def private_callers(module: str, function: str) -> list[str] | None:
    """The top-level functions of `module` that read `function`, when
    nothing else in models/ or proofs/ does (a method, or a name read
    anywhere else, leaves it public); None otherwise."""
    if "." in function:
        return None
    path = Path(inspect.getsourcefile(importlib.import_module(module)) or "").resolve()
    callers: list[str] = []
    for directory in READERS:
        for source in sorted((REPO / directory).rglob("*.py")):
            tree = ast.parse(source.read_text(encoding="utf-8"))
            reads = [n for n in ast.walk(tree) if _reads(n, function)]
            if not reads:
                continue
            if source.resolve() != path:
                return None
            for node in tree.body:
                inside = [r for r in reads if _within(r, node)]
                if inside and (not isinstance(node, ast.FunctionDef) or node.name == function):
                    return None  # read at module level, in a class, or by itself
                if inside:
                    callers.append(node.name)
    return callers or None


def _reads(node: ast.AST, name: str) -> bool:
    if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load):
        return True
    if isinstance(node, ast.Attribute) and node.attr == name:
        return True
    return isinstance(node, ast.alias) and (node.asname or node.name).split(".")[-1] == name


def _within(inner: ast.AST, outer: ast.stmt) -> bool:
    return outer.lineno <= inner.lineno <= (outer.end_lineno or outer.lineno)
