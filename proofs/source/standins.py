"""Stand-ins for the objects a shipped function reads: `self`, `request`,
configs. Each holds exactly the attributes it is given; reading any other
is refused by name (that is how a new input of a new vLLM release shows).
Values may be ints, bools or Z3 terms; terms are handed to the code as proxies."""

from __future__ import annotations

import z3

from proofs.source import paths
from proofs.source.proxy import Unsupported, wrap


class StandIn:
    def __init__(self, role: str, **fields: object) -> None:
        object.__setattr__(self, "_role", role)
        object.__setattr__(self, "_writes", {})
        for name, value in fields.items():
            object.__setattr__(self, name, wrap(value))

    def __getattr__(self, name: str):
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
