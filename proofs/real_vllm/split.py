"""The real vLLM 0.33.0 split, CP and VALID, called with the model's inputs.

`Scheduler._mamba_block_aligned_split` is called unbound with a namespace as
`self` holding exactly the attributes it reads: the scheduler's block sizes,
budget and flags, and the request's token counts and shared-prefix boundary.
The model writes None as 0; it becomes None here.
"""

from __future__ import annotations

from types import SimpleNamespace

from models.scheduler import SplitCall, SplitParams


def _none_if_zero(value):
    return None if value == 0 else value


def _namespace(role: str, **attributes):
    return SimpleNamespace(**attributes)


def split_stand_ins(p: SplitParams, call: SplitCall, make=_namespace, unset=_none_if_zero, physical_block=None, **more):
    """`self` and `request` holding exactly what `_mamba_block_aligned_split`
    reads, from the model's split inputs. `make(role, **attributes)` builds
    each object (plain namespaces here; the source executor's refuse any
    other attribute), and `unset` turns the model's 0 into vLLM's None.
    `physical_block`: cache_config.block_size when the grid is not it (a
    patched split reading the recurrent cadence); `more`: further attributes
    of the scheduler (the patched split's `mamba_block_size`, ...)."""
    scheduler = make(
        "the scheduler (self)",
        cache_config=make("cache_config", block_size=p.block if physical_block is None else physical_block),
        block_size=p.sched_block,
        hash_block_size=p.hash_block,
        max_num_scheduled_tokens=p.max_scheduled,
        scheduler_config=make("scheduler_config", long_prefill_token_threshold=p.long_prefill_threshold),
        use_eagle_block_drop=p.eagle_drop,
        num_hash_lookahead_tokens=p.lookahead,
        mamba_partial_cache_hit=p.partial_hits,
        mamba_has_prefill_checkpoint_blocks=p.checkpoint_blocks,
        mamba_prefill_checkpoint_alignment=unset(p.checkpoint_alignment),
        mamba_shared_prefix_checkpoint=p.shared_prefix,
        **more,
    )
    request = make(
        "the request",
        num_computed_tokens=call.computed,
        num_prompt_tokens=call.prompt,
        num_tokens=call.tokens,
        shared_prefix_boundary=call.junction,
    )
    return scheduler, request


class RealSplit:
    """Loads vLLM on construction: a missing or renamed vLLM fails loudly here."""

    def __init__(self) -> None:
        from vllm.v1.core.sched.scheduler import Scheduler
        from vllm.v1.kv_cache_interface import (
            get_mamba_prefill_checkpoint_position,
            is_mamba_prefill_checkpoint_valid,
        )

        self._split = Scheduler._mamba_block_aligned_split
        self._cp = get_mamba_prefill_checkpoint_position
        self._valid = is_mamba_prefill_checkpoint_valid

    def checkpoint_position(self, num_tokens, block, drop_eagle_block, lookahead):
        return self._cp(num_tokens, block, drop_eagle_block, num_hash_lookahead_tokens=lookahead)

    def checkpoint_valid(self, query_start, query_end, position, hash_block, cadence, alignment):
        return self._valid(
            query_start=query_start,
            query_end=query_end,
            checkpoint_position=position,
            hash_block_size=hash_block,
            mamba_block_size=cadence,
            checkpoint_alignment=_none_if_zero(alignment),
        )

    def split(self, p: SplitParams, call: SplitCall) -> int:
        scheduler, request = split_stand_ins(p, call)
        return self._split(scheduler, request, call.requested, call.local_hit, call.external_hit)
