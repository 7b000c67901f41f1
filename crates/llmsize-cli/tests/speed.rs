//! Speed and cost (`flops --gpu`): the bytes a decode step really reads, time to first token,
//! tokens/s by batch, cost per million tokens; several models and sweeps in `memory` and
//! `flops`; encoders. Every expected number is derived by hand in a comment.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::float_cmp,
    missing_docs,
    reason = "a test fails loudly on what it did not expect"
)]

mod common;

use std::fs;
use std::io::Write;
use std::path::PathBuf;

use common::{Run, llmsize};
use serde_json::Value;

fn json(args: &[&str]) -> Value {
    let r = llmsize(args);
    assert!(r.code == 0 || r.code == 1, "{args:?}: {}", r.stderr);
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {}", r.stdout))
}

fn close(got: f64, want: f64, rel: f64) -> bool {
    ((got - want) / want).abs() < rel
}

/// H100-SXM: 3.35 TB/s × 0.8 (the default `--bw-eff`) bytes per second in decode.
const H100_BYTES_PER_S: f64 = 3.35e12 * 0.8;

#[test]
fn llama_3_8b_decode_reads_one_embedding_row() {
    // Llama-3-8B, bf16, batch 1, 2,048 tokens of context, untied head.
    // All weights: 8,030,261,248 params × 2 B = 16,060,522,496 B.
    // Token table: 128,256 × 4,096 × 2 B = 1,050,673,152 B, of which a step reads one row,
    // 4,096 × 2 = 8,192 B. Weights read = 16,060,522,496 − 1,050,673,152 + 8,192
    // = 15,009,857,536 B.
    // KV: 32 layers × 2·8·128 elements × 2 B = 131,072 B per token × 2,048 = 268,435,456 B.
    let v = json(&["flops", "Meta-Llama-3-8B", "--gpu", "h100", "--json"]);
    let s = &v["speed"];
    let d = &s["decode"];
    assert_eq!(d["weights_bytes_stored"], 16_060_522_496u64);
    assert_eq!(d["weights_bytes_read"], 15_009_857_536u64);
    assert_eq!(d["embedding_bytes_read"], 8_192);
    assert_eq!(d["cache_bytes"], 268_435_456);
    assert_eq!(s["decode_bytes_per_step"], 15_278_292_992u64);
    // Memory bound: 2.68e12 / 15,278,292,992 = 175.41 tokens/s. Counting the whole table (as
    // before) read 16,328,957,952 B: 164.13 tokens/s, 6.4% low (the right answer is 6.9% more).
    let tps = s["decode_tokens_per_second"].as_f64().unwrap();
    assert!(
        close(tps, H100_BYTES_PER_S / 15_278_292_992.0, 1e-9),
        "{tps}"
    );
    let before = H100_BYTES_PER_S / 16_328_957_952.0;
    assert!(close(tps / before, 1.068_77, 1e-4), "{}", tps / before);
}

#[test]
fn tensor_parallel_time_is_one_gpus_bytes() {
    // Llama-3-8B on 2 × H100: each GPU reads half the weights read (15,009,857,536 / 2 =
    // 7,504,928,768 B) and its 4 of the 8 KV heads (268,435,456 / 2 = 134,217,728 B):
    // 7,639,146,496 B per GPU per step.
    let v = json(&["flops", "Meta-Llama-3-8B", "--gpu", "h100x2", "--json"]);
    let d = &v["speed"]["decode"];
    assert_eq!(d["bytes"], 15_278_292_992u64);
    assert_eq!(d["bytes_per_gpu"], 7_639_146_496u64);
    let tps = d["tokens_per_second"].as_f64().unwrap();
    assert!(
        close(tps, H100_BYTES_PER_S / 7_639_146_496.0, 1e-9),
        "{tps}"
    );
    // DeepSeek-V3's MLA latent is held whole by every rank: a GPU's cache is the whole
    // batch's, so one GPU moves more than an eighth of the total.
    let v = json(&[
        "flops",
        "DeepSeek-V3",
        "--gpu",
        "h200x8",
        "--dtype",
        "fp8-block",
        "--json",
    ]);
    let d = &v["speed"]["decode"];
    let (all, one) = (
        d["bytes"].as_u64().unwrap(),
        d["bytes_per_gpu"].as_u64().unwrap(),
    );
    let kv = d["cache_bytes"].as_u64().unwrap();
    let weights = d["weights_bytes_read"].as_u64().unwrap();
    assert_eq!(all, weights + kv);
    assert_eq!(one, weights.div_ceil(8) + kv);
}

