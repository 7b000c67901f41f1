//! The readers on real files: the header of all-MiniLM-L6-v2's `model.safetensors` and small
//! GGUF files written by gguf-py (`fixtures/gguf/make_gguf.py`).

#![allow(
    clippy::indexing_slicing,
    clippy::cast_possible_truncation,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code: a panic is a test failure"
)]

use std::collections::BTreeMap;
use std::fs;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use llmsize_weights::gguf::{self, GgmlType, GgufHeader};
use llmsize_weights::names::{Category, category_of_gguf, category_of_hf};
use llmsize_weights::safetensors::{self, Dtype};
use serde_json::Value;

fn fixture(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(path)
}

/// Length of the real all-MiniLM-L6-v2 `model.safetensors` (see the fixture's README).
const MINILM_FILE_LEN: u64 = 90_868_376;

#[test]
fn ok_all_minilm_l6_v2_header() {
    let bytes = fs::read(fixture("all-minilm-l6-v2/model.safetensors.header")).unwrap();
    let n = safetensors::header_len(&bytes[..8], MINILM_FILE_LEN, "model.safetensors").unwrap();
    assert_eq!(n, 11_408);
    assert_eq!(bytes.len() as u64, 8 + n);
    let h = safetensors::parse_header(&bytes, MINILM_FILE_LEN, "model.safetensors").unwrap();
    assert_eq!(h.tensors.len(), 104);
    assert_eq!(h.data_len, 90_856_960);
    assert_eq!(h.total_bytes, h.data_len);
    assert_eq!(h.total_elements, 22_713_728);
    assert_eq!(h.metadata.get("format").map(String::as_str), Some("pt"));
    // File order: the I64 position_ids buffer comes first.
    let first = &h.tensors[0];
    assert_eq!(first.name, "embeddings.position_ids");
    assert_eq!(
        (first.dtype, first.shape.as_slice()),
        (Dtype::I64, &[1, 512][..])
    );
    assert_eq!(h.tensors.last().unwrap().name, "pooler.dense.weight");
    assert!(h.tensors.iter().skip(1).all(|t| t.dtype == Dtype::F32));

    // Split by category: the parameters equal the ground truth for BertModel, component by
    // component (shared/truth/truth.json, `all-MiniLM-L6-v2`), and position_ids is a buffer.
    let mut by_category: BTreeMap<&str, u64> = BTreeMap::new();
    for t in &h.tensors {
        *by_category
            .entry(category_of_hf(&t.name).as_str())
            .or_default() += t.elements;
    }
    let truth: BTreeMap<&str, u64> = [
        ("token_embedding", 11_720_448),
        ("position_embedding", 196_608),
        ("token_type_embedding", 768),
        ("attention", 3_548_160),
        ("ffn", 7_089_408),
        ("norm", 9_984),
        ("pooler", 147_840),
        ("buffer", 512),
    ]
    .into_iter()
    .collect();
    assert_eq!(by_category, truth);
    let parameters: u64 = h
        .tensors
        .iter()
        .filter(|t| category_of_hf(&t.name).is_parameter())
        .map(|t| t.elements)
        .sum();
    assert_eq!(parameters, 22_713_216);
}

#[test]
fn ok_all_minilm_config_matches_header() {
    let config: Value =
        serde_json::from_str(&fs::read_to_string(fixture("all-minilm-l6-v2/config.json")).unwrap())
            .unwrap();
    let bytes = fs::read(fixture("all-minilm-l6-v2/model.safetensors.header")).unwrap();
    let h = safetensors::parse_header(&bytes, MINILM_FILE_LEN, "model.safetensors").unwrap();
    let get = |k: &str| config[k].as_u64().unwrap();
    let (vocab, hidden, layers, inter) = (
        get("vocab_size"),
        get("hidden_size"),
        get("num_hidden_layers"),
        get("intermediate_size"),
    );
    assert_eq!(
        h.tensor("embeddings.word_embeddings.weight").unwrap().shape,
        [vocab, hidden]
    );
    assert_eq!(
        h.tensor(&format!(
            "encoder.layer.{}.intermediate.dense.weight",
            layers - 1
        ))
        .unwrap()
        .shape,
        [inter, hidden]
    );
    // BERT with pooler from the config alone: embeddings + L x layer + pooler.
    let positions = get("max_position_embeddings");
    let types = get("type_vocab_size");
    let embeddings = (vocab + positions + types) * hidden + 2 * hidden;
    let layer = 4 * (hidden * hidden + hidden) + 2 * hidden * inter + inter + hidden + 4 * hidden;
    let pooler = hidden * hidden + hidden;
    assert_eq!(embeddings + layers * layer + pooler, 22_713_216);
}

#[test]
fn err_all_minilm_header_with_wrong_file_len() {
    let bytes = fs::read(fixture("all-minilm-l6-v2/model.safetensors.header")).unwrap();
    let err = safetensors::parse_header(&bytes, MINILM_FILE_LEN - 1, "m").unwrap_err();
    assert_eq!(
        err.to_string(),
        "`m`: tensor `pooler.dense.weight` ends at data offset 90856960 but the data section is 90856959 bytes"
    );
}

