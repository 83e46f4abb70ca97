"""One SMT-LIB file per obligation, for anyone to recheck a verdict with the z3 binary (or another
solver) without gridproof.

The solver tracks each named hypothesis with a literal `hyp:NAME` (that is how it gets unsat cores);
in the text the solver prints, those literals are free, so a checker could switch every hypothesis off
and answer sat. The file written here asserts every tracking literal before `(check-sat)`, so it
states exactly what was decided: the hypotheses and the negated goal. For a PROVED obligation the
answer is `unsat`; for a REFUTED one `sat`. They come from the live run (the JSON result does not
carry them), so `gridproof prove --report-dir DIR` writes them and `gridproof report` cannot."""

from __future__ import annotations

import re
from pathlib import Path

TRACKER = re.compile(r"\(declare-fun (\|hyp:[^|]*\|) \(\) Bool\)")
EXPECTED_ANSWER = {"PROVED": "unsat", "REFUTED": "sat"}


def checkable(text: str) -> str:
    """The solver's SMT-LIB text with every hypothesis-tracking literal asserted."""
    trackers = TRACKER.findall(text)
    asserted = "".join(f"(assert {t})\n" for t in trackers)
    head, found, tail = text.rpartition("(check-sat)")
    if not found:
        return text + asserted + "(check-sat)\n"
    return head + asserted + found + tail


def file_name(theorem: str, variant: str, obligation: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", f"{theorem}.{variant}.{obligation}")
    return f"{safe}.smt2"


def _case_split(theorem: str, obligation: str) -> tuple[str, ...]:
    from proofs.catalog import CATALOGUE

    found = CATALOGUE.get(theorem)
    for o in found.obligations if found else ():
        if o.name == obligation:
            return tuple(o.case_split)
    return ()


def header(entry, obligation: str) -> str:
    answer = EXPECTED_ANSWER.get(entry.verdict, "no answer was reached (the verdict is not decided)")
    lines = [
        f"gridproof obligation: theorem {entry.theorem}, variant {entry.variant}, obligation {obligation}",
        f"verdict: {entry.verdict} (manifest: {entry.expected}); expected answer: {answer}",
        "the hypotheses are asserted and the goal is negated: unsat means the goal holds for every input",
        f"recheck: z3 -st {file_name(entry.theorem, entry.variant, obligation)}",
        f"reproduce in gridproof: {entry.reproduce}",
    ]
    split = _case_split(entry.theorem, obligation)
    if split:
        lines.append(
            f"note: gridproof decides this obligation case by case over {', '.join(split)}; "
            "this file is one of those cases (the first the solver built), not all of them"
        )
    return "".join(f"; {line}\n" for line in lines)


def write_smt2(entries, directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for entry in entries:
        for obligation, text in entry.smt2.items():
            path = directory / file_name(entry.theorem, entry.variant, obligation)
            path.write_text(header(entry, obligation) + checkable(text), encoding="utf-8")
            written.append(path)
    return written
