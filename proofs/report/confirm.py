"""A second solver's word on every exported query (`gridproof prove --confirm
cvc5`): each entry agrees (every query answered as Z3 answered it),
disagrees (some query answered the other way: a failure), or is unknown
(some query unanswered within the budget: reported, not a failure). The
lemma families' validity queries are confirmed too.

The solver reads exactly the standard SMT-LIB text that --report-dir writes
(proofs/report/smt2.py), never the Z3 options; only for a sat query that none
of its configurations decides, that text with Z3's model asserted
(MODEL_CHECK)."""

from __future__ import annotations

import concurrent.futures
from collections import Counter

import z3

from models.errors import GridproofError
from proofs.engine.lemmas import validity_queries
from proofs.report.smt2 import CVC5_CONFIGURATIONS, command_line, exported
from proofs.run.runner import progress
from proofs.runtime.workers import process_pool

SOLVERS = ("cvc5",)
# cvc5's resource units per query (deterministic, unlike its time limit):
# about 100,000 a second here. Every query cvc5 decides over --tier all needs
# under 40,000; the budget leaves room for a slower machine's answers to be
# the same, and bounds an unknown at a few seconds.
CVC5_RLIMIT = 500_000
# A sat query that no configuration decides is posed once more with every
# constant fixed to its value in a model Z3 finds of the same text: with
# nothing left to search, cvc5 checks that model. sat certifies the query
# satisfiable as any model does (cvc5 evaluated it); unsat says Z3's model is
# none, a disagreement.
MODEL_CHECK = "checking Z3's model"
MODEL_RLIMIT = 5_000_000  # Z3's budget to find the model again
AGREES, DISAGREES, UNKNOWN = "agrees", "disagrees", "unknown"
# An entry decided by running the engine on every case of a finite domain:
# it poses no query, so there is nothing to confirm, and it never counts as agreeing.
ENUMERATED = "decided by enumeration, not an SMT query"


class SolverMissing(GridproofError):
    pass


def decide_cvc5(text: str, rlimit: int = CVC5_RLIMIT, expected: str = "") -> tuple[str, str]:
    """cvc5's answer to a standard SMT-LIB script under the first of
    CVC5_CONFIGURATIONS that answers sat or unsat within `rlimit`, and that
    configuration's command-line options; for a query Z3 answered sat
    (`expected`) and none of them decides, cvc5's check of Z3's model
    (MODEL_CHECK); unknown (and '') when none answers."""
    for configuration in CVC5_CONFIGURATIONS:
        answer = answer_cvc5(text, rlimit, configuration)
        if answer in ("sat", "unsat"):
            return answer, command_line(configuration)
    if expected == "sat":
        fixed = with_z3_model(text)
        checked = answer_cvc5(fixed, rlimit) if fixed is not None else "unknown"
        if checked in ("sat", "unsat"):
            return checked, MODEL_CHECK
    return answer, ""


def with_z3_model(text: str) -> str | None:
    """`text` with, before its check-sat, an assertion fixing every constant
    to its value in a model Z3 finds of it within MODEL_RLIMIT; None when Z3
    finds none."""
    solver = z3.Solver(ctx=z3.Context())
    solver.set("rlimit", MODEL_RLIMIT)
    solver.from_string(text)
    if solver.check() != z3.sat:
        return None
    model = solver.model()
    fixed = "".join(f"(assert {(d() == model[d]).sexpr()})\n" for d in model.decls() if d.arity() == 0)
    head, check, tail = text.rpartition("(check-sat)")
    return head + fixed + check + tail


def answer_cvc5(text: str, rlimit: int = CVC5_RLIMIT, configuration: tuple[tuple[str, str], ...] = ()) -> str:
    """cvc5's answer to a standard SMT-LIB script under `configuration`
    (option, value pairs): sat, unsat or unknown."""
    try:
        import cvc5
    except ImportError:
        raise SolverMissing("--confirm cvc5: the cvc5 package is not installed (pip install cvc5)") from None
    terms = cvc5.TermManager()
    solver = cvc5.Solver(terms)
    solver.setOption("rlimit-per", str(rlimit))
    for name, value in configuration:
        solver.setOption(name, value)
    symbols = cvc5.SymbolManager(terms)
    parser = cvc5.InputParser(solver, symbols)
    parser.setStringInput(cvc5.InputLanguage.SMT_LIB_2_6, text, "query")
    answers = []
    while not (command := parser.nextCommand()).isNull():
        output = command.invoke(solver, symbols).strip()
        if output:
            answers.append(output)
    return answers[-1] if answers else "no answer"


def answer_z3(text: str, z3_options: str = "", rlimit: int = 0) -> str:
    """Z3's answer to the script as `z3 FILE` gives it, the options read
    first. Options set by a script are global in Z3: they are reset before
    and after, so no script is posed under another's."""
    z3.reset_params()
    context = z3.Context()
    try:
        budget = f"(set-option :rlimit {rlimit})\n" if rlimit else ""
        output = z3.Z3_eval_smtlib2_string(context.ref(), z3_options + budget + text)
    except z3.Z3Exception as error:
        # Z3 answers, then reports an answer that differs from the script's :status as an error.
        output = error.value.decode() if isinstance(error.value, bytes) else str(error.value)
    finally:
        z3.reset_params()
    answers = [line for line in output.splitlines() if line in ("sat", "unsat", "unknown")]
    return answers[-1] if answers else f"no answer: {output.strip()}"


