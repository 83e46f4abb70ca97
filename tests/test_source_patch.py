"""PR457's reference patches (patches/vllm-0.33.0/) and `gridproof source`
on them: they apply to the release's tree, every patched function is PROVED
equivalent to its variant's model, a patch that deviates is refuted on an
input that replays, `--diff` lists what the change alters; and the budgets
that keep a run from hanging."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from proofs.cli import main
from proofs.engine.solver import PROVED, REFUTED, UNKNOWN
from proofs.source import budget, patches, report
from proofs.source.loader import SourceError, VllmSource
from tests.source_edits import MODULES

pytestmark = pytest.mark.slow  # source on patched trees (about 2 minutes)

INSTALLED = VllmSource.installed()
DIFFS = {name: patches.PATCHES / "vllm-0.33.0" / f"{name}.diff" for name in ("pr457", "pr457-guarded")}


@pytest.fixture(autouse=True)
def _patched_trees_in_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("GRIDPROOF_VLLM_PATCHED", str(tmp_path / "patched"))


def _release_tree(root: Path) -> Path:
    """The modules a patch touches and the executor reads, as installed."""
    for relative in (*MODULES, "config/cache.py"):
        target = root / "vllm" / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(Path(INSTALLED.filename("vllm." + relative[:-3].replace("/", "."))), target)
    (root / "vllm" / "v1").mkdir(exist_ok=True)
    return root


@pytest.mark.parametrize("name", sorted(DIFFS))
def test_the_patch_applies_with_the_usual_tools_and_ours(tmp_path, name):
    root = _release_tree(tmp_path / "tree")
    diff = DIFFS[name]
    for tool in (["patch", "-p1", "--dry-run", "--batch", "-i", str(diff)], ["git", "apply", "--check", str(diff)]):
        if shutil.which(tool[0]) is None:
            continue
        done = subprocess.run(tool, cwd=root, capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr
    patches.apply(patches.parse(diff.read_text(), name), root, name)
    text = (root / "vllm" / "v1" / "core" / "sched" / "scheduler.py").read_text()
    assert "block_size = self.mamba_block_size" in text
    assert ("check_mamba_checkpoint_cadence(" in text) == (name == "pr457-guarded")
    assert (root / "tests" / "v1" / "core" / "test_mamba_recurrent_cadence.py").is_file()


def test_a_hunk_that_does_not_apply_is_refused_by_file_and_hunk(tmp_path):
    root = _release_tree(tmp_path / "tree")
    scheduler = root / "vllm" / "v1" / "core" / "sched" / "scheduler.py"
    scheduler.write_text(scheduler.read_text().replace("block_size = self.cache_config.block_size", "block_size = 1"))
    with pytest.raises(SourceError, match=r"hunk \d+ of vllm/v1/core/sched/scheduler.py does not apply"):
        patches.apply(patches.parse(DIFFS["pr457"].read_text(), "pr457"), root, "pr457")


def test_the_guarded_patch_is_proved_equivalent_to_its_variant(capsys):
    """Every patched function PROVED against pr457-guarded, every crash site
    unreachable, the split theorems PROVED on the patched split."""
    assert main(["source", "--vllm-version", "0.33.0", "--patch", "pr457-guarded", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["variant"] == "pr457-guarded"
    functions = result["functions"]
    for name in ("split", "block_size_resolution", "recurrent_cadence", "eagle_spans", "last_cacheable_position"):
        assert functions[name]["verdict"] == PROVED, (name, functions[name])
    assert functions["configuration_check"]["verdict"] == PROVED
    assert all(t["verdict"] == PROVED for t in result["theorems"].values())
    assert all(e["scope"] for e in functions.values())


def test_the_unguarded_patch_is_proved_without_the_check():
    result = report.check(
        patches.patched(INSTALLED, "0.33.0", DIFFS["pr457"]),
        ("split", "block_size_resolution", "last_cacheable_position", "configuration_check"),
        progress=False,
        theorems=False,
        variant=_variant("pr457"),
    )
    functions = result["functions"]
    assert functions["configuration_check"]["verdict"] == "ABSENT" and not functions["configuration_check"]["required"]
    assert all(functions[n]["verdict"] == PROVED for n in ("split", "block_size_resolution", "last_cacheable_position"))
    assert result["ok"]


def test_the_guard_is_refuted_against_the_unguarded_model():
    """pr457's model accepts every configuration: the guarded tree's check
    refuses one, on an input its own check replays."""
    result = report.check(
        patches.patched(INSTALLED, "0.33.0", DIFFS["pr457-guarded"]),
        ("configuration_check",),
        progress=False,
        theorems=False,
        variant=_variant("pr457"),
    )
    entry = result["functions"]["configuration_check"]
    assert entry["verdict"] == REFUTED and entry["values"] == {"first": False, "second": True}


def test_the_release_against_the_patch_lists_what_the_change_alters(capsys):
    assert main(["source", "--diff", "0.33.0", "0.33.0+pr457-guarded", "--json", "--function", "split"]) == 0
    split = json.loads(capsys.readouterr().out)["functions"]["split"]
    assert split["verdict"] == REFUTED
    x = split["counterexample"]
    assert x["block"] != x["unread_block"]  # the release splits on the physical block, the patch on R
    assert main(["source", "--diff", "0.33.0", "0.33.0+pr457-guarded", "--json", "--function", "eagle_spans"]) == 0
    entry = json.loads(capsys.readouterr().out)["functions"]["eagle_spans"]
    assert entry["verdict"] == "ABSENT" and "absent from installed vLLM" in entry["reason"]


def test_a_planted_fault_in_the_patched_tree_fails_the_command(tmp_path, capsys):
    """The patched split reading the physical block again, given as a tree:
    REFUTED, exit 1, on an input the edited split replays."""
    root = _release_tree(tmp_path / "tree")
    patches.apply(patches.parse(DIFFS["pr457-guarded"].read_text(), "d"), root, "d")
    scheduler = root / "vllm" / "v1" / "core" / "sched" / "scheduler.py"
    text = scheduler.read_text()
    scheduler.write_text(
        text.replace("block_size = self.mamba_block_size\n", "block_size = self.cache_config.block_size\n")
    )
    argv = ["source", "--vllm", str(root), "--variant", "pr457-guarded", "--function", "split", "--no-theorems"]
    assert main([*argv, "--json"]) == 1
    entry = json.loads(capsys.readouterr().out)["functions"]["split"]
    assert entry["verdict"] == REFUTED
    from proofs.source.equivalence import subjects
    from proofs.source.functions import ShippedFunctions
    from proofs.source.loader import Loader

    variant = _variant("pr457-guarded")
    functions = ShippedFunctions(Loader(VllmSource.from_path(str(root))), variant)
    replayed = subjects(variant)["split"].shipped(functions, entry["counterexample"])
    assert replayed == entry["values"]["first"] != entry["values"]["second"]


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--patch", "no-such-patch"], "--patch no-such-patch: neither one of the project's patches nor a .diff file"),
        (["--variant", "pr458"], "unknown variant 'pr458'"),
        (["--function", "recurrent_cadence"], "--function recurrent_cadence: not a function of baseline"),
        (["--diff", "0.33.0", "0.33.0", "--patch", "pr457"], "--patch: give the patched side of --diff"),
        (["--budget", "0"], "expected seconds between 0 and 86400"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv, says, capsys):
    assert main(["source", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0], err


def test_a_spent_budget_ends_in_unknown_not_a_hang():
    """The split's budget cut to a second: UNKNOWN, after the concrete
    search, in about the budget and the search's time, never later."""
    started = time.monotonic()
    with budget.configured(function_seconds=1.0):
        result = report.check(INSTALLED, ("split",), progress=False, theorems=False)
    elapsed = time.monotonic() - started
    entry = result["functions"]["split"]
    assert entry["verdict"] == UNKNOWN
    assert "the budget of 1 s per function was spent" in entry["reason"]
    assert elapsed < 1.0 + 12 + report.CRASH_SECONDS + 10


def test_sigterm_stops_a_run_at_once():
    process = subprocess.Popen(
        [sys.executable, "-m", "proofs.cli", "source", "--function", "split"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(6)
    sent = time.monotonic()
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=30)
    assert process.returncode == 143
    assert time.monotonic() - sent < 5
    assert err.strip().splitlines()[-1] == "gridproof: terminated"


def _variant(name: str):
    from models.variants import VARIANTS

    return VARIANTS[name]
