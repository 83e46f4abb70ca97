"""`gridproof record` (proofs/run/recording.py): the one command that writes the
records again, and the layering it keeps (no record module runs the catalogue)."""

from __future__ import annotations

import ast
from pathlib import Path

from proofs.commands.record import RECORD_NAMES
from proofs.records.record import Record
from proofs.run import recording
from tests.helpers import gridproof

PROOFS = Path(__file__).resolve().parents[1] / "proofs"
READERS = (
    "records/record",
    "records/edges",
    "records/needed",
    "records/inputs_read",
    "records/counterexamples",
    "records/domains",
    "records/recorded_inputs",
    "engine/enumerated",
)


def test_the_command_names_every_record_the_recorder_writes():
    assert tuple(recording.RECORDS) == RECORD_NAMES


def test_no_record_module_imports_the_runner_or_the_catalogue():
    for name in READERS:
        tree = ast.parse((PROOFS / f"{name}.py").read_text(encoding="utf-8"))
        imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
        imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
        upward = sorted(
            m for m in imported if m.startswith(("proofs.run.runner", "proofs.catalog", "proofs.run.recording"))
        )
        assert not upward, f"proofs/{name}.py imports {upward}"


def test_recording_a_theorem_again_reproduces_its_records(monkeypatch):
    written: dict[Path, dict] = {}
    monkeypatch.setattr(Record, "write", lambda record, theorems: written.__setitem__(record.path, theorems))
    said: list[str] = []
    recording.record(list(RECORD_NAMES), ["split-bounds"], said.append)
    assert set(written) == {record.path for record, _ in recording.RECORDS.values()}
    for record, _ in recording.RECORDS.values():
        assert written[record.path] == record.theorems(), f"{record.path.name} differs when recorded again"
    assert any(line.startswith("split-bounds / ") for line in said)


def test_bad_arguments_are_one_line_and_exit_2():
    for argv, message in (
        (["record", "--theorem", "nope"], "unknown theorem 'nope'"),
        (["record", "--only", "everything"], "--only: invalid choice"),
    ):
        out = gridproof(*argv)
        assert out.returncode == 2 and message in out.stderr, out.stderr
        assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1
