//! Florence-2 (`modeling_florence2.py`): the `DaViT` backbone (per stage a convolutional patch
//! embedding with a `LayerNorm` before or after it, then `depths` blocks of a spatial
//! (window-attention) and a channel-attention block, each with two depthwise 3×3 position
//! convolutions, two `LayerNorm`s and an MLP of `mlp_ratio`), the projector (an unbiased
//! projection, a norm, learned row/column embeddings), and BART of `text_config`.

use llmsize_core::expr::Expr;
use llmsize_core::spec::ModelSpec;

use super::parts::{Parts, lit, sym, with_sub};
use super::vit::mlp;
use super::{Tie, text, vision, with_parts};
use crate::error::ConfigError;
use crate::hf_config::HeadChoice;
use crate::hf_config::family::Family;
use crate::hf_config::raw::RawConfig;
use llmsize_core::{Overflow, checked};

/// One spatial or channel block of width `c` (`n` of them); `3·c` must fit.
fn block(
    p: &mut Parts,
    pre: &str,
    (c, ratio_width): (u64, u64),
    qkv_bias: bool,
    n: &Expr,
) -> Result<(), Overflow> {
    let part = "vision blocks";
    let qkv = checked::mul("3·dim_embed", c, 3)?;
    let d = lit(c);
    for conv in ["conv1", "conv2"] {
        p.table(format!("{pre}.{conv}.weight"), part, (d.clone(), lit(9)), n);
        p.vector(format!("{pre}.{conv}.bias"), part, d.clone(), n);
    }
    p.norm(format!("{pre}.norm1"), part, &d, true, n);
    p.norm(format!("{pre}.norm2"), part, &d, true, n);
    p.linear(
        format!("{pre}.attn.qkv"),
        part,
        (d.clone(), lit(qkv)),
        qkv_bias,
        n,
    );
    p.linear(
        format!("{pre}.attn.proj"),
        part,
        (d.clone(), d.clone()),
        true,
        n,
    );
    mlp(
        p,
        &format!("{pre}.ffn"),
        (&d, &lit(ratio_width)),
        false,
        true,
        n,
    );
    Ok(())
}

/// `Florence2ForConditionalGeneration`, tied by `tie_word_embeddings` (default true).
pub(crate) fn florence2(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let spec = text(raw, f, "bart", head, Tie::Top(true))?;
    let mut p = vision();
    with_sub(raw, "vision_config", "Florence2VisionConfig", |s| {
        let in_ch = s.size("in_channels", 3)?;
        let depths = s.list("depths", &[1, 1, 9, 1])?;
        let patch = s.list("patch_size", &[7, 3, 3, 3])?;
        let prenorm = match s.r.raw.value("patch_prenorm") {
            Some(serde_json::Value::Array(a)) => a
                .iter()
                .map(|b| {
                    b.as_bool()
                        .ok_or_else(|| s.r.raw.invalid("patch_prenorm", b, "a list of booleans"))
                })
                .collect::<Result<Vec<bool>, _>>()?,
            Some(v) => return Err(s.r.raw.invalid("patch_prenorm", v, "a list of booleans")),
            None => vec![false, true, true, true],
        };
        let dims = s.list("embed_dim", &[128, 256, 512, 1024])?;
        let ratio = s.float("mlp_ratio", 4.0)?;
        let qkv_bias = s.flag("qkv_bias", true)?;
        let proj = s.size("projection_dim", 1024)?;
        let positions = s.size("max_position_embeddings", 50)?;
        let bad = |s: &super::parts::Sub<'_, '_>| {
            s.r.raw.invalid(
                "embed_dim",
                &serde_json::Value::from(dims.clone()),
                "one width per stage of `depths`, `patch_size` and `patch_prenorm`",
            )
        };
        if dims.is_empty()
            || [depths.len(), patch.len(), prenorm.len()]
                .iter()
                .any(|n| *n < dims.len())
        {
            return Err(bad(s));
        }
        let one = lit(1);
        let pre = "model.vision_tower";
        let mut c_in = in_ch;
        for (i, ((&c, &k), (&pn, &depth))) in dims
            .iter()
            .zip(&patch)
            .zip(prenorm.iter().zip(&depths))
            .enumerate()
        {
            let part = "vision embeddings";
            p.conv(
                format!("{pre}.convs.{i}.conv"),
                part,
                (lit(c_in), lit(s.mul(k, k, "patch_size²")?), lit(c)),
                true,
                &one,
            );
            let norm_dim = if pn { c_in } else { c };
            p.norm(
                format!("{pre}.convs.{i}.norm"),
                part,
                &lit(norm_dim),
                true,
                &one,
            );
            #[allow(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                clippy::cast_precision_loss,
                reason = "Python's `int(embed_dim * mlp_ratio)` of widths far below 2^52"
            )]
            let width = (c as f64 * ratio).trunc() as u64;
            if depth > 0 {
                let n = sym("depth", depth);
                s.check(block(
                    &mut p,
                    &format!("{pre}.blocks.{i}.spatial_block"),
                    (c, width),
                    qkv_bias,
                    &n,
                ))?;
                s.check(block(
                    &mut p,
                    &format!("{pre}.blocks.{i}.channel_block"),
                    (c, width),
                    qkv_bias,
                    &n,
                ))?;
            }
            c_in = c;
        }
        let last = c_in;
        let part = "multimodal projector";
        let pre = "model.multi_modal_projector";
        let pd = sym("projection_dim", proj);
        p.linear(
            format!("{pre}.image_projection"),
            part,
            (lit(last), pd.clone()),
            false,
            &one,
        );
        p.norm(format!("{pre}.image_proj_norm"), part, &pd, true, &one);
        p.table(
            format!("{pre}.image_position_embed.row_embeddings"),
            part,
            (lit(positions), lit(last / 2)),
            &one,
        );
        p.table(
            format!("{pre}.image_position_embed.column_embeddings"),
            part,
            // `last − last // 2`.
            (lit(positions), lit(last.div_ceil(2))),
            &one,
        );
        Ok(())
    })?;
    Ok(with_parts(spec, p))
}
