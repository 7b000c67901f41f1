//! GGUF metadata values: the 13 value types, scalars and typed arrays.

use std::fmt;

/// The type id of a GGUF metadata value (`enum gguf_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum GgufValueType {
    /// `uint8` (0).
    U8,
    /// `int8` (1).
    I8,
    /// `uint16` (2).
    U16,
    /// `int16` (3).
    I16,
    /// `uint32` (4).
    U32,
    /// `int32` (5).
    I32,
    /// `float32` (6).
    F32,
    /// `bool` (7), one byte, 0 or 1.
    Bool,
    /// `string` (8): a length, then UTF-8 bytes without a terminator.
    String,
    /// `array` (9): an element type, a count, then the elements.
    Array,
    /// `uint64` (10).
    U64,
    /// `int64` (11).
    I64,
    /// `float64` (12).
    F64,
}

impl GgufValueType {
    /// The type with id `id`, if it is one of the 13.
    #[must_use]
    pub fn from_id(id: u32) -> Option<GgufValueType> {
        Some(match id {
            0 => GgufValueType::U8,
            1 => GgufValueType::I8,
            2 => GgufValueType::U16,
            3 => GgufValueType::I16,
            4 => GgufValueType::U32,
            5 => GgufValueType::I32,
            6 => GgufValueType::F32,
            7 => GgufValueType::Bool,
            8 => GgufValueType::String,
            9 => GgufValueType::Array,
            10 => GgufValueType::U64,
            11 => GgufValueType::I64,
            12 => GgufValueType::F64,
            _ => return None,
        })
    }

    /// The id stored in files.
    #[must_use]
    pub fn id(self) -> u32 {
        match self {
            GgufValueType::U8 => 0,
            GgufValueType::I8 => 1,
            GgufValueType::U16 => 2,
            GgufValueType::I16 => 3,
            GgufValueType::U32 => 4,
            GgufValueType::I32 => 5,
            GgufValueType::F32 => 6,
            GgufValueType::Bool => 7,
            GgufValueType::String => 8,
            GgufValueType::Array => 9,
            GgufValueType::U64 => 10,
            GgufValueType::I64 => 11,
            GgufValueType::F64 => 12,
        }
    }

    /// The type's name in messages, e.g. `u32`, `string`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            GgufValueType::U8 => "u8",
            GgufValueType::I8 => "i8",
            GgufValueType::U16 => "u16",
            GgufValueType::I16 => "i16",
            GgufValueType::U32 => "u32",
            GgufValueType::I32 => "i32",
            GgufValueType::F32 => "f32",
            GgufValueType::Bool => "bool",
            GgufValueType::String => "string",
            GgufValueType::Array => "array",
            GgufValueType::U64 => "u64",
            GgufValueType::I64 => "i64",
            GgufValueType::F64 => "f64",
        }
    }

    /// Bytes of one value of a fixed-size type; `None` for strings and arrays.
    #[must_use]
    pub fn fixed_size(self) -> Option<u64> {
        match self {
            GgufValueType::U8 | GgufValueType::I8 | GgufValueType::Bool => Some(1),
            GgufValueType::U16 | GgufValueType::I16 => Some(2),
            GgufValueType::U32 | GgufValueType::I32 | GgufValueType::F32 => Some(4),
            GgufValueType::U64 | GgufValueType::I64 | GgufValueType::F64 => Some(8),
            GgufValueType::String | GgufValueType::Array => None,
        }
    }
}

impl fmt::Display for GgufValueType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A GGUF metadata value.
///
/// String values are decoded lossily (invalid UTF-8 becomes U+FFFD): the spec says UTF-8 but
/// llama.cpp does not check, and a tokenizer entry must not make a header unreadable. Keys and
/// tensor names, which a caller matches on, are checked instead.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum GgufValue {
    /// `uint8`.
    U8(u8),
    /// `int8`.
    I8(i8),
    /// `uint16`.
    U16(u16),
    /// `int16`.
    I16(i16),
    /// `uint32`.
    U32(u32),
    /// `int32`.
    I32(i32),
    /// `float32`.
    F32(f32),
    /// `bool`.
    Bool(bool),
    /// `string`.
    String(String),
    /// `array`, elements of one type.
    Array(GgufArray),
    /// `uint64`.
    U64(u64),
    /// `int64`.
    I64(i64),
    /// `float64`.
    F64(f64),
}

