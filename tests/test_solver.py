"""The solver's verdicts are honest: each of the five can be produced, and
only PROVED and REFUTED-with-replay count as decided."""

import time

from models import arith
from proofs.engine import minimisation
from proofs.engine.claims import at_least
from proofs.engine.solver import (
    ERROR,
    PROVED,
    REFUTED,
    UNKNOWN,
    VACUOUS,
    Claim,
    Kind,
    QueryCache,
    SolverOptions,
    Var,
    decide,
    replay,
    shared_queries,
)
from proofs.run.runner import Entry

A, B = Var("a", size=True), Var("b")


def test_proved_names_exactly_the_hypotheses_it_used():
    def formula(variant, x):
        return Claim(hypotheses={"a positive": x["a"] >= 1, "b at most a": x["b"] <= x["a"]}, goal=x["a"] > 0)

    outcome = decide(formula, (A, B), None)
    assert outcome.verdict == PROVED
    assert outcome.hypotheses_used == ["a positive"]
    assert outcome.hypotheses_unconfirmed == []  # every deletion check decided


def test_a_hypothesis_that_reads_nothing_the_goal_reads_is_left_out_unchecked(monkeypatch):
    # No deletion check is posed (ratio 0), so only the footprints can drop
    # a hypothesis: "b irrelevant" reads b alone; "d positive" reaches the
    # goal through "c is d", and is kept.
    c_var, d_var = Var("c"), Var("d")

    def formula(variant, x):
        return Claim(
            hypotheses={
                "a positive": x["a"] >= 1,
                "b irrelevant": x["b"] >= 0,
                "c is d": x["c"] == x["d"],
                "d positive": x["d"] >= 1,
            },
            goal=x["a"] + x["c"] > 1,
        )

    monkeypatch.setattr(minimisation, "CORE_HOPELESS_RATIO", 0)
    outcome = decide(formula, (A, B, c_var, d_var), None)
    assert outcome.verdict == PROVED
    assert outcome.hypotheses_used == ["a positive", "c is d", "d positive"]
    assert "b irrelevant" not in outcome.hypotheses_unconfirmed
    assert "(>= b 0)" not in outcome.smt2 and "(>= d 1)" in outcome.smt2


def test_deletion_checks_are_not_posed_far_below_the_proofs_cost(monkeypatch):
    def formula(variant, x):
        return Claim(hypotheses={"a positive": x["a"] >= 1, "b at most a": x["b"] <= x["a"]}, goal=x["a"] > 0)

    posed = []
    check = minimisation.DeletionQueries.check
    monkeypatch.setattr(
        minimisation.DeletionQueries, "check", lambda self, *args: posed.append(args[1]) or check(self, *args)
    )
    assert decide(formula, (A, B), None).hypotheses_used == ["a positive"]
    # A pinned geometry (a = 0) shows "a positive" needed before its check is posed.
    assert posed == ["b at most a"]
    posed.clear()
    # With the ratio at 0 every proof costs too much for its deletion checks:
    # none is posed, and the set is kept whole, sufficient though not
    # minimal. The pinned geometry still shows "a positive" needed; the
    # report says "b at most a" was kept unchecked.
    monkeypatch.setattr(minimisation, "CORE_HOPELESS_RATIO", 0)
    outcome = decide(formula, (A, B), None)
    assert outcome.verdict == PROVED
    assert outcome.hypotheses_used == ["a positive", "b at most a"]
    assert outcome.hypotheses_unconfirmed == ["b at most a"]
    assert posed == []


def _deletion_checks_end_unknown(monkeypatch) -> list[int]:
    """Every full deletion check ends unknown, none pinned: the caps they are posed under."""
    import z3

    limits = []

    def unknown_at(self, kept, name, limit):
        limits.append(limit)
        return z3.unknown

    monkeypatch.setattr(minimisation.DeletionQueries, "check", unknown_at)
    monkeypatch.setattr(minimisation, "PINNED_RANGES", ())
    return limits


