#![allow(
    clippy::cast_possible_truncation,
    reason = "test code: sizes are small"
)]

use super::*;

#[path = "../../tests/common/gguf_builder.rs"]
mod builder;

use builder::GgufBuilder;

const F: &str = "model.gguf";
const T_F32: u32 = 0;
const T_Q8_0: u32 = 8;
const T_Q4_K: u32 = 12;

fn parse(b: &GgufBuilder, data_len: u64) -> Result<GgufHeader, WeightsError> {
    parse_header(&b.build(), b.file_len(data_len), F)
}

fn err(b: &GgufBuilder, data_len: u64) -> WeightsError {
    parse(b, data_len).unwrap_err()
}

#[test]
fn ok_minimal_v3() {
    let b = GgufBuilder::new(3);
    let h = parse(&b, 0).unwrap();
    assert_eq!(h.version, 3);
    assert_eq!(h.alignment, 32);
    assert_eq!(h.header_len, 24);
    assert_eq!(h.data_start, 32);
    assert!(h.tensors.is_empty() && h.metadata.is_empty());
    // No tensors: the file may end right after the header, before the padding.
    assert_eq!(parse_header(&b.build(), 24, F).unwrap().data_len, 0);
}

#[test]
fn ok_llama_like_v3_with_accessors() {
    let b = GgufBuilder::new(3)
        .kv_str("general.architecture", "llama")
        .kv_str("general.name", "tiny")
        .kv_u32("general.file_type", 7)
        .kv_u32("llama.context_length", 4096)
        .kv_u64("llama.block_count", 2)
        .kv_u32("llama.embedding_length", 64)
        .kv_u32("llama.feed_forward_length", 128)
        .kv_u32("llama.attention.head_count", 4)
        .kv_u32("llama.attention.head_count_kv", 2)
        .tensor("token_embd.weight", &[64, 10], T_Q8_0, 0)
        .tensor("output_norm.weight", &[64], T_F32, 704)
        .tensor("blk.0.ffn_up.weight", &[256, 2], T_Q4_K, 960);
    let h = parse(&b, 960 + 288).unwrap();
    assert_eq!(h.architecture(), Some("llama"));
    assert_eq!(h.name(), Some("tiny"));
    assert_eq!(h.file_type(), Some(7));
    assert_eq!(h.context_length(), Some(4096));
    assert_eq!(h.block_count(), Some(2));
    assert_eq!(h.embedding_length(), Some(64));
    assert_eq!(h.feed_forward_length(), Some(128));
    assert_eq!(h.head_count(), Some(4));
    assert_eq!(h.head_count_kv(), Some(2));
    assert_eq!(h.expert_count(), None);
    assert_eq!(h.vocab_size(), None);
    let emb = h.tensor("token_embd.weight").unwrap();
    assert_eq!(emb.ggml_type, GgmlType::Q8_0);
    assert_eq!((emb.elements, emb.bytes), (640, 20 * 34));
    assert_eq!(emb.shape(), [10, 64]);
    let up = &h.tensors[2];
    assert_eq!((up.elements, up.bytes, up.offset), (512, 288, 960));
    assert_eq!(h.total_elements, 640 + 64 + 512);
    assert_eq!(h.total_bytes, 680 + 256 + 288);
    assert_eq!(h.data_start, b.data_start());
    assert_eq!(h.data_len, 960 + 288);
    assert!(h.is_sequential_layout());
}

#[test]
fn ok_layout_that_llama_cpp_would_refuse() {
    // Aligned, in bounds, no overlap: accepted. But out of order, so not sequential.
    let b = GgufBuilder::new(3)
        .tensor("b", &[8], T_F32, 32)
        .tensor("a", &[8], T_F32, 0);
    let h = parse(&b, 64).unwrap();
    assert!(!h.is_sequential_layout());
    // A gap between tensors.
    let b = GgufBuilder::new(3)
        .tensor("a", &[8], T_F32, 0)
        .tensor("b", &[8], T_F32, 64);
    assert!(!parse(&b, 96).unwrap().is_sequential_layout());
}

