"""gridproof's answers held against the real vLLM scheduler, case by case, end to end.

A case is a deployment (a geometry), a budget, a prompt and a later request: an identical resend,
a longer request extending the prompt (the prompt, the token it sampled, a new turn), or one that
shares only the first `shared` tokens. The model's answers (`simulate`'s engine model: the chunk
ends, what the prefix cache keeps per group, the restored prefix) are compared with what the real
scheduler does (`proofs.real_vllm.engine`). A disagreement names the case and the commands that
reproduce it.

Under a variant of PR457 the real side is vLLM 0.33.0 with the project's patch of that name
(patches/vllm-0.33.0/), run in a process of its own (`PatchedCases`, proofs/real_vllm/patched.py);
the Mamba groups are built at the variant's cadence, an explicit --mamba-block-size is given to
`CacheConfig`, and a geometry the variant's configuration check refuses is one the patched
`Scheduler` refuses with its ValueError (`Observation.rejected` on both sides).
"""

from __future__ import annotations

import math
import os
import random
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace

from models.deploy import geometry_toml
from models.errors import GridproofError
from models.geometry import RECURRENT, Geometry
from models.offload import OffloadNotModelled, offload_hit
from models.plan import ConfigurationRejected, Plan, checked_plan, plan
from models.prefill import run_prefill
from models.prefix_cache import LookupFailure, cached_prefix, gpu_hit
from models.variants import BASELINE, VARIANTS, Variant

RESEND, EXTEND, DIVERGE = "resend", "extend", "diverge"
STALLED = "stalled"  # the request's prefill never ends: no later request is run
# The start of the ValueError the pr457-guarded patch's configuration check raises in Scheduler.__init__.
GUARD_REFUSAL = "Mamba block size (--mamba-block-size)"
LATER_KINDS = (RESEND, EXTEND, DIVERGE)


@dataclass(frozen=True)
class Case:
    geometry: Geometry  # the deployment and its groups; its request is not read
    budget: int  # max_num_scheduled_tokens
    prompt: int
    later: str = RESEND
    shared: int = 0  # DIVERGE: tokens the later request shares with the prompt
    extra: int = 0  # EXTEND, DIVERGE: tokens of the later request after what it shares

    @property
    def deployment(self) -> Geometry:
        """The geometry as run: the case's budget as its max_num_scheduled_tokens."""
        d = replace(self.geometry.deployment, max_num_scheduled_tokens=self.budget)
        return replace(self.geometry, deployment=d, request=replace(self.geometry.request, prompt_tokens=self.prompt))

    @property
    def later_tokens(self) -> tuple[int, int]:
        """(tokens shared with the cached prompt, tokens of the later request)."""
        if self.later == RESEND:
            return self.prompt, self.prompt
        if self.later == EXTEND:
            return self.prompt + 1, self.prompt + 1 + self.extra  # the sampled token is shared too
        return self.shared, self.shared + self.extra

    def label(self) -> str:
        later = {RESEND: "resend", EXTEND: f"extend by {self.extra:,}", DIVERGE: f"share {self.shared:,}"}
        return f"{self.geometry.name}: budget {self.budget:,}, prompt {self.prompt:,}, later {later[self.later]}"

    def reproduce(self, path: str = "case.toml", variant: Variant = BASELINE) -> str:
        """Commands that reproduce the case, with the geometry written to `path`: the model's answer
        under `variant`, and the real engine's (patched with the variant's patch, unless baseline)."""
        flags = f"--budget {self.budget} --prompt-tokens {self.prompt}"
        if variant.name != BASELINE.name:
            flags += f" --variant {variant.name}"
        return (
            f"cat > {path} <<'EOF'\n{geometry_toml(self.deployment)}EOF\n"
            f"gridproof simulate {path} {flags} --json\n"
            f"python3 -m proofs.real_vllm.end_to_end {path} {flags}"
            + ("" if self.later == RESEND else f" --later {self.later} --shared {self.shared} --extra {self.extra}")
        )


