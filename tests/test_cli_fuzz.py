"""Every command (simulate, prove, report, mine, mutate, source, check), driven in this process
through `proofs.cli.main` with generated arguments and generated files (geometry TOML, result JSON
and a model's config.json: valid, truncated, wrong types, huge numbers, binary): it answers with
exit status 0, 1 or 2, never an exception; exit 2 is exactly one line on stderr, `gridproof: error: ...`.

The argument shapes keep each call short: `prove` selects one cheap theorem, `mine` records a
geometry (no search) without loading vLLM, `mutate` only lists its mutants, `source` is given
paths that hold no vLLM (no download). The example budget is fixed and the generation
derandomised, so CI sees the same cases every run.
"""

from __future__ import annotations

import json
import tomllib
from functools import cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from models.geometry import BUILTIN_DIR, builtin_geometry_names
from models.hf_config import FAMILY_DIR, builtin_model_names
from proofs.cli import main
from proofs.faults.handwritten import known_names
from proofs.report import FORMATS
from proofs.run.prove import ProveRequest, run_catalogue

CHEAP_THEOREM = "config-explicit-cadence-kept"  # three obligations, one refuted, well under a second
PREFILL_THEOREM = "prefill-published-on-target-boundaries"
FUZZ = settings(
    max_examples=100,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


# --- values: what a user might type, and what a damaged file might hold --------------------------

HUGE = 10**30
odd_numbers = st.sampled_from(["0", "-1", "1", "2", "7", "1e3", "0x10", "1_000", "٣", " 5 ", "", "9" * 50, "9" * 5000])
odd_text = st.one_of(odd_numbers, st.text(max_size=12), st.sampled_from(["nan", "inf", "-inf", "\x00", "a" * 300]))
budget_text = st.one_of(
    odd_text, st.lists(odd_numbers, min_size=1, max_size=4).map(",".join), st.sampled_from(["4096", "4096,1"])
)
variant_text = st.one_of(
    st.sampled_from([*known_names(), "pr999", "mutant:", "baseline,pr457", ","]),
    st.text(max_size=8),
)
good_variant = st.sampled_from(known_names())
good_budget = st.one_of(
    st.integers(1, 10**6).map(str),
    st.lists(st.integers(1, 9000), min_size=1, max_size=4).map(lambda values: ",".join(map(str, values))),
)
json_scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from([0, -1, 1, HUGE, -HUGE, 2**63, 0.5, 1e308]),
    st.text(max_size=6),
    st.sampled_from(["half \ud800", "bell\x07", "\x1b[31m"]),  # JSON spells them; no report can write them
)
json_value = st.one_of(
    json_scalar, st.lists(json_scalar, max_size=3), st.dictionaries(st.text(max_size=4), json_scalar)
)
toml_value = st.one_of(
    st.sampled_from(["0", "-1", "1", "4096", "1e3", "true", '"text"', "[]", "[1, 2]", "{}", "inf", "nan"]),
    st.sampled_from([str(HUGE), "9" * 5000, "[" * 2000 + "]" * 2000, '"' + "x" * 10_000 + '"']),
)
binary = st.one_of(
    st.binary(min_size=1, max_size=64),
    st.just(b"\x89PNG\r\n\x1a\n\x00\x00\x00"),
    st.just("name = 'caf\u00e9'".encode("latin-1")),
)


def _paths(data: object, prefix: tuple = ()) -> list[tuple]:
    """Every path to a value in nested dicts and lists."""
    found = [prefix] if prefix else []
    if isinstance(data, dict):
        for key, value in data.items():
            found += _paths(value, (*prefix, key))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            found += _paths(value, (*prefix, i))
    return found


def _replaced(data, path: tuple, value, delete: bool):
    copy = json.loads(json.dumps(data))
    holder = copy
    for step in path[:-1]:
        holder = holder[step]
    if delete:
        del holder[path[-1]]
    else:
        holder[path[-1]] = value
    return copy