#[test]
fn ok_versions_1_and_2() {
    for version in [1, 2] {
        let b = GgufBuilder::new(version)
            .kv_str("general.architecture", "gpt2")
            .tensor("w", &[3, 2], T_F32, 0);
        let h = parse(&b, 24).unwrap();
        assert_eq!(h.version, version);
        assert_eq!(h.tensors[0].dims, [3, 2]);
        assert_eq!(h.architecture(), Some("gpt2"));
    }
    // v1 counts are u32: the header is shorter.
    assert_eq!(GgufBuilder::new(1).build().len(), 16);
}

#[test]
fn ok_every_value_type() {
    let b = GgufBuilder::new(3);
    let s = b.string(b"hi");
    let nested = {
        let inner = b.array(0, 2, &[7, 8]);
        b.array(9, 1, &inner)
    };
    let strings = {
        let mut e = b.string(b"a");
        e.extend(b.string(b"\xffb")); // invalid UTF-8 in a value: decoded lossily
        b.array(8, 2, &e)
    };
    let bools = b.array(7, 3, &[1, 0, 1]);
    let i32s = b.array(5, 2, &[1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]);
    let empty = b.array(6, 0, &[]);
    let b = b
        .kv_raw(b"u8", 0, &[200])
        .kv_raw(b"i8", 1, &[0xff])
        .kv_raw(b"u16", 2, &500u16.to_le_bytes())
        .kv_raw(b"i16", 3, &(-500i16).to_le_bytes())
        .kv_raw(b"u32", 4, &70_000u32.to_le_bytes())
        .kv_raw(b"i32", 5, &(-70_000i32).to_le_bytes())
        .kv_raw(b"f32", 6, &1.5f32.to_le_bytes())
        .kv_raw(b"bool", 7, &[1])
        .kv_raw(b"string", 8, &s)
        .kv_raw(b"nested", 9, &nested)
        .kv_raw(b"u64", 10, &u64::MAX.to_le_bytes())
        .kv_raw(b"i64", 11, &(-1i64).to_le_bytes())
        .kv_raw(b"f64", 12, &2.25f64.to_le_bytes())
        .kv_raw(b"strings", 9, &strings)
        .kv_raw(b"bools", 9, &bools)
        .kv_raw(b"i32s", 9, &i32s)
        .kv_raw(b"empty", 9, &empty);
    let h = parse(&b, 0).unwrap();
    let get = |k: &str| h.get(k).unwrap();
    assert_eq!(get("u8"), &GgufValue::U8(200));
    assert_eq!(get("i8"), &GgufValue::I8(-1));
    assert_eq!(get("u16"), &GgufValue::U16(500));
    assert_eq!(get("i16"), &GgufValue::I16(-500));
    assert_eq!(get("u32").as_u64(), Some(70_000));
    assert_eq!(get("i32").as_i64(), Some(-70_000));
    assert_eq!(get("i32").as_u64(), None);
    assert_eq!(get("f32").as_f64(), Some(1.5));
    assert_eq!(get("bool").as_bool(), Some(true));
    assert_eq!(get("string").as_str(), Some("hi"));
    assert_eq!(
        get("nested"),
        &GgufValue::Array(GgufArray::Array(vec![GgufArray::U8(vec![7, 8])]))
    );
    assert_eq!(get("u64").as_u64(), Some(u64::MAX));
    assert_eq!(get("u64").as_i64(), None);
    assert_eq!(get("i64").as_i64(), Some(-1));
    assert_eq!(get("f64").as_f64(), Some(2.25));
    assert_eq!(
        get("strings"),
        &GgufValue::Array(GgufArray::String(vec!["a".into(), "\u{fffd}b".into()]))
    );
    assert_eq!(
        get("bools").as_array(),
        Some(&GgufArray::Bool(vec![true, false, true]))
    );
    let i32s = get("i32s").as_array().unwrap();
    assert_eq!(i32s, &GgufArray::I32(vec![1, -1]));
    assert_eq!(i32s.to_u64_vec(), None);
    assert_eq!(i32s.element_type(), GgufValueType::I32);
    let empty = get("empty").as_array().unwrap();
    assert!(empty.is_empty());
    assert_eq!(empty.element_type(), GgufValueType::F32);
    let keys: Vec<&str> = h.metadata.iter().map(|kv| kv.key.as_str()).collect();
    assert_eq!(keys[..3], ["u8", "i8", "u16"], "file order kept");
    for kv in &h.metadata {
        assert_eq!(
            GgufValueType::from_id(kv.value.value_type().id()),
            Some(kv.value.value_type())
        );
    }
}

