"""Deployments of any number of groups: a family of groups (arith.Family)
stands for every count of each kind, its folds over-approximate what every
count resolves to, and a reading by position is refused."""

from __future__ import annotations

import pytest
import z3
from hypothesis import given, settings
from hypothesis import strategies as st

from models import arith
from models.geometry import DRAFT, RECURRENT, TARGET, CacheGroup
from models.plan import group_grid
from models.variants import VARIANTS
from proofs.catalog import CATALOGUE, prefill
from proofs.catalog.base import AnyShape, deployment, symbolic_groups
from proofs.engine.solver import ERROR, PROVED, SolverOptions
from proofs.run.runner import decide_obligation
from tests.test_groups import FIXED_PATTERNS

FAMILY_THEOREMS = ("any-groups-published-on-target-boundaries", "any-groups-guard-exact")


def test_a_family_is_read_only_as_a_whole():
    family = arith.Family((4, 6))
    assert arith.each(family, lambda v: v + 1) == (5, 7) and isinstance(arith.each(family, abs), arith.Family)
    assert arith.lcm_of(family) == 12 and arith.gcd_of(family) == 2 and arith.minimum_of(family) == 4
    assert bool(family) and not arith.Family(())
    for read in (lambda: family[0], lambda: family[:2], lambda: len(family)):
        with pytest.raises(arith.FamilyReadByPosition):
            read()


def test_a_tuple_of_groups_reads_as_before():
    """The folds of a tuple are the exact ones: a family's widening is its own."""
    spans = (4, 6, 10)
    assert arith.lcm_of(spans) == 60 and arith.gcd_of(spans) == 2 and arith.minimum_of(spans) == 4
    assert arith.maximum_of(spans) == 10 and type(arith.each(spans, abs)) is tuple


def test_an_any_shape_names_one_member_of_each_kind():
    x = {v.name: 2 for v in AnyShape().variables}
    groups = symbolic_groups(x)
    assert isinstance(groups, arith.Family)
    assert [g.kind for g in groups] == [TARGET, RECURRENT, DRAFT]
    without = {v.name: 2 for v in AnyShape(drafts=False).variables}
    assert [g.kind for g in symbolic_groups(without)] == [TARGET, RECURRENT]
    assert not deployment(VARIANTS["pr457"], without).draft_spans


_SIZES = st.sampled_from([1, 2, 3, 4, 6, 8, 12, 16, 768, 1536, 12288])


@st.composite
def deployments(draw):
    """A concrete deployment of up to 20 target, 14 recurrent and 3 draft
    groups, and which member of each kind stands for its kind."""
    targets = draw(st.lists(st.tuples(_SIZES, st.booleans()), min_size=1, max_size=20))
    recurrent = draw(st.lists(_SIZES, min_size=1, max_size=14))
    drafts = draw(st.lists(_SIZES, min_size=0, max_size=3))
    members = (
        draw(st.integers(0, len(targets) - 1)),
        draw(st.integers(0, len(recurrent) - 1)),
        draw(st.integers(0, max(len(drafts) - 1, 0))),
    )
    settings_ = {
        "variant": draw(st.sampled_from(sorted(VARIANTS))),
        "dcp": draw(st.sampled_from([1, 2, 16])),
        "explicit": draw(st.booleans()),
        "user_cadence": draw(_SIZES),
        "annotated": draw(st.booleans()),
    }
    return targets, recurrent, drafts, members, settings_


@settings(max_examples=150, deadline=None)
@given(deployments())
def test_every_deployment_is_a_model_of_the_family_reading(case):
    """Soundness of the family's witnesses: whatever the counts, the cadence,
    split grid and spans that models.plan.group_grid gives the deployment
    itself satisfy the family reading's definitions, with any of its groups
    as the members. So a claim the family reading proves for every value of
    its witnesses holds for that deployment."""
    targets, recurrent, drafts, (t, r, d), s = case
    variant = VARIANTS[s["variant"]]
    groups = (
        *(CacheGroup(TARGET, page, dcp_sharded=sharded) for page, sharded in targets),
        *(CacheGroup(RECURRENT, block) for block in recurrent),
        *(CacheGroup(DRAFT, block, eagle=s["annotated"]) for block in drafts),
    )
    real = group_grid(variant, groups, s["dcp"], s["explicit"], s["user_cadence"])
    context = z3.Context()
    page, rblock, draft, dcp, user_cadence = z3.Ints("page rblock draft dcp user_cadence", context)
    sharded, explicit = z3.Bools("sharded explicit", context)
    members = [CacheGroup(TARGET, page, dcp_sharded=sharded), CacheGroup(RECURRENT, rblock)]
    if drafts:
        members.append(CacheGroup(DRAFT, draft, eagle=s["annotated"]))
    with arith.symbolic_context() as symbolic:
        family = group_grid(variant, arith.Family(members), dcp, explicit, user_cadence)
    (target_span,) = tuple(family.target_spans)
    solver = z3.Solver(ctx=context)
    solver.add(*symbolic.witness_definitions)
    solver.add(page == targets[t][0], sharded == targets[t][1], rblock == recurrent[r], dcp == s["dcp"])
    solver.add(explicit == s["explicit"], user_cadence == s["user_cadence"])
    if drafts:
        solver.add(draft == drafts[d])
        (draft_span,) = tuple(family.draft_spans)
        solver.add(draft_span == real.draft_spans[d])
    solver.add(family.cadence == real.cadence, family.split_block == real.split_block)
    solver.add(target_span == real.target_spans[t])
    assert solver.check() == z3.sat


