//! Kosmos-2 (`modeling_kosmos2.py`): a CLIP vision model, the image-to-text projection
//! (`dense` `d_vis → E`, `latent_query` learned queries, `x_attn` attention over them), and
//! `Kosmos2TextForCausalLM`: BART-like pre-norm blocks with sinusoidal positions, a
//! `LayerNorm` inside self-attention (`inner_attn_ln`) and inside the FFN (`ffn_layernorm`
//! over `ffn_dim`), optional cross-attention.

use llmsize_core::Category;
use llmsize_core::expr::Sym;
use llmsize_core::spec::{Attention, Extra, Ffn, Layer, Layers, ModelSpec, Norm, OutputHead};

use super::parts::{lit, sym, with_sub};
use super::vision;
use super::vit::clip_with;
use crate::error::ConfigError;
use crate::hf_config::decoder::{Decoder, mha, mlp};
use crate::hf_config::family::Family;
use crate::hf_config::raw::RawConfig;
use crate::hf_config::{HeadChoice, architecture};

/// `Kosmos2ForConditionalGeneration`, tied when either `tie_word_embeddings` says so
/// (both default true); an explicit false unties the loaded weight.
pub(crate) fn kosmos2(
    raw: &mut RawConfig<'_>,
    f: &Family,
    _head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let arch = architecture(raw, f.architecture);
    let text_explicit = super::parts::object(raw, "text_config")?
        .get("tie_word_embeddings")
        .and_then(serde_json::Value::as_bool);
    let (mut spec, embed) = with_sub(raw, "text_config", "Kosmos2TextConfig", |s| {
        let vocab = s.size("vocab_size", 65_037)?;
        let e = s.size("embed_dim", 2048)?;
        let n = s.count("layers", 24)?;
        let ffn = s.size("ffn_dim", 8192)?;
        let heads = s.size("attention_heads", 32)?;
        let cross = s.flag("add_cross_attention", false)?;
        s.r.raw.source(Sym::Hidden, "embed_dim");
        s.r.raw.source(Sym::Vocab, "vocab_size");
        let head_dim =
            s.r.raw
                .derived_head_dim(e, "embed_dim", heads, "attention_heads")?;
        let ln = Norm::layer_norm(e);
        let mut norms = vec![ln, ln, Norm::layer_norm(ffn), ln];
        let mut extras = Vec::new();
        if cross {
            let d = sym("E", e);
            for name in ["q_proj", "k_proj", "v_proj", "out_proj"] {
                let (w, b) = (
                    format!("encoder_attn.{name}.weight"),
                    format!("encoder_attn.{name}.bias"),
                );
                extras.push(Extra::linear(
                    w,
                    "cross-attention",
                    Category::Attention,
                    d.clone(),
                    d.clone(),
                ));
                extras.push(Extra::vector(
                    b,
                    "cross-attention",
                    Category::Attention,
                    d.clone(),
                ));
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
            f.model_type,
            arch.clone(),
            e,
            vocab,
            Layers::repeat(layer, n),
            Some(ln),
            true,
        )
        .into_spec();
        Ok((spec, e))
    })?;
    let top = raw.flag("tie_word_embeddings")?;
    if top.is_none() {
        raw.assume(
            "tie_word_embeddings",
            true,
            "absent; `Kosmos2Config` default",
        );
    }
    let text_tie = text_explicit.unwrap_or(true);
    let explicit_false = top.or(text_explicit) == Some(false);
    if let OutputHead::Lm { tied, .. } = &mut spec.head {
        *tied = (top.unwrap_or(true) || text_tie) && !explicit_false;
    }
    let mut p = vision();
    let t = clip_with(
        raw,
        "vision_config",
        "Kosmos2VisionConfig",
        (1024, 4096, 24, 224, 14),
        &mut p,
        "vision_model.model",
    )?;
    let latents = {
        let reason = "absent; `Kosmos2Config` default";
        raw.size_or(
            &["latent_query_num"],
            Sym::Named("latent_query_num"),
            64,
            reason,
        )?
    };
    let one = lit(1);
    let d = sym("E", embed);
    let pre = "image_to_text_projection";
    let part = "image-to-text projection";
    p.linear(
        format!("{pre}.dense"),
        part,
        (sym("d_vis", t.hidden), d.clone()),
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
    spec.extras.extend(p.out);
    Ok(spec)
}
