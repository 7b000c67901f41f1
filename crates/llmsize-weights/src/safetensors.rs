//! SafeTensors header reader: bytes in, validated tensor list out.
//!
//! A SafeTensors file is an 8-byte little-endian header length `N`, `N` bytes of UTF-8 JSON,
//! then the data section. The JSON object maps each tensor name to
//! `{"dtype", "shape", "data_offsets": [begin, end]}` (offsets relative to the data section),
//! plus an optional `"__metadata__"` object of strings. Spec and reference reader:
//! `huggingface/safetensors`, `safetensors/src/tensor.rs` (`SafeTensors::read_metadata`,
//! `Metadata::validate`).
//!
//! This module does no IO. A caller reads the first 8 bytes, asks [`header_len`] how long the
//! header is, reads exactly `8 + N` bytes (never the weights), and passes them with the real
//! file length to [`parse_header`]. The file length matters: it bounds the header and the
//! tensors' byte ranges, which must tile the data section exactly, as the reference reader
//! demands.
//!
//! # Example
//!
//! ```
//! use llmsize_weights::safetensors::{parse_header, Dtype};
//!
//! let json = br#"{"w":{"dtype":"F16","shape":[2,3],"data_offsets":[0,12]}}"#;
//! let mut file = (json.len() as u64).to_le_bytes().to_vec();
//! file.extend_from_slice(json);
//! let file_len = file.len() as u64 + 12; // the 12 data bytes need not be in memory
//! let header = parse_header(&file, file_len, "model.safetensors")?;
//! assert_eq!(header.tensors[0].dtype, Dtype::F16);
//! assert_eq!(header.total_elements, 6);
//! # Ok::<(), llmsize_weights::WeightsError>(())
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde_json::{Map, Value};

use crate::error::{WeightsError, to_u64};
use crate::json::{Document, kind, parse_document, show};

/// Largest header accepted, in bytes: the limit of the `safetensors` crate (`MAX_HEADER_SIZE`).
pub const MAX_HEADER_SIZE: u64 = 100_000_000;

/// Most tensors accepted in one file. DeepSeek-V3's largest shard holds a few thousand.
pub const MAX_TENSORS: u64 = 1_000_000;

/// Most dimensions accepted for one tensor.
pub const MAX_DIMS: u64 = 16;

/// The key of the optional string-to-string metadata object.
pub const METADATA_KEY: &str = "__metadata__";

/// A SafeTensors dtype, the full list of the `safetensors` crate 0.8 (`Dtype`).
///
/// Sizes are in bits, so the 4- and 6-bit float formats are exact.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Dtype {
    /// `BOOL`, stored in one byte.
    Bool,
    /// `F4`: 4-bit float (e2m1, the MXFP4/NVFP4 element), two per byte.
    F4,
    /// `F6_E2M3`: 6-bit float.
    F6E2M3,
    /// `F6_E3M2`: 6-bit float.
    F6E3M2,
    /// `U8`.
    U8,
    /// `I8`.
    I8,
    /// `F8_E5M2`.
    F8E5M2,
    /// `F8_E4M3` (PyTorch `float8_e4m3fn`).
    F8E4M3,
    /// `F8_E8M0`: the MX block-scale format.
    F8E8M0,
    /// `F8_E4M3FNUZ`.
    F8E4M3Fnuz,
    /// `F8_E5M2FNUZ`.
    F8E5M2Fnuz,
    /// `I16`.
    I16,
    /// `U16`.
    U16,
    /// `F16`.
    F16,
    /// `BF16`.
    BF16,
    /// `I32`.
    I32,
    /// `U32`.
    U32,
    /// `F32`.
    F32,
    /// `C64`: complex with two 32-bit float parts.
    C64,
    /// `F64`.
    F64,
    /// `I64`.
    I64,
    /// `U64`.
    U64,
}

impl Dtype {
    /// Every dtype, in the `safetensors` crate's order.
    pub const ALL: [Dtype; 22] = [
        Dtype::Bool,
        Dtype::F4,
        Dtype::F6E2M3,
        Dtype::F6E3M2,
        Dtype::U8,
        Dtype::I8,
        Dtype::F8E5M2,
        Dtype::F8E4M3,
        Dtype::F8E8M0,
        Dtype::F8E4M3Fnuz,
        Dtype::F8E5M2Fnuz,
        Dtype::I16,
        Dtype::U16,
        Dtype::F16,
        Dtype::BF16,
        Dtype::I32,
        Dtype::U32,
        Dtype::F32,
        Dtype::C64,
        Dtype::F64,
        Dtype::I64,
        Dtype::U64,
    ];

