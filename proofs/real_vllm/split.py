"""The real vLLM 0.33.0 split, CP and VALID, called with the model's inputs.

`Scheduler._mamba_block_aligned_split` is called unbound with a namespace as
`self` holding exactly the attributes it reads: the scheduler's block sizes,
budget and flags, and the request's token counts and shared-prefix boundary.
The model writes None as 0; it becomes None here.
"""

from __future__ import annotations

from models.scheduler import SplitCall, SplitParams
from proofs.source.standins import none_if_zero, split_stand_ins


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
            checkpoint_alignment=none_if_zero(alignment),
        )

    def split(self, p: SplitParams, call: SplitCall) -> int:
        scheduler, request = split_stand_ins(p, call)
        return self._split(scheduler, request, call.requested, call.local_hit, call.external_hit)
