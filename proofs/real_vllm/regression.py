"""PR457's own validation, replayed on the real scheduler: Kimi-K3 scaled to 12 recurrent groups, 4
target-attention groups (DCP16) and one EAGLE draft group (models/geometries/
kimi-k3-tp16-dcp16-all-groups.toml), budgets representing 768 and 4,096 tokens, run through vLLM
0.33.0 carrying the variant's patch and its native offload connector.

PR457's description claims 11 checkpoints in every recurrent and target group and the same
full-context prefix restored for both budgets. For each variant, retention interval, budget and
prompt length this reads, from the real engine and from the engine model (`simulate`):

- the chunk ends of the prompt's prefill;
- the positions every cache group holds keyed once the request is done (the GPU prefix cache), and
  the checkpoints among them: a recurrent group's states, a target group's full blocks (multiples of
  its span), each on the target grid or not;
- what the offload connector stored per group (the real engine; the model states what the GPU cache
  hands it, `offered`);
- the prefix a later identical request restores from the GPU prefix cache, and through offload
  alone (the GPU cache dropped).

`python3 -m proofs.real_vllm.regression [--json]` runs the table (the patched engines in workers of
their own, the baseline in this process); `tests/conformance/test_regression_pr457.py` holds it.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import asdict, dataclass, field, replace

from models.errors import GridproofError
from models.geometry import RECURRENT, TARGET, Geometry, load_geometry
from models.offload import OffloadNotModelled, offload_hit
from models.plan import ConfigurationRejected, checked_plan
from models.prefill import run_prefill
from models.prefix_cache import cached_prefix, gpu_hit
from models.variants import BASELINE, VARIANTS
from proofs.real_vllm.end_to_end import shortened

GEOMETRY = "kimi-k3-tp16-dcp16-all-groups"
BUDGETS = (768, 4096)
# vLLM's default (keeps only where a resend resumes), one state per scheduler block (12,288 tokens:
# every target boundary), and dense (every state).
RETENTIONS = (0, 12288, None)
CLAIMED_CHECKPOINTS = 11
FULL_CONTEXT = CLAIMED_CHECKPOINTS * 12_288  # the 11th boundary of the geometry's 12,288-token target spans


def retention_name(retention: int | None) -> str:
    return "dense" if retention is None else f"{retention:,}" + (" (vLLM's default)" if retention == 0 else "")


@dataclass
class Run:
    """One side's answer for one variant, retention, budget and prompt."""

    side: str  # "vLLM" (the real engine) or "model"
    variant: str
    budget: int
    retention: int | None
    prompt: int
    kinds: list[str] = field(default_factory=list)  # each group's kind, by index
    spans: list[int] = field(default_factory=list)  # each group's token span (a recurrent group's: the cadence)
    rejected: str | None = None
    chunk_ends: list[int] = field(default_factory=list)
    keyed: dict[int, list[int]] = field(default_factory=dict)  # group -> positions keyed in the GPU cache
    stored: dict[int, list[int]] | None = None  # group -> ends the offload tier stored (the real engine)
    offered: list[int] | None = None  # recurrent states the GPU cache handed the connector
    gpu_hit: int = 0
    offload_hit: int | str = 0
    explicit_bit: bool | None = None  # CacheConfig.user_specified_mamba_block_size (the real engine)

    def groups(self, kind: str) -> list[int]:
        return [i for i, k in enumerate(self.kinds) if k == kind]

    def checkpoints(self, group: int) -> list[int]:
        """A group's checkpoints: a recurrent group's keyed states, an attention group's keyed full
        blocks (the ends that are multiples of its span; a partial tail is not one)."""
        keyed = self.keyed.get(group, [])
        if self.kinds[group] == RECURRENT:
            return list(keyed)
        return [x for x in keyed if x % self.spans[group] == 0]


def with_retention(geometry: Geometry, retention: int | None, prompt: int | None = None) -> Geometry:
    d = replace(geometry.deployment, prefix_cache_retention_interval=retention)
    request = geometry.request if prompt is None else replace(geometry.request, prompt_tokens=prompt)
    return replace(geometry, deployment=d, request=request)


def _layout(geometry: Geometry, variant) -> tuple[list[str], list[int]]:
    from models.plan import plan

    cadence = plan(variant, geometry).cadence
    kinds, spans = [], []
    for group in geometry.groups:
        for _ in range(group.count):
            kinds.append(group.kind)
            spans.append(cadence if group.kind == RECURRENT else group.span(geometry.deployment.dcp_size))
    return kinds, spans