    /// Bits per element (`safetensors::Dtype::bitsize`).
    #[must_use]
    pub fn bits(self) -> u64 {
        match self {
            Dtype::F4 => 4,
            Dtype::F6E2M3 | Dtype::F6E3M2 => 6,
            Dtype::Bool
            | Dtype::U8
            | Dtype::I8
            | Dtype::F8E5M2
            | Dtype::F8E4M3
            | Dtype::F8E8M0
            | Dtype::F8E4M3Fnuz
            | Dtype::F8E5M2Fnuz => 8,
            Dtype::I16 | Dtype::U16 | Dtype::F16 | Dtype::BF16 => 16,
            Dtype::I32 | Dtype::U32 | Dtype::F32 => 32,
            Dtype::C64 | Dtype::F64 | Dtype::I64 | Dtype::U64 => 64,
        }
    }

    /// The name as written in a header, e.g. `BF16`, `F8_E4M3`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Dtype::Bool => "BOOL",
            Dtype::F4 => "F4",
            Dtype::F6E2M3 => "F6_E2M3",
            Dtype::F6E3M2 => "F6_E3M2",
            Dtype::U8 => "U8",
            Dtype::I8 => "I8",
            Dtype::F8E5M2 => "F8_E5M2",
            Dtype::F8E4M3 => "F8_E4M3",
            Dtype::F8E8M0 => "F8_E8M0",
            Dtype::F8E4M3Fnuz => "F8_E4M3FNUZ",
            Dtype::F8E5M2Fnuz => "F8_E5M2FNUZ",
            Dtype::I16 => "I16",
            Dtype::U16 => "U16",
            Dtype::F16 => "F16",
            Dtype::BF16 => "BF16",
            Dtype::I32 => "I32",
            Dtype::U32 => "U32",
            Dtype::F32 => "F32",
            Dtype::C64 => "C64",
            Dtype::F64 => "F64",
            Dtype::I64 => "I64",
            Dtype::U64 => "U64",
        }
    }

    /// The dtype written `name` in a header (exact, case-sensitive, as the reference reader).
    #[must_use]
    pub fn from_name(name: &str) -> Option<Dtype> {
        Dtype::ALL.into_iter().find(|d| d.as_str() == name)
    }
}

impl fmt::Display for Dtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One tensor of a SafeTensors header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SafetensorsTensor {
    /// Tensor name, e.g. `model.layers.0.self_attn.q_proj.weight`.
    pub name: String,
    /// Element type.
    pub dtype: Dtype,
    /// Shape, outermost dimension first (PyTorch order).
    pub shape: Vec<u64>,
    /// Number of elements: the product of `shape` (1 for a scalar `[]`).
    pub elements: u64,
    /// Bytes of data: `ceil(elements x bits / 8)`, equal to `end - begin`.
    pub bytes: u64,
    /// `[begin, end)` relative to the start of the data section.
    pub data_offsets: [u64; 2],
}

/// A validated SafeTensors header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SafetensorsHeader {
    /// `N`, the JSON header length from the first 8 bytes.
    pub header_len: u64,
    /// Byte offset of the data section in the file: `8 + N`.
    pub data_start: u64,
    /// Length of the data section: `file_len - 8 - N`, exactly covered by the tensors.
    pub data_len: u64,
    /// The `__metadata__` strings (empty if absent), sorted by key.
    pub metadata: BTreeMap<String, String>,
    /// The tensors in file order (by `data_offsets`).
    pub tensors: Vec<SafetensorsTensor>,
    /// Sum of `elements` over all tensors.
    pub total_elements: u64,
    /// Sum of `bytes` over all tensors (equal to `data_len`).
    pub total_bytes: u64,
}

impl SafetensorsHeader {
    /// The tensor called `name`, if any.
    #[must_use]
    pub fn tensor(&self, name: &str) -> Option<&SafetensorsTensor> {
        self.tensors.iter().find(|t| t.name == name)
    }
}

