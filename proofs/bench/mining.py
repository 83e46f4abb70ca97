"""Mining throughput on the headline theorem: distinct minimised classes per minute.

    python3 -m proofs.bench.mining [--variant baseline] [--max N] [--random-seconds S]

Runs `gridproof mine`'s search (proofs/mining/miner.py) with the theorem's default
views, no files written, and prints when each class was found. Then, as the
competitor a solver-based search should be measured against, random
testing on the concrete model for as long as mining took to its last class:
random small inputs, the classes of those that fail (found, not minimised).
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import time

from models.variants import get_variant
from proofs.catalog import CATALOGUE
from proofs.engine.solver import Kind
from proofs.mining.miner import FAILS, Miner, make_views, outcome

HEADLINE = "prefill-published-on-target-boundaries"


def random_classes(variant_name: str, seconds: float, seed: int = 0) -> tuple[dict, int]:
    """Distinct classes random testing finds in `seconds` (class -> seconds to
    its first member), and how many inputs it tried."""
    theorem = CATALOGUE[HEADLINE]
    obligation = theorem.trace_search
    views = make_views(theorem, obligation, None)
    variant = get_variant(variant_name)
    rng = random.Random(seed)
    classes, tried = {}, 0
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        values = {}
        for v in obligation.variables:
            if v.kind is Kind.BOOL:
                values[v.name] = rng.random() < 0.5
            elif v.size:
                values[v.name] = rng.choice((1, 1, 2, 3, 4))
            else:
                values[v.name] = rng.randint(0, 12)
        tried += 1
        if outcome(obligation.formula, variant, values) == FAILS:
            cls = tuple(bool(view.evaluate(variant, values)) for view in views)
            classes.setdefault(cls, time.perf_counter() - started)
    return classes, tried


def main(argv: list[str] | None = None) -> int:
    """The command: mine the headline theorem under --variant, printing when each class is found (on stderr)
    and the classes per minute, then random testing for as long (or --random-seconds) and the classes it
    finds. Exit status 0."""
    parser = argparse.ArgumentParser(prog="python3 -m proofs.bench.mining", description=__doc__.splitlines()[0])
    parser.add_argument("--variant", default="baseline")
    parser.add_argument("--max", type=int, default=None, help="stop after N classes (default: all)")
    parser.add_argument(
        "--random-seconds", type=float, default=None, help="random testing budget (default: mining's time)"
    )
    args = parser.parse_args(argv)

    stamps: list[float] = []
    started = time.perf_counter()

    def progress(message: str) -> None:
        if re.search(r"class \d+ found", message):
            stamps.append(time.perf_counter() - started)
            print(f"  {stamps[-1]:7.1f} s  class {len(stamps)}", file=sys.stderr, flush=True)

    result = Miner(HEADLINE, args.variant, max_classes=args.max, progress=progress).run()
    found = len(result.found)
    last = stamps[-1] if stamps else result.seconds
    print(f"mining {HEADLINE} / {args.variant}, {len(result.views)} default views")
    print(
        f"  classes found, minimised, explained and replayed: {found} (of {result.possible_classes} view combinations)"
    )
    print(f"  to the last class: {last:.1f} s -> {60 * found / last:.1f} classes per minute")
    print(
        f"  whole run, ladder exhausted and closing query: {result.seconds:.1f} s -> "
        f"{60 * found / result.seconds:.1f} classes per minute; rlimit {result.rlimit:,}"
    )
    print(f"  stop: {result.stop}")
    budget = args.random_seconds if args.random_seconds is not None else last
    classes, tried = random_classes(args.variant, budget)
    print(f"random testing for {budget:.1f} s on the concrete model (sizes 1-4, budgets and tokens 0-12)")
    last_random = max(classes.values(), default=0.0)
    print(
        f"  {tried:,} inputs, {len(classes)} distinct classes (not minimised, not explained), "
        f"the last new one after {last_random:.1f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
