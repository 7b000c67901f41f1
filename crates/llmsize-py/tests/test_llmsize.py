"""llmsize from Python: the engine's numbers, the JSON contract's keys, typed exceptions.

The ground truth is the repository's copy of the shared truth (78 real configs and what the
transformers 5.24 code builds from them). With ``LLMSIZE_BIN`` set to the CLI binary (CI sets
it), every preset's result is also compared with the CLI's ``--json`` output, key by key.
"""

import http.server
import inspect
import json
import math
import os
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import pytest

import llmsize

ROOT = Path(__file__).resolve().parents[3]
TRUTH = json.loads((ROOT / "tests/fixtures/truth/truth.json").read_text())
CONFIGS = ROOT / "tests/fixtures/truth/configs"
CLI = os.environ.get("LLMSIZE_BIN")


def cli_json(*args):
    out = subprocess.run([CLI, *args, "--json"], capture_output=True, text=True)
    assert out.returncode in (0, 1), out.stderr  # 1: does not fit, a well-formed answer
    return json.loads(out.stdout)


@pytest.mark.parametrize("entry", TRUTH, ids=[e["id"] for e in TRUTH])
def test_every_preset_is_exact(entry):
    r = llmsize.params(entry["id"])
    assert r["total"] == entry["params"]["total"]
    # The truth names the 13 categories of its time; the 4 added since (ssm, vision, audio,
    # layer_extras) are zero for these models.
    want = {c: entry["params"]["components"].get(c, 0) for c in r["components"]}
    assert r["components"] == want
    assert r["exact"] is True


@pytest.mark.skipif(CLI is None, reason="LLMSIZE_BIN names the CLI binary to compare with")
@pytest.mark.parametrize("entry", TRUTH, ids=[e["id"] for e in TRUTH])
def test_python_returns_the_cli_json(entry):
    assert llmsize.params(entry["id"]) == cli_json("params", entry["id"])
    assert llmsize.memory(entry["id"], dtype="q4_k_m", gpu="h100") == cli_json(
        "memory", entry["id"], "--dtype", "q4_k_m", "--gpu", "h100"
    )
    assert llmsize.flops(entry["id"], attention="full", seq_len=512) == cli_json(
        "flops", entry["id"], "--attention", "full", "--seq-len", "512"
    )


def test_a_dict_config_works():
    # What `AutoConfig.from_pretrained("gpt2").to_dict()` gives; GPT-2 small is 124,439,808.
    config = json.loads((CONFIGS / "gpt2.json").read_text())
    r = llmsize.params(config)
    assert r["total"] == 124439808
    assert r["source"] == "inline config"
    # A path works as well, as a str or a Path.
    assert llmsize.params(CONFIGS / "gpt2.json")["total"] == 124439808


def test_overrides_as_a_dict_or_strings():
    # Llama-2-7B with a tied head: 6,738,415,616 − V·d = 6,738,415,616 − 32000·4096.
    tied = 6738415616 - 32000 * 4096
    assert llmsize.params("llama-2-7b", set={"tie_word_embeddings": True})["total"] == tied
    assert llmsize.params("llama-2-7b", set=["tie_word_embeddings=true"])["total"] == tied


def test_memory_and_flops_answer_with_the_contract_keys():
    r = llmsize.memory("llama-2-7b", dtype="q4_k_m", seq_len=8192, gpu="rtx4090")
    assert r["fits"] is True
    # Llama-2-7B's KV cache at 8,192 tokens in bf16: 2·L·n_kv·d_h·2 bytes a token.
    assert r["kv_cache_bytes"] == 2 * 32 * 32 * 128 * 2 * 8192
    assert llmsize.memory("llama-2-70b", gpu="rtx4090")["fits"] is False
    f = llmsize.flops("gpt2", seq_len=128, attention="full")
    gpt2 = next(e for e in TRUTH if e["id"] == "gpt2")
    assert f["forward_flops"] == gpt2["forward_flops"]["by_seq_len"]["128"]


def test_errors_are_typed_exceptions_with_the_cli_message():
    with pytest.raises(llmsize.NotFound, match="neither a file, a directory nor a built-in preset") as e:
        llmsize.params("gpt-2")
    assert "did you mean: gpt2?" in (e.value.hint or "")
    assert isinstance(e.value, LookupError)
    with pytest.raises(llmsize.UnsupportedModel, match="enigma"):
        llmsize.params({"model_type": "enigma"})
    with pytest.raises(llmsize.InputError, match="hidden_size") as e:
        llmsize.params({"model_type": "llama", "hidden_size": 0})
    assert isinstance(e.value, ValueError)
    with pytest.raises(llmsize.InputError, match="q9_k"):
        llmsize.memory("gpt2", dtype="q9_k")
    with pytest.raises(llmsize.InputError, match="head"):
        llmsize.params("gpt2", head="neck")
    with pytest.raises(llmsize.NotFound):
        llmsize.inspect("/nonexistent/model.safetensors")
    with pytest.raises(TypeError) as e:
        llmsize.params(42)
    assert isinstance(e.value, llmsize.InputError)


