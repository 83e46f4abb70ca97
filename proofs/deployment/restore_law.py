"""The restore law of one deployment: for a prompt of L tokens and a later request with the same
L tokens, how many tokens the GPU prefix cache restores, hit(L), as a formula a deployer reads.

hit(L) is what `simulate` computes (models.prefill, models.prefix_cache: the prefill, what the
cache keeps, the coordinator's lookup). The law is the first formula of a small family that
equals it on every length checked: CP(L, u) = max(0, floor((L - 1) / u) * u), the last
u-boundary before the prompt's last token, its EAGLE form max(0, floor(L / u) * u - u), and, where blocks
are hashed with k > 1 tokens after them, max(0, floor((L - k) / u) * u), for u each grid the deployment
has (hash block, scheduler block, recurrent block, spans), or 0. The
lengths checked are every length up to a few hundred, every multiple of each grid up to four of
its largest, one either side, and lengths at random up to a billion. That is a bounded check, not a
proof: the law is reported as CHECKED with its count, and where no formula fits, the lengths
where the best one differs are named.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from models.plan import Plan
from models.prefill import grid_period, run_prefill
from models.prefix_cache import LookupFailure, cached_prefix, gpu_hit

EVERY_LENGTH_UP_TO = 256
RANDOM_LENGTHS = 64
RANDOM_UP_TO = 10**9
SEED = 2026  # the random lengths are the same on every run
CONDENSE_BEYOND = 64  # steps run one by one before a repeating prefill is condensed (models.prefill)
# The prefill steps the lengths checked may take in all (about 4 s): a budget far below the grids makes
# every prefill long, and the lengths are thinned to fit, or the law is not computed.
STEP_ALLOWANCE = 20_000


def resend_hit(p: Plan, length: int) -> int | None:
    """What a later identical request of `length` tokens restores from the GPU prefix cache
    (`simulate`'s `reuse`); None where vLLM's own lookup fails or the prefill stalls."""
    budget = p.geometry.deployment.max_num_scheduled_tokens
    trace = run_prefill(p, budget, prompt_tokens=length, output_tokens=0, condense_beyond=CONDENSE_BEYOND)
    if trace.stalled_at is not None:
        return None
    try:
        return gpu_hit(cached_prefix(p, trace, length, length), length, length)
    except LookupFailure:
        return None


class TooCostly(Exception):
    """Checking the law would take more prefill steps than STEP_ALLOWANCE."""


@dataclass(frozen=True)
class Formula:
    text: str  # as printed, in L
    of: Callable[[int], int]


def _boundary(unit: int, drop: bool) -> Formula:
    if drop:
        return Formula(f"max(0, ⌊L/{unit:,}⌋·{unit:,} − {unit:,})", lambda n: max(0, n // unit * unit - unit))
    return Formula(f"⌊(L − 1)/{unit:,}⌋·{unit:,}", lambda n: max(0, (n - 1) // unit * unit))


def _boundary_ahead(unit: int, ahead: int) -> Formula:
    """The last u-boundary that `ahead` tokens of the prompt follow: a block hashed with the tokens after it
    (vLLM's num_hash_lookahead_tokens) is keyed only once they are in the prompt."""
    return Formula(f"max(0, ⌊(L − {ahead})/{unit:,}⌋·{unit:,})", lambda n: max(0, (n - ahead) // unit * unit))


def candidates(p: Plan) -> list[Formula]:
    """The formulas tried, simplest first."""
    split = p.split
    units = sorted(
        {int(split.hash_block), int(split.sched_block), int(split.block), p.cadence, *map(int, p.target_spans)}
    )
    found = [Formula("0", lambda n: 0)]
    for drop in (bool(split.eagle_drop), not split.eagle_drop):
        found += [_boundary(unit, drop) for unit in units]
    ahead = p.geometry.deployment.hash_lookahead_tokens
    if ahead > 1:
        found += [_boundary_ahead(unit, ahead) for unit in units]
    return found


def lengths_checked(p: Plan, limit: int | None = None, spans: int = 4, randoms: int = RANDOM_LENGTHS) -> list[int]:
    """Every length up to EVERY_LENGTH_UP_TO, every multiple of each grid up to `spans` of the largest
    one either side, and `randoms` lengths at random (seeded) up to RANDOM_UP_TO or `limit`."""
    split = p.split
    sizes = {int(split.hash_block), int(split.sched_block), int(split.block), p.cadence, *map(int, p.target_spans)}
    sizes.add(p.geometry.deployment.max_num_scheduled_tokens)
    top = spans * max(sizes)
    found = set(range(1, EVERY_LENGTH_UP_TO + 1))
    for size in sizes:
        for multiple in range(size, top + 1, size):
            found.update((multiple - 1, multiple, multiple + 1))
    rng = random.Random(SEED)
    found.update(rng.randint(1, limit or RANDOM_UP_TO) for _ in range(randoms))
    return sorted(n for n in found if n >= 1 and (limit is None or n <= limit))


def steps_to_check(p: Plan, lengths: list[int]) -> int:
    """About how many prefill steps `resend_hit` takes over `lengths`: a prefill advances about a budget
    a step (a grid point under the split's alignment, the budget itself below a grid), and is condensed
    once it repeats, after at most a couple of grid periods."""
    split = p.split
    budget = p.geometry.deployment.max_num_scheduled_tokens
    grid = int(split.block)
    advance = budget if budget < grid else budget // grid * grid
    repeats_within = 3 * grid_period(p)
    return sum(min(n, repeats_within) // advance + 1 for n in lengths)


def affordable_lengths(p: Plan, limit: int | None) -> list[int] | None:
    """The lengths to check, thinned until their prefills fit STEP_ALLOWANCE; None if even the
    fewest do not."""
    for spans, randoms in ((4, RANDOM_LENGTHS), (2, 16), (1, 4)):
        lengths = lengths_checked(p, limit, spans, randoms)
        if steps_to_check(p, lengths) <= STEP_ALLOWANCE:
            return lengths
    return None


@dataclass
class RestoreLaw:
    formula: Formula | None  # None: no formula of the family fits
    checked: int  # lengths compared
    largest_checked: int
    differences: list[tuple[int, int | None, int]] = field(default_factory=list)  # (L, model, best formula)
    failures: list[int] = field(default_factory=list)  # lengths whose lookup fails or prefill stalls
    smallest_hit: int | None = None  # where a law is CHECKED, the least L it restores anything at
    failure: str = ""  # what happens at the first of `failures`, in a deployer's words
    lengths: tuple[int, ...] = ()  # every length checked, in order

    @property
    def verdict(self) -> str:
        return "CHECKED" if self.formula is not None and not self.failures else "NO FORMULA"

    def __call__(self, length: int) -> int:
        if self.formula is None:
            raise ValueError("no formula fits this deployment's restores")
        return self.formula.of(length)

    def as_json(self) -> dict:
        return {
            "verdict": self.verdict,
            "form": f"hit(L) = {self.formula.text}" if self.verdict == "CHECKED" else None,
            "checked_lengths": self.checked,
            "largest_checked": self.largest_checked,
            "differences": [list(d) for d in self.differences[:5]],
            "failures": self.failures[:5],
            "smallest_hit": self.smallest_hit,
            **({"failure": self.failure} if self.failure else {}),
        }


def restore_law(p: Plan, limit: int | None = None) -> RestoreLaw:
    """The law of one plan, checked on `lengths_checked` (up to `limit`, --max-model-len), thinned to
    what STEP_ALLOWANCE affords; `TooCostly` where not even the fewest lengths fit it."""
    lengths = affordable_lengths(p, limit)
    if lengths is None:
        budget = p.geometry.deployment.max_num_scheduled_tokens
        raise TooCostly(
            f"a budget of {budget:,} token{'s' if budget != 1 else ''} a step takes more than "
            f"{STEP_ALLOWANCE:,} prefill steps over the "
            "fewest lengths worth checking; `gridproof simulate` answers one length"
        )
    observed = {n: resend_hit(p, n) for n in lengths}
    best, differences = fit(p, observed)
    # The smallest hit a law names, and the length before it, are compared with the model like every length
    # checked; a law refitted on them may name another, compared in turn. A formula refuted stays refuted, so
    # this ends within the family.
    while not differences:
        low = smallest_hit(best, lengths)
        unseen = sorted({n for n in (low - 1, low) if n >= 1} - set(observed)) if low else []
        if not unseen:
            break
        observed.update({n: resend_hit(p, n) for n in unseen})
        best, differences = fit(p, observed)
    failures = sorted(n for n, hit in observed.items() if hit is None)
    law = RestoreLaw(
        formula=best if not differences else None,
        checked=len(observed),
        largest_checked=max(observed),
        lengths=tuple(sorted(observed)),
        differences=differences,
        failures=failures,
        failure=failure(p, failures[0]) if failures else "",
    )
    if law.verdict == "CHECKED":
        law.smallest_hit = smallest_hit(law.formula, lengths)
    return law


def fit(p: Plan, observed: dict[int, int | None]) -> tuple[Formula, list[tuple[int, int | None, int]]]:
    """The first formula of the family that equals the model on every length observed to restore (no
    differences), or the one that differs on fewest, with where it differs."""
    best, best_differences = None, None
    for formula in candidates(p):
        differences = [
            (n, hit, formula.of(n)) for n, hit in sorted(observed.items()) if hit is not None and hit != formula.of(n)
        ]
        if best_differences is None or len(differences) < len(best_differences):
            best, best_differences = formula, differences
        if not differences:
            break
    return best, best_differences


def failure(p: Plan, length: int) -> str:
    """Why a resend of `length` tokens has no hit to state: the prefill stalls, or vLLM's lookup fails."""
    budget = p.geometry.deployment.max_num_scheduled_tokens
    trace = run_prefill(p, budget, prompt_tokens=length, output_tokens=0, condense_beyond=CONDENSE_BEYOND)
    if trace.stalled_at is not None:
        return (
            f"the prefill of a {length:,}-token prompt stalls at step {trace.stalled_at} (the scheduler never "
            "finishes it), so nothing is cached or restored"
        )
    return f"vLLM's prefix-cache lookup fails for a {length:,}-token resend"


def smallest_hit(formula: Formula, lengths: list[int]) -> int | None:
    """The least L, up to the longest of `lengths`, that `formula` restores anything at (every formula of the
    family is monotone in L); None where it restores nothing there. restore_law compares the model with the
    formula at that L and the one before it."""
    low, high = 1, max(lengths)
    if formula.of(high) == 0:
        return None
    while low < high:
        middle = (low + high) // 2
        if formula.of(middle) > 0:
            high = middle
        else:
            low = middle + 1
    return low
