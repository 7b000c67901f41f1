//! Kosmos-2 and Kosmos-2.5 (`modeling_kosmos2.py`, `modeling_kosmos2_5.py`): a vision model
//! (Kosmos-2: CLIP; Kosmos-2.5: Pix2Struct-style), the image-to-text projection (`dense`
//! `d_vis → E`, `latent_query` learned queries, `x_attn` attention over them), and the text
//! model: BART-like pre-norm blocks with sinusoidal positions, a `LayerNorm` inside the FFN
//! (`ffn_layernorm` over `ffn_dim`), in Kosmos-2 one inside self-attention (`inner_attn_ln`),
//! optional cross-attention; Kosmos-2.5 adds a segment table of 2 rows.

use llmsize_core::Category;
use llmsize_core::expr::Sym;
use llmsize_core::spec::{Attention, Extra, Ffn, Layer, Layers, ModelSpec, Norm, OutputHead};

use super::parts::{Parts, Sub, lit, sym, with_sub};
use super::pix2struct::{T5Vision, t5_vision};
use super::vision;
use super::vit::clip_with;
use crate::error::ConfigError;
use crate::hf_config::decoder::{Decoder, mha, mlp};
use crate::hf_config::family::Family;
use crate::hf_config::raw::RawConfig;
use crate::hf_config::{HeadChoice, architecture};

/// The text model of the class defaults `(vocab_size, embed_dim, layers, ffn_dim,
/// attention_heads)`; `inner_ln`: a `LayerNorm` inside self-attention (Kosmos-2).
fn text_model(
    s: &mut Sub<'_, '_>,
    model_type: &str,
    arch: String,
    (v, e, l, ff, nh): (u64, u64, u64, u64, u64),
    inner_ln: bool,
) -> Result<(ModelSpec, u64), ConfigError> {
    let vocab = s.size("vocab_size", v)?;
    let e = s.size("embed_dim", e)?;
    let n = s.count("layers", l)?;
    let ffn = s.size("ffn_dim", ff)?;
    let heads = s.size("attention_heads", nh)?;
    let cross = s.flag("add_cross_attention", false)?;
    s.r.raw.source(Sym::Hidden, "embed_dim");
    s.r.raw.source(Sym::Vocab, "vocab_size");
    let head_dim =
        s.r.raw
            .derived_head_dim(e, "embed_dim", heads, "attention_heads")?;
    let ln = Norm::layer_norm(e);
    let mut norms = if inner_ln {
        vec![ln, ln, Norm::layer_norm(ffn), ln]
    } else {
        vec![ln, Norm::layer_norm(ffn), ln]
    };
    let mut extras = Vec::new();
    if cross {
        let d = sym("E", e);
        let a = Category::Attention;
        for name in ["q_proj", "k_proj", "v_proj", "out_proj"] {
            let w = format!("encoder_attn.{name}.weight");
            let b = format!("encoder_attn.{name}.bias");
            extras.push(Extra::linear(w, "cross-attention", a, d.clone(), d.clone()));
            extras.push(Extra::vector(b, "cross-attention", a, d.clone()));
        }
        norms.push(ln);
    }
    let layer = Layer {
        attention: Attention::Standard(mha(e, heads, heads, head_dim, true)),
        cross_attention: None,
        ffn: Ffn::Dense(mlp(e, ffn, false, true)),
        norms,
        sliding_window: None,
        extras,
        state: None,
    };
    let spec = Decoder::new(
        model_type,
        arch,
        e,
        vocab,
        Layers::repeat(layer, n),
        Some(ln),
        true,
    )
    .into_spec();
    Ok((spec, e))
}

