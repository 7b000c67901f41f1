//! IDEFICS (`modeling_idefics.py`, `vision.py`, `perceiver.py`): a Llama decoder with a gated
//! cross-attention layer (attention to the image, a `SwiGLU` MLP, two norms, two gates)
//! before every `cross_layer_interval`-th layer, decoupled token table and head (extra rows
//! for `additional_vocab_size`), a CLIP-style vision transformer, and optionally a perceiver
//! resampler.

use llmsize_core::Category;
use llmsize_core::expr::{Expr, Sym};
use llmsize_core::spec::{Attention, Extra, Ffn, Layer, ModelSpec, Norm};

use super::parts::{Parts, lit, mul, sym, with_sub};
use super::vision;
use super::vit::{VitLayer, layers};
use crate::error::ConfigError;
use crate::hf_config::decoder::{Decoder, mha, mlp};
use crate::hf_config::family::{Family, Reader};
use crate::hf_config::raw::RawConfig;
use crate::hf_config::runs::Runs;
use crate::hf_config::{HeadChoice, architecture};
use llmsize_core::checked::{self, Checked};

/// The gated cross-attention layer's tensors, attached to the decoder layer it precedes.
fn gated_cross(
    d: &Expr,
    kv_in: &Expr,
    ffn: &Expr,
    head_dim: Option<u64>,
    alpha: &Expr,
) -> Vec<Extra> {
    let a = "gated cross-attention";
    let mut v = vec![
        Extra::linear(
            "cross_attn.q_proj.weight",
            a,
            Category::Attention,
            d.clone(),
            d.clone(),
        ),
        Extra::linear(
            "cross_attn.k_proj.weight",
            a,
            Category::Attention,
            kv_in.clone(),
            d.clone(),
        ),
        Extra::linear(
            "cross_attn.v_proj.weight",
            a,
            Category::Attention,
            kv_in.clone(),
            d.clone(),
        ),
        Extra::linear(
            "cross_attn.o_proj.weight",
            a,
            Category::Attention,
            d.clone(),
            d.clone(),
        ),
    ];
    if let Some(hd) = head_dim {
        v.push(Extra::vector(
            "cross_attn.q_layer_norm.weight",
            a,
            Category::Attention,
            lit(hd),
        ));
        v.push(Extra::vector(
            "cross_attn.k_layer_norm.weight",
            a,
            Category::Attention,
            lit(hd),
        ));
    }
    let m = "gated cross mlp";
    v.push(Extra::linear(
        "mlp.gate_proj.weight",
        m,
        Category::Ffn,
        d.clone(),
        ffn.clone(),
    ));
    v.push(Extra::linear(
        "mlp.up_proj.weight",
        m,
        Category::Ffn,
        d.clone(),
        ffn.clone(),
    ));
    v.push(Extra::linear(
        "mlp.down_proj.weight",
        m,
        Category::Ffn,
        ffn.clone(),
        d.clone(),
    ));
    let n = "gated cross norms";
    v.push(Extra::vector(
        "input_layernorm.weight",
        n,
        Category::Norm,
        d.clone(),
    ));
    v.push(Extra::vector(
        "post_attention_layernorm.weight",
        n,
        Category::Norm,
        d.clone(),
    ));
    let g = "gated cross gates";
    v.push(Extra::vector(
        "alpha_cross_attn",
        g,
        Category::LayerExtras,
        alpha.clone(),
    ));
    v.push(Extra::vector(
        "alpha_dense",
        g,
        Category::LayerExtras,
        alpha.clone(),
    ));
    v
}

/// `IdeficsPerceiverResampler` over the vision width `e`.
fn resampler(
    p: &mut Parts,
    e: u64,
    (depth, heads, head_dim, latents, qk): (u64, u64, u64, u64, bool),
) {
    let one = lit(1);
    let pre = "model.perceiver_resampler";
    let part = "perceiver resampler";
    let es = sym("d_vis", e);
    p.table(
        format!("{pre}.latents"),
        part,
        (lit(latents), es.clone()),
        &one,
    );
    let l = sym("L_resampler", depth);
    let inner = mul(lit(heads), lit(head_dim));
    let b = format!("{pre}.blocks");
    p.norm(format!("{b}.attn.context_layer_norm"), part, &es, true, &l);
    p.norm(format!("{b}.attn.latents_layer_norm"), part, &es, true, &l);
    if qk {
        p.norm(
            format!("{b}.attn.q_layer_norm"),
            part,
            &lit(head_dim),
            true,
            &l,
        );
        p.norm(
            format!("{b}.attn.k_layer_norm"),
            part,
            &lit(head_dim),
            true,
            &l,
        );
    }
    for q in ["q_proj", "k_proj", "v_proj"] {
        p.linear(
            format!("{b}.attn.{q}"),
            part,
            (es.clone(), inner.clone()),
            false,
            &l,
        );
    }
    p.linear(
        format!("{b}.attn.output_proj"),
        part,
        (inner, es.clone()),
        false,
        &l,
    );
    let ff = mul(lit(4), es.clone());
    p.norm(format!("{b}.mlp.ln"), part, &es, true, &l);
    p.linear(
        format!("{b}.mlp.fc"),
        part,
        (es.clone(), ff.clone()),
        false,
        &l,
    );
    p.linear(format!("{b}.mlp.c_proj"), part, (ff, es.clone()), false, &l);
    p.norm(format!("{pre}.layer_norm"), part, &es, true, &one);
}

