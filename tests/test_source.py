"""The source executor: vLLM's own functions read symbolically
(proofs/source/). The installed vLLM 0.33.0 is read as source text; other
releases only from a cached wheel, skipped with the reason when it is absent."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest

from models.scheduler import SplitCall, SplitParams
from proofs.cli import main
from proofs.engine.solver import PROVED, REFUTED, UNKNOWN
from proofs.source import report
from proofs.source.decide import equivalence
from proofs.source.equivalence import SUBJECTS
from proofs.source.functions import ShippedFunctions
from proofs.source.loader import Loader, VllmSource
from proofs.source.releases import WHEEL_CACHE, cached_wheel

INSTALLED = VllmSource.installed()
KV = "v1/kv_cache_interface.py"


@pytest.fixture(scope="module")
def shipped():
    assert INSTALLED is not None, "vLLM 0.33.0 is not installed: run tests/install-conformance.sh"
    return ShippedFunctions(Loader(INSTALLED))


def test_the_concrete_reading_is_the_real_function(shipped):
    """vllm-on-cpu.md's figures, through functions loaded from source text."""
    assert shipped.checkpoint_position(100_000, 768, False, 0) == 99_840
    assert shipped.checkpoint_position(100_000, 768, True, 0) == 99_072
    p = SplitParams(768, 768, 768, False, 0, 4096, 0, False, False, 0, False)
    assert shipped.split(p, SplitCall(computed=0, requested=4096, prompt=100_000, tokens=100_000)) == 3840


@pytest.mark.parametrize("name", ["checkpoint_position", "checkpoint_valid"])
def test_the_helpers_are_proved_equivalent_to_the_model(shipped, name):
    verdict = equivalence(SUBJECTS[name], shipped)
    assert verdict.verdict == PROVED, verdict.reason
    assert verdict.paths >= 2 and not verdict.exploration.raised


def _tree(tmp_path: Path, edit=None, extra: str = "", module: str = KV) -> VllmSource:
    """A vLLM tree holding the installed `module` (kv_cache_interface.py
    unless named; edited) and math_utils.py."""
    root = tmp_path / "vllm"
    for relative in (module, "utils/math_utils.py"):
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(Path(INSTALLED.filename("vllm." + relative[:-3].replace("/", "."))), target)
    (root / "platforms").mkdir()
    text = (root / module).read_text()
    if edit is not None:
        old, new = edit
        assert old in text
        text = text.replace(old, new)
    (root / module).write_text(text + textwrap.dedent(extra))
    return VllmSource.from_path(str(tmp_path))


def test_a_broken_checkpoint_position_is_refuted_with_an_input_that_replays(tmp_path):
    source = _tree(tmp_path, ("else num_tokens - max(1, num_hash_lookahead_tokens)", "else num_tokens - 1"))
    functions = ShippedFunctions(Loader(source))
    verdict = equivalence(SUBJECTS["checkpoint_position"], functions)
    assert verdict.verdict == REFUTED
    shipped_value, model_value = verdict.values
    assert shipped_value != model_value
    x = verdict.counterexample
    assert functions.checkpoint_position(x["tokens"], x["block"], x["drop"], x["lookahead"]) == shipped_value


def test_a_loop_over_a_symbolic_bound_is_refused_by_line(tmp_path):
    source = _tree(
        tmp_path,
        (
            "    checkpoint_position = proof_limit // hash_block_size * hash_block_size\n",
            "    checkpoint_position = 0\n    for _ in range(proof_limit // hash_block_size):\n"
            "        checkpoint_position += hash_block_size\n",
        ),
    )
    verdict = equivalence(SUBJECTS["checkpoint_position"], ShippedFunctions(Loader(source)))
    assert verdict.verdict == UNKNOWN
    assert "symbolic int made concrete" in verdict.reason and "kv_cache_interface.py:" in verdict.reason


def test_an_unknown_name_is_refused_by_name(tmp_path):
    source = _tree(
        tmp_path, ("return max(checkpoint_position, 0)", "return round_to_page(max(checkpoint_position, 0))")
    )
    verdict = equivalence(SUBJECTS["checkpoint_position"], ShippedFunctions(Loader(source)))
    assert verdict.verdict == UNKNOWN and "round_to_page" in verdict.reason


