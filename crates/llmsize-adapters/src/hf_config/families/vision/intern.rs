//! `InternViT` (`modeling_internvl.py`, `InternVLVisionModel`; Qianfan-OCR's copy with
//! other defaults) and the `InternVL` composite: class token, optional mask token, a biased
//! patch convolution, absolute positions, layers with per-channel scales (`lambda_1`,
//! `lambda_2`), optional q/k `RMSNorm`s, `LayerNorm` or `RMSNorm` by `norm_type`; a final
//! `LayerNorm` unless `use_mean_pooling`.

use llmsize_core::spec::ModelSpec;

use super::parts::{Parts, lit, mul, sym, with_sub, with_top};
use super::vit::{Tower, VitLayer, layers, vit_keys};
use super::{Tie, text, vision, with_parts};
use crate::error::ConfigError;
use crate::hf_config::HeadChoice;
use crate::hf_config::family::Family;
use crate::hf_config::raw::RawConfig;

/// The `InternViT` under `key`, read with `class`'s defaults (`attention_bias` differs).
pub(crate) fn intern_vit(
    raw: &mut RawConfig<'_>,
    key: &str,
    class: &'static str,
    attention_bias: bool,
    p: &mut Parts,
) -> Result<Tower, ConfigError> {
    with_sub(raw, key, class, |s| {
        let k = vit_keys(s, (1024, 4096, 24, 448, 14))?;
        let qkv_bias = s.flag("attention_bias", attention_bias)?;
        let qk_norm = s.flag("use_qk_norm", false)?;
        let norm = s.string("norm_type", "layer_norm")?;
        let norm_bias = match norm.as_str() {
            "layer_norm" => true,
            "rms_norm" => false,
            _ => {
                return Err(s.r.raw.invalid(
                    "norm_type",
                    &norm.into(),
                    "`layer_norm` or `rms_norm`",
                ));
            }
        };
        let mask = s.flag("use_mask_token", false)?;
        let absolute = s.flag("use_absolute_position_embeddings", true)?;
        let mean_pooling = s.flag("use_mean_pooling", true)?;
        let one = lit(1);
        let pre = "vision_tower";
        let part = "vision embeddings";
        p.vector(format!("{pre}.embeddings.cls_token"), part, k.d(), &one);
        if mask {
            p.vector(format!("{pre}.embeddings.mask_token"), part, k.d(), &one);
        }
        k.patch_conv(
            p,
            format!("{pre}.embeddings.patch_embeddings.projection"),
            true,
        );
        if absolute {
            p.table(
                format!("{pre}.embeddings.position_embeddings"),
                part,
                (lit(k.positions()), k.d()),
                &one,
            );
        }
        let layer = VitLayer {
            qkv_bias,
            norm_bias,
            qk_norm: qk_norm.then(|| (k.d(), false)),
            layer_scale: true,
            ..VitLayer::clip(k.d(), k.ff())
        };
        layers(p, &format!("{pre}.encoder.layer"), &k.l(), &layer);
        if !mean_pooling {
            p.norm(
                format!("{pre}.layernorm"),
                "vision norms",
                &k.d(),
                true,
                &one,
            );
        }
        Ok(k.tower())
    })
}

/// `int(1 / downsample_ratio)²`, the patches one projected token gathers.
fn downsample(raw: &mut RawConfig<'_>, class: &'static str) -> Result<u64, ConfigError> {
    let r = with_top(raw, class, |s| s.float("downsample_ratio", 0.5))?;
    let inv = 1.0 / r;
    if !(inv.is_finite() && (1.0..=65_536.0).contains(&inv)) {
        return Err(raw.invalid(
            "downsample_ratio",
            &serde_json::Value::from(r),
            "a ratio in (0, 1]",
        ));
    }
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "Python's `int()` of a value checked to lie in [1, 65536]"
    )]
    let side = inv.trunc() as u64;
    raw.mul(side, side, "int(1 / downsample_ratio)²")
}

/// `InternVLForConditionalGeneration` (and Qianfan-OCR's copy): `InternViT`, the projector
/// (`LayerNorm` and `linear_1` over `d_vis·int(1/downsample_ratio)²`, `linear_2` `d → d`,
/// all biased), the text model.
pub(crate) fn internvl(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let qianfan = f.model_type == "qianfan_ocr";
    let (text_type, tie, vis_class, bias) = if qianfan {
        ("qwen3", Tie::Top(false), "QianfanOCRVisionConfig", true)
    } else {
        ("qwen2", Tie::Top(true), "InternVLVisionConfig", false)
    };
    let spec = text(raw, f, text_type, head, tie)?;
    let mut p = vision();
    let t = intern_vit(raw, "vision_config", vis_class, bias, &mut p)?;
    let n = downsample(raw, f.config_class)?;
    let one = lit(1);
    let part = "multimodal projector";
    let wide = mul(sym("d_vis", t.hidden), lit(n));
    let d = sym("d", spec.hidden_size);
    p.norm("multi_modal_projector.layer_norm", part, &wide, true, &one);
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
