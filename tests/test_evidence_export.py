"""The ci tier exported as standard SMT-LIB: a file for every entry and every
case, each answered by Z3 (through the Python API, as `z3 FILE` answers) as
its verdict says, and by cvc5, when installed, never the other way."""

from __future__ import annotations

import dataclasses
import importlib.util
import re

import pytest
import z3

from models import arith
from proofs.engine.enumerated import write_certificates
from proofs.engine.lemmas import validity_queries
from proofs.report import confirm as confirm_module
from proofs.report.confirm import (
    AGREES,
    DISAGREES,
    ENUMERATED,
    MODEL_CHECK,
    agreement,
    answer_cvc5,
    answer_z3,
    confirm,
    decide_cvc5,
    render,
)
from proofs.report.smt2 import CVC5_CONFIGURATIONS, exported, write_smt2
from proofs.run.prove import ProveRequest, run_catalogue

pytestmark = pytest.mark.slow  # the ci tier exported and re-decided by cvc5 (about 2 minutes)

HAS_CVC5 = importlib.util.find_spec("cvc5") is not None
LCP_OFF_BY_ONE = "mutant:lcp-off-by-one"


@pytest.fixture(scope="module")
def ci_tier():
    _, entries = run_catalogue(ProveRequest(tier="ci", jobs=2))
    return entries


@pytest.fixture(scope="module")
def exported_dir(ci_tier, tmp_path_factory):
    directory = tmp_path_factory.mktemp("smt2")
    write_smt2(ci_tier, directory)
    return directory


def test_every_entry_and_every_case_has_a_file(ci_tier, exported_dir):
    files = list(exported(ci_tier))
    posed = [e for e in ci_tier if not e.enumeration]  # an enumerated entry poses no query (below)
    assert {(e.theorem, e.variant) for e, *_ in files} == {(e.theorem, e.variant) for e in posed}
    assert len({name for *_, name in files}) == len(files)  # no case overwrites another
    for *_, name in files:
        assert (exported_dir / name).is_file()
    for entry in posed:
        answers = {q.answer for queries in entry.queries.values() for q in queries}
        assert answers == {"unsat"} if entry.verdict == "PROVED" else "sat" in answers, (entry.theorem, entry.variant)
    split = [q for e, _, q, _ in files if q.case and e.verdict == "PROVED"]
    assert split and len({q.case for q in split}) >= 2  # the cases of a split, not only the first
    assert any(q.answer == "sat" for *_, q, _ in files)  # refutations exported too


def test_the_files_are_standard_smtlib_with_the_z3_options_apart(exported_dir):
    for path in exported_dir.glob("*.smt2"):
        text = path.read_text()
        if path.name.startswith("z3-options-"):
            assert all(line.startswith(("(set-option", ";")) for line in text.splitlines())
            continue
        body = "".join(line + "\n" for line in text.splitlines() if not line.startswith(";"))
        assert body.startswith("(set-info :smt-lib-version 2.6)\n(set-logic QF_NIA)\n"), path.name
        assert body.endswith("(check-sat)\n(exit)\n") and body.count("(check-sat") == 1, path.name
        assert "set-option" not in body and "check-sat-using" not in body, path.name


def test_z3_answers_every_file_as_its_verdict_says(exported_dir):
    answered = 0
    for path in sorted(exported_dir.glob("*.smt2")):
        text = path.read_text()
        if path.name.startswith("z3-options-"):
            continue
        expected = re.search(r"\(set-info :status (sat|unsat)\)", text).group(1)
        header = re.search(r"cat (z3-options-\w+\.smt2)", text)
        options = (exported_dir / header.group(1)).read_text() if header else ""
        assert answer_z3(text, options, rlimit=100_000_000) == expected, path.name
        answered += 1
    assert answered >= 80


@pytest.mark.skipif(not HAS_CVC5, reason="cvc5 is not installed (pip install cvc5)")
def test_cvc5_never_disagrees_and_a_flipped_answer_is_caught(ci_tier):
    report = confirm(ci_tier, rlimit=100_000, jobs=2)
    assert report["counts"][DISAGREES] == 0
    assert report["counts"][AGREES] >= 40
    # The same entries with one proof's answer recorded the wrong way round.
    entry = next(
        e for e in ci_tier if e.verdict == "PROVED" and e.queries and answer_cvc5(_first(e).text, 100_000) == "unsat"
    )
    obligation, queries = next(iter(entry.queries.items()))
    flipped = dataclasses.replace(entry, queries={obligation: [dataclasses.replace(queries[0], answer="sat")]})
    report = confirm([flipped], rlimit=100_000)
    assert report["entries"][0]["agreement"] == DISAGREES


