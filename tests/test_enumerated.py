"""Obligations decided by enumeration (proofs/engine/enumerated.py) and the loop theorems that use them
(proofs/catalog/loops.py): the verdicts, a refutation's case, and the entry the runner makes."""

from __future__ import annotations

import dataclasses
import json

import pytest

from models.variants import VARIANTS
from proofs.catalog import CATALOGUE
from proofs.catalog.loops import SMALL
from proofs.cli import main
from proofs.engine.enumerated import Enumeration, Verdict, decide_enumeration, live_code_digest
from proofs.engine.solver import ERROR, PROVED, REFUTED, VACUOUS
from proofs.faults.handwritten import MUTANTS, in_effect
from proofs.faults.patch import Patch, applied
from proofs.records.domains import DOMAINS, smaller_than_recorded
from proofs.run.runner import claim_texts, run_theorem

BASELINE = VARIANTS["baseline"]


def _cases(_variant):
    return ({"n": n} for n in range(1, 6))


def test_proved_only_when_every_case_holds_and_one_reaches_the_property():
    holds = Enumeration("n in 1..5", _cases, lambda _v, c: Verdict(exercised=c["n"] == 5))
    decision = decide_enumeration(holds, BASELINE)
    assert (decision.verdict, decision.cases, decision.exercised) == (PROVED, 5, 1)
    never = Enumeration("n in 1..5", _cases, lambda _v, c: Verdict(exercised=False), "n = 6")
    decision = decide_enumeration(never, BASELINE)
    assert decision.verdict == VACUOUS and "n = 6" in decision.reason


