"""Drawings for the HTML report, made with matplotlib and embedded as inline SVG.

- `deployment_timeline`: one request's whole prefill on a real deployment (a built-in geometry), as
  `gridproof simulate` computes it, `baseline` above `pr457` on one token axis: the chunks and their
  ends, the states each chunk end leaves private or publishes, the recurrent states the prefix cache
  keeps once the request is done (what a later request restores from), the target-attention and
  draft boundaries, and the prefix a later identical request restores, from the GPU prefix cache and
  through offload.
- `counterexample_figure`: a counterexample of the chunk split on one token axis: its token positions,
  the tokens requested, and each block size among its inputs as its grid. Counterexamples are input
  values of a theorem's variables, not always a whole deployment, so nothing is drawn that the values
  do not say; the others are shown as a table only.
"""

from __future__ import annotations

import io
import re

import matplotlib
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, MaxNLocator

VARIANTS_DRAWN = ("baseline", "pr457")
MAX_LINES = 40  # boundaries drawn as full lines up to this count, as a comb of ticks beyond
MAX_TICKS = 600  # beyond this a grid is too dense to draw at all, and the legend says so
MAX_DRAWN = 10**15  # token positions a drawing's float axis still tells apart
ROW_GAP = 1.6  # vertical distance between the variants' rows

COLOURS = {
    "chunk": ("#d9dee7", "#bcc5d3"),
    "published": "#1f5fbf",
    "usable": "#e8590c",
    "private": "#6b7280",
    "target": "#2f9e44",
    "draft": "#9c36b5",
    "restored": "#2f9e44",
    "offload": "#74c0fc",
}


def _tokens(x, _pos=None) -> str:
    return f"{int(x):,}"


def to_svg(figure: Figure) -> str:
    """The figure as an inline <svg> element: no XML declaration, no DOCTYPE, no external reference."""
    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": "gridproof", "svg.fonttype": "path"}):
        figure.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": "gridproof"})
    svg = buffer.getvalue()
    svg = svg[svg.index("<svg") :]
    svg = re.sub(r"<metadata>.*?</metadata>", "", svg, flags=re.S)
    return svg


def _every(values: list[int]) -> int | None:
    gaps = {b - a for a, b in zip(values, values[1:], strict=False)}
    if values and len(gaps) == 1 and values[0] == next(iter(gaps)):
        return values[0]
    return None


def _grid(span: int, end: int) -> list[int]:
    """The multiples of `span` up to `end`; past MAX_TICKS of them, only the first MAX_TICKS + 1 (too
    dense to draw, which is all the callers ask of them)."""
    if span <= 0:
        return []
    return list(range(span, min(end, span * (MAX_TICKS + 1)) + 1, span))


def simulate_deployment(geometry_name: str) -> tuple[object, int, dict, dict]:
    """The geometry, its budget, and per variant drawn its simulated prefill or why there is none."""
    from models.geometry import load_geometry
    from models.variants import get_variant
    from proofs.deployment.simulate import simulate

    geometry = load_geometry(geometry_name)
    budget = geometry.deployment.max_num_scheduled_tokens
    runs = {}
    problems = {}
    for name in VARIANTS_DRAWN:
        try:
            runs[name] = simulate(get_variant(name), geometry, budget)
        except Exception as error:  # a configuration a variant rejects is shown, not hidden
            problems[name] = f"{type(error).__name__}: {error}"
    return geometry, budget, runs, problems


def usable_checkpoints(run: dict) -> list[int]:
    """The recurrent states the prefix cache keeps once the request is done: what a later request
    can restore from (with the attention blocks keyed up to them)."""
    return list(run["cached"]["recurrent_states"])


def _tokens(value: int | None, why: str | None) -> str:
    return f"{value:,}" if value is not None else f"none: {why or 'not modelled'}"


