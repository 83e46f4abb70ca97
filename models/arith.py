"""The dual arithmetic every model function computes with.

Called on Python ints it computes exactly what Python does. Called with numpy
integer arrays it computes the same, lane by lane (one model call for many
inputs at once: `models/every_length.py`). Called with any Z3
term it returns Z3 terms, and every floor division becomes a fresh quotient and
remainder pinned by linear-in-the-witness constraints recorded in the active
`SymbolicContext`: Z3's own `/` and `%` on a symbolic divisor turn proofs into
timeouts. Model code never writes `//`,
`%`, `min`, `max`, `and`, `or` or `if` on a value that may be symbolic.
"""

from __future__ import annotations

import contextvars
import functools
import math
import operator
import sys
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TypeVar

import z3

_active: contextvars.ContextVar[SymbolicContext | None] = contextvars.ContextVar(
    "gridproof_symbolic_context", default=None
)
_divisions_by_zero: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar(
    "gridproof_divisions_by_zero", default=None
)


def is_symbolic(*values: object) -> bool:
    # A loop, not any() over a generator: called about 700,000 times over
    # --tier all, where the generator cost more than the tests.
    for v in values:
        if isinstance(v, z3.ExprRef):
            return True
    return False


def is_vector(*values: object) -> bool:
    """Whether any value is a numpy array or scalar: the lane-by-lane reading.
    Read off the type's module, so the int and Z3 readings never import numpy."""
    for v in values:
        if type(v).__module__ == "numpy":
            return True
    return False


def _numpy():
    import numpy

    return numpy


