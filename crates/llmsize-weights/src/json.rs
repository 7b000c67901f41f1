//! JSON helpers shared by the SafeTensors header and the shard index readers.
//!
//! `serde_json::Value` keeps an object's keys in a map, so a key given twice silently keeps
//! the last value. The top level of a SafeTensors header is a list of tensors where a
//! repeated name is an error, so [`Document`] reads the top-level object as a list of entries
//! in file order instead, and says what it found when the document is not an object.

use std::fmt;

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use crate::error::{WeightsError, to_u64};

/// A JSON document read one level deep: an object's entries in file order, or what it was.
pub(crate) enum Document {
    /// The document is an object: its entries, in file order, repeats kept.
    Object(Vec<(String, Value)>),
    /// The document is something else, e.g. `an array`.
    Other(&'static str),
}

impl<'de> Deserialize<'de> for Document {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(DocumentVisitor)
    }
}

struct DocumentVisitor;

impl<'de> Visitor<'de> for DocumentVisitor {
    type Value = Document;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a JSON document")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Document, A::Error> {
        let mut entries = Vec::new();
        while let Some((key, value)) = map.next_entry::<String, Value>()? {
            entries.push((key, value));
        }
        Ok(Document::Object(entries))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Document, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Document::Other("an array"))
    }

    fn visit_bool<E>(self, _: bool) -> Result<Document, E> {
        Ok(Document::Other("a boolean"))
    }

    fn visit_i64<E>(self, _: i64) -> Result<Document, E> {
        Ok(Document::Other("a number"))
    }

    fn visit_u64<E>(self, _: u64) -> Result<Document, E> {
        Ok(Document::Other("a number"))
    }

    fn visit_f64<E>(self, _: f64) -> Result<Document, E> {
        Ok(Document::Other("a number"))
    }

    fn visit_str<E>(self, _: &str) -> Result<Document, E> {
        Ok(Document::Other("a string"))
    }

    fn visit_unit<E>(self) -> Result<Document, E> {
        Ok(Document::Other("null"))
    }
}

/// Parse `bytes` as a [`Document`], mapping `serde_json` errors to [`WeightsError::Json`].
pub(crate) fn parse_document(bytes: &[u8], file: &str) -> Result<Document, WeightsError> {
    serde_json::from_slice::<Document>(bytes).map_err(|e| json_error(&e, file))
}

pub(crate) fn json_error(error: &serde_json::Error, file: &str) -> WeightsError {
    let full = error.to_string();
    // serde_json appends " at line L column C"; the variant carries those as numbers.
    let message = match full.rfind(" at line ") {
        Some(cut) => full.get(..cut).unwrap_or(&full).to_owned(),
        None => full,
    };
    WeightsError::Json {
        file: file.to_owned(),
        line: to_u64(error.line()),
        column: to_u64(error.column()),
        message,
    }
}

/// What a JSON value is, for messages: `a string`, `a number`, ...
pub(crate) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A short rendering of a JSON value for messages, cut to 40 characters.
pub(crate) fn show(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() > 40 {
        let cut: String = text.chars().take(40).collect();
        format!("{cut}...")
    } else {
        text
    }
}
