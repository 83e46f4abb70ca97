"""Hit-law configurations off the judged ones: a free-run residue no prompt
ever leaves at, a printed form Z3 leaves undecided where the general one is
proved, and the completeness lemma refuted when its candidates are too few."""

from __future__ import annotations

import json
from dataclasses import replace

from models.deploy import ServeFlags, resolve_deployment
from models.hf_config import FAMILY_DIR, load_model, parse_model
from models.plan import plan
from models.variants import get_variant
from proofs import hitlaw
from proofs.bench_check import KIMI_K3
from proofs.deployment_check import law_against_simulate
from proofs.solver import decide


def _plan(model: str, variant_name: str, **flags):
    variant = get_variant(variant_name)
    return plan(variant, resolve_deployment(load_model(model), ServeFlags(**flags), variant).geometry)


def test_a_residue_no_prompt_leaves_at_is_proved_so_not_left_vacuous():
    # Chunks of 5,000 on an 8,192 grid: the free run is 0, 5,000 (+ k·8,192),
    # and no prefill leaves it at 5,000 + k·8,192; that residue's obligation
    # has contradictory hypotheses, and the claim that no prompt exits there
    # is proved instead.
    p = _plan(
        "minimax",
        "pr457-guarded",
        tensor_parallel_size=16,
        decode_context_parallel_size=16,
        block_size=16,
        mamba_block_size=8192,
        max_num_scheduled_tokens=5000,
    )
    setting = hitlaw.prepare(p)
    assert setting.run.points == (0, 5000)
    law = hitlaw.prove_hit_law(p)
    assert law.proved, law.reason
    assert law_against_simulate(p, law, 60_000)["mismatches"] == []
    for residue, verdict in ((1, "PROVED"), (0, "REFUTED")):
        outcome = decide(hitlaw.never_leaves_at(p, setting.run, residue), hitlaw.VARIABLES, p.variant)
        assert outcome.verdict == verdict
    # The refutation replays: that prompt length does leave the free run at residue 0.
    tokens = outcome.counterexample["L"]
    assert hitlaw.first_exit(p, setting.run, tokens, 4 * setting.unrolling.window)[0] == 0


def test_the_general_form_decides_where_a_printed_form_is_undecided():
    p = _plan(
        "falcon-h1", "baseline", tensor_parallel_size=8, decode_context_parallel_size=2, max_num_scheduled_tokens=2048
    )
    law = hitlaw.prove_hit_law(p)
    assert law.proved and law.extra["form"] == "exit", law.reason
    assert law_against_simulate(p, law, 60_000)["mismatches"] == []


def test_the_completeness_lemma_is_refuted_with_too_few_candidates():
    # Kimi-K3's judging flags: EAGLE drop keeps the last grid point below L
    # from being restorable, so one candidate per class is not enough.
    p = _plan("kimi-k3", "baseline", **KIMI_K3)
    setting = hitlaw.prepare(p)
    for unrolling, verdict in (
        (setting.unrolling, "PROVED"),
        (replace(setting.unrolling, backoffs=1), "REFUTED"),
        (replace(setting.unrolling, classes=()), "REFUTED"),
    ):
        outcome = decide(hitlaw.free_run_best_is_largest(p, setting.run, unrolling), hitlaw.LEMMA_VARIABLES, p.variant)
        assert outcome.verdict == verdict


def test_a_general_obligation_the_linear_tactics_leave_undecided_goes_to_the_default_solver():
    # Under the linear tactics the exit form's obligation ends UNKNOWN at the
    # rlimit here; Z3's default solver proves it.
    # An MTP draft needs the count vLLM reads in Kimi-K3's text_config, which the built-in config
    # does not quote: one module, so the draft reads one token ahead as without a count.
    config = json.loads((FAMILY_DIR / "kimi-k3.json").read_text())
    model = parse_model({**config, "text_config": {"num_nextn_predict_layers": 1}}, "kimi-k3 with MTP")
    variant = get_variant("pr457")
    flags = ServeFlags(
        tensor_parallel_size=8,
        block_size=256,
        mamba_block_size=1000,
        speculative_config={"method": "mtp", "num_speculative_tokens": 2},
    )
    p = plan(variant, resolve_deployment(model, flags, variant).geometry)
    law = hitlaw.prove_hit_law(p)
    assert law.proved and law.extra["form"] == "exit", law.reason
    assert law_against_simulate(p, law, 40_000)["mismatches"] == []
