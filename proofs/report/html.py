"""HTML: one self-contained file (inline CSS and SVG, no script, no external reference) with the
drawings: each real deployment's prefill, `baseline` above `pr457`, and each counterexample."""

from __future__ import annotations

from html import escape

from proofs.report import drawings
from proofs.report.markdown import bounded_text, format_value, hypothesis_marks
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

STYLE = """
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; color: #1f2933;
       max-width: 1180px; margin: 0 auto; padding: 24px; background: #fff; }
h1 { font-size: 26px; margin: 0 0 4px; } h2 { font-size: 21px; margin-top: 36px; border-bottom: 2px solid #e4e7eb; }
h3 { font-size: 17px; margin: 28px 0 6px; } code, pre { font: 13px ui-monospace, "DejaVu Sans Mono", monospace; }
h2 code, h3 code, h4 code { font-size: 0.95em; }
.cex { display: grid; grid-template-columns: repeat(auto-fill, minmax(190px, 1fr)); gap: 2px 16px; margin: 6px 0;
       padding: 8px 10px; background: #fafbfc; border: 1px solid #e4e7eb; border-radius: 4px; }
.used { color: #14532d; font-weight: 700; }
pre { background: #f5f7fa; padding: 8px 10px; overflow-x: auto; border-radius: 4px; }
table { border-collapse: collapse; margin: 8px 0 12px; } th, td { border: 1px solid #d9dee7; padding: 3px 8px;
       text-align: left; vertical-align: top; } th { background: #f5f7fa; } td.num { text-align: right; }
.ok { color: #1b7f3b; } .bad { color: #b00020; font-weight: bold; }
.v { display: inline-block; padding: 0 6px; border-radius: 3px; font-size: 13px; font-weight: 600; }
.PROVED { background: #d3f9d8; color: #14532d; } .REFUTED { background: #ffe3c4; color: #7a3000; }
.UNKNOWN, .VACUOUS, .ERROR { background: #ffd6d9; color: #8a0010; }
.banner { padding: 10px 14px; border-radius: 6px; font-size: 17px; font-weight: 600; margin: 12px 0; }
.banner.good { background: #ebfbee; border: 1px solid #8ce99a; }
.banner.bad { background: #fff0f0; border: 1px solid #ffa8a8; }
figure { margin: 12px 0 24px; } figure svg { max-width: 100%; height: auto; display: block; }
figcaption { font-size: 14px; color: #3e4c59; } blockquote { margin: 6px 0; padding: 4px 12px;
       border-left: 4px solid #b3bcc9; background: #fafbfc; } .muted { color: #616e7c; font-size: 13px; }
"""


def badge(verdict: str) -> str:
    return f'<span class="v {escape(verdict)}">{escape(verdict)}</span>'


def _facts(result: dict) -> str:
    rows = [
        ("z3", result["z3_version"]),
        (
            "model hash",
            f"<code>{escape(str(result['model_hash']))}</code> (sha256 of models/, proofs/catalog/, manifest)",
        ),
        ("selection", escape(selection_text(result))),
        ("time", f"{result['seconds']:.1f} s, rlimit {result['rlimit']:,} in all"),
    ]
    return "<table>" + "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in rows) + "</table>"


def _overview(result: dict) -> str:
    shown = variants(result["entries"])
    other = bool(others(result["entries"]))
    columns = [*shown, *(["other variants as expected"] if other else []), "mutants refuted"]
    head = "<tr><th>theorem</th>" + "".join(f"<th>{escape(v)}</th>" for v in columns) + "</tr>"
    body = []
    for theorem, group in by_theorem(result["entries"]).items():
        per = {e["variant"]: e for e in group}
        cells = []
        for v in shown:
            e = per.get(v)
            if e is None:
                cells.append("<td>·</td>")
            else:
                flag = "" if is_ok(e) else f' <span class="bad">✗ expected {escape(e["expected"])}</span>'
                cells.append(f"<td>{badge(e['verdict'])}{flag}</td>")
        if other:
            cells.append(_count_cell(others(group), is_ok))
        cells.append(_count_cell([e for e in group if is_mutant(e["variant"])], lambda e: e["verdict"] == "REFUTED"))
        body.append(
            f'<tr><td><a href="#{escape(theorem)}"><code>{escape(theorem)}</code></a></td>{"".join(cells)}</tr>'
        )
    return f"<table>{head}{''.join(body)}</table>"


