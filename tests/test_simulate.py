"""`gridproof simulate` on the Kimi-K3 TP16/DCP16 geometry: the figures of
PR457's public description ("The problem it solves").

Kimi-K3 here: 768-token physical pages, target attention DCP16-sharded
(span 12,288), an EAGLE draft group at DCP1 (span 768, block drop on), a
4,096-token budget, an explicit 12,288-token recurrent cadence, a 100,000-token
prompt.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from models.geometry import load_geometry
from models.plan import plan
from models.variants import get_variant
from proofs.deployment.simulate import simulate

GEOMETRY = "kimi-k3-tp16-dcp16"
PAGE = 768
TARGET_SPAN = 12_288  # 768 x DCP16
BUDGET = 4_096
BASELINE_STEP = 3_840  # rd(4,096, 768): a 0.33.0 chunk from a page-aligned start
FIRST_COMMON = 61_440  # lcm(3,840, 12,288)
PROMPT = 100_000


def gridproof_json(*args: str) -> dict:
    exe = shutil.which("gridproof")
    command = [exe] if exe else [sys.executable, "-m", "proofs.cli"]
    result = subprocess.run(
        [*command, "simulate", GEOMETRY, "--json", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def baseline_cli() -> dict:
    return gridproof_json()  # baseline is the default variant


@pytest.fixture(scope="module")
def pr457_cli() -> dict:
    return gridproof_json("--variant", "pr457")


def run(variant: str, prompt_tokens: int) -> dict:
    return simulate(get_variant(variant), load_geometry(GEOMETRY), BUDGET, prompt_tokens=prompt_tokens)


def round_down(n: int, block: int) -> int:
    return n // block * block


def eagle_boundary(n: int) -> int:
    """CP(N, 768, drop=True): the last position an identical resend restores
    through the EAGLE draft group, which drops one 768-token block."""
    return max(0, round_down(n, PAGE) - PAGE)


# --- JSON shape ---------------------------------------------------------------


@pytest.mark.parametrize("fixture", ["baseline_cli", "pr457_cli"])
def test_json_shape(fixture, request):
    data = request.getfixturevalue(fixture)
    assert {"variant", "chunk_ends", "published", "private", "reuse"} <= set(data)
    assert data["variant"] == fixture.removesuffix("_cli")
    assert data["geometry"] == GEOMETRY
    for key in ("chunk_ends", "published", "private"):
        assert isinstance(data[key], list) and data[key], key
        assert all(type(v) is int for v in data[key]), key
    assert type(data["reuse"]) is int
    ends = data["chunk_ends"]
    assert ends == sorted(set(ends)), "chunk ends strictly increase"
    assert ends[-1] == PROMPT
    # Every chunk end leaves its state either published or private, never both.
    assert sorted(data["published"] + data["private"]) == ends
    assert not set(data["published"]) & set(data["private"])
    # The steps agree with the summary lists.
    assert [s["end"] for s in data["steps"] if s["end"] > s["start"]] == ends
    assert [s["end"] for s in data["steps"] if s["state"] == "published"] == data["published"]


def test_cli_and_function_agree(baseline_cli, pr457_cli):
    for data in (baseline_cli, pr457_cli):
        direct = run(data["variant"], PROMPT)
        assert {k: direct[k] for k in data} == data


# --- baseline: vLLM 0.33.0 ----------------------------------------------------


def test_baseline_publishes_only_on_the_3840_grid(baseline_cli):
    data = baseline_cli
    assert data["cadence"] == PAGE and data["split_block"] == PAGE
    assert data["target_spans"] == [TARGET_SPAN]
    assert data["published"] == list(range(BASELINE_STEP, 96_001, BASELINE_STEP))
    assert all(p % BASELINE_STEP == 0 for p in data["published"])
    # The only one of them on a target-attention boundary below 100,000 tokens:
    on_target = [p for p in data["published"] if p % TARGET_SPAN == 0]
    assert on_target == [FIRST_COMMON]
    assert data["private"] == [PROMPT]


# An identical resend of a Kimi-K3 prompt, as the real vLLM 0.33.0 scheduler and native offload
# connector restore it (retention 0, vLLM's default): prompt -> (GPU prefix cache, offload alone).
# tests/conformance/test_end_to_end.py measures every row again on the real engine.
KIMI_K3_RESENDS = {
    1: (0, 0),
    767: (0, 0),
    768: (0, 0),
    4_096: (3_072, 0),
    12_288: (11_520, 0),
    12_289: (11_520, 11_520),
    24_576: (23_808, 23_808),
    30_000: (29_184, 0),
    36_864: (36_096, 36_096),
    49_152: (48_384, 48_384),
    50_000: (49_152, 49_152),
    61_439: (59_904, 0),
    61_440: (60_672, 60_672),
    62_207: (60_672, 60_672),
    62_208: (61_440, 61_440),
    100_000: (99_072, 0),
}


@pytest.mark.parametrize("prompt", sorted(KIMI_K3_RESENDS))
def test_baseline_restores_what_vllm_restores(prompt):
    data = run("baseline", prompt)
    assert (data["reuse"], data["reuse_offload"]) == KIMI_K3_RESENDS[prompt]


@pytest.mark.parametrize("prompt", sorted(KIMI_K3_RESENDS))
def test_baseline_gpu_cache_restores_the_exported_checkpoint(prompt):
    """The chunk that reaches the prompt's end exports FlashKDA's internal checkpoint at the
    prompt's last reusable 768-token boundary, CP(P, 768, drop), and the target groups' partial
    tails reach it: the GPU prefix cache restores there, between target-attention boundaries."""
    assert run("baseline", prompt)["reuse"] == eagle_boundary(prompt)


def test_baseline_keeps_one_recurrent_state_at_retention_0(baseline_cli):
    cached = baseline_cli["cached"]
    assert cached["recurrent_states"] == [99_072]
    target, draft = cached["attention"]
    assert (target["span"], target["full_blocks_up_to"], target["partial_tail"]) == (TARGET_SPAN, 98_304, 99_840)
    assert (draft["span"], draft["full_blocks_up_to"], draft["partial_tail"]) == (PAGE, 99_840, None)
    assert baseline_cli["reuse"] == 99_072
    # A resumed request reads the state after 99,072 tokens from slot 99,072 / 768 - 1.
    assert baseline_cli["resume_state_column"] == 99_072 // PAGE - 1 == 128


# --- pr457 ----------------------------------------------------------------------


def test_pr457_advances_4096_tokens_a_step(pr457_cli):
    data = pr457_cli
    assert data["cadence"] == TARGET_SPAN and data["split_block"] == TARGET_SPAN
    lcp = round_down(eagle_boundary(PROMPT), TARGET_SPAN)
    assert lcp == 98_304
    full = [s for s in data["steps"] if s["end"] <= lcp]
    assert len(full) == lcp // BUDGET == 24
    assert all(s["requested"] == BUDGET and s["end"] - s["start"] == BUDGET for s in full)
    assert [s["end"] for s in full] == list(range(BUDGET, lcp + 1, BUDGET))


def test_pr457_keeps_intermediate_states_private(pr457_cli):
    private = pr457_cli["private"]
    assert 4_096 in private and 8_192 in private
    # Every 4,096-step end that is not a cadence multiple stays private.
    expected = [e for e in range(BUDGET, 98_305, BUDGET) if e % TARGET_SPAN]
    assert [p for p in private if p <= 98_304] == expected
    assert all(p % TARGET_SPAN for p in private)


def test_pr457_publishes_every_12288_multiple(pr457_cli):
    data = pr457_cli
    assert data["published"] == [k * TARGET_SPAN for k in range(1, 9)]
    # Every published checkpoint is shared with target attention.
    assert data["groups"][0]["kind"] == "target-attention"
    assert data["groups"][0]["published_on_boundary"] == data["published"]


def test_pr457_offloads_the_replay_boundary_at_retention_0(pr457_cli):
    """At retention 0 the GPU cache keeps the replay boundary's state (on the 12,288 grid under
    PR457) and the prompt's tail; the connector stores the one on its chunk grid."""
    data = pr457_cli
    assert data["cached"]["recurrent_states"] == [86_016, 99_072]
    assert data["reuse"] == 99_072
    assert data["reuse_offload"] == 86_016


