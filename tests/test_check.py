"""`gridproof check`: the Kimi-K3 judging deployments, vLLM's flag spellings,
bad input (one line, exit 2), and the geometry it writes, as vLLM 0.33.0 reads them
(`check` and `check_json` ask --vllm-version 0.33.0 unless a test names a variant or release;
tests/test_check_releases.py holds what 0.34.0 answers otherwise)."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

import pytest

from models.deploy import ServeFlags, resolve_deployment
from models.geometry import load_geometry
from models.hf_config import builtin_model_names, load_model
from models.plan import plan
from models.variants import BASELINE, PR457_GUARDED
from proofs.cli import build_parser, main
from proofs.commands.check import flags_from

KIMI_K3 = [
    "--model",
    "kimi-k3",
    "-tp",
    "16",
    "-dcp",
    "16",
    "--block-size",
    "768",
    "--max-num-scheduled-tokens",
    "4096",
    "--speculative-config",
    '{"method": "eagle", "num_speculative_tokens": 3}',
    "--kv-transfer-config",
    '{"kv_connector": "OffloadingConnector", "kv_role": "kv_both"}',
]


def check(capsys, *args: str) -> tuple[int, str]:
    named = any(a in ("--variant", "--vllm-version") or a.startswith(("--variant=", "--vllm-version=")) for a in args)
    status = main(["check", *args, *(() if named else ("--vllm-version", "0.33.0"))])
    return status, capsys.readouterr().out


def check_json(capsys, *args: str) -> tuple[int, dict]:
    status, out = check(capsys, *args, "--json")
    return status, json.loads(out)


def test_kimi_k3_without_mamba_block_size_restores_what_vllm_restores(capsys):
    """The real scheduler's answers (tests/test_simulate.py's KIMI_K3_RESENDS, measured again by the
    conformance tests): 99,072 of a 100,000-token resend from the GPU, 0 through offload alone."""
    status, result = check_json(capsys, *KIMI_K3, "--variant", "baseline")
    assert status == 1
    typical = result["typical_request"]
    assert (typical["restored_gpu"], typical["restored_offload"]) == (99_072, 0)
    assert result["cadence"] == 768
    assert [g["span"] for g in result["groups"]] == [12_288, 768, 768]
    assert result["aligned"]["verdict"] == "REFUTED"
    assert result["pr457_guarded"]["accepts"] is False
    law = result["hit_law"]
    assert law["verdict"] == "CHECKED" and law["form"] == "hit(L) = max(0, ⌊L/768⌋·768 − 768)"
    assert law["smallest_hit"] == 1_536


def test_kimi_k3_with_12288_under_pr457_guarded_answers_in_plain_words_first(capsys):
    status, out = check(capsys, *KIMI_K3, "--variant", "pr457-guarded", "--mamba-block-size", "12288")
    assert status == 0, out
    lines = out.splitlines()
    assert lines[1].startswith("  A later request that shares the first L tokens of a prompt is restored hit(L)")
    assert lines[2] == "    hit(L) = max(0, ⌊L/768⌋·768 − 768)"
    assert "through native offload alone it is restored 86,016" in out
    assert out.rstrip().endswith("OK (exit 0)")


def test_kimi_k3_with_5000_names_the_target_group_and_a_failing_prefix(capsys):
    status, result = check_json(capsys, *KIMI_K3, "--variant", "pr457-guarded", "--mamba-block-size", "5000")
    assert status == 1
    guard = result["pr457_guarded"]
    assert guard["breaking_group"]["kind"] == "target-attention"
    assert guard["breaking_group"]["span"] == 12_288
    prefix = guard["counterexample"]["prefix_tokens"]
    assert prefix % 5000 == 0 and prefix % 12_288 != 0
    assert any("rejects" in why for why in result["why"])


def test_every_vllm_flag_is_accepted_in_vllm_spelling():
    args = build_parser().parse_args(
        [
            "check",
            "--model",
            "nemotron-h",
            "--tensor-parallel-size",
            "2",
            "--decode-context-parallel-size",
            "2",
            "--block-size",
            "64",
            "--mamba-block-size",
            "4096",
            "--mamba-cache-mode",
            "align",
            "--max-num-batched-tokens",
            "8200",
            "--max-num-scheduled-tokens",
            "8192",
            "--long-prefill-token-threshold",
            "4096",
            "--max-model-len",
            "131072",
            "--speculative-config",
            '{"method": "mtp", "num_speculative_tokens": 2}',
            "--kv-transfer-config",
            '{"kv_connector": "OffloadingConnector"}',
            "--no-enable-prefix-caching",
            "--mamba-ssm-cache-dtype",
            "float32",
        ]
    )
    flags = flags_from(args)
    assert flags == ServeFlags(
        tensor_parallel_size=2,
        decode_context_parallel_size=2,
        block_size=64,
        mamba_block_size=4096,
        mamba_cache_mode="align",
        max_num_batched_tokens=8200,
        max_num_scheduled_tokens=8192,
        long_prefill_token_threshold=4096,
        max_model_len=131072,
        speculative_config={"method": "mtp", "num_speculative_tokens": 2},
        kv_transfer_config={"kv_connector": "OffloadingConnector"},
        enable_prefix_caching=False,
        mamba_ssm_cache_dtype="float32",
    )
    short = flags_from(build_parser().parse_args(["check", "-tp", "8", "-dcp", "4", "--enable-prefix-caching"]))
    assert (short.tensor_parallel_size, short.decode_context_parallel_size, short.enable_prefix_caching) == (8, 4, True)
    underscores = flags_from(build_parser().parse_args(["check", "--max_model_len=4096", "--block_size", "32"]))
    assert (underscores.max_model_len, underscores.block_size) == (4096, 32)


def _offload(extra) -> str:
    return json.dumps({"kv_connector": "OffloadingConnector", "kv_connector_extra_config": extra})


BAD_INPUT = [
    (["--tensor-parallel-size", "-2"], "must be a positive integer"),
    (["-tp", "two"], "expected a positive integer"),
    (["--block-size", "0"], "must be a positive integer"),
    (["--speculative-config", "{method: eagle}"], "not valid JSON"),
    (["--speculative-config", '{"method": "warp"}'], "unknown method"),
    (["--speculative-config", '{"method": "eagle"}'], 'needs "num_speculative_tokens"'),
    (["--kv-transfer-config", "[1]"], "expected a JSON object"),
    (["--mamba-cache-mode", "all"], "invalid choice"),
    (["--mamba-ssm-cache-dtype", "int4"], "invalid choice"),
    (["--max-num-seqs", "4"], "unknown flag: --max-num-seqs"),
    (["--model", "llama-3"], "no such config.json or built-in model"),
    (["--variant", "pr999"], "unknown variant"),
    (["-tp", "3", "--model", "nemotron-h"], "does not divide"),
    (["-tp", "4", "-dcp", "3"], "must divide --tensor-parallel-size"),
    (["--no-enable-prefix-caching", "--mamba-block-size", "512"], "needs prefix caching"),
    (["--sweep", "max-num-seqs=1..4"], "expected FLAG=a..b"),
    (
        ["--speculative-config", '{"method": "eagle", "num_speculative_tokens": 3}', "--max-num-batched-tokens", "3"],
        "--max-num-batched-tokens 3 leaves no token beside the 3 lookahead slots",
    ),
    (
        ["--speculative-config", '{"method": "eagle", "num_speculative_tokens": 2, "parallel_drafting": 1}'],
        "parallel_drafting must be true or false",
    ),
    (
        ["-tp", "4", "-dcp", "4", "--kv-transfer-config", _offload({"block_size": 1024})],
        "block_size 1024 needs every cache group to span as many tokens per block",
    ),
    (["--kv-transfer-config", _offload({"block_size": 64, "blocks_per_chunk": 2})], "not both"),
    (["--kv-transfer-config", _offload({"blocks_per_chunk": 0})], "blocks_per_chunk must be greater than 0, got 0"),
    (["--kv-transfer-config", _offload({"blocks_per_chunk": "4.0"})], 'blocks_per_chunk "4.0" is not an integer'),
    (["--kv-transfer-config", _offload({"block_size": [64]})], "block_size [64] is not an integer (vLLM's int()"),
    (
        ["--kv-transfer-config", _offload({"block_size": 0})],
        "block_size 0 is 0 GPU blocks of 1920 tokens per offloaded chunk: vLLM 0.33.0 accepts it",
    ),
    (["--kv-transfer-config", _offload([1])], "kv_connector_extra_config must be a JSON object"),
    # Beyond vLLM's int32 token counts, and work that grows with the value, refused up front.
    (["--max-num-batched-tokens", str(2**31)], "at most 2,147,483,647 (vLLM holds token counts in int32)"),
    (["--max-model-len", "3t"], "at most 2,147,483,647 (vLLM holds token counts in int32), got 3,000,000,000,000"),
    (["--max-num-scheduled-tokens", "0k"], "must be a positive token count, got '0k' (0)"),
    (["--max-num-batched-tokens", "8kb"], "expected a token count such as 8192, 8k or 8K, got '8kb'"),
    (["--long-prefill-token-threshold", "9" * 30], "at most 2,147,483,647"),
    (["--verify-law-up-to", "1000001"], "at most 1,000,000 (each length is simulated)"),
    (["--sweep", "block_size=1..99999999999999"], "99,999,999,999,999 values: at most 64"),
    (["--sweep", f"block_size=1..{10**30}:{10**29}"], "values of at most 2,147,483,647"),
    # More values than a range's len() can count: counted, not a traceback.
    (["--sweep", f"block_size=1..{10**30}"], f"{10**30:,} values: at most 64"),
    (["--sweep", "block_size=16..64:0"], "expected a positive step, got '0'"),
    (["--sweep", "max-num-batched-tokens=1.5K..2K"], "expected token counts such as 8192, 8k or 8K"),
    # json.loads raises RecursionError and int()'s ValueError past JSONDecodeError: both were tracebacks.
    (["--speculative-config", "[" * 3000 + "]" * 3000], "not valid JSON: arrays or objects nested too deep"),
    (["--speculative-config", '{"num_speculative_tokens": ' + "9" * 5000 + "}"], "more than 4,300 digits"),
    (["--kv-transfer-config", "[" + "1," * 500 + "1]"], "... (1,003 characters)"),
]


@pytest.mark.parametrize(("args", "message"), BAD_INPUT, ids=[" ".join(a)[:60] for a, _ in BAD_INPUT])
def test_bad_input_is_one_line_and_exit_2(capsys, args, message):
    try:
        status = main(["check", *args])
    except SystemExit as stop:
        status = stop.code
    captured = capsys.readouterr()
    assert status == 2
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], captured.err
    assert "Traceback" not in captured.err


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"a": ' * 3000 + "1" + "}" * 3000, "not valid JSON: arrays or objects nested too deep"),
        ('{"num_hidden_layers": ' + "9" * 5000 + "}", "not valid JSON: an integer with more than 4,300 digits"),
    ],
    ids=["nested", "huge-integer"],
)
def test_a_config_json_that_json_cannot_read_is_one_line(capsys, tmp_path, text, message):
    config = tmp_path / "config.json"
    config.write_text(text)
    assert main(["check", "--model", str(config)]) == 2
    assert capsys.readouterr().err == f"gridproof: error: --model {config}: {message}\n"


EAGLE_3 = '{"method": "eagle", "num_speculative_tokens": 3}'


def test_a_sequential_eagle_drafter_takes_no_batched_token(capsys):
    """vLLM 0.33.0 reserves no draft slot for EAGLE (max_num_new_slots_for_drafting): the budget
    is every batched token; a parallel drafter reserves K - 1."""
    base = ["--model", "kimi-k3", "-tp", "16", "-dcp", "16", "--block-size", "768", "--max-num-batched-tokens"]
    _, sequential = check_json(capsys, *base, "8192", "--speculative-config", EAGLE_3)
    assert sequential["max_num_scheduled_tokens"] == 8192
    parallel = '{"method": "eagle", "num_speculative_tokens": 3, "parallel_drafting": true}'
    _, drafted = check_json(capsys, *base, "8192", "--speculative-config", parallel)
    assert drafted["max_num_scheduled_tokens"] == 8190
    # The token budget binds below the batched tokens less the slots, and not above.
    _, scheduled = check_json(
        capsys, *base, "4102", "--max-num-scheduled-tokens", "4101", "--speculative-config", parallel
    )
    assert scheduled["max_num_scheduled_tokens"] == 4100


def test_under_0_34_the_connectors_class_decides_the_hash_lookahead(capsys):
    """vLLM 0.34.0 asks the KV connector's class whether it keeps the lookahead block hashes: the native
    offload and SimpleCPUOffloadConnector do, LMCache's does not, 0.33.0 drops them beside any; a connector
    whose answer gridproof does not know is refused in one line, exit 2."""
    base = ["--model", "kimi-k3", "-tp", "16", "-dcp", "16", "--block-size", "768", "--speculative-config", EAGLE_3]
    lookahead = {}
    for release, connector in itertools.product(
        ("0.33.0", "0.34.0"), ("SimpleCPUOffloadConnector", "LMCacheConnectorV1")
    ):
        transfer = json.dumps({"kv_connector": connector, "kv_role": "kv_both"})
        _, result = check_json(capsys, *base, "--kv-transfer-config", transfer, "--vllm-version", release)
        lookahead[release, connector] = result["hash_lookahead_tokens"]
    assert lookahead == {
        ("0.33.0", "SimpleCPUOffloadConnector"): 0,
        ("0.33.0", "LMCacheConnectorV1"): 0,
        ("0.34.0", "SimpleCPUOffloadConnector"): 1,
        ("0.34.0", "LMCacheConnectorV1"): 0,
    }
    unknown = '{"kv_connector": "MyConnector", "kv_role": "kv_both"}'
    assert main(["check", *base, "--kv-transfer-config", unknown, "--vllm-version", "0.34.0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gridproof: error: --kv-transfer-config: gridproof does not know whether vLLM 0.34.0's "), err
    assert err.count("\n") == 1


def test_the_hash_lookahead_follows_the_drafter(tmp_path, capsys):
    """One token without a connector for EAGLE; none when the config disables lookahead hashes (the
    trailing block is dropped instead); K tokens for an MTP draft of several modules."""
    base = ["--model", "kimi-k3", "-tp", "16", "-dcp", "16", "--block-size", "768"]
    _, eagle = check_json(capsys, *base, "--speculative-config", EAGLE_3)
    assert (eagle["hash_lookahead_tokens"], eagle["eagle_block_drop"]) == (1, False)
    no_hashes = '{"method": "eagle", "num_speculative_tokens": 3, "disable_lookahead_block_hashes": true}'
    _, dropped = check_json(capsys, *base, "--speculative-config", no_hashes)
    assert (dropped["hash_lookahead_tokens"], dropped["eagle_block_drop"]) == (0, True)
    config = json.loads(_family_text("qwen3-next"))
    mtp = '{"method": "qwen3_next_mtp", "num_speculative_tokens": 3}'
    for layers, lookahead in ((1, 1), (3, 3)):
        path = tmp_path / f"mtp{layers}.json"
        path.write_text(json.dumps({**config, "num_nextn_predict_layers": layers}))
        _, result = check_json(capsys, "--model", str(path), "-tp", "4", "--speculative-config", mtp)
        assert result["hash_lookahead_tokens"] == lookahead, layers
        # The split model follows _reserve_prefill_lookahead now: nothing left to warn about.
        assert not [w for w in result["warnings"] if "_reserve_prefill_lookahead" in w], result["warnings"]
    # Without num_speculative_tokens, an MTP draft takes the model's layers, as vLLM's n_predict does;
    # more tokens than layers must be a multiple of them.
    _, default = check_json(capsys, "--model", str(path), "-tp", "4", "--speculative-config", '{"method": "mtp"}')
    assert default["hash_lookahead_tokens"] == 3
    status = main(
        ["check", "--model", str(path), "--speculative-config", '{"method": "mtp", "num_speculative_tokens": 4}']
    )
    assert status == 2 and "must be a multiple of the model's 3 MTP layers" in capsys.readouterr().err


def test_the_mtp_layer_count_is_read_where_vllm_reads_it_for_each_model_type(tmp_path, capsys):
    """Kimi-K3 nests the count under text_config, where vLLM's n_predict reads it, while
    use_multi_module_mtp reads the top level: one module's lookahead. Qwen3.5 counts
    mtp_num_hidden_layers. Kimi-K3 without a count gives the draft 0 layers, which vLLM fails on."""
    mtp = '{"method": "mtp"}'
    kimi = json.loads(_family_text("kimi-k3"))
    path = tmp_path / "kimi.json"
    path.write_text(json.dumps({**kimi, "text_config": {"num_nextn_predict_layers": 3}}))
    base = ["--model", str(path), "-tp", "16", "-dcp", "16", "--block-size", "768"]
    _, nested = check_json(capsys, *base, "--speculative-config", mtp)
    assert (nested["num_speculative_tokens"], nested["hash_lookahead_tokens"]) == (3, 1)
    assert main(["check", "--model", "kimi-k3", "-tp", "16", "-dcp", "16", "--speculative-config", mtp]) == 2
    assert "gives the draft 0 MTP layers" in capsys.readouterr().err
    qwen = json.loads(_family_text("qwen3.5"))
    path = tmp_path / "qwen.json"
    path.write_text(json.dumps({**qwen, "text_config": {"mtp_num_hidden_layers": 2}}))
    _, counted = check_json(capsys, "--model", str(path), "-tp", "4", "--speculative-config", mtp)
    assert counted["num_speculative_tokens"] == 2


def test_the_offload_chunk_is_read_as_vllm_reads_it():
    """blocks_per_chunk as given; block_size over the groups' one span per block (a DCP-sharded
    target group's block times the DCP size), which DCP 1 leaves equal. At TP 32, as vLLM takes DCP 4 over
    granite's 8 KV heads only from TP 32 on."""
    model = load_model("granite-4.0-h")

    def chunk(dcp: int, extra: dict) -> int:
        config = {"kv_connector": "OffloadingConnector", "kv_connector_extra_config": extra}
        flags = ServeFlags(tensor_parallel_size=32, decode_context_parallel_size=dcp, kv_transfer_config=config)
        return resolve_deployment(model, flags, BASELINE).geometry.deployment.offload_blocks_per_chunk

    block = resolve_deployment(model, ServeFlags(tensor_parallel_size=32), BASELINE).geometry.deployment.block_size
    assert chunk(1, {}) == 1
    assert chunk(4, {"blocks_per_chunk": 3}) == 3
    assert chunk(4, {"blocks_per_chunk": 3, "block_size": None}) == 3
    assert chunk(1, {"block_size": 4 * block}) == 4
    # Through int(), as vLLM reads them: a numeric string, a float cut toward 0, true as 1.
    assert chunk(4, {"blocks_per_chunk": " 5 "}) == 5
    assert chunk(4, {"blocks_per_chunk": 2.9}) == 2
    assert chunk(4, {"blocks_per_chunk": True}) == 1
    assert chunk(1, {"block_size": str(2 * block)}) == 2


