"""Claims that a shipped function equals its model, or another release's.

Each claim is a formula in the catalogue's sense (`(variant, x) -> Claim`),
so `proofs.engine.solver.decide` decides it, and replays every counterexample by
calling the formula on ints: the model's int reading against the shipped
code run concretely. The shipped reading is explored under the claim's
domain, which it also adds as an obligation (so it is sound whatever the
hypotheses say).
"""

from __future__ import annotations

import contextlib
import contextvars
import inspect
from collections.abc import Callable
from dataclasses import dataclass, replace

from models import arith, deploy, offload, prefill, scheduler
from models.config import guard_accepts, resolve
from models.geometry import DRAFT, RECURRENT, TARGET, CacheGroup
from models.plan import recurrent_cadence
from models.scheduler import SplitParams
from models.variants import BASELINE, VARIANTS, Variant
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
from proofs.engine.solver import Claim, Var
from proofs.source import offload as offload_standins
from proofs.source import resume
from proofs.source.platform import canonical_lcm, equivalence_lemmas

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


def model_on_proxies(function, *arguments):
    """A model function written as plain Python (an `if`, a `%`), read as the shipped code is: on ints
    it is called; on terms it runs on proxies, path by path, under the claim's domain, and its reading
    is the if-then-else of its paths' values (proofs/source/reading.py)."""
    from proofs.source.proxy import wrap
    from proofs.source.reading import symbolic_or_concrete

    files = {inspect.getsourcefile(function)}
    run = lambda: function(*(wrap(a) for a in arguments))  # noqa: E731
    return symbolic_or_concrete(run, files, arith.is_symbolic(*arguments), domain=current_domain())


def _every_variant(_variant: Variant) -> bool:
    return True


def _no_variant(_variant: Variant) -> bool:
    """A function compared between releases only (`--diff`): no model states it."""
    return False


def _no_model(_variant: Variant, _x: dict):
    raise NotImplementedError("no model states this function: it is compared between releases only")


def _pr457(variant: Variant) -> bool:
    """PR457's functions: read by the variants that keep an explicit cadence."""
    return variant.keeps_explicit_cadence


def _guarded(variant: Variant) -> bool:
    return variant.guarded


@dataclass(frozen=True)
class Subject:
    """One function: its inputs, their domain, and how each reading is called.
    The model is read for `variant`; `applies(variant)`: the variant's code
    has the function (PR457's helpers are not in 0.33.0); `required(variant)`:
    its absence is a failure (else ABSENT is what the variant says)."""

    name: str
    variables: tuple[Var, ...]
    domain: Callable[[dict], dict[str, object]]
    model_of: Callable[[Variant, dict], object]
    shipped: Callable[[object, dict], object]  # (ShippedFunctions, inputs) -> value
    # valid facts about the witnesses both readings built, for deciding a path:
    # (context, inputs, the path's condition, its shipped value, the model's) -> facts
    lemmas: Callable[[arith.SymbolicContext, dict, object, object, object], list] | None = None
    scope: str = ""  # what a PROVED covers: how many layers, requests, lanes, ...
    variant: Variant = BASELINE
    applies: Callable[[Variant], bool] = _every_variant
    required: Callable[[Variant], bool] = _every_variant
    # The function's raises are its answer (a configuration refused), not crash sites.
    raises_are_results: bool = False
    # The rlimit of each path's query when it must be above decide.PATH_RLIMIT (0: that one).
    path_rlimit: int = 0
    # Whether `lemmas` are given to a release-against-release query too: where the releases differ
    # the query is satisfiable, and lemmas over both releases' witnesses can only slow finding a model.
    lemmas_in_diff: bool = True

    # Where releases compute it in different functions, each observed its own way: which one a
    # ShippedFunctions reads (`reading(functions)`, a name); `model_of` then gives the model's
    # observation of each, by name, and `common(name, observation)` the part every reading shares,
    # which a comparison of two releases that read it differently compares.
    reading: Callable[[object], str] | None = None
    common: Callable[[str, object], object] | None = None
    # (reading, its scope) where it is not `scope`; ("common", what `common` keeps) for a comparison
    scopes: tuple[tuple[str, str], ...] = ()

    def model(self, x: dict):
        return self.model_of(self.variant, x)

    def scope_for(self, functions) -> str:
        """What a PROVED of the reading `functions` gives covers."""
        return dict(self.scopes).get(self.reading(functions), self.scope) if self.reading else self.scope

    def compared_scope(self, left, right) -> str:
        """What a comparison of two releases compares, where they read the function differently."""
        if self.reading is None or self.reading(left) == self.reading(right):
            return ""
        return f"{self.reading(left)} against {self.reading(right)}: {dict(self.scopes)['common']}"

    def expected(self, functions, x: dict):
        """The model's observation, of the reading `functions` gives."""
        model = self.model(x)
        return model if self.reading is None else model[self.reading(functions)]

    def compared(self, left, right) -> tuple[Callable, Callable]:
        """What of each release's observation a comparison of the two compares: the whole, or, where
        they read the function differently, the part their readings share."""
        if self.reading is None or self.reading(left) == self.reading(right):
            return _whole, _whole
        first, second = self.reading(left), self.reading(right)
        return (lambda v: self.common(first, v)), (lambda v: self.common(second, v))

    def other(self, left, right, x: dict):
        """What the left release's observation is compared with: the model's, or the right release's."""
        if right is None:
            return self.expected(left, x)
        return self.compared(left, right)[1](self.shipped(right, x))

    def projected(self, left, right) -> Callable:
        """How the left release's observation is compared (see `compared`)."""
        return _whole if right is None else self.compared(left, right)[0]

    def for_variant(self, variant: Variant) -> Subject:
        return replace(self, variant=variant)

    def formula(self, left, right=None) -> Callable:
        """model == left, or left == right (two releases)."""

        def read(variant, x):
            hypotheses = self.domain(x)
            with exploring_under(hypotheses.values()):
                a = self.projected(left, right)(self.shipped(left, x))
                b = self.other(left, right, x)
            return Claim(hypotheses=hypotheses, goal=_equal(a, b))

        return read

    def difference(self, left, right, values: dict) -> tuple[object, object]:
        """The two concrete values on `values`, for a report."""
        return self.projected(left, right)(self.shipped(left, values)), self.other(left, right, values)