/// A GGUF array, stored by element type so that memory stays proportional to the file bytes.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum GgufArray {
    /// `uint8` elements.
    U8(Vec<u8>),
    /// `int8` elements.
    I8(Vec<i8>),
    /// `uint16` elements.
    U16(Vec<u16>),
    /// `int16` elements.
    I16(Vec<i16>),
    /// `uint32` elements.
    U32(Vec<u32>),
    /// `int32` elements.
    I32(Vec<i32>),
    /// `float32` elements.
    F32(Vec<f32>),
    /// `bool` elements.
    Bool(Vec<bool>),
    /// `string` elements (decoded lossily, as [`GgufValue::String`]).
    String(Vec<String>),
    /// Nested arrays (each may have its own element type).
    Array(Vec<GgufArray>),
    /// `uint64` elements.
    U64(Vec<u64>),
    /// `int64` elements.
    I64(Vec<i64>),
    /// `float64` elements.
    F64(Vec<f64>),
}

impl GgufArray {
    /// The element type.
    #[must_use]
    pub fn element_type(&self) -> GgufValueType {
        match self {
            GgufArray::U8(_) => GgufValueType::U8,
            GgufArray::I8(_) => GgufValueType::I8,
            GgufArray::U16(_) => GgufValueType::U16,
            GgufArray::I16(_) => GgufValueType::I16,
            GgufArray::U32(_) => GgufValueType::U32,
            GgufArray::I32(_) => GgufValueType::I32,
            GgufArray::F32(_) => GgufValueType::F32,
            GgufArray::Bool(_) => GgufValueType::Bool,
            GgufArray::String(_) => GgufValueType::String,
            GgufArray::Array(_) => GgufValueType::Array,
            GgufArray::U64(_) => GgufValueType::U64,
            GgufArray::I64(_) => GgufValueType::I64,
            GgufArray::F64(_) => GgufValueType::F64,
        }
    }

    /// Number of elements.
    #[must_use]
    pub fn len(&self) -> usize {
        match self {
            GgufArray::U8(v) => v.len(),
            GgufArray::I8(v) => v.len(),
            GgufArray::U16(v) => v.len(),
            GgufArray::I16(v) => v.len(),
            GgufArray::U32(v) => v.len(),
            GgufArray::I32(v) => v.len(),
            GgufArray::F32(v) => v.len(),
            GgufArray::Bool(v) => v.len(),
            GgufArray::String(v) => v.len(),
            GgufArray::Array(v) => v.len(),
            GgufArray::U64(v) => v.len(),
            GgufArray::I64(v) => v.len(),
            GgufArray::F64(v) => v.len(),
        }
    }

    /// True if the array has no elements.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The elements as `u64`, if the element type is an integer type and every element is
    /// non-negative (e.g. a per-layer `head_count_kv`).
    #[must_use]
    pub fn to_u64_vec(&self) -> Option<Vec<u64>> {
        fn all<T: Copy>(v: &[T], f: impl Fn(T) -> Option<u64>) -> Option<Vec<u64>> {
            v.iter().map(|&x| f(x)).collect()
        }
        match self {
            GgufArray::U8(v) => all(v, |x| Some(u64::from(x))),
            GgufArray::U16(v) => all(v, |x| Some(u64::from(x))),
            GgufArray::U32(v) => all(v, |x| Some(u64::from(x))),
            GgufArray::U64(v) => Some(v.clone()),
            GgufArray::I8(v) => all(v, |x| u64::try_from(x).ok()),
            GgufArray::I16(v) => all(v, |x| u64::try_from(x).ok()),
            GgufArray::I32(v) => all(v, |x| u64::try_from(x).ok()),
            GgufArray::I64(v) => all(v, |x| u64::try_from(x).ok()),
            _ => None,
        }
    }
}

