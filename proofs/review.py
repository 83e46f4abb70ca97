"""`gridproof review`: the evidence a reviewer of a change to vLLM's hybrid caching reads, from one
command, as Markdown and HTML (and JSON), in one report directory.

Sections, each with its verdict:

1. the shipped functions of the tree under review proved equivalent to the variant's model, path by
   path, and the split theorems on its split (`gridproof source`);
2. what the change alters of the release, function by function (`gridproof source --diff`);
3. the theorem catalogue for the variant against the manifest, and the counterexamples the unguarded
   variant (`pr457`) admits (`gridproof prove`);
4. the real vLLM scheduler carrying the project's patch for the variant, end to end, against the
   engine model (`tests/conformance/test_end_to_end_pr457.py`'s sample);
5. the change's own validation replayed on that patched scheduler and on the release
   (proofs/real_vllm/regression.py).

Sections 4 and 5 run the installed vLLM 0.33.0 with the project's patch for the variant: a tree given
with --vllm is judged by sections 1 to 3, and the report says so.
"""

from __future__ import annotations

import html
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from models.variants import Variant

UNGUARDED = "pr457"
E2E_PER_BUILTIN = 3


@dataclass
class Section:
    title: str
    ok: bool
    text: str  # Markdown
    data: dict = field(default_factory=dict)
    seconds: float = 0.0


def _say(text: str) -> None:
    print(f"review: {text}", file=sys.stderr, flush=True)


def _fenced(text: str) -> str:
    return "```\n" + text.rstrip("\n") + "\n```"


def source_section(source, variant: Variant) -> Section:
    from proofs.source import report

    result = report.check(source, variant=variant)
    return Section("The shipped functions against the model", result["ok"], _fenced(report.render_text(result)), result)


def diff_section(release, source, variant: Variant) -> Section:
    from proofs.source import report

    result = report.diff(release, source, variant=variant)
    text = report.render_text(result)
    # A diff lists what changed; it fails only where a function cannot be compared.
    undecided = [n for n, e in result["functions"].items() if e.get("verdict") in ("UNKNOWN", "ERROR")]
    ok = not undecided
    note = "" if ok else f"\n\nNot decided: {', '.join(undecided)}."
    return Section("What the change alters of the release", ok, _fenced(text) + note, result)


def theorems_section(variant: Variant) -> Section:
    """Section 3: the ci-tier catalogue for `variant` against the manifest, as a table, and the
    counterexamples UNGUARDED is refuted at. OK when no entry of either run differs from the manifest."""
    from proofs.run.prove import ProveRequest, run_catalogue

    result, _ = run_catalogue(ProveRequest(variant=variant.name, export=False, cache=None))
    unguarded, _ = run_catalogue(ProveRequest(variant=UNGUARDED, export=False, cache=None))
    entries = result["entries"]
    differ = [e for e in entries if not e["ok"]]
    lines = [
        f"{len(entries)} entries for `{variant.name}` (tier ci), {len(differ)} differing from proofs/manifest.toml.",
        "",
        "| theorem | verdict | expected |",
        "|---|---|---|",
    ]
    lines += [f"| {e['theorem']} | {e['verdict']} | {e['expected']} |" for e in entries]
    refuted = [e for e in unguarded["entries"] if e["verdict"] == "REFUTED" and e.get("counterexample")]
    lines += [
        "",
        f"The counterexamples `{UNGUARDED}` (the change without its configuration check) has, each as the "
        "manifest expects:",
        "",
    ]
    for e in refuted:
        values = ", ".join(f"{k} = {v}" for k, v in e["counterexample"].items())
        lines.append(f"- `{e['theorem']}`: REFUTED at {values}")
    if not refuted:
        lines.append("- none")
    ok = not differ and all(e["ok"] for e in unguarded["entries"])
    return Section("The theorem catalogue", ok, "\n".join(lines), {"variant": result, UNGUARDED: unguarded})


def end_to_end_section(variant: Variant, workers, per_builtin: int) -> Section:
    """Section 4: `per_builtin` seeded cases per built-in deployment and budget, run on the real scheduler
    carrying the project's patch for `variant` (`workers` processes) against `gridproof simulate`, with the
    first ten disagreements. OK when some case ran and none disagrees."""
    from proofs.real_vllm import sweep

    total = sweep.Tally(variant.name)
    for index in range(len(sweep.builtin_deployments(variant))):
        cases = sweep.builtin_cases(variant, index, per_builtin)
        total.add(sweep.compare(cases, workers, variant))
    lines = [
        f"{total.cases} cases on the built-in deployments ({per_builtin} per deployment and budget, seeded), "
        f"on the real vLLM 0.33.0 scheduler and offload connector carrying the project's patch for "
        f"`{variant.name}`, each against `gridproof simulate`: {len(total.disagreements)} disagree, "
        f"{total.refused} refused by both."
    ]
    lines += ["", *(_fenced(d) for d in total.disagreements[:10])]
    data = {"cases": total.cases, "refused": total.refused, "disagreements": total.disagreements}
    return Section(
        "The real scheduler, patched, end to end", not total.disagreements and total.cases > 0, "\n".join(lines), data
    )


