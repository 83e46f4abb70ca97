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
3. The obligation, with L and the free-run point c = b_j + t*U symbolic:
   if c is a point where the step leaves the free run and the point before
   it does not, then (a) c lies before the prefill's end, (b) the K steps
   from c finish the prefill, and (c) the largest restorable published end,
   over the free run up to c and the K steps, equals the closed form. The
   steps, the publication and the restore test are the model's own
   functions (models.prefill.prefill_step, models.prefill.publishes,
   models.reuse.gpu_restorable), read as Z3 terms. A residue no prompt ever
   leaves at is settled by proving that instead (`never_leaves_at`).
The real first exit point satisfies the hypotheses, so the law holds for
every L. The largest restorable point of the free run is found among its
last few candidates per residue class; a lemma with no prefill step in it
(`free_run_best_is_largest`) shows that no other free-run point below the
prefill's end could be larger.
"""

from __future__ import annotations

import math
import random
import weakref
from dataclasses import dataclass, field, replace

import numpy
import z3

from models import arith
from models.plan import Plan
from models.prefill import prefill_step, publishes
from models.reuse import gpu_restorable
from models.scheduler import last_cacheable_position, prefill_end
from proofs.solver import PROVED, UNKNOWN, VACUOUS, Claim, Kind, Outcome, SolverOptions, Var, decide

FAR = 10**12  # a prompt length beyond every stop of the free run
MAX_FREE_RUN_STEPS = 10_000
MAX_CLASSES = 64
# Stops of the free run per period: the law has an obligation per stop, each selecting among all
# of them. At 120 stops (Kimi-K3 at a 16-token budget) `check` takes about 7 s; a 1-token budget
# has 1,920, which no longer finishes.
MAX_PERIOD_STOPS = 128
MAX_FREE_RUN_POINTS = 100_000  # enumerated concretely, once per deployment
RLIMIT = 30_000_000  # per obligation of the general form
SIMPLE_RLIMIT = 3_000_000  # per obligation of a printed closed form (those proved take under 1,000,000)


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
    """The end of one step of a fresh prompt of `tokens` tokens, from `computed`.
    Read symbolically, built once per symbolic context and pair of terms: an
    obligation reads the same step in its hypotheses, its goal and its law."""
    d = plan.geometry.deployment

    def step():
        return prefill_step(
            plan.variant, plan.split, plan.cadence, computed, d.max_num_scheduled_tokens, tokens, tokens
        )

    if not arith.is_symbolic(computed, tokens):
        return step()
    memo = _STEPS.setdefault(arith.active_context(), {})
    key = (id(plan), *(v.get_id() if isinstance(v, z3.ExprRef) else v for v in (computed, tokens)))
    if key not in memo:
        memo[key] = step()
    return memo[key]


_STEPS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # symbolic context -> its steps read so far


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


MAX_TAIL_STEPS = 1000  # past the exit; a prefill that takes more is reported as stalling


def first_exits(plan: Plan, run: FreeRun, tokens, reach: int):
    """(j, t, steps) per prompt length of the array `tokens`: where its prefill
    first leaves the free run, at b_j + t*U, and the steps from there to the
    prefill's end (-1: it stalls). Concrete, on numpy lanes: it sizes the
    unrolling and screens the closed forms; the proof does not rely on it."""
    tokens = numpy.asarray(tokens, dtype=numpy.int64)
    last_point = len(run.points) - 1
    # Far from the prompt's end the run is free: start a few periods before it.
    j = numpy.zeros_like(tokens)
    t = numpy.maximum(0, (tokens - reach) // run.period - 1)
    computed = t * run.period
    end_of_prefill = prefill_end(tokens, tokens)
    free = numpy.ones(tokens.shape, dtype=bool)
    while free.any():
        following = run.next_point(j, t)
        free &= (step_end(plan, computed, tokens).end == following) & (following < end_of_prefill)
        computed = numpy.where(free, following, computed)
        t = numpy.where(free & (j == last_point), t + 1, t)
        j = numpy.where(free, numpy.where(j == last_point, 0, j + 1), j)
    steps = numpy.zeros_like(tokens)
    stalled = numpy.zeros(tokens.shape, dtype=bool)
    for _ in range(MAX_TAIL_STEPS + 1):
        going = (computed < end_of_prefill) & ~stalled
        if not going.any():
            break
        end = step_end(plan, computed, tokens).end
        stalled |= going & (end == computed)
        computed = numpy.where(going, end, computed)
        steps += going & ~stalled
    stalled |= computed < end_of_prefill
    return j, t, numpy.where(stalled, -1, steps)


def first_exit(plan: Plan, run: FreeRun, tokens: int, reach: int) -> tuple[int, int, int] | None:
    """first_exits for one prompt length; None if it stalls."""
    j, t, steps = (int(v[0]) for v in first_exits(plan, run, [tokens], reach))
    return None if steps < 0 else (j, t, steps)


def _classes(plan: Plan, run: FreeRun) -> tuple[int, list[int]]:
    """The period W of the restorable grid over the free run, and the
    free-run points below W whose residue class can be restored at all
    (alignment alone decides it: far from the prompt's end every bound
    holds). The obligation checks that no other point is restorable."""
    period = _qualifying_period(plan, run)
    classes = []
    for shift in range(0, period, run.period):
        for point in run.points:
            base = point + shift
            far = base + period
            if restorable(plan, far, far + 10 * period + FAR):
                classes.append(base)
    return period, classes


@dataclass(frozen=True)
class Unrolling:
    """How far the obligation looks: `tail` steps after the exit, `backoffs`
    candidates per residue class of the free run, and the window below L
    where the exit lies (`window` tokens, `window_points` free-run points)."""

    tail: int
    backoffs: int
    window: int
    period: int  # W, the period of the restorable grid over the free run (_classes)
    classes: tuple[int, ...]  # the free-run points below W whose classes can be restored

    def window_points(self, run: FreeRun) -> list[int]:
        periods = -(-self.window // run.period) + 2
        return sorted(b + k * run.period for k in range(periods) for b in run.points)


def stays(plan: Plan, point, following, tokens):
    """The step from free-run point `point` ends at the next one, still in prefill."""
    return arith.all_of(step_end(plan, point, tokens).end == following, following < prefill_end(tokens, tokens))


def restored_from(plan: Plan, run: FreeRun, unrolling: Unrolling, exit_point, tokens):
    """(restored, finished) for a prompt of `tokens` that leaves the free run
    at `exit_point`: the largest restorable published end over the free run
    up to it (`free_run_best`) and the `tail` steps after it; and whether
    those steps finish the prefill."""
    best, computed = free_run_best(plan, unrolling, exit_point, tokens), exit_point
    for _ in range(unrolling.tail):
        step = step_end(plan, computed, tokens)
        published_here = arith.all_of(step.published, restorable(plan, step.end, tokens))
        best = arith.maximum(best, arith.ite(published_here, step.end, 0))
        computed = step.end
    return best, computed >= prefill_end(tokens, tokens)


def free_run_best(plan: Plan, unrolling: Unrolling, below, tokens):
    """The largest restorable point among the last `backoffs` free-run points
    at or below `below` of each restorable residue class (0: none). The lemma
    `free_run_best_is_largest` shows no other free-run point beats it."""
    best = 0
    for base in unrolling.classes:
        last = arith.floordiv(below - base, unrolling.period)
        for back in range(unrolling.backoffs):
            index = last - back
            point = base + index * unrolling.period
            found = arith.all_of(index >= 0, restorable(plan, point, tokens))
            best = arith.maximum(best, arith.ite(found, point, 0))
    return best


def free_run_best_is_largest(plan: Plan, run: FreeRun, unrolling: Unrolling):
    """Lemma: below the prefill's end, every restorable free-run point (the
    m-th of each residue) at or below any position c is at most
    `free_run_best` at c. No step of the prefill is read: restorability far
    below L depends on the residue alone, and the backoffs reach that far."""

    def formula(variant, x):
        tokens, c, m = x["L"], x["c"], x["m"]
        hypotheses = {
            "a prompt of L >= 1 tokens": tokens >= 1,
            "c before the prefill's end": arith.all_of(0 <= c, c < prefill_end(tokens, tokens)),
            "a free-run period": m >= 0,
        }
        best = free_run_best(plan, unrolling, c, tokens)
        goal = True
        for j in range(len(run.points)):
            point = run.point(j, m)
            beaten = arith.all_of(point <= c, restorable(plan, point, tokens))
            goal = arith.all_of(goal, arith.implies(beaten, point <= best))
        return Claim(hypotheses=hypotheses, goal=goal)

    return formula


def window_start(run: FreeRun, unrolling: Unrolling, tokens):
    return arith.round_down(arith.maximum(0, tokens - unrolling.window), run.period)


def law_at_exit(plan: Plan, run: FreeRun, unrolling: Unrolling):
    """The general form: find the exit among the free-run points of the
    window below L (the first whose step leaves the run), then restore as
    `restored_from` does."""

    def law(tokens):
        return restored_from(plan, run, unrolling, exit_in_window(plan, run, unrolling, tokens), tokens)[0]

    return law


def exit_in_window(plan: Plan, run: FreeRun, unrolling: Unrolling, tokens):
    """The first free-run point of the window below L whose step leaves the run."""
    offsets = unrolling.window_points(run)
    start = window_start(run, unrolling, tokens)
    points = [start + o for o in offsets]
    following = [start + o for o in offsets[1:]] + [start + offsets[-1] + run.period]
    exit_point = points[-1]
    for point, nxt in reversed(list(zip(points, following, strict=True))):
        exit_point = arith.ite(arith.negate(stays(plan, point, nxt, tokens)), point, exit_point)
    return exit_point


def _exit_hypotheses(plan: Plan, run: FreeRun, j, t, tokens):
    p = len(run.points)
    c = run.point(j, t)
    previous = arith.ite(j == 0, run.point(p - 1, t - 1), run.point(j - 1, t))
    return c, {
        "a prompt of L >= 1 tokens": tokens >= 1,
        "a point of the free run": arith.all_of(j >= 0, j <= p - 1, t >= 0),
        "the prefill leaves the free run here": arith.negate(stays(plan, c, run.next_point(j, t), tokens)),
        "and not at the point before": arith.any_of(arith.all_of(j == 0, t == 0), stays(plan, previous, c, tokens)),
    }


def obligation(plan: Plan, run: FreeRun, law, unrolling: Unrolling, residue: int, general: bool = False):
    """The law at the real exit point (see the module's docstring). With
    `general`, the law finds the exit in a window below L, and two more
    hypotheses hold of the real exit: it lies in the window (the lemma
    `no_exit_below_window`), and every window point before it stays. The
    goal also shows the exit before the prefill's end, where the lemma
    `free_run_best_is_largest` holds."""

    def formula(variant, x):
        tokens, t = x["L"], x["t"]
        c, hypotheses = _exit_hypotheses(plan, run, residue, t, tokens)
        if general:
            start = window_start(run, unrolling, tokens)
            offsets = unrolling.window_points(run)
            hypotheses["the exit lies in the window below L"] = c >= start
            following = offsets[1:] + [offsets[-1] + run.period]
            hypotheses["the window's points before the exit stay"] = arith.all_in(
                arith.implies(start + o < c, stays(plan, start + o, start + n, tokens))
                for o, n in zip(offsets, following, strict=True)
            )
        best, finished = restored_from(plan, run, unrolling, c, tokens)
        before_end = c < prefill_end(tokens, tokens)
        if general:
            # law(L) is restored_from at exit_in_window(L): equal to `best`
            # once the window finds this very exit point.
            found = exit_in_window(plan, run, unrolling, tokens) == c
            return Claim(hypotheses=hypotheses, goal=arith.all_of(finished, before_end, found))
        return Claim(hypotheses=hypotheses, goal=arith.all_of(finished, before_end, best == law(tokens)))

    return formula


def no_exit_below_window(plan: Plan, run: FreeRun, unrolling: Unrolling, residue: int):
    """Lemma: a free-run point below the window always stays in the run."""

    def formula(variant, x):
        tokens, t = x["L"], x["t"]
        c = run.point(residue, t)
        hypotheses = {
            "a prompt of L >= 1 tokens": tokens >= 1,
            "a point of the free run": t >= 0,
            "below the window": c < window_start(run, unrolling, tokens),
        }
        return Claim(hypotheses=hypotheses, goal=stays(plan, c, run.next_point(residue, t), tokens))

    return formula


def _samples(period: int, reach: int, spans: list[int]) -> list[int]:
    """Prompt lengths to screen with: every grid point of every span, and its
    neighbours, over two periods and the prefill's reach; and random ones."""
    window = 2 * period + 2 * reach
    chosen = set(range(1, 8))
    for span in set(spans):
        step = max(span, window // 12)
        for point in range(step, window, step):
            chosen.update((point - 1, point, point + 1))
    rng = random.Random(0)
    chosen.update(rng.randrange(1, 8 * window) for _ in range(40))
    return sorted(chosen)


def _screen(plan, run, law, unrolling, exits, general) -> int | None:
    """The first sampled prompt length where the obligation's goal fails
    concretely (its hypotheses hold there), or None. The samples of one
    residue are read at once, as numpy lanes."""
    failing = []
    for j in sorted({j for j, _, _ in exits.values()}):
        lengths = [tokens for tokens, (residue, _, _) in exits.items() if residue == j]
        tokens = numpy.array(lengths, dtype=numpy.int64)
        t = numpy.array([exits[n][1] for n in lengths], dtype=numpy.int64)
        claim = obligation(plan, run, law, unrolling, j, general)(plan.variant, {"L": tokens, "t": t})
        admitted = arith.all_of(*claim.hypotheses.values())
        fails = numpy.broadcast_to(arith.all_of(admitted, arith.negate(claim.goal)), tokens.shape)
        failing += [int(n) for n in tokens[fails]]
    return min(failing, default=None)


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


VARIABLES = (Var("L", Kind.INT), Var("t", Kind.INT))
LEMMA_VARIABLES = (Var("L", Kind.INT), Var("c", Kind.INT), Var("m", Kind.INT))


def _decide_all(formulas, variant, rlimit, strategies=("linear",)) -> Outcome:
    """`formulas`: (formula, its variables, instead) triples, decided in
    order until one is not PROVED. `instead`: for an obligation whose
    hypotheses turn out to contradict each other (VACUOUS), the claim that
    proves the case needs none (or None). An obligation left UNKNOWN is
    posed again under each further strategy of `strategies`."""
    outcomes = []
    for formula, variables, instead in formulas:
        # A hypothesis a sibling obligation showed needed is in the joined report anyway.
        known = {h for o in outcomes for h in o.hypotheses_used if h not in o.hypotheses_unconfirmed}
        for strategy in strategies:
            options = SolverOptions(rlimit=rlimit, strategy=strategy, known_needed=tuple(sorted(known)))
            outcome = decide(formula, variables, variant, options)
            if outcome.verdict == VACUOUS and instead is not None:
                outcome = decide(instead, variables, variant, options)
            if outcome.verdict != UNKNOWN:
                break
        outcomes.append(outcome)
        if outcome.verdict != PROVED:
            return outcome
    return _joined(outcomes)


def never_leaves_at(plan: Plan, run: FreeRun, residue: int):
    """No prompt length leaves the free run at a point of this residue (with
    the point before staying): then the residue's obligation has nothing to
    show. Its hypotheses hold of every L and point, so it is never vacuous."""

    def formula(variant, x):
        tokens, t = x["L"], x["t"]
        _, hypotheses = _exit_hypotheses(plan, run, residue, t, tokens)
        exits_here = arith.all_of(
            hypotheses.pop("the prefill leaves the free run here"), hypotheses.pop("and not at the point before")
        )
        return Claim(hypotheses=hypotheses, goal=arith.negate(exits_here))

    return formula


@dataclass(frozen=True)
class Setting:
    """What the obligations of one deployment are built from."""

    plan: Plan
    run: FreeRun
    unrolling: Unrolling
    exits: dict  # sampled prompt length -> first_exit(...)


def prepare(plan: Plan) -> Setting | str:
    """The free run and the unrolling sizes, or why there is nothing to prove over."""
    run = free_run(plan)
    if run is None:
        return "the prefill stalls or never returns to its grid"
    if len(run.points) > MAX_PERIOD_STOPS:
        return (
            f"the free run stops {len(run.points):,} times before it is back on its grid: more than "
            f"{MAX_PERIOD_STOPS} to prove the law over"
        )
    if _qualifying_period(plan, run) // run.period * len(run.points) > MAX_FREE_RUN_POINTS:
        return f"the restorable grid repeats only after more than {MAX_FREE_RUN_POINTS:,} free-run points"
    period, classes = _classes(plan, run)
    if len(classes) > MAX_CLASSES:
        return f"{len(classes)} restorable residue classes of the free run: more than {MAX_CLASSES}"
    d = plan.geometry.deployment
    split = plan.split
    # How far below L the stops can reach: the budget, two grid steps of the
    # split, the hash block and the EAGLE spans, the lookahead, one period.
    stops = [split.block, split.hash_block, plan.cadence, *plan.geometry.eagle_spans()]
    window = d.max_num_scheduled_tokens + 2 * max(stops) + split.lookahead + run.period
    spans = [*stops, *plan.target_spans]
    samples = _samples(period, window, spans)
    exits = {}
    for tokens, j, t, steps in zip(samples, *first_exits(plan, run, samples, 4 * window), strict=True):
        if steps < 0:
            return f"a prompt of {tokens} tokens stalls in prefill"
        exits[tokens] = (int(j), int(t), int(steps))
    tail = max(steps for _, _, steps in exits.values())
    if tail > 64:
        return f"the prefill's end takes {tail} steps: too many to unroll"
    backoffs = 1 + -(-(window + max(spans)) // period)
    return Setting(plan, run, Unrolling(tail, backoffs, window, period, tuple(classes)), exits)


def decide_law(setting: Setting, law, general: bool = False, rlimit: int = RLIMIT) -> Outcome:
    """Z3's verdict on `law` (tokens -> restored tokens) for every prompt length."""
    plan, run, unrolling = setting.plan, setting.run, setting.unrolling
    residues = range(len(run.points))
    formulas = [
        (obligation(plan, run, law, unrolling, j, general), VARIABLES, never_leaves_at(plan, run, j)) for j in residues
    ]
    if general:
        formulas = [(no_exit_below_window(plan, run, unrolling, j), VARIABLES, None) for j in residues] + formulas
    lemma = (free_run_best_is_largest(plan, run, unrolling), LEMMA_VARIABLES, None)
    # The general form's queries are the largest: one Z3 leaves undecided
    # under the linear tactics is posed again to Z3's default solver.
    strategies = ("linear", "default") if general else ("linear",)
    return _decide_all([lemma, *formulas], plan.variant, rlimit, strategies)


def _longer(setting: Setting, outcome: Outcome) -> Setting | None:
    """The setting with more steps unrolled, when a refutation's prompt
    length needs more steps after its exit than were unrolled (the samples
    that sized the unrolling missed it); else None."""
    tokens = (outcome.counterexample or {}).get("L")
    if outcome.verdict != "REFUTED" or not isinstance(tokens, int) or tokens < 1:
        return None
    found = first_exit(setting.plan, setting.run, tokens, 4 * setting.unrolling.window)
    if found is None or found[2] <= setting.unrolling.tail or found[2] > 64:
        return None
    unrolling = replace(setting.unrolling, tail=found[2])
    return replace(setting, unrolling=unrolling, exits={**setting.exits, tokens: found})


def prove_hit_law(plan: Plan, rlimit: int = RLIMIT) -> HitLaw:
    setting = prepare(plan)
    if isinstance(setting, str):
        return HitLaw(False, None, "", reason=setting)
    outcome = None
    attempts = []
    for name in ("lcp", "lcp-or-grid", "exit"):
        general = name == "exit"
        for _ in range(3):
            run, unrolling = setting.run, setting.unrolling
            law = {
                "lcp": lambda n: law_lcp(plan, n),
                "lcp-or-grid": law_lcp_or_grid(plan, run),
                "exit": law_at_exit(plan, run, unrolling),
            }[name]
            screen = _screen(plan, run, law, unrolling, setting.exits, general)
            if screen is not None:
                outcome = Outcome(
                    "REFUTED", counterexample={"L": screen}, reason=f"the {name} form fails at L = {screen}"
                )
            else:
                outcome = decide_law(setting, law, general, rlimit if general else SIMPLE_RLIMIT)
            if outcome.verdict == PROVED:
                form = describe_exit_law(run, unrolling) if general else render(law)
                return HitLaw(
                    True, outcome, form, law=law, tail_steps=unrolling.tail, free_run=run, extra={"form": name}
                )
            longer = _longer(setting, outcome)
            if longer is None:
                break
            setting = longer
        attempts.append(f"{name}: {outcome.verdict}" + (f" ({outcome.reason})" if outcome.reason else ""))
    reason = f"no form proved ({'; '.join(attempts)})"
    return HitLaw(False, outcome, "", free_run=setting.run, tail_steps=setting.unrolling.tail, reason=reason)


def describe_exit_law(run: FreeRun, unrolling: Unrolling) -> str:
    return (
        f"the largest restorable published end of the prefill, where the prefill follows the free run "
        f"{', '.join(f'{b:,}' for b in run.points)} (+ k·{run.period:,}) up to its first exit c*(L) "
        f"≥ ⌊max(0, L − {unrolling.window:,})/{run.period:,}⌋·{run.period:,}, then at most {unrolling.tail} "
        f"steps (hitlaw.law_at_exit: a finite composition of the model's step, publication and restore)"
    )


# --- printing a closed form -------------------------------------------------------------------------


def render(law) -> str:
    """The law read with Z3's own division on a symbolic L (exact here: every
    divisor is a positive constant), printed with floors, max and min."""
    ctx = z3.Context()
    tokens = z3.Int("L", ctx)
    with arith.symbolic_context(naive=True):
        term = law(tokens)
    return _text(arith.as_term(term, ctx))


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
        picked = _picks(cond, a, b)
        if picked == "max":
            return f"max({_text(b)}, {_text(a)})" if z3.is_int_value(b) else f"max({_text(a)}, {_text(b)})"
        if picked == "min":
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


def _picks(cond, a, b) -> str | None:
    """ "max" for If(a > b, a, b) and its mirror forms, "min" for If(a < b, a, b), else None."""
    if not (z3.is_app(cond) and cond.num_args() == 2):
        return None
    x, y = cond.children()
    greater = cond.decl().kind() in (z3.Z3_OP_GT, z3.Z3_OP_GE)
    less = cond.decl().kind() in (z3.Z3_OP_LT, z3.Z3_OP_LE)
    same, swapped = x.eq(a) and y.eq(b), x.eq(b) and y.eq(a)
    if greater and same or less and swapped:
        return "max"
    if less and same or greater and swapped:
        return "min"
    return None


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


SCANNED_FOR_SMALLEST_HIT = 1 << 21


def smallest_hit(law: HitLaw) -> int | None:
    """The smallest L whose law is positive, None if none is: the law
    evaluated on every L from 1 on (numpy lanes, in growing blocks) up to
    SCANNED_FOR_SMALLEST_HIT, then Z3's optimiser on the law read with
    constant divisors for any L beyond. Replayed on the law as ints."""
    start, size = 1, 1 << 12
    found = None
    while start <= SCANNED_FOR_SMALLEST_HIT:
        lengths = numpy.arange(start, start + size, dtype=numpy.int64)
        hits = numpy.flatnonzero(numpy.broadcast_to(law.law(lengths), lengths.shape) > 0)
        if hits.size:
            found = int(lengths[hits[0]])
            break
        start, size = start + size, 2 * size
    if found is None:
        ctx = z3.Context()
        tokens = z3.Int("L", ctx)
        with arith.symbolic_context(naive=True):
            term = arith.as_term(law.law(tokens), ctx)
        optimiser = z3.Optimize(ctx=ctx)
        optimiser.add(tokens >= start, term > 0)
        optimiser.minimize(tokens)
        if optimiser.check() != z3.sat:
            return None
        found = optimiser.model()[tokens].as_long()
    if law(found) <= 0 or (found > 1 and law(found - 1) > 0):
        raise AssertionError(f"smallest hit {found} does not replay on the law")
    return found
