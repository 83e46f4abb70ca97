"""The proof cache (`gridproof prove --cache DIR`): an entry decided before is
reused when everything its decision reads is byte-identical, and only after
every part of it that can be checked without deciding it again is checked.

The key is a digest of what a decision reads, never a name: the text of the
queries its obligations pose, every input free (solver.query_text; each case
of a split substitutes its values in it), the request the manifest makes
(theorem, variant, expected verdict, budget, tier, seed), how it is decided
(the z3 and Python versions, the solver's parameters, each obligation's
options, the sources of the decision procedure), the theorem's share of
every record it is held to (proofs/recorded/), and every data file under
models/families, models/geometries and proofs/recorded. An enumerated
theorem runs the engine model on concrete cases, which no query text shows:
its key also digests every source file of models/, proofs/catalog/ and
proofs/mutation/, and the code of every function of those packages as it
runs (all of them loaded first, so the digest does not depend on what the
process imported before). A changed model function changes the queries
that read it, so exactly those entries are decided again.

An entry file answers one key and one request. Loading it checks, and
decides the entry again with a one-line note when any check fails: that it
is a regular file (never a link, a FIFO or a device, which is never
opened); every field's type; that it names the key it is stored under and
the request the manifest makes now (which is taken from the manifest, never
from the file); that its verdict is the one the manifest expects (only such
entries are stored: a cached entry never fails a run); that its parts agree
with the theorem (its obligations, hypotheses, conjuncts, enumerated
domain); and every counterexample it holds (the refutation's, each goal
conjunct's alone, each ablation's) replayed on the concrete model, an
enumerated theorem's failing case among the cases of its domain. What no
check can establish without Z3 is a cached PROVED: it rests on the cache
having been written by gridproof for this key. `--verify-cache` decides
every cached PROVED again (docs/evidence.md).

Reading the query text means reading the model symbolically, most of a
cached rerun. Each key is therefore also recorded (a file holding the
digest alone) under a digest of every file the reading could depend on
(models/, proofs/, tests/, the z3 and Python versions): while those files
are byte-identical, the reading would print the same text, and the
recorded key is used without it. A function replaced in a running process
is not a file: `ProofCache(read_always=True)` reads every time."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import math
import os
import re
import stat
import sys
import tempfile
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import z3

from models.errors import GridproofError, quoted
from models.files import parse_json
from proofs.catalog import Theorem
from proofs.engine.claims import Kind, UnknownConjunct, conjunct_alone, replay
from proofs.engine.enumerated import Decision
from proofs.engine.solver import PROVED, QUERY_PARAMETERS, REFUTED, Query
from proofs.faults.handwritten import in_effect, resolve
from proofs.faults.patch import PatchError
from proofs.records import counterexamples, edges, inputs_read, needed
from proofs.records.domains import DOMAINS, smaller_than_recorded
from proofs.records.record import RecordError
from proofs.run.runner import ChoicesRead, Entry, claim_texts, conjuncts_refuted_alone, theorem_location
from proofs.run.shape import Fields, ListOf, MapOf, Optional, ShapeError, check_shape
from proofs.runtime import interrupts

FORMAT = "gridproof-cache/2"
# The decision procedure: a change to any of these may change a verdict or
# the hypotheses reported for the same query text.
PROCEDURE = (
    "models/arith.py",
    "proofs/engine/solver.py",
    # the solver's rooms
    "proofs/engine/problem.py",
    "proofs/engine/claims.py",
    "proofs/engine/options.py",
    "proofs/engine/queries.py",
    "proofs/engine/refutation.py",
    "proofs/engine/minimisation.py",
    "proofs/runtime/watchdog.py",
    "proofs/runtime/interrupts.py",
    "proofs/run/runner.py",
    "proofs/run/prove.py",
    "proofs/run/cache.py",
    "proofs/engine/enumerated.py",
    "proofs/records/domains.py",
    "proofs/records/edges.py",
    "proofs/records/needed.py",
    "proofs/records/inputs_read.py",
    "proofs/records/record.py",
    "proofs/records/recorded_inputs.py",
    "proofs/records/counterexamples.py",
)
# The data a decision may read besides code: every file under these.
DATA = ("models/families", "models/geometries", "proofs/recorded")
# The records a theorem is held to, each read for that theorem alone: a key
# digests the theorem's share of each (and the rest of DATA whole).
RECORDS = (edges.RECORDED, needed.RECORDED, inputs_read.RECORDED, counterexamples.RECORDED, DOMAINS)
# The code an enumerated decision runs (its key digests every .py file under these, and these files).
CODE = (
    "models",
    "proofs/catalog",
    "proofs/faults",
    "proofs/deployment/restore_law.py",
    "proofs/deployment/simulate.py",
)
_ROOT = Path(__file__).resolve().parents[2]
DIGEST = re.compile(r"[0-9a-f]{64}")
ENTRY_LIMIT = 64 << 20  # bytes: far above any entry (the largest of --tier all holds about 200 kB of queries)
KEY_LIMIT = 256
TRACE_REASON = "a fresh request's trace violates it"  # runner._run_theorem's reason for a trace's refutation
# With this set, every entry is signed with it and an entry not signed with it
# is refused: CI sets a secret of its own so that it takes no cache it did not write.
SECRET_VARIABLE = "GRIDPROOF_CACHE_SECRET"


class CacheError(GridproofError):
    pass


class _Rejected(Exception):
    """A cache file that fails a check: why, in a phrase."""


def _secret() -> bytes | None:
    value = os.environ.get(SECRET_VARIABLE)
    return value.encode("utf-8", "surrogateescape") if value else None


def default_directory() -> Path:
    """$XDG_CACHE_HOME/gridproof, else ~/.cache/gridproof."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "gridproof"


