"""`gridproof check`: is this deployment's prefix cache right? Asked in
vLLM's own `vllm serve` flags, answered with the group grids, where
checkpoints are published, the hit law proved for every prompt length, and
an exit status: 0 aligned, 1 not aligned, 2 bad input."""

from __future__ import annotations

import argparse
import functools
import json
import shlex
import sys
from dataclasses import fields
from pathlib import Path

from models.deploy import ServeFlags, geometry_toml, resolve_deployment, token_flag
from models.errors import GridproofError, quoted
from models.files import parse_json
from models.geometry import MAX_TOKENS
from models.hf_config import KV_CACHE_DTYPES, SSM_CACHE_DTYPES, builtin_model_names, load_model
from models.variants import NEWEST_RELEASE, RELEASES, get_variant, release_variant
from proofs.commands.arguments import UsageError, non_negative_integer, positive_integer

SWEEPABLE = {
    "mamba-block-size": "mamba_block_size",
    "block-size": "block_size",
    "max-num-scheduled-tokens": "max_num_scheduled_tokens",
    "max-num-batched-tokens": "max_num_batched_tokens",
    "long-prefill-token-threshold": "long_prefill_token_threshold",
    "tensor-parallel-size": "tensor_parallel_size",
    "decode-context-parallel-size": "decode_context_parallel_size",
}
MAX_SWEEP_ROWS = 64
# Each prompt length is simulated in turn: about 13 s per million lengths on one core.
MAX_VERIFIED_LENGTH = 1_000_000


def _bounded(convert, most: int, why: str):
    def bounded(text: str) -> int | None:
        value = convert(text)
        if value is not None and value > most:
            raise argparse.ArgumentTypeError(f"at most {most:,} ({why}), got {value:,}")
        return value

    return bounded


INT32 = "vLLM holds token counts in int32"
token_count = _bounded(positive_integer, MAX_TOKENS, INT32)
token_threshold = _bounded(non_negative_integer, MAX_TOKENS, INT32)


def _readable_tokens(text: str, auto: bool = False) -> int | None:
    """A positive token count as vLLM's parser reads the flag (models.deploy.token_flag): 8192, 8k or 8K."""
    try:
        value = token_flag(text, auto)
    except ValueError as error:
        raise argparse.ArgumentTypeError(
            f"expected a token count such as 8192, 8k or 8K, got {quoted(text)}: {error}"
        ) from None
    if value is not None and value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive token count, got {quoted(text)} ({value:,})")
    return value


# --max-num-batched-tokens and --max-num-scheduled-tokens: vLLM's human_readable_int.
readable_token_count = _bounded(_readable_tokens, MAX_TOKENS, INT32)
# --max-model-len: vLLM's human_readable_int_or_auto, where -1 or auto is the model's own length (None).
readable_model_len = _bounded(functools.partial(_readable_tokens, auto=True), MAX_TOKENS, INT32)


def _json_object(text: str) -> dict:
    try:
        value = parse_json(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"not valid JSON: {error}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object, got {quoted(text)}")
    return value


def _variant(text: str):
    try:
        return get_variant(text)
    except GridproofError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _release(text: str):
    try:
        return release_variant(text)
    except GridproofError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


# The swept flags vLLM reads as human-readable counts (8k, 8K), as their own flags are read.
READABLE_SWEEPS = ("max-num-scheduled-tokens", "max-num-batched-tokens")


