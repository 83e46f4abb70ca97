"""One module per `gridproof` subcommand.

Each module exposes `add_parser(sub)`, which registers its subparser on the
`argparse` subparsers object `sub` (validation through `type=` and
`choices=`) and sets `run=` to the function that carries the command out
and returns its exit status. `proofs/cli.py` builds the parser from them.
"""