class SymbolicContext:
    """Collects what the symbolic reading of a model call introduced.

    `definitions` hold by construction (they define witnesses); `obligations`
    are facts the model relies on (a divisor is not zero) that the hypotheses
    of a theorem must imply: the runner proves them with the goal.
    """

    def __init__(self, naive: bool = False, total_lcm: bool = False) -> None:
        # naive: Z3's own div and mod on the dividend as written, the encoding
        # the benchmark compares against (exact only for positive divisors).
        self.naive = naive
        # total_lcm: the lcm of a 0 term is 0, as math.lcm's (see lcm).
        self.total_lcm = total_lcm
        # Each definition with the id of the fresh constant that owns it (a
        # quotient owns its remainder's definitions too; an lcm its witnesses').
        self._definitions: list[tuple[int, z3.BoolRef]] = []
        self.obligations: list[z3.BoolRef] = []
        self._divisions: dict[tuple[int, int], tuple[z3.ArithRef, z3.ArithRef]] = {}
        self._lcms: dict[tuple, z3.ArithRef] = {}
        self._gcds: dict[tuple[int, ...], z3.ArithRef] = {}
        self._bounds: dict[tuple, z3.ArithRef] = {}
        self._attained: dict[object, tuple] = {}  # Family.attains token -> the one extremum fold taken over it
        # (kind, terms, result, owner) of each lcm, gcd and family bound: their exact definitions, built on demand.
        self._exact: list[tuple[str, tuple[z3.ArithRef, ...], z3.ArithRef, int]] = []
        self._quotients: dict[int, tuple[z3.ArithRef, list[z3.ArithRef]]] = {}
        self._witnessed: list[tuple[z3.ArithRef, z3.ArithRef, z3.ArithRef, z3.ArithRef]] = []
        self._counter = 0
        self._cached_definitions: tuple[tuple[int, int], list[z3.BoolRef]] | None = None
        # Fresh constant id -> its owner's id, and owner id -> the terms its definitions read.
        self._owner: dict[int, int] = {}
        self._reads: dict[int, tuple[z3.ExprRef, ...]] = {}
        self._reached: set[int] | None = None  # owners kept by prune(); None: all

    def prune(self, roots: Iterable[object]) -> None:
        """From now on, only the definitions that the formulas `roots` read,
        directly or through other definitions, and lemma families over those
        witnesses. The model computes every branch, so a claim read with a
        flag fixed still defines the quotients of the branch it does not take;
        their definitions and lemmas only widen the solver's search. Exact:
        a witness no kept formula mentions can
        always satisfy its definition, so dropping it changes no verdict;
        the definedness obligations are all kept, since the concrete model
        divides in every branch too."""
        # Simplified first: a conjunction with a false conjunct, or a branch
        # on a fixed flag, reads nothing from what it cannot take.
        self._reached = self._owners_in([z3.simplify(r) for r in roots if isinstance(r, z3.ExprRef)], follow=True)
        self._cached_definitions = None

    def footprint(self, term: z3.ExprRef) -> set[int]:
        """What `term` reads, directly or through the definitions of its
        witnesses: the term ids of the inputs, and of the witnesses' owners
        (a witness of constants has no input, and two formulas that read it
        must agree on it)."""
        owners, inputs = self._walk([term], follow=True, inputs=True)
        return owners | inputs

    def _owners_in(self, terms: list[z3.ExprRef], follow: bool) -> set[int]:
        """The owners of the fresh constants in `terms`; with `follow`, also
        of those their definitions read, transitively."""
        return self._walk(terms, follow, inputs=False)[0]

    def _walk(self, terms: list[z3.ExprRef], follow: bool, inputs: bool) -> tuple[set[int], set[int]]:
        """The owners of the witnesses `terms` mention and, if asked, the
        inputs they mention; with `follow`, also those that the witnesses'
        definitions read, transitively."""
        owners: set[int] = set()
        found_inputs: set[int] = set()
        if not terms:
            return owners, found_inputs
        context = terms[0].ctx.ref()
        seen: set[int] = set()
        stack = [t.as_ast() for t in terms]
        while stack:
            ast = stack.pop()
            ast_id = z3.Z3_get_ast_id(context, ast)
            if ast_id in seen or z3.Z3_get_ast_kind(context, ast) != z3.Z3_APP_AST:
                continue
            seen.add(ast_id)
            count = z3.Z3_get_app_num_args(context, ast)
            if count:
                stack += [z3.Z3_get_app_arg(context, ast, i) for i in range(count)]
                continue
            owner = self._owner.get(ast_id)
            if owner is None:
                if inputs and _is_uninterpreted(context, ast):
                    found_inputs.add(ast_id)
            elif owner not in owners:
                owners.add(owner)
                if follow:
                    stack += [t.as_ast() for t in self._reads[owner]]
        return owners, found_inputs

    def owners_read(self, terms: list[z3.ExprRef]) -> set[int]:
        """The owners of the witnesses `terms` read, directly or through
        other witnesses' definitions."""
        return self._owners_in(terms, follow=True)

    def definitions_of(self, owners: set[int]) -> list[z3.BoolRef]:
        return [d for owner, d in self._definitions if owner in owners]

    def divisions_of(self, owners: set[int]) -> list[tuple[z3.ArithRef, z3.ArithRef, z3.ArithRef, z3.ArithRef]]:
        """(dividend, divisor, quotient, remainder) of the witnessed divisions those owners own."""
        return [w for w in self._witnessed if w[2].get_id() in owners]

    def lcms_of(self, owners: set[int]) -> list[tuple[z3.ArithRef, tuple[z3.ExprRef, ...]]]:
        """(lcm, its terms) of the lcms those owners own."""
        return [(m, self._reads[m.get_id()]) for m in self._lcms.values() if m.get_id() in owners]

    def _kept(self, *terms: z3.ExprRef) -> bool:
        return self._reached is None or self._owners_in(list(terms), follow=False) <= self._reached

    def _owner_kept(self, owner: int) -> bool:
        return self._reached is None or owner in self._reached

    @property
    def witness_definitions(self) -> list[z3.BoolRef]:
        """The witness definitions without the derived lemmas. The lemmas are
        valid, so leaving them out changes no model; they multiply two
        quotients, which would make a fixed-geometry query nonlinear again."""
        return [d for owner, d in self._definitions if self._owner_kept(owner)]

    @property
    def definitions(self) -> list[z3.BoolRef]:
        """The witness definitions, and for every two quotients by the same
        divisor the monotonicity of multiplication by it: q < q' implies
        q*d + d <= q'*d for d > 0. Valid for all integers; it hands the solver
        the one nonlinear step that block-grid reasoning keeps needing.
        Built once per set of divisions: the lemma families are quadratic
        and quartic in their number, and a proof reads them many times."""
        if self._cached_definitions is not None and self._cached_definitions[0] == self._division_count():
            return self._cached_definitions[1]
        lemmas = []
        # Indexed by term id (Z3 terms are hash-consed, so equal ids are equal
        # terms); each list keeps the order of `_witnessed`.
        by_divisor: dict[int, list] = {}
        by_division: dict[tuple[int, int], list] = {}
        witnessed = [w for w in self._witnessed if self._owner_kept(w[2].get_id())]  # a quotient owns its entry
        for entry in witnessed:
            x, d = entry[0], entry[1]
            by_divisor.setdefault(d.get_id(), []).append(entry)
            by_division.setdefault((x.get_id(), d.get_id()), []).append(entry)
        # Divisibility is transitive: d | x and x | y give y == (q_y * q_x) * d.
        for x, d, qx, rx in witnessed:
            for y, e, qy, ry in by_divisor.get(x.get_id(), ()):
                lemmas.append(_implies(_and(rx == 0, ry == 0), y == (qy * qx) * d))
                self._register(qy * qx, d)
                # Flooring by a multiple e = qx * d of d floors no higher:
                # for z == a*e + b, 0 <= b < e, z // d >= a * qx.
                for z, _, qz, _ in by_divisor[e.get_id()]:
                    for _, _, qw, _ in by_division.get((z.get_id(), d.get_id()), ()):
                        lemmas.append(_implies(_and(rx == 0, d > 0, e > 0), _and(qw >= qz * qx, qz * e <= qw * d)))
        for d, registered in self._quotients.values():
            if not self._kept(d):
                continue
            pool = [z3.IntVal(0, d.ctx), *(q for q in registered if self._kept(q))]
            ids = [q.get_id() for q in pool]
            # Each term built once, at its first use, where the pair-by-pair
            # expression would first build it: Z3 numbers terms as they are
            # first made, so the lemmas and the solver's choices are the same;
            # only the Python calls that rebuild existing terms are spared.
            # The connectives through the C API: z3.And and z3.Implies check
            # and coerce every argument, half the time of building the
            # families, for terms known to be Bool terms of this context.
            positive, scaled, above = None, {}, {}
            for i, a in enumerate(pool):
                for j, b in enumerate(pool):
                    if ids[i] != ids[j]:
                        if positive is None:
                            positive = d > 0
                        condition = _and(positive, a < b)
                        if i not in scaled:
                            scaled[i] = a * d
                        if i not in above:
                            above[i] = scaled[i] + d
                        if j not in scaled:
                            scaled[j] = b * d
                        lemmas.append(_implies(condition, above[i] <= scaled[j]))
        result = self.witness_definitions + lemmas
        # Keyed after the transitivity products above are registered: reading
        # again with nothing new registered builds the same list.
        self._cached_definitions = (self._division_count(), result)
        return result

    def _division_count(self) -> tuple[int, int]:
        return len(self._definitions), sum(len(q) for _, q in self._quotients.values())

    def _register(self, q: z3.ArithRef, d: z3.ArithRef) -> None:
        if z3.is_int_value(d):
            return
        _, quotients = self._quotients.setdefault(d.get_id(), (d, []))
        if not any(q.eq(known) for known in quotients):
            quotients.append(q)

    def fresh(self, stem: str, like: z3.ExprRef) -> z3.ArithRef:
        """A new witness constant, in the Z3 context of the term `like` it is for."""
        self._counter += 1
        return z3.Int(f"_{stem}{self._counter}", like.ctx)

    def divide(self, x: z3.ArithRef, d: z3.ArithRef) -> tuple[z3.ArithRef, z3.ArithRef]:
        """Quotient and remainder of x by d, Python's floor semantics.

        Structure is used before witnesses: a branch divides branch-wise, a
        visible multiple of d has remainder 0, and a visible multiple added
        to a term only shifts the quotient. Each rewrite is exact for d != 0;
        it spares the solver the nonlinear step of rediscovering it."""
        if self.naive:
            self._note_divisor(d)
            return x / d, x % d
        x, d = z3.simplify(x), z3.simplify(d)
        kind = _operator(x)
        if kind == z3.Z3_OP_ANUM and z3.is_int_value(x) and x.as_long() == 0:
            self._note_divisor(d)
            return z3.IntVal(0, x.ctx), z3.IntVal(0, x.ctx)
        if kind == z3.Z3_OP_ITE:
            condition, then, otherwise = x.children()
            q1, r1 = self.divide(then, d)
            q2, r2 = self.divide(otherwise, d)
            return _if(condition, q1, q2), _if(condition, r1, r2)
        factor = _cofactor(x, d, kind)
        if factor is not None:
            self._note_divisor(d)
            self._register(factor, d)
            return factor, z3.IntVal(0, d.ctx)
        if kind == z3.Z3_OP_ADD:
            terms = x.children()
            for i, term in enumerate(terms):
                factor = _cofactor(term, d, _operator(term))
                if factor is not None:
                    rest = terms[:i] + terms[i + 1 :]
                    q, r = self.divide(rest[0] if len(rest) == 1 else z3.Sum(*rest), d)
                    self._register(q + factor, d)
                    return q + factor, r
        return self._witness(x, d)

    def _note_divisor(self, d: z3.ArithRef) -> None:
        if not z3.is_int_value(d):
            self.obligations.append(d != 0)

    def _witness(self, x: z3.ArithRef, d: z3.ArithRef) -> tuple[z3.ArithRef, z3.ArithRef]:
        key = (x.get_id(), d.get_id())
        if key not in self._divisions:
            q, r = self.fresh("q", x), self.fresh("r", x)
            owner = q.get_id()
            self._owner[owner] = self._owner[r.get_id()] = owner
            self._reads[owner] = (x, d)
            self._definitions.append((owner, x == q * d + r))
            if z3.is_int_value(d):
                value = d.as_long()
                if value == 0:
                    raise ZeroDivisionError("model divides by the constant 0")
                bounds = _and(0 <= r, r < d) if value > 0 else _and(d < r, r <= 0)
                self._definitions.append((owner, bounds))
            else:
                # Python floors: the remainder takes the divisor's sign.
                self._definitions.append((owner, _implies(d > 0, _and(0 <= r, r < d))))
                self._definitions.append((owner, _implies(d < 0, _and(d < r, r <= 0))))
                self.obligations.append(d != 0)
            self._divisions[key] = (q, r)
            self._witnessed.append((x, d, q, r))
            self._register(q, d)
        return self._divisions[key]

    def lcm(self, terms: tuple[z3.ArithRef, ...], bounded: bool = True) -> z3.ArithRef:
        """A positive common multiple of positive `terms`, at most their product
        when `bounded` (without: of a family's members, whose other members
        the product does not see).

        The exact lcm is not expressible without quantifiers; every property
        proved about this over-approximation holds for the true lcm, and a
        counterexample that relies on the slack fails concrete replay (the
        solver then reads the claim again with `total_lcm` and pins every
        lcm and gcd with exact_definitions). Every term positive is an
        obligation; with `total_lcm`, the lcm is 0 when a term is 0, as
        math.lcm is, and only a negative term is an obligation.
        """
        key = (bounded, *(t.get_id() for t in terms))
        if key not in self._lcms:
            result = self.fresh("lcm", terms[0])
            owner = result.get_id()
            product = z3.IntVal(1, terms[0].ctx)
            multiples = []
            for t in terms:
                witness = self.fresh("lcmw", t)
                self._owner[witness.get_id()] = owner
                multiples += [result == witness * t, witness >= 1]
                product = product * t
                self.obligations.append(t >= 0 if self.total_lcm else t > 0)
            # Only for positive terms: unguarded, the definition has no model
            # when a term is not positive, which would discharge the positivity
            # obligations above instead of leaving them to the hypotheses.
            positive = z3.And(*(t > 0 for t in terms))
            self._owner[owner] = owner
            self._reads[owner] = terms
            bound = [result <= product] if bounded else []
            self._definitions.append((owner, z3.Implies(positive, z3.And(*multiples, *bound))))
            self._exact.append(("lcm", terms, result, owner))
            zero = [t == 0 for t in terms if not (z3.is_int_value(t) and t.as_long() > 0)]
            total = self.total_lcm and zero
            self._lcms[key] = _if(_or(*zero), z3.IntVal(0, result.ctx), result) if total else result
        return self._lcms[key]

    def gcd(self, terms: tuple[z3.ArithRef, ...]) -> z3.ArithRef:
        """A positive common divisor of positive `terms`, the same term for the
        same terms: an over-approximation of the gcd, as `lcm` is of the lcm."""
        key = tuple(t.get_id() for t in terms)
        if key not in self._gcds:
            result = self.fresh("gcd", terms[0])
            owner = result.get_id()
            divides_each = [result >= 1]
            for t in terms:
                witness = self.fresh("gcdw", t)
                self._owner[witness.get_id()] = owner
                divides_each += [t == witness * result, witness >= 1]
                self.obligations.append(t > 0)
            positive = z3.And(*(t > 0 for t in terms))
            self._owner[owner] = owner
            self._reads[owner] = terms
            self._definitions.append((owner, z3.Implies(positive, z3.And(*divides_each))))
            self._exact.append(("gcd", terms, result, owner))
            self._gcds[key] = result
        return self._gcds[key]

    def attained(self, token: object, fold: tuple) -> None:
        """Record the extremum `fold` (least?, term ids) taken over a family
        that attains it; a second, different one has no member attaining both."""
        first = self._attained.setdefault(token, fold)
        if first != fold:
            raise ValueError("a family attains one extremum fold, and a second, different one was taken over it")

    def bound(self, terms: tuple[z3.ArithRef, ...], least: bool) -> z3.ArithRef:
        """A value at most (`least`) or at least each of `terms`: a family's
        minimum or maximum, which its other members may move further. Exact
        (the least or greatest of `terms`) in exact_definitions, as the
        concrete reading of the family is."""
        key = (least, *(t.get_id() for t in terms))
        if key not in self._bounds:
            result = self.fresh("min" if least else "max", terms[0])
            owner = result.get_id()
            self._owner[owner] = owner
            self._reads[owner] = terms
            self._definitions.append((owner, _and(*((result <= t) if least else (result >= t) for t in terms))))
            self._exact.append(("min" if least else "max", terms, result, owner))
            self._bounds[key] = result
        return self._bounds[key]

    def exact_definitions(self, linear_only: bool = False) -> list[z3.BoolRef]:
        """What pins every lcm and gcd read so far to its exact value, for
        positive terms: Bezout's identity. A positive common divisor g of a
        and b with g == a*x + b*y for some integers x, y is their gcd (every
        common divisor divides a*x + b*y), and lcm(a, b) == a * (b / g);
        more terms fold pair by pair. Not in the ordinary queries: the
        witnesses are nonlinear and the over-approximation proves what the
        catalogue needs. They rule out a counterexample that only the
        over-approximation's slack allows (proofs/engine/solver.py), so the query
        decided again finds a genuine one or none. Built on demand, so the
        ordinary queries' terms are numbered as they are without them.

        A fold whose terms are constants, or branches over constants (folds
        pinned so before them included), is pinned branch by branch to the
        constant each branch gives, which is linear. With `linear_only`, the
        other lcm and gcd (Bezout's) are left out: what a query whose sizes
        are all fixed can afford (proofs/engine/refutation.py's ladder)."""
        exact = []
        folded_constants = []  # (fold, the branches over constants it is pinned to)
        for kind, terms, result, owner in self._exact:
            if not self._owner_kept(owner):
                continue
            cases = leaf_cases = _constant_cases([z3.substitute(t, *folded_constants) for t in terms])
            if cases is not None:
                # Members that are branches over constants: the fold in each
                # branch is a constant, linear where Bezout's is not.
                cases = [(c, _FOLDS[kind](*v)) for c, v in cases if kind in ("min", "max") or min(v) > 0]
                exact.extend(z3.Implies(c, result == v) for c, v in cases)
                if len(cases) == len(leaf_cases):  # every branch pinned: a fold that reads this one sees constants
                    folded_constants.append((result, _branches(cases)))
                continue
            if kind in ("min", "max"):
                exact.append(result == _FOLDS[kind](*terms))
                continue
            if linear_only:
                continue
            facts = []
            if kind == "gcd":
                coefficients = [self.fresh("bezout", t) for t in terms]
                facts.append(result == z3.Sum(*(t * c for t, c in zip(terms, coefficients, strict=True))))
            else:
                folded = terms[0]
                for t in terms[1:]:
                    g, x, y, u, v = (self.fresh(stem, t) for stem in ("lcmg", "bezout", "bezout", "lcmu", "lcmv"))
                    facts += [g >= 1, folded == g * u, t == g * v, g == folded * x + t * y]
                    folded = folded * v
                facts.append(result == folded)
            positive = z3.And(*(t > 0 for t in terms))
            exact.append(z3.Implies(positive, z3.And(*facts)))
        return exact


