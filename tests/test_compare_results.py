"""`python3 -m proofs.compare_results A.json B.json` on real results of
`gridproof prove --json`: 0 when the conclusions agree, 1 naming each
entry that differs, 2 and one line on a file that is not a result."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
THEOREM = "eagle-backoff-without-annotation"  # variants and mutants, PROVED and REFUTED, in well under a second


def _run(*arguments: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, *arguments], capture_output=True, text=True, env=env, cwd=ROOT)


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> tuple[Path, Path]:
    """Two runs of the same selection, each decided afresh."""
    directory = tmp_path_factory.mktemp("compare")
    paths = []
    for name in ("first.json", "second.json"):
        run = _run("-m", "proofs.cli", "prove", "--theorem", THEOREM, "--json", "--no-cache", "--jobs", "1")
        assert run.returncode == 0, run.stderr
        path = directory / name
        path.write_text(run.stdout, encoding="utf-8")
        paths.append(path)
    return paths[0], paths[1]


def compare(first: Path, second: Path) -> subprocess.CompletedProcess:
    return _run("-m", "proofs.compare_results", str(first), str(second))


def test_two_runs_of_the_same_selection_agree(results):
    first, second = results
    entries = json.loads(first.read_text())["entries"]
    assert {e["verdict"] for e in entries} == {"PROVED", "REFUTED"}
    run = compare(first, second)
    assert run.returncode == 0, run.stdout
    assert f"same: {len(entries)} entries agree" in run.stdout


def test_a_flipped_verdict_is_named(results, tmp_path):
    first, _ = results
    data = json.loads(first.read_text())
    flipped = next(e for e in data["entries"] if e["verdict"] == "PROVED")
    flipped["verdict"] = "UNKNOWN"
    changed = tmp_path / "changed.json"
    changed.write_text(json.dumps(data), encoding="utf-8")
    run = compare(first, changed)
    assert run.returncode == 1
    assert f"{THEOREM} / {flipped['variant']}: verdict PROVED in {first}, UNKNOWN in {changed}" in run.stdout
    assert run.stdout.strip().splitlines()[-1].startswith("1 difference between")


def test_hypotheses_counterexample_and_a_missing_entry_are_differences(results, tmp_path):
    first, _ = results
    data = json.loads(first.read_text())
    proved = next(e for e in data["entries"] if e["verdict"] == "PROVED" and e["hypotheses_used"])
    refuted = next(e for e in data["entries"] if e["counterexample"])
    proved["hypotheses_used"] = proved["hypotheses_used"][1:] + ["another"]
    name = next(iter(refuted["counterexample"]))
    refuted["counterexample"][name] = 10**6
    dropped = data["entries"].pop()
    # Budget and time are not conclusions: they may move.
    for entry in data["entries"]:
        entry["rlimit"] += 1
        entry["seconds"] += 1.0
    changed = tmp_path / "changed.json"
    changed.write_text(json.dumps(data), encoding="utf-8")
    run = compare(first, changed)
    assert run.returncode == 1
    lines = run.stdout.strip().splitlines()
    assert any(line.startswith(f"{THEOREM} / {proved['variant']}: hypotheses used") for line in lines)
    assert any(
        line.startswith(f"{THEOREM} / {refuted['variant']}: counterexample") and f"{name}=1000000" in line
        for line in lines
    )
    assert f"{THEOREM} / {dropped['variant']}: only in {first}" in lines
    assert len(lines) == 4  # three differences and the count


@pytest.mark.parametrize(
    "content, problem",
    [
        (b"\x00\xff binary", "not"),
        (b'{"entries": []', "not valid JSON"),
        (b'{"format": "something else"}', "format is"),
    ],
)
def test_a_file_that_is_not_a_result_is_one_line_and_exit_2(results, tmp_path, content, problem):
    first, _ = results
    bad = tmp_path / "bad.json"
    bad.write_bytes(content)
    for run in (compare(first, bad), compare(bad, first)):
        assert run.returncode == 2
        assert run.stdout == ""
        assert len(run.stderr.strip().splitlines()) == 1 and problem in run.stderr and str(bad) in run.stderr


def test_a_missing_file_and_a_missing_argument_are_exit_2(results, tmp_path):
    first, _ = results
    missing = compare(first, tmp_path / "absent.json")
    assert missing.returncode == 2 and len(missing.stderr.strip().splitlines()) == 1
    alone = _run("-m", "proofs.compare_results", str(first))
    assert alone.returncode == 2 and len(alone.stderr.strip().splitlines()) == 1


def test_an_enumerated_counterexample_names_its_case(tmp_path):
    # An enumerated theorem's failing case names its geometry ("g8"): a
    # result holding one is read like any other, by report and compare alike.
    run = _run("-m", "proofs.cli", "prove", "--theorem", "grid-period-shift", "--json", "--no-cache", "--jobs", "1")
    assert run.returncode == 0, run.stderr
    path = tmp_path / "enumerated.json"
    path.write_text(run.stdout, encoding="utf-8")
    refuted = next(e for e in json.loads(run.stdout)["entries"] if e["counterexample"])
    assert any(isinstance(v, str) for v in refuted["counterexample"].values())
    same = compare(path, path)
    assert same.returncode == 0, same.stderr
    report = _run("-m", "proofs.cli", "report", str(path))
    assert report.returncode == 0, report.stderr


def _edited(first: Path, tmp_path: Path, edit, name: str = "edited.json") -> Path:
    data = json.loads(first.read_text())
    edit(data)
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "edit, problem",
    [
        (lambda d: d.update(entries=[]), "holds no entries"),
        (lambda d: d["entries"].append(dict(d["entries"][0])), "appears twice"),
    ],
    ids=["no entries", "an entry twice"],
)
def test_a_result_no_comparison_can_rest_on_is_refused(results, tmp_path, edit, problem):
    """An empty result agreed with an empty one ("same: 0 entries agree"); of two entries for one
    (theorem, variant) one was never compared."""
    first, _ = results
    weak = _edited(first, tmp_path, edit)
    for run in (compare(first, weak), compare(weak, first), compare(weak, weak)):
        assert run.returncode == 2 and run.stdout == ""
        assert len(run.stderr.strip().splitlines()) == 1 and problem in run.stderr


def test_a_counterexample_holding_null_is_read(results, tmp_path):
    # geometry-refuses-unusable's failing cases leave fields null: such a result was refused as damaged.
    first, _ = results

    def null(data):
        refuted = next(e for e in data["entries"] if e["counterexample"])
        refuted["counterexample"]["refused"] = None

    path = _edited(first, tmp_path, null)
    run = compare(first, path)
    assert run.returncode == 1 and "refused=None" in run.stdout
