"""Merging pure expressions instead of forking on them.

Forking at every `__bool__` enumerates the product of every ternary,
`and`/`or` and filtered generator in the function: for vLLM 0.33.0's split,
thousands of paths. The loader rewrites those expression forms (never
statements) into calls of the helpers below. When the condition is
symbolic, each side is evaluated under its condition (the oracle scopes the
choices made there as implications) and the results are joined into one
if-then-else term. Semantics are kept exactly: a side that raises, or whose
value is not an int or bool, falls back to forking on the condition, and a
concrete condition evaluates one side only, as Python does.
"""

from __future__ import annotations

import ast

import z3

from proofs import interrupts
from proofs.source import paths
from proofs.source.proxy import SymBool, SymInt, term, wrap

_MERGEABLE = (SymInt, SymBool, int, bool)


def _mergeable(value: object) -> bool:
    return isinstance(value, _MERGEABLE)


def _ite(condition: z3.BoolRef, then: object, otherwise: object) -> object:
    a, b = term(then), term(otherwise)
    if a.sort() != b.sort():
        if z3.is_bool(a):
            a = z3.If(a, z3.IntVal(1), z3.IntVal(0))
        if z3.is_bool(b):
            b = z3.If(b, z3.IntVal(1), z3.IntVal(0))
    return wrap(z3.simplify(z3.If(condition, a, b)) if z3.is_const(condition) else z3.If(condition, a, b))


def _under(condition: z3.BoolRef, thunk):
    """(value, error) of `thunk()` with `condition` assumed; the error is
    paths.Unreachable when the condition contradicts the path."""
    with paths.assuming(condition):
        try:
            return thunk(), None
        except Exception as error:  # re-raised below when the side is taken
            interrupts.raise_if_requested()  # not an interrupt that ctypes wrapped
            return None, error


def _choose(condition, then, otherwise):
    """`then()` if condition else `otherwise()`: merged when symbolic."""
    if not isinstance(condition, SymBool):
        if isinstance(condition, SymInt):
            condition = condition != 0
        else:
            return then() if condition else otherwise()
    c = condition.term
    simplified = z3.simplify(c)
    if z3.is_true(simplified) or z3.is_false(simplified):
        return then() if z3.is_true(simplified) else otherwise()
    a, error_a = _under(c, then)
    b, error_b = _under(z3.Not(c), otherwise)
    if error_a is None and error_b is None and _mergeable(a) and _mergeable(b):
        return _ite(c, a, b)
    if isinstance(error_a, paths.Unreachable) or isinstance(error_b, paths.Unreachable):
        taken = not isinstance(error_a, paths.Unreachable)
    else:
        taken = paths.decide(c)
    value, error = (a, error_a) if taken else (b, error_b)
    if error is not None:
        raise error
    return value


def ite(condition, then, otherwise):
    """`then() if condition else otherwise()`"""
    return _choose(condition, then, otherwise)


def both(first, second):
    """`first() and second()`: Python returns the first falsy operand."""
    a = first()
    return _choose(_truth(a), second, lambda: a)


def either(first, second):
    """`first() or second()`"""
    a = first()
    return _choose(_truth(a), lambda: a, second)


def negation(value):
    """`not value`"""
    if isinstance(value, SymBool):
        return SymBool(z3.Not(value.term))
    if isinstance(value, SymInt):
        return SymBool(value.term == 0)
    return not value


def _truth(value):
    if isinstance(value, (SymBool, SymInt)):
        return value
    return bool(value)


class Guarded:
    """The elements of a filtered generator whose filter is symbolic: each
    value with the condition it is present under. Only `min` and `max`
    read it; anything else refuses."""

    def __init__(self, items: list[tuple[object, object]]) -> None:
        self.items = items  # (condition: bool | SymBool, value)

    def __iter__(self):
        from proofs.source.proxy import Unsupported

        raise Unsupported("a generator filtered on a symbolic condition, iterated other than by min or max")


def filtered(iterable, keep, element):
    """`(element(x) for x in iterable if keep(x))`: a list when every filter
    is concrete, else a Guarded list of (condition, value)."""
    items = []
    for x in iterable:
        condition = keep(x)
        if isinstance(condition, SymInt):
            condition = condition != 0
        if isinstance(condition, SymBool):
            s = z3.simplify(condition.term)
            condition = True if z3.is_true(s) else False if z3.is_false(s) else condition
        if condition is False or (not isinstance(condition, SymBool) and not condition):
            continue
        value, error = (
            _under(condition.term, lambda x=x: element(x))
            if isinstance(condition, SymBool)
            else (
                element(x),
                None,
            )
        )
        if isinstance(error, paths.Unreachable):
            continue
        if error is not None or not _mergeable(value):
            # Fork on the filter, as Python would.
            if paths.decide(condition.term):
                items.append((True, element(x)))
            continue
        items.append((condition, value))
    if all(c is True for c, _ in items):
        return [v for _, v in items]
    return Guarded(items)


