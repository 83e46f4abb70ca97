"""The recorded vLLM 0.33.0 answers (proofs/recorded/) are what the real vLLM
returns: recorded again here, they must equal the committed file. (The 0.34.0
answers are recorded the same way in the 0.34.0 venv:
tests/conformance/test_other_release.py.)"""

import json

import pytest

from conformance.recorded import READERS, record
from proofs.catalog.recorded import FUNCTIONS, RECORDED, VERSION


@pytest.mark.slow  # over a minute: the prompt-budget rows run the real scheduler
def test_recorded_answers_are_vllms(request):
    from conformance.recorded import installed_version

    assert installed_version() == VERSION
    fresh = record(*(request.getfixturevalue(fixture) for fixture in READERS))
    committed = json.loads(RECORDED.read_text(encoding="utf-8"))
    for name in FUNCTIONS:
        ours, theirs = committed[name], fresh[name]
        assert ours["columns"] == theirs["columns"], name
        differing = [(i, a, b) for i, (a, b) in enumerate(zip(ours["cases"], theirs["cases"], strict=False)) if a != b]
        if differing:
            i, ours_case, theirs_case = differing[0]
            raise AssertionError(f"{name}: case {i} is {ours_case} in the file, vLLM gives {theirs_case}")
        assert len(ours["cases"]) == len(theirs["cases"]), name
    assert committed == fresh
