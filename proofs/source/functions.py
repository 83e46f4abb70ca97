"""The shipped functions, each called with the model function's arguments.

`ShippedFunctions(loader)` loads them from one vLLM source; each method takes
what the model's counterpart in models/ takes and builds the stand-ins vLLM's
code reads, so a theorem or an equivalence reads either one the same way.
"""

from __future__ import annotations

import functools
import inspect
import math
import operator

from models.arith import is_symbolic
from models.config import ConfigInputs
from models.scheduler import SplitCall, SplitParams
from models.variants import BASELINE, Variant
from proofs.source import connector as connector_standins
from proofs.source import groups, offload, platform, resume
from proofs.source.loader import LoadedFunction, Loader
from proofs.source.proxy import Unsupported, term
from proofs.source.reading import symbolic_or_concrete
from proofs.source.standins import Lazy, StandIn, optional, split_stand_ins

SCHEDULER = "vllm.v1.core.sched.scheduler"
KV_CACHE_INTERFACE = "vllm.v1.kv_cache_interface"
KV_CACHE_UTILS = groups.KV_CACHE_UTILS
PLATFORM = "vllm.platforms.interface"
CONFIG = "vllm.config.vllm"
MAMBA_LAYER_UTILS = "vllm.model_executor.layers.mamba.mamba_utils"
BACKEND = "vllm.v1.attention.backend"
CACHE_CONFIG = "vllm.config.cache"
ABSTRACT = platform.ABSTRACT
# The classes whose methods a stand-in for `self` (or `cls`) runs from the
# source when the function calls one the stand-in does not hold.
SCHEDULER_CLASS = (SCHEDULER, "Scheduler")
PLATFORM_CLASS = (PLATFORM, "Platform")


def _symbolic(*values) -> bool:
    return is_symbolic(*values)


