"""Bounded theorems on what `gridproof check` tells a deployer: the law it prints is the engine
model's restore (the function `simulate` runs), as computed and as its printed text reads, and its
smallest prefix that hits is the least one the model restores anything at. A fault in
proofs/deployment/restore_law.py (a formula off by a block, the EAGLE form for the plain one, a formula
printed otherwise than it is computed, a smallest hit one token late or lost) fails `prove`.

Decided by enumeration (proofs/engine/enumerated.py): the deployments `check` resolves from its built-in
families' defaults and the Kimi-K3 flags of docs/check.md, on lengths chosen apart from the ones the
law is fitted on (another seed, other multiples), each compared with `simulate`.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from functools import cache

from models.deploy import ResolvedDeployment, ServeFlags, resolve_deployment
from models.hf_config import builtin_model_names, family_config, load_model, parse_model
from models.plan import Plan, plan
from models.variants import Variant
from proofs.catalog.base import Theorem
from proofs.deployment import restore_law
from proofs.deployment.analysis import hit_law_answer
from proofs.deployment.restore_law import STEP_ALLOWANCE, lengths_checked, steps_to_check
from proofs.deployment.simulate import simulate
from proofs.engine.enumerated import Case, Checks, Enumeration, Verdict

KIMI_K3 = dict(
    tensor_parallel_size=16,
    decode_context_parallel_size=16,
    block_size=768,
    max_num_scheduled_tokens=4096,
    speculative_config={"method": "eagle", "num_speculative_tokens": 3},
    kv_transfer_config={"kv_connector": "OffloadingConnector", "kv_role": "kv_both"},
)
# The Kimi-K3 flags first: an EAGLE deployment, where a fault of the law's EAGLE form shows soonest.
DEPLOYMENTS = {
    "kimi-k3-judging": ("kimi-k3", KIMI_K3),
    **{name: (name, {}) for name in builtin_model_names()},
    "kimi-k3-judging-12288": ("kimi-k3", {**KIMI_K3, "mamba_block_size": 12288}),
    "kimi-k3-judging-dense": ("kimi-k3", {**KIMI_K3, "prefix_cache_retention_interval": None}),
    # A --max-model-len the lengths checked stay within, and one the typical request is cut to.
    "granite-4.0-h-tp2-100000": ("granite-4.0-h", {"tensor_parallel_size": 2, "max_model_len": 100_000}),
    "qwen3-next-8192": ("qwen3-next", {"max_model_len": 8192}),
    # Fewer batched tokens than a block under a larger token budget: the real prefill stalls, and no law is
    # printed (tests/conformance's prompt_budget rows hold the stall to the real scheduler).
    "qwen3-next-stalled": ("qwen3-next", {"max_num_batched_tokens": 12, "max_num_scheduled_tokens": 4096}),
    # An MTP draft of two modules (the config's counts, CONFIG_KEYS), which hashes two tokens ahead.
    "qwen3.5-mtp2": ("qwen3.5", {"tensor_parallel_size": 4, "speculative_config": {"method": "mtp"}}),
}
# Config keys set over a deployment's built-in config.json: two MTP modules, as both releases count them
# (0.33.0 num_nextn_predict_layers, 0.34.0 the n_predict Qwen3.5's mtp_num_hidden_layers gives).
CONFIG_KEYS = {"qwen3.5-mtp2": {"mtp_num_hidden_layers": 2, "num_nextn_predict_layers": 2}}
EVERY_LENGTH_UP_TO = 128
RANDOM_LENGTHS = 24
SEED = 47  # not the law's own seed: these lengths are chosen apart from the ones it is fitted on


@cache
def _deployment(variant: Variant, name: str) -> ResolvedDeployment:
    model, flags = DEPLOYMENTS[name]
    if name not in CONFIG_KEYS:
        return resolve_deployment(load_model(model), ServeFlags(**flags), variant)
    config = {**family_config(model), **CONFIG_KEYS[name]}
    return resolve_deployment(parse_model(config, name), ServeFlags(**flags), variant)


@cache
def _plan(variant: Variant, name: str) -> Plan:
    return plan(variant, _deployment(variant, name).geometry)


def _documented_lengths(p: Plan, limit: int | None, spans: int = 1) -> set[int]:
    """The lengths restore_law's documentation says a law is checked on: every length up to its
    EVERY_LENGTH_UP_TO and, one either side, each multiple of every grid and the budget up to `spans` of the
    largest (one however it thins them to fit its step allowance, four where they fit), each within
    --max-model-len."""
    split = p.split
    sizes = {int(split.hash_block), int(split.sched_block), int(split.block), p.cadence, *map(int, p.target_spans)}
    sizes.add(p.geometry.deployment.max_num_scheduled_tokens)
    found = set(range(1, restore_law.EVERY_LENGTH_UP_TO + 1))
    for size in sizes:
        found.update(
            n for k in range(1, spans * max(sizes) // size + 1) for n in (k * size - 1, k * size, k * size + 1)
        )
    return {n for n in found if n >= 1 and (limit is None or n <= limit)}


def _lengths(p: Plan) -> list[int]:
    """Every length up to EVERY_LENGTH_UP_TO, one either side of each multiple of every grid up to
    three of the largest, and RANDOM_LENGTHS at random up to 10^7."""
    split = p.split
    sizes = {int(split.hash_block), int(split.sched_block), int(split.block), p.cadence, *map(int, p.target_spans)}
    found = set(range(1, EVERY_LENGTH_UP_TO + 1))
    for size in sizes:
        for multiple in range(size, 3 * max(sizes) + 1, size):
            found.update(multiple + d for d in (-1, 0, 1))
    rng = random.Random(SEED)
    found.update(rng.randint(1, 10**7) for _ in range(RANDOM_LENGTHS))
    return sorted(n for n in found if n >= 1)


def printed(text: str) -> Callable[[int], int]:
    """The law as `check` prints it, read back from its text (not from the formula's own function): the
    floors, products and differences of the printed form, L the length. A formula printed otherwise than
    it is computed is refuted where the two differ."""
    expression = text.replace("⌊", "((").replace("⌋", "))").replace("·", "*").replace("−", "-")
    expression = re.sub(r"(?<=\d),(?=\d{3})", "", expression).replace("/", "//")
    if not re.fullmatch(r"[\dL()*+\-/ ,max]*", expression):
        raise ValueError(f"not a printed law: {text!r}")
    return lambda length: eval(expression, {"__builtins__": {}, "max": max}, {"L": length})


def _cases(variant: Variant):
    for name in DEPLOYMENTS:
        p = _plan(variant, name)
        if p.accepted or not variant.guarded:
            yield {"deployment": name}


def law_is_the_engines(variant: Variant, case: Case) -> Verdict:
    """The law as check computes it (proofs.deployment.analysis.hit_law_answer, within the deployment's
    --max-model-len) against simulate's reuse on every length of the domain, and its smallest hit; a
    deployment with a length whose prefill stalls or lookup fails has no law."""
    checks = Checks()
    deployment, p = _deployment(variant, case["deployment"]), _plan(variant, case["deployment"])
    limit = deployment.max_model_len
    answer = hit_law_answer(p, limit)
    if answer.law is None:
        return checks.verdict(f"the law is not computed: {answer.reason}")
    law = answer.law
    if law.failures:
        return _no_law_where_a_length_fails(variant, p, answer.verdict, law, checks)
    if checks.fails("a formula fits", answer.verdict == "CHECKED"):
        return checks.verdict(f"no formula fits: {law.differences[:3]}")
    if checks.fails("the lengths checked are within --max-model-len", limit is None or law.largest_checked <= limit):
        return checks.verdict(f"the law is checked up to {law.largest_checked:,}, past --max-model-len {limit:,}")
    missing = sorted(_documented_lengths(p, limit) - set(law.lengths))
    if checks.fails("the law is checked on every documented length", not missing):
        return checks.verdict(f"the law is not checked at L = {', '.join(map(str, missing[:5]))}, which it documents")
    every = lengths_checked(p, limit)
    if steps_to_check(p, every) <= STEP_ALLOWANCE:
        unchecked = sorted(set(every) - set(law.lengths))
        if checks.fails("the law is checked on every length it names where they fit", not unchecked):
            return checks.verdict(f"the law is not checked at L = {', '.join(map(str, unchecked[:5]))}, where all fit")
        missing = sorted(_documented_lengths(p, limit, spans=4) - set(law.lengths))
        if checks.fails("where they fit, the law is checked on each grid up to four of the largest", not missing):
            return checks.verdict(f"the law is not checked at L = {', '.join(map(str, missing[:5]))}, which it names")
        # Its RANDOM_LENGTHS lengths at random (seeded) up to --max-model-len or RANDOM_UP_TO: the largest of
        # so many uniform draws lies past half that range (a draw past the limit, dropped, does not).
        reach = min(limit or restore_law.RANDOM_UP_TO, restore_law.RANDOM_UP_TO) // 2
        if checks.fails("the lengths at random reach past half their range", law.largest_checked > reach):
            return checks.verdict(f"the largest length checked is {law.largest_checked:,}, not past {reach:,}")
    return _law_against_simulate(variant, p, law, limit, checks)


def _no_law_where_a_length_fails(variant: Variant, p: Plan, verdict: str, law, checks: Checks) -> Verdict:
    """A length whose resend simulate cannot restore from (the prefill stalls, or vLLM's lookup fails) leaves
    the deployment without a law: check prints none, and says why."""
    budget = p.geometry.deployment.max_num_scheduled_tokens

    def fails(length: int) -> bool:
        result = simulate(variant, p.geometry, budget, prompt_tokens=length)
        return result["reuse"] is None or result["stalled_at_step"] is not None

    first = law.failures[0]
    if checks.fails("simulate restores nothing at the first length that fails", fails(first)):
        return checks.verdict(f"L = {first:,} is listed as failing, where simulate restores something")
    earlier = next((n for n in law.lengths if n < first and fails(n)), None)
    if checks.fails("no length checked below the first that fails fails", earlier is None):
        return checks.verdict(f"the first length listed as failing is {first:,}, where {earlier:,} fails")
    if checks.differ("no law where a length fails", verdict, "NO FORMULA"):
        return checks.verdict(f"L = {first:,} stalls or fails its lookup, and check reports the law {verdict}")
    # check says why at the first length that fails, the one a deployer can reproduce soonest.
    if checks.fails("the failure is said, at the first length that fails", f"{first:,}-token" in law.failure):
        return checks.verdict(f"no law, and what it says is not of L = {first:,}: {law.failure!r}")
    return checks.verdict()


def _law_against_simulate(variant: Variant, p: Plan, law, limit: int | None, checks: Checks) -> Verdict:
    budget = p.geometry.deployment.max_num_scheduled_tokens
    as_printed = printed(law.formula.text)
    first_hit = None
    for length in _lengths(p):
        if limit is not None and length > limit:
            continue
        reuse = simulate(variant, p.geometry, budget, prompt_tokens=length)["reuse"]
        if checks.differ("the law at a length", law(length), reuse):
            return checks.verdict(f"L = {length}: the law says {law(length)}, simulate {reuse}")
        if checks.differ("the printed law at a length", as_printed(length), reuse):
            return checks.verdict(f"L = {length}: the law printed, {law.formula.text}, is {as_printed(length)}")
        if reuse and first_hit is None:
            first_hit = length
    smallest = law.smallest_hit
    if smallest is not None:
        at = simulate(variant, p.geometry, budget, prompt_tokens=smallest)["reuse"]
        before = simulate(variant, p.geometry, budget, prompt_tokens=smallest - 1)["reuse"] if smallest > 1 else 0
        if checks.fails("the smallest hit restores and the length before it does not", at > 0 and before == 0):
            return checks.verdict(f"smallest hit {smallest}: simulate restores {at} there and {before} one before")
    if checks.fails(
        "no length below the smallest hit restores, and none restores without one",
        first_hit is None or (smallest is not None and first_hit >= smallest),
    ):
        return checks.verdict(f"simulate restores at {first_hit}, below the smallest hit {smallest}")
    return checks.verdict(exercised=smallest is not None)


THEOREMS = (
    Theorem(
        "check-law-is-the-engines",
        "deploy",
        "Bounded, by enumeration: for every deployment check resolves from a built-in family's defaults, the "
        "Kimi-K3 TP16/DCP16 flags of docs/check.md (as given, with --mamba-block-size 12288, and with dense "
        "retention), two --max-model-len limits, a budget under which the prefill stalls and an MTP draft of two "
        "modules (which hashes two tokens ahead), the law check prints "
        "(proofs/deployment/analysis.hit_law_answer over restore_law.py, within --max-model-len), both as "
        "computed and as its printed text reads, equals what simulate reports a later identical request restores "
        "at every length of the domain within --max-model-len, and its smallest prefix that hits is restored "
        "something where the length before it is not, with no length of the domain below it restored anything "
        "(and none restored where it names none); the law is checked on every length its documentation names "
        "(every length up to 256 and each grid boundary and either side, within --max-model-len, and all it names "
        "wherever their prefills fit its step allowance, each grid boundary up to four of the largest then among "
        "them and its lengths at random reaching past half of "
        "--max-model-len or of 10^9), and on none past --max-model-len; and where a length's "
        "prefill stalls or its lookup fails, which simulate confirms, check states no law and says why at the first "
        "length checked that fails.",
        (),
        enumeration=Enumeration(
            f"the deployments {', '.join(DEPLOYMENTS)} (those the variant accepts); lengths: every L up to "
            f"{EVERY_LENGTH_UP_TO}, every multiple of each grid up to three of the largest with one either side, "
            f"and {RANDOM_LENGTHS} at random up to 10^7 (seed {SEED})",
            _cases,
            law_is_the_engines,
            "a deployment whose law hits",
        ),
    ),
)
