"""Properties of a whole prefill, by induction over steps: a step lemma and
an invariant checked by Z3, and a bounded unrolling from a fresh request that
produces real counterexample traces."""

from __future__ import annotations

from dataclasses import replace

from models import arith
from models.config import guard_accepts
from models.prefill import initial_state_column, prefill_step, publishes, state_column
from models.reuse import gpu_restorable, offload_restorable, published_gpu_restorable
from models.scheduler import SplitCall, last_cacheable_position, max_prefill_tokens, prefill_end, split
from proofs.catalog.base import (
    ANY_SHAPES,
    GEOMETRY_VARS,
    SPLIT_CALL_VARS,
    SPLIT_PARAM_VARS,
    AnyShape,
    Obligation,
    Theorem,
    bools,
    call_domain,
    deployment,
    deployment_domain,
    ints,
    params_domain,
    shaped,
    split_params,
)
from proofs.claims import Applies, at_least, at_most, below
from proofs.solver import Claim

# The split block comes from the deployment; the other scheduler inputs stay free.
STEP_VARS = tuple(v for v in SPLIT_PARAM_VARS if v.name != "block") + SPLIT_CALL_VARS + GEOMETRY_VARS
PUBLISH_VARS = GEOMETRY_VARS + ints("end", "tokens")
RESTORE_VARS = (
    tuple(v for v in SPLIT_PARAM_VARS if v.name != "block")
    + GEOMETRY_VARS
    + ints("prompt", "tokens", "new_tokens", "position")
)
# One step of run_prefill from an arbitrary state of a request's prefill.
ENGINE_STEP_VARS = (
    tuple(v for v in SPLIT_PARAM_VARS if v.name != "block")
    + GEOMETRY_VARS
    + ints("computed", "budget", "prompt", "tokens", "scheduled")
)
SAFE_RESTORE_VARS = (
    tuple(v for v in SPLIT_PARAM_VARS if v.name != "block")
    + GEOMETRY_VARS
    + ints("tokens", "new_tokens", "position")
    + bools("published")
)
# One arbitrary target span and one EAGLE span, each standing for all of its kind.
OFFLOAD_VARS = ints("cadence", "every_span", "every_eagle_span", size=True) + ints(
    "position", "tokens", "new_tokens", "q_cadence", "q_span", "q_eagle"
)
UNROLL_STEPS = 2
GEOMETRY_FLAGS = ("explicit", "sharded", "sharded2")
TRACE_VARS = (
    tuple(v for v in SPLIT_PARAM_VARS if v.name != "block")
    + ints("prompt", "tokens")
    + GEOMETRY_VARS
    + ints(*(f"budget{i}" for i in range(UNROLL_STEPS)))
)


def _setting(variant, x, guarded=True):
    """The deployment, the split's parameters and their hypotheses; with
    `guarded`, that the variant's configuration check accepts them."""
    d = deployment(variant, x)
    p = split_params(x, block=d.split_block, eagle_spans=d.draft_spans, annotated=x["annotated"])
    hypotheses = {**params_domain({**x, "block": d.split_block}), **deployment_domain(x)}
    if guarded:
        hypotheses["configuration accepted"] = guard_accepts(variant, d.cadence, d.target_spans)
    return d, p, hypotheses


def _on_targets(position, spans):
    return arith.all_in(arith.divides(span, position) for span in spans)


def _aligned_if_published(position, d, tokens):
    return arith.implies(publishes(position, d.cadence, tokens), _on_targets(position, d.target_spans))


def _target_covers(x, d, published, what="the step publishes"):
    """Cover goals: a publication with the first target group sharded over
    DCP > 1, and, with several target groups, two different spans."""
    first_sharded = x["sharded"] if "sharded" in x else x["every_sharded"]
    covers = {f"{what} with DCP > 1": arith.all_of(x["dcp"] >= 2, first_sharded, published)}
    if not isinstance(d.target_spans, arith.Family) and len(d.target_spans) > 1:
        covers["two different target spans"] = d.target_spans[0] != d.target_spans[-1]
    return covers


def _smallest_request(x):
    """Cover goal at the edge of engine_step's hypotheses (prompt, budget and
    scheduler budget of at least one token, no more prompt than tokens, none
    computed yet, no long-prefill threshold): a narrowed hypothesis leaves it
    unreachable."""
    edge = arith.all_of(
        x["computed"] == 0,
        x["prompt"] == 1,
        x["tokens"] == 1,
        x["budget"] == 1,
        x["max_scheduled"] == 1,
        x["threshold"] == 0,
    )
    return {"a fresh request of one token under a budget of one token": edge}


