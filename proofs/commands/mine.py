"""`gridproof mine`: distinct, minimal, explained counterexamples of a theorem,
replayed, and written as regression cases (proofs/mining/miner.py, proofs/mining/playback.py)."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path

from models.geometry import load_geometry
from proofs.commands.arguments import (
    DEFAULT_VARIANT,
    VARIANT_HELP,
    UsageError,
    budgets,
    non_negative_integer,
    path_name,
    positive_integer,
    variant_name,
    z3_rlimit,
)
from proofs.mining.miner import LADDER_EXTRA, QUERY_RLIMIT, Miner, MiningError, class_label
from proofs.mining.playback import (
    DEFAULT_CORPUS,
    REPO,
    PlaybackError,
    case_document,
    check_real_vllm,
    describe_scenario,
    geometry_case,
    real_vllm,
    real_vllm_loaded,
    render_pytest,
    write_case,
)
from proofs.mining.views import ViewError

FORMATS = ("text", "json", "pytest", "vllm-test")
ELSEWHERE = "gridproof-regressions"  # the default --out outside the checkout


def default_out() -> Path:
    """The checkout's corpus when mining from the checkout; otherwise a directory here, so that mining
    from an installed gridproof never writes into the installation."""
    return DEFAULT_CORPUS if Path.cwd().resolve() == REPO else Path(ELSEWHERE)


def add_parser(sub) -> None:
    """Register `mine THEOREM`: --variant, --max, --view, --out, --format, --rlimit, --ladder, --geometry."""
    parser = sub.add_parser(
        "mine", help="enumerate distinct, minimal counterexamples and write them as regression cases"
    )
    parser.add_argument("theorem", help="a theorem of the catalogue, e.g. prefill-published-on-target-boundaries")
    parser.add_argument("--variant", default=DEFAULT_VARIANT, type=variant_name, help=VARIANT_HELP)
    parser.add_argument(
        "--max",
        metavar="N",
        type=positive_integer,
        help="stop after N classes (default: every class the search reaches)",
    )
    parser.add_argument(
        "--view",
        metavar="EXPR",
        action="append",
        help="a predicate over the theorem's inputs (e.g. 'budget0 < cadence'); the classes are the truth values "
        "of the views; repeatable; default: the theorem's own views",
    )
    parser.add_argument(
        "--out",
        metavar="DIR",
        type=path_name,
        help="where to write the cases (default: tests/regressions, the corpus the tests replay, when run from the "
        f"gridproof checkout; from anywhere else ./{ELSEWHERE}, never the checkout's tests/)",
    )
    parser.add_argument("--format", default="text", choices=FORMATS, help="what to print (default text)")
    parser.add_argument(
        "--rlimit", default=QUERY_RLIMIT, type=z3_rlimit, help=f"Z3 resource budget per query ({QUERY_RLIMIT})"
    )
    parser.add_argument(
        "--ladder",
        default=LADDER_EXTRA,
        type=non_negative_integer,
        help=f"how far the size ladder climbs: size vectors up to this much above all-ones ({LADDER_EXTRA})",
    )
    parser.add_argument(
        "--geometry",
        help="instead of searching, record the case a geometry (a TOML file or built-in name) describes: its "
        "deployment, request and budget",
    )
    parser.add_argument(
        "--budget", type=budgets, help="with --geometry: tokens per step, comma-separated (default: the deployment's)"
    )
    parser.add_argument(
        "--no-vllm",
        action="store_true",
        help="do not replay baseline prefills through the real vLLM 0.33.0 now (loading it takes a while); "
        "tests/regressions replays every case there",
    )
    parser.set_defaults(run=run)


def _relative(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


class Progress:
    """One status line on stderr once a run passes two seconds: rewritten in
    place on a terminal, a line every ten seconds otherwise."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.tty = sys.stderr.isatty()
        self.last = float("-inf")
        self.shown = False

    def __call__(self, message: str) -> None:
        now = time.perf_counter() - self.started
        if now < 2:
            return
        if self.tty:
            print(f"\r\033[Kmine: {message}", end="", file=sys.stderr, flush=True)
            self.shown = True
        elif now - self.last >= 10:
            print(f"mine: {message}", file=sys.stderr, flush=True)
            self.last = now

    def announce(self, message: str) -> None:
        """A line of its own at once, whatever the time: a class found, a slow step beginning."""
        self.done()
        self.shown = False
        print(f"mine: {message}", file=sys.stderr, flush=True)

    def done(self) -> None:
        if self.shown:
            print("\r\033[K", end="", file=sys.stderr, flush=True)


