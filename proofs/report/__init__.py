"""One result, many renderings: the canonical JSON of a proof run rendered as
a Markdown summary and report, self-contained HTML with drawings, JUnit XML and SARIF 2.1.0; the live
run adds one SMT-LIB file per obligation. `gridproof report` renders a saved result;
`gridproof prove --report-dir DIR` writes them all."""

from __future__ import annotations

import json
from pathlib import Path

from proofs.report.result import ReportError, check_result, load_result

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


def check_report_dir(directory: Path) -> None:
    """Before a run: a report directory that cannot be one fails at once."""
    if directory.exists() and not directory.is_dir():
        raise ReportError(f"--report-dir: {directory} exists and is not a directory")


def write_report_dir(result: dict, entries, directory: Path) -> list[Path]:
    """result.json, every rendering, and smt2/ with one file per obligation of the live `entries`."""
    from proofs.enumerated import write_certificates
    from proofs.report.smt2 import write_smt2

    check_report_dir(directory)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        written = [directory / "result.json"]
        written[0].write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        for name, fmt in REPORT_FILES.items():
            path = directory / name
            path.write_text(render(result, fmt), encoding="utf-8")
            written.append(path)
        written += write_smt2(entries, directory / "smt2")
        written += write_certificates(entries, directory / "enumerated")
    except OSError as error:
        raise ReportError(f"--report-dir: cannot write {error.filename or directory}: {error.strerror}") from None
    return written


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
