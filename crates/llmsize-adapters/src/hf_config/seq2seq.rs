//! stub
use llmsize_core::ModelSpec;
use super::{raw::RawConfig, HeadChoice};
use crate::error::ConfigError;
pub(crate) fn t5(raw: &mut RawConfig<'_>, _h: HeadChoice) -> Result<ModelSpec, ConfigError> { Err(raw.missing("t5", "todo")) }
pub(crate) fn bart(raw: &mut RawConfig<'_>, _h: HeadChoice) -> Result<ModelSpec, ConfigError> { Err(raw.missing("bart", "todo")) }
