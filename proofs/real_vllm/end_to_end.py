"""gridproof's answers held against the real vLLM scheduler, case by case, end to end.

A case is a deployment (a geometry), a budget, a prompt and a later request: an identical resend,
a longer request extending the prompt (the prompt, the token it sampled, a new turn), or one that
shares only the first `shared` tokens. The model's answers (`simulate`'s engine model: the chunk
ends, what the prefix cache keeps per group, the restored prefix) are compared with what the real
scheduler does (`proofs.real_vllm.engine`). A disagreement names the case and the commands that
reproduce it.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace

from models.deploy import geometry_toml
from models.geometry import RECURRENT, Geometry
from models.offload import OffloadNotModelled, offload_hit
from models.plan import Plan, checked_plan
from models.prefill import run_prefill
from models.prefix_cache import LookupFailure, cached_prefix, gpu_hit
from models.variants import BASELINE, Variant

RESEND, EXTEND, DIVERGE = "resend", "extend", "diverge"
STALLED = "stalled"  # the request's prefill never ends: no later request is run
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

    def reproduce(self, path: str = "case.toml") -> str:
        """Commands that reproduce the case, with the geometry written to `path`."""
        flags = f"--budget {self.budget} --prompt-tokens {self.prompt}"
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

    def as_json(self) -> dict:
        return {
            "chunk_ends": self.chunk_ends,
            "recurrent": self.recurrent,
            "attention": {str(k): v for k, v in self.attention.items()},
            "hit": self.hit,
            "offload": self.offload,
            "offered": self.offered,
        }


def model_plan(case: Case, variant: Variant = BASELINE) -> Plan:
    return checked_plan(variant, case.deployment)


def model_observation(case: Case, variant: Variant = BASELINE) -> Observation:
    """The engine model's answer (what `gridproof simulate` runs)."""
    p = model_plan(case, variant)
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


class RealCases:
    """Runs cases on the real scheduler, one engine per case (nothing cached by another case)."""

    def __init__(self) -> None:
        from proofs.real_vllm import engine

        self._engine = engine

    def observe(self, case: Case, variant: Variant = BASELINE) -> Observation:
        engine = self._engine
        setting = engine.EngineSetting.of(case.deployment, case.budget, variant)
        real = engine.RealEngine(setting, num_blocks=engine.blocks_for(setting, case.prompt, case.later_tokens[1]))
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
        recurrent, attention = [], {}
        for index, group in enumerate(setting.groups):
            if group.kind == RECURRENT:
                recurrent = first.keyed[index]
            else:
                attention[index] = first.keyed[index]
        observed = Observation(chunk_ends=first.chunk_ends, recurrent=recurrent, attention=attention, hit=hit)
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


def differences(model: Observation, real: Observation) -> list[str]:
    """What the model says differently from the real engine, one line each."""
    found = []
    for name in ("chunk_ends", "recurrent", "hit", "offload", "offered"):
        mine, theirs = getattr(model, name), getattr(real, name)
        if mine != theirs and "not modelled" not in (mine, theirs):
            found.append(f"{name}: gridproof {_short(mine)}, vLLM {_short(theirs)}")
    for group, theirs in real.attention.items():
        mine = model.attention.get(group)
        if mine != theirs:
            extra = sorted(set(mine or ()) - set(theirs))[:4]
            missing = sorted(set(theirs) - set(mine or ()))[:4]
            found.append(f"attention group {group} keys: gridproof also {extra}, misses {missing}")
    return found


def _short(value) -> str:
    if isinstance(value, list) and len(value) > 8:
        return f"[{', '.join(map(str, value[:4]))}, ... ({len(value) - 6} more) ..., {value[-2]}, {value[-1]}]"
    return str(value)


@dataclass
class Outcome:
    case: Case
    differences: list[str]


def compare_all(cases: Iterable[Case], real: RealCases, progress: Callable[[int, Outcome], None] | None = None):
    """Every case compared; yields each outcome."""
    for number, case in enumerate(cases, 1):
        outcome = Outcome(case, differences(model_observation(case), real.observe(case)))
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


def cases_for(geometry: Geometry, budgets: Iterable[int], limit: int, rng: random.Random) -> Iterator[Case]:
    """Cases of one geometry: every boundary length, each resent; some extended or diverging."""
    for budget in budgets:
        p = checked_plan(
            BASELINE, replace(geometry, deployment=replace(geometry.deployment, max_num_scheduled_tokens=budget))
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
    args = parser.parse_args(argv)
    case = Case(load_geometry(args.geometry), args.budget, args.prompt_tokens, args.later, args.shared, args.extra)
    model, real = model_observation(case), RealCases().observe(case)
    print(
        json.dumps(
            {"gridproof": model.as_json(), "vllm": real.as_json(), "differences": differences(model, real)}, indent=1
        )
    )
    return 1 if differences(model, real) else 0


if __name__ == "__main__":
    raise SystemExit(main())
