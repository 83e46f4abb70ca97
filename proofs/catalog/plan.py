"""The plan: what a deployment's cache groups and flags resolve to, the
cadence, spans and scheduler inputs every prefill theorem and `simulate`
read (models.plan)."""

from __future__ import annotations

from dataclasses import fields

from models import arith
from models.config import guard_accepts
from models.geometry import RECURRENT, TARGET, Deployment, Geometry, Request
from models.plan import cadence, group_grid, plan
from models.variants import BASELINE
from proofs.catalog.base import (
    GEOMETRY_VARS,
    Obligation,
    Shape,
    Theorem,
    bools,
    deployment_domain,
    ints,
    shaped,
    symbolic_groups,
)
from proofs.engine.solver import Claim
from proofs.faults.patch import pristine

# The deployment's scheduler flags, every one free, beside the symbolic groups.
PLAN_VARS = (
    GEOMETRY_VARS
    + ints("align", "max_scheduled", size=True)
    # The hash block is 0 when unset (the gcd of the spans then), so not a size the ladder pins at 1 and up.
    + ints("hash_block", "lookahead", "threshold")
    + bools("eagle_drop", "ckpt_blocks", "shared", "draft_sharded")
)


def _deployment(x: dict, explicit: bool) -> Deployment:
    return Deployment(
        dcp_size=x["dcp"],
        block_size=x["page"],
        max_num_scheduled_tokens=x["max_scheduled"],
        long_prefill_token_threshold=x["threshold"],
        eagle_block_drop=x["eagle_drop"],
        hash_lookahead_tokens=x["lookahead"],
        hash_block_size=x["hash_block"],
        mamba_block_size=x["user_cadence"] if explicit else None,
        prefill_checkpoint_alignment=arith.ite(x["ckpt_blocks"], x["align"], 0),
        shared_prefix_checkpoint=x["shared"],
    )


def symbolic_plan(variant, x: dict, explicit: bool, annotated: bool):
    """models.plan.plan, the plan `simulate` runs, of the symbolic deployment
    (hash block 0: the gcd of the spans; internal checkpoints of `align`
    tokens or none), with or without an explicit cadence and an EAGLE group;
    and the group grid the prefill theorems read (proofs/catalog/base.py)."""
    x = {**x, "explicit": explicit, "annotated": annotated}
    groups = symbolic_groups(x)
    p = plan(variant, Geometry("symbolic", _deployment(x, explicit), groups, Request(1)))
    return group_grid(variant, groups, x["dcp"], explicit, x["user_cadence"]), p


def _domain(x: dict) -> dict[str, object]:
    return {
        **deployment_domain(x),
        "scheduler sizes positive": arith.all_of(x["align"] >= 1, x["max_scheduled"] >= 1),
        "hash block unset (0) or positive": x["hash_block"] >= 0,
        "budgets non-negative": arith.all_of(x["lookahead"] >= 0, x["threshold"] >= 0),
    }


def _same_spans(mine: tuple, theirs: tuple) -> object:
    """As many, and each equal to its counterpart."""
    return arith.all_of(len(mine) == len(theirs), *(a == b for a, b in zip(mine, theirs, strict=False)))


def _same(mine, reference, skip=()) -> object:
    """Field by field equality of two records (tuples element-wise)."""
    equal = []
    for f in fields(mine):
        if f.name in skip:
            continue
        a, b = getattr(mine, f.name), getattr(reference, f.name)
        equal.append(_same_spans(a, b) if isinstance(a, tuple) else a == b)
    return arith.all_in(equal)


def default_equivalence(variant, x, annotated):
    """Without an explicit cadence the variant plans as vLLM 0.33.0 does,
    except where it means to differ: PR457 splits on the cadence, and the
    guarded variant may reject the configuration."""
    _, mine = symbolic_plan(variant, x, False, annotated)
    with pristine():  # the reference: 0.33.0 as released, not as a mutant reads it
        _, base = symbolic_plan(BASELINE, x, False, annotated)
    split_skip = ("block",) if variant.splits_on_cadence else ()
    plan_skip = ("variant", "geometry", "split", *(("accepted",) if variant.guarded else ()))
    return Claim(
        hypotheses=_domain(x),
        goal=arith.all_of(_same(mine, base, plan_skip), _same(mine.split, base.split, split_skip)),
        covers={
            "partial hits with DCP > 1": arith.all_of(x["dcp"] >= 2, x["sharded"], mine.split.partial_hits),
            **({"a shared-prefix checkpoint": mine.split.shared_prefix} if annotated else {}),
        },
    )