def test_the_first_failing_case_refutes_and_a_raise_is_a_failure():
    fails = Enumeration("n in 1..5", _cases, lambda _v, c: Verdict("n is 3" if c["n"] == 3 else None))
    decision = decide_enumeration(fails, BASELINE)
    assert (decision.verdict, decision.counterexample, decision.reason) == (REFUTED, {"n": 3}, "n is 3")

    def raises(_v, case):
        return Verdict() if case["n"] < 4 else Verdict(str(1 // (case["n"] - 4)))

    decision = decide_enumeration(Enumeration("n in 1..5", _cases, raises), BASELINE)
    assert decision.verdict == REFUTED and decision.counterexample == {"n": 4}
    assert decision.reason == "the engine model raised ZeroDivisionError: integer division or modulo by zero"


def test_a_failure_that_does_not_fail_again_is_an_error():
    answers = iter([Verdict("first"), Verdict()])
    flaky = Enumeration("n = 1", lambda _v: [{"n": 1}], lambda _v, _c: next(answers))
    assert decide_enumeration(flaky, BASELINE).verdict == ERROR


def test_each_hand_mutant_of_the_loops_is_refuted_with_a_case_that_fails_again():
    expected = {
        "prefill-loop-past-end": "prefill-run-is-step-chain",
        "bounded-run-one-step-more": "prefill-run-bounds",
        "repeat-up-to-the-end": "prefill-condensed-is-explicit",
        "repeat-column-not-shifted": "prefill-condensed-is-explicit",
        "grid-period-without-offload": "grid-period-shift",
        "recurrent-find-below-the-largest": "gpu-restore-safe-complete",
        "hashing-horizon-rounds-up": "gpu-restore-holds-its-state",
        "offload-eagle-chunk-kept": "offload-restore-safe",
    }
    for mutant, theorem in expected.items():
        entry = run_theorem(CATALOGUE[theorem], f"mutant:{mutant}", REFUTED)
        assert entry.verdict == REFUTED and entry.ok, (mutant, entry.reason)
        with in_effect(f"mutant:{mutant}") as variant:
            again = CATALOGUE[theorem].enumeration.check(variant, entry.counterexample)
        assert again.failure == entry.reason, mutant
    for mutant, theorem in expected.items():  # and the engine variants pass where the mutants fail
        assert MUTANTS[mutant].base.name == "pr457-guarded"
        assert run_theorem(CATALOGUE[theorem], "pr457-guarded", PROVED).verdict == PROVED, theorem


def test_an_enumerated_entry_names_its_domain_and_poses_no_query():
    entry = run_theorem(CATALOGUE["grid-period-shift"], "pr457-guarded", PROVED)
    assert entry.verdict == PROVED and entry.rlimit == 0 and not entry.queries
    assert entry.enumeration["domain"] == CATALOGUE["grid-period-shift"].enumeration.domain
    assert entry.enumeration["cases"] == len(SMALL) and entry.source.startswith("proofs/catalog/loops.py:")


def test_the_claim_text_follows_the_live_code_so_a_mutant_is_another_cache_key():
    before = live_code_digest()
    plain = claim_texts(CATALOGUE["grid-period-shift"], "pr457-guarded")
    patched = claim_texts(CATALOGUE["grid-period-shift"], "mutant:grid-period-without-offload")
    assert live_code_digest() == before and plain != patched


def test_prove_reports_and_certifies_an_enumerated_refutation(tmp_path, capsys):
    argv = [
        "prove",
        "--theorem",
        "gpu-restore-safe-complete",
        "--variant",
        "mutant:recurrent-find-below-the-largest",
        "--json",
        "--report-dir",
        str(tmp_path),
    ]
    assert main(argv) == 0
    entry = json.loads(capsys.readouterr().out)["entries"][0]
    assert entry["verdict"] == "REFUTED" and entry["counterexample"]["geometry"] == "g8-recurrent16"
    certificate = json.loads(
        (tmp_path / "enumerated" / f"{entry['theorem']}--mutant-recurrent-find-below-the-largest.json").read_text()
    )
    assert certificate["decided_by"] == "enumeration, not an SMT query"
    assert certificate["rerun"] == entry["reproduce"] and certificate["domain"] == entry["enumeration"]["domain"]
    assert "Bounded" in (tmp_path / "report.md").read_text()


def test_mining_an_enumerated_theorem_is_refused_in_one_line(tmp_path, capsys):
    argv = ["mine", "grid-period-shift", "--variant", "mutant:grid-period-without-offload", "--out", str(tmp_path)]
    assert main([*argv, "--no-vllm"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "decided by enumeration, not by Z3" in err


def test_the_claim_text_follows_the_catalogue_check_as_well_as_the_engine(monkeypatch):
    theorem = CATALOGUE["grid-period-shift"]
    before = claim_texts(theorem, "pr457-guarded")
    # A check function changed alone (its code, not the engine's): another key.
    monkeypatch.setattr(theorem.enumeration.check, "__code__", (lambda variant, case: None).__code__)
    assert claim_texts(theorem, "pr457-guarded") != before


def test_a_domain_smaller_than_recorded_is_vacuous(monkeypatch):
    theorem = CATALOGUE["gpu-restore-safe-complete"]
    with in_effect("baseline") as variant:
        whole = decide_enumeration(theorem.enumeration, variant)
    assert whole.verdict == PROVED and smaller_than_recorded(theorem.name, "baseline", whole) is None
    made = whole.checks
    assert made["on the hit alignment"] > 0 and made["a later request: diverge"] > 0

    fewer_cases = dataclasses.replace(whole, cases=whole.cases - 1)
    verdict, reason = smaller_than_recorded(theorem.name, "baseline", fewer_cases)
    assert verdict == VACUOUS and f"{whole.cases - 1} cases decided, {whole.cases} recorded" in reason

    one_kind_less = dataclasses.replace(
        whole, checks={k: v for k, v in made.items() if k != "a later request: diverge"}
    )
    verdict, reason = smaller_than_recorded(theorem.name, "baseline", one_kind_less)
    assert verdict == VACUOUS and "'a later request: diverge' 0 times, recorded" in reason

    made_once_less = dataclasses.replace(whole, checks={**made, "on the hit alignment": 1})
    verdict, reason = smaller_than_recorded(theorem.name, "baseline", made_once_less)
    assert verdict == VACUOUS and "'on the hit alignment' 1 times, recorded" in reason

    more = dataclasses.replace(whole, cases=whole.cases + 1, checks={**made, "a new check": 3})
    assert smaller_than_recorded(theorem.name, "baseline", more) is None

    record = DOMAINS.theorems()
    monkeypatch.setattr(DOMAINS, "theorems", lambda: {k: v for k, v in record.items() if k != theorem.name})
    verdict, reason = smaller_than_recorded(theorem.name, "baseline", whole)
    assert verdict == ERROR and f"{DOMAINS.command} --theorem {theorem.name}" in reason


def test_a_later_request_left_out_of_the_restore_cases_fails_prove():
    # Extensions by one token dropped: the statement, built from the same code, would still read true, and
    # the run still proves; only the recorded checks notice.
    dropped = Patch(
        "proofs.catalog.restore",
        "_later_requests",
        'found += [("extend", prompt + 1, prompt + 1 + extra) for extra in sorted({1, h, s})]',
        'found += [("extend", prompt + 1, prompt + 1 + extra) for extra in sorted({h, s})]',
    )
    with applied(dropped):
        entry = run_theorem(CATALOGUE["gpu-restore-safe-complete"], "baseline", PROVED)
    assert entry.verdict == VACUOUS and not entry.ok
    assert "'a later request: extend'" in entry.reason


# A check left out of a case function, or made on fewer values, still proves; the recorded counts notice.
WEAKENED_CHECKS = {
    "a field no longer compared": (
        "prefill-run-is-step-chain",
        Patch(
            "proofs.catalog.loops",
            "chain_of_steps",
            """("requested", chunk.requested, step.requested),""",
            "",
        ),
        "'requested' 0 times",
    ),
    "a refusal no longer tried": (
        "prefill-run-bounds",
        Patch("proofs.catalog.loops", "run_bounds", "for bad in ([0], [budgets[0], -1], []):", "for bad in ([0],):"),
        "'a budget below 1, or none, refused'",
    ),
    "a bound of the restore no longer checked": (
        "gpu-restore-safe-complete",
        Patch(
            "proofs.catalog.restore",
            "_unsafe_or_incomplete",
            'if checks.fails("on the hit alignment", h % cached.layout.alignment == 0):',
            "if False:",
        ),
        "'on the hit alignment' 0 times",
    ),
    "the stall no longer compared": (
        "prefill-condensed-is-explicit",
        Patch(
            "proofs.catalog.loops",
            "condensed_spells_explicit",
            """checks.differ("steps", fast.steps, len(slow.chunks)) or checks.differ(
        "stalled_at", fast.stalled_at, slow.stalled_at
    )""",
            """checks.differ("steps", fast.steps, len(slow.chunks))""",
        ),
        "'stalled_at' 0 times",
    ),
    "the refusal's message unchecked": (
        "geometry-refuses-unusable",
        Patch(
            "proofs.catalog.geometry",
            "refuses_what_no_engine_can_use",
            """if checks.fails("the refusal names the field", message.startswith(f"{refused}:")):""",
            "if False:",
        ),
        "'the refusal names the field' 0 times",
    ),
}


@pytest.mark.parametrize("weakening", sorted(WEAKENED_CHECKS))
def test_a_check_left_out_of_an_enumerated_theorem_fails_prove(weakening):
    theorem, patch, named = WEAKENED_CHECKS[weakening]
    variant = "pr457-guarded"
    assert run_theorem(CATALOGUE[theorem], variant, PROVED).verdict == PROVED
    with applied(patch):
        entry = run_theorem(CATALOGUE[theorem], variant, PROVED)
    assert entry.verdict == VACUOUS and not entry.ok, entry.reason
    assert named in entry.reason and "fewer times than recorded" in entry.reason
