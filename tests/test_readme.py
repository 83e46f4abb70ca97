"""The README is for users: short, with no commit hashes, and its two set-up
commands are the ones CI runs on a fresh machine."""

from __future__ import annotations

import re
from pathlib import Path

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
