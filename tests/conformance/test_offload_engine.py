"""The native KV offload connector driven end to end (`RealEngine(setting, offload=True)`): what
vLLM 0.33.0's `OffloadingConnector` stores from a prefill, and what an identical resend restores
from the offload tier alone once the GPU prefix cache is dropped.

The numbers pinned here are the real connector's answers; where they differ from the project's
design note (Kimi-K3 "offload 61,440" at 100,000 tokens) the connector is the judge.
"""

import dataclasses

import pytest

from models.geometry import load_geometry
from proofs.real_vllm.engine import EngineSetting, OffloadSettingError, RealEngine, prompt_tokens

pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script_method` is deprecated:DeprecationWarning")

KIMI = "kimi-k3-tp16-dcp16"
DENSE = None  # vLLM's prefix_cache_retention_interval = None


def engine(name: str, retention: int | None = 0, tier: str = "remembering", **deployment) -> RealEngine:
    """An offloading engine for a built-in geometry at its own budget, its retention set."""
    geometry = load_geometry(name)
    d = dataclasses.replace(geometry.deployment, prefix_cache_retention_interval=retention, **deployment)
    geometry = dataclasses.replace(geometry, deployment=d)
    return RealEngine(EngineSetting.of(geometry, d.max_num_scheduled_tokens), offload=True, offload_tier=tier)


def test_kimi_100000_restores_nothing_from_offload_at_the_default_retention():
    restore = engine(KIMI).offload_hit(prompt_tokens(100_000, 1))
    # Target attention: every complete 12,288-token chunk of the prompt; the recurrent group: only
    # the state the GPU cache keeps at retention 0, the prompt checkpoint 99,072, past them.
    assert restore.first.stored[0] == [12_288 * k for k in range(1, 9)]
    assert restore.first.stored[1] == [99_072]
    assert restore.first.stored[2] == [768 * k for k in range(1, 131)]
    assert restore.hit == 0
    assert restore.again.hit == 0 and restore.again.chunk_ends[-1] == 100_000


def test_kimi_100000_dense_restores_96000_not_61440():
    restore = engine(KIMI, DENSE).offload_hit(prompt_tokens(100_000, 1))
    # The hit ends at the last stored state below the last complete target chunk (98,304), inside
    # that chunk: the lookup bounds the hit by the stored chunks, it does not align it to them.
    assert 96_000 in restore.first.stored[1] and 98_304 not in restore.first.stored[1]
    assert restore.hit == restore.again.connector_hit == restore.again.hit == 96_000
    assert restore.again.chunk_ends == [100_000]  # the 4,000 tokens left fit one step


@pytest.mark.parametrize(
    ("prompt", "retention", "hit"),
    [
        (12_288, 0, 0),  # the cap, 11,520, is short of one target chunk
        (12_289, 0, 11_520),  # the target check passes at 12,288; the EAGLE pop then lowers it
        (140_000, 0, 122_880),  # the EAGLE replay boundary is a chunk end here, so it is kept
        (66_935, DENSE, 61_440),
    ],
)
def test_kimi_offload_hits(prompt, retention, hit):
    assert engine(KIMI, retention).offload_hit(prompt_tokens(prompt, 2)).hit == hit


@pytest.mark.parametrize("retention", [0, DENSE])
def test_the_connector_stores_the_recurrent_states_the_gpu_cache_keeps(retention):
    first = engine(KIMI, retention).run(prompt_tokens(100_000, 3))
    assert first.offered[1] == first.keyed[1] == first.stored[1]  # every one a multiple of 768
    assert not first.offered[0] and not first.offered[2]  # hand-offs come from recurrent groups only


def test_vllms_cpu_manager_agrees_with_the_stand_in():
    for retention in (0, DENSE):
        hits = {
            tier: engine(KIMI, retention, tier).offload_hit(prompt_tokens(66_935, 4)).hit
            for tier in ("remembering", "cpu")
        }
        assert hits["remembering"] == hits["cpu"]


@pytest.mark.parametrize("name", ["nemotron-3-nano-30b-tp2", "granite-4.0-h-small-tp2"])
def test_uniform_geometries_restore_the_gpu_hit(name):
    real = engine(name)
    for seed, prompt in enumerate((2_097, 100_000)):
        tokens = prompt_tokens(prompt, 10 + seed)
        real.run(tokens)
        gpu = real.run(tokens).hit
        real.drop_gpu_prefix_cache()
        assert gpu > 0 and real.run(tokens).external_hit == gpu


def test_a_geometry_whose_hashes_look_ahead_is_refused():
    with pytest.raises(OffloadSettingError, match="hash_lookahead_tokens = 1"):
        engine("qwen3-next-80b-tp4-mtp2")


def test_without_offload_the_engine_is_unchanged():
    real = RealEngine(EngineSetting.of(load_geometry(KIMI), 4096))
    tokens = prompt_tokens(100_000, 1)
    real.run(tokens)
    again = real.run(tokens)
    assert again.hit == 99_072 and again.external_hit == 0 and not again.stored
    with pytest.raises(ValueError, match="offload=True"):
        real.offload_hit(tokens)
