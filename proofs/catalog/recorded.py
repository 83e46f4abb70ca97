"""The baseline model against vLLM 0.33.0's own answers, recorded (and `vllm-0.34.0` against 0.34.0's).

`gridproof source` and the conformance tests hold the model to vLLM's code,
but only where its source or an installed vLLM is at hand. The theorems that
compare a variant with 0.33.0 (`*-default-equivalence`) read the model itself
as the reference, so a fault in the code both sides share moves both. The
recorded cases pin the baseline to what vLLM 0.33.0 returned: its split,
checkpoint position and validity, and block-size resolution, on inputs
drawn at and around the places each decides on; and `gridproof check`'s
reading of the speculative, connector, caching and budget flags
(models.deploy), of a model's MTP layer count, of an offloading
connector's chunk size, of the token-count flags' text, of each
built-in model's recurrent state tensors and of a config.json's
attention and state sizes to what vLLM's own config, parsers,
calculators, architecture convertor and model classes read of them.
tests/conformance/recorded.py records them with the real vLLM;
tests/conformance/test_recorded.py checks that this file is what it records.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, fields
from functools import cache
from pathlib import Path

from models.config import ConfigInputs, resolve
from models.deploy import (
    OFFLOADING_CONNECTOR,
    DeploymentError,
    block_spans,
    cache_groups,
    offload_blocks_per_chunk,
    scheduler_flags,
    speculation,
    start_block,
    token_flag,
)
from models.errors import GridproofError
from models.geometry import DRAFT, RECURRENT, TARGET, CacheGroup, Deployment, Geometry, Request
from models.hf_config import (
    MTP_HIDDEN,
    NEXTN,
    HybridModel,
    ModelConfigError,
    MtpLayers,
    family_config,
    kv_element_bytes,
    load_model,
    parse_model,
)
from models.plan import plan
from models.prefill import run_prefill
from models.scheduler import SplitCall, SplitParams, checkpoint_position, checkpoint_valid, split
from models.variants import PR457, PR457_GUARDED
from proofs.catalog.base import Theorem
from proofs.engine.enumerated import Case, Checks, Enumeration, Verdict

VERSION = "0.33.0"  # the release PR457 patches, and the baseline's
RECORDS = Path(__file__).resolve().parent.parent / "recorded"
RELEASES_RECORDED = ("0.33.0", "0.34.0")


def record_path(version: str = VERSION) -> Path:
    """Where the answers recorded from vLLM `version` are kept."""
    return RECORDS / f"vllm-{version}.json"


RECORDED = record_path()
# vLLM 0.33.0 has no EAGLE conversion: its split reads no EAGLE spans.
SPLIT_PARAMS = tuple(f.name for f in fields(SplitParams) if f.name not in ("eagle_spans", "eagle_annotated"))
SPLIT_CALL = tuple(f.name for f in fields(SplitCall))


class RecordedCasesError(GridproofError):
    """The recorded vLLM answers are missing or do not read as recorded."""


@dataclass(frozen=True)
class RecordedFunction:
    """One of vLLM's functions as the model answers it: the recorded input
    and output columns, and the model's answer (a tuple, vLLM's None as 0)."""

    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    model: Callable[[object, dict], tuple]


def _split(variant, x: dict) -> tuple:
    params = SplitParams(**{name: x[name] for name in SPLIT_PARAMS})
    return (split(variant, params, SplitCall(**{name: x[name] for name in SPLIT_CALL})),)


def _resolve(variant, x: dict) -> tuple:
    resolved = resolve(variant, ConfigInputs(**x))
    return resolved.block_size, resolved.mamba_block_size, resolved.mamba_page_size_padded


def _speculation(variant, x: dict) -> tuple:
    """`gridproof check`'s reading of the flags (models.deploy), as the recorded columns have it."""
    config = None
    if x["method"]:
        switches = ("disable_eagle_block_drop", "disable_lookahead_block_hashes", "parallel_drafting")
        config = {"method": x["method"], "num_speculative_tokens": x["num_speculative_tokens"]}
        config.update({name: x[name] for name in switches})
    transfer = json.loads(x["kv_transfer_json"]) if x["kv_transfer_json"] else None
    try:
        flags = scheduler_flags(
            # The stubbed draft config: hf_config_override's n_predict, and num_nextn_predict_layers beside it.
            speculation(config, MtpLayers(x["mtp_layers"], x["mtp_nextn"]), variant),
            x["enable_prefix_caching"],
            transfer,
            x["max_num_batched_tokens"],
            x["max_num_scheduled_tokens"] or None,
            variant=variant,
        )
    except DeploymentError:
        return True, False, 0, 0, 0, 0
    # The prefill lookahead as the engine model reads it off the deployment (the hash lookahead where the
    # deployment states none).
    stated = Deployment(
        dcp_size=1,
        block_size=1,
        max_num_scheduled_tokens=1,
        hash_lookahead_tokens=flags.hash_lookahead_tokens,
        prefill_lookahead_tokens=flags.prefill_lookahead_tokens,
    )
    return (
        False,
        flags.eagle_block_drop,
        flags.hash_lookahead_tokens,
        flags.draft_slots,
        flags.max_num_scheduled_tokens,
        stated.prefill_lookahead,
    )