#[test]
fn ok_per_layer_array_and_vocab_from_tokens() {
    let b = GgufBuilder::new(3).kv_str("general.architecture", "lfm2");
    let mut tokens = b.string(b"a");
    tokens.extend(b.string(b"b"));
    tokens.extend(b.string(b"c"));
    let kv_heads = b.array(4, 3, &[0, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0]);
    let tokens = b.array(8, 3, &tokens);
    let b = b
        .kv_raw(b"lfm2.attention.head_count_kv", 9, &kv_heads)
        .kv_raw(b"tokenizer.ggml.tokens", 9, &tokens);
    let h = parse(&b, 0).unwrap();
    assert_eq!(h.head_count_kv(), None, "an array is not one number");
    assert_eq!(
        h.arch_value("attention.head_count_kv")
            .and_then(GgufValue::as_array)
            .and_then(GgufArray::to_u64_vec),
        Some(vec![0, 8, 0])
    );
    assert_eq!(h.vocab_size(), Some(3));
}

#[test]
fn ok_custom_alignment() {
    let mut b = GgufBuilder::new(3)
        .kv_u32("general.alignment", 64)
        .tensor("a", &[4], T_F32, 0)
        .tensor("b", &[4], T_F32, 64);
    b.alignment = 64;
    let h = parse(&b, 80).unwrap();
    assert_eq!(h.alignment, 64);
    assert_eq!(h.data_start % 64, 0);
    assert_eq!(h.data_start, b.data_start());
}

#[test]
fn ok_every_ggml_type() {
    let mut b = GgufBuilder::new(3);
    let mut offset = 0;
    let mut expected = Vec::new();
    for t in GgmlType::all() {
        let bytes = 2 * 3 * t.type_size();
        b = b.tensor(t.name(), &[2 * t.block_size(), 3], t.id(), offset);
        expected.push((t, 6 * t.block_size(), bytes, offset));
        offset = (offset + bytes).next_multiple_of(32);
    }
    let h = parse(&b, offset).unwrap();
    for (tensor, (t, elements, bytes, offset)) in h.tensors.iter().zip(expected) {
        assert_eq!(tensor.ggml_type, t);
        assert_eq!(
            (tensor.elements, tensor.bytes, tensor.offset),
            (elements, bytes, offset),
            "{t}"
        );
    }
}

#[test]
fn ok_scalar_and_empty_tensors() {
    let b = GgufBuilder::new(3)
        .tensor("scalar", &[], T_F32, 0)
        .tensor("empty", &[0, 5], T_Q4_K, 0)
        .tensor("after", &[1], T_F32, 32);
    let h = parse(&b, 36).unwrap();
    assert_eq!((h.tensors[0].elements, h.tensors[0].bytes), (1, 4));
    assert_eq!((h.tensors[1].elements, h.tensors[1].bytes), (0, 0));
}

#[test]
fn ok_need_more_bytes_then_ok() {
    let b = GgufBuilder::new(3)
        .kv_str("general.architecture", "llama")
        .tensor("w", &[32], T_Q8_0, 0);
    let bytes = b.build();
    let file_len = b.file_len(34);
    let full = parse_header(&bytes, file_len, F).unwrap();
    let mut have = 1;
    let mut calls = 0;
    let parsed = loop {
        calls += 1;
        match parse_header(&bytes[..have], file_len, F) {
            Ok(h) => break h,
            Err(e) => {
                let needed = e.needed_at_least().unwrap();
                assert!(needed > have as u64 && needed <= bytes.len() as u64);
                have = needed as usize;
            }
        }
    };
    assert_eq!(parsed, full);
    assert!(calls > 2);
}

