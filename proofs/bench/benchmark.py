"""The benchmark: what gridproof costs, what its encoding buys, and how fast it refutes beside its peers.

    python3 -m proofs.bench.benchmark [--quick] [--peer-seconds S] [--all-tiers] [--seed N]
                                [--skip-catalogue] [--skip-encoding] [--skip-race] [--only TEXT]
                                [--write-docs [FILE]]

Run on demand; it prints figures, it asserts nothing about time. With
--write-docs it also writes what it printed to docs/benchmarks.md (or FILE),
headed by the command that made it, so the figures there are always the
current ones, never a history. Every figure
is measured in the same run on the same machine, so compare the columns and
ratios, not the absolute seconds of one machine with another's.

1. The catalogue: `gridproof prove`'s own run of tier ci (and, with
   --all-tiers, of every tier): wall time, total rlimit, entries by verdict.
   The proof cache: a cold run of tier all into a fresh cache, then the
   unchanged rerun. `gridproof check`: one process per built-in model (not
   with --quick).
2. The encoding: every ci-tier obligation decided as the runner decides it
   (same budget, refute-first choice, case split and strategy), once with
   gridproof's quotient/remainder witnesses and once with Z3's own `/` and `%`
   on symbolic divisors (`naive=True`), side by side, UNKNOWNs counted.
3. The refutation race: every mutant with each theorem the manifest says
   kills it, and the Kimi-K3 misalignment (the headline theorem on `baseline`,
   its fresh-request trace). The property is the obligation's formula called
   on ints: a failing input is one where every hypothesis holds and the goal
   does not (a division by zero is not a failing input, as in gridproof's own
   replay). gridproof decides it refute-first; Hypothesis searches random
   inputs without hints; CrossHair checks a generated module with the
   hypotheses as its precondition. Peers get --peer-seconds each.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import datetime
import io
import os
import platform
import queue
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from proofs.catalog import CATALOGUE, Obligation
from proofs.engine.solver import PROVED, REFUTED, UNKNOWN, Kind, SolverOptions, replay
from proofs.faults.handwritten import in_effect
from proofs.run.prove import ProveRequest, run_catalogue
from proofs.run.runner import (
    VERDICTS,
    NothingSelected,
    decide_obligation,
    load_manifest,
    model_sources_hash,
    plan_runs,
    run_theorem,
)
from proofs.runtime.heap import pad_heap_top

HEADLINE = "prefill-published-on-target-boundaries"
KIMI_LABEL = "Kimi-K3 misalignment"
# --quick: a smoke test of every section, seconds not minutes.
QUICK_THEOREMS = ("prefill-state-slot", "eagle-backoff-without-annotation")
QUICK_RACE = (("slot-off-by-one", "prefill-state-slot"), ("eagle-backoff-dropped", "eagle-backoff-without-annotation"))
QUICK_PEER_SECONDS = 4.0
ROOT = Path(__file__).resolve().parents[2]
DOCS_FILE = ROOT / "docs" / "benchmarks.md"
# What a cold `gridproof prove --tier all` and its unchanged rerun from the
# proof cache are held to (README, docs/speed.md): the command's wall time on
# 2 cores, start-up included, and the rerun's seconds of proving.
TIER_ALL_TARGETS = (("the target", 10.0), ("the goal", 3.0))
CACHED_RERUN_GOAL = 0.5


# --- formatting -----------------------------------------------------------------


def table(rows: list[tuple[str, ...]], right: set[int] = frozenset()) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for row in rows:
        cells = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))]
        lines.append("  ".join(cells).rstrip())
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def seconds(s: float) -> str:
    return f"{s:.3f}" if s < 10 else f"{s:.1f}"


def count_verdicts(verdicts) -> str:
    counts = {v: 0 for v in VERDICTS}
    for v in verdicts:
        counts[v] = counts.get(v, 0) + 1
    return ", ".join(f"{n} {v}" for v, n in counts.items() if n)


# --- 1. the catalogue -------------------------------------------------------------


def bench_catalogue(tier: str, theorems: tuple[str, ...] | None) -> None:
    """Section 1: decide the catalogue of `tier` in this process (only `theorems` with --quick) and print its
    wall time, rlimit, entries by verdict, those not as expected and the slowest; without --quick, the command
    `gridproof prove --tier TIER --no-cache` timed in a process of its own too."""
    if theorems is None:
        result, _ = run_catalogue(ProveRequest(tier=tier, export=False))  # as --no-cache runs it: nothing to export
        seconds_, rlimit, entries = result["seconds"], result["rlimit"], result["entries"]
        label = f"tier {tier}"
    else:  # --quick
        seconds_, rlimit, entries = 0.0, 0, []
        for name in theorems:
            result, _ = run_catalogue(ProveRequest(theorem=name, tier=tier, export=False))
            seconds_ += result["seconds"]
            rlimit += result["rlimit"]
            entries += result["entries"]
        label = f"tier {tier}, quick: only {', '.join(theorems)}"
    bad = sum(not e["ok"] for e in entries)
    print(f"catalogue ({label}), as `gridproof prove` runs it")
    print(f"  wall time     {seconds_:.1f} s")
    if theorems is None:
        wall, cpu = _time_command(["prove", "--tier", tier, "--no-cache", "--json"])
        print(
            f"  the command   {wall:.1f} s wall, {cpu:.1f} s CPU, start-up included, bytecode cached: "
            f"gridproof prove --tier {tier} --no-cache"
        )
        if tier == "all":
            print(f"  held to       {against(wall, TIER_ALL_TARGETS)}")
    print(f"  total rlimit  {rlimit:,}")
    print(f"  entries       {len(entries)} ({count_verdicts(e['verdict'] for e in entries)})")
    print(f"  not as the manifest expects, or undecided: {bad}")
    for e in entries:
        if not e["ok"]:
            print(f"    {e['theorem']} / {e['variant']}: {e['verdict']} (expected {e['expected']}) {e['reason'][:100]}")
    slowest = sorted(entries, key=lambda e: -e["seconds"])[:3]
    print("  slowest: " + "; ".join(f"{e['theorem']} / {e['variant']} {e['seconds']:.1f} s" for e in slowest))
    print()


def _time_command(arguments: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds (every process of it) of `gridproof ARGUMENTS`
    run from this checkout in a process of its own."""
    before = os.times()
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "proofs.cli", *arguments],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
    )
    wall = time.perf_counter() - started
    after = os.times()
    return wall, (after.children_user - before.children_user) + (after.children_system - before.children_system)


