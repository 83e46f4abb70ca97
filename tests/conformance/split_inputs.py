"""Inputs over the split's whole input space.

Every flag and size is drawn independently, including combinations vLLM's
configuration never builds (EAGLE drop with a lookahead, a hash block that
does not divide the scheduler block): the model claims the function, not just
its reachable part. Positions are drawn at and just off the places the split
decides on (block multiples, the prefill end, the checkpoint positions, the
junction), so that off-by-one differences are hit, not only sampled past.

Hypothesis draws the deployment (`split_params`); the bulk of the calls comes
from a `random.Random` that Hypothesis seeds (`st.randoms`): Hypothesis costs
about 0.2 ms a drawn value here, which 100,000 cases a run cannot afford.
"""

from __future__ import annotations

import math
import random

from hypothesis import strategies as st

from models.scheduler import SplitCall, SplitParams

BLOCKS = (1, 2, 3, 16, 64, 128, 256, 528, 768, 1024, 2048, 4096, 12288)
MAX_TOKENS = 300_000
MAX_SIZE = 20_000


# --- Hypothesis: the deployment ------------------------------------------------------------------


def block_sizes() -> st.SearchStrategy[int]:
    return st.one_of(st.sampled_from(BLOCKS), st.integers(1, MAX_SIZE))


def _around(block: int) -> st.SearchStrategy[int]:
    """A budget: anywhere, or at and just off the block (wider and narrower than it)."""
    return st.one_of(st.integers(1, MAX_SIZE), st.sampled_from(sorted({max(1, block - 1), block, block + 1})))


@st.composite
def split_params(draw) -> SplitParams:
    block = draw(block_sizes())
    sched_block = draw(st.one_of(st.just(block), st.integers(2, 16).map(lambda k: k * block), block_sizes()))
    hash_block = draw(st.one_of(st.just(block), st.just(sched_block), block_sizes()))
    max_scheduled = draw(_around(block))
    return SplitParams(
        block=block,
        sched_block=sched_block,
        hash_block=hash_block,
        eagle_drop=draw(st.booleans()),
        lookahead=draw(st.one_of(st.just(0), st.integers(1, 8))),
        max_scheduled=max_scheduled,
        long_prefill_threshold=draw(st.one_of(st.just(0), _around(block), _around(max_scheduled))),
        partial_hits=draw(st.booleans()),
        checkpoint_blocks=draw(st.booleans()),
        checkpoint_alignment=draw(
            st.one_of(st.just(0), st.sampled_from((1, 16, 64, block, hash_block)), st.integers(1, 4096))
        ),
        shared_prefix=draw(st.booleans()),
    )


# --- random.Random: the same space, fast -----------------------------------------------------------


def _offset(rng: random.Random, spread: int) -> int:
    if rng.random() < 0.6:
        return rng.choice((-1, 0, 0, 1))
    return rng.randint(-spread, spread)


def near(rng: random.Random, anchors, spread: int = 3) -> int:
    """A non-negative value at or just off one of `anchors`."""
    return max(0, rng.choice(anchors) + _offset(rng, spread))