@cache
def valid_result_text() -> str:
    result, _entries = run_catalogue(ProveRequest(theorem=CHEAP_THEOREM, jobs=1))
    return json.dumps(result, indent=2)


def _shaped(draw, text: str, own_shape: str) -> tuple[str, bytes | None]:
    """A shape for a file made from the valid `text`, and the file itself when that shape needs
    nothing of the format: as it is, cut short, or binary."""
    shape = draw(st.sampled_from(["valid", "changed", "changed", "changed", "truncated", "binary", own_shape]))
    if shape == "valid":
        return shape, text.encode()
    if shape == "truncated":
        return shape, text.encode()[: draw(st.integers(0, len(text) - 1))]
    if shape == "binary":
        return shape, draw(binary)
    return shape, None


def _json_file(draw, text: str, depth: int, extras=None) -> bytes:
    """The valid JSON `text` as it is, cut short, binary, other JSON, or with one to three of its
    fields at most `depth` deep replaced or deleted; `extras(draw, data)`, where given, adds a
    field instead half of the time."""
    shape, content = _shaped(draw, text, "other json")
    if content is not None:
        return content
    if shape == "other json":
        return json.dumps(draw(json_value)).encode()
    changed = json.loads(text)
    for _ in range(draw(st.integers(1, 3))):
        if extras is not None and draw(st.booleans()):
            extras(draw, changed)
            continue
        path = draw(st.sampled_from([p for p in _paths(changed) if len(p) <= depth]))  # fields, not their items
        changed = _replaced(changed, path, draw(json_value), delete=draw(st.booleans()) and isinstance(path[-1], str))
    return json.dumps(changed).encode()


@st.composite
def result_file(draw) -> bytes:
    return _json_file(draw, valid_result_text(), 3)


@cache
def builtin_toml(name: str) -> str:
    return (BUILTIN_DIR / f"{name}.toml").read_text()


@st.composite
def geometry_file(draw) -> bytes:
    text = builtin_toml(draw(st.sampled_from(builtin_geometry_names())))
    shape, content = _shaped(draw, text, "dropped line")
    if content is not None:
        return content
    lines = text.splitlines()
    settable = [i for i, line in enumerate(lines) if " = " in line and not line.startswith("#")]
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.sampled_from(settable))
        if shape == "dropped line":
            lines[i] = ""
        else:
            lines[i] = f"{lines[i].split(' = ')[0]} = {draw(toml_value)}"
    if draw(st.booleans()):
        lines.append(draw(st.sampled_from(["[request]", "unknown = 1", "[[groups]]", "kind = 'recurrent'"])))
    return "\n".join(lines).encode()


# --- the commands -------------------------------------------------------------------------------


def _flag(draw, name: str, good, bad=odd_text) -> list[str]:
    """Mostly absent or well-formed, so that the files behind the flags are reached; sometimes bad."""
    choice = draw(st.sampled_from(["absent", "absent", "good", "good", "bad"]))
    if choice == "absent":
        return []
    return [name, draw(good if choice == "good" else bad)]


def run(tmp_path: Path, capsys, argv: list[str]) -> None:
    # What drawing the arguments printed is not the command's: a valid result file is made once, by a run
    # of `prove`, whose progress would otherwise be read as this command's.
    capsys.readouterr()
    try:
        status = main(argv)
    except SystemExit as exit:  # --help
        status = exit.code
    captured = capsys.readouterr()
    assert status in (0, 1, 2), (argv, status, captured.err)
    event(f"exit {status}: {_problem(captured.err, tmp_path)}" if status == 2 else f"exit {status}")
    assert "Traceback" not in captured.err, (argv, captured.err)
    if status == 2:
        lines = captured.err.splitlines()
        assert len(lines) == 1 and lines[0].startswith("gridproof: error: "), (argv, captured.err)
        assert captured.out == "", argv


