//! llmsize-charts: pictures of llmsize's reports, as SVG drawn with [plotters] and as Mermaid
//! flowcharts for Markdown documents.
//!
//! Every function is pure: it takes an engine outcome (or a core report) and returns the
//! document as a `String`. No file, clock, environment or system font is read: text is
//! measured with a `DejaVu Sans` subset compiled into the crate, so the same input gives the
//! same bytes on every machine (the tests render twice and compare).
//!
//! The charts carry the report's exact numbers as text, not only as bar lengths: every bar or
//! segment has its exact integer (`6,738,415,616`) in a column or table beside it, so a reader
//! — or a test parsing the SVG — reads back what the table prints. Labels and categories are
//! the text tables' own (`token_embedding`, `KV cache`, `runtime overhead`, …).
//!
//! Inputs are bounded: more models, bars or sweep points than a chart can show legibly is a
//! [`ChartError::TooMany`], and any `u64`/`u128` value (up to `u64::MAX` bytes, `u128::MAX`
//! FLOPs) is drawn without panicking.
//!
//! ```
//! use llmsize_engine::{Engine, HubEnv, ParamsRequest};
//!
//! let out = Engine::new(HubEnv::default())
//!     .params(&ParamsRequest::models(["gpt2"]))
//!     .unwrap();
//! let svg = llmsize_charts::params_svg(&out.reports).unwrap();
//! assert!(svg.contains(">\n38,597,376\n</text>")); // token_embedding, exactly
//! let flow = llmsize_charts::params_mermaid(&out.reports[0]);
//! assert!(flow.starts_with("flowchart TD\n"));
//! ```

mod draw;
mod flops;
mod font;
mod memory;
mod mermaid;
mod params;
mod train;
mod units;

pub use flops::flops_svg;
pub use memory::memory_svg;
pub use mermaid::params_mermaid;
pub use params::params_svg;
pub use train::train_svg;

/// Why a chart could not be drawn.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ChartError {
    /// Nothing to draw (no model in the outcome).
    #[error("nothing to chart: {0}")]
    Empty(String),
    /// More series than a legible chart holds.
    #[error("too many {what} to chart: {count}, at most {max}")]
    TooMany {
        /// What there are too many of (`models`, `sweep points`).
        what: &'static str,
        /// How many were given.
        count: usize,
        /// The limit.
        max: usize,
    },
    /// plotters failed to draw (a font or backend error); not expected with the embedded font.
    #[error("drawing the chart failed: {0}")]
    Draw(String),
}

/// Most models (or bars, or lines) one chart draws side by side.
pub const MAX_SERIES: usize = 24;
/// Most points of a sweep one chart draws.
pub const MAX_POINTS: usize = 256;
