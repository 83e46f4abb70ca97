"""Mutants that used to survive the catalogue or grind in it: each is now
killed by a theorem that reads the mutated function, or proved equivalent
before the catalogue runs."""

from __future__ import annotations

import pytest

from proofs.mutation.operators import generate
from proofs.mutation.reach import key
from proofs.mutation.run import EQUIVALENT, KILLED, _callers, decide_mutant, engine_runs, reach_of

pytestmark = pytest.mark.slow  # the catalogue on mutants (about 8 minutes)


def _decided(ident: str, summary: str, only: set[str] | None = None, every_shape: bool | None = None):
    (mutant,) = [m for m in generate((ident.split(":")[0],)) if m.ident == ident]
    assert mutant.summary == summary
    runs = engine_runs()
    reach = reach_of([mutant], runs)
    function = key(mutant.patch.module, mutant.patch.function)
    readers = reach.theorems.get(function, set()) & (only or reach.theorems.get(function, set()))
    selected = [r for r in runs if r.theorem.name in readers]
    callers = [
        (c, reach.calls.get(key(mutant.patch.module, c), []))
        for c in _callers(mutant.patch.module, mutant.patch.function)
    ]
    every_shape = function not in reach.truncated if every_shape is None else every_shape
    return decide_mutant(mutant, selected, reach.calls.get(function, []), callers, every_shape)


def test_an_equivalent_mutant_is_proved_so_without_running_the_catalogue():
    # `block` is `p.block`: every theorem that reads the function would run the same code.
    result = _decided("scheduler:last_cacheable_position:size-name:1", "block  ->  p.block")
    assert result.status == EQUIVALENT, result.reason
    assert result.theorems_run == 0


def test_a_mutant_equivalent_on_some_shapes_only_is_left_to_the_catalogue():
    # Had a theorem called the function with a shape the comparison did not
    # read, it might differ there: the catalogue runs, and the comparison
    # counts only for a mutant nothing kills.
    result = _decided(
        "scheduler:last_cacheable_position:size-name:1",
        "block  ->  p.block",
        only={"guard-exact"},
        every_shape=False,
    )
    assert result.theorems_run == 1  # guard-exact, decided for pr457-guarded only, not killing it
    assert result.status == EQUIVALENT, result.reason


@pytest.mark.parametrize(
    "ident, summary, theorem",
    [
        # The GPU prefix cache's lookup from every token of the later request: its safety notices.
        ("prefix_cache:gpu_hit:constant-1:0", "1  ->  0", "gpu-restore-safe-complete"),
        # The offload connector's cap a chunk short of the chunks it found: the chunk holding the hit is
        # then one no group stored through.
        ("offload:offload_hit:arith-1:7", "first + chunks  ->  (first + chunks - 1)", "offload-restore-safe"),
        # The 0.33.0 model converting an annotated EAGLE group as PR457 does.
        (
            "scheduler:last_cacheable_position:drop-conjunct:1",
            "p.eagle_spans and variant.converts_annotated_eagle  ->  p.eagle_spans",
            "baseline-reads-no-eagle-annotation",
        ),
    ],
)
def test_former_gaps_are_killed_by_a_refutation(ident, summary, theorem):
    result = _decided(ident, summary, only={theorem})
    assert result.status == KILLED, result.reason
    assert result.killed_by[0].startswith(f"{theorem} / ")
    assert "REFUTED, expected PROVED" in result.killed_by[0]


def test_a_private_helper_is_read_through_its_callers_only():
    from proofs.mutation.callers import private_callers

    assert private_callers("models.scheduler", "_strictly_inside") == ["chunk_end"]
    # Read by the catalogue and the source comparison too: not private.
    assert private_callers("models.scheduler", "checkpoint_valid") is None
    assert private_callers("models.prefill", "publishes") is None


def test_a_helper_mutant_that_differs_only_where_no_caller_calls_it_is_equivalent():
    # chunk_end tests a stop against the end clipped so far, never above the
    # end: `stop <= end` changes no chunk end.
    result = _decided("scheduler:_strictly_inside:relational:1", "stop < end  ->  stop <= end", only={"none"})
    assert result.status == EQUIVALENT, result.reason
    assert "equal in every caller: chunk_end" in result.reason


def test_a_helper_mutant_that_moves_a_chunk_end_is_not_equivalent():
    result = _decided("scheduler:_strictly_inside:compare-1:1", "stop < end  ->  stop < end - 1", only={"none"})
    assert result.status != EQUIVALENT
    assert "not equivalent (for baseline: ChunkEnd" in result.reason and result.witness is not None
