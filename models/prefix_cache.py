"""What vLLM 0.33.0's GPU prefix cache holds after a request's prefill, group by group, and what a
later request finds in it.

The cache is a map from (prefix hash, group) to a block. A key names the prefix length it stands
for: a full attention block's key the tokens up to the block's end, a recurrent state's key the
tokens the state has consumed. What a request leaves keyed (v1/core/single_type_kv_cache_manager.py,
block_pool.py, kv_cache_coordinator.py):

- every step caches each group up to the tokens it may hash (`get_num_cacheable_tokens`: all of
  them with partial hash hits, else down to the scheduler block; an EAGLE group one block beyond
  the aligned end);
- an attention group keys every full block, and, when its block is wider than the hash block, the
  prompt's last hash boundary inside a block (`_cache_partial_tail_block`, the partial tail);
- a recurrent group keys the state a chunk leaves at a multiple of its block, while that block is
  still the running or the previous state (`remove_skipped_blocks` nulls older ones), where the
  retention interval lets it (`reachable_block_mask`: 0, vLLM's default, only the block of the
  positions a replaying request resumes at; None every one; k one per k tokens); the internal
  prefill checkpoint a chunk exports, re-keyed at its position (kept where a later request can
  resume); and the state at the prompt's last hash boundary when a chunk ends there.

A later request sharing a prefix is restored by `HybridKVCacheCoordinator.find_longest_cache_hit`:
groups of one spec are looked up together (attention first), each finder lowers a candidate
length (attention: the run of full blocks, then, fine-grained, the partial tail in the next
block; EAGLE groups one unit beyond, then dropped back; recurrent state: the longest key at or
below it), until none lowers it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from models import arith
from models.errors import GridproofError
from models.geometry import DRAFT, RECURRENT
from models.plan import Plan
from models.positions import Positions
from models.prefill import Chunk, Trace, state_column
from models.scheduler import checkpoint_position, checkpoint_valid, prefill_end


class RetentionError(GridproofError):
    """A retention interval vLLM refuses at startup."""


class LookupFailure(Exception):
    """vLLM's own lookup fails (raises) for this request: a finding about the engine, not bad input."""


@dataclass(frozen=True)
class Bucket:
    """Cache groups of one spec, looked up together (`SpecGroup`): attention groups of one block
    size and sharding, or every recurrent group."""

    recurrent: bool
    span: int  # tokens one block id covers: the manager's block size
    groups: tuple[int, ...]  # indices into the geometry's groups, each group counted once
    use_eagle: bool  # some member drops the EAGLE block (the coordinator's per-group eagle bit)


# --- how far a step hashes: one formula, read on ints (cached_prefix) and on Z3 terms (the catalogue) ---


def aligned_tokens(tokens, fine, scheduler_block):
    """`_align_cacheable`: the prefix a later hit could match, `tokens` with partial hash hits
    (`fine`), else rounded down to the scheduler block."""
    return arith.ite(fine, tokens, arith.round_down(tokens, scheduler_block))


def hashed_tokens(tokens, lookahead, hash_block):
    """The tokens a request of `tokens` tokens has block hashes for: whole hash blocks, each with
    the hash lookahead past it."""
    return arith.round_down(tokens - lookahead, hash_block)


@dataclass(frozen=True)
class Hashing:
    """What decides how far one bucket's blocks are hashed; every field an int or a Z3 term."""

    fine: object  # the coordinator's partial hash hits
    scheduler_block: object  # S
    use_eagle: object  # the bucket drops the EAGLE block
    reprefillable: object  # tokens a multi-module MTP may prefill again
    span: object  # the bucket's block

    def cacheable(self, tokens):
        """`get_num_cacheable_tokens`: how far the bucket hashes once `tokens` are computed (an EAGLE
        bucket one block beyond the aligned end of what no MTP prefills again)."""
        cached = aligned_tokens(tokens, self.fine, self.scheduler_block)
        finalized = arith.maximum(0, tokens - self.reprefillable)
        eagle = arith.minimum(finalized, aligned_tokens(finalized, self.fine, self.scheduler_block) + self.span)
        return arith.ite(arith.all_of(self.use_eagle, cached > 0), eagle, cached)

    def horizon(self, chunk_end, tokens, hashes):
        """Blocks of the bucket with an index below this are hashed by the call made once a chunk
        ends at `chunk_end` (of a request of `tokens` tokens with `hashes` tokens hashed)."""
        return arith.floordiv(arith.minimum(self.cacheable(arith.minimum(chunk_end, tokens)), hashes), self.span)


