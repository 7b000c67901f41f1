//! (to be written: see the registry in `mod.rs`)

use crate::hf_config::family::Family;

/// The entries of this file.
pub(crate) const FAMILIES: &[Family] = &[];
