//! What users see, whole: each command's exit code, stdout and stderr in one snapshot (uv's
//! `uv_snapshot!` layout), for the main commands, a "no" (exit 1) and errors (exit 2).

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

#[test]
fn params_gpt2() {
    llmsize_snapshot!("params_gpt2", ["params", "gpt2"]);
}

#[test]
fn params_gpt2_explain() {
    llmsize_snapshot!("params_gpt2_explain", ["params", "gpt2", "--explain"]);
}

#[test]
fn memory_fits() {
    let r = llmsize_snapshot!(
        "memory_llama_2_7b_rtx4090",
        ["memory", "llama-2-7b", "--gpu", "rtx4090"]
    );
    assert_eq!(r.code, 0);
}

#[test]
fn memory_does_not_fit_exits_1() {
    let r = llmsize_snapshot!(
        "memory_llama_2_70b_rtx4090",
        ["memory", "llama-2-70b", "--gpu", "rtx4090"]
    );
    assert_eq!(r.code, 1);
}

#[test]
fn flops_gpt2() {
    llmsize_snapshot!("flops_gpt2", ["flops", "gpt2"]);
}

#[test]
fn missing_file_exits_2_with_a_hint() {
    let r = llmsize_snapshot!("error_missing_file", ["params", "/no/such/dir/config.json"]);
    assert_eq!(r.code, 2);
}

#[test]
fn unknown_preset_exits_2_with_suggestions() {
    let r = llmsize_snapshot!("error_unknown_preset", ["params", "llama-2-7"]);
    assert_eq!(r.code, 2);
}

#[test]
fn unknown_flag_value_exits_2_with_the_valid_ones() {
    let r = llmsize_snapshot!("error_unknown_dtype", ["memory", "gpt2", "--dtype", "q9_k"]);
    assert_eq!(r.code, 2);
}

#[test]
fn presets() {
    llmsize_snapshot!("presets", ["presets"]);
}

#[test]
fn gpus() {
    llmsize_snapshot!("gpus", ["gpus"]);
}

/// `--set` of a key the model never reads: the GGUF path warns exactly as the config path.
#[test]
fn gguf_set_of_an_unread_key_warns_as_for_a_config() {
    let gguf = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../llmsize-weights/fixtures/gguf/tiny-llama.gguf"
    );
    let r = common::llmsize(&["params", gguf, "--set", "unknown_key=1", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        r.stderr,
        "warning: tiny-llama: `--set unknown_key=1`: `llama` models do not read `unknown_key`, so it changed nothing\n"
    );

    // The same config as a config.json gives the same warning, word for word.
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("tiny-llama.json");
    std::fs::write(
        &config,
        r#"{"model_type":"llama","vocab_size":32000,"hidden_size":4096,"num_hidden_layers":32,
            "num_attention_heads":32,"intermediate_size":11008}"#,
    )
    .unwrap();
    let c = common::llmsize(&["params", config.to_str().unwrap(), "--set", "unknown_key=1"]);
    assert_eq!(c.stderr, r.stderr);
}

/// `--set` on a GGUF is validated as on a config: a size that breaks the model is an error
/// naming the file and the key, not a silent count.
#[test]
fn gguf_set_is_validated_as_for_a_config() {
    let gguf = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../llmsize-weights/fixtures/gguf/tiny-llama.gguf"
    );
    let r = common::llmsize(&["params", gguf, "--set", "num_attention_heads=7"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.starts_with("error: ")
            && r.stderr.contains("tiny-llama.gguf")
            && r.stderr
                .contains("`num_attention_heads` = 7 does not divide"),
        "{}",
        r.stderr
    );
    let r = common::llmsize(&["memory", gguf, "--set", "num_attention_heads=7"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
}
