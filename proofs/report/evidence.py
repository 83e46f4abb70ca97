"""`gridproof prove` with evidence: the report directory, the diff against a previous result and
the seed reruns, around one run of the catalogue."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, replace
from pathlib import Path

from proofs.report import check_report_dir, write_report_dir
from proofs.report.diff import BaselineError, compare
from proofs.report.seeds import brittleness, render_brittleness
from proofs.report.smt2 import exported
from proofs.run.prove import ProveRequest, render_table, run_catalogue
from proofs.run.result import covers, load_baseline, selection_text


@dataclass(frozen=True)
class ReportRequest:
    """What `gridproof prove` reports around its run: JSON or the table (`verbose`: every entry),
    the report directory, the result it is compared with (`against`, `rlimit_growth`), the seed
    reruns (`seeds`) and the second solver (`confirm_with`)."""

    as_json: bool = False
    verbose: bool = False
    report_dir: Path | None = None
    against: Path | None = None
    rlimit_growth: float = 50.0
    seeds: int = 0
    confirm_with: str | None = None


def prove_with_evidence(request: ProveRequest, report: ReportRequest) -> int:
    """One run of the catalogue with its evidence; the exit status."""
    against, report_dir = report.against, report.report_dir
    old = load_baseline(against) if against is not None else None  # a bad file stops here, before the run
    if old is not None and not covers(old.get("selection"), request.selection()):
        raise BaselineError(
            f"{against}: its selection ({selection_text(old)}) does not cover this run's "
            f"({selection_text({'selection': request.selection()})}): "
            "compare with a result of the same or a wider selection"
        )
    if report_dir is not None:
        check_report_dir(report_dir)
    wanted = report_dir is not None or report.confirm_with is not None  # the cache asks for them itself
    result, entries = run_catalogue(replace(request, export=wanted))
    status = 1 if result["failures"] or not entries else 0
    after: list[str] = []

    if report.seeds:
        seeded = {}
        for s in range(1, report.seeds + 1):
            rerun, _ = run_catalogue(replace(request, seed=s, export=False))
            seeded[s] = rerun["entries"]
        flips = brittleness(result["entries"], seeded)
        result["brittleness"] = flips
        after.append(render_brittleness(flips))
        if flips["flips"]:
            status = 1

    if old is not None:
        diff = compare(old, result, report.rlimit_growth, str(against))
        result["against"] = diff.to_json(str(against))
        if diff.changes:
            after.append(f"against {against}: {len(diff.changes)} regression{'s' if len(diff.changes) != 1 else ''}")
            after += diff.changes
            status = 1
        else:
            after.append(f"against {against}: no regression")
        after += [f"note: {n}" for n in diff.notes]

    if report.confirm_with is not None:
        from proofs.report.confirm import DISAGREES, confirm, render

        confirmed = confirm(entries, report.confirm_with, jobs=result["jobs"])
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

    if report.as_json:
        print(json.dumps(result, indent=2))
        if after:
            print("\n".join(after), file=sys.stderr)
    else:
        print(render_table(entries, result, report.verbose))
        if after:
            print("\n".join(after))
    return status
