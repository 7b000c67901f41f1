//! GGUF header reader: bytes in, validated metadata and tensor list out.
//!
//! Layout (spec: `ggml/docs/gguf.md`; reader: `ggml/src/gguf.cpp` in ggml-org/llama.cpp):
//! magic `GGUF`, `u32` version, tensor count, metadata count, the metadata key/values, the
//! tensor infos (name, `u32` `n_dims`, `ne[n_dims]`, `u32` ggml type, `u64` offset), padding to
//! `general.alignment` (default 32), then the data section. Everything is little-endian.
//! Version 1 stores counts, string lengths, array lengths and dimensions as `u32`; versions 2
//! and 3 as `u64` (v3 only added big-endian files, which this reader detects and refuses).
//!
//! This module does no IO. The header has no length field, so the caller passes a prefix of
//! the file and its real length; if the prefix ends inside the header the reader returns
//! [`WeightsError::NeedMoreBytes`] and the caller reads more (doubling is a good policy) and
//! calls again. No length read from the file is trusted: each is checked against the bytes
//! left in the file and a named limit before anything is allocated.
//!
//! # Example
//!
//! ```
//! use llmsize_weights::gguf::{parse_header, GgmlType};
//!
//! // A v3 file with one metadata key and one 32-element Q8_0 tensor (34 bytes of data).
//! let mut f = b"GGUF".to_vec();
//! f.extend(3u32.to_le_bytes());
//! f.extend(1u64.to_le_bytes()); // tensors
//! f.extend(1u64.to_le_bytes()); // metadata keys
//! let key = b"general.architecture";
//! f.extend((key.len() as u64).to_le_bytes());
//! f.extend(key);
//! f.extend(8u32.to_le_bytes()); // string
//! f.extend(5u64.to_le_bytes());
//! f.extend(b"llama");
//! let name = b"w";
//! f.extend((name.len() as u64).to_le_bytes());
//! f.extend(name);
//! f.extend(1u32.to_le_bytes()); // n_dims
//! f.extend(32u64.to_le_bytes()); // ne[0]
//! f.extend(8u32.to_le_bytes()); // Q8_0
//! f.extend(0u64.to_le_bytes()); // offset
//! let data_start = (f.len() as u64).next_multiple_of(32);
//! let file_len = data_start + 34;
//!
//! let header = parse_header(&f, file_len, "tiny.gguf")?;
//! assert_eq!(header.architecture(), Some("llama"));
//! assert_eq!(header.tensors[0].ggml_type, GgmlType::Q8_0);
//! assert_eq!(header.tensors[0].bytes, 34);
//! assert_eq!(header.data_start, data_start);
//! # Ok::<(), llmsize_weights::WeightsError>(())
//! ```

mod reader;
pub mod split;
mod value;

use std::collections::{BTreeSet, HashSet};

pub use llmsize_core::ggml::GgmlType;
pub use value::{GgufArray, GgufValue, GgufValueType};

use crate::error::{WeightsError, to_u64};
use llmsize_core::checked;
use llmsize_core::ggml::GgmlTypeId as TypeId;
use reader::Cursor;

/// Largest header (magic to the end of the tensor infos) accepted, in bytes: 256 MiB.
/// A 256k-token vocabulary with scores and merges takes a few tens of MB.
pub const MAX_HEADER_SIZE: u64 = 256 << 20;

/// Longest string accepted (a key, a value or a tensor name), in bytes: 16 MiB.
pub const MAX_STRING_LEN: u64 = 16 << 20;

/// Most elements accepted in one metadata array: 16 Mi.
pub const MAX_ARRAY_LEN: u64 = 16 << 20;

/// Deepest nesting of arrays accepted (an array of arrays is depth 2).
pub const MAX_ARRAY_DEPTH: u64 = 8;

/// Most metadata keys accepted.
pub const MAX_KV_COUNT: u64 = 100_000;

/// Most tensors accepted: 2^18, as for SafeTensors (`crate::safetensors::MAX_TENSORS`).
/// llama.cpp fuses experts, so DeepSeek-V3 is about 1,100 tensors; a million tiny tensor
/// infos took 2 s and 645 MiB end to end.
pub const MAX_TENSORS: u64 = 1 << 18;

/// Most dimensions of a tensor: `GGML_MAX_DIMS`.
pub const MAX_DIMS: u64 = 4;

