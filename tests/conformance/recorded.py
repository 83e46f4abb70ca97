"""Records vLLM 0.33.0's own outputs on a fixed set of inputs, for the
catalogue theorem `matches-recorded-vllm` (proofs/catalog/recorded.py).

The flag readings (`speculation`) are every combination of a grid
(speculation_cases), read by vLLM's own config methods on stubs
(proofs/real_vllm/speculation.py); an offloading connector's chunk size
(`offload`) is read by vLLM's build_offloading_config on a grid of values
and geometries (offload_cases, proofs/real_vllm/offload.py), and the
token-count flags' texts (`token_flag`) by vLLM's own parsers
(TOKEN_FLAG_TEXTS, proofs/real_vllm/flags.py); each built-in model's
recurrent state (`state`) by vLLM's own calculators
(proofs/real_vllm/state.py).

The conformance tests compare the model with the real vLLM on fresh inputs
every run, but only where vLLM is installed; the recorded cases let
`gridproof prove` hold the baseline model to vLLM's answers without it. The
inputs are drawn with a fixed seed from the conformance inputs (boundary
values first, then random ones), so recording twice gives the same file;
`test_recorded.py` records again with the real vLLM and checks the committed
file is exactly that.

    cd tests && python3 -m conformance.recorded --write
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import itertools
import json
import random
import sys
from pathlib import Path

from conformance import boundaries, config_inputs, decision_inputs, split_inputs
from models.config import ConfigInputs
from models.deploy import SHARDED_DRAFT, SPECULATIVE_METHODS, UNSHARDED_DRAFT
from models.hf_config import KV_CACHE_DTYPES, builtin_model_names, family_config, load_model
from models.scheduler import SplitCall, SplitParams
from proofs.catalog.recorded import (
    ABSENT,
    FUNCTIONS,
    SPLIT_CALL,
    SPLIT_PARAMS,
    mtp_config,
    offload_extra_config,
    reading_config,
    record_path,
)


def installed_version() -> str:
    """The release of the vLLM this process imports: the one recorded (proofs/recorded/vllm-X.Y.Z.json).
    Read from the distribution, so that asking does not import vLLM."""
    from importlib import metadata

    return metadata.version("vllm")


SEED = 20261201
SPLIT_BOUNDARY_CASES = 1500
SPLIT_RANDOM_CASES = 1000
SPLIT_JUNCTION_CASES = 400
SPLIT_DECISION_ROUNDS = 4  # 688 calls: decision_inputs.TARGETS, each 4 or 12 times
CHECKPOINT_POSITION_CASES = 400
CHECKPOINT_VALID_CASES = 1500
CONFIG_BOUNDARY_CASES = 800
CONFIG_RANDOM_CASES = 400
# --speculative-config methods gridproof reads, and "" for none.
SPECULATION_METHODS = ("", *SPECULATIVE_METHODS)


def _sample(rng: random.Random, cases: list, count: int) -> list:
    return cases if len(cases) <= count else rng.sample(cases, count)


def _split_row(p: SplitParams, call: SplitCall, result: int) -> list:
    if p.eagle_spans:  # vLLM 0.33.0 has no EAGLE conversion: nothing of it is recorded
        raise ValueError("a recorded split case has no EAGLE spans")
    return [*(getattr(p, f) for f in SPLIT_PARAMS), *(getattr(call, f) for f in SPLIT_CALL), result]


def _at_the_junction(rng: random.Random, cases: list, count: int) -> list:
    """Calls of `cases` with the shared-prefix junction moved to where the
    split compares it: one off the chunk's requested end and the prompt, on
    both sides, with and without the shared-prefix checkpoint."""
    moved = []
    for p, call in rng.sample(cases, count):
        end = call.start + call.requested
        junction = rng.choice((end - 1, end, end + 1, call.prompt, call.prompt + 1))
        shared = rng.random() < 0.5
        moved.append((dataclasses.replace(p, shared_prefix=shared), dataclasses.replace(call, junction=junction)))
    return moved


def _config_inputs(scenario) -> ConfigInputs:
    """The model's inputs for a scenario; a `mamba_block_size` given on entry
    is the user's --mamba-block-size (what PR457 keeps)."""
    inputs = config_inputs.model_inputs(scenario)
    return dataclasses.replace(inputs, explicit_mamba_block_size=inputs.mamba_block_size != 0)


