"""`gridproof mutate`: generated mutants of the model, the catalogue run on
each, and the mutation score (proofs/mutation/)."""

from __future__ import annotations

import argparse
import json
import sys
import time

from proofs.commands.arguments import UsageError, non_negative_integer, positive_integer
from proofs.mutation import source as source_comparisons
from proofs.mutation.operators import DEFAULT_MODULES, OPERATORS, generate
from proofs.mutation.run import DEFAULT_TIMEOUT, GAP, mutated_functions, run_mutants, sample, summary

MODULES = (
    "config",
    "plan",
    "scheduler",
    "prefill",
    "prefix_cache",
    "offload",
    "geometry",
    "positions",
    "deploy",
    "hf_config",
)


def _percent(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a percentage such as 95, got {text!r}") from None
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"must be between 0 and 100, got {text!r}")
    return value


def add_parser(sub) -> None:
    """Register `mutate`: the mutants' selection, --jobs, --timeout, --reference, --fail-under, --list."""
    mutate = sub.add_parser(
        "mutate",
        help="apply mutation operators to models/, run the catalogue on each mutant, report the mutation score",
        description="Each mutant is killed (some theorem's verdict differs from the manifest), proved "
        "equivalent by Z3, or a gap. Score: killed / (generated - equivalent).",
    )
    mutate.add_argument(
        "--module",
        action="append",
        choices=MODULES,
        help=f"mutate only this module of models/ (repeatable; default: {', '.join(DEFAULT_MODULES)})",
    )
    mutate.add_argument(
        "--operator", action="append", choices=OPERATORS, help="only this operator (repeatable; default: all)"
    )
    mutate.add_argument("--function", help="only the functions whose qualified name is this (e.g. chunk_end)")
    mutate.add_argument(
        "--mutant",
        action="append",
        metavar="IDENT",
        help="only this mutant, by the ident --list prints (repeatable)",
    )
    mutate.add_argument(
        "--sample", type=positive_integer, metavar="N", help="run N mutants drawn at random (see --seed)"
    )
    mutate.add_argument("--seed", type=non_negative_integer, default=0, help="the draw of --sample (default 0)")
    mutate.add_argument("--jobs", type=positive_integer, default=1, help="mutants decided at once, one process each")
    mutate.add_argument(
        "--timeout", type=positive_integer, default=DEFAULT_TIMEOUT, help="seconds per mutant before it counts as a gap"
    )
    mutate.add_argument(
        "--reference",
        choices=("patched", "released"),
        default="patched",
        help="what the theorems comparing a variant with vLLM 0.33.0 read as 0.33.0: the mutated model, as they "
        "would read the same fault written into models/ (default), or the model as released, unpatched",
    )
    mutate.add_argument("--fail-under", type=_percent, metavar="PERCENT", help="exit 1 when the score is below PERCENT")
    mutate.add_argument("--list", action="store_true", help="list the mutants that would run, and run none")
    mutate.add_argument("--json", action="store_true", help="print the result as JSON")
    mutate.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Generate the selected mutants and list them (--list) or run the catalogue on each, printing the result
    as text or JSON; progress on stderr. Exit status 1 when the score is below --fail-under or there is none,
    else 0; a --function or --mutant that selects nothing raises a UsageError (exit 2)."""
    modules = tuple(args.module or DEFAULT_MODULES)
    mutants = generate(modules, tuple(args.operator or OPERATORS))
    if args.function is not None:
        mutants = [m for m in mutants if m.patch.function == args.function]
        if not mutants:
            raise UsageError(f"--function: no mutant of a function named {args.function!r} in {', '.join(modules)}")
    if args.mutant is not None:
        unknown = sorted(set(args.mutant) - {m.ident for m in mutants})
        if unknown:
            raise UsageError(f"--mutant: no mutant {unknown[0]!r} among the {len(mutants)} selected (see --list)")
        mutants = [m for m in mutants if m.ident in args.mutant]
    chosen = sample(mutants, args.sample, args.seed)
    if args.list:
        for m in chosen:
            print(f"{m.ident}  {m.patch.location()}  {m.summary}")
        print(f"{len(chosen)} of {len(mutants)} mutants", file=sys.stderr)
        return 0
    started = time.perf_counter()
    print(f"gridproof mutate: {len(chosen)} of {len(mutants)} mutants of {', '.join(modules)}", file=sys.stderr)
    sources = source_comparisons.prepare(mutated_functions(chosen), _progress)
    reference_patched = args.reference == "patched"
    results = run_mutants(
        chosen,
        jobs=args.jobs,
        timeout=args.timeout,
        progress=_progress,
        sources=sources,
        reference_patched=reference_patched,
    )
    figures = summary(results, time.perf_counter() - started)
    selection = {
        "modules": list(modules),
        "operators": args.operator or "all",
        "function": args.function,
        "mutants": args.mutant,
        "sample": args.sample,
        "seed": args.seed if args.sample else None,
        "jobs": args.jobs,
        "reference": args.reference,
    }
    if args.json:
        document = {"format": "gridproof-mutation/1", "selection": selection, **figures}
        document["source"] = sources.to_json()
        document["mutants"] = [r.to_json() for r in results]
        print(json.dumps(document, indent=2))
    else:
        print(render(results, figures, sources, args.reference))
    below = args.fail_under is not None and (figures["score"] is None or figures["score"] < args.fail_under)
    return 1 if below else 0


_REFERENCE_READ = {"patched": "(its reference mutated too)", "released": "(its reference as released)"}


def _progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def render(results, figures: dict, sources: source_comparisons.SourceComparisons, reference: str) -> str:
    """The run as text: each gap with its reason, the counts per operator, and a closing line with the kills
    by kind, the equivalent mutants, gaps, score and seconds."""
    lines = []
    gaps = [r for r in results if r.status == GAP]
    if gaps:
        lines.append(f"gaps: {len(gaps)} mutants no theorem kills and Z3 does not prove equivalent")
        for r in gaps:
            lines.append(f"  {r.location}  {r.function}  [{r.operator}]  {r.summary}")
            lines.append(f"      {r.reason}")
        lines.append("")
    lines.append("by operator (killed / equivalent / gap):")
    for operator, counts in sorted(figures["by_operator"].items()):
        lines.append(f"  {operator:14} {counts['killed']:4} {counts['equivalent']:4} {counts['gap']:4}")
    score = "n/a" if figures["score"] is None else f"{figures['score']}%"
    version = source_comparisons.VERSION
    source = f"{figures['killed_by_source']} by a comparison with vLLM {version}'s source"
    if not sources.available:
        source = f"none compared with vLLM {version}'s source, not at hand"
    lines += [
        "",
        f"{figures['generated']} mutants: {figures['killed']} killed ({figures['killed_by_reference']} by a "
        f"catalogue comparison with 0.33.0 {_REFERENCE_READ[reference]}, {source}, "
        f"{figures['killed_by_error']} by an ERROR or the model raising), "
        f"{figures['equivalent']} proved equivalent, {figures['gaps']} gaps; "
        f"score {score} = killed / (generated - equivalent); "
        f"{figures['seconds']} s",
    ]
    return "\n".join(lines)
