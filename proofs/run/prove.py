"""`gridproof prove`: run the catalogue, print a table, and fail on any
verdict that differs from the manifest or is not PROVED/REFUTED."""

from __future__ import annotations

import concurrent.futures
import contextlib
import contextvars
import dataclasses
import gc
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import z3

from proofs.catalog import CATALOGUE
from proofs.engine.solver import PROVED, REFUTED, SolverOptions, exporting, shared_queries
from proofs.faults.patch import PatchError
from proofs.run.cache import CacheError, ProofCache, Request
from proofs.run.result import FORMAT as RESULT_FORMAT
from proofs.run.runner import (
    Entry,
    claim_key,
    claim_texts_kept,
    load_manifest,
    model_sources_hash,
    plan_runs,
    progress,
    reproduce_command,
    run_theorem,
    same_choices,
)
from proofs.runtime.workers import process_pool


@dataclass(frozen=True)
class ProveRequest:
    """One run of the catalogue, as the command line asks it of the runner.

    `theorem`, `variant` (comma-separated) and `tier` select the entries;
    `rlimit` replaces every obligation's budget of record, `seed` Z3's;
    `jobs` worker processes (default: one per core). `cache`: a proof cache
    directory (proofs/run/cache.py) to reuse entries from and store them in;
    None decides everything. `verify_cache`: every cached PROVED is decided
    again. `cache_named` False (the default directory): a cache that cannot
    be made or written is noted and the run goes on without it; named, it is
    an error before any work. `export` False: the entries need not carry
    every query their verdicts rest on (Entry.queries), for a run that
    neither caches nor exports them."""

    theorem: str | None = None
    variant: str | None = None
    tier: str = "ci"
    rlimit: int | None = None
    seed: int | None = None
    jobs: int | None = None
    cache: Path | None = None
    cache_named: bool = True
    verify_cache: bool = False
    export: bool = True

    def selection(self) -> dict:
        """What the run decides, as its result records it."""
        return {"theorem": self.theorem, "variant": self.variant, "tier": self.tier}


@dataclass(frozen=True)
class TheoremTask:
    """One theorem's share of a run, decided in one process: its selected entries in turn."""

    theorem: str
    requests: list[Request]
    cache_use: CacheUse | None
    export: bool


def run_catalogue(request: ProveRequest) -> tuple[dict, list[Entry]]:
    """Decide the selected obligations, `request.jobs` at a time; the
    canonical result object and the entries, in catalogue order."""
    manifest = load_manifest()
    runs = plan_runs(manifest, request.theorem, request.variant, request.tier)
    use = _cache_use(request.cache, request.cache_named, request.verify_cache)
    started = time.perf_counter()
    entries: list[Entry | None] = [None] * len(runs)
    noted: list[str] = []
    counts = {"rejected": 0, "verified": 0}

    def finished_task(members: list[int], task: TaskResult) -> None:
        for line in task.notes:
            if line not in noted:
                noted.append(line)
                note(line)
        counts["rejected"] += task.rejected
        counts["verified"] += task.verified
        for i, entry in zip(members, task.entries, strict=True):
            done(i, entry)

    def done(i: int, entry: Entry) -> None:
        entries[i] = entry
        finished = sum(e is not None for e in entries)
        progress(
            f"[{finished}/{len(runs)}] {entry.theorem} / {entry.variant}: {entry.verdict} in {entry.seconds:.1f} s"
        )

    tasks, indexes = _theorem_tasks(runs, request, use)
    jobs = max(1, min(request.jobs or os.cpu_count() or 1, len(tasks) or 1))
    if jobs == 1:
        for members, task in zip(indexes, tasks, strict=True):
            finished_task(members, _run_theorem_variants(task))
    else:
        # Separate processes: Z3 releases no lock a thread could use. The
        # theorems with slow-tier proofs start first, then the largest
        # budgets, so no long theorem starts last.
        order = sorted(
            range(len(tasks)), key=lambda t: _start_order(tasks[t].requests, _cases(CATALOGUE[tasks[t].theorem]))
        )
        with process_pool(jobs) as pool:
            futures = {pool.submit(_run_theorem_variants, tasks[t]): t for t in order}
            for future in concurrent.futures.as_completed(futures):
                finished_task(indexes[futures[future]], future.result())
    progress("")
    result = {
        "format": RESULT_FORMAT,
        "z3_version": z3.get_version_string(),
        "model_hash": model_sources_hash(),
        "selection": {**request.selection(), "rlimit": request.rlimit, "seed": request.seed},
        "jobs": jobs,
        "seconds": round(time.perf_counter() - started, 3),
        "rlimit": sum(e.rlimit for e in entries),
        "entries": [e.to_json() for e in entries],
        "failures": sum(not e.ok for e in entries),
    }
    if use is not None:
        result["cache"] = {
            "directory": str(use.directory),
            "reused": sum(e.cached for e in entries),
            **counts,
            "writable": use.writable,
            "notes": noted,
        }
    return result, entries