def command_line(args: argparse.Namespace) -> str:
    parts = ["gridproof", "mine", args.theorem, "--variant", args.variant]
    for view in args.view or []:
        parts += ["--view", view]
    if args.geometry:
        parts += ["--geometry", args.geometry]
        if args.budget:
            parts += ["--budget", ",".join(map(str, args.budget))]
    if args.rlimit != QUERY_RLIMIT:
        parts += ["--rlimit", str(args.rlimit)]
    if args.ladder != LADDER_EXTRA:
        parts += ["--ladder", str(args.ladder)]
    return " ".join(shlex.quote(p) for p in parts)


def run(args: argparse.Namespace) -> int:
    """Mine the theorem's counterexample classes (or record the case --geometry describes), replay each,
    through the real vLLM unless --no-vllm, write each into --out as a regression case, and print them in
    --format; errors on stderr. Exit status 1 on any error, else 0; bad input raises a UsageError (exit 2)."""
    if args.budget and not args.geometry:
        raise UsageError("--budget: only with --geometry")
    out = args.out or default_out()
    try:
        if out.exists() and not out.is_dir():
            raise UsageError(f"--out: {out} exists and is not a directory")
    except OSError as error:
        raise UsageError(f"--out: cannot use {out}: {error.strerror}") from None
    command = command_line(args)
    if args.geometry:
        return _record_geometry(args, out, command)
    progress = Progress()
    try:
        miner = Miner(
            args.theorem,
            args.variant,
            views=args.view,
            max_classes=args.max,
            rlimit=args.rlimit,
            ladder=args.ladder,
            progress=progress,
            found=lambda number, found, views: progress.announce(f"class {number} found: {class_label(found, views)}"),
        )
    except (MiningError, ViewError) as error:
        raise UsageError(str(error)) from None
    try:  # found unusable before the mining, not after it
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UsageError(f"--out: cannot make {out}: {error.strerror}") from None
    result = miner.run()
    errors = [f"{p.obligation}: {p.message}: {json.dumps(p.inputs)}" for p in result.problems]
    documents, written, vllm = [], [], []
    for found in result.found:
        progress(f"replaying class {len(documents) + 1} of {len(result.found)}")
        try:
            doc = case_document(found, result.views, command)
        except PlaybackError as error:
            errors.append(str(error))
            continue
        status = _replay_in_vllm(doc, args.no_vllm, progress.announce)
        if status.startswith("error: "):
            errors.append(status.removeprefix("error: "))
            continue
        documents.append(doc)
        vllm.append(status)
        written.append(write_case(doc, out))
    progress.done()
    wall = time.perf_counter() - progress.started
    if args.format == "json":
        print(json.dumps(_json(result, documents, written, errors, wall), indent=2))
    elif args.format == "pytest":
        print(render_pytest(documents), end="")
    elif args.format == "vllm-test":
        print(_vllm_test(documents, command), end="")
    else:
        print(_text(result, documents, written, vllm, errors, wall))
    for error in errors:
        print(f"gridproof: error: {error}", file=sys.stderr)
    return 1 if errors else 0


def _replay_in_vllm(doc: dict, skip: bool, announce) -> str:
    """'' where no real-vLLM replay applies; otherwise what became of it."""
    if "real_vllm" not in doc:
        return ""
    if skip:
        return "not replayed now (--no-vllm); tests/regressions replays it"
    if not real_vllm_loaded():
        announce("loading the real vLLM 0.33.0 to replay the baseline prefill (--no-vllm skips this)")
    real = real_vllm()
    if real is None:
        return "not replayed now: vLLM 0.33.0 is not installed (bash tests/install-conformance.sh)"
    try:
        off = check_real_vllm(doc, real)
    except PlaybackError as error:
        return f"error: {error}"
    return f"the same steps, and it publishes off target too: {off}"


def _record_geometry(args: argparse.Namespace, out: Path, command: str) -> int:
    geometry = load_geometry(args.geometry)
    if args.view:
        raise UsageError("--view: not with --geometry (a geometry is one case)")
    steps = args.budget or [geometry.deployment.max_num_scheduled_tokens]
    try:
        doc = geometry_case(args.theorem, args.variant, geometry, steps, command)
    except PlaybackError as error:
        print(f"gridproof: error: {error}", file=sys.stderr)
        return 1
    except KeyError:
        raise UsageError(f"unknown theorem {args.theorem!r}") from None
    status = _replay_in_vllm(doc, args.no_vllm, lambda message: print(f"mine: {message}", file=sys.stderr))
    if status.startswith("error: "):
        print(f"gridproof: error: {status.removeprefix('error: ')}", file=sys.stderr)
        return 1
    written = write_case(doc, out)
    if args.format == "json":
        print(json.dumps(doc, indent=2))
    elif args.format == "pytest":
        print(render_pytest([doc]), end="")
    elif args.format == "vllm-test":
        print(_vllm_test([doc], command), end="")
    else:
        figures = doc["geometry_figures"][args.variant]
        print(f"{geometry.name} / {args.variant}: {args.theorem} fails")
        print(f"    published {_positions(figures['published'])}")
        print(
            f"    on every target boundary {_positions(figures['published_on_every_target'])}; "
            f"first shared {figures['first_shared']}, restored by a later identical request {figures['restored']}"
        )
        for fix in doc["fixes"]:
            print(f"    fix: {fix['variant']}: {fix['why']}: {fix['expected'][fix['variant']]}")
        if status:
            print(f"    real vLLM 0.33.0 split: {status}")
        print(f"    {_written(written)}")
    return 0