def test_an_fp8_kv_cache_halves_the_attention_page_and_doubles_the_block(capsys):
    """Kimi-K3 at TP16/DCP16: the MLA latent in one byte, so the block that holds a state page doubles
    (tests/conformance/test_check_vllm.py holds every built-in model's resolution to vLLM's under fp8)."""
    deployment = ["--model", "kimi-k3", "-tp", "16", "-dcp", "16"]
    _, bf16 = check_json(capsys, *deployment)
    _, fp8 = check_json(capsys, *deployment, "--kv-cache-dtype", "fp8")
    assert fp8["resolved"]["attention_page_per_token"] * 2 == bf16["resolved"]["attention_page_per_token"] == 1152
    assert fp8["resolved"]["block_size"] == 2 * bf16["resolved"]["block_size"] == 256
    assert main(["check", *deployment, "--kv-cache-dtype", "fp8_ds_mla"]) == 2
    assert "--kv-cache-dtype: invalid choice: 'fp8_ds_mla'" in capsys.readouterr().err


def test_token_counts_are_read_as_vllms_parser_reads_them(capsys):
    """8k decimal, 8K binary, as `vllm serve` reads --max-num-batched-tokens and its kin; --max-model-len
    auto (or -1) is the model's own length."""
    status, result = check_json(
        capsys, "--max-num-batched-tokens", "8K", "--max-num-scheduled-tokens", "4k", "--max-model-len", "128k"
    )
    assert status == 0
    assert (result["flags"]["max_num_batched_tokens"], result["flags"]["max_num_scheduled_tokens"]) == (8192, 4000)
    assert result["flags"]["max_model_len"] == 128_000 and result["max_num_scheduled_tokens"] == 4000
    _, unset = check_json(capsys)
    for auto in ("auto", "-1"):
        _, result = check_json(capsys, "--max-model-len", auto)
        assert result["flags"]["max_model_len"] is None and result["typical_request"] == unset["typical_request"]
    assert main(["check", "--max-num-batched-tokens", "1.5K"]) == 2
    assert "vLLM refuses a decimal with the binary suffix K; 1.5k?" in capsys.readouterr().err