def _count_cell(entries: list[dict], counted) -> str:
    if not entries:
        return "<td>–</td>"
    cls = "bad" if any(not is_ok(e) for e in entries) else "ok"
    return f'<td class="{cls}">{sum(1 for e in entries if counted(e))}/{len(entries)}</td>'


def _deployments(result: dict) -> str:
    from models.geometry import builtin_geometry_names
    from proofs.run.runner import model_sources_hash

    names = builtin_geometry_names()
    names.sort(key=lambda n: (not n.startswith("kimi-k3"), n))  # the Kimi-K3 story first
    parts = [
        "<h2>Real deployments: one prefill, <code>baseline</code> above <code>pr457</code></h2>",
        '<p class="muted">Each built-in geometry (<code>models/geometries/</code>) simulated as '
        "<code>gridproof simulate GEOMETRY --variant V</code> does. A later identical request restores from a "
        "recurrent state the prefix cache keeps once the request is done (orange diamonds), with the attention "
        "blocks keyed up to it.</p>",
    ]
    current = model_sources_hash()
    if current != result.get("model_hash"):
        parts.append(
            f'<p class="bad">These drawings come from the model as it is now (hash {escape(current[:12])}), '
            f"not from the sources of this run (hash {escape(str(result.get('model_hash'))[:12])}).</p>"
        )
    for name in names:
        try:
            svg, captions = drawings.deployment_timeline(name)
        except Exception as error:  # one broken geometry must not hide the others
            parts.append(
                f"<h3>{escape(name)}</h3><p class='bad'>not drawn: "
                f"{escape(type(error).__name__)}: {escape(str(error))}</p>"
            )
            continue
        caption = "<br>".join(escape(c) for c in captions)
        parts.append(
            f'<h3 id="geometry-{escape(name)}">{escape(name)}</h3>'
            f"<figure>{svg}<figcaption>{caption}</figcaption></figure>"
        )
    return "\n".join(parts)


def _size_names(theorem: str) -> set[str]:
    try:
        from proofs.catalog import CATALOGUE
    except Exception:  # a result read where the catalogue does not import: draw no grids
        return set()
    found = CATALOGUE.get(theorem)
    if found is None:
        return set()
    obligations = [*found.obligations, *([found.trace_search] if found.trace_search else [])]
    return {v.name for o in obligations for v in o.variables if v.size}


def _mark_cell(mark: str) -> str:
    if mark.startswith("**"):
        return f'<td class="used">{escape(mark.strip("*"))}</td>'
    return f"<td>{escape(mark)}</td>"


MAX_FIGURES = 60  # counterexample drawings per report: each takes matplotlib about 0.1 s


class _Figures:
    """The counterexample drawings of one report: each distinct one drawn once, and at most
    MAX_FIGURES in all; the others are shown as their tables alone (a result of 33,000 refuted
    entries took an hour drawing them)."""

    def __init__(self) -> None:
        self.drawn: dict[tuple, str | None] = {}
        self.left_out = 0

    def figure(self, values: dict, sizes: set[str]) -> str | None:
        key = (tuple(sorted((k, repr(v)) for k, v in values.items())), frozenset(sizes))
        if key not in self.drawn:
            if len(self.drawn) >= MAX_FIGURES:
                self.left_out += 1
                return None
            self.drawn[key] = drawings.counterexample_figure(values, sizes)
        return self.drawn[key]


