"""The chunk split and the last cacheable position, for one call with every
input and flag free: no-op outside the prefill, bounds, progress and landing on the grid."""

from __future__ import annotations

import contextlib
import contextvars

from models import arith
from models.scheduler import (
    ChunkEnd,
    checkpoint_position,
    chunk_end,
    last_cacheable_position,
    max_prefill_tokens,
    split,
)
from models.variants import BASELINE
from proofs.catalog.base import (
    SPLIT_CALL_VARS,
    SPLIT_PARAM_VARS,
    Obligation,
    Theorem,
    ints,
    scheduler_domain,
    split_call,
    split_params,
)
from proofs.engine.claims import at_least, at_most
from proofs.engine.solver import Claim
from proofs.faults.patch import pristine

VARS = SPLIT_PARAM_VARS + SPLIT_CALL_VARS

# The split the theorems read: the model's, unless a caller puts another
# reading of the same function in its place (proofs/source: vLLM's shipped
# code). Under another reading a chunk's end is start + the split's result;
# the model's intermediate stops are not read.
_split_reading: contextvars.ContextVar = contextvars.ContextVar("gridproof_split_reading", default=None)


@contextlib.contextmanager
def reading_split(function):
    """Within the block, the theorems read `function(p, call)` as the split."""
    token = _split_reading.set(function)
    try:
        yield
    finally:
        _split_reading.reset(token)


def _one_call(variant, x):
    p, call = split_params(x), split_call(x)
    reading = _split_reading.get()
    return p, call, split(variant, p, call) if reading is None else reading(p, call)


def _chunk_end(variant, p, call, r):
    """The chunk's end as the split read builds it."""
    if _split_reading.get() is None:
        return chunk_end(variant, p, call)
    return ChunkEnd(ends=(call.start + r,))


def _in_prefill(call):
    return call.start < call.prefill_end


def default_equivalence(variant, x):
    p, call, mine = _one_call(variant, x)
    with pristine():  # the reference: 0.33.0 as released, not as a mutant reads it
        reference = split(BASELINE, p, call)
    return Claim(
        hypotheses=scheduler_domain(x),
        goal=mine == reference,
        covers={
            "mid-block start with a junction": arith.all_of(
                arith.negate(arith.divides(p.block, call.start)), call.start < call.junction
            ),
            "EAGLE drop with partial hits": arith.all_of(p.eagle_drop, p.partial_hits),
        },
    )


def bounds(variant, x):
    p, call, r = _one_call(variant, x)
    return Claim(
        hypotheses={**scheduler_domain(x), "in prefill": _in_prefill(call)},
        goal={"never negative": at_least(r, 0), "at most the tokens requested": at_most(r, call.requested)},
    )


def outside_prefill(variant, x):
    p, call, r = _one_call(variant, x)
    return Claim(
        hypotheses={**scheduler_domain(x), "past the prefill": call.start >= call.prefill_end},
        goal=r == call.requested,
    )


def zero_exactly_when(variant, x):
    """In prefill, the split returns 0 exactly when nothing is requested or the chunk stalls: non-final, its
    end rounded down to the block not past its start, and the block within the prefill budget."""
    p, call, r = _one_call(variant, x)
    end = call.start + call.requested
    stuck = arith.all_of(
        end < call.prefill_end,
        arith.round_down(end, p.block) <= call.start,
        p.block <= max_prefill_tokens(p),
    )
    return Claim(
        hypotheses={**scheduler_domain(x), "in prefill": _in_prefill(call)},
        goal={
            "zero only when nothing is requested or the chunk stalls": arith.implies(
                r == 0, arith.any_of(call.requested == 0, stuck)
            ),
            "zero when nothing is requested or the chunk stalls": arith.implies(
                arith.any_of(call.requested == 0, stuck), r == 0
            ),
        },
        covers={"a stall": stuck},
    )


def progress_when_cadence_exceeds_budget(variant, x):
    p, call, r = _one_call(variant, x)
    return Claim(
        hypotheses={
            **scheduler_domain(x),
            "in prefill": _in_prefill(call),
            "cadence exceeds budget": p.block > max_prefill_tokens(p),
            "tokens requested": call.requested >= 1,
        },
        goal=r > 0,
    )


