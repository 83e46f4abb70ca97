"""vLLM 0.34.0, run in a venv of its own (tests/install-conformance.sh makes it), held to the
`vllm-0.34.0` model: the end-to-end comparison with its real scheduler and offload connector (a
sample; `python3 -m proofs.real_vllm.other_release 0.34.0 --sweep` runs every case), its recorded
answers (proofs/recorded/vllm-0.34.0.json) recorded again, and the block an attention backend is
asked for when --block-size is unset."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from models.variants import BASELINE, VLLM_0_34
from proofs.real_vllm import other_release

pytestmark = pytest.mark.slow  # vLLM 0.34.0 in its venv

VERSION = "0.34.0"
PROJECT = Path(__file__).resolve().parents[2]


def _in_venv(*args: str, cwd: Path = PROJECT) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(PROJECT)}
    python = other_release.venv_python(VERSION)  # raises, naming the install command, if there is none
    return subprocess.run([str(python), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=1200)


def test_the_real_scheduler_agrees_with_the_model_on_a_sample():
    tally = other_release.run(VERSION)
    assert tally["cases"] > 200 and tally["lookahead"] > 0 and tally["offload"] > 0
    assert tally["agree"] == tally["cases"], json.dumps(tally["disagreements"][:3], indent=1)


def test_the_recorded_answers_are_vllm_0_34s(tmp_path):
    out = tmp_path / "vllm-0.34.0.json"
    done = _in_venv("-m", "conformance.recorded", "--out", str(out), cwd=PROJECT / "tests")
    assert done.returncode == 0, done.stderr[-2000:]
    committed = json.loads((PROJECT / "proofs" / "recorded" / "vllm-0.34.0.json").read_text(encoding="utf-8"))
    fresh = json.loads(out.read_text(encoding="utf-8"))
    assert fresh["vllm"] == VERSION
    for name in committed:
        assert committed[name] == fresh[name], name


def test_the_default_block_asked_of_the_backend_is_each_releases():
    from vllm.config.cache import CacheConfig

    assert CacheConfig.DEFAULT_BLOCK_SIZE == BASELINE.default_block_size == 16
    done = _in_venv("-c", "from vllm.config.cache import CacheConfig; print(CacheConfig.DEFAULT_BLOCK_SIZE)")
    assert done.returncode == 0, done.stderr[-2000:]
    assert int(done.stdout.split()[-1]) == VLLM_0_34.default_block_size == 64


def test_check_confirms_the_readme_deployment_on_the_real_0_34(capsys):
    from proofs.cli import main

    flags = ["--model", "kimi-k3", "-tp", "16", "-dcp", "16", "--block-size", "768"]
    flags += [
        "--max-num-scheduled-tokens",
        "4096",
        "--speculative-config",
        '{"method":"eagle","num_speculative_tokens":3}',
    ]
    flags += ["--kv-transfer-config", '{"kv_connector":"OffloadingConnector"}']
    assert main(["check", *flags, "--confirm-vllm", "--json"]) == 1  # the alignment finding, not the confirmation
    confirmed = json.loads(capsys.readouterr().out)["confirm_vllm"]
    assert confirmed["cases"] > 20 and confirmed["disagreements"] == []