def _transfer(name: str, **extra) -> str:
    return json.dumps({"kv_connector": name, "kv_role": "kv_both", **extra}, sort_keys=True)


OFFLOADING = _transfer("OffloadingConnector")
# Connectors besides the native offload, each asked by 0.34.0 whether it keeps the lookahead block
# hashes: ones whose class declines, ones that keep them, and MultiConnectors of both and of none.
OTHER_CONNECTORS = (
    _transfer("LMCacheConnectorV1"),
    _transfer("HiSparseConnector"),
    _transfer("SimpleCPUOffloadConnector"),
    _transfer("NixlConnector"),
    _transfer("MooncakeStoreConnector"),
    _transfer("MultiConnector", kv_connector_extra_config={"connectors": []}),
    *(
        _transfer("MultiConnector", kv_connector_extra_config={"connectors": [json.loads(_transfer(c)) for c in held]})
        for held in (
            ("OffloadingConnector", "SimpleCPUOffloadConnector"),
            ("OffloadingConnector", "LMCacheConnectorV1"),
        )
    ),
)


def speculation_cases() -> list[tuple]:
    """Every method with each switch that decides the drop and the hash lookahead, beside the native
    offload connector or none, under a roomy budget; every method beside each of OTHER_CONNECTORS; an MTP
    draft whose n_predict and num_nextn_predict_layers differ; then every method with parallel drafting
    on and off under budgets at the lookahead slots' edge (K, K + 1, K + 2 batched tokens for K
    speculative tokens) and around a set --max-num-scheduled-tokens. No randomness: recording twice gives
    the same rows."""
    cases = []
    for method, tokens in itertools.product(SPECULATION_METHODS, (1, 3)):
        for drop_off, hashes_off, layers, caching, transfer in itertools.product(
            (False, True), (False, True), (1, 3), (True, False), ("", OFFLOADING)
        ):
            cases.append((method, tokens, drop_off, hashes_off, False, layers, layers, caching, transfer, 8192, 0))
        budgets = [(tokens + k, 0) for k in (0, 1, 2)] + [(8192, 4096), (4100, 4096), (4096, 8192)]
        for parallel, (batched, scheduled) in itertools.product((False, True), budgets):
            cases.append((method, tokens, False, False, parallel, 1, 1, True, "", batched, scheduled))
    for method, hashes_off, transfer in itertools.product(SPECULATION_METHODS, (False, True), OTHER_CONNECTORS):
        cases.append((method, 3, False, hashes_off, False, 3, 3, True, transfer, 8192, 0))
    for tokens, (layers, nextn), transfer in itertools.product(
        (1, 3), ((3, 1), (1, 3)), ("", OFFLOADING, OTHER_CONNECTORS[0])
    ):
        cases.append(("mtp", tokens, False, False, False, layers, nextn, True, transfer, 8192, 0))
    return cases


# The model types gridproof reads that vLLM or Transformers has a config class for (MiniMax's is remote code).
MTP_MODEL_TYPES = (
    "qwen3_next",
    "qwen3_5",
    "qwen3_5_moe",
    "qwen3_5_text",
    "nemotron_h",
    "kimi_k3",
    "kimi_linear",
    "jamba",
    "falcon_h1",
    "granitemoehybrid",
)


def mtp_cases() -> list[tuple]:
    """Every model type with each count absent, 0 or 2, at the top and in text_config."""
    counts = (ABSENT, 0, 2)
    return [(t, *values) for t in MTP_MODEL_TYPES for values in itertools.product(counts, repeat=4)]