def test_after_a_deletion_check_ends_unknown_the_next_ones_are_capped_lower(monkeypatch):
    def formula(variant, x):
        return Claim(
            hypotheses={"a positive": x["a"] >= 1, "b at most a": x["b"] <= x["a"], "b non-negative": x["b"] >= 0},
            goal=x["a"] > 0,
        )

    limits = _deletion_checks_end_unknown(monkeypatch)
    monkeypatch.setattr(minimisation, "CORE_FLOOR_RLIMIT", 10)
    outcome = decide(formula, (A, B), None)
    assert outcome.hypotheses_unconfirmed == ["a positive", "b at most a", "b non-negative"]
    assert len(limits) == 3 and limits[0] > 10 and limits[1:] == [10, 10]


def test_a_deletion_check_is_capped_relative_to_its_proofs_cost(monkeypatch):
    def formula(variant, x):
        return Claim(hypotheses={"a positive": x["a"] >= 1, "b at most a": x["b"] <= x["a"]}, goal=x["a"] >= 0)

    limits = _deletion_checks_end_unknown(monkeypatch)
    outcome = decide(formula, (A, B), None)
    # A proof this cheap gets the floor; what the checks leave undecided is
    # reported unconfirmed, never dropped.
    assert limits == [minimisation.CORE_FLOOR_RLIMIT] * 2
    assert outcome.hypotheses_used == outcome.hypotheses_unconfirmed == ["a positive", "b at most a"]
    # A costlier proof: three times its cost, up to CORE_RLIMIT.
    assert minimisation.deletion_cap(60_000) == 180_000
    assert minimisation.deletion_cap(10**7) == minimisation.CORE_RLIMIT


def test_a_pinned_geometry_shows_a_hypothesis_needed_where_the_deletion_check_cannot(monkeypatch):
    # With the deletion checks capped at an rlimit of 1 none decides; the
    # pinned queries (a = 1 with b not 1, and a = 0) show both needed.
    def formula(variant, x):
        return Claim(
            hypotheses={"a positive": x["a"] >= 1, "a is b": x["a"] == x["b"]},
            goal=arith.floordiv(x["b"] * x["b"], x["a"]) == x["a"],
        )

    monkeypatch.setattr(minimisation, "CORE_RLIMIT", 1)
    monkeypatch.setattr(minimisation, "CORE_MIN_RLIMIT", 1)
    outcome = decide(formula, (A, B), None)
    assert outcome.verdict == PROVED
    assert outcome.hypotheses_used == ["a is b", "a positive"]
    assert outcome.hypotheses_unconfirmed == []
    monkeypatch.setattr(minimisation, "PINNED_RANGES", ())
    assert decide(formula, (A, B), None).hypotheses_unconfirmed == ["a is b", "a positive"]


def test_a_deletion_check_undecided_in_the_widest_pinned_range_is_not_posed_in_full(monkeypatch):
    import z3

    def formula(variant, x):
        return Claim(
            hypotheses={"a positive": x["a"] >= 1, "b at most a": x["b"] <= x["a"], "b non-negative": x["b"] >= 0},
            goal=x["a"] > 0,
        )

    undecided = {"b at most a"}
    pinned_answer = minimisation.DeletionQueries.pinned_answer
    monkeypatch.setattr(
        minimisation.DeletionQueries,
        "pinned_answer",
        lambda self, kept, name: z3.unknown if name in undecided else pinned_answer(self, kept, name),
    )
    posed = []
    check = minimisation.DeletionQueries.check
    monkeypatch.setattr(
        minimisation.DeletionQueries,
        "check",
        lambda self, *args: posed.append((args[1], args[2])) or check(self, *args),
    )
    monkeypatch.setattr(minimisation, "CORE_HOPELESS_RATIO", 100)
    floor = minimisation.CORE_FLOOR_RLIMIT
    monkeypatch.setattr(minimisation, "CORE_FLOOR_RLIMIT", 10)
    outcome = decide(formula, (A, B), None)
    assert outcome.verdict == PROVED
    # Kept unconfirmed without a full check; the check after it capped as after one that ended unknown.
    assert "b at most a" in outcome.hypotheses_unconfirmed
    assert posed == [("b non-negative", 10)]
    undecided.clear()
    posed.clear()
    monkeypatch.setattr(minimisation, "CORE_FLOOR_RLIMIT", floor)
    assert decide(formula, (A, B), None).hypotheses_used == ["a positive"]
    assert [name for name, _ in posed] == ["b at most a", "b non-negative"]


