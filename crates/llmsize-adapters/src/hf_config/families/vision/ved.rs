//! `VisionEncoderDecoderModel` (`modeling_vision_encoder_decoder.py`): `AutoModel` of
//! `encoder` (a `ViT`, with its pooler) and `AutoModelForCausalLM` of `decoder` (BERT with
//! cross-attention, `BertLMHeadModel`), with `enc_to_dec_proj` when the widths differ. Other
//! encoder or decoder types are not read.

use llmsize_core::spec::{ModelSpec, OutputHead};

use super::bert::{BertText, bert_text};
use super::parts::{lit, sub_type, sym, with_sub};
use super::vision;
use super::vit::{VitLayer, layers, vit_keys};
use crate::error::ConfigError;
use crate::hf_config::family::Family;
use crate::hf_config::raw::RawConfig;
use crate::hf_config::{HeadChoice, architecture, unsupported};

/// `VisionEncoderDecoderModel` of a `ViT` encoder and a BERT decoder.
pub(crate) fn vision_encoder_decoder(
    raw: &mut RawConfig<'_>,
    f: &Family,
    _head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    for (key, want) in [("encoder", "vit"), ("decoder", "bert")] {
        let t = sub_type(raw, key, want)?;
        if t != want {
            return Err(unsupported(&format!("{} ({key})", raw.file), t));
        }
    }
    let mut p = vision();
    let enc = with_sub(raw, "encoder", "ViTConfig", |s| {
        let k = vit_keys(s, (768, 3072, 12, 224, 16))?;
        let qkv_bias = s.flag("qkv_bias", true)?;
        let pooler = match s.size_opt("pooler_output_size")? {
            Some(n) => n,
            None => k.hidden,
        };
        let one = lit(1);
        let pre = "encoder";
        let part = "vision embeddings";
        p.vector(format!("{pre}.embeddings.cls_token"), part, k.d(), &one);
        k.patch_conv(
            &mut p,
            format!("{pre}.embeddings.patch_embeddings.projection"),
            true,
        );
        p.table(
            format!("{pre}.embeddings.position_embeddings"),
            part,
            (lit(k.positions()), k.d()),
            &one,
        );
        let layer = VitLayer {
            qkv_bias,
            ..VitLayer::clip(k.d(), k.ff())
        };
        layers(&mut p, &format!("{pre}.layers"), &k.l(), &layer);
        p.norm(
            format!("{pre}.layernorm"),
            "vision norms",
            &k.d(),
            true,
            &one,
        );
        p.linear(
            format!("{pre}.pooler.dense"),
            "vision pooler",
            (k.d(), sym("pooler_output_size", pooler)),
            true,
            &one,
        );
        Ok(k.hidden)
    })?;
    let (mut spec, cross_width, tied) = with_sub(raw, "decoder", "BertConfig", |s| {
        let tied = s.flag("tie_word_embeddings", true)?;
        let cross = s.flag("add_cross_attention", false)?;
        let cross_width = s.size_opt("cross_attention_hidden_size")?;
        let b = BertText {
            defaults: (30_522, 768, 12, 12, 3072, 512),
            token_types: Some(2),
            cross: None,
            transform: true,
            tied,
        };
        let hidden = s.size("hidden_size", 768)?;
        let b = BertText {
            cross: cross.then_some(hidden),
            ..b
        };
        Ok((
            bert_text(s, "bert", "BertLMHeadModel".to_owned(), &b)?,
            cross_width,
            tied,
        ))
    })?;
    // `BertLMHeadModel` ties by the decoder's key; an explicit top-level false unties the
    // loaded weight (the composite's output embeddings are the decoder's), not its bias.
    let top = raw.flag("tie_word_embeddings")?;
    if let OutputHead::Lm {
        tied: weight,
        biases,
        ..
    } = &mut spec.head
    {
        *weight = tied && top != Some(false);
        // An untied head keeps `decoder.bias` apart from `predictions.bias`.
        *biases = if tied { 1 } else { 2 };
    }
    if enc != spec.hidden_size && cross_width.is_none() {
        p.linear(
            "enc_to_dec_proj",
            "vision projector",
            (sym("d_vis", enc), sym("d", spec.hidden_size)),
            true,
            &lit(1),
        );
    }
    f.model_type.clone_into(&mut spec.model_type);
    spec.architecture = architecture(raw, f.architecture);
    spec.extras.extend(p.out);
    Ok(spec)
}
