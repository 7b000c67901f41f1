//! Weight files as they are found: split GGUF, a tensor in two files, HF shards next to
//! Mistral's consolidated checkpoint, tensors the name table does not place, an index that
//! lies, and GGUF metadata with bad values. The fixtures in `tests/fixtures/files/` are
//! written by the reference writers (gguf-py's `GGUFWriter`, whose `split_max_tensors` writes
//! llama.cpp's split format, and `safetensors`): see `make.py` there.
//!
//! The model is a tiny llama (2 layers, d = 16, 2 heads of 8, 1 KV head, `d_ff` = 32, V = 32,
//! untied), 5,712 parameters by hand: embeddings 512, attention 2·(256 + 128 + 128 + 256) =
//! 1,536, ffn 2·3·512 = 3,072, norms 2·32 + 16 = 80, `lm_head` 512. Its GGUF stores the
//! matrices in F16 (5,632 parameters, 11,264 bytes) and the norms in F32 (80, 320 bytes).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    missing_docs,
    reason = "a test fails loudly on what it did not expect"
)]

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use common::{llmsize, llmsize_in};
use serde_json::Value;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/files")
}

fn fx(rel: &str) -> String {
    fixtures().join(rel).display().to_string()
}

fn json(args: &[&str]) -> Value {
    let run = llmsize(args);
    assert_eq!(run.code, 0, "{}", run.stderr);
    serde_json::from_str(&run.stdout).unwrap()
}

/// Copy fixture files into a fresh directory.
fn copy(files: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for f in files {
        let from = fixtures().join(f);
        let name = Path::new(f).file_name().unwrap();
        fs::copy(from, dir.path().join(name)).unwrap();
    }
    dir
}

const TOTAL: u64 = 5_712;
/// F16 matrices and F32 norms of the tiny llama.
const WEIGHT_BYTES: u64 = 11_264 + 320;

const SHARDS: [&str; 3] = [
    "gguf-split/tiny-00001-of-00003.gguf",
    "gguf-split/tiny-00002-of-00003.gguf",
    "gguf-split/tiny-00003-of-00003.gguf",
];

#[test]
fn a_split_gguf_is_every_shard_from_any_shard() {
    // The unsplit file, written by the same writer from the same tensors.
    let whole = json(&["inspect", "--json", &fx("gguf-whole/tiny.gguf")]);
    assert_eq!(whole["total"], TOTAL);
    assert_eq!(whole["parameter_bytes"], WEIGHT_BYTES);
    for shard in SHARDS {
        let i = json(&["inspect", "--json", &fx(shard)]);
        assert_eq!(i["name"], "tiny", "{shard}");
        assert_eq!(i["total"], whole["total"], "{shard}");
        assert_eq!(i["components"], whole["components"], "{shard}");
        assert_eq!(i["parameter_bytes"], whole["parameter_bytes"], "{shard}");
        let files: Vec<&str> = i["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["file"].as_str().unwrap())
            .collect();
        assert_eq!(
            files,
            [
                "tiny-00001-of-00003.gguf",
                "tiny-00002-of-00003.gguf",
                "tiny-00003-of-00003.gguf"
            ]
        );
        // `params` reads the first shard's metadata and every shard's tensors (the untied
        // `output.weight` is in the last one: 8 + 8 + 5 tensors).
        let p = json(&["params", "--json", &fx(shard)]);
        assert_eq!(p["total"], TOTAL, "{shard}");
        assert_eq!(p["tied_embeddings"], false, "{shard}");
        let m = json(&["memory", "--json", &fx(shard)]);
        assert_eq!(m["weights_bytes"], WEIGHT_BYTES, "{shard}");
        assert_eq!(m["files"]["used"].as_array().unwrap().len(), 3);
        let a = llmsize(&["audit", &fx(shard)]);
        assert_eq!(a.code, 0, "{}", a.stdout);
        assert!(
            a.stdout
                .contains("total             5,712    5,712           =")
        );
    }
    // A directory holding the shards is one model.
    let d = json(&["inspect", "--json", &fx("gguf-split")]);
    assert_eq!(d["total"], TOTAL);
    let t = llmsize(&["inspect", &fx(SHARDS[1])]);
    assert!(
        t.stdout.starts_with(
            "tiny: GGUF, 3 file(s), 13.62 KiB (13.95 kB) (21 tensors)\n\
         files  path                      why\n\
         used   tiny-00001-of-00003.gguf\n\
         used   tiny-00002-of-00003.gguf\n\
         used   tiny-00003-of-00003.gguf\n"
        ),
        "{}",
        t.stdout
    );
}

#[test]
fn a_missing_shard_is_named() {
    let dir = copy(&[SHARDS[0], SHARDS[2]]);
    let run = llmsize_in(
        dir.path().to_str().unwrap(),
        &["inspect", "tiny-00003-of-00003.gguf"],
    );
    assert_eq!(run.code, 2);
    assert_eq!(
        run.stderr,
        "error: `tiny-00003-of-00003.gguf` is part of a split GGUF of 3 files; `tiny-00002-of-00003.gguf` (shard 2) is missing\n\n\
         hint: download every shard next to the others (llama.cpp's gguf-split names them `PREFIX-0000N-of-0000M.gguf`), or pass `--online` to read the headers from the Hub\n"
    );
    assert_eq!(run.stdout, "");
}

#[test]
fn a_renamed_shard_cannot_find_the_others() {
    let dir = copy(&[SHARDS[1]]);
    fs::rename(
        dir.path().join("tiny-00002-of-00003.gguf"),
        dir.path().join("part2.gguf"),
    )
    .unwrap();
    let run = llmsize_in(dir.path().to_str().unwrap(), &["params", "part2.gguf"]);
    assert_eq!(run.code, 2);
    assert_eq!(
        run.stderr,
        "error: `part2.gguf` is shard 2 of a split GGUF of 3 files (`split.no` = 1, `split.count` = 3), but its name does not end in `-00002-of-00003.gguf`, so the other shards cannot be found\n\n\
         hint: keep the shards' names as llama.cpp's gguf-split writes them (`PREFIX-00001-of-0000N.gguf` …), side by side\n"
    );
}

#[test]
fn a_tensor_in_two_files_is_an_error_naming_both() {
    let run = llmsize(&["inspect", &fx("duplicate")]);
    assert_eq!(run.code, 2);
    assert_eq!(
        run.stderr,
        "error: tensor `model.norm.weight` is in two files, `a.safetensors` and `b.safetensors`\n\n\
         hint: the files hold two copies of (part of) the weights, which would be counted twice: pass the directory or file of one checkpoint\n"
    );
    // `memory` measures the same files and refuses them the same way.
    assert_eq!(llmsize(&["memory", &fx("duplicate")]).code, 2);
}

const MISTRAL_HF: [&str; 2] = [
    "model-00001-of-00002.safetensors",
    "model-00002-of-00002.safetensors",
];

fn used(files: &Value) -> Vec<&str> {
    files
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["file"].as_str().or(f.as_str()).unwrap())
        .collect()
}

