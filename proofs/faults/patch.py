"""A source patch on one model function, and applying it in place.

The patched function is compiled in its module's namespace and its code
object swapped into the original function object, so every reference to it
(`from models.scheduler import split` in the catalogue included) runs the
patched code, read with ints or with Z3 terms alike. The swap lives in the
process that makes it: a forked worker that applies a patch leaves its
parent's model untouched.
"""

from __future__ import annotations

import ast
import contextlib
import difflib
import importlib
import inspect
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from models.errors import GridproofError

REPO = Path(__file__).resolve().parent.parent.parent


class PatchError(GridproofError):
    """A patch that names no function, or whose text is not where it says."""


@dataclass(frozen=True)
class Patch:
    module: str  # "models.scheduler"
    function: str  # qualified name in the module: "split", "SplitCall.start"
    before: str  # source text of the function replaced...
    after: str  # ...by this
    offset: int | None = None  # where `before` starts in the function's source; None: it occurs once

    def location(self) -> str:
        """path:line of the replaced text."""
        source = function_source(self.module, self.function)
        start = self._start(source.text)
        return f"{source.path}:{source.first_line + source.text.count(chr(10), 0, start)}"

    def patched_text(self) -> str:
        text = function_source(self.module, self.function).text
        start = self._start(text)
        return text[:start] + self.after + text[start + len(self.before) :]

    def region(self) -> tuple[str, int, int, int, int]:
        """Where the replacing text lies in the compiled patched function: its file, and first line and
        column, last line and end column (columns of the dedented source `compile_patched` compiles)."""
        source = function_source(self.module, self.function)
        start = self._start(source.text)
        text = self.patched_text()
        end = start + len(self.after)

        def line_and_column(at: int) -> tuple[int, int]:
            return source.first_line + text.count("\n", 0, at), at - (text.rfind("\n", 0, at) + 1)

        return (str(REPO / source.path), *line_and_column(start), *line_and_column(end))

    def diff(self) -> str:
        source = function_source(self.module, self.function)
        lines = difflib.unified_diff(
            source.text.splitlines(keepends=True),
            self.patched_text().splitlines(keepends=True),
            fromfile=f"{source.path} ({self.function})",
            tofile="mutant",
            n=0,
        )
        return "".join(line for line in lines if not line.startswith("@@"))

    def _start(self, text: str) -> int:
        if self.offset is not None:
            if text[self.offset : self.offset + len(self.before)] != self.before:
                raise PatchError(f"{self.module}.{self.function}: {self.before!r} is not at offset {self.offset}")
            return self.offset
        count = text.count(self.before)
        if count != 1:
            raise PatchError(f"{self.module}.{self.function}: {self.before!r} occurs {count} times, not once")
        return text.index(self.before)


@dataclass(frozen=True)
class FunctionSource:
    path: str  # repo-relative
    first_line: int  # of the `def`, decorators excluded
    text: str  # dedented, from `def` to the end of the body


def function_source(module: str, function: str) -> FunctionSource:
    """The source of a function (or method, `Class.name`) as the module file has it."""
    path = Path(inspect.getsourcefile(importlib.import_module(module)) or "")
    lines, tree = _parsed(path)
    node = _find(tree, function, module)
    text = textwrap.dedent("".join(lines[node.lineno - 1 : node.end_lineno]))
    try:
        shown = path.resolve().relative_to(REPO).as_posix()
    except ValueError:
        shown = str(path)
    return FunctionSource(shown, node.lineno, text)


_PARSED: dict[tuple[Path, int, int], tuple[list[str], ast.Module]] = {}


def _parsed(path: Path) -> tuple[list[str], ast.Module]:
    """A source file's lines and syntax tree, parsed once per version of the
    file (a catalogue run applies each mutant's patch once per entry)."""
    status = path.stat()
    key = (path, status.st_mtime_ns, status.st_size)
    if key not in _PARSED:
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        _PARSED[key] = (lines, ast.parse("".join(lines)))
    return _PARSED[key]


