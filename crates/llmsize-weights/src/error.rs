//! The one error type of the SafeTensors and GGUF header readers.
//!
//! Every variant names the file (the label the caller passed, usually its path) and carries
//! the numbers needed to act on it: the byte offset for binary fields, the tensor or key
//! name, and the value found next to the value expected.

use thiserror::Error;

/// An error from reading a SafeTensors header, a shard index or a GGUF header.
///
/// One variant, [`WeightsError::NeedMoreBytes`], is not about the file at all: it says that
/// the caller passed too short a prefix of a file that may be fine, and how many bytes to
/// read before calling again. [`WeightsError::is_need_more_bytes`] tells it apart.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum WeightsError {
    /// The prefix the caller passed ends before the header does, but the file is long enough:
    /// read at least `needed_at_least` bytes from the start of the file and call again.
    ///
    /// For SafeTensors, `needed_at_least` is exact (8 + the header length). For GGUF it is a
    /// lower bound: the reader stops at the first field that does not fit, so a longer prefix
    /// may ask for more again. Reading at least twice as much each time keeps the number of
    /// calls logarithmic.
    #[error(
        "`{file}`: the header goes past the {have} bytes given; read at least {needed_at_least} bytes and parse again"
    )]
    NeedMoreBytes {
        /// File label.
        file: String,
        /// Bytes the prefix held.
        have: u64,
        /// Bytes from the start of the file the next call needs at least.
        needed_at_least: u64,
    },

    /// The caller passed a prefix longer than the file length it declared.
    #[error("`{file}`: {prefix_len} bytes given but the file length is {file_len}")]
    PrefixLongerThanFile {
        /// File label.
        file: String,
        /// Length of the prefix passed.
        prefix_len: u64,
        /// File length passed.
        file_len: u64,
    },

    /// The file ends inside a field of the header.
    #[error(
        "`{file}`: {what} at byte {offset} needs {needed} bytes but the file ends at byte {file_len}"
    )]
    Truncated {
        /// File label.
        file: String,
        /// What was being read, e.g. `tensor count`.
        what: &'static str,
        /// Byte offset of the field.
        offset: u64,
        /// Bytes the field needs.
        needed: u64,
        /// File length.
        file_len: u64,
    },

    /// The header is larger than this reader accepts.
    #[error("`{file}`: header is {header_len} bytes, more than the limit of {max}")]
    HeaderTooLarge {
        /// File label.
        file: String,
        /// Header length declared (SafeTensors) or bytes needed so far (GGUF).
        header_len: u64,
        /// The limit ([`crate::safetensors::MAX_HEADER_SIZE`] or [`crate::gguf::MAX_HEADER_SIZE`]).
        max: u64,
    },

    /// The SafeTensors header length is larger than what follows the 8 length bytes.
    #[error(
        "`{file}`: header length is {header_len} bytes but only {available} bytes follow the 8-byte length (file length {file_len})"
    )]
    HeaderPastEnd {
        /// File label.
        file: String,
        /// Header length declared in the first 8 bytes.
        header_len: u64,
        /// `file_len - 8`.
        available: u64,
        /// File length.
        file_len: u64,
    },

    /// The SafeTensors header is not valid UTF-8.
    #[error("`{file}`: header is not valid UTF-8 at byte {offset}")]
    HeaderNotUtf8 {
        /// File label.
        file: String,
        /// Byte offset (from the start of the file) of the first invalid byte.
        offset: u64,
    },

    /// The SafeTensors header or the shard index is not valid JSON.
    #[error("`{file}`: not valid JSON at line {line}, column {column}: {message}")]
    Json {
        /// File label.
        file: String,
        /// Line of the error (1-based), as `serde_json` reports it.
        line: u64,
        /// Column of the error (1-based), as `serde_json` reports it.
        column: u64,
        /// `serde_json`'s message.
        message: String,
    },

    /// The JSON document is not an object.
    #[error("`{file}`: the JSON document is {found}, expected an object")]
    NotAnObject {
        /// File label.
        file: String,
        /// What was found instead, e.g. `an array`.
        found: &'static str,
    },

    /// The JSON object has the same key twice.
    #[error("`{file}`: key `{key}` appears twice")]
    DuplicateKey {
        /// File label.
        file: String,
        /// The repeated key (a tensor name in SafeTensors, a metadata key in GGUF).
        key: String,
    },

    /// `__metadata__` is not an object of strings.
    #[error("`{file}`: `__metadata__` {problem}")]
    InvalidMetadata {
        /// File label.
        file: String,
        /// What is wrong, e.g. "value of `format` is a number, expected a string".
        problem: String,
    },

    /// A SafeTensors tensor entry is not `{dtype, shape, data_offsets}` of the right types.
    #[error("`{file}`: tensor `{tensor}`: {problem}")]
    InvalidTensorEntry {
        /// File label.
        file: String,
        /// Tensor name.
        tensor: String,
        /// What is wrong, e.g. "`shape` is missing".
        problem: String,
    },

    /// A SafeTensors tensor name is longer than the limit (`safetensors::MAX_NAME_LEN`).
    #[error(
        "`{file}`: a tensor name of {len} bytes (`{start}...`) is longer than the limit of {max}"
    )]
    NameTooLong {
        /// File label.
        file: String,
        /// The name's first 40 characters.
        start: String,
        /// Its length in bytes.
        len: u64,
        /// The limit.
        max: u64,
    },

    /// A SafeTensors file's tensor names together are longer than the limit
    /// (`safetensors::MAX_NAME_BYTES`).
    #[error(
        "`{file}`: the tensor names reach {len} bytes at `{tensor}`, more than the limit of {max} for all the names of a file"
    )]
    NamesTooLong {
        /// File label.
        file: String,
        /// The name that crossed the limit.
        tensor: String,
        /// The names' bytes up to and including it.
        len: u64,
        /// The limit.
        max: u64,
    },

    /// A SafeTensors tensor has a dtype this reader does not know.
    #[error("`{file}`: tensor `{tensor}` has unknown dtype `{dtype}`")]
    UnknownDtype {
        /// File label.
        file: String,
        /// Tensor name.
        tensor: String,
        /// The dtype string found.
        dtype: String,
    },

    /// More tensors than the limit.
    #[error("`{file}`: {count} tensors, more than the limit of {max}")]
    TooManyTensors {
        /// File label.
        file: String,
        /// Tensor count found (or declared, for GGUF).
        count: u64,
        /// The limit.
        max: u64,
    },

    /// A tensor has more dimensions than the limit.
    #[error("`{file}`: tensor `{tensor}` has {ndim} dimensions, more than the limit of {max}")]
    TooManyDims {
        /// File label.
        file: String,
        /// Tensor name.
        tensor: String,
        /// Dimensions found.
        ndim: u64,
        /// The limit (16 for SafeTensors, `GGML_MAX_DIMS` = 4 for GGUF).
        max: u64,
    },

    /// The product of a tensor's dimensions, or its size in bytes, does not fit in 64 bits.
    #[error("`{file}`: tensor `{tensor}` with shape {shape:?} overflows 64 bits")]
    ShapeOverflow {
        /// File label.
        file: String,
        /// Tensor name.
        tensor: String,
        /// The shape (GGUF: `ne[]`, fastest dimension first).
        shape: Vec<u64>,
    },

    /// A SafeTensors tensor's byte range does not match its shape and dtype.
    #[error(
        "`{file}`: tensor `{tensor}` declares {declared} bytes but shape {shape:?} x `{dtype}` needs {needed}"
    )]
    TensorSizeMismatch {
        /// File label.
        file: String,
        /// Tensor name.
        tensor: String,
        /// The dtype.
        dtype: String,
        /// The shape.
        shape: Vec<u64>,
        /// `end - begin` from `data_offsets`.
        declared: u64,
        /// `ceil(elements x bits / 8)`.
        needed: u64,
    },

    /// A SafeTensors tensor's `data_offsets` end before they begin.
    #[error(
        "`{file}`: tensor `{tensor}` has `data_offsets` [{begin}, {end}] that end before they begin"
    )]
    InvalidOffsets {
        /// File label.
        file: String,
        /// Tensor name.
        tensor: String,
        /// Begin offset.
        begin: u64,
        /// End offset.
        end: u64,
    },

    /// A tensor's data goes past the end of the data section.
    #[error(
        "`{file}`: tensor `{tensor}` ends at data offset {end} but the data section is {data_len} bytes"
    )]
    TensorPastEnd {
        /// File label.
        file: String,
        /// Tensor name.
        tensor: String,
        /// End of the tensor, relative to the data section (exact, past 2^64 too).
        end: u128,
        /// Length of the data section.
        data_len: u64,
    },

    /// Two tensors' byte ranges overlap.
    #[error(
        "`{file}`: tensors `{first}` (data bytes {first_begin}..{first_end}) and `{second}` (from {second_begin}) overlap"
    )]
    TensorOverlap {
        /// File label.
        file: String,
        /// The tensor that starts first.
        first: String,
        /// Its begin offset in the data section.
        first_begin: u64,
        /// Its end offset in the data section.
        first_end: u64,
        /// The tensor that starts inside the first one.
        second: String,
        /// Its begin offset in the data section.
        second_begin: u64,
    },

    /// SafeTensors data bytes that belong to no tensor, between two tensors or before the first.
    #[error("`{file}`: data bytes {gap_begin}..{gap_end} belong to no tensor (before `{next}`)")]
    DataGap {
        /// File label.
        file: String,
        /// Start of the gap in the data section.
        gap_begin: u64,
        /// End of the gap (the next tensor's begin).
        gap_end: u64,
        /// The tensor that follows the gap.
        next: String,
    },

    /// The SafeTensors tensors do not cover the whole data section.
    #[error(
        "`{file}`: tensors cover {covered} data bytes but the data section is {data_len} bytes"
    )]
    DataSectionMismatch {
        /// File label.
        file: String,
        /// End of the last tensor.
        covered: u64,
        /// `file_len - 8 - header_len`.
        data_len: u64,
    },

    /// Two tensors have the same name.
    #[error("`{file}`: tensor `{tensor}` appears twice")]
    DuplicateTensor {
        /// File label.
        file: String,
        /// Tensor name.
        tensor: String,
    },

    /// The shard index is not what `model.safetensors.index.json` should be.
    #[error("`{file}`: {problem}")]
    InvalidIndex {
        /// File label.
        file: String,
        /// What is wrong, e.g. "`weight_map` is missing".
        problem: String,
    },

    /// The GGUF file does not start with `GGUF`.
    #[error("`{file}`: magic is `{}`, expected `GGUF`", .found.escape_ascii())]
    BadMagic {
        /// File label.
        file: String,
        /// The first four bytes.
        found: [u8; 4],
    },

    /// The GGUF version reads as a byte-swapped small number: the file is big-endian.
    #[error(
        "`{file}`: version reads {version_le} little-endian, {version_be} big-endian: big-endian GGUF files are not supported"
    )]
    BigEndian {
        /// File label.
        file: String,
        /// The version read little-endian.
        version_le: u32,
        /// The version read big-endian.
        version_be: u32,
    },

    /// The GGUF version is not 1, 2 or 3.
    #[error("`{file}`: GGUF version {version} is not supported (supported: 1, 2, 3)")]
    UnsupportedVersion {
        /// File label.
        file: String,
        /// The version found.
        version: u32,
    },

    /// A length or count read from the file is larger than the bytes that remain in it.
    #[error(
        "`{file}`: {what} at byte {offset} declares {count} (at least {min_bytes} bytes) but only {remaining} bytes remain in the file"
    )]
    LengthPastEnd {
        /// File label.
        file: String,
        /// What the length counts, e.g. `string length`.
        what: &'static str,
        /// Byte offset of the length field.
        offset: u64,
        /// The length or count read.
        count: u64,
        /// Bytes the declared items need at least (exact: a count past the file can need more
        /// than 2^64 bytes).
        min_bytes: u128,
        /// Bytes from the end of the length field to the end of the file.
        remaining: u64,
    },

    /// A length or count read from the file is over this reader's limit.
    #[error("`{file}`: {what} at byte {offset} is {count}, more than the limit of {max}")]
    OverLimit {
        /// File label.
        file: String,
        /// What was counted, e.g. `string length`, `array length`, `metadata key count`.
        what: &'static str,
        /// Byte offset of the field.
        offset: u64,
        /// The value read.
        count: u64,
        /// The limit.
        max: u64,
    },

    /// GGUF arrays nested deeper than the limit.
    #[error(
        "`{file}`: value of `{key}` at byte {offset} nests arrays {depth} deep, more than the limit of {max}"
    )]
    ArrayTooDeep {
        /// File label.
        file: String,
        /// Metadata key.
        key: String,
        /// Byte offset of the array.
        offset: u64,
        /// Depth reached.
        depth: u64,
        /// The limit.
        max: u64,
    },

    /// A GGUF metadata value type id is not one of the 13 types.
    #[error("`{file}`: value of `{key}` at byte {offset} has type id {found}, expected 0..=12")]
    InvalidValueType {
        /// File label.
        file: String,
        /// Metadata key.
        key: String,
        /// Byte offset of the type id.
        offset: u64,
        /// The type id found.
        found: u32,
    },

    /// A GGUF bool is neither 0 nor 1.
    #[error("`{file}`: bool of `{key}` at byte {offset} is {found}, expected 0 or 1")]
    InvalidBool {
        /// File label.
        file: String,
        /// Metadata key.
        key: String,
        /// Byte offset of the value.
        offset: u64,
        /// The byte found.
        found: u8,
    },

    /// A GGUF key or tensor name is not valid UTF-8.
    #[error("`{file}`: {what} at byte {offset} is not valid UTF-8")]
    NotUtf8 {
        /// File label.
        file: String,
        /// What was read, e.g. `metadata key`, `tensor name`.
        what: &'static str,
        /// Byte offset of the string's first byte.
        offset: u64,
    },

    /// `general.alignment` does not have type `u32`.
    #[error("`{file}`: `general.alignment` has type `{found}`, expected `u32`")]
    AlignmentType {
        /// File label.
        file: String,
        /// The type found.
        found: &'static str,
    },

    /// `general.alignment` is 0 or not a power of two.
    #[error("`{file}`: `general.alignment` is {alignment}, expected a power of two")]
    InvalidAlignment {
        /// File label.
        file: String,
        /// The alignment found.
        alignment: u32,
    },

    /// A GGUF tensor dimension is negative when read as the `int64_t` ggml uses.
    #[error("`{file}`: tensor `{tensor}` dimension {index} is {value}, more than `INT64_MAX`")]
    InvalidDim {
        /// File label.
        file: String,
        /// Tensor name.
        tensor: String,
        /// Index of the dimension in `ne[]`.
        index: u64,
        /// The value read.
        value: u64,
    },

    /// A GGUF tensor has a ggml type id that llama.cpp removed.
    #[error(
        "`{file}`: tensor `{tensor}` has ggml type {type_id} (`{name}`), which llama.cpp removed"
    )]
    RemovedGgmlType {
        /// File label.
        file: String,
        /// Tensor name.
        tensor: String,
        /// The type id.
        type_id: u32,
        /// The removed type's old name.
        name: &'static str,
    },

    /// A GGUF tensor has a ggml type id this reader does not know.
    #[error("`{file}`: tensor `{tensor}` has unknown ggml type {type_id}")]
    UnknownGgmlType {
        /// File label.
        file: String,
        /// Tensor name.
        tensor: String,
        /// The type id.
        type_id: u32,
    },

    /// A GGUF tensor's first dimension is not a multiple of its type's block size.
    #[error(
        "`{file}`: tensor `{tensor}` has `ne[0]` = {ne0}, not a multiple of the `{ggml_type}` block size {block_size}"
    )]
    BlockMisaligned {
        /// File label.
        file: String,
        /// Tensor name.
        tensor: String,
        /// The ggml type name.
        ggml_type: &'static str,
        /// `ne[0]`.
        ne0: u64,
        /// Elements per block.
        block_size: u64,
    },

    /// A GGUF tensor's data offset is not a multiple of the alignment.
    #[error(
        "`{file}`: tensor `{tensor}` has data offset {offset}, not a multiple of the alignment {alignment}"
    )]
    MisalignedOffset {
        /// File label.
        file: String,
        /// Tensor name.
        tensor: String,
        /// Offset relative to the data section.
        offset: u64,
        /// `general.alignment`.
        alignment: u64,
    },

    /// The GGUF data section starts past the end of the file although there are tensors.
    #[error("`{file}`: data section starts at byte {data_start} but the file length is {file_len}")]
    DataStartPastEnd {
        /// File label.
        file: String,
        /// Aligned end of the header.
        data_start: u64,
        /// File length.
        file_len: u64,
    },

    /// A `split.*` key of a split GGUF is absent or holds the wrong type or value.
    #[error("`{file}`: `{key}` is {found}, expected {expected}")]
    SplitKey {
        /// File label.
        file: String,
        /// The key (`split.no`, `split.count`, `split.tensors.count`).
        key: &'static str,
        /// What the file holds (its type and value, or "absent").
        found: String,
        /// What llama.cpp's `gguf-split` writes.
        expected: String,
    },

    /// The shards of a split GGUF do not make one set.
    #[error("`{file}`: {problem}")]
    SplitSet {
        /// File label of the shard the problem is about.
        file: String,
        /// What is wrong.
        problem: String,
    },

    /// A tensor name is in two files of one checkpoint.
    #[error("tensor `{tensor}` is in two files, `{first}` and `{second}`")]
    TensorInTwoFiles {
        /// Tensor name.
        tensor: String,
        /// The first file holding it.
        first: String,
        /// The second file holding it.
        second: String,
    },

    /// A sum of element or byte counts over all tensors does not fit in 64 bits.
    #[error("`{file}`: the {what} summed over all tensors overflows 64 bits")]
    TotalOverflow {
        /// File label.
        file: String,
        /// `elements` or `bytes`.
        what: &'static str,
    },

    /// A formula on the file's numbers has no exact value (it overflows, or goes below zero):
    /// the readers check their bounds first, so this names what a missed one would have
    /// wrapped to, rather than a panic.
    #[error("`{file}`: {source}")]
    Arithmetic {
        /// File label.
        file: String,
        /// The formula and its values.
        source: llmsize_core::error::Overflow,
    },
}

impl WeightsError {
    /// `error` as a [`WeightsError::Arithmetic`] of `file`, for `map_err`.
    pub(crate) fn arithmetic(file: &str) -> impl FnOnce(llmsize_core::error::Overflow) -> Self {
        move |source| Self::Arithmetic {
            file: file.to_owned(),
            source,
        }
    }

    /// True for [`WeightsError::NeedMoreBytes`]: the prefix was short, not the file bad.
    #[must_use]
    pub fn is_need_more_bytes(&self) -> bool {
        matches!(self, Self::NeedMoreBytes { .. })
    }

    /// The number of bytes to read before calling again, for [`WeightsError::NeedMoreBytes`].
    #[must_use]
    pub fn needed_at_least(&self) -> Option<u64> {
        match self {
            Self::NeedMoreBytes {
                needed_at_least, ..
            } => Some(*needed_at_least),
            _ => None,
        }
    }
}

/// `usize` to `u64` for lengths and offsets; lossless on every target Rust supports.
pub(crate) fn to_u64(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}
