"""The real vLLM 0.33.0, loaded once, and the count of every comparison.

A missing vLLM makes each conformance test error (never skip): run
tests/install-conformance.sh first.
"""

import warnings

import pytest

from conformance import tally


def _quietly(load):
    # torch 2.13 warns about its own use of torch.jit.script_method on import.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "`torch.jit.script_method` is deprecated", DeprecationWarning)
        return load()


@pytest.fixture(scope="session")
def real_split():
    from conformance.real_split import RealSplit

    return _quietly(RealSplit)


@pytest.fixture(scope="session")
def real_config():
    from conformance.real_config import RealConfig

    return _quietly(RealConfig)


def pytest_terminal_summary(terminalreporter):
    for line in tally.summary_lines():
        terminalreporter.write_line(line)
