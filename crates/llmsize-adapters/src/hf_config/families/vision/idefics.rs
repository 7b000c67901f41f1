//! Idefics 2 and 3 and `SmolVLM` (`modeling_idefics2.py`, `modeling_idefics3.py`,
//! `modeling_smolvlm.py`): a SigLIP-style tower without pooling head (`…VisionTransformer`:
//! biased patch convolution, a position per patch, the encoder, `post_layernorm`), and a
//! connector: Idefics 2's gated MLP into a perceiver resampler, Idefics 3's pixel shuffle and
//! one unbiased projection.

use llmsize_core::expr::Expr;
use llmsize_core::spec::{Ffn, ModelSpec};

use super::parts::{Parts, lit, mul, sym, with_sub, with_top};
use super::vit::{Tower, siglip_body, vit_keys};
use super::{Tie, text, vision, with_parts};
use crate::error::ConfigError;
use crate::hf_config::HeadChoice;
use crate::hf_config::family::Family;
use crate::hf_config::raw::RawConfig;

/// The SigLIP-style tower under `key` with `class`'s defaults
/// `(hidden, intermediate, layers, image, patch)`.
pub(crate) fn tower(
    raw: &mut RawConfig<'_>,
    class: &'static str,
    defaults: (u64, u64, u64, u64, u64),
    p: &mut Parts,
) -> Result<Tower, ConfigError> {
    with_sub(raw, "vision_config", class, |s| {
        let k = vit_keys(s, defaults)?;
        siglip_body(p, "model.vision_model", &k, false, true);
        Ok(k.tower())
    })
}

/// The inner width of the text model's first dense MLP (`text_config.intermediate_size`).
pub(crate) fn text_ffn(raw: &RawConfig<'_>, spec: &ModelSpec) -> Result<u64, ConfigError> {
    spec.layer_kinds()
        .find_map(|l| match &l.ffn {
            Ffn::Dense(m) => Some(m.intermediate),
            _ => None,
        })
        .ok_or_else(|| raw.missing("text_config.intermediate_size", "a dense text MLP"))
}

/// A gated MLP without biases `input → inner → output` (`Idefics2MLP`).
pub(crate) fn gated(
    p: &mut Parts,
    prefix: &str,
    (input, inner, output): (&Expr, &Expr, &Expr),
    copies: &Expr,
) {
    let part = "vision connector";
    for name in ["gate_proj", "up_proj"] {
        p.linear(
            format!("{prefix}.{name}"),
            part,
            (input.clone(), inner.clone()),
            false,
            copies,
        );
    }
    p.linear(
        format!("{prefix}.down_proj"),
        part,
        (inner.clone(), output.clone()),
        false,
        copies,
    );
}

/// `Idefics2ForConditionalGeneration`: the tower, `modality_projection` (gated
/// `d_vis → text intermediate → d`), and the perceiver resampler at the text width:
/// `resampler_n_latents` latents, `resampler_depth` layers of three `RMSNorm`s, grouped
/// attention (`resampler_n_heads`, `num_key_value_heads` of `resampler_head_dim`) and a gated
/// `d → 4d → d` MLP, and a final norm.
pub(crate) fn idefics2(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let spec = text(raw, f, "mistral", head, Tie::Top(false))?;
    let ffn = text_ffn(raw, &spec)?;
    let mut p = vision();
    let t = tower(
        raw,
        "Idefics2VisionConfig",
        (768, 3072, 12, 224, 32),
        &mut p,
    )?;
    let d = sym("d", spec.hidden_size);
    let one = lit(1);
    let pre = "model.connector";
    gated(
        &mut p,
        &format!("{pre}.modality_projection"),
        (&sym("d_vis", t.hidden), &sym("d_ff", ffn), &d),
        &one,
    );
    let (latents, depth, heads, head_dim, kv) =
        with_sub(raw, "perceiver_config", "Idefics2PerceiverConfig", |s| {
            Ok((
                s.size("resampler_n_latents", 64)?,
                s.count("resampler_depth", 3)?,
                s.size("resampler_n_heads", 16)?,
                s.size("resampler_head_dim", 96)?,
                s.size("num_key_value_heads", 4)?,
            ))
        })?;
    let pre = format!("{pre}.perceiver_resampler");
    let part = "perceiver resampler";
    p.table(
        format!("{pre}.latents"),
        part,
        (lit(latents), d.clone()),
        &one,
    );
    let l = sym("L_resampler", depth);
    for n in [
        "input_latents_norm",
        "input_context_norm",
        "post_attention_layernorm",
    ] {
        p.norm(format!("{pre}.layers.{n}"), part, &d, false, &l);
    }
    let q = mul(lit(heads), lit(head_dim));
    let kvw = mul(lit(kv), lit(head_dim));
    p.linear(
        format!("{pre}.layers.self_attn.q_proj"),
        part,
        (d.clone(), q.clone()),
        false,
        &l,
    );
    p.linear(
        format!("{pre}.layers.self_attn.k_proj"),
        part,
        (d.clone(), kvw.clone()),
        false,
        &l,
    );
    p.linear(
        format!("{pre}.layers.self_attn.v_proj"),
        part,
        (d.clone(), kvw),
        false,
        &l,
    );
    p.linear(
        format!("{pre}.layers.self_attn.o_proj"),
        part,
        (q, d.clone()),
        false,
        &l,
    );
    gated(
        &mut p,
        &format!("{pre}.layers.mlp"),
        (&d, &mul(lit(4), d.clone()), &d),
        &l,
    );
    p.norm(format!("{pre}.norm"), part, &d, false, &one);
    Ok(with_parts(spec, p))
}

/// `Idefics3ForConditionalGeneration` and `SmolVLMForConditionalGeneration`: the tower and
/// `connector.modality_projection.proj` `d_vis·scale_factor² → d` without bias.
pub(crate) fn idefics3(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let spec = text(raw, f, "llama", head, Tie::Top(false))?;
    let class = if f.model_type == "smolvlm" {
        "SmolVLMVisionConfig"
    } else {
        "Idefics3VisionConfig"
    };
    let mut p = vision();
    let t = tower(raw, class, (1152, 3072, 12, 224, 32), &mut p)?;
    let scale = with_top(raw, f.config_class, |s| s.size("scale_factor", 2))?;
    p.linear(
        "model.connector.modality_projection.proj",
        "vision connector",
        (
            mul(
                sym("d_vis", t.hidden),
                lit(raw.mul(scale, scale, "scale_factor²")?),
            ),
            sym("d", spec.hidden_size),
        ),
        false,
        &lit(1),
    );
    Ok(with_parts(spec, p))
}
