"""`min` and `max` for the shipped code's symbolic values: the builtins the
loader installs (proofs/source/loader.py). With a symbolic argument they
build an if-then-else term (models.arith's minimum and maximum) instead of
forking at each comparison; over a Guarded list (a filtered generator whose
filter is symbolic, proofs/source/merge.py) they take the best value
present. Built on the proxies (proofs/source/proxy.py) and merge's Guarded
lists; merge builds on the proxies, and neither imports this module.
"""

from __future__ import annotations

import z3

from models import arith
from proofs.source import paths
from proofs.source.merge import Guarded
from proofs.source.proxy import SymBool, SymInt, term, wrap


def extreme_of_guarded(guarded: Guarded, pick_smaller: bool, default: object, has_default: bool):
    """min/max over a Guarded list: the best present value, or the default."""
    present: z3.BoolRef = z3.BoolVal(False)
    best = None
    for condition, value in guarded.items:
        g = z3.BoolVal(True) if condition is True else condition.term
        v = term(value)
        if best is None:
            best, present = v, g
            continue
        better = v < best if pick_smaller else v > best
        best = z3.If(z3.And(g, z3.Or(z3.Not(present), better)), v, best)
        present = z3.Or(present, g)
    if best is not None and has_default:
        return wrap(z3.If(present, best, term(default)))
    # Without a default, Python raises when nothing is present: fork on it.
    if best is None or not paths.decide(present):
        if has_default:
            return default
        raise ValueError(f"{'min' if pick_smaller else 'max'}() arg is an empty sequence")
    return wrap(best)


def _merged(values: list, pick_smaller: bool):
    result = values[0]
    for value in values[1:]:
        if pick_smaller:
            result = arith.minimum(term(result), term(value))
        else:
            result = arith.maximum(term(result), term(value))
    return wrap(result)


def _extreme(builtin, pick_smaller: bool):
    """`min`/`max` that build an if-then-else term when an argument is
    symbolic, instead of forking at each comparison. `key=` falls back to
    the builtin (which compares, and so forks)."""

    def extreme(*args, **kwargs):
        if "key" in kwargs or not args:
            return builtin(*args, **kwargs)
        if len(args) == 1 and isinstance(args[0], Guarded):
            return extreme_of_guarded(args[0], pick_smaller, kwargs.get("default"), "default" in kwargs)
        values = list(args[0]) if len(args) == 1 else list(args)
        if not values:
            if "default" in kwargs:
                return kwargs["default"]
            return builtin(values)  # the builtin's own ValueError
        if not any(isinstance(v, (SymInt, SymBool)) for v in values):
            return builtin(values)
        return _merged(values, pick_smaller)

    extreme.__name__ = builtin.__name__
    return extreme


symbolic_min = _extreme(min, pick_smaller=True)
symbolic_max = _extreme(max, pick_smaller=False)