/// `IdeficsForVisionText2Text`, untied by default.
#[allow(clippy::too_many_lines, reason = "one composite, read top to bottom")]
pub(crate) fn idefics(
    raw: &mut RawConfig<'_>,
    f: &Family,
    _head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let arch = architecture(raw, f.architecture);
    let mut p = vision();
    let e = with_sub(raw, "vision_config", "IdeficsVisionConfig", |s| {
        let e = match s.size_opt("embed_dim")? {
            Some(n) => n,
            None => s.size("hidden_size", 768)?,
        };
        let ffn = s.size("intermediate_size", 5120)?;
        let n = s.count("num_hidden_layers", 32)?;
        let channels = s.size("num_channels", 3)?;
        let image = s.size("image_size", 224)?;
        let patch = s.size("patch_size", 14)?;
        let side = s.check(checked::div("image_size / patch_size", image, patch))?;
        let positions =
            s.check((Checked::new(side) * side + 1u64).get("(image_size / patch_size)² + 1"))?;
        let d = sym("d_vis", e);
        let one = lit(1);
        let pre = "model.vision_model";
        let part = "vision embeddings";
        p.vector(
            format!("{pre}.embeddings.class_embedding"),
            part,
            d.clone(),
            &one,
        );
        p.conv(
            format!("{pre}.embeddings.patch_embedding"),
            part,
            (
                lit(channels),
                lit(s.mul(patch, patch, "patch_size²")?),
                d.clone(),
            ),
            false,
            &one,
        );
        p.table(
            format!("{pre}.embeddings.position_embedding"),
            part,
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
        let layer = VitLayer::clip(d.clone(), sym("d_ff_vis", ffn));
        layers(
            &mut p,
            &format!("{pre}.encoder.layers"),
            &sym("L_vis", n),
            &layer,
        );
        p.norm(
            format!("{pre}.post_layernorm"),
            "vision norms",
            &d,
            true,
            &one,
        );
        Ok(e)
    })?;
    let mut sub = super::parts::Sub {
        r: Reader {
            raw: &mut *raw,
            class: "IdeficsConfig",
        },
    };
    let s = &mut sub;
    let vocab = s.size("vocab_size", 32_000)?;
    let extra_vocab = s.count("additional_vocab_size", 0)?;
    let hidden = s.size("hidden_size", 4096)?;
    let ffn = s.size("intermediate_size", 11_008)?;
    let n = s.count("num_hidden_layers", 32)?;
    let heads = s.size("num_attention_heads", 32)?;
    let tied = s.flag("tie_word_embeddings", false)?;
    let interval = s.size("cross_layer_interval", 1)?;
    let qk = s.flag("qk_layer_norms", false)?;
    let alpha_type = s.string("alpha_type", "float")?;
    let use_resampler = s.flag("use_resampler", false)?;
    s.r.raw.source(Sym::Hidden, "hidden_size");
    s.r.raw.source(Sym::Vocab, "vocab_size");
    let head_dim =
        s.r.raw
            .derived_head_dim(hidden, "hidden_size", heads, "num_attention_heads")?;
    let alpha = match alpha_type.as_str() {
        "float" => lit(1),
        "vector" => sym("d", hidden),
        _ => {
            return Err(s.r.raw.invalid(
                "alpha_type",
                &alpha_type.clone().into(),
                "`float` or `vector`",
            ));
        }
    };
    let cross_layers =
        s.r.raw
            .div(n, interval, "num_hidden_layers / cross_layer_interval")?;
    let rms = Norm::rms_norm(hidden);
    let d = sym("d", hidden);
    let cross = gated_cross(
        &d,
        &sym("d_vis", e),
        &sym("d_ff", ffn),
        qk.then_some(head_dim),
        &alpha,
    );
    // Cross-attention before layers 0, interval, 2·interval, … (`cross_layers` of them;
    // `cross_layers·interval ≤ num_hidden_layers`, so the products are exact).
    let mut crossed = Runs::periodic(
        // saturates: never, cross_layers·interval ≤ num_hidden_layers (above).
        cross_layers.saturating_mul(interval),
        &[(true, 1), (false, interval.saturating_sub(1))],
    );
    crossed.push(
        false,
        // saturates: never, as above.
        n.saturating_sub(cross_layers.saturating_mul(interval)),
    );
    let stack = crossed.layers(|&has_cross| Layer {
        attention: Attention::Standard(mha(hidden, heads, heads, head_dim, false)),
        cross_attention: None,
        ffn: Ffn::Dense(mlp(hidden, ffn, true, false)),
        norms: vec![rms; 2],
        sliding_window: None,
        extras: if has_cross { cross.clone() } else { Vec::new() },
        state: None,
    });
    let mut spec =
        Decoder::new(f.model_type, arch, hidden, vocab, stack, Some(rms), tied).into_spec();
    if extra_vocab > 0 {
        spec.extras.push(Extra::table(
            "model.embed_tokens.additional_embedding.weight",
            "additional embeddings",
            Category::TokenEmbedding,
            lit(extra_vocab),
            d.clone(),
        ));
        if !tied {
            spec.extras.push(Extra::linear(
                "lm_head.additional_fc.weight",
                "additional head",
                Category::LmHead,
                d.clone(),
                lit(extra_vocab),
            ));
        }
    }
    if use_resampler {
        let cfg = with_sub(raw, "perceiver_config", "IdeficsPerceiverConfig", |s| {
            Ok((
                s.count("resampler_depth", 6)?,
                s.size("resampler_n_heads", 16)?,
                s.size("resampler_head_dim", 96)?,
                s.size("resampler_n_latents", 64)?,
                s.flag("qk_layer_norms_perceiver", false)?,
            ))
        })?;
        resampler(&mut p, e, cfg);
    }
    spec.extras.extend(p.out);
    Ok(spec)
}
