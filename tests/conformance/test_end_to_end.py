"""The engine model against the real vLLM 0.33.0 scheduler, end to end: a request's whole prefill,
what the prefix cache keeps per group, and what a later request (an identical resend, a longer
one extending it, one that shares only part of it) is restored.

CI runs a sample (the built-in deployments at their boundaries, a few generated ones); the full
sweep (every built-in geometry and `check` family, and generated deployments, over 2,000 cases)
runs with `python3 -m pytest tests/conformance/test_end_to_end.py --e2e-sweep` (docs/benchmarks.md).
A disagreement prints the case and the commands that reproduce it.
"""

from __future__ import annotations

import random

import pytest

from conformance import tally
from conformance.engine_geometries import builtin_deployments, prompt_limit, random_deployment
from proofs.real_vllm.end_to_end import Case, RealCases, cases_for, differences, model_observation

SAMPLE_GENERATED = 6  # generated deployments in CI's sample
SWEEP_GENERATED = 60


@pytest.fixture(scope="session")
def real_cases():
    return RealCases()


def _check(real_cases: RealCases, cases: list[Case]) -> None:
    failures = []
    for case in cases:
        found = differences(model_observation(case), real_cases.observe(case))
        tally.count("end-to-end cases", 1)
        if found:
            failures.append(f"{case.label()}\n  " + "\n  ".join(found) + f"\n  reproduce:\n{case.reproduce()}")
    assert not failures, f"{len(failures)} of {len(cases)} cases disagree:\n" + "\n".join(failures[:5])


def _sample(cases: list[Case], rng: random.Random, count: int) -> list[Case]:
    return cases if len(cases) <= count else rng.sample(cases, count)


@pytest.mark.parametrize("index", range(len(builtin_deployments())))
def test_builtin_deployment(real_cases, request, index):
    geometry, budgets = builtin_deployments()[index]
    rng = random.Random(index)
    cases = list(cases_for(geometry, budgets, prompt_limit(geometry, budgets), rng))
    cases.append(Case(geometry, budgets[-1], geometry.request.prompt_tokens))
    if not request.config.getoption("--e2e-sweep"):
        cases = _sample(cases, rng, 12)
    _check(real_cases, cases)


def test_generated_deployments(real_cases, request):
    sweep = request.config.getoption("--e2e-sweep")
    rng = random.Random(None if sweep else 44)
    for number in range(SWEEP_GENERATED if sweep else SAMPLE_GENERATED):
        geometry, budgets = random_deployment(rng, number)
        cases = list(cases_for(geometry, budgets, prompt_limit(geometry, budgets), rng))
        _check(real_cases, cases if sweep else _sample(cases, rng, 10))


def test_the_kimi_k3_figures_are_what_vllm_restores(real_cases):
    """The figures tests/test_simulate.py holds the model to (the README's example among them):
    Kimi-K3 TP16/DCP16, a 4,096-token budget, resends of each length, on the real engine."""
    from test_simulate import KIMI_K3_RESENDS

    from models.geometry import load_geometry

    geometry = load_geometry("kimi-k3-tp16-dcp16")
    for prompt, (gpu, offload) in KIMI_K3_RESENDS.items():
        real = real_cases.observe(Case(geometry, 4096, prompt))
        assert (real.hit, real.offload) == (gpu, offload), prompt


KIMI_K3_FLAGS = [
    "--model", "kimi-k3", "-tp", "16", "-dcp", "16", "--block-size", "768", "--max-num-scheduled-tokens", "4096",
    "--speculative-config", '{"method":"eagle","num_speculative_tokens":3}',
    "--kv-transfer-config", '{"kv_connector":"OffloadingConnector"}',
]  # fmt: skip


def test_check_confirm_vllm_agrees_and_would_notice_a_model_a_token_off(capsys, monkeypatch):
    """`check --confirm-vllm` on the installed 0.33.0: the README's deployment agrees; with the model's
    GPU restore one token short, every length that restores anything disagrees."""
    import json

    from proofs.cli import main
    from proofs.real_vllm import end_to_end

    argv = ["check", *KIMI_K3_FLAGS, "--vllm-version", "0.33.0", "--confirm-vllm", "--json"]
    main(argv)
    confirmed = json.loads(capsys.readouterr().out)["confirm_vllm"]
    assert confirmed["cases"] > 20 and confirmed["disagreements"] == []
    monkeypatch.setattr(end_to_end, "gpu_hit", lambda cached, shared, tokens: max(0, shared - 1))
    main(argv)
    assert json.loads(capsys.readouterr().out)["confirm_vllm"]["disagreements"]
