"""Stand-ins for what `Platform._align_hybrid_block_size` reads, from the
model's `ConfigInputs` (models/config.py).

The method computes two page sizes from vLLM's spec classes, a model class
from the registry, kernel block sizes from attention backends and the
checkpoint alignment from the Mamba layers. The executor does not model
tensor shapes or dtypes: the page sizes are symbolic fields, so each spec
class is a stand-in whose `page_size_bytes` is the model's input (the
attention page for one token, `Pa`; the largest Mamba state page, `Pm`).
Everything else runs as shipped: the selected backend's smallest kernel
block (a concrete list of one symbolic size), the non-SSM backends' lcm (one
backend whose smallest block is the model's `backend_alignment`), and vLLM's
own `get_mamba_prefill_checkpoint_alignment`, which walks one Mamba layer
whose alignment is the model's (None when 0).
"""

from __future__ import annotations

import contextlib
import math

import z3

from models import arith
from models.config import ConfigInputs
from proofs.source import budget, paths
from proofs.source.proxy import SymInt, term, wrap
from proofs.source.standins import StandIn, optional

ABSTRACT = "vllm.model_executor.layers.mamba.abstract"


def symbolic_lcm(*values):
    """`math.lcm` on proxies: `canonical_lcm` of the terms, the builtin on ints."""
    if not any(isinstance(v, SymInt) for v in values):
        return math.lcm(*values)
    return wrap(canonical_lcm(*(term(v) for v in values)))


def canonical_lcm(*terms):
    """arith's lcm of `terms`, the same term however the lcm is written: an
    lcm of lcms is the lcm of all their terms, a 1 and a repeated term are
    dropped (math.lcm(math.lcm(a, b), c), math.lcm(a, b, c) and a loop
    folding lcm(1, a), then b, then c are one term). The terms keep their
    order: the lemmas that meet two readings' lcms compare them argument by
    argument. Exact for the positive terms arith's lcm is defined on."""
    if not any(isinstance(t, z3.ExprRef) for t in terms):
        return math.lcm(*terms)  # read on ints: a replay
    context = arith._context()
    made = context.__dict__.setdefault("_source_lcm_terms", {})  # lcm term id -> (the term, its terms)
    flat: dict[int, z3.ArithRef] = {}
    stack = [t if isinstance(t, z3.ExprRef) else z3.IntVal(t) for t in reversed(terms)]
    while stack:
        t = stack.pop()
        if t.get_id() in made and made[t.get_id()][0].eq(t):
            stack.extend(reversed(made[t.get_id()][1]))
        elif not (z3.is_int_value(t) and t.as_long() == 1):
            flat.setdefault(t.get_id(), t)
    kept = list(flat.values())
    if not kept:
        return z3.IntVal(1)
    if len(kept) == 1:
        return kept[0]
    result = arith.lcm(*kept)
    made[result.get_id()] = (result, tuple(kept))
    return result


class _QuietLogger:
    """vLLM's logger: the messages (one carries a float) are not read."""

    def info(self, *_args, **_kwargs) -> None:
        pass

    debug = warning = info_once = warning_once = info


class MultipleOf:
    """vLLM's kernel block size constraint class: any multiple of `base`. The
    resolution's stand-in backends list plain sizes, so none of their sizes is
    an instance of it; the start block's backend lists one (functions.py)."""

    def __init__(self, base=None) -> None:
        self.base = base


def page_lemmas(c: ConfigInputs):
    """Valid facts for the method's feasibility checks (paths.explore).

    Its assert, `block_size * Pa >= Pm`, holds because the block is a
    multiple of Bb at least K * cdiv(Pm, K * Pa): a product of a division's
    quotient with the page. Z3's nonlinear arithmetic does not multiply a
    definition by a factor, so each division's definition is handed over
    multiplied by the page, `x * Pa == q * d * Pa + r * Pa`, with the sign of
    `r * Pa`; what is left is linear in those products. And an lcm of
    positive terms is at least each of them (the lcm in the divisor)."""
    page = term(wrap(c.attn_page_per_token))

    def lemmas(context: arith.SymbolicContext, owners: set[int]) -> list[z3.BoolRef]:
        facts = []
        for x, d, q, r in context.divisions_of(owners):
            facts.append(x * page == q * d * page + r * page)
            facts.append(z3.Implies(z3.And(d > 0, page >= 0), r * page >= 0))
        for result, terms in context.lcms_of(owners):
            facts.append(z3.Implies(z3.And(*(t > 0 for t in terms)), z3.And(*(result >= t for t in terms))))
        return facts

    return lemmas


BLOCK_RLIMIT = 1_000_000