def test_an_unknown_type_is_refused_unless_assumed_and_then_not_exact():
    mystery = {
        "model_type": "mystery",
        "vocab_size": 32000,
        "hidden_size": 4096,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "intermediate_size": 11008,
    }
    for call in (llmsize.params, llmsize.memory, llmsize.flops):
        with pytest.raises(llmsize.UnsupportedModel, match="--assume"):
            call(mystery)
    with pytest.warns(llmsize.LlmsizeWarning, match="estimate"):
        r = llmsize.params(mystery, assume="llama")
    # Llama-2-7B's shapes, counted as llama: 6,738,415,616, and marked as an estimate.
    assert r["total"] == 6738415616
    assert r["exact"] is False and "--assume llama" in r["estimate_basis"]
    with pytest.warns(llmsize.LlmsizeWarning):
        assert llmsize.memory(mystery, assume="llama")["exact"] is False
    assert llmsize.params("llama-2-7b")["exact"] is True


def test_images_join_a_vision_language_models_sequence():
    llava = {**json.loads((ROOT / "tests/fixtures/coverage/configs/llava.default.json").read_text())}
    # image_seq_length = 576: 1,000 tokens + 2 images = 2,152 positions in the cache.
    r = llmsize.memory(llava, seq_len=1000, images=2)
    assert r["seq_len"] == 2152
    assert r["kv_cache_bytes"] == llmsize.memory(llava, seq_len=2152)["kv_cache_bytes"]
    with pytest.raises(llmsize.InputError, match="no vision tower"):
        llmsize.memory("llama-2-7b", images=1)


def test_warnings_are_python_warnings():
    # The CLI prints `--set` of a key the model never reads as a warning; so does Python, and
    # the JSON carries it too.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = llmsize.params("gpt2", set={"no_such_key": 1})
    assert any("no_such_key" in w for w in r["warnings"])
    assert any(
        issubclass(w.category, llmsize.LlmsizeWarning) and "no_such_key" in str(w.message)
        for w in caught
    )


def test_presets_and_gpus():
    ids = {p["id"] for p in llmsize.presets()}
    assert {e["id"] for e in TRUTH} <= ids
    assert len(llmsize.gpus()) > 5


def test_nothing_heavy_is_imported():
    import sys

    assert not any(m.split(".")[0] in ("torch", "transformers", "numpy") for m in sys.modules)


def test_train_answers_with_the_cli_json():
    # ../shared/truth/train/train.json, Llama-2-7b-hf: 6,738,415,616 trainable parameters,
    # bf16 gradients 2·N bytes, torch AdamW on bf16 parameters 4·N + 4·291 bytes.
    j = llmsize.train("llama-2-7b", seq_len=512)
    assert j["trainable_params"] == 6738415616
    assert j["gradient_bytes"] == 13476831232
    assert j["optimizer_state_bytes"] == 26953663628
    if CLI is not None:
        assert cli_json("train", "llama-2-7b", "--seq-len", "512") == j
    # Mixed precision: DeepSpeed's 16 bytes per parameter.
    m = llmsize.train("llama-2-7b", precision="mixed")
    assert m["weights_bytes"] + m["gradient_bytes"] + m["optimizer_state_bytes"] == 16 * 6738415616
    with pytest.raises(llmsize.InputError, match="adamw-8bit"):
        llmsize.train("llama-2-7b", optimizer="adamax")
    with pytest.raises(llmsize.InputError, match="--gpu"):
        llmsize.train("llama-2-7b", max_batch=True)


# ---------------------------------------------------------------------------------------
# Serving as it really happens: quantized releases, runtimes, pipelines, custom GPUs, speed
# and cost, sweeps, several models, and the Hub options.


def test_a_quantized_release_is_sized_as_it_ships():
    # gpt-oss-120b's config states MXFP4 experts: 36·128·3·2,880² = 114,661,785,600 params in
    # MXFP4 (60,914,073,600 B) and the rest, 2,167,371,072, in 16-bit (4,334,742,144 B).
    r = llmsize.memory("gpt-oss-120b", gpu="h100")
    assert r["weights_bytes"] == 65248815744 == 60914073600 + 4334742144
    assert r["fits"] is True
    with pytest.warns(llmsize.LlmsizeWarning, match="overrides the release's quantization"):
        assert llmsize.memory("gpt-oss-120b", dtype="bf16")["weights_bytes"] == 2 * 116829156672


def test_flops_decodes_the_release_as_stored_unless_dtype_is_given():
    # One decode step at batch 1 reads k/E = 4/128 of the experts, the 16-bit rest less the
    # token table (201,088 × 2,880 × 2 B) plus one row, and the KV cache (80,179,200 B):
    # MXFP4 1,903,564,800 + 3,176,481,024 + 80,179,200 = 5,160,225,024 B;
    # bf16   7,166,361,600 + 3,176,481,024 + 80,179,200 = 10,423,021,824 B.
    release = llmsize.flops("gpt-oss-120b", gpu="h100")["speed"]
    forced = llmsize.flops("gpt-oss-120b", gpu="h100", dtype="bf16")["speed"]
    assert release["decode_bytes_per_step"] == 5160225024
    assert forced["decode_bytes_per_step"] == 10423021824
    assert forced["decode"]["weights_bytes_stored"] == 233658313344


