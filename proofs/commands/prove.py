"""`gridproof prove`: decide the theorem catalogue, compare with the manifest,
and optionally write the evidence (report files, a diff against an earlier
result, reruns under other seeds)."""

from __future__ import annotations

import argparse
from pathlib import Path

from proofs.commands.arguments import (
    Once,
    UsageError,
    path_name,
    percentage,
    positive_integer,
    variant_names,
    z3_rlimit,
    z3_seed,
    z3_seed_count,
)
from proofs.engine.solver import DEFAULT_RLIMIT


def add_parser(sub) -> None:
    """Register `prove`: the selection, --rlimit, --seed(s), --jobs, outputs, --against, --confirm, cache."""
    parser = sub.add_parser("prove", help="decide the theorem catalogue and compare with the manifest")
    parser.add_argument(
        "--variant",
        type=variant_names,
        action=Once,
        help="only this variant or mutant:NAME; several, comma-separated, are decided in manifest order",
    )
    parser.add_argument("--theorem", action=Once, help="only this theorem (any tier)")
    parser.add_argument(
        "--tier", default="ci", choices=("ci", "slow", "all"), help="ci (default: the catalogue CI runs), slow, or all"
    )
    parser.add_argument(
        "--rlimit",
        type=z3_rlimit,
        help=f"Z3 resource budget per obligation, for every theorem (default: the manifest's, else {DEFAULT_RLIMIT})",
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="print every entry with its hypotheses and reproducing command (default: those that differ)",
    )
    parser.add_argument(
        "--jobs", type=positive_integer, help="obligations decided at once, one process each (default: one per core)"
    )
    parser.add_argument("--seed", type=z3_seed, help="Z3 random seed for every query (default: Z3's own)")
    parser.add_argument(
        "--report-dir",
        metavar="DIR",
        type=path_name,
        help="also write result.json, summary.md, report.md, report.html, junit.xml, results.sarif "
        "and smt2/ (one file per obligation) to DIR",
    )
    parser.add_argument(
        "--against",
        metavar="OLD.json",
        type=path_name,
        help="compare with a previous `gridproof prove --json` result: exit 1 on a verdict change, a new "
        "UNKNOWN, a changed expectation, a proof needing an extra hypothesis, or rlimit growth",
    )
    parser.add_argument(
        "--rlimit-growth",
        metavar="PERCENT",
        type=percentage,
        default=50.0,
        help="with --against: rlimit growth per obligation that counts as a regression (default 50)",
    )
    parser.add_argument(
        "--seeds",
        metavar="K",
        type=z3_seed_count,
        default=0,
        help="rerun every obligation under Z3 seeds 1..K: report verdict flips (exit 1) and the rlimit spread",
    )
    parser.add_argument(
        "--confirm",
        choices=["cvc5"],
        help="pose every exported query to a second solver and report, per entry, whether it agrees "
        "(exit 1 on a disagreement; unknown within its budget is reported, not a failure)",
    )
    cache = parser.add_mutually_exclusive_group()
    cache.add_argument(
        "--cache",
        metavar="DIR",
        type=path_name,
        help="reuse an entry decided before when everything its decision reads is identical (its queries' text, "
        "the data files, the records, the z3 version and the solver's options) and it passes every check, and "
        "store new ones (default: $XDG_CACHE_HOME/gridproof or ~/.cache/gridproof)",
    )
    cache.add_argument("--no-cache", action="store_true", help="decide every entry, and store none")
    parser.add_argument(
        "--verify-cache",
        action="store_true",
        help="decide every PROVED the cache holds again, the one part of a cached entry no replay checks "
        "(a cache restored from elsewhere); a cached REFUTED is replayed in any case",
    )
    parser.set_defaults(run=run)


def cache_directory(args: argparse.Namespace) -> tuple[Path | None, bool]:
    """The proof cache named, or the default one, and whether it was named.
    A default that cannot be made (a read-only home) or written is left out
    with a note: the run is the same without it. A directory named with
    --cache that cannot be used is an error before any work (proofs/run/prove.py)."""
    from proofs.run.cache import default_directory

    if args.no_cache:
        return None, False
    if args.cache:
        return args.cache, True
    return default_directory(), False


def run(args: argparse.Namespace) -> int:
    """Decide the selection and write its evidence (proofs/report/evidence.py). Exit status 1 on a failing
    entry or none at all, a seed's flip, a regression against --against or a --confirm disagreement, else 0;
    --verify-cache with --no-cache raises a UsageError (exit 2)."""
    from proofs.report.evidence import ReportRequest, prove_with_evidence
    from proofs.run.prove import ProveRequest

    if args.verify_cache and args.no_cache:
        raise UsageError("--verify-cache: there is no cache to verify with --no-cache")
    directory, named = cache_directory(args)
    request = ProveRequest(
        theorem=args.theorem,
        variant=args.variant,
        tier=args.tier,
        rlimit=args.rlimit,
        seed=args.seed,
        jobs=args.jobs,
        cache=directory,
        cache_named=named,
        verify_cache=args.verify_cache,
    )
    report = ReportRequest(
        as_json=args.json,
        verbose=args.verbose,
        report_dir=args.report_dir,
        against=args.against,
        rlimit_growth=args.rlimit_growth,
        seeds=args.seeds,
        confirm_with=args.confirm,
    )
    return prove_with_evidence(request, report)