def _publication(variant, x):
    """A chunk end at any position up to the request's tokens, in a symbolic
    deployment: the split is not read, so what is proved holds for every
    chunk end the split can produce, whatever the budgets, hits and flags."""
    d = deployment(variant, x)
    end, tokens = x["end"], x["tokens"]
    hypotheses = {
        **deployment_domain(x),
        "a chunk end of the prefill": arith.all_of(0 <= end, end <= tokens),
    }
    return d, end, tokens, hypotheses


def engine_step(variant, x, guarded=True, in_prefill=True):
    """One step of models.prefill.prefill_step, the step run_prefill takes,
    from an arbitrary state of a request: `computed` tokens done (with
    `in_prefill`, fewer than the prefill's end; else any short of the
    request's tokens), any positive budget, the deployment's cadence and
    split grid as models.plan resolves them. The split enters through its
    contract, proved for every variant by split-bounds (in prefill, 0 <=
    scheduled <= requested): what a step publishes and where it writes does
    not depend on where inside that range the split ends, and the solver is
    spared the split's every stop. A step refuted this way is searched again
    as a fresh request's trace through the real split (trace_search)."""
    d, p, hypotheses = _setting(variant, x, guarded)
    computed, prompt, tokens, scheduled = x["computed"], x["prompt"], x["tokens"], x["scheduled"]
    hypotheses["prompt within request"] = arith.all_of(prompt >= 1, tokens >= prompt)
    if in_prefill:
        hypotheses["a state in prefill"] = arith.all_of(computed >= 0, computed < prefill_end(prompt, tokens))
    else:
        hypotheses["a token left to compute"] = arith.all_of(computed >= 0, computed <= tokens - 1)
    hypotheses["budget positive"] = x["budget"] >= 1
    step = prefill_step(
        variant, p, d.cadence, computed, x["budget"], prompt, tokens, split_function=lambda _p, _call: scheduled
    )
    hypotheses["the split's contract (split-bounds)"] = arith.all_of(0 <= scheduled, scheduled <= step.requested)
    return d, p, step, hypotheses


def published_on_targets_step(variant, x):
    """Inductive step. Invariant after c tokens: every checkpoint published
    so far lies on every target boundary. The checkpoints after the step are
    those before it (the invariant's) and the step's own end when it
    publishes, which is the goal."""
    d, _, step, hypotheses = engine_step(variant, x)
    return Claim(
        hypotheses=hypotheses,
        goal=arith.implies(step.published, _on_targets(step.end, d.target_spans)),
        covers={
            **_target_covers(x, d, step.published),
            **_smallest_request(x),
            # The edge of "a state in prefill": past the prompt, replaying a resumed request's outputs.
            "a resumed request replaying its outputs": x["computed"] >= x["prompt"],
        },
    )


def guard_sufficient(variant, x):
    """Every position where a chunk end publishes, whatever the step, lies on
    every target boundary once the guard accepts: a superset of what the
    engine's steps publish (prefill-published-on-target-boundaries)."""
    d, end, tokens, hypotheses = _publication(variant, x)
    hypotheses["configuration accepted"] = guard_accepts(variant, d.cadence, d.target_spans)
    return Claim(
        hypotheses=hypotheses,
        goal=_aligned_if_published(end, d, tokens),
        covers=_target_covers(x, d, publishes(end, d.cadence, tokens), what="a published checkpoint"),
    )


# The scheduler's inputs of the step that shows a rejected configuration
# publishing off a target boundary: no EAGLE drop, no partial hits, no
# internal checkpoints, no junction; the budget is the cadence.
_PLAIN_SCHEDULER = {
    "sched_block": 1,
    "hash_block": 1,
    "align": 1,
    "lookahead": 0,
    "threshold": 0,
    "eagle_drop": False,
    "partial": False,
    "ckpt_blocks": False,
    "shared": False,
}


def guard_rejects_only_failures(variant, x):
    """The guard is no stronger than the headline: whenever it rejects a
    configuration, the engine's own first step of a fresh request of R
    tokens under a budget of R (the real split, not its contract) publishes
    the state at R, off some target boundary."""
    r = deployment(variant, x).cadence
    d, p, hypotheses = _setting(variant, {**x, **_PLAIN_SCHEDULER, "max_scheduled": r}, guarded=False)
    hypotheses["configuration rejected"] = arith.negate(guard_accepts(variant, r, d.target_spans))
    step = prefill_step(variant, p, r, 0, r, r, r)
    return Claim(
        hypotheses=hypotheses,
        goal={
            "the first step publishes": step.published,
            "off some target boundary": arith.negate(_on_targets(step.end, d.target_spans)),
        },
    )


