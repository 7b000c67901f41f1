//! The one font every chart is measured with, compiled in.
//!
//! plotters lays text out (label areas, column widths) from font metrics. Its `ttf` feature
//! asks the system for fonts, which would make a chart's bytes depend on the machine; its
//! `ab_glyph` feature measures with a font registered from bytes instead, which is what this
//! module does, once per process. The SVG then names the family and the viewer draws the text
//! (`DejaVu Sans` where installed, else Verdana or a sans-serif of similar width).

use std::sync::OnceLock;

use plotters::style::{FontFamily, FontStyle, register_font};

use crate::ChartError;

/// The family written into the SVG (`font-family`), and the name the font is registered under.
pub(crate) const FAMILY: &str = "DejaVu Sans, Verdana, sans-serif";

/// `DejaVu Sans` cut down to Latin, punctuation, Greek, arrows and math (see
/// `fonts/LICENSE-DejaVu.txt`).
static DEJAVU: &[u8] = include_bytes!("../fonts/DejaVuSans-subset.ttf");

static REGISTERED: OnceLock<bool> = OnceLock::new();

/// Register the embedded font with plotters (once; later calls return the first outcome).
pub(crate) fn ensure() -> Result<FontFamily<'static>, ChartError> {
    let ok = *REGISTERED.get_or_init(|| register_font(FAMILY, FontStyle::Normal, DEJAVU).is_ok());
    if ok {
        Ok(FontFamily::Name(FAMILY))
    } else {
        Err(ChartError::Draw(
            "the embedded font does not parse".to_owned(),
        ))
    }
}
