"""Deciding one obligation: building the Z3 query from a claim read
symbolically, budgeting it in rlimit, and turning the answer into an honest
verdict: only PROVED proves; UNKNOWN and VACUOUS are never success.

A claim is built by calling a theorem's formula with Z3 variables; the same
formula called with ints is the concrete model, used to replay every
counterexample before it is reported.

The obligation and its queries (the encoding, the budget, the query cache)
are proofs/engine/problem.py's; this module is the procedure that decides it,
calling on the cheap refuters (proofs/engine/refutation.py) and the minimisation
of the hypotheses a proof used (proofs/engine/minimisation.py).
"""

from __future__ import annotations

import contextlib
import contextvars
import itertools
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

import z3

from proofs.engine import minimisation, refutation
from proofs.engine.claims import Claim, Formula, Kind, Var, replay, symbolic_inputs
from proofs.engine.options import DEFAULT_RLIMIT, SolverOptions
from proofs.engine.problem import QUERY_PARAMETERS, STRATEGIES, Budget, Encoding, Problem, as_bool, assert_all
from proofs.engine.queries import Answer, Query, QueryCache, shared_queries, standard_smt2
from proofs.runtime import interrupts


class Verdict(StrEnum):
    """An obligation's verdict; a str, so it reads and compares as its name."""

    PROVED = "PROVED"  # the only one that proves
    REFUTED = "REFUTED"  # with a counterexample that replays on the concrete model
    UNKNOWN = "UNKNOWN"
    # The hypotheses admit no input, a cover goal is unreachable, or the
    # theorem states less than recorded (proofs/records/edges.py, proofs/records/needed.py).
    VACUOUS = "VACUOUS"
    ERROR = "ERROR"  # an encoding bug, or a counterexample that does not replay


PROVED, REFUTED, UNKNOWN, VACUOUS, ERROR = Verdict

SPURIOUS_RETRIES = 8  # inputs excluded after a counterexample that does not replay
VACUITY_RLIMIT = 100_000  # the hypotheses' first consistency check, before any search


@dataclass
class Outcome:
    verdict: Verdict
    rlimit: int = 0
    seconds: float = 0.0
    hypotheses_used: list[str] = field(default_factory=list)
    # Used hypotheses kept without a deletion check that decided (unknown at
    # its cap, or not posed for the proof's cost): the set may not be minimal.
    hypotheses_unconfirmed: list[str] = field(default_factory=list)
    counterexample: dict[str, int | bool] | None = None
    reason: str = ""
    queries: list[Query] = field(default_factory=list)  # what the verdict rests on, for export
    reused: int = 0  # queries answered from an identical query posed before (QueryCache)
    hypothesis_names: list[str] | None = None  # the claim's, in order, when it was read symbolically
    # A proof's: the inputs its claim reads in some case it decided (a case split's inputs are read by the split).
    inputs_read: list[str] = field(default_factory=list)

    @property
    def smt2(self) -> str:
        """The first query as `z3` poses it: its Z3 options, then its text."""
        return self.queries[0].z3_options + self.queries[0].text if self.queries else ""


# Whether decisions write out the queries they rest on when no check posed
# them as written (a counterexample found by the probe or the ladder, a case
# the hypotheses exclude): the proof cache, --report-dir and --confirm read
# them; a run without them is spared the writing.
_exporting: contextvars.ContextVar[bool] = contextvars.ContextVar("gridproof_exporting", default=True)


@contextlib.contextmanager
def exporting(wanted: bool) -> Iterator[None]:
    """Within the block, `wanted` False: outcomes carry only the queries
    written anyway (Outcome.queries may be empty)."""
    token = _exporting.set(wanted)
    try:
        yield
    finally:
        _exporting.reset(token)


