"""`gridproof prove` with evidence: the report directory, the diff against a previous result and
the seed reruns, around one run of the catalogue."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from proofs.report import check_report_dir, write_report_dir
from proofs.report.diff import BaselineError, compare
from proofs.report.seeds import brittleness, render_brittleness
from proofs.report.smt2 import exported
from proofs.run.prove import render_table, run_catalogue
from proofs.run.result import covers, load_baseline, selection_text


def prove_with_evidence(
    theorem=None,
    variant=None,
    tier="ci",
    rlimit=None,
    as_json=False,
    seed=None,
    report_dir: Path | None = None,
    against: Path | None = None,
    rlimit_growth: float = 50.0,
    seeds: int = 0,
    jobs: int | None = None,
    confirm_with: str | None = None,
    cache: Path | None = None,
    cache_named: bool = True,
    verify_cache: bool = False,
    verbose: bool = False,
) -> int:
    old = load_baseline(against) if against is not None else None  # a bad file stops here, before the run
    if old is not None and not covers(old.get("selection"), {"theorem": theorem, "variant": variant, "tier": tier}):
        raise BaselineError(
            f"{against}: its selection ({selection_text(old)}) does not cover this run's "
            f"({selection_text({'selection': {'theorem': theorem, 'variant': variant, 'tier': tier}})}): "
            "compare with a result of the same or a wider selection"
        )
    if report_dir is not None:
        check_report_dir(report_dir)
    wanted = report_dir is not None or confirm_with is not None  # the cache asks for them itself
    cached = {"cache": cache, "cache_named": cache_named, "verify_cache": verify_cache}
    result, entries = run_catalogue(theorem, variant, tier, rlimit, seed, jobs, export=wanted, **cached)
    status = 1 if result["failures"] or not entries else 0
    after: list[str] = []

    if seeds:
        seeded = {}
        for s in range(1, seeds + 1):
            rerun, _ = run_catalogue(theorem, variant, tier, rlimit, s, jobs, export=False, **cached)
            seeded[s] = rerun["entries"]
        report = brittleness(result["entries"], seeded)
        result["brittleness"] = report
        after.append(render_brittleness(report))
        if report["flips"]:
            status = 1

    if old is not None:
        diff = compare(old, result, rlimit_growth, str(against))
        result["against"] = diff.to_json(str(against))
        if diff.changes:
            after.append(f"against {against}: {len(diff.changes)} regression{'s' if len(diff.changes) != 1 else ''}")
            after += diff.changes
            status = 1
        else:
            after.append(f"against {against}: no regression")
        after += [f"note: {n}" for n in diff.notes]

    if confirm_with is not None:
        from proofs.report.confirm import DISAGREES, confirm, render

        confirmed = confirm(entries, confirm_with, jobs=result["jobs"])
        result["confirm"] = confirmed
        after += render(confirmed)
        if confirmed["counts"][DISAGREES]:
            status = 1

    if report_dir is not None:
        written = write_report_dir(result, entries, report_dir)
        smt2 = sum(p.parent.name == "smt2" for p in written)
        queries = sum(1 for _ in exported(entries))
        after.append(
            f"report: {len(written) - smt2} files and {smt2} in smt2/ ({queries} queries of {len(entries)} entries, "
            f"Z3 option headers, lemma families) in {report_dir}"
        )

    if as_json:
        print(json.dumps(result, indent=2))
        if after:
            print("\n".join(after), file=sys.stderr)
    else:
        print(render_table(entries, result, verbose))
        if after:
            print("\n".join(after))
    return status