@dataclass(frozen=True)
class Request:
    """What the manifest asks of one entry: the cache answers it, never redefines it."""

    theorem: str
    variant: str
    expected: str
    rlimit: int
    tier: str
    seed: int | None

    def to_json(self) -> dict:
        return {
            "theorem": self.theorem,
            "variant": self.variant,
            "expected": self.expected,
            "rlimit": self.rlimit,
            "tier": self.tier,
            "seed": self.seed,
        }


def _files_digest(label: str, paths) -> str:
    digest = hashlib.sha256(label.encode())
    for path in sorted(paths):
        data = path.read_bytes()
        name = path.relative_to(_ROOT).as_posix().encode()
        digest.update(name + b"\0" + str(len(data)).encode() + b"\0" + data)
    return digest.hexdigest()


def _regular_files(top: str, suffix: str = "") -> list[Path]:
    if (_ROOT / top).is_file():
        return [_ROOT / top]
    return [
        p
        for p in (_ROOT / top).rglob(f"*{suffix}")
        if "__pycache__" not in p.parts and p.is_file() and not p.is_symlink()
    ]


@cache
def _procedure_digest() -> str:
    return _files_digest("procedure", [_ROOT / name for name in PROCEDURE])


@cache
def _data_digest() -> str:
    """Every data file under DATA but the records, which a key digests per theorem."""
    sliced = {record.path.resolve() for record in RECORDS}
    files = [p for top in DATA for p in _regular_files(top) if p.resolve() not in sliced]
    return _files_digest("data", files)


@cache
def _code_digest() -> str:
    return _files_digest("code", [p for top in CODE for p in _regular_files(top, ".py")])


def _recorded(record, theorem: str) -> str:
    """The theorem's share of a record; a record that cannot be read, by its bytes."""
    try:
        return json.dumps(record.theorems().get(theorem), sort_keys=True)
    except RecordError as error:
        try:
            data = hashlib.sha256(record.path.read_bytes()).hexdigest()
        except OSError as unreadable:
            data = unreadable.strerror or "unreadable"
        return f"{error} ({data})"


def entry_key(theorem: Theorem, variant_name: str, expected: str, rlimit: int, tier: str, seed: int | None) -> str:
    """An entry's key: sha256 over what its decision reads (the format, z3 and Python versions, the
    procedure's sources, the data files, the request, the theorem's parts and its share of the records, its
    claims' query texts), and the code of the engine model for an enumerated theorem."""
    obligations = [*theorem.obligations, *([theorem.trace_search] if theorem.trace_search else [])]
    request = Request(theorem.name, variant_name, expected, rlimit, tier, seed)
    parts = [
        FORMAT,
        z3.get_version_string(),
        sys.version,
        _procedure_digest(),
        _data_digest(),
        json.dumps(request.to_json(), sort_keys=True),
        repr((theorem.subject, theorem.statement, theorem.ablate)),
        repr(conjuncts_refuted_alone(theorem.name, variant_name)),
        repr((QUERY_PARAMETERS, theorem_location(theorem))),
    ]
    parts += [repr((o.name, o.variables, o.case_split, o.lemmas, o.solver_options, o.strategy)) for o in obligations]
    parts += [_recorded(record, theorem.name) for record in RECORDS]
    if theorem.enumeration is not None:
        parts.append(_code_digest())  # the files; claim_texts has the domain and the live code
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


