"""Where prefill ends: the model's `prefill_end` (max(P, N - 1)) against the
real vLLM 0.33.0 split, which leaves a chunk untouched from that position on.
The catalogue's prefill-end theorem proves that the engine step's split of
tokens into prefill and decode follows `prefill_end`; this pins `prefill_end`
itself to vLLM's own behaviour, fresh and resumed requests alike."""

from conformance.tally import compare
from models.scheduler import SplitCall, SplitParams, prefill_end, split
from models.variants import BASELINE

# A grid of 4 tokens, no other stop: in prefill a chunk that starts off the
# grid is cut at the next grid point, past the prefill it is left whole.
PARAMS = SplitParams(
    block=4,
    sched_block=4,
    hash_block=4,
    eagle_drop=False,
    lookahead=0,
    max_scheduled=64,
    long_prefill_threshold=0,
    partial_hits=False,
    checkpoint_blocks=False,
    checkpoint_alignment=0,
    shared_prefix=False,
)


def _calls_around_the_end():
    """Fresh and resumed requests, every start from three tokens before the
    prefill's end to the last token, each asking for all it has left."""
    for prompt in range(1, 30):
        for outputs in range(0, 7):
            tokens = prompt + outputs
            end = max(prompt, tokens - 1)
            for computed in range(max(0, end - 3), tokens):
                yield SplitCall(computed=computed, requested=tokens - computed, prompt=prompt, tokens=tokens)


def test_the_split_leaves_chunks_whole_exactly_from_the_prefill_end(real_split):
    calls = list(_calls_around_the_end())
    compare(
        "split at the prefill end",
        [(PARAMS, c) for c in calls],
        lambda case: split(BASELINE, *case),
        lambda case: real_split.split(*case),
    )
    cut_inside = 0
    for call in calls:
        whole = real_split.split(PARAMS, call) == call.requested
        past_the_end = call.computed >= prefill_end(call.prompt, call.tokens)
        assert whole or not past_the_end, call
        if not past_the_end and not whole:
            cut_inside += 1
        # A resumed request's last token is decode's: left whole.
        if call.tokens > call.prompt and call.computed == call.tokens - 1:
            assert past_the_end and whole, call
    assert cut_inside > 100  # the grid cuts chunks inside the prefill: the check above can fail
