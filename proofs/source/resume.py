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

vLLM 0.34.0 has no V1 worker, so no `preprocess_mamba`: the columns a
step's Mamba kernels read a request's states from are the aligned state
indices of `MambaSpecDecodeGPUContext.compute_aligned_state_indices`, whose
Triton kernel `get_aligned_state_indices_multi_group_kernel` stores
`block_table[g][r, max((seq_len - 1) // R, 0) + s]` into
`aligned_state_indices[g, r, s]`. The launcher runs from source on a
stand-in for `self` (`aligned_call`): the context's buffers are lists, each
Mamba group's block table a `kernel.Table` (an entry records the offset it
was read at), the batch's `seq_lens` the requests' computed plus scheduled
tokens; the kernel runs from source on the `tl` stand-in
(proofs/source/kernel.py) for each program of the launcher's grid, with
the block sizes the launcher passes (32 rows, the groups' and slots' next
powers of two). Its observation is, per group, request and slot, the table
the stored entry was read from and its column, or NOT_STORED twice where
nothing was stored.
"""

from __future__ import annotations

import contextvars
import itertools
from collections import namedtuple
from dataclasses import dataclass

import z3

from models import arith, prefill
from proofs.engine.claims import Kind, Var
from proofs.source import kernel, paths
from proofs.source.proxy import SymInt, Unsupported, wrap
from proofs.source.standins import StandIn

MAMBA_UTILS = "vllm.v1.worker.mamba_utils"
MAMBA_HYBRID = "vllm.v1.worker.gpu.model_states.mamba_hybrid"
REQUESTS = ("request-0", "request-1")  # the batch, in order
LAYERS = ("mamba-layer-0", "mamba-layer-1")  # one Mamba group's layers
STATES = 2  # state tensors per layer (conv and temporal), one copy function each
COPIES = len(LAYERS) * STATES  # copies of a request's state on the scalar path
NO_COPY = -1  # the source and destination observed when no state is copied
STATE_COLUMNS_SCOPE = (
    "two requests in a batch; one Mamba group of two layers with two state tensors each; "
    "the scalar copy and the fused pre-copy"
)
# Each request's inputs: "computed", "computed2", ... (the first request's unsuffixed).
PER_REQUEST = ("computed", "scheduled", "accepted", "stale", "resumed")


def _named(stem: str, i: int) -> str:
    return stem if i == 0 else f"{stem}{i + 1}"


def _all(stem: str) -> tuple[str, ...]:
    return tuple(_named(stem, i) for i in range(len(REQUESTS)))


STATE_COLUMN_VARS = (
    *(Var(n) for n in (*_all("computed"), "spec_blocks", *_all("stale"))),
    *(Var(n, size=True) for n in (*_all("scheduled"), "cadence", *_all("accepted"))),
    *(Var(n, Kind.BOOL) for n in (*_all("resumed"), "fused")),
)


def state_columns_domain(x: dict) -> dict:
    return {
        "token counts non-negative, a chunk scheduled": arith.all_of(
            *(x[n] >= 0 for n in _all("computed")), *(x[n] >= 1 for n in _all("scheduled"))
        ),
        "block and accepted counts positive": arith.all_of(x["cadence"] >= 1, *(x[n] >= 1 for n in _all("accepted"))),
        "speculative blocks non-negative": x["spec_blocks"] >= 0,
        "a stale column is a column or none (-1)": arith.all_of(*(x[n] >= -1 for n in _all("stale"))),
    }


def _holds(flag) -> bool:
    """A Bool input's truth on this path (a fork when it is symbolic)."""
    return paths.decide(flag) if isinstance(flag, z3.BoolRef) else bool(flag)


@dataclass(frozen=True)
class Column:
    """A state column as a pointer: which side of a copy it names, of which
    request, and (a source) the accepted-token count the copy was given."""

    role: str  # "source" or "destination"
    index: object
    request: str
    accepted: object = None


class _BlockIds:
    """A request's block ids for one group: block `i` is known by its column."""

    def __init__(self, request: str) -> None:
        self.request = request

    def __getitem__(self, column):
        return ("block at column", column, self.request)


