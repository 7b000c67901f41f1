//! The SAM-style image encoder (`modeling_got_ocr2.py`, `GotOcr2VisionEncoder`; the same in
//! PP-Chart2Table and `DeepSeek`-VL hybrid): a biased patch convolution, absolute positions
//! on the patch grid, layers of a fused `qkv` with decomposed relative positions (windowed
//! layers over `window_size`, the `global_attn_indexes` over the whole grid), and a
//! convolutional neck to `output_channels`.

use llmsize_core::spec::ModelSpec;

use super::parts::{Parts, Sub, lit, mul, sym, with_sub};
use super::vit::{mlp, vit_keys_without_ffn};
use super::{Tie, text, vision, with_parts};
use crate::error::ConfigError;
use crate::hf_config::HeadChoice;
use crate::hf_config::family::Family;
use crate::hf_config::raw::RawConfig;
use llmsize_core::checked::{self, Checked};

/// The encoder's output width (`output_channels`).
/// `SamVisionConfig` has no `mlp_dim` default but `int(hidden_size·mlp_ratio)` (`ratio`);
/// `GotOcr2VisionConfig`'s is 3072.
/// `image_size` is the vision config class's default (1024 for SAM's; 512 for
/// `PPFormulaNetVisionConfig`).
pub(crate) fn sam_encoder(
    s: &mut Sub<'_, '_>,
    p: &mut Parts,
    pre: &str,
    ratio: bool,
    image_size: u64,
) -> Result<u64, ConfigError> {
    let k = vit_keys_without_ffn(s, (768, 12, image_size, 16))?;
    let ffn = if ratio {
        if let Some(n) = s.size_opt("mlp_dim")? {
            n
        } else {
            let r = s.float("mlp_ratio", 4.0)?;
            #[allow(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                clippy::cast_precision_loss,
                reason = "Python's `int(hidden_size * mlp_ratio)` of sizes far below 2^52"
            )]
            let n = (k.hidden as f64 * r).trunc() as u64;
            n
        }
    } else {
        s.size("mlp_dim", 3072)?
    };
    let heads = s.size("num_attention_heads", 12)?;
    let out = s.size("output_channels", 256)?;
    let qkv_bias = s.flag("qkv_bias", true)?;
    let abs_pos = s.flag("use_abs_pos", true)?;
    let rel_pos = s.flag("use_rel_pos", true)?;
    let window = s.count("window_size", 14)?;
    let global = s.list("global_attn_indexes", &[2, 5, 8, 11])?;
    let head_dim = s.check(checked::div(
        "hidden_size / num_attention_heads",
        k.hidden,
        heads,
    ))?;
    let one = lit(1);
    let d = k.d();
    k.patch_conv(p, format!("{pre}.patch_embed.projection"), true);
    let side = |i: u64, p: u64| s.check(checked::div("image_size / patch_size", i, p));
    let grid = (side(k.image.0, k.patch.0)?, side(k.image.1, k.patch.1)?);
    if abs_pos {
        p.table(
            format!("{pre}.pos_embed"),
            "vision embeddings",
            (lit(k.patches()), d.clone()),
            &one,
        );
    }
    let l = k.l();
    let part = "vision encoder layers";
    p.norm(format!("{pre}.layers.layer_norm1"), part, &d, true, &l);
    p.linear(
        format!("{pre}.layers.attn.qkv"),
        part,
        (d.clone(), mul(lit(3), d.clone())),
        qkv_bias,
        &l,
    );
    p.linear(
        format!("{pre}.layers.attn.proj"),
        part,
        (d.clone(), d.clone()),
        true,
        &l,
    );
    p.norm(format!("{pre}.layers.layer_norm2"), part, &d, true, &l);
    mlp(
        p,
        &format!("{pre}.layers.mlp"),
        (&d, &sym("d_ff_vis", ffn)),
        false,
        true,
        &l,
    );
    if rel_pos {
        let n_global = global
            .iter()
            .filter(|i| **i < k.layers)
            .collect::<std::collections::BTreeSet<_>>()
            .len() as u64;
        // `window_size` 0 makes every layer global.
        let (n_window, n_global) = if window == 0 {
            (0, k.layers)
        } else {
            // Distinct indexes below the layers: at most the layers.
            (k.layers.saturating_sub(n_global), n_global)
        };
        for (count, (h, w), what) in [
            (n_window, (window, window), "windowed"),
            (n_global, grid, "global"),
        ] {
            if count == 0 {
                continue;
            }
            let c = sym(
                if what == "global" {
                    "L_global"
                } else {
                    "L_window"
                },
                count,
            );
            for (axis, side) in [("h", h), ("w", w)] {
                p.table(
                    format!("{pre}.layers.attn.rel_pos_{axis} ({what})"),
                    part,
                    (
                        lit(s.check((Checked::new(side) * 2u64 - 1u64).get("2·side − 1"))?),
                        lit(head_dim),
                    ),
                    &c,
                );
            }
        }
    }
    let oc = sym("c_out", out);
    let part = "vision neck";
    p.conv(
        format!("{pre}.neck.conv1"),
        part,
        (d, lit(1), oc.clone()),
        false,
        &one,
    );
    p.norm(format!("{pre}.neck.layer_norm1"), part, &oc, true, &one);
    p.conv(
        format!("{pre}.neck.conv2"),
        part,
        (oc.clone(), lit(9), oc.clone()),
        false,
        &one,
    );
    p.norm(format!("{pre}.neck.layer_norm2"), part, &oc, true, &one);
    Ok(out)
}

/// `GotOcr2ForConditionalGeneration` (GOT-OCR 2 and PP-Chart2Table): the encoder, two
/// stride-2 3×3 convolutions `c_out → 2·c_out → d` without bias and a biased `d → d`
/// projection; Qwen2 text, tied by the top-level key (default true).
pub(crate) fn got_ocr2(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let spec = text(raw, f, "qwen2", head, Tie::Top(true))?;
    let class = if f.model_type == "got_ocr2" {
        "GotOcr2VisionConfig"
    } else {
        "PPChart2TableVisionConfig"
    };
    let mut p = vision();
    let out = with_sub(raw, "vision_config", class, |s| {
        sam_encoder(s, &mut p, "model.vision_tower", false, 1024)
    })?;
    let one = lit(1);
    let part = "multimodal projector";
    let oc = sym("c_out", out);
    let two = mul(lit(2), oc.clone());
    let d = sym("d", spec.hidden_size);
    let pre = "model.multi_modal_projector";
    p.conv(
        format!("{pre}.conv_upsampler1"),
        part,
        (oc, lit(9), two.clone()),
        false,
        &one,
    );
    p.conv(
        format!("{pre}.conv_upsampler2"),
        part,
        (two, lit(9), d.clone()),
        false,
        &one,
    );
    p.linear(
        format!("{pre}.multimodal_projector"),
        part,
        (d.clone(), d),
        true,
        &one,
    );
    Ok(with_parts(spec, p))
}
