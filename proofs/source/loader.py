"""vLLM's functions, loaded from source text without importing vLLM or torch.

A function's AST is taken from its module's source, stripped of annotations
and of the decorators that only bind it (classmethod, staticmethod, caches),
and compiled alone in a namespace holding exactly the names it reads: the
helpers vLLM defines in Python (loaded the same way, so the executor follows
them), the stand-ins the caller provides, and the builtins, with `min` and
`max` building terms instead of forking. A name that is none of these is
reported with the line that reads it.
"""

from __future__ import annotations

import ast
import builtins
import copy
import importlib.util
import symtable
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from models.errors import GridproofError
from proofs.source import merge
from proofs.source.minmax import symbolic_max, symbolic_min
from proofs.source.proxy import Unsupported


class SourceError(GridproofError):
    """A vLLM source that cannot be read or lacks a function: exit status 2."""


class VllmSource:
    """The `vllm` package's Python files, from a directory or a wheel."""

    def __init__(self, label: str, directory: Path | None = None, wheel: Path | None = None) -> None:
        self.label = label
        self._directory = directory
        self._wheel = zipfile.ZipFile(wheel) if wheel is not None else None
        self._wheel_path = wheel

    @classmethod
    def from_path(cls, path: str) -> VllmSource:
        """A vLLM checkout (holding vllm/), the vllm/ package itself, an
        unpacked wheel, or a wheel file."""
        p = Path(path)
        if p.is_file() and p.suffix == ".whl":
            try:
                return cls(p.name, wheel=p)
            except zipfile.BadZipFile:
                raise SourceError(f"--vllm {path}: not a readable wheel") from None
        for candidate in (p / "vllm", p):
            if (candidate / "v1").is_dir() and (candidate / "platforms").is_dir():
                return cls(str(candidate), directory=candidate)
        raise SourceError(f"--vllm {path}: no vLLM package there (expected vllm/v1 and vllm/platforms)")

    @classmethod
    def installed(cls) -> VllmSource | None:
        spec = importlib.util.find_spec("vllm")  # finds, does not import
        if spec is None or not spec.submodule_search_locations:
            return None
        directory = Path(next(iter(spec.submodule_search_locations)))
        return cls(f"installed vLLM ({directory})", directory=directory)

    def filename(self, module: str) -> str:
        """The name the module's lines are reported under."""
        relative = module.replace(".", "/")
        if self._wheel is not None:
            return f"{self._wheel_path}!{relative}.py"
        return str(self._directory.parent / f"{relative}.py")

    def module_text(self, module: str) -> str | None:
        """The source of `vllm.x.y` (a module file or a package's __init__), or None."""
        relative = module.replace(".", "/")
        for name in (f"{relative}.py", f"{relative}/__init__.py"):
            if self._wheel is not None:
                try:
                    return self._wheel.read(name).decode()
                except KeyError:
                    continue
            else:
                file = self._directory.parent / name
                if file.is_file():
                    return file.read_text()
        return None

    def python_files(self):
        """(path under the tree's root, as "vllm/x/y.py"; its bytes) of every Python file."""
        if self._wheel is not None:
            for name in self._wheel.namelist():
                if name.startswith("vllm/") and name.endswith(".py"):
                    yield name, self._wheel.read(name)
            return
        root = self._directory.parent
        for file in sorted(self._directory.rglob("*.py")):
            yield str(file.relative_to(root)), file.read_bytes()

    def version(self) -> str | None:
        text = self.module_text("vllm._version")
        if text is None:
            return None
        for line in text.splitlines():
            if line.startswith(("__version__", "version")) and "=" in line:
                value = line.rsplit("=", 1)[1].strip()
                if value[:1] in "'\"":
                    return value.strip("'\"")
        return None


# Decorators that only bind a function or cache its results: the executor
# calls the plain function (a cache would hash the proxies).
_BINDING_DECORATORS = {"classmethod", "staticmethod", "cache", "lru_cache", "cached", "override"}
# How a method is bound when a stand-in for `self` runs it from the source.
_METHOD_KINDS = {"staticmethod": "staticmethod", "classmethod": "classmethod"}
_PROPERTIES = {"property", "cached_property"}
_KERNEL_DECORATORS = {"jit"}