#[test]
fn err_bad_magic() {
    let mut bytes = GgufBuilder::new(3).build();
    bytes[..4].copy_from_slice(b"GGML");
    let err = parse_header(&bytes, 100, F).unwrap_err();
    assert_eq!(
        err,
        WeightsError::BadMagic {
            file: F.into(),
            found: *b"GGML"
        }
    );
    assert_eq!(
        err.to_string(),
        "`model.gguf`: magic is `GGML`, expected `GGUF`"
    );
}

#[test]
fn err_big_endian() {
    let mut bytes = GgufBuilder::new(3).build();
    bytes[4..8].copy_from_slice(&3u32.to_be_bytes());
    let err = parse_header(&bytes, 100, F).unwrap_err();
    assert_eq!(
        err.to_string(),
        "`model.gguf`: version reads 50331648 little-endian, 3 big-endian: big-endian GGUF files are not supported"
    );
}

#[test]
fn err_unknown_version() {
    for version in [0, 4, 0xffff] {
        let mut bytes = GgufBuilder::new(3).build();
        bytes[4..8].copy_from_slice(&u32::to_le_bytes(version));
        let err = parse_header(&bytes, 100, F).unwrap_err();
        assert_eq!(
            err,
            WeightsError::UnsupportedVersion {
                file: F.into(),
                version
            }
        );
    }
}

#[test]
fn err_truncated() {
    let bytes = GgufBuilder::new(3).build();
    let err = parse_header(&bytes[..10], 10, F).unwrap_err();
    assert_eq!(
        err.to_string(),
        "`model.gguf`: tensor count at byte 8 needs 8 bytes but the file ends at byte 10"
    );
}

#[test]
fn err_need_more_bytes() {
    let bytes = GgufBuilder::new(3).build();
    let err = parse_header(&bytes[..10], 1000, F).unwrap_err();
    assert_eq!(
        err,
        WeightsError::NeedMoreBytes {
            file: F.into(),
            have: 10,
            needed_at_least: 16
        }
    );
}

#[test]
fn err_prefix_longer_than_file() {
    let bytes = GgufBuilder::new(3).build();
    assert!(matches!(
        parse_header(&bytes, 4, F).unwrap_err(),
        WeightsError::PrefixLongerThanFile { .. }
    ));
}

#[test]
fn err_string_length_past_the_end() {
    // A key claiming 2^60 bytes: an error before any allocation.
    let mut bytes = GgufBuilder::new(3).build();
    bytes[16..24].copy_from_slice(&1u64.to_le_bytes());
    bytes.extend((1u64 << 60).to_le_bytes());
    let err = parse_header(&bytes, bytes.len() as u64 + 100, F).unwrap_err();
    assert_eq!(
        err.to_string(),
        "`model.gguf`: metadata key at byte 24 declares 1152921504606846976 (at least 1152921504606846976 bytes) but only 100 bytes remain in the file"
    );
    // The same in a value, and in GGUF v1's u32 lengths.
    let b = GgufBuilder::new(3).kv_raw(b"k", 8, &(1u64 << 60).to_le_bytes());
    assert!(matches!(
        err_of(&b, 10),
        WeightsError::LengthPastEnd {
            what: "string length",
            ..
        }
    ));
    let b = GgufBuilder::new(1).kv_raw(b"k", 8, &u32::MAX.to_le_bytes());
    assert!(matches!(
        err_of(&b, 10),
        WeightsError::LengthPastEnd {
            count: 4_294_967_295,
            ..
        }
    ));
}

fn err_of(b: &GgufBuilder, extra: u64) -> WeightsError {
    let bytes = b.build();
    parse_header(&bytes, bytes.len() as u64 + extra, F).unwrap_err()
}

