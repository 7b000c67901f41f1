//! The messages of issue 11 that were wrong, each pinned with its exact exit code and text:
//! suggestions only for close names, a missing path without preset suggestions, tuned
//! releases counted as their base preset with a note, `sliding_window: 0`, and a closed or
//! full stdout.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    missing_docs,
    reason = "a test fails loudly on what it did not expect"
)]

mod common;

use common::{llmsize, llmsize_in};
use serde_json::Value;

fn preset_config(id: &str) -> String {
    std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../llmsize-adapters/presets/configs")
            .join(format!("{id}.json")),
    )
    .unwrap()
}

fn total(args: &[&str]) -> u64 {
    let r = llmsize(args);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    v["total"].as_u64().unwrap()
}

// --- names -------------------------------------------------------------------------------

#[test]
fn a_name_inside_a_preset_id_is_suggested_first() {
    let r = llmsize(&["params", "llama-3-8b"]);
    assert_eq!(r.code, 2);
    assert_eq!(
        r.stderr,
        "error: `llama-3-8b` is neither a file, a directory nor a built-in preset\n\n\
         hint: did you mean: Meta-Llama-3-8B? also near, other models: Llama-3.1-8B (3.1, not 3), llama-13b (13b, not 3-8b); `llmsize presets` lists them all\n"
    );
}

/// A release that is not a preset is never offered as a neighbouring one: `Mistral-7B-v0.1`
/// and `-v0.3` differ from v0.2 in vocabulary or window, so each is named another model with
/// how its name's numbers differ.
#[test]
fn another_version_is_never_offered_as_the_same_model() {
    let r = llmsize(&["params", "Mistral-7B-v0.2"]);
    assert_eq!(r.code, 2);
    assert!(!r.stderr.contains("did you mean"), "{}", r.stderr);
    assert!(
        r.stderr.contains(
            "the nearest presets are other models: Mistral-7B-v0.1 (v0.1, not v0.2), \
             Mistral-7B-v0.3 (v0.3, not v0.2), "
        ),
        "{}",
        r.stderr
    );
}

#[test]
fn a_repo_id_not_cached_gets_suggestions_and_the_online_hint() {
    let r = llmsize(&["params", "meta-llama/Llama-3-8B"]);
    assert_eq!(r.code, 2);
    assert_eq!(
        r.stderr,
        "error: `meta-llama/Llama-3-8B` is neither a built-in preset nor in the local Hugging Face cache\n\n\
         hint: did you mean: Meta-Llama-3-8B? also near, other models: Llama-3.1-8B (3.1, not 3), llama-13b (13b, not 3-8B); pass `--online` to read it from the Hub (HF_ENDPOINT, HF_TOKEN); `llmsize presets` lists the presets\n"
    );
}

#[test]
fn a_name_close_to_nothing_gets_no_suggestions() {
    // `qwerty` is close to no preset id (under the 0.85 bar).
    let r = llmsize(&["params", "qwerty"]);
    assert_eq!(r.code, 2);
    assert_eq!(
        r.stderr,
        "error: `qwerty` is neither a file, a directory nor a built-in preset\n\n\
         hint: `llmsize presets` lists them all\n"
    );
}

#[test]
fn a_missing_path_names_the_missing_part_and_no_presets() {
    let dir = tempfile::tempdir().unwrap();
    let r = llmsize_in(
        dir.path().to_str().unwrap(),
        &["params", "./nope/config.json"],
    );
    assert_eq!(r.code, 2);
    assert_eq!(
        r.stderr,
        "error: `./nope/config.json`: no such file or directory\n\n\
         hint: `./nope` does not exist; check the path\n"
    );
    // Deeper than a repo id (`org/name`) is a path too.
    let r = llmsize_in(dir.path().to_str().unwrap(), &["params", "models/llama/7b"]);
    assert_eq!(r.code, 2);
    assert_eq!(
        r.stderr,
        "error: `models/llama/7b`: no such file or directory\n\n\
         hint: `models` does not exist; check the path\n"
    );
}

