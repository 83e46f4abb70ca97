"""What vLLM 0.33.0's native KV offload connector stores of a request and restores to a later one
(distributed/kv_transfer/kv_connector/v1/offloading/scheduler.py).

Each cache group offloads in chunks of `blocks_per_chunk` of its blocks (`tokens_per_chunk`,
config.py:106-111; a recurrent group's block is its state's, never DCP-scaled):
- an attention group stores every complete chunk of the prompt (`offload_prompt_only`);
- a recurrent group stores no chunk of its own (regular store jobs skip it, scheduler.py:1904-1905):
  only the states the GPU prefix cache hands it as it hashes them (`CachedPrefix.offered`;
  `_build_aligned_boundary_store_jobs`, scheduler.py:1554-1624), those on its chunk grid within
  the prompt. So the GPU's retention interval decides what can be offloaded.

A later request's lookup (`_lookup_complete_chunks`, scheduler.py:849-1054) starts from its
tokens less the last one, rounded down to the recurrent chunk (`hit_window`: the load caps the
model never sets are where 0.33.0 and 0.34.0 differ), and lowers that cap group by group:
attention groups to the run of stored chunks, an annotated EAGLE group to one chunk less than it
finds (with no annotated group, none counts as one, scheduler.py:208-231), recurrent groups to
their rightmost stored state at or below it; any group left with less than one chunk to load
ends the lookup at 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from models.geometry import DRAFT, RECURRENT
from models.plan import Plan
from models.positions import Positions
from models.prefix_cache import CachedPrefix


@dataclass(frozen=True)
class OffloadGroup:
    chunk: int  # tokens_per_chunk
    recurrent: bool
    eagle: bool  # annotated as an EAGLE draft group


class OffloadNotModelled(Exception):
    """A connector setting whose behaviour the model does not cover (said, never guessed)."""


def offload_groups(p: Plan) -> tuple[OffloadGroup, ...]:
    """The connector's groups in lookup order: attention groups, then recurrent ones."""
    d = p.geometry.deployment
    per_chunk = d.offload_blocks_per_chunk
    groups = []
    for g in p.geometry.groups:
        span = p.cadence if g.kind == RECURRENT else g.span(d.dcp_size)
        groups += [OffloadGroup(span * per_chunk, g.kind == RECURRENT, g.kind == DRAFT and g.eagle)] * g.count
    blocks = {group.chunk // per_chunk for group in groups}
    if per_chunk == 1 and len(blocks) == 1 and d.dcp_size == 1 and p.cadence > int(p.split.hash_block):
        raise OffloadNotModelled("the connector's partial tails (one block size, one block a chunk, DCP 1)")
    return tuple(sorted(groups, key=lambda g: g.recurrent))


def runs_beside_hashing(p: Plan) -> bool:
    """Whether the native offload connector runs beside the deployment's block hashing: with no hash
    lookahead always; with one, only where the release's connector takes lookahead block hashes
    (0.34.0; in 0.33.0 a KV connector turns the lookahead off, so such a deployment runs none)."""
    return not p.split.lookahead or p.variant.offload_reads_lookahead_hashes


def hit_window(variant, tokens, computed, recurrent, align, budget=None, max_load=None):
    """The tokens a lookup may load up to before any group narrows it (`_lookup_complete_chunks`'s first
    lines, scheduler.py:861-881): the request's `tokens`, capped at `computed` plus the load budget
    (`max_num_new_tokens`: how far the groups the connector does not offload hold the prefix, None when
    it offloads every group) and plus the request's `max_load_tokens` (None when unset); beside a
    `recurrent` group less the last token, whose logprobs are recomputed, and rounded down to `align`,
    the recurrent chunk (None: not rounded). 0.33.0 takes the last token off after the caps, 0.34.0
    before them, so a window a cap ends keeps its last token there. Plain Python: `gridproof source`
    reads it on proxies (proofs/source/equivalence.py, offload_hit_window)."""
    before = variant.offload_last_token_before_caps
    window = tokens - 1 if recurrent and before else tokens
    for cap in (budget, max_load):
        if cap is not None:
            window = min(window, computed + cap)
    if recurrent and not before:
        window -= 1
    if recurrent and align is not None:
        window = window // align * align
    return window


def offload_hit(p: Plan, cached: CachedPrefix, shared: int, new_tokens: int, computed: int = 0) -> int:
    """Tokens a later request of `new_tokens` tokens, the first `shared` of them the cached
    request's, loads from the offload tier beyond the `computed` tokens it has on the GPU."""
    groups = offload_groups(p)
    h = int(p.split.hash_block)
    prompt = cached.prompt
    # 0.33.0's connector keys chunks by hashes with no lookahead (it never runs beside one); 0.34.0's
    # by the request's block hashes, which look ahead when the scheduler's do (use_lookahead_block_hashes,
    # offloading/scheduler.py:619), and then drops no EAGLE chunk: the lookahead proves the boundary.
    lookahead = int(p.split.lookahead) if p.variant.offload_reads_lookahead_hashes else 0
    hashed = max(0, new_tokens - lookahead) // h * h
    # A chunk's key matches while the prefix and the lookahead its hash covers are shared; the cached
    # request stored the chunks its hashes covered once its sampled token was appended.
    shared = shared - lookahead
    stored = min(prompt, max(0, cached.tokens + 1 - lookahead) // h * h) if lookahead else prompt
    recurrent_chunks = {g.chunk for g in groups if g.recurrent}
    # The states the GPU cache offered, on every recurrent chunk grid and within the prompt.
    stored_states = cached.offered.multiples_of(math.lcm(*recurrent_chunks)) if recurrent_chunks else Positions()
    within = min(cached.tokens, prompt)

    def chunks_found(group: OffloadGroup, first: int, last: int) -> int:
        """The connector's scan of chunks first..last - 1 (their keys the later request has), as an
        end index: an attention group's run of stored chunks from the first (every chunk of the
        prompt is stored), a recurrent group's rightmost stored state (`_sliding_window_lookup`,
        a window of one chunk); `first` when none."""
        c = group.chunk
        if not group.recurrent:
            return max(first, min(last, min(stored, shared) // c))
        state = stored_states.at_most(min(last * c, shared, within))
        return state // c if state is not None and state // c > first else first

    align = next(iter(recurrent_chunks)) if len(recurrent_chunks) == 1 else None
    cap = hit_window(p.variant, new_tokens, computed, bool(recurrent_chunks), align)
    hit = 0
    verified: set[int] = set()
    pending = list(range(len(groups)))
    while pending:
        looked_up_recurrent = False
        order, pending = pending, []
        for index in order:
            group = groups[index]
            c = group.chunk
            keys = hashed // c
            drops_eagle = group.eagle and not lookahead
            unverified = drops_eagle and index not in verified
            cap = min(cap, keys * c)
            if cap - computed < c:
                return 0
            query = min(cap + c, keys * c) if unverified else cap
            last = min(-(-query // c), keys)
            first = computed // c
            chunks = chunks_found(group, first, last) - first
            if chunks == 0:
                return 0
            if unverified:
                chunks -= 1
                verified.add(index)
            cap = min(cap, c * (first + chunks))
            loaded = cap - computed
            if loaded < c:
                return 0
            if loaded < hit:
                if not drops_eagle:
                    verified.clear()
                if looked_up_recurrent and not pending:
                    pending = [i for i, g in enumerate(groups) if g.recurrent]
            looked_up_recurrent |= group.recurrent
            hit = loaded
    return hit
