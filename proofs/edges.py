"""Recorded edges of every proved theorem's domain.

A theorem proved under narrower hypotheses proves less, and still proves:
`x >= 1` narrowed to `x >= 2`, or `end <= tokens` to `end < tokens`, leaves
the entry PROVED as the manifest expects. So the domain of every obligation
a variant is expected to prove is pinned from outside the catalogue's code:
`python3 -m proofs.edges --write` finds, for every comparison its hypotheses
make (and every Bool input, both ways), an input at which the comparison is
tight (its two sides equal, or one apart for a strict one) and every
hypothesis holds, checks that input on the concrete model, and records it in
proofs/recorded/domain-edges.json. `gridproof prove` reads each recorded
input on the concrete model again: a hypothesis false at one of them makes
the entry VACUOUS, naming the edge, so a narrowed hypothesis fails the run.
A domain narrowed on purpose is recorded again, and the change shows in the
record's diff.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import z3

from models.errors import GridproofError
from proofs.claims import Kind, hypotheses_false
from proofs.solver import ERROR, PROVED, VACUOUS, encode

RECORD = Path(__file__).parent / "recorded" / "domain-edges.json"
RECORD_COMMAND = "python3 -m proofs.edges --write"
FORMAT = 1
# Inputs are sought within this range first, so a recorded edge reads small;
# an edge no input in it reaches is sought without the range.
SMALL = 64
SEARCH_RLIMIT = 2_000_000  # per query; an edge not found within it is not recorded
JOIN_RLIMIT = 100_000  # per query joining another edge to an input found
_COMPARISONS = {z3.Z3_OP_LE: "<=", z3.Z3_OP_GE: ">=", z3.Z3_OP_LT: "<", z3.Z3_OP_GT: ">"}


class RecordError(GridproofError):
    pass


@functools.cache
def _recorded(text: str) -> dict:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise RecordError(f"{RECORD}: not valid JSON: {error}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("theorems"), dict):
        raise RecordError(f"{RECORD}: not a record of domain edges of format {FORMAT}; write it: {RECORD_COMMAND}")
    return data["theorems"]


def recorded() -> dict:
    """theorem -> obligation -> variant -> [{"edge": label, "inputs": {...}}]."""
    try:
        text = RECORD.read_text(encoding="utf-8")
    except OSError as error:
        raise RecordError(f"{RECORD}: cannot read: {error.strerror}; write it: {RECORD_COMMAND}") from None
    return _recorded(text)


def excluded(theorem, variant_name: str, variant) -> tuple[str, str] | None:
    """(VACUOUS, why) when the hypotheses of an obligation of `theorem`
    exclude one of its recorded edges for `variant_name`, (ERROR, why) when
    the record has none for it or names other inputs; None when every
    recorded edge is admitted."""
    try:
        record = recorded().get(theorem.name, {})
    except RecordError as error:
        return ERROR, str(error)
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
    is tight, and for every Bool input, one where it holds and one where it
    does not, as far as the hypotheses admit; an input found for one edge
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
            tight = {
                z3.Z3_OP_LE: low == high,
                z3.Z3_OP_GE: low == high,
                z3.Z3_OP_LT: low + 1 == high,
                z3.Z3_OP_GT: low == high + 1,
            }[kind]
            yield f"{name}: {_short(low)} {_COMPARISONS[kind]} {_short(high)} is tight", tight
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


def _search(encoding, obligation, variant, tight: z3.BoolRef, others) -> tuple[dict, z3.ModelRef] | None:
    """A model of the hypotheses at the edge `tight`, and at as many of the
    `others` as it can be at too (so that fewer inputs are recorded), whose
    inputs the concrete model admits: small inputs first."""
    ints = [encoding.inputs[v.name] for v in encoding.free if v.kind is Kind.INT]
    for bounded in (True, False):
        solver = encoding.solver(tracked=False, limit=SEARCH_RLIMIT, lemmas=False)
        solver.add(tight)
        if bounded:
            solver.add(*(z3.And(-SMALL <= i, i <= SMALL) for i in ints))
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


def record(theorems: list[str] | None = None, progress=None) -> dict:
    """The record, with the edges of `theorems` (all when None) found
    afresh and every other theorem's kept from the current record."""
    from proofs.catalog import CATALOGUE
    from proofs.mutation.handwritten import in_effect
    from proofs.runner import load_manifest

    manifest = load_manifest()
    try:
        current = dict(recorded())
    except RecordError:
        current = {}
    result = {}
    for name, theorem in CATALOGUE.items():
        if theorem.enumeration is not None:
            continue
        if theorems is not None and name not in theorems:
            if name in current:
                result[name] = current[name]
            continue
        proved = [
            v for v, verdict in manifest[name].expected.items() if verdict == PROVED and not v.startswith("mutant:")
        ]
        if not proved:
            continue
        result[name] = {}
        for obligation in theorem.obligations:
            result[name][obligation.name] = {}
            for variant_name in proved:
                with in_effect(variant_name) as variant:
                    points = edges_of(obligation, variant)
                result[name][obligation.name][variant_name] = points
                if progress:
                    progress(f"{name} / {obligation.name} / {variant_name}: {len(points)} edges")
    return result


def write(theorems: list[str] | None = None) -> None:
    """Record the edges into RECORD, one recorded input a line, so a change to a domain reads in the diff."""
    data = record(theorems, progress=lambda line: print(line, file=sys.stderr, flush=True))
    RECORD.write_text(_layout({"format": FORMAT, "command": RECORD_COMMAND, "theorems": data}) + "\n", encoding="utf-8")
    _recorded.cache_clear()


def _layout(value, depth: int = 0) -> str:
    """JSON, objects indented and each list's items on a line of their own."""
    pad = " " * depth
    if isinstance(value, dict) and value:
        items = [f"{pad} {json.dumps(key)}: {_layout(item, depth + 1).lstrip()}" for key, item in value.items()]
        return pad + "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(value, list) and value:
        items = [pad + " " + json.dumps(item, separators=(",", ":")) for item in value]
        return pad + "[\n" + ",\n".join(items) + "\n" + pad + "]"
    return pad + json.dumps(value)


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python3 -m proofs.edges", description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help=f"record the edges into {RECORD.name}")
    parser.add_argument("--theorem", action="append", help="only this theorem (repeatable); the others are kept")
    args = parser.parse_args(argv)
    if not args.write:
        parser.error("nothing to do: --write records the edges")
    from proofs.catalog import CATALOGUE

    unknown = [name for name in args.theorem or () if name not in CATALOGUE]
    if unknown:
        parser.error(f"--theorem: unknown theorem {unknown[0]!r}")
    write(args.theorem)
    return 0


if __name__ == "__main__":
    sys.exit(main())
