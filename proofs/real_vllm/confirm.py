"""`gridproof check --confirm-vllm`: the deployment run on the real vLLM scheduler (and its offload
connector) at prompt lengths around every grid the answer turns on, each compared with the engine
model (proofs/real_vllm/end_to_end.py, the same comparison the conformance sweep makes) and with the
printed law: vLLM 0.33.0 installed beside gridproof, or another modelled release in its own venv
(proofs/real_vllm/other_release.py)."""

from __future__ import annotations

import random
from collections.abc import Callable

from models.plan import Plan
from models.variants import BASELINE, RELEASES
from proofs.deployment.restore_law import RestoreLaw
from proofs.real_vllm import INSTALL, VllmMissing, quietly

SEED = 44
LENGTH_LIMIT_SPANS = 4  # prompt lengths up to this many of the widest grid


def confirm(p: Plan, law: RestoreLaw | None, progress: Callable[[int, int], None] | None = None) -> dict:
    """Every length compared with the model and with `law` (the checked restore law, None: none);
    the disagreements, one line each."""
    releases = {variant.name: version for version, variant in RELEASES.items()}
    if p.variant.name not in releases:
        raise VllmMissing(
            f"--confirm-vllm runs a vLLM release as released ({', '.join(RELEASES)}), not {p.variant.name}"
        )
    if p.variant.name != BASELINE.name:
        return _confirm_in_venv(releases[p.variant.name], p, law, progress)
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
    for done, length in enumerate(lengths, 1):
        case = Case(geometry, budget, length)
        model, observed = model_observation(case), real.observe(case)
        found = differences(model, observed)
        if law is not None and isinstance(observed.hit, int) and observed.hit != law(length):
            found.append(f"the law says {law(length):,}")
        if found:
            disagreements.append(f"L = {length:,}: " + "; ".join(found))
        if progress is not None and (done % 20 == 0 or done == len(lengths)):
            progress(done, len(lengths))
    return {"cases": len(lengths), "largest": max(lengths), "disagreements": disagreements}


def _lengths(p: Plan) -> list[int]:
    from proofs.real_vllm.end_to_end import boundary_lengths

    budget = p.geometry.deployment.max_num_scheduled_tokens
    widest = max(int(p.split.sched_block), budget, p.cadence)
    return boundary_lengths(p, LENGTH_LIMIT_SPANS * widest + 7, random.Random(SEED), randoms=8)


def _confirm_in_venv(version: str, p: Plan, law: RestoreLaw | None, progress) -> dict:
    """The same comparison on vLLM `version`, run in its venv."""
    from proofs.real_vllm.other_release import OtherReleaseError, resends

    lengths = _lengths(p)
    seen = []

    def echo(_line: dict) -> None:
        seen.append(1)
        if progress is not None and (len(seen) % 20 == 0 or len(seen) == len(lengths)):
            progress(len(seen), len(lengths))

    try:
        lines = resends(version, p.geometry, p.geometry.deployment.max_num_scheduled_tokens, lengths, echo)
    except OtherReleaseError as error:
        raise VllmMissing(str(error)) from None
    disagreements = []
    for line in lines:
        found = list(line["differences"])
        if law is not None and isinstance(line["hit"], int) and line["hit"] != law(line["length"]):
            found.append(f"the law says {law(line['length']):,}")
        if found:
            disagreements.append(f"L = {line['length']:,}: " + "; ".join(found))
    return {"cases": len(lines), "largest": max(lengths), "disagreements": disagreements}