def test_an_offload_chunk_given_other_than_as_an_integer_is_noted(capsys):
    status, result = check_json(capsys, "--kv-transfer-config", _offload({"blocks_per_chunk": "3"}))
    assert status == 0 and result["offload"] and result["offload_blocks_per_chunk"] == 3
    assert 'kv_connector_extra_config blocks_per_chunk "3" is read as 3, as vLLM\'s int() reads it' in result["notes"]


def test_a_config_json_path_and_malformed_files(tmp_path, capsys):
    config = json.loads(_family_text("granite-4.0-h"))
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    status, result = check_json(capsys, "--model", str(path), "-tp", "2")
    assert status == 0 and result["resolved"]["block_size"] == 528
    path.write_text("{not json")
    assert main(["check", "--model", str(path)]) == 2
    assert "not valid JSON" in capsys.readouterr().err
    path.write_text(json.dumps({**config, "mamba_d_state": -1}))
    assert main(["check", "--model", str(path)]) == 2
    assert "mamba_d_state: must be positive" in capsys.readouterr().err
    path.write_text(json.dumps({**config, "num_nextn_predict_layers": "two"}))
    assert main(["check", "--model", str(path)]) == 2
    assert "num_nextn_predict_layers must be a count, got 'two'" in capsys.readouterr().err
    for changed, message in (
        ({"max_position_embeddings": "x"}, "max_position_embeddings: expected an integer from 1 to 2,147,483,647"),
        ({"prefill_checkpoint_alignment": 10**30}, "prefill_checkpoint_alignment: expected an integer from 0"),
        ({"model_type": []}, "model_type [] is not a hybrid gridproof reads"),
        ({"mamba_d_state": "128"}, "mamba_d_state: missing or not an integer"),
        ({"text_config": None, "num_nextn_predict_layers": None}, None),
    ):
        path.write_text(json.dumps({**config, **changed}))
        status = main(["check", "--model", str(path), "-tp", "2"])
        err = capsys.readouterr().err
        if message is None:  # null counts and a null text_config read as absent
            assert status == 0, err
        else:
            assert status == 2 and err.startswith(f"gridproof: error: {path}: {message}"), err
    path.write_bytes(b"\x80{}")
    assert main(["check", "--model", str(path)]) == 2
    assert capsys.readouterr().err == f"gridproof: error: --model {path}: not UTF-8 text (byte 0x80 at line 1), " + (
        "expected a Hugging Face config.json\n"
    )