def real_run(geometry: Geometry, variant_name: str, budget: int, prompt: int) -> Run:
    """The real engine in this process (its vLLM must carry the variant's patch): the prompt's
    request, then an identical resend restored from the GPU cache; and, on an engine with the
    offload connector, the same request stored, the GPU cache dropped, the resend restored."""
    from proofs.real_vllm import engine

    variant = VARIANTS[variant_name]
    geometry = with_retention(geometry, geometry.deployment.prefix_cache_retention_interval, prompt)
    kinds, spans = _layout(geometry, variant)
    run = Run("vLLM", variant_name, budget, geometry.deployment.prefix_cache_retention_interval, prompt, kinds, spans)
    setting = engine.EngineSetting.of(geometry, budget, variant)
    blocks = engine.blocks_for(setting, prompt, prompt)
    tokens = engine.prompt_tokens(prompt, seed=1)
    try:
        gpu = engine.RealEngine(setting, num_blocks=blocks)
    except ValueError as refused:
        run.rejected = str(refused)
        return run
    run.explicit_bit = gpu.explicit_cadence
    first = gpu.run(tokens)
    run.chunk_ends, run.keyed = first.chunk_ends, first.keyed
    run.gpu_hit = gpu.run(tokens).hit
    restore = engine.RealEngine(setting, num_blocks=blocks, offload=True).offload_hit(tokens)
    run.offload_hit = restore.hit
    run.stored = restore.first.stored
    recurrent = run.groups(RECURRENT)
    run.offered = restore.first.offered[recurrent[0]] if recurrent else []
    return run


def model_run(geometry: Geometry, variant_name: str, budget: int, prompt: int) -> Run:
    """The engine model's answer (what `gridproof simulate` runs)."""
    variant = VARIANTS[variant_name]
    geometry = with_retention(geometry, geometry.deployment.prefix_cache_retention_interval, prompt)
    geometry = replace(geometry, deployment=replace(geometry.deployment, max_num_scheduled_tokens=budget))
    kinds, spans = _layout(geometry, variant)
    run = Run("model", variant_name, budget, geometry.deployment.prefix_cache_retention_interval, prompt, kinds, spans)
    try:
        p = checked_plan(variant, geometry)
    except ConfigurationRejected as refused:
        run.rejected = str(refused)
        return run
    trace = run_prefill(p, budget, prompt_tokens=prompt)
    cached = cached_prefix(p, trace, prompt, prompt)
    run.chunk_ends = list(trace.chunk_ends)
    for bucket, keys in zip(cached.layout.buckets, cached.keys, strict=True):
        for member in bucket.groups:
            run.keyed[member] = list(cached.recurrent) if bucket.recurrent else list(keys.keyed(bucket.span))
    for group in run.groups(RECURRENT):
        run.keyed[group] = list(cached.recurrent)
    run.gpu_hit = gpu_hit(cached, prompt, prompt)
    run.offered = list(cached.offered)
    try:
        run.offload_hit = offload_hit(p, cached, prompt, prompt)
    except OffloadNotModelled:
        run.offload_hit = "not modelled"
    return run


def run_differences(model: Run, real: Run) -> list[str]:
    """Where the model and the real engine differ on one run, one line each."""
    if (model.rejected is None) != (real.rejected is None):
        said = {True: "rejects", False: "accepts"}
        return [f"configuration: model {said[model.rejected is not None]}, vLLM {said[real.rejected is not None]}"]
    found = []
    for name in ("chunk_ends", "gpu_hit", "offload_hit", "offered"):
        if getattr(model, name) != getattr(real, name):
            found.append(f"{name}: model {shortened(getattr(model, name))}, vLLM {shortened(getattr(real, name))}")
    for group in range(len(real.kinds)):
        if model.keyed.get(group, []) != real.keyed.get(group, []):
            found.append(
                f"group {group} ({real.kinds[group]}) keys: model {shortened(model.keyed.get(group, []))}, "
                f"vLLM {shortened(real.keyed.get(group, []))}"
            )
    return found


# --- the claim -----------------------------------------------------------------------------------


