"""What a theorem is, and the symbolic inputs the theorems share."""

from __future__ import annotations

from dataclasses import dataclass, replace

from models import arith
from models.geometry import DRAFT, RECURRENT, TARGET, CacheGroup
from models.plan import group_grid
from models.scheduler import SplitCall, SplitParams
from proofs.engine.enumerated import Enumeration
from proofs.engine.solver import Formula, Kind, SolverOptions, Var


@dataclass(frozen=True)
class Obligation:
    name: str
    variables: tuple[Var, ...]
    formula: Formula
    case_split: tuple[str, ...] = ()  # Bool inputs decided case by case
    lemmas: bool = True  # the derived lemma families (models/arith.py) beside the witnesses
    # Z3 parameters for every query of this obligation, as (name, value):
    # which core suits a query is measured per obligation, not global.
    solver_options: tuple[tuple[str, object], ...] = ()
    strategy: str = "core"  # how Z3 solves its queries (proofs.engine.solver.STRATEGIES)

    def options(self, run: SolverOptions) -> SolverOptions:
        """The run's options (budget, seed, refute-first, hypotheses dropped)
        with this obligation's own way of being decided."""
        return replace(
            run,
            case_split=self.case_split,
            lemmas=self.lemmas,
            z3_parameters=self.solver_options,
            strategy=self.strategy,
        )


@dataclass(frozen=True)
class Theorem:
    name: str
    subject: str
    statement: str
    obligations: tuple[Obligation, ...]  # all PROVED proves the theorem
    # For properties of a whole prefill: a bounded unrolling from a fresh
    # request, searched for a real counterexample when the induction fails.
    trace_search: Obligation | None = None
    # Hypotheses that are dropped one at a time, each expected to refute.
    ablate: tuple[str, ...] = ()
    # A property of the engine's loops over a finite domain, decided by running
    # them on every case instead of by Z3 (proofs/engine/enumerated.py); no obligations.
    enumeration: Enumeration | None = None


def ints(*names: str, size: bool = False) -> tuple[Var, ...]:
    return tuple(Var(n, Kind.INT, size=size) for n in names)


def bools(*names: str) -> tuple[Var, ...]:
    return tuple(Var(n, Kind.BOOL) for n in names)


# --- the scheduler's inputs, every flag free --------------------------------

SPLIT_PARAM_VARS = (
    *ints("block", "sched_block", "hash_block", "align", size=True),
    *ints("lookahead", "max_scheduled", "threshold"),
    *bools("eagle_drop", "partial", "ckpt_blocks", "shared"),
)
SPLIT_CALL_VARS = ints("computed", "requested", "prompt", "tokens", "local_hit", "external_hit", "junction")


def split_params(x: dict, block=None, eagle_spans=(), annotated=False) -> SplitParams:
    """The split's parameters from the shared inputs `x`, `block` in place of x["block"] where given; the
    checkpoint alignment x["align"] where the model has prefill checkpoint blocks, else 0 (none)."""
    return SplitParams(
        block=x["block"] if block is None else block,
        sched_block=x["sched_block"],
        hash_block=x["hash_block"],
        eagle_drop=x["eagle_drop"],
        lookahead=x["lookahead"],
        max_scheduled=x["max_scheduled"],
        long_prefill_threshold=x["threshold"],
        partial_hits=x["partial"],
        checkpoint_blocks=x["ckpt_blocks"],
        checkpoint_alignment=arith.ite(x["ckpt_blocks"], x["align"], 0),
        shared_prefix=x["shared"],
        eagle_spans=eagle_spans,
        eagle_annotated=annotated,
    )


def split_call(x: dict) -> SplitCall:
    return SplitCall(
        computed=x["computed"],
        requested=x["requested"],
        prompt=x["prompt"],
        tokens=x["tokens"],
        local_hit=x["local_hit"],
        external_hit=x["external_hit"],
        junction=x["junction"],
    )


