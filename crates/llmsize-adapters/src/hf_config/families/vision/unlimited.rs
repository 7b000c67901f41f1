//! Unlimited-OCR (`modeling_unlimited_ocr.py`, `UnlimitedOcrForConditionalGeneration`):
//! DeepSeek-OCR's two towers and a DeepSeek-V2-style MoE text model of its own.
//!
//! - `vision_tower.sam_encoder` (`vision_config.sam_config`): the SAM encoder and neck (see
//!   [`sam_encoder`]), then `proj`: two unbiased 3×3 convolutions `c_out →
//!   downsample_channels[0] → downsample_channels[1]`;
//! - `vision_tower.vision_encoder` (`vision_config.encoder_config`): CLIP without a patch
//!   convolution (it reads SAM's features) nor a final norm: a class embedding, a position per
//!   patch and the class token, `pre_layrnorm` and CLIP layers;
//! - `multi_modal_projector`: biased `downsample_channels[-1] + d_clip → d`, and two vectors
//!   of `d` (`view_separator`, `image_newline`).
//!
//! The text model (`UnlimitedOcrTextModel`): MHA/GQA with `head_dim = hidden / heads` (set by
//! `__post_init__`, whatever the key says), biased by `attention_bias`; per
//! `mlp_layer_types` a `SwiGLU` of `intermediate_size` or the MoE (router `E × d` without
//! bias, `n_routed_experts` experts of `moe_intermediate_size`, shared experts of
//! `moe_intermediate_size · n_shared_experts`). Its `reference_sliding_attention` cache keeps
//! the whole prefill (only later decode tokens slide), so after the prefill every layer holds
//! every token.

use llmsize_core::expr::Sym;
use llmsize_core::spec::{Attention, Ffn, Layer, ModelSpec, Moe, Norm, OutputHead};
use serde_json::Value;

use super::parts::{Parts, Sub, lit, sym, with_sub};
use super::sam::sam_encoder;
use super::vit::{VitLayer, layers};
use super::{vision, with_parts};
use crate::error::ConfigError;
use crate::hf_config::decoder::{Decoder, mha, mlp};
use crate::hf_config::family::Family;
use crate::hf_config::raw::RawConfig;
use crate::hf_config::runs::Runs;
use crate::hf_config::{HeadChoice, architecture};
use llmsize_core::checked::{self, Checked};

const TEXT: &str = "UnlimitedOcrTextConfig";

/// `UnlimitedOcrTextModel` with an LM head.
fn text_model(raw: &mut RawConfig<'_>, model_type: &str) -> Result<ModelSpec, ConfigError> {
    let reason = format!("absent; `{TEXT}` default");
    let size =
        |raw: &mut RawConfig<'_>, key: &str, s: Sym, d: u64| raw.size_or(&[key], s, d, &reason);
    let d = size(raw, "hidden_size", Sym::Hidden, 1280)?;
    let n = size(raw, "num_hidden_layers", Sym::Layers, 12)?;
    let heads = size(raw, "num_attention_heads", Sym::Heads, 10)?;
    let kv = if raw.value("num_key_value_heads").is_some_and(Value::is_null) {
        heads
    } else {
        size(raw, "num_key_value_heads", Sym::KvHeads, 10)?
    };
    let vocab = size(raw, "vocab_size", Sym::Vocab, 129_280)?;
    let ff = size(raw, "intermediate_size", Sym::Ffn, 6848)?;
    let moe_ff = size(raw, "moe_intermediate_size", Sym::Named("d_ff_expert"), 896)?;
    let experts = size(raw, "n_routed_experts", Sym::Named("E"), 64)?;
    let top_k = size(raw, "num_experts_per_tok", Sym::Named("k"), 6)?;
    let shared = if let Some(s) = raw.uint("n_shared_experts")? {
        s
    } else {
        raw.assume("n_shared_experts", 2, &reason);
        2
    };
    let attn_bias = raw.flag_or("attention_bias", false, &reason)?;
    let mlp_bias = raw.flag_or("mlp_bias", false, &reason)?;
    let first_dense = raw.uint("first_k_dense_replace")?.unwrap_or(1);
    let sparse: Runs<bool> = match raw.value("mlp_layer_types") {
        None | Some(Value::Null) => {
            raw.assume(
                "mlp_layer_types",
                format!("{first_dense} dense, then sparse"),
                &reason,
            );
            Runs::from_index(n, first_dense)
        }
        Some(v) => v
            .as_array()
            .filter(|a| a.len() as u64 == n)
            .and_then(|a| {
                a.iter()
                    .map(|t| match t.as_str() {
                        Some("sparse") => Some(true),
                        Some("dense") => Some(false),
                        _ => None,
                    })
                    .collect::<Option<Vec<bool>>>()
            })
            .map(Runs::from_list)
            .ok_or_else(|| raw.invalid("mlp_layer_types", v, &format!("{n} of dense/sparse")))?,
    };
    if let Some(v) = raw.value("layer_types")
        && !v.is_null()
        && !v.as_array().is_some_and(|a| {
            a.iter().all(|t| {
                matches!(
                    t.as_str(),
                    Some("reference_sliding_attention" | "full_attention")
                )
            })
        })
    {
        return Err(raw.invalid(
            "layer_types",
            v,
            "`reference_sliding_attention` or `full_attention` layers",
        ));
    }
    let head_dim = raw.div(d, heads, "hidden_size / num_attention_heads")?;
    if head_dim == 0 || kv == 0 || !heads.is_multiple_of(kv) {
        let v = raw
            .value("num_key_value_heads")
            .cloned()
            .unwrap_or(Value::Null);
        return Err(raw.invalid(
            "num_key_value_heads",
            &v,
            "a divisor of the heads, with hidden_size ≥ heads",
        ));
    }
    raw.source(Sym::HeadDim, "hidden_size / num_attention_heads");
    let attention = Attention::Standard(mha(d, heads, kv, head_dim, attn_bias));
    let moe = Moe {
        num_experts: experts,
        experts_per_token: top_k,
        expert: mlp(d, moe_ff, true, false),
        router_bias: llmsize_core::spec::RouterBias::None,
        router: true,
        shared: if shared > 0 {
            let w = raw.mul(moe_ff, shared, "moe_intermediate_size·n_shared_experts")?;
            Some(mlp(d, w, true, mlp_bias))
        } else {
            None
        },
        shared_gate: false,
    };
    let out = sparse.layers(|&is_sparse| Layer {
        attention: attention.clone(),
        cross_attention: None,
        ffn: if is_sparse {
            Ffn::Moe(moe.clone())
        } else {
            Ffn::Dense(mlp(d, ff, true, mlp_bias))
        },
        norms: vec![Norm::rms_norm(d), Norm::rms_norm(d)],
        sliding_window: None,
        extras: Vec::new(),
        state: None,
    });
    let dec = Decoder::new(
        model_type,
        "UnlimitedOcrForConditionalGeneration".to_owned(),
        d,
        vocab,
        out,
        Some(Norm::rms_norm(d)),
        false,
    );
    Ok(dec.into_spec())
}