def _theorem_tasks(
    runs: list, request: ProveRequest, use: CacheUse | None
) -> tuple[list[TheoremTask], list[list[int]]]:
    """One task per theorem (its variants and mutants often pose identical queries, answered once
    within the task: solver.shared_queries), and the indexes of `runs` each task's entries fill."""
    groups: dict[str, list[int]] = {}
    for i, run in enumerate(runs):
        groups.setdefault(run.theorem.name, []).append(i)
    tasks = [
        TheoremTask(
            name,
            [
                Request(
                    name,
                    runs[i].variant,
                    runs[i].expected,
                    request.rlimit or runs[i].rlimit,
                    runs[i].tier,
                    request.seed,
                )
                for i in members
            ],
            use,
            request.export or use is not None,
        )
        for name, members in groups.items()
    ]
    return tasks, list(groups.values())


@dataclass(frozen=True)
class CacheUse:
    """How a run uses its proof cache, handed to every task."""

    directory: Path
    writable: bool = True
    verify: bool = False


@dataclass
class TaskResult:
    """One theorem's entries, and what its proof cache had to say."""

    entries: list[Entry]
    notes: list[str] = field(default_factory=list)
    rejected: int = 0  # cached entries that failed a check, or a --verify-cache decision
    verified: int = 0  # cached PROVED entries decided again (--verify-cache)


def _cache_use(directory: Path | None, named: bool, verify: bool) -> CacheUse | None:
    """The cache as the run can use it, checked before any work: a named
    directory that cannot be made or written is an error; the default one is
    left out, or read and not written, with a one-line note."""
    if directory is None:
        return None
    try:
        cache = ProofCache(directory)
    except CacheError as error:
        if named:
            raise
        problem = str(error).removeprefix(f"--cache: cannot use {directory}: ")
        note(
            f"no proof cache: cannot make {directory} ({problem}); every entry is decided and none stored "
            "(--cache DIR names another)"
        )
        return None
    problem = cache.probe()
    if problem is not None:
        if named:
            raise CacheError(f"--cache: cannot write in {directory}: {problem}")
        note(f"proof cache {directory} cannot be written ({problem}): entries are taken from it and none stored")
    return CacheUse(Path(directory), writable=problem is None, verify=verify)


def note(message: str) -> None:
    """One line on stderr beside the progress lines (on a terminal, the status line is cleared first)."""
    prefix = "\r\033[K" if sys.stderr.isatty() else ""
    print(f"{prefix}gridproof: note: {message}", file=sys.stderr, flush=True)


def _start_order(requests: list[Request], cases: int = 1) -> tuple[bool, int]:
    """Sorts first the theorems with a slow-tier proof, then larger total
    budgets: each entry's budget of record per obligation times the
    theorem's `cases` (its obligations, each as many times as its case split
    has cases). Over --tier all this puts the long tasks first, as the
    seconds they take would: the last task to start is a short one."""
    return (all(r.tier != "slow" for r in requests), -cases * sum(r.rlimit for r in requests))


