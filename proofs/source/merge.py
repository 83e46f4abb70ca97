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

from proofs.runtime import interrupts
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
    """The elements of a filtered generator or list whose filter is
    symbolic: each value with the condition it is present under. `min` and
    `max` read it whole (an if-then-else term: proofs/source/minmax.py); its
    truth (any element present) is one branch; iterating it, as Python
    would, branches on each element's presence in turn."""

    def __init__(self, items: list[tuple[object, object]]) -> None:
        self.items = items  # (condition: bool | SymBool, value)

    def __iter__(self):
        for condition, value in self.items:
            if condition is True or paths.decide(condition.term):
                yield value

    def __bool__(self):
        conditions = [z3.BoolVal(True) if c is True else c.term for c, _ in self.items]
        return bool(conditions) and paths.decide(z3.Or(*conditions))

    def __len__(self):
        return sum(1 for _ in self)

    def __getitem__(self, index):
        return list(self)[index]


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


class Rewriter(ast.NodeTransformer):
    """Ternaries, `and`/`or`, `not`, chained comparisons and filtered
    generators as calls of this module's helpers (bound as `__merge__`).
    Expressions holding `:=`, `yield` or `await` are left as written.

    An `if` statement in a loop that only assigns local names already bound
    (a running minimum, `for s in stops: if s < end: end = s`) is merged too:
    its test is evaluated once, then each name takes the merged value of
    both sides (`n = ite(test, new, n)`; with an else that assigns the same
    one name, `n = ite(test, a, b)`). Only assignments whose values call
    nothing but min and max: a call may have effects, which a merged side
    would have even when the test is false. Outside loops a statement still
    forks: a loop's forks multiply (four stops, sixteen times the paths),
    while at the top level the paths stay few and each one's value plain."""

    def __init__(self, bound: dict[str, int] | None = None) -> None:
        super().__init__()
        self.bound = bound or {}  # name -> the first line binding it (0: an argument)
        self.merged_ifs = 0
        self.loops = 0  # how deep in loops the visit is

    def _in_loop(self, node):
        self.loops += 1
        try:
            self.generic_visit(node)
        finally:
            self.loops -= 1
        return node

    visit_For = visit_While = _in_loop

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

    def visit_ListComp(self, node: ast.ListComp):
        return self.visit_GeneratorExp(node)

    def visit_GeneratorExp(self, node: ast.GeneratorExp | ast.ListComp):
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

    def visit_If(self, node: ast.If):
        mergeable = self.loops > 0 and self._mergeable(node)  # read as written, before its rewrite
        self.generic_visit(node)
        merged = self._merged_if(node) if mergeable else None
        return node if merged is None else merged

    def _mergeable(self, node: ast.If) -> bool:
        body = [s for s in node.body if not isinstance(s, ast.Pass)]
        orelse = [s for s in node.orelse if not isinstance(s, ast.Pass)]
        if not body or not all(self._simple(s, node.lineno) for s in (*body, *orelse)):
            return False
        return not orelse or (len(body) == 1 and len(orelse) == 1 and _target(body[0]) == _target(orelse[0]))

    def _merged_if(self, node: ast.If) -> list[ast.stmt]:
        body = [s for s in node.body if not isinstance(s, ast.Pass)]
        orelse = [s for s in node.orelse if not isinstance(s, ast.Pass)]
        self.merged_ifs += 1
        test = f"__merge_test_{node.lineno}_{self.merged_ifs}"
        out: list[ast.stmt] = [ast.Assign(targets=[ast.Name(test, ast.Store())], value=node.test, lineno=node.lineno)]
        for statement in body:
            name = _target(statement)
            otherwise = _value(orelse[0]) if orelse else ast.Name(name, ast.Load())
            call = self._call("ite", ast.Name(test, ast.Load()), self._thunk(_value(statement)), self._thunk(otherwise))
            out.append(ast.Assign(targets=[ast.Name(name, ast.Store())], value=call, lineno=statement.lineno))
        return [ast.copy_location(s, node) for s in out]

    def _simple(self, statement: ast.stmt, line: int) -> bool:
        name = _target(statement)
        if name is None or self.bound.get(name, line) >= line:
            return False
        value = _value(statement)
        for inner in ast.walk(value):
            if isinstance(inner, (ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Await, ast.Lambda)):
                return False
            pure = isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name) and inner.func.id in ("min", "max")
            if isinstance(inner, ast.Call) and not pure:
                return False
        return True


def _function_of(name: str, body: ast.expr) -> ast.Lambda:
    return ast.Lambda(
        args=ast.arguments(posonlyargs=[], args=[ast.arg(name)], kwonlyargs=[], kw_defaults=[], defaults=[]),
        body=body,
    )


def _unsafe(node: ast.AST) -> bool:
    return any(isinstance(n, (ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Await)) for n in ast.walk(node))


def _target(statement: ast.stmt) -> str | None:
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1 and isinstance(statement.targets[0], ast.Name):
        return statement.targets[0].id
    if isinstance(statement, ast.AugAssign) and isinstance(statement.target, ast.Name):
        return statement.target.id
    return None


def _value(statement: ast.stmt) -> ast.expr:
    if isinstance(statement, ast.AugAssign):
        return ast.BinOp(left=ast.Name(statement.target.id, ast.Load()), op=statement.op, right=statement.value)
    return statement.value


def _bound_lines(node: ast.FunctionDef) -> dict[str, int]:
    """Each local name with the first line that binds it; arguments at 0."""
    bound: dict[str, int] = {}
    arguments = node.args
    for arg in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs, arguments.vararg, arguments.kwarg]:
        if arg is not None:
            bound[arg.arg] = 0
    for inner in ast.walk(node):
        if isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Store):
            bound[inner.id] = min(bound.get(inner.id, inner.lineno), inner.lineno)
        elif isinstance(inner, (ast.For, ast.comprehension)):
            for target in ast.walk(inner.target):
                if isinstance(target, ast.Name):
                    bound[target.id] = min(bound.get(target.id, target.lineno), target.lineno)
    return bound


def rewrite(node: ast.FunctionDef) -> ast.FunctionDef:
    node = Rewriter(_bound_lines(node)).visit(node)
    return ast.fix_missing_locations(node)