@dataclass
class Row:
    """One variant, retention and prompt: both budgets, both sides."""

    variant: str
    retention: int | None
    prompt: int
    real: dict[int, Run]  # budget -> the real engine's run
    model: dict[int, Run]  # budget -> the model's run
    disagreements: list[str] = field(default_factory=list)

    def checkpoints_claim(self) -> tuple[bool, list[str]]:
        """The claim's first half on the real engine: every recurrent and target group holds 11
        checkpoints on the target grid, for both budgets. (holds, why not)."""
        why = []
        for budget, run in sorted(self.real.items()):
            if run.rejected is not None:
                why.append(f"budget {budget:,}: the configuration is refused")
                continue
            span = target_span(run)
            for kind in (RECURRENT, TARGET):
                counts = {len([x for x in run.checkpoints(g) if x % span == 0]) for g in run.groups(kind)}
                if counts != {CLAIMED_CHECKPOINTS}:
                    shown = " or ".join(map(str, sorted(counts)))
                    why.append(f"budget {budget:,}: the {kind} groups hold {shown} on the target grid")
        return not why, why

    def same_restore(self) -> tuple[bool, list[str]]:
        """The budgets restore the same prefix: from the GPU prefix cache, and through offload alone,
        each the same for both budgets. (holds, why not)."""
        if any(run.rejected is not None for run in self.real.values()) or not self.real:
            return False, ["the configuration is refused"]
        why = []
        for where, name in (("gpu_hit", "the GPU cache"), ("offload_hit", "offload")):
            by_budget = {budget: getattr(run, where) for budget, run in sorted(self.real.items())}
            if len(set(by_budget.values())) > 1:
                shown = ", ".join(f"{_count(v)} at budget {b:,}" for b, v in by_budget.items())
                why.append(f"{name} restores different prefixes ({shown})")
        return not why, why

    def full_context(self) -> tuple[bool, list[str]]:
        """The prefix restored is the full context the claim names, the 11th target boundary
        (`FULL_CONTEXT`), from the GPU and through offload, for both budgets. (holds, why not)."""
        if any(run.rejected is not None for run in self.real.values()) or not self.real:
            return False, ["the configuration is refused"]
        full = FULL_CONTEXT
        found = sorted({(run.gpu_hit, run.offload_hit) for run in self.real.values()})
        if found == [(full, full)]:
            return True, []
        shown = "; ".join(f"GPU {_count(g)}, offload {_count(o)}" for g, o in found)
        return False, [f"restored {shown}, not {full:,} from both"]

    def restore_claim(self) -> tuple[bool, list[str]]:
        """The claim's second half: the same full-context prefix restored for both budgets."""
        same, full = self.same_restore(), self.full_context()
        return same[0] and full[0], same[1] + full[1]

    def claim(self) -> tuple[bool, list[str]]:
        """Both halves of the claim. (holds, why not)."""
        first, second = self.checkpoints_claim(), self.restore_claim()
        return first[0] and second[0], first[1] + second[1]


def target_span(run: Run) -> int:
    """The target groups' span (the lcm if they differ): the grid the claim counts checkpoints on."""
    return math.lcm(*(run.spans[g] for g in run.groups(TARGET)))


def replay(
    variants=("baseline", "pr457-guarded"),
    retentions=RETENTIONS,
    prompts: tuple[int, ...] | None = None,
    budgets=BUDGETS,
    geometry: Geometry | None = None,
    progress=None,
    workers=None,
) -> list[Row]:
    """Every (variant, retention, prompt) row. The baseline runs in this process (on the vLLM it
    imports, which must be the release as shipped), a patched variant in a `PatchedCases` worker
    (`workers`: one to reuse, else one made and closed here)."""
    from proofs.real_vllm.end_to_end import PatchedCases, RealCases, patch_for

    geometry = geometry or load_geometry(GEOMETRY)
    prompts = prompts or (geometry.request.prompt_tokens,)
    own = workers is None
    workers = workers or PatchedCases()
    rows = []
    try:
        for name in variants:
            variant = VARIANTS[name]
            patch = patch_for(variant)
            if patch is None:
                RealCases()._check_engine(BASELINE)
            for retention in retentions:
                for prompt in prompts:
                    g = with_retention(geometry, retention)
                    row = Row(name, retention, prompt, {}, {})
                    for budget in budgets:
                        if progress is not None:
                            progress(
                                f"{name}, retention {retention_name(retention)}, prompt {prompt:,}, budget {budget:,}"
                            )
                        if patch is None:
                            real = real_run(g, name, budget, prompt)
                        else:
                            real = workers.worker(patch).call(
                                "proofs.real_vllm.regression:real_run", g, name, budget, prompt
                            )
                        model = model_run(g, name, budget, prompt)
                        row.real[budget], row.model[budget] = real, model
                        row.disagreements += [f"budget {budget:,}: {d}" for d in run_differences(model, real)]
                    rows.append(row)
    finally:
        if own:
            workers.close()
    return rows


