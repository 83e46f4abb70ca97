"""Explicit boundary cases: every position at and one off the multiples the
functions round to, crossed with the flags that move those multiples."""

from __future__ import annotations

import itertools

from models.scheduler import SplitCall, SplitParams

BOUNDARY_BLOCKS = (1, 2, 3, 16, 768)


def around(unit: int, multiples=(0, 1, 2, 3)) -> list[int]:
    """0, 1, and each multiple of `unit` with its two neighbours (non-negative)."""
    values = {0, 1}
    for k in multiples:
        values.update((k * unit - 1, k * unit, k * unit + 1))
    return sorted(v for v in values if v >= 0)


def checkpoint_position_cases():
    for block in BOUNDARY_BLOCKS:
        for num_tokens in [*around(block), 99_839, 99_840, 100_000, 100_001]:
            for drop, lookahead in itertools.product((False, True), (0, 1, 2, block, block + 1)):
                yield num_tokens, block, drop, lookahead


def checkpoint_valid_cases():
    for hash_block in (1, 2, 16, 768):
        for cadence in sorted({hash_block, 2 * hash_block, 3 * hash_block, max(1, hash_block // 2)}):
            positions = around(hash_block, (0, 1, 2, 4))
            for start in around(hash_block, (0, 1, 2)):
                ends = sorted({start + d for d in around(cadence, (0, 1, 2, 3))} | set(positions))
                for position, end in itertools.product(positions, ends):
                    for alignment in sorted({0, 1, hash_block, cadence, 3}):
                        yield start, end, position, hash_block, cadence, alignment


def _params_variants(g: int) -> list[SplitParams]:
    small_hash = max(1, g // 4)
    grids = ((g, g), (4 * g, g), (4 * g, small_hash), (g, small_hash))
    budgets = sorted({max(1, g - 1), g, g + 1})
    thresholds = sorted({0, max(1, g - 1), g + 1})
    drops = ((False, 0), (True, 0), (False, 1), (False, 2), (True, 1))
    # (partial hits, checkpoint blocks, alignment, shared prefix)
    checkpoints = ((False, False, 0, False), (True, False, 0, False), (True, True, 1, True), (False, True, 16, False))
    return [
        SplitParams(
            block=g,
            sched_block=sched,
            hash_block=hash_block,
            eagle_drop=drop,
            lookahead=lookahead,
            max_scheduled=budget,
            long_prefill_threshold=threshold,
            partial_hits=partial,
            checkpoint_blocks=blocks,
            checkpoint_alignment=alignment,
            shared_prefix=shared,
        )
        for (sched, hash_block), budget, threshold, (drop, lookahead), (partial, blocks, alignment, shared) in (
            itertools.product(grids, budgets, thresholds, drops, checkpoints)
        )
    ]


def split_cases():
    """Every call shape at the boundaries of one block, each with a deployment
    taken in turn from the deployment variants (a stride coprime to their
    number spreads them over the call shapes)."""
    for g in BOUNDARY_BLOCKS:
        variants = _params_variants(g)
        calls = itertools.product(
            (max(1, g - 1), g, g + 1, 3 * g + 1),  # prompt
            (0, 1, g),  # outputs
            around(g, (0, 1, 2)),  # start
            ("none", "local", "external"),  # what the part of the start past `computed` is
            ("none", "after start", "next boundary", "prompt"),  # junction
        )
        index = 0
        for prompt, outputs, start, hit_kind, junction_kind in calls:
            tokens = prompt + outputs
            prefill_end = max(prompt, tokens - 1)
            hit = 0 if hit_kind == "none" else min(start, g)
            junction = {
                "none": 0,
                "after start": start + 1,
                "next boundary": (start // g + 1) * g,
                "prompt": prompt,
            }[junction_kind]
            ends = {0, 1, g - 1, g, g + 1} | {max(0, prefill_end - start + d) for d in (-1, 0, 1)}
            for requested in sorted(r for r in ends if r >= 0):
                p = variants[(index * 37) % len(variants)]
                index += 1
                yield (
                    p,
                    SplitCall(
                        computed=start - hit,
                        requested=requested,
                        prompt=prompt,
                        tokens=tokens,
                        local_hit=hit if hit_kind == "local" else 0,
                        external_hit=hit if hit_kind == "external" else 0,
                        junction=junction,
                    ),
                )
