//! A GGUF file's metadata, written the way llama.cpp's `convert_hf_to_gguf.py` writes it from a
//! `config.json`, gives back the exact count of that config: the mapping of every supported
//! GGUF architecture is checked against the ground truth.

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

#[path = "../../llmsize-weights/tests/common/gguf_builder.rs"]
mod gguf_builder;

use std::path::PathBuf;

use gguf_builder::GgufBuilder;
use llmsize_adapters::gguf_config::spec_from_gguf;
use llmsize_core::count;
use llmsize_weights::gguf::parse_header;
use serde_json::Value;

fn truth_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/truth")
}

fn get(c: &Value, keys: &[&str]) -> Option<u64> {
    keys.iter().find_map(|k| c.get(*k).and_then(Value::as_u64))
}

/// The GGUF header llama.cpp would write for a config (metadata and, when untied, the
/// output tensor's info), and the file length it implies.
fn gguf_for(c: &Value, arch: &str) -> (Vec<u8>, u64) {
    let hidden = get(c, &["hidden_size", "n_embd"]).unwrap();
    let heads = get(c, &["num_attention_heads", "n_head"]).unwrap();
    let vocab = get(c, &["vocab_size"]).unwrap();
    let key = |s: &str| format!("{arch}.{s}");
    let mut b = GgufBuilder::new(3).kv_str("general.architecture", arch);
    b = b
        .kv_u64(&key("embedding_length"), hidden)
        .kv_u64(
            &key("block_count"),
            get(c, &["num_hidden_layers", "n_layer"]).unwrap(),
        )
        .kv_u64(&key("attention.head_count"), heads)
        .kv_u64(&key("vocab_size"), vocab)
        .kv_u64(
            &key("context_length"),
            get(c, &["max_position_embeddings", "n_positions"]).unwrap_or(2048),
        );
    if let Some(kv) = get(c, &["num_key_value_heads"]) {
        b = b.kv_u64(&key("attention.head_count_kv"), kv);
    }
    let ff = get(c, &["intermediate_size", "n_inner"]).unwrap_or(4 * hidden);
    b = b.kv_u64(&key("feed_forward_length"), ff);
    if let Some(hd) = get(c, &["head_dim"]) {
        b = b
            .kv_u64(&key("attention.key_length"), hd)
            .kv_u64(&key("attention.value_length"), hd);
    }
    if let Some(e) = get(c, &["num_local_experts", "num_experts", "n_routed_experts"]) {
        b = b.kv_u64(&key("expert_count"), e).kv_u64(
            &key("expert_used_count"),
            get(c, &["num_experts_per_tok"]).unwrap(),
        );
        if let Some(f) = get(c, &["moe_intermediate_size"]) {
            b = b.kv_u64(&key("expert_feed_forward_length"), f);
        } else if arch == "gpt-oss" {
            b = b.kv_u64(&key("expert_feed_forward_length"), ff);
        }
        if let Some(f) = get(c, &["shared_expert_intermediate_size"]) {
            b = b.kv_u64(&key("expert_shared_feed_forward_length"), f);
        }
    }
    if arch == "deepseek2" {
        let rope = get(c, &["qk_rope_head_dim"]).unwrap();
        b = b
            .kv_u64(
                &key("leading_dense_block_count"),
                get(c, &["first_k_dense_replace"]).unwrap(),
            )
            .kv_u64(
                &key("expert_shared_count"),
                get(c, &["n_shared_experts"]).unwrap(),
            )
            .kv_u64(
                &key("attention.q_lora_rank"),
                get(c, &["q_lora_rank"]).unwrap_or(0),
            )
            .kv_u64(
                &key("attention.kv_lora_rank"),
                get(c, &["kv_lora_rank"]).unwrap(),
            )
            .kv_u64(&key("rope.dimension_count"), rope)
            // llama.cpp's newer MLA layout: the latent in key_length, per-head sizes in *_mla.
            .kv_u64(
                &key("attention.key_length"),
                get(c, &["kv_lora_rank"]).unwrap() + rope,
            )
            .kv_u64(
                &key("attention.key_length_mla"),
                get(c, &["qk_nope_head_dim"]).unwrap() + rope,
            )
            .kv_u64(
                &key("attention.value_length_mla"),
                get(c, &["v_head_dim"]).unwrap(),
            );
    }
    let tied = c
        .get("tie_word_embeddings")
        .and_then(Value::as_bool)
        .unwrap_or(arch == "gpt2" || arch.starts_with("gemma"));
    let mut data = 0;
    if !tied {
        b = b.tensor("output.weight", &[hidden, vocab], 0, 0); // F32
        data = hidden * vocab * 4;
    }
    let len = b.file_len(data);
    (b.build(), len)
}

#[test]
fn gguf_metadata_reproduces_the_config_count() {
    let truth: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(truth_dir().join("truth.json")).unwrap())
            .unwrap();
    let cases = [
        ("gpt2", "gpt2"),
        ("Llama-2-7b-hf", "llama"),
        ("Meta-Llama-3-8B", "llama"),
        ("Qwen2-0.5B", "qwen2"),
        ("Qwen2.5-7B", "qwen2"),
        ("Qwen3-0.6B", "qwen3"),
        ("Qwen3-8B", "qwen3"),
        ("gemma-2b", "gemma"),
        ("gemma-2-2b", "gemma2"),
        ("gemma-3-1b-pt", "gemma3"),
        ("Phi-3-mini-4k-instruct", "phi3"),
        ("Mixtral-8x7B-v0.1", "llama"),
        ("Qwen1.5-MoE-A2.7B", "qwen2moe"),
        ("Qwen3-30B-A3B", "qwen3moe"),
        ("DeepSeek-V2-Lite", "deepseek2"),
        ("DeepSeek-V3", "deepseek2"),
        ("gpt-oss-20b", "gpt-oss"),
    ];
    let mut failures = Vec::new();
    for (id, arch) in cases {
        let e = truth.iter().find(|e| e["id"] == id).unwrap();
        let config: Value = serde_json::from_str(
            &std::fs::read_to_string(truth_dir().join(e["config"].as_str().unwrap())).unwrap(),
        )
        .unwrap();
        let (bytes, len) = gguf_for(&config, arch);
        let header = parse_header(&bytes, len, id).unwrap();
        match spec_from_gguf(&header, id, id) {
            Ok(spec) => {
                let got = count(&spec).unwrap().total;
                if got != e["params"]["total"].as_u64().unwrap() {
                    failures.push(format!("{id} ({arch}): {got} != {}", e["params"]["total"]));
                }
            }
            Err(err) => failures.push(format!("{id} ({arch}): {err}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
