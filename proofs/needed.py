"""Recorded witnesses that each proved theorem needs its hypotheses.

A proof that no longer needs a hypothesis says the theorem changed: its goal
no longer reads what the hypothesis bounds (restore completeness asked of a
request of `tokens + 1` tokens instead of every later request of `new_tokens
>= tokens`), or the model it reads stopped depending on it. The entry still
proves, and states less than it did. So for every obligation a variant is
expected to prove, `python3 -m proofs.needed --write` records, for each
hypothesis its proof's deletion checks showed needed, a witness: an input at
which the goal fails, every other hypothesis the proof used holds and that one
does not, found by Z3 and replayed on the concrete model when recorded.
`gridproof prove` evaluates the goal at each recorded witness on the concrete
model again: a goal that holds at one makes the entry VACUOUS, naming the
hypothesis it no longer needs there. A goal changed on purpose is recorded
again, and the change shows in the record's diff.

Edges (proofs/edges.py) pin the domain from inside, where every hypothesis
holds; witnesses pin the goal from just outside it."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import z3

from proofs.claims import replay
from proofs.edges import small_inputs
from proofs.records import Record, RecordError
from proofs.solver import ERROR, PROVED, REFUTED, VACUOUS, SolverOptions, encode

RECORD = Path(__file__).parent / "recorded" / "hypotheses-needed.json"
RECORD_COMMAND = "python3 -m proofs.needed --write"
RECORDED = Record(RECORD, RECORD_COMMAND, "needed hypotheses")
SEARCH_RLIMIT = 5_000_000  # per witness; a hypothesis without a witness found within it is not recorded
REPLAY_RETRIES = 8  # models excluded after one the concrete model refutes


def recorded() -> dict:
    """theorem -> obligation -> variant -> [{"hypothesis": name, "inputs": {...}}]."""
    return RECORDED.theorems()


def weakened(theorem, variant_name: str, variant) -> tuple[str, str] | None:
    """(VACUOUS, why) when the goal of an obligation of `theorem` holds at a
    recorded witness that it needs one of its hypotheses, (ERROR, why) when
    the record has none for it or names inputs or hypotheses it no longer
    has; None when the goal fails at every witness, as recorded."""
    again = f"{RECORD_COMMAND} --theorem {theorem.name}"
    try:
        record = recorded().get(theorem.name, {})
    except RecordError as error:
        return ERROR, str(error)
    for obligation in theorem.obligations:
        witnesses = record.get(obligation.name, {}).get(variant_name)
        if witnesses is None:
            return ERROR, f"{obligation.name}: no recorded needed hypotheses for {variant_name}; record them: {again}"
        names = {v.name for v in obligation.variables}
        for witness in witnesses:
            inputs, hypothesis = witness["inputs"], witness["hypothesis"]
            try:
                claim = obligation.formula(variant, dict(inputs))
            except ZeroDivisionError:
                continue  # the goal's definedness fails there, as when it was recorded
            if set(inputs) != names or hypothesis not in claim.hypotheses:
                return ERROR, (
                    f"{obligation.name}: its recorded needed hypotheses name other inputs or hypotheses than it "
                    f"has now; record them again: {again}"
                )
            if claim.goal:
                return VACUOUS, (
                    f"{obligation.name}: the goal holds at the recorded input where, without {hypothesis!r}, it "
                    f"failed ({_shown(inputs)}): the theorem no longer needs that hypothesis there, so it states "
                    f"less than it did; if that is meant, record again ({again})"
                )
    return None


def _shown(inputs: dict) -> str:
    return ", ".join(f"{name}={value}" for name, value in inputs.items())


# --- recording -------------------------------------------------------------


def witnesses_of(obligation, variant, rlimit: int) -> list[dict]:
    """A replayed witness for each hypothesis the obligation's proof used:
    the obligation refuted with every other hypothesis the proof used and
    not that one. A hypothesis whose witness is not found within
    SEARCH_RLIMIT (one a deletion check left undecided: by the cheap
    refuters), or whose found one fails to make it false, is left out."""
    from proofs.runner import decide_obligation

    proof = decide_obligation(obligation, variant, SolverOptions(rlimit=rlimit), z3.Context())
    if proof.verdict != PROVED:
        raise RecordError(f"{obligation.name}: {proof.verdict} ({proof.reason}); only a proof is recorded")
    used = set(proof.hypotheses_used)
    stated = proof.hypothesis_names or []
    witnesses = []
    for name in sorted(used):
        drop = frozenset(h for h in stated if h not in used or h == name)
        # One a deletion check left undecided is sought by the cheap refuters
        # alone: over --tier all, a full query for those found none in time.
        search = SolverOptions(
            rlimit=SEARCH_RLIMIT, refute_first=True, drop=drop, probe_only=name in proof.hypotheses_unconfirmed
        )
        out = decide_obligation(replace(obligation, case_split=()), variant, search, z3.Context())
        values = out.counterexample if out.verdict == REFUTED else None
        if values is None or not _witnesses(obligation, variant, name, values, drop):
            # The refuters' counterexample, where there is one, divides by
            # zero (a divisor's positivity, which pins no goal) or did not
            # replay: sought again where the model is defined.
            values = _defined_witness(obligation, variant, name, used)
        if values is not None:
            witnesses.append({"hypothesis": name, "inputs": values})
    return witnesses


def _witnesses(obligation, variant, name: str, values: dict, drop) -> bool:
    """On the concrete model, at `values`: `name` false, every hypothesis but those in `drop` true, the goal false."""
    try:
        without = not obligation.formula(variant, dict(values)).hypotheses[name]
    except ZeroDivisionError:
        return False  # a witness the concrete model cannot read is not recorded
    return without and replay(obligation.formula, variant, values, drop=drop)[0]


def _defined_witness(obligation, variant, name: str, used: set[str]) -> dict | None:
    """An input where `name` is false, the other hypotheses in `used` hold,
    the model divides by no zero and the goal fails, replayed; small inputs
    first (edges.small_inputs). A model the concrete reading refutes (a symbolic lcm's slack) is
    excluded and another sought, a few times."""
    encoding = encode(obligation.formula, obligation.variables, variant, z3.Context(), rlimit=SEARCH_RLIMIT)
    goal = encoding.claim.goal
    if not isinstance(goal, z3.ExprRef):
        return None
    stated = set(encoding.hypotheses)
    drop = frozenset(stated - (used - {name}))
    for bounded in (True, False):
        solver = encoding.solver(tracked=False, limit=SEARCH_RLIMIT // 4, only=used - {name}, lemmas=False)
        solver.add(z3.Not(encoding.hypotheses[name]), *encoding.context.obligations, z3.Not(goal))
        if bounded:
            solver.add(*small_inputs(encoding))
        for _ in range(REPLAY_RETRIES):
            if solver.check() != z3.sat:
                break
            model = solver.model()
            values = encoding.values(model)
            if _witnesses(obligation, variant, name, values, drop):
                return values
            solver.add(z3.Or(*(i != model.eval(i, model_completion=True) for i in encoding.ints)))
    return None


def main(argv: list[str] | None = None) -> int:
    return RECORDED.main(
        argv,
        "python3 -m proofs.needed",
        __doc__.split("\n\n")[0],
        RECORDED.per_obligation(
            lambda obligation, variant, expectation: witnesses_of(obligation, variant, expectation.rlimit)
        ),
    )


if __name__ == "__main__":
    sys.exit(main())
