"""`gridproof prove`: run the catalogue, print a table, and fail on any
verdict that differs from the manifest or is not PROVED/REFUTED."""

from __future__ import annotations

import concurrent.futures
import json
import multiprocessing
import os
import time

import z3

from proofs.catalog import CATALOGUE
from proofs.runner import Entry, load_manifest, model_sources_hash, plan_runs, progress, run_theorem

RESULT_FORMAT = "gridproof-result/1"


def run_catalogue(theorem=None, variant=None, tier="ci", rlimit=None, seed=None, jobs=None) -> tuple[dict, list[Entry]]:
    """Decide the selected obligations, `jobs` at a time (default: one per
    core); the canonical result object and the entries, in catalogue order."""
    manifest = load_manifest()
    runs = plan_runs(manifest, theorem, variant, tier)
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(runs) or 1))
    started = time.perf_counter()
    entries: list[Entry | None] = [None] * len(runs)

    def done(i: int, entry: Entry) -> None:
        entries[i] = entry
        finished = sum(e is not None for e in entries)
        progress(
            f"[{finished}/{len(runs)}] {entry.theorem} / {entry.variant}: {entry.verdict} in {entry.seconds:.1f} s"
        )

    tasks = [(run.theorem.name, run.variant, run.expected, rlimit or run.rlimit, run.tier, seed) for run in runs]
    if jobs == 1:
        for i, task in enumerate(tasks):
            done(i, _run(*task))
    else:
        # Separate processes: Z3 releases no lock a thread could use. The
        # largest budgets start first, so no long obligation starts last.
        order = sorted(range(len(tasks)), key=lambda i: -tasks[i][3])
        context = multiprocessing.get_context("spawn")
        with concurrent.futures.ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
            futures = {pool.submit(_run, *tasks[i]): i for i in order}
            for future in concurrent.futures.as_completed(futures):
                done(futures[future], future.result())
    progress("")
    result = {
        "format": RESULT_FORMAT,
        "z3_version": z3.get_version_string(),
        "model_hash": model_sources_hash(),
        "selection": {"theorem": theorem, "variant": variant, "tier": tier, "rlimit": rlimit, "seed": seed},
        "jobs": jobs,
        "seconds": round(time.perf_counter() - started, 3),
        "rlimit": sum(e.rlimit for e in entries),
        "entries": [e.to_json() for e in entries],
        "failures": sum(not e.ok for e in entries),
    }
    return result, entries


def _run(theorem: str, variant: str, expected: str, rlimit: int, tier: str, seed: int | None) -> Entry:
    return run_theorem(CATALOGUE[theorem], variant, expected, rlimit, tier=tier, seed=seed)


def prove(theorem=None, variant=None, tier="ci", rlimit=None, as_json=False, seed=None, jobs=None) -> int:
    result, entries = run_catalogue(theorem, variant, tier, rlimit, seed, jobs)
    print(json.dumps(result, indent=2) if as_json else render_table(entries, result))
    return 1 if result["failures"] or not entries else 0


def render_table(entries, result) -> str:
    rows = [("theorem", "variant", "verdict", "expected", "rlimit", "seconds", "")]
    for e in entries:
        mark = "ok" if e.ok else "MISMATCH"
        rows.append((e.theorem, e.variant, e.verdict, e.expected, f"{e.rlimit:,}", f"{e.seconds:.2f}", mark))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    lines.append("")
    for e in entries:
        detail = []
        if e.hypotheses_used or e.verdict == "PROVED":
            detail.append(f"used: {', '.join(e.hypotheses_used) or '(no hypothesis)'}")
        if e.counterexample:
            detail.append("counterexample: " + ", ".join(f"{k}={v}" for k, v in e.counterexample.items()))
        if e.reason:
            detail.append(f"note: {e.reason}")
        for hypothesis, verdict in e.ablations.items():
            detail.append(f"without {hypothesis!r}: {verdict}")
        lines.append(f"{e.theorem} / {e.variant}: {e.verdict}")
        lines += [f"    {d}" for d in detail]
        lines.append(f"    reproduce: {e.reproduce}")
    counts: dict[str, int] = {}
    for e in entries:
        counts[e.verdict] = counts.get(e.verdict, 0) + 1
    summary = ", ".join(f"{n} {v}" for v, n in sorted(counts.items()))
    lines.append("")
    lines.append(
        f"{len(entries)} obligations ({summary}) in {result['seconds']:.1f} s, rlimit {result['rlimit']:,}, "
        f"z3 {result['z3_version']}: {result['failures']} differ from the manifest or are not decided"
    )
    return "\n".join(lines)
