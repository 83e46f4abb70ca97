"""A sorted set of token positions held as arithmetic progressions, so a
prefill of 10^12 tokens, whose chunk ends repeat with a period, keeps its
published states in a few ranges instead of 10^8 integers.

Every question asked of it (the largest element under a bound, the multiples
of a size) is answered per range, in time independent of the range's length.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Iterator


def _count(r: range) -> int:
    """len(r), also beyond sys.maxsize, where len() raises."""
    return max(0, (r.stop - r.start + r.step - 1) // r.step)


def _last(r: range) -> int:
    return r.start + (_count(r) - 1) * r.step


class Positions:
    """Token positions: the union of ascending ranges (steps positive) that
    hold disjoint positions, as a trace's distinct chunk ends do; a position
    in two ranges would be counted and iterated twice."""

    def __init__(self, ranges: Iterable[range] = ()) -> None:
        self.ranges = tuple(sorted((r for r in ranges if _count(r)), key=lambda r: r.start))

    @classmethod
    def of(cls, values: Iterable[int] | Positions) -> Positions:
        if isinstance(values, Positions):
            return values
        return cls(range(v, v + 1) for v in values)

    def __iter__(self) -> Iterator[int]:
        return heapq.merge(*self.ranges)

    @property
    def count(self) -> int:
        """How many positions (len() would stop at sys.maxsize)."""
        return sum(_count(r) for r in self.ranges)

    def progressions(self) -> list[tuple[int, int, int]]:
        """(first, step, count) of each range."""
        return [(r.start, r.step, _count(r)) for r in self.ranges]

    def __bool__(self) -> bool:
        return bool(self.ranges)

    def __repr__(self) -> str:
        return f"Positions({list(self.ranges)!r})"

    @property
    def is_explicit(self) -> bool:
        """Every position held one by one (no range longer than one)."""
        return all(_count(r) == 1 for r in self.ranges)

    def first(self, n: int) -> list[int]:
        return sorted(v for r in self.ranges for v in r[:n])[:n]

    def last(self, n: int) -> list[int]:
        return sorted(v for r in self.ranges for v in r[::-1][:n])[-n:] if n else []

    def at_most(self, bound: int) -> int | None:
        """The largest position <= bound; None if there is none."""
        best = None
        for r in self.ranges:
            if r.start <= bound:
                top = min(bound, _last(r))
                value = r.start + (top - r.start) // r.step * r.step
                best = value if best is None else max(best, value)
        return best

    def multiples_of(self, size: int) -> Positions:
        """The positions divisible by `size`: per range again a range, whose first element solves
        start + i * step = 0 (mod size) for the least i >= 0 (none unless gcd(size, step) divides start)."""
        kept = []
        for r in self.ranges:
            common = math.gcd(size, r.step)
            if r.start % common:
                continue
            every = size // common
            first = (-r.start // common) * pow(r.step // common, -1, every) % every
            kept.append(r[first::every])
        return Positions(kept)

    def __contains__(self, value: int) -> bool:
        return any(r.start <= value <= _last(r) and (value - r.start) % r.step == 0 for r in self.ranges)

    def among(self, values: Iterable[int]) -> Positions:
        """The positions that are also in `values` (a few explicit positions)."""
        return Positions.of(sorted({v for v in values if v in self}))

    def union(self, *others: Positions) -> Positions:
        """Every position of this and of `others`, each once: a single position already in a range is
        dropped, and ranges of one step whose positions share a residue and overlap or touch are
        merged (positions sets of this project's prefills and caches come in those shapes)."""
        ranges = [r for p in (self, *others) for r in p.ranges]
        singles = {r.start for r in ranges if _count(r) == 1}
        long = [r for r in ranges if _count(r) > 1]
        merged: list[range] = []
        for r in sorted(long, key=lambda r: (r.step, r.start % r.step, r.start)):
            last = merged[-1] if merged else None
            if last is not None and last.step == r.step and last.start % r.step == r.start % r.step:
                if r.start <= _last(last) + r.step:
                    merged[-1] = range(last.start, max(last.stop, _last(r) + r.step), r.step)
                    continue
            merged.append(r)
        kept = Positions(merged)
        return Positions([*merged, *(range(v, v + 1) for v in sorted(singles) if v not in kept)])
