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


def _vllm_refuses_the_parallelism(model, tp: int, dcp: int) -> str:
    """vLLM's own ModelConfig.verify_with_parallel_config on check's reading of the model (its KV heads and
    MLA): its error, or "" where it accepts. The built-in families do not all state their query heads, which
    check does not read: 4,096 a KV head stand for them, which every TP and DCP size here divides, so vLLM's
    rules on the query heads (divided by TP; per KV head, by DCP) are not compared."""
    from types import SimpleNamespace

    from vllm.config.model import ModelConfig

    stub = SimpleNamespace(
        model_arch_config=SimpleNamespace(total_num_attention_heads=4096 * model.kv_heads),
        use_mla=model.use_mla,
        get_total_num_kv_heads=lambda: model.kv_heads,
        multimodal_config=None,
    )
    parallel = SimpleNamespace(
        enable_hc_sp=False,
        tensor_parallel_size=tp,
        decode_context_parallel_size=dcp,
        enable_expert_parallel=False,
        pipeline_parallel_size=1,
        world_size_across_dp=tp,
    )
    try:
        ModelConfig.verify_with_parallel_config(stub, parallel)
    except ValueError as error:
        return str(error)
    return ""


@pytest.mark.parametrize("name", [n for n in builtin_model_names() if not load_model(n).removed_from_vllm])
def test_decode_context_parallelism_is_refused_where_vllm_refuses_it(name):
    """Where vLLM refuses a TP/DCP pair for the model's heads, check refuses it in one line; and a pair check
    refuses for decode context parallelism, vLLM refuses too."""
    from models.deploy import DeploymentError
    from models.hf_config import ModelConfigError

    model = load_model(name)
    refused_by_vllm = 0
    for tp in (1, 2, 4, 8, 16, 32, 64):
        for dcp in (d for d in (2, 4, 8, 16, 32, 64) if tp % d == 0):
            theirs = _vllm_refuses_the_parallelism(model, tp, dcp)
            flags = ServeFlags(tensor_parallel_size=tp, decode_context_parallel_size=dcp)
            try:
                resolve_deployment(model, flags, BASELINE)
                mine = ""
            except (DeploymentError, ModelConfigError) as error:
                mine = str(error)
            if theirs:
                refused_by_vllm += 1
                assert mine, (name, tp, dcp, theirs)
            assert not ("decode context parallelism" in mine or "decode-context-parallel-size" in mine) or theirs, (
                name,
                tp,
                dcp,
                mine,
            )
    assert refused_by_vllm or model.use_mla, name


@pytest.mark.parametrize("threshold", [0, 1, 8191, 8192, 8193, 100_000])
def test_a_long_prefill_threshold_over_max_model_len_is_refused_as_vllm_refuses_it(threshold):
    from types import SimpleNamespace

    from vllm.config.scheduler import SchedulerConfig

    from models.deploy import DeploymentError

    scheduler = SimpleNamespace(
        max_num_batched_tokens=8192,
        enable_chunked_prefill=True,
        max_num_seqs=256,
        max_num_active_seqs=None,
        long_prefill_token_threshold=threshold,
    )
    try:
        SchedulerConfig.verify_max_model_len(scheduler, 8192)
        theirs = False
    except ValueError:
        theirs = True
    flags = ServeFlags(max_model_len=8192, long_prefill_token_threshold=threshold)
    try:
        resolve_deployment(load_model("qwen3-next"), flags, BASELINE)
        mine = False
    except DeploymentError:
        mine = True
    assert mine == theirs, threshold
