//! `llmsize memory`, `flops` and `gpus` as users run them: contracts, golden numbers, bad
//! input and exit codes.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    missing_docs,
    reason = "a test fails loudly on what it did not expect"
)]

mod common;

use common::llmsize;

use serde_json::Value;

fn json(args: &[&str]) -> (i32, Value) {
    let r = llmsize(args);
    assert!(r.code == 0 || r.code == 1, "{args:?}: {}", r.stderr);
    (r.code, serde_json::from_str(&r.stdout).unwrap())
}

#[test]
fn contract_kv_cache_bytes() {
    // Ground truth (transformers' own cache after a prefill, bf16, batch 1).
    for (model, seq, want) in [
        ("Llama-2-7b-hf", "1024", 536_870_912u64),
        ("Mistral-7B-v0.1", "8192", 536_739_840), // sliding window: 4095 tokens per layer
        ("gpt-oss-20b", "1024", 28_286_976),
        ("DeepSeek-V3", "1024", 71_958_528),
    ] {
        let (_, v) = json(&[
            "memory",
            model,
            "--seq-len",
            seq,
            "--batch",
            "1",
            "--kv-dtype",
            "bf16",
            "--json",
        ]);
        assert_eq!(v["kv_cache_bytes"], want, "{model}");
    }
}

#[test]
fn contract_forward_flops() {
    // torch FlopCounterMode, full attention (ground truth).
    let (_, v) = json(&[
        "flops",
        "gpt2",
        "--seq-len",
        "128",
        "--attention",
        "full",
        "--json",
    ]);
    assert_eq!(v["forward_flops"], 32_228_179_968u64);
    let (_, v) = json(&[
        "flops",
        "Llama-2-7b-hf",
        "--seq-len",
        "2048",
        "--attention",
        "full",
        "--json",
    ]);
    assert_eq!(v["forward_flops"], 29_261_612_187_648u64);
    // Causal counts the triangle: scores and values shrink from s² to s(s+1)/2 per layer:
    // 8,589,934,592·(2048·2049/2)/2048²… at 2048: full 2·32·2·2048²·4096 = 2,199,023,255,552,
    // causal 2·32·2·(2048·2049/2)·4096 = 1,100,048,498,688.
    let (_, c) = json(&[
        "flops",
        "Llama-2-7b-hf",
        "--seq-len",
        "2048",
        "--attention",
        "causal",
        "--json",
    ]);
    let full = 29_261_612_187_648u64;
    assert_eq!(
        c["forward_flops"],
        full - 2_199_023_255_552 + 1_100_048_498_688
    );
}

#[test]
fn cache_layout_transformers_or_runtime() {
    // Falcon-40B (new decoder layout, 8 KV heads of 128 query heads, d_h 64, 60 layers):
    // transformers broadcasts K and V to all 128 heads before caching (the oracle measured
    // 2,013,265,920 B at 1024 tokens = 60·1024·2·128·64·2); a runtime caches 8 heads.
    let cfg = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/holdout/configs/falcon-40b.json"
    );
    let (_, hf) = json(&["memory", cfg, "--seq-len", "1024", "--json"]);
    assert_eq!(hf["kv_cache_bytes"], 2_013_265_920u64);
    let (_, rt) = json(&[
        "memory",
        cfg,
        "--seq-len",
        "1024",
        "--cache",
        "runtime",
        "--json",
    ]);
    assert_eq!(rt["kv_cache_bytes"], 60 * 1024 * 2 * 8 * 64 * 2u64);
    // Mistral-7B-v0.1 past its 4096 window: transformers keeps 4095 tokens, a runtime 4096.
    let (_, hf) = json(&["memory", "Mistral-7B-v0.1", "--seq-len", "8192", "--json"]);
    let (_, rt) = json(&[
        "memory",
        "Mistral-7B-v0.1",
        "--seq-len",
        "8192",
        "--cache",
        "runtime",
        "--json",
    ]);
    assert_eq!(hf["kv_cache_bytes"], 32 * 4095 * 4096u64);
    assert_eq!(rt["kv_cache_bytes"], 32 * 4096 * 4096u64);
}

#[test]
fn golden_kv_bytes_per_token() {
    // FORMULAS.md §5: Llama-2-7B 512 KiB, Llama-3-8B 128 KiB (bf16); DeepSeek-V3 latent 70,272 B
    // = 61·(512+64)·2, expanded 61·128·(192+128)·2 = 4,997,120 B.
    let per_token = |model: &str, extra: &[&str]| {
        let mut args = vec!["memory", model, "--seq-len", "1", "--json"];
        args.extend_from_slice(extra);
        json(&args).1["kv_cache_bytes_per_token"].as_u64().unwrap()
    };
    assert_eq!(per_token("Llama-2-7b-hf", &[]), 512 * 1024);
    assert_eq!(per_token("Meta-Llama-3-8B", &[]), 128 * 1024);
    assert_eq!(per_token("DeepSeek-V3", &[]), 70_272);
    assert_eq!(
        per_token("DeepSeek-V3", &["--mla-cache", "expanded"]),
        4_997_120
    );
    // fp8 halves it; q8_0 is 34 bytes per 32 elements.
    assert_eq!(
        per_token("Meta-Llama-3-8B", &["--kv-dtype", "fp8"]),
        64 * 1024
    );
    assert_eq!(
        per_token("Meta-Llama-3-8B", &["--kv-dtype", "q8_0"]),
        128 * 1024 / 2 / 32 * 34
    );
}

