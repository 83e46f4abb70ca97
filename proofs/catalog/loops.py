"""Bounded theorems on the engine model's loops: a whole prefill
(`run_prefill`), its condensing of long prefills, the Trace's views,
`grid_period` and `Positions`. No SMT query reads these loops; each theorem
states a property over an explicit finite domain and is decided by running
the engine model on every case of it (proofs/engine/enumerated.py). The restore's
loops (the prefix cache's lookup, the offload connector's) are decided the
same way in proofs/catalog/restore.py.

Each property compares the loop with a reading built from the functions the
Z3 theorems read (`prefill_step`, `prefill_end`, `state_column`, the prefix
cache's keying functions), never a restated formula.
"""

from __future__ import annotations

import json
from functools import cache

from models.geometry import Geometry, builtin_geometry_names, load_geometry, parse_geometry
from models.offload import OffloadNotModelled, offload_groups
from models.plan import Plan, plan
from models.positions import Positions
from models.prefill import BudgetError, grid_period, prefill_step, run_prefill, state_column
from models.prefix_cache import hashed_tokens, keyed_block, layout
from models.scheduler import prefill_end, split
from models.variants import Variant
from proofs.catalog.base import Theorem
from proofs.engine.enumerated import Case, Checks, Enumeration, Verdict


def small_geometry(name: str, page: int, deployment: dict, groups: list[dict]) -> Geometry:
    """A generated geometry of `page`-token blocks, three pages a step, a one-token request."""
    data = {
        "deployment": {"dcp_size": 1, "block_size": page, "max_num_scheduled_tokens": 3 * page, **deployment},
        "groups": groups,
        "request": {"prompt_tokens": 1},
    }
    return parse_geometry(data, name=name)


# Small generated geometries, chosen so that every size the step and the restore read is distinct from the
# others in at least one of them (so a grid or a search that forgets one is seen).
SMALL = {
    "g8": lambda: small_geometry(
        "g8",
        8,
        {"eagle_block_drop": True},
        [
            {"kind": "target-attention", "block_size": 8},
            {"kind": "recurrent", "block_size": 8},
            {"kind": "draft-attention", "block_size": 8, "eagle": True},
        ],
    ),
    "g16-dcp2": lambda: small_geometry(
        "g16-dcp2",
        16,
        {
            "dcp_size": 2,
            "mamba_block_size": 64,
            "eagle_block_drop": True,
            "offload_blocks_per_chunk": 3,
            "prefill_checkpoint_alignment": 40,
        },
        [
            {"kind": "target-attention", "block_size": 16, "dcp_sharded": True},
            {"kind": "recurrent", "block_size": 16},
            {"kind": "draft-attention", "block_size": 24, "eagle": True},
        ],
    ),
    "g4-dcp2": lambda: small_geometry(
        "g4-dcp2",
        4,
        {"dcp_size": 2, "mamba_block_size": 8, "eagle_block_drop": True},
        [
            {"kind": "target-attention", "block_size": 4, "dcp_sharded": True},
            {"kind": "recurrent", "block_size": 4},
            {"kind": "draft-attention", "block_size": 6, "eagle": True},
        ],
    ),
    "g16-lookahead": lambda: small_geometry(
        "g16-lookahead",
        16,
        {
            "mamba_block_size": 48,
            "hash_lookahead_tokens": 1,
            "hash_block_size": 16,
            "prefill_checkpoint_alignment": 8,
            "long_prefill_token_threshold": 20,
            "shared_prefix_checkpoint": True,
            "offload_blocks_per_chunk": 2,
        },
        [
            {"kind": "target-attention", "block_size": 16},
            {"kind": "recurrent", "block_size": 16},
            {"kind": "draft-attention", "block_size": 16},
        ],
    ),
    "g8-offload": lambda: small_geometry(
        "g8-offload",
        8,
        {"mamba_block_size": 96, "eagle_block_drop": True, "offload_blocks_per_chunk": 2},
        [
            {"kind": "target-attention", "block_size": 16},
            {"kind": "target-attention", "block_size": 24},
            {"kind": "recurrent", "block_size": 8},
            {"kind": "draft-attention", "block_size": 40, "eagle": True},
        ],
    ),
}


