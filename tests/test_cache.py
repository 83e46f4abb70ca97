"""The proof cache reuses an entry only while its queries' text is the same:
an unchanged rerun decides nothing, a changed model function re-decides
exactly the entries whose queries read it. Counted, never timed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from models import arith
from proofs.catalog import CATALOGUE
from proofs.catalog import prefill as prefill_theorems
from proofs.cli import main
from proofs.run.cache import ProofCache

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
    assert again["cache"]["reused"] == len(again["entries"]) == 6  # four variants, two mutants
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
    assert len(list(tmp_path.glob("*.json"))) == 6  # four variants, two mutants
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

    from proofs.run.cache import _ROOT, PROCEDURE

    tree = ast.parse((_ROOT / "proofs/engine/solver.py").read_text(encoding="utf-8"))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "proofs":
            folder = node.module.replace(".", "/")
            for alias in node.names:  # a module of the package, or a name of the module
                module = f"{folder}/{alias.name}.py"
                imported.add(module if (_ROOT / module).exists() else f"{folder}.py")
    assert imported >= {"proofs/engine/claims.py", "proofs/engine/options.py", "proofs/engine/refutation.py"}
    assert imported <= set(PROCEDURE)


def test_a_mutant_that_reads_a_family_by_position_has_a_key_and_its_entry_is_cached(tmp_path, capsys):
    # The mutant slices the target groups (the first alone); its entry is refuted, and cached.
    selection = ["--theorem", "plan-reads-group-grid", "--variant", "mutant:plan-first-target-span-only"]
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


# --- a cache that cannot lie about what it was asked --------------------------------------------------

MUTANT = "mutant:slot-off-by-one"  # prefill-state-slot's refuted mutant, with a goal conjunct refuted alone


def _warm(cache: Path, capsys, *extra: str) -> dict:
    assert main(["prove", "--theorem", THEOREM, "--cache", str(cache), "--json", "--jobs", "1", *extra]) == 0
    return json.loads(capsys.readouterr().out)


def _run(cache: Path, capsys, *extra: str) -> tuple[int, dict, str]:
    status = main(["prove", "--theorem", THEOREM, "--cache", str(cache), "--json", "--jobs", "1", *extra])
    captured = capsys.readouterr()
    return status, json.loads(captured.out), captured.err


def _entry_files(cache: Path) -> dict[str, Path]:
    """Each entry file of the cache, by the variant its request names."""
    return {json.loads(p.read_text())["request"]["variant"]: p for p in cache.glob("*.json")}


def _notes(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("gridproof: note: proof cache")]


def _not_replaying(values: dict) -> dict:
    """Inputs of the mutant's obligation on which its claim does not fail: what a poisoned
    counterexample would hold. Found, not assumed."""
    from proofs.faults.handwritten import in_effect
    from proofs.run.cache import _violating

    theorem = CATALOGUE[THEOREM]
    with in_effect(MUTANT) as variant:
        for cadence in range(-2, 9):
            for k in range(-2, 9):
                trial = {**values, "cadence": cadence, "k": k}
                if _violating(theorem.obligations, variant, trial) is None:
                    return trial
    raise AssertionError("every small input refutes the mutant")


def _resealed(data: dict) -> str:
    """The entry's text with its checksum computed again, as a forger would: what the other checks must
    catch."""
    from proofs.run.cache import sealed

    return sealed({name: value for name, value in data.items() if name not in ("checksum", "mac")})


def _poisoned(name: str, data: dict, siblings: dict) -> str:
    """The text of the entry `data` poisoned so."""
    data = json.loads(json.dumps(data))
    if name == "a plain edit of its reason":
        data["reason"] = "edited by hand"
        return json.dumps(data)  # its checksum left as it was
    if name == "verdict and expected edited to PROVED":
        data["verdict"] = data["request"]["expected"] = "PROVED"
        data["counterexample"], data["conjuncts_alone"] = None, {}
        data["witnesses"]["conjuncts_alone"] = {}
    elif name == "theorem swapped":
        data["request"]["theorem"] = UNRELATED
    elif name == "variant swapped":
        data["request"]["variant"] = "mutant:fresh-reads-slot-zero"
    elif name == "a sibling entry's content":
        data = siblings["mutant:fresh-reads-slot-zero"]
    elif name == "mistyped field":
        data["rlimit"] = "many"
    elif name == "counterexample that does not replay":
        data["counterexample"] = _not_replaying(data["counterexample"])
    elif name == "counterexample missing an input":
        data["counterexample"].pop("k")
    elif name == "reason rewritten":
        data["reason"] = "refuted by a trusted colleague"
    elif name == "conjunct's inputs that do not replay":
        (conjunct,) = data["witnesses"]["conjuncts_alone"]
        data["witnesses"]["conjuncts_alone"][conjunct] = _not_replaying(data["counterexample"])
    elif name == "hypothesis used that the theorem does not state":
        data["hypotheses_used"] = ["a hypothesis nobody stated"]
    elif name == "another command to reproduce it":
        data["reproduce"] = "rm -rf ~"
    elif name == "queries of an obligation the theorem lacks":
        data["queries"] = {"no-such-obligation": []}
    elif name == "another format":
        data["format"] = "gridproof-cache/0"
    elif name == "no checksum":
        del data["checksum"]
        return json.dumps(data)
    return json.dumps(data) if name == "a sibling entry's content" else _resealed(data)


POISONS = (
    "a plain edit of its reason",
    "no checksum",
    "verdict and expected edited to PROVED",
    "theorem swapped",
    "variant swapped",
    "a sibling entry's content",
    "mistyped field",
    "counterexample that does not replay",
    "counterexample missing an input",
    "reason rewritten",
    "conjunct's inputs that do not replay",
    "hypothesis used that the theorem does not state",
    "another command to reproduce it",
    "queries of an obligation the theorem lacks",
    "another format",
    "truncated",
    "empty",
    "not UTF-8",
)


@pytest.mark.parametrize("poison", POISONS)
def test_a_poisoned_entry_is_decided_again_with_one_note(poison, tmp_path, capsys):
    clean = _warm(tmp_path, capsys)
    files = _entry_files(tmp_path)
    siblings = {variant: json.loads(path.read_text()) for variant, path in files.items()}
    path = files[MUTANT]
    if poison == "truncated":
        path.write_text(path.read_text()[: len(path.read_text()) // 2])
    elif poison == "empty":
        path.write_text("")
    elif poison == "not UTF-8":
        path.write_bytes(b"\xff\xfe" + path.read_bytes())
    else:
        path.write_text(_poisoned(poison, siblings[MUTANT], siblings))
    status, again, err = _run(tmp_path, capsys)
    assert status == 0, err
    assert _cached(again) == {variant: variant != MUTANT for variant in _cached(clean)}
    assert [(e["variant"], e["verdict"], e["counterexample"]) for e in again["entries"]] == [
        (e["variant"], e["verdict"], e["counterexample"]) for e in clean["entries"]
    ]
    (note,) = _notes(err)
    assert f"{THEOREM} / {MUTANT}: cache entry" in note and note.endswith("decided again")
    assert again["cache"]["rejected"] == 1
    assert "Traceback" not in err
    # Decided again, it is stored again, whole: the next run takes it.
    status, third, err = _run(tmp_path, capsys)
    assert status == 0 and all(_cached(third).values()) and not _notes(err)


def test_an_entry_edited_to_prove_a_refuted_mutant_never_passes_the_run(tmp_path, capsys):
    """The report of the issue: verdict and expected edited to PROVED made prove exit 0 on a refuted
    mutant. The expected verdict is the manifest's, and the entry is decided again: REFUTED."""
    _warm(tmp_path, capsys)
    path = _entry_files(tmp_path)[MUTANT]
    data = json.loads(path.read_text())
    path.write_text(_poisoned("verdict and expected edited to PROVED", data, {}))
    status, again, _ = _run(tmp_path, capsys, "--variant", MUTANT)
    assert status == 0
    (entry,) = again["entries"]
    assert (entry["verdict"], entry["expected"], entry["cached"]) == ("REFUTED", "REFUTED", False)


