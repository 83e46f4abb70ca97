"""What `gridproof check` answers and how long it takes: its restore law (proofs/deployment/restore_law.py) per
deployment; with --timing, one `gridproof check` process per deployment; with --sweep, the law's verdict
over common flags.

    python3 -m proofs.bench.check [--spot-checks 200] [--model NAME ...]
    python3 -m proofs.bench.check --timing
    python3 -m proofs.bench.check --sweep [--wide N]

For each built-in model (vLLM's defaults, baseline) and the Kimi-K3 judging deployments: the law `check`
reports, hit(L), the first formula of its family that equals the engine model's answer (what a later
identical request of L tokens is restored from the GPU prefix cache: models/prefix_cache.py) on every
length `check` compares; it is CHECKED on those lengths, not proved. Here it is also compared with the
engine model on --spot-checks lengths drawn at random beside them, up to --up-to. Prints one line per
deployment; exits 1 on a law that no formula fits or that differs from the model at a spot check.
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

from models.deploy import ServeFlags, resolve_deployment
from models.errors import GridproofError
from models.hf_config import builtin_model_names, load_model
from models.plan import plan
from models.variants import get_variant
from proofs.catalog.deploy import KIMI_K3_FLAGS as KIMI_K3
from proofs.deployment.restore_law import lengths_checked, resend_hit, restore_law


def deployments(models: list[str]):
    if "kimi-k3" in models:
        yield "kimi-k3", "pr457-guarded", ServeFlags(**KIMI_K3, mamba_block_size=12288)
        yield "kimi-k3", "baseline", ServeFlags(**KIMI_K3)
    for name in models:
        yield name, "baseline", ServeFlags()


SPOT_CHECKS = 200  # lengths beside those `check` compares, each one prefill of the engine model
SEED = 0


def compare(model: str, variant_name: str, flags: ServeFlags, up_to: int, spot_checks: int = SPOT_CHECKS) -> dict:
    """The law `check` reports for the deployment, and how long it took; then the law against the engine
    model's resend hit on `spot_checks` lengths up to `up_to` that `check` does not compare."""
    variant = get_variant(variant_name)
    p = plan(variant, resolve_deployment(load_model(model), flags, variant).geometry)
    started = time.perf_counter()
    law = restore_law(p)
    row = {
        "model": model,
        "variant": variant_name,
        "verdict": law.verdict,
        "form": None if law.formula is None else law.formula.text,
        "checked": law.checked,
        "law_s": time.perf_counter() - started,
        "spot_mismatches": [],
    }
    if law.formula is None:
        row["differences"] = law.differences[:5]
        return row
    checked = set(lengths_checked(p))
    rng = random.Random(SEED)
    spots = sorted({n for n in (rng.randint(1, up_to) for _ in range(4 * spot_checks)) if n not in checked})
    spots = spots[:spot_checks]
    started = time.perf_counter()
    for n in spots:
        model_hit = resend_hit(p, n)
        if model_hit is not None and model_hit != law(n):
            row["spot_mismatches"].append((n, model_hit, law(n)))
    row["spots"] = len(spots)
    row["spot_s"] = time.perf_counter() - started
    return row


def _command_flags(flags: ServeFlags) -> list[str]:
    words = []
    for key, value in flags.__dict__.items():
        if value is None or value == ServeFlags().__dict__[key]:
            continue
        words += ["--" + key.replace("_", "-"), json.dumps(value) if isinstance(value, dict) else str(value)]
    return words


def timing(models: list[str]) -> int:
    """One `gridproof check --json` process per deployment: wall and CPU seconds, exit status and the
    verdict of its restore law."""
    for model, variant, flags in [
        *deployments(models),
        ("kimi-k3", "pr457-guarded", ServeFlags(**KIMI_K3, mamba_block_size=5000)),
    ]:
        command = [sys.executable, "-m", "proofs.cli", "check", "--model", model, "--variant", variant, "--json"]
        command += _command_flags(flags)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True)
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
        print(
            f"{wall:5.2f} s wall {cpu:5.2f} s cpu  exit {done.returncode}  law {_law_verdict(done.stdout):<10}  "
            f"{shlex.join(command[3:])}"
        )
    return 0


def _law_verdict(output: str) -> str:
    """The restore law's verdict in `check --json`'s output; what stopped it when there is none."""
    try:
        law = json.loads(output).get("hit_law") or {}
    except ValueError:
        return "no answer"
    return law.get("verdict") or "none"


SWEEP_VARIANTS = ("baseline", "pr457", "pr457-guarded")
SWEEP_PARALLEL = ((1, 1), (8, 2))  # (TP, DCP)
SWEEP_MAMBA_BLOCK = (None, 4096)
SWEEP_BUDGET = (None, 2048)
SWEEP_SPECULATION = (None, {"method": "eagle", "num_speculative_tokens": 3})
SLOW_SECONDS = 1.5  # a law taking more CPU seconds than this is listed too


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
    """The restore law's verdict over sweep_configurations: counts, every configuration no formula fits
    (with the lengths where the closest one differs), and those whose law took more than SLOW_SECONDS."""
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
                computing = time.process_time()
                law = restore_law(p)
                seconds = time.process_time() - computing
                verdict, detail = law.verdict, f"differs at (L, model, formula) {law.differences[:3]}"
        counts[verdict] = counts.get(verdict, 0) + 1
        if verdict == "NO FORMULA":
            print(f"{verdict}: {words}: {detail}", flush=True)
        elif verdict == "CHECKED" and seconds > SLOW_SECONDS:
            print(f"{verdict} in {seconds:.1f} s of CPU: {words}", flush=True)
        done = sum(counts.values())
        if done % 24 == 0:
            print(f"  {done} configurations, {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    total = sum(counts.values())
    summary = ", ".join(f"{n} {v}" for v, n in sorted(counts.items()))
    print(f"{total} configurations in {time.perf_counter() - started:.0f} s: {summary}", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    """The command: a line per deployment, its law with the spot checks against the engine model; --timing or
    --sweep instead, each exit 0. Exit status 1 when a law has no formula or differs at a spot check, else
    0."""
    parser = argparse.ArgumentParser(prog="python3 -m proofs.bench.check", description=__doc__.split("\n")[0])
    parser.add_argument("--up-to", type=int, default=200_000, help="spot-check lengths up to this (default 200,000)")
    parser.add_argument("--spot-checks", type=int, default=SPOT_CHECKS, help=f"(default {SPOT_CHECKS})")
    parser.add_argument("--model", action="append", choices=builtin_model_names())
    parser.add_argument("--timing", action="store_true", help="time one `gridproof check` per deployment instead")
    parser.add_argument("--sweep", action="store_true", help="the restore law's verdict over common flags instead")
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
        row = compare(model, variant, flags, args.up_to, args.spot_checks)
        rows.append(row)
        detail = (
            f"law {row['law_s']:.1f} s on {row['checked']:,} lengths; {row['spots']} spot checks in "
            f"{row['spot_s']:.1f} s: {row['spot_mismatches'] or 'agree'}"
            if row["form"] is not None
            else f"differs at (L, model, formula) {row['differences']}"
        )
        print(f"{model:<14} {variant:<14} {row['verdict']:<10} {row['form'] or '':<34} {detail}", flush=True)
    return 0 if all(r["form"] is not None and not r["spot_mismatches"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
