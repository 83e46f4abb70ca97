"""The subjects that tell vLLM 0.33.0 from 0.34.0 (docs/releases.md): each PROVED against its release's
model, REFUTED by `source --diff` on an input that replays through both releases, and REFUTED when the
model's counterpart is broken."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from models import arith, deploy, offload, prefill
from models.variants import BASELINE, VLLM_0_34
from proofs.cli import main
from proofs.engine.solver import PROVED, REFUTED
from proofs.source import kernel, resume
from proofs.source.decide import equivalence
from proofs.source.equivalence import every_subject, subjects
from proofs.source.functions import ShippedFunctions
from proofs.source.loader import Loader, VllmSource
from proofs.source.releases import WHEEL_CACHE, cached_wheel

INSTALLED = VllmSource.installed()


@pytest.fixture(scope="module")
def release_0_33():
    assert INSTALLED is not None and INSTALLED.version() == "0.33.0", "vLLM 0.33.0 is not installed"
    return ShippedFunctions(Loader(INSTALLED), BASELINE)


@pytest.fixture(scope="module")
def release_0_34():
    # The session's cache directory is its own (conftest.py): the user's wheel cache too.
    user_cache = sorted((Path.home() / ".cache" / "gridproof" / "vllm-wheels").glob("vllm-0.34.0-*.whl"))
    wheel = cached_wheel("0.34.0") or (user_cache[0] if user_cache else None)
    if wheel is None:
        pytest.skip(f"no vLLM 0.34.0 wheel cached: pip download vllm==0.34.0 --no-deps -d {WHEEL_CACHE}")
    return ShippedFunctions(Loader(VllmSource("vLLM 0.34.0", wheel=wheel)), VLLM_0_34)


def test_the_start_block_is_what_each_release_asks_of_its_backend(release_0_33, release_0_34):
    assert [release_0_33.start_block(k) for k in (1, 16, 32, 64, 128)] == [16, 16, 32, 64, 128]
    assert [release_0_34.start_block(k) for k in (1, 16, 32, 64, 128)] == [64, 64, 64, 64, 128]


SLOW = pytest.mark.slow  # offload_hit_window: 11 to 20 s a release, 17 to 30 s its diff
SUBJECTS = ("start_block", pytest.param("offload_hit_window", marks=SLOW), "hash_lookahead")


@pytest.mark.parametrize("name", SUBJECTS)
@pytest.mark.parametrize("release, variant", [("release_0_33", BASELINE), ("release_0_34", VLLM_0_34)])
def test_each_subject_is_proved_equal_to_the_release_model(request, name, release, variant):
    verdict = equivalence(subjects(variant)[name], request.getfixturevalue(release))
    assert verdict.verdict == PROVED, verdict.reason


@pytest.mark.parametrize("name", SUBJECTS)
def test_the_diff_finds_each_difference_on_an_input_both_releases_replay(release_0_33, release_0_34, name):
    subject = subjects(BASELINE)[name]
    verdict = equivalence(subject, release_0_33, release_0_34)
    assert verdict.verdict == REFUTED, verdict.reason
    x = verdict.counterexample
    assert verdict.values == (subject.shipped(release_0_33, x), subject.shipped(release_0_34, x))
    assert verdict.values[0] != verdict.values[1]
    if name == "offload_hit_window":  # only where a cap ends the window beside a recurrent group
        assert x["recurrent"] and (x["bounded"] or x["limited"])
    if name == "hash_lookahead":  # only beside the native offload
        assert x["native"] and verdict.values[0] == 0


def _start_block_without_the_divisibility(variant, kernel_min):
    """A plausible slip: the default wherever it is at least the kernel block, divisible or not."""
    default = variant.default_block_size
    return default if default >= kernel_min else kernel_min


def test_a_broken_start_block_model_is_refuted(release_0_33, monkeypatch):
    monkeypatch.setattr(deploy, "start_block", _start_block_without_the_divisibility)
    verdict = equivalence(subjects(BASELINE)["start_block"], release_0_33)
    assert verdict.verdict == REFUTED
    k = verdict.counterexample["kernel_min"]
    assert verdict.values == (release_0_33.start_block(k), _start_block_without_the_divisibility(BASELINE, k))


def test_the_0_34_model_with_the_old_default_is_refuted(release_0_34):
    stale = replace(VLLM_0_34, default_block_size=16)
    verdict = equivalence(subjects(stale)["start_block"], release_0_34)
    assert verdict.verdict == REFUTED
    k = verdict.counterexample["kernel_min"]
    assert verdict.values == (release_0_34.start_block(k), deploy.start_block(stale, k)) and 64 % k == 0


WINDOW = ("tokens", "computed", "recurrent", "align", "bounded", "budget", "limited", "max_load")


def _window(functions, x):
    return functions.offload_hit_window(*(x[a] for a in WINDOW))


def test_the_offload_window_is_what_each_release_loads(release_0_33, release_0_34):
    # 100 tokens, none computed, beside a Mamba group of 64-token chunks, max_load_tokens 64: 0.33.0 takes
    # the last token off the capped window (63, rounded to 0), 0.34.0 off the request (64 stays).
    capped = (100, 0, True, 64, False, 0, True, 64)
    assert (release_0_33.offload_hit_window(*capped), release_0_34.offload_hit_window(*capped)) == (0, 64)
    # no cap: both the request less its last token, rounded to the chunk
    plain = (100, 0, True, 64, False, 0, False, 0)
    assert release_0_33.offload_hit_window(*plain) == release_0_34.offload_hit_window(*plain) == 64


@pytest.mark.slow
def test_the_0_34_model_with_the_0_33_window_order_is_refuted(release_0_34):
    stale = replace(VLLM_0_34, offload_last_token_before_caps=False)
    verdict = equivalence(subjects(stale)["offload_hit_window"], release_0_34)
    assert verdict.verdict == REFUTED
    assert verdict.values[0] == _window(release_0_34, verdict.counterexample) != verdict.values[1]


def _window_never_rounded(variant, tokens, computed, recurrent, align, budget=None, max_load=None):
    """A plausible slip: the window capped and less its last token, but not rounded to the recurrent chunk."""
    window = tokens - 1 if recurrent else tokens
    for cap in (budget, max_load):
        if cap is not None:
            window = min(window, computed + cap)
    return window


@pytest.mark.slow
def test_a_window_model_that_forgets_the_recurrent_chunk_is_refuted(release_0_33, monkeypatch):
    monkeypatch.setattr(offload, "hit_window", _window_never_rounded)
    verdict = equivalence(subjects(BASELINE)["offload_hit_window"], release_0_33)
    assert verdict.verdict == REFUTED
    assert verdict.values[0] == _window(release_0_33, verdict.counterexample) != verdict.values[1]


def test_the_hash_lookahead_beside_native_offload_is_what_each_release_resolves(release_0_33, release_0_34):
    # an EAGLE drafter reading 1 token ahead, prefix caching on, beside the native offload connector
    beside_offload = (True, True, True, True, True, True, 1)
    assert (release_0_33.hash_lookahead(*beside_offload), release_0_34.hash_lookahead(*beside_offload)) == (0, 1)
    beside_another = (True, True, True, True, True, False, 1)
    assert release_0_33.hash_lookahead(*beside_another) == release_0_34.hash_lookahead(*beside_another) == 0


def test_the_0_34_model_without_the_offload_opt_in_is_refuted(release_0_34):
    stale = replace(
        VLLM_0_34,
        lookahead_hash_connectors=VLLM_0_34.lookahead_hash_connectors - {"OffloadingConnector"},
        connectors_without_lookahead_hashes=VLLM_0_34.connectors_without_lookahead_hashes | {"OffloadingConnector"},
    )
    verdict = equivalence(subjects(stale)["hash_lookahead"], release_0_34)
    assert verdict.verdict == REFUTED and verdict.counterexample["native"]


def test_a_model_that_asks_prefix_caching_beside_a_connector_is_refuted(release_0_34, monkeypatch):
    real = deploy.scheduler_flags

    def asks_prefix_caching(spec, enable_prefix_caching, connector, *rest):
        """A plausible slip: beside a connector the lookahead still needs prefix caching on."""
        flags = real(spec, enable_prefix_caching, connector, *rest)
        return replace(flags, hash_lookahead_tokens=0) if connector and not enable_prefix_caching else flags

    monkeypatch.setattr(deploy, "scheduler_flags", asks_prefix_caching)
    verdict = equivalence(subjects(VLLM_0_34)["hash_lookahead"], release_0_34)
    assert verdict.verdict == REFUTED
    assert not verdict.counterexample["prefix_caching"] and verdict.counterexample["native"]


def test_the_diff_finds_the_replayssm_alignment_on_an_input_both_releases_replay(release_0_33, release_0_34):
    subject = every_subject(BASELINE)["mamba_state_bytes"]
    verdict = equivalence(subject, release_0_33, release_0_34)
    assert verdict.verdict == REFUTED, verdict.reason
    x = verdict.counterexample
    assert verdict.values == (subject.shipped(release_0_33, x), subject.shipped(release_0_34, x))
    assert x["replayssm"] and verdict.values[0] == x["state"] + x["state2"] < verdict.values[1]
    assert verdict.values[1] % 16 == 0
    # without ReplaySSM the two releases size the states alike
    assert release_0_33.mamba_state_bytes(5, 7, False) == release_0_34.mamba_state_bytes(5, 7, False) == 12


def test_the_replayssm_alignment_has_no_model_to_be_proved_against(capsys):
    assert "mamba_state_bytes" not in subjects(BASELINE) and "mamba_state_bytes" not in subjects(VLLM_0_34)
    assert main(["source", "--function", "mamba_state_bytes"]) == 2
    assert "compare releases with --diff" in capsys.readouterr().err


# vLLM 0.34.0's state columns: the aligned state indices its Triton kernel stores, run from source
STATE_INPUTS = {
    **dict(computed=5, scheduled=3, computed2=0, scheduled2=1, cadence=4, spec_blocks=1),
    **dict(stale=0, stale2=0, accepted=1, accepted2=1, resumed=False, resumed2=False, fused=False),
}


def test_the_0_34_kernel_stores_each_groups_table_at_the_column_after_the_chunk(release_0_34):
    assert release_0_34.state_columns_reading() == resume.ALIGNED
    # per group (0, 1), request (5 + 3 tokens, 0 + 1) and slot (0, 1): (table, column); cdiv(8, 4) - 1 = 1
    columns = (0, 1, 0, 2, 0, 0, 0, 1, 1, 1, 1, 2, 1, 0, 1, 1)
    assert release_0_34.state_columns(STATE_INPUTS) == resume.expected_aligned_columns(STATE_INPUTS) == columns


def test_the_0_34_kernel_is_proved_equal_to_the_model(release_0_34):
    verdict = equivalence(subjects(VLLM_0_34)["state_columns"], release_0_34)
    assert verdict.verdict == PROVED, verdict.reason


def _state_column_of_the_end(end, cadence):
    """A plausible slip: the block the end falls in, end // R, not that of the chunk's last token."""
    return arith.floordiv(end, cadence)


