"""The recorded size of each enumerated theorem's domain (proofs/engine/enumerated.py
decides by enumeration), and the check of a PROVED decision against it.

A domain cut down (a probe offset, an output-token count or a kind of
published positions left out of a list) proves less and still proves, and
its statement, built from the same lists, still reads true; so does a
check left out of a case function, or a field it no longer compares. So
the number of cases and how many times each named check was made are
recorded from outside the catalogue's code
(proofs/recorded/enumerated-domains.json), and a PROVED entry that decides
fewer cases or makes any check fewer times is VACUOUS."""

from __future__ import annotations

from pathlib import Path

from proofs.engine.enumerated import Decision
from proofs.engine.solver import ERROR, VACUOUS
from proofs.records.record import Record, RecordError

DOMAINS = Record(
    Path(__file__).parents[1] / "recorded" / "enumerated-domains.json",
    "gridproof record --only domains",
    "enumerated domain sizes",
)


def domain_size(decision: Decision) -> dict:
    return {"cases": decision.cases, "checks": dict(decision.checks)}


def smaller_than_recorded(theorem_name: str, variant_name: str, decision: Decision) -> tuple[str, str] | None:
    """(VACUOUS, why) when a PROVED decision covers fewer cases than recorded or makes a named check
    fewer times, (ERROR, why) when nothing is recorded for it; None when it covers at least the record."""
    try:
        recorded = DOMAINS.theorems().get(theorem_name, {}).get(variant_name)
    except RecordError as error:
        return ERROR, str(error)
    again = f"{DOMAINS.command} --theorem {theorem_name}"
    if recorded is None or not isinstance(recorded.get("checks"), dict):
        return ERROR, f"no recorded domain size and checks for {variant_name}; record them: {again}"
    if decision.cases < recorded["cases"]:
        return VACUOUS, (
            f"{decision.cases} cases decided, {recorded['cases']} recorded: a smaller domain proves less; if it "
            f"is meant, record it again ({again})"
        )
    fewer = [
        f"{name!r} {decision.checks.get(name, 0):,} times, recorded {times:,}"
        for name, times in recorded["checks"].items()
        if decision.checks.get(name, 0) < times
    ]
    if fewer:
        return VACUOUS, (
            f"checks made fewer times than recorded: {'; '.join(fewer)}: a check left out, or made on fewer "
            f"values, proves less; if it is meant, record it again ({again})"
        )
    return None