# A config key absent, or vLLM's n_predict None.
ABSENT = -1
MTP_KEYS = (("nextn", NEXTN), ("mtp_hidden", MTP_HIDDEN))


# The built-in family whose config.json an MTP case's counts are set over, by model type.
MTP_FAMILY = {
    "qwen3_next": "qwen3-next",
    "qwen3_5": "qwen3.5",
    "qwen3_5_moe": "qwen3.5",
    "qwen3_5_text": "qwen3.5",
    "nemotron_h": "nemotron-h",
    "kimi_k3": "kimi-k3",
    "kimi_linear": "kimi-linear",
    "jamba": "jamba",
    "falcon_h1": "falcon-h1",
    "granitemoehybrid": "granite-4.0-h",
}


def mtp_config(x: dict) -> dict:
    """The config.json a recorded MTP case stands for: its family's (MTP_FAMILY) as published, a wrapper's
    text config nested, of the case's model type; each count where given, the text_config ones in its text
    config (a text_config of the counts alone where the model type has none)."""
    base = reading_config({"model": MTP_FAMILY[x["model_type"]], "keys_json": "{}"})
    top = {key: x[column] for column, key in MTP_KEYS if x[column] != ABSENT}
    text = {key: x[f"text_{column}"] for column, key in MTP_KEYS if x[f"text_{column}"] != ABSENT}
    if base["model_type"] == x["model_type"] and "text_config" in base:
        return {**base, **top, "text_config": {**base["text_config"], **text}}
    config = {**base.get("text_config", base), "model_type": x["model_type"], **top}
    return {**config, "text_config": text} if text else config


def _mtp(_variant, x: dict) -> tuple:
    """`gridproof check`'s reading of a model's MTP count (models.hf_config.parse_model's `mtp`)."""
    read = parse_model(mtp_config(x), x["model_type"]).mtp
    return ABSENT if read.n_predict is None else read.n_predict, read.multi_module_read


# Each as the JSON text of its value in kv_connector_extra_config ("null": unset), so that a
# case's values stay integers and names, and a string "4" reads apart from the number 4.
OFFLOAD_KEYS = (("blocks_per_chunk_json", "blocks_per_chunk"), ("block_size_json", "block_size"))


def offload_extra_config(x: dict) -> dict:
    """The kv_connector_extra_config a recorded offload case stands for."""
    return {key: json.loads(x[column]) for column, key in OFFLOAD_KEYS}


def _offload(_variant, x: dict) -> tuple:
    """`gridproof check`'s reading of an OffloadingConnector's chunk size (models.deploy), over a hybrid
    model's cache groups (models.deploy.cache_groups)."""
    config = {"kv_connector": OFFLOADING_CONNECTOR, "kv_connector_extra_config": offload_extra_config(x)}
    spans = block_spans(cache_groups(x["block"], x["dcp"], x["draft"]), x["dcp"])
    try:
        return False, offload_blocks_per_chunk(config, spans).blocks_per_chunk
    except DeploymentError:
        return True, 0


def _token_flag(_variant, x: dict) -> tuple:
    """`gridproof check`'s reading of a token-count flag's text (models.deploy.token_flag): -1 for auto."""
    try:
        value = token_flag(x["text"], auto=x["flag"] == "max_model_len")
    except ValueError:
        return True, 0
    return False, -1 if value is None else value


