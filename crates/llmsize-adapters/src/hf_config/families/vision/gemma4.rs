//! Gemma 4 and Gemma 4 Unified (`modeling_gemma4*.py`) as their class defaults build them:
//! without `vision_config` and `audio_config` (both optional, `null` by default) the model is
//! the text model of `text_config` (another family file) with its head. A config that sets
//! either tower is refused: those towers are not read here.

use llmsize_core::spec::ModelSpec;

use super::{Tie, not_read, text};
use crate::error::ConfigError;
use crate::hf_config::HeadChoice;
use crate::hf_config::family::Family;
use crate::hf_config::raw::RawConfig;

/// `Gemma4ForConditionalGeneration` / `Gemma4UnifiedForConditionalGeneration`, tied by
/// `tie_word_embeddings` (default true).
pub(crate) fn gemma4(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    for key in ["vision_config", "audio_config"] {
        if raw.value(key).is_some() {
            return Err(not_read(
                raw,
                f.model_type,
                key,
                "Gemma 4 without vision and audio towers (`vision_config: null`, `audio_config: null`)",
            ));
        }
    }
    let text_type = if f.model_type == "gemma4" {
        "gemma4_text"
    } else {
        "gemma4_unified_text"
    };
    text(raw, f, text_type, head, Tie::Top(true))
}