/// Alignment of the data section and of each tensor when `general.alignment` is absent
/// (`GGUF_DEFAULT_ALIGNMENT`).
pub const DEFAULT_ALIGNMENT: u64 = 32;

/// The key that overrides the alignment; it must be a `u32` power of two.
pub const ALIGNMENT_KEY: &str = "general.alignment";

const MAGIC: &[u8; 4] = b"GGUF";

/// One metadata key/value, in file order.
#[derive(Debug, Clone, PartialEq)]
pub struct GgufKv {
    /// The key, e.g. `llama.block_count`.
    pub key: String,
    /// The value.
    pub value: GgufValue,
}

/// One tensor info of a GGUF header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GgufTensor {
    /// Tensor name, e.g. `blk.0.attn_q.weight`.
    pub name: String,
    /// Storage type.
    pub ggml_type: GgmlType,
    /// `ne[]`: dimensions in ggml order, fastest-varying first (the reverse of PyTorch's).
    pub dims: Vec<u64>,
    /// Number of elements: the product of `dims` (1 for no dimensions).
    pub elements: u64,
    /// Bytes of data: `elements / block_size x type_size`.
    pub bytes: u64,
    /// Offset of the data relative to the data section; a multiple of the alignment.
    pub offset: u64,
}

impl GgufTensor {
    /// The shape in PyTorch order (outermost first): `dims` reversed.
    #[must_use]
    pub fn shape(&self) -> Vec<u64> {
        self.dims.iter().rev().copied().collect()
    }
}

/// A validated GGUF header.
#[derive(Debug, Clone, PartialEq)]
pub struct GgufHeader {
    /// Format version: 1, 2 or 3.
    pub version: u32,
    /// Data alignment: `general.alignment` or [`DEFAULT_ALIGNMENT`].
    pub alignment: u64,
    /// Metadata key/values in file order.
    pub metadata: Vec<GgufKv>,
    /// Tensor infos in file order.
    pub tensors: Vec<GgufTensor>,
    /// Bytes from the start of the file to the end of the tensor infos.
    pub header_len: u64,
    /// Byte offset of the data section: `header_len` rounded up to the alignment.
    pub data_start: u64,
    /// Length of the data section: `file_len - data_start` (0 if there are no tensors and
    /// the file ends before `data_start`).
    pub data_len: u64,
    /// Sum of `elements` over all tensors.
    pub total_elements: u64,
    /// Sum of `bytes` over all tensors.
    pub total_bytes: u64,
}

