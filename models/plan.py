"""What a geometry resolves to under a variant: the recurrent cadence, the
grid the split aligns to, and every scheduler flag the split reads (vLLM
0.33.0 platforms/interface.py:750-794, v1/core/sched/scheduler.py:546-662,
v1/core/kv_cache_utils.py:816-918)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from models import arith
from models.config import guard_accepts
from models.errors import GridproofError
from models.geometry import DRAFT, RECURRENT, TARGET, CacheGroup, Geometry
from models.scheduler import SplitParams
from models.variants import Variant


class ConfigurationRejected(GridproofError):
    """The variant's configuration check refuses this geometry."""


@dataclass(frozen=True)
class Plan:
    variant: Variant
    geometry: Geometry
    cadence: int  # R: the recurrent (MambaSpec) block size, where states are published
    split: SplitParams
    target_spans: tuple[int, ...]
    accepted: bool
    prefill_lookahead: object = 0  # k: prefill tokens a multi-module MTP drafter reads past a chunk end


def cadence(variant: Variant, resolved_block, explicit, user_cadence):
    """R, the recurrent spec block. In 0.33.0 align mode it is the resolved
    block (`mamba_block_size := block_size`); PR457 keeps an explicit
    --mamba-block-size."""
    if not variant.keeps_explicit_cadence:
        return resolved_block
    return arith.ite(explicit, user_cadence, resolved_block)


def split_grid(variant: Variant, recurrent_cadence, spec_blocks):
    """The grid the split aligns to: 0.33.0 reads cache_config.block_size, reset
    after KV planning to the smallest prefix-cacheable spec block
    (v1/engine/core.py:335-349); PR457 reads the cadence."""
    if variant.splits_on_cadence:
        return recurrent_cadence
    return arith.minimum_of(spec_blocks)


@dataclass(frozen=True)
class GroupGrid:
    """What the cache groups resolve to under a variant: the recurrent cadence,
    each group's spec block and span, and the grid the split aligns to."""

    cadence: object
    spec_blocks: tuple
    spans: tuple
    split_block: object
    target_spans: tuple
    draft_spans: tuple


def of_kind(groups: Sequence[CacheGroup], kind: str) -> tuple[CacheGroup, ...]:
    return arith.select(groups, lambda g: g.kind == kind)


def recurrent_cadence(variant: Variant, groups: Sequence[CacheGroup], explicit, user_cadence):
    """R: the lcm of the recurrent groups' spec blocks."""
    recurrent = of_kind(groups, RECURRENT)
    return arith.lcm_of(arith.each(recurrent, lambda g: cadence(variant, g.block_size, explicit, user_cadence)))


def group_grid(variant: Variant, groups: Sequence[CacheGroup], dcp_size, explicit, user_cadence) -> GroupGrid:
    """Any number of groups, as a tuple or as a family standing for any
    number of each kind (arith.Family); every size and flag may be a Z3 term
    (the catalogue's symbolic deployment reads this very function). Groups
    are read only through arith's maps and folds, which a family answers."""
    r = recurrent_cadence(variant, groups, explicit, user_cadence)

    def spec_block(group: CacheGroup):
        return r if group.kind == RECURRENT else group.block_size

    def span(group: CacheGroup):
        return CacheGroup(group.kind, spec_block(group), group.dcp_sharded).span(dcp_size)

    spec_blocks = arith.each(groups, spec_block)
    return GroupGrid(
        cadence=r,
        spec_blocks=spec_blocks,
        spans=arith.each(groups, span),
        split_block=split_grid(variant, r, spec_blocks),
        target_spans=arith.each(of_kind(groups, TARGET), span),
        draft_spans=arith.each(of_kind(groups, DRAFT), span),
    )


def plan(variant: Variant, geometry: Geometry) -> Plan:
    """What `simulate` runs. Every size and flag of the deployment and the
    groups may be a Z3 term, except which groups are EAGLE groups and whether
    an explicit cadence is given (the catalogue's symbolic deployment reads
    this very function, proofs/catalog/plan.py)."""
    d = geometry.deployment
    explicit = d.mamba_block_size
    resolved = group_grid(variant, geometry.groups, d.dcp_size, explicit is not None, explicit)
    r, spans = resolved.cadence, resolved.spans
    sched_block = arith.lcm_of(spans)
    # H: the deployment's prefix-match unit, else the gcd of the resolved
    # spec spans (kv_cache_utils.py:816-918), the cadence R included.
    hash_block = arith.ite(d.hash_block_size == 0, arith.gcd_of(spans), d.hash_block_size)
    enabled = arith.ite(d.dcp_size == 1, r > hash_block, r >= hash_block)
    partial = arith.all_of(hash_block < sched_block, enabled)
    lookahead = d.hash_lookahead_tokens
    alignment = 0 if d.prefill_checkpoint_alignment is None else d.prefill_checkpoint_alignment
    eagle_spans = geometry.eagle_spans()
    params = SplitParams(
        block=resolved.split_block,
        sched_block=sched_block,
        hash_block=hash_block,
        eagle_drop=arith.all_of(d.eagle_block_drop, lookahead == 0),
        lookahead=lookahead,
        max_scheduled=d.split_token_budget,
        long_prefill_threshold=d.long_prefill_token_threshold,
        partial_hits=partial,
        checkpoint_blocks=alignment != 0,
        checkpoint_alignment=alignment,
        shared_prefix=arith.all_of(d.shared_prefix_checkpoint, partial, bool(eagle_spans)),
        eagle_spans=eagle_spans,
        eagle_annotated=bool(eagle_spans),
    )
    return Plan(
        variant=variant,
        geometry=geometry,
        cadence=r,
        split=params,
        target_spans=resolved.target_spans,
        accepted=guard_accepts(variant, r, resolved.target_spans),
        prefill_lookahead=d.prefill_lookahead,
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