@dataclass
class Lookup:
    """What the cache holds for one request: the key it answers under, and
    the entry when one passed every check."""

    key: str
    entry: Entry | None = None
    rejected: bool = False  # an entry was there and failed a check


@dataclass
class ProofCache:
    """A cache directory as one task uses it. `writable` False: entries are
    taken from it and none stored (a default cache that cannot be written).
    `notes`: one line for each entry that failed a check, and one for a
    write that failed (after which nothing more is written)."""

    directory: Path
    read_always: bool = False
    writable: bool = True
    notes: list[str] = field(default_factory=list)
    rejected: int = 0
    secret: bytes | None = field(default_factory=_secret, repr=False)

    def __post_init__(self) -> None:
        self.directory = Path(self.directory)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise CacheError(f"--cache: cannot use {self.directory}: {error.strerror}") from None
        if not self.directory.is_dir():
            raise CacheError(f"--cache: {self.directory} is not a directory")

    def probe(self) -> str | None:
        """Why nothing can be written into the directory, or None when a file can be."""
        try:
            handle, name = tempfile.mkstemp(dir=self.directory, prefix=".probe-", suffix=".tmp")
        except OSError as error:
            return error.strerror or str(error)
        os.close(handle)
        with contextlib.suppress(OSError):
            os.unlink(name)
        return None

    # --- keys -------------------------------------------------------------

    def key(self, theorem: Theorem, variant: str, expected: str, rlimit: int, tier: str, seed: int | None) -> str:
        """entry_key, or the key recorded for the same entry under the same sources."""
        return self._key(theorem, Request(theorem.name, variant, expected, rlimit, tier, seed))[0]

    def _key(self, theorem: Theorem, request: Request) -> tuple[str, bool]:
        """The key, and whether it was read from a recorded key file (not computed)."""
        if self.read_always:
            return self._entry_key(theorem, request), False
        parts = self._key_file(request)
        try:
            text = _read_regular(self.directory.joinpath(*parts), KEY_LIMIT)
        except _Rejected as why:
            text = f"({why})"
        if text is not None and DIGEST.fullmatch(text):
            return text, True
        if text is not None:
            self._note(request, f"its recorded key file holds no key {quoted(text, 40)}; the key is read again")
        key = self._entry_key(theorem, request)
        self._write(parts, key)
        return key, False

    def _key_file(self, request: Request) -> tuple[str, str, str]:
        """Where the key of `request` is recorded: under a secret, a name only its holder can give."""
        identity = _identity(request)
        if self.secret is None:
            name = hashlib.sha256(identity).hexdigest()
        else:
            name = hmac.new(self.secret, b"key file\0" + identity, hashlib.sha256).hexdigest()
        return "keys", sources_digest(), name

    @staticmethod
    def _entry_key(theorem: Theorem, request: Request) -> str:
        return entry_key(theorem, request.variant, request.expected, request.rlimit, request.tier, request.seed)

    # --- entries ------------------------------------------------------------

    def lookup(self, theorem: Theorem, request: Request) -> Lookup:
        """The key of `request` and its cached entry, when one passes every
        check. A recorded key whose entry fails a check is read again: the
        entry is then looked for under the key the claims give."""
        key, recorded = self._key(theorem, request)
        entry, problem = self._load(key, theorem, request)
        if problem is None:
            return Lookup(key, entry)
        problem = f"cache entry {key[:12]} {problem}"
        if recorded:
            true = self._entry_key(theorem, request)
            if true != key:
                # The recorded key was not this request's: the key file is written again.
                self._write(self._key_file(request), true)
                key = true
                entry, again = self._load(key, theorem, request)
                problem += f", under a recorded key its claims do not give (read again: {true[:12]})"
                if again is not None:
                    problem += f"; cache entry {true[:12]} {again}"
        self._note(request, problem + ("; its own entry taken" if entry is not None else "; decided again"))
        self.rejected += 1
        return Lookup(key, entry, rejected=entry is None)

    def load(self, key: str, theorem: Theorem, request: Request) -> Entry | None:
        """The entry stored under `key` for `request`, when it passes every check; None otherwise."""
        return self._load(key, theorem, request)[0]

    def _load(self, key: str, theorem: Theorem, request: Request) -> tuple[Entry | None, str | None]:
        """(the entry, None), or (None, why it was refused); (None, None) when there is none."""
        if not DIGEST.fullmatch(key):
            return None, f"is named {quoted(key, 20)}, not a digest"
        try:
            text = _read_regular(self.directory / f"{key}.json", ENTRY_LIMIT)
            if text is None:
                return None, None
            return _checked(text, key, theorem, request, self.secret), None
        except _Rejected as why:
            return None, str(why)

    def store(self, key: str, entry: Entry, request: Request) -> bool:
        """Stores an entry the manifest expects (a failing one is always decided
        again), with what a later load checks it against; whether it was."""
        if not DIGEST.fullmatch(key) or not entry.ok or entry.verdict not in (PROVED, REFUTED):
            return False
        witnesses = {
            "ablations": dict(entry.witnesses.get("ablations", {})),
            "conjuncts_alone": dict(entry.witnesses.get("conjuncts_alone", {})),
        }
        if set(witnesses["ablations"]) != set(entry.ablations) or set(witnesses["conjuncts_alone"]) != set(
            entry.conjuncts_alone
        ):
            return False  # a refutation without its inputs could not be replayed when loaded
        data = {
            "format": FORMAT,
            "key": key,
            "request": request.to_json(),
            **{name: getattr(entry, name) for name in _STORED},
            "queries": {name: [q.to_json() for q in qs] for name, qs in entry.queries.items()},
            "witnesses": witnesses,
        }
        return self._write((f"{key}.json",), sealed(data, self.secret))

    def discard(self, key: str) -> None:
        """Removes the entry stored under `key`, a regular file of the directory's own."""
        if not self.writable or not DIGEST.fullmatch(key):
            return
        path = self.directory / f"{key}.json"
        with contextlib.suppress(OSError):
            if stat.S_ISREG(os.lstat(path).st_mode):
                os.unlink(path)

    # --- files ------------------------------------------------------------------

    def _write(self, parts: tuple[str, ...], text: str) -> bool:
        """Whole or absent, whichever process writes it, and only inside the
        directory: each directory on the way must be a directory of its own
        (not a link), and the file is made new (O_EXCL) and renamed over the
        name, which replaces a link there rather than writing through it."""
        if not self.writable:
            return False
        parent = self.directory
        try:
            for part in parts[:-1]:
                parent = parent / part
                with contextlib.suppress(FileExistsError):
                    os.mkdir(parent)
                if not stat.S_ISDIR(os.lstat(parent).st_mode):
                    raise OSError(0, "not a directory of the cache's own (a link or a file)", str(parent))
            handle, temporary = tempfile.mkstemp(dir=parent, prefix=".", suffix=".tmp")
            try:
                with os.fdopen(handle, "w", encoding="utf-8") as out:
                    out.write(text)
                os.replace(temporary, parent / parts[-1])
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)
                raise
        except OSError as error:
            self.writable = False
            self.notes.append(
                f"proof cache {self.directory}: cannot write ({error.strerror or error}); "
                "entries are decided and none more stored"
            )
            return False
        return True

    def _note(self, request: Request, problem: str) -> None:
        self.notes.append(f"proof cache: {request.theorem} / {request.variant}: {problem}")


