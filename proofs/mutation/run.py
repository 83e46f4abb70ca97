"""Running the catalogue on generated mutants: killed, equivalent, or a gap.

Each mutant runs in a forked process of its own: the patch is applied there
and dies with it, so the parent's model is never touched. The process runs
every theorem that reads the mutated function (reach.py), for every engine
variant the manifest decides it for, cheapest tier first, and stops at the
first entry that differs from the manifest or is not decided: the mutant is
killed, as `gridproof prove --tier all` would have failed. A model that
divides by zero on an input a theorem admits is refuted (solver: a crash is
a refutation); one that raises otherwise is killed only that way too: the
catalogue reports it as ERROR. A
mutant no theorem notices is checked for equivalence (equivalence.py); one
not proved equivalent is run through the comparisons with vLLM 0.33.0's
source that read the mutated function (source.py), and one REFUTED kills
it; otherwise it is a gap.
"""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from multiprocessing.connection import wait

from models.variants import VARIANTS
from proofs.engine.solver import SolverOptions, shared_queries
from proofs.faults.patch import applied, references_patched
from proofs.mutation import equivalence
from proofs.mutation import source as source_comparisons
from proofs.mutation.callers import private_callers
from proofs.mutation.operators import Mutant
from proofs.mutation.reach import Call, Reach, capture, key
from proofs.run.runner import Run, load_manifest, plan_runs, run_theorem
from proofs.runtime import workers

KILLED, EQUIVALENT, GAP = "killed", "equivalent", "gap"
DEFAULT_TIMEOUT = 600  # seconds per mutant: the whole catalogue takes about 15 s in one process
# Theorems that compare a variant with vLLM 0.33.0 as released
# (proofs/faults/patch.py:pristine). With the reference as released (the
# unpatched model, `--reference released`), a kill by one of them says the
# mutant changed released behaviour, not which property it breaks; with the
# reference patched too (the default), they see what they would see of the
# same fault written into the file: only a change to a variant's own lines.
REFERENCE_THEOREMS = frozenset(
    {"config-default-equivalence", "config-physical-unchanged", "plan-default-equivalence", "split-default-equivalence"}
)

# Theorems mutate does not run. check-law-is-the-engines runs `simulate` over thousands of prompt lengths
# per variant: read under the profiler that finds which theorems read a mutated function, it alone took
# mutate's sample past twenty minutes. Its subject is check's law (proofs/deployment/restore_law.py), whose hand
# mutants it refutes in the default run; the prefill it reads is held by the prefill theorems here.
NOT_RUN_BY_MUTATE = frozenset({"check-law-is-the-engines"})


@dataclass
class Result:
    ident: str
    operator: str
    module: str
    function: str
    location: str  # path:line
    summary: str
    diff: str
    status: str = GAP
    killed_by: list[str] = field(default_factory=list)  # "theorem / variant: VERDICT (expected X)"
    theorems_run: int = 0
    reason: str = ""
    witness: dict | None = None
    seconds: float = 0.0

    def to_json(self) -> dict:
        return asdict(self)


def engine_runs() -> list[Run]:
    """Every obligation the manifest decides for an engine variant: the
    comparisons with 0.33.0 first (the cheapest, and they notice most
    mutants), then the ci tier, then the slow tier."""
    runs = [
        r
        for r in plan_runs(load_manifest(), None, None, "all")
        if r.variant in VARIANTS and r.theorem.name not in NOT_RUN_BY_MUTATE
    ]
    return sorted(runs, key=lambda r: (r.theorem.name not in REFERENCE_THEOREMS, r.tier != "ci"))


def reach_of(mutants: list[Mutant], runs: list[Run]) -> Reach:
    """Which theorems read each mutated function, and the calls of it and
    of its callers, where it is a private helper (callers.py)."""
    theorems: dict[str, list[str]] = {}
    for run in runs:
        theorems.setdefault(run.theorem.name, []).append(run.variant)
    functions = set(mutated_functions(mutants))
    functions |= {(module, caller) for module, function in functions for caller in _callers(module, function)}
    return capture(sorted(functions), theorems)


def _callers(module: str, function: str) -> list[str]:
    return private_callers(module, function) or []


def sample(mutants: list[Mutant], count: int | None, seed: int) -> list[Mutant]:
    """`count` mutants drawn with `seed`, in generation order; all when `count` is None."""
    if count is None or count >= len(mutants):
        return mutants
    chosen = set(random.Random(seed).sample(range(len(mutants)), count))
    return [m for i, m in enumerate(mutants) if i in chosen]


