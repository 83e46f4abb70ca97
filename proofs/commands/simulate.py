"""`gridproof simulate`: one request's prefill, as a table or JSON."""

from __future__ import annotations

import argparse
import json

from models.geometry import load_geometry
from proofs.commands.arguments import DEFAULT_VARIANT, VARIANT_HELP, budgets, positive_integer, variant_name
from proofs.faults.handwritten import in_effect


def add_parser(sub) -> None:
    parser = sub.add_parser("simulate", help="run one request's prefill and show chunk ends, states and reuse")
    parser.add_argument("geometry", help="a geometry TOML file, or a built-in name such as kimi-k3-tp16-dcp16")
    parser.add_argument("--variant", default=DEFAULT_VARIANT, type=variant_name, help=VARIANT_HELP)
    parser.add_argument("--prompt-tokens", type=positive_integer, help="override the geometry's prompt length")
    parser.add_argument(
        "--budget",
        type=budgets,
        help="tokens per step: one number, or a comma-separated list, one per step, the last repeating "
        "(default: the deployment's max_num_scheduled_tokens)",
    )
    parser.add_argument("--json", action="store_true", help="print a JSON object instead of a table")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from proofs.deployment.simulate import render_text, simulate

    geometry = load_geometry(args.geometry)
    steps = args.budget or [geometry.deployment.max_num_scheduled_tokens]
    with in_effect(args.variant) as variant:
        result = simulate(variant, geometry, steps, prompt_tokens=args.prompt_tokens)
    print(json.dumps(result, indent=2) if args.json else render_text(result))
    return 0
