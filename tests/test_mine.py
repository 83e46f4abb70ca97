"""`gridproof mine`: distinct classes that replay, a rerun that writes nothing
new, readable pytest output, and one-line refusals of bad input."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest
from helpers import gridproof

from models.geometry import BUILTIN_DIR
from models.variants import get_variant
from proofs.catalog import CATALOGUE
from proofs.cli import main
from proofs.mining.miner import FAILS, make_views, outcome, size_vectors
from proofs.mining.playback import load_corpus, replay_outcome
from proofs.mining.views import ViewError

HEADLINE = "prefill-published-on-target-boundaries"


def mine(*args: str) -> tuple[int, str, str]:
    result = gridproof("mine", *args)
    return result.returncode, result.stdout, result.stderr


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return tmp_path_factory.mktemp("corpus")


@pytest.mark.slow  # mines the headline theorem twice (about 12 s)
def test_two_classes_of_the_headline_for_baseline_replay(corpus):
    status, out, err = mine(HEADLINE, "--variant", "baseline", "--max", "2", "--out", str(corpus))
    assert status == 0, err
    docs = list(load_corpus(corpus).values())
    assert len(docs) == 2
    classes = [tuple((c["view"], c["holds"]) for c in doc["class"]) for doc in docs]
    assert len(set(classes)) == 2, "two counterexamples, two different classes"
    for doc in docs:
        assert replay_outcome(doc, "baseline") == FAILS
        assert doc["fixes"][0]["expected"]["pr457-guarded"] == "holds"
        assert doc["scenario"]["trace"]["off_target"]
    assert "2 distinct classes" in out and "stopped at --max 2" in out
    assert out.count("real vLLM 0.33.0 split: the same steps, and it publishes off target too") == 2
    assert "free:" in out and "minimal:" in out


@pytest.mark.slow  # runs after the test above, on its corpus
def test_a_second_run_adds_no_file(corpus):
    before = {p.name: p.stat().st_mtime_ns for p in corpus.iterdir()}
    assert len(before) == 2, "runs after test_two_classes_of_the_headline_for_baseline_replay"
    status, out, err = mine(HEADLINE, "--variant", "baseline", "--max", "2", "--out", str(corpus), "--no-vllm")
    assert status == 0, err
    assert {p.name: p.stat().st_mtime_ns for p in corpus.iterdir()} == before
    assert "(0 new files)" in out and out.count("already in the corpus") == 2


def mined_json(tmp_path, *args: str) -> dict:
    status, out, err = mine(HEADLINE, "--out", str(tmp_path), "--format", "json", "--no-vllm", *args)
    assert status == 0, err
    return json.loads(out)


def test_json_format_and_a_fixed_order(tmp_path):
    """Each optimum is unique, so two searches agree input for input."""
    first = mined_json(tmp_path / "a", "--variant", "baseline", "--max", "2")
    second = mined_json(tmp_path / "b", "--variant", "baseline", "--max", "2")
    assert first["classes"] == 2 and first["complete"] is False and first["errors"] == []
    assert [c["inputs"] for c in first["cases"]] == [c["inputs"] for c in second["cases"]]
    assert first["cases"][0]["expected"]["baseline"] == FAILS


def test_the_explanation_names_what_matters(tmp_path):
    (case,) = mined_json(tmp_path, "--variant", "baseline", "--max", "1")["cases"]
    explanation = case["explanation"]
    assert "budget1" in explanation["free"]  # the failure is at the first step
    assert explanation["matters"]["dcp"] == 1  # one rank: every span equals its page
    obligation = CATALOGUE[HEADLINE].trace_search
    for name, value in explanation["matters"].items():
        assert outcome(obligation.formula, get_variant("baseline"), {**case["inputs"], name: value}) == "holds"
    for name in explanation["free"]:
        assert name not in explanation["matters"]


def test_a_custom_view_classes_by_it(tmp_path):
    status, out, err = mine(
        HEADLINE, "--variant", "baseline", "--max", "1", "--out", str(tmp_path), "--no-vllm",
        "--view", "budget0 < split_block",
    )  # fmt: skip
    assert status == 0, err
    (doc,) = load_corpus(tmp_path).values()
    assert [c["view"] for c in doc["class"]] == ["budget0 < split_block"]
    holds = doc["class"][0]["holds"]
    assert (doc["inputs"]["budget0"] < doc["scenario"]["split_block"]) == holds


def test_pytest_format_prints_a_test_that_passes(tmp_path):
    status, out, err = mine(HEADLINE, "--variant", "pr457", "--max", "1", "--out", str(tmp_path), "--format", "pytest")
    assert status == 0, err
    assert out.startswith('"""') and "def test_" in out and "assert run('pr457') == 'fails'" in out
    namespace: dict = {}
    exec(compile(out, "<mined>", "exec"), namespace)
    tests = [f for name, f in namespace.items() if name.startswith("test_")]
    assert len(tests) == 1
    tests[0]()


