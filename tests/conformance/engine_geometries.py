"""Deployments for the end-to-end comparison: the built-in geometries, each at its own budget and
below its cadence, and generated ones that vLLM 0.33.0 accepts: several attention block sizes,
several recurrent groups, EAGLE drafts annotated or not, DCP 1/2/4/16, budgets below and above the
cadence, internal prefill checkpoints, retention 0, dense and a multiple of the scheduler block."""

from __future__ import annotations

import math
import random
from dataclasses import replace

from models.geometry import DRAFT, RECURRENT, TARGET, CacheGroup, Deployment, Geometry, Request, builtin_geometry_names
from models.geometry import load_geometry as load
from models.plan import plan
from models.variants import BASELINE

RETENTIONS = (0, None)


def builtin_deployments() -> list[tuple[Geometry, list[int]]]:
    """Every built-in geometry, at its own budget and at one below its recurrent block, with
    retention 0 and dense."""
    found = []
    for name in builtin_geometry_names():
        geometry = load(name)
        d = geometry.deployment
        cadence = plan(BASELINE, geometry).cadence
        budgets = sorted({d.max_num_scheduled_tokens, max(1, cadence * 2 // 3)})
        for retention in RETENTIONS:
            found.append((_with(geometry, prefix_cache_retention_interval=retention), budgets))
    return found


def _with(geometry: Geometry, **changes) -> Geometry:
    return replace(geometry, deployment=replace(geometry.deployment, **changes))


def random_deployment(rng: random.Random, number: int) -> tuple[Geometry, list[int]]:
    """One generated deployment and two budgets, one below its recurrent block, one above."""
    dcp = rng.choice((1, 1, 2, 4, 16))
    block = rng.choice((16, 32, 48, 64, 96, 128))
    groups = []
    for _ in range(rng.choice((1, 1, 2))):
        groups.append(CacheGroup(TARGET, block * rng.choice((1, 1, 2)), dcp_sharded=dcp > 1 and rng.random() < 0.8))
    cadence = block * rng.choice((1, 1, 1, 2))
    groups.append(CacheGroup(RECURRENT, cadence, count=rng.choice((1, 2, 3))))
    drafter = rng.random() < 0.45
    if drafter:
        groups.append(CacheGroup(DRAFT, block, dcp_sharded=dcp > 1 and rng.random() < 0.2, eagle=rng.random() < 0.75))
    eagle_drop = drafter and rng.random() < 0.85
    lookahead = rng.choice((0, 0, 1, 2)) if eagle_drop else 0
    spans = [g.span(dcp) for g in groups if g.kind != RECURRENT] + [cadence]
    scheduler_block = math.lcm(*spans)
    retention = rng.choice((0, 0, None, scheduler_block * rng.choice((1, 2, 3))))
    hash_spans = [g.span(dcp) for g in groups if g.kind != RECURRENT] + [cadence]
    hash_block = math.gcd(*hash_spans)
    deployment = Deployment(
        dcp_size=dcp,
        block_size=block,
        max_num_scheduled_tokens=1,  # each case sets its budget
        long_prefill_token_threshold=rng.choice((0, 0, 0, 0, block * rng.randint(1, 4))),
        eagle_block_drop=eagle_drop,
        hash_lookahead_tokens=lookahead,
        # vLLM's prefix_match_unit: a divisor of every span, now and then finer than their gcd
        hash_block_size=rng.choice((0, 0, 0, 0, hash_block // rng.choice((1, 2, 4)) or hash_block)),
        prefill_checkpoint_alignment=rng.choice((None, None, 1, 16)),
        offload_blocks_per_chunk=rng.choice((1, 1, 1, 2, 4)),
        prefix_cache_retention_interval=retention,
    )
    geometry = Geometry(
        name=f"generated-{number}", deployment=deployment, groups=tuple(groups), request=Request(prompt_tokens=1)
    )
    below = rng.randint(max(1, cadence // 3), cadence - 1) if cadence > 1 else 1
    above = cadence * rng.randint(2, 6) + rng.choice((0, 0, rng.randint(1, cadence)))
    return geometry, [below, above]


def prompt_limit(geometry: Geometry, budgets: list[int]) -> int:
    """Prompts up to a few scheduler blocks and budgets long: every grid the answer turns on twice."""
    resolved = plan(BASELINE, geometry)
    return 3 * max(int(resolved.split.sched_block), max(budgets), resolved.cadence) + 7