def _constant_cases(terms, limit: int = 16) -> list[tuple[z3.BoolRef, tuple[int, ...]]] | None:
    """Every combination of the branches of `terms`, when each is an
    if-then-else tree over integer constants: (condition, values) pairs,
    at most `limit` of them; None otherwise."""
    cases = [(z3.BoolVal(True, terms[0].ctx), ())]
    for t in terms:
        leaves = _leaves(z3.simplify(t))
        if leaves is None or len(cases) * len(leaves) > limit:
            return None
        cases = [(z3.And(c, lc), (*v, lv)) for c, v in cases for lc, lv in leaves]
    return cases


def _branches(cases: list[tuple[z3.BoolRef, int]]) -> z3.ArithRef:
    """The term that is each case's value under its condition, of cases that
    cover every input."""
    term = z3.IntVal(cases[-1][1], cases[-1][0].ctx)
    for condition, value in reversed(cases[:-1]):
        term = z3.If(condition, value, term)
    return term


def _leaves(term) -> list[tuple[z3.BoolRef, int]] | None:
    if z3.is_int_value(term):
        return [(z3.BoolVal(True, term.ctx), term.as_long())]
    if z3.is_app_of(term, z3.Z3_OP_ITE):
        condition, then, otherwise = term.children()
        first, second = _leaves(then), _leaves(otherwise)
        if first is None or second is None:
            return None
        return [(z3.And(condition, c), v) for c, v in first] + [(z3.And(z3.Not(condition), c), v) for c, v in second]
    return None


