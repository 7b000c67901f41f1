//! llmsize-adapters: turn what users have (a Hugging Face `config.json`, a preset name) into
//! the core's [`llmsize_core::ModelSpec`].
//!
//! Adapters parse text they are given; they never read files themselves (the CLI does),
//! so every reader is testable on strings and fuzzable.

#![deny(missing_docs)]
// Every integer here comes from a config, a flag or a header: `+`, `-`, `*`, `/` on them go
// through `llmsize_core::checked` (or `Checked`), never a bare operator that can panic or wrap.
#![cfg_attr(not(test), deny(clippy::arithmetic_side_effects))]

pub mod checkpoint;
pub mod error;
pub mod gguf_config;
pub mod hf_config;
pub mod presets;

pub use error::ConfigError;
pub use hf_config::{HeadChoice, ReadOptions, read_config, read_config_map};
