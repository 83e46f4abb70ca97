"""The `gridproof` command."""

from __future__ import annotations

import argparse
import json
import os
import sys

from models.errors import GridproofError
from models.geometry import load_geometry
from models.variants import get_variant
from proofs.commands import check
from proofs.solver import DEFAULT_RLIMIT


class UsageError(GridproofError):
    """Bad input from the command line: one line, exit status 2."""


def _budgets(text: str) -> int | list[int]:
    try:
        values = [int(part) for part in text.split(",")]
    except ValueError:
        raise UsageError(f"--budget: expected an integer or a comma-separated list, got {text!r}") from None
    if any(v <= 0 for v in values):
        raise UsageError(f"--budget: every budget must be a positive integer, got {text!r}")
    return values[0] if len(values) == 1 else values


def _positive(name: str, text: str | None) -> int | None:
    if text is None:
        return None
    try:
        value = int(text)
    except ValueError:
        raise UsageError(f"{name}: expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise UsageError(f"{name}: must be a positive integer, got {value}")
    return value


def cmd_simulate(args: argparse.Namespace) -> int:
    from proofs.simulate import render_text, simulate

    geometry = load_geometry(args.geometry)
    variant = get_variant(args.variant)
    budgets = _budgets(args.budget) if args.budget is not None else geometry.deployment.max_num_scheduled_tokens
    prompt = _positive("--prompt-tokens", args.prompt_tokens)
    result = simulate(variant, geometry, budgets, prompt_tokens=prompt)
    print(json.dumps(result, indent=2) if args.json else render_text(result))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gridproof",
        description="Prove where a hybrid model's recurrent checkpoints land, for vLLM 0.33.0 and PR457.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    sim = sub.add_parser("simulate", help="run one request's prefill and show chunk ends, states and reuse")
    sim.add_argument("geometry", help="a geometry TOML file, or a built-in name such as kimi-k3-tp16-dcp16")
    sim.add_argument("--variant", default="baseline", help="baseline, pr457, pr457-guarded or mutant:NAME")
    sim.add_argument("--prompt-tokens", help="override the geometry's prompt length")
    sim.add_argument(
        "--budget",
        help="tokens per step: one number, or a comma-separated list, one per step, the last repeating "
        "(default: the deployment's max_num_scheduled_tokens)",
    )
    sim.add_argument("--json", action="store_true", help="print a JSON object instead of a table")
    sim.set_defaults(run=cmd_simulate)

    prove = sub.add_parser("prove", help="decide the theorem catalogue and compare with the manifest")
    prove.add_argument(
        "--variant", help="only this variant or mutant:NAME; several, comma-separated, are decided in manifest order"
    )
    prove.add_argument("--theorem", help="only this theorem (any tier)")
    prove.add_argument("--tier", default="ci", help="ci (default: the catalogue CI runs), slow, or all")
    prove.add_argument(
        "--rlimit",
        help=f"Z3 resource budget per obligation, for every theorem (default: the manifest's, else {DEFAULT_RLIMIT})",
    )
    prove.add_argument("--json", action="store_true", help="print the result as JSON")
    prove.add_argument("--jobs", help="obligations decided at once, one process each (default: one per core)")
    add_evidence_arguments(prove)
    prove.set_defaults(run=cmd_prove)
    add_report_parser(sub)
    add_mine_parser(sub)
    check.add_parser(sub)
    return parser


def cmd_prove(args: argparse.Namespace) -> int:
    from proofs.prove import prove

    rlimit = _positive("--rlimit", args.rlimit)
    if args.tier not in ("ci", "slow", "all"):
        raise UsageError(f"--tier: expected ci, slow or all, got {args.tier!r}")
    seed = _seed(args.seed)
    jobs = _positive("--jobs", args.jobs)
    run = {
        "theorem": args.theorem,
        "variant": args.variant,
        "tier": args.tier,
        "rlimit": rlimit,
        "as_json": args.json,
        "seed": seed,
        "jobs": jobs,
    }
    if args.report_dir or args.against or args.seeds:
        return cmd_prove_with_evidence(args, run)
    return prove(**run)


# --- evidence: report files, run-to-run diff, seeds (proofs/report/) ---------------------------------


def add_evidence_arguments(prove: argparse.ArgumentParser) -> None:
    prove.add_argument("--seed", help="Z3 random seed for every query (default: Z3's own)")
    prove.add_argument(
        "--report-dir",
        metavar="DIR",
        help="also write result.json, summary.md, report.md, report.html, junit.xml, results.sarif "
        "and smt2/ (one file per obligation) to DIR",
    )
    prove.add_argument(
        "--against",
        metavar="OLD.json",
        help="compare with a previous `gridproof prove --json` result: exit 1 on a verdict change, a new "
        "UNKNOWN, a changed expectation, a proof needing an extra hypothesis, or rlimit growth",
    )
    prove.add_argument(
        "--rlimit-growth",
        metavar="PERCENT",
        default="50",
        help="with --against: rlimit growth per obligation that counts as a regression (default 50)",
    )
    prove.add_argument(
        "--seeds",
        metavar="K",
        help="rerun every obligation under Z3 seeds 1..K: report verdict flips (exit 1) and the rlimit spread",
    )


def add_report_parser(sub) -> None:
    from proofs.report import FORMATS

    report = sub.add_parser("report", help="render a saved result (gridproof prove --json) in another format")
    report.add_argument("result", metavar="RESULT.json", help="a result written by `gridproof prove --json`")
    report.add_argument("--format", default="md", help=f"one of {', '.join(FORMATS)} (default md)")
    report.add_argument("--out", metavar="FILE", help="write to FILE instead of standard output")
    report.set_defaults(run=cmd_report)


def _seed(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        value = int(text)
    except ValueError:
        raise UsageError(f"--seed: expected a non-negative integer, got {text!r}") from None
    if value < 0:
        raise UsageError(f"--seed: must be a non-negative integer, got {value}")
    return value


def _percent(name: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise UsageError(f"{name}: expected a percentage such as 50, got {text!r}") from None
    if not value >= 0 or value == float("inf"):
        raise UsageError(f"{name}: must be a non-negative number, got {text!r}")
    return value


def cmd_prove_with_evidence(args: argparse.Namespace, run: dict) -> int:
    """`run`: the selection and options cmd_prove parsed."""
    from pathlib import Path

    from proofs.report.evidence import prove_with_evidence

    seeds = _positive("--seeds", args.seeds) or 0
    growth = _percent("--rlimit-growth", args.rlimit_growth)
    return prove_with_evidence(
        **run,
        report_dir=Path(args.report_dir) if args.report_dir else None,
        against=Path(args.against) if args.against else None,
        rlimit_growth=growth,
        seeds=seeds,
    )


def cmd_report(args: argparse.Namespace) -> int:
    from pathlib import Path

    from proofs.report import FORMATS, load_result, render

    if args.format not in FORMATS:
        raise UsageError(f"--format: expected one of {', '.join(FORMATS)}, got {args.format!r}")
    text = render(load_result(args.result), args.format)
    if args.out is None:
        sys.stdout.write(text)
        return 0
    try:
        Path(args.out).write_text(text, encoding="utf-8")
    except OSError as error:
        raise UsageError(f"--out: cannot write {args.out}: {error.strerror}") from None
    return 0


# --- mining: distinct minimal counterexamples into regression cases (proofs/mine.py) -----------------


def add_mine_parser(sub) -> None:
    from proofs.mine import add_arguments

    mine = sub.add_parser("mine", help="enumerate distinct, minimal counterexamples and write them as regression cases")
    add_arguments(mine)
    mine.set_defaults(run=cmd_mine)


def cmd_mine(args: argparse.Namespace) -> int:
    from proofs.mine import MineUsageError, run

    try:
        return run(args)
    except MineUsageError as error:
        raise UsageError(str(error)) from None


# ------------------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except GridproofError as error:
        print(f"gridproof: error: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader went away (`gridproof prove --json | head`): stop quietly, and keep the interpreter
        # from complaining when it flushes stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
