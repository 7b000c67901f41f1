//! Quantized releases as shipped: `memory` on a release's published `config.json` sizes the
//! weights in the format its `quantization_config` states, and the bytes agree with the
//! release's published files (sources per file in `tests/fixtures/quant/SOURCES.md`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::cast_precision_loss,
    missing_docs,
    reason = "a test fails loudly on what it did not expect"
)]

mod common;

use common::llmsize;
use serde_json::Value;

fn fixture(name: &str) -> String {
    format!(
        "{}/../../tests/fixtures/quant/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// `memory --json` of a fixture (extra arguments after it), with its exit code.
fn memory(name: &str, extra: &[&str]) -> (i32, Value, String) {
    let path = fixture(name);
    let mut args = vec!["memory", path.as_str(), "--json"];
    args.extend_from_slice(extra);
    let r = llmsize(&args);
    assert!(r.code == 0 || r.code == 1, "{name}: {}", r.stderr);
    (r.code, serde_json::from_str(&r.stdout).unwrap(), r.stderr)
}

fn weights(j: &Value) -> u64 {
    j["weights_bytes"].as_u64().unwrap()
}

/// `ours` within `pct` percent of `published`; returns the signed difference in percent.
fn within(name: &str, ours: u64, published: u64, pct: f64) -> f64 {
    let diff = (ours as f64 - published as f64) / published as f64 * 100.0;
    assert!(
        diff.abs() <= pct,
        "{name}: ours {ours} vs published {published} ({diff:+.4}%)"
    );
    diff
}

fn weights_assumption(j: &Value) -> String {
    j["assumptions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .find(|a| a.starts_with("weights:"))
        .unwrap()
        .to_owned()
}

#[test]
fn gpt_oss_120b_is_mxfp4_and_fits_one_h100() {
    let (code, j, _) = memory("gpt-oss-120b.config.json", &["--gpu", "h100"]);
    // The release is published as running on one 80 GB GPU.
    assert_eq!(code, 0);
    assert_eq!(j["format"], "mxfp4");
    assert_eq!(j["fits"], true);
    let a = weights_assumption(&j);
    assert!(a.contains("quant_method: mxfp4"), "{a}");
    assert!(a.contains("only the routed experts quantized"), "{a}");
    // Published tensor bytes 65,248,815,744 (SOURCES.md): bf16 2,167,371,072 params × 2 +
    // MXFP4 36 layers × 128 experts × (5760 + 2880) rows × 90 blocks × (16 + 1) bytes.
    within("gpt-oss-120b", weights(&j), 65_248_815_744, 1.0);
    assert_eq!(weights(&j), 65_248_815_744);
    // …and the 15 shard files (65,248,893,184 B, headers included).
    within("gpt-oss-120b files", weights(&j), 65_248_893_184, 1.0);
    let mx = j["weights"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["storage"] == "mxfp4")
        .unwrap();
    assert_eq!(
        mx["bytes"].as_u64(),
        Some(36 * 128 * (5760 + 2880) * 90 * 17_u64)
    );
}

#[test]
fn gpt_oss_20b_matches_its_index() {
    let (code, j, _) = memory("gpt-oss-20b.config.json", &["--gpu", "h100"]);
    assert_eq!(code, 0);
    assert_eq!(j["format"], "mxfp4");
    // `metadata.total_size` of the published model.safetensors.index.json.
    within("gpt-oss-20b", weights(&j), 13_761_264_768, 1.0);
    assert_eq!(weights(&j), 13_761_264_768);
}

#[test]
fn deepseek_v3_is_fp8_blocks_with_its_mtp_layer_apart() {
    let (_, j, _) = memory("DeepSeek-V3.config.json", &["--gpu", "h100x8"]);
    assert_eq!(j["format"], "fp8-block");
    let a = weights_assumption(&j);
    assert!(a.contains("128×128 block"), "{a}");
    let loaded = weights(&j);
    let mtp = j["files_only"]["bytes"].as_u64().unwrap();
    assert!(
        j["files_only"]["what"]
            .as_str()
            .unwrap()
            .contains("speculative decoding")
    );
    // The 163 published files (688,586,727,753 B, headers included) hold the 61 layers
    // transformers builds and the multi-token-prediction layer 61.
    within("DeepSeek-V3 files", loaded + mtp, 688_586_727_753, 1.0);
    // Without the MTP layer the files would be 2.2% more than what is loaded: the line apart
    // is what makes them agree.
    assert!((688_586_727_753 - loaded) as f64 / 688_586_727_753.0 > 0.02);
    // The per-tensor table (SOURCES.md) gives layer 61 = 15,424,227,552 B; the router's
    // fp32 `e_score_correction_bias` [256] is a buffer, not a parameter, and is left out
    // (1,024 B per MoE layer), the only difference.
    assert_eq!(mtp, 15_424_227_552 - 1_024);
    // Likewise the 61 loaded layers: the table's 673,150,611,808 B less 58 MoE layers' bias.
    assert_eq!(loaded, 673_150_611_808 - 58 * 1_024);
    // Without files, the weights are the config's estimate; nothing is measured.
    assert!(j.get("weights_estimate_bytes").is_none());
}

#[test]
fn gptq_releases_match_their_files() {
    // Qwen2.5-Coder-1.5B-Instruct-GPTQ-Int4: one file of 1,149,862,960 B (header included).
    let (_, j, _) = memory("Qwen2.5-Coder-1.5B-Instruct-GPTQ-Int4.config.json", &[]);
    assert_eq!(j["format"], "gptq-4bit");
    within("Qwen2.5-Coder-1.5B GPTQ", weights(&j), 1_149_862_960, 1.0);
    // The files differ from the tensors by their safetensors headers alone (~100 KB).
    assert!(1_149_862_960 - weights(&j) < 150_000);
    // Qwen2.5-Coder-7B-Instruct-GPTQ-Int4: two files, 5,575,381,144 B.
    let (_, j, _) = memory("Qwen2.5-Coder-7B-Instruct-GPTQ-Int4.config.json", &[]);
    within("Qwen2.5-Coder-7B GPTQ", weights(&j), 5_575_381_144, 1.0);
    assert!(5_575_381_144 - weights(&j) < 150_000);
}

#[test]
fn awq_release_agrees_with_its_rounded_size() {
    // Only a rounded size is published for Qwen2.5-7B-Instruct-AWQ ("~5.6 GB", SOURCES.md):
    // the test can only say the estimate rounds to it. By hand (AWQ GEMM, g128, no g_idx):
    // 28 layers × Σ (qweight K·N/2 + qzeros (K/128)·(N/8)·4 + scales (K/128)·N·2) + fp16
    // embeddings, head, biases and norms = 5,570,747,392 B.
    let (_, j, _) = memory("Qwen2.5-7B-Instruct-AWQ.config.json", &[]);
    assert_eq!(j["format"], "awq-4bit");
    assert_eq!(weights(&j), 5_570_747_392);
    within("Qwen2.5-7B AWQ (rounded)", weights(&j), 5_600_000_000, 1.0);
}

#[test]
fn compressed_tensors_releases_match_their_headers() {
    // RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8-dynamic: FP8 per channel, bf16 scales.
    let (_, j, _) = memory("Meta-Llama-3.1-8B-Instruct-FP8-dynamic.config.json", &[]);
    assert_eq!(j["format"], "fp8-channel");
    within("Llama-3.1-8B FP8-dynamic", weights(&j), 9_083_953_152, 1.0);
    // RedHatAI/Llama-3.3-70B-Instruct-quantized.w4a16: int4 g128 with actorder (g_idx).
    let (_, j, _) = memory("Llama-3.3-70B-Instruct-quantized.w4a16.config.json", &[]);
    assert_eq!(j["format"], "w4a16");
    within("Llama-3.3-70B w4a16", weights(&j), 39_525_311_232, 1.0);
    // The 8B sibling: 0.52% of its published bytes are not explained by the layout.
    let (_, j, _) = memory(
        "Meta-Llama-3.1-8B-Instruct-quantized.w4a16.config.json",
        &[],
    );
    within("Llama-3.1-8B w4a16", weights(&j), 5_735_587_840, 1.0);
    // nvidia/Llama-3.3-70B-Instruct-FP4 (ModelOpt NVFP4, lm_head ignored).
    let (_, j, _) = memory("Llama-3.3-70B-Instruct-FP4.config.json", &[]);
    assert_eq!(j["format"], "nvfp4");
    within("Llama-3.3-70B NVFP4", weights(&j), 42_709_045_632, 1.0);
}

/// Tensor bytes of a safetensors file, from its header: the data each tensor's offsets span,
/// less bitsandbytes' `quant_state` JSON blobs and `weight_format` flags, which only
/// serialize how to read the weights (they never reach the GPU).
fn bnb_file_bytes(dir: &str) -> (u64, u64) {
    let bytes = std::fs::read(fixture(&format!("{dir}/model.safetensors"))).unwrap();
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap());
    let header: serde_json::Map<String, Value> =
        serde_json::from_slice(&bytes[8..8 + usize::try_from(n).unwrap()]).unwrap();
    let (mut all, mut blobs) = (0, 0);
    for (k, v) in header.iter().filter(|(k, _)| *k != "__metadata__") {
        let o = v["data_offsets"].as_array().unwrap();
        let len = o[1].as_u64().unwrap() - o[0].as_u64().unwrap();
        all += len;
        if k.contains("quant_state") || k.ends_with("weight_format") {
            blobs += len;
        }
    }
    (all, blobs)
}

#[test]
fn bnb_4bit_matches_files_written_by_transformers_and_bitsandbytes() {
    // No published bitsandbytes release with both its config and its byte count was found
    // (SOURCES.md); these files were written by transformers 5.24 + bitsandbytes 0.50.2
    // (`bnb-tiny-gen.py`): a 2-layer Llama, d = 200, f = 515 (ragged 64-blocks), NF4 with
    // double quantization.
    let (all, blobs) = bnb_file_bytes("bnb-tiny-nf4-dq");
    let config = "bnb-tiny-nf4-dq/config.json";
    let (_, j, _) = memory(config, &[]);
    assert_eq!(j["format"], "nf4-dq");
    assert!(weights_assumption(&j).contains("not converted by the config: lm_head"));
    assert_eq!(weights(&j), all - blobs);
    within("bnb nf4-dq (tiny)", weights(&j), all, 1.0);
    // With the files present they win, and the config's estimate stands beside them.
    let (_, j, _) = memory("bnb-tiny-nf4-dq", &[]);
    assert_eq!(j["format"], "files");
    assert_eq!(weights(&j), all);
    assert_eq!(j["weights_estimate_bytes"].as_u64(), Some(all - blobs));
}

#[test]
fn bnb_fp4_and_int8_configs_read() {
    // Same model, FP4 without double quantization: 663,336 B in the written file's
    // tensors (664,452 B less 14 `quant_state` blobs of 1,116 B); LLM.int8(): 1,030,480 B
    // (1,030,494 B less 14 one-byte `weight_format` flags).
    let (_, j, _) = memory("bnb-tiny-fp4/config.json", &[]);
    assert_eq!(j["format"], "bnb-fp4");
    assert_eq!(weights(&j), 663_336);
    let (_, j, _) = memory("bnb-tiny-int8/config.json", &[]);
    assert_eq!(j["format"], "int8");
    assert_eq!(weights(&j), 1_030_480);
}

#[test]
fn dtype_overrides_the_release_with_a_warning() {
    let path = fixture("gpt-oss-20b.config.json");
    let r = llmsize(&["memory", &path, "--dtype", "bf16", "--json"]);
    assert_eq!(r.code, 0);
    let j: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(j["format"], "bf16");
    assert!(
        r.stderr
            .contains("`--dtype` overrides the release's quantization (`quant_method: mxfp4`"),
        "{}",
        r.stderr
    );
    // 20,914,757,184 logical parameters in bf16.
    assert_eq!(weights(&j), 2 * 20_914_757_184);
}

#[test]
fn an_unknown_method_is_sized_as_16_bit_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let mut c: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("gpt-oss-20b.config.json")).unwrap())
            .unwrap();
    c["quantization_config"] = serde_json::json!({"quant_method": "hqq", "nbits": 4});
    let path = dir.path().join("config.json");
    std::fs::write(&path, c.to_string()).unwrap();
    let r = llmsize(&["memory", path.to_str().unwrap(), "--json"]);
    assert_eq!(r.code, 0);
    assert!(
        r.stderr.contains(
            "the quantization method `hqq` is not modelled; the weights are sized as 16-bit"
        ),
        "{}",
        r.stderr
    );
    let j: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(j["format"], "bf16");
}

