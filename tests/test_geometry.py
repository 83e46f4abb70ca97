"""Geometry files: the built-in ones load and resolve as vLLM 0.33.0 would, and a
malformed file or command line is refused with one line naming the field and
the problem (exit status 2, nothing on stdout, no traceback)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from helpers import gridproof

from models.config import ConfigInputs, resolve
from models.geometry import (
    RECURRENT,
    TARGET,
    Geometry,
    builtin_geometry_names,
    load_geometry,
)
from models.plan import plan
from models.variants import BASELINE, PR457, PR457_GUARDED

BUILTINS = builtin_geometry_names()


def assert_one_line_error(result: subprocess.CompletedProcess, *fragments: str) -> str:
    """Exit 2, empty stdout, exactly one stderr line containing every fragment."""
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    line = lines[0]
    assert line.startswith("gridproof: error: "), line
    for fragment in fragments:
        assert fragment in line, (fragment, line)
    return line


# --- built-in geometries ----------------------------------------------------


def test_the_expected_builtins_are_shipped():
    assert {
        "kimi-k3-tp16-dcp16",
        "qwen3-next-80b-tp4-mtp2",
        "nemotron-3-nano-30b-tp2",
        "granite-4.0-h-small-tp2",
        "kimi-linear-48b-tp4-dcp4",
    } <= set(BUILTINS)


@pytest.mark.parametrize("name", BUILTINS)
def test_builtin_geometry_loads(name):
    geometry = load_geometry(name)
    assert isinstance(geometry, Geometry)
    assert geometry.name == name
    assert Path(geometry.source).name == f"{name}.toml"
    assert geometry.of_kind(TARGET) and geometry.of_kind(RECURRENT)
    d = geometry.deployment
    assert d.block_size > 0 and d.dcp_size > 0 and d.max_num_scheduled_tokens > 0
    # Every group is laid out on the physical page: its per-rank block is the block.
    assert all(g.block_size == d.block_size for g in geometry.groups)
    # Loading by path gives the same geometry as loading by name.
    assert load_geometry(geometry.source) == geometry
    assert geometry.description


@pytest.mark.parametrize("name", BUILTINS)
def test_builtin_geometry_simulates_under_baseline_and_pr457(name):
    geometry = load_geometry(name)
    for variant in ("baseline", "pr457"):
        result = gridproof("simulate", geometry.source, "--variant", variant, "--json")
        assert result.returncode == 0, result.stderr
        data = json.loads(result.stdout)
        assert data["variant"] == variant
        assert data["geometry"] == name
        assert data["prompt_tokens"] == geometry.request.prompt_tokens
        assert data["chunk_ends"][-1] == geometry.request.num_tokens
        assert data["published"], "a long prompt publishes at least one state"


@pytest.mark.parametrize("name", BUILTINS)
def test_pr457_guarded_accepts_exactly_the_aligned_cadences(name):
    geometry = load_geometry(name)
    resolved = plan(PR457_GUARDED, geometry)
    aligned = all(resolved.cadence % span == 0 for span in resolved.target_spans)
    result = gridproof("simulate", name, "--variant", "pr457-guarded")
    if aligned:
        assert result.returncode == 0, result.stderr
    else:
        assert_one_line_error(result, "pr457-guarded rejects", str(resolved.cadence))


# The page arithmetic of each new geometry file's comment, fed to the model of
# Platform._align_hybrid_block_size (models/config.py): the block in the file
# must be what that function resolves. Values: starting block (the backend's
# preferred size), attention bytes per token per rank, Mamba page bytes, the
# backend's smallest kernel block, the lcm of all backends' smallest kernel
# blocks, MLA, prefill-checkpoint alignment (0 = none).
PAGE_ARITHMETIC = {
    "qwen3-next-80b-tp4-mtp2": (16, 1 * (256 + 256) * 2, (2048 * 5 + 8 * 128 * 128) * 2, 16, 16, False, 0),
    "nemotron-3-nano-30b-tp2": (16, 1 * (128 + 128) * 2, 3072 * 3 * 2 + 32 * 64 * 128 * 4, 16, 16, False, 0),
    "granite-4.0-h-small-tp2": (16, 4 * (128 + 128) * 2, (4352 * 3 + 64 * 64 * 128) * 2, 16, 16, False, 0),
    "kimi-linear-48b-tp4-dcp4": (64, 1 * (512 + 64) * 2, 3072 * 3 * 2 + 8 * 128 * 128 * 4, 64, 64, True, 0),
}


@pytest.mark.parametrize("name", sorted(PAGE_ARITHMETIC))
def test_physical_block_is_what_0_33_0_resolves(name):
    geometry = load_geometry(name)
    start, per_token, mamba_page, kernel_min, backends, mla, checkpoint = PAGE_ARITHMETIC[name]
    explicit = geometry.deployment.mamba_block_size
    inputs = ConfigInputs(
        block_size=start,
        mamba_block_size=explicit or 0,
        mamba_page_size_padded=0,
        attn_page_per_token=per_token,
        mamba_page=mamba_page,
        kernel_min=kernel_min,
        backend_alignment=backends,
        use_mla=mla,
        align_mode=True,
        checkpoint_alignment=checkpoint,
        explicit_mamba_block_size=explicit is not None,
    )
    baseline = resolve(BASELINE, inputs)
    assert baseline.block_size == geometry.deployment.block_size
    assert baseline.mamba_block_size == geometry.deployment.block_size  # align mode overwrites
    assert baseline.mamba_page_size_padded == geometry.deployment.block_size * per_token
    assert baseline.mamba_page_size_padded >= mamba_page
    pr457 = resolve(PR457, inputs)
    assert pr457.block_size == geometry.deployment.block_size  # physical pages unchanged
    assert pr457.mamba_block_size == (explicit or geometry.deployment.block_size)
    assert plan(PR457, geometry).cadence == (explicit or geometry.deployment.block_size)


def test_resolved_blocks_are_the_ones_in_the_comments():
    # Guards the table above against drifting along with a file: the figures
    # the comments derive by hand.
    blocks = {name: load_geometry(name).deployment.block_size for name in PAGE_ARITHMETIC}
    assert blocks == {
        "qwen3-next-80b-tp4-mtp2": 288,
        "nemotron-3-nano-30b-tp2": 2096,
        "granite-4.0-h-small-tp2": 528,
        "kimi-linear-48b-tp4-dcp4": 512,
    }
    kimi_linear = load_geometry("kimi-linear-48b-tp4-dcp4")
    assert kimi_linear.deployment.dcp_size == 4
    assert kimi_linear.target_spans() == (2048,)
    assert not any(g.eagle for g in load_geometry("nemotron-3-nano-30b-tp2").groups)


# --- malformed geometry files -----------------------------------------------

VALID = """\
name = "tiny"
description = "a small valid geometry the malformed cases start from"

