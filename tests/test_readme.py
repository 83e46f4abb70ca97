"""The README is for users: short, with no commit hashes, and its two set-up
commands are the ones CI runs on a fresh machine."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _set_up_commands() -> list[str]:
    section = README.split("## Set up", 1)[1]
    block = section.split("```", 2)[1]
    return [line for line in block.splitlines() if line.strip()]


def test_the_readme_stays_short():
    assert len(README.splitlines()) <= 150, "move detail into docs/ and link it"


def test_the_readme_names_no_commit():
    hashes = [w for w in re.findall(r"\b[0-9a-f]{7,40}\b", README) if re.search(r"\d", w) and re.search(r"[a-f]", w)]
    assert hashes == []


def test_ci_runs_the_two_set_up_commands():
    commands = _set_up_commands()
    assert len(commands) == 2
    assert "gridproof prove" in commands[0] and "pytest" in commands[1]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    for command in commands:
        assert command in ci


def _examples() -> list[tuple[str, list[str]]]:
    """Every `$ gridproof ...` the README shows, with the output shown under it."""
    found = []
    for block in README.split("```")[1::2]:
        lines = block.strip("\n").splitlines()
        if lines and lines[0].startswith("$ gridproof "):
            found.append((lines[0][2:], lines[1:]))
    return found


def _matches(shown: list[str], printed: list[str]) -> bool:
    """The shown lines appear in order in what was printed; a line `...` stands for any lines left out."""
    position = 0
    skipping = False
    for line in shown:
        if line == "...":
            skipping = True
            continue
        if skipping:
            while position < len(printed) and printed[position] != line:
                position += 1
        if position >= len(printed) or printed[position] != line:
            return False
        position += 1
        skipping = False
    return skipping or position == len(printed)


@pytest.mark.parametrize("command, shown", _examples(), ids=[c for c, _ in _examples()])
def test_every_readme_example_prints_what_it_shows(command, shown):
    argv = shlex.split(command)
    result = subprocess.run(
        [sys.executable, "-m", "proofs.cli", *argv[1:]], capture_output=True, text=True, cwd=ROOT, timeout=300
    )
    assert result.returncode in (0, 1), result.stderr
    assert _matches(shown, result.stdout.splitlines()), result.stdout


def test_the_readme_has_examples():
    assert len(_examples()) >= 2