def _cases(theorem) -> int:
    """The queries a theorem's budgets stand for: one per case of each obligation (an enumerated theorem: one)."""
    return sum(2 ** len(o.case_split) for o in theorem.obligations) or 1


def _run_theorem_variants(task: TheoremTask) -> TaskResult:
    """One theorem's selected entries in turn. A variant whose claims read to
    the same queries as one decided before it (the variants the theorem does
    not tell apart) takes that entry."""
    theorem, cache_use = task.theorem, task.cache_use
    seed = task.requests[0].seed if task.requests else None  # one run's seed, every entry's
    entries: list[Entry] = []
    decided: list[str] = []  # in this task, not taken from the cache
    cache = ProofCache(cache_use.directory, writable=cache_use.writable) if cache_use is not None else None
    verified = 0
    # Mutants are read as they are decided: a patch that leaves a theorem's
    # claims alone is not one the manifest expects it to kill.
    twins = _Twins(theorem, seed)
    with collector_held(), shared_queries(), exporting(task.export), claim_texts_kept():
        for request in task.requests:
            variant, expected, rlimit, tier = request.variant, request.expected, request.rlimit, request.tier
            lookup = None
            if cache:
                try:
                    lookup = cache.lookup(CATALOGUE[theorem], request)
                except PatchError:
                    pass  # a stale hand mutant: run_theorem makes it an ERROR entry, which is not cached
            entry = lookup.entry if lookup is not None else None
            rechecked = None
            if entry is not None and cache_use.verify and entry.verdict == PROVED:
                # A PROVED is the one part of an entry no replay checks: decided again.
                rechecked, entry = entry, None
            if entry is not None:
                entries.append(entry)
                continue
            collected()
            started = time.perf_counter()
            found = twins.find(variant, expected, rlimit)
            if found is not None:
                twin, before = found
                entry = _same_claim(twin, variant, tier, time.perf_counter() - started)
                # Its command decides it where its twin was decided: alone,
                # or after the variants whose answers the twin reused.
                entry.reproduce = reproduce_command(theorem, [*before[:-1], variant], rlimit, seed)
            else:
                entry = run_theorem(
                    CATALOGUE[theorem], variant, expected, SolverOptions(rlimit=rlimit, seed=seed), tier
                )
                decided.append(variant)
                twins.add(entry, list(decided) if entry.reused_queries else [variant], rlimit)
            if entry.reused_queries and len(decided) > 1:
                # Answered in part from the variants before it. Decided alone,
                # its later queries would meet other Z3 term ids (the reused
                # checks create terms), and a deletion check could end
                # otherwise; so its command decides those variants first.
                entry.reproduce = reproduce_command(theorem, decided, rlimit, seed)
            if rechecked is not None:
                verified += 1
                if entry.verdict != rechecked.verdict:
                    cache.discard(lookup.key)
                    cache.rejected += 1
                    cache.notes.append(
                        f"proof cache: {theorem} / {variant}: the cached PROVED, decided again (--verify-cache), "
                        f"is {entry.verdict}"
                    )
            if lookup is not None and not cache.store(lookup.key, entry, request) and lookup.rejected:
                cache.discard(lookup.key)  # a refused entry not replaced: gone, not refused again each run
            entries.append(entry)
    if cache is None:
        return TaskResult(entries, verified=verified)
    return TaskResult(entries, cache.notes, cache.rejected, verified)


