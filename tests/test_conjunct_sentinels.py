"""Named goal conjuncts and their sentinels: the manifest's `refuted_alone`
asks a mutant to refute a conjunct alone, so a theorem weakened or cut down
in the catalogue fails `prove`, as a broken model does."""

import pytest
import z3

from models import arith
from proofs.catalog import CATALOGUE
from proofs.engine.claims import symbolic_inputs
from proofs.engine.solver import ERROR, PROVED, REFUTED
from proofs.faults.handwritten import in_effect
from proofs.faults.patch import Patch, applied
from proofs.run.runner import MANIFEST, ManifestError, load_manifest, run_theorem


def _conjunct_names(theorem, variant_name: str) -> set[str]:
    names: set[str] = set()
    with in_effect(variant_name) as variant:
        for obligation in theorem.obligations:
            with arith.symbolic_context():
                claim = obligation.formula(variant, symbolic_inputs(obligation.variables, z3.Context()))
            names |= set(claim.conjuncts)
    return names


def test_every_named_conjunct_has_a_sentinel_that_refutes_it_alone():
    manifest = load_manifest()
    named = 0
    for name, expectation in manifest.items():
        theorem = CATALOGUE[name]
        if theorem.enumeration is not None:
            continue
        engine_variants = [v for v in expectation.expected if not v.startswith("mutant:")]
        conjuncts = set().union(*(_conjunct_names(theorem, v) for v in engine_variants))
        guarded = {c for names in expectation.refuted_alone.values() for c in names}
        guarded |= set(expectation.unrefuted_conjuncts)  # each with its reason
        assert conjuncts - guarded == set(), f"{name}: no mutant refutes these alone"
        assert guarded - conjuncts == set(), f"{name}: refuted_alone names conjuncts the goal does not have"
        named += len(conjuncts)
    assert named >= 26  # at least the prefill-end, slot and restore theorems name theirs


# state_slot's goal, as a reviewer might weaken it or cut it down.
_RESUMED = "k >= 1, column == state_column(computed, cadence)"
_FRESH = '"a fresh request reads no column": arith.implies(k == 0, column == -1),'


def test_a_weakened_conjunct_no_longer_refuted_alone_fails_the_entry():
    weakened = Patch("proofs.catalog.prefill", "state_slot", _RESUMED, "k >= 1, column >= -1")
    with applied(weakened):
        entry = run_theorem(CATALOGUE["prefill-state-slot"], "mutant:slot-off-by-one", REFUTED)
    # The whole goal is still refuted (by the fresh request's conjunct), yet the entry fails.
    assert entry.verdict == REFUTED
    assert entry.conjuncts_alone == {"a resumed request reads the column written at its position": PROVED}
    assert not entry.ok


def test_a_deleted_conjunct_is_an_error_naming_it():
    resumed = '"a resumed request reads the column written at its position": Applies('
    conjunct = resumed + "\n" + " " * 16 + _RESUMED + ", edge=k == 1\n" + " " * 12 + "),"
    deleted = Patch("proofs.catalog.prefill", "state_slot", conjunct, "")
    with applied(deleted):
        entry = run_theorem(CATALOGUE["prefill-state-slot"], "mutant:slot-off-by-one", REFUTED)
    assert entry.verdict == REFUTED  # by the fresh request's conjunct
    assert entry.conjuncts_alone == {"a resumed request reads the column written at its position": ERROR}
    assert "no conjunct named 'a resumed request reads the column written at its position'" in entry.reason
    assert not entry.ok


def test_a_deleted_conjunct_its_only_sentinel_refuted_fails_the_entry():
    with applied(Patch("proofs.catalog.prefill", "state_slot", _FRESH, "")):
        entry = run_theorem(CATALOGUE["prefill-state-slot"], "mutant:fresh-reads-slot-zero", REFUTED)
    assert entry.verdict == PROVED and not entry.ok


def test_the_catalogue_as_it_is_passes_its_sentinels():
    entry = run_theorem(CATALOGUE["prefill-state-slot"], "mutant:slot-off-by-one", REFUTED)
    assert entry.ok and set(entry.conjuncts_alone.values()) == {REFUTED}


@pytest.mark.parametrize(
    "replacement, message",
    [
        ('refuted_alone = { no-such-kill = ["x"] }', "refuted_alone names 'no-such-kill', which kills does not list"),
        ("refuted_alone = { slot-off-by-one = [] }", "refuted_alone.slot-off-by-one must list conjunct names"),
    ],
)
def test_refuted_alone_is_checked_when_the_manifest_is_read(tmp_path, replacement, message):
    text = MANIFEST.read_text(encoding="utf-8")
    start = text.index("[theorems.prefill-state-slot]")
    line = text.index("refuted_alone", start)
    end = text.index("\n", line)
    broken = tmp_path / "manifest.toml"
    broken.write_text(text[:line] + replacement + text[end:], encoding="utf-8")
    with pytest.raises(ManifestError, match=message.replace(".", r"\.")):
        load_manifest(broken)
