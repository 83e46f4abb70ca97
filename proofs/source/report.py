"""One run of `gridproof source`: per function, the paths of the shipped
code, its equivalence with the model (or with another release), and its
crash sites; as a dict (the JSON) and as text."""

from __future__ import annotations

import sys
import time

from models.variants import BASELINE, Variant
from proofs.engine.solver import PROVED, REFUTED
from proofs.runtime import interrupts
from proofs.source import budget, crashes
from proofs.source import theorems as split_theorems
from proofs.source.decide import equivalence
from proofs.source.equivalence import FUNCTIONS, every_subject, subjects
from proofs.source.functions import TARGETS, ShippedFunctions
from proofs.source.loader import Loader, VllmSource

ABSENT = "ABSENT"
CRASH_SECONDS = 30.0  # a function's crash sites, after its equivalence
DEFAULT_FUNCTIONS = tuple(subjects(BASELINE))  # 0.33.0's; a variant adds its own (subjects(variant))
__all__ = ["ABSENT", "DEFAULT_FUNCTIONS", "FUNCTIONS", "check", "diff", "render_text"]


def _present(functions: ShippedFunctions, name: str) -> bool:
    module, qualname = functions.target(name)
    return functions.loader.has_function(module, qualname)


def _raises(subject, functions):
    def replay(values) -> bool:
        try:
            subject.shipped(functions, values)
        except (AssertionError, ValueError, ZeroDivisionError, RuntimeError):
            return True
        return False

    return replay


def check(source: VllmSource, names=None, progress=True, theorems=True, variant: Variant = BASELINE) -> dict:
    """Each function of `source` against `variant`'s model (by default every
    function the variant's code has); with `theorems`, the split theorems of
    the catalogue on the shipped split."""
    functions = ShippedFunctions(Loader(source), variant)
    chosen = subjects(variant)
    names = tuple(chosen) if names is None else tuple(names)
    started = time.perf_counter()
    result = {"source": source.label, "version": source.version(), "variant": variant.name, "functions": {}}
    for name in names:
        interrupts.raise_if_requested()  # between functions: where a dropped interrupt stops the run
        if progress:
            print(f"source: {name} ...", file=sys.stderr, flush=True)
        subject = chosen[name]
        entry = result["functions"][name] = {
            "qualname": ".".join(functions.target(name)),
            "scope": subject.scope_for(functions),
        }
        if not _present(functions, name):
            entry["verdict"] = ABSENT
            entry["required"] = subject.required(variant)
            continue
        verdict = equivalence(subject, functions)
        entry.update(_verdict(verdict))
        if verdict.exploration is not None:
            loaded = functions.loaded(name)
            declared = [site for f in _with_helpers(loaded) for site in f.crash_sites]
            if subject.raises_are_results:
                declared = [site for site in declared if site[2] != "raise"]
            with budget.function_budget(CRASH_SECONDS):
                sites = crashes.sites(
                    verdict.exploration,
                    declared,
                    verdict.hypotheses,
                    verdict.inputs,
                    subject.variables,
                    _raises(subject, functions),
                )
            entry["crash_sites"] = [
                {
                    "file": s.file,
                    "line": s.line,
                    "kind": s.kind,
                    "verdict": s.verdict,
                    "branch_points": s.evaluated,
                    "counterexample": s.counterexample,
                }
                for s in sites
            ]
    if theorems and "split" in names and result["functions"]["split"]["verdict"] != "ABSENT":
        if progress:
            print("source: the split theorems: exploring the shipped split ...", file=sys.stderr, flush=True)

        def announce(name):
            if progress:
                print(f"source: theorem {name} ...", file=sys.stderr, flush=True)

        verdicts = split_theorems.prove_all(split_theorems.THEOREMS, functions, progress=announce)
        result["theorems"] = {name: _verdict(v) for name, v in verdicts.items()}
    result["seconds"] = round(time.perf_counter() - started, 2)
    result["ok"] = all(_holds(e) for e in result["functions"].values()) and all(
        t["verdict"] == PROVED for t in result.get("theorems", {}).values()
    )
    return result


def _holds(entry: dict) -> bool:
    """PROVED with every crash site PROVED, or absent where the variant has no such function."""
    if entry["verdict"] == ABSENT:
        return not entry["required"]
    return entry["verdict"] == PROVED and all(s["verdict"] == PROVED for s in entry.get("crash_sites", []))


