"""What a later request is restored: the GPU prefix cache's and the offload connector's lookups
against the keys a cached request's prefill leaves (models/prefix_cache.py, models/offload.py,
the engine model confirmed against the real vLLM 0.33.0 scheduler end to end), and whether a
recurrent block is keyed only where it holds the state its key names.

The restore theorems are bounded: `gpu_hit` and `offload_hit` are loops over the cache's keys, run
on ints, so they are decided by enumeration over small generated geometries and the built-in
ones (proofs/engine/enumerated.py). Each states what a restore must satisfy in terms of the keys alone
(which positions each cache group holds keyed), never the lookup's own steps.

`cache-keys-hold-their-state` is proved by Z3 over symbolic sizes: two consecutive steps of the
engine's own `prefill_step` and the hashing horizon `models.prefix_cache.keyed_block`, the very
functions `cached_prefix` runs.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache

from models import arith
from models.geometry import Geometry, builtin_geometry_names, load_geometry
from models.offload import OffloadNotModelled, offload_groups, offload_hit
from models.plan import Plan, plan
from models.prefill import grid_period, prefill_step, run_prefill
from models.prefix_cache import (
    Bucket,
    BucketKeys,
    CachedPrefix,
    Hashing,
    LookupFailure,
    RetentionError,
    cached_prefix,
    gpu_hit,
    hashed_tokens,
    keyed_block,
)
from models.scheduler import checkpoint_position, checkpoint_valid, prefill_end
from models.variants import Variant
from proofs.catalog.base import GEOMETRY_VARS, SPLIT_PARAM_VARS, Obligation, Theorem, bools, ints
from proofs.catalog.loops import SMALL, small_geometry
from proofs.catalog.prefill import _setting
from proofs.engine.claims import Applies, at_most
from proofs.engine.enumerated import Case, Checks, Enumeration, Verdict
from proofs.engine.solver import Claim

# Geometries the restore reads that loops.SMALL leaves out, each named for what it adds.
RESTORE_SMALL = {
    # A recurrent block of two attention blocks, no drafter: 0.33.0's split lands on the attention
    # block, PR457's on the recurrent one.
    "g8-recurrent16": lambda: small_geometry(
        "g8-recurrent16",
        8,
        {},
        [
            {"kind": "target-attention", "block_size": 8},
            {"kind": "recurrent", "block_size": 16},
        ],
    ),
    # The split's grid (0.33.0: the smallest spec block, the draft's 8) finer than the recurrent
    # block (16), an EAGLE drop with no annotated group: every group is taken for an EAGLE one.
    "g16-split-finer": lambda: small_geometry(
        "g16-split-finer",
        8,
        {"eagle_block_drop": True},
        [
            {"kind": "target-attention", "block_size": 16},
            {"kind": "recurrent", "block_size": 16},
            {"kind": "draft-attention", "block_size": 8},
        ],
    ),
    # The same at the sizes of the finding in docs/engine-theorems.md (target 256, recurrent 256,
    # an unannotated 128-token draft, EAGLE drop).
    "g256-split-finer": lambda: small_geometry(
        "g256-split-finer",
        128,
        {"eagle_block_drop": True, "max_num_scheduled_tokens": 584},
        [
            {"kind": "target-attention", "block_size": 256},
            {"kind": "recurrent", "block_size": 256},
            {"kind": "draft-attention", "block_size": 128},
        ],
    ),
    # Partial hash hits under DCP with the recurrent block equal to the hash block (R >= H suffices
    # there) and a user-given hash block finer than every span.
    "g8-dcp2-hash4": lambda: small_geometry(
        "g8-dcp2-hash4",
        8,
        {"dcp_size": 2, "hash_block_size": 4, "mamba_block_size": 16},
        [
            {"kind": "target-attention", "block_size": 8, "dcp_sharded": True},
            {"kind": "recurrent", "block_size": 8},
        ],
    ),
    # One target group and one recurrent group only (the coordinator's simple hybrid: one pass),
    # internal checkpoints at any token, a recurrent block of two attention blocks.
    "g8-simple-checkpoints": lambda: small_geometry(
        "g8-simple-checkpoints",
        8,
        {"mamba_block_size": 16, "prefill_checkpoint_alignment": 1},
        [
            {"kind": "target-attention", "block_size": 8},
            {"kind": "recurrent", "block_size": 8, "count": 2},
        ],
    ),
}
GEOMETRIES = {**RESTORE_SMALL, **SMALL}  # the split's findings first: a refutation stops at its first case
DENSE = "dense"


@cache
def _geometry(name: str) -> Geometry:
    return GEOMETRIES[name]() if name in GEOMETRIES else load_geometry(name)


def _deployment(case: Case) -> Geometry:
    """The case's geometry with its budget and retention interval."""
    g = _geometry(case["geometry"])
    retention = None if case["retention"] == DENSE else case["retention"]
    d = replace(g.deployment, max_num_scheduled_tokens=case["budget"], prefix_cache_retention_interval=retention)
    return replace(g, deployment=d)


