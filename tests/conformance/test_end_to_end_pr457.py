"""The engine model under PR457 against the real vLLM 0.33.0 scheduler carrying the project's patch
of the same name (patches/vllm-0.33.0/pr457.diff, pr457-guarded.diff), end to end: a request's chunk
ends, what every cache group keys, the GPU hit and the offload hit, and for pr457-guarded the
configuration check (the model's ConfigurationRejected against the patched Scheduler's ValueError).

The patched vLLM runs in a worker process of its own (proofs/real_vllm/patched.py), one per patch for
the session. CI runs a sample; `--e2e-sweep` runs every case of the built-in deployments and 40
generated deployments per variant (proofs/real_vllm/sweep.py). A disagreement prints the case and
the commands that reproduce it.
"""

from __future__ import annotations

import pytest

from conformance import tally
from models.geometry import load_geometry
from models.variants import PR457, PR457_GUARDED, VARIANTS
from proofs.real_vllm import sweep
from proofs.real_vllm.end_to_end import Case, PatchedCases, differences, model_observation

pytestmark = pytest.mark.slow  # the patched real scheduler in worker processes

SAMPLE_PER_BUILTIN = 5
SAMPLE_GENERATED, SAMPLE_PER_GENERATED = 5, 6
SWEEP_GENERATED = 40
NAMES = ("pr457", "pr457-guarded")


@pytest.fixture(scope="session")
def patched_cases():
    cases = PatchedCases()
    yield cases
    cases.close()


def _check(patched_cases: PatchedCases, cases: list[Case], variant_name: str) -> None:
    variant = VARIANTS[variant_name]
    result = sweep.compare(cases, patched_cases, variant)
    count = tally.COUNTS.setdefault(f"end-to-end {variant_name} on the patched vLLM", tally.Count())
    count.cases += result.cases
    count.mismatches += len(result.disagreements)
    tally.count(f"end-to-end {variant_name}: refused by both", result.refused)
    assert not result.disagreements, f"{len(result.disagreements)} of {result.cases} cases disagree:\n" + "\n".join(
        result.disagreements[:5]
    )


def test_the_worker_runs_the_patched_vllm(patched_cases):
    for name in NAMES:
        worker = patched_cases.worker(name)
        assert worker.loaded == name
        assert str(worker.root) in worker.call("proofs.real_vllm.patched:vllm_location")


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("index", range(len(sweep.builtin_deployments(PR457))))
def test_builtin_deployment(patched_cases, request, name, index):
    full = request.config.getoption("--e2e-sweep")
    cases = sweep.builtin_cases(VARIANTS[name], index, None if full else SAMPLE_PER_BUILTIN)
    _check(patched_cases, cases, name)


@pytest.mark.parametrize("name", NAMES)
def test_generated_deployments(patched_cases, request, name):
    full = request.config.getoption("--e2e-sweep")
    if full:
        cases = sweep.generated_cases(VARIANTS[name], None, SWEEP_GENERATED, None)
    else:
        cases = sweep.generated_cases(VARIANTS[name], 457, SAMPLE_GENERATED, SAMPLE_PER_GENERATED)
    _check(patched_cases, cases, name)


def _kimi_without_explicit_cadence():
    geometry = load_geometry("kimi-k3-tp16-dcp16")
    from dataclasses import replace

    return replace(geometry, deployment=replace(geometry.deployment, mamba_block_size=None))


def test_the_guard_refuses_what_the_model_refuses(patched_cases):
    """Kimi-K3 at DCP16 without --mamba-block-size: the cadence is the 768-token block, off the
    12,288-token target spans. pr457-guarded's Scheduler refuses it, naming the group and the valid
    values, as the model's checked plan does; pr457 runs it, and agrees with the model."""
    case = Case(_kimi_without_explicit_cadence(), 4096, 30_000)
    real = patched_cases.observe(case, PR457_GUARDED)
    assert real.rejected is not None and "multiples of 12288" in real.rejected
    assert model_observation(case, PR457_GUARDED).rejected is not None
    unguarded = patched_cases.observe(case, PR457)
    assert unguarded.rejected is None and unguarded.hit > 0
    assert differences(model_observation(case, PR457), unguarded) == []


def test_an_explicit_cadence_is_recorded_and_kept(patched_cases):
    """The patched CacheConfig records an explicit --mamba-block-size (the bit 0.33.0 lacks), and the
    harness runs its Mamba groups at it: Kimi-K3's chunks publish on 12,288, not on 3,840."""
    bit = patched_cases.worker("pr457-guarded").call(
        "proofs.real_vllm.patched:explicit_bit", load_geometry("kimi-k3-tp16-dcp16"), 4096, "pr457-guarded"
    )
    assert bit is True
    real = patched_cases.observe(Case(load_geometry("kimi-k3-tp16-dcp16"), 4096, 30_000), PR457_GUARDED)
    assert real.chunk_ends[:6] == [4096, 8192, 12288, 16384, 20480, 24576]


def test_a_disagreement_names_the_commands_that_reproduce_it():
    case = Case(load_geometry("kimi-k3-tp16-dcp16"), 4096, 30_000)
    text = case.reproduce(variant=PR457_GUARDED)
    assert "gridproof simulate case.toml --budget 4096 --prompt-tokens 30000 --variant pr457-guarded --json" in text
    assert "python3 -m proofs.real_vllm.end_to_end case.toml --budget 4096 --prompt-tokens 30000 --variant" in text
    assert "mamba_block_size = 12288" in text