def scheduler_domain(x: dict) -> dict[str, object]:
    """What vLLM guarantees of the split's inputs, as named hypotheses."""
    return {**params_domain(x), **call_domain(x)}


def params_domain(x: dict) -> dict[str, object]:
    return {
        "block sizes positive": arith.all_of(
            x["block"] >= 1, x["sched_block"] >= 1, x["hash_block"] >= 1, x["align"] >= 1
        ),
        "budgets non-negative": arith.all_of(x["max_scheduled"] >= 1, x["threshold"] >= 0, x["lookahead"] >= 0),
        "EAGLE drop off with lookahead": arith.implies(x["eagle_drop"], x["lookahead"] == 0),
    }


def call_domain(x: dict) -> dict[str, object]:
    return {
        "token counts non-negative": arith.all_of(
            x["computed"] >= 0,
            x["requested"] >= 0,
            x["local_hit"] >= 0,
            x["external_hit"] >= 0,
            x["junction"] >= 0,
        ),
        "prompt within request": arith.all_of(x["prompt"] >= 1, x["tokens"] >= x["prompt"]),
    }


# --- a symbolic deployment ----------------------------------------------------
# Target-attention, recurrent and draft-attention groups, every size and flag
# free. The inputs name the groups, so one formula reads a deployment of any
# shape: target groups `page`, `page2`, `page3`, ... (with `sharded`,
# `sharded2`, ...), recurrent groups `rblock`, `rblock2`, ... (none named: one
# recurrent group on the first target group's page, as align mode resolves
# it), draft groups `draft_block`, `draft_block2`, ..., all annotated as EAGLE
# or none (`annotated`). GEOMETRY_VARS is the catalogue's usual shape: two
# target groups, one recurrent and one draft group.

GEOMETRY_VARS = (
    *ints("page", "page2", "draft_block", "dcp", "user_cadence", size=True),
    *bools("explicit", "sharded", "sharded2", "annotated"),
)


def indexed(stem: str, i: int) -> str:
    """The input naming the i-th group (from 1) of a kind: `page`, `page2`, ..."""
    return stem if i == 1 else f"{stem}{i}"


@dataclass(frozen=True)
class Shape:
    """How many groups of each kind a symbolic deployment has."""

    targets: int
    recurrent: int
    drafts: int

    @property
    def name(self) -> str:
        return f"{self.targets}t-{self.recurrent}r-{self.drafts}d"

    @property
    def variables(self) -> tuple[Var, ...]:
        def each(stem: str, count: int) -> list[str]:
            return [indexed(stem, i) for i in range(1, count + 1)]

        return (
            *ints(*each("page", self.targets), *each("rblock", self.recurrent), size=True),
            *ints(*each("draft_block", self.drafts), "dcp", "user_cadence", size=True),
            *bools("explicit", *each("sharded", self.targets), "annotated"),
        )


def _named(x: dict, stem: str) -> list:
    """The values of `stem`, `stem2`, `stem3`, ... as far as x names them."""
    values = []
    name = stem
    while name in x:
        values.append(x[name])
        name = indexed(stem, len(values) + 1)
    return values


@dataclass(frozen=True)
class SymbolicDeployment:
    cadence: object
    target_spans: tuple
    draft_spans: tuple
    split_block: object

    @property
    def draft_span(self):
        """The one draft group's span (theorems stated for one draft group);
        a family's member stands for many, so it has none."""
        if isinstance(self.draft_spans, arith.Family):
            raise arith.FamilyReadByPosition("a family of draft groups has no one draft group's span")
        (span,) = self.draft_spans
        return span


