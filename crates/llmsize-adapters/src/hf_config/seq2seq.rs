//! Encoder-decoders: T5 (v1.0 and v1.1/Flan) and BART.

use llmsize_core::expr::Sym;
use std::collections::BTreeMap;

use llmsize_core::spec::{
    Attention, Ffn, Layer, Layers, ModelSpec, Norm, OutputHead, PositionEmbedding, Stack,
    StackRole, Table,
};

use super::decoder::{mha, mlp};
use super::raw::RawConfig;
use super::{HeadChoice, architecture, is_bare};
use crate::error::ConfigError;

/// Whether the class (or the user) wants the LM head.
fn lm_head(arch: &str, head: HeadChoice) -> bool {
    match head {
        HeadChoice::Base => false,
        HeadChoice::Lm => true,
        HeadChoice::Config => !is_bare(arch),
    }
}

fn base_class(arch: &str, lm: bool, lm_class: &str, base: &str) -> String {
    match (
        lm,
        arch.ends_with("Model") && !arch.ends_with("LMHeadModel"),
    ) {
        (true, false) | (false, true) => arch.to_owned(),
        (true, true) => lm_class.to_owned(),
        (false, false) => base.to_owned(),
    }
}

/// An encoder-decoder's spec: a shared token table (`extra_token_tables` more once untied),
/// the two stacks and the head.
#[expect(
    clippy::too_many_arguments,
    reason = "one call per family, each argument named"
)]
pub(crate) fn seq2seq_spec(
    model_type: &str,
    architecture: String,
    hidden: u64,
    vocab: u64,
    extra_token_tables: u64,
    encoder: Stack,
    decoder: Stack,
    head: OutputHead,
) -> ModelSpec {
    ModelSpec {
        name: String::new(),
        model_type: model_type.to_owned(),
        architecture,
        hidden_size: hidden,
        vocab_size: vocab,
        context_length: None,
        token_embedding: Some(Table {
            rows: vocab,
            dim: hidden,
        }),
        extra_token_tables,
        embedding_projections: Vec::new(),
        stacks: vec![encoder, decoder],
        head,
        pooler: None,
        assumptions: Vec::new(),
        warnings: Vec::new(),
        symbol_sources: BTreeMap::new(),
        extras: Vec::new(),
        estimate: None,
        image_tokens: None,
        quantization: None,
        training: None,
        facts: llmsize_core::facts::TypeFacts::NONE,
    }
}

/// The LM head when asked for (tied or not, no biases), else none.
pub(crate) fn lm_or_none(lm: bool, tied: bool) -> OutputHead {
    if lm {
        OutputHead::Lm {
            tied,
            biases: 0,
            transform: None,
        }
    } else {
        OutputHead::None
    }
}

/// One stack's sizes in a BART-shaped encoder-decoder.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BartSide {
    /// Attention heads.
    pub heads: u64,
    /// Each head's width.
    pub head_dim: u64,
    /// The MLP's inner width.
    pub ffn: u64,
    /// Layers.
    pub layers: usize,
}

/// What a BART-shaped model puts around both stacks' layers.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BartEnds {
    /// The position table (the same in both stacks).
    pub position: Option<PositionEmbedding>,
    /// A `LayerNorm` on the embeddings (`layernorm_embedding`).
    pub embedding_norm: bool,
    /// A `LayerNorm` after the last layer (`layer_norm`).
    pub final_norm: bool,
}

