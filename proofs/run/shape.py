"""A small declarative check of a JSON document's shape, so every field a
rendering reads is known to hold the kind of value it expects, and a damaged
file is refused with the field's path in plain words instead of a traceback
deep in a renderer.

A shape is one of: a kind name (`"int"`, `"number"`, `"str"`, `"bool"`,
`"any"`), `Optional(shape)` (null allowed), `ListOf(shape)`, `MapOf(shape)`
(an object with any keys) or `Fields({name: shape}, optional={...})` (an
object with these keys; others are allowed and not read).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from models.errors import GridproofError


class ShapeError(GridproofError):
    """A document whose field holds the wrong kind of value."""


@dataclass(frozen=True)
class Optional:
    shape: object


@dataclass(frozen=True)
class ListOf:
    shape: object


@dataclass(frozen=True)
class MapOf:
    shape: object


@dataclass(frozen=True)
class Fields:
    required: dict
    optional: dict = field(default_factory=dict)


_KINDS = {
    "int": ("an integer", lambda v: isinstance(v, int) and not isinstance(v, bool)),
    "number": ("a number", lambda v: isinstance(v, int | float) and not isinstance(v, bool)),
    "str": ("a string", lambda v: isinstance(v, str)),
    "bool": ("true or false", lambda v: isinstance(v, bool)),
    # A counterexample's values: an input's integer or flag, or an enumerated case's name (its geometry).
    "scalar": ("an integer, true/false or a name", lambda v: isinstance(v, int | str)),
    "any": ("anything", lambda v: True),
}


def check_shape(value, shape, where: str = "") -> None:
    """Raise ShapeError naming the first field (as `path[i].name`, empty for the whole document) that
    does not fit."""
    if isinstance(shape, Optional):
        if value is not None:
            check_shape(value, shape.shape, where)
        return
    if isinstance(shape, ListOf):
        _expect(value, isinstance(value, list), "a list", where)
        for i, item in enumerate(value):
            check_shape(item, shape.shape, f"{where}[{i}]")
        return
    if isinstance(shape, MapOf):
        _expect(value, isinstance(value, dict), "an object", where)
        for key, item in value.items():
            check_shape(item, shape.shape, _field(where, key))
        return
    if isinstance(shape, Fields):
        _expect(value, isinstance(value, dict), "an object", where)
        missing = [name for name in shape.required if name not in value]
        if missing:
            raise ShapeError(f"{where or 'the document'}: missing {', '.join(missing)}")
        for name, inner in (shape.required | shape.optional).items():
            if name in value:
                check_shape(value[name], inner, _field(where, name))
        return
    description, fits = _KINDS[shape]
    _expect(value, fits(value), description, where)


def _expect(value, fits: bool, description: str, where: str) -> None:
    if not fits:
        raise ShapeError(f"{where or 'the document'}: expected {description}, got {_shown(value)}")


def _field(where: str, name) -> str:
    return f"{where}.{name}" if where else str(name)


def _shown(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