def test_vllm_pages_the_cache_into_max_sequences():
    # Llama-3-8B on an A100-80GB at 0.9: 77,309,411,328 B; less weights, activations, logits
    # and 512 MiB: 60,370,968,576 B of 2 MiB blocks = 28,787; an 8k request takes 512: 56.
    v = llmsize.memory("Meta-Llama-3-8B", runtime="vllm", gpu="a100", seq_len=8192)
    p = v["serving"]["vllm"]
    assert p["num_blocks"] == 28787
    assert p["max_sequences"] == 56
    # Half the memory to vLLM: 0.45 × 81,920 MiB less the same 16,938,442,752 B.
    half = llmsize.memory(
        "Meta-Llama-3-8B", runtime="vllm", gpu="a100", seq_len=8192, gpu_memory_utilization=0.45
    )["serving"]["vllm"]
    assert half["budget_bytes"] == int(0.45 * 81920 * 2**20)
    assert half["kv_budget_bytes"] == half["budget_bytes"] - (77309411328 - 60370968576)


LAYER = 436224000  # Llama-3-8B, one decoder layer in bf16 (tests/runtime.rs)
TABLE = 128256 * 4096 * 2


def test_llama_cpp_layer_split_and_offload():
    # 32 layers + the output over 3 GPUs, `tensor_split` 2,1,1: layer i goes to the GPU whose
    # cumulative share first exceeds i/33: 0–16, 17–24, 25–31 (as llama.cpp assigns them).
    for split in ("2,1,1", [2, 1, 1]):
        v = llmsize.memory("Meta-Llama-3-8B", runtime="llama.cpp", gpu="rtx3090x3", tensor_split=split)
        stages = v["serving"]["stages"]
        assert [s["layers"] for s in stages[:3]] == [[[0, 17]], [[17, 25]], [[25, 32]]]
        assert stages[0]["weights_bytes"] == 17 * LAYER
        # The token table stays in system RAM.
        assert stages[3]["device"] == "CPU (system RAM)" and stages[3]["weights_bytes"] == TABLE
    # n_gpu_layers=20: the last 20 layers on the GPU, with their KV at 4,096 cells × 4,096 B.
    v = llmsize.memory("Meta-Llama-3-8B", runtime="llama.cpp", gpu="rtx3060", n_gpu_layers=20)
    gpu0 = v["serving"]["stages"][0]
    assert gpu0["layers"] == [[12, 32]]
    assert gpu0["weights_bytes"] == 20 * LAYER
    assert gpu0["kv_cache_bytes"] == 20 * 4096 * 4096
    assert v["serving"]["llama_cpp"]["output_on_gpu"] is False
    # ctx_size: KV cells for all sequences, padded to 256: 32 layers × 8,192 × 4,096 B.
    v = llmsize.memory("Meta-Llama-3-8B", runtime="llama.cpp", ctx_size=8000)
    assert v["kv_cache_bytes"] == 32 * 8192 * 4096


def test_pipeline_stages_and_custom_gpus():
    # pp=2 on 2 GPUs: 16 layers each; the table with the first, the head with the last.
    v = llmsize.memory("Meta-Llama-3-8B", gpu="h100x2", tp=1, pp=2)
    assert v["serving"]["pp"] == 2
    # A 24 GiB GPU described by its figures holds Llama-3-8B at 4k; 16 GB does not.
    v = llmsize.memory("Meta-Llama-3-8B", gpu_mem="24GiB", gpu_bw="936GB/s", gpu_tflops=71)
    assert v["gpu"]["memory_bytes"] == 24 << 30
    assert v["gpu"]["name"] == "custom GPU (memory 24.00 GiB, 936 GB/s, 71.0 TFLOP/s)"
    assert v["fits"] is True
    assert llmsize.memory("Meta-Llama-3-8B", gpu_mem="16GB")["fits"] is False


def test_flops_speed_prompt_and_price():
    # Mixtral-8x7B on 2 × H100 at batch 4 touches 8·(1 − (6/8)⁴) = 5.46875 experts a layer:
    # 64,605,429,760 B of weights and 1,073,741,824 B of KV a step (tests/speed.rs).
    s = llmsize.flops("Mixtral-8x7B-v0.1", gpu="h100x2", batch=4)["speed"]
    assert s["decode"]["experts_touched_per_layer"] == 5.46875
    assert s["decode_bytes_per_step"] == 65679171584 == 64605429760 + 1073741824
    # Time to first token of a 512-token prompt: a 6,834,500,927,488-FLOP forward at half of
    # the H100's 989.4 TFLOP/s; the decode step sees the whole 4,096-token context (2 GiB KV).
    s = llmsize.flops("Llama-2-7b-hf", gpu="h100", prompt=512, seq_len=4096)["speed"]
    assert s["prompt_tokens"] == 512
    assert s["prefill_seconds"] == pytest.approx(6834500927488 / (989.4e12 * 0.5), rel=1e-9)
    assert s["decode"]["cache_bytes"] == 2 << 30
    # $2.50 per GPU-hour: the cost of a million tokens at batch 1's rate.
    s = llmsize.flops("Meta-Llama-3-8B", gpu="h100", price=2.5)["speed"]
    d = s["decode_by_batch"][0]
    assert d["cost_per_million_tokens"] == pytest.approx(2.5 / (d["tokens_per_second"] * 3600) * 1e6)
    assert d["cost_per_million_tokens"] == pytest.approx(3.959, abs=1e-3)
    with pytest.raises(llmsize.InputError, match="no GPU is named"):
        llmsize.flops("gpt2", price=2)


