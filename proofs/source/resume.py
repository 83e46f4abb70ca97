"""The state columns of a resumed request, read from vLLM's worker code.

Three functions place a request's recurrent state:

- `preprocess_mamba` (v1/worker/mamba_utils.py, the V1 worker) computes the
  column the request's state is read from, `(c - 1) // R` for a new or
  resumed request, and the column it is kept in after the step's chunk,
  `cdiv(c + n, R) - 1`, and queues a copy between the two;
- `MambaHybridModelState.add_request` (v1/worker/gpu/model_states/
  mamba_hybrid.py, the V2 worker) seeds the running column of a request
  added at `c` with `(c - 1) // R`;
- the V2 worker's Triton kernel `preprocess_mamba_align_fused_kernel`
  (v1/worker/mamba_utils.py) copies from that column and advances it to
  `(c + n + R - 1) // R - 1` on the GPU: run as Python for one program of
  one lane (proofs/source/kernel.py), on lists standing for its buffers.

The first two run whole, from source, on stand-ins that record where a state is read
from and written to. The batch holds one request in a concrete one-element
list (`REQUEST`); its token counts, the block size, the speculative blocks and
the accepted-token count are symbolic. What the worker hands to torch or to
a kernel is intercepted here, recording the index it was given:

- the copy functions (`mamba_state_copy_funcs`) return a copy spec whose
  source names the column they were asked to read; a state tensor indexed by a
  block names the column the block was taken from (`data_ptr()`);
- `batch_memcpy` and the fused pre-copy kernel launch do nothing: what they
  would copy is what the buffers hold when they are sent (`copy_to_gpu`);
- `int()` of a symbolic element of `num_accepted_tokens_cpu` is the same
  integer (a numpy int made a Python int), not a concretisation;
- `super()` in `add_request` is the parent's `add_request`, recorded.

The rest (the copy loop over groups, layers and states, the stale-entry
cleanup, the fused-path bundle, `cdiv`) is vLLM's own code, executed.
"""

from __future__ import annotations

import contextvars
import itertools
from collections import namedtuple
from dataclasses import dataclass

import z3

from models import arith, prefill
from proofs.source import kernel, paths
from proofs.source.proxy import SymInt, Unsupported, wrap
from proofs.source.standins import StandIn

MAMBA_UTILS = "vllm.v1.worker.mamba_utils"
MAMBA_HYBRID = "vllm.v1.worker.gpu.model_states.mamba_hybrid"
REQUEST = "request-0"
LAYER = "mamba-layer-0"
NO_COPY = -1  # the source and destination observed when no state is copied


def _holds(flag) -> bool:
    """A Bool input's truth on this path (a fork when it is symbolic)."""
    return paths.decide(flag) if isinstance(flag, z3.BoolRef) else bool(flag)


@dataclass(frozen=True)
class Column:
    """A state column as a pointer: which side of a copy it names."""

    role: str  # "source" or "destination"
    index: object


class _BlockIds:
    """A request's block ids for one group: block `i` is known by its column."""

    def __getitem__(self, column):
        return ("block at column", column)


class _StateTensor:
    """One state tensor of a layer: indexed by a block, its `data_ptr()`
    names the column the block was taken from."""

    def __getitem__(self, block):
        if not (isinstance(block, tuple) and block[0] == "block at column"):
            raise Unsupported(f"a state tensor indexed by {block!r}, not by a request's block")
        return StandIn("a state block", data_ptr=lambda: Column("destination", block[1]))

    def element_size(self):
        return 1


def _copy_spec(state, block_ids, src_block_idx, num_accepted_tokens):
    """A copy function: the state is read from column `src_block_idx`."""
    return StandIn("a copy spec", start_addr=Column("source", src_block_idx), num_elements=1)


class _Array:
    """A numpy array of a CPU/GPU buffer: item and concrete-slice writes."""

    def __init__(self, size: int, fill: object = 0) -> None:
        self.items = [fill] * size

    def __setitem__(self, key, value):
        if isinstance(key, slice):
            for i in range(*key.indices(len(self.items))):
                self.items[i] = value
        else:
            self.items[key] = value

    def __getitem__(self, key):
        return self.items[key]


class _Buffer:
    """A CpuGpuBuffer: `copy_to_gpu(n)` sends the first n items."""

    def __init__(self, size: int, fill: object = 0) -> None:
        self.np = _Array(size, fill)
        self.gpu = "gpu tensor"
        self.sent: list | None = None

    def copy_to_gpu(self, n=None):
        self.sent = list(self.np.items[:n])
        return self.gpu