fn check_gguf_fixture(name: &str) -> GgufHeader {
    let bytes = fs::read(fixture(&format!("gguf/{name}.gguf"))).unwrap();
    let expected: Value = serde_json::from_str(
        &fs::read_to_string(fixture(&format!("gguf/{name}.expected.json"))).unwrap(),
    )
    .unwrap();
    let file_len = bytes.len() as u64;
    assert_eq!(expected["file_len"].as_u64(), Some(file_len));
    let h = gguf::parse_header(&bytes, file_len, name).unwrap();
    assert_eq!(h.version, 3);
    assert_eq!(Some(h.alignment), expected["alignment"].as_u64());
    assert_eq!(h.architecture(), expected["architecture"].as_str());
    assert_eq!(
        h.metadata.len() as u64 + 3,
        expected["n_kv"].as_u64().unwrap(),
        "gguf-py counts GGUF.version, tensor_count, kv_count as fields"
    );

    let tensors = expected["tensors"].as_array().unwrap();
    assert_eq!(h.tensors.len(), tensors.len());
    for (t, e) in h.tensors.iter().zip(tensors) {
        assert_eq!(Some(t.name.as_str()), e["name"].as_str());
        assert_eq!(
            Some(u64::from(t.ggml_type.id())),
            e["type_id"].as_u64(),
            "{}",
            t.name
        );
        assert_eq!(Some(t.ggml_type.name()), e["type"].as_str());
        let dims: Vec<u64> = e["dims"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_u64().unwrap())
            .collect();
        assert_eq!(t.dims, dims, "{}", t.name);
        assert_eq!(Some(t.elements), e["elements"].as_u64(), "{}", t.name);
        if t.ggml_type == GgmlType::Q8_1 {
            // gguf-py 0.19.0's GGML_QUANT_SIZES still has the old 40-byte Q8_1 block (two
            // f32); ggml-common.h has 36 (two f16), which llama.cpp uses. See NOTES.md.
            assert_eq!(Some(t.bytes / 36 * 40), e["bytes"].as_u64(), "{}", t.name);
        } else {
            assert_eq!(Some(t.bytes), e["bytes"].as_u64(), "{}", t.name);
        }
        assert_eq!(
            Some(h.data_start + t.offset),
            e["data_offset"].as_u64(),
            "{}",
            t.name
        );
    }
    assert_eq!(Some(h.total_elements), expected["total_elements"].as_u64());
    let q8_1_excess: u64 = h
        .tensors
        .iter()
        .filter(|t| t.ggml_type == GgmlType::Q8_1)
        .map(|t| t.bytes / 36 * 4)
        .sum();
    assert_eq!(
        Some(h.total_bytes + q8_1_excess),
        expected["total_bytes"].as_u64()
    );

    // The layout gguf-py wrote: tensors back to back, each padded to the alignment, and
    // the file ends with the last tensor's padding.
    let mut end = 0;
    for t in &h.tensors {
        assert_eq!(
            t.offset, end,
            "{} starts where the previous one ends",
            t.name
        );
        end = (t.offset + t.bytes).next_multiple_of(h.alignment);
    }
    assert_eq!(h.data_start + end, file_len);
    assert!(h.is_sequential_layout());
    h
}

#[test]
fn ok_gguf_tiny_llama() {
    let h = check_gguf_fixture("tiny-llama");
    assert_eq!(h.name(), Some("tiny-llama"));
    assert_eq!(h.block_count(), Some(2));
    assert_eq!(h.embedding_length(), Some(256));
    assert_eq!(h.feed_forward_length(), Some(32));
    assert_eq!(h.head_count(), Some(2));
    assert_eq!(h.head_count_kv(), Some(1));
    assert_eq!(h.context_length(), Some(512));
    assert_eq!(h.vocab_size(), Some(32));
    assert_eq!(h.file_type(), Some(15), "MOSTLY_Q4_K_M");
    assert_eq!(
        h.get("tokenizer.ggml.tokens")
            .and_then(|v| v.as_array())
            .map(gguf::GgufArray::len),
        Some(32)
    );
    // Parameter count from the config numbers, to the element.
    let (hidden, q, kv, ffn, vocab) = (256, 32, 16, 32, 32);
    let layer = hidden * q * 2 + hidden * kv * 2 + 3 * hidden * ffn + 2 * hidden;
    assert_eq!(h.total_elements, 2 * vocab * hidden + hidden + 2 * layer);
    let mut by_category: BTreeMap<Category, u64> = BTreeMap::new();
    for t in &h.tensors {
        *by_category.entry(category_of_gguf(&t.name)).or_default() += t.elements;
    }
    assert_eq!(by_category[&Category::TokenEmbedding], vocab * hidden);
    assert_eq!(by_category[&Category::LmHead], vocab * hidden);
    assert_eq!(
        by_category[&Category::Attention],
        2 * (2 * hidden * q + 2 * hidden * kv)
    );
    assert_eq!(by_category[&Category::Ffn], 2 * 3 * hidden * ffn);
    assert_eq!(by_category[&Category::Norm], 5 * hidden);
    let types: Vec<GgmlType> = h.tensors.iter().map(|t| t.ggml_type).collect();
    for t in [
        GgmlType::Q2_K,
        GgmlType::IQ2_XS,
        GgmlType::IQ4_NL,
        GgmlType::Q5_1,
    ] {
        assert!(types.contains(&t), "{t}");
    }
}

