"""The real vLLM 0.33.0 `Platform._align_hybrid_block_size`, on a stub config.

Only the model class and the layers are stubs; everything the method does runs
for real: the attention page from vLLM's spec classes and the Triton backend's
`customize_spec`, the Mamba page from `MambaSpec`, the model class through the
real `ModelRegistry`, the backends through the real `_find_non_ssm_backends`
and the checkpoint alignment through the real
`get_mamba_prefill_checkpoint_alignment`, both of which walk
`compilation_config.static_forward_context`.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

STUB_ARCHITECTURE = "GridproofStubHybridForCausalLM"


@dataclass(frozen=True)
class Backend:
    kernel_sizes: tuple  # ints, or ("multiple", n) for MultipleOf(n)


@dataclass(frozen=True)
class ConfigScenario:
    """One configuration, as vLLM sees it before block-size resolution."""

    block_size: int
    mamba_block_size: int | None
    mamba_page_size_padded: int | None
    align_mode: bool
    use_mla: bool
    num_kv_heads: int
    head_size: int
    dtype: str  # torch dtype name of the model and the "auto" KV cache
    mamba_shapes: tuple[tuple[int, ...], ...]
    mamba_dtypes: tuple[str, ...]
    backends: tuple[Backend, ...]  # the first is the selected one
    layer_alignments: tuple[int | None, ...]  # each Mamba layer's prefill checkpoint alignment
    cache_dtype: str = "auto"  # --kv-cache-dtype
    # --use-replayssm with the FlashInfer Mamba backend: 0.34.0 aligns each state tensor to 16 bytes
    # (VllmConfig.use_flashinfer_replayssm, read by mamba_state_alignment); 0.33.0 reads nothing of it.
    replayssm: bool = False


class RealConfig:
    """Loads vLLM on construction: a missing or renamed vLLM fails loudly here."""

    def __init__(self) -> None:
        import torch
        from torch import nn
        from vllm.model_executor.layers.attention_layer_base import AttentionLayerBase
        from vllm.model_executor.layers.mamba.abstract import MambaBase
        from vllm.model_executor.models import ModelRegistry
        from vllm.platforms.interface import Platform
        from vllm.v1.attention.backend import MultipleOf
        from vllm.v1.attention.backends.triton_attn import TritonAttentionBackend

        self._torch = torch
        self._align = Platform._align_hybrid_block_size
        self._multiple_of = MultipleOf
        self._triton = TritonAttentionBackend

        class StubHybridModel(nn.Module):
            """Reads its Mamba state layout from the scenario."""

            @classmethod
            def get_mamba_state_shape_from_config(cls, vllm_config):
                return vllm_config.model_config.hf_config.mamba_shapes

            @classmethod
            def get_mamba_state_dtype_from_config(cls, vllm_config):
                return vllm_config.model_config.hf_config.mamba_dtypes

        ModelRegistry.register_model(STUB_ARCHITECTURE, StubHybridModel)

        class SsmBackend:
            @classmethod
            def is_ssm(cls):
                return True

        class AttentionLayer(AttentionLayerBase):
            def __init__(self, backend):
                self.backend = backend

            def get_attn_backend(self):
                return self.backend

            def get_kv_cache_spec(self, vllm_config):
                return None

        class MambaLayer(MambaBase):
            def __init__(self, alignment):
                self.alignment = alignment

            def get_state_shape(self):
                return ()

            def get_state_dtype(self):
                return ()

            @property
            def mamba_type(self):
                raise NotImplementedError

            def get_attn_backend(self):
                return SsmBackend

            def get_prefill_checkpoint_alignment(self):
                return self.alignment

        self._attention_layer = AttentionLayer
        self._mamba_layer = MambaLayer

    def _backend_class(self, index: int, backend: Backend) -> type:
        sizes = [self._multiple_of(s[1]) if isinstance(s, tuple) else s for s in backend.kernel_sizes]

        def get_supported_kernel_block_sizes(cls, kv_cache_spec=None):
            return list(sizes)

        methods = {"get_supported_kernel_block_sizes": classmethod(get_supported_kernel_block_sizes)}
        return type(f"StubTritonBackend{index}", (self._triton,), methods)

    def vllm_config(self, s: ConfigScenario, model_config=None, cache_config=None) -> SimpleNamespace:
        """A stub VllmConfig for scenario `s`: an attention layer per backend and a Mamba layer per checkpoint
        alignment in the static forward context, and the cache and model configs `s` states unless given."""
        dtype = getattr(self._torch, s.dtype)
        layers = {}
        for i, backend in enumerate(s.backends):
            layers[f"attn.{i}"] = self._attention_layer(self._backend_class(i, backend))
        for i, alignment in enumerate(s.layer_alignments):
            layers[f"mamba.{i}"] = self._mamba_layer(alignment)
        hf_config = SimpleNamespace(
            mamba_shapes=s.mamba_shapes, mamba_dtypes=tuple(getattr(self._torch, d) for d in s.mamba_dtypes)
        )
        return SimpleNamespace(
            cache_config=cache_config
            or SimpleNamespace(
                cache_dtype=s.cache_dtype,
                block_size=s.block_size,
                mamba_cache_mode="align" if s.align_mode else "none",
                mamba_block_size=s.mamba_block_size,
                mamba_page_size_padded=s.mamba_page_size_padded,
            ),
            model_config=model_config
            or SimpleNamespace(
                dtype=dtype,
                use_mla=s.use_mla,
                architecture=STUB_ARCHITECTURE,
                model_impl="auto",
                hf_config=hf_config,
                get_num_kv_heads=lambda parallel_config: s.num_kv_heads,
                get_head_size=lambda: s.head_size,
            ),
            parallel_config=SimpleNamespace(tensor_parallel_size=1),
            num_speculative_tokens=0,
            use_flashinfer_replayssm=s.replayssm,
            compilation_config=SimpleNamespace(static_forward_context=layers),
        )

    def resolve(self, s: ConfigScenario) -> tuple[int, int | None, int | None]:
        return self.resolve_config(self.vllm_config(s))

    def resolve_config(self, config: SimpleNamespace) -> tuple[int, int | None, int | None]:
        """(block_size, mamba_block_size, mamba_page_size_padded) after the real
        method, with the first attention layer's backend as the selected one."""
        self._align(config, config.compilation_config.static_forward_context["attn.0"].backend)
        c = config.cache_config
        return c.block_size, c.mamba_block_size, c.mamba_page_size_padded