def _identity(request: Request) -> bytes:
    return json.dumps(request.to_json(), sort_keys=True).encode()


# An entry file is the JSON of its content, its last fields its checksum and, under a secret, its
# signature: each of the text before them, so checking an entry costs one hash of its bytes.
_SEAL = re.compile(r', "checksum": "([0-9a-f]{64})"(?:, "mac": "([0-9a-f]{64})")?\}\s*\Z')


def sealed(data: dict, secret: bytes | None = None) -> str:
    """The text of an entry file: `data` as JSON (ASCII), then its checksum (a digest of that text, its
    key included: an entry edited by hand or damaged no longer matches it; not a forger who computes it
    again, for which the secret) and, under `secret`, its signature."""
    body = json.dumps(data)
    tail = f', "checksum": "{_checksum(body)}"'
    if secret is not None:
        tail += f', "mac": "{_mac(secret, body)}"'
    return body[:-1] + tail + "}"


def _checksum(body: str) -> str:
    return hashlib.sha256(b"gridproof cache entry\0" + body.encode("utf-8", "surrogateescape")).hexdigest()


def _mac(secret: bytes, body: str) -> str:
    return hmac.new(secret, b"entry\0" + body.encode("utf-8", "surrogateescape"), hashlib.sha256).hexdigest()