def test_refuted_counterexample_replays_on_the_concrete_model():
    def formula(variant, x):
        return Claim(hypotheses={"a positive": x["a"] >= 1}, goal=arith.divides(x["a"], 12))

    outcome = decide(formula, (A,), None)
    assert outcome.verdict == REFUTED
    assert 12 % outcome.counterexample["a"] != 0
    assert replay(formula, None, outcome.counterexample) == (True, "")


def test_contradictory_hypotheses_are_vacuous_not_proved():
    def formula(variant, x):
        return Claim(hypotheses={"small": x["b"] < 0, "large": x["b"] > 5}, goal=x["b"] == 42)

    outcome = decide(formula, (B,), None)
    assert outcome.verdict == VACUOUS
    assert "small" in outcome.reason and "large" in outcome.reason


def test_a_case_that_falsifies_a_hypothesis_is_excluded_and_named():
    flag = Var("flag", Kind.BOOL)

    def formula(variant, x):
        return Claim(hypotheses={"flag off": arith.negate(x["flag"])}, goal=arith.implies(x["flag"], x["b"] == 42))

    outcome = decide(formula, (B, flag), None, SolverOptions(case_split=("flag",)))
    assert outcome.verdict == PROVED
    # The case flag=True is proved by the hypothesis that excludes it, and
    # without it b = 0 would fail there.
    assert outcome.hypotheses_used == ["flag off"] and outcome.hypotheses_unconfirmed == []
    alone = decide(lambda v, x: Claim({"never": False}, x["b"] >= 0), (B,), None)
    assert alone.verdict == VACUOUS and alone.reason == "hypotheses false: never"


def test_a_hypothesis_that_excludes_a_case_is_used_though_true_outright_in_the_other():
    # In the case flag=True the hypothesis "flag on" is the constant True, so
    # no proof of that case needs it; it is the whole proof of flag=False.
    flag = Var("flag", Kind.BOOL)

    def formula(variant, x):
        return Claim(
            hypotheses={"flag on": x["flag"], "a positive": x["a"] >= 1},
            goal=arith.ite(x["flag"], x["a"] >= 1, x["a"] >= 5),
        )

    outcome = decide(formula, (A, flag), None, SolverOptions(case_split=("flag",)))
    assert outcome.verdict == PROVED
    assert outcome.hypotheses_used == ["a positive", "flag on"]
    assert outcome.hypotheses_unconfirmed == []


def test_a_hypothesis_left_unconfirmed_in_one_case_is_not_confirmed_by_the_next(monkeypatch):
    # No deletion check decides. The second case keeps what the first used
    # without checking it again, which shows nothing about it.
    flag = Var("flag", Kind.BOOL)

    def formula(variant, x):
        return Claim(hypotheses={"a positive": x["a"] >= 1}, goal=arith.ite(x["flag"], x["a"] > 0, x["a"] >= 1))

    monkeypatch.setattr(minimisation, "CORE_RLIMIT", 1)
    monkeypatch.setattr(minimisation, "CORE_MIN_RLIMIT", 1)
    monkeypatch.setattr(minimisation, "PINNED_RANGES", ())
    outcome = decide(formula, (A, flag), None, SolverOptions(case_split=("flag",)))
    assert outcome.verdict == PROVED
    assert outcome.hypotheses_used == ["a positive"]
    assert outcome.hypotheses_unconfirmed == ["a positive"]


def test_an_lcm_of_a_term_not_known_positive_is_not_proved():
    # math.lcm(0, 1) == 0: without a hypothesis that a is positive the claim
    # is false, and the lcm's positivity obligation must say so.
    def formula(variant, x):
        return Claim(hypotheses={"b positive": x["b"] >= 1}, goal=arith.lcm(x["a"], x["b"]) >= 1)

    outcome = decide(formula, (A, B), None)
    assert outcome.verdict == REFUTED and outcome.counterexample == {"a": 0, "b": 1}
    proved = decide(
        lambda variant, x: Claim(
            hypotheses={"a positive": x["a"] >= 1, "b positive": x["b"] >= 1}, goal=arith.lcm(x["a"], x["b"]) >= 1
        ),
        (A, B),
        None,
    )
    assert proved.verdict == PROVED and proved.hypotheses_used == ["a positive", "b positive"]


