"""A counterexample that only the symbolic lcm's over-approximation allows is
not the verdict: the claim is read again with every lcm and gcd pinned to its
exact value (Bezout) and the lcm of a 0 term as math.lcm has it (0), and the
query is posed again. A genuine counterexample then comes out REFUTED, and a
claim true on ints comes out PROVED, never ERROR."""

from __future__ import annotations

import math

import pytest

from models import arith
from proofs.catalog import CATALOGUE
from proofs.engine.solver import PROVED, REFUTED, Claim, Kind, SolverOptions, Var, decide
from proofs.faults.patch import applied
from proofs.mutation.operators import generate
from proofs.run.runner import load_manifest, run_theorem

A, C, FLAG = Var("a"), Var("c"), Var("flag", Kind.BOOL)


def _checkpoint(c, unset):
    return arith.ite(c == 0, unset, c)


def test_two_lcm_terms_of_equal_values_are_equal_so_only_a_genuine_difference_refutes():
    # Over-approximated, lcm(a, c) and lcm(a, c') of two different terms with
    # the same value may differ: Z3's first answers have c != 0 and do not
    # replay. The genuine difference is at c == 0 with a odd.
    def formula(variant, x):
        a, c = x["a"], x["c"]
        return Claim(
            hypotheses={"a positive": a >= 1, "c unset or positive": c >= 0},
            goal=arith.lcm(a, _checkpoint(c, 1)) == arith.lcm(a, _checkpoint(c, 2)),
        )

    outcome = decide(formula, (A, C), None)
    assert outcome.verdict == REFUTED, outcome.reason
    a, c = outcome.counterexample["a"], outcome.counterexample["c"]
    assert c == 0 and a % 2 == 1
    assert math.lcm(a, 1) != math.lcm(a, 2)


def test_an_lcm_of_zero_in_a_branch_not_taken_is_no_failure():
    # math.lcm(a, 0) == 0, no crash: the model may compute it in a branch it
    # does not take. The positivity obligation of the ordinary reading fails
    # there, but the claim holds on every int.
    def formula(variant, x):
        a, c = x["a"], x["c"]
        return Claim(
            hypotheses={"a positive": a >= 1, "c non-negative": c >= 0},
            goal=arith.ite(c == 0, a, arith.lcm(a, c)) >= 1,
        )

    assert decide(formula, (A, C), None).verdict == PROVED


def test_an_lcm_of_zero_that_is_used_refutes_with_a_replayed_counterexample():
    def formula(variant, x):
        a, c = x["a"], x["c"]
        return Claim(
            hypotheses={"a positive": a >= 1, "c non-negative": c >= 0},
            goal=arith.ite(x["flag"], arith.lcm(a, c), a) >= 1,
        )

    outcome = decide(formula, (A, C, FLAG), None)
    assert outcome.verdict == REFUTED
    assert outcome.counterexample["c"] == 0 and outcome.counterexample["flag"] is True


@pytest.mark.parametrize(
    "ident, summary",
    [
        # The alignment of a checkpoint-less deployment read as 2 instead of 1:
        # lcm(kernel, 2) != kernel for an odd kernel.
        ("config:resolve:constant+1:0", "1  ->  2"),
        # lcm(kernel, 0) in align mode: the kernel is 0, and the page alignment divides by it.
        ("config:resolve:size-name:17", "c.checkpoint_alignment  ->  c.block_size"),
    ],
)
def test_generated_config_mutants_that_used_to_end_as_error_are_refuted(ident, summary):
    (mutant,) = [m for m in generate(("config",)) if m.ident == ident]
    assert mutant.summary == summary
    theorem = CATALOGUE["config-default-equivalence"]
    expected = load_manifest()["config-default-equivalence"].expected["baseline"]
    with applied(mutant.patch):
        entry = run_theorem(theorem, "baseline", expected, SolverOptions(), "ci")
    assert entry.verdict == REFUTED, entry


def _pinned_values(fold, members, flag_value: bool) -> set[int]:
    """Every value `fold` over a family of `members` can take once pinned
    exactly, the linear pins alone, with the flag fixed."""
    flag = arith.z3.Bool("flag")
    with arith.symbolic_context() as context:
        family = arith.Family(arith.ite(flag, a, b) for a, b in members)
        result = fold(family)
        pins = context.exact_definitions(linear_only=True)
    solver = arith.z3.Solver()
    solver.add(*pins, flag == flag_value)
    values = set()
    while solver.check() == arith.z3.sat and len(values) < 4:
        value = solver.model().eval(result, model_completion=True).as_long()
        values.add(value)
        solver.add(result != value)
    return values


@pytest.mark.parametrize(
    ("fold", "exactly"),
    [(arith.lcm_of, math.lcm), (arith.gcd_of, math.gcd), (arith.minimum_of, min), (arith.maximum_of, max)],
)
@pytest.mark.parametrize("flag_value", [True, False])
def test_a_fold_over_members_that_branch_over_constants_is_pinned_linearly_to_its_value(fold, exactly, flag_value):
    # Unpinned, a family's lcm is any common multiple of 4 and 6 (or 3 and 10)
    # and its minimum any value at most both: the ladder's models took that
    # slack and then failed replay on the members alone.
    members = [(arith.z3.IntVal(4), arith.z3.IntVal(3)), (arith.z3.IntVal(6), arith.z3.IntVal(10))]
    chosen = [a if flag_value else b for a, b in ((4, 3), (6, 10))]
    assert _pinned_values(fold, members, flag_value) == {exactly(*chosen)}


def test_an_lcm_over_a_pinned_fold_is_pinned_too():
    # The lcm reads a minimum that branches over constants: pinned branch by
    # branch, the minimum is constants to the lcm, which Bezout's pins (left
    # out as nonlinear) would otherwise be needed for.
    flag = arith.z3.Bool("flag")
    with arith.symbolic_context() as context:
        least = arith.minimum_of(
            arith.Family([arith.ite(flag, arith.z3.IntVal(2), arith.z3.IntVal(3)), arith.z3.IntVal(4)])
        )
        multiple = arith.lcm_of(arith.Family([least, arith.z3.IntVal(5)]))
        pins = context.exact_definitions(linear_only=True)
    solver = arith.z3.Solver()
    solver.add(*pins, arith.z3.Not(flag), multiple != 15)
    assert solver.check() == arith.z3.unsat
