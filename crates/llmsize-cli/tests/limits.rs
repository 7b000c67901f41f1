//! Inputs that must be refused clearly, or read within bounds, whatever they say.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    reason = "a test fails loudly on what it did not expect"
)]

mod common;

use common::llmsize;
use serde_json::Value;
use std::path::Path;

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

#[test]
fn a_weight_file_passed_as_a_config_is_not_read_whole() {
    // A 200 MB file (sparse: zeros) named like a config: refused after 64 MiB.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("pytorch_model.bin");
    std::fs::File::create(&p)
        .unwrap()
        .set_len(200 << 20)
        .unwrap();
    let r = llmsize(&["params", &p.display().to_string()]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("larger than 64 MiB"), "{}", r.stderr);
}

#[test]
fn an_index_naming_a_shard_outside_its_folder_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let index = write(
        dir.path(),
        "model.safetensors.index.json",
        r#"{"metadata":{},"weight_map":{"a.weight":"../../etc/secret.safetensors"}}"#,
    );
    let r = llmsize(&["inspect", &index]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("expected a plain file name"),
        "{}",
        r.stderr
    );
}

#[test]
fn zero_periods_are_errors_as_in_transformers() {
    // transformers computes `(i + 1) % pattern`: a zero period is a ZeroDivisionError there.
    let dir = tempfile::tempdir().unwrap();
    let gemma3 = write(
        dir.path(),
        "gemma3.json",
        r#"{"model_type":"gemma3_text","hidden_size":640,"num_hidden_layers":18,"num_attention_heads":4,"num_key_value_heads":1,"head_dim":256,"intermediate_size":2048,"vocab_size":262144,"sliding_window":512,"sliding_window_pattern":0}"#,
    );
    let r = llmsize(&["params", &gemma3]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("sliding_window_pattern"), "{}", r.stderr);
    let qwen = write(
        dir.path(),
        "qwen2_moe.json",
        r#"{"model_type":"qwen2_moe","hidden_size":256,"num_hidden_layers":4,"num_attention_heads":4,"intermediate_size":512,"moe_intermediate_size":128,"num_experts":4,"num_experts_per_tok":2,"vocab_size":1000,"decoder_sparse_step":0}"#,
    );
    let r = llmsize(&["params", &qwen]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("decoder_sparse_step"), "{}", r.stderr);
}

#[test]
fn qwen2_slides_from_the_class_default_max_window_layers() {
    // `Qwen2Config(max_window_layers=28)`: with `use_sliding_window` and no key, layers 28–31
    // of 32 slide. The KV cache at 8,192 tokens: 28 full layers of 8,192 tokens and 4 layers
    // of the window − 1 = 4,095 tokens (transformers' cache), each 2·n_kv·d_h·2 bytes a token
    // with n_kv = 2, d_h = 64.
    let dir = tempfile::tempdir().unwrap();
    let config = write(
        dir.path(),
        "config.json",
        r#"{"model_type":"qwen2","hidden_size":1024,"num_hidden_layers":32,"num_attention_heads":16,"num_key_value_heads":2,"intermediate_size":2816,"vocab_size":1000,"use_sliding_window":true,"sliding_window":4096}"#,
    );
    let r = llmsize(&["memory", &config, "--seq-len", "8192", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let j: Value = serde_json::from_str(&r.stdout).unwrap();
    let per_token = 2 * 2 * 64 * 2;
    assert_eq!(
        j["kv_cache_bytes"].as_u64(),
        Some(per_token * (28 * 8192 + 4 * 4095))
    );
    let r = llmsize(&["params", &config, "--json"]);
    let j: Value = serde_json::from_str(&r.stdout).unwrap();
    assert!(
        j["assumptions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["field"] == "max_window_layers" && a["value"] == "28"),
        "{}",
        j["assumptions"]
    );
}

#[test]
fn an_index_of_more_shards_than_any_checkpoint_is_refused() {
    // 4,097 shard files named (the limit is 4,096); none exists, and none is opened.
    let dir = tempfile::tempdir().unwrap();
    let entries: Vec<String> = (0..4097)
        .map(|i| format!(r#""t{i}.weight":"model-{i:05}.safetensors""#))
        .collect();
    let index = write(
        dir.path(),
        "model.safetensors.index.json",
        &format!(r#"{{"weight_map":{{{}}}}}"#, entries.join(",")),
    );
    let r = llmsize(&["inspect", &index]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("names 4097 shard files, more than the limit of 4096"),
        "{}",
        r.stderr
    );
}

#[test]
fn an_inspect_table_lists_fifty_unrecognised_tensors_then_counts_the_rest() {
    // 60 zero-size tensors whose names no rule knows.
    let dir = tempfile::tempdir().unwrap();
    let entries: Vec<String> = (0..60)
        .map(|i| format!(r#""zz{i}":{{"dtype":"F32","shape":[0],"data_offsets":[0,0]}}"#))
        .collect();
    let header = format!("{{{}}}", entries.join(","));
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend(header.as_bytes());
    let p = dir.path().join("odd.safetensors");
    std::fs::write(&p, bytes).unwrap();
    let r = llmsize(&["inspect", &p.display().to_string()]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let listed = r
        .stdout
        .lines()
        .filter(|l| l.trim_start().starts_with("zz"))
        .count();
    assert_eq!(listed, 50, "{}", r.stdout);
    assert!(
        r.stdout.contains("… and 10 more (`--json` lists them all)"),
        "{}",
        r.stdout
    );
    let j = llmsize(&["inspect", &p.display().to_string(), "--json"]);
    let v: Value = serde_json::from_str(&j.stdout).unwrap();
    assert_eq!(v["unknown"].as_array().map(Vec::len), Some(60));
}
