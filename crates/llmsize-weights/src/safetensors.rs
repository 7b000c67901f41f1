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

use std::collections::btree_map;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fmt;

use serde::Deserialize;
use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use llmsize_core::checked;

use crate::error::{WeightsError, to_u64};
use crate::json::{Found, Handler, Seed, Text, Unsigned, cut, parse_with};

/// Largest header accepted, in bytes: the limit of the `safetensors` crate (`MAX_HEADER_SIZE`).
pub const MAX_HEADER_SIZE: u64 = 100_000_000;

/// Most tensors accepted in one file: 2^18. DeepSeek-V3's largest shard holds a few thousand
/// and its whole checkpoint about 92,000 (per-expert matrices and their FP8 scales over 163
/// shards); a limit 2.8 times that keeps every file and index that exists while a hostile file
/// of tiny entries stays under 1 s and 256 MiB from `inspect` (a million zero-size tensors
/// took 1.2 s and 620 MiB end to end).
pub const MAX_TENSORS: u64 = 1 << 18;

/// Most dimensions accepted for one tensor.
pub const MAX_DIMS: u64 = 16;

/// Longest tensor name accepted, in bytes: 4 KiB. Names are module paths
/// (`model.layers.61.mlp.experts.255.down_proj.weight_scale_inv`, 57 bytes); ggml caps its
/// own at 64 (`GGML_MAX_NAME`). Every name is kept, listed and laid out in tables, so one
/// 99 MB name took 685 MiB in `inspect`; a name is measured before it is copied.
pub const MAX_NAME_LEN: u64 = 4096;

/// Most bytes all the tensor names of one file may take: 16 MiB, [`MAX_TENSORS`] names of 64
/// bytes (real shards hold a few thousand names of about 50). Each byte of a name costs about
/// four in an `inspect` (kept, in the checkpoint, in the table or the JSON): 23,500 names of
/// 4 KiB (a 98 MB header) took 300–400 MiB.
pub const MAX_NAME_BYTES: u64 = 16 << 20;

/// The key of the optional string-to-string metadata object.
pub const METADATA_KEY: &str = "__metadata__";

/// Most `__metadata__` entries accepted. Writers store a handful (`"format": "pt"`); the
/// limit keeps a valid but hostile header (millions of tiny entries, ~120 bytes of memory
/// each) from costing gigabytes.
pub const MAX_METADATA_ENTRIES: u64 = 65_536;

/// Most bytes of text `__metadata__` may hold, its keys and values together: 16 MiB.
/// Writers store a few short strings (`"format": "pt"`); the longest published are LoRA
/// training records (kohya's `ss_tag_frequency`, `ss_dataset_dirs`) and `modelspec.thumbnail`
/// data URIs, kilobytes to a few megabytes. Metadata is shown, never counted, and each byte
/// of it costs about five in an `inspect` (kept here, merged into the checkpoint, laid out in
/// a table): a 99 MB string took 480 MiB. 16 MiB keeps the largest header (100 MB, read
/// whole) within 256 MiB; a string is measured before it is copied.
pub const MAX_METADATA_BYTES: u64 = 16 << 20;

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
///
/// The JSON is read in one pass that validates as it goes, never as a whole-document tree:
/// memory is the returned tensors (and a fixed amount per entry while it is read), whatever
/// else the header holds; numbers are read as `u64`. Tensors past
/// [`MAX_TENSORS`] are counted, never built; values the reader does not use (unknown keys in
/// an entry) are skipped without allocating. Errors are reported in a fixed order: JSON
/// syntax, then not an object, then too many tensors, then the first bad entry in file order,
/// then the tiling.
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
    let data_start = checked::add("8 + N", 8, n).map_err(WeightsError::arithmetic(file))?;
    let json_bytes = usize::try_from(data_start)
        .ok()
        .and_then(|end| prefix.get(8..end))
        .ok_or_else(|| WeightsError::NeedMoreBytes {
            file: file.to_owned(),
            have: to_u64(prefix.len()),
            needed_at_least: data_start,
        })?;
    // header_len checked N <= file length − 8.
    let data_len = checked::sub("file length − (8 + N)", file_len, data_start)
        .map_err(WeightsError::arithmetic(file))?;

    let text = match std::str::from_utf8(json_bytes) {
        Ok(text) => text,
        Err(e) => {
            return Err(WeightsError::HeaderNotUtf8 {
                file: file.to_owned(),
                // saturates: never, within the header's at most 100 MB.
                offset: to_u64(e.valid_up_to()).saturating_add(8),
            });
        }
    };
    let entries = match parse_with(text, Seed(TopLevel { data_len, file }), file)? {
        Document::Object(entries) => entries,
        Document::Other(found) => {
            return Err(WeightsError::NotAnObject {
                file: file.to_owned(),
                found,
            });
        }
    };
    let Entries {
        metadata,
        mut tensors,
        ..
    } = entries.finish(text, file)?;

    // File order: by offsets, then by name for zero-size tensors at the same offset. The
    // tensors come sorted by name (`Entries::finish`), so when the offsets already ascend in
    // that order (one tensor, or many zero-size ones) this is the order. Names are unique, so
    // an unstable sort gives the same order as a stable one, without the stable sort's scratch
    // buffer of half the tensors.
    if !tensors.is_sorted_by(|a, b| a.data_offsets <= b.data_offsets) {
        tensors.sort_unstable_by(|a, b| (a.data_offsets, &a.name).cmp(&(b.data_offsets, &b.name)));
    }
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