def _no_kernel(*_args, **_kwargs):
    """`batch_memcpy` and the fused pre-copy launch: the copy they would do
    is what the buffers sent."""


def _integer(value=0, *rest):
    """`int()`: a symbolic integer is that integer already."""
    return value if isinstance(value, SymInt) and not rest else int(value, *rest)


class _MambaSpec:
    """The class `_get_mamba_spec_for_layer` checks a layer's spec against."""

    def __init__(self, block_size, num_speculative_blocks) -> None:
        self.block_size = wrap(block_size)
        self.num_speculative_blocks = wrap(num_speculative_blocks)
        self.mamba_type = "mamba"


class _UniformTypeSpecs:
    """Never an instance: each layer group holds its `MambaSpec` itself."""


STAND_INS = {
    f"{MAMBA_UTILS}.batch_memcpy": _no_kernel,
    f"{MAMBA_UTILS}.int": _integer,
    f"{MAMBA_UTILS}.MambaSpec": _MambaSpec,
    f"{MAMBA_UTILS}.UniformTypeKVCacheSpecs": _UniformTypeSpecs,
    f"{MAMBA_UTILS}._FusedPrecopy": namedtuple("_FusedPrecopy", "ctx state_idx src_col token_bias"),
    "itertools.chain": itertools.chain,
    f"{MAMBA_HYBRID}.super": lambda *args: _super(*args),
    f"{MAMBA_UTILS}.tl": kernel.Language,
}


@dataclass
class PreprocessCall:
    """One call of `preprocess_mamba`'s stand-ins, and what it recorded."""

    arguments: dict
    state_index: dict
    copy_buffers: StandIn
    fused: object  # the align context's buffers, or None on the scalar path

    def observed(self) -> tuple:
        """(copy source, copy destination, recorded state column); the copy
        columns are NO_COPY when no state is copied."""
        recorded = self.state_index[REQUEST]
        if self.fused is not None:
            source = self.fused.precopy_src_col_buf.sent
            destination = self.fused.mamba_state_idx_buf.sent
            if source is None or destination is None:
                raise Unsupported("the fused path never sent its columns to the GPU")
            # The kernel copies from a column >= 0 into the running column.
            copies = source[0] != NO_COPY
            return (source[0], destination[0], recorded) if copies else (NO_COPY, NO_COPY, recorded)
        sent = self.copy_buffers.src_ptrs.sent, self.copy_buffers.dst_ptrs.sent
        if sent[0] is None:
            return (NO_COPY, NO_COPY, recorded)
        (source,), (destination,) = sent  # one group, one layer, one state: one copy
        return (source.index, destination.index, recorded)


def preprocess_call(computed, scheduled, cadence, spec_blocks, accepted, stale, resumed, fused) -> PreprocessCall:
    """The arguments of `preprocess_mamba` for one request that has
    `computed` tokens and is scheduled `scheduled` more. `resumed`: it comes
    back from preemption with a stale entry (`stale`) in the state-index map,
    which the function must drop; otherwise it is new (no entry).
    `fused`: the V1 fused pre-copy path (an align context) instead of the
    scalar copy."""
    is_resumed = _holds(resumed)
    state_index = {REQUEST: wrap(stale)} if is_resumed else {}
    spec = _MambaSpec(cadence, spec_blocks)
    copy_buffers = StandIn(
        "the copy buffers",
        src_ptrs=_Buffer(4),
        dst_ptrs=_Buffer(4),
        sizes=_Buffer(4),
        mamba_group_ids=[0],
        mamba_spec=spec,
        offset=0,
    )
    align = None
    if _holds(fused):
        align = StandIn(
            "the align context",
            is_initialized=True,
            mamba_state_idx_buf=_Buffer(1),
            precopy_src_col_buf=_Buffer(1),
            precopy_token_bias_buf=_Buffer(1),
            run_fused_precopy=_no_kernel,
        )
    arguments = {
        "scheduler_output": StandIn(
            "the scheduler output",
            finished_req_ids=set(),
            preempted_req_ids=None,
            scheduled_cached_reqs=StandIn("the cached requests", resumed_req_ids={REQUEST} if is_resumed else set()),
            num_scheduled_tokens={REQUEST: wrap(scheduled)},
        ),
        "kv_cache_config": StandIn(
            "the KV cache config",
            kv_cache_groups=[StandIn("the Mamba group", layer_names=[LAYER], kv_cache_spec=spec)],
        ),
        "cache_config": StandIn("the cache config", enable_prefix_caching=True),
        "mamba_state_idx": state_index,
        "input_batch": StandIn("the input batch", req_ids=[REQUEST], num_accepted_tokens_cpu=[wrap(accepted)]),
        "requests": {
            REQUEST: StandIn("the request state", num_computed_tokens=wrap(computed), block_ids=[_BlockIds()])
        },
        "forward_context": {LAYER: StandIn("the Mamba layer", kv_cache=[_StateTensor()])},
        "mamba_state_copy_funcs": {"mamba": [_copy_spec]},
        "copy_bufs": copy_buffers,
        "align_ctx": align,
    }
    return PreprocessCall(arguments, state_index, copy_buffers, align)


