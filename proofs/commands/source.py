"""`gridproof source`: the shipped vLLM functions, executed symbolically,
against the model or against another release (proofs/source/)."""

from __future__ import annotations

import argparse
import json

from proofs.commands.arguments import path_text
from proofs.source.equivalence import FUNCTIONS


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not 0 < value <= 86_400:
        raise argparse.ArgumentTypeError(f"expected seconds between 0 and 86400, got {text!r}")
    return value


def add_parser(sub) -> None:
    """Register `source`: --vllm, --vllm-version or --diff A B, --variant, --patch, --function, budgets."""
    parser = sub.add_parser(
        "source", help="prove the shipped vLLM functions equivalent to the model (or diff two releases)"
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--vllm", metavar="PATH", type=path_text, help="a vLLM checkout, an unpacked wheel or a .whl file"
    )
    where.add_argument("--vllm-version", metavar="X.Y.Z", help="the installed vLLM if that version, else its wheel")
    where.add_argument(
        "--diff",
        nargs=2,
        metavar=("A", "B"),
        type=path_text,
        help="two releases (X.Y.Z, or X.Y.Z+PATCH: a release with one of the project's patches) or paths, "
        "function by function",
    )
    parser.add_argument(
        "--variant",
        metavar="NAME",
        help="the model to prove the functions equivalent to: baseline (vLLM 0.33.0, the default), pr457, "
        "pr457-guarded or vllm-0.34.0; with --patch NAME, NAME by default; with --vllm-version X.Y.Z, that "
        "release's",
    )
    parser.add_argument(
        "--patch",
        metavar="NAME|FILE",
        type=path_text,
        help="apply one of the project's patches (patches/vllm-X.Y.Z/NAME.diff) or a diff file to the release "
        "(--vllm-version, --vllm, else the installed vLLM) in a cache directory, and read that",
    )
    parser.add_argument(
        "--function",
        choices=FUNCTIONS,
        action="append",
        help="only this function (repeatable)",
    )
    parser.add_argument("--json", action="store_true", help="the result as JSON")
    parser.add_argument("--no-theorems", action="store_true", help="skip the split theorems on the shipped split")
    parser.add_argument(
        "--budget",
        metavar="SECONDS",
        type=_seconds,
        help="wall-clock budget per function (and for the split theorems together), then UNKNOWN after a concrete "
        "search of 12 s (default 120)",
    )
    parser.add_argument(
        "--check-budget", metavar="SECONDS", type=_seconds, help="wall-clock budget per Z3 check (default 20)"
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """With --diff, each function of A against B's; else the source given (patched with --patch) against the
    variant's model, with the split theorems unless --no-theorems; printed as text or JSON. Exit status 0 when
    every function is decided (--diff) or all PROVED, else 1."""
    from models.variants import RELEASES
    from proofs.source import budget, report
    from proofs.source.patches import patched_source, spec_source
    from proofs.source.releases import source_for, variant_for

    with budget.configured(args.budget, args.check_budget):
        if args.diff:
            if args.patch:
                from models.errors import GridproofError

                raise GridproofError("--patch: give the patched side of --diff as X.Y.Z+PATCH")
            a, b = (spec_source(spec) for spec in args.diff)
            b_side = args.diff[1] if "+" in args.diff[1] else None
            variant = variant_for(args.variant, b_side)
            result = report.diff(a, b, _names(args, variant, every=True), variant=variant)
        else:
            source = source_for(path=args.vllm, version=args.vllm_version)
            if args.patch:
                source = patched_source(source, args.patch)
            variant = variant_for(args.variant, args.patch)
            if args.variant is None and not args.patch and args.vllm_version in RELEASES:
                variant = RELEASES[args.vllm_version]  # the release's own model
            result = report.check(source, _names(args, variant), theorems=not args.no_theorems, variant=variant)
    print(json.dumps(result, indent=2) if args.json else report.render_text(result))
    return 0 if result["ok"] else 1


def _names(args: argparse.Namespace, variant, every: bool = False):
    """The functions asked for, each one the variant's code has (with
    --diff, any: one side may have it)."""
    if not args.function:
        return None
    from models.errors import GridproofError
    from models.variants import VARIANTS
    from proofs.source.equivalence import subjects

    if not every:
        mine = subjects(variant)
        for name in args.function:
            if name not in mine:
                having = [v for v in VARIANTS if name in subjects(VARIANTS[v])]
                if not having:
                    raise GridproofError(f"--function {name}: no model states it; compare releases with --diff A B")
                raise GridproofError(
                    f"--function {name}: not a function of {variant.name} (it is {', '.join(having)}'s): give --variant"
                )
    return tuple(dict.fromkeys(args.function))
