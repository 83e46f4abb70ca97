"""Compare two `gridproof prove --json` results entry by entry:
`python3 -m proofs.compare_results A.json B.json`.

Per (theorem, variant) it compares what a run concludes: the verdict, the
hypotheses the proof used, the counterexample, and the verdicts with a
hypothesis dropped (ablations). Budgets, times, reused queries and the cache
may move between runs and are not compared. An entry present in one result
only is a difference.

Exit status 0: the same conclusions; 1: some differ (each difference is a
line naming the entry); 2: a file that is not a result, or one holding no
entry or an entry twice (one line on stderr): an empty result agreed with
an empty one.
Where `gridproof prove --against` looks for regressions since an earlier run,
this asks whether two runs (say, before and after a refactoring) agree.
"""

from __future__ import annotations

import sys

from models.errors import GridproofError
from proofs.commands.arguments import Parser
from proofs.run.result import key, load_baseline

# What a run concludes per entry, with the wording a difference is printed in.
COMPARED = (
    ("verdict", "verdict"),
    ("hypotheses_used", "hypotheses used"),
    ("counterexample", "counterexample"),
    ("ablations", "verdicts with a hypothesis dropped"),
    ("conjuncts_alone", "verdicts on a goal conjunct alone"),
)


class CompareError(GridproofError):
    pass


def entries_by_key(result: dict, path: str) -> dict[tuple[str, str], dict]:
    entries: dict[tuple[str, str], dict] = {}
    for entry in result["entries"]:
        if key(entry) in entries:
            theorem, variant = key(entry)
            raise CompareError(f"{path}: {theorem} / {variant} appears twice")
        entries[key(entry)] = entry
    return entries


def differences(first: dict, second: dict, names: tuple[str, str] = ("A", "B")) -> list[str]:
    """One line per entry and compared field that differ, in the first result's order."""
    a, b = entries_by_key(first, names[0]), entries_by_key(second, names[1])
    lines = []
    for entry_key in [*a, *(k for k in b if k not in a)]:
        label = " / ".join(entry_key)
        if entry_key not in b:
            lines.append(f"{label}: only in {names[0]}")
            continue
        if entry_key not in a:
            lines.append(f"{label}: only in {names[1]}")
            continue
        for field, words in COMPARED:
            before, after = _conclusion(a[entry_key], field), _conclusion(b[entry_key], field)
            if before != after:
                lines.append(f"{label}: {words} {_shown(before)} in {names[0]}, {_shown(after)} in {names[1]}")
    return lines


def _conclusion(entry: dict, field: str):
    """The field as a run concludes it; an absent list or map reads as empty."""
    value = entry.get(field)
    if field == "hypotheses_used":
        return sorted(value or [])
    if field in ("ablations", "conjuncts_alone"):
        return dict(sorted((value or {}).items()))
    return value


def _shown(value) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}={v}" for k, v in value.items()) + "}" if value else "none"
    if isinstance(value, list):
        return "[" + ", ".join(value) + "]"
    return "none" if value is None else str(value)


def main(argv: list[str] | None = None) -> int:
    """The command: compare the two results named in `argv` and print the differences, or one line saying they
    agree. Exit status 0 the same, 1 some differ, 2 bad input (one line on stderr)."""
    parser = Parser(
        prog="python3 -m proofs.compare_results",
        description="compare two `gridproof prove --json` results: verdict, hypotheses used, counterexample "
        "and ablations per (theorem, variant); exit 0 same, 1 differ, 2 bad input",
    )
    parser.add_argument("first", metavar="A.json")
    parser.add_argument("second", metavar="B.json")
    try:
        args = parser.parse_args(argv)
        first, second = load_baseline(args.first), load_baseline(args.second)
        found = differences(first, second, (args.first, args.second))
    except GridproofError as error:
        print(f"compare_results: error: {error}", file=sys.stderr)
        return 2
    if found:
        print("\n".join(found))
        print(f"{len(found)} difference{'s' if len(found) != 1 else ''} between {args.first} and {args.second}")
        return 1
    print(
        f"same: {len(first['entries'])} entries agree on verdict, hypotheses used, counterexample and ablations "
        f"({args.first}, {args.second})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