def _kv_dtype(_variant, x: dict) -> tuple:
    """`gridproof check`'s KV cache element under --kv-cache-dtype (models.hf_config.kv_element_bytes)."""
    return False, kv_element_bytes(x["kv_cache_dtype"], x["model_dtype"])


def _tensors_json(tensors) -> tuple[str, str]:
    """State tensors as the recorded columns have them: each one's element count, and its dtype, as JSON text."""
    return json.dumps([math.prod(t.shape) for t in tensors]), json.dumps([t.dtype for t in tensors])


def state_model(x: dict) -> HybridModel:
    """The model a recorded state case stands for: a built-in one, with `keys_json` set over its text config."""
    if x["keys_json"] == "{}":
        return load_model(x["model"])
    return parse_model(reading_config(x), x["model"])


def _state(_variant, x: dict) -> tuple:
    """`gridproof check`'s recurrent state tensors (models.hf_config) for a built-in model, some with other
    sizes set: each tensor's element count and dtype, as JSON text; refused where it refuses the TP size
    or SSM dtype."""
    try:
        tensors = state_model(x).state(x["tp"], x["num_spec"], x["ssm_cache_dtype"])
    except ModelConfigError:
        return True, "", ""
    return False, *_tensors_json(tensors)


def context_config(x: dict) -> dict:
    """The config.json a recorded context-length case stands for: a built-in family's as published (a
    wrapper's text config nested), with `keys_json` set over its text config and `top_keys_json` over the
    config itself."""
    return {**reading_config(x), **json.loads(x["top_keys_json"])}


def _max_model_len(_variant, x: dict) -> tuple:
    """`gridproof check`'s max_model_len (models.hf_config.ContextLength) for a config.json and a
    --max-model-len (0: unset)."""
    try:
        context = parse_model(context_config(x), x["model"]).context
        return False, context.max_model_len(x["max_model_len"] or None)
    except ModelConfigError:
        return True, 0


# What vLLM's config classes need to load a built-in family's file and gridproof does not read: a
# multimodal wrapper's text config nested as a published config.json nests it (vLLM's KimiK3Config and
# Qwen3_5Config read their text config there, and defaults where it is absent), Kimi-Linear's layer lists
# (its config class asserts them), and no layer_types where the file quotes them as a sentence.
TEXT_CONFIG_TYPES = {"kimi_k3": "kimi_linear", "qwen3_5": "qwen3_5_text"}


def reading_config(x: dict) -> dict:
    """The config.json a recorded reading case stands for: a built-in family's, with the case's keys
    set over its text config, as vLLM's config classes load it."""
    family = family_config(x["model"])
    text = {k: v for k, v in family.items() if not k.startswith("_")}
    if isinstance(text.get("layer_types"), str):
        text["layer_types"] = None
    if isinstance(text.get("linear_attn_config"), dict):
        text["linear_attn_config"] = {"kda_layers": [], "full_attn_layers": [], **text["linear_attn_config"]}
    text.update(json.loads(x["keys_json"]))
    wrapper = text["model_type"]
    if wrapper in TEXT_CONFIG_TYPES:
        return {"model_type": wrapper, "text_config": {**text, "model_type": TEXT_CONFIG_TYPES[wrapper]}}
    return text


def _attention_page(_variant, x: dict) -> tuple:
    """`gridproof check`'s attention page of one token on a rank (models.hf_config: the config's head
    size and KV heads as parse_model reads them, split over TP, in the KV cache's dtype)."""
    try:
        model = parse_model(reading_config(x), x["model"])
    except ModelConfigError:
        return True, 0
    return False, model.attention_page_per_token(x["tp"], x["kv_cache_dtype"])


def _model_state(_variant, x: dict) -> tuple:
    """`gridproof check`'s recurrent state tensors of a config.json (models.hf_config.parse_model, then
    HybridModel.state), with the cache dtypes auto: each tensor's element count and dtype, as JSON text."""
    try:
        tensors = parse_model(reading_config(x), x["model"]).state(x["tp"], x["num_spec"], "auto")
    except ModelConfigError:
        return True, "", ""
    return False, *_tensors_json(tensors)


