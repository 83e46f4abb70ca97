"""The restore theorems (proofs/catalog/restore.py): each refutes a fault planted in the code it is about
(a hand mutant of models/prefix_cache.py or models/offload.py, applied from outside), and the findings
they state are pinned on the concrete model."""

from __future__ import annotations

import itertools
import math

import pytest

from models.geometry import CacheGroup, Deployment, Geometry, Request
from models.offload import offload_hit
from models.plan import plan
from models.prefill import run_prefill
from models.prefix_cache import cached_prefix, gpu_hit
from models.variants import PR457, PR457_GUARDED
from proofs.catalog import CATALOGUE
from proofs.catalog.restore import _cached
from proofs.engine.claims import replay
from proofs.engine.solver import PROVED, REFUTED
from proofs.faults.handwritten import in_effect
from proofs.records.counterexamples import recorded
from proofs.run.runner import run_theorem


@pytest.mark.parametrize(
    "theorem, mutant, failing",
    [
        # Safety: a lookup that ignores the attention groups' candidate restores past what they hold keyed.
        ("gpu-restore-safe-complete", "recurrent-find-past-the-limit", "restores"),
        # Completeness: a lookup that stops one key short restores less than every group serves.
        ("gpu-restore-safe-complete", "recurrent-find-below-the-largest", "where every group serves"),
        # The state: a horizon that counts a block hashed once any of it is computed keys a partial state.
        ("gpu-restore-holds-its-state", "hashing-horizon-rounds-up", "a key whose block holds the state"),
        # The connector: an EAGLE group that keeps the chunk it matched beyond the candidate.
        ("offload-restore-safe", "offload-eagle-chunk-kept", "one chunk beyond the one holding it"),
    ],
)
def test_a_planted_fault_in_the_restore_is_refuted(theorem, mutant, failing):
    entry = run_theorem(CATALOGUE[theorem], f"mutant:{mutant}", REFUTED)
    assert entry.verdict == REFUTED and entry.ok, entry.reason
    assert failing in entry.reason
    with in_effect(f"mutant:{mutant}") as variant:  # the case fails again, on the mutated model only
        assert CATALOGUE[theorem].enumeration.check(variant, entry.counterexample).failure == entry.reason
    with in_effect("pr457-guarded") as variant:
        assert CATALOGUE[theorem].enumeration.check(variant, entry.counterexample).failure is None


def test_the_hashing_horizon_fault_is_refuted_by_z3():
    for mutant in ("hashing-horizon-rounds-up", "eagle-cacheable-past-computed"):
        entry = run_theorem(CATALOGUE["cache-hashes-behind-the-chunk"], f"mutant:{mutant}", REFUTED)
        assert entry.verdict == REFUTED and entry.ok, (mutant, entry.reason)


def test_the_baseline_restores_a_state_under_another_key():
    """g8-recurrent16 (8-token attention blocks, a 16-token recurrent block), a budget of 24, a 41-token
    prompt: chunks end at 24, 40 and 41, so the block of tokens 17..32 is left holding the state after 24
    and keyed at 32; a later request sharing 33 tokens is restored 32 from it (the real scheduler keys and
    restores the same: proofs/real_vllm/end_to_end.py)."""
    case = {"geometry": "g8-recurrent16", "retention": 0, "budget": 24, "prompt": 41}
    with in_effect("baseline") as variant:
        _, trace, cached = _cached(variant, case)
        assert list(trace.chunk_ends) == [24, 40, 41]
        assert 32 in cached.recurrent and 32 in cached.stale
        assert gpu_hit(cached, 33, 41) == 32
        assert CATALOGUE["gpu-restore-holds-its-state"].enumeration.check(variant, case).failure
    with in_effect("pr457-guarded") as variant:  # PR457 splits on the recurrent block: no chunk ends at 24
        _, trace, cached = _cached(variant, case)
        assert not cached.stale and CATALOGUE["gpu-restore-holds-its-state"].enumeration.check(variant, case)


def test_the_offload_connector_loads_off_the_recurrent_grid():
    """An annotated EAGLE group whose offload chunk (24 tokens) does not divide the recurrent one (48)
    lowers the connector's hit to 72, off the recurrent grid; the recurrent group then loads the state
    stored at 96. vLLM 0.33.0's connector loads the same 72 tokens (proofs/real_vllm/end_to_end.py)."""
    case = {"geometry": "g16-dcp2", "retention": 0, "budget": 10, "prompt": 192}
    with in_effect("baseline") as variant:
        p, _, cached = _cached(variant, case)
        assert list(cached.offered) == [96, 184]
        assert offload_hit(p, cached, 192, 192) == 72
        verdict = CATALOGUE["offload-restore-holds-its-state"].enumeration.check(variant, case)
    assert "off the 48-token recurrent chunk grid" in verdict.failure
    assert run_theorem(CATALOGUE["offload-restore-safe"], "baseline", PROVED).verdict == PROVED


