"""A bounded theorem on the geometry files' validation (models.geometry): a
field that no engine function can use is refused, naming the field, and
every usable value is kept as written.

The rules are stated here, by field, as a reviewer would read them from the
engine: a size is a divisor or a block and must be at least 1, a count may
be 0, a flag is a TOML boolean, and the group kinds exclude the
combinations vLLM cannot build. They are not read from the loader's own
tables, so a rule weakened there is seen.
"""

from __future__ import annotations

import copy
from dataclasses import fields

from models.geometry import CacheGroup, Deployment, GeometryError, Request, parse_geometry
from models.variants import Variant
from proofs.catalog.base import Theorem
from proofs.engine.enumerated import Case, Checks, Enumeration, Verdict

SIZES = {
    "deployment": (
        "dcp_size",
        "block_size",
        "max_num_scheduled_tokens",
        "hash_block_size",
        "mamba_block_size",
        "prefill_checkpoint_alignment",
        "offload_blocks_per_chunk",
        "scheduler_token_budget",
    ),
    "group": ("block_size", "count"),
    "request": ("prompt_tokens",),
}
COUNTS = {
    "deployment": (
        "long_prefill_token_threshold",
        "hash_lookahead_tokens",
        "prefix_cache_retention_interval",
        "prefill_lookahead_tokens",
    ),
    "group": (),
    "request": ("output_tokens",),
}
FLAGS = {
    "deployment": ("eagle_block_drop", "shared_prefix_checkpoint"),
    "group": ("dcp_sharded", "eagle"),
    "request": (),
}
REQUIRED = {
    "deployment": ("dcp_size", "block_size", "max_num_scheduled_tokens"),
    "group": ("kind", "block_size"),
    "request": ("prompt_tokens",),
}
DATACLASSES = {"deployment": Deployment, "group": CacheGroup, "request": Request}

# A flag that makes a group of this kind one vLLM cannot build.
IMPOSSIBLE_FLAGS = {"recurrent": ("dcp_sharded", "eagle"), "target-attention": ("eagle",)}

# Every field set, one group of each kind, so that each rule has a field to act on, and a second target group
# with the other DCP sharding, so that a rule read only for one sharding (an EAGLE target group refused only
# when sharded) has an edit that shows it.
BASE = {
    "name": "every-field",
    "deployment": {
        "dcp_size": 2,
        "block_size": 16,
        "max_num_scheduled_tokens": 48,
        "long_prefill_token_threshold": 24,
        "eagle_block_drop": True,
        "hash_lookahead_tokens": 1,
        "hash_block_size": 16,
        "mamba_block_size": 64,
        "prefill_checkpoint_alignment": 32,
        "shared_prefix_checkpoint": True,
        "offload_blocks_per_chunk": 2,
        "prefix_cache_retention_interval": 128,
        "prefill_lookahead_tokens": 1,
        "scheduler_token_budget": 64,
    },
    "groups": [
        {"kind": "target-attention", "block_size": 16, "dcp_sharded": True, "eagle": False, "count": 2},
        {"kind": "target-attention", "block_size": 8, "dcp_sharded": False, "eagle": False, "count": 1},
        {"kind": "recurrent", "block_size": 32, "dcp_sharded": False, "eagle": False, "count": 3},
        {"kind": "draft-attention", "block_size": 16, "dcp_sharded": True, "eagle": True, "count": 1},
    ],
    "request": {"prompt_tokens": 100, "output_tokens": 5},
}
NOT_INTEGERS = (True, "8", 8.5)
NOT_FLAGS = (1, "true")
ABSENT = None  # the edit removes the field (TOML has no null, so no file writes None)


def _tables():
    """(path, table kind, the table in BASE's groups as a kind, or None)."""
    yield "deployment", "deployment", None
    for i, group in enumerate(BASE["groups"]):
        yield f"groups[{i}]", "group", group["kind"]
    yield "request", "request", None


def _edit(table: str, key: str, value: object, refused: str | None) -> Case:
    """One edit of BASE: `key` of `table` set to `value` (ABSENT: removed), or for table "groups" every
    group of kind `key` removed; `refused` names the field or table the refusal must name, None when the
    edit is accepted."""
    return {"table": table, "field": key, "value": value, "refused": refused}


def _cases(_variant: Variant):
    for table, kind, group_kind in _tables():
        named = f"{table}.{{}}"
        for key in SIZES[kind]:
            yield from (_edit(table, key, v, named.format(key)) for v in (0, -1, *NOT_INTEGERS))
            yield _edit(table, key, 1, None)
        for key in COUNTS[kind]:
            yield from (_edit(table, key, v, named.format(key)) for v in (-1, *NOT_INTEGERS))
            yield _edit(table, key, 0, None)
        for key in FLAGS[kind]:
            yield from (_edit(table, key, v, named.format(key)) for v in NOT_FLAGS)
            impossible = key in IMPOSSIBLE_FLAGS.get(group_kind, ())
            yield _edit(table, key, True, named.format(key) if impossible else None)
            yield _edit(table, key, False, None)
        for key in _every_field(kind):
            yield _edit(table, key, ABSENT, named.format(key) if key in REQUIRED[kind] else None)
        yield _edit(table, "unknown", 1, named.format("unknown"))
        if kind == "group":
            yield _edit(table, "kind", "attention", named.format("kind"))
    for kind in ("target-attention", "recurrent"):
        yield _edit("groups", kind, ABSENT, "groups")
    yield _edit("groups", "draft-attention", ABSENT, None)
    yield _edit("", "groups", [], "groups")
    for not_a_list in ({"kind": "recurrent", "block_size": 16}, "recurrent"):
        yield _edit("", "groups", not_a_list, "groups")
    for section in ("deployment", "groups", "request"):
        yield _edit("", section, ABSENT, section)
    yield _edit("", "unknown", 1, "unknown")
    yield {"table": "rules"}


