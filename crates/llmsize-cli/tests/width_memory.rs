//! `memory`, `inspect` and `audit` in an 80-column terminal: every line fits (`COLUMNS=80`),
//! and `--wide` keeps one line per row.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    missing_docs,
    reason = "a test fails loudly on what it did not expect"
)]

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use common::{Run, llmsize_env};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn at_80(args: &[&str]) -> Run {
    llmsize_env(args, &[("COLUMNS", "80"), ("NO_COLOR", "1")])
}

/// Every line of stdout is at most 80 characters (not bytes: `×`, `·`, `–` are one each).
fn assert_fits(args: &[&str], r: &Run) {
    assert!(r.code == 0 || r.code == 1, "{args:?}: {}", r.stderr);
    assert!(!r.stdout.is_empty(), "{args:?} printed nothing");
    for line in r.stdout.lines() {
        assert!(
            line.chars().count() <= 80,
            "{args:?}: a line of {} columns:\n{line}\n\n{}",
            line.chars().count(),
            r.stdout
        );
    }
}

/// A header-only weight file padded with zeros (sparse) to its real length.
fn padded(path: &Path, header: &[u8], len: u64) {
    let f = fs::File::create(path).unwrap();
    std::io::Write::write_all(&mut &f, header).unwrap();
    f.set_len(len).unwrap();
}

/// all-MiniLM-L6-v2's real header and config; `layers` overrides the config's layer count
/// (7 makes the audit disagree).
fn minilm(dir: &Path, layers: Option<u64>) {
    let fx = root().join("crates/llmsize-weights/fixtures/all-minilm-l6-v2");
    let mut config: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(fx.join("config.json")).unwrap()).unwrap();
    if let Some(l) = layers {
        config["num_hidden_layers"] = serde_json::json!(l);
    }
    fs::write(dir.join("config.json"), config.to_string()).unwrap();
    let header = fs::read(fx.join("model.safetensors.header")).unwrap();
    padded(&dir.join("model.safetensors"), &header, 90_868_376);
}

