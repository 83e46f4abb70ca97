"""A deployment as vLLM 0.33.0's `vllm serve` flags describe it, resolved to a
geometry: the physical block through `models.config.resolve` (the same model
of `Platform._align_hybrid_block_size` the catalogue proves things about),
the scheduler flags as vLLM derives them (vllm-align-mode.md sections 1-3, 6).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, fields
from typing import NamedTuple

from models.config import ConfigInputs, ResolvedConfig, resolve
from models.errors import GridproofError
from models.geometry import DENSE_RETENTION, DRAFT, RECURRENT, TARGET, CacheGroup, Deployment, Geometry, Request
from models.hf_config import NO_MTP, HybridModel, MaxModelLenError, MtpLayers
from models.variants import BASELINE, Variant

# config/speculative.py use_eagle_block_drop: the EAGLE family; MTP methods are
# normalised to "mtp" by vLLM (qwen3_next_mtp, deepseek_mtp, ...).
EAGLE_METHODS = ("eagle", "eagle3", "mtp")
# DFlash and DSpark draft from the target's hidden states in a pass of their own (parallel drafting).
BLOCK_DRAFTERS = ("dflash", "dspark")
SPECULATIVE_METHODS = (*EAGLE_METHODS, "ngram", "medusa", "mlp_speculator", "draft_model", *BLOCK_DRAFTERS, "suffix")
OFFLOADING_CONNECTOR = "OffloadingConnector"
MULTI_CONNECTOR = "MultiConnector"
# vLLM 0.33.0 get_batch_defaults for the OpenAI server on a >= 70 GiB GPU.
DEFAULT_BATCHED_TOKENS = 8192
TYPICAL_PROMPT_TOKENS = 100_000


class DeploymentError(GridproofError):
    """Flags that vLLM would refuse, or that gridproof cannot model."""


# vLLM 0.33.0 parses --max-num-batched-tokens, --max-num-scheduled-tokens and
# --max-model-len as human-readable integers (utils/argparse_utils.py:30-94,
# engine/arg_utils.py:395-409): a lower-case suffix decimal, an upper-case one binary.
TOKEN_SUFFIXES = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
_SUFFIXED = re.compile(r"(\d+(?:\.\d+)?)([kmgtKMGT])")


def token_flag(text: str, auto: bool = False) -> int | None:
    """A token-count flag as vLLM 0.33.0's parser reads it: "8k" is 8,000 and "8K" 8,192; a
    decimal with a decimal suffix is multiplied as a float and cut toward 0 ("25.6k" is 25,600),
    with a binary suffix it is refused; anything else is int()'s. `auto` (--max-model-len):
    "-1" or "auto" is None, the model's own length. Raises ValueError, saying why, where
    vLLM's parser raises."""
    text = text.strip()
    if auto and (text == "-1" or text.lower() == "auto"):
        return None
    suffixed = _SUFFIXED.fullmatch(text)
    if suffixed is None:
        try:
            return int(text)
        except ValueError:
            raise ValueError("not an integer, nor one with a k, m, g or t suffix") from None
    number, suffix = suffixed.groups()
    if suffix.islower():
        try:
            return int(float(number) * TOKEN_SUFFIXES[suffix])
        except OverflowError:
            raise ValueError("too large for vLLM's parser") from None
    if "." in number:
        raise ValueError(f"vLLM refuses a decimal with the binary suffix {suffix}; {number}{suffix.lower()}?")
    return int(number) * TOKEN_SUFFIXES[suffix]


@dataclass(frozen=True)
class ServeFlags:
    """The `vllm serve` flags that decide where recurrent state is checkpointed."""

    tensor_parallel_size: int = 1
    decode_context_parallel_size: int = 1
    block_size: int | None = None
    mamba_block_size: int | None = None
    mamba_cache_mode: str | None = None
    max_num_batched_tokens: int | None = None
    max_num_scheduled_tokens: int | None = None
    long_prefill_token_threshold: int = 0
    max_model_len: int | None = None
    speculative_config: dict | None = None
    kv_transfer_config: dict | None = None
    enable_prefix_caching: bool = True
    mamba_ssm_cache_dtype: str = "auto"
    kv_cache_dtype: str = "auto"
    prefix_cache_retention_interval: int | None = 0  # None: dense (vLLM's CacheConfig default is 0)