@cache
def _geometry(name: str) -> Geometry:
    return SMALL[name]() if name in SMALL else load_geometry(name)


def _plan(variant: Variant, case: Case) -> Plan:
    return plan(variant, _geometry(case["geometry"]))


def _budgets(case: Case) -> list[int]:
    return [int(b) for b in str(case["budgets"]).split(",")]


def _tokens(case: Case) -> int:
    return case["prompt"] + case["outputs"]


def _trace(variant: Variant, case: Case, condense_beyond=None):
    return run_prefill(
        _plan(variant, case),
        _budgets(case),
        prompt_tokens=case["prompt"],
        output_tokens=case["outputs"],
        condense_beyond=condense_beyond,
    )


def _builtin_cases() -> list[Case]:
    """Every built-in deployment with its own request and budget."""
    cases = []
    for name in builtin_geometry_names():
        g = _geometry(name)
        cases.append(
            {
                "geometry": name,
                "prompt": g.request.prompt_tokens,
                "outputs": g.request.output_tokens,
                "budgets": str(g.deployment.max_num_scheduled_tokens),
            }
        )
    return cases


# --- the explicit trace is the chain of prefill_step -------------------------

CHAIN_PROMPTS = (*range(1, 13), 24, 48, 49, 64, 65, 96, 97, 129)
CHAIN_BUDGETS = ("29", "70,5,13", "13,5")  # "13,5" stalls on the geometries whose grid exceeds 5
CHAIN_OUTPUTS = (0, 3)


def _chain_cases(_variant: Variant):
    for name in SMALL:
        for prompt in CHAIN_PROMPTS:
            for budgets in CHAIN_BUDGETS:
                for outputs in CHAIN_OUTPUTS:
                    yield {"geometry": name, "prompt": prompt, "outputs": outputs, "budgets": budgets}
    yield from _builtin_cases()


def chain_of_steps(variant: Variant, case: Case) -> Verdict:
    """run_prefill's explicit trace against prefill_step taken from each chunk's start."""
    checks = Checks()
    the_plan = _plan(variant, case)
    budgets, prompt, tokens = _budgets(case), case["prompt"], _tokens(case)
    trace = run_prefill(the_plan, budgets, prompt_tokens=prompt, output_tokens=case["outputs"], condense_beyond=None)
    end = prefill_end(prompt, tokens)
    if checks.fails("explicit", trace.repeat is None and trace.steps == len(trace.chunks)):
        return checks.verdict("the explicit trace is condensed")
    computed = 0
    for i, chunk in enumerate(trace.chunks):
        budget = budgets[min(i, len(budgets) - 1)]
        if checks.differ("step and start", (chunk.step, chunk.start), (i, computed)):
            return checks.verdict(f"chunk {i} is step {chunk.step} from {chunk.start}, not step {i} from {computed}")
        if checks.fails("starts in prefill", computed < end):
            return checks.verdict(f"step {i} starts at {computed}, at or past the prefill's end {end}")
        step = prefill_step(the_plan.variant, the_plan.split, the_plan.cadence, computed, budget, prompt, tokens)
        for name, seen, wanted in (
            ("requested", chunk.requested, step.requested),
            ("end", chunk.end, step.end),
            ("published", chunk.published, step.published),
            ("column", chunk.column, state_column(step.end, the_plan.cadence)),
        ):
            if checks.differ(name, seen, wanted):
                return checks.verdict(f"step {i} from {computed}: {name} {seen}, the step's {wanted}")
        # Once the budget is settled, a step that makes no progress is repeated exactly by every later one.
        stalls = step.end == computed and i >= len(budgets) - 1
        if checks.fails("stalled_at", stalls == (trace.stalled_at == i) and (not stalls or i == len(trace.chunks) - 1)):
            return checks.verdict(
                f"step {i}: stalled_at {trace.stalled_at} of {len(trace.chunks)} chunks, stalls: {stalls}"
            )
        computed = step.end
    if trace.stalled_at is not None:
        checks.note("a run that stalls")
    if checks.fails("stops at the end", trace.stalled_at is not None or end <= computed <= tokens):
        return checks.verdict(
            f"the run stops at {computed}, not between the prefill's end {end} and the tokens {tokens}"
        )
    failure = _views_differ(checks, trace, trace.chunks, "Trace")
    return checks.verdict(failure, exercised=any(c.published for c in trace.chunks))


