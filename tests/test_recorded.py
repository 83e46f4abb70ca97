"""matches-recorded-vllm: it holds for every variant, notices a fault in the
code every variant shares and in PR457's own line, and refuses a bad file."""

import pytest
from conformance import decision_inputs, decisions

from models.variants import BASELINE, PR457
from proofs.catalog import CATALOGUE, recorded
from proofs.engine.enumerated import decide_enumeration
from proofs.engine.solver import PROVED, REFUTED
from proofs.faults.patch import Patch, applied

THEOREM = CATALOGUE["matches-recorded-vllm"]


def test_baseline_answers_every_recorded_case_as_vllm():
    decision = decide_enumeration(THEOREM.enumeration, BASELINE)
    data = recorded.recorded()
    assert decision.verdict == PROVED
    assert decision.cases == sum(len(data[name]["cases"]) for name in recorded.FUNCTIONS) > 5000


def test_pr457_answers_as_vllm_except_the_explicit_cadence_it_keeps():
    assert decide_enumeration(THEOREM.enumeration, PR457).verdict == PROVED
    kept = [
        c
        for c in recorded._cases(PR457)
        if c["function"] == "config" and c["align_mode"] and c["explicit_mamba_block_size"]
    ]
    assert any(c["vllm mamba_block_size"] != c["mamba_block_size"] for c in kept)  # where 0.33.0 overwrote it
    # PR457 overwriting outside align mode too, a fault of its own line: baseline is untouched.
    fault = Patch("models.config", "resolve", "all_of(c.align_mode, arith.negate(", "all_of(True, arith.negate(")
    with applied(fault):
        assert decide_enumeration(THEOREM.enumeration, BASELINE).verdict == PROVED
        decision = decide_enumeration(THEOREM.enumeration, PR457)
    assert decision.verdict == REFUTED
    assert decision.counterexample["function"] == "config" and not decision.counterexample["align_mode"]


@pytest.mark.parametrize(
    "patch",
    [
        # the split's next grid point one block late: every variant reads this code
        Patch("models.scheduler", "chunk_end", "(start, block) + 1", "(start, block) + 2"),
        # CP without the lookahead's floor of one token
        Patch("models.scheduler", "checkpoint_position", "arith.maximum(1, lookahead)", "lookahead"),
        # the resolution rounding the kernel block down
        Patch("models.config", "resolve", "cdiv(aligned, c.backend_al", "floordiv(aligned, c.backend_al"),
        # the block-floored junction counted from 0, not from the start: it shows only from off the grid,
        # behind an internal checkpoint (decision_inputs)
        Patch(
            "models.scheduler", "chunk_end", "start + arith.round_down(junction - start,", "arith.round_down(junction,"
        ),
        # the next-boundary stop kept under an internal checkpoint
        Patch(
            "models.scheduler",
            "chunk_end",
            "arith.negate(arith.divides(block, start)), arith.negate(internal)",
            "arith.negate(arith.divides(block, start)), True",
        ),
    ],
    ids=["split", "checkpoint-position", "config", "junction-floored-from-zero", "next-boundary-with-internal"],
)
def test_a_fault_in_shared_code_is_refuted_for_baseline(patch):
    with applied(patch):
        decision = decide_enumeration(THEOREM.enumeration, BASELINE)
    assert decision.verdict == REFUTED
    assert "vLLM 0.33.0 returned" in decision.reason


def test_the_recorded_split_calls_take_every_path_of_the_split():
    """Each reachable combination of the deciding stop, an internal checkpoint, a start on or off the grid
    and the cache hits is taken by recorded calls (tests/conformance/decision_inputs.py aims at each), and
    no recorded call takes a path decision_inputs calls unreachable."""
    counts = decisions.tally(decisions.recorded_calls())
    assert set(counts) <= set(decision_inputs.TARGETS)
    thin = {target: counts[target] for target in decision_inputs.TARGETS if counts[target] < 6}
    assert not thin, f"paths of the split that few recorded calls take: {thin}"


def test_a_bad_record_is_one_clear_error(tmp_path, monkeypatch):
    bad = tmp_path / "vllm-0.33.0.json"
    bad.write_bytes(b"\xff\xfe not json")
    monkeypatch.setattr(recorded, "RECORDS", tmp_path)
    recorded.recorded.cache_clear()
    recorded._record_bytes.cache_clear()
    try:
        with pytest.raises(recorded.RecordedCasesError, match="cannot read the recorded vLLM 0.33.0 answers"):
            recorded.recorded()
        bad.write_text('{"vllm": "0.33.0", "split": {"columns": ["block"], "cases": []}}', encoding="utf-8")
        recorded.recorded.cache_clear()
        recorded._record_bytes.cache_clear()
        with pytest.raises(recorded.RecordedCasesError, match="expected the columns"):
            recorded.recorded()
    finally:
        recorded.recorded.cache_clear()
        recorded._record_bytes.cache_clear()