def _mtp_row(real_mtp, case: tuple) -> list | None:
    read = _returned(real_mtp.read, mtp_config(dict(zip(FUNCTIONS["mtp"].inputs, case, strict=True))))
    if read is None:
        return None
    n_predict, multi_module_read = read
    return [*case, ABSENT if n_predict is None else n_predict, multi_module_read]


# (tokens per block, DCP size, draft group): at DCP 1 every group spans as many tokens per
# block, above it the target does not; the draft group sharded (an MTP layer's), unsharded
# (an EAGLE head's) or absent.
OFFLOAD_GROUPS = (
    (768, 1, ""),
    (768, 1, UNSHARDED_DRAFT),
    (768, 4, ""),
    (768, 4, SHARDED_DRAFT),
    (768, 4, UNSHARDED_DRAFT),
    (16, 2, UNSHARDED_DRAFT),
)
# A chunk size as JSON may give it: an integer, 0 or negative, a numeric string,
# a float, a bool, or what int() refuses.
OFFLOAD_CHUNKS = (None, 1, 3, 0, -2, "4", " 4 ", "4.0", "four", 4.7, 0.5, True, False, [2], {"blocks": 2})


def offload_cases() -> list[tuple]:
    """Each geometry of OFFLOAD_GROUPS with blocks_per_chunk alone, then block_size alone (whole,
    partial and negative blocks, and the same kinds of value), then both."""
    cases = []
    for block, dcp, draft in OFFLOAD_GROUPS:
        sizes = (block, 2 * block, 3 * block + 1, 4 * block, 0, -block, str(2 * block), float(2 * block))
        sizes += (2 * block + 0.5, True, "abc", [block])
        pairs = [(c, None) for c in OFFLOAD_CHUNKS] + [(None, s) for s in sizes] + [(2, block), ("2", 2 * block)]
        cases += [(json.dumps(chunks), json.dumps(size), block, dcp, draft) for chunks, size in pairs]
    return cases


def _offload_row(real_offload, case: tuple) -> list:
    x = dict(zip(FUNCTIONS["offload"].inputs, case, strict=True))
    return [*case, *real_offload.read(offload_extra_config(x), x["block"], x["dcp"], x["draft"])]


# Texts a --max-model-len or --max-num-batched-tokens may be given as: plain and
# signed integers, each suffix in both cases, decimals (one that float arithmetic
# cuts below its value), spaces, underscores, auto, and what the parsers refuse.
TOKEN_FLAG_TEXTS = (
    "8192",
    " 8192 ",
    "+8192",
    "1_000",
    "0",
    "-1",
    "-2",
    "auto",
    "AUTO",
    "8k",
    "8K",
    "2m",
    "2M",
    "1g",
    "1G",
    "1t",
    "1T",
    "25.6k",
    "1.001k",
    "0.5m",
    "1.5K",
    "8 k",
    "8kb",
    "k",
    "1e3",
    "0x10",
    "",
    "8.0",
    "12.5",
    "٣k",
    "1" * 320 + "k",
)


def token_flag_cases() -> list[tuple]:
    return [(flag, text) for flag in ("max_model_len", "max_num_batched_tokens") for text in TOKEN_FLAG_TEXTS]


STATE_TP_SIZES = (1, 2, 4, 8, 16)
STATE_SSM_DTYPES = ("auto", "float32", "bfloat16", "float16")


# Sizes set over a built-in model's config.json for the state rows: a Gated DeltaNet whose key and value
# heads differ in size, as no built-in one does.
STATE_KEYS = (
    ("qwen3-next", {"linear_value_head_dim": 64}),
    ("qwen3-next", {"linear_key_head_dim": 64}),
)


