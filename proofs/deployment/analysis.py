"""`gridproof check`'s analysis of one deployment: what the cache groups'
grids are, where checkpoints are published, what the prefix cache keeps and a
later request restores (from the GPU and through offload), the restore law
over every prompt length, and whether the deployment is aligned (every
published checkpoint on every target-attention boundary).

Everything is read from the same model `simulate` runs (models.plan,
models.prefill, models.prefix_cache, models.offload); the alignment proof is a
Z3 obligation through proofs.engine.solver, its counterexample replayed on the
concrete model; the restore law is checked on the model (proofs.deployment.restore_law).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

from models import arith
from models.deploy import ResolvedDeployment
from models.geometry import DRAFT, RECURRENT, TARGET
from models.offload import OffloadNotModelled, offload_hit, runs_beside_hashing
from models.plan import Plan, plan
from models.prefill import publishes, run_prefill
from models.prefix_cache import LookupFailure, cached_prefix, gpu_hit
from models.scheduler import last_cacheable_position
from models.variants import PR457, PR457_GUARDED, Variant
from proofs.deployment.restore_law import RestoreLaw, TooCostly, resend_hit, restore_law
from proofs.engine.solver import PROVED, REFUTED, Claim, Kind, SolverOptions, Var, decide

PER_TOKENS = 100_000  # "published checkpoints per 100k tokens"


def _aligned_claim(cadence: int, spans: tuple[int, ...]):
    """Every chunk end that publishes lies on every target boundary: the
    catalogue's step lemma (prefill-published-on-target-boundaries) for
    this deployment's sizes."""

    def formula(variant, x):
        end, tokens = x["end"], x["tokens"]
        return Claim(
            hypotheses={"a chunk end within the request": arith.all_of(0 <= end, end <= tokens)},
            goal=arith.implies(
                publishes(end, cadence, tokens), arith.all_in(arith.divides(span, end) for span in spans)
            ),
        )

    return formula


def prove_aligned(p: Plan):
    return decide(
        _aligned_claim(p.cadence, p.target_spans),
        (Var("end", Kind.INT), Var("tokens", Kind.INT)),
        p.variant,
        SolverOptions(strategy="linear"),
    )


def _groups(p: Plan) -> list[dict]:
    dcp = p.geometry.deployment.dcp_size
    groups = []
    for i, group in enumerate(p.geometry.groups):
        span = p.cadence if group.kind == RECURRENT else group.span(dcp)
        how = f"{group.block_size:,} x DCP{dcp}" if group.dcp_sharded and dcp > 1 else f"{group.block_size:,}"
        if group.kind == RECURRENT:
            how = "the recurrent cadence R (MambaSpec block size)"
        groups.append(
            {"index": i, "kind": group.kind, "span": span, "eagle": group.eagle, "how": how, "grid": f"{span:,}·ℕ"}
        )
    return groups


def typical_request(p: Plan) -> dict:
    """The deployment's typical request (its geometry's): its prefill, what the prefix cache keeps
    of it, and what a later identical request restores from the GPU and through offload alone."""
    d, request = p.geometry.deployment, p.geometry.request
    tokens = request.num_tokens
    trace = run_prefill(p, d.max_num_scheduled_tokens)
    cached = cached_prefix(p, trace, request.prompt_tokens, tokens)
    try:
        gpu, failure = gpu_hit(cached, tokens, tokens), None
    except LookupFailure as error:
        gpu, failure = None, str(error)
    offload = None
    if runs_beside_hashing(p):
        try:
            offload = offload_hit(p, cached, tokens, tokens)
        except OffloadNotModelled:
            offload = None
    return {
        "tokens": tokens,
        "steps": trace.steps,
        "stalled_at_step": trace.stalled_at,
        "chunk_ends": list(trace.chunk_ends),
        "published": list(trace.published),
        "private": list(trace.private),
        "cached_recurrent_states": list(cached.recurrent),
        "stale_recurrent_states": list(cached.stale),
        "restored_gpu": gpu,
        "lookup_failure": failure,
        "restored_offload": offload,
    }