def _and(*conjuncts: z3.BoolRef) -> z3.BoolRef:
    """z3.And of Bool terms of one context, without its checks."""
    context = conjuncts[0].ctx
    arguments = (z3.Ast * len(conjuncts))(*(c.as_ast() for c in conjuncts))
    return z3.BoolRef(z3.Z3_mk_and(context.ref(), len(conjuncts), arguments), context)


def _or(*disjuncts: z3.BoolRef) -> z3.BoolRef:
    """z3.Or of Bool terms of one context, without its checks."""
    context = disjuncts[0].ctx
    arguments = (z3.Ast * len(disjuncts))(*(d.as_ast() for d in disjuncts))
    return z3.BoolRef(z3.Z3_mk_or(context.ref(), len(disjuncts), arguments), context)


def _booleans(terms: list) -> bool:
    """Whether `terms` are Bool terms of one context: z3.And and z3.Or would
    build from them the very term _and and _or build, after checking and
    coercing each (a third of the time of reading a claim)."""
    context = terms[0].ctx
    for t in terms:
        if not isinstance(t, z3.BoolRef) or t.ctx is not context:
            return False
    return True


def _if(condition: z3.ExprRef, then: z3.ExprRef, otherwise: z3.ExprRef) -> z3.ExprRef:
    """z3.If, without its checks when both branches are Int terms, or both
    Bool terms, of the condition's context: then it builds this very term."""
    context = condition.ctx
    if isinstance(condition, z3.BoolRef) and then.ctx is context and otherwise.ctx is context:
        for kind in (z3.BoolRef, z3.ArithRef):
            if isinstance(then, kind) and isinstance(otherwise, kind):
                if kind is z3.ArithRef and not (_is_int(then) and _is_int(otherwise)):
                    break
                made = z3.Z3_mk_ite(context.ref(), condition.as_ast(), then.as_ast(), otherwise.as_ast())
                return kind(made, context)
    return z3.If(condition, then, otherwise)


