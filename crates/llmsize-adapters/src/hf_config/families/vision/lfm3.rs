//! LFM3-VL (`modeling_lfm3_vl.py`): a vision model of `RMSNorm` layers that are either
//! attention (grouped heads, per-head q/k norms) or a gated depthwise 2-D convolution over the
//! patch grid (`layer_types`; by default `conv` for the first two and odd layers), each with a
//! `SwiGLU` MLP; a linear patch embedding and an embedding norm. The projector normalises each
//! token and merges `spatial_merge_size²` of them. Text: LFM3 (another family file).

use llmsize_core::spec::ModelSpec;

use super::parts::{lit, mul, sym, with_sub, with_top};
use super::{Tie, text, vision, with_parts};
use crate::error::ConfigError;
use crate::hf_config::HeadChoice;
use crate::hf_config::family::Family;
use crate::hf_config::raw::RawConfig;
use llmsize_core::checked;

/// `Lfm3VlForConditionalGeneration`, tied by default.
pub(crate) fn lfm3_vl(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let spec = text(raw, f, "lfm3", head, Tie::Top(true))?;
    let mut p = vision();
    let (hidden, merge) = with_sub(raw, "vision_config", "Lfm3VlVisionConfig", |s| {
        let hidden = s.size("hidden_size", 1024)?;
        let ffn = s.size("intermediate_size", 2560)?;
        let channels = s.size("in_channels", 3)?;
        let patch = s.size("patch_size", 16)?;
        let merge = s.size("spatial_merge_size", 2)?;
        let temporal = s.size("temporal_patch_size", 2)?;
        let n = s.count("num_hidden_layers", 14)?;
        let heads = s.size("num_attention_heads", 16)?;
        let kv = s.size("num_key_value_heads", 8)?;
        let kernel = s.size("conv_kernel_size", 3)?;
        let n_attn = match s.r.raw.value("layer_types") {
            Some(serde_json::Value::Array(a)) => {
                if a.len() as u64 != n {
                    let v = serde_json::Value::Array(a.clone());
                    return Err(s.r.raw.invalid("layer_types", &v, "one entry per layer"));
                }
                a.iter().filter(|t| t.as_str() != Some("conv")).count() as u64
            }
            Some(v) => return Err(s.r.raw.invalid("layer_types", v, "a list of layer kinds")),
            // `conv` for the first two and the odd layers: the even layers from 2 attend.
            None => n.saturating_sub(1) / 2,
        };
        // `n_attn ≤ n` either way.
        let n_conv = n.saturating_sub(n_attn);
        let head_dim = s.check(checked::div(
            "hidden_size / num_attention_heads",
            hidden,
            heads,
        ))?;
        let d = sym("d_vis", hidden);
        let one = lit(1);
        let pre = "model.vision_tower";
        p.linear(
            format!("{pre}.patch_embed"),
            "vision embeddings",
            (
                lit(s.check(checked::product(
                    "in_channels·temporal_patch_size·patch_size²",
                    [channels, temporal, patch, patch],
                ))?),
                d.clone(),
            ),
            false,
            &one,
        );
        p.norm(
            format!("{pre}.embedding_norm"),
            "vision norms",
            &d,
            false,
            &one,
        );
        let all = sym("L_vis", n);
        let part = "vision encoder layers";
        p.norm(format!("{pre}.layers.operator_norm"), part, &d, false, &all);
        p.norm(format!("{pre}.layers.ffn_norm"), part, &d, false, &all);
        let ff = sym("d_ff_vis", ffn);
        let ffn_part = "vision mlp";
        for (name, (i, o)) in [("w1", (&d, &ff)), ("w3", (&d, &ff)), ("w2", (&ff, &d))] {
            p.linear(
                format!("{pre}.layers.feed_forward.{name}"),
                ffn_part,
                (i.clone(), o.clone()),
                false,
                &all,
            );
        }
        if n_attn > 0 {
            let la = sym("L_attn", n_attn);
            let q = lit(s.mul(heads, head_dim, "num_attention_heads·head_dim")?);
            let k = lit(s.mul(kv, head_dim, "num_key_value_heads·head_dim")?);
            let a = format!("{pre}.layers.self_attn");
            p.linear(
                format!("{a}.q_proj"),
                part,
                (d.clone(), q.clone()),
                false,
                &la,
            );
            p.linear(
                format!("{a}.k_proj"),
                part,
                (d.clone(), k.clone()),
                false,
                &la,
            );
            p.linear(format!("{a}.v_proj"), part, (d.clone(), k), false, &la);
            p.linear(format!("{a}.out_proj"), part, (q, d.clone()), false, &la);
            p.norm(format!("{a}.q_norm"), part, &lit(head_dim), false, &la);
            p.norm(format!("{a}.k_norm"), part, &lit(head_dim), false, &la);
        }
        if n_conv > 0 {
            let lc = sym("L_conv", n_conv);
            let c = format!("{pre}.layers.conv");
            p.linear(
                format!("{c}.in_proj"),
                part,
                (d.clone(), mul(lit(3), d.clone())),
                false,
                &lc,
            );
            p.table(
                format!("{c}.spatial_conv.weight"),
                part,
                (d.clone(), lit(s.mul(kernel, kernel, "conv_kernel_size²")?)),
                &lc,
            );
            p.linear(
                format!("{c}.out_proj"),
                part,
                (d.clone(), d.clone()),
                false,
                &lc,
            );
        }
        Ok((hidden, merge))
    })?;
    let (inner, bias) = with_top(raw, f.config_class, |s| {
        Ok((
            s.size("projector_hidden_size", 4096)?,
            s.flag("projector_bias", true)?,
        ))
    })?;
    let one = lit(1);
    let part = "multimodal projector";
    let pre = "model.multi_modal_projector";
    let dv = sym("d_vis", hidden);
    p.norm(format!("{pre}.layer_norm"), part, &dv, true, &one);
    let wide = mul(
        dv,
        lit(raw.mul(merge, merge, "vision_config.spatial_merge_size²")?),
    );
    let inner = sym("d_proj", inner);
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
