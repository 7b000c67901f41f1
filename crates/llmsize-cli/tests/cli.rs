//! The binary as users run it: outputs, the JSON contract, bad input and exit codes.

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
use std::path::{Path, PathBuf};

use serde::Deserialize;

fn truth_config(id: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/truth/configs")
        .join(format!("{id}.json"))
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

/// The public JSON contract, decoded strictly into test-local types.
#[derive(Debug, Deserialize)]
#[allow(
    dead_code,
    reason = "fields are decoded to pin the contract, not all are read"
)]
struct Components {
    token_embedding: u64,
    position_embedding: u64,
    token_type_embedding: u64,
    embedding_projection: u64,
    attention: u64,
    ffn: u64,
    moe_router: u64,
    moe_experts: u64,
    moe_shared_experts: u64,
    norm: u64,
    lm_head: u64,
    lm_head_transform: u64,
    pooler: u64,
}

#[derive(Debug, Deserialize)]
struct Contract {
    total: u64,
    components: Components,
    non_embedding: u64,
    active_per_token: Option<u64>,
}

fn json_of(args: &[&str]) -> Contract {
    let r = llmsize(args);
    assert_eq!(r.code, 0, "{}", r.stderr);
    serde_json::from_str(&r.stdout).unwrap()
}

#[test]
fn article_examples_are_exact() {
    // GPT-2 small: HF GPT2LMHeadModel.num_parameters().
    let gpt2 = json_of(&["params", "gpt2", "--json"]);
    assert_eq!(gpt2.total, 124_439_808);
    assert_eq!(gpt2.components.attention, 28_348_416);
    // LLaMA-7B: 6,738,415,616; the untied head is V·d = 32000·4096.
    let llama = json_of(&["params", "llama-2-7b", "--json"]);
    assert_eq!(llama.total, 6_738_415_616);
    assert_eq!(llama.components.lm_head, 131_072_000);
    // GPT-3 175B with HF's GPT-2 block: 174,604,259,328 (ground truth).
    let gpt3 = json_of(&["params", "gpt3-175b", "--json"]);
    assert_eq!(gpt3.total, 174_604_259_328);
    // The article's opening question, d=4096, L=32, V=32000, GPT block, n_ctx 2048:
    // V·d + n_ctx·d + L·(12d² + 13d) + 2d = 6,583,623,680.
    let q = json_of(&[
        "params", "--hidden", "4096", "--layers", "32", "--vocab", "32000", "--json",
    ]);
    assert_eq!(q.total, 6_583_623_680);
    assert_eq!(q.non_embedding, 6_583_623_680 - 32_000 * 4096 - 2048 * 4096);
}

#[test]
fn preset_names_people_type() {
    for name in ["llama-2-7b", "Llama-2-7b-hf", "meta-llama/Llama-2-7b-hf"] {
        assert_eq!(
            json_of(&["params", name, "--json"]).total,
            6_738_415_616,
            "{name}"
        );
    }
    let miss = llmsize(&["params", "lama-2-7b"]);
    assert_eq!(miss.code, 2);
    assert!(miss.stderr.contains("did you mean"), "{}", miss.stderr);
    assert!(miss.stderr.contains("Llama-2-7b-hf"), "{}", miss.stderr);
}

#[test]
fn config_file_and_directory() {
    let path = truth_config("Mistral-7B-v0.1");
    let by_file = json_of(&["params", path.to_str().unwrap(), "--json"]);
    assert_eq!(by_file.total, 7_241_732_096);
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(&path, dir.path().join("config.json")).unwrap();
    let by_dir = json_of(&["params", dir.path().to_str().unwrap(), "--json"]);
    assert_eq!(by_dir.total, 7_241_732_096);
}

#[test]
fn set_overrides_a_field() {
    // Llama-2-7b with 8 KV heads: k and v shrink from d·d to d·(8·128) each:
    // 6,738,415,616 − 32·2·(4096·4096 − 4096·1024) = 5,933,109,248.
    let gqa = json_of(&[
        "params",
        "llama-2-7b",
        "--set",
        "num_key_value_heads=8",
        "--json",
    ]);
    assert_eq!(gqa.total, 5_933_109_248);
    // Tying removes the 131,072,000-parameter head.
    let tied = json_of(&[
        "params",
        "llama-2-7b",
        "--set",
        "tie_word_embeddings=true",
        "--json",
    ]);
    assert_eq!(tied.total, 6_738_415_616 - 131_072_000);
    assert_eq!(tied.components.lm_head, 0);
    let bad = llmsize(&["params", "llama-2-7b", "--set", "num_key_value_heads"]);
    assert_eq!(bad.code, 2);
    assert!(
        bad.stderr.contains("expected `KEY=VALUE`"),
        "{}",
        bad.stderr
    );
}