#[test]
fn ok_gguf_all_types_alignment_64() {
    let h = check_gguf_fixture("all-types");
    assert_eq!(h.alignment, 64);
    assert_eq!(h.data_start % 64, 0);
    // Every type gguf-py 0.19 knows; Q2_0 (42) is newer than gguf-py and covered by unit tests.
    let mut seen: Vec<GgmlType> = h.tensors.iter().map(|t| t.ggml_type).collect();
    seen.sort();
    let mut all: Vec<GgmlType> = GgmlType::all().filter(|t| *t != GgmlType::Q2_0).collect();
    all.sort();
    assert_eq!(seen, all);
}

#[test]
fn ok_gguf_tiny_moe() {
    let h = check_gguf_fixture("tiny-moe");
    assert_eq!(h.expert_count(), Some(4));
    assert_eq!(h.expert_used_count(), Some(2));
    let exps = h.tensor("blk.0.ffn_gate_exps.weight").unwrap();
    assert_eq!(exps.dims, [256, 32, 4]);
    assert_eq!(exps.shape(), [4, 32, 256]);
    let mut by_category: BTreeMap<Category, u64> = BTreeMap::new();
    for t in &h.tensors {
        *by_category.entry(category_of_gguf(&t.name)).or_default() += t.elements;
    }
    assert_eq!(by_category[&Category::MoeExperts], 3 * 4 * 32 * 256);
    assert_eq!(by_category[&Category::MoeSharedExperts], 3 * 32 * 256);
    assert_eq!(by_category[&Category::MoeRouter], 4 * 256);
    assert_eq!(
        by_category[&Category::Buffer],
        4,
        "exp_probs_b is not a parameter"
    );
}

/// How a caller with a file uses the reader: read a little, parse, read what it asks for.
fn read_gguf_header(path: &Path) -> (GgufHeader, u64, usize) {
    let mut file = fs::File::open(path).unwrap();
    let file_len = file.metadata().unwrap().len();
    let mut buf = Vec::new();
    let mut reads = 0;
    let mut want: u64 = 64;
    loop {
        let want_len = want.min(file_len) as usize;
        if want_len > buf.len() {
            file.seek(SeekFrom::Start(buf.len() as u64)).unwrap();
            let mut more = vec![0; want_len - buf.len()];
            file.read_exact(&mut more).unwrap();
            buf.extend(more);
            reads += 1;
        }
        match gguf::parse_header(&buf, file_len, &path.display().to_string()) {
            Ok(h) => return (h, buf.len() as u64, reads),
            Err(e) => {
                let needed = e.needed_at_least().unwrap_or_else(|| panic!("{e}"));
                want = needed.max(2 * buf.len() as u64);
            }
        }
    }
}

#[test]
fn ok_incremental_read_from_a_file() {
    let bytes = fs::read(fixture("gguf/tiny-llama.gguf")).unwrap();
    let mut tmp = tempfile::NamedTempFile::new().unwrap();
    tmp.write_all(&bytes).unwrap();
    tmp.flush().unwrap();
    let (h, read, reads) = read_gguf_header(tmp.path());
    assert_eq!(
        h,
        gguf::parse_header(&bytes, bytes.len() as u64, "x").unwrap()
    );
    // Only the header was read (at most twice what it needed), never the weights.
    assert!(read < 2 * h.data_start, "read {read} of {}", bytes.len());
    assert!(reads > 1);
}

#[test]
fn err_gguf_fixture_truncated_or_corrupted() {
    let bytes = fs::read(fixture("gguf/tiny-llama.gguf")).unwrap();
    let h = gguf::parse_header(&bytes, bytes.len() as u64, "f").unwrap();
    // Cut inside the data section: the last tensor no longer fits.
    let err =
        gguf::parse_header(&bytes[..h.header_len as usize], h.data_start + 100, "f").unwrap_err();
    assert!(
        matches!(err, llmsize_weights::WeightsError::TensorPastEnd { .. }),
        "{err}"
    );
    // Change the first tensor's type to a removed one.
    let first = &h.tensors[0];
    let name_at = bytes
        .windows(first.name.len())
        .position(|w| w == first.name.as_bytes())
        .unwrap();
    let type_at = name_at + first.name.len() + 4 + 8 * first.dims.len();
    let mut corrupt = bytes[..h.header_len as usize].to_vec();
    corrupt[type_at..type_at + 4].copy_from_slice(&31u32.to_le_bytes());
    let err = gguf::parse_header(&corrupt, bytes.len() as u64, "f").unwrap_err();
    assert_eq!(
        err.to_string(),
        "`f`: tensor `token_embd.weight` has ggml type 31 (`Q4_0_4_4`), which llama.cpp removed"
    );
}