impl GgufHeader {
    /// The value of `key`, if present.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<&GgufValue> {
        self.metadata
            .iter()
            .find(|kv| kv.key == key)
            .map(|kv| &kv.value)
    }

    /// The tensor called `name`, if any.
    #[must_use]
    pub fn tensor(&self, name: &str) -> Option<&GgufTensor> {
        self.tensors.iter().find(|t| t.name == name)
    }

    /// `general.architecture`, e.g. `llama`.
    #[must_use]
    pub fn architecture(&self) -> Option<&str> {
        self.get("general.architecture")?.as_str()
    }

    /// `general.name`.
    #[must_use]
    pub fn name(&self) -> Option<&str> {
        self.get("general.name")?.as_str()
    }

    /// `general.file_type`: llama.cpp's `llama_ftype` (e.g. 15 = `MOSTLY_Q4_K_M`), which
    /// names the mix of types, not the type of every tensor.
    #[must_use]
    pub fn file_type(&self) -> Option<u64> {
        self.get("general.file_type")?.as_u64()
    }

    /// `general.quantization_version`.
    #[must_use]
    pub fn quantization_version(&self) -> Option<u64> {
        self.get("general.quantization_version")?.as_u64()
    }

    /// The value of `{architecture}.{suffix}`, e.g. `arch_value("block_count")`.
    #[must_use]
    pub fn arch_value(&self, suffix: &str) -> Option<&GgufValue> {
        let arch = self.architecture()?;
        self.metadata
            .iter()
            .find(|kv| {
                kv.key
                    .strip_prefix(arch)
                    .and_then(|rest| rest.strip_prefix('.'))
                    == Some(suffix)
            })
            .map(|kv| &kv.value)
    }

    /// True if the tensors are laid out as llama.cpp's `gguf.cpp` demands: in tensor-info
    /// order, the first at offset 0 and each next one where the previous one's bytes, padded
    /// to the alignment, end. This reader only requires aligned, in-bounds, non-overlapping
    /// ranges; a file for which this is false would not load in llama.cpp.
    #[must_use]
    pub fn is_sequential_layout(&self) -> bool {
        let mut expected = Some(0u64);
        for t in &self.tensors {
            if expected != Some(t.offset) {
                return false;
            }
            expected = t
                .offset
                .checked_add(t.bytes)
                .and_then(|end| end.checked_next_multiple_of(self.alignment));
        }
        true
    }

    /// `{architecture}.{suffix}` as `u64`, if it is a non-negative integer (of any width).
    #[must_use]
    pub fn arch_u64(&self, suffix: &str) -> Option<u64> {
        self.arch_value(suffix)?.as_u64()
    }

    /// `{arch}.context_length`.
    #[must_use]
    pub fn context_length(&self) -> Option<u64> {
        self.arch_u64("context_length")
    }

    /// `{arch}.block_count`: the number of layers.
    #[must_use]
    pub fn block_count(&self) -> Option<u64> {
        self.arch_u64("block_count")
    }

    /// `{arch}.embedding_length`: the hidden size.
    #[must_use]
    pub fn embedding_length(&self) -> Option<u64> {
        self.arch_u64("embedding_length")
    }

    /// `{arch}.feed_forward_length` when it is one number (some architectures store one per
    /// layer: use [`GgufHeader::arch_value`] for those).
    #[must_use]
    pub fn feed_forward_length(&self) -> Option<u64> {
        self.arch_u64("feed_forward_length")
    }

    /// `{arch}.attention.head_count` when it is one number.
    #[must_use]
    pub fn head_count(&self) -> Option<u64> {
        self.arch_u64("attention.head_count")
    }

    /// `{arch}.attention.head_count_kv` when it is one number (per-layer arrays exist, e.g.
    /// LFM2: use [`GgufHeader::arch_value`] and [`GgufArray::to_u64_vec`]).
    #[must_use]
    pub fn head_count_kv(&self) -> Option<u64> {
        self.arch_u64("attention.head_count_kv")
    }

    /// `{arch}.expert_count` (MoE).
    #[must_use]
    pub fn expert_count(&self) -> Option<u64> {
        self.arch_u64("expert_count")
    }

    /// `{arch}.expert_used_count` (MoE): experts per token.
    #[must_use]
    pub fn expert_used_count(&self) -> Option<u64> {
        self.arch_u64("expert_used_count")
    }

    /// `{arch}.vocab_size`, else the length of `tokenizer.ggml.tokens`.
    #[must_use]
    pub fn vocab_size(&self) -> Option<u64> {
        self.arch_u64("vocab_size").or_else(|| {
            self.get("tokenizer.ggml.tokens")?
                .as_array()
                .map(|a| to_u64(a.len()))
        })
    }
}

