//! GLM-V (`modeling_glm4v.py`, `modeling_glm4v_moe.py`, `modeling_glm46v.py`,
//! `modeling_glm_ocr.py`): the GLM vision tower and its composites.

use llmsize_core::spec::ModelSpec;

use super::parts::{Parts, lit, mul, sym, with_sub};
use super::qwen::{attention, gated, patch_embed};
use super::{vision, with_parts};
use crate::error::ConfigError;
use crate::hf_config::HeadChoice;
use crate::hf_config::families::vision::{Tie, text};
use crate::hf_config::family::Family;
use crate::hf_config::raw::RawConfig;
use llmsize_core::checked;

/// What differs between the GLM towers.
#[derive(Clone, Copy)]
struct Glm {
    /// `Glm4vVisionModel` (learned positions, `post_conv_layernorm`, a bias-free
    /// `proj`, a bias-free MLP of `out_hidden_size`, the merger's MLP of
    /// `intermediate_size`); else `GlmOcrVisionModel` (none of the three norms/tables;
    /// `attention_bias` on `qkv`, `proj` and the MLP of `intermediate_size`; per-head q/k
    /// `RMSNorm`s; the merger's MLP of `out_hidden_size·in_channels`).
    glm4v: bool,
    /// The class defaults: `hidden_size`, `out_hidden_size`, `intermediate_size`,
    /// `attention_bias`.
    defaults: (u64, u64, u64, bool),
    /// `Glm5NextVisionModel` (an OCR-style tower): the merger's MLP is
    /// `projection_intermediate_size` wide (this default).
    projection: Option<u64>,
}

/// The GLM vision tower under `key`: a biased 3-D patch convolution, `RMSNorm` blocks with
/// a fused `qkv` and a gated MLP, `post_layernorm`, a biased 2-D `downsample` convolution
/// `d·m² → out`, and the merger (`proj`, a `LayerNorm`, a gated MLP, all bias-free).
fn tower(
    raw: &mut RawConfig<'_>,
    key: &str,
    class: &'static str,
    g: Glm,
    p: &mut Parts,
) -> Result<(), ConfigError> {
    with_sub(raw, key, class, |s| {
        let (d0, out0, f0, bias0) = g.defaults;
        let dv = s.size("hidden_size", d0)?;
        let d = sym("d_vis", dv);
        let l = sym("L_vis", s.size("depth", 24)?);
        let out = sym("d_out", s.size("out_hidden_size", out0)?);
        let f = sym("d_ff_vis", s.size("intermediate_size", f0)?);
        let m = s.size("spatial_merge_size", 2)?;
        let bias = s.flag("attention_bias", bias0)?;
        let one = lit(1);
        if g.glm4v {
            let image = s.size("image_size", 336)?;
            let patch = s.size("patch_size", 14)?;
            let side = s.check(checked::div("image_size / patch_size", image, patch))?;
            p.table(
                "model.visual.embeddings.position_embedding",
                "vision embeddings",
                (
                    lit(s.mul(side, side, "(image_size / patch_size)²")?),
                    d.clone(),
                ),
                &one,
            );
        }
        patch_embed(s, p, "model.visual.patch_embed", &d, 14, true)?;
        let pre = "model.visual.blocks";
        p.norm(format!("{pre}.norm1"), "vision norms", &d, false, &l);
        p.norm(format!("{pre}.norm2"), "vision norms", &d, false, &l);
        let merger_width = if g.glm4v {
            attention(p, pre, &d, bias, false, &l);
            gated(p, &format!("{pre}.mlp"), &d, &out, false, &l);
            p.norm(
                "model.visual.post_conv_layernorm",
                "vision norms",
                &d,
                false,
                &one,
            );
            f
        } else {
            let heads = s.size("num_heads", 16)?;
            let dh = s.check(checked::div("hidden_size / num_heads", dv, heads))?;
            attention(p, pre, &d, bias, bias, &l);
            p.norm(
                format!("{pre}.attn.q_norm"),
                "vision attention",
                &lit(dh),
                false,
                &l,
            );
            p.norm(
                format!("{pre}.attn.k_norm"),
                "vision attention",
                &lit(dh),
                false,
                &l,
            );
            gated(p, &format!("{pre}.mlp"), &d, &f, bias, &l);
            match g.projection {
                Some(w) => sym("d_proj", s.size("projection_intermediate_size", w)?),
                None => mul(out.clone(), lit(s.size("in_channels", 3)?)),
            }
        };
        p.norm(
            "model.visual.post_layernorm",
            "vision norms",
            &d,
            false,
            &one,
        );
        let part = "multimodal projector";
        p.conv(
            "model.visual.downsample",
            part,
            (
                d.clone(),
                lit(s.mul(m, m, "spatial_merge_size²")?),
                out.clone(),
            ),
            true,
            &one,
        );
        let pre = "model.visual.merger";
        p.linear(
            format!("{pre}.proj"),
            part,
            (out.clone(), out.clone()),
            false,
            &one,
        );
        p.norm(
            format!("{pre}.post_projection_norm"),
            part,
            &out,
            true,
            &one,
        );
        gated(p, pre, &out, &merger_width, false, &one);
        Ok(())
    })
}

