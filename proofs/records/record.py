"""A record kept beside the catalogue (proofs/recorded/*.json) that `gridproof
prove` holds each entry to: the edges of its domain (proofs/records/edges.py), the
hypotheses its proof needs (proofs/records/needed.py), the inputs it reads
(proofs/records/inputs_read.py), the counterexamples of its refutations
(proofs/records/counterexamples.py), an enumerated domain's size
(proofs/engine/enumerated.py). Each is read here and written by `gridproof record`
(proofs/run/recording.py), one item a line, so a change reads in the record's
diff."""

from __future__ import annotations

import functools
import json
from pathlib import Path

from models.errors import GridproofError
from proofs.engine.solver import PROVED, REFUTED
from proofs.runtime import atomic

FORMAT = 1


class RecordError(GridproofError):
    pass


class Record:
    def __init__(self, path: Path, command: str, what: str) -> None:
        self.path, self.command, self.what = path, command, what

    def theorems(self) -> dict:
        """The record's theorems; RecordError naming the file and the command that writes it."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except OSError as error:
            raise RecordError(f"{self.path}: cannot read: {error.strerror}; write it: {self.command}") from None
        return _parsed(text, str(self.path), self.what, self.command)

    def write(self, theorems: dict) -> None:
        data = {"format": FORMAT, "command": self.command, "theorems": theorems}
        atomic.write_text(self.path, _layout(data) + "\n")  # an interrupted write leaves the old record whole
        _parsed.cache_clear()


@functools.cache
def _parsed(text: str, path: str, what: str, command: str) -> dict:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise RecordError(f"{path}: not valid JSON: {error}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("theorems"), dict):
        raise RecordError(f"{path}: not a record of {what} of format {FORMAT}; write it: {command}")
    return data["theorems"]


def _layout(value, depth: int = 0) -> str:
    """JSON, objects indented and each list's items on a line of their own."""
    pad = " " * depth
    if isinstance(value, dict) and value:
        items = [f"{pad} {json.dumps(key)}: {_layout(item, depth + 1).lstrip()}" for key, item in value.items()]
        return pad + "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(value, list) and value:
        items = [pad + " " + json.dumps(item, separators=(",", ":")) for item in value]
        return pad + "[\n" + ",\n".join(items) + "\n" + pad + "]"
    return pad + json.dumps(value)


def proved_variants(expectation) -> list[str]:
    """The variants (no hand mutant) a theorem's manifest entry expects to prove it."""
    return [v for v, verdict in expectation.expected.items() if verdict == PROVED and not v.startswith("mutant:")]


def refuted_variants(expectation) -> list[str]:
    """The variants and hand mutants a theorem's manifest entry expects to refute it: what the recorded
    counterexamples cover (proofs/records/counterexamples.py)."""
    return [v for v, verdict in expectation.expected.items() if verdict == REFUTED]