/// The head's tying: the classes tie when either `tie_word_embeddings` says so (both default
/// true) — or, with `text_alone` (Kosmos-2.5, whose pair is tied only by
/// `Kosmos2_5TextForCausalLM` under `text_config`), when the text config's says so; an explicit
/// false at the top (or in `text_config` when the top does not say) unties the loaded weight.
fn tie(
    raw: &mut RawConfig<'_>,
    class: &str,
    spec: &mut ModelSpec,
    text_alone: bool,
) -> Result<(), ConfigError> {
    let text_explicit = super::parts::object(raw, "text_config")?
        .get("tie_word_embeddings")
        .and_then(serde_json::Value::as_bool);
    let top = raw.flag("tie_word_embeddings")?;
    if top.is_none() {
        raw.assume(
            "tie_word_embeddings",
            true,
            &format!("absent; `{class}` default"),
        );
    }
    let explicit_false = top.or(text_explicit) == Some(false);
    if let OutputHead::Lm { tied, .. } = &mut spec.head {
        let by_class = if text_alone {
            text_explicit.unwrap_or(true)
        } else {
            top.unwrap_or(true) || text_explicit.unwrap_or(true)
        };
        *tied = by_class && !explicit_false;
    }
    Ok(())
}

/// The image-to-text projection: `dense` `d_vis → E`, `latent_query_num` queries
/// (`default`), `x_attn`.
fn projection(
    raw: &mut RawConfig<'_>,
    class: &str,
    p: &mut Parts,
    (d_vis, embed, default): (u64, u64, u64),
) -> Result<(), ConfigError> {
    let latents = {
        let reason = format!("absent; `{class}` default");
        raw.size_or(
            &["latent_query_num"],
            Sym::Named("latent_query_num"),
            default,
            &reason,
        )?
    };
    let one = lit(1);
    let d = sym("E", embed);
    let pre = "image_to_text_projection";
    let part = "image-to-text projection";
    p.linear(
        format!("{pre}.dense"),
        part,
        (sym("d_vis", d_vis), d.clone()),
        true,
        &one,
    );
    p.table(
        format!("{pre}.latent_query"),
        part,
        (lit(latents), d.clone()),
        &one,
    );
    for name in ["q_proj", "k_proj", "v_proj", "out_proj"] {
        p.linear(
            format!("{pre}.x_attn.{name}"),
            part,
            (d.clone(), d.clone()),
            true,
            &one,
        );
    }
    Ok(())
}

/// `Kosmos2ForConditionalGeneration`.
pub(crate) fn kosmos2(
    raw: &mut RawConfig<'_>,
    f: &Family,
    _head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let arch = architecture(raw, f.architecture);
    let (mut spec, embed) = with_sub(raw, "text_config", "Kosmos2TextConfig", |s| {
        text_model(s, f.model_type, arch, (65_037, 2048, 24, 8192, 32), true)
    })?;
    tie(raw, f.config_class, &mut spec, false)?;
    let mut p = vision();
    let t = clip_with(
        raw,
        "vision_config",
        "Kosmos2VisionConfig",
        (1024, 4096, 24, 224, 14),
        &mut p,
        "vision_model.model",
    )?;
    projection(raw, f.config_class, &mut p, (t.hidden, embed, 64))?;
    spec.extras.extend(p.out);
    Ok(spec)
}

/// `Kosmos2_5ForConditionalGeneration`.
pub(crate) fn kosmos2_5(
    raw: &mut RawConfig<'_>,
    f: &Family,
    _head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let arch = architecture(raw, f.architecture);
    let (mut spec, embed) = with_sub(raw, "text_config", "Kosmos2_5TextConfig", |s| {
        text_model(s, f.model_type, arch, (108_481, 1536, 24, 6144, 16), false)
    })?;
    spec.extras.push(Extra::table(
        "text_model.model.segment_emb.weight",
        "segment embeddings",
        Category::TokenEmbedding,
        lit(2),
        sym("E", embed),
    ));
    tie(raw, f.config_class, &mut spec, true)?;
    let mut p = vision();
    let d_vis = with_sub(raw, "vision_config", "Kosmos2_5VisionConfig", |s| {
        t5_vision(
            s,
            &mut p,
            &T5Vision {
                ffn: ("intermediate_size", 3968),
                head_dim: ("head_dim", 64),
                positions: ("max_num_patches", 4096),
                defaults: (1536, 768, 18, 24),
            },
        )
    })?;
    projection(raw, f.config_class, &mut p, (d_vis, embed, 2048))?;
    spec.extras.extend(p.out);
    Ok(spec)
}