def _unsealed(text: str, secret: bytes | None) -> str:
    """The content's JSON text of an entry file, once its checksum (and signature) match it."""
    found = _SEAL.search(text)
    if found is None:
        raise _Rejected("holds no checksum where gridproof writes it: not an entry gridproof wrote whole")
    body = text[: found.start()] + "}"
    if not hmac.compare_digest(found.group(1), _checksum(body)):
        raise _Rejected("does not match its checksum: edited, or damaged")
    if secret is not None and not hmac.compare_digest(found.group(2) or "", _mac(secret, body)):
        raise _Rejected(f"is not signed with this run's {SECRET_VARIABLE}")
    return body


def _read_regular(path: Path, limit: int) -> str | None:
    """The UTF-8 text of a regular file of at most `limit` bytes; None when
    there is none; _Rejected for anything else. A link, a FIFO, a device or
    a directory is never opened."""
    try:
        before = os.lstat(path)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as error:
        raise _Rejected(f"cannot be read ({getattr(error, 'strerror', None) or error})") from None
    if stat.S_ISLNK(before.st_mode):
        raise _Rejected("is a symbolic link, which gridproof never writes")
    if not stat.S_ISREG(before.st_mode):
        raise _Rejected("is not a regular file")
    if before.st_size > limit:
        raise _Rejected(f"holds {before.st_size:,} bytes, more than the {limit:,} a cache file holds")
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        handle = os.open(path, flags)
    except OSError as error:
        raise _Rejected(f"cannot be read ({error.strerror})") from None
    with os.fdopen(handle, "rb") as file:
        now = os.fstat(file.fileno())
        if not stat.S_ISREG(now.st_mode) or (now.st_dev, now.st_ino) != (before.st_dev, before.st_ino):
            raise _Rejected("changed while it was opened")
        data = file.read(limit + 1)
    if len(data) > limit:
        raise _Rejected(f"holds more than the {limit:,} bytes a cache file holds")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise _Rejected("is not UTF-8 text") from None


# --- what an entry file holds, and the checks it must pass --------------------

# Entry fields stored as they are; the request's (theorem, variant, expected,
# tier) and the theorem's (subject, statement, source) are never read from the file.
_STORED = (
    "verdict",
    "rlimit",
    "seconds",
    "hypotheses_used",
    "hypotheses_unconfirmed",
    "hypotheses",
    "counterexample",
    "reason",
    "ablations",
    "conjuncts_alone",
    "reproduce",
    "reused_queries",
    "same_claim_as",
    "enumeration",
)
_INPUTS = MapOf(Optional("scalar"))
_QUERY = Fields({"case": ListOf(ListOf("any")), "answer": "str", "text": "str", "z3_options": "str"})
SHAPE = Fields(
    {
        "format": "str",
        "key": "str",
        "request": Fields(
            {
                "theorem": "str",
                "variant": "str",
                "expected": "str",
                "rlimit": "int",
                "tier": "str",
                "seed": Optional("int"),
            }
        ),
        "verdict": "str",
        "rlimit": "int",
        "seconds": "number",
        "hypotheses_used": ListOf("str"),
        "hypotheses_unconfirmed": ListOf("str"),
        "hypotheses": ListOf("str"),
        "counterexample": Optional(_INPUTS),
        "reason": "str",
        "ablations": MapOf("str"),
        "conjuncts_alone": MapOf("str"),
        "reproduce": "str",
        "reused_queries": "int",
        "same_claim_as": "str",
        "enumeration": Fields(
            {}, optional={"domain": "str", "cases": "int", "exercised": "int", "checks": MapOf("int")}
        ),
        "queries": MapOf(ListOf(_QUERY)),
        "witnesses": Fields({"ablations": MapOf(_INPUTS), "conjuncts_alone": MapOf(_INPUTS)}),
    }
)


