"""Goal conjuncts given as bounds (proofs.engine.claims.Bound) and conditions with
an edge (Applies) carry cover goals: a bound loosened by one, or a condition
narrowed past its edge, leaves the entry VACUOUS, so a weakened theorem fails
`prove` as a broken model does."""

import pytest
import z3

from models import arith
from proofs.catalog import CATALOGUE
from proofs.engine.claims import Applies, Claim, at_least, at_most, below
from proofs.engine.solver import PROVED, VACUOUS
from proofs.faults.patch import Patch, applied
from proofs.run.runner import run_theorem


def _valid(formula) -> bool:
    solver = z3.Solver(ctx=formula.ctx)
    solver.add(z3.Not(formula))
    return solver.check() == z3.unsat


def test_a_bound_is_its_implication_and_its_attainment_a_cover():
    # A context of the test's own: terms made in Z3's main context shift the ids later tests' terms get.
    ctx = z3.Context()
    x, y, flag = z3.Int("x", ctx), z3.Int("y", ctx), z3.Bool("flag", ctx)
    with arith.symbolic_context():
        claim = Claim(hypotheses={}, goal={"x within y": at_most(x, y, when=flag), "x under y": below(x, y)})
    assert _valid(claim.conjuncts["x within y"] == z3.Implies(flag, x <= y))
    assert _valid(claim.conjuncts["x under y"] == (x < y))
    assert set(claim.covers) == {"x within y: the bound attained", "x under y: the bound attained"}
    assert _valid(claim.covers["x within y: the bound attained"] == z3.And(flag, x == y))
    assert _valid(claim.covers["x under y: the bound attained"] == (x + 1 == y))


def test_bounds_and_edges_read_on_ints_as_the_model_does():
    assert at_least(5, 5).term and not at_least(4, 5).term
    assert below(4, 5).term and not below(5, 5).term
    assert at_most(9, 5, when=False).term  # the bound does not apply
    edge = Applies(True, True, edge=False)
    assert edge.term and edge.covers("c") == {"c: it applies at its edge": False}
    assert arith.all_of(*at_most(5, 5).covers("b").values())


@pytest.mark.parametrize(
    "theorem, function, before, after, cover",
    [
        (
            "split-bounds",
            "bounds",
            "at_most(r, call.requested)",
            "at_most(r, call.requested + 1)",
            "at most the tokens requested: the bound attained",
        ),
        ("split-bounds", "bounds", "at_least(r, 0)", "at_least(r, -1)", "never negative: the bound attained"),
        (
            "prefill-state-slot",
            "state_slot",
            "k >= 1, column == state_column(computed, cadence)",
            "k >= 2, column == state_column(computed, cadence)",
            "a resumed request reads the column written at its position: it applies at its edge",
        ),
        (
            "config-page-covers-state",
            "page_covers_state",
            'x["mamba_page"]),',
            'x["mamba_page"] - 1),',
            "the goal: the bound attained",
        ),
    ],
)
def test_a_loosened_bound_or_a_narrowed_condition_is_vacuous(theorem, function, before, after, cover):
    module = {"split-bounds": "proofs.catalog.split", "config-page-covers-state": "proofs.catalog.config"}.get(
        theorem, "proofs.catalog.prefill"
    )
    assert run_theorem(CATALOGUE[theorem], "baseline", PROVED).verdict == PROVED
    with applied(Patch(module, function, before, after)):
        entry = run_theorem(CATALOGUE[theorem], "baseline", PROVED)
    assert entry.verdict == VACUOUS and not entry.ok
    assert f"cover goal {cover!r} is unreachable" in entry.reason


def test_a_whole_goal_written_as_a_bound_carries_its_cover():
    ctx = z3.Context()
    x, y = z3.Int("x", ctx), z3.Int("y", ctx)
    with arith.symbolic_context():
        claim = Claim(hypotheses={}, goal=at_least(x, y))
    assert _valid(claim.goal == (y <= x))
    assert set(claim.covers) == {"the goal: the bound attained"}
    assert _valid(claim.covers["the goal: the bound attained"] == (y == x))