#[test]
fn gguf_sizes_match_llama_cpp_for_llama_3_8b() {
    // llama.cpp tools/quantize/quantize.cpp QUANT_OPTIONS, Llama-3-8B file sizes in GiB.
    for (preset, gib) in [
        ("q2_k", 2.96),
        ("q3_k_s", 3.41),
        ("q3_k_m", 3.74),
        ("q3_k_l", 4.03),
        ("q4_0", 4.34),
        ("q4_1", 4.78),
        ("q4_k_s", 4.37),
        ("q4_k_m", 4.58),
        ("q5_0", 5.21),
        ("q5_1", 5.65),
        ("q5_k_s", 5.21),
        ("q5_k_m", 5.33),
        ("q6_k", 6.14),
        ("q8_0", 7.96),
    ] {
        let (_, v) = json(&["memory", "Meta-Llama-3-8B", "--dtype", preset, "--json"]);
        let got = v["weights_bytes"].as_u64().unwrap() as f64 / f64::from(1u32 << 30);
        let err = (got - gib) / gib;
        assert!(
            err.abs() < 0.01,
            "{preset}: {got:.3} GiB vs {gib} ({:+.2}%)",
            err * 100.0
        );
    }
}

#[test]
fn fits_exit_status_and_max_context() {
    let small = llmsize(&[
        "memory",
        "Meta-Llama-3-8B",
        "--dtype",
        "q4_k_m",
        "--gpu",
        "rtx4090",
    ]);
    assert_eq!(small.code, 0, "{}", small.stderr);
    assert!(small.stdout.contains("fits:"));
    let big = llmsize(&["memory", "DeepSeek-V3", "--gpu", "rtx4090"]);
    assert_eq!(big.code, 1, "{}", big.stderr);
    assert!(big.stdout.contains("does not fit"));
    // The longest context: it fits, one more token does not (batch 8 makes memory the bound).
    let (_, v) = json(&[
        "memory",
        "Meta-Llama-3-8B",
        "--gpu",
        "rtx4090",
        "--batch",
        "8",
        "--max-context",
        "--json",
    ]);
    let n = v["max_context"].as_u64().unwrap();
    assert_eq!(v["max_context_bound"], "memory");
    assert!(n > 1024 && n < 8192, "{n}");
    let at = |s: u64| {
        json(&[
            "memory",
            "Meta-Llama-3-8B",
            "--gpu",
            "rtx4090",
            "--batch",
            "8",
            "--seq-len",
            &s.to_string(),
            "--json",
        ])
        .0
    };
    assert_eq!(at(n), 0);
    assert_eq!(at(n + 1), 1);
    // Capped by what the model can take: GPT-2's learned table has 1,024 rows.
    let (_, v) = json(&["memory", "gpt2", "--gpu", "h100", "--max-context", "--json"]);
    assert_eq!(v["max_context"], 1024);
    assert_eq!(v["max_context_bound"], "position table");
    // Past the table: counted as asked, and a note names the config field (the model has no
    // position for those tokens). Without `--seq-len`, the default 4096 is capped at the table.
    let (_, v) = json(&["memory", "gpt2", "--seq-len", "2k", "--json"]);
    assert_eq!(v["seq_len"], 2048);
    assert!(
        v["assumptions"].to_string().contains(
            "`--seq-len 2048` is longer than `gpt2` can take (`n_positions` = 1024): counted as asked"
        ),
        "{}",
        v["assumptions"]
    );
    let (_, v) = json(&["memory", "gpt2", "--json"]);
    assert_eq!(v["seq_len"], 1024);
    assert!(
        v["assumptions"]
            .to_string()
            .contains("--seq-len defaults to 4096 tokens; capped at 1024 positions"),
        "{}",
        v["assumptions"]
    );
}

#[test]
fn tensor_parallel_shards_weights_and_kv_heads() {
    // Llama-3-8B has 8 KV heads: tp 8 → 1 head per GPU; tp 16 would replicate.
    let (_, one) = json(&["memory", "Meta-Llama-3-8B", "--seq-len", "8k", "--json"]);
    let (_, eight) = json(&[
        "memory",
        "Meta-Llama-3-8B",
        "--seq-len",
        "8k",
        "--gpu",
        "h100x8",
        "--json",
    ]);
    assert_eq!(
        eight["kv_cache_bytes_per_gpu"],
        one["kv_cache_bytes"].as_u64().unwrap() / 8
    );
    assert_eq!(
        eight["weights_bytes_per_gpu"],
        one["weights_bytes"].as_u64().unwrap().div_ceil(8)
    );
    let (_, tp16) = json(&[
        "memory",
        "Meta-Llama-3-8B",
        "--seq-len",
        "8k",
        "--tp",
        "16",
        "--json",
    ]);
    assert_eq!(
        tp16["kv_cache_bytes_per_gpu"],
        one["kv_cache_bytes"].as_u64().unwrap() / 8
    );
}