def _whole(value):
    return value


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


def _resolved(r):
    return (r.block_size, r.mamba_block_size, r.mamba_page_size_padded)


_VALID_ARGS = ("query_start", "query_end", "position", "hash_block", "cadence", "alignment")


def _split_params(x: dict) -> SplitParams:
    return split_params(x, eagle_spans=(x["draft_span"], x["draft_span2"]), annotated=x["annotated"])


def _split_domain(x):
    return {
        **scheduler_domain(x),
        "the other grid and the EAGLE spans positive": arith.all_of(
            x["unread_block"] >= 1, x["draft_span"] >= 1, x["draft_span2"] >= 1
        ),
    }


SPLIT_VARS = SPLIT_PARAM_VARS + SPLIT_CALL_VARS + ints("unread_block", "draft_span", "draft_span2", size=True)
SPLIT_VARS += bools("annotated")

ALIGNMENTS = ("alignment", "alignment2", "alignment3")


def _alignment_model(_variant, x):
    """None (0) if a layer declares none, else the lcm of the layers' alignments."""
    values = [x[a] for a in ALIGNMENTS]
    return arith.ite(arith.any_of(*(v == 0 for v in values)), 0, canonical_lcm(*values))


MAMBA_BLOCKS = ("rblock", "rblock2")


def _cadence_model(variant, x):
    """models.plan.recurrent_cadence over the groups (the spec blocks are
    resolved already: no explicit cadence to keep)."""
    groups = (
        CacheGroup(TARGET, x["page"]),
        CacheGroup(DRAFT, x["draft_block"], eagle=True),
        *(CacheGroup(RECURRENT, x[b]) for b in MAMBA_BLOCKS),
    )
    return recurrent_cadence(variant, groups, False, 0)


DRAFTS = (("draft_block", "draft_sharded", "annotated"), ("draft_block2", "draft_sharded2", "annotated2"))


def _eagle_spans_model(_variant, x):
    """(count, spans...) of the draft groups annotated as EAGLE groups
    (models.geometry.Geometry.eagle_spans), each padded with 0."""
    spans = []
    for block, sharded, annotated in DRAFTS:
        spans.append((x[annotated], CacheGroup(DRAFT, x[block], dcp_sharded=x[sharded], eagle=True).span(x["dcp"])))
    first, second = spans
    count = arith.ite(first[0], 1, 0) + arith.ite(second[0], 1, 0)
    return (
        count,
        arith.ite(first[0], first[1], arith.ite(second[0], second[1], 0)),
        arith.ite(arith.all_of(first[0], second[0]), second[1], 0),
    )