def reads_group_grid(variant, x, explicit, annotated):
    """The plan's cadence, target spans, split grid and acceptance are the
    ones the prefill theorems read from models.plan.group_grid and the
    guard; its scheduler flags are what vLLM derives from them."""
    grid, p = symbolic_plan(variant, x, explicit, annotated)
    s, r, h = p.split, p.cadence, p.split.hash_block
    hash_block_given = x["hash_block"] >= 1
    return Claim(
        hypotheses=_domain(x),
        goal={
            "the group grid's cadence and split grid": arith.all_of(r == grid.cadence, s.block == grid.split_block),
            "the group grid's target spans": _same_spans(p.target_spans, grid.target_spans),
            # The split's grid: PR457's cadence; 0.33.0's cache_config.block_size, reset after KV
            # planning to the smallest prefix-cacheable spec block (v1/engine/core.py:335-349).
            "the split grid is the cadence (PR457) or the smallest spec block (0.33.0)": s.block == r
            if variant.splits_on_cadence
            else arith.all_of(
                arith.all_in(s.block <= b for b in grid.spec_blocks),
                arith.any_of(*(s.block == b for b in grid.spec_blocks)),
            ),
            "accepted exactly when the guard accepts": p.accepted
            == guard_accepts(variant, grid.cadence, grid.target_spans),
            # The scheduler block: the lcm of every group's span (kv_cache_utils.py:816-918).
            "the scheduler block the lcm of every span": s.sched_block == arith.lcm_of(grid.spans),
            # Partial hash hits: below S, with R > H, or R >= H under DCP (kv_cache_utils.py:762-801).
            "partial hash hits": s.partial_hits
            == arith.all_of(h < s.sched_block, r >= h, arith.implies(x["dcp"] == 1, r > h)),
            "EAGLE drop": s.eagle_drop == arith.all_of(x["eagle_drop"], s.lookahead == 0),
            "a shared-prefix checkpoint": s.shared_prefix == arith.all_of(x["shared"], s.partial_hits, annotated),
            "the EAGLE annotation": s.eagle_annotated == annotated,
            "the EAGLE spans the annotated draft groups' spans": _same_spans(
                s.eagle_spans, grid.draft_spans if annotated else ()
            ),
            "a given hash block": arith.implies(hash_block_given, h == x["hash_block"]),
            # Unset, the hash block is the gcd of every resolved span, the cadence's included.
            "an unset hash block the gcd of every span": arith.implies(
                arith.negate(hash_block_given), h == arith.gcd_of(grid.spans)
            ),
            "internal checkpoints": arith.all_of(
                s.checkpoint_blocks == x["ckpt_blocks"],
                arith.implies(s.checkpoint_blocks, s.checkpoint_alignment == x["align"]),
            ),
        },
        covers={
            "partial hits": s.partial_hits,
            "EAGLE drop": s.eagle_drop,
            # The edge of the given hash block's condition, as Applies states one.
            "a given hash block of one token": arith.all_of(hash_block_given, x["hash_block"] == 1),
            **(
                {"a DCP-sharded EAGLE group with DCP > 1": arith.all_of(x["draft_sharded"], x["dcp"] >= 2)}
                if annotated
                else {}
            ),
        },
    )