def test_unreachable_cover_goal_is_vacuous():
    def formula(variant, x):
        return Claim(hypotheses={"b small": x["b"] <= 3}, goal=x["b"] < 10, covers={"b large": x["b"] > 3})

    assert decide(formula, (B,), None).verdict == VACUOUS


def test_cover_goals_of_a_case_split_count_a_model_in_any_case_and_none_elsewhere():
    # "flag with a large": reached only in the case flag=True, with a >= 3;
    # "flag with a huge": in no case, though each case alone admits models.
    flag = Var("flag", kind=Kind.BOOL)

    def formula(covers):
        def claim(variant, x):
            return Claim(hypotheses={"a at most 5": x["a"] <= 5}, goal=x["a"] < 6, covers=covers(x))

        return claim

    def reached(x):
        return {"flag with a large": arith.all_of(x["flag"], x["a"] >= 3)}

    def unreachable(x):
        return {**reached(x), "flag with a huge": arith.all_of(x["flag"], x["a"] >= 9)}

    split = SolverOptions(case_split=("flag",))
    assert decide(formula(reached), (A, flag), None, split).verdict == PROVED
    outcome = decide(formula(unreachable), (A, flag), None, split)
    assert outcome.verdict == VACUOUS and "flag with a huge" in outcome.reason


def test_a_counterexample_that_does_not_replay_is_an_error():
    # An encoding bug: the symbolic reading disagrees with the concrete one.
    def formula(variant, x):
        symbolic = arith.is_symbolic(x["b"])
        return Claim(hypotheses={}, goal=(x["b"] != 3) if symbolic else True)

    outcome = decide(formula, (B,), None)
    assert outcome.verdict == ERROR
    assert "does not replay" in outcome.reason


HARD_VARIABLES = (Var("x"), Var("y"))


def hard_formula(variant, x):
    """A sum of two cubes off a large target: nonlinear, and not decided within a small budget."""
    return Claim(
        hypotheses={"positive": arith.all_of(x["x"] >= 2, x["y"] >= 2)},
        goal=x["x"] * x["x"] * x["x"] + x["y"] * x["y"] * x["y"] != 1729 * 1000003,
    )


def test_exhausted_budget_is_unknown_and_never_ok():
    outcome = decide(hard_formula, HARD_VARIABLES, None, SolverOptions(rlimit=1_000))
    assert outcome.verdict == UNKNOWN
    entry = Entry("t", "v", UNKNOWN, UNKNOWN, outcome.rlimit, outcome.seconds)
    assert not entry.ok  # even when the manifest expected it


def test_a_query_past_the_wall_clock_outer_limit_is_unknown_and_says_so():
    """The rlimit is the budget; the wall clock only an outer limit, which a
    query that spends its rlimit slowly meets first."""
    outcome = decide(hard_formula, HARD_VARIABLES, None, SolverOptions(wall_limit=0.0))
    assert outcome.verdict == UNKNOWN and "wall-clock outer limit of 0 s was reached" in outcome.reason


def test_a_running_check_is_interrupted_at_the_outer_limit():
    """The watchdog stops a check in progress, whatever rlimit it was allowed."""
    started = time.monotonic()
    outcome = decide(hard_formula, HARD_VARIABLES, None, SolverOptions(rlimit=10**12, wall_limit=1.0))
    assert outcome.verdict == UNKNOWN and "wall-clock outer limit of 1 s was reached" in outcome.reason
    assert time.monotonic() - started < 30


def test_case_split_needs_every_admitted_case():
    flag = Var("flag", Kind.BOOL)

    def formula(variant, x):
        return Claim(hypotheses={"a positive": x["a"] >= 1}, goal=arith.ite(x["flag"], x["a"] >= 1, x["a"] >= 2))

    outcome = decide(formula, (A, flag), None, SolverOptions(case_split=("flag",)))
    assert outcome.verdict == REFUTED
    assert outcome.counterexample == {"a": 1, "flag": False}