#[test]
fn hf_shards_beside_a_consolidated_checkpoint_are_read_once() {
    // With the index: its shards are read, the consolidated copy is named as ignored.
    let i = json(&["inspect", "--json", &fx("mistral")]);
    assert_eq!(i["total"], TOTAL);
    assert_eq!(used(&i["files"]), MISTRAL_HF);
    assert_eq!(
        i["ignored"],
        serde_json::json!([{
            "file": "consolidated.safetensors",
            "why": "Mistral's consolidated checkpoint, the same weights as the HF shards `model.safetensors.index.json` names, which are read"
        }])
    );
    let m = json(&["memory", "--json", &fx("mistral")]);
    // 5,712 F16 parameters, stored once.
    assert_eq!(m["weights_bytes"], 2 * TOTAL);
    assert_eq!(used(&m["files"]["used"]), MISTRAL_HF);
    assert_eq!(m["files"]["ignored"][0]["file"], "consolidated.safetensors");
    let t = llmsize(&["memory", &fx("mistral")]);
    assert!(t.stdout.ends_with(
        "files    path                              why\n\
         used     model-00001-of-00002.safetensors\n\
         used     model-00002-of-00002.safetensors\n\
         ignored  consolidated.safetensors          Mistral's consolidated checkpoint, the same weights as the HF shards `model.safetensors.index.json` names, which are read\n"
    ), "{}", t.stdout);

    // Without the index, config.json still picks the HF shards.
    let dir = copy(&[
        "mistral/config.json",
        "mistral/consolidated.safetensors",
        "mistral/model-00001-of-00002.safetensors",
        "mistral/model-00002-of-00002.safetensors",
    ]);
    let d = dir.path().to_str().unwrap();
    let i = json(&["inspect", "--json", d]);
    assert_eq!(i["total"], TOTAL);
    assert_eq!(used(&i["files"]), MISTRAL_HF);
    assert_eq!(
        i["ignored"][0]["why"],
        "Mistral's consolidated checkpoint, the same weights as the HF shards, which are read (config.json describes them)"
    );
    // Without config.json, the consolidated checkpoint is read and the HF shards named.
    fs::remove_file(dir.path().join("config.json")).unwrap();
    let i = json(&["inspect", "--json", d]);
    assert_eq!(used(&i["files"]), ["consolidated.safetensors"]);
    assert_eq!(
        i["ignored"].as_array().unwrap().len(),
        2,
        "{}",
        i["ignored"]
    );
}

