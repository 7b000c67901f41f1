//! Split GGUF: one model cut into `PREFIX-00001-of-0000N.gguf` … `PREFIX-0000N-of-0000N.gguf`.
//!
//! llama.cpp's `gguf-split` and gguf-py's `GGUFWriter(split_max_tensors=…)` write each shard as
//! a complete GGUF with its own header. The first shard holds the model's metadata; every shard
//! holds `split.no` (`u16`, 0-based), `split.count` (`u16`) and `split.tensors.count` (`i32`,
//! the tensors of all shards together). Shard `i` (0-based) is named with `i + 1`:
//! `llama_split_path` in llama.cpp (`src/llama.cpp`) formats `"%s-%05d-of-%05d.gguf"`, and
//! gguf-py's `SHARD_NAME_FORMAT` is `"{:s}-{:05d}-of-{:05d}.gguf"`.
//!
//! A model is every shard: [`merge_split`] takes the headers of the shards, however they were
//! read (local files, HTTP range requests), checks that they make one set and returns the
//! set with one header that holds the first shard's metadata and every shard's tensors.

use std::collections::BTreeMap;

use super::{GgufHeader, GgufValue};
use crate::error::WeightsError;

/// The shard's 0-based index (`u16`).
pub const SPLIT_NO: &str = "split.no";
/// How many shards the set has (`u16`).
pub const SPLIT_COUNT: &str = "split.count";
/// Tensors of all the shards together (`i32`).
pub const SPLIT_TENSORS_COUNT: &str = "split.tensors.count";

/// The `-NNNNN-of-MMMMM.gguf` end of a shard's file name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SplitName {
    /// Bytes of the name before the suffix (`model` in `model-00001-of-00003.gguf`).
    pub prefix_len: usize,
    /// The shard's number in the name, 1-based.
    pub no: u64,
    /// The number of shards in the name.
    pub count: u64,
}

/// `-{no:05}-of-{count:05}.gguf`: the end of shard `no`'s name (1-based, as in the name).
#[must_use]
pub fn split_suffix(no: u64, count: u64) -> String {
    format!("-{no:05}-of-{count:05}.gguf")
}

/// Leading ASCII digits at the end of `s`: `(rest, value)`, when there are at least five (the
/// `%05d` of the writers; more for a number past 99,999) and they fit a `u64`.
fn trailing_number(s: &[u8]) -> Option<(&[u8], u64)> {
    let digits = s.iter().rev().take_while(|b| b.is_ascii_digit()).count();
    if digits < 5 {
        return None;
    }
    let (rest, number) = s.split_at(s.len().saturating_sub(digits));
    let value = std::str::from_utf8(number).ok()?.parse().ok()?;
    Some((rest, value))
}

/// The shard suffix of a file name, if it has one (`model-00002-of-00003.gguf` → prefix
/// `model`, shard 2 of 3). Bytes, so a prefix that is not UTF-8 is kept as it is.
#[must_use]
pub fn parse_split_name(name: &[u8]) -> Option<SplitName> {
    parse_shard_name(name, ".gguf")
}

/// The `-NNNNN-of-MMMMM{ext}` suffix of a file name with extension `ext` (`.gguf`, or
/// `.safetensors` for the shards `transformers` writes: `model-00001-of-00004.safetensors`).
#[must_use]
pub fn parse_shard_name(name: &[u8], ext: &str) -> Option<SplitName> {
    let stem_len = name.len().checked_sub(ext.len())?;
    let (stem, end) = name.split_at(stem_len);
    if !end.eq_ignore_ascii_case(ext.as_bytes()) {
        return None;
    }
    let (rest, count) = trailing_number(stem)?;
    let rest = rest.strip_suffix(b"-of-")?;
    let (rest, no) = trailing_number(rest)?;
    let prefix = rest.strip_suffix(b"-")?;
    (1..=count).contains(&no).then_some(SplitName {
        prefix_len: prefix.len(),
        no,
        count,
    })
}