class _StateTensor:
    """One state tensor of a layer: indexed by a block, its `data_ptr()`
    names the column (and request) the block was taken from."""

    def __getitem__(self, block):
        if not (isinstance(block, tuple) and block[0] == "block at column"):
            raise Unsupported(f"a state tensor indexed by {block!r}, not by a request's block")
        return StandIn("a state block", data_ptr=lambda: Column("destination", block[1], block[2]))

    def element_size(self):
        return 1


def _copy_spec(state, block_ids, src_block_idx, num_accepted_tokens):
    """A copy function: the state is read from column `src_block_idx`, with
    the accepted-token count it was given (the bias is that minus one)."""
    if not isinstance(block_ids, _BlockIds):
        raise Unsupported("a copy function given other block ids than a request's")
    return StandIn(
        "a copy spec",
        start_addr=Column("source", src_block_idx, block_ids.request, num_accepted_tokens),
        num_elements=1,
    )


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


# Per request, the observation: (recorded column, accepted count after, copies made), then
# COPIES entries (source column, destination column, bias), unused ones NO_ENTRY.
NO_ENTRY = (NO_COPY, NO_COPY, 0)


@dataclass
class PreprocessCall:
    """One call of `preprocess_mamba`'s stand-ins, and what it recorded."""

    arguments: dict
    state_index: dict
    copy_buffers: StandIn
    accepted: list  # the batch's num_accepted_tokens_cpu, as the call left it
    fused: object  # the align context's buffers, or None on the scalar path

    def observed(self) -> tuple:
        """Every request's observation, in batch order (see NO_ENTRY)."""
        out = []
        for i, request in enumerate(REQUESTS):
            if request not in self.state_index:
                raise Unsupported(f"preprocess_mamba recorded no state column for {request}")
            entries = self._fused_entry(i) if self.fused is not None else self._copies_of(request)
            count = len(entries) if self.fused is None else (0 if _is(entries[0][0], NO_COPY) else 1)
            if len(entries) > COPIES:
                raise Unsupported(f"{len(entries)} copies of {request}'s state, more than its {COPIES} tensors")
            entries = entries + [NO_ENTRY] * (COPIES - len(entries))
            out += [self.state_index[request], self.accepted[i], count, *(v for e in entries for v in e)]
        return tuple(out)

    def _fused_entry(self, i: int) -> list:
        sent = self.fused.precopy_src_col_buf.sent, self.fused.mamba_state_idx_buf.sent
        bias = self.fused.precopy_token_bias_buf.sent
        if sent[0] is None or sent[1] is None or bias is None:
            raise Unsupported("the fused path never sent its columns to the GPU")
        source = sent[0][i]
        return [(NO_COPY if _is(source, NO_COPY) else source, sent[1][i], bias[i])]

    def _copies_of(self, request: str) -> list:
        sources, destinations = self.copy_buffers.src_ptrs.sent, self.copy_buffers.dst_ptrs.sent
        if sources is None:
            return []
        entries = []
        for source, destination in zip(sources, destinations, strict=True):
            if not (isinstance(source, Column) and isinstance(destination, Column)):
                raise Unsupported("a copy whose pointers are not a state's")
            if source.request != destination.request:
                raise Unsupported(f"a copy from {source.request}'s state into {destination.request}'s")
            if source.request == request:
                entries.append((source.index, destination.index, source.accepted - 1))
        return entries