@pytest.mark.parametrize("name", FAMILY_THEOREMS)
def test_the_family_theorems_are_proved(name):
    for obligation in CATALOGUE[name].obligations:
        assert decide_obligation(obligation, VARIANTS["pr457-guarded"], SolverOptions()).verdict == PROVED


def _positional_guard(pick):
    """pr457-guarded's check as if it read the target groups `pick` returns by position."""

    def guard_accepts(variant, cadence, target_spans):
        return not variant.guarded or arith.all_in(arith.divides(span, cadence) for span in pick(target_spans))

    return guard_accepts


@pytest.mark.parametrize("pattern", FIXED_PATTERNS)
def test_a_guard_reading_groups_by_position_is_an_error_not_a_proof(monkeypatch, pattern):
    """A guard that picks target groups by index cannot be read on a family:
    the obligation is ERROR, which fails `prove`, never PROVED."""
    monkeypatch.setattr(prefill, "guard_accepts", _positional_guard(FIXED_PATTERNS[pattern]))
    (sufficient,) = [o for o in CATALOGUE["any-groups-guard-exact"].obligations if o.name == "sufficient-any-shape"]
    outcome = decide_obligation(sufficient, VARIANTS["pr457-guarded"], SolverOptions())
    assert outcome.verdict == ERROR and "family of groups" in outcome.reason


@settings(max_examples=100, deadline=None)
@given(st.lists(_SIZES, min_size=1, max_size=5), st.integers(0, 50_000), st.data())
def test_an_attaining_family_reads_the_least_reuse_bound_of_every_draft_group(spans, tokens, data):
    """Soundness of Family.attaining: with any draft group and the one that
    attains the least EAGLE reuse bound as the two members, the family's
    minimum is the deployment's, whatever the other groups."""
    from models.scheduler import checkpoint_position

    def bound(span):
        return checkpoint_position(tokens, span, True)

    anyone = data.draw(st.integers(0, len(spans) - 1))
    least = min(range(len(spans)), key=lambda i: bound(spans[i]))
    context = z3.Context()
    every, attaining = z3.Ints("every least", context)
    with arith.symbolic_context() as symbolic:
        family = arith.Family((every, attaining)).attaining()
        value = arith.minimum_of(arith.each(family, bound))
    solver = z3.Solver(ctx=context)
    solver.add(*symbolic.witness_definitions, every == spans[anyone], attaining == spans[least])
    assert solver.check() == z3.sat
    assert solver.model().eval(value).as_long() == min(bound(s) for s in spans)


def test_a_second_extremum_over_an_attaining_family_is_refused():
    """One member attains one fold: a second, different fold over the same
    family (or one mapped from it) has no member attaining both."""
    context = z3.Context()
    a, b = z3.Ints("a b", context)
    with arith.symbolic_context():
        family = arith.Family((a, b)).attaining()
        arith.minimum_of(family)
        assert arith.minimum_of(family) is not None  # the same fold again is the same fold
        with pytest.raises(ValueError, match="attains one extremum fold"):
            arith.minimum_of(arith.each(family, lambda v: v + 1))
        with pytest.raises(ValueError, match="attains one extremum fold"):
            arith.maximum_of(family)


def test_a_float32_checkpoint_is_served_in_two_bytes():
    """vLLM's --dtype auto downcasts a float32 checkpoint (_resolve_auto_dtype): its KV cache and conv
    state take two bytes an element, not four."""

    from models.hf_config import family_config, parse_model

    config = family_config("qwen3-next")
    as_float32 = parse_model({**config, "dtype": "float32"}, "f32")
    as_bfloat16 = parse_model({**config, "dtype": "bfloat16"}, "bf16")
    assert as_float32.dtype == "bfloat16"
    assert as_float32.attention_page_per_token(1) == as_bfloat16.attention_page_per_token(1)
    assert as_float32.state_page(1, 0, "auto") == as_bfloat16.state_page(1, 0, "auto")
