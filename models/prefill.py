"""A request's whole prefill under a budget: chunk ends, and which recurrent
states they leave private or publish (vLLM 0.33.0 `MambaManager.allocate_new_blocks`,
single_type_kv_cache_manager.py:1797-1923: a chunk ending at a multiple of R
publishes its state, any other end leaves it private), and the state slots that
hold them."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace

from models import arith
from models.errors import GridproofError
from models.plan import Plan
from models.positions import Positions
from models.scheduler import SplitCall, prefill_end, reserve_prefill_lookahead, split
from models.variants import Variant


def publishes(end, cadence, tokens):
    """A chunk ending at `end` publishes the recurrent state there (section 5)."""
    return arith.all_of(end > 0, arith.divides(cadence, end), end <= tokens)


def state_column(end, cadence):
    """The slot that holds the state after `end` tokens: cdiv(end, R) - 1."""
    return arith.cdiv(end, cadence) - 1


def initial_state_column(variant: Variant, computed, cadence):
    """The slot a request starting at `computed` reads its initial state from:
    (c - 1) // R for a fresh (-1: none) or resumed request (mamba_utils.py).
    Every variant reads the same slot."""
    return arith.floordiv(computed - 1, cadence)


@dataclass(frozen=True)
class Step:
    requested: object
    end: object  # the start, when the step is past the prefill's end
    published: object


def prefill_step(
    variant: Variant, params, cadence, computed, budget, prompt, tokens, split_function=None, prefill_lookahead=0
) -> Step:
    """One scheduler step of a request's prefill, with ints or Z3 terms: it
    requests min(budget, N - c) tokens, the split clips them, and a multi-module
    MTP's prefill lookahead (`prefill_lookahead`, the plan's) may cut them back. Past the
    prefill's end the step computes nothing and publishes nothing.
    `split_function(params, call)` replaces the model's split (conformance)."""
    in_prefill = computed < prefill_end(prompt, tokens)
    requested = arith.minimum(budget, tokens - computed)
    call = SplitCall(computed=computed, requested=requested, prompt=prompt, tokens=tokens)
    scheduled = split(variant, params, call) if split_function is None else split_function(params, call)
    scheduled = reserve_prefill_lookahead(prefill_lookahead, call, scheduled)
    end = computed + arith.ite(in_prefill, scheduled, 0)
    published = arith.all_of(in_prefill, scheduled > 0, publishes(end, cadence, tokens))
    return Step(requested=requested, end=end, published=published)


@dataclass(frozen=True)
class Chunk:
    step: int
    start: int
    requested: int
    end: int
    published: bool
    column: int  # state slot written


@dataclass(frozen=True)
class Repeat:
    """A condensed stretch of a long prefill: the chunks `chunks[first:first + length]`
    happen `times` more times right after their first occurrence, each time
    `tokens` tokens and `length` steps further on."""

    first: int
    length: int
    times: int
    tokens: int