def run_mutants(
    mutants: list[Mutant],
    jobs: int = 1,
    timeout: float = DEFAULT_TIMEOUT,
    progress: Callable[[str], None] = lambda _line: None,
    sources: source_comparisons.SourceComparisons | None = None,
    reference_patched: bool = True,
) -> list[Result]:
    """`sources`: the comparisons with vLLM's source (source.prepare); prepared here when None.
    `reference_patched`: the theorems' 0.33.0 references read the mutant too
    (patch.references_patched), as they would read the fault in the file."""
    runs = engine_runs()
    reach = reach_of(mutants, runs)
    if sources is None:
        sources = source_comparisons.prepare(mutated_functions(mutants), progress)
    results: list[Result | None] = [None] * len(mutants)
    finished = 0

    def done(i: int, result: Result) -> None:
        nonlocal finished
        results[i] = result
        finished += 1
        progress(f"[{finished}/{len(mutants)}] {result.ident} ({result.location}): {_verdict_line(result)}")

    pending = []
    for i, mutant in enumerate(mutants):
        function = key(mutant.patch.module, mutant.patch.function)
        readers = reach.theorems.get(function, set())
        selected = [r for r in runs if r.theorem.name in readers]
        callers = [
            (c, reach.calls.get(key(mutant.patch.module, c), []))
            for c in _callers(mutant.patch.module, mutant.patch.function)
        ]
        every_shape = function not in reach.truncated
        pending.append((i, mutant, selected, reach.calls.get(function, []), callers, every_shape))
    context = workers.context()
    live: dict = {}  # receiving end -> (index, process, receiving end, started, mutant)
    while pending or live:
        while pending and len(live) < jobs:
            i, mutant, selected, calls, callers, every_shape = pending.pop(0)
            receiver, sender = context.Pipe(duplex=False)
            arguments = (sender, mutant, selected, calls, callers, every_shape, sources, reference_patched)
            process = context.Process(target=_child, args=arguments, daemon=True)
            with workers.interrupts_held():
                process.start()
            sender.close()
            live[receiver] = (i, process, receiver, time.monotonic(), mutant)
        # The result, or the end of a worker that sent none: the pipe is read
        # as it becomes ready, so a large result never blocks its sender.
        ready = wait([*live, *(entry[1].sentinel for entry in live.values())], timeout=5)
        now = time.monotonic()
        for connection in list(live):
            i, process, receiver, started, mutant = live[connection]
            if receiver in ready or process.sentinel in ready:
                result = receiver.recv() if receiver.poll() else _lost(mutant, process.exitcode, now - started)
            elif now - started > timeout:
                process.kill()
                result = _blank(mutant)
                result.reason = f"the catalogue run did not finish within {timeout:.0f} s"
                result.seconds = round(now - started, 1)
            else:
                continue
            process.join()
            receiver.close()
            del live[connection]
            done(i, result)
    return [r for r in results if r is not None]


def mutated_functions(mutants: list[Mutant]) -> list[tuple[str, str]]:
    return sorted({(m.patch.module, m.patch.function) for m in mutants})


def _child(sender, mutant: Mutant, runs, calls, callers, every_shape: bool, sources, reference_patched: bool):
    workers.leave_interrupts_to_the_parent()
    with references_patched() if reference_patched else contextlib.nullcontext():
        result = decide_mutant(mutant, runs, calls, callers, every_shape, sources)
    sender.send(result)
    sender.close()


def decide_mutant(
    mutant: Mutant,
    runs: list[Run],
    calls: list[Call],
    callers: list[tuple[str, list[Call]]] = (),
    every_shape: bool = False,
    sources: source_comparisons.SourceComparisons | None = None,
) -> Result:
    """Killed, equivalent or a gap; in the calling process (a worker: the patch is applied here).

    Equivalence is decided first: a mutant that computes what the original
    does on every input of its domain, read with every argument shape the
    catalogue calls it with (`every_shape`: none left out of `calls`),
    changes no verdict, and the catalogue run on it can only confirm that,
    at the cost of every theorem that reads the function (one such mutant of
    offload_restorable took the catalogue more than 600 s, and its
    equivalence 2 s). That first comparison has a small budget, so a mutant
    the catalogue kills costs little more; a survivor is compared again with
    the full one. A survivor not proved equivalent is then run through the
    comparisons with vLLM's source that read the function (`sources`; none
    when None): after the equivalence, since a survivor the first
    comparison leaves undecided is mostly equivalent, and the split's
    comparison on it costs as much as the full equivalence (docs/mutation.md).
    Compared on some shapes only, a mutant is proved equivalent only if no
    theorem kills it."""
    started = time.perf_counter()
    result = _blank(mutant)
    answer = equivalence.Equivalence(equivalence.UNDECIDED, "not compared")
    if every_shape or not runs:
        answer = _equivalence(mutant, calls, callers, equivalence.FIRST_RLIMIT)
    if answer.verdict == equivalence.EQUIVALENT:
        result.status = EQUIVALENT
        result.reason = f"proved equivalent: {answer.detail}"
    elif not runs:
        result.reason = f"no theorem reads {mutant.patch.module}.{mutant.patch.function}"
    else:
        with applied(mutant.patch):
            for run in runs:
                result.theorems_run += 1
                try:
                    with shared_queries():
                        options = SolverOptions(rlimit=run.rlimit)
                        entry = run_theorem(run.theorem, run.variant, run.expected, options, run.tier)
                except Exception as error:  # `prove` would stop with this error: a failure reported
                    result.status = KILLED
                    result.killed_by.append(f"{run.theorem.name} / {run.variant}: the run raised {error!r}")
                    break
                if not entry.ok:
                    result.status = KILLED
                    why = f"{entry.verdict}, expected {entry.expected}"
                    if entry.verdict == entry.expected:
                        why += ", an ablation or a goal conjunct alone no longer refutes"
                    elif entry.reason:
                        why += f" ({_first_line(entry.reason)})"
                    result.killed_by.append(f"{run.theorem.name} / {run.variant}: {why}")
                    break
    if result.status == GAP and answer.verdict != equivalence.DIFFERS:
        answer = _equivalence(mutant, calls, callers, equivalence.EQUIVALENCE_RLIMIT)
    if result.status == GAP and answer.verdict == equivalence.EQUIVALENT:
        result.status = EQUIVALENT
        result.reason = f"proved equivalent: {answer.detail}"
    elif result.status == GAP:
        undecided = answer.verdict == equivalence.UNDECIDED
        equivalence_line = f"{'equivalence not decided' if undecided else 'not equivalent'} ({answer.detail})"
        result.reason = "; ".join(r for r in (result.reason, equivalence_line) if r)
        result.witness = answer.witness
        if sources is not None:
            _compare_with_source(mutant, sources, result)
    result.seconds = round(time.perf_counter() - started, 2)
    return result


