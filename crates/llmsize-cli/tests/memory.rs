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
            // Past limits::MAX_BATCH (2^24): refused before any arithmetic.
            vec![
                "`--batch 18446744073709551615` is out of range: llmsize answers for at most 16,777,216 sequences",
            ],
        ),
        (
            // Within the bounds (2^24 sequences of 2^32 tokens) the KV cache, 2^56 tokens of
            // 512 KiB each, is past 64 bits: an overflow naming its formula.
            vec![
                "memory",
                "Llama-2-7b-hf",
                "--batch",
                "16777216",
                "--seq-len",
                "4294967296",
            ],
            vec!["overflows 64 bits"],
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

// ---------------------------------------------------------------------------------------
// Exporters: Markdown has the table's columns, CSV one row per line item with plain numbers.

/// CSV records (quoted fields with commas and doubled quotes), enough for llmsize's output.
fn csv_records(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .map(|line| {
            let mut fields = vec![String::new()];
            let mut quoted = false;
            let mut chars = line.chars().peekable();
            while let Some(c) = chars.next() {
                match c {
                    '"' if quoted && chars.peek() == Some(&'"') => {
                        chars.next();
                        fields.last_mut().unwrap().push('"');
                    }
                    '"' => quoted = !quoted,
                    ',' if !quoted => fields.push(String::new()),
                    c => fields.last_mut().unwrap().push(c),
                }
            }
            fields
        })
        .collect()
}

/// A command's CSV: its header and its rows.
struct Csv {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Csv {
    fn of(args: &[&str]) -> Self {
        let mut full = args.to_vec();
        full.extend(["--format", "csv"]);
        let r = llmsize(&full);
        assert!(r.code == 0 || r.code == 1, "{}", r.stderr);
        let mut records = csv_records(&r.stdout);
        let header = records.remove(0);
        for row in &records {
            assert_eq!(row.len(), header.len(), "{row:?} against {header:?}");
        }
        Csv {
            header,
            rows: records,
        }
    }

    fn col(&self, name: &str) -> usize {
        self.header
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("no column {name} in {:?}", self.header))
    }

    /// The rows of `section`.
    fn section(&self, section: &str) -> Vec<&Vec<String>> {
        self.rows.iter().filter(|r| r[0] == section).collect()
    }

    /// `column` of the row of `section` whose `key` column is `value`, as an integer.
    fn int(&self, section: &str, key: &str, value: &str, column: &str) -> u64 {
        let (k, c) = (self.col(key), self.col(column));
        let row = self
            .section(section)
            .into_iter()
            .find(|r| r[k] == value)
            .unwrap_or_else(|| panic!("no {section} row with {key} = {value}"));
        row[c]
            .parse()
            .unwrap_or_else(|_| panic!("{column} of {value} is {:?}", row[c]))
    }
}

#[test]
fn csv_memory_is_one_row_per_line_item_in_plain_bytes() {
    let csv = Csv::of(&["memory", "llama-2-7b"]);
    assert_eq!(csv.header, ["section", "item", "bytes", "GiB", "what"]);
    let items: Vec<&str> = csv
        .section("memory")
        .iter()
        .map(|r| r[1].as_str())
        .collect();
    assert_eq!(
        items,
        [
            "weights",
            "16-bit",
            "KV cache",
            "32 × decoder",
            "activations",
            "runtime overhead",
            "total"
        ]
    );
    // KV cache at 4,096 tokens in bf16: K and V · 32 layers · 4,096 wide · 4,096 tokens · 2 B.
    assert_eq!(
        csv.int("memory", "item", "KV cache", "bytes"),
        2 * 32 * 4096 * 4096 * 2
    );
    assert_eq!(
        csv.int("memory", "item", "KV cache", "bytes"),
        2_147_483_648
    );
    // 6,738,415,616 parameters · 2 B.
    let weights = csv.int("memory", "item", "weights", "bytes");
    assert_eq!(weights, 6_738_415_616 * 2);
    // The total is the sum of the top-level items, in plain bytes.
    let sum: u64 = ["weights", "KV cache", "activations", "runtime overhead"]
        .iter()
        .map(|i| csv.int("memory", "item", i, "bytes"))
        .sum();
    assert_eq!(csv.int("memory", "item", "total", "bytes"), sum);
    // The GiB column is the same bytes in GiB.
    let row = &csv.section("memory")[2];
    assert_eq!(row[csv.col("GiB")], "2");
}

#[test]
fn csv_memory_sweep_placement_vllm_and_comparison() {
    // A sweep: the swept length and the per-GPU KV cache as plain numbers, one row a point.
    let csv = Csv::of(&[
        "memory",
        "llama-2-7b",
        "--sweep",
        "seq=1k,8k",
        "--gpu",
        "rtx4090",
    ]);
    assert_eq!(csv.section("sweep").len(), 2);
    for tokens in [1024, 8192] {
        assert_eq!(
            csv.int(
                "sweep",
                "seq_len",
                &tokens.to_string(),
                "kv_cache_per_gpu_bytes"
            ),
            2 * 32 * 4096 * tokens * 2
        );
    }

    // Placement over three GPUs: the devices' totals add up to the total line item.
    let csv = Csv::of(&["memory", "Meta-Llama-3-8B", "--gpu", "rtx4090x3"]);
    let devices: u64 = ["GPU 0", "GPU 1", "GPU 2"]
        .iter()
        .map(|d| csv.int("placement", "device", d, "total_bytes"))
        .sum();
    assert_eq!(devices, csv.int("memory", "item", "total", "bytes"));
    assert_eq!(devices, 19_466_810_368);

    // vLLM's pool: the tokens it holds are its blocks times the block size.
    let csv = Csv::of(&[
        "memory",
        "Meta-Llama-3-8B",
        "--runtime",
        "vllm",
        "--gpu",
        "a100",
    ]);
    let blocks = csv.int("vllm", "setting", "num_blocks", "value");
    let block = csv.int("vllm", "setting", "block_size", "value");
    assert_eq!(block, 16);
    assert_eq!(
        csv.int("vllm", "setting", "KV cache", "value"),
        blocks * block
    );

    // Side by side: one column per model, plain numbers in each.
    let csv = Csv::of(&["memory", "gpt2", "llama-2-7b"]);
    assert_eq!(csv.header, ["section", "item", "gpt2", "Llama-2-7b-hf"]);
    assert_eq!(
        csv.int("comparison", "item", "weights", "gpt2"),
        124_439_808 * 2
    );
    assert_eq!(
        csv.int("comparison", "item", "parameters", "Llama-2-7b-hf"),
        6_738_415_616
    );
}

#[test]
fn markdown_memory_has_the_tables_columns() {
    let table = llmsize(&["memory", "llama-2-7b", "--wide"]);
    let md = llmsize(&["memory", "llama-2-7b", "--format", "markdown"]);
    assert_eq!(md.code, 0, "{}", md.stderr);
    // The terminal's header row, column by column, is Markdown's.
    let header = table
        .stdout
        .lines()
        .find(|l| l.starts_with("item "))
        .unwrap();
    let columns: Vec<&str> = header.split("  ").filter(|c| !c.is_empty()).collect();
    let columns: Vec<&str> = columns.iter().map(|c| c.trim()).collect();
    assert_eq!(columns, ["item", "bytes", "size", "what"]);
    assert!(
        md.stdout.contains(&format!(
            "| {} |\n| :-- | --: | --: | :-- |\n",
            columns.join(" | ")
        )),
        "{}",
        md.stdout
    );
    // Every line item is a row with its exact bytes and its size.
    assert!(
        md.stdout.contains(
            "| KV cache | 2,147,483,648 | 2.00 GiB (2.15 GB) | 524,288 B per token of context (bf16), all layers |"
        ),
        "{}",
        md.stdout
    );
    assert!(
        md.stdout
            .contains("| total | 16,498,955,264 | 15.37 GiB (16.50 GB) |  |"),
        "{}",
        md.stdout
    );
    assert!(
        md.stdout.starts_with(
            "### Llama-2-7b-hf: memory to serve in bf16 with 4,096 tokens × batch 1, KV cache bf16\n"
        ),
        "{}",
        md.stdout
    );
    assert!(md.stdout.contains("**assumptions**"), "{}", md.stdout);
    // No terminal layout leaks into Markdown.
    assert!(!md.stdout.contains("  16-bit"), "{}", md.stdout);
}

#[test]
fn csv_inspect_and_audit_count_in_plain_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let header = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/gguf/tiny-llama-consistent.gguf.header"),
    )
    .unwrap();
    let p = dir.path().join("tiny.gguf");
    std::fs::write(&p, &header).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&p)
        .unwrap()
        .set_len(1_099_584)
        .unwrap();
    let f = p.to_str().unwrap();
    let csv = Csv::of(&["inspect", f]);
    // The tiny Llama GGUF: 1,344,768 parameters in 1,094,144 bytes (its JSON says the same).
    assert_eq!(
        csv.int("components", "component", "total", "parameters"),
        1_344_768
    );
    assert_eq!(
        csv.int("components", "component", "total", "bytes"),
        1_094_144
    );
    let by_dtype: u64 = csv
        .section("dtypes")
        .iter()
        .filter(|r| r[csv.col("dtype")] != "all")
        .map(|r| r[csv.col("parameters")].parse::<u64>().unwrap())
        .sum();
    assert_eq!(by_dtype, 1_344_768);
    assert_eq!(csv.section("files").len(), 1);
    let csv = Csv::of(&["audit", f]);
    assert_eq!(csv.int("audit", "component", "total", "config"), 1_344_768);
    assert_eq!(csv.int("audit", "component", "total", "difference"), 0);
}