def _is_int(term: z3.ArithRef) -> bool:
    context = term.ctx.ref()
    return z3.Z3_get_sort_kind(context, z3.Z3_get_sort(context, term.as_ast())) == z3.Z3_INT_SORT


def _implies(premise: z3.BoolRef, conclusion: z3.BoolRef) -> z3.BoolRef:
    """z3.Implies of Bool terms of one context, without its checks."""
    context = premise.ctx
    return z3.BoolRef(z3.Z3_mk_implies(context.ref(), premise.as_ast(), conclusion.as_ast()), context)


def _is_uninterpreted(context, ast) -> bool:
    """A constant of no theory (an input or a witness), not true or false."""
    declaration = z3.Z3_get_app_decl(context, z3.Z3_to_app(context, ast))
    return z3.Z3_get_decl_kind(context, declaration) == z3.Z3_OP_UNINTERPRETED


def _operator(x: z3.ExprRef) -> int | None:
    """The kind of x's operator (z3.Z3_OP_ADD, ...), None for a term that is
    not an application: z3.is_add and its kin, in one pass through the C API."""
    context, ast = x.ctx.ref(), x.as_ast()
    if z3.Z3_get_ast_kind(context, ast) not in (z3.Z3_APP_AST, z3.Z3_NUMERAL_AST):
        return None
    return z3.Z3_get_decl_kind(context, z3.Z3_get_app_decl(context, z3.Z3_to_app(context, ast)))


