//! BLIP-2, `InstructBLIP` and `InstructBLIP`-Video (`modeling_blip_2.py`,
//! `modeling_instructblip*.py`): the EVA-style vision model (class token, biased patch
//! convolution, learned positions, layers of a fused `qkv`), the
//! Q-Former (BERT-like layers with cross-attention to the image every
//! `cross_attention_frequency` layers), the query tokens, `language_projection`, and the
//! language model `AutoModelForCausalLM`/`…Seq2SeqLM` of `text_config`, which ties its own
//! head.

use llmsize_core::expr::Expr;
use llmsize_core::spec::ModelSpec;

use super::parts::{Parts, Sub, lit, mul, sym, with_sub, with_top};
use super::vit::{mlp, vit_keys};
use super::{Tie, text, vision, with_parts};
use crate::error::ConfigError;
use crate::hf_config::HeadChoice;
use crate::hf_config::family::Family;
use crate::hf_config::raw::RawConfig;

/// `Blip2VisionModel`: returns `d_vis`.
pub(crate) fn blip2_vision(
    s: &mut Sub<'_, '_>,
    p: &mut Parts,
    pre: &str,
) -> Result<u64, ConfigError> {
    let k = vit_keys(s, (1408, 6144, 39, 224, 14))?;
    let qkv_bias = s.flag("qkv_bias", true)?;
    let one = lit(1);
    let d = k.d();
    let part = "vision embeddings";
    p.vector(
        format!("{pre}.embeddings.class_embedding"),
        part,
        d.clone(),
        &one,
    );
    // `in_channels=3` is fixed by the module, whatever `num_channels` says.
    p.conv(
        format!("{pre}.embeddings.patch_embedding"),
        part,
        (lit(3), lit(k.kernel()), d.clone()),
        true,
        &one,
    );
    p.table(
        format!("{pre}.embeddings.position_embedding"),
        part,
        (lit(k.positions()), d.clone()),
        &one,
    );
    let l = k.l();
    let part = "vision encoder layers";
    let lp = format!("{pre}.encoder.layers");
    p.linear(
        format!("{lp}.self_attn.qkv"),
        part,
        (d.clone(), mul(lit(3), d.clone())),
        // `qkv.bias` is one parameter of `3·d_vis` (q's, zeros for k, v's) with `qkv_bias`.
        qkv_bias,
        &l,
    );
    p.linear(
        format!("{lp}.self_attn.projection"),
        part,
        (d.clone(), d.clone()),
        true,
        &l,
    );
    p.norm(format!("{lp}.layer_norm1"), part, &d, true, &l);
    p.norm(format!("{lp}.layer_norm2"), part, &d, true, &l);
    mlp(p, &format!("{lp}.mlp"), (&d, &k.ff()), false, true, &l);
    p.norm(
        format!("{pre}.post_layernorm"),
        "vision norms",
        &d,
        true,
        &one,
    );
    Ok(k.hidden)
}

/// The Q-Former's attention block (`query`, `key`, `value`, `output.dense` and its
/// `LayerNorm`), keys and values from `kv_in`.
fn qformer_attention(p: &mut Parts, pre: &str, h: &Expr, kv_in: &Expr, copies: &Expr) {
    let part = "q-former";
    p.linear(
        format!("{pre}.attention.query"),
        part,
        (h.clone(), h.clone()),
        true,
        copies,
    );
    p.linear(
        format!("{pre}.attention.key"),
        part,
        (kv_in.clone(), h.clone()),
        true,
        copies,
    );
    p.linear(
        format!("{pre}.attention.value"),
        part,
        (kv_in.clone(), h.clone()),
        true,
        copies,
    );
    p.linear(
        format!("{pre}.output.dense"),
        part,
        (h.clone(), h.clone()),
        true,
        copies,
    );
    p.norm(format!("{pre}.output.LayerNorm"), part, h, true, copies);
}

/// The Q-Former (`Blip2QFormerModel`, or `InstructBlipQFormerModel` with its text
/// embeddings and a text MLP in every layer): returns its width.
fn qformer(
    s: &mut Sub<'_, '_>,
    p: &mut Parts,
    d_vis: u64,
    instruct: bool,
) -> Result<u64, ConfigError> {
    let h = s.size("hidden_size", 768)?;
    let layers = s.count("num_hidden_layers", 12)?;
    let ffn = s.size("intermediate_size", 3072)?;
    let freq = s.size("cross_attention_frequency", 2)?;
    let text_mlp = instruct || s.flag("use_qformer_text_input", false)?;
    let pre = "qformer";
    let part = "q-former";
    let one = lit(1);
    let hs = sym("d_q", h);
    if instruct {
        let vocab = s.size("vocab_size", 30522)?;
        let positions = s.size("max_position_embeddings", 512)?;
        p.table(
            format!("{pre}.embeddings.word_embeddings"),
            part,
            (lit(vocab), hs.clone()),
            &one,
        );
        p.table(
            format!("{pre}.embeddings.position_embeddings"),
            part,
            (lit(positions), hs.clone()),
            &one,
        );
        p.norm(format!("{pre}.embeddings.layernorm"), part, &hs, true, &one);
    } else {
        p.norm(format!("{pre}.layernorm"), part, &hs, true, &one);
    }
    let l = sym("L_q", layers);
    let lp = format!("{pre}.encoder.layer");
    qformer_attention(p, &format!("{lp}.attention"), &hs, &hs, &l);
    // Layer `i` cross-attends when `i % cross_attention_frequency == 0`.
    let cross = layers.div_ceil(freq);
    if cross > 0 {
        let c = sym("L_cross", cross);
        qformer_attention(
            p,
            &format!("{lp}.crossattention"),
            &hs,
            &sym("d_vis", d_vis),
            &c,
        );
    }
    let ff = sym("d_ff_q", ffn);
    let mlps: &[&str] = if text_mlp {
        &["intermediate_query", "intermediate"]
    } else {
        &["intermediate_query"]
    };
    for m in mlps {
        let out = m.replace("intermediate", "output");
        p.linear(
            format!("{lp}.{m}.dense"),
            part,
            (hs.clone(), ff.clone()),
            true,
            &l,
        );
        p.linear(
            format!("{lp}.{out}.dense"),
            part,
            (ff.clone(), hs.clone()),
            true,
            &l,
        );
        p.norm(format!("{lp}.{out}.LayerNorm"), part, &hs, true, &l);
    }
    Ok(h)
}