def _views_of(chunks) -> dict[str, list[int]]:
    """What Trace.chunk_ends, published and private hold, read off the explicit chunks."""
    return {
        "chunk_ends": sorted(c.end for c in chunks if c.end > c.start),
        "published": sorted(c.end for c in chunks if c.published),
        "private": sorted(c.end for c in chunks if c.end > c.start and not c.published),
    }


def _views_differ(checks: Checks, trace, chunks, what: str) -> str | None:
    """Each of the trace's views against the explicit chunks' ends of its kind."""
    for name, wanted in _views_of(chunks).items():
        got = list(getattr(trace, name))
        if checks.differ(f"Trace.{name}", got, wanted):
            return f"the {what}'s Trace.{name} is {got}, the explicit chunks' are {wanted}"
    return None


def run_bounds(variant: Variant, case: Case) -> Verdict:
    """`steps=k` runs exactly the first k steps of the whole run, explicitly even where condensing is asked
    for; so does a run with a split function of its own (condensing reads the model's split only); max_steps
    equal to the run's length is accepted and one below refused, naming the geometry and grid_period;
    a budget below 1 is refused."""
    checks = Checks()
    the_plan = _plan(variant, case)
    budgets, prompt, outputs = _budgets(case), case["prompt"], case["outputs"]
    whole = run_prefill(the_plan, budgets, prompt, outputs, condense_beyond=None).chunks
    lengths = range(len(whole) + 1) if case["every_prefix"] else (len(whole),)
    for k in lengths:
        part = run_prefill(the_plan, budgets, prompt, outputs, steps=k, condense_beyond=CONDENSE_BEYOND)
        if checks.fails("steps=k, the first k chunks", part.chunks == whole[:k] and part.repeat is None):
            return checks.verdict(f"steps={k} gives {len(part.chunks)} chunks, not the whole run's first {k}")

    def models_split(params, call):
        return split(the_plan.variant, params, call)

    own = run_prefill(the_plan, budgets, prompt, outputs, split_function=models_split, condense_beyond=1)
    if checks.fails("a split function of its own, run explicitly", own.chunks == whole and own.repeat is None):
        return checks.verdict("a run with the model's split passed as a split function is not the explicit run")
    run_prefill(the_plan, budgets, prompt, outputs, max_steps=len(whole), condense_beyond=None)
    shorter = len(whole) - 1
    error = _refusal(the_plan, budgets, prompt, outputs, max_steps=shorter, condense_beyond=None)
    if checks.fails("max_steps below the run's length refused", error is not None):
        return checks.verdict(f"max_steps={shorter} accepted a run of {len(whole)} steps")
    named = str(error).startswith(f"{the_plan.geometry.name}: ") and f"(grid {grid_period(the_plan):,})" in str(error)
    if checks.fails("the refusal names the geometry and its grid", named):
        return checks.verdict(f"the refusal does not name the geometry and its grid: {error}")
    for bad in ([0], [budgets[0], -1], []):
        if checks.fails("a budget below 1, or none, refused", _refusal(the_plan, bad, prompt, outputs) is not None):
            return checks.verdict(f"budgets {bad} accepted")
    run_prefill(the_plan, [1], prompt, outputs)
    return checks.verdict(exercised=len(whole) > 1)


def _refusal(*run, **options) -> BudgetError | None:
    """The BudgetError run_prefill(*run, **options) raises, None when it runs."""
    try:
        run_prefill(*run, **options)
    except BudgetError as error:
        return error
    return None