#[test]
fn a_bad_quantization_field_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut c: Value = serde_json::from_str(
        &std::fs::read_to_string(fixture("Qwen2.5-7B-Instruct-AWQ.config.json")).unwrap(),
    )
    .unwrap();
    c["quantization_config"]["bits"] = serde_json::json!(5);
    let path = dir.path().join("config.json");
    std::fs::write(&path, c.to_string()).unwrap();
    let r = llmsize(&["memory", path.to_str().unwrap()]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("quantization_config.bits") && r.stderr.contains("one of 4"),
        "{}",
        r.stderr
    );
}

#[test]
fn new_dtype_names_are_accepted() {
    let path = fixture("Qwen2.5-Coder-1.5B-Instruct-GPTQ-Int4.config.json");
    for name in [
        "mxfp4",
        "nvfp4",
        "w4a16",
        "w8a8",
        "fp8-channel",
        "gptq-8bit",
    ] {
        let r = llmsize(&["memory", &path, "--dtype", name, "--json"]);
        assert_eq!(r.code, 0, "{name}: {}", r.stderr);
        let j: Value = serde_json::from_str(&r.stdout).unwrap();
        assert_eq!(j["format"], name);
    }
}

/// `flops --json` of a fixture (extra arguments after it), with its stderr.
fn flops(name: &str, extra: &[&str]) -> (Value, String) {
    let path = fixture(name);
    let mut args = vec!["flops", path.as_str(), "--json"];
    args.extend_from_slice(extra);
    let r = llmsize(&args);
    assert_eq!(r.code, 0, "{name}: {}", r.stderr);
    (serde_json::from_str(&r.stdout).unwrap(), r.stderr)
}