@dataclass(frozen=True)
class Speculation:
    """--speculative-config as vLLM 0.33.0's SpeculativeConfig and VllmConfig read it."""

    method: str
    num_speculative_tokens: int
    eagle_block_drop: bool  # use_eagle_block_drop
    draft_slots: int  # input-budget slots reserved per request (max_num_new_slots_for_drafting)
    lookahead_slots: int  # KV slots past the scheduled tokens (num_lookahead_tokens)
    prefill_lookahead: int  # prompt tokens the drafter reads ahead (num_prefill_lookahead_tokens)
    lookahead_hashes: bool  # not disable_lookahead_block_hashes
    separate_draft_group: bool  # an EAGLE head has its own cache group; MTP joins the target's


@dataclass(frozen=True)
class SchedulerFlags:
    """What the scheduler's split reads of the speculative, connector, caching and budget flags."""

    eagle_block_drop: bool  # the config's use_eagle_block_drop (the scheduler turns it off beside a lookahead)
    hash_lookahead_tokens: int  # num_hash_lookahead_tokens
    draft_slots: int
    max_num_scheduled_tokens: int  # the token budget per step
    prompt_budget: int  # what one request's prefill chunk may take per step
    # The drafter's num_prefill_lookahead_tokens where it is not the hash lookahead (a multi-module MTP
    # beside a KV connector that drops the hashes); None where it is (the geometry's field of that name).
    prefill_lookahead_tokens: int | None = None

    @property
    def scheduler_token_budget(self) -> int | None:
        """The token budget where it is above the prompt budget (the geometry's field of that name)."""
        return self.max_num_scheduled_tokens if self.max_num_scheduled_tokens > self.prompt_budget else None


@dataclass(frozen=True)
class ResolvedDeployment:
    model: HybridModel
    flags: ServeFlags
    config_inputs: ConfigInputs
    resolved: ResolvedConfig
    geometry: Geometry
    speculation: Speculation | None
    offload: bool
    max_model_len: int | None
    notes: tuple[str, ...] = field(default=())


def mtp_modules(variant: Variant, mtp: MtpLayers) -> int:
    """The MTP modules `use_multi_module_mtp` counts on the draft's config: 0.33.0 reads its
    num_nextn_predict_layers (1 where absent), 0.34.0 its n_predict (`num_mtp_modules`, 1 where none)."""
    return (mtp.n_predict or 1) if variant.mtp_modules_from_n_predict else mtp.multi_module_read


