"""Stand-ins for the objects a shipped function reads: `self`, `request`,
configs. Each holds exactly the attributes it is given; reading any other
is refused by name (that is how a new input of a new vLLM release shows).
Values may be ints, bools or Z3 terms; terms are handed to the code as proxies.

A stand-in for `self` (or `cls`) may name the real class it stands for
(`_methods=(loader, module, class)`): an attribute it does not hold that is
a method of that class (or of a base class vLLM defines) is then loaded from
the source and bound to the stand-in, and runs symbolically like any other
code: a helper extracted as a method, a property. Attributes come first, so
a method the caller stands in for (one that reaches torch) keeps its stand-in.
"""

from __future__ import annotations

import types
from types import SimpleNamespace

import z3

from models.scheduler import SplitCall, SplitParams
from proofs.source import paths
from proofs.source.proxy import Unsupported, wrap


class Lazy:
    """A stand-in field computed when the function first reads it: a fork
    it takes (a Bool input read as a list's presence) is then made only on
    the paths of a function that reads the field."""

    def __init__(self, compute) -> None:
        self.compute = compute


class StandIn:
    def __init__(self, role: str, _methods=None, **fields: object) -> None:
        object.__setattr__(self, "_role", role)
        object.__setattr__(self, "_writes", {})
        object.__setattr__(self, "_methods", _methods)
        object.__setattr__(self, "_lazy", {})
        for name, value in fields.items():
            if isinstance(value, Lazy):
                self._lazy[name] = value
            else:
                object.__setattr__(self, name, wrap(value))

    def __getattr__(self, name: str):
        lazy = object.__getattribute__(self, "_lazy")
        if name in lazy:
            value = wrap(lazy.pop(name).compute())
            object.__setattr__(self, name, value)  # read, not written
            return value
        methods = object.__getattribute__(self, "_methods")
        if methods is not None and not name.startswith("__"):
            loader, module, cls = methods
            found = loader.method(module, cls, name)
            if found is not None:
                function, kind = found
                if kind == "staticmethod":
                    return function
                if kind == "property":
                    return function(self)
                return types.MethodType(function, self)  # a method, or a classmethod on `cls`
        raise Unsupported(f"the stand-in for {self._role} has no attribute {name!r}")

    def __setattr__(self, name: str, value: object) -> None:
        self._writes[name] = value
        object.__setattr__(self, name, value)

    def __repr__(self) -> str:
        return f"<stand-in for {self._role}>"


def optional(value: object) -> object:
    """The model writes vLLM's None as 0 (a size that is positive when set):
    None when the value is 0, on a path of its own when that is symbolic."""
    if isinstance(value, z3.ExprRef):
        return None if paths.decide(value == 0) else wrap(value)
    return None if value == 0 else value


def unwrap(value: object) -> object:
    """A proxy's term; anything else unchanged."""
    return getattr(value, "term", value)


# The split's `self` and `request`, built from the model's split inputs: by the
# source executor (with stand-ins) and by the conformance of the real split (plain namespaces).


def none_if_zero(value):
    return None if value == 0 else value


def _namespace(role: str, **attributes):
    return SimpleNamespace(**attributes)


def split_stand_ins(p: SplitParams, call: SplitCall, make=_namespace, unset=none_if_zero, physical_block=None, **more):
    """`self` and `request` holding exactly what `_mamba_block_aligned_split`
    reads, from the model's split inputs. `make(role, **attributes)` builds
    each object (plain namespaces here; the source executor's refuse any
    other attribute), and `unset` turns the model's 0 into vLLM's None.
    `physical_block`: cache_config.block_size when the grid is not it (a
    patched split reading the recurrent cadence); `more`: further attributes
    of the scheduler (the patched split's `mamba_block_size`, ...)."""
    scheduler = make(
        "the scheduler (self)",
        cache_config=make("cache_config", block_size=p.block if physical_block is None else physical_block),
        block_size=p.sched_block,
        hash_block_size=p.hash_block,
        max_num_scheduled_tokens=p.max_scheduled,
        scheduler_config=make("scheduler_config", long_prefill_token_threshold=p.long_prefill_threshold),
        use_eagle_block_drop=p.eagle_drop,
        num_hash_lookahead_tokens=p.lookahead,
        mamba_partial_cache_hit=p.partial_hits,
        mamba_has_prefill_checkpoint_blocks=p.checkpoint_blocks,
        mamba_prefill_checkpoint_alignment=unset(p.checkpoint_alignment),
        mamba_shared_prefix_checkpoint=p.shared_prefix,
        **more,
    )
    request = make(
        "the request",
        num_computed_tokens=call.computed,
        num_prompt_tokens=call.prompt,
        num_tokens=call.tokens,
        shared_prefix_boundary=call.junction,
    )
    return scheduler, request