/// Parse and validate a GGUF header from a prefix of the file.
///
/// `prefix` is the start of the file, `file_len` the length of the whole file and `file` a
/// label for messages. If the header does not fit in `prefix`, the result is
/// [`WeightsError::NeedMoreBytes`]: read at least `needed_at_least` bytes (more is fine) and
/// call again. Bytes after the tensor infos are never read.
///
/// Checks: magic, version 1 to 3 (big-endian files named as such), counts and lengths against
/// the bytes left in the file and the limits ([`MAX_STRING_LEN`], [`MAX_ARRAY_LEN`],
/// [`MAX_ARRAY_DEPTH`], [`MAX_KV_COUNT`], [`MAX_TENSORS`], [`MAX_HEADER_SIZE`]), the 13
/// value types, bools 0 or 1, UTF-8 keys and tensor names, no key or tensor twice,
/// `general.alignment` a `u32` power of two, at most [`MAX_DIMS`] dimensions each at most
/// `INT64_MAX`, known ggml types (removed ids named), `ne[0]` a multiple of the block size,
/// sizes without overflow, offsets aligned, inside the data section and not overlapping.
pub fn parse_header(prefix: &[u8], file_len: u64, file: &str) -> Result<GgufHeader, WeightsError> {
    if to_u64(prefix.len()) > file_len {
        return Err(WeightsError::PrefixLongerThanFile {
            file: file.to_owned(),
            prefix_len: to_u64(prefix.len()),
            file_len,
        });
    }
    let mut cur = Cursor::new(prefix, file_len, file);
    let version = read_magic_and_version(&mut cur)?;
    cur.wide = version >= 2;

    let count_size = cur.count_size();
    // Smallest tensor info: empty name, n_dims, type, offset (no dims). Smallest key/value:
    // empty key, type, a one-byte value.
    let min_tensor_info = checked::add("count size + 4 + 4 + 8", count_size, 16)
        .map_err(WeightsError::arithmetic(file))?;
    let min_kv = checked::add("count size + 4 + 1", count_size, 5)
        .map_err(WeightsError::arithmetic(file))?;
    let tensor_count_offset = cur.pos();
    let tensor_count = cur.count("tensor count")?;
    let kv_count_offset = cur.pos();
    let kv_count = cur.count("metadata key count")?;
    if tensor_count > MAX_TENSORS {
        return Err(WeightsError::TooManyTensors {
            file: cur.file(),
            count: tensor_count,
            max: MAX_TENSORS,
        });
    }
    cur.check_count(
        "tensor count",
        tensor_count_offset,
        tensor_count,
        min_tensor_info,
        MAX_TENSORS,
    )?;
    cur.check_count(
        "metadata key count",
        kv_count_offset,
        kv_count,
        min_kv,
        MAX_KV_COUNT,
    )?;

    let metadata = read_metadata(&mut cur, kv_count, min_kv)?;
    let alignment = alignment_of(&metadata, file)?;
    let tensors = read_tensor_infos(&mut cur, tensor_count, min_tensor_info)?;

    let header_len = cur.pos();
    let data_start = header_len.checked_next_multiple_of(alignment);
    let data_len = match data_start.and_then(|start| file_len.checked_sub(start)) {
        Some(len) => len,
        None if tensors.is_empty() => 0,
        None => {
            return Err(WeightsError::DataStartPastEnd {
                file: file.to_owned(),
                data_start: data_start.unwrap_or(u64::MAX),
                file_len,
            });
        }
    };
    let data_start = data_start.unwrap_or(header_len);
    check_placement(&tensors, alignment, data_len, file)?;
    let (total_elements, total_bytes) = totals(&tensors, file)?;

    Ok(GgufHeader {
        version,
        alignment,
        metadata,
        tensors,
        header_len,
        data_start,
        data_len,
        total_elements,
        total_bytes,
    })
}

fn read_magic_and_version(cur: &mut Cursor<'_>) -> Result<u32, WeightsError> {
    let magic = cur.take(4, "magic")?;
    if magic != MAGIC {
        return Err(WeightsError::BadMagic {
            file: cur.file(),
            found: fixed(magic),
        });
    }
    let version = cur.u32("version")?;
    // gguf.cpp: a file of the other endianness reads its small version with the low 16 bits 0.
    if version != 0 && version.trailing_zeros() >= 16 {
        return Err(WeightsError::BigEndian {
            file: cur.file(),
            version_le: version,
            version_be: version.swap_bytes(),
        });
    }
    if !(1..=3).contains(&version) {
        return Err(WeightsError::UnsupportedVersion {
            file: cur.file(),
            version,
        });
    }
    Ok(version)
}

fn read_metadata(
    cur: &mut Cursor<'_>,
    kv_count: u64,
    min_kv: u64,
) -> Result<Vec<GgufKv>, WeightsError> {
    let mut metadata = Vec::with_capacity(cur.capacity_for(kv_count, min_kv));
    let mut keys = BTreeSet::new();
    for _ in 0..kv_count {
        let key = read_utf8(cur, "metadata key")?;
        if !keys.insert(key.clone()) {
            return Err(WeightsError::DuplicateKey {
                file: cur.file(),
                key,
            });
        }
        let type_offset = cur.pos();
        let type_id = cur.u32("value type")?;
        let value_type = value_type(cur, type_id, &key, type_offset)?;
        let value = read_value(cur, value_type, &key, 0)?;
        metadata.push(GgufKv { key, value });
    }
    Ok(metadata)
}

/// `general.alignment`: a `u32` power of two (so never 0), else [`DEFAULT_ALIGNMENT`].
fn alignment_of(metadata: &[GgufKv], file: &str) -> Result<u64, WeightsError> {
    match metadata.iter().find(|kv| kv.key == ALIGNMENT_KEY) {
        None => Ok(DEFAULT_ALIGNMENT),
        Some(GgufKv {
            value: GgufValue::U32(a),
            ..
        }) => {
            if a.is_power_of_two() {
                Ok(u64::from(*a))
            } else {
                Err(WeightsError::InvalidAlignment {
                    file: file.to_owned(),
                    alignment: *a,
                })
            }
        }
        Some(kv) => Err(WeightsError::AlignmentType {
            file: file.to_owned(),
            found: kv.value.value_type().as_str(),
        }),
    }
}