#[test]
fn err_string_over_limit() {
    // Fits in the (declared) file, but over MAX_STRING_LEN.
    let b = GgufBuilder::new(3).kv_raw(b"k", 8, &(MAX_STRING_LEN + 1).to_le_bytes());
    let bytes = b.build();
    let err = parse_header(&bytes, 1 << 40, F).unwrap_err();
    assert!(matches!(
        err,
        WeightsError::OverLimit {
            what: "string length",
            count,
            max: MAX_STRING_LEN,
            ..
        } if count == MAX_STRING_LEN + 1
    ));
}

#[test]
fn err_array_count_huge() {
    let b = GgufBuilder::new(3);
    let payload = b.array(10, 1 << 62, &[]);
    let b = b.kv_raw(b"a", 9, &payload);
    let err = err_of(&b, 64);
    // 2^62 elements of type 10 (UINT64, 8 bytes) need 2^65 bytes: stated exactly, not as
    // the u64::MAX a saturating product gave.
    assert!(
        matches!(err, WeightsError::LengthPastEnd { what: "array length", count, min_bytes, remaining: 64, .. } if count == 1 << 62 && min_bytes == 1 << 65),
        "{err}"
    );
    // Legal for a 1 TiB file, but over MAX_ARRAY_LEN; nothing is reserved.
    let b = GgufBuilder::new(3);
    let payload = b.array(0, MAX_ARRAY_LEN + 1, &[]);
    let b = b.kv_raw(b"a", 9, &payload);
    let err = parse_header(&b.build(), 1 << 40, F).unwrap_err();
    assert!(matches!(
        err,
        WeightsError::OverLimit {
            what: "array length",
            ..
        }
    ));
    // Under the limit, legal for the file, longer than the prefix: ask for more.
    let b = GgufBuilder::new(3);
    let payload = b.array(8, 1_000_000, &[]);
    let b = b.kv_raw(b"a", 9, &payload);
    assert!(
        parse_header(&b.build(), 1 << 40, F)
            .unwrap_err()
            .is_need_more_bytes()
    );
}

#[test]
fn err_array_too_deep() {
    let b = GgufBuilder::new(3);
    let mut payload = b.array(0, 0, &[]);
    for _ in 0..MAX_ARRAY_DEPTH {
        payload = b.array(9, 1, &payload);
    }
    let err = err_of(&b.clone().kv_raw(b"deep", 9, &payload), 0);
    assert!(
        matches!(
            err,
            WeightsError::ArrayTooDeep {
                depth: 9,
                max: 8,
                ..
            }
        ),
        "{err}"
    );
    // One level less is fine.
    let mut payload = b.array(0, 0, &[]);
    for _ in 1..MAX_ARRAY_DEPTH {
        payload = b.array(9, 1, &payload);
    }
    assert!(parse(&b.kv_raw(b"deep", 9, &payload), 0).is_ok());
}

#[test]
fn err_invalid_value_type() {
    let err = err(&GgufBuilder::new(3).kv_raw(b"k", 13, &[0]), 0);
    assert_eq!(
        err.to_string(),
        "`model.gguf`: value of `k` at byte 33 has type id 13, expected 0..=12"
    );
    let b = GgufBuilder::new(3);
    let payload = b.array(99, 0, &[]);
    assert!(matches!(
        err_of(&b.kv_raw(b"k", 9, &payload), 0),
        WeightsError::InvalidValueType { found: 99, .. }
    ));
}

#[test]
fn err_invalid_bool() {
    let err = err(&GgufBuilder::new(3).kv_raw(b"flag", 7, &[2]), 0);
    assert_eq!(
        err.to_string(),
        "`model.gguf`: bool of `flag` at byte 40 is 2, expected 0 or 1"
    );
    let b = GgufBuilder::new(3);
    let payload = b.array(7, 3, &[0, 1, 5]);
    assert!(matches!(
        err_of(&b.kv_raw(b"flags", 9, &payload), 0),
        WeightsError::InvalidBool { found: 5, .. }
    ));
}

