"""Configurations for block-size resolution, and what the model is given for one.

The model takes byte counts and kernel minima as inputs (`ConfigInputs`); they
are derived here from the scenario by their definitions, independently of
vLLM's code: an attention page per token is K and V (one latent for MLA) per
KV head, a Mamba page is the sum of its state tensors.
"""

from __future__ import annotations

import itertools
import math
import random

from hypothesis import strategies as st

from models.config import ConfigInputs, resolve
from models.variants import BASELINE
from proofs.real_vllm.config import Backend, ConfigScenario

DTYPE_BYTES = {"int8": 1, "float16": 2, "bfloat16": 2, "float32": 4}
MODEL_DTYPES = ("float16", "bfloat16", "float32")
BLOCK_SIZES = (1, 16, 32, 64, 128, 256, 528, 768, 1024)
KERNEL_SIZES = (1, 16, 32, 64, 128, 256)
ALIGNMENTS = (1, 16, 64, 256, 768)


def kernel_min(backend: Backend) -> int:
    return min(s[1] if isinstance(s, tuple) else s for s in backend.kernel_sizes)


def attention_page_per_token(use_mla: bool, num_kv_heads: int, head_size: int, dtype: str) -> int:
    return num_kv_heads * (head_size if use_mla else 2 * head_size) * DTYPE_BYTES[dtype]


def mamba_page(shapes, dtypes) -> int:
    return sum(math.prod(shape) * DTYPE_BYTES[d] for shape, d in zip(shapes, dtypes, strict=True))


def checkpoint_alignment(layer_alignments) -> int:
    """The lcm of the layers' alignments (1 for no layer), 0 (None) if one has none."""
    if None in layer_alignments:
        return 0
    return math.lcm(*layer_alignments)


def model_inputs(s: ConfigScenario, mamba_page_bytes: int | None = None) -> ConfigInputs:
    return ConfigInputs(
        block_size=s.block_size,
        mamba_block_size=s.mamba_block_size or 0,
        mamba_page_size_padded=s.mamba_page_size_padded or 0,
        attn_page_per_token=attention_page_per_token(s.use_mla, s.num_kv_heads, s.head_size, s.dtype),
        mamba_page=mamba_page(s.mamba_shapes, s.mamba_dtypes) if mamba_page_bytes is None else mamba_page_bytes,
        kernel_min=kernel_min(s.backends[0]),
        backend_alignment=math.lcm(*(kernel_min(b) for b in s.backends if b.kernel_sizes)),
        use_mla=s.use_mla,
        align_mode=s.align_mode,
        checkpoint_alignment=checkpoint_alignment(s.layer_alignments),
    )


def model_resolve(s: ConfigScenario, mamba_page_bytes: int | None = None) -> tuple:
    """(block_size, mamba_block_size, mamba_page_size_padded), None for the model's 0."""
    r = resolve(BASELINE, model_inputs(s, mamba_page_bytes))
    return r.block_size, r.mamba_block_size or None, r.mamba_page_size_padded or None


# --- Hypothesis ------------------------------------------------------------------------------------

_kernel_size = st.one_of(
    st.sampled_from(KERNEL_SIZES),
    st.integers(1, 300),
    st.builds(lambda n: ("multiple", n), st.one_of(st.sampled_from(KERNEL_SIZES), st.integers(1, 300))),
)
_backend = st.builds(Backend, st.lists(_kernel_size, min_size=1, max_size=3).map(tuple))
_optional_backend = st.builds(Backend, st.lists(_kernel_size, max_size=3).map(tuple))
_size = st.one_of(st.sampled_from(BLOCK_SIZES), st.integers(1, 4096))


@st.composite
def config_scenarios(draw) -> ConfigScenario:
    use_mla = draw(st.booleans())
    shapes = draw(st.lists(st.lists(st.integers(0, 4096), min_size=1, max_size=3).map(tuple), min_size=1, max_size=3))
    return ConfigScenario(
        block_size=draw(_size),
        mamba_block_size=draw(st.one_of(st.none(), _size)),
        mamba_page_size_padded=draw(st.one_of(st.none(), st.integers(1, 1 << 26))),
        align_mode=draw(st.booleans()),
        use_mla=use_mla,
        num_kv_heads=1 if use_mla else draw(st.integers(1, 16)),
        head_size=draw(st.one_of(st.sampled_from((64, 128, 256, 576)), st.integers(1, 512))),
        dtype=draw(st.sampled_from(MODEL_DTYPES)),
        mamba_shapes=tuple(shapes),
        mamba_dtypes=tuple(draw(st.sampled_from(tuple(DTYPE_BYTES))) for _ in shapes),
        backends=(draw(_backend), *draw(st.lists(_optional_backend, max_size=2))),
        layer_alignments=tuple(
            draw(st.lists(st.one_of(st.none(), st.sampled_from(ALIGNMENTS), st.integers(1, 1024)), max_size=3))
        ),
    )


