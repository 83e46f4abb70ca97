"""Brittleness (`gridproof prove --seeds K`): the same obligations decided again under K Z3 random
seeds. A verdict that flips with the seed is a proof that holds by luck; the spread of rlimit (min,
max, coefficient of variation) shows how close a proof sits to its budget (Dafny's
measure-complexity practice)."""

from __future__ import annotations

import statistics

from proofs.run.result import key


def brittleness(base: list[dict], seeded: dict[int, list[dict]]) -> dict:
    """`base`: the entries of the run without a seed; `seeded`: seed -> the entries under that seed."""
    rows = []
    flips = []
    runs = {"default": {key(e): e for e in base}} | {str(s): {key(e): e for e in es} for s, es in seeded.items()}
    for entry in base:
        k = key(entry)
        verdicts = {name: run[k]["verdict"] for name, run in runs.items() if k in run}
        rlimits = [run[k]["rlimit"] for run in runs.values() if k in run]
        mean = statistics.fmean(rlimits)
        cv = statistics.pstdev(rlimits) / mean if mean else 0.0
        flipped = len(set(verdicts.values())) > 1
        row = {
            "theorem": entry["theorem"],
            "variant": entry["variant"],
            "verdicts": verdicts,
            "rlimit_min": min(rlimits),
            "rlimit_max": max(rlimits),
            "rlimit_cv": round(cv, 4),
            "flipped": flipped,
        }
        rows.append(row)
        if flipped:
            odd = ", ".join(f"seed {s}: {v}" for s, v in verdicts.items() if v != entry["verdict"])
            flips.append(f"FLIP {entry['theorem']} / {entry['variant']}: {entry['verdict']} by default, {odd}")
    seeds = sorted(seeded)
    seed_text = f"{len(seeds)} seed{'s' if len(seeds) != 1 else ''} ({', '.join(map(str, seeds))}) besides the default"
    if flips:
        summary = f"{seed_text}: {len(flips)} verdict flip{'s' if len(flips) != 1 else ''}"
    else:
        summary = f"{seed_text}: no verdict flip"
    if rows:
        worst = max(rows, key=lambda r: r["rlimit_cv"])
        summary += (
            f"; rlimit spread: largest coefficient of variation {worst['rlimit_cv'] * 100:.1f}% "
            f"({worst['theorem']} / {worst['variant']}, {worst['rlimit_min']:,} to {worst['rlimit_max']:,}), "
            f"median {statistics.median(r['rlimit_cv'] for r in rows) * 100:.1f}%"
        )
    return {"seeds": seeds, "summary": summary, "flips": flips, "entries": rows}


def render_brittleness(report: dict) -> str:
    """The brittleness report as text: its summary, a table of each entry's verdicts (FLIP where they differ),
    rlimit range and coefficient of variation, and the flip lines."""
    lines = [f"seeds: {report['summary']}"]
    header = ("theorem", "variant", "verdicts", "rlimit min", "rlimit max", "CV")
    table = [header]
    for row in report["entries"]:
        verdicts = "/".join(sorted(set(row["verdicts"].values())))
        table.append(
            (
                row["theorem"],
                row["variant"],
                verdicts + ("  FLIP" if row["flipped"] else ""),
                f"{row['rlimit_min']:,}",
                f"{row['rlimit_max']:,}",
                f"{row['rlimit_cv'] * 100:.1f}%",
            )
        )
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    for r in table:
        lines.append(
            "  "
            + "  ".join(c.ljust(w) if i < 3 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
        )
    lines += report["flips"]
    return "\n".join(lines)