#[test]
fn err_not_utf8() {
    let e = err(&GgufBuilder::new(3).kv_raw(b"\xc3(", 4, &[0; 4]), 0);
    assert_eq!(
        e,
        WeightsError::NotUtf8 {
            file: F.into(),
            what: "metadata key",
            offset: 24
        }
    );
    let err = err(&GgufBuilder::new(3).tensor_raw(b"\xff", &[1], T_F32, 0), 4);
    assert!(matches!(
        err,
        WeightsError::NotUtf8 {
            what: "tensor name",
            ..
        }
    ));
}

#[test]
fn err_duplicates() {
    let b = GgufBuilder::new(3).kv_u32("k", 1).kv_u32("k", 2);
    assert_eq!(
        err(&b, 0).to_string(),
        "`model.gguf`: key `k` appears twice"
    );
    let b = GgufBuilder::new(3)
        .tensor("w", &[1], T_F32, 0)
        .tensor("w", &[1], T_F32, 32);
    assert!(matches!(err(&b, 36), WeightsError::DuplicateTensor { .. }));
}

#[test]
fn err_alignment() {
    let err0 = err(&GgufBuilder::new(3).kv_u32("general.alignment", 0), 0);
    assert_eq!(
        err0.to_string(),
        "`model.gguf`: `general.alignment` is 0, expected a power of two"
    );
    assert!(matches!(
        err(&GgufBuilder::new(3).kv_u32("general.alignment", 48), 0),
        WeightsError::InvalidAlignment { alignment: 48, .. }
    ));
    assert_eq!(
        err(&GgufBuilder::new(3).kv_u64("general.alignment", 32), 0).to_string(),
        "`model.gguf`: `general.alignment` has type `u64`, expected `u32`"
    );
}

#[test]
fn err_counts() {
    let mut b = GgufBuilder::new(3);
    b.tensor_count_override = Some(MAX_TENSORS + 1);
    assert!(matches!(
        parse_header(&b.build(), 1 << 40, F).unwrap_err(),
        WeightsError::TooManyTensors { .. }
    ));
    b.tensor_count_override = Some(1000);
    let err = err_of(&b, 100);
    assert!(
        matches!(
            err,
            WeightsError::LengthPastEnd {
                what: "tensor count",
                offset: 8,
                count: 1000,
                min_bytes: 24_000,
                remaining: 100,
                ..
            }
        ),
        "{err}"
    );
    let mut b = GgufBuilder::new(3);
    b.kv_count_override = Some(MAX_KV_COUNT + 1);
    assert!(matches!(
        parse_header(&b.build(), 1 << 40, F).unwrap_err(),
        WeightsError::OverLimit {
            what: "metadata key count",
            ..
        }
    ));
}

#[test]
fn err_n_dims_over_4() {
    let err = err(&GgufBuilder::new(3).tensor("w", &[1; 5], T_F32, 0), 4);
    assert_eq!(
        err.to_string(),
        "`model.gguf`: tensor `w` has 5 dimensions, more than the limit of 4"
    );
}

#[test]
fn err_negative_dimension() {
    let err = err(&GgufBuilder::new(3).tensor("w", &[1 << 63], T_F32, 0), 0);
    assert!(matches!(err, WeightsError::InvalidDim { index: 0, value, .. } if value == 1 << 63));
}

#[test]
fn err_removed_ggml_types() {
    for (id, name) in [
        (4, "Q4_2"),
        (5, "Q4_3"),
        (31, "Q4_0_4_4"),
        (32, "Q4_0_4_8"),
        (33, "Q4_0_8_8"),
        (36, "IQ4_NL_4_4"),
        (37, "IQ4_NL_4_8"),
        (38, "IQ4_NL_8_8"),
    ] {
        let err = err(&GgufBuilder::new(3).tensor("w", &[32], id, 0), 18);
        assert_eq!(
            err.to_string(),
            format!(
                "`model.gguf`: tensor `w` has ggml type {id} (`{name}`), which llama.cpp removed"
            )
        );
    }
    let err = err(&GgufBuilder::new(3).tensor("w", &[32], 43, 0), 18);
    assert_eq!(
        err.to_string(),
        "`model.gguf`: tensor `w` has unknown ggml type 43"
    );
}

