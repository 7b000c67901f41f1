//! Pixtral's vision transformer (`modeling_pixtral.py`, `PixtralVisionModel`): a patch
//! convolution without bias, `ln_pre`, and `RMSNorm` layers of unbiased attention
//! (`d → d`) and a gated MLP; rotary positions, no final norm.

use llmsize_core::expr::Expr;
use llmsize_core::spec::ModelSpec;

use super::parts::{Parts, lit, mul, sym, with_sub, with_top};
use super::vit::{Tower, VitLayer, layers, vit_keys};
use super::{Tie, text, vision, vision_tower, with_parts};
use crate::error::ConfigError;
use crate::hf_config::HeadChoice;
use crate::hf_config::family::Family;
use crate::hf_config::raw::RawConfig;

/// `PixtralVisionModel` under `key`.
pub(crate) fn pixtral(
    raw: &mut RawConfig<'_>,
    key: &str,
    p: &mut Parts,
) -> Result<Tower, ConfigError> {
    with_sub(raw, key, "PixtralVisionConfig", |s| {
        let k = vit_keys(s, (1024, 4096, 24, 1024, 16))?;
        let one = lit(1);
        let pre = "vision_tower";
        k.patch_conv(p, format!("{pre}.patch_conv"), false);
        p.norm(format!("{pre}.ln_pre"), "vision norms", &k.d(), false, &one);
        let layer = VitLayer {
            qkv_bias: false,
            o_bias: false,
            mlp_bias: false,
            gated: true,
            norm_bias: false,
            ..VitLayer::clip(k.d(), k.ff())
        };
        layers(p, &format!("{pre}.transformer.layers"), &k.l(), &layer);
        Ok(k.tower())
    })
}

/// The patch merger and norm before a Pixtral projector (`Mistral3MultiModalProjector`,
/// `LightOnOcrMultiModalProjector`): `RMSNorm(d_vis)`, `merging_layer` `d_vis·m² → d_vis`
/// without bias (`m` = `spatial_merge_size`, default 2).
pub(crate) fn merger(
    raw: &mut RawConfig<'_>,
    class: &'static str,
    p: &mut Parts,
    d_vis: u64,
) -> Result<(), ConfigError> {
    let m = with_top(raw, class, |s| s.size("spatial_merge_size", 2))?;
    let one = lit(1);
    let part = "multimodal projector";
    let dv = sym("d_vis", d_vis);
    p.norm("multi_modal_projector.norm", part, &dv, false, &one);
    p.linear(
        "multi_modal_projector.patch_merger.merging_layer",
        part,
        (
            mul(dv.clone(), lit(raw.mul(m, m, "spatial_merge_size²")?)),
            dv,
        ),
        false,
        &one,
    );
    Ok(())
}

/// `Mistral3ForConditionalGeneration`: Pixtral, the merger, `linear_1` `d_vis·n → d` and
/// `linear_2` `d → d` biased by `multimodal_projector_bias` (default false); tied by the
/// top-level `tie_word_embeddings` (default true).
pub(crate) fn mistral3(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let spec = text(raw, f, "mistral", head, Tie::Top(true))?;
    let mut p = vision();
    let t = vision_tower(raw, "vision_config", "pixtral", &mut p)?;
    merger(raw, f.config_class, &mut p, t.hidden)?;
    let (n, bias) = with_top(raw, f.config_class, |s| {
        Ok((
            s.list_len_or_one("vision_feature_layer")?,
            s.flag("multimodal_projector_bias", false)?,
        ))
    })?;
    two_layers(
        &mut p,
        (mul(sym("d_vis", t.hidden), lit(n)), spec.hidden_size),
        bias,
    );
    Ok(with_parts(spec, p))
}

/// `LightOnOcrForConditionalGeneration`: Pixtral, the merger, unbiased `linear_1`
/// `d_vis → d` and `linear_2` `d → d`; Qwen3 text; tied by default.
pub(crate) fn lighton_ocr(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let spec = text(raw, f, "qwen3", head, Tie::Top(true))?;
    let mut p = vision();
    let t = vision_tower(raw, "vision_config", "pixtral", &mut p)?;
    merger(raw, f.config_class, &mut p, t.hidden)?;
    two_layers(&mut p, (sym("d_vis", t.hidden), spec.hidden_size), false);
    Ok(with_parts(spec, p))
}

/// `linear_1` `input → d`, `linear_2` `d → d`.
pub(crate) fn two_layers(p: &mut Parts, (input, d): (Expr, u64), bias: bool) {
    let one = lit(1);
    let d = sym("d", d);
    let part = "multimodal projector";
    p.linear(
        "multi_modal_projector.linear_1",
        part,
        (input, d.clone()),
        bias,
        &one,
    );
    p.linear(
        "multi_modal_projector.linear_2",
        part,
        (d.clone(), d),
        bias,
        &one,
    );
}