def test_sweeps_and_several_models_are_lists():
    # Llama-2-7B's bf16 KV cache is 524,288 B a token: 1k and 8k tokens.
    r = llmsize.memory("llama-2-7b", sweep="seq=1k,8k")
    assert isinstance(r, list)
    assert [p["swept"] for p in r] == [{"seq_len": 1024}, {"seq_len": 8192}]
    assert [p["kv_cache_bytes"] for p in r] == [524288 * 1024, 524288 * 8192]
    # The dict form is the same sweep.
    assert llmsize.memory("llama-2-7b", sweep={"seq": ["1k", "8k"]}) == r
    # 13.5 GB of bf16 weights: not on a 12 GB RTX 3060, on an H100.
    g = llmsize.memory("llama-2-7b", sweep="gpu=rtx3060,h100")
    assert [(p["swept"]["gpu"], p["fits"]) for p in g] == [("rtx3060", False), ("h100", True)]
    f = llmsize.flops("llama-2-7b", gpu="h100", sweep="batch=1,8")
    assert [p["swept"] for p in f] == [{"batch": 1}, {"batch": 8}]
    # Several models side by side, as `llmsize memory gpt2 llama-2-7b --json`.
    both = llmsize.memory(["gpt2", "llama-2-7b"])
    assert [m["name"] for m in both] == ["gpt2", "Llama-2-7b-hf"]
    assert both[1] == llmsize.memory("llama-2-7b")
    assert [p["total"] for p in llmsize.params(("gpt2", "llama-2-7b"))] == [124439808, 6738415616]
    assert len(llmsize.flops(["gpt2", "llama-2-7b"], seq_len=128)) == 2
    with pytest.raises(llmsize.InputError, match="sweep"):
        llmsize.memory("gpt2", sweep="colour=red")
    with pytest.raises(llmsize.InputError, match="runtime `tgi`"):
        llmsize.memory("gpt2", runtime="tgi")
    with pytest.raises(llmsize.InputError, match="tensor_split"):
        llmsize.memory("gpt2", runtime="llama.cpp", tensor_split="3,a")


HASH = "0123456789abcdef0123456789abcdef01234567"


def test_hub_options_file_timeout_jobs(tmp_path, monkeypatch):
    # A cached repo with two GGUF files (the 2-layer fixture of tests/fixtures/gguf): `file`
    # picks one, as `org/name:FILE` does; without it the error lists them.
    header = (ROOT / "tests/fixtures/gguf/tiny-llama-consistent.gguf.header").read_bytes()
    snap = tmp_path / "models--org--quants" / "snapshots" / HASH
    snap.mkdir(parents=True)
    (tmp_path / "models--org--quants" / "refs").mkdir()
    (tmp_path / "models--org--quants" / "refs" / "main").write_text(HASH)
    for name in ("m-Q8_0.gguf", "m-F16.gguf"):
        with open(snap / name, "wb") as f:
            f.write(header)
            f.truncate(1_099_584)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    with pytest.raises(llmsize.InputError, match="holds 2 GGUF models") as e:
        llmsize.memory("org/quants")
    assert "m-F16.gguf, m-Q8_0.gguf" in e.value.hint
    # The files' tensors as stored: 1,094,144 B; a GGUF is sized as llama.cpp serves it.
    r = llmsize.memory("org/quants", file="m-Q8_0.gguf")
    assert r["weights_bytes"] == 1094144
    assert r["serving"]["runtime"] == "llama.cpp"
    assert r == llmsize.memory("org/quants:m-Q8_0.gguf")
    assert llmsize.inspect("org/quants", file="m-F16.gguf")["parameter_bytes"] == 1094144
    with pytest.raises(llmsize.InputError, match="not a repo id"):
        llmsize.params("gpt2", file="m-Q8_0.gguf")
    with pytest.raises(llmsize.InputError, match="at most 86400 seconds"):
        llmsize.params("gpt2", timeout=0)
    with pytest.raises(llmsize.InputError, match="1 to 64"):
        llmsize.params("gpt2", jobs=65)
    with pytest.raises(llmsize.InputError, match="`deadline=0`: a deadline is more than 0"):
        llmsize.params("gpt2", deadline=0)
    # In range, they change nothing offline.
    assert llmsize.params("gpt2", timeout=2.5, jobs=1, deadline=3)["total"] == 124439808


