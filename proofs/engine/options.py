"""How one obligation is decided, as one record: the run's choices (budget,
seed, refute first, hypotheses dropped) and the obligation's own (case split,
lemma families, Z3 parameters, strategy). The command line builds the run's
part once; the runner adds each obligation's (`Obligation.options`) and
`solver.decide` reads the whole."""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_RLIMIT = 20_000_000
# Seconds an obligation may run before its open query is stopped (UNKNOWN,
# saying so). An outer limit only: the budget is the rlimit, which does not
# depend on the machine; no obligation of the catalogue comes near it, but a
# fault in a theorem can leave a query that spends its rlimit slowly (a
# narrowed hypothesis took one such `prove --tier all` past 20 minutes).
DEFAULT_WALL_LIMIT = 60.0


@dataclass(frozen=True)
class SolverOptions:
    rlimit: int = DEFAULT_RLIMIT  # Z3's resource budget for the whole obligation
    wall_limit: float = DEFAULT_WALL_LIMIT  # seconds, an outer limit on the whole obligation
    seed: int | None = None  # Z3's random seed for every query; None: Z3's own
    # Try the cheap refuters first, on the obligation whole (the manifest expects REFUTED).
    refute_first: bool = False
    # Only those cheap refuters: no proof. A theorem of several obligations
    # probes each before proving any, so a refutation of the last costs no proof of the first.
    probe_only: bool = False
    # The probe already ran on this obligation and found nothing: it is seeded, so it is not run again.
    probed: bool = False
    # Only the recorded inputs are read (proofs/records/recorded_inputs.py): no random input, no ladder.
    recorded_only: bool = False
    # The rungs of the ladder (proofs.engine.refutation.SIZE_LADDER) the cheap refuters
    # climb, as slice bounds; the probe runs with the first rung.
    rungs: tuple[int, int | None] = (0, None)
    drop: frozenset[str] = frozenset()  # hypotheses left out (ablations)
    case_split: tuple[str, ...] = ()  # Bool inputs decided case by case
    lemmas: bool = True  # the derived lemma families (models/arith.py) beside the witnesses
    # Z3 parameters set while the obligation is decided, as (name, value),
    # and written into its exported SMT-LIB.
    z3_parameters: tuple[tuple[str, object], ...] = ()
    strategy: str = "core"  # how Z3 solves each query (proofs.engine.solver.STRATEGIES)
    naive: bool = False  # Z3's own div and mod, for the benchmark's comparison only
    # Hypotheses a sibling obligation already showed needed: reported used, not checked again.
    known_needed: tuple[str, ...] = ()
    # The records' inputs of this obligation (proofs/records/recorded_inputs.py), each
    # as (name, value) pairs: candidate models read on the concrete model
    # before a query (a recorded counterexample, a cover goal reached, a
    # hypothesis shown needed).
    recorded_inputs: tuple[tuple[tuple[str, int | bool], ...], ...] = ()
