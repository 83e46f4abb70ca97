"""The queries an obligation's decision poses, as data: the answer to one
(`Answer`), the query cache that answers a query posed again within a task
(`QueryCache`, `shared_queries`), and what is exported for other solvers
(`Query`, `standard_smt2`)."""

from __future__ import annotations

import contextlib
import contextvars
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import z3


@dataclass(frozen=True)
class Query:
    """One query a verdict rests on, for anyone to pose again: `text` is
    standard SMT-LIB 2.6 (any solver reads it); `z3_options` are the Z3-only
    settings gridproof decided it under, kept apart so other solvers never
    see them. `answer` is Z3's: unsat for a proved case (or one the
    hypotheses exclude), sat for a counterexample's query."""

    case: tuple[tuple[str, bool], ...]  # the case split's values, empty without a split
    answer: str
    text: str
    z3_options: str

    def to_json(self) -> dict:
        return {
            "case": [list(pair) for pair in self.case],
            "answer": self.answer,
            "text": self.text,
            "z3_options": self.z3_options,
        }

    @classmethod
    def from_json(cls, data: dict) -> Query:
        return cls(
            tuple((name, value) for name, value in data["case"]), data["answer"], data["text"], data["z3_options"]
        )


@dataclass(frozen=True)
class Answer:
    """One query's answer, as decided or taken from the query cache."""

    result: z3.CheckSatResult
    reason: str  # why it is unknown, when it is
    cost: int  # the rlimit it cost when it was decided
    key: str = ""  # its key in the query cache, when it went through one


class QueryCache:
    """Answers to the queries posed so far, for the same query posed again:
    a theorem's variants and mutants often read to the very same terms, and
    then its proof and vacuity queries repeat (deletion queries are posed on
    a solver of their own, minimisation.DeletionQueries, not through here). The key is the
    query's SMT-LIB text with Z3's let-names numbered in order of appearance
    (they come from term ids), so equal keys are equal queries. Only answers
    that hold whatever the budget are kept: unsat, and unknown with the rlimit
    it was reached under, reused under a budget no larger. A sat answer needs
    its model, so that query is always posed. Each answer keeps the rlimit it
    cost, which the minimisation reads as the proof's own cost."""

    def __init__(self) -> None:
        self._answers: dict[str, tuple[z3.CheckSatResult, int, str, int]] = {}
        self._minimised: dict[str, tuple[list[str], list[str]]] = {}

    def minimised(self, key: str) -> tuple[list[str], list[str]] | None:
        """A proof's minimised hypotheses (used, unconfirmed), by a key that
        holds the proof query's."""
        return self._minimised.get(key)

    def store_minimised(self, key: str, result: tuple[list[str], list[str]]) -> None:
        self._minimised[key] = result

    def lookup(self, key: str, cap: int) -> tuple[z3.CheckSatResult, str, int] | None:
        """The answer, why it is unknown (if it is), and what it cost."""
        found = self._answers.get(key)
        if found is None:
            return None
        answer, reached_under, reason, cost = found
        if answer == z3.unsat or cap <= reached_under:
            return answer, reason, cost
        return None

    def store(self, key: str, answer: z3.CheckSatResult, cap: int, reason: str, cost: int) -> None:
        if answer != z3.sat:
            self._answers[key] = (answer, cap, reason, cost)

    @staticmethod
    def key(solver: z3.Solver, extra: Sequence[z3.ExprRef], smt2: str | None = None) -> str:
        """`smt2`: the solver's to_smt2() text, when the caller has it already."""
        text = (solver.to_smt2() if smt2 is None else smt2) + "".join(f"(assume {e.sexpr()})" for e in extra)
        names: dict[str, str] = {}
        return _LET_NAME.sub(lambda m: names.setdefault(m.group(0), f"?n{len(names)}"), text)


_LET_NAME = re.compile(r"[$?][a-z]\d+\b")
active: contextvars.ContextVar[QueryCache | None] = contextvars.ContextVar("gridproof_query_cache", default=None)


@contextlib.contextmanager
def shared_queries() -> Iterator[QueryCache]:
    """Within the block, every obligation decided answers a query it poses
    again (an identical one, asked before in the block) from the first answer."""
    cache = QueryCache()
    token = active.set(cache)
    try:
        yield cache
    finally:
        active.reset(token)


def standard_smt2(text: str, answer: str) -> str:
    """A solver's to_smt2() text as a standard SMT-LIB 2.6 script: the logic
    declared (integers, nonlinear, no quantifiers), the answer Z3 gave as its
    status, one (check-sat). Z3 writes only declarations and assertions in
    between, with let-names that are plain SMT-LIB symbols."""
    body = text.removeprefix("; benchmark generated from python API\n").removeprefix("(set-info :status unknown)\n")
    head, found, tail = body.rpartition("(check-sat)")
    body = head if found else body
    status = answer if answer in ("sat", "unsat") else "unknown"
    return (
        f"(set-info :smt-lib-version 2.6)\n(set-logic QF_NIA)\n(set-info :status {status})\n{body}(check-sat)\n(exit)\n"
    )
