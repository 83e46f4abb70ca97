"""An equivalence read on Z3 terms counts only where the reading ran the
mutated text (proofs/mutation/coverage.py)."""

from __future__ import annotations

from models.variants import VARIANTS
from proofs.faults.patch import Patch
from proofs.mutation import equivalence
from proofs.mutation.reach import BoolLeaf, Call, IntLeaf

SOURCE = """def pick(flag, size):
    if flag is True:
        return size + 1
    return size * 1


def either(flag, size):
    return size + 1 if flag is True else size
"""


def _module(tmp_path, monkeypatch, name):
    (tmp_path / f"{name}.py").write_text(SOURCE)
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


CALLS = [Call(VARIANTS["baseline"], (("flag", BoolLeaf()), ("size", IntLeaf())))]


def test_a_mutant_in_a_branch_the_reading_cannot_take_is_not_called_equivalent(tmp_path, monkeypatch):
    module = _module(tmp_path, monkeypatch, "identity_branch")
    # On a Z3 Bool `flag is True` is false: the reading never reaches `size + 1`.
    unread = equivalence.check(Patch(module, "pick", "size + 1", "size + 2"), CALLS)
    assert unread.verdict == equivalence.UNDECIDED
    assert "did not run" in unread.detail
    # A skipped arm of a conditional expression on a line that runs is not run either.
    arm = equivalence.check(Patch(module, "either", "size + 1", "size + 2"), CALLS)
    assert arm.verdict == equivalence.UNDECIDED and "did not run" in arm.detail


def test_a_mutant_the_reading_runs_is_still_proved_equivalent(tmp_path, monkeypatch):
    module = _module(tmp_path, monkeypatch, "identity_branch_read")
    same = equivalence.check(Patch(module, "pick", "size * 1", "size"), CALLS)
    assert same.verdict == equivalence.EQUIVALENT, same.detail
    differs = equivalence.check(Patch(module, "pick", "size * 1", "size * 2"), CALLS)
    assert differs.verdict == equivalence.DIFFERS