@dataclass(frozen=True)
class KeyedBlock:
    """The recurrent block a chunk ending at `end` leaves its state in (column cdiv(end, R) - 1), as
    the call after that chunk and the call after the next one hash it."""

    column: object
    key: object  # the tokens its hash stands for: the block's end
    in_own_call: object  # hashed by the call after the chunk that wrote it
    in_next_call: object  # hashed by the call after the next chunk
    held: object  # the tokens of the state the block holds when it is hashed

    @property
    def keyed(self):
        return arith.any_of(self.in_own_call, self.in_next_call)


def keyed_block(hashing: Hashing, end, following, tokens, own_hashes, following_hashes) -> KeyedBlock:
    """How a recurrent block is keyed: vLLM 0.33.0 hashes a state block as a full block by its
    column, keyed at the block's end, while it is the running or the previous state and the hashing
    horizon passes it. A block the next chunk (ending at `following`; the chunk's own end for the
    last; never before `end`) advances in place, ending in its column, holds that chunk's state when
    hashed; one it leaves behind holds this chunk's, wherever the block ends."""
    r = hashing.span
    column = state_column(end, r)
    key = arith.multiple(column + 1, r)
    own = hashing.horizon(end, tokens, own_hashes) > column
    later = hashing.horizon(following, tokens, following_hashes) > column
    held = arith.ite(own, end, arith.ite(following <= key, following, end))
    return KeyedBlock(column, key, own, later, held)


@dataclass(frozen=True)
class CacheLayout:
    """How the engine's prefix cache is laid out for a deployment."""

    buckets: tuple[Bucket, ...]  # in lookup order: attention first
    hash_block: int  # H
    scheduler_block: int  # S
    fine: bool  # the coordinator's partial hash hits: hits land on H, not S
    eagle_drop: bool  # E
    lookahead: int  # L: tokens past a block its hash covers
    reprefillable: int  # tokens a multi-module MTP may prefill again
    retention: int | None
    checkpoint_alignment: int  # A; 0: no internal prefill checkpoints

    @property
    def alignment(self) -> int:
        """Where hits land (`cache_hit_alignment_tokens`)."""
        return self.hash_block if self.fine else self.scheduler_block

    def aligned(self, tokens: int) -> int:
        """`_align_cacheable`: the prefix a later hit could match."""
        return aligned_tokens(tokens, self.fine, self.scheduler_block)

    def hashing(self, bucket: Bucket) -> Hashing:
        return Hashing(self.fine, self.scheduler_block, bucket.use_eagle, self.reprefillable, bucket.span)

    def cacheable(self, bucket: Bucket, tokens: int) -> int:
        """`get_num_cacheable_tokens`: how far a group hashes once `tokens` are computed."""
        return self.hashing(bucket).cacheable(tokens)


