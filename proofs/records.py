"""A record kept beside the catalogue (proofs/recorded/*.json) that `gridproof
prove` holds each proved entry to: the edges of its domain (proofs/edges.py),
the hypotheses its proof needs (proofs/needed.py). Each is written by its own
command, one item a line, so a change reads in the record's diff."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from models.errors import GridproofError

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
        self.path.write_text(_layout(data) + "\n", encoding="utf-8")
        _parsed.cache_clear()

    def rebuilt(self, find: Callable, theorems: list[str] | None = None, progress=None) -> dict:
        """The record with `theorems` (all when None) found afresh, every
        other theorem's kept: for every obligation and every variant the
        manifest expects to prove it, `find(obligation, variant, expectation)`."""
        from proofs.catalog import CATALOGUE
        from proofs.mutation.handwritten import in_effect

        try:
            current = dict(self.theorems())
        except RecordError:
            current = {}
        found: dict = {}
        for name, obligation, variant_name, expectation in proved_obligations():
            if theorems is not None and name not in theorems:
                continue
            with in_effect(variant_name) as variant:
                items = find(obligation, variant, expectation)
            found.setdefault(name, {}).setdefault(obligation.name, {})[variant_name] = items
            if progress:
                progress(f"{name} / {obligation.name} / {variant_name}: {len(items)} {self.what}")
        kept = {name: current[name] for name in current if theorems is not None and name not in theorems}
        return {name: found.get(name, kept.get(name)) for name in CATALOGUE if name in found or name in kept}

    def per_obligation(self, find: Callable) -> Callable:
        """What `main` writes of a record kept per obligation: `rebuilt(find, ...)`, each item found told."""
        return lambda theorems: self.rebuilt(find, theorems, lambda line: print(line, file=sys.stderr, flush=True))

    def main(self, argv: list[str] | None, prog: str, description: str, rebuild: Callable) -> int:
        """The command that writes the record, `rebuild(theorems)`: `--write [--theorem NAME ...]`."""
        import argparse

        parser = argparse.ArgumentParser(prog=prog, description=description)
        parser.add_argument("--write", action="store_true", help=f"record the {self.what} into {self.path.name}")
        parser.add_argument("--theorem", action="append", help="only this theorem (repeatable); the others are kept")
        args = parser.parse_args(argv)
        if not args.write:
            parser.error(f"nothing to do: --write records the {self.what}")
        from proofs.catalog import CATALOGUE

        unknown = [name for name in args.theorem or () if name not in CATALOGUE]
        if unknown:
            parser.error(f"--theorem: unknown theorem {unknown[0]!r}")
        try:
            self.write(rebuild(args.theorem))
        except GridproofError as error:
            print(f"error: {error}", file=sys.stderr)
            return 1
        return 0


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


def proved_obligations() -> Iterator[tuple]:
    """(theorem name, obligation, variant name, expectation) for every
    obligation of every theorem decided by Z3 and every variant (no hand
    mutant) the manifest expects to prove it: what each record covers."""
    from proofs.catalog import CATALOGUE
    from proofs.runner import load_manifest

    manifest = load_manifest()
    for name, theorem in CATALOGUE.items():
        if theorem.enumeration is not None or name not in manifest:
            continue
        for obligation in theorem.obligations:
            for variant_name in proved_variants(manifest[name]):
                yield name, obligation, variant_name, manifest[name]


def proved_variants(expectation) -> list[str]:
    """The variants (no hand mutant) a theorem's manifest entry expects to prove it."""
    from proofs.solver import PROVED

    return [v for v, verdict in expectation.expected.items() if verdict == PROVED and not v.startswith("mutant:")]


def refuted_variants(expectation) -> list[str]:
    """The variants and hand mutants a theorem's manifest entry expects to refute it: what the recorded
    counterexamples cover (proofs/counterexamples.py)."""
    from proofs.solver import REFUTED

    return [v for v, verdict in expectation.expected.items() if verdict == REFUTED]
