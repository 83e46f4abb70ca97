"""Counterexamples as a pytest file for a vLLM checkout, in the shape of
vLLM's own tests/v1/core/test_mamba_align_chunk_split.py: marked `cpu_test`,
calling the real `Scheduler._mamba_block_aligned_split` on stand-ins.

Each case is a fresh request's prefill under the engine's split. The file
asserts two things per case: the real split takes the chunk ends gridproof's
model of vLLM 0.33.0 derived (a conformance check that passes on 0.33.0), and
every published recurrent checkpoint lies on every target-attention boundary
(the property the case breaks: a strict xfail on 0.33.0, to be turned into a
plain test by the fix).
"""

from __future__ import annotations

import pprint
import re

from models.plan import Plan
from models.prefill import run_prefill
from models.scheduler import SplitParams

# The scheduler attributes the split reads (vllm-on-cpu.md), from the model's SplitParams.
_STUB = {
    "block": "cache_config.block_size",
    "sched_block": "block_size",
    "hash_block": "hash_block_size",
    "max_scheduled": "max_num_scheduled_tokens",
    "long_prefill_threshold": "scheduler_config.long_prefill_token_threshold",
    "eagle_drop": "use_eagle_block_drop",
    "lookahead": "num_hash_lookahead_tokens",
    "partial_hits": "mamba_partial_cache_hit",
    "checkpoint_blocks": "mamba_has_prefill_checkpoint_blocks",
    "checkpoint_alignment": "mamba_prefill_checkpoint_alignment",
    "shared_prefix": "mamba_shared_prefix_checkpoint",
}


def split_fields(split: SplitParams | dict) -> dict:
    values = split if isinstance(split, dict) else split.__dict__
    return {key: values[key] for key in _STUB}


def case_from_plan(p: Plan, name: str, why: str, prompt_tokens: int | None = None) -> dict:
    """A case for a baseline plan: its split, a prefill, the chunk ends the model derives."""
    if p.variant.name != "baseline":
        raise ValueError("the real split in a vLLM checkout is 0.33.0's: export a baseline plan")
    budget = p.geometry.deployment.max_num_scheduled_tokens
    prompt = prompt_tokens or p.geometry.request.prompt_tokens
    trace = run_prefill(p, budget, prompt_tokens=prompt, output_tokens=0)
    return {
        "name": name,
        "why": why,
        "split": split_fields(p.split),
        "prompt": prompt,
        "tokens": prompt,
        "budgets": [budget],
        "chunk_ends": list(trace.chunk_ends),
        "cadence": p.cadence,
        "target_spans": list(p.target_spans),
    }


def case_from_document(doc: dict) -> dict | None:
    """A case for a mined counterexample that replays through the real split, else None."""
    if "real_vllm" not in doc or "scenario" not in doc:
        return None
    s, inputs = doc["scenario"], doc["inputs"]
    return {
        "name": f"{doc['theorem']}-{doc['variant']}",
        "why": doc["statement"],
        "split": split_fields(doc["real_vllm"]["split"]),
        "prompt": inputs["prompt"],
        "tokens": inputs["tokens"],
        "budgets": s["budgets"],
        "chunk_ends": [step[3] for step in s["prefill"]["steps"] if step[3] > step[1]],
        "cadence": s["cadence"],
        "target_spans": s["target_spans"],
    }


def _identifier(text: str) -> str:
    return re.sub(r"[^0-9a-zA-Z]+", "_", text).strip("_").lower()


def render_documents(documents: list[dict], command: str) -> str:
    """`gridproof mine --format vllm-test`: the mined cases that replay through the real split."""
    cases = [c for c in (case_from_document(d) for d in documents) if c is not None]
    if not cases:
        raise ValueError("no mined case replays through the real vLLM split (only baseline prefill cases do)")
    return render(cases, command)


def render(cases: list[dict], command: str) -> str:
    for case in cases:
        case["id"] = _identifier(case["name"])
    cases_text = pprint.pformat(cases, width=110, sort_dicts=False)
    return TEMPLATE.replace("__COMMAND__", command).replace("__CASES__", cases_text)


TEMPLATE = '''# SPDX-License-Identifier: Apache-2.0
"""Mamba "align" prefill chunk splitting (`_mamba_block_aligned_split`):
recurrent checkpoints against target-attention boundaries.

Exported by gridproof: __COMMAND__

Each case is a fresh request's prefill. The real split must take the chunk
ends gridproof derived from its model of vLLM 0.33.0, and every recurrent
checkpoint it publishes (a chunk end on a multiple of the Mamba block size)
must lie on every target-attention boundary, or no later request can restore
it. On 0.33.0 the second test fails: it is a strict xfail until the fix.
"""

from types import SimpleNamespace

import pytest

from vllm.v1.core.sched.scheduler import Scheduler

pytestmark = pytest.mark.cpu_test

CASES = __CASES__


def _stub(split: dict) -> SimpleNamespace:
    return SimpleNamespace(
        cache_config=SimpleNamespace(block_size=split["block"]),
        block_size=split["sched_block"],
        hash_block_size=split["hash_block"],
        max_num_scheduled_tokens=split["max_scheduled"],
        scheduler_config=SimpleNamespace(long_prefill_token_threshold=split["long_prefill_threshold"]),
        use_eagle_block_drop=split["eagle_drop"],
        num_hash_lookahead_tokens=split["lookahead"],
        mamba_partial_cache_hit=split["partial_hits"],
        mamba_has_prefill_checkpoint_blocks=split["checkpoint_blocks"],
        mamba_prefill_checkpoint_alignment=split["checkpoint_alignment"] or None,
        mamba_shared_prefix_checkpoint=split["shared_prefix"],
    )


def _chunk_ends(case: dict) -> list[int]:
    """Prefill with the real split, one step per budget (the last repeats)."""
    stub = _stub(case["split"])
    request = SimpleNamespace(
        num_computed_tokens=0,
        num_prompt_tokens=case["prompt"],
        num_tokens=case["tokens"],
        shared_prefix_boundary=0,
    )
    budgets, ends, step = case["budgets"], [], 0
    while request.num_computed_tokens < max(case["prompt"], case["tokens"] - 1):
        budget = budgets[min(step, len(budgets) - 1)]
        computed = request.num_computed_tokens
        num_new = Scheduler._mamba_block_aligned_split(stub, request, min(budget, case["tokens"] - computed))
        if num_new == 0:
            assert step < len(budgets) - 1, f"no progress at {computed}"
        else:
            request.num_computed_tokens = computed + num_new
            ends.append(request.num_computed_tokens)
        step += 1
    return ends


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_split_takes_the_derived_chunk_ends(case: dict) -> None:
    assert _chunk_ends(case) == case["chunk_ends"]


@pytest.mark.xfail(strict=True, reason="0.33.0 publishes recurrent checkpoints off target-attention boundaries")
@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_published_checkpoints_lie_on_target_boundaries(case: dict) -> None:
    published = [e for e in _chunk_ends(case) if e % case["cadence"] == 0]
    off = [e for e in published if any(e % span for span in case["target_spans"])]
    assert not off, f"{case['why']}: checkpoints at {off} lie off the target spans {case['target_spans']}"
'''
