"""The regression corpus: every mined counterexample in this directory, replayed.

Each JSON document (proofs/mining/playback.py) must still fail for the variant it was
mined from, have the recorded outcome under every other variant, hold once the
fix it records is applied, describe the same prefill the model runs, and, for
`baseline`, fail identically in the real vLLM 0.33.0 split. A variant with its
fix deleted (a mutant) must fail some of them.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from proofs.faults.handwritten import resolve
from proofs.mining.miner import FAILS, HOLDS, REJECTED, derive_deployment
from proofs.mining.playback import (
    FIX_VARIANT,
    FORMAT,
    case_hash,
    check_real_vllm,
    file_name,
    geometry_figures,
    geometry_from_json,
    geometry_inputs,
    obligation_of,
    real_vllm,
    replay_outcome,
    scenario,
)

HERE = Path(__file__).parent
CASES = sorted(HERE.glob("*.json"))
DOCS = {path.name: json.loads(path.read_text(encoding="utf-8")) for path in CASES}
HEADLINE = "prefill-published-on-target-boundaries"


def cases(predicate=lambda doc: True) -> list:
    return [pytest.param(doc, id=name) for name, doc in DOCS.items() if predicate(doc)]


def test_the_corpus_is_not_empty():
    assert len(DOCS) >= 5


@pytest.mark.parametrize("path", CASES, ids=[p.name for p in CASES])
def test_each_file_is_named_by_its_content(path):
    doc = DOCS[path.name]
    assert doc["format"] == FORMAT
    assert path.name == file_name(doc), "inputs edited by hand: the name no longer hashes the case"
    assert case_hash(doc) in path.name


@pytest.mark.parametrize("doc", cases())
def test_fails_for_the_variant_it_was_mined_from(doc):
    assert doc["expected"][doc["variant"]] == FAILS
    assert replay_outcome(doc, doc["variant"]) == FAILS


@pytest.mark.parametrize("doc", cases())
def test_every_variant_has_its_recorded_outcome(doc):
    got = {variant: replay_outcome(doc, variant) for variant in doc["expected"]}
    assert got == doc["expected"]


@pytest.mark.parametrize("doc", cases(lambda d: d["fixes"]))
def test_holds_once_fixed(doc):
    for fix in doc["fixes"]:
        assert fix["expected"][fix["variant"]] == HOLDS, fix["why"]
        got = {variant: replay_outcome(doc, variant, fix["changes"]) for variant in fix["expected"]}
        assert got == fix["expected"], fix["why"]


@pytest.mark.parametrize("doc", cases(lambda d: d["fixes"] and d["theorem"] == HEADLINE))
def test_the_fix_is_the_explicit_cadence_the_guard_demands(doc):
    (fix,) = doc["fixes"]
    spans = doc["scenario"]["target_spans"]
    assert fix["variant"] == FIX_VARIANT
    assert fix["changes"] == {"explicit": True, "user_cadence": math.lcm(*spans)}
    # baseline ignores an explicit cadence: the fix is the variant, not the inputs.
    if doc["variant"] == "baseline":
        assert fix["expected"]["baseline"] == FAILS


@pytest.mark.parametrize("doc", cases(lambda d: "scenario" in d))
def test_the_model_runs_the_recorded_prefill(doc):
    got = scenario(obligation_of(doc), doc["variant"], doc["inputs"])
    assert got == doc["scenario"]
    assert got["trace"]["off_target"], "the trace obligation's violation, read with ints"


@pytest.mark.parametrize("doc", cases(lambda d: d["theorem"] == HEADLINE and "scenario" in d))
def test_the_trace_is_the_start_of_the_whole_prefill(doc):
    """The trace obligation's steps are the prefill's first steps and stop at
    its end: a violation it finds is one the whole prefill commits."""
    s = doc["scenario"]
    prefill_end = max(s["prompt"], s["tokens"] - 1)
    assert all(start < prefill_end for _, start, _, _ in s["trace"]["steps"])
    assert s["trace"]["steps"] == s["prefill"]["steps"][: len(s["trace"]["steps"])]
    assert set(s["trace"]["off_target"]) <= set(s["prefill"]["off_target"])


@pytest.fixture(scope="module")
def vllm():
    real = real_vllm()
    assert real is not None, "the real vLLM 0.33.0 is not installed: run tests/install-conformance.sh"
    return real


@pytest.mark.parametrize("doc", cases(lambda d: "real_vllm" in d))
def test_fails_identically_in_the_real_vllm(doc, vllm):
    off = check_real_vllm(doc, vllm)  # raises unless the steps are the model's
    assert off == doc["scenario"]["trace"]["off_target"]


@pytest.mark.parametrize("doc", cases(lambda d: "geometry" in d))
def test_a_geometry_case_keeps_its_figures(doc):
    geometry = geometry_from_json(doc["geometry"])
    budgets = doc["geometry_budgets"]
    steps = sum(1 for k in doc["inputs"] if k.startswith("budget"))
    assert geometry_inputs(doc["variant"], geometry, budgets, steps) == doc["inputs"]
    for variant, figures in doc["geometry_figures"].items():
        assert geometry_figures(variant, geometry, budgets) == figures, variant


def test_the_kimi_k3_misalignment():
    """PR457's motivating figures: baseline publishes every 3,840 tokens, and the
    first checkpoint shared with the 12,288-token target spans is 61,440. What a
    later identical request of 100,000 tokens is restored is vLLM's prefix cache's
    (models/prefix_cache.py): partial hash hits restore the prompt's tail at hash
    granularity, 99,072 tokens, under every variant; through the offload connector
    alone, nothing under the baseline and 86,016 under PR457."""
    (doc,) = [d for d in DOCS.values() if d.get("geometry", {}).get("name") == "kimi-k3-tp16-dcp16"]
    baseline = doc["geometry_figures"]["baseline"]
    assert baseline["published"][:2] == [3840, 7680]
    assert baseline["published_on_every_target"] == [61440]
    assert baseline["first_shared"] == 61440
    assert (baseline["restored"], baseline["offload_restored"]) == (99_072, 0)
    fixed = doc["geometry_figures"][FIX_VARIANT]
    assert fixed["outcome"] == HOLDS
    assert (fixed["restored"], fixed["offload_restored"]) == (99_072, 86_016)


def _headline(doc) -> bool:
    return doc["theorem"] == HEADLINE and "scenario" in doc


def _seeds() -> dict[str, list[str]]:
    """Which corpus cases are the seed kinds the issue asks for."""
    found: dict[str, list[str]] = {
        "budget below the block, baseline": [],
        "prompt a multiple of the block": [],
        "EAGLE, prompt shorter than two blocks": [],
        "pr457, cadence not a multiple of a target span": [],
    }
    for name, doc in DOCS.items():
        if not _headline(doc):
            continue
        s, x = doc["scenario"], doc["inputs"]
        block = s["split_block"]  # the grid the split aligns chunks to: 0.33.0's cache_config.block_size
        in_prefill = block >= 2 and bool(s["prefill"]["off_target"])  # the prefill itself publishes off target
        if in_prefill and doc["variant"] == "baseline" and x["budget0"] < block:
            found["budget below the block, baseline"].append(name)
        if in_prefill and x["prompt"] % block == 0 and x["prompt"] > block:
            found["prompt a multiple of the block"].append(name)
        if in_prefill and x["eagle_drop"] and x["prompt"] < 2 * block:
            found["EAGLE, prompt shorter than two blocks"].append(name)
        if doc["variant"] == "pr457" and any(s["cadence"] % span for span in s["target_spans"]):
            found["pr457, cadence not a multiple of a target span"].append(name)
    return found


@pytest.mark.parametrize("kind", list(_seeds()))
def test_the_seed_corpus_holds_each_kind(kind):
    assert _seeds()[kind], f"no case of kind {kind!r}: mine one (see README, Mining)"


def test_deleting_the_fix_makes_cases_fail():
    """mutant:target-group-left-out is pr457-guarded whose check forgets the
    second target group: cases that pr457-guarded refuses or fixes must fail
    under it where only the second group is off the cadence."""
    mutant = "mutant:target-group-left-out"
    safe = [d for d in DOCS.values() if d["theorem"] == HEADLINE and d["expected"][FIX_VARIANT] in (HOLDS, REJECTED)]
    outcomes = {id(d): replay_outcome(d, mutant) for d in safe}
    failing = [d for d in safe if outcomes[id(d)] == FAILS]
    assert len(failing) >= 3, "the mutant is not noticed by the corpus"
    for doc in failing:
        derived = derive_deployment(resolve(mutant), doc["inputs"])
        assert derived["cadence"] % derived["span1"] == 0, "the mutant checks the first group"
        assert derived["cadence"] % derived["span2"] != 0, "and misses the second"
    # And with the check intact, the same deployments are refused or hold.
    assert all(replay_outcome(d, FIX_VARIANT) in (HOLDS, REJECTED) for d in failing)


def test_the_scaled_kimi_k3_deployment_with_every_group():
    """The seed's scaled regression: 4 target, 12 recurrent and 1 EAGLE group
    at DCP16, 768-token pages, cadence 12,288, a 136,168-token prompt. Under
    budgets of 768 and of 4,096, pr457-guarded publishes the same 11
    checkpoints, all shared with target attention, and a later identical
    request restores 135,168 tokens from the GPU prefix cache and offload."""
    scaled = [d for d in DOCS.values() if d.get("geometry", {}).get("name") == "kimi-k3-tp16-dcp16-all-groups"]
    assert sorted(d["geometry_budgets"][0] for d in scaled) == [768, 4096]
    for doc in scaled:
        kinds = [g["kind"] for g in doc["geometry"]["groups"]]
        assert [kinds.count(k) for k in ("target-attention", "recurrent", "draft-attention")] == [4, 12, 1]
        guarded = doc["geometry_figures"]["pr457-guarded"]
        assert guarded["published"] == [12_288 * k for k in range(1, 12)]
        assert guarded["published_on_every_target"] == guarded["published"]
        assert guarded["restored"] == guarded["offload_restored"] == 135_168