def bench_cache(tier: str) -> None:
    """The proof cache: a cold run that fills a fresh cache, then the unchanged rerun CI makes."""
    with tempfile.TemporaryDirectory() as directory:
        cold, _ = run_catalogue(ProveRequest(tier=tier, cache=Path(directory)))
        warm, _ = run_catalogue(ProveRequest(tier=tier, cache=Path(directory)))
    print(f"proof cache (tier {tier}), as `gridproof prove --cache DIR` runs it")
    for label, run in (("cold, filling the cache", cold), ("unchanged rerun", warm)):
        reused = run["cache"]["reused"]
        print(f"  {label:<24} {run['seconds']:6.2f} s of proving, {reused} of {len(run['entries'])} entries reused")
    if tier == "all":
        print(f"  held to                  {against(warm['seconds'], (('the goal', CACHED_RERUN_GOAL),))}")
    print()


def against(seconds: float, limits) -> str:
    """`seconds` against each (name, limit): met or not, in words."""
    return "; ".join(
        f"{name} of {limit:g} s {'met' if seconds <= limit else f'not met ({seconds:.1f} s)'}" for name, limit in limits
    )


def bytecode_compiled() -> None:
    """The project's modules compiled, and the commands timed here allowed
    to read and write bytecode, as every run of an installed checkout but its
    first does: an environment that sets PYTHONDONTWRITEBYTECODE (this
    project's sandbox does) adds about 0.1 s of compiling to each command."""
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    compiling = [sys.executable, "-m", "compileall", "-q", "models", "proofs"]
    subprocess.run(compiling, cwd=ROOT, stdout=subprocess.DEVNULL, check=True)


def bench_check() -> None:
    """`gridproof check`, one process per deployment: every built-in model at vLLM's defaults and
    the Kimi-K3 deployments of its judging case."""
    from proofs.bench import check as bench_check

    print("gridproof check, one process per deployment (wall and CPU seconds, exit status, restore law)")
    bench_check.timing(bench_check.builtin_model_names())
    print()