@pytest.mark.parametrize("prompt", [12_288, 24_576, 30_000, 50_000, 61_440, 62_207, 62_208, 74_000, 74_496, 100_000])
def test_pr457_publishes_up_to_the_converted_eagle_boundary(prompt):
    data = run("pr457", prompt)
    # PR457 with EAGLE: the annotated draft group's reusable boundary, rounded down to the cadence grid.
    lcp = round_down(eagle_boundary(prompt), TARGET_SPAN)
    published = data["published"]
    assert all(p % TARGET_SPAN == 0 for p in published)
    assert [p for p in published if p <= lcp] == list(range(TARGET_SPAN, lcp + 1, TARGET_SPAN))
    # A checkpoint past lcp (the final chunk, or the stop at the next cadence
    # boundary after the partial tail) lies past the EAGLE group's reusable
    # boundary, so an identical resend cannot restore it.
    assert all(eagle_boundary(prompt) < p <= prompt for p in published if p > lcp)
    # With partial hash hits (H = 768 < S = 12,288) the split also stops at the
    # prompt's partial tail CP(P, 768, drop) whenever it lies beyond lcp
    # (scheduler.py:546-662, the partial-hit stop); off the cadence, that state is private.
    tail = eagle_boundary(prompt)
    if lcp < tail and tail % TARGET_SPAN:
        assert tail in data["private"]
    # The GPU prefix cache keys that tail state and restores it, as under 0.33.0.
    assert data["reuse"] == run("baseline", prompt)["reuse"]


