"""The lemma families models/arith.py asserts beside the witness definitions,
each with its own validity obligation: the witness definitions of a generic
pattern of divisions and the negation of every lemma of the family that
arith derives for it. Unsat proves the family valid for these free
variables, hence for every instance the solver is handed (a substitution of
terms for variables keeps a formula valid).

The lemmas are read from arith itself (SymbolicContext.definitions), never
restated here."""

from __future__ import annotations

from collections.abc import Callable

import z3

from models import arith
from proofs.engine.solver import standard_smt2

MONOTONE = "multiplication-monotone"  # d > 0 and a < b give a*d + d <= b*d
TRANSITIVE = "divisibility-transitive"  # d | x and x | y give y == (y // x) * (x // d) * d
FLOOR_BY_MULTIPLE = "floor-by-a-multiple"  # d | e gives z // d >= (z // e) * (e // d)
FAMILIES = (MONOTONE, TRANSITIVE, FLOOR_BY_MULTIPLE)


def _family(lemma: z3.BoolRef) -> str:
    """Which family arith built `lemma` in, by the shape of its premise: the
    floor-by-a-multiple lemmas alone have three conjuncts, the transitivity
    lemmas alone start from a remainder equal to zero."""
    premise = lemma.arg(0)
    if premise.num_args() == 3:
        return FLOOR_BY_MULTIPLE
    return TRANSITIVE if z3.is_eq(premise.arg(0)) else MONOTONE


def _multiples(ctx: z3.Context) -> None:
    """Two free multiples of a free divisor: monotonicity over any terms."""
    a, b, d = z3.Ints("a b d", ctx)
    arith.multiple(a, d)
    arith.multiple(b, d)


def _chain(ctx: z3.Context) -> None:
    """d divides x, x divides y and z, z divided by d too: the divisor
    chains the transitivity and floor-by-a-multiple families read."""
    x, d, y, z = z3.Ints("x d y z", ctx)
    arith.floordiv(x, d)
    arith.floordiv(y, x)
    arith.floordiv(z, x)
    arith.floordiv(z, d)


PATTERNS: dict[str, Callable[[z3.Context], None]] = {
    MONOTONE: _multiples,
    TRANSITIVE: _chain,
    FLOOR_BY_MULTIPLE: _chain,
}


def validity_queries() -> dict[str, str]:
    """Per family, a standard SMT-LIB 2.6 script that is unsat exactly when
    the family's lemmas follow from the witness definitions."""
    return {family: _validity_query(family) for family in FAMILIES}


def _validity_query(family: str) -> str:
    ctx = z3.Context()
    with arith.symbolic_context() as context:
        PATTERNS[family](ctx)
        definitions = context.witness_definitions
        lemmas = [lemma for lemma in context.definitions[len(definitions) :] if _family(lemma) == family]
        if not lemmas:
            raise RuntimeError(f"the pattern for lemma family {family!r} yields none of its lemmas")
        query = z3.Solver(ctx=ctx)
        query.add(*definitions, z3.Not(z3.And(*lemmas)))
        return standard_smt2(query.to_smt2(), "unsat")
