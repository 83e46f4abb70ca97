"""The shipped functions, each called with the model function's arguments.

`ShippedFunctions(loader)` loads them from one vLLM source; each method takes
what the model's counterpart in models/ takes and builds the stand-ins vLLM's
code reads, so a theorem or an equivalence reads either one the same way.
"""

from __future__ import annotations

import inspect

from models.arith import is_symbolic
from models.config import ConfigInputs
from models.scheduler import SplitCall, SplitParams
from proofs.real_vllm.split import split_stand_ins
from proofs.source import platform, resume
from proofs.source.loader import LoadedFunction, Loader
from proofs.source.proxy import term
from proofs.source.reading import symbolic_or_concrete
from proofs.source.standins import StandIn, optional

SCHEDULER = "vllm.v1.core.sched.scheduler"
KV_CACHE_INTERFACE = "vllm.v1.kv_cache_interface"
PLATFORM = "vllm.platforms.interface"


def _symbolic(*values) -> bool:
    return is_symbolic(*values)


class ShippedFunctions:
    def __init__(self, loader: Loader) -> None:
        self.loader = loader
        loader.stand_ins.update(platform.STATIC)
        loader.stand_ins.update(resume.STAND_INS)
        self._loaded: dict[str, LoadedFunction] = {}

    def loaded(self, name: str) -> LoadedFunction:
        if name not in self._loaded:
            module, qualname = TARGETS[name]
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

    def split(self, p: SplitParams, call: SplitCall):
        """`Scheduler._mamba_block_aligned_split` with `self` and `request`
        stand-ins holding what it reads: the scheduler's block sizes, budget and flags, and the
        request's token counts and shared-prefix boundary."""

        def run(f):
            scheduler, request = split_stand_ins(p, call, StandIn, optional)
            n, local, external = _proxies(call.requested, call.local_hit, call.external_hit)
            return f(scheduler, request, n, local, external)

        values = (*vars(p).values(), *vars(call).values())
        return self._call("split", _symbolic(*values), run)

    def block_size_resolution(self, c: ConfigInputs):
        """`Platform._align_hybrid_block_size` on stand-ins for the configs,
        the backends, the spec classes and the model class
        (proofs/source/platform.py): (block_size, mamba_block_size,
        mamba_page_size_padded) after it, None as 0."""

        def run(f):
            self.loader.stand_ins.update(platform.per_call(c))
            cls, vllm_config, backend = platform.resolution_call(c)
            f(cls, vllm_config, backend)
            return platform.resolved(vllm_config)

        def value(resolved):
            return tuple(term(v) for v in resolved)

        symbolic = _symbolic(*vars(c).values())
        lemmas = platform.page_lemmas(c) if symbolic else None
        return self._call("block_size_resolution", symbolic, run, value, lemmas)

    def state_columns(self, computed, scheduled, cadence, spec_blocks, accepted, stale, resumed, fused):
        """`preprocess_mamba` for one request (proofs/source/resume.py):
        (copy source, copy destination, recorded state column)."""

        def run(f):
            call = resume.preprocess_call(computed, scheduled, cadence, spec_blocks, accepted, stale, resumed, fused)
            f(**call.arguments)
            return call.observed()

        values = (computed, scheduled, cadence, spec_blocks, accepted, stale, resumed, fused)
        return self._call("state_columns", _symbolic(*values), run, value=lambda v: tuple(term(x) for x in v))

    def seeded_state_column(self, computed, cadence, block):
        """`MambaHybridModelState.add_request` in align mode: the column it
        seeds a request added at `computed` with."""

        def run(f):
            arguments, seeded = resume.add_request_call(*_proxies(computed, cadence, block))
            f(*arguments)
            return seeded()

        return self._call("seeded_state_column", _symbolic(computed, cadence, block), run)

    def advanced_state_column(self, computed, scheduled, cadence, previous, accepted, batch_offset):
        """`preprocess_mamba_align_fused_kernel`, the V2 worker's step, for a
        request at `computed` scheduled `scheduled` tokens (from `batch_offset`
        in the batch) whose state is in column `previous`: (the copy's source
        column, the column after the chunk)."""

        def run(f):
            launch, observed = resume.kernel_call(computed, scheduled, cadence, previous, accepted, batch_offset)
            f(*launch.args, **launch.kwargs)
            return observed()

        values = (computed, scheduled, cadence, previous, accepted, batch_offset)
        return self._call("advanced_state_column", _symbolic(*values), run, value=lambda v: tuple(map(term, v)))


def _accepted(function, **keywords):
    """The keywords `function` takes: an input an older release's function
    lacks is not passed (a difference it makes shows as a counterexample)."""
    parameters = inspect.signature(function).parameters
    return {k: v for k, v in keywords.items() if k in parameters}


def _proxies(*values):
    from proofs.source.proxy import wrap

    return tuple(wrap(v) for v in values)


# name -> (module, qualified name) in vLLM's source
TARGETS = {
    "split": (SCHEDULER, "Scheduler._mamba_block_aligned_split"),
    "checkpoint_position": (KV_CACHE_INTERFACE, "get_mamba_prefill_checkpoint_position"),
    "checkpoint_valid": (KV_CACHE_INTERFACE, "is_mamba_prefill_checkpoint_valid"),
    "block_size_resolution": (PLATFORM, "Platform._align_hybrid_block_size"),
    "state_columns": (resume.MAMBA_UTILS, "preprocess_mamba"),
    "seeded_state_column": (resume.MAMBA_HYBRID, "MambaHybridModelState.add_request"),
    "advanced_state_column": (resume.MAMBA_UTILS, "preprocess_mamba_align_fused_kernel"),
}
KERNELS = {"advanced_state_column"}  # Triton kernels, run as Python (proofs/source/kernel.py)