def test_the_hash_block_is_the_gcd_of_the_resolved_spans():
    """vLLM takes H from the resolved specs: under pr457 an explicit cadence
    replaces the recurrent page in the gcd (kv_cache_utils.py:816-918)."""
    geometry = load_geometry("kimi-linear-48b-tp4-dcp4")
    assert plan(get_variant("baseline"), geometry).split.hash_block == 512
    pr457 = plan(get_variant("pr457"), geometry)
    assert pr457.cadence == 2048 and pr457.split.hash_block == 2048
    assert not pr457.split.partial_hits  # H == S: nothing finer than the scheduler block to hit


# docs/end-to-end.md's finding, confirmed on the real scheduler: a split grid (128, the draft group's
# block) finer than the recurrent block (256) leaves the state after 384 tokens in the block the next
# step hashes at 512.
STALE = """
name = "stale"
[deployment]
dcp_size = 1
block_size = 128
max_num_scheduled_tokens = 584
eagle_block_drop = true
prefix_cache_retention_interval = "dense"
[[groups]]
kind = "target-attention"
block_size = 256
[[groups]]
kind = "recurrent"
block_size = 256
[[groups]]
kind = "draft-attention"
block_size = 128
[request]
prompt_tokens = 513
"""


def test_a_recurrent_state_keyed_under_a_longer_prefix_is_reported(tmp_path):
    path = tmp_path / "stale.toml"
    path.write_text(STALE)
    data = simulate(get_variant("baseline"), load_geometry(path), 584)
    assert data["chunk_ends"] == [384, 513]
    assert data["cached"]["recurrent_states"] == [384, 512]
    assert data["cached"]["stale_recurrent_states"] == [512]
    # PR457 splits on the recurrent block: the chunk stops at 256, and no state is keyed elsewhere.
    fixed = simulate(get_variant("pr457"), load_geometry(path), 584)
    assert fixed["cached"]["stale_recurrent_states"] == []
