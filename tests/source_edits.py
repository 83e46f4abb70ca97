"""Single edits of vLLM's source, as a reviewer would try `gridproof source`
on a branch: faults it must refute with an input that replays, refactors it
must prove. Shared by tests/test_source_edits.py; each edit is applied to a
copy of the installed vLLM 0.33.0 (or of it with a project patch applied)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from models.variants import VARIANTS
from proofs.source import patches
from proofs.source.loader import VllmSource

# The modules the executor reads for the functions it checks.
MODULES = (
    "v1/core/sched/scheduler.py",
    "v1/kv_cache_interface.py",
    "v1/core/kv_cache_utils.py",
    "utils/math_utils.py",
    "platforms/interface.py",
    "model_executor/layers/mamba/abstract.py",
    "v1/worker/mamba_utils.py",
    "v1/worker/gpu/model_states/mamba_hybrid.py",
    "config/cache.py",
    "_version.py",
)


@dataclass(frozen=True)
class Edit:
    name: str
    function: str  # the gridproof source function it should move (or not)
    module: str  # under vllm/
    old: str
    new: str
    fault: bool  # True: must be REFUTED; False: a refactor, must be PROVED
    patch: str | None = None  # on the tree with this project patch applied (its variant)

    @property
    def variant(self):
        return VARIANTS[self.patch] if self.patch else VARIANTS["baseline"]


def tree(root: Path, edit: Edit) -> VllmSource:
    """A vLLM tree under `root` holding MODULES as installed (patched when
    the edit says), with the edit applied; the edit must match exactly once."""
    installed = VllmSource.installed()
    assert installed is not None and installed.version() == "0.33.0", "vLLM 0.33.0 must be installed"
    base = root / "vllm"
    for relative in MODULES:
        target = base / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        module = "vllm." + relative[:-3].replace("/", ".")
        shutil.copy(Path(installed.filename(module)), target)
    if edit.patch:
        diff = patches.diff_file(edit.patch, "0.33.0")
        files = [f for f in patches.parse(diff.read_text(), str(diff)) if (f.new or "").startswith("vllm/")]
        patches.apply(files, root, str(diff))
    with_methods(root)
    path = base / edit.module
    text = path.read_text()
    assert text.count(edit.old) == 1, f"{edit.name}: the edit's text occurs {text.count(edit.old)} times"
    path.write_text(text.replace(edit.old, edit.new))
    return VllmSource.from_path(str(root))


SPLIT = "v1/core/sched/scheduler.py"
KV = "v1/kv_cache_interface.py"
UTILS = "v1/core/kv_cache_utils.py"
PLATFORM = "platforms/interface.py"
ABSTRACT = "model_executor/layers/mamba/abstract.py"
WORKER = "v1/worker/mamba_utils.py"
MATH = "utils/math_utils.py"

MAX_PREFILL = """            max_prefill_tokens = self.max_num_scheduled_tokens
            long_prefill_threshold = self.scheduler_config.long_prefill_token_threshold
            if long_prefill_threshold > 0:
                max_prefill_tokens = min(max_prefill_tokens, long_prefill_threshold)