# --- 2. the encoding ---------------------------------------------------------------


def theorem_verdict(verdicts: list[str]) -> str:
    """A theorem's verdict from its obligations' alone: refuted when one is,
    proved when all are, else the first that is neither. (runner.run_theorem
    goes on from a refuted step lemma to a trace search; this comparison
    stops at the obligations both encodings decide.)"""
    if REFUTED in verdicts:
        return REFUTED
    return next((v for v in verdicts if v != PROVED), PROVED)


def bench_encoding(theorems: tuple[str, ...] | None, tier: str = "ci") -> None:
    """Section 2: decide every obligation of the tier's runs not enumerated (only `theorems`' where given)
    with the quotient/remainder witnesses and naive, and print a row per obligation, the totals and the
    ratios; progress on stderr."""
    runs = [r for r in plan_runs(load_manifest(), None, None, tier) if theorems is None or r.theorem.name in theorems]
    runs = [r for r in runs if r.theorem.enumeration is None]  # no encoding: decided by running the engine
    rows = [("theorem / variant", "obligation", "expected", "witness", "rlimit", "s", "naive", "rlimit", "s")]
    totals = {False: [0, 0.0, [], 0], True: [0, 0.0, [], 0]}
    for i, run in enumerate(runs):
        print(f"  [{i + 1}/{len(runs)}] encoding: {run.theorem.name} / {run.variant}", file=sys.stderr, flush=True)
        verdicts = {False: [], True: []}
        for o in run.theorem.obligations:
            cells = []
            for naive in (False, True):
                with in_effect(run.variant) as variant:
                    options = SolverOptions(rlimit=run.rlimit, refute_first=run.expected == REFUTED, naive=naive)
                    out = decide_obligation(o, variant, options)
                total = totals[naive]
                total[0] += out.rlimit
                total[1] += out.seconds
                total[2].append(out.verdict)
                verdicts[naive].append(out.verdict)
                cells += [out.verdict, f"{out.rlimit:,}", seconds(out.seconds)]
            rows.append((f"{run.theorem.name} / {run.variant}", o.name, run.expected, *cells))
        for naive in (False, True):
            totals[naive][3] += theorem_verdict(verdicts[naive]) != run.expected
    print(f"encoding: the same {len(rows) - 1} {tier}-tier obligations, the same budget (the manifest's rlimit) and")
    print("refute-first choice as the runner; witness = quotient/remainder witnesses, naive = Z3 `/` and `%`")
    print(table(rows, right={4, 5, 7, 8}))
    for naive, name in ((False, "witness"), (True, "naive")):
        rlimit, secs, verdicts, differ = totals[naive]
        unknown = verdicts.count(UNKNOWN)
        print(
            f"  {name:8} {secs:7.1f} s  rlimit {rlimit:>13,}  {unknown} UNKNOWN  ({count_verdicts(verdicts)}); "
            f"{differ} of {len(runs)} theorem runs not the expected verdict"
        )
    w, n = totals[False], totals[True]
    if w[1] > 0 and w[0] > 0:
        print(f"  naive / witness: {n[1] / w[1]:.1f}x the seconds, {n[0] / w[0]:.1f}x the rlimit")
    print()


# --- 3. the refutation race ----------------------------------------------------------


@dataclass
class Property:
    label: str  # the mutant, or the Kimi-K3 misalignment
    theorem: str
    variant: str
    obligation: Obligation
    rlimit: int


@dataclass
class Search:
    found: bool
    seconds: float  # to the first failing input, or the time spent when not found
    note: str = ""
    counterexample: dict | None = None
    extra: dict = field(default_factory=dict)


