"""vLLM 0.33.0's own reading of the speculative, connector, prefix-caching and
budget flags: the real `SpeculativeConfig` methods and `VllmConfig`
properties, bound to stub objects that carry only the fields they read.

Run for real: `use_eagle_block_drop` (with `needs_eagle_block_drop`,
`use_eagle`), `use_multi_module_mtp`, `max_num_new_slots_for_drafting`,
`num_lookahead_tokens`, `num_prefill_lookahead_tokens`,
`num_hash_lookahead_tokens` and `_set_max_num_scheduled_tokens` (which
refuses too few batched tokens). Written here: the scheduler's default token
budget without a drafter (`Scheduler.__init__`, scheduler.py:139-143), one
conditional expression.
"""

from __future__ import annotations

import json
import logging
from types import SimpleNamespace

SPECULATIVE_CONFIG_MEMBERS = (
    "use_eagle",
    "needs_eagle_block_drop",
    "use_eagle_block_drop",
    "use_dflash",
    "use_dspark",
    "uses_draft_model",
    "use_multi_module_mtp",
    "max_num_new_slots_for_drafting",
    # 0.34.0: what a method's SpeculatorConfig answers, and its own validation (parallel drafting).
    "speculator_config",
    "uses_target_hidden_states",
    "num_mtp_modules",
    "_verify_args",
)
VLLM_CONFIG_MEMBERS = (
    "num_speculative_tokens",
    "num_lookahead_tokens",
    "num_prefill_lookahead_tokens",
    "num_hash_lookahead_tokens",
    "_resolve_num_hash_lookahead_tokens",
    "_set_max_num_scheduled_tokens",
)
# Members a release may lack: 0.33.0 has no SpeculatorConfig, 0.34.0 no use_eagle and no
# num_hash_lookahead_tokens property (a field it resolves).
OPTIONAL_MEMBERS = (
    "use_eagle",
    "use_dflash",
    "use_dspark",
    "uses_draft_model",
    "speculator_config",
    "uses_target_hidden_states",
    "num_mtp_modules",
    "_verify_args",
    "num_hash_lookahead_tokens",
    "_resolve_num_hash_lookahead_tokens",
)