class ShippedFunctions:
    """`variant`: whose stand-ins the functions get where variants differ in
    what vLLM hands them (the split's grid: cache_config.block_size for
    0.33.0, the scheduler's Mamba block size for PR457)."""

    def __init__(self, loader: Loader, variant: Variant = BASELINE) -> None:
        self.loader = loader
        self.variant = variant
        loader.stand_ins.update(platform.STATIC)
        loader.stand_ins.update(resume.STAND_INS)
        loader.stand_ins.update(groups.STAND_INS)
        loader.stand_ins.update(PURE)
        loader.stand_ins.update(offload.STAND_INS)
        loader.stand_ins.update(resume.aligned_stand_ins(loader))
        self._loaded: dict[str, LoadedFunction] = {}

    def target(self, name: str) -> tuple[str, str]:
        """Where this source defines the function: TARGETS' place, else a later release's (RENAMED)."""
        for module, qualname in (TARGETS[name], *RENAMED.get(name, ())):
            if self.loader.has_function(module, qualname):
                return module, qualname
        return TARGETS[name]

    def loaded(self, name: str) -> LoadedFunction:
        if name not in self._loaded:
            module, qualname = self.target(name)
            self._loaded[name] = self.loader.load(module, qualname, kernel=name in KERNELS)
        return self._loaded[name]

    def _call(self, name: str, symbolic: bool, make_call, value=term, lemmas=None):
        function = self.loaded(name).function
        from proofs.source.equivalence import current_domain

        run = lambda: make_call(function)  # noqa: E731
        return symbolic_or_concrete(
            run, self.loader.files, symbolic, value=value, domain=current_domain(), lemmas=lemmas
        )

    def checkpoint_position(self, num_tokens, block, drop_eagle_block, lookahead=0):
        return self._call(
            "checkpoint_position",
            _symbolic(num_tokens, block, drop_eagle_block, lookahead),
            lambda f: f(
                *_proxies(num_tokens, block, drop_eagle_block),
                **_accepted(f, num_hash_lookahead_tokens=_proxies(lookahead)[0]),
            ),
        )

    def checkpoint_valid(self, query_start, query_end, position, hash_block, cadence, alignment):
        def call(f):
            qs, qe, cp, h, r = _proxies(query_start, query_end, position, hash_block, cadence)
            return f(
                query_start=qs,
                query_end=qe,
                checkpoint_position=cp,
                hash_block_size=h,
                mamba_block_size=r,
                checkpoint_alignment=optional(alignment),
            )

        return self._call(
            "checkpoint_valid", _symbolic(query_start, query_end, position, hash_block, cadence, alignment), call
        )

    def split(self, p: SplitParams, call: SplitCall, unread_block=None):
        """`Scheduler._mamba_block_aligned_split` with `self` and `request`
        stand-ins holding what it reads: the scheduler's block sizes, budget and flags, and the
        request's token counts and shared-prefix boundary. The grid the
        variant splits on is `p.block`: cache_config.block_size (0.33.0) or
        the scheduler's `mamba_block_size` (PR457); the other one holds
        `unread_block` (`p.block` when None), which the variant's split must
        not read. The scheduler's `mamba_eagle_group_spans` are `p.eagle_spans`
        when they are annotated, else none. A method of the real Scheduler
        the split calls on `self` runs from the source."""
        other = p.block if unread_block is None else unread_block

        def run(f):
            on_cadence = self.variant.splits_on_cadence
            physical, cadence = (other, p.block) if on_cadence else (p.block, other)
            scheduler, request = split_stand_ins(
                p,
                call,
                self._with_methods(SCHEDULER_CLASS),
                optional,
                physical_block=physical,
                mamba_block_size=cadence,
                mamba_eagle_group_spans=Lazy(lambda: _proxies(*p.eagle_spans) if _holds(p.eagle_annotated) else ()),
            )
            n, local, external = _proxies(call.requested, call.local_hit, call.external_hit)
            return f(scheduler, request, n, local, external)

        values = (*vars(p).values(), *vars(call).values(), other)
        return self._call("split", _symbolic(*values), run)

    def _with_methods(self, owner):
        """A stand-in maker whose `self` runs `owner`'s methods from the source."""
        module, cls = owner

        def make(role, **fields):
            if role.startswith("the scheduler"):
                return StandIn(role, _methods=(self.loader, module, cls), **fields)
            return StandIn(role, **fields)

        return make

    def block_size_resolution(self, c: ConfigInputs):
        """`Platform._align_hybrid_block_size` on stand-ins for the configs,
        the backends, the spec classes and the model class
        (proofs/source/platform.py): (block_size, mamba_block_size,
        mamba_page_size_padded) after it, None as 0."""

        def run(f):
            self.loader.stand_ins.update(platform.per_call(c))
            cls, vllm_config, backend = platform.resolution_call(c, methods=(self.loader, *PLATFORM_CLASS))
            f(cls, vllm_config, backend)
            return platform.resolved(vllm_config)

        def value(resolved):
            return tuple(term(v) for v in resolved)

        symbolic = _symbolic(*vars(c).values())
        lemmas = platform.page_lemmas(c) if symbolic else None
        return self._call("block_size_resolution", symbolic, run, value, lemmas)

    def state_columns(self, x: dict):
        """`preprocess_mamba` for a batch of two requests (proofs/source/resume.py):
        per request, the recorded state column, the accepted count after it,
        and every copy (source, destination, bias). Where the release has no
        `preprocess_mamba` (0.34.0): `compute_aligned_state_indices` and its
        Triton kernel, per group, request and slot, the table and column of
        the stored entry (`state_columns_reading` says which)."""

        def run(f):
            if self.state_columns_reading() == resume.ALIGNED:
                methods = (self.loader, resume.MAMBA_UTILS, "MambaSpecDecodeGPUContext")
                arguments, observed = resume.aligned_call(x, methods=methods)
                f(*arguments)
                return observed()
            call = resume.preprocess_call(x)
            f(**call.arguments)
            return call.observed()

        values = tuple(x[v.name] for v in resume.STATE_COLUMN_VARS)
        return self._call("state_columns", _symbolic(*values), run, value=lambda v: tuple(term(x) for x in v))

    def state_columns_reading(self) -> str:
        """Which function computes the state columns in this source: resume.PREPROCESS or resume.ALIGNED."""
        return self.target("state_columns")[1]

    def seeded_state_column(self, computed, cadence, block):
        """`MambaHybridModelState.add_request` in align mode: the column it
        seeds a request added at `computed` with, and the accepted-token count
        it resets in the request's slot."""

        def run(f):
            methods = (self.loader, resume.MAMBA_HYBRID, "MambaHybridModelState")
            arguments, seeded = resume.add_request_call(*_proxies(computed, cadence, block), methods=methods)
            f(*arguments)
            return seeded()

        return self._call(
            "seeded_state_column", _symbolic(computed, cadence, block), run, value=lambda v: tuple(term(x) for x in v)
        )

    def advanced_state_column(self, computed, scheduled, cadence, previous, accepted, batch_offset):
        """`preprocess_mamba_align_fused_kernel`, the V2 worker's step, for a
        request at `computed` scheduled `scheduled` tokens (from `batch_offset`
        in the batch) whose state is in column `previous`: (the copy's source
        column, the column after the chunk, the copy's bias, the accepted
        count after the step)."""

        def run(f):
            launch, observed = resume.kernel_call(computed, scheduled, cadence, previous, accepted, batch_offset)
            f(*launch.args, **launch.kwargs)
            return observed()

        values = (computed, scheduled, cadence, previous, accepted, batch_offset)
        return self._call("advanced_state_column", _symbolic(*values), run, value=lambda v: tuple(map(term, v)))

    def start_block(self, kernel_min):
        """`AttentionBackend.get_preferred_block_size` of a backend whose kernels take any multiple of
        `kernel_min` (one `MultipleOf`), asked for the release's `CacheConfig.DEFAULT_BLOCK_SIZE`, read
        from its source (vllm/config/cache.py): the block `_align_hybrid_block_size` starts from when
        --block-size is unset. The backend's `supports_block_size` runs from the source."""
        default = self.loader.class_constant(CACHE_CONFIG, "CacheConfig", "DEFAULT_BLOCK_SIZE")

        def run(f):
            sizes = [platform.MultipleOf(_proxies(kernel_min)[0])]
            backend = StandIn(
                "the attention backend",
                _methods=(self.loader, BACKEND, "AttentionBackend"),
                get_supported_kernel_block_sizes=lambda: sizes,
            )
            return f(backend, default)

        return self._call("start_block", _symbolic(kernel_min), run)

    def offload_hit_window(self, tokens, computed, recurrent, align, bounded, budget, limited, max_load):
        """`OffloadingConnectorScheduler._lookup_complete_chunks` for a request of `tokens` tokens,
        `computed` of them on the GPU, with a load budget (`max_num_new_tokens`) when `bounded` and a
        `max_load_tokens` when `limited`, beside a Mamba group of `align`-token chunks when `recurrent`,
        over an offload tier that holds every chunk (proofs/source/offload.py): the tokens it loads."""

        def run(f):
            n, c, a, b, m = _proxies(tokens, computed, align, budget, max_load)
            with_mamba = _holds(recurrent)
            call = offload.lookup_call(
                n, c, with_mamba, a, b if _holds(bounded) else None, m if _holds(limited) else None
            )
            return offload.hit(f(*call))

        values = (tokens, computed, recurrent, align, bounded, budget, limited, max_load)
        return self._call("offload_hit_window", _symbolic(*values), run)

    def hash_lookahead(self, speculating, drop, lookahead_hashes, prefix_caching, connector, native, lookahead):
        """The config's `num_hash_lookahead_tokens` (0.33.0's property of VllmConfig, 0.34.0's
        `_resolve_num_hash_lookahead_tokens`) for a drafter or none (`speculating`) with EAGLE's block drop
        or not, its lookahead hashes disabled or not, prefix caching on or off, and a KV connector or
        none: the native OffloadingConnector (`native`) or another. The connector class's
        `supports_lookahead_block_hashes` runs from the source (proofs/source/connector.py); the
        drafter's `num_prefill_lookahead_tokens` is `lookahead`."""

        def run(f):
            (tokens,) = _proxies(lookahead)
            spec = None
            if _holds(speculating):  # each other flag forks where it is read, not before
                spec = StandIn(
                    "the speculative config",
                    use_eagle_block_drop=lambda: _holds(drop),
                    disable_lookahead_block_hashes=Lazy(lambda: not _holds(lookahead_hashes)),
                )
            transfer = None
            if _holds(connector):
                transfer = connector_standins.transfer_config(_holds(native))
            caching = Lazy(lambda: _holds(prefix_caching))
            vllm_config = StandIn(
                "the vLLM config",
                speculative_config=spec,
                cache_config=StandIn("the cache config", enable_prefix_caching=caching),
                kv_transfer_config=transfer,
                num_prefill_lookahead_tokens=tokens,
            )
            self.loader.stand_ins.update(connector_standins.stand_ins(self.loader))
            return f(vllm_config)

        values = (speculating, drop, lookahead_hashes, prefix_caching, connector, native, lookahead)
        return self._call("hash_lookahead", _symbolic(*values), run)

    def mamba_state_bytes(self, state, state2, replayssm):
        """`MambaSpec.state_content_size_bytes` of a Mamba spec of two states of `state` and `state2` bytes
        (one-byte elements), whose `state_alignment` is what the layer hands it: the release's
        `mamba_state_alignment(vllm_config)` run from the source (0.34.0: 16 bytes under FlashInfer's
        ReplaySSM, `replayssm`), none (1) where the release has no such function."""

        def run(f):
            a, b = _proxies(state, state2)
            alignment = 1
            if self.loader.has_function(MAMBA_LAYER_UTILS, "mamba_state_alignment"):
                config = StandIn("the vLLM config", use_flashinfer_replayssm=Lazy(lambda: _holds(replayssm)))
                alignment = self.loader.load(MAMBA_LAYER_UTILS, "mamba_state_alignment").function(config)
            spec = StandIn("the Mamba spec", shapes=((a,), (b,)), dtypes=(1, 1), state_alignment=alignment)
            return f(spec)

        return self._call("mamba_state_bytes", _symbolic(state, state2, replayssm), run)

    def checkpoint_alignment(self, alignments):
        """`get_mamba_prefill_checkpoint_alignment` over one Mamba layer per
        alignment (0 for a layer that declares none): the lcm, None as 0."""

        def run(f):
            alignment = f(platform.layers_config(alignments))
            return 0 if alignment is None else alignment

        return self._call("checkpoint_alignment", _symbolic(*alignments), run)

    def recurrent_cadence(self, mamba_blocks, attention_block, draft_block):
        """PR457's `get_mamba_recurrent_block_size` over a target-attention
        group, the Mamba groups (one per block size) and an annotated draft
        group, in that order but the draft second: the lcm of the Mamba groups' blocks."""

        def run(f):
            specs = [
                groups.group(groups.FullAttentionSpec(attention_block, dcp_sharded=True), "target"),
                groups.group(groups.FullAttentionSpec(draft_block, is_draft=True), "draft", eagle=True),
                *(groups.group(groups.MambaSpec(b), f"mamba-{i}") for i, b in enumerate(mamba_blocks)),
            ]
            cadence = f(specs)
            return 0 if cadence is None else cadence

        return self._call("recurrent_cadence", _symbolic(*mamba_blocks, attention_block, draft_block), run)

    def eagle_spans(self, dcp, target, drafts, mamba_block, mamba_annotated):
        """PR457's `get_eagle_group_block_spans`: `target` is (block, sharded),
        each draft (block, sharded, annotated); a Mamba group annotated or
        not. The spans as (count, span, span, ...), padded with 0 to one
        entry per draft."""

        def run(f):
            specs = [groups.group(groups.FullAttentionSpec(target[0], dcp_sharded=target[1]), "target")]
            for i, (block, sharded, annotated) in enumerate(drafts):
                spec = groups.FullAttentionSpec(block, dcp_sharded=sharded, is_draft=True)
                specs.append(groups.group(spec, f"draft-{i}", eagle=annotated))
            specs.append(groups.group(groups.MambaSpec(mamba_block), "mamba", eagle=mamba_annotated))
            spans = f(specs, _proxies(dcp)[0])
            if not isinstance(spans, tuple):
                raise Unsupported(f"the spans came as a {type(spans).__name__}, not a tuple")
            if len(spans) > len(drafts):
                return (len(spans), *spans[: len(drafts)])
            return (len(spans), *spans, *([0] * (len(drafts) - len(spans))))

        flat = [dcp, *target, mamba_block, mamba_annotated, *(v for d in drafts for v in d)]
        return self._call("eagle_spans", _symbolic(*flat), run, value=lambda v: tuple(term(x) for x in v))

    def last_cacheable_position(self, tokens, block, drop, lookahead, spans, annotated):
        """PR457's `get_mamba_last_cacheable_position`, handed the annotated
        EAGLE groups' spans when `annotated`, else none (as the scheduler
        holds them)."""

        def run(f):
            given = tuple(_proxies(*spans)) if (annotated if isinstance(annotated, bool) else _holds(annotated)) else ()
            n, r, d, look = _proxies(tokens, block, drop, lookahead)
            return f(n, r, d, num_hash_lookahead_tokens=look, eagle_group_block_spans=given)

        return self._call("last_cacheable_position", _symbolic(tokens, block, drop, lookahead, *spans, annotated), run)

    def configuration_check(self, cadence, dcp, targets, drafts, mamba_block):
        """pr457-guarded's `check_mamba_checkpoint_cadence` over target
        groups (block, sharded), draft groups (block, sharded, annotated) and
        a Mamba group: True when it accepts, False when it refuses with a
        ValueError (its answer, not a crash)."""

        def run(f):
            specs = [
                groups.group(groups.FullAttentionSpec(b, dcp_sharded=s), f"target-{i}")
                for i, (b, s) in enumerate(targets)
            ]
            specs.append(groups.group(groups.MambaSpec(mamba_block), "mamba"))
            for i, (block, sharded, annotated) in enumerate(drafts):
                spec = groups.FullAttentionSpec(block, dcp_sharded=sharded, is_draft=True)
                specs.append(groups.group(spec, f"draft-{i}", eagle=annotated))
            r, d = _proxies(cadence, dcp)
            try:
                f(specs, r, d)
            except ValueError:
                return False
            return True

        flat = [cadence, dcp, mamba_block, *(v for t in targets for v in t), *(v for d in drafts for v in d)]
        return self._call("configuration_check", _symbolic(*flat), run)


