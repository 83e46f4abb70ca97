"""The hit law against `simulate` on every prompt length: models/every_length.py
(the model's step and restore test read with numpy arrays, one lane per
length) against the int reading and `simulate` itself, and the proved law
against it for every built-in deployment."""

from __future__ import annotations

import json
import random

import numpy
import pytest

from models import arith
from models.deploy import resolve_deployment
from models.every_length import gpu_reuse_every_length
from models.hf_config import builtin_model_names, load_model
from models.plan import plan
from models.scheduler import last_cacheable_position
from models.variants import get_variant
from proofs import bench_check
from proofs.hitlaw import simulated_hit

DEPLOYMENTS = list(bench_check.deployments(builtin_model_names()))
IDS = [
    f"{model}-{variant}-{'judging' if flags.tensor_parallel_size == 16 else 'defaults'}"
    for model, variant, flags in DEPLOYMENTS
]


def _plan(model, variant_name, flags):
    variant = get_variant(variant_name)
    return plan(variant, resolve_deployment(load_model(model), flags, variant).geometry)


def test_the_vector_reading_of_arith_is_the_int_reading_lane_by_lane():
    rng = random.Random(0)
    xs = [rng.randrange(-50_000, 50_000) for _ in range(500)]
    ds = [rng.randrange(1, 700) for _ in range(500)]
    x, d = numpy.array(xs), numpy.array(ds)
    cases = {
        "floordiv": lambda a, b: arith.floordiv(a, b),
        "mod": lambda a, b: arith.mod(a, b),
        "cdiv": lambda a, b: arith.cdiv(a, b),
        "round_down": lambda a, b: arith.round_down(a, b),
        "divides": lambda a, b: arith.divides(b, a),
        "ite": lambda a, b: arith.ite(a > b, a, b * 3),
        "minimum": lambda a, b: arith.minimum(a, b, 7),
        "maximum": lambda a, b: arith.maximum(a, 7, b),
        "all_of": lambda a, b: arith.all_of(True, a > 0, b > 300),
        "any_of": lambda a, b: arith.any_of(False, a > 0, b > 300),
        "implies": lambda a, b: arith.implies(a > 0, b > 300),
        "negate": lambda a, b: arith.negate(a > b),
    }
    for name, f in cases.items():
        lanes = numpy.broadcast_to(f(x, d), x.shape)
        assert [int(v) for v in lanes] == [int(f(a, b)) for a, b in zip(xs, ds, strict=True)], name


def test_a_zero_divisor_raises_in_the_vector_reading_as_in_python():
    with pytest.raises(ZeroDivisionError):
        arith.floordiv(numpy.array([4, 5]), numpy.array([2, 0]))
    with pytest.raises(ZeroDivisionError):
        arith.mod(numpy.array([4, 5]), 0)


@pytest.mark.parametrize(("model", "variant", "flags"), DEPLOYMENTS, ids=IDS)
def test_every_length_is_what_simulate_reports(model, variant, flags):
    p = _plan(model, variant, flags)
    up_to = 200_000
    reuse = gpu_reuse_every_length(p, p.geometry.deployment.max_num_scheduled_tokens, up_to)
    lengths = [*range(1, 300), *random.Random(1).sample(range(300, up_to + 1), 40)]
    assert [n for n in lengths if reuse[n - 1] != simulated_hit(p, n)] == []


@pytest.mark.parametrize(("model", "variant", "flags"), DEPLOYMENTS, ids=IDS)
def test_the_proved_hit_law_is_simulates_reuse_on_every_length_up_to_40000(model, variant, flags):
    # A CI-sized run of `python3 -m proofs.bench_check` (every L to 200,000: docs/check.md).
    row = bench_check.compare(model, variant, flags, 40_000)
    assert row["proved"], row.get("reason")
    assert row["mismatches"] == [] and row["spot_mismatches"] == []


def test_a_law_one_block_late_is_caught_by_the_comparison():
    model, variant, flags = DEPLOYMENTS[0]
    p = _plan(model, variant, flags)
    reuse = gpu_reuse_every_length(p, p.geometry.deployment.max_num_scheduled_tokens, 40_000)
    lengths = numpy.arange(1, 40_001)
    late = last_cacheable_position(p.variant, p.split, lengths + p.split.block)
    assert (late != reuse).any()


def test_check_verifies_the_law_against_simulate_when_asked(capsys):
    from proofs.cli import main

    status = main(["check", "--model", "qwen3-next", "--verify-law-up-to", "30000", "--json"])
    law = json.loads(capsys.readouterr().out)["hit_law"]
    assert status == 0
    assert law["against_simulate"] == {"up_to": 30_000, "mismatches": []}


def test_a_wrong_law_is_reported_as_disagreeing_with_simulate():
    from dataclasses import replace

    from proofs.deployment_check import law_against_simulate
    from proofs.hitlaw import prove_hit_law

    model, variant, flags = DEPLOYMENTS[0]
    p = _plan(model, variant, flags)
    law = prove_hit_law(p)
    late = replace(law, law=lambda n: law.law(n + p.split.block))
    assert law_against_simulate(p, law, 30_000)["mismatches"] == []
    assert law_against_simulate(p, late, 30_000)["mismatches"] != []