def _vllm_test(documents: list[dict], command: str) -> str:
    from proofs.mining.vllm_test import render_documents

    try:
        return render_documents(documents, command)
    except ValueError as error:
        raise UsageError(f"--format vllm-test: {error}") from None


def _json(result, documents, written, errors, wall: float) -> dict:
    return {
        "theorem": result.theorem,
        "variant": result.variant,
        "views": [{"view": v.text, "label": v.label} for v in result.views],
        "classes": len(documents),
        "cases": [{**doc, "file": str(w.path), "new": w.new} for doc, w in zip(documents, written, strict=True)],
        "complete": result.complete,
        "stop": result.stop,
        "geometries": result.geometries,
        "undecided_geometries": result.undecided,
        "seconds": round(result.seconds, 3),
        "wall_seconds": round(wall, 3),
        "rlimit": result.rlimit,
        "errors": errors,
    }


def _written(w) -> str:
    return f"{'wrote' if w.new else 'kept'} {_relative(w.path)}" + (f" ({w.note})" if w.note else "")


def _positions(values: list[int]) -> str:
    shown = [f"{v:,}" for v in values]
    if len(shown) > 10:
        shown = shown[:5] + [f"... ({len(values) - 8} more) ..."] + shown[-3:]
    return ", ".join(shown) or "none"


def _text(result, documents, written, vllm, errors, wall: float) -> str:
    lines = [
        f"{result.theorem} / {result.variant}: {len(documents)} distinct "
        f"class{'es' if len(documents) != 1 else ''} of counterexample",
        "views: " + "; ".join(f"{v.label} [{v.text}]" if v.label != v.text else v.text for v in result.views),
        "",
    ]
    found_by_doc = [f for f in result.found if any(d["inputs"] == f.inputs for d in documents)]
    for i, (doc, found, w, status) in enumerate(zip(documents, found_by_doc, written, vllm, strict=True), 1):
        lines.append(f"class {i}: {class_label(found, result.views)}")
        sizes = ", ".join(f"{k}={v}" for k, v in found.sizes.items() if v != 1)
        rest = ", ".join(f"{k}={v}" for k, v in found.inputs.items() if k not in found.sizes)
        if found.sizes:
            lines.append(f"    sizes: {sizes} (the others 1)" if sizes else "    sizes: every size 1")
        lines.append(f"    inputs: {rest}")
        if "scenario" in doc:
            lines += [f"    {line}" for line in describe_scenario(doc["scenario"])]
        e = found.explanation
        lines.append(f"    free: {', '.join(e.free) or 'none'}")
        if e.matters:
            lines.append("    matters: " + ", ".join(f"{k} (= {v} makes it hold)" for k, v in e.matters.items()))
        if e.pinned:
            lines.append(f"    pinned by the hypotheses: {', '.join(e.pinned)}")
        if e.undetermined:
            lines.append(f"    undetermined: {', '.join(e.undetermined)}")
        outcomes = ", ".join(f"{v} {o}" for v, o in doc["expected"].items())
        lines.append(f"    same inputs: {outcomes}")
        for fix in doc["fixes"]:
            lines.append(f"    fix: {fix['variant']} with {fix['changes']}: {fix['expected'][fix['variant']]}")
        if status:
            lines.append(f"    real vLLM 0.33.0 split: {status}")
        lines.append(f"    minimal: {found.minimal}")
        lines.append(f"    {_written(w)}")
        lines.append("")
    new = sum(w.new for w in written)
    lines.append(f"stop: {result.stop}")
    lines.append(
        f"{len(documents)} classes ({new} new files) in {wall:.1f} s "
        f"({result.seconds:.1f} s of search, the rest replay{' and loading vLLM' if any(vllm) else ''}), "
        f"rlimit {result.rlimit:,}, "
        f"{result.geometries} geometries decided"
        + (f", {result.undecided} undecided within the rlimit" if result.undecided else "")
        + (f"; {len(errors)} errors" if errors else "")
    )
    return "\n".join(lines)
