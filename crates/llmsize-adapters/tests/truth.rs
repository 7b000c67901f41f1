//! Every model of the ground truth (`tests/fixtures/truth/truth.json`, produced by the real
//! Hugging Face `transformers` 5.24 code, see `tests/fixtures/truth/README.md`) is counted
//! exactly: total, all 13 components, MoE active parameters and encoders' bare-model totals.

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

use std::path::PathBuf;

use llmsize_adapters::hf_config::{HeadChoice, ReadOptions, read_config};
use llmsize_core::{Category, count};
use serde_json::Value;

fn fixture_dir(set: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(set)
}

fn truth_dir() -> PathBuf {
    fixture_dir("truth")
}

fn entries_of(set: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(fixture_dir(set).join("truth.json")).unwrap();
    serde_json::from_str::<Vec<Value>>(&text).unwrap()
}

fn entries() -> Vec<Value> {
    entries_of("truth")
}

fn check_family(families: &[&str]) {
    check_set("truth", families);
}

fn check_set(set: &str, families: &[&str]) {
    let mut failures = Vec::new();
    let mut checked = 0;
    for e in entries_of(set) {
        if !families.contains(&e["family"].as_str().unwrap()) {
            continue;
        }
        checked += 1;
        let id = e["id"].as_str().unwrap();
        let path = fixture_dir(set).join(e["config"].as_str().unwrap());
        let text = std::fs::read_to_string(&path).unwrap();
        let spec = match read_config(&text, id, id, &ReadOptions::default()) {
            Ok(s) => s,
            Err(err) => {
                failures.push(format!("{id}: {err}"));
                continue;
            }
        };
        let c = count(&spec).unwrap();
        let want = &e["params"];
        if c.total != want["total"].as_u64().unwrap() {
            failures.push(format!("{id}: total {} != {}", c.total, want["total"]));
        }
        for cat in Category::ALL {
            // The 78-model truth predates the 4 coverage categories: absent is zero.
            let w = want["components"][cat.as_str()].as_u64().unwrap_or(0);
            if c.get(cat) != w {
                failures.push(format!("{id}: {} {} != {w}", cat.as_str(), c.get(cat)));
            }
        }
        if let Some(active) = want.get("active_per_token") {
            let a = c.active.as_ref().map(|a| a.per_token);
            if a != active.as_u64() {
                failures.push(format!("{id}: active {a:?} != {active}"));
            }
            let ex = c.active.as_ref().map(|a| a.per_token_excl_token_embedding);
            if ex != want["active_per_token_excl_token_embedding"].as_u64() {
                failures.push(format!("{id}: active excl. embedding {ex:?}"));
            }
        }
        if let Some(base) = want.get("base_model") {
            let opts = ReadOptions {
                head: HeadChoice::Base,
                ..ReadOptions::default()
            };
            let spec = read_config(&text, id, id, &opts).unwrap();
            let got = count(&spec).unwrap().total;
            if got != base["total"].as_u64().unwrap() {
                failures.push(format!("{id}: base model {got} != {}", base["total"]));
            }
        }
    }
    assert!(checked > 0, "no entries of {families:?}");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn dense_decoders_are_exact() {
    check_family(&["decoder"]);
}

#[test]
fn moe_models_are_exact() {
    check_family(&["moe"]);
}

#[test]
fn encoders_are_exact() {
    check_family(&["encoder"]);
}

#[test]
fn encoder_decoders_are_exact() {
    check_family(&["seq2seq"]);
}

/// Models of the supported types that the engine was never written against.
#[test]
fn holdout_models_are_exact() {
    check_set("holdout", &["decoder", "moe", "encoder", "seq2seq"]);
}

#[test]
fn presets_are_the_truth_configs() {
    use llmsize_adapters::presets::PRESETS;
    let entries = entries();
    // The ground truth's presets first, in its order; the added ones follow
    // (`tests/added_presets.rs`).
    assert!(PRESETS.len() >= entries.len());
    for (p, e) in PRESETS.iter().zip(&entries) {
        assert_eq!(p.id, e["id"].as_str().unwrap());
        assert_eq!(p.hf_repo, e["hf_repo"].as_str());
        let text =
            std::fs::read_to_string(truth_dir().join(e["config"].as_str().unwrap())).unwrap();
        assert_eq!(p.config, text, "{}", p.id);
    }
}

fn spec_of(set: &str, e: &Value) -> llmsize_core::ModelSpec {
    let id = e["id"].as_str().unwrap();
    let text =
        std::fs::read_to_string(fixture_dir(set).join(e["config"].as_str().unwrap())).unwrap();
    read_config(&text, id, id, &ReadOptions::default()).unwrap()
}

/// The tensor list (for formats, FLOPs, audits) holds exactly the counted parameters.
#[test]
fn tensor_lists_sum_to_the_count() {
    for set in ["truth", "holdout"] {
        for e in entries_of(set) {
            let spec = spec_of(set, &e);
            let sum: u64 = llmsize_core::layout::tensors(&spec)
                .unwrap()
                .iter()
                .map(|t| t.total_elements().unwrap())
                .sum();
            assert_eq!(sum, count(&spec).unwrap().total, "{}", e["id"]);
        }
    }
}

/// KV bytes after a prefill, bf16, batch 1: what the model's own forward returns.
#[test]
fn kv_cache_bytes_match_transformers() {
    use llmsize_core::formats::{KvDtype, WeightFormat};
    use llmsize_core::memory::{CachePolicy, MemoryOptions, MlaCache, memory};
    let mut failures = Vec::new();
    let mut checked = 0;
    for (set, e) in both_sets() {
        let Some(kv) = e.get("kv_cache_bytes_bf16").filter(|v| !v.is_null()) else {
            continue;
        };
        let spec = spec_of(set, &e);
        for (s, want) in kv["by_seq_len"].as_object().unwrap() {
            checked += 1;
            let options = MemoryOptions {
                format: WeightFormat::Bf16,
                seq_len: s.parse().unwrap(),
                batch: 1,
                kv_dtype: KvDtype::Bf16,
                tp: 1,
                gpu: None,
                mla: MlaCache::Latent,
                window: CachePolicy::Transformers,
                overhead_bytes: 0,
            };
            let got = memory(&spec, &options).unwrap().kv_bytes;
            if got != want.as_u64().unwrap() {
                failures.push(format!("{} at {s}: {got} != {want}", e["id"]));
            }
        }
    }
    assert!(checked > 200, "{checked}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Entries of the ground truth and of the holdout, with their set.
fn both_sets() -> Vec<(&'static str, Value)> {
    entries_of("truth")
        .into_iter()
        .map(|e| ("truth", e))
        .chain(entries_of("holdout").into_iter().map(|e| ("holdout", e)))
        .collect()
}

/// Forward FLOPs as torch's `FlopCounterMode` counts them (full attention, batch 1).
#[test]
fn forward_flops_match_torch() {
    use llmsize_core::flops::{AttentionConvention, flops};
    let mut failures = Vec::new();
    let mut checked = 0;
    for (set, e) in both_sets() {
        let Some(f) = e.get("forward_flops").filter(|v| !v.is_null()) else {
            continue;
        };
        let spec = spec_of(set, &e);
        for (s, want) in f["by_seq_len"].as_object().unwrap() {
            checked += 1;
            let got = flops(&spec, s.parse().unwrap(), 1, AttentionConvention::Full)
                .unwrap()
                .forward_flops;
            if got != u128::from(want.as_u64().unwrap()) {
                failures.push(format!("{} at {s}: {got} != {want}", e["id"]));
            }
        }
    }
    assert!(checked > 200, "{checked}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