def speculation(config: dict | None, mtp: MtpLayers = NO_MTP, variant: Variant = BASELINE) -> Speculation | None:
    """`mtp`: what an MTP draft reads of the model's config (hf_config.mtp_layers); the MTP draft is the
    model itself."""
    if config is None:
        return None
    method = config.get("method")
    if not isinstance(method, str):
        raise DeploymentError('--speculative-config: needs a "method" string')
    if method.endswith("mtp"):
        method = "mtp"
    if method not in SPECULATIVE_METHODS:
        known = ", ".join(SPECULATIVE_METHODS)
        raise DeploymentError(f"--speculative-config: unknown method {method!r} (known: {known})")
    if method in variant.dropped_speculative_methods:
        raise DeploymentError(f"--speculative-config: {variant.engine} has no speculative method {method!r}")
    n_predict = mtp.n_predict if method == "mtp" else None
    if n_predict == 0:
        # SpeculativeConfig.__post_init__: num_speculative_tokens % n_predict, or a default of 0 refused.
        raise DeploymentError(
            "--speculative-config: vLLM 0.33.0 cannot start an MTP draft from this model: its config gives "
            "the draft 0 MTP layers (Kimi-K3 reads text_config.num_nextn_predict_layers, 0 when absent)"
        )
    tokens = config.get("num_speculative_tokens")
    if tokens is None:
        # vLLM defaults it to the draft's n_predict, which it finds for MTP only.
        if n_predict is None:
            raise DeploymentError(
                '--speculative-config: needs "num_speculative_tokens" (vLLM would take it from the draft '
                "model's config, which gridproof reads only for MTP, where this model's config gives no count)"
            )
        tokens = n_predict
    if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens <= 0:
        raise DeploymentError(f"--speculative-config: num_speculative_tokens must be positive, got {tokens!r}")
    if n_predict and tokens > n_predict and tokens % n_predict:
        raise DeploymentError(
            f"--speculative-config: num_speculative_tokens {tokens} must be a multiple of the model's "
            f"{n_predict} MTP layers (vLLM reuses the modules in turn)"
        )
    switches = {}
    for name in ("disable_eagle_block_drop", "disable_lookahead_block_hashes", "parallel_drafting"):
        switches[name] = config.get(name, False)
        if not isinstance(switches[name], bool):
            raise DeploymentError(f"--speculative-config: {name} must be true or false")
    if switches["parallel_drafting"] and method not in BLOCK_DRAFTERS and variant.parallel_drafting_block_drafters_only:
        # 0.34.0 SpeculativeConfig._verify_args (config/speculative.py:1688-1692)
        raise DeploymentError(
            f"--speculative-config: parallel_drafting with {method}: vLLM {variant.engine.removeprefix('vLLM ')} "
            "refuses it (only dflash and dspark draft in parallel, and they always do)"
        )
    # config/speculative.py: use_eagle, needs_eagle_block_drop, use_multi_module_mtp and
    # max_num_new_slots_for_drafting; config/vllm.py: num_lookahead_tokens, num_prefill_lookahead_tokens.
    drafts_from_hidden_states = method in (*EAGLE_METHODS, *BLOCK_DRAFTERS)
    multi_module = method == "mtp" and min(mtp_modules(variant, mtp), tokens) > 1
    if method == "dflash":  # drafts in a pass of its own: no slot in the batch, a bonus query per request
        slots, lookahead_slots = 0, tokens + 1
    elif method == "dspark":
        # No bonus query where the draft samples from the anchor, which is its config's default
        # (sample_from_anchor, read on the draft model's config; gridproof does not read it).
        slots, lookahead_slots = 0, tokens
    else:
        if switches["parallel_drafting"]:
            slots = tokens if method == "draft_model" else tokens - 1
        else:
            slots = 1 if method == "draft_model" else 0
        lookahead_slots = tokens if drafts_from_hidden_states or method == "draft_model" else 0
    prefill_lookahead = (tokens if multi_module else 1) if drafts_from_hidden_states else 0
    return Speculation(
        method=method,
        num_speculative_tokens=tokens,
        eagle_block_drop=method in EAGLE_METHODS and not switches["disable_eagle_block_drop"],
        draft_slots=slots,
        lookahead_slots=lookahead_slots,
        prefill_lookahead=prefill_lookahead,
        lookahead_hashes=not switches["disable_lookahead_block_hashes"],
        separate_draft_group=method in ("eagle", "eagle3"),
    )


def connector_name(transfer: dict) -> str:
    """The kv_connector a --kv-transfer-config names."""
    name = transfer.get("kv_connector")
    if not isinstance(name, str):
        raise DeploymentError('--kv-transfer-config: needs a "kv_connector" string')
    return name


def connector_keeps_lookahead_hashes(variant: Variant, transfer: dict) -> bool:
    """Whether the hash lookahead stays on beside the KV connector `transfer` (--kv-transfer-config) names:
    its class declares supports_lookahead_block_hashes, in a release that asks it (0.34.0
    _resolve_num_hash_lookahead_tokens; a MultiConnector where every connector it holds does). 0.33.0 asks
    none, and drops the hashes beside any. Raises DeploymentError for a connector whose answer gridproof
    does not know (not in the variant's lists, or loaded from kv_connector_module_path)."""
    if not (variant.lookahead_hash_connectors or variant.connectors_without_lookahead_hashes):
        return False
    name = connector_name(transfer)
    if transfer.get("kv_connector_module_path"):
        raise DeploymentError(
            f"--kv-transfer-config: {name} from kv_connector_module_path: gridproof does not know whether it keeps "
            "the lookahead block hashes (supports_lookahead_block_hashes), which decides the drafter's hash lookahead"
        )
    if name == MULTI_CONNECTOR:
        extra = transfer.get("kv_connector_extra_config") or {}
        held = extra.get("connectors") if isinstance(extra, dict) else None
        if not isinstance(held, list) or not all(isinstance(c, dict) for c in held):
            raise DeploymentError('--kv-transfer-config: MultiConnector needs "connectors", a list of connectors')
        return bool(held) and all(connector_keeps_lookahead_hashes(variant, c) for c in held)
    if name in variant.lookahead_hash_connectors:
        return True
    if name in variant.connectors_without_lookahead_hashes:
        return False
    raise DeploymentError(
        f"--kv-transfer-config: gridproof does not know whether {variant.engine}'s {name} keeps the lookahead "
        "block hashes (supports_lookahead_block_hashes), which decides the drafter's hash lookahead"
    )