def _key_files(cache: Path) -> list[Path]:
    return [p for p in (cache / "keys").rglob("*") if p.is_file()]


def _key_file_of(cache: Path, variant: str) -> Path:
    keys = {p.read_text(): p for p in _key_files(cache)}
    return keys[_entry_files(cache)[variant].stem]


@pytest.mark.parametrize("content", ["sibling", "../../planted", "/planted/elsewhere", "not hex at all", ""])
def test_a_key_file_holds_a_digest_and_is_never_a_path(content, tmp_path, capsys):
    cache = tmp_path / "cache"
    clean = _warm(cache, capsys)
    siblings = _entry_files(cache)
    # A forged PROVED for the mutant, planted outside the cache where a path in the key file would lead.
    forged = json.loads(siblings[MUTANT].read_text())
    (tmp_path / "planted.json").write_text(_poisoned("verdict and expected edited to PROVED", forged, {}))
    key_file = _key_file_of(cache, MUTANT)
    key_file.write_text(siblings["mutant:fresh-reads-slot-zero"].stem if content == "sibling" else content)
    status, again, err = _run(cache, capsys)
    assert status == 0, err
    mine = next(e for e in again["entries"] if e["variant"] == MUTANT)
    was = next(e for e in clean["entries"] if e["variant"] == MUTANT)
    assert mine["verdict"] == "REFUTED" and mine["counterexample"] == was["counterexample"]
    (note,) = _notes(err)
    assert MUTANT in note
    # The key file holds the entry's own key again.
    assert key_file.read_text() == siblings[MUTANT].stem