def race_properties(quick: bool) -> list[Property]:
    """The race's properties: every (mutant, theorem) the manifest says refutes the mutant, sorted, and the
    Kimi-K3 misalignment (QUICK_RACE alone with `quick`); an enumerated theorem has none, and a theorem with a
    trace search is raced on its trace."""
    manifest = load_manifest()
    pairs: list[tuple[str, str, str]] = []  # (label, theorem, variant)
    if quick:
        pairs = [(m, t, f"mutant:{m}") for m, t in QUICK_RACE]
    else:
        for name, expectation in manifest.items():
            for variant, verdict in expectation.expected.items():
                if variant.startswith("mutant:") and verdict == REFUTED:
                    pairs.append((variant.removeprefix("mutant:"), name, variant))
        pairs.sort()
        pairs.append((KIMI_LABEL, HEADLINE, "baseline"))
    properties = []
    for label, name, variant in pairs:
        theorem = CATALOGUE[name]
        if theorem.enumeration is not None:
            continue  # no SMT query for a peer to race on
        # A theorem with a trace search is refuted by a fresh request's trace,
        # never by its step lemma alone (runner.run_theorem): that is the property.
        obligation = theorem.trace_search or _refuted_obligation(theorem, variant, manifest[name].rlimit)
        properties.append(Property(label, name, variant, obligation, manifest[name].rlimit))
    return properties


def _refuted_obligation(theorem, variant_name: str, rlimit: int) -> Obligation:
    """The obligation the variant refutes, the property the peers race on: a
    theorem of several obligations is refuted by one of them."""
    if len(theorem.obligations) == 1:
        return theorem.obligations[0]
    with in_effect(variant_name) as variant:
        for obligation in theorem.obligations:
            refuting = SolverOptions(rlimit=rlimit, refute_first=True)
            if decide_obligation(obligation, variant, refuting).verdict == REFUTED:
                return obligation
    raise ValueError(f"{theorem.name}: no obligation is refuted by {variant_name}, so there is nothing to race")


def gridproof_refute(prop: Property) -> tuple[Search, float]:
    """The property decided as the runner decides an expected refutation;
    and the whole theorem's run (run_theorem), which for the headline also
    decides the step lemma before the trace search."""
    o = prop.obligation
    with in_effect(prop.variant) as variant:
        out = decide_obligation(o, variant, SolverOptions(rlimit=prop.rlimit, refute_first=True))
    found = out.verdict == REFUTED
    note = "" if found else f"{out.verdict}: {out.reason[:80]}"
    search = Search(found, out.seconds, note, out.counterexample, {"rlimit": out.rlimit})
    entry = run_theorem(CATALOGUE[prop.theorem], prop.variant, REFUTED, SolverOptions(rlimit=prop.rlimit))
    return search, (entry.seconds if entry.verdict == REFUTED else float("inf"))


class _Found(BaseException):
    """Raised inside the Hypothesis test: a BaseException, so Hypothesis
    neither records it as a failure nor replays or shrinks it; it ends the run."""

    def __init__(self, values: dict) -> None:
        self.values = values


class _TimeUp(BaseException):
    pass