#[test]
fn flops_decodes_the_release_as_stored_unless_dtype_is_given() {
    // gpt-oss-120b on an H100, batch 1, 2,048 tokens: 36 layers of 128 experts (k = 4) of
    // 3 × 2,880² matrix weights; the token table 201,088 × 2,880 is read one row (5,760 B in
    // 16-bit); the expert biases and everything else are 16-bit in the release too.
    let (_, j, _) = memory("gpt-oss-120b.config.json", &[]);
    let (_, bf16, _) = memory("gpt-oss-120b.config.json", &["--dtype", "bf16"]);
    let (release, _) = flops("gpt-oss-120b.config.json", &["--gpu", "h100"]);
    let (forced, _) = flops(
        "gpt-oss-120b.config.json",
        &["--gpu", "h100", "--dtype", "bf16"],
    );
    let (r, f) = (&release["speed"]["decode"], &forced["speed"]["decode"]);
    // The weights stored are `memory`'s, in the release's format and in the asked one.
    assert_eq!(r["weights_bytes_stored"], weights(&j));
    assert_eq!(f["weights_bytes_stored"], weights(&bf16));
    assert_eq!(weights(&bf16), 233_658_313_344);
    // The rest, 16-bit in both: 233,658,313,344 − 36·128·3·2,880²·2 (229,323,571,200)
    // = 4,334,742,144 B, less the table (1,158,266,880 B) plus its row: 3,176,481,024 B.
    // Experts read k/E = 1/32: MXFP4 60,914,073,600 / 32 = 1,903,564,800 B; bf16
    // 229,323,571,200 / 32 = 7,166,361,600 B.
    assert_eq!(r["weights_bytes_read"], 3_176_481_024u64 + 1_903_564_800);
    assert_eq!(f["weights_bytes_read"], 3_176_481_024u64 + 7_166_361_600);
    // The KV cache is the same; the explicit bf16 reads 5,262,796,800 B more per step.
    assert_eq!(r["cache_bytes"], f["cache_bytes"]);
    let step = |v: &Value| v["speed"]["decode_bytes_per_step"].as_u64().unwrap();
    assert_eq!(step(&forced) - step(&release), 5_262_796_800);
    let notes = |v: &Value| v["notes"].to_string();
    assert!(notes(&release).contains("decode bytes in the release's format `mxfp4`"));
    assert!(notes(&forced).contains("`--dtype` overrides the release's quantization"));
    // A swept dtype is given too: its bf16 point is the forced one, and its `mxfp4` point,
    // the release's own format, is the release (the rest kept 16-bit), as in `memory`.
    let (swept, _) = flops(
        "gpt-oss-120b.config.json",
        &["--gpu", "h100", "--sweep", "dtype=bf16,mxfp4"],
    );
    let points = swept.as_array().unwrap();
    assert_eq!(step(&points[0]), step(&forced));
    assert_eq!(step(&points[1]), step(&release));
    let (_, mem, _) = memory("gpt-oss-120b.config.json", &["--dtype", "mxfp4"]);
    assert_eq!(weights(&mem), weights(&j));
}

