"""PR457's own validation replayed for real (proofs/real_vllm/regression.py): Kimi-K3 with 12
recurrent groups, 4 target-attention groups (DCP16) and one EAGLE draft group, budgets of 768 and
4,096 tokens, run through vLLM 0.33.0 carrying pr457-guarded.diff and its native offload connector,
and the same on the release as shipped.

The figures are the real engine's; each run is also held to the engine model (`simulate`).
"""

from __future__ import annotations

import pytest

from models.geometry import RECURRENT, TARGET
from proofs.real_vllm import regression
from proofs.real_vllm.end_to_end import PatchedCases
from proofs.real_vllm.regression import FULL_CONTEXT

pytestmark = pytest.mark.slow  # the scaled Kimi-K3 regression on the real scheduler

PROMPT = 136_168  # the geometry's request: 11 x 12,288 + 1,000


@pytest.fixture(scope="module")
def workers():
    cases = PatchedCases()
    yield cases
    cases.close()


def _per_group(run, kind, on_grid=False):
    span = regression.target_span(run)
    return {len([x for x in run.checkpoints(g) if not on_grid or x % span == 0]) for g in run.groups(kind)}


@pytest.fixture(scope="module")
def guarded(workers):
    return {
        row.retention: row
        for row in regression.replay(
            variants=("pr457-guarded",), retentions=(0, None), prompts=(PROMPT,), workers=workers
        )
    }


def test_the_patched_engine_agrees_with_the_model(guarded):
    for row in guarded.values():
        assert row.disagreements == [], row.disagreements


def test_dense_retention_keeps_eleven_checkpoints_in_every_group_for_both_budgets(guarded):
    """PR457's claim holds on the real engine when the cache keeps every state: 11 checkpoints (on
    the 12,288 grid) in each of the 12 recurrent and 4 target groups, and 135,168 tokens restored
    from the GPU and through offload alone, for both budgets."""
    row = guarded[None]
    for budget, run in row.real.items():
        assert len(run.groups(RECURRENT)) == 12 and len(run.groups(TARGET)) == 4
        assert _per_group(run, RECURRENT) == {11} and _per_group(run, TARGET, on_grid=True) == {11}, budget
        assert (run.gpu_hit, run.offload_hit) == (FULL_CONTEXT, FULL_CONTEXT), budget
        assert run.explicit_bit is True
    assert row.claim() == (True, [])


def test_at_vllms_default_retention_the_recurrent_groups_keep_two_states(guarded):
    """At retention 0 the recurrent cache keeps only where a resend resumes (122,880 and 135,168):
    the checkpoint half of the claim does not hold; the restore is still 135,168 from the GPU and
    through offload, for both budgets."""
    row = guarded[0]
    for run in row.real.values():
        assert run.keyed[run.groups(RECURRENT)[0]] == [122_880, 135_168]
        assert _per_group(run, RECURRENT) == {2} and _per_group(run, TARGET, on_grid=True) == {11}
        assert (run.gpu_hit, run.offload_hit) == (FULL_CONTEXT, FULL_CONTEXT)
    assert not row.checkpoints_claim()[0] and row.restore_claim() == (True, [])


def test_the_release_as_shipped_keeps_checkpoints_that_depend_on_the_budget():
    """The same run on vLLM 0.33.0 (this process's vLLM): with every state kept, a 4,096-token
    budget leaves 5 checkpoints on the target grid where 768 leaves 11 (its chunks end every
    3,840 tokens); on a 100,000-token prompt at retention 0, offload restores 86,016 tokens at
    budget 768 and none at 4,096. The model says the same."""
    from models.geometry import load_geometry

    geometry = load_geometry(regression.GEOMETRY)
    dense = regression.replay(variants=("baseline",), retentions=(None,), prompts=(PROMPT,))[0]
    assert dense.disagreements == []
    assert {b: _per_group(run, RECURRENT, on_grid=True) for b, run in dense.real.items()} == {768: {11}, 4096: {5}}
    assert not dense.checkpoints_claim()[0]
    shorter = regression.replay(variants=("baseline",), retentions=(0,), prompts=(100_000,), geometry=geometry)[0]
    assert shorter.disagreements == []
    assert {b: run.offload_hit for b, run in shorter.real.items()} == {768: 86_016, 4096: 0}
    assert not shorter.same_restore()[0]


def test_patched_offload_restores_as_much_for_both_budgets_where_the_release_does_not(workers):
    """At 100,000 tokens and retention 0, the release restores 86,016 through offload at budget 768
    and none at 4,096 (the test above); patched, 86,016 at both, and the model says the same."""
    row = regression.replay(variants=("pr457-guarded",), retentions=(0,), prompts=(100_000,), workers=workers)[0]
    assert row.disagreements == []
    assert {b: (run.gpu_hit, run.offload_hit) for b, run in row.real.items()} == {
        768: (99_072, 86_016),
        4096: (99_072, 86_016),
    }
