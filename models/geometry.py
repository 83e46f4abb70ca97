"""Cache groups, deployments and requests, and the geometry files that hold them.

A geometry file is TOML (see models/geometries/). Loading validates every field
and raises `GeometryError` with one line naming the field and the problem.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from models import arith
from models.errors import GridproofError
from models.files import read_user_text

# vLLM's model runner holds a request's scheduled tokens in int32 arrays (gpu_model_runner.py:5552):
# `check` reads no token count or size of a deployment larger.
MAX_TOKENS = 2**31 - 1

BUILTIN_DIR = Path(__file__).parent / "geometries"

TARGET = "target-attention"
RECURRENT = "recurrent"
DRAFT = "draft-attention"
GROUP_KINDS = (TARGET, RECURRENT, DRAFT)


class GeometryError(GridproofError):
    """A geometry file or value that cannot be used; the message is one line."""


@dataclass(frozen=True)
class CacheGroup:
    kind: str
    block_size: int  # tokens per block on one rank
    dcp_sharded: bool = False
    eagle: bool = False  # annotated as an EAGLE draft group (is_eagle_group)
    count: int = 1

    def span(self, dcp_size):
        """Tokens one block id covers: block_size x DCP if sharded (vLLM eff()).
        Fields and `dcp_size` may be Z3 terms (the catalogue's symbolic groups)."""
        if self.dcp_sharded is False:
            return self.block_size  # no `x * 1` term for the solver to see through
        return self.block_size * arith.ite(self.dcp_sharded, dcp_size, 1)


@dataclass(frozen=True)
class Deployment:
    dcp_size: int
    block_size: int  # the physical attention block, after config resolution
    max_num_scheduled_tokens: int
    long_prefill_token_threshold: int = 0
    eagle_block_drop: bool = False
    hash_lookahead_tokens: int = 0
    hash_block_size: int = 0  # 0: the gcd of the prefix-cacheable group spans
    mamba_block_size: int | None = None  # an explicit --mamba-block-size
    prefill_checkpoint_alignment: int | None = None  # backend internal checkpoints
    shared_prefix_checkpoint: bool = False
    offload_blocks_per_chunk: int = 1
    # vLLM's prefix_cache_retention_interval: 0 (its default) keeps only the recurrent states a
    # replaying request resumes at, None keeps every one (dense), k one per k tokens.
    prefix_cache_retention_interval: int | None = 0
    # The drafter's num_prefill_lookahead_tokens: prefill tokens a multi-module MTP reads past a
    # chunk end (k modules: k; EAGLE: 1). Absent: the hash lookahead, which is k whenever vLLM
    # hashes ahead (no KV connector); a deployment with a connector states it.
    prefill_lookahead_tokens: int | None = None
    # vLLM's max_num_scheduled_tokens where a step gives a prefill less (max_num_scheduled_tokens above
    # is the step's budget: the batched tokens less a drafter's draft slots cap it below the token
    # budget). The split aligns a chunk down to the grid whenever a grid block fits this budget, so a
    # step budget under one block then schedules nothing. Absent: the step budget.
    scheduler_token_budget: int | None = None

    @property
    def split_token_budget(self) -> int:
        """The budget the split's alignment test reads (Scheduler.max_num_scheduled_tokens), never below a
        step's."""
        if self.scheduler_token_budget is None:
            return self.max_num_scheduled_tokens
        return arith.maximum(self.scheduler_token_budget, self.max_num_scheduled_tokens)

    @property
    def prefill_lookahead(self) -> int:
        return self.hash_lookahead_tokens if self.prefill_lookahead_tokens is None else self.prefill_lookahead_tokens


@dataclass(frozen=True)
class Request:
    prompt_tokens: int
    output_tokens: int = 0

    @property
    def num_tokens(self) -> int:
        return self.prompt_tokens + self.output_tokens


@dataclass(frozen=True)
class Geometry:
    name: str
    deployment: Deployment
    groups: tuple[CacheGroup, ...]
    request: Request
    description: str = ""
    source: str = field(default="", compare=False)

    @property
    def label(self) -> str:
        """How messages name it: the file it was read from, else its name."""
        return self.source or self.name

    def of_kind(self, kind: str) -> tuple[CacheGroup, ...]:
        return tuple(g for g in self.groups if g.kind == kind)

    def target_spans(self) -> tuple[int, ...]:
        return tuple(g.span(self.deployment.dcp_size) for g in self.of_kind(TARGET))

    def eagle_spans(self) -> tuple[int, ...]:
        dcp = self.deployment.dcp_size
        return tuple(g.span(dcp) for g in self.of_kind(DRAFT) if g.eagle)


# --- loading and validation -------------------------------------------------

_DEPLOYMENT_FIELDS = {
    "dcp_size": ("positive", True),
    "block_size": ("positive", True),
    "max_num_scheduled_tokens": ("positive", True),
    "long_prefill_token_threshold": ("non-negative", False),
    "eagle_block_drop": ("bool", False),
    "hash_lookahead_tokens": ("non-negative", False),
    "hash_block_size": ("positive", False),
    "mamba_block_size": ("positive", False),
    "prefill_checkpoint_alignment": ("positive", False),
    "shared_prefix_checkpoint": ("bool", False),
    "offload_blocks_per_chunk": ("positive", False),
    "prefix_cache_retention_interval": ("retention", False),
    "prefill_lookahead_tokens": ("non-negative", False),
    "scheduler_token_budget": ("positive", False),
}
_GROUP_FIELDS = {
    "kind": ("kind", True),
    "block_size": ("positive", True),
    "dcp_sharded": ("bool", False),
    "eagle": ("bool", False),
    "count": ("positive", False),
}
_REQUEST_FIELDS = {
    "prompt_tokens": ("positive", True),
    "output_tokens": ("non-negative", False),
}


def _check_table(table: object, where: str, spec: dict) -> dict:
    if not isinstance(table, dict):
        raise GeometryError(f"{where}: expected a table")
    for key in table:
        if key not in spec:
            raise GeometryError(f"{where}.{key}: unknown field (expected one of {', '.join(spec)})")
    values = {}
    for key, (rule, required) in spec.items():
        name = f"{where}.{key}"
        if key not in table:
            if required:
                raise GeometryError(f"{name}: missing required field")
            continue
        values[key] = check_value(name, table[key], rule)
    return values


# How a geometry file writes vLLM's `prefix_cache_retention_interval = None` (TOML has no null).
DENSE_RETENTION = ("dense", "none")


def check_value(name: str, value: object, rule: str):
    """Validate one field; `rule` is positive, non-negative, bool, kind or retention (a
    non-negative integer, or "dense"/"none" for vLLM's None)."""
    if rule == "retention":
        if isinstance(value, str) and value.lower() in DENSE_RETENTION:
            return None
        if isinstance(value, str):
            raise GeometryError(f'{name}: expected a non-negative integer or "dense", got {value!r}')
        return check_value(name, value, "non-negative")
    if rule == "bool":
        if not isinstance(value, bool):
            raise GeometryError(f"{name}: expected true or false, got {value!r}")
        return value
    if rule == "kind":
        if value not in GROUP_KINDS:
            raise GeometryError(f"{name}: unknown group kind {value!r} (expected {', '.join(GROUP_KINDS)})")
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        raise GeometryError(f"{name}: expected an integer, got {value!r}")
    if rule == "positive" and value <= 0:
        raise GeometryError(f"{name}: must be a positive integer, got {value}")
    if rule == "non-negative" and value < 0:
        raise GeometryError(f"{name}: must be a non-negative integer, got {value}")
    return value


def parse_geometry(data: dict, name: str, source: str = "") -> Geometry:
    """The geometry a file's parsed TOML `data` describes, named `name` where it names none: every field
    validated, then the groups' kinds (a target and a recurrent group at least, each flag where its kind
    allows it). Raises GeometryError, one line naming the field, on anything else."""
    allowed = {"name", "description", "deployment", "groups", "request"}
    for key in data:
        if key not in allowed:
            raise GeometryError(f"{key}: unknown top-level field (expected one of {', '.join(sorted(allowed))})")
    for key in ("deployment", "groups", "request"):
        if key not in data:
            raise GeometryError(f"{key}: missing required section")
    deployment = Deployment(**_check_table(data["deployment"], "deployment", _DEPLOYMENT_FIELDS))
    raw_groups = data["groups"]
    if not isinstance(raw_groups, list) or not raw_groups:
        raise GeometryError("groups: expected at least one [[groups]] table")
    groups = tuple(CacheGroup(**_check_table(g, f"groups[{i}]", _GROUP_FIELDS)) for i, g in enumerate(raw_groups))
    request = Request(**_check_table(data["request"], "request", _REQUEST_FIELDS))
    geometry = Geometry(
        name=str(data.get("name", name)),
        description=str(data.get("description", "")),
        deployment=deployment,
        groups=groups,
        request=request,
        source=source,
    )
    _check_consistency(geometry)
    return geometry


def _check_consistency(geometry: Geometry) -> None:
    for kind in (TARGET, RECURRENT):
        if not geometry.of_kind(kind):
            raise GeometryError(f"groups: a hybrid geometry needs at least one {kind} group")
    for i, group in enumerate(geometry.groups):
        if group.kind == RECURRENT and (group.dcp_sharded or group.eagle):
            flag = "dcp_sharded" if group.dcp_sharded else "eagle"
            raise GeometryError(f"groups[{i}].{flag}: a recurrent group is neither DCP-sharded nor EAGLE")
        if group.kind == TARGET and group.eagle:
            raise GeometryError(f"groups[{i}].eagle: only draft-attention groups can be EAGLE groups")


def load_geometry(path_or_name: str | Path) -> Geometry:
    """Load a geometry file, or a built-in one by name (e.g. `kimi-k3-tp16-dcp16`)."""
    path = Path(path_or_name)
    if str(path_or_name) in builtin_geometry_names() and not _exists(path):
        path = BUILTIN_DIR / f"{path_or_name}.toml"
    elif not _exists(path):
        known = ", ".join(builtin_geometry_names())
        raise GeometryError(f"{path_or_name}: no such file or built-in geometry (built-in: {known})")
    text = read_user_text(path, "a geometry TOML file")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise GeometryError(f"{path}: not valid TOML: {error}") from None
    except ValueError:  # tomllib converts integers with int(), which refuses more than 4300 digits
        raise GeometryError(f"{path}: not usable TOML: an integer with more than 4,300 digits") from None
    except RecursionError:
        raise GeometryError(f"{path}: not usable TOML: arrays or tables nested too deep") from None
    try:
        return parse_geometry(data, name=path.stem, source=str(path))
    except GeometryError as error:
        raise GeometryError(f"{path}: {error}") from None


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except (OSError, ValueError):  # a name too long, or holding a NUL byte: read_user_text says which
        return True


def builtin_geometry_names() -> list[str]:
    return sorted(p.stem for p in BUILTIN_DIR.glob("*.toml"))
