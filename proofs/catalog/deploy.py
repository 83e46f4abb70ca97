"""A bounded theorem on `gridproof check`'s reading of vLLM's flags
(models.deploy): for every built-in deployment, the flags it was deployed
with resolve to the plan its geometry file gives.

The geometry files (models/geometries/) were derived by hand from vLLM
0.33.0's source and the deployments' public descriptions, each citing
them; `models.deploy` derives the same from the flags and the model's
config.json. Two readings of the same facts, compared where the plan the
engine runs is decided: a flag misread (the EAGLE head sharded like the
target groups, the hash lookahead kept beside a KV connector, the draft
slots taken off an explicit budget) moves a cadence, a span or a scheduler
input, and a case fails.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import fields, replace

from models.deploy import DeploymentError, ServeFlags, geometry_toml, offload_blocks_per_chunk, resolve_deployment
from models.errors import GridproofError
from models.geometry import load_geometry, parse_geometry
from models.hf_config import KV_CACHE_DTYPES, ModelConfigError, builtin_model_names, kv_element_bytes, load_model
from models.plan import plan
from models.variants import Variant
from proofs.catalog.base import Theorem
from proofs.engine.enumerated import Case, Checks, Enumeration, Verdict

# Kimi-K3 at TP16/DCP16 as deployed, but for its --mamba-block-size (the benchmark of `check` reads it too).
KIMI_K3_FLAGS = {
    "tensor_parallel_size": 16,
    "decode_context_parallel_size": 16,
    "block_size": 768,
    "max_num_scheduled_tokens": 4096,
    "speculative_config": {"method": "eagle", "num_speculative_tokens": 3},
    "kv_transfer_config": {"kv_connector": "OffloadingConnector"},
}
# Each built-in geometry file, the model and the flags it records (its header names them).
DEPLOYED = {
    "kimi-k3-tp16-dcp16": ("kimi-k3", {**KIMI_K3_FLAGS, "mamba_block_size": 12288}),
    "kimi-linear-48b-tp4-dcp4": (
        "kimi-linear",
        {"tensor_parallel_size": 4, "decode_context_parallel_size": 4, "mamba_block_size": 2048},
    ),
    # Served without --max-num-batched-tokens on a B200, where vLLM's default is 16,384 (its file's header).
    "nemotron-3-nano-30b-tp2": (
        "nemotron-h",
        {"tensor_parallel_size": 2, "max_num_batched_tokens": 16384, "mamba_ssm_cache_dtype": "float32"},
    ),
    "granite-4.0-h-small-tp2": ("granite-4.0-h", {"tensor_parallel_size": 2}),
    "qwen3-next-80b-tp4-mtp2": (
        "qwen3-next",
        {"tensor_parallel_size": 4, "speculative_config": {"method": "qwen3_next_mtp", "num_speculative_tokens": 2}},
    ),
}


def _cases(_variant: Variant):
    for geometry, (model, flags) in DEPLOYED.items():
        yield {"geometry": geometry, "model": model, "flags": json.dumps(flags, sort_keys=True)}


def flags_resolve_to_the_file(variant: Variant, case: Case) -> Verdict:
    """The case's flags, resolved against its model's config.json, give the plan of its geometry file: align
    mode, the cadence, target and EAGLE spans, acceptance, offload chunk and every input of the split."""
    checks = Checks()
    flags = ServeFlags(**json.loads(case["flags"]))
    deployment = resolve_deployment(load_model(case["model"]), flags, variant)
    resolved, written = deployment.geometry, load_geometry(case["geometry"])
    mine, theirs = plan(variant, resolved), plan(variant, written)
    compared = [
        # Each file is a deployment with prefix caching in align mode, which --mamba-cache-mode unset leaves on.
        ("align mode", deployment.config_inputs.align_mode, True),
        ("the cadence", mine.cadence, theirs.cadence),
        ("the target spans", mine.target_spans, theirs.target_spans),
        ("the EAGLE spans", resolved.eagle_spans(), written.eagle_spans()),
        ("accepted", mine.accepted, theirs.accepted),
        ("the offload blocks per chunk", *(g.deployment.offload_blocks_per_chunk for g in (resolved, written))),
    ]
    compared += [
        (f"the split's {f.name}", getattr(mine.split, f.name), getattr(theirs.split, f.name))
        for f in fields(mine.split)
    ]
    for name, got, wanted in compared:
        if checks.differ(name, got, wanted):
            return checks.verdict(
                f"{name}: {got} from the flags, {wanted} in models/geometries/{case['geometry']}.toml"
            )
    return checks.verdict()


# What `check` says it answers for (README, docs/check.md): "a typical 100,000-token resend", shortened
# to fit --max-model-len.
DOCUMENTED_TYPICAL_PROMPT = 100_000
TP_SIZES = (1, 2, 4, 8)
MAX_MODEL_LENS = (None, 4096, 100_000, 100_001)


def _flag_cases(_variant: Variant):
    for family in builtin_model_names():
        for tp in TP_SIZES:
            for kv in KV_CACHE_DTYPES:
                yield {"family": family, "tp": tp, "kv_cache_dtype": kv}


def _resolved(family: str, variant: Variant, **flags):
    try:
        return resolve_deployment(load_model(family), ServeFlags(**flags), variant)
    except DeploymentError:
        return None  # refused (a TP size the heads do not divide): nothing to compare


def reads_the_kv_cache_dtype(variant: Variant, case: Case) -> Verdict:
    """The attention page `check` resolves with --kv-cache-dtype X is the one with "auto" scaled by the
    two KV elements' sizes (held to vLLM's by matches-recorded-vllm); and the typical request is the
    documented one, or one token short of --max-model-len."""
    checks = Checks()
    tp, kv = case["tp"], case["kv_cache_dtype"]
    given = _resolved(case["family"], variant, tensor_parallel_size=tp, kv_cache_dtype=kv)
    auto = _resolved(case["family"], variant, tensor_parallel_size=tp)
    if given is None or auto is None:
        checks.note("a TP size the heads do not divide (refused)")
        return checks.verdict(exercised=False)
    dtype = given.model.dtype
    scaled = auto.config_inputs.attn_page_per_token * kv_element_bytes(kv, dtype)
    if checks.differ(
        "the attention page scales with the KV element",
        given.config_inputs.attn_page_per_token * kv_element_bytes("auto", dtype),
        scaled,
    ):
        return checks.verdict(
            f"--kv-cache-dtype {kv}: an attention page of {given.config_inputs.attn_page_per_token} bytes a token, "
            f"where 'auto' gives {auto.config_inputs.attn_page_per_token} and the elements are "
            f"{kv_element_bytes(kv, dtype)} and {kv_element_bytes('auto', dtype)} bytes"
        )
    for limit in MAX_MODEL_LENS:
        resolved = _resolved(case["family"], variant, tensor_parallel_size=tp, max_model_len=limit)
        if resolved is None:
            continue
        within = resolved.max_model_len
        wanted = DOCUMENTED_TYPICAL_PROMPT if within is None else min(DOCUMENTED_TYPICAL_PROMPT, within - 1)
        if checks.differ("the typical request", resolved.geometry.request.prompt_tokens, wanted):
            return checks.verdict(
                f"--max-model-len {limit}: a typical request of {resolved.geometry.request.prompt_tokens:,} tokens, "
                f"where check documents {wanted:,}"
            )
    return checks.verdict()


NATIVE_OFFLOAD = {"kv_connector": "OffloadingConnector"}
# Flag sets each built-in family is resolved with (a TP and DCP size its heads do not take is refused and
# skipped): the retention kinds a geometry file states, a drafter beside native offload, and DCP with an
# offloaded chunk given in blocks and in tokens, where the chunk is read over each group's span. vLLM takes
# DCP 16 at TP 16 for the MLA models alone, and DCP 2 at TP 4 for two KV heads; TP 32 DCP 4 takes eight.
EMITTED_FLAGS = {
    "defaults": {},
    "dense retention": {"prefix_cache_retention_interval": None},
    "retention every 4,096": {"prefix_cache_retention_interval": 4096},
    "EAGLE x3 + offload": {
        "speculative_config": {"method": "eagle", "num_speculative_tokens": 3},
        "kv_transfer_config": NATIVE_OFFLOAD,
    },
    "MTP x2": {"speculative_config": {"method": "mtp", "num_speculative_tokens": 2}},
    "long prefill threshold 4,096": {"long_prefill_token_threshold": 4096},
    "--mamba-block-size 4,096": {"mamba_block_size": 4096},
    **{
        f"TP{tp} DCP{dcp}, offload {extra}": {
            "tensor_parallel_size": tp,
            "decode_context_parallel_size": dcp,
            "kv_transfer_config": {**NATIVE_OFFLOAD, "kv_connector_extra_config": extra},
        }
        for tp, dcp in ((4, 2), (16, 16), (32, 4))
        for extra in ({"blocks_per_chunk": 2}, {"block_size": 12288}, {"block_size": 24576})
    },
}


# The flags vLLM passes on unchanged, each a field of the geometry's deployment of the same name: the long
# prefill threshold (SchedulerConfig; it resets it only for encoder-decoder models), the retention interval
# (CacheConfig) and the explicit --mamba-block-size, before align mode resolves the cadence from it.
PASSED_ON = ("long_prefill_token_threshold", "prefix_cache_retention_interval", "mamba_block_size")


def _emitted_cases(_variant: Variant):
    for family in builtin_model_names():
        for label in EMITTED_FLAGS:
            yield {"family": family, "flags": label}


def _offload_over_spans(flags: ServeFlags, geometry) -> int | str:
    """The offloaded chunk in GPU blocks, read over the geometry's own group spans (CacheGroup.span), or
    why it is refused."""
    spans = tuple(group.span(geometry.deployment.dcp_size) for group in geometry.groups)
    try:
        chunks = offload_blocks_per_chunk(flags.kv_transfer_config, spans)
    except DeploymentError as error:
        return f"refused: {error}"
    return chunks.unusable or chunks.blocks_per_chunk


def emits_what_it_resolved(variant: Variant, case: Case) -> Verdict:
    """The geometry `check` resolves (and writes with --emit-geometry) reads back as itself, and its offload
    chunk is the connector's reading over the geometry's own spans."""
    checks = Checks()
    flags = ServeFlags(**EMITTED_FLAGS[case["flags"]])
    try:
        deployment = resolve_deployment(load_model(case["family"]), flags, variant)
    except ModelConfigError:
        checks.note("refused (a TP size the model's heads do not take)")
        return checks.verdict(exercised=False)
    except DeploymentError as error:
        refused = str(error)
        if "offload" in refused or "kv-transfer-config" in refused:
            checks.note("the offloaded chunk refused")
            # Refused for its chunk: the same flags without the connector resolve, and the chunk read over
            # the spans of that deployment's groups must be refused too.
            base = resolve_deployment(load_model(case["family"]), replace(flags, kv_transfer_config=None), variant)
            over_spans = _offload_over_spans(flags, base.geometry)
            if checks.fails("a chunk refused over the group spans", str(over_spans).startswith("refused")):
                return checks.verdict(f"refused ({refused}), where the spans give a chunk of {over_spans} blocks")
            return checks.verdict()
        checks.note("refused for another flag (an MTP draft a model's config gives no layers)")
        return checks.verdict(exercised=False)
    geometry = deployment.geometry
    try:
        read_back = parse_geometry(tomllib.loads(geometry_toml(geometry)), geometry.name, geometry.source)
    except (GridproofError, tomllib.TOMLDecodeError) as error:
        return checks.verdict(f"the emitted geometry does not load: {error}")
    if checks.differ("the emitted geometry reads back as itself", read_back, geometry):
        changed = [
            f"{f.name} {getattr(read_back.deployment, f.name)!r} (resolved: {getattr(geometry.deployment, f.name)!r})"
            for f in fields(geometry.deployment)
            if getattr(read_back.deployment, f.name) != getattr(geometry.deployment, f.name)
        ]
        return checks.verdict(f"written and read back, the geometry differs: {', '.join(changed) or 'its groups'}")
    # Flags vLLM keeps as given (SchedulerConfig, CacheConfig) reach the geometry the engine model runs.
    for name in PASSED_ON:
        if checks.differ(f"{name} as given", getattr(geometry.deployment, name), getattr(flags, name)):
            return checks.verdict(
                f"--{name.replace('_', '-')} {getattr(flags, name)!r} resolves to "
                f"{getattr(geometry.deployment, name)!r} in the geometry"
            )
    over_spans = _offload_over_spans(flags, geometry)
    if checks.differ(
        "the offload chunk over the group spans", geometry.deployment.offload_blocks_per_chunk, over_spans
    ):
        return checks.verdict(
            f"offload chunk {geometry.deployment.offload_blocks_per_chunk} blocks, where the connector reads "
            f"{over_spans} over the spans {[g.span(geometry.deployment.dcp_size) for g in geometry.groups]}"
        )
    return checks.verdict()


THEOREMS = (
    Theorem(
        "check-reads-the-kv-cache-dtype",
        "check",
        "Bounded, by enumeration: for every built-in family, TP size and --kv-cache-dtype `check` takes, the "
        "attention page per token it resolves (models.deploy.resolve_deployment) is the one 'auto' resolves "
        "scaled by the two KV elements' sizes (models.hf_config.kv_element_bytes, which matches-recorded-vllm "
        "holds to vLLM's own reading), so the flag reaches the block; and the typical request it answers for is "
        f"the documented {DOCUMENTED_TYPICAL_PROMPT:,} tokens, or one short of --max-model-len.",
        (),
        enumeration=Enumeration(
            f"every built-in family, at TP {', '.join(map(str, TP_SIZES))} (those its heads divide), with each "
            f"--kv-cache-dtype of {', '.join(KV_CACHE_DTYPES)}; --max-model-len unset, "
            f"{', '.join(str(n) for n in MAX_MODEL_LENS if n)}",
            _flag_cases,
            reads_the_kv_cache_dtype,
        ),
    ),
    Theorem(
        "check-flags-resolve-to-the-files",
        "check",
        "Bounded, by enumeration: for every built-in deployment, the vLLM flags it was deployed with, resolved "
        "by `gridproof check` (models.deploy.resolve_deployment, from the model's config.json), plan as its "
        "hand-derived geometry file does: in align mode, with the same cadence, target and EAGLE spans, "
        "acceptance, offload chunk and every input of the split.",
        (),
        enumeration=Enumeration(
            "every built-in geometry file of models/geometries/ but the all-groups variant of Kimi-K3, with the "
            "model and flags its header records: "
            + "; ".join(f"{g} ({m}, {json.dumps(f, sort_keys=True)})" for g, (m, f) in DEPLOYED.items()),
            _cases,
            flags_resolve_to_the_file,
        ),
    ),
    Theorem(
        "check-emits-what-it-resolved",
        "check",
        "Bounded, by enumeration: for every built-in family and each flag set, the geometry `check` resolves "
        "(models.deploy.resolve_deployment) and writes with --emit-geometry (geometry_toml) loads back as the same "
        "geometry, retention and prefill lookahead included; and the offloaded chunk it resolves is the "
        "OffloadingConnector's reading of --kv-transfer-config over the geometry's own group spans (each block "
        "times the DCP size where the group is sharded), refused exactly where that reading refuses.",
        (),
        enumeration=Enumeration(
            f"every built-in family with each of: {'; '.join(EMITTED_FLAGS)} (a TP or DCP size the model's heads "
            "do not take is refused and skipped)",
            _emitted_cases,
            emits_what_it_resolved,
            "a resolved deployment",
        ),
    ),
)
