"""The hand-written mutants the manifest names (`mutant:NAME`): plausible
faults, each a patch on one model function and the variant it breaks, and
the name resolution that covers both the engine variants and these."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, replace

from models.errors import did_you_mean
from models.variants import BASELINE, PR457_GUARDED, VARIANTS, VLLM_0_34, UnknownVariantError, Variant
from proofs.faults.patch import Patch, applied

PREFIX = "mutant:"


@dataclass(frozen=True)
class Mutant:
    name: str
    base: Variant
    patch: Patch
    description: str

    @property
    def variant(self) -> Variant:
        """The base variant under the mutant's name: the model reads the same choices."""
        return replace(self.base, name=PREFIX + self.name, description=self.description)


def _mutant(
    name: str, description: str, module: str, function: str, before: str, after: str, base: Variant = PR457_GUARDED
) -> Mutant:
    """`base`: the variant the fault is written into (the one whose choices make it show)."""
    return Mutant(name, base, Patch(f"models.{module}", function, before, after), description)


MUTANTS = {
    m.name: m
    for m in (
        _mutant(
            "zero-size-accepted",
            "a geometry file's sizes checked as non-negative: a block, DCP or offload size of 0 accepted",
            "geometry",
            "check_value",
            'rule == "positive" and value <= 0',
            'rule == "positive" and value < 0',
        ),
        _mutant(
            "sharded-recurrent-accepted",
            "a DCP-sharded recurrent group accepted: only an EAGLE recurrent group refused",
            "geometry",
            "_check_consistency",
            "(group.dcp_sharded or group.eagle)",
            "group.eagle",
        ),
        _mutant(
            "lcp-off-by-one",
            "the last cacheable position computed from N + 1 tokens",
            "scheduler",
            "last_cacheable_position",
            "    block = p.block\n",
            "    tokens = tokens + 1\n    block = p.block\n",
        ),
        _mutant(
            "stop-at-start",
            "a stop at the chunk start is taken: `start <= s` for `start < s`",
            "scheduler",
            "_strictly_inside",
            "start < stop",
            "start <= stop",
        ),
        _mutant(
            "physical-block-cadence",
            "the split reads the physical block where the cadence belongs",
            "plan",
            "split_grid",
            "if variant.splits_on_cadence:",
            "if False:",
        ),
        _mutant(
            "eagle-backoff-dropped",
            "with EAGLE and no annotated group, no one-block backoff",
            "scheduler",
            "last_cacheable_position",
            "backoff = checkpoint_position(tokens, block, True, p.lookahead)",
            "backoff = plain",
        ),
        _mutant(
            "conversion-rounds-up",
            "the EAGLE boundary converted to the cadence grid rounding up",
            "scheduler",
            "last_cacheable_position",
            "converted = arith.round_down(reusable, block)",
            "converted = arith.cdiv(reusable, block) * block",
        ),
        _mutant(
            "target-group-left-out",
            "the guard checks only the first target-attention group",
            "config",
            "guard_accepts",
            "for span in target_spans)",
            "for span in target_spans[:1])",
        ),
        _mutant(
            "two-target-groups-only",
            "the guard checks only the first two target-attention groups, as if written for two",
            "config",
            "guard_accepts",
            "for span in target_spans)",
            "for span in target_spans[:2])",
        ),
        _mutant(
            "guard-demands-longer-cadence",
            "a guard too strict: the cadence must also be longer than every target span",
            "config",
            "guard_accepts",
            "arith.divides(span, cadence) for span",
            "arith.all_of(arith.divides(span, cadence), cadence > span) for span",
        ),
        _mutant(
            "guard-either-way-divides",
            "a guard too weak: a cadence that divides a target span accepted as well as one it divides",
            "config",
            "guard_accepts",
            "arith.divides(span, cadence) for span",
            "arith.any_of(arith.divides(span, cadence), arith.divides(cadence, span)) for span",
        ),
        _mutant(
            "spans-without-dcp",
            "a DCP-sharded group's span taken as its block, DCP left out",
            "plan",
            "group_grid",
            "CacheGroup(group.kind, spec_block(group), group.dcp_sharded).span(dcp_size)",
            "spec_block(group)",
        ),
        _mutant(
            "explicit-cadence-overwritten",
            "align mode overwrites an explicit --mamba-block-size with the block size, as vLLM 0.33.0 does",
            "config",
            "resolve",
            "overwrite = arith.all_of(c.align_mode, arith.negate(c.explicit_mamba_block_size))",
            "overwrite = c.align_mode",
        ),
        _mutant(
            "kernel-min-for-max",
            "the kernel alignment the smaller of the kernel's smallest block and the current block",
            "config",
            "resolve",
            "kernel = arith.maximum(c.kernel_min, c.block_size)",
            "kernel = arith.minimum(c.kernel_min, c.block_size)",
        ),
        _mutant(
            "hash-unit-ignored",
            "the deployment's prefix-match unit ignored: the hash block always the gcd of the spans",
            "plan",
            "plan",
            "arith.ite(d.hash_block_size == 0, arith.gcd_of(spans), d.hash_block_size)",
            "arith.gcd_of(spans)",
        ),
        _mutant(
            "slot-off-by-one",
            "a resumed request reads its initial state from column h // R",
            "prefill",
            "initial_state_column",
            "arith.floordiv(computed - 1, cadence)",
            "arith.floordiv(computed, cadence)",
        ),
        _mutant(
            "prefill-loop-past-end",
            "run_prefill steps on while the computed tokens reach the prefill's end: `<=` for `<`",
            "prefill",
            "run_prefill",
            "while computed < prefill_end(prompt, tokens)",
            "while computed <= prefill_end(prompt, tokens)",
        ),
        _mutant(
            "prefill-loop-stops-at-the-prompt",
            "run_prefill stops stepping at the prompt, not the prefill's end: a resumed request's outputs are "
            "left unreplayed",
            "prefill",
            "run_prefill",
            "while computed < prefill_end(prompt, tokens)",
            "while computed < prompt",
        ),
        _mutant(
            "chunk-column-of-start",
            "run_prefill records each chunk's state column as that of its start, not of its end",
            "prefill",
            "PrefillSteps.chunk_at",
            "s.published, state_column(s.end, plan.cadence))",
            "s.published, state_column(computed, plan.cadence))",
        ),
        _mutant(
            "repeat-up-to-the-end",
            "a condensed prefill repeats its pattern up to the request's end, not within the prompt",
            "prefill",
            "PrefillSteps.repeat_from",
            "_repetitions(cycle, self.chunk_at, min(self.prompt, self.tokens), self.plan.cadence, least)",
            "_repetitions(cycle, self.chunk_at, self.tokens, self.plan.cadence, least)",
        ),
        _mutant(
            "repeat-column-not-shifted",
            "a repeated chunk keeps the state column of its first occurrence",
            "prefill",
            "_shifted",
            ", column=state_column(end, cadence)",
            "",
        ),
        _mutant(
            "bounded-run-one-step-more",
            "run_prefill with steps=k runs k + 1 steps: `<=` for `<`",
            "prefill",
            "run_prefill",
            "step < steps",
            "step <= steps",
        ),
        _mutant(
            "grid-period-without-offload",
            "the condensing grid leaves out the offload connector's chunk grids",
            "prefill",
            "grid_period",
            "plan.geometry.deployment.offload_blocks_per_chunk * p.sched_block",
            "p.sched_block",
        ),
        _mutant(
            "multiples-from-the-wrong-residue",
            "Positions' first multiple of a size in a range solved for +start instead of -start: the same for a "
            "range from 0 or of step 1, off for any other",
            "positions",
            "Positions.multiples_of",
            "first = (-r.start // common)",
            "first = (r.start // common)",
        ),
        _mutant(
            "eagle-head-sharded",
            "`check` resolves an EAGLE head's cache group DCP-sharded like the target groups, where vLLM runs the "
            "drafter at DCP 1",
            "deploy",
            "cache_groups",
            "dcp_sharded=draft == SHARDED_DRAFT and dcp > 1",
            "dcp_sharded=dcp > 1",
        ),
        _mutant(
            "eagle-draft-slots",
            "`check` reserves num_speculative_tokens draft slots of the batched tokens for a sequential EAGLE "
            "drafter, where vLLM 0.33.0 reserves none: a budget set by --max-num-batched-tokens shrinks",
            "deploy",
            "speculation",
            'slots = 1 if method == "draft_model" else 0',
            'slots = 1 if method == "draft_model" else tokens if method in ("eagle", "eagle3") else 0',
            base=BASELINE,
        ),
        _mutant(
            "mtp-lookahead-one",
            "`check` hashes one token ahead for every EAGLE-family drafter, where an MTP draft of several modules "
            "reads num_speculative_tokens ahead",
            "deploy",
            "speculation",
            "prefill_lookahead = (tokens if multi_module else 1) if",
            "prefill_lookahead = 1 if",
            base=BASELINE,
        ),
        _mutant(
            "lookahead-hashes-kept",
            "`check` keeps the hash lookahead when --speculative-config sets disable_lookahead_block_hashes, "
            "where vLLM falls back to dropping the trailing block",
            "deploy",
            "scheduler_flags",
            "hashes = spec is not None and spec.eagle_block_drop and spec.lookahead_hashes",
            "hashes = spec is not None and spec.eagle_block_drop",
            base=BASELINE,
        ),
        _mutant(
            "start-block-kernel-test-reversed",
            "`check` keeps the release's default block when the backend's smallest kernel block is a multiple of it, "
            "not when it divides it: a backend whose kernels take multiples of 8 starts from 8 under 0.33.0, not 16",
            "deploy",
            "start_block",
            "return default if default % kernel_min == 0 else kernel_min",
            "return default if kernel_min % default == 0 else kernel_min",
            base=BASELINE,
        ),
        _mutant(
            "draft-slots-off-the-token-budget",
            "`check` takes the drafter's slots off the smaller of the token budget and the batched tokens, where "
            "the scheduler takes them off the batched tokens alone: a budget below the batched tokens loses the "
            "slots too",
            "deploy",
            "scheduler_flags",
            "prompt_budget=min(token_budget, max_num_batched_tokens - slots),",
            "prompt_budget=min(token_budget, max_num_batched_tokens) - slots,",
            base=BASELINE,
        ),
        _mutant(
            "split-aligns-to-the-step-budget",
            "`check`'s split decides whether to align a chunk down by the step's budget (the batched tokens less "
            "the draft slots), where vLLM's reads the token budget: under 16 batched tokens and a larger "
            "--max-num-scheduled-tokens the model schedules chunks the real scheduler stalls on",
            "deploy",
            "SchedulerFlags.scheduler_token_budget",
            "return self.max_num_scheduled_tokens if self.max_num_scheduled_tokens > self.prompt_budget else None",
            "return None",
            base=BASELINE,
        ),
        _mutant(
            "context-length-from-one-key",
            "`check` reads a model's context length from max_position_embeddings alone: a config.json that also "
            "states a shorter seq_length or n_positions runs longer prompts than vLLM accepts",
            "hf_config",
            "context_length",
            "stated = {key: _optional_count(text, key, 1) for key in CONTEXT_KEYS}",
            "stated = {key: _optional_count(text, key, 1) for key in CONTEXT_KEYS[:1]}",
            base=BASELINE,
        ),
        _mutant(
            "rope-factor-of-every-type",
            "`check` scales the context length by every RoPE factor, YaRN's included, which the stated length "
            "already holds: a YaRN x4 model is taken to run four times the prompts vLLM accepts",
            "hf_config",
            "_rope_factor",
            'if "gemma3" in str(config.get("model_type")) or _rope_type(parameters) in PRESCALED_ROPE:',
            'if "gemma3" in str(config.get("model_type")):',
            base=BASELINE,
        ),
        _mutant(
            "max-model-len-over-config-accepted",
            "`check` takes any --max-model-len, where vLLM refuses one longer than the model's config allows",
            "hf_config",
            "ContextLength.max_model_len",
            "if flag > self.derived and (self.model_max_length is None or flag > self.model_max_length):",
            "if flag > self.derived and self.model_max_length is not None and flag > self.model_max_length:",
            base=BASELINE,
        ),
        _mutant(
            "kv-cache-dtype-not-passed",
            "`check` sizes the attention page in the model's dtype whatever --kv-cache-dtype says: an fp8 KV cache "
            "resolves the block of a bf16 one",
            "deploy",
            "_config_inputs",
            "model.attention_page_per_token(tp, flags.kv_cache_dtype)",
            "model.attention_page_per_token(tp)",
            base=BASELINE,
        ),
        _mutant(
            "head-dim-derived-where-stated",
            "`check` derives the head size as hidden_size / num_attention_heads wherever the config gives both, "
            "where vLLM's architecture convertor reads a stated head_dim first",
            "hf_config",
            "_attention",
            'if config.get("head_dim") is not None:',
            'if config.get("head_dim") is not None and "hidden_size" not in config:',
            base=BASELINE,
        ),
        _mutant(
            "kv-heads-not-replicated",
            "`check` splits the KV heads over TP without replicating them: at a TP size above the KV heads a "
            "rank holds no attention page, where vLLM's get_num_kv_heads keeps one head on each rank",
            "hf_config",
            "HybridModel.kv_heads_per_rank",
            "max(1, self.kv_heads // tp)",
            "self.kv_heads // tp",
            base=BASELINE,
        ),
        _mutant(
            "offload-spans-without-dcp",
            "`check` reads an OffloadingConnector's block_size over each group's block without the DCP size: "
            "under DCP a sharded target group's chunk is counted in rank blocks, and a chunk vLLM refuses is taken",
            "deploy",
            "resolve_deployment",
            "block_spans(groups, dcp)",
            "block_spans(groups, 1)",
            base=BASELINE,
        ),
        _mutant(
            "long-prefill-threshold-dropped",
            "`check` reads --long-prefill-token-threshold and leaves it out of the deployment it resolves: the "
            "engine model splits the prefill as if no threshold were set",
            "deploy",
            "resolve_deployment",
            "long_prefill_token_threshold=flags.long_prefill_token_threshold,",
            "long_prefill_token_threshold=0,",
            base=BASELINE,
        ),
        _mutant(
            "dense-retention-not-emitted",
            "`check --emit-geometry` leaves out a dense retention (vLLM's None), so the file it writes loads as "
            "retention 0, vLLM's default",
            "deploy",
            "geometry_toml",
            'if key != "prefix_cache_retention_interval":',
            "if True:",
            base=BASELINE,
        ),
        _mutant(
            "typical-request-a-token-long",
            "`check`'s typical request is one token longer than the 100,000 it documents",
            "deploy",
            "typical_prompt_tokens",
            "min(TYPICAL_PROMPT_TOKENS, max_model_len - 1)",
            "min(TYPICAL_PROMPT_TOKENS + 1, max_model_len - 1)",
            base=BASELINE,
        ),
        _mutant(
            "offload-chunk-not-through-int",
            "`check` takes an OffloadingConnector's blocks_per_chunk or block_size as the JSON gives it, where "
            'vLLM 0.33.0 reads it through int(): "4" and 4.5 are 4 blocks there',
            "deploy",
            "_vllm_int",
            "return int(value)",
            "return value",
            base=BASELINE,
        ),
        _mutant(
            "token-suffix-case-ignored",
            "`check` reads a token-count flag's suffix in either case as decimal, where vLLM 0.33.0's parser "
            "reads an upper-case one as binary: --max-num-batched-tokens 8K is 8,192 tokens there, not 8,000",
            "deploy",
            "token_flag",
            "if suffix.islower():",
            "if suffix.isalpha():",
            base=BASELINE,
        ),
        _mutant(
            "kda-conv-state-without-draft-tokens",
            "`check` sizes a KDA layer's conv state for the kernel alone, where vLLM 0.33.0 keeps a column per "
            "speculative token too: with a drafter the state page, and so the block, comes out smaller",
            "hf_config",
            "_kda",
            "kernel - 1 + num_spec)",
            "kernel - 1)",
            base=BASELINE,
        ),
        _mutant(
            "kda-ssm-float16-accepted",
            "`check` takes --mamba-ssm-cache-dtype float16 for a KDA model, whose recurrent state vLLM keeps only "
            "in float32 or bfloat16 (kda_state_dtype refuses the rest): it answers for a server that will not start",
            "hf_config",
            "_state_dtypes",
            'if ssm_cache_dtype not in ("auto", "float32", "bfloat16"):',
            "if ssm_cache_dtype not in SSM_CACHE_DTYPES:",
            base=BASELINE,
        ),
        _mutant(
            "mtp-modules-counted-by-n-predict",
            "`check` counts an MTP draft's modules by its n_predict under vLLM 0.33.0 too, where use_multi_module_mtp "
            "reads num_nextn_predict_layers: a draft whose two counts differ gets the wrong prefill lookahead",
            "deploy",
            "mtp_modules",
            "return (mtp.n_predict or 1) if variant.mtp_modules_from_n_predict else mtp.multi_module_read",
            "return mtp.n_predict or 1",
            base=BASELINE,
        ),
        _mutant(
            "prefill-lookahead-never-stated",
            "`check` never states a drafter's prefill lookahead apart from the hash lookahead: beside a KV connector "
            "that drops the hashes, the scheduler is taken to read no token ahead where vLLM reads one or K",
            "deploy",
            "scheduler_flags",
            "=spec.prefill_lookahead if spec and spec.prefill_lookahead != lookahead else None,",
            "=None,",
            base=BASELINE,
        ),
        _mutant(
            "any-connector-keeps-lookahead-hashes",
            "`check` keeps the hash lookahead beside any KV connector in a release that asks the connector, where "
            "only a class declaring supports_lookahead_block_hashes keeps it (LMCache's does not)",
            "deploy",
            "scheduler_flags",
            "hashes = hashes and connector_keeps_lookahead_hashes(variant, transfer)",
            "hashes = hashes and bool(variant.lookahead_hash_connectors)",
            base=VLLM_0_34,
        ),
        _mutant(
            "empty-multi-connector-keeps-lookahead-hashes",
            "`check` takes a MultiConnector holding no connector to keep the lookahead block hashes, where vLLM "
            "0.34.0's MultiConnector.supports_lookahead_block_hashes answers False for it",
            "deploy",
            "connector_keeps_lookahead_hashes",
            "return bool(held) and all(connector_keeps_lookahead_hashes(variant, c) for c in held)",
            "return all(connector_keeps_lookahead_hashes(variant, c) for c in held)",
            base=VLLM_0_34,
        ),
        _mutant(
            "gdn-temporal-state-key-by-key",
            "`check` sizes a Gated DeltaNet layer's temporal state by the key head size twice: a model whose value "
            "heads are larger than its key heads is given too small a recurrent page",
            "hf_config",
            "_gdn",
            'return conv, (heads, f["linear_value_head_dim"], f["linear_key_head_dim"])',
            'return conv, (heads, f["linear_key_head_dim"], f["linear_key_head_dim"])',
            base=BASELINE,
        ),
        _mutant(
            "mtp-count-read-from-the-text-config",
            "`check` reads the MTP layer count after it has turned to a wrapper's text config: Kimi-K3's and "
            "Qwen3.5's drafts, whose count vLLM's hf_config_override finds from the wrapper, get none",
            "hf_config",
            "parse_model",
            "        mtp = mtp_layers(config)\n",
            '        mtp = mtp_layers(config.get("text_config") if "model_type" in (config.get("text_config") or {}) '
            "else config)\n",
            base=BASELINE,
        ),
        _mutant(
            "context-rope-of-the-wrapper",
            "`check` scales a wrapped model's context length by the RoPE parameters stated beside its text "
            "config, where vLLM reads only the text config's (ModelConfig passes hf_text_config)",
            "hf_config",
            "parse_model",
            '{k: v for k, v in config.items() if k == "_source"}',
            '{k: v for k, v in config.items() if k in ("_source", "rope_scaling", "rope_parameters")}',
            base=BASELINE,
        ),
        _mutant(
            "kimi-mtp-count-at-top",
            "`check` reads Kimi-K3's MTP layer count at the top of config.json, where vLLM 0.33.0's "
            "hf_config_override reads its text_config",
            "hf_config",
            "mtp_layers",
            "n_predict = text.get(NEXTN, 0)",
            "n_predict = config.get(NEXTN, 0)",
            base=BASELINE,
        ),
        _mutant(
            "qwen3-5-mtp-count-as-nextn",
            "`check` reads Qwen3.5's MTP layer count as num_nextn_predict_layers, where vLLM 0.33.0 reads "
            "mtp_num_hidden_layers",
            "hf_config",
            "mtp_layers",
            "n_predict = config.get(MTP_HIDDEN)",
            "n_predict = config.get(NEXTN)",
            base=BASELINE,
        ),
        _mutant(
            "request-prompt-left",
            "the step asks the split for the prompt's tokens left, not the request's: min(budget, P - c)",
            "prefill",
            "prefill_step",
            "requested = arith.minimum(budget, tokens - computed)",
            "requested = arith.minimum(budget, prompt - computed)",
        ),
        _mutant(
            "checkpoint-less-alignment-two",
            "a deployment without a checkpoint alignment (0) aligned to 2 instead of 1: an odd kernel doubled",
            "config",
            "resolve",
            "arith.ite(c.checkpoint_alignment == 0, 1, c.checkpoint_alignment)",
            "arith.ite(c.checkpoint_alignment == 0, 2, c.checkpoint_alignment)",
        ),
        _mutant(
            "cadence-overwritten-outside-align",
            "the recurrent block size overwritten with the block size outside align mode too",
            "config",
            "resolve",
            "overwrite = arith.all_of(c.align_mode, arith.negate(c.explicit_mamba_block_size))",
            "overwrite = arith.negate(c.explicit_mamba_block_size)",
        ),
        _mutant(
            "recurrent-block-unresolved",
            "the recurrent group's spec block its configured block size, not the resolved cadence",
            "plan",
            "group_grid",
            "return r if group.kind == RECURRENT else group.block_size",
            "return group.block_size",
        ),
        _mutant(
            "cadence-from-attention-groups",
            "the recurrent cadence taken as the lcm of the attention groups' blocks, the recurrent groups left out",
            "plan",
            "recurrent_cadence",
            "recurrent = of_kind(groups, RECURRENT)",
            "recurrent = arith.select(groups, lambda g: g.kind != RECURRENT)",
        ),
        _mutant(
            "recurrent-cadence-max",
            "the recurrent cadence the largest recurrent block, not their lcm: the same for one recurrent group",
            "plan",
            "recurrent_cadence",
            "return arith.lcm_of(",
            "return arith.maximum_of(",
        ),
        _mutant(
            "draft-spans-among-targets",
            "the target spans read off every attention group, the draft groups' included",
            "plan",
            "group_grid",
            "target_spans=arith.each(of_kind(groups, TARGET), span),",
            "target_spans=arith.each(arith.select(groups, lambda g: g.kind != RECURRENT), span),",
        ),
        _mutant(
            "every-block-the-cadence",
            "every group's spec block taken as the recurrent cadence, the attention groups' included",
            "plan",
            "group_grid",
            "return r if group.kind == RECURRENT else group.block_size",
            "return r",
        ),
        _mutant(
            "plan-cadence-scheduler-block",
            "the plan reports the scheduler block (the lcm of every span) as the recurrent cadence",
            "plan",
            "plan",
            "cadence=r,",
            "cadence=sched_block,",
        ),
        _mutant(
            "plan-first-target-span-only",
            "the plan reports the first target group's span alone, as if one target group were every one",
            "plan",
            "plan",
            "target_spans=resolved.target_spans,",
            "target_spans=resolved.target_spans[:1],",
        ),
        _mutant(
            "plan-accepts-everything",
            "the plan marks every configuration accepted, so `simulate` runs what the guard rejects",
            "plan",
            "plan",
            "accepted=guard_accepts(variant, r, resolved.target_spans),",
            "accepted=True,",
        ),
        _mutant(
            "scheduler-block-of-attention-spans",
            "the scheduler block the lcm of the attention groups' spans, the recurrent cadence left out",
            "plan",
            "plan",
            "sched_block = arith.lcm_of(spans)",
            "sched_block = arith.lcm_of(resolved.target_spans + resolved.draft_spans)",
        ),
        _mutant(
            "partial-hits-strict-under-dcp",
            "partial hash hits need R > H under DCP too, where vLLM takes R >= H",
            "plan",
            "plan",
            "enabled = arith.ite(d.dcp_size == 1, r > hash_block, r >= hash_block)",
            "enabled = r > hash_block",
        ),
        _mutant(
            "eagle-drop-despite-lookahead",
            "EAGLE block drop on whenever asked, though a hash lookahead turns it off",
            "plan",
            "plan",
            "eagle_drop=arith.all_of(d.eagle_block_drop, lookahead == 0),",
            "eagle_drop=d.eagle_block_drop,",
        ),
        _mutant(
            "shared-prefix-without-eagle",
            "a shared-prefix checkpoint with partial hits even without an EAGLE group",
            "plan",
            "plan",
            "shared_prefix=arith.all_of(d.shared_prefix_checkpoint, partial, bool(eagle_spans)),",
            "shared_prefix=arith.all_of(d.shared_prefix_checkpoint, partial),",
        ),
        _mutant(
            "eagle-spans-without-dcp",
            "an EAGLE group's span read as its block, DCP left out, where the group is DCP-sharded",
            "geometry",
            "Geometry.eagle_spans",
            "g.span(dcp)",
            "g.block_size",
        ),
        _mutant(
            "every-draft-group-annotated",
            "every draft-attention group taken as an annotated EAGLE group, an MTP draft's included",
            "plan",
            "plan",
            "eagle_annotated=bool(eagle_spans),",
            "eagle_annotated=bool(resolved.draft_spans),",
        ),
        _mutant(
            "hash-block-one-when-unset",
            "an unset hash block taken as one token, not the gcd of the spans",
            "plan",
            "plan",
            "arith.gcd_of(spans), d.hash_block_size",
            "1, d.hash_block_size",
        ),
        _mutant(
            "checkpoint-alignment-of-hash-block",
            "internal checkpoints aligned to the hash block instead of the layers' checkpoint alignment",
            "plan",
            "plan",
            "checkpoint_alignment=alignment,",
            "checkpoint_alignment=hash_block,",
        ),
        _mutant(
            "mamba-block-not-overwritten",
            "align mode keeps the configured recurrent block size instead of overwriting it with the block size",
            "config",
            "resolve",
            "mamba_block_size = arith.ite(overwrite, block_size, c.mamba_block_size)",
            "mamba_block_size = c.mamba_block_size",
        ),
        # Sentinels of the engine theorems' goal conjuncts (the manifest's refuted_alone).
        _mutant(
            "empty-step-publishes",
            "a step that schedules no token still publishes its start when that lies on the cadence",
            "prefill",
            "prefill_step",
            "published = arith.all_of(in_prefill, scheduled > 0, publishes(end, cadence, tokens))",
            "published = arith.all_of(in_prefill, publishes(end, cadence, tokens))",
        ),
        _mutant(
            "published-off-the-cadence",
            "a step publishes where its chunk ends on the split's grid, not on the cadence: 0.33.0's split grid "
            "is the smallest spec block, which a target block below the recurrent one makes finer than R",
            "prefill",
            "prefill_step",
            "publishes(end, cadence, tokens)",
            "publishes(end, params.block, tokens)",
            base=BASELINE,
        ),
        _mutant(
            "publishes-by-chunk-length",
            "a step publishes when its chunk's length, not its end, is a multiple of the cadence: the same for a "
            "fresh request's first step, off the grid for a chunk that starts mid-cadence",
            "prefill",
            "prefill_step",
            "publishes(end, cadence, tokens)",
            "publishes(end - computed, cadence, tokens)",
        ),
        _mutant(
            "aligned-without-the-budget",
            "a chunk aligned down only when that leaves it a token, even where the grid fits in the budget",
            "scheduler",
            "chunk_end",
            "arith.any_of(aligned_end > start, block <= max_prefill_tokens(p))",
            "aligned_end > start",
        ),
        _mutant(
            "initial-column-of-whole-cadences",
            "the initial state's column counted in whole cadences, c // R - 1: the same at 0 and at every "
            "checkpoint, one below where a private state left mid-cadence was written",
            "prefill",
            "initial_state_column",
            "return arith.floordiv(computed - 1, cadence)",
            "return arith.floordiv(computed, cadence) - 1",
        ),
        _mutant(
            "slot-floor-for-ceil",
            "the state after `end` tokens written to column end // R - 1, not cdiv(end, R) - 1",
            "prefill",
            "state_column",
            "return arith.cdiv(end, cadence) - 1",
            "return arith.floordiv(end, cadence) - 1",
        ),
        _mutant(
            "slot-one-column-up",
            "the state after `end` tokens written to column cdiv(end, R), the - 1 left out",
            "prefill",
            "state_column",
            "return arith.cdiv(end, cadence) - 1",
            "return arith.cdiv(end, cadence)",
        ),
        _mutant(
            "fresh-reads-slot-zero",
            "the initial state's column clamped at 0, so a fresh request reads column 0",
            "prefill",
            "initial_state_column",
            "return arith.floordiv(computed - 1, cadence)",
            "return arith.maximum(arith.floordiv(computed - 1, cadence), 0)",
        ),
        _mutant(
            "chunk-end-aligned-up",
            "the split aligns a chunk's end up to the block grid instead of down",
            "scheduler",
            "chunk_end",
            "aligned_end = arith.round_down(end, block)",
            "aligned_end = arith.cdiv(end, block) * block",
        ),
        _mutant(
            "chunk-end-one-past",
            "the chunk's end counted one token past the tokens requested: start + requested + 1",
            "scheduler",
            "chunk_end",
            "end = start + call.requested\n",
            "end = start + call.requested + 1\n",
        ),
        _mutant(
            "split-unclamped",
            "the split's result not clamped at 0: a chunk end aligned down below its start schedules a negative count",
            "scheduler",
            "split",
            "result = arith.maximum(chunk_end(variant, p, call).end - call.start, 0)",
            "result = chunk_end(variant, p, call).end - call.start",
        ),
        _mutant(
            "mla-floor-off-by-one",
            "the MLA kernel floor taken one block short: max(K, 127)",
            "config",
            "resolve",
            "arith.maximum(kernel, MLA_KERNEL_FLOOR)",
            "arith.maximum(kernel, MLA_KERNEL_FLOOR - 1)",
        ),
        _mutant(
            "block-size-not-raised",
            "the block size left as configured where it is below the aligned size the recurrent page needs",
            "config",
            "resolve",
            "block_size = arith.ite(c.block_size < aligned, aligned, c.block_size)",
            "block_size = c.block_size",
        ),
        _mutant(
            "last-chunk-unpublished",
            "a chunk that ends at the request's last token does not publish its state",
            "prefill",
            "publishes",
            "end <= tokens",
            "end < tokens",
        ),
        _mutant(
            "request-max-for-min",
            "the step asks the split for max(budget, N - c) tokens, not the min",
            "prefill",
            "prefill_step",
            "requested = arith.minimum(budget, tokens - computed)",
            "requested = arith.maximum(budget, tokens - computed)",
        ),
        _mutant(
            "request-left-inclusive",
            "the step counts the tokens left inclusively: min(budget, N - c + 1)",
            "prefill",
            "prefill_step",
            "requested = arith.minimum(budget, tokens - computed)",
            "requested = arith.minimum(budget, tokens - computed + 1)",
        ),
        _mutant(
            "prefill-end-ignores-prompt",
            "the prefill ends at N - 1 even for a fresh request, so its last prompt token is not prefilled",
            "scheduler",
            "prefill_end",
            "return arith.maximum(prompt, tokens - 1)",
            "return tokens - 1",
        ),
        _mutant(
            "prefill-end-at-prompt",
            "the prefill ends at the prompt: a resumed request replays its outputs as decode",
            "scheduler",
            "prefill_end",
            "return arith.maximum(prompt, tokens - 1)",
            "return prompt",
        ),
        _mutant(
            "prefill-end-past-last",
            "the prefill ends at N: a resumed request's last token is prefilled too",
            "scheduler",
            "prefill_end",
            "return arith.maximum(prompt, tokens - 1)",
            "return arith.maximum(prompt, tokens)",
        ),
        # The restore: the prefix cache's lookup and keying (models/prefix_cache.py) and the offload
        # connector's lookup (models/offload.py).
        _mutant(
            "gpu-hit-last-token-restored",
            "the GPU prefix cache's lookup starts from the later request's every token, not all but the last",
            "prefix_cache",
            "gpu_hit",
            "hit = new_tokens - 1",
            "hit = new_tokens",
        ),
        _mutant(
            "gpu-hit-lookahead-not-shared",
            "a key matches the later request's shared prefix without the hash lookahead its hash covers",
            "prefix_cache",
            "gpu_hit",
            "matching = min(shared - cache.lookahead, hashed * h)",
            "matching = min(shared, hashed * h)",
        ),
        _mutant(
            "eagle-hit-not-dropped",
            "an EAGLE group's lookup keeps the drop unit it matched beyond the candidate length",
            "prefix_cache",
            "_attention_find",
            "hit -= min(a, span)",
            "hit -= 0",
        ),
        _mutant(
            "recurrent-find-past-the-limit",
            "the recurrent groups' lookup takes the longest state keyed within the request's match, not within "
            "the candidate length the attention groups left",
            "prefix_cache",
            "_recurrent_find",
            "found = keys.positions.at_most(min(limit, hashed * h, matching))",
            "found = keys.positions.at_most(min(hashed * h, matching))",
        ),
        _mutant(
            "recurrent-find-below-the-largest",
            "the recurrent groups' lookup takes the longest state keyed strictly below the candidate length",
            "prefix_cache",
            "_recurrent_find",
            "found = keys.positions.at_most(min(limit, hashed * h, matching))",
            "found = keys.positions.at_most(min(limit, hashed * h, matching) - 1)",
        ),
        _mutant(
            "eagle-cacheable-past-computed",
            "an EAGLE bucket hashes one block beyond the aligned end whatever was computed: the min with the "
            "finalized tokens left out",
            "prefix_cache",
            "Hashing.cacheable",
            "eagle = arith.minimum(finalized, aligned_tokens(finalized, self.fine, self.scheduler_block) + self.span)",
            "eagle = aligned_tokens(finalized, self.fine, self.scheduler_block) + self.span",
        ),
        _mutant(
            "hashing-horizon-rounds-up",
            "the hashing horizon counts a block hashed once any of it is computed: cdiv for the floor",
            "prefix_cache",
            "Hashing.horizon",
            "return arith.floordiv(arith.minimum(",
            "return arith.cdiv(arith.minimum(",
        ),
        _mutant(
            "offload-eagle-chunk-kept",
            "the offload connector's EAGLE group keeps the chunk it matched beyond the candidate length",
            "offload",
            "offload_hit",
            "                chunks -= 1\n",
            "                chunks -= 0\n",
        ),
        _mutant(
            "offload-last-token-loaded",
            "the offload connector's lookup starts from the later request's every token, not all but the last",
            "offload",
            "hit_window",
            "        window -= 1\n",
            "        window -= 0\n",
        ),
        _mutant(
            "cache-positions-one-repetition-short",
            "the positions a condensed prefill's repeated chunks key (Trace.chunk_positions) stop one repetition "
            "short of the ranges they stand for",
            "prefill",
            "Trace.chunk_positions",
            "found.append(range(first, first + r.tokens * r.times, r.tokens))",
            "found.append(range(first, first + r.tokens * (r.times - 1), r.tokens))",
        ),
    )
}


