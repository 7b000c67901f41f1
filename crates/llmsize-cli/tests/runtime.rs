//! `llmsize memory` under serving runtimes (`--runtime llama.cpp|vllm`), pipeline and layer
//! splits, and GPUs described by flags: values derived by hand in the comments, exact exit
//! codes and messages.
//!
//! Llama-3-8B's numbers used throughout (bf16): a layer is q, o 4096×4096 + k, v 4096×1024 +
//! gate, up, down 4096×14336 + 2 norms of 4096 = 218,112,000 parameters = 436,224,000 B; the
//! token table and the untied head are 128,256×4096×2 = 1,050,673,152 B each (the head's side
//! also holds the final norm, 8,192 B). Its KV cache is 2·8·128 = 2,048 elements per token and
//! layer: 4,096 B in f16/bf16.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::float_cmp,
    clippy::cast_sign_loss,
    missing_docs,
    reason = "a test fails loudly on what it did not expect"
)]

mod common;

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use common::llmsize;
use serde_json::Value;

const LAYER: u64 = 436_224_000;
const TABLE: u64 = 1_050_673_152;
const HEAD: u64 = TABLE + 8_192;
/// f16 K and V of one token in one layer.
const KV_TOKEN_LAYER: u64 = 4_096;

fn json(args: &[&str]) -> (i32, Value) {
    let mut a = args.to_vec();
    a.push("--json");
    let r = llmsize(&a);
    assert!(r.code == 0 || r.code == 1, "{}", r.stderr);
    (r.code, serde_json::from_str(&r.stdout).unwrap())
}

/// `memory MODEL --runtime llama.cpp EXTRA… --json`.
fn llama_cpp(model: &str, extra: &[&str]) -> Value {
    let mut a = vec!["memory", model, "--runtime", "llama.cpp"];
    a.extend_from_slice(extra);
    json(&a).1
}

fn stage(v: &Value, i: usize) -> &Value {
    &v["serving"]["stages"][i]
}