def test_the_context_length_is_vllms(tmp_path, capsys):
    """max_model_len as vLLM derives it from config.json (the least length key, RoPE-scaled): the typical
    request fits it, a longer --max-model-len is refused as vLLM refuses it, and a config that states no
    length is refused rather than given a default gridproof cannot know."""
    config = json.loads(_family_text("granite-4.0-h"))
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**config, "seq_length": 8192}))
    status, result = check_json(capsys, "--model", str(path))
    assert result["typical_request"]["tokens"] == 8191, result["typical_request"]
    assert main(["check", "--model", str(path), "--max-model-len", "8193"]) == 2
    assert capsys.readouterr().err == (
        f"gridproof: error: {path}: --max-model-len 8,193 is longer than the model's seq_length (8,192); vLLM "
        "refuses it unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1, which gridproof does not model\n"
    )
    path.write_text(json.dumps({**config, "rope_scaling": {"rope_type": "linear", "factor": 2.0}}))
    status, result = check_json(capsys, "--model", str(path), "--max-model-len", "262144")
    assert status in (0, 1) and result["typical_request"]["tokens"] == 100_000
    path.write_text(json.dumps({k: v for k, v in config.items() if k != "max_position_embeddings"}))
    assert main(["check", "--model", str(path)]) == 2
    assert "states none of max_position_embeddings, n_positions" in capsys.readouterr().err