/// The header length `N` from the first 8 bytes of a SafeTensors file, checked against the
/// file length and [`MAX_HEADER_SIZE`]; the caller then reads exactly `8 + N` bytes.
///
/// `first8` may be longer than 8 bytes; only the first 8 are read.
pub fn header_len(first8: &[u8], file_len: u64, file: &str) -> Result<u64, WeightsError> {
    if file_len < 8 {
        return Err(WeightsError::Truncated {
            file: file.to_owned(),
            what: "header length",
            offset: 0,
            needed: 8,
            file_len,
        });
    }
    let Some(len_bytes) = first8.first_chunk::<8>() else {
        return Err(WeightsError::NeedMoreBytes {
            file: file.to_owned(),
            have: to_u64(first8.len()),
            needed_at_least: 8,
        });
    };
    let n = u64::from_le_bytes(*len_bytes);
    if n > MAX_HEADER_SIZE {
        return Err(WeightsError::HeaderTooLarge {
            file: file.to_owned(),
            header_len: n,
            max: MAX_HEADER_SIZE,
        });
    }
    let available = file_len.saturating_sub(8);
    if n > available {
        return Err(WeightsError::HeaderPastEnd {
            file: file.to_owned(),
            header_len: n,
            available,
            file_len,
        });
    }
    Ok(n)
}

/// Parse and validate a SafeTensors header.
///
/// `prefix` is the start of the file: at least the first 8 bytes, and for success the whole
/// header (`8 + N` bytes, see [`header_len`]); bytes after the header are ignored. A shorter
/// prefix gives [`WeightsError::NeedMoreBytes`] with the exact length to read. `file_len` is
/// the length of the whole file, `file` a label (usually the path) for error messages.
///
/// Checks: the length bounds, UTF-8, a JSON object, `__metadata__` an object of strings, every
/// other key a tensor with a known dtype, at most [`MAX_DIMS`] dimensions, a shape whose
/// product and bit size fit in 64 bits, `end - begin = ceil(elements x bits / 8)`, offsets
/// inside the data section, and the byte ranges sorted by offset tiling the data section with
/// no overlap and no gap (naming the tensors involved), at most [`MAX_TENSORS`] tensors, no
/// name twice.
pub fn parse_header(
    prefix: &[u8],
    file_len: u64,
    file: &str,
) -> Result<SafetensorsHeader, WeightsError> {
    if to_u64(prefix.len()) > file_len {
        return Err(WeightsError::PrefixLongerThanFile {
            file: file.to_owned(),
            prefix_len: to_u64(prefix.len()),
            file_len,
        });
    }
    let n = header_len(prefix, file_len, file)?;
    let data_start = n + 8; // n <= MAX_HEADER_SIZE, no overflow
    let json_bytes = usize::try_from(data_start)
        .ok()
        .and_then(|end| prefix.get(8..end))
        .ok_or_else(|| WeightsError::NeedMoreBytes {
            file: file.to_owned(),
            have: to_u64(prefix.len()),
            needed_at_least: data_start,
        })?;
    let data_len = file_len - data_start; // header_len checked n <= file_len - 8

    if let Err(e) = std::str::from_utf8(json_bytes) {
        return Err(WeightsError::HeaderNotUtf8 {
            file: file.to_owned(),
            offset: 8 + to_u64(e.valid_up_to()),
        });
    }
    let entries = match parse_document(json_bytes, file)? {
        Document::Object(entries) => entries,
        Document::Other(found) => {
            return Err(WeightsError::NotAnObject {
                file: file.to_owned(),
                found,
            });
        }
    };

    let (metadata, mut tensors) = collect_entries(&entries, data_len, file)?;

    tensors.sort_by(|a, b| (a.data_offsets, &a.name).cmp(&(b.data_offsets, &b.name)));
    let covered = check_tiling(&tensors, file)?;
    if covered != data_len {
        return Err(WeightsError::DataSectionMismatch {
            file: file.to_owned(),
            covered,
            data_len,
        });
    }

    let total_elements = tensors
        .iter()
        .try_fold(0u64, |acc, t| acc.checked_add(t.elements))
        .ok_or_else(|| WeightsError::TotalOverflow {
            file: file.to_owned(),
            what: "elements",
        })?;
    Ok(SafetensorsHeader {
        header_len: n,
        data_start,
        data_len,
        metadata,
        tensors,
        total_elements,
        // The ranges tile [0, data_len) exactly, so the bytes sum to data_len.
        total_bytes: covered,
    })
}

