"""Markdown: a summary that fits one screen (a pull-request comment) and the full report a reviewer
reads instead of the code."""

from __future__ import annotations

from proofs.run.result import (
    by_theorem,
    headline,
    is_mutant,
    is_ok,
    others,
    problems,
    selection_text,
    variants,
)

SUMMARY_MAX_LINES = 40


def cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def verdict_cell(entry: dict | None) -> str:
    if entry is None:
        return "·"
    if is_ok(entry):
        return entry["verdict"]
    return f"**{entry['verdict']}** ✗ (expected {entry['expected']})"


def overview_rows(result: dict) -> tuple[list[str], list[str]]:
    """The verdict table, one row per theorem: its header lines and its rows."""
    shown = variants(result["entries"])
    other = bool(others(result["entries"]))
    columns = [*shown, *(["other variants as expected"] if other else []), "mutants refuted"]
    header = ["| theorem | " + " | ".join(columns) + " |", "|---|" + "---|" * len(columns)]
    rows = []
    for theorem, group in by_theorem(result["entries"]).items():
        per_variant = {e["variant"]: e for e in group}
        cells = [verdict_cell(per_variant.get(v)) for v in shown]
        if other:
            cells.append(count_cell(others(group), lambda e: is_ok(e)))
        cells.append(count_cell([e for e in group if is_mutant(e["variant"])], lambda e: e["verdict"] == "REFUTED"))
        rows.append(f"| `{cell(theorem)}` | " + " | ".join(cells) + " |")
    return header, rows


def count_cell(entries: list[dict], counted) -> str:
    """How many of `entries` are `counted` (mutants refuted, other variants as expected), marked when one fails."""
    if not entries:
        return "–"
    text = f"{sum(1 for e in entries if counted(e))}/{len(entries)}"
    return f"**{text}** ✗" if any(not is_ok(e) for e in entries) else text


def failure_lines(result: dict) -> list[str]:
    lines = []
    for entry in result["entries"]:
        if not is_ok(entry):
            why = "; ".join(problems(entry))
            lines.append(
                f"- `{entry['theorem']} / {entry['variant']}`: {why}. Reproduce: `{entry.get('reproduce', '')}`"
            )
    return lines


def _fit(items: list[str], room: int, more: str) -> list[str]:
    if len(items) <= room:
        return items
    keep = max(room - 1, 0)
    return items[:keep] + [more.format(n=len(items) - keep)]


def render_summary(result: dict) -> str:
    """At most SUMMARY_MAX_LINES lines, whatever the size of the run: long lists are cut, and say where
    the rest is."""
    entries = result["entries"]
    mark = "✅" if entries and all(is_ok(e) for e in entries) else "❌"
    top = [
        f"### {mark} gridproof: {headline(result)}",
        "",
        f"z3 {result['z3_version']} · model `{str(result['model_hash'])[:12]}` · {selection_text(result)} · "
        f"{result['seconds']:.1f} s · rlimit {result['rlimit']:,} in all",
        "",
    ]
    header, rows = overview_rows(result)
    failing = failure_lines(result)
    against = (result.get("against") or {}).get("changes", [])
    brittleness = (result.get("brittleness") or {}).get("summary")
    tail = ["", "Full report with every statement, hypothesis and counterexample: `report.md`, `report.html`."]

    sections: list[list[str]] = []
    if failing:
        sections.append([f"**Failing ({len(failing)})**", *failing])
    if result.get("against"):
        old = result["against"].get("path", "the previous run")
        if against:
            sections.append([f"**Changed against `{old}` ({len(against)})**", *[f"- {c}" for c in against]])
        else:
            sections.append([f"No regression against `{old}`."])
    if brittleness:
        sections.append([f"**Seeds**: {brittleness}"])

    room = SUMMARY_MAX_LINES - len(top) - len(tail) - sum(1 + min(len(s), 3) for s in sections)
    # The table gets what is left after a few lines of each section; rows of failing theorems first.
    if len(header) + len(rows) > room:
        bad = [r for r in rows if "✗" in r]
        good = len(rows) - len(bad)
        rows = _fit(bad, max(room - len(header) - 1, 1), "| … {n} more failing theorems (report.md) | |")
        rows.append(f"| {good} more theorems, all as the manifest expects | |")
    lines = [*top, *header, *rows]
    budget = SUMMARY_MAX_LINES - len(lines) - len(tail)
    for section in sections:
        if budget <= 1:
            break
        shown = _fit(section, budget - 1, "- … {n} more in report.md")
        lines += ["", *shown]
        budget -= len(shown) + 1
    lines += tail
    return "\n".join(lines[:SUMMARY_MAX_LINES]) + "\n"


