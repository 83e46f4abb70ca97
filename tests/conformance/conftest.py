"""The real vLLM 0.33.0, loaded once, and the count of every comparison.

A missing vLLM makes each conformance test error (never skip): run
tests/install-conformance.sh first.
"""

import importlib

import pytest

from conformance import tally
from proofs.real_vllm import quietly


def _real(module: str, name: str):
    """A session fixture: proofs.real_vllm.`module`.`name`, constructed once (loading vLLM)."""

    @pytest.fixture(scope="session")
    def fixture():
        return quietly(getattr(importlib.import_module(f"proofs.real_vllm.{module}"), name))

    return fixture


real_split = _real("split", "RealSplit")
real_config = _real("config", "RealConfig")
real_speculation = _real("speculation", "RealSpeculation")
real_mtp = _real("speculation", "RealMtpLayers")
real_offload = _real("offload", "RealOffload")
real_token_flag = _real("flags", "RealTokenFlag")
real_state = _real("state", "RealStateTensors")


def pytest_terminal_summary(terminalreporter):
    for line in tally.summary_lines():
        terminalreporter.write_line(line)