def scheduler_flags(
    spec: Speculation | None,
    enable_prefix_caching: bool,
    transfer: dict | None,
    max_num_batched_tokens: int,
    max_num_scheduled_tokens: int | None,
    variant: Variant = BASELINE,
) -> SchedulerFlags:
    """The scheduler's inputs from the flags; `transfer`: --kv-transfer-config, None where not given."""
    if spec is not None and max_num_batched_tokens <= spec.lookahead_slots:
        # VllmConfig._set_max_num_scheduled_tokens
        raise DeploymentError(
            f"--max-num-batched-tokens {max_num_batched_tokens} leaves no token beside the "
            f"{spec.lookahead_slots} lookahead slots of {spec.method} x{spec.num_speculative_tokens} "
            "(vLLM refuses it)"
        )
    # num_hash_lookahead_tokens (0.33.0 config/vllm.py:677-692; 0.34.0 _resolve_num_hash_lookahead_tokens,
    # config/vllm.py:633-655): beside a KV connector only one that supports lookahead block hashes keeps
    # them, and then prefix caching is not asked.
    hashes = spec is not None and spec.eagle_block_drop and spec.lookahead_hashes
    if transfer is not None:
        hashes = hashes and connector_keeps_lookahead_hashes(variant, transfer)
    else:
        hashes = hashes and enable_prefix_caching
    lookahead = spec.prefill_lookahead if hashes else 0
    token_budget = max_num_scheduled_tokens or max_num_batched_tokens
    slots = spec.draft_slots if spec else 0
    return SchedulerFlags(
        eagle_block_drop=bool(spec and spec.eagle_block_drop),
        hash_lookahead_tokens=lookahead,
        prefill_lookahead_tokens=spec.prefill_lookahead if spec and spec.prefill_lookahead != lookahead else None,
        draft_slots=slots,
        max_num_scheduled_tokens=token_budget,
        # A chunk takes at most the token budget and the batched tokens less the draft
        # slots (scheduler.py:719-722, 845-847); above the slots by the check above.
        prompt_budget=min(token_budget, max_num_batched_tokens - slots),
    )


def start_block(variant: Variant, kernel_min: int) -> int:
    """The block `_align_hybrid_block_size` starts from when --block-size is unset: the attention
    backend's preferred block for `CacheConfig.DEFAULT_BLOCK_SIZE` (`get_preferred_block_size`), the
    default where the backend takes it (a multiple of its smallest kernel block), else that kernel block."""
    default = variant.default_block_size
    return default if default % kernel_min == 0 else kernel_min


SHARDED_DRAFT, UNSHARDED_DRAFT = "sharded", "unsharded"


def cache_groups(block: int, dcp: int, draft: str = "") -> tuple[CacheGroup, ...]:
    """A hybrid model's cache groups at `block` tokens per block: the target attention (DCP-sharded
    above DCP 1), the recurrent state, and an is_eagle_group draft group where `draft` is
    SHARDED_DRAFT (an MTP layer shares the target's spec, and so its group) or UNSHARDED_DRAFT (an
    EAGLE head runs at DCP1 in a group of its own)."""
    groups = [CacheGroup(TARGET, block, dcp_sharded=dcp > 1), CacheGroup(RECURRENT, block)]
    if draft:
        groups.append(CacheGroup(DRAFT, block, dcp_sharded=draft == SHARDED_DRAFT and dcp > 1, eagle=True))
    return tuple(groups)


def block_spans(groups: tuple[CacheGroup, ...], dcp: int) -> tuple[int, ...]:
    """Each group's tokens per block: a DCP-sharded group's block times the DCP size."""
    return tuple(g.block_size * (dcp if g.dcp_sharded else 1) for g in groups)


