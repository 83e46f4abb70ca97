"""Claims that a shipped function equals its model, or another release's.

Each claim is a formula in the catalogue's sense (`(variant, x) -> Claim`),
so `proofs.solver.decide` decides it, and replays every counterexample by
calling the formula on ints: the model's int reading against the shipped
code run concretely. The shipped reading is explored under the claim's
domain, which it also adds as an obligation (so it is sound whatever the
hypotheses say).
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable
from dataclasses import dataclass

from models import arith, prefill, scheduler
from models.config import resolve
from models.variants import BASELINE
from proofs.catalog.base import (
    SPLIT_CALL_VARS,
    SPLIT_PARAM_VARS,
    bools,
    ints,
    scheduler_domain,
    split_call,
    split_params,
)
from proofs.catalog.config import CONFIG_VARS, config_domain, config_inputs
from proofs.solver import Claim, Var
from proofs.source import resume
from proofs.source.platform import equivalence_lemmas

_domain: contextvars.ContextVar[tuple] = contextvars.ContextVar("gridproof_source_domain", default=())


@contextlib.contextmanager
def exploring_under(conditions):
    """Shipped readings built in the block explore only inputs satisfying
    `conditions` (and owe them as obligations)."""
    token = _domain.set(tuple(conditions))
    try:
        yield
    finally:
        _domain.reset(token)


def current_domain() -> tuple:
    return _domain.get()


@dataclass(frozen=True)
class Subject:
    """One function: its inputs, their domain, and how each reading is called."""

    name: str
    variables: tuple[Var, ...]
    domain: Callable[[dict], dict[str, object]]
    model: Callable[[dict], object]
    shipped: Callable[[object, dict], object]  # (ShippedFunctions, inputs) -> value
    # valid facts about the witnesses both readings built, for deciding a path:
    # (context, inputs, the path's condition, its shipped value, the model's) -> facts
    lemmas: Callable[[arith.SymbolicContext, dict, object, object, object], list] | None = None

    def formula(self, left, right=None) -> Callable:
        """model == left, or left == right (two releases)."""

        def read(variant, x):
            hypotheses = self.domain(x)
            with exploring_under(hypotheses.values()):
                a = self.shipped(left, x)
                b = self.model(x) if right is None else self.shipped(right, x)
            return Claim(hypotheses=hypotheses, goal=_equal(a, b))

        return read

    def difference(self, left, right, values: dict) -> tuple[object, object]:
        """The two concrete values on `values`, for a report."""
        return self.shipped(left, values), self.model(values) if right is None else self.shipped(right, values)


def _equal(a, b):
    if isinstance(a, tuple):
        return arith.all_of(*(_equal(x, y) for x, y in zip(a, b, strict=True)))
    return a == b


def _checkpoint_domain(x):
    return {
        "block positive": x["block"] >= 1,
        "token count non-negative": x["tokens"] >= 0,
        "lookahead non-negative": x["lookahead"] >= 0,
    }


def _valid_domain(x):
    return {
        "positions non-negative": arith.all_of(x["query_start"] >= 0, x["query_end"] >= 0, x["position"] >= 0),
        "block sizes positive": arith.all_of(x["hash_block"] >= 1, x["cadence"] >= 1),
        "alignment unset (0) or positive": x["alignment"] >= 0,
    }


def _state_columns_domain(x):
    return {
        "token counts non-negative, a chunk scheduled": arith.all_of(x["computed"] >= 0, x["scheduled"] >= 1),
        "block and accepted count positive": arith.all_of(x["cadence"] >= 1, x["accepted"] >= 1),
        "speculative blocks non-negative": x["spec_blocks"] >= 0,
        "a stale column is a column or none (-1)": x["stale"] >= -1,
    }


def _seeded_domain(x):
    return {
        "token count non-negative": x["computed"] >= 0,
        "block sizes positive": arith.all_of(x["cadence"] >= 1, x["block"] >= 1),
        # cache_config.block_size is the minimum over the prefix-cacheable groups, the Mamba group's among them
        "the attention block at most the Mamba block": x["block"] <= x["cadence"],
    }


def _advanced_domain(x):
    return {
        "token counts non-negative, a chunk scheduled": arith.all_of(x["computed"] >= 0, x["scheduled"] >= 1),
        "block and accepted count positive": arith.all_of(x["cadence"] >= 1, x["accepted"] >= 1),
        "the state's column is a column or none (-1)": x["previous"] >= -1,
        "the chunk's offset in the batch non-negative": x["batch_offset"] >= 0,
    }


_ADVANCED_ARGS = ("computed", "scheduled", "cadence", "previous", "accepted", "batch_offset")


_STATE_COLUMNS_ARGS = ("computed", "scheduled", "cadence", "spec_blocks", "accepted", "stale", "resumed", "fused")


def _resolved(r):
    return (r.block_size, r.mamba_block_size, r.mamba_page_size_padded)


_VALID_ARGS = ("query_start", "query_end", "position", "hash_block", "cadence", "alignment")

SUBJECTS = {
    "checkpoint_position": Subject(
        "checkpoint_position",
        (*ints("tokens", "lookahead"), *ints("block", size=True), *bools("drop")),
        _checkpoint_domain,
        lambda x: scheduler.checkpoint_position(x["tokens"], x["block"], x["drop"], x["lookahead"]),
        lambda f, x: f.checkpoint_position(x["tokens"], x["block"], x["drop"], x["lookahead"]),
    ),
    "checkpoint_valid": Subject(
        "checkpoint_valid",
        (*ints("query_start", "query_end", "position", "alignment"), *ints("hash_block", "cadence", size=True)),
        _valid_domain,
        lambda x: scheduler.checkpoint_valid(*(x[a] for a in _VALID_ARGS)),
        lambda f, x: f.checkpoint_valid(*(x[a] for a in _VALID_ARGS)),
    ),
    "block_size_resolution": Subject(
        "block_size_resolution",
        CONFIG_VARS,
        config_domain,
        lambda x: _resolved(resolve(BASELINE, config_inputs(x))),
        lambda f, x: f.block_size_resolution(config_inputs(x)),
        equivalence_lemmas,
    ),
    "state_columns": Subject(
        "state_columns",
        (
            *ints("computed", "spec_blocks", "stale"),
            *ints("scheduled", "cadence", "accepted", size=True),
            *bools("resumed", "fused"),
        ),
        _state_columns_domain,
        lambda x: resume.expected_state_columns(BASELINE, x["computed"], x["scheduled"], x["cadence"]),
        lambda f, x: f.state_columns(*(x[a] for a in _STATE_COLUMNS_ARGS)),
    ),
    "seeded_state_column": Subject(
        "seeded_state_column",
        (*ints("computed"), *ints("cadence", "block", size=True)),
        _seeded_domain,
        lambda x: prefill.initial_state_column(BASELINE, x["computed"], x["cadence"]),
        lambda f, x: f.seeded_state_column(x["computed"], x["cadence"], x["block"]),
    ),
    "advanced_state_column": Subject(
        "advanced_state_column",
        (*ints("computed", "previous", "batch_offset"), *ints("scheduled", "cadence", "accepted", size=True)),
        _advanced_domain,
        lambda x: (x["previous"], prefill.state_column(x["computed"] + x["scheduled"], x["cadence"])),
        lambda f, x: f.advanced_state_column(*(x[a] for a in _ADVANCED_ARGS)),
    ),
    "split": Subject(
        "split",
        SPLIT_PARAM_VARS + SPLIT_CALL_VARS,
        scheduler_domain,
        lambda x: scheduler.split(BASELINE, split_params(x), split_call(x)),
        lambda f, x: f.split(split_params(x), split_call(x)),
    ),
}