@pytest.mark.skipif(not HAS_CVC5, reason="cvc5 is not installed (pip install cvc5)")
def test_a_query_cvc5s_defaults_leave_unknown_is_posed_under_the_next_configuration():
    # b < a and d > 0 give b*d + d <= a*d: cvc5's defaults answer unknown,
    # without branch and bound's rounding it is unsat.
    text = validity_queries()["multiplication-monotone"]
    assert answer_cvc5(text) == "unknown"
    assert decide_cvc5(text) == ("unsat", "--arith-brab=false")
    # A query every configuration leaves unknown within its budget stays unknown.
    assert decide_cvc5(text, rlimit=1) == ("unknown", "")
    report = {
        "solver": "cvc5",
        "rlimit": 1,
        "queries": 1,
        "counts": {AGREES: 1, DISAGREES: 0, "unknown": 0, ENUMERATED: 0},
        "entries": [
            {
                "entry": "lemma family multiplication-monotone",
                "agreement": AGREES,
                "files": [{"file": "f", "expected": "unsat", "answer": "unsat", "options": "--arith-brab=false"}],
            }
        ],
    }
    assert render(report)[-1] == "queries the defaults left unknown, answered: 1 under cvc5 --arith-brab=false"
    # An answer unlike Z3's names the configuration that gave it.
    report["entries"][0].update(agreement=DISAGREES)
    report["entries"][0]["files"][0].update(answer="sat")
    assert "f: sat under cvc5 --arith-brab=false (z3: unsat)" in render(report)[0]


@pytest.mark.skipif(not HAS_CVC5, reason="cvc5 is not installed (pip install cvc5)")
def test_a_sat_query_no_configuration_decides_is_confirmed_by_checking_z3s_model(ci_tier, monkeypatch):
    # x*x*y = 12 with x > 1: within 1,000 units no configuration decides it; Z3's model, checked, is sat.
    small = "(set-logic QF_NIA)(declare-fun x () Int)(declare-fun y () Int)"
    small += "(assert (= (* x x y) 12))(assert (> x 1))(check-sat)"
    assert all(answer_cvc5(small, 1_000, configuration) == "unknown" for configuration in CVC5_CONFIGURATIONS)
    assert decide_cvc5(small, 1_000, expected="sat") == ("sat", MODEL_CHECK)
    assert decide_cvc5(small, 1_000, expected="unsat") == ("unknown", "")  # only a sat answer has a model to check
    # A mutant's counterexample query that stays unknown within the budget of --confirm cvc5.
    entry = next(e for e in ci_tier if (e.theorem, e.variant) == ("split-default-equivalence", LCP_OFF_BY_ONE))
    text = _first(entry).text
    assert answer_cvc5(text, 50_000) == "unknown"
    assert decide_cvc5(text, 50_000, expected="sat") == ("sat", MODEL_CHECK)
    # A model that is none (Z3 wrong) is a disagreement, not a confirmation.
    wrong = small.replace("(check-sat)", "(assert (= x 2))(assert (= y 2))(check-sat)")
    monkeypatch.setattr(confirm_module, "with_z3_model", lambda _text: wrong)
    assert decide_cvc5(small, 1_000, expected="sat") == ("unsat", MODEL_CHECK)
    assert agreement("sat", "unsat") == DISAGREES
    files = [{"file": "f", "expected": "sat", "answer": "unsat", "options": MODEL_CHECK}]
    report = {
        "solver": "cvc5",
        "rlimit": 1_000,
        "queries": 1,
        "counts": {AGREES: 0, DISAGREES: 1, "unknown": 0, ENUMERATED: 0},
        "entries": [{"entry": "t / v", "agreement": DISAGREES, "files": files}],
    }
    lines = render(report)
    assert "f: unsat by checking Z3's model (z3: sat)" in lines[0]
    assert lines[-1] == "queries the defaults left unknown, answered: 1 by checking Z3's model"


def _first(entry):
    return next(iter(entry.queries.values()))[0]


def test_each_lemma_family_is_valid_and_its_check_would_notice_a_false_lemma(monkeypatch):
    for family, text in validity_queries().items():
        assert answer_z3(text) == "unsat", family
        if HAS_CVC5:
            assert decide_cvc5(text)[0] == "unsat", family
    # One lemma of the monotone family's shape, a step too strong: a*d + 2*d <= b*d.
    real = arith.SymbolicContext.definitions

    def with_a_false_lemma(context):
        definitions = real.fget(context)
        a, b, d = z3.Ints("a b d", definitions[0].ctx)  # in the context the pattern was read in
        return [*definitions, z3.Implies(z3.And(d > 0, a < b), a * d + 2 * d <= b * d)]

    monkeypatch.setattr(arith.SymbolicContext, "definitions", property(with_a_false_lemma))
    assert answer_z3(validity_queries()["multiplication-monotone"]) == "sat"


def test_an_enumerated_entry_gets_a_certificate_and_is_never_an_agreement(ci_tier, tmp_path):
    enumerated = [e for e in ci_tier if e.enumeration]
    assert enumerated and all(not e.queries for e in enumerated)
    written = write_certificates(ci_tier, tmp_path)
    assert len(written) == 2 * len(enumerated)
    entry = enumerated[0]
    stem = f"{entry.theorem}--{entry.variant.replace(':', '-')}"
    text = (tmp_path / f"{stem}.txt").read_text()
    assert "decided by enumeration, not an SMT query" in text and entry.enumeration["domain"] in text
    assert f"decide again: {entry.reproduce}" in text
    report = confirm(enumerated, rlimit=1) if HAS_CVC5 else None
    if report is not None:
        assert report["counts"][ENUMERATED] == len(enumerated) and report["counts"][AGREES] <= len(validity_queries())
