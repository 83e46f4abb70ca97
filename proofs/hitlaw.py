"""The hit law of one deployment: for a shared prefix of L tokens (a request
of L tokens, then a later one with the same L tokens), the tokens the GPU
prefix cache restores, as a closed form over L, proved by Z3 for every L.

What `simulate` computes for one L is a loop: the prefill's steps, then the
largest published checkpoint a later request can restore. Read for every L:
1. With a prompt far away, the split from a fresh request follows a *free
   run* 0 = b_0 < b_1 < ... < b_p = U and repeats it shifted by U (the split's
   grid divides U). Found concretely here; nothing below trusts it.
2. For a given L the prefill follows the free run up to the first point c
   where its step ends elsewhere (a stop of L, or the prompt's end); from c
   on, at most K steps finish the prefill.
3. The obligation, with L, the free-run point c = b_j + t*U and a point of
   the free grid m symbolic: if c is a point where the step leaves the free
   run and the point before it does not, then (a) the K steps from c finish
   the prefill, and (b) the largest restorable published end, over the free
   run up to c and the K steps, equals the closed form. The steps, the
   publication and the restore test are the model's own functions
   (models.prefill.prefill_step, models.prefill.publishes,
   models.reuse.gpu_restorable), read as Z3 terms.
The real first exit point satisfies the hypotheses, so the law holds for
every L. The largest restorable point of the free run is found among its
last few candidates per residue class; a clause of the goal shows that no
earlier point of the class could be larger than all of them.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

import z3

from models import arith
from models.plan import Plan
from models.prefill import prefill_step, publishes
from models.reuse import gpu_restorable
from models.scheduler import last_cacheable_position, prefill_end
from proofs.solver import PROVED, Kind, Outcome, Var, decide, fresh_context

FAR = 10**12  # a prompt length beyond every stop of the free run
MAX_FREE_RUN_STEPS = 10_000
MAX_CLASSES = 256
RLIMIT = 5_000_000


@dataclass(frozen=True)
class FreeRun:
    points: tuple[int, ...]  # b_0 = 0 < ... < b_{p-1}
    period: int  # U = b_p

    def next_point(self, j, t):
        return (
            arith.ite(j == len(self.points) - 1, self.period, 0)
            + _select(j + 1, self.points, self.period)
            + t * self.period
        )

    def point(self, j, t):
        return _select(j, self.points, self.period) + t * self.period


def _select(j, points, period):
    """points[j] for a symbolic j in [0, p]; index p (the next period's b_0) reads 0."""
    value = 0
    for index, point in enumerate(points):
        value = arith.ite(j == index, point, value)
    return value


def step_end(plan: Plan, computed, tokens):
    """The end of one step of a fresh prompt of `tokens` tokens, from `computed`."""
    d = plan.geometry.deployment
    return prefill_step(plan.variant, plan.split, plan.cadence, computed, d.max_num_scheduled_tokens, tokens, tokens)


def free_run(plan: Plan) -> FreeRun | None:
    """The free run from a fresh request, or None if it stalls or does not
    come back to the split's grid within MAX_FREE_RUN_STEPS steps."""
    grid = plan.split.block
    points, computed = [0], 0
    for _ in range(MAX_FREE_RUN_STEPS):
        end = step_end(plan, computed, FAR).end
        if end <= computed:
            return None
        if end % grid == 0:
            return FreeRun(tuple(points), end)
        points.append(end)
        computed = end
    return None


def restorable(plan: Plan, position, tokens):
    """A later request of the same `tokens` restores `position` if a
    checkpoint is published there (models.reuse.gpu_restorable)."""
    split = plan.split
    return gpu_restorable(
        position,
        publishes(position, plan.cadence, tokens),
        plan.target_spans,
        plan.geometry.eagle_spans(),
        split.eagle_drop,
        split.lookahead,
        tokens,
        tokens,
        split.eagle_annotated,
    )


# --- the closed forms tried, simplest first --------------------------------------------------------


def law_lcp(plan: Plan, tokens):
    """The last cacheable position itself."""
    return last_cacheable_position(plan.variant, plan.split, tokens)


def _qualifying_period(plan: Plan, run: FreeRun) -> int:
    return math.lcm(run.period, plan.cadence, *plan.target_spans)


def law_lcp_or_grid(plan: Plan, run: FreeRun):
    """The last cacheable position if it is restorable, else the last point of
    the restorable grid below it."""
    period = _qualifying_period(plan, run)

    def law(tokens):
        lcp = last_cacheable_position(plan.variant, plan.split, tokens)
        on_grid = arith.round_down(lcp, period)
        at_lcp = arith.ite(restorable(plan, lcp, tokens), lcp, 0)
        below = arith.ite(restorable(plan, on_grid, tokens), on_grid, 0)
        return arith.maximum(at_lcp, below)

    return law


@dataclass
class HitLaw:
    proved: bool
    outcome: Outcome | None
    form: str  # the closed form, printed
    law: object = None  # tokens -> restored tokens, int or Z3
    tail_steps: int = 0
    free_run: FreeRun | None = None
    reason: str = ""
    smallest_hit: int | None = None
    extra: dict = field(default_factory=dict)

    def __call__(self, tokens: int) -> int:
        return self.law(tokens)


def first_exit(plan: Plan, run: FreeRun, tokens: int, reach: int) -> tuple[int, int, int] | None:
    """(j, t, steps): where a prompt of `tokens` first leaves the free run,
    at b_j + t*U, and the steps from there to the prefill's end; None if it
    stalls. Concrete: it sizes the unrolling and screens the closed forms;
    the proof does not rely on it."""
    # Far from the prompt's end the run is free: start a few periods before it.
    j, t = 0, max(0, (tokens - reach) // run.period - 1)
    computed = t * run.period
    end_of_prefill = prefill_end(tokens, tokens)
    while True:
        following = run.next_point(j, t)
        if step_end(plan, computed, tokens).end != following or following >= end_of_prefill:
            break
        computed = following
        j, t = (j + 1, t) if j + 1 < len(run.points) else (0, t + 1)
    exit_j, exit_t, steps = j, t, 0
    while computed < end_of_prefill:
        end = step_end(plan, computed, tokens).end
        if end == computed or steps > 1000:
            return None
        computed, steps = end, steps + 1
    return exit_j, exit_t, steps


def _classes(plan: Plan, run: FreeRun) -> tuple[int, list[tuple[int, bool]]]:
    """The residue classes of free-run points modulo the period W of the
    restorable grid, each with whether its points can be restored at all
    (alignment alone decides it: far from the prompt's end every bound holds)."""
    period = _qualifying_period(plan, run)
    classes = []
    for shift in range(0, period, run.period):
        for point in run.points:
            base = point + shift
            far = base + period
            classes.append((base, bool(restorable(plan, far, far + 10 * period + FAR))))
    return period, classes


def obligation(plan: Plan, run: FreeRun, law, tail: int, backoffs: int, residue=None):
    period, classes = _classes(plan, run)
    p = len(run.points)

    def formula(variant, x):
        tokens, t, m = x["L"], x["t"], x["m"]
        j = x["j"] if residue is None else residue
        c = run.point(j, t)
        following = run.next_point(j, t)
        previous = arith.ite(j == 0, run.point(p - 1, t - 1), run.point(j - 1, t))
        end_of_prefill = prefill_end(tokens, tokens)

        def stays(point, nxt):
            return arith.all_of(step_end(plan, point, tokens).end == nxt, nxt < end_of_prefill)

        hypotheses = {
            "a prompt of L >= 1 tokens": tokens >= 1,
            "a point of the free run": arith.all_of(j >= 0, j <= p - 1, t >= 0),
            "the prefill leaves the free run here": arith.negate(stays(c, following)),
            "and not at the point before": arith.any_of(arith.all_of(j == 0, t == 0), stays(previous, c)),
        }
        # The prefill from c: at most `tail` more steps.
        best, computed = 0, c
        for _ in range(tail):
            step = prefill_step(
                variant,
                plan.split,
                plan.cadence,
                computed,
                plan.geometry.deployment.max_num_scheduled_tokens,
                tokens,
                tokens,
            )
            best = arith.maximum(
                best, arith.ite(arith.all_of(step.published, restorable(plan, step.end, tokens)), step.end, 0)
            )
            computed = step.end
        finished = computed >= end_of_prefill
        # The free run up to c: per class, the last `backoffs` points at or below c.
        complete = True
        for base, can_restore in classes:
            member = base + m * period
            if not can_restore:
                complete = arith.all_of(
                    complete,
                    arith.implies(arith.all_of(m >= 0, member <= c), arith.negate(restorable(plan, member, tokens))),
                )
                continue
            last = arith.floordiv(c - base, period)
            any_found = False
            for back in range(backoffs):
                index = last - back
                point = base + index * period
                found = arith.all_of(index >= 0, restorable(plan, point, tokens))
                best = arith.maximum(best, arith.ite(found, point, 0))
                any_found = arith.any_of(any_found, found)
            earlier = arith.all_of(m >= 0, m <= last - backoffs, restorable(plan, member, tokens))
            complete = arith.all_of(complete, arith.implies(earlier, any_found))
        return _claim(hypotheses, arith.all_of(finished, complete, best == law(tokens)))

    return formula


def _samples(period: int, reach: int, spans: list[int]) -> list[int]:
    """Prompt lengths to screen with: every grid point of every span, and its
    neighbours, over two periods and the prefill's reach; and random ones."""
    window = 2 * period + 2 * reach
    chosen = set(range(1, 40))
    for span in set(spans):
        step = max(span, window // 100)
        for point in range(step, window, step):
            chosen.update((point - 1, point, point + 1))
    rng = random.Random(0)
    chosen.update(rng.randrange(1, 8 * window) for _ in range(200))
    return sorted(chosen)


def _screen(plan, run, law, tail, backoffs, exits) -> int | None:
    """The first sampled prompt length where the obligation's goal fails
    concretely (its hypotheses hold there), or None."""
    for tokens, (j, t, _) in exits.items():
        claim = obligation(plan, run, law, tail, backoffs, j)(plan.variant, {"L": tokens, "j": j, "t": t, "m": 0})
        if all(claim.hypotheses.values()) and not claim.goal:
            return tokens
    return None


def _joined(outcomes: list[Outcome]) -> Outcome:
    """One PROVED outcome for the obligations of every residue."""
    used = sorted({h for o in outcomes for h in o.hypotheses_used})
    unconfirmed = sorted(
        {h for o in outcomes for h in o.hypotheses_unconfirmed}
        - {h for o in outcomes for h in set(o.hypotheses_used) - set(o.hypotheses_unconfirmed)}
    )
    return Outcome(
        PROVED,
        rlimit=sum(o.rlimit for o in outcomes),
        seconds=sum(o.seconds for o in outcomes),
        hypotheses_used=used,
        hypotheses_unconfirmed=unconfirmed,
    )


def _claim(hypotheses, goal):
    from proofs.solver import Claim

    return Claim(hypotheses=hypotheses, goal=goal)


VARIABLES = (Var("L", Kind.INT), Var("j", Kind.INT), Var("t", Kind.INT), Var("m", Kind.INT))


def prove_hit_law(plan: Plan, rlimit: int = RLIMIT) -> HitLaw:
    run = free_run(plan)
    if run is None:
        return HitLaw(
            False, None, "", reason="the prefill stalls or never returns to its grid: no free run to prove over"
        )
    period, classes = _classes(plan, run)
    if len(classes) > MAX_CLASSES:
        return HitLaw(False, None, "", free_run=run, reason=f"{len(classes)} residue classes: more than {MAX_CLASSES}")
    d = plan.geometry.deployment
    spans = [plan.cadence, plan.split.block, *plan.target_spans, *plan.geometry.eagle_spans()]
    reach = d.max_num_scheduled_tokens + 3 * max(spans) + d.hash_lookahead_tokens
    exits = {}
    for tokens in _samples(period, reach, spans):
        exits[tokens] = first_exit(plan, run, tokens, 4 * reach)
        if exits[tokens] is None:
            return HitLaw(False, None, "", free_run=run, reason=f"a prompt of {tokens} tokens stalls in prefill")
    tail = max(steps for _, _, steps in exits.values())
    if tail > 64:
        return HitLaw(False, None, "", free_run=run, reason=f"the prefill's end takes {tail} steps: too many to unroll")
    backoffs = 1 + -(-reach // period)
    outcome = None
    for name, law in (("lcp", lambda n: law_lcp(plan, n)), ("lcp-or-grid", law_lcp_or_grid(plan, run))):
        screen = _screen(plan, run, law, tail, backoffs, exits)
        if screen is not None:
            outcome = Outcome("REFUTED", counterexample={"L": screen}, reason=f"a prompt of {screen} tokens")
            continue
        outcomes = []
        for residue in range(len(run.points)):
            with fresh_context():
                formula = obligation(plan, run, law, tail, backoffs, residue)
                outcome = decide(formula, VARIABLES, plan.variant, rlimit=rlimit, strategy="linear")
            outcomes.append(outcome)
            if outcome.verdict != PROVED:
                break
        else:
            return HitLaw(
                True, _joined(outcomes), render(law), law=law, tail_steps=tail, free_run=run, extra={"form": name}
            )
    return HitLaw(
        False,
        outcome,
        "",
        free_run=run,
        tail_steps=tail,
        reason=f"no closed form proved ({outcome.verdict}: {outcome.reason})",
    )


# --- printing a closed form -------------------------------------------------------------------------


def render(law) -> str:
    """The law read with Z3's own division on a symbolic L (exact here: every
    divisor is a positive constant), printed with floors, max and min."""
    with fresh_context():
        tokens = z3.Int("L")
        with arith.symbolic_context(naive=True):
            term = law(tokens)
        return _text(arith._term(term))


_OPS = {z3.Z3_OP_ADD: " + ", z3.Z3_OP_MUL: "·"}


def _text(e) -> str:
    if z3.is_int_value(e):
        return f"{e.as_long()}"
    if z3.is_const(e):
        return e.decl().name()
    kind = e.decl().kind()
    args = e.children()
    if kind == z3.Z3_OP_ITE:
        cond, a, b = args
        if z3.is_app(cond) and cond.num_args() == 2:
            x, y = cond.children()
            ck = cond.decl().kind()
            if (
                ck in (z3.Z3_OP_GT, z3.Z3_OP_GE)
                and x.eq(a)
                and y.eq(b)
                or ck in (z3.Z3_OP_LT, z3.Z3_OP_LE)
                and x.eq(b)
                and y.eq(a)
            ):
                return f"max({_text(b)}, {_text(a)})" if z3.is_int_value(b) else f"max({_text(a)}, {_text(b)})"
            if (
                ck in (z3.Z3_OP_LT, z3.Z3_OP_LE)
                and x.eq(a)
                and y.eq(b)
                or ck in (z3.Z3_OP_GT, z3.Z3_OP_GE)
                and x.eq(b)
                and y.eq(a)
            ):
                return f"min({_text(a)}, {_text(b)})"
        return f"({_text(a)} if {_cond(cond)} else {_text(b)})"
    if kind in (z3.Z3_OP_IDIV, z3.Z3_OP_DIV):
        return f"⌊{_text(args[0])}/{_text(args[1])}⌋"
    if kind == z3.Z3_OP_MOD:
        return f"({_text(args[0])} mod {_text(args[1])})"
    if kind == z3.Z3_OP_SUB:
        return "(" + " − ".join(_text(a) for a in args) + ")"
    if kind == z3.Z3_OP_UMINUS:
        return f"−{_text(args[0])}"
    if kind in _OPS:
        parts = [_text(a) for a in args]
        joined = _OPS[kind].join(parts)
        return f"({joined})" if kind == z3.Z3_OP_ADD else joined
    return str(e)


def _cond(c) -> str:
    names = {z3.Z3_OP_LT: "<", z3.Z3_OP_LE: "≤", z3.Z3_OP_GT: ">", z3.Z3_OP_GE: "≥", z3.Z3_OP_EQ: "="}
    kind = c.decl().kind()
    if kind in names:
        return f"{_text(c.arg(0))} {names[kind]} {_text(c.arg(1))}"
    if kind == z3.Z3_OP_AND:
        return " and ".join(_cond(a) for a in c.children())
    if kind == z3.Z3_OP_OR:
        return "(" + " or ".join(_cond(a) for a in c.children()) + ")"
    if kind == z3.Z3_OP_NOT:
        return f"not ({_cond(c.arg(0))})"
    if z3.is_true(c):
        return "true"
    return str(c)


def simulated_hit(plan: Plan, tokens: int) -> int:
    """What `simulate` reports a later identical request restores, for a prompt of `tokens`."""
    from proofs.simulate import simulate

    return simulate(plan.variant, plan.geometry, plan.geometry.deployment.max_num_scheduled_tokens, tokens)["reuse"]


def smallest_hit(law: HitLaw) -> int | None:
    """The smallest L whose law is positive (Z3's optimiser on the law read
    with constant divisors), replayed on the law as ints; None: none hits."""
    with fresh_context():
        tokens = z3.Int("L")
        with arith.symbolic_context(naive=True):
            term = arith._term(law.law(tokens))
        optimiser = z3.Optimize()
        optimiser.add(tokens >= 1, term > 0)
        optimiser.minimize(tokens)
        if optimiser.check() != z3.sat:
            return None
        found = optimiser.model()[tokens].as_long()
    if law(found) <= 0 or (found > 1 and law(found - 1) > 0):
        raise AssertionError(f"smallest hit {found} does not replay on the law")
    return found