def published_on_targets_trace(variant, x):
    """Fresh request, UNROLL_STEPS steps of the given budgets; a step past
    the prefill's end does nothing (models.prefill.prefill_step)."""
    d, p, hypotheses = _setting(variant, x)
    hypotheses["prompt within request"] = arith.all_of(x["prompt"] >= 1, x["tokens"] >= x["prompt"])
    hypotheses["budgets positive"] = arith.all_in(x[f"budget{i}"] >= 1 for i in range(UNROLL_STEPS))
    computed, holds = 0, True
    for i in range(UNROLL_STEPS):
        step = prefill_step(variant, p, d.cadence, computed, x[f"budget{i}"], x["prompt"], x["tokens"])
        holds = arith.all_of(holds, arith.implies(step.published, _on_targets(step.end, d.target_spans)))
        computed = step.end
    return Claim(hypotheses=hypotheses, goal=holds)


def same_checkpoints_step(variant, x):
    """Invariant: the checkpoints published so far are all multiples of R up
    to the computed tokens (their count is c // R). Step: it still holds, and
    the step advances without passing the prompt."""
    # The property holds whether or not the guard accepts the configuration:
    # proving it without that hypothesis proves more, and spares the solver
    # it (and its witnesses: pr457-guarded then poses pr457's very queries).
    d, p, hypotheses = _setting(variant, x, guarded=False)
    call = SplitCall(computed=x["computed"], requested=x["requested"], prompt=x["prompt"], tokens=x["prompt"])
    end = call.start + split(variant, p, call)
    count = x["published_count"]
    hypotheses.update(
        {
            "fresh request without outputs or hits": arith.all_of(x["computed"] >= 0, x["prompt"] >= 1),
            "in prefill": call.computed < call.prompt,
            "cadence exceeds budget": d.cadence > max_prefill_tokens(p),
            "request within budget and prompt": arith.all_of(
                call.requested >= 1,
                call.requested <= max_prefill_tokens(p),
                call.requested <= call.prompt - call.computed,
            ),
            "invariant before the step": count == arith.floordiv(call.computed, d.cadence),
        }
    )
    published = arith.ite(publishes(end, d.cadence, call.tokens), 1, 0)
    return Claim(
        hypotheses={**hypotheses, **call_domain({**x, "local_hit": 0, "external_hit": 0, "junction": 0})},
        goal={
            "the step advances": end > call.computed,
            "it stays within the prompt": at_most(end, call.prompt),
            "the checkpoints published are the multiples of R computed": count + published
            == arith.floordiv(end, d.cadence),
        },
        covers={
            "one token requested of a one-token prompt": arith.all_of(
                call.computed == 0, call.prompt == 1, call.requested == 1
            )
        },
    )


def restorable_below_lcp(variant, x):
    """Every checkpoint published at or below the last cacheable position is
    restored by a later request with the same tokens or extending them."""
    d, p, hypotheses = _setting(variant, x)
    hypotheses.update(_none_annotated_without_drafts(d, x))
    tokens, new_tokens, position = x["tokens"], x["new_tokens"], x["position"]
    lcp = last_cacheable_position(variant, p, tokens)
    hypotheses.update(
        {
            "prompt within request": arith.all_of(x["prompt"] >= 1, tokens >= x["prompt"]),
            "a later request with the same tokens or extending them": new_tokens >= tokens,
            "a published checkpoint": publishes(position, d.cadence, tokens),
            "at or below the last cacheable position": position <= lcp,
            # Only where the restore checks the EAGLE groups' block beyond:
            # elsewhere the draft spans are left free, so a restore that
            # checks them there too is refuted.
            "draft spans divide the cadence under annotated EAGLE drop": arith.implies(
                arith.all_of(p.eagle_drop, x["annotated"]),
                arith.all_in(arith.each(d.draft_spans, lambda span: arith.divides(span, d.cadence))),
            ),
        }
    )
    goal = gpu_restorable(
        position, True, d.target_spans, d.draft_spans, p.eagle_drop, p.lookahead, tokens, new_tokens, x["annotated"]
    )
    return Claim(
        hypotheses=hypotheses,
        goal=goal,
        covers={
            # Without draft groups none is annotated (a hypothesis above).
            **({"EAGLE annotated": arith.all_of(p.eagle_drop, x["annotated"])} if d.draft_spans else {}),
            "a checkpoint at the last cacheable position": position == lcp,
        },
    )


def _none_annotated_without_drafts(d, x) -> dict:
    """A shape without draft groups has no annotated EAGLE group."""
    return {} if d.draft_spans else {"no draft group, so none annotated": arith.negate(x["annotated"])}


