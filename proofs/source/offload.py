"""Stand-ins for what the native offload connector's lookup reads, for its hit window.

`OffloadingConnectorScheduler._lookup_complete_chunks` starts from a window, the request's tokens capped
by the load budget and the request's `max_load_tokens`, less the last token beside a recurrent group and
rounded to the recurrent chunk, and then lets each cache group narrow it to the chunks the offload tier
holds. The window is a local: what the function returns shows it when the tier holds every chunk, so
the stand-ins are an attention group of one-token chunks and, beside it or not, a recurrent (Mamba)
group of `align`-token chunks (a sliding-window group to the connector, and its `_mamba_align_size`),
each with a key for every token of the request (a recurrent group needs one per chunk; more are
never read past the window), and a tier whose two lookups find every key they are handed
(`_maximal_prefix_lookup`, `_sliding_window_lookup`: their scans over the manager are not executed).
The answer is then the window less the computed tokens, or 0 where that is less than the largest chunk.

The keys' lengths are symbolic: a `Keys` is a sequence of a symbolic length that slices as a list does
(bounds that may be negative are refused), and `len` is bound to `keyed_len` in the module.
"""

from __future__ import annotations

import builtins

import z3

from proofs.source import paths
from proofs.source.proxy import SymInt, Unsupported, term, wrap
from proofs.source.standins import StandIn

SCHEDULER = "vllm.distributed.kv_transfer.kv_connector.v1.offloading.scheduler"
QUALNAME = "OffloadingConnectorScheduler._lookup_complete_chunks"


class Keys:
    """A group's offload keys (or a request's block hashes): only their number is read."""

    def __init__(self, length) -> None:
        self.length = wrap(length)

    def __len__(self) -> int:
        if isinstance(self.length, int):
            return self.length
        raise Unsupported("len() of keys of a symbolic number outside the connector's module")

    def __getitem__(self, index):
        if not isinstance(index, slice) or index.step not in (None, 1):
            raise Unsupported("the keys read other than by a slice of step 1")
        start = 0 if index.start is None else index.start
        stop = self.length if index.stop is None else index.stop
        if all(isinstance(v, int) for v in (start, stop, self.length)):
            if start < 0 or stop < 0:
                raise Unsupported("a slice of the keys with a negative bound")
            return Keys(max(0, min(stop, self.length) - min(start, self.length)))
        s, e, n = term(start), term(stop), term(self.length)
        if paths.decide(s < 0) or paths.decide(e < 0):
            raise Unsupported("a slice of the keys with a negative bound")
        # Forks, not if-then-else terms: each path's length is then a difference of the bounds, which
        # the products by the chunk size that read it distribute over.
        high = e if paths.decide(e <= n) else n
        low = s if paths.decide(s <= n) else n
        return Keys(SymInt(high - low) if paths.decide(high > low) else 0)


def keyed_len(value):
    """`len` in the connector's module: the number of keys, symbolic or not."""
    return value.length if isinstance(value, Keys) else builtins.len(value)


def _all_found(keys, *_rest):
    """Every key handed to a lookup is in the tier: the prefix scan's count, the sliding scan's end index."""
    return keyed_len(keys)


STAND_INS = {f"{SCHEDULER}.len": keyed_len}


def lookup_call(tokens, computed, recurrent: bool, align, budget, max_load):
    """(self, req_status, max_num_new_tokens) for `_lookup_complete_chunks`; `recurrent`: the Mamba
    group is there, `budget` and `max_load` None when unset. Sizes may be proxies."""
    attention = StandIn(
        "the attention group's offload config",
        group_idx=0,
        tokens_per_chunk=1,
        is_eagle_group=False,
        sliding_window_size_in_chunks=None,
    )
    groups, states = [attention], [StandIn("the attention group's state", offload_keys=Keys(tokens))]
    if recurrent:
        groups.append(
            StandIn(
                "the Mamba group's offload config",
                group_idx=1,
                tokens_per_chunk=align,
                is_eagle_group=False,
                sliding_window_size_in_chunks=1,
                load_window_size_in_chunks=lambda _tokens: 1,
            )
        )
        states.append(StandIn("the Mamba group's state", offload_keys=Keys(tokens)))
    connector = StandIn(
        "the offload connector's scheduler",
        config=StandIn("the offload config", kv_group_configs=groups, tokens_per_hash=1),
        _lookup_groups=tuple(range(len(groups))),
        _full_attention_groups=(0,),
        _sliding_window_groups=(1,) if recurrent else (),
        _mamba_align_size=align if recurrent else None,
        use_lookahead_block_hashes=False,
        _chunks_being_loaded=None,
        _maximal_prefix_lookup=_all_found,
        _sliding_window_lookup=_all_found,
    )
    request = StandIn("the request", request_id="r", num_tokens=tokens, block_hashes=Keys(tokens))
    status = StandIn(
        "the request's offload state",
        req=request,
        req_context=None,
        num_locally_computed_tokens=computed,
        max_load_tokens=max_load,
        group_states=states,
    )
    return connector, status, budget


def multiple_facts(context, owners: set[int]) -> list[z3.BoolRef]:
    """Valid facts about the divisions the window's readings make by one divisor (the recurrent chunk),
    for deciding the lookup against the model: floor division is monotone in
    its dividend, and a multiple `q * d` divided by `d` again, or rounded up (`-(-(q * d) // d)`, vLLM's
    cdiv), is `q` exactly. The window is rounded to the chunk, then its chunks are counted (cdiv) from
    the computed tokens' chunk (a floor division): each step is linear in the quotients with these
    facts, and a nonlinear problem of its own without them."""
    divisions = context.divisions_of(owners)
    facts = []
    for x1, d1, q1, _r1 in divisions:
        for x2, d2, q2, r2 in divisions:
            if x1.eq(x2) and d1.eq(d2):
                continue
            same = z3.And(d1 == d2, d1 > 0)
            facts.append(z3.Implies(z3.And(same, x1 <= x2), q1 <= q2))
            facts.append(z3.Implies(z3.And(same, x2 == q1 * d1), z3.And(q2 == q1, r2 == 0)))
            facts.append(z3.Implies(z3.And(same, x2 == -(q1 * d1)), z3.And(q2 == -q1, r2 == 0)))
    return facts


def hit(returned):
    """0.33.0 returns the hit; 0.34.0 (the hit, the full-attention boundary)."""
    return returned[0] if isinstance(returned, tuple) else returned