/// Every shard's file name of the set `name` belongs to (itself included), in order; `None`
/// when `name` has no shard suffix. For names that are UTF-8 (Hub file paths).
#[must_use]
pub fn shard_names(name: &str) -> Option<Vec<String>> {
    let split = parse_split_name(name.as_bytes())?;
    let prefix = name.get(..split.prefix_len)?;
    Some(
        (1..=split.count)
            .map(|no| format!("{prefix}{}", split_suffix(no, split.count)))
            .collect(),
    )
}

/// The `split.*` keys of one shard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SplitInfo {
    /// `split.no`: the shard's index, 0-based.
    pub no: u64,
    /// `split.count`: shards in the set.
    pub count: u64,
    /// `split.tensors.count`: tensors of the whole set.
    pub tensors: u64,
}

/// A `split.*` key as a non-negative integer, or the error naming its type and value.
fn split_key(
    header: &GgufHeader,
    key: &'static str,
    file: &str,
) -> Result<Option<u64>, WeightsError> {
    match header.get(key) {
        None => Ok(None),
        Some(v) => match v {
            GgufValue::Array(_) | GgufValue::String(_) | GgufValue::Bool(_) => {
                Err(bad_key(file, key, v))
            }
            _ => v.as_u64().map(Some).ok_or_else(|| bad_key(file, key, v)),
        },
    }
}

fn bad_key(file: &str, key: &'static str, v: &GgufValue) -> WeightsError {
    WeightsError::SplitKey {
        file: file.to_owned(),
        key,
        found: v.describe(),
        expected: "a non-negative integer (llama.cpp's `gguf-split` writes a u16 or an i32)".into(),
    }
}

/// The shard's `split.*` keys: `None` for a file that is not part of a set (no `split.count`,
/// or a count of 1, as llama.cpp's loader reads it).
pub fn split_info(header: &GgufHeader, file: &str) -> Result<Option<SplitInfo>, WeightsError> {
    let Some(count) = split_key(header, SPLIT_COUNT, file)? else {
        return Ok(None);
    };
    if count <= 1 {
        return Ok(None);
    }
    let missing = |key: &'static str| WeightsError::SplitKey {
        file: file.to_owned(),
        key,
        found: "absent".into(),
        expected: format!("present in every shard of a split GGUF (`{SPLIT_COUNT}` is {count})"),
    };
    let no = split_key(header, SPLIT_NO, file)?.ok_or_else(|| missing(SPLIT_NO))?;
    if no >= count {
        return Err(WeightsError::SplitKey {
            file: file.to_owned(),
            key: SPLIT_NO,
            found: no.to_string(),
            expected: format!("a shard index below `{SPLIT_COUNT}` = {count} (0-based)"),
        });
    }
    let tensors = split_key(header, SPLIT_TENSORS_COUNT, file)?
        .ok_or_else(|| missing(SPLIT_TENSORS_COUNT))?;
    Ok(Some(SplitInfo { no, count, tensors }))
}

/// One file of a set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GgufShard {
    /// Its label (a path, `repo/file`).
    pub file: String,
    /// Its length in bytes.
    pub len: u64,
}

/// A GGUF model as one or more files.
#[derive(Debug, Clone, PartialEq)]
pub struct GgufSet {
    /// The files, in `split.no` order (one for a file that is not split).
    pub shards: Vec<GgufShard>,
    /// The model's header: the first shard's version, alignment and metadata, and the tensors
    /// of every shard in order (each tensor's `offset` is within its own shard's data section;
    /// `header_len`, `data_start` and `data_len` are the first shard's; `total_elements` and
    /// `total_bytes` are over every shard).
    pub header: GgufHeader,
    /// For each tensor of `header.tensors`, the index in `shards` of the file holding it.
    pub tensor_shard: Vec<usize>,
}

impl GgufSet {
    /// The file holding tensor `i` of `header.tensors`.
    #[must_use]
    pub fn file_of(&self, i: usize) -> Option<&str> {
        let s = *self.tensor_shard.get(i)?;
        self.shards.get(s).map(|s| s.file.as_str())
    }
}