@dataclass
class Observation:
    """What one side says of a case."""

    chunk_ends: list[int]
    recurrent: list[int]  # recurrent states keyed in the prefix cache (every recurrent group the same)
    attention: dict[int, list[int]] = field(default_factory=dict)  # attention group -> its keyed positions
    hit: int | str = 0  # tokens the later request is restored from the GPU prefix cache; the error vLLM raises
    offload: int | str | None = None  # an identical resend's load from the offload connector alone; None: not asked
    offered: list[int] | None = None  # recurrent states the GPU cache hands the connector; None: not asked
    # The configuration check's refusal (the model's ConfigurationRejected, the patched Scheduler's
    # ValueError): nothing else is observed. None: accepted.
    rejected: str | None = None
    # The real side: each recurrent group's keyed positions (the model keys every one alike, `recurrent`).
    recurrent_by_group: dict[int, list[int]] = field(default_factory=dict)

    def as_json(self) -> dict:
        return {
            "chunk_ends": self.chunk_ends,
            "recurrent": self.recurrent,
            "attention": {str(k): v for k, v in self.attention.items()},
            "hit": self.hit,
            "offload": self.offload,
            "offered": self.offered,
            "rejected": self.rejected,
            "recurrent_by_group": {str(k): v for k, v in self.recurrent_by_group.items()},
        }


def model_plan(case: Case, variant: Variant = BASELINE) -> Plan:
    return checked_plan(variant, case.deployment)


def model_observation(case: Case, variant: Variant = BASELINE) -> Observation:
    """The engine model's answer (what `gridproof simulate` runs)."""
    try:
        p = model_plan(case, variant)
    except ConfigurationRejected as refused:
        return Observation(chunk_ends=[], recurrent=[], rejected=str(refused))
    trace = run_prefill(p, case.budget, prompt_tokens=case.prompt)
    if trace.stalled_at is not None:
        return Observation(chunk_ends=list(trace.chunk_ends), recurrent=[], hit=STALLED)
    cached = cached_prefix(p, trace, case.prompt, case.prompt)
    shared, tokens = case.later_tokens
    attention = {}
    index = 0
    for group in p.geometry.groups:
        for _ in range(group.count):
            if group.kind != RECURRENT:
                attention[index] = []
            index += 1
    for bucket, keys in zip(cached.layout.buckets, cached.keys, strict=True):
        if not bucket.recurrent:
            for member in bucket.groups:
                attention[member] = list(keys.keyed(bucket.span))
    try:
        hit: int | str = gpu_hit(cached, shared, tokens)
    except LookupFailure:
        hit = "IndexError"
    offload = offered = None
    if asks_offload(case):
        offered = list(cached.offered)
        try:
            offload = offload_hit(p, cached, case.prompt, case.prompt)
        except OffloadNotModelled:
            offload = "not modelled"
    return Observation(
        chunk_ends=list(trace.chunk_ends),
        recurrent=list(cached.recurrent),
        attention=attention,
        hit=hit,
        offload=offload,
        offered=offered,
    )


def asks_offload(case: Case) -> bool:
    """An identical resend through the offload connector, where the deployment can run one: a KV
    connector makes vLLM hash with no lookahead, so a geometry that hashes ahead runs none."""
    return case.later == RESEND and case.geometry.deployment.hash_lookahead_tokens == 0


def later_request(case: Case, prompt: list[int], fresh: Callable[[int, int], list[int]]) -> list[int]:
    """The later request's tokens: `fresh(n, seed)` gives n tokens sharing nothing with the prompt."""
    if case.later == RESEND:
        return list(prompt)
    if case.later == EXTEND:
        return [*prompt, 1, *fresh(case.extra, case.prompt + 1)]
    return [*prompt[: case.shared], *fresh(case.extra, case.prompt + 2)]


class VariantEngineMismatch(GridproofError):
    """A variant asked of a vLLM that does not carry its patch (or carries one the baseline lacks)."""


