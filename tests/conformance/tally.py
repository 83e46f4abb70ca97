"""Counts every comparison of the model with the real vLLM, for the summary
line conftest.py prints, and turns mismatches into one failure that shows the
inputs."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass


@dataclass
class Count:
    cases: int = 0
    mismatches: int = 0


COUNTS: dict[str, Count] = {}
SHOWN_MISMATCHES = 5


def _outcome(function: Callable, case):
    try:
        return function(case)
    except Exception as error:  # a crash on either side is a mismatch, shown with its input
        return f"raised {error!r}"


def compare(kind: str, cases: Iterable, model: Callable, real: Callable) -> None:
    """Compares `model(case)` with `real(case)` for every case, counts them all
    under `kind`, and fails listing the first mismatching inputs."""
    count = COUNTS.setdefault(kind, Count())
    mismatches = []
    for case in cases:
        count.cases += 1
        expected, got = _outcome(real, case), _outcome(model, case)
        if got != expected:
            count.mismatches += 1
            mismatches.append(f"  input: {case!r}\n    vLLM 0.33.0: {expected!r}\n    model:       {got!r}")
    if mismatches:
        shown = "\n".join(mismatches[:SHOWN_MISMATCHES])
        raise AssertionError(f"{kind}: {len(mismatches)} mismatches with vLLM 0.33.0, first ones:\n{shown}")


def count(kind: str, cases: int) -> None:
    """Counts cases compared elsewhere (in `compare` under another kind)."""
    COUNTS.setdefault(kind, Count()).cases += cases


def summary_lines() -> list[str]:
    return [f"conformance: {kind} {c.cases} cases, {c.mismatches} mismatches" for kind, c in COUNTS.items()]
