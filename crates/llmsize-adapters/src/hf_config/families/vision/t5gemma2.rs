//! `T5Gemma` 2 (`modeling_t5gemma2.py`, `T5Gemma2ForConditionalGeneration`): an encoder-decoder
//! of Gemma 3 layers. The encoder (`encoder.text_config`) is Gemma 3's text stack with a
//! `SigLIP` tower (`encoder.vision_config`) and Gemma 3's projector
//! (`mm_input_projection_weight` `d_vis × d`, `mm_soft_emb_norm`); its token table carries an
//! `eoi_embedding` of `d`. The decoder (`decoder`) has the same layers, but its
//! `T5Gemma2MergedAttention` attends to itself and to the encoder output with ONE set of
//! q/k/v/o weights: the layer's cross-attention holds no tensor and caches the encoder's K and
//! V ([`Attention::CacheOnly`]). The decoder's token table and the LM head (`out_proj`) are
//! the encoder's (`_tied_weights_keys`), unless `tie_word_embeddings` is false.

use llmsize_core::Category;
use llmsize_core::spec::{Attention, Extra, ModelSpec, OutputHead, StackRole};

use super::parts::{lit, sym, with_sub};
use super::{vision, vision_tower, with_parts};
use crate::error::ConfigError;
use crate::hf_config::family::{Read, read_block};
use crate::hf_config::raw::RawConfig;
use crate::hf_config::{HeadChoice, architecture, families};

/// The sub-config under `key` read as `gemma3_text` (its layers are Gemma 3's; the
/// `T5Gemma2TextConfig` and `T5Gemma2DecoderConfig` defaults are `Gemma3TextConfig`'s).
fn gemma3_layers(
    raw: &mut RawConfig<'_>,
    key: &str,
    class: &'static str,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let fam = families::find("gemma3_text")
        .ok_or_else(|| crate::hf_config::unsupported(raw.file, "gemma3_text"))?;
    with_sub(raw, key, class, |s| match &fam.read {
        Read::Block(b) => read_block(s.r.raw, fam, b),
        Read::Code(f) => f(s.r.raw, fam, head),
    })
}

/// `T5Gemma2ForConditionalGeneration`.
pub(crate) fn t5gemma2(
    raw: &mut RawConfig<'_>,
    f: &crate::hf_config::family::Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let mut p = vision();
    let enc = with_sub(raw, "encoder", "T5Gemma2EncoderConfig", |s| {
        let enc = gemma3_layers(s.r.raw, "text_config", "T5Gemma2TextConfig", head)?;
        let t = vision_tower(s.r.raw, "vision_config", "siglip_vision_model", &mut p)?;
        let one = lit(1);
        let part = "multimodal projector";
        let dv = sym("d_vis", t.hidden);
        p.linear(
            "model.encoder.multi_modal_projector.mm_input_projection_weight",
            part,
            (dv.clone(), sym("d", enc.hidden_size)),
            false,
            &one,
        );
        p.norm(
            "model.encoder.multi_modal_projector.mm_soft_emb_norm",
            part,
            &dv,
            false,
            &one,
        );
        Ok(enc)
    })?;
    let mut spec = gemma3_layers(raw, "decoder", "T5Gemma2DecoderConfig", head)?;
    if spec.hidden_size != enc.hidden_size || spec.vocab_size != enc.vocab_size {
        let v = raw
            .value("decoder")
            .cloned()
            .unwrap_or(serde_json::Value::Null);
        return Err(raw.invalid(
            "decoder",
            &v,
            "the encoder's `hidden_size` and `vocab_size` (`validate_architecture`)",
        ));
    }
    let tied = raw.flag_or(
        "tie_word_embeddings",
        true,
        &format!("absent; `{}` default", f.config_class),
    )?;
    for stack in &mut spec.stacks {
        stack.role = StackRole::CrossDecoder;
        let mut layers = llmsize_core::spec::Layers::new();
        for run in stack.layers.runs() {
            if let Some(kind) = stack.layers.kinds().get(run.kind) {
                let mut l = kind.clone();
                if let Attention::Standard(a) = &l.attention {
                    l.cross_attention = Some(Attention::CacheOnly(a.clone()));
                }
                layers.push_run(l, run.count);
            }
        }
        stack.layers = layers;
    }
    let mut stacks = enc.stacks;
    for s in &mut stacks {
        s.role = StackRole::Encoder;
    }
    stacks.append(&mut spec.stacks);
    spec.stacks = stacks;
    spec.extras.extend(enc.extras);
    spec.extras.push(Extra::vector(
        "model.encoder.text_model.embed_tokens.eoi_embedding",
        "token embedding",
        Category::TokenEmbedding,
        sym("d", spec.hidden_size),
    ));
    if !tied {
        // Untied, the decoder keeps its own `embed_tokens` (table and `eoi_embedding`).
        // saturates: never, one more table of a handful.
        spec.extra_token_tables = spec.extra_token_tables.saturating_add(1);
        spec.extras.push(Extra::vector(
            "model.decoder.embed_tokens.eoi_embedding",
            "token embedding",
            Category::TokenEmbedding,
            sym("d", spec.hidden_size),
        ));
    }
    if let OutputHead::Lm { tied: t, .. } = &mut spec.head {
        *t = tied;
    }
    f.model_type.clone_into(&mut spec.model_type);
    spec.architecture = architecture(raw, f.architecture);
    Ok(with_parts(spec, p))
}
