"""What vLLM 0.33.0 reads from a hybrid model's Hugging Face config.json:
the attention page per token and the recurrent state tensors of one rank.

State shapes follow `MambaStateShapeCalculator` and dtypes
`MambaStateDtypeCalculator` (model_executor/layers/mamba/mamba_utils.py);
attention pages follow `FullAttentionSpec` / `MLAAttentionSpec` with
`block_size=1` (vllm-align-mode.md section 1.3). Built-in configs live in
models/families/, each a trimmed config.json naming its source.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from models.errors import GridproofError
from models.files import UnreadableFileError, parse_json, read_user_text
from models.geometry import MAX_TOKENS

FAMILY_DIR = Path(__file__).parent / "families"
DTYPE_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4, "int8": 1, "fp8": 1}
SSM_CACHE_DTYPES = ("auto", "float32", "bfloat16", "float16")
# --kv-cache-dtype values gridproof models, and the bytes an element takes: "auto" is the
# model's dtype; each fp8 is one byte with a per-tensor scale, no per-token bytes
# (MLAAttentionSpec and FullAttentionSpec page sizes in vLLM 0.33.0). vLLM's packed
# layouts (fp8_ds_mla, nvfp4_ds_mla, turboquant_*, ...) are not.
KV_CACHE_DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1}
KV_CACHE_DTYPES = ("auto", *KV_CACHE_DTYPE_BYTES)
# The selected attention backend's smallest kernel block and preferred block:
# FLASH_ATTN / FLASHINFER / TRITON (16, 16), FLASHMLA for MLA models (64, 64).
ATTENTION_KERNEL = {False: (16, 16), True: (64, 64)}


def kv_element_bytes(kv_cache_dtype: str, model_dtype: str) -> int:
    """The bytes of one KV cache element under --kv-cache-dtype ("auto": the model's dtype)."""
    return DTYPE_BYTES[model_dtype] if kv_cache_dtype == "auto" else KV_CACHE_DTYPE_BYTES[kv_cache_dtype]


class ModelConfigError(GridproofError):
    """A config.json gridproof cannot read; the message names the field."""


@dataclass(frozen=True)
class StateTensor:
    shape: tuple[int, ...]
    dtype: str

    @property
    def bytes(self) -> int:
        return math.prod(self.shape) * DTYPE_BYTES[self.dtype]


@dataclass(frozen=True)
class MtpLayers:
    """A model's MTP modules as vLLM 0.33.0 reads them, when the model drafts for itself
    (--speculative-config method mtp). `n_predict`: what SpeculativeConfig.hf_config_override gives
    the draft's config, which is num_speculative_tokens's default and what a larger count must be a
    multiple of; None where it gives none. `multi_module_read`: the num_nextn_predict_layers that
    use_multi_module_mtp reads on that config, 1 where it has none."""

    n_predict: int | None
    multi_module_read: int


# A config with no MTP count: no n_predict, and use_multi_module_mtp's getattr default.
NO_MTP = MtpLayers(None, 1)
NEXTN = "num_nextn_predict_layers"
MTP_HIDDEN = "mtp_num_hidden_layers"
QWEN3_5_TYPES = ("qwen3_5", "qwen3_5_moe", "qwen3_5_text")
# Config classes that declare num_nextn_predict_layers with a default of 0, so that
# use_multi_module_mtp's getattr default of 1 never applies to them.
NEXTN_DEFAULT_ZERO = ("nemotron_h", "kimi_linear")


def mtp_layers(config: dict) -> MtpLayers:
    """Where hf_config_override (config/speculative.py:787-792, 894-913, 986-1007) reads the
    count for each model type gridproof reads, on config.json as written (`text_config` nested):
    Qwen3-Next and Nemotron-H (a positive count only) at the top, Qwen3.5 as mtp_num_hidden_layers
    at the top or else in text_config, Kimi-K3 in text_config only (0 where absent: its
    KimiLinearConfig's default); the other types get no MTP rewrite, so no n_predict."""
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else {}
    # A null count reads as absent (vLLM's getattr would return the None, which no count it compares takes).
    config = {k: v for k, v in config.items() if v is not None}
    text = {k: v for k, v in text.items() if v is not None}
    model_type = config.get("model_type")
    for where, values in (("", config), ("text_config.", text)):
        for key in (NEXTN, MTP_HIDDEN):
            count = values.get(key)
            if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 0):
                raise ModelConfigError(f"{where}{key} must be a count, got {count!r}")
    n_predict = None
    if model_type == "qwen3_next":
        n_predict = config.get(NEXTN)
    elif model_type in QWEN3_5_TYPES:
        n_predict = config.get(MTP_HIDDEN)
        if n_predict is None:
            n_predict = text.get(MTP_HIDDEN)
    elif model_type == "nemotron_h":
        n_predict = config.get(NEXTN) or None
    elif model_type == "kimi_k3":
        n_predict = text.get(NEXTN, 0)
    return MtpLayers(n_predict, config.get(NEXTN, 0 if model_type in NEXTN_DEFAULT_ZERO else 1))