def _compare_with_source(mutant: Mutant, sources: source_comparisons.SourceComparisons, result: Result) -> None:
    """Killed when a comparison with vLLM's source, run on the mutated model, is REFUTED."""
    with applied(mutant.patch):
        found, verdicts = source_comparisons.kill(key(mutant.patch.module, mutant.patch.function), sources)
    result.reason = "; ".join(r for r in (result.reason, *verdicts) if r)
    if found is not None:
        result.status = KILLED
        result.killed_by.append(found.line)
        result.witness = found.witness


def _equivalence(mutant: Mutant, calls: list[Call], callers, rlimit: int) -> equivalence.Equivalence:
    try:
        return equivalence.check(mutant.patch, calls, rlimit=rlimit, callers=callers)
    except Exception as error:  # a comparison that fails decides nothing; the mutant is not lost
        return equivalence.Equivalence(equivalence.UNDECIDED, f"the comparison raised {error!r}")


def _first_line(reason: str, width: int = 160) -> str:
    line = reason.splitlines()[0] if reason else ""
    return line if len(line) <= width else line[: width - 3] + "..."


def _blank(mutant: Mutant) -> Result:
    return Result(
        ident=mutant.ident,
        operator=mutant.operator,
        module=mutant.patch.module,
        function=mutant.patch.function,
        location=mutant.patch.location(),
        summary=mutant.summary,
        diff=mutant.patch.diff(),
    )


def _lost(mutant: Mutant, exitcode: int | None, seconds: float) -> Result:
    result = _blank(mutant)
    result.reason = f"the worker ended without a result (exit code {exitcode})"
    result.seconds = round(seconds, 1)
    return result


def _verdict_line(result: Result) -> str:
    if result.status == KILLED:
        return f"killed by {result.killed_by[0]} ({result.theorems_run} run) in {result.seconds:.1f} s"
    if result.status == EQUIVALENT:
        return f"equivalent, in {result.seconds:.1f} s"
    return f"GAP: {result.reason} ({result.theorems_run} run, {result.seconds:.1f} s)"


def summary(results: list[Result], seconds: float) -> dict:
    """The run's totals as a dict: mutants generated, killed (in all, by a reference theorem, by a source
    comparison, by an error), equivalent and gaps, the score (percent killed of the non-equivalent, None when
    all are), the seconds, and the counts per operator."""
    generated = len(results)
    killed = [r for r in results if r.status == KILLED]
    equivalent = sum(r.status == EQUIVALENT for r in results)
    gaps = [r for r in results if r.status == GAP]
    scored = generated - equivalent
    by_reference = sum(r.killed_by[0].split(" / ")[0] in REFERENCE_THEOREMS for r in killed)
    by_source = sum(r.killed_by[0].startswith(source_comparisons.KILL_PREFIX) for r in killed)
    by_operator: dict[str, dict[str, int]] = {}
    for r in results:
        counts = by_operator.setdefault(r.operator, {KILLED: 0, EQUIVALENT: 0, GAP: 0})
        counts[r.status] += 1
    return {
        "generated": generated,
        "killed": len(killed),
        "killed_by_reference": by_reference,
        "killed_by_source": by_source,
        "killed_by_error": sum(any(": ERROR," in k or "raised" in k for k in r.killed_by) for r in killed),
        "equivalent": equivalent,
        "gaps": len(gaps),
        "score": round(100 * len(killed) / scored, 1) if scored else None,
        "seconds": round(seconds, 1),
        "by_operator": by_operator,
    }
