"""`gridproof review`: one command for the evidence a reviewer of PR457 reads (proofs/review.py)."""

from __future__ import annotations

import argparse

from proofs.commands.arguments import path_text

DEFAULT_PATCH = "pr457-guarded"


def _per_builtin(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 1000:
        raise argparse.ArgumentTypeError(f"expected a whole number of cases from 1 to 1000, got {text!r}")
    return int(text)


def add_parser(sub) -> None:
    """Register `review`: --vllm PATH or --patch NAME|FILE, --variant, --out DIR, --cases-per-deployment."""
    parser = sub.add_parser(
        "review",
        help="the review evidence for a change to vLLM's hybrid caching: source, diff, theorems, the real "
        "scheduler end to end, and the change's own validation, as Markdown and HTML",
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--vllm",
        metavar="PATH",
        type=path_text,
        help="the vLLM tree or branch under review (a checkout, an unpacked wheel or a .whl file)",
    )
    where.add_argument(
        "--patch",
        metavar="NAME|FILE",
        type=path_text,
        help=f"a patch of the installed vLLM 0.33.0: one of the project's (patches/vllm-0.33.0/NAME.diff) or a diff "
        f"file (default: {DEFAULT_PATCH})",
    )
    parser.add_argument("--variant", metavar="NAME", help="the model the change is held to (default: the patch's name)")
    parser.add_argument(
        "--out", metavar="DIR", type=path_text, required=True, help="the report directory (replaced whole)"
    )
    parser.add_argument(
        "--cases-per-deployment",
        metavar="N",
        type=_per_builtin,
        default=3,
        help="end-to-end cases per built-in deployment and budget (default 3; the full sweep is "
        "`pytest tests/conformance/test_end_to_end_pr457.py --e2e-sweep`)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Run every section of the review on the tree or patch given, write review.md, review.html and
    review.json into --out, and print each section's verdict. Exit status 0 when every section is ok, else 1;
    an unusable --out, or --vllm without --variant, raises a GridproofError (exit 2)."""
    from pathlib import Path

    from models.errors import GridproofError
    from proofs import review
    from proofs.source.patches import patched_source
    from proofs.source.releases import source_for, variant_for

    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise GridproofError(f"--out {args.out}: not a directory")
    if not out.parent.is_dir():
        raise GridproofError(f"--out {args.out}: its parent directory does not exist")
    release = source_for(version="0.33.0")
    if args.vllm:
        if args.variant is None:
            raise GridproofError("--vllm: which model is the tree held to? give --variant (pr457 or pr457-guarded)")
        variant = variant_for(args.variant, None)
        source = source_for(path=args.vllm)
        subject = f"{args.vllm} against {variant.name}"
    else:
        patch = args.patch or DEFAULT_PATCH
        source = patched_source(release, patch)
        variant = variant_for(args.variant, patch)
        subject = f"vLLM 0.33.0 with {patch} against {variant.name}"
    elsewhere = bool(args.vllm) or (args.patch or DEFAULT_PATCH) != variant.name
    sections = review.review(source, release, variant, elsewhere, per_builtin=args.cases_per_deployment)
    review.write(out, sections, subject)
    ok = all(s.ok for s in sections)
    for number, s in enumerate(sections, 1):
        print(f"{number}. {s.title}: {'ok' if s.ok else 'NOT OK'}")
    print(f"{'OK (exit 0)' if ok else 'NOT OK (exit 1)'}: {out / 'review.md'}, review.html, review.json")
    return 0 if ok else 1