def _restore_setting(variant, x):
    """A cached request of `tokens` tokens and a later one of `new_tokens`
    that extends it; `published`: the cached prefill published a checkpoint
    at `position`, which then satisfies the step's publication rule. No
    guard: the restore checks the target boundaries itself, so safety holds
    for every variant, and pr457-guarded poses pr457's very queries."""
    d, p, hypotheses = _setting(variant, x, guarded=False)
    if isinstance(d.draft_spans, arith.Family):
        # The one minimum over the draft groups (the EAGLE reuse bound of the last
        # cacheable position) is attained at a member: the shape's least_draft_block.
        d = replace(d, draft_spans=d.draft_spans.attaining())
        p = replace(p, eagle_spans=d.draft_spans)
    hypotheses.update(_none_annotated_without_drafts(d, x))
    tokens, new_tokens, position = x["tokens"], x["new_tokens"], x["position"]
    hypotheses["a later request extending the cached one"] = arith.all_of(tokens >= 1, new_tokens >= tokens)
    hypotheses["what the cached prefill publishes"] = arith.implies(
        x["published"], publishes(position, d.cadence, tokens)
    )
    return d, p, hypotheses


def _within_tokens(position, tokens, accepted, eagle_beyond):
    """`position <= tokens` where `accepted`: attained, except where an EAGLE
    group must hold the chunk beyond the position (the offload connector's),
    which keeps every restore a chunk short of the tokens."""
    if eagle_beyond:
        return arith.implies(accepted, position <= tokens)
    return at_most(position, tokens, when=accepted)


def _restored_safely(variant, x, d, p, restorable, eagle_beyond=False):
    """A restored position is a published checkpoint, within the cached
    request's tokens, on every target boundary, strictly below the later
    request's tokens and, except under
    EAGLE drop with no annotated group (whose one-recurrent-block backoff is
    stricter than the restore itself, docs/engine-theorems.md), at or below
    its last cacheable position."""
    position, new_tokens = x["position"], x["new_tokens"]
    lcp = last_cacheable_position(variant, p, new_tokens)
    backoff_only = arith.all_of(p.eagle_drop, arith.negate(p.eagle_annotated))
    return {
        "a published checkpoint": arith.implies(restorable, x["published"]),
        "within the cached request's tokens": _within_tokens(position, x["tokens"], restorable, eagle_beyond),
        "on every target boundary": arith.implies(restorable, _on_targets(position, d.target_spans)),
        "a token left to compute": below(position, new_tokens, when=restorable),
        "at or below the last cacheable position": at_most(
            position, lcp, when=arith.all_of(restorable, arith.negate(backoff_only))
        ),
    }


def gpu_restore_safe(variant, x):
    d, p, hypotheses = _restore_setting(variant, x)
    restorable = gpu_restorable(
        x["position"],
        x["published"],
        d.target_spans,
        d.draft_spans,
        p.eagle_drop,
        p.lookahead,
        x["tokens"],
        x["new_tokens"],
        x["annotated"],
    )
    return Claim(hypotheses=hypotheses, goal=_restored_safely(variant, x, d, p, restorable))


def _offload_restore_safe(variant, x, annotated):
    """The offload connector: a KV connector, so no hash lookahead (vLLM 0.33.0
    v1/core/sched/scheduler.py:546-662); its EAGLE groups are the annotated ones. Chunks of one block,
    as every built-in deployment runs: with blocks per chunk symbolic too, the
    span products left both offload obligations UNKNOWN within 20,000,000."""
    x = {**x, "annotated": annotated}
    d, p, hypotheses = _restore_setting(variant, x)
    hypotheses["a KV connector: no hash lookahead"] = x["lookahead"] == 0
    restorable = offload_restorable(
        x["position"],
        x["published"],
        d.cadence,
        d.target_spans,
        d.draft_spans if annotated else (),
        1,
        x["tokens"],
        x["new_tokens"],
    )
    return Claim(hypotheses=hypotheses, goal=_restored_safely(variant, x, d, p, restorable, eagle_beyond=annotated))


def _test_setting(variant, x):
    """A position put to a restore's test as gpu_restore and offload_restore
    put every published one, with nothing assumed of it."""
    d, p, hypotheses = _setting(variant, x, guarded=False)
    hypotheses["a later request extending the cached one"] = arith.all_of(
        x["tokens"] >= 1, x["new_tokens"] >= x["tokens"]
    )
    return d, p, hypotheses


def _test_admits_only(x, d, accepted, eagle_checked):
    """What a restore's test admits, whatever position it is asked about:
    at least one token, on every target boundary, strictly below the later
    request's tokens, and, where it checks the EAGLE group, with the draft
    block beyond the position cached."""
    position = x["position"]
    return {
        "at least one token": at_least(position, 1, when=accepted),
        "on every target boundary": arith.implies(accepted, _on_targets(position, d.target_spans)),
        "a token left to compute": below(position, x["new_tokens"], when=accepted),
        "the draft block beyond it cached": arith.implies(
            arith.all_of(accepted, eagle_checked),
            arith.all_in(position + span <= x["tokens"] for span in d.draft_spans),
        ),
    }