@pytest.mark.skipif(CLI is None, reason="LLMSIZE_BIN names the CLI binary to compare with")
@pytest.mark.parametrize(
    "command, models, flags, kwargs",
    [
        ("memory", ["gpt-oss-120b"], ["--gpu", "h100"], {"gpu": "h100"}),
        (
            "memory",
            ["Meta-Llama-3-8B"],
            ["--runtime", "vllm", "--gpu", "a100", "--block-size", "32", "--max-model-len", "4k",
             "--max-num-batched-tokens", "4k", "--gpu-memory-utilization", "0.8"],
            {"runtime": "vllm", "gpu": "a100", "block_size": 32, "max_model_len": 4096,
             "max_num_batched_tokens": 4096, "gpu_memory_utilization": 0.8},
        ),
        (
            "memory",
            ["Meta-Llama-3-8B"],
            ["--runtime", "llama.cpp", "--gpu", "rtx3090x2", "--swa-full", "--ctx-size", "16k",
             "--tensor-split", "3,1", "--ngl", "30"],
            {"runtime": "llama.cpp", "gpu": "rtx3090x2", "swa_full": True, "ctx_size": 16384,
             "tensor_split": [3, 1], "n_gpu_layers": 30},
        ),
        ("memory", ["Meta-Llama-3-8B"], ["--gpu", "h100x4", "--tp", "2", "--pp", "2"],
         {"gpu": "h100x4", "tp": 2, "pp": 2}),
        (
            "memory",
            ["llama-2-7b"],
            ["--gpu-mem", "24GiB", "--gpu-bw", "936GB/s", "--gpu-tflops", "71", "--sweep", "dtype=bf16,q4_k_m"],
            {"gpu_mem": "24GiB", "gpu_bw": "936GB/s", "gpu_tflops": 71, "sweep": "dtype=bf16,q4_k_m"},
        ),
        ("memory", ["gpt2", "llama-2-7b"], ["--gpu", "rtx4090"], {"gpu": "rtx4090"}),
        ("flops", ["gpt-oss-120b"], ["--gpu", "h100"], {"gpu": "h100"}),
        ("flops", ["gpt-oss-120b"], ["--gpu", "h100", "--dtype", "bf16"], {"gpu": "h100", "dtype": "bf16"}),
        ("flops", ["Meta-Llama-3-8B"], ["--gpu", "h100", "--prompt", "512", "--price", "2.5"],
         {"gpu": "h100", "prompt": 512, "price": 2.5}),
        ("flops", ["llama-2-7b", "gpt2"], ["--sweep", "gpu=rtx4090,a100,h100"],
         {"sweep": "gpu=rtx4090,a100,h100"}),
    ],
)
def test_new_options_return_the_cli_json(command, models, flags, kwargs):
    call = llmsize.memory if command == "memory" else llmsize.flops
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = call(models if len(models) > 1 else models[0], **kwargs)
    assert got == cli_json(command, *models, *flags)


# ---------------------------------------------------------------------------------------
# Hostile arguments: every one is the package's own error, naming the argument as written.


def test_out_of_range_integers_are_input_errors_naming_the_argument():
    # PyO3 would raise OverflowError converting these to the native module's `u64`.
    for value, shown in [(2**64, "18446744073709551616"), (-1, "-1"), (2**10000, "<a 10001-bit integer>")]:
        with pytest.raises(llmsize.InputError, match=f"`batch={shown}` is out of range") as e:
            llmsize.memory("llama-2-7b", batch=value)
        assert not isinstance(e.value, OverflowError)
        assert "from 0 to 18,446,744,073,709,551,615" in str(e.value)
    with pytest.raises(llmsize.InputError, match="`seq_len=-5` is out of range"):
        llmsize.flops("gpt2", seq_len=-5)
    with pytest.raises(llmsize.InputError, match="`jobs=-1` is out of range"):
        llmsize.params("gpt2", jobs=-1)
    # `zero` is a Rust `u8`; within it, the engine names the ZeRO stages.
    with pytest.raises(llmsize.InputError, match="`zero=256` is out of range: expected a whole number from 0 to 255"):
        llmsize.train("llama-2-7b", zero=256)
    with pytest.raises(llmsize.InputError, match="ZeRO stage"):
        llmsize.train("llama-2-7b", zero=4)
    # 2^64 − 1 converts; the engine then refuses it past its bound (limits::MAX_TOKENS,
    # 2^32), and a figure within the bounds that overflows is named, never a panic.
    with pytest.raises(llmsize.InputError, match="at most 4,294,967,296 tokens"):
        llmsize.memory("llama-2-7b", seq_len=2**64 - 1)
    with pytest.raises(llmsize.InputError, match="overflows 64 bits"):
        llmsize.memory("llama-2-7b", seq_len=2**32, batch=2**24)


def test_wrong_types_are_input_errors_and_type_errors():
    cases = [
        (lambda: llmsize.memory("gpt2", batch="8"), "`batch='8'`: expected a whole number, not str"),
        (lambda: llmsize.memory("gpt2", batch=8.0), "`batch=8.0`: expected a whole number, not float"),
        (lambda: llmsize.memory("gpt2", batch=True), "`batch=True`: expected a whole number, not bool"),
        (lambda: llmsize.params("gpt2", text_only=1), "`text_only=1`: expected True or False, not int"),
        (lambda: llmsize.memory("gpt2", dtype=4), "`dtype=4`: expected text \\(a str\\), not int"),
        (lambda: llmsize.flops("gpt2", mfu="0.5"), "`mfu='0.5'`: expected a number, not str"),
        (lambda: llmsize.train("gpt2", freeze=["embed", 3]), "`freeze\\[1\\]=3`: expected text"),
        (lambda: llmsize.memory("gpt2", sweep=5), "`sweep=5`: expected a string such as"),
        (lambda: llmsize.params(["gpt2", None]), "`model\\[1\\]=None`: expected a preset name"),
    ]
    for call, message in cases:
        with pytest.raises(llmsize.InputTypeError, match=message) as e:
            call()
        assert isinstance(e.value, llmsize.InputError) and isinstance(e.value, TypeError)


