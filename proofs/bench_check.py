"""The hit law of `gridproof check` against `simulate`, every prompt length;
with --timing, how long `gridproof check` takes per deployment; with
--sweep, the law's verdict over common flags.

    python3 -m proofs.bench_check [--up-to 200000] [--model NAME ...]
    python3 -m proofs.bench_check --timing
    python3 -m proofs.bench_check --sweep

For each built-in model (vLLM's defaults, baseline) and the Kimi-K3 judging
deployments, proves the hit law, then compares it with what `simulate`
reports a later identical request restores, for every L from 1 to --up-to
(models/every_length.py: the model's functions on every length at once,
spot-checked against `simulate` itself). Prints one line per deployment;
exits 1 on any mismatch or unproved law.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import shlex
import subprocess
import sys
import time

import numpy

from models.deploy import ServeFlags, resolve_deployment
from models.errors import GridproofError
from models.every_length import gpu_reuse_every_length
from models.hf_config import builtin_model_names, load_model
from models.plan import plan
from models.variants import get_variant
from proofs.catalog.deploy import KIMI_K3_FLAGS as KIMI_K3
from proofs.hitlaw import prove_hit_law, simulated_hit


def deployments(models: list[str]):
    if "kimi-k3" in models:
        yield "kimi-k3", "pr457-guarded", ServeFlags(**KIMI_K3, mamba_block_size=12288)
        yield "kimi-k3", "baseline", ServeFlags(**KIMI_K3)
    for name in models:
        yield name, "baseline", ServeFlags()


SPOT_CHECKS = 200  # prompt lengths also run through `simulate` itself, one prefill each


def compare(model: str, variant_name: str, flags: ServeFlags, up_to: int) -> dict:
    """Prove the law, then compare it with `simulate`'s reuse on every L in
    1..up_to: the simulated reuse comes from models.every_length (the model's
    step and restore test, every length at once), itself spot-checked here
    against `simulate` on SPOT_CHECKS lengths."""
    variant = get_variant(variant_name)
    p = plan(variant, resolve_deployment(load_model(model), flags, variant).geometry)
    started = time.perf_counter()
    law = prove_hit_law(p)
    proved_in = time.perf_counter() - started
    row = {
        "model": model,
        "variant": variant_name,
        "proved": law.proved,
        "prove_s": proved_in,
        "mismatches": [],
        "spot_mismatches": [],
    }
    if not law.proved:
        row["reason"] = law.reason
        return row
    started = time.perf_counter()
    simulated = gpu_reuse_every_length(p, p.geometry.deployment.max_num_scheduled_tokens, up_to)
    lengths = numpy.arange(1, up_to + 1, dtype=numpy.int64)
    predicted = numpy.broadcast_to(law(lengths), lengths.shape)
    row["mismatches"] = [int(n) for n in lengths[predicted != simulated][:5]]
    spots = sorted(random.Random(0).sample(range(1, up_to + 1), min(SPOT_CHECKS, up_to)))
    row["spot_mismatches"] = [n for n in spots if simulated[n - 1] != simulated_hit(p, n) or law(n) != simulated[n - 1]]
    row["compared"] = up_to
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


SLOW_SECONDS = 1.5  # a proved law taking more CPU seconds than this is listed too
SWEEP_VARIANTS = ("baseline", "pr457", "pr457-guarded")
SWEEP_PARALLEL = ((1, 1), (8, 2))  # (TP, DCP)
SWEEP_MAMBA_BLOCK = (None, 4096)
SWEEP_BUDGET = (None, 2048)
SWEEP_SPECULATION = (None, {"method": "eagle", "num_speculative_tokens": 3})


def sweep_configurations(models: list[str]):
    """Each built-in model under each variant and common flags: TP/DCP,
    --mamba-block-size, the budget, an EAGLE drafter, native offload with it."""
    for model in models:
        for variant in SWEEP_VARIANTS:
            for tp, dcp in SWEEP_PARALLEL:
                for mamba_block in SWEEP_MAMBA_BLOCK:
                    for budget in SWEEP_BUDGET:
                        for speculation in SWEEP_SPECULATION:
                            offload = {"kv_connector": "OffloadingConnector"} if speculation else None
                            yield (
                                model,
                                variant,
                                ServeFlags(
                                    tensor_parallel_size=tp,
                                    decode_context_parallel_size=dcp,
                                    mamba_block_size=mamba_block,
                                    max_num_scheduled_tokens=budget,
                                    speculative_config=speculation,
                                    kv_transfer_config=offload,
                                ),
                            )


WIDE = {
    "tensor_parallel_size, decode_context_parallel_size": ((1, 1), (2, 1), (4, 2), (8, 1), (8, 4), (16, 16)),
    "block_size": (None, 16, 64, 256),
    "mamba_block_size": (None, 1000, 2048, 4096, 8192, 12288),
    "max_num_scheduled_tokens": (None, 512, 2048, 3000, 5000, 16384),
    "long_prefill_token_threshold": (0, 0, 1024),
    "speculative": (None, "eagle", "mtp", "eagle+offload"),
}
SPECULATION = {
    None: {},
    "eagle": {"speculative_config": {"method": "eagle", "num_speculative_tokens": 3}},
    "mtp": {"speculative_config": {"method": "mtp", "num_speculative_tokens": 2}},
    "eagle+offload": {
        "speculative_config": {"method": "eagle", "num_speculative_tokens": 3},
        "kv_transfer_config": {"kv_connector": "OffloadingConnector"},
    },
}


def wide_configurations(models: list[str], count: int, seed: int = 0):
    """`count` configurations drawn at random from the WIDE values, every
    model and variant alike."""
    rng = random.Random(seed)
    for _ in range(count):
        pick = {name: rng.choice(values) for name, values in WIDE.items()}
        tp, dcp = pick.pop("tensor_parallel_size, decode_context_parallel_size")
        flags = ServeFlags(
            tensor_parallel_size=tp, decode_context_parallel_size=dcp, **SPECULATION[pick.pop("speculative")], **pick
        )
        yield rng.choice(models), rng.choice(SWEEP_VARIANTS), flags


def sweep(models: list[str], wide: int = 0) -> int:
    """The hit law's verdict over sweep_configurations: counts, every
    configuration whose law is not PROVED (with what each form gave), and
    those proved in more than SLOW_SECONDS."""
    counts: dict[str, int] = {}
    started = time.perf_counter()
    configurations = wide_configurations(models, wide) if wide else sweep_configurations(models)
    for model, variant_name, flags in configurations:
        variant = get_variant(variant_name)
        words = f"{model} --variant {variant_name} {shlex.join(_command_flags(flags))}"
        seconds = 0.0
        try:
            p = plan(variant, resolve_deployment(load_model(model), flags, variant).geometry)
        except GridproofError as error:
            verdict, detail = "bad input", str(error)
        else:
            if variant.guarded and not p.accepted:
                verdict, detail = "refused by the variant", ""
            else:
                proving = time.process_time()  # CPU: Z3 runs in this process; wall time follows the load
                law = prove_hit_law(p)
                seconds = time.process_time() - proving
                verdict = f"PROVED ({law.extra['form']} form)" if law.proved else "NOT PROVED"
                detail = law.reason or f"{seconds:.1f} s"
        counts[verdict] = counts.get(verdict, 0) + 1
        if verdict == "NOT PROVED":
            print(f"{verdict}: {words}: {detail}", flush=True)
        elif verdict.startswith("PROVED") and seconds > SLOW_SECONDS:
            print(f"{verdict} in {seconds:.1f} s of CPU: {words}", flush=True)
        done = sum(counts.values())
        if done % 24 == 0:
            print(f"  {done} configurations, {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    total = sum(counts.values())
    summary = ", ".join(f"{n} {v}" for v, n in sorted(counts.items()))
    print(f"{total} configurations in {time.perf_counter() - started:.0f} s: {summary}", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m proofs.bench_check", description=__doc__.split("\n")[0])
    parser.add_argument("--up-to", type=int, default=200_000, help="compare every L up to this (default 200,000)")
    parser.add_argument("--model", action="append", choices=builtin_model_names())
    parser.add_argument("--timing", action="store_true", help="time one `gridproof check` per deployment instead")
    parser.add_argument("--sweep", action="store_true", help="the hit law's verdict over common flags instead")
    parser.add_argument(
        "--wide",
        type=int,
        default=0,
        metavar="N",
        help="with --sweep: N configurations drawn at random from wider values",
    )
    args = parser.parse_args(argv)
    if args.timing:
        return timing(args.model or builtin_model_names())
    if args.sweep:
        return sweep(args.model or builtin_model_names(), args.wide)
    rows = []
    for model, variant, flags in deployments(args.model or builtin_model_names()):
        print(f"{model} {variant}: proving the hit law", file=sys.stderr, flush=True)
        rows.append(compare(model, variant, flags, args.up_to))
        row = rows[-1]
        print(
            f"{model:<14} {variant:<14} {'PROVED' if row['proved'] else 'NOT PROVED':<10} "
            f"prove {row['prove_s']:.1f} s  {row.get('compared', 0):,} lengths, "
            f"mismatches: {row['mismatches'] or 'none'}"
            + (
                f"  ({row['reason']})"
                if not row["proved"]
                else f"  compare {row['compare_s']:.1f} s; {SPOT_CHECKS} spot checks against simulate: "
                f"{row['spot_mismatches'] or 'agree'}"
            ),
            flush=True,
        )
    return 0 if all(r["proved"] and not r["mismatches"] and not r["spot_mismatches"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