def _cofactor(x: z3.ArithRef, d: z3.ArithRef, kind: int | None) -> z3.ArithRef | None:
    """c when x (whose operator is of `kind`) is visibly c * d, else None."""
    if x.eq(d):
        return z3.IntVal(1, d.ctx)
    if kind == z3.Z3_OP_MUL:
        factors = x.children()
        for i, f in enumerate(factors):
            if f.eq(d):
                rest = factors[:i] + factors[i + 1 :]
                return rest[0] if len(rest) == 1 else z3.Product(*rest)
    return None


_T = TypeVar("_T")


@contextmanager
def _holding(variable: contextvars.ContextVar, value: _T) -> Iterator[_T]:
    """`variable` set to `value` within the block, restored after."""
    token = variable.set(value)
    try:
        yield value
    finally:
        variable.reset(token)


def symbolic_context(naive: bool = False, total_lcm: bool = False) -> AbstractContextManager[SymbolicContext]:
    """The SymbolicContext that symbolic model calls within the block record into."""
    return _holding(_active, SymbolicContext(naive=naive, total_lcm=total_lcm))


def _context() -> SymbolicContext:
    context = _active.get()
    if context is None:
        raise RuntimeError("symbolic model call outside arith.symbolic_context()")
    return context


def z3_context_of(*values: object) -> z3.Context:
    """The Z3 context of the first symbolic value: every term a model call
    builds lives in the context of the symbolic inputs it was called with."""
    for v in values:
        if isinstance(v, z3.ExprRef):
            return v.ctx
    raise TypeError("no symbolic value to take a Z3 context from")


def active_context() -> SymbolicContext:
    """The symbolic context of the model calls being read (an error outside one)."""
    return _context()


def _term(x: object, ctx: z3.Context) -> z3.ExprRef:
    if isinstance(x, z3.ExprRef):
        return x
    if isinstance(x, bool):
        return z3.BoolVal(x, ctx)
    return z3.IntVal(x, ctx)


def _terms(*values: object) -> list[z3.ExprRef]:
    """`values` as Z3 terms, the concrete ones in the symbolic ones' context."""
    ctx = z3_context_of(*values)
    return [_term(v, ctx) for v in values]


def as_term(x: object, ctx: z3.Context) -> z3.ExprRef:
    """A model function's result as a Z3 term of `ctx`, even when it came out concrete."""
    return _term(x, ctx)


