//! Streaming JSON helpers shared by the SafeTensors header and the shard index readers.
//!
//! The readers never build a `serde_json::Value` of a document: the workspace enables
//! `serde_json`'s `arbitrary_precision`, so every number of a `Value` is a heap string, and a
//! valid 100 MB header of millions of small arrays would cost gigabytes. Instead each reader
//! walks the document with `serde` visitors and keeps only what it needs: integers as `u64`,
//! the few strings it returns, and for a value of the wrong type its kind (`an array`) and, in
//! the few messages that quote it, its first 40 characters. Values the reader does not use are
//! skipped with [`IgnoredAny`], which allocates nothing.
//!
//! A [`Handler`] says what to do with each kind of JSON value; [`Seed`] runs one over the next
//! value of a `serde_json` deserializer. Every kind is accepted, so the only errors `serde`
//! raises are syntax errors ([`json_error`] maps them to [`WeightsError::Json`]); a value of
//! the wrong type reaches [`Handler::other`] and becomes the reader's own error.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{
    DeserializeSeed, Deserializer, IgnoredAny, IntoDeserializer, MapAccess, SeqAccess, Visitor,
};

use crate::error::{WeightsError, to_u64};

/// The key of the one-entry map through which `serde_json` hands a number to `deserialize_any`
/// under `arbitrary_precision` when it does not fit `u64`/`i64` (floats, huge integers): the
/// value is the number's text. Private to `serde_json` (`number::TOKEN`) but stable since
/// 2018; `serde_json::Value`'s own visitor relies on the same string. The test
/// `float_values_are_numbers` in `safetensors/tests.rs` fails if it ever changes.
const NUMBER_TOKEN: &str = "$serde_json::private::Number";

/// Longest rendering of a value kept for messages, in characters (then `...`).
const SHOW_CHARS: usize = 40;

/// A value of a kind the handler did not ask for.
pub(crate) struct Found {
    /// `a string`, `an array`, ...
    pub(crate) kind: &'static str,
    /// The value as compact JSON, if the handler asked for it with [`Handler::SHOWS`] (empty
    /// otherwise): exact for its first 40 characters, see [`Found::shown`].
    text: String,
}

impl Found {
    /// The value as compact JSON cut to 40 characters (then `...`), as in messages.
    pub(crate) fn shown(self) -> String {
        cut(self.text)
    }
}

/// What to do with each kind of JSON value. Defaults send every kind to [`Handler::other`],
/// consuming arrays and objects first.
pub(crate) trait Handler<'de>: Sized {
    /// The result for one value.
    type Out;

    /// Whether [`Handler::other`] needs [`Found::shown`] (rendering costs a little).
    const SHOWS: bool = false;

    /// A value of a kind the handler does not take.
    fn other(self, found: Found) -> Self::Out;

    /// `null`.
    fn null(self) -> Self::Out {
        self.other(scalar("null", || "null".to_owned(), Self::SHOWS))
    }

    /// A non-negative integer that fits `u64`.
    fn unsigned(self, n: u64) -> Self::Out {
        self.other(scalar("a number", || n.to_string(), Self::SHOWS))
    }

    /// Any other number, as written (`-1`, `2.5`, `1e400`); `text` is empty for the kinds
    /// `serde_json` decodes itself (negative integers are rendered).
    fn number(self, text: &str) -> Self::Out {
        self.other(scalar("a number", || text.to_owned(), Self::SHOWS))
    }

    /// A string.
    fn string(self, s: &str) -> Self::Out {
        self.other(scalar("a string", || quote_prefix(s), Self::SHOWS))
    }

    /// An array.
    fn array<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Out, A::Error> {
        let mut text = String::new();
        if Self::SHOWS {
            Render(&mut text).array(seq)?;
        } else {
            skip_seq(seq)?;
        }
        Ok(self.other(Found {
            kind: "an array",
            text,
        }))
    }

    /// An object (never the number map of `arbitrary_precision`).
    fn object<A: MapAccess<'de>>(self, map: A) -> Result<Self::Out, A::Error> {
        let mut text = String::new();
        if Self::SHOWS {
            Render(&mut text).object(map)?;
        } else {
            skip_map(map)?;
        }
        Ok(self.other(Found {
            kind: "an object",
            text,
        }))
    }
}

