"""Every test runs against a proof cache of its session's own, never the user's
(`gridproof prove` caches under $XDG_CACHE_HOME by default)."""

import os
import tempfile


def pytest_configure(config):
    os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="gridproof-test-cache-")


def pytest_addoption(parser):
    parser.addoption(
        "--e2e-sweep",
        action="store_true",
        help="run the full end-to-end sweep against the real vLLM scheduler (tests/conformance/test_end_to_end.py)",
    )