def _grids(p: Plan) -> list[int]:
    """Every grid a restore turns on: the cadence, the hash, scheduler and split blocks, every span, the
    offload chunks, and the budget's chunk."""
    split = p.split
    d = p.geometry.deployment
    sizes = {p.cadence, int(split.hash_block), int(split.sched_block), int(split.block)}
    sizes |= {int(s) for s in p.target_spans} | {int(s) for s in p.geometry.eagle_spans()}
    sizes |= {p.cadence * d.offload_blocks_per_chunk}
    budget = d.max_num_scheduled_tokens
    sizes.add(max(1, budget // int(split.block) * int(split.block)))
    return sorted(sizes)


def _prompts(p: Plan) -> list[int]:
    """Prompt lengths at every grid, its first multiples, and one either side."""
    points = {k * size + delta for size in _grids(p) for k in MULTIPLES for delta in (-1, 0, 1)}
    return sorted(x for x in points if x >= 1)


def _later_requests(p: Plan, prompt: int) -> list[tuple[str, int, int]]:
    """(kind, tokens shared with the cached prompt, the later request's tokens): an identical resend,
    a request extending the prompt (its sampled token shared too) by one token and by a hash block
    and a scheduler block, and requests diverging one token before the prompt's end, half way and
    one token past the last cadence boundary below it."""
    h, s, r = int(p.split.hash_block), int(p.split.sched_block), p.cadence
    found = [("resend", prompt, prompt)]
    found += [("extend", prompt + 1, prompt + 1 + extra) for extra in sorted({1, h, s})]
    for shared in sorted({prompt - 1, prompt // 2, (prompt - 1) // r * r + 1}):
        if 1 <= shared < prompt:
            found.append(("diverge", shared, shared + h))
    return found


# The retention intervals vLLM takes: 0 (its default: only the blocks a replaying request resumes at),
# every block (dense) and, on the geometries named in SPARSE_RETENTION, one block in two scheduler blocks.
RETENTIONS = (0, DENSE)
SPARSE_RETENTION = ("g8-recurrent16", "g16-dcp2", "g8-offload")
MULTIPLES = (1, 2)  # prompts at the first two multiples of every grid, and one either side
# And every prompt up to three recurrent blocks on the geometries whose split may leave a recurrent block
# mid-way (a chunk that starts off the block and ends where the prefill does, past the block's end).
EVERY_PROMPT = ("g8-recurrent16", "g16-split-finer")


def _retentions(name: str, p: Plan) -> tuple:
    sparse = (2 * int(p.split.sched_block),) if name in SPARSE_RETENTION else ()
    return (*RETENTIONS, *sparse)


def _cases(variant: Variant):
    """Every generated geometry at each retention, at two budgets (its own, three pages; two thirds of
    the recurrent block), prompts at and around every grid, each later request; and every built-in
    deployment at its own budget and retention 0."""
    for name in GEOMETRIES:
        g = _geometry(name)
        p = plan(variant, g)
        if not p.accepted:
            continue
        budgets = sorted({g.deployment.max_num_scheduled_tokens, max(1, p.cadence * 2 // 3)})
        for retention in _retentions(name, p):
            for budget in budgets:
                yield from _requests(variant, name, retention, budget)
    for name in builtin_geometry_names():
        g = _geometry(name)
        if plan(variant, g).accepted:
            yield from _requests(variant, name, 0, g.deployment.max_num_scheduled_tokens)


def _requests(variant: Variant, name: str, retention, budget: int):
    """One case per prompt: the cached request's prefill, every later request checked against it."""
    base = {"geometry": name, "retention": retention, "budget": budget}
    p = plan(variant, _deployment(base))
    prompts = set(_prompts(p))
    if name in EVERY_PROMPT:
        prompts |= set(range(1, 3 * p.cadence + 1))
    for prompt in sorted(prompts):
        yield {**base, "prompt": prompt}


def _cached(variant: Variant, case: Case) -> tuple[Plan, object, CachedPrefix | None]:
    """The plan, the prefill's trace and what it leaves keyed; None when the prefill stalls (no later
    request runs) or vLLM refuses the retention interval at startup."""
    p = plan(variant, _deployment(case))
    trace = run_prefill(p, case["budget"], prompt_tokens=case["prompt"], output_tokens=0)
    if trace.stalled_at is not None:
        return p, trace, None
    try:
        return p, trace, cached_prefix(p, trace, case["prompt"], case["prompt"])
    except RetentionError:
        return p, trace, None


# --- what each attention group serves ---------------------------------------------------------


def _matching(cached: CachedPrefix, shared: int, new: int) -> int:
    """Tokens of the later request a key can match: what it shares less the hash lookahead, within its
    block hashes."""
    cache_ = cached.layout
    return min(shared - cache_.lookahead, hashed_tokens(new, cache_.lookahead, cache_.hash_block))


def _serves(cached: CachedPrefix, bucket: Bucket, keys: BucketKeys, matching: int, x: int) -> bool:
    """Whether an attention bucket serves a hit of exactly x tokens: x within the later request's match,
    a block boundary within its run of keyed full blocks, or, where hits are fine-grained (the hit
    alignment divides the bucket's block and is finer), its keyed partial tail, every full block below
    it keyed."""
    a, span = cached.layout.alignment, bucket.span
    if x <= 0 or x > matching:
        return False
    if x % span == 0:
        return x <= keys.full_up_to
    fine = a < span and span % a == 0
    return fine and x % a == 0 and x in keys.positions and x // span * span <= keys.full_up_to


def _holds_through(cached: CachedPrefix, bucket: Bucket, keys: BucketKeys, matching: int, limit: int) -> int:
    """The most tokens an attention bucket serves at or below `limit`: its keyed blocks (and partial
    tail) hold the KV of every token up to there."""
    top = min(keys.full_up_to, matching, limit) // bucket.span * bucket.span
    tails = [t for t in keys.positions if top < t <= limit and _serves(cached, bucket, keys, matching, t)]
    return max([top, *tails])


def _drop_unit(cached: CachedPrefix, bucket: Bucket) -> int:
    """What an EAGLE group drops of its hit: a hit-alignment unit, at most its block."""
    return min(cached.layout.alignment, bucket.span)


def _attention(cached: CachedPrefix):
    return [(b, k) for b, k in zip(cached.layout.buckets, cached.keys, strict=True) if not b.recurrent]


EVERY_ATTENTION = "within what every non-EAGLE attention bucket holds keyed"
EVERY_EAGLE = "every EAGLE bucket holds a drop unit beyond it"


def _restorable_bounds(cached: CachedPrefix, shared: int, new: int) -> list[tuple[str, int, str]]:
    """The upper bounds the GPU restore h must meet: (name, ceiling on h, what the ceiling is)."""
    cache_ = cached.layout
    matching = _matching(cached, shared, new)
    bounds = [
        ("below the later request's last token", new - 1, "its tokens less one"),
        (
            "within what the later request shares, less the hash lookahead",
            shared - cache_.lookahead,
            f"{shared} shared, lookahead {cache_.lookahead}",
        ),
        (
            "within the later request's block hashes",
            hashed_tokens(new, cache_.lookahead, cache_.hash_block),
            f"hash block {cache_.hash_block}",
        ),
    ]
    for i, (bucket, keys) in enumerate(_attention(cached)):
        what = f"bucket {i} of {bucket.span}-token blocks, full blocks keyed to {keys.full_up_to}"
        if bucket.use_eagle:
            unit = _drop_unit(cached, bucket)
            held = _holds_through(cached, bucket, keys, matching, new - 1 + unit)
            bounds.append((EVERY_EAGLE, held - unit, f"{what}, a drop unit of {unit}"))
        else:
            bounds.append((EVERY_ATTENTION, _holds_through(cached, bucket, keys, matching, new - 1), what))
    return bounds


def _every_group_serves(cached: CachedPrefix, shared: int, new: int, k: int) -> bool:
    """Whether a recurrent key k is one every group serves exactly: at most the later request's tokens
    less one, on the hit alignment, every attention bucket serving k, every EAGLE one k and a drop unit."""
    cache_ = cached.layout
    matching = _matching(cached, shared, new)
    if k > new - 1 or k > matching or k % cache_.alignment:
        return False
    for bucket, keys in _attention(cached):
        at = k + _drop_unit(cached, bucket) if bucket.use_eagle else k
        if not _serves(cached, bucket, keys, matching, at):
            return False
    return True


def _hit(cached: CachedPrefix, shared: int, new: int, checks: Checks) -> int | None:
    try:
        return gpu_hit(cached, shared, new)
    except LookupFailure:
        checks.note("a lookup vLLM 0.33.0 itself fails (IndexError)")
        return None


def gpu_restore_safe_complete(variant: Variant, case: Case) -> Verdict:
    """Every later request's GPU restore after the case's prefill is 0 or a state every recurrent group holds
    keyed there, on the hit alignment and within each of its bounds (_restorable_bounds). Exercised when some
    restore is positive."""
    checks = Checks()
    p, _, cached = _cached(variant, case)
    if cached is None:
        checks.note("a prefill that stalls or a retention vLLM refuses")
        return checks.verdict(exercised=False)
    restored = False
    for kind, shared, new in _later_requests(p, case["prompt"]):
        h = _hit(cached, shared, new, checks)
        if h is None:
            continue
        checks.note(f"a later request: {kind}")
        failure = _unsafe_or_incomplete(checks, cached, shared, new, h)
        if failure:
            return checks.verdict(f"a later request of {new} tokens sharing {shared} ({kind}): {failure}")
        restored |= h > 0
    return checks.verdict(exercised=restored)


def _unsafe_or_incomplete(checks: Checks, cached: CachedPrefix, shared: int, new: int, h: int) -> str | None:
    if checks.fails("nothing, or a state every recurrent group holds keyed there", h == 0 or h in cached.recurrent):
        return f"restores {h}, not a recurrent key ({_first(cached.recurrent)})"
    if checks.fails("on the hit alignment", h % cached.layout.alignment == 0):
        return f"restores {h}, off the hit alignment {cached.layout.alignment}"
    for name, ceiling, what in _restorable_bounds(cached, shared, new):
        if checks.fails(name, h <= max(ceiling, 0)):
            return f"restores {h}: not {name} ({what}: {ceiling})"
    larger = _larger_keys(cached, h, new)
    checks.note("a larger recurrent key tried" if larger else "no larger recurrent key")
    better = next((k for k in larger if _every_group_serves(cached, shared, new, k)), None)
    if checks.fails("no larger recurrent key every group serves", better is None):
        return f"restores {h}, where every group serves the recurrent key {better}"
    return None


def _larger_keys(cached: CachedPrefix, h: int, new: int) -> list[int]:
    """The recurrent keys above h that a later request of `new` tokens could be restored."""
    found = []
    for k in cached.recurrent:
        if k > new:
            break
        if k > h:
            found.append(k)
    return found


def _first(positions, n: int = 6) -> str:
    shown = positions.first(n)
    return ", ".join(map(str, shown)) + (", ..." if positions.count > n else "")


def gpu_restore_holds_its_state(variant: Variant, case: Case) -> Verdict:
    """Every positive GPU restore h after the case's prefill is the state after h tokens: its key is not
    stale, and a chunk of the prefill ends at h or exports a checkpoint there."""
    checks = Checks()
    p, trace, cached = _cached(variant, case)
    if cached is None:
        checks.note("a prefill that stalls or a retention vLLM refuses")
        return checks.verdict(exercised=False)
    exported = _exported_checkpoints(p, trace, cached)
    restored = False
    for kind, shared, new in _later_requests(p, case["prompt"]):
        h = _hit(cached, shared, new, checks)
        if not h:
            continue
        restored = True
        later = f"a later request of {new} tokens sharing {shared} ({kind}) restores {h}"
        if checks.fails("its block holds the state its key names (not a stale key)", h not in cached.stale):
            ends = _first(trace.chunk_ends, 8)
            return checks.verdict(
                f"{later}, a key whose block holds the state an earlier chunk left (chunk ends {ends})"
            )
        computed = h in trace.chunk_ends or h in exported
        if checks.fails("the state after h tokens was computed: a chunk end or an exported checkpoint", computed):
            return checks.verdict(f"{later}, where no chunk ends and no checkpoint is exported")
    return checks.verdict(exercised=restored)


def _exported_checkpoints(p: Plan, trace, cached: CachedPrefix) -> set[int]:
    """The internal prefill checkpoints a chunk of the prefill lets its backend export
    (models.scheduler's checkpoint position and validity, read at the hit alignment)."""
    layout_ = cached.layout
    if not layout_.checkpoint_alignment:
        return set()
    found = set()
    for c in trace.every_chunk():
        cp = checkpoint_position(c.end, layout_.alignment, layout_.eagle_drop, layout_.lookahead)
        if checkpoint_valid(c.start, c.end, cp, layout_.hash_block, p.cadence, layout_.checkpoint_alignment):
            found.add(cp)
    return found


# --- offload --------------------------------------------------------------------------------


def _offload_cases(variant: Variant):
    """The GPU cases of a deployment that runs a KV connector: one that hashes with no lookahead."""
    for case in _cases(variant):
        if _geometry(case["geometry"]).deployment.hash_lookahead_tokens == 0:
            yield case


def _offload_setting(checks: Checks, variant: Variant, case: Case):
    """The plan, what the prefill leaves keyed and the connector's groups; groups None (noted) where the
    prefill stalls, vLLM refuses the retention interval, or the connector's setting is not modelled."""
    p, _, cached = _cached(variant, case)
    if cached is None:
        checks.note("a prefill that stalls or a retention vLLM refuses")
        return p, None, None
    try:
        return p, cached, offload_groups(p)
    except OffloadNotModelled:
        checks.note("a connector setting the model does not cover")
        return p, cached, None


def offload_restore_safe(variant: Variant, case: Case) -> Verdict:
    checks = Checks()
    p, cached, groups = _offload_setting(checks, variant, case)
    if groups is None:
        return checks.verdict(exercised=False)
    restored = False
    for kind, shared, new in _later_requests(p, case["prompt"]):
        h = offload_hit(p, cached, shared, new)
        checks.note(f"a later request: {kind}")
        failure = _offload_unsafe(checks, p, cached, groups, shared, new, h)
        if failure:
            return checks.verdict(f"a later request of {new} tokens sharing {shared} ({kind}) loads {h}: {failure}")
        restored |= h > 0
    return checks.verdict(exercised=restored)


def _offload_unsafe(checks: Checks, p: Plan, cached: CachedPrefix, groups, shared: int, new: int, h: int):
    if h == 0:
        checks.note("nothing loaded")
        return None
    for name, holds, what in (
        ("within the prompt", h <= cached.prompt, cached.prompt),
        ("within what the later request shares", h <= shared, shared),
        ("below the later request's tokens", h <= new - 1, new - 1),
    ):
        if checks.fails(name, holds):
            return f"not {name} ({what})"
    hash_block = int(p.split.hash_block)
    stored_to = min(cached.prompt, shared, new // hash_block * hash_block)  # a connector hashes with no lookahead
    for g in groups:
        c = g.chunk
        holding = -(-h // c) * c  # the end of the chunk holding h
        if g.recurrent:
            offered = holding in cached.offered and holding <= cached.prompt
            if checks.fails("every recurrent group's chunk holding it stores a state the GPU cache offered", offered):
                return f"the {c}-token recurrent chunk holding it ends at {holding}, no state offered there"
            continue
        through = holding + (c if g.eagle else 0)
        name = (
            "every EAGLE group's chunks stored one chunk beyond the one holding it"
            if g.eagle
            else "every attention group's chunks stored through the one holding it"
        )
        if checks.fails(name, through <= stored_to):
            return f"not {name}: a group of {c}-token chunks is stored under the later request's keys to {stored_to}"
    return None


def offload_restore_holds_its_state(variant: Variant, case: Case) -> Verdict:
    """Every positive offload load h after the case's prefill lies on every recurrent group's chunk grid and
    is a state the GPU cache offered the connector. Vacuous where the connector's setting is not modelled."""
    checks = Checks()
    p, cached, groups = _offload_setting(checks, variant, case)
    if groups is None:
        return checks.verdict(exercised=False)
    restored = False
    for kind, shared, new in _later_requests(p, case["prompt"]):
        h = offload_hit(p, cached, shared, new)
        if h == 0:
            continue
        restored = True
        for g in groups:
            if g.recurrent and checks.fails("on every recurrent group's chunk grid", h % g.chunk == 0):
                return checks.verdict(
                    f"a later request of {new} tokens sharing {shared} ({kind}) loads {h}, off the {g.chunk}-token "
                    f"recurrent chunk grid: the state it loads is the one stored at {-(-h // g.chunk) * g.chunk}"
                )
        if checks.fails("a state the GPU cache offered", h in cached.offered):
            return checks.verdict(f"a later request of {new} tokens sharing {shared} ({kind}) loads {h}, never offered")
    return checks.verdict(exercised=restored)


# --- the cache of a condensed prefill is the explicit one's -----------------------------------

CONDENSED_PERIODS = (3, 5)  # prompts this many grid periods long, and one token and a hash block more
CONDENSED_BUDGETS = ("own", "two thirds of the recurrent block", "13,5")


def _condensed_cases(variant: Variant):
    """Every generated geometry at each retention, each budget, prompts several grid periods long."""
    for name in GEOMETRIES:
        g = _geometry(name)
        p = plan(variant, g)
        if not p.accepted:
            continue
        budgets = {
            "own": str(g.deployment.max_num_scheduled_tokens),
            "two thirds of the recurrent block": str(max(1, p.cadence * 2 // 3)),
            "13,5": "13,5",
        }
        period = grid_period(p)
        for retention in _retentions(name, p):
            for budget in CONDENSED_BUDGETS:
                for periods in CONDENSED_PERIODS:
                    for extra in sorted({0, 1, int(p.split.hash_block)}):
                        yield {
                            "geometry": name,
                            "retention": retention,
                            "budgets": budgets[budget],
                            "prompt": periods * period + extra,
                        }


def _cache_figures(p: Plan, trace, prompt: int) -> dict:
    """What the cache keeps after the trace, each bucket's keys written out, and what every later request
    is restored from the GPU and through offload; None where vLLM refuses the retention interval."""
    try:
        cached = cached_prefix(p, trace, prompt, prompt)
    except RetentionError:
        return {"refused": True}
    keys = [(k.full_up_to, list(k.positions), list(k.stale), list(k.offered)) for k in cached.keys]
    restored = []
    for _kind, shared, new in _later_requests(p, prompt):
        try:
            gpu = gpu_hit(cached, shared, new)
        except LookupFailure:
            gpu = "vLLM's lookup fails"
        try:
            offload = offload_hit(p, cached, shared, new)
        except OffloadNotModelled:
            offload = "not modelled"
        restored.append((shared, new, gpu, offload))
    return {"keys": keys, "restored": restored}


def cache_condensed_is_explicit(variant: Variant, case: Case) -> Verdict:
    """The cache's keys and every later request's restores, read off the case's prefill condensed as soon as
    it repeats, are those read off the same prefill run step by step. Exercised when the run condenses."""
    checks = Checks()
    g = _geometry(case["geometry"])
    retention = None if case["retention"] == DENSE else case["retention"]
    geometry = replace(g, deployment=replace(g.deployment, prefix_cache_retention_interval=retention))
    p = plan(variant, geometry)
    budgets = [int(b) for b in str(case["budgets"]).split(",")]
    prompt = case["prompt"]
    slow = run_prefill(p, budgets, prompt_tokens=prompt, output_tokens=0, condense_beyond=None)
    fast = run_prefill(p, budgets, prompt_tokens=prompt, output_tokens=0, condense_beyond=1)
    if not any(c.end > c.start for c in slow.chunks):
        checks.note("a prefill whose every step stalls")
        return checks.verdict(exercised=False)
    if fast.repeat is not None:
        checks.note("a condensed prefill")
    explicit, condensed = _cache_figures(p, slow, prompt), _cache_figures(p, fast, prompt)
    for name in ("keys", "restored"):
        if checks.differ(f"the cache's {name}", condensed.get(name), explicit.get(name)):
            return checks.verdict(f"read off the condensed prefill, the cache's {name} differ from the explicit one's")
    return checks.verdict(exercised=fast.repeat is not None and "keys" in explicit)


# --- a recurrent block is hashed only holding the state its key names (Z3) ----------------------

KEYS_VARS = (
    tuple(v for v in SPLIT_PARAM_VARS if v.name != "block")
    + GEOMETRY_VARS
    + ints("computed", "budget", "budget2", "prompt", "tokens", "prefill_lookahead")
    + bools("drafter", "last")
)
KEYS_UNROLL = 2
KEYS_TRACE_VARS = (
    tuple(v for v in SPLIT_PARAM_VARS if v.name != "block")
    + GEOMETRY_VARS
    + ints("prompt", "tokens", "prefill_lookahead", *(f"budget{i}" for i in range(KEYS_UNROLL + 1)))
    + bools("drafter")
)


def _recurrent_hashing(d, p, x) -> Hashing:
    """How far the recurrent groups' blocks are hashed, as models.prefix_cache.layout resolves it: hits
    fine-grained where R > H (R >= H under DCP), the EAGLE block dropped by every group when no group is
    annotated, the tokens a multi-module MTP prefills again."""
    r, hash_block = d.cadence, p.hash_block
    fine = arith.ite(x["dcp"] == 1, r > hash_block, r >= hash_block)
    use_eagle = arith.all_of(p.eagle_drop, arith.negate(x["annotated"]))
    return Hashing(fine, p.sched_block, use_eagle, arith.maximum(0, x["prefill_lookahead"] - 1), r)


def _keys_setting(variant, x):
    d, p, hypotheses = _setting(variant, x, guarded=False)
    hypotheses["prompt within request"] = arith.all_of(x["prompt"] >= 1, x["tokens"] >= x["prompt"])
    hypotheses["a prefill lookahead"] = x["prefill_lookahead"] >= 0
    return d, p, hypotheses


def _hashes(p, x, last):
    """The tokens hashed by a call: the request's; after its last chunk, with a drafter, its sampled token's
    too (the cache is hashed once more)."""
    plain = hashed_tokens(x["tokens"], p.lookahead, p.hash_block)
    final = hashed_tokens(x["tokens"] + 1, p.lookahead, p.hash_block)
    return plain, arith.ite(arith.all_of(last, x["drafter"]), final, plain)


def _keyed_goal(block):
    return {
        "hashed by its own call only holding the state its key names": Applies(
            block.in_own_call, block.held == block.key, edge=block.held == block.key
        ),
        "hashed by the next call only holding the state its key names": arith.implies(
            arith.all_of(block.in_next_call, arith.negate(block.in_own_call)), block.held == block.key
        ),
    }


def keys_hold_their_state(variant, x):
    """Two consecutive steps of the engine's prefill from any state in prefill, s -> e -> e': the block
    holding the state after e (column cdiv(e, R) - 1) is hashed by the call after either step only holding
    the state after cdiv(e, R) * R tokens."""
    d, p, hypotheses = _keys_setting(variant, x)
    r, s, prompt, tokens, k = d.cadence, x["computed"], x["prompt"], x["tokens"], x["prefill_lookahead"]
    hypotheses["a state in prefill"] = arith.all_of(s >= 0, s < prefill_end(prompt, tokens))
    hypotheses["budgets positive, within the scheduler's"] = arith.all_of(
        x["budget"] >= 1, x["budget2"] >= 1, x["budget"] <= x["max_scheduled"], x["budget2"] <= x["max_scheduled"]
    )
    first = prefill_step(variant, p, r, s, x["budget"], prompt, tokens, prefill_lookahead=k)
    second = prefill_step(variant, p, r, first.end, x["budget2"], prompt, tokens, prefill_lookahead=k)
    hypotheses["the first step writes a state"] = first.end > s
    plain, following = _hashes(p, x, x["last"])
    block = keyed_block(_recurrent_hashing(d, p, x), first.end, second.end, tokens, plain, following)
    return Claim(
        hypotheses=hypotheses,
        goal=_keyed_goal(block),
        covers={
            "hashed by the next call": arith.all_of(block.in_next_call, arith.negate(block.in_own_call)),
            "hashed by its own call": block.in_own_call,
            "left behind by the next chunk": arith.all_of(
                second.end > first.end, block.column < arith.cdiv(second.end, r) - 1
            ),
        },
    )


def keys_hold_their_state_trace(variant, x):
    """A fresh request's first KEYS_UNROLL + 1 steps through the real split; every pair of consecutive
    chunks as the step states it (the last one, when the prefill ends there, hashed once more)."""
    d, p, hypotheses = _keys_setting(variant, x)
    r, prompt, tokens, k = d.cadence, x["prompt"], x["tokens"], x["prefill_lookahead"]
    hypotheses["budgets positive, within the scheduler's"] = arith.all_in(
        arith.all_of(x[f"budget{i}"] >= 1, x[f"budget{i}"] <= x["max_scheduled"]) for i in range(KEYS_UNROLL + 1)
    )
    ends, computed = [], 0
    for i in range(KEYS_UNROLL + 1):
        computed = prefill_step(variant, p, r, computed, x[f"budget{i}"], prompt, tokens, prefill_lookahead=k).end
        ends.append(computed)
    hashing = _recurrent_hashing(d, p, x)
    holds = True
    start = 0
    for i in range(KEYS_UNROLL):
        end, following = ends[i], ends[i + 1]
        last = following >= prefill_end(prompt, tokens)
        plain, hashes = _hashes(p, x, last)
        block = keyed_block(hashing, end, arith.ite(following > end, following, end), tokens, plain, hashes)
        wrote = arith.all_of(end > start, start < prefill_end(prompt, tokens))
        holds = arith.all_of(holds, arith.implies(arith.all_of(wrote, block.keyed), block.held == block.key))
        start = end
    return Claim(hypotheses=hypotheses, goal=holds)


HASHED_VARS = (
    tuple(v for v in SPLIT_PARAM_VARS if v.name != "block")
    + GEOMETRY_VARS
    + ints("end", "tokens", "prompt", "prefill_lookahead")
    + bools("drafter", "last")
)
HORIZON = "the hashing horizon never passes the tokens computed"
OWN_CALL = "a block hashed by the call after the chunk that wrote it holds its key's state"


def hashing_behind_the_chunk(variant, x, conjuncts=(HORIZON, OWN_CALL)):
    """A chunk ending at any position of a request (as prefill.py's publication theorems, the split is not
    read: what is proved holds for every chunk end it can produce) and the call that hashes the recurrent
    groups' blocks after it (with a drafter, after the last chunk, the pass that hashes the sampled token
    too): its horizon never passes the chunk's end, so a block it hashes holds the state its key names.
    (A block hashed by a later call, after the next chunk, holds it too where that chunk ends in the block's
    column: the horizon of that call never passes that chunk's end either. Only a block the next chunk
    leaves behind can hold another state: cache-keys-hold-their-state.)"""
    d, p, hypotheses = _keys_setting(variant, x)
    tokens, e = x["tokens"], x["end"]
    hypotheses["a chunk end of the request"] = arith.all_of(1 <= e, e <= tokens)
    hashing = _recurrent_hashing(d, p, x)
    _, hashes = _hashes(p, x, x["last"])
    block = keyed_block(hashing, e, e, tokens, hashes, hashes)
    goal = {
        HORIZON: at_most(arith.multiple(hashing.horizon(e, tokens, hashes), d.cadence), e),
        OWN_CALL: arith.implies(block.in_own_call, block.held == block.key),
    }
    covers = {
        "a block hashed by the call after the chunk that wrote it": block.in_own_call,
        "by a drafter's last pass": arith.all_of(block.in_own_call, x["drafter"], x["last"]),
    }
    return Claim(hypotheses=hypotheses, goal={name: goal[name] for name in conjuncts}, covers=covers)


# --- the theorems ----------------------------------------------------------------------------

_NAMES = ", ".join(GEOMETRIES)
_DOMAIN = (
    f"generated geometries {_NAMES} (proofs/catalog/loops.py, proofs/catalog/restore.py) at retention 0 and "
    f"dense, and {', '.join(SPARSE_RETENTION)} also at twice the scheduler block, each at its own budget and "
    "at two thirds of its recurrent block, prompts k*g - 1, k*g, k*g + 1 for k in "
    f"{', '.join(map(str, MULTIPLES))} and g every grid (the cadence, the hash, scheduler and split blocks, "
    "every target and EAGLE span, the recurrent offload chunk, the budget's chunk), and every prompt up to "
    f"three recurrent blocks on {', '.join(EVERY_PROMPT)}; every built-in deployment at its own budget and "
    "retention 0, prompts the same way; a fresh request (no output tokens), and for each prompt the later "
    "requests: an identical resend, extensions (the sampled token shared) by 1 token, a hash block and a "
    "scheduler block, and requests of a hash block more sharing the prompt less one token, half of it and "
    "one token past its last cadence boundary (one case per prompt, every later request in it)"
)

_OFFLOAD_DOMAIN = _DOMAIN + "; only deployments that hash with no lookahead (those that can run a KV connector)"

THEOREMS = (
    Theorem(
        "gpu-restore-safe-complete",
        "restore",
        "Bounded, by enumeration: what the GPU prefix cache restores to a later request "
        "(models.prefix_cache.gpu_hit, HybridKVCacheCoordinator.find_longest_cache_hit) is 0 or a state every "
        "recurrent group holds keyed there, on the layout's hit alignment, at most the later request's tokens "
        "less one, within what it shares less the hash lookahead and within its block hashes, within what "
        "every non-EAGLE attention bucket holds keyed (its full blocks, or its partial tail where hits are "
        "fine-grained), with every EAGLE bucket holding a drop unit beyond it; and complete: no larger "
        "recurrent key is one every attention bucket serves exactly (a keyed block boundary or its keyed "
        "partial tail; an EAGLE bucket at the key plus a drop unit) within those bounds. Where vLLM 0.33.0's "
        "own lookup raises, the case is counted apart.",
        (),
        enumeration=Enumeration(_DOMAIN, _cases, gpu_restore_safe_complete, "a positive GPU restore"),
    ),
    Theorem(
        "gpu-restore-holds-its-state",
        "restore",
        "Bounded, by enumeration: the recurrent state the GPU prefix cache restores after a fresh request's "
        "prefill (a positive gpu_hit h) is the state after h tokens: its key is not one whose block holds "
        "another state (CachedPrefix.stale), and some chunk of the cached prefill ends at h or exports an "
        "internal checkpoint there. vLLM 0.33.0 keys a recurrent block by its column: with the split's grid "
        "finer than the recurrent block, a chunk leaves a block mid-way and the next one hashes it at the "
        "block's end. (A resumed request's prefill, with output tokens, is left out: under PR457 too, a chunk "
        "that starts at the prompt's hash tail with an internal checkpoint leaves its block behind, "
        "cache-keys-hold-their-state.)",
        (),
        enumeration=Enumeration(_DOMAIN, _cases, gpu_restore_holds_its_state, "a positive GPU restore"),
    ),
    Theorem(
        "offload-restore-safe",
        "restore",
        "Bounded, by enumeration: what the native offload connector loads for a later request "
        "(models.offload.offload_hit, _lookup_complete_chunks) is 0, or at most the cached prompt, what the "
        "later request shares and its tokens less one, with every recurrent group's chunk holding it storing a "
        "state the GPU prefix cache offered the connector, and every attention group's chunks stored through "
        "the chunk holding it (an annotated EAGLE group's one chunk beyond) under keys the later request has.",
        (),
        enumeration=Enumeration(_OFFLOAD_DOMAIN, _offload_cases, offload_restore_safe, "a positive offload restore"),
    ),
    Theorem(
        "offload-restore-holds-its-state",
        "restore",
        "Bounded, by enumeration: what the native offload connector loads (a positive offload_hit h) is on every "
        "recurrent group's chunk grid and a state the GPU prefix cache offered there, so the recurrent state "
        "it loads is the state after h tokens. Refuted in vLLM 0.33.0 (the real connector agrees): an "
        "annotated EAGLE group whose chunk does not divide the recurrent chunk lowers the hit off the "
        "recurrent grid, and the recurrent group then loads the state stored at the end of the chunk holding it.",
        (),
        enumeration=Enumeration(
            _OFFLOAD_DOMAIN, _offload_cases, offload_restore_holds_its_state, "a positive offload restore"
        ),
    ),
    Theorem(
        "cache-condensed-is-explicit",
        "restore",
        "Bounded, by enumeration: what the prefix cache keeps after a condensed prefill (run_prefill condensing "
        "as soon as it repeats, the cache read off Trace.chunk_positions' ranges by cached_prefix) is what it "
        "keeps after the same prefill run step by step: every bucket's full blocks, keys, stale keys and states "
        "offered to a connector, and what each later request is restored from the GPU and through offload.",
        (),
        enumeration=Enumeration(
            f"generated geometries {_NAMES} at the restore theorems' retention intervals, budgets its own, two "
            "thirds of its recurrent block and 13 then 5, prompts 3 and 5 grid periods long and one token and a "
            "hash block more; the later requests of the restore theorems",
            _condensed_cases,
            cache_condensed_is_explicit,
            "a condensed prefill",
        ),
    ),
    Theorem(
        "cache-hashes-behind-the-chunk",
        "restore",
        "A chunk ending at any position of a request (whatever the split) and the call that hashes the "
        "recurrent groups' blocks after it, a drafter's last pass included (models.prefix_cache.Hashing.horizon, "
        "keyed_block, with the cache layout's hit granularity, EAGLE drop and MTP reprefill): its horizon never "
        "passes the chunk's end, so a block it hashes holds the state its key names. Only a block the next "
        "chunk leaves behind can hold another (cache-keys-hold-their-state).",
        # Without the lemma families: 1,100,000 rlimit where they took 8,800,000 (and 10 s).
        (Obligation("main", HASHED_VARS, hashing_behind_the_chunk, lemmas=False),),
    ),
    Theorem(
        "cache-keys-hold-their-state",
        "restore",
        "For two consecutive steps of a prefill from any state in it (models.prefill.prefill_step, s -> e -> "
        "e', the split the engine's own), the recurrent block holding the state after e (column "
        "cdiv(e, R) - 1) is hashed, by the call after either step, only where the state it then holds is the "
        "state after cdiv(e, R) * R tokens (models.prefix_cache.keyed_block: the hashing horizon of "
        "get_num_cacheable_tokens and the request's block hashes, with a drafter's last pass).",
        (Obligation("step", KEYS_VARS, keys_hold_their_state),),
        trace_search=Obligation("trace", KEYS_TRACE_VARS, keys_hold_their_state_trace),
    ),
)
