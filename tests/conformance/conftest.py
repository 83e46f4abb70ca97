"""The real vLLM 0.33.0, loaded once, and the count of every comparison.

A missing vLLM makes each conformance test error (never skip): run
tests/install-conformance.sh first.
"""

import pytest

from conformance import tally
from proofs.real_vllm import quietly


@pytest.fixture(scope="session")
def real_split():
    from proofs.real_vllm.split import RealSplit

    return quietly(RealSplit)


@pytest.fixture(scope="session")
def real_config():
    from proofs.real_vllm.config import RealConfig

    return quietly(RealConfig)


@pytest.fixture(scope="session")
def real_speculation():
    from proofs.real_vllm.speculation import RealSpeculation

    return quietly(RealSpeculation)


@pytest.fixture(scope="session")
def real_mtp():
    from proofs.real_vllm.speculation import RealMtpLayers

    return quietly(RealMtpLayers)


@pytest.fixture(scope="session")
def real_offload():
    from proofs.real_vllm.offload import RealOffload

    return quietly(RealOffload)


@pytest.fixture(scope="session")
def real_token_flag():
    from proofs.real_vllm.flags import RealTokenFlag

    return quietly(RealTokenFlag)


def pytest_terminal_summary(terminalreporter):
    for line in tally.summary_lines():
        terminalreporter.write_line(line)
