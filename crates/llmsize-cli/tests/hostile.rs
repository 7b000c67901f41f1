//! Small inputs that say "a million layers" must cost work in the number of distinct layer
//! kinds, not in the number of layers: each answers with an exact count (or a clear error),
//! here checked for the answer; `bench/hostile.py` measures their time and peak memory.

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
use std::path::Path;

fn write(dir: &Path, name: &str, bytes: &[u8]) -> String {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p.display().to_string()
}

fn total(args: &[&str]) -> u64 {
    let r = llmsize(args);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let j: Value = serde_json::from_str(&r.stdout).unwrap();
    j["total"].as_u64().unwrap()
}

/// The 143-byte llama config of issue 8, a million layers.
const LLAMA_1M: &str = r#"{"model_type":"llama","hidden_size":4096,"num_hidden_layers":1000000,"num_attention_heads":32,"intermediate_size":11008,"vocab_size":32000}"#;

// Per layer: attention 4·d² = 67,108,864; gated MLP 3·d·d_ff = 3·4096·11008 = 135,266,304;
// two RMSNorms 2·d = 8,192; together 202,383,360. Plus V·d = 131,072,000 for the table, the
// same again for the untied head (LlamaConfig's default), and the final norm d = 4,096.
const LLAMA_1M_LAYERS: u64 = 202_383_360 * 1_000_000;

#[test]
fn a_million_layer_llama_is_counted_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let config = write(dir.path(), "config.json", LLAMA_1M.as_bytes());
    assert_eq!(
        total(&["params", &config, "--json"]),
        LLAMA_1M_LAYERS + 2 * 131_072_000 + 4_096
    );
    for args in [
        vec!["memory", &config, "--json"],
        vec!["memory", &config, "--json", "--dtype", "q4_k_m"],
        vec!["flops", &config, "--json"],
    ] {
        let r = llmsize(&args);
        assert_eq!(r.code, 0, "{args:?}: {}", r.stderr);
    }
    // The KV cache of 1M layers at 4,096 tokens: 2·n_kv·d_h·2 bytes·tokens per layer.
    let r = llmsize(&["memory", &config, "--json"]);
    let j: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(
        j["kv_cache_bytes"].as_u64(),
        Some(2 * 32 * 128 * 2 * 4_096 * 1_000_000)
    );
}

/// A GGUF of metadata only (no tensors): llama with `block_count` 1,000,000.
fn gguf_1m_layers() -> Vec<u8> {
    common::metadata_gguf(
        "llama",
        &[
            ("llama.block_count", 1_000_000),
            ("llama.embedding_length", 4096),
            ("llama.feed_forward_length", 11008),
            ("llama.attention.head_count", 32),
            ("llama.context_length", 4096),
            ("llama.vocab_size", 32000),
        ],
    )
}

#[test]
fn a_million_layer_gguf_is_counted_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let gguf = write(dir.path(), "model.gguf", &gguf_1m_layers());
    // No `output.weight` tensor: the head is tied, so the table counts once.
    assert_eq!(
        total(&["params", &gguf, "--json"]),
        LLAMA_1M_LAYERS + 131_072_000 + 4_096
    );
    let r = llmsize(&["memory", &gguf, "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
}

#[test]
fn a_t5_of_two_million_layers_is_counted_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let config = write(
        dir.path(),
        "config.json",
        br#"{"model_type":"t5","d_model":512,"d_kv":64,"d_ff":2048,"num_layers":1000000,"num_decoder_layers":1000000,"num_heads":8,"vocab_size":32128}"#,
    );
    // Encoder layer: 4·d·(n_h·d_kv) = 1,048,576 + 2·d·d_ff = 2,097,152 + 2 norms 1,024.
    // Decoder layer: 8·d² = 2,097,152 + 2,097,152 + 3 norms 1,536. Relative biases 2·32·8,
    // final norms 2·512, the tied table 32,128·512 = 16,449,536.
    let expected = 1_000_000 * (3_146_752 + 4_195_840) + 512 + 1_024 + 16_449_536;
    assert_eq!(total(&["params", &config, "--json"]), expected);
    for c in ["memory", "flops"] {
        let r = llmsize(&[c, &config, "--json"]);
        assert_eq!(r.code, 0, "{c}: {}", r.stderr);
    }
}

#[test]
fn a_long_mlp_only_layers_list_stays_linear() {
    let dir = tempfile::tempdir().unwrap();
    let layers: Vec<String> = (0..100_000).map(|i| i.to_string()).collect();
    let config = write(
        dir.path(),
        "config.json",
        format!(
            r#"{{"model_type":"qwen2_moe","hidden_size":2048,"num_hidden_layers":100000,"num_attention_heads":16,"num_key_value_heads":16,"intermediate_size":5632,"moe_intermediate_size":1408,"shared_expert_intermediate_size":5632,"num_experts":60,"num_experts_per_tok":4,"vocab_size":151936,"mlp_only_layers":[{}]}}"#,
            layers.join(",")
        )
        .as_bytes(),
    );
    // Every layer is dense: q, k, v with biases and o, 4·d² + 3·d = 16,783,360; a gated MLP of
    // 5,632, 3·2048·5632 = 34,603,008; two norms 4,096. The table and the untied head
    // 151,936·2048 each, the final norm 2,048.
    let expected = 100_000 * (16_783_360 + 34_603_008 + 4_096) + 2 * 311_164_928 + 2_048;
    assert_eq!(total(&["params", &config, "--json"]), expected);
}

#[test]
fn alternating_layer_kinds_a_million_times_answer() {
    // Gemma 2 slides on every other layer: 1,000,000 runs of two kinds.
    let dir = tempfile::tempdir().unwrap();
    let config = write(
        dir.path(),
        "config.json",
        br#"{"model_type":"gemma2","hidden_size":2304,"num_hidden_layers":1000000,"num_attention_heads":8,"num_key_value_heads":4,"head_dim":256,"intermediate_size":9216,"vocab_size":256000,"sliding_window":4096}"#,
    );
    for args in [
        vec!["params", &config, "--json"],
        vec!["params", &config, "--explain"],
        vec!["memory", &config, "--json", "--dtype", "q4_k_m"],
        vec!["flops", &config, "--json"],
    ] {
        let r = llmsize(&args);
        assert_eq!(r.code, 0, "{args:?}: {}", r.stderr);
    }
    let r = llmsize(&["params", &config, "--explain"]);
    assert!(r.stdout.contains("… 499936 more"), "{}", r.stdout);
    // A training step walks the runs in order, several times when it looks for what would
    // fit: past 65,536 runs (limits::MAX_RUNS) it is refused, naming the count and the bound.
    let r = llmsize(&["train", &config, "--gpu", "h100x8", "--pp", "4"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("a stack of 1,000,000 layers changes layer kind 1,000,000 times: a training step walks at most 65,536 runs of one kind"),
        "{}",
        r.stderr
    );
    // At the bound it answers: 65,536 layers alternating, on 4 pipeline stages.
    let at_bound = write(
        dir.path(),
        "65536.json",
        std::fs::read_to_string(&config)
            .unwrap()
            .replace("1000000", "65536")
            .as_bytes(),
    );
    let r = llmsize(&["train", &at_bound, "--gpu", "h100x8", "--pp", "4", "--json"]);
    assert!(r.code == 0 || r.code == 1, "{}", r.stderr);
}

#[test]
fn more_than_a_million_layers_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let config = write(
        dir.path(),
        "config.json",
        LLAMA_1M.replace("1000000", "1000001").as_bytes(),
    );
    let r = llmsize(&["params", &config]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("num_hidden_layers"), "{}", r.stderr);
}
