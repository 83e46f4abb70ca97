"""The renderings of a result (proofs/report/), on synthetic results that hold every kind of verdict:
JUnit XML and SARIF validate against their schemas (vendored in tests/schemas/, no network), the
Markdown summary fits one screen, the HTML is one file with no external reference, and the run-to-run
diff names what changed."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import jsonschema
import pytest
import xmlschema

from proofs.report import FORMATS, ReportError, check_result, load_result, render
from proofs.report.diff import RLIMIT_NOISE, compare
from proofs.report.markdown import SUMMARY_MAX_LINES, render_report, render_summary
from proofs.report.seeds import brittleness
from proofs.run.result import is_ok

SCHEMAS = Path(__file__).parent / "schemas"
SPLIT_CEX = {
    "block": 2,
    "sched_block": 2,
    "hash_block": 2,
    "align": 2,
    "lookahead": 0,
    "max_scheduled": 1,
    "threshold": 0,
    "eagle_drop": True,
    "partial": False,
    "ckpt_blocks": False,
    "shared": True,
    "computed": 0,
    "requested": 5,
    "prompt": 3,
    "tokens": 5,
    "local_hit": 0,
    "external_hit": 0,
    "junction": 3,
}


def entry(theorem, variant, verdict, expected, **extra) -> dict:
    data = {
        "theorem": theorem,
        "variant": variant,
        "verdict": verdict,
        "expected": expected,
        "rlimit": 12_345,
        "seconds": 0.125,
        "hypotheses_used": ["block sizes positive"] if verdict == "PROVED" else [],
        "hypotheses": ["block sizes positive", "prompt within request"],
        "counterexample": None,
        "reason": "",
        "ablations": {},
        "reproduce": f"gridproof prove --theorem {theorem} --variant {variant} --rlimit 20000000",
        "subject": "split",
        "statement": f"{theorem}: a statement in words. Second sentence.",
        "tier": "ci",
        "source": "proofs/catalog/split.py:40",
    }
    data.update(extra)
    data["ok"] = is_ok(data)
    return data


def synthetic(entries: list[dict]) -> dict:
    return {
        "format": "gridproof-result/1",
        "z3_version": "5.4.1",
        "model_hash": "0" * 64,
        "selection": {"theorem": None, "variant": None, "tier": "ci", "rlimit": 20_000_000, "seed": None},
        "seconds": 12.5,
        "rlimit": sum(e["rlimit"] for e in entries),
        "entries": entries,
        "failures": sum(not is_ok(e) for e in entries),
    }


@pytest.fixture
def mixed() -> dict:
    """Every kind of outcome: proofs, an expected refutation with a counterexample, a killed mutant, and
    the failures (UNKNOWN, VACUOUS, ERROR, a verdict the manifest does not expect, an ablation that no
    longer refutes)."""
    return synthetic(
        [
            entry("split-default-equivalence", "baseline", "PROVED", "PROVED"),
            entry(
                "split-default-equivalence", "pr457", "PROVED", "PROVED", ablations={"block sizes positive": "REFUTED"}
            ),
            entry("split-default-equivalence", "pr457-guarded", "UNKNOWN", "PROVED", reason="goal: canceled"),
            entry(
                "split-default-equivalence",
                "mutant:eagle-backoff-dropped",
                "REFUTED",
                "REFUTED",
                counterexample=SPLIT_CEX,
            ),
            entry("split-bounds", "baseline", "REFUTED", "REFUTED", counterexample=SPLIT_CEX, reason="replayed"),
            entry("split-bounds", "pr457", "VACUOUS", "PROVED", reason="the hypotheses contradict each other"),
            entry("split-bounds", "pr457-guarded", "ERROR", "PROVED", reason="counterexample does not replay"),
            entry("prefill-state-slot", "baseline", "REFUTED", "PROVED", counterexample={"cadence": 1, "k": 1}),
            entry("prefill-state-slot", "pr457", "PROVED", "PROVED", ablations={"cadence positive": "UNKNOWN"}),
        ]
    )


FAILING = {
    ("split-default-equivalence", "pr457-guarded"),
    ("split-bounds", "pr457"),
    ("split-bounds", "pr457-guarded"),
    ("prefill-state-slot", "baseline"),
    ("prefill-state-slot", "pr457"),
}


# --- loading ----------------------------------------------------------------------------------------


def test_load_result_round_trip(tmp_path, mixed):
    path = tmp_path / "result.json"
    path.write_text(json.dumps(mixed))
    assert load_result(path) == mixed


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("not json", "not valid JSON at line 1, column 1: expecting value"),
        ('{"format": "gridproof-result/1", "entries": [', "not valid JSON at line 1, column 46"),
        ("[]", "expected a JSON object"),
        ('{"format": "other"}', 'format is "other"'),
        ("{}", "no format field"),
        ('{"format": "gridproof-result/1"}', "missing"),
    ],
)
def test_a_bad_result_file_is_one_line(tmp_path, text, says):
    path = tmp_path / "old.json"
    path.write_text(text)
    with pytest.raises(ReportError, match=says) as error:
        load_result(path)
    assert "\n" not in str(error.value)


def test_an_entry_without_a_verdict_is_refused(mixed):
    del mixed["entries"][0]["verdict"]
    with pytest.raises(ReportError, match=r"entries\[0\]: missing verdict"):
        check_result(mixed)


@pytest.mark.parametrize(
    ("path", "value", "says"),
    [
        (("entries", 0, "rlimit"), "many", "entries[0].rlimit: expected an integer, got 'many'"),
        (("entries", 0, "hypotheses_used"), None, "entries[0].hypotheses_used: expected a list, got null"),
        (("entries", 1, "counterexample"), [1], "entries[1].counterexample: expected an object, got a list"),
        (("selection",), "ci", "selection: expected an object, got 'ci'"),
    ],
)
def test_a_field_of_the_wrong_kind_is_named(mixed, path, value, says):
    holder = mixed
    for step in path[:-1]:
        holder = holder[step]
    holder[path[-1]] = value
    with pytest.raises(ReportError) as error:
        check_result(mixed, "old.json")
    assert str(error.value) == f"old.json: {says}"


# --- JUnit ------------------------------------------------------------------------------------------


def test_junit_validates_and_fails_every_undecided_or_unexpected_case(mixed):
    xml = render(mixed, "junit")
    schema = xmlschema.XMLSchema(str(SCHEMAS / "junit-10.xsd"))
    schema.validate(xml)
    cases = re.findall(r'<testcase classname="[^"]*" name="([^"]+)\[([^\]]+)\]"', xml)
    assert len(cases) == len(mixed["entries"])  # one test case per theorem and variant
    failed = set()
    for block in re.findall(r"<testcase .*?</testcase>", xml, flags=re.S):
        name, variant = re.search(r'name="([^"]+)\[([^\]]+)\]"', block).groups()
        if "<failure" in block:
            failed.add((name, variant))
    assert failed == FAILING
    assert f'failures="{len(FAILING)}"' in xml
    assert 'type="UNKNOWN"' in xml and 'type="VACUOUS"' in xml and 'type="ERROR"' in xml


# --- SARIF ------------------------------------------------------------------------------------------


def sarif_validator() -> jsonschema.Draft4Validator:
    schema = json.loads((SCHEMAS / "sarif-schema-2.1.0.json").read_text())
    return jsonschema.Draft4Validator(schema, format_checker=jsonschema.FormatChecker())


def test_sarif_validates_with_a_rule_per_theorem_located_at_the_formula(mixed):
    log = json.loads(render(mixed, "sarif"))
    sarif_validator().validate(log)
    run = log["runs"][0]
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == [
        "split-default-equivalence",
        "split-bounds",
        "prefill-state-slot",
    ]
    assert len(run["results"]) == len(mixed["entries"])
    for result in run["results"]:
        location = result["locations"][0]["physicalLocation"]
        assert location["artifactLocation"]["uri"] == "proofs/catalog/split.py"
        assert location["region"]["startLine"] == 40
    failing = {(r["ruleId"], r["properties"]["variant"]) for r in run["results"] if r["kind"] == "fail"}
    assert failing == FAILING
    assert all(r["level"] == "error" for r in run["results"] if r["kind"] == "fail")


def test_sarif_schema_is_the_official_one_and_rejects_a_broken_log():
    schema = json.loads((SCHEMAS / "sarif-schema-2.1.0.json").read_text())
    assert schema["id"].endswith("/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json")
    with pytest.raises(jsonschema.ValidationError):
        sarif_validator().validate({"version": "2.1.0", "runs": [{"results": []}]})  # a run needs its tool


# --- Markdown ---------------------------------------------------------------------------------------


def test_summary_lists_the_failures_and_fits_one_screen(mixed):
    summary = render_summary(mixed)
    assert len(summary.splitlines()) <= SUMMARY_MAX_LINES
    assert "5 failing" in summary
    assert "`split-bounds / pr457`: expected PROVED, got VACUOUS" in summary
    assert "**UNKNOWN** ✗ (expected PROVED)" in summary


def test_summary_fits_one_screen_however_large_the_run(mixed):
    big = copy.deepcopy(mixed)
    big["entries"] = [
        entry(f"theorem-{i}", variant, "UNKNOWN", "PROVED")
        for i in range(60)
        for variant in ("baseline", "pr457", "pr457-guarded")
    ]
    big["against"] = {
        "path": "old.json",
        "changes": [f"VERDICT theorem-{i} / baseline: PROVED -> UNKNOWN" for i in range(80)],
    }
    big["brittleness"] = {"summary": "5 seeds (1, 2, 3, 4, 5) besides the default: no verdict flip"}
    summary = render_summary(big)
    assert len(summary.splitlines()) <= SUMMARY_MAX_LINES
    assert "more" in summary  # what was cut says where the rest is


def test_report_marks_a_used_hypothesis_whose_deletion_check_did_not_decide(mixed):
    mixed["entries"][1]["hypotheses_unconfirmed"] = ["block sizes positive"]
    report = render_report(mixed)
    assert "| block sizes positive | **used** | **used?** | – |" in report
    assert "**used?** = kept, its deletion check undecided" in report


def test_report_shows_statement_hypotheses_verdicts_and_reproduce(mixed):
    report = render_report(mixed)
    assert "> split-default-equivalence: a statement in words. Second sentence." in report
    assert "| block sizes positive | **used** | **used** | – |" in report  # PROVED, PROVED, UNKNOWN
    assert "| prompt within request | unused | unused | – |" in report
    assert "| pr457-guarded | UNKNOWN | PROVED |" in report
    assert "gridproof prove --theorem split-bounds --variant pr457 --rlimit 20000000" in report
    assert "block = 2, sched_block = 2" in report  # the counterexample
    assert "dropping hypothesis 'cadence positive' gave UNKNOWN, expected REFUTED" in report
    assert "baseline: 26 chunks, publishes every 3,840 tokens, keeps 1 state, the last at 99,072" in report


# --- HTML -------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def html() -> str:
    result = synthetic(
        [
            entry("split-default-equivalence", "baseline", "PROVED", "PROVED"),
            entry("split-default-equivalence", "mutant:stop-at-start", "REFUTED", "REFUTED", counterexample=SPLIT_CEX),
            entry("prefill-state-slot", "baseline", "UNKNOWN", "PROVED", reason="goal: canceled"),
        ]
    )
    return render(result, "html")


def test_html_is_one_file_without_external_references(html):
    assert html.startswith("<!DOCTYPE html>")
    assert "<script" not in html.lower()
    assert "<link" not in html.lower() and "@import" not in html
    assert "<img" not in html.lower() and "<iframe" not in html.lower()
    references = re.findall(r"""(?:src|href|xlink:href)\s*=\s*["']([^"']*)["']""", html)
    references += re.findall(r"\burl\(\s*['\"]?([^)'\"]*)", html)  # CSS, and SVG clip paths
    assert references, "the drawings and the table of contents link within the file"
    assert all(r.startswith("#") for r in references), [r for r in references if not r.startswith("#")]


def test_html_draws_every_real_deployment_and_the_counterexample(html):
    from models.geometry import builtin_geometry_names

    for name in builtin_geometry_names():
        assert f'id="geometry-{name}"' in html
    assert html.count("<svg") == len(builtin_geometry_names()) + 1  # and the split counterexample


def test_html_tells_the_kimi_k3_story(html):
    kimi = html[html.index('id="geometry-kimi-k3-tp16-dcp16"') :]
    caption = kimi[kimi.index("<figcaption>") : kimi.index("</figcaption>")]
    # The GPU cache restores as much either way (partial hash hits); offload is where PR457 gains.
    assert (
        "baseline: 26 chunks, publishes every 3,840 tokens, keeps 1 state, the last at 99,072, restores 99,072"
        in caption
    )
    assert "(offload restores 0)" in caption and "(offload restores 86,016)" in caption
    assert "pr457: 26 chunks, publishes every 12,288 tokens, keeps 2 states" in caption


def test_html_marks_the_failure(html):
    assert "1 failing" in html
    assert "expected PROVED, got UNKNOWN" in html


def test_html_says_when_its_drawings_come_from_other_sources_than_the_run(html):
    assert "These drawings come from the model as it is now" in html  # the synthetic run's hash is 000...


# --- every format, from the CLI's point of view -----------------------------------------------------


@pytest.mark.parametrize("fmt", [f for f in FORMATS if f != "html"])
def test_every_format_renders_an_empty_run(fmt):
    text = render(synthetic([]), fmt)
    assert text.endswith("\n")


# --- run-to-run diff --------------------------------------------------------------------------------


def proved(theorem="prefill-state-slot", variant="baseline", **extra) -> dict:
    return entry(theorem, variant, "PROVED", "PROVED", **extra)


def test_diff_of_a_run_with_itself_is_empty(mixed):
    diff = compare(mixed, copy.deepcopy(mixed))
    assert diff.changes == [] and diff.notes == []


def test_diff_names_a_verdict_change():
    old, new = synthetic([proved()]), synthetic([entry("prefill-state-slot", "baseline", "REFUTED", "PROVED")])
    assert compare(old, new).changes == ["VERDICT prefill-state-slot / baseline: PROVED -> REFUTED"]


def test_diff_names_a_new_unknown():
    old = synthetic([proved()])
    new = synthetic(
        [entry("prefill-state-slot", "baseline", "UNKNOWN", "PROVED"), entry("x", "pr457", "VACUOUS", "PROVED")]
    )
    changes = compare(old, new).changes
    assert "UNKNOWN prefill-state-slot / baseline: PROVED -> UNKNOWN" in changes
    assert "UNKNOWN x / pr457: new obligation, VACUOUS (not in the old run)" in changes


def test_diff_names_a_proof_that_now_needs_an_extra_hypothesis():
    old = synthetic([proved(hypotheses_used=["cadence positive"])])
    new = synthetic([proved(hypotheses_used=["cadence positive", "fresh or at a published checkpoint"])])
    assert compare(old, new).changes == [
        "HYPOTHESIS prefill-state-slot / baseline: the proof now also needs 'fresh or at a published checkpoint'"
    ]


def test_diff_names_a_weakened_theorem_and_a_changed_manifest():
    old = synthetic([proved(hypotheses=["cadence positive"])])
    new = synthetic(
        [entry("prefill-state-slot", "baseline", "PROVED", "REFUTED", hypotheses=["cadence positive", "k = 0"])]
    )
    changes = compare(old, new).changes
    assert "EXPECTED prefill-state-slot / baseline: the manifest now expects REFUTED (was PROVED)" in changes
    assert "HYPOTHESIS prefill-state-slot / baseline: the theorem gained 'k = 0'" in changes


def test_diff_names_rlimit_growth_beyond_the_threshold_only():
    old = synthetic([proved(rlimit=1_000_000), proved(variant="pr457", rlimit=1_000_000)])
    new = synthetic([proved(rlimit=1_600_000), proved(variant="pr457", rlimit=1_400_000)])
    assert compare(old, new, rlimit_growth=50).changes == [
        "RLIMIT prefill-state-slot / baseline: 1,000,000 -> 1,600,000 (+60%, threshold 50%)"
    ]
    assert len(compare(old, new, rlimit_growth=30).changes) == 2
    tiny_old, tiny_new = synthetic([proved(rlimit=1_000)]), synthetic([proved(rlimit=1_000 + RLIMIT_NOISE)])
    assert compare(tiny_old, tiny_new).changes == []  # below the noise of the rlimit count


def test_diff_names_a_removed_obligation_and_notes_a_new_model():
    old = synthetic([proved(), proved(variant="pr457")])
    new = synthetic([proved()])
    new["model_hash"] = "1" * 64
    diff = compare(old, new)
    assert diff.changes == ["REMOVED prefill-state-slot / pr457: was PROVED, not in this run"]
    assert diff.notes == ["model sources changed: 000000000000 -> 111111111111"]


# --- seeds ------------------------------------------------------------------------------------------


def test_brittleness_reports_flips_and_the_rlimit_spread():
    base = [proved(rlimit=100), proved(variant="pr457", rlimit=100)]
    seeded = {
        1: [proved(rlimit=150), proved(variant="pr457", rlimit=100)],
        2: [proved(rlimit=50), entry("prefill-state-slot", "pr457", "UNKNOWN", "PROVED", rlimit=100)],
    }
    report = brittleness(base, seeded)
    first, second = report["entries"]
    assert (first["rlimit_min"], first["rlimit_max"], first["flipped"]) == (50, 150, False)
    assert first["rlimit_cv"] == pytest.approx(0.4082, abs=1e-4)
    assert second["flipped"] and second["rlimit_cv"] == 0
    assert report["flips"] == ["FLIP prefill-state-slot / pr457: PROVED by default, seed 2: UNKNOWN"]
    assert "1 verdict flip" in report["summary"]