fn read_tensor_infos(
    cur: &mut Cursor<'_>,
    count: u64,
    min_tensor_info: u64,
) -> Result<Vec<GgufTensor>, WeightsError> {
    let mut tensors = Vec::with_capacity(cur.capacity_for(count, min_tensor_info));
    for _ in 0..count {
        tensors.push(read_tensor_info(cur)?);
    }
    // Names are checked once all are read, by hashing borrowed names: a copy of each name in
    // an ordered set cost most of the time of a file with 2^18 tensors.
    let mut names = HashSet::with_capacity(tensors.len());
    if let Some(again) = tensors.iter().find(|t| !names.insert(t.name.as_str())) {
        return Err(WeightsError::DuplicateTensor {
            file: cur.file(),
            tensor: again.name.clone(),
        });
    }
    Ok(tensors)
}

fn totals(tensors: &[GgufTensor], file: &str) -> Result<(u64, u64), WeightsError> {
    let overflow = |what| WeightsError::TotalOverflow {
        file: file.to_owned(),
        what,
    };
    let mut elements = 0u64;
    let mut bytes = 0u64;
    for t in tensors {
        elements = elements
            .checked_add(t.elements)
            .ok_or_else(|| overflow("elements"))?;
        // Non-overlapping ranges inside the data section cannot overflow; checked anyway.
        bytes = bytes
            .checked_add(t.bytes)
            .ok_or_else(|| overflow("bytes"))?;
    }
    Ok((elements, bytes))
}

fn value_type(
    cur: &Cursor<'_>,
    type_id: u32,
    key: &str,
    offset: u64,
) -> Result<GgufValueType, WeightsError> {
    GgufValueType::from_id(type_id).ok_or_else(|| WeightsError::InvalidValueType {
        file: cur.file(),
        key: key.to_owned(),
        offset,
        found: type_id,
    })
}

fn read_utf8(cur: &mut Cursor<'_>, what: &'static str) -> Result<String, WeightsError> {
    let (offset, bytes) = cur.string_bytes(what, MAX_STRING_LEN)?;
    match std::str::from_utf8(bytes) {
        Ok(s) => Ok(s.to_owned()),
        Err(_) => Err(WeightsError::NotUtf8 {
            file: cur.file(),
            what,
            offset,
        }),
    }
}

fn read_lossy(cur: &mut Cursor<'_>) -> Result<String, WeightsError> {
    let (_, bytes) = cur.string_bytes("string length", MAX_STRING_LEN)?;
    Ok(String::from_utf8_lossy(bytes).into_owned())
}

fn read_bool(cur: &mut Cursor<'_>, key: &str) -> Result<bool, WeightsError> {
    let offset = cur.pos();
    match cur.u8("bool")? {
        0 => Ok(false),
        1 => Ok(true),
        found => Err(WeightsError::InvalidBool {
            file: cur.file(),
            key: key.to_owned(),
            offset,
            found,
        }),
    }
}

fn read_value(
    cur: &mut Cursor<'_>,
    value_type: GgufValueType,
    key: &str,
    depth: u64,
) -> Result<GgufValue, WeightsError> {
    let what = "value";
    Ok(match value_type {
        GgufValueType::U8 => GgufValue::U8(cur.u8(what)?),
        GgufValueType::I8 => GgufValue::I8(i8::from_le_bytes([cur.u8(what)?])),
        GgufValueType::U16 => GgufValue::U16(u16::from_le_bytes(fixed(cur.take(2, what)?))),
        GgufValueType::I16 => GgufValue::I16(i16::from_le_bytes(fixed(cur.take(2, what)?))),
        GgufValueType::U32 => GgufValue::U32(cur.u32(what)?),
        GgufValueType::I32 => GgufValue::I32(i32::from_le_bytes(fixed(cur.take(4, what)?))),
        GgufValueType::F32 => GgufValue::F32(f32::from_le_bytes(fixed(cur.take(4, what)?))),
        GgufValueType::Bool => GgufValue::Bool(read_bool(cur, key)?),
        GgufValueType::String => GgufValue::String(read_lossy(cur)?),
        GgufValueType::Array => GgufValue::Array(read_array(cur, key, depth.saturating_add(1))?), // saturates: never, depth ≤ MAX_ARRAY_DEPTH
        GgufValueType::U64 => GgufValue::U64(cur.u64(what)?),
        GgufValueType::I64 => GgufValue::I64(i64::from_le_bytes(fixed(cur.take(8, what)?))),
        GgufValueType::F64 => GgufValue::F64(f64::from_le_bytes(fixed(cur.take(8, what)?))),
    })
}

