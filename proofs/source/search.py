"""A concrete search for a counterexample, before a verdict is UNKNOWN.

What Z3 leaves undecided within its budget (a nonlinear query over a
symbolic divisor) is often a few tokens away from an edge of the domain: a
size of 1, a position one past a multiple of a block, the sizes of the
built-in deployments. Two searches, each input replayed on ints through the
claim's own formula (the model and the shipped code run concretely), so a
hit is a counterexample exactly as a solver's would be:

- *in the undecided regions*: Z3 is asked for inputs satisfying the domain
  and an undecided path's condition (no goal: a cheap, mostly linear query),
  with some inputs pinned to edge values, and each is replayed;
- *at the edges*: inputs drawn from the domain's edges: sizes small or from
  the built-in deployments, positions around multiples of the chosen sizes
  (k * s - 2 .. k * s + 2), counts copied from one another (a prompt
  within its request).

Seeded: the same run finds the same input. It has its own wall-clock budget,
apart from the function's (proofs/source/budget.py).
"""

from __future__ import annotations

import functools
import random
import tomllib
from collections.abc import Callable, Sequence
from pathlib import Path

import z3

from proofs.engine.solver import Kind, Var, replay
from proofs.source import budget

SEARCH_SECONDS = 12.0
MAX_DRAWS = 40_000
MODELS_PER_REGION = 24
REGION_RLIMIT = 60_000

SMALL_SIZES = (1, 2, 3, 4, 5, 6, 7, 8)
GENERIC_SIZES = (12, 16, 24, 32, 48, 64, 96, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)
GEOMETRIES = Path(__file__).resolve().parents[2] / "models" / "geometries"


@functools.cache
def deployment_sizes() -> tuple[int, ...]:
    """Every positive integer the built-in geometry files name, and each
    block size times each DCP size (a sharded group's span)."""
    found: set[int] = set()
    blocks: set[int] = set()
    dcps: set[int] = {1}
    for file in sorted(GEOMETRIES.glob("*.toml")):
        try:
            data = tomllib.loads(file.read_text())
        except (OSError, tomllib.TOMLDecodeError):
            continue
        stack = [data]
        while stack:
            item = stack.pop()
            if isinstance(item, dict):
                for key, value in item.items():
                    if isinstance(value, int) and not isinstance(value, bool) and 0 < value <= 1 << 20:
                        found.add(value)
                        (blocks if key in ("block_size", "mamba_block_size") else set()).add(value)
                        if key == "dcp_size":
                            dcps.add(value)
                    else:
                        stack.append(value)
            elif isinstance(item, list):
                stack.extend(item)
    found |= {b * d for b in blocks for d in dcps}
    return tuple(sorted(found))


def edge_sizes() -> tuple[int, ...]:
    return tuple(sorted({*SMALL_SIZES, *GENERIC_SIZES, *deployment_sizes()}))


Replayer = Callable[[dict], bool]


def replayer(formula, variant) -> Replayer:
    """Whether `values` violate the claim concretely (its hypotheses hold,
    its goal does not). An input on which the code itself raises, or which
    the executor cannot run, is no counterexample of the claim."""

    def holds(values: dict) -> bool:
        try:
            violated, _ = replay(formula, variant, values)
        except Exception:  # an assert of the shipped code, a refusal: the crash sites' matter
            return False
        return violated

    return holds


def search(
    variables: Sequence[Var],
    violated: Replayer,
    *,
    domain: Callable[[dict], dict] | None = None,
    regions: Sequence[z3.BoolRef] = (),
    definitions: Sequence[z3.BoolRef] = (),
    inputs: dict | None = None,
    seconds: float = SEARCH_SECONDS,
    seed: int = 0,
) -> dict | None:
    """The first input found that `violated` replays, or None within `seconds`.
    `regions`: conditions (an undecided path's, with the domain) to draw
    inputs from with Z3, over `inputs` and `definitions`; `domain`: the
    hypotheses read on ints, a cheap filter of the drawn inputs."""
    rng = random.Random(seed)
    sizes = edge_sizes()
    try:
        with budget.function_budget(seconds):
            for region in regions:
                found = _in_region(region, definitions, inputs or {}, variables, violated, rng, sizes)
                if found is not None:
                    return found
            for _ in range(MAX_DRAWS):
                budget.poll()
                values = _draw(rng, variables, sizes)
                if domain is not None and not _admitted(domain, values):
                    continue
                if violated(values):
                    return values
    except budget.OutOfTime:
        return None
    return None