#[test]
fn qwen3_30b_a3b_decode_reads_one_row_and_k_experts() {
    // Qwen3-30B-A3B, bf16, batch 1: 48 layers of 128 experts (k = 8) of 3 × 2,048 × 768.
    // Experts: 48·128·3·2,048·768·2 B = 57,982,058,496 B; one token reads k/E = 8/128 of them:
    // 3,623,878,656 B. The rest: 30,532,122,624·2 − 57,982,058,496 = 3,082,186,752 B, whose
    // token table 151,936 × 2,048 × 2 = 622,329,856 B is read one row (4,096 B):
    // weights read = 3,082,186,752 − 622,329,856 + 4,096 + 3,623,878,656 = 6,083,739,648 B.
    // KV: 48 × 2·4·128 × 2 B = 98,304 B per token × 2,048 = 201,326,592 B.
    let v = json(&["flops", "Qwen3-30B-A3B", "--gpu", "h100", "--json"]);
    let s = &v["speed"];
    let d = &s["decode"];
    assert_eq!(d["weights_bytes_read"], 6_083_739_648u64);
    assert_eq!(d["experts_touched_per_layer"], 8.0);
    assert_eq!(s["decode_bytes_per_step"], 6_285_066_240u64);
    // Before: the whole table, 6,907,392,000 B: tokens/s 9.0% low (the right answer 9.9% more).
    let tps = s["decode_tokens_per_second"].as_f64().unwrap();
    let before = H100_BYTES_PER_S / 6_907_392_000.0;
    assert!(close(tps / before, 1.099_02, 1e-4), "{}", tps / before);
}

#[test]
fn mixtral_batch_4_touches_the_expected_experts() {
    // Mixtral-8x7B, bf16, 2 × H100, batch 4: E = 8, k = 2. Expected experts touched per layer
    // 8·(1 − (1 − 2/8)⁴) = 8·(1 − 81/256) = 5.46875, not min(8, 4·2) = 8.
    // Experts: 32·8·3·4,096·14,336·2 B = 90,194,313,216 B; × 5.46875/8 = × 175/256
    // = 61,656,268,800 B. The rest: 93,405,585,408 − 90,194,313,216 = 3,211,272,192 B with its
    // 32,000 × 4,096 × 2 = 262,144,000 B token table read 4 rows (32,768 B):
    // weights read = 3,211,272,192 − 262,144,000 + 32,768 + 61,656,268,800 = 64,605,429,760.
    // KV: 32 × 2·8·128 × 2 B × 2,048 tokens × 4 sequences = 1,073,741,824 B.
    let v = json(&[
        "flops",
        "Mixtral-8x7B-v0.1",
        "--gpu",
        "h100x2",
        "--batch",
        "4",
        "--json",
    ]);
    let s = &v["speed"];
    let d = &s["decode"];
    assert_eq!(d["experts_touched_per_layer"], 5.468_75);
    assert_eq!(d["weights_bytes_read"], 64_605_429_760u64);
    assert_eq!(d["cache_bytes"], 1_073_741_824u64);
    let bytes = s["decode_bytes_per_step"].as_u64().unwrap();
    assert_eq!(bytes, 65_679_171_584);
    // min(E, b·k) read every weight: 93,405,585,408 + 1,073,741,824 = 94,479,327,232 B, of
    // which 30.5% was too many.
    let before = 94_479_327_232f64;
    assert!(close((before - bytes as f64) / before, 0.3048, 1e-3));
    // The assumption says so, with the formula and its values.
    let a = s["assumptions"].to_string();
    assert!(
        a.contains("uniform routing assumed") && a.contains("8·(1 − (1 − 2/8)^4) = 5.47 of 8"),
        "{a}"
    );
}

