"""`gridproof source`: the shipped vLLM functions, executed symbolically,
against the model or against another release (proofs/source/)."""

from __future__ import annotations

import argparse
import json

from proofs.commands.arguments import path_text
from proofs.source.report import DEFAULT_FUNCTIONS, FUNCTIONS


def add_parser(sub) -> None:
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
        help="two releases (X.Y.Z) or paths, function by function",
    )
    parser.add_argument(
        "--function",
        choices=FUNCTIONS,
        action="append",
        help="only this function (repeatable)",
    )
    parser.add_argument("--json", action="store_true", help="the result as JSON")
    parser.add_argument("--no-theorems", action="store_true", help="skip the split theorems on the shipped split")
    parser.set_defaults(run=run)


def _source(spec: str):
    from proofs.source.releases import is_release, source_for

    return source_for(version=spec) if is_release(spec) else source_for(path=spec)


def run(args: argparse.Namespace) -> int:
    from proofs.source import report
    from proofs.source.releases import source_for

    names = tuple(args.function) if args.function else DEFAULT_FUNCTIONS
    if args.diff:
        result = report.diff(_source(args.diff[0]), _source(args.diff[1]), names)
    else:
        source = source_for(path=args.vllm, version=args.vllm_version)
        result = report.check(source, names, theorems=not args.no_theorems)
    print(json.dumps(result, indent=2) if args.json else report.render_text(result))
    return 0 if result["ok"] else 1