BOUNDS_PROMPTS = range(1, 31, 4)
BOUNDS_LONG_PROMPTS = (160, 200)


def _bounds_cases(_variant: Variant):
    for name in ("g8", "g16-dcp2"):
        for prompt in BOUNDS_PROMPTS:
            yield {"geometry": name, "prompt": prompt, "outputs": 0, "budgets": "70,29", "every_prefix": True}
    for prompt in BOUNDS_LONG_PROMPTS:
        yield {"geometry": "g8", "prompt": prompt, "outputs": 0, "budgets": "13", "every_prefix": False}


# --- the condensed trace spells out the explicit one ---------------------------

CONDENSE_BEYOND = 1  # condensing on as soon as a repeat is found
LATE_CONDENSING = 20  # and, for a second run, only beyond this many steps
CONDENSED_PROMPTS = range(100, 241, 10)
# budgets, output tokens; "13,5" stalls at its second step (5 tokens below the 8-token grid of g8)
CONDENSED_RUNS = (("13", 0), ("37,29", 61), ("13,5", 0))


def _condensed_cases(_variant: Variant):
    for name in ("g8", "g4-dcp2"):
        for prompt in CONDENSED_PROMPTS:
            for budgets, outputs in CONDENSED_RUNS:
                yield {"geometry": name, "prompt": prompt, "outputs": outputs, "budgets": budgets}
    yield from _builtin_cases()


def condensed_spells_explicit(variant: Variant, case: Case) -> Verdict:
    """The prefill condensed as soon as it repeats spells out the explicit trace (chunks, steps, stall and
    views), is condensed exactly when the explicit run repeats within the prompt, with as many repetitions as
    fit, and keeps its condense_beyond threshold; condensed beyond LATE_CONDENSING steps it spells out the
    explicit trace too."""
    checks = Checks()
    slow = _trace(variant, case)
    late = _trace(variant, case, condense_beyond=LATE_CONDENSING)
    if checks.fails(
        f"a run of at most {LATE_CONDENSING} steps not condensed", late.repeat is None or late.steps > LATE_CONDENSING
    ):
        return checks.verdict(f"a run of {late.steps} steps is condensed, beyond {LATE_CONDENSING} asked")
    if checks.differ(f"condensed beyond {LATE_CONDENSING}, the chunks", list(late.every_chunk()), slow.chunks):
        return checks.verdict(f"condensed beyond {LATE_CONDENSING} steps, the trace spells out other chunks")
    fast = _trace(variant, case, condense_beyond=CONDENSE_BEYOND)
    r = fast.repeat
    if checks.fails("a repeat condenses something", r is None or min(r.times, r.length, r.tokens) >= 1):
        return checks.verdict(f"a repeat that condenses nothing: {r}")
    spelled = list(fast.every_chunk())
    if checks.differ("the chunks", spelled, slow.chunks):
        where = next((i for i, (a, b) in enumerate(zip(spelled, slow.chunks, strict=False)) if a != b), None)
        where = min(len(spelled), len(slow.chunks)) if where is None else where
        return checks.verdict(f"the condensed trace spells out {len(spelled)} chunks, differing from step {where}")
    if slow.stalled_at is not None:
        checks.note("a run that stalls")
    if checks.differ("steps", fast.steps, len(slow.chunks)) or checks.differ(
        "stalled_at", fast.stalled_at, slow.stalled_at
    ):
        return checks.verdict(
            f"condensed steps {fast.steps}, stalled at {fast.stalled_at}; "
            f"explicit {len(slow.chunks)}, {slow.stalled_at}"
        )
    failure = _views_differ(checks, fast, slow.chunks, "condensed trace")
    if failure:
        return checks.verdict(failure)
    within = min(case["prompt"], _tokens(case))
    repeats = _repeats_once(slow.chunks, len(_budgets(case)) - 1, grid_period(slow.plan), within)
    if checks.differ("condensed exactly when it repeats", r is not None, repeats):
        return checks.verdict(
            f"a run of {len(slow.chunks)} steps that {'repeats' if repeats else 'does not repeat'} "
            f"within its prompt is {'not ' if r is None else ''}condensed"
        )
    if r is None:
        return checks.verdict(exercised=False)
    problem = _not_the_longest(checks, r, slow.chunks, within) or _threshold_kept(checks, variant, case, fast)
    return checks.verdict(problem)