class RealSpeculation:
    """Loads vLLM on construction: a missing or renamed vLLM fails loudly here."""

    def __init__(self) -> None:
        from vllm.config import KVTransferConfig
        from vllm.config.speculative import SpeculativeConfig
        from vllm.config.vllm import VllmConfig

        def members(cls, names):
            return {n: m for n in names if (m := _own(cls, n, optional=n in OPTIONAL_MEMBERS)) is not None}

        self._transfer = KVTransferConfig
        self._speculative = type("StubSpeculativeConfig", (), members(SpeculativeConfig, SPECULATIVE_CONFIG_MEMBERS))
        self._config = type("StubVllmConfig", (), members(VllmConfig, VLLM_CONFIG_MEMBERS))
        # 0.34.0 asks the connector class whether it keeps lookahead block hashes.
        self._resolves_lookahead = hasattr(self._config, "_resolve_num_hash_lookahead_tokens")
        # _set_max_num_scheduled_tokens warns of a small budget, once per value: a recording reads many.
        logging.getLogger("vllm.config.vllm").setLevel(logging.ERROR)

    def read(
        self,
        method: str,
        num_speculative_tokens: int,
        disable_eagle_block_drop: bool,
        disable_lookahead_block_hashes: bool,
        parallel_drafting: bool,
        mtp_layers: int,
        mtp_nextn: int,
        enable_prefix_caching: bool,
        kv_transfer_json: str,
        max_num_batched_tokens: int,
        max_num_scheduled_tokens: int,
    ) -> tuple[bool, bool, int, int, int, int]:
        """(refused, use_eagle_block_drop, num_hash_lookahead_tokens, draft slots, token budget,
        num_prefill_lookahead_tokens); `method` "" for no speculative decoding, `kv_transfer_json` "" for
        no KV connector (else the --kv-transfer-config JSON), a `max_num_scheduled_tokens` of 0 for the
        flag unset; an MTP draft config's n_predict `mtp_layers` and num_nextn_predict_layers `mtp_nextn`.
        Refused: vLLM raised ValueError, and the rest is 0."""
        speculative = None
        if method:
            speculative = self._speculative_config(
                method,
                parallel_drafting,
                (mtp_layers, mtp_nextn),
                num_speculative_tokens=num_speculative_tokens,
                disable_eagle_block_drop=disable_eagle_block_drop,
                disable_lookahead_block_hashes=disable_lookahead_block_hashes,
            )
            if _refused_as_given(speculative, parallel_drafting):
                return _REFUSED
        config = self._vllm_config(
            speculative, enable_prefix_caching, kv_transfer_json, max_num_batched_tokens, max_num_scheduled_tokens
        )
        try:
            if self._resolves_lookahead:
                config.num_hash_lookahead_tokens = config._resolve_num_hash_lookahead_tokens()
            config._set_max_num_scheduled_tokens()
            slots = 0 if speculative is None else speculative.max_num_new_slots_for_drafting
        except ValueError:
            return _REFUSED
        scheduler = config.scheduler_config
        budget = (
            scheduler.max_num_scheduled_tokens
            if scheduler.max_num_scheduled_tokens is not None
            else scheduler.max_num_batched_tokens
        )
        lookahead = config.num_prefill_lookahead_tokens
        if speculative is None:
            return False, False, config.num_hash_lookahead_tokens, 0, budget, lookahead
        return False, speculative.use_eagle_block_drop(), config.num_hash_lookahead_tokens, slots, budget, lookahead

    def _speculative_config(
        self, method: str, parallel_drafting: bool, mtp_counts: tuple[int, int], **given: int | bool
    ):
        """The stub `SpeculativeConfig` of a drafter, with every field its methods read: `given`, the
        token count and the two disabling flags, as they are."""
        speculative = self._speculative()
        speculative.__dict__.update(
            method=method,
            **given,
            # SpeculativeConfig.__post_init__ turns it on for dflash and dspark (0.33.0).
            parallel_drafting=parallel_drafting or method in ("dflash", "dspark"),
            # For MTP the draft is the target model; its config as vLLM's getattr reads it: the
            # n_predict hf_config_override gives it, and the num_nextn_predict_layers at its top.
            draft_model_config=SimpleNamespace(
                hf_config=SimpleNamespace(
                    n_predict=mtp_counts[0],
                    num_nextn_predict_layers=mtp_counts[1],
                    sample_from_anchor=True,
                    model_type="gridproof_stub",
                ),
                verify_with_parallel_config=lambda parallel_config: None,
            ),
            draft_parallel_config=None,
            # What 0.34.0's SpeculatorConfig and validation read besides, each at its default.
            custom_method=None,
            index_share_for_mtp_iteration=None,
            tensor_parallel_size=None,
            rejection_sample_method="standard",
            synthetic_acceptance_rates=None,
            synthetic_acceptance_length=None,
        )
        return speculative

    def _vllm_config(
        self,
        speculative,
        enable_prefix_caching: bool,
        kv_transfer_json: str,
        max_num_batched_tokens: int,
        max_num_scheduled_tokens: int,
    ):
        """The stub `VllmConfig` over `speculative` (None: no drafter), with every field its properties read;
        its KV transfer config is vLLM's own `KVTransferConfig` of the JSON, whose connector class 0.34.0 asks."""
        transfer = self._transfer(**json.loads(kv_transfer_json)) if kv_transfer_json else None
        config = self._config()
        config.__dict__.update(
            speculative_config=speculative,
            diffusion_config=None,
            cache_config=SimpleNamespace(enable_prefix_caching=enable_prefix_caching),
            kv_transfer_config=transfer,
            scheduler_config=SimpleNamespace(
                max_num_batched_tokens=max_num_batched_tokens,
                max_num_scheduled_tokens=max_num_scheduled_tokens or None,
                max_num_active_seqs=None,
                max_num_seqs=1,
            ),
        )
        return config


# What `RealSpeculation.read` answers for a configuration vLLM refuses.
_REFUSED = (True, False, 0, 0, 0, 0)