# Faults of what `check` prints a deployer (proofs/deployment/restore_law.py), the path its answer takes after
# the model: check-law-is-the-engines must refute each.
CHECK_LAW_MUTANTS = {
    m.name: m
    for m in (
        Mutant(
            "law-smallest-hit-one-late",
            BASELINE,
            Patch("proofs.deployment.restore_law", "smallest_hit", "return low\n", "return low + 1\n"),
            "`check` names as the smallest prefix that hits the length one after it: a deployer is told the "
            "length the cache first restores at is a token longer than it is",
        ),
        Mutant(
            "law-eagle-form-a-block-short",
            BASELINE,
            Patch(
                "proofs.deployment.restore_law",
                "_boundary",
                "lambda n: max(0, n // unit * unit - unit)",
                "lambda n: max(0, (n - 1) // unit * unit - unit)",
            ),
            "`check`'s EAGLE form of the law drops the trailing block from the last boundary before the last "
            "token, not from the last boundary within the prompt: a block short where L is on the grid",
        ),
        Mutant(
            "law-printed-plain-form-a-token-late",
            BASELINE,
            Patch(
                "proofs.deployment.restore_law",
                "_boundary",
                'f"⌊(L − 1)/{unit:,}⌋·{unit:,}"',
                'f"⌊L/{unit:,}⌋·{unit:,}"',
            ),
            "`check` prints the plain law as the last boundary within the prompt while it computes the last "
            "one before its last token: the printed formula is a block long wherever L is on the grid",
        ),
        Mutant(
            "law-thinned-when-it-fits",
            BASELINE,
            Patch(
                "proofs.deployment.restore_law",
                "affordable_lengths",
                "((4, RANDOM_LENGTHS), (2, 16), (1, 4))",
                "((1, 4), (2, 16), (4, RANDOM_LENGTHS))",
            ),
            "`check` checks its law on the fewest lengths first, where every length it names fits the step "
            "allowance: a law stated for lengths up to four of the largest grid is checked to one",
        ),
        Mutant(
            "law-smallest-hit-lost",
            BASELINE,
            Patch(
                "proofs.deployment.restore_law",
                "smallest_hit",
                "low, high = 1, max(lengths)",
                "low, high = 1, min(lengths)",
            ),
            "`check`'s search for the smallest prefix that hits looks no further than the shortest length "
            "checked: it says no prefix is ever restored where the cache restores many",
        ),
        Mutant(
            "law-stated-where-lengths-fail",
            BASELINE,
            Patch(
                "proofs.deployment.restore_law",
                "RestoreLaw.verdict",
                "self.formula is not None and not self.failures",
                "self.formula is not None",
            ),
            "`check` states a law for a deployment whose prefill stalls on some lengths: the formula that fits "
            "the lengths that ran is printed as CHECKED, where nothing of the stalled prompts is restored",
        ),
        Mutant(
            "law-random-lengths-past-the-limit",
            BASELINE,
            Patch(
                "proofs.deployment.restore_law",
                "lengths_checked",
                "rng.randint(1, limit or RANDOM_UP_TO)",
                "rng.randint(1, RANDOM_UP_TO)",
            ),
            "`check` draws its law's lengths at random up to 10^9 whatever --max-model-len is, then drops those past "
            "it: under a limit the law is checked on almost no length between its grid and the limit",
        ),
        Mutant(
            "law-grid-stops-short-of-its-top",
            BASELINE,
            Patch(
                "proofs.deployment.restore_law",
                "lengths_checked",
                "range(size, top + 1, size)",
                "range(size, top, size)",
            ),
            "`check` checks its law on each grid's multiples short of four of the largest, not up to it as its "
            "documentation says: the last boundary, where a formula a span off shows, is not compared",
        ),
        Mutant(
            "law-lookahead-a-token-short",
            BASELINE,
            Patch(
                "proofs.deployment.restore_law",
                "candidates",
                "_boundary_ahead(unit, ahead)",
                "_boundary_ahead(unit, ahead - 1)",
            ),
            "`check` fits a deployment that hashes K tokens ahead with forms a token short of its lookahead: an MTP "
            "draft of two modules gets no law, where the engine model restores to the last boundary two tokens back",
        ),
        Mutant(
            "law-failure-of-the-last-length",
            BASELINE,
            Patch(
                "proofs.deployment.restore_law",
                "restore_law",
                "failure=failure(p, failures[0])",
                "failure=failure(p, failures[-1])",
            ),
            "`check` says why a deployment has no law at the last length that fails, not the first: a deployer "
            "whose 13-token prompts already stall is told of a 261,335-token one",
        ),
        Mutant(
            "law-unchecked-below-the-grid",
            BASELINE,
            Patch(
                "proofs.deployment.restore_law",
                "lengths_checked",
                "(multiple - 1, multiple, multiple + 1)",
                "(multiple, multiple + 1)",
            ),
            "`check` checks its law on each grid boundary and the length after it, not the one before it, which "
            "its documentation names: the lengths where a one-token-late formula shows are never compared",
        ),
    )
}
MUTANTS.update(CHECK_LAW_MUTANTS)


def known_names() -> list[str]:
    return [*VARIANTS, *(PREFIX + m for m in MUTANTS)]


def mutant_of(name: str) -> Mutant | None:
    """The mutant `name` (`mutant:NAME`) stands for; None for an engine variant."""
    if name in VARIANTS:
        return None
    if name.startswith(PREFIX) and name[len(PREFIX) :] in MUTANTS:
        return MUTANTS[name[len(PREFIX) :]]
    raise UnknownVariantError(
        f"unknown variant {name!r}{did_you_mean(name, known_names())} (known: {', '.join(VARIANTS)}, or "
        f"{PREFIX}NAME for one of the {len(MUTANTS)} hand mutants in proofs/faults/handwritten.py)"
    )


def resolve(name: str) -> Variant:
    """The variant a name stands for; for a mutant, read its model inside `in_effect`."""
    mutant = mutant_of(name)
    return VARIANTS[name] if mutant is None else mutant.variant


@contextlib.contextmanager
def in_effect(name: str) -> Iterator[Variant]:
    """The variant `name`, with its mutant's patch applied to the model for the block."""
    mutant = mutant_of(name)
    with applied(None if mutant is None else mutant.patch):
        yield resolve(name)
