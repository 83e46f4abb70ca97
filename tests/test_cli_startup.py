"""`gridproof COMMAND` imports the module of that command alone: `prove` does
not pay at start-up for mining, mutation or the real vLLM's loaders."""

from __future__ import annotations

import subprocess
import sys

from proofs.cli import COMMANDS, build_parser

HEAVY = ("proofs.mining.miner", "proofs.mutation.run", "proofs.commands.check", "proofs.commands.mine")


def test_a_named_command_imports_its_module_alone():
    probe = (
        "import sys; from proofs.cli import main; main(['prove', '--theorem', 'no-such-theorem']); "
        f"print([m for m in {HEAVY!r} if m in sys.modules])"
    )
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert "no-such-theorem" in run.stderr
    assert run.stdout.strip() == "[]"


def test_the_whole_parser_names_every_command_and_a_named_one_its_own():
    def commands(parser) -> list[str]:
        (sub,) = [a for a in parser._actions if a.dest == "command"]
        return list(sub.choices)

    assert commands(build_parser()) == list(COMMANDS)
    assert commands(build_parser("report")) == ["report"]


def test_version_names_gridproof_and_its_solvers():
    run = subprocess.run([sys.executable, "-m", "proofs.cli", "--version"], capture_output=True, text=True)
    assert run.returncode == 0
    assert run.stdout.startswith("gridproof 0.") and "z3-solver 5." in run.stdout and "cvc5 " in run.stdout