def agreement(expected: str, answer: str) -> str:
    if answer not in ("sat", "unsat"):
        return UNKNOWN
    return AGREES if answer == expected else DISAGREES


def confirm(entries, solver: str = "cvc5", rlimit: int = CVC5_RLIMIT, jobs: int = 1) -> dict:
    """Every decided query of `entries` and every lemma family posed to
    `solver`; the per-entry agreement and the counts."""
    if solver not in SOLVERS:
        raise SolverMissing(f"--confirm: unknown solver {solver!r} (known: {', '.join(SOLVERS)})")
    answer_cvc5("(set-logic QF_LIA)\n(check-sat)")  # a missing package stops here, before any work
    posed: list[tuple[str, str, str]] = []  # (owner, file, expected), in order
    texts: list[str] = []
    for entry, _, query, name in exported(entries):
        if query.answer in ("sat", "unsat"):
            posed.append((f"{entry.theorem} / {entry.variant}", name, query.answer))
            texts.append(query.text)
    for family, text in validity_queries().items():
        posed.append((f"lemma family {family}", f"lemma-{family}.smt2", "unsat"))
        texts.append(text)
    answers = _answer_all(texts, [expected for *_, expected in posed], rlimit, jobs)
    owners: dict[str, list[dict]] = {f"{e.theorem} / {e.variant}": [] for e in entries}
    for (owner, name, expected), (answer, options) in zip(posed, answers, strict=True):
        owners.setdefault(owner, []).append({"file": name, "expected": expected, "answer": answer, "options": options})
    rows = []
    enumerated = {f"{e.theorem} / {e.variant}" for e in entries if e.enumeration}
    for owner, files in owners.items():
        verdicts = {agreement(f["expected"], f["answer"]) for f in files}
        status = next((v for v in (DISAGREES, UNKNOWN) if v in verdicts), AGREES) if files else UNKNOWN
        rows.append({"entry": owner, "agreement": ENUMERATED if owner in enumerated else status, "files": files})
    counts = {
        status: sum(r["agreement"] == status for r in rows) for status in (AGREES, DISAGREES, UNKNOWN, ENUMERATED)
    }
    return {"solver": solver, "rlimit": rlimit, "queries": len(texts), "entries": rows, "counts": counts}


def _answer_all(texts: list[str], expected: list[str], rlimit: int, jobs: int) -> list[tuple[str, str]]:
    """decide_cvc5 of each text (Z3's answer `expected`), `jobs` at a time."""
    answers: list[tuple[str, str] | None] = [None] * len(texts)

    def done(i: int, answer: tuple[str, str]) -> None:
        answers[i] = answer
        under = f" ({_how(answer[1])})" if answer[1] else ""
        progress(f"[{sum(a is not None for a in answers)}/{len(texts)}] cvc5: {answer[0]}{under}")

    if jobs <= 1:
        for i, text in enumerate(texts):
            done(i, decide_cvc5(text, rlimit, expected[i]))
    else:
        with process_pool(jobs) as pool:
            futures = {pool.submit(decide_cvc5, text, rlimit, expected[i]): i for i, text in enumerate(texts)}
            for future in concurrent.futures.as_completed(futures):
                done(futures[future], future.result())
    progress("")
    return [a or ("no answer", "") for a in answers]


def render(report: dict) -> list[str]:
    """The lines printed after the table: every entry not in agreement, then the counts."""
    lines = []
    for row in report["entries"]:
        if row["agreement"] != AGREES:
            odd = [
                f"{f['file']}: {f['answer']}{' ' + _how(f['options']) if f.get('options') else ''}"
                f" (z3: {f['expected']})"
                for f in row["files"]
                if f["answer"] != f["expected"]
            ]
            if row["agreement"] == ENUMERATED:
                lines.append(f"{row['entry']}: {ENUMERATED} (the domain is in its --report-dir certificate)")
                continue
            lines.append(f"{report['solver']} {row['agreement']}: {row['entry']}: {'; '.join(odd) or 'no query'}")
    counts = report["counts"]
    alternative = Counter(f["options"] for row in report["entries"] for f in row["files"] if f.get("options"))
    lines.append(
        f"confirmed by {report['solver']} (rlimit {report['rlimit']:,} per query and configuration, "
        f"{report['queries']} queries): "
        f"of the entries and lemma families, {counts[AGREES]} agree, {counts[DISAGREES]} disagree, "
        f"{counts[UNKNOWN]} unknown within the budget"
        + (f"; {counts[ENUMERATED]} {ENUMERATED}, not confirmed" if counts[ENUMERATED] else "")
    )
    if alternative:
        under = ", ".join(f"{n} {_how(options)}" for options, n in alternative.items())
        lines.append(f"queries the defaults left unknown, answered: {under}")
    return lines


def _how(options: str) -> str:
    """How cvc5 came to an answer its defaults did not give."""
    return f"by {options}" if options == MODEL_CHECK else f"under cvc5 {options}"