#[test]
fn sweep_tables() {
    let r = llmsize(&[
        "memory",
        "Meta-Llama-3-8B",
        "--sweep",
        "seq=1k,8k,128k",
        "--gpu",
        "rtx4090",
    ]);
    assert_eq!(r.code, 1, "128k does not fit a 4090 in bf16: {}", r.stderr);
    assert!(r.stdout.contains("131,072"), "{}", r.stdout);
    let (_, v) = json(&[
        "memory",
        "Meta-Llama-3-8B",
        "--sweep",
        "batch=1,8",
        "--json",
    ]);
    let list = v.as_array().unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(
        list[1]["kv_cache_bytes"].as_u64().unwrap(),
        8 * list[0]["kv_cache_bytes"].as_u64().unwrap()
    );
}

#[test]
fn bad_input_lists_the_valid_choices() {
    for (args, needles) in [
        (
            vec!["memory", "gpt2", "--gpu", "tpu9"],
            vec!["unknown GPU `tpu9`", "H100-SXM-80GB"],
        ),
        (
            vec!["memory", "gpt2", "--dtype", "q9_k"],
            vec!["unknown weight format `q9_k`", "q4_k_m", "gptq-4bit"],
        ),
        (
            vec!["memory", "gpt2", "--kv-dtype", "int3"],
            vec!["unknown KV cache type `int3`", "q8_0"],
        ),
        (vec!["memory", "gpt2", "--seq-len", "0"], vec!["--seq-len"]),
        (vec!["memory", "gpt2", "--seq-len", "-5"], vec!["--seq-len"]),
        (vec!["memory", "gpt2", "--batch", "0"], vec!["--batch"]),
        (
            vec![
                "memory",
                "Llama-2-7b-hf",
                "--batch",
                "18446744073709551615",
                "--seq-len",
                "1m",
            ],
            vec!["overflows"],
        ),
        (
            vec!["memory", "gpt2", "--gpu", "h100x2", "--tp", "4"],
            vec!["more than the 2 GPU(s)"],
        ),
        (
            vec!["memory", "gpt2", "--sweep", "width=1,2"],
            vec!["`--sweep width=1,2`"],
        ),
        (vec!["flops", "gpt2", "--seq-len", "0"], vec!["--seq-len"]),
        (
            vec!["flops", "gpt2", "--mfu", "1.5"],
            vec!["`--mfu 1.5` is out of range"],
        ),
        (
            vec!["flops", "gpt2", "--gpu", "nope"],
            vec!["unknown GPU `nope`"],
        ),
    ] {
        let r = llmsize(&args);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(!r.stderr.contains("panicked"), "{args:?}: {}", r.stderr);
        for n in needles {
            assert!(
                r.stderr.contains(n),
                "{args:?}: missing {n:?} in {}",
                r.stderr
            );
        }
    }
}

#[test]
fn speed_on_a_gpu() {
    let (_, v) = json(&["flops", "Llama-2-7b-hf", "--gpu", "h100", "--json"]);
    let s = &v["speed"];
    assert_eq!(s["decode_bound"], "memory");
    // Decode at batch 1 reads every bf16 weight once: ≥ 2·6.74e9 B; at 3.35 TB/s × 0.8 that is
    // ≥ 5.03 ms per token, so fewer than 200 tokens/s.
    assert!(s["decode_bytes_per_step"].as_u64().unwrap() >= 2 * 6_738_415_616);
    let tps = s["decode_tokens_per_second"].as_f64().unwrap();
    assert!(tps > 150.0 && tps < 200.0, "{tps}");
}

#[test]
fn snapshots() {
    for (name, args) in [
        (
            "memory_llama3_8b_q4_k_m_4090",
            vec![
                "memory",
                "Meta-Llama-3-8B",
                "--dtype",
                "q4_k_m",
                "--seq-len",
                "8k",
                "--gpu",
                "rtx4090",
            ],
        ),
        (
            "memory_deepseek_v3_explain",
            vec![
                "memory",
                "DeepSeek-V3",
                "--dtype",
                "fp8-block",
                "--seq-len",
                "32k",
                "--gpu",
                "h200x8",
                "--explain",
            ],
        ),
        (
            "flops_llama2_7b_h100",
            vec!["flops", "Llama-2-7b-hf", "--gpu", "h100", "--explain"],
        ),
        (
            "flops_mixtral",
            vec!["flops", "Mixtral-8x7B-v0.1", "--seq-len", "4k"],
        ),
    ] {
        let r = llmsize(&args);
        assert!(r.code == 0 || r.code == 1, "{name}: {}", r.stderr);
        insta::assert_snapshot!(name, r.stdout);
    }
}
