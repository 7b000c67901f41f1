#![allow(
    clippy::cast_possible_truncation,
    reason = "test code: sizes are small"
)]

use std::fmt::Write as _;

use super::*;

const F: &str = "model.safetensors";

/// The first 8 + N bytes of a file whose header is `json`, and the file length with
/// `data_len` data bytes after it.
fn file(json: &str, data_len: u64) -> (Vec<u8>, u64) {
    let mut bytes = (json.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(json.as_bytes());
    let file_len = bytes.len() as u64 + data_len;
    (bytes, file_len)
}

fn parse(json: &str, data_len: u64) -> Result<SafetensorsHeader, WeightsError> {
    let (bytes, file_len) = file(json, data_len);
    parse_header(&bytes, file_len, F)
}

fn tensor(name: &str, dtype: &str, shape: &str, begin: u64, end: u64) -> String {
    format!(r#""{name}":{{"dtype":"{dtype}","shape":{shape},"data_offsets":[{begin},{end}]}}"#)
}

#[test]
fn ok_single_tensor() {
    let json = format!("{{{}}}", tensor("w", "BF16", "[4,3]", 0, 24));
    let h = parse(&json, 24).unwrap();
    assert_eq!(h.header_len, json.len() as u64);
    assert_eq!(h.data_start, 8 + json.len() as u64);
    assert_eq!(h.data_len, 24);
    assert_eq!(
        h.tensors,
        vec![SafetensorsTensor {
            name: "w".into(),
            dtype: Dtype::BF16,
            shape: vec![4, 3],
            elements: 12,
            bytes: 24,
            data_offsets: [0, 24],
        }]
    );
    assert_eq!((h.total_elements, h.total_bytes), (12, 24));
    assert!(h.metadata.is_empty());
}

#[test]
fn ok_tensors_in_offset_order_with_metadata() {
    let json = format!(
        r#"{{"__metadata__":{{"format":"pt","b":"x"}},{},{},{}}}"#,
        tensor("z.last", "F32", "[2]", 10, 18),
        tensor("a.first", "I64", "[1]", 0, 8),
        tensor("m.mid", "U8", "[2]", 8, 10),
    );
    let h = parse(&json, 18).unwrap();
    let names: Vec<&str> = h.tensors.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["a.first", "m.mid", "z.last"]);
    assert_eq!(h.metadata.get("format").map(String::as_str), Some("pt"));
    assert_eq!(h.metadata.len(), 2);
    assert_eq!(h.total_elements, 5);
    assert_eq!(h.tensor("m.mid").unwrap().dtype, Dtype::U8);
    assert!(h.tensor("nope").is_none());
}

#[test]
fn ok_zero_size_scalar_and_null_metadata() {
    let json = format!(
        r#"{{"__metadata__":null,{},{},{}}}"#,
        tensor("empty", "F32", "[0,7]", 0, 0),
        tensor("scalar", "F64", "[]", 0, 8),
        tensor("after", "F16", "[1]", 8, 10),
    );
    let h = parse(&json, 10).unwrap();
    assert_eq!(h.tensor("empty").unwrap().elements, 0);
    assert_eq!(h.tensor("scalar").unwrap().elements, 1);
    assert_eq!(h.tensors[0].name, "empty");
}

#[test]
fn ok_every_dtype_size_in_bits() {
    // 6 elements of each dtype: ceil(6 x bits / 8) bytes.
    let mut entries = Vec::new();
    let mut offset = 0;
    for dtype in Dtype::ALL {
        let bytes = (6 * dtype.bits()).div_ceil(8);
        entries.push(tensor(
            dtype.as_str(),
            dtype.as_str(),
            "[2,3]",
            offset,
            offset + bytes,
        ));
        offset += bytes;
        assert_eq!(Dtype::from_name(dtype.as_str()), Some(dtype));
        assert_eq!(dtype.to_string(), dtype.as_str());
    }
    let h = parse(&format!("{{{}}}", entries.join(",")), offset).unwrap();
    assert_eq!(h.tensors.len(), Dtype::ALL.len());
    assert_eq!(h.tensor("F4").unwrap().bytes, 3);
    assert_eq!(h.tensor("F6_E2M3").unwrap().bytes, 5); // 36 bits
    assert_eq!(h.tensor("C64").unwrap().bytes, 48);
    assert_eq!(h.total_elements, 6 * Dtype::ALL.len() as u64);
}

#[test]
fn ok_sub_byte_odd_count_rounds_up() {
    let json = format!("{{{}}}", tensor("q", "F4", "[3]", 0, 2));
    assert_eq!(parse(&json, 2).unwrap().tensors[0].bytes, 2);
}

#[test]
fn ok_trailing_spaces_and_bytes_after_header_ignored() {
    // Writers pad the header with spaces to align the data section.
    let json = format!("{{{}}}      ", tensor("w", "U8", "[3]", 0, 3));
    let (mut bytes, file_len) = file(&json, 3);
    bytes.extend_from_slice(&[1, 2, 3]);
    assert_eq!(parse_header(&bytes, file_len, F).unwrap().tensors.len(), 1);
}

#[test]
fn ok_empty_header() {
    let h = parse("{}", 0).unwrap();
    assert!(h.tensors.is_empty());
    assert_eq!(h.total_bytes, 0);
}

#[test]
fn ok_header_len_then_exact_read() {
    let json = format!("{{{}}}", tensor("w", "U8", "[3]", 0, 3));
    let (bytes, file_len) = file(&json, 3);
    let n = header_len(&bytes[..8], file_len, F).unwrap();
    assert_eq!(n, json.len() as u64);
    let err = parse_header(&bytes[..20], file_len, F).unwrap_err();
    assert_eq!(err.needed_at_least(), Some(8 + n));
    assert!(err.is_need_more_bytes());
    assert!(parse_header(&bytes[..(8 + n) as usize], file_len, F).is_ok());
}

#[test]
fn err_truncated_file() {
    // Even when the caller passes 8 bytes, a file length under 8 is a truncated file.
    assert!(matches!(
        header_len(&[0; 8], 3, F).unwrap_err(),
        WeightsError::Truncated { .. }
    ));
    let err = header_len(&[1, 2, 3], 3, F).unwrap_err();
    assert!(matches!(
        err,
        WeightsError::Truncated {
            needed: 8,
            file_len: 3,
            ..
        }
    ));
    assert_eq!(
        err.to_string(),
        "`model.safetensors`: header length at byte 0 needs 8 bytes but the file ends at byte 3"
    );
}

#[test]
fn err_need_more_bytes_for_length() {
    let err = header_len(&[1, 2, 3], 100, F).unwrap_err();
    assert!(matches!(
        err,
        WeightsError::NeedMoreBytes {
            have: 3,
            needed_at_least: 8,
            ..
        }
    ));
}

#[test]
fn err_huge_length() {
    let bytes = u64::MAX.to_le_bytes();
    let err = parse_header(&bytes, 1 << 40, F).unwrap_err();
    assert!(matches!(
        err,
        WeightsError::HeaderTooLarge {
            header_len: u64::MAX,
            max: MAX_HEADER_SIZE,
            ..
        }
    ));
    assert_eq!(
        err.to_string(),
        "`model.safetensors`: header is 18446744073709551615 bytes, more than the limit of 100000000"
    );
}

#[test]
fn err_length_past_file() {
    let bytes = 1000u64.to_le_bytes();
    let err = parse_header(&bytes, 500, F).unwrap_err();
    assert!(matches!(
        err,
        WeightsError::HeaderPastEnd {
            header_len: 1000,
            available: 492,
            file_len: 500,
            ..
        }
    ));
    assert_eq!(
        err.to_string(),
        "`model.safetensors`: header length is 1000 bytes but only 492 bytes follow the 8-byte length (file length 500)"
    );
}

#[test]
fn err_prefix_longer_than_file() {
    let (bytes, _) = file("{}", 0);
    let err = parse_header(&bytes, 5, F).unwrap_err();
    assert!(matches!(
        err,
        WeightsError::PrefixLongerThanFile {
            prefix_len: 10,
            file_len: 5,
            ..
        }
    ));
}

#[test]
fn err_bad_utf8() {
    let mut bytes = 4u64.to_le_bytes().to_vec();
    bytes.extend_from_slice(b"{\"\xff\"");
    let err = parse_header(&bytes, 12, F).unwrap_err();
    assert_eq!(
        err,
        WeightsError::HeaderNotUtf8 {
            file: F.into(),
            offset: 10
        }
    );
}

#[test]
fn err_not_json() {
    let err = parse("{\"w\":", 0).unwrap_err();
    assert!(matches!(err, WeightsError::Json { line: 1, .. }), "{err}");
    assert!(
        err.to_string()
            .starts_with("`model.safetensors`: not valid JSON at line 1, column")
    );
}

#[test]
fn err_not_object() {
    for (json, found) in [
        ("[1,2]", "an array"),
        ("3", "a number"),
        ("\"x\"", "a string"),
        ("null", "null"),
        ("true", "a boolean"),
    ] {
        let err = parse(json, 0).unwrap_err();
        assert_eq!(
            err,
            WeightsError::NotAnObject {
                file: F.into(),
                found
            },
            "{json}"
        );
    }
    assert_eq!(
        parse("[]", 0).unwrap_err().to_string(),
        "`model.safetensors`: the JSON document is an array, expected an object"
    );
}

#[test]
fn err_duplicate_tensor() {
    let t = tensor("w", "U8", "[1]", 0, 1);
    let err = parse(&format!("{{{t},{t}}}"), 1).unwrap_err();
    assert!(matches!(err, WeightsError::DuplicateTensor { ref tensor, .. } if tensor == "w"));
}

#[test]
fn err_duplicate_metadata() {
    let err = parse(r#"{"__metadata__":{},"__metadata__":{}}"#, 0).unwrap_err();
    assert!(matches!(err, WeightsError::DuplicateKey { ref key, .. } if key == "__metadata__"));
}

#[test]
fn err_metadata_not_strings() {
    let err = parse(r#"{"__metadata__":[]}"#, 0).unwrap_err();
    assert_eq!(
        err.to_string(),
        "`model.safetensors`: `__metadata__` is an array, expected an object"
    );
    let err = parse(r#"{"__metadata__":{"format":3}}"#, 0).unwrap_err();
    assert_eq!(
        err.to_string(),
        "`model.safetensors`: `__metadata__` value of `format` is a number, expected a string"
    );
}

fn entry_problem(entry: &str) -> String {
    match parse(&format!(r#"{{"t":{entry}}}"#), 0).unwrap_err() {
        WeightsError::InvalidTensorEntry {
            tensor, problem, ..
        } => {
            assert_eq!(tensor, "t");
            problem
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn err_invalid_tensor_entries() {
    assert_eq!(
        entry_problem("3"),
        "entry is a number, expected an object with `dtype`, `shape` and `data_offsets`"
    );
    assert_eq!(
        entry_problem(r#"{"shape":[],"data_offsets":[0,0]}"#),
        "`dtype` is missing"
    );
    assert_eq!(
        entry_problem(r#"{"dtype":1,"shape":[],"data_offsets":[0,0]}"#),
        "`dtype` is a number, expected a string"
    );
    assert_eq!(
        entry_problem(r#"{"dtype":"U8","data_offsets":[0,0]}"#),
        "`shape` is missing"
    );
    assert_eq!(
        entry_problem(r#"{"dtype":"U8","shape":{},"data_offsets":[0,0]}"#),
        "`shape` is an object, expected an array"
    );
    assert_eq!(
        entry_problem(r#"{"dtype":"U8","shape":[2,-1],"data_offsets":[0,0]}"#),
        "`shape[1]` is -1, expected a non-negative integer"
    );
    assert_eq!(
        entry_problem(r#"{"dtype":"U8","shape":[2.5],"data_offsets":[0,0]}"#),
        "`shape[0]` is 2.5, expected a non-negative integer"
    );
    assert_eq!(
        entry_problem(r#"{"dtype":"U8","shape":[]}"#),
        "`data_offsets` is missing"
    );
    assert_eq!(
        entry_problem(r#"{"dtype":"U8","shape":[],"data_offsets":[0]}"#),
        "`data_offsets` has 1 items, expected 2"
    );
    assert_eq!(
        entry_problem(r#"{"dtype":"U8","shape":[],"data_offsets":"0,1"}"#),
        "`data_offsets` is a string, expected an array of 2 integers"
    );
    assert_eq!(
        entry_problem(r#"{"dtype":"U8","shape":[],"data_offsets":[0,"1"]}"#),
        "`data_offsets` end is \"1\", expected a non-negative integer"
    );
}

#[test]
fn err_unknown_dtype() {
    let err = parse(&format!("{{{}}}", tensor("t", "F7", "[1]", 0, 1)), 1).unwrap_err();
    assert_eq!(
        err.to_string(),
        "`model.safetensors`: tensor `t` has unknown dtype `F7`"
    );
    // Names are case-sensitive, as in the reference reader.
    let err = parse(&format!("{{{}}}", tensor("t", "bf16", "[1]", 0, 2)), 2).unwrap_err();
    assert!(matches!(err, WeightsError::UnknownDtype { ref dtype, .. } if dtype == "bf16"));
}

#[test]
fn err_too_many_dims() {
    let shape = format!("[{}]", vec!["1"; 17].join(","));
    let err = parse(&format!("{{{}}}", tensor("t", "U8", &shape, 0, 1)), 1).unwrap_err();
    assert!(matches!(
        err,
        WeightsError::TooManyDims {
            ndim: 17,
            max: 16,
            ..
        }
    ));
}

#[test]
fn err_overflowing_shape() {
    let json = format!("{{{}}}", tensor("t", "U8", "[4294967296,4294967296]", 0, 0));
    let err = parse(&json, 0).unwrap_err();
    assert_eq!(
        err.to_string(),
        "`model.safetensors`: tensor `t` with shape [4294967296, 4294967296] overflows 64 bits"
    );
    // The element count fits, its size in bytes does not.
    let json = format!("{{{}}}", tensor("t", "F64", "[4611686018427387904]", 0, 0));
    assert!(matches!(
        parse(&json, 0).unwrap_err(),
        WeightsError::ShapeOverflow { .. }
    ));
}

#[test]
fn err_bytes_mismatch() {
    let err = parse(&format!("{{{}}}", tensor("t", "F32", "[3]", 0, 8)), 8).unwrap_err();
    assert_eq!(
        err.to_string(),
        "`model.safetensors`: tensor `t` declares 8 bytes but shape [3] x `F32` needs 12"
    );
}

#[test]
fn err_offsets_reversed() {
    let err = parse(&format!("{{{}}}", tensor("t", "U8", "[0]", 5, 4)), 5).unwrap_err();
    assert!(matches!(
        err,
        WeightsError::InvalidOffsets {
            begin: 5,
            end: 4,
            ..
        }
    ));
}

#[test]
fn err_overlapping_offsets() {
    let json = format!(
        "{{{},{}}}",
        tensor("a", "U8", "[8]", 0, 8),
        tensor("b", "U8", "[8]", 4, 12)
    );
    let err = parse(&json, 12).unwrap_err();
    assert_eq!(
        err.to_string(),
        "`model.safetensors`: tensors `a` (data bytes 0..8) and `b` (from 4) overlap"
    );
}

#[test]
fn err_offsets_past_the_end() {
    let err = parse(&format!("{{{}}}", tensor("t", "U8", "[8]", 0, 8)), 7).unwrap_err();
    assert_eq!(
        err.to_string(),
        "`model.safetensors`: tensor `t` ends at data offset 8 but the data section is 7 bytes"
    );
}

#[test]
fn err_gap() {
    let json = format!(
        "{{{},{}}}",
        tensor("a", "U8", "[4]", 0, 4),
        tensor("b", "U8", "[4]", 6, 10)
    );
    let err = parse(&json, 10).unwrap_err();
    assert_eq!(
        err.to_string(),
        "`model.safetensors`: data bytes 4..6 belong to no tensor (before `b`)"
    );
    let err = parse(&format!("{{{}}}", tensor("a", "U8", "[4]", 2, 6)), 6).unwrap_err();
    assert!(matches!(
        err,
        WeightsError::DataGap {
            gap_begin: 0,
            gap_end: 2,
            ..
        }
    ));
}

#[test]
fn err_data_not_covered() {
    let err = parse(&format!("{{{}}}", tensor("a", "U8", "[4]", 0, 4)), 9).unwrap_err();
    assert_eq!(
        err.to_string(),
        "`model.safetensors`: tensors cover 4 data bytes but the data section is 9 bytes"
    );
}

#[test]
fn err_too_many_tensors() {
    // Entries are counted before any is validated, so cheap invalid ones suffice.
    let mut json = String::with_capacity(12 * (MAX_TENSORS as usize + 2));
    json.push('{');
    for i in 0..=MAX_TENSORS {
        write!(json, "\"{i}\":0,").unwrap();
    }
    json.push_str("\"__metadata__\":{}}");
    let err = parse(&json, 0).unwrap_err();
    assert!(
        matches!(
            err,
            WeightsError::TooManyTensors {
                count,
                max: MAX_TENSORS,
                ..
            } if count == MAX_TENSORS + 1
        ),
        "{err}"
    );
}

#[test]
fn ok_index() {
    let text = r#"{
      "metadata": {"total_size": 1234},
      "weight_map": {
        "lm_head.weight": "model-00002-of-00002.safetensors",
        "model.embed_tokens.weight": "model-00001-of-00002.safetensors",
        "model.norm.weight": "model-00002-of-00002.safetensors"
      }
    }"#;
    let index = parse_index(text, "model.safetensors.index.json").unwrap();
    assert_eq!(index.total_size, Some(1234));
    assert_eq!(
        index.shards,
        [
            "model-00001-of-00002.safetensors",
            "model-00002-of-00002.safetensors"
        ]
    );
    assert_eq!(
        index
            .tensors_in("model-00002-of-00002.safetensors")
            .collect::<Vec<_>>(),
        ["lm_head.weight", "model.norm.weight"]
    );
}

#[test]
fn ok_index_without_metadata_and_float_total() {
    let index = parse_index(r#"{"weight_map":{}}"#, "i").unwrap();
    assert_eq!(index.total_size, None);
    assert!(index.shards.is_empty());
    let index = parse_index(
        r#"{"metadata":{"total_size":1.5e10},"weight_map":{"a":"x.safetensors"}}"#,
        "i",
    )
    .unwrap();
    assert_eq!(index.total_size, Some(15_000_000_000));
}

#[test]
fn err_index() {
    let problem = |text: &str| match parse_index(text, "i").unwrap_err() {
        WeightsError::InvalidIndex { problem, .. } => problem,
        other => panic!("unexpected {other:?}"),
    };
    assert_eq!(problem(r#"{"metadata":{}}"#), "`weight_map` is missing");
    assert_eq!(
        problem(r#"{"weight_map":[]}"#),
        "`weight_map` is an array, expected an object"
    );
    assert_eq!(
        problem(r#"{"weight_map":{"a":1}}"#),
        "`weight_map` entry `a` is a number, expected a file name"
    );
    assert_eq!(
        problem(r#"{"weight_map":{"a":"../x.safetensors"}}"#),
        "`weight_map` entry `a` names shard `../x.safetensors`, expected a plain file name"
    );
    assert_eq!(
        problem(r#"{"weight_map":{"a":""}}"#),
        "`weight_map` entry `a` names shard ``, expected a plain file name"
    );
    assert_eq!(
        problem(r#"{"metadata":{"total_size":-1},"weight_map":{}}"#),
        "`metadata.total_size` is -1, expected a non-negative integer"
    );
    assert_eq!(
        problem(r#"{"metadata":{"total_size":"12"},"weight_map":{}}"#),
        "`metadata.total_size` is \"12\", expected a non-negative integer"
    );
    assert_eq!(
        problem(r#"{"metadata":[],"weight_map":{}}"#),
        "`metadata` is an array, expected an object"
    );
    assert!(matches!(
        parse_index("[]", "i").unwrap_err(),
        WeightsError::NotAnObject { .. }
    ));
    assert!(matches!(
        parse_index("{", "i").unwrap_err(),
        WeightsError::Json { .. }
    ));
    assert!(matches!(
        parse_index(r#"{"weight_map":{},"weight_map":{}}"#, "i").unwrap_err(),
        WeightsError::DuplicateKey { .. }
    ));
}

#[test]
fn err_total_elements_overflow() {
    // Two F4 tensors of 2^63 elements (2^62 bytes each) tile a 2^63-byte data section.
    let json = format!(
        "{{{},{}}}",
        tensor("a", "F4", "[9223372036854775808]", 0, 1 << 62),
        tensor("b", "F4", "[9223372036854775808]", 1 << 62, 1 << 63)
    );
    let err = parse(&json, 1 << 63).unwrap_err();
    assert_eq!(
        err,
        WeightsError::TotalOverflow {
            file: F.into(),
            what: "elements"
        }
    );
}

// Hostile but valid headers: each must be answered (parsed, or refused with a clear error)
// without building the document. Time and memory are measured by `bench/hostile.py`, not
// here; these check the answers on smaller versions of the same shapes.

/// `n` small arrays `[0,0]` as one JSON array.
fn small_arrays(n: usize) -> String {
    let mut out = String::with_capacity(6 * n + 2);
    out.push('[');
    for i in 0..n {
        if i > 0 {
            out.push(',');
        }
        out.push_str("[0,0]");
    }
    out.push(']');
    out
}

#[test]
fn ok_unknown_field_of_many_small_arrays() {
    let json = format!(
        r#"{{"__metadata__":{{"format":"pt"}},"w":{{"dtype":"F32","shape":[2],"data_offsets":[0,8],"junk":{}}}}}"#,
        small_arrays(1_000_000)
    );
    let h = parse(&json, 8).unwrap();
    assert_eq!(h.tensors.len(), 1);
    assert_eq!(h.tensors[0].shape, [2]);
    assert_eq!(h.metadata.len(), 1);
}

#[test]
fn err_top_level_key_of_many_small_arrays() {
    let json = format!(
        r#"{{"__metadata__":{{"format":"pt"}},"junk":{},"w":{{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}}}"#,
        small_arrays(1_000_000)
    );
    assert_eq!(
        parse(&json, 8).unwrap_err().to_string(),
        "`model.safetensors`: tensor `junk`: entry is an array, expected an object with `dtype`, `shape` and `data_offsets`"
    );
    let json = format!(r#"{{"__metadata__":{}}}"#, small_arrays(1_000_000));
    assert_eq!(
        parse(&json, 0).unwrap_err().to_string(),
        "`model.safetensors`: `__metadata__` is an array, expected an object"
    );
}

/// `n` zero-size tensors `t0`, `t1`, ... at offset 0.
fn zero_size_tensors(n: u64) -> String {
    let mut json = String::with_capacity(60 * n as usize);
    json.push('{');
    for i in 0..n {
        if i > 0 {
            json.push(',');
        }
        write!(
            json,
            r#""t{i}":{{"dtype":"F32","shape":[0],"data_offsets":[0,0]}}"#
        )
        .unwrap();
    }
    json.push('}');
    json
}

#[test]
fn ok_the_most_zero_size_tensors() {
    let h = parse(&zero_size_tensors(MAX_TENSORS), 0).unwrap();
    assert_eq!(h.tensors.len() as u64, MAX_TENSORS);
    assert_eq!((h.total_elements, h.total_bytes), (0, 0));
    // Same offsets, so by name.
    assert_eq!(h.tensors[0].name, "t0");
    assert_eq!(h.tensors[1].name, "t1");
    assert_eq!(h.tensors[2].name, "t10");
}

#[test]
fn err_one_zero_size_tensor_too_many() {
    let err = parse(&zero_size_tensors(MAX_TENSORS + 3), 0).unwrap_err();
    assert_eq!(
        err,
        WeightsError::TooManyTensors {
            file: F.into(),
            count: MAX_TENSORS + 3,
            max: MAX_TENSORS
        }
    );
}

#[test]
fn err_a_million_dims_counted() {
    let shape = format!("[{}]", vec!["1"; 1_000_000].join(","));
    let err = parse(&format!("{{{}}}", tensor("t", "U8", &shape, 0, 1)), 1).unwrap_err();
    assert_eq!(
        err,
        WeightsError::TooManyDims {
            file: F.into(),
            tensor: "t".into(),
            ndim: 1_000_000,
            max: MAX_DIMS
        }
    );
}

#[test]
fn err_long_values_are_cut_in_messages() {
    let shape = format!("[{}]", small_arrays(100_000));
    assert_eq!(
        entry_problem(&format!(
            r#"{{"dtype":"U8","shape":{shape},"data_offsets":[0,0]}}"#
        )),
        "`shape[0]` is [[0,0],[0,0],[0,0],[0,0],[0,0],[0,0],[0,..., expected a non-negative integer"
    );
    let long = "x".repeat(1000);
    assert_eq!(
        entry_problem(&format!(
            r#"{{"dtype":"U8","shape":[],"data_offsets":[0,"{long}"]}}"#
        )),
        format!(
            "`data_offsets` end is \"{}..., expected a non-negative integer",
            &long[..39]
        )
    );
    assert_eq!(
        entry_problem(r#"{"dtype":"U8","shape":[{"a":[1,"\n"],"b":null}],"data_offsets":[0,0]}"#),
        r#"`shape[0]` is {"a":[1,"\n"],"b":null}, expected a non-negative integer"#
    );
}

#[test]
fn float_values_are_numbers() {
    // Under `arbitrary_precision`, serde_json hands floats and huge integers to visitors as a
    // one-entry map with a private key; the reader must still see a number.
    assert_eq!(
        entry_problem("1.5"),
        "entry is a number, expected an object with `dtype`, `shape` and `data_offsets`"
    );
    assert_eq!(
        entry_problem(r#"{"dtype":1e400,"shape":[],"data_offsets":[0,0]}"#),
        "`dtype` is a number, expected a string"
    );
    assert_eq!(
        entry_problem(r#"{"dtype":"U8","shape":[18446744073709551616],"data_offsets":[0,0]}"#),
        "`shape[0]` is 18446744073709551616, expected a non-negative integer"
    );
    // As serde_json keeps the text of a number (exponent normalised), like `Value` did.
    assert_eq!(
        entry_problem(r#"{"dtype":"U8","shape":[1E3],"data_offsets":[0,0]}"#),
        "`shape[0]` is 1e+3, expected a non-negative integer"
    );
    for json in ["2.5", "-0", "1e400"] {
        assert_eq!(
            parse(json, 0).unwrap_err(),
            WeightsError::NotAnObject {
                file: F.into(),
                found: "a number"
            },
            "{json}"
        );
    }
}

#[test]
fn err_first_problem_in_file_order() {
    let a = tensor("a", "U8", "[1]", 0, 1);
    let b = tensor("b", "U8", "[1]", 1, 2);
    let bad = r#""c":{"dtype":"U8","shape":[1]}"#;
    // The first repeated name in file order, not in name order.
    let err = parse(&format!("{{{b},{a},{a},{b}}}"), 2).unwrap_err();
    assert!(matches!(err, WeightsError::DuplicateTensor { ref tensor, .. } if tensor == "a"));
    // A repeat before a bad entry comes first; after it, the bad entry does.
    let err = parse(&format!("{{{a},{a},{bad}}}"), 2).unwrap_err();
    assert!(matches!(err, WeightsError::DuplicateTensor { .. }), "{err}");
    let err = parse(&format!("{{{a},{bad},{a}}}"), 2).unwrap_err();
    assert!(
        matches!(err, WeightsError::InvalidTensorEntry { .. }),
        "{err}"
    );
    // A bad entry whose name repeats is reported as the repeat (checked first).
    let bad_a = r#""a":{"dtype":"U8"}"#;
    let err = parse(&format!("{{{a},{bad_a}}}"), 1).unwrap_err();
    assert!(matches!(err, WeightsError::DuplicateTensor { ref tensor, .. } if tensor == "a"));
    // A repeat before a second `__metadata__` comes first.
    let err = parse(
        &format!(r#"{{{a},{a},"__metadata__":{{}},"__metadata__":{{}}}}"#),
        1,
    )
    .unwrap_err();
    assert!(matches!(err, WeightsError::DuplicateTensor { .. }), "{err}");
    // Syntax errors anywhere come before everything else.
    let err = parse(&format!("{{{a},{a},{b},}}"), 2).unwrap_err();
    assert!(matches!(err, WeightsError::Json { .. }), "{err}");
    // Keys other than `dtype`, `shape` and `data_offsets` are skipped; a repeated one keeps
    // the last value.
    let json =
        r#"{"w":{"dtype":"F7","x":{"y":[1,2.5]},"dtype":"U8","shape":[1],"data_offsets":[0,1]}}"#;
    assert_eq!(parse(json, 1).unwrap().tensors[0].dtype, Dtype::U8);
}

#[test]
fn ok_index_with_junk_and_repeats() {
    let text = format!(
        r#"{{"junk":{},"metadata":{{"other":[1,{{}}],"total_size":"x","total_size":12}},
            "weight_map":{{"a":"","b":"y.safetensors","a":"x.safetensors"}}}}"#,
        small_arrays(1_000_000)
    );
    let index = parse_index(&text, "i").unwrap();
    assert_eq!(index.total_size, Some(12));
    // A repeated tensor keeps its last shard; the replaced one is neither checked nor listed.
    assert_eq!(index.shards, ["x.safetensors", "y.safetensors"]);
    assert_eq!(index.weight_map["a"], "x.safetensors");
    assert!(matches!(
        parse_index(r#"{"weight_map":{"a":1,"b":"../x"}}"#, "i").unwrap_err(),
        WeightsError::InvalidIndex { ref problem, .. } if problem.contains("entry `a` is a number")
    ));
    assert!(matches!(
        parse_index("1.5", "i").unwrap_err(),
        WeightsError::NotAnObject {
            found: "a number",
            ..
        }
    ));
}

#[test]
fn err_too_many_metadata_entries() {
    let entries = |n: u64| {
        (0..n)
            .map(|i| format!(r#""{i}":"""#))
            .collect::<Vec<_>>()
            .join(",")
    };
    let json = format!(
        r#"{{"__metadata__":{{{}}}}}"#,
        entries(MAX_METADATA_ENTRIES)
    );
    assert_eq!(
        parse(&json, 0).unwrap().metadata.len() as u64,
        MAX_METADATA_ENTRIES
    );
    let json = format!(
        r#"{{"__metadata__":{{{}}}}}"#,
        entries(MAX_METADATA_ENTRIES + 10)
    );
    assert_eq!(
        parse(&json, 0).unwrap_err().to_string(),
        "`model.safetensors`: `__metadata__` has 65546 entries, more than the limit of 65536"
    );
}

#[test]
fn metadata_text_is_bounded_in_bytes_keys_and_values_together() {
    // 16 MiB exactly: one key `k` (1 byte) and a value of 16 MiB − 1 bytes.
    let limit = usize::try_from(MAX_METADATA_BYTES).unwrap();
    let value = "x".repeat(limit - 1);
    let json = format!(r#"{{"__metadata__":{{"k":"{value}"}}}}"#);
    assert_eq!(parse(&json, 0).unwrap().metadata["k"].len(), limit - 1);
    // One byte more is refused, naming the key and the limit.
    let json = format!(r#"{{"__metadata__":{{"k":"{value}x"}}}}"#);
    assert_eq!(
        parse(&json, 0).unwrap_err().to_string(),
        "`model.safetensors`: `__metadata__` value of `k` is 16,777,216 bytes, which takes `__metadata__` past its limit of 16,777,216 bytes (16 MiB) of text"
    );
    // Two values of 9 MiB: the second takes the total past the limit.
    let nine = "y".repeat(9 << 20);
    let json = format!(r#"{{"__metadata__":{{"a":"{nine}","b":"{nine}"}}}}"#);
    assert_eq!(
        parse(&json, 0).unwrap_err().to_string(),
        "`model.safetensors`: `__metadata__` value of `b` is 9,437,184 bytes, which takes `__metadata__` past its limit of 16,777,216 bytes (16 MiB) of text"
    );
    // A key longer than the limit is measured, never quoted.
    let json = format!(r#"{{"__metadata__":{{"{value}xy":"v"}}}}"#);
    assert_eq!(
        parse(&json, 0).unwrap_err().to_string(),
        "`model.safetensors`: `__metadata__` has a key of 16,777,217 bytes, which takes `__metadata__` past its limit of 16,777,216 bytes (16 MiB) of text"
    );
}

#[test]
fn a_tensor_name_is_bounded_in_bytes() {
    let limit = usize::try_from(MAX_NAME_LEN).unwrap();
    let name = "n".repeat(limit);
    let json = format!("{{{}}}", tensor(&name, "F32", "[1]", 0, 4));
    assert_eq!(parse(&json, 4).unwrap().tensors[0].name.len(), limit);
    // One byte more: refused with its length and its first 40 characters, in file order
    // (after the bad entry before it, before the one after it).
    let long = format!("x{name}");
    let json = format!(
        "{{{},{}}}",
        tensor(&long, "F32", "[1]", 0, 4),
        tensor("w", "F99", "[1]", 4, 8)
    );
    assert_eq!(
        parse(&json, 8).unwrap_err().to_string(),
        format!(
            "`model.safetensors`: a tensor name of 4097 bytes (`x{}...`) is longer than the limit of 4096",
            "n".repeat(39)
        )
    );
    let json = format!(
        "{{{},{}}}",
        tensor("w", "F99", "[1]", 0, 4),
        tensor(&long, "F32", "[1]", 4, 8)
    );
    assert!(
        parse(&json, 8)
            .unwrap_err()
            .to_string()
            .contains("unknown dtype `F99`")
    );
}

#[test]
fn tensor_names_are_bounded_in_bytes_all_together() {
    // 4,096 names of 4,096 bytes: 16 MiB exactly, accepted; one more is refused.
    let names = |n: usize| -> Vec<String> {
        (0..n)
            .map(|i| format!("{i:04}{}", "n".repeat(4092)))
            .collect()
    };
    let json = |names: &[String]| {
        let entries: Vec<String> = names
            .iter()
            .enumerate()
            .map(|(i, t)| tensor(t, "F32", "[1]", 4 * i as u64, 4 * i as u64 + 4))
            .collect();
        format!("{{{}}}", entries.join(","))
    };
    let ok = names(4096);
    assert_eq!(parse(&json(&ok), 4 * 4096).unwrap().tensors.len(), 4096);
    let over = names(4097);
    assert_eq!(
        parse(&json(&over), 4 * 4097).unwrap_err().to_string(),
        format!(
            "`model.safetensors`: the tensor names reach 16781312 bytes at `4096{}...`, more than the limit of 16777216 for all the names of a file",
            "n".repeat(36)
        )
    );
}

#[test]
fn err_index_too_many_entries() {
    let mut text = String::from(r#"{"weight_map":{"#);
    for i in 0..=MAX_TENSORS {
        if i > 0 {
            text.push(',');
        }
        write!(text, r#""{i}":"a""#).unwrap();
    }
    text.push_str("}}");
    assert_eq!(
        parse_index(&text, "i").unwrap_err().to_string(),
        "`i`: `weight_map` has 262145 entries, more than the limit of 262144"
    );
}

#[test]
fn an_index_is_checked_against_its_shards() {
    let a = parse(&format!("{{{}}}", tensor("x", "F32", "[2]", 0, 8)), 8).unwrap();
    let b = parse(
        &format!(
            "{{{},{}}}",
            tensor("y", "F32", "[2]", 0, 8),
            tensor("z", "F32", "[2]", 8, 16)
        ),
        16,
    )
    .unwrap();
    let shards = [("a.safetensors", &a), ("b.safetensors", &b)];
    // The index places `y` in `a` (`b` holds it), names `w` (nobody holds it), leaves out `z`
    // and declares 32 bytes where the tensors hold 24.
    let index = parse_index(
        r#"{"metadata":{"total_size":32},"weight_map":{"x":"a.safetensors","y":"a.safetensors","w":"b.safetensors"}}"#,
        "i.json",
    )
    .unwrap();
    let check = IndexCheck::new(&index, &shards);
    assert!(!check.agrees());
    assert_eq!(
        check.messages("i.json"),
        [
            "`i.json` names 1 tensor(s) that no shard holds: `w`",
            "`i.json` places 1 tensor(s) in another shard than the one holding them: `y` (index: `a.safetensors`, held by `b.safetensors`)",
            "1 tensor(s) in `b.safetensors` are not named by `i.json`: `z`",
            "`i.json` declares `metadata.total_size` = 32 bytes, but the shards' tensors hold 24",
        ]
    );
    let honest = parse_index(
        r#"{"metadata":{"total_size":24},"weight_map":{"x":"a.safetensors","y":"b.safetensors","z":"b.safetensors"}}"#,
        "i.json",
    )
    .unwrap();
    assert!(IndexCheck::new(&honest, &shards).agrees());
}
