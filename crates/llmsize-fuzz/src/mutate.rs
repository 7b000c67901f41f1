//! Mutations: byte-level for every input, structure-aware for JSON (numbers swapped for
//! boundary values, entries repeated, dropped or retyped, size keys inserted), and a
//! SafeTensors length prefix kept in step with its JSON most of the time.
#![allow(
    clippy::indexing_slicing,
    reason = "every index is drawn by rng.usize(..len) from the slice it indexes"
)]

use fastrand::Rng;

use crate::seeds::{Kind, Seed};

/// Integers at the edges of the widths the readers use, for binary fields.
const BOUNDARY_INTS: [u64; 13] = [
    0,
    1,
    2,
    16,
    256,
    (1 << 31) - 1,
    1 << 31,
    (1 << 32) - 1,
    1 << 32,
    (1 << 63) - 1,
    1 << 63,
    u64::MAX - 1,
    u64::MAX,
];

/// Numbers to put in JSON: zero, negatives, huge, past `u64`, fractional, exponents.
const BOUNDARY_NUMBERS: [&str; 22] = [
    "0",
    "1",
    "-1",
    "2",
    "3",
    "1000000",
    "100000000",
    "2147483648",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "-9223372036854775808",
    "1e308",
    "-1e308",
    "1e400",
    "0.5",
    "-0",
    "1.5e10",
    "1e-9",
];

/// Size keys of `config.json` files, inserted with boundary values.
const SIZE_KEYS: [&str; 24] = [
    "num_hidden_layers",
    "num_layers",
    "num_decoder_layers",
    "n_layer",
    "hidden_size",
    "d_model",
    "n_embd",
    "num_attention_heads",
    "num_key_value_heads",
    "num_heads",
    "head_dim",
    "intermediate_size",
    "moe_intermediate_size",
    "d_ff",
    "vocab_size",
    "num_experts",
    "num_local_experts",
    "n_routed_experts",
    "num_experts_per_tok",
    "max_position_embeddings",
    "sliding_window",
    "first_k_dense_replace",
    "decoder_sparse_step",
    "kv_lora_rank",
];

/// Keys whose value is a per-layer list in some configs.
const LIST_KEYS: [&str; 3] = ["mlp_only_layers", "layer_types", "block_types"];

/// One mutated input from `seeds[index]`, with `rng` the iteration's own generator.
pub(crate) fn mutate(rng: &mut Rng, seeds: &[Seed], index: usize) -> Vec<u8> {
    let Some(seed) = seeds.get(index) else {
        return Vec::new();
    };
    let mut bytes = seed.bytes.clone();
    let rounds = rng.usize(1..=6);
    // A third of the time, only mutations that tend to keep the file valid (names changed,
    // unknown keys added), so that the adapters behind the readers see many accepted
    // headers, with names the category tables have never seen.
    let gentle = seed.kind != Kind::Json && rng.u8(..3) == 0;
    for _ in 0..rounds {
        match seed.kind {
            Kind::Safetensors if gentle => {
                let mut json = bytes.get(8..).unwrap_or_default().to_vec();
                rename_tensor(rng, &mut json);
                bytes.truncate(8);
                bytes.extend_from_slice(&json);
            }
            Kind::Gguf if gentle => printable_overwrite(rng, &mut bytes),
            Kind::Json if rng.u8(..4) != 0 => json_mutation(rng, &mut bytes),
            Kind::Safetensors if rng.u8(..4) != 0 => {
                let mut json = bytes.get(8..).unwrap_or_default().to_vec();
                json_mutation(rng, &mut json);
                bytes.truncate(8);
                bytes.extend_from_slice(&json);
            }
            _ => byte_mutation(rng, &mut bytes, seeds),
        }
    }
    // Most of the time keep the length prefix right, so the JSON is what gets tested.
    if seed.kind == Kind::Safetensors && bytes.len() >= 8 && rng.u8(..10) != 0 {
        let n = (bytes.len() - 8) as u64;
        bytes.splice(0..8, n.to_le_bytes());
    }
    bytes
}