/// The encoder and decoder stacks of a BART-shaped model (`modeling_bart.py`): biased
/// attention and MLP, `LayerNorm`s; encoder layers with self-attention and the MLP (two
/// norms), decoder layers with cross-attention too (three).
pub(crate) fn bart_stacks(hidden: u64, [enc, dec]: [BartSide; 2], ends: BartEnds) -> [Stack; 2] {
    let norm = Norm::layer_norm(hidden);
    let enc_layer = Layer {
        attention: Attention::Standard(mha(hidden, enc.heads, enc.heads, enc.head_dim, true)),
        cross_attention: None,
        ffn: Ffn::Dense(mlp(hidden, enc.ffn, false, true)),
        norms: vec![norm; 2],
        sliding_window: None,
        extras: Vec::new(),
        state: None,
    };
    let dec_attention = Attention::Standard(mha(hidden, dec.heads, dec.heads, dec.head_dim, true));
    let dec_layer = Layer {
        attention: dec_attention.clone(),
        cross_attention: Some(dec_attention),
        ffn: Ffn::Dense(mlp(hidden, dec.ffn, false, true)),
        norms: vec![norm; 3],
        sliding_window: None,
        extras: Vec::new(),
        state: None,
    };
    let stack = |role, layer: Layer, n: usize| Stack {
        role,
        position: ends.position,
        token_type: None,
        embedding_norm: ends.embedding_norm.then_some(norm),
        layers: Layers::repeat(layer, n as u64),
        final_norm: ends.final_norm.then_some(norm),
    };
    [
        stack(StackRole::Encoder, enc_layer, enc.layers),
        stack(StackRole::CrossDecoder, dec_layer, dec.layers),
    ]
}

/// T5 (`modeling_t5.py`): shared table; q/k/v/o without biases over `num_heads·d_kv`; the
/// relative-position bias (`buckets × heads`) in the first block of each stack; RMS-style
/// `T5LayerNorm` (weight only): 2 per encoder block, 3 per decoder block, one final per
/// stack; FFN `wi`/`wo`, or `wi_0`/`wi_1`/`wo` for `gated-*`. The output head follows the
/// raw config: `tie_word_embeddings: false` (v1.1, Flan) means a separate `lm_head`, as
/// loading those checkpoints gives (the 5.x config class forces the flag to true, but the
/// checkpoint's distinct `lm_head` then stays untied).
pub(crate) fn t5(raw: &mut RawConfig<'_>, head: HeadChoice) -> Result<ModelSpec, ConfigError> {
    let reason = "absent; `T5Config` default";
    let hidden = raw.size(&["hidden_size", "d_model"], Sym::Hidden)?;
    let head_dim = raw.size(&["head_dim", "d_kv"], Sym::HeadDim)?;
    let inner = raw.size(&["d_ff"], Sym::Ffn)?;
    let enc_layers = raw.size(&["num_hidden_layers", "num_layers"], Sym::EncoderLayers)?;
    let dec_layers = if let Some(n) = raw.size_opt("num_decoder_layers")? {
        raw.source(Sym::DecoderLayers, "num_decoder_layers");
        n
    } else {
        raw.assume(
            "num_decoder_layers",
            enc_layers,
            "absent or null; `T5Config` uses num_layers",
        );
        raw.source(Sym::DecoderLayers, "num_layers");
        enc_layers
    };
    let heads = raw.size(&["num_attention_heads", "num_heads"], Sym::Heads)?;
    let vocab = raw.size(&["vocab_size"], Sym::Vocab)?;
    let buckets = raw.size_or(
        &["relative_attention_num_buckets"],
        Sym::Buckets,
        32,
        reason,
    )?;
    let gated = match raw.value("feed_forward_proj") {
        None => {
            raw.assume("feed_forward_proj", "relu", reason);
            false
        }
        Some(v) => match v.as_str() {
            Some(s) => s.starts_with("gated-"),
            None => {
                return Err(raw.invalid(
                    "feed_forward_proj",
                    v,
                    "a string such as `relu` or `gated-gelu`",
                ));
            }
        },
    };
    let tied = raw.flag("tie_word_embeddings")?.unwrap_or(true);
    let arch = architecture(raw, "T5ForConditionalGeneration");
    let lm = lm_head(&arch, head);
    let architecture = base_class(&arch, lm, "T5ForConditionalGeneration", "T5Model");
    let attention = Attention::Standard(mha(hidden, heads, heads, head_dim, false));
    let ffn = Ffn::Dense(mlp(hidden, inner, gated, false));
    let norm = Norm::rms_norm(hidden);
    let enc_layer = Layer {
        attention: attention.clone(),
        cross_attention: None,
        ffn: ffn.clone(),
        norms: vec![norm; 2],
        sliding_window: None,
        extras: Vec::new(),
        state: None,
    };
    let dec_layer = Layer {
        cross_attention: Some(attention.clone()),
        norms: vec![norm; 3],
        ..enc_layer.clone()
    };
    let bias = Some(PositionEmbedding::RelativeBias { buckets, heads });
    let stack = |role, layer: Layer, n: usize| Stack {
        role,
        position: bias,
        token_type: None,
        embedding_norm: None,
        layers: Layers::repeat(layer, n as u64),
        final_norm: Some(norm),
    };
    let enc_n = raw.layer_count("num_layers", enc_layers)?;
    let dec_n = raw.layer_count("num_decoder_layers", dec_layers)?;
    Ok(seq2seq_spec(
        "t5",
        architecture,
        hidden,
        vocab,
        0,
        stack(StackRole::Encoder, enc_layer, enc_n),
        stack(StackRole::CrossDecoder, dec_layer, dec_n),
        lm_or_none(lm, tied),
    ))
}