def _repeats_once(chunks, settled: int, grid: int, within: int) -> bool:
    """Whether the explicit run, once its budget is settled, has a stretch of whole grid periods that the next
    chunks repeat once, shifted by it, within the prompt."""
    for j in range(settled + 1, len(chunks)):
        for i in range(settled, j):
            advance = chunks[j].start - chunks[i].start
            again = chunks[j : 2 * j - i]
            if advance % grid or len(again) < j - i or again[-1].end > within:
                continue
            if all(_same_shifted(a, b, advance) for a, b in zip(chunks[i:j], again, strict=True)):
                return True
    return False


def _same_shifted(chunk, later, advance: int) -> bool:
    """`later` is `chunk` moved `advance` tokens on: the same request and publication, the end that far."""
    return (later.start, later.end, later.requested, later.published) == (
        chunk.start + advance,
        chunk.end + advance,
        chunk.requested,
        chunk.published,
    )


def _not_the_longest(checks: Checks, r, chunks, within: int) -> str | None:
    """The repeat's repetitions end within the prompt, and one more would not: it ends beyond the prompt or
    the explicit run does not repeat the stretch once more there."""
    stretch = chunks[r.first : r.first + r.length]
    advance = stretch[-1].end - stretch[0].start
    if checks.fails("the repetitions end within the prompt", stretch[-1].end + r.times * advance <= within):
        return f"the repeat's {r.times} repetitions end beyond the prompt's {within} tokens"
    more = r.times + 1
    following = chunks[r.first + more * r.length : r.first + (more + 1) * r.length]
    fits = stretch[-1].end + more * advance <= within and len(following) == len(stretch)
    repeated = fits and all(_same_shifted(a, b, more * advance) for a, b in zip(stretch, following, strict=True))
    if checks.fails("no repetition more within the prompt", not repeated):
        return f"the explicit run repeats the stretch {more} times within the prompt, the repeat stands for {r.times}"
    return None


def _threshold_kept(checks: Checks, variant: Variant, case: Case, fast) -> str | None:
    """condense_beyond B: a run that would resume stepping beyond step B is condensed (the same repeat), and a
    condensed run resumes stepping beyond B, never at it."""
    r = fast.repeat
    resumes = _resumes_at(r)
    just_below = _trace(variant, case, condense_beyond=resumes - 1)
    if checks.differ("condensed beyond the step before it resumes, the same repeat", just_below.repeat, r):
        return f"condensing beyond step {resumes - 1}: repeat {just_below.repeat}, not {r}"
    at = _trace(variant, case, condense_beyond=resumes).repeat
    if checks.fails(
        "condensed beyond the step it resumes at, it resumes later", at is None or _resumes_at(at) > resumes
    ):
        return f"condensing beyond step {resumes}, the run resumes stepping at step {_resumes_at(at)}"
    return None


def _resumes_at(r) -> int:
    """The step explicit stepping resumes at after the repeat `r`."""
    return r.first + (r.times + 1) * r.length


# --- grid_period: a shift by it changes no step and no keying of the prefix cache ---

SHIFT_BUDGETS = (5,)
SHIFT_STRIDE = 3


def _shift_cases(_variant: Variant):
    for name in SMALL:
        yield {"geometry": name}


