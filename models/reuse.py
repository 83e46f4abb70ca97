"""What a later request with the same tokens restores: from the GPU prefix
cache (vLLM 0.33.0 `HybridKVCacheCoordinator.find_longest_cache_hit`,
kv_cache_coordinator.py:806-941) and from the native offload connector
(distributed/kv_transfer/kv_connector/v1/offloading/).

Each restore's test of a position is written once, as `RestoreBounds`: the
position positive, the sizes it must be a multiple of, and upper bounds
(some only under a condition). The predicates (read by the catalogue as Z3
terms) and the searches (run on a prefill's published positions) both read
those bounds, so the search is closed form: the largest published multiple
of the sizes' lcm at or below the lowest upper bound that applies.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from models import arith
from models.positions import Positions


@dataclass(frozen=True)
class RestoreBounds:
    """A restorable position: positive, a multiple of every divisor, at most
    every ceiling, and at most every conditional ceiling whose condition
    holds. Every bound is monotone in the position, so the largest
    restorable position of a set is its largest multiple of the divisors'
    lcm under the lowest ceiling that applies."""

    divisors: tuple
    ceilings: tuple
    conditional_ceilings: tuple = ()  # (applies, ceiling) pairs

    def admit(self, position):
        """Whether `position` meets every bound (ints or Z3 terms)."""
        return arith.all_of(
            position > 0,
            *(position <= ceiling for ceiling in self.ceilings),
            *(arith.implies(applies, position <= ceiling) for applies, ceiling in self.conditional_ceilings),
            *(arith.divides(size, position) for size in self.divisors),
        )

    def largest(self, published: Iterable[int] | Positions) -> int:
        """The largest published position that meets every bound (0: none),
        in time independent of how many positions a range holds. Published
        positions are never negative, so the largest multiple of every
        divisor under the lowest ceiling is restorable unless it is 0."""
        applying = (ceiling for applies, ceiling in self.conditional_ceilings if applies)
        lowest = min([*self.ceilings, *applying])
        return Positions.of(published).multiples_of(math.lcm(*self.divisors)).at_most(lowest) or 0


def gpu_restore_bounds(
    target_spans, eagle_spans, eagle_drop, lookahead, cached_tokens, new_tokens, eagle_annotated=None
) -> RestoreBounds:
    """What a hit of `position` tokens needs to be reachable by every group
    at once: at least one token, every target group's blocks cached up to
    it, every EAGLE group one block beyond it (it drops one; with no
    annotated group every attention group counts as one, section 4.4), and
    the last token (and the hash lookahead) left to compute."""
    if eagle_annotated is None:
        eagle_annotated = bool(eagle_spans)

    def one_block_beyond(applies, span):
        return (applies, arith.round_down(cached_tokens, span) - span)

    annotated_drop = arith.all_of(eagle_drop, eagle_annotated)
    unannotated_drop = arith.all_of(eagle_drop, arith.negate(eagle_annotated))
    return RestoreBounds(
        divisors=tuple(target_spans),
        ceilings=(new_tokens - 1, new_tokens - lookahead),
        conditional_ceilings=(
            *(one_block_beyond(annotated_drop, span) for span in eagle_spans),
            *(one_block_beyond(unannotated_drop, span) for span in target_spans),
        ),
    )


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
    a recurrent checkpoint published there with its hash in existence, and
    `gpu_restore_bounds`."""
    bounds = gpu_restore_bounds(
        target_spans, eagle_spans, eagle_drop, lookahead, cached_tokens, new_tokens, eagle_annotated
    )
    return arith.all_of(published_here, bounds.admit(position))


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
    bounds = gpu_restore_bounds(target_spans, eagle_spans, eagle_drop, lookahead, cached_tokens, new_tokens)
    return bounds.largest(published)


def offload_restore_bounds(
    cadence, target_spans, eagle_spans, blocks_per_chunk, cached_tokens, new_tokens
) -> RestoreBounds:
    """What the offload connector's `_lookup_complete_chunks` needs to
    restore `position` tokens: on the recurrent chunk grid (cadence x
    blocks_per_chunk, where it stores a GPU-published state) and every
    attention group's, every attention group's chunks stored through it,
    every EAGLE group's one chunk beyond it (it drops one), the last token
    left to compute, and at least one chunk of each restored. The connector
    lowers a cap group by group until nothing moves; each lowering keeps
    every position that meets these bounds, so the fixed point is the
    largest such position."""
    recurrent_chunk = cadence * blocks_per_chunk
    target_chunks = [span * blocks_per_chunk for span in target_spans]
    eagle_chunks = [span * blocks_per_chunk for span in eagle_spans]
    chunks = (recurrent_chunk, *target_chunks, *eagle_chunks)
    return RestoreBounds(
        divisors=chunks,
        ceilings=(
            new_tokens - 1,
            *(arith.round_down(cached_tokens, chunk) for chunk in target_chunks),
            *(arith.round_down(cached_tokens, chunk) - chunk for chunk in eagle_chunks),
        ),
    )


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
    """Whether the offload connector can restore `position` tokens: a
    recurrent state published there, and `offload_restore_bounds`."""
    bounds = offload_restore_bounds(cadence, target_spans, eagle_spans, blocks_per_chunk, cached_tokens, new_tokens)
    return arith.all_of(published_here, bounds.admit(position))


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
    bounds = offload_restore_bounds(cadence, target_spans, eagle_spans, blocks_per_chunk, cached_tokens, new_tokens)
    return bounds.largest(published)