def layout(p: Plan) -> CacheLayout:
    """The cache layout of a plan: its groups bucketed as the coordinator buckets them."""
    geometry, split = p.geometry, p.split
    dcp = geometry.deployment.dcp_size
    groups = [g for g in geometry.groups for _ in range(g.count)]
    annotated = {i for i, g in enumerate(groups) if g.kind == DRAFT and g.eagle}
    eagle = bool(split.eagle_drop)
    # With the EAGLE drop and no annotated group, every group is taken for one (kv_cache_coordinator.py:130-137).
    dropping = (annotated or set(range(len(groups)))) if eagle else set()
    buckets: dict[tuple, list[int]] = {}
    for i, g in enumerate(groups):
        recurrent = g.kind == RECURRENT
        sharded = bool(g.dcp_sharded) and not recurrent
        key = (recurrent, p.cadence if recurrent else g.block_size, sharded)
        buckets.setdefault(key, []).append(i)
    made = [
        Bucket(
            recurrent=recurrent,
            span=block * (dcp if sharded else 1),
            groups=tuple(members),
            use_eagle=any(i in dropping for i in members),
        )
        for (recurrent, block, sharded), members in buckets.items()
    ]
    made.sort(key=lambda b: b.recurrent)  # attention first, otherwise in group order
    lookahead = int(split.lookahead)
    retention = geometry.deployment.prefix_cache_retention_interval
    scheduler_block = int(split.sched_block)
    if retention and retention % scheduler_block:
        # kv_cache_coordinator.py:54-59, at startup
        raise RetentionError(
            f"prefix_cache_retention_interval ({retention}) must be non-negative and a multiple of "
            f"scheduler_block_size ({scheduler_block}), as vLLM 0.33.0 requires"
        )
    r = p.cadence
    fine = r >= split.hash_block if dcp > 1 else r > split.hash_block
    return CacheLayout(
        buckets=tuple(made),
        hash_block=int(split.hash_block),
        scheduler_block=scheduler_block,
        fine=bool(fine),
        eagle_drop=eagle,
        lookahead=lookahead,
        reprefillable=max(0, geometry.deployment.prefill_lookahead - 1),
        retention=retention,
        checkpoint_alignment=int(split.checkpoint_alignment),
    )


@dataclass
class BucketKeys:
    """What one bucket holds keyed after a request: attention full blocks up to `full_up_to`, and
    the other keyed positions (partial tails, recurrent states)."""

    full_up_to: int = 0  # attention: every multiple of the span up to here is keyed
    positions: Positions = field(default_factory=Positions)
    # Recurrent keys whose block holds the state after fewer tokens than its key says: vLLM 0.33.0
    # hashes a state block by its column, and a chunk that leaves a block mid-way (the split's grid
    # finer than the recurrent block) leaves the state it reached there, keyed at the block's end.
    stale: Positions = field(default_factory=Positions)
    # Recurrent keys handed to a KV connector as they are hashed (`_pending_boundary_state_offloads`).
    offered: Positions = field(default_factory=Positions)

    def keyed(self, span: int) -> Positions:
        full = Positions([range(span, self.full_up_to + 1, span)]) if self.full_up_to >= span else Positions()
        return full.union(self.positions)


@dataclass
class CachedPrefix:
    """The keys a request's prefill leaves, per bucket, and the request they belong to."""

    layout: CacheLayout
    keys: tuple[BucketKeys, ...]
    prompt: int
    tokens: int

    def _recurrent_bucket(self) -> BucketKeys:
        """The keys every recurrent group holds alike (one spec, one bucket)."""
        for bucket, keys in zip(self.layout.buckets, self.keys, strict=True):
            if bucket.recurrent:
                return keys
        return BucketKeys()

    @property
    def recurrent(self) -> Positions:
        """The recurrent states a later request can be restored from."""
        return self._recurrent_bucket().positions

    @property
    def offered(self) -> Positions:
        """Recurrent states handed to a KV connector (`BucketKeys.offered`)."""
        return self._recurrent_bucket().offered

    @property
    def stale(self) -> Positions:
        """Recurrent keys whose block holds another state than their key says (`BucketKeys.stale`)."""
        return self._recurrent_bucket().stale