def patch_for(variant: Variant) -> str | None:
    """The project's patch a variant's real engine carries: None for the release as shipped."""
    if variant.name == BASELINE.name:
        return None
    if variant.name in VARIANTS:
        return variant.name
    raise VariantEngineMismatch(f"variant {variant.name}: no real engine runs it (baseline, pr457, pr457-guarded)")


class RealCases:
    """Runs cases on the real scheduler, one engine per case (nothing cached by another case), in
    this process: the vLLM it imports must carry the variant's patch (none for the baseline;
    `PatchedCases` runs a patched one in a process of its own)."""

    def __init__(self, check_engine: bool = True) -> None:
        from proofs.real_vllm import engine

        self._engine = engine
        self._checked: set[str] = set()
        self._check = check_engine  # False: a tree given by path, whatever patch it carries

    def _check_engine(self, variant: Variant) -> None:
        if variant.name in self._checked or not self._check:
            return
        from proofs.real_vllm import quietly
        from proofs.real_vllm.patched import loaded_patch

        wanted, loaded = patch_for(variant), quietly(loaded_patch)
        if wanted != loaded:
            have = f"vLLM 0.33.0 with {loaded}.diff" if loaded else "vLLM 0.33.0 as released"
            need = f"with patches/vllm-0.33.0/{wanted}.diff (PatchedCases)" if wanted else "as released"
            raise VariantEngineMismatch(f"variant {variant.name} runs on vLLM 0.33.0 {need}; this process has {have}")
        self._checked.add(variant.name)

    def observe(self, case: Case, variant: Variant = BASELINE) -> Observation:
        """The real scheduler's answer for `case`: the prompt's chunk ends and keyed positions, the later
        request's hit (STALLED where the prefill never ends, "IndexError" where vLLM's lookup fails) and,
        where asks_offload, the offload restore. A geometry the patched guard refuses is an Observation
        rejected; a vLLM in this process without the variant's patch raises VariantEngineMismatch."""
        engine = self._engine
        self._check_engine(variant)
        setting = engine.EngineSetting.of(case.deployment, case.budget, variant)
        try:
            real = engine.RealEngine(setting, num_blocks=engine.blocks_for(setting, case.prompt, case.later_tokens[1]))
        except ValueError as refused:
            if not str(refused).startswith(GUARD_REFUSAL):
                raise
            return Observation(chunk_ends=[], recurrent=[], rejected=str(refused))
        prompt = engine.prompt_tokens(case.prompt, seed=1)
        try:
            first = real.run(prompt)
        except engine.EngineStalled as stalled:
            return Observation(chunk_ends=stalled.prefill.chunk_ends, recurrent=[], hit=STALLED)
        try:
            hit: int | str = real.run(
                later_request(case, prompt, lambda n, seed: engine.prompt_tokens(n, seed=seed))
            ).hit
        except IndexError:
            hit = "IndexError"
        recurrent, attention, by_group = [], {}, {}
        for index, group in enumerate(setting.groups):
            if group.kind == RECURRENT:
                recurrent = by_group[index] = first.keyed[index]
            else:
                attention[index] = first.keyed[index]
        observed = Observation(
            chunk_ends=first.chunk_ends, recurrent=recurrent, attention=attention, hit=hit, recurrent_by_group=by_group
        )
        if asks_offload(case):
            self._offload(case, setting, prompt, observed)
        return observed

    def _offload(self, case: Case, setting, prompt: list[int], observed: Observation) -> None:
        """The identical resend through the offload connector alone, on an engine of its own."""
        engine = self._engine
        blocks = engine.blocks_for(setting, case.prompt, case.prompt)
        restore = engine.RealEngine(setting, num_blocks=blocks, offload=True).offload_hit(prompt)
        observed.offload = restore.hit
        recurrent = [i for i, group in enumerate(setting.groups) if group.kind == RECURRENT]
        observed.offered = restore.first.offered[recurrent[0]]