def regression_section(variant: Variant, workers) -> Section:
    from proofs.real_vllm import regression

    rows = regression.replay(variants=("baseline", variant.name), workers=workers)
    text = regression.render(rows) + "\n\n" + "\n".join(f"- {s.strip()}" for s in regression.summary(rows))
    data = {
        "rows": [
            {"variant": r.variant, "retention": r.retention, "claim": r.claim(), "disagreements": r.disagreements}
            for r in rows
        ]
    }
    return Section("The change's own validation, replayed", not any(r.disagreements for r in rows), text, data)


def review(
    source, release, variant: Variant, replayed_elsewhere: bool, per_builtin: int = E2E_PER_BUILTIN
) -> list[Section]:
    """Every section, in order; sections 4 and 5 only where the project has a patch for `variant`.
    `replayed_elsewhere`: `source` is not the project's patch for `variant` (a tree or a diff file of
    the reviewer's), which sections 4 and 5 do not run."""
    from proofs.real_vllm.end_to_end import PatchedCases, patch_for

    sections = []

    def timed(name: str, make) -> None:
        _say(f"{name} ...")
        started = time.perf_counter()
        section = make()
        section.seconds = time.perf_counter() - started
        _say(f"{name}: {'ok' if section.ok else 'NOT OK'} in {section.seconds:.0f} s")
        sections.append(section)

    timed("source", lambda: source_section(source, variant))
    timed("diff", lambda: diff_section(release, source, variant))
    timed("theorems", lambda: theorems_section(variant))
    if patch_for(variant) is None:
        sections.append(Section("The real scheduler", False, f"No project patch for `{variant.name}`: not run."))
        return sections
    workers = PatchedCases()
    try:
        timed("end to end", lambda: end_to_end_section(variant, workers, per_builtin))
        timed("regression", lambda: regression_section(variant, workers))
    finally:
        workers.close()
    if replayed_elsewhere:
        note = (
            "The change under review was read by the first three sections; this one and the next ran the "
            f"installed vLLM 0.33.0 with the project's patch for `{variant.name}` (patches/vllm-0.33.0/), "
            "not the change."
        )
        sections[3].text = note + "\n\n" + sections[3].text
    return sections


def markdown(sections: list[Section], subject: str) -> str:
    ok = all(s.ok for s in sections)
    lines = [
        f"# Review: {subject}",
        "",
        f"**{'OK' if ok else 'NOT OK'}**: "
        + ", ".join(f"{s.title.lower()} {'ok' if s.ok else 'NOT OK'}" for s in sections)
        + ".",
    ]
    for number, s in enumerate(sections, 1):
        lines += ["", f"## {number}. {s.title}: {'ok' if s.ok else 'NOT OK'}", "", s.text]
    return "\n".join(lines) + "\n"


def to_html(text: str) -> str:
    """The Markdown this module writes (headings, fenced blocks, pipe tables, lists, paragraphs), as HTML."""
    out, table, in_code = [], [], False

    def flush_table() -> None:
        if table:
            rows = [r for r in table if not set(r.replace("|", "").strip()) <= {"-"}]
            cells = [[c.strip() for c in r.strip().strip("|").split("|")] for r in rows]
            head, *body = cells
            out.append("<table><tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in head) + "</tr>")
            out.extend("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in body)
            out.append("</table>")
            table.clear()

    for line in text.splitlines():
        if line.startswith("```"):
            out.append("</pre>" if in_code else "<pre>")
            in_code = not in_code
        elif in_code:
            out.append(html.escape(line))
        elif line.startswith("|"):
            table.append(line)
        else:
            flush_table()
            if line.startswith("#"):
                level = len(line) - len(line.lstrip("#"))
                out.append(f"<h{level}>{html.escape(line[level:].strip())}</h{level}>")
            elif line.startswith("- "):
                out.append(f"<p>• {html.escape(line[2:])}</p>")
            elif line.strip():
                out.append(f"<p>{html.escape(line)}</p>")
    flush_table()
    style = (
        "body{font-family:sans-serif;max-width:80em;margin:auto}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:2px 6px}pre{background:#f6f6f6;padding:6px;overflow-x:auto}"
    )
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>gridproof review</title>'
        f"<style>{style}</style></head><body>\n" + "\n".join(out) + "\n</body></html>\n"
    )


def write(directory: Path, sections: list[Section], subject: str) -> None:
    """review.md, review.html and review.json, put in place whole (proofs/runtime/atomic.py)."""
    from proofs.runtime.atomic import fresh_directory_beside, put_in_place

    staging = fresh_directory_beside(directory, ".review-")
    text = markdown(sections, subject)
    (staging / "review.md").write_text(text, encoding="utf-8")
    (staging / "review.html").write_text(to_html(text), encoding="utf-8")
    data = {
        "subject": subject,
        "ok": all(s.ok for s in sections),
        "sections": [{"title": s.title, "ok": s.ok, "seconds": round(s.seconds, 1), "data": s.data} for s in sections],
    }
    (staging / "review.json").write_text(json.dumps(data, indent=1, default=str) + "\n", encoding="utf-8")
    put_in_place(staging, directory)
