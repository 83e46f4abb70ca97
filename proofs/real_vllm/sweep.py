"""End-to-end cases under PR457 (pr457, pr457-guarded), for the conformance tests and `gridproof
review`: the built-in deployments and generated ones, each given a recurrent cadence PR457 reads,
compared case by case with vLLM 0.33.0 carrying the variant's patch.

A generated deployment is drawn as tests/conformance/engine_geometries.py draws one (one or two
target groups of one or two block sizes, one to three recurrent groups, an EAGLE draft annotated or
not, DCP 1/2/4/16, internal checkpoints, retention 0, dense or a multiple of the scheduler block and
of every offload chunk, a prefix-match unit finer than the spans' gcd, long-prefill thresholds,
offload chunks of 1 to 4 blocks, hash lookahead 0 to 2) and then given one cadence of three kinds:
none (the resolved block, which pr457-guarded refuses where a target group is DCP-sharded), an
explicit --mamba-block-size on every target boundary (a multiple of the target spans' lcm: both
variants run it), or an explicit one off them (pr457 runs it, pr457-guarded refuses it). Budgets are
drawn below and above the variant's cadence.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

from models.geometry import DRAFT, RECURRENT, TARGET, CacheGroup, Deployment, Geometry, Request, builtin_geometry_names
from models.geometry import load_geometry as load
from models.plan import plan
from models.variants import Variant
from proofs.real_vllm.end_to_end import Case, cases_for, differences, model_observation

RETENTIONS = (0, None)
ON_TARGETS, OFF_TARGETS, NOT_GIVEN = "on every target boundary", "off a target boundary", "not given"


def builtin_deployments(variant: Variant) -> list[tuple[Geometry, list[int]]]:
    """Every built-in geometry, at its own budget and at one below the variant's recurrent block,
    with retention 0 and dense."""
    found = []
    for name in builtin_geometry_names():
        geometry = load(name)
        cadence = plan(variant, geometry).cadence
        budgets = sorted({geometry.deployment.max_num_scheduled_tokens, max(1, cadence * 2 // 3)})
        for retention in RETENTIONS:
            d = replace(geometry.deployment, prefix_cache_retention_interval=retention)
            found.append((replace(geometry, deployment=d), budgets))
    return found


def cadence_choices(geometry: Geometry) -> dict[str, int | None]:
    """The --mamba-block-size values a geometry can be given, by kind. Each is a multiple of the
    attention block, the prefix-match unit and the internal checkpoint alignment, as vLLM requires
    of a Mamba group's block."""
    d = geometry.deployment
    unit = math.lcm(d.block_size, d.hash_block_size or 1, d.prefill_checkpoint_alignment or 1)
    targets = math.lcm(unit, *geometry.target_spans())
    choices: dict[str, int | None] = {NOT_GIVEN: None, ON_TARGETS: targets}
    off = next((unit * k for k in range(1, 64) if (unit * k) % targets), None)
    if off is not None:
        choices[OFF_TARGETS] = off
    return choices


