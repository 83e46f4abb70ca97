"""The `gridproof` command: the parser built from one module per subcommand
(proofs/commands/), and `main`, which turns bad input into one line and exit 2."""

from __future__ import annotations

import os
import sys

from models.errors import GridproofError
from proofs.commands import mine, mutate, prove, report, simulate, source
from proofs.commands.arguments import Parser


def build_parser() -> Parser:
    parser = Parser(
        prog="gridproof",
        description="Prove where a hybrid model's recurrent checkpoints land, for vLLM 0.33.0 and PR457.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    simulate.add_parser(sub)
    prove.add_parser(sub)
    report.add_parser(sub)
    mine.add_parser(sub)
    mutate.add_parser(sub)
    source.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
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