def gpu_restore_test_safe(variant, x):
    d, p, hypotheses = _test_setting(variant, x)
    accepted = published_gpu_restorable(
        x["position"], d.target_spans, d.draft_spans, p.eagle_drop, p.lookahead, x["tokens"], x["new_tokens"]
    )
    # With no annotated EAGLE group (gpu_restorable's test annotates exactly the draft groups it is given),
    # vLLM 0.33.0 counts every attention group as one under EAGLE drop (section 4.4): each drops its block
    # beyond the position.
    unannotated_drop = arith.all_of(p.eagle_drop, not d.draft_spans)
    return Claim(
        hypotheses=hypotheses,
        goal={
            **_test_admits_only(x, d, accepted, p.eagle_drop),
            "every target block beyond it cached, under EAGLE drop with no annotated group": arith.implies(
                arith.all_of(accepted, unannotated_drop),
                arith.all_in(x["position"] + span <= x["tokens"] for span in d.target_spans),
            ),
        },
        covers={"a later request of the cached tokens": x["new_tokens"] == x["tokens"]},
    )


def _offload_restore_test_safe(variant, x, with_eagle):
    """Chunks of one block, as in offload safety; one annotated EAGLE group,
    or none. The connector also restores only what it stored: the position
    is on the recurrent chunk grid and every target group's chunks through
    it are stored, so within the cached request."""
    d, _, hypotheses = _test_setting(variant, x)
    position = x["position"]
    eagle_spans = d.draft_spans if with_eagle else ()
    accepted = offload_restorable(
        position, True, d.cadence, d.target_spans, eagle_spans, 1, x["tokens"], x["new_tokens"]
    )
    return Claim(
        hypotheses=hypotheses,
        goal={
            **_test_admits_only(x, d, accepted, with_eagle),
            "on the recurrent grid": arith.implies(accepted, arith.divides(d.cadence, position)),
            "within the cached request's tokens": _within_tokens(position, x["tokens"], accepted, with_eagle),
        },
    )


def offload_restore_test_safe(variant, x):
    return _offload_restore_test_safe(variant, x, with_eagle=True)


def offload_restore_test_safe_without_eagle(variant, x):
    return _offload_restore_test_safe(variant, x, with_eagle=False)


OFFLOAD_CHUNK_BLOCKS = 2


def offload_restore_test_on_chunks(variant, x):
    """Chunks of more than one block: the connector stores a group's state or
    blocks only a whole chunk at a time, so what its test admits lies on every
    group's chunk grid (the recurrent one: cadence x blocks per chunk), not
    just on the block grid."""
    d, _, hypotheses = _test_setting(variant, x)
    position = x["position"]
    accepted = offload_restorable(
        position, True, d.cadence, d.target_spans, d.draft_spans, OFFLOAD_CHUNK_BLOCKS, x["tokens"], x["new_tokens"]
    )

    def on_chunks(sizes):
        return arith.implies(
            accepted, arith.all_in(arith.divides(size * OFFLOAD_CHUNK_BLOCKS, position) for size in sizes)
        )

    return Claim(
        hypotheses=hypotheses,
        goal={
            "on the recurrent chunk grid": on_chunks((d.cadence,)),
            "on every target group's chunk grid": on_chunks(d.target_spans),
            "on every draft group's chunk grid": on_chunks(d.draft_spans),
        },
    )


def offload_restore_safe(variant, x):
    return _offload_restore_safe(variant, x, annotated=False)


def offload_restore_safe_with_eagle(variant, x):
    return _offload_restore_safe(variant, x, annotated=True)


