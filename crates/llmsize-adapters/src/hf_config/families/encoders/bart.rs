//! Encoder-decoders built as their decoder alone (`BartForCausalLM`, `WhisperForCausalLM`, …).
//!
//! transformers' `…ForCausalLM` of an encoder-decoder wraps the decoder (`…DecoderWrapper`)
//! with its own token table and position table, and an output projection tied to the table
//! when `tie_word_embeddings`. Each decoder layer still builds its cross-attention
//! (`encoder_attn` and its `LayerNorm`), but with no encoder output it never runs, so only
//! self-attention is cached: the cross-attention is held as tensors of the layer. One [`Dec`]
//! entry per model type says where it departs from `modeling_bart.py`.

use std::collections::BTreeMap;

use llmsize_core::expr::Sym;
use llmsize_core::spec::{
    Attention, Ffn, Layer, Layers, ModelSpec, Norm, OutputHead, PositionEmbedding, Stack,
    StackRole, Table,
};
use serde_json::Value;

use super::bert::{cross_attention_extras, norm_extras};
use crate::error::ConfigError;
use crate::hf_config::decoder::{mha, mlp};
use crate::hf_config::family::Family;
use crate::hf_config::raw::RawConfig;
use crate::hf_config::{HeadChoice, architecture, seq2seq};

/// The decoder's position table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Positions {
    /// `…LearnedPositionalEmbedding` with BART's offset: `max_position_embeddings + 2` rows.
    Offset2,
    /// A table of `key` rows (learned, or sinusoidal but held as an `nn.Embedding`
    /// parameter: Marian, Pegasus).
    Rows(&'static str),
    /// `TrOCR`: learned with the offset when `use_learned_position_embeddings`, else a
    /// sinusoidal buffer (no parameters).
    TrOcr,
}

/// A norm switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum On {
    /// Always or never.
    Fixed(bool),
    /// `config[key]`, else the default.
    Key(&'static str, bool),
}

