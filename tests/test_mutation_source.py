"""A mutant the catalogue misses, killed by a comparison with vLLM 0.33.0's
source (proofs/mutation/source.py); and a run without that source says so."""

from __future__ import annotations

import argparse
import json

import pytest

from proofs.commands import mutate
from proofs.faults.patch import applied
from proofs.mutation import source
from proofs.mutation.operators import generate
from proofs.mutation.reach import key
from proofs.mutation.run import GAP, KILLED, decide_mutant, engine_runs, mutated_functions, reach_of, summary
from proofs.source.equivalence import SUBJECTS
from proofs.source.loader import SourceError

pytestmark = pytest.mark.slow  # mutate runs with vLLM's source comparisons (about 4 minutes)

# VALID with `position <= query_end`: an internal checkpoint at the query's
# end. Every theorem that reads VALID reads it at CP, below the prefill's end.
END_INCLUSIVE = ("scheduler:checkpoint_valid:relational:4", "position < query_end  ->  position <= query_end")


def _mutant(ident: str, summary_text: str):
    (mutant,) = [m for m in generate((ident.split(":")[0],)) if m.ident == ident]
    assert mutant.summary == summary_text
    return mutant


def test_a_checkpoint_valid_mutant_the_catalogue_misses_is_killed_by_the_source_comparison():
    mutant = _mutant(*END_INCLUSIVE)
    progress: list[str] = []
    comparisons = source.prepare(mutated_functions([mutant]), progress.append)
    assert comparisons.available, comparisons.reason
    function = key(mutant.patch.module, mutant.patch.function)
    # Found by running the comparisons' model readings, not from a table:
    # the split reads VALID through internal_checkpoint.
    assert comparisons.usable(function) == ["checkpoint_valid", "split"]
    runs = engine_runs()
    reach = reach_of([mutant], runs)
    # The recorded vLLM answers (matches-recorded-vllm) refute this mutant
    # first; without them the comparison with vLLM's source must.
    readers = reach.theorems[function]
    assert "matches-recorded-vllm" in readers
    selected = [r for r in runs if r.theorem.name in readers and r.theorem.name != "matches-recorded-vllm"]
    result = decide_mutant(mutant, selected, reach.calls.get(function, []), [], True, comparisons)

    assert result.status == KILLED, result.reason
    assert result.theorems_run == len(selected) > 0  # every catalogue entry ran, and none noticed
    assert result.killed_by[0].startswith("source: checkpoint_valid vs vLLM 0.33.0: REFUTED on ")
    assert (summary([result], 0.0)["killed_by_source"], summary([result], 0.0)["killed_by_reference"]) == (1, 0)
    # The witness replays: vLLM's VALID and the original model agree there, the mutant does not.
    witness = result.witness
    subject, shipped = SUBJECTS["checkpoint_valid"], source.shipped_functions_of(comparisons)
    assert subject.difference(shipped, None, witness["inputs"]) == (witness["vllm"], witness["vllm"])
    with applied(mutant.patch):
        assert subject.difference(shipped, None, witness["inputs"]) == (witness["vllm"], witness["model"])
    assert witness["vllm"] != witness["model"]


def _no_vllm(monkeypatch) -> None:
    def missing(**_keywords):
        raise SourceError("vLLM 0.33.0: no wheel in /nowhere")

    monkeypatch.setattr(source, "source_for", missing)


def test_without_a_vllm_source_the_survivor_falls_through_to_equivalence_and_it_is_said(monkeypatch):
    _no_vllm(monkeypatch)
    mutant = _mutant(*END_INCLUSIVE)
    progress: list[str] = []
    comparisons = source.prepare(mutated_functions([mutant]), progress.append)
    assert not comparisons.available
    assert progress == [
        "gridproof mutate: no vLLM 0.33.0 source: vLLM 0.33.0: no wheel in /nowhere; "
        "survivors are not compared with vLLM 0.33.0"
    ]
    assert comparisons.to_json()["available"] is False
    # Which comparisons were left out is still recorded.
    assert comparisons.to_json()["readers"]["models.scheduler:checkpoint_valid"] == ["checkpoint_valid", "split"]
    assert "no wheel in /nowhere" in comparisons.to_json()["reason"]
    # No catalogue run here: the mutant is a survivor, and without the source it is a gap, as before.
    runs = engine_runs()
    calls = reach_of([mutant], runs).calls[key(mutant.patch.module, mutant.patch.function)]
    result = decide_mutant(mutant, [], calls, [], True, comparisons)
    assert result.status == GAP and result.killed_by == []
    assert "not equivalent" in result.reason and result.witness["variant"] == "baseline"


def test_the_mutate_json_records_a_missing_vllm_source(monkeypatch, capsys):
    _no_vllm(monkeypatch)
    parser = argparse.ArgumentParser()
    mutate.add_parser(parser.add_subparsers())
    args = parser.parse_args(
        ["mutate", "--module", "prefill", "--mutant", "prefill:initial_state_column:constant+1:0", "--json"]
    )
    assert args.run(args) == 0
    captured = capsys.readouterr()
    document = json.loads(captured.out)
    assert document["source"]["available"] is False
    assert document["killed_by_source"] == 0
    assert document["mutants"][0]["status"] == KILLED  # the catalogue still runs: prefill-state-slot
    assert "no vLLM 0.33.0 source" in captured.err


@pytest.mark.parametrize("ident", ["nope", "scheduler:checkpoint_valid:relational:4"])
def test_an_unknown_mutant_ident_is_refused(ident):
    parser = argparse.ArgumentParser()
    mutate.add_parser(parser.add_subparsers())
    args = parser.parse_args(["mutate", "--module", "prefill", "--mutant", ident])
    with pytest.raises(mutate.UsageError, match="--mutant: no mutant"):
        args.run(args)
