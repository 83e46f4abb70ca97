"""Recorded edges of every proved theorem's domain.

A theorem proved under narrower hypotheses proves less, and still proves:
`x >= 1` narrowed to `x >= 2`, `end <= tokens` to `end < tokens`, or
`x >= 0` to `x == 0`, leaves the entry PROVED as the manifest expects. So
the domain of every obligation a variant is expected to prove is pinned
from outside the catalogue's code:
`gridproof record --only edges` finds, for every comparison its hypotheses
make (and every Bool input, both ways), an input at which the comparison is
tight (its two sides equal, or one apart for a strict one), and one at
which it holds by one more, where every hypothesis holds; it checks each
input on the concrete model and records it in
proofs/recorded/domain-edges.json. `gridproof prove` reads each recorded
input on the concrete model again: a hypothesis false at one of them makes
the entry VACUOUS, naming the edge, so a narrowed hypothesis fails the run.
A domain narrowed on purpose is recorded again, and the change shows in the
record's diff.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import z3

from proofs.engine.claims import Kind, hypotheses_false
from proofs.engine.problem import pinned
from proofs.engine.solver import ERROR, VACUOUS, encode
from proofs.records.record import Record, RecordError

RECORD = Path(__file__).parents[1] / "recorded" / "domain-edges.json"
RECORD_COMMAND = "gridproof record --only edges"
# Inputs are sought within this range first, so a recorded edge reads small;
# an edge no input in it reaches is sought without the range.
SMALL = 64
SEARCH_RLIMIT = 2_000_000  # per query; an edge not found within it is not recorded
JOIN_RLIMIT = 100_000  # per query joining another edge to an input found
_COMPARISONS = {z3.Z3_OP_LE: "<=", z3.Z3_OP_GE: ">=", z3.Z3_OP_LT: "<", z3.Z3_OP_GT: ">"}


RECORDED = Record(RECORD, RECORD_COMMAND, "domain edges")


def recorded() -> dict:
    """theorem -> obligation -> variant -> [{"edge": label, "inputs": {...}}]."""
    return RECORDED.theorems()


def excluded(theorem, variant_name: str, variant) -> tuple[str, str] | None:
    """(VACUOUS, why) when the hypotheses of an obligation of `theorem`
    exclude one of its recorded edges for `variant_name`, (ERROR, why) when
    the record has none for it or names other inputs; None when every
    recorded edge is admitted."""
    try:
        record = recorded().get(theorem.name, {})
    except RecordError as error:
        return ERROR, str(error)
    decided = {obligation.name for obligation in theorem.obligations}
    for name, variants in record.items():
        if name not in decided and variant_name in variants:
            return VACUOUS, (
                f"{name}: an obligation recorded for {variant_name} that the theorem no longer decides (a shape "
                f"or case left out proves less); if it is meant, record the edges again ({RECORD_COMMAND} "
                f"--theorem {theorem.name})"
            )
    for obligation in theorem.obligations:
        points = record.get(obligation.name, {}).get(variant_name)
        if points is None:
            return ERROR, (
                f"{obligation.name}: no recorded edges of its domain for {variant_name}; record them: "
                f"{RECORD_COMMAND} --theorem {theorem.name}"
            )
        names = {v.name for v in obligation.variables}
        for point in points:
            inputs = point["inputs"]
            if set(inputs) != names:
                return ERROR, (
                    f"{obligation.name}: its recorded edges name other inputs than it reads now; record them "
                    f"again: {RECORD_COMMAND} --theorem {theorem.name}"
                )
            false = _hypotheses_false(obligation.formula, variant, inputs)
            if false:
                return VACUOUS, (
                    f"{obligation.name}: the hypotheses exclude the recorded edge of its domain where "
                    f"{point['edge']} ({false}): a narrowed domain proves less; if it is meant, record the "
                    f"edges again ({RECORD_COMMAND} --theorem {theorem.name})"
                )
    return None


def _hypotheses_false(formula, variant, inputs: dict) -> str:
    """'' when every hypothesis holds at `inputs` on the concrete model, else which do not."""
    try:
        claim = formula(variant, dict(inputs))
    except ZeroDivisionError:
        return "the concrete model divides by zero there"
    false = hypotheses_false(claim)
    return f"{', '.join(false)} false there" if false else ""


# --- recording -------------------------------------------------------------


def edges_of(obligation, variant) -> list[dict]:
    """Inputs at the edges of the obligation's domain, each checked on the
    concrete model: for every comparison in its hypotheses, one at which it
    is tight and one at which it holds by one more, and for every Bool
    input, one where it holds and one where it does not, as far as the
    hypotheses admit; an input found for one edge
    that is at others too stands for them. In the order the edges are met."""
    context = z3.Context()
    encoding = encode(obligation.formula, obligation.variables, variant, context, rlimit=10**12)
    edges = list(_edges(encoding))
    reached: set[int] = set()
    points = []
    for index, (label, tight) in enumerate(edges):
        if index in reached:
            continue
        others = [t for i, (_, t) in enumerate(edges) if i > index and i not in reached]
        found = _search(encoding, obligation, variant, tight, others)
        if found is None:
            continue
        values, model = found
        reached.update(i for i, (_, t) in enumerate(edges) if z3.is_true(model.eval(t, model_completion=True)))
        points.append({"edge": label, "inputs": values})
    return points


def _edges(encoding) -> Iterator[tuple[str, z3.BoolRef]]:
    """(label, the edge as a term) of every comparison the hypotheses make and of every Bool input."""
    seen: set[int] = set()
    for name, hypothesis in encoding.hypotheses.items():
        for atom in _comparisons(hypothesis, seen):
            low, high = atom.arg(0), atom.arg(1)
            kind = atom.decl().kind()
            small, large = (high, low) if kind in (z3.Z3_OP_GE, z3.Z3_OP_GT) else (low, high)
            least = 1 if kind in (z3.Z3_OP_LT, z3.Z3_OP_GT) else 0  # the smallest gap the comparison admits
            comparison = f"{name}: {_short(low)} {_COMPARISONS[kind]} {_short(high)}"
            yield f"{comparison} is tight", small + least == large
            yield f"{comparison} holds by one more", small + least + 1 == large
    for v in encoding.free:
        if v.kind is Kind.BOOL:
            flag = encoding.inputs[v.name]
            yield f"{v.name} holds", flag
            yield f"{v.name} does not hold", z3.Not(flag)


def _short(term: z3.ExprRef, width: int = 60) -> str:
    text = " ".join(str(term).split())
    return text if len(text) <= width else text[: width - 3] + "..."


def _comparisons(term: z3.ExprRef, seen: set[int]) -> Iterator[z3.ExprRef]:
    stack = [term]
    while stack:
        node = stack.pop()
        if not z3.is_app(node) or node.get_id() in seen:
            continue
        seen.add(node.get_id())
        if node.decl().kind() in _COMPARISONS and z3.is_int(node.arg(0)):
            yield node
        stack.extend(reversed(node.children()))


def small_inputs(encoding) -> list[z3.BoolRef]:
    """Every Int input of `encoding` within [-SMALL, SMALL]: where a recorded input is sought first."""
    return pinned(encoding.ints, (-SMALL, SMALL))


def _search(encoding, obligation, variant, tight: z3.BoolRef, others) -> tuple[dict, z3.ModelRef] | None:
    """A model of the hypotheses at the edge `tight`, and at as many of the
    `others` as it can be at too (so that fewer inputs are recorded), whose
    inputs the concrete model admits: small inputs first."""
    for bounded in (True, False):
        solver = encoding.solver(tracked=False, limit=SEARCH_RLIMIT, lemmas=False)
        solver.add(tight)
        if bounded:
            solver.add(*small_inputs(encoding))
        if solver.check() != z3.sat:
            continue
        solver.set("rlimit", JOIN_RLIMIT)
        joined = 0  # the scopes of the other edges kept
        for other in others:
            solver.push()
            solver.add(other)
            if solver.check() == z3.sat:
                joined += 1
            else:
                solver.pop()
        solver.set("rlimit", SEARCH_RLIMIT)
        for alone in (False, True):  # the edges joined, else `tight` alone
            if alone:
                if not joined:
                    break
                solver.pop(joined)
            if solver.check() != z3.sat:
                continue
            model = solver.model()
            values = encoding.values(model)
            # A model the concrete reading refutes (the lcm's slack) is not recorded.
            if not _hypotheses_false(obligation.formula, variant, values):
                return values, model
    return None
