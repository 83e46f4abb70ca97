"""A request's whole prefill under a budget: chunk ends, and which recurrent
states they leave private or publish (vllm-align-mode.md section 5,
pr457-model.md items 3-4), and the state slots that hold them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from models import arith
from models.plan import Plan
from models.scheduler import SplitCall, split
from models.variants import Variant


def publishes(end, cadence, tokens):
    """A chunk ending at `end` publishes the recurrent state there (section 5)."""
    return arith.all_of(end > 0, arith.divides(cadence, end), end <= tokens)


def state_column(end, cadence):
    """The slot that holds the state after `end` tokens: cdiv(end, R) - 1."""
    return arith.cdiv(end, cadence) - 1


def initial_state_column(variant: Variant, computed, cadence):
    """The slot a request starting at `computed` reads its initial state from:
    (c - 1) // R for a fresh (-1: none) or resumed request (mamba_utils.py)."""
    if variant.mutation == "slot-off-by-one":
        return arith.floordiv(computed, cadence)
    return arith.floordiv(computed - 1, cadence)


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


class BudgetError(ValueError):
    pass


def run_prefill(
    plan: Plan,
    budgets: Sequence[int] | int,
    prompt_tokens: int | None = None,
    output_tokens: int | None = None,
    max_steps: int = 1_000_000,
) -> Trace:
    """Drive a fresh request's prefill. `budgets` is one budget per step (the
    last repeats) or a single budget; each step schedules min(budget, N - c)
    tokens, clipped by the split."""
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
    prefill_end = max(prompt, tokens - 1)
    trace = Trace(plan=plan)
    computed = 0
    step = 0
    while computed < prefill_end:
        if step >= max_steps:
            raise BudgetError(f"prefill did not finish within {max_steps} steps")
        budget = budgets[min(step, len(budgets) - 1)]
        requested = min(budget, tokens - computed)
        call = SplitCall(computed=computed, requested=requested, prompt=prompt, tokens=tokens)
        scheduled = split(plan.variant, plan.split, call)
        end = computed + scheduled
        trace.chunks.append(
            Chunk(
                step=step,
                start=computed,
                requested=requested,
                end=end,
                published=publishes(end, plan.cadence, tokens) and scheduled > 0,
                column=state_column(end, plan.cadence),
            )
        )
        if scheduled == 0 and step >= len(budgets) - 1:
            trace.stalled_at = step  # every later step repeats this one exactly
            break
        computed = end
        step += 1
    return trace