def _offload_restores_published(variant, x, annotated):
    """The converse of offload safety, for any group spans and any number of
    target and EAGLE groups: the connector restores every checkpoint the
    cached prefill published on every group's chunk grid, below the cached
    request's last token, and, with EAGLE groups, a chunk below its end (an
    EAGLE group drops one). Chunks of one block, as in offload safety. One
    arbitrary target span and one EAGLE span stand for all
    (models.arith.Family): the restore's test is a conjunction of bounds
    over every group, each hypothesis one per group (docs/groups.md)."""
    cadence, position = x["cadence"], x["position"]
    target_spans = arith.Family((x["every_span"],))
    eagle_spans = arith.Family((x["every_eagle_span"],)) if annotated else ()
    tokens, new_tokens = x["tokens"], x["new_tokens"]
    # Each group's span with the index of its chunk at the position.
    grids = ((cadence, x["q_cadence"]), (x["every_span"], x["q_span"]))
    grids += ((x["every_eagle_span"], x["q_eagle"]),) if annotated else ()
    hypotheses = {
        "sizes positive": arith.all_in(span >= 1 for span, _ in grids),
        "a later request extending the cached one": arith.all_of(tokens >= 1, new_tokens >= tokens),
        "a checkpoint the cached prefill published": publishes(position, cadence, tokens),
        "on every group's chunk grid": arith.all_in(
            arith.all_of(position == arith.multiple(chunk, span), chunk >= 1) for span, chunk in grids
        ),
        "below the cached request's last token": position <= tokens - 1,
    }
    if annotated:
        hypotheses["each EAGLE group holds the chunk beyond"] = arith.all_in(
            arith.each(eagle_spans, lambda span: position + span <= tokens)
        )
    restorable = offload_restorable(position, True, cadence, target_spans, eagle_spans, 1, tokens, new_tokens)
    # At every hypothesis's edge at once: a narrowed one leaves it unreachable.
    edge = arith.all_of(*(span == 1 for span, _ in grids), position == 1, tokens == 2)
    return Claim(
        hypotheses=hypotheses,
        goal=restorable,
        covers={"one-token blocks, the first of a cached request's two tokens restored": edge},
    )


def offload_restores_published(variant, x):
    return _offload_restores_published(variant, x, annotated=False)


def offload_restores_published_with_eagle(variant, x):
    return _offload_restores_published(variant, x, annotated=True)


def prefill_ends_where_decode_begins(variant, x):
    """Which tokens the engine's step computes as prefill, from any state of
    a request (fresh, or resumed with `tokens - prompt` output tokens to
    replay), with no hypothesis that the state is in prefill."""
    _, _, step, hypotheses = engine_step(variant, x, guarded=False, in_prefill=False)
    computed, prompt, tokens = x["computed"], x["prompt"], x["tokens"]
    prefill = step.end == computed + x["scheduled"]
    left = tokens - computed
    last_of_resumed = arith.all_of(tokens > prompt, computed == tokens - 1)
    return Claim(
        hypotheses=hypotheses,
        goal={
            "it asks no more than the budget": at_most(step.requested, x["budget"]),
            "it asks no more than the tokens left": at_most(step.requested, left),
            "it asks the budget or every token left": arith.any_of(
                step.requested == x["budget"], step.requested == left
            ),
            "the prompt is prefill's": Applies(computed < prompt, prefill, edge=computed == prompt - 1),
            "every token before the last is prefill's": Applies(
                computed < tokens - 1, prefill, edge=computed == tokens - 2
            ),
            "a resumed request's last token is not prefilled": arith.implies(last_of_resumed, step.end == computed),
            "a resumed request's last token publishes nothing": arith.implies(
                last_of_resumed, arith.negate(step.published)
            ),
        },
        covers={
            "a resumed request replaying its outputs": arith.all_of(prompt <= computed, computed < tokens - 1),
            "a resumed request's last token": arith.all_of(tokens > prompt, computed == tokens - 1),
            **_smallest_request(x),
        },
    )


def state_slot(variant, x):
    """The column a request reads its initial state from, fresh or resumed
    at a published checkpoint, holds the state after exactly the tokens it
    has computed."""
    cadence, k = x["cadence"], x["k"]
    computed = k * cadence
    column = initial_state_column(variant, computed, cadence)
    return Claim(
        hypotheses={"cadence positive": cadence >= 1, "fresh or at a published checkpoint": k >= 0},
        goal={
            "a fresh request reads no column": arith.implies(k == 0, column == -1),
            "a resumed request reads the column written at its position": Applies(
                k >= 1, column == state_column(computed, cadence), edge=k == 1
            ),
        },
        covers={"resumed": k >= 1},
    )


