"""`gridproof review`: the reviewer's one command, run whole on the project's patch (sections 4 and 5
drive the real vLLM 0.33.0 scheduler), and a planted fault in a reviewer's diff failing it."""

from __future__ import annotations

import json

import pytest

from proofs.cli import main
from proofs.source import patches

pytestmark = pytest.mark.slow  # the whole review, twice (about 4 minutes)

GUARDED = patches.PATCHES / "vllm-0.33.0" / "pr457-guarded.diff"
SECTIONS = (
    "The shipped functions against the model",
    "What the change alters of the release",
    "The theorem catalogue",
    "The real scheduler, patched, end to end",
    "The change's own validation, replayed",
)


def test_the_project_patch_is_reviewed_whole(tmp_path, capsys):
    out = tmp_path / "review"
    assert main(["review", "--out", str(out), "--cases-per-deployment", "1"]) == 0
    assert "OK (exit 0)" in capsys.readouterr().out
    data = json.loads((out / "review.json").read_text())
    assert [s["title"] for s in data["sections"]] == list(SECTIONS)
    assert all(s["ok"] for s in data["sections"]) and data["ok"]
    assert data["sections"][3]["data"]["cases"] > 0 and data["sections"][3]["data"]["disagreements"] == []
    text = (out / "review.md").read_text()
    assert "split                   REFUTED" in text  # the release against the patch: the split changed
    assert "0 disagree" in text and "ran the installed" not in text
    page = (out / "review.html").read_text()
    assert page.count("<h2>") == 5 and "<table>" in page and "<pre>" in page


def test_a_diff_whose_split_reads_the_physical_block_again_is_not_ok(tmp_path, capsys):
    faulty = tmp_path / "faulty.diff"
    text = GUARDED.read_text()
    assert "+        block_size = self.mamba_block_size\n" in text
    faulty.write_text(
        text.replace(
            "+        block_size = self.mamba_block_size\n", "+        block_size = self.cache_config.block_size\n"
        )
    )
    out = tmp_path / "review"
    argv = ["review", "--patch", str(faulty), "--variant", "pr457-guarded", "--out", str(out)]
    assert main([*argv, "--cases-per-deployment", "1"]) == 1
    assert "NOT OK (exit 1)" in capsys.readouterr().out
    data = json.loads((out / "review.json").read_text())
    source = data["sections"][0]
    assert not source["ok"] and source["data"]["functions"]["split"]["verdict"] == "REFUTED"
    # The real scheduler ran the project's patch, not the reviewer's diff, and the report says so.
    assert "ran the installed vLLM 0.33.0 with the project's patch" in (out / "review.md").read_text()


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--vllm", "/tmp"], "--vllm: which model is the tree held to? give --variant"),
        (["--cases-per-deployment", "0"], "--cases-per-deployment: expected a whole number"),
        (["--variant", "nope"], "unknown variant 'nope'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, argv, says, capsys):
    assert main(["review", "--out", str(tmp_path / "r"), *argv]) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