@dataclass
class LoadedFunction:
    name: str  # qualified: Class.method or function
    module: str
    function: object
    file: str
    first_line: int
    crash_sites: list[tuple[str, int, str]] = field(default_factory=list)  # (file, line, "assert" | "raise")
    helpers: list[LoadedFunction] = field(default_factory=list)


@dataclass
class _Module:
    name: str
    text: str
    tree: ast.Module
    table: symtable.SymbolTable
    imports: dict[str, tuple[str, str | None]]  # local name -> (module, attribute or None)


class Loader:
    """Loads functions of one vLLM source. `stand_ins` maps a module-qualified
    name ("vllm.x.y.Name", "math.lcm", or ".logger" for a module global of any
    module) to the value the namespace binds it to."""

    def __init__(self, source: VllmSource, stand_ins: dict[str, object] | None = None) -> None:
        self.source = source
        self.stand_ins = dict(stand_ins or {})
        self._modules: dict[str, _Module] = {}
        self._functions: dict[tuple[str, str], LoadedFunction] = {}
        self._methods: dict[tuple[str, str, str], tuple[object, str] | None] = {}
        self.files: set[str] = set()
        self._builtins = dict(vars(builtins))
        self._builtins.update(min=symbolic_min, max=symbolic_max, __import__=self._import)

    def _module(self, name: str) -> _Module:
        if name not in self._modules:
            text = self.source.module_text(name)
            if text is None:
                raise SourceError(f"{self.source.label}: no module {name}")
            tree = ast.parse(text, filename=self.source.filename(name))
            table = symtable.symtable(text, self.source.filename(name), "exec")
            self._modules[name] = _Module(name, text, tree, table, _module_imports(name, tree))
        return self._modules[name]

    def has_function(self, module: str, qualname: str) -> bool:
        try:
            return _find(self._module(module).tree, qualname) is not None
        except SourceError:
            return False

    def class_constant(self, module: str, cls: str, name: str) -> object:
        """A literal a class of the source assigns at its top (`DEFAULT_BLOCK_SIZE: ClassVar[int] = 16`),
        read from the text; SourceError when the class or the literal is not there."""
        node = _find_class(self._module(module).tree, cls)
        for item in node.body if node is not None else ():
            targets = item.targets if isinstance(item, ast.Assign) else [getattr(item, "target", None)]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets) and item.value is not None:
                try:
                    return ast.literal_eval(item.value)
                except ValueError:
                    break
        raise SourceError(f"{self.source.label}: {module} has no literal {cls}.{name}")

    def method(self, module: str, cls: str, name: str) -> tuple[object, str] | None:
        """`cls.name` as the source defines it, in `cls` or in a base class
        that vLLM defines: (the loaded function, "method" | "staticmethod" |
        "classmethod" | "property"), or None when there is no such method.
        An abstract method is none: its body is not what runs."""
        mangled = f"_{cls.lstrip('_')}__"
        if name.startswith(mangled):
            name = "__" + name[len(mangled) :]
        key = (module, cls, name)
        if key not in self._methods:
            found = self._find_method(module, cls, name, depth=0)
            if found is None:
                self._methods[key] = None
            else:
                where, qualname, kind = found
                self._methods[key] = (self.load(where, qualname).function, kind)
        return self._methods[key]

    def _find_method(self, module: str, cls: str, name: str, depth: int) -> tuple[str, str, str] | None:
        if depth > 8 or self.source.module_text(module) is None:
            return None
        m = self._module(module)
        node = _find_class(m.tree, cls)
        if node is None:
            return None
        for item in node.body:
            if isinstance(item, ast.FunctionDef) and item.name == name:
                decorators = {_decorator_name(d) for d in item.decorator_list}
                if "abstractmethod" in decorators:
                    return None
                kind = next((_METHOD_KINDS[d] for d in decorators if d in _METHOD_KINDS), "method")
                return module, f"{cls}.{name}", "property" if decorators & _PROPERTIES else kind
        for base in node.bases:
            if not isinstance(base, ast.Name):
                continue
            if _find_class(m.tree, base.id) is not None:
                found = self._find_method(module, base.id, name, depth + 1)
            elif base.id in m.imports and m.imports[base.id][1] is not None:
                where, attribute = m.imports[base.id]
                found = self._find_method(where, attribute, name, depth + 1) if where.startswith("vllm") else None
            else:
                found = None
            if found is not None:
                return found
        return None

    def load(self, module: str, qualname: str, kernel: bool = False) -> LoadedFunction:
        """`kernel`: a Triton kernel, whose `@triton.jit` is dropped so its body
        runs as Python on the caller's `tl` stand-in (proofs/source/kernel.py)."""
        key = (module, qualname)
        if key in self._functions:
            return self._functions[key]
        m = self._module(module)
        node = _find(m.tree, qualname)
        if node is None:
            raise SourceError(f"{self.source.label}: {module} has no function {qualname}")
        file = self.source.filename(module)
        self.files.add(file)
        loaded = LoadedFunction(qualname, module, None, file, node.lineno)
        self._functions[key] = loaded
        node = merge.rewrite(_plain(node, qualname, _KERNEL_DECORATORS if kernel else set()))
        namespace = {"__builtins__": self._builtins, "__name__": module, "__merge__": merge}
        for name, line in _global_reads(m.table, qualname, node):
            value = self._resolve(m, name, line, loaded)
            if value is not _MISSING:
                namespace[name] = value
        code = compile(ast.Module(body=[node], type_ignores=[]), file, "exec")
        exec(code, namespace)
        loaded.function = namespace[node.name]
        loaded.crash_sites = _crash_sites(node, file)
        return loaded

    def _resolve(self, m: _Module, name: str, line: int, loaded: LoadedFunction) -> object:
        """What a global name read by a loaded function is bound to."""
        for key in (f"{m.name}.{name}", f".{name}"):
            if key in self.stand_ins:
                return self.stand_ins[key]
        if name in m.imports:
            module, attribute = m.imports[name]
            if attribute is None:
                return _LazyModule(self, module, m.name, line)
            return self._attribute(module, attribute, m.name, line, loaded)
        if _find(m.tree, name) is not None:
            helper = self.load(m.name, name)
            loaded.helpers.append(helper)
            return helper.function
        if name in self._builtins:
            return _MISSING  # read from __builtins__
        return _Refusal(f"{name} (a global of {m.name} the executor has no stand-in for)", line)

    def _attribute(self, module: str, attribute: str, reader: str, line: int, loaded: LoadedFunction | None):
        key = f"{module}.{attribute}"
        if key in self.stand_ins:
            return self.stand_ins[key]
        if module.split(".")[0] == "vllm":
            target = self._module(module) if self.source.module_text(module) is not None else None
            if target is not None:
                if _find(target.tree, attribute) is not None and isinstance(
                    _find(target.tree, attribute), ast.FunctionDef
                ):
                    helper = self.load(module, attribute)
                    if loaded is not None:
                        loaded.helpers.append(helper)
                    return helper.function
                if attribute in target.imports:  # re-exported
                    inner_module, inner = target.imports[attribute]
                    if inner is not None:
                        return self._attribute(inner_module, inner, reader, line, loaded)
        return _Refusal(f"{key} (imported by {reader}; no stand-in)", line)

    def _import(self, name, globals=None, locals=None, fromlist=(), level=0):
        """`import` inside a loaded function: names come from the stand-ins
        or from vLLM's source, never from an imported module."""
        reader = (globals or {}).get("__name__", "?")
        if level:
            base = reader.split(".")
            name = ".".join(base[: len(base) - level] + ([name] if name else []))
        return _LazyModule(self, name, reader, None)