def hypothesis_search(prop: Property, cap: float, seed: int) -> Search:
    """Hypothesis's search for an input the property fails on (every hypothesis holding, the goal not): random
    non-negative ints and Bools, no hint, under `seed`, for at most `cap` seconds. The Search holds whether it
    found one, the seconds, the inputs tried and the failing input."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hypothesis_seed
    from hypothesis import strategies as st

    formula = prop.obligation.formula
    strategy = st.fixed_dictionaries(
        {
            v.name: (st.booleans() if v.kind is Kind.BOOL else st.integers(min_value=0))
            for v in prop.obligation.variables
        }
    )
    tried = 0
    started = 0.0

    @hypothesis_seed(seed)
    @settings(
        max_examples=10**9,
        phases=[Phase.generate],
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=False,
    )
    @given(strategy)
    def search(values):
        nonlocal tried
        tried += 1
        if replay(formula, variant, values)[0]:
            raise _Found(dict(values))
        if time.perf_counter() - started > cap:
            raise _TimeUp

    started = time.perf_counter()
    try:
        with in_effect(prop.variant) as variant:
            search()
    except _Found as found:
        return Search(True, time.perf_counter() - started, f"{tried:,}", found.values)
    except _TimeUp:
        return Search(False, time.perf_counter() - started, f"{tried:,}")
    return Search(False, time.perf_counter() - started, f"{tried:,} (search ended)")


CROSSHAIR_MODULE = '''"""Generated by proofs.bench.benchmark: {theorem} on {variant}, for CrossHair."""

from proofs.catalog import CATALOGUE
from proofs.faults.handwritten import in_effect

# A mutant's patch stays applied for this process's life (the name keeps it so).
_IN_EFFECT = in_effect({variant!r})
VARIANT = _IN_EFFECT.__enter__()
OBLIGATION = CATALOGUE[{theorem!r}].{obligation}
FORMULA = OBLIGATION.formula
if tuple(v.name for v in OBLIGATION.variables) != {names!r}:
    raise RuntimeError("catalogue changed on disk since the benchmark started: inputs differ")


def _claim(values):
    try:
        return FORMULA(VARIANT, values)
    except ZeroDivisionError:  # not a failing input, as in gridproof's replay
        return None


def _hypotheses(values) -> bool:
    claim = _claim(values)
    return claim is not None and all(bool(h) for h in claim.hypotheses.values())


def _goal(values) -> bool:
    claim = _claim(values)
    return claim is None or bool(claim.goal)


def prop({parameters}) -> None:
    assert _hypotheses({{{values}}})
    goal = _goal({{{values}}})
    assert goal
'''


def crosshair_module(prop: Property) -> str:
    variables = prop.obligation.variables
    theorem = CATALOGUE[prop.theorem]
    if theorem.trace_search is prop.obligation:
        where = "trace_search"
    else:
        where = f"obligations[{theorem.obligations.index(prop.obligation)}]"
    return CROSSHAIR_MODULE.format(
        theorem=prop.theorem,
        variant=prop.variant,
        obligation=where,
        names=tuple(v.name for v in variables),
        parameters=", ".join(f"{v.name}: {'bool' if v.kind is Kind.BOOL else 'int'}" for v in variables),
        values=", ".join(f"{v.name!r}: {v.name}" for v in variables),
    )


def run_crosshair(path: Path, cap: float) -> tuple[float | None, str, float]:
    """`crosshair check` on one file, killed at `cap` wall seconds: the wall
    time to its first reported error line (None if none) and that line."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    command = [
        sys.executable,
        "-m",
        "crosshair",
        "check",
        "--analysis_kind=asserts",
        f"--per_condition_timeout={cap}",
        str(path),
    ]
    lines: queue.Queue = queue.Queue()
    started = time.perf_counter()
    process = subprocess.Popen(
        command,
        cwd=path.parent,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.put((time.perf_counter() - started, line.rstrip()))
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    first: tuple[float | None, str] = (None, "")
    other: list[str] = []
    while True:
        remaining = cap - (time.perf_counter() - started)
        if remaining <= 0:
            break
        try:
            item = lines.get(timeout=remaining)
        except queue.Empty:
            break
        if item is None:
            break
        at, line = item
        if ": error: " in line:
            first = (at, line)
            break
        other.append(line)
    elapsed = time.perf_counter() - started
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)  # only the session started above
    process.wait()
    return first[0], first[1] or "\n".join(other[-3:]), elapsed


def crosshair_search(prop: Property, cap: float, directory: Path, index: int) -> Search:
    path = directory / f"prop_{index:02d}.py"
    path.write_text(crosshair_module(prop), encoding="utf-8")
    at, line, elapsed = run_crosshair(path, cap)
    if at is None:
        last = line.splitlines()[-1][:100] if line else ""
        return Search(False, elapsed, last if "Error" in last else "")
    values = parse_crosshair_call(line, prop.obligation)
    if values is None:
        return Search(True, at, "reported (arguments not parsed)")
    with in_effect(prop.variant) as variant:
        replays, why = replay(prop.obligation.formula, variant, values)
    if not replays:  # a report that is not a failing input of the property
        return Search(False, elapsed, f"reported {line.split(': error: ', 1)[1][:60]!r}, which does not fail: {why}")
    return Search(True, at, "", values)


def parse_crosshair_call(line: str, obligation: Obligation) -> dict | None:
    """The arguments of `... when calling prop(1, 2, True)` as the inputs."""
    marker = "when calling prop("
    if marker not in line:
        return None
    call = "prop(" + line.split(marker, 1)[1]
    try:
        node = ast.parse(call.strip(), mode="eval").body
        assert isinstance(node, ast.Call)
        args = [ast.literal_eval(a) for a in node.args]
        kwargs = {k.arg: ast.literal_eval(k.value) for k in node.keywords}
    except (SyntaxError, ValueError, AssertionError):
        return None
    names = [v.name for v in obligation.variables]
    values = dict(zip(names, args, strict=False)) | kwargs
    return values if set(values) == set(names) else None