def test_refute_first_searches_the_whole_obligation_before_proving_any_case():
    # The first case is beyond the budget to prove; the second fails at small
    # inputs. A refuter that proves cases in order stops at the first, UNKNOWN.
    x_var, y_var, flag = Var("x"), Var("y"), Var("flag", Kind.BOOL)

    def formula(variant, x):
        cubes = x["x"] * x["x"] * x["x"] + x["y"] * x["y"] * x["y"] != 1729 * 1000003
        return Claim(
            hypotheses={"positive": arith.all_of(x["x"] >= 2, x["y"] >= 2)},
            goal=arith.ite(x["flag"], x["x"] < 5, cubes),
        )

    budgeted = SolverOptions(rlimit=1_000, case_split=("flag",))
    assert decide(formula, (x_var, y_var, flag), None, budgeted).verdict == UNKNOWN
    refuting = SolverOptions(rlimit=1_000, case_split=("flag",), refute_first=True)
    outcome = decide(formula, (x_var, y_var, flag), None, refuting)
    assert outcome.verdict == REFUTED
    assert outcome.counterexample["flag"] is True and outcome.counterexample["x"] == 5


def test_refute_first_tries_the_small_rungs_of_every_case_before_the_large_ones():
    # Out of the probe's reach (b is far above its range) in both cases. The
    # first case fails only at a large block size, the second at the smallest:
    # searching the first case's whole ladder before the second would report
    # the large one. Each rung's query leaves the flag free.
    flag = Var("flag", Kind.BOOL)

    def formula(variant, x):
        fails = arith.ite(
            x["flag"], arith.all_of(x["a"] == 1, x["b"] == 999), arith.all_of(x["a"] == 16, x["b"] == 1000)
        )
        return Claim(hypotheses={"a positive": x["a"] >= 1}, goal=arith.negate(fails))

    outcome = decide(formula, (A, B, flag), None, SolverOptions(case_split=("flag",), refute_first=True))
    assert outcome.verdict == REFUTED
    assert outcome.counterexample == {"a": 1, "b": 999, "flag": True}


def test_solver_options_hold_for_one_obligation_and_reach_the_smt2():
    import z3

    def formula(variant, x):
        return Claim(hypotheses={"a positive": x["a"] >= 1}, goal=x["a"] > 0)

    outcome = decide(formula, (A,), None, SolverOptions(z3_parameters=(("sat.euf", True),)))
    assert outcome.verdict == PROVED
    # The parameters of every query first, then the obligation's own.
    assert outcome.smt2.startswith("(set-option :smt.arith.nl.grobner false)\n(set-option :sat.euf true)\n")
    assert z3.get_param("sat.euf") == "false"  # restored
    wrong = decide(formula, (A,), None, SolverOptions(z3_parameters=(("sat.no_such_parameter", True),)))
    assert wrong.verdict == ERROR and "unknown Z3 parameter 'sat.no_such_parameter'" in wrong.reason


def test_an_identical_query_is_answered_once_within_shared_queries():
    def formula(variant, x):
        return Claim(hypotheses={"a positive": x["a"] >= 1, "b at most a": x["b"] <= x["a"]}, goal=x["a"] * x["a"] > 0)

    alone = decide(formula, (A, B), None)
    assert alone.reused == 0
    with shared_queries():
        first = decide(formula, (A, B), None)
        again = decide(formula, (A, B), None)
    assert first.reused == 0 and again.reused > 0
    assert again.rlimit < first.rlimit
    assert (again.verdict, again.hypotheses_used) == (first.verdict, first.hypotheses_used) == (PROVED, ["a positive"])


def test_a_reused_proof_reuses_its_minimisation(monkeypatch):
    # Deletion queries do not go through the query cache; the minimised set
    # of an identical proof is answered once instead, as the first decided it.
    def formula(variant, x):
        return Claim(hypotheses={"a positive": x["a"] >= 1, "b at most a": x["b"] <= x["a"]}, goal=x["a"] > 0)

    minimised = []
    core = minimisation.minimal_hypotheses
    monkeypatch.setattr(minimisation, "minimal_hypotheses", lambda *args: minimised.append(1) or core(*args))
    with shared_queries():
        first = decide(formula, (A, B), None)
        again = decide(formula, (A, B), None)
    assert len(minimised) == 1
    assert again.hypotheses_used == first.hypotheses_used == ["a positive"]