@dataclass
class Trace:
    plan: Plan
    chunks: list[Chunk] = field(default_factory=list)  # every chunk, except the repeats `repeat` stands for
    stalled_at: int | None = None  # a step that made no progress, with no later budget that could
    repeat: Repeat | None = None

    @property
    def steps(self) -> int:
        return len(self.chunks) + (self.repeat.length * self.repeat.times if self.repeat else 0)

    def every_chunk(self) -> Iterator[Chunk]:
        """Every chunk in order, the repeats spelled out (as many as `steps`)."""
        r = self.repeat
        if r is None:
            yield from self.chunks
            return
        yield from self.chunks[: r.first + r.length]
        for k in range(1, r.times + 1):
            for c in self.chunks[r.first : r.first + r.length]:
                yield _shifted(c, k * r.length, k * r.tokens, self.plan.cadence)
        yield from self.chunks[r.first + r.length :]

    def _positions(self, keep) -> Positions:
        r = self.repeat
        ranges = []
        for i, c in enumerate(self.chunks):
            if keep(c):
                repeats = r.times if r is not None and r.first <= i < r.first + r.length else 0
                every = r.tokens if repeats else 1
                ranges.append(range(c.end, c.end + every * (repeats + 1), every))
        return Positions(ranges)

    def chunk_positions(self, position_of) -> Positions:
        """`position_of(chunk, next_end)` of every chunk that made progress, `next_end` the end of
        the chunk after it (None for the last), gathered as positions. Over a condensed stretch
        it is evaluated on the first repetitions and the last, and where it moves with the chunks
        (`position_of` of a chunk shifted by the stretch's tokens is shifted by as many) the
        positions of the repetitions in between are a range; where it does not, every chunk is
        spelled out."""
        r = self.repeat
        if r is None:
            return self._positions_one_by_one(position_of, self.chunks)
        found: list[range] = []
        singles: set[int] = set()

        def at(chunk: Chunk, next_end) -> None:
            if chunk.end > chunk.start and (p := position_of(chunk, next_end)) is not None:
                singles.add(p)

        cycle = self.chunks[r.first : r.first + r.length]
        before, after = self.chunks[: r.first], self.chunks[r.first + r.length :]
        for i, c in enumerate(before):
            at(c, (before[i + 1] if i + 1 < len(before) else cycle[0]).end)
        for i, c in enumerate(cycle):
            shifted_next = (
                cycle[i + 1].end
                if i + 1 < len(cycle)
                else _shifted(cycle[0], r.length, r.tokens, self.plan.cadence).end
            )
            first, second = position_of(c, shifted_next), None
            if r.times >= 2:
                twice = _shifted(c, r.length, r.tokens, self.plan.cadence)
                second = position_of(twice, None if shifted_next is None else shifted_next + r.tokens)
                if (first is None) != (second is None) or (first is not None and second != first + r.tokens):
                    # Not a range over the repetitions (a faulty split's stretch may repeat its chunks and
                    # not what they key): every chunk spelled out, as the explicit run would give them.
                    return self._positions_one_by_one(position_of, list(self.every_chunk()))
            if first is not None and c.end > c.start:
                found.append(range(first, first + r.tokens * r.times, r.tokens))
            last = _shifted(c, r.length * r.times, r.tokens * r.times, self.plan.cadence)
            if i + 1 < len(cycle):
                last_next = cycle[i + 1].end + r.tokens * r.times
            else:
                last_next = after[0].end if after else None
            at(last, last_next)
        for i, c in enumerate(after):
            at(c, after[i + 1].end if i + 1 < len(after) else None)
        return Positions(found).union(Positions.of(sorted(singles)))

    @staticmethod
    def _positions_one_by_one(position_of, chunks: list[Chunk]) -> Positions:
        chunks = [c for c in chunks if c.end > c.start]
        nexts = [c.end for c in chunks[1:]] + [None] if chunks else []
        return Positions.of(
            sorted({p for c, n in zip(chunks, nexts, strict=True) if (p := position_of(c, n)) is not None})
        )

    def chunks_ending_within(self, low: int, high: int) -> list[Chunk]:
        """Every chunk whose end lies in [low, high], the repeats spelled out (a few at most, for a
        window of a few blocks)."""
        found = [c for c in self.chunks if low <= c.end <= high]
        r = self.repeat
        if r is not None:
            for c in self.chunks[r.first : r.first + r.length]:
                first = max(1, -((c.end - low) // r.tokens))  # the least repetition ending at or after low
                for times in range(first, r.times + 1):
                    if c.end + times * r.tokens > high:
                        break
                    found.append(_shifted(c, times * r.length, times * r.tokens, self.plan.cadence))
        return sorted(found, key=lambda c: c.step)

    @property
    def chunk_ends(self) -> Positions:
        return self._positions(lambda c: c.end > c.start)

    @property
    def published(self) -> Positions:
        return self._positions(lambda c: c.published)

    @property
    def private(self) -> Positions:
        return self._positions(lambda c: c.end > c.start and not c.published)


def _shifted(chunk: Chunk, steps: int, tokens: int, cadence: int) -> Chunk:
    end = chunk.end + tokens
    return replace(
        chunk, step=chunk.step + steps, start=chunk.start + tokens, end=end, column=state_column(end, cadence)
    )


class BudgetError(GridproofError):
    pass


# A prefill longer than this many steps is condensed where it repeats (Trace.repeat); one that
# does not settle into a repeating pattern within MAX_STEPS explicit steps is refused.
CONDENSE_BEYOND = 10_000
MAX_STEPS = 100_000


def run_prefill(
    plan: Plan,
    budgets: Sequence[int] | int,
    prompt_tokens: int | None = None,
    output_tokens: int | None = None,
    max_steps: int = MAX_STEPS,
    steps: int | None = None,
    split_function=None,
    condense_beyond: int | None = CONDENSE_BEYOND,
) -> Trace:
    """Drive a fresh request's prefill. `budgets` is one budget per step (the
    last repeats) or a single budget. `steps` stops the run after that many
    steps, as the catalogue's bounded unrolling does; otherwise a prefill that
    needs more than `max_steps` explicit steps is an error.

    A prefill that would resume stepping beyond step `condense_beyond` (None:
    never condense) is condensed. Once the budget is settled, a chunk that
    starts at the same residue modulo `grid_period` as an earlier one closes a
    candidate cycle; the cycle is repeated as many times as the steps taken
    from its repetitions' starts reproduce it, within the prompt
    (`_repetitions`), and the run jumps past them (`Trace.repeat`) and steps on
    to the end."""
    budgets = _checked_budgets(budgets)
    request = plan.geometry.request
    prompt = request.prompt_tokens if prompt_tokens is None else prompt_tokens
    outputs = request.output_tokens if output_tokens is None else output_tokens
    tokens = prompt + outputs
    run = PrefillSteps(plan, budgets, prompt, tokens, split_function)
    settled = run.settled
    trace = Trace(plan=plan)
    grid = grid_period(plan)
    # Condensing reads the model's split only: another split function (the real one) is run step by step.
    condense = condense_beyond is not None and steps is None and split_function is None
    first_at: dict[int, int] | None = {} if condense else None  # residue of a chunk's start -> its index
    computed = 0
    step = 0
    while computed < prefill_end(prompt, tokens) and (steps is None or step < steps):
        if len(trace.chunks) >= max_steps:
            raise BudgetError(
                f"{plan.geometry.label}: a prefill of {tokens:,} tokens takes more than "
                f"{max_steps:,} steps without repeating (grid {grid:,}); too long to simulate step by step"
            )
        if first_at is not None and step >= settled:
            residue = computed % grid
            if residue in first_at:
                repeat = run.repeat_from(trace.chunks, first_at[residue], step, computed, condense_beyond)
                if repeat is not None:
                    trace.repeat = repeat
                    computed += repeat.times * repeat.tokens
                    step += repeat.times * repeat.length
                    first_at = None
                    continue
            else:
                first_at[residue] = len(trace.chunks)
        chunk = run.chunk_at(step, computed)
        trace.chunks.append(chunk)
        if chunk.end == computed and step >= settled:
            trace.stalled_at = step  # every later step repeats this one exactly
            break
        computed = chunk.end
        step += 1
    return trace


def _checked_budgets(budgets: Sequence[int] | int) -> list[int]:
    """The budgets as a list, one at least and each positive (else BudgetError)."""
    budgets = [budgets] if isinstance(budgets, int) else list(budgets)
    if not budgets:
        raise BudgetError("budget: at least one value is needed")
    for b in budgets:
        if b <= 0:
            raise BudgetError(f"budget: every budget must be a positive integer, got {b}")
    return budgets


@dataclass(frozen=True)
class PrefillSteps:
    """The steps of one request's prefill under its budgets: the chunk the run takes from any start
    (`chunk_at`), and how often a cycle of them repeats (`repeat_from`)."""

    plan: Plan
    budgets: list[int]  # one per step, the last repeating
    prompt: int
    tokens: int  # the prompt's and the outputs'
    split_function: object = None  # `split_function(params, call)`: another split than the model's

    @property
    def settled(self) -> int:
        """The first step whose budget every later step keeps."""
        return len(self.budgets) - 1

    def chunk_at(self, step: int, computed: int) -> Chunk:
        """The chunk of step `step`, starting at `computed` tokens."""
        plan = self.plan
        s = prefill_step(
            plan.variant,
            plan.split,
            plan.cadence,
            computed,
            self.budgets[min(step, self.settled)],
            self.prompt,
            self.tokens,
            self.split_function,
            plan.prefill_lookahead,
        )
        return Chunk(step, computed, s.requested, s.end, s.published, state_column(s.end, plan.cadence))

    def repeat_from(
        self, chunks: list[Chunk], first: int, step: int, computed: int, condense_beyond: int
    ) -> Repeat | None:
        """The repeat of the cycle `chunks[first:]`, which the run at `step` and `computed` tokens closes,
        taking the run beyond step `condense_beyond` (`_repetitions`); None where it repeats too few times."""
        cycle = chunks[first:]
        # The fewest repetitions that take the run beyond step condense_beyond.
        least = max(1, (condense_beyond - step) // len(cycle) + 1)
        times = _repetitions(cycle, self.chunk_at, min(self.prompt, self.tokens), self.plan.cadence, least)
        if not times:
            return None
        return Repeat(first=first, length=len(cycle), times=times, tokens=computed - cycle[0].start)


def _repetitions(cycle: list[Chunk], chunk_at, bound: int, cadence: int, least: int) -> int:
    """How many times, at least `least`, the consecutive chunks `cycle` repeat
    right after themselves, each repetition ending by `bound` tokens: a
    repetition is the cycle shifted by its steps and tokens, and it counts when
    every shifted chunk is the one the run takes from its start (`chunk_at`).
    0 when fewer than `least` do.

    A shift moves every position of the cycle by the same amount against the
    request's own positions (its end, its last cacheable position), so whether
    a stop near the end is in reach only changes once along the shifts: a
    cycle that repeats k times repeats every smaller number of times, and the
    count is found bit by bit, the highest first. proofs/catalog/loops.py checks the result
    against the explicit run."""
    length, advance = len(cycle), cycle[-1].end - cycle[0].start
    most = (bound - cycle[-1].end) // advance

    def repeats(times: int) -> bool:
        shifted = (_shifted(c, times * length, times * advance, cadence) for c in cycle)
        return times <= most and all(chunk_at(c.step, c.start) == c for c in shifted)

    if not repeats(least):
        return 0
    times = least
    for bit in reversed(range(most.bit_length())):
        if repeats(times + (1 << bit)):
            times += 1 << bit
    return times


def grid_period(plan: Plan) -> int:
    """A common multiple of every grid size the step and the restore read away from the request's end, so a
    shift by it there changes no residue: the scheduler block is the lcm of every group's span (the cadence,
    the target and EAGLE spans and, among their divisors, the split block), and the offload connector's chunks
    are spans times its blocks per chunk. The hash block and the checkpoint alignment are read only by stops
    at the end (the prompt's hash tail, the internal checkpoint of the chunk that reaches the prefill's end)."""
    p = plan.split
    return plan.geometry.deployment.offload_blocks_per_chunk * p.sched_block