def describe(run: dict) -> str:
    """One variant's prefill in a sentence: what its drawing shows."""
    every = _every(run["published"])
    usable = usable_checkpoints(run)
    pieces = [f"{len(run['chunk_ends'])} chunks"]
    pieces.append(f"publishes every {every:,} tokens" if every else f"publishes {len(run['published'])} states")
    kept = f"keeps {len(usable)} state{'s' if len(usable) != 1 else ''}" if usable else "keeps no state"
    pieces.append(kept + (f", the last at {usable[-1]:,}" if usable else ""))
    pieces.append(f"restores {_tokens(run['reuse'], run.get('engine_failure'))}")
    return f"{run['variant']}: " + ", ".join(pieces)


def deployment_captions(geometry_name: str) -> list[str]:
    """The sentences under a deployment's drawing, without drawing it (for the Markdown report)."""
    _, _, runs, problems = simulate_deployment(geometry_name)
    return [_caption(name, runs, problems) for name in VARIANTS_DRAWN]


def _caption(name: str, runs: dict, problems: dict) -> str:
    if name in problems:
        return f"{name}: not simulated ({problems[name]})."
    run = runs[name]
    return describe(run) + f" (offload restores {_tokens(run['reuse_offload'], run.get('offload_note'))})."


def deployment_timeline(geometry_name: str) -> tuple[str, list[str]]:
    """The SVG and, per variant, a sentence saying what it shows (the figure's text alternative)."""
    geometry, budget, runs, problems = simulate_deployment(geometry_name)
    end = max([r["tokens"] for r in runs.values()] + [1])

    figure = Figure(figsize=(11, 1.3 + 1.75 * len(VARIANTS_DRAWN)), layout="constrained")
    ax = figure.add_subplot()
    rows = {name: ROW_GAP * (len(VARIANTS_DRAWN) - 1 - i) for i, name in enumerate(VARIANTS_DRAWN)}
    captions = [_caption(name, runs, problems) for name in rows]
    for name, y in rows.items():
        if name in problems:
            ax.text(end / 2, y, f"{name}: {problems[name]}", ha="center", va="center", fontsize=9, color="#b00020")
        else:
            _draw_variant(ax, runs[name], y, end)
    ax.set_xlim(0, end * 1.005)
    ax.set_ylim(-0.8, ROW_GAP * (len(VARIANTS_DRAWN) - 1) + 0.72)
    ax.set_yticks(
        list(rows.values()),
        [
            f"{name}\ncadence {runs[name]['cadence']:,}" if name in runs else name
            for name in rows  # keep the order of rows
        ],
        fontsize=10,
    )
    ax.xaxis.set_major_formatter(FuncFormatter(_tokens))
    ax.set_xlabel("tokens of the prompt")
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    ax.tick_params(axis="y", length=0)
    prompt = next(iter(runs.values()))["prompt_tokens"] if runs else 0
    ax.set_title(f"one {prompt:,}-token prefill, budget {budget:,} tokens per step", fontsize=10, loc="left")
    ax.legend(
        handles=_legend(runs), loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=4, fontsize=8.5, frameon=False
    )
    return to_svg(figure), captions