def grid_landing(variant, x):
    """A non-final chunk ends on the grid, at a named stop, or is a private
    sub-block advance that crosses no grid point. The goal reads the end as
    chunk_end builds it, a branch per stop, which the division reads branch
    by branch; its first conjunct ties that end to the split's result."""
    p, call, r = _one_call(variant, x)
    chosen = _chunk_end(variant, p, call, r)
    start, block, end = call.start, p.block, chosen.end
    lcp = last_cacheable_position(variant, p, call.tokens)
    tail = checkpoint_position(call.prompt, p.hash_block, p.eagle_drop, p.lookahead)
    private_advance = arith.all_of(
        block > max_prefill_tokens(p), arith.floordiv(end, block) == arith.floordiv(start, block)
    )
    return Claim(
        hypotheses={
            **scheduler_domain(x),
            "non-final chunk": start + r < call.prefill_end,
            "progress": r > 0,
            "no internal checkpoint": arith.negate(p.checkpoint_blocks),
        },
        goal=arith.all_of(
            start + r == end,
            arith.any_of(
                arith.divides(block, end),
                end == lcp,
                arith.all_of(p.partial_hits, end == tail),
                end == call.junction,
                private_advance,
            ),
        ),
        covers={"private advance": private_advance},
    )


def _no_jump_setting(variant, x):
    """The chunk's start and end, a multiple of the cadence (when the inputs
    name one, k), the hypotheses, and the two lemmas' goals, by name: read
    once, by each lemma and by the theorem that uses them."""
    p, call, r = _one_call(variant, x)
    hypotheses = {
        **scheduler_domain(x),
        "in prefill": _in_prefill(call),
        "cadence exceeds budget": p.block > max_prefill_tokens(p),
        "request within budget": call.requested <= max_prefill_tokens(p),
    }
    lemmas, point = {}, None
    if "k" in x:
        point = arith.multiple(x["k"], p.block)
        hypotheses["a multiple of the cadence"] = x["k"] >= 1
    if _split_reading.get() is not None:
        # Another reading names no stops: its one lemma is about the end itself.
        lemmas["ends by the next multiple"] = call.start + r <= _next_multiple(call.start, p.block)
        return call.start, call.start + r, point, hypotheses, lemmas
    first_stop_end = chunk_end(variant, p, call).ends[0]
    if point is not None:
        lemmas["first stop passes no multiple"] = arith.negate(_passes(call.start, first_stop_end, point))
    lemmas["later stops only lower the end"] = call.start + r <= first_stop_end
    return call.start, call.start + r, point, hypotheses, lemmas


def _next_multiple(start, block):
    """The first multiple of the cadence above `start`."""
    return arith.multiple(arith.floordiv(start, block) + 1, block)


def _passes(start, end, point):
    return arith.all_of(start < point, point < end)


def first_stop_passes_no_multiple(variant, x):
    """Lemma for no-jump: the chunk's end after its first stop (the next grid
    point) passes no multiple of the cadence."""
    _, _, _, hypotheses, lemmas = _no_jump_setting(variant, x)
    return Claim(hypotheses=hypotheses, goal=lemmas["first stop passes no multiple"])


def later_stops_only_lower(variant, x):
    """Lemma for no-jump: the split's result ends at or before that end."""
    _, _, _, hypotheses, lemmas = _no_jump_setting(variant, x)
    return Claim(hypotheses=hypotheses, goal=lemmas["later stops only lower the end"])


def ends_by_next_multiple(variant, x):
    """Lemma for no-jump on another reading of the split (proofs/source):
    the chunk ends at or before the first multiple of the cadence above its
    start. It names no k: each case of the reading decides it alone."""
    _, _, _, hypotheses, lemmas = _no_jump_setting(variant, x)
    return Claim(hypotheses=hypotheses, goal=lemmas["ends by the next multiple"])


def lemma_hypothesis(name: str) -> str:
    """The name a lemma's goal has among the hypotheses of the theorem that
    uses it: the statement proper is the claim without them."""
    return f"{name} (lemma)"


def no_jump(variant, x):
    """With the cadence above the budget, no chunk passes over a multiple of
    the cadence: every multiple on the way is a chunk end. The two lemmas
    above, proved first, are its hypotheses."""
    start, end, point, hypotheses, lemmas = _no_jump_setting(variant, x)
    hypotheses.update({lemma_hypothesis(name): goal for name, goal in lemmas.items()})
    return Claim(hypotheses=hypotheses, goal=arith.negate(_passes(start, end, point)))


def eagle_backoff(variant, x, annotated=False):
    p = split_params(x, eagle_spans=(x["draft_span"],), annotated=annotated)
    n = x["tokens"]
    return Claim(
        hypotheses={
            **scheduler_domain(x),
            "EAGLE block drop": p.eagle_drop,
            "draft span positive": x["draft_span"] >= 1,
        },
        goal=last_cacheable_position(variant, p, n) == checkpoint_position(n, p.block, True),
    )


def eagle_annotation_unread(variant, x):
    return eagle_backoff(variant, x, annotated=True)


