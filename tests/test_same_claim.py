"""A variant takes the entry of one decided before it in the run when it
agrees with it on every field of the variant that decision read, or else
when its claims read to the same queries; a variant whose claims differ, or
whose expected verdict differs, is decided."""

from __future__ import annotations

from proofs.catalog import CATALOGUE
from proofs.run.prove import ProveRequest, run_catalogue
from proofs.run.runner import ChoicesRead, claim_key, same_choices

THEOREM = "config-explicit-cadence-kept"  # baseline refutes it; pr457 and pr457-guarded read no guard here


def test_the_key_tells_apart_what_the_claims_tell_apart():
    theorem = CATALOGUE[THEOREM]
    pr457, guarded = (claim_key(theorem, v, "PROVED", 20_000_000, None) for v in ("pr457", "pr457-guarded"))
    assert pr457 == guarded
    assert claim_key(theorem, "baseline", "PROVED", 20_000_000, None) != pr457
    assert claim_key(theorem, "pr457", "REFUTED", 20_000_000, None) != pr457
    assert claim_key(theorem, "pr457", "PROVED", 20_000_000, 1) != pr457


def test_only_a_variant_with_the_same_claims_takes_an_entry():
    _, entries = run_catalogue(ProveRequest(theorem=THEOREM, jobs=1, export=False))
    by_variant = {e.variant: e for e in entries}
    assert by_variant["baseline"].verdict == "REFUTED" and by_variant["baseline"].same_claim_as == ""
    assert by_variant["pr457"].same_claim_as == "" and by_variant["pr457"].rlimit > 0
    twin = by_variant["pr457-guarded"]
    assert twin.same_claim_as == "pr457" and twin.rlimit == 0
    assert twin.reproduce.endswith(f"--theorem {THEOREM} --variant pr457-guarded --rlimit 20000000")
    for field in ("verdict", "hypotheses", "hypotheses_used", "hypotheses_unconfirmed", "counterexample"):
        assert getattr(twin, field) == getattr(by_variant["pr457"], field)
    _, alone = run_catalogue(ProveRequest(theorem=THEOREM, variant="pr457-guarded", jobs=1, export=False))
    assert alone[0].same_claim_as == ""
    for field in ("verdict", "hypotheses", "hypotheses_used", "hypotheses_unconfirmed", "counterexample"):
        assert getattr(alone[0], field) == getattr(twin, field)


def test_a_variant_that_agrees_on_every_field_the_decision_read_takes_the_entry_unread(monkeypatch):
    # prefill-state-slot reads no field of the variant: pr457 and
    # pr457-guarded take baseline's entry without their claims being read.
    import proofs.run.prove

    def unread(*args):
        raise AssertionError("claims read for a twin the fields already tell")

    monkeypatch.setattr(proofs.run.prove, "claim_key", unread)
    _, entries = run_catalogue(
        ProveRequest(theorem="prefill-state-slot", variant="baseline,pr457,pr457-guarded", jobs=1)
    )
    baseline, pr457, guarded = entries
    assert baseline.choices_read == frozenset() and baseline.same_claim_as == ""
    assert pr457.same_claim_as == guarded.same_claim_as == "baseline"


def test_a_field_read_with_another_value_falls_back_to_the_claims():
    # config-physical-unchanged reads keeps_explicit_cadence, on which
    # baseline and pr457 differ; their claims still read to the same queries.
    _, entries = run_catalogue(ProveRequest(theorem="config-physical-unchanged", variant="baseline,pr457", jobs=1))
    baseline, pr457 = entries
    assert "keeps_explicit_cadence" in baseline.choices_read
    assert not same_choices(baseline.choices_read, "baseline", "pr457")
    assert pr457.same_claim_as == "baseline"


def test_an_expected_refutation_is_decided_without_reading_claims(monkeypatch):
    # prefill-published-on-target-boundaries: baseline and pr457 both
    # expect REFUTED and read fields on which they differ; pr457 is decided
    # (a probe), not compared by its claims' text.
    import proofs.run.prove

    def unread(*args):
        raise AssertionError("claims read to find a twin of an expected refutation")

    monkeypatch.setattr(proofs.run.prove, "claim_key", unread)
    theorem = "prefill-published-on-target-boundaries"
    _, entries = run_catalogue(ProveRequest(theorem=theorem, variant="baseline,pr457", jobs=1, export=False))
    assert [(e.verdict, e.same_claim_as) for e in entries] == [("REFUTED", ""), ("REFUTED", "")]


def test_the_fields_read_are_recorded_however_they_are_read():
    from models.variants import BASELINE

    choices = ChoicesRead(BASELINE)
    assert choices.guarded is False and choices.read == {"guarded"}
    assert same_choices(frozenset(choices.read), "baseline", "pr457")
    assert not same_choices(frozenset(choices.read), "baseline", "pr457-guarded")
    assert not same_choices(frozenset(), "baseline", "mutant:slot-off-by-one")
    assert getattr(choices, "__deepcopy__", None) is None
    assert not same_choices(frozenset(choices.read), "baseline", "pr457")
    repr(choices)
    assert "name" in choices.read and not same_choices(frozenset(choices.read), "baseline", "pr457")


def test_an_enumerated_entry_is_taken_by_a_variant_that_agrees_on_what_its_cases_read():
    """How check reads --kv-cache-dtype is a matter of resolution, which does
    not read the guard: pr457-guarded takes pr457's entry, cases and all;
    baseline, which resolves an explicit --mamba-block-size otherwise, is
    decided. (matches-recorded-vllm no longer serves: its prompt-budget rows
    run a plan, and a plan reads the guard.)"""
    _, entries = run_catalogue(
        ProveRequest(theorem="check-reads-the-kv-cache-dtype", variant="baseline,pr457,pr457-guarded", jobs=1)
    )
    by_variant = {e.variant: e for e in entries}
    assert by_variant["pr457"].same_claim_as == "" and by_variant["baseline"].same_claim_as == ""
    twin = by_variant["pr457-guarded"]
    assert twin.same_claim_as == "pr457" and twin.verdict == "PROVED"
    assert twin.enumeration == by_variant["pr457"].enumeration and twin.enumeration["cases"] > 0
    assert "guarded" not in by_variant["pr457"].choices_read


def test_a_task_reads_each_variants_claim_texts_once_for_its_cache_key_and_its_twins(monkeypatch, tmp_path):
    from proofs.run import runner

    reads = []
    real = runner._claim_texts
    monkeypatch.setattr(runner, "_claim_texts", lambda theorem, name: reads.append(name) or real(theorem, name))
    run_catalogue(ProveRequest(theorem="config-physical-unchanged", variant="baseline,pr457", cache=tmp_path))
    # The cache key and the twin key of pr457 (and the twin key of baseline
    # it is compared with) share one reading each.
    assert sorted(reads) == ["baseline", "pr457"]
    theorem = CATALOGUE["config-physical-unchanged"]
    reads.clear()
    runner.claim_texts(theorem, "baseline")
    runner.claim_texts(theorem, "baseline")
    assert reads == ["baseline", "baseline"]  # outside a task, every call reads
    with runner.claim_texts_kept():
        first = runner.claim_texts(theorem, "baseline")
        first.append("changed by the caller")
        assert runner.claim_texts(theorem, "baseline") == first[:-1]
    assert reads == ["baseline"] * 3
