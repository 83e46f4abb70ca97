"""Deployments of many cache groups: the symbolic deployment reads the
groups its inputs name, the group theorems cover SMALL_TARGETS and
MAX_TARGETS target groups, and they see a guard that reads too few groups,
which the two-group catalogue cannot."""

from __future__ import annotations

import pytest

from models import arith
from models.geometry import RECURRENT, TARGET, load_geometry
from models.plan import plan
from models.variants import VARIANTS
from proofs.catalog import CATALOGUE, prefill
from proofs.catalog.base import Shape, deployment, symbolic_groups
from proofs.catalog.groups import MAX_TARGETS, SCALED, SHAPES, SMALL_TARGETS
from proofs.engine.solver import PROVED, REFUTED, SolverOptions
from proofs.mining.playback import geometry_inputs
from proofs.run.runner import decide_obligation, run_theorem

GROUP_THEOREMS = ("groups-published-on-target-boundaries", "groups-guard-exact")


def test_a_shape_names_one_input_per_group():
    names = [v.name for v in Shape(targets=3, recurrent=2, drafts=2).variables]
    for name in ("page", "page2", "page3", "sharded3", "rblock", "rblock2", "draft_block", "draft_block2"):
        assert name in names
    assert "page4" not in names and "rblock3" not in names and "draft_block3" not in names


def test_the_symbolic_groups_are_the_ones_the_inputs_name():
    x = {v.name: 2 for v in Shape(targets=5, recurrent=3, drafts=2).variables}
    kinds = [g.kind for g in symbolic_groups(x)]
    assert kinds.count(TARGET) == 5 and kinds.count(RECURRENT) == 3 and len(kinds) == 10


def test_without_recurrent_inputs_one_recurrent_group_sits_on_the_first_page():
    x = {"page": 6, "sharded": False, "draft_block": 4, "annotated": False}
    (recurrent,) = [g for g in symbolic_groups(x) if g.kind == RECURRENT]
    assert recurrent.block_size == 6


def test_unpaired_pages_and_shard_flags_are_refused():
    with pytest.raises(ValueError, match="in pairs"):
        symbolic_groups({"page": 6, "page2": 3, "sharded": False, "draft_block": 4, "annotated": False})


@pytest.mark.parametrize("name", GROUP_THEOREMS)
def test_every_shape_is_an_obligation(name):
    theorem = CATALOGUE[name]
    counts = {s.targets for s in SHAPES}
    assert {SMALL_TARGETS, MAX_TARGETS} <= counts and SMALL_TARGETS >= 4 and MAX_TARGETS >= 16
    for shape in SHAPES:
        assert sum(o.name.endswith(f"-{shape.name}") for o in theorem.obligations) >= 1, shape.name
    assert any(s.recurrent > 1 for s in SHAPES) and any(s.drafts > 1 for s in SHAPES)


def _guard_reading(pick):
    """pr457-guarded's check as if it read only the target groups `pick` returns."""

    def guard_accepts(variant, cadence, target_spans):
        spans = pick(tuple(target_spans))
        return not variant.guarded or arith.all_in(arith.divides(span, cadence) for span in spans)

    return guard_accepts


# Guards that read target groups by a fixed pattern of indices: each leaves a
# group out at every count from 2 (or 1) up, so the 4-target shape sees it
# without the counts 2 and 3 (docs/groups.md).
FIXED_PATTERNS = {
    "the first and the last": lambda spans: (spans[0], spans[-1]),
    "the first two": lambda spans: spans[:2],
    "the first three": lambda spans: spans[:3],
    "all but the second": lambda spans: spans[:1] + spans[2:],
    "every other one": lambda spans: spans[::2],
    "all but the first": lambda spans: spans[1:],
}


@pytest.mark.parametrize("pattern", FIXED_PATTERNS)
def test_a_guard_reading_a_fixed_pattern_of_groups_is_refuted_with_four(monkeypatch, pattern):
    monkeypatch.setattr(prefill, "guard_accepts", _guard_reading(FIXED_PATTERNS[pattern]))
    (four,) = [o for o in CATALOGUE["groups-guard-exact"].obligations if o.name == f"sufficient-{SMALL_TARGETS}t-1r-1d"]
    outcome = decide_obligation(four, VARIANTS["pr457-guarded"], SolverOptions(refute_first=True))
    assert outcome.verdict == REFUTED
    # The guard as it is reads every group: the same obligation is proved.
    monkeypatch.undo()
    assert decide_obligation(four, VARIANTS["pr457-guarded"], SolverOptions()).verdict == PROVED


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_the_scaled_geometry_reads_as_the_plan_reads_it(variant):
    """The seed's 4/12/1 deployment mapped onto the symbolic groups gives the
    cadence and target spans that models.plan gives the geometry itself."""
    geometry = load_geometry("kimi-k3-tp16-dcp16-all-groups")
    inputs = geometry_inputs(variant, geometry, [4096], 2)
    real = plan(VARIANTS[variant], geometry)
    symbolic = deployment(VARIANTS[variant], inputs)
    assert symbolic.cadence == real.cadence
    assert set(symbolic.target_spans) == set(real.target_spans)
    assert SCALED == Shape(targets=4, recurrent=12, drafts=1)


def test_a_guard_reading_two_target_groups_is_refuted_only_with_more_groups():
    """mutant:two-target-groups-only checks the first two target groups: the
    two-group guard-exact cannot tell, groups-guard-exact refutes it."""
    mutant = "mutant:two-target-groups-only"
    assert run_theorem(CATALOGUE["guard-exact"], mutant, PROVED).verdict == PROVED
    refuted = run_theorem(CATALOGUE["groups-guard-exact"], mutant, REFUTED)
    assert refuted.verdict == REFUTED and refuted.ok
    spans = [v for k, v in refuted.counterexample.items() if k.startswith("page")]
    assert len(spans) == MAX_TARGETS