#[test]
fn a_tuned_release_is_counted_as_its_base_with_a_note() {
    for (name, base) in [
        ("meta-llama/Llama-3.1-8B-Instruct", "Llama-3.1-8B"),
        ("Llama-3.3-70B-Instruct", "Llama-3.3-70B-Instruct"),
        ("Qwen3-30B-A3B-Instruct-2507", "Qwen3-30B-A3B"),
        ("google/gemma-2-9b-it", "gemma-2-9b"),
        ("google/gemma-3-27b-it", "gemma-3-27b-pt"),
        ("Llama-2-7b-chat-hf", "Llama-2-7b-hf"),
    ] {
        let r = llmsize(&["params", name]);
        assert_eq!(r.code, 0, "{name}: {}", r.stderr);
        let shown = name.rsplit('/').next().unwrap();
        if name == base {
            // A tuned release that is a preset of its own is read from its own file.
            assert_eq!(r.stderr, "", "{name}");
        } else {
            assert_eq!(
                r.stderr,
                format!(
                    "warning: {shown}: counted as the base model `{base}`: instruction tuning does not change the shapes\n"
                ),
            );
        }
        assert_eq!(
            total(&["params", name, "--json"]),
            total(&["params", base, "--json"]),
            "{name}"
        );
    }
    // Llama-3.1-8B and its Instruct release: 8,030,261,248 (the Meta model card's 8.03B).
    assert_eq!(
        total(&["params", "Llama-3.1-8B-Instruct", "--json"]),
        8_030_261_248
    );
}

#[test]
fn a_tuned_release_with_other_shapes_is_not_its_base() {
    // Mixtral-8x22B-Instruct-v0.1 has a 32,768-token vocabulary, the base 32,000; and
    // Mistral-7B-Instruct-v0.2 is not a tuning of the v0.1 preset.
    for name in ["Mixtral-8x22B-Instruct-v0.1", "Mistral-7B-Instruct-v0.2"] {
        let r = llmsize(&["params", name]);
        assert_eq!(r.code, 2, "{name}");
        assert!(
            r.stderr.starts_with(&format!("error: `{name}` is neither")),
            "{}",
            r.stderr
        );
    }
}

#[test]
fn the_added_presets_answer_by_name() {
    // Totals from `transformers` 5.24 (`presets/added.json`).
    for (name, want) in [
        ("Llama-3.1-70B", 70_553_706_496),
        ("openai/gpt-oss-120b", 116_829_156_672),
        ("DeepSeek-R1", 671_026_404_352),
        ("Qwen3-235B-A22B", 235_093_634_560),
        ("microsoft/phi-4", 14_659_507_200),
        ("Mistral-Small-24B-Base-2501", 23_572_403_200),
        // The Hub's safetensors totals of the Gemma 3 releases, vision tower included.
        ("gemma-3-27b-it", 27_432_406_640),
        ("google/gemma-3-12b-pt", 12_187_325_040),
        ("mistralai/Mistral-7B-v0.3", 7_248_023_552),
        ("DeepSeek-R1-Distill-Qwen-1.5B", 1_777_088_000),
        ("Qwen3-Coder-480B-A35B-Instruct", 480_154_875_392),
        ("meta-llama/Llama-4-Scout-17B-16E", 108_641_793_536),
        ("Llama-4-Maverick-17B-128E-Instruct", 401_583_781_376),
    ] {
        assert_eq!(total(&["params", name, "--json"]), want, "{name}");
    }
}

// --- config fields -----------------------------------------------------------------------

#[test]
fn sliding_window_zero_is_refused_where_a_layer_would_use_it() {
    let dir = tempfile::tempdir().unwrap();
    let text = preset_config("Mistral-7B-v0.1")
        .replace("\"sliding_window\": 4096", "\"sliding_window\": 0");
    assert!(text.contains("\"sliding_window\": 0"));
    std::fs::write(dir.path().join("config.json"), text).unwrap();
    let r = llmsize_in(dir.path().to_str().unwrap(), &["memory", "config.json"]);
    assert_eq!(r.code, 2);
    assert_eq!(r.stdout, "");
    assert_eq!(
        r.stderr,
        "error: `config.json`: key `sliding_window` is 0: expected a window of at least 1 token, or null (no sliding window)\n"
    );
    let r = llmsize(&["params", "Mistral-7B-v0.1", "--set", "sliding_window=0"]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr
            .contains("key `sliding_window` is 0: expected a window of at least 1 token")
    );
}

/// A config transformers refuses is refused naming the key: Nemotron-H Omni's tower without its
/// own `video_temporal_patch_size` fails `NemotronHOmniConfig.validate_architecture` (the
/// tower's default, none, is not the composite's 2).
#[test]
fn a_config_transformers_refuses_is_refused_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/coverage/configs/nemotron_h_omni.default.json"
    );
    // As text: the config holds Python's `Infinity`, which serde_json does not read. The
    // tower's key is the one indented under `vision_config`, its last entry.
    let text = std::fs::read_to_string(path).unwrap();
    let tower_key = ",\n  \"video_temporal_patch_size\": 2\n";
    assert_eq!(text.matches(tower_key).count(), 1);
    let text = text.replace(tower_key, "\n");
    std::fs::write(dir.path().join("config.json"), text).unwrap();
    let r = llmsize_in(dir.path().to_str().unwrap(), &["params", "config.json"]);
    assert_eq!(r.code, 2);
    assert_eq!(r.stdout, "");
    assert!(
        r.stderr.contains(
            "key `vision_config.video_temporal_patch_size` is null: expected equal to `video_temporal_patch_size` (2)"
        ),
        "{}",
        r.stderr
    );
}

