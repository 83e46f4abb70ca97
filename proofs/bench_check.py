"""The hit law of `gridproof check` against `simulate`, every prompt length;
and, with --timing, how long `gridproof check` takes per deployment.

    python3 -m proofs.bench_check [--up-to 200000] [--model NAME ...]
    python3 -m proofs.bench_check --timing

For each built-in model (vLLM's defaults, baseline) and the Kimi-K3 judging
deployments, proves the hit law, then compares it with what `simulate`
reports a later identical request restores, for every L from 1 to --up-to.
Prints one progress line per 20,000 prompt lengths, and a table at the end;
exits 1 on any mismatch or unproved law.
"""

from __future__ import annotations

import argparse
import json
import resource
import shlex
import subprocess
import sys
import time

from models.deploy import ServeFlags, resolve_deployment
from models.hf_config import builtin_model_names, load_model
from models.plan import plan
from models.variants import get_variant
from proofs.hitlaw import prove_hit_law, simulated_hit

WINDOW_STEP = 12_288  # Kimi-K3's target span: a multiple of most pages' grids too

KIMI_K3 = {
    "tensor_parallel_size": 16,
    "decode_context_parallel_size": 16,
    "block_size": 768,
    "max_num_scheduled_tokens": 4096,
    "speculative_config": {"method": "eagle", "num_speculative_tokens": 3},
    "kv_transfer_config": {"kv_connector": "OffloadingConnector"},
}


def deployments(models: list[str]):
    if "kimi-k3" in models:
        yield "kimi-k3", "pr457-guarded", ServeFlags(**KIMI_K3, mamba_block_size=12288)
        yield "kimi-k3", "baseline", ServeFlags(**KIMI_K3)
    for name in models:
        yield name, "baseline", ServeFlags()


def prompt_lengths(up_to: int, windows: int, width: int) -> list[int]:
    """Every L up to `up_to`; beyond it, every L within `width` of each
    multiple of WINDOW_STEP up to `windows` (simulate's cost grows with L,
    so every L to 200,000 takes hours per deployment on a shared machine)."""
    lengths = set(range(1, up_to + 1))
    for centre in range(WINDOW_STEP, windows + 1, WINDOW_STEP):
        lengths.update(range(max(1, centre - width), centre + width + 1))
    return sorted(lengths)


def compare(model: str, variant_name: str, flags: ServeFlags, up_to: int, windows: int, window_width: int) -> dict:
    variant = get_variant(variant_name)
    p = plan(variant, resolve_deployment(load_model(model), flags, variant).geometry)
    started = time.perf_counter()
    law = prove_hit_law(p)
    proved_in = time.perf_counter() - started
    row = {"model": model, "variant": variant_name, "proved": law.proved, "prove_s": proved_in, "mismatches": []}
    if not law.proved:
        row["reason"] = law.reason
        return row
    started = time.perf_counter()
    lengths = prompt_lengths(up_to, windows, window_width)
    for count, tokens in enumerate(lengths, 1):
        if law(tokens) != simulated_hit(p, tokens):
            row["mismatches"].append(tokens)
            if len(row["mismatches"]) >= 5:
                break
        if count % 5_000 == 0:
            print(
                f"  {model} {variant_name}: {count:,} of {len(lengths):,} lengths compared", file=sys.stderr, flush=True
            )
    row["compared"] = len(lengths)
    row["compare_s"] = time.perf_counter() - started
    row["form"] = law.form
    return row


def _command_flags(flags: ServeFlags) -> list[str]:
    words = []
    for key, value in flags.__dict__.items():
        if value is None or value == ServeFlags().__dict__[key]:
            continue
        words += ["--" + key.replace("_", "-"), json.dumps(value) if isinstance(value, dict) else str(value)]
    return words


def timing(models: list[str]) -> int:
    """One `gridproof check` process per deployment: wall and CPU seconds."""
    for model, variant, flags in [
        *deployments(models),
        ("kimi-k3", "pr457-guarded", ServeFlags(**KIMI_K3, mamba_block_size=5000)),
    ]:
        command = [sys.executable, "-m", "proofs.cli", "check", "--model", model, "--variant", variant]
        command += _command_flags(flags)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True)
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
        law = "PROVED" if "PROVED by Z3 for every L" in done.stdout else "not proved"
        print(
            f"{wall:5.2f} s wall {cpu:5.2f} s cpu  exit {done.returncode}  hit law {law:<10}  {shlex.join(command[3:])}"
        )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m proofs.bench_check", description=__doc__.split("\n")[0])
    parser.add_argument("--up-to", type=int, default=200_000, help="compare every L up to this (default 200,000)")
    parser.add_argument("--windows", type=int, default=0, help="and every L near each multiple of 12,288 up to this")
    parser.add_argument("--window-width", type=int, default=512)
    parser.add_argument("--model", action="append", choices=builtin_model_names())
    parser.add_argument("--timing", action="store_true", help="time one `gridproof check` per deployment instead")
    args = parser.parse_args(argv)
    if args.timing:
        return timing(args.model or builtin_model_names())
    rows = []
    for model, variant, flags in deployments(args.model or builtin_model_names()):
        print(f"{model} {variant}: proving the hit law", file=sys.stderr, flush=True)
        rows.append(compare(model, variant, flags, args.up_to, args.windows, args.window_width))
        row = rows[-1]
        print(
            f"{model:<14} {variant:<14} {'PROVED' if row['proved'] else 'NOT PROVED':<10} "
            f"prove {row['prove_s']:.1f} s  {row.get('compared', 0):,} lengths, "
            f"mismatches: {row['mismatches'] or 'none'}"
            + (f"  ({row['reason']})" if not row["proved"] else f"  compare {row['compare_s']:.0f} s"),
            flush=True,
        )
    return 0 if all(r["proved"] and not r["mismatches"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
