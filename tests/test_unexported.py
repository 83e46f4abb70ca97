"""A run that neither caches, exports nor confirms its queries (`gridproof
prove --no-cache`) skips writing the ones no check posed as written, and
decides exactly as a run that writes them."""

from __future__ import annotations

from proofs.run.prove import ProveRequest, run_catalogue

# A refutation the probe finds (no query posed as written), and a theorem
# whose case split has a case the hypotheses exclude.
THEOREMS = ("config-explicit-cadence-kept", "split-grid-landing")


def _decided(entry) -> tuple:
    return (
        entry.verdict,
        entry.counterexample,
        entry.hypotheses,
        entry.hypotheses_used,
        entry.hypotheses_unconfirmed,
        entry.reason,
    )


def test_unexported_run_decides_alike_and_writes_only_what_it_posed():
    for theorem in THEOREMS:
        _, written = run_catalogue(ProveRequest(theorem=theorem, jobs=1))
        _, unwritten = run_catalogue(ProveRequest(theorem=theorem, jobs=1, export=False))
        assert [_decided(e) for e in written] == [_decided(e) for e in unwritten]
        for full, lean in zip(written, unwritten, strict=True):
            assert full.queries, f"{theorem} / {full.variant} exports no query"
            lean_texts = {q.text for qs in lean.queries.values() for q in qs}
            assert lean_texts <= {q.text for qs in full.queries.values() for q in qs}


def test_probe_refutation_carries_its_query_only_when_exported():
    _, written = run_catalogue(ProveRequest(theorem="config-explicit-cadence-kept", variant="baseline", jobs=1))
    _, unwritten = run_catalogue(
        ProveRequest(theorem="config-explicit-cadence-kept", variant="baseline", jobs=1, export=False)
    )
    assert written[0].verdict == unwritten[0].verdict == "REFUTED"
    assert [q.answer for qs in written[0].queries.values() for q in qs] == ["sat"]
    assert unwritten[0].queries == {}
    assert unwritten[0].hypotheses == written[0].hypotheses
