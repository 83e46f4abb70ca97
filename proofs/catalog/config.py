"""Config resolution: PR457 changes one line of `_align_hybrid_block_size`."""

from __future__ import annotations

from models import arith
from models.config import MLA_KERNEL_FLOOR, ConfigInputs, resolve
from models.plan import cadence
from models.variants import BASELINE
from proofs.catalog.base import Obligation, Theorem, bools, ints
from proofs.engine.claims import at_least, at_most
from proofs.engine.solver import Claim
from proofs.faults.patch import pristine

CONFIG_VARS = (
    *ints("block_in", "kernel_min", "backend_alignment", "checkpoint_alignment", size=True),
    *ints("mamba_in", "padded_in", "attn_page_per_token", "mamba_page"),
    *bools("use_mla", "align_mode", "explicit"),
)


def config_inputs(x: dict) -> ConfigInputs:
    return ConfigInputs(
        block_size=x["block_in"],
        mamba_block_size=x["mamba_in"],
        mamba_page_size_padded=x["padded_in"],
        attn_page_per_token=x["attn_page_per_token"],
        mamba_page=x["mamba_page"],
        kernel_min=x["kernel_min"],
        backend_alignment=x["backend_alignment"],
        use_mla=x["use_mla"],
        align_mode=x["align_mode"],
        checkpoint_alignment=x["checkpoint_alignment"],
        explicit_mamba_block_size=x["explicit"],
    )


def config_domain(x: dict) -> dict[str, object]:
    return {
        "sizes positive": arith.all_of(
            x["block_in"] >= 1,
            x["kernel_min"] >= 1,
            x["backend_alignment"] >= 1,
            x["attn_page_per_token"] >= 1,
        ),
        "checkpoint alignment unset or positive": x["checkpoint_alignment"] >= 0,
        "optional sizes unset or positive": arith.all_of(x["mamba_in"] >= 0, x["padded_in"] >= 0),
        "mamba page non-negative": x["mamba_page"] >= 0,
    }


def smallest_configuration(x: dict) -> dict[str, object]:
    """Cover goal at the edge of config_domain, every size one and every
    optional one unset: a narrowed hypothesis leaves it unreachable."""
    sizes = ("block_in", "kernel_min", "backend_alignment", "attn_page_per_token")
    unset = ("checkpoint_alignment", "mamba_in", "padded_in", "mamba_page")
    edge = arith.all_of(*(x[n] == 1 for n in sizes), *(x[n] == 0 for n in unset))
    return {"every size one, every optional size unset": edge}


def smallest_state(x: dict) -> dict[str, object]:
    """Cover goal at the edge of "model has recurrent state"."""
    return {"a recurrent page of one unit": x["mamba_page"] == 1}


def default_equivalence(variant, x):
    """Without an explicit cadence, the variant resolves the block size, the recurrent block size and the
    padded recurrent page as vLLM 0.33.0 (pristine, whatever patch is applied) does."""
    mine = resolve(variant, config_inputs(x))
    with pristine():  # the reference: 0.33.0 as released, not as a mutant reads it
        base = resolve(BASELINE, config_inputs(x))
    return Claim(
        hypotheses={**config_domain(x), "no explicit cadence": arith.negate(x["explicit"])},
        goal={
            "the same block size": mine.block_size == base.block_size,
            "the same recurrent block size": mine.mamba_block_size == base.mamba_block_size,
            "the same padded recurrent page": mine.mamba_page_size_padded == base.mamba_page_size_padded,
        },
        covers={
            "align mode with a Mamba state": arith.all_of(x["align_mode"], x["mamba_page"] > 0),
            **smallest_configuration(x),
        },
    )


def physical_unchanged(variant, x):
    mine = resolve(variant, config_inputs(x))
    with pristine():  # the reference: 0.33.0 as released, not as a mutant reads it
        base = resolve(BASELINE, config_inputs(x))
    return Claim(
        hypotheses=config_domain(x),
        goal={
            "the same block size": mine.block_size == base.block_size,
            "the same padded recurrent page": mine.mamba_page_size_padded == base.mamba_page_size_padded,
        },
        covers={"explicit cadence in align mode": arith.all_of(x["explicit"], x["align_mode"], x["mamba_page"] > 0)},
    )


