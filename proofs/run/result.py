"""The canonical result (format "gridproof-result/1", written by `gridproof prove --json`): loading it
back, checking its shape, and the questions every rendering asks of it.

Every rendering reads this object and nothing else, so a report can be made later, elsewhere, from a
result file alone.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path

from models.errors import GridproofError
from models.files import parse_json, read_user_text
from models.variants import VARIANTS
from proofs.run.shape import Fields, ListOf, MapOf, Optional, ShapeError, check_shape

FORMAT = "gridproof-result/1"
DECIDED = ("PROVED", "REFUTED")
VARIANT_ORDER = tuple(VARIANTS)  # models/variants.py, in its order
# Every field a rendering reads, and the kind of value it must hold.
_ENTRY = Fields(
    {
        "theorem": "str",
        "variant": "str",
        "verdict": "str",
        "expected": "str",
        "rlimit": "int",
        "seconds": "number",
    },
    optional={
        "hypotheses_used": ListOf("str"),
        "hypotheses_unconfirmed": ListOf("str"),
        "hypotheses": ListOf("str"),
        "counterexample": Optional(MapOf(Optional("scalar"))),
        "reason": "str",
        "ablations": MapOf("str"),
        "conjuncts_alone": MapOf("str"),
        "reproduce": "str",
        "reused_queries": "int",
        "subject": "str",
        "statement": "str",
        "tier": "str",
        "source": Optional("str"),
        "enumeration": Fields(
            {}, optional={"domain": "str", "cases": "int", "exercised": "int", "checks": MapOf("int")}
        ),
        "ok": "bool",
    },
)
_SEED_ROW = Fields(
    {
        "theorem": "str",
        "variant": "str",
        "verdicts": MapOf("str"),
        "rlimit_min": "int",
        "rlimit_max": "int",
        "rlimit_cv": "number",
    },
    optional={"flipped": "bool"},
)
RESULT_SHAPE = Fields(
    {
        "format": "str",
        "z3_version": "str",
        "model_hash": "str",
        "seconds": "number",
        "rlimit": "int",
        "entries": ListOf(_ENTRY),
        "failures": "int",
    },
    optional={
        "selection": Optional(
            Fields(
                {},
                optional={
                    "theorem": Optional("str"),
                    "variant": Optional("str"),
                    "tier": Optional("str"),
                    "rlimit": Optional("int"),
                    "seed": Optional("int"),
                },
            )
        ),
        "jobs": Optional("int"),
        "against": Optional(Fields({}, optional={"path": "str", "changes": ListOf("str"), "notes": ListOf("str")})),
        "brittleness": Optional(Fields({}, optional={"summary": "str", "entries": ListOf(_SEED_ROW)})),
    },
)


class ReportError(GridproofError):
    """A result file that cannot be read: one line, exit status 2."""


def load_result(path: str | Path) -> dict:
    """The result written at `path`, parsed, its shape checked and its strings checked to be text a report can
    write. Raises ReportError, naming the file, for anything else."""
    path = Path(path)
    text = read_user_text(path, "a result written by `gridproof prove --json`")
    try:
        data = parse_json(text, parse_constant=_no_constant)
    except json.JSONDecodeError as error:
        problem = error.msg.removesuffix(" starting at").lower()
        raise ReportError(
            f"{path}: not valid JSON at line {error.lineno}, column {error.colno}: {problem} (truncated?)"
        ) from None
    except ValueError as error:
        raise ReportError(f"{path}: not usable JSON: {error}") from None
    check_result(data, str(path))
    if _ESCAPED_NOT_TEXT.search(text):  # JSON spells both only as escapes: without one, no string holds them
        _check_text(data, str(path))
    return data


def load_baseline(path: str | Path) -> dict:
    """A result to compare another with (`prove --against`, compare_results): a result holding at
    least one entry, each (theorem, variant) once. One with no entries passed every comparison
    ("no regression"), and of two entries for one (theorem, variant) only the last was compared."""
    data = load_result(path)
    if not data["entries"]:
        raise ReportError(f"{path}: holds no entries, so nothing can be compared with it")
    seen: dict[tuple[str, str], int] = {}
    for i, entry in enumerate(data["entries"]):
        if key(entry) in seen:
            theorem, variant = key(entry)
            raise ReportError(
                f"{path}: entries[{i}]: {theorem} / {variant} appears twice (entries[{seen[key(entry)]}] too)"
            )
        seen[key(entry)] = i
    return data


def selects(selection: dict | None, entry: dict) -> bool:
    """Whether a run of `selection` (a result's "selection": theorem, variant, tier) decides `entry`,
    as runner.plan_runs selects: the tier only without a theorem. No selection recorded: every entry."""
    selection = selection or {"tier": "all"}
    theorem, variant, tier = selection.get("theorem"), selection.get("variant"), selection.get("tier") or "ci"
    if theorem is not None and entry["theorem"] != theorem:
        return False
    if variant is not None and entry["variant"] not in variant.split(","):
        return False
    return theorem is not None or tier == "all" or entry.get("tier", "ci") == tier


def covers(old: dict | None, new: dict) -> bool:
    """False when a run of selection `old` cannot have decided every entry a run of selection `new`
    decides, by the selections alone: checked before the run. Where only the entries can tell (a
    theorem named now, a tier before), diff.compare checks them after it."""
    old, new = old or {"tier": "all"}, new or {}
    if old.get("theorem") is not None and old["theorem"] != new.get("theorem"):
        return False
    if old.get("variant") is not None:
        if new.get("variant") is None or not set(new["variant"].split(",")) <= set(old["variant"].split(",")):
            return False
    old_tier, new_tier = old.get("tier") or "ci", new.get("tier") or "ci"
    return old.get("theorem") is not None or new.get("theorem") is not None or old_tier in ("all", new_tier)


def _no_constant(name: str):
    raise ValueError(f"{name} is not a number a result holds")


# What no string of a result holds: control characters other than tab and line ends (invalid in JUnit's
# XML), and lone surrogates, which JSON's \ud800 spells and no UTF-8 report can write.
_NOT_TEXT = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff]")
# Their JSON escapes (a raw control character is not JSON, a surrogate has no UTF-8): \u0000 to \u001f and
# \ud800 to \udfff, a few allowed ones among them.
_ESCAPED_NOT_TEXT = re.compile(r"\\u(?:00[01][0-9a-fA-F]|[dD][89a-fA-F][0-9a-fA-F]{2})")


def _check_text(data, where: str) -> None:
    """Every string of `data`, keys included, is text a report can write; else one line naming it.
    A value's place is kept as a chain of (parent, key) and written out only for the one refused:
    spelled out for each of a large result's million values, it took longer than the reading."""
    pending: list[tuple[object, tuple | None]] = [(data, None)]
    while pending:
        value, trail = pending.pop()
        if isinstance(value, str):
            found = _NOT_TEXT.search(value)
            if found:
                kind = "a lone surrogate" if "\ud800" <= found.group() <= "\udfff" else "a control character"
                raise ReportError(
                    f"{_place(where, trail)}: holds U+{ord(found.group()):04X}, {kind}, which no result holds"
                )
        elif isinstance(value, dict):
            for key, item in value.items():
                pending.append((key, (trail, key, True)))
                pending.append((item, (trail, key, False)))
        elif isinstance(value, list):
            pending += [(item, (trail, i, False)) for i, item in enumerate(value)]


def _place(where: str, trail: tuple | None) -> str:
    """`where` followed by the path a trail of (parent, key, is the key itself) spells."""
    steps = []
    while trail is not None:
        trail, key, itself = trail
        steps.append((key, itself))
    at = where
    for depth, (key, itself) in enumerate(reversed(steps)):
        if itself:
            return f"{at} (a key)"
        if isinstance(key, int):
            at = f"{at}[{key}]"
        else:
            at = f"{at}.{key}" if depth else f"{at}: {key}"
    return at


def check_result(data, where: str = "result") -> None:
    if not isinstance(data, dict):
        raise ReportError(f"{where}: expected a JSON object written by `gridproof prove --json`")
    if "format" not in data:
        raise ReportError(f"{where}: no format field; expected {json.dumps(FORMAT)} (gridproof prove --json)")
    if data["format"] != FORMAT:
        shown = json.dumps(data["format"])[:40]
        raise ReportError(f"{where}: format is {shown}, expected {json.dumps(FORMAT)} (gridproof prove --json)")
    try:
        check_shape(data, RESULT_SHAPE)
    except ShapeError as error:
        raise ReportError(f"{where}: {error}") from None


def is_ok(entry: dict) -> bool:
    """The manifest's verdict, decided, every ablation refuting and every
    conjunct the manifest names refuted alone (the runner's Entry.ok)."""
    return (
        entry["verdict"] == entry["expected"]
        and entry["verdict"] in DECIDED
        and all(v == "REFUTED" for v in entry.get("ablations", {}).values())
        and all(v == "REFUTED" for v in entry.get("conjuncts_alone", {}).values())
    )


def problems(entry: dict) -> list[str]:
    """Why an entry fails, one phrase each; empty when it is ok."""
    found = []
    verdict, expected = entry["verdict"], entry["expected"]
    if verdict != expected:
        found.append(f"expected {expected}, got {verdict}")
    elif verdict not in DECIDED:
        found.append(f"{verdict} is never a success")
    for hypothesis, outcome in entry.get("ablations", {}).items():
        if outcome != "REFUTED":
            found.append(f"dropping hypothesis {hypothesis!r} gave {outcome}, expected REFUTED")
    for conjunct, outcome in entry.get("conjuncts_alone", {}).items():
        if outcome != "REFUTED":
            found.append(f"the goal's conjunct {conjunct!r} alone gave {outcome}, expected REFUTED")
    return found


def key(entry: dict) -> tuple[str, str]:
    return entry["theorem"], entry["variant"]


def is_mutant(variant: str) -> bool:
    return variant.startswith("mutant:")


def variant_sort_key(variant: str) -> tuple[int, str]:
    if variant in VARIANT_ORDER:
        return VARIANT_ORDER.index(variant), variant
    return len(VARIANT_ORDER), variant


def by_theorem(entries: Iterable[dict]) -> dict[str, list[dict]]:
    """Entries grouped per theorem, in catalogue order, variants before mutants."""
    groups: dict[str, list[dict]] = {}
    for entry in entries:
        groups.setdefault(entry["theorem"], []).append(entry)
    for group in groups.values():
        group.sort(key=lambda e: variant_sort_key(e["variant"]))
    return groups


def variants(entries: Iterable[dict]) -> list[str]:
    """The engine's variants present (models/variants.py), in its order: one column each of the
    verdict table. Any other name (not a mutant) is counted in a column of its own (`others`), so
    the table is as wide whatever the result holds: a column per name, over a row per theorem, made
    a result of 33,000 entries with as many names a table of 10^9 cells."""
    present = {e["variant"] for e in entries}
    return [v for v in VARIANT_ORDER if v in present]


def others(entries: Iterable[dict]) -> list[dict]:
    """The entries of a variant neither the engine's nor a mutant."""
    return [e for e in entries if e["variant"] not in VARIANT_ORDER and not is_mutant(e["variant"])]


def counts(entries: Iterable[dict]) -> dict[str, int]:
    tally: dict[str, int] = {}
    for entry in entries:
        tally[entry["verdict"]] = tally.get(entry["verdict"], 0) + 1
    return dict(sorted(tally.items()))


def headline(result: dict) -> str:
    entries = result["entries"]
    failures = sum(not is_ok(e) for e in entries)
    tally = ", ".join(f"{n} {v}" for v, n in counts(entries).items()) or "none"
    status = "all as the manifest expects" if not failures and entries else f"{failures} failing"
    return f"{len(entries)} obligations ({tally}): {status}"


def selection_text(result: dict) -> str:
    selection = result.get("selection") or {}
    parts = [f"tier {selection.get('tier') or 'ci'}"]
    for name in ("theorem", "variant", "seed"):
        if selection.get(name) is not None:
            parts.append(f"{name} {selection[name]}")
    if selection.get("rlimit"):
        parts.append(f"rlimit {selection['rlimit']:,} per obligation")
    return ", ".join(parts)


def source_path_line(entry: dict) -> tuple[str, int] | None:
    """The model source location of an entry's theorem, as (repo-relative path, line)."""
    source = entry.get("source") or ""
    path, _, line = source.rpartition(":")
    if not path or not line.isdigit():
        return None
    return path, int(line)


def first_sentence(text: str) -> str:
    text = " ".join(text.split())
    end = text.find(". ")
    return text if end < 0 else text[: end + 1]
