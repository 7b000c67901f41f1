//! BERT-style text decoders of vision-language models: GIT's (`modeling_git.py`), BLIP's
//! `BlipTextLMHeadModel` and `BertLMHeadModel` in a vision encoder-decoder. Post-norm
//! layers of biased attention and a biased MLP, learned positions and an embedding
//! `LayerNorm`; with an encoder, a cross-attention block in every layer (keys and values
//! from the encoder's width; nothing cached in a text-only prefill).

use llmsize_core::Category;
use llmsize_core::expr::Sym;
use llmsize_core::spec::{
    Attention, Extra, Ffn, HeadTransform, Layer, Layers, Linear, ModelSpec, Norm, OutputHead,
    PositionEmbedding, Table,
};

use super::parts::{Sub, sym};
use crate::error::ConfigError;
use crate::hf_config::decoder::{Decoder, mha, mlp};

/// The class defaults and switches of one BERT-style decoder.
pub(crate) struct BertText {
    /// `(vocab_size, hidden_size, num_hidden_layers, num_attention_heads,
    /// intermediate_size, max_position_embeddings)`.
    pub defaults: (u64, u64, u64, u64, u64, u64),
    /// `type_vocab_size` default, when the class has token types.
    pub token_types: Option<u64>,
    /// Cross-attention in every layer, keys and values from this width.
    pub cross: Option<u64>,
    /// The MLM-style head transform (`dense` + `LayerNorm`) before the decoder.
    pub transform: bool,
    /// The head is tied to the token table.
    pub tied: bool,
}

/// The decoder as a spec named `model_type` / `arch`.
pub(crate) fn bert_text(
    s: &mut Sub<'_, '_>,
    model_type: &str,
    arch: String,
    b: &BertText,
) -> Result<ModelSpec, ConfigError> {
    let (v, h, l, nh, ff, pos) = b.defaults;
    let vocab = s.size("vocab_size", v)?;
    let hidden = s.size("hidden_size", h)?;
    let n = s.count("num_hidden_layers", l)?;
    let heads = s.size("num_attention_heads", nh)?;
    let ffn = s.size("intermediate_size", ff)?;
    let positions = s.size("max_position_embeddings", pos)?;
    let types = match b.token_types {
        Some(t) => s.count("type_vocab_size", t)?,
        None => 0,
    };
    s.r.raw.source(Sym::Hidden, "hidden_size");
    s.r.raw.source(Sym::Vocab, "vocab_size");
    let head_dim =
        s.r.raw
            .derived_head_dim(hidden, "hidden_size", heads, "num_attention_heads")?;
    let ln = Norm::layer_norm(hidden);
    let mut extras = Vec::new();
    let mut norms = vec![ln; 2];
    if let Some(enc) = b.cross {
        let part = "cross-attention";
        let a = Category::Attention;
        let d = sym("d", hidden);
        let e = sym("d_enc", enc);
        for (name, input) in [
            ("query", &d),
            ("key", &e),
            ("value", &e),
            ("output.dense", &d),
        ] {
            extras.push(Extra::linear(
                format!("crossattention.{name}.weight"),
                part,
                a,
                input.clone(),
                d.clone(),
            ));
            extras.push(Extra::vector(
                format!("crossattention.{name}.bias"),
                part,
                a,
                d.clone(),
            ));
        }
        norms.push(ln);
    }
    let layer = Layer {
        attention: Attention::Standard(mha(hidden, heads, heads, head_dim, true)),
        cross_attention: None,
        ffn: Ffn::Dense(mlp(hidden, ffn, false, true)),
        norms,
        sliding_window: None,
        extras,
        state: None,
    };
    let mut dec = Decoder::new(
        model_type,
        arch,
        hidden,
        vocab,
        Layers::repeat(layer, n),
        None,
        b.tied,
    );
    dec.position = Some(PositionEmbedding::Learned {
        table: Table {
            rows: positions,
            dim: hidden,
        },
        offset: 0,
    });
    dec.embedding_norm = Some(ln);
    dec.head_bias = true;
    let mut spec = dec.into_spec();
    if types > 0
        && let Some(stack) = spec.stacks.first_mut()
    {
        stack.token_type = Some(Table {
            rows: types,
            dim: hidden,
        });
    }
    if b.transform
        && let OutputHead::Lm { transform, .. } = &mut spec.head
    {
        *transform = Some(HeadTransform {
            dense: Linear {
                input: hidden,
                output: hidden,
                bias: true,
            },
            norm: ln,
        });
    }
    Ok(spec)
}
