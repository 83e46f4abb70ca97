"""Obligations decided by enumeration: a property stated over an explicit
finite domain, decided by running the engine model on every case of it.

The loops of the engine model (a whole prefill, its condensing, the Trace's
views, the restore searches) run over concrete ints and lists, so no SMT
query reads them. What can be said of them honestly is bounded: the
property holds on every case of the named domain. The verdict is PROVED
only when every case holds (and the cases the property is about were met:
`Enumeration.exercised`), REFUTED with the first failing case, which is
concrete and is run once more to confirm it before it is reported, and
VACUOUS when no case of the domain reached what the property is about.
An engine that raises on a case of the domain fails that case: every case
is a valid deployment and request.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib
import json
import pkgutil
import sys
import time
import types
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from models.variants import Variant
from proofs.engine.solver import ERROR, PROVED, REFUTED, VACUOUS

Case = dict[str, object]  # a case's concrete inputs, by name (JSON values)


@dataclass(frozen=True)
class Verdict:
    """A case's answer: `failure` None when the property holds there;
    `exercised` when the case reached what the property is about (a
    condensed trace, say), so that a domain that never does is VACUOUS;
    `checks`, how many times the case made each named check (`Checks`)."""

    failure: str | None = None
    exercised: bool = True
    checks: Mapping[str, int] = field(default_factory=dict)


class Checks:
    """The named checks one case makes, each counted where it is made. A
    check left out of a case function, or made on fewer values (a probe
    dropped, a field no longer compared), still proves and proves less; the
    counts over the domain are recorded (proofs/records/domains.py) and a PROVED decision
    that made any check fewer times is VACUOUS."""

    def __init__(self) -> None:
        self.made: Counter[str] = Counter()

    def differ(self, name: str, got, wanted) -> bool:
        """Check `name`: whether `got` differs from `wanted`."""
        self.made[name] += 1
        return got != wanted

    def fails(self, name: str, holds) -> bool:
        """Check `name`: whether the condition it states is false."""
        self.made[name] += 1
        return not holds

    def note(self, name: str) -> None:
        """A kind of input the case's checks were made on (a probe's kind), counted like a check."""
        self.made[name] += 1

    def verdict(self, failure: str | None = None, exercised: bool = True) -> Verdict:
        return Verdict(failure, exercised, dict(self.made))


@dataclass(frozen=True)
class Enumeration:
    domain: str  # the finite domain, exactly, in words
    cases: Callable[[Variant], Iterable[Case]]
    check: Callable[[Variant, Case], Verdict]
    exercised: str = ""  # what a case must reach for the property not to hold vacuously


@dataclass
class Decision:
    verdict: str
    reason: str = ""
    counterexample: Case | None = None
    cases: int = 0
    exercised: int = 0
    seconds: float = 0.0
    checks: Mapping[str, int] = field(default_factory=dict)  # named check -> times made over the domain


def decide_enumeration(enumeration: Enumeration, variant: Variant) -> Decision:
    """Run `enumeration.check` on every case of the domain for `variant`: REFUTED at the first failing case,
    ERROR when its failure does not reproduce, VACUOUS when no case was exercised, else PROVED with the checks
    counted."""
    started = time.perf_counter()
    cases = exercised = 0
    checks: Counter[str] = Counter()
    for case in enumeration.cases(variant):
        cases += 1
        answer = _answer(enumeration, variant, case)
        if answer.failure is not None:
            again = _answer(enumeration, variant, case)
            if again.failure != answer.failure:
                reason = f"case not reproducible: {answer.failure!r}, then {again.failure!r}"
                return Decision(ERROR, reason, case, cases, exercised, time.perf_counter() - started)
            return Decision(REFUTED, answer.failure, case, cases, exercised, time.perf_counter() - started)
        exercised += answer.exercised
        checks.update(answer.checks)
    seconds = time.perf_counter() - started
    if cases == 0 or exercised == 0:
        what = enumeration.exercised or "a case"
        return Decision(VACUOUS, f"no case of the domain ({cases} cases) reached {what}", None, cases, 0, seconds)
    return Decision(PROVED, "", None, cases, exercised, seconds, dict(sorted(checks.items())))


def _answer(enumeration: Enumeration, variant: Variant, case: Case) -> Verdict:
    try:
        return enumeration.check(variant, case)
    except Exception as error:  # the engine model raising on a valid case fails the case
        return Verdict(f"the engine model raised {type(error).__name__}: {error}")


# The code an enumerated verdict is a function of: the engine model it runs,
# and the catalogue's domains and checks that run it (a change to a check
# function alone must not reuse the verdict of the check before it).
DECIDING_PACKAGES = ("models", "proofs.catalog")


def live_code_digest() -> str:
    """sha256 over the code of every function and method of every module of
    DECIDING_PACKAGES as they run now: a patch applied in this process (a
    mutant) changes it, which a digest of the files would not notice (the
    proof cache adds that one). Every module is loaded first: a digest of
    the modules loaded so far depended on what the process had imported
    before, so one entry had two keys."""
    _load_every_module()
    digest = hashlib.sha256()
    loaded = (m for m in sys.modules if any(m == p or m.startswith(f"{p}.") for p in DECIDING_PACKAGES))
    for name in sorted(loaded):
        module = sys.modules[name]
        for attribute, value in sorted(vars(module).items()):
            for function in _functions(value, name):
                digest.update(f"{name}.{attribute}".encode())
                digest.update(_code_text(function.__code__))
    return digest.hexdigest()


def _code_text(code: types.CodeType) -> bytes:
    """A code object's bytecode, names and constants, nested code included, as
    the same bytes in every process: marshal's bytes depend on the objects'
    reference counts, and a frozenset's order on the string hash seed, so a
    digest of marshal.dumps gave one entry another key in another process."""
    parts = [code.co_code, repr((code.co_names, code.co_varnames, code.co_freevars, code.co_cellvars)).encode()]
    parts += [_constant_text(c) for c in code.co_consts]
    return b"\0".join(parts)


def _constant_text(value) -> bytes:
    if isinstance(value, types.CodeType):
        return b"code(" + _code_text(value) + b")"
    if isinstance(value, tuple):
        return b"(" + b",".join(_constant_text(v) for v in value) + b")"
    if isinstance(value, frozenset):
        return b"{" + b",".join(sorted(_constant_text(v) for v in value)) + b"}"
    return repr(value).encode()


@functools.cache
def _load_every_module() -> None:
    for package_name in DECIDING_PACKAGES:
        package = importlib.import_module(package_name)
        for module in pkgutil.walk_packages(package.__path__, f"{package_name}.", onerror=lambda _: None):
            with contextlib.suppress(Exception):  # a module that fails to load runs in no decision
                importlib.import_module(module.name)


def _functions(value, module_name: str) -> list:
    if getattr(value, "__module__", None) != module_name:
        return []
    if hasattr(value, "__code__"):
        return [value]
    if isinstance(value, type):
        found = []
        for member in vars(value).values():
            member = getattr(member, "fget", member)  # a property's getter
            if hasattr(member, "__code__"):
                found.append(member)
        return found
    return []


def claim_text(theorem_name: str, enumeration: Enumeration, variant_name: str) -> str:
    """What an enumerated entry's decision is a function of, as one text:
    the domain, the variant, the engine code it runs and the catalogue code
    that runs it."""
    return f"; enumerated {theorem_name} under {variant_name}\n; domain: {enumeration.domain}\n" + (
        f"; engine and catalogue code {live_code_digest()}\n"
    )


def certificate(entry) -> dict:
    """What --report-dir writes for an enumerated entry: no SMT query, the
    domain and how to decide it again."""
    return {
        "theorem": entry.theorem,
        "variant": entry.variant,
        "verdict": entry.verdict,
        "expected": entry.expected,
        "decided_by": "enumeration, not an SMT query",
        "domain": entry.enumeration.get("domain", ""),
        "cases": entry.enumeration.get("cases", 0),
        "exercised": entry.enumeration.get("exercised", 0),
        "checks": entry.enumeration.get("checks", {}),
        "counterexample": entry.counterexample,
        "reason": entry.reason,
        "rerun": entry.reproduce,
    }


def write_certificates(entries, directory: Path) -> list[Path]:
    """Write a certificate per enumerated entry into `directory`, as THEOREM--VARIANT.json and .txt (the
    domain, cases, checks made, any failing case and how to decide it again); the paths written."""
    from proofs.runtime import atomic

    written = []
    for entry in entries:
        if not entry.enumeration:
            continue
        directory.mkdir(parents=True, exist_ok=True)
        data = certificate(entry)
        stem = f"{entry.theorem}--{entry.variant.replace(':', '-')}"
        atomic.write_text(directory / f"{stem}.json", json.dumps(data, indent=2) + "\n")
        lines = [
            f"{entry.theorem} / {entry.variant}: {entry.verdict} (manifest: {entry.expected})",
            "decided by enumeration, not an SMT query: the engine model run on every case of the domain",
            f"domain: {data['domain']}",
            f"cases: {data['cases']} ({data['exercised']} reaching what the property is about)",
            *(f"check {name!r} made {times:,} times" for name, times in data["checks"].items()),
        ]
        if entry.counterexample:
            lines.append("failing case: " + ", ".join(f"{k}={v}" for k, v in entry.counterexample.items()))
            lines.append(f"why: {entry.reason}")
        lines.append(f"decide again: {entry.reproduce}")
        atomic.write_text(directory / f"{stem}.txt", "\n".join(lines) + "\n")
        written += [directory / f"{stem}.json", directory / f"{stem}.txt"]
    return written