class _Missing:
    pass


_MISSING = _Missing()


class _Refusal:
    """Bound to a name the executor cannot supply: any use refuses, naming it."""

    def __init__(self, what: str, line: int | None) -> None:
        self.what = what
        self.line = line

    def _refuse(self, *_args, **_kwargs):
        raise Unsupported(f"unknown name: {self.what}")

    __call__ = __getattr__ = __bool__ = __iter__ = __enter__ = _refuse


class _LazyModule:
    def __init__(self, loader: Loader, module: str, reader: str, line: int | None) -> None:
        self._loader, self._module, self._reader, self._line = loader, module, reader, line

    def __getattr__(self, attribute: str):
        value = self._loader._attribute(self._module, attribute, self._reader, self._line, None)
        if isinstance(value, _Refusal) and f"{self._module}.{attribute}" not in self._loader.stand_ins:
            value._refuse()
        return value


def _find_class(tree: ast.Module, name: str) -> ast.ClassDef | None:
    return next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name), None)


def _decorator_name(decorator: ast.expr) -> str:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "?")


def _find(tree: ast.Module, qualname: str) -> ast.FunctionDef | None:
    body = tree.body
    parts = qualname.split(".")
    for i, part in enumerate(parts):
        found = None
        for node in body:
            last = i == len(parts) - 1
            if last and isinstance(node, ast.FunctionDef) and node.name == part:
                found = node
            elif not last and isinstance(node, ast.ClassDef) and node.name == part:
                found = node
        if found is None:
            return None
        body = found.body
    return found