/// A top-level JSON document read by a [`Handler`]: an object's result, or what it was.
enum Document<T> {
    /// The document is an object.
    Object(T),
    /// The document is something else, e.g. `an array`.
    Other(&'static str),
}

/// The top level of a SafeTensors header.
struct TopLevel<'a> {
    data_len: u64,
    file: &'a str,
}

impl<'de> Handler<'de> for TopLevel<'_> {
    type Out = Document<Entries>;

    fn other(self, found: Found) -> Self::Out {
        Document::Other(found.kind)
    }

    fn object<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Out, A::Error> {
        let mut entries = Entries::new(self.data_len);
        while let Some(name) = map.next_key_seed(Seed(ShortText(MAX_NAME_LEN)))? {
            entries.read(name, &mut map, self.file)?;
        }
        Ok(Document::Object(entries))
    }
}

/// The top-level entries read so far: `__metadata__`, the tensors, each validated as it is
/// read, and the first error. After an error or past [`MAX_TENSORS`] the rest is only
/// counted (and checked for syntax), so errors keep the order of the file and the count is
/// exact.
///
/// A repeated tensor name is found after the pass, by sorting the tensors by name in place,
/// rather than with a set of every name (a second copy of each, or at least a hash table the
/// size of the tensor list, in the peak). Only when a name does repeat does a second pass
/// over the keys find the first repeat in file order, so that the error is the same as a
/// check made while reading would give.
struct Entries {
    data_len: u64,
    metadata: BTreeMap<String, String>,
    seen_metadata: bool,
    tensors: Vec<SafetensorsTensor>,
    /// Top-level keys other than `__metadata__`, all of them.
    count: u64,
    /// Bytes of the tensor names read so far ([`MAX_NAME_BYTES`]).
    name_bytes: u64,
    error: Option<EntryError>,
}

/// The first bad entry: the error, where it was, and the name if it was a tensor (a repeated
/// name would have been reported in its place).
struct EntryError {
    error: WeightsError,
    /// `count` when it was found: a repeat among the first `at` tensors comes first.
    at: u64,
    tensor: Option<String>,
}

impl Entries {
    fn new(data_len: u64) -> Self {
        Entries {
            data_len,
            metadata: BTreeMap::new(),
            seen_metadata: false,
            tensors: Vec::new(),
            count: 0,
            name_bytes: 0,
            error: None,
        }
    }

    /// Read the value of the top-level key `name` (refused when it was too long to copy).
    fn read<'de, A: MapAccess<'de>>(
        &mut self,
        name: Result<String, Refused>,
        map: &mut A,
        file: &str,
    ) -> Result<(), A::Error> {
        let is_metadata = name.as_ref().is_ok_and(|n| n == METADATA_KEY);
        if !is_metadata {
            // saturates: never, one per key of a header of at most 100 MB.
            self.count = self.count.saturating_add(1);
            if self.count > MAX_TENSORS && !self.tensors.is_empty() {
                // Too many: free what was built; only the count matters from here.
                self.tensors = Vec::new();
            }
        }
        if self.count > MAX_TENSORS || self.error.is_some() {
            map.next_value::<IgnoredAny>()?;
            return Ok(());
        }
        let name = match name {
            Ok(name) => name,
            Err(refused) => {
                map.next_value::<IgnoredAny>()?;
                let (len, start) = match refused {
                    Refused::Long(n, start) => (n, start),
                    Refused::Kind(kind) => (0, kind.to_owned()), // a key is always a string
                };
                self.fail(
                    WeightsError::NameTooLong {
                        file: file.to_owned(),
                        start,
                        len,
                        max: MAX_NAME_LEN,
                    },
                    None,
                );
                return Ok(());
            }
        };
        if is_metadata {
            if self.seen_metadata {
                map.next_value::<IgnoredAny>()?;
                self.fail(
                    WeightsError::DuplicateKey {
                        file: file.to_owned(),
                        key: name,
                    },
                    None,
                );
                return Ok(());
            }
            self.seen_metadata = true;
            match map.next_value_seed(Seed(Metadata))? {
                Ok(metadata) => self.metadata = metadata,
                Err(problem) => self.fail(
                    WeightsError::InvalidMetadata {
                        file: file.to_owned(),
                        problem,
                    },
                    None,
                ),
            }
            return Ok(());
        }
        // saturates: never, bounded by the header's 100 MB.
        self.name_bytes = self.name_bytes.saturating_add(to_u64(name.len()));
        if self.name_bytes > MAX_NAME_BYTES {
            map.next_value::<IgnoredAny>()?;
            let error = WeightsError::NamesTooLong {
                file: file.to_owned(),
                tensor: cut(name.clone()),
                len: self.name_bytes,
                max: MAX_NAME_BYTES,
            };
            self.fail(error, Some(name));
            return Ok(());
        }
        let fields = map.next_value_seed(Seed(TensorEntry))?;
        match fields.validate(&name, self.data_len, file) {
            Ok(tensor) => self.tensors.push(tensor),
            Err(e) => self.fail(e, Some(name)),
        }
        Ok(())
    }

