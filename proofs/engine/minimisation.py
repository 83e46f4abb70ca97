"""Which hypotheses a proof used: minimal by deletion, each checked, with
the cheap checks first (a geometry pinned small) and the hopeless ones not
posed. Also the hypotheses a case can leave out of its proof query
unchecked (the cone of influence). Functions of the problem being decided
(proofs/engine/problem.py), called by the decision procedure (proofs/engine/solver.py)."""

from __future__ import annotations

import z3

from proofs.engine import queries
from proofs.engine.problem import Encoding, Problem, pinned

CORE_RLIMIT = 300_000  # per deletion check when minimising a proof's hypotheses, at most
# A deletion check may cost this many times what its proof cost. Over
# --tier all every deletion check that decided cost at most 2.5 times its
# proof; the rest ended unknown at their cap, which was 150,000 at least.
CORE_PROOF_MULTIPLE = 3
# A deletion query can cost more than a proof that was quick, so the cap
# has a floor: above any check that decided over --tier all for a proof
# of under 100,000 (the costliest, 39,759). After a check of the case ends
# unknown, the next ones are capped here too (minimal_hypotheses says why).
CORE_FLOOR_RLIMIT = 50_000
# The checks that confirm the hypotheses that exclude a case.
CORE_MIN_RLIMIT = 150_000
# A deletion check capped below a quarter of the proof's own cost is not
# posed: such checks end unknown (and keep their hypothesis) at a high cost.
CORE_HOPELESS_RATIO = 4
# Before a deletion check, the same query with every size input pinned to a
# small range: a model shows the hypothesis needed, and the check is not
# posed. Every size 1 first (linear: a few milliseconds), then each size
# anywhere in 0..2 (nonlinear but bounded; most answer in milliseconds too;
# 0 breaks the goal's definedness, which shows a positivity hypothesis
# needed). Over the whole catalogue: 79 more hypotheses shown needed (64 of
# the 198 used left unconfirmed, against 143 with the checks alone), and in
# less time: most checks that ended unknown are no longer posed.
PINNED_RANGES = ((1, 1), (0, 2))
PINNED_RLIMIT = 100_000  # a vacuity or cover check in a pinned geometry (solver._pinned_model)
# A deletion check in a pinned geometry, by range. Over --tier all, no check
# that decided with every size 1 cost more than 38,124, and 2 of the 483 that
# decided in 0..2 cost more than 60,000 (at most 65,512); the 68 that ended
# unknown at 100,000, the cap of both before, cost a sixth of every deletion
# check's rlimit and told nothing.
PINNED_DELETION_RLIMIT = {(1, 1): 40_000, (0, 2): 60_000}
# With more size inputs than this (the group theorems' wide shapes), 0..2
# for each is 3^n geometries, and a check there is capped lower: over
# --tier all, 30 of them ended unknown at 100,000, none decided above
# 40,000 but 3 (now kept unconfirmed), and the run took 1.7 million less rlimit
# (24.9 to 23.3 million).
PINNED_WIDE_SIZES = 10
PINNED_WIDE_RLIMIT = 40_000
# A deletion check that the widest pinned range leaves undecided is not
# posed in full: its hypothesis is kept, unconfirmed, as after a full check
# that ended unknown. Over --tier all, each of the 10 such checks posed in
# full had ended unknown at its cap, and cost a sixth of all deletion checks.


def minimised(
    problem: Problem, encoding: Encoding, proof_key: str, proof_cost: int, known_needed: set[str], idle: set[str]
) -> tuple[list[str], list[str]]:
    """minimal_hypotheses for a proof, answered once per identical proof query within
    shared_queries. Deletion queries do not go through the query cache,
    and after a reused proof Z3's term ids differ from those of the same
    proof decided alone, so recomputing could report another set than
    the entry's reproduce command does."""
    cache = queries.active.get()
    key = ""
    # A budget nearly spent would cap the deletion checks lower than the first decision's.
    if cache is not None and proof_key and problem.budget.remaining >= CORE_RLIMIT:
        known = f"{sorted(known_needed)} {sorted(idle)}"
        key = f"minimised {list(encoding.hypotheses)} {known} {proof_cost}\n{proof_key}"
        found = cache.minimised(key)
        if found is not None:
            problem.reused += 1
            return found
    result = minimal_hypotheses(problem, encoding, z3.Not(encoding.goal), proof_cost, known_needed, idle)
    if key:
        cache.store_minimised(key, result)
    return result


