"""The end-to-end comparison (proofs/real_vllm/end_to_end.py) against another vLLM release than the
one installed beside gridproof: run in that release's own virtual environment, under the variant that
answers for it (models.variants.RELEASES: `vllm-0.34.0` for 0.34.0).

The release lives in `$GRIDPROOF_VLLM_VENVS/vllm-X.Y.Z` (default ~/.cache/gridproof/venvs), a venv made as
tests/install-conformance.sh makes it: CPU torch, the release and its pure-Python requirements from
a pinned lock, nothing resolved (tests/conformance/requirements-vllm-X.Y.Z.txt). `run` starts that
venv's python on this module with `--inside`, gridproof's own source first on its path; the process
inside runs the harness's cases (`end_to_end.cases_for` over the built-in deployments, `check`'s
families resolved under the variant, and generated deployments) and writes one JSON line per case;
the caller tallies them.

The harness is written against vLLM 0.33.0's API. `adapt_harness` bridges what 0.34.0 changed, each
a change the harness itself needs (each listed here), applied inside only and only where
the loaded vLLM lacks the 0.33.0 form:

- `ModelRunnerOutput` has no `req_id_to_index` (the scheduler reads `req_ids`): the harness passes it;
- `VllmConfig.num_hash_lookahead_tokens` is a field resolved at construction
  (`_resolve_num_hash_lookahead_tokens`), no longer a property read on access: the harness sets its
  speculative stand-in after construction, so the lookahead is resolved again before the block sizes;
- the speculative stand-in answers 0.34.0's `speculator_config` (num_lookahead_tokens,
  num_prefill_lookahead_tokens, max_num_new_slots_for_drafting, max_num_draft_seqs) and
  `uses_target_hidden_states`, which replace `use_eagle` and the config's own properties;
- the native OffloadingConnector runs beside a hash lookahead (it opts in to lookahead block hashes),
  so `check_offload_setting` refuses no lookahead and an identical resend is asked of offload
  whatever the lookahead (`asks_offload`);
- the offload worker resolves device pointers from the canonical KV caches before each transfer
  (`resolve_device_pointers`): the harness's caches list no group, where vLLM asks one entry (an empty
  list of tensors, here) per cache group;
- a release variant carries no patch (`patch_for`).

`python3 -m proofs.real_vllm.other_release 0.34.0 [--sweep] [--seed N] [--geometry NAME]`: the
comparison, its tally, and each disagreement with the commands that reproduce it; exit 0 when every
case agrees, 1 otherwise, 2 on bad input (one line).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

from models.errors import GridproofError

PROJECT = Path(__file__).resolve().parents[2]
VENVS_ENV = "GRIDPROOF_VLLM_VENVS"
# Under the home directory, not $XDG_CACHE_HOME: the test session and CI point that at a proof cache of
# their own, where the venv tests/install-conformance.sh made is not.
DEFAULT_VENVS = Path.home() / ".cache" / "gridproof" / "venvs"
SAMPLE_BUILTIN = 8  # cases per built-in deployment in the sample
SAMPLE_FAMILY = 6  # cases per check family deployment in the sample
SAMPLE_GENERATED = 6  # generated deployments in the sample, 8 cases each
SWEEP_GENERATED = 60


class OtherReleaseError(GridproofError):
    """The release cannot be run: not modelled, or no venv holds it."""


def venv_python(version: str) -> Path:
    """The python of the venv that holds vLLM `version`."""
    from models.variants import release_variant

    release_variant(version)  # a release gridproof models, else one line
    root = Path(os.environ.get(VENVS_ENV) or DEFAULT_VENVS)
    python = root / f"vllm-{version}" / "bin" / "python"
    if not python.exists():
        raise OtherReleaseError(
            f"vLLM {version}: no venv at {python.parent.parent} (bash tests/install-conformance.sh makes it; "
            f"${VENVS_ENV} moves it)"
        )
    return python


# --- inside the release's venv --------------------------------------------------------------------


def installed_release() -> str:
    import vllm

    return vllm.__version__


def adapt_harness() -> list[str]:
    """Bridge the harness to the loaded vLLM where its API moved since 0.33.0; returns what was
    bridged (nothing on 0.33.0)."""
    from vllm.config.vllm import VllmConfig
    from vllm.v1 import outputs
    from vllm.v1.core import kv_cache_utils

    from models.variants import RELEASES
    from proofs.real_vllm import end_to_end, engine

    bridged = []
    output_class = outputs.ModelRunnerOutput
    if "req_id_to_index" not in output_class.__dataclass_fields__:

        class ModelRunnerOutput(output_class):
            """The harness's ModelRunnerOutput, its `req_id_to_index` dropped."""

            def __init__(self, *args, req_id_to_index=None, **kwargs):
                super().__init__(*args, **kwargs)

        outputs.ModelRunnerOutput = ModelRunnerOutput
        bridged.append("ModelRunnerOutput without req_id_to_index")

    if hasattr(VllmConfig, "_resolve_num_hash_lookahead_tokens"):
        resolve_sizes = kv_cache_utils.resolve_kv_cache_block_sizes

        def resolve_kv_cache_block_sizes(kv_cache_config, config):
            config.num_hash_lookahead_tokens = config._resolve_num_hash_lookahead_tokens()
            return resolve_sizes(kv_cache_config, config)

        kv_cache_utils.resolve_kv_cache_block_sizes = resolve_kv_cache_block_sizes
        stand_in = engine.speculative_stand_in

        def speculative_stand_in(eagle_block_drop, lookahead, prefill_lookahead, has_draft, draft_slots=0):
            speculative = stand_in(eagle_block_drop, lookahead, prefill_lookahead, has_draft, draft_slots)
            if speculative is not None:
                k = max(1, prefill_lookahead)
                speculative.uses_target_hidden_states = True
                speculative.custom_method = None
                speculative.speculator_config = SimpleNamespace(
                    num_lookahead_tokens=speculative.num_speculative_tokens,
                    num_prefill_lookahead_tokens=k,
                    max_num_new_slots_for_drafting=speculative.max_num_new_slots_for_drafting,
                    max_num_draft_seqs=lambda max_num_batched_tokens: None,
                    uses_target_hidden_states=True,
                )
            return speculative

        engine.speculative_stand_in = speculative_stand_in
        engine.check_offload_setting = lambda setting: None
        end_to_end.asks_offload = lambda case: case.later == end_to_end.RESEND
        bridged.append("the hash lookahead resolved after the speculative stand-in, 0.34.0's speculator_config")
        bridged.append("offload beside a hash lookahead")

    from vllm.distributed.kv_transfer.kv_connector.v1.offloading import worker as offload_worker

    if hasattr(offload_worker, "resolve_device_pointers"):
        from vllm.v1.kv_offload.base import CanonicalKVCaches

        resolve_pointers = offload_worker.resolve_device_pointers

        def resolve_device_pointers(spec, caches):
            if not caches.group_data_refs:  # the harness's: no KV tensors, and no group listed
                caches = CanonicalKVCaches(tensors=[], group_data_refs=[[] for _ in spec.group_sizes])
            return resolve_pointers(spec, caches)

        offload_worker.resolve_device_pointers = resolve_device_pointers
        bridged.append("the offload worker's device pointers over one empty entry per cache group")

    patch_for = end_to_end.patch_for
    releases = {v.name for v in RELEASES.values()}
    end_to_end.patch_for = lambda variant: None if variant.name in releases else patch_for(variant)
    return bridged