# --- random.Random: the same space, fast, with pages that fit the attention page exactly ------------


def _random_kernel_size(rng: random.Random):
    size = rng.choice(KERNEL_SIZES) if rng.random() < 0.6 else rng.randint(1, 300)
    return ("multiple", size) if rng.random() < 0.4 else size


def _random_backend(rng: random.Random, min_sizes: int) -> Backend:
    return Backend(tuple(_random_kernel_size(rng) for _ in range(rng.randint(min_sizes, 3))))


def _random_size(rng: random.Random) -> int:
    return rng.choice(BLOCK_SIZES) if rng.random() < 0.5 else rng.randint(1, 4096)


def random_scenario(rng: random.Random) -> ConfigScenario:
    use_mla = rng.random() < 0.3
    heads = 1 if use_mla else rng.randint(1, 16)
    head_size = rng.choice((64, 128, 256, 576, rng.randint(1, 512)))
    dtype = rng.choice(MODEL_DTYPES)
    block_size = _random_size(rng)
    if rng.random() < 0.3:
        # A Mamba page at or one byte off a whole number of attention pages of a
        # plausible block: where the padded page is kept or replaced.
        pages = rng.choice((16, 64, 128, 256, 528, 768, block_size)) * rng.randint(1, 4)
        page = pages * attention_page_per_token(use_mla, heads, head_size, dtype) + rng.choice((-1, 0, 0, 1))
        shapes, dtypes = ((max(0, page),),), ("int8",)
    else:
        shapes = tuple(
            tuple(
                rng.choice((0, 1, rng.randint(1, 4096))) if rng.random() < 0.05 else rng.randint(1, 4096)
                for _ in range(rng.randint(1, 3))
            )
            for _ in range(rng.randint(1, 3))
        )
        dtypes = tuple(rng.choice(tuple(DTYPE_BYTES)) for _ in shapes)
    return ConfigScenario(
        block_size=block_size,
        mamba_block_size=rng.choice((None, block_size, _random_size(rng))),
        mamba_page_size_padded=rng.choice((None, rng.randint(1, 1 << 26))),
        align_mode=rng.random() < 0.5,
        use_mla=use_mla,
        num_kv_heads=heads,
        head_size=head_size,
        dtype=dtype,
        mamba_shapes=shapes,
        mamba_dtypes=dtypes,
        backends=(_random_backend(rng, 1), *(_random_backend(rng, 0) for _ in range(rng.randint(0, 2)))),
        layer_alignments=tuple(
            rng.choice((None, rng.choice(ALIGNMENTS), rng.randint(1, 1024))) for _ in range(rng.randint(0, 3))
        ),
    )


def boundary_scenarios():
    """Block sizes at and one off the kernel minimum and the MLA floor, Mamba
    pages at and one byte off whole attention pages, no Mamba state at all."""
    heads, head_size, dtype = 2, 64, "float16"
    for use_mla, align_mode, block_size, kernels, alignments, padded in itertools.product(
        (False, True),
        (False, True),
        (1, 15, 16, 17, 127, 128, 129, 528),
        ((16,), (("multiple", 16),), (32, 64), (1,)),
        ((), (None,), (768,), (64, 48), (64, None)),
        (None, 4096),
    ):
        per_token = attention_page_per_token(use_mla, 1 if use_mla else heads, head_size, dtype)
        for page in (0, 1, 16 * per_token - 1, 16 * per_token, 128 * per_token, 528 * per_token + 1):
            yield ConfigScenario(
                block_size=block_size,
                mamba_block_size=None if padded is None else 768,
                mamba_page_size_padded=padded,
                align_mode=align_mode,
                use_mla=use_mla,
                num_kv_heads=1 if use_mla else heads,
                head_size=head_size,
                dtype=dtype,
                mamba_shapes=((page,),),
                mamba_dtypes=("int8",),
                backends=(Backend(kernels), Backend((("multiple", 32),))),
                layer_alignments=alignments,
            )
