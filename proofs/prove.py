"""`gridproof prove`: run the catalogue, print a table, and fail on any
verdict that differs from the manifest or is not PROVED/REFUTED."""

from __future__ import annotations

import json
import sys
import time

import z3

from proofs.runner import load_manifest, plan_runs, progress, run_theorem


def prove(theorem=None, variant=None, tier="ci", rlimit=None, as_json=False) -> int:
    manifest = load_manifest()
    runs = plan_runs(manifest, theorem, variant, tier)
    started = time.perf_counter()
    entries = []
    for i, (t, v, expected) in enumerate(runs, 1):
        progress(f"[{i}/{len(runs)}] {t.name} / {v}")
        entries.append(run_theorem(t, v, expected, rlimit))
    progress("")
    failures = [e for e in entries if not e.ok]
    result = {
        "z3_version": z3.get_version_string(),
        "seconds": round(time.perf_counter() - started, 3),
        "rlimit": sum(e.rlimit for e in entries),
        "entries": [e.to_json() for e in entries],
        "failures": len(failures),
    }
    if as_json:
        print(json.dumps(result, indent=2))
    else:
        print(render_table(entries, result))
    return 1 if failures or not entries else 0


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
    counts = {}
    for e in entries:
        counts[e.verdict] = counts.get(e.verdict, 0) + 1
    summary = ", ".join(f"{n} {v}" for v, n in sorted(counts.items()))
    lines.append("")
    lines.append(
        f"{len(entries)} obligations ({summary}) in {result['seconds']:.1f} s, rlimit {result['rlimit']:,}, "
        f"z3 {result['z3_version']}: {result['failures']} differ from the manifest or are not decided"
    )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(prove())