def test_nan_and_infinity_are_input_errors_naming_the_argument():
    with pytest.raises(llmsize.InputError, match="`mfu=nan`: expected a finite number"):
        llmsize.flops("gpt2", gpu="h100", mfu=math.nan)
    with pytest.raises(llmsize.InputError, match="`price=inf`: expected a finite number"):
        llmsize.train("gpt2", gpu="h100", tokens=10**9, price=math.inf)
    with pytest.raises(llmsize.InputError, match="`timeout=nan`"):
        llmsize.params("gpt2", timeout=math.nan)
    with pytest.raises(llmsize.InputError, match="`gpu_tflops=-inf`"):
        llmsize.memory("gpt2", gpu_mem="24GiB", gpu_tflops=-math.inf)
    with pytest.raises(llmsize.InputError, match="`gpu_memory_utilization=nan`"):
        llmsize.memory("gpt2", runtime="vllm", gpu="h100", gpu_memory_utilization=math.nan)
    with pytest.raises(llmsize.InputError, match="tensor_split=\\[3, inf\\]"):
        llmsize.memory("gpt2", runtime="llama.cpp", gpu="h100x2", tensor_split=[3, math.inf])
    with pytest.raises(llmsize.InputError, match="sweep\\['batch'\\]=nan"):
        llmsize.memory("gpt2", sweep={"batch": [1, math.nan]})
    # Text the engine cannot read: a lone surrogate has no UTF-8 form.
    with pytest.raises(llmsize.InputError, match="`model='\\\\udc80'` is not UTF-8 text"):
        llmsize.params("\udc80")


LLAMA = {
    "model_type": "llama",
    "vocab_size": 32000,
    "hidden_size": 4096,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "intermediate_size": 11008,
}


def test_a_config_dict_that_json_cannot_hold_names_the_key():
    # json.dumps writes NaN as `NaN`, which is not JSON; it was read as if the key were absent.
    for bad in (math.nan, math.inf, -math.inf):
        with pytest.raises(llmsize.InputError, match=f"`model`: key `hidden_size` is {bad}: expected a finite number"):
            llmsize.params({**LLAMA, "hidden_size": bad})
    with pytest.raises(llmsize.InputError, match="key `vision_config.hidden_size` is nan"):
        llmsize.memory({**LLAMA, "vision_config": {"hidden_size": math.nan}})
    with pytest.raises(llmsize.InputError, match="`model\\[1\\]`: key `layer_types\\[2\\]` is inf"):
        llmsize.params(["gpt2", {**LLAMA, "layer_types": ["full_attention", "full_attention", math.inf]}])
    with pytest.raises(llmsize.InputError, match="key `torch_dtype` is of type `object`"):
        llmsize.params({**LLAMA, "torch_dtype": object()})
    looped = dict(LLAMA)
    looped["text_config"] = looped
    with pytest.raises(llmsize.InputError, match="key `text_config` is the dict or list that holds it"):
        llmsize.params(looped)
    # Overrides the same way; a finite float reaches the engine (which says that Llama's
    # count does not read it: 6,738,415,616 as ever).
    with pytest.raises(llmsize.InputError, match="`set`: key `rope_theta` is nan"):
        llmsize.params("llama-2-7b", set={"rope_theta": math.nan})
    with pytest.warns(llmsize.LlmsizeWarning, match="rope_theta=10000.0"):
        assert llmsize.params("llama-2-7b", set={"rope_theta": 10000.0})["total"] == 6738415616


CONFIGS_COVERAGE = ROOT / "tests/fixtures/coverage/configs"


def test_an_engine_panic_is_the_packages_error_not_a_panic_exception():
    # `longcat_flash` with `qk_rope_head_dim` = 2^64 − 1 overflowed in the adapters (a panic
    # under the release profile's overflow checks, PyO3's PanicException: a BaseException
    # that `except Exception` misses). Caught, it is an InternalError with the panic's
    # message until the adapter refuses it as an InputError.
    config = json.loads((CONFIGS_COVERAGE / "longcat_flash.default.json").read_text())
    config["qk_rope_head_dim"] = 2**64 - 1
    for call in (llmsize.params, llmsize.memory, llmsize.flops, llmsize.train):
        with pytest.raises(llmsize.LlmsizeError) as e:
            call(config)
        if isinstance(e.value, llmsize.InternalError):
            assert "the engine panicked: attempt to" in str(e.value)
            assert isinstance(e.value, RuntimeError)


HOSTILE = [object(), "\udc80", -1, 0, 2**32 - 1, 2**63 - 1, 2**64 - 1, 2**64, 2**10000, math.nan, math.inf, -math.inf, 1e308]
FUNCTIONS = [
    (llmsize.params, "gpt2"),
    (llmsize.memory, "llama-2-7b"),
    (llmsize.flops, "llama-2-7b"),
    (llmsize.train, "llama-2-7b"),
    (llmsize.inspect, "gpt2"),
    (llmsize.audit, "gpt2"),
]


@pytest.mark.parametrize("call, model", FUNCTIONS, ids=[f.__name__ for f, _ in FUNCTIONS])
def test_no_argument_raises_anything_but_the_packages_errors(call, model):
    # Every keyword of every function, alone and with a GPU (which turns on the searches),
    # set to each hostile value: an answer or an LlmsizeError, each within a second.
    keywords = [n for n, p in inspect.signature(call).parameters.items() if p.kind is p.KEYWORD_ONLY]
    with_gpu = [{}, {"gpu": "h100x8"}] if "gpu" in keywords else [{}]
    outcomes = set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in keywords:
            for extra in with_gpu:
                for value in HOSTILE:
                    start = time.perf_counter()
                    try:
                        call(model, **{**extra, name: value})
                        outcomes.add("answer")
                    except llmsize.LlmsizeError as e:
                        outcomes.add(type(e).__name__)
                    assert time.perf_counter() - start < 1, (name, value, extra)
        for value in HOSTILE + [[], b"gpt2", {"model_type": math.nan}]:
            with pytest.raises(llmsize.LlmsizeError):
                call(value)
    assert {"InputError", "InputTypeError"} <= outcomes


