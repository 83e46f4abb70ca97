"""Whole prefills: the model's `run_prefill` against the real split driven the
same way, compared step by step."""

import random
from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from conformance import split_inputs, tally
from conformance.generation import generated
from models.geometry import builtin_geometry_names, load_geometry
from models.plan import plan
from models.scheduler import SplitParams
from models.variants import BASELINE
from proofs.real_vllm import BASE_PLAN, prefill_steps, real_steps

EXAMPLES = 100
TRACES_PER_EXAMPLE = 16
STEPS_PER_TRACE = 150  # prompts are sized so a prefill takes about this many steps at most


def model_steps(p: SplitParams, budgets, prompt: int, outputs: int) -> list[tuple]:
    return prefill_steps(p, budgets, prompt, outputs)


def compare_prefill(real_split, p: SplitParams, budgets, prompt: int, outputs: int) -> None:
    scenario = (p, tuple(budgets), prompt, outputs)
    expected = real_steps(real_split, p, budgets, prompt, outputs)
    got = model_steps(p, budgets, prompt, outputs)
    tally.count("prefill traces", 1)

    def at(steps, case):
        i = case[1]
        return steps[i] if i < len(steps) else "no such step"

    cases = [(scenario, i) for i in range(max(len(expected), len(got)))]
    tally.compare("prefill steps", cases, lambda case: at(got, case), lambda case: at(expected, case))


def random_prefill(rng: random.Random, p: SplitParams) -> tuple[list[int], int, int]:
    """Budgets (one per step, the last repeating), prompt and outputs, sized
    so the prefill takes at most about STEPS_PER_TRACE steps."""
    budgets = [split_inputs.near(rng, [p.block, rng.randint(1, 20_000)], 2) or 1 for _ in range(rng.randint(1, 3))]
    stride = max(1, min(budgets[-1], p.block))
    limit = STEPS_PER_TRACE * stride // 2
    prompt = rng.choice((rng.randint(1, limit), split_inputs.near_multiple(rng, p.block, limit) or 1))
    outputs = rng.choice((0, 0, rng.randint(1, 3), rng.randint(0, limit // 4)))
    return budgets, prompt, outputs


@generated(EXAMPLES)
@given(p=split_inputs.split_params(), rng=st.randoms(use_true_random=True))
def test_prefill_on_generated_deployments(real_split, p, rng):
    compare_prefill(real_split, p, *random_prefill(rng, p))
    for _ in range(TRACES_PER_EXAMPLE - 1):
        q = split_inputs.random_params(rng)
        compare_prefill(real_split, q, *random_prefill(rng, q))


def test_prefill_on_the_builtin_geometries(real_split):
    for name in builtin_geometry_names():
        geometry = load_geometry(name)
        p = plan(BASELINE, geometry).split
        request = geometry.request
        for budget in (500, p.block - 1, p.block, p.block + 1, 4096, 8192, p.max_scheduled):
            prompt = min(request.prompt_tokens, STEPS_PER_TRACE * min(budget, p.block))
            for outputs in (request.output_tokens, 1, 2, p.block):
                compare_prefill(real_split, p, [budget], prompt, outputs)
                compare_prefill(real_split, p, [1, budget], prompt, outputs)


def test_the_whole_prefill_figures_seen_by_hand(real_split):
    """Figures first checked by hand against vLLM 0.33.0 on CPU, on both sides."""
    p = replace(BASE_PLAN.split, block=768, sched_block=768, hash_block=768, max_scheduled=4096)
    p = replace(p, eagle_drop=False, lookahead=0, partial_hits=False, checkpoint_blocks=False, shared_prefix=False)
    ends = [step[3] for step in real_steps(real_split, p, [4096], 100_000, 0)]
    assert len(ends) == 27 and ends[:2] == [3840, 7680] and ends[-3:] == [96_000, 99_840, 100_000]
    eagle = replace(p, eagle_drop=True)
    assert [step[3] for step in real_steps(real_split, eagle, [4096], 100_000, 0)][-2:] == [99_072, 100_000]
    wide_block = replace(p, max_scheduled=500)
    narrow = [step[3] for step in real_steps(real_split, wide_block, [500], 5000, 0)]
    assert narrow[:4] == [500, 768, 1268, 1536] and narrow[-2:] == [4608, 5000]
    for split, budget, prompt in ((p, 4096, 100_000), (eagle, 4096, 100_000), (wide_block, 500, 5000)):
        assert model_steps(split, [budget], prompt, 0) == real_steps(real_split, split, [budget], prompt, 0)
