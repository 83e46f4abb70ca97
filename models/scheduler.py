"""The chunk split and the last cacheable position.

vLLM 0.33.0 `Scheduler._mamba_block_aligned_split` (v1/core/sched/scheduler.py:
546-662) and its helpers `get_mamba_prefill_checkpoint_position` (CP) and
`is_mamba_prefill_checkpoint_valid` (VALID) in v1/kv_cache_interface.py:
1169-1211; PR457 reads the cadence R where 0.33.0 reads cache_config.block_size.
Every value may be an int or a Z3 term (models/arith.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from models import arith
from models.variants import Variant


@dataclass(frozen=True)
class SplitParams:
    """What the split reads from the scheduler: fixed for a deployment."""

    block: object  # the grid chunks align to: cache_config.block_size (0.33.0) or R (PR457)
    sched_block: object  # S, the scheduler block
    hash_block: object  # H
    eagle_drop: object  # E: use_eagle_block_drop
    lookahead: object  # L: num_hash_lookahead_tokens
    max_scheduled: object  # M
    long_prefill_threshold: object  # T (static scheduler config)
    partial_hits: object  # mamba_partial_cache_hit
    checkpoint_blocks: object  # mamba_has_prefill_checkpoint_blocks
    checkpoint_alignment: object  # A; 0 = None (no internal checkpoints)
    shared_prefix: object  # mamba_shared_prefix_checkpoint
    eagle_spans: tuple = ()  # spans of the EAGLE draft groups (PR457 conversion)
    eagle_annotated: object = False  # whether those groups are annotated is_eagle_group


def prefill_end(prompt, tokens):
    """A request is in prefill while fewer than max(P, N - 1) tokens are
    computed: the last token of a resumed request is decode's."""
    return arith.maximum(prompt, tokens - 1)


@dataclass(frozen=True)
class SplitCall:
    """One call: the request's state and the candidate chunk."""

    computed: object  # c: request.num_computed_tokens
    requested: object  # n: num_new_tokens
    prompt: object  # P
    tokens: object  # N: request.num_tokens
    local_hit: object = 0  # l
    external_hit: object = 0  # x
    junction: object = 0  # J: request.shared_prefix_boundary

    @property
    def start(self):
        return self.computed + self.local_hit + self.external_hit

    @property
    def prefill_end(self):
        return prefill_end(self.prompt, self.tokens)


def checkpoint_position(num_tokens, block, drop_eagle_block, lookahead=0):
    """CP: the reusable checkpoint boundary of a prefill of `num_tokens`."""
    limit = arith.ite(drop_eagle_block, num_tokens, num_tokens - arith.maximum(1, lookahead))
    # The grid point's index, then the point: the symbolic reading hands the
    # solver grid monotonicity for the backed-off index too.
    index = arith.floordiv(limit, block)
    index = arith.ite(drop_eagle_block, index - 1, index)
    return arith.maximum(arith.multiple(index, block), 0)


def checkpoint_valid(query_start, query_end, position, hash_block, cadence, alignment):
    """VALID: whether a backend can export an internal checkpoint in this query."""
    initial_state_column = arith.floordiv(query_start - 1, cadence)
    checkpoint_column = arith.cdiv(query_end, cadence) - 2
    return arith.all_of(
        alignment != 0,
        arith.divides(hash_block, query_start),
        checkpoint_column > initial_state_column,
        query_start + hash_block <= position,
        query_start < position,
        position < query_end,
        arith.divides(arith.ite(alignment == 0, 1, alignment), position - query_start),
    )


def max_prefill_tokens(p: SplitParams):
    threshold = p.long_prefill_threshold
    return arith.ite(threshold > 0, arith.minimum(p.max_scheduled, threshold), p.max_scheduled)


def last_cacheable_position(variant: Variant, p: SplitParams, tokens):
    """lcp: the last position on the grid whose state can be reused."""
    block = p.block
    plain = checkpoint_position(tokens, block, False, p.lookahead)
    backoff = checkpoint_position(tokens, block, True, p.lookahead)
    # The spans first: without EAGLE spans the variant's choice is not read
    # (proofs.run.runner.ChoicesRead), and variants that differ only there are
    # decided once.
    if p.eagle_spans and variant.converts_annotated_eagle:
        reusable = arith.minimum_of(arith.each(p.eagle_spans, lambda span: checkpoint_position(tokens, span, True)))
        converted = arith.round_down(reusable, block)
        backoff = arith.ite(p.eagle_annotated, converted, backoff)
    return arith.ite(p.eagle_drop, backoff, plain)