class OffloadChunks(NamedTuple):
    """--kv-transfer-config as vLLM 0.33.0's build_offloading_config reads it."""

    native: bool  # the native OffloadingConnector
    blocks_per_chunk: int  # GPU blocks per offloaded chunk, as vLLM resolves it (0 or less accepted too)
    read_as: str = ""  # a value given other than as an integer, and the integer vLLM's int() reads
    unusable: str = ""  # why gridproof cannot model a chunk size vLLM accepts: 0 blocks or fewer


def offload_blocks_per_chunk(config: dict | None, spans: tuple[int, ...]) -> OffloadChunks:
    """The native offload and its GPU blocks per chunk from --kv-transfer-config, as vLLM 0.33.0's
    build_offloading_config reads kv_connector_extra_config (offloading/config.py:121-158): each
    value through int(), so "4" and 4.5 read as 4. `spans`: each offloaded cache group's tokens per
    block, a DCP-sharded group's block times the DCP size. A block_size that divides to 0 blocks or
    fewer is accepted, as vLLM accepts it; resolve_deployment refuses it."""
    if config is None:
        return OffloadChunks(False, 1)
    if connector_name(config) != OFFLOADING_CONNECTOR:
        return OffloadChunks(False, 1)
    extra = config.get("kv_connector_extra_config") or {}
    if not isinstance(extra, dict):
        raise DeploymentError("--kv-transfer-config: kv_connector_extra_config must be a JSON object")
    # Each unset when absent or null, as vLLM reads them.
    chunks, tokens = extra.get("blocks_per_chunk"), extra.get("block_size")
    if chunks is not None and tokens is not None:
        raise DeploymentError("--kv-transfer-config: give block_size or blocks_per_chunk, not both (vLLM refuses both)")
    if chunks is not None:
        blocks = _vllm_int("blocks_per_chunk", chunks)
        if blocks <= 0:
            raise DeploymentError(
                f"--kv-transfer-config: blocks_per_chunk must be greater than 0, got {json.dumps(chunks)}"
            )
        return OffloadChunks(True, blocks, _read_as("blocks_per_chunk", chunks, blocks))
    if tokens is None:
        return OffloadChunks(True, 1)
    size = _vllm_int("block_size", tokens)
    if len(set(spans)) != 1:
        raise DeploymentError(
            f"--kv-transfer-config: block_size {json.dumps(tokens)} needs every cache group to span as many tokens "
            f"per block, and these span {', '.join(map(str, sorted(set(spans))))} "
            "(vLLM asserts it; give blocks_per_chunk)"
        )
    if size % spans[0]:
        raise DeploymentError(
            f"--kv-transfer-config: offload block_size {size} is not a multiple of the GPU block {spans[0]}"
        )
    blocks = size // spans[0]
    unusable = ""
    if blocks <= 0:
        unusable = (
            f"--kv-transfer-config: block_size {size} is {blocks} GPU blocks of {spans[0]} tokens per offloaded "
            "chunk: vLLM 0.33.0 accepts it, and gridproof cannot place a chunk of no blocks"
        )
    return OffloadChunks(True, blocks, _read_as("block_size", tokens, size), unusable)


def _vllm_int(key: str, value: object) -> int:
    """int(value), as vLLM 0.33.0 reads the key: one line where int() refuses it."""
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        raise DeploymentError(
            f"--kv-transfer-config: {key} {json.dumps(value)} is not an integer (vLLM's int() refuses it)"
        ) from None


def _read_as(key: str, value: object, read: int) -> str:
    if type(value) is int:
        return ""
    return f"kv_connector_extra_config {key} {json.dumps(value)} is read as {read}, as vLLM's int() reads it"