#[test]
fn an_index_without_its_shards_sizes_the_files_from_total_size() {
    // gpt-oss-20b's published config beside an index (its published `total_size`,
    // 13,761,264,768 B; a weight map of two of its tensors in two of its three shards) and no
    // shard: the index's bytes are the weights, and the config's MXFP4 estimate, beside them,
    // is the same number.
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        fixture("gpt-oss-20b.config.json"),
        dir.path().join("config.json"),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("model.safetensors.index.json"),
        r#"{"metadata": {"total_size": 13761264768}, "weight_map": {
            "model.embed_tokens.weight": "model-00000-of-00002.safetensors",
            "lm_head.weight": "model-00002-of-00002.safetensors"}}"#,
    )
    .unwrap();
    let d = dir.path().to_str().unwrap();
    let r = llmsize(&["memory", d, "--gpu", "h100", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let j: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(j["weights_bytes"], 13_761_264_768u64);
    assert_eq!(j["weights_estimate_bytes"], 13_761_264_768u64);
    assert_eq!(j["files"]["used"][0], "model.safetensors.index.json");
    assert!(
        j["assumptions"].to_string().contains(
            "`model.safetensors.index.json`'s `metadata.total_size` stands for the files (2 of its 2 shards are not here)"
        ),
        "{}",
        j["assumptions"]
    );
    assert!(
        r.stderr.contains(
            "`model.safetensors.index.json` names 2 shard(s), 2 of them not here: the weights are its `metadata.total_size`"
        ),
        "{}",
        r.stderr
    );
    // `inspect` counts tensors, which only the shards hold: a missing one is still an error.
    let r = llmsize(&["inspect", d]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr
            .contains("lists shard `model-00000-of-00002.safetensors`, which is missing"),
        "{}",
        r.stderr
    );
}
