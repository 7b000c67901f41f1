//! Gemma's vision-language models over a `SigLIP` tower: `PaliGemma` (`modeling_paligemma.py`),
//! Gemma 3 and `ShieldGemma` 2 (`modeling_gemma3.py`).

use llmsize_core::spec::ModelSpec;

use super::parts::{lit, sym, with_top};
use super::{Tie, text, vision, vision_tower, with_parts};
use crate::error::ConfigError;
use crate::hf_config::HeadChoice;
use crate::hf_config::family::Family;
use crate::hf_config::raw::RawConfig;

/// `PaliGemmaForConditionalGeneration`: `SigLIP`, one biased `linear` `d_vis → projection_dim`
/// (the top-level key, default 2048), Gemma text; tied by the top-level key (default true).
pub(crate) fn paligemma(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let spec = text(raw, f, "gemma", head, Tie::Top(true))?;
    let mut p = vision();
    let t = vision_tower(raw, "vision_config", "siglip_vision_model", &mut p)?;
    let proj = with_top(raw, f.config_class, |s| s.size("projection_dim", 2048))?;
    p.linear(
        "multi_modal_projector.linear",
        "multimodal projector",
        (sym("d_vis", t.hidden), sym("projection_dim", proj)),
        true,
        &lit(1),
    );
    Ok(with_parts(spec, p))
}

/// `Gemma3ForConditionalGeneration`: `SigLIP`, `mm_soft_emb_norm` (`RMSNorm(d_vis)`) and
/// `mm_input_projection_weight` `d_vis × d`. `Gemma3Config` ties by its own key (default
/// true); `ShieldGemma2Config` (default false) also when the text config ties.
pub(crate) fn gemma3(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let tie = if f.model_type == "gemma3" {
        Tie::Top(true)
    } else {
        Tie::Either(false)
    };
    let spec = text(raw, f, "gemma3_text", head, tie)?;
    let mut p = vision();
    let t = vision_tower(raw, "vision_config", "siglip_vision_model", &mut p)?;
    let one = lit(1);
    let part = "multimodal projector";
    let dv = sym("d_vis", t.hidden);
    p.norm(
        "multi_modal_projector.mm_soft_emb_norm",
        part,
        &dv,
        false,
        &one,
    );
    p.linear(
        "multi_modal_projector.mm_input_projection",
        part,
        (dv, sym("d", spec.hidden_size)),
        false,
        &one,
    );
    Ok(with_parts(spec, p))
}