def _draw_variant(ax, run: dict, y: float, end: int) -> None:
    # chunks, alternating shades so that every chunk end is an edge
    bars = [(s["start"], max(s["end"] - s["start"], 0)) for s in run["steps"]]
    shades = [COLOURS["chunk"][i % 2] for i in range(len(bars))]
    ax.broken_barh(bars, (y - 0.13, 0.26), facecolors=shades, edgecolors="white", linewidth=0.6)

    # target-attention boundaries: full lines when few, a comb of ticks above the chunks when dense
    spans = sorted(set(run["target_spans"]))
    for span in spans:
        marks = _grid(span, end)
        if len(marks) <= MAX_LINES:
            ax.vlines(marks, y - 0.36, y + 0.46, colors=COLOURS["target"], linestyles="dashed", linewidth=0.9, zorder=1)
        elif len(marks) <= MAX_TICKS:
            ax.vlines(marks, y + 0.15, y + 0.24, colors=COLOURS["target"], linewidth=0.5, zorder=1)
    # draft (EAGLE) boundaries: a comb of short ticks under the chunks
    for group in run["groups"]:
        if group["kind"] == "draft-attention":
            marks = _grid(group["span"], end)
            if len(marks) <= MAX_TICKS:
                ax.vlines(marks, y - 0.24, y - 0.15, colors=COLOURS["draft"], linewidth=0.6, zorder=1)

    ax.scatter(
        run["private"], [y] * len(run["private"]), s=26, facecolors="white", edgecolors=COLOURS["private"], zorder=3
    )
    usable = usable_checkpoints(run)
    others = [p for p in run["published"] if p not in usable]
    ax.scatter(others, [y] * len(others), s=26, color=COLOURS["published"], zorder=3)
    ax.scatter(usable, [y] * len(usable), s=70, marker="D", color=COLOURS["usable"], edgecolors="black", zorder=4)

    # the prefix a later identical request restores
    restored, offload = run["reuse"] or 0, run["reuse_offload"]
    ax.broken_barh([(0, restored)], (y + 0.27, 0.11), facecolors=COLOURS["restored"], zorder=2)
    inside = restored > end * 0.15
    ax.text(
        restored - end * 0.004 if inside else restored,
        y + 0.325,
        f"restored {restored:,}" if inside else f" restored {restored:,}",
        va="center",
        ha="right" if inside else "left",
        fontsize=8,
        color="white" if inside else COLOURS["restored"],
        fontweight="bold",
        zorder=5,
    )
    if offload is not None and offload != restored:
        ax.broken_barh([(0, offload)], (y + 0.40, 0.05), facecolors=COLOURS["offload"], zorder=2)

    if usable:
        _mark_first(ax, usable[0], y, COLOURS["usable"])
    if run["published"] and (not usable or run["published"][0] != usable[0]):
        _mark_first(ax, run["published"][0], y, COLOURS["published"])
    ax.text(
        0,
        y + 0.6,
        describe(run),
        fontsize=9,
        va="center",
        bbox={"facecolor": "white", "edgecolor": "none", "pad": 1.0},
        zorder=6,
    )


def _legend(runs: dict) -> list:
    run = next(iter(runs.values()), None)
    target = "target-attention boundary"
    draft = "draft (EAGLE) boundary"
    if run:
        target += " (" + ", ".join(f"every {s:,}" for s in sorted(set(run["target_spans"]))) + ")"
        spans = [g["span"] for g in run["groups"] if g["kind"] == "draft-attention"]
        if spans:
            draft += f" (every {spans[0]:,})"
    handles = [
        Patch(facecolor=COLOURS["chunk"][0], edgecolor=COLOURS["chunk"][1], label="chunk (one step)"),
        Line2D(
            [],
            [],
            marker="o",
            linestyle="",
            markerfacecolor="white",
            markeredgecolor=COLOURS["private"],
            label="private state",
        ),
        Line2D([], [], marker="o", linestyle="", color=COLOURS["published"], label="published checkpoint"),
        Line2D(
            [],
            [],
            marker="D",
            linestyle="",
            color=COLOURS["usable"],
            markeredgecolor="black",
            label="kept in the prefix cache",
        ),
        Line2D([], [], color=COLOURS["target"], linestyle="dashed", label=target),
    ]
    if run and any(g["kind"] == "draft-attention" for g in run["groups"]):
        handles.append(Line2D([], [], color=COLOURS["draft"], label=draft))
    handles.append(Patch(facecolor=COLOURS["restored"], label="restored prefix (GPU prefix cache)"))
    if any(r["reuse_offload"] not in (None, r["reuse"]) for r in runs.values()):
        handles.append(Patch(facecolor=COLOURS["offload"], label="restored from offload"))
    return handles


POSITIONS = ("computed", "prompt", "tokens", "local_hit", "external_hit", "junction")  # token positions of a step
REQUESTED = "requested"  # tokens asked for, from `computed` on