def shift_by_grid_period(variant: Variant, case: Case) -> Verdict:
    """Far from the request's end, every position of one period: the step from c and from c + G (prompt and
    tokens G further too), and the prefix cache's keying of c and of c + G (the request's hashes, each
    bucket's hashing horizon, the recurrent block a chunk ending at c leaves and how the calls after it and
    after a next chunk hash it, every offload chunk grid's residue) agree, shifted."""
    checks = Checks()
    the_plan = _plan(variant, case)
    period = grid_period(the_plan)
    if checks.fails("grid_period positive", period > 0):
        return checks.verdict(f"grid_period is {period}")
    base = 8 * period
    prompt = base + 6 * period
    p = the_plan.split
    cache = layout(the_plan)
    try:
        chunks = sorted({g.chunk for g in offload_groups(the_plan)})
    except OffloadNotModelled:
        chunks = []
        checks.note("a connector setting the model does not cover")
    for c in range(base, base + period, SHIFT_STRIDE):
        for budget in SHIFT_BUDGETS:
            here = prefill_step(the_plan.variant, p, the_plan.cadence, c, budget, prompt, prompt)
            there = prefill_step(
                the_plan.variant, p, the_plan.cadence, c + period, budget, prompt + period, prompt + period
            )
            for name, shifted, unshifted in (
                ("the step's end", there.end - period, here.end),
                ("the step's request", there.requested, here.requested),
                ("the step's publication", there.published, here.published),
            ):
                if checks.differ(name, shifted, unshifted):
                    return checks.verdict(f"{name} from {c} and from {c} + {period} differ (budget {budget})")
        failure = _keying_differs(checks, cache, c, prompt, period) or _chunk_residues_differ(checks, chunks, c, period)
        if failure:
            return checks.verdict(failure)
    return checks.verdict()


def _keying_differs(checks: Checks, cache, c: int, tokens: int, period: int) -> str | None:
    """The prefix cache's keying of c and of c + G, the request's tokens G further."""
    hashes = hashed_tokens(tokens, cache.lookahead, cache.hash_block)
    further = hashed_tokens(tokens + period, cache.lookahead, cache.hash_block)
    if checks.differ("the request's hashes", further - period, hashes):
        return f"the hashes of {tokens} and of {tokens} + {period} tokens differ by another amount"
    for bucket in cache.buckets:
        hashing = cache.hashing(bucket)
        if checks.differ("a bucket's hashing horizon", hashing.cacheable(c + period) - period, hashing.cacheable(c)):
            return f"the hashing horizon of a {bucket.span}-token bucket at {c} and at {c} + {period} differ"
        if not bucket.recurrent:
            continue
        for following in (c, c + 1, c + bucket.span, c + 2 * bucket.span):
            here = keyed_block(hashing, c, following, tokens, hashes, hashes)
            there = keyed_block(hashing, c + period, following + period, tokens + period, further, further)
            for name, shifted, unshifted in (
                ("the recurrent block's key", there.key - period, here.key),
                ("the recurrent block's state", there.held - period, here.held),
                ("the recurrent block hashed after its chunk", there.in_own_call, here.in_own_call),
                ("the recurrent block hashed after the next chunk", there.in_next_call, here.in_next_call),
            ):
                if checks.differ(name, shifted, unshifted):
                    return f"{name}: a chunk ending at {c} and at {c} + {period} (the next at {following}) differ"
    return None


def _chunk_residues_differ(checks: Checks, chunks: list[int], c: int, period: int) -> str | None:
    """Every offload group's chunk grid: c and c + G lie at the same place in their chunks."""
    for chunk in chunks:
        if checks.differ("an offload chunk grid's residue", (c + period) % chunk, c % chunk):
            return f"{c} and {c} + {period} lie at other places of the {chunk}-token offload chunks"
    return None


# --- Positions answers as the explicit set of its positions --------------------------

# Progressions (first, step, count): every first and step up to these, counts 0..3; and the pairs of a few.
PROGRESSION_FIRSTS = range(0, 7)
PROGRESSION_STEPS = range(1, 7)
PROGRESSION_COUNTS = range(0, 4)
POSITION_SIZES = range(1, 9)


def _progression(first: int, step: int, count: int) -> range:
    return range(first, first + step * count, step)