#[test]
fn comparison_and_json_array() {
    let r = llmsize(&["params", "gpt2", "llama-2-7b"]);
    assert_eq!(r.code, 0);
    assert!(r.stdout.contains("124,439,808") && r.stdout.contains("6,738,415,616"));
    let r = llmsize(&["params", "gpt2", "llama-2-7b", "--json"]);
    let list: Vec<Contract> = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(
        list.iter().map(|c| c.total).collect::<Vec<_>>(),
        [124_439_808, 6_738_415_616]
    );
}

#[test]
fn moe_active_parameters() {
    let m = json_of(&["params", "Mixtral-8x7B-v0.1", "--json"]);
    assert_eq!(m.total, 46_702_792_704);
    assert_eq!(m.active_per_token, Some(12_879_925_248));
    // Two experts of eight: 4 → 2·(attention etc.) changes the active count only.
    let k4 = json_of(&[
        "params",
        "Mixtral-8x7B-v0.1",
        "--set",
        "num_experts_per_tok=4",
        "--json",
    ]);
    assert_eq!(k4.total, 46_702_792_704);
    // One expert is 3·4096·14336 = 176,160,768 per layer; two more per layer over 32 layers.
    assert_eq!(
        k4.active_per_token,
        Some(12_879_925_248 + 32 * 2 * 176_160_768)
    );
}

#[test]
fn encoder_heads() {
    assert_eq!(
        json_of(&["params", "bert-base-uncased", "--json"]).total,
        109_514_298
    );
    let base = json_of(&["params", "bert-base-uncased", "--head", "base", "--json"]);
    assert_eq!(base.total, 109_482_240);
    assert_eq!(base.components.pooler, 768 * 768 + 768);
    // A decoder's bare model drops the untied head (oracle, `--auto base`: LlamaModel).
    let llama = json_of(&["params", "llama-2-7b", "--head", "base", "--json"]);
    assert_eq!(llama.total, 6_607_343_616);
    assert_eq!(llama.components.lm_head, 0);
}

#[test]
fn ten_trillion_parameters_are_exact() {
    // A llama-style giant: V=256000, d=65536, L=192, heads 512 (d_h 128), kv 64, d_ff 262144.
    // per layer: attention 2·d·d + 2·d·(64·128) = 8,589,934,592 + 1,073,741,824 = 9,663,676,416
    //            mlp 3·d·d_ff = 51,539,607,552; norms 2·d = 131,072 → 61,203,415,040
    // total = 192·61,203,415,040 + 2·V·d + d = 11,751,055,687,680 + 33,554,432,000 + 65,536
    //       = 11,784,610,185,216
    let dir = tempfile::tempdir().unwrap();
    let cfg = write(
        dir.path(),
        "giant.json",
        r#"{"model_type":"llama","vocab_size":256000,"hidden_size":65536,"num_hidden_layers":192,
            "num_attention_heads":512,"num_key_value_heads":64,"intermediate_size":262144}"#,
    );
    assert_eq!(
        json_of(&["params", &cfg, "--json"]).total,
        11_784_610_185_216
    );
}