def render(rows: list[Row]) -> str:
    """The table a reviewer reads, in Markdown: the real engine's figures, whether the model says
    the same, and each half of the claim for the row (both budgets)."""
    lines = [
        "| variant | retention | prompt | budget | recurrent checkpoints per group (on the target grid) | "
        "target checkpoints per group (on it) | GPU restore | offload restore | model agrees | "
        f"{CLAIMED_CHECKPOINTS} checkpoints each | same restore for both budgets | "
        f"restores {FULL_CONTEXT:,} from both |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        facts = " | ".join(_yes(f()[0]) for f in (row.checkpoints_claim, row.same_restore, row.full_context))
        agrees = "yes" if not row.disagreements else "NO"
        for budget, run in sorted(row.real.items()):
            head = f"| {row.variant} | {retention_name(row.retention)} | {row.prompt:,} | {budget:,} |"
            if run.rejected is not None:
                lines.append(f"{head} refused by the configuration check | | | | {agrees} | {facts} |")
                continue
            lines.append(
                f"{head} {_per_group(run, RECURRENT)} | {_per_group(run, TARGET)} | {run.gpu_hit:,} | "
                f"{_count(run.offload_hit)} | {agrees} | {facts} |"
            )
    return "\n".join(lines)


def _yes(holds: bool) -> str:
    return "holds" if holds else "no"


def _count(value) -> str:
    return f"{value:,}" if isinstance(value, int) else str(value)


def _per_group(run: Run, kind: str) -> str:
    """`n (m)` if every group of the kind holds n checkpoints, m of them on the target grid; else
    each group's."""
    target_span = max(run.spans[g] for g in run.groups(TARGET))
    counts = [
        (len(run.checkpoints(g)), len([x for x in run.checkpoints(g) if x % target_span == 0]))
        for g in run.groups(kind)
    ]
    if len(set(counts)) == 1:
        n, m = counts[0]
        return f"{n} ({m}) in each of {len(counts)}"
    return ", ".join(f"{n} ({m})" for n, m in counts)


def summary(rows: list[Row]) -> list[str]:
    """One sentence per row: the claim, and where the model and the real engine differ."""
    said = []
    for row in rows:
        head = f"{row.variant}, retention {retention_name(row.retention)}, prompt {row.prompt:,}: "
        parts = []
        for name, (holds, why) in (
            ("11 checkpoints in every recurrent and target group", row.checkpoints_claim()),
            ("the same prefix restored for both budgets", row.same_restore()),
            (f"that prefix the full context, {FULL_CONTEXT:,}, from the GPU and through offload", row.full_context()),
        ):
            parts.append(f"{name}: " + ("holds" if holds else "does not hold (" + "; ".join(why) + ")"))
        said.append(head + "; ".join(parts))
        said += [f"  model and vLLM differ: {d}" for d in row.disagreements]
    return said


def _retention(text: str) -> int | None:
    if text.lower() in ("dense", "none"):
        return None
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not 0, a whole number of tokens, or dense")
    return int(text)


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number of tokens")
    return int(text)


def main(argv: list[str] | None = None) -> int:
    """The command: the table for each --variant (default baseline and pr457-guarded), --retention and
    --prompt-tokens, printed with its summary, or as JSON with --json; progress on stderr. Exit status 1 when
    the model and the real engine disagree on some row, 2 on a GridproofError (one line on stderr), else 0."""
    parser = argparse.ArgumentParser(prog="python3 -m proofs.real_vllm.regression", description=__doc__.split("\n")[0])
    parser.add_argument(
        "--variant", action="append", choices=list(VARIANTS), help="repeatable (default: baseline and pr457-guarded)"
    )
    parser.add_argument(
        "--retention",
        action="append",
        type=_retention,
        help="0, a multiple of the scheduler block, or dense (repeatable)",
    )
    parser.add_argument("--prompt-tokens", type=_positive, action="append", help="repeatable (default: the geometry's)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    retentions = tuple(args.retention) if args.retention else RETENTIONS
    try:
        rows = replay(
            variants=tuple(args.variant or ("baseline", "pr457-guarded")),
            retentions=retentions,
            prompts=tuple(args.prompt_tokens or ()),
            progress=lambda text: print(f"running {text}", file=sys.stderr),
        )
    except GridproofError as error:
        print(error, file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps([asdict(row) | {"claim": row.claim()} for row in rows], indent=1))
    else:
        print(render(rows))
        print()
        print("\n".join(summary(rows)))
    return 1 if any(row.disagreements for row in rows) else 0


if __name__ == "__main__":
    from proofs.real_vllm import regression

    sys.exit(regression.main())