def _is(value, constant: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value == constant


def preprocess_call(x: dict) -> PreprocessCall:
    """The arguments of `preprocess_mamba` for a batch of REQUESTS, request i
    at `computed` (suffixed for i > 0) scheduled `scheduled` more. `resumed`:
    it comes back from preemption with a stale entry (`stale`) in the
    state-index map, which the function must drop; otherwise it is new (no
    entry). `fused`: the V1 fused pre-copy path (an align context) instead
    of the scalar copy."""
    state_index = {}
    resumed_ids = set()
    for i, request in enumerate(REQUESTS):
        if _holds(x[_named("resumed", i)]):
            state_index[request] = wrap(x[_named("stale", i)])
            resumed_ids.add(request)
    spec = _MambaSpec(x["cadence"], x["spec_blocks"])
    room = 4 * len(REQUESTS) * COPIES
    copy_buffers = StandIn(
        "the copy buffers",
        src_ptrs=_Buffer(room),
        dst_ptrs=_Buffer(room),
        sizes=_Buffer(room),
        mamba_group_ids=[0],
        mamba_spec=spec,
        offset=0,
    )
    align = None
    if _holds(x["fused"]):
        align = StandIn(
            "the align context",
            is_initialized=True,
            mamba_state_idx_buf=_Buffer(len(REQUESTS)),
            precopy_src_col_buf=_Buffer(len(REQUESTS)),
            precopy_token_bias_buf=_Buffer(len(REQUESTS)),
            run_fused_precopy=_no_kernel,
        )
    accepted = [wrap(x[_named("accepted", i)]) for i in range(len(REQUESTS))]
    arguments = {
        "scheduler_output": StandIn(
            "the scheduler output",
            finished_req_ids=set(),
            preempted_req_ids=None,
            scheduled_cached_reqs=StandIn("the cached requests", resumed_req_ids=resumed_ids),
            num_scheduled_tokens={r: wrap(x[_named("scheduled", i)]) for i, r in enumerate(REQUESTS)},
        ),
        "kv_cache_config": StandIn(
            "the KV cache config",
            kv_cache_groups=[StandIn("the Mamba group", layer_names=list(LAYERS), kv_cache_spec=spec)],
        ),
        "cache_config": StandIn("the cache config", enable_prefix_caching=True),
        "mamba_state_idx": state_index,
        "input_batch": StandIn("the input batch", req_ids=list(REQUESTS), num_accepted_tokens_cpu=accepted),
        "requests": {
            r: StandIn(
                f"the state of {r}", num_computed_tokens=wrap(x[_named("computed", i)]), block_ids=[_BlockIds(r)]
            )
            for i, r in enumerate(REQUESTS)
        },
        "forward_context": {
            layer: StandIn(f"the Mamba layer {layer}", kv_cache=[_StateTensor() for _ in range(STATES)])
            for layer in LAYERS
        },
        "mamba_state_copy_funcs": {"mamba": [_copy_spec] * STATES},
        "copy_bufs": copy_buffers,
        "align_ctx": align,
    }
    return PreprocessCall(arguments, state_index, copy_buffers, accepted, align)


class _Tensor:
    """A GPU tensor indexed by a concrete request slot: `fill_` records."""

    def __init__(self) -> None:
        self.filled: dict = {}

    def __getitem__(self, slot):
        return StandIn("a tensor element", fill_=lambda value: self.filled.__setitem__(slot, value))


SLOT = 0  # the request's slot in the V2 worker's per-request tensors
NOT_RESET = -2  # the accepted count observed when add_request leaves it as it was


def add_request_call(computed, cadence, block, methods=None):
    """`self` and the new request's data for `add_request` in align mode:
    `cadence` is `cache_config.mamba_block_size`, `block` its `block_size`
    (the attention block, the minimum over the prefix-cacheable groups).
    `super()` is the parent's `add_request`, which records the call."""
    parent_calls = []
    _parent.set(StandIn("the parent model state", add_request=lambda *args: parent_calls.append(args)))
    state_columns = _Tensor()
    accepted = _Tensor()
    model_state = StandIn(
        "the hybrid model state",
        _methods=methods,
        num_accepted_tokens_gpu=accepted,
        _align_mode=True,
        cache_config=StandIn("the cache config", mamba_block_size=cadence, block_size=block),
        _mamba_state_idx_gpu=state_columns,
    )
    data = StandIn("the new request's data", num_computed_tokens=computed)

    def seeded():
        """(the seeded state column, the accepted count it resets; -2 if none)."""
        if len(parent_calls) != 1:
            raise Unsupported(f"add_request called its parent {len(parent_calls)} times")
        if SLOT not in state_columns.filled:
            raise Unsupported("add_request seeded no state column")
        return state_columns.filled[SLOT], accepted.filled.get(SLOT, NOT_RESET)

    return (model_state, SLOT, data), seeded


_parent: contextvars.ContextVar[StandIn | None] = contextvars.ContextVar("gridproof_parent", default=None)


def _super(*args):
    """`super()` in `add_request`: the parent of the call being built."""
    parent = _parent.get()
    if args or parent is None:
        raise Unsupported("super() other than add_request's, with no arguments")
    return parent


def expected_state_columns(variant, x: dict) -> tuple:
    """What the model says `preprocess_mamba` observes, request by request:
    the state is read from `initial_state_column` and kept in
    `state_column` after the chunk; it is copied between the two, with the
    accepted-token bias (accepted - 1, section 5) and the accepted count
    reset to 1, unless there is none yet (-1) or it is already in place.
    The scalar path copies every state tensor of every layer; the fused path
    records one pre-copy per request, its destination the running column
    whether it copies or not, and a bias of 0 when it does not."""
    fused = x["fused"]
    out = []
    for i in range(len(REQUESTS)):
        computed, accepted = x[_named("computed", i)], x[_named("accepted", i)]
        initial = prefill.initial_state_column(variant, computed, x["cadence"])
        column = prefill.state_column(computed + x[_named("scheduled", i)], x["cadence"])
        moved = arith.all_of(initial != -1, initial != column)
        copy = (initial, column, accepted - 1)
        entry = tuple(arith.ite(moved, a, b) for a, b in zip(copy, NO_ENTRY, strict=True))
        first = (entry[0], arith.ite(fused, column, entry[1]), entry[2])
        rest = tuple(arith.ite(fused, b, a) for a, b in zip(entry, NO_ENTRY, strict=True))
        count = arith.ite(moved, arith.ite(fused, 1, COPIES), 0)
        out += [column, arith.ite(moved, 1, accepted), count, *first, *(rest * (COPIES - 1))]
    return tuple(out)


def expected_advance(x: dict) -> tuple:
    """What the model says the V2 step kernel observes: the source column is
    the state's column before the step, read with the bias accepted - 1, the
    column after the chunk is `state_column`, and the accepted count is
    reset to 1 when the state moves to another column."""
    column = prefill.state_column(x["computed"] + x["scheduled"], x["cadence"])
    moved = arith.all_of(x["previous"] >= 0, x["previous"] != column)
    return (x["previous"], column, x["accepted"] - 1, arith.ite(moved, 1, x["accepted"]))


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
    source_offset = [None]  # the accepted-token bias
    accepted_count = [kernel.lane(accepted)]
    memories = (
        [0],  # idx_mapping: batch row 0 is request slot 0
        state_index,
        [kernel.lane(computed)],
        [
            kernel.lane(batch_offset),
            kernel.lane(batch_offset) + kernel.lane(scheduled),
        ],  # query_start_loc, at batch row 0
        accepted_count,
        source_column,
        source_offset,
    )
    launch = Launch(
        tuple(kernel.Pointer(m) for m in memories) + (1,),
        {"BLOCK_SIZE": 1, "MAMBA_BLOCK_SIZE": kernel.lane(cadence)},
    )

    def observed():
        if source_column[0] is None or source_offset[0] is None:
            raise Unsupported("the kernel stored no source column or offset")
        stored = (source_column[0], state_index[0], source_offset[0], accepted_count[0])
        return tuple(kernel.value_of(v) for v in stored)

    return launch, observed


# vLLM 0.34.0's aligned state indices (compute_aligned_state_indices and its Triton kernel).
ALIGNED = "MambaSpecDecodeGPUContext.compute_aligned_state_indices"
ALIGNED_KERNEL = "get_aligned_state_indices_multi_group_kernel"
PREPROCESS = "preprocess_mamba"
GROUPS = 2  # Mamba groups in the launch
SLOTS = 2  # state slots per request: the running block and one speculative block (concrete: a tensor shape)
MAX_REQUESTS = 4  # the persistent output's rows (max_num_reqs) and the batch's seq_lens length
TABLE_STRIDE = 8  # a block table row's length (block_table_stride_req); flat offsets decode by it
NOT_STORED = -1  # the table and column observed where the kernel stored no table entry
ALIGNED_SCOPE = (
    f"two requests in a batch; {GROUPS} Mamba groups; {SLOTS} state slots (one speculative block); "
    "the launcher's 32-row program"
)


class _DeviceTensor(kernel.Pointer):
    """A GPU tensor handed to the launcher: its base pointer, its shape and
    strides; a slice of it is a view from the same base."""

    def __init__(self, memory, shape, strides) -> None:
        super().__init__(memory)
        self.shape = shape
        self.strides = strides
        self.is_cuda, self.is_xpu = True, False

    def stride(self, dim):
        return self.strides[dim]

    def __getitem__(self, _key):
        return self


def aligned_stand_ins(loader) -> dict:
    """The launcher's globals: the kernel, run from source for each program of its grid, and `triton`."""
    return {
        f"{MAMBA_UTILS}.{ALIGNED_KERNEL}": kernel.Jit(
            lambda: loader.load(MAMBA_UTILS, ALIGNED_KERNEL, kernel=True).function
        ),
        f"{MAMBA_UTILS}.triton": kernel.Triton,
    }


def aligned_call(x: dict, methods=None):
    """`compute_aligned_state_indices(self, seq_lens, num_reqs)` for the batch of REQUESTS, request i's
    sequence `computed + scheduled` (suffixed for i > 0), every group's Mamba block `cadence`.
    Returns the arguments and a function reading the observation (see `aligned_columns`)."""
    tables = [kernel.Table(f"the block table of Mamba group {g}") for g in range(GROUPS)]
    seq_lens = [kernel.lane(x[_named("computed", i)] + x[_named("scheduled", i)]) for i in range(len(REQUESTS))]
    seq_lens += [kernel.lane(0)] * (MAX_REQUESTS - len(seq_lens))
    strides = (MAX_REQUESTS * SLOTS, SLOTS, 1)
    output = [None] * (GROUPS * MAX_REQUESTS * SLOTS)
    context = StandIn(
        "the Mamba GPU context",
        _methods=methods,
        is_initialized=True,
        aligned_state_indices=_DeviceTensor(output, (GROUPS, MAX_REQUESTS, SLOTS), strides),
        aligned_index_block_table_ptrs=kernel.Pointer([kernel.Address(t) for t in tables]),
        block_table_stride_req=TABLE_STRIDE,
        block_size=kernel.lane(x["cadence"]),
        num_groups=GROUPS,
    )
    arguments = (context, _DeviceTensor(seq_lens, (MAX_REQUESTS,), (1,)), len(REQUESTS))

    def observed() -> tuple:
        out = []
        for g in range(GROUPS):
            for r in range(len(REQUESTS)):
                for slot in range(SLOTS):
                    stored = output[g * strides[0] + r * strides[1] + slot * strides[2]]
                    if isinstance(stored, kernel.Read):
                        column = stored.offset - r * TABLE_STRIDE
                        out += [tables.index(stored.table), kernel.value_of(column)]
                    else:
                        out += [NOT_STORED, NOT_STORED]
        return tuple(out)

    return arguments, observed


def expected_aligned_columns(x: dict) -> tuple:
    """What the model says the aligned state indices are: for each group, request and slot, that
    group's table at the column after the chunk (`state_column`), plus the slot."""
    out = []
    for g in range(GROUPS):
        for i in range(len(REQUESTS)):
            column = prefill.state_column(x[_named("computed", i)] + x[_named("scheduled", i)], x["cadence"])
            for slot in range(SLOTS):
                out += [g, column + slot]
    return tuple(out)


def expected_columns(variant, x: dict) -> dict:
    """The model's observation of each reading: 0.33.0's `preprocess_mamba`, 0.34.0's aligned indices."""
    return {PREPROCESS: expected_state_columns(variant, x), ALIGNED: expected_aligned_columns(x)}


COMMON_SCOPE = "what both observe, each request's column after the chunk (the aligned indices' first group and slot)"
PER_REQUEST_OBSERVED = 3 + 3 * COPIES  # preprocess_mamba's observation of one request


def running_columns(reading: str, observed: tuple) -> tuple:
    """What both readings observe: each request's column after the chunk (the running block): the
    column `preprocess_mamba` records, the first group's first slot of the aligned indices."""
    if reading == PREPROCESS:
        return tuple(observed[i * PER_REQUEST_OBSERVED] for i in range(len(REQUESTS)))
    return tuple(observed[(i * SLOTS) * 2 + 1] for i in range(len(REQUESTS)))
