"""The real vLLM 0.33.0, loaded once, and the count of every comparison.

A missing vLLM makes each conformance test error (never skip): run
tests/install-conformance.sh first.
"""

import pytest

from conformance import tally


@pytest.fixture(scope="session")
def real_split():
    from conformance.real_split import RealSplit

    return RealSplit()


@pytest.fixture(scope="session")
def real_config():
    from conformance.real_config import RealConfig

    return RealConfig()


def pytest_terminal_summary(terminalreporter):
    for line in tally.summary_lines():
        terminalreporter.write_line(line)
