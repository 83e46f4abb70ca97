"""The symbolic reading keeps the definitions its formulas read, and only those."""

import z3

from models import arith


def _defined(context) -> set[str]:
    """The fresh constants that the context's definitions and lemmas mention."""
    text = " ".join(str(d) for d in context.definitions)
    return {name for name in ("_q1", "_q3", "_q5") if name in text}


def test_pruning_keeps_what_the_roots_read_through_other_definitions():
    a, b = z3.Ints("a b")
    with arith.symbolic_context() as context:
        taken = arith.floordiv(a, b)  # _q1: read only through the next quotient's dividend
        untaken = arith.floordiv(b, a + 1)  # _q3: only in the branch a fixed flag does not take
        inner = arith.floordiv(taken + 1, b + 2)  # _q5
        goal = arith.ite(True, inner >= 0, untaken >= 0)
        assert _defined(context) == {"_q1", "_q3", "_q5"}
        context.prune([goal])
        assert _defined(context) == {"_q1", "_q5"}


def test_pruning_sees_through_a_conjunction_with_a_false_conjunct():
    a, b = z3.Ints("a b")
    with arith.symbolic_context() as context:
        dead = arith.floordiv(a, b) >= 0
        live = arith.floordiv(b, a + 1) >= 0
        context.prune([z3.And(z3.BoolVal(False), dead), live])
        assert _defined(context) == {"_q3"}


def test_a_branch_on_a_fixed_flag_is_the_branch():
    a = z3.Int("a")
    assert arith.ite(False, a, 7) == 7
    assert arith.ite(True, a, 7).eq(a)
    assert z3.is_app_of(arith.ite(a > 0, 1, 2), z3.Z3_OP_ITE)


def test_a_footprint_reads_through_witnesses_and_shares_a_witness_of_constants():
    a, b, c = z3.Ints("a b c")
    with arith.symbolic_context() as context:
        quotient = arith.floordiv(a, b)
        assert {a.get_id(), b.get_id()} <= context.footprint(quotient + 1 > 0)
        assert c.get_id() not in context.footprint(quotient > 0)
        # 7 // 2 read symbolically is a witness with no input: two formulas
        # that read it share it, and must agree on its value.
        half = arith.floordiv(z3.IntVal(7), 2)
        assert context.footprint(half > c) & context.footprint(half < a)


def test_gcd_reads_ints_exactly_and_terms_as_one_shared_common_divisor():
    assert arith.gcd(12288, 768, 1024) == 256
    a, b = z3.Ints("a b")
    with arith.symbolic_context() as context:
        g = arith.gcd(a, b)
        assert g.eq(arith.gcd(a, b))  # the same terms, the same witness: two readings agree
        solver = z3.Solver()
        solver.add(*context.definitions, a == 12, b == 18)
        solver.add(z3.Or(g < 1, a % g != 0, b % g != 0))
        assert solver.check() == z3.unsat  # a positive common divisor of positive terms