def replay_boundaries(cache: CacheLayout, prompt: int) -> tuple[int, ...]:
    """The positions a later request replaying the prompt resumes at (`replay_boundaries`)."""
    if not cache.eagle_drop:
        return (prompt - 1,)
    s = cache.scheduler_block
    return tuple(sorted({max((prompt - 1) // s * s - s, 0), max(prompt // s * s - s, 0)}))


def retained(cache: CacheLayout, cadence: int, prompt: int) -> tuple[object, set[int]]:
    """Which recurrent blocks a retention interval keeps: (the interval every multiple of which is
    kept, None for none or 1 for all; the positions a replay resumes at, kept besides)."""
    boundaries = set()
    for b in replay_boundaries(cache, prompt):
        aligned = b // cache.alignment * cache.alignment
        if aligned >= cadence:
            boundaries.add(aligned // cadence * cadence)
    if cache.retention is None:
        return 1, boundaries
    if cache.retention == 0:
        return None, boundaries
    per_segment = cache.retention // cadence
    return (1 if per_segment <= 1 else per_segment * cadence), boundaries


def keep_retained(positions: Positions, every, boundaries: set[int]) -> Positions:
    """The positions a retention interval keeps (`retained`'s answer)."""
    if every == 1:
        return positions
    kept = positions.among(boundaries)
    return kept if every is None else kept.union(positions.multiples_of(every))


def cached_prefix(p: Plan, trace: Trace, prompt: int, tokens: int) -> CachedPrefix:
    """The keys a fresh request of `tokens` tokens (`prompt` of them prompt) leaves in the cache
    once its prefill (`trace`) is done. Each step hashes what it computed; with a drafter, the
    token sampled at the end is hashed too and the cache is hashed once more
    (`update_from_output`, scheduler.py:2409-2414), so the last block may be keyed then."""
    cache = layout(p)
    hashed = _hashed(cache, tokens)
    final_hashed = _hashed(cache, tokens + 1) if hashes_after_sampling(p) else hashed
    last_end = max((c.end for c in trace.chunks), default=0)
    keys = []
    for bucket in cache.buckets:
        if not bucket.recurrent:
            keys.append(_attention_keys(cache, bucket, prompt, tokens, final_hashed, last_end))
        else:
            positions, stale, offered = _recurrent_keys(p, cache, bucket, trace, prompt, tokens, hashed, final_hashed)
            keys.append(BucketKeys(positions=positions, stale=stale, offered=offered))
    return CachedPrefix(cache, tuple(keys), prompt, tokens)


def hashes_after_sampling(p: Plan) -> bool:
    """Whether `update_from_output` hashes the request's blocks once more after its sampled token
    (scheduling synchronous): 0.33.0 with a drafter (scheduler.py:2405-2414), 0.34.0 for every
    request of a model with a recurrent group (scheduler.py:2451-2470)."""
    recurrent = any(g.kind == RECURRENT for g in p.geometry.groups)
    return has_drafter(p) or (p.variant.hashes_after_sampling and recurrent)


def has_drafter(p: Plan) -> bool:
    """A speculative drafter runs beside the model (vLLM's num_speculative_tokens > 0)."""
    return bool(p.geometry.deployment.eagle_block_drop) or any(g.kind == DRAFT for g in p.geometry.groups)


def _hashed(cache: CacheLayout, tokens: int) -> int:
    """The tokens a request of `tokens` tokens has hashes for: whole hash blocks, each with its lookahead."""
    return hashed_tokens(tokens, cache.lookahead, cache.hash_block)


def _attention_keys(cache: CacheLayout, bucket: Bucket, prompt: int, tokens: int, hashed: int, last_end: int):
    """Every full block up to the last step's horizon, and the partial tail (full_attention's
    `_cache_partial_tail_block`): the prompt's last hash boundary, when it is inside a block."""
    horizon = cache.cacheable(bucket, min(last_end, tokens))
    full = min(horizon, hashed) // bucket.span * bucket.span
    h = cache.hash_block
    limit = prompt if bucket.use_eagle else prompt - 1
    tail = min(limit // h, hashed // h) * h
    partial = bucket.span != h and 0 < tail <= horizon and tail % bucket.span
    return BucketKeys(full_up_to=full, positions=Positions.of([tail] if partial else []))


def _recurrent_keys(p: Plan, cache: CacheLayout, bucket: Bucket, trace: Trace, prompt, tokens, hashed, final_hashed):
    r, h, a = p.cadence, cache.hash_block, cache.alignment
    end = prefill_end(prompt, tokens)
    last_end = max((c.end for c in trace.chunks), default=0)
    every, boundaries = retained(cache, r, prompt)

    hashing = cache.hashing(bucket)

    def horizon(chunk_end: int, hashes: int = hashed) -> int:
        """Blocks below this index are hashed once a chunk ends at `chunk_end`."""
        return hashing.horizon(chunk_end, tokens, hashes)

    def checkpoint(c: Chunk) -> int | None:
        """The internal prefill checkpoint the chunk reserves (`_needs_internal_checkpoint`): under
        retention 0 only on the chunk that reaches the prefill's end."""
        if not cache.checkpoint_alignment or (cache.retention == 0 and c.end < end):
            return None
        cp = checkpoint_position(c.end, a, cache.eagle_drop, cache.lookahead)
        valid = checkpoint_valid(c.start, c.end, cp, h, r, cache.checkpoint_alignment)
        return cp if valid and -(-c.end // r) - 2 >= 0 else None

    blocks: dict[tuple[int, int], tuple[int, int] | None] = {}

    def keyed_block_of(c: Chunk, next_end) -> tuple[int, int] | None:
        """(key, the state the block holds when hashed) of the block the chunk leaves its state in,
        if it is hashed (`keyed_block`); the last chunk's block once more when its sampled token is
        hashed. Asked twice per chunk (its key, whether it is stale), answered once."""
        following = c.end if next_end is None else next_end
        if (c.end, following) not in blocks:
            hashes = final_hashed if following == last_end else hashed
            block = keyed_block(hashing, c.end, following, tokens, hashed, hashes)
            blocks[c.end, following] = (block.key, block.held) if block.keyed else None
        return blocks[c.end, following]

    def full_state(c: Chunk, next_end) -> int | None:
        keyed = keyed_block_of(c, next_end)
        return None if keyed is None else keyed[0]

    def stale_state(c: Chunk, next_end) -> int | None:
        keyed = keyed_block_of(c, next_end)
        return None if keyed is None or keyed[0] == keyed[1] else keyed[0]

    def handed_state(c: Chunk, next_end) -> int | None:
        """A state block keyed by a step's own hashing call is handed to a KV connector at that
        step's end; one keyed only by the pass after the sampled token is not: the request is freed
        in that pass, and its pending hand-offs with it (MambaManager.pop_blocks_for_free)."""
        block = keyed_block(hashing, c.end, c.end if next_end is None else next_end, tokens, hashed, hashed)
        return block.key if block.in_own_call or (next_end is not None and block.in_next_call) else None

    full = keep_retained(trace.chunk_positions(full_state), every, boundaries)
    stale = keep_retained(trace.chunk_positions(stale_state), every, boundaries)
    reserved = trace.chunk_positions(lambda c, _: checkpoint(c))
    prompt_checkpoint = checkpoint_position(prompt, a, cache.eagle_drop, cache.lookahead)
    # A checkpoint is kept at the prompt's own, or where the retention keeps a block (its replay
    # positions are not consulted there, `_cache_partial_tail_block`).
    kept_checkpoints = keep_retained(reserved.multiples_of(r), every, set()).union(reserved.among([prompt_checkpoint]))
    tail = _recurrent_tail(cache, bucket, trace, prompt, tokens, r, checkpoint)

    def offered_checkpoint(c: Chunk, next_end) -> int | None:
        """A kept checkpoint is handed to a KV connector only if its block is among those the
        call hashes as full blocks (MambaManager.cache_blocks offers those alone)."""
        cp = checkpoint(c)
        if cp is None:
            return None
        column = -(-c.end // r) - 2
        top = horizon(c.end) if next_end is not None else max(horizon(c.end), horizon(c.end, final_hashed))
        return cp if horizon(c.start) <= column < top else None

    offered_checkpoints = trace.chunk_positions(offered_checkpoint)
    offered_checkpoints = keep_retained(offered_checkpoints.multiples_of(r), every, set()).union(
        offered_checkpoints.among([prompt_checkpoint])
    )
    # The state at the prompt's tail is handed over with the call that keys it, when its block ends
    # there (a block the call hashes), else once the next step copies it (allocate_new_blocks).
    offered_tail = [t for t in tail if t % r == 0 or t < last_end]
    handed = keep_retained(trace.chunk_positions(handed_state), every, boundaries)
    offered = handed.union(offered_checkpoints, Positions.of(offered_tail))
    return full.union(kept_checkpoints, Positions.of(tail)), stale, offered


def _recurrent_tail(cache: CacheLayout, bucket: Bucket, trace: Trace, prompt, tokens, r, checkpoint) -> list[int]:
    """The state at the prompt's last hash boundary, keyed by the step whose hashing horizon is
    exactly there, when that block is the running or the previous state and the step reserved no
    internal checkpoint (MambaManager's `_cache_partial_tail_block`)."""
    h = cache.hash_block
    tail = checkpoint_position(prompt, h, cache.eagle_drop, cache.lookahead)
    if tail <= 0:
        return []
    column = -(-tail // r) - 1
    window = cache.scheduler_block + max(b.span for b in cache.buckets) + cache.reprefillable
    for c in trace.chunks_ending_within(tail, tail + window):
        if c.end <= c.start:
            continue
        cached = cache.cacheable(bucket, min(c.end, tokens))
        if cached != tail or checkpoint(c) is not None:
            continue
        previous_column = -(-c.start // r) - 1 if c.start > 0 else -1
        if column in (-(-c.end // r) - 1, previous_column):
            return [tail]
    return []


# --- lookup ----------------------------------------------------------------------------------


def gpu_hit(cached: CachedPrefix, shared: int, new_tokens: int) -> int:
    """Tokens a later request of `new_tokens` tokens, the first `shared` of them the cached
    request's, is restored from the GPU prefix cache (`HybridKVCacheCoordinator.find_longest_cache_hit`
    from `max_cache_hit_length = new_tokens - 1`)."""
    cache = cached.layout
    h = cache.hash_block
    hashed = (new_tokens - cache.lookahead) // h  # the later request's hashes
    # A key matches while the prefix (and the lookahead its hash covers) is shared.
    matching = min(shared - cache.lookahead, hashed * h)
    hit = new_tokens - 1
    verified: set[int] = set()
    attention_hits: dict[int, int] = {}
    attention = [b for b in cache.buckets if not b.recurrent]
    simple = len(cache.buckets) == 2 and len(attention) == 1 and not cache.buckets[0].recurrent
    while True:
        current = hit
        for index, (bucket, keys) in enumerate(zip(cache.buckets, cached.keys, strict=True)):
            if not bucket.recurrent and index in attention_hits:
                current = min(current, attention_hits[index])
                continue
            drop = bucket.use_eagle and index not in verified
            limit = current
            if drop and not bucket.recurrent:
                margin = h if cache.fine and bucket.span > h else bucket.span
                limit = min(current + margin, hashed * h)
            if bucket.recurrent:
                found = _recurrent_find(cache, bucket, keys, limit, matching, hashed)
            else:
                found = _attention_find(cache, bucket, keys, limit, matching, hashed, drop)
                attention_hits[index] = found
            if drop:
                verified.add(index)
            elif found < current:
                verified.clear()
            current = found
        if current >= hit:
            break
        hit = current
        if simple:
            break
    return max(hit, 0)


def _attention_find(cache: CacheLayout, bucket: Bucket, keys: BucketKeys, limit, matching, hashed, drop) -> int:
    """FullAttentionManager.find_longest_cache_hit for one bucket."""
    span, a = bucket.span, cache.alignment
    full_blocks = min(keys.full_up_to, matching) // span
    blocks = min(full_blocks, limit // span)
    hit = blocks * span
    if a < span and span % a == 0:
        top = min(blocks * span // a + span // a - 1, limit // a, hashed)
        inside = [t for t in keys.positions if hit < t <= top * a and t <= matching and t % a == 0]
        if inside:
            hit = max(inside)
    if drop and hit > 0:
        hit -= min(a, span)
    return hit - hit % a


def _recurrent_find(cache: CacheLayout, bucket: Bucket, keys: BucketKeys, limit, matching, hashed) -> int:
    """MambaManager.find_longest_cache_hit: the longest state keyed at or below the limit."""
    span, a, h = bucket.span, cache.alignment, cache.hash_block
    if a < span and span % a == 0:
        found = keys.positions.at_most(min(limit, hashed * h, matching))
        return found or 0
    if limit // span * span > hashed * h:
        raise LookupFailure(
            "vLLM 0.33.0's MambaManager.find_longest_cache_hit reads a block hash the request does not have "
            f"(IndexError: {limit // span} blocks of {span} asked, {hashed * h} tokens hashed; "
            "single_type_kv_cache_manager.py:1523-1526), so the scheduler raises"
        )
    states = keys.positions.multiples_of(span)
    if span != a:
        states = states.multiples_of(math.lcm(span, a))
    found = states.at_most(min(limit, matching, hashed * h))
    return found or 0