def deployments(variant, sweep: bool, rng: random.Random, only: str | None = None):
    """(label, geometry, budgets, cases per deployment or None for all) to compare: the built-in
    geometries (tests/conformance/engine_geometries.py), each built-in family as `check` resolves it
    under the variant (with EAGLE and native offload, with MTP, and with neither), and generated ones."""
    sys.path.insert(0, str(PROJECT / "tests"))
    from conformance.engine_geometries import builtin_deployments, random_deployment

    from models.deploy import ServeFlags, resolve_deployment
    from models.hf_config import builtin_model_names, load_model

    found = []
    for geometry, budgets in builtin_deployments():
        found.append((geometry.name, geometry, budgets, None if sweep else SAMPLE_BUILTIN))
    eagle = {"method": "eagle", "num_speculative_tokens": 3}
    offload = {"kv_connector": "OffloadingConnector"}
    flag_sets = (
        {"max_num_scheduled_tokens": 2048},
        {"max_num_scheduled_tokens": 4096, "speculative_config": eagle, "kv_transfer_config": offload},
        {"max_num_scheduled_tokens": 1000, "speculative_config": eagle, "prefix_cache_retention_interval": None},
    )
    for name in builtin_model_names():
        model = load_model(name)
        for flags in flag_sets:
            try:
                resolved = resolve_deployment(model, ServeFlags(**flags), variant)
            except GridproofError:
                continue
            geometry = resolved.geometry
            budget = geometry.deployment.max_num_scheduled_tokens
            label = f"{name} {'+'.join(k for k in flags if k != 'max_num_scheduled_tokens') or 'plain'}"
            found.append((label, geometry, [budget], None if sweep else SAMPLE_FAMILY))
    # The README's deployment: Kimi-K3 at TP16/DCP16 as `check` reads its flags.
    readme = {
        "tensor_parallel_size": 16,
        "decode_context_parallel_size": 16,
        "block_size": 768,
        "max_num_scheduled_tokens": 4096,
        "speculative_config": eagle,
        "kv_transfer_config": offload,
    }
    geometry = resolve_deployment(load_model("kimi-k3"), ServeFlags(**readme), variant).geometry
    found.append(("kimi-k3 readme", geometry, [4096], None if sweep else SAMPLE_FAMILY))
    for number in range(SWEEP_GENERATED if sweep else SAMPLE_GENERATED):
        geometry, budgets = random_deployment(rng, number)
        found.append((geometry.name, geometry, budgets, None if sweep else 8))
    if only is not None:
        found = [entry for entry in found if only in (entry[0], entry[1].name)]
        if not found:
            raise OtherReleaseError(f"--geometry {only}: no such deployment among the compared ones")
    return found