def extreme_of_guarded(guarded: Guarded, pick_smaller: bool, default: object, has_default: bool):
    """min/max over a Guarded list: the best present value, or the default."""
    present: z3.BoolRef = z3.BoolVal(False)
    best = None
    for condition, value in guarded.items:
        g = z3.BoolVal(True) if condition is True else condition.term
        v = term(value)
        if best is None:
            best, present = v, g
            continue
        better = v < best if pick_smaller else v > best
        best = z3.If(z3.And(g, z3.Or(z3.Not(present), better)), v, best)
        present = z3.Or(present, g)
    if best is not None and has_default:
        return wrap(z3.If(present, best, term(default)))
    # Without a default, Python raises when nothing is present: fork on it.
    if best is None or not paths.decide(present):
        if has_default:
            return default
        raise ValueError(f"{'min' if pick_smaller else 'max'}() arg is an empty sequence")
    return wrap(best)


class Rewriter(ast.NodeTransformer):
    """Ternaries, `and`/`or`, `not`, chained comparisons and filtered
    generators as calls of this module's helpers (bound as `__merge__`).
    Expressions holding `:=`, `yield` or `await` are left as written."""

    def _call(self, helper: str, *args: ast.expr) -> ast.Call:
        return ast.Call(
            func=ast.Attribute(value=ast.Name("__merge__", ast.Load()), attr=helper, ctx=ast.Load()),
            args=list(args),
            keywords=[],
        )

    @staticmethod
    def _thunk(body: ast.expr) -> ast.Lambda:
        return ast.Lambda(
            args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]), body=body
        )

    def visit_IfExp(self, node: ast.IfExp):
        self.generic_visit(node)
        if _unsafe(node):
            return node
        return self._call("ite", node.test, self._thunk(node.body), self._thunk(node.orelse))

    def visit_BoolOp(self, node: ast.BoolOp):
        self.generic_visit(node)
        if _unsafe(node):
            return node
        helper = "both" if isinstance(node.op, ast.And) else "either"
        result = node.values[-1]
        for value in reversed(node.values[:-1]):
            result = self._call(helper, self._thunk(value), self._thunk(result))
        return result

    def visit_UnaryOp(self, node: ast.UnaryOp):
        self.generic_visit(node)
        if isinstance(node.op, ast.Not) and not _unsafe(node):
            return self._call("negation", node.operand)
        return node

    def visit_Compare(self, node: ast.Compare):
        self.generic_visit(node)
        simple = all(isinstance(c, (ast.Name, ast.Constant, ast.Attribute)) for c in node.comparators[:-1])
        if len(node.ops) < 2 or not simple or _unsafe(node):
            return node
        left, parts = node.left, []
        for op, right in zip(node.ops, node.comparators, strict=True):
            parts.append(ast.Compare(left=left, ops=[op], comparators=[right]))
            left = right
        result = parts[-1]
        for part in reversed(parts[:-1]):
            result = self._call("both", self._thunk(part), self._thunk(result))
        return result

    def visit_GeneratorExp(self, node: ast.GeneratorExp):
        self.generic_visit(node)
        if len(node.generators) != 1 or _unsafe(node):
            return node
        generator = node.generators[0]
        if not generator.ifs or generator.is_async or not isinstance(generator.target, ast.Name):
            return node
        name = generator.target.id
        condition = generator.ifs[0]
        for extra in generator.ifs[1:]:
            condition = ast.BoolOp(op=ast.And(), values=[condition, extra])
        return self._call("filtered", generator.iter, _function_of(name, condition), _function_of(name, node.elt))


def _function_of(name: str, body: ast.expr) -> ast.Lambda:
    return ast.Lambda(
        args=ast.arguments(posonlyargs=[], args=[ast.arg(name)], kwonlyargs=[], kw_defaults=[], defaults=[]),
        body=body,
    )


def _unsafe(node: ast.AST) -> bool:
    return any(isinstance(n, (ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Await)) for n in ast.walk(node))


def rewrite(node: ast.FunctionDef) -> ast.FunctionDef:
    node = Rewriter().visit(node)
    return ast.fix_missing_locations(node)
