"""One result, many renderings: the canonical JSON of a proof run rendered as
a Markdown summary and report, self-contained HTML with drawings, JUnit XML and SARIF 2.1.0; the live
run adds one SMT-LIB file per obligation. `gridproof report` renders a saved result;
`gridproof prove --report-dir DIR` writes them all."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from proofs.run.result import ReportError, check_result, load_result

FORMATS = ("md", "md-summary", "html", "junit", "sarif")
REPORT_FILES = {
    "summary.md": "md-summary",
    "report.md": "md",
    "report.html": "html",
    "junit.xml": "junit",
    "results.sarif": "sarif",
}


def render(result: dict, fmt: str) -> str:
    """The result in one format; the renderers are imported on demand (HTML needs matplotlib)."""
    if fmt == "md":
        from proofs.report.markdown import render_report

        return render_report(result)
    if fmt == "md-summary":
        from proofs.report.markdown import render_summary

        return render_summary(result)
    if fmt == "html":
        from proofs.report.html import render_html

        return render_html(result)
    if fmt == "junit":
        from proofs.report.junit import render_junit

        return render_junit(result)
    if fmt == "sarif":
        from proofs.report.sarif import render_sarif

        return render_sarif(result)
    raise ReportError(f"unknown format {fmt!r} (known: {', '.join(FORMATS)})")


# What a report directory holds: every file gridproof writes there, and no other.
MARKER = ".gridproof-report"
REPORT_DIRECTORIES = {"smt2": (".smt2",), "enumerated": (".json", ".txt")}


def check_report_dir(directory: Path) -> None:
    """Before a run, and again before it is replaced: a report directory is new,
    empty, or one gridproof wrote (only the files it writes); anything else would
    be lost, or mixed with this run's files, so it is refused in one line."""
    try:
        if directory.is_symlink():
            raise ReportError(f"--report-dir: {directory} is a symbolic link; name the directory itself")
        if not directory.exists():
            return
        if not directory.is_dir():
            raise ReportError(f"--report-dir: {directory} exists and is not a directory")
        for item in directory.iterdir():
            foreign = _foreign(item)
            if foreign is not None:
                raise ReportError(
                    f"--report-dir: {directory} holds {foreign}, which gridproof does not write there; "
                    "name a new or empty directory, or one a gridproof run wrote"
                )
    except OSError as error:
        raise ReportError(f"--report-dir: cannot use {directory}: {error.strerror}") from None


def _foreign(item: Path) -> str | None:
    """`item`'s name when gridproof would not have written it in a report directory, else None."""
    regular = item.is_file() and not item.is_symlink()
    if item.name in ("result.json", MARKER, *REPORT_FILES):
        return None if regular else item.name
    suffixes = REPORT_DIRECTORIES.get(item.name)
    if suffixes is None or item.is_symlink() or not item.is_dir():
        return item.name
    for inner in item.iterdir():
        if inner.is_symlink() or not inner.is_file() or not inner.name.endswith(suffixes):
            return f"{item.name}/{inner.name}"
    return None


def write_report_dir(result: dict, entries, directory: Path) -> list[Path]:
    """result.json, every rendering, and smt2/ with one file per obligation of the live `entries`.
    Written into a fresh directory beside `directory` and put in its place at the end
    (proofs/runtime/atomic.py): a reader sees the previous run's files or this run's, never both."""
    from proofs.engine.enumerated import write_certificates
    from proofs.report.smt2 import write_smt2
    from proofs.runtime.atomic import fresh_directory_beside, put_in_place, write_text

    check_report_dir(directory)
    target = Path(os.path.abspath(directory))
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = fresh_directory_beside(target, ".gridproof-report-")
    except OSError as error:
        raise ReportError(f"--report-dir: cannot write in {target.parent}: {error.strerror}") from None
    try:
        written = [staging / "result.json"]
        write_text(written[0], json.dumps(result, indent=2) + "\n")
        for name, fmt in REPORT_FILES.items():
            write_text(staging / name, render(result, fmt))
            written.append(staging / name)
        written += write_smt2(entries, staging / "smt2")
        written += write_certificates(entries, staging / "enumerated")
        write_text(staging / MARKER, "written by gridproof prove --report-dir: every file here is one run's\n")
        check_report_dir(directory)  # nothing foreign put there while the run went on
        put_in_place(staging, target)
    except OSError as error:
        where = Path(error.filename) if error.filename else target
        if where.is_relative_to(staging):
            where = directory / where.relative_to(staging)  # as it would have been named
        raise ReportError(f"--report-dir: cannot write {where}: {error.strerror}") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return [directory / path.relative_to(staging) for path in written]


__all__ = [
    "FORMATS",
    "REPORT_FILES",
    "ReportError",
    "check_report_dir",
    "check_result",
    "load_result",
    "render",
    "write_report_dir",
]