#[test]
fn unrecognised_tensors_count_in_memory_as_other() {
    // A vision projector and a vision block the name table does not place: 2 F16 matrices of
    // 16 × 16 = 512 parameters, 1,024 bytes; and `rope_freqs.weight`, a saved buffer (F32 [4],
    // 16 bytes), loaded with the weights though it is not a parameter.
    let path = fx("gguf-unknown/tiny-mm.gguf");
    let run = llmsize(&["memory", "--json", &path]);
    assert_eq!(run.code, 0);
    let m: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(m["weights_bytes"], WEIGHT_BYTES + 16 + 1_024);
    assert_eq!(
        m["weights"],
        serde_json::json!([
            {"storage": "F16", "params": 5_632, "bytes": 11_264},
            {"storage": "F32", "params": 80, "bytes": 320},
            {"storage": "buffers", "params": 0, "bytes": 16},
            {"storage": "other", "params": 512, "bytes": 1_024},
        ])
    );
    assert_eq!(
        run.stderr,
        "warning: tiny-mm: 2 tensor(s) the name table does not recognise (1024 bytes) are counted as `other`: `mm.input_projection.weight`, `v.blk.0.attn_q.weight`\n"
    );
    // `inspect` lists them, outside the parameter count.
    let i = json(&["inspect", "--json", &path]);
    assert_eq!(i["total"], TOTAL);
    assert_eq!(i["unknown"].as_array().unwrap().len(), 2);
}

#[test]
fn an_index_that_lies_is_a_disagreement_in_audit_and_a_warning_elsewhere() {
    // The index names `model.layers.1.mlp.extra_proj.weight` (no shard holds it), leaves out
    // `lm_head.weight` (the second shard holds it) and declares 100 bytes too many: the
    // tensors hold 5,712 F16 parameters = 11,424 bytes.
    let path = fx("lying-index");
    let lines = [
        "`model.safetensors.index.json` names 1 tensor(s) that no shard holds: `model.layers.1.mlp.extra_proj.weight`",
        "1 tensor(s) in `model-00002-of-00002.safetensors` are not named by `model.safetensors.index.json`: `lm_head.weight`",
        "`model.safetensors.index.json` declares `metadata.total_size` = 11524 bytes, but the shards' tensors hold 11424",
    ];
    let a = llmsize(&["audit", &path]);
    assert_eq!(a.code, 1, "{}", a.stderr);
    // Every component agrees: only the index is wrong.
    assert!(
        a.stdout
            .contains("total             5,712    5,712           =")
    );
    let expected = format!(
        "\nthe files disagree with their index:\n  {}\n\ndisagree: see the differences above\n",
        lines.join("\n  ")
    );
    assert!(a.stdout.ends_with(&expected), "{}", a.stdout);
    let aj = llmsize(&["audit", "--json", &path]);
    assert_eq!(aj.code, 1);
    let aj: Value = serde_json::from_str(&aj.stdout).unwrap();
    assert_eq!(aj["agrees"], false);
    assert_eq!(aj["index_disagreements"], serde_json::json!(lines));

    // Elsewhere a warning: `memory` still answers, from the shards as they are.
    let m = llmsize(&["memory", &path]);
    assert_eq!(m.code, 0);
    let warned: Vec<String> = lines
        .iter()
        .map(|l| format!("warning: lying-index: {l}"))
        .collect();
    assert_eq!(m.stderr, format!("{}\n", warned.join("\n")));
    let i = json(&["inspect", "--json", &path]);
    assert_eq!(i["total"], TOTAL);
    assert_eq!(i["index_disagreements"], serde_json::json!(lines));
    // The honest index of the same layout agrees.
    assert_eq!(llmsize(&["audit", &fx("mistral")]).code, 0);
}

/// `llmsize params FILE` in the fixtures' `gguf-bad` folder: exit code and stderr.
fn bad(file: &str) -> (i32, String) {
    let run = llmsize_in(&fx("gguf-bad"), &["params", file]);
    (run.code, run.stderr)
}

