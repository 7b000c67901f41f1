//! The GGUF reader never panics: random bytes (with and without a valid magic and version),
//! and valid headers with bytes flipped, inserted or deleted. Each input is also parsed with
//! a huge declared file length, so a reader that sized an allocation from a count in the file
//! (instead of from the bytes it was given) would abort the test.

#![allow(
    clippy::indexing_slicing,
    clippy::cast_possible_truncation,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code: a panic is a test failure"
)]

#[path = "common/gguf_builder.rs"]
mod gguf_builder;

use gguf_builder::GgufBuilder;
use llmsize_weights::WeightsError;
use llmsize_weights::gguf::{GgmlType, GgufHeader, parse_header};
use proptest::prelude::*;

/// Value payloads of every type, including strings and nested arrays.
fn value(b: &GgufBuilder) -> impl Strategy<Value = (u32, Vec<u8>)> + use<> {
    let b1 = b.clone();
    let b2 = b.clone();
    let b3 = b.clone();
    prop_oneof![
        (0u32..=12)
            .prop_filter("scalar", |t| *t != 8 && *t != 9)
            .prop_map(|t| {
                let size = match t {
                    0 | 1 | 7 => 1,
                    2 | 3 => 2,
                    4..=6 => 4,
                    _ => 8,
                };
                let mut v = vec![0u8; size];
                v[0] = 1;
                (t, v)
            }),
        "[a-z.]{0,12}".prop_map(move |s| (8, b1.string(s.as_bytes()))),
        proptest::collection::vec(any::<u32>(), 0..8).prop_map(move |xs| {
            let mut e = Vec::new();
            for x in &xs {
                e.extend(x.to_le_bytes());
            }
            (9, b2.array(4, xs.len() as u64, &e))
        }),
        proptest::collection::vec("[a-z]{0,5}", 0..4).prop_map(move |xs| {
            let mut inner = Vec::new();
            for x in &xs {
                inner.extend(b3.string(x.as_bytes()));
            }
            let strings = b3.array(8, xs.len() as u64, &inner);
            (9, b3.array(9, 1, &strings))
        }),
    ]
}

/// A valid GGUF header with random metadata and tensors of random types, packed with
/// alignment padding. Returns the header bytes and the file length.
fn valid_file() -> impl Strategy<Value = (Vec<u8>, u64)> {
    (1u32..=3, 0usize..4)
        .prop_flat_map(|(version, n_kv)| {
            let b = GgufBuilder::new(version);
            let kvs = proptest::collection::vec(value(&b), n_kv);
            let types: Vec<GgmlType> = GgmlType::all().collect();
            let tensors = proptest::collection::vec(
                (
                    proptest::sample::select(types),
                    1u64..3,
                    proptest::collection::vec(1u64..4, 0..3),
                ),
                0..5,
            );
            (Just(b), kvs, tensors, any::<bool>())
        })
        .prop_map(|(mut b, kvs, tensors, custom_alignment)| {
            if custom_alignment {
                b = b.kv_u32("general.alignment", 64);
                b.alignment = 64;
            }
            for (i, (t, payload)) in kvs.into_iter().enumerate() {
                b = b.kv_raw(format!("k{i}").as_bytes(), t, &payload);
            }
            let mut offset = 0;
            for (i, (ty, blocks, rest)) in tensors.into_iter().enumerate() {
                let mut dims = vec![blocks * ty.block_size()];
                dims.extend(rest);
                let bytes = dims.iter().product::<u64>() / ty.block_size() * ty.type_size();
                b = b.tensor(&format!("t{i}"), &dims, ty.id(), offset);
                offset = (offset + bytes).next_multiple_of(b.alignment);
            }
            let file_len = b.file_len(offset);
            (b.build(), file_len)
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
fn check_invariants(h: &GgufHeader, file_len: u64) {
    assert!(h.alignment.is_power_of_two());
    assert_eq!(h.data_start % h.alignment, 0);
    assert!(h.data_start >= h.header_len);
    let mut ranges = Vec::new();
    for t in &h.tensors {
        assert!(t.dims.len() <= 4);
        assert_eq!(t.elements, t.dims.iter().product::<u64>());
        assert_eq!(
            t.bytes,
            t.elements / t.ggml_type.block_size() * t.ggml_type.type_size()
        );
        assert_eq!(t.offset % h.alignment, 0);
        assert!(t.offset + t.bytes <= h.data_len);
        assert!(h.data_start + t.offset + t.bytes <= file_len);
        if t.bytes > 0 {
            ranges.push((t.offset, t.offset + t.bytes));
        }
    }
    ranges.sort_unstable();
    for w in ranges.windows(2) {
        assert!(w[0].1 <= w[1].0, "overlap {w:?}");
    }
}

fn parse_all_ways(bytes: &[u8]) {
    let len = bytes.len() as u64;
    for file_len in [len, len + 31, 1 << 50, u64::MAX] {
        match parse_header(bytes, file_len, "p") {
            Ok(h) => check_invariants(&h, file_len),
            Err(WeightsError::NeedMoreBytes {
                needed_at_least, ..
            }) => assert!(needed_at_least > len && needed_at_least <= file_len),
            Err(e) => {
                let _ = e.to_string();
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        parse_all_ways(&bytes);
    }

    #[test]
    fn random_bytes_after_magic_never_panic(
        version in 1u32..=3,
        body in proptest::collection::vec(any::<u8>(), 0..256),
    ) {
        let mut bytes = b"GGUF".to_vec();
        bytes.extend(version.to_le_bytes());
        bytes.extend(body);
        parse_all_ways(&bytes);
    }

    #[test]
    fn valid_headers_parse_and_any_prefix_asks_for_more((bytes, file_len) in valid_file()) {
        let h = parse_header(&bytes, file_len, "p").unwrap();
        check_invariants(&h, file_len);
        prop_assert_eq!(h.header_len, bytes.len() as u64);
        prop_assert!(h.is_sequential_layout());
        for cut in 0..bytes.len() {
            match parse_header(&bytes[..cut], file_len, "p") {
                Err(WeightsError::NeedMoreBytes { needed_at_least, .. }) => {
                    prop_assert!(needed_at_least > cut as u64);
                    prop_assert!(needed_at_least <= bytes.len() as u64);
                }
                other => prop_assert!(false, "cut {}: {:?}", cut, other),
            }
        }
    }

    #[test]
    fn mutated_headers_never_panic(
        (bytes, file_len) in valid_file(),
        mutations in proptest::collection::vec(mutation(), 1..6),
    ) {
        let mut bytes = bytes;
        mutate(&mut bytes, &mutations);
        parse_all_ways(&bytes);
        let file_len = file_len.max(bytes.len() as u64);
        match parse_header(&bytes, file_len, "p") {
            Ok(h) => check_invariants(&h, file_len),
            Err(e) => { let _ = e.to_string(); }
        }
    }
}