def hostile_in_a_subprocess(code):
    """Run ``code`` (which sets ``call``) in a fresh interpreter under 256 MiB of address
    space, as the issue's bound: what it raises, and the call's seconds."""
    script = f"""
import json, math, resource, time, llmsize
resource.setrlimit(resource.RLIMIT_AS, (256 << 20, 256 << 20))
{code}
start = time.perf_counter()
try:
    call()
    kind = "answer"
except BaseException as e:
    kind = [c.__name__ for c in type(e).__mro__]
print(json.dumps([kind, time.perf_counter() - start]))
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=20, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.splitlines()[-1])


def hostile_config(name, change):
    """Code that loads coverage config ``name`` and applies ``change`` to ``config``."""
    return f"config = json.load(open({str(CONFIGS_COVERAGE / name)!r}))\n{change}\n"


@pytest.mark.parametrize(
    "code, expected",
    [
        pytest.param(
            'call = lambda: llmsize.memory("llama-2-7b", gpu="h100x18446744073709551615")',
            "InputError",
            id="memory-gpu-count",
        ),
        pytest.param(
            'call = lambda: llmsize.flops("llama-2-7b", gpu="h100x18446744073709551615")',
            "InputError",
            id="flops-gpu-count",
        ),
        pytest.param(
            hostile_config("inkling_mm_model.default.json", 'config["vision_config"]["n_layers"] = 2**32 - 1')
            + "call = lambda: llmsize.params(config)",
            "InputError",
            id="vision-tower-layers",
        ),
        pytest.param(
            hostile_config("longcat_flash.default.json", 'config["qk_rope_head_dim"] = 2**64 - 1')
            + "call = lambda: llmsize.params(config)",
            "InputError",
            id="longcat-overflow",
        ),
        pytest.param(
            hostile_config("zaya.default.json", 'config["cca_time0"] = 2**64 - 1') + "call = lambda: llmsize.memory(config)",
            "InputError",
            id="zaya-overflow",
        ),
        pytest.param("call = lambda: llmsize.memory('llama-2-7b', batch=2**64)", "InputError", id="batch-2^64"),
    ],
)
def test_hostile_inputs_answer_within_a_second_and_256_mib(code, expected):
    kind, seconds = hostile_in_a_subprocess(code)
    assert expected in kind, kind
    assert seconds < 1


# ---------------------------------------------------------------------------------------
# The GIL is released during engine work.


def test_other_threads_run_during_an_engine_call(tmp_path, monkeypatch):
    # The engine fetches `org/tiny` from a Hub served by a Python thread of this process:
    # it can only answer while the engine's call has released the GIL. Held, the request
    # would wait out its 2 s timeout and raise NetworkError.
    config = (CONFIGS / "gpt2.json").read_bytes()
    files = {
        "/api/models/org/tiny/revision/main": json.dumps({"siblings": [{"rfilename": "config.json"}]}).encode(),
        "/org/tiny/resolve/main/config.json": config,
    }
    seen = []

    class Hub(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            seen.append(self.path)
            body = files.get(self.path)
            if body is None:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.server_address[1]}")
        monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
        assert llmsize.params("org/tiny", online=True, timeout=2)["total"] == 124439808
    finally:
        server.shutdown()
        server.server_close()
    assert seen == list(files)


# ---------------------------------------------------------------------------------------
# design(), and every option of every front end (issue 22).


@pytest.mark.skipif(CLI is None, reason="LLMSIZE_BIN names the CLI binary to compare with")
@pytest.mark.parametrize(
    "flags, kwargs",
    [
        (["--style", "llama", "--params", "7B", "--top", "3"], {"style": "llama", "params": "7B", "top": 3}),
        (["--like", "llama-3-8b", "--params", "8.03B", "--top", "2"], {"like": "llama-3-8b", "params": "8.03B", "top": 2}),
        (["--style", "moe", "--params", "47B", "--active", "--experts", "8", "--top-k", "2", "--head-dim", "128",
          "--gqa-group", "4", "--tp", "8", "--top", "2"],
         {"style": "moe", "params": "47B", "active": True, "experts": 8, "top_k": 2, "head_dim": [128],
          "gqa_group": "4", "tp": 8, "top": 2}),
        (["--memory", "24GiB", "--dtype", "q4_k_m", "--ctx", "8k", "--ffn-rule", "mult:1.3", "--top", "2"],
         {"memory": "24GiB", "dtype": "q4_k_m", "ctx": 8192, "ffn_rule": "mult:1.3", "top": 2}),
        (["--compute", "1e21", "--fit", "epoch", "--tolerance", "2%", "--aspect", "32..256", "--top", "2"],
         {"compute": "1e21", "fit": "epoch", "tolerance": "2%", "aspect": "32..256", "top": 2}),
        (["--train-memory", "h100", "--batch", "2", "--optimizer", "adamw-8bit", "--checkpointing",
          "--hidden-range", "2048..4096", "--layers-range", "16..32", "--top", "2"],
         {"train_memory": "h100", "batch": 2, "optimizer": "adamw-8bit", "checkpointing": True,
          "hidden_range": "2048..4096", "layers_range": "16..32", "top": 2}),
        (["--train-memory", "24GiB", "--lora-rank", "16", "--qlora", "--zero", "2", "--dp", "4",
          "--precision", "mixed", "--hidden-range", "2048..4096", "--layers-range", "16..32", "--top", "2"],
         {"train_memory": "24GiB", "lora_rank": 16, "qlora": True, "zero": 2, "dp": 4, "precision": "mixed",
          "hidden_range": "2048..4096", "layers_range": "16..32", "top": 2}),
    ],
)
def test_design_returns_the_cli_json(flags, kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert llmsize.design(**kwargs) == cli_json("design", *flags)


@pytest.mark.skipif(CLI is None, reason="LLMSIZE_BIN names the CLI binary to compare with")
@pytest.mark.parametrize(
    "flags, kwargs",
    [
        (["--params", "7B", "--memory", "24GiB"], {"params": "7B", "memory": "24GiB"}),
        (["--params", "7B", "--batch", "2"], {"params": "7B", "batch": 2}),
        (["--compute", "1e21", "--checkpointing"], {"compute": "1e21", "checkpointing": True}),
        (["--active"], {"active": True}),
        (["--params", "7B", "--active", "--non-embedding"], {"params": "7B", "active": True, "non_embedding": True}),
        (["--train-memory", "h100", "--qlora"], {"train_memory": "h100", "qlora": True}),
        (["--params", "7B", "--style", "gpt", "--like", "gpt2"], {"params": "7B", "style": "gpt", "like": "gpt2"}),
        (["--params", "7B", "--kv-heads", "8", "--gqa-group", "4"], {"params": "7B", "kv_heads": 8, "gqa_group": 4}),
        (["--params", "seven"], {"params": "seven"}),
        (["--params", "7B", "--tolerance", "60%"], {"params": "7B", "tolerance": "60%"}),
        (["--params", "7B", "--experts", "5000"], {"params": "7B", "experts": 5000}),
        (["--params", "7B", "--top", "0"], {"params": "7B", "top": 0}),
        (["--params", "7B", "--ffn-rule", "mult:x"], {"params": "7B", "ffn_rule": "mult:x"}),
        (["--train-memory", "a-gpu-that-is-not"], {"train_memory": "a-gpu-that-is-not"}),
    ],
)
def test_design_refuses_what_the_cli_refuses(flags, kwargs):
    assert subprocess.run([CLI, "design", *flags, "--json"], capture_output=True).returncode == 2
    with pytest.raises(llmsize.InputError):
        llmsize.design(**kwargs)


# Options of the CLI that Python spells otherwise or does not take, each with the reason.
# Every other option of `llmsize <command>` is a keyword argument of `llmsize.<command>`
# of the same name (`-` as `_`), and the test below fails on an option in neither.
PYTHON_ELSEWHERE = {
    "help": "clap's help text",
    "format": "Python returns the JSON contract as a dict",
    "json": "Python returns the JSON contract as a dict",
    "wide": "a table's layout in a terminal",
    "explain": "a table's formula column; the JSON's `formulas` holds the same",
    "seq": "`seq_len=`, the option's own name",
    "ngl": "`n_gpu_layers=`, the option's own name (llama.cpp's short flag)",
}
# CLI options Python spells with their unit.
PYTHON_RENAMED = {"overhead": "overhead_mib"}
# Options a command's CLI parses but refuses (exit 2), so no keyword takes them.
CLI_REFUSES = {"train": {"images", "image_tokens"}}
# `params`'s DesignArgs (`--hidden`, `--layers`, …: a model described by flags) are
# `design()`'s business in Python: a described model is a config dict there.
PYTHON_DESCRIBES_BY_DICT = {"hidden", "layers", "vocab", "heads", "kv_heads", "ffn", "ctx", "style"}


@pytest.mark.skipif(CLI is None, reason="LLMSIZE_BIN names the CLI binary to compare with")
@pytest.mark.parametrize("command", ["params", "memory", "flops", "train", "design", "inspect", "audit"])
def test_every_cli_option_is_a_keyword_or_says_why_not(command):
    import inspect as pyinspect
    import re

    help_text = subprocess.run([CLI, command, "--help"], capture_output=True, text=True).stdout
    options = {m.replace("-", "_") for m in re.findall(r"^\s+(?:-\w, )?--([a-z0-9-]+)", help_text, re.M)}
    keywords = set(pyinspect.signature(getattr(llmsize, command)).parameters)
    missing = []
    for option in sorted(options):
        if PYTHON_RENAMED.get(option, option) in keywords or option in PYTHON_ELSEWHERE:
            continue
        if option in CLI_REFUSES.get(command, ()):
            out = subprocess.run([CLI, command, "gpt2", f"--{option.replace('_', '-')}", "1"], capture_output=True)
            assert out.returncode == 2, option
            continue
        if command in ("memory", "flops", "train", "params") and option in PYTHON_DESCRIBES_BY_DICT:
            continue
        missing.append(option)
    assert not missing, f"`llmsize {command}` options with no keyword and no reason: {missing}"
    # Each keyword is an option of the command (or the model it takes).
    extra = keywords - {PYTHON_RENAMED.get(o, o) for o in options} - {"model", "path"}
    assert not extra, f"`llmsize.{command}` keywords the CLI has not: {extra}"