def inside(version: str, sweep: bool, seed: int, only: str | None) -> int:
    """Run every case here (the release's venv) and write one JSON line per case."""
    sys.path.insert(0, str(PROJECT / "tests"))
    from conformance.engine_geometries import prompt_limit

    from models.variants import release_variant
    from proofs.real_vllm import end_to_end, quietly

    loaded = installed_release()
    if loaded != version:
        raise OtherReleaseError(f"this venv holds vLLM {loaded}, not {version}")
    variant = release_variant(version)
    bridged = quietly(adapt_harness)
    print(json.dumps({"bridged": bridged, "variant": variant.name}), flush=True)
    real = end_to_end.RealCases()
    rng = random.Random(seed)
    for label, geometry, budgets, count in deployments(variant, sweep, rng, only):
        cases = list(end_to_end.cases_for(geometry, budgets, prompt_limit(geometry, budgets), rng, variant))
        cases.append(end_to_end.Case(geometry, budgets[-1], geometry.request.prompt_tokens))
        if count is not None and len(cases) > count:
            cases = rng.sample(cases, count)
        for case in cases:
            started = time.perf_counter()
            model = end_to_end.model_observation(case, variant)
            observed = real.observe(case, variant)
            found = end_to_end.differences(model, observed)
            line = {
                "deployment": label,
                "case": case.label(),
                "offload": observed.offload is not None,
                "lookahead": case.geometry.deployment.hash_lookahead_tokens,
                "differences": found,
                "seconds": round(time.perf_counter() - started, 3),
            }
            if found:
                line["reproduce"] = case.reproduce(variant=variant)
            print(json.dumps(line), flush=True)
    return 0


