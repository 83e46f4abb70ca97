"""vLLM's own recurrent state tensors for a model `gridproof check` reads:
`MambaStateShapeCalculator` and `MambaStateDtypeCalculator`, called for the
model's kind with the fields gridproof read of its config.json (as vLLM's model
classes call them, `RealStateTensors`); and vLLM's own reading of the
config.json itself, its attention page and its model class's state
(`RealModelReading`)."""

from __future__ import annotations

import json
import math
import warnings


def hf_config_of(config: dict):
    """The config object vLLM's get_config makes of a config.json's dict: vLLM's own registry's class for
    the model type first, then Transformers' (AutoConfig's mapping), a nested text_config made its class."""
    import transformers
    from vllm.transformers_utils.config import _CONFIG_REGISTRY

    config = json.loads(json.dumps(config))
    model_type = config["model_type"]
    if model_type in _CONFIG_REGISTRY:
        return _CONFIG_REGISTRY[model_type].from_dict(config)
    return transformers.CONFIG_MAPPING[model_type].from_dict(config)


class RealStateTensors:
    """Loads vLLM on construction: a missing or renamed calculator fails loudly here."""

    def __init__(self) -> None:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=DeprecationWarning)
            from vllm.model_executor.layers.mamba.mamba_utils import (
                MambaStateDtypeCalculator,
                MambaStateShapeCalculator,
            )
        self._shapes, self._dtypes = MambaStateShapeCalculator, MambaStateDtypeCalculator

    def read(self, model, tp: int, num_spec: int, ssm: str) -> tuple[list[int], list[str]]:
        """Each state tensor's element count (the conv state's orientation is a layout choice, so
        its size is what is compared) and dtype name, for a models.hf_config.HybridModel at TP
        `tp` with `num_spec` speculative tokens and --mamba-ssm-cache-dtype `ssm`."""
        shapes, dtypes, f = self._shapes, self._dtypes, model.fields
        kind = model.state_kind
        if kind == "mamba1":
            got = shapes.mamba1_state_shape(
                tp, f["mamba_expand"] * f["hidden_size"], f["mamba_d_state"], f["mamba_d_conv"]
            )
            types = dtypes.mamba1_state_dtype(model.dtype, "auto", ssm)
        elif kind == "mamba2":
            got = shapes.mamba2_state_shape(
                tp,
                f["intermediate"],
                f["n_groups"],
                f["num_heads"],
                f["head_dim"],
                f["state_size"],
                f["conv_kernel"],
                num_spec,
            )
            types = dtypes.mamba2_state_dtype(
                model.dtype, "auto", f.get("mamba_ssm_cache_dtype", "auto") if ssm == "auto" else ssm
            )
        elif kind == "gdn":
            got = shapes.gated_delta_net_state_shape(
                tp,
                f["linear_num_key_heads"],
                f["linear_num_value_heads"],
                f["linear_key_head_dim"],
                f["linear_value_head_dim"],
                f["linear_conv_kernel_dim"],
                num_spec,
            )
            types = dtypes.gated_delta_net_state_dtype(model.dtype, "auto", ssm)
        elif kind == "kda":
            got = shapes.kda_state_shape(
                tp, f["num_heads"], f["head_dim"], conv_kernel_size=f["short_conv_kernel_size"], num_spec=num_spec
            )
            types = dtypes.kda_state_dtype(model.dtype, "auto", ssm)
        else:
            got = shapes.linear_attention_state_shape(f["num_attention_heads"], tp, f["head_dim"])
            types = dtypes.linear_attention_state_dtype(model.dtype, "auto")
        return [math.prod(s) for s in got], [str(t).removeprefix("torch.") for t in types]


# The model class vLLM resolves for each model type whose class builds its recurrent state from the config
# (get_mamba_state_shape_from_config), imported with the installed dependencies. MiniMax's linear
# attention was removed from vLLM (0.23.0); Qwen3.5's class needs torchvision, and Qwen3-Next's and
# Kimi's need compressed-tensors and loguru, none of which the CPU install has.
STATE_MODEL_CLASSES = {
    "falcon_h1": "FalconH1ForCausalLM",
    "granitemoehybrid": "GraniteMoeHybridForCausalLM",
    "jamba": "JambaForCausalLM",
    "nemotron_h": "NemotronHForCausalLM",
}


