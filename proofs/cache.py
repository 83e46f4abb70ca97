"""The proof cache (`gridproof prove --cache DIR`): an entry decided before is
reused when everything its verdict rests on is byte-identical: the text of
the query its obligations pose, every input free (solver.query_text: each
case of a split substitutes its values in it), the z3 version, the solver's
parameters and budget, and the sources of the decision procedure itself.

The key is the query text, never a name: a changed model function changes
the queries that read it, so those entries are decided again and no verdict
outlives the model it was decided for. Only PROVED and REFUTED entries are
kept; anything else is decided again on every run.

Printing the query text means reading the model symbolically, most of a
cached rerun. Each key is therefore also recorded under a digest of every
file the reading could depend on (models/, proofs/, tests/, the z3 and
Python versions): while those files are byte-identical, the reading would
print the same text, and the recorded key is used without it. A function
replaced in a running process is not a file: `ProofCache(read_always=True)`
reads every time."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from dataclasses import fields
from functools import cache
from pathlib import Path

import z3

from models.errors import GridproofError
from models.files import parse_json
from proofs import counterexamples, edges, inputs_read, needed
from proofs.catalog import Theorem
from proofs.records import RecordError
from proofs.runner import Entry, claim_texts, conjuncts_refuted_alone, model_sources_hash, theorem_location
from proofs.solver import PROVED, QUERY_PARAMETERS, REFUTED, Query

FORMAT = "gridproof-cache/1"
# The decision procedure: a change to any of these may change a verdict or
# the hypotheses reported for the same query text.
PROCEDURE = (
    "models/arith.py",
    "proofs/solver.py",
    # the solver's rooms
    "proofs/claims.py",
    "proofs/options.py",
    "proofs/queries.py",
    "proofs/refutation.py",
    "proofs/minimisation.py",
    "proofs/watchdog.py",
    "proofs/interrupts.py",
    "proofs/runner.py",
    "proofs/cache.py",
    "proofs/enumerated.py",
    "proofs/edges.py",
    "proofs/needed.py",
    "proofs/inputs_read.py",
    "proofs/records.py",
    "proofs/recorded_inputs.py",
    "proofs/counterexamples.py",
)
_ROOT = Path(__file__).resolve().parent.parent


class CacheError(GridproofError):
    pass


def default_directory() -> Path:
    """$XDG_CACHE_HOME/gridproof, else ~/.cache/gridproof."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "gridproof"


def _procedure_digest() -> str:
    digest = hashlib.sha256()
    for name in PROCEDURE:
        digest.update(name.encode() + (_ROOT / name).read_bytes())
    return digest.hexdigest()


def _recorded(record, theorem: str) -> str:
    try:
        return json.dumps(record.recorded().get(theorem), sort_keys=True)
    except RecordError as error:
        return str(error)


def entry_key(theorem: Theorem, variant_name: str, expected: str, rlimit: int, tier: str, seed: int | None) -> str:
    obligations = [*theorem.obligations, *([theorem.trace_search] if theorem.trace_search else [])]
    parts = [
        FORMAT,
        z3.get_version_string(),
        _procedure_digest(),
        repr((theorem.name, theorem.subject, theorem.statement, theorem.ablate, variant_name, expected)),
        repr(conjuncts_refuted_alone(theorem.name, variant_name)),
        repr((rlimit, tier, seed, QUERY_PARAMETERS, theorem_location(theorem))),
    ]
    parts += [repr((o.name, o.variables, o.case_split, o.lemmas, o.solver_options, o.strategy)) for o in obligations]
    if theorem.enumeration is not None:
        parts.append(model_sources_hash())  # the files; claim_texts has the domain and the live code
    else:
        parts.append(_recorded(edges, theorem.name))  # what a proof's domain must hold (proofs/edges.py)
        parts.append(_recorded(needed, theorem.name))  # what a proof must need (proofs/needed.py)
        parts.append(_recorded(inputs_read, theorem.name))  # what a proof must read (proofs/inputs_read.py)
        parts.append(_recorded(counterexamples, theorem.name))  # candidate models (proofs/recorded_inputs.py)
    parts += claim_texts(theorem, variant_name)
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


@cache
def sources_digest() -> str:
    """Every file under models/, proofs/ and tests/ (bytecode aside), the z3
    and Python versions: what the symbolic reading of a claim could depend on."""
    digest = hashlib.sha256(f"{z3.get_version_string()} {sys.version}".encode())
    for top in ("models", "proofs", "tests"):
        for path in sorted((_ROOT / top).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                digest.update(path.relative_to(_ROOT).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


class ProofCache:
    def __init__(self, directory: Path, read_always: bool = False) -> None:
        self.directory = Path(directory)
        self.read_always = read_always
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise CacheError(f"--cache: cannot use {self.directory}: {error.strerror}") from None
        if not self.directory.is_dir():
            raise CacheError(f"--cache: {self.directory} is not a directory")

    def key(self, theorem: Theorem, variant: str, expected: str, rlimit: int, tier: str, seed: int | None) -> str:
        """entry_key, or the key recorded for the same entry under the same sources."""
        if self.read_always:
            return entry_key(theorem, variant, expected, rlimit, tier, seed)
        identity = repr((theorem.name, variant, expected, rlimit, tier, seed)).encode()
        recorded = self.directory / "keys" / sources_digest() / hashlib.sha256(identity).hexdigest()
        try:
            return recorded.read_text(encoding="ascii")
        except (OSError, UnicodeDecodeError):
            key = entry_key(theorem, variant, expected, rlimit, tier, seed)
        self._write(recorded, key)
        return key

    def load(self, key: str) -> Entry | None:
        try:
            data = parse_json((self.directory / f"{key}.json").read_text(encoding="utf-8"))
            queries = {name: [Query.from_json(q) for q in qs] for name, qs in data.pop("queries").items()}
            known = {f.name for f in fields(Entry)}
            entry = Entry(**{k: v for k, v in data.items() if k in known}, queries=queries)
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None  # absent, or unreadable: decided again (and rewritten)
        entry.cached = True
        return entry

    def store(self, key: str, entry: Entry) -> None:
        if entry.verdict not in (PROVED, REFUTED):
            return
        data = entry.to_json()
        del data["ok"]
        data["queries"] = {name: [q.to_json() for q in qs] for name, qs in entry.queries.items()}
        self._write(self.directory / f"{key}.json", json.dumps(data))

    @staticmethod
    def _write(path: Path, text: str) -> None:
        """Whole or absent, whichever process writes it."""
        temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            temporary.write_text(text, encoding="utf-8")
            temporary.replace(path)
        except OSError as error:
            raise CacheError(f"--cache: cannot write {path}: {error.strerror}") from None
