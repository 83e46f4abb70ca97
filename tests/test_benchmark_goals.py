"""The benchmark says of each figure held to a target whether it is met."""

from proofs.bench.benchmark import CACHED_RERUN_GOAL, TIER_ALL_TARGETS, against


def test_a_figure_is_met_or_not_met_with_the_figure_said():
    assert against(6.04, TIER_ALL_TARGETS) == "the target of 10 s met; the goal of 3 s not met (6.0 s)"
    assert against(3.0, TIER_ALL_TARGETS) == "the target of 10 s met; the goal of 3 s met"
    assert against(0.07, (("the goal", CACHED_RERUN_GOAL),)) == "the goal of 0.5 s met"
