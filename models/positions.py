"""A sorted set of token positions held as arithmetic progressions, so a
prefill of 10^12 tokens, whose chunk ends repeat with a period, keeps its
published states in a few ranges instead of 10^8 integers.

Every question asked of it (the largest element under a bound, the multiples
of a size, the largest element a predicate accepts) is answered per range,
in time independent of the range's length where the question allows.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterable, Iterator


def _count(r: range) -> int:
    """len(r), also beyond sys.maxsize, where len() raises."""
    return max(0, (r.stop - r.start + r.step - 1) // r.step)


def _last(r: range) -> int:
    return r.start + (_count(r) - 1) * r.step


class Positions:
    """Token positions: the union of ascending ranges (steps positive)."""

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
        """The positions divisible by `size`: per range again a range, found among its first
        size / gcd(size, step) elements."""
        kept = []
        for r in self.ranges:
            every = size // math.gcd(size, r.step)
            hit = next((i for i, v in enumerate(r[:every]) if v % size == 0), None)
            if hit is not None:
                kept.append(r[hit::every])
        return Positions(kept)

    def largest(self, accepts: Callable[[int], bool], period: int, settled_below: int) -> int | None:
        """The largest position `accepts`, given that below `settled_below` a position it rejects has
        every lower position of the same residue modulo `period` rejected too (the acceptance depends
        there only on the residue and on lower bounds). So the search down a range whose step is a
        multiple of `period` stops at its first element below that bound."""
        best = None
        for r in self.ranges:
            uniform = r.step % period == 0
            for value in r[::-1]:
                if best is not None and value <= best:
                    break
                if accepts(value):
                    best = value
                    break
                if uniform and value < settled_below:
                    break
        return best