class _Tensor:
    """A GPU tensor indexed by a concrete request slot: `fill_` records."""

    def __init__(self) -> None:
        self.filled: dict = {}

    def __getitem__(self, slot):
        return StandIn("a tensor element", fill_=lambda value: self.filled.__setitem__(slot, value))


SLOT = 0  # the request's slot in the V2 worker's per-request tensors


def add_request_call(computed, cadence, block):
    """`self` and the new request's data for `add_request` in align mode:
    `cadence` is `cache_config.mamba_block_size`, `block` its `block_size`
    (the attention block, the minimum over the prefix-cacheable groups).
    `super()` is the parent's `add_request`, which records the call."""
    parent_calls = []
    _parent.set(StandIn("the parent model state", add_request=lambda *args: parent_calls.append(args)))
    state_columns = _Tensor()
    model_state = StandIn(
        "the hybrid model state",
        num_accepted_tokens_gpu=_Tensor(),
        _align_mode=True,
        cache_config=StandIn("the cache config", mamba_block_size=cadence, block_size=block),
        _mamba_state_idx_gpu=state_columns,
    )
    data = StandIn("the new request's data", num_computed_tokens=computed)

    def seeded():
        if len(parent_calls) != 1:
            raise Unsupported(f"add_request called its parent {len(parent_calls)} times")
        if SLOT not in state_columns.filled:
            raise Unsupported("add_request seeded no state column")
        return state_columns.filled[SLOT]

    return (model_state, SLOT, data), seeded


_parent: contextvars.ContextVar[StandIn | None] = contextvars.ContextVar("gridproof_parent", default=None)


def _super(*args):
    """`super()` in `add_request`: the parent of the call being built."""
    parent = _parent.get()
    if args or parent is None:
        raise Unsupported("super() other than add_request's, with no arguments")
    return parent


def expected_state_columns(variant, computed, scheduled, cadence) -> tuple:
    """What the model says `preprocess_mamba` observes: the state is read
    from `initial_state_column` and kept in `state_column` after the chunk;
    it is copied between the two unless there is none yet (-1) or it is
    already in place."""
    initial = prefill.initial_state_column(variant, computed, cadence)
    column = prefill.state_column(computed + scheduled, cadence)
    moved = arith.all_of(initial != -1, initial != column)
    return (arith.ite(moved, initial, NO_COPY), arith.ite(moved, column, NO_COPY), column)


@dataclass
class Launch:
    args: tuple
    kwargs: dict


def kernel_call(computed, scheduled, cadence, previous, accepted, batch_offset):
    """The V2 step kernel's arguments for one request in slot 0, its state in
    column `previous`, its chunk at `batch_offset` in the batch's tokens,
    launched as one program of one lane (BLOCK_SIZE 1; `preprocess_state`
    launches 256 lanes, masked beyond the batch).
    Returns the launch and a function reading (source column, new column)."""
    state_index = [kernel.lane(previous)]
    source_column = [None]
    memories = (
        [0],  # idx_mapping: batch row 0 is request slot 0
        state_index,
        [kernel.lane(computed)],
        [
            kernel.lane(batch_offset),
            kernel.lane(batch_offset) + kernel.lane(scheduled),
        ],  # query_start_loc, at batch row 0
        [kernel.lane(accepted)],
        source_column,
        [None],  # the source offset (the accepted-token bias)
    )
    launch = Launch(
        tuple(kernel.Pointer(m) for m in memories) + (1,),
        {"BLOCK_SIZE": 1, "MAMBA_BLOCK_SIZE": kernel.lane(cadence)},
    )

    def observed():
        if source_column[0] is None:
            raise Unsupported("the kernel stored no source column")
        return (kernel.value_of(source_column[0]), kernel.value_of(state_index[0]))

    return launch, observed