def group_spans(variant, x):
    """vLLM's eff(): one block id of a group covers block_size x DCP tokens
    when the group is DCP-sharded, block_size otherwise
    (v1/core/kv_cache_utils.py:740-742, single_type_kv_cache_manager.py:105-109);
    a recurrent group's block is the cadence and is never sharded."""
    groups = symbolic_groups(x)
    grid = group_grid(variant, groups, x["dcp"], x["explicit"], x["user_cadence"])
    dcp = x["dcp"]
    per_group = list(zip(groups, grid.spec_blocks, grid.spans, strict=True))
    recurrent = [(block, span) for group, block, span in per_group if group.kind == RECURRENT]
    attention = [(group, block, span) for group, block, span in per_group if group.kind != RECURRENT]
    # R holds each recurrent group's own block as config resolution gives it (config-plan-cadence): with
    # one recurrent group, that block; with several, their lcm.
    resolved = [
        cadence(variant, group.block_size, x["explicit"], x["user_cadence"])
        for group, _, _ in per_group
        if group.kind == RECURRENT
    ]
    targets = [span for group, _, span in per_group if group.kind == TARGET]
    return Claim(
        hypotheses=_domain(x),
        goal={
            "a recurrent group's spec block and span are the cadence": arith.all_in(
                arith.all_of(block == grid.cadence, span == block) for block, span in recurrent
            ),
            "the cadence is the recurrent groups' resolved blocks (their lcm)": grid.cadence == arith.lcm_of(resolved),
            "an attention group's spec block is its page": arith.all_in(
                block == group.block_size for group, block, _ in attention
            ),
            "an attention group's span is its spec block, times DCP when sharded": arith.all_in(
                span == arith.ite(group.dcp_sharded, block * dcp, block) for group, block, span in attention
            ),
            "one target span per target group": _same_spans(targets, grid.target_spans),
        },
        covers={"a sharded target group with DCP > 1": arith.all_of(x["sharded"], dcp >= 2)},
    )


def _case(formula, *arguments):
    """The formula with its case's fixed arguments (whether an explicit
    cadence is given, whether the draft group is an EAGLE group)."""

    def claim(variant, x):
        return formula(variant, x, *arguments)

    claim.__doc__ = formula.__doc__
    return claim


def _theorem(name, statement, formula, *cases):
    """One obligation per case (name, the formula's fixed arguments), over the
    inputs those arguments do not fix."""
    if not cases:
        return Theorem(name, "plan", statement, (Obligation("main", PLAN_VARS, formula),))
    variables = tuple(v for v in PLAN_VARS if v.name not in ("explicit", "annotated"))
    obligations = tuple(Obligation(case, variables, _case(formula, *arguments)) for case, arguments in cases)
    return Theorem(name, "plan", statement, obligations)


THEOREMS = (
    _theorem(
        "plan-default-equivalence",
        "Without an explicit --mamba-block-size, the variant's plan (models.plan.grid_plan: cadence, target spans, "
        "scheduler block, hash block, partial hits, EAGLE drop, lookahead, budgets, internal checkpoints, shared "
        "prefix, EAGLE spans) is vLLM 0.33.0's, except PR457's split grid and the guarded variant's acceptance.",
        default_equivalence,
        ("plain", (False,)),
        ("eagle", (True,)),
    ),
    _theorem(
        "plan-reads-group-grid",
        "The plan simulate runs reads the cadence, target spans and split grid that models.plan.group_grid "
        "resolves (the ones the prefill theorems read) and accepts exactly what the guard accepts; the split grid "
        "is the cadence under PR457 and the smallest spec block under 0.33.0; its scheduler block is a multiple of "
        "every group's span; partial hash hits are on exactly when H < S and R > H (R >= H under DCP), EAGLE drop "
        "exactly when asked with no lookahead, a shared-prefix checkpoint exactly when asked with partial hits and "
        "an EAGLE group.",
        reads_group_grid,
        ("plain", (False, False)),
        ("eagle", (False, True)),
        ("explicit", (True, False)),
        ("explicit-eagle", (True, True)),
    ),
    Theorem(
        "plan-group-spans",
        "plan",
        "Each cache group's span is vLLM's eff(): its spec block times DCP when the group is DCP-sharded, its "
        "spec block otherwise; a target or draft group's spec block is its page, a recurrent group's is the "
        "cadence R, which is the recurrent group's block as config resolution gives it (models.plan.cadence), "
        "and with two recurrent groups a multiple of each one's.",
        (
            Obligation("main", PLAN_VARS, group_spans),
            Obligation("two-recurrent", shaped(PLAN_VARS, Shape(targets=2, recurrent=2, drafts=1)), group_spans),
        ),
    ),
)