def geometry_argument(draw, tmp_path: Path) -> str:
    """A generated geometry file, a built-in name, or a path that is no geometry."""
    source = draw(st.sampled_from(["file", "file", "builtin", "missing"]))
    if source == "file":
        return _written(tmp_path, "g.toml", draw(geometry_file()))
    if source == "builtin":
        return draw(st.sampled_from(builtin_geometry_names()))
    return draw(st.sampled_from(["nowhere.toml", str(tmp_path), "", "../kimi-k3-tp16-dcp16"]))


def _problem(err: str, tmp_path: Path) -> str:
    """The kind of error, for `--hypothesis-show-statistics`: the message without file names or values."""
    message = err.removeprefix("gridproof: error: ").replace(str(tmp_path), "TMP")
    return " ".join(message.split()[:4])[:50]


def _written(tmp_path: Path, name: str, content: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(content)
    return str(path)


@settings(FUZZ)
@given(data=st.data())
def test_simulate_never_raises(tmp_path_factory, capsys, data):
    tmp_path = tmp_path_factory.mktemp("simulate")
    draw = data.draw
    argv = ["simulate", geometry_argument(draw, tmp_path)]
    argv += _flag(draw, "--variant", good_variant, variant_text)
    argv += _flag(draw, "--prompt-tokens", st.integers(1, 10**13).map(str), odd_numbers)
    argv += _flag(draw, "--budget", good_budget, budget_text)
    argv += ["--json"] if draw(st.booleans()) else []
    run(tmp_path, capsys, argv)


@pytest.mark.slow  # fuzzing the command line, several seconds a run; CI runs it
@settings(FUZZ, max_examples=300)  # each call is short: the result is small
@given(data=st.data())
def test_report_never_raises(tmp_path_factory, capsys, data):
    tmp_path = tmp_path_factory.mktemp("report")
    draw = data.draw
    argv = ["report", _written(tmp_path, "r.json", draw(result_file()))]
    argv += _flag(draw, "--format", st.sampled_from(FORMATS))
    if draw(st.booleans()):
        argv += ["--out", draw(st.sampled_from([str(tmp_path / "out"), str(tmp_path), str(tmp_path / "no" / "x")]))]
    run(tmp_path, capsys, argv)


@settings(FUZZ, max_examples=30)
@given(data=st.data())
def test_prove_never_raises(tmp_path_factory, capsys, data):
    tmp_path = tmp_path_factory.mktemp("prove")
    draw = data.draw
    argv = ["prove", "--theorem", draw(st.sampled_from([CHEAP_THEOREM, CHEAP_THEOREM, "no-such-theorem", ""]))]
    argv += ["--jobs", draw(st.sampled_from(["1", "1", "0", "x"]))]
    argv += _flag(draw, "--variant", good_variant, variant_text)
    argv += _flag(draw, "--tier", st.sampled_from(["ci", "slow", "all"]), st.sampled_from(["fast", ""]))
    argv += _flag(draw, "--rlimit", st.sampled_from(["100", "20000000"]), odd_numbers)
    argv += _flag(draw, "--seed", st.sampled_from(["0", "7"]), odd_numbers)
    argv += _flag(draw, "--seeds", st.just("1"), st.sampled_from(["0", "-2", "x"]))
    argv += _flag(draw, "--rlimit-growth", st.sampled_from(["50", "0"]), st.sampled_from(["-1", "nan", "1e400", "x"]))
    if draw(st.booleans()):
        argv += ["--against", _written(tmp_path, "old.json", draw(result_file()))]
    argv += ["--json"] if draw(st.booleans()) else []
    run(tmp_path, capsys, argv)


@pytest.mark.slow  # fuzzing the command line, several seconds a run; CI runs it
@settings(FUZZ)
@given(data=st.data())
def test_mine_never_raises(tmp_path_factory, capsys, data):
    tmp_path = tmp_path_factory.mktemp("mine")
    draw = data.draw
    theorem = draw(st.sampled_from([PREFILL_THEOREM, PREFILL_THEOREM, CHEAP_THEOREM, "no-such-theorem"]))
    argv = [
        "mine",
        theorem,
        "--geometry",
        geometry_argument(draw, tmp_path),
        "--no-vllm",
        "--out",
        str(tmp_path / "cases"),
    ]
    argv += _flag(draw, "--variant", good_variant, variant_text)
    argv += _flag(draw, "--budget", good_budget, budget_text)
    argv += _flag(draw, "--format", st.sampled_from(["text", "json", "pytest"]), st.just("xml"))
    argv += _flag(draw, "--max", st.just("2"), odd_numbers)
    argv += _flag(draw, "--rlimit", st.just("100000"), odd_numbers)
    argv += _flag(draw, "--ladder", st.just("3"), odd_numbers)
    if draw(st.integers(0, 9)) == 0:
        argv += ["--view", draw(st.sampled_from(["budget0 < cadence", "1 +", ""]))]
    run(tmp_path, capsys, argv)


# What a model's config.json may add: the MTP counts vLLM reads, at the top or nested.
MODEL_EXTRAS = ("num_nextn_predict_layers", "mtp_num_hidden_layers", "text_config", "prefill_checkpoint_alignment")


@st.composite
def model_file(draw) -> bytes:
    """A built-in family's config.json, as _json_file changes it; the fields added are the MTP
    counts and a nested text_config."""
    text = (FAMILY_DIR / f"{draw(st.sampled_from(builtin_model_names()))}.json").read_text()
    return _json_file(draw, text, 2, _model_extra)


def _model_extra(draw, config: dict) -> None:
    extra = draw(st.sampled_from(MODEL_EXTRAS))
    nested = {draw(st.sampled_from(MODEL_EXTRAS[:2])): draw(json_value)}
    config[extra] = nested if extra == "text_config" and draw(st.booleans()) else draw(json_value)


SPECULATIVE_METHODS_TRIED = ("eagle", "eagle3", "mtp", "qwen3_next_mtp", "draft_model", "dflash", "dspark", "ngram")


@st.composite
def speculative_config(draw) -> str:
    """A well-formed --speculative-config, one with odd values, or text that is no JSON object."""
    shape = draw(st.sampled_from(["good", "good", "odd values", "other json", "text"]))
    if shape == "text":
        return draw(odd_text)
    if shape == "other json":
        return json.dumps(draw(json_value))
    config = {"method": draw(st.sampled_from(SPECULATIVE_METHODS_TRIED))}
    if draw(st.booleans()):
        config["num_speculative_tokens"] = draw(st.integers(1, 8))
    for switch in ("parallel_drafting", "disable_eagle_block_drop", "disable_lookahead_block_hashes"):
        if draw(st.booleans()):
            config[switch] = draw(st.booleans())
    if shape == "odd values":
        config[draw(st.sampled_from([*config, "num_speculative_tokens"]))] = draw(json_value)
    return json.dumps(config)


@st.composite
def kv_transfer_config(draw) -> str:
    """The native offload connector with its chunk keys well-formed or odd, other JSON, or text."""
    shape = draw(st.sampled_from(["good", "odd values", "other json", "text"]))
    if shape == "text":
        return draw(odd_text)
    if shape == "other json":
        return json.dumps(draw(json_value))
    extra = {}
    for key in ("blocks_per_chunk", "block_size"):
        if draw(st.booleans()):
            extra[key] = draw(json_value) if shape == "odd values" else draw(st.integers(1, 4096))
    config = {"kv_connector": draw(st.sampled_from(["OffloadingConnector", "OffloadingConnector", "Other"]))}
    return json.dumps({**config, "kv_connector_extra_config": extra} if extra or draw(st.booleans()) else config)


def _model_argument(draw, tmp_path: Path) -> list[str]:
    source = draw(st.sampled_from(["file", "file", "builtin", "missing", "absent"]))
    if source == "absent":
        return []
    if source == "file":
        return ["--model", _written(tmp_path, "config.json", draw(model_file()))]
    if source == "builtin":
        return ["--model", draw(st.sampled_from(builtin_model_names()))]
    return ["--model", draw(st.sampled_from(["nowhere.json", str(tmp_path), "", "kimi"]))]


SIZE_FLAGS = (
    "--tensor-parallel-size",
    "--decode-context-parallel-size",
    "--block-size",
    "--mamba-block-size",
    "--max-num-batched-tokens",
    "--max-num-scheduled-tokens",
    "--long-prefill-token-threshold",
    "--max-model-len",
)
# Mostly sizes a deployment would use (a TP or DCP size must divide the model's heads).
good_size = st.one_of(
    st.sampled_from(["1", "1", "2", "4", "16", "768", "4096", "8192"]), st.integers(1, 10**6).map(str)
)
# The token counts vLLM's parser reads with a suffix (--max-model-len also auto).
READABLE_FLAGS = ("--max-num-batched-tokens", "--max-num-scheduled-tokens", "--max-model-len")
readable_size = st.one_of(good_size, st.sampled_from(["8k", "4K", "25.6k", "1.001k", "auto", "-1"]))


@settings(FUZZ, max_examples=200)
@given(data=st.data())
def test_check_never_raises(tmp_path_factory, capsys, data):
    tmp_path = tmp_path_factory.mktemp("check")
    _check_once(tmp_path, capsys, data.draw)


def _seldom_bad(draw, name: str, good, bad=odd_text) -> list[str]:
    """As _flag, but a bad value only one time in twenty: `check` reads many flags, and one bad
    among them ends the call before the model and the deployment are read."""
    choice = draw(st.integers(0, 19))
    if choice < 9:
        return []
    return [name, draw(good if choice < 19 else bad)]


def _check_once(tmp_path: Path, capsys, draw) -> None:
    argv = ["check", *_model_argument(draw, tmp_path)]
    for flag in SIZE_FLAGS:
        argv += _seldom_bad(draw, flag, readable_size if flag in READABLE_FLAGS else good_size, odd_numbers)
    argv += _seldom_bad(draw, "--mamba-cache-mode", st.sampled_from(["align", "none"]), st.just("all"))
    argv += _seldom_bad(draw, "--mamba-ssm-cache-dtype", st.sampled_from(["auto", "float32"]), st.just("int4"))
    argv += _seldom_bad(draw, "--kv-cache-dtype", st.sampled_from(["auto", "fp8", "float16"]), st.just("fp8_ds_mla"))
    argv += _seldom_bad(draw, "--speculative-config", speculative_config())
    argv += _seldom_bad(draw, "--kv-transfer-config", kv_transfer_config())
    argv += _seldom_bad(draw, "--variant", st.sampled_from(["baseline", "pr457", "pr457-guarded"]), variant_text)
    argv += draw(st.sampled_from([[], [], ["--no-enable-prefix-caching"], ["--enable-prefix-caching"]]))
    argv += _seldom_bad(draw, "--verify-law-up-to", st.sampled_from(["1", "50"]), odd_numbers)
    # Only paths under tmp_path: a bad value is one that cannot be written, never a file in the checkout.
    unwritable = st.sampled_from([str(tmp_path), str(tmp_path / "no" / "g.toml")])
    argv += _seldom_bad(draw, "--emit-geometry", st.just(str(tmp_path / "g.toml")), unwritable)
    # A row simulates the typical request, up to seconds at a budget of a few tokens: a few rows.
    sweep = st.sampled_from(
        ["max_num_batched_tokens=512..4096:512", "block_size=16..64:16", "tensor_parallel_size=1..4"]
    )
    if draw(st.integers(0, 4)) == 0:  # a sweep answers instead of the deployment's analysis
        # Ranges of any size: one too long for len() to count was a traceback.
        low, high = st.sampled_from([-1, 0, 1, 16]), st.sampled_from([3, 64, 10**19, 10**30, 10**40])
        step = st.sampled_from([1, 2, 7, 10**29, 0, -1])
        ranges = st.tuples(low, high, step).map(lambda r: f"block_size={r[0]}..{r[1]}:{r[2]}")
        odd_sweep = st.sampled_from(["block_size=9..1", "x=1..2", "block_size", "=..", "tp=0..1"])
        argv += ["--sweep", draw(st.one_of(sweep, odd_sweep, ranges))]
    argv += ["--json"] if draw(st.booleans()) else []
    run(tmp_path, capsys, argv)


@pytest.mark.parametrize("command", ["simulate", "report", "prove", "mine", "check"])
def test_a_binary_file_is_exit_2_naming_it(tmp_path, capsys, command):
    path = tmp_path / "picture.png"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    argv = {
        "simulate": ["simulate", str(path)],
        "report": ["report", str(path)],
        "prove": ["prove", "--theorem", CHEAP_THEOREM, "--jobs", "1", "--against", str(path)],
        "mine": ["mine", PREFILL_THEOREM, "--geometry", str(path), "--no-vllm", "--out", str(tmp_path / "out")],
        "check": ["check", "--model", str(path)],
    }[command]
    assert main(argv) == 2
    err = capsys.readouterr().err
    flag = "--model " if command == "check" else ""
    assert err == f"gridproof: error: {flag}{path}: a binary file, not {_expected(command)}\n"


def _expected(command: str) -> str:
    if command == "check":
        return "a Hugging Face config.json"
    if command in ("simulate", "mine"):
        return "a geometry TOML file"
    return "a result written by `gridproof prove --json`"


def test_the_generated_files_include_valid_ones():
    """The fuzzing reaches past the readers: its valid starting points load."""
    assert tomllib.loads(builtin_toml("kimi-k3-tp16-dcp16"))["request"]["prompt_tokens"] == 100000
    assert json.loads(valid_result_text())["format"] == "gridproof-result/1"


@pytest.mark.slow  # fuzzing the command line, several seconds a run; CI runs it
@settings(FUZZ, max_examples=15)  # --list: the mutants are generated, none is run
@given(data=st.data())
def test_mutate_never_raises(tmp_path_factory, capsys, data):
    tmp_path = tmp_path_factory.mktemp("mutate")
    draw = data.draw
    argv = ["mutate", "--list"]
    modules = st.sampled_from(["prefix_cache", "plan", "prefill"])
    argv += _flag(draw, "--module", modules, st.sampled_from(["arith", ""]))
    argv += _flag(draw, "--operator", st.sampled_from(["relational", "drop-stop"]), odd_text)
    argv += _flag(draw, "--function", st.sampled_from(["chunk_end", "gpu_hit"]), odd_text)
    mutants = st.sampled_from(["prefix_cache:gpu_hit:arith+1:0", "plan:plan:compare-1:0"])
    argv += _flag(draw, "--mutant", mutants, odd_text)
    argv += _flag(draw, "--sample", st.sampled_from(["1", "3"]), odd_numbers)
    argv += _flag(draw, "--seed", st.sampled_from(["0", "5"]), odd_numbers)
    argv += _flag(draw, "--jobs", st.just("1"), odd_numbers)
    argv += _flag(draw, "--timeout", st.just("30"), odd_numbers)
    argv += _flag(draw, "--fail-under", st.just("50"), odd_numbers)
    argv += ["--json"] if draw(st.booleans()) else []
    run(tmp_path, capsys, argv)


@settings(FUZZ, max_examples=15)  # only paths that are no vLLM: no download, no symbolic execution
@given(data=st.data())
def test_source_never_raises(tmp_path_factory, capsys, data):
    tmp_path = tmp_path_factory.mktemp("source")
    draw = data.draw
    shape = draw(st.sampled_from(["file", "directory", "missing", "wheel-named"]))
    if shape == "file":
        path = _written(tmp_path, "something", draw(binary))
    elif shape == "wheel-named":
        path = _written(tmp_path, "vllm-0.33.0-py3-none-any.whl", draw(binary))
    elif shape == "directory":
        path = str(tmp_path)
    else:
        path = str(tmp_path / "nowhere")
    argv = ["source", "--vllm", path]
    argv += _flag(draw, "--function", st.sampled_from(["split", "checkpoint_position"]), odd_text)
    argv += ["--json"] if draw(st.booleans()) else []
    run(tmp_path, capsys, argv)