def resolve_deployment(model: HybridModel, flags: ServeFlags, variant: Variant) -> ResolvedDeployment:
    """The deployment `flags` describe for `model` under `variant`, as vLLM derives it: the block through
    models.config.resolve, the scheduler inputs, the cache groups, the offload chunk and the typical request
    (TYPICAL_PROMPT_TOKENS, within --max-model-len), with notes on what vLLM assumes or overwrites. Raises
    DeploymentError where vLLM refuses the flags."""
    notes = []
    _refuse_what_vllm_refuses(flags)
    tp, dcp = flags.tensor_parallel_size, flags.decode_context_parallel_size
    align = flags.enable_prefix_caching and flags.mamba_cache_mode != "none"
    spec = speculation(flags.speculative_config, model.mtp, variant)
    inputs = _config_inputs(model, flags, variant, spec.num_speculative_tokens if spec else 0, align)
    resolved = resolve(variant, inputs)
    block = resolved.block_size
    if flags.mamba_block_size is not None and align and resolved.mamba_block_size != flags.mamba_block_size:
        notes.append(
            f"--mamba-block-size {flags.mamba_block_size:,} is overwritten by the block size {block:,} in align mode "
            f"under {variant.name} (Platform._align_hybrid_block_size)"
        )
    batched = flags.max_num_batched_tokens or DEFAULT_BATCHED_TOKENS
    scheduler = scheduler_flags(
        spec, flags.enable_prefix_caching, flags.kv_transfer_config, batched, flags.max_num_scheduled_tokens, variant
    )
    if flags.max_num_batched_tokens is None and scheduler.prompt_budget == batched - scheduler.draft_slots:
        notes.append(f"no --max-num-batched-tokens: vLLM's server default {DEFAULT_BATCHED_TOKENS:,} assumed")
    try:
        max_model_len = model.context.max_model_len(flags.max_model_len)
    except MaxModelLenError as error:
        raise DeploymentError(f"{model.name}: {error}") from None
    _refuse_what_vllm_refuses_of_the_model(model, flags, max_model_len)
    draft = ""
    if scheduler.eagle_block_drop:
        draft = UNSHARDED_DRAFT if spec.separate_draft_group else SHARDED_DRAFT
    groups = cache_groups(block, dcp, draft)
    offload = offload_blocks_per_chunk(flags.kv_transfer_config, block_spans(groups, dcp))
    if offload.read_as:
        notes.append(offload.read_as)
    if offload.unusable:
        raise DeploymentError(offload.unusable)
    deployment = Deployment(
        dcp_size=dcp,
        block_size=block,
        max_num_scheduled_tokens=scheduler.prompt_budget,
        scheduler_token_budget=scheduler.scheduler_token_budget,
        long_prefill_token_threshold=flags.long_prefill_token_threshold,
        eagle_block_drop=scheduler.eagle_block_drop,
        hash_lookahead_tokens=scheduler.hash_lookahead_tokens,
        prefill_lookahead_tokens=scheduler.prefill_lookahead_tokens,
        mamba_block_size=flags.mamba_block_size,
        prefill_checkpoint_alignment=model.prefill_checkpoint_alignment,
        offload_blocks_per_chunk=offload.blocks_per_chunk,
        prefix_cache_retention_interval=flags.prefix_cache_retention_interval,
    )
    geometry = Geometry(
        name=f"{model.name}-tp{tp}" + (f"-dcp{dcp}" if dcp > 1 else ""),
        description=f"{model.name} from vLLM flags",
        deployment=deployment,
        groups=tuple(groups),
        request=Request(prompt_tokens=typical_prompt_tokens(max_model_len)),
        source=model.source,
    )
    return ResolvedDeployment(
        model=model,
        flags=flags,
        config_inputs=inputs,
        resolved=resolved,
        geometry=geometry,
        speculation=spec,
        offload=offload.native,
        max_model_len=max_model_len,
        notes=tuple(notes),
    )


def _refuse_what_vllm_refuses_of_the_model(model: HybridModel, flags: ServeFlags, max_model_len: int | None) -> None:
    """DeploymentError for flags vLLM refuses once it knows the model: decode context parallelism over
    too few KV heads (0.33.0 and 0.34.0 ModelConfig.verify_with_parallel_config, GQA/MQA only), and a long
    prefill threshold over max_model_len (SchedulerConfig.verify_max_model_len)."""
    tp, dcp = flags.tensor_parallel_size, flags.decode_context_parallel_size
    if dcp > 1 and not model.use_mla:
        if tp <= model.kv_heads:
            raise DeploymentError(
                f"{model.name}: decode context parallelism needs --tensor-parallel-size ({tp}) over the model's "
                f"{model.kv_heads} KV heads (vLLM refuses it for GQA/MQA)"
            )
        if dcp > tp // model.kv_heads:
            raise DeploymentError(
                f"{model.name}: --decode-context-parallel-size {dcp} is over {tp // model.kv_heads}, the most "
                f"--tensor-parallel-size {tp} leaves {model.kv_heads} KV heads (vLLM refuses it for GQA/MQA)"
            )
    threshold = flags.long_prefill_token_threshold
    if max_model_len is not None and threshold > max_model_len:
        raise DeploymentError(
            f"--long-prefill-token-threshold {threshold:,} is over max_model_len {max_model_len:,} "
            "(vLLM's SchedulerConfig refuses it)"
        )


