"""Baseline block-size resolution (`models.config.resolve`) against the real
`Platform._align_hybrid_block_size`: block_size, mamba_block_size and
mamba_page_size_padded."""

import math
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance import config_inputs
from conformance.generation import generated
from conformance.tally import compare
from proofs.real_vllm.config import Backend, ConfigScenario

EXAMPLES = 200
PER_EXAMPLE = 50


@generated(EXAMPLES)
@given(first=config_inputs.config_scenarios(), rng=st.randoms(use_true_random=True))
def test_config_on_generated_scenarios(real_config, first, rng):
    cases = [first, *(config_inputs.random_scenario(rng) for _ in range(PER_EXAMPLE - 1))]
    compare("config", cases, config_inputs.model_resolve, real_config.resolve)


def test_config_on_boundary_values(real_config):
    compare("config boundary", config_inputs.boundary_scenarios(), config_inputs.model_resolve, real_config.resolve)


# Real hybrid model classes, resolved through vLLM's model registry from their
# transformers configurations (defaults only: nothing is downloaded).
REAL_MODELS = (
    ("NemotronHConfig", "NemotronHForCausalLM"),
    ("GraniteMoeHybridConfig", "GraniteMoeHybridForCausalLM"),
    ("FalconH1Config", "FalconH1ForCausalLM"),
    ("JambaConfig", "JambaForCausalLM"),
    ("Zamba2Config", "Zamba2ForCausalLM"),
)


def _real_model_case(real_config, config_class: str, architecture: str, variation: dict):
    """A scenario for the model, and the stub config for vLLM, of one real model class."""
    import torch
    import transformers

    hf_config = getattr(transformers, config_class)()
    tp = variation["tp"]
    heads = max(1, hf_config.num_key_value_heads // tp)
    head_size = getattr(hf_config, "head_dim", None) or hf_config.hidden_size // hf_config.num_attention_heads
    scenario = ConfigScenario(
        block_size=variation["block_size"],
        mamba_block_size=variation["mamba_block_size"],
        mamba_page_size_padded=None,
        align_mode=variation["align_mode"],
        use_mla=False,
        num_kv_heads=heads,
        head_size=head_size,
        dtype=variation["dtype"],
        mamba_shapes=(),
        mamba_dtypes=(),
        backends=(Backend((("multiple", 16),)),),
        layer_alignments=(None,),  # these models' Mamba layers export no prefill checkpoint
    )
    cache_config = SimpleNamespace(
        cache_dtype="auto",
        block_size=scenario.block_size,
        mamba_cache_mode="align" if scenario.align_mode else "none",
        mamba_block_size=scenario.mamba_block_size,
        mamba_page_size_padded=None,
        mamba_cache_dtype="auto",
        mamba_ssm_cache_dtype=variation["ssm_dtype"],
        use_replayssm=False,
    )
    model_config = SimpleNamespace(
        dtype=getattr(torch, scenario.dtype),
        use_mla=False,
        architecture=architecture,
        model_impl="auto",
        hf_config=hf_config,
        get_num_kv_heads=lambda parallel_config: heads,
        get_head_size=lambda: head_size,
    )
    vllm_config = real_config.vllm_config(scenario, model_config=model_config, cache_config=cache_config)
    vllm_config.parallel_config.tensor_parallel_size = tp
    return scenario, vllm_config


def _state_page(vllm_config, architecture: str) -> int:
    """The Mamba page by its definition, from the class the real registry resolves."""
    from vllm.model_executor.models import ModelRegistry

    model_cls, _ = ModelRegistry.resolve_model_cls(architecture, model_config=vllm_config.model_config)
    shapes = model_cls.get_mamba_state_shape_from_config(vllm_config)
    dtypes = model_cls.get_mamba_state_dtype_from_config(vllm_config)
    return sum(math.prod(shape) * dtype.itemsize for shape, dtype in zip(shapes, dtypes, strict=True))


VARIATIONS = [
    {"block_size": b, "mamba_block_size": m, "align_mode": a, "dtype": d, "ssm_dtype": s, "tp": tp}
    for b in (16, 64, 528, 2048)
    for m in (None, 768)
    for a in (True, False)
    for d in ("bfloat16", "float16")
    for s in ("auto", "float32")
    for tp in (1, 2, 4)
]


@pytest.mark.parametrize(("config_class", "architecture"), REAL_MODELS)
def test_config_on_real_model_classes(real_config, config_class, architecture):
    cases = []
    for variation in VARIATIONS:
        scenario, vllm_config = _real_model_case(real_config, config_class, architecture, variation)
        cases.append((architecture, variation, scenario, vllm_config))

    def model(case):
        architecture, _, scenario, vllm_config = case
        return config_inputs.model_resolve(scenario, _state_page(vllm_config, architecture))

    compare("config real models", cases, model, lambda case: real_config.resolve_config(case[3]))


def test_nemotron_h_figures_seen_by_hand(real_config):
    """As checked by hand on CPU: block 528 in align mode, 1,040 with a float32 SSM cache."""
    for ssm_dtype, block in (("auto", 528), ("float32", 1040)):
        variation = {
            "block_size": 16,
            "mamba_block_size": None,
            "align_mode": True,
            "dtype": "bfloat16",
            "ssm_dtype": ssm_dtype,
            "tp": 1,
        }
        _, vllm_config = _real_model_case(real_config, "NemotronHConfig", "NemotronHForCausalLM", variation)
        assert real_config.resolve_config(vllm_config)[:2] == (block, block)
