"""Stand-ins for what `Platform._align_hybrid_block_size` reads, from the
model's `ConfigInputs` (models/config.py).

The method computes two page sizes from vLLM's spec classes, a model class
from the registry, kernel block sizes from attention backends and the
checkpoint alignment from the Mamba layers. The executor does not model
tensor shapes or dtypes: the page sizes are symbolic fields, so each spec
class is a stand-in whose `page_size_bytes` is the model's input (the
attention page for one token, `Pa`; the largest Mamba state page, `Pm`).
Everything else runs as shipped: the selected backend's smallest kernel
block (a concrete list of one symbolic size), the non-SSM backends' lcm (one
backend whose smallest block is the model's `backend_alignment`), and vLLM's
own `get_mamba_prefill_checkpoint_alignment`, which walks one Mamba layer
whose alignment is the model's (None when 0).
"""

from __future__ import annotations

import contextlib
import math

from models import arith
from models.config import ConfigInputs
from proofs.source import paths
from proofs.source.proxy import SymInt, term, wrap
from proofs.source.standins import StandIn, optional

ABSTRACT = "vllm.model_executor.layers.mamba.abstract"


def symbolic_lcm(*values):
    """`math.lcm` on proxies: arith's lcm of the terms (a 1 dropped, which is
    exact), the builtin on ints."""
    if not any(isinstance(v, SymInt) for v in values):
        return math.lcm(*values)
    kept = [v for v in values if not (isinstance(v, int) and v == 1)]
    return wrap(arith.lcm(*(term(v) for v in kept)))


class _QuietLogger:
    """vLLM's logger: the messages (one carries a float) are not read."""

    def info(self, *_args, **_kwargs) -> None:
        pass

    debug = warning = info_once = warning_once = info


class MultipleOf:
    """vLLM's kernel block size constraint class; the stand-in backends
    list plain sizes, so no size is an instance of it."""


def _layers_of(vllm_config, _layer_type):
    return vllm_config.compilation_config.static_forward_context


# Names the method and its helpers import at module level: bound once.
STATIC = {
    "math.lcm": symbolic_lcm,
    ".logger": _QuietLogger(),
    "vllm.v1.attention.backend.MultipleOf": MultipleOf,
    f"{ABSTRACT}.get_layers_from_vllm_config": _layers_of,
    "vllm.config.vllm.get_layers_from_vllm_config": _layers_of,
    "vllm.config.vllm.set_current_vllm_config": lambda _config: contextlib.nullcontext(),
    "vllm.utils.torch_utils.STR_DTYPE_TO_TORCH_DTYPE": {},
    "vllm.v1.kv_cache_interface.get_kv_quant_mode": lambda _dtype: None,
}


def _spec_class(name: str, page):
    """A spec class whose instances' page is `page` whatever their fields."""

    def make(**_fields):
        return StandIn(name, page_size_bytes=page)

    return make


def per_call(c: ConfigInputs) -> dict[str, object]:
    """The names the method imports inside its body, bound for one call:
    the spec classes carry this call's page sizes."""
    registry = StandIn("ModelRegistry", resolve_model_cls=lambda *_a, **_k: (_MambaModel, "model"))
    return {
        "vllm.v1.kv_cache_interface.FullAttentionSpec": _spec_class("FullAttentionSpec", c.attn_page_per_token),
        "vllm.v1.kv_cache_interface.MLAAttentionSpec": _spec_class("MLAAttentionSpec", c.attn_page_per_token),
        "vllm.v1.kv_cache_interface.MambaSpec": _spec_class("MambaSpec", c.mamba_page),
        "vllm.model_executor.models.ModelRegistry": registry,
    }


class _MambaModel:
    """The model class: one Mamba state layout (no per-layer specs), whose
    page the MambaSpec stand-in carries."""

    @staticmethod
    def get_mamba_state_shape_from_config(_config):
        return ()

    @staticmethod
    def get_mamba_state_dtype_from_config(_config):
        return ()


def _backend(role: str, kernel_min):
    return StandIn(
        role,
        customize_spec=lambda spec: spec,
        get_supported_kernel_block_sizes=lambda: [wrap(kernel_min)],
        is_ssm=lambda: False,
    )


def resolution_call(c: ConfigInputs):
    """(cls, vllm_config, backend_cls) for the method, from the model's inputs."""
    align = c.align_mode if isinstance(c.align_mode, bool) else paths.decide(c.align_mode)
    mode = "align" if align else "none"
    layer = StandIn("the Mamba layer", get_prefill_checkpoint_alignment=lambda: optional(c.checkpoint_alignment))
    config = StandIn(
        "vllm_config",
        cache_config=StandIn(
            "cache_config",
            cache_dtype="auto",
            block_size=c.block_size,
            mamba_cache_mode=mode,
            mamba_block_size=optional(c.mamba_block_size),
            mamba_page_size_padded=optional(c.mamba_page_size_padded),
            kv_cache_dtype_skip_layers=None,
        ),
        model_config=StandIn(
            "model_config",
            dtype="auto",
            use_mla=c.use_mla,
            architecture="model",
            get_num_kv_heads=lambda _parallel: 1,
            get_head_size=lambda: 1,
        ),
        parallel_config=StandIn("parallel_config"),
        compilation_config=StandIn("compilation_config", static_forward_context={"mamba": layer}),
    )
    non_ssm = [_backend("a non-SSM backend", c.backend_alignment)]
    platform = StandIn("the platform (cls)", _find_non_ssm_backends=lambda _config: non_ssm)
    return platform, config, _backend("the selected backend", c.kernel_min)


def resolved(vllm_config) -> tuple:
    """(block_size, mamba_block_size, mamba_page_size_padded) after the call,
    None written as the model's 0."""
    cache = vllm_config.cache_config
    values = (cache.block_size, cache.mamba_block_size, cache.mamba_page_size_padded)
    return tuple(0 if v is None else v for v in values)