@contextlib.contextmanager
def collector_held():
    """Python's cyclic garbage collector held off for the block (one
    theorem's task), and run once before its first decision (`collected`).
    Z3 recycles the ids of the terms it frees, and its search follows term
    ids: when the collector ran during a task depended on everything the
    process had allocated before it, so the same entry, decided after other
    tasks in one process (--jobs 1) or after another worker's share
    (--jobs 2), could end a deletion check otherwise and report other
    hypotheses (prefill-restore-safe: 32 or 33). Held off, a task's terms
    are freed by reference counting alone, at the same points whatever ran
    before, and its decisions start with nothing collectable left over.
    Its cycles wait for the collector until the task ends; a task whose
    entries all come from the proof cache collects nothing."""
    enabled = gc.isenabled()
    gc.disable()
    token = _collected.set(False)
    try:
        yield
    finally:
        _collected.reset(token)
        if enabled:
            gc.enable()


_collected: contextvars.ContextVar[bool] = contextvars.ContextVar("gridproof_collected", default=True)


def collected() -> None:
    """Within collector_held, before a decision: the collector run once."""
    if not _collected.get():
        gc.collect()
        _collected.set(True)


class _Twins:
    """The variants a task has decided, for a later variant that would be
    decided to the same entry (its twin), which then takes that entry. A
    twin expects the same verdict under the same budget, and either agrees
    with the decided variant on every field its decision read
    (runner.same_choices: nothing to read), or its claims read to the same
    queries (claim_key, read only when the fields cannot tell, and not for
    an expected refutation). Mutants are always decided."""

    def __init__(self, theorem: str, seed: int | None) -> None:
        self.theorem, self.seed = theorem, seed
        self.decided: list[tuple[Entry, list[str], int]] = []  # entry, the variants decided up to it, rlimit
        self._keys: dict[str, str] = {}

    def add(self, entry: Entry, before: list[str], rlimit: int) -> None:
        if not entry.variant.startswith("mutant:"):
            self.decided.append((entry, before, rlimit))

    def find(self, variant: str, expected: str, rlimit: int) -> tuple[Entry, list[str]] | None:
        """The decided entry `variant` is a twin of, with the variants decided up to it; None for a mutant or
        where none is. A twin expects `expected` under `rlimit` and reads the same choices or, unless a
        refutation is expected, poses the same queries (claim_key)."""
        if variant.startswith("mutant:"):
            return None
        alike = [(e, before) for e, before, r in self.decided if (e.expected, r) == (expected, rlimit)]
        for entry, before in alike:
            if entry.choices_read is not None and same_choices(entry.choices_read, entry.variant, variant):
                return entry, before
        if expected == REFUTED:
            # A refutation is found by the probe or in a small geometry for
            # less than the two symbolic readings a key comparison costs
            # (over --tier all: 0.7 s of readings, and no twin found).
            return None
        for entry, before in alike:
            if self._key(entry.variant, expected, rlimit) == self._key(variant, expected, rlimit):
                return entry, before
        return None

    def _key(self, variant: str, expected: str, rlimit: int) -> str:
        if variant not in self._keys:
            self._keys[variant] = claim_key(CATALOGUE[self.theorem], variant, expected, rlimit, self.seed)
        return self._keys[variant]


def _table_rows(entries) -> list[str]:
    rows = [("theorem", "variant", "verdict", "expected", "rlimit", "seconds", "")]
    for e in entries:
        mark = ("ok" if e.ok else "MISMATCH") + (" (cached)" if e.cached else "")
        mark += f" (same claim as {e.same_claim_as})" if e.same_claim_as else ""
        rows.append((e.theorem, e.variant, e.verdict, e.expected, f"{e.rlimit:,}", f"{e.seconds:.2f}", mark))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]