def _state_rows(real_state) -> list[list]:
    """Each built-in model, and those of STATE_KEYS, at each TP size, with 0, 1 or 3 speculative tokens and
    each SSM cache dtype: vLLM's element counts and dtypes, or refused where vLLM raises (a TP size its
    divide asserts on, an SSM dtype a layer kind does not keep)."""
    from proofs.catalog.recorded import state_model

    rows = []
    cases = [(name, "{}") for name in builtin_model_names()]
    cases += [(name, json.dumps(keys, sort_keys=True)) for name, keys in STATE_KEYS]
    for name, keys_json in cases:
        model = state_model({"model": name, "keys_json": keys_json})
        for tp, num_spec, ssm in itertools.product(STATE_TP_SIZES, (0, 1, 3), STATE_SSM_DTYPES):
            try:
                elements, dtypes = real_state.read(model, tp, num_spec, ssm)
            except (AssertionError, ValueError):
                rows.append([name, keys_json, tp, num_spec, ssm, True, "", ""])
                continue
            rows.append([name, keys_json, tp, num_spec, ssm, False, json.dumps(elements), json.dumps(dtypes)])
    return rows


def _kept(rows) -> list[list]:
    return [row for row in rows if row is not None]


def _returned(function, *arguments):
    """What the real function returns, or None where it raises: such inputs are not recorded."""
    try:
        return function(*arguments)
    except Exception:  # vLLM refuses the input (an assert, a division by zero): not a case to hold the model to
        return None


# The real vLLM's readers, by the name of the session fixture that holds each
# (tests/conformance/conftest.py), in the order `record` takes them: the module of
# proofs.real_vllm and the class, whose construction loads vLLM.
READERS = {
    "real_split": ("split", "RealSplit"),
    "real_config": ("config", "RealConfig"),
    "real_speculation": ("speculation", "RealSpeculation"),
    "real_mtp": ("speculation", "RealMtpLayers"),
    "real_offload": ("offload", "RealOffload"),
    "real_token_flag": ("flags", "RealTokenFlag"),
    "real_state": ("state", "RealStateTensors"),
    "real_kv_dtype": ("flags", "RealKvCacheDtype"),
    "real_start_block": ("flags", "RealStartBlock"),
    "real_context_length": ("flags", "RealContextLength"),
    "real_prompt_budget": ("speculation", "RealPromptBudget"),
    "real_reading": ("state", "RealModelReading"),
}


def load_reader(module: str, name: str):
    """proofs.real_vllm.`module`.`name`, constructed with vLLM's own output kept quiet."""
    from proofs.real_vllm import quietly

    return quietly(getattr(importlib.import_module(f"proofs.real_vllm.{module}"), name))


# The smallest kernel blocks a backend may declare (a multiple of each): below, at and above either
# release's default block, its divisors and not, and the built-in models' kernels.
START_BLOCK_KERNELS = (1, 2, 8, 12, 16, 24, 32, 48, 64, 80, 96, 128, 144, 256, 576)


