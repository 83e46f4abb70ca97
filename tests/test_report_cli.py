"""`gridproof prove --report-dir/--against/--seeds` and `gridproof report`, end to end on one small
theorem (prefill-state-slot: four obligations, well under a second)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import xmlschema

from proofs.cli import main
from proofs.report.confirm import answer_z3
from proofs.report.smt2 import file_name

THEOREM = "prefill-state-slot"
SCHEMAS = Path(__file__).parent / "schemas"


@pytest.fixture(scope="module")
def report_dir(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("report")
    assert main(["prove", "--theorem", THEOREM, "--report-dir", str(directory)]) == 0
    return directory


@pytest.fixture(scope="module")
def result(report_dir) -> dict:
    return json.loads((report_dir / "result.json").read_text())


def test_report_dir_holds_every_rendering(report_dir):
    names = {p.name for p in report_dir.iterdir()}
    assert {"result.json", "summary.md", "report.md", "report.html", "junit.xml", "results.sarif", "smt2"} <= names
    assert len((report_dir / "summary.md").read_text().splitlines()) <= 40
    xmlschema.XMLSchema(str(SCHEMAS / "junit-10.xsd")).validate(str(report_dir / "junit.xml"))
    schema = json.loads((SCHEMAS / "sarif-schema-2.1.0.json").read_text())
    sarif = json.loads((report_dir / "results.sarif").read_text())
    jsonschema.Draft4Validator(schema, format_checker=jsonschema.FormatChecker()).validate(sarif)
    location = sarif["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
    source = Path(__file__).parent.parent / location["artifactLocation"]["uri"]
    assert source.is_file()
    line = source.read_text().splitlines()[location["region"]["startLine"] - 1]
    assert line.lstrip().startswith(("def ", "@", "lambda")) or "lambda" in line, line  # the formula


def test_report_html_of_a_live_run_draws_from_its_own_sources(report_dir):
    html = (report_dir / "report.html").read_text()
    assert html.count("<svg") >= 5  # the built-in deployments
    assert "These drawings come from the model as it is now" not in html


def test_each_smt2_file_rechecks_to_the_verdict(report_dir, result):
    files = sorted((report_dir / "smt2").glob(f"{THEOREM}.*.smt2"))
    every_entry = {file_name(THEOREM, e["variant"], "main") for e in result["entries"]}
    assert every_entry <= {p.name for p in files}
    for path in files:
        text = path.read_text()
        expected = re.search(r"\(set-info :status (sat|unsat)\)", text).group(1)
        options = (report_dir / "smt2" / re.search(r"cat (z3-options-\w+\.smt2)", text).group(1)).read_text()
        assert answer_z3(text, options) == expected, path.name


def test_report_renders_a_saved_result_in_every_format(report_dir, tmp_path, capsys):
    saved = report_dir / "result.json"
    for fmt, marker in [
        ("md", "# gridproof"),
        ("md-summary", "### ✅"),
        ("junit", "<testsuites"),
        ("sarif", '"2.1.0"'),
    ]:
        assert main(["report", str(saved), "--format", fmt]) == 0
        assert marker in capsys.readouterr().out
    out = tmp_path / "r.html"
    assert main(["report", str(saved), "--format", "html", "--out", str(out)]) == 0
    assert out.read_text().startswith("<!DOCTYPE html>")


@pytest.mark.parametrize(
    "args",
    [
        ["report", "missing.json"],
        ["report", "{saved}", "--format", "pdf"],
        ["prove", "--theorem", THEOREM, "--against", "missing.json"],
        ["prove", "--theorem", THEOREM, "--against", "{bad}"],
        ["prove", "--theorem", THEOREM, "--seeds", "0"],
        ["prove", "--theorem", THEOREM, "--seed", "-1"],
        # Z3 takes these modulo 2^32, silently: an rlimit of 2^32 + 10 was one of 10.
        ["prove", "--theorem", THEOREM, "--rlimit", str(2**32 + 10)],
        ["prove", "--theorem", THEOREM, "--seed", str(2**32)],
        ["prove", "--theorem", THEOREM, "--seeds", str(10**20)],
        ["mine", THEOREM, "--variant", "baseline", "--rlimit", str(2**32)],
        ["prove", "--theorem", THEOREM, "--rlimit-growth", "lots", "--against", "{saved}"],
        ["prove", "--theorem", THEOREM, "--report-dir", "{saved}"],
        ["prove", "--theorem", "eagle-annotated-conversion", "--variant", "baseline"],
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, report_dir, tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "gridproof-result/1", "entries": []}')
    args = [a.format(saved=report_dir / "result.json", bad=bad) for a in args]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("gridproof: error: ") and err.count("\n") == 1, err


@pytest.mark.parametrize(
    ("where", "text", "message"),
    [
        ("reason", "bad\x01", "entries[0].reason: holds U+0001, a control character, which no result holds"),
        ("statement", "\x1b[31m", "entries[0].statement: holds U+001B, a control character, which no result holds"),
        ("reason", "half \ud800", "entries[0].reason: holds U+D800, a lone surrogate, which no result holds"),
    ],
)
@pytest.mark.parametrize("form", ["html", "junit", "md"])
def test_a_string_no_report_can_write_is_one_line(result, tmp_path, capsys, where, text, message, form):
    # JSON spells both (\u0001, \ud800): the writers raised UnicodeEncodeError, or wrote XML no reader parses.
    edited = json.loads(json.dumps(result))
    edited["entries"][0][where] = text
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(edited))
    assert main(["report", str(path), "--format", form]) == 2
    assert capsys.readouterr().err == f"gridproof: error: {path}: {message}\n"


def test_against_itself_is_clean(report_dir, capsys):
    assert main(["prove", "--theorem", THEOREM, "--against", str(report_dir / "result.json")]) == 0
    assert "no regression" in capsys.readouterr().out


def test_against_a_weakened_result_names_each_change(result, tmp_path, capsys):
    old = json.loads(json.dumps(result))
    entries = {e["variant"]: e for e in old["entries"]}
    entries["baseline"]["verdict"] = "REFUTED"  # the verdict changed since
    entries["pr457"]["hypotheses_used"] = []  # the proof now needs a hypothesis it did not
    entries["pr457-guarded"]["hypotheses"].remove("fresh or at a published checkpoint")  # the theorem gained one
    entries["mutant:slot-off-by-one"]["expected"] = "PROVED"  # the manifest changed
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    assert main(["prove", "--theorem", THEOREM, "--against", str(path)]) == 1
    out = capsys.readouterr().out
    assert f"against {path}: 4 regressions" in out
    assert f"VERDICT {THEOREM} / baseline: REFUTED -> PROVED" in out
    assert f"HYPOTHESIS {THEOREM} / pr457: the proof now also needs 'cadence positive'" in out
    assert f"HYPOTHESIS {THEOREM} / pr457-guarded: the theorem gained 'fresh or at a published checkpoint'" in out
    assert f"EXPECTED {THEOREM} / mutant:slot-off-by-one: the manifest now expects REFUTED (was PROVED)" in out


def test_against_with_json_keeps_stdout_json_and_records_the_diff(result, tmp_path, capsys):
    old = json.loads(json.dumps(result))
    old["entries"][0]["verdict"] = "UNKNOWN"
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    assert main(["prove", "--theorem", THEOREM, "--variant", "baseline", "--against", str(path), "--json"]) == 1
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert data["against"]["changes"] == [f"VERDICT {THEOREM} / baseline: UNKNOWN -> PROVED"]
    assert "VERDICT" in captured.err


def test_seeds_show_no_flip_and_the_rlimit_spread(capsys):
    assert main(["prove", "--theorem", THEOREM, "--seeds", "3"]) == 0
    out = capsys.readouterr().out
    assert "seeds: 3 seeds (1, 2, 3) besides the default: no verdict flip" in out
    assert "coefficient of variation" in out and "FLIP" not in out


def test_a_seed_is_in_the_reproduce_command(capsys):
    assert main(["prove", "--theorem", THEOREM, "--variant", "baseline", "--seed", "7", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["selection"]["seed"] == 7
    assert data["entries"][0]["reproduce"].endswith("--rlimit 20000000 --seed 7")


def test_an_entry_whose_claims_an_earlier_variant_posed_takes_its_entry_and_is_reproduced_alone(capsys):
    # pr457 reads the theorem's claim to the very query baseline posed: it
    # takes baseline's entry, with no Z3 work of its own, and its command
    # decides it alone, to the same entry.
    assert main(["prove", "--theorem", THEOREM, "--variant", "baseline,pr457", "--json"]) == 0
    first = {e["variant"]: e for e in json.loads(capsys.readouterr().out)["entries"]}
    assert first["baseline"]["reproduce"].endswith(f"--theorem {THEOREM} --variant baseline --rlimit 20000000")
    assert first["pr457"]["same_claim_as"] == "baseline" and first["pr457"]["rlimit"] == 0
    command = first["pr457"]["reproduce"]
    assert command.endswith(f"--theorem {THEOREM} --variant pr457 --rlimit 20000000")
    assert main([*command.split()[1:], "--no-cache", "--json"]) == 0
    (again,) = json.loads(capsys.readouterr().out)["entries"]
    assert again["same_claim_as"] == "" and again["rlimit"] > 0
    for field in ("verdict", "hypotheses", "hypotheses_used", "hypotheses_unconfirmed", "counterexample", "reproduce"):
        assert again[field] == first["pr457"][field] == (first["baseline"][field] if field != "reproduce" else command)


def test_a_closed_pipe_is_quiet(report_dir):
    """`gridproof ... | head`: when the reader has gone, writing breaks the pipe; that ends the run quietly
    (exit status 1, nothing on stderr). The reader is gone before the first write here, so the pipe
    breaks on every run, whatever the buffers."""
    exe = shutil.which("gridproof")
    command = [exe] if exe else [sys.executable, "-m", "proofs.cli"]
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        writer = subprocess.run(
            [*command, "report", str(report_dir / "result.json"), "--format", "md"],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=300,
            check=False,
        )
    finally:
        os.close(write_end)
    assert writer.stderr == "", writer.stderr
    assert writer.returncode == 1


@pytest.mark.parametrize(
    ("args", "hint"),
    [
        (["prove", "--variant", "basline"], "unknown variant 'basline'; did you mean 'baseline'?"),
        (["prove", "--variant", "mutant:lcp-off-by-on"], "did you mean 'mutant:lcp-off-by-one'?"),
        (["prove", "--theorem", "split-bound"], "unknown theorem 'split-bound'; did you mean 'split-bounds'?"),
        (["check", "--model", "kimi-k3", "--variant", "pr457-guardd"], "did you mean 'pr457-guarded'?"),
    ],
)
def test_a_misspelt_name_is_answered_with_the_closest_known(args, hint, capsys):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and hint in err, err
    assert "mutant:stop-at-start" not in err  # the hand mutants are counted, not listed


@pytest.mark.parametrize("flag", ["--theorem", "--variant"])
def test_a_selection_flag_given_twice_is_refused_not_half_run(flag, capsys):
    """argparse would keep the second value and decide it alone, saying nothing of the first."""
    first, second = ("split-bounds", "prefill-chunks") if flag == "--theorem" else ("baseline", "pr457")
    assert main(["prove", flag, first, flag, second]) == 2
    err = capsys.readouterr().err
    assert err == f"gridproof: error: {flag}: given twice; it takes one value\n", err


# --- whole report directories -------------------------------------------------------------------------


def _files(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def test_a_report_dir_is_replaced_whole_by_the_next_run(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["prove", "--theorem", THEOREM, "--report-dir", str(out), "--no-cache"]) == 0
    assert main(["prove", "--theorem", "split-bounds", "--variant", "baseline", "--report-dir", str(out)]) == 0
    capsys.readouterr()
    # Nothing of the first run is left beside the second's: not its smt2 files, not its renderings.
    assert not list((out / "smt2").glob(f"{THEOREM}.*"))
    assert [e["theorem"] for e in json.loads((out / "result.json").read_text())["entries"]] == ["split-bounds"]
    assert THEOREM not in (out / "report.html").read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no staging directory left


def test_a_report_dir_holding_other_files_is_refused_before_the_run(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    assert main(["prove", "--theorem", THEOREM, "--report-dir", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "holds notes.txt, which gridproof does not write" in err
    assert _files(out) == {"notes.txt": b"mine"}


@pytest.mark.parametrize("failing", ["report.html", "results.sarif", "smt2"])
def test_a_report_dir_whose_writing_fails_keeps_the_previous_run_whole(failing, tmp_path, monkeypatch, capsys):
    from proofs.runtime import atomic

    out = tmp_path / "out"
    assert main(["prove", "--theorem", THEOREM, "--report-dir", str(out)]) == 0
    before = _files(out)
    write = atomic.write_text

    def full_disk(path, text):
        if failing in path.parts or path.name == failing:
            raise OSError(28, "No space left on device", str(path))
        write(path, text)

    monkeypatch.setattr(atomic, "write_text", full_disk)
    capsys.readouterr()
    assert main(["prove", "--theorem", "split-bounds", "--variant", "baseline", "--report-dir", str(out)]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("gridproof: error")]
    assert len(errors) == 1 and errors[0].startswith(f"gridproof: error: --report-dir: cannot write {out}/{failing}")
    assert errors[0].endswith(": No space left on device")
    assert _files(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_report_out_is_written_whole_or_not_at_all(report_dir, tmp_path, monkeypatch, capsys):
    from proofs.runtime import atomic

    out = tmp_path / "summary.md"
    out.write_text("the previous summary\n")
    opened = os.fdopen

    class HalfWritten:
        """A file that takes half of what is written to it, then finds the disk full."""

        def __init__(self, handle, *args, **kwargs):
            self.file = opened(handle, *args, **kwargs)

        def __enter__(self):
            return self

        def __exit__(self, *problem):
            self.file.close()

        def write(self, text):
            self.file.write(text[: len(text) // 2])
            self.file.flush()
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic.os, "fdopen", HalfWritten)
    assert main(["report", str(report_dir / "result.json"), "--format", "md-summary", "--out", str(out)]) == 2
    monkeypatch.undo()
    assert "No space left on device" in capsys.readouterr().err
    assert out.read_text() == "the previous summary\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summary.md"]


LONG = "x" * 300


@pytest.mark.parametrize(
    "args",
    [
        ["prove", "--theorem", THEOREM, "--report-dir", f"{{tmp}}/{LONG}"],
        ["prove", "--theorem", THEOREM, "--cache", f"{{tmp}}/{LONG}"],
        ["prove", "--theorem", THEOREM, "--against", f"{{tmp}}/{LONG}.json"],
        ["mine", THEOREM, "--variant", "baseline", "--out", f"{{tmp}}/{LONG}"],
        ["source", "--vllm", f"{{tmp}}/{LONG}"],
        ["source", "--diff", "0.33.0", f"{{tmp}}/{LONG}"],
        ["report", "{saved}", "--out", f"{{tmp}}/{LONG}.md"],
        ["report", "{saved}", "--out", ""],
        ["prove", "--theorem", THEOREM, "--report-dir", ""],
    ],
)
def test_a_path_no_file_system_takes_is_one_line_and_exit_2(args, report_dir, tmp_path, capsys):
    args = [a.format(tmp=tmp_path, saved=report_dir / "result.json") for a in args]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("gridproof: error: ") and err.count("\n") == 1 and "Traceback" not in err
    assert len(err) < 300
    assert list(tmp_path.iterdir()) == []


def test_a_report_dir_run_prints_no_matplotlib_warning(tmp_path):
    """groups-published-on-target-boundaries' counterexamples have a dozen inputs of size 1: their
    label was wider than the figure, and matplotlib warned once per figure."""
    command = [sys.executable, "-W", "always", "-m", "proofs.cli", "prove", "--theorem"]
    command += ["groups-published-on-target-boundaries", "--report-dir", str(tmp_path / "out"), "--no-cache"]
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "Warning" not in done.stderr
    assert (tmp_path / "out" / "report.html").read_text().count("<svg") > 6  # the counterexamples are drawn


def _large(result: dict, entries: int) -> dict:
    """A result of `entries` entries, each of a theorem and variant of its own, many with counterexamples."""
    base = result["entries"]
    large = dict(result)
    large["entries"] = [
        {**base[i % len(base)], "theorem": f"theorem-{i}", "variant": f"variant-{i}"} for i in range(entries)
    ]
    for i, entry in enumerate(large["entries"]):
        if entry.get("counterexample"):
            entry["counterexample"] = {**entry["counterexample"], "computed": i}
    return large


def test_report_on_33000_entries_is_linear_in_them(result, tmp_path):
    """A table with a column per variant name and a row per theorem was 10^9 cells for 33,000 entries,
    each with a name of its own (killed for want of memory after 200 s), and every counterexample was
    drawn (0.1 s each)."""
    from proofs.report import render

    large = _large(result, 33_000)
    markdown = render(large, "md")
    header = next(line for line in markdown.splitlines() if line.startswith("| theorem |"))
    assert header.count("|") <= 8
    assert len(markdown) < 3_000 * len(large["entries"])
    html = render(large, "html")
    assert html.count("<svg") <= 60 + 10
    assert len(html) < 5_000 * len(large["entries"])


# --- a strict gate: prove --against OLD.json ----------------------------------------------------------


def _old(result: dict, tmp_path: Path, edit) -> Path:
    old = json.loads(json.dumps(result))
    edit(old)
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    return path


def _against(path: Path, capsys, *selection: str) -> tuple[int, str, str]:
    status = main(["prove", "--theorem", THEOREM, *selection, "--against", str(path), "--no-cache"])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.mark.parametrize(
    "edit, problem",
    [
        (lambda old: old.update(entries=[]), "holds no entries, so nothing can be compared with it"),
        (lambda old: old["entries"].insert(0, {**old["entries"][0], "verdict": "REFUTED"}), "appears twice"),
        (
            lambda old: old.update(selection={**old["selection"], "variant": "baseline"}),
            "does not cover this run's",
        ),
        # A selection only the entries can refute: a tier, against a theorem named now.
        (
            lambda old: (old.update(selection={"theorem": None, "tier": "slow"}), old["entries"].pop()),
            "does not cover this run's",
        ),
    ],
    ids=["no entries", "an entry twice", "a narrower selection", "another tier"],
)
def test_a_baseline_that_cannot_stand_for_the_run_is_refused(result, tmp_path, capsys, edit, problem):
    status, out, err = _against(_old(result, tmp_path, edit), capsys)
    assert status == 2, out
    errors = [line for line in err.splitlines() if line.startswith("gridproof: error")]
    assert len(errors) == 1 and problem in errors[0]


def test_an_entry_missing_from_the_baseline_or_removed_from_the_run_is_a_regression(result, tmp_path, capsys):
    def edit(old):
        gone = next(e for e in old["entries"] if e["variant"] == "mutant:slot-off-by-one")
        old["entries"].remove(gone)  # hides whatever the mutant's entry did since
        old["entries"].append({**old["entries"][0], "variant": "mutant:no-longer-here"})

    status, out, _ = _against(_old(result, tmp_path, edit), capsys)
    assert status == 1
    assert f"MISSING {THEOREM} / mutant:slot-off-by-one: REFUTED now; the old run selected it" in out
    assert f"REMOVED {THEOREM} / mutant:no-longer-here: was PROVED, not in this run" in out


def test_a_baseline_wider_than_the_run_is_compared_where_they_meet(result, tmp_path, capsys):
    status, out, _ = _against(_old(result, tmp_path, lambda old: None), capsys, "--variant", "baseline")
    assert status == 0
    assert "no regression" in out
    assert f"note: {len(result['entries']) - 1} entries of the old run are outside this run's selection" in out
