"""Every test runs against a proof cache of its session's own, never the user's
(`gridproof prove` caches under $XDG_CACHE_HOME by default)."""

import os
import tempfile


def pytest_configure(config):
    os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="gridproof-test-cache-")
