"""`gridproof simulate`: one prefill, readable or as JSON."""

from __future__ import annotations

from dataclasses import replace

from models.geometry import Geometry
from models.offload import OffloadNotModelled, offload_hit, runs_beside_hashing
from models.plan import checked_plan
from models.positions import Positions
from models.prefill import Trace, initial_state_column, run_prefill
from models.prefix_cache import LookupFailure, cached_prefix, gpu_hit
from models.variants import Variant

SHOWN = 6  # positions listed at each end of a condensed prefill's summary


def with_budget(geometry: Geometry, budget: int) -> Geometry:
    """The deployment run with `budget` tokens per step: its max_num_scheduled_tokens."""
    return replace(geometry, deployment=replace(geometry.deployment, max_num_scheduled_tokens=budget))


def simulate(variant: Variant, geometry: Geometry, budgets, prompt_tokens: int | None = None) -> dict:
    """One request's prefill and what a later identical request restores. One budget is the
    deployment's own (its max_num_scheduled_tokens); a list is the budget the request gets at
    each step (the last repeating) under the deployment's maximum."""
    if isinstance(budgets, int) or len(budgets) == 1:
        budget = budgets if isinstance(budgets, int) else budgets[0]
        geometry = with_budget(geometry, budget)
    plan = checked_plan(variant, geometry)
    trace = run_prefill(plan, budgets, prompt_tokens=prompt_tokens)
    request = geometry.request
    prompt = request.prompt_tokens if prompt_tokens is None else prompt_tokens
    tokens = prompt + request.output_tokens
    cached = cached_prefix(plan, trace, prompt, tokens)
    try:
        restored, failure = gpu_hit(cached, tokens, tokens), None
    except LookupFailure as error:
        restored, failure = None, str(error)
    offloaded, offload_note = offload_restore(plan, cached, tokens)
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
        "cached": _cached_json(cached, geometry),
        "step_count": trace.steps,
        "steps": _steps_json(trace),
        "stalled_at_step": trace.stalled_at,
        "groups": groups,
        "retention": geometry.deployment.prefix_cache_retention_interval,
        "reuse": restored,
        **({"engine_failure": failure} if failure else {}),
        "reuse_offload": offloaded,
        **({"offload_note": offload_note} if offload_note else {}),
        "resume_state_column": initial_state_column(variant, restored, plan.cadence) if restored else None,
    }


def offload_restore(plan, cached, tokens: int) -> tuple[int | None, str | None]:
    """What an identical resend loads from the native offload connector alone (the GPU prefix cache
    evicted), or None and why not."""
    if not runs_beside_hashing(plan):
        return None, (
            f"a deployment that hashes ahead runs no KV connector ({plan.variant.engine} hashes with no lookahead "
            "beside one)"
        )
    try:
        return offload_hit(plan, cached, tokens, tokens), None
    except OffloadNotModelled as error:
        return None, f"not modelled: {error}"


def _cached_json(cached, geometry: Geometry) -> dict:
    """What the GPU prefix cache holds once the request is done: the recurrent states, and per
    attention group the full blocks and the partial tail keyed."""
    attention = []
    for bucket, keys in zip(cached.layout.buckets, cached.keys, strict=True):
        if bucket.recurrent:
            continue
        for index in bucket.groups:
            full = keys.full_up_to
            attention.append(
                {
                    "group": index,
                    "span": bucket.span,
                    "full_blocks_up_to": full,
                    "partial_tail": next(iter(keys.positions), None),
                }
            )
    return {
        "recurrent_states": positions_json(cached.recurrent),
        # keyed where the block holds the state after fewer tokens (models.prefix_cache.BucketKeys.stale)
        "stale_recurrent_states": positions_json(cached.stale),
        "attention": attention,
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
    """`simulate`'s result as text: the setting, a line per step (a condensed repeat as one line), a stall,
    the published and private states, what the GPU prefix cache keeps (stale keys warned of), and what a later
    identical request restores from the GPU and from offload alone."""
    rows = [step for step in result["steps"] if "repeat" not in step]
    width = max([9, *(len(f"{row[key]:,}") for row in rows for key in ("start", "end"))])
    step_width = max([4, *(len(f"{row['step']:,}") for row in rows)])
    lines = [
        f"{result['geometry']}  variant {result['variant']}",
        f"  prompt {result['prompt_tokens']:,} tokens, budget {_budgets(result['budgets'])}, "
        f"recurrent block {result['cadence']:,}, split grid {result['split_block']:,}, "
        f"target spans {', '.join(f'{s:,}' for s in result['target_spans'])}",
        f"  {'step':>{step_width}} {'start':>{width}} {'end':>{width}}  state (slot)",
    ]
    for step in result["steps"]:
        if "repeat" in step:
            r = step["repeat"]
            lines.append(
                f"  {'...':>{step_width}} steps {r['steps'][0]:,} to {r['steps'][1]:,} repeat {r['times']:,} more "
                f"times, {r['tokens']:,} tokens further each time"
            )
            continue
        lines.append(
            f"  {step['step']:>{step_width},} {step['start']:>{width},} {step['end']:>{width},}  "
            f"{step['state']} ({step['state_column']:,})"
        )
    if result["stalled_at_step"] is not None:
        lines.append(
            f"  STALLED at step {result['stalled_at_step']:,}: it schedules nothing, and every later step repeats it"
        )
    lines.append(f"  states on the recurrent block (published): {_positions(result['published'])}")
    lines.append(f"  states off it (private):                   {_positions(result['private'])}")
    cached = result["cached"]
    lines.append(f"  kept in the GPU prefix cache ({_retention(result['retention'])}):")
    lines.append(f"    recurrent states at {_positions(cached['recurrent_states'])}")
    if cached["stale_recurrent_states"]:
        lines.append(
            f"    WARNING: keyed under a longer prefix than the state they hold: "
            f"{_positions(cached['stale_recurrent_states'])} (a later request restored there continues wrongly)"
        )
    for group in cached["attention"]:
        tail = f", partial tail {group['partial_tail']:,}" if group["partial_tail"] is not None else ""
        lines.append(
            f"    attention group {group['group']} (span {group['span']:,}): full blocks up to "
            f"{group['full_blocks_up_to']:,}{tail}"
        )
    gpu = "none: " + result["engine_failure"] if result["reuse"] is None else f"{result['reuse']:,} tokens"
    offload = result["reuse_offload"]
    offload = f"{offload:,} tokens" if offload is not None else f"none ({result['offload_note']})"
    lines.append(f"  restored by a later identical request: GPU prefix cache {gpu}; from offload alone {offload}")
    return "\n".join(lines)


def _retention(interval) -> str:
    if interval is None:
        return "retention dense: every state"
    if interval == 0:
        return "retention 0, vLLM's default: only where a later request resumes"
    return f"retention {interval:,}: one state per {interval:,} tokens and where a later request resumes"


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