def inside_lengths(version: str, request_file: str) -> int:
    """Here (the release's venv): one deployment's resends at the lengths a request file names
    (`resends`), one JSON line per length: what the real engine restores, and where the model differs."""
    import tempfile

    from models.geometry import load_geometry
    from models.variants import release_variant
    from proofs.real_vllm import end_to_end, quietly

    loaded = installed_release()
    if loaded != version:
        raise OtherReleaseError(f"this venv holds vLLM {loaded}, not {version}")
    variant = release_variant(version)
    quietly(adapt_harness)
    request = json.loads(Path(request_file).read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "deployment.toml"
        path.write_text(request["geometry_toml"], encoding="utf-8")
        geometry = load_geometry(path)
    real = end_to_end.RealCases()
    for length in request["lengths"]:
        case = end_to_end.Case(geometry, request["budget"], length)
        observed = real.observe(case, variant)
        found = end_to_end.differences(end_to_end.model_observation(case, variant), observed)
        print(json.dumps({"length": length, "hit": observed.hit, "differences": found}), flush=True)
    return 0


# --- the caller ----------------------------------------------------------------------------------


def resends(version: str, geometry, budget: int, lengths: list[int], echo=None) -> list[dict]:
    """A deployment's identical resends at `lengths` on vLLM `version` in its venv: per length, what
    the real engine restores and where the model differs (`echo` sees each as it comes)."""
    import tempfile

    from models.deploy import geometry_toml

    python = venv_python(version)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(PROJECT), os.environ.get("PYTHONPATH", "")])}
    lines = []
    with tempfile.TemporaryDirectory() as directory:
        request = Path(directory) / "resends.json"
        request.write_text(
            json.dumps({"geometry_toml": geometry_toml(geometry), "budget": budget, "lengths": lengths}),
            encoding="utf-8",
        )
        command = [str(python), "-m", "proofs.real_vllm.other_release", version, "--inside", "--resends", str(request)]
        with subprocess.Popen(command, cwd=PROJECT, env=env, stdout=subprocess.PIPE, text=True) as process:
            for text in process.stdout:
                lines.append(json.loads(text))
                if echo is not None:
                    echo(lines[-1])
    if process.returncode != 0:
        raise OtherReleaseError(f"vLLM {version}'s run ended with exit {process.returncode}")
    return lines


def run(version: str, sweep: bool = False, seed: int = 0, only: str | None = None, echo=None) -> dict:
    """The comparison on vLLM `version` in its venv: the tally, and every disagreeing case."""
    python = venv_python(version)
    command = [str(python), "-m", "proofs.real_vllm.other_release", version, "--inside", "--seed", str(seed)]
    command += ["--sweep"] if sweep else []
    command += ["--geometry", only] if only else []
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(PROJECT), os.environ.get("PYTHONPATH", "")])}
    tally = {"cases": 0, "agree": 0, "offload": 0, "lookahead": 0, "disagreements": [], "bridged": []}
    with subprocess.Popen(command, cwd=PROJECT, env=env, stdout=subprocess.PIPE, text=True) as process:
        for text in process.stdout:
            line = json.loads(text)
            if "bridged" in line:
                tally["bridged"] = line["bridged"]
                continue
            tally["cases"] += 1
            tally["agree"] += not line["differences"]
            tally["offload"] += line["offload"]
            tally["lookahead"] += line["lookahead"] > 0
            if line["differences"]:
                tally["disagreements"].append(line)
            if echo is not None:
                echo(line)
    if process.returncode != 0:
        raise OtherReleaseError(f"vLLM {version}'s run ended with exit {process.returncode}")
    return tally


def main(argv: list[str] | None = None) -> int:
    """The command (see above): the comparison against release `version`, each disagreement printed with the
    commands that reproduce it, then the tally; with the hidden --inside, the side run in the release's venv.
    Exit status 0 when every case agrees, 1 otherwise, 2 on a GridproofError (one line on stderr)."""
    parser = argparse.ArgumentParser(
        prog="python3 -m proofs.real_vllm.other_release", description=__doc__.split("\n")[0]
    )
    parser.add_argument("version", help="the vLLM release, e.g. 0.34.0")
    parser.add_argument("--sweep", action="store_true", help="every case of every deployment (else a sample)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--geometry", help="only this deployment (a built-in geometry or a family label)")
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--resends", help=argparse.SUPPRESS)  # with --inside: a request file of `resends`
    args = parser.parse_args(argv)
    try:
        if args.inside and args.resends:
            return inside_lengths(args.version, args.resends)
        if args.inside:
            return inside(args.version, args.sweep, args.seed, args.geometry)
        tally = run(args.version, args.sweep, args.seed, args.geometry)
    except GridproofError as error:
        print(error, file=sys.stderr)
        return 2
    for line in tally["disagreements"]:
        print(f"{line['deployment']}: {line['case']}\n  " + "\n  ".join(line["differences"]))
        print("  reproduce:\n" + line["reproduce"])
    print(
        f"vLLM {args.version}: {tally['agree']} of {tally['cases']} cases agree "
        f"({tally['offload']} through offload, {tally['lookahead']} with a hash lookahead)"
    )
    return 0 if tally["agree"] == tally["cases"] else 1


if __name__ == "__main__":
    sys.exit(main())