def test_a_geometry_case(tmp_path):
    args = [HEADLINE, "--variant", "baseline", "--geometry", "kimi-k3-tp16-dcp16", "--out", str(tmp_path)]
    status, out, err = mine(*args, "--no-vllm")
    assert status == 0, err
    assert "first shared 61440" in out
    status, out, err = mine(*args, "--no-vllm")
    assert status == 0 and "already in the corpus" in out
    assert len(list(tmp_path.iterdir())) == 1


def _kimi_k3_with(tmp_path, name: str, extra_groups: str):
    """kimi-k3-tp16-dcp16 with more groups, as a geometry file."""
    text = (BUILTIN_DIR / "kimi-k3-tp16-dcp16.toml").read_text(encoding="utf-8")
    groups, request = text.split("[request]")
    geometry = tmp_path / f"{name}.toml"
    geometry.write_text(groups + extra_groups + "[request]" + request, encoding="utf-8")
    return geometry


def test_a_geometry_with_four_target_shapes(tmp_path):
    """Any number of distinct target-attention shapes maps onto the symbolic
    deployment: each shape its own group (`page`, `page2`, `page3`, ...), and
    the case replays on the model with every target span checked."""
    extra = "".join(
        f'[[groups]]\nkind = "target-attention"\nblock_size = {block}\ndcp_sharded = {sharded}\n\n'
        for block, sharded in ((1536, "false"), (1024, "true"), (2304, "true"))
    )
    geometry = _kimi_k3_with(tmp_path, "four-targets", extra)
    out_dir = tmp_path / "corpus"
    args = ["--variant", "baseline", "--geometry", str(geometry), "--out", str(out_dir), "--no-vllm"]
    status, out, err = mine(HEADLINE, *args)
    assert status == 0, err
    (doc,) = load_corpus(out_dir).values()
    x = doc["inputs"]
    assert [x["page2"], x["page3"], x["page4"]] == [1536, 1024, 2304] and not x["sharded2"] and x["sharded4"]
    assert "page5" not in x
    assert sorted(doc["scenario"]["target_spans"]) == sorted({768 * 16, 1536, 1024 * 16, 2304 * 16})
    assert replay_outcome(doc, "baseline") == FAILS
    # The fix's cadence is the lcm of all four spans.
    assert doc["fixes"][0]["changes"]["user_cadence"] == math.lcm(768 * 16, 1536, 1024 * 16, 2304 * 16)


def test_a_geometry_mixing_eagle_and_plain_draft_groups_is_refused_in_one_line(tmp_path):
    extra = '[[groups]]\nkind = "draft-attention"\nblock_size = 64\neagle = false\n\n'
    geometry = _kimi_k3_with(tmp_path, "mixed-drafts", extra)
    args = ["--variant", "baseline", "--geometry", str(geometry), "--out", str(tmp_path), "--no-vllm"]
    status, _, err = mine(HEADLINE, *args)
    assert status == 1
    assert "all annotated as EAGLE or none are" in err
    assert len(err.strip().splitlines()) == 1


def test_any_refuted_theorem_can_be_mined(tmp_path):
    """A theorem that is not about a prefill: its own obligation, its Bool
    inputs as views, replayed on the model; pr457 keeps the explicit cadence."""
    status, out, err = mine(
        "config-explicit-cadence-kept", "--variant", "baseline", "--max", "1", "--out", str(tmp_path)
    )
    assert status == 0, err
    (doc,) = load_corpus(tmp_path).values()
    assert doc["obligation"] == "main" and "scenario" not in doc and doc["fixes"] == []
    assert doc["expected"]["baseline"] == FAILS and doc["expected"]["pr457"] == "holds"
    assert replay_outcome(doc, "baseline") == FAILS


def test_size_vectors_smallest_total_first():
    vectors = list(size_vectors(3, 2))
    assert vectors[0] == (1, 1, 1)
    assert vectors[1:4] == [(1, 1, 2), (1, 2, 1), (2, 1, 1)]
    assert len(vectors) == 1 + 3 + 6
    assert [sum(v) for v in vectors] == sorted(sum(v) for v in vectors)