/// The first `N` bytes of a slice that `Cursor::take` made exactly `N` long.
fn fixed<const N: usize>(bytes: &[u8]) -> [u8; N] {
    bytes.first_chunk::<N>().copied().unwrap_or([0; N])
}

/// Decode `n` fixed-size little-endian elements in one read.
fn elements<const N: usize, T>(
    cur: &mut Cursor<'_>,
    n: u64,
    from: fn([u8; N]) -> T,
) -> Result<Vec<T>, WeightsError> {
    // saturates: never, check_count bounded n x N by the bytes left in the file.
    let bytes = cur.take(n.saturating_mul(to_u64(N)), "array elements")?;
    let (chunks, _) = bytes.as_chunks::<N>();
    Ok(chunks.iter().map(|c| from(*c)).collect())
}

fn read_array(cur: &mut Cursor<'_>, key: &str, depth: u64) -> Result<GgufArray, WeightsError> {
    let offset = cur.pos();
    if depth > MAX_ARRAY_DEPTH {
        return Err(WeightsError::ArrayTooDeep {
            file: cur.file(),
            key: key.to_owned(),
            offset,
            depth,
            max: MAX_ARRAY_DEPTH,
        });
    }
    let type_id = cur.u32("array element type")?;
    let element_type = value_type(cur, type_id, key, offset)?;
    let len_offset = cur.pos();
    let n = cur.count("array length")?;
    let min_each = match element_type.fixed_size() {
        Some(size) => size,
        None if element_type == GgufValueType::String => cur.count_size(),
        None => cur.count_size().saturating_add(4), // 8 or 12; saturates: never
    };
    cur.check_count("array length", len_offset, n, min_each, MAX_ARRAY_LEN)?;

    Ok(match element_type {
        GgufValueType::U8 => GgufArray::U8(elements(cur, n, |b: [u8; 1]| b[0])?),
        GgufValueType::I8 => GgufArray::I8(elements(cur, n, i8::from_le_bytes)?),
        GgufValueType::U16 => GgufArray::U16(elements(cur, n, u16::from_le_bytes)?),
        GgufValueType::I16 => GgufArray::I16(elements(cur, n, i16::from_le_bytes)?),
        GgufValueType::U32 => GgufArray::U32(elements(cur, n, u32::from_le_bytes)?),
        GgufValueType::I32 => GgufArray::I32(elements(cur, n, i32::from_le_bytes)?),
        GgufValueType::F32 => GgufArray::F32(elements(cur, n, f32::from_le_bytes)?),
        GgufValueType::U64 => GgufArray::U64(elements(cur, n, u64::from_le_bytes)?),
        GgufValueType::I64 => GgufArray::I64(elements(cur, n, i64::from_le_bytes)?),
        GgufValueType::F64 => GgufArray::F64(elements(cur, n, f64::from_le_bytes)?),
        GgufValueType::Bool => {
            let start = cur.pos();
            let bytes = cur.take(n, "array elements")?;
            let mut out = Vec::with_capacity(bytes.len());
            for (i, &b) in bytes.iter().enumerate() {
                match b {
                    0 => out.push(false),
                    1 => out.push(true),
                    found => {
                        return Err(WeightsError::InvalidBool {
                            file: cur.file(),
                            key: key.to_owned(),
                            // saturates: never, an offset inside the prefix, which is in memory.
                            offset: start.saturating_add(to_u64(i)),
                            found,
                        });
                    }
                }
            }
            GgufArray::Bool(out)
        }
        GgufValueType::String => {
            let mut out = Vec::with_capacity(cur.capacity_for(n, min_each));
            for _ in 0..n {
                out.push(read_lossy(cur)?);
            }
            GgufArray::String(out)
        }
        GgufValueType::Array => {
            let mut out = Vec::with_capacity(cur.capacity_for(n, min_each));
            for _ in 0..n {
                out.push(read_array(cur, key, depth.saturating_add(1))?); // saturates: never, depth ≤ MAX_ARRAY_DEPTH
            }
            GgufArray::Array(out)
        }
    })
}