def _lcp_params(x: dict) -> SplitParams:
    return SplitParams(
        block=x["block"],
        sched_block=1,
        hash_block=1,
        eagle_drop=x["drop"],
        lookahead=x["lookahead"],
        max_scheduled=1,
        long_prefill_threshold=0,
        partial_hits=False,
        checkpoint_blocks=False,
        checkpoint_alignment=0,
        shared_prefix=False,
        eagle_spans=(x["draft_span"], x["draft_span2"]),
        eagle_annotated=x["annotated"],
    )


def _lcp_domain(x):
    return {
        "sizes positive": arith.all_of(x["block"] >= 1, x["draft_span"] >= 1, x["draft_span2"] >= 1),
        "token count and lookahead non-negative": arith.all_of(x["tokens"] >= 0, x["lookahead"] >= 0),
        "EAGLE drop off with lookahead": arith.implies(x["drop"], x["lookahead"] == 0),
    }


TARGETS = (("page", "sharded"), ("page2", "sharded2"))


def _guard_model(variant, x):
    spans = tuple(CacheGroup(TARGET, x[b], dcp_sharded=x[s]).span(x["dcp"]) for b, s in TARGETS)
    return guard_accepts(variant, x["cadence"], spans)


WINDOW_ARGS = ("tokens", "computed", "recurrent", "align", "bounded", "budget", "limited", "max_load")


def _window_domain(x):
    return {
        "a request of a token or more, fewer computed on the GPU": arith.all_of(
            x["tokens"] >= 1, x["computed"] >= 0, x["computed"] <= x["tokens"] - 1
        ),
        # max_num_new_tokens is max(0, bound - computed), the bound a prefix of at most tokens - 1
        # (OffloadingConnector._max_loadable_tokens)
        "the load budget non-negative, within the request less its last token": arith.all_of(
            x["budget"] >= 0, x["computed"] + x["budget"] <= x["tokens"] - 1
        ),
        "max_load_tokens non-negative, the recurrent chunk positive": arith.all_of(x["max_load"] >= 0, x["align"] >= 1),
    }


def _multiple_lemmas(context: arith.SymbolicContext, _x, facts, shipped, model) -> list:
    """offload.multiple_facts over the divisions the path and both readings read."""
    return offload_standins.multiple_facts(context, context.owners_read([facts, shipped, model]))


def _offload_window_model(variant, tokens, computed, recurrent, align, bounded, budget, limited, max_load):
    """What the connector loads over a tier holding every chunk: the model's window (models/offload.py,
    hit_window) less the computed tokens, none where that is less than the largest chunk (one token for
    the attention group, `align` for the Mamba group: offload_hit's `cap - computed < c`)."""
    caps = (budget if bounded else None, max_load if limited else None)
    window = offload.hit_window(variant, tokens, computed, recurrent, align if recurrent else None, *caps)
    loaded = window - computed
    return loaded if loaded >= (align if recurrent else 1) else 0


LOOKAHEAD_ARGS = ("speculating", "drop", "lookahead_hashes", "prefix_caching", "connector", "native", "lookahead")


def _hash_lookahead_model(variant, speculating, drop, lookahead_hashes, prefix_caching, connector, native, lookahead):
    """models/deploy.py scheduler_flags' hash lookahead for a drafter (EAGLE's block drop or not, reading
    `lookahead` tokens ahead) or none, beside a KV connector (the native offload or another) or none."""
    spec = None
    if speculating:
        spec = deploy.Speculation("eagle", 1, drop, 0, 0, lookahead, lookahead_hashes, True)
    transfer = None
    if connector:
        # Another connector: one whose class keeps the base class's answer, as proofs/source/connector.py's has.
        transfer = {"kv_connector": deploy.OFFLOADING_CONNECTOR if native else "LMCacheConnectorV1"}
    flags = deploy.scheduler_flags(spec, prefix_caching, transfer, 8192, None, variant)
    return flags.hash_lookahead_tokens


def _groups_domain(names):
    def domain(x):
        return {"sizes positive": arith.all_of(*(x[n] >= 1 for n in names))}

    return domain