def _plain(node: ast.FunctionDef, qualname: str, also_dropped: set[str]) -> ast.FunctionDef:
    """The def without annotations, binding decorators and `also_dropped`."""
    node = copy.deepcopy(node)
    for decorator in node.decorator_list:
        name = _decorator_name(decorator)
        if name not in _BINDING_DECORATORS | _PROPERTIES | also_dropped:
            raise SourceError(f"{qualname}: decorator @{name} (line {decorator.lineno}) is not supported")
    node.decorator_list = []
    node.returns = None
    arguments = node.args
    for arg in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs, arguments.vararg, arguments.kwarg]:
        if arg is not None:
            arg.annotation = None
    for inner in ast.walk(node):
        if isinstance(inner, ast.AnnAssign):
            inner.annotation = ast.Constant(None)
    return node


def _global_reads(table: symtable.SymbolTable, qualname: str, node: ast.FunctionDef) -> list[tuple[str, int]]:
    """The global names the function and its nested scopes read, each with
    the first line that reads it."""
    scope = table
    for part in qualname.split("."):
        scope = next(child for child in scope.get_children() if child.get_name() == part)
    names: set[str] = set()
    stack = [scope]
    while stack:
        s = stack.pop()
        for symbol in s.get_symbols():
            if symbol.is_global() and symbol.is_referenced():
                names.add(symbol.get_name())
        stack.extend(s.get_children())
    lines = {}
    for inner in ast.walk(node):
        if isinstance(inner, ast.Name) and inner.id in names:
            lines[inner.id] = min(lines.get(inner.id, inner.lineno), inner.lineno)
    return sorted((name, lines.get(name, node.lineno)) for name in names)


def _module_imports(module: str, tree: ast.Module) -> dict[str, tuple[str, str | None]]:
    """The names a module's top level (its `if` and `try` blocks included) imports."""
    imports: dict[str, tuple[str, str | None]] = {}
    package = module.split(".")
    for node in _top_level(tree.body):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level] + ([base] if base else []))
            for alias in node.names:
                imports[alias.asname or alias.name] = (base, alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                imports[alias.asname or alias.name.split(".")[0]] = (
                    alias.name if alias.asname else alias.name.split(".")[0],
                    None,
                )
    return imports


def _top_level(body: list[ast.stmt]):
    for node in body:
        yield node
        if isinstance(node, (ast.If, ast.Try)):
            yield from _top_level(node.body)
            yield from _top_level(node.orelse)
            for handler in getattr(node, "handlers", ()):
                yield from _top_level(handler.body)


def _crash_sites(node: ast.FunctionDef, file: str) -> list[tuple[str, int, str]]:
    sites = []
    for inner in ast.walk(node):
        if isinstance(inner, ast.Assert):
            sites.append((file, inner.lineno, "assert"))
        elif isinstance(inner, ast.Raise):
            sites.append((file, inner.lineno, "raise"))
    return sorted(sites)
