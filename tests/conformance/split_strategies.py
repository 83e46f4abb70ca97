"""Hypothesis strategies for the split's whole input space.

Every flag and size is drawn independently, including combinations vLLM's
configuration never builds (EAGLE drop with a lookahead, a hash block that
does not divide the scheduler block): the model claims the function, not just
its reachable part. Positions are drawn near the places the split decides on
(block multiples, the prefill end, the checkpoint positions, the junction) so
that off-by-one differences are hit, not only sampled past.
"""

from __future__ import annotations

from hypothesis import strategies as st

from models.scheduler import SplitCall, SplitParams

BLOCKS = (1, 2, 3, 16, 64, 128, 256, 528, 768, 1024, 2048, 4096, 12288)
MAX_TOKENS = 300_000
MAX_SIZE = 20_000


def offsets(spread: int) -> st.SearchStrategy[int]:
    return st.one_of(st.sampled_from((-1, 0, 1)), st.integers(-spread, spread))


@st.composite
def near(draw, anchors, spread: int = 3) -> int:
    """A non-negative value at or just off one of `anchors`."""
    return max(0, draw(st.sampled_from(anchors)) + draw(offsets(spread)))


@st.composite
def near_multiple(draw, unit: int, limit: int) -> int:
    """A non-negative value at or just off a multiple of `unit` up to about `limit`."""
    k = draw(st.integers(0, max(1, limit // unit)))
    return max(0, k * unit + draw(offsets(min(unit, 3))))


def block_sizes() -> st.SearchStrategy[int]:
    return st.one_of(st.sampled_from(BLOCKS), st.integers(1, MAX_SIZE))


def sizes_near(block: int) -> st.SearchStrategy[int]:
    """A budget-like size: anywhere, or at the block (larger and smaller than it included)."""
    return st.one_of(st.integers(1, MAX_SIZE), near([block, 2 * block], 1).map(lambda v: max(1, v)))


@st.composite
def split_params(draw) -> SplitParams:
    block = draw(block_sizes())
    sched_block = draw(st.one_of(st.just(block), st.integers(2, 16).map(lambda k: k * block), block_sizes()))
    hash_block = draw(st.one_of(st.just(block), st.just(sched_block), block_sizes()))
    max_scheduled = draw(sizes_near(block))
    threshold = draw(st.one_of(st.just(0), sizes_near(block), near([max_scheduled], 1)))
    return SplitParams(
        block=block,
        sched_block=sched_block,
        hash_block=hash_block,
        eagle_drop=draw(st.booleans()),
        lookahead=draw(st.one_of(st.just(0), st.integers(1, 8))),
        max_scheduled=max_scheduled,
        long_prefill_threshold=threshold,
        partial_hits=draw(st.booleans()),
        checkpoint_blocks=draw(st.booleans()),
        checkpoint_alignment=draw(
            st.one_of(st.just(0), st.sampled_from((1, 16, 64, block, hash_block)), st.integers(1, 4096))
        ),
        shared_prefix=draw(st.booleans()),
    )


def _checkpoint_anchors(p: SplitParams, prompt: int, tokens: int) -> list[int]:
    """Where the split's stops can fall, so starts and ends are drawn around them."""
    prefill_end = max(prompt, tokens - 1)
    positions = []
    for n, unit in ((tokens, p.block), (prompt, p.hash_block), (prefill_end, p.hash_block)):
        for drop in (False, True):
            limit = n if drop else n - max(1, p.lookahead)
            positions.append(max(0, limit // unit * unit - (unit if drop else 0)))
    positions.append(max(0, prefill_end - (p.sched_block if not p.partial_hits else p.hash_block)))
    return [prefill_end, prompt, tokens, *positions]


@st.composite
def split_call(draw, p: SplitParams) -> SplitCall:
    g, h = p.block, p.hash_block
    prompt = max(1, draw(st.one_of(st.integers(1, MAX_TOKENS), near_multiple(g, MAX_TOKENS), st.integers(1, 3 * g))))
    outputs = draw(st.one_of(st.just(0), st.integers(1, 3), st.integers(0, MAX_SIZE), near_multiple(g, 4 * g)))
    tokens = prompt + outputs
    anchors = _checkpoint_anchors(p, prompt, tokens)
    prefill_end = anchors[0]

    start = draw(
        st.one_of(
            st.just(0),
            st.integers(0, prefill_end + 2),
            near_multiple(g, prefill_end),
            near_multiple(h, prefill_end),
            near(anchors, 3),
            near(anchors, 2 * h).map(lambda v: v // h * h),  # hash-aligned starts near a checkpoint
        )
    )
    local_hit = draw(st.one_of(st.just(0), st.integers(0, start), near_multiple(h, start)))
    local_hit = min(local_hit, start)
    external_hit = draw(st.one_of(st.just(0), st.integers(0, start - local_hit)))
    computed = start - local_hit - external_hit

    rest = max(tokens - start, 0)
    ends = [start + rest, *anchors, (start // g + 1) * g, (start // g + 2) * g]
    requested = draw(
        st.one_of(
            st.integers(0, 3),
            st.integers(0, rest + 2),
            sizes_near(g),
            near(ends, 2).map(lambda end: max(0, end - start)),
        )
    )
    end = start + requested
    junction = draw(
        st.one_of(
            st.just(0),
            st.integers(0, tokens + 2),
            near([start, end, prompt, tokens, (start // g + 1) * g, start + g, end - g], 2),
        )
    )
    return SplitCall(
        computed=computed,
        requested=requested,
        prompt=prompt,
        tokens=tokens,
        local_hit=local_hit,
        external_hit=external_hit,
        junction=junction,
    )


@st.composite
def split_cases(draw) -> tuple[SplitParams, SplitCall]:
    p = draw(split_params())
    return p, draw(split_call(p))


@st.composite
def checkpoint_position_inputs(draw) -> tuple[int, int, bool, int]:
    block = draw(block_sizes())
    num_tokens = draw(st.one_of(st.integers(0, MAX_TOKENS), near_multiple(block, MAX_TOKENS)))
    return num_tokens, block, draw(st.booleans()), draw(st.one_of(st.just(0), st.integers(1, 8)))


@st.composite
def checkpoint_valid_inputs(draw) -> tuple[int, int, int, int, int, int]:
    hash_block = draw(block_sizes())
    cadence = draw(st.one_of(st.just(hash_block), st.integers(1, 16).map(lambda k: k * hash_block), block_sizes()))
    start = draw(st.one_of(near_multiple(hash_block, MAX_TOKENS), st.integers(0, MAX_TOKENS)))
    position = draw(st.one_of(near([start + hash_block, start + cadence], 2), st.integers(0, MAX_TOKENS)))
    end = draw(st.one_of(near([position, start + 2 * cadence, (start // cadence + 2) * cadence], 2)))
    alignment = draw(
        st.one_of(st.just(0), st.sampled_from((1, hash_block, cadence)), st.integers(1, 4096))
    )
    return start, end, position, hash_block, cadence, alignment