def _theorem(theorem: str, group: list[dict], figures: _Figures | None = None) -> str:
    figures = figures or _Figures()
    first = group[0]
    out = [f'<h3 id="{escape(theorem)}"><code>{escape(theorem)}</code></h3>']
    facts = [f"subject {escape(first.get('subject') or '?')}", f"tier {escape(first.get('tier') or '?')}"]
    if first.get("source"):
        facts.append(f"formula at <code>{escape(first['source'])}</code>")
    out.append(f'<p class="muted">{", ".join(facts)}</p>')
    if first.get("statement"):
        out.append(f"<blockquote>{escape(first['statement'])}</blockquote>")
    if first.get("enumeration"):
        out.append(f"<p>{escape(bounded_text(group).replace('**', ''))}</p>")

    rows = []
    for e in group:
        status = (
            '<span class="ok">✓</span>' if is_ok(e) else f'<span class="bad">✗ {escape("; ".join(problems(e)))}</span>'
        )
        rows.append(
            f"<tr><td>{escape(e['variant'])}</td><td>{badge(e['verdict'])}</td><td>{escape(e['expected'])}</td>"
            f'<td class="num">{e["rlimit"]:,}</td><td class="num">{e["seconds"]:.2f}</td><td>{status}</td></tr>'
        )
    out.append(
        "<table><tr><th>variant</th><th>verdict</th><th>expected</th><th>rlimit</th><th>seconds</th><th></th></tr>"
        + "".join(rows)
        + "</table>"
    )

    real = [e for e in group if not is_mutant(e["variant"])]
    hypotheses = list(dict.fromkeys(h for e in real for h in e.get("hypotheses", [])))
    if hypotheses and real:
        head = "<tr><th>hypothesis</th>" + "".join(f"<th>{escape(e['variant'])}</th>" for e in real) + "</tr>"
        marks = [hypothesis_marks(e) for e in real]
        body = "".join(
            f"<tr><td>{escape(h)}</td>" + "".join(_mark_cell(mark(h)) for mark in marks) + "</tr>" for h in hypotheses
        )
        out.append(
            '<p class="muted">Hypotheses: <b>used</b> = needed (without it, Z3 found a model of the rest that '
            "misses the goal); <b>used?</b> = kept, its deletion check undecided; unused = not needed; "
            "– = no proof to use it (the verdict is not PROVED).</p>"
            f"<table>{head}{body}</table>"
        )
    for e in group:
        if e.get("ablations"):
            shown = ", ".join(f"<code>{escape(h)}</code> → {badge(v)}" for h, v in e["ablations"].items())
            out.append(f"<p>Each hypothesis dropped in turn ({escape(e['variant'])}): {shown}</p>")
        if e.get("conjuncts_alone"):
            shown = ", ".join(f"<code>{escape(c)}</code> → {badge(v)}" for c, v in e["conjuncts_alone"].items())
            out.append(f"<p>Goal conjuncts refuted alone ({escape(e['variant'])}): {shown}</p>")

    sizes = _size_names(theorem)
    for e in group:
        values = e.get("counterexample")
        if not values:
            if e.get("reason") and e["verdict"] != "PROVED":
                out.append(f"<p>{escape(e['variant'])}: {badge(e['verdict'])} {escape(e['reason'])}</p>")
            continue
        reason = f": {escape(e['reason'])}" if e.get("reason") else ""
        cells = "".join(
            f"<div><code>{escape(k)}</code> = <b>{escape(format_value(v))}</b></div>" for k, v in values.items()
        )
        out.append(
            f"<h4>Counterexample for {escape(e['variant'])} ({escape(e['verdict'])}){reason}</h4>"
            f'<div class="cex">{cells}</div>'
        )
        svg = figures.figure(values, sizes)
        if svg:
            out.append(
                f"<figure>{svg}<figcaption>The counterexample's token positions on one axis, the tokens requested "
                "from <code>computed</code> on, and each block size among its inputs as its grid of multiples."
                "</figcaption></figure>"
            )
    commands = "\n".join(escape(e.get("reproduce", "")) for e in group)
    out.append(f"<p>Reproduce:</p><pre>{commands}</pre>")
    return "\n".join(out)