#[test]
fn err_block_misaligned() {
    let e = err(&GgufBuilder::new(3).tensor("w", &[32, 8], T_Q4_K, 0), 0);
    assert_eq!(
        e.to_string(),
        "`model.gguf`: tensor `w` has `ne[0]` = 32, not a multiple of the `Q4_K` block size 256"
    );
    // A scalar of a block type is one element: not a whole block either.
    assert!(matches!(
        err(&GgufBuilder::new(3).tensor("s", &[], T_Q8_0, 0), 0),
        WeightsError::BlockMisaligned { ne0: 1, .. }
    ));
}

#[test]
fn err_shape_overflow() {
    let b = GgufBuilder::new(3).tensor("w", &[1 << 32, 1 << 32], T_F32, 0);
    assert!(matches!(err(&b, 0), WeightsError::ShapeOverflow { .. }));
    // Elements fit, bytes do not.
    let b = GgufBuilder::new(3).tensor("w", &[1 << 62], T_F32, 0);
    assert!(matches!(err(&b, 0), WeightsError::ShapeOverflow { .. }));
}

#[test]
fn err_misaligned_offset() {
    let b = GgufBuilder::new(3)
        .tensor("a", &[1], T_F32, 0)
        .tensor("b", &[1], T_F32, 4);
    assert_eq!(
        err(&b, 64).to_string(),
        "`model.gguf`: tensor `b` has data offset 4, not a multiple of the alignment 32"
    );
}

#[test]
fn err_tensor_past_end() {
    let b = GgufBuilder::new(3).tensor("w", &[32], T_Q8_0, 32);
    assert_eq!(
        err(&b, 65).to_string(),
        "`model.gguf`: tensor `w` ends at data offset 66 but the data section is 65 bytes"
    );
    let b = GgufBuilder::new(3).tensor("w", &[1], T_F32, u64::MAX - 31);
    assert!(
        matches!(err(&b, 4), WeightsError::TensorPastEnd { end, .. } if end == u128::from(u64::MAX - 27))
    );
}

#[test]
fn err_overlap() {
    let b = GgufBuilder::new(3)
        .tensor("a", &[16], T_F32, 32)
        .tensor("b", &[16], T_F32, 0);
    assert_eq!(
        err(&b, 96).to_string(),
        "`model.gguf`: tensors `b` (data bytes 0..64) and `a` (from 32) overlap"
    );
}

#[test]
fn err_data_start_past_end() {
    let b = GgufBuilder::new(3).tensor("w", &[0], T_F32, 0);
    let bytes = b.build();
    let err = parse_header(&bytes, bytes.len() as u64 + 1, F).unwrap_err();
    assert!(
        matches!(err, WeightsError::DataStartPastEnd { .. }),
        "{err}"
    );
}

#[test]
fn err_header_too_large() {
    let mut cur = reader::Cursor::new(&[], 1 << 40, F);
    assert_eq!(
        cur.take(MAX_HEADER_SIZE + 1, "value").unwrap_err(),
        WeightsError::HeaderTooLarge {
            file: F.into(),
            header_len: MAX_HEADER_SIZE + 1,
            max: MAX_HEADER_SIZE
        }
    );
    let mut cur = reader::Cursor::new(&[], 10, F);
    assert!(matches!(
        cur.take(MAX_HEADER_SIZE + 1, "value").unwrap_err(),
        WeightsError::Truncated { .. }
    ));
}

#[test]
fn err_total_elements_overflow() {
    // Two IQ1_S tensors of 2^63 elements each fit in a (declared) 16 EiB file, but their
    // element count does not fit in u64.
    let bytes_each = (1u64 << 63) / 256 * 50;
    let b = GgufBuilder::new(3)
        .tensor("a", &[1 << 62, 2], 19, 0)
        .tensor("b", &[1 << 62, 2], 19, bytes_each.next_multiple_of(32));
    let err = parse_header(&b.build(), u64::MAX, F).unwrap_err();
    assert_eq!(
        err.to_string(),
        "`model.gguf`: the elements summed over all tensors overflows 64 bits"
    );
}