/// Split the top-level entries into `__metadata__` and tensors, each tensor validated alone.
fn collect_entries(
    entries: &[(String, Value)],
    data_len: u64,
    file: &str,
) -> Result<(BTreeMap<String, String>, Vec<SafetensorsTensor>), WeightsError> {
    let count = to_u64(
        entries
            .iter()
            .filter(|(name, _)| name != METADATA_KEY)
            .count(),
    );
    if count > MAX_TENSORS {
        return Err(WeightsError::TooManyTensors {
            file: file.to_owned(),
            count,
            max: MAX_TENSORS,
        });
    }
    let mut metadata = BTreeMap::new();
    let mut seen_metadata = false;
    let mut seen = BTreeSet::new();
    let mut tensors = Vec::with_capacity(entries.len());
    for (name, value) in entries {
        if name == METADATA_KEY {
            if seen_metadata {
                return Err(WeightsError::DuplicateKey {
                    file: file.to_owned(),
                    key: name.clone(),
                });
            }
            seen_metadata = true;
            metadata = parse_metadata(value, file)?;
            continue;
        }
        if !seen.insert(name.as_str()) {
            return Err(WeightsError::DuplicateTensor {
                file: file.to_owned(),
                tensor: name.clone(),
            });
        }
        let tensor = parse_tensor(name, value, file)?;
        if tensor.data_offsets[1] > data_len {
            return Err(WeightsError::TensorPastEnd {
                file: file.to_owned(),
                tensor: tensor.name,
                end: tensor.data_offsets[1],
                data_len,
            });
        }
        tensors.push(tensor);
    }

    Ok((metadata, tensors))
}

/// Check that the sorted ranges start at 0 and follow each other with no gap or overlap;
/// returns the end of the last one.
fn check_tiling(tensors: &[SafetensorsTensor], file: &str) -> Result<u64, WeightsError> {
    let mut end = 0u64;
    let mut previous: Option<&SafetensorsTensor> = None;
    for t in tensors {
        let [begin, stop] = t.data_offsets;
        if begin < end {
            // `previous` is set: end > 0 only after a tensor.
            let (first, first_begin) =
                previous.map_or((String::new(), 0), |p| (p.name.clone(), p.data_offsets[0]));
            return Err(WeightsError::TensorOverlap {
                file: file.to_owned(),
                first,
                first_begin,
                first_end: end,
                second: t.name.clone(),
                second_begin: begin,
            });
        }
        if begin > end {
            return Err(WeightsError::DataGap {
                file: file.to_owned(),
                gap_begin: end,
                gap_end: begin,
                next: t.name.clone(),
            });
        }
        end = stop;
        previous = Some(t);
    }
    Ok(end)
}

fn parse_metadata(value: &Value, file: &str) -> Result<BTreeMap<String, String>, WeightsError> {
    let invalid = |problem: String| WeightsError::InvalidMetadata {
        file: file.to_owned(),
        problem,
    };
    let object = match value {
        // The reference reader types it `Option<HashMap<String, String>>`: null is "absent".
        Value::Null => return Ok(BTreeMap::new()),
        Value::Object(object) => object,
        other => return Err(invalid(format!("is {}, expected an object", kind(other)))),
    };
    object
        .iter()
        .map(|(key, v)| match v {
            Value::String(s) => Ok((key.clone(), s.clone())),
            other => Err(invalid(format!(
                "value of `{key}` is {}, expected a string",
                kind(other)
            ))),
        })
        .collect()
}

/// A tensor entry being read: its name and file, for errors.
struct Entry<'a> {
    name: &'a str,
    file: &'a str,
}