/// `Blip2ForConditionalGeneration`, `InstructBlipForConditionalGeneration` and
/// `InstructBlipVideoForConditionalGeneration`.
pub(crate) fn blip2(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let spec = text(raw, f, "opt", head, Tie::Text)?;
    let instruct = f.model_type != "blip-2";
    let (vis_class, q_class) = match f.model_type {
        "blip-2" => ("Blip2VisionConfig", "Blip2QFormerConfig"),
        "instructblip" => ("InstructBlipVisionConfig", "InstructBlipQFormerConfig"),
        _ => (
            "InstructBlipVideoVisionConfig",
            "InstructBlipVideoQFormerConfig",
        ),
    };
    let mut p = vision();
    let d_vis = with_sub(raw, "vision_config", vis_class, |s| {
        blip2_vision(s, &mut p, "vision_model")
    })?;
    let h = with_sub(raw, "qformer_config", q_class, |s| {
        qformer(s, &mut p, d_vis, instruct)
    })?;
    let queries = with_top(raw, f.config_class, |s| s.size("num_query_tokens", 32))?;
    let one = lit(1);
    let hs = sym("d_q", h);
    p.table("query_tokens", "q-former", (lit(queries), hs.clone()), &one);
    p.linear(
        "language_projection",
        "q-former",
        (hs, sym("d", spec.hidden_size)),
        true,
        &one,
    );
    Ok(with_parts(spec, p))
}

/// `BlipForConditionalGeneration`: `BlipVisionModel` (class token, biased patch convolution
/// over 3 channels, positions, layers of a fused biased `qkv` and `projection`,
/// `post_layernorm`) and `BlipTextLMHeadModel`, BERT with cross-attention to the image and an
/// MLM-style head. Tying (of the decoder's weight and bias) follows either
/// `tie_word_embeddings` (both default true).
pub(crate) fn blip(
    raw: &mut RawConfig<'_>,
    f: &Family,
    _head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let arch = crate::hf_config::architecture(raw, f.architecture);
    let mut p = vision();
    let d_vis = with_sub(raw, "vision_config", "BlipVisionConfig", |s| {
        let k = vit_keys(s, (768, 3072, 12, 384, 16))?;
        let one = lit(1);
        let pre = "vision_model";
        let part = "vision embeddings";
        let d = k.d();
        p.vector(
            format!("{pre}.embeddings.class_embedding"),
            part,
            d.clone(),
            &one,
        );
        p.conv(
            format!("{pre}.embeddings.patch_embedding"),
            part,
            (lit(3), lit(k.kernel()), d.clone()),
            true,
            &one,
        );
        p.table(
            format!("{pre}.embeddings.position_embedding"),
            part,
            (lit(k.positions()), d.clone()),
            &one,
        );
        let layer = super::vit::VitLayer {
            fused: true,
            ..super::vit::VitLayer::clip(d.clone(), k.ff())
        };
        super::vit::layers(&mut p, &format!("{pre}.encoder.layers"), &k.l(), &layer);
        p.norm(
            format!("{pre}.post_layernorm"),
            "vision norms",
            &d,
            true,
            &one,
        );
        Ok(k.hidden)
    })?;
    let top = raw.flag("tie_word_embeddings")?;
    let (mut spec, text_tie) = with_sub(raw, "text_config", "BlipTextConfig", |s| {
        let text_tie = s.flag("tie_word_embeddings", true)?;
        let b = super::bert::BertText {
            defaults: (30_524, 768, 12, 8, 3072, 512),
            token_types: None,
            cross: Some(d_vis),
            transform: true,
            tied: true,
        };
        // `is_decoder` (default true) gives every layer its cross-attention.
        let decoder = s.flag("is_decoder", true)?;
        let b = super::bert::BertText {
            cross: decoder.then_some(d_vis),
            ..b
        };
        Ok((super::bert::bert_text(s, f.model_type, arch, &b)?, text_tie))
    })?;
    let top_tie = top.unwrap_or(true);
    if top.is_none() {
        raw.assume("tie_word_embeddings", true, "absent; `BlipConfig` default");
    }
    // Either class ties the pair: `BlipForConditionalGeneration` by the top-level key,
    // `BlipTextLMHeadModel` (its `text_decoder`) by `text_config`'s. No explicit false unties
    // it again: the composite's `get_output_embeddings` is `None`, so loading keeps the tie.
    let tied_by_class = top_tie || text_tie;
    if let llmsize_core::spec::OutputHead::Lm { tied, biases, .. } = &mut spec.head {
        *tied = tied_by_class;
        *biases = if tied_by_class { 1 } else { 2 };
    }
    spec.extras.extend(p.out);
    Ok(spec)
}
