"""`gridproof check`'s model resolution against the installed vLLM 0.33.0:
the recurrent state tensors against vLLM's own `MambaStateShapeCalculator`
and `MambaStateDtypeCalculator` (proofs/real_vllm/state.py), and the resolved block, cadence and padded
page against the real `Platform._align_hybrid_block_size`
(proofs/real_vllm/config.py), both the conformance suite's readers. A missing vLLM errors, never skips."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

from models.deploy import ServeFlags, resolve_deployment
from models.hf_config import builtin_model_names, load_model
from models.variants import BASELINE

TP_SIZES = (1, 2, 4, 8, 16)
SSM_DTYPES = ("auto", "float32", "bfloat16")


def _fits(model, tp: int) -> bool:
    try:
        model.state(tp, 0, "auto")
    except Exception:
        return False
    return True


@pytest.mark.parametrize("name", builtin_model_names())
def test_state_tensors_are_vllms(real_state, name):
    model = load_model(name)
    compared = 0
    for tp in TP_SIZES:
        if not _fits(model, tp):
            continue
        for num_spec in (0, 2):
            for ssm in SSM_DTYPES:
                mine = model.state(tp, num_spec, ssm)
                theirs, their_types = real_state.read(model, tp, num_spec, ssm)
                # The conv state's orientation (dim-first or not) is a layout choice: compare sizes.
                assert [math.prod(t.shape) for t in mine] == theirs, (name, tp, num_spec)
                assert [t.dtype for t in mine] == their_types, (name, tp, ssm)
                compared += 1
    assert compared >= 6


def _scenario(model, deployment, tp: int):
    from proofs.real_vllm.config import Backend, ConfigScenario

    inputs = deployment.config_inputs
    spec = deployment.speculation
    state = model.state(tp, spec.num_speculative_tokens if spec else 0, deployment.flags.mamba_ssm_cache_dtype)
    return ConfigScenario(
        block_size=inputs.block_size,
        mamba_block_size=deployment.flags.mamba_block_size,
        mamba_page_size_padded=None,
        align_mode=bool(inputs.align_mode),
        use_mla=model.use_mla,
        num_kv_heads=model.kv_heads_per_rank(tp),
        head_size=model.head_size,
        dtype=model.dtype,
        mamba_shapes=tuple(t.shape for t in state),
        mamba_dtypes=tuple(t.dtype for t in state),
        backends=(Backend((inputs.kernel_min,)),),
        layer_alignments=(),
        cache_dtype=deployment.flags.kv_cache_dtype,
    )


FLAG_SETS = (
    {},
    {"block_size": 768},
    {"block_size": 64, "mamba_ssm_cache_dtype": "float32"},
    {"kv_cache_dtype": "fp8"},
    {"kv_cache_dtype": "fp8_e5m2", "block_size": 768},
    {"kv_cache_dtype": "float16", "mamba_ssm_cache_dtype": "float32"},
    {"speculative_config": {"method": "eagle", "num_speculative_tokens": 3}},
)


@pytest.mark.parametrize("name", builtin_model_names())
def test_resolution_is_the_real_align_hybrid_block_size(real_config, name):
    model = load_model(name)
    for tp in TP_SIZES:
        if not _fits(model, tp):
            continue
        for extra in FLAG_SETS:
            if model.state_kind == "kda" and extra.get("mamba_ssm_cache_dtype") == "float16":
                continue
            flags = ServeFlags(tensor_parallel_size=tp, **extra)
            deployment = resolve_deployment(model, flags, BASELINE)
            real = real_config.resolve(_scenario(model, deployment, tp))
            r = deployment.resolved
            mine = (r.block_size, r.mamba_block_size or None, r.mamba_page_size_padded or None)
            assert mine == real, (name, tp, extra)
            assert deployment.geometry.deployment.block_size == real[0]


@pytest.mark.slow  # a pytest run of its own over every exported test (about 15 s)
def test_exported_vllm_tests_run_against_the_installed_vllm(tmp_path):
    """`check --emit-vllm-test` and `mine --format vllm-test` write files
    that vLLM 0.33.0 runs: the real split takes the derived chunk ends
    (passes), and the off-target checkpoint is a strict xfail."""
    import subprocess

    root = Path(__file__).resolve().parents[2]
    kimi = [
        "--model", "kimi-k3", "-tp", "16", "-dcp", "16", "--block-size", "768",
        "--max-num-scheduled-tokens", "4096",
        "--speculative-config", '{"method": "eagle", "num_speculative_tokens": 3}',
        "--kv-transfer-config", '{"kv_connector": "OffloadingConnector"}',
    ]  # fmt: skip
    checked = subprocess.run(
        [sys.executable, "-m", "proofs.cli", "check", *kimi, "--emit-vllm-test", str(tmp_path / "test_check_case.py")],
        cwd=root,
        capture_output=True,
        text=True,
    )
    assert checked.returncode == 1, checked.stderr  # not aligned, and the file written
    mined = subprocess.run(
        [
            sys.executable,
            "-m",
            "proofs.cli",
            "mine",
            "prefill-published-on-target-boundaries",
            "--geometry",
            "kimi-k3-tp16-dcp16",
            "--variant",
            "baseline",
            "--format",
            "vllm-test",
            "--no-vllm",
            "--out",
            str(tmp_path / "corpus"),
        ],  # fmt: skip
        cwd=root,
        capture_output=True,
        text=True,
    )
    (tmp_path / "test_mined_case.py").write_text(mined.stdout)
    assert "Scheduler._mamba_block_aligned_split" in mined.stdout, mined.stderr
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W", "ignore", str(tmp_path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout[-2000:]
    assert "2 passed, 2 xfailed" in run.stdout, run.stdout[-2000:]
