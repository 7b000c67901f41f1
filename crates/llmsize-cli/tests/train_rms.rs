//! `llmsize train` on the RMSNorm-family models of the training ground truth: what a step
//! keeps for backward (`activation_bytes` = the truth's `retained_bytes`) and the forward's
//! peak (`activation_peak_bytes` = `forward_peak_bytes`), for every measured run.
//!
//! `fixtures/train/truth-rms.json` is `train.json` trimmed to those fields (transformers 5.24,
//! torch 2.15, peft 0.21.2, CPU kernels); the configs beside it are the truth's.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    missing_docs,
    reason = "a test fails loudly on what it did not expect"
)]

mod common;

use common::llmsize;
use serde_json::Value;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/train");

fn truth() -> Vec<Value> {
    let text = std::fs::read_to_string(format!("{DIR}/truth-rms.json")).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    v["models"].as_array().unwrap().clone()
}

/// The command check-truth.py runs for one measured step.
fn args(model: &Value, run: &Value) -> Vec<String> {
    let mut a: Vec<String> = [
        "train".to_owned(),
        format!("{DIR}/{}", model["config"].as_str().unwrap()),
        "--seq-len".into(),
        run["seq"].to_string(),
        "--batch".into(),
        run["batch"].to_string(),
        "--dtype".into(),
        run.get("dtype")
            .and_then(Value::as_str)
            .unwrap_or("bf16")
            .to_owned(),
        "--attn-impl".into(),
        run["attn"].as_str().unwrap().to_owned(),
        "--device".into(),
        "cpu".into(),
        "--json".into(),
    ]
    .into();
    if let Some(lc) = run.get("lora_config") {
        let targets = match &lc["target_modules"] {
            Value::String(s) => s.clone(),
            Value::Array(v) => v
                .iter()
                .map(|x| x.as_str().unwrap())
                .collect::<Vec<_>>()
                .join(","),
            other => panic!("target_modules {other}"),
        };
        a.extend([
            "--lora-rank".into(),
            lc["r"].to_string(),
            "--lora-targets".into(),
            targets,
        ]);
        if lc["lora_dropout"].as_f64().unwrap_or(0.0) > 0.0 {
            a.extend(["--lora-dropout".into(), lc["lora_dropout"].to_string()]);
        }
    }
    if run["ckpt"].as_bool().unwrap() {
        a.push("--checkpointing".into());
    }
    a
}

/// Runs every step of `key` (`runs` or `lora_runs`) and lists the ones that differ.
fn check(key: &str) {
    let mut bad = Vec::new();
    let mut count = 0;
    for model in truth() {
        for run in model[key].as_array().unwrap() {
            count += 1;
            let a = args(&model, run);
            let refs: Vec<&str> = a.iter().map(String::as_str).collect();
            let r = llmsize(&refs);
            assert!(r.code == 0 || r.code == 1, "{a:?}: {}", r.stderr);
            let j: Value = serde_json::from_str(&r.stdout).unwrap();
            let got = (
                j["activation_bytes"].clone(),
                j["activation_peak_bytes"].clone(),
            );
            let want = (
                run["retained_bytes"].clone(),
                run["forward_peak_bytes"].clone(),
            );
            if got != want {
                bad.push(format!("{} {run}: got {got:?}", model["id"]));
            }
        }
    }
    assert!(count > 0);
    assert!(
        bad.is_empty(),
        "{} of {count} differ:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

#[test]
fn full_fine_tuning_activations_equal_the_measurements() {
    // 53 steps: bf16 and fp32, SDPA and eager, batch 1 and 4, 512 and 2048 tokens, with and
    // without gradient checkpointing.
    check("runs");
}

#[test]
fn lora_activations_equal_the_measurements() {
    // 52 steps: r16 all-linear, r8 q/v (Phi-3: its fused qkv_proj), r16 all-linear with dropout
    // 0.05, with and without checkpointing; Mixtral's all-linear adapts the router and the
    // 3-D expert tensors too.
    check("lora_runs");
}