def equivalence_lemmas(
    context: arith.SymbolicContext, x: dict, facts: z3.BoolRef, shipped: tuple, model: tuple
) -> list[z3.BoolRef]:
    """Facts that let the model's reading and the shipped one meet on a
    path (`facts`: the domain and the path's condition).

    First the resolved block, proved equal here as a lemma. The model
    computes one lcm over if-then-else terms (`lcm(K, A or 1)` for every
    flag at once), the shipped code one per path over the branch taken
    (`lcm(max(K0, 128), A)`, or `K` alone when the 1 is dropped): arith's lcm
    is a fresh term per argument list, so the two are equal only by
    congruence (equal arguments, equal lcm) and by `lcm(a, 1) == a` for a
    positive `a`. The
    divisions by `K * Pa` differ the same way: a floor division is unique,
    so equal dividends over equal nonzero divisors have equal quotients and
    remainders (every pair: the lists are short here). Those facts are
    valid for the true lcm and the true quotients.

    Then the padded page, each reading's block times the page per token:
    equal blocks give equal pages (Z3 does not multiply an equality's
    sides). With the block proved, the page needs none of the facts above,
    which only widen its search (it ran out of budget with them)."""
    page = x["attn_page_per_token"]
    blocks = _factors_of(page, [facts, *shipped, *model])
    products = [z3.Implies(u == v, u * page == v * page) for i, u in enumerate(blocks) for v in blocks[i + 1 :]]
    block_equal = shipped[0] == model[0]
    read = context.owners_read([facts, block_equal])
    congruences = _lcm_and_division_facts(context, read)
    solver = z3.SimpleSolver()
    solver.set("rlimit", BLOCK_RLIMIT)
    solver.add(*context.definitions_of(read), *congruences)
    solver.add(facts, z3.Not(block_equal))
    if budget.check(solver) == z3.unsat:
        return [block_equal, *products]
    return [*congruences, *products]


def _lcm_and_division_facts(context: arith.SymbolicContext, owners: set[int]) -> list[z3.BoolRef]:
    """Over the lcms and divisions of `owners` (those the path and the
    block read): the other paths' witnesses only widen the search."""
    lcms = context.lcms_of(owners)
    facts = []
    for i, (l1, t1) in enumerate(lcms):
        if len(t1) == 2:
            a, b = t1
            facts += [z3.Implies(z3.And(b == 1, a > 0), l1 == a), z3.Implies(z3.And(a == 1, b > 0), l1 == b)]
        facts.append(z3.Implies(z3.And(*(t > 0 for t in t1)), z3.And(*(l1 >= t for t in t1))))
        for l2, t2 in lcms[i + 1 :]:
            if len(t1) == len(t2):
                facts.append(z3.Implies(z3.And(*(a == b for a, b in zip(t1, t2, strict=True))), l1 == l2))
    divisions = context.divisions_of(owners)
    for i, (x1, d1, q1, r1) in enumerate(divisions):
        for x2, d2, q2, r2 in divisions[i + 1 :]:
            facts.append(z3.Implies(z3.And(x1 == x2, d1 == d2, d1 != 0), z3.And(q1 == q2, r1 == r2)))
    return facts


def _factors_of(page: z3.ArithRef, terms: list) -> list[z3.ArithRef]:
    """The other factor of every product `block * page` within `terms`."""
    found, seen, stack = [], set(), [t for t in terms if isinstance(t, z3.ExprRef)]
    while stack:
        t = stack.pop()
        if t.get_id() in seen:
            continue
        seen.add(t.get_id())
        if z3.is_mul(t) and t.num_args() >= 2 and any(a.eq(page) for a in t.children()):
            rest = [a for a in t.children() if not a.eq(page)]
            if rest:
                found.append(rest[0] if len(rest) == 1 else z3.Product(*rest))
        stack.extend(t.children())
    return found


def _layers_of(vllm_config, _layer_type):
    return vllm_config.compilation_config.static_forward_context


# Names the method and its helpers import at module level: bound once.
STATIC = {
    "math.lcm": symbolic_lcm,
    ".logger": _QuietLogger(),
    "vllm.v1.attention.backend.MultipleOf": MultipleOf,
    f"{ABSTRACT}.get_layers_from_vllm_config": _layers_of,
    "vllm.config.vllm.get_layers_from_vllm_config": _layers_of,
    "vllm.config.vllm.set_current_vllm_config": lambda _config: contextlib.nullcontext(),
    "vllm.utils.torch_utils.STR_DTYPE_TO_TORCH_DTYPE": {},
    "vllm.v1.kv_cache_interface.get_kv_quant_mode": lambda _dtype: None,
}


def _spec_class(name: str, page):
    """A spec class whose instances' page is `page` whatever their fields."""

    def make(**_fields):
        return StandIn(name, page_size_bytes=page)

    return make