def decide(
    formula: Formula,
    variables: Sequence[Var],
    variant,
    options: SolverOptions | None = None,
    context: z3.Context | None = None,
) -> Outcome:
    """PROVED, REFUTED (replayed), UNKNOWN, VACUOUS or ERROR for one obligation.

    `options.case_split` names Bool inputs to enumerate: each case
    substitutes its values before encoding, so the model's branches on them
    vanish. PROVED needs every case that the hypotheses admit to be PROVED.
    `options.lemmas` False leaves the derived lemma families out (sound
    either way: they are valid facts, and some goals close sooner without
    them).

    Every term and solver is made in `context` (a new one when None). Term
    ids order the solver's choices, so in a shared context an obligation's
    cost and answers depend on what was decided in it before; the runner
    gives each entry its own. Z3's search still depends on the process
    around it: restore safety, decided first in three processes that had
    only imported their modules in other orders, spent 4.1, 4.2 and 5.9
    million rlimit and left 16, 19 and 20 hypotheses unconfirmed, with the
    same verdict. So a verdict reproduces; the hypotheses left unconfirmed
    and the rlimit spent may not, and nothing recorded (edges, witnesses)
    rests on them.

    `options.known_needed`: hypotheses already shown needed elsewhere (a
    sibling obligation whose report this one's joins): reported used, with
    no deletion check of their own."""
    started = time.perf_counter()
    options = options or SolverOptions()
    context = z3.Context() if context is None else context
    budget = Budget(options.rlimit, context, wall_limit=options.wall_limit)
    problem = None
    try:
        problem = _Decision(formula, tuple(variables), variant, options, budget, context)
        if options.strategy not in STRATEGIES:
            raise ValueError(f"unknown solver strategy {options.strategy!r} (known: {', '.join(STRATEGIES)})")
        with _global_parameters(options.z3_parameters):
            outcome = problem.decide()
    except Exception as error:  # an encoding bug must surface as ERROR, never as a verdict
        interrupts.raise_if_requested()  # not an interrupt that ctypes wrapped
        outcome = Outcome(ERROR, reason=f"{type(error).__name__}: {error}")
    budget.charge()
    outcome.rlimit = budget.used
    outcome.reused = problem.reused if problem is not None else 0
    outcome.hypothesis_names = problem.hypothesis_names if problem is not None else None
    outcome.seconds = time.perf_counter() - started
    return outcome


def query_text(formula: Formula, variables: Sequence[Var], variant) -> str:
    """The claim read symbolically as one query's text, every input free:
    the witness definitions, the hypotheses, the negated goal and the cover
    goals, with Z3's let-names numbered in order. Every query a decision
    poses is a function of it (and of the procedure's code), so equal texts
    are decided alike."""
    context = z3.Context()
    problem = Problem(formula, tuple(variables), variant, SolverOptions(), Budget(1, context, counted=False), context)
    try:
        encoding = Encoding(problem, {})
    except Exception as error:  # a reading that raises (decided, it is ERROR): the text names the error
        interrupts.raise_if_requested()  # not an interrupt that ctypes wrapped
        return f"{type(error).__name__}: {error}"
    query = encoding.solver(tracked=True, lemmas=False)
    covers = [z3.Bool(f"cover:{name}", context) == as_bool(c, context) for name, c in encoding.claim.covers.items()]
    text = QueryCache.key(query, [z3.Not(encoding.goal), *covers])
    # The goal's conjuncts by name: what the manifest's refuted_alone reads.
    return text + "".join(f"\n; conjunct {name}" for name in encoding.claim.conjuncts)


def encode(
    formula: Formula,
    variables: Sequence[Var],
    variant,
    context: z3.Context,
    fixed: dict | None = None,
    rlimit: int = DEFAULT_RLIMIT,
):
    """The claim read symbolically in `context`, some inputs fixed to values:
    `.claim`, `.inputs` (Z3 terms or the fixed values), `.hypotheses`,
    `.goal` (with the model's definedness obligations), `.solver(tracked)`
    (definitions and hypotheses asserted, rlimit set), `.values(model)`. For
    tools that pose their own queries (mining); verdicts come from `decide`."""
    budget = Budget(rlimit, context)
    problem = Problem(formula, tuple(variables), variant, SolverOptions(rlimit=rlimit), budget, context)
    return Encoding(problem, dict(fixed or {}))


