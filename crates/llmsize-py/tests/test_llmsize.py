"""llmsize from Python: the engine's numbers, the JSON contract's keys, typed exceptions.

The ground truth is the repository's copy of the shared truth (78 real configs and what the
transformers 5.24 code builds from them). With ``LLMSIZE_BIN`` set to the CLI binary (CI sets
it), every preset's result is also compared with the CLI's ``--json`` output, key by key.
"""

import json
import os
import subprocess
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
        llmsize.params("gpt-7")
    assert "did you mean" in (e.value.hint or "")
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
    with pytest.raises(TypeError):
        llmsize.params(42)


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