@dataclass(frozen=True)
class AnyShape:
    """A deployment of any number of target and recurrent groups (at least
    one of each) and, with `drafts`, of draft groups (else none): one
    arbitrary member of each kind, `every_page` and `every_sharded`,
    `every_rblock`, `every_draft_block`, stands for all of its kind
    (models.arith.Family; the soundness argument is in docs/groups.md)."""

    drafts: bool = True
    # A second draft member, `least_draft_block`: the one at which a theorem's
    # one extremum over the draft groups is attained (Family.attaining).
    least_draft: bool = False

    @property
    def name(self) -> str:
        if not self.drafts:
            return "any-shape-no-draft"
        return "any-shape-least-draft" if self.least_draft else "any-shape"

    @property
    def variables(self) -> tuple[Var, ...]:
        draft = ("every_draft_block", "least_draft_block") if self.least_draft else ("every_draft_block",)
        draft = draft if self.drafts else ()
        return (
            *ints("every_page", "every_rblock", *draft, "dcp", "user_cadence", size=True),
            *bools("explicit", "every_sharded", "annotated"),
        )


# Any number of target and recurrent groups, with any number of draft groups
# or none: one arbitrary member of each kind stands for all (docs/groups.md).
ANY_SHAPES = (AnyShape(drafts=True), AnyShape(drafts=False))


def shaped(variables, shape) -> tuple[Var, ...]:
    """`variables` with the catalogue's usual deployment (GEOMETRY_VARS)
    replaced by `shape`'s (a Shape or an AnyShape)."""
    return tuple(v for v in variables if v not in GEOMETRY_VARS) + shape.variables


def _family_groups(x: dict) -> arith.Family:
    blocks = [*_named(x, "every_draft_block"), *_named(x, "least_draft_block")]
    drafts = [CacheGroup(DRAFT, block, eagle=x["annotated"]) for block in blocks]
    return arith.Family(
        (
            CacheGroup(TARGET, x["every_page"], dcp_sharded=x["every_sharded"]),
            CacheGroup(RECURRENT, x["every_rblock"]),
            *drafts,
        )
    )


def symbolic_groups(x: dict) -> tuple[CacheGroup, ...]:
    """The groups the inputs name: target groups, then recurrent, then draft;
    for an AnyShape's inputs, the family they stand for."""
    if "every_page" in x:
        return _family_groups(x)
    pages, sharded = _named(x, "page"), _named(x, "sharded")
    if not pages or len(pages) != len(sharded):
        raise ValueError(
            f"a symbolic deployment needs pages and shard flags in pairs, got {len(pages)} and {len(sharded)}"
        )
    return (
        *(CacheGroup(TARGET, page, dcp_sharded=s) for page, s in zip(pages, sharded, strict=True)),
        *(CacheGroup(RECURRENT, block) for block in _named(x, "rblock") or [x["page"]]),
        *(
            # A draft group is DCP-sharded only where the inputs say so (`draft_sharded`, ...).
            CacheGroup(DRAFT, block, dcp_sharded=x.get(indexed("draft_sharded", i), False), eagle=x["annotated"])
            for i, block in enumerate(_named(x, "draft_block"), start=1)
        ),
    )


def deployment(variant, x: dict) -> SymbolicDeployment:
    """The cadence, spans and split grid that models.plan.group_grid, the
    resolution `simulate` runs, gives the symbolic groups."""
    groups = symbolic_groups(x)
    grid = group_grid(variant, groups, x["dcp"], x["explicit"], x["user_cadence"])
    return SymbolicDeployment(
        cadence=grid.cadence,
        target_spans=grid.target_spans,
        draft_spans=grid.draft_spans,
        split_block=grid.split_block,
    )


def deployment_domain(x: dict) -> dict[str, object]:
    stems = ("page", "rblock", "draft_block", "every_page", "every_rblock", "every_draft_block", "least_draft_block")
    sizes = [*(size for stem in stems for size in _named(x, stem)), x["dcp"]]
    return {
        "pages positive": arith.all_of(*(size >= 1 for size in sizes)),
        "explicit cadence positive": x["user_cadence"] >= 1,
    }