def _entry_block(e) -> list[str]:
    detail = []
    if e.hypotheses_used or e.verdict == "PROVED":
        detail.append(f"used: {', '.join(e.hypotheses_used) or '(no hypothesis)'}")
    if e.hypotheses_unconfirmed:
        detail.append(f"kept without a decided deletion check: {', '.join(e.hypotheses_unconfirmed)}")
    if e.counterexample:
        detail.append("counterexample: " + ", ".join(f"{k}={v}" for k, v in e.counterexample.items()))
    if e.reason:
        detail.append(f"note: {e.reason}")
    for hypothesis, verdict in e.ablations.items():
        detail.append(f"without {hypothesis!r}: {verdict}")
    for conjunct, verdict in e.conjuncts_alone.items():
        detail.append(f"the goal's conjunct {conjunct!r} alone: {verdict}")
    mark = "" if e.ok else f"  (MISMATCH: the manifest expects {e.expected})"
    return [
        f"{e.theorem} / {e.variant}: {e.verdict}{mark}",
        *(f"    {d}" for d in detail),
        f"    reproduce: {e.reproduce}",
    ]


def _quiet_summary(entries) -> list[str]:
    """Per theorem, its verdict on each variant as the manifest expects, mutants counted apart."""
    by_theorem: dict[str, list] = {}
    for e in entries:
        by_theorem.setdefault(e.theorem, []).append(e)
    lines = [f"{len(by_theorem)} theorems (-v: every entry with its hypotheses and reproducing command):"]
    for theorem, own in by_theorem.items():
        variants = [e for e in own if not e.variant.startswith("mutant:")]
        mutants = [e for e in own if e.variant.startswith("mutant:")]
        parts = [f"{e.variant} {e.verdict}" for e in variants]
        if mutants:
            refuted = sum(e.verdict == "REFUTED" for e in mutants)
            parts.append(f"{refuted} of {len(mutants)} mutant{'s' if len(mutants) != 1 else ''} refuted")
        lines.append(f"  {theorem}: {', '.join(parts)}")
    return lines


def _same_claim(twin: Entry, variant: str, tier: str, seconds: float) -> Entry:
    """`variant`'s entry, taken from `twin`'s, whose claims read to the same
    queries: decided, they would be decided alike. No Z3 work of its own."""
    return dataclasses.replace(
        twin,
        variant=variant,
        tier=tier,
        rlimit=0,
        seconds=round(seconds, 3),
        reused_queries=0,
        same_claim_as=twin.variant,
        ablations=dict(twin.ablations),
        conjuncts_alone=dict(twin.conjuncts_alone),
        enumeration=dict(twin.enumeration),
        hypotheses_used=list(twin.hypotheses_used),
        hypotheses_unconfirmed=list(twin.hypotheses_unconfirmed),
        hypotheses=list(twin.hypotheses),
        counterexample=dict(twin.counterexample) if twin.counterexample is not None else None,
    )


def render_table(entries, result, verbose: bool = True) -> str:
    """The run as text: with `verbose`, a row and a block (hypotheses used, counterexample, the
    command that reproduces it) for every entry; without, the blocks of the entries that differ
    from the manifest or are undecided, and a count of the rest by theorem and verdict."""
    lines = []
    if verbose:
        lines += _table_rows(entries) + [""]
    shown = entries if verbose else [e for e in entries if not e.ok]
    for e in shown:
        lines += _entry_block(e)
    if not verbose:
        lines += _quiet_summary(entries)
    counts: dict[str, int] = {}
    for e in entries:
        counts[e.verdict] = counts.get(e.verdict, 0) + 1
    summary = ", ".join(f"{n} {v}" for v, n in sorted(counts.items()))
    lines.append("")
    lines.append(
        f"{len(entries)} obligations ({summary}) in {result['seconds']:.1f} s, rlimit {result['rlimit']:,}, "
        f"z3 {result['z3_version']}: {result['failures']} differ from the manifest or are not decided"
    )
    if "cache" in result:
        used = result["cache"]
        line = f"{used['reused']} of {len(entries)} taken from the proof cache {used['directory']}"
        if used.get("verified"):
            line += f"; {used['verified']} cached PROVED decided again (--verify-cache)"
        if used.get("rejected"):
            line += f"; {used['rejected']} failed a check and were decided again (the notes above)"
        lines.append(line)
    return "\n".join(lines)