def _every_field_ruled(checks: Checks) -> Verdict:
    """The rules name every field the loader can fill, so that a field added without one is seen."""
    for kind, dataclass in DATACLASSES.items():
        ruled = {*SIZES[kind], *COUNTS[kind], *FLAGS[kind], *(("kind",) if kind == "group" else ())}
        unruled = [name for name in _every_field(kind) if name not in ruled]
        if checks.fails("every field ruled", not unruled):
            return checks.verdict(f"{dataclass.__name__}: no rule for {', '.join(unruled)}", exercised=False)
    return checks.verdict(exercised=False)


def _every_field(kind: str) -> tuple[str, ...]:
    return tuple(f.name for f in fields(DATACLASSES[kind]))


def _edited(case: Case) -> dict:
    data = copy.deepcopy(BASE)
    table, key, value = case["table"], case["field"], case["value"]
    if table == "groups":  # every group of the kind `key` removed
        data["groups"] = [g for g in data["groups"] if g["kind"] != key]
        return data
    holder = data
    if table.startswith("groups["):
        holder = data["groups"][int(table[len("groups[") : -1])]
    elif table:
        holder = data[table]
    if value is ABSENT:
        del holder[key]
    else:
        holder[key] = value
    return data


def _kept(checks: Checks, data: dict, geometry) -> str | None:
    """The first field whose loaded value is not the one written (or its default when absent)."""
    if checks.differ("every group loaded", len(geometry.groups), len(data["groups"])):
        return f"groups: {len(data['groups'])} written, {len(geometry.groups)} loaded"
    groups = zip(data["groups"], geometry.groups, strict=True)
    tables = [("deployment", "deployment", data["deployment"], geometry.deployment)]
    tables += [(f"groups[{i}]", "group", written, loaded) for i, (written, loaded) in enumerate(groups)]
    tables.append(("request", "request", data["request"], geometry.request))
    for where, kind, written, loaded in tables:
        for f in fields(DATACLASSES[kind]):
            want = written.get(f.name, f.default)
            if checks.differ(f"loaded as written: {kind}.{f.name}", getattr(loaded, f.name), want):
                return f"{where}.{f.name}: written {want!r}, loaded {getattr(loaded, f.name)!r}"
    request = geometry.request
    if checks.differ("num_tokens", request.num_tokens, request.prompt_tokens + request.output_tokens):
        return f"request: num_tokens {request.num_tokens}, not prompt_tokens + output_tokens"
    return None


def refuses_what_no_engine_can_use(_variant: Variant, case: Case) -> Verdict:
    """parse_geometry on BASE with one edit: refused with a message that starts with the named field or
    table when the case says so, else accepted with every field as written."""
    checks = Checks()
    if case["table"] == "rules":
        return _every_field_ruled(checks)
    data = _edited(case)
    refused = case["refused"]
    try:
        geometry = parse_geometry(data, name="edited")
    except GeometryError as error:
        message = str(error)
        if checks.fails("a usable edit accepted", refused is not None):
            return checks.verdict(f"refused a usable geometry: {message}", exercised=False)
        if checks.fails("the refusal names the field", message.startswith(f"{refused}:")):
            return checks.verdict(f"refused, but the message does not start with {refused!r}: {message}")
        return checks.verdict()
    if checks.fails("an unusable edit refused", refused is None):
        return checks.verdict(f"accepted; {refused} should have been refused")
    return checks.verdict(_kept(checks, data, geometry), exercised=False)


def _domain() -> str:
    return (
        "one geometry table with every field set, two target-attention groups (one DCP-sharded, one not), a "
        "recurrent and a draft-attention group (proofs/catalog/geometry.py BASE), and each single edit of it: "
        "every size set to 0, -1, true, '8' and 8.5 (refused) and to 1 (accepted); every count to -1 and the "
        "same non-integers (refused) and to 0 (accepted); every flag to 1 and 'true' (refused), true and "
        "false; every field removed; an unknown field in each table and at the top; an unknown group kind; "
        "every group of one kind removed, every group removed, groups given as a table and as a string, and "
        "each section removed"
    )


THEOREMS = (
    Theorem(
        "geometry-refuses-unusable",
        "geometry",
        "Bounded, by enumeration: parse_geometry refuses, with one message that starts with the field or table "
        "it names, every size below 1 (dcp_size, block sizes, max_num_scheduled_tokens, hash_block_size, "
        "mamba_block_size, prefill_checkpoint_alignment, offload_blocks_per_chunk, scheduler_token_budget, "
        "a group's count, prompt_tokens), every count below 0 (long_prefill_token_threshold, hash_lookahead_tokens, "
        "prefix_cache_retention_interval, prefill_lookahead_tokens, output_tokens), any size or count that is "
        'not an integer (a boolean included; a retention interval may also be "dense"), any flag that is not a '
        "boolean, a missing required field, an unknown field or group kind, a recurrent group that is "
        "DCP-sharded or EAGLE, an EAGLE target-attention group, and a deployment without a target-attention or "
        "a recurrent group, or groups that are not a list of tables; every other edit is accepted with every "
        "field loaded as written (its default when absent) and the request's num_tokens its prompt and output "
        "tokens; and every field of Deployment, CacheGroup and Request is one the rules name.",
        (),
        enumeration=Enumeration(_domain(), _cases, refuses_what_no_engine_can_use, "a refused edit"),
    ),
)