#[test]
fn gguf_messages_name_the_gguf_key_its_type_and_value() {
    assert_eq!(
        bad("block-count-string.gguf"),
        (
            2,
            "error: `block-count-string.gguf`: key `llama.block_count` is a string \"abc\": expected an unsigned integer\n".into()
        )
    );
    assert_eq!(
        bad("block-count-zero.gguf"),
        (
            2,
            "error: `block-count-zero.gguf`: key `llama.block_count` is a u32 0: expected a positive integer\n".into()
        )
    );
    assert_eq!(
        bad("embedding-negative.gguf"),
        (
            2,
            "error: `embedding-negative.gguf`: key `llama.embedding_length` is an i32 -16: expected an unsigned integer\n".into()
        )
    );
    assert_eq!(
        bad("arch-number.gguf"),
        (
            2,
            "error: `arch-number.gguf`: key `general.architecture` is a u32 7: expected a string naming the model architecture (e.g. `llama`)\n".into()
        )
    );
    // Keys read later by the config reader are named as the file has them, never as the
    // `config.json` keys they become (`intermediate_size`, `num_key_value_heads`).
    assert_eq!(
        bad("ffn-missing.gguf"),
        (
            2,
            "error: `ffn-missing.gguf`: missing key `llama.feed_forward_length`: expected a positive integer\n".into()
        )
    );
    assert_eq!(
        bad("kv-heads-3.gguf"),
        (
            2,
            "error: `kv-heads-3.gguf`: key `llama.attention.head_count_kv` is a u32 3: expected a divisor of `llama.attention.head_count` = 2 (whole groups of query heads per key/value head)\n".into()
        )
    );
}

/// Shards whose names are not UTF-8 are found by their bytes (the name is shown lossily).
#[cfg(unix)]
#[test]
fn split_shards_with_names_that_are_not_utf8_are_found() {
    use std::ffi::OsString;
    use std::os::unix::ffi::OsStringExt;
    let dir = tempfile::tempdir().unwrap();
    for (i, shard) in SHARDS.iter().enumerate() {
        let mut name = b"ti\xffny".to_vec();
        name.extend_from_slice(format!("-{:05}-of-00003.gguf", i + 1).as_bytes());
        fs::copy(
            fixtures().join(shard),
            dir.path().join(OsString::from_vec(name)),
        )
        .unwrap();
    }
    let i = json(&["inspect", "--json", dir.path().to_str().unwrap()]);
    assert_eq!(i["total"], TOTAL);
    assert_eq!(
        used(&i["files"]),
        [
            "ti\u{fffd}ny-00001-of-00003.gguf",
            "ti\u{fffd}ny-00002-of-00003.gguf",
            "ti\u{fffd}ny-00003-of-00003.gguf"
        ]
    );
}

#[test]
fn a_folder_of_gguf_models_counts_a_split_set_as_one() {
    let dir = copy(&[SHARDS[0], SHARDS[1], SHARDS[2], "gguf-whole/tiny.gguf"]);
    let run = llmsize_in(dir.path().to_str().unwrap(), &["inspect", "."]);
    assert_eq!(run.code, 2);
    assert_eq!(
        run.stderr,
        "error: `.` holds 2 GGUF models\n\nhint: name one of them: tiny-00001-of-00003.gguf (3 shards), tiny.gguf\n"
    );
    // A PyTorch pickle beside them (Mistral's `consolidated.00.pth`) is named, not read.
    fs::remove_file(dir.path().join("tiny.gguf")).unwrap();
    fs::write(dir.path().join("consolidated.00.pth"), b"not read").unwrap();
    let i = json(&["inspect", "--json", dir.path().to_str().unwrap()]);
    assert_eq!(i["total"], TOTAL);
    assert_eq!(
        i["ignored"],
        serde_json::json!([{"file": "consolidated.00.pth", "why": "a PyTorch pickle, not read"}])
    );
}

#[test]
fn numbered_safetensors_shards_without_an_index_must_all_be_there() {
    let dir = copy(&[
        "mistral/config.json",
        "mistral/model-00002-of-00002.safetensors",
    ]);
    let run = llmsize_in(dir.path().to_str().unwrap(), &["inspect", "."]);
    assert_eq!(run.code, 2);
    assert_eq!(
        run.stderr,
        "error: `.` holds 1 of the 2 shards `model-…-of-00002.safetensors`; missing: `model-00001-of-00002.safetensors`\n\n\
         hint: download every shard (and `model.safetensors.index.json`), or pass `--online` to read the headers from the Hub\n"
    );
    // With both shards and no index, the checkpoint is whole.
    fs::copy(
        fixtures().join("mistral/model-00001-of-00002.safetensors"),
        dir.path().join("model-00001-of-00002.safetensors"),
    )
    .unwrap();
    let i = json(&["inspect", "--json", dir.path().to_str().unwrap()]);
    assert_eq!(i["total"], TOTAL);
}