def render_html(result: dict, deployments: bool = True) -> str:
    """The result as one self-contained HTML page: the headline banner and facts, failing entries, changes
    against a previous run, the verdict table, the deployments' drawings (unless `deployments` is False), a
    section per theorem with its counterexamples drawn, and the seeds' table where the result has one."""
    entries = result["entries"]
    good = bool(entries) and all(is_ok(e) for e in entries)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>gridproof: proof report</title>",
        f"<style>{STYLE}</style></head><body>",
        "<h1>gridproof: proof report</h1>",
        '<p class="muted">Where a hybrid model\'s recurrent checkpoints land, for vLLM 0.33.0 '
        "(<code>baseline</code>) and PR457 (<code>pr457</code>, <code>pr457-guarded</code>). PROVED holds for every "
        "geometry, except for a theorem marked bounded, which holds on every case of the finite domain it names; "
        "REFUTED comes with a counterexample replayed on the concrete model; UNKNOWN, VACUOUS and ERROR are "
        "never a success.</p>",
        f'<div class="banner {"good" if good else "bad"}">{escape(headline(result))}</div>',
        _facts(result),
    ]
    failing = [e for e in entries if not is_ok(e)]
    if failing:
        items = "".join(
            f"<li><code>{escape(e['theorem'])} / {escape(e['variant'])}</code>: {escape('; '.join(problems(e)))}. "
            f"<code>{escape(e.get('reproduce', ''))}</code></li>"
            for e in failing
        )
        parts.append(f"<h2>Failing ({len(failing)})</h2><ul>{items}</ul>")
    against = result.get("against")
    if against:
        items = "".join(f"<li>{escape(c)}</li>" for c in against.get("changes", [])) or "<li>No regression.</li>"
        notes = "".join(f"<li class='muted'>note: {escape(n)}</li>" for n in against.get("notes", []))
        parts.append(f"<h2>Changes against <code>{escape(against.get('path', ''))}</code></h2><ul>{items}{notes}</ul>")
    seeds = result.get("brittleness")
    if seeds:
        parts.append(f'<p><b>Seeds</b>: {escape(seeds.get("summary", ""))} (<a href="#seeds">table</a>)</p>')
    parts += ["<h2>Verdicts</h2>", _overview(result)]
    if deployments:
        parts.append(_deployments(result))
    parts.append("<h2>Theorems</h2>")
    figures = _Figures()
    theorems = [_theorem(t, g, figures) for t, g in by_theorem(entries).items()]
    if figures.left_out:
        parts.append(
            f'<p class="muted">{len(figures.drawn)} distinct counterexamples are drawn; '
            f"{figures.left_out} more are shown as their values alone.</p>"
        )
    parts += theorems
    if seeds:
        rows = "".join(
            f"<tr><td><code>{escape(r['theorem'])}</code></td><td>{escape(r['variant'])}</td>"
            f"<td>{' '.join(badge(v) for v in sorted(set(r['verdicts'].values())))}"
            f"{' <span class=bad>flip</span>' if r['flipped'] else ''}</td>"
            f"<td class='num'>{r['rlimit_min']:,}</td><td class='num'>{r['rlimit_max']:,}</td>"
            f"<td class='num'>{r['rlimit_cv'] * 100:.1f}%</td></tr>"
            for r in seeds.get("entries", [])
        )
        parts.append(
            f'<h2 id="seeds">Seeds</h2>'
            f"<p>{escape(seeds.get('summary', ''))}</p><table><tr><th>theorem</th><th>variant</th>"
            f"<th>verdicts</th><th>rlimit min</th><th>rlimit max</th><th>CV</th></tr>{rows}</table>"
        )
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
