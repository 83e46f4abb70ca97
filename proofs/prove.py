"""`gridproof prove`: run the catalogue, print a table, and fail on any
verdict that differs from the manifest or is not PROVED/REFUTED."""

from __future__ import annotations

import json
import time

import z3

from proofs.runner import Entry, load_manifest, model_sources_hash, plan_runs, progress, run_theorem

RESULT_FORMAT = "gridproof-result/1"


def run_catalogue(theorem=None, variant=None, tier="ci", rlimit=None, seed=None) -> tuple[dict, list[Entry]]:
    """Decide the selected obligations; the canonical result object and the entries."""
    manifest = load_manifest()
    runs = plan_runs(manifest, theorem, variant, tier)
    started = time.perf_counter()
    entries = []
    for i, run in enumerate(runs, 1):
        progress(f"[{i}/{len(runs)}] {run.theorem.name} / {run.variant}")
        budget = rlimit or run.rlimit
        entries.append(run_theorem(run.theorem, run.variant, run.expected, budget, tier=run.tier, seed=seed))
    progress("")
    result = {
        "format": RESULT_FORMAT,
        "z3_version": z3.get_version_string(),
        "model_hash": model_sources_hash(),
        "selection": {"theorem": theorem, "variant": variant, "tier": tier, "rlimit": rlimit, "seed": seed},
        "seconds": round(time.perf_counter() - started, 3),
        "rlimit": sum(e.rlimit for e in entries),
        "entries": [e.to_json() for e in entries],
        "failures": sum(not e.ok for e in entries),
    }
    return result, entries


def prove(theorem=None, variant=None, tier="ci", rlimit=None, as_json=False, seed=None) -> int:
    result, entries = run_catalogue(theorem, variant, tier, rlimit, seed)
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