def crosshair_start_up(directory: Path, cap: float) -> float | None:
    """CrossHair's fixed cost: process start to the first report on a
    property whose counterexample is x = 0."""
    path = directory / "trivial.py"
    path.write_text(
        "def prop(x: int) -> None:\n    assert x >= 0\n    y = x\n    assert y != 0\n",
        encoding="utf-8",
    )
    at, _, _ = run_crosshair(path, cap)
    return at


def ratio(peer: Search, grid: Search, cap: float) -> tuple[float | None, str]:
    """peer seconds / gridproof seconds, as a figure for the median and as
    printed: a peer that found nothing within the cap counts as the cap (a
    lower bound, '>'); a property gridproof did not refute counts as 0 when
    a peer found it (gridproof lost) and is left out when nobody did."""
    if not grid.found:
        return (0.0, "gridproof lost") if peer.found else (None, "-")
    value = (peer.seconds if peer.found else cap) / grid.seconds
    text = f"{value:.2f}x" if value < 1 else f"{value:.1f}x" if value < 10 else f"{value:.0f}x"
    return value, (text if peer.found else f">{text}")


RACE_COLUMNS = (
    "property",
    "theorem",
    "gridproof s",
    "theorem s",
    "Hypothesis s",
    "Hyp inputs",
    "CrossHair s",
    "Hyp/grid",
    "CH/grid",
)


@dataclass
class RaceTally:
    """The race so far: its table (RACE_COLUMNS first), the peers' ratios to gridproof, the notes, and each
    mutant's (gridproof, Hypothesis) searches."""

    rows: list[tuple[str, ...]] = field(default_factory=lambda: [RACE_COLUMNS])
    hyp_ratios: list[float] = field(default_factory=list)
    ch_ratios: list[float] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    per_mutant: dict[str, list[tuple[Search, Search]]] = field(default_factory=dict)

    def add(self, prop: Property, grid: Search, whole: float, hyp: Search, ch: Search, cap: float) -> None:
        """One property's searches: its row, its ratios and the notes gridproof and CrossHair left."""
        self.per_mutant.setdefault(prop.label, []).append((grid, hyp))
        hr, hr_text = ratio(hyp, grid, cap)
        cr, cr_text = ratio(ch, grid, cap)
        if hr is not None:
            self.hyp_ratios.append(hr)
        if cr is not None:
            self.ch_ratios.append(cr)
        self.rows.append(
            (
                prop.label,
                prop.theorem,
                seconds(grid.seconds) if grid.found else f"not refuted ({seconds(grid.seconds)})",
                seconds(whole) if whole != float("inf") else "not refuted",
                seconds(hyp.seconds) if hyp.found else f"> {cap:g} (none)",
                hyp.note,
                seconds(ch.seconds) if ch.found else f"> {cap:g} (none)",
                hr_text,
                cr_text,
            )
        )
        for who, search in (("gridproof", grid), ("Hypothesis", hyp), ("CrossHair", ch)):
            if search.note and who != "Hypothesis":
                self.notes.append(f"{prop.label} / {prop.theorem}: {who}: {search.note}")


