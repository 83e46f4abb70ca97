"""The pytest plugin (proofs/pytest_plugin.py): the theorem catalogue as pytest items, so `pytest
--junitxml` carries the proof run. Run in a child pytest on proofs/manifest.toml alone."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import xmlschema

ROOT = Path(__file__).parent.parent
SCHEMA = Path(__file__).parent / "schemas" / "junit-10.xsd"


def child_pytest(*args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "pytest", "proofs/manifest.toml", "-q", "-p", "no:cacheprovider", *args]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)


def test_proofs_are_pytest_items_in_the_junit_xml(tmp_path):
    xml = tmp_path / "junit.xml"
    run = child_pytest("-k", "prefill-state-slot", "--junitxml", str(xml))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "6 passed" in run.stdout  # four variants and two mutants
    xmlschema.XMLSchema(str(SCHEMA)).validate(str(xml))
    cases = {c.get("name"): c for c in ET.parse(xml).iter("testcase")}
    assert set(cases) == {
        "prefill-state-slot[baseline]",
        "prefill-state-slot[pr457]",
        "prefill-state-slot[pr457-guarded]",
        "prefill-state-slot[vllm-0.34.0]",
        "prefill-state-slot[mutant:slot-off-by-one]",
        "prefill-state-slot[mutant:fresh-reads-slot-zero]",
    }
    assert all(c.find("failure") is None for c in cases.values())


def test_an_undecided_proof_fails_its_item_with_the_reason(tmp_path):
    xml = tmp_path / "junit.xml"
    run = child_pytest("-k", "prefill-state-slot and baseline", "--gridproof-rlimit", "50", "--junitxml", str(xml))
    assert run.returncode == 1
    xmlschema.XMLSchema(str(SCHEMA)).validate(str(xml))
    failure = next(ET.parse(xml).iter("failure"))
    assert "expected PROVED, got UNKNOWN" in failure.text
    assert "prefill-state-slot / baseline: expected PROVED, got UNKNOWN" in run.stdout
    assert "reproduce: gridproof prove --theorem prefill-state-slot --variant baseline --rlimit 50" in run.stdout


def test_the_default_runs_the_smoke_subset_and_counts_the_rest_as_deselected():
    from proofs.pytest_plugin import SMOKE
    from proofs.run.runner import load_manifest

    manifest = load_manifest()
    smoke = sum(len(manifest[t].expected) for t in SMOKE if t in manifest)
    total = sum(len(e.expected) for e in manifest.values())
    run = child_pytest("--collect-only")
    assert f"{smoke}/{total} tests collected ({total - smoke} deselected)" in run.stdout, run.stdout
    none = child_pytest("--gridproof", "none")
    assert f"{total} deselected" in none.stdout
