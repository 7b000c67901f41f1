//! llmsize-core: a typed description of a Transformer ([`spec::ModelSpec`]) and the exact
//! arithmetic on it: parameters by component with their formulas, and the renderers that
//! turn the one report into a table, a derivation or JSON.
//!
//! The core performs no I/O: it never reads files, the environment or the clock, and never
//! prints. Adapters build specs; the CLI prints what the renderers return.

#![deny(missing_docs)]
// Every `+`, `-`, `*`, `/` on an integer goes through `checked` (or carries a local proof).
#![cfg_attr(not(test), deny(clippy::arithmetic_side_effects))]

pub mod category;
pub mod checked;
pub mod count;
pub mod design;
pub mod error;
pub mod expr;
pub mod facts;
pub mod flops;
pub mod formats;
pub mod ggml;
pub mod gpu;
pub mod layout;
pub mod limits;
pub mod memory;
pub mod profile;
pub mod quant;
pub mod render;
pub mod report;
pub mod runtime;
pub mod spec;
pub mod speed;
pub mod units;

pub use count::{Category, ParamCount, count};
pub use error::{NotFinite, Overflow, SpecError};
pub use report::ParamsReport;
pub use spec::ModelSpec;