impl Entry<'_> {
    fn invalid(&self, problem: String) -> WeightsError {
        WeightsError::InvalidTensorEntry {
            file: self.file.to_owned(),
            tensor: self.name.to_owned(),
            problem,
        }
    }

    fn dtype(&self, object: &Map<String, Value>) -> Result<Dtype, WeightsError> {
        let name = match field(object, "dtype").map_err(|p| self.invalid(p))? {
            Value::String(s) => s,
            other => {
                return Err(self.invalid(format!("`dtype` is {}, expected a string", kind(other))));
            }
        };
        Dtype::from_name(name).ok_or_else(|| WeightsError::UnknownDtype {
            file: self.file.to_owned(),
            tensor: self.name.to_owned(),
            dtype: name.clone(),
        })
    }

    fn shape(&self, object: &Map<String, Value>) -> Result<Vec<u64>, WeightsError> {
        let values = match field(object, "shape").map_err(|p| self.invalid(p))? {
            Value::Array(items) => items,
            other => {
                return Err(self.invalid(format!("`shape` is {}, expected an array", kind(other))));
            }
        };
        if to_u64(values.len()) > MAX_DIMS {
            return Err(WeightsError::TooManyDims {
                file: self.file.to_owned(),
                tensor: self.name.to_owned(),
                ndim: to_u64(values.len()),
                max: MAX_DIMS,
            });
        }
        values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                v.as_u64().ok_or_else(|| {
                    self.invalid(format!(
                        "`shape[{i}]` is {}, expected a non-negative integer",
                        show(v)
                    ))
                })
            })
            .collect()
    }

    fn offsets(&self, object: &Map<String, Value>) -> Result<[u64; 2], WeightsError> {
        let values = match field(object, "data_offsets").map_err(|p| self.invalid(p))? {
            Value::Array(items) => items,
            other => {
                return Err(self.invalid(format!(
                    "`data_offsets` is {}, expected an array of 2 integers",
                    kind(other)
                )));
            }
        };
        let [begin, end] = values.as_slice() else {
            return Err(self.invalid(format!(
                "`data_offsets` has {} items, expected 2",
                values.len()
            )));
        };
        let offset = |v: &Value, which: &str| {
            v.as_u64().ok_or_else(|| {
                self.invalid(format!(
                    "`data_offsets` {which} is {}, expected a non-negative integer",
                    show(v)
                ))
            })
        };
        let (begin, end) = (offset(begin, "begin")?, offset(end, "end")?);
        if end < begin {
            return Err(WeightsError::InvalidOffsets {
                file: self.file.to_owned(),
                tensor: self.name.to_owned(),
                begin,
                end,
            });
        }
        Ok([begin, end])
    }
}

fn parse_tensor(name: &str, value: &Value, file: &str) -> Result<SafetensorsTensor, WeightsError> {
    let entry = Entry { name, file };
    let Value::Object(object) = value else {
        return Err(entry.invalid(format!(
            "entry is {}, expected an object with `dtype`, `shape` and `data_offsets`",
            kind(value)
        )));
    };
    let dtype = entry.dtype(object)?;
    let shape = entry.shape(object)?;
    let [begin, end] = entry.offsets(object)?;

    let overflow = || WeightsError::ShapeOverflow {
        file: file.to_owned(),
        tensor: name.to_owned(),
        shape: shape.clone(),
    };
    let elements = shape
        .iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(d))
        .ok_or_else(overflow)?;
    // In u128 so that only a byte count over u64 overflows, not the intermediate bit count.
    // ceil, so a sub-byte tensor with an odd element count still has an exact size. The
    // `safetensors` crate instead rejects such a tensor (`MisalignedSlice`); see NOTES.md.
    let bits = u128::from(elements) * u128::from(dtype.bits());
    let needed = u64::try_from(bits.div_ceil(8)).map_err(|_| overflow())?;
    let declared = end - begin;
    if declared != needed {
        return Err(WeightsError::TensorSizeMismatch {
            file: file.to_owned(),
            tensor: name.to_owned(),
            dtype: dtype.as_str().to_owned(),
            shape,
            declared,
            needed,
        });
    }
    Ok(SafetensorsTensor {
        name: name.to_owned(),
        dtype,
        shape,
        elements,
        bytes: needed,
        data_offsets: [begin, end],
    })
}

fn field<'a>(object: &'a Map<String, Value>, key: &str) -> Result<&'a Value, String> {
    object.get(key).ok_or_else(|| format!("`{key}` is missing"))
}

