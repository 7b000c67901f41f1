//! `llmsize flops` and `llmsize train` as a new user sees them in an 80-column terminal, and
//! as the Markdown and CSV exporters write them: no line over 80 columns under `COLUMNS=80`
//! with no exact number lost, `--wide` one line per row, Markdown with the table's columns,
//! CSV with the plain numbers the JSON gives.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    missing_docs,
    reason = "a test fails loudly on what it did not expect"
)]

mod common;

use common::{exact_numbers, fits_80_keeping_every_number, llmsize};
use serde_json::Value;

/// The README's `flops` and `train` examples.
const EXAMPLES: [&[&str]; 10] = [
    &[
        "flops",
        "Llama-2-7b-hf",
        "--seq-len",
        "2048",
        "--attention",
        "full",
        "--explain",
    ],
    &[
        "flops",
        "Mixtral-8x7B-v0.1",
        "--gpu",
        "h100",
        "--batch",
        "8",
    ],
    &[
        "flops",
        "Meta-Llama-3-8B",
        "--gpu",
        "h100",
        "--price",
        "2.5",
    ],
    &["flops", "gpt2", "llama-2-7b", "Mixtral-8x7B-v0.1"],
    &[
        "flops",
        "llama-2-7b",
        "--sweep",
        "seq=1k,8k,32k",
        "--gpu",
        "h100",
    ],
    &["train", "Meta-Llama-3-8B", "--gpu", "rtx4090"],
    &[
        "train",
        "Meta-Llama-3-8B",
        "--qlora",
        "--lora-rank",
        "16",
        "--checkpointing",
        "--gpu",
        "rtx4090",
    ],
    &[
        "train",
        "llama-2-7b",
        "--gpu",
        "h100x8",
        "--zero",
        "3",
        "--max-batch",
    ],
    &[
        "train",
        "Llama-3.1-405B",
        "--gpu",
        "h100x144",
        "--tp",
        "8",
        "--pp",
        "9",
        "--sp",
        "--precision",
        "mixed-fp32-grads",
    ],
    &[
        "train",
        "Meta-Llama-3-8B",
        "--gpu",
        "h100x8",
        "--tokens",
        "15T",
        "--price",
        "2.5",
        "--explain",
    ],
];

#[test]
fn every_example_fits_80_columns_and_keeps_every_exact_number() {
    for args in EXAMPLES {
        fits_80_keeping_every_number(args);
        assert!(!exact_numbers(&llmsize(args).stdout).is_empty(), "{args:?}");
    }
}

#[test]
fn wide_rows_are_one_line() {
    // The forward table's rows each hold the component, its exact FLOPs and its share on one
    // line (Llama-2-7b at 2,048 tokens, causal: 2·b·s·W_attn = 2·1·2048·2,147,483,648 =
    // 8,796,093,022,208 of 28,162,637,430,784 = 31.23%).
    let r = llmsize(&["flops", "llama-2-7b", "--explain"]);
    let row = r
        .stdout
        .lines()
        .find(|l| l.starts_with("attention_projections"))
        .unwrap();
    assert!(
        row.contains("8,796,093,022,208")
            && row.contains("31.23%")
            && row.contains("2·b·s·W_attn = 2·1·2048·2147483648"),
        "{row}"
    );
}

/// One CSV record (RFC 4180: quoted fields, doubled quotes; no newline inside a field,
/// which the exporter never writes for these tables).
fn csv_fields(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        let field = fields.last_mut().unwrap();
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => fields.push(String::new()),
            _ => field.push(c),
        }
    }
    assert!(!quoted, "unterminated quote: {line}");
    fields
}

/// CSV rows as maps from the header's names; every row as long as the header.
fn csv_rows(text: &str) -> Vec<std::collections::HashMap<String, String>> {
    let mut lines = text.lines();
    let header = csv_fields(lines.next().unwrap());
    lines
        .map(|l| {
            let fields = csv_fields(l);
            assert_eq!(fields.len(), header.len(), "{l}");
            header.iter().cloned().zip(fields).collect()
        })
        .collect()
}