const GLM4V: Glm = Glm {
    glm4v: true,
    defaults: (1536, 4096, 13696, false),
    projection: None,
};

/// `GlmOcrVisionModel`'s defaults.
const GLM_OCR: Glm = Glm {
    glm4v: false,
    defaults: (1024, 1536, 4096, true),
    projection: None,
};

/// `Glm4vForConditionalGeneration` and `Glm4vMoeForConditionalGeneration` (the text
/// config's `tie_word_embeddings` forwarded to the composite's).
pub(super) fn glm4v(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let (text_type, vis_class) = match f.model_type {
        "glm4v_moe" => ("glm4v_moe_text", "Glm4vMoeVisionConfig"),
        _ => ("glm4v_text", "Glm4vVisionConfig"),
    };
    let spec = text(raw, f, text_type, head, Tie::Either(false))?;
    let mut p = vision();
    tower(raw, "vision_config", vis_class, GLM4V, &mut p)?;
    Ok(with_parts(spec, p))
}

/// `Glm46VForConditionalGeneration` (GLM-4.6V; `glmga` is its alias): a GLM-4V tower and a
/// text model, each built by `AutoModel` from its sub-config's `model_type`; tied by the
/// composite's `tie_word_embeddings` alone.
pub(super) fn glm46v(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let spec = text(raw, f, "glm4v_text", head, Tie::Top(false))?;
    let vis_class = match super::parts::sub_type(raw, "vision_config", "glm4v_vision")? {
        "glm4v_vision" => "Glm4vVisionConfig",
        "glm4v_moe_vision" => "Glm4vMoeVisionConfig",
        other => {
            return Err(crate::hf_config::unsupported(
                &format!("{} (vision_config)", raw.file),
                other,
            ));
        }
    };
    let mut p = vision();
    tower(raw, "vision_config", vis_class, GLM4V, &mut p)?;
    Ok(with_parts(spec, p))
}

/// `GlmOcrForConditionalGeneration`.
pub(super) fn glm_ocr(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let spec = text(raw, f, "glm_ocr_text", head, Tie::Either(false))?;
    let mut p = vision();
    tower(raw, "vision_config", "GlmOcrVisionConfig", GLM_OCR, &mut p)?;
    Ok(with_parts(spec, p))
}

/// `Glm5NextForConditionalGeneration` (GLM-5.3-Flash): the GLM-OCR tower with its merger's MLP
/// `projection_intermediate_size` wide, and the `glm5_next_text` model (`latent2.rs`); the
/// head tied by the composite's `tie_word_embeddings` alone (`Glm5NextConfig`, default false).
/// A flat text-only checkpoint (no `text_config`) keeps the text keys at the top, which
/// `Glm5NextConfig.__post_init__` forwards as the text config.
pub(super) fn glm5_next(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let spec = if raw.value("text_config").is_some_and(|v| !v.is_null()) {
        text(raw, f, "glm5_next_text", head, Tie::Top(false))?
    } else {
        flat_text(raw, f, head)?
    };
    let mut p = vision();
    let g = Glm {
        projection: Some(10_240),
        ..GLM_OCR
    };
    tower(raw, "vision_config", "Glm5NextVisionConfig", g, &mut p)?;
    Ok(with_parts(spec, p))
}

/// The text model of a flat GLM-5-Next checkpoint: the top-level keys (but the vision
/// config's and the model type) read as `text_config`.
fn flat_text(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let mut sub = raw.map.clone();
    for k in ["text_config", "vision_config", "model_type"] {
        sub.remove(k);
    }
    let mut map = raw.map.clone();
    map.insert("text_config".to_owned(), serde_json::Value::Object(sub));
    let mut inner = raw.sibling(&map);
    let spec = text(&mut inner, f, "glm5_next_text", head, Tie::Top(false))?;
    let reason = format!("absent; `{}` reads the top-level keys", f.config_class);
    raw.assume("text_config", "the top-level keys", &reason);
    for a in inner.assumptions {
        raw.assume(&a.field, a.value, &a.reason);
    }
    for (symbol, source) in inner.sources {
        raw.source(symbol, &source);
    }
    Ok(spec)
}
