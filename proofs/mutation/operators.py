"""Mutation operators, applied mechanically to the functions of a model module.

Each generated mutant is a `Patch` (patch.py): one expression of one
function replaced, the same data a hand-written mutant is. The operators:

- `relational`: `<` <-> `<=`, `>` <-> `>=`, `==` <-> `!=`;
- `compare+1`, `compare-1`: the right side of a comparison moved by one;
- `constant+1`, `constant-1`: an integer constant of an arithmetic
  expression, a comparison or an `arith` call moved by one;
- `arith+1`, `arith-1`: a sum or difference of two non-constant terms moved by one;
- `floor<->ceil`: `arith.floordiv` <-> `arith.cdiv`, `arith.round_down(x, d)`
  -> `arith.cdiv(x, d) * d`, `a // b` -> `-(-a // b)`;
- `size-name`: one use of a size (a block, cadence, span, alignment, chunk
  or page, by its name) replaced by another size of the same kind in scope;
- `drop-conjunct`: one argument of `arith.all_of`/`arith.any_of`, or one
  operand of `and`/`or`, left out;
- `drop-stop`: one element of a tuple or list a loop of the function walks
  (the split's stops);
- `min<->max`: `arith.minimum` <-> `arith.maximum` (`_of` too), `min` <-> `max`.

Every patch is checked: the patched source parses to exactly the mutated tree.
"""

from __future__ import annotations

import ast
import copy
import importlib
import inspect
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from proofs.faults.patch import Patch, PatchError, function_source

OPERATORS = (
    "relational",
    "compare+1",
    "compare-1",
    "constant+1",
    "constant-1",
    "arith+1",
    "arith-1",
    "floor<->ceil",
    "size-name",
    "drop-conjunct",
    "drop-stop",
    "min<->max",
)
# The engine's semantics; arith (the arithmetic both readings share), variants
# (data), errors and geometry (file parsing and validation) are not mutated
# unless named. Nor are the prefix cache's and the offload connector's models
# (prefix_cache, offload): the restore theorems state the lookups against the
# keys a prefill leaves, so a fault in which positions are keyed moves both
# sides alike; the end-to-end comparison with the real scheduler judges those
# (docs/mutation.md gives their score with --module).
DEFAULT_MODULES = ("config", "plan", "scheduler", "prefill")

_RELATIONAL = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq}
_SWAPPED_CALLS = {
    "minimum": "maximum",
    "maximum": "minimum",
    "minimum_of": "maximum_of",
    "maximum_of": "minimum_of",
    "floordiv": "cdiv",
    "cdiv": "floordiv",
}
_OPERATOR_PARENTS = (ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp, ast.Attribute, ast.Subscript, ast.IfExp)
# Size names by kind: the last word of a name, and page sizes (bytes) apart.
_SIZE_WORDS = {"block", "cadence", "span", "alignment", "chunk", "kernel", "size", "grid", "unit"}
_NOT_SIZES = re.compile(r"drop|annotated|explicit|^is_|^has_|per_chunk|dcp_size")


@dataclass(frozen=True)
class Mutant:
    """A generated mutant: a patch and how it was made."""

    ident: str  # module:function:operator:n, the operator's n-th mutant of the function
    operator: str
    patch: Patch
    summary: str  # "a < b  ->  a <= b"


def size_kind(name: str) -> str | None:
    """'bytes' or 'tokens' for a size name, None for anything else."""
    if _NOT_SIZES.search(name):
        return None
    if "page" in name:
        return "bytes"
    words = name.lower().split("_")
    return "tokens" if words[-1] in _SIZE_WORDS else None


def generate(modules: tuple[str, ...] = DEFAULT_MODULES, operators: tuple[str, ...] = OPERATORS) -> list[Mutant]:
    """Every mutant of every function of the `modules` (names under models/), in source order."""
    mutants: list[Mutant] = []
    for short in modules:
        module = f"models.{short}"
        for function in functions_of(module):
            mutants += mutants_of(module, function, operators)
    return mutants