def minimal_hypotheses(
    problem: Problem,
    encoding: Encoding,
    negated_goal: z3.BoolRef,
    proof_cost: int = CORE_RLIMIT,
    known_needed: set[str] = frozenset(),
    idle: set[str] = frozenset(),
) -> tuple[list[str], list[str]]:
    """The hypotheses a proof used, minimal by deletion: drop each in
    turn and keep it out if the rest still prove the goal. Every set
    reported was itself checked unsat. A check that does not finish within
    a few times the proof's own cost, or that the widest pinned range leaves
    undecided, keeps the hypothesis: the set is then sufficient, though
    perhaps not minimal; so is the whole set when the
    proof cost more than CORE_HOPELESS_RATIO times the check's cap, unless
    a pinned geometry shows a hypothesis needed (PINNED_RANGES).
    `known_needed` (an earlier case's core, which the reported union holds
    anyway) is kept unchecked; `idle` (true outright in this case) is left
    out unchecked. Returns the set and those of it kept without a check
    that decided."""
    limit = deletion_cap(proof_cost)
    posed = proof_cost <= CORE_HOPELESS_RATIO * limit
    needed = {name: h for name, h in encoding.hypotheses.items() if name not in idle}
    deletions = DeletionQueries(problem, encoding, negated_goal)
    unconfirmed = []
    for name in [n for n in needed if n not in known_needed]:
        if deletions.shown_at_recorded_input(needed, name):
            continue
        pinned = deletions.pinned_answer(needed, name)
        if pinned == z3.sat:
            continue
        if posed and pinned == z3.unknown:
            limit = min(limit, CORE_FLOOR_RLIMIT)  # as after a full check that ended unknown
        elif posed:
            answer = deletions.check(needed, name, limit)
            if answer == z3.unsat:
                del needed[name]
                continue
            if answer == z3.sat:
                continue
            # The case's checks share a solver, which this one warmed up
            # to its cap: the checks decided after it cost little. Over
            # --tier all, each of the 21 that decided after one had ended
            # unknown cost 18,318 or less, and the 27 that ended unknown
            # cost 2.7 million.
            limit = min(limit, CORE_FLOOR_RLIMIT)
        unconfirmed.append(name)
    return sorted(needed), sorted(unconfirmed)


def deletion_cap(proof_cost: int) -> int:
    """The rlimit of a proof's first deletion check: CORE_PROOF_MULTIPLE times
    the proof's, within CORE_FLOOR_RLIMIT..CORE_RLIMIT."""
    return min(CORE_RLIMIT, max(CORE_FLOOR_RLIMIT, CORE_PROOF_MULTIPLE * proof_cost))


