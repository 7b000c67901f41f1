//! RADIO (`modeling_radio.py`) and Nemotron-H Omni (`modeling_nemotron_h_omni.py`): the
//! vision model is an unbiased linear patch projection (and a video one over
//! `video_temporal_patch_size` frames), learned positions over the `max_img_size` grid,
//! class and register tokens, and pre-norm layers with per-channel layer scales (an MLP of
//! `mlp_ratio`, or a `SwiGLU` of `⌈2/3⌉` of it rounded to 8); the omni model adds an optional
//! final `LayerNorm` (when the text model has MTP layers) and an `RMSNorm` + two-layer
//! projector over the pixel-shuffled features. Text: Nemotron-H (another family file). An
//! audio tower is not read.

use llmsize_core::spec::ModelSpec;

use super::parts::{lit, mul, object, sym, with_sub, with_top};
use super::vit::{VitLayer, layers, mlp};
use super::{Tie, not_read, text, vision, with_parts};
use crate::error::ConfigError;
use crate::hf_config::HeadChoice;
use crate::hf_config::family::Family;
use crate::hf_config::raw::RawConfig;
use llmsize_core::checked::{self, Checked};

/// `NemotronH_Omni_Reasoning_V3` without an audio tower.
pub(crate) fn nemotron_h_omni(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    for key in ["audio_config", "sound_config"] {
        if raw.value(key).is_some() {
            return Err(not_read(
                raw,
                f.model_type,
                key,
                "Nemotron-H Omni without an audio tower (`audio_config: null`)",
            ));
        }
    }
    let spec = text(raw, f, "nemotron_h", head, Tie::Text)?;
    let text_config = object(raw, "text_config")?;
    let mtp = raw
        .nested("text_config", text_config)
        .uint("num_nextn_predict_layers")?
        .unwrap_or(0);
    // `NemotronHOmniConfig.validate_architecture`: the tower's own
    // `video_temporal_patch_size` (`RadioConfig`: none) must equal the composite's (2).
    let reason = format!("absent; `{}` default", f.config_class);
    let top_temporal = raw.size_or(
        &["video_temporal_patch_size"],
        llmsize_core::expr::Sym::Named("video_temporal_patch_size"),
        2,
        &reason,
    )?;
    let mut tower_temporal = None;
    let mut p = vision();
    with_sub(raw, "vision_config", "RadioConfig", |s| {
        let hidden = s.size("hidden_size", 1280)?;
        let n = s.count("num_hidden_layers", 32)?;
        let ratio = s.float("mlp_ratio", 4.0)?;
        let swiglu = s.flag("use_swiglu_ffn", false)?;
        let qkv_bias = s.flag("qkv_bias", true)?;
        let channels = s.size("num_channels", 3)?;
        let patch = s.size("patch_size", 16)?;
        let max_img = s.size("max_img_size", 2048)?;
        let cls = s.count("num_cls_tokens", 3)?;
        let registers = s.count("num_registers", 7)?;
        let temporal = s.size_opt("video_temporal_patch_size")?;
        tower_temporal = temporal;
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss,
            reason = "Python's `int(hidden_size * mlp_ratio)` of sizes far below 2^52"
        )]
        let width = (hidden as f64 * ratio).trunc() as u64;
        let (d, l, one) = (sym("d_vis", hidden), sym("L_vis", n), lit(1));
        let patch_dim = s.check(checked::product(
            "num_channels·patch_size²",
            [channels, patch, patch],
        ))?;
        let pre = "vision_model";
        let part = "vision embeddings";
        let e = format!("{pre}.embeddings");
        p.linear(
            format!("{e}.patch_projection"),
            part,
            (lit(patch_dim), d.clone()),
            false,
            &one,
        );
        if let Some(t) = temporal {
            p.linear(
                format!("{e}.video_patch_projection"),
                part,
                (
                    lit(s.mul(t, patch_dim, "temporal_patch_size·num_channels·patch_size²")?),
                    d.clone(),
                ),
                false,
                &one,
            );
        }
        let side = s.check(checked::div("max_img_size / patch_size", max_img, patch))?;
        p.table(
            format!("{e}.position_embedding"),
            part,
            (
                lit(s.mul(side, side, "(max_img_size / patch_size)²")?),
                d.clone(),
            ),
            &one,
        );
        p.table(
            format!("{e}.cls_register_token"),
            part,
            (
                lit(s.check(checked::add(
                    "cls_token_count + num_registers",
                    cls,
                    registers,
                ))?),
                d.clone(),
            ),
            &one,
        );
        let lp = format!("{pre}.encoder.layer");
        let (gated, ff) = if swiglu {
            (
                true,
                s.check(
                    ((Checked::new(width) * 2u64 / 3u64).div_ceil(8u64) * 8u64)
                        .get("⌈2·mlp width / 3 / 8⌉·8"),
                )?,
            )
        } else {
            (false, width)
        };
        let layer = VitLayer {
            qkv_bias,
            ..VitLayer::clip(d.clone(), sym("d_ff_vis", ff))
        };
        // The attention and norms are CLIP's; the MLP is written below (gated or not).
        let attn_only = VitLayer {
            with_mlp: false,
            ..layer
        };
        layers(&mut p, &lp, &l, &attn_only);
        let part = "vision encoder layers";
        p.vector(format!("{lp}.layer_scale1.lambda1"), part, d.clone(), &l);
        p.vector(format!("{lp}.layer_scale2.lambda1"), part, d.clone(), &l);
        mlp(
            &mut p,
            &format!("{lp}.mlp"),
            (&d, &sym("d_ff_vis", ff)),
            gated,
            true,
            &l,
        );
        Ok(())
    })?;
    if tower_temporal != Some(top_temporal) {
        let shown = tower_temporal.map_or(serde_json::Value::Null, serde_json::Value::from);
        return Err(raw.invalid(
            "vision_config.video_temporal_patch_size",
            &shown,
            &format!(
                "equal to `video_temporal_patch_size` ({top_temporal}), as transformers requires"
            ),
        ));
    }
    let (d_vis, ratio, inner) = with_top(raw, f.config_class, |s| {
        let d = match s.size_opt("vit_hidden_size")? {
            Some(n) => n,
            None => s.size("vision_hidden_size", 1280)?,
        };
        Ok((
            d,
            s.float("downsample_ratio", 0.5)?,
            s.size("projector_hidden_size", 4096)?,
        ))
    })?;
    let inv = 1.0 / ratio;
    if !(inv.is_finite() && (1.0..=65_536.0).contains(&inv)) {
        return Err(raw.invalid(
            "downsample_ratio",
            &serde_json::Value::from(ratio),
            "a ratio in (0, 1]",
        ));
    }
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "Python's `int()` of a value checked to lie in [1, 65536]"
    )]
    let side = inv.trunc() as u64;
    let one = lit(1);
    let dv = sym("vision_hidden_size", d_vis);
    if mtp > 0 {
        p.norm("vision_final_layernorm", "vision norms", &dv, true, &one);
    }
    let part = "multimodal projector";
    let wide = mul(dv, lit(raw.mul(side, side, "int(1 / downsample_ratio)²")?));
    let inner = sym("projector_hidden_size", inner);
    p.norm("multi_modal_projector.layer_norm", part, &wide, false, &one);
    p.linear(
        "multi_modal_projector.linear_1",
        part,
        (wide, inner.clone()),
        false,
        &one,
    );
    p.linear(
        "multi_modal_projector.linear_2",
        part,
        (inner, sym("d", spec.hidden_size)),
        false,
        &one,
    );
    Ok(with_parts(spec, p))
}
