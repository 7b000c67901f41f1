//! GLM-V (`modeling_glm4v.py`): the `Glm4vVisionModel` tower and its composites.

use llmsize_core::spec::ModelSpec;

use super::parts::{Parts, lit, mul, sym, with_sub};
use super::qwen::{attention, gated, patch_embed};
use super::{vision, with_parts};
use crate::error::ConfigError;
use crate::hf_config::HeadChoice;
use crate::hf_config::family::Family;
use crate::hf_config::families::vision::{Tie, text};
use crate::hf_config::raw::RawConfig;

/// `Glm4vVisionModel`: learned positions over `(image_size / patch_size)²`, a biased patch
/// convolution, `RMSNorm` blocks (`qkv` biased by `attention_bias`, `proj` bias-free, a
/// bias-free gated MLP of `out_hidden_size`), `post_layernorm`, a biased 2-D `downsample`
/// convolution `d·m² → out`, and the merger (`proj`, a `LayerNorm`, a gated MLP of
/// `intermediate_size`, all bias-free).
pub(super) fn glm4v_tower(
    raw: &mut RawConfig<'_>,
    key: &str,
    class: &'static str,
    p: &mut Parts,
) -> Result<(), ConfigError> {
    with_sub(raw, key, class, |s| {
        let d = sym("d_vis", s.size("hidden_size", 1536)?);
        let l = sym("L_vis", s.size("depth", 24)?);
        let out = sym("d_out", s.size("out_hidden_size", 4096)?);
        let f = sym("d_ff_vis", s.size("intermediate_size", 13696)?);
        let m = s.size("spatial_merge_size", 2)?;
        let qkv_bias = s.flag("attention_bias", false)?;
        let image = s.size("image_size", 336)?;
        let patch = s.size("patch_size", 14)?;
        let side = image / patch;
        let one = lit(1);
        p.table(
            "model.visual.embeddings.position_embedding",
            "vision embeddings",
            (lit(side.saturating_mul(side)), d.clone()),
            &one,
        );
        patch_embed(s, p, "model.visual.patch_embed", &d, 14, true)?;
        let pre = "model.visual.blocks";
        p.norm(format!("{pre}.norm1"), "vision norms", &d, false, &l);
        p.norm(format!("{pre}.norm2"), "vision norms", &d, false, &l);
        attention(p, pre, &d, qkv_bias, false, &l);
        gated(p, &format!("{pre}.mlp"), &d, &out, false, &l);
        p.norm("model.visual.post_conv_layernorm", "vision norms", &d, false, &one);
        p.norm("model.visual.post_layernorm", "vision norms", &d, false, &one);
        let part = "multimodal projector";
        p.conv(
            "model.visual.downsample",
            part,
            (d.clone(), lit(m.saturating_mul(m)), out.clone()),
            true,
            &one,
        );
        let pre = "model.visual.merger";
        p.linear(format!("{pre}.proj"), part, (out.clone(), out.clone()), false, &one);
        p.norm(format!("{pre}.post_projection_norm"), part, &out, true, &one);
        gated(p, pre, &out, &f, false, &one);
        let _ = mul;
        Ok(())
    })
}

/// `Glm4vForConditionalGeneration` (GLM-4.1V, GLM-4.6V and their aliases).
pub(super) fn glm4v(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let spec = text(raw, f, "glm4v_text", head, Tie::Either(false))?;
    let mut p = vision();
    glm4v_tower(raw, "vision_config", "Glm4vVisionConfig", &mut p)?;
    Ok(with_parts(spec, p))
}