def test_a_reused_proof_sizes_its_minimisation_as_when_it_was_decided(monkeypatch):
    # A reused answer costs nothing now; read as the proof's cost, that would
    # pose deletion checks the same proof decided alone does not.
    monkeypatch.setattr(minimisation, "CORE_HOPELESS_RATIO", 0)

    def formula(variant, x):
        return Claim(hypotheses={"a positive": x["a"] >= 1, "b at most a": x["b"] <= x["a"]}, goal=x["a"] > 0)

    alone = decide(formula, (A, B), None)
    with shared_queries():
        decide(formula, (A, B), None)
        again = decide(formula, (A, B), None)
    assert again.reused > 0
    assert again.hypotheses_used == alone.hypotheses_used == ["a positive", "b at most a"]


def test_the_query_cache_keeps_unsat_and_unknown_under_its_budget_only():
    import z3

    cache = QueryCache()
    cache.store("q1", z3.unknown, 100, "canceled", 100)
    cache.store("q2", z3.unsat, 100, "", 42)
    cache.store("q3", z3.sat, 100, "", 7)
    assert cache.lookup("q1", 50) == (z3.unknown, "canceled", 100)
    assert cache.lookup("q1", 200) is None  # a larger budget might decide it
    assert cache.lookup("q2", 10**9) == (z3.unsat, "", 42)
    assert cache.lookup("q3", 100) is None  # a sat answer needs its model


def test_cache_keys_ignore_z3s_let_names_but_not_the_terms():
    import z3

    def solver_for(bound, ctx, unrelated_terms=0):
        _ = [z3.Int(f"u{i}", ctx) * z3.Int(f"v{i}", ctx) > i for i in range(unrelated_terms)]  # shift the term ids
        x, y = z3.Ints("x y", ctx)
        shared = z3.And(x * y > bound, x + y < 2 * bound)
        s = z3.Solver(ctx=ctx)
        s.add(z3.Or(shared, x > 0), z3.Implies(shared, y > 1))
        return s

    first = solver_for(3, z3.Context())
    key, text = QueryCache.key(first, []), first.to_smt2()
    shifted_context = z3.Context()
    shifted = solver_for(3, shifted_context, unrelated_terms=30)
    assert shifted.to_smt2() != text  # Z3 names a shared subterm by its id
    assert QueryCache.key(shifted, []) == key
    assert QueryCache.key(solver_for(4, shifted_context), []) != key


def test_each_theorem_run_is_decided_in_a_z3_context_of_its_own():
    import z3

    from proofs.catalog import CATALOGUE
    from proofs.run.runner import run_theorem

    first = run_theorem(CATALOGUE["split-bounds"], "pr457", PROVED)
    run_theorem(CATALOGUE["config-page-covers-state"], "baseline", PROVED)
    # Terms made in z3's main context in between shift no term id of a run.
    _ = [z3.Int(f"u{i}") * z3.Int(f"v{i}") > i for i in range(30)]
    again = run_theorem(CATALOGUE["split-bounds"], "pr457", PROVED)
    assert (again.rlimit, again.hypotheses_used) == (first.rlimit, first.hypotheses_used)


