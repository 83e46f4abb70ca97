"""The hypotheses a proof reports are a function of its claim and the solver's
options: the same whether the catalogue is decided in one process (--jobs 1)
or shared among workers (--jobs 2), where a theorem is decided after
whichever tasks its worker happened to take before it."""

from __future__ import annotations

import pytest

from proofs.run.prove import ProveRequest, run_catalogue

pytestmark = pytest.mark.slow  # the ci tier at one job and at two

# Every pr457-guarded entry of the ci tier: prefill-step-slots among them, with
# deletion checks left unconfirmed under their cap (the kind of entry whose
# hypotheses once moved with the process's history: 32 or 33 used, three
# different sets in eight runs).
SELECTION = {"variant": "pr457-guarded", "tier": "ci"}


def _hypotheses(jobs: int) -> dict[tuple[str, str], tuple]:
    result, _ = run_catalogue(ProveRequest(**SELECTION, jobs=jobs, cache=None, export=False))
    return {
        (e["theorem"], e["variant"]): (
            e["verdict"],
            e["hypotheses_used"],
            e["hypotheses_unconfirmed"],
            e["hypotheses"],
            e["rlimit"],
        )
        for e in result["entries"]
    }


def test_every_entry_reports_the_same_hypotheses_at_one_job_and_at_two():
    one, two = _hypotheses(1), _hypotheses(2)
    assert one[("prefill-step-slots", "pr457-guarded")][2], (
        "prefill-step-slots leaves no deletion check unconfirmed under its cap any more: select another entry that does"
    )
    assert one.keys() == two.keys()
    differ = {k: (one[k], two[k]) for k in one if one[k][:4] != two[k][:4]}
    assert not differ
    # The budget spent too: the very same search, not only the same answer.
    assert {k: v[4] for k, v in one.items()} == {k: v[4] for k, v in two.items()}