def explicit_kept(variant, x):
    out = resolve(variant, config_inputs(x))
    return Claim(
        hypotheses={
            **config_domain(x),
            "explicit cadence": arith.all_of(x["explicit"], x["mamba_in"] >= 1),
            "align mode": x["align_mode"],
            "model has recurrent state": x["mamba_page"] >= 1,
        },
        goal=out.mamba_block_size == x["mamba_in"],
        covers={**smallest_state(x), "an explicit cadence of one token": x["mamba_in"] == 1},
    )


def page_covers_state(variant, x):
    out = resolve(variant, config_inputs(x))
    return Claim(
        hypotheses={**config_domain(x), "model has recurrent state": x["mamba_page"] >= 1},
        goal=at_least(out.block_size * x["attn_page_per_token"], x["mamba_page"]),
        covers=smallest_state(x),
    )


def plan_reads_resolved_cadence(variant, x):
    out = resolve(variant, config_inputs(x))
    return Claim(
        hypotheses={
            **config_domain(x),
            "an explicit cadence is a positive value": arith.implies(x["explicit"], x["mamba_in"] >= 1),
            "align mode": x["align_mode"],
            "model has recurrent state": x["mamba_page"] >= 1,
        },
        goal=cadence(variant, out.block_size, x["explicit"], x["mamba_in"]) == out.mamba_block_size,
        covers={"explicit": x["explicit"], **smallest_state(x)},
    )


def kernel_alignment(variant, x):
    """vLLM's K (platforms/interface.py:1068-1088): the current block size and
    the backend's smallest kernel block both bound it from below (with MLA,
    128 too); in align mode a checkpoint alignment, when set, multiplies the
    largest of them at most (K is their lcm with it); with a recurrent state
    the resolved block is at least K."""
    out = resolve(variant, config_inputs(x))
    k = out.kernel_alignment
    largest_lower = arith.maximum(x["kernel_min"], x["block_in"], arith.ite(x["use_mla"], MLA_KERNEL_FLOOR, 1))
    checkpoint_set = arith.all_of(x["align_mode"], x["checkpoint_alignment"] >= 1)
    checkpoint = arith.ite(checkpoint_set, x["checkpoint_alignment"], 1)
    return Claim(
        hypotheses=config_domain(x),
        goal={
            "at least the backend's smallest kernel block": at_least(k, x["kernel_min"]),
            "at least the current block size": at_least(k, x["block_in"]),
            "at least the MLA floor with MLA": at_least(k, MLA_KERNEL_FLOOR, when=x["use_mla"]),
            "at most the largest lower bound times a checkpoint alignment set in align mode": at_most(
                k, largest_lower * checkpoint
            ),
            "the resolved block at least K with a recurrent state": at_least(
                out.block_size, k, when=x["mamba_page"] >= 1, edge=x["mamba_page"] == 1
            ),
        },
        covers={"a kernel block above the current one": x["kernel_min"] > x["block_in"]},
    )


def _theorem(name, statement, formula):
    return Theorem(name, "config", statement, (Obligation("main", CONFIG_VARS, formula),))


THEOREMS = (
    _theorem(
        "config-default-equivalence",
        "Without an explicit --mamba-block-size, the variant resolves the physical block size, "
        "the recurrent block size and the padded recurrent page exactly as vLLM 0.33.0 does.",
        default_equivalence,
    ),
    _theorem(
        "config-physical-unchanged",
        "With any explicit cadence or none, the physical block size and the padded recurrent page "
        "are exactly vLLM 0.33.0's.",
        physical_unchanged,
    ),
    _theorem(
        "config-explicit-cadence-kept",
        "In align mode an explicit --mamba-block-size is kept as the recurrent block size.",
        explicit_kept,
    ),
    _theorem(
        "config-plan-cadence",
        "In align mode the cadence the scheduler plan reads (models.plan.cadence: from the resolved block, "
        "whether --mamba-block-size was given, and its value) is the recurrent block size config resolution "
        "produces, with an explicit cadence or without.",
        plan_reads_resolved_cadence,
    ),
    _theorem(
        "config-kernel-alignment",
        "The kernel alignment K is at least the current block size and the attention backend's smallest kernel "
        "block (and 128 with MLA), at most the largest of those times the checkpoint alignment when one is set "
        "in align mode, and, with a recurrent state, at most the resolved block size.",
        kernel_alignment,
    ),
    _theorem(
        "config-page-covers-state",
        "The resolved attention page holds at least one recurrent state (vLLM asserts it).",
        page_covers_state,
    ),
)