/// BART (`modeling_bart.py`): shared table (the encoder's and decoder's `embed_tokens` tie to
/// it only when `tie_word_embeddings`); learned positions of `max_position_embeddings + 2`
/// rows and a `layernorm_embedding` per stack; biased attention and MLP; encoder blocks with
/// 2 `LayerNorms`, decoder blocks with cross-attention and 3. `final_logits_bias` is a buffer.
pub(crate) fn bart(raw: &mut RawConfig<'_>, head: HeadChoice) -> Result<ModelSpec, ConfigError> {
    let reason = "absent; `BartConfig` default";
    let hidden = raw.size(&["hidden_size", "d_model"], Sym::Hidden)?;
    let enc_layers = raw.size(&["encoder_layers"], Sym::EncoderLayers)?;
    let dec_layers = raw.size(&["decoder_layers"], Sym::DecoderLayers)?;
    let enc_heads = raw.size(&["encoder_attention_heads"], Sym::Heads)?;
    let dec_heads = raw.size(&["decoder_attention_heads"], Sym::DecoderHeads)?;
    let enc_ffn = raw.size(&["encoder_ffn_dim"], Sym::Ffn)?;
    let dec_ffn = raw.size(&["decoder_ffn_dim"], Sym::DecoderFfn)?;
    let vocab = raw.size(&["vocab_size"], Sym::Vocab)?;
    let positions = raw.size_or(&["max_position_embeddings"], Sym::Context, 1024, reason)?;
    let enc_head_dim =
        raw.derived_head_dim(hidden, "d_model", enc_heads, "encoder_attention_heads")?;
    let dec_head_dim =
        raw.derived_head_dim(hidden, "d_model", dec_heads, "decoder_attention_heads")?;
    let tied = raw.flag_or("tie_word_embeddings", true, reason)?;
    let arch = architecture(raw, "BartForConditionalGeneration");
    let lm = lm_head(&arch, head);
    let architecture = base_class(&arch, lm, "BartForConditionalGeneration", "BartModel");
    let rows = positions.checked_add(2).ok_or_else(|| {
        raw.invalid(
            "max_position_embeddings",
            &positions.into(),
            "a size below 2^64 − 2",
        )
    })?;
    let position = Some(PositionEmbedding::Learned {
        table: Table { rows, dim: hidden },
        offset: 2,
    });
    let enc = BartSide {
        heads: enc_heads,
        head_dim: enc_head_dim,
        ffn: enc_ffn,
        layers: raw.layer_count("encoder_layers", enc_layers)?,
    };
    let dec = BartSide {
        heads: dec_heads,
        head_dim: dec_head_dim,
        ffn: dec_ffn,
        layers: raw.layer_count("decoder_layers", dec_layers)?,
    };
    let ends = BartEnds {
        position,
        embedding_norm: true,
        final_norm: false,
    };
    let [encoder, decoder] = bart_stacks(hidden, [enc, dec], ends);
    Ok(seq2seq_spec(
        "bart",
        architecture,
        hidden,
        vocab,
        if tied { 0 } else { 2 },
        encoder,
        decoder,
        lm_or_none(lm, tied),
    ))
}
