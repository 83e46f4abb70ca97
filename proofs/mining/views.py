"""View expressions: the predicates whose truth values name a counterexample's class.

A view is a small Python-like condition over a theorem's input names, such as
`budget0 < cadence` or `eagle_drop and prompt % cadence == 0`. It is parsed with
`ast` and only names, integers, `+ - * // %`, comparisons and `and`/`or`/`not`
are accepted; anything else is refused with one line naming the problem. The
compiled view is evaluated with the model's dual arithmetic (models/arith.py),
so the same view is a Z3 predicate inside a symbolic encoding and a plain bool
on a concrete counterexample.

Division in a view is total: a divisor of 0 divides as 1 (`x % 0 == 0`,
`x // 0 == x`), so a view never adds a definedness obligation of its own to the
query it constrains.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from models import arith
from models.errors import GridproofError, quoted

INT, BOOL = "int", "bool"

Derive = Callable[[object, dict], dict]  # (variant, inputs) -> extra named values


class ViewError(GridproofError):
    """A view expression that cannot be used; the message is one line."""


@dataclass(frozen=True)
class View:
    text: str  # the expression as written (normalised by ast.unparse)
    label: str  # what a summary calls it
    _compute: Callable[[dict], object]
    _derive: Derive | None = None

    def evaluate(self, variant, inputs: dict) -> object:
        """The view on `inputs`: a bool for ints, a Z3 BoolRef for Z3 terms
        (inside an `arith.symbolic_context`)."""
        values = dict(inputs)
        if self._derive is not None:
            values.update(self._derive(variant, values))
        return self._compute(values)


_COMPARE = {
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
    ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b,
}


def _total(divisor):
    return arith.ite(divisor == 0, 1, divisor)


_ARITH = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.FloorDiv: lambda a, b: arith.floordiv(a, _total(b)),
    ast.Mod: lambda a, b: arith.mod(a, _total(b)),
}
_SYMBOLS = {ast.Div: "/", ast.Pow: "**", ast.MatMult: "@", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^"}


def compile_view(
    text: str,
    kinds: Mapping[str, str],
    derived: Sequence[str] = (),
    derive: Derive | None = None,
    label: str | None = None,
) -> View:
    """Parse `text` into a view. `kinds` maps each input name to INT or BOOL;
    `derived` names integer values `derive(variant, inputs)` computes (such as
    the cadence of a symbolic deployment)."""
    if not text.strip():
        raise ViewError("--view: an empty expression")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as error:
        problem = "an integer with more than 4,300 digits" if "integer string conversion" in error.msg else error.msg
        raise ViewError(f"--view {quoted(text)}: not an expression: {problem}") from None
    except (RecursionError, MemoryError):  # Python's parser, on operators nested thousands deep
        raise ViewError(f"--view {quoted(text)}: nested more than {MAX_DEPTH} deep") from None
    if _depth(tree.body) > MAX_DEPTH:
        raise ViewError(f"--view {quoted(text)}: nested more than {MAX_DEPTH} deep")
    names = {**dict(kinds), **{n: INT for n in derived}}
    compute, kind = _compile(tree.body, names, text)
    if kind != BOOL:
        raise ViewError(
            f"--view {quoted(text)}: a view must be a condition (a comparison, a Boolean input, and/or/not), "
            "not an integer expression"
        )
    normal = ast.unparse(tree.body)
    return View(text=normal, label=label or normal, _compute=compute, _derive=derive if derived else None)


# A view is compiled and evaluated by recursion over its expression, so its depth is bounded well
# inside Python's recursion limit; a condition a person writes is a few levels deep.
MAX_DEPTH = 100


def _depth(tree: ast.AST) -> int:
    deepest, pending = 0, [(tree, 1)]
    while pending:
        node, depth = pending.pop()
        deepest = max(deepest, depth)
        pending += [(child, depth + 1) for child in ast.iter_child_nodes(node)]
    return deepest


def _compile(node: ast.AST, names: dict[str, str], text: str) -> tuple[Callable[[dict], object], str]:
    def fail(problem: str) -> ViewError:
        return ViewError(f"--view {quoted(text)}: {problem}")

    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, bool):
            return (lambda _x, v=value: v), BOOL
        if isinstance(value, int):
            return (lambda _x, v=value: v), INT
        raise fail(f"only integers and True/False are allowed as constants, got {value!r}")
    if isinstance(node, ast.Name):
        if node.id not in names:
            known = ", ".join(sorted(names))
            raise fail(f"unknown name {node.id!r} (known: {known})")
        return (lambda x, n=node.id: x[n]), names[node.id]
    if isinstance(node, ast.BoolOp):
        parts = [_operand(v, names, text, BOOL, "and/or") for v in node.values]
        combine = arith.all_of if isinstance(node.op, ast.And) else arith.any_of
        return (lambda x: combine(*(p(x) for p in parts))), BOOL
    if isinstance(node, ast.UnaryOp):
        if isinstance(node.op, ast.Not):
            inner = _operand(node.operand, names, text, BOOL, "not")
            return (lambda x: arith.negate(inner(x))), BOOL
        if isinstance(node.op, (ast.USub, ast.UAdd)):
            inner = _operand(node.operand, names, text, INT, "unary minus")
            sign = -1 if isinstance(node.op, ast.USub) else 1
            return (lambda x: sign * inner(x)), INT
        raise fail("the operator ~ is not allowed")
    if isinstance(node, ast.BinOp):
        op = type(node.op)
        if op not in _ARITH:
            symbol = _SYMBOLS.get(op, op.__name__)
            hint = " (use // for floor division)" if op is ast.Div else ""
            raise fail(f"the operator {symbol} is not allowed{hint}")
        if op in (ast.FloorDiv, ast.Mod) and isinstance(node.right, ast.Constant) and node.right.value == 0:
            raise fail("division by the constant 0")
        left = _operand(node.left, names, text, INT, "arithmetic")
        right = _operand(node.right, names, text, INT, "arithmetic")
        apply = _ARITH[op]
        return (lambda x: apply(left(x), right(x))), INT
    if isinstance(node, ast.Compare):
        operands = [node.left, *node.comparators]
        compiled = [_compile(o, names, text) for o in operands]
        pairs = []
        for op, (a, ka), (b, kb) in zip(node.ops, compiled, compiled[1:], strict=False):
            if type(op) not in _COMPARE:
                raise fail(f"the comparison {type(op).__name__} is not allowed")
            if ka != kb:
                raise fail("a comparison needs both sides integers or both Booleans")
            if ka == BOOL and type(op) not in (ast.Eq, ast.NotEq):
                raise fail("Booleans compare only with == and !=")
            pairs.append((a, b, _COMPARE[type(op)]))
        return (lambda x: arith.all_of(*(cmp(a(x), b(x)) for a, b, cmp in pairs))), BOOL
    raise fail(f"{type(node).__name__} is not allowed (only names, integers, + - * // %, comparisons, and/or/not)")


def _operand(node, names, text, want: str, where: str):
    compute, kind = _compile(node, names, text)
    if kind != want:
        wanted, got = ("a condition", "an integer") if want == BOOL else ("an integer", "a condition")
        raise ViewError(f"--view {quoted(text)}: {where} needs {wanted}, got {got}")
    return compute
