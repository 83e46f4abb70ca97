"""`gridproof check --plot FILE`: what a later identical request is restored, hit(L), against the
prompt length L, from the GPU prefix cache and through native offload alone, beside a perfect
cache (every token but the last restored)."""

from __future__ import annotations

import random
import warnings

from models.offload import OffloadNotModelled, offload_hit, runs_beside_hashing
from models.plan import Plan
from models.prefill import run_prefill
from models.prefix_cache import LookupFailure, cached_prefix, gpu_hit
from proofs.deployment.restore_law import CONDENSE_BEYOND

POINTS = 400


def restores(p: Plan, length: int) -> tuple[int | None, int | None]:
    budget = p.geometry.deployment.max_num_scheduled_tokens
    trace = run_prefill(p, budget, prompt_tokens=length, output_tokens=0, condense_beyond=CONDENSE_BEYOND)
    cached = cached_prefix(p, trace, length, length)
    try:
        gpu = gpu_hit(cached, length, length)
    except LookupFailure:
        gpu = None
    try:
        offload = offload_hit(p, cached, length, length) if runs_beside_hashing(p) else None
    except OffloadNotModelled:
        offload = None
    return gpu, offload


def plot_restores(p: Plan, path: str, offload: bool = True) -> None:
    """Draw hit(L) for L up to four scheduler blocks or budgets, whichever is longer."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    budget = p.geometry.deployment.max_num_scheduled_tokens
    top = 4 * max(int(p.split.sched_block), budget, p.cadence)
    rng = random.Random(0)
    lengths = sorted({*range(1, top + 1, max(1, top // POINTS)), *(rng.randint(1, top) for _ in range(POINTS // 4))})
    measured = [restores(p, n) for n in lengths]
    figure, axes = pyplot.subplots(figsize=(8, 4.5))
    axes.plot(lengths, [n - 1 for n in lengths], color="0.7", linestyle="--", label="a perfect cache (L - 1)")
    axes.step(lengths, [g or 0 for g, _ in measured], where="post", label="GPU prefix cache")
    if offload:
        axes.step(lengths, [o or 0 for _, o in measured], where="post", label="native offload alone")
    axes.set_xlabel("prompt length L (tokens), then a later request with the same L tokens")
    axes.set_ylabel("tokens restored, hit(L)")
    axes.set_title(f"{p.geometry.name}, {p.variant.name}: budget {budget:,}")
    axes.legend(loc="upper left")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        figure.tight_layout()
        figure.savefig(path, dpi=110)
    pyplot.close(figure)