[deployment]
dcp_size = 2
block_size = 64
max_num_scheduled_tokens = 256

[[groups]]
kind = "target-attention"
block_size = 64
dcp_sharded = true

[[groups]]
kind = "recurrent"
block_size = 64

[request]
prompt_tokens = 1000
output_tokens = 0
"""


def write(tmp_path: Path, text: str, name: str = "geometry.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def replace_once(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, old
    return text.replace(old, new)


def test_the_valid_starting_point_simulates(tmp_path):
    result = gridproof("simulate", str(write(tmp_path, VALID)), "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["geometry"] == "tiny"
    assert data["chunk_ends"][-1] == 1000


RECURRENT_GROUP = '[[groups]]\nkind = "recurrent"\nblock_size = 64\n'
TARGET_GROUP = '[[groups]]\nkind = "target-attention"\nblock_size = 64\ndcp_sharded = true\n'

MALFORMED = {
    # missing fields
    "missing deployment field": (
        replace_once(VALID, "max_num_scheduled_tokens = 256\n", ""),
        ["deployment.max_num_scheduled_tokens", "missing required field"],
    ),
    "missing group field": (
        replace_once(VALID, RECURRENT_GROUP, '[[groups]]\nkind = "recurrent"\n'),
        ["groups[1].block_size", "missing required field"],
    ),
    "missing request field": (
        replace_once(VALID, "prompt_tokens = 1000\n", ""),
        ["request.prompt_tokens", "missing required field"],
    ),
    # negative and zero sizes
    "negative block size": (
        replace_once(VALID, "block_size = 64\nmax_num", "block_size = -64\nmax_num"),
        ["deployment.block_size", "must be a positive integer", "-64"],
    ),
    "negative group block size": (
        replace_once(VALID, RECURRENT_GROUP, '[[groups]]\nkind = "recurrent"\nblock_size = -1\n'),
        ["groups[1].block_size", "must be a positive integer", "-1"],
    ),
    "negative output tokens": (
        replace_once(VALID, "output_tokens = 0", "output_tokens = -5"),
        ["request.output_tokens", "must be a non-negative integer", "-5"],
    ),
    "zero dcp size": (
        replace_once(VALID, "dcp_size = 2", "dcp_size = 0"),
        ["deployment.dcp_size", "must be a positive integer", "got 0"],
    ),
    "zero prompt": (
        replace_once(VALID, "prompt_tokens = 1000", "prompt_tokens = 0"),
        ["request.prompt_tokens", "must be a positive integer", "got 0"],
    ),
    "zero budget": (
        replace_once(VALID, "max_num_scheduled_tokens = 256", "max_num_scheduled_tokens = 0"),
        ["deployment.max_num_scheduled_tokens", "must be a positive integer", "got 0"],
    ),
    # unknown group kind
    "unknown group kind": (
        replace_once(VALID, 'kind = "recurrent"', 'kind = "mamba2"'),
        ["groups[1].kind", "unknown group kind 'mamba2'", "recurrent"],
    ),
    # non-integers
    "string size": (
        replace_once(VALID, "block_size = 64\nmax_num", 'block_size = "64"\nmax_num'),
        ["deployment.block_size", "expected an integer", "'64'"],
    ),
    "float size": (
        replace_once(VALID, "prompt_tokens = 1000", "prompt_tokens = 1000.0"),
        ["request.prompt_tokens", "expected an integer", "1000.0"],
    ),
    "bool size": (
        replace_once(VALID, "dcp_size = 2", "dcp_size = true"),
        ["deployment.dcp_size", "expected an integer", "True"],
    ),
    "integer flag": (
        replace_once(VALID, "dcp_sharded = true", "dcp_sharded = 1"),
        ["groups[0].dcp_sharded", "expected true or false", "1"],
    ),
    # unknown fields
    "unknown deployment field": (
        replace_once(VALID, "dcp_size = 2\n", "dcp_size = 2\ntp_size = 4\n"),
        ["deployment.tp_size", "unknown field", "dcp_size"],
    ),
    "unknown group field": (
        replace_once(VALID, RECURRENT_GROUP, RECURRENT_GROUP + "span = 64\n"),
        ["groups[1].span", "unknown field", "block_size"],
    ),
    "unknown top-level field": (
        replace_once(VALID, 'name = "tiny"\n', 'name = "tiny"\nmodel = "x"\n'),
        ["model", "unknown top-level field", "deployment"],
    ),
    # not TOML
    "not toml": (
        VALID.replace("[deployment]", "[deployment"),
        ["not valid TOML", "line 4"],
    ),
    "not toml at all": ("this is a geometry, honest\n", ["not valid TOML"]),
    # missing sections
    "missing request section": (
        VALID[: VALID.index("[request]")],
        ["request: missing required section"],
    ),
    "missing deployment section": (
        replace_once(VALID, "[deployment]\ndcp_size = 2\nblock_size = 64\nmax_num_scheduled_tokens = 256\n", ""),
        ["deployment: missing required section"],
    ),
    "missing groups": (
        replace_once(replace_once(VALID, TARGET_GROUP, ""), RECURRENT_GROUP, ""),
        ["groups: missing required section"],
    ),
    "empty file": ("", ["deployment: missing required section"]),
    # no recurrent group (and, symmetrically, no target group)
    "no recurrent group": (
        replace_once(VALID, RECURRENT_GROUP, ""),
        ["groups", "needs at least one recurrent group"],
    ),
    "no target group": (
        replace_once(VALID, TARGET_GROUP, ""),
        ["groups", "needs at least one target-attention group"],
    ),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_geometry_is_one_line_exit_2(tmp_path, case):
    text, fragments = MALFORMED[case]
    path = write(tmp_path, text, name="bad.toml")
    line = assert_one_line_error(gridproof("simulate", str(path)), *fragments)
    assert str(path) in line  # names the file it refused


def test_missing_geometry_file_is_one_line_exit_2(tmp_path):
    missing = tmp_path / "nowhere.toml"
    line = assert_one_line_error(gridproof("simulate", str(missing)), "no such file or built-in geometry")
    assert "kimi-k3-tp16-dcp16" in line  # lists what does exist


# --- bad command lines --------------------------------------------------------


def test_unknown_variant_is_one_line_exit_2():
    assert_one_line_error(
        gridproof("simulate", "kimi-k3-tp16-dcp16", "--variant", "pr999"),
        "unknown variant 'pr999'",
        "baseline",
        "pr457-guarded",
    )


@pytest.mark.parametrize(
    "budget, problem",
    [
        ("abc", "expected an integer or a comma-separated list"),
        ("4096.5", "expected an integer or a comma-separated list"),
        ("4096,x", "expected an integer or a comma-separated list"),
        ("4096,", "expected an integer or a comma-separated list"),
        ("0", "every budget must be a positive integer"),
        ("-4096", "every budget must be a positive integer"),
        ("4096,0", "every budget must be a positive integer"),
    ],
)
def test_bad_budget_is_one_line_exit_2(budget, problem):
    line = assert_one_line_error(gridproof("simulate", "kimi-k3-tp16-dcp16", f"--budget={budget}"), "--budget", problem)
    assert repr(budget) in line


def test_empty_budget_is_one_line_exit_2():
    assert_one_line_error(gridproof("simulate", "kimi-k3-tp16-dcp16", "--budget="), "--budget")


@pytest.mark.parametrize("value", ["0", "-1"])
def test_non_positive_prompt_tokens_is_one_line_exit_2(value):
    assert_one_line_error(
        gridproof("simulate", "kimi-k3-tp16-dcp16", f"--prompt-tokens={value}"),
        "--prompt-tokens",
        "must be a positive integer",
        f"got {value}",
    )


@pytest.mark.parametrize("value", ["abc", "1.5"])
def test_non_integer_prompt_tokens_is_one_line_exit_2(value):
    assert_one_line_error(gridproof("simulate", "kimi-k3-tp16-dcp16", f"--prompt-tokens={value}"), "--prompt-tokens")
