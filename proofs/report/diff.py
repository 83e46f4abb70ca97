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
- REMOVED: an obligation of the old run that this run's selection decides is not in this run;
- MISSING: an obligation of this run that the old run's selection decided is not in the old run (the
  file was edited, or the catalogue grew since): nothing to compare it with.

The old result must hold entries, each once (result.load_baseline), and its selection must cover this
run's: an entry of this run that the old run's selection would not decide is refused (BaselineError),
never passed for want of anything to compare it with. Old entries outside this run's selection are
counted in a note. Model hash and z3 version changes are notes, not regressions."""

from __future__ import annotations

from dataclasses import dataclass, field

from proofs.run.result import DECIDED, ReportError, is_ok, key, selection_text, selects

RLIMIT_NOISE = 100_000


@dataclass
class Diff:
    changes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_json(self, path: str) -> dict:
        return {"path": path, "changes": self.changes, "notes": self.notes}


def _used(entry: dict) -> set[str]:
    return set(entry.get("hypotheses_used", []))


class BaselineError(ReportError):
    """An old result that cannot stand for this run: one line, exit status 2."""


def compare(old: dict, new: dict, rlimit_growth: float = 50.0, old_name: str = "the old result") -> Diff:
    """The regressions of `new` since `old` as tagged lines, with notes (entries outside the selection, a
    changed model hash or z3 version). Raises BaselineError when `old`'s selection does not cover `new`'s
    entries; `rlimit_growth` is the RLIMIT threshold in percent."""
    diff = Diff()
    before = {key(e): e for e in old["entries"]}
    uncovered = [e for e in new["entries"] if key(e) not in before and not selects(old.get("selection"), e)]
    if uncovered:
        first = uncovered[0]
        raise BaselineError(
            f"{old_name}: its selection ({selection_text(old)}) does not cover this run's ({selection_text(new)}): "
            f"{len(uncovered)} of this run's entries, {first['theorem']} / {first['variant']} first, are not in it"
        )
    for entry in new["entries"]:
        name = f"{entry['theorem']} / {entry['variant']}"
        was = before.get(key(entry))
        verdict = entry["verdict"]
        if was is None:
            if verdict not in DECIDED:
                diff.changes.append(f"UNKNOWN {name}: new obligation, {verdict} (not in the old run)")
            else:
                diff.changes.append(f"MISSING {name}: {verdict} now; the old run selected it and does not hold it")
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
    now = {key(e) for e in new["entries"]}
    outside = 0
    for k, was in before.items():
        if k in now:
            continue
        if selects(new.get("selection"), was):
            diff.changes.append(f"REMOVED {k[0]} / {k[1]}: was {was['verdict']}, not in this run")
        else:
            outside += 1
    if outside:
        diff.notes.append(f"{outside} entries of the old run are outside this run's selection, and not compared")
    if old.get("model_hash") != new.get("model_hash"):
        diff.notes.append(
            f"model sources changed: {str(old.get('model_hash'))[:12]} -> {str(new.get('model_hash'))[:12]}"
        )
    if old.get("z3_version") != new.get("z3_version"):
        diff.notes.append(f"z3 changed: {old.get('z3_version')} -> {new.get('z3_version')}")
    return diff
