//! stub
use llmsize_core::ModelSpec;
use super::raw::RawConfig;
use crate::error::ConfigError;
pub(crate) fn moe(raw: &mut RawConfig<'_>, t: &str) -> Result<ModelSpec, ConfigError> { Err(raw.missing(t, "todo")) }
pub(crate) fn deepseek(raw: &mut RawConfig<'_>, t: &str) -> Result<ModelSpec, ConfigError> { Err(raw.missing(t, "todo")) }