def _find(tree: ast.Module, qualified: str, module: str) -> ast.FunctionDef:
    scope: list[ast.stmt] = tree.body
    *classes, name = qualified.split(".")
    for class_name in classes:
        found = [n for n in scope if isinstance(n, ast.ClassDef) and n.name == class_name]
        if not found:
            raise PatchError(f"{module}: no class {class_name!r}")
        scope = found[0].body
    for node in scope:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    raise PatchError(f"{module}: no function {qualified!r}")


def live_function(module: str, function: str):
    """The function object the module's callers hold (a property's getter for a property)."""
    owner: object = importlib.import_module(module)
    *classes, name = function.split(".")
    for class_name in classes:
        owner = getattr(owner, class_name)
    member = vars(owner).get(name) if classes else getattr(owner, name, None)
    if isinstance(member, property):
        member = member.fget
    if isinstance(member, (staticmethod, classmethod)):
        member = member.__func__
    if not inspect.isfunction(member):
        raise PatchError(f"{module}: {function!r} is not a function")
    return member


def compile_patched(patch: Patch):
    """The patched function, compiled in the module's namespace (its line
    numbers those of the file, so a traceback points at the mutated line)."""
    source = function_source(patch.module, patch.function)
    try:
        tree = ast.parse(patch.patched_text())
    except SyntaxError as error:
        raise PatchError(f"{patch.module}.{patch.function}: the patched source does not parse: {error.msg}") from None
    function = tree.body[0]
    if not isinstance(function, ast.FunctionDef):
        raise PatchError(f"{patch.module}.{patch.function}: the patch does not leave one function")
    function.decorator_list = []
    ast.increment_lineno(tree, source.first_line - 1)
    module = importlib.import_module(patch.module)
    code = compile(tree, str(REPO / source.path), "exec", flags=annotations_flag(), dont_inherit=True)
    namespace: dict = {}
    exec(code, vars(module), namespace)
    return namespace[function.name]


def annotations_flag() -> int:
    import __future__

    return __future__.annotations.compiler_flag


# The patches applied now, innermost last: (function, its own code, the patched code).
_active: list[tuple[object, tuple, tuple]] = []


def _code_of(function) -> tuple:
    return function.__code__, function.__defaults__, function.__kwdefaults__


def _install(function, code: tuple) -> None:
    function.__code__, function.__defaults__, function.__kwdefaults__ = code


_references_patched = False


@contextlib.contextmanager
def references_patched() -> Iterator[None]:
    """Within the block, pristine() leaves the applied patches in place: a
    theorem's 0.33.0 reference reads the mutant, as it reads a fault that is
    written into models/ rather than applied in the process."""
    global _references_patched
    saved, _references_patched = _references_patched, True
    try:
        yield
    finally:
        _references_patched = saved


@contextlib.contextmanager
def applied(patch: Patch | None) -> Iterator[None]:
    """Within the block, the model runs the patched function; `None` patches nothing."""
    if patch is None:
        yield
        return
    target = live_function(patch.module, patch.function)
    saved, patched = _code_of(target), _code_of(compile_patched(patch))
    _install(target, patched)
    _active.append((target, saved, patched))
    try:
        yield
    finally:
        _active.pop()
        _install(target, saved)


@contextlib.contextmanager
def pristine() -> Iterator[None]:
    """Within the block, the model's own code, whatever patch is applied:
    for a theorem's fixed reference (vLLM 0.33.0 as released, which the
    conformance tests pin), that a mutant of the code must not move too.
    Within references_patched(), the patched code: as a fault written into
    the file would move the reference with it."""
    active = [] if _references_patched else list(_active)
    for target, saved, _ in reversed(active):
        _install(target, saved)
    try:
        yield
    finally:
        for target, _, patched in active:
            _install(target, patched)
