"""The headline and guard exactness for deployments of many cache groups.

The formulas are the prefill catalogue's own (proofs/catalog/prefill.py); they
read the deployment through `symbolic_groups`, which builds as many groups of
each kind as the inputs name and hands them to `models.plan.group_grid`. Each
obligation here is one deployment shape (`Shape`): SMALL_TARGETS target groups
with one recurrent and one draft group, MAX_TARGETS target groups with 12
recurrent and 2 draft groups, and the seed's scaled deployment (4 target, 12
recurrent, 1 EAGLE group). The any-groups theorems read the same
formulas on a family of groups (AnyShape, models.arith.Family): one arbitrary
member of each kind standing for any number of them (docs/groups.md)."""

from __future__ import annotations

from proofs.catalog.base import ANY_SHAPES, Obligation, Shape, Theorem, shaped
from proofs.catalog.prefill import (
    ENGINE_STEP_VARS,
    PUBLISH_VARS,
    TRACE_VARS,
    guard_rejects_only_failures,
    guard_sufficient,
    published_on_targets_step,
    published_on_targets_trace,
)

MAX_TARGETS = 16  # a guard or plan that reads only the first k < 16 target groups fails this shape
# A guard or plan that reads at most three fixed target groups (one, a pair,
# the first and the last, the first three) fails this shape; so does one that
# skips a group by its index (the first, the second, every other one): what
# the counts 2 and 3 were decided for (docs/groups.md).
SMALL_TARGETS = 4
# Measured on this sweep: the step's 19 proofs take the same rlimit with Z3's
# older arithmetic solver (2) and a third of the time; guard-exact's
# `necessary` ends UNKNOWN with it, so only the step uses it.
STEP_OPTIONS = (("smt.arith.solver", 2),)
SCALED = Shape(targets=4, recurrent=12, drafts=1)  # the seed's scaled regression (kimi-k3-tp16-dcp16-all-groups)
# Widest first: a fault in how many groups are read shows in the wide shapes,
# and a refutation stops at the first obligation it refutes.
SHAPES = (
    Shape(targets=MAX_TARGETS, recurrent=12, drafts=2),
    SCALED,
    Shape(targets=SMALL_TARGETS, recurrent=1, drafts=1),
)


def _steps(shapes) -> tuple[Obligation, ...]:
    """The headline's inductive step, one obligation per shape."""
    return tuple(
        Obligation(
            f"step-{s.name}",
            shaped(ENGINE_STEP_VARS, s),
            published_on_targets_step,
            case_split=("explicit",),
            solver_options=STEP_OPTIONS,
        )
        for s in shapes
    )


def _guard_directions(shapes, necessary_first: bool = False) -> tuple[Obligation, ...]:
    """guard-exact's two directions, a pair of obligations per shape."""
    obligations = []
    for s in shapes:
        sufficient = Obligation(
            f"sufficient-{s.name}", shaped(PUBLISH_VARS, s), guard_sufficient, case_split=("explicit",)
        )
        necessary = Obligation(
            f"necessary-{s.name}", s.variables, guard_rejects_only_failures, case_split=("explicit",)
        )
        obligations += [necessary, sufficient] if necessary_first else [sufficient, necessary]
    return tuple(obligations)


THEOREMS = (
    Theorem(
        "groups-published-on-target-boundaries",
        "groups",
        "The headline for deployments of many groups: every recurrent checkpoint a prefill publishes lies on "
        f"every target-attention group's boundary, for {SMALL_TARGETS} and {MAX_TARGETS} target groups (with up "
        "to 12 recurrent and 2 draft groups, the seed's 4/12/1 among them), each with its own page "
        "and DCP sharding: the inductive step over models.prefill.prefill_step, one obligation per shape.",
        _steps(SHAPES),
        trace_search=Obligation(f"trace-{SCALED.name}", shaped(TRACE_VARS, SCALED), published_on_targets_trace),
    ),
    Theorem(
        "groups-guard-exact",
        "groups",
        "guard-exact for deployments of many groups: pr457-guarded's check accepts a configuration if and only "
        f"if every checkpoint its prefills publish lies on every target boundary, for {SMALL_TARGETS} and "
        f"{MAX_TARGETS} target groups and the shapes of groups-published-on-target-boundaries, one pair of "
        "obligations per shape.",
        _guard_directions(SHAPES),
    ),
    Theorem(
        "any-groups-published-on-target-boundaries",
        "groups",
        "The headline for any number of groups: every recurrent checkpoint a prefill publishes lies on every "
        "target-attention group's boundary, for any number of target and recurrent groups (at least one of each) "
        "and of draft groups (none included), each with its own page, block and DCP sharding; one arbitrary member "
        "of each kind stands for all, with the lcm and minimum over groups carried by witnesses. The inductive step "
        "over models.prefill.prefill_step.",
        _steps(ANY_SHAPES),
    ),
    Theorem(
        "any-groups-guard-exact",
        "groups",
        "guard-exact for any number of groups: pr457-guarded's check accepts a configuration if and only if every "
        "checkpoint its prefills publish lies on every target boundary, for the deployments of "
        "any-groups-published-on-target-boundaries.",
        # `necessary` first: the faults the kills name show there, and a
        # refutation stops at the first obligation it refutes.
        _guard_directions(ANY_SHAPES, necessary_first=True),
    ),
)
