"""The baseline split, CP and VALID against vLLM 0.33.0's own functions."""

from hypothesis import given
from hypothesis import strategies as st

from conformance import boundaries, split_inputs
from conformance.generation import generated
from conformance.tally import compare
from models.scheduler import SplitCall, SplitParams, checkpoint_position, checkpoint_valid, split
from models.variants import BASELINE

# Hypothesis examples per test, and cases compared per example: 100,000 of each function a run.
EXAMPLES = 200
PER_EXAMPLE = 500

GENERATED = generated(EXAMPLES)


def _model_split(case):
    return split(BASELINE, *case)


@GENERATED
@given(p=split_inputs.split_params(), rng=st.randoms(use_true_random=True))
def test_split_on_generated_inputs(real_split, p, rng):
    """Half of each batch varies the call under Hypothesis's deployment, half both."""
    half = PER_EXAMPLE // 2
    cases = [(p, split_inputs.random_call(rng, p)) for _ in range(half)]
    for _ in range(PER_EXAMPLE - half):
        q = split_inputs.random_params(rng)
        cases.append((q, split_inputs.random_call(rng, q)))
    compare("split", cases, _model_split, lambda case: real_split.split(*case))


def test_split_on_boundary_values(real_split):
    compare("split boundary", boundaries.split_cases(), _model_split, lambda case: real_split.split(*case))


_cp_inputs = st.tuples(
    st.integers(0, split_inputs.MAX_TOKENS), split_inputs.block_sizes(), st.booleans(), st.integers(0, 8)
)


@GENERATED
@given(first=_cp_inputs, rng=st.randoms(use_true_random=True))
def test_checkpoint_position_on_generated_inputs(real_split, first, rng):
    cases = [first, *(split_inputs.random_checkpoint_position_input(rng) for _ in range(PER_EXAMPLE - 1))]
    compare("CP", cases, lambda case: checkpoint_position(*case), lambda case: real_split.checkpoint_position(*case))


def test_checkpoint_position_on_boundary_values(real_split):
    compare(
        "CP boundary",
        boundaries.checkpoint_position_cases(),
        lambda case: checkpoint_position(*case),
        lambda case: real_split.checkpoint_position(*case),
    )


_positions = st.integers(0, split_inputs.MAX_TOKENS)
_valid_inputs = st.tuples(
    _positions,
    _positions,
    _positions,
    split_inputs.block_sizes(),
    split_inputs.block_sizes(),
    st.one_of(st.just(0), st.integers(1, 4096)),
)


@GENERATED
@given(first=_valid_inputs, rng=st.randoms(use_true_random=True))
def test_checkpoint_valid_on_generated_inputs(real_split, first, rng):
    cases = [first, *(split_inputs.random_checkpoint_valid_input(rng) for _ in range(PER_EXAMPLE - 1))]
    compare("VALID", cases, lambda case: checkpoint_valid(*case), lambda case: real_split.checkpoint_valid(*case))


def test_checkpoint_valid_on_boundary_values(real_split):
    compare(
        "VALID boundary",
        boundaries.checkpoint_valid_cases(),
        lambda case: checkpoint_valid(*case),
        lambda case: real_split.checkpoint_valid(*case),
    )


def test_the_harness_reproduces_the_figures_seen_by_hand(real_split):
    """Figures first checked by hand against vLLM 0.33.0 on CPU: the harness calls vLLM the same way."""
    assert real_split.checkpoint_position(100_000, 768, False, 0) == 99_840
    assert real_split.checkpoint_position(100_000, 768, True, 0) == 99_072
    assert real_split.checkpoint_position(768, 768, False, 0) == 0
    assert real_split.checkpoint_position(769, 768, False, 0) == 768
    p = SplitParams(
        block=768,
        sched_block=768,
        hash_block=768,
        eagle_drop=False,
        lookahead=0,
        max_scheduled=4096,
        long_prefill_threshold=0,
        partial_hits=False,
        checkpoint_blocks=False,
        checkpoint_alignment=0,
        shared_prefix=False,
    )
    assert real_split.split(p, SplitCall(computed=0, requested=4096, prompt=100_000, tokens=100_000)) == 3840