# Context-length and RoPE keys set over a built-in model's config.json: each length key vLLM reads
# (shorter and longer than the stated one), model_max_length both ways, and each kind of RoPE
# scaling (linear, the legacy "type", dynamic, a YaRN factor that is not applied, a fraction, none, and
# "rope_type" beside a legacy "type" that says otherwise).
CONTEXT_KEYS = (
    {},
    {"seq_length": 8192},
    {"n_positions": 300000},
    {"max_seq_len": 131072, "seq_len": 65536},
    {"model_max_length": 500000},
    {"model_max_length": 4096},
    {"rope_scaling": {"rope_type": "linear", "factor": 2.0}},
    {"rope_scaling": {"type": "dynamic", "factor": 4}},
    {"rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 65536}},
    {"rope_parameters": {"rope_type": "linear", "factor": 1.5, "rope_theta": 10000.0}},
    {"rope_scaling": {"rope_type": "default"}},
    {"max_position_embeddings": 100001, "rope_scaling": {"rope_type": "linear", "factor": 1.5}},
    {"rope_scaling": {"rope_type": "linear", "type": "yarn", "factor": 2.0}},
)
CONTEXT_FLAGS = (0, 8192, 262144, 262145, 1048577)


# Keys a wrapper states beside its text config, which vLLM does not read for the context length.
CONTEXT_TOP_KEYS = (
    {"max_position_embeddings": 4096},
    {"model_max_length": 4096},
    {"rope_scaling": {"rope_type": "linear", "factor": 2.0}},
)


def context_cases() -> list[tuple]:
    """Every built-in model as it is, under each --max-model-len; four of them (two a wrapper's text
    config) with each of CONTEXT_KEYS; the wrappers with each of CONTEXT_TOP_KEYS at their top."""
    names = builtin_model_names()
    cases = [(name, "{}", "{}", flag) for name in names for flag in CONTEXT_FLAGS]
    for name, keys, flag in itertools.product(
        ("granite-4.0-h", "kimi-k3", "qwen3-next", "qwen3.5"), CONTEXT_KEYS[1:], CONTEXT_FLAGS
    ):
        cases.append((name, json.dumps(keys, sort_keys=True), "{}", flag))
    for name, keys, flag in itertools.product(("kimi-k3", "qwen3.5"), CONTEXT_TOP_KEYS, CONTEXT_FLAGS):
        cases.append((name, "{}", json.dumps(keys, sort_keys=True), flag))
    return cases


def _context_row(real_context_length, model: str, keys_json: str, top_keys_json: str, flag: int) -> list | None:
    from proofs.catalog.recorded import context_config

    case = {"model": model, "keys_json": keys_json, "top_keys_json": top_keys_json}
    read = _returned(real_context_length.read, context_config(case), flag or None)
    return None if read is None else [model, keys_json, top_keys_json, flag, *read]


# Drafters as (method, num_speculative_tokens, parallel_drafting): none, and those whose draft slots
# come off the batched tokens each step (a draft model; parallel drafting, which 0.34.0 refuses but for
# dflash and dspark); batched tokens below, at and off a 16-token block and a budget; --max-num-scheduled-tokens
# unset, below and above them.
BUDGET_DRAFTERS = (("", 0, False), ("draft_model", 1, False), ("draft_model", 3, True), ("eagle", 3, True))
BUDGET_BATCHED = (5, 20, 4096, 4100, 8192)
BUDGET_SCHEDULED = (0, 4096, 8192)


def prompt_budget_cases() -> list[tuple]:
    return [(*d, b, s) for d in BUDGET_DRAFTERS for b in BUDGET_BATCHED for s in BUDGET_SCHEDULED]


# Keys set over a built-in model's text config, each where the family states the keys it replaces (the
# first: as it is): a head dimension stated against one derived from the hidden size, KV heads below and
# off the TP sizes, another MLA latent, another model dtype, and the Mamba sizes vLLM's model classes read
# (the inner size stated or derived, groups that TP does not divide, an SSM cache dtype in the config).
READING_KEYS = (
    ({}, ()),
    ({"hidden_size": 1024, "num_attention_heads": 4}, ("head_dim",)),
    ({"head_dim": 96}, ("hidden_size", "num_attention_heads")),
    ({"hidden_size": 3072, "num_attention_heads": 24}, ("hidden_size", "num_attention_heads")),
    ({"num_key_value_heads": 1}, ("num_key_value_heads",)),
    ({"num_key_value_heads": 6}, ("num_key_value_heads",)),
    ({"kv_lora_rank": 256, "qk_rope_head_dim": 32}, ("kv_lora_rank",)),
    ({"dtype": "float16"}, ("dtype",)),
    ({"mamba_d_ssm": None, "hidden_size": 3072, "mamba_expand": 2}, ("mamba_d_ssm",)),
    ({"mamba_n_groups": 3}, ("mamba_n_groups",)),
    ({"n_groups": 3}, ("n_groups",)),
    ({"mamba_ssm_cache_dtype": "float32"}, ("mamba_ssm_cache_dtype",)),
    ({"linear_value_head_dim": 64}, ("linear_value_head_dim",)),
    ({"linear_key_head_dim": 64}, ("linear_key_head_dim",)),
)
READING_TP_SIZES = (1, 2, 4, 8, 16)


def _reading_keys() -> list[tuple[str, str]]:
    """(model, keys_json) for every built-in model vLLM loads (not one whose model class it removed, whose
    config class went with it) and each of READING_KEYS it states the keys of."""
    cases = []
    for name in builtin_model_names():
        if load_model(name).removed_from_vllm:
            continue
        family = family_config(name)
        for keys, needs in READING_KEYS:
            if all(key in family for key in needs):
                cases.append((name, json.dumps(keys, sort_keys=True)))
    return cases


def attention_page_cases() -> list[tuple]:
    return [(*case, tp, kv) for case in _reading_keys() for tp in READING_TP_SIZES for kv in ("auto", "fp8")]


def model_state_cases() -> list[tuple]:
    """The reading cases of the families whose vLLM model class is at hand (STATE_MODEL_CLASSES)."""
    from proofs.real_vllm.state import STATE_MODEL_CLASSES

    cases = []
    for name, keys in _reading_keys():
        if load_model(name).model_type in STATE_MODEL_CLASSES:
            cases += [(name, keys, tp, num_spec) for tp in READING_TP_SIZES for num_spec in (0, 2)]
    return cases


def _attention_page_row(real_reading, model: str, keys_json: str, tp: int, kv: str) -> list | None:
    """None where vLLM's config class refuses the config (its own validation of the sizes)."""
    page = _returned(real_reading.attention_page, reading_config({"model": model, "keys_json": keys_json}), tp, kv)
    return None if page is None else [model, keys_json, tp, kv, False, page]


def _model_state_row(real_reading, model: str, keys_json: str, tp: int, num_spec: int) -> list | None:
    read = _returned(real_reading.state, reading_config({"model": model, "keys_json": keys_json}), tp, num_spec)
    return None if read is None else [model, keys_json, tp, num_spec, *read]


def kv_dtype_cases() -> list[tuple]:
    """Every --kv-cache-dtype check takes, under every model dtype a family may have."""
    return [(kv, model) for kv in KV_CACHE_DTYPES for model in ("bfloat16", "float16", "float32")]


def record(
    real_split,
    real_config,
    real_speculation,
    real_mtp,
    real_offload,
    real_token_flag,
    real_state,
    real_kv_dtype,
    real_start_block,
    real_context_length,
    real_prompt_budget,
    real_reading,
) -> dict:
    rng = random.Random(SEED)
    split_cases = _sample(rng, list(boundaries.split_cases()), SPLIT_BOUNDARY_CASES)
    for _ in range(SPLIT_RANDOM_CASES):
        p = split_inputs.random_params(rng)
        split_cases.append((p, split_inputs.random_call(rng, p)))
    split_cases += _at_the_junction(rng, split_cases, SPLIT_JUNCTION_CASES)
    positions = _sample(rng, list(boundaries.checkpoint_position_cases()), CHECKPOINT_POSITION_CASES)
    valid = _sample(rng, list(boundaries.checkpoint_valid_cases()), CHECKPOINT_VALID_CASES // 2)
    valid += [split_inputs.random_checkpoint_valid_input(rng) for _ in range(CHECKPOINT_VALID_CASES // 2)]
    scenarios = _sample(rng, list(config_inputs.boundary_scenarios()), CONFIG_BOUNDARY_CASES)
    scenarios += [config_inputs.random_scenario(rng) for _ in range(CONFIG_RANDOM_CASES)]
    # Drawn last, so that every case drawn before them is the one recorded before them.
    split_cases += decision_inputs.decision_calls(rng, SPLIT_DECISION_ROUNDS)

    def rows(cases, real, row):
        kept = []
        for case in cases:
            result = _returned(real, *case)
            if result is not None:
                kept.append(row(*case, result))
        return kept

    def config_row(scenario, result):
        inputs = _config_inputs(scenario)
        return [*(getattr(inputs, name) for name in FUNCTIONS["config"].inputs), *(v or 0 for v in result)]

    tables = {
        "split": rows(split_cases, real_split.split, _split_row),
        "checkpoint_position": rows(positions, real_split.checkpoint_position, lambda *row: list(row)),
        "checkpoint_valid": rows(valid, real_split.checkpoint_valid, lambda *row: list(row)),
        "config": rows(((s,) for s in scenarios), real_config.resolve, config_row),
        "speculation": [[*case, *real_speculation.read(*case)] for case in speculation_cases()],
        "mtp": [row for row in (_mtp_row(real_mtp, case) for case in mtp_cases()) if row is not None],
        "offload": [_offload_row(real_offload, case) for case in offload_cases()],
        "state": _state_rows(real_state),
        "token_flag": [
            [flag, text, *real_token_flag.read(text, flag == "max_model_len")] for flag, text in token_flag_cases()
        ],
        "kv_dtype": [[kv, model, *real_kv_dtype.read(kv, model)] for kv, model in kv_dtype_cases()],
        "attention_page": _kept(_attention_page_row(real_reading, *case) for case in attention_page_cases()),
        "model_state": _kept(_model_state_row(real_reading, *case) for case in model_state_cases()),
        "start_block": [[kernel, real_start_block.read(kernel)] for kernel in START_BLOCK_KERNELS],
        "prompt_budget": [[*case, *real_prompt_budget.read(*case)] for case in prompt_budget_cases()],
        "max_model_len": [
            row for row in (_context_row(real_context_length, *case) for case in context_cases()) if row is not None
        ],
    }
    result = {"vllm": installed_version(), "recorded_by": f"tests/conformance/recorded.py, seed {SEED}"}
    for name, function in FUNCTIONS.items():
        result[name] = {"columns": [*function.inputs, *function.outputs], "cases": tables[name]}
    return result


def dumps(recorded: dict) -> str:
    """One case per line: the file stays readable and a change shows as lines in a diff."""
    lines = ["{"]
    for i, (key, value) in enumerate(recorded.items()):
        end = "," if i < len(recorded) - 1 else ""
        if isinstance(value, dict):
            lines.append(f"  {json.dumps(key)}: {{")
            lines.append(f'    "columns": {json.dumps(value["columns"])},')
            lines.append('    "cases": [')
            cases = value["cases"]
            lines.extend(f"      {json.dumps(c)}{',' if j < len(cases) - 1 else ''}" for j, c in enumerate(cases))
            lines.append("    ]")
            lines.append(f"  }}{end}")
        else:
            lines.append(f"  {json.dumps(key)}: {json.dumps(value)}{end}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    version = installed_version()
    target = record_path(version)
    parser.add_argument("--write", action="store_true", help=f"write {target} (default: print a summary)")
    parser.add_argument("--out", metavar="FILE", help="write the record there instead (to compare it)")
    args = parser.parse_args(argv)
    if args.out:
        target, args.write = Path(args.out), True
    print(f"loading vLLM {version} ...", file=sys.stderr, flush=True)
    recorded = record(*(load_reader(*where) for where in READERS.values()))
    counts = ", ".join(f"{k} {len(v['cases'])}" for k, v in recorded.items() if isinstance(v, dict))
    if args.write:
        Path(target).write_text(dumps(recorded), encoding="utf-8")
        print(f"wrote {target}: {counts}", file=sys.stderr)
    else:
        print(f"recorded (not written): {counts}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
