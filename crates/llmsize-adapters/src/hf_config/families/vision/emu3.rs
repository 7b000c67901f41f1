//! Emu3 (`modeling_emu3.py`): `Emu3ForCausalLM` is the text model of `text_config`, a Llama
//! block (`Emu3TextConfig`: 8 KV heads, no `head_dim` field). The image-generation class
//! (`Emu3ForConditionalGeneration`, with its VQ-VAE) is not read.

use llmsize_core::spec::{ModelSpec, OutputHead};

use super::parts::object;
use crate::error::ConfigError;
use crate::hf_config::family::{Block, Family, HeadDim, LLAMA, Read, read_block};
use crate::hf_config::raw::RawConfig;
use crate::hf_config::{HeadChoice, architecture};

/// `Emu3TextConfig`'s block.
const EMU3_TEXT: Block = Block {
    kv_default: Some(8),
    head_dim: HeadDim::Split,
    ..LLAMA
};

/// The text model's entry, read from `text_config` (not a registered type of its own).
const EMU3_TEXT_FAMILY: Family = Family {
    model_type: "emu3_text_model",
    config_class: "Emu3TextConfig",
    architecture: "Emu3ForCausalLM",
    read: Read::Block(&EMU3_TEXT),
};

/// `Emu3ForCausalLM`.
pub(crate) fn emu3(
    raw: &mut RawConfig<'_>,
    f: &Family,
    _head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let arch = architecture(raw, f.architecture);
    if !arch.ends_with("ForCausalLM") {
        return Err(crate::hf_config::unsupported(
            &format!("{} (architectures: {arch})", raw.file),
            f.model_type,
        ));
    }
    let key = "text_config";
    let map = object(raw, key)?;
    let mut inner = raw.nested(key, map);
    let mut spec = read_block(&mut inner, &EMU3_TEXT_FAMILY, &EMU3_TEXT)?;
    for a in inner.assumptions {
        raw.assume(&format!("{key}.{}", a.field), a.value, &a.reason);
    }
    for (symbol, source) in inner.sources {
        raw.source(symbol, &format!("{key}.{source}"));
    }
    // An explicit top-level `tie_word_embeddings: false` unties the loaded model.
    if raw.flag("tie_word_embeddings")? == Some(false)
        && let OutputHead::Lm { tied, .. } = &mut spec.head
    {
        *tied = false;
    }
    f.model_type.clone_into(&mut spec.model_type);
    spec.architecture = arch;
    Ok(spec)
}