def bench_race(quick: bool, cap: float, seed: int, only: str | None) -> None:
    """Section 3: race gridproof, Hypothesis and CrossHair on each property (those whose label, theorem or
    variant contains `only`, where given), the peers capped at `cap` seconds; print the table, the median
    ratios, the misses, the fastest property per mutant and the notes."""
    import crosshair
    import hypothesis

    properties = [p for p in race_properties(quick) if only is None or only in f"{p.label} {p.theorem} {p.variant}"]
    print(
        f"refutation race: {len(properties)} properties; peers capped at {cap:g} s each "
        f"(Hypothesis {hypothesis.__version__}, seed {seed}; CrossHair {crosshair.__version__})"
    )
    tally = RaceTally()
    with tempfile.TemporaryDirectory(prefix="gridproof-bench-") as tmp:
        directory = Path(tmp)
        start_up = None if quick else crosshair_start_up(directory, cap)
        for i, prop in enumerate(properties):
            print(f"  [{i + 1}/{len(properties)}] {prop.label} / {prop.theorem}", file=sys.stderr, flush=True)
            grid, whole = gridproof_refute(prop)
            hyp = hypothesis_search(prop, cap, seed)
            ch = crosshair_search(prop, cap, directory, i)
            tally.add(prop, grid, whole, hyp, ch, cap)
    print(table(tally.rows, right={2, 3, 4, 5, 6, 7, 8}))
    print()
    print("  gridproof s: the property decided refute-first, as the runner does; theorem s: the whole theorem")
    print("  (run_theorem; for the headline, step lemma then trace search). Ratios use the property's time.")
    _print_race_summary(tally, cap, start_up)
    print()
    _print_fastest_per_mutant(tally.per_mutant, cap)
    if tally.notes:
        print()
        print("  notes:")
        for note in tally.notes:
            print(f"    {note}")
    print()


def _print_race_summary(tally: RaceTally, cap: float, start_up: float | None) -> None:
    """The median ratio of each peer, the properties each found nothing for, those gridproof did not
    refute, and CrossHair's fixed cost where it was measured."""
    rows = tally.rows
    for who, ratios in (("Hypothesis", tally.hyp_ratios), ("CrossHair", tally.ch_ratios)):
        if ratios:
            below = sum(r < 10 for r in ratios)
            target = " (target: at least 10x)" if who == "Hypothesis" else ""
            print(
                f"  median {who} / gridproof: {statistics.median(ratios):.1f}x over {len(ratios)} properties{target}; "
                f"below 10x: {below}"
            )
    for who, index in (("Hypothesis", 4), ("CrossHair", 6)):
        missed = sum("(none)" in row[index] for row in rows[1:])
        if missed:
            print(
                f"  {who} found no failing input within {cap:g} s for {missed} of {len(rows) - 1}; "
                "those ratios are counted at the cap, a lower bound ('>')"
            )
    lost = sum(row[2].startswith("not refuted") for row in rows[1:])
    if lost:
        print(f"  gridproof did not refute {lost} of {len(rows) - 1} properties within the manifest's rlimit")
    if start_up is not None:
        print(f"  CrossHair's fixed cost, process start to a report on a trivial property: {start_up:.2f} s")


def _print_fastest_per_mutant(per_mutant: dict[str, list[tuple[Search, Search]]], cap: float) -> None:
    """For each mutant, the fastest of its properties gridproof and Hypothesis refuted, and whether
    gridproof was first."""
    print("  per mutant, the fastest property of each (a mutant is refuted when any of its theorems is):")
    mutant_rows = [("mutant", "gridproof s", "Hypothesis s", "gridproof first")]
    for label, results in per_mutant.items():
        g = min((grid.seconds for grid, _ in results if grid.found), default=None)
        h = min((hyp.seconds for _, hyp in results if hyp.found), default=None)
        first = "yes" if g is not None and (h is None or g < h) else "no"
        mutant_rows.append(
            (label, "not refuted" if g is None else seconds(g), f"> {cap:g}" if h is None else seconds(h), first)
        )
    print(table(mutant_rows, right={1, 2}))


# --- main --------------------------------------------------------------------------------


