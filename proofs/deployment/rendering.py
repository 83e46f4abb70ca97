"""`gridproof check`'s answer, as text and as JSON, and `--sweep`'s table."""

from __future__ import annotations

from models.deploy import ServeFlags, resolve_deployment
from models.errors import GridproofError
from proofs.deployment.analysis import CheckResult, typical_request


def _n(value) -> str:
    return "none" if value is None else f"{value:,}"


def _positions(values: list[int], limit: int = 8) -> str:
    if not values:
        return "none"
    shown = [f"{v:,}" for v in values]
    if len(shown) > limit:
        shown = shown[: limit - 2] + [f"... ({len(values) - limit + 1} more)", shown[-1]]
    return ", ".join(shown)


def answer_lines(r: CheckResult) -> list[str]:
    """The deployer's answer, in plain words: what a later request is restored, from what prompt
    length on, what a typical resend recomputes, and a warning as vLLM would log it."""
    law, typical = r.hit_law, r.typical
    lines = []
    if law.verdict == "CHECKED":
        lines += [
            "  A later request that shares the first L tokens of a prompt is restored hit(L) tokens from the GPU "
            "prefix cache:",
            f"    hit(L) = {law.law.formula.text}",
        ]
        smallest = law.smallest_hit
        if smallest is None:
            lines.append("  No prompt length checked is ever restored anything.")
        else:
            lines.append(f"  The smallest prefix that hits: {smallest:,} tokens (it restores {law.law(smallest):,}).")
    elif law.verdict == "NOT RUN":
        lines.append(f"  hit(L): not computed ({law.reason})")
    elif law.law.failure and not law.law.differences:
        lines.append(f"  hit(L): no law: {law.law.failure}.")
    else:
        lines.append("  hit(L): no formula fits; where the closest one differs (L, restored, formula):")
        lines += [f"    {n:,}: {hit}, {formula:,}" for n, hit, formula in law.law.differences[:5]]
    gpu, offload, tokens = typical["restored_gpu"], typical["restored_offload"], typical["tokens"]
    if gpu is not None:
        sentence = f"  A typical {tokens:,}-token resend is restored {gpu:,} tokens and recomputes {tokens - gpu:,}"
        if r.deployment.offload and offload is not None:
            sentence += f"; through native offload alone it is restored {offload:,}"
        lines.append(sentence + ".")
    if law.verdict == "CHECKED" and law.smallest_hit and law.smallest_hit > 1:
        lines.append(
            f"  WARNING [vllm] Prefix caching: a hybrid-model request shorter than {law.smallest_hit:,} tokens "
            f"never hits the prefix cache (recurrent block {r.cadence:,}, "
            f"hash block {r.plan.split.hash_block:,})."
        )
    return lines


def render_text(r: CheckResult, explain: bool = True) -> str:
    """`check`'s answer as text: the headline, the deployer's answer and warnings, the real scheduler's
    confirmation where asked, how it was reached (with `explain`), and the OK or NOT OK line with its exit
    status."""
    d = r.deployment
    p = r.plan
    flags, model, resolved = d.flags, d.model, d.resolved
    geometry = p.geometry
    dep = geometry.deployment
    spec = d.speculation
    lines = [
        f"gridproof check  {model.name}  TP{flags.tensor_parallel_size} DCP{flags.decode_context_parallel_size}"
        f"  variant {r.variant}",
        *answer_lines(r),
    ]
    lines += [f"  warning: {warning}" for warning in r.warnings]
    confirmed = r.confirm_vllm
    if confirmed:
        lines.append(
            f"  the real {r.plan.variant.engine} scheduler, on {confirmed['cases']:,} prompt lengths: "
            + (
                "agrees with the model and the law"
                if not confirmed["disagreements"]
                else f"DISAGREES at {len(confirmed['disagreements'])} of them, e.g. {confirmed['disagreements'][0]}"
            )
        )
    if explain:
        lines += _detail_lines(r, d, p, flags, model, resolved, dep, spec)
    else:
        lines.append("  (--explain: how this was reached; --json: all of it)")
    if r.ok:
        lines.append("OK (exit 0)")
    else:
        lines += [f"NOT OK (exit 1): {why}" for why in r.why]
    return "\n".join(lines)


