//! Projectors that gather `f × f` neighbouring patches (pixel shuffle / unshuffle) into one
//! token: Cohere2-Vision (`modeling_cohere2_vision.py`) and LFM2-VL (`modeling_lfm2_vl.py`);
//! and Fuyu (`modeling_fuyu.py`), whose "tower" is one linear layer over raw patches.

use llmsize_core::spec::{ModelSpec, OutputHead};

use super::parts::{lit, mul, sym, with_top};
use super::{Tie, text, vision, vision_tower, with_parts};
use crate::error::ConfigError;
use crate::hf_config::HeadChoice;
use crate::hf_config::family::Family;
use crate::hf_config::raw::RawConfig;

/// `Cohere2VisionForConditionalGeneration`: `SigLIP`, `linear_1` `d_vis·f² → d_align`
/// (`alignment_intermediate_size`), `SwiGLU` halving it, `linear_2` `d_align/2 → d`, both
/// biased; Cohere 2 text, tied by the top-level key (default true).
pub(crate) fn cohere2_vision(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let spec = text(raw, f, "cohere2", head, Tie::Top(true))?;
    let mut p = vision();
    let t = vision_tower(raw, "vision_config", "siglip_vision_model", &mut p)?;
    let (factor, inner) = with_top(raw, f.config_class, |s| {
        Ok((
            s.size("downsample_factor", 2)?,
            s.size("alignment_intermediate_size", 36_864)?,
        ))
    })?;
    let one = lit(1);
    let part = "multimodal projector";
    let inner_e = sym("d_align", inner);
    p.linear(
        "model.multi_modal_projector.linear_1",
        part,
        (
            mul(
                sym("d_vis", t.hidden),
                lit(raw.mul(factor, factor, "downsample_factor²")?),
            ),
            inner_e,
        ),
        true,
        &one,
    );
    p.linear(
        "model.multi_modal_projector.linear_2",
        part,
        (lit(inner / 2), sym("d", spec.hidden_size)),
        true,
        &one,
    );
    Ok(with_parts(spec, p))
}

/// `Lfm2VlForConditionalGeneration`: `SigLIP` 2, with `projector_use_layernorm` a `LayerNorm`
/// of `d_vis·f²`, `linear_1` `d_vis·f² → projector_hidden_size`, `linear_2` `… → d`, biased by
/// `projector_bias`; LFM2 text; tied by `tie_embedding` when given, else
/// `tie_word_embeddings` (default true).
pub(crate) fn lfm2_vl(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let mut spec = text(raw, f, "lfm2", head, Tie::Top(true))?;
    if let Some(t) = raw.flag("tie_embedding")?
        && let OutputHead::Lm { tied, .. } = &mut spec.head
    {
        *tied = t;
    }
    let mut p = vision();
    let t = vision_tower(raw, "vision_config", "siglip2_vision_model", &mut p)?;
    let (factor, inner, bias, norm) = with_top(raw, f.config_class, |s| {
        Ok((
            s.size("downsample_factor", 2)?,
            s.size("projector_hidden_size", 2560)?,
            s.flag("projector_bias", true)?,
            s.flag("projector_use_layernorm", true)?,
        ))
    })?;
    let one = lit(1);
    let part = "multimodal projector";
    let wide = mul(
        sym("d_vis", t.hidden),
        lit(raw.mul(factor, factor, "downsample_factor²")?),
    );
    let inner = sym("d_proj", inner);
    let pre = "model.multi_modal_projector";
    if norm {
        p.norm(format!("{pre}.layer_norm"), part, &wide, true, &one);
    }
    p.linear(
        format!("{pre}.linear_1"),
        part,
        (wide, inner.clone()),
        bias,
        &one,
    );
    p.linear(
        format!("{pre}.linear_2"),
        part,
        (inner, sym("d", spec.hidden_size)),
        bias,
        &one,
    );
    Ok(with_parts(spec, p))
}

/// `FuyuForCausalLM`: `vision_embed_tokens`, a biased linear `p²·c → d` over raw patches
/// (top-level `patch_size` 30, `num_channels` 3); Persimmon text; untied by default.
pub(crate) fn fuyu(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let spec = text(raw, f, "persimmon", head, Tie::Top(false))?;
    let (patch, channels) = with_top(raw, f.config_class, |s| {
        Ok((s.size("patch_size", 30)?, s.size("num_channels", 3)?))
    })?;
    let mut p = vision();
    p.linear(
        "model.vision_embed_tokens",
        "vision patch embedding",
        (
            mul(lit(raw.mul(patch, patch, "patch_size²")?), lit(channels)),
            sym("d", spec.hidden_size),
        ),
        true,
        &lit(1),
    );
    Ok(with_parts(spec, p))
}

/// `AyaVisionForConditionalGeneration`: `SigLIP`, a `LayerNorm` of `d_vis·f²`, `linear_1`
/// `d_vis·f² → A` (`alignment_intermediate_size` when the config sets it, else the text
/// width), `SwiGLU` halving it, `linear_2` `A/2 → d`, all biased; Cohere 2 text, tied by the
/// top-level key (default true).
pub(crate) fn aya_vision(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let spec = text(raw, f, "cohere2", head, Tie::Top(true))?;
    let mut p = vision();
    let t = vision_tower(raw, "vision_config", "siglip_vision_model", &mut p)?;
    let factor = with_top(raw, f.config_class, |s| s.size("downsample_factor", 2))?;
    // `getattr(config, "alignment_intermediate_size", text hidden)`: not a field of the class.
    let inner = match raw.size_opt("alignment_intermediate_size")? {
        Some(n) => n,
        None => spec.hidden_size,
    };
    let one = lit(1);
    let part = "multimodal projector";
    let wide = mul(
        sym("d_vis", t.hidden),
        lit(raw.mul(factor, factor, "downsample_factor²")?),
    );
    let pre = "model.multi_modal_projector";
    p.norm(format!("{pre}.layernorm"), part, &wide, true, &one);
    p.linear(
        format!("{pre}.linear_1"),
        part,
        (wide, sym("d_align", inner)),
        true,
        &one,
    );
    p.linear(
        format!("{pre}.linear_2"),
        part,
        (lit(inner / 2), sym("d", spec.hidden_size)),
        true,
        &one,
    );
    Ok(with_parts(spec, p))
}
