//! stub
use llmsize_core::ModelSpec;
use super::{raw::RawConfig, HeadChoice};
use crate::error::ConfigError;
pub(crate) fn encoder(raw: &mut RawConfig<'_>, t: &str, _h: HeadChoice) -> Result<ModelSpec, ConfigError> { Err(raw.missing(t, "todo")) }