    fn fail(&mut self, error: WeightsError, tensor: Option<String>) {
        self.error = Some(EntryError {
            error,
            at: self.count,
            tensor,
        });
    }

    /// The entries, or the error that comes first: too many tensors, then the first bad entry
    /// or repeated name in file order. `text` is the document, read again only if a name
    /// repeats.
    fn finish(mut self, text: &str, file: &str) -> Result<Self, WeightsError> {
        if self.count > MAX_TENSORS {
            return Err(WeightsError::TooManyTensors {
                file: file.to_owned(),
                count: self.count,
                max: MAX_TENSORS,
            });
        }
        self.tensors.sort_unstable_by(|a, b| a.name.cmp(&b.name));
        let repeats = self
            .tensors
            .windows(2)
            .any(|pair| matches!(pair, [a, b] if a.name == b.name))
            || self
                .error
                .as_ref()
                .and_then(|e| e.tensor.as_deref())
                .is_some_and(|name| {
                    self.tensors
                        .binary_search_by(|t| t.name.as_str().cmp(name))
                        .is_ok()
                });
        if repeats {
            let limit = self.error.as_ref().map_or(u64::MAX, |e| e.at);
            self.tensors = Vec::new();
            if let Ok(Document::Object(Some(tensor))) =
                parse_with(text, Seed(FirstRepeat { limit }), file)
            {
                return Err(WeightsError::DuplicateTensor {
                    file: file.to_owned(),
                    tensor,
                });
            }
        }
        match self.error {
            Some(e) => Err(e.error),
            None => Ok(self),
        }
    }
}

/// The second pass over a header whose tensor names repeat: the first name, in file order,
/// that repeats an earlier one among the first `limit` tensors.
struct FirstRepeat {
    limit: u64,
}

impl<'de> Handler<'de> for FirstRepeat {
    type Out = Document<Option<String>>;

    fn other(self, found: Found) -> Self::Out {
        Document::Other(found.kind)
    }

    fn object<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Out, A::Error> {
        let mut seen = HashSet::new();
        let mut count = 0u64;
        let mut repeat = None;
        while let Some(name) = map.next_key::<String>()? {
            map.next_value::<IgnoredAny>()?;
            if repeat.is_some() || name == METADATA_KEY || count >= self.limit {
                continue;
            }
            count = count.saturating_add(1); // saturates: never, keys of a bounded header
            if let Some(name) = seen.replace(name) {
                repeat = Some(name);
            }
        }
        Ok(Document::Object(repeat))
    }
}

/// The sorted ranges must start at 0 and follow each other with no gap or overlap; returns
/// the end of the last one.
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

/// `__metadata__`: an object of strings (or `null`), else the problem.
struct Metadata;

impl<'de> Handler<'de> for Metadata {
    type Out = Result<BTreeMap<String, String>, String>;

    fn other(self, found: Found) -> Self::Out {
        Err(format!("is {}, expected an object", found.kind))
    }

    fn null(self) -> Self::Out {
        // The reference reader types it `Option<HashMap<String, String>>`: null is "absent".
        Ok(BTreeMap::new())
    }