impl GgufValue {
    /// The value's type.
    #[must_use]
    pub fn value_type(&self) -> GgufValueType {
        match self {
            GgufValue::U8(_) => GgufValueType::U8,
            GgufValue::I8(_) => GgufValueType::I8,
            GgufValue::U16(_) => GgufValueType::U16,
            GgufValue::I16(_) => GgufValueType::I16,
            GgufValue::U32(_) => GgufValueType::U32,
            GgufValue::I32(_) => GgufValueType::I32,
            GgufValue::F32(_) => GgufValueType::F32,
            GgufValue::Bool(_) => GgufValueType::Bool,
            GgufValue::String(_) => GgufValueType::String,
            GgufValue::Array(_) => GgufValueType::Array,
            GgufValue::U64(_) => GgufValueType::U64,
            GgufValue::I64(_) => GgufValueType::I64,
            GgufValue::F64(_) => GgufValueType::F64,
        }
    }

    /// The value as `u64` if it is an integer of any width and not negative.
    ///
    /// Writers disagree on widths (`context_length` is `u32` from `convert_hf_to_gguf.py`,
    /// `u64` from some other tools), so integer accessors accept every integer type.
    #[must_use]
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            GgufValue::U8(v) => Some(u64::from(v)),
            GgufValue::U16(v) => Some(u64::from(v)),
            GgufValue::U32(v) => Some(u64::from(v)),
            GgufValue::U64(v) => Some(v),
            GgufValue::I8(v) => u64::try_from(v).ok(),
            GgufValue::I16(v) => u64::try_from(v).ok(),
            GgufValue::I32(v) => u64::try_from(v).ok(),
            GgufValue::I64(v) => u64::try_from(v).ok(),
            _ => None,
        }
    }

    /// The value as `i64` if it is an integer that fits.
    #[must_use]
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            GgufValue::U8(v) => Some(i64::from(v)),
            GgufValue::U16(v) => Some(i64::from(v)),
            GgufValue::U32(v) => Some(i64::from(v)),
            GgufValue::U64(v) => i64::try_from(v).ok(),
            GgufValue::I8(v) => Some(i64::from(v)),
            GgufValue::I16(v) => Some(i64::from(v)),
            GgufValue::I32(v) => Some(i64::from(v)),
            GgufValue::I64(v) => Some(v),
            _ => None,
        }
    }

    /// The value as `f64` if it is a float (`f32` widened exactly).
    #[must_use]
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            GgufValue::F32(v) => Some(f64::from(v)),
            GgufValue::F64(v) => Some(v),
            _ => None,
        }
    }

    /// The value as `&str` if it is a string.
    #[must_use]
    pub fn as_str(&self) -> Option<&str> {
        match self {
            GgufValue::String(s) => Some(s),
            _ => None,
        }
    }

    /// The value as `bool` if it is a bool.
    #[must_use]
    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            GgufValue::Bool(b) => Some(b),
            _ => None,
        }
    }

    /// The value for a message: its GGUF type and value, e.g. `a string "abc"`, `an i32 -3`,
    /// `an array of 32 u32` (long strings cut at 40 characters).
    #[must_use]
    pub fn describe(&self) -> String {
        let ty = self.value_type().as_str();
        // Read aloud: "an i32", "an f32", but "a u32", "a string", "a bool".
        let article = if ty.starts_with(['i', 'f']) {
            "an"
        } else {
            "a"
        };
        let value = match self {
            GgufValue::String(s) => {
                let cut: String = s.chars().take(40).collect();
                let more = if cut.len() < s.len() { "…" } else { "" };
                format!("{cut:?}{more}")
            }
            GgufValue::Array(a) => {
                return format!("an array of {} {}", a.len(), a.element_type().as_str());
            }
            GgufValue::Bool(b) => b.to_string(),
            GgufValue::F32(v) => v.to_string(),
            GgufValue::F64(v) => v.to_string(),
            other => other.as_i64().map_or_else(
                || other.as_u64().map_or_else(String::new, |v| v.to_string()),
                |v| v.to_string(),
            ),
        };
        format!("{article} {ty} {value}")
    }

    /// The value as an array if it is one.
    #[must_use]
    pub fn as_array(&self) -> Option<&GgufArray> {
        match self {
            GgufValue::Array(a) => Some(a),
            _ => None,
        }
    }
}
