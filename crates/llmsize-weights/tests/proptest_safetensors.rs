//! The SafeTensors reader never panics: random bytes, and valid headers with bytes flipped,
//! inserted or deleted. Each input is also parsed with a huge declared file length, so a
//! reader that sized an allocation from a length in the file would abort the test.

#![allow(
    clippy::indexing_slicing,
    clippy::cast_possible_truncation,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code: a panic is a test failure"
)]

use llmsize_weights::WeightsError;
use llmsize_weights::safetensors::{Dtype, SafetensorsHeader, parse_header, parse_index};
use proptest::prelude::*;

/// A valid header: tensors with random dtypes and small shapes, contiguous in a random
/// order. Returns the first 8 + N bytes and the data length.
fn valid_file() -> impl Strategy<Value = (Vec<u8>, u64)> {
    let tensor = (
        0..Dtype::ALL.len(),
        proptest::collection::vec(0u64..5, 0..4),
    );
    (proptest::collection::vec(tensor, 0..6), any::<bool>()).prop_map(|(tensors, metadata)| {
        let mut entries = Vec::new();
        if metadata {
            entries.push(r#""__metadata__":{"format":"pt"}"#.to_owned());
        }
        let mut offset = 0u64;
        for (i, (dtype, shape)) in tensors.iter().enumerate() {
            let dtype = Dtype::ALL[*dtype];
            let elements: u64 = shape.iter().product();
            let bytes = (elements * dtype.bits()).div_ceil(8);
            entries.push(format!(
                r#""t{i}":{{"dtype":"{dtype}","shape":{shape:?},"data_offsets":[{offset},{}]}}"#,
                offset + bytes
            ));
            offset += bytes;
        }
        // Reverse so that JSON order differs from offset order.
        entries.reverse();
        let json = format!("{{{}}}", entries.join(","));
        let mut out = (json.len() as u64).to_le_bytes().to_vec();
        out.extend_from_slice(json.as_bytes());
        (out, offset)
    })
}

#[derive(Debug, Clone)]
enum Mutation {
    Flip(usize, u8),
    Insert(usize, u8),
    Delete(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Flip(i, b)),
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Insert(i, b)),
        any::<usize>().prop_map(Mutation::Delete),
    ]
}

fn mutate(bytes: &mut Vec<u8>, mutations: &[Mutation]) {
    for m in mutations {
        let len = bytes.len();
        match *m {
            Mutation::Flip(i, b) if len > 0 => bytes[i % len] ^= b | 1,
            Mutation::Insert(i, b) => bytes.insert(i % (len + 1), b),
            Mutation::Delete(i) if len > 0 => {
                bytes.remove(i % len);
            }
            _ => {}
        }
    }
}

/// Whatever the input, an accepted header is self-consistent.
fn check_invariants(h: &SafetensorsHeader, file_len: u64) {
    assert_eq!(h.data_start, 8 + h.header_len);
    assert_eq!(h.data_start + h.data_len, file_len);
    assert_eq!(h.total_bytes, h.data_len);
    let mut end = 0;
    for t in &h.tensors {
        assert_eq!(t.data_offsets[0], end);
        assert_eq!(t.data_offsets[1] - t.data_offsets[0], t.bytes);
        assert_eq!(
            u128::from(t.bytes),
            (u128::from(t.elements) * u128::from(t.dtype.bits())).div_ceil(8)
        );
        assert_eq!(t.elements, t.shape.iter().product::<u64>());
        end = t.data_offsets[1];
    }
}

fn parse_all_ways(bytes: &[u8]) {
    let len = bytes.len() as u64;
    for file_len in [len, len + 7, 1 << 50, u64::MAX] {
        match parse_header(bytes, file_len, "p") {
            Ok(h) => check_invariants(&h, file_len),
            Err(e) => {
                let _ = e.to_string();
            }
        }
    }
    // The prefix the length asks for, if it is shorter.
    if let Ok(n) = llmsize_weights::safetensors::header_len(bytes, u64::MAX, "p")
        && let Some(prefix) = bytes.get(..(8 + n) as usize)
    {
        let _ = parse_header(prefix, u64::MAX, "p");
    }
    if let Ok(text) = std::str::from_utf8(bytes) {
        let _ = parse_index(text, "p");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        parse_all_ways(&bytes);
    }

    #[test]
    fn random_json_after_a_right_length_never_panics(
        body in proptest::collection::vec(
            prop_oneof![Just(b'{'), Just(b'}'), Just(b'['), Just(b']'), Just(b'"'), Just(b':'),
                        Just(b','), Just(b'1'), Just(b'-'), Just(b'e'), Just(b'.'), any::<u8>()],
            0..200),
    ) {
        let mut bytes = (body.len() as u64).to_le_bytes().to_vec();
        bytes.extend(body);
        parse_all_ways(&bytes);
    }

    #[test]
    fn valid_headers_parse((bytes, data_len) in valid_file()) {
        let file_len = bytes.len() as u64 + data_len;
        let h = parse_header(&bytes, file_len, "p").unwrap();
        check_invariants(&h, file_len);
        // Any shorter prefix asks for exactly the header.
        for cut in [0, 7, 8, bytes.len() / 2, bytes.len() - 1] {
            match parse_header(&bytes[..cut], file_len, "p") {
                Err(WeightsError::NeedMoreBytes { needed_at_least, .. }) => {
                    prop_assert_eq!(needed_at_least, if cut < 8 { 8 } else { bytes.len() as u64 });
                }
                other => prop_assert!(false, "cut {}: {:?}", cut, other),
            }
        }
    }

    #[test]
    fn mutated_headers_never_panic(
        (bytes, data_len) in valid_file(),
        mutations in proptest::collection::vec(mutation(), 1..6),
    ) {
        let mut bytes = bytes;
        mutate(&mut bytes, &mutations);
        parse_all_ways(&bytes);
        let file_len = bytes.len() as u64 + data_len;
        if let Ok(h) = parse_header(&bytes, file_len, "p") {
            check_invariants(&h, file_len);
        }
    }
}