    fn object<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Out, A::Error> {
        let mut metadata = BTreeMap::new();
        let mut problem = None;
        let mut count = 0u64;
        // Bytes of text still allowed ([`MAX_METADATA_BYTES`]), keys and values.
        let mut room = MAX_METADATA_BYTES;
        while let Some(key) = map.next_key_seed(Seed(ShortText(room)))? {
            count = count.saturating_add(1); // saturates: never, keys of a bounded header
            if count > MAX_METADATA_ENTRIES && !metadata.is_empty() {
                // Too many: free what was kept; only the count matters from here.
                metadata = BTreeMap::new();
            }
            if problem.is_some() || count > MAX_METADATA_ENTRIES {
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            let key = match key {
                Ok(key) => key,
                Err(refused) => {
                    // A key is a JSON string: only its length can refuse it.
                    problem = Some(format!("has a key of {}", refused.describe()));
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
            };
            room = room.saturating_sub(to_u64(key.len()));
            match map.next_value_seed(Seed(ShortText(room)))? {
                Ok(value) => {
                    room = room.saturating_sub(to_u64(value.len()));
                    metadata.insert(key, value);
                }
                Err(Refused::Kind(kind)) => {
                    problem = Some(format!("value of `{key}` is {kind}, expected a string"));
                }
                Err(long @ Refused::Long(..)) => {
                    problem = Some(format!("value of `{key}` is {}", long.describe()));
                }
            }
        }
        if problem.is_none() && count > MAX_METADATA_ENTRIES {
            problem = Some(format!(
                "has {count} entries, more than the limit of {MAX_METADATA_ENTRIES}"
            ));
        }
        Ok(problem.map_or(Ok(metadata), Err))
    }
}

/// A string of at most `.0` bytes, copied only then.
struct ShortText(u64);

/// Why [`ShortText`] refused a value.
enum Refused {
    /// Not a string: its kind.
    Kind(&'static str),
    /// A string of this many bytes, more than the room left, and its first 40 characters.
    Long(u64, String),
}

impl Refused {
    /// The end of a message: `99,000,000 bytes, which takes …`.
    fn describe(&self) -> String {
        match self {
            Refused::Kind(kind) => (*kind).to_owned(),
            Refused::Long(n, _) => format!(
                "{} bytes, which takes `__metadata__` past its limit of {} bytes ({} MiB) of text",
                llmsize_core::units::thousands(*n),
                llmsize_core::units::thousands(MAX_METADATA_BYTES),
                MAX_METADATA_BYTES >> 20
            ),
        }
    }
}

impl Handler<'_> for ShortText {
    type Out = Result<String, Refused>;

    fn other(self, found: Found) -> Self::Out {
        Err(Refused::Kind(found.kind))
    }

    fn string(self, s: &str) -> Self::Out {
        let n = to_u64(s.len());
        if n > self.0 {
            return Err(Refused::Long(n, s.chars().take(40).collect()));
        }
        Ok(s.to_owned())
    }
}

/// One tensor entry as read, before validation: each field as found, so that the checks run
/// in a fixed order whatever the order of the keys. A key given twice keeps its last value,
/// as `serde_json::Value` (and the reference reader) do; other keys are skipped.
#[expect(
    clippy::large_enum_variant,
    reason = "one short-lived value per entry, on the stack; boxing would allocate per tensor"
)]
enum TensorFields {
    Object {
        dtype: Option<DtypeField>,
        shape: Option<ShapeField>,
        offsets: Option<OffsetsField>,
    },
    /// The entry is not an object: what it is.
    Other(&'static str),
}

enum DtypeField {
    Known(Dtype),
    Unknown(String),
    Wrong(&'static str),
}

enum ShapeField {
    /// Up to [`MAX_DIMS`] dimensions kept; `ndim` counts all, `bad` is the first that is not
    /// a `u64` (index and rendering).
    Dims {
        dims: [u64; MAX_DIMS_USIZE],
        ndim: u64,
        bad: Option<(u64, String)>,
    },
    Wrong(&'static str),
}

enum OffsetsField {
    /// The first two items as read and the number of items.
    Items {
        begin: Option<Result<u64, String>>,
        end: Option<Result<u64, String>>,
        count: u64,
    },
    Wrong(&'static str),
}

/// [`MAX_DIMS`] as an array length.
const MAX_DIMS_USIZE: usize = 16;
const _: () = assert!(MAX_DIMS_USIZE as u64 == MAX_DIMS);

/// The keys of a tensor entry, told apart without allocating.
enum FieldKey {
    Dtype,
    Shape,
    DataOffsets,
    Other,
}

impl<'de> Deserialize<'de> for FieldKey {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(FieldKeyVisitor)
    }
}

struct FieldKeyVisitor;

impl Visitor<'_> for FieldKeyVisitor {
    type Value = FieldKey;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a key")
    }

    fn visit_str<E>(self, key: &str) -> Result<FieldKey, E> {
        Ok(match key {
            "dtype" => FieldKey::Dtype,
            "shape" => FieldKey::Shape,
            "data_offsets" => FieldKey::DataOffsets,
            _ => FieldKey::Other,
        })
    }
}

struct TensorEntry;

impl<'de> Handler<'de> for TensorEntry {
    type Out = TensorFields;

    fn other(self, found: Found) -> TensorFields {
        TensorFields::Other(found.kind)
    }

