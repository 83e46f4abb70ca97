"""A standard output that cannot be written (a full disk) is one line and
exit 2, as an unusable --report-dir is; a reader gone away is a quiet exit 1."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

COMMANDS = [
    ["simulate", "kimi-k3-tp16-dcp16"],
    ["check", "--model", "kimi-k3"],
    ["prove", "--theorem", "split-bounds", "--variant", "baseline", "--no-cache", "--json"],
]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("arguments", COMMANDS, ids=lambda a: a[0])
def test_a_full_disk_is_one_line_and_exit_2(arguments):
    with open("/dev/full", "w") as full:
        run = subprocess.run(
            [sys.executable, "-m", "proofs.cli", *arguments], stdout=full, stderr=subprocess.PIPE, text=True
        )
    assert run.returncode == 2, run.stderr
    errors = [line for line in run.stderr.splitlines() if not line.startswith("[")]
    assert errors == ["gridproof: error: cannot write the standard output: No space left on device"]


def test_a_reader_gone_away_is_a_quiet_exit_1():
    run = subprocess.Popen(
        [sys.executable, "-m", "proofs.cli", "simulate", "kimi-k3-tp16-dcp16"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    run.stdout.close()
    assert run.wait(timeout=60) == 1
    assert run.stderr.read() == ""