/// Headers of the shards of one set (`(label, file length, header)`, in any order) as one
/// model; a single file that is not split is a set of one.
///
/// Checks, with llama.cpp's loader: each shard's `split.count` equals the number of shards
/// given and its `split.no` is unique, the tensors add up to `split.tensors.count`, and no
/// tensor name is in two shards ([`WeightsError::TensorInTwoFiles`] names both).
pub fn merge_split(parts: Vec<(String, u64, GgufHeader)>) -> Result<GgufSet, WeightsError> {
    let mut numbered: BTreeMap<u64, (String, u64, GgufHeader, SplitInfo)> = BTreeMap::new();
    let mut single = None;
    let given = crate::error::to_u64(parts.len());
    for (file, len, header) in parts {
        match split_info(&header, &file)? {
            None if given == 1 => single = Some((file, len, header)),
            None => {
                return Err(WeightsError::SplitSet {
                    file,
                    problem: format!(
                        "has no `{SPLIT_COUNT}` above 1, so it is not a shard of a split GGUF, but it was given with {} other files",
                        given.saturating_sub(1)
                    ),
                });
            }
            Some(info) => {
                if info.count != given {
                    return Err(WeightsError::SplitSet {
                        file,
                        problem: format!(
                            "`{SPLIT_COUNT}` is {}, but {given} shard(s) were given",
                            info.count
                        ),
                    });
                }
                if let Some((other, ..)) = numbered.get(&info.no) {
                    return Err(WeightsError::SplitSet {
                        file,
                        problem: format!(
                            "has `{SPLIT_NO}` = {}, as `{other}` does: a shard is given twice",
                            info.no
                        ),
                    });
                }
                numbered.insert(info.no, (file, len, header, info));
            }
        }
    }
    if let Some((file, len, header)) = single {
        let n = header.tensors.len();
        return Ok(GgufSet {
            shards: vec![GgufShard { file, len }],
            header,
            tensor_shard: vec![0; n],
        });
    }
    let mut shards = Vec::with_capacity(numbered.len());
    let mut merged: Option<GgufHeader> = None;
    let mut tensor_shard = Vec::new();
    let mut holder: BTreeMap<String, usize> = BTreeMap::new();
    let mut declared = None;
    for (i, (_, (file, len, header, info))) in numbered.into_iter().enumerate() {
        // Every shard declares the same total, and it is what they hold together.
        match declared {
            None => declared = Some((info.tensors, file.clone())),
            Some((n, ref first)) if n != info.tensors => {
                return Err(WeightsError::SplitSet {
                    file,
                    problem: format!(
                        "`{SPLIT_TENSORS_COUNT}` is {}, but `{first}` says {n}",
                        info.tensors
                    ),
                });
            }
            Some(_) => {}
        }
        for t in &header.tensors {
            if let Some(&j) = holder.get(&t.name) {
                // `j` is an earlier shard (a file never holds a name twice: its reader checks).
                let first = shards
                    .get(j)
                    .map_or_else(|| file.clone(), |s: &GgufShard| s.file.clone());
                return Err(WeightsError::TensorInTwoFiles {
                    tensor: t.name.clone(),
                    first,
                    second: file,
                });
            }
            holder.insert(t.name.clone(), i);
            tensor_shard.push(i);
        }
        match &mut merged {
            None => merged = Some(header),
            Some(m) => {
                let overflow = |what| WeightsError::TotalOverflow {
                    file: file.clone(),
                    what,
                };
                m.total_elements = m
                    .total_elements
                    .checked_add(header.total_elements)
                    .ok_or_else(|| overflow("elements"))?;
                m.total_bytes = m
                    .total_bytes
                    .checked_add(header.total_bytes)
                    .ok_or_else(|| overflow("bytes"))?;
                m.tensors.extend(header.tensors);
            }
        }
        shards.push(GgufShard { file, len });
    }
    let Some(header) = merged else {
        return Err(WeightsError::SplitSet {
            file: String::new(),
            problem: "no GGUF file was given".into(),
        });
    };
    if let Some((n, first)) = declared
        && n != crate::error::to_u64(header.tensors.len())
    {
        return Err(WeightsError::SplitSet {
            file: first,
            problem: format!(
                "`{SPLIT_TENSORS_COUNT}` is {n}, but the {} shards hold {} tensors",
                shards.len(),
                header.tensors.len()
            ),
        });
    }
    Ok(GgufSet {
        shards,
        header,
        tensor_shard,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gguf::{GgmlType, GgufKv, GgufTensor};

    /// A shard `no` (0-based) of `count` holding 4-element F32 tensors `names`.
    fn shard(no: u16, count: u16, total: i32, names: &[&str]) -> (String, u64, GgufHeader) {
        let kv = |key: &str, value| GgufKv {
            key: key.to_owned(),
            value,
        };
        let tensors: Vec<GgufTensor> = names
            .iter()
            .map(|n| GgufTensor {
                name: (*n).to_owned(),
                ggml_type: GgmlType::F32,
                dims: vec![4],
                elements: 4,
                bytes: 16,
                offset: 0,
            })
            .collect();
        let n = tensors.len() as u64;
        (
            format!("m-{:05}-of-{count:05}.gguf", no + 1),
            1000,
            GgufHeader {
                version: 3,
                alignment: 32,
                metadata: vec![
                    kv(SPLIT_NO, GgufValue::U16(no)),
                    kv(SPLIT_COUNT, GgufValue::U16(count)),
                    kv(SPLIT_TENSORS_COUNT, GgufValue::I32(total)),
                ],
                tensors,
                header_len: 100,
                data_start: 128,
                data_len: 872,
                total_elements: 4 * n,
                total_bytes: 16 * n,
            },
        )
    }

    #[test]
    fn shards_in_any_order_make_one_model() {
        let set = merge_split(vec![shard(1, 2, 3, &["c"]), shard(0, 2, 3, &["a", "b"])]).unwrap();
        let names: Vec<&str> = set.header.tensors.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["a", "b", "c"]);
        assert_eq!(set.file_of(2), Some("m-00002-of-00002.gguf"));
        assert_eq!(
            (set.header.total_elements, set.header.total_bytes),
            (12, 48)
        );
    }

    #[test]
    fn sets_that_do_not_add_up_are_refused() {
        let err = |parts| merge_split(parts).unwrap_err().to_string();
        assert_eq!(
            err(vec![shard(0, 2, 3, &["a", "b"]), shard(1, 2, 3, &["a"])]),
            "tensor `a` is in two files, `m-00001-of-00002.gguf` and `m-00002-of-00002.gguf`"
        );
        assert_eq!(
            err(vec![shard(0, 2, 4, &["a", "b"]), shard(1, 2, 4, &["c"])]),
            "`m-00001-of-00002.gguf`: `split.tensors.count` is 4, but the 2 shards hold 3 tensors"
        );
        assert_eq!(
            err(vec![shard(0, 3, 3, &["a"]), shard(1, 3, 3, &["b"])]),
            "`m-00001-of-00003.gguf`: `split.count` is 3, but 2 shard(s) were given"
        );
        assert_eq!(
            err(vec![shard(0, 2, 2, &["a"]), shard(0, 2, 2, &["b"])]),
            "`m-00001-of-00002.gguf`: has `split.no` = 0, as `m-00001-of-00002.gguf` does: a shard is given twice"
        );
        let (file, len, mut h) = shard(0, 2, 2, &["a"]);
        h.metadata[1].value = GgufValue::String("2".into());
        assert_eq!(
            err(vec![(file, len, h)]),
            "`m-00001-of-00002.gguf`: `split.count` is a string \"2\", expected a non-negative integer (llama.cpp's `gguf-split` writes a u16 or an i32)"
        );
    }

    #[test]
    fn shard_names_follow_the_writers_format() {
        let s = parse_split_name(b"Qwen3-8B-Q4_K_M-00002-of-00003.gguf").unwrap();
        assert_eq!((s.prefix_len, s.no, s.count), (15, 2, 3));
        assert_eq!(
            shard_names("a-b-00003-of-00003.gguf").unwrap(),
            [
                "a-b-00001-of-00003.gguf",
                "a-b-00002-of-00003.gguf",
                "a-b-00003-of-00003.gguf"
            ]
        );
        // Not shards: no suffix, too few digits, a number out of range, another extension.
        for name in [
            "model.gguf",
            "m-1-of-3.gguf",
            "m-00004-of-00003.gguf",
            "m-00000-of-00003.gguf",
            "m-00001-of-00003.safetensors",
            "00001-of-00003.gguf",
        ] {
            assert_eq!(parse_split_name(name.as_bytes()), None, "{name}");
        }
    }
}