def _named(used: list[str]) -> set[str]:
    """The hypotheses `used` names: each as written, and, for one a theorem of several obligations names
    `obligation: hypothesis`, what follows each ": " in it."""
    names = set()
    for name in used:
        names.add(name)
        while ": " in name:
            name = name.split(": ", 1)[1]
            names.add(name)
    return names


def hypothesis_marks(entry: dict | None):
    """The mark of each hypothesis in the table for `entry`, as a function of the hypothesis: the
    entry's lists read into sets once, not once per hypothesis (a table row per hypothesis, a column
    per entry)."""
    if entry is None:
        return lambda hypothesis: "n/a"
    stated = set(entry.get("hypotheses", []))
    proved = entry["verdict"] == "PROVED"
    used, unconfirmed = _named(entry.get("hypotheses_used", [])), _named(entry.get("hypotheses_unconfirmed", []))

    def mark(hypothesis: str) -> str:
        if hypothesis not in stated:
            return "n/a"
        if not proved:
            return "–"
        if hypothesis not in used:
            return "unused"
        return "**used?**" if hypothesis in unconfirmed else "**used**"

    return mark


def hypothesis_mark(entry: dict | None, hypothesis: str) -> str:
    return hypothesis_marks(entry)(hypothesis)


def format_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def render_theorem(theorem: str, group: list[dict]) -> list[str]:
    """One theorem's section of the full report, as lines: its facts and statement, a row per variant, the
    hypotheses each real variant's proof used, ablations and conjuncts refuted alone, counterexamples or
    reasons, and the commands that reproduce each entry."""
    first = group[0]
    lines = [f"### `{theorem}`", ""]
    facts = [f"subject {first.get('subject') or '?'}", f"tier {first.get('tier') or '?'}"]
    if first.get("source"):
        facts.append(f"formula at `{first['source']}`")
    lines += [", ".join(facts), ""]
    if first.get("statement"):
        lines += [f"> {first['statement']}", ""]
    if first.get("enumeration"):
        lines += [f"{bounded_text(group)}", ""]

    lines += ["| variant | verdict | expected | rlimit | seconds | |", "|---|---|---|---:|---:|---|"]
    for e in group:
        mark = "✓" if is_ok(e) else "✗ " + "; ".join(problems(e))
        lines.append(
            f"| {cell(e['variant'])} | {e['verdict']} | {e['expected']} | {e['rlimit']:,} | "
            f"{e['seconds']:.2f} | {cell(mark)} |"
        )
    lines.append("")

    real = [e for e in group if not is_mutant(e["variant"])]
    hypotheses = list(dict.fromkeys(h for e in real for h in e.get("hypotheses", [])))
    if hypotheses and real:
        lines += [
            "Hypotheses: **used** = needed (without it, Z3 found a model of the rest that misses the goal); "
            "**used?** = kept, its deletion check undecided; unused = the proof did not need it; "
            "– = no proof (the verdict is not PROVED).",
            "",
            "| hypothesis | " + " | ".join(cell(e["variant"]) for e in real) + " |",
            "|---|" + "---|" * len(real),
        ]
        marks = [hypothesis_marks(e) for e in real]
        for h in hypotheses:
            lines.append(f"| {cell(h)} | " + " | ".join(mark(h) for mark in marks) + " |")
        lines.append("")

    for e in group:
        if e.get("ablations"):
            shown = ", ".join(f"`{h}` → {v}" for h, v in e["ablations"].items())
            lines += [f"Each hypothesis dropped in turn ({e['variant']}): {shown}.", ""]
        if e.get("conjuncts_alone"):
            shown = ", ".join(f"`{c}` → {v}" for c, v in e["conjuncts_alone"].items())
            lines += [f"Goal conjuncts refuted alone ({e['variant']}): {shown}.", ""]

    for e in group:
        if e.get("counterexample"):
            reason = f": {e['reason']}" if e.get("reason") else ""
            lines.append(f"Counterexample for **{e['variant']}** ({e['verdict']}){reason}:")
            values = ", ".join(f"{k} = {format_value(v)}" for k, v in e["counterexample"].items())
            lines += ["", f"    {values}", ""]
        elif e.get("reason") and e["verdict"] != "PROVED":
            lines += [f"{e['variant']}: {e['verdict']}: {e['reason']}", ""]

    lines += ["Reproduce:", "", "```"]
    lines += [e.get("reproduce", "") for e in group]
    lines += ["```", ""]
    return lines