/// One encoder-decoder type built as its decoder.
pub(super) struct Dec {
    /// The configuration class.
    pub class: &'static str,
    /// The causal-LM class.
    pub causal: &'static str,
    /// BART: any other class goes to the classic reader (`seq2seq.rs`), which also counts a
    /// config naming no class.
    pub classic: Option<&'static str>,
    /// Class defaults.
    pub vocab: u64,
    pub d_model: u64,
    pub layers: u64,
    pub heads: u64,
    pub ffn: u64,
    pub positions: u64,
    /// The position table.
    pub position: Positions,
    /// `layernorm_embedding`.
    pub embedding_norm: On,
    /// The decoder's final `layer_norm` (mBART, Pegasus, Blenderbot, Whisper).
    pub final_norm: bool,
    /// Biases on q, v and o (`BigBirdPegasus`'s `use_bias`); else always.
    pub bias_key: Option<(&'static str, bool)>,
    /// `k_proj` has a bias (Whisper's has none).
    pub k_bias: bool,
    /// The token table's rows come from this key, defaulting to `vocab_size` (Marian's
    /// `decoder_vocab_size`); the head stays `vocab_size` wide.
    pub table_key: Option<&'static str>,
    /// The causal class never ties its head (`BigBirdPegasusForCausalLM`).
    pub never_tied: bool,
}

/// `modeling_bart.py` with the `BartConfig` defaults.
pub(super) const BART: Dec = Dec {
    class: "BartConfig",
    causal: "BartForCausalLM",
    classic: None,
    vocab: 50265,
    d_model: 1024,
    layers: 12,
    heads: 16,
    ffn: 4096,
    positions: 1024,
    position: Positions::Offset2,
    embedding_norm: On::Fixed(true),
    final_norm: false,
    bias_key: None,
    k_bias: true,
    table_key: None,
    never_tied: false,
};

/// Read an encoder-decoder config as its causal-LM class.
pub(super) fn read(
    raw: &mut RawConfig<'_>,
    family: &Family,
    head: HeadChoice,
    d: &Dec,
) -> Result<ModelSpec, ConfigError> {
    let arch = architecture(raw, d.classic.unwrap_or(d.causal));
    let causal = arch == d.causal || arch.ends_with("ForCausalLM");
    if d.classic.is_some() && !causal {
        return seq2seq::bart(raw, head);
    }
    if !causal {
        let found = raw.value("architectures").cloned().unwrap_or(Value::Null);
        return Err(raw.invalid(
            "architectures",
            &found,
            &format!(
                "`{}` (llmsize reads `{}` only as its decoder-only causal-LM class)",
                d.causal, family.model_type
            ),
        ));
    }
    let reason = format!("absent; `{}` default", d.class);
    let hidden = raw.size_or(&["d_model", "hidden_size"], Sym::Hidden, d.d_model, &reason)?;
    let layers = raw.size_or(&["decoder_layers"], Sym::Layers, d.layers, &reason)?;
    let heads = raw.size_or(&["decoder_attention_heads"], Sym::Heads, d.heads, &reason)?;
    let ffn = raw.size_or(&["decoder_ffn_dim"], Sym::Ffn, d.ffn, &reason)?;
    let vocab = raw.size_or(&["vocab_size"], Sym::Vocab, d.vocab, &reason)?;
    let rows = match d.table_key {
        Some(k) => match raw.size_opt(k)? {
            Some(n) => n,
            None => {
                raw.assume(
                    k,
                    vocab,
                    &format!("absent or null; `{}` uses vocab_size", d.class),
                );
                vocab
            }
        },
        None => vocab,
    };
    let head_dim = raw.derived_head_dim(hidden, "d_model", heads, "decoder_attention_heads")?;
    let tied = !d.never_tied && raw.flag_or("tie_word_embeddings", true, &reason)?;
    let bias = match d.bias_key {
        Some((k, default)) => raw.flag_or(k, default, &reason)?,
        None => true,
    };
    let embedding_norm = match d.embedding_norm {
        On::Fixed(b) => b,
        On::Key(k, default) => raw.flag_or(k, default, &reason)?,
    };
    let table = |rows| {
        Some(PositionEmbedding::Learned {
            table: Table { rows, dim: hidden },
            offset: 0,
        })
    };
    let offset2 = |raw: &mut RawConfig<'_>, reason: &str| -> Result<_, ConfigError> {
        let p = raw.size_or(
            &["max_position_embeddings"],
            Sym::Context,
            d.positions,
            reason,
        )?;
        let rows = p.checked_add(2).ok_or_else(|| {
            raw.invalid(
                "max_position_embeddings",
                &p.into(),
                "a size below 2^64 − 2",
            )
        })?;
        Ok(Some(PositionEmbedding::Learned {
            table: Table { rows, dim: hidden },
            offset: 2,
        }))
    };
    let position = match d.position {
        Positions::Offset2 => offset2(raw, &reason)?,
        Positions::Rows(k) => table(raw.size_or(&[k], Sym::Context, d.positions, &reason)?),
        Positions::TrOcr => {
            if raw.flag_or("use_learned_position_embeddings", true, &reason)? {
                offset2(raw, &reason)?
            } else {
                None
            }
        }
    };
    let mut attention = mha(hidden, heads, heads, head_dim, bias);
    attention.k_bias = bias && d.k_bias;
    let norm = Norm::layer_norm(hidden);
    let mut extras = cross_attention_extras(hidden, bias, bias, "encoder_attn");
    if !d.k_bias
        && let Some(i) = extras.iter().position(|e| e.name == "encoder_attn.k.bias")
    {
        extras.remove(i);
    }
    extras.extend(norm_extras(hidden, "encoder_attn_layer_norm"));
    let layer = Layer {
        attention: Attention::Standard(attention),
        cross_attention: None,
        ffn: Ffn::Dense(mlp(hidden, ffn, false, true)),
        norms: vec![norm; 2],
        sliding_window: None,
        extras,
        state: None,
    };
    let n = raw.layer_count("decoder_layers", layers)?;
    Ok(ModelSpec {
        name: String::new(),
        model_type: family.model_type.to_owned(),
        architecture: arch,
        hidden_size: hidden,
        vocab_size: vocab,
        context_length: None,
        token_embedding: Some(Table { rows, dim: hidden }),
        extra_token_tables: 0,
        embedding_projections: Vec::new(),
        stacks: vec![Stack {
            role: StackRole::Decoder,
            position,
            token_type: None,
            embedding_norm: embedding_norm.then_some(norm),
            layers: Layers::repeat(layer, n as u64),
            final_norm: d.final_norm.then_some(norm),
        }],
        head: OutputHead::Lm {
            tied,
            biases: 0,
            transform: None,
        },
        pooler: None,
        assumptions: Vec::new(),
        warnings: Vec::new(),
        symbol_sources: BTreeMap::new(),
        extras: Vec::new(),
        estimate: None,
    })
}
