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
from proofs.mutation.operators import generate
from proofs.mutation.patch import applied
from proofs.runner import load_manifest, run_theorem
from proofs.solver import PROVED, REFUTED, Claim, Kind, SolverOptions, Var, decide

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