def functions_of(module: str) -> list[str]:
    """The qualified names of a module's functions and methods, in source order."""
    path = Path(inspect.getsourcefile(importlib.import_module(module)) or "")
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            names.append(node.name)
        elif isinstance(node, ast.ClassDef):
            names += [f"{node.name}.{n.name}" for n in node.body if isinstance(n, ast.FunctionDef)]
    return names


def mutants_of(module: str, function: str, operators: tuple[str, ...] = OPERATORS) -> list[Mutant]:
    """Every mutant the `operators` make of `function` in `module`, each patched source once, numbered per
    operator. Raises PatchError when a patched source does not parse to the mutated tree."""
    text = function_source(module, function).text
    tree = ast.parse(text)
    definition = tree.body[0]
    assert isinstance(definition, ast.FunctionDef)
    _link_parents(tree)
    found: list[Mutant] = []
    seen: set[str] = set()  # patched sources: two operators that write the same mutant make one
    for operator, node, replacement in _candidates(definition, operators):
        before = ast.get_source_segment(text, node)
        if before is None:
            continue
        after = _unparse(replacement, node)
        offset = _offset(text, node)
        patch = Patch(module, function, before, after, offset)
        patched = patch.patched_text()
        if patched in seen or before == after:
            continue
        seen.add(patched)
        _check(patch, text, tree, node, replacement)
        # numbered per operator, so a mutant keeps its name whatever other operators are selected
        number = sum(m.operator == operator for m in found)
        ident = f"{module.removeprefix('models.')}:{function}:{operator}:{number}"
        found.append(Mutant(ident, operator, patch, f"{_one_line(before)}  ->  {_one_line(after)}"))
    return found


def _candidates(definition: ast.FunctionDef, operators: tuple[str, ...]) -> Iterator[tuple[str, ast.AST, ast.AST]]:
    """(operator, node, replacement) for every mutation of the function's body."""
    statements = _body_without_docstring(definition)
    annotations = {id(n) for statement in statements for a in _annotations(statement) for n in ast.walk(a)}
    body = [n for statement in statements for n in ast.walk(statement) if id(n) not in annotations]
    wanted = set(operators)
    scope = _sizes_in_scope(definition)
    iterated = {n.iter.id for n in body if isinstance(n, ast.For) and isinstance(n.iter, ast.Name)}
    for node in body:
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _RELATIONAL:
            if "relational" in wanted:
                yield "relational", node, _replace(node, ops=[_RELATIONAL[type(node.ops[0])]()])
            for sign, name in ((ast.Add, "compare+1"), (ast.Sub, "compare-1")):
                # a constant right side is moved by constant+1/-1 already
                if name in wanted and not isinstance(node.comparators[0], ast.Constant):
                    right = ast.BinOp(node.comparators[0], sign(), ast.Constant(1))
                    yield name, node, _replace(node, comparators=[right])
        if isinstance(node, ast.Constant) and type(node.value) is int and _arithmetic_context(node):
            for delta, name in ((1, "constant+1"), (-1, "constant-1")):
                if name in wanted:
                    yield name, node, ast.Constant(node.value + delta)
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
            if not any(isinstance(side, ast.Constant) for side in (node.left, node.right)):
                for sign, name in ((ast.Add, "arith+1"), (ast.Sub, "arith-1")):
                    if name in wanted:
                        yield name, node, ast.BinOp(copy.deepcopy(node), sign(), ast.Constant(1))
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.FloorDiv) and "floor<->ceil" in wanted:
            ceiling = ast.BinOp(ast.UnaryOp(ast.USub(), node.left), ast.FloorDiv(), node.right)
            yield "floor<->ceil", node, ast.UnaryOp(ast.USub(), ceiling)
        if isinstance(node, ast.Call):
            yield from _call_mutants(node, wanted)
        if isinstance(node, ast.BoolOp) and len(node.values) >= 2 and "drop-conjunct" in wanted:
            for i in range(len(node.values)):
                rest = node.values[:i] + node.values[i + 1 :]
                yield "drop-conjunct", node, rest[0] if len(rest) == 1 else _replace(node, values=rest)
        if isinstance(node, ast.Assign) and "drop-stop" in wanted:
            targets = node.targets
            if len(targets) == 1 and isinstance(targets[0], ast.Name) and targets[0].id in iterated:
                if isinstance(node.value, (ast.Tuple, ast.List)) and len(node.value.elts) >= 2:
                    for i in range(len(node.value.elts)):
                        elts = node.value.elts[:i] + node.value.elts[i + 1 :]
                        yield "drop-stop", node.value, _replace(node.value, elts=elts)
        if "size-name" in wanted:
            yield from _size_swaps(node, scope)