QUICK_MODELS = 8


def in_region(region, definitions, inputs, variables, violated, models: int = QUICK_MODELS, seed: int = 0):
    """A few inputs of `region` (an undecided path's condition with the
    domain), replayed: the first that `violated` replays, or None."""
    rng = random.Random(seed)
    return _in_region(region, definitions, inputs, variables, violated, rng, edge_sizes(), models)


def _admitted(domain, values: dict) -> bool:
    try:
        return all(bool(h) for h in domain(values).values())
    except (ZeroDivisionError, ValueError, TypeError):
        return False


def _in_region(region, definitions, inputs, variables, violated, rng, sizes, models=MODELS_PER_REGION) -> dict | None:
    """Inputs of `region` from Z3, each replayed: the first as Z3 chooses;
    then with the sizes pinned to distinct values (two sizes the code
    confuses, a block and a hash block, differ there), alternately small
    and from the edges; then a few inputs pinned to edge values. A pinning
    the region excludes is dropped for the next."""
    solver = z3.SimpleSolver()
    solver.set("rlimit", REGION_RLIMIT)
    solver.add(*definitions, region)
    names = [v for v in variables if v.name in inputs]
    size_names = [v for v in names if v.size]
    seen: set[tuple] = set()
    for attempt in range(models):
        budget.poll()
        pins = []
        if attempt % 3 == 1 and size_names:
            pool = list(range(2, 2 + 2 * len(size_names))) if attempt % 2 else list(sizes)
            chosen = rng.sample(pool, k=min(len(pool), len(size_names)))
            pins = [inputs[v.name] == value for v, value in zip(size_names, chosen, strict=False)]
        elif attempt:
            for v in rng.sample(names, k=min(len(names), rng.randint(1, 4))):
                pins.append(inputs[v.name] == _value(rng, v, sizes, {}))
        answer = budget.check(solver, *pins)
        if answer != z3.sat:
            continue
        model = solver.model()
        values = {}
        for v in variables:
            if v.name not in inputs:
                values[v.name] = _value(rng, v, sizes, values)
                continue
            value = model.eval(inputs[v.name], model_completion=True)
            values[v.name] = z3.is_true(value) if v.kind is Kind.BOOL else value.as_long()
        key = tuple(sorted(values.items()))
        if key in seen:
            continue
        seen.add(key)
        if violated(values):
            return values
    return None


def _draw(rng: random.Random, variables: Sequence[Var], sizes: tuple[int, ...]) -> dict:
    values: dict = {}
    ordered = sorted(variables, key=lambda v: (v.kind is not Kind.BOOL, not v.size))
    for v in ordered:
        values[v.name] = _value(rng, v, sizes, values)
    return values


def _value(rng: random.Random, v: Var, sizes: tuple[int, ...], chosen: dict):
    if v.kind is Kind.BOOL:
        return rng.random() < 0.5
    roll = rng.random()
    if v.size:
        if roll < 0.6:
            return rng.choice(SMALL_SIZES)
        if roll < 0.85:
            return rng.choice(sizes)
        return rng.randint(1, 64)
    picked_sizes = [x for x in chosen.values() if isinstance(x, int) and not isinstance(x, bool) and x > 0]
    others = [x for x in chosen.values() if isinstance(x, int) and not isinstance(x, bool)]
    if roll < 0.25:
        return rng.randint(0, 8)
    if roll < 0.70:
        base = rng.choice(picked_sizes) if picked_sizes and rng.random() < 0.8 else rng.choice(sizes)
        return max(0, rng.randint(0, 6) * base + rng.choice((-2, -1, 0, 0, 0, 1, 2)))
    if roll < 0.82 and others:
        return max(0, rng.choice(others) + rng.choice((-1, 0, 0, 1, 2, 3)))
    if roll < 0.86:
        return -1
    return rng.randint(0, 64)