class DeletionQueries:
    """The deletion queries of one case: the hypotheses in `kept` other than
    `name`, and the negated goal, satisfiable exactly when `name` is needed.
    `name` negated too: the proof shows every model of the rest that misses
    the goal violates it, so the query is equisatisfiable, and the solver
    starts from the violation.

    One solver serves every hypothesis's query: each hypothesis, and its
    negation, is asserted behind a literal, and a query picks them by
    assumption: the same answers as a fresh solver per query, in less time.
    Not through the query cache: these solvers differ per case, and a key
    costs about what a pinned query does."""

    def __init__(self, problem: Problem, encoding: Encoding, negated_goal: z3.BoolRef) -> None:
        self.problem, self.encoding, self.negated_goal = problem, encoding, negated_goal
        self.solvers: dict[tuple[int, int] | None, z3.Solver] = {}
        self._failing: list[dict[str, bool]] | None = None
        ctx = problem.context
        self.holds = {name: z3.Bool(f"deletion holds: {name}", ctx) for name in encoding.hypotheses}
        self.fails = {name: z3.Bool(f"deletion fails: {name}", ctx) for name in encoding.hypotheses}

    def shown_at_recorded_input(self, kept: dict, name: str) -> bool:
        """A model of the query found among the problem's recorded inputs
        (SolverOptions.recorded_inputs) on the concrete model: `name` false,
        every other hypothesis in `kept` true, the goal false. The concrete
        model is what a refutation replays on, so such an input shows the
        hypothesis needed as a sat answer would, and the query is not posed."""
        return any(
            not holds.get(name, True) and all(holds.get(other, False) for other in kept if other != name)
            for holds in self._goal_failing()
        )

    def _goal_failing(self) -> list[dict[str, bool]]:
        """Each hypothesis's truth at every recorded input of this case where
        the concrete model reads the claim, dividing by no zero, and its goal
        fails; none for a query that asks for no failure (a contradiction's
        core: the negated goal true)."""
        if self._failing is None:
            self._failing = []
            if not z3.is_true(self.negated_goal):
                self._failing = [
                    {name: bool(holds) for name, holds in reading.claim.hypotheses.items()}
                    for reading in self.problem.recorded_readings()
                    if reading.in_case(self.encoding.fixed) and not reading.crashed and not reading.claim.goal
                ]
        return self._failing

    def check(self, kept: dict, name: str, limit: int) -> z3.CheckSatResult:
        """The full query, within `limit`."""
        return self._check(self._solver(None), kept, name, limit)

    def pinned_answer(self, kept: dict, name: str) -> z3.CheckSatResult:
        """sat when the query has a model with every size within one of
        PINNED_RANGES, else the answer within the last (widest) of them;
        unsat without sizes to pin."""
        answer = z3.unsat
        sizes = len(self.encoding.sizes)
        for pins in PINNED_RANGES if sizes else ():
            cap = PINNED_DELETION_RLIMIT[pins]
            if sizes > PINNED_WIDE_SIZES and pins[0] != pins[1]:
                cap = min(cap, PINNED_WIDE_RLIMIT)
            answer = self._check(self._solver(pins), kept, name, cap)
            if answer == z3.sat:
                break
        return answer

    def _check(self, solver: z3.Solver, kept: dict, name: str, limit: int) -> z3.CheckSatResult:
        """Capped per check, as a fresh solver would be: by `limit` and by
        what is left of the obligation's budget."""
        budget = self.problem.budget
        solver.set("rlimit", max(min(limit, budget.remaining), 1))
        answer = budget.check(solver, *(self.holds[n] for n in kept if n != name), self.fails[name])
        budget.charge(solver)
        return answer

    def _solver(self, pins: tuple[int, int] | None) -> z3.Solver:
        """With `pins` (low, high), every size in that range. The lemma
        families are left out: with one value the query is linear, and
        unpinned they cost more than they help. Over --tier all under three
        seeds, the full deletion queries without them took 10% less rlimit
        for the whole run, and decided more: 38, 44 and 47 hypotheses left
        unconfirmed, against 39, 52 and 58 with them."""
        if pins not in self.solvers:
            solver = self.encoding.solver(tracked=False, only=set(), lemmas=False)
            solver.add(self.negated_goal)
            if pins is not None:
                solver.add(*pinned(self.encoding.sizes, pins))
            for name, hypothesis in self.encoding.hypotheses.items():
                solver.add(z3.Implies(self.holds[name], hypothesis), z3.Implies(self.fails[name], z3.Not(hypothesis)))
            self.solvers[pins] = solver
        return self.solvers[pins]


def independent_of_goal(encoding: Encoding, simplified: dict[str, z3.BoolRef]) -> set[str]:
    """The hypotheses that read nothing the goal reads, not even through
    other hypotheses (arith's footprint: inputs and witnesses): the goal's
    footprint grows by that of each conjunct of a hypothesis that shares
    some of it. The rest prove the goal if all of them do. The hypotheses
    are consistent (the vacuity check), and the definitions of the witnesses
    have a model for any inputs (the lemma families follow from them), so a
    model of the rest that breaks the goal combines with one of the dropped
    hypotheses on inputs and witnesses of their own. `simplified`: the
    hypotheses, simplified in this case."""
    context = encoding.context
    reads = {
        name: [context.footprint(c) for c in (h.children() if z3.is_and(h) else [h])] for name, h in simplified.items()
    }
    reached = context.footprint(encoding.goal)
    grown = True
    while grown:
        grown = False
        for read in (r for conjuncts in reads.values() for r in conjuncts):
            if read & reached and not read <= reached:
                reached |= read
                grown = True
    return {name for name, conjuncts in reads.items() if not any(r & reached for r in conjuncts)}