def per_call(c: ConfigInputs) -> dict[str, object]:
    """The names the method imports inside its body, bound for one call:
    the spec classes carry this call's page sizes."""
    registry = StandIn("ModelRegistry", resolve_model_cls=lambda *_a, **_k: (_MambaModel, "model"))
    return {
        "vllm.v1.kv_cache_interface.FullAttentionSpec": _spec_class("FullAttentionSpec", c.attn_page_per_token),
        "vllm.v1.kv_cache_interface.MLAAttentionSpec": _spec_class("MLAAttentionSpec", c.attn_page_per_token),
        "vllm.v1.kv_cache_interface.MambaSpec": _spec_class("MambaSpec", c.mamba_page),
        "vllm.model_executor.models.ModelRegistry": registry,
    }


class _MambaModel:
    """The model class: one Mamba state layout (no per-layer specs), whose
    page the MambaSpec stand-in carries."""

    @staticmethod
    def get_mamba_state_shape_from_config(_config):
        return ()

    @staticmethod
    def get_mamba_state_dtype_from_config(_config):
        return ()


def _backend(role: str, kernel_min):
    return StandIn(
        role,
        customize_spec=lambda spec: spec,
        get_supported_kernel_block_sizes=lambda: [wrap(kernel_min)],
        is_ssm=lambda: False,
    )


def layers_config(alignments) -> StandIn:
    """A vllm_config whose forward context holds one Mamba layer per
    alignment (0: the layer declares none), as `get_layers_from_vllm_config`
    reads it (the stand-in `_layers_of`)."""
    layers = {
        f"mamba-layer-{i}": StandIn(f"Mamba layer {i}", get_prefill_checkpoint_alignment=lambda a=a: optional(a))
        for i, a in enumerate(alignments)
    }
    return StandIn("vllm_config", compilation_config=StandIn("compilation_config", static_forward_context=layers))


def resolution_call(c: ConfigInputs, methods=None):
    """(cls, vllm_config, backend_cls) for the method, from the model's inputs.
    `methods`: (loader, module, class) whose methods the stand-in for `cls`
    runs from the source when the method calls one it does not hold."""
    align = c.align_mode if isinstance(c.align_mode, bool) else paths.decide(c.align_mode)
    mode = "align" if align else "none"
    layer = StandIn("the Mamba layer", get_prefill_checkpoint_alignment=lambda: optional(c.checkpoint_alignment))
    config = StandIn(
        "vllm_config",
        cache_config=_CacheConfig(
            {"mamba_block_size": c.mamba_block_size, "mamba_page_size_padded": c.mamba_page_size_padded},
            cache_dtype="auto",
            block_size=c.block_size,
            mamba_cache_mode=mode,
            kv_cache_dtype_skip_layers=None,
            # Whether --mamba-block-size was given: PR457 keeps it in align mode (and releases
            # before 0.33.0 read the flag too); 0.33.0 does not read it.
            user_specified_mamba_block_size=c.explicit_mamba_block_size,
        ),
        model_config=StandIn(
            "model_config",
            dtype="auto",
            use_mla=c.use_mla,
            architecture="model",
            get_num_kv_heads=lambda _parallel: 1,
            get_head_size=lambda: 1,
        ),
        parallel_config=StandIn("parallel_config"),
        compilation_config=StandIn("compilation_config", static_forward_context={"mamba": layer}),
        # 0.34.0 reads it for the state tensors' alignment (mamba_state_alignment); the state page is
        # an input here (its alignment is models.hf_config's), so ReplaySSM is off.
        use_flashinfer_replayssm=False,
    )
    non_ssm = [_backend("a non-SSM backend", c.backend_alignment)]
    # Releases before 0.33.0 ask for a sparse indexer's block multiple: the base Platform has none (None).
    platform = StandIn(
        "the platform (cls)",
        _methods=methods,
        _find_non_ssm_backends=lambda _config: non_ssm,
        _get_indexer_block_alignment=lambda _config: None,
    )
    return platform, config, _backend("the selected backend", c.kernel_min)


class _CacheConfig(StandIn):
    """The cache config, whose optional sizes (the model's 0 is None) become
    None or a size when the method first reads them: taken at construction,
    the two forks doubled and redoubled every path of a method that mostly
    writes them."""

    def __init__(self, optional_sizes: dict[str, object], **fields: object) -> None:
        super().__init__("cache_config", **fields)
        object.__setattr__(self, "_optional", optional_sizes)

    def __getattr__(self, name: str):
        if name not in self._optional:
            return super().__getattr__(name)
        value = optional(self._optional[name])
        object.__setattr__(self, name, value)  # read, not written
        return value

    def on_exit(self, name: str) -> object:
        """The field after the call, the model's 0 for None: an unread,
        unwritten optional is the input as it came."""
        if name in self._writes or name in vars(self):
            value = getattr(self, name)
            return 0 if value is None else value
        return wrap(self._optional[name]) if name in self._optional else getattr(self, name)


def resolved(vllm_config) -> tuple:
    """(block_size, mamba_block_size, mamba_page_size_padded) after the call,
    None written as the model's 0."""
    cache = vllm_config.cache_config
    return tuple(cache.on_exit(name) for name in ("block_size", "mamba_block_size", "mamba_page_size_padded"))