@dataclass
class _GoalQuery:
    """A case's negated goal as last posed (`proof` its answer), and what posing it again has changed."""

    encoding: Encoding
    negated: z3.Solver
    independent: set[str]  # hypotheses the goal does not depend on, left out of `negated`
    text: str  # `negated` as exported and keyed in the query cache
    proof: Answer
    first_cost: int  # the rlimit the first posing cost when decided: it sizes the deletion checks
    first_key: str
    pinned_exactly: bool = False  # the claim read again with every lcm and gcd exact
    spurious: Outcome | None = None  # the first model that did not replay


class _Decision(Problem):
    """A Problem being decided: the decision procedure, case by case (the
    vacuity check, the proof query, the counterexamples replayed, the
    hypotheses used) and then the cover goals."""

    def decide(self) -> Outcome:
        """Decide the obligation: REFUTED at a recorded input that replays or at the probe's counterexample
        (with probe_only, UNKNOWN where the probe finds none); else case by case over `case_split`, the first
        case not PROVED returned; VACUOUS when the hypotheses exclude every case; then the cover goals; else
        PROVED with the hypotheses used and left unconfirmed, and the inputs read."""
        case_split, refute_first = tuple(self.options.case_split), self.options.refute_first
        known_needed = set(self.options.known_needed)
        booleans = {v.name for v in self.variables if v.kind is Kind.BOOL}
        unknown = [n for n in case_split if n not in booleans]
        if unknown:
            raise ValueError(f"case split on unknown Bool inputs {unknown}")
        cases = [
            dict(zip(case_split, values, strict=True))
            for values in itertools.product((False, True), repeat=len(case_split))
        ]
        values = self.recorded_counterexample()
        if values is not None:
            # A recorded input this variant fails (a counterexample of its
            # own, another variant's, a mutant's): refuted with no query.
            return self._refuted(values, {})
        if refute_first and not self.options.probed:
            # On the obligation whole, every flag free: the probe draws the
            # flags too, and a geometry's one query covers every case, where
            # case by case would cost a probe and a reading per case.
            values = None if self.options.recorded_only else refutation.refute_small(self, {}, self.options.rungs)
            if values is not None:
                return self._refuted(values, {})
            if self.options.probe_only:
                return Outcome(UNKNOWN, reason="the probe found no counterexample")
        used: set[str] = set()
        unconfirmed: set[str] = set()
        # Shown needed by a check in some case: needed, whatever another case's check said.
        confirmed: set[str] = set()
        admitted: list[dict] = []
        queries: list[Query] = []
        for case in cases:
            label = _case_label(case)
            known = set(used) | known_needed
            out = self._decide_case(case, searched=refute_first, known_needed=known)
            # A case the hypotheses exclude is proved by the hypotheses that
            # exclude it: they are used, each checked. A proof keeps `known`
            # unchecked: that confirms none of them.
            checked = set(out.hypotheses_used) - (known if out.verdict == PROVED else set())
            used.update(out.hypotheses_used)
            unconfirmed.update(out.hypotheses_unconfirmed)
            confirmed.update(checked - set(out.hypotheses_unconfirmed))
            queries += out.queries
            if out.verdict == VACUOUS and case:
                continue
            admitted.append(case)
            if out.verdict != PROVED:
                out.reason = label + out.reason
                out.queries = queries
                return out
        if not admitted:
            return Outcome(VACUOUS, reason="the hypotheses exclude every case", queries=queries)
        covers = self._check_covers(admitted)
        if covers is not None:
            return covers
        read = set(case_split).union(*(self.encoding(case).inputs_read() for case in admitted))
        return Outcome(
            PROVED,
            hypotheses_used=sorted(used),
            hypotheses_unconfirmed=sorted(unconfirmed - confirmed),
            queries=queries,
            inputs_read=[v.name for v in self.variables if v.name in read],
        )

    def _decide_case(self, case: dict, searched: bool, known_needed: set[str] = frozenset()) -> Outcome:
        """`searched`: the cheap refuters have already failed on this case
        (on the obligation whole, whose queries leave the flags free)."""
        encoding = self.encoding(case)
        simplified = {name: z3.simplify(h) for name, h in encoding.hypotheses.items()}
        vacuous = self._vacuity(case, encoding, simplified)
        if vacuous is not None:
            return vacuous
        goal = self._negated_goal(encoding, simplified)
        # From here `goal` holds the encoding alone: when a retry reads the claim again, the first
        # encoding's terms are freed, and with them the term ids the later queries are given.
        del encoding
        refuted = self._past_spurious_models(goal, case)
        if refuted is not None:
            return refuted
        return self._goal_outcome(goal, case, searched, simplified, known_needed)

    def _vacuity(self, case: dict, encoding: Encoding, simplified: dict[str, z3.BoolRef]) -> Outcome | None:
        """The case's outcome where its hypotheses contradict each other (VACUOUS) or their consistency is
        not decided (UNKNOWN); None where some input satisfies them all."""
        # Vacuity: hypotheses that contradict each other prove anything. A
        # case's values can make a hypothesis false outright; otherwise a
        # model with every size pinned small settles most cases, then one in
        # the smallest geometries; then a short query without the lemma
        # families (a case that contradicts the hypotheses usually does so
        # plainly); then larger geometries; then the full query.
        false = [name for name, h in simplified.items() if z3.is_false(h)]
        if false:
            where = " in this case" if case else ""
            return self._excluded(case, encoding, false, f"hypotheses false{where}: {', '.join(false)}")
        answer = z3.sat
        smallest, larger = refutation.SIZE_LADDER[:1], refutation.SIZE_LADDER[1:]
        found = self._pinned_model(encoding, z3.BoolVal(True, self.context))
        # Kept alive through the proof, the pinned solvers' terms would shift
        # the ids of the proof's own, and with them what the proof finds.
        encoding.release_pinned()
        found = found or refutation.search(self, case, _anything, rungs=smallest)
        if not found:
            answer = self.check(encoding.solver(tracked=False, limit=VACUITY_RLIMIT, lemmas=False)).result
            if answer == z3.unknown and refutation.search(self, case, _anything, rungs=larger) is None:
                alone = self.check(encoding.solver(tracked=False))
                answer = alone.result
                if answer == z3.unknown:
                    return Outcome(UNKNOWN, reason=f"hypotheses alone: {alone.reason}")
        if answer == z3.unsat:
            core, _ = minimisation.minimal_hypotheses(self, encoding, z3.BoolVal(True, self.context))
            return self._excluded(case, encoding, core, f"the hypotheses contradict each other: {', '.join(core)}")
        return None

    def _negated_goal(self, encoding: Encoding, simplified: dict[str, z3.BoolRef]) -> _GoalQuery:
        """The goal's negation under the hypotheses it depends on, posed once."""
        # Untracked: naming hypotheses for an unsat core blocks the solver's
        # equality solving, and measured slower by orders of magnitude here.
        independent = minimisation.independent_of_goal(encoding, simplified)
        negated = encoding.solver(tracked=False, only=set(encoding.hypotheses) - independent)
        negated.add(z3.Not(encoding.goal))
        # Written once: the exported file and the query cache's key.
        text = negated.to_smt2()
        proof = self.check(negated, smt2=text)
        # What the proof cost when first decided: a reused answer sizes the
        # deletion checks as the same query decided alone would.
        return _GoalQuery(encoding, negated, independent, text, proof, proof.cost, proof.key)

    def _past_spurious_models(self, goal: _GoalQuery, case: dict) -> Outcome | None:
        """The counterexample a model of the negated goal gives where it replays (REFUTED), else None,
        `goal` posed again while its models do not replay: with every hypothesis, with every lcm and gcd
        exact, then with each spurious model's inputs excluded (SPURIOUS_RETRIES in all)."""
        for _ in range(SPURIOUS_RETRIES):
            if goal.proof.result != z3.sat:
                break
            values = goal.encoding.values(goal.negated.model())
            outcome = self._refuted(values, case, goal.text)
            if outcome.verdict == REFUTED:
                return outcome
            if goal.independent:
                # The cone of influence left these hypotheses out, so Z3 chose
                # their inputs freely: pose the query again with every
                # hypothesis asserted before calling the model spurious.
                goal.negated.add(*(goal.encoding.hypotheses[name] for name in sorted(goal.independent)))
                goal.independent = set()
                goal.text = goal.negated.to_smt2()
                goal.proof = self.check(goal.negated, smt2=goal.text)
                continue
            if not goal.pinned_exactly:
                # The symbolic lcm and gcd over-approximate, and the lcm of a
                # 0 term is an obligation where math.lcm gives 0: read the
                # claim again with the lcm as math.lcm has it at 0 and every
                # lcm and gcd pinned to its exact value, and pose the query
                # again with every hypothesis.
                goal.pinned_exactly = True
                goal.encoding = Encoding(self, case, total_lcm=True)
                goal.negated = goal.encoding.solver(tracked=False)
                assert_all(goal.negated, goal.encoding.context.exact_definitions())
                goal.negated.add(z3.Not(goal.encoding.goal))
                goal.independent = set()
                goal.text = goal.negated.to_smt2()
                goal.proof = self.check(goal.negated, smt2=goal.text)
                continue
            # A model that does not replay exploits an encoding bug: look past
            # it for a real counterexample, but never report the theorem proved.
            goal.spurious = goal.spurious or outcome
            goal.negated.add(z3.Or(*(goal.encoding.inputs[v.name] != values[v.name] for v in goal.encoding.free)))
            goal.proof = self.check(goal.negated)
        return None

    def _goal_outcome(
        self, goal: _GoalQuery, case: dict, searched: bool, simplified: dict[str, z3.BoolRef], known_needed: set[str]
    ) -> Outcome:
        """The case's outcome from the goal's last answer: REFUTED by its model, the first spurious model's
        ERROR, UNKNOWN (after the small refuters, unless `searched`), or PROVED with the hypotheses it used."""
        if goal.proof.result == z3.sat:
            return self._refuted(goal.encoding.values(goal.negated.model()), case, goal.negated.to_smt2())
        if goal.spurious is not None:
            return goal.spurious
        if goal.proof.result == z3.unknown:
            reason = goal.proof.reason
            if not searched:
                found = refutation.refute_small(self, case)
                if found is not None:
                    return self._refuted(found, case)
            if goal.pinned_exactly:
                reason = f"a counterexample did not replay, and with every lcm and gcd exact: {reason}"
            return Outcome(UNKNOWN, reason=f"goal: {reason}", queries=[self._query(case, "unknown", goal.text)])
        # Not needed in this case, without a check: a hypothesis true outright,
        # and those the proof did without.
        idle = {name for name, h in simplified.items() if z3.is_true(h)} | goal.independent
        used, unconfirmed = minimisation.minimised(
            self, goal.encoding, goal.first_key, goal.first_cost, known_needed, idle
        )
        queries = [self._query(case, "unsat", goal.text)]
        return Outcome(PROVED, hypotheses_used=used, hypotheses_unconfirmed=unconfirmed, queries=queries)

    def _excluded(self, case: dict, encoding: Encoding, names: list[str], reason: str) -> Outcome:
        """VACUOUS for a case that the hypotheses `names` exclude: they are the
        proof of that case. Each is confirmed needed when, in this case with
        every other hypothesis holding, the goal fails without it: in a pinned
        geometry (PINNED_RANGES), or else within CORE_MIN_RLIMIT when the
        widest pinned range decided. The others are unconfirmed."""
        deletions = minimisation.DeletionQueries(self, encoding, z3.Not(encoding.goal))

        def needed(name: str) -> bool:
            kept = encoding.hypotheses
            if deletions.shown_at_recorded_input(kept, name):
                return True
            pinned = deletions.pinned_answer(kept, name)
            if pinned != z3.unsat:
                return pinned == z3.sat
            return deletions.check(kept, name, minimisation.CORE_MIN_RLIMIT) == z3.sat

        unconfirmed = [name for name in names if not needed(name)]
        exported = []
        if _exporting.get():
            # Exported as the proof of the case: every hypothesis and the negated goal, unsat.
            query = encoding.solver(tracked=False)
            query.add(z3.Not(encoding.goal))
            exported.append(self._query(case, "unsat", query.to_smt2()))
        return Outcome(
            VACUOUS, reason=reason, hypotheses_used=list(names), hypotheses_unconfirmed=unconfirmed, queries=exported
        )

    def _query(self, case: dict, answer: str, text: str) -> Query:
        """A solver's to_smt2() `text` as an exported Query: standard SMT-LIB
        2.6, and apart from it the Z3 options it was decided under, so that
        `z3` poses it as it was posed here and other solvers read it as is."""
        return Query(tuple(case.items()), answer, standard_smt2(text, answer), self._z3_options())

    def _z3_options(self) -> str:
        options = [
            *((f"smt.{name}", value) for name, value in QUERY_PARAMETERS),
            *self.options.z3_parameters,
            *((("smt.random_seed", self.seed),) if self.seed is not None else ()),
            # What the SMT core alone (SimpleSolver) does; Z3's default for the logic differs.
            *((("tactic.default_tactic", "smt"),) if self.options.strategy == "core" else ()),
        ]
        return "".join(f"(set-option :{name} {_smt2_value(value)})\n" for name, value in options)

    def _check_covers(self, cases: list[dict]) -> Outcome | None:
        """VACUOUS or UNKNOWN for a cover goal not shown reachable, else None.
        `cases`: those the hypotheses admit. A model of a case's claim, read
        with the case's flags fixed, is a model of the claim with them free:
        a case's reading (already made) reaches a cover first, and the
        claim is read with every flag free only for a cover no case reached."""
        readings = [self.encoding(case) for case in cases if case]
        # A formula names its covers whatever the flags' values (it reads
        # them as Z3 terms too, and cannot branch on them): every case names
        # the same. Should two cases not, the flags-free reading names them.
        named = {tuple(reading.claim.covers) for reading in readings}
        names = named.pop() if len(named) == 1 else tuple(self.encoding({}).claim.covers)
        for name in names:
            if self._recorded_cover(name) or any(
                name in case.claim.covers and self._pinned_model(case, as_bool(case.claim.covers[name], self.context))
                for case in readings
            ):
                continue
            encoding = self.encoding({})
            cover = as_bool(encoding.claim.covers[name], self.context)
            if not readings and self._pinned_model(encoding, cover):
                continue
            found = refutation.search(self, {}, lambda e, name=name: as_bool(e.claim.covers[name], self.context))
            if found is not None:
                continue
            reach = encoding.solver(tracked=False)
            answer = self.check(reach, cover)
            if answer.result == z3.unsat:
                return Outcome(VACUOUS, reason=f"cover goal {name!r} is unreachable")
            if answer.result == z3.unknown:
                return Outcome(UNKNOWN, reason=f"cover goal {name!r}: {answer.reason}")
        return None

    def recorded_counterexample(self) -> dict | None:
        """The first recorded input (SolverOptions.recorded_inputs) that
        replays: every hypothesis but those dropped holds on the concrete
        model, and the goal fails there or the model divides by zero."""
        for reading in self.recorded_readings():
            if reading.admitted(self.drop) and (reading.crashed or not reading.claim.goal):
                return reading.values
        return None

    def _recorded_cover(self, cover: str) -> bool:
        """Whether a recorded input is a model of the hypotheses and of the
        cover goal `cover` on the concrete model: the cover check's first
        try, with no query. Not the vacuity check's: the pinned queries
        it would spare set the term ids the proof then meets, and a
        generated config mutant's proof found no counterexample without
        them (tests/test_exact_lcm.py)."""
        return any(
            not reading.crashed and reading.admitted(self.drop) and bool(reading.claim.covers.get(cover, False))
            for reading in self.recorded_readings()
        )

    def _pinned_model(self, encoding: Encoding, target: z3.BoolRef) -> bool:
        """Whether `target` holds in some model of the hypotheses with every
        size pinned to one of PINNED_RANGES: the vacuity and cover checks'
        first try, on the claim already read (the ladder reads it again per
        geometry, about 15 ms each). Over --tier all this settled 72 of the 76
        vacuity checks and 21 of the 24 cover checks. Not shared: a query
        answered from the cache skips Z3's work, and what Z3 does shifts the
        term ids that later queries see, so an entry would differ from its
        reproduce command."""
        for pins in minimisation.PINNED_RANGES if encoding.sizes else ():
            solver, literal = encoding.pinned(pins, target)
            solver.set("rlimit", max(min(minimisation.PINNED_RLIMIT, self.budget.remaining), 1))
            if self.check(solver, *literal, shared=False).result == z3.sat:
                return True
        return False

    def _refuted(self, values: dict, case: dict, text: str = "") -> Outcome:
        """REFUTED if `values` replay, else ERROR. `text`: the query whose
        model they are; without one (the probe, the ladder), the exported
        query is the counterexample's: the obligation's full query with every
        input set to its value, sat."""
        replays, why = replay(self.formula, self.variant, values, self.drop)
        if not replays:
            queries = [self._query(case, "sat", text)] if text else []
            return Outcome(
                ERROR, counterexample=values, reason=f"counterexample does not replay: {why}", queries=queries
            )
        if not text and not _exporting.get():
            return Outcome(REFUTED, counterexample=values, reason=why)
        text = text or self._counterexample_text(case, values)
        return Outcome(REFUTED, counterexample=values, reason=why, queries=[self._query(case, "sat", text)])

    def _counterexample_text(self, case: dict, values: dict) -> str:
        encoding = self.encoding(case)
        query = encoding.solver(tracked=False)
        query.add(z3.Not(encoding.goal), *(encoding.inputs[v.name] == values[v.name] for v in encoding.free))
        return query.to_smt2()