/// Pieces of tensor names, Hugging Face and llama.cpp spellings, and a few odd characters.
const NAME_PIECES: [&str; 24] = [
    "model.",
    "layers.",
    "0.",
    "61.",
    "4294967296.",
    "self_attn.",
    "mlp.",
    "experts.",
    "weight",
    "bias",
    "q_proj",
    "embed_tokens",
    "lm_head",
    "norm",
    "blk.",
    "ffn_gate_exps",
    "attn_q",
    "token_embd",
    "output",
    ".",
    "_",
    "\\u00e9",
    "\\\\",
    "",
];

/// Insert a name piece into a top-level key (a tensor name) of a SafeTensors header, or
/// add an unknown key to a tensor entry.
fn rename_tensor(rng: &mut Rng, json: &mut Vec<u8>) {
    let scan = scan(json);
    let top: Vec<&Member> = scan.members.iter().filter(|m| m.depth == 1).collect();
    if top.is_empty() {
        return;
    }
    let m = top[rng.usize(..top.len())];
    if rng.u8(..4) == 0 {
        // `{"dtype": ...}` -> `{"junk": [1, {"a": []}], "dtype": ...}`
        if json.get(m.value_start) == Some(&b'{') {
            let at = m.value_start + 1;
            json.splice(at..at, br#""junk":[1,{"a":[]},"x"],"#.iter().copied());
        }
        return;
    }
    // Inside the key's quotes, not right after a backslash.
    let key_end = json
        .get(m.key + 1..m.value_start)
        .and_then(|k| k.iter().position(|&b| b == b'"'))
        .map_or(m.key + 1, |p| m.key + 1 + p);
    let at = rng.usize(m.key + 1..=key_end);
    if at > 0 && json.get(at - 1) == Some(&b'\\') {
        return;
    }
    let piece = NAME_PIECES[rng.usize(..NAME_PIECES.len())];
    json.splice(at..at, piece.bytes());
}

/// Overwrite 1 to 4 bytes with letters, digits or `.`: in a GGUF header most bytes belong to
/// keys, strings and tensor names, which this keeps valid UTF-8.
fn printable_overwrite(rng: &mut Rng, bytes: &mut [u8]) {
    const PRINTABLE: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789._";
    if bytes.is_empty() {
        return;
    }
    let at = rng.usize(..bytes.len());
    for b in bytes.iter_mut().skip(at).take(rng.usize(1..=4)) {
        *b = PRINTABLE[rng.usize(..PRINTABLE.len())];
    }
}

fn byte_mutation(rng: &mut Rng, bytes: &mut Vec<u8>, seeds: &[Seed]) {
    let len = bytes.len();
    match rng.u8(..7) {
        0 if len > 0 => {
            // Flip bits of one byte.
            let i = rng.usize(..len);
            if let Some(b) = bytes.get_mut(i) {
                *b ^= 1 << rng.u8(..8);
            }
        }
        1 if len > 0 => {
            let i = rng.usize(..len);
            if let Some(b) = bytes.get_mut(i) {
                *b = rng.u8(..);
            }
        }
        2 => {
            let i = rng.usize(..=len);
            let n = rng.usize(1..=16);
            let insert: Vec<u8> = (0..n).map(|_| rng.u8(..)).collect();
            bytes.splice(i..i, insert);
        }
        3 if len > 0 => {
            let i = rng.usize(..len);
            let end = (i + rng.usize(1..=64)).min(len);
            bytes.drain(i..end);
        }
        4 => {
            // Splice in a chunk of another seed (or this input), inserted or overwriting.
            let other = &seeds[rng.usize(..seeds.len())].bytes;
            if other.is_empty() {
                return;
            }
            let from = rng.usize(..other.len());
            let to = (from + rng.usize(1..=256)).min(other.len());
            let chunk = other.get(from..to).unwrap_or_default().to_vec();
            let at = rng.usize(..=len);
            if rng.bool() {
                bytes.splice(at..at, chunk);
            } else {
                let end = (at + chunk.len()).min(len);
                bytes.splice(at..end, chunk);
            }
        }
        _ => {
            // A boundary integer, little-endian, as u32 or u64, at any or an aligned offset.
            let value = BOUNDARY_INTS[rng.usize(..BOUNDARY_INTS.len())];
            let wide = rng.bool();
            let width = if wide { 8 } else { 4 };
            if len < width {
                return;
            }
            let mut at = rng.usize(..=len - width);
            if rng.bool() {
                at -= at % width;
            }
            let le = value.to_le_bytes();
            let src = if wide { &le[..] } else { &le[..4] };
            bytes.splice(at..at + width, src.iter().copied());
        }
    }
}

fn json_mutation(rng: &mut Rng, bytes: &mut Vec<u8>) {
    let scan = scan(bytes);
    match rng.u8(..7) {
        0 | 1 if !scan.numbers.is_empty() => {
            let (start, end) = scan.numbers[rng.usize(..scan.numbers.len())];
            let number = BOUNDARY_NUMBERS[rng.usize(..BOUNDARY_NUMBERS.len())];
            bytes.splice(start..end, number.bytes());
        }
        2 if !scan.members.is_empty() => {
            // Repeat an entry, as is or with a boundary value.
            let m = scan.members[rng.usize(..scan.members.len())];
            let mut copy = bytes.get(m.key..m.value_end).unwrap_or_default().to_vec();
            if rng.bool() {
                copy.truncate(m.value_start - m.key);
                copy.extend_from_slice(
                    BOUNDARY_NUMBERS[rng.usize(..BOUNDARY_NUMBERS.len())].as_bytes(),
                );
            }
            let mut insert = vec![b','];
            insert.extend(copy);
            bytes.splice(m.value_end..m.value_end, insert);
        }
        3 if !scan.members.is_empty() => {
            // Give an entry a value of another type.
            let m = scan.members[rng.usize(..scan.members.len())];
            let value: String = match rng.u8(..8) {
                0 => "null".into(),
                1 => "true".into(),
                2 => "\"x\"".into(),
                3 => "[]".into(),
                4 => "{}".into(),
                5 => "[[],[0],{}]".into(),
                6 => long_list(rng),
                _ => "[1,2,3]".into(),
            };
            bytes.splice(m.value_start..m.value_end, value.into_bytes());
        }
        4 if !scan.members.is_empty() => {
            // Drop an entry (and the comma before it, when there is one).
            let m = scan.members[rng.usize(..scan.members.len())];
            let start = if m.key > 0 && bytes.get(m.key - 1) == Some(&b',') {
                m.key - 1
            } else {
                m.key
            };
            bytes.drain(start..m.value_end);
        }
        5 if !scan.objects.is_empty() => {
            // Add a size key (or a per-layer list) at the start of an object.
            let at = scan.objects[rng.usize(..scan.objects.len())];
            let entry = if rng.u8(..4) == 0 {
                format!(
                    "\"{}\":{},",
                    LIST_KEYS[rng.usize(..LIST_KEYS.len())],
                    long_list(rng)
                )
            } else {
                format!(
                    "\"{}\":{},",
                    SIZE_KEYS[rng.usize(..SIZE_KEYS.len())],
                    BOUNDARY_NUMBERS[rng.usize(..BOUNDARY_NUMBERS.len())]
                )
            };
            bytes.splice(at..at, entry.into_bytes());
        }
        _ => {
            // Any JSON token at any place.
            let tokens = [
                "{",
                "}",
                "[",
                "]",
                ",",
                ":",
                "\"",
                "null",
                "\\u0000",
                "\"\\ud800\"",
                " ",
            ];
            let at = rng.usize(..=bytes.len());
            bytes.splice(at..at, tokens[rng.usize(..tokens.len())].bytes());
        }
    }
}

/// A list of 1 to 100,000 small integers (a layer list, or a long array anywhere).
fn long_list(rng: &mut Rng) -> String {
    let n = match rng.u8(..3) {
        0 => rng.usize(1..10),
        1 => rng.usize(10..1000),
        _ => 100_000,
    };
    let items: Vec<String> = (0..n).map(|i| i.to_string()).collect();
    format!("[{}]", items.join(","))
}

/// Where things are in a JSON text, found by a forgiving scanner (any bytes are fine).
#[derive(Default)]
struct Scan {
    /// `[start, end)` of each number token outside strings.
    numbers: Vec<(usize, usize)>,
    /// Each object member.
    members: Vec<Member>,
    /// Offsets just after each `{`.
    objects: Vec<usize>,
}

/// An open `{` or `[` while scanning: whether it is an object, and the member being read
/// (its key's start, and its value's start once seen).
type Container = (bool, Option<(usize, Option<usize>)>);

#[derive(Clone, Copy)]
struct Member {
    /// Nesting: 1 for a member of the top-level object.
    depth: usize,
    key: usize,
    value_start: usize,
    value_end: usize,
}

fn scan(bytes: &[u8]) -> Scan {
    let mut out = Scan::default();
    // For each open container: is it an object, and the member being read (key start,
    // value start).
    let mut stack: Vec<Container> = Vec::new();
    let mut i = 0;
    let mut last_string: Option<usize> = None;
    while i < bytes.len() {
        let b = bytes[i];
        match b {
            b'"' => {
                let start = i;
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    if bytes[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                last_string = Some(start);
            }
            b':' => {
                if let (Some((true, member)), Some(key)) = (stack.last_mut(), last_string) {
                    *member = Some((key, None));
                }
            }
            b'{' | b'[' => {
                mark_value_start(&mut stack, i);
                stack.push((b == b'{', None));
                if b == b'{' {
                    out.objects.push(i + 1);
                }
            }
            b'}' | b']' => {
                close_member(&mut stack, &mut out, i);
                stack.pop();
            }
            b',' => close_member(&mut stack, &mut out, i),
            b'-' | b'0'..=b'9' => {
                let start = i;
                while i + 1 < bytes.len()
                    && matches!(bytes[i + 1], b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-')
                {
                    i += 1;
                }
                mark_value_start(&mut stack, start);
                out.numbers.push((start, i + 1));
            }
            b if !b.is_ascii_whitespace() => mark_value_start(&mut stack, i),
            _ => {}
        }
        if b == b'"' {
            mark_value_start(&mut stack, last_string.unwrap_or(i));
        }
        i += 1;
    }
    out
}

/// A value starts at `at`, if a member is waiting for one.
fn mark_value_start(stack: &mut [Container], at: usize) {
    if let Some((true, Some((_, value @ None)))) = stack.last_mut() {
        *value = Some(at);
    }
}

/// The member being read (if any) ends before `at` (a `,` or the closing `}`).
fn close_member(stack: &mut [Container], out: &mut Scan, at: usize) {
    let stack_len = stack.len();
    if let Some((true, member)) = stack.last_mut()
        && let Some((key, Some(value_start))) = member.take()
        && value_start < at
    {
        out.members.push(Member {
            depth: stack_len,
            key,
            value_start,
            value_end: at,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scan_finds_members_and_numbers() {
        let text = br#"{"a": 1, "b": [2, {"c": "x"}], "d": -3.5e2}"#;
        let s = scan(text);
        let members: Vec<&str> = s
            .members
            .iter()
            .map(|m| std::str::from_utf8(&text[m.key..m.value_end]).unwrap())
            .collect();
        assert_eq!(
            members,
            [
                r#""a": 1"#,
                r#""c": "x""#,
                r#""b": [2, {"c": "x"}]"#,
                r#""d": -3.5e2"#
            ]
        );
        let numbers: Vec<&str> = s
            .numbers
            .iter()
            .map(|&(a, b)| std::str::from_utf8(&text[a..b]).unwrap())
            .collect();
        assert_eq!(numbers, ["1", "2", "-3.5e2"]);
        assert_eq!(s.objects.len(), 2);
    }
}
