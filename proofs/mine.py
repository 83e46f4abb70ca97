"""`gridproof mine`: distinct, minimal, explained counterexamples of a theorem,
replayed, and written as regression cases (proofs/mining.py, proofs/playback.py)."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path

from models.errors import GridproofError
from models.geometry import load_geometry
from proofs.mining import LADDER_EXTRA, QUERY_RLIMIT, Miner, MiningError, class_label
from proofs.playback import (
    DEFAULT_CORPUS,
    PlaybackError,
    case_document,
    check_real_vllm,
    describe_scenario,
    geometry_case,
    real_vllm,
    render_pytest,
    write_case,
)
from proofs.views import ViewError

FORMATS = ("text", "json", "pytest", "vllm-test")


class MineUsageError(GridproofError):
    """Bad input to `gridproof mine`: one line, exit status 2."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("theorem", help="a theorem of the catalogue, e.g. prefill-published-on-target-boundaries")
    parser.add_argument("--variant", default="baseline", help="baseline, pr457, pr457-guarded or mutant:NAME")
    parser.add_argument("--max", metavar="N", help="stop after N classes (default: every class the search reaches)")
    parser.add_argument(
        "--view",
        metavar="EXPR",
        action="append",
        help="a predicate over the theorem's inputs (e.g. 'budget0 < cadence'); the classes are the truth values "
        "of the views; repeatable; default: the theorem's own views",
    )
    parser.add_argument("--out", metavar="DIR", help=f"where to write the cases (default: {_relative(DEFAULT_CORPUS)})")
    parser.add_argument(
        "--format",
        default="text",
        help="text (default), json, pytest, or vllm-test (a pytest file for a vLLM checkout): what to print",
    )
    parser.add_argument("--rlimit", default=str(QUERY_RLIMIT), help=f"Z3 resource budget per query ({QUERY_RLIMIT})")
    parser.add_argument(
        "--ladder",
        default=str(LADDER_EXTRA),
        help=f"how far the size ladder climbs: size vectors up to this much above all-ones ({LADDER_EXTRA})",
    )
    parser.add_argument(
        "--geometry",
        help="instead of searching, record the case a geometry (a TOML file or built-in name) describes: its "
        "deployment, request and budget",
    )
    parser.add_argument(
        "--budget", help="with --geometry: tokens per step, comma-separated (default: the deployment's)"
    )
    parser.add_argument(
        "--no-vllm",
        action="store_true",
        help="do not replay baseline prefills through the real vLLM 0.33.0 now (loading it takes a while); "
        "tests/regressions replays every case there",
    )


def _relative(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _integer(name: str, text: str | None, minimum: int) -> int | None:
    if text is None:
        return None
    try:
        value = int(text)
    except ValueError:
        raise MineUsageError(f"{name}: expected an integer, got {text!r}") from None
    if value < minimum:
        kind = "positive" if minimum == 1 else "non-negative"
        raise MineUsageError(f"{name}: must be a {kind} integer, got {value}")
    return value


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
            parts += ["--budget", args.budget]
    if args.rlimit != str(QUERY_RLIMIT):
        parts += ["--rlimit", args.rlimit]
    if args.ladder != str(LADDER_EXTRA):
        parts += ["--ladder", args.ladder]
    return " ".join(shlex.quote(p) for p in parts)


def run(args: argparse.Namespace) -> int:
    max_classes = _integer("--max", args.max, 1)
    rlimit = _integer("--rlimit", args.rlimit, 1)
    ladder = _integer("--ladder", args.ladder, 0)
    if args.format not in FORMATS:
        raise MineUsageError(f"--format: expected one of {', '.join(FORMATS)}, got {args.format!r}")
    if args.budget and not args.geometry:
        raise MineUsageError("--budget: only with --geometry")
    out = Path(args.out) if args.out else DEFAULT_CORPUS
    if out.exists() and not out.is_dir():
        raise MineUsageError(f"--out: {out} exists and is not a directory")
    command = command_line(args)
    if args.geometry:
        return _record_geometry(args, out, command)
    progress = Progress()
    try:
        miner = Miner(
            args.theorem,
            args.variant,
            views=args.view,
            max_classes=max_classes,
            rlimit=rlimit,
            ladder=ladder,
            progress=progress,
        )
    except (MiningError, ViewError) as error:
        raise MineUsageError(str(error)) from None
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
        status = _replay_in_vllm(doc, args.no_vllm, progress)
        if status.startswith("error: "):
            errors.append(status.removeprefix("error: "))
            continue
        documents.append(doc)
        vllm.append(status)
        written.append(write_case(doc, out))
    progress.done()
    if args.format == "json":
        print(json.dumps(_json(result, documents, written, errors), indent=2))
    elif args.format == "pytest":
        print(render_pytest(documents), end="")
    elif args.format == "vllm-test":
        print(_vllm_test(documents, command), end="")
    else:
        print(_text(result, documents, written, vllm, errors))
    for error in errors:
        print(f"gridproof: error: {error}", file=sys.stderr)
    return 1 if errors else 0


def _replay_in_vllm(doc: dict, skip: bool, progress) -> str:
    """'' where no real-vLLM replay applies; otherwise what became of it."""
    if "real_vllm" not in doc:
        return ""
    if skip:
        return "not replayed now (--no-vllm); tests/regressions replays it"
    progress("loading the real vLLM 0.33.0")
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
        raise MineUsageError("--view: not with --geometry (a geometry is one case)")
    budgets = _budget_list(args.budget) if args.budget else [geometry.deployment.max_num_scheduled_tokens]
    try:
        doc = geometry_case(args.theorem, args.variant, geometry, budgets, command)
    except PlaybackError as error:
        print(f"gridproof: error: {error}", file=sys.stderr)
        return 1
    except KeyError:
        raise MineUsageError(f"unknown theorem {args.theorem!r}") from None
    status = _replay_in_vllm(doc, args.no_vllm, lambda _message: None)
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
    from proofs.vllm_test import render_documents

    try:
        return render_documents(documents, command)
    except ValueError as error:
        raise MineUsageError(f"--format vllm-test: {error}") from None


def _budget_list(text: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",")]
    except ValueError:
        raise MineUsageError(f"--budget: expected an integer or a comma-separated list, got {text!r}") from None
    if any(v <= 0 for v in values):
        raise MineUsageError(f"--budget: every budget must be a positive integer, got {text!r}")
    return values


def _json(result, documents, written, errors) -> dict:
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


def _text(result, documents, written, vllm, errors) -> str:
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
        f"{len(documents)} classes ({new} new files) in {result.seconds:.1f} s, rlimit {result.rlimit:,}, "
        f"{result.geometries} geometries decided"
        + (f", {result.undecided} undecided within the rlimit" if result.undecided else "")
        + (f"; {len(errors)} errors" if errors else "")
    )
    return "\n".join(lines)