def _progression_cases(_variant: Variant):
    progressions = [
        (first, step, count)
        for first in PROGRESSION_FIRSTS
        for step in PROGRESSION_STEPS
        for count in PROGRESSION_COUNTS
    ]
    for progression in progressions:
        yield {"progressions": json.dumps([progression])}
    few = [p for p in progressions if p[2] == 3 and p[0] in (0, 1, 5) and p[1] in (2, 3, 4)]
    for i, a in enumerate(few):
        for b in few[i + 1 :]:
            if not set(_progression(*a)) & set(_progression(*b)):
                yield {"progressions": json.dumps([a, b])}


def positions_are_their_set(_variant: Variant, case: Case) -> Verdict:
    """Positions of the case's progressions against the sorted set of their positions, written out."""
    checks = Checks()
    progressions = json.loads(case["progressions"])
    positions = Positions(_progression(*p) for p in progressions)
    every = sorted({q for p in progressions for q in _progression(*p)})
    for name, got, wanted in (
        ("the positions", list(positions), every),
        ("count", positions.count, len(every)),
        ("empty", bool(positions), bool(every)),
        ("first 2", positions.first(2), every[:2]),
        ("last 2", positions.last(2), every[-2:]),
        ("held one by one", positions.is_explicit, all(count <= 1 for _, _, count in progressions)),
        ("Positions.of the set", list(Positions.of(every)), every),
    ):
        if checks.differ(name, got, wanted):
            return checks.verdict(f"{name}: {got}, the set's {wanted}")
    top = max(every, default=0) + 2
    for bound in range(-1, top + 1):
        largest = max((q for q in every if q <= bound), default=None)
        if checks.differ("at_most", positions.at_most(bound), largest):
            return checks.verdict(f"at_most({bound}): {positions.at_most(bound)}, the set's {largest}")
    for size in POSITION_SIZES:
        multiples = [q for q in every if q % size == 0]
        if checks.differ("multiples_of", list(positions.multiples_of(size)), multiples):
            return checks.verdict(f"multiples_of({size}): {list(positions.multiples_of(size))}, the set's {multiples}")
    return checks.verdict(exercised=len(progressions) > 1 and len(every) > 0)


SMALL_NAMES = ", ".join(SMALL)
BUILTINS = "every built-in deployment with its own request and budget"