    fn object<A: MapAccess<'de>>(self, mut map: A) -> Result<TensorFields, A::Error> {
        let (mut dtype, mut shape, mut offsets) = (None, None, None);
        while let Some(key) = map.next_key::<FieldKey>()? {
            match key {
                FieldKey::Dtype => dtype = Some(map.next_value_seed(Seed(DtypeValue))?),
                FieldKey::Shape => shape = Some(map.next_value_seed(Seed(ShapeValue))?),
                FieldKey::DataOffsets => {
                    offsets = Some(map.next_value_seed(Seed(OffsetsValue))?);
                }
                FieldKey::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(TensorFields::Object {
            dtype,
            shape,
            offsets,
        })
    }
}

struct DtypeValue;

impl Handler<'_> for DtypeValue {
    type Out = DtypeField;

    fn other(self, found: Found) -> DtypeField {
        DtypeField::Wrong(found.kind)
    }

    fn string(self, s: &str) -> DtypeField {
        Dtype::from_name(s).map_or_else(|| DtypeField::Unknown(s.to_owned()), DtypeField::Known)
    }
}

struct ShapeValue;

impl<'de> Handler<'de> for ShapeValue {
    type Out = ShapeField;

    fn other(self, found: Found) -> ShapeField {
        ShapeField::Wrong(found.kind)
    }

    fn array<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ShapeField, A::Error> {
        let mut dims = [0u64; MAX_DIMS_USIZE];
        let mut ndim = 0u64;
        let mut bad = None;
        loop {
            // Past MAX_DIMS, or after a bad dimension, only the count matters.
            let slot = if bad.is_none() {
                usize::try_from(ndim).ok().and_then(|i| dims.get_mut(i))
            } else {
                None
            };
            let more = match slot {
                Some(slot) => match seq.next_element_seed(Seed(Unsigned))? {
                    Some(Ok(d)) => {
                        *slot = d;
                        true
                    }
                    Some(Err(shown)) => {
                        bad = Some((ndim, shown));
                        true
                    }
                    None => false,
                },
                None => seq.next_element::<IgnoredAny>()?.is_some(),
            };
            if !more {
                break;
            }
            ndim = ndim.saturating_add(1); // saturates: never, items of a bounded header
        }
        Ok(ShapeField::Dims { dims, ndim, bad })
    }
}

struct OffsetsValue;

impl<'de> Handler<'de> for OffsetsValue {
    type Out = OffsetsField;

    fn other(self, found: Found) -> OffsetsField {
        OffsetsField::Wrong(found.kind)
    }

    fn array<A: SeqAccess<'de>>(self, mut seq: A) -> Result<OffsetsField, A::Error> {
        let begin = seq.next_element_seed(Seed(Unsigned))?;
        let end = if begin.is_some() {
            seq.next_element_seed(Seed(Unsigned))?
        } else {
            None
        };
        // saturates: never, at most 2.
        let mut count = u64::from(begin.is_some()).saturating_add(u64::from(end.is_some()));
        if end.is_some() {
            while seq.next_element::<IgnoredAny>()?.is_some() {
                count = count.saturating_add(1); // saturates: never, items of a bounded header
            }
        }
        Ok(OffsetsField::Items { begin, end, count })
    }
}

