"""Mutants live outside the model: the hand-written ones are patches applied
from outside, seen by both readings while applied, and gone afterwards."""

from __future__ import annotations

import ast
import dataclasses
import json
import re
from pathlib import Path

import pytest

from models import prefill, scheduler
from models.variants import PR457_GUARDED, VARIANTS
from proofs.catalog import CATALOGUE
from proofs.cli import main
from proofs.engine.solver import PROVED, REFUTED
from proofs.faults.handwritten import MUTANTS, in_effect, resolve
from proofs.faults.patch import Patch, PatchError, applied, pristine, references_patched
from proofs.run.runner import load_manifest, run_theorem

MODELS = Path(__file__).resolve().parent.parent / "models"


def test_the_model_has_no_mutation_branch():
    """The model holds engine semantics only: no code reads a mutation or names a mutant."""
    offending = []
    for path in sorted(MODELS.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        offending += [f"{path.name}: {m.group(0)!r}" for m in re.finditer(r".*\bmutation.*", text)]
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Attribute) and node.attr == "mutation":
                offending.append(f"{path.name}:{node.lineno}: .mutation")
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("mutant"):
                offending.append(f"{path.name}:{node.lineno}: {node.value!r}")
    assert offending == []


def test_every_manifest_mutant_is_a_patch_that_applies():
    named = {v.removeprefix("mutant:") for e in load_manifest().values() for v in e.expected if v.startswith("mutant:")}
    assert named == set(MUTANTS)
    for mutant in MUTANTS.values():
        assert mutant.patch.diff().count("\n+") >= 1
        with in_effect(f"mutant:{mutant.name}") as variant:
            assert variant.name == f"mutant:{mutant.name}"
            assert variant.guarded == mutant.base.guarded


def test_a_patch_is_seen_while_applied_and_gone_after():
    slot = MUTANTS["slot-off-by-one"]
    assert prefill.initial_state_column(PR457_GUARDED, 8, 4) == 1
    with applied(slot.patch):
        assert prefill.initial_state_column(PR457_GUARDED, 8, 4) == 2
        with pristine():
            assert prefill.initial_state_column(PR457_GUARDED, 8, 4) == 1
        assert prefill.initial_state_column(PR457_GUARDED, 8, 4) == 2
    assert prefill.initial_state_column(PR457_GUARDED, 8, 4) == 1


def test_with_references_patched_the_reference_reads_the_patch_as_a_file_edit_would():
    slot = MUTANTS["slot-off-by-one"]
    with references_patched(), applied(slot.patch), pristine():
        assert prefill.initial_state_column(PR457_GUARDED, 8, 4) == 2
    with applied(slot.patch), pristine():  # and the default is the model as released
        assert prefill.initial_state_column(PR457_GUARDED, 8, 4) == 1


def test_a_patch_is_undone_when_the_block_raises():
    original = scheduler.split.__code__
    with pytest.raises(RuntimeError), in_effect("mutant:stop-at-start"):
        raise RuntimeError("a failing run")
    assert scheduler.split.__code__ is original
    assert scheduler._strictly_inside.__code__.co_filename.endswith("scheduler.py")


def test_a_hand_written_mutant_is_refuted_by_the_theorem_that_names_it():
    theorem = CATALOGUE["prefill-state-slot"]
    assert run_theorem(theorem, "pr457-guarded", PROVED).verdict == PROVED
    refuted = run_theorem(theorem, "mutant:slot-off-by-one", REFUTED)
    assert refuted.verdict == REFUTED and refuted.ok
    assert refuted.counterexample is not None
    # and the model is itself again: the same theorem proves the base variant
    assert run_theorem(theorem, "pr457-guarded", PROVED).verdict == PROVED


def test_a_patch_that_does_not_match_is_refused():
    with pytest.raises(PatchError, match="occurs 0 times"):
        with applied(Patch("models.prefill", "initial_state_column", "computed + 7", "computed")):
            pass
    with pytest.raises(PatchError, match="no_such_function"):
        with applied(Patch("models.prefill", "no_such_function", "x", "y")):
            pass


def test_unknown_names_are_refused_in_one_line():
    with pytest.raises(ValueError, match="unknown variant 'mutant:nope'"):
        resolve("mutant:nope")
    assert resolve("baseline") is VARIANTS["baseline"]


def test_a_hand_mutant_the_model_changed_under_is_an_error_entry_and_the_run_goes_on(monkeypatch, capsys):
    """A fault written into the model where a hand mutant patches it: that
    mutant's entry is ERROR, naming why, and every other entry is decided."""
    slot = MUTANTS["slot-off-by-one"]
    moved = dataclasses.replace(slot.patch, before="arith.floordiv(computed - 2, cadence)")
    monkeypatch.setitem(MUTANTS, "slot-off-by-one", dataclasses.replace(slot, patch=moved))
    status = main(["prove", "--theorem", "prefill-state-slot", "--json", "--no-cache"])
    entries = {e["variant"]: e for e in json.loads(capsys.readouterr().out)["entries"]}
    assert status == 1
    stale = entries["mutant:slot-off-by-one"]
    assert (
        stale["verdict"] == "ERROR" and "no longer applies" in stale["reason"] and "occurs 0 times" in stale["reason"]
    )
    assert {entries[v]["verdict"] for v in ("baseline", "pr457", "pr457-guarded")} == {"PROVED"}