"""
SPLIT_DEF = "    def _mamba_block_aligned_split(\n"

EDITS = (
    # --- faults in 0.33.0 ---------------------------------------------------------------
    Edit(
        "checkpoint block choice swapped",
        "split",
        SPLIT,
        "self.hash_block_size if self.mamba_partial_cache_hit else self.block_size",
        "self.block_size if self.mamba_partial_cache_hit else self.hash_block_size",
        fault=True,
    ),
    Edit(
        "sub-block advance on an aligned end at the start",
        "split",
        SPLIT,
        "if aligned_end > start or block_size <= max_prefill_tokens:",
        "if aligned_end >= start or block_size <= max_prefill_tokens:",
        fault=True,
    ),
    Edit(
        "junction floored from zero, not from the start",
        "split",
        SPLIT,
        "block_floored = start + (junction - start) // block_size * block_size",
        "block_floored = junction // block_size * block_size",
        fault=True,
    ),
    Edit(
        "prefill end without the resumed request's outputs",
        "split",
        SPLIT,
        "prefill_end = max(request.num_prompt_tokens, request.num_tokens - 1)",
        "prefill_end = request.num_prompt_tokens",
        fault=True,
    ),
    Edit(
        "checkpoint position leaves no token without a lookahead",
        "checkpoint_position",
        KV,
        "else num_tokens - max(1, num_hash_lookahead_tokens)",
        "else num_tokens - max(0, num_hash_lookahead_tokens)",
        fault=True,
    ),
    Edit(
        "checkpoint alignment keeps the last layer's",
        "checkpoint_alignment",
        ABSTRACT,
        "alignment = lcm(alignment, layer_alignment)",
        "alignment = layer_alignment",
        fault=True,
    ),
    Edit(
        "fused pre-copy without the accepted-token bias",
        "state_columns",
        WORKER,
        "fused.token_bias.np[i] = accept_token_bias",
        "fused.token_bias.np[i] = 0",
        fault=True,
    ),
    Edit(
        "kernel block alignment the smaller of kernel and block",
        "block_size_resolution",
        PLATFORM,
        """            kernel_block_alignment_size = max(
                min(""",
        """            kernel_block_alignment_size = min(
                min(""",
        fault=True,
    ),
    Edit(
        "ceiling of the page ratio written as floor plus one",
        "block_size_resolution",
        PLATFORM,
        """        attn_block_size = kernel_block_alignment_size * cdiv(
            mamba_page_size,
            kernel_block_alignment_size * attn_page_size_1_token,
        )""",
        """        attn_block_size = kernel_block_alignment_size * (
            mamba_page_size // (kernel_block_alignment_size * attn_page_size_1_token) + 1
        )""",
        fault=True,
    ),
    Edit(
        "the Mamba page padded even when the pages are equal",
        "block_size_resolution",
        PLATFORM,
        "        if attn_page_size == mamba_page_size:\n            return\n",
        "",
        fault=True,
    ),
    Edit(
        "step kernel bias off by one",
        "advanced_state_column",
        WORKER,
        "src_off = tl.maximum(num_accepted - 1, 0)",
        "src_off = tl.maximum(num_accepted, 0)",
        fault=True,
    ),
    # --- refactors of 0.33.0 ---------------------------------------------------------------
    Edit(
        "the prefill budget extracted as a Scheduler method",
        "split",
        SPLIT,
        MAX_PREFILL,
        "            max_prefill_tokens = self._mamba_max_prefill_tokens()\n",
        fault=False,
    ),
    Edit(
        "B * cdiv(x, B) as round_up",
        "block_size_resolution",
        PLATFORM,
        """        attn_block_size = backend_block_alignment * cdiv(
            attn_block_size, backend_block_alignment
        )""",
        """        from vllm.utils.math_utils import round_up

        attn_block_size = round_up(attn_block_size, backend_block_alignment)""",
        fault=False,
    ),
    Edit(
        "cdiv rewritten as (a + b - 1) // b",
        "block_size_resolution",
        MATH,
        "    return -(a // -b)",
        "    return (a + b - 1) // b",
        fault=False,
    ),
    Edit(
        "next boundary as start minus its remainder",
        "split",
        SPLIT,
        "next_block_boundary = (start // block_size + 1) * block_size",
        "next_block_boundary = start - start % block_size + block_size",
        fault=False,
    ),
    Edit(
        "checkpoint position as limit minus its remainder",
        "checkpoint_position",
        KV,
        "checkpoint_position = proof_limit // hash_block_size * hash_block_size",
        "checkpoint_position = proof_limit - proof_limit % hash_block_size",
        fault=False,
    ),
    Edit(
        "the read column as a ceiling",
        "state_columns",
        WORKER,
        "prev_state_idx = (req_state.num_computed_tokens - 1) // block_size",
        "prev_state_idx = cdiv(req_state.num_computed_tokens, block_size) - 1",
        fault=False,
    ),
    Edit(
        "the layers' alignments folded by one lcm call",
        "checkpoint_alignment",
        ABSTRACT,
        """    alignment = 1
    for layer in get_layers_from_vllm_config(
        vllm_config,
        MambaBase,  # type: ignore[type-abstract]
    ).values():
        layer_alignment = layer.get_prefill_checkpoint_alignment()
        if layer_alignment is None:
            return None
        alignment = lcm(alignment, layer_alignment)
    return alignment""",
        """    alignments = [
        layer.get_prefill_checkpoint_alignment()
        for layer in get_layers_from_vllm_config(vllm_config, MambaBase).values()
    ]
    if any(a is None for a in alignments):
        return None
    return lcm(1, *alignments)""",
        fault=False,
    ),
    Edit(
        "running column without the speculative blocks",
        "state_columns",
        WORKER,
        "curr_state_idx = num_blocks - 1 - num_speculative_blocks",
        "curr_state_idx = num_blocks - 1",
        fault=True,
    ),
    Edit(
        "MLA kernel floor of 64",
        "block_size_resolution",
        PLATFORM,
        "kernel_block_alignment_size = max(kernel_block_alignment_size, 128)",
        "kernel_block_alignment_size = max(kernel_block_alignment_size, 64)",
        fault=True,
    ),
    Edit(
        "internal checkpoint one hash block short",
        "checkpoint_valid",
        KV,
        "and query_start + hash_block_size <= checkpoint_position",
        "and query_start + hash_block_size < checkpoint_position",
        fault=True,
    ),
    Edit(
        "the earliest stop by a loop",
        "split",
        SPLIT,
        "        end = min((s for s in stops if start < s < end), default=end)\n",
        "        for stop in stops:\n            if start < stop < end:\n                end = stop\n",
        fault=False,
    ),
    Edit(
        "the earliest stop from a list",
        "split",
        SPLIT,
        "        end = min((s for s in stops if start < s < end), default=end)\n",
        "        inside = [s for s in stops if start < s < end]\n        if inside:\n            end = min(inside)\n",
        fault=False,
    ),
    Edit(
        "the aligned end by a nested function",
        "split",
        SPLIT,
        "            aligned_end = end // block_size * block_size\n",
        "            def floor_to(x, b):\n                return x - x % b\n\n"
        "            aligned_end = floor_to(end, block_size)\n",
        fault=False,
    ),
    Edit(
        "the aligned end by a static method",
        "split",
        SPLIT,
        "            aligned_end = end // block_size * block_size\n",
        "            aligned_end = self._floor_to(end, block_size)\n",
        fault=False,
    ),
    Edit(
        "the MLA floor as a conditional expression",
        "block_size_resolution",
        PLATFORM,
        """            if model_config.use_mla:
                # TRTLLM/FlashInfer MLA decode kernels require the physical
                # number of kernel blocks to be aligned to 128 / kernel_block_size.
                # For hybrid MLA/Mamba models, make the manager block size a
                # multiple of 128 so split kernel blocks keep that invariant.
                kernel_block_alignment_size = max(kernel_block_alignment_size, 128)""",
        """            kernel_block_alignment_size = (
                max(kernel_block_alignment_size, 128) if model_config.use_mla else kernel_block_alignment_size
            )""",
        fault=False,
    ),
    Edit(
        "the copy test as a membership",
        "state_columns",
        WORKER,
        "if prev_state_idx != -1 and prev_state_idx != curr_state_idx:",
        "if prev_state_idx not in (-1, curr_state_idx):",
        fault=False,
    ),
    Edit(
        "the layers' alignments by functools.reduce",
        "checkpoint_alignment",
        ABSTRACT,
        """    alignment = 1
    for layer in get_layers_from_vllm_config(
        vllm_config,
        MambaBase,  # type: ignore[type-abstract]
    ).values():
        layer_alignment = layer.get_prefill_checkpoint_alignment()
        if layer_alignment is None:
            return None
        alignment = lcm(alignment, layer_alignment)
    return alignment""",
        """    import functools

    alignments = [
        layer.get_prefill_checkpoint_alignment()
        for layer in get_layers_from_vllm_config(vllm_config, MambaBase).values()
    ]
    if None in alignments:
        return None
    return functools.reduce(lcm, alignments, 1)""",
        fault=False,
    ),
    Edit(
        "the kernel's bias by tl.where",
        "advanced_state_column",
        WORKER,
        "src_off = tl.maximum(num_accepted - 1, 0)",
        "src_off = tl.where(num_accepted > 1, num_accepted - 1, 0)",
        fault=False,
    ),
    Edit(
        "the seeded column by a static method of the model state",
        "seeded_state_column",
        "v1/worker/gpu/model_states/mamba_hybrid.py",
        """            self._mamba_state_idx_gpu[req_index].fill_(
                (new_req_data.num_computed_tokens - 1) // mamba_block_size
            )""",
        """            self._mamba_state_idx_gpu[req_index].fill_(
                self._seed_column(new_req_data.num_computed_tokens, mamba_block_size)
            )

    @staticmethod
    def _seed_column(num_computed_tokens, mamba_block_size):
        return (num_computed_tokens - 1) // mamba_block_size""",
        fault=False,
    ),
    # --- on the pr457-guarded patch ----------------------------------------------------------
    Edit(
        "the patched split back on the physical block",
        "split",
        SPLIT,
        "        block_size = self.mamba_block_size\n",
        "        block_size = self.cache_config.block_size\n",
        fault=True,
        patch="pr457-guarded",
    ),
    Edit(
        "annotated EAGLE boundary not converted onto the cadence",
        "last_cacheable_position",
        KV,
        "        return reusable // mamba_block_size * mamba_block_size\n",
        "        return reusable\n",
        fault=True,
        patch="pr457-guarded",
    ),
    Edit(
        "an explicit cadence overwritten, a default one kept",
        "block_size_resolution",
        PLATFORM,
        "            and not cache_config.user_specified_mamba_block_size\n",
        "            and cache_config.user_specified_mamba_block_size\n",
        fault=True,
        patch="pr457-guarded",
    ),
    Edit(
        "the recurrent cadence the largest Mamba block, not the lcm",
        "recurrent_cadence",
        UTILS,
        "    return math.lcm(*block_sizes) if block_sizes else None",
        "    return max(block_sizes) if block_sizes else None",
        fault=True,
        patch="pr457-guarded",
    ),
    Edit(
        "the guard reads the block, not the span under DCP",
        "configuration_check",
        UTILS,
        "        if mamba_block_size % span != 0:",
        "        if mamba_block_size % kv_cache_groups[group_id].kv_cache_spec.block_size != 0:",
        fault=True,
        patch="pr457-guarded",
    ),
    Edit(
        "unannotated draft groups' spans taken too",
        "eagle_spans",
        UTILS,
        "        if group.is_eagle_group and not isinstance(group.kv_cache_spec, MambaSpec)\n",
        "        if not isinstance(group.kv_cache_spec, MambaSpec) and group.kv_cache_spec.is_draft\n",
        fault=True,
        patch="pr457-guarded",
    ),
    Edit(
        "the guard checks the draft groups too",
        "configuration_check",
        UTILS,
        "        and not group.kv_cache_spec.is_draft\n",
        "",
        fault=True,
        patch="pr457-guarded",
    ),
    Edit(
        "annotated EAGLE boundary converted without the block drop",
        "last_cacheable_position",
        KV,
        "    if drop_eagle_block and eagle_group_block_spans:",
        "    if eagle_group_block_spans:",
        fault=True,
        patch="pr457-guarded",
    ),
    Edit(
        "the guard checked against the lcm of the spans",
        "configuration_check",
        UTILS,
        "        if mamba_block_size % span != 0:",
        "        if mamba_block_size % math.lcm(*spans.values()) != 0:",
        fault=False,
        patch="pr457-guarded",
    ),
    Edit(
        "the recurrent cadence folded by functools.reduce",
        "recurrent_cadence",
        UTILS,
        "    return math.lcm(*block_sizes) if block_sizes else None",
        "    import functools\n\n    return functools.reduce(math.lcm, block_sizes) if block_sizes else None",
        fault=False,
        patch="pr457-guarded",
    ),
    Edit(
        "the patched cadence read through a Scheduler property",
        "split",
        SPLIT,
        "        block_size = self.mamba_block_size\n",
        "        block_size = self.mamba_cadence\n",
        fault=False,
        patch="pr457-guarded",
    ),
    Edit(
        "the EAGLE conversion written with round_down",
        "last_cacheable_position",
        KV,
        "        return reusable // mamba_block_size * mamba_block_size\n",
        "        from vllm.utils.math_utils import round_down\n\n"
        "        return round_down(reusable, mamba_block_size)\n",
        fault=False,
        patch="pr457-guarded",
    ),
)

# Definitions an edit's refactor calls, added to the Scheduler class.
SCHEDULER_METHODS = """
    def _mamba_max_prefill_tokens(self) -> int:
        max_prefill_tokens = self.max_num_scheduled_tokens
        long_prefill_threshold = self.scheduler_config.long_prefill_token_threshold
        if long_prefill_threshold > 0:
            max_prefill_tokens = min(max_prefill_tokens, long_prefill_threshold)
        return max_prefill_tokens

    @staticmethod
    def _floor_to(x: int, b: int) -> int:
        return x // b * b

    @property
    def mamba_cadence(self) -> int:
        return self.mamba_block_size

"""


def with_methods(root: Path) -> None:
    """Add SCHEDULER_METHODS to the tree's Scheduler, before the split."""
    path = root / "vllm" / SPLIT
    text = path.read_text()
    assert text.count(SPLIT_DEF) == 1
    path.write_text(text.replace(SPLIT_DEF, SCHEDULER_METHODS.lstrip("\n") + SPLIT_DEF))