def near_multiple(rng: random.Random, unit: int, limit: int) -> int:
    """A non-negative value at or just off a multiple of `unit`, up to about `limit`."""
    return max(0, rng.randint(0, max(1, limit // unit)) * unit + _offset(rng, min(unit, 3)))


def random_block(rng: random.Random) -> int:
    return rng.choice(BLOCKS) if rng.random() < 0.5 else rng.randint(1, MAX_SIZE)


def _random_budget(rng: random.Random, block: int) -> int:
    return rng.randint(1, MAX_SIZE) if rng.random() < 0.5 else near(rng, [block], 1) or 1


def random_params(rng: random.Random) -> SplitParams:
    block = random_block(rng)
    sched_block = rng.choice((block, rng.randint(2, 16) * block, random_block(rng)))
    hash_block = rng.choice((block, sched_block, random_block(rng)))
    max_scheduled = _random_budget(rng, block)
    threshold = rng.choice((0, _random_budget(rng, block), near(rng, [max_scheduled], 1) or 1))
    return SplitParams(
        block=block,
        sched_block=sched_block,
        hash_block=hash_block,
        eagle_drop=rng.random() < 0.5,
        lookahead=rng.choice((0, 0, rng.randint(1, 8))),
        max_scheduled=max_scheduled,
        long_prefill_threshold=threshold,
        partial_hits=rng.random() < 0.5,
        checkpoint_blocks=rng.random() < 0.5,
        checkpoint_alignment=rng.choice((0, 1, 16, 64, block, hash_block, rng.randint(1, 4096))),
        shared_prefix=rng.random() < 0.5,
    )


def _checkpoint_anchors(p: SplitParams, prompt: int, tokens: int) -> list[int]:
    """Where the split's stops can fall (the CP of each of its three calls,
    with and without the EAGLE drop), so starts and ends are drawn around them."""
    prefill_end = max(prompt, tokens - 1)
    anchors = [prefill_end, prompt, tokens]
    calls = ((tokens, p.block), (prompt, p.hash_block), (prefill_end, p.hash_block), (prefill_end, p.sched_block))
    for n, unit in calls:
        anchors.append(max(0, (n - max(1, p.lookahead)) // unit * unit))
        anchors.append(max(0, n // unit * unit - unit))
    return anchors


def _internal_checkpoint_start(rng: random.Random, p: SplitParams, prefill_end: int) -> int:
    """A start from which the checkpoint position is a whole number of
    alignments and hash blocks away: where VALID can hold."""
    unit = p.hash_block if p.partial_hits else p.sched_block
    position = max(0, (prefill_end - max(1, p.lookahead)) // unit * unit - (unit if p.eagle_drop else 0))
    step = math.lcm(p.checkpoint_alignment or 1, p.hash_block)
    return max(0, position - rng.randint(1, 3 + 2 * p.block // step) * step)


def random_call(rng: random.Random, p: SplitParams) -> SplitCall:
    g, h = p.block, p.hash_block
    kind = rng.random()
    if kind < 0.4:
        prompt = rng.randint(1, MAX_TOKENS)
    elif kind < 0.8:
        prompt = near_multiple(rng, g, MAX_TOKENS) or 1
    else:
        prompt = rng.randint(1, 3 * g)
    outputs = rng.choice((0, 0, rng.randint(1, 3), rng.randint(0, MAX_SIZE), near_multiple(rng, g, 4 * g)))
    tokens = prompt + outputs
    anchors = _checkpoint_anchors(p, prompt, tokens)
    prefill_end = anchors[0]

    start = rng.choice(
        (
            0,
            rng.randint(0, prefill_end + 2),
            near_multiple(rng, g, prefill_end),
            near_multiple(rng, h, prefill_end),
            near(rng, anchors),
            near(rng, anchors, 2 * h) // h * h,
            _internal_checkpoint_start(rng, p, prefill_end),
        )
    )
    local_hit = rng.choice((0, 0, rng.randint(0, start), min(start, near_multiple(rng, h, start))))
    external_hit = rng.choice((0, 0, rng.randint(0, start - local_hit)))

    rest = max(tokens - start, 0)
    ends = [start + rest, *anchors, (start // g + 1) * g, (start // g + 2) * g]
    requested = rng.choice(
        (
            rng.randint(0, 3),
            rng.randint(0, rest + 2),
            _random_budget(rng, g),
            max(0, near(rng, ends) - start),
            max(0, near(rng, ends) - start),
        )
    )
    end = start + requested
    junctions = [start, end, prompt, tokens, start + g, end - g, (start // g + 1) * g]
    junction = rng.choice((0, 0, rng.randint(0, tokens + 2), near(rng, junctions)))
    return SplitCall(
        computed=start - local_hit - external_hit,
        requested=requested,
        prompt=prompt,
        tokens=tokens,
        local_hit=local_hit,
        external_hit=external_hit,
        junction=junction,
    )


def random_checkpoint_position_input(rng: random.Random) -> tuple[int, int, bool, int]:
    block = random_block(rng)
    num_tokens = rng.randint(0, MAX_TOKENS) if rng.random() < 0.3 else near_multiple(rng, block, MAX_TOKENS)
    return num_tokens, block, rng.random() < 0.5, rng.choice((0, 0, 1, rng.randint(1, 8)))


def random_checkpoint_valid_input(rng: random.Random) -> tuple[int, int, int, int, int, int]:
    hash_block = random_block(rng)
    cadence = rng.choice((hash_block, rng.randint(2, 16) * hash_block, random_block(rng)))
    start = near_multiple(rng, hash_block, MAX_TOKENS) if rng.random() < 0.7 else rng.randint(0, MAX_TOKENS)
    position = near(rng, [start, start + hash_block, start + cadence, start + rng.randint(0, 4 * cadence)])
    end = near(rng, [position, start + cadence, start + 2 * cadence, (start // cadence + 2) * cadence])
    alignment = rng.choice((0, 1, hash_block, cadence, max(1, position - start), rng.randint(1, 4096)))
    return start, end, position, hash_block, cadence, alignment
