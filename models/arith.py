"""The dual arithmetic every model function computes with.

Called on Python ints it computes exactly what Python does. Called with any Z3
term it returns Z3 terms, and every floor division becomes a fresh quotient and
remainder pinned by linear-in-the-witness constraints recorded in the active
`SymbolicContext`: Z3's own `/` and `%` on a symbolic divisor turn proofs into
timeouts. Model code never writes `//`,
`%`, `min`, `max`, `and`, `or` or `if` on a value that may be symbolic.
"""

from __future__ import annotations

import contextvars
import math
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import z3

_active: contextvars.ContextVar[SymbolicContext | None] = contextvars.ContextVar(
    "gridproof_symbolic_context", default=None
)


def is_symbolic(*values: object) -> bool:
    # A loop, not any() over a generator: called about 700,000 times over
    # --tier all, where the generator cost more than the tests.
    for v in values:
        if isinstance(v, z3.ExprRef):
            return True
    return False


class SymbolicContext:
    """Collects what the symbolic reading of a model call introduced.

    `definitions` hold by construction (they define witnesses); `obligations`
    are facts the model relies on (a divisor is not zero) that the hypotheses
    of a theorem must imply: the runner proves them with the goal.
    """

    def __init__(self, naive: bool = False) -> None:
        # naive: Z3's own div and mod on the dividend as written, the encoding
        # the benchmark compares against (exact only for positive divisors).
        self.naive = naive
        # Each definition with the id of the fresh constant that owns it (a
        # quotient owns its remainder's definitions too; an lcm its witnesses').
        self._definitions: list[tuple[int, z3.BoolRef]] = []
        self.obligations: list[z3.BoolRef] = []
        self._divisions: dict[tuple[int, int], tuple[z3.ArithRef, z3.ArithRef]] = {}
        self._lcms: dict[tuple[int, ...], z3.ArithRef] = {}
        self._gcds: dict[tuple[int, ...], z3.ArithRef] = {}
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
            pool = [z3.IntVal(0), *(q for q in registered if self._kept(q))]
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

    def fresh(self, stem: str) -> z3.ArithRef:
        self._counter += 1
        return z3.Int(f"_{stem}{self._counter}")

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
        if z3.is_int_value(x) and x.as_long() == 0:
            self._note_divisor(d)
            return z3.IntVal(0), z3.IntVal(0)
        if z3.is_app_of(x, z3.Z3_OP_ITE):
            condition, then, otherwise = x.children()
            q1, r1 = self.divide(then, d)
            q2, r2 = self.divide(otherwise, d)
            return z3.If(condition, q1, q2), z3.If(condition, r1, r2)
        factor = _cofactor(x, d)
        if factor is not None:
            self._note_divisor(d)
            self._register(factor, d)
            return factor, z3.IntVal(0)
        if z3.is_add(x):
            terms = x.children()
            for i, term in enumerate(terms):
                factor = _cofactor(term, d)
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
            q, r = self.fresh("q"), self.fresh("r")
            owner = q.get_id()
            self._owner[owner] = self._owner[r.get_id()] = owner
            self._reads[owner] = (x, d)
            self._definitions.append((owner, x == q * d + r))
            if z3.is_int_value(d):
                value = d.as_long()
                if value == 0:
                    raise ZeroDivisionError("model divides by the constant 0")
                bounds = z3.And(0 <= r, r < d) if value > 0 else z3.And(d < r, r <= 0)
                self._definitions.append((owner, bounds))
            else:
                # Python floors: the remainder takes the divisor's sign.
                self._definitions.append((owner, z3.Implies(d > 0, z3.And(0 <= r, r < d))))
                self._definitions.append((owner, z3.Implies(d < 0, z3.And(d < r, r <= 0))))
                self.obligations.append(d != 0)
            self._divisions[key] = (q, r)
            self._witnessed.append((x, d, q, r))
            self._register(q, d)
        return self._divisions[key]

    def lcm(self, terms: tuple[z3.ArithRef, ...]) -> z3.ArithRef:
        """A positive common multiple of positive `terms`, at most their product.

        The exact lcm is not expressible without quantifiers; every property
        proved about this over-approximation holds for the true lcm, and a
        counterexample that relies on the slack fails concrete replay.
        """
        key = tuple(t.get_id() for t in terms)
        if key not in self._lcms:
            result = self.fresh("lcm")
            owner = result.get_id()
            product = z3.IntVal(1)
            multiples = []
            for t in terms:
                witness = self.fresh("lcmw")
                self._owner[witness.get_id()] = owner
                multiples += [result == witness * t, witness >= 1]
                product = product * t
                self.obligations.append(t > 0)
            # Only for positive terms: unguarded, the definition has no model
            # when a term is not positive, which would discharge the positivity
            # obligations above instead of leaving them to the hypotheses.
            positive = z3.And(*(t > 0 for t in terms))
            self._owner[owner] = owner
            self._reads[owner] = terms
            self._definitions.append((owner, z3.Implies(positive, z3.And(*multiples, result <= product))))
            self._lcms[key] = result
        return self._lcms[key]

    def gcd(self, terms: tuple[z3.ArithRef, ...]) -> z3.ArithRef:
        """A positive common divisor of positive `terms`, the same term for the
        same terms: an over-approximation of the gcd, as `lcm` is of the lcm."""
        key = tuple(t.get_id() for t in terms)
        if key not in self._gcds:
            result = self.fresh("gcd")
            owner = result.get_id()
            divides_each = [result >= 1]
            for t in terms:
                witness = self.fresh("gcdw")
                self._owner[witness.get_id()] = owner
                divides_each += [t == witness * result, witness >= 1]
                self.obligations.append(t > 0)
            positive = z3.And(*(t > 0 for t in terms))
            self._owner[owner] = owner
            self._reads[owner] = terms
            self._definitions.append((owner, z3.Implies(positive, z3.And(*divides_each))))
            self._gcds[key] = result
        return self._gcds[key]


