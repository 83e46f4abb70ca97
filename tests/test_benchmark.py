"""The benchmark's smoke test: `python3 -m proofs.bench.benchmark --quick` runs every
section and prints its figures. No timing is asserted: the figures are for
reading, and the machine is shared."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # the benchmark's catalogue figures

ROOT = Path(__file__).resolve().parent.parent

pytest.importorskip("hypothesis")
pytest.importorskip("crosshair", reason="the benchmark's CrossHair peer needs the bench extra (crosshair-tool)")


@pytest.fixture(scope="module")
def docs_page(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("docs") / "benchmarks.md"


@pytest.fixture(scope="module")
def quick_output(docs_page: Path) -> str:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "proofs.bench.benchmark",
            "--quick",
            "--peer-seconds",
            "3",
            "--write-docs",
            str(docs_page),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_catalogue_figures(quick_output: str) -> None:
    assert "catalogue (tier ci, quick: only" in quick_output
    assert "wall time" in quick_output
    assert "total rlimit" in quick_output
    assert "PROVED" in quick_output and "REFUTED" in quick_output
    assert "not as the manifest expects, or undecided: 0" in quick_output


def test_encoding_side_by_side(quick_output: str) -> None:
    assert "witness = quotient/remainder witnesses, naive = Z3" in quick_output
    lines = quick_output.splitlines()
    assert any(line.strip().startswith("witness") and "UNKNOWN" in line for line in lines)
    assert any(line.strip().startswith("naive") and "UNKNOWN" in line for line in lines)


def test_race_table(quick_output: str) -> None:
    header = next(line for line in quick_output.splitlines() if line.startswith("property "))
    for column in ("gridproof s", "Hypothesis s", "CrossHair s", "Hyp/grid", "CH/grid"):
        assert column in header
    assert "slot-off-by-one" in quick_output
    assert "eagle-backoff-dropped" in quick_output
    assert "median Hypothesis / gridproof:" in quick_output
    assert "per mutant" in quick_output


def test_write_docs_page_holds_the_command_and_the_printed_figures(quick_output: str, docs_page: Path) -> None:
    page = docs_page.read_text(encoding="utf-8")
    assert page.startswith("# Benchmarks\n")
    assert f"python3 -m proofs.bench.benchmark --quick --peer-seconds 3 --write-docs {docs_page}" in page
    # The figures are the run's own output, machine and z3 version first.
    assert quick_output.strip() in page
    assert "cores, load average" in page and "z3 " in page


def test_cache_figures(quick_output: str) -> None:
    assert "proof cache (tier ci)" in quick_output
    rerun = next(line for line in quick_output.splitlines() if "unchanged rerun" in line)
    reused, total = rerun.split(" entries reused")[0].split(", ")[-1].split(" of ")
    assert int(reused) == int(total) > 0  # an unchanged rerun decides nothing again


def test_the_crosshair_module_names_the_refuted_obligation_not_the_first(tmp_path, monkeypatch):
    """guard-exact's too-strict guard is refuted by its second obligation (necessary)."""
    from proofs.bench.benchmark import Property, _refuted_obligation, crosshair_module
    from proofs.catalog import CATALOGUE

    theorem = CATALOGUE["guard-exact"]
    obligation = _refuted_obligation(theorem, "mutant:guard-demands-longer-cadence", 20_000_000)
    assert obligation is theorem.obligations[1]
    prop = Property("x", "guard-exact", "mutant:guard-demands-longer-cadence", obligation, 20_000_000)
    (tmp_path / "guard_module.py").write_text(crosshair_module(prop), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    import guard_module  # applies the mutant's patch, as in CrossHair's process

    try:
        assert guard_module.OBLIGATION is obligation
    finally:
        guard_module._IN_EFFECT.__exit__(None, None, None)
        sys.modules.pop("guard_module")