def test_rope_parameters_vllm_reads_by_config_class_are_refused(tmp_path, capsys):
    """Per-layer-type RoPE parameters and LongRoPE: how vLLM derives the context length from them depends on
    the model's config class (Transformers keeps or drops them), so check refuses them in one line, exit 2."""
    config = json.loads(_family_text("qwen3-next"))
    path = tmp_path / "config.json"
    per_layer = {"full_attention": {"rope_type": "linear", "factor": 2.0, "rope_theta": 10000.0}}
    longrope = {"rope_type": "longrope", "factor": 4.0, "long_factor": [1.0], "short_factor": [1.0]}
    for rope, message in ((per_layer, "RoPE parameters per layer type"), (longrope, "RoPE type longrope")):
        path.write_text(json.dumps({**config, "rope_parameters": rope}))
        assert main(["check", "--model", str(path)]) == 2
        err = capsys.readouterr().err
        assert (
            err.startswith(f"gridproof: error: {path}: {message}: gridproof does not read") and err.count("\n") == 1
        ), err


def test_sizes_transformers_refuses_are_refused(tmp_path, capsys):
    """A RoPE type stated twice, differently (Transformers refuses the conflict), and a Falcon-H1 mamba_d_ssm
    that is not its heads times their size (FalconH1Config refuses it): one line each, exit 2."""
    for family, keys, message in (
        (
            "qwen3-next",
            {"rope_scaling": {"rope_type": "yarn", "type": "linear", "factor": 4.0}},
            "RoPE parameters give",
        ),
        ("falcon-h1", {"mamba_d_ssm": 6144}, "mamba_d_ssm 6144 is not mamba_n_heads x mamba_d_head (3,072)"),
    ):
        path = tmp_path / f"{family}.json"
        path.write_text(json.dumps({**json.loads(_family_text(family)), **keys}))
        assert main(["check", "--model", str(path)]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"gridproof: error: {path}: {message}") and err.count("\n") == 1, err


