"""The `gridproof` command."""

from __future__ import annotations

import argparse
import json
import sys

from models.geometry import GeometryError, load_geometry
from models.plan import ConfigurationRejected
from models.prefill import BudgetError
from models.variants import UnknownVariantError, get_variant
from proofs.runner import ManifestError
from proofs.solver import DEFAULT_RLIMIT


class UsageError(ValueError):
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
    prove.add_argument("--variant", help="only this variant or mutant:NAME")
    prove.add_argument("--theorem", help="only this theorem (any tier)")
    prove.add_argument("--tier", default="ci", help="ci (default: the catalogue CI runs), slow, or all")
    prove.add_argument(
        "--rlimit", default=str(DEFAULT_RLIMIT), help=f"Z3 resource budget per obligation ({DEFAULT_RLIMIT})"
    )
    prove.add_argument("--json", action="store_true", help="print the result as JSON")
    prove.set_defaults(run=cmd_prove)
    return parser


def cmd_prove(args: argparse.Namespace) -> int:
    from proofs.prove import prove

    rlimit = _positive("--rlimit", args.rlimit)
    if args.tier not in ("ci", "slow", "all"):
        raise UsageError(f"--tier: expected ci, slow or all, got {args.tier!r}")
    return prove(theorem=args.theorem, variant=args.variant, tier=args.tier, rlimit=rlimit, as_json=args.json)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except (GeometryError, UsageError, UnknownVariantError, ConfigurationRejected, BudgetError, ManifestError) as error:
        print(f"gridproof: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