@contextlib.contextmanager
def _global_parameters(options: Sequence[tuple[str, object]]):
    """Z3 parameters set for one obligation and restored after it. Global:
    some (the SAT core's) are read only from the global configuration, and a
    worker process decides many obligations in turn."""
    saved = []
    try:
        for name, value in options:
            try:
                saved.append((name, z3.get_param(name)))
            except z3.Z3Exception:
                raise ValueError(f"unknown Z3 parameter {name!r}") from None
            z3.set_param(name, value)
        yield
    finally:
        for name, value in reversed(saved):
            z3.set_param(name, value)


def _smt2_value(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _case_label(case: dict) -> str:
    return f"case {', '.join(f'{k}={v}' for k, v in case.items())}: " if case else ""


def _anything(encoding: Encoding) -> z3.BoolRef:
    return z3.BoolVal(True, encoding.problem.context)


# The solver's public surface; the query records live in proofs/engine/queries.py.
__all__ = [
    "DEFAULT_RLIMIT",
    "QUERY_PARAMETERS",
    "ERROR",
    "PROVED",
    "REFUTED",
    "UNKNOWN",
    "VACUOUS",
    "Answer",
    "Claim",
    "Formula",
    "Kind",
    "Outcome",
    "Query",
    "QueryCache",
    "SolverOptions",
    "Var",
    "Verdict",
    "decide",
    "encode",
    "exporting",
    "query_text",
    "replay",
    "shared_queries",
    "standard_smt2",
    "symbolic_inputs",
]
