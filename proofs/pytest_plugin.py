"""pytest integration: the theorem catalogue as pytest items, so that `pytest --junitxml` carries the
proof run with the rest of the suite.

Registered through the `pytest11` entry point (pyproject.toml), and active only where pytest collects
this package's own proofs/manifest.toml (listed in `testpaths`): one item per theorem and variant,
`proofs/manifest.toml::THEOREM[VARIANT]`, marked `gridproof`, located at the theorem's formula.

Which items run is chosen with `--gridproof`:
- `smoke` (the default): the theorems in SMOKE, a few seconds: every subject, a refutation of
  `baseline` and the mutants they must kill;
- `ci`: the tier `gridproof prove` decides (about half a minute on two cores);
- `slow`, `all`: the slow tier, everything;
- `none`: no proof item.
The others are deselected, and pytest's summary counts them. `--gridproof-rlimit N` sets the budget.
"""

from __future__ import annotations

from pathlib import Path

import pytest

SMOKE = (
    "config-explicit-cadence-kept",
    "split-default-equivalence",
    "eagle-backoff-without-annotation",
    "prefill-state-slot",
)
CHOICES = ("smoke", "ci", "slow", "all", "none")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("gridproof", "gridproof theorem catalogue (items of proofs/manifest.toml)")
    group.addoption(
        "--gridproof",
        choices=CHOICES,
        default="smoke",
        help="which proof items run: smoke (default: a few fast theorems), ci, slow, all, or none",
    )
    group.addoption(
        "--gridproof-rlimit", type=int, default=None, help="Z3 resource budget per obligation (default: the manifest's)"
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "gridproof: one theorem decided for one variant (proofs/manifest.toml)")


def _manifest() -> Path:
    return Path(__file__).with_name("manifest.toml").resolve()


def pytest_collect_file(file_path: Path, parent: pytest.Collector):
    if file_path.name == "manifest.toml" and file_path.resolve() == _manifest():
        return ManifestFile.from_parent(parent, path=file_path)
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    choice = config.getoption("gridproof")
    keep, drop = [], []
    for item in items:
        if isinstance(item, ProofItem) and not _selected(item, choice):
            drop.append(item)
        else:
            keep.append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def _selected(item: ProofItem, choice: str) -> bool:
    if choice == "none":
        return False
    if choice == "smoke":
        return item.run.theorem.name in SMOKE
    return choice == "all" or item.run.tier == choice


class ManifestFile(pytest.File):
    def collect(self):
        from proofs.run.runner import load_manifest, plan_runs

        for run in plan_runs(load_manifest(self.path), None, None, "all"):
            yield ProofItem.from_parent(self, name=f"{run.theorem.name}[{run.variant}]", run=run)


class ProofFailure(Exception):
    def __init__(self, entry) -> None:
        super().__init__(entry.theorem)
        self.entry = entry


class ProofItem(pytest.Item):
    def __init__(self, *, run, **kwargs) -> None:
        super().__init__(**kwargs)
        self.run = run
        self.add_marker("gridproof")

    def runtest(self) -> None:
        from proofs.engine.solver import DEFAULT_RLIMIT, SolverOptions
        from proofs.run.runner import run_theorem

        run = self.run
        # --gridproof-rlimit, else the manifest's budget for the theorem (where the manifest has one)
        rlimit = self.config.getoption("gridproof_rlimit") or getattr(run, "rlimit", None) or DEFAULT_RLIMIT
        # No per-case <properties>: pytest's default JUnit family (xunit2) has no room for them, and the
        # file must stay valid; `gridproof prove --report-dir` writes the richer junit.xml.
        entry = run_theorem(run.theorem, run.variant, run.expected, SolverOptions(rlimit=rlimit), run.tier)
        if not entry.ok:
            raise ProofFailure(entry)

    def repr_failure(self, excinfo, style=None):
        if not isinstance(excinfo.value, ProofFailure):
            return super().repr_failure(excinfo)
        from proofs.run.result import problems

        e = excinfo.value.entry
        lines = [f"{e.theorem} / {e.variant}: " + "; ".join(problems(e.to_json()))]
        if e.reason:
            lines.append(f"reason: {e.reason}")
        if e.counterexample:
            lines.append("counterexample: " + ", ".join(f"{k}={v}" for k, v in e.counterexample.items()))
        lines.append(f"reproduce: {e.reproduce}")
        return "\n".join(lines)

    def reportinfo(self):
        from proofs.run.runner import theorem_location

        path, _, line = theorem_location(self.run.theorem).rpartition(":")
        root = _manifest().parent.parent
        return root / path, int(line) - 1, f"{self.run.theorem.name} / {self.run.variant}"