def floordiv(x, d):
    if type(x) is int and type(d) is int and d:  # the int reading, its commonest call, as Python divides
        return x // d
    if is_symbolic(x, d):
        return _context().divide(*_terms(x, d))[0]
    return _concretely(operator.floordiv, x, d)


def mod(x, d):
    if type(x) is int and type(d) is int and d:
        return x % d
    if is_symbolic(x, d):
        return _context().divide(*_terms(x, d))[1]
    return _concretely(operator.mod, x, d)


def _concretely(division, x, d):
    """`division` (// or %) on ints or numpy lanes, as Python divides: by
    zero it raises, or, within divisions_by_zero_recorded, is recorded."""
    _check_vector_divisor(x, d)
    try:
        return division(x, d)
    except ZeroDivisionError:
        if not _recorded_division_by_zero():
            raise
        return 0


def divisions_by_zero_recorded() -> AbstractContextManager[list[str]]:
    """Within the block, a concrete division by zero does not raise: it is
    recorded (where the model divides, `path:line (function)`) and gives 0,
    so the rest of a claim can still be read. That tells a genuine crash (the
    model divides by zero on an input its hypotheses admit) from a spurious
    one. Never for a result: what follows a recorded division is not the
    model's. Yields the list of places recorded."""
    return _holding(_divisions_by_zero, [])


def _recorded_division_by_zero() -> bool:
    recorded = _divisions_by_zero.get()
    if recorded is None:
        return False
    frame = sys._getframe(2)  # within arith: floordiv or mod, or what called them
    while frame is not None and frame.f_code.co_filename == __file__:
        frame = frame.f_back  # cdiv, round_down, divides
    if frame is None:
        recorded.append("an unknown place")
        return True
    path = Path(frame.f_code.co_filename)
    root = Path(__file__).resolve().parent.parent
    shown = path.relative_to(root).as_posix() if path.is_relative_to(root) else path.name
    recorded.append(f"{shown}:{frame.f_lineno} ({frame.f_code.co_name})")
    return True


def _check_vector_divisor(x, d) -> None:
    """numpy divides by zero silently (0, and a warning): raise as Python does."""
    if is_vector(x, d) and not _numpy().all(d != 0):
        raise ZeroDivisionError("integer division or modulo by zero (in some lane)")


def cdiv(x, d):
    """vLLM's `cdiv`: -(x // -d), i.e. the ceiling of x / d."""
    return -floordiv(-x, d)


def round_down(x, d):
    return floordiv(x, d) * d


def multiple(k, d):
    """k * d, a point of d's grid: the symbolic reading hands the solver the
    same monotonicity lemmas for k as for every quotient by d."""
    if type(k) is int and type(d) is int:
        return k * d
    if is_symbolic(k, d):
        _context()._register(*_terms(k, d))
    return k * d


def divides(d, x):
    """d | x. Only for goals and model branches; state hypotheses with witnesses."""
    return mod(x, d) == 0


def ite(condition, then, otherwise):
    if condition is True:
        return then
    if condition is False:
        return otherwise
    if is_symbolic(condition):
        return _if(condition, _term(then, condition.ctx), _term(otherwise, condition.ctx))
    if is_vector(condition):
        return _numpy().where(condition, then, otherwise)
    return then if condition else otherwise


def minimum(first, *rest):
    result = first
    for x in rest:
        result = ite(x < result, x, result)
    return result


def maximum(first, *rest):
    result = first
    for x in rest:
        result = ite(x > result, x, result)
    return result


def lcm(*xs):
    if is_symbolic(*xs):
        if len(xs) == 1:
            return xs[0]
        return _context().lcm(tuple(_terms(*xs)))
    return math.lcm(*xs)


def gcd(*xs):
    if is_symbolic(*xs):
        if len(xs) == 1:
            return xs[0]
        return _context().gcd(tuple(_terms(*xs)))
    return math.gcd(*xs)


class FamilyReadByPosition(TypeError):
    """A family of groups was indexed, sliced or counted: a fault of the code
    that read it, not of the user's input."""