#[test]
fn memory_tables_fit_80_columns() {
    let cases: &[&[&str]] = &[
        &[
            "memory",
            "Meta-Llama-3-8B",
            "--dtype",
            "q4_k_m",
            "--seq-len",
            "8k",
            "--gpu",
            "rtx4090",
        ],
        &[
            "memory",
            "DeepSeek-V3",
            "--dtype",
            "fp8-block",
            "--gpu",
            "h200x8",
            "--max-context",
        ],
        &[
            "memory",
            "llama-2-7b",
            "--sweep",
            "seq=1k,8k,32k",
            "--kv-dtype",
            "q8_0",
            "--gpu",
            "rtx4090",
        ],
        &["memory", "gpt-oss-120b", "--gpu", "h100"],
        &[
            "memory",
            "Meta-Llama-3-8B",
            "--runtime",
            "vllm",
            "--gpu",
            "a100",
            "--seq-len",
            "8k",
        ],
        &[
            "memory",
            "Meta-Llama-3-8B",
            "--runtime",
            "llama.cpp",
            "--dtype",
            "q8_0",
            "--gpu",
            "rtx3060",
            "--ngl",
            "20",
        ],
        &["memory", "Meta-Llama-3-8B", "--gpu", "rtx4090x3"],
        &[
            "memory",
            "bert-base-uncased",
            "gpt2",
            "Meta-Llama-3-8B",
            "--gpu",
            "rtx4090",
        ],
        &[
            "memory",
            "Meta-Llama-3-8B",
            "--sweep",
            "dtype=bf16,q8_0,q4_k_m",
            "--gpu",
            "rtx4090",
        ],
        &[
            "memory",
            "Meta-Llama-3-8B",
            "--runtime",
            "vllm",
            "--gpu",
            "a100",
            "--sweep",
            "seq=8k,32k",
        ],
        &["memory", "llama-2-7b", "--explain"],
        &[
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
    ];
    for args in cases {
        assert_fits(args, &at_80(args));
    }
}

#[test]
fn narrow_terminal_keeps_every_number() {
    // The placement table drops the decimal GB at 80 columns, not the bytes: GPU 0 of three
    // RTX 4090s holds 6,989,987,840 B in all, the line item above says so exactly, and the
    // device rows keep their binary sizes.
    let args = ["memory", "Meta-Llama-3-8B", "--gpu", "rtx4090x3"];
    let narrow = at_80(&args);
    assert!(narrow.stdout.contains("6,989,987,840"), "{}", narrow.stdout);
    let gpu0 = narrow
        .stdout
        .lines()
        .find(|l| l.starts_with("GPU 0 "))
        .unwrap();
    assert!(
        gpu0.contains("0–10") && gpu0.contains("6.51 GiB") && !gpu0.contains("GB)"),
        "{gpu0}"
    );
    // The line item's words fold under it instead of running off the edge.
    let lines: Vec<&str> = narrow.stdout.lines().collect();
    let total = lines.iter().position(|l| l.starts_with("total ")).unwrap();
    assert!(lines[total].contains("19,466,810,368"), "{}", lines[total]);
    assert_eq!(lines[total + 1].trim(), "every GPU (system RAM apart)");
}

#[test]
fn wide_keeps_one_line_per_row_with_the_decimal_gb() {
    let mut args = vec!["memory", "Meta-Llama-3-8B", "--gpu", "rtx4090x3", "--wide"];
    let wide = at_80(&args);
    let gpu0 = wide
        .stdout
        .lines()
        .find(|l| l.starts_with("GPU 0 "))
        .unwrap();
    // Layers, four sizes with their decimal GB, and what else the GPU holds, on one line.
    assert!(
        gpu0.contains("0–10")
            && gpu0.contains("5.45 GiB (5.85 GB)")
            && gpu0.contains("6.51 GiB (6.99 GB)")
            && gpu0.ends_with("embeddings"),
        "{gpu0}"
    );
    let weights = wide
        .stdout
        .lines()
        .find(|l| l.starts_with("weights "))
        .unwrap();
    assert!(
        weights.contains("16,060,522,496")
            && weights.ends_with("8,030,261,248 parameters, 16.000 bits per weight on average"),
        "{weights}"
    );
    // The same as a pipe with no width at all.
    args.pop();
    let piped = llmsize_env(&args, &[("NO_COLOR", "1")]);
    if std::env::var_os("COLUMNS").is_none() {
        assert_eq!(piped.stdout, wide.stdout);
    }
}

#[test]
fn inspect_and_audit_fit_80_columns() {
    let dir = tempfile::tempdir().unwrap();
    minilm(dir.path(), None);
    let bad = tempfile::tempdir().unwrap();
    minilm(bad.path(), Some(7));
    let tiny = dir.path().join("tiny.gguf");
    padded(
        &tiny,
        &fs::read(root().join("tests/fixtures/gguf/tiny-llama-consistent.gguf.header")).unwrap(),
        1_099_584,
    );
    let all_types = root().join("crates/llmsize-weights/fixtures/gguf/all-types.gguf");
    let files = root().join("tests/fixtures/files");
    let shard = files.join("gguf-split/tiny-00002-of-00003.gguf");
    let mistral = files.join("mistral");
    let d = dir.path().to_str().unwrap();
    let b = bad.path().to_str().unwrap();
    let t = tiny.to_str().unwrap();
    let a = all_types.to_str().unwrap();
    let s = shard.to_str().unwrap();
    let m = mistral.to_str().unwrap();
    for args in [
        ["inspect", d],
        ["audit", d],
        ["audit", b],
        ["inspect", t],
        ["audit", t],
        ["inspect", a],
        ["inspect", s],
        ["audit", s],
        ["inspect", m],
        ["memory", m],
    ] {
        assert_fits(&args, &at_80(&args));
    }
    // The disagreement is still named, and still exits 1.
    let r = at_80(&["audit", b]);
    assert_eq!(r.code, 1);
    assert!(r.stdout.contains("disagree"), "{}", r.stdout);
    // One layer's attention too many in the config: 4 · (384² + 384) = 591,360.
    let attention = r
        .stdout
        .lines()
        .find(|l| l.starts_with("attention "))
        .unwrap();
    assert!(attention.ends_with("-591,360"), "{attention}");
}
