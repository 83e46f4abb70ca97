"""The proof cache (`gridproof prove --cache DIR`): an entry decided before is
reused when everything its verdict rests on is byte-identical: the text of
the query its obligations pose, every input free (solver.query_text: each
case of a split substitutes its values in it), the z3 version, the solver's
parameters and budget, and the sources of the decision procedure itself.

The key is the query text, never a name: a changed model function changes
the queries that read it, so those entries are decided again and no verdict
outlives the model it was decided for. Only PROVED and REFUTED entries are
kept; anything else is decided again on every run."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import fields
from pathlib import Path

import z3

from models.errors import GridproofError
from models.variants import get_variant
from proofs.catalog import Theorem
from proofs.runner import Entry, formula_location
from proofs.solver import PROVED, QUERY_PARAMETERS, REFUTED, Query, query_text

FORMAT = "gridproof-cache/1"
# The decision procedure: a change to any of these may change a verdict or
# the hypotheses reported for the same query text.
PROCEDURE = ("models/arith.py", "proofs/solver.py", "proofs/runner.py", "proofs/cache.py")
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


def entry_key(theorem: Theorem, variant_name: str, expected: str, rlimit: int, tier: str, seed: int | None) -> str:
    variant = get_variant(variant_name)
    obligations = [*theorem.obligations, *([theorem.trace_search] if theorem.trace_search else [])]
    parts = [
        FORMAT,
        z3.get_version_string(),
        _procedure_digest(),
        repr((theorem.name, theorem.subject, theorem.statement, theorem.ablate, variant_name, expected)),
        repr((rlimit, tier, seed, QUERY_PARAMETERS, formula_location(theorem.obligations[0].formula))),
    ]
    for o in obligations:
        parts.append(repr((o.name, o.variables, o.case_split, o.lemmas, o.solver_options, o.strategy)))
        parts.append(query_text(o.formula, o.variables, variant))
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


class ProofCache:
    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise CacheError(f"--cache: cannot use {self.directory}: {error.strerror}") from None
        if not self.directory.is_dir():
            raise CacheError(f"--cache: {self.directory} is not a directory")

    def load(self, key: str) -> Entry | None:
        try:
            data = json.loads((self.directory / f"{key}.json").read_text(encoding="utf-8"))
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
        path = self.directory / f"{key}.json"
        temporary = path.with_suffix(f".{os.getpid()}.tmp")
        try:
            temporary.write_text(json.dumps(data), encoding="utf-8")
            temporary.replace(path)  # whole or absent, whichever process writes it
        except OSError as error:
            raise CacheError(f"--cache: cannot write {path}: {error.strerror}") from None