def header() -> None:
    """Print the run's heading: the time, the commit and model sources' digest, the machine, its load, and the
    Python and z3 versions."""
    import z3

    print(f"gridproof benchmark, {datetime.datetime.now().astimezone():%Y-%m-%d %H:%M %Z}")
    try:
        described = subprocess.run(
            ["git", "describe", "--always", "--dirty"], cwd=ROOT, capture_output=True, text=True, timeout=10
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        described = ""
    print(f"  commit {described or 'unknown'}, model sources sha256 {model_sources_hash()[:12]}")
    print(
        f"  {platform.machine()}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at start; "
        f"Python {platform.python_version()}, z3 {z3.get_version_string()}"
    )
    print()


def main(argv: list[str] | None = None) -> int:
    """The command: run the sections the options leave in and print their figures, also written to the
    --write-docs file. Exit status 0; bad options exit 2 (argparse)."""
    parser = argparse.ArgumentParser(prog="python3 -m proofs.bench.benchmark", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke test: two theorems, two properties, short caps")
    parser.add_argument(
        "--peer-seconds",
        type=float,
        default=None,
        help=f"cap per peer and property (default 60, --quick {QUICK_PEER_SECONDS:g})",
    )
    parser.add_argument("--all-tiers", action="store_true", help="also time the catalogue's every tier (slow included)")
    parser.add_argument(
        "--encoding-tier", choices=("ci", "slow", "all"), default="ci", help="the obligations compared (default ci)"
    )
    parser.add_argument("--seed", type=int, default=0, help="Hypothesis's seed (default 0)")
    parser.add_argument("--only", default=None, help="race only the properties whose mutant/theorem/variant has TEXT")
    parser.add_argument("--skip-catalogue", action="store_true")
    parser.add_argument("--skip-encoding", action="store_true")
    parser.add_argument("--skip-race", action="store_true")
    parser.add_argument("--skip-cache", action="store_true")
    parser.add_argument("--skip-check", action="store_true")
    parser.add_argument(
        "--write-docs",
        nargs="?",
        const=str(DOCS_FILE),
        metavar="FILE",
        help=f"also write the figures as Markdown to FILE (default {DOCS_FILE.relative_to(ROOT)})",
    )
    args = parser.parse_args(argv)
    cap = args.peer_seconds if args.peer_seconds is not None else (QUICK_PEER_SECONDS if args.quick else 60.0)
    if cap <= 0:
        parser.error("--peer-seconds must be positive")
    theorems = QUICK_THEOREMS if args.quick else None
    pad_heap_top()  # as the gridproof command does: the in-process figures are the command's
    bytecode_compiled()
    if not args.skip_encoding:
        try:
            plan_runs(load_manifest(), None, None, args.encoding_tier)
        except NothingSelected as error:
            parser.error(f"--encoding-tier {args.encoding_tier}: {error}")

    command = "python3 -m proofs.bench.benchmark " + " ".join(argv if argv is not None else sys.argv[1:])
    with capture_to(Path(args.write_docs) if args.write_docs else None, command.strip()):
        header()
        if not args.skip_catalogue:
            bench_catalogue("ci", theorems)
            if args.all_tiers:
                bench_catalogue("all", theorems)
        if not args.skip_cache:
            bench_cache("ci" if args.quick else "all")
        if not args.skip_check and not args.quick:
            bench_check()
        if not args.skip_encoding:
            bench_encoding(theorems, args.encoding_tier)
        if not args.skip_race:
            bench_race(args.quick, cap, args.seed, args.only)
    return 0


class _Tee(io.TextIOBase):
    """Standard output that is also kept, for --write-docs."""

    def __init__(self, stream) -> None:
        self.stream = stream
        self.kept = io.StringIO()

    def write(self, text: str) -> int:
        self.kept.write(text)
        return self.stream.write(text)

    def flush(self) -> None:
        self.stream.flush()


@contextlib.contextmanager
def capture_to(path: Path | None, command: str):
    """Print as usual; with a path, also write what was printed there as the
    benchmark page: the command that made it, then the figures verbatim."""
    if path is None:
        yield
        return
    tee = _Tee(sys.stdout)
    with contextlib.redirect_stdout(tee):
        yield
    page = (
        "# Benchmarks\n\n"
        "Written by the command below; rerun it to refresh every figure on this page. Figures are from one run\n"
        "on the machine and date in its first lines: compare columns and ratios within the run, not seconds\n"
        "across machines.\n\n"
        f"```\n{command}\n```\n\n```\n{tee.kept.getvalue().rstrip()}\n```\n"
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    kept = _measured_elsewhere(path)
    path.write_text(page + (f"\n{kept}" if kept else ""), encoding="utf-8")
    print(f"wrote {path}", file=sys.stderr)


OTHER_MEASUREMENTS = "<!-- measured by other commands: kept when this page is written again -->"


def _measured_elsewhere(path: Path) -> str:
    """The page's section of figures other commands made (each with its command), from its marker on."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return ""
    at = text.find(OTHER_MEASUREMENTS)
    return text[at:] if at >= 0 else ""


if __name__ == "__main__":
    sys.exit(main())
