"""Run-to-run diff: what got worse since a previous result (`gridproof prove --against OLD.json`).

Each regression is one line that names the theorem, the variant and what changed:
- VERDICT: the verdict moved (PROVED -> REFUTED, REFUTED -> PROVED, ...);
- UNKNOWN: an obligation is now UNKNOWN (or VACUOUS, or ERROR) that was decided before, or is new and undecided;
- EXPECTED: the manifest now expects another verdict (a changed manifest is a change to review);
- HYPOTHESIS: a proof now uses a hypothesis it did not use before (its unsat core grew), or the theorem
  gained a hypothesis (a weaker statement);
- RLIMIT: the solver's work grew by more than the threshold, and by more than RLIMIT_NOISE units (the
  count drifts between runs on Z3's default strategy, and with the queries a theorem's earlier variants
  answered);
- FAILING: an entry that passed now fails for another reason (an ablation, or a goal conjunct alone,
  that no longer refutes);
- REMOVED: an obligation of the old run is gone, when both runs selected the same obligations.

Model hash and z3 version changes are notes, not regressions."""

from __future__ import annotations

from dataclasses import dataclass, field

from proofs.report.result import DECIDED, is_ok, key

RLIMIT_NOISE = 100_000


@dataclass
class Diff:
    changes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_json(self, path: str) -> dict:
        return {"path": path, "changes": self.changes, "notes": self.notes}


def _used(entry: dict) -> set[str]:
    return set(entry.get("hypotheses_used", []))


def _same_selection(old: dict, new: dict) -> bool:
    fields = ("theorem", "variant", "tier")
    a, b = old.get("selection") or {}, new.get("selection") or {}
    return all(a.get(f) == b.get(f) for f in fields)


def compare(old: dict, new: dict, rlimit_growth: float = 50.0) -> Diff:
    diff = Diff()
    before = {key(e): e for e in old["entries"]}
    for entry in new["entries"]:
        name = f"{entry['theorem']} / {entry['variant']}"
        was = before.get(key(entry))
        verdict = entry["verdict"]
        if was is None:
            if verdict not in DECIDED:
                diff.changes.append(f"UNKNOWN {name}: new obligation, {verdict} (not in the old run)")
            continue
        if was["expected"] != entry["expected"]:
            diff.changes.append(
                f"EXPECTED {name}: the manifest now expects {entry['expected']} (was {was['expected']})"
            )
        if verdict != was["verdict"]:
            tag = "UNKNOWN" if verdict not in DECIDED else "VERDICT"
            diff.changes.append(f"{tag} {name}: {was['verdict']} -> {verdict}")
        extra = sorted(_used(entry) - _used(was)) if verdict == was["verdict"] == "PROVED" else []
        if extra:
            diff.changes.append(f"HYPOTHESIS {name}: the proof now also needs {', '.join(repr(h) for h in extra)}")
        added = sorted(set(entry.get("hypotheses", [])) - set(was.get("hypotheses", [])))
        if added:
            diff.changes.append(f"HYPOTHESIS {name}: the theorem gained {', '.join(repr(h) for h in added)}")
        grew = entry["rlimit"] - was["rlimit"]
        if was["rlimit"] > 0 and grew > RLIMIT_NOISE and grew * 100 > rlimit_growth * was["rlimit"]:
            diff.changes.append(
                f"RLIMIT {name}: {was['rlimit']:,} -> {entry['rlimit']:,} "
                f"(+{grew * 100 / was['rlimit']:.0f}%, threshold {rlimit_growth:g}%)"
            )
        if is_ok(was) and not is_ok(entry) and verdict == was["verdict"] and was["expected"] == entry["expected"]:
            diff.changes.append(
                f"FAILING {name}: passed before, fails now (an ablation, or a goal conjunct alone, no longer refutes)"
            )
    if _same_selection(old, new):
        now = {key(e) for e in new["entries"]}
        for k, was in before.items():
            if k not in now:
                diff.changes.append(f"REMOVED {k[0]} / {k[1]}: was {was['verdict']}, not in this run")
    else:
        diff.notes.append("the runs selected different obligations: only those in both were compared")
    if old.get("model_hash") != new.get("model_hash"):
        diff.notes.append(
            f"model sources changed: {str(old.get('model_hash'))[:12]} -> {str(new.get('model_hash'))[:12]}"
        )
    if old.get("z3_version") != new.get("z3_version"):
        diff.notes.append(f"z3 changed: {old.get('z3_version')} -> {new.get('z3_version')}")
    return diff