class PatchedCases:
    """`RealCases` on vLLM 0.33.0 with one of the project's patches, in a worker process whose
    `vllm` is the patched tree (proofs/real_vllm/patched.py). One worker per patch; `observe`
    runs a case on the worker of the variant's patch. With `tree` (a vLLM tree given by path, a
    reviewer's branch), every variant runs on that tree's one worker."""

    def __init__(self, tree: str | None = None) -> None:
        self._workers: dict[str, object] = {}
        self.tree = tree

    def worker(self, patch: str | None):
        from proofs.real_vllm.patched import TREE, PatchedEngine

        key = TREE if self.tree is not None else patch
        if key not in self._workers:
            self._workers[key] = PatchedEngine(tree=self.tree) if self.tree is not None else PatchedEngine(patch)
        return self._workers[key]

    def observe(self, case: Case, variant: Variant) -> Observation:
        patch = patch_for(variant)
        if patch is None and self.tree is None:
            raise VariantEngineMismatch("the baseline runs on vLLM 0.33.0 as released: RealCases")
        return self.worker(patch).call("proofs.real_vllm.end_to_end:observe_here", case, variant.name)

    def close(self) -> None:
        for worker in self._workers.values():
            worker.close()
        self._workers.clear()


_HERE: list[RealCases] = []


def observe_here(case: Case, variant: str) -> Observation:
    """A case on this process's vLLM (a patched worker's entry point)."""
    if not _HERE:
        from proofs.real_vllm.patched import TREE, WORKER_ENV

        _HERE.append(RealCases(check_engine=os.environ.get(WORKER_ENV) != TREE))
    return _HERE[0].observe(case, VARIANTS[variant])


def differences(model: Observation, real: Observation) -> list[str]:
    """What the model says differently from the real engine, one line each."""
    if model.rejected is not None or real.rejected is not None:
        if (model.rejected is None) == (real.rejected is None):
            return []
        said = {True: "rejects it", False: "accepts it"}
        return [f"configuration: gridproof {said[model.rejected is not None]}, vLLM {said[real.rejected is not None]}"]
    found = []
    for name in ("chunk_ends", "recurrent", "hit", "offload", "offered"):
        mine, theirs = getattr(model, name), getattr(real, name)
        if mine != theirs and "not modelled" not in (mine, theirs):
            found.append(f"{name}: gridproof {shortened(mine)}, vLLM {shortened(theirs)}")
    for group, theirs in real.attention.items():
        mine = model.attention.get(group)
        if mine != theirs:
            extra = sorted(set(mine or ()) - set(theirs))[:4]
            missing = sorted(set(theirs) - set(mine or ()))[:4]
            found.append(f"attention group {group} keys: gridproof also {extra}, misses {missing}")
    for group, theirs in real.recurrent_by_group.items():
        if theirs != model.recurrent:
            found.append(
                f"recurrent group {group} keys: gridproof {shortened(model.recurrent)}, vLLM {shortened(theirs)}"
            )
    return found


def shortened(value) -> str:
    """A long list of positions as its first few and last two, for a line of a comparison."""
    if isinstance(value, list) and len(value) > 8:
        return f"[{', '.join(map(str, value[:4]))}, ... ({len(value) - 6} more) ..., {value[-2]}, {value[-1]}]"
    return str(value)


@dataclass
class Outcome:
    case: Case
    differences: list[str]


def compare_all(
    cases: Iterable[Case],
    real: RealCases | PatchedCases,
    progress: Callable[[int, Outcome], None] | None = None,
    variant: Variant = BASELINE,
):
    """Every case compared under `variant`; yields each outcome."""
    for number, case in enumerate(cases, 1):
        outcome = Outcome(case, differences(model_observation(case, variant), real.observe(case, variant)))
        if progress is not None:
            progress(number, outcome)
        yield outcome


# --- prompt lengths worth asking about -------------------------------------------------------