def _annotations(statement: ast.AST) -> Iterator[ast.AST]:
    """The type annotations in a statement (a nested function's, an annotated assignment's): never run."""
    for node in ast.walk(statement):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns is not None:
            yield node.returns
        if isinstance(node, ast.arg) and node.annotation is not None:
            yield node.annotation
        if isinstance(node, ast.AnnAssign):
            yield node.annotation


def _call_mutants(node: ast.Call, wanted: set[str]) -> Iterator[tuple[str, ast.AST, ast.AST]]:
    name = _arith_call(node)
    if name in ("minimum", "maximum", "minimum_of", "maximum_of") and "min<->max" in wanted:
        yield "min<->max", node, _replace(node, func=_arith_function(_SWAPPED_CALLS[name]))
    if name in ("floordiv", "cdiv") and "floor<->ceil" in wanted:
        yield "floor<->ceil", node, _replace(node, func=_arith_function(_SWAPPED_CALLS[name]))
    if name == "round_down" and len(node.args) == 2 and "floor<->ceil" in wanted:
        up = ast.Call(_arith_function("cdiv"), args=list(node.args), keywords=[])
        yield "floor<->ceil", node, ast.BinOp(up, ast.Mult(), copy.deepcopy(node.args[1]))
    if name in ("all_of", "any_of") and len(node.args) >= 2 and "drop-conjunct" in wanted:
        if not any(isinstance(a, ast.Starred) for a in node.args):
            for i in range(len(node.args)):
                yield "drop-conjunct", node, _replace(node, args=node.args[:i] + node.args[i + 1 :])
    if isinstance(node.func, ast.Name) and node.func.id in ("min", "max") and "min<->max" in wanted:
        other = "max" if node.func.id == "min" else "min"
        yield "min<->max", node, _replace(node, func=ast.Name(other, ast.Load()))


def _size_swaps(node: ast.AST, scope: dict[str, list[tuple[str, int]]]) -> Iterator[tuple[str, ast.AST, ast.AST]]:
    """`node`, a size read, replaced by each other size of its kind in scope
    (a parameter, a name assigned before it, or an attribute the function reads)."""
    text = _dotted(node)
    if text is None or not isinstance(getattr(node, "ctx", None), ast.Load):
        return
    if isinstance(getattr(node, "parent", None), ast.Attribute):
        return  # `p` of `p.block`: the whole attribute is the size
    parent = getattr(node, "parent", None)
    if isinstance(parent, ast.Call) and parent.func is node:
        return  # a function or class named like a size (`Chunk(...)`) is not a size
    kind = size_kind(text.rsplit(".", 1)[-1])
    if kind is None:
        return
    for other, defined_at in scope.get(kind, []):
        if other != text and defined_at <= node.lineno:
            yield "size-name", node, ast.parse(other, mode="eval").body


