"""What a later request with the same tokens restores: from the GPU prefix
cache (vLLM 0.33.0 `HybridKVCacheCoordinator.find_longest_cache_hit`,
kv_cache_coordinator.py:806-941) and from the native offload connector
(distributed/kv_transfer/kv_connector/v1/offloading/)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from models import arith
from models.positions import Positions


def gpu_restorable(
    position,
    published_here,
    target_spans,
    eagle_spans,
    eagle_drop,
    lookahead,
    cached_tokens,
    new_tokens,
    eagle_annotated=None,
):
    """Whether a hit of `position` tokens is reachable by every group at once:
    a recurrent checkpoint published there with its hash in existence, every
    target group's blocks cached up to it, every EAGLE group one block beyond
    it (it drops one; with no annotated group every attention group counts as
    one, section 4.4), and the last token left to recompute."""
    if eagle_annotated is None:
        eagle_annotated = bool(eagle_spans)

    def one_block_beyond(span):
        return position + span <= arith.round_down(cached_tokens, span)

    return arith.all_of(
        position > 0,
        published_here,
        position <= new_tokens - 1,
        position + lookahead <= new_tokens,
        *(arith.divides(span, position) for span in target_spans),
        *(arith.implies(arith.all_of(eagle_drop, eagle_annotated), one_block_beyond(s)) for s in eagle_spans),
        *(
            arith.implies(arith.all_of(eagle_drop, arith.negate(eagle_annotated)), one_block_beyond(s))
            for s in target_spans
        ),
    )


def published_gpu_restorable(position, target_spans, eagle_spans, eagle_drop, lookahead, cached_tokens, new_tokens):
    """The test `gpu_restore` puts to each published position."""
    return gpu_restorable(position, True, target_spans, eagle_spans, eagle_drop, lookahead, cached_tokens, new_tokens)


def gpu_restore(
    published: Iterable[int] | Positions,
    target_spans,
    eagle_spans,
    eagle_drop,
    lookahead,
    cached_tokens,
    new_tokens,
) -> int:
    """The longest prefix the GPU prefix cache restores (0: none)."""

    def restorable(position: int) -> bool:
        return published_gpu_restorable(
            position, target_spans, eagle_spans, eagle_drop, lookahead, cached_tokens, new_tokens
        )

    # Two spans and the lookahead below the end, only the divisibility by the spans is left to decide.
    settled_below = min(cached_tokens, new_tokens) - 2 * max([*target_spans, *eagle_spans], default=0) - lookahead - 1
    period = math.lcm(*target_spans, *eagle_spans)
    return Positions.of(published).largest(restorable, period, settled_below) or 0


def offload_restorable(
    position,
    published_here,
    cadence,
    target_spans,
    eagle_spans,
    blocks_per_chunk,
    cached_tokens,
    new_tokens,
):
    """Whether the offload connector's `_lookup_complete_chunks` can restore
    `position` tokens: a stored recurrent state there (stored: GPU-published
    and on the recurrent chunk grid, cadence x blocks_per_chunk), every
    attention group's chunk grid through it, every EAGLE group one chunk
    beyond it (it drops one), the last token left to compute, and at least
    the largest chunk restored. The connector lowers a cap group by group
    until nothing moves; each lowering keeps every position that satisfies
    this, so the fixed point is the largest such position."""
    recurrent_chunk = cadence * blocks_per_chunk
    target_chunks = [span * blocks_per_chunk for span in target_spans]
    eagle_chunks = [span * blocks_per_chunk for span in eagle_spans]

    def stored_through(chunk, end):
        return end <= arith.round_down(cached_tokens, chunk)

    return arith.all_of(
        published_here,
        position <= new_tokens - 1,
        *(arith.divides(chunk, position) for chunk in (recurrent_chunk, *target_chunks, *eagle_chunks)),
        *(stored_through(chunk, position) for chunk in target_chunks),
        *(stored_through(chunk, position + chunk) for chunk in eagle_chunks),
        *(position >= chunk for chunk in (recurrent_chunk, *target_chunks, *eagle_chunks)),
    )


def offload_restore(
    published: Iterable[int] | Positions,
    cadence: int,
    target_spans: Sequence[int],
    eagle_spans: Sequence[int],
    blocks_per_chunk: int,
    cached_tokens: int,
    new_tokens: int,
) -> int:
    """The longest prefix the native offload connector restores (0: none)."""

    def restorable(position: int) -> bool:
        return offload_restorable(
            position, True, cadence, target_spans, eagle_spans, blocks_per_chunk, cached_tokens, new_tokens
        )

    chunks = [cadence * blocks_per_chunk, *(span * blocks_per_chunk for span in (*target_spans, *eagle_spans))]
    # Two chunks below the end only the divisibility by the chunks and the lower bounds are left to decide.
    settled_below = min(cached_tokens, new_tokens) - 2 * max(chunks) - 1
    return Positions.of(published).largest(restorable, math.lcm(*chunks), settled_below) or 0
