"""The optional real-vLLM adapter says in one line that vLLM is missing."""

from __future__ import annotations

import sys

import pytest

from proofs.real_vllm import VllmMissing, load_split


def test_a_missing_vllm_is_one_line_naming_the_install_script(monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm.v1.core.sched.scheduler", None)  # import fails as if absent
    with pytest.raises(
        VllmMissing, match=r"^vLLM 0\.33\.0 is not installed \(.*\); bash tests/install-conformance\.sh"
    ):
        load_split()
