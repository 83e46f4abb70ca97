"""Long prefills are condensed where they repeat (models/prefill.py: Trace.repeat), and what the
prefix cache keeps and restores is read from the condensed positions (models/prefix_cache.py,
models/offload.py, models/positions.py). Both must give exactly what the step-by-step run gives:
checked here on many random geometries, budgets and prompts, with condensing forced on every trace
that repeats at all."""

from __future__ import annotations

import json
import random

import pytest

from models.geometry import BUILTIN_DIR, load_geometry, parse_geometry
from models.offload import OffloadNotModelled, offload_hit
from models.plan import plan
from models.positions import Positions
from models.prefill import run_prefill
from models.prefix_cache import LookupFailure, RetentionError, cached_prefix, gpu_hit
from models.variants import get_variant
from proofs.cli import main
from proofs.faults.handwritten import MUTANTS, PREFIX, in_effect, known_names

CASES = 250


def random_geometry(rng: random.Random):
    page = rng.choice([16, 32, 48, 64, 96])
    dcp = rng.choice([1, 2, 4])
    deployment = {
        "dcp_size": dcp,
        "block_size": page,
        "max_num_scheduled_tokens": rng.choice([page // 2, page, 3 * page, 100, 257, 1000]),
        "eagle_block_drop": rng.random() < 0.5,
        "hash_lookahead_tokens": rng.choice([0, 0, 1, 7]),
        "offload_blocks_per_chunk": rng.choice([1, 1, 2]),
        "shared_prefix_checkpoint": rng.random() < 0.3,
        "long_prefill_token_threshold": rng.choice([0, 0, 500]),
    }
    if rng.random() < 0.6:
        deployment["mamba_block_size"] = rng.choice([page, 2 * page, 3 * page, 8 * page, dcp * page, 40, 112])
    if rng.random() < 0.4:
        deployment["prefill_checkpoint_alignment"] = rng.choice([8, 16])
    if rng.random() < 0.3:
        deployment["hash_block_size"] = page
    groups = [
        {"kind": "target-attention", "block_size": page, "dcp_sharded": rng.random() < 0.7},
        {"kind": "recurrent", "block_size": page},
    ]
    if rng.random() < 0.5:
        draft = rng.choice([page, 16, 80])
        groups.append({"kind": "draft-attention", "block_size": draft, "eagle": rng.random() < 0.7})
    prompt = rng.choice([rng.randint(1, 5_000), rng.randint(5_000, 200_000)])
    request = {"prompt_tokens": prompt, "output_tokens": rng.choice([0, 0, 1, 50])}
    return parse_geometry({"deployment": deployment, "groups": groups, "request": request}, name="random")


def restores(geometry, the_plan, trace) -> tuple | None:
    """What the prefix cache keeps after the trace (the recurrent keys, the stale ones, those offered to a
    connector, each attention bucket's keys) and what a later identical request is restored from it and
    through offload alone; None where vLLM refuses the retention interval."""
    prompt, tokens = geometry.request.prompt_tokens, geometry.request.num_tokens
    try:
        cached = cached_prefix(the_plan, trace, prompt, tokens)
    except RetentionError:
        return None
    try:
        gpu = gpu_hit(cached, tokens, tokens)
    except LookupFailure:
        gpu = "vLLM's lookup fails"
    try:
        offload = offload_hit(the_plan, cached, tokens, tokens)
    except OffloadNotModelled:
        offload = "not modelled"
    keys = [(k.full_up_to, list(k.positions), list(k.stale), list(k.offered)) for k in cached.keys]
    return keys, gpu, offload


def test_condensed_prefills_equal_the_step_by_step_ones():
    rng = random.Random(20)
    # The engine variants and the hand-written mutants, each patched in while it runs, except the mutants of
    # the condensing itself (the catalogue's prefill-condensed-is-explicit and cache-condensed-is-explicit
    # refute those, the positions a condensed trace keys among them), and one whose plan leaves the cadence
    # out of the spans: the condensing's grid period is a multiple of R because the recurrent group's span
    # is R (plan-group-spans refutes it).
    condensing = {
        m.name
        for m in MUTANTS.values()
        if m.patch.function in ("run_prefill", "_shifted", "Trace.chunk_positions")
        or m.patch.function.startswith("PrefillSteps.")
    }
    condensing.add("recurrent-block-unresolved")
    names = [n for n in known_names() if n.removeprefix(PREFIX) not in condensing]
    condensed = 0
    for case in range(CASES):
        geometry = random_geometry(rng)
        name = rng.choice(names)
        budgets = rng.choice(
            [[geometry.deployment.max_num_scheduled_tokens], [rng.randint(1, 300), 97, 512], [rng.randint(20, 400)]]
        )
        with in_effect(name) as variant:
            the_plan = plan(variant, geometry)
            slow = run_prefill(the_plan, budgets, condense_beyond=None)
            fast = run_prefill(the_plan, budgets, condense_beyond=0)
            where = (case, name, geometry, budgets)
            assert list(fast.every_chunk()) == slow.chunks, where
            assert fast.steps == len(slow.chunks) and fast.stalled_at == slow.stalled_at, where
            for field in ("chunk_ends", "published", "private"):
                assert list(getattr(fast, field)) == list(getattr(slow, field)), (field, *where)
            assert restores(geometry, the_plan, fast) == restores(geometry, the_plan, slow), where
        condensed += fast.repeat is not None
    assert condensed >= CASES // 4, condensed  # the fast path was taken, not only the slow one twice


def test_positions_answer_as_the_list_does():
    rng = random.Random(7)
    for _ in range(300):
        ranges = [range(s, s + step * rng.randint(1, 30), step) for s, step in _starts(rng)]
        positions = Positions(ranges)
        values = sorted(v for r in ranges for v in r)
        bound = rng.randint(0, 2_000)
        size = rng.randint(1, 90)
        assert list(positions) == values and positions.count == len(values)
        assert positions.at_most(bound) == max((v for v in values if v <= bound), default=None)
        assert list(positions.multiples_of(size)) == [v for v in values if v % size == 0]
        assert positions.first(3) == values[:3] and positions.last(3) == values[-3:]


def _starts(rng: random.Random):
    return [(rng.randint(1, 500), rng.randint(1, 60)) for _ in range(rng.randint(1, 4))]


def test_a_trillion_token_prompt_is_answered_from_the_repeats():
    geometry = load_geometry("kimi-k3-tp16-dcp16")
    trace = run_prefill(plan(get_variant("baseline"), geometry), 4096, prompt_tokens=10**12)
    assert trace.repeat is not None and trace.steps == -(-(10**12) // 3840)
    assert len(trace.chunks) < 100
    assert trace.published.at_most(10**12) == 10**12 - 2_560  # the last 3,840-token chunk end below the prompt's


@pytest.mark.parametrize("prompt", ["1000000000000", "100000000000000"])
def test_simulate_answers_a_huge_prompt(capsys, prompt):
    assert main(["simulate", "kimi-k3-tp16-dcp16", "--prompt-tokens", prompt]) == 0
    out = capsys.readouterr().out
    assert "more times" in out and f"prompt {int(prompt):,} tokens" in out


def test_a_geometry_file_with_a_huge_prompt(tmp_path, capsys):
    """10^30 tokens: simulate answers from the repeats; mine --geometry, whose case lists every published
    state, refuses in one line naming the file."""
    text = (
        (BUILTIN_DIR / "kimi-k3-tp16-dcp16.toml")
        .read_text()
        .replace("prompt_tokens = 100000", f"prompt_tokens = {10**30}")
    )
    path = tmp_path / "huge.toml"
    path.write_text(text)
    assert main(["simulate", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["published"]["count"] == -(-(10**30) // 3840) - 1
    argv = [
        "mine",
        "prefill-published-on-target-boundaries",
        "--geometry",
        str(path),
        "--no-vllm",
        "--out",
        str(tmp_path),
    ]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"gridproof: error: {path}: a prefill of ") and err.count("\n") == 1