def _refused_as_given(speculative, parallel_drafting: bool) -> bool:
    """Whether 0.34.0's own validation of the drafter refuses it (never on 0.33.0, which has none)."""
    if not hasattr(speculative, "_verify_args"):
        return False
    # 0.34.0 refuses parallel drafting for any method but dflash and dspark here; it was
    # given as the user gave it (None: not given) and is checked before anything the stub
    # lacks is read.
    speculative.parallel_drafting = parallel_drafting or None
    try:
        speculative._verify_args()
    except ValueError:
        return True
    except AttributeError:
        pass  # a later check reads what the stub does not carry
    return False


def _own(cls, name: str, optional: bool = False):
    """The attribute as `cls` defines it (a function or a property), not inherited from elsewhere;
    None for an optional one the release does not have."""
    for klass in cls.__mro__:
        if name in vars(klass):
            return vars(klass)[name]
    if optional:
        return None
    raise AttributeError(f"vLLM's {cls.__name__} has no {name}: not a vLLM these stubs call")


class RealMtpLayers:
    """vLLM's `SpeculativeConfig.hf_config_override` on the config object vLLM makes of the model's
    config.json (`hf_config_of`), as vLLM builds an MTP draft's config from it. Loads vLLM on construction."""

    def __init__(self) -> None:
        from vllm.config.speculative import SpeculativeConfig

        self._override = SpeculativeConfig.hf_config_override

    def read(self, config: dict) -> tuple[int | None, int]:
        """For a config.json (its model_type included): (the n_predict the draft's config is given,
        None where none; the num_nextn_predict_layers use_multi_module_mtp reads on it, with its
        getattr default of 1)."""
        from proofs.real_vllm.state import hf_config_of

        hf_config = hf_config_of({"architectures": ["Model"], **config})
        draft = self._override(hf_config)
        return getattr(draft, "n_predict", None), getattr(draft, "num_nextn_predict_layers", 1)


class RealPromptBudget:
    """Where the real scheduler ends a long prompt's first prefill chunk under the budget flags: vLLM's
    own reading of the flags (`RealSpeculation`: the token budget and the drafter's slots), then its
    `Scheduler` (proofs/real_vllm/engine.py) given them apart, max_num_batched_tokens,
    max_num_scheduled_tokens and max_num_new_slots_for_drafting, on the recorded deployment
    (proofs.catalog.recorded.budget_geometry)."""

    def __init__(self) -> None:
        import vllm

        from proofs.catalog.recorded import VERSION

        if vllm.__version__ != VERSION:
            from proofs.real_vllm.other_release import adapt_harness

            adapt_harness()
        self._flags = RealSpeculation()

    def read(
        self,
        method: str,
        num_speculative_tokens: int,
        parallel_drafting: bool,
        max_num_batched_tokens: int,
        max_num_scheduled_tokens: int,
    ) -> tuple[bool, int]:
        """(refused, the first chunk's end: 0 where the prefill stalls)."""
        from dataclasses import replace

        from proofs.catalog.recorded import budget_geometry, budget_prompt
        from proofs.real_vllm.engine import EngineSetting, EngineStalled, RealEngine, prompt_tokens

        refused, _drop, _lookahead, slots, budget, _prefill_lookahead = self._flags.read(
            method,
            num_speculative_tokens,
            False,
            False,
            parallel_drafting,
            1,
            1,
            True,
            "",
            max_num_batched_tokens,
            max_num_scheduled_tokens,
        )
        if refused:
            return True, 0
        prompt = budget_prompt(max_num_batched_tokens, max_num_scheduled_tokens)
        geometry = budget_geometry(bool(method), budget, prompt)
        setting = replace(EngineSetting.of(geometry, budget), batched=max_num_batched_tokens, draft_slots=slots)
        try:
            prefill = RealEngine(setting).run(prompt_tokens(geometry.request.prompt_tokens))
        except EngineStalled as stalled:
            prefill = stalled.prefill
        return False, prefill.chunk_ends[0] if prefill.chunk_ends and prefill.chunk_ends[0] else 0