def boundary_lengths(p: Plan, limit: int, rng: random.Random, randoms: int = 4) -> list[int]:
    """Prompt lengths at every grid a deployment's answer turns on, one either side, and a few at
    random: each group's span, the cadence, the hash block and the scheduler block, their first
    multiples and the common one, and the budget's chunk grid."""
    split = p.split
    sizes = {p.cadence, int(split.hash_block), int(split.sched_block), *map(int, p.target_spans), int(split.block)}
    sizes |= {int(s) for s in p.geometry.eagle_spans()}
    budget = p.geometry.deployment.max_num_scheduled_tokens
    step = max(1, budget // int(split.block) * int(split.block))
    sizes |= {step, math.lcm(step, *map(int, p.target_spans))}
    points = set()
    for size in sizes:
        for k in (1, 2, 3):
            for delta in (-1, 0, 1):
                points.add(k * size + delta)
    points |= {rng.randint(1, limit) for _ in range(randoms)}
    return sorted(x for x in points if 1 <= x <= limit)


def cases_for(
    geometry: Geometry, budgets: Iterable[int], limit: int, rng: random.Random, variant: Variant = BASELINE
) -> Iterator[Case]:
    """Cases of one geometry: every boundary length (on the grids `variant` resolves, a refused
    configuration's too), each resent; some extended or diverging."""
    for budget in budgets:
        p = (checked_plan if variant.name == BASELINE.name else plan)(
            variant, replace(geometry, deployment=replace(geometry.deployment, max_num_scheduled_tokens=budget))
        )
        for prompt in boundary_lengths(p, limit, rng):
            yield Case(geometry, budget, prompt)
            roll = rng.random()
            if roll < 0.15:
                yield Case(geometry, budget, prompt, EXTEND, extra=rng.randint(1, 2 * budget))
            elif roll < 0.3 and prompt > 1:
                yield Case(
                    geometry, budget, prompt, DIVERGE, shared=rng.randint(1, prompt - 1), extra=rng.randint(1, budget)
                )


def main(argv: list[str] | None = None) -> int:
    """The command: one case, compared under --variant, printed as JSON (the model's observation, the real
    scheduler's and their differences). Exit status 0 when they agree, 1 when they differ, 2 on a
    GridproofError (one line on stderr)."""
    import argparse
    import json

    from models.geometry import load_geometry

    parser = argparse.ArgumentParser(prog="python3 -m proofs.real_vllm.end_to_end", description=__doc__.split("\n")[0])
    parser.add_argument("geometry")
    parser.add_argument("--budget", type=int, required=True)
    parser.add_argument("--prompt-tokens", type=int, required=True)
    parser.add_argument("--later", choices=LATER_KINDS, default=RESEND)
    parser.add_argument("--shared", type=int, default=0)
    parser.add_argument("--extra", type=int, default=0)
    parser.add_argument(
        "--variant",
        choices=list(VARIANTS),
        default=BASELINE.name,
        help="the model's variant; pr457 and pr457-guarded run on vLLM 0.33.0 with the patch of that name",
    )
    args = parser.parse_args(argv)
    variant = VARIANTS[args.variant]
    try:
        case = Case(load_geometry(args.geometry), args.budget, args.prompt_tokens, args.later, args.shared, args.extra)
        model = model_observation(case, variant)
        if patch_for(variant) is None:
            real = RealCases().observe(case, variant)
        else:
            patched = PatchedCases()
            try:
                real = patched.observe(case, variant)
            finally:
                patched.close()
    except GridproofError as error:
        print(error, file=sys.stderr)
        return 2
    print(
        json.dumps(
            {"gridproof": model.as_json(), "vllm": real.as_json(), "differences": differences(model, real)}, indent=1
        )
    )
    return 1 if differences(model, real) else 0


if __name__ == "__main__":
    # Run as the module proper, so that a case pickled for a patched worker names its real class.
    from proofs.real_vllm import end_to_end

    raise SystemExit(end_to_end.main())