fn scalar(kind: &'static str, text: impl FnOnce() -> String, shows: bool) -> Found {
    Found {
        kind,
        text: if shows { text() } else { String::new() },
    }
}

/// Runs a [`Handler`] over the next value of a deserializer.
pub(crate) struct Seed<H>(pub(crate) H);

impl<'de, H: Handler<'de>> DeserializeSeed<'de> for Seed<H> {
    type Value = H::Out;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<H::Out, D::Error> {
        deserializer.deserialize_any(Visit(self.0, PhantomData))
    }
}

struct Visit<'de, H>(H, PhantomData<&'de ()>);

impl<'de, H: Handler<'de>> Visitor<'de> for Visit<'de, H> {
    type Value = H::Out;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("any JSON value")
    }

    fn visit_unit<E>(self) -> Result<H::Out, E> {
        Ok(self.0.null())
    }

    fn visit_bool<E>(self, b: bool) -> Result<H::Out, E> {
        Ok(self
            .0
            .other(scalar("a boolean", || b.to_string(), H::SHOWS)))
    }

    fn visit_u64<E>(self, n: u64) -> Result<H::Out, E> {
        Ok(self.0.unsigned(n))
    }

    fn visit_i64<E>(self, n: i64) -> Result<H::Out, E> {
        Ok(self.0.number(&if H::SHOWS {
            n.to_string()
        } else {
            String::new()
        }))
    }

    fn visit_f64<E>(self, f: f64) -> Result<H::Out, E> {
        // Not reached under `arbitrary_precision` (floats come as NUMBER_TOKEN maps).
        Ok(self.0.number(&if H::SHOWS {
            f.to_string()
        } else {
            String::new()
        }))
    }

    fn visit_str<E>(self, s: &str) -> Result<H::Out, E> {
        Ok(self.0.string(s))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<H::Out, A::Error> {
        self.0.array(seq)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<H::Out, A::Error> {
        match map.next_key_seed(KeySeed)? {
            Some(Key::NumberToken) => {
                let text = map.next_value::<String>()?;
                Ok(self.0.number(&text))
            }
            Some(key) => self.0.object(Replay {
                pending: Pending::First(key),
                map,
            }),
            None => self.0.object(Replay {
                pending: Pending::End,
                map,
            }),
        }
    }
}

/// A first object key: told apart from `arbitrary_precision`'s number token.
enum Key {
    NumberToken,
    Name(String),
}

struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Key;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Key, D::Error> {
        let key = <String as serde::Deserialize>::deserialize(deserializer)?;
        Ok(if key == NUMBER_TOKEN {
            Key::NumberToken
        } else {
            Key::Name(key)
        })
    }
}

/// An object whose first key was read already (to tell it from a number): hands that key out
/// again, then reads on.
struct Replay<A> {
    pending: Pending,
    map: A,
}

/// What [`Replay`] gives out next.
enum Pending {
    /// The first key, read already.
    First(Key),
    /// The end: the object was empty.
    End,
    /// Whatever the object holds next.
    Read,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Replay<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        match std::mem::replace(&mut self.pending, Pending::Read) {
            Pending::End => {
                self.pending = Pending::End;
                Ok(None)
            }
            Pending::First(Key::Name(key)) => seed
                .deserialize(IntoDeserializer::<A::Error>::into_deserializer(key))
                .map(Some),
            Pending::First(Key::NumberToken) => seed
                .deserialize(IntoDeserializer::<A::Error>::into_deserializer(
                    NUMBER_TOKEN,
                ))
                .map(Some),
            Pending::Read => self.map.next_key_seed(seed),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        self.map.next_value_seed(seed)
    }
}

/// Skip the rest of an array, allocating nothing.
pub(crate) fn skip_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