def test_a_wrapped_models_context_is_its_text_configs(tmp_path, capsys):
    """Qwen3.5 as published nests its text config: vLLM reads the context length and its RoPE scaling there
    only (ModelConfig passes hf_text_config), so the wrapper's own keys change nothing and the text config's
    factor scales it."""
    text = {k: v for k, v in json.loads(_family_text("qwen3.5")).items() if not k.startswith("_")}
    path = tmp_path / "config.json"
    linear = {"rope_type": "linear", "factor": 2.0}
    wrapped = {"model_type": "qwen3_5", "text_config": {**text, "model_type": "qwen3_5_text"}}
    path.write_text(json.dumps({**wrapped, "rope_scaling": linear, "max_position_embeddings": 4096}))
    assert main(["check", "--model", str(path), "--max-model-len", "262145"]) == 2
    assert "longer than the model's max_position_embeddings (262,144)" in capsys.readouterr().err
    wrapped["text_config"]["rope_scaling"] = linear
    path.write_text(json.dumps(wrapped))
    status, result = check_json(capsys, "--model", str(path), "--max-model-len", "524288")
    assert status in (0, 1), result


def test_a_budget_of_one_token_says_the_law_is_not_run(capsys):
    """A prefill of one token a step: checking the law on enough lengths would take minutes, so check
    says so at once (NOT RUN, with why) rather than running them or guessing."""
    status, result = check_json(capsys, "--max-num-batched-tokens", "1")
    assert result["hit_law"]["verdict"] == "NOT RUN"
    assert "prefill steps" in result["hit_law"]["reason"]


def _family_text(name: str) -> str:
    from models.hf_config import FAMILY_DIR

    return (FAMILY_DIR / f"{name}.json").read_text()


