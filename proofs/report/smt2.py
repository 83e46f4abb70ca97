"""Every query a verdict rests on, as a standard SMT-LIB 2.6 file, for anyone
to recheck with the z3 binary, cvc5 or another solver, without gridproof.

One file per obligation and per case of a case split: unsat for a proved
case (the hypotheses asserted, the goal negated) or one the hypotheses
exclude, sat for a counterexample's query. The files hold only standard
commands; the Z3 options gridproof decided them under are in separate
header files (z3-options-*.smt2), which `z3` reads first and other solvers
never see. The lemma families that arith asserts beside the witness
definitions get a file each (lemma-*.smt2) whose unsat proves the family
valid. They come from the live run (the JSON result does not carry them),
so `gridproof prove --report-dir DIR` writes them and `gridproof report`
cannot."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from pathlib import Path

from proofs.engine.lemmas import validity_queries
from proofs.engine.solver import Query
from proofs.runtime import atomic

# cvc5's configurations, each as options on its command line, tried in
# this order on a query the ones before it leave unknown within the budget:
# cvc5's defaults, then three that decide queries the defaults do not. Over
# the ci tier's exports the defaults left 11 queries unknown, among them the
# multiplication-monotone lemma family (d > 0 and b < a give b*d + d <= a*d);
# arith-brab false decides 6 of them, ext-rew-prep agg 2 more, simplification
# none 2 more (docs/evidence.md). A configuration's sat or unsat is cvc5's
# answer: each is sound, and an answer unlike Z3's, from any of them, is a
# disagreement.
CVC5_CONFIGURATIONS: tuple[tuple[tuple[str, str], ...], ...] = (
    (),
    (("arith-brab", "false"),),
    (("ext-rew-prep", "agg"),),
    (("simplification", "none"),),
)


def command_line(configuration: tuple[tuple[str, str], ...]) -> str:
    """A configuration as cvc5's command-line options ('' for its defaults)."""
    return " ".join(f"--{name}={value}" for name, value in configuration)


MEANING = {
    "unsat": "unsat: the goal holds for every input the hypotheses admit in this case",
    "sat": "sat: a counterexample, every input set to its value",
    "unknown": "no answer was reached within the budget",
}


def file_name(theorem: str, variant: str, obligation: str, case: tuple[tuple[str, bool], ...] = ()) -> str:
    label = "".join(f".{name}-{str(value).lower()}" for name, value in case)
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", f"{theorem}.{variant}.{obligation}{label}")
    return f"{safe}.smt2"


def exported(entries) -> Iterator[tuple[object, str, Query, str]]:
    """(entry, obligation, query, file name) for every query of `entries`."""
    for entry in entries:
        for obligation, queries in entry.queries.items():
            for query in queries:
                yield entry, obligation, query, file_name(entry.theorem, entry.variant, obligation, query.case)


def options_file(z3_options: str) -> str:
    """The header file for a set of Z3 options, named by its text: most obligations share one."""
    return f"z3-options-{hashlib.sha256(z3_options.encode()).hexdigest()[:10]}.smt2"


def header(entry, obligation: str, query: Query, name: str) -> str:
    case = ", ".join(f"{k}={v}" for k, v in query.case)
    lines = [
        f"gridproof obligation: theorem {entry.theorem}, variant {entry.variant}, obligation {obligation}"
        + (f", case {case}" if case else ""),
        f"entry verdict: {entry.verdict} (manifest: {entry.expected}); this file: {MEANING[query.answer]}",
        f"recheck with z3 as gridproof posed it: cat {options_file(query.z3_options)} {name} | z3 -in",
        f"recheck with another solver: cvc5 {name}",
        "where cvc5 answers unknown, --confirm cvc5 poses it again with "
        + ", then ".join(command_line(c) for c in CVC5_CONFIGURATIONS[1:]),
        f"reproduce in gridproof: {entry.reproduce}",
    ]
    return "".join(f"; {line}\n" for line in lines)


def write_smt2(entries, directory: Path) -> list[Path]:
    """Write into `directory` every query of `entries`, each with its header, the Z3 options' header files
    they share and a validity query per lemma family; the paths written."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    options: dict[str, str] = {}
    for entry, obligation, query, name in exported(entries):
        path = directory / name
        atomic.write_text(path, header(entry, obligation, query, name) + query.text)
        written.append(path)
        options[options_file(query.z3_options)] = query.z3_options
    for name, text in sorted(options.items()):
        note = "; Z3-only options gridproof decides with: read before an obligation's file, by z3 alone\n"
        atomic.write_text(directory / name, note + text)
        written.append(directory / name)
    for family, text in validity_queries().items():
        path = directory / f"lemma-{family}.smt2"
        note = f"; lemma family {family} (models/arith.py): unsat proves it follows from the witness definitions\n"
        atomic.write_text(path, note + text)
        written.append(path)
    return written