def counterexample_figure(values: dict, sizes: set[str]) -> str | None:
    """A counterexample of the chunk split (proofs/catalog/base.py: the split call's token positions) on
    one token axis: the positions, the tokens requested from `computed` on, and each block size, span or
    cadence among its inputs (`sizes`) as its grid of multiples. None for counterexamples without
    token positions: their table says all there is."""
    ints = {k: v for k, v in values.items() if isinstance(v, int) and not isinstance(v, bool)}
    points = {k: ints[k] for k in POSITIONS if k in ints and ints[k] >= 0}
    grids = {k: v for k, v in ints.items() if k in sizes and v > 0}
    if not points or max(abs(v) for v in ints.values()) > MAX_DRAWN:
        return None  # nothing to place, or beyond what a float axis holds: the table says it all
    start = ints.get("computed", 0)
    asked = ints.get(REQUESTED)
    end = max([*points.values(), start + (asked or 0), *grids.values(), 1])
    end = end * 1.06 + 1
    if not any(end / size <= MAX_TICKS for size in grids.values()):
        return None  # no grid can be drawn at this scale: the table says as much as a drawing would
    figure = Figure(figsize=(11, 1.4 + 0.3 * (len(set(grids.values())) + 1) + 0.9), layout="constrained")
    ax = figure.add_subplot()
    labels = []
    same: dict[int, list[str]] = {}  # inputs of equal size share one row
    for name, size in grids.items():
        same.setdefault(size, []).append(name)
    ordered_grids = [(_names(names), size) for size, names in sorted(same.items())]
    for y, (name, size) in enumerate(ordered_grids):
        marks = [0, *_grid(size, int(end))]
        ax.hlines(y, 0, end, colors="#e5e7eb", linewidth=0.6)
        if len(marks) <= MAX_TICKS:
            ax.vlines(marks, y - 0.3, y + 0.3, colors=COLOURS["target"], linewidth=1.6, zorder=3)
            labels.append(f"grid of {name} = {size:,}")
        else:
            labels.append(f"{name} = {size:,} (grid too dense to draw)")
    row = len(ordered_grids)
    if asked is not None:
        ax.broken_barh([(start, max(asked, 0))], (row - 0.2, 0.4), facecolors=COLOURS["chunk"][1])
        ax.text(start, row, f" requested = {asked:,}", va="center", ha="left", fontsize=8)
        labels.append("requested from computed")
        row += 1
    ordered = sorted(points.items(), key=lambda kv: (kv[1], kv[0]))
    for i, (name, value) in enumerate(ordered):
        level = row + 0.45 * (i % 4)
        ax.vlines(value, -0.5, level - 0.05, colors=COLOURS["published"], linewidth=0.9, alpha=0.55, zorder=1)
        ax.text(value, level, f"{name} = {value:,}", ha="center", va="bottom", fontsize=8, color=COLOURS["published"])
    ax.set_yticks(range(len(labels)), labels, fontsize=8.5)
    ax.set_xlim(-end * 0.01, end)
    ax.set_ylim(-0.6, row + 0.45 * min(len(ordered), 4) + 0.3)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.xaxis.set_major_formatter(FuncFormatter(_tokens))
    ax.set_xlabel("tokens")
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    ax.tick_params(axis="y", length=0)
    return to_svg(figure)


SHOWN_NAMES = 3  # inputs named in one row's label; the others counted


def _names(names: list[str]) -> str:
    """The inputs of one size, as a label of bounded length: a counterexample of many groups has a dozen
    inputs of size 1, whose label, written whole, was wider than the figure (matplotlib then warned that
    the layout collapsed, once per such figure)."""
    if len(names) <= SHOWN_NAMES:
        return ", ".join(names)
    return f"{', '.join(names[:SHOWN_NAMES])} and {len(names) - SHOWN_NAMES} more"


def _mark_first(ax, position: int, y: float, colour: str) -> None:
    """The position of a run's first usable or published state, under its bar."""
    ax.annotate(
        f"{position:,}",
        xy=(position, y),
        xytext=(position, y - 0.62),
        ha="center",
        fontsize=9,
        fontweight="bold",
        color=colour,
        arrowprops={"arrowstyle": "-", "color": colour, "linewidth": 0.8},
    )