def step_slots(variant, x):
    """The state slots one step of the engine writes, the next step and a
    resumed request read, from any state of the prefill; `earlier` indexes a checkpoint
    published before the step (at earlier * R <= computed tokens), 0 when
    there is none (its column, -1, is then no column)."""
    d, _, step, hypotheses = engine_step(variant, x, guarded=False)
    r, computed, earlier = d.cadence, x["computed"], x["earlier"]
    published_before = arith.multiple(earlier, r)
    hypotheses["a checkpoint published before the step, or none (earlier = 0)"] = arith.all_of(
        earlier >= 0, published_before <= computed
    )
    writes = step.end > computed
    column = state_column(step.end, r)
    reads = initial_state_column(variant, computed, r)
    return Claim(
        hypotheses=hypotheses,
        goal={
            "a published state is written": arith.implies(step.published, writes),
            "no column is negative": at_least(column, 0, when=writes),
            # Column k holds positions kR + 1 .. (k + 1)R: the state after `end` tokens is in it.
            "the column's first position is at or before the state": below(
                arith.multiple(column, r), step.end, when=writes
            ),
            "the column's last position is at or after the state": at_most(
                step.end, arith.multiple(column + 1, r), when=writes
            ),
            "a published state fills its column": arith.implies(
                step.published, step.end == arith.multiple(column + 1, r)
            ),
            "a private state leaves a published checkpoint's column": arith.implies(
                arith.all_of(writes, arith.negate(step.published)), column != state_column(published_before, r)
            ),
            "the next step reads the column this step wrote": arith.implies(
                writes, initial_state_column(variant, step.end, r) == column
            ),
            "a fresh request reads no column": arith.implies(computed == 0, reads == -1),
            "a resumed request reads the column written at its position": arith.implies(
                computed == published_before, reads == state_column(computed, r)
            ),
        },
        covers={
            "a private state written after a published one": arith.all_of(writes, arith.negate(step.published)),
            "resumed at a published checkpoint": arith.all_of(earlier >= 1, computed == published_before),
            "resumed at the first checkpoint": arith.all_of(earlier == 1, computed == r),
            "a fresh request's first step": arith.all_of(earlier == 0, computed == 0),
        },
    )


# Restore safety reads the least EAGLE reuse bound (the last cacheable
# position): its draft family carries the member attaining it.
RESTORE_SHAPES = (AnyShape(drafts=True, least_draft=True), AnyShape(drafts=False))


def _any_shapes(variables, formula, name: str = "step", shapes=ANY_SHAPES, **options) -> tuple[Obligation, ...]:
    """An obligation per shape of any number of groups: by default with
    draft groups and with none (base.ANY_SHAPES)."""
    return tuple(Obligation(f"{name}-{s.name}", shaped(variables, s), formula, **options) for s in shapes)