/// The CLIP encoder over SAM's features; its width.
fn clip(s: &mut Sub<'_, '_>, p: &mut Parts) -> Result<u64, ConfigError> {
    let h = s.size("hidden_size", 1024)?;
    let ff = s.size("intermediate_size", 4096)?;
    let l = s.count("num_hidden_layers", 24)?;
    let image = s.size("image_size", 224)?;
    let patch = s.size("patch_size", 14)?;
    let side = s.check(checked::div("image_size / patch_size", image, patch))?;
    let positions =
        s.check((Checked::new(side) * side + 1u64).get("(image_size / patch_size)² + 1"))?;
    let one = lit(1);
    let pre = "model.vision_tower.vision_encoder";
    let d = sym("d_vis", h);
    p.vector(
        format!("{pre}.embeddings.class_embedding"),
        "vision embeddings",
        d.clone(),
        &one,
    );
    p.table(
        format!("{pre}.embeddings.position_embedding"),
        "vision embeddings",
        (lit(positions), d.clone()),
        &one,
    );
    p.norm(
        format!("{pre}.pre_layrnorm"),
        "vision norms",
        &d,
        true,
        &one,
    );
    layers(
        p,
        &format!("{pre}.encoder.layers"),
        &sym("L_vis", l),
        &VitLayer::clip(d, sym("d_ff_vis", ff)),
    );
    Ok(h)
}

/// `UnlimitedOcrForConditionalGeneration`.
pub(crate) fn unlimited_ocr(
    raw: &mut RawConfig<'_>,
    f: &Family,
    _head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let mut spec = with_sub(raw, "text_config", TEXT, |s| {
        text_model(s.r.raw, f.model_type)
    })?;
    let tied = raw.flag_or(
        "tie_word_embeddings",
        false,
        &format!("absent; `{}` default", f.config_class),
    )?;
    if let OutputHead::Lm { tied: t, .. } = &mut spec.head {
        *t = tied;
    }
    spec.architecture = architecture(raw, f.architecture);
    let mut p = vision();
    let (sam_out, clip_d) = with_sub(raw, "vision_config", "UnlimitedOcrVisionConfig", |v| {
        let sam_out = with_sub(v.r.raw, "sam_config", "UnlimitedOcrSamVisionConfig", |s| {
            let out = sam_encoder(s, &mut p, "model.vision_tower.sam_encoder", false, 1024)?;
            let ch = s.list("downsample_channels", &[512, 1024])?;
            let (Some(&c0), Some(&c1)) = (ch.first(), ch.last()) else {
                return Err(s.r.raw.invalid(
                    "downsample_channels",
                    &Value::Array(Vec::new()),
                    "two channel counts",
                ));
            };
            let one = lit(1);
            let part = "vision neck";
            p.conv(
                "model.vision_tower.sam_encoder.proj.conv1",
                part,
                (sym("c_out", out), lit(9), lit(c0)),
                false,
                &one,
            );
            p.conv(
                "model.vision_tower.sam_encoder.proj.conv2",
                part,
                (lit(c0), lit(9), lit(c1)),
                false,
                &one,
            );
            Ok(c1)
        })?;
        let clip_d = with_sub(
            v.r.raw,
            "encoder_config",
            "UnlimitedOcrVisionEncoderConfig",
            |s| clip(s, &mut p),
        )?;
        Ok((sam_out, clip_d))
    })?;
    let one = lit(1);
    let part = "multimodal projector";
    let d = sym("d", spec.hidden_size);
    p.linear(
        "model.multi_modal_projector",
        part,
        (
            llmsize_core::expr::Expr::sum(vec![lit(sam_out), sym("d_vis", clip_d)]),
            d.clone(),
        ),
        true,
        &one,
    );
    p.vector("model.view_separator", part, d.clone(), &one);
    p.vector("model.image_newline", part, d, &one);
    Ok(with_parts(spec, p))
}
