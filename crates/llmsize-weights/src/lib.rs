//! Pure header readers for the weight files whose parameters `llmsize` counts.
//!
//! - [`safetensors`]: the JSON header of a `.safetensors` file and the
//!   `model.safetensors.index.json` of a sharded checkpoint, and how an index and its shards
//!   disagree ([`safetensors::IndexCheck`]).
//! - [`gguf`]: the header of a llama.cpp `.gguf` file, metadata and tensor infos;
//!   [`gguf::split`]: the shards of a split GGUF as one model.
//! - [`names`]: which of the 13 parameter categories (or a buffer) a tensor name belongs to.
//!
//! Nothing here does IO: every function takes bytes or text the caller already read, plus the
//! real file length where it matters, and returns a typed [`WeightsError`]. Readers never
//! panic, never trust a length from a file before checking it against the bytes that remain,
//! and allocate in proportion to the bytes they were given. Exact counts only: elements and
//! bytes are `u64`, every product is checked, and dtype sizes are in bits (block types as bits
//! per block over elements per block), so 4-bit and block-quantized sizes are exact.

#![deny(missing_docs)]
#![forbid(unsafe_code)]
// Every number here comes from a file: arithmetic goes through `llmsize_core::checked` (or a
// `checked_*` method whose `None` is this crate's typed error), never a bare operator.
#![cfg_attr(not(test), deny(clippy::arithmetic_side_effects))]

mod error;
pub mod gguf;
mod json;
pub mod names;
pub mod safetensors;

pub use error::WeightsError;
