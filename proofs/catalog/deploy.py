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
from dataclasses import fields

from models.deploy import ServeFlags, resolve_deployment
from models.geometry import load_geometry
from models.hf_config import load_model
from models.plan import plan
from models.variants import Variant
from proofs.catalog.base import Theorem
from proofs.enumerated import Case, Checks, Enumeration, Verdict

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


THEOREMS = (
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
)