/// A tensor entry being validated: its name and file, for errors.
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

    fn missing(&self, key: &str) -> WeightsError {
        self.invalid(format!("`{key}` is missing"))
    }

    fn dtype(&self, field: Option<DtypeField>) -> Result<Dtype, WeightsError> {
        match field {
            None => Err(self.missing("dtype")),
            Some(DtypeField::Known(dtype)) => Ok(dtype),
            Some(DtypeField::Unknown(dtype)) => Err(WeightsError::UnknownDtype {
                file: self.file.to_owned(),
                tensor: self.name.to_owned(),
                dtype,
            }),
            Some(DtypeField::Wrong(kind)) => {
                Err(self.invalid(format!("`dtype` is {kind}, expected a string")))
            }
        }
    }

    fn shape(&self, field: Option<ShapeField>) -> Result<Vec<u64>, WeightsError> {
        let (dims, ndim, bad) = match field {
            None => return Err(self.missing("shape")),
            Some(ShapeField::Wrong(kind)) => {
                return Err(self.invalid(format!("`shape` is {kind}, expected an array")));
            }
            Some(ShapeField::Dims { dims, ndim, bad }) => (dims, ndim, bad),
        };
        if ndim > MAX_DIMS {
            return Err(WeightsError::TooManyDims {
                file: self.file.to_owned(),
                tensor: self.name.to_owned(),
                ndim,
                max: MAX_DIMS,
            });
        }
        if let Some((i, shown)) = bad {
            return Err(self.invalid(format!(
                "`shape[{i}]` is {shown}, expected a non-negative integer"
            )));
        }
        // ndim <= MAX_DIMS here; an exact-size copy keeps each tensor small.
        let ndim = usize::try_from(ndim).unwrap_or(MAX_DIMS_USIZE);
        Ok(dims.get(..ndim).unwrap_or(&dims).to_vec())
    }

    fn offsets(&self, field: Option<OffsetsField>) -> Result<[u64; 2], WeightsError> {
        let (begin, end) = match field {
            None => return Err(self.missing("data_offsets")),
            Some(OffsetsField::Wrong(kind)) => {
                return Err(self.invalid(format!(
                    "`data_offsets` is {kind}, expected an array of 2 integers"
                )));
            }
            Some(OffsetsField::Items {
                begin: Some(begin),
                end: Some(end),
                count: 2,
            }) => (begin, end),
            Some(OffsetsField::Items { count, .. }) => {
                return Err(self.invalid(format!("`data_offsets` has {count} items, expected 2")));
            }
        };
        let offset = |v: Result<u64, String>, which: &str| {
            v.map_err(|shown| {
                self.invalid(format!(
                    "`data_offsets` {which} is {shown}, expected a non-negative integer"
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

impl TensorFields {
    /// The checks of one entry, in a fixed order: the entry is an object; `dtype`, `shape`,
    /// `data_offsets` in that order; the size; the end within the data section.
    fn validate(
        self,
        name: &str,
        data_len: u64,
        file: &str,
    ) -> Result<SafetensorsTensor, WeightsError> {
        let entry = Entry { name, file };
        let (dtype, shape, offsets) = match self {
            TensorFields::Object {
                dtype,
                shape,
                offsets,
            } => (dtype, shape, offsets),
            TensorFields::Other(kind) => {
                return Err(entry.invalid(format!(
                    "entry is {kind}, expected an object with `dtype`, `shape` and `data_offsets`"
                )));
            }
        };
        let dtype = entry.dtype(dtype)?;
        let shape = entry.shape(shape)?;
        let [begin, end] = entry.offsets(offsets)?;

        let overflow = |shape: Vec<u64>| WeightsError::ShapeOverflow {
            file: file.to_owned(),
            tensor: name.to_owned(),
            shape,
        };
        let Some(elements) = shape.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d)) else {
            return Err(overflow(shape));
        };
        // In u128 so that only a byte count over u64 overflows, not the intermediate bit
        // count. ceil, so a sub-byte tensor with an odd element count still has an exact size.
        // The `safetensors` crate instead rejects such a tensor (`MisalignedSlice`); see
        // NOTES.md.
        let Some(needed) = u128::from(elements)
            .checked_mul(u128::from(dtype.bits()))
            .and_then(|bits| u64::try_from(bits.div_ceil(8)).ok())
        else {
            return Err(overflow(shape));
        };
        // `offsets` checked begin <= end.
        let declared =
            checked::sub("end − begin", end, begin).map_err(WeightsError::arithmetic(file))?;
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
        if end > data_len {
            return Err(WeightsError::TensorPastEnd {
                file: file.to_owned(),
                tensor: name.to_owned(),
                end: u128::from(end),
                data_len,
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
/// Python's `json` and `transformers`. At most [`MAX_TENSORS`] entries are accepted.
///
/// Read in one pass, like [`parse_header`]: memory is the returned map, whatever else the
/// index holds; other keys are skipped without allocating.
pub fn parse_index(text: &str, file: &str) -> Result<ShardIndex, WeightsError> {
    let invalid = |problem: String| WeightsError::InvalidIndex {
        file: file.to_owned(),
        problem,
    };
    let parts = match parse_with(text, Seed(IndexTop), file)? {
        Document::Object(parts) => parts,
        Document::Other(found) => {
            return Err(WeightsError::NotAnObject {
                file: file.to_owned(),
                found,
            });
        }
    };
    if let Some(key) = parts.duplicate {
        return Err(WeightsError::DuplicateKey {
            file: file.to_owned(),
            key,
        });
    }
    let total_size = match parts.metadata {
        None => None,
        Some(metadata) => metadata.map_err(invalid)?,
    };
    let weight_map = match parts.weight_map {
        None => return Err(invalid("`weight_map` is missing".to_owned())),
        Some(weight_map) => weight_map.map_err(invalid)?,
    };
    // From the map as it ends up: a shard named only by a replaced entry is not listed.
    let shards: BTreeSet<&String> = weight_map.values().collect();
    let shards = shards.into_iter().cloned().collect();
    Ok(ShardIndex {
        total_size,
        weight_map,
        shards,
    })
}

/// `weight_map` as read, or the problem.
type WeightMap = Result<BTreeMap<String, String>, String>;

/// The top level of an index: `weight_map` and `metadata` as read, the first repeated one.
struct IndexParts {
    weight_map: Option<WeightMap>,
    metadata: Option<Result<Option<u64>, String>>,
    duplicate: Option<String>,
}

struct IndexTop;

impl<'de> Handler<'de> for IndexTop {
    type Out = Document<IndexParts>;

    fn other(self, found: Found) -> Self::Out {
        Document::Other(found.kind)
    }

    fn object<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Out, A::Error> {
        let mut parts = IndexParts {
            weight_map: None,
            metadata: None,
            duplicate: None,
        };
        while let Some(key) = map.next_key::<String>()? {
            let repeated = match key.as_str() {
                _ if parts.duplicate.is_some() => false,
                "weight_map" if parts.weight_map.is_none() => {
                    parts.weight_map = Some(map.next_value_seed(Seed(WeightMapValue))?);
                    continue;
                }
                "metadata" if parts.metadata.is_none() => {
                    parts.metadata = Some(map.next_value_seed(Seed(IndexMetadata))?);
                    continue;
                }
                "weight_map" | "metadata" => true,
                _ => false,
            };
            map.next_value::<IgnoredAny>()?;
            if repeated {
                parts.duplicate = Some(key);
            }
        }
        Ok(Document::Object(parts))
    }
}

struct WeightMapValue;

impl<'de> Handler<'de> for WeightMapValue {
    type Out = WeightMap;

    fn other(self, found: Found) -> WeightMap {
        Err(format!(
            "`weight_map` is {}, expected an object",
            found.kind
        ))
    }

    fn object<A: MapAccess<'de>>(self, mut map: A) -> Result<WeightMap, A::Error> {
        // A repeated tensor keeps its last value but its first place, as in
        // `serde_json::Value` with `preserve_order`: only the values that remain are checked,
        // and the first bad one in that order is reported.
        let mut entries: BTreeMap<String, (u64, Result<String, &'static str>)> = BTreeMap::new();
        let mut next = 0u64;
        let mut count = 0u64;
        while let Some(tensor) = map.next_key::<String>()? {
            count = count.saturating_add(1); // saturates: never, keys of a bounded index
            if count > MAX_TENSORS {
                // Too many: free what was kept; only the count matters from here.
                if !entries.is_empty() {
                    entries = BTreeMap::new();
                }
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            let value = map.next_value_seed(Seed(Text))?;
            match entries.entry(tensor) {
                btree_map::Entry::Occupied(mut slot) => slot.get_mut().1 = value,
                btree_map::Entry::Vacant(slot) => {
                    slot.insert((next, value));
                    // saturates: never, one per entry of a bounded index.
                    next = next.saturating_add(1);
                }
            }
        }
        if count > MAX_TENSORS {
            return Ok(Err(format!(
                "`weight_map` has {count} entries, more than the limit of {MAX_TENSORS}"
            )));
        }
        let problem = entries
            .iter()
            .filter_map(|(tensor, (place, value))| {
                let problem = match value {
                    Ok(shard) if is_plain_file_name(shard) => return None,
                    Ok(shard) => format!(
                        "`weight_map` entry `{tensor}` names shard `{shard}`, expected a plain file name"
                    ),
                    Err(kind) => {
                        format!("`weight_map` entry `{tensor}` is {kind}, expected a file name")
                    }
                };
                Some((*place, problem))
            })
            .min_by_key(|(place, _)| *place);
        if let Some((_, problem)) = problem {
            return Ok(Err(problem));
        }
        Ok(Ok(entries
            .into_iter()
            .filter_map(|(tensor, (_, value))| value.ok().map(|shard| (tensor, shard)))
            .collect()))
    }
}

/// `metadata` of an index: `total_size` if given, or the problem.
struct IndexMetadata;

impl<'de> Handler<'de> for IndexMetadata {
    type Out = Result<Option<u64>, String>;

    fn other(self, found: Found) -> Self::Out {
        Err(format!("`metadata` is {}, expected an object", found.kind))
    }

    fn null(self) -> Self::Out {
        Ok(None)
    }

    fn object<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Out, A::Error> {
        // A repeated `total_size` keeps the last, as `serde_json::Value` does.
        let mut total_size = Ok(None);
        while let Some(key) = map.next_key::<String>()? {
            if key == "total_size" {
                total_size = map.next_value_seed(Seed(TotalSize))?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(total_size)
    }
}

/// `metadata.total_size`: a non-negative integer, also written as an integral float.
struct TotalSize;

impl TotalSize {
    fn problem(shown: &str) -> String {
        format!("`metadata.total_size` is {shown}, expected a non-negative integer")
    }
}

impl Handler<'_> for TotalSize {
    type Out = Result<Option<u64>, String>;
    const SHOWS: bool = true;

    fn other(self, found: Found) -> Self::Out {
        Err(TotalSize::problem(&found.shown()))
    }

    fn null(self) -> Self::Out {
        Ok(None)
    }

    fn unsigned(self, n: u64) -> Self::Out {
        Ok(Some(n))
    }

    fn number(self, text: &str) -> Self::Out {
        integral_float(text)
            .map(Some)
            .ok_or_else(|| TotalSize::problem(&cut(text.to_owned())))
    }
}

/// The `u64` a number written as a float stands for, if it is integral, non-negative and
/// below 2^64 (`1.5e10`).
fn integral_float(text: &str) -> Option<u64> {
    let f = text.parse::<f64>().ok().filter(|f| f.is_finite())?;
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

/// How an index and the shards it names disagree (empty when they agree).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IndexCheck {
    /// `(tensor, shard)`: the index places the tensor in a shard, and no shard holds it.
    pub missing: Vec<(String, String)>,
    /// `(tensor, index's shard, holding shard)`: another shard than the index's holds it.
    pub elsewhere: Vec<(String, String, String)>,
    /// `(tensor, shard)`: a shard holds a tensor the index does not name.
    pub unnamed: Vec<(String, String)>,
    /// `(metadata.total_size, bytes of every tensor in the shards)` when they differ.
    pub total_size: Option<(u64, u128)>,
}

/// Names a message lists before "and N more".
const LISTED_NAMES: usize = llmsize_core::limits::MAX_NAMES_IN_MESSAGE;

/// The first [`LISTED_NAMES`] of `names` in backticks, and how many more.
fn some_names<'a>(names: impl ExactSizeIterator<Item = &'a str>) -> String {
    let n = names.len();
    let mut out: Vec<String> = names.take(LISTED_NAMES).map(|t| format!("`{t}`")).collect();
    if let Some(more) = n.checked_sub(LISTED_NAMES).filter(|&m| m > 0) {
        out.push(format!(
            "and {} more",
            llmsize_core::units::thousands(to_u64(more))
        ));
    }
    out.join(", ")
}

impl IndexCheck {
    /// Compare an index with the headers of the shards it names (`(shard name, header)`).
    #[must_use]
    pub fn new(index: &ShardIndex, shards: &[(&str, &SafetensorsHeader)]) -> IndexCheck {
        let mut check = IndexCheck::default();
        let mut holder: BTreeMap<&str, &str> = BTreeMap::new();
        // Exact in 128 bits: at most MAX_SHARDS shards, each's bytes within its own u64 file.
        let mut bytes = 0u128;
        for (shard, header) in shards {
            for t in &header.tensors {
                holder.insert(t.name.as_str(), shard);
                bytes = bytes.saturating_add(u128::from(t.bytes)); // saturates: never, as above
                if !index.weight_map.contains_key(&t.name) {
                    check.unnamed.push((t.name.clone(), (*shard).to_owned()));
                }
            }
        }
        for (tensor, shard) in &index.weight_map {
            match holder.get(tensor.as_str()) {
                None => check.missing.push((tensor.clone(), shard.clone())),
                Some(found) if *found != shard.as_str() => {
                    check
                        .elsewhere
                        .push((tensor.clone(), shard.clone(), (*found).to_owned()));
                }
                Some(_) => {}
            }
        }
        check.total_size = index
            .total_size
            .filter(|t| u128::from(*t) != bytes)
            .map(|t| (t, bytes));
        check
    }

    /// True when the index and the shards agree.
    #[must_use]
    pub fn agrees(&self) -> bool {
        self.missing.is_empty()
            && self.elsewhere.is_empty()
            && self.unnamed.is_empty()
            && self.total_size.is_none()
    }

    /// One sentence per kind of disagreement, naming a few tensors (`index` labels the index).
    #[must_use]
    pub fn messages(&self, index: &str) -> Vec<String> {
        let mut out = Vec::new();
        if !self.missing.is_empty() {
            out.push(format!(
                "`{index}` names {} tensor(s) that no shard holds: {}",
                self.missing.len(),
                some_names(self.missing.iter().map(|(t, _)| t.as_str()))
            ));
        }
        if !self.elsewhere.is_empty() {
            out.push(format!(
                "`{index}` places {} tensor(s) in another shard than the one holding them: {}",
                self.elsewhere.len(),
                self.elsewhere
                    .iter()
                    .take(LISTED_NAMES)
                    .map(|(t, i, f)| format!("`{t}` (index: `{i}`, held by `{f}`)"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if !self.unnamed.is_empty() {
            let mut files: Vec<&str> = self.unnamed.iter().map(|(_, f)| f.as_str()).collect();
            files.dedup();
            out.push(format!(
                "{} tensor(s) in {} are not named by `{index}`: {}",
                self.unnamed.len(),
                files
                    .iter()
                    .map(|f| format!("`{f}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
                some_names(self.unnamed.iter().map(|(t, _)| t.as_str()))
            ));
        }
        if let Some((declared, found)) = self.total_size {
            out.push(format!(
                "`{index}` declares `metadata.total_size` = {declared} bytes, but the shards' tensors hold {found}"
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests;