def _resumed(block_size: int, draft: int, cadence: int, prompt: int, outputs: int, budget: int) -> Geometry:
    return Geometry(
        name="resumed",
        deployment=Deployment(
            dcp_size=1,
            block_size=block_size,
            max_num_scheduled_tokens=budget,
            eagle_block_drop=True,
            mamba_block_size=cadence,
            prefill_checkpoint_alignment=1,
            prefix_cache_retention_interval=None,
        ),
        groups=(
            CacheGroup("target-attention", block_size),
            CacheGroup("target-attention", block_size),
            CacheGroup("recurrent", block_size),
            CacheGroup("draft-attention", draft, eagle=True),
        ),
        request=Request(prompt_tokens=prompt, output_tokens=outputs),
    )


def test_pr457_keys_a_state_under_another_key_in_a_resumed_request():
    """The finding cache-keys-hold-their-state's recorded pr457 counterexample replays: a resumed request
    (2 prompt tokens, 4 output tokens), 1-token attention blocks, a 2-token recurrent block, an annotated
    4-token EAGLE draft, partial hash hits and internal checkpoints. The first chunk stops at the prompt's
    hash tail (1), mid-block, and the next, which exports an internal checkpoint, runs to 5 without the
    next-boundary stop: the block of tokens 1..2 holds the state after 1 and is keyed at 2, and a later
    identical request is restored 2 from it."""
    geometry = _resumed(1, 4, 2, 2, 4, 4)
    for variant in (PR457, PR457_GUARDED):
        p = plan(variant, geometry)
        assert p.accepted
        trace = run_prefill(p, 4)
        assert [(c.start, c.end) for c in trace.chunks] == [(0, 1), (1, 5)]
        cached = cached_prefix(p, trace, 2, 6)
        assert list(cached.stale) == [2] and gpu_hit(cached, 6, 6) == 2
    theorem = CATALOGUE["cache-keys-hold-their-state"]
    for variant_name in ("pr457", "pr457-guarded"):
        (row,) = recorded()[theorem.name][variant_name]
        assert row["obligation"] == "trace"
        with in_effect(variant_name) as variant:
            assert replay(theorem.trace_search.formula, variant, row["inputs"])[0]


def test_the_recorded_pr457_counterexample_is_the_smallest_a_concrete_search_finds():
    """How the recorded input was found (the solver's own search does not reach it within its budget):
    every geometry of attention block 1, 2 or 4 (the hash block), recurrent block 2, 4 or 8, annotated
    EAGLE draft 4, 8 or 16, prompts, tokens and budgets up to 20 more, read on the trace obligation."""
    theorem = CATALOGUE["cache-keys-hold-their-state"]
    (row,) = recorded()[theorem.name]["pr457-guarded"]
    base = row["inputs"]
    smallest = None
    with in_effect("pr457-guarded") as variant:
        for page, cadence, draft in itertools.product((1, 2, 4), (2, 4, 8), (4, 8, 16)):
            if cadence % page:
                continue
            for prompt in range(2, 8):
                for tokens in range(prompt, prompt + 8):
                    for budget in range(1, tokens + 1):
                        values = {
                            **base,
                            **dict(page=page, page2=page, draft_block=draft, user_cadence=cadence),
                            **dict(sched_block=math.lcm(page, cadence, draft), hash_block=page, max_scheduled=budget),
                            **dict(prompt=prompt, tokens=tokens, budget0=budget, budget1=budget, budget2=budget),
                        }
                        if replay(theorem.trace_search.formula, variant, values)[0]:
                            size = (tokens, prompt, cadence, draft, budget)
                            smallest = min(smallest or (size, values), (size, values), key=lambda s: s[0])
    assert smallest is not None and smallest[1] == base


def test_a_fault_in_the_positions_a_condensed_prefill_keys_is_refuted():
    theorem = CATALOGUE["cache-condensed-is-explicit"]
    entry = run_theorem(theorem, "mutant:cache-positions-one-repetition-short", REFUTED)
    assert entry.verdict == REFUTED and entry.ok, entry.reason
    assert "the cache's keys differ" in entry.reason


@pytest.mark.xfail(
    strict=True,
    reason="cached_prefix reads the last chunk end off the explicit chunks only: a condensed prefill whose "
    "repeat runs to its end keys its attention blocks only up to the last explicit chunk (the manifest's "
    "cache-condensed-is-explicit / baseline is REFUTED by it)",
)
def test_the_cache_of_a_prefill_condensed_to_its_end_is_the_explicit_ones():
    case = {"geometry": "g8-simple-checkpoints", "retention": 0, "budgets": "24", "prompt": 48}
    with in_effect("baseline") as variant:
        assert CATALOGUE["cache-condensed-is-explicit"].enumeration.check(variant, case).failure is None