/// Skip the rest of an object, allocating nothing but each key.
pub(crate) fn skip_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_key::<IgnoredAny>()?.is_some() {
        map.next_value::<IgnoredAny>()?;
    }
    Ok(())
}

/// Renders a value as compact JSON into a buffer, and stops writing (while still consuming)
/// once the buffer holds more than [`SHOW_CHARS`] characters.
struct Render<'a>(&'a mut String);

impl Render<'_> {
    fn full(&self) -> bool {
        // Bytes >= characters, so a short byte length is a short text.
        self.0.len() > SHOW_CHARS && self.0.chars().count() > SHOW_CHARS
    }

    fn array<'de, A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.0.push('[');
        let mut first = true;
        loop {
            if self.full() {
                return skip_seq(seq);
            }
            if !first {
                self.0.push(',');
            }
            if seq.next_element_seed(Seed(Render(self.0)))?.is_none() {
                if !first {
                    self.0.pop(); // the comma written before the end was seen
                }
                break;
            }
            first = false;
        }
        self.0.push(']');
        Ok(())
    }

    fn object<'de, A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.0.push('{');
        let mut first = true;
        loop {
            if self.full() {
                return skip_map(map);
            }
            let Some(key) = map.next_key::<String>()? else {
                break;
            };
            if !first {
                self.0.push(',');
            }
            self.0.push_str(&quote_prefix(&key));
            self.0.push(':');
            map.next_value_seed(Seed(Render(self.0)))?;
            first = false;
        }
        self.0.push('}');
        Ok(())
    }
}

impl<'de> Handler<'de> for Render<'_> {
    type Out = ();
    const SHOWS: bool = true;

    fn other(self, found: Found) {
        self.0.push_str(&found.text);
    }

    fn array<A: SeqAccess<'de>>(self, seq: A) -> Result<(), A::Error> {
        Render::array(self, seq)
    }

    fn object<A: MapAccess<'de>>(self, map: A) -> Result<(), A::Error> {
        Render::object(self, map)
    }
}

/// A string as a JSON literal, escaped; only its first [`SHOW_CHARS`] + 1 characters, which
/// is all a rendering cut to [`SHOW_CHARS`] can show.
fn quote_prefix(s: &str) -> String {
    let prefix = match s.char_indices().nth(SHOW_CHARS + 1) {
        Some((end, _)) => s.get(..end).unwrap_or(s),
        None => s,
    };
    serde_json::to_string(prefix).unwrap_or_default()
}

/// Cut a rendering to [`SHOW_CHARS`] characters, marking the cut with `...`.
pub(crate) fn cut(text: String) -> String {
    if text.chars().count() > SHOW_CHARS {
        let mut out: String = text.chars().take(SHOW_CHARS).collect();
        out.push_str("...");
        out
    } else {
        text
    }
}

/// A string, or what the value was instead.
pub(crate) struct Text;

impl Handler<'_> for Text {
    type Out = Result<String, &'static str>;

    fn other(self, found: Found) -> Self::Out {
        Err(found.kind)
    }

    fn string(self, s: &str) -> Self::Out {
        Ok(s.to_owned())
    }
}

/// A non-negative integer that fits `u64`, or the value rendered for a message.
pub(crate) struct Unsigned;

impl Handler<'_> for Unsigned {
    type Out = Result<u64, String>;
    const SHOWS: bool = true;

    fn other(self, found: Found) -> Self::Out {
        Err(found.shown())
    }

    fn unsigned(self, n: u64) -> Self::Out {
        Ok(n)
    }
}

/// Parse a whole document with `seed`: the value, then only whitespace up to the end. Syntax
/// errors become [`WeightsError::Json`].
pub(crate) fn parse_with<'de, S: DeserializeSeed<'de>>(
    text: &'de str,
    seed: S,
    file: &str,
) -> Result<S::Value, WeightsError> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let value = seed
        .deserialize(&mut deserializer)
        .map_err(|e| json_error(&e, file))?;
    deserializer.end().map_err(|e| json_error(&e, file))?;
    Ok(value)
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
