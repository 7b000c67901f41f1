//! GIT (`modeling_git.py`): a CLIP-style image encoder (class token, patch convolution
//! without bias, positions, `pre_layrnorm`, `post_layernorm`), `visual_projection` (a biased
//! linear `d_vis → d` and a `LayerNorm`), and the
//! BERT-style text decoder of the top-level keys with a biased `output` head.

use llmsize_core::spec::ModelSpec;

use super::bert::{BertText, bert_text};
use super::parts::{lit, sym, with_top};
use super::vision;
use super::vit::clip_with;
use crate::error::ConfigError;
use crate::hf_config::HeadChoice;
use crate::hf_config::architecture;
use crate::hf_config::family::Family;
use crate::hf_config::raw::RawConfig;

/// `GitForCausalLM`, tied by `tie_word_embeddings` (default false; the bias stays).
pub(crate) fn git(
    raw: &mut RawConfig<'_>,
    f: &Family,
    _head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let arch = architecture(raw, f.architecture);
    let (mut spec, temporal) = with_top(raw, f.config_class, |s| {
        let tied = s.flag("tie_word_embeddings", false)?;
        let temporal = s.r.raw.uint("num_image_with_embedding")?;
        let b = BertText {
            defaults: (30_522, 768, 6, 12, 3072, 1024),
            token_types: None,
            cross: None,
            transform: false,
            tied,
        };
        Ok((bert_text(s, f.model_type, arch, &b)?, temporal))
    })?;
    let mut p = vision();
    let d_vis = clip_with(
        raw,
        "vision_config",
        "GitVisionConfig",
        (768, 3072, 12, 224, 16),
        &mut p,
        "git.image_encoder.vision_model",
    )?
    .hidden;
    let one = lit(1);
    let d = sym("d", spec.hidden_size);
    let part = "visual projection";
    p.linear(
        "git.visual_projection.visual_projection.0",
        part,
        (sym("d_vis", d_vis), d.clone()),
        true,
        &one,
    );
    p.norm(
        "git.visual_projection.visual_projection.1",
        part,
        &d,
        true,
        &one,
    );
    if temporal.is_some_and(|n| n > 0) {
        // `img_temporal_embedding` (a `ParameterList` of `n` vectors of `d_vis`) is filed
        // under no category, so the total cannot be split exactly.
        return Err(super::not_read(
            raw,
            f.model_type,
            "num_image_with_embedding",
            "GIT without per-image temporal embeddings (`num_image_with_embedding: null`)",
        ));
    }
    spec.extras.extend(p.out);
    Ok(spec)
}
