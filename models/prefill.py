"""A request's whole prefill under a budget: chunk ends, and which recurrent
states they leave private or publish (vLLM 0.33.0 `MambaManager.allocate_new_blocks`,
single_type_kv_cache_manager.py:1797-1923: a chunk ending at a multiple of R
publishes its state, any other end leaves it private), and the state slots that
hold them."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace

from models import arith
from models.errors import GridproofError
from models.plan import Plan
from models.positions import Positions
from models.scheduler import SplitCall, prefill_end, split
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


def prefill_step(variant: Variant, params, cadence, computed, budget, prompt, tokens, split_function=None) -> Step:
    """One scheduler step of a request's prefill, with ints or Z3 terms: it
    requests min(budget, N - c) tokens and the split clips them. Past the
    prefill's end the step computes nothing and publishes nothing.
    `split_function(params, call)` replaces the model's split (conformance)."""
    in_prefill = computed < prefill_end(prompt, tokens)
    requested = arith.minimum(budget, tokens - computed)
    call = SplitCall(computed=computed, requested=requested, prompt=prompt, tokens=tokens)
    scheduled = split(variant, params, call) if split_function is None else split_function(params, call)
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

    A prefill of more than `condense_beyond` steps (None: never) is condensed:
    once the budget is settled, far enough from the request's end that no stop
    near it is in reach, the step reads the position only through its residues
    modulo the grid sizes of the plan. When a chunk starts at the same residue
    modulo their lcm as an earlier one, the chunks between repeat exactly up to
    that distance from the end, and the run jumps there (`Trace.repeat`) and
    steps on to the end."""
    budgets = [budgets] if isinstance(budgets, int) else list(budgets)
    if not budgets:
        raise BudgetError("budget: at least one value is needed")
    for b in budgets:
        if b <= 0:
            raise BudgetError(f"budget: every budget must be a positive integer, got {b}")
    request = plan.geometry.request
    prompt = request.prompt_tokens if prompt_tokens is None else prompt_tokens
    outputs = request.output_tokens if output_tokens is None else output_tokens
    tokens = prompt + outputs
    trace = Trace(plan=plan)
    grid = grid_period(plan)
    # Every stop near the end (last cacheable position, its EAGLE conversion, the prompt's hash tail)
    # lies within three grids and the lookahead of it.
    far = min(prompt, tokens - 1) - (4 * grid + 2 * max(budgets) + plan.split.lookahead + 2)
    # Condensing reads the model's split only: another split function (the real one) is run step by step.
    condense = condense_beyond is not None and steps is None and split_function is None
    seen: dict[int, tuple[int, int]] | None = {} if condense else None
    computed = 0
    step = 0
    while computed < prefill_end(prompt, tokens) and (steps is None or step < steps):
        if len(trace.chunks) >= max_steps:
            raise BudgetError(
                f"{plan.geometry.source or plan.geometry.name}: a prefill of {tokens:,} tokens takes more than "
                f"{max_steps:,} steps without repeating (grid {grid:,}); too long to simulate step by step"
            )
        if seen is not None and step >= len(budgets) - 1 and computed <= far:
            residue = computed % grid
            if residue in seen:
                first, start = seen[residue]
                advance, length = computed - start, len(trace.chunks) - first
                times = (far - computed) // advance
                if times > 0 and step + times * length > condense_beyond:
                    trace.repeat = Repeat(first=first, length=length, times=times, tokens=advance)
                    computed += times * advance
                    step += times * length
                    seen = None
                    continue
            else:
                seen[residue] = (len(trace.chunks), computed)
        s = prefill_step(
            plan.variant,
            plan.split,
            plan.cadence,
            computed,
            budgets[min(step, len(budgets) - 1)],
            prompt,
            tokens,
            split_function,
        )
        trace.chunks.append(
            Chunk(
                step=step,
                start=computed,
                requested=s.requested,
                end=s.end,
                published=s.published,
                column=state_column(s.end, plan.cadence),
            )
        )
        if s.end == computed and step >= len(budgets) - 1:
            trace.stalled_at = step  # every later step repeats this one exactly
            break
        computed = s.end
        step += 1
    return trace


def grid_period(plan: Plan) -> int:
    """A common multiple of every grid size the step and the restore read, so a shift by it changes no residue.
    The scheduler block is the lcm of every group's span: the cadence, the target and EAGLE spans and, among
    their divisors, the split block. The offload connector's chunks are spans times its blocks per chunk."""
    p = plan.split
    offload_chunks = plan.geometry.deployment.offload_blocks_per_chunk * p.sched_block
    return math.lcm(*(s for s in (offload_chunks, p.hash_block, p.checkpoint_alignment) if s > 0))