def _sizes_in_scope(definition: ast.FunctionDef) -> dict[str, list[tuple[str, int]]]:
    """Per kind, the size names readable in the function body and the line from which they are."""
    found: dict[str, dict[str, int]] = {}

    def add(name: str, line: int) -> None:
        kind = size_kind(name.rsplit(".", 1)[-1])
        if kind is not None:
            known = found.setdefault(kind, {})
            known[name] = min(line, known.get(name, line))

    arguments = definition.args
    for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]:
        add(a.arg, definition.lineno)
    comprehension_names = {
        t.id
        for n in ast.walk(definition)
        if isinstance(n, ast.comprehension)
        for t in ast.walk(n.target)
        if isinstance(t, ast.Name)
    }
    for statement in ast.walk(definition):
        if isinstance(statement, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            for target in targets:
                for t in ast.walk(target):
                    if isinstance(t, ast.Name) and t.id not in comprehension_names:
                        add(t.id, statement.end_lineno or statement.lineno)
        if isinstance(statement, ast.Attribute) and isinstance(statement.ctx, ast.Load):
            dotted = _dotted(statement)
            if dotted is not None:
                add(dotted, definition.lineno)
    return {kind: sorted(names.items()) for kind, names in found.items()}


def _dotted(node: ast.AST) -> str | None:
    """`a` or `a.b` for a name or an attribute of a name, else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return f"{node.value.id}.{node.attr}"
    return None


def _arith_call(node: ast.Call) -> str | None:
    func = node.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "arith":
        return func.attr
    return None


def _arith_function(name: str) -> ast.Attribute:
    return ast.Attribute(ast.Name("arith", ast.Load()), name, ast.Load())


def _arithmetic_context(node: ast.Constant) -> bool:
    parent = getattr(node, "parent", None)
    if isinstance(parent, ast.UnaryOp):
        parent = getattr(parent, "parent", None)
    if isinstance(parent, (ast.BinOp, ast.Compare)):
        return True
    return isinstance(parent, ast.Call) and node in parent.args and _arith_call(parent) is not None


def _body_without_docstring(definition: ast.FunctionDef) -> list[ast.stmt]:
    body = definition.body
    first = body[0] if body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        return body[1:]
    return body


def _link_parents(tree: ast.AST) -> None:
    for parent in ast.walk(tree):
        for child in ast.iter_child_nodes(parent):
            child.parent = parent  # type: ignore[attr-defined]


def _replace(node: ast.AST, **fields) -> ast.AST:
    new = copy.copy(node)
    for name, value in fields.items():
        setattr(new, name, value)
    return new


def _unparse(replacement: ast.AST, original: ast.AST) -> str:
    text = ast.unparse(replacement)
    needs = isinstance(replacement, (ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp, ast.IfExp, ast.Tuple))
    if needs and isinstance(getattr(original, "parent", None), _OPERATOR_PARENTS + (ast.Tuple,)):
        return f"({text})"
    if isinstance(replacement, ast.Tuple) and not text.startswith("("):
        return f"({text})"
    return text


def _offset(text: str, node: ast.AST) -> int:
    lines = text.splitlines(keepends=True)
    line = lines[node.lineno - 1]
    column = len(line.encode("utf-8")[: node.col_offset].decode("utf-8"))
    return sum(len(x) for x in lines[: node.lineno - 1]) + column


def _check(patch: Patch, text: str, tree: ast.Module, node: ast.AST, replacement: ast.AST) -> None:
    """The patched source must parse to the tree with `node` replaced."""
    expected = _ReplaceNode(replacement).visit(_clone_with(tree, node))
    try:
        got = ast.parse(patch.patched_text())
    except SyntaxError:
        raise PatchError(f"{patch.module}.{patch.function}: generated patch {patch.after!r} does not parse") from None
    if ast.unparse(got) != ast.unparse(expected):
        raise PatchError(f"{patch.module}.{patch.function}: generated patch {patch.after!r} reads otherwise")


def _clone_with(tree: ast.Module, node: ast.AST) -> ast.Module:
    """A copy of `tree` in which the copy of `node` is marked for replacement."""
    node._gridproof_target = True  # type: ignore[attr-defined]
    try:
        return copy.deepcopy(tree)
    finally:
        del node._gridproof_target  # type: ignore[attr-defined]


class _ReplaceNode(ast.NodeTransformer):
    def __init__(self, replacement: ast.AST) -> None:
        self.replacement = replacement

    def generic_visit(self, node: ast.AST) -> ast.AST:
        if getattr(node, "_gridproof_target", False):
            return self.replacement
        return super().generic_visit(node)


def _one_line(text: str) -> str:
    return " ".join(text.split())
