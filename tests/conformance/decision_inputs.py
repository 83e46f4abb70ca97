"""Split calls aimed at each of the split's decisions, one after another.

The split ends a chunk at the first of its stops strictly inside it (the next
block boundary, the last cacheable position, the partial-hash tail, the
shared-prefix junction, exact or block-floored), else at the requested end
aligned to the grid, else at the requested end. An internal checkpoint turns
the first three stops off. The random calls rarely reach some of these paths:
an internal checkpoint from a start off the block grid, behind a cache hit, is
one. A fault on a path no recorded call takes passes `matches-recorded-vllm`.

Here every reachable combination of (the deciding stop, an internal
checkpoint or not, a start on the grid or not, which cache hits moved the
start) is a target, and each call is built for its target from vLLM's
arithmetic: positions are put at, or one off, the places the split compares
(the next boundary, the checkpoint position, the tail, the prompt, the
prefill end, a block past the start). Nothing here reads the model, so the
inputs do not move with it; tests/test_recorded.py reads the record with the
model and checks that each target is reached.
"""

from __future__ import annotations

import dataclasses
import math
import random
from typing import NamedTuple

from models.scheduler import SplitCall, SplitParams

BLOCKS = (2, 3, 4, 6, 8, 12, 16, 64, 768)
HITS = ("no hit", "local", "external", "both")
_LEAST = {"no hit": 0, "local": 1, "external": 1, "both": 2}  # the least start that holds the hits


class Target(NamedTuple):
    decider: str  # the stop that ends the chunk, "aligned end", "none" or "past prefill"
    internal: bool  # an internal checkpoint is exported
    on_grid: bool  # the chunk starts on a block multiple
    hits: str  # one of HITS


# The reachable combinations: an internal checkpoint turns the next-boundary, lcp and tail stops off
# and needs the chunk to reach the prefill's end (so nothing aligns); the lcp, and the floored
# junction without an internal checkpoint, are grid points past the start, so from off the grid the
# next boundary comes first; the next boundary is a stop only from off the grid.
_BOTH = (True, False)
_REACHABLE = (
    ("past prefill", False, _BOTH),
    ("none", False, _BOTH),
    ("none", True, _BOTH),
    ("aligned end", False, _BOTH),
    ("next boundary", False, (False,)),
    ("lcp", False, (True,)),
    ("hash tail", False, _BOTH),
    ("junction exact", False, _BOTH),
    ("junction exact", True, _BOTH),
    ("junction floored", False, (True,)),
    ("junction floored", True, _BOTH),
)
TARGETS = tuple(
    Target(decider, internal, on_grid, hits)
    for decider, internal, grids in _REACHABLE
    for on_grid in grids
    for hits in HITS
)


