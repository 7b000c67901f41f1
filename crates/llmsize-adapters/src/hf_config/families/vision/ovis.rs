//! Ovis 2 (`modeling_ovis2.py`): an `RMSNorm` SigLIP-like tower (patch convolution, positions,
//! an embedding norm, unbiased-by-default attention and a gated MLP, a final norm), a visual
//! "tokenizer" head (`head_linear` `d_vis·s² → V_vis − n_ind` and its `LayerNorm`), and the
//! `visual_embeddings_table` `V_vis × hidden_size` of the top-level width.

use llmsize_core::Category;
use llmsize_core::spec::{Extra, ModelSpec, OutputHead};

use super::parts::{lit, mul, sym, with_sub, with_top};
use super::vit::{VitLayer, layers, vit_keys};
use super::{Tie, text, vision, with_parts};
use crate::error::ConfigError;
use crate::hf_config::HeadChoice;
use crate::hf_config::family::Family;
use crate::hf_config::raw::RawConfig;

/// `Ovis2ForConditionalGeneration`. Its `lm_head` is `hidden_size → vocab_size` of the
/// top-level keys (1536 and 151643 by default), tied to the text model's table by
/// `tie_word_embeddings` (default true).
pub(crate) fn ovis2(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let mut spec = text(raw, f, "qwen2", head, Tie::Top(true))?;
    let (top_hidden, top_vocab) = with_top(raw, f.config_class, |s| {
        Ok((s.size("hidden_size", 1536)?, s.size("vocab_size", 151_643)?))
    })?;
    // An untied head has the top-level shape, which need not be the text model's — when the
    // class never tied it (`tie_word_embeddings: false` at the top). Tied by the class (the
    // top-level key absent: default true) and untied by `text_config`'s false, the head is the
    // tied table's own copy: its shape, the text model's (as the loaded weight is).
    let top_untied = raw.flag("tie_word_embeddings")? == Some(false);
    if let OutputHead::Lm { tied, .. } = &mut spec.head
        && !*tied
        && top_untied
    {
        *tied = true;
        spec.token_embedding
            .get_or_insert(llmsize_core::spec::Table {
                rows: spec.vocab_size,
                dim: spec.hidden_size,
            });
        spec.extras.push(Extra::linear(
            "lm_head.weight",
            "lm head",
            Category::LmHead,
            sym("hidden_size", top_hidden),
            sym("vocab_size", top_vocab),
        ));
    }
    let mut p = vision();
    with_sub(raw, "vision_config", "Ovis2VisionConfig", |s| {
        let k = vit_keys(s, (1024, 2816, 24, 224, 14))?;
        let qkv_bias = s.flag("qkv_bias", false)?;
        let mlp_bias = s.flag("mlp_bias", false)?;
        let vocab = s.size("vocab_size", 16_384)?;
        let stride = s.size("hidden_stride", 1)?;
        let indicators = s.count("num_visual_indicator_tokens", 5)?;
        let one = lit(1);
        let pre = "model.vision_tower.transformer";
        let part = "vision embeddings";
        k.patch_conv(&mut p, format!("{pre}.embeddings.patch_embedding"), true);
        p.table(
            format!("{pre}.embeddings.position_embedding"),
            part,
            (lit(k.patches()), k.d()),
            &one,
        );
        p.norm(
            format!("{pre}.embeddings.rms_norm"),
            part,
            &k.d(),
            false,
            &one,
        );
        let layer = VitLayer {
            qkv_bias,
            o_bias: qkv_bias,
            mlp_bias,
            gated: true,
            norm_bias: false,
            ..VitLayer::clip(k.d(), k.ff())
        };
        layers(&mut p, &format!("{pre}.encoder.layers"), &k.l(), &layer);
        p.norm(
            format!("{pre}.rms_norm"),
            "vision norms",
            &k.d(),
            false,
            &one,
        );
        let classes = vocab
            .checked_sub(indicators)
            .filter(|n| *n > 0)
            .ok_or_else(|| {
                s.r.raw.invalid(
                    "vocab_size",
                    &vocab.into(),
                    "more than `num_visual_indicator_tokens`",
                )
            })?;
        let part = "visual tokenizer head";
        p.linear(
            "model.vision_tower.head_linear",
            part,
            (
                mul(k.d(), lit(s.mul(stride, stride, "hidden_stride²")?)),
                lit(classes),
            ),
            false,
            &one,
        );
        p.norm(
            "model.vision_tower.head_norm",
            part,
            &lit(classes),
            true,
            &one,
        );
        p.table(
            "model.visual_embeddings_table",
            "visual embeddings",
            (sym("V_vis", vocab), sym("hidden_size", top_hidden)),
            &one,
        );
        Ok(())
    })?;
    Ok(with_parts(spec, p))
}