def _no_constant(name: str):
    raise ValueError(f"{name} is not a number an entry holds")


def _checked(text: str, key: str, theorem: Theorem, request: Request, secret: bytes | None = None) -> Entry:
    """The entry a file's text holds for `request`, or _Rejected naming the first check it fails."""
    body = _unsealed(text, secret)
    try:
        data = parse_json(body, parse_constant=_no_constant)
    except ValueError as error:
        raise _Rejected(f"is not JSON ({str(error)[:80]})") from None
    try:
        check_shape(data, SHAPE)
    except ShapeError as error:
        raise _Rejected(f"has a mistyped field: {error}") from None
    if data["format"] != FORMAT:
        raise _Rejected(f"is of format {quoted(data['format'], 30)}, not {FORMAT}")
    if data["key"] != key:
        raise _Rejected(f"answers the key {quoted(data['key'][:12], 20)}, not the one it is stored under")
    asked = request.to_json()
    for name, value in asked.items():
        if data["request"][name] != value:
            raise _Rejected(f"was stored for {name} {quoted(str(data['request'][name]), 40)}, not {value}")
    verdict = data["verdict"]
    if verdict != request.expected:
        raise _Rejected(f"holds the verdict {quoted(verdict, 20)}, where the manifest expects {request.expected}")
    if (
        data["rlimit"] < 0
        or data["reused_queries"] < 0
        or not (math.isfinite(data["seconds"]) and data["seconds"] >= 0)
    ):
        raise _Rejected("holds a negative budget, count or time")
    queries = _queries(data["queries"], theorem, verdict)
    _check_reproduce(data["reproduce"], request)
    _check_same_claim(data["same_claim_as"], data["rlimit"], request)
    replays = verdict == REFUTED or bool(data["witnesses"]["ablations"])
    case = _domain_case(theorem, request.variant, data["counterexample"]) if theorem.enumeration else None
    with _variant(request.variant) if replays else contextlib.nullcontext() as variant:
        if theorem.enumeration is not None:
            _check_enumerated(data, theorem, request, variant, case)
        elif verdict == PROVED:
            _check_proved(data, theorem, variant)
        else:
            _check_refuted(data, theorem, request, variant)
    return Entry(
        theorem=request.theorem,
        variant=request.variant,
        verdict=verdict,
        expected=request.expected,
        tier=request.tier,
        subject=theorem.subject,
        statement=theorem.statement,
        source=_location(theorem),
        cached=True,
        queries=queries,
        witnesses=data["witnesses"],
        **{name: data[name] for name in _STORED if name != "verdict"},
    )


_locations: dict[str, str] = {}


def _location(theorem: Theorem) -> str:
    """theorem_location, resolved once per theorem (it resolves a path: a dozen system calls)."""
    if theorem.name not in _locations:
        _locations[theorem.name] = theorem_location(theorem)
    return _locations[theorem.name]


@contextlib.contextmanager
def _variant(name: str):
    try:
        with in_effect(name) as variant:
            yield variant
    except PatchError as error:
        raise _Rejected(f"is for a mutant whose patch no longer applies ({error})") from None


def _obligations(theorem: Theorem) -> list:
    return [*([theorem.trace_search] if theorem.trace_search else []), *theorem.obligations]


def _queries(stored: dict, theorem: Theorem, verdict: str) -> dict[str, list[Query]]:
    names = {o.name for o in _obligations(theorem)}
    for name, queries in stored.items():
        if name not in names:
            raise _Rejected(f"holds queries of {quoted(name, 40)}, which is no obligation of the theorem")
        for query in queries:
            if query["answer"] not in ("sat", "unsat") or (verdict == PROVED and query["answer"] != "unsat"):
                raise _Rejected(f"holds a query of {name} answered {quoted(query['answer'], 20)} for a {verdict}")
            if not all(
                len(pair) == 2 and isinstance(pair[0], str) and isinstance(pair[1], bool) for pair in query["case"]
            ):
                raise _Rejected(f"holds a query of {name} whose case is not a list of (flag, true/false)")
    return {name: [Query.from_json(q) for q in queries] for name, queries in stored.items()}


_REPRODUCE = re.compile(r"gridproof prove --theorem (\S+) --variant (\S+) --rlimit (\d+)(?: --seed (\d+))?")