def test_nothing_is_written_outside_the_cache_through_a_link(tmp_path, capsys):
    cache, outside = tmp_path / "cache", tmp_path / "outside"
    outside.mkdir()
    cache.mkdir()
    (cache / "keys").symlink_to(outside)
    status, result, err = _run(cache, capsys)
    assert status == 0
    assert list(outside.iterdir()) == []
    assert "cannot write" in err  # said once, and the run went on
    # An entry file that is a link is refused and replaced by a file of the cache's own.
    cache2 = tmp_path / "cache2"
    _warm(cache2, capsys)
    path = _entry_files(cache2)[MUTANT]
    target, text = tmp_path / "target.json", path.read_text()
    target.write_text(text)
    path.unlink()
    path.symlink_to(target)
    status, again, err = _run(cache2, capsys)
    assert status == 0 and "symbolic link" in _notes(err)[0]
    assert not path.is_symlink() and target.read_text() == text


@pytest.mark.parametrize("which", ["entry", "key"])
def test_a_fifo_in_the_cache_is_never_opened(which, tmp_path):
    cache = tmp_path / "cache"
    command = [sys.executable, "-m", "proofs.cli", "prove", "--theorem", THEOREM, "--cache", str(cache), "--jobs", "1"]
    subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True, timeout=300)
    path = _entry_files(cache)[MUTANT] if which == "entry" else _key_file_of(cache, MUTANT)
    path.unlink()
    os.mkfifo(path)
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "not a regular file" in done.stderr and "Traceback" not in done.stderr


def test_a_fault_in_a_data_file_is_seen_by_a_cached_run(tmp_path):
    """A geometry's hash_block_size halved, a family's linear_num_value_heads halved: with the cache
    warmed on the clean tree, the cached run refutes exactly as --no-cache does."""
    tree, cache = tmp_path / "tree", tmp_path / "cache"
    for top in ("models", "proofs"):
        shutil.copytree(ROOT / top, tree / top, ignore=shutil.ignore_patterns("__pycache__"))
    theorems = ("check-flags-resolve-to-the-files", "matches-recorded-vllm")

    def prove(theorem: str, *flags: str) -> tuple[int, str]:
        command = [sys.executable, "-m", "proofs.cli", "prove", "--theorem", theorem, "--variant", "baseline", *flags]
        done = subprocess.run(command, cwd=tree, capture_output=True, text=True, check=False, timeout=300)
        return done.returncode, done.stdout

    for theorem in theorems:
        assert prove(theorem, "--cache", str(cache))[0] == 0
    geometry = tree / "models" / "geometries" / "kimi-k3-tp16-dcp16.toml"
    text = geometry.read_text()
    assert "hash_block_size = 768" in text
    geometry.write_text(text.replace("hash_block_size = 768", "hash_block_size = 384"))
    cached, fresh = prove(theorems[0], "--cache", str(cache)), prove(theorems[0], "--no-cache")
    assert cached[0] == fresh[0] == 1 and "REFUTED" in cached[1] and "(cached)" not in cached[1]
    geometry.write_text(text)
    family = tree / "models" / "families" / "qwen3-next.json"
    config = json.loads(family.read_text())
    config["linear_num_value_heads"] //= 2
    family.write_text(json.dumps(config, indent=2))
    for theorem in theorems:
        cached, fresh = prove(theorem, "--cache", str(cache)), prove(theorem, "--no-cache")
        assert cached[0] == fresh[0] == 1 and "(cached)" not in cached[1], theorem
        assert [line for line in cached[1].splitlines() if " / baseline: " in line] == [
            line for line in fresh[1].splitlines() if " / baseline: " in line
        ]