def _refuse_what_vllm_refuses(flags: ServeFlags) -> None:
    """DeploymentError for flags vLLM refuses before it sizes anything."""
    if flags.mamba_cache_mode not in (None, "align", "none"):
        raise DeploymentError(f"--mamba-cache-mode: vLLM 0.33.0 knows align and none, got {flags.mamba_cache_mode!r}")
    tp, dcp = flags.tensor_parallel_size, flags.decode_context_parallel_size
    if tp % dcp:
        raise DeploymentError(f"--decode-context-parallel-size {dcp} must divide --tensor-parallel-size {tp}")
    if flags.mamba_block_size is not None and not flags.enable_prefix_caching:
        # VllmConfig.validate_mamba_block_size
        raise DeploymentError("--mamba-block-size needs prefix caching (vLLM refuses it with prefix caching off)")


def _config_inputs(model: HybridModel, flags: ServeFlags, variant: Variant, num_spec: int, align: bool) -> ConfigInputs:
    """What `_align_hybrid_block_size` reads for `model` under `flags`: the block asked for (or the one the
    backend prefers), the attention page per token under --kv-cache-dtype, the recurrent state page with
    `num_spec` speculative tokens, the kernel's smallest block, and the layers' internal prefill checkpoint
    alignment (`get_mamba_prefill_checkpoint_alignment`, which align mode makes the block a multiple of)."""
    tp = flags.tensor_parallel_size
    kernel_min, _ = model.kernel_block()
    page_per_token = model.attention_page_per_token(tp, flags.kv_cache_dtype)
    return ConfigInputs(
        block_size=flags.block_size or start_block(variant, kernel_min),
        mamba_block_size=flags.mamba_block_size or 0,
        mamba_page_size_padded=0,
        attn_page_per_token=page_per_token,
        mamba_page=model.state_page(tp, num_spec, flags.mamba_ssm_cache_dtype),
        kernel_min=kernel_min,
        backend_alignment=kernel_min,
        use_mla=model.use_mla,
        align_mode=align,
        checkpoint_alignment=model.prefill_checkpoint_alignment or 0,
        explicit_mamba_block_size=flags.mamba_block_size is not None,
    )


def typical_prompt_tokens(max_model_len: int | None) -> int:
    """The typical request's prompt: TYPICAL_PROMPT_TOKENS, within --max-model-len (one token left to generate)."""
    prompt = TYPICAL_PROMPT_TOKENS if max_model_len is None else min(TYPICAL_PROMPT_TOKENS, max_model_len - 1)
    return max(prompt, 1)


def geometry_toml(geometry: Geometry) -> str:
    """The geometry as a TOML file `simulate` loads (models/geometry.py)."""
    d = geometry.deployment
    lines = [
        f"# {geometry.description}. Written by `gridproof check --emit-geometry`; model: {geometry.source}",
        f'name = "{geometry.name}"',
        f'description = "{geometry.description}"',
        "",
        "[deployment]",
    ]
    defaults = {f.name: f.default for f in fields(Deployment)}
    for key, value in d.__dict__.items():
        if value == defaults[key] and key not in ("dcp_size", "block_size"):
            continue
        if value is None:
            if key != "prefix_cache_retention_interval":
                continue
            value = f'"{DENSE_RETENTION[0]}"'  # vLLM's None: TOML has no null
        lines.append(f"{key} = {str(value).lower() if isinstance(value, bool) else value}")
    for group in geometry.groups:
        lines += ["", "[[groups]]", f'kind = "{group.kind}"', f"block_size = {group.block_size}"]
        lines += [f"dcp_sharded = {str(group.dcp_sharded).lower()}", f"eagle = {str(group.eagle).lower()}"]
        if group.count != 1:
            lines.append(f"count = {group.count}")
    lines += ["", "[request]", f"prompt_tokens = {geometry.request.prompt_tokens}", ""]
    return "\n".join(lines)