def generated_deployment(rng: random.Random, number: int, variant: Variant) -> tuple[Geometry, list[int], str]:
    """One generated deployment with a cadence for PR457, two budgets (below and above the
    variant's cadence) and the kind of cadence it was given."""
    dcp = rng.choice((1, 1, 2, 4, 16))
    block = rng.choice((16, 32, 48, 64, 96, 128))
    groups = []
    for _ in range(rng.choice((1, 1, 2))):
        groups.append(CacheGroup(TARGET, block * rng.choice((1, 1, 2)), dcp_sharded=dcp > 1 and rng.random() < 0.8))
    recurrent_block = block * rng.choice((1, 1, 1, 2))
    groups.append(CacheGroup(RECURRENT, recurrent_block, count=rng.choice((1, 2, 3))))
    drafter = rng.random() < 0.45
    if drafter:
        groups.append(CacheGroup(DRAFT, block, dcp_sharded=dcp > 1 and rng.random() < 0.2, eagle=rng.random() < 0.75))
    eagle_drop = drafter and rng.random() < 0.85
    spans = [g.span(dcp) for g in groups if g.kind != RECURRENT] + [recurrent_block]
    hash_block = math.gcd(*spans)
    deployment = Deployment(
        dcp_size=dcp,
        block_size=block,
        max_num_scheduled_tokens=1,  # each case sets its budget
        long_prefill_token_threshold=rng.choice((0, 0, 0, 0, block * rng.randint(1, 4))),
        eagle_block_drop=eagle_drop,
        hash_lookahead_tokens=rng.choice((0, 0, 1, 2)) if eagle_drop else 0,
        hash_block_size=rng.choice((0, 0, 0, 0, hash_block // rng.choice((1, 2, 4)) or hash_block)),
        prefill_checkpoint_alignment=rng.choice((None, None, 1, 16)),
        offload_blocks_per_chunk=rng.choice((1, 1, 1, 2, 4)),
        prefix_cache_retention_interval=rng.choice((0, 0, None, -1)),  # -1: a multiple of the scheduler block
    )
    geometry = Geometry(
        name=f"pr457-generated-{number}", deployment=deployment, groups=tuple(groups), request=Request(1)
    )
    choices = cadence_choices(geometry)
    kind = rng.choice([ON_TARGETS, ON_TARGETS, NOT_GIVEN, *([OFF_TARGETS] * 2 if OFF_TARGETS in choices else [])])
    explicit = choices[kind]
    if explicit is not None and kind == ON_TARGETS:
        explicit *= rng.choice((1, 1, 2, 3))
    deployment = replace(deployment, mamba_block_size=explicit)
    resolved = plan(variant, replace(geometry, deployment=deployment))
    if deployment.prefix_cache_retention_interval == -1:
        # vLLM asks for a multiple of the scheduler block, and its offload connector for one of every
        # group's offload chunk (blocks_per_chunk of the group's blocks)
        every = int(resolved.split.sched_block) * deployment.offload_blocks_per_chunk
        deployment = replace(deployment, prefix_cache_retention_interval=every * rng.choice((1, 2, 3)))
    geometry = replace(geometry, deployment=deployment)
    cadence = resolved.cadence
    below = rng.randint(max(1, cadence // 3), cadence - 1) if cadence > 1 else 1
    above = cadence * rng.randint(1, 3) + rng.choice((0, 0, rng.randint(1, cadence)))
    return geometry, [below, above], kind


def prompt_limit(geometry: Geometry, budgets: list[int], variant: Variant) -> int:
    """Prompts up to a few scheduler blocks and budgets long on the variant's grids, with a ceiling:
    a cadence off the target boundaries makes the scheduler block an lcm far longer than any grid
    a chunk lands on."""
    resolved = plan(variant, geometry)
    span = max(max(budgets), resolved.cadence, *map(int, resolved.target_spans))
    return min(3 * max(int(resolved.split.sched_block), span), 6 * span) + 7


def sample(cases: list[Case], rng: random.Random, count: int | None) -> list[Case]:
    return cases if count is None or len(cases) <= count else rng.sample(cases, count)


def builtin_cases(variant: Variant, index: int, per_deployment: int | None) -> list[Case]:
    """The cases of the built-in deployment `index` (of `builtin_deployments`), its own request
    among them; `per_deployment` of them at random (None: all)."""
    geometry, budgets = builtin_deployments(variant)[index]
    rng = random.Random(index)
    cases = list(cases_for(geometry, budgets, prompt_limit(geometry, budgets, variant), rng, variant))
    cases.append(Case(geometry, budgets[-1], geometry.request.prompt_tokens))
    return sample(cases, rng, per_deployment)


def generated_cases(variant: Variant, seed: int | None, deployments: int, per_deployment: int | None) -> list[Case]:
    """Cases of `deployments` generated deployments, `per_deployment` of each at random (None: all)."""
    rng = random.Random(seed)
    found = []
    for number in range(deployments):
        geometry, budgets, _ = generated_deployment(rng, number, variant)
        cases = list(cases_for(geometry, budgets, prompt_limit(geometry, budgets, variant), rng, variant))
        found += sample(cases, rng, per_deployment)
    return found


@dataclass
class Tally:
    """Cases compared under one variant: how many, how many the configuration check refused
    (both sides), and every disagreement with the commands that reproduce it."""

    variant: str
    cases: int = 0
    refused: int = 0
    disagreements: list[str] = field(default_factory=list)

    def add(self, other: Tally) -> None:
        self.cases += other.cases
        self.refused += other.refused
        self.disagreements += other.disagreements


def compare(cases: Iterable[Case], real, variant: Variant, progress: Callable[[int, int], None] | None = None) -> Tally:
    """Every case on the model and on `real` (`PatchedCases`, or `RealCases` for the baseline)."""
    cases = list(cases)
    tally = Tally(variant.name)
    for number, case in enumerate(cases, 1):
        model = model_observation(case, variant)
        found = differences(model, real.observe(case, variant))
        tally.cases += 1
        tally.refused += model.rejected is not None and not found
        if found:
            tally.disagreements.append(
                f"{case.label()} (variant {variant.name})\n  "
                + "\n  ".join(found)
                + f"\n  reproduce:\n{case.reproduce(variant=variant)}"
            )
        if progress is not None:
            progress(number, len(cases))
    return tally
