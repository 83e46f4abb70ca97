"""What `simulate` reports a later identical request restores (its `reuse`),
for every prompt length 1..N in one pass.

`simulate` runs one prefill per prompt length: `models.prefill.run_prefill`
steps `prefill_step` until the prefill's end, then `gpu_restore` takes the
largest published end its test accepts. Here the same functions run once per
step on numpy arrays, one lane per prompt length (models/arith.py reads them
lane by lane), so every length up to 200,000 costs a few hundred array steps
instead of 200,000 prefills. tests/test_every_length.py checks the lanes
against `simulate` itself.
"""

from __future__ import annotations

import numpy

from models.plan import Plan
from models.prefill import prefill_step
from models.reuse import published_gpu_restorable
from models.scheduler import prefill_end


def gpu_reuse_every_length(plan: Plan, budget: int, up_to: int, first: int = 1) -> numpy.ndarray:
    """reuse[i]: what a later identical request restores after a fresh
    prefill of a prompt of `first + i` tokens (and the geometry's output
    tokens, as `simulate` counts them), under one `budget`.
    A prompt length whose prefill stalls restores what it published before
    the stall, as in `run_prefill`, whose later steps would repeat the stall."""
    prompt = numpy.arange(first, up_to + 1, dtype=numpy.int64)
    tokens = prompt + plan.geometry.request.output_tokens
    computed = numpy.zeros_like(tokens)
    best = numpy.zeros_like(tokens)
    split, eagle_spans = plan.split, plan.geometry.eagle_spans()
    end_of_prefill = prefill_end(prompt, tokens)
    while True:
        active = computed < end_of_prefill
        if not active.any():
            return best
        step = prefill_step(plan.variant, split, plan.cadence, computed, budget, prompt, tokens)
        end = numpy.broadcast_to(step.end, tokens.shape)
        if not (end[active] > computed[active]).any():
            return best  # every lane still in prefill stalls: no later step publishes
        restorable = published_gpu_restorable(
            end, plan.target_spans, eagle_spans, split.eagle_drop, split.lookahead, tokens, tokens
        )
        best = numpy.where(numpy.logical_and(step.published, restorable), numpy.maximum(best, end), best)
        computed = end