ALL_SUBJECTS = (
    Subject(
        "checkpoint_position",
        (*ints("tokens", "lookahead"), *ints("block", size=True), *bools("drop")),
        _checkpoint_domain,
        lambda v, x: scheduler.checkpoint_position(x["tokens"], x["block"], x["drop"], x["lookahead"]),
        lambda f, x: f.checkpoint_position(x["tokens"], x["block"], x["drop"], x["lookahead"]),
        scope="every input",
    ),
    Subject(
        "checkpoint_valid",
        (*ints("query_start", "query_end", "position", "alignment"), *ints("hash_block", "cadence", size=True)),
        _valid_domain,
        lambda v, x: scheduler.checkpoint_valid(*(x[a] for a in _VALID_ARGS)),
        lambda f, x: f.checkpoint_valid(*(x[a] for a in _VALID_ARGS)),
        scope="every input",
    ),
    Subject(
        "checkpoint_alignment",
        ints(*ALIGNMENTS),
        lambda x: {"alignments unset (0) or positive": arith.all_of(*(x[a] >= 0 for a in ALIGNMENTS))},
        _alignment_model,
        lambda f, x: f.checkpoint_alignment(tuple(x[a] for a in ALIGNMENTS)),
        scope="three Mamba layers, each with or without an alignment",
    ),
    Subject(
        "start_block",
        ints("kernel_min", size=True),
        lambda x: {"the smallest kernel block positive": x["kernel_min"] >= 1},
        lambda v, x: model_on_proxies(deploy.start_block, v, x["kernel_min"]),
        lambda f, x: f.start_block(x["kernel_min"]),
        scope="one attention backend whose kernels take any multiple of kernel_min, no --block-size",
    ),
    Subject(
        "offload_hit_window",
        (
            *ints("tokens", "computed", "budget", "max_load"),
            *ints("align", size=True),
            *bools("recurrent", "bounded", "limited"),
        ),
        _window_domain,
        lambda v, x: model_on_proxies(_offload_window_model, v, *(x[a] for a in WINDOW_ARGS)),
        lambda f, x: f.offload_hit_window(*(x[a] for a in WINDOW_ARGS)),
        _multiple_lemmas,
        # Two of its 21 paths on 0.33.0 need more than 2M: the chunk counts multiply the Mamba chunk. With
        # the lemmas the model's check takes 11 s, 36 s without; --diff 0.33.0 0.34.0 finds the difference
        # in 17 s without them, in a minute with them (concretely, after the solver gave up).
        path_rlimit=20_000_000,
        lemmas_in_diff=False,
        scope=(
            "an attention group of one-token chunks and a Mamba group or none, keyed over the whole request, "
            "an offload tier holding every chunk; a load budget and max_load_tokens each set or not"
        ),
    ),
    Subject(
        "hash_lookahead",
        (*ints("lookahead", size=True), *bools(*LOOKAHEAD_ARGS[:-1])),
        lambda x: {
            "a drafter reads a token ahead or more": x["lookahead"] >= 1,
            "the native offload is a KV connector": arith.implies(x["native"], x["connector"]),
        },
        lambda v, x: model_on_proxies(_hash_lookahead_model, v, *(x[a] for a in LOOKAHEAD_ARGS)),
        lambda f, x: f.hash_lookahead(*(x[a] for a in LOOKAHEAD_ARGS)),
        scope="a drafter or none, prefix caching on or off, the native offload connector, another or none",
    ),
    Subject(
        "mamba_state_bytes",
        (*ints("state", "state2", size=True), *bools("replayssm")),
        lambda x: {"state sizes positive": arith.all_of(x["state"] >= 1, x["state2"] >= 1)},
        _no_model,
        lambda f, x: f.mamba_state_bytes(x["state"], x["state2"], x["replayssm"]),
        scope="two states of a Mamba spec, one-byte elements, FlashInfer's ReplaySSM selected or not",
        applies=_no_variant,
    ),
    Subject(
        "block_size_resolution",
        CONFIG_VARS,
        config_domain,
        lambda v, x: _resolved(resolve(v, config_inputs(x))),
        lambda f, x: f.block_size_resolution(config_inputs(x)),
        equivalence_lemmas,
        scope=(
            "one selected backend with one kernel size, one non-SSM backend, one Mamba layer, "
            "pages as symbolic byte counts (no tensor shapes or dtypes), no packed KV cache dtype"
        ),
    ),
    Subject(
        "state_columns",
        resume.STATE_COLUMN_VARS,
        resume.state_columns_domain,
        resume.expected_columns,
        lambda f, x: f.state_columns(x),
        scope=resume.STATE_COLUMNS_SCOPE,
        reading=lambda f: f.state_columns_reading(),
        common=resume.running_columns,
        scopes=((resume.ALIGNED, resume.ALIGNED_SCOPE), ("common", resume.COMMON_SCOPE)),
    ),
    Subject(
        "seeded_state_column",
        (*ints("computed"), *ints("cadence", "block", size=True)),
        _seeded_domain,
        # the column, and the speculative acceptance count reset to 1 in the slot
        lambda v, x: (prefill.initial_state_column(v, x["computed"], x["cadence"]), 1),
        lambda f, x: f.seeded_state_column(x["computed"], x["cadence"], x["block"]),
        scope="one request slot",
    ),
    Subject(
        "advanced_state_column",
        (*ints("computed", "previous", "batch_offset"), *ints("scheduled", "cadence", "accepted", size=True)),
        _advanced_domain,
        lambda v, x: resume.expected_advance(x),
        lambda f, x: f.advanced_state_column(*(x[a] for a in _ADVANCED_ARGS)),
        scope="one program of one lane (BLOCK_SIZE 1)",
    ),
    Subject(
        "split",
        SPLIT_VARS,
        _split_domain,
        lambda v, x: scheduler.split(v, _split_params(x), split_call(x)),
        lambda f, x: f.split(_split_params(x), split_call(x), unread_block=x["unread_block"]),
        scope="one request, every flag free, two EAGLE draft groups annotated or not",
    ),
    Subject(
        "recurrent_cadence",
        ints("page", "draft_block", *MAMBA_BLOCKS, size=True),
        _groups_domain(("page", "draft_block", *MAMBA_BLOCKS)),
        _cadence_model,
        lambda f, x: f.recurrent_cadence(tuple(x[b] for b in MAMBA_BLOCKS), x["page"], x["draft_block"]),
        scope="two Mamba groups beside a target-attention and an EAGLE draft group",
        applies=_pr457,
    ),
    Subject(
        "eagle_spans",
        (
            *ints("dcp", "page", "rblock", "draft_block", "draft_block2", size=True),
            *bools("sharded", "draft_sharded", "draft_sharded2", "annotated", "annotated2", "mamba_annotated"),
        ),
        _groups_domain(("dcp", "page", "rblock", "draft_block", "draft_block2")),
        _eagle_spans_model,
        lambda f, x: f.eagle_spans(
            x["dcp"],
            (x["page"], x["sharded"]),
            tuple((x[b], x[s], x[a]) for b, s, a in DRAFTS),
            x["rblock"],
            x["mamba_annotated"],
        ),
        scope="a target-attention group, two draft groups and a Mamba group, each annotated or not",
        applies=_pr457,
    ),
    Subject(
        "last_cacheable_position",
        (
            *ints("tokens", "lookahead"),
            *ints("block", "draft_span", "draft_span2", size=True),
            *bools("drop", "annotated"),
        ),
        _lcp_domain,
        lambda v, x: scheduler.last_cacheable_position(v, _lcp_params(x), x["tokens"]),
        lambda f, x: f.last_cacheable_position(
            x["tokens"], x["block"], x["drop"], x["lookahead"], (x["draft_span"], x["draft_span2"]), x["annotated"]
        ),
        scope="two annotated EAGLE draft groups, or none",
        applies=_pr457,
    ),
    Subject(
        "configuration_check",
        (
            *ints("cadence", "dcp", "page", "page2", "rblock", "draft_block", "draft_block2", size=True),
            *bools("sharded", "sharded2", "draft_sharded", "annotated"),
        ),
        _groups_domain(("cadence", "dcp", "page", "page2", "rblock", "draft_block", "draft_block2")),
        _guard_model,
        lambda f, x: f.configuration_check(
            x["cadence"],
            x["dcp"],
            tuple((x[b], x[s]) for b, s in TARGETS),
            ((x["draft_block"], x["draft_sharded"], x["annotated"]), (x["draft_block2"], False, False)),
            x["rblock"],
        ),
        scope="two target-attention groups, a Mamba group, an annotated and an unannotated draft group",
        applies=_pr457,
        required=_guarded,
        raises_are_results=True,
    ),
)
FUNCTIONS = tuple(s.name for s in ALL_SUBJECTS)


def subjects(variant: Variant = BASELINE) -> dict[str, Subject]:
    """The functions the variant's code has, each read against the variant's model."""
    return {s.name: s.for_variant(variant) for s in ALL_SUBJECTS if s.applies(variant)}


def every_subject(variant: Variant = BASELINE) -> dict[str, Subject]:
    """Every function, for comparing two trees (one may lack a function)."""
    return {s.name: s.for_variant(variant) for s in ALL_SUBJECTS}


SUBJECTS = subjects(BASELINE)
__all__ = ["FUNCTIONS", "SUBJECTS", "VARIANTS", "Subject", "every_subject", "subjects"]
