"""A variant whose claims read to the same queries as a variant decided
before it in the run takes that entry; a variant whose claims differ, or
whose expected verdict differs, is decided."""

from __future__ import annotations

from proofs.catalog import CATALOGUE
from proofs.prove import run_catalogue
from proofs.runner import claim_key

THEOREM = "config-explicit-cadence-kept"  # baseline refutes it; pr457 and pr457-guarded read no guard here


def test_the_key_tells_apart_what_the_claims_tell_apart():
    theorem = CATALOGUE[THEOREM]
    pr457, guarded = (claim_key(theorem, v, "PROVED", 20_000_000, None) for v in ("pr457", "pr457-guarded"))
    assert pr457 == guarded
    assert claim_key(theorem, "baseline", "PROVED", 20_000_000, None) != pr457
    assert claim_key(theorem, "pr457", "REFUTED", 20_000_000, None) != pr457
    assert claim_key(theorem, "pr457", "PROVED", 20_000_000, 1) != pr457


def test_only_a_variant_with_the_same_claims_takes_an_entry():
    _, entries = run_catalogue(theorem=THEOREM, jobs=1, export=False)
    by_variant = {e.variant: e for e in entries}
    assert by_variant["baseline"].verdict == "REFUTED" and by_variant["baseline"].same_claim_as == ""
    assert by_variant["pr457"].same_claim_as == "" and by_variant["pr457"].rlimit > 0
    twin = by_variant["pr457-guarded"]
    assert twin.same_claim_as == "pr457" and twin.rlimit == 0
    assert twin.reproduce.endswith(f"--theorem {THEOREM} --variant pr457-guarded --rlimit 20000000")
    for field in ("verdict", "hypotheses", "hypotheses_used", "hypotheses_unconfirmed", "counterexample"):
        assert getattr(twin, field) == getattr(by_variant["pr457"], field)
    _, alone = run_catalogue(theorem=THEOREM, variant="pr457-guarded", jobs=1, export=False)
    assert alone[0].same_claim_as == ""
    for field in ("verdict", "hypotheses", "hypotheses_used", "hypotheses_unconfirmed", "counterexample"):
        assert getattr(alone[0], field) == getattr(twin, field)