class Family(tuple):
    """The values of every member of a family of cache groups, of any size
    from one up, held as arbitrary members: a symbolic deployment
    of any shape (docs/groups.md). What holds of an arbitrary member holds
    of every member, so a family is read only as a whole: `each` maps it,
    `select` filters it by a property its members' kinds decide, and the
    folds `lcm_of`, `gcd_of`, `minimum_of`, `maximum_of` and `all_in` fold
    it. Over Z3 terms the folds give what holds at every size: any common
    multiple, any common divisor, any value at most (at least) each member.
    Concretely a family is its members alone. A position, a slice or a
    count has no meaning for a family, so they raise; a family without
    members stands for none."""

    # A family whose members include the one at which its one minimum (or
    # maximum) is attained: over it that fold is exact over the members, and a
    # second, different extremum fold over it (or a family mapped from it) is
    # refused, as no one member could attain both (docs/groups.md).
    attains: object = None  # a token shared by every family mapped from it; None: folds are bounds

    def attaining(self) -> Family:
        """This family, its one extremum fold attained at a member."""
        family = Family(iter(self))
        family.attains = object()
        return family

    def __getitem__(self, index):
        raise FamilyReadByPosition(f"a family of groups has no position {index!r}: read it whole (arith.each)")

    def __len__(self):
        raise FamilyReadByPosition("a family of groups has any number of members: it has no len()")

    def __bool__(self) -> bool:
        """Whether it has members: a family without members stands for none."""
        return tuple.__len__(self) > 0


def each(values: Iterable, function) -> tuple:
    """`function` of every value, a family's kept a family."""
    mapped = (function(v) for v in values)
    return _like(values, mapped)


def select(values: Iterable, keep) -> tuple:
    """The values `keep` (a Python predicate) holds for, a family's kept a family."""
    kept = (v for v in values if keep(v))
    return _like(values, kept)


def _like(values: Iterable, members: Iterable) -> tuple:
    if not isinstance(values, Family):
        return tuple(members)
    family = Family(members)
    family.attains = values.attains
    return family


def _family_terms(values) -> list[z3.ExprRef] | None:
    """A symbolic family's values as terms; None for anything else."""
    if isinstance(values, Family):
        members = tuple(iter(values))
        if is_symbolic(*members):
            return _terms(*members)
    return None


def _fold(values: Iterable, over_family, exactly):
    """`over_family(terms)` for a symbolic family, else `exactly(*values)`."""
    terms = _family_terms(values)
    return over_family(tuple(terms)) if terms is not None else exactly(*values)


# The exact reading of each fold SymbolicContext records, by its kind.
_FOLDS = {"min": minimum, "max": maximum, "gcd": gcd, "lcm": lcm}


def lcm_of(values: Iterable):
    """The lcm of `values`; of a symbolic family, any positive common multiple
    of its members (the lcm over the whole family is one)."""
    return _fold(values, lambda terms: _context().lcm(terms, bounded=False), lcm)


def gcd_of(values: Iterable):
    """The gcd of `values`; of a symbolic family, any positive common divisor
    of its members (the gcd over the whole family is one)."""
    return _fold(values, lambda terms: _context().gcd(terms), gcd)


def minimum_of(values: Iterable):
    """The least of `values`; of a symbolic family, any value at most each of
    its members (the least over the whole family is one), or, of a family
    that attains it, the least of its members."""
    if _attained(values, least=True):
        return minimum(*values)
    return _fold(values, lambda terms: _context().bound(terms, least=True), minimum)


def maximum_of(values: Iterable):
    """The greatest of `values`; of a symbolic family, any value at least each
    of its members (the greatest over the whole family is one), or, of a
    family that attains it, the greatest of its members."""
    if _attained(values, least=False):
        return maximum(*values)
    return _fold(values, lambda terms: _context().bound(terms, least=False), maximum)


def _attained(values: Iterable, least: bool) -> bool:
    """Whether `values` is a symbolic family that attains its extremum; its
    first extremum fold is recorded, and a different one refused."""
    terms = _family_terms(values)
    if terms is None or values.attains is None:
        return False
    _context().attained(values.attains, (least, *(t.get_id() for t in terms)))
    return True


def all_of(*conditions):
    for c in conditions:
        if type(c) is not bool:
            break
    else:  # the int reading's Booleans, its commonest call
        return all(conditions)
    if is_symbolic(*conditions):
        terms = _terms(*conditions)
        return _and(*terms) if _booleans(terms) else z3.And(*terms)
    if is_vector(*conditions):
        return functools.reduce(_numpy().logical_and, conditions, True)
    return all(conditions)


def any_of(*conditions):
    for c in conditions:
        if type(c) is not bool:
            break
    else:
        return any(conditions)
    if is_symbolic(*conditions):
        terms = _terms(*conditions)
        return _or(*terms) if _booleans(terms) else z3.Or(*terms)
    if is_vector(*conditions):
        return functools.reduce(_numpy().logical_or, conditions, False)
    return any(conditions)


def negate(condition):
    if type(condition) is bool:
        return not condition
    if is_symbolic(condition):
        if isinstance(condition, z3.BoolRef):
            context = condition.ctx
            return z3.BoolRef(z3.Z3_mk_not(context.ref(), condition.as_ast()), context)
        return z3.Not(condition)
    if is_vector(condition):
        return _numpy().logical_not(condition)
    return not condition


def implies(premise, conclusion):
    return any_of(negate(premise), conclusion)


def all_in(conditions: Iterable):
    return all_of(True, *conditions)
