"""The real vLLM 0.33.0, loaded once, and the count of every comparison.

A missing vLLM makes each conformance test error (never skip): run
tests/install-conformance.sh first.
"""

import pytest

from conformance import tally
from conformance.recorded import READERS, load_reader


def _real(module: str, name: str):
    """A session fixture: proofs.real_vllm.`module`.`name`, constructed once (loading vLLM)."""

    @pytest.fixture(scope="session")
    def fixture():
        return load_reader(module, name)

    return fixture


# One session fixture per reader, named as READERS names it (real_split, real_config, ...).
globals().update({fixture: _real(*where) for fixture, where in READERS.items()})


def pytest_terminal_summary(terminalreporter):
    for line in tally.summary_lines():
        terminalreporter.write_line(line)