def eagle_conversion(variant, x):
    """With annotated EAGLE groups, lcp is on the recurrent grid, at or below
    every annotated group's last reusable boundary, and not below the
    conservative one-block backoff."""
    spans = (x["draft_span"], x["draft_span2"])
    p = split_params(x, eagle_spans=spans, annotated=True)
    n = x["tokens"]
    lcp = last_cacheable_position(variant, p, n)
    return Claim(
        hypotheses={
            **scheduler_domain(x),
            "EAGLE block drop": p.eagle_drop,
            "draft spans divide the cadence": arith.all_of(
                spans[0] >= 1, spans[1] >= 1, arith.divides(spans[0], p.block), arith.divides(spans[1], p.block)
            ),
        },
        goal=arith.all_of(
            arith.divides(p.block, lcp),
            *(lcp <= checkpoint_position(n, span, True) for span in spans),
            lcp >= checkpoint_position(n, p.block, True),
        ),
    )


def _theorem(name, subject, statement, formula, extra=(), case_split=(), solver_options=(), strategy="core"):
    obligation = Obligation(
        "main", VARS + tuple(extra), formula, case_split, solver_options=solver_options, strategy=strategy
    )
    return Theorem(name, subject, statement, (obligation,))


THEOREMS = (
    _theorem(
        "split-default-equivalence",
        "split",
        "With the default cadence and no annotated EAGLE group, the variant splits every chunk exactly as "
        "vLLM 0.33.0, for every input: flags, hits and junctions included.",
        default_equivalence,
    ),
    _theorem(
        "split-bounds",
        "split",
        "In prefill the split returns between 0 and the tokens requested.",
        bounds,
    ),
    _theorem(
        "split-untouched-outside-prefill",
        "split",
        "Past the prefill (decode, replayed outputs done) the split returns the request unchanged.",
        outside_prefill,
    ),
    _theorem(
        "split-zero-exactly-when",
        "split",
        "The split returns 0 exactly when nothing was requested, or the chunk is non-final, its aligned end "
        "does not pass its start, and the grid fits in the budget.",
        zero_exactly_when,
    ),
    _theorem(
        "split-progress-cadence-above-budget",
        "split",
        "When the grid exceeds the prefill budget, every request for tokens makes progress (private advance).",
        progress_when_cadence_exceeds_budget,
    ),
    _theorem(
        "split-grid-landing",
        "split",
        "A non-final chunk ends on the grid, at the last cacheable position, at the partial-hash tail, at the "
        "junction, or is a private advance that crosses no grid point.",
        grid_landing,
        # Its hypotheses rule internal checkpoints out: with the flag fixed,
        # the checkpoint's validity is not read (models/arith.py, prune).
        case_split=("ckpt_blocks",),
    ),
    Theorem(
        "split-no-jump",
        "split",
        "When the cadence exceeds the budget, no chunk passes over a multiple of the cadence.",
        (
            Obligation("first stop", VARS + ints("k"), first_stop_passes_no_multiple),
            Obligation("later stops", VARS, later_stops_only_lower),
            Obligation("main", VARS + ints("k"), no_jump),
        ),
    ),
    _theorem(
        "eagle-backoff-without-annotation",
        "eagle",
        "With EAGLE block drop and no annotated EAGLE group, the last cacheable position is the "
        "one-recurrent-block backoff max(0, (N // R) * R - R).",
        eagle_backoff,
        ints("draft_span", size=True),
    ),
    _theorem(
        "baseline-reads-no-eagle-annotation",
        "eagle",
        "vLLM 0.33.0 has no EAGLE annotation (its split reads no EAGLE group): with EAGLE block drop and an "
        "EAGLE group annotated, its last cacheable position is still the one-recurrent-block backoff "
        "max(0, (N // R) * R - R). PR457 reads the annotation, and converts.",
        eagle_annotation_unread,
        ints("draft_span", size=True),
    ),
    _theorem(
        "eagle-annotated-conversion",
        "eagle",
        "With annotated EAGLE groups whose spans divide the cadence, the last cacheable position is on the "
        "recurrent grid, at or below every annotated group's last reusable boundary, and at or above the "
        "conservative backoff.",
        eagle_conversion,
        ints("draft_span", "draft_span2", size=True),
        # Its hypotheses fix EAGLE block drop on: the case split reads the
        # model with the flag fixed, so the branch without drop is not read
        # (models/arith.py, prune), which makes it several times cheaper.
        case_split=("eagle_drop",),
        # Without branching on integer values in the nonlinear solver the
        # proof took 1,700,000 rlimit instead of 3,100,000 (half the time),
        # the same hypotheses used; no other heavy obligation gained from it.
        solver_options=(("smt.arith.nl.branching", False),),
    ),
)