def budget_geometry(drafter: bool, budget: int, prompt: int, token_budget: int | None = None) -> Geometry:
    """The hybrid deployment a prompt-budget case runs: attention and a recurrent state at 16 tokens a
    block (a draft group beside them with a drafter), `budget` tokens a step under a token budget of
    `token_budget` (None: the same), a `prompt`-token request."""
    groups = (CacheGroup(TARGET, 16), CacheGroup(RECURRENT, 16), *((CacheGroup(DRAFT, 16),) if drafter else ()))
    deployment = Deployment(1, 16, budget, scheduler_token_budget=token_budget)
    return Geometry("prompt-budget", deployment, groups, Request(prompt))


def budget_prompt(max_num_batched_tokens: int, max_num_scheduled_tokens: int) -> int:
    """A prompt longer than three steps at any budget the flags give."""
    return 3 * max(max_num_batched_tokens, max_num_scheduled_tokens) + 5


def _first_chunk(variant, x: dict) -> tuple:
    """Where `gridproof check`'s model ends a long prompt's first prefill chunk under the flags: the
    per-step budget models.deploy.scheduler_flags gives (the token budget, less the drafter's slots
    off the batched tokens), run through the model's prefill (models.prefill); 0 where it stalls."""
    config = None
    if x["method"]:
        config = {
            "method": x["method"],
            "num_speculative_tokens": x["num_speculative_tokens"],
            "parallel_drafting": x["parallel_drafting"],
        }
    try:
        flags = scheduler_flags(
            speculation(config, MtpLayers(1, 1), variant),
            True,
            None,
            x["max_num_batched_tokens"],
            x["max_num_scheduled_tokens"] or None,
            variant=variant,
        )
    except DeploymentError:
        return True, 0
    geometry = budget_geometry(
        bool(x["method"]),
        flags.prompt_budget,
        budget_prompt(x["max_num_batched_tokens"], x["max_num_scheduled_tokens"]),
        flags.scheduler_token_budget,
    )
    trace = run_prefill(plan(variant, geometry), flags.prompt_budget)
    return False, next(trace.every_chunk()).end