def guard_verdict(deployment: ResolvedDeployment, geometry) -> dict:
    """Whether pr457-guarded's configuration check accepts the deployment,
    and if not the target group that breaks it and a prefix that fails,
    found by running the unguarded pr457 model (the same engine, no check)."""
    guarded = plan(PR457_GUARDED, geometry)
    result = {"accepts": guarded.accepted, "cadence": guarded.cadence}
    if guarded.accepted:
        return result
    spans = guarded.target_spans
    broken = [g for g in _groups(guarded) if g["kind"] == TARGET and guarded.cadence % g["span"]]
    result["breaking_group"] = broken[0]
    unguarded = plan(PR457, geometry)
    trace = run_prefill(unguarded, geometry.deployment.max_num_scheduled_tokens)
    off_grid = [e for e in trace.published if any(e % s for s in spans)]
    if off_grid:
        e = off_grid[0]
        span = broken[0]["span"]
        result["counterexample"] = {
            "prefix_tokens": e,
            "published_at": e,
            "target_block": [e // span * span, e // span * span + span],
            "replayed": "models.prefill.run_prefill under pr457 (the guard removed)",
        }
    return result


# A recurrent checkpoint a million tokens apart is not one a deployment asks for.
MAX_RECOMMENDED_CADENCE = 2**20


def recommendations(deployment: ResolvedDeployment, p: Plan, count: int = 4) -> list[dict]:
    """Valid --mamba-block-size values near the budget (at most MAX_RECOMMENDED_CADENCE):
    multiples of every target span and of the physical block, under pr457-guarded."""
    d = p.geometry.deployment
    unit = math.lcm(d.block_size, *p.target_spans)
    # The worst recompute is read at every grid point of two cadences: work in cadence / unit.
    budget = min(d.max_num_scheduled_tokens, MAX_RECOMMENDED_CADENCE)
    first = max(1, budget // unit)
    values = sorted({unit * k for k in range(max(1, first - 1), first + count)})[:count]
    spec = deployment.speculation
    num_spec = spec.num_speculative_tokens if spec else 0
    internal = 1 if d.prefill_checkpoint_alignment else 0
    rows = []
    for value in values:
        flags = deployment.flags.__class__(**{**deployment.flags.__dict__, "mamba_block_size": value})
        from models.deploy import resolve_deployment

        candidate = plan(PR457_GUARDED, resolve_deployment(deployment.model, flags, PR457_GUARDED).geometry)
        # L - lcp(L) peaks just below a grid point of the cadence or a span.
        grid = sorted({value, unit, *candidate.geometry.eagle_spans()})
        window = {n + delta for g in grid for n in range(5 * value, 7 * value + 2 * g, g) for delta in (-1, 0, 1)}
        worst = max(n - last_cacheable_position(candidate.variant, candidate.split, n) for n in window)
        max_len = deployment.max_model_len or PER_TOKENS
        rows.append(
            {
                "mamba_block_size": value,
                "checkpoints_per_100k_tokens": PER_TOKENS // value,
                "worst_recompute_tokens": worst,
                "state_slots_resident": 2 + num_spec + internal,
                "state_table_columns": -(-max_len // value) + num_spec,
                "accepted_by_pr457_guarded": candidate.accepted,
            }
        )
    return rows


def warnings_for(deployment: ResolvedDeployment, p: Plan, typical: dict, law: LawAnswer) -> list[str]:
    """What a deployer should be warned of, one sentence each: a cadence or target span over --max-model-len,
    no prompt length that hits, stale recurrent keys or a failing lookup in the typical request, EAGLE's
    dropped block, offload restoring less than the GPU cache, a stalled prefill."""
    found = []
    limit = deployment.max_model_len
    widest = max(p.target_spans)
    if limit is not None:
        if p.cadence > limit:
            found.append(
                f"the recurrent cadence {p.cadence:,} exceeds --max-model-len {limit:,}: nothing is ever published"
            )
        if widest > limit:
            found.append(
                f"a target-attention block spans {widest:,} tokens, over --max-model-len {limit:,}: nothing is restored"
            )
    if law.verdict == "CHECKED" and law.smallest_hit is None:
        found.append("no prompt length checked ever hits the prefix cache")
    if typical["stale_recurrent_states"]:
        stale = typical["stale_recurrent_states"]
        found.append(
            f"{p.variant.engine} keys a recurrent state under a longer prefix than it holds (at {_positions(stale)} in "
            f"the typical request): the split's grid ({p.split.block:,}) is finer than the recurrent block "
            f"({p.cadence:,}), so a chunk leaves a block mid-way and the block is hashed by its end; a later request "
            "restored there continues from the wrong state"
        )
    if typical["lookup_failure"]:
        found.append(typical["lookup_failure"])
    if p.split.eagle_drop:
        spans = p.geometry.eagle_spans() or p.target_spans
        found.append(
            f"speculative decoding (EAGLE block drop) costs a block: a hit must leave the draft group's next "
            f"{max(spans):,}-token block cached, so up to {max(spans):,} more tokens are recomputed"
        )
    gpu, offload = typical["restored_gpu"], typical["restored_offload"]
    retention = p.geometry.deployment.prefix_cache_retention_interval
    if deployment.offload and offload is not None and gpu is not None and offload < gpu:
        found.append(
            f"native offload alone restores {offload:,} tokens of the typical request, the GPU cache {gpu:,}: the "
            "connector stores only the recurrent states the GPU cache keeps on its chunk grid"
            + (" (retention 0 keeps only where a resend resumes)" if retention == 0 else "")
        )
    if typical["stalled_at_step"] is not None:
        found.append(f"the typical request's prefill stalls at step {typical['stalled_at_step']}")
    return found


def _positions(values: list[int], limit: int = 4) -> str:
    shown = [f"{v:,}" for v in values[:limit]]
    return ", ".join(shown) + (f" and {len(values) - limit:,} more" if len(values) > limit else "")


@dataclass(frozen=True)
class LawAnswer:
    """The restore law as `check` answers it: the law checked on the engine model (`law`), or why
    there is none (`reason`, verdict NOT RUN); with `--verify-law-up-to`, the law held to simulate."""

    verdict: str  # CHECKED, NO FORMULA or NOT RUN
    law: RestoreLaw | None = None
    reason: str = ""
    examples: dict[int, int] = field(default_factory=dict)  # hit(L) at a few lengths worth printing
    against_simulate: dict | None = None  # {"up_to": N, "mismatches": [L, ...]}

    @classmethod
    def not_run(cls, reason: str) -> LawAnswer:
        return cls("NOT RUN", reason=reason)

    @property
    def checked(self) -> RestoreLaw | None:
        """The law a length can be asked of (CHECKED), or None."""
        return self.law if self.verdict == "CHECKED" else None

    @property
    def smallest_hit(self) -> int | None:
        return self.law.smallest_hit if self.law is not None else None

    def to_json(self) -> dict:
        if self.law is None:
            return {"verdict": self.verdict, "reason": self.reason}
        section = self.law.as_json()
        if self.examples:
            section["examples"] = self.examples
        if self.against_simulate is not None:
            section["against_simulate"] = self.against_simulate
        return section


def hit_law_answer(p: Plan, limit: int | None = None, verify_up_to: int = 0) -> LawAnswer:
    """The restore law (proofs.deployment.restore_law) as check reports it, held to simulate on every
    length up to `verify_up_to`."""
    try:
        law = restore_law(p, limit)
    except TooCostly as reason:
        return LawAnswer.not_run(str(reason))
    if law.verdict != "CHECKED":
        return LawAnswer(law.verdict, law)
    lengths = sorted({n for n in (law.smallest_hit, 100_000, 200_000) if n and (limit is None or n <= limit)})
    against = law_against_simulate(p, law, verify_up_to) if verify_up_to else None
    return LawAnswer(law.verdict, law, examples={n: law(n) for n in lengths}, against_simulate=against)


def law_against_simulate(p: Plan, law: RestoreLaw, up_to: int) -> dict:
    """The law against what `simulate` reports a later identical request restores, on every L in
    1..up_to, and the first few lengths where they differ."""
    differ = [n for n in range(1, up_to + 1) if resend_hit(p, n) != law(n)]
    return {"up_to": up_to, "mismatches": differ[:5]}


@dataclass
class CheckResult:
    """`gridproof check`'s answer for one deployment: its plan (made once), what its cache groups are,
    the typical request, the alignment proof, the hit law, PR457's guard, and why it is not OK
    (`why` empty: OK). `to_json` is what `--json` prints."""

    plan: Plan
    deployment: ResolvedDeployment
    variant: str
    groups: list[dict]
    typical: dict
    aligned: dict
    hit_law: LawAnswer
    guard: dict
    warnings: list[str]
    recommendations: list[dict]
    why: list[str]
    seconds: float
    confirm_vllm: dict | None = None  # `--confirm-vllm`: the real vLLM's run of the deployment

    @property
    def ok(self) -> bool:
        return not self.why

    @property
    def cadence(self) -> int:
        return self.plan.cadence

    @property
    def split_grid(self) -> int:
        return self.plan.split.block

    def to_json(self) -> dict:
        """The result as `check --json` prints it: the model, flags and resolved sizes, the groups and grids,
        the typical request, the hit law (without its function), the guard, warnings, recommendations and
        verdict."""
        d = self.deployment
        return {
            "model": d.model.name,
            "model_source": d.model.source,
            "variant": self.variant,
            "flags": d.flags.__dict__,
            "resolved": {
                "block_size": d.resolved.block_size,
                "mamba_block_size": d.resolved.mamba_block_size,
                "mamba_page_size_padded": d.resolved.mamba_page_size_padded,
                "kernel_alignment": d.resolved.kernel_alignment,
                "attention_page_per_token": d.config_inputs.attn_page_per_token,
                "state_page": d.config_inputs.mamba_page,
            },
            "max_num_scheduled_tokens": d.geometry.deployment.max_num_scheduled_tokens,
            # As vLLM resolves it (an MTP draft's default from the model's config); null without one.
            "num_speculative_tokens": d.speculation.num_speculative_tokens if d.speculation else None,
            "eagle_block_drop": self.plan.split.eagle_drop,
            "hash_lookahead_tokens": self.plan.split.lookahead,
            "offload": d.offload,
            # GPU blocks per offloaded chunk as vLLM resolves them (1 without the native offload).
            "offload_blocks_per_chunk": d.geometry.deployment.offload_blocks_per_chunk,
            "groups": self.groups,
            "cadence": self.cadence,
            "split_grid": self.split_grid,
            "typical_request": self.typical,
            "hit_law": self.hit_law.to_json(),
            **({"confirm_vllm": self.confirm_vllm} if self.confirm_vllm is not None else {}),
            "aligned": self.aligned,
            "pr457_guarded": self.guard,
            "warnings": self.warnings,
            "recommendations": self.recommendations,
            "notes": list(d.notes),
            "ok": self.ok,
            "why": self.why,
            "seconds": round(self.seconds, 3),
        }


def analyse(deployment: ResolvedDeployment, variant: Variant, prove: bool = True, verify_up_to: int = 0) -> CheckResult:
    """The answer for one deployment under `variant`: the alignment proved (its counterexample
    replayed), the hit law checked (`prove`) and, with `verify_up_to`, held to simulate on every
    length up to it."""
    started = time.perf_counter()
    geometry = deployment.geometry
    p = plan(variant, geometry)
    guard = guard_verdict(deployment, geometry)
    typical = typical_request(p)
    aligned = prove_aligned(p)
    if aligned.verdict == REFUTED:
        position = aligned.counterexample["end"]
        replayed = bool(publishes(position, p.cadence, aligned.counterexample["tokens"])) and any(
            position % s for s in p.target_spans
        )
        if not replayed:
            raise AssertionError(f"alignment counterexample {aligned.counterexample} does not replay")
    if variant.guarded and not p.accepted:
        # The engine refuses to start: there is no prefix cache to state a law for.
        law = LawAnswer.not_run(f"{variant.name} refuses this configuration")
    elif prove:
        law = hit_law_answer(p, deployment.max_model_len, verify_up_to)
    else:
        law = LawAnswer.not_run("not asked for")
    why = []
    if deployment.model.removed_from_vllm:
        why.append(f"{deployment.model.removed_from_vllm}: it will not start, whatever this answer reads of its layers")
    if law.against_simulate and law.against_simulate["mismatches"]:
        why.append(f"the hit law disagrees with simulate at L = {law.against_simulate['mismatches'][0]:,}")
    if law.verdict == "NOT RUN" and prove and not (variant.guarded and not p.accepted):
        why.append(f"the hit law was not computed: {law.reason}")
    if law.verdict == "NO FORMULA" and law.law.failure and not law.law.differences:
        why.append(f"no hit law: {law.law.failure}")
    elif law.verdict == "NO FORMULA":
        why.append("no formula fits the restores checked (the lengths where the best differs are listed)")
    if not guard["accepts"] and variant.guarded:
        group = guard["breaking_group"]
        why.append(
            f"{variant.name} rejects the deployment: cadence {guard['cadence']:,} is not a multiple of "
            f"{group['kind']} group {group['index']}'s span {group['span']:,}"
        )
    limit = deployment.max_model_len
    if law.verdict == "CHECKED" and law.smallest_hit is None:
        within = f" up to --max-model-len {limit:,}" if limit is not None else ""
        why.append(f"no shared prefix{within} checked ever hits the prefix cache")
    if typical["stale_recurrent_states"]:
        why.append("the prefix cache keys recurrent states under prefixes they do not hold (a restore there is wrong)")
    if typical["lookup_failure"]:
        why.append("vLLM's own prefix-cache lookup fails for the typical request")
    if typical["stalled_at_step"] is not None:
        why.append(f"the typical request's prefill stalls at step {typical['stalled_at_step']}")
    if aligned.verdict != PROVED:
        off = [e for e in typical["published"] if any(e % s for s in p.target_spans)]
        example = f", e.g. {off[0]:,} in the typical request" if off else ""
        why.append(
            f"published checkpoints are not all on target-attention boundaries ({aligned.verdict}: cadence "
            f"{p.cadence:,} against spans {', '.join(f'{s:,}' for s in p.target_spans)}{example})"
        )
    return CheckResult(
        plan=p,
        deployment=deployment,
        variant=variant.name,
        groups=_groups(p),
        typical=typical,
        aligned={
            "verdict": aligned.verdict,
            "hypotheses_used": aligned.hypotheses_used,
            "counterexample": aligned.counterexample,
        },
        hit_law=law,
        guard=guard,
        warnings=warnings_for(deployment, p, typical, law),
        recommendations=recommendations(deployment, p),
        why=why,
        seconds=time.perf_counter() - started,
    )


__all__ = ["CheckResult", "LawAnswer", "analyse", "DRAFT"]