fn layers(s: &Value) -> Vec<[u64; 2]> {
    s["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| [r[0].as_u64().unwrap(), r[1].as_u64().unwrap()])
        .collect()
}

#[test]
fn three_gpus_that_do_not_divide_the_heads_are_a_layer_split() {
    // 32 heads over 3 GPUs cannot be tensor parallel: no `--tp 3` error, a 3-stage split in
    // vLLM's partition (11, 11, 10), exit 0.
    let r = llmsize(&["memory", "Meta-Llama-3-8B", "--gpu", "rtx4090x3"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!r.stdout.contains("--tp 3` is"), "{}", r.stdout);
    assert!(
        r.stdout
            .contains("3 GPUs: tensor parallelism 3 does not split the attention heads (degrees that work: 1, 2)"),
        "{}",
        r.stdout
    );
    let (_, v) = json(&["memory", "Meta-Llama-3-8B", "--gpu", "rtx4090x3"]);
    assert_eq!(v["tp"], 1);
    assert_eq!(v["serving"]["pp"], 3);
    assert_eq!(layers(stage(&v, 0)), vec![[0, 11]]);
    assert_eq!(layers(stage(&v, 1)), vec![[11, 22]]);
    assert_eq!(layers(stage(&v, 2)), vec![[22, 32]]);
    // The first stage: 11 layers and the token table; the last: 10 layers and the head.
    assert_eq!(stage(&v, 0)["weights_bytes"], 11 * LAYER + TABLE);
    assert_eq!(stage(&v, 2)["weights_bytes"], 10 * LAYER + HEAD);
    // transformers' cache at 4,096 tokens: 11 layers × 4,096 × 4,096 B on the first GPU.
    assert_eq!(stage(&v, 0)["kv_cache_bytes"], 11 * 4_096 * KV_TOKEN_LAYER);
    assert_eq!(v["per_gpu_bytes"], stage(&v, 0)["total_bytes"]);

    // Six GPUs: the widest tensor parallelism that divides both, 2, times 3 stages.
    let (_, v) = json(&["memory", "Meta-Llama-3-8B", "--gpu", "rtx4090x6"]);
    assert_eq!(v["tp"], 2);
    assert_eq!(v["serving"]["pp"], 3);
    // --pp 2 over 6 GPUs: 3 each, but 3 does not split 32 heads: tensor parallel 2 a stage.
    let (_, v) = json(&[
        "memory",
        "Meta-Llama-3-8B",
        "--gpu",
        "rtx4090x6",
        "--pp",
        "2",
    ]);
    assert_eq!(v["tp"], 2);
    // Eight GPUs divide the heads: tensor parallel 8 as before, no placement.
    let (_, v) = json(&["memory", "Meta-Llama-3-8B", "--gpu", "h100x8"]);
    assert_eq!(v["tp"], 8);
    assert!(v.get("serving").is_none());
}

#[test]
fn flops_on_three_gpus_is_not_an_invalid_tp() {
    let r = llmsize(&["flops", "Meta-Llama-3-8B", "--gpu", "rtx4090x3"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    // The point's note (printed with the other notes of the answer).
    assert!(
        r.stdout.contains(
            "note: 3 GPUs: the speed is for tensor parallelism 1 (the attention heads do not split 3 ways)"
        ),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("speed on 1 × RTX-4090-24GB"),
        "{}",
        r.stdout
    );
}

#[test]
fn an_explicit_tp_that_does_not_divide_is_an_error() {
    let r = llmsize(&[
        "memory",
        "Meta-Llama-3-8B",
        "--gpu",
        "rtx4090x3",
        "--tp",
        "3",
    ]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr
            .contains("`--tp 3` does not split `Meta-Llama-3-8B`'s attention heads evenly"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr
            .contains("tensor-parallel degrees that work: 1, 2; or split the layers with `--pp`"),
        "{}",
        r.stderr
    );
    let r = llmsize(&[
        "memory",
        "Meta-Llama-3-8B",
        "--gpu",
        "h100x4",
        "--tp",
        "4",
        "--pp",
        "2",
    ]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr
            .contains("`--tp 4` × `--pp 2` is more than the 4 GPU(s) of `--gpu`")
    );
    let r = llmsize(&[
        "memory",
        "Meta-Llama-3-8B",
        "--gpu",
        "h100x40",
        "--pp",
        "40",
    ]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("expected at most the model's 32 layers"),
        "{}",
        r.stderr
    );
}

#[test]
fn pipeline_with_tensor_parallel_stages() {
    // --pp 2 over 8 GPUs: tp 4 each; the first stage's 16 layers and table split 4 ways.
    let (_, v) = json(&["memory", "Meta-Llama-3-8B", "--gpu", "h100x8", "--pp", "2"]);
    assert_eq!(v["tp"], 4);
    assert_eq!(stage(&v, 0)["device"], "GPUs 0–3");
    assert_eq!(
        stage(&v, 0)["weights_bytes"],
        (16 * LAYER + TABLE).div_ceil(4)
    );
    assert_eq!(
        stage(&v, 1)["weights_bytes"],
        (16 * LAYER + HEAD).div_ceil(4)
    );
}

#[test]
fn llama_cpp_layer_split_over_three_gpus() {
    // llama.cpp puts layer i on the GPU whose cumulative split first exceeds i/33 (32 layers +
    // the output): 0–10, 11–21, 22–31 and the output on the last; the token table in RAM.
    let (code, v) = json(&[
        "memory",
        "Meta-Llama-3-8B",
        "--runtime",
        "llama.cpp",
        "--gpu",
        "rtx3090x3",
    ]);
    assert_eq!(code, 0);
    assert_eq!(v["kv_dtype"], "fp16", "llama.cpp's default cache type");
    assert_eq!(layers(stage(&v, 0)), vec![[0, 11]]);
    assert_eq!(layers(stage(&v, 1)), vec![[11, 22]]);
    assert_eq!(layers(stage(&v, 2)), vec![[22, 32]]);
    assert_eq!(stage(&v, 0)["weights_bytes"], 11 * LAYER);
    assert_eq!(stage(&v, 2)["weights_bytes"], 10 * LAYER + HEAD);
    assert_eq!(stage(&v, 3)["device"], "CPU (system RAM)");
    assert_eq!(stage(&v, 3)["weights_bytes"], TABLE);
    // n_ctx 4,096: 11 layers × 4,096 cells × 4,096 B.
    assert_eq!(stage(&v, 0)["kv_cache_bytes"], 11 * 4_096 * KV_TOKEN_LAYER);
    // Compute buffer estimate on the last GPU: 512 × (2·4096 + 3·14336) × 4 B of a layer's
    // f32 activations + 512 × 128,256 × 4 B of logits.
    assert_eq!(
        stage(&v, 2)["activation_bytes"],
        512 * 51_200 * 4 + 512 * 128_256 * 4
    );
    // Per GPU: the last one, 5,412,921,344 + 167,772,160 + 367,525,888 + 512 MiB.
    assert_eq!(v["per_gpu_bytes"], 6_485_090_304_u64);

    // --tensor-split 2,1,1: half the layers on the first GPU (i/33 < 0.5: 0–16).
    let v = llama_cpp(
        "Meta-Llama-3-8B",
        &["--gpu", "rtx3090x3", "--tensor-split", "2,1,1"],
    );
    assert_eq!(layers(stage(&v, 0)), vec![[0, 17]]);
    assert_eq!(layers(stage(&v, 1)), vec![[17, 25]]);
    assert_eq!(layers(stage(&v, 2)), vec![[25, 32]]);
}

#[test]
fn llama_cpp_partial_offload() {
    // -ngl 20: the last 20 layers on the GPU, layers 0–11, the table and the output layer
    // (it needs -ngl 33) in system RAM, each layer's KV with it.
    let (code, v) = json(&[
        "memory",
        "Meta-Llama-3-8B",
        "--runtime",
        "llama.cpp",
        "--gpu",
        "rtx3060",
        "--ngl",
        "20",
    ]);
    assert_eq!(code, 0);
    assert_eq!(layers(stage(&v, 0)), vec![[12, 32]]);
    assert_eq!(stage(&v, 0)["weights_bytes"], 20 * LAYER);
    assert_eq!(stage(&v, 0)["kv_cache_bytes"], 20 * 4_096 * KV_TOKEN_LAYER);
    let cpu = stage(&v, 1);
    assert_eq!(layers(cpu), vec![[0, 12]]);
    assert_eq!(cpu["weights_bytes"], 12 * LAYER + TABLE + HEAD);
    assert_eq!(cpu["kv_cache_bytes"], 12 * 4_096 * KV_TOKEN_LAYER);
    assert_eq!(v["serving"]["llama_cpp"]["output_on_gpu"], false);
    // Everything on a 12 GB card does not fit (16 GB of bf16 weights): exit 1.
    let r = llmsize(&[
        "memory",
        "Meta-Llama-3-8B",
        "--runtime",
        "llama.cpp",
        "--gpu",
        "rtx3060",
    ]);
    assert_eq!(r.code, 1, "{}", r.stdout);
}

#[test]
fn longest_context_under_llama_cpp() {
    // Llama-3.1-8B (131,072 trained) on an RTX 3090 (24,576 MiB = 25,769,803,776 B): 32 layers
    // + the head 15,009,849,344 B, compute 367,525,888, overhead 536,870,912 leave
    // 9,855,557,632 B = 75,192.9 cells of 131,072 B; n_ctx pads to 256, so 293 × 256 = 75,008.
    let r = llmsize(&[
        "memory",
        "Llama-3.1-8B",
        "--runtime",
        "llama.cpp",
        "--gpu",
        "rtx3090",
        "--max-context",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout
            .contains("longest context that fits at batch 1: 75,008 tokens (limited by memory)"),
        "{}",
        r.stdout
    );
}

#[test]
fn llama_cpp_pads_n_ctx_and_sizes_sliding_caches() {
    // --ctx-size 5000 becomes 5,120 cells: 32 × 5,120 × 4,096 B.
    let v = llama_cpp("Meta-Llama-3-8B", &["--ctx-size", "5000"]);
    assert_eq!(v["serving"]["llama_cpp"]["n_ctx"], 5_120);
    assert_eq!(v["kv_cache_bytes"], 32 * 5_120 * KV_TOKEN_LAYER);
    // Without --ctx-size, n_ctx is the tokens of all sequences: 3,000 × 2 → 6,144.
    let v = llama_cpp("Meta-Llama-3-8B", &["--seq-len", "3000", "--batch", "2"]);
    assert_eq!(v["serving"]["llama_cpp"]["n_ctx"], 6_144);

    // Gemma-2-9B at 32k: 21 global layers keep 32,768 cells, 21 sliding (n_swa 4096) keep
    // GGML_PAD(4096 + 512, 256) = 4,608; 2·8·256·2 = 8,192 B a token and layer.
    let v = llama_cpp("gemma-2-9b", &["--seq-len", "32k"]);
    assert_eq!(v["serving"]["llama_cpp"]["swa_cells"], 4_608);
    assert_eq!(
        v["kv_cache_bytes"],
        21 * 8_192 * 32_768 + 21 * 8_192 * 4_608_u64
    );
    // --swa-full: every layer keeps 32,768.
    let v = llama_cpp("gemma-2-9b", &["--seq-len", "32k", "--swa-full"]);
    assert_eq!(v["kv_cache_bytes"], 42 * 8_192 * 32_768_u64);
    // Gemma-3-1B: n_swa 512 → 1,024 cells; gpt-oss-20b: n_swa 128 → GGML_PAD(640, 256) = 768.
    let v = llama_cpp("gemma-3-1b-pt", &["--seq-len", "32k"]);
    assert_eq!(v["serving"]["llama_cpp"]["swa_cells"], 1_024);
    let v = llama_cpp("gpt-oss-20b", &["--seq-len", "32k"]);
    assert_eq!(v["serving"]["llama_cpp"]["swa_cells"], 768);
    // Mistral-7B-v0.1's sliding_window 4096 is not a llama.cpp SWA cache: 32k cells in all.
    let v = llama_cpp("Mistral-7B-v0.1", &["--seq-len", "32k"]);
    assert!(v["serving"]["llama_cpp"]["swa_cells"].is_null());
    assert_eq!(v["kv_cache_bytes"], 32 * 32_768 * KV_TOKEN_LAYER);
}

#[test]
fn vllm_blocks_and_max_sequences() {
    // Llama-3-8B on an A100-80GB at 0.9: 0.9 × 81,920 MiB = 77,309,411,328 B; minus weights
    // 16,060,522,496, activations 2,048 tokens (the A100's max_num_batched_tokens) × 51,200 ×
    // 2 B = 209,715,200, logits 256 × 128,256 × 4 = 131,334,144 and 512 MiB: 60,370,968,576 B
    // for the KV cache. A block: 16 tokens × 4,096 B × 32 layers = 2 MiB → 28,787 blocks; an
    // 8k request needs 512: 56 sequences (56.22×).
    let (code, v) = json(&[
        "memory",
        "Meta-Llama-3-8B",
        "--runtime",
        "vllm",
        "--gpu",
        "a100",
        "--seq-len",
        "8k",
    ]);
    assert_eq!(code, 0);
    let p = &v["serving"]["vllm"];
    assert_eq!(p["budget_bytes"], 77_309_411_328_u64);
    assert_eq!(p["kv_budget_bytes"], 60_370_968_576_u64);
    assert_eq!(p["page_bytes"], 16 * KV_TOKEN_LAYER);
    assert_eq!(p["num_blocks"], 28_787);
    assert_eq!(p["blocks_per_request"], 512);
    assert_eq!(p["max_sequences"], 56);
    assert_eq!(p["kv_cache_tokens"], 28_787 * 16);
    // Asking for 57 sequences at once does not fit: exit 1.
    let r = llmsize(&[
        "memory",
        "Meta-Llama-3-8B",
        "--runtime",
        "vllm",
        "--gpu",
        "a100",
        "--seq-len",
        "8k",
        "--batch",
        "57",
    ]);
    assert_eq!(r.code, 1);
    assert!(
        r.stdout.contains("does not fit: the KV budget"),
        "{}",
        r.stdout
    );

    // Gemma-2-9B on an H100 (8,192 batched tokens): 21 sliding + 21 full layers in two groups
    // of 21; a 32k request needs 2,048 full blocks + cdiv(min(4095 + 8192, 32768), 16) + 1 =
    // 769 sliding ones.
    let (_, v) = json(&[
        "memory",
        "gemma-2-9b",
        "--runtime",
        "vllm",
        "--gpu",
        "h100",
        "--max-model-len",
        "32k",
    ]);
    let p = &v["serving"]["vllm"];
    assert_eq!(p["max_num_batched_tokens"], 8_192);
    assert_eq!(p["layers_per_block"], 21);
    assert_eq!(p["page_bytes"], 16 * 8_192);
    assert_eq!(p["blocks_per_request"], 2_048 + 769);
    let kv_budget = p["kv_budget_bytes"].as_u64().unwrap();
    assert_eq!(p["num_blocks"], kv_budget / (16 * 8_192 * 21));
    // The budget: 0.9 × 81,559 MiB, floored.
    assert_eq!(
        p["budget_bytes"],
        (81_559.0 * 1_048_576.0 * 0.9_f64).floor() as u64
    );

    // Not even one request: a 70B in bf16 on one A100.
    let r = llmsize(&[
        "memory",
        "Llama-3.1-405B",
        "--runtime",
        "vllm",
        "--gpu",
        "a100",
    ]);
    assert_eq!(r.code, 1, "{}", r.stderr);
}

#[test]
fn a_tied_head_is_loaded_again_where_the_output_is() {
    // Llama-3.2-1B ties its head to the 128,256×2048 table (525,336,576 B in bf16). llama.cpp
    // keeps the table in RAM and loads it again as the output on the GPU: 16 layers of
    // 121,643,008 B + the final norm 4,096 + the copy.
    let (_, v) = json(&["memory", "Llama-3.2-1B", "--runtime", "llama.cpp"]);
    assert_eq!(
        stage(&v, 0)["weights_bytes"],
        16 * 121_643_008 + 4_096 + 525_336_576_u64
    );
    assert_eq!(stage(&v, 1)["weights_bytes"], 525_336_576_u64);
}

#[test]
fn vllm_pages_of_an_mla_cache() {
    // DeepSeek-V2-Lite caches the 512 + 64 latent: a block of a layer is 16 × 576 × 2 B, and
    // its 27 layers share a block id.
    let (_, v) = json(&[
        "memory",
        "DeepSeek-V2-Lite",
        "--runtime",
        "vllm",
        "--gpu",
        "h100",
    ]);
    let p = &v["serving"]["vllm"];
    assert_eq!(p["page_bytes"], 18_432);
    assert_eq!(p["layers_per_block"], 27);
    let kv_budget = p["kv_budget_bytes"].as_u64().unwrap();
    assert_eq!(p["num_blocks"], kv_budget / (18_432 * 27));
    assert_eq!(p["blocks_per_request"], 4_096 / 16);
}

#[test]
fn custom_gpus_from_flags() {
    // A 24 GiB GPU described by flags holds Llama-3-8B in bf16 at 4k (16.35 GiB: 14.96 of
    // weights, 0.5 of KV, 0.39 of activations, 0.5 of overhead): exit 0.
    let (code, v) = json(&[
        "memory",
        "Meta-Llama-3-8B",
        "--gpu-mem",
        "24GiB",
        "--gpu-bw",
        "936GB/s",
        "--gpu-tflops",
        "71",
    ]);
    assert_eq!(code, 0);
    assert_eq!(v["gpu"]["memory_bytes"], 24_u64 << 30);
    assert_eq!(
        v["gpu"]["name"],
        "custom GPU (memory 24.00 GiB, 936 GB/s, 71.0 TFLOP/s)"
    );
    // 16 GB does not hold 16.06 GB of weights: exit 1.
    let r = llmsize(&["memory", "Meta-Llama-3-8B", "--gpu-mem", "16GB"]);
    assert_eq!(r.code, 1);
    // Overriding a named GPU's memory (a 48 GB RTX 4090) keeps its name and count.
    let (_, v) = json(&[
        "memory",
        "Meta-Llama-3-8B",
        "--gpu",
        "rtx4090x2",
        "--gpu-mem",
        "48GiB",
    ]);
    assert_eq!(v["gpu"]["count"], 2);
    assert_eq!(v["gpu"]["memory_bytes"], 48_u64 << 30);
    assert!(
        v["gpu"]["name"]
            .as_str()
            .unwrap()
            .starts_with("RTX-4090-24GB (memory 48.00 GiB")
    );
    // vLLM on a custom GPU: 0.9 × 24 GiB.
    let (_, v) = json(&[
        "memory",
        "Qwen2.5-7B",
        "--runtime",
        "vllm",
        "--gpu-mem",
        "24GiB",
        "--dtype",
        "q4_k_m",
    ]);
    assert_eq!(
        v["serving"]["vllm"]["budget_bytes"],
        (24.0 * 1_073_741_824.0 * 0.9_f64).floor() as u64
    );
}

#[test]
fn bad_runtime_input_names_the_flag() {
    for (args, message, hint) in [
        (
            vec!["--gpu-mem", "24"],
            "`--gpu-mem`: `24` is not a memory size; write it with its unit, e.g. 24GiB or 24GB",
            "--gpu-mem 24GiB --gpu-bw 936GB/s --gpu-tflops 71",
        ),
        (
            vec!["--gpu-mem", "0GiB"],
            "`--gpu-mem`: `0GiB` is out of range: a GPU's memory is at least 1 byte and below 16 EiB",
            "--gpu-mem 24GiB --gpu-bw 936GB/s --gpu-tflops 71",
        ),
        (
            vec!["--gpu-mem", "24GiB", "--gpu-bw", "0"],
            "`--gpu-bw`: `0` is out of range: a bandwidth is above 0 and below 10⁹ TB/s",
            "--gpu-mem 24GiB --gpu-bw 936GB/s --gpu-tflops 71",
        ),
        (
            vec!["--gpu-bw", "900GB/s"],
            "a GPU described by flags needs its memory",
            "--gpu-mem 24GiB",
        ),
        (
            vec!["--runtime", "vllm"],
            "`--runtime vllm` needs a GPU: vLLM sizes its KV cache from the GPU's memory",
            "--gpu-mem 80GiB",
        ),
        (
            vec!["--ctx-size", "5000"],
            "`--ctx-size`, `--n-gpu-layers`, `--tensor-split` and `--swa-full` are llama.cpp's",
            "add `--runtime llama.cpp`",
        ),
        (
            vec!["--max-model-len", "8k", "--gpu", "h100"],
            "are vLLM's",
            "add `--runtime vllm`",
        ),
        (
            vec!["--runtime", "llama.cpp", "--gpu", "rtx3090x2", "--tp", "2"],
            "`--tp 2` under llama.cpp: its row split (`--split-mode row`) is not modelled",
            "drop `--tp`",
        ),
        (
            vec![
                "--runtime",
                "llama.cpp",
                "--gpu",
                "rtx3090x3",
                "--tensor-split",
                "1,1",
            ],
            "`--tensor-split` = [1.0, 1.0] is invalid: expected 3 non-negative proportions, one per GPU",
            "",
        ),
        (
            vec![
                "--runtime",
                "vllm",
                "--gpu",
                "h100",
                "--gpu-memory-utilization",
                "1.5",
            ],
            "`--gpu-memory-utilization` = 1.5 is invalid: expected a fraction in (0, 1]",
            "",
        ),
    ] {
        let mut a = vec!["memory", "Meta-Llama-3-8B"];
        a.extend(args.iter().copied());
        let r = llmsize(&a);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stdout);
        assert!(r.stderr.contains(message), "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(hint), "{args:?}: {}", r.stderr);
    }
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The 2-layer GGUF fixture (tests/fixtures/gguf/README.md): its header padded with zeros.
fn tiny_gguf(dir: &Path) -> PathBuf {
    let header =
        fs::read(root().join("tests/fixtures/gguf/tiny-llama-consistent.gguf.header")).unwrap();
    let p = dir.join("tiny.gguf");
    let mut f = fs::File::create(&p).unwrap();
    f.write_all(&header).unwrap();
    f.set_len(1_099_584).unwrap();
    p
}

#[test]
fn a_gguf_defaults_to_llama_cpp() {
    let dir = tempfile::tempdir().unwrap();
    let p = tiny_gguf(dir.path());
    let p = p.to_str().unwrap();
    let (code, v) = json(&["memory", p, "--gpu", "rtx3060x2", "--seq-len", "1000"]);
    assert_eq!(code, 0);
    assert_eq!(v["serving"]["runtime"], "llama.cpp");
    assert_eq!(v["kv_dtype"], "fp16");
    // 1,000 tokens → 1,024 cells; 2 layers × 2·2·64 elements × 2 B × 1,024.
    assert_eq!(v["kv_cache_bytes"], 2 * 256 * 2 * 1_024);
    // 2 layers + output over 2 GPUs: i/3 against 0.5: both layers on GPU 0, the output (2/3)
    // on GPU 1; the files' bytes are all placed (1,094,144 in all).
    assert_eq!(layers(stage(&v, 0)), vec![[0, 2]]);
    assert!(layers(stage(&v, 1)).is_empty());
    assert_eq!(stage(&v, 1)["holds"][0], "output layer");
    let placed: u64 = (0..3)
        .map(|i| stage(&v, i)["weights_bytes"].as_u64().unwrap())
        .sum();
    assert_eq!(placed, 1_094_144);
    assert_eq!(v["weights_bytes"], 1_094_144);
    assert!(v["assumptions"].as_array().unwrap().iter().any(|a| {
        a.as_str()
            .unwrap()
            .starts_with("a GGUF file: sized as llama.cpp serves it")
    }));
    // --runtime transformers gives the plain report back.
    let (_, v) = json(&["memory", p, "--runtime", "transformers"]);
    assert!(v.get("serving").is_none());
    assert_eq!(v["kv_dtype"], "bf16");
}

#[test]
fn new_gpus_and_the_3090_label() {
    let (_, v) = json(&["gpus"]);
    let find = |name: &str| {
        v.as_array()
            .unwrap()
            .iter()
            .find(|g| g["name"] == name)
            .unwrap_or_else(|| panic!("{name} missing"))
            .clone()
    };
    for name in [
        "RTX-5090-32GB",
        "RTX-4080-16GB",
        "RTX-3060-12GB",
        "A10G-24GB",
        "MI325X-256GB",
        "Apple-M2-Ultra-192GB",
        "Apple-M3-Max-128GB",
        "Apple-M4-Max-128GB",
        "L4-24GB",
        "L40S-48GB",
        "T4-16GB",
        "B200-180GB",
        "MI300X-192GB",
    ] {
        assert!(!find(name)["source"].as_str().unwrap().is_empty());
    }
    // 71 TFLOP/s is the RTX 3090's FP16 rate with FP32 accumulate (142 with FP16).
    let g = find("RTX-3090-24GB");
    assert_eq!(g["peak_16bit_flops"], 71.0e12);
    assert!(
        g["source"]
            .as_str()
            .unwrap()
            .contains("with FP32 accumulate (142 with FP16 accumulate")
    );
    // Apple's GPU may use 75% of a 192 GB M2 Ultra by default: 147,456 MiB.
    assert_eq!(
        find("Apple-M2-Ultra-192GB")["memory_bytes"],
        147_456_u64 << 20
    );
}