THEOREMS = (
    Theorem(
        "prefill-published-on-target-boundaries",
        "prefill",
        "Every recurrent checkpoint a prefill publishes lies on a boundary shared with every target-attention "
        "group (a multiple of every target span), whatever the budgets and flags: an inductive invariant over "
        "the engine's step (models.prefill.prefill_step) from any state of the prefill.",
        (
            Obligation(
                "step",
                ENGINE_STEP_VARS,
                published_on_targets_step,
                case_split=GEOMETRY_FLAGS,
            ),
        ),
        trace_search=Obligation("trace", TRACE_VARS, published_on_targets_trace),
    ),
    Theorem(
        "guard-exact",
        "guard",
        "pr457-guarded's check accepts a configuration if and only if every checkpoint its prefills publish lies "
        "on every target boundary: accepted, every publishing chunk end does; rejected, the engine's first step "
        "of a fresh request of R tokens under a budget of R publishes off a target boundary.",
        (
            Obligation("sufficient", PUBLISH_VARS, guard_sufficient, case_split=GEOMETRY_FLAGS),
            Obligation("necessary", GEOMETRY_VARS, guard_rejects_only_failures),
        ),
    ),
    Theorem(
        "prefill-same-checkpoints-every-budget",
        "prefill",
        "When the cadence exceeds the prefill budget, every budget sequence that makes progress publishes the "
        "same checkpoints: every multiple of R up to the prompt (the count of published checkpoints after c "
        "tokens is c // R, and each step advances without passing the prompt). For any number of cache groups "
        "(docs/groups.md).",
        # Without the lemma families: they only widen this query's search.
        _any_shapes(STEP_VARS + ints("published_count"), same_checkpoints_step, lemmas=False),
    ),
    Theorem(
        "prefill-restore-published",
        "prefill",
        "A later request with the same tokens, or extending them, restores every checkpoint published at or "
        "below the cached request's last cacheable position, and so the last of them. For any number of cache "
        "groups (docs/groups.md).",
        _any_shapes(
            RESTORE_VARS,
            restorable_below_lcp,
            "main",
            # Without Z3's monomial-order lemmas: 1,330,000 rlimit for
            # pr457-guarded instead of 1,440,000. Unsplit: a split on the
            # flags costs more on these shapes.
            solver_options=(("smt.arith.nl.order", False),),
        ),
    ),
    Theorem(
        "prefill-restore-safe",
        "prefill",
        "Whatever a later request extending a cached one restores, from the GPU prefix cache or through the "
        "native offload connector, is a checkpoint the cached prefill published, on every target boundary, "
        "strictly below the later request's tokens and at or below its last cacheable position (except under "
        "EAGLE drop with no annotated group). For any number of cache groups (docs/groups.md).",
        (
            *_any_shapes(
                SAFE_RESTORE_VARS,
                gpu_restore_safe,
                "gpu",
                # Unsplit, and offload-eagle split on EAGLE drop alone: 4.7
                # million rlimit for pr457-guarded against 5.2 million split on
                # the three flags and on two.
                shapes=RESTORE_SHAPES,
            ),
            *_any_shapes(
                SAFE_RESTORE_VARS,
                offload_restore_safe,
                "offload",
                case_split=("explicit", "eagle_drop"),
                shapes=RESTORE_SHAPES,
            ),
            # An EAGLE group annotated for the connector: only with draft groups.
            *_any_shapes(
                SAFE_RESTORE_VARS,
                offload_restore_safe_with_eagle,
                "offload-eagle",
                case_split=("eagle_drop",),
                shapes=RESTORE_SHAPES[:1],
            ),
        ),
    ),
    Theorem(
        "restore-test-safe",
        "prefill",
        "The test each restore puts to a position, taking it as published (models.reuse: gpu_restore's and "
        "offload_restore's), admits only a position of at least one token, on every target boundary, strictly "
        "below the later request's tokens, with the EAGLE group's block beyond it cached where it is checked; "
        "the offload connector's, only a position on the recurrent chunk grid within the cached request, and, "
        f"with chunks of {OFFLOAD_CHUNK_BLOCKS} blocks, on every group's chunk grid (cadence or span x blocks). "
        "For any number of cache groups (docs/groups.md).",
        (
            # Two target groups and one draft group first: a restore that reads target groups by
            # position is refuted there, where a family of groups makes it an ERROR.
            Obligation("gpu", SAFE_RESTORE_VARS, gpu_restore_test_safe, case_split=("explicit", "eagle_drop")),
            # The refutation of a mutant probes the obligations in this order: the offload test
            # without EAGLE first, where a fault in it shows first.
            *_any_shapes(
                SAFE_RESTORE_VARS, offload_restore_test_safe_without_eagle, "offload-plain", case_split=("explicit",)
            ),
            *_any_shapes(SAFE_RESTORE_VARS, gpu_restore_test_safe, "gpu", case_split=("explicit", "eagle_drop")),
            *_any_shapes(SAFE_RESTORE_VARS, offload_restore_test_safe, "offload", case_split=("explicit",)),
            *_any_shapes(SAFE_RESTORE_VARS, offload_restore_test_on_chunks, "offload-chunks"),
        ),
    ),
    Theorem(
        "prefill-offload-restores-published",
        "prefill",
        "The native offload connector restores every checkpoint a cached prefill published on every group's "
        "chunk grid below the cached request's last token, for any later request extending it; with EAGLE "
        "groups, one whose chunk beyond is cached in each. Chunks of one block; for any number of target and "
        "EAGLE groups (docs/groups.md).",
        (
            Obligation("plain", OFFLOAD_VARS, offload_restores_published),
            Obligation("eagle", OFFLOAD_VARS, offload_restores_published_with_eagle),
        ),
    ),
    Theorem(
        "prefill-end",
        "prefill",
        "The engine's step asks the split for min(budget, tokens left) tokens and computes every prompt token "
        "as prefill, and a resumed request's output tokens too "
        "up to its last, which is decode's: the step from N - 1 tokens of a request with outputs computes and "
        "publishes nothing. So the prefill ends at max(P, N - 1), the bound vLLM's split reads "
        "(tests/conformance/test_prefill_end.py checks it against the real split). For any number of cache "
        "groups (docs/groups.md).",
        _any_shapes(ENGINE_STEP_VARS, prefill_ends_where_decode_begins),
    ),
    Theorem(
        "prefill-step-slots",
        "prefill",
        "A step publishes only a state it writes, and only one that fills its column (a multiple of R); every "
        "state it writes, private or published, goes to the column that holds exactly that many tokens (column "
        "k holds positions kR+1..(k+1)R), never a negative one; a private state never overwrites the column of "
        "a checkpoint published before it; the next step, which starts where this one ended, reads its initial "
        "state from the column this one wrote; a fresh request reads no column (-1) and a request resumed at a "
        "published checkpoint reads the column written at exactly that position. For any number of cache "
        "groups (docs/groups.md).",
        _any_shapes(ENGINE_STEP_VARS + ints("earlier"), step_slots),
    ),
    Theorem(
        "prefill-state-slot",
        "prefill",
        "A fresh request reads no state (column -1); a request resumed at a published checkpoint h reads "
        "column (h - 1) // R, the slot the chunk ending at h wrote.",
        (Obligation("main", ints("cadence", size=True) + ints("k"), state_slot),),
    ),
)