def test_nothing_is_made_in_z3s_main_context(monkeypatch):
    """Every term and solver of a decision, a cache key's reading and a
    mining run lives in a context passed explicitly: none falls back on z3's
    process-wide main context, where it would meet the terms of whatever ran
    before (or fail to mix with the run's own)."""
    import z3

    from models.variants import get_variant
    from proofs.catalog import CATALOGUE
    from proofs.engine.solver import query_text
    from proofs.mining.miner import Miner
    from proofs.run.runner import run_theorem

    def no_main_context():
        raise AssertionError("a term or solver was made in z3's main context")

    monkeypatch.setattr(z3.z3, "main_ctx", no_main_context)
    with shared_queries():
        for theorem, variant, expected in (
            ("split-bounds", "pr457", PROVED),
            ("prefill-state-slot", "mutant:slot-off-by-one", REFUTED),
            ("config-explicit-cadence-kept", "baseline", REFUTED),
        ):
            entry = run_theorem(CATALOGUE[theorem], variant, expected)
            assert entry.verdict == expected, entry.reason
    obligation = CATALOGUE["split-bounds"].obligations[0]
    assert "(declare-fun" in query_text(obligation.formula, obligation.variables, get_variant("pr457"))
    mined = Miner("config-explicit-cadence-kept", "baseline", max_classes=1, ladder=0).run()
    assert mined.found and not mined.problems


def test_the_strategy_names_how_z3_solves_and_reaches_the_smt2():
    def formula(variant, x):
        return Claim(hypotheses={"a positive": x["a"] >= 1}, goal=x["a"] * x["a"] > 0)

    core = decide(formula, (A,), None)
    default = decide(formula, (A,), None, SolverOptions(strategy="default"))
    assert core.verdict == default.verdict == PROVED
    # The SMT core alone is a Z3 option, kept out of the standard text other solvers read.
    assert "(set-option :tactic.default_tactic smt)" in core.queries[0].z3_options
    assert "tactic" not in default.queries[0].z3_options
    assert core.queries[0].text.startswith("(set-info :smt-lib-version 2.6)\n(set-logic QF_NIA)\n")
    assert core.queries[0].text.endswith("(check-sat)\n(exit)\n") and "set-option" not in core.queries[0].text
    wrong = decide(formula, (A,), None, SolverOptions(strategy="fastest"))
    assert wrong.verdict == ERROR and "unknown solver strategy 'fastest'" in wrong.reason


def test_a_claim_is_read_once_per_set_of_fixed_inputs():
    """The proof, the vacuity check and the cover goals' pinned queries read
    the same symbolic claim; the ladder of the cover goals that pinned sizes
    cannot reach reads each small geometry once, for both goals."""
    readings = []

    def formula(variant, x):
        readings.append("symbolic" if arith.is_symbolic(x["a"]) else x["a"])
        return Claim(
            hypotheses={"a positive": x["a"] >= 1},
            goal=x["a"] > 0,
            covers={"a large": x["a"] >= 7, "a above 4": x["a"] >= 5, "b large": x["b"] >= 7},
        )

    outcome = decide(formula, (A, B), None)
    assert outcome.verdict == PROVED
    assert readings.count("symbolic") == 1
    geometries = [r for r in readings if r != "symbolic"]
    assert 8 in geometries and len(geometries) == len(set(geometries))


def test_a_geometry_whose_reading_divides_by_zero_is_skipped_each_time_it_is_tried():
    """At a = 1 the claim divides by the constant 0. No pinned size (a at most
    2) meets the hypothesis, so the vacuity check and the cover goal's ladder
    each try a = 1, skip it and go on; the reading fails once and is not
    repeated."""
    readings = []

    def formula(variant, x):
        readings.append(x["a"])
        quotient = arith.floordiv(x["b"], x["a"] - 1)
        return Claim(
            hypotheses={"a above 2": x["a"] >= 3},
            goal=quotient * (x["a"] - 1) <= x["b"],
            covers={"b positive": x["b"] >= 1},
        )

    outcome = decide(formula, (A, B), None)
    assert outcome.verdict == PROVED, outcome.reason
    assert outcome.hypotheses_used == ["a above 2"]
    assert readings.count(1) == 1 and 3 in readings


def test_a_refutation_outside_the_cone_of_influence_is_solved_again_with_every_hypothesis():
    # "b exact" reads nothing the goal reads, so the proof query leaves it
    # out and Z3 picks b freely: that model fails replay. Posed again with
    # every hypothesis, the refutation is genuine, not an ERROR.
    def formula(variant, x):
        return Claim(hypotheses={"a non-negative": x["a"] >= 0, "b exact": x["b"] == 1_000_003}, goal=x["a"] < 5)

    outcome = decide(formula, (Var("a"), Var("b")), None)
    assert outcome.verdict == REFUTED, outcome.reason
    assert outcome.counterexample["b"] == 1_000_003 and outcome.counterexample["a"] >= 5
    assert "(= b 1000003)" in outcome.smt2  # the exported query is the one that found it


