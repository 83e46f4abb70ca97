"""The proof cache reuses an entry only while its queries' text is the same:
an unchanged rerun decides nothing, a changed model function re-decides
exactly the entries whose queries read it. Counted, never timed."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from models import arith
from proofs.cache import ProofCache
from proofs.catalog import CATALOGUE
from proofs.catalog import prefill as prefill_theorems
from proofs.cli import main

ROOT = Path(__file__).resolve().parent.parent

THEOREM = "prefill-state-slot"  # baseline, pr457, pr457-guarded, and two mutants
UNRELATED = "config-default-equivalence"  # reads config resolution only


def _cached(result: dict) -> dict[str, bool]:
    return {e["variant"]: e["cached"] for e in result["entries"]}


def _prove_in(tree: Path, cache: Path, theorem: str = THEOREM) -> dict:
    """`gridproof prove` run from a copy of the sources, as a user would after editing them."""
    command = [sys.executable, "-m", "proofs.cli", "prove", "--theorem", theorem, "--cache", str(cache), "--json"]
    done = subprocess.run(command, cwd=tree, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_an_unchanged_rerun_decides_nothing_and_an_edited_function_only_what_reads_it(tmp_path):
    tree, cache = tmp_path / "tree", tmp_path / "cache"
    for top in ("models", "proofs"):
        shutil.copytree(ROOT / top, tree / top, ignore=shutil.ignore_patterns("__pycache__"))
    first = _prove_in(tree, cache)
    assert first["cache"]["reused"] == 0 and not any(_cached(first).values())
    unrelated = _prove_in(tree, cache, UNRELATED)
    again = _prove_in(tree, cache)
    assert again["cache"]["reused"] == len(again["entries"]) == 5
    for old, new in zip(first["entries"], again["entries"], strict=True):
        assert {k: v for k, v in old.items() if k not in ("seconds", "cached")} == {
            k: v for k, v in new.items() if k not in ("seconds", "cached")
        }
    # The slot a state is written to, cdiv(e, R) - 1, written as (e + R - 1) // R - 1:
    # every query of the slot theorem reads it, none of the config theorem's does.
    source = tree / "models" / "prefill.py"
    old_line = "    return arith.cdiv(end, cadence) - 1\n"
    assert old_line in source.read_text()
    source.write_text(
        source.read_text().replace(old_line, "    return arith.floordiv(end + cadence - 1, cadence) - 1\n")
    )
    changed = _prove_in(tree, cache)
    assert not any(_cached(changed).values())
    assert [e["verdict"] for e in changed["entries"]] == [e["verdict"] for e in first["entries"]]
    untouched = _prove_in(tree, cache, UNRELATED)
    assert untouched["cache"]["reused"] == len(untouched["entries"]) == len(unrelated["entries"])


def test_reading_always_sees_a_function_replaced_in_the_process(tmp_path, monkeypatch):
    theorem = CATALOGUE[THEOREM]
    recorded, read = ProofCache(tmp_path), ProofCache(tmp_path, read_always=True)
    before = recorded.key(theorem, "baseline", "PROVED", 1000, "ci", None)
    assert read.key(theorem, "baseline", "PROVED", 1000, "ci", None) == before
    monkeypatch.setattr(prefill_theorems, "initial_state_column", lambda v, c, r: arith.cdiv(c, r) - 1)
    assert read.key(theorem, "baseline", "PROVED", 1000, "ci", None) != before
    # Recorded by the files, which did not change: why tests that patch must read always.
    assert recorded.key(theorem, "baseline", "PROVED", 1000, "ci", None) == before


def test_no_cache_decides_everything_and_stores_nothing(tmp_path, capsys):
    assert main(["prove", "--theorem", THEOREM, "--cache", str(tmp_path), "--json"]) == 0
    stored = sorted(tmp_path.rglob("*"))
    assert len(list(tmp_path.glob("*.json"))) == 5
    capsys.readouterr()
    assert main(["prove", "--theorem", THEOREM, "--no-cache", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert "cache" not in result and not any(_cached(result).values())
    assert sorted(tmp_path.rglob("*")) == stored


def test_a_cache_directory_that_is_a_file_is_one_line_and_exit_2(tmp_path, capsys):
    path = tmp_path / "file"
    path.write_text("")
    assert main(["prove", "--theorem", THEOREM, "--cache", str(path)]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_every_module_of_the_solver_is_part_of_the_procedure_a_cache_key_digests():
    """A change to how a verdict is decided (the replay, the refuters, the
    minimisation, the options) must re-decide every cached entry."""
    import ast

    from proofs.cache import _ROOT, PROCEDURE

    tree = ast.parse((_ROOT / "proofs/solver.py").read_text(encoding="utf-8"))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "proofs":
            imported |= {f"proofs/{alias.name}.py" for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("proofs."):
            imported.add(node.module.replace(".", "/") + ".py")
    assert imported >= {"proofs/claims.py", "proofs/options.py", "proofs/refutation.py"}
    assert imported <= set(PROCEDURE)


def test_a_mutant_that_reads_a_family_by_position_has_a_key_and_its_entry_is_cached(tmp_path, capsys):
    # restore-test-safe's any-groups obligations raise under this mutant (it slices the target
    # groups); the entry is refuted on the two-target obligation before them, and is cached.
    selection = ["--theorem", "restore-test-safe", "--variant", "mutant:restore-first-target-only"]
    assert main(["prove", *selection, "--cache", str(tmp_path), "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert [e["verdict"] for e in first["entries"]] == ["REFUTED"]
    assert main(["prove", *selection, "--cache", str(tmp_path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cache"]["reused"] == 1


def test_a_default_cache_that_cannot_be_made_is_left_out_with_a_note(tmp_path, monkeypatch, capsys):
    # A read-only or odd home must not fail the README's first command; a --cache named is an error.
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "a-file"))
    assert main(["prove", "--theorem", "split-bounds", "--variant", "baseline"]) == 0
    err = capsys.readouterr().err
    assert f"gridproof: note: no proof cache: cannot make {tmp_path / 'a-file' / 'gridproof'} (Not a directory)" in err
    assert main(["prove", "--theorem", "split-bounds", "--cache", str(tmp_path / "a-file" / "x")]) == 2
