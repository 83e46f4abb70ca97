"""What a later request with the same tokens restores: from the GPU prefix
cache (vLLM 0.33.0 `HybridKVCacheCoordinator.find_longest_cache_hit`,
kv_cache_coordinator.py:806-941) and from the native offload connector
(distributed/kv_transfer/kv_connector/v1/offloading/).

Each restore's test of a position is written once, as `RestoreBounds`: lower
bounds, sizes the position must be a multiple of, and upper bounds that
apply under a condition. The predicates (read by the catalogue as Z3 terms)
and the searches (run on a prefill's published positions) both read those
bounds, so the search is closed form: the largest published multiple of the
sizes' lcm at or below the lowest upper bound, if it is at least every lower
bound.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from models import arith
from models.positions import Positions


@dataclass(frozen=True)
class RestoreBounds:
    """A restorable position: at least every floor, a multiple of every
    divisor, and at most every ceiling whose condition holds. Each bound
    is monotone in the position, so the largest restorable one of a set
    is the largest multiple of the divisors' lcm under the lowest ceiling."""

    floors: tuple
    divisors: tuple
    ceilings: tuple  # (applies, ceiling) pairs

    def admit(self, position):
        """Whether `position` meets every bound (ints or Z3 terms)."""
        return arith.all_of(
            *(position >= floor for floor in self.floors),
            *(_at_most(position, applies, ceiling) for applies, ceiling in self.ceilings),
            *(arith.divides(size, position) for size in self.divisors),
        )

    def largest(self, published: Iterable[int] | Positions) -> int:
        """The largest published position that meets every bound (0: none),
        in time independent of how many positions a range holds: the largest
        multiple of every divisor at most every ceiling. Only a floor can
        reject it, and then every lower position too."""
        ceiling = min(ceiling for applies, ceiling in self.ceilings if applies)
        best = Positions.of(published).multiples_of(math.lcm(*self.divisors)).at_most(ceiling)
        return best if best is not None and self.admit(best) else 0


def _at_most(position, applies, ceiling):
    if applies is True:
        return position <= ceiling
    return arith.implies(applies, position <= ceiling)


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
        floors=(1,),
        divisors=tuple(target_spans),
        ceilings=(
            (True, new_tokens - 1),
            (True, new_tokens - lookahead),
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
    left to compute, and at least the largest chunk restored. The connector
    lowers a cap group by group until nothing moves; each lowering keeps
    every position that meets these bounds, so the fixed point is the
    largest such position."""
    recurrent_chunk = cadence * blocks_per_chunk
    target_chunks = [span * blocks_per_chunk for span in target_spans]
    eagle_chunks = [span * blocks_per_chunk for span in eagle_spans]
    chunks = (recurrent_chunk, *target_chunks, *eagle_chunks)
    return RestoreBounds(
        floors=chunks,
        divisors=chunks,
        ceilings=(
            (True, new_tokens - 1),
            *((True, arith.round_down(cached_tokens, chunk)) for chunk in target_chunks),
            *((True, arith.round_down(cached_tokens, chunk) - chunk) for chunk in eagle_chunks),
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
