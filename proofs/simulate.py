"""`gridproof simulate`: one prefill, readable or as JSON."""

from __future__ import annotations

from models.geometry import Geometry
from models.plan import checked_plan
from models.positions import Positions
from models.prefill import Trace, initial_state_column, run_prefill
from models.reuse import gpu_restore, offload_restore
from models.variants import Variant

SHOWN = 6  # positions listed at each end of a condensed prefill's summary


def simulate(variant: Variant, geometry: Geometry, budgets, prompt_tokens: int | None = None) -> dict:
    plan = checked_plan(variant, geometry)
    trace = run_prefill(plan, budgets, prompt_tokens=prompt_tokens)
    request = geometry.request
    prompt = request.prompt_tokens if prompt_tokens is None else prompt_tokens
    tokens = prompt + request.output_tokens
    eagle_spans = geometry.eagle_spans()
    restored = gpu_restore(
        trace.published,
        plan.target_spans,
        eagle_spans,
        plan.split.eagle_drop,
        plan.split.lookahead,
        tokens,
        tokens,
    )
    offloaded = offload_restore(
        trace.published,
        plan.cadence,
        plan.target_spans,
        eagle_spans,
        geometry.deployment.offload_blocks_per_chunk,
        tokens,
        tokens,
    )
    dcp = geometry.deployment.dcp_size
    groups = []
    for group in geometry.groups:
        span = plan.cadence if group.kind == "recurrent" else group.span(dcp)
        groups.append(
            {
                "kind": group.kind,
                "span": span,
                "eagle": group.eagle,
                "count": group.count,
                "chunk_ends_on_boundary": positions_json(trace.chunk_ends.multiples_of(span)),
                "published_on_boundary": positions_json(trace.published.multiples_of(span)),
            }
        )
    return {
        "variant": variant.name,
        "geometry": geometry.name,
        "prompt_tokens": prompt,
        "tokens": tokens,
        "budgets": [budgets] if isinstance(budgets, int) else list(budgets),
        "cadence": plan.cadence,
        "split_block": plan.split.block,
        "target_spans": list(plan.target_spans),
        "chunk_ends": positions_json(trace.chunk_ends),
        "published": positions_json(trace.published),
        "private": positions_json(trace.private),
        "step_count": trace.steps,
        "steps": _steps_json(trace),
        "stalled_at_step": trace.stalled_at,
        "groups": groups,
        "reuse": restored,
        "reuse_offload": offloaded,
        "resume_state_column": initial_state_column(variant, restored, plan.cadence) if restored else None,
    }


def positions_json(positions: Positions) -> list[int] | dict:
    """A list of the positions; for a condensed prefill, a summary: how many, the first and last few,
    and the arithmetic progressions (first, step, count) that hold them all."""
    if positions.is_explicit:
        return list(positions)
    return {
        "count": positions.count,
        "first": positions.first(SHOWN),
        "last": positions.last(SHOWN),
        "progressions": [list(p) for p in positions.progressions()],
    }


def _steps_json(trace: Trace) -> list[dict]:
    steps = [
        {
            "step": c.step,
            "start": c.start,
            "requested": c.requested,
            "end": c.end,
            "state": "published" if c.published else ("private" if c.end > c.start else "no progress"),
            "state_column": c.column,
        }
        for c in trace.chunks
    ]
    r = trace.repeat
    if r is not None:
        period = trace.chunks[r.first : r.first + r.length]
        steps.insert(
            r.first + r.length,
            {
                "repeat": {
                    "steps": [period[0].step, period[-1].step],
                    "times": r.times,
                    "tokens": r.tokens,
                    "why": "the steps from each repetition's starts reproduce the same chunks, shifted",
                }
            },
        )
    return steps


def render_text(result: dict) -> str:
    lines = [
        f"{result['geometry']}  variant {result['variant']}",
        f"  prompt {result['prompt_tokens']:,} tokens, budget {_budgets(result['budgets'])}, "
        f"recurrent cadence {result['cadence']:,}, split grid {result['split_block']:,}, "
        f"target spans {', '.join(f'{s:,}' for s in result['target_spans'])}",
        f"  {'step':>5} {'start':>9} {'end':>9}  state (slot)",
    ]
    for step in result["steps"]:
        if "repeat" in step:
            r = step["repeat"]
            lines.append(
                f"  {'...':>5} steps {r['steps'][0]:,} to {r['steps'][1]:,} repeat {r['times']:,} more times, "
                f"{r['tokens']:,} tokens further each time"
            )
            continue
        lines.append(
            f"  {step['step']:>5} {step['start']:>9,} {step['end']:>9,}  {step['state']} ({step['state_column']})"
        )
    if result["stalled_at_step"] is not None:
        lines.append(f"  STALLED at step {result['stalled_at_step']}: the budget can never reach the next boundary")
    lines.append(f"  published: {_positions(result['published'])}")
    lines.append(f"  private:   {_positions(result['private'])}")
    for group in result["groups"]:
        lines.append(
            f"  {group['kind']:<17} span {group['span']:>7,}: published states on its boundaries: "
            f"{_positions(group['published_on_boundary'])}"
        )
    lines.append(
        f"  restored by a later identical request: GPU prefix cache {result['reuse']:,} tokens, "
        f"offload {result['reuse_offload']:,} tokens"
    )
    return "\n".join(lines)


def _positions(values: list[int] | dict) -> str:
    if isinstance(values, dict):
        values, count = values["first"] + values["last"], values["count"]
    else:
        count = len(values)
    if not values:
        return "none"
    shown = [f"{v:,}" for v in values]
    if count > 12:
        shown = shown[:6] + [f"... ({count - 9:,} more) ..."] + shown[-3:]
    return ", ".join(shown)


def _budgets(budgets: list[int]) -> str:
    return f"{budgets[0]:,}" if len(budgets) == 1 else ", ".join(f"{b:,}" for b in budgets) + " (last repeats)"