def _detail_lines(r, d, p, flags, model, resolved, dep, spec) -> list[str]:
    lines = [
        "  how:",
        f"  model: {model.model_type}, {'MLA' if model.use_mla else 'GQA'} attention "
        f"{d.config_inputs.attn_page_per_token:,} B/token/rank, {model.state_kind} state "
        f"{d.config_inputs.mamba_page:,} B/rank",
        f"  resolved (Platform._align_hybrid_block_size, models/config.py): block {resolved.block_size:,}, "
        f"kernel alignment {resolved.kernel_alignment:,}, padded state page {resolved.mamba_page_size_padded:,} B",
        f"  budget {dep.max_num_scheduled_tokens:,} prompt tokens per step"
        + (f", long-prefill threshold {dep.long_prefill_token_threshold:,}" if dep.long_prefill_token_threshold else "")
        + (f"; {spec.method} x{spec.num_speculative_tokens}" if spec else "; no speculative decoding")
        + f"; EAGLE block drop {'on' if p.split.eagle_drop else 'off'}, hash lookahead {p.split.lookahead}"
        + (f"; native offload, {dep.offload_blocks_per_chunk} block(s) per chunk" if d.offload else "")
        + f"; retention {_retention(dep.prefix_cache_retention_interval)}",
    ]
    lines += [f"  note: {note}" for note in d.notes]
    lines.append("  groups:")
    for g in r.groups:
        extra = " (EAGLE)" if g["eagle"] else ""
        lines.append(f"    {g['kind']:<17} span {g['span']:>9,}  grid {g['grid']:<12} {g['how']}{extra}")
    typical = r.typical
    lines += [
        f"  checkpoints: a chunk ending on a multiple of the recurrent block R = {r.cadence:,} leaves a state "
        f"the cache can key; the split aligns chunks to {r.split_grid:,}",
        f"  typical request ({typical['tokens']:,} tokens, {typical['steps']:,} steps): checkpoints at "
        f"{_positions(typical['published'])}; the GPU prefix cache keeps recurrent states at "
        f"{_positions(typical['cached_recurrent_states'])}",
    ]
    law = r.hit_law
    if law.verdict == "CHECKED":
        lines.append(
            f"  hit(L): CHECKED (not proved) against the engine model on {law.law.checked:,} lengths up to "
            f"{law.law.largest_checked:,} (every length to 256, each grid's multiples to four of the largest, one "
            "either side, and lengths at random; proofs/deployment/restore_law.py)"
        )
        if law.examples:
            lines.append("    " + ", ".join(f"hit({n:,}) = {h:,}" for n, h in law.examples.items()))
        agreement = law.against_simulate
        if agreement:
            lines.append(
                f"    against simulate on every L in 1..{agreement['up_to']:,}: "
                + (
                    f"DISAGREES at L = {', '.join(f'{n:,}' for n in agreement['mismatches'])}"
                    if agreement["mismatches"]
                    else "agrees"
                )
            )
    guard = r.guard
    if guard["accepts"]:
        lines.append(
            f"  pr457-guarded's check: accepts (cadence {guard['cadence']:,} is a multiple of every target span)"
        )
    else:
        g = guard["breaking_group"]
        lines.append(
            f"  pr457-guarded's check: REJECTS: cadence {guard['cadence']:,} is not a multiple of {g['kind']} group "
            f"{g['index']}'s span {g['span']:,}"
        )
        cx = guard.get("counterexample")
        if cx:
            lines.append(
                f"    failing prefix: {cx['prefix_tokens']:,} tokens; its published checkpoint lies inside target "
                f"block [{cx['target_block'][0]:,}, {cx['target_block'][1]:,}) (replayed: {cx['replayed']})"
            )
    lines.append(f"  aligned (every published checkpoint on every target boundary): {r.aligned['verdict']}")
    lines += _recommendation_lines(r)
    return lines


def _recommendation_lines(r: CheckResult) -> list[str]:
    rows = r.recommendations
    budget = r.plan.geometry.deployment.max_num_scheduled_tokens
    fitting = [row for row in rows if row["mamba_block_size"] <= budget]
    lines = []
    if rows and not fitting:
        smallest = rows[0]["mamba_block_size"]
        lines.append(
            f"  no valid --mamba-block-size fits the {budget:,}-token budget: each is a multiple of every target "
            f"span; the smallest, {smallest:,}, takes {-(-smallest // budget)} steps per checkpoint "
            "(the steps between stay private):"
        )
    else:
        lines.append("  valid --mamba-block-size values near the budget (pr457-guarded):")
    lines.append(f"    {'value':>9} {'ckpts/100k':>10} {'worst recompute':>15} {'slots':>5} {'table cols':>10}")
    for row in rows:
        lines.append(
            f"    {row['mamba_block_size']:>9,} {row['checkpoints_per_100k_tokens']:>10} "
            f"{row['worst_recompute_tokens']:>15,} {row['state_slots_resident']:>5} {row['state_table_columns']:>10,}"
        )
    return lines


def _retention(interval) -> str:
    return "dense" if interval is None else f"{interval:,}"


def sweep(model, flags: ServeFlags, variant, field: str, values: list[int]) -> list[dict]:
    """One row per value of one flag: the concrete model only (no proofs)."""
    from models.plan import plan
    from models.variants import PR457_GUARDED

    rows = []
    for value in values:
        row = {field: value}
        try:
            changed = ServeFlags(**{**flags.__dict__, field: value or None})
            deployment = resolve_deployment(model, changed, variant)
            p = plan(variant, deployment.geometry)
            typical = typical_request(p)
            on_targets = all(not any(e % s for s in p.target_spans) for e in typical["published"])
            row.update(
                block=deployment.resolved.block_size,
                cadence=p.cadence,
                published_per_100k=sum(1 for e in typical["published"] if e <= 100_000),
                restored_gpu=typical["restored_gpu"],
                restored_offload=typical["restored_offload"],
                # The guard's verdict alone: guard_verdict would also replay a failing prefix.
                guard_accepts=plan(PR457_GUARDED, deployment.geometry).accepted,
                ok=on_targets and (p.accepted or not variant.guarded),
            )
        except GridproofError as error:
            row.update(error=str(error), ok=False)
        rows.append(row)
    return rows


def render_sweep(field: str, rows: list[dict]) -> str:
    """`--sweep`'s table for the flag `field`: one line per row with the block, cadence, checkpoints published
    per 100k tokens, restores, the guard's verdict and alignment, or the row's error."""
    flag = "--" + field.replace("_", "-")
    lines = [
        f"{flag:>26} {'block':>7} {'cadence':>8} {'published/100k':>14} {'GPU restore':>11} "
        f"{'offload':>9} {'guard':>6}  aligned   (typical request, simulated; not proved)"
    ]
    for row in rows:
        if "error" in row:
            lines.append(f"{row[field]:>26,}  {row['error']}")
            continue
        lines.append(
            f"{row[field]:>26,} {row['block']:>7,} {row['cadence']:>8,} {row['published_per_100k']:>14} "
            f"{_n(row['restored_gpu']):>11} {_n(row['restored_offload']):>9} "
            f"{'yes' if row['guard_accepts'] else 'no':>6}  {'yes' if row['ok'] else 'NO'}"
        )
    return "\n".join(lines)
