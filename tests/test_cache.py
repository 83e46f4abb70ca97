"""The proof cache reuses an entry only while its queries' text is the same:
an unchanged rerun decides nothing, a changed model function re-decides
exactly the entries whose queries read it. Counted, never timed."""

from __future__ import annotations

import json

from models import arith
from proofs.catalog import prefill as prefill_theorems
from proofs.cli import main
from proofs.prove import run_catalogue

THEOREM = "prefill-state-slot"  # baseline, pr457, pr457-guarded and mutant:slot-off-by-one


def _cached(result: dict) -> dict[str, bool]:
    return {e["variant"]: e["cached"] for e in result["entries"]}


def test_an_unchanged_rerun_decides_nothing_and_a_changed_function_only_what_reads_it(tmp_path, monkeypatch):
    first, _ = run_catalogue(theorem=THEOREM, jobs=1, cache=tmp_path)
    assert first["cache"]["reused"] == 0 and not any(_cached(first).values())
    again, entries = run_catalogue(theorem=THEOREM, jobs=1, cache=tmp_path)
    assert again["cache"]["reused"] == len(again["entries"]) == 4
    assert [e.queries for e in entries] and all(e.queries for e in entries)  # the evidence comes back too
    for old, new in zip(first["entries"], again["entries"], strict=True):
        assert {k: v for k, v in old.items() if k not in ("seconds", "cached")} == {
            k: v for k, v in new.items() if k not in ("seconds", "cached")
        }

    real = prefill_theorems.initial_state_column

    def rewritten(variant, computed, cadence):
        # The same slot, written another way: (c - 1) // R as (c + R - 1) // R - 1.
        if variant.mutation:
            return real(variant, computed, cadence)
        return arith.floordiv(computed + cadence - 1, cadence) - 1

    monkeypatch.setattr(prefill_theorems, "initial_state_column", rewritten)
    changed, _ = run_catalogue(theorem=THEOREM, jobs=1, cache=tmp_path)
    assert _cached(changed) == {
        "baseline": False,
        "pr457": False,
        "pr457-guarded": False,
        "mutant:slot-off-by-one": True,
    }
    assert [e["verdict"] for e in changed["entries"]] == [e["verdict"] for e in first["entries"]]


def test_no_cache_decides_everything_and_stores_nothing(tmp_path, capsys):
    assert main(["prove", "--theorem", THEOREM, "--cache", str(tmp_path), "--json"]) == 0
    stored = sorted(tmp_path.iterdir())
    assert len(stored) == 4
    capsys.readouterr()
    assert main(["prove", "--theorem", THEOREM, "--no-cache", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert "cache" not in result and not any(_cached(result).values())
    assert sorted(tmp_path.iterdir()) == stored


def test_a_cache_directory_that_is_a_file_is_one_line_and_exit_2(tmp_path, capsys):
    path = tmp_path / "file"
    path.write_text("")
    assert main(["prove", "--theorem", THEOREM, "--cache", str(path)]) == 2
    assert capsys.readouterr().err.count("\n") == 1