def checkpoint_position(n: int, unit: int, drop: bool, lookahead: int) -> int:
    """vLLM's get_mamba_prefill_checkpoint_position."""
    limit = n if drop else n - max(1, lookahead)
    return max(limit // unit * unit - (unit if drop else 0), 0)


def _hash_blocks(g: int, off_grid: bool) -> list[int]:
    """Hash blocks for block `g`: finer and coarser; off the grid, only those
    whose multiples leave it (a hash-aligned start off the block grid)."""
    candidates = {1, g, 2 * g} | {g // k for k in (2, 3, 4) if g % k == 0} | ({3 * g // 2} if g % 2 == 0 else set())
    return sorted(h for h in candidates if not (off_grid and h % g == 0))


def _budget(rng: random.Random, g: int, below_block: bool | None = None) -> tuple[int, int]:
    """(max_scheduled, long_prefill_threshold): at or one off the block;
    `below_block` forces the budget under the block (a chunk too short to align)
    or not under it."""
    wide = (g, g + 1, rng.randint(g, 4 * g + 8))
    narrow = (max(1, g - 1), max(1, rng.randint(1, g - 1)))
    if below_block is None:
        budget = rng.choice(wide + narrow)
    else:
        budget = rng.choice(narrow if below_block else wide)
    threshold = rng.choice((0, budget) if below_block else (0, 0, budget, budget + 1))
    return budget, threshold


def _params(rng: random.Random, g: int, h: int, **fixed) -> SplitParams:
    budget, threshold = _budget(rng, g, fixed.pop("below_block", None))
    values = {
        "block": g,
        "sched_block": math.lcm(g, h) * rng.choice((1, 1, 2, 4)),
        "hash_block": h,
        "eagle_drop": rng.random() < 0.3,
        "lookahead": rng.choice((0, 0, 1, 2, rng.randint(1, 8))),
        "max_scheduled": budget,
        "long_prefill_threshold": threshold,
        "partial_hits": rng.random() < 0.5,
        "checkpoint_blocks": rng.random() < 0.5,
        "checkpoint_alignment": rng.choice((0, 1, h, 2 * h, 3, 16)),
        "shared_prefix": rng.random() < 0.5,
    }
    values.update(fixed)
    return SplitParams(**values)


def _no_internal(rng: random.Random) -> dict:
    """A deployment that exports no internal checkpoint."""
    return rng.choice(({"checkpoint_blocks": False}, {"checkpoint_alignment": 0}))


def _start(rng: random.Random, g: int, on_grid: bool, hits: str, blocks: int = 6) -> int:
    """A start on or off the block grid, at least one token per cache hit."""
    k = rng.randint(1 if _LEAST[hits] else 0, blocks)
    if on_grid:
        return k * g
    return k * g + rng.choice((1, g - 1, rng.randint(1, g - 1)))


def _part(rng: random.Random, limit: int, h: int) -> int:
    """A cache hit of at most `limit` tokens: a whole number of hash blocks, or any."""
    if h <= limit and rng.random() < 0.5:
        return rng.randint(1, limit // h) * h
    return rng.randint(1, limit)


def _call(rng, start, requested, prompt, tokens, junction, hits, h) -> SplitCall:
    """The call that starts at `start`, its cache hits split off as `hits` says."""
    local = external = 0
    if hits == "local":
        local = _part(rng, start, h)
    elif hits == "external":
        external = _part(rng, start, h)
    elif hits == "both":
        local = _part(rng, start - 1, h)
        external = _part(rng, start - local, h)
    return SplitCall(start - local - external, requested, prompt, tokens, local, external, max(0, junction))


def _outputs(rng: random.Random, g: int) -> int:
    return rng.choice((0, 0, 1, 2, rng.randint(1, g)))


def _prefill_end(prompt: int, tokens: int) -> int:
    return max(prompt, tokens - 1)


def _past_end(rng: random.Random, g: int) -> int:
    """How far past the prefill's end a chunk that reaches it ends."""
    return rng.choice((0, 0, 1, 2, rng.randint(0, g)))


# --- an internal checkpoint: the junction, or nothing, ends the chunk ------------------------------


def _internal(rng: random.Random, t: Target):
    """A chunk from a start that lies a whole number of alignments and hash
    blocks before the checkpoint position, reaching the prefill's end."""
    least = _LEAST[t.hits]
    while True:
        g = rng.choice(BLOCKS)
        h = rng.choice(_hash_blocks(g, not t.on_grid))
        alignment = rng.choice((1, h, 2 * h, 3, 16))
        p = _params(rng, g, h, checkpoint_blocks=True, checkpoint_alignment=alignment)
        unit = h if p.partial_hits else p.sched_block
        step = math.lcm(alignment, h)
        prompt = rng.randint(2, 8) * max(unit, 2 * g + step) + rng.choice((0, 1, rng.randint(0, unit)))
        tokens = prompt + _outputs(rng, g)
        prefill_end = _prefill_end(prompt, tokens)
        position = checkpoint_position(prefill_end, unit, p.eagle_drop, p.lookahead)
        # VALID: start + H <= CP, and two block columns between the start and the end.
        starts = [
            position - j * step
            for j in range(1, 4 * g + 64)
            if j * step >= max(h, 2 * g) and position - j * step >= least
            if ((position - j * step) % g == 0) == t.on_grid
        ]
        if starts:
            break
    start = starts[0] if rng.random() < 0.5 else rng.choice(starts[:8])
    # at the prefill's end or past it; now and then one short of it, where the checkpoint is not exported
    end = prefill_end + (-1 if rng.random() < 0.1 else _past_end(rng, g))
    nb = (start // g + 1) * g
    shared = p.shared_prefix
    if t.decider == "junction exact":
        shared = True
        places = [start + 1, start + g - 1, start + g, start + g + 1, nb - 1, nb, nb + 1]
        places += [position - 1, position, position + 1, prompt - 1, prompt, end - 1]
        places = [j for j in places if start < j < end and j <= prompt]
    elif t.decider == "junction floored":
        places = [start + g, start + g + 1, start + 2 * g - 1, nb + g, position, position + 1, prompt, prompt + 1]
        places = [j for j in places + [end - 1] if start + g <= j < end]
        if shared and any(j > prompt for j in places) and rng.random() < 0.5:
            places = [j for j in places if j > prompt]  # past the prompt the junction is floored too
        else:
            shared = False
    else:  # nothing inside the chunk: the junction outside it, or floored back to the start
        inside = [j for j in (start + 1, nb, start + g - 1) if start < j < min(start + g, end)]
        shared = shared and not inside
        places = [0, start, end, end + 1, *inside, *inside]
    junction = rng.choice(places)
    p = dataclasses.replace(p, shared_prefix=shared)
    return p, _call(rng, start, end - start, prompt, tokens, junction, t.hits, h)


# --- no internal checkpoint: one stop, or the alignment, ends the chunk -----------------------------


def _past_prefill(rng: random.Random, t: Target):
    g = rng.choice(BLOCKS)
    h = rng.choice(_hash_blocks(g, False))
    prompt = rng.randint(1, 6 * g)
    tokens = prompt + _outputs(rng, g)
    prefill_end = _prefill_end(prompt, tokens)
    start = max(prefill_end + rng.choice((0, 0, 1, rng.randint(0, g))), 2)
    start = -(-start // g) * g if t.on_grid else start + (start % g == 0)
    junction = rng.choice((0, start, prompt, rng.randint(0, tokens + 1)))
    call = _call(rng, start, rng.choice((0, 1, g, rng.randint(0, 3 * g))), prompt, tokens, junction, t.hits, h)
    return _params(rng, g, h), call


def _aligned_end(rng: random.Random, t: Target):
    """The requested end short of the prefill's end and off the grid: it aligns
    down, to a boundary past the start or, within budget, back to it."""
    g = rng.choice(BLOCKS)
    h = rng.choice(_hash_blocks(g, False))
    start = _start(rng, g, t.on_grid, t.hits)
    nb = (start // g + 1) * g
    back = nb - start > 1 and rng.random() < 0.3  # aligned back to the start's block: nothing is scheduled
    if back:
        aligned = start // g * g
        end = rng.randint(start + 1, nb - 1)
    else:
        # off the grid, only the next boundary: a later one would be the next-boundary stop
        aligned = nb + g * rng.choice((0, 0, 1, rng.randint(0, 4))) * t.on_grid
        end = aligned + rng.choice((1, g - 1, rng.randint(1, g - 1)))
    prompt = end + 1 + rng.choice((0, 1, g + 2 * h + 8 + rng.randint(0, 3 * g)))
    tokens = prompt + _outputs(rng, g)
    junction = rng.choice((0, 0, aligned, aligned + 1, end - 1, end, prompt))
    p = _params(rng, g, h, below_block=False if back else None)
    return p, _call(rng, start, end - start, prompt, tokens, junction, t.hits, h)


def _next_boundary(rng: random.Random, t: Target):
    """From off the grid, a chunk past the next boundary, no finer stop before it."""
    g = rng.choice(BLOCKS)
    partial = rng.random() < 0.4
    h = rng.choice((g, 2 * g) if partial else _hash_blocks(g, False))  # a tail on the grid
    start = _start(rng, g, False, t.hits)
    nb = (start // g + 1) * g
    if rng.random() < 0.5:  # the chunk reaches the prefill's end
        prompt = nb + rng.choice((1, 2, rng.randint(1, 3 * g)))
        tokens = prompt + _outputs(rng, g)
        end = _prefill_end(prompt, tokens) + _past_end(rng, g)
    else:  # it aligns down to a later boundary
        end = nb + g * rng.choice((1, 2)) + rng.choice((0, 1, g - 1))
        prompt = end + rng.choice((1, 2, rng.randint(1, 3 * g)))
        tokens = prompt + _outputs(rng, g)
    junction = rng.choice((0, nb, nb + 1, start + g - 1, rng.randint(nb, end + 1)))
    p = _params(rng, g, h, partial_hits=partial, **_no_internal(rng))
    return p, _call(rng, start, end - start, prompt, tokens, junction, t.hits, h)


def _lcp(rng: random.Random, t: Target):
    """From the grid, a chunk past the last cacheable position, which lies a block or a few past the start."""
    g = rng.choice(BLOCKS)
    h = rng.choice(_hash_blocks(g, False))
    p = _params(rng, g, h, **_no_internal(rng))
    start = _start(rng, g, True, t.hits)
    lcp = start + g * rng.choice((1, 1, 2, rng.randint(1, 4)))
    slack = rng.choice((0, g - 1, rng.randint(0, g - 1)))
    tokens = lcp + (g if p.eagle_drop else max(1, p.lookahead)) + slack
    prompt = max(1, tokens - rng.choice((0, 0, 1, 2, rng.randint(0, g))))
    end = _prefill_end(prompt, tokens) + _past_end(rng, g)
    junction = rng.choice((0, lcp, lcp + 1, end, rng.randint(lcp, end + 1)))
    return p, _call(rng, start, end - start, prompt, tokens, junction, t.hits, h)


def _hash_tail(rng: random.Random, t: Target):
    """Partial hits: the prompt's hash-block checkpoint lies past the last
    cacheable block position, and the chunk starts between the two."""
    least = _LEAST[t.hits]
    while True:
        g = rng.choice(BLOCKS)
        h = rng.choice([h for h in _hash_blocks(g, True) if h < g])
        p = _params(rng, g, h, partial_hits=True)
        prompt = rng.randint(0, 6) * g + rng.randint(1, g + 8)
        tokens = prompt + rng.choice((0, 0, 1, rng.randint(0, g)))
        lcp = checkpoint_position(tokens, g, p.eagle_drop, p.lookahead)
        tail = checkpoint_position(prompt, h, p.eagle_drop, p.lookahead)
        if not lcp < tail < prompt:
            continue
        if t.on_grid:
            starts = [s for s in range(lcp, tail, g) if s >= least]
        else:  # off the grid, the next boundary must lie past the tail
            starts = [s for s in range(max(lcp, tail // g * g) + 1, tail) if s % g and s >= least]
        if starts:
            break
    start = rng.choice((starts[0], starts[-1], rng.choice(starts)))
    prefill_end = _prefill_end(prompt, tokens)
    short = rng.random() < 0.3  # short of the prefill's end, with a budget under the block: no alignment
    end = rng.randint(tail + 1, prefill_end) if short and tail + 1 < prefill_end else prefill_end + _past_end(rng, g)
    budget, threshold = _budget(rng, g, below_block=True) if short else (p.max_scheduled, p.long_prefill_threshold)
    p = dataclasses.replace(p, max_scheduled=budget, long_prefill_threshold=threshold, **_no_internal(rng))
    junction = rng.choice((0, tail, tail + 1, end, rng.randint(tail, end + 1)))
    return p, _call(rng, start, end - start, prompt, tokens, junction, t.hits, h)


def _junction_exact(rng: random.Random, t: Target):
    """A shared-prefix junction inside the start's block, at the prompt or short of it."""
    while True:  # room for a junction between the start and the next boundary
        g = rng.choice(BLOCKS)
        start = _start(rng, g, t.on_grid, t.hits)
        nb = (start // g + 1) * g
        if nb - start > 1:
            break
    h = rng.choice(_hash_blocks(g, False))
    junction = rng.choice((start + 1, nb - 1, rng.randint(start + 1, nb - 1)))
    if rng.random() < 0.4:  # the junction is the prompt's last token
        prompt = junction
        tokens = prompt + rng.choice((0, 1))
        end = _prefill_end(prompt, tokens) + rng.choice((1, 2, rng.randint(1, g)))
    else:
        prompt = junction + rng.choice((1, 2, rng.randint(1, 4 * g)))
        tokens = prompt + _outputs(rng, g)
        end = rng.choice((_prefill_end(prompt, tokens) + _past_end(rng, g), nb + rng.choice((0, 1, g - 1))))
    partial = rng.random() < 0.3
    p = _params(rng, g, h, shared_prefix=True, partial_hits=partial, **_no_internal(rng))
    return p, _call(rng, start, end - start, prompt, tokens, junction, t.hits, h)


def _junction_floored(rng: random.Random, t: Target):
    """From the grid, a junction a block or more past the start, floored to the block:
    without the shared-prefix checkpoint, or past the prompt."""
    g = rng.choice(BLOCKS)
    h = rng.choice(_hash_blocks(g, False))
    start = _start(rng, g, True, t.hits)
    q = rng.choice((1, 1, 2, rng.randint(1, 4)))
    if rng.random() < 0.6:  # no shared-prefix checkpoint
        shared = False
        junction = start + q * g + rng.choice((0, 1, g - 1, rng.randint(0, g - 1)))
        floored = start + q * g
        if rng.random() < 0.5:  # the chunk aligns down past the floored junction
            end = floored + g * rng.choice((1, 2)) + rng.choice((0, 1, g - 1))
            prompt = end + g + 2 * h + 10 + rng.randint(0, 3 * g)
        else:  # it reaches the prefill's end, the last cacheable position beyond the junction
            prompt = max(junction + 1, floored + g * rng.choice((2, 3)) + rng.randint(0, g) + 8)
            end = None
        tokens = prompt + _outputs(rng, g)
    else:  # a junction past the prompt, in the output tokens a resumed request replays
        shared = rng.random() < 0.7
        prompt = start + q * g + rng.choice((-1, 0, 1, rng.randint(0, g - 1)))
        junction = prompt + rng.choice((1, 2))
        tokens = prompt + 2 * g + 10 + rng.randint(0, 2 * g)
        end = rng.choice((None, junction + g + rng.randint(0, g)))
    if end is None:
        end = _prefill_end(prompt, tokens) + _past_end(rng, g)
    p = _params(rng, g, h, shared_prefix=shared, **_no_internal(rng))
    return p, _call(rng, start, end - start, prompt, tokens, junction, t.hits, h)


def _none(rng: random.Random, t: Target):
    """A chunk inside the start's block, or one that reaches the prefill's end
    from its last block: no stop inside, nothing to align."""
    g = rng.choice(BLOCKS)
    h = rng.choice(_hash_blocks(g, False))
    start = _start(rng, g, t.on_grid, t.hits)
    nb = (start // g + 1) * g
    end = rng.choice((start + 1, nb - 1, nb, rng.randint(start + 1, nb)))
    end = max(end, start + 1)
    if rng.random() < 0.5:  # short of the prefill's end: on the grid, or with a budget under the block
        prompt = end + rng.choice((1, 2, rng.randint(1, 4 * g)))
        tokens = prompt + _outputs(rng, g)
        below = end % g != 0
    else:  # the chunk reaches the prefill's end
        prompt = rng.randint(start + 1, end)
        tokens = prompt + rng.choice((0, 1))
        end = max(end, _prefill_end(prompt, tokens))
        below = None
    inside = [j for j in (start + 1, end - 1) if start < j < end]
    junction = rng.choice([0, start, end, end + 1, *inside])
    partial = rng.random() < 0.3
    p = _params(rng, g, h, below_block=below, partial_hits=partial, shared_prefix=False, **_no_internal(rng))
    return p, _call(rng, start, end - start, prompt, tokens, junction, t.hits, h)


_BUILDERS = {
    "past prefill": _past_prefill,
    "aligned end": _aligned_end,
    "next boundary": _next_boundary,
    "lcp": _lcp,
    "hash tail": _hash_tail,
    "junction exact": _junction_exact,
    "junction floored": _junction_floored,
    "none": _none,
}


def call_for(rng: random.Random, target: Target) -> tuple[SplitParams, SplitCall]:
    """A deployment and a call aimed at `target`."""
    if target.internal:
        return _internal(rng, target)
    return _BUILDERS[target.decider](rng, target)


# The random calls reach an internal checkpoint, and these stops, only now and then (and an internal
# checkpoint from off the grid almost never): their targets get three calls a round, the others one.
BY_CHANCE = ("lcp", "hash tail", "junction exact", "junction floored")


def calls_a_round(target: Target) -> int:
    return 3 if target.internal or target.decider in BY_CHANCE else 1


def decision_calls(rng: random.Random, rounds: int) -> list[tuple[SplitParams, SplitCall]]:
    """`rounds` rounds of calls aimed at every target in turn."""
    return [call_for(rng, t) for _ in range(rounds) for t in TARGETS for _ in range(calls_a_round(t))]