#[test]
fn a_tied_head_reads_the_whole_table_once() {
    // GPT-2 ties its head to the 50,257 × 768 token table (77,194,752 B in bf16): the head
    // multiplies by all of it, so it is read whole, once. Its 1,024 × 768 position table
    // (1,572,864 B) is read one row, 1,536 B. All weights 248,879,616 B:
    // read = 248,879,616 − 1,572,864 + 1,536 = 247,308,288 B.
    let v = json(&["flops", "gpt2", "--gpu", "h100", "--json"]);
    let d = &v["speed"]["decode"];
    assert_eq!(d["weights_bytes_read"], 247_308_288);
    assert_eq!(d["embedding_bytes_read"], 77_194_752 + 1_536);
}

#[test]
fn time_to_first_token_is_the_prefill_of_the_prompt() {
    // Llama-2-7b: a forward over 512 tokens is 6,834,500,927,488 FLOPs (`flops --seq-len 512`);
    // on an H100 at MFU 0.5: 6.8345e12 / (989.4e12 × 0.5) = 13.815 ms, compute bound (reading
    // the 13.5 GB of weights once takes 5.0 ms).
    let fwd = json(&["flops", "Llama-2-7b-hf", "--seq-len", "512", "--json"]);
    assert_eq!(fwd["forward_flops"], 6_834_500_927_488u64);
    let v = json(&[
        "flops",
        "Llama-2-7b-hf",
        "--gpu",
        "h100",
        "--prompt",
        "512",
        "--seq-len",
        "4096",
        "--json",
    ]);
    let s = &v["speed"];
    assert_eq!(s["prompt_tokens"], 512);
    assert_eq!(s["prefill"]["bound"], "compute");
    let ttft = s["prefill_seconds"].as_f64().unwrap();
    assert!(
        close(ttft, 6_834_500_927_488.0 / (989.4e12 * 0.5), 1e-9),
        "{ttft}"
    );
    // The decode step sees the 4,096-token context: 32 × 2·32·128 × 2 B × 4,096 = 2 GiB of KV.
    assert_eq!(s["decode"]["cache_bytes"], 2u64 << 30);
    // A prompt longer than an explicit context is a contradiction.
    let r = llmsize(&[
        "flops",
        "Llama-2-7b-hf",
        "--prompt",
        "8k",
        "--seq-len",
        "4k",
    ]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr
            .contains("`--prompt 8192` is longer than `--seq-len 4096`"),
        "{}",
        r.stderr
    );
    // Without `--seq-len`, a long prompt makes the context.
    let v = json(&["flops", "Llama-2-7b-hf", "--prompt", "8k", "--json"]);
    assert_eq!(v["seq_len"], 8192);
}

