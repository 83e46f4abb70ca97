"""The theorem catalogue, by subject. Each theorem is data: a name, a
statement in words, and formulas over named inputs that return a Claim
(hypotheses, goal, covers). Expected verdicts live in proofs/manifest.toml."""

from proofs.catalog.base import Obligation, Theorem
from proofs.catalog.check_law import THEOREMS as CHECK_LAW
from proofs.catalog.config import THEOREMS as CONFIG
from proofs.catalog.deploy import THEOREMS as DEPLOY
from proofs.catalog.geometry import THEOREMS as GEOMETRY
from proofs.catalog.groups import THEOREMS as GROUPS
from proofs.catalog.loops import THEOREMS as LOOPS
from proofs.catalog.plan import THEOREMS as PLAN
from proofs.catalog.prefill import THEOREMS as PREFILL
from proofs.catalog.recorded import THEOREMS as RECORDED
from proofs.catalog.restore import THEOREMS as RESTORE
from proofs.catalog.split import THEOREMS as SPLIT

CATALOGUE: dict[str, Theorem] = {
    t.name: t
    for t in (*GEOMETRY, *CONFIG, *PLAN, *SPLIT, *PREFILL, *GROUPS, *RESTORE, *LOOPS, *RECORDED, *DEPLOY, *CHECK_LAW)
}

__all__ = ["CATALOGUE", "Obligation", "Theorem"]