def test_a_reachable_assert_is_refuted_and_replays(tmp_path):
    source = _tree(tmp_path, ("    assert checkpoint_alignment > 0\n", "    assert checkpoint_alignment > 1\n"))
    result = report.check(source, names=("checkpoint_valid",), progress=False)
    entry = result["functions"]["checkpoint_valid"]
    asserts = [s for s in entry["crash_sites"] if s["kind"] == "assert"]
    assert [s["verdict"] for s in asserts] == [REFUTED]
    assert asserts[0]["counterexample"]["alignment"] == 1  # the one value the edit rejects
    assert not result["ok"]


def test_the_command_refuses_a_path_without_vllm(tmp_path, capsys):
    assert main(["source", "--vllm", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no vLLM package there" in err[0]


@pytest.mark.parametrize("version", ["*", "../../etc", "0.33", "0.33.0 "])
def test_a_release_name_is_checked_before_the_wheel_cache_or_pip_reads_it(version, capsys):
    # "*" was globbed in the wheel cache and took any release's wheel; "0.33" was downloaded as 0.33.0
    # and then not found; "../../etc" reached pip as a path.
    assert main(["source", "--vllm-version", version]) == 2
    err = capsys.readouterr().err
    assert err == f"gridproof: error: --vllm-version: expected a release such as 0.33.0, got {version!r}\n"


def test_the_command_reads_the_helpers_of_the_installed_release(capsys):
    assert main(["source", "--function", "checkpoint_position", "--json"]) == 0
    out = capsys.readouterr().out
    assert '"verdict": "PROVED"' in out and '"version": "0.33.0"' in out


@pytest.mark.parametrize("version", ["0.32.0", "0.31.0"])
def test_an_earlier_release_reads_from_its_wheel(version):
    wheel = cached_wheel(version)
    if wheel is None:
        pytest.skip(f"no vLLM {version} wheel cached: pip download vllm=={version} --no-deps -d {WHEEL_CACHE}")
    source = VllmSource(f"vLLM {version}", wheel=wheel)
    assert source.version() == version
    verdict = equivalence(SUBJECTS["checkpoint_position"], ShippedFunctions(Loader(source)))
    assert verdict.verdict in (PROVED, REFUTED)


def test_a_split_theorem_notices_a_broken_shipped_split(tmp_path):
    """split-bounds on the shipped split: a split that schedules a token when
    none was requested is refuted, and the counterexample replays through it."""
    from proofs.source import theorems

    source = _tree(tmp_path)
    scheduler = tmp_path / "vllm" / "v1" / "core" / "sched" / "scheduler.py"
    scheduler.parent.mkdir(parents=True)
    text = Path(INSTALLED.filename("vllm.v1.core.sched.scheduler")).read_text()
    assert text.count("return max(end - start, 0)") == 1
    scheduler.write_text(text.replace("return max(end - start, 0)", "return max(end - start, 1)"))
    verdict = theorems.prove("split-bounds", ShippedFunctions(Loader(source)))
    assert verdict.verdict == REFUTED
    assert verdict.counterexample["requested"] == 0


RESOLUTIONS = [
    # (block_in, kernel_min, backend_alignment, checkpoint_alignment, mamba_in, padded_in, Pa, Pm, mla, align)
    (16, 16, 16, 0, 0, 0, 4096, 700_000, False, True),
    (16, 16, 16, 16, 0, 0, 1152, 2_000_000, True, True),
    (16, 16, 16, 24, 0, 0, 4096, 50_000, False, True),  # checkpoint alignment not a multiple of the kernel
    (32, 16, 64, 0, 12288, 0, 4096, 700_000, False, False),
    (16, 16, 16, 0, 0, 0, 4096, 0, False, True),  # no recurrent state: nothing changes
    (64, 16, 16, 0, 0, 5, 1024, 65536, False, True),  # pages already equal: padding kept
]


@pytest.mark.parametrize("inputs", RESOLUTIONS)
def test_the_block_size_resolution_runs_concretely_as_the_model_reads_it(shipped, inputs):
    """`Platform._align_hybrid_block_size` loaded from source and run on the
    stand-ins (proofs/source/platform.py) gives the model's resolution."""
    names = ("block_in", "kernel_min", "backend_alignment", "checkpoint_alignment", "mamba_in", "padded_in")
    names += ("attn_page_per_token", "mamba_page", "use_mla", "align_mode")
    values = dict(zip(names, inputs, strict=True), explicit=False)
    subject = SUBJECTS["block_size_resolution"]
    assert subject.shipped(shipped, values) == subject.model(values)


def test_grid_landing_notices_a_split_that_skips_a_block_boundary(tmp_path):
    """The next-block-boundary stop one block too far: a mid-block start's
    chunk crosses a boundary, and grid landing on the shipped split is
    refuted with an input that replays through it."""
    from proofs.source import theorems

    source = _tree(tmp_path)
    scheduler = tmp_path / "vllm" / "v1" / "core" / "sched" / "scheduler.py"
    scheduler.parent.mkdir(parents=True)
    text = Path(INSTALLED.filename("vllm.v1.core.sched.scheduler")).read_text()
    old = "next_block_boundary = (start // block_size + 1) * block_size"
    assert text.count(old) == 1
    scheduler.write_text(text.replace(old, old.replace("+ 1", "+ 2")))
    verdict = theorems.prove("split-grid-landing", ShippedFunctions(Loader(source)))
    assert verdict.verdict == REFUTED
    assert verdict.counterexample is not None


MAMBA_UTILS = "v1/worker/mamba_utils.py"
MAMBA_HYBRID = "v1/worker/gpu/model_states/mamba_hybrid.py"


def _columns(shipped, first, second=(0, 4, 1, 0, False), cadence=4, spec_blocks=0, fused=False):
    """preprocess_mamba on a batch of two requests, each (computed,
    scheduled, accepted, stale, resumed): per request (recorded column,
    accepted count after, copies, the first copy's source, destination, bias)."""
    x = {"cadence": cadence, "spec_blocks": spec_blocks, "fused": fused}
    for suffix, request in (("", first), ("2", second)):
        for name, value in zip(("computed", "scheduled", "accepted", "stale", "resumed"), request, strict=True):
            x[name + suffix] = value
    observed = shipped.state_columns(x)
    width = len(observed) // 2
    return [observed[i * width : i * width + 6] for i in range(2)]


def test_the_state_columns_run_concretely_as_the_worker_computes_them(shipped):
    """(recorded column, accepted count after, copies, source, destination,
    bias) of preprocess_mamba, on the scalar and the fused path; add_request's
    seeded column."""
    # A request resumed at 5 with 8 more tokens, blocks of 4, 3 tokens accepted: read column 1,
    # kept in 3, with a bias of 2; its accepted count reset to 1. The scalar path copies each
    # of two layers' two state tensors, the fused one pre-copies once.
    for fused, copies in ((False, 4), (True, 1)):
        assert _columns(shipped, (5, 8, 3, 9, True), fused=fused)[0] == (3, 1, copies, 1, 3, 2)
    fresh, placed = _columns(shipped, (0, 4, 2, 0, False), (5, 2, 2, 0, False))
    assert fresh == (0, 2, 0, -1, -1, 0)  # fresh: nothing to read, the accepted count kept
    assert placed == (1, 2, 0, -1, -1, 0)  # already in place
    assert _columns(shipped, (5, 2, 2, 0, False), fused=True)[0] == (1, 2, 0, -1, 1, 0)  # the fused destination
    assert shipped.seeded_state_column(5, 4, 2) == (1, 1) and shipped.seeded_state_column(0, 4, 2) == (-1, 1)
    # The V2 step kernel, run as Python: from column 1 to cdiv(5 + 8, 4) - 1 = 3 with a bias of 0,
    # the accepted count reset; a fresh one from -1, its count kept.
    assert shipped.advanced_state_column(5, 8, 4, 1, 1, 7) == (1, 3, 0, 1)
    assert shipped.advanced_state_column(0, 3, 4, -1, 2, 0) == (-1, 0, 1, 2)


@pytest.mark.parametrize("name", ["state_columns", "seeded_state_column", "advanced_state_column"])
def test_the_state_columns_are_proved_as_the_model_states_them(shipped, name):
    verdict = equivalence(SUBJECTS[name], shipped)
    assert verdict.verdict == PROVED, verdict.reason
    assert not verdict.exploration.raised


@pytest.mark.parametrize(
    ("relative", "name", "edit"),
    [
        (
            MAMBA_UTILS,
            "state_columns",
            ("(req_state.num_computed_tokens - 1) // block_size", "req_state.num_computed_tokens // block_size"),
        ),
        (
            MAMBA_HYBRID,
            "seeded_state_column",
            (
                "(new_req_data.num_computed_tokens - 1) // mamba_block_size",
                "new_req_data.num_computed_tokens // mamba_block_size",
            ),
        ),
    ],
)
def test_a_read_column_off_by_one_is_refuted_with_an_input_that_replays(tmp_path, relative, name, edit):
    functions = ShippedFunctions(Loader(_tree(tmp_path, edit, module=relative)))
    verdict = equivalence(SUBJECTS[name], functions)
    assert verdict.verdict == REFUTED
    shipped_value, model_value = verdict.values
    assert shipped_value != model_value
    assert SUBJECTS[name].shipped(functions, verdict.counterexample) == shipped_value  # the edited function, run


KERNEL_COLUMN = "new_state_idx = (computed_after + MAMBA_BLOCK_SIZE - 1) // MAMBA_BLOCK_SIZE - 1"


def test_a_kernel_column_that_ignores_the_batch_offset_is_refuted(tmp_path):
    edit = ("computed_after = num_computed + query_end - query_start", "computed_after = num_computed + query_end")
    functions = ShippedFunctions(Loader(_tree(tmp_path, edit, module=MAMBA_UTILS)))
    verdict = equivalence(SUBJECTS["advanced_state_column"], functions)
    assert verdict.verdict == REFUTED and verdict.counterexample["batch_offset"] > 0
    assert SUBJECTS["advanced_state_column"].shipped(functions, verdict.counterexample) == verdict.values[0]


def test_a_kernel_division_of_a_value_that_may_be_negative_is_refused_by_line(tmp_path):
    """Triton's `//` truncates: read as floor division only where the dividend is
    non-negative. (c - 1) // R with c = 0 may be negative: refused, not guessed."""
    edit = (KERNEL_COLUMN, "new_state_idx = (num_computed - 1) // MAMBA_BLOCK_SIZE")
    verdict = equivalence(
        SUBJECTS["advanced_state_column"], ShippedFunctions(Loader(_tree(tmp_path, edit, module=MAMBA_UTILS)))
    )
    assert verdict.verdict == UNKNOWN
    assert "truncating division" in verdict.reason and "mamba_utils.py:" in verdict.reason


def test_a_kernel_column_written_as_floor_of_the_last_token_is_proved_equivalent(tmp_path):
    """(c + n - 1) // R is cdiv(c + n, R) - 1 for c + n >= 1: an equivalent rewrite stays PROVED."""
    edit = (KERNEL_COLUMN, "new_state_idx = (computed_after - 1) // MAMBA_BLOCK_SIZE")
    functions = ShippedFunctions(Loader(_tree(tmp_path, edit, module=MAMBA_UTILS)))
    assert equivalence(SUBJECTS["advanced_state_column"], functions).verdict == PROVED


def test_a_stale_column_left_for_a_resumed_request_is_refuted(tmp_path):
    """The cleanup must drop a resumed request's stale entry: kept, the stale
    column is read instead of (c - 1) // R."""
    edit = (
        "for req_id in itertools.chain(finished_req_ids, preempted_req_ids, resumed_req_ids):",
        "for req_id in itertools.chain(finished_req_ids, preempted_req_ids):",
    )
    functions = ShippedFunctions(Loader(_tree(tmp_path, edit, module=MAMBA_UTILS)))
    verdict = equivalence(SUBJECTS["state_columns"], functions)
    assert verdict.verdict == REFUTED and verdict.counterexample["resumed"] is True


def test_an_earlier_release_seeds_the_column_in_attention_blocks():
    """0.31.0 divides by cache_config.block_size: refuted where the attention
    block is below the Mamba block, on an input its own add_request replays."""
    wheel = cached_wheel("0.31.0")
    if wheel is None:
        pytest.skip(f"no vLLM 0.31.0 wheel cached: pip download vllm==0.31.0 --no-deps -d {WHEEL_CACHE}")
    functions = ShippedFunctions(Loader(VllmSource("vLLM 0.31.0", wheel=wheel)))
    verdict = equivalence(SUBJECTS["seeded_state_column"], functions)
    assert verdict.verdict == REFUTED
    x = verdict.counterexample
    assert x["block"] < x["cadence"]
    seeded, _ = functions.seeded_state_column(x["computed"], x["cadence"], x["block"])
    assert seeded == (x["computed"] - 1) // x["block"]


def _assert_block_size_refuted_on_a_replayed_input(functions: ShippedFunctions) -> None:
    """REFUTED, on an input where the shipped method run concretely and the
    model give the two values the verdict reports, and they differ."""
    subject = SUBJECTS["block_size_resolution"]
    verdict = equivalence(subject, functions)
    assert verdict.verdict == REFUTED, verdict.reason
    shipped_value, model_value = verdict.values
    assert shipped_value != model_value
    assert subject.shipped(functions, verdict.counterexample) == shipped_value
    assert subject.model(verdict.counterexample) == model_value


@pytest.mark.parametrize("version", ["0.32.0", "0.31.0"])
def test_an_earlier_block_size_resolution_differs_on_an_input_it_replays(version):
    """Each release resolves another block than 0.33.0 on some input
    (docs/source-executor.md): refuted on an input that its own method, run
    concretely, replays."""
    wheel = cached_wheel(version)
    if wheel is None:
        pytest.skip(f"no vLLM {version} wheel cached: pip download vllm=={version} --no-deps -d {WHEEL_CACHE}")
    functions = ShippedFunctions(Loader(VllmSource(f"vLLM {version}", wheel=wheel)))
    _assert_block_size_refuted_on_a_replayed_input(functions)


def test_the_command_reports_the_state_columns(capsys):
    names = ["state_columns", "seeded_state_column", "advanced_state_column"]
    assert main(["source", *(f"--function={name}" for name in names), "--json"]) == 0
    functions = json.loads(capsys.readouterr().out)["functions"]
    assert {name: e["verdict"] for name, e in functions.items()} == dict.fromkeys(names, PROVED)
    assert functions["state_columns"]["qualname"] == "vllm.v1.worker.mamba_utils.preprocess_mamba"
    assert functions["state_columns"]["returned"] == 32  # two requests, each new or resumed, copied or not


PLATFORM = "platforms/interface.py"


def _platform_tree(tmp_path: Path, old: str, new: str) -> VllmSource:
    """A vLLM tree holding the installed platforms/interface.py with `old`
    replaced by `new`, and the files `_align_hybrid_block_size` imports from."""
    root = tmp_path / "vllm"
    for relative in (PLATFORM, "model_executor/layers/mamba/abstract.py", "utils/math_utils.py"):
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(Path(INSTALLED.filename("vllm." + relative[:-3].replace("/", "."))), target)
    (root / "v1").mkdir()
    text = (root / PLATFORM).read_text()
    assert text.count(old) == 1
    (root / PLATFORM).write_text(text.replace(old, new))
    return VllmSource.from_path(str(tmp_path))


def test_the_block_size_resolution_is_proved_equivalent_and_its_assert_unreachable():
    result = report.check(INSTALLED, ("block_size_resolution",), progress=False, theorems=False)
    entry = result["functions"]["block_size_resolution"]
    assert entry["verdict"] == PROVED, entry.get("reason")
    assert entry["returned"] >= 40 and entry["raised"] == 0
    asserts = [s for s in entry["crash_sites"] if s["kind"] == "assert"]
    assert asserts and all(s["verdict"] == PROVED and s["branch_points"] > 0 for s in asserts)


BLOCK_FAULTS = {
    "floor instead of ceiling": (
        "cdiv(\n            attn_block_size, backend_block_alignment\n        )",
        "(attn_block_size // backend_block_alignment)",
    ),
    "checkpoint alignment dropped from the lcm": (
        "get_mamba_prefill_checkpoint_alignment(vllm_config) or 1,",
        "1,",
    ),
}


@pytest.mark.parametrize("fault", sorted(BLOCK_FAULTS))
def test_a_broken_block_size_resolution_is_refuted_with_an_input_that_replays(tmp_path, fault):
    functions = ShippedFunctions(Loader(_platform_tree(tmp_path, *BLOCK_FAULTS[fault])))
    _assert_block_size_refuted_on_a_replayed_input(functions)