VIEW_CHECK = """
import random, z3
from models import arith
from models.variants import get_variant
from proofs.catalog import CATALOGUE
from proofs.mining.miner import make_views
theorem = CATALOGUE["prefill-published-on-target-boundaries"]
obligation = theorem.trace_search
(view,) = make_views(theorem, obligation, ["not eagle_drop and (prompt % cadence == 0 or budget0 // 2 >= span1)"])
variant = get_variant("pr457")
rng = random.Random(7)
with arith.symbolic_context() as context:
    symbolic = {v.name: (z3.Bool(v.name) if v.kind.value == "bool" else z3.Int(v.name)) for v in obligation.variables}
    term = view.evaluate(variant, symbolic)
agree = 0
for _ in range(200):
    values = {n: (rng.random() < 0.5 if z3.is_bool(t) else rng.randint(1, 12)) for n, t in symbolic.items()}
    solver = z3.Solver()
    solver.add(*context.definitions, *(symbolic[n] == values[n] for n in values))
    assert solver.check() == z3.sat
    assert z3.is_true(solver.model().eval(term, model_completion=True)) == view.evaluate(variant, values), values
    agree += 1
print(agree)
"""


def test_a_view_reads_the_same_on_ints_and_in_z3():
    result = subprocess.run(
        [sys.executable, "-c", VIEW_CHECK], capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "200"


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["no-such-theorem"], "unknown theorem 'no-such-theorem'"),
        ([HEADLINE, "--variant", "nope"], "unknown variant 'nope'"),
        ([HEADLINE, "--max", "0"], "--max: must be a positive integer, got 0"),
        ([HEADLINE, "--max", "-3"], "--max: must be a positive integer"),
        ([HEADLINE, "--max", "two"], "--max: expected a positive integer"),
        ([HEADLINE, "--view", "budget0 <"], "not an expression"),
        # Compiled and evaluated by recursion: Python's parser or the compiler raised RecursionError.
        ([HEADLINE, "--view", "not " * 5000 + "budget0 > 1"], "(20,011 characters): nested more than 100 deep"),
        ([HEADLINE, "--view", "+".join(["budget0"] * 3000) + " > 1"], "nested more than 100 deep"),
        ([HEADLINE, "--view", "budget0 > " + "9" * 5000], "not an expression: an integer with more than 4,300 digits"),
        ([HEADLINE, "--view", "__import__('os').system('true')"], "Call is not allowed"),
        ([HEADLINE, "--view", "prompt.real > 1"], "Attribute is not allowed"),
        ([HEADLINE, "--view", "nosuch > 1"], "unknown name 'nosuch'"),
        ([HEADLINE, "--view", "prompt / 2 == 1"], "use // for floor division"),
        ([HEADLINE, "--view", "prompt % 0 == 1"], "division by the constant 0"),
        ([HEADLINE, "--view", "budget0 + 1"], "a view must be a condition"),
        ([HEADLINE, "--view", "eagle_drop + 1 > 0"], "arithmetic needs an integer"),
        ([HEADLINE, "--view", "'text' == 'text'"], "only integers and True/False"),
        (
            [HEADLINE, "--format", "xml"],
            "--format: invalid choice: 'xml' (choose from 'text', 'json', 'pytest', 'vllm-test')",
        ),
        ([HEADLINE, "--ladder", "-1"], "--ladder: must be a non-negative integer"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, tmp_path, args, fragment):
    # In this process: each is refused before any Z3 query.
    status = main(["mine", *args, "--out", str(tmp_path)])
    captured = capsys.readouterr()
    out, err = captured.out, captured.err
    assert status == 2
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("gridproof: error: ") and fragment in err, err
    assert not list(tmp_path.iterdir())


def test_an_out_directory_that_cannot_be_made_is_refused_before_the_mining(capsys, tmp_path):
    (tmp_path / "a-file").write_text("")
    status = main(["mine", HEADLINE, "--variant", "baseline", "--no-vllm", "--out", str(tmp_path / "a-file" / "cases")])
    err = capsys.readouterr().err
    assert status == 2
    assert err == f"gridproof: error: --out: cannot make {tmp_path / 'a-file' / 'cases'}: Not a directory\n"


def test_files_in_the_out_directory_that_are_not_cases_are_passed_over(tmp_path):
    (tmp_path / "binary.json").write_bytes(bytes(range(256)))
    (tmp_path / "nested.json").write_text("[" * 100_000 + "]" * 100_000)
    (tmp_path / "huge.json").write_text("9" * 5000)
    assert load_corpus(tmp_path) == {}


def test_bad_view_from_the_shell():
    result = gridproof("mine", HEADLINE, "--view", "import os")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def test_view_errors_are_view_errors():
    theorem = CATALOGUE[HEADLINE]
    with pytest.raises(ViewError):
        make_views(theorem, theorem.trace_search, ["eagle_drop", "eagle_drop"])


def test_mining_from_elsewhere_writes_here_and_announces_each_class(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["mine", HEADLINE, "--variant", "baseline", "--max", "1", "--no-vllm"]) == 0
    captured = capsys.readouterr()
    assert len(list((tmp_path / "gridproof-regressions").glob("*.json"))) == 1
    assert "mine: class 1 found: " in captured.err
    assert "s of search" in captured.out.splitlines()[-1]