#[test]
fn tokens_per_second_by_batch_and_cost() {
    // Llama-3-8B on an H100 at $2.50/GPU-hour. Batch 1 decodes 175.41 tokens/s (above):
    // $2.50 / (175.41 × 3600) × 10⁶ = $3.959 per million tokens.
    let v = json(&[
        "flops",
        "Meta-Llama-3-8B",
        "--gpu",
        "h100",
        "--price",
        "2.5",
        "--json",
    ]);
    let s = &v["speed"];
    let by: Vec<&Value> = s["decode_by_batch"].as_array().unwrap().iter().collect();
    let batches: Vec<u64> = by.iter().map(|p| p["batch"].as_u64().unwrap()).collect();
    assert_eq!(batches, [1, 8, 32, 128]);
    let cost = by[0]["cost_per_million_tokens"].as_f64().unwrap();
    let tps = by[0]["tokens_per_second"].as_f64().unwrap();
    assert!(close(cost, 2.5 / (tps * 3600.0) * 1e6, 1e-12));
    assert!(close(cost, 3.959, 1e-3), "{cost}");
    // Batch 8 reads the same weights once plus 8 caches: 15,009,857,536 − 8,192 + 8·8,192
    // + 8 × 268,435,456 = 17,157,398,528 B, for 8 tokens.
    assert_eq!(by[1]["bytes"], 17_157_398_528u64);
    assert!(close(
        by[1]["tokens_per_second"].as_f64().unwrap(),
        8.0 * H100_BYTES_PER_S / 17_157_398_528.0,
        1e-9
    ));
    // Prefill cost: 2,048 prompt tokens in the prefill's seconds.
    let p = &s["prefill"];
    let ptps = 2048.0 / p["seconds"].as_f64().unwrap();
    assert!(close(p["tokens_per_second"].as_f64().unwrap(), ptps, 1e-12));
    assert!(close(
        p["cost_per_million_tokens"].as_f64().unwrap(),
        2.5 / (ptps * 3600.0) * 1e6,
        1e-12
    ));
    // The table says it.
    let r = llmsize(&[
        "flops",
        "Meta-Llama-3-8B",
        "--gpu",
        "h100",
        "--price",
        "2.5",
    ]);
    assert!(r.stdout.contains("time to first token"), "{}", r.stdout);
    assert!(r.stdout.contains("decode by batch"), "{}", r.stdout);
    // The decode step's row: its cost per million tokens, said to be generated tokens.
    let decode = r
        .stdout
        .lines()
        .find(|l| l.starts_with("decode step"))
        .unwrap_or_else(|| panic!("no decode step row: {}", r.stdout));
    assert!(
        decode.contains("$3.959") && decode.contains("$ per million generated tokens"),
        "{decode}"
    );
    // A price needs a GPU, and a sensible value.
    for (args, needle) in [
        (
            vec!["flops", "gpt2", "--price", "2"],
            "`--price` prices GPU time",
        ),
        (
            vec!["flops", "gpt2", "--gpu", "h100", "--price", "-1"],
            "`--price -1` is out of range",
        ),
    ] {
        let r = llmsize(&args);
        assert_eq!(r.code, 2, "{args:?}");
        assert!(r.stderr.contains(needle), "{args:?}: {}", r.stderr);
    }
}