def _and(*conjuncts: z3.BoolRef) -> z3.BoolRef:
    """z3.And of Bool terms of one context, without its checks."""
    context = conjuncts[0].ctx
    arguments = (z3.Ast * len(conjuncts))(*(c.as_ast() for c in conjuncts))
    return z3.BoolRef(z3.Z3_mk_and(context.ref(), len(conjuncts), arguments), context)


def _implies(premise: z3.BoolRef, conclusion: z3.BoolRef) -> z3.BoolRef:
    """z3.Implies of Bool terms of one context, without its checks."""
    context = premise.ctx
    return z3.BoolRef(z3.Z3_mk_implies(context.ref(), premise.as_ast(), conclusion.as_ast()), context)


def _is_uninterpreted(context, ast) -> bool:
    """A constant of no theory (an input or a witness), not true or false."""
    declaration = z3.Z3_get_app_decl(context, z3.Z3_to_app(context, ast))
    return z3.Z3_get_decl_kind(context, declaration) == z3.Z3_OP_UNINTERPRETED


def _cofactor(x: z3.ArithRef, d: z3.ArithRef) -> z3.ArithRef | None:
    """c when x is visibly c * d, else None."""
    if x.eq(d):
        return z3.IntVal(1)
    if z3.is_mul(x):
        factors = x.children()
        for i, f in enumerate(factors):
            if f.eq(d):
                rest = factors[:i] + factors[i + 1 :]
                return rest[0] if len(rest) == 1 else z3.Product(*rest)
    return None


@contextmanager
def symbolic_context(naive: bool = False) -> Iterator[SymbolicContext]:
    context = SymbolicContext(naive=naive)
    token = _active.set(context)
    try:
        yield context
    finally:
        _active.reset(token)


def _context() -> SymbolicContext:
    context = _active.get()
    if context is None:
        raise RuntimeError("symbolic model call outside arith.symbolic_context()")
    return context


def _term(x: object) -> z3.ExprRef:
    if isinstance(x, z3.ExprRef):
        return x
    if isinstance(x, bool):
        return z3.BoolVal(x)
    return z3.IntVal(x)


def floordiv(x, d):
    if is_symbolic(x, d):
        return _context().divide(_term(x), _term(d))[0]
    return x // d


def mod(x, d):
    if is_symbolic(x, d):
        return _context().divide(_term(x), _term(d))[1]
    return x % d


def cdiv(x, d):
    """vLLM's `cdiv`: -(x // -d), i.e. the ceiling of x / d."""
    return -floordiv(-x, d)


def round_down(x, d):
    return floordiv(x, d) * d


def multiple(k, d):
    """k * d, a point of d's grid: the symbolic reading hands the solver the
    same monotonicity lemmas for k as for every quotient by d."""
    if is_symbolic(k, d):
        _context()._register(_term(k), _term(d))
    return k * d


def divides(d, x):
    """d | x. Only for goals and model branches; state hypotheses with witnesses."""
    return mod(x, d) == 0


def ite(condition, then, otherwise):
    if is_symbolic(condition):
        return z3.If(condition, _term(then), _term(otherwise))
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
        return _context().lcm(tuple(_term(x) for x in xs))
    return math.lcm(*xs)


def gcd(*xs):
    if is_symbolic(*xs):
        if len(xs) == 1:
            return xs[0]
        return _context().gcd(tuple(_term(x) for x in xs))
    return math.gcd(*xs)


def all_of(*conditions):
    if is_symbolic(*conditions):
        return z3.And(*(_term(c) for c in conditions))
    return all(conditions)


def any_of(*conditions):
    if is_symbolic(*conditions):
        return z3.Or(*(_term(c) for c in conditions))
    return any(conditions)


def negate(condition):
    if is_symbolic(condition):
        return z3.Not(condition)
    return not condition


def implies(premise, conclusion):
    return any_of(negate(premise), conclusion)


def all_in(conditions: Iterable):
    return all_of(True, *conditions)