FUNCTIONS = {
    # The flags `gridproof check` reads: "" for no --speculative-config or no --kv-transfer-config (else its
    # JSON text), a max_num_scheduled_tokens of 0 for the flag unset, refused where vLLM raises; the MTP
    # draft config's n_predict (mtp_layers) and num_nextn_predict_layers (mtp_nextn).
    "speculation": RecordedFunction(
        (
            "method",
            "num_speculative_tokens",
            "disable_eagle_block_drop",
            "disable_lookahead_block_hashes",
            "parallel_drafting",
            "mtp_layers",
            "mtp_nextn",
            "enable_prefix_caching",
            "kv_transfer_json",
            "max_num_batched_tokens",
            "max_num_scheduled_tokens",
        ),
        ("refused", "eagle_block_drop", "hash_lookahead_tokens", "draft_slots", "token_budget", "prefill_lookahead"),
        _speculation,
    ),
    # A model's MTP count for a self-drafting MTP: ABSENT for a key not in the config, or no n_predict.
    "mtp": RecordedFunction(
        ("model_type", *(c for c, _ in MTP_KEYS), *(f"text_{c}" for c, _ in MTP_KEYS)),
        ("n_predict", "multi_module_read"),
        _mtp,
    ),
    # An OffloadingConnector's blocks per chunk from its extra config over the groups
    # at `block` tokens per block and DCP `dcp`, with a "sharded" or "unsharded" draft group or none
    # (""); refused where vLLM raises. vLLM's answer may be 0 or less, which check then refuses.
    "offload": RecordedFunction(
        (*(column for column, _ in OFFLOAD_KEYS), "block", "dcp", "draft"),
        ("refused", "blocks_per_chunk"),
        _offload,
    ),
    # A token-count flag's text as vLLM's parser reads it: --max-model-len (auto: -1) or
    # --max-num-batched-tokens (--max-num-scheduled-tokens has its parser); refused where it raises.
    "token_flag": RecordedFunction(("flag", "text"), ("refused", "value"), _token_flag),
    # A built-in model's recurrent state at TP `tp`, `num_spec` speculative tokens and an SSM cache
    # dtype: each tensor's element count and dtype (JSON text), as vLLM's own calculators give them;
    # refused where they raise (a TP size that does not divide a dimension, an SSM dtype a kind refuses).
    "state": RecordedFunction(
        ("model", "keys_json", "tp", "num_spec", "ssm_cache_dtype"), ("refused", "elements_json", "dtypes_json"), _state
    ),
    # The KV cache's element size under each --kv-cache-dtype check takes, for a model of each dtype: what
    # a token's attention page (and so the hybrid block) is made of.
    "kv_dtype": RecordedFunction(("kv_cache_dtype", "model_dtype"), ("refused", "element_bytes"), _kv_dtype),
    # A built-in model's config.json with the keys of `keys_json` set over its text config (reading_config),
    # read as vLLM reads it: one token's attention page on a rank at TP `tp` under --kv-cache-dtype, from the
    # head size, KV heads and MLA its architecture convertor reads; refused where gridproof refuses it.
    "attention_page": RecordedFunction(
        ("model", "keys_json", "tp", "kv_cache_dtype"), ("refused", "page_per_token"), _attention_page
    ),
    # The same configs' recurrent state as vLLM's model class builds it from the config (the families whose
    # class imports on this install), with `num_spec` speculative tokens; refused where vLLM's divide asserts.
    "model_state": RecordedFunction(
        ("model", "keys_json", "tp", "num_spec"), ("refused", "elements_json", "dtypes_json"), _model_state
    ),
    # A mamba_block_size given on entry is the user's --mamba-block-size (explicit_mamba_block_size).
    "config": RecordedFunction(
        tuple(f.name for f in fields(ConfigInputs)),
        ("block_size", "mamba_block_size", "mamba_page_size_padded"),
        _resolve,
    ),
    # The max_model_len vLLM runs a built-in model with under --max-model-len (0: unset), with the
    # context-length and RoPE keys of `keys_json` set over its text config and `top_keys_json` over a
    # wrapper's own config (context_config); refused where vLLM raises.
    "max_model_len": RecordedFunction(
        ("model", "keys_json", "top_keys_json", "max_model_len"), ("refused", "value"), _max_model_len
    ),
    # Where the real scheduler ends a long prompt's first prefill chunk under --max-num-batched-tokens and
    # --max-num-scheduled-tokens (0: unset) beside a drafter ("": none) whose draft slots come off the
    # batched tokens each step (budget_geometry's deployment; 0: the prefill stalls); refused where vLLM
    # refuses the flags.
    "prompt_budget": RecordedFunction(
        ("method", "num_speculative_tokens", "parallel_drafting", "max_num_batched_tokens", "max_num_scheduled_tokens"),
        ("refused", "first_chunk"),
        _first_chunk,
    ),
    # The block vLLM starts from when --block-size is unset, for an attention backend whose kernels take
    # any multiple of `kernel_min` (its preferred block for the release's default block size).
    "start_block": RecordedFunction(
        ("kernel_min",), ("block",), lambda variant, x: (start_block(variant, x["kernel_min"]),)
    ),
    "split": RecordedFunction((*SPLIT_PARAMS, *SPLIT_CALL), ("scheduled",), _split),
    "checkpoint_position": RecordedFunction(
        ("num_tokens", "block", "drop_eagle_block", "lookahead"),
        ("position",),
        lambda _variant, x: (checkpoint_position(*x.values()),),
    ),
    "checkpoint_valid": RecordedFunction(
        ("query_start", "query_end", "position", "hash_block", "cadence", "alignment"),
        ("valid",),
        lambda _variant, x: (checkpoint_valid(*x.values()),),
    ),
}


@cache
def _record_bytes(version: str = VERSION) -> bytes:
    """The recorded file as stored: parsed by recorded(), digested by _domain()."""
    path = record_path(version)
    try:
        return path.read_bytes()
    except OSError as error:
        raise RecordedCasesError(f"{path}: cannot read the recorded vLLM {version} answers: {error}") from None


@cache
def recorded(version: str = VERSION) -> dict:
    """The file recorded from vLLM `version`, checked against FUNCTIONS' columns."""
    path = record_path(version)
    try:
        data = json.loads(_record_bytes(version))
    except ValueError as error:
        raise RecordedCasesError(f"{path}: cannot read the recorded vLLM {version} answers: {error}") from None
    if not isinstance(data, dict) or data.get("vllm") != version:
        raise RecordedCasesError(f"{path}: not a record of vLLM {version}")
    for name, function in FUNCTIONS.items():
        table = data.get(name)
        columns = [*function.inputs, *function.outputs]
        if not isinstance(table, dict) or table.get("columns") != columns:
            raise RecordedCasesError(f"{RECORDED}: {name}: expected the columns {columns}")
        if any(not isinstance(row, list) or len(row) != len(columns) for row in table.get("cases", [])):
            raise RecordedCasesError(f"{RECORDED}: {name}: every case needs {len(columns)} values")
    return data