def test_an_obligation_adds_its_own_way_of_deciding_to_the_runs_options():
    from proofs.catalog.base import Obligation

    obligation = Obligation(
        "o", (A,), None, case_split=("flag",), lemmas=False, solver_options=(("sat.euf", True),), strategy="linear"
    )
    run = SolverOptions(rlimit=123, seed=7, refute_first=True, drop=frozenset({"h"}), naive=True)
    assert obligation.options(run) == SolverOptions(
        rlimit=123,
        seed=7,
        refute_first=True,
        drop=frozenset({"h"}),
        case_split=("flag",),
        lemmas=False,
        z3_parameters=(("sat.euf", True),),
        strategy="linear",
        naive=True,
    )


def test_an_expected_refutation_is_searched_as_a_trace_first():
    """A theorem with a trace search, expected refuted: a replayed trace
    refutes it without its step obligations; without a trace the steps are
    decided as before, and a refuted step alone leaves it UNKNOWN."""
    from proofs.catalog.base import Obligation, Theorem
    from proofs.run.runner import run_theorem

    steps_read = []

    def step(variant, x):
        steps_read.append(dict(x))
        return Claim(hypotheses={"a positive": x["a"] >= 1}, goal=x["a"] >= 2)

    def theorem(trace_goal_bound: int) -> Theorem:
        def trace(variant, x):
            return Claim(hypotheses={"a positive": x["a"] >= 1}, goal=x["a"] >= trace_goal_bound)

        return Theorem("t", "s", "", (Obligation("step", (A,), step),), trace_search=Obligation("trace", (A,), trace))

    refuted = run_theorem(theorem(3), "baseline", REFUTED)
    assert refuted.verdict == REFUTED and refuted.reason == "a fresh request's trace violates it"
    assert refuted.counterexample == {"a": 1} and steps_read == []
    undecided = run_theorem(theorem(1), "baseline", REFUTED)
    assert undecided.verdict == UNKNOWN and "the step lemma fails" in undecided.reason and steps_read


def test_a_goal_that_is_not_a_condition_is_an_error_not_a_proof():
    # Any object reads as true in Python: taken as the goal, it would always hold.
    def formula(variant, x):
        return Claim(hypotheses={"a positive": x["a"] >= 1}, goal=object())

    outcome = decide(formula, (A,), None)
    assert outcome.verdict == ERROR and "must be a condition, not object" in outcome.reason


def test_two_conjuncts_built_as_one_condition_are_an_error():
    # A conjunct re-pointed at the quantity another one bounds: the manifest's conjunct checks no longer pin it.
    def formula(variant, x):
        return Claim(
            hypotheses={"a positive": x["a"] >= 1},
            goal={"at least one": at_least(x["a"], 1), "at least the floor": at_least(x["a"], 1)},
        )

    outcome = decide(formula, (A,), None)
    assert outcome.verdict == ERROR
    assert "'at least one' and 'at least the floor' are the same condition" in outcome.reason

    def distinct(variant, x):
        return Claim(
            hypotheses={"a positive": x["a"] >= 1},
            goal={"at least one": at_least(x["a"], 1), "positive": x["a"] > 0},
        )

    assert decide(distinct, (A,), None).verdict == PROVED


def test_the_resource_counter_is_read_as_z3s_statistics_have_it():
    import z3

    from proofs.engine.problem import _resource_count

    context = z3.Context()
    x = z3.Int("x", context)
    solver = z3.Solver(ctx=context)
    solver.add(x * x > 3, x < 100)
    assert solver.check() == z3.sat
    counted = _resource_count(context, solver)
    assert counted > 0
    assert counted == int(solver.statistics().get_key_value("rlimit count"))


def test_the_heap_padding_is_set_where_the_c_library_is_glibc():
    import platform

    from proofs.runtime.heap import pad_heap_top

    assert pad_heap_top() is (platform.libc_ver()[0] == "glibc")
