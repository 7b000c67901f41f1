//! MiniCPM-V 4.6 / 4.7 and MiniCPM-OCR (`modeling_minicpmv4_6.py` and copies): a SigLIP-style
//! tower (biased patch convolution, positions, the encoder, `post_layernorm`) with a window
//! attention merger inside (`vit_merger`: attention, a norm, and an MLP over the
//! `window_kernel_size` window), and `merger_times` downsampling MLPs over four merged
//! patches, the last into the text width. Text: Qwen3.5 (another family file).

use llmsize_core::spec::ModelSpec;

use super::parts::{lit, mul, sym, with_sub, with_top};
use super::vit::{VitLayer, layers, siglip_embeddings, vit_keys};
use super::{Tie, text, vision, with_parts};
use crate::error::ConfigError;
use crate::hf_config::HeadChoice;
use crate::hf_config::family::Family;
use crate::hf_config::raw::RawConfig;

/// `MiniCPMV4_6ForConditionalGeneration` and its copies; `MiniCPMOcrConfig` ties by
/// default, the others do not.
pub(crate) fn minicpm(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let (tie, class) = match f.model_type {
        "minicpm_ocr" => (true, "MiniCPMOcrVisionConfig"),
        "minicpmv4_7" => (false, "MiniCPMV4_7VisionConfig"),
        _ => (false, "MiniCPMV4_6VisionConfig"),
    };
    let spec = text(raw, f, "qwen3_5_text", head, Tie::Top(tie))?;
    let mut p = vision();
    let hidden = with_sub(raw, "vision_config", class, |s| {
        let k = vit_keys(s, (768, 3072, 12, 224, 16))?;
        let window = s.list("window_kernel_size", &[2, 2])?;
        let w = window
            .iter()
            .try_fold(1u64, |a, b| a.checked_mul(*b))
            .ok_or_else(|| {
                s.r.raw.invalid(
                    "window_kernel_size",
                    &format!("{window:?}").into(),
                    "sizes whose product fits in 64 bits",
                )
            })?;
        let pre = "model.vision_tower";
        siglip_embeddings(&mut p, pre, &k);
        let layer = VitLayer::clip(k.d(), k.ff());
        layers(&mut p, &format!("{pre}.encoder.layers"), &k.l(), &layer);
        let one = lit(1);
        p.norm(
            format!("{pre}.post_layernorm"),
            "vision norms",
            &k.d(),
            true,
            &one,
        );
        let m = format!("{pre}.vit_merger");
        let part = "window attention merger";
        for n in ["q_proj", "k_proj", "v_proj", "out_proj"] {
            p.linear(
                format!("{m}.self_attn.{n}"),
                part,
                (k.d(), k.d()),
                true,
                &one,
            );
        }
        p.norm(format!("{m}.layer_norm1"), part, &k.d(), true, &one);
        let wide = mul(k.d(), lit(w));
        let inner = mul(k.ff(), lit(w));
        p.norm(format!("{m}.pre_norm"), part, &wide, true, &one);
        p.linear(
            format!("{m}.linear_1"),
            part,
            (wide, inner.clone()),
            true,
            &one,
        );
        p.linear(format!("{m}.linear_2"), part, (inner, k.d()), true, &one);
        Ok(k.hidden)
    })?;
    let times = with_top(raw, f.config_class, |s| s.size("merger_times", 1))?;
    let part = "merger";
    let four = mul(lit(4), sym("d_vis", hidden));
    // `merger_times` MLPs: the first `times − 1` end at the tower's width (identical, held as
    // copies, so a hostile count costs nothing), the last at the text model's.
    let last = sym("d", spec.hidden_size);
    for (pre, copies, out) in [
        // `times ≥ 1` (a size).
        (
            "model.merger.mlp.0",
            times.saturating_sub(1),
            sym("d_vis", hidden),
        ),
        ("model.merger.mlp.last", 1, last),
    ] {
        if copies == 0 {
            continue;
        }
        let copies = lit(copies);
        p.norm(format!("{pre}.pre_norm"), part, &four, true, &copies);
        p.linear(
            format!("{pre}.linear_1"),
            part,
            (four.clone(), four.clone()),
            true,
            &copies,
        );
        p.linear(
            format!("{pre}.linear_2"),
            part,
            (four.clone(), out),
            true,
            &copies,
        );
    }
    Ok(with_parts(spec, p))
}