def _holds(flag) -> bool:
    """A Bool input's truth on this path (a fork when it is symbolic)."""
    from proofs.source import paths

    return paths.decide(flag) if not isinstance(flag, bool) else flag


def _accepted(function, **keywords):
    """The keywords `function` takes: an input an older release's function
    lacks is not passed (a difference it makes shows as a counterexample)."""
    parameters = inspect.signature(function).parameters
    return {k: v for k, v in keywords.items() if k in parameters}


def _proxies(*values):
    from proofs.source.proxy import wrap

    return tuple(wrap(v) for v in values)


# Pure functions of the standard library a rewrite may call, bound as
# themselves: they compute with the proxies' own operators.
PURE = {
    "functools.reduce": functools.reduce,
    "math.prod": math.prod,
    "operator.add": operator.add,
    "operator.mul": operator.mul,
    "operator.floordiv": operator.floordiv,
    "operator.mod": operator.mod,
    "typing.cast": lambda _type, value: value,
    # A dtype stands in as its element size (mamba_state_bytes: one-byte elements).
    "vllm.utils.torch_utils.get_dtype_size": lambda dtype: dtype,
}

# name -> (module, qualified name) in vLLM's source
TARGETS = {
    "split": (SCHEDULER, "Scheduler._mamba_block_aligned_split"),
    "checkpoint_position": (KV_CACHE_INTERFACE, "get_mamba_prefill_checkpoint_position"),
    "checkpoint_valid": (KV_CACHE_INTERFACE, "is_mamba_prefill_checkpoint_valid"),
    "block_size_resolution": (PLATFORM, "Platform._align_hybrid_block_size"),
    "state_columns": (resume.MAMBA_UTILS, "preprocess_mamba"),
    "seeded_state_column": (resume.MAMBA_HYBRID, "MambaHybridModelState.add_request"),
    "advanced_state_column": (resume.MAMBA_UTILS, "preprocess_mamba_align_fused_kernel"),
    "checkpoint_alignment": (ABSTRACT, "get_mamba_prefill_checkpoint_alignment"),
    "start_block": (BACKEND, "AttentionBackend.get_preferred_block_size"),
    "offload_hit_window": (offload.SCHEDULER, offload.QUALNAME),
    "hash_lookahead": (CONFIG, "VllmConfig.num_hash_lookahead_tokens"),
    "mamba_state_bytes": (KV_CACHE_INTERFACE, "MambaSpec.state_content_size_bytes"),
    # PR457's functions (patches/vllm-0.33.0/)
    "recurrent_cadence": (KV_CACHE_UTILS, "get_mamba_recurrent_block_size"),
    "eagle_spans": (KV_CACHE_UTILS, "get_eagle_group_block_spans"),
    "last_cacheable_position": (KV_CACHE_INTERFACE, "get_mamba_last_cacheable_position"),
    "configuration_check": (KV_CACHE_UTILS, "check_mamba_checkpoint_cadence"),
}
# name -> later places of the function, where a release moved it (tried in order when TARGETS' is absent)
RENAMED = {
    "hash_lookahead": ((CONFIG, "VllmConfig._resolve_num_hash_lookahead_tokens"),),
    # 0.34.0 has no V1 worker: the state columns are the aligned indices its Triton kernel stores
    "state_columns": ((resume.MAMBA_UTILS, resume.ALIGNED),),
}
KERNELS = {"advanced_state_column"}  # Triton kernels, run as Python (proofs/source/kernel.py)
