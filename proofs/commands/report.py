"""`gridproof report`: a saved result (`gridproof prove --json`) in another format."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from proofs.commands.arguments import UsageError, path_text
from proofs.report import FORMATS


def add_parser(sub) -> None:
    parser = sub.add_parser("report", help="render a saved result (gridproof prove --json) in another format")
    parser.add_argument("result", metavar="RESULT.json", help="a result written by `gridproof prove --json`")
    parser.add_argument("--format", default="md", choices=FORMATS, help="the rendering (default md)")
    parser.add_argument(
        "--out", metavar="FILE", type=path_text, help="write to FILE instead of standard output (whole or not at all)"
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from proofs.report import load_result, render

    text = render(load_result(args.result), args.format)
    if args.out is None:
        sys.stdout.write(text)
        return 0
    from proofs.runtime.atomic import write_text

    try:
        write_text(Path(args.out), text)
    except OSError as error:
        raise UsageError(f"--out: cannot write {args.out}: {error.strerror}") from None
    return 0