def test_an_enumerated_key_does_not_depend_on_what_was_imported_before(tmp_path):
    script = (
        "import sys\n"
        "if sys.argv[1] == 'more':\n"
        "    import proofs.report.html, proofs.deployment.simulate\n"
        "from proofs.run.cache import entry_key\n"
        "from proofs.catalog import CATALOGUE\n"
        "for name in ('check-flags-resolve-to-the-files', 'prefill-run-bounds'):\n"
        "    print(entry_key(CATALOGUE[name], 'baseline', 'PROVED', 1000, 'ci', None))\n"
    )
    keys = set()
    for seed, imports in (("1", "few"), ("2", "more")):
        done = subprocess.run(
            [sys.executable, "-c", script, imports],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        )
        keys.add(done.stdout)
    assert len(keys) == 1


def _faulty_tree(tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    for top in ("models", "proofs"):
        shutil.copytree(ROOT / top, tree / top, ignore=shutil.ignore_patterns("__pycache__"))
    geometry = tree / "models" / "geometries" / "kimi-k3-tp16-dcp16.toml"
    geometry.write_text(geometry.read_text().replace("hash_block_size = 768", "hash_block_size = 384"))
    return tree


def test_verify_cache_decides_a_forged_proved_again(tmp_path):
    """No replay can check a cached PROVED: a PROVED forged under the key of a faulty tree is
    taken from the cache, unless --verify-cache decides it again."""
    tree, cache = _faulty_tree(tmp_path), tmp_path / "cache"
    command = [sys.executable, "-m", "proofs.cli", "prove", "--theorem", "check-flags-resolve-to-the-files"]
    command += ["--variant", "baseline", "--cache", str(cache)]

    def run(*extra: str):
        return subprocess.run([*command, *extra], cwd=tree, capture_output=True, text=True, check=False, timeout=300)

    assert run().returncode == 1  # REFUTED, and not stored: it differs from the manifest
    assert list(cache.glob("*.json")) == []
    (key_file,) = _key_files(cache)
    key = key_file.read_text()
    clean = tmp_path / "clean-cache"
    subprocess.run([*command[:-1], str(clean)], cwd=ROOT, capture_output=True, check=True, timeout=300)
    (genuine,) = clean.glob("*.json")
    forged = json.loads(genuine.read_text())
    forged["key"] = key
    (cache / f"{key}.json").write_text(_resealed(forged))
    assert run().returncode == 0  # what a cached PROVED rests on: the cache's writer
    verified = run("--verify-cache")
    assert verified.returncode == 1
    assert "the cached PROVED, decided again (--verify-cache), is REFUTED" in verified.stderr
    assert run().returncode == 1  # the forged entry is gone


def test_a_secret_refuses_entries_it_did_not_sign(tmp_path, capsys, monkeypatch):
    from proofs.run.cache import SECRET_VARIABLE

    _warm(tmp_path, capsys)  # unsigned
    monkeypatch.setenv(SECRET_VARIABLE, "this job's own")
    status, signed, err = _run(tmp_path, capsys)
    # Its key files are its own, so an unsigned cache is not even looked up: decided, then stored signed.
    assert status == 0 and not any(_cached(signed).values())
    status, again, err = _run(tmp_path, capsys)
    assert status == 0 and all(_cached(again).values()) and not _notes(err)
    path = next(p for p in tmp_path.glob("*.json") if json.loads(p.read_text()).get("mac"))
    data = json.loads(path.read_text())
    data["seconds"] += 1  # any edit at all, its checksum computed again
    path.write_text(_resealed(data))
    status, edited, err = _run(tmp_path, capsys)
    assert status == 0 and "is not signed with this run's GRIDPROOF_CACHE_SECRET" in _notes(err)[0]
    monkeypatch.setenv(SECRET_VARIABLE, "another job's")
    status, other, err = _run(tmp_path, capsys)
    assert status == 0 and not any(_cached(other).values())


def test_a_default_cache_that_cannot_be_written_costs_the_run_nothing(tmp_path, monkeypatch, capsys):
    import tempfile

    from proofs.run import cache as cache_module

    original = tempfile.mkstemp

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(cache_module.tempfile, "mkstemp", full)
    assert main(["prove", "--theorem", THEOREM, "--jobs", "1"]) == 0
    err = capsys.readouterr().err
    notes = [line for line in err.splitlines() if "note" in line]
    assert len(notes) == 1 and "cannot be written (No space left on device)" in notes[0]
    # Named, the same cache is an error before any work.
    assert main(["prove", "--theorem", THEOREM, "--cache", str(tmp_path / "named")]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    # Full only once the run is under way (the probe passed): one note, and the run goes on.
    calls = []

    def fills_up(*args, **kwargs):
        calls.append(1)
        if len(calls) > 2:
            raise OSError(28, "No space left on device")
        return original(*args, **kwargs)

    monkeypatch.setattr(cache_module.tempfile, "mkstemp", fills_up)
    for named in ([], ["--cache", str(tmp_path / "named2")]):
        calls.clear()
        assert main(["prove", "--theorem", THEOREM, "--jobs", "1", *named]) == 0
        notes = [line for line in capsys.readouterr().err.splitlines() if "cannot write" in line]
        assert len(notes) == 1 and "No space left on device" in notes[0]


@pytest.mark.parametrize("flag", ["--cache", "--report-dir", "--against"])
def test_an_empty_path_is_refused_not_the_current_directory(flag, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["prove", "--theorem", THEOREM, flag, ""]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "empty path" in err
    assert list(tmp_path.iterdir()) == []


def test_a_refused_entry_that_is_not_replaced_is_removed(tmp_path):
    """An entry that fails a check and whose fresh decision is not stored (it differs from the
    manifest) is removed: refused once, not on every run."""
    tree, cache = _faulty_tree(tmp_path), tmp_path / "cache"
    command = [sys.executable, "-m", "proofs.cli", "prove", "--theorem", "check-flags-resolve-to-the-files"]
    command += ["--variant", "baseline", "--cache", str(cache)]

    def run():
        return subprocess.run(command, cwd=tree, capture_output=True, text=True, check=False, timeout=300)

    assert run().returncode == 1
    (key_file,) = _key_files(cache)
    planted = cache / f"{key_file.read_text()}.json"
    planted.write_text('{"format": "gridproof-cache/2", "truncated')
    first = run()
    assert first.returncode == 1 and len(_notes(first.stderr)) == 1
    assert not planted.exists()
    assert not _notes(run().stderr)


@pytest.mark.parametrize(
    "poison",
    [
        "a hypothesis the theorem does not state",
        "an unconfirmed hypothesis not used",
        "a query answered sat",
        "a counterexample",
        "a verdict the manifest does not expect",
    ],
)
def test_a_poisoned_proved_entry_is_decided_again(poison, tmp_path, capsys):
    """What a PROVED entry says besides its verdict is checked against the theorem; its verdict
    only --verify-cache or a secret can check (test_verify_cache_decides_a_forged_proved_again)."""
    _warm(tmp_path, capsys)
    path = _entry_files(tmp_path)["baseline"]
    data = json.loads(path.read_text())
    if poison == "a hypothesis the theorem does not state":
        data["hypotheses_used"] = [*data["hypotheses_used"], "no such hypothesis"]
    elif poison == "an unconfirmed hypothesis not used":
        data["hypotheses_unconfirmed"] = [data["hypotheses"][0]]
        data["hypotheses_used"] = [h for h in data["hypotheses_used"] if h != data["hypotheses"][0]]
    elif poison == "a query answered sat":
        name = next(iter(data["queries"]))
        data["queries"][name][0]["answer"] = "sat"
    elif poison == "a counterexample":
        data["counterexample"] = {"cadence": 1, "k": 0}
    else:
        data["verdict"] = "REFUTED"
    path.write_text(_resealed(data))
    status, again, err = _run(tmp_path, capsys)
    assert status == 0
    assert _cached(again)["baseline"] is False and sum(_cached(again).values()) == len(again["entries"]) - 1
    (note,) = _notes(err)
    assert f"{THEOREM} / baseline: cache entry" in note
