"""Properties of a whole prefill, by induction over steps: a step lemma and
an invariant checked by Z3, and a bounded unrolling from a fresh request that
produces real counterexample traces."""

from __future__ import annotations

from models import arith
from models.config import guard_accepts
from models.prefill import initial_state_column, prefill_step, publishes, state_column
from models.scheduler import SplitCall, max_prefill_tokens, prefill_end, split
from proofs.catalog.base import (
    ANY_SHAPES,
    GEOMETRY_VARS,
    SPLIT_CALL_VARS,
    SPLIT_PARAM_VARS,
    Obligation,
    Theorem,
    call_domain,
    deployment,
    deployment_domain,
    ints,
    params_domain,
    shaped,
    split_params,
)
from proofs.engine.claims import Applies, at_least, at_most, below
from proofs.engine.solver import Claim

# The split block comes from the deployment; the other scheduler inputs stay free.
STEP_VARS = tuple(v for v in SPLIT_PARAM_VARS if v.name != "block") + SPLIT_CALL_VARS + GEOMETRY_VARS
PUBLISH_VARS = GEOMETRY_VARS + ints("end", "tokens")
# One step of run_prefill from an arbitrary state of a request's prefill.
ENGINE_STEP_VARS = (
    tuple(v for v in SPLIT_PARAM_VARS if v.name != "block")
    + GEOMETRY_VARS
    + ints("computed", "budget", "prompt", "tokens", "scheduled")
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