#[test]
fn encoders_are_bidirectional_and_generate_nothing() {
    let r = llmsize(&["flops", "bert-base-uncased"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let out = &r.stdout;
    assert!(out.contains("attention bidirectional"), "{out}");
    assert!(!out.contains("attention causal"), "{out}");
    assert!(!out.contains("exact 0 per token"), "{out}");
    assert!(!out.contains("one generated token"), "{out}");
    // Matmul parameters of a token: 12 layers × (4·768² attention + 2·768·3,072 MLP)
    // = 28,311,552 + 56,623,104, the MLM transform 768² = 589,824 and the tied decoder
    // 30,522 × 768 = 23,440,896: 108,965,376 (not 24,030,720, the head alone).
    assert!(
        out.contains("the matmuls use 108,965,376 parameters per token"),
        "{out}"
    );
    // The default 2,048 tokens is capped at the 512-row position table, with a note.
    assert!(out.contains("over 512 tokens"), "{out}");
    assert!(
        out.contains(
            "note: --seq-len defaults to 2048 tokens; capped at 512 positions, the most `bert-base-uncased` can take (`max_position_embeddings` = 512)"
        ),
        "{out}"
    );
    let v = json(&["flops", "bert-base-uncased", "--gpu", "h100", "--json"]);
    assert_eq!(v["attention"], "bidirectional");
    assert_eq!(v["per_token"], Value::Array(vec![]));
    assert_eq!(v["matmul_params_per_token"], 108_965_376);
    assert_eq!(v["speed"]["decode"], Value::Null);
    assert_eq!(v["speed"]["decode_by_batch"], Value::Array(vec![]));
    // An explicit length past the table is counted as asked, with a note naming the field.
    for cmd in ["flops", "memory"] {
        let v = json(&[cmd, "bert-base-uncased", "--seq-len", "1024", "--json"]);
        assert_eq!(v["seq_len"], 1024, "{cmd}");
        assert!(
            v.to_string().contains(
                "`--seq-len 1024` is longer than `bert-base-uncased` can take (`max_position_embeddings` = 512): counted as asked"
            ),
            "{cmd}: {v}"
        );
    }
}

#[test]
fn encoder_memory_is_one_forward() {
    let r = llmsize(&["memory", "bert-base-uncased", "--explain"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        !r.stdout.lines().any(|l| l.starts_with("KV cache")),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("an encoder keeps no KV cache"),
        "{}",
        r.stdout
    );
    // One layer's working set b·s·(2d + 4d_ff... widest 3,072)·2 B = 512·(1,536 + 3,072)·2
    // = 4,718,592 B plus the MLM logits of every position, 512 × 30,522 × 2 B = 31,254,528 B.
    let v = json(&["memory", "bert-base-uncased", "--json"]);
    assert_eq!(v["seq_len"], 512);
    assert_eq!(v["kv_cache_bytes"], 0);
    assert_eq!(v["activation_bytes"], 4_718_592 + 31_254_528);
}

#[test]
fn encoder_decoders_still_decode() {
    // T5 has relative positions (no table, no cap); its decode step runs the decoder only: the
    // encoder's 6 × (4·512² + 2·512·2,048 + 2·512) + 512 + 32·8 = 18,881,280 parameters
    // (37,762,560 B) are not read, and the tied 32,128 × 512 table is read whole.
    let v = json(&["flops", "t5-small", "--gpu", "h100", "--json"]);
    assert_eq!(v["seq_len"], 2048);
    assert_eq!(v["attention"], "causal");
    assert!(!v["per_token"].as_array().unwrap().is_empty());
    let d = &v["speed"]["decode"];
    assert_eq!(
        d["weights_bytes_stored"].as_u64().unwrap() - d["weights_bytes_read"].as_u64().unwrap(),
        37_762_560
    );
    let r = llmsize(&["flops", "t5-small"]);
    assert!(
        r.stdout
            .contains("the encoder's self-attention and the cross-attention are bidirectional"),
        "{}",
        r.stdout
    );
    // BART's learned table: 1,024 positions (1,026 rows, 2 offset): the default is capped.
    let v = json(&["flops", "bart-base", "--json"]);
    assert_eq!(v["seq_len"], 1024);
    let v = json(&["memory", "bart-base", "--json"]);
    assert_eq!(v["seq_len"], 1024);
    // Self and cross K/V: 6 layers × 2 × 2·12·64 × 2 B × 1,024 = 37,748,736 B.
    assert_eq!(v["kv_cache_bytes"], 37_748_736);
}

#[test]
fn several_models_side_by_side() {
    for cmd in ["memory", "flops"] {
        let v = json(&[cmd, "gpt2", "Llama-2-7b-hf", "--json"]);
        let list = v.as_array().unwrap();
        let names: Vec<&str> = list.iter().map(|m| m["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["gpt2", "Llama-2-7b-hf"], "{cmd}");
        assert!(list.iter().all(|m| m["schema_version"] == 1));
    }
    // The table: a column per model.
    let r = llmsize(&["memory", "gpt2", "Llama-2-7b-hf", "--gpu", "rtx4090"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let header = r.stdout.lines().next().unwrap();
    assert!(
        header.contains("gpt2") && header.contains("Llama-2-7b-hf"),
        "{header}"
    );
    // One model that does not fit makes the answer "no".
    let r = llmsize(&["memory", "gpt2", "Llama-2-70b-hf", "--gpu", "rtx4090"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let r = llmsize(&["flops", "gpt2", "bert-base-uncased", "--gpu", "h100"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("bidirectional"), "{}", r.stdout);
}

#[test]
fn sweeps_over_dtype_gpu_batch_and_seq() {
    // Formats: the weights shrink by format, the KV cache does not.
    let v = json(&[
        "memory",
        "Meta-Llama-3-8B",
        "--sweep",
        "dtype=bf16,q8_0,q4_k_m",
        "--json",
    ]);
    let list = v.as_array().unwrap();
    assert_eq!(list.len(), 3);
    assert_eq!(list[0]["swept"]["dtype"], "bf16");
    assert_eq!(list[0]["weights_bytes"], 16_060_522_496u64);
    assert_eq!(list[2]["format"], "q4_k_m");
    assert_eq!(list[1]["kv_cache_bytes"], list[2]["kv_cache_bytes"]);
    // q4_k_m is llama.cpp's 4.58 GiB for Llama-3-8B.
    let q4 = list[2]["weights_bytes"].as_u64().unwrap() as f64 / f64::from(1u32 << 30);
    assert!(close(q4, 4.58, 0.01), "{q4}");
    // GPUs: Qwen3-30B-A3B in bf16 (61 GB) fits an A100-80GB, not a 4090: exit 1.
    let r = llmsize(&[
        "memory",
        "Qwen3-30B-A3B",
        "--sweep",
        "gpu=rtx4090,a100",
        "--json",
    ]);
    assert_eq!(r.code, 1);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v[0]["swept"]["gpu"], "rtx4090");
    assert_eq!(v[0]["fits"], false);
    assert_eq!(v[1]["fits"], true);
    assert_eq!(v[1]["gpu"]["name"], "A100-SXM-80GB");
    // flops over GPUs: decode is memory bound, so tokens/s scale with bandwidth
    // (RTX 4090 1,008 GB/s, H100 3,350 GB/s).
    let v = json(&[
        "flops",
        "Meta-Llama-3-8B",
        "--sweep",
        "gpu=rtx4090,h100",
        "--json",
    ]);
    let t = |i: usize| v[i]["speed"]["decode_tokens_per_second"].as_f64().unwrap();
    assert!(close(t(1) / t(0), 3350.0 / 1008.0, 1e-9));
    // flops over formats needs a GPU (it changes only the speed).
    let r = llmsize(&["flops", "gpt2", "--sweep", "dtype=bf16,q8_0"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("needs a GPU"), "{}", r.stderr);
    // flops over batches: Mixtral's expected experts at b = 1, 2, 4: 2, 3.5, 5.46875.
    let v = json(&[
        "flops",
        "Mixtral-8x7B-v0.1",
        "--gpu",
        "h100x2",
        "--sweep",
        "batch=1,2,4",
        "--json",
    ]);
    let touched: Vec<f64> = (0..3)
        .map(|i| {
            v[i]["speed"]["decode"]["experts_touched_per_layer"]
                .as_f64()
                .unwrap()
        })
        .collect();
    assert_eq!(touched, [2.0, 3.5, 5.468_75]);
    assert_eq!(v[2]["swept"]["batch"], 4);
    // A sweep past a position table is counted as asked, with `--seq-len`'s note there only.
    let v = json(&["memory", "gpt2", "--sweep", "seq=512,2k", "--json"]);
    assert_eq!(v[1]["seq_len"], 2048);
    assert!(
        !v[0]["assumptions"]
            .to_string()
            .contains("`n_positions` = 1024")
    );
    assert!(
        v[1]["assumptions"]
            .to_string()
            .contains("`--seq-len 2048` is longer than `gpt2` can take (`n_positions` = 1024)"),
        "{}",
        v[1]["assumptions"]
    );
    // Bad sweeps.
    for (arg, needle) in [
        ("dtype=bf16,,q8_0", "an empty value"),
        ("dtype=q9_k", "unknown weight format `q9_k`"),
        ("gpu=tpu9", "unknown GPU `tpu9`"),
        ("width=1", "`--sweep width=1` is not understood"),
    ] {
        let r = llmsize(&["memory", "gpt2", "--sweep", arg]);
        assert_eq!(r.code, 2, "{arg}");
        assert!(r.stderr.contains(needle), "{arg}: {}", r.stderr);
    }
}

#[test]
fn a_dtype_sweep_of_weight_files_is_refused() {
    // Weights measured from files have one format, as stored.
    let dir = tempfile::tempdir().unwrap();
    let header = fs::read(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/gguf/tiny-llama-consistent.gguf.header"),
    )
    .unwrap();
    let p = dir.path().join("tiny.gguf");
    let mut f = fs::File::create(&p).unwrap();
    f.write_all(&header).unwrap();
    f.set_len(1_099_584).unwrap();
    let r: Run = llmsize(&["memory", p.to_str().unwrap(), "--sweep", "dtype=bf16,q8_0"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("is measured from its weight files as stored"),
        "{}",
        r.stderr
    );
}