fn read_tensor_info(cur: &mut Cursor<'_>) -> Result<GgufTensor, WeightsError> {
    let name = read_utf8(cur, "tensor name")?;
    let n_dims = u64::from(cur.u32("tensor n_dims")?);
    if n_dims > MAX_DIMS {
        return Err(WeightsError::TooManyDims {
            file: cur.file(),
            tensor: name,
            ndim: n_dims,
            max: MAX_DIMS,
        });
    }
    let mut dims = Vec::with_capacity(4);
    for index in 0..n_dims {
        let value = cur.count("tensor dimension")?;
        // ggml keeps ne[] as int64_t: larger values are negative there.
        if i64::try_from(value).is_err() {
            return Err(WeightsError::InvalidDim {
                file: cur.file(),
                tensor: name,
                index,
                value,
            });
        }
        dims.push(value);
    }
    let type_id = cur.u32("tensor type")?;
    let offset = cur.u64("tensor offset")?;

    let ggml_type = match GgmlType::classify(type_id) {
        TypeId::Known(t) => t,
        TypeId::Removed(old) => {
            return Err(WeightsError::RemovedGgmlType {
                file: cur.file(),
                tensor: name,
                type_id,
                name: old,
            });
        }
        TypeId::Unknown => {
            return Err(WeightsError::UnknownGgmlType {
                file: cur.file(),
                tensor: name,
                type_id,
            });
        }
    };
    let overflow = |name: &str, dims: &[u64]| WeightsError::ShapeOverflow {
        file: cur.file(),
        tensor: name.to_owned(),
        shape: dims.to_vec(),
    };
    let elements = dims
        .iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| overflow(&name, &dims))?;
    let block_size = ggml_type.block_size();
    // A tensor with no dimensions is one element, as ggml's ne = [1, 1, 1, 1].
    let ne0 = dims.first().copied().unwrap_or(1);
    if ne0.checked_rem(block_size) != Some(0) {
        return Err(WeightsError::BlockMisaligned {
            file: cur.file(),
            tensor: name,
            ggml_type: ggml_type.name(),
            ne0,
            block_size,
        });
    }
    // ne[0] is a multiple of the block size, so elements is too.
    let bytes = elements
        .checked_div(block_size)
        .and_then(|blocks| blocks.checked_mul(ggml_type.type_size()))
        .ok_or_else(|| overflow(&name, &dims))?;
    Ok(GgufTensor {
        name,
        ggml_type,
        dims,
        elements,
        bytes,
        offset,
    })
}

/// Offsets aligned, ranges inside the data section, no two ranges overlapping.
fn check_placement(
    tensors: &[GgufTensor],
    alignment: u64,
    data_len: u64,
    file: &str,
) -> Result<(), WeightsError> {
    let mut ranges = Vec::with_capacity(tensors.len());
    // Sorted by begin, any overlap shows up between neighbours: if X overlaps Y, the range
    // right after X begins no later than Y, so inside X too.
    for t in tensors {
        if t.offset.checked_rem(alignment) != Some(0) {
            return Err(WeightsError::MisalignedOffset {
                file: file.to_owned(),
                tensor: t.name.clone(),
                offset: t.offset,
                alignment,
            });
        }
        let end = t
            .offset
            .checked_add(t.bytes)
            .filter(|&end| end <= data_len)
            .ok_or_else(|| WeightsError::TensorPastEnd {
                file: file.to_owned(),
                tensor: t.name.clone(),
                end: llmsize_core::checked::wide_add(t.offset, t.bytes),
                data_len,
            })?;
        // An empty tensor shares no byte with anything, wherever it points.
        if t.bytes > 0 {
            ranges.push((t.offset, end, t));
        }
    }
    ranges.sort_by(|a, b| (a.0, a.1, &a.2.name).cmp(&(b.0, b.1, &b.2.name)));
    for pair in ranges.windows(2) {
        if let [(first_begin, first_end, first), (second_begin, _, second)] = pair
            && second_begin < first_end
        {
            return Err(WeightsError::TensorOverlap {
                file: file.to_owned(),
                first: first.name.clone(),
                first_begin: *first_begin,
                first_end: *first_end,
                second: second.name.clone(),
                second_begin: *second_begin,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
