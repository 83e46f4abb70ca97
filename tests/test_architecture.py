"""The house's layering (docs/design.md, "Where things live"): each folder of
proofs/ imports only folders below it in LAYERS, never one above, in any
import, a function's included; and models/ imports nothing of proofs/."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# From the top down: a room imports only rooms after it.
LAYERS = (
    "cli",
    "compare_results",
    "commands",
    "bench",
    "review",
    "mining",
    "real_vllm",
    "mutation",
    "report",
    "pytest_plugin",
    "source",
    "run",
    "catalog",
    "deployment",
    "records",
    "faults",
    "engine",
    "runtime",
)


def _room(module: str) -> str:
    """The folder (or top-level module) of proofs/ that holds `module`; "__init__" for the package itself."""
    return module.split(".")[1] if module.startswith("proofs.") else "__init__"


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names |= {f"{node.module}.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
    return names


def _module(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


def test_every_room_of_proofs_is_placed():
    rooms = {_room(_module(p)) for p in (ROOT / "proofs").rglob("*.py")} - {"__init__"}
    assert rooms <= set(LAYERS), f"rooms without a layer: {sorted(rooms - set(LAYERS))}"


def test_no_import_runs_up():
    modules = {_module(p): p for p in (ROOT / "proofs").rglob("*.py")}
    upward = []
    for name, path in modules.items():
        room = _room(name)
        if room == "__init__":
            continue
        for imported in _imports(path):
            if imported not in modules or _room(imported) in (room, "__init__"):
                continue
            if LAYERS.index(_room(imported)) < LAYERS.index(room):
                upward.append(f"{name} imports {imported}")
    assert not upward, "\n".join(sorted(upward))


def test_models_import_nothing_of_proofs():
    for path in (ROOT / "models").rglob("*.py"):
        assert not any(m.split(".")[0] == "proofs" for m in _imports(path)), path