class RealModelReading:
    """vLLM's own reading of a config.json: the config class vLLM loads for its model type (its config
    registry, else transformers'), the attention sizes its architecture convertor reads
    (`ModelArchConfigConvertorBase.convert`: head size, KV heads, MLA), the KV heads per rank
    (`ModelConfig.get_num_kv_heads`) and one token's attention page (`FullAttentionSpec` or
    `MLAAttentionSpec` at block 1, in the KV cache's dtype), as `_align_hybrid_block_size` computes it;
    and the recurrent state the model class builds from the config (STATE_MODEL_CLASSES), where it
    imports. The model dtype is the config's own: vLLM's resolution of --dtype auto reads the platform."""

    def __init__(self) -> None:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=DeprecationWarning)
            import torch
            import vllm.config  # noqa: F401  (the convertor module is imported through the config package)
            from vllm.config.model import ModelConfig
            from vllm.model_executor.models import ModelRegistry
            from vllm.model_executor.models.config import MODELS_CONFIG_MAP
            from vllm.transformers_utils.config import get_hf_text_config
            from vllm.transformers_utils.model_arch_config_convertor import (
                MODEL_ARCH_CONFIG_CONVERTORS,
                ModelArchConfigConvertorBase,
            )
            from vllm.utils.torch_utils import kv_cache_dtype_str_to_dtype
            from vllm.v1.kv_cache_interface import FullAttentionSpec, MLAAttentionSpec

        self._torch, self._text = torch, get_hf_text_config
        self._convertors, self._base = MODEL_ARCH_CONFIG_CONVERTORS, ModelArchConfigConvertorBase
        self._kv_heads, self._kv_dtype = ModelConfig.get_num_kv_heads, kv_cache_dtype_str_to_dtype
        self._specs = {False: FullAttentionSpec, True: MLAAttentionSpec}
        self._classes = {t: ModelRegistry._try_load_model_cls(a) for t, a in STATE_MODEL_CLASSES.items()}
        # What VllmConfig runs for the architecture before the state is sized (NemotronH's reads the
        # config's mamba_ssm_cache_dtype into the cache config).
        self._updates = {t: MODELS_CONFIG_MAP.get(a) for t, a in STATE_MODEL_CLASSES.items()}

    def _model_config(self, config: dict):
        from types import SimpleNamespace

        hf_config = hf_config_of(config)
        text = self._text(hf_config)
        arch = self._convertors.get(hf_config.model_type, self._base)(hf_config, text).convert()
        dtype = getattr(self._torch, str(getattr(text, "dtype", None) or "bfloat16").removeprefix("torch."))
        return SimpleNamespace(
            use_mla=arch.is_deepseek_mla, model_arch_config=arch, hf_config=hf_config, hf_text_config=text, dtype=dtype
        )

    def attention_page(self, config: dict, tp: int, kv_cache_dtype: str) -> int:
        """One token's attention page on a rank, in bytes."""
        from types import SimpleNamespace

        model_config = self._model_config(config)
        arch = model_config.model_arch_config
        spec = self._specs[bool(model_config.use_mla)](
            block_size=1,
            num_kv_heads=self._kv_heads(model_config, SimpleNamespace(tensor_parallel_size=tp)),
            head_size=arch.head_size,
            dtype=self._kv_dtype(kv_cache_dtype, model_config),
        )
        return spec.page_size_bytes

    def state(self, config: dict, tp: int, num_spec: int) -> tuple[bool, str, str]:
        """(refused, the state tensors' element counts and dtypes as JSON text) as the model class builds
        them from the config, with `num_spec` speculative tokens and the cache dtypes auto: refused where
        vLLM's `divide` asserts that the TP size does not split a dimension."""
        from types import SimpleNamespace

        model_config = self._model_config(config)
        model_type = model_config.hf_text_config.model_type
        model_class = self._classes[model_type]
        vllm_config = SimpleNamespace(
            model_config=model_config,
            parallel_config=SimpleNamespace(tensor_parallel_size=tp),
            speculative_config=SimpleNamespace(num_speculative_tokens=num_spec) if num_spec else None,
            num_speculative_tokens=num_spec,
            cache_config=SimpleNamespace(mamba_cache_dtype="auto", mamba_ssm_cache_dtype="auto", use_replayssm=False),
        )
        if self._updates[model_type] is not None:
            self._updates[model_type].verify_and_update_config(vllm_config)
        try:
            shapes = model_class.get_mamba_state_shape_from_config(vllm_config)
        except AssertionError:
            return True, "", ""
        dtypes = model_class.get_mamba_state_dtype_from_config(vllm_config)
        names = [str(t).removeprefix("torch.") for t in dtypes]
        return False, json.dumps([math.prod(shape) for shape in shapes]), json.dumps(names)