def diff(a: VllmSource, b: VllmSource, names=None, progress=True, variant: Variant = BASELINE) -> dict:
    """Each function of `a` against the same function of `b` (by default
    every function either may have: one only `b` has is ABSENT from `a`),
    both on `variant`'s stand-ins."""
    left, right = ShippedFunctions(Loader(a), variant), ShippedFunctions(Loader(b), variant)
    chosen = every_subject(variant)
    names = FUNCTIONS if names is None else tuple(names)
    started = time.perf_counter()
    result = {"a": a.label, "b": b.label, "variant": variant.name, "functions": {}}
    for name in names:
        interrupts.raise_if_requested()
        if progress:
            print(f"source --diff: {name} ...", file=sys.stderr, flush=True)
        entry = result["functions"][name] = {"qualname": ".".join(TARGETS[name])}
        absent = [s.label for s, f in ((a, left), (b, right)) if not _present(f, name)]
        if absent:
            entry["verdict"] = ABSENT
            entry["reason"] = "absent from " + " and ".join(absent)
            continue
        entry.update(_verdict(equivalence(chosen[name], left, right)))
        if chosen[name].compared_scope(left, right):
            entry["scope"] = chosen[name].compared_scope(left, right)
    result["seconds"] = round(time.perf_counter() - started, 2)
    result["ok"] = all(e["verdict"] in (PROVED, REFUTED, ABSENT) for e in result["functions"].values())
    return result


def _with_helpers(loaded):
    seen, stack, out = set(), [loaded], []
    while stack:
        f = stack.pop()
        if id(f) in seen:
            continue
        seen.add(id(f))
        out.append(f)
        stack.extend(f.helpers)
    return out


def _verdict(v) -> dict:
    entry = {"verdict": v.verdict, "paths": v.paths, "seconds": round(v.seconds, 2)}
    if v.exploration is not None:
        e = v.exploration
        entry.update(returned=len(e.returned), raised=len(e.raised), feasibility_checks=e.checks)
    if v.reason:
        entry["reason"] = v.reason
    if v.counterexample is not None:
        entry["counterexample"] = v.counterexample
    if v.values is not None:
        entry["values"] = {"first": _plain(v.values[0]), "second": _plain(v.values[1])}
    return entry


def _plain(value):
    return list(value) if isinstance(value, tuple) else value


def render_text(result: dict) -> str:
    """The run's result (check's or diff's) as text: a line per function with its paths, scope, counterexample
    and crash sites, the split theorems where run, and a closing verdict."""
    variant = result.get("variant", BASELINE.name)
    if "a" in result:
        lines = [f"{result['a']}  against  {result['b']} (stand-ins of {variant})"]
    else:
        lines = [f"{result['source']} (version {result['version']}) against the model of {variant}"]
    for name, e in result["functions"].items():
        line = f"  {name:<23} {e['verdict']:<8}"
        if "returned" in e:  # explored (an executor ERROR has no paths)
            line += f" {e['returned']} returning paths, {e['raised']} raising, {e['seconds']} s"
        if e["verdict"] == ABSENT and "reason" not in e:
            line += "  (required by the variant)" if e.get("required") else "  (not in the variant's code)"
        if "reason" in e:
            line += f"  ({e['reason']})"
        lines.append(line)
        if e["verdict"] == PROVED and e.get("scope"):
            lines.append(f"      scope: {e['scope']}")
        if "counterexample" in e:
            lines.append(f"      differs on {e['counterexample']}: {e['values']['first']} vs {e['values']['second']}")
        for s in e.get("crash_sites", []):
            where = f"{s['file'].rsplit('/', 1)[-1]}:{s['line']}"
            if s["verdict"] == PROVED:
                lines.append(
                    f"      {s['kind']} {where}: never fails in the domain ({s['branch_points']} branch points)"
                )
            else:
                lines.append(f"      {s['kind']} {where}: {s['verdict']} {s['counterexample'] or ''}")
    if "theorems" in result:
        lines.append("  the split theorems on the shipped split:")
        for name, t in result["theorems"].items():
            line = f"    {name:<38} {t['verdict']:<8} {t.get('paths', 0)} paths, {t['seconds']} s"
            if "reason" in t:
                line += f"  ({t['reason']})"
            if "counterexample" in t:
                line += f"  counterexample {t['counterexample']}"
            lines.append(line)
    if "a" in result:
        verdict = "every function decided" if result["ok"] else "NOT every function decided"
    else:
        verdict = "all PROVED" if result["ok"] else "NOT all proved"
    lines.append(f"{verdict} in {result['seconds']} s")
    return "\n".join(lines)