def _cases(variant) -> list[Case]:
    """Every case recorded from the variant's release."""
    cases = []
    for name, function in FUNCTIONS.items():
        for i, row in enumerate(recorded(variant.release)[name]["cases"]):
            n = len(function.inputs)
            answer = {f"vllm {output}": value for output, value in zip(function.outputs, row[n:], strict=True)}
            cases.append({"function": name, "case": i, **dict(zip(function.inputs, row[:n], strict=True)), **answer})
    return cases


def _inputs(case: Case) -> dict:
    return {name: case[name] for name in FUNCTIONS[case["function"]].inputs}


def _vllm(case: Case) -> dict:
    return {output: case[f"vllm {output}"] for output in FUNCTIONS[case["function"]].outputs}


def _expected(variant, case: Case) -> dict:
    """vLLM's answer, except where the variant means to differ: PR457 keeps an
    explicit --mamba-block-size in align mode (config-explicit-cadence-kept
    proves it does), where 0.33.0 overwrites it."""
    answer = _vllm(case)
    if case["function"] == "config" and variant.keeps_explicit_cadence and case["explicit_mamba_block_size"]:
        answer["mamba_block_size"] = case["mamba_block_size"]
    return answer


def matches_recorded(variant, case: Case) -> Verdict:
    checks = Checks()
    function = FUNCTIONS[case["function"]]
    mine = dict(zip(function.outputs, function.model(variant, _inputs(case)), strict=True))
    expected = _expected(variant, case)
    for output in function.outputs:
        if checks.differ(f"{case['function']} {output}", mine[output], expected[output]):
            kept = "" if expected == _vllm(case) else " (the explicit cadence kept)"
            return checks.verdict(
                f"{case['function']} case {case['case']}: vLLM {variant.release} returned {_vllm(case)}, so the model "
                f"should give {expected}{kept}; it gives {mine}"
            )
    return checks.verdict()


def _domain() -> str:
    """The recorded cases of each release, by function, and each file's digest: a changed
    record is another domain (and another proof-cache key)."""
    described = []
    for version in RELEASES_RECORDED:
        try:
            data = recorded(version)
        except RecordedCasesError as error:
            described.append(f"the cases recorded from vLLM {version} ({error})")
            continue
        counts = ", ".join(f"{len(data[name]['cases'])} {name}" for name in FUNCTIONS)
        digest = hashlib.sha256(_record_bytes(version)).hexdigest()[:16]
        described.append(
            f"every case recorded from vLLM {version} in proofs/recorded/{record_path(version).name}: {counts} "
            f"(sha256 {digest}...)"
        )
    return "; ".join(described) + ", each variant on its release's"


THEOREMS = (
    Theorem(
        "matches-recorded-vllm",
        "recorded",
        "Bounded, by enumeration: on every recorded call of the variant's vLLM release's own split "
        "(`Scheduler._mamba_block_aligned_split`), checkpoint position and validity "
        "(`get_mamba_prefill_checkpoint_position`, `is_mamba_prefill_checkpoint_valid`) and block-size "
        "resolution (`Platform._align_hybrid_block_size`), the model answers as vLLM did; and on every recorded "
        "reading of the speculative, KV-connector, prefix-caching and budget flags (`SpeculativeConfig`, "
        "`VllmConfig`: the EAGLE block drop, the hash lookahead, the draft slots, the token budget, and the "
        "budgets vLLM refuses), of a model's MTP layer count (`SpeculativeConfig.hf_config_override`), of "
        "an OffloadingConnector's chunk size (`build_offloading_config`), of the token-count flags' text "
        "(`human_readable_int`, `human_readable_int_or_auto`) and of each built-in model's recurrent state "
        "tensors (`MambaStateShapeCalculator`, `MambaStateDtypeCalculator`), `gridproof check` (models.deploy, "
        "models.hf_config) reads them as vLLM does. "
        f"{PR457.name} and {PR457_GUARDED.name} against 0.33.0's too, except that they keep an explicit "
        "--mamba-block-size in align mode, where 0.33.0 overwrites it (config-explicit-cadence-kept).",
        (),
        enumeration=Enumeration(_domain(), _cases, matches_recorded),
    ),
)
