//! `LLaVA` and its descendants (`modeling_llava*.py`, `modeling_vipllava.py`,
//! `modeling_video_llava.py`): `AutoModel` of `vision_config` (CLIP by default), a two-layer
//! projector `d_vis·n_layers → d → d`, and the text model of `text_config`.

use llmsize_core::spec::ModelSpec;

use super::parts::{Parts, lit, mul, sym, with_top};
use super::{Tie, text, vision, vision_tower, with_parts};
use crate::error::ConfigError;
use crate::hf_config::HeadChoice;
use crate::hf_config::family::Family;
use crate::hf_config::raw::RawConfig;

/// `LlavaMultiModalProjector`: `linear_1` `d_vis·n → d`, `linear_2` `d → d`, both biased by
/// `multimodal_projector_bias`; `n` is 1, or the length of a `vision_feature_layer` list.
fn projector(
    raw: &mut RawConfig<'_>,
    class: &'static str,
    p: &mut Parts,
    d_vis: u64,
    d: u64,
) -> Result<(), ConfigError> {
    let (n, bias) = with_top(raw, class, |s| {
        Ok((
            s.list_len_or_one("vision_feature_layer")?,
            s.flag("multimodal_projector_bias", true)?,
        ))
    })?;
    let one = lit(1);
    let d_text = sym("d", d);
    p.linear(
        "multi_modal_projector.linear_1",
        "multimodal projector",
        (mul(sym("d_vis", d_vis), lit(n)), d_text.clone()),
        bias,
        &one,
    );
    p.linear(
        "multi_modal_projector.linear_2",
        "multimodal projector",
        (d_text.clone(), d_text),
        bias,
        &one,
    );
    Ok(())
}

/// `LlavaForConditionalGeneration`.
pub(crate) fn llava(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let spec = text(raw, f, "llama", head, Tie::Either(false))?;
    let mut p = vision();
    let t = vision_tower(raw, "vision_config", "clip_vision_model", &mut p)?;
    projector(raw, f.config_class, &mut p, t.hidden, spec.hidden_size)?;
    Ok(with_parts(spec, p))
}

/// `LlavaNextForConditionalGeneration` (and `LlavaNextVideo…`): `LLaVA` with an
/// `image_newline` vector of `d`. `LlavaNextConfig` keeps its own `tie_word_embeddings`;
/// `LlavaNextVideoConfig` also takes the text config's.
pub(crate) fn llava_next(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let tie = if f.model_type == "llava_next" {
        Tie::Top(false)
    } else {
        Tie::Either(false)
    };
    let spec = text(raw, f, "llama", head, tie)?;
    let mut p = vision();
    let t = vision_tower(raw, "vision_config", "clip_vision_model", &mut p)?;
    projector(raw, f.config_class, &mut p, t.hidden, spec.hidden_size)?;
    p.vector(
        "image_newline",
        "multimodal projector",
        sym("d", spec.hidden_size),
        &lit(1),
    );
    Ok(with_parts(spec, p))
}

/// `LlavaOnevisionForConditionalGeneration`: LLaVA-NeXT over a `SigLIP` tower and Qwen2.
pub(crate) fn llava_onevision(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let spec = text(raw, f, "qwen2", head, Tie::Either(false))?;
    let mut p = vision();
    let t = vision_tower(raw, "vision_config", "siglip_vision_model", &mut p)?;
    projector(raw, f.config_class, &mut p, t.hidden, spec.hidden_size)?;
    p.vector(
        "image_newline",
        "multimodal projector",
        sym("d", spec.hidden_size),
        &lit(1),
    );
    Ok(with_parts(spec, p))
}

/// `VipLlavaForConditionalGeneration`: the projector normalises the `n` concatenated layers
/// (`projector_layernorm`, `LayerNorm` of `d_vis·n`) and is always biased.
pub(crate) fn vipllava(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let spec = text(raw, f, "llama", head, Tie::Top(false))?;
    let mut p = vision();
    let t = vision_tower(raw, "vision_config", "clip_vision_model", &mut p)?;
    // `VipLlavaConfig.vision_feature_layer` defaults to five layers.
    let n = if raw.has("vision_feature_layer") {
        with_top(raw, f.config_class, |s| {
            s.list_len_or_one("vision_feature_layer")
        })?
    } else {
        raw.assume(
            "vision_feature_layer",
            "(-2, -5, -8, -11, 6)",
            "absent; `VipLlavaConfig` default",
        );
        5
    };
    let one = lit(1);
    let wide = mul(sym("d_vis", t.hidden), lit(n));
    let d = sym("d", spec.hidden_size);
    let part = "multimodal projector";
    p.norm(
        "multi_modal_projector.projector_layernorm",
        part,
        &wide,
        true,
        &one,
    );
    p.linear(
        "multi_modal_projector.linear_1",
        part,
        (wide, d.clone()),
        true,
        &one,
    );
    p.linear(
        "multi_modal_projector.linear_2",
        part,
        (d.clone(), d),
        true,
        &one,
    );
    Ok(with_parts(spec, p))
}

/// `VideoLlavaForConditionalGeneration`: two towers of `vision_config`, `image_tower` and
/// `video_tower`, and `LLaVA`'s projector.
pub(crate) fn video_llava(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let spec = text(raw, f, "llama", head, Tie::Top(false))?;
    let mut p = vision();
    let t = vision_tower(raw, "vision_config", "clip_vision_model", &mut p)?;
    let tower: Vec<_> = p.out.clone();
    p.out.extend(tower);
    projector(raw, f.config_class, &mut p, t.hidden, spec.hidden_size)?;
    Ok(with_parts(spec, p))
}