def _check_reproduce(command: str, request: Request) -> None:
    found = _REPRODUCE.fullmatch(command)
    seed = None if found is None or found.group(4) is None else int(found.group(4))
    if (
        found is None
        or found.group(1) != request.theorem
        or found.group(2).split(",")[-1] != request.variant
        or int(found.group(3)) != request.rlimit
        or seed != request.seed
    ):
        raise _Rejected(f"holds a command {quoted(command, 60)} that does not decide this entry")


def _check_same_claim(twin: str, rlimit: int, request: Request) -> None:
    if twin and (twin == request.variant or twin.startswith("mutant:") or request.variant.startswith("mutant:")):
        raise _Rejected(f"names {quoted(twin, 40)} as the variant of its claims, which cannot be")
    if twin and rlimit != 0:
        raise _Rejected("took another variant's entry and says it spent a budget of its own")


def _check_hypotheses(data: dict, theorem: Theorem) -> None:
    many = len(theorem.obligations) > 1
    stated = set(data["hypotheses"])
    prefixes = {o.name for o in theorem.obligations}
    for used in data["hypotheses_used"]:
        obligation, _, name = used.partition(": ") if many else ("", "", used)
        if (many and obligation not in prefixes) or name not in stated:
            raise _Rejected(f"says the proof used {quoted(used, 60)}, which the theorem does not state")
    if not set(data["hypotheses_unconfirmed"]) <= set(data["hypotheses_used"]):
        raise _Rejected("holds an unconfirmed hypothesis the proof is not said to use")


def _check_proved(data: dict, theorem: Theorem, variant) -> None:
    if data["counterexample"] is not None or data["conjuncts_alone"] or data["enumeration"]:
        raise _Rejected("holds a counterexample, a conjunct's verdict or a domain beside a PROVED")
    _check_hypotheses(data, theorem)
    if set(data["ablations"]) != set(theorem.ablate) or any(v != REFUTED for v in data["ablations"].values()):
        raise _Rejected("holds ablations other than each of the theorem's refuted")
    for hypothesis, values in data["witnesses"]["ablations"].items():
        if (
            hypothesis not in data["ablations"]
            or _violating(theorem.obligations, variant, values, drop=(hypothesis,)) is None
        ):
            raise _Rejected(f"holds inputs for dropping {quoted(hypothesis, 40)} that refute nothing when replayed")
    if set(data["witnesses"]["ablations"]) != set(data["ablations"]):
        raise _Rejected("holds an ablation's verdict without the inputs that refuted it")


def _check_refuted(data: dict, theorem: Theorem, request: Request, variant) -> None:
    values = data["counterexample"]
    if not values:
        raise _Rejected("holds a REFUTED without its counterexample")
    if data["hypotheses_used"] or data["hypotheses_unconfirmed"] or data["ablations"] or data["enumeration"]:
        raise _Rejected("holds hypotheses used, ablations or a domain beside a REFUTED")
    found = _violating(_obligations(theorem), variant, values)
    if found is None:
        raise _Rejected("holds a counterexample that does not violate the theorem when replayed on the concrete model")
    obligation, why = found
    expected = TRACE_REASON if obligation is theorem.trace_search else why
    if data["reason"] != expected:
        raise _Rejected(f"gives the reason {quoted(data['reason'], 60)}, where the replay gives {quoted(expected, 60)}")
    wanted = conjuncts_refuted_alone(request.theorem, request.variant)
    alone, witnesses = data["conjuncts_alone"], data["witnesses"]["conjuncts_alone"]
    if set(alone) != set(wanted) or any(v != REFUTED for v in alone.values()) or set(witnesses) != set(wanted):
        raise _Rejected("holds verdicts on goal conjuncts alone other than each the manifest names, refuted")
    for name, inputs in witnesses.items():
        formulas = [(o, conjunct_alone(o.formula, name)) for o in theorem.obligations]
        if _violating(formulas, variant, inputs) is None:
            raise _Rejected(f"holds inputs for the conjunct {quoted(name, 40)} alone that refute it nowhere")