def _sweep(text: str) -> tuple[str, list[int]]:
    """FLAG=a..b[:step] or FLAG=a,b,c."""
    flag, _, values = text.partition("=")
    flag = flag.removeprefix("--").replace("_", "-")
    if flag not in SWEEPABLE or not values:
        raise argparse.ArgumentTypeError(f"expected FLAG=a..b or FLAG=a,b,c with FLAG one of {', '.join(SWEEPABLE)}")
    number, kind = (token_flag, "token counts such as 8192, 8k or 8K") if flag in READABLE_SWEEPS else (int, "integers")
    try:
        if ".." in values:
            bounds, _, step = values.partition(":")
            low, high = (number(v) for v in bounds.split(".."))
            stride = number(step) if step else 1
            if stride <= 0:
                raise argparse.ArgumentTypeError(f"expected a positive step, got {step!r}")
            # Counted, not len(range(...)): a range of more values than an index holds has no len.
            count = max(0, (high - low) // stride + 1)
            if count > MAX_SWEEP_ROWS:
                raise argparse.ArgumentTypeError(f"{count:,} values: at most {MAX_SWEEP_ROWS} (give a step: a..b:STEP)")
            numbers = list(range(low, high + 1, stride))
        else:
            numbers = [number(v) for v in values.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {kind} in {quoted(text)}") from None
    if not numbers or any(v < 0 for v in numbers):
        raise argparse.ArgumentTypeError(f"expected a non-empty range of non-negative integers, got {values!r}")
    if max(numbers) > MAX_TOKENS:
        raise argparse.ArgumentTypeError(f"values of at most {MAX_TOKENS:,} ({INT32})")
    if len(numbers) > MAX_SWEEP_ROWS:
        raise argparse.ArgumentTypeError(f"{len(numbers)} values: at most {MAX_SWEEP_ROWS} (give a step: a..b:STEP)")
    return SWEEPABLE[flag], numbers


def add_parser(sub) -> None:
    """Register `check`: --model, vLLM's serve flags, --vllm-version or --variant, and the output options."""
    parser = sub.add_parser(
        "check",
        help="check a deployment given in vLLM's own flags: grids, published checkpoints, the hit law",
        allow_abbrev=False,
        underscores_as_dashes=True,  # vLLM's spellings: --max_model_len for --max-model-len
        unknown_flag_hint="gridproof check reads only the vLLM flags that place recurrent checkpoints; "
        "see gridproof check --help",
        description="Answer, for one vLLM deployment, where recurrent checkpoints land and what a later request "
        "restores. Exit 0: aligned; 1: not aligned (with why); 2: bad input.",
    )
    parser.add_argument(
        "--model",
        default="kimi-k3",
        help=f"a Hugging Face config.json, or a built-in model: {', '.join(builtin_model_names())} (default kimi-k3)",
    )
    vllm = parser.add_argument_group("vLLM flags (vllm serve's names and spellings)")
    vllm.add_argument("--tensor-parallel-size", "-tp", type=positive_integer, metavar="N", default=1)
    vllm.add_argument("--decode-context-parallel-size", "-dcp", type=positive_integer, metavar="N", default=1)
    vllm.add_argument("--block-size", type=token_count, metavar="N")
    vllm.add_argument("--mamba-block-size", type=token_count, metavar="N")
    vllm.add_argument("--mamba-cache-mode", choices=("align", "none"))
    vllm.add_argument("--max-num-batched-tokens", type=readable_token_count, metavar="N")
    vllm.add_argument("--max-num-scheduled-tokens", type=readable_token_count, metavar="N")
    vllm.add_argument("--long-prefill-token-threshold", type=token_threshold, metavar="N", default=0)
    vllm.add_argument("--max-model-len", type=readable_model_len, metavar="N")
    vllm.add_argument("--speculative-config", type=_json_object, metavar="JSON")
    vllm.add_argument("--kv-transfer-config", type=_json_object, metavar="JSON")
    vllm.add_argument("--enable-prefix-caching", action=argparse.BooleanOptionalAction, default=True)
    vllm.add_argument("--mamba-ssm-cache-dtype", choices=SSM_CACHE_DTYPES, default="auto")
    vllm.add_argument("--kv-cache-dtype", choices=KV_CACHE_DTYPES, default="auto")
    vllm.add_argument(
        "--prefix-cache-retention-interval",
        type=_retention,
        default=0,
        metavar="N|none",
        help="recurrent states the GPU cache keeps: 0 (vLLM's default) only where a later request resumes, "
        "none every one (dense), N one per N tokens",
    )
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        "--vllm-version",
        type=_release,
        metavar="X.Y.Z",
        help=f"the vLLM release you serve with: {', '.join(RELEASES)} (default: the newest, {NEWEST_RELEASE})",
    )
    which.add_argument(
        "--variant",
        type=_variant,
        help="a modelled variant instead of a release: baseline (vLLM 0.33.0), pr457 or pr457-guarded (PR457 on "
        "0.33.0), vllm-0.34.0",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--emit-geometry", metavar="FILE", help="also write the resolved geometry TOML (for simulate)")
    parser.add_argument(
        "--emit-vllm-test",
        metavar="FILE",
        help="write a pytest file for a vLLM checkout replaying this deployment's prefill through the real split",
    )
    parser.add_argument(
        "--verify-law-up-to",
        type=_bounded(positive_integer, MAX_VERIFIED_LENGTH, "each length is simulated"),
        metavar="N",
        default=0,
        help="also compare the hit law with simulate on every prompt length 1..N",
    )
    parser.add_argument("--sweep", type=_sweep, metavar="FLAG=a..b", help="tabulate one flag's values (no proofs)")
    parser.add_argument(
        "--explain", action="store_true", help="also print how the answer was reached: groups, grids, proofs"
    )
    parser.add_argument(
        "--confirm-vllm",
        action="store_true",
        help="run the real vLLM 0.33.0 scheduler (installed) on this deployment at prompt lengths around every "
        "grid and compare what it restores with the printed law",
    )
    parser.add_argument("--plot", metavar="FILE", help="draw hit(L) for the GPU cache and offload as a PNG")
    parser.set_defaults(run=run)


def _retention(text: str) -> int | None:
    """--prefix-cache-retention-interval: a non-negative integer, or none (vLLM's None: dense)."""
    if text.strip().lower() in ("none", "dense"):
        return None
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer or none, got {quoted(text)}") from None
    if value < 0 or value > MAX_TOKENS:
        raise argparse.ArgumentTypeError(f"expected an integer from 0 to {MAX_TOKENS:,} or none, got {value}")
    return value


def flags_from(args: argparse.Namespace) -> ServeFlags:
    """The vLLM flags parsed: each is a ServeFlags field of the same name."""
    return ServeFlags(**{f.name: getattr(args, f.name) for f in fields(ServeFlags)})


def run(args: argparse.Namespace) -> int:
    """Answer for the deployment the flags give, or tabulate --sweep, as text or JSON; write what
    --emit-geometry, --emit-vllm-test and --plot ask for. Exit status 0 aligned (with --sweep, every row), 1
    not aligned, prefix caching off or the real scheduler disagreeing; bad input raises (exit 2)."""
    from proofs.deployment.analysis import analyse
    from proofs.deployment.rendering import render_sweep, render_text, sweep

    variant = args.variant or args.vllm_version or release_variant(NEWEST_RELEASE)
    model = load_model(args.model)
    flags = flags_from(args)
    caching_off = not flags.enable_prefix_caching or flags.mamba_cache_mode == "none"
    if args.sweep and not caching_off:
        field, values = args.sweep
        rows = sweep(model, flags, variant, field, values)
        print(json.dumps(rows, indent=2) if args.json else render_sweep(field, rows))
        return 0 if all(r.get("ok") for r in rows) else 1
    deployment = resolve_deployment(model, flags, variant)
    if caching_off:  # for every value a sweep would give its flag too: none turns caching on
        message = "prefix caching of the recurrent state is off (mamba cache mode none): nothing is ever restored"
        print(json.dumps({"ok": False, "why": [message]}) if args.json else f"NOT ALIGNED: {message}")
        return 1
    if args.emit_geometry:
        try:
            Path(args.emit_geometry).write_text(geometry_toml(deployment.geometry), encoding="utf-8")
        except OSError as error:
            raise UsageError(f"--emit-geometry: cannot write {args.emit_geometry}: {error.strerror}") from None
    if args.emit_vllm_test:
        _emit_vllm_test(deployment, args.emit_vllm_test)
    result = analyse(deployment, variant, verify_up_to=args.verify_law_up_to)
    if args.confirm_vllm:
        from proofs.real_vllm.confirm import confirm

        result.confirm_vllm = confirm(result.plan, result.hit_law.checked, progress=None if args.json else _progress)
        if result.confirm_vllm["disagreements"]:
            result.why.append("the real vLLM scheduler disagrees with the model (--confirm-vllm)")
    if args.plot:
        from proofs.deployment.restore_plot import plot_restores

        try:
            plot_restores(result.plan, args.plot, offload=deployment.offload)
        except OSError as error:
            raise UsageError(f"--plot: cannot write {args.plot}: {error.strerror}") from None
    print(json.dumps(result.to_json(), indent=2) if args.json else render_text(result, explain=args.explain))
    return 0 if result.ok else 1


def _progress(done: int, total: int) -> None:
    print(f"  --confirm-vllm: {done}/{total} prompt lengths run on the real scheduler", file=sys.stderr, flush=True)


def _emit_vllm_test(deployment, path: str) -> None:
    """The deployment's prefill under vLLM 0.33.0 (the split a vLLM checkout
    runs), cut just past its first checkpoint off a target boundary."""
    from models.plan import plan
    from models.prefill import run_prefill
    from models.variants import BASELINE
    from proofs.mining.vllm_test import case_from_plan, render

    p = plan(BASELINE, deployment.geometry)
    budget = p.geometry.deployment.max_num_scheduled_tokens
    published = run_prefill(p, budget).published
    off = [e for e in published if any(e % span for span in p.target_spans)]
    if not off:
        raise UsageError("--emit-vllm-test: under vLLM 0.33.0 every published checkpoint is on target: no case")
    prompt = min(p.geometry.request.prompt_tokens, off[0] + 2 * p.split.block + 1)
    why = f"{deployment.geometry.name}: the checkpoint at {off[0]:,} lies off the target spans"
    case = case_from_plan(p, deployment.geometry.name, why, prompt_tokens=prompt)
    command = shlex.join(["gridproof", *sys.argv[1:]]) if sys.argv[1:2] == ["check"] else "gridproof check"
    try:
        Path(path).write_text(render([case], command), encoding="utf-8")
    except OSError as error:
        raise UsageError(f"--emit-vllm-test: cannot write {path}: {error.strerror}") from None