THEOREMS = (
    Theorem(
        "prefill-run-is-step-chain",
        "loops",
        "Bounded, by enumeration: run_prefill's explicit trace is the chain of models.prefill.prefill_step from 0: "
        "each chunk starts where the previous one ended, is the step from there under its budget (requested, end, "
        "published, state column state_column(end)), starts below prefill_end, and the run ends between "
        "prefill_end and the request's tokens, or stops at a step that makes no progress once the budget is "
        "settled (stalled_at); Trace.chunk_ends, published and private are exactly the chunks' ends of each kind.",
        (),
        enumeration=Enumeration(
            f"geometries {SMALL_NAMES} (proofs/catalog/loops.py) x prompts 1..12, "
            f"{', '.join(map(str, CHAIN_PROMPTS[12:]))} x output tokens {CHAIN_OUTPUTS} x budgets "
            f"{' | '.join(CHAIN_BUDGETS)} "
            f"(a list: one per step, the last repeating); and {BUILTINS}",
            _chain_cases,
            chain_of_steps,
            "a published checkpoint",
        ),
    ),
    Theorem(
        "prefill-run-bounds",
        "loops",
        "Bounded, by enumeration: run_prefill with steps=k gives exactly the first k chunks of the whole run, "
        "explicitly even when condensing is asked for, and so does a run given a split function (the model's "
        "own); max_steps equal to the run's length is accepted and one below it refused (BudgetError naming "
        "the geometry and its grid_period); budgets 0, -1 or none are refused and 1 accepted.",
        (),
        enumeration=Enumeration(
            f"geometries g8, g16-dcp2 x prompts {BOUNDS_PROMPTS.start}..{BOUNDS_PROMPTS.stop - 1} in steps of "
            f"{BOUNDS_PROMPTS.step} x budgets 70,29, every k up to the run's length; and geometry g8 x prompts "
            f"{', '.join(map(str, BOUNDS_LONG_PROMPTS))} x budget 13, k the run's length",
            _bounds_cases,
            run_bounds,
            "a run of more than one step",
        ),
    ),
    Theorem(
        "prefill-condensed-is-explicit",
        "loops",
        "Bounded, by enumeration: asked to condense as soon as it repeats (condense_beyond "
        f"{CONDENSE_BEYOND}), a run is condensed exactly when its explicit trace, once the budget is settled, has "
        "a stretch of whole grid_periods that the next chunks repeat once, shifted, within the prompt; it spells "
        "out (Trace.every_chunk) "
        "exactly the explicit trace, with the same steps and stall, its repeat stands for at least one repetition, "
        "its repetitions end within the prompt and are as many as can be (the explicit run does not repeat the "
        "stretch once more within the prompt), and its Trace.chunk_ends, published and private are exactly the "
        "explicit chunks' ends of each kind. Asked to condense beyond the step before the one the run resumes "
        "stepping at, it condenses the same; beyond that step, it does not resume there or before. Condensed "
        f"beyond {LATE_CONDENSING} steps, it spells out the explicit trace too, and a run of at most "
        f"{LATE_CONDENSING} steps is not condensed.",
        (),
        enumeration=Enumeration(
            f"geometries g8, g4-dcp2 x prompts {CONDENSED_PROMPTS.start}..{CONDENSED_PROMPTS.stop - 1} in steps of "
            f"{CONDENSED_PROMPTS.step} x (budgets, output tokens) {' | '.join(map(str, CONDENSED_RUNS))}; and "
            f"{BUILTINS}",
            _condensed_cases,
            condensed_spells_explicit,
            "a condensed trace",
        ),
    ),
    Theorem(
        "grid-period-shift",
        "loops",
        "Bounded, by enumeration: grid_period G is positive, and far from the request's end a shift by G changes "
        "neither the step (models.prefill.prefill_step from c and from c + G, prompt and tokens G further: the "
        "end G further, the same request and publication) nor the prefix cache's keying (models.prefix_cache: "
        "the request's hashes, each bucket's hashing horizon, the key, state and hashing calls of the recurrent "
        "block a chunk ending at c leaves, the next chunk ending at c, c + 1, c + R and c + 2R, all G further) "
        "nor where c lies in every offload group's chunk (models.offload.offload_groups).",
        (),
        enumeration=Enumeration(
            f"geometries {SMALL_NAMES}; every position c = 8G + {SHIFT_STRIDE}k below 9G, with prompt = tokens "
            "= 14G; budgets "
            f"{' | '.join(map(str, SHIFT_BUDGETS))}",
            _shift_cases,
            shift_by_grid_period,
        ),
    ),
    Theorem(
        "positions-are-their-set",
        "loops",
        "Bounded, by enumeration: models.positions.Positions of any disjoint progressions (not only those a "
        "trace builds) holds exactly the set of their positions: iterated in order, its count, emptiness, first "
        "and last two, whether it holds them one by one, the same set given one by one (Positions.of), the "
        "largest position at or below every bound (at_most) and the multiples of every size (multiples_of) are "
        "the explicit set's.",
        (),
        enumeration=Enumeration(
            f"one progression (first, step, count) for every first {PROGRESSION_FIRSTS.start}.."
            f"{PROGRESSION_FIRSTS.stop - 1}, step {PROGRESSION_STEPS.start}..{PROGRESSION_STEPS.stop - 1} and count "
            f"{PROGRESSION_COUNTS.start}..{PROGRESSION_COUNTS.stop - 1}, and every pair of disjoint progressions of "
            "three positions with first 0, 1 or 5 and step 2, 3 or 4 (Positions holds disjoint ones, as a trace's "
            "distinct chunk ends are); every bound from -1 to two past the largest "
            f"position, every size {POSITION_SIZES.start}..{POSITION_SIZES.stop - 1}",
            _progression_cases,
            positions_are_their_set,
            "two progressions with a position",
        ),
    ),
)