fn json(args: &[&str]) -> Value {
    let mut a = args.to_vec();
    a.push("--json");
    let r = llmsize(&a);
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {}", r.stdout))
}

#[test]
fn flops_csv_has_the_json_numbers_one_row_per_item() {
    let j = json(&["flops", "llama-2-7b", "--gpu", "h100", "--price", "2.5"]);
    let r = llmsize(&[
        "flops",
        "llama-2-7b",
        "--gpu",
        "h100",
        "--price",
        "2.5",
        "--format",
        "csv",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let rows = csv_rows(&r.stdout);
    let find = |section: &str, key: &str, value: &str| {
        rows.iter()
            .find(|row| row["section"] == section && row[key] == value)
            .unwrap_or_else(|| panic!("no {section} row {value}:\n{}", r.stdout))
    };
    // The forward total at the default 2,048 tokens: the exact integer of `--json`.
    let forward = j["forward_flops"].as_u64().unwrap();
    assert_eq!(forward, 28_162_637_430_784);
    assert_eq!(
        find("forward", "component", "forward total")["flops"],
        forward.to_string()
    );
    // Every component of both passes, as a plain integer.
    for (section, pass) in [("forward", "forward"), ("per_token", "per_token")] {
        for c in j[pass].as_array().unwrap() {
            let flops = c["flops"].as_u64().unwrap();
            if flops > 0 {
                let row = find(section, "component", c["key"].as_str().unwrap());
                assert_eq!(row["flops"], flops.to_string(), "{section}");
                // The share is a plain fraction.
                let share: f64 = row["share"].parse().unwrap();
                assert!(share > 0.0 && share < 1.0, "{share}");
            }
        }
    }
    // The speed: plain seconds, tokens/s and dollars, the same as the JSON's.
    let speed = &j["speed"];
    let decode = find("speed", "step", "decode step");
    let close = |csv: &str, json: &Value| {
        let a: f64 = csv.parse().unwrap();
        let b = json.as_f64().unwrap();
        assert!((a - b).abs() <= 1e-12 * b.abs(), "{a} vs {b}");
    };
    close(&decode["seconds"], &speed["decode"]["seconds"]);
    close(
        &decode["tokens_per_second"],
        &speed["decode"]["tokens_per_second"],
    );
    close(
        &decode["usd_per_million_tokens"],
        &speed["decode"]["cost_per_million_tokens"],
    );
    assert_eq!(
        decode["bytes"],
        speed["decode"]["bytes"].as_u64().unwrap().to_string()
    );
    // One row per batch of the decode-by-batch table, bytes as integers.
    let by: Vec<_> = rows
        .iter()
        .filter(|row| row["section"] == "decode_by_batch")
        .collect();
    let json_by = speed["decode_by_batch"].as_array().unwrap();
    assert_eq!(by.len(), json_by.len());
    for (row, b) in by.iter().zip(json_by) {
        assert_eq!(row["batch"], b["batch"].as_u64().unwrap().to_string());
        assert_eq!(row["bytes"], b["bytes"].as_u64().unwrap().to_string());
        assert!(row["fits"] == "yes" || row["fits"] == "no", "{row:?}");
    }
    // Prose is not data.
    assert!(!r.stdout.contains("why they differ"), "{}", r.stdout);
}

#[test]
fn flops_markdown_has_the_tables_columns() {
    let r = llmsize(&[
        "flops",
        "llama-2-7b",
        "--gpu",
        "h100",
        "--format",
        "markdown",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let md = &r.stdout;
    let text = llmsize(&["flops", "llama-2-7b", "--gpu", "h100"]).stdout;
    // Every table's header, in the same columns as the terminal's header row.
    for columns in [
        &["component", "FLOPs", "share"][..],
        &["estimate", "FLOPs", "against the exact count"],
        &[
            "step",
            "time",
            "tokens/s",
            "$/M tokens",
            "bytes moved",
            "bound",
            "what",
        ],
        &[
            "batch",
            "bytes read",
            "bound",
            "step",
            "tokens/s",
            "per sequence",
            "$/M tokens",
            "fits",
        ],
    ] {
        let row = format!("| {} |", columns.join(" | "));
        assert!(md.contains(&row), "{row}\n{md}");
        let header = text
            .lines()
            .find(|l| l.split("  ").find(|w| !w.is_empty()) == Some(columns[0]))
            .unwrap_or_else(|| panic!("no {columns:?} header:\n{text}"));
        let words: Vec<&str> = header
            .split("  ")
            .map(str::trim)
            .filter(|w| !w.is_empty())
            .collect();
        assert_eq!(words, columns, "{header}");
    }
    // The forward total with its exact count from the JSON.
    let forward = json(&["flops", "llama-2-7b"])["forward_flops"]
        .as_u64()
        .unwrap();
    assert!(
        md.contains(&format!(
            "| forward total | {} | 28.2 TFLOP |",
            llmsize_core::units::thousands(forward)
        )),
        "{md}"
    );
}

#[test]
fn train_csv_and_markdown_have_the_bytes_per_gpu() {
    let args = ["train", "llama-2-7b", "--gpu", "h100x8", "--zero", "3"];
    let j = json(&args);
    let per_gpu = j["per_gpu_bytes"].as_u64().unwrap();
    // ZeRO-3 over 8: weights, gradients and Adam states sharded 8 ways, the activations
    // whole (pinned in the train tests; here the exporters carry it).
    assert_eq!(per_gpu, 20_613_747_216);
    let mut csv_args = args.to_vec();
    csv_args.extend(["--format", "csv"]);
    let r = llmsize(&csv_args);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let rows = csv_rows(&r.stdout);
    let total = rows
        .iter()
        .find(|row| row["section"] == "per_gpu" && row["item"] == "total per GPU")
        .unwrap_or_else(|| panic!("{}", r.stdout));
    assert_eq!(total["bytes"], per_gpu.to_string());
    // Each per-GPU term is a row with its plain bytes, and they sum to the total.
    let terms: Vec<_> = j["per_gpu"].as_array().unwrap().iter().collect();
    let mut sum = 0u64;
    for t in &terms {
        let key = t["key"].as_str().unwrap();
        let row = rows
            .iter()
            .find(|row| row["section"] == "per_gpu" && row["item"] == key)
            .unwrap_or_else(|| panic!("no {key}: {}", r.stdout));
        let v = t["value"].as_u64().unwrap();
        assert_eq!(row["bytes"], v.to_string(), "{key}");
        sum += v;
    }
    assert_eq!(sum, per_gpu);
    // Suggestions and the compute are rows too, with plain numbers.
    let step = rows
        .iter()
        .find(|row| row["section"] == "compute" && row["item"] == "train step")
        .unwrap_or_else(|| panic!("{}", r.stdout));
    assert_eq!(
        step["flops"],
        j["train_step_flops"].as_u64().unwrap().to_string()
    );

    let mut md_args = args.to_vec();
    md_args.extend(["--format", "markdown"]);
    let md = llmsize(&md_args).stdout;
    assert!(md.contains("| per GPU | bytes | size |"), "{md}");
    assert!(
        md.contains(&format!(
            "| total per GPU | {} | 19.20 GiB |",
            llmsize_core::units::thousands(per_gpu)
        )),
        "{md}"
    );
}

#[test]
fn the_fits_verdict_is_coloured_only_on_request() {
    // No tty in tests: no colour codes, whatever the verdict. The verdict compares the step's
    // peak: weights 16,060,522,496 + AdamW states on the GPU 32,121,044,992 + the backward's
    // peak 30,358,405,652 (the largest phase) = 78,539,973,140 B = 73.15 GiB, 49.16 GiB over.
    let r = llmsize(&["train", "Meta-Llama-3-8B", "--gpu", "rtx4090"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(!r.stdout.contains('\u{1b}'), "{}", r.stdout);
    assert!(
        r.stdout
            .contains("RTX-4090-24GB: 23.99 GiB per GPU → does NOT fit, 49.16 GiB short"),
        "{}",
        r.stdout
    );
}
