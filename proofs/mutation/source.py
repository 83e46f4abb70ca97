"""The comparisons with vLLM 0.33.0's source as mutant killers.

`gridproof source --vllm-version 0.33.0` proves model functions (the
baseline reading) equal to the functions vLLM 0.33.0 ships
(proofs/source/equivalence.py: SUBJECTS). A mutant of a model function one
of those comparisons reads moves the model's reading of released vLLM: run
on the mutated model, the comparison comes out REFUTED, with an input that
replays on both (the model's ints against the shipped code run
concretely), and `gridproof source` would fail. That kills a mutant the
catalogue misses.

Which comparisons read which model functions is recorded by running each
comparison's model reading under the profiler (reach.py); a comparison that
reads a mutated function is then run once on the original model, in the
parent: only one PROVED there can kill (a comparison already failing
notices nothing). When no vLLM 0.33.0 source is at hand (neither installed
nor a cached wheel), that is said once and recorded, and mutants fall
through to the equivalence check as they would without it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import z3

from models import arith
from proofs.engine.claims import symbolic_inputs
from proofs.engine.solver import PROVED, REFUTED
from proofs.mutation.reach import codes_of, profiled
from proofs.source.decide import equivalence
from proofs.source.equivalence import SUBJECTS, exploring_under
from proofs.source.functions import ShippedFunctions
from proofs.source.loader import Loader, SourceError
from proofs.source.releases import source_for

VERSION = "0.33.0"
KILL_PREFIX = "source: "  # how a kill by a comparison starts in Result.killed_by


@dataclass
class SourceComparisons:
    """The comparisons a run's mutants can be killed by."""

    label: str | None = None  # the vLLM source read; None when there is none
    reason: str = ""  # why there is none
    readers: dict[str, list[str]] = field(default_factory=dict)  # "module:function" -> comparisons, cheapest first
    # comparison -> its verdict and seconds on the original model
    on_model: dict[str, dict] = field(default_factory=dict)

    @property
    def available(self) -> bool:
        return self.label is not None

    def usable(self, function: str) -> list[str]:
        """The comparisons that read `function` and prove the original model equal."""
        return [name for name in self.readers.get(function, []) if self.on_model[name]["verdict"] == PROVED]

    def to_json(self) -> dict:
        return {
            "version": VERSION,
            "available": self.available,
            "label": self.label,
            "reason": self.reason,
            "readers": {function: names for function, names in sorted(self.readers.items())},
            "on_model": self.on_model,
        }


@dataclass
class SourceKill:
    """A comparison that came out REFUTED on the mutated model."""

    line: str  # for Result.killed_by
    witness: dict


_shipped: dict[str, object] = {}  # the ShippedFunctions of this process (a forked worker inherits them)


def prepare(functions: list[tuple[str, str]], progress: Callable[[str], None]) -> SourceComparisons:
    """The comparisons that read any of `functions` (module, qualified name),
    each run once on the original model; one progress line either way."""
    readers = model_readers(functions)
    try:
        source = source_for(version=VERSION, download=False)
    except SourceError as error:
        comparisons = SourceComparisons(reason=f"no vLLM {VERSION} source: {error}", readers=readers)
        progress(f"gridproof mutate: {comparisons.reason}; survivors are not compared with vLLM {VERSION}")
        return comparisons
    comparisons = SourceComparisons(label=source.label, readers=readers)
    wanted = sorted({name for names in comparisons.readers.values() for name in names})
    if wanted:
        progress(f"gridproof mutate: the comparisons with {source.label} on the original model: {', '.join(wanted)}")
    for name in wanted:
        started = time.perf_counter()
        verdict = _equivalence(name, shipped_functions(source))
        comparisons.on_model[name] = {"verdict": verdict.verdict, "seconds": round(time.perf_counter() - started, 2)}
        if verdict.verdict != PROVED:
            progress(f"gridproof mutate: source {name}: {verdict.verdict} on the original model, so it kills nothing")
    for names in comparisons.readers.values():
        names.sort(key=lambda n: comparisons.on_model[n]["seconds"])
    return comparisons


def model_readers(functions: list[tuple[str, str]]) -> dict[str, list[str]]:
    """For each "module:function", the comparisons whose model reading calls it,
    read once symbolically under the profiler (the shipped side runs vLLM's
    code on stand-ins, which call no mutated model function)."""
    readers: dict[str, list[str]] = {}
    current = [""]

    def record(function: str, _frame) -> None:
        if current[0] not in readers.setdefault(function, []):
            readers[function].append(current[0])

    with profiled(codes_of(functions), record):
        for name, subject in SUBJECTS.items():
            current[0] = name
            # As `source` reads it: in z3's main context, where the executor builds the terms of a model
            # read on proxies (equivalence.model_on_proxies), under the subject's domain.
            x = symbolic_inputs(subject.variables, z3.main_ctx())
            with arith.symbolic_context(), exploring_under(subject.domain(x).values()):
                subject.model(x)
    return readers


def shipped_functions(source):
    if source.label not in _shipped:
        _shipped[source.label] = ShippedFunctions(Loader(source))
    return _shipped[source.label]


def kill(function: str, comparisons: SourceComparisons) -> tuple[SourceKill | None, list[str]]:
    """Run, on the model as it now is (the mutant applied), each usable
    comparison that reads `function`, until one is REFUTED: that one's kill,
    and the verdicts of those that did not kill."""
    if not comparisons.available:
        return None, []
    shipped = shipped_functions_of(comparisons)
    verdicts = []
    for name in comparisons.usable(function):
        verdict = _equivalence(name, shipped)
        if verdict.verdict == REFUTED:
            vllm, model = verdict.values
            inputs = verdict.counterexample
            line = f"{KILL_PREFIX}{name} vs vLLM {VERSION}: REFUTED on {inputs} (vLLM {vllm}, the model {model})"
            witness = {"comparison": f"{name} vs vLLM {VERSION}", "inputs": inputs}
            witness.update(vllm=_plain(vllm), model=_plain(model))
            return SourceKill(line, witness), verdicts
        why = f" ({verdict.reason})" if verdict.reason else ""
        verdicts.append(f"{KILL_PREFIX}{name} vs vLLM {VERSION}: {verdict.verdict}{why}")
    return None, verdicts


def shipped_functions_of(comparisons: SourceComparisons):
    """The shipped functions the comparisons read (loaded again in a worker not forked from the parent)."""
    if comparisons.label not in _shipped:
        return shipped_functions(source_for(version=VERSION, download=False))
    return _shipped[comparisons.label]


def _equivalence(name: str, shipped):
    """The comparison of the model as it is now with `shipped`; a reading that
    raises is an ERROR verdict (proofs/source/decide.py), never a kill."""
    return equivalence(SUBJECTS[name], shipped)


def _plain(value):
    return list(value) if isinstance(value, tuple) else value