def test_emitted_geometry_loads_in_simulate(tmp_path, capsys):
    out = tmp_path / "kimi.toml"
    status, _ = check(
        capsys, *KIMI_K3, "--mamba-block-size", "12288", "--variant", "pr457", "--emit-geometry", str(out)
    )
    assert status == 0
    geometry = load_geometry(out)
    assert geometry.deployment.mamba_block_size == 12288
    assert geometry.target_spans() == (12_288,)
    assert plan(PR457_GUARDED, geometry).cadence == 12_288
    result = subprocess.run(
        [sys.executable, "-m", "proofs.cli", "simulate", str(out), "--variant", "pr457-guarded", "--json"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["published"][:2] == [12_288, 24_576]


def test_built_in_models_resolve_to_the_geometry_files_blocks():
    # The same physical blocks the hand-derived geometry files record.
    cases = {
        "nemotron-h": (ServeFlags(tensor_parallel_size=2), "nemotron-3-nano-30b-tp2"),
        "granite-4.0-h": (ServeFlags(tensor_parallel_size=2), "granite-4.0-h-small-tp2"),
        "kimi-linear": (ServeFlags(tensor_parallel_size=4, decode_context_parallel_size=4), "kimi-linear-48b-tp4-dcp4"),
        "qwen3-next": (
            ServeFlags(
                tensor_parallel_size=4, speculative_config={"method": "qwen3_next_mtp", "num_speculative_tokens": 2}
            ),
            "qwen3-next-80b-tp4-mtp2",
        ),
    }
    for name, (flags, geometry_name) in cases.items():
        resolved = resolve_deployment(load_model(name), flags, BASELINE)
        geometry = load_geometry(geometry_name)
        assert resolved.geometry.deployment.block_size == geometry.deployment.block_size, name
        assert resolved.geometry.target_spans() == geometry.target_spans(), name


def test_every_built_in_model_is_checked(capsys):
    for name in builtin_model_names():
        status, result = check_json(capsys, "--model", name)
        assert status in (0, 1), name
        assert result["resolved"]["block_size"] > 0


def test_sweep_tabulates_one_flag(capsys):
    status, out = check(
        capsys, *KIMI_K3, "--variant", "pr457-guarded", "--sweep", "mamba-block-size=12288..36864:12288"
    )
    assert status == 0
    rows = [line for line in out.splitlines() if line.strip()[:1].isdigit()]
    assert len(rows) == 3 and all(line.rstrip().endswith("yes") for line in rows)


def test_a_sweep_with_one_row_not_ok_exits_1(capsys):
    """Exit 0 says every value tabulated is OK: one that is not (1,152 is no multiple of PR457's span of 544
    for qwen3-next) makes the sweep exit 1, though 1,088 is OK."""
    status, out = check(capsys, "--model", "qwen3-next", "--variant", "pr457", "--sweep", "mamba-block-size=1088,1152")
    rows = {line.split()[0]: line.rstrip().endswith("yes") for line in out.splitlines() if line.strip()[:1].isdigit()}
    assert rows == {"1,088": True, "1,152": False}, out
    assert status == 1


def test_a_sweep_of_a_token_budget_reads_its_values_as_the_flag_does(capsys):
    _, out = check(capsys, "--sweep", "max-num-batched-tokens=4k..8k:2k")
    assert [line.split()[0] for line in out.splitlines() if line.strip()[:1].isdigit()] == ["4,000", "6,000", "8,000"]
    _, out = check(capsys, "--sweep", "max_num_scheduled_tokens=2K,4K")
    assert [line.split()[0] for line in out.splitlines() if line.strip()[:1].isdigit()] == ["2,048", "4,096"]


def test_retention_is_read_as_vllm_reads_it(capsys):
    dense = check_json(capsys, *KIMI_K3, "--prefix-cache-retention-interval", "none")[1]
    assert dense["typical_request"]["restored_offload"] == 96_000  # the real connector's, docs/end-to-end.md
    status = main(["check", *KIMI_K3, "--prefix-cache-retention-interval", "-1"])
    assert status == 2
    capsys.readouterr()
    # vLLM refuses a positive interval off the scheduler block (12,288 here) at startup.
    status = main(["check", *KIMI_K3, "--prefix-cache-retention-interval", "1000"])
    assert status == 2
    assert "multiple of scheduler_block_size (12288)" in capsys.readouterr().err


def test_the_plot_is_written(capsys, tmp_path):
    figure = tmp_path / "hit.png"
    status, _ = check(capsys, "--model", "granite-4.0-h", "-tp", "2", "--plot", str(figure))
    assert status == 0
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    "change, message",
    [
        ({"num_key_value_heads": 2**40}, "num_key_value_heads: expected at most 2,147,483,647"),
        ({"num_attention_heads": 2**13, "hidden_size": 4096}, "leaves no head dimension"),
    ],
)
def test_config_json_counts_have_the_flags_bounds(capsys, tmp_path, change, message):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**json.loads(_family_text("granite-4.0-h")), **change}))
    assert main(["check", "--model", str(path), "-tp", "2"]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_a_prefill_that_stalls_is_said_to_restore_nothing(capsys):
    """Fewer batched tokens than one block, under a larger --max-num-scheduled-tokens: vLLM's split aligns
    by the token budget, so the real prefill stalls; check says so in a deployer's words, not as a law
    no formula fits, and exits 1."""
    args = ("--model", "qwen3-next", "--max-num-batched-tokens", "100", "--max-num-scheduled-tokens", "4096")
    status, out = check(capsys, *args)
    assert status == 1
    assert "hit(L): no law: the prefill of a 101-token prompt stalls at step 0" in out
    assert "NOT OK (exit 1): no hit law: the prefill" in out
    assert "no formula fits" not in out
    status, result = check_json(capsys, *args)
    assert result["hit_law"]["verdict"] == "NO FORMULA" and "stalls" in result["hit_law"]["failure"]


def test_a_model_vllm_no_longer_serves_is_not_ok(capsys):
    """MiniMax-Text-01's model class was removed from vLLM in 0.23.0 (registry.py's previously supported
    models): both releases refuse to load it, so check's answer is NOT OK whatever its layers restore."""
    for release in ("0.33.0", "0.34.0"):
        status, out = check(capsys, "--model", "minimax", "--vllm-version", release)
        assert status == 1
        assert "NOT OK (exit 1): vLLM has no model class for minimax_text_01 (MiniMaxText01ForCausalLM" in out
    status, out = check(capsys, "--model", "qwen3-next")
    assert "no model class" not in out


def test_the_layers_checkpoint_alignment_reaches_the_block(tmp_path, capsys):
    """In align mode vLLM makes the block a multiple of the layers' internal prefill checkpoint alignment
    (`get_mamba_prefill_checkpoint_alignment`, lcm'd into the kernel alignment, which the recorded `config`
    rows hold models.config.resolve to); check passes a config.json's alignment on, where it passed none."""
    config = json.loads((Path(__file__).parent.parent / "models" / "families" / "qwen3-next.json").read_text())
    blocks = {}
    for alignment in (1, 48):
        path = tmp_path / f"aligned-{alignment}.json"
        path.write_text(json.dumps({**config, "prefill_checkpoint_alignment": alignment}))
        _, result = check_json(capsys, "--model", str(path))
        blocks[alignment] = result["resolved"]["block_size"]
    assert blocks == {1: 544, 48: 576}


def test_a_sweep_with_caching_off_restores_nothing(capsys):
    """--mamba-cache-mode none keeps no recurrent state for any value a sweep gives its flag: a sweep said
    each row restored 99,648 tokens where check without --sweep says nothing is ever restored."""
    status, out = check(
        capsys, "--model", "granite-4.0-h", "--mamba-cache-mode", "none", "--sweep", "tensor_parallel_size=1..2"
    )
    assert status == 1
    assert "NOT ALIGNED: prefix caching of the recurrent state is off" in out and "99,648" not in out


def test_a_connector_loaded_from_a_module_path_is_refused_where_its_hashes_matter(capsys):
    """Under 0.34.0 a drafter hashes ahead beside a connector whose class says it keeps the hashes; a class
    loaded from kv_connector_module_path may be any class, so check refuses to guess (exit 2)."""
    transfer = {"kv_connector": "OffloadingConnector", "kv_connector_module_path": "my.connectors"}
    args = ["check", "--model", "qwen3-next", "--vllm-version", "0.34.0", "--kv-transfer-config", json.dumps(transfer)]
    assert main([*args, "--speculative-config", '{"method": "mtp", "num_speculative_tokens": 1}']) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "kv_connector_module_path" in err, err
    assert main(args) in (0, 1)  # no drafter, no hashes ahead: nothing to guess
    capsys.readouterr()


def test_a_long_prefill_threshold_of_0_is_vllms_default_and_accepted(capsys):
    """vLLM's SchedulerConfig takes 0 (its default: no threshold); check answers as without the flag."""
    status, given = check_json(capsys, "--model", "qwen3-next", "--long-prefill-token-threshold", "0")
    unset_status, unset = check_json(capsys, "--model", "qwen3-next")
    for result in (given, unset):
        result.pop("seconds")
    assert (status, given) == (unset_status, unset)


def test_baselines_do_not_answer_for_pr457s_guard(capsys):
    """The guard is PR457's: under vLLM 0.33.0 a --mamba-block-size align mode overwrites is no reason the
    deployment is not OK."""
    status, result = check_json(capsys, "--model", "qwen3-next", "--variant", "baseline", "--mamba-block-size", "1000")
    assert status == 0, result["why"]
    assert result["why"] == []