def bounded_text(group: list[dict]) -> str:
    """What an enumerated theorem's verdicts rest on: its finite domain, not an SMT query."""
    first = group[0]["enumeration"]
    counts = ", ".join(f"{e['variant']} {e['enumeration'].get('cases', 0)}" for e in group if e.get("enumeration"))
    return (
        f"**Bounded**: decided by enumeration, not an SMT query; the engine model run on every case of the "
        f"domain: {first.get('domain', '')} (cases run: {counts})."
    )


def render_deployments() -> list[str]:
    """What the HTML report draws, in words: each built-in deployment's prefill per variant."""
    from models.geometry import builtin_geometry_names
    from proofs.report.drawings import deployment_captions

    lines = [
        "## Real deployments",
        "",
        "One prefill of each built-in geometry, as `gridproof simulate` computes it (drawn in `report.html`). "
        "A later identical request restores only a checkpoint that is published and lies on a target-attention "
        "boundary.",
        "",
    ]
    for name in sorted(builtin_geometry_names(), key=lambda n: (not n.startswith("kimi-k3"), n)):
        lines.append(f"- `{name}`")
        try:
            lines += [f"  - {caption}" for caption in deployment_captions(name)]
        except Exception as error:  # one broken geometry must not hide the others
            lines.append(f"  - not simulated: {type(error).__name__}: {error}")
    return [*lines, ""]


def render_report(result: dict) -> str:
    """The full report of a `prove` result: its facts, the verdict table, the failing entries, the changes
    against a previous run and the seeds' table where the result has them, the built-in deployments, and a
    section per theorem."""
    lines = [
        "# gridproof: proof report",
        "",
        f"**{headline(result)}**",
        "",
        "| | |",
        "|---|---|",
        f"| z3 | {result['z3_version']} |",
        f"| model hash | `{result['model_hash']}` (sha256 of models/, proofs/catalog/ and the manifest) |",
        f"| selection | {selection_text(result)} |",
        f"| time | {result['seconds']:.1f} s, rlimit {result['rlimit']:,} in all |",
        "",
        "Verdicts: PROVED holds for every geometry (no bound on any size), except for a theorem marked bounded, "
        "which holds on every case of the finite domain it names; REFUTED comes with a counterexample "
        "that was replayed on the concrete model; UNKNOWN, VACUOUS and ERROR are never a success.",
        "",
        "## Verdicts",
        "",
    ]
    header, rows = overview_rows(result)
    lines += [*header, *rows, ""]
    failing = failure_lines(result)
    if failing:
        lines += [f"## Failing ({len(failing)})", "", *failing, ""]
    against = result.get("against")
    if against:
        lines += [f"## Changes against `{against.get('path', 'the previous run')}`", ""]
        lines += [f"- {c}" for c in against.get("changes", [])] or ["No regression."]
        lines += [f"- note: {n}" for n in against.get("notes", [])]
        lines.append("")
    brittleness = result.get("brittleness")
    if brittleness:
        lines += ["## Seeds", "", brittleness.get("summary", ""), ""]
        lines += ["| theorem | variant | verdicts | rlimit min | rlimit max | CV |", "|---|---|---|---:|---:|---:|"]
        for row in brittleness.get("entries", []):
            verdicts = ", ".join(sorted(set(row["verdicts"].values())))
            flag = " ✗ flip" if row.get("flipped") else ""
            lines.append(
                f"| `{row['theorem']}` | {row['variant']} | {verdicts}{flag} | {row['rlimit_min']:,} | "
                f"{row['rlimit_max']:,} | {row['rlimit_cv'] * 100:.1f}% |"
            )
        lines.append("")
    lines += render_deployments()
    lines += ["## Theorems", ""]
    for theorem, group in by_theorem(result["entries"]).items():
        lines += render_theorem(theorem, group)
    return "\n".join(lines).rstrip() + "\n"
