"""vLLM 0.33.0's own parsers of the token-count flags: `human_readable_int`
(--max-num-batched-tokens, --max-num-scheduled-tokens) and
`human_readable_int_or_auto` (--max-model-len), as engine/arg_utils.py:395-409
assigns them. Run for real; building vLLM's whole argument parser needs a
device, which this machine does not have, so which flag takes which parser is
read from that source, not run."""

from __future__ import annotations

import argparse


class RealKvCacheDtype:
    """vLLM's reading of --kv-cache-dtype: the KV cache's element type (`kv_cache_dtype_str_to_dtype`,
    "auto" the model's dtype) and its size (`get_dtype_size`), which a token's attention page is made of."""

    def __init__(self) -> None:
        import torch
        from vllm.utils.torch_utils import get_dtype_size, kv_cache_dtype_str_to_dtype

        self._torch, self._size, self._dtype = torch, get_dtype_size, kv_cache_dtype_str_to_dtype

    def read(self, kv_cache_dtype: str, model_dtype: str) -> tuple[bool, int]:
        """(refused, the element's bytes): refused where vLLM knows no such dtype."""
        from types import SimpleNamespace

        model = SimpleNamespace(dtype=getattr(self._torch, model_dtype))
        try:
            return False, self._size(self._dtype(kv_cache_dtype, model))
        except KeyError:
            return True, 0


class RealTokenFlag:
    """Loads vLLM on construction: a missing or renamed parser fails loudly here."""

    def __init__(self) -> None:
        from vllm.utils.argparse_utils import human_readable_int, human_readable_int_or_auto

        self._parsers = {False: human_readable_int, True: human_readable_int_or_auto}

    def read(self, text: str, auto: bool) -> tuple[bool, int]:
        """(refused, the value vLLM's parser returns: -1 for auto); `auto`: --max-model-len's
        parser. Refused: the parser raised (argparse's error, or int()'s or float's), and the value is 0."""
        try:
            return False, self._parsers[auto](text)
        except (argparse.ArgumentTypeError, ValueError, OverflowError):
            return True, 0


class RealStartBlock:
    """The block vLLM asks of a single attention backend when --block-size is unset: the backend's
    `get_preferred_block_size(CacheConfig.DEFAULT_BLOCK_SIZE)`, for a backend whose kernels take any
    multiple of `kernel_min` (`MultipleOf`), which `_align_hybrid_block_size` then starts from."""

    def __init__(self) -> None:
        from vllm.config.cache import CacheConfig
        from vllm.v1.attention.backend import AttentionBackend, MultipleOf

        self._base, self._multiple_of = AttentionBackend, MultipleOf
        self._default = CacheConfig.DEFAULT_BLOCK_SIZE

    def read(self, kernel_min: int) -> int:
        sizes = [self._multiple_of(kernel_min)]
        backend = type(
            "KernelBlocksOf", (self._base,), {"get_supported_kernel_block_sizes": staticmethod(lambda: sizes)}
        )
        return backend.get_preferred_block_size(self._default)


class RealContextLength:
    """vLLM's max_model_len for a config.json and --max-model-len: the config made the object vLLM's
    get_config makes of it (its model type's config class, `hf_config_of`) with its RoPE parameters
    standardised as get_config does (`patch_rope_parameters` on the config and its text config), the
    length keys read by the model type's architecture convertor, then `_get_and_verify_max_len`
    (config/model.py) on the text config, as `ModelConfig` calls it without a tokenizer config or
    sliding window."""

    def __init__(self) -> None:
        import vllm.config  # noqa: F401  (the convertor module is imported through the config package)
        from vllm.config.model import _get_and_verify_max_len
        from vllm.transformers_utils.config import get_hf_text_config, patch_rope_parameters
        from vllm.transformers_utils.model_arch_config_convertor import (
            MODEL_ARCH_CONFIG_CONVERTORS,
            ModelArchConfigConvertorBase,
        )

        self._patch, self._text = patch_rope_parameters, get_hf_text_config
        self._convertors, self._base = MODEL_ARCH_CONFIG_CONVERTORS, ModelArchConfigConvertorBase
        self._verify = _get_and_verify_max_len

    def read(self, config: dict, max_model_len: int | None) -> tuple[bool, int]:
        """(refused, the max_model_len vLLM runs with): refused where vLLM raises, loading the config or
        deriving the length."""
        from types import SimpleNamespace

        from proofs.real_vllm.state import hf_config_of

        try:
            hf_config = hf_config_of(config)
            self._patch(hf_config)
            self._patch(hf_config.get_text_config())
        except ValueError:  # the config class or its RoPE validation refuses the file
            return True, 0
        text = self._text(hf_config)
        convertor = self._convertors.get(hf_config.model_type, self._base)(hf_config, text)
        arch = SimpleNamespace(derived_max_model_len_and_key=convertor.derive_max_model_len_and_key())
        try:
            return False, self._verify(text, arch, None, max_model_len, False, None)
        except ValueError:
            return True, 0
