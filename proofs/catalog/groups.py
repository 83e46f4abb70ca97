"""The headline and guard exactness for deployments of many cache groups.

The formulas are the prefill catalogue's own (proofs/catalog/prefill.py); they
read the deployment through `symbolic_groups`, which builds as many groups of
each kind as the inputs name and hands them to `models.plan.group_grid`. Each
obligation here is one deployment shape (`Shape`): 1 and SMALL_TARGETS target
groups with one recurrent and one draft group, and shapes with many groups of
each kind: MAX_TARGETS target groups with 12 recurrent and 2 draft groups, 3
target, 2 recurrent and 3 draft groups, and the seed's scaled deployment (4
target, 12 recurrent, 1 EAGLE group). Bounded: other shapes are covered by the
argument in docs/groups.md, not by a query."""

from __future__ import annotations

from proofs.catalog.base import GEOMETRY_VARS, Obligation, Shape, Theorem
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
# skips a group by its index (the first, the second, every other one). With
# the one-group shape, this covers what the counts 2 and 3 were decided for
# (docs/groups.md).
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
    Shape(targets=3, recurrent=2, drafts=3),
    Shape(targets=SMALL_TARGETS, recurrent=1, drafts=1),
    Shape(targets=1, recurrent=1, drafts=1),
)


def _shaped(variables, shape: Shape):
    """`variables` with the catalogue's usual deployment replaced by `shape`'s."""
    return tuple(v for v in variables if v not in GEOMETRY_VARS) + shape.variables


THEOREMS = (
    Theorem(
        "groups-published-on-target-boundaries",
        "groups",
        "The headline for deployments of many groups: every recurrent checkpoint a prefill publishes lies on "
        f"every target-attention group's boundary, for 1, {SMALL_TARGETS} and {MAX_TARGETS} target groups (and "
        "shapes with up to 12 recurrent and 3 draft groups, the seed's 4/12/1 among them), each with its own page "
        "and DCP sharding: the inductive step over models.prefill.prefill_step, one obligation per shape.",
        tuple(
            Obligation(
                f"step-{s.name}",
                _shaped(ENGINE_STEP_VARS, s),
                published_on_targets_step,
                case_split=("explicit",),
                solver_options=STEP_OPTIONS,
            )
            for s in SHAPES
        ),
        trace_search=Obligation(f"trace-{SCALED.name}", _shaped(TRACE_VARS, SCALED), published_on_targets_trace),
    ),
    Theorem(
        "groups-guard-exact",
        "groups",
        "guard-exact for deployments of many groups: pr457-guarded's check accepts a configuration if and only "
        f"if every checkpoint its prefills publish lies on every target boundary, for 1, {SMALL_TARGETS} and "
        f"{MAX_TARGETS} target groups and the shapes of groups-published-on-target-boundaries, one pair of "
        "obligations per shape.",
        tuple(
            obligation
            for s in SHAPES
            for obligation in (
                Obligation(
                    f"sufficient-{s.name}", _shaped(PUBLISH_VARS, s), guard_sufficient, case_split=("explicit",)
                ),
                Obligation(f"necessary-{s.name}", s.variables, guard_rejects_only_failures, case_split=("explicit",)),
            )
        ),
    ),
)
