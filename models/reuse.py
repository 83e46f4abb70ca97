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
        return gpu_restorable(
            position, True, target_spans, eagle_spans, eagle_drop, lookahead, cached_tokens, new_tokens
        )

    # Two spans and the lookahead below the end, only the divisibility by the spans is left to decide.
    settled_below = min(cached_tokens, new_tokens) - 2 * max([*target_spans, *eagle_spans], default=0) - lookahead - 1
    period = math.lcm(*target_spans, *eagle_spans)
    return Positions.of(published).largest(restorable, period, settled_below) or 0


def offload_restore(
    published: Iterable[int] | Positions,
    cadence: int,
    target_spans: Sequence[int],
    eagle_spans: Sequence[int],
    blocks_per_chunk: int,
    cached_tokens: int,
    new_tokens: int,
) -> int:
    """The prefix the offload connector's `_lookup_complete_chunks` restores:
    a stored recurrent state (only GPU-published ones, on its chunk grid) that
    also lies on the prefix of stored attention chunks."""
    mamba_chunk = cadence * blocks_per_chunk
    stored_states = Positions.of(published).multiples_of(mamba_chunk)
    attention = [(span * blocks_per_chunk, False) for span in target_spans]
    attention += [(span * blocks_per_chunk, True) for span in eagle_spans]
    cap = (new_tokens - 1) // mamba_chunk * mamba_chunk
    while True:
        previous = cap
        for chunk, is_eagle in attention:
            stored = cached_tokens // chunk * chunk
            if is_eagle:
                cap = min(cap, max(min(cap + chunk, stored) // chunk * chunk - chunk, 0))
            else:
                cap = min(cap, min(cap, stored) // chunk * chunk)
        cap = stored_states.at_most(cap) or 0
        if cap == previous:
            break
    smallest_unit = max([mamba_chunk] + [chunk for chunk, _ in attention])
    return cap if cap >= smallest_unit else 0
