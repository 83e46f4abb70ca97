"""A request's whole prefill under a budget: chunk ends, and which recurrent
states they leave private or publish (vllm-align-mode.md section 5,
pr457-model.md items 3-4), and the state slots that hold them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from models import arith
from models.errors import GridproofError
from models.plan import Plan
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


@dataclass
class Trace:
    plan: Plan
    chunks: list[Chunk] = field(default_factory=list)
    stalled_at: int | None = None  # a step that made no progress, with no later budget that could

    @property
    def chunk_ends(self) -> list[int]:
        return [c.end for c in self.chunks if c.end > c.start]

    @property
    def published(self) -> list[int]:
        return [c.end for c in self.chunks if c.published]

    @property
    def private(self) -> list[int]:
        return [c.end for c in self.chunks if c.end > c.start and not c.published]


class BudgetError(GridproofError):
    pass


def run_prefill(
    plan: Plan,
    budgets: Sequence[int] | int,
    prompt_tokens: int | None = None,
    output_tokens: int | None = None,
    max_steps: int = 1_000_000,
    steps: int | None = None,
    split_function=None,
) -> Trace:
    """Drive a fresh request's prefill. `budgets` is one budget per step (the
    last repeats) or a single budget. `steps` stops the run after that many
    steps, as the catalogue's bounded unrolling does; otherwise a prefill that
    needs more than `max_steps` is an error."""
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
    computed = 0
    step = 0
    while computed < prefill_end(prompt, tokens) and (steps is None or step < steps):
        if step >= max_steps:
            raise BudgetError(f"prefill did not finish within {max_steps} steps")
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