/// Each bad input: exit 2 and one message naming the file and the key.
#[test]
fn bad_input_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let base = |extra: &str| {
        format!(
            r#"{{"model_type":"llama","vocab_size":32000,"hidden_size":4096,"num_hidden_layers":32,
                "num_attention_heads":32,"intermediate_size":11008{extra}}}"#
        )
    };
    let cases: Vec<(String, Vec<&str>)> = vec![
        ("/no/such/config.json".into(), vec!["no such file"]),
        (
            write(d, "broken.json", "{\"model_type\": \"llama\", "),
            vec!["broken.json", "invalid JSON at line 1"],
        ),
        (
            write(d, "array.json", "[1, 2]"),
            vec!["expected a JSON object"],
        ),
        (
            write(
                d,
                "missing.json",
                r#"{"model_type":"llama","vocab_size":32000}"#,
            ),
            vec!["missing.json", "missing key `hidden_size`"],
        ),
        (
            write(d, "type.json", &base(r#","num_key_value_heads":"eight""#)),
            vec![
                "type.json",
                "`num_key_value_heads`",
                "\"eight\"",
                "a positive integer",
            ],
        ),
        (
            write(d, "zero.json", &base(r#","num_key_value_heads":0"#)),
            vec!["zero.json", "`num_key_value_heads`", "a positive integer"],
        ),
        (
            write(d, "negative.json", &base(r#","head_dim":-128"#)),
            vec!["negative.json", "`head_dim`", "-128"],
        ),
        (
            write(
                d,
                "divide.json",
                r#"{"model_type":"llama","vocab_size":100,"hidden_size":100,"num_hidden_layers":2,"num_attention_heads":3,"intermediate_size":300}"#,
            ),
            vec![
                "divide.json",
                "`num_attention_heads` = 3 does not divide `hidden_size` = 100",
                "head_dim",
            ],
        ),
        (
            write(
                d,
                "overflow.json",
                r#"{"model_type":"llama","vocab_size":18446744073709551615,"hidden_size":4096,"num_hidden_layers":2,"num_attention_heads":32,"intermediate_size":11008}"#,
            ),
            vec!["overflow.json", "overflows 64 bits"],
        ),
        (
            write(d, "gqa.json", &base(r#","num_key_value_heads":5"#)),
            vec!["gqa.json", "not a multiple of `num_key_value_heads` = 5"],
        ),
        (
            write(
                d,
                "unknown.json",
                r#"{"model_type":"enigma","d_model":768}"#,
            ),
            vec![
                "unknown.json",
                "`model_type` `enigma` is not supported",
                "llmsize presets --types",
                "--assume TYPE",
            ],
        ),
        (
            write(
                d,
                "dense_index.json",
                r#"{"model_type":"qwen3_moe","vocab_size":1000,"hidden_size":256,"num_hidden_layers":4,"num_attention_heads":4,"num_key_value_heads":2,"head_dim":64,"intermediate_size":512,"moe_intermediate_size":128,"num_experts":8,"num_experts_per_tok":2,"mlp_only_layers":[1,9]}"#,
            ),
            vec![
                "dense_index.json",
                "`mlp_only_layers`",
                "below `num_hidden_layers` (4)",
            ],
        ),
        (
            write(
                d,
                "first_dense.json",
                r#"{"model_type":"deepseek_v3","vocab_size":1000,"hidden_size":256,"num_hidden_layers":4,"num_attention_heads":4,"intermediate_size":512,"moe_intermediate_size":128,"n_routed_experts":8,"num_experts_per_tok":2,"first_k_dense_replace":5,"kv_lora_rank":64,"qk_nope_head_dim":32,"qk_rope_head_dim":16,"v_head_dim":32}"#,
            ),
            vec![
                "first_dense.json",
                "`first_k_dense_replace`",
                "at most `num_hidden_layers` (4)",
            ],
        ),
        (
            write(
                d,
                "mla.json",
                r#"{"model_type":"deepseek_v2","vocab_size":1000,"hidden_size":256,"num_hidden_layers":4,"num_attention_heads":4,"intermediate_size":512,"moe_intermediate_size":128,"n_routed_experts":8,"num_experts_per_tok":2,"kv_lora_rank":0,"qk_nope_head_dim":32,"qk_rope_head_dim":16,"v_head_dim":32}"#,
            ),
            // An absent `kv_lora_rank` takes `DeepseekV2Config`'s 512; a zero one is refused.
            vec!["mla.json", "kv_lora_rank", "expected a positive integer"],
        ),
        (
            write(
                d,
                "moe.json",
                r#"{"model_type":"mixtral","vocab_size":32000,"hidden_size":4096,"num_hidden_layers":2,"num_attention_heads":32,"intermediate_size":14336,"num_local_experts":8,"num_experts_per_tok":9}"#,
            ),
            vec![
                "moe.json",
                "`num_experts_per_tok`",
                "at most the number of experts (8)",
            ],
        ),
    ];
    for (path, needles) in cases {
        let r = llmsize(&["params", &path]);
        assert_eq!(r.code, 2, "{path}: {}", r.stderr);
        assert!(r.stdout.is_empty(), "{path}: stdout {}", r.stdout);
        assert!(r.stderr.starts_with("error: "), "{path}: {}", r.stderr);
        assert!(!r.stderr.contains("panicked"), "{path}: {}", r.stderr);
        for n in needles {
            assert!(
                r.stderr.contains(n),
                "{path}: missing {n:?} in {}",
                r.stderr
            );
        }
    }
}

#[test]
fn bad_flags_are_usage_errors() {
    for args in [
        vec!["params", "--hidden", "0", "--layers", "2"],
        vec!["params", "--hidden", "-5", "--layers", "2"],
        vec!["params", "--hidden", "768"],
        vec!["params"],
        vec!["params", "--hidden", "100", "--layers", "2", "--heads", "3"],
    ] {
        let r = llmsize(&args);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(!r.stderr.contains("panicked"), "{args:?}");
    }
}

#[test]
fn an_unknown_type_is_an_error_unless_assumed_and_then_marked_an_estimate() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write(
        dir.path(),
        "mystery.json",
        r#"{"model_type":"mystery","vocab_size":32000,"hidden_size":4096,"num_hidden_layers":32,
            "num_attention_heads":32,"intermediate_size":11008}"#,
    );
    // Never a silent guess: llama-style keys are not enough.
    for cmd in ["params", "memory", "flops"] {
        let r = llmsize(&[cmd, &cfg, "--json"]);
        assert_eq!(r.code, 2, "{cmd}: {}", r.stdout);
        assert!(r.stdout.is_empty(), "{cmd}: no number on stdout");
        assert!(
            r.stderr.contains("`mystery` is not supported") && r.stderr.contains("--assume"),
            "{cmd}: {}",
            r.stderr
        );
    }
    // Asked for, it is counted as llama (Llama-2-7B's shapes: 6,738,415,616) and marked.
    let r = llmsize(&["params", &cfg, "--assume", "llama", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let c: Contract = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(c.total, 6_738_415_616);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["exact"], false);
    assert!(
        v["estimate_basis"]
            .as_str()
            .unwrap()
            .contains("--assume llama")
    );
    let table = llmsize(&["params", &cfg, "--assume", "llama"]);
    assert!(table.stdout.contains("ESTIMATE"), "{}", table.stdout);
    for cmd in ["memory", "flops"] {
        let r = llmsize(&[cmd, &cfg, "--assume", "llama", "--json"]);
        assert_eq!(r.code, 0, "{cmd}: {}", r.stderr);
        let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        assert_eq!(v["exact"], false, "{cmd}");
        let table = llmsize(&[cmd, &cfg, "--assume", "llama"]);
        assert!(table.stdout.contains("ESTIMATE"), "{cmd}: {}", table.stdout);
    }
    // A known type is exact, and says so.
    let v: serde_json::Value =
        serde_json::from_str(&llmsize(&["params", "llama-2-7b", "--json"]).stdout).unwrap();
    assert_eq!(v["exact"], true);
    // `--assume` of a type llmsize does not know either is an error.
    let r = llmsize(&["params", &cfg, "--assume", "enigma"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("--assume enigma"), "{}", r.stderr);
}

#[test]
fn presets_lists_every_truth_model() {
    let r = llmsize(&["presets", "--json"]);
    assert_eq!(r.code, 0);
    let list: Vec<serde_json::Value> = serde_json::from_str(&r.stdout).unwrap();
    // The 78 of the ground truth and the 19 added releases (`presets/SOURCES.md`).
    assert_eq!(list.len(), 78 + 19);
    let gpt2 = list.iter().find(|p| p["id"] == "gpt2").unwrap();
    assert_eq!(gpt2["total"], 124_439_808);
    let oss = list.iter().find(|p| p["id"] == "gpt-oss-120b").unwrap();
    assert_eq!(oss["total"], 116_829_156_672_u64);
}

#[test]
fn snapshots_of_tables_and_explanations() {
    for (name, args) in [
        ("table_gpt2", vec!["params", "gpt2"]),
        ("table_llama_2_7b", vec!["params", "Llama-2-7b-hf"]),
        ("explain_gpt2", vec!["params", "gpt2", "--explain"]),
        (
            "explain_llama_2_7b",
            vec!["params", "Llama-2-7b-hf", "--explain"],
        ),
        ("table_mixtral_8x7b", vec!["params", "Mixtral-8x7B-v0.1"]),
        ("table_deepseek_v3", vec!["params", "DeepSeek-V3"]),
        (
            "explain_deepseek_v3",
            vec!["params", "DeepSeek-V3", "--explain"],
        ),
        (
            "table_bert_base_uncased",
            vec!["params", "bert-base-uncased"],
        ),
        ("table_flan_t5_xl", vec!["params", "flan-t5-xl"]),
        (
            "compare_gpt2_llama",
            vec!["params", "gpt2", "llama-2-7b", "Mixtral-8x7B-v0.1"],
        ),
        (
            "design_article_question",
            vec![
                "params", "--hidden", "4096", "--layers", "32", "--vocab", "32000",
            ],
        ),
    ] {
        let r = llmsize(&args);
        assert_eq!(r.code, 0, "{name}: {}", r.stderr);
        insta::assert_snapshot!(name, r.stdout);
    }
}

#[test]
fn explain_shows_the_articles_derivation() {
    let r = llmsize(&["params", "gpt2", "--explain"]);
    assert!(
        r.stdout.contains("attention           = L·(d·3d + 3d + d·d + d) = 12·(768·2304 + 2304 + 768·768 + 768) = 28,348,416"),
        "{}",
        r.stdout
    );
}

#[test]
fn help_texts() {
    // The help is the first documentation users read; pin it (and the exit-code line), with
    // the exit code and stderr of the run.
    for (name, args) in [
        ("help_main", vec!["--help"]),
        ("help_params", vec!["params", "--help"]),
        ("help_memory", vec!["memory", "--help"]),
        ("help_train", vec!["train", "--help"]),
    ] {
        let r = llmsize(&args);
        assert_eq!(r.code, 0);
        assert!(r.stdout.contains("Exit status: 0 success; 1"), "{name}");
        insta::assert_snapshot!(name, r.snapshot());
    }
}

#[test]
fn a_config_can_be_given_as_its_text() {
    // What Python's `llmsize.params(config.to_dict())` sends: the JSON itself, no file.
    let text = std::fs::read_to_string(truth_config("gpt2")).unwrap();
    let r = llmsize(&["params", &text, "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let j: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    // GPT-2 small: HF GPT2LMHeadModel.num_parameters().
    assert_eq!(j["total"], 124_439_808);
    assert_eq!(j["source"], "inline config");
    let r = llmsize(&["params", "{\"model_type\": 3}"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("inline config"), "{}", r.stderr);
}

#[test]
fn images_join_the_sequence_of_a_vision_language_model() {
    let llava = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/coverage/configs/llava.default.json"
    );
    let kv = |args: &[&str]| {
        let r = llmsize(args);
        assert_eq!(r.code, 0, "{args:?}: {}", r.stderr);
        let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        (
            v["seq_len"].as_u64().unwrap(),
            v["kv_cache_bytes"].as_u64().unwrap(),
        )
    };
    // LLaVA's config fixes `image_seq_length` = 576: 1,000 tokens and 2 images are 2,152
    // positions, whose cache is 32 layers · 2·32·128 · 2 B · 2,152 = 1,128,267,776 bytes.
    let with = kv(&[
        "memory",
        llava,
        "--seq-len",
        "1000",
        "--images",
        "2",
        "--json",
    ]);
    assert_eq!(with, (2_152, 1_128_267_776));
    assert_eq!(kv(&["memory", llava, "--seq-len", "2152", "--json"]), with);
    // Qwen2-VL's positions per image depend on the resolution: asked for, then given.
    let qwen = llava.replace("llava.default", "qwen2_vl.default");
    let r = llmsize(&["memory", &qwen, "--images", "1"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("--image-tokens"), "{}", r.stderr);
    let (seq, _) = kv(&[
        "memory",
        &qwen,
        "--images",
        "2",
        "--image-tokens",
        "128",
        "--json",
    ]);
    assert_eq!(seq, 4096 + 256);
    // The split the coverage truth records for LLaVA (`vlm_split`): text model 6,607,343,616
    // + lm_head 131,072,000 = 6,738,415,616; vision tower 303,507,456 + projector 20,979,712 =
    // 324,487,168. `--text-only` counts the text part alone.
    let v: serde_json::Value =
        serde_json::from_str(&llmsize(&["params", llava, "--json"]).stdout).unwrap();
    assert_eq!(v["total"], 7_062_902_784u64);
    assert_eq!(
        v["modalities"],
        serde_json::json!({"text": 6_738_415_616u64, "vision": 324_487_168u64, "audio": 0})
    );
    let t: serde_json::Value =
        serde_json::from_str(&llmsize(&["params", llava, "--text-only", "--json"]).stdout).unwrap();
    assert_eq!(t["total"], 6_738_415_616u64);
    assert!(t.get("modalities").is_none());
    // A text model has no images to take.
    let r = llmsize(&["memory", "llama-2-7b", "--images", "1"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("no vision tower"), "{}", r.stderr);
}