def test_a_broken_state_column_model_is_refuted_by_the_0_34_kernel(release_0_34, monkeypatch):
    monkeypatch.setattr(prefill, "state_column", _state_column_of_the_end)
    subject = subjects(VLLM_0_34)["state_columns"]
    verdict = equivalence(subject, release_0_34)
    assert verdict.verdict == REFUTED, verdict.reason
    x = verdict.counterexample
    assert verdict.values == (release_0_34.state_columns(x), resume.expected_aligned_columns(x))
    assert verdict.values[0] != verdict.values[1]


def test_the_diff_compares_the_running_column_both_releases_observe(release_0_33, release_0_34):
    subject = subjects(BASELINE)["state_columns"]
    verdict = equivalence(subject, release_0_33, release_0_34)
    assert verdict.verdict == PROVED, verdict.reason
    assert "each request's column after the chunk" in subject.compared_scope(release_0_33, release_0_34)
    assert subject.compared_scope(release_0_34, release_0_34) == ""


def test_a_masked_off_kernel_store_writes_nothing():
    memory = [None] * 4
    lanes = kernel.Language.arange(0, 4)
    kernel.Language.store(kernel.Pointer(memory) + lanes, lanes * 10, mask=lanes < 2)
    assert [kernel.value_of(v) if v is not None else None for v in memory] == [0, 10, None, None]
    # a masked-off load without `other` is undefined: stored, it is no table entry
    loaded = kernel.Language.load(kernel.Pointer(kernel.Table("t")) + lanes, mask=lanes < 1)
    assert isinstance(loaded.items[0], kernel.Read) and loaded.items[1] is kernel.UNDEFINED
