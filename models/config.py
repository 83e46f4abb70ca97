"""Block-size resolution: `Platform._align_hybrid_block_size`, vLLM 0.33.0
(platforms/interface.py:940-1137), and the one
line PR457 changes.

Unset optional values are 0 here (vLLM's None): `mamba_block_size` and the
padded page are constrained > 0 when set, so 0 is never a real value. The
conformance tests map None <-> 0 at the boundary.
"""

from __future__ import annotations

from dataclasses import dataclass

from models import arith
from models.variants import Variant


@dataclass(frozen=True)
class ConfigInputs:
    block_size: int  # cache_config.block_size on entry (user's or backend preferred)
    mamba_block_size: int  # cache_config.mamba_block_size on entry, 0 = None
    mamba_page_size_padded: int  # on entry, 0 = None
    attn_page_per_token: int  # attention page bytes for one token (Pa)
    mamba_page: int  # largest Mamba state page in bytes (Pm)
    kernel_min: object  # smallest kernel block of the selected backend
    backend_alignment: object  # lcm of every non-SSM backend's smallest kernel block (1 if none)
    use_mla: object  # bool
    align_mode: object  # bool: mamba_cache_mode == "align"
    checkpoint_alignment: int  # lcm of layers' prefill checkpoint alignments, 0 = None
    explicit_mamba_block_size: object = False  # bool: --mamba-block-size given (PR457)


@dataclass(frozen=True)
class ResolvedConfig:
    block_size: object
    mamba_block_size: object
    mamba_page_size_padded: object
    kernel_alignment: object  # K, after the MLA floor and checkpoint alignment


MLA_KERNEL_FLOOR = 128


def resolve(variant: Variant, c: ConfigInputs) -> ResolvedConfig:
    """`_align_hybrid_block_size` on `c` under `variant`: the block, cadence, padded page and kernel alignment."""
    kernel = arith.maximum(c.kernel_min, c.block_size)
    kernel = arith.ite(c.use_mla, arith.maximum(kernel, MLA_KERNEL_FLOOR), kernel)
    checkpoint = arith.ite(c.checkpoint_alignment == 0, 1, c.checkpoint_alignment)
    kernel = arith.ite(c.align_mode, arith.lcm(kernel, checkpoint), kernel)
    aligned = kernel * arith.cdiv(c.mamba_page, kernel * c.attn_page_per_token)
    aligned = c.backend_alignment * arith.cdiv(aligned, c.backend_alignment)
    block_size = arith.ite(c.block_size < aligned, aligned, c.block_size)

    overwrite = c.align_mode
    if variant.keeps_explicit_cadence:
        overwrite = arith.all_of(c.align_mode, arith.negate(c.explicit_mamba_block_size))
    mamba_block_size = arith.ite(overwrite, block_size, c.mamba_block_size)

    attn_page = block_size * c.attn_page_per_token
    padded = arith.ite(attn_page == c.mamba_page, c.mamba_page_size_padded, attn_page)

    # Pm == 0: vLLM returns before changing anything.
    no_state = c.mamba_page == 0
    return ResolvedConfig(
        block_size=arith.ite(no_state, c.block_size, block_size),
        mamba_block_size=arith.ite(no_state, c.mamba_block_size, mamba_block_size),
        mamba_page_size_padded=arith.ite(no_state, c.mamba_page_size_padded, padded),
        kernel_alignment=kernel,
    )


def guard_accepts(variant: Variant, cadence, target_spans) -> object:
    """The configuration check of `pr457-guarded`: the recurrent cadence is a
    multiple of every target-attention group's span. Other variants accept all."""
    if not variant.guarded:
        return True
    return arith.all_in(arith.divides(span, cadence) for span in target_spans)