#[test]
fn sliding_window_zero_with_sliding_off_is_what_transformers_writes() {
    // `Qwen2MoeConfig` stores `sliding_window = 0` when `use_sliding_window` is false.
    let r = llmsize(&[
        "memory",
        "Qwen1.5-MoE-A2.7B",
        "--set",
        "sliding_window=0",
        "--set",
        "use_sliding_window=false",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
}

#[test]
fn zero_head_sizes_are_refused_naming_the_key() {
    for key in ["head_dim", "num_key_value_heads", "num_attention_heads"] {
        let r = llmsize(&["params", "Mistral-7B-v0.1", "--set", &format!("{key}=0")]);
        assert_eq!(r.code, 2, "{key}");
        assert_eq!(
            r.stderr,
            format!(
                "error: `preset Mistral-7B-v0.1`: key `{key}` is 0: expected a positive integer\n"
            )
        );
    }
}

// --- stdout ------------------------------------------------------------------------------

#[test]
fn a_closed_stdout_exits_141_quietly() {
    // The reading end is closed before llmsize starts, so its first write fails with EPIPE
    // every time (no race with a reader such as `head -0`).
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_llmsize"))
        .args(["presets"])
        .stdout(writer)
        .env("HOME", "/nonexistent-home-for-tests")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(141));
    assert_eq!(String::from_utf8(out.stderr).unwrap(), "");
}

#[cfg(target_os = "linux")]
#[test]
fn a_full_stdout_exits_2_saying_so() {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_llmsize"))
        .args(["params", "gpt2"])
        .stdout(full)
        .env("HOME", "/nonexistent-home-for-tests")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        "error: cannot write the output to stdout: No space left on device (os error 28)\n"
    );
}

/// A metadata-only GGUF (no tensors) of a small Phi-3, whose layers all slide when a window
/// is set, with `phi3.attention.sliding_window` = `window`.
fn phi3_gguf(window: u32) -> Vec<u8> {
    common::metadata_gguf(
        "phi3",
        &[
            ("phi3.block_count", 2),
            ("phi3.embedding_length", 256),
            ("phi3.feed_forward_length", 512),
            ("phi3.attention.head_count", 4),
            ("phi3.attention.head_count_kv", 4),
            ("phi3.context_length", 4096),
            ("phi3.vocab_size", 320),
            ("phi3.attention.sliding_window", window),
        ],
    )
}

#[test]
fn a_gguf_window_of_0_is_llama_cpp_s_no_window() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    std::fs::write(dir.path().join("none.gguf"), phi3_gguf(0)).unwrap();
    std::fs::write(dir.path().join("w2047.gguf"), phi3_gguf(2047)).unwrap();
    let kv = |file: &str| {
        // transformers' cache: llama.cpp (a GGUF's default view) keeps Phi-3's whole context.
        let r = llmsize_in(
            d,
            &[
                "memory",
                file,
                "--seq-len",
                "4096",
                "--runtime",
                "transformers",
                "--json",
            ],
        );
        assert_eq!(r.code, 0, "{file}: {}", r.stderr);
        let v: Value = serde_json::from_str(&r.stdout).unwrap();
        v["kv_cache_bytes"].as_u64().unwrap()
    };
    // K and V of 2 layers × 256 wide × bf16: 2,048 B per token; the whole 4,096 tokens with no
    // window, the window's 2,046 kept (transformers keeps `sliding_window − 1`) with 2047.
    assert_eq!(kv("none.gguf"), 2_048 * 4_096);
    assert_eq!(kv("w2047.gguf"), 2_048 * 2_046);
}

/// A type whose running llmsize does not model (Reformer's cache of past hidden states and hash
/// buckets, its LSH attention) has exact parameters (enwik8's 149,182,980, the oracle's count in
/// `tests/fixtures/coverage/extra/h7.json`) and refuses memory, FLOPs and training, naming what
/// is left out, instead of answering a figure without it.
#[test]
fn what_a_type_does_not_model_is_refused_not_left_out() {
    let config = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/coverage/extra/configs/reformer.enwik8.json"
    );
    assert_eq!(total(&["params", config, "--json"]), 149_182_980);
    for command in ["memory", "flops", "train"] {
        let r = llmsize(&[command, config]);
        assert_eq!(r.code, 2, "{command}: {}", r.stdout);
        assert!(r.stdout.is_empty(), "{command}: {}", r.stdout);
        assert!(
            r.stderr.contains("`past_buckets_states`") && r.stderr.contains("not answered"),
            "{command}: {}",
            r.stderr
        );
    }
}
