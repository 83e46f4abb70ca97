"""`gridproof record`: write again the records `gridproof prove` holds entries
to (proofs/run/recording.py), for every theorem or those named."""

from __future__ import annotations

import argparse
import sys

# The records, in the order they are written (proofs/run/recording.py: RECORDS).
RECORD_NAMES = ("edges", "needed", "inputs-read", "counterexamples", "domains")


def add_parser(sub) -> None:
    """Register `record`: --theorem NAME and --only RECORD, each repeatable."""
    parser = sub.add_parser(
        "record",
        help="write the records of proofs/recorded/ again (domain edges, needed hypotheses, inputs read, "
        "counterexamples, enumerated domain sizes) after a theorem or the model changed on purpose",
    )
    parser.add_argument(
        "--theorem",
        metavar="NAME",
        action="append",
        help="only this theorem (repeatable); every other theorem's entries are kept",
    )
    parser.add_argument(
        "--only",
        metavar="RECORD",
        action="append",
        choices=RECORD_NAMES,
        help=f"only this record (repeatable): {', '.join(RECORD_NAMES)} (default: all)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Write the records asked for again (all by default), for the theorems named or every one, and print each
    record's path; progress on stderr. Exit status 0, or 1 when writing fails (one line on stderr); an unknown
    theorem raises a GridproofError (exit 2)."""
    from models.errors import GridproofError, did_you_mean
    from proofs.catalog import CATALOGUE
    from proofs.run.recording import RECORDS, record

    for name in args.theorem or ():
        if name not in CATALOGUE:
            raise GridproofError(f"--theorem: unknown theorem {name!r}{did_you_mean(name, CATALOGUE)}")
    records = args.only or list(RECORD_NAMES)
    try:
        record(records, args.theorem, lambda line: print(line, file=sys.stderr, flush=True))
    except GridproofError as error:
        print(f"gridproof: error: {error}", file=sys.stderr)
        return 1
    for name in records:
        print(f"recorded: {RECORDS[name][0].path}")
    return 0