def _strictly_inside(start, stop, end):
    return arith.all_of(start < stop, stop < end)


def internal_checkpoint(p: SplitParams, call: SplitCall):
    """Whether the backend exports an internal checkpoint in the requested
    chunk: it reaches the prefill's end and VALID holds at CP."""
    end = call.start + call.requested
    checkpoint_block = arith.ite(p.partial_hits, p.hash_block, p.sched_block)
    cp = checkpoint_position(call.prefill_end, checkpoint_block, p.eagle_drop, p.lookahead)
    return arith.all_of(
        p.checkpoint_blocks,
        end >= call.prefill_end,
        checkpoint_valid(call.start, end, cp, p.hash_block, p.block, p.checkpoint_alignment),
    )


@dataclass(frozen=True)
class ChunkEnd:
    """How the split chose where a chunk ends: the end after each stop, in
    the order they are tried (next grid point, last cacheable position,
    partial-hash tail, junction), starting from the aligned end. Theorems
    read these steps; the split reads only the last."""

    ends: tuple

    @property
    def end(self):
        return self.ends[-1]


def chunk_end(variant: Variant, p: SplitParams, call: SplitCall) -> ChunkEnd:
    """Where a chunk in prefill ends: `requested` past its start, aligned down
    to the grid, then clipped at the first stop strictly inside it."""
    start, prefill_end, block = call.start, call.prefill_end, p.block
    lcp = last_cacheable_position(variant, p, call.tokens)
    end = start + call.requested
    internal = internal_checkpoint(p, call)
    lcp = arith.ite(internal, 0, lcp)

    aligned_end = arith.round_down(end, block)
    aligns = arith.all_of(
        end < prefill_end,
        arith.any_of(aligned_end > start, block <= max_prefill_tokens(p)),
    )
    end = arith.ite(aligns, aligned_end, end)

    next_boundary = (arith.floordiv(start, block) + 1) * block
    tail = arith.ite(
        arith.all_of(p.partial_hits, arith.negate(internal)),
        checkpoint_position(call.prompt, p.hash_block, p.eagle_drop, p.lookahead),
        0,
    )
    junction = call.junction
    floored_junction = start + arith.round_down(junction - start, block)
    junction_stop = arith.ite(arith.all_of(p.shared_prefix, junction <= call.prompt), junction, floored_junction)
    stops = (
        arith.ite(arith.all_of(arith.negate(arith.divides(block, start)), arith.negate(internal)), next_boundary, 0),
        lcp,
        arith.ite(arith.all_of(lcp < tail, tail < call.prompt), tail, 0),
        arith.ite(arith.all_of(start < junction, junction < end), junction_stop, 0),
    )
    ends = []
    for stop in stops:
        clipped = ends[-1] if ends else end
        ends.append(arith.ite(arith.all_of(_strictly_inside(start, stop, end), stop < clipped), stop, clipped))
    return ChunkEnd(ends=tuple(ends))


def reserve_prefill_lookahead(k, call: SplitCall, scheduled):
    """`Scheduler._reserve_prefill_lookahead` (v1/core/sched/scheduler.py:678-697), run on the
    split's answer: a chunk never ends fewer than k tokens before the request's end, k the
    drafter's prefill lookahead; it is cut back to leave k instead (to nothing if it cannot).
    A no-op unless k > 1 (a multi-module MTP)."""
    if not arith.is_symbolic(k) and k <= 1:
        return scheduled
    remaining = call.tokens - call.start - scheduled
    cut = arith.ite(arith.all_of(0 < remaining, remaining < k), scheduled - (k - remaining), scheduled)
    return arith.maximum(cut, 0)


def split(variant: Variant, p: SplitParams, call: SplitCall):
    """The number of tokens to schedule: `requested`, clipped so the chunk ends
    where recurrent state must be checkpointed."""
    result = arith.maximum(chunk_end(variant, p, call).end - call.start, 0)
    # Decode and anything past the prefill is left untouched.
    return arith.ite(call.start >= call.prefill_end, call.requested, result)
