"""What a geometry resolves to under a variant: the recurrent cadence, the
grid the split aligns to, and every scheduler flag the split reads
(vllm-align-mode.md sections 1.3, 2.2 and 3)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from models.config import guard_accepts
from models.geometry import DRAFT, RECURRENT, TARGET, Geometry
from models.scheduler import SplitParams
from models.variants import Variant


class ConfigurationRejected(ValueError):
    """The variant's configuration check refuses this geometry."""


@dataclass(frozen=True)
class Plan:
    variant: Variant
    geometry: Geometry
    cadence: int  # R: the recurrent (MambaSpec) block size, where states are published
    split: SplitParams
    target_spans: tuple[int, ...]
    accepted: bool


def recurrent_cadence(variant: Variant, geometry: Geometry) -> int:
    """R. In 0.33.0 align mode the recurrent spec block is the physical block
    (the group's block_size); PR457 keeps an explicit --mamba-block-size."""
    explicit = geometry.deployment.mamba_block_size
    cadences = [g.block_size for g in geometry.of_kind(RECURRENT)]
    if variant.keeps_explicit_cadence and explicit is not None:
        cadences = [explicit for _ in cadences]
    return math.lcm(*cadences)


def plan(variant: Variant, geometry: Geometry) -> Plan:
    d = geometry.deployment
    cadence = recurrent_cadence(variant, geometry)
    spans = []
    spec_blocks = []
    for group in geometry.groups:
        block = cadence if group.kind == RECURRENT else group.block_size
        spec_blocks.append(block)
        spans.append(block * (d.dcp_size if group.dcp_sharded else 1))
    # After KV planning, cache_config.block_size is the smallest spec block of
    # the prefix-cacheable groups (v1/engine/core.py:335-349).
    cache_block = min(spec_blocks)
    split_on_cadence = variant.splits_on_cadence and variant.mutation != "physical-block-cadence"
    block = cadence if split_on_cadence else cache_block
    sched_block = math.lcm(*spans)
    hash_block = geometry.hash_block_size()
    enabled = cadence > hash_block if d.dcp_size == 1 else cadence >= hash_block
    partial = hash_block < sched_block and enabled
    lookahead = d.hash_lookahead_tokens
    eagle_drop = d.eagle_block_drop and lookahead == 0
    has_eagle_groups = any(g.eagle for g in geometry.of_kind(DRAFT))
    alignment = d.prefill_checkpoint_alignment or 0
    params = SplitParams(
        block=block,
        sched_block=sched_block,
        hash_block=hash_block,
        eagle_drop=eagle_drop,
        lookahead=lookahead,
        max_scheduled=d.max_num_scheduled_tokens,
        long_prefill_threshold=d.long_prefill_token_threshold,
        partial_hits=partial,
        checkpoint_blocks=alignment != 0,
        checkpoint_alignment=alignment,
        shared_prefix=d.shared_prefix_checkpoint and partial and has_eagle_groups,
        eagle_spans=geometry.eagle_spans(),
    )
    targets = geometry.target_spans()
    return Plan(
        variant=variant,
        geometry=geometry,
        cadence=cadence,
        split=params,
        target_spans=targets,
        accepted=bool(guard_accepts(variant, cadence, targets)),
    )


def checked_plan(variant: Variant, geometry: Geometry) -> Plan:
    result = plan(variant, geometry)
    if not result.accepted:
        raise ConfigurationRejected(
            f"{variant.name} rejects {geometry.name}: recurrent cadence {result.cadence} is not a "
            f"multiple of every target-attention span {list(result.target_spans)}"
            " (pass an explicit --mamba-block-size that is)"
        )
    return result