/// A parsed `model.safetensors.index.json`: which shard holds each tensor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardIndex {
    /// `metadata.total_size`: bytes of tensor data over all shards, when given.
    pub total_size: Option<u64>,
    /// Tensor name to shard file name, sorted by tensor name.
    pub weight_map: BTreeMap<String, String>,
    /// The distinct shard file names, sorted (so `model-00001-of-00004...` comes first).
    pub shards: Vec<String>,
}

impl ShardIndex {
    /// The tensors the index places in `shard`, sorted by name.
    pub fn tensors_in<'a>(&'a self, shard: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.weight_map
            .iter()
            .filter(move |(_, s)| s.as_str() == shard)
            .map(|(t, _)| t.as_str())
    }
}

/// Parse a `model.safetensors.index.json` (`text` already read by the caller).
///
/// Requires an object with `weight_map`, an object from tensor name to shard file name.
/// `metadata` is optional; `metadata.total_size`, when present, must be a non-negative
/// integer (an integral float such as `1.5e10` is accepted, as some writers emit). Shard names
/// must be plain file names, with no `/`, `\` or `..`, so that a caller can join them to the
/// index's directory safely. If `weight_map` repeats a tensor name, the last entry wins, as in
/// Python's `json` and `transformers`.
pub fn parse_index(text: &str, file: &str) -> Result<ShardIndex, WeightsError> {
    let invalid = |problem: String| WeightsError::InvalidIndex {
        file: file.to_owned(),
        problem,
    };
    let entries = match parse_document(text.as_bytes(), file)? {
        Document::Object(entries) => entries,
        Document::Other(found) => {
            return Err(WeightsError::NotAnObject {
                file: file.to_owned(),
                found,
            });
        }
    };
    let mut weight_map_value = None;
    let mut metadata_value = None;
    for (key, value) in &entries {
        let slot = match key.as_str() {
            "weight_map" => &mut weight_map_value,
            "metadata" => &mut metadata_value,
            _ => continue,
        };
        if slot.replace(value).is_some() {
            return Err(WeightsError::DuplicateKey {
                file: file.to_owned(),
                key: key.clone(),
            });
        }
    }

    let total_size = match metadata_value {
        None | Some(Value::Null) => None,
        Some(Value::Object(metadata)) => match metadata.get("total_size") {
            None | Some(Value::Null) => None,
            Some(v) => Some(total_size(v).ok_or_else(|| {
                invalid(format!(
                    "`metadata.total_size` is {}, expected a non-negative integer",
                    show(v)
                ))
            })?),
        },
        Some(other) => {
            return Err(invalid(format!(
                "`metadata` is {}, expected an object",
                kind(other)
            )));
        }
    };

    let weight_map_object = match weight_map_value {
        Some(Value::Object(object)) => object,
        Some(other) => {
            return Err(invalid(format!(
                "`weight_map` is {}, expected an object",
                kind(other)
            )));
        }
        None => return Err(invalid("`weight_map` is missing".to_owned())),
    };
    let mut weight_map = BTreeMap::new();
    let mut shards = BTreeSet::new();
    for (tensor, shard) in weight_map_object {
        let Value::String(shard) = shard else {
            return Err(invalid(format!(
                "`weight_map` entry `{tensor}` is {}, expected a file name",
                kind(shard)
            )));
        };
        if !is_plain_file_name(shard) {
            return Err(invalid(format!(
                "`weight_map` entry `{tensor}` names shard `{shard}`, expected a plain file name"
            )));
        }
        shards.insert(shard.clone());
        weight_map.insert(tensor.clone(), shard.clone());
    }
    Ok(ShardIndex {
        total_size,
        weight_map,
        shards: shards.into_iter().collect(),
    })
}

fn total_size(value: &Value) -> Option<u64> {
    if let Some(n) = value.as_u64() {
        return Some(n);
    }
    let f = value.as_f64()?;
    // 2^64 as f64; anything at or above it does not fit.
    let limit = 18_446_744_073_709_551_616.0_f64;
    if f >= 0.0 && f < limit && f.fract() == 0.0 {
        // Exact: f is integral and in range.
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "checked above: integral, non-negative and below 2^64"
        )]
        let n = f as u64;
        Some(n)
    } else {
        None
    }
}

fn is_plain_file_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\\', '\0'])
}

#[cfg(test)]
mod tests;