@dataclass(frozen=True)
class HybridModel:
    name: str
    model_type: str
    source: str
    use_mla: bool
    kv_heads: int  # total KV heads (1 latent head for MLA)
    head_size: int  # per KV head: head_dim, or kv_lora_rank + rope dim for MLA
    dtype: str
    state_kind: str  # mamba1, mamba2, gdn, kda, linear_attention
    fields: dict
    prefill_checkpoint_alignment: int | None
    context: ContextLength
    mtp: MtpLayers = NO_MTP  # what an MTP draft reads of it

    @property
    def removed_from_vllm(self) -> str:
        """Why vLLM does not serve this model ("" where it does)."""
        if self.model_type not in REMOVED_FROM_VLLM:
            return ""
        architecture, release = REMOVED_FROM_VLLM[self.model_type]
        return f"vLLM has no model class for {self.model_type} ({architecture} was removed in vLLM {release})"

    def kv_heads_per_rank(self, tp: int) -> int:
        return 1 if self.use_mla else max(1, self.kv_heads // tp)

    def attention_page_per_token(self, tp: int, kv_cache_dtype: str = "auto") -> int:
        """Bytes one token's K and V (one latent for MLA) take on one rank, in the KV cache's dtype
        (KV_CACHE_DTYPES; "auto": the model's)."""
        per_head = self.head_size if self.use_mla else 2 * self.head_size
        return self.kv_heads_per_rank(tp) * per_head * kv_element_bytes(kv_cache_dtype, self.dtype)

    def kernel_block(self) -> tuple[int, int]:
        """(smallest kernel block, preferred block) of the attention backend."""
        return ATTENTION_KERNEL[self.use_mla]

    def state(self, tp: int, num_spec: int, ssm_cache_dtype: str) -> tuple[StateTensor, ...]:
        shapes = _STATE_SHAPES[self.state_kind](self.fields, tp, num_spec)
        dtypes = _state_dtypes(self, ssm_cache_dtype)
        return tuple(StateTensor(s, d) for s, d in zip(shapes, dtypes, strict=True))

    def state_page(self, tp: int, num_spec: int, ssm_cache_dtype: str) -> int:
        """The recurrent state page of one rank (`MambaSpec.page_size_bytes`): its tensors' bytes. (0.34.0
        rounds each up to 16 bytes with FlashInfer's ReplaySSM, a backend flag `check` does not read.)"""
        return sum(t.bytes for t in self.state(tp, num_spec, ssm_cache_dtype))


def _divide(name: str, total: int, tp: int) -> int:
    # vLLM's `divide` asserts divisibility: a TP size that does not split the heads is refused there too.
    if total % tp:
        raise ModelConfigError(f"--tensor-parallel-size {tp} does not divide {name} = {total}")
    return total // tp


def _extra_groups(groups: int, tp: int) -> int:
    return 0 if groups % tp == 0 else tp - groups


def _mamba1(f: dict, tp: int, num_spec: int):
    inner = f["mamba_expand"] * f["hidden_size"]
    conv = _divide("the Mamba inner size", inner, tp)
    return (conv, f["mamba_d_conv"] - 1), (conv, f["mamba_d_state"])


def _mamba2(f: dict, tp: int, num_spec: int):
    groups = f["n_groups"] + _extra_groups(f["n_groups"], tp)
    conv_dim = f["intermediate"] + 2 * groups * f["state_size"]
    conv = (_divide("the Mamba-2 conv dimension", conv_dim, tp), f["conv_kernel"] - 1 + num_spec)
    return conv, (_divide("the Mamba-2 heads", f["num_heads"], tp), f["head_dim"], f["state_size"])


def _gdn(f: dict, tp: int, num_spec: int):
    conv_dim = f["linear_key_head_dim"] * f["linear_num_key_heads"] * 2
    conv_dim += f["linear_value_head_dim"] * f["linear_num_value_heads"]
    conv = (_divide("the GDN conv dimension", conv_dim, tp), f["linear_conv_kernel_dim"] - 1 + num_spec)
    heads = _divide("linear_num_value_heads", f["linear_num_value_heads"], tp)
    return conv, (heads, f["linear_value_head_dim"], f["linear_key_head_dim"])


def _kda(f: dict, tp: int, num_spec: int):
    heads, dim, kernel = f["num_heads"], f["head_dim"], f["short_conv_kernel_size"]
    conv = (_divide("the KDA conv dimension", 3 * heads * dim, tp), kernel - 1 + num_spec)
    return conv, (_divide("linear_attn_config.num_heads", heads, tp), dim, dim)


def _linear_attention(f: dict, tp: int, num_spec: int):
    return ((f["num_attention_heads"] // tp, f["head_dim"], f["head_dim"]),)


_STATE_SHAPES = {
    "mamba1": _mamba1,
    "mamba2": _mamba2,
    "gdn": _gdn,
    "kda": _kda,
    "linear_attention": _linear_attention,
}


def _state_dtypes(model: HybridModel, ssm_cache_dtype: str) -> tuple[str, ...]:
    conv = model.dtype  # --mamba-cache-dtype auto: the model dtype
    if model.state_kind == "linear_attention":
        return (conv,)
    if model.state_kind == "kda":
        # kda_state_dtype: float32 unless float32 or bfloat16 is asked for.
        if ssm_cache_dtype not in ("auto", "float32", "bfloat16"):
            raise ModelConfigError(f"--mamba-ssm-cache-dtype: KDA takes auto, float32, bfloat16, not {ssm_cache_dtype}")
        return conv, ("float32" if ssm_cache_dtype == "auto" else ssm_cache_dtype)
    if ssm_cache_dtype == "auto":
        # Model configs such as NemotronH's turn "auto" into the checkpoint's own SSM dtype.
        ssm_cache_dtype = model.fields.get("mamba_ssm_cache_dtype", "auto")
    return conv, (conv if ssm_cache_dtype == "auto" else ssm_cache_dtype)


# --- reading a config.json, per model_type ---------------------------------------------------------


def _need(config: dict, key: str, where: str = "") -> int:
    """A size the config must give: a positive integer, at most MAX_TOKENS as every flag's count is."""
    value = config.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ModelConfigError(f"{where}{key}: missing or not an integer")
    if value <= 0:
        raise ModelConfigError(f"{where}{key}: must be positive, got {value}")
    if value > MAX_TOKENS:
        raise ModelConfigError(f"{where}{key}: expected at most {MAX_TOKENS:,}, got {value:,}")
    return value


def _optional_count(config: dict, key: str, least: int) -> int | None:
    """An integer from `least` to MAX_TOKENS, or None where absent or null."""
    value = config.get(key)
    if value is not None and (
        isinstance(value, bool) or not isinstance(value, int) or not least <= value <= MAX_TOKENS
    ):
        raise ModelConfigError(f"{key}: expected an integer from {least} to {MAX_TOKENS:,}, got {value!r}")
    return value


# The keys vLLM derives a model's context length from, the least it states
# (ModelArchConfigConvertorBase.derive_max_model_len_and_key), and its default where none is stated;
# gridproof refuses such a config instead, since the model class's own default may apply first.
CONTEXT_KEYS = (
    "max_position_embeddings",
    "n_positions",
    "max_seq_len",
    "seq_length",
    "model_max_length",
    "max_target_positions",
    "max_sequence_length",
    "max_seq_length",
    "seq_len",
)
# RoPE types whose scaling factor the stated length already holds (config/model.py
# _get_and_verify_max_len); any other type's factor scales it.
PRESCALED_ROPE = ("su", "longrope", "llama3", "yarn", "deepseek_yarn", "deepseek_llama_scaling")


class MaxModelLenError(ModelConfigError):
    """--max-model-len above what the model's config allows (vLLM raises)."""


@dataclass(frozen=True)
class ContextLength:
    """A model's context length as vLLM derives it from config.json (config/model.py
    _get_and_verify_max_len, the same in 0.33.0 and 0.34.0): the least length key of the text
    config (`model_max_length` where stated), scaled by the RoPE factor."""

    key: str  # the key the length was read from
    stated: int  # its value
    derived: float  # the longest --max-model-len accepted (RoPE-scaled, so possibly fractional)
    model_max_length: int | None  # the key that also admits a longer --max-model-len

    def max_model_len(self, flag: int | None) -> int:
        """The max_model_len vLLM runs with under --max-model-len `flag` (None: unset); MaxModelLenError
        where vLLM refuses it (without VLLM_ALLOW_LONG_MAX_MODEL_LEN)."""
        if flag is None:
            return int(self.derived)
        if flag > self.derived and (self.model_max_length is None or flag > self.model_max_length):
            scaled = "" if self.derived == self.stated else f", {self.derived:,g} with its RoPE scaling"
            raise MaxModelLenError(
                f"--max-model-len {flag:,} is longer than the model's {self.key} ({self.stated:,}{scaled}); vLLM "
                "refuses it unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1, which gridproof does not model"
            )
        return flag


def _rope_parameters(config: dict) -> dict:
    """The RoPE parameters (`rope_parameters`, or the legacy `rope_scaling`); ModelConfigError for those
    whose reading vLLM leaves to the model's config class: a set per layer type (Transformers keeps or
    drops it by the class's layer types) and LongRoPE (its original length moves into the parameters)."""
    parameters = config.get("rope_parameters", config.get("rope_scaling"))
    if not isinstance(parameters, dict):
        return {}
    if parameters and all(isinstance(v, dict) for v in parameters.values()):
        raise ModelConfigError(
            "RoPE parameters per layer type: gridproof does not read them (whether vLLM applies them depends "
            "on the model's config class)"
        )
    legacy = parameters.get("type")
    if "rope_type" in parameters and legacy is not None and legacy != parameters["rope_type"]:
        raise ModelConfigError(
            f"RoPE parameters give rope_type {parameters['rope_type']!r} and the legacy type {legacy!r} "
            "(Transformers refuses the conflict)"
        )
    if _rope_type(parameters) == "longrope":
        raise ModelConfigError(
            "RoPE type longrope: gridproof does not read it (vLLM's default length for it depends on where the "
            "model's config class keeps original_max_position_embeddings)"
        )
    return parameters


def _rope_type(parameters: dict) -> str:
    return parameters.get("rope_type", parameters.get("type", "default"))


def _rope_factor(config: dict) -> float:
    """The RoPE scaling factor vLLM multiplies the stated length by: the factor of a RoPE type the length
    does not already hold."""
    parameters = _rope_parameters(config)
    if "gemma3" in str(config.get("model_type")) or _rope_type(parameters) in PRESCALED_ROPE:
        return 1.0
    factor = parameters.get("factor", 1.0)
    if factor is None:
        return 1.0
    if isinstance(factor, bool) or not isinstance(factor, int | float) or not 0 < factor <= MAX_TOKENS:
        raise ModelConfigError(f"rope scaling factor: expected a positive number, got {factor!r}")
    return float(factor)


def context_length(text: dict) -> ContextLength:
    """The context length of a config.json whose text config is `text` (the config itself for a model
    without one). vLLM reads every key of it there, RoPE parameters and model_max_length included
    (ModelConfig passes hf_text_config to _get_and_verify_max_len): a wrapper's own keys count for nothing."""
    stated = {key: _optional_count(text, key, 1) for key in CONTEXT_KEYS}
    stated = {key: value for key, value in stated.items() if value is not None}
    if not stated:
        raise ModelConfigError(
            f"states none of {', '.join(CONTEXT_KEYS[:2])}, ... (vLLM would take the model class's default "
            "context length, which gridproof does not model)"
        )
    key = min(stated, key=stated.get)  # the first of the least, in vLLM's order
    if text.get("model_max_length"):
        key = "model_max_length"
    derived = stated[key] * _rope_factor(text)
    return ContextLength(key, stated[key], derived, _optional_count(text, "model_max_length", 1))


def _attention(config: dict) -> tuple[int, int]:
    heads = _need(config, "num_key_value_heads")
    if config.get("head_dim") is not None:
        return heads, _need(config, "head_dim")
    hidden, attention_heads = _need(config, "hidden_size"), _need(config, "num_attention_heads")
    if hidden < attention_heads:
        raise ModelConfigError(
            f"hidden_size {hidden:,} over num_attention_heads {attention_heads:,} leaves no head dimension "
            "(give head_dim)"
        )
    return heads, hidden // attention_heads


def _read_gdn(c: dict):
    keys = ("linear_num_key_heads", "linear_key_head_dim", "linear_num_value_heads", "linear_value_head_dim")
    fields = {k: _need(c, k) for k in (*keys, "linear_conv_kernel_dim")}
    return False, *_attention(c), "gdn", fields


def _read_mamba2(c: dict, prefix: str):
    names = {
        "nemotron_": ("mamba_num_heads", "mamba_head_dim", "n_groups", "ssm_state_size", "conv_kernel"),
        "mamba_": ("mamba_n_heads", "mamba_d_head", "mamba_n_groups", "mamba_d_state", "mamba_d_conv"),
    }[prefix]
    heads, head_dim, groups, state, kernel = (_need(c, k) for k in names)
    inner = heads * head_dim
    if c.get("mamba_d_ssm") not in (None, inner):
        raise ModelConfigError(
            f"mamba_d_ssm {c['mamba_d_ssm']!r} is not mamba_n_heads x mamba_d_head ({inner:,}), which Transformers' "
            "FalconH1Config refuses"
        )
    fields = {
        "num_heads": heads,
        "head_dim": head_dim,
        "n_groups": groups,
        "state_size": state,
        "conv_kernel": kernel,
        "intermediate": inner,
    }
    if "mamba_ssm_cache_dtype" in c:
        fields["mamba_ssm_cache_dtype"] = c["mamba_ssm_cache_dtype"]
    return False, *_attention(c), "mamba2", fields


def _read_mamba1(c: dict):
    fields = {k: _need(c, k) for k in ("mamba_expand", "hidden_size", "mamba_d_state", "mamba_d_conv")}
    return False, *_attention(c), "mamba1", fields


def _read_kda(c: dict):
    linear = c.get("linear_attn_config")
    if not isinstance(linear, dict):
        raise ModelConfigError("linear_attn_config: expected an object")
    fields = {k: _need(linear, k, "linear_attn_config.") for k in ("num_heads", "head_dim", "short_conv_kernel_size")}
    return True, 1, _need(c, "kv_lora_rank") + _need(c, "qk_rope_head_dim"), "kda", fields


def _read_linear_attention(c: dict):
    fields = {k: _need(c, k) for k in ("num_attention_heads", "head_dim")}
    return False, *_attention(c), "linear_attention", fields


# Model types gridproof reads whose vLLM model class was removed before the releases it models
# (model_executor/models/registry.py, _PREVIOUSLY_SUPPORTED_MODELS): vLLM refuses to load them.
REMOVED_FROM_VLLM = {
    "minimax_text_01": ("MiniMaxText01ForCausalLM", "0.23.0"),
    "minimax_m1": ("MiniMaxM1ForCausalLM", "0.23.0"),
}


READERS = {
    "qwen3_next": _read_gdn,
    "qwen3_5": _read_gdn,
    "qwen3_5_text": _read_gdn,
    "qwen3_5_moe": _read_gdn,
    "nemotron_h": lambda c: _read_mamba2(c, "nemotron_"),
    "granitemoehybrid": lambda c: _read_mamba2(c, "mamba_"),
    "falcon_h1": lambda c: _read_mamba2(c, "mamba_"),
    "jamba": _read_mamba1,
    "kimi_linear": _read_kda,
    "kimi_k3": _read_kda,
    "minimax_text_01": _read_linear_attention,
    "minimax_m1": _read_linear_attention,
}


# The internal prefill checkpoint each recurrent layer class declares in vLLM 0.33.0's
# get_kv_cache_spec (num_prefill_checkpoint_blocks = 1 at this alignment): MambaMixer2, every
# Mamba-2 family's layer (mamba_mixer2.py:1108-1118). Qwen's GDN declares one only under the
# FlashInfer GDN prefill backend and Kimi-K3's FlashKDA at 16 tokens (models/kimi_k3/nvidia/kda.py):
# a config.json or family file states those itself (`prefill_checkpoint_alignment`).
LAYER_CHECKPOINT_ALIGNMENT = {"mamba2": 1}


def parse_model(config: dict, name: str, source: str = "") -> HybridModel:
    """The hybrid model a config.json describes, read from its text_config where nested: attention, state,
    dtype, checkpoint alignment, context length and MTP layers; `source` where the config names none. Raises
    ModelConfigError, prefixed with `name`, for a config gridproof does not read."""
    if not isinstance(config, dict):
        raise ModelConfigError(f"{name}: expected a JSON object")
    try:
        mtp = mtp_layers(config)
    except ModelConfigError as error:
        raise ModelConfigError(f"{name}: {error}") from None
    if isinstance(config.get("text_config"), dict) and "model_type" in config["text_config"]:
        config = {**config["text_config"], **{k: v for k, v in config.items() if k == "_source"}}
    model_type = config.get("model_type")
    if not isinstance(model_type, str) or model_type not in READERS:
        known = ", ".join(sorted(READERS))
        raise ModelConfigError(f"{name}: model_type {model_type!r} is not a hybrid gridproof reads (known: {known})")
    dtype = str(config.get("dtype") or config.get("torch_dtype") or "bfloat16")
    if dtype not in DTYPE_BYTES:
        raise ModelConfigError(f"{name}: dtype {dtype!r} is not one of {', '.join(DTYPE_BYTES)}")
    if dtype == "float32":
        # --dtype auto downcasts a float32 checkpoint to the GPU's first supported dtype (0.33.0
        # config/model.py _resolve_auto_dtype): bfloat16 from Ampere on, float16 before; two bytes either way.
        dtype = "bfloat16"
    try:
        use_mla, kv_heads, head_size, kind, fields = READERS[model_type](config)
        alignment = _optional_count(config, "prefill_checkpoint_alignment", 0)
        if "prefill_checkpoint_alignment" not in config:
            alignment = LAYER_CHECKPOINT_ALIGNMENT.get(kind)
        context = context_length(config)
    except ModelConfigError as error:
        raise ModelConfigError(f"{name}: {error}") from None
    return HybridModel(
        name=name,
        model_type=model_type,
        source=str(config.get("_source", source)),
        use_mla=use_mla,
        kv_heads=kv_heads,
        head_size=head_size,
        dtype=dtype,
        state_kind=kind,
        fields=fields,
        prefill_checkpoint_alignment=alignment,
        context=context,
        mtp=mtp,
    )


def builtin_model_names() -> list[str]:
    return sorted(p.stem for p in FAMILY_DIR.glob("*.json"))


def family_config(name: str) -> dict:
    """The config.json of the built-in family `name`, as a dict (its `_`-prefixed notes included)."""
    return parse_json((FAMILY_DIR / f"{name}.json").read_text(encoding="utf-8"))


def load_model(name_or_path: str) -> HybridModel:
    """A built-in family by name (e.g. `kimi-k3`) or a config.json path."""
    builtin = FAMILY_DIR / f"{name_or_path}.json"
    path = builtin if builtin.exists() else Path(name_or_path)
    if not path.exists():
        raise ModelConfigError(
            f"--model {name_or_path}: no such config.json or built-in model"
            f" (built-in: {', '.join(builtin_model_names())})"
        )
    try:
        config = parse_json(read_user_text(path, "a Hugging Face config.json"))
    except UnreadableFileError as error:
        raise ModelConfigError(f"--model {error}") from None
    except ValueError as error:
        raise ModelConfigError(f"--model {path}: not valid JSON: {error}") from None
    return parse_model(config, name=path.stem if builtin.exists() else str(path), source=str(path))
