"""vLLM 0.33.0's own recurrent state tensors for a model `gridproof check`
reads: `MambaStateShapeCalculator` and `MambaStateDtypeCalculator`, called
for the model's kind with the fields its config.json gives (as vLLM's model
classes call them)."""

from __future__ import annotations

import math
import warnings


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