def _violating(obligations, variant, values: dict, drop=()) -> tuple | None:
    """(obligation, the replay's reason) of the first obligation whose inputs
    `values` are, of the right kinds, and whose goal they violate on the
    concrete model; `obligations` may pair each with another formula."""
    for item in obligations:
        obligation, formula = item if isinstance(item, tuple) else (item, item.formula)
        kinds = {v.name: v.kind for v in obligation.variables}
        if set(kinds) != set(values) or not all(_of_kind(values[n], k) for n, k in kinds.items()):
            continue
        try:
            violated, why = replay(formula, variant, dict(values), drop)
        except UnknownConjunct:
            continue
        except Exception:  # the model raising on inputs of the right kinds: no replay
            interrupts.raise_if_requested()  # not an interrupt that ctypes wrapped
            continue
        if violated:
            return obligation, why
    return None


def _of_kind(value, kind: Kind) -> bool:
    if kind is Kind.BOOL:
        return isinstance(value, bool)
    return isinstance(value, int) and not isinstance(value, bool)


def _domain_case(theorem: Theorem, variant_name: str, stored: dict | None):
    """The case of the theorem's domain that a stored failing case is (as JSON wrote it), or None for
    no case stored; _Rejected when it is none of the domain's. The domain is the one the variant's
    fields give, read without a mutant's patch (a mutant is a fault in the model, not in the domain),
    and listed once per process for the fields it reads: the recorded theorem's 16,000 cases took
    40 ms to list, for each of its ten mutants."""
    if not stored:
        return None
    try:
        cases = _domain(theorem, resolve(variant_name))
    except Exception:  # the domain itself raising under this variant: nothing to find the case in
        interrupts.raise_if_requested()
        cases = []
    found = next((case for case in cases if _same_case(case, stored)), None)
    if found is None:
        raise _Rejected("holds a failing case that is not a case of the theorem's domain")
    return found


# theorem -> [(the variant's fields the domain read and their values, the domain's cases)]
_domains: dict[str, list[tuple[tuple, list]]] = {}


def _domain(theorem: Theorem, variant) -> list:
    for read, cases in _domains.get(theorem.name, []):
        if all(getattr(variant, name) == value for name, value in read):
            return cases
    choices = ChoicesRead(variant)
    cases = list(theorem.enumeration.cases(choices))
    read = tuple((name, getattr(variant, name)) for name in sorted(choices.read))
    _domains.setdefault(theorem.name, []).append((read, cases))
    return cases


def _same_case(case, stored: dict) -> bool:
    """Whether a case of the domain is the one stored, as JSON wrote it (tuples as lists)."""
    if not isinstance(case, dict) or len(case) != len(stored):
        return False
    for name, value in stored.items():
        if name not in case:
            return False
        mine = case[name]
        if isinstance(value, list | dict):
            try:
                if json.loads(json.dumps(mine)) != value:
                    return False
            except (TypeError, ValueError):
                return False
        elif mine != value or type(mine) is not type(value):
            return False
    return True


def _check_enumerated(data: dict, theorem: Theorem, request: Request, variant, ours) -> None:
    from proofs.engine.enumerated import _answer

    enumeration = data["enumeration"]
    if set(enumeration) != {"domain", "cases", "exercised", "checks"}:
        raise _Rejected("holds an enumerated entry without its domain, cases and checks")
    if enumeration["domain"] != theorem.enumeration.domain:
        raise _Rejected("was decided over another domain than the theorem's")
    if data["hypotheses_used"] or data["hypotheses_unconfirmed"] or data["ablations"] or data["conjuncts_alone"]:
        raise _Rejected("holds hypotheses, ablations or conjuncts beside an enumerated verdict")
    if data["verdict"] == PROVED:
        if data["counterexample"] is not None or not 1 <= enumeration["exercised"] <= enumeration["cases"]:
            raise _Rejected("holds a PROVED with a failing case or without a case that reached the property")
        if not request.variant.startswith("mutant:"):
            decision = Decision(PROVED, cases=enumeration["cases"], checks=enumeration["checks"])
            smaller = smaller_than_recorded(request.theorem, request.variant, decision)
            if smaller is not None:
                raise _Rejected(f"holds a domain smaller than recorded ({smaller[0]})")
        return
    if ours is None:
        raise _Rejected("holds a REFUTED without its failing case")
    failure = _answer(theorem.enumeration, variant, ours).failure
    if failure is None:
        raise _Rejected("holds a failing case on which the property holds when run again")
    if failure != data["reason"]:
        raise _Rejected(
            f"gives the reason {quoted(data['reason'], 60)}, where the case fails with {quoted(failure, 60)}"
        )
