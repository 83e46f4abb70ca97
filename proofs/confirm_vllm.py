"""`gridproof check --confirm-vllm`: the deployment run on the real vLLM 0.33.0 scheduler (and its
offload connector) at prompt lengths around every grid the answer turns on, each compared with the
engine model (proofs/real_vllm/end_to_end.py, the same comparison the conformance sweep makes) and
with the printed law."""

from __future__ import annotations

import random
from collections.abc import Callable

from models.plan import Plan
from models.variants import BASELINE
from proofs.real_vllm import INSTALL, VllmMissing, quietly

SEED = 44
LENGTH_LIMIT_SPANS = 4  # prompt lengths up to this many of the widest grid


def confirm(p: Plan, law: dict, progress: Callable[[int, int], None] | None = None) -> dict:
    """Every length compared; the disagreements, one line each."""
    if p.variant.name != BASELINE.name:
        raise VllmMissing(
            f"--confirm-vllm runs the installed vLLM 0.33.0 as released, so only --vllm-version 0.33.0 "
            f"(--variant baseline), not {p.variant.name}"
        )
    try:
        from proofs.real_vllm.end_to_end import Case, RealCases, boundary_lengths, differences, model_observation

        real = quietly(RealCases)
        quietly(lambda: __import__("vllm.v1.core.sched.scheduler"))
    except ImportError as error:
        raise VllmMissing(f"vLLM 0.33.0 is not installed ({error}); {INSTALL} installs it") from None
    geometry = p.geometry
    budget = geometry.deployment.max_num_scheduled_tokens
    widest = max(int(p.split.sched_block), budget, p.cadence)
    lengths = boundary_lengths(p, LENGTH_LIMIT_SPANS * widest + 7, random.Random(SEED), randoms=8)
    disagreements = []
    formula = law.get("law") if law.get("verdict") == "CHECKED" else None
    for done, length in enumerate(lengths, 1):
        case = Case(geometry, budget, length)
        model, observed = model_observation(case), real.observe(case)
        found = differences(model, observed)
        if formula is not None and isinstance(observed.hit, int) and observed.hit != formula(length):
            found.append(f"the law says {formula(length):,}")
        if found:
            disagreements.append(f"L = {length:,}: " + "; ".join(found))
        if progress is not None and (done % 20 == 0 or done == len(lengths)):
            progress(done, len(lengths))
    return {"cases": len(lengths), "largest": max(lengths), "disagreements": disagreements}
