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

use super::bert::{cross_attention_from, norm_extras};
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
    /// A learned table of `key` rows.
    Rows(&'static str),
    /// A sinusoidal table of `key` rows held as an `nn.Embedding(_freeze=True)` parameter
    /// (Marian, Pegasus): counted, never trained.
    Sinusoid(&'static str),
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
    /// The decoder's final `layer_norm` (`mBART`, Pegasus, Blenderbot, Whisper).
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
    /// The key of the cross-attention's k/v input width, when not `d_model`.
    pub cross_width_key: Option<&'static str>,
    /// `encoder_layers` default when the encoder-decoder classes (`…ForConditionalGeneration`,
    /// the bare `…Model`) are read too: a BART-shaped encoder with the decoder's position
    /// table, embedding norm and final norm; `None`: only the causal class is read.
    pub encoder_layers: Option<u64>,
    /// The encoder-decoder LM class when not `…ForConditionalGeneration` (`MarianMTModel`).
    pub lm_class: Option<&'static str>,
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
    cross_width_key: None,
    encoder_layers: None,
    lm_class: None,
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
    if !causal && let Some(enc_default) = d.encoder_layers {
        return encoder_decoder(raw, family, head, d, arch, enc_default);
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
    let mut rows = vocab;
    if let Some(k) = d.table_key {
        if let Some(n) = raw.size_opt(k)? {
            rows = n;
        } else {
            raw.assume(
                k,
                vocab,
                &format!("absent or null; `{}` uses vocab_size", d.class),
            );
        }
    }
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
        Positions::Sinusoid(k) => Some(PositionEmbedding::Sinusoidal {
            table: Table {
                rows: raw.size_or(&[k], Sym::Context, d.positions, &reason)?,
                dim: hidden,
            },
        }),
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
    // `TrOCR`'s cross-attention k/v read `cross_attention_hidden_size` features (the
    // encoder's width) when set.
    let kv_input = match d.cross_width_key {
        Some(k) => raw.size_opt(k)?.unwrap_or(hidden),
        None => hidden,
    };
    // The modules as `modeling_bart.py` names them: peft's named targets (`q_proj`) reach
    // them too.
    let mut extras = cross_attention_from(
        hidden,
        kv_input,
        (bias, bias),
        "encoder_attn",
        ["q_proj", "k_proj", "v_proj", "out_proj"],
    );
    if !d.k_bias
        && let Some(i) = extras
            .iter()
            .position(|e| e.name == "encoder_attn.k_proj.bias")
    {
        extras.remove(i);
    }
    extras.extend(norm_extras(hidden, "encoder_attn_layer_norm"));
    // Without an encoder output the cross-attention never runs (`BartDecoderLayer.forward`
    // skips it when `encoder_hidden_states` is None).
    let extras: Vec<_> = extras
        .into_iter()
        .map(llmsize_core::spec::Extra::idle)
        .collect();
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
        image_tokens: None,
        quantization: None,
        training: None,
        facts: llmsize_core::facts::TypeFacts::NONE,
    })
}

/// The encoder-decoder classes of a BART-shaped type (`modeling_bart.py`'s
/// `BartForConditionalGeneration` and `BartModel`): a `shared` table that the encoder's and
/// decoder's `embed_tokens` and the `lm_head` tie to while `tie_word_embeddings` (two more
/// tables once untied); each stack with the type's position table, embedding norm and final
/// norm; encoder layers with self-attention and the FFN (two `LayerNorms`), decoder layers
/// with cross-attention too (three), cached over the encoder output. `final_logits_bias` is
/// a buffer.
fn encoder_decoder(
    raw: &mut RawConfig<'_>,
    family: &Family,
    head: HeadChoice,
    d: &Dec,
    arch: String,
    enc_default: u64,
) -> Result<ModelSpec, ConfigError> {
    let reason = format!("absent; `{}` default", d.class);
    let stem = d.causal.trim_end_matches("ForCausalLM");
    let lm_class = d
        .lm_class
        .map_or_else(|| format!("{stem}ForConditionalGeneration"), str::to_owned);
    let bare = arch != lm_class && crate::hf_config::is_bare(&arch);
    let lm = match head {
        HeadChoice::Base => false,
        HeadChoice::Lm => true,
        HeadChoice::Config => !bare,
    };
    let architecture = match (lm, bare) {
        (true, false) | (false, true) => arch,
        (true, true) => lm_class,
        (false, false) => format!("{stem}Model"),
    };
    // MVP's `use_prompt` (default false) adds prompt modules llmsize does not read.
    if raw.flag("use_prompt")? == Some(true) {
        return Err(raw.invalid(
            "use_prompt",
            &Value::Bool(true),
            "`false` (llmsize does not read MVP's prompt modules)",
        ));
    }
    if let Some(k) = d.table_key {
        // Marian: read when the encoder and decoder share one table of `vocab_size` rows
        // (the default); separate vocabularies build other tables and head widths.
        let shared = raw.flag_or("share_encoder_decoder_embeddings", true, &reason)?;
        let own = raw.size_opt(k)?;
        let vocab = raw.size_opt("vocab_size")?;
        if !shared || (own.is_some() && own != vocab) {
            let found = raw.value(k).cloned().unwrap_or(Value::Null);
            return Err(raw.invalid(
                k,
                &found,
                "`vocab_size`, with `share_encoder_decoder_embeddings` (llmsize reads Marian's encoder-decoder classes with one shared vocabulary)",
            ));
        }
    }
    let hidden = raw.size_or(&["d_model", "hidden_size"], Sym::Hidden, d.d_model, &reason)?;
    let enc_layers = raw.size_or(
        &["encoder_layers"],
        Sym::EncoderLayers,
        enc_default,
        &reason,
    )?;
    let dec_layers = raw.size_or(&["decoder_layers"], Sym::DecoderLayers, d.layers, &reason)?;
    let enc_heads = raw.size_or(&["encoder_attention_heads"], Sym::Heads, d.heads, &reason)?;
    let dec_heads = raw.size_or(
        &["decoder_attention_heads"],
        Sym::DecoderHeads,
        d.heads,
        &reason,
    )?;
    let enc_ffn = raw.size_or(&["encoder_ffn_dim"], Sym::Ffn, d.ffn, &reason)?;
    let dec_ffn = raw.size_or(&["decoder_ffn_dim"], Sym::DecoderFfn, d.ffn, &reason)?;
    let vocab = raw.size_or(&["vocab_size"], Sym::Vocab, d.vocab, &reason)?;
    let enc_head_dim =
        raw.derived_head_dim(hidden, "d_model", enc_heads, "encoder_attention_heads")?;
    let dec_head_dim =
        raw.derived_head_dim(hidden, "d_model", dec_heads, "decoder_attention_heads")?;
    let tied = raw.flag_or("tie_word_embeddings", true, &reason)?;
    let embedding_norm = match d.embedding_norm {
        On::Fixed(b) => b,
        On::Key(k, default) => raw.flag_or(k, default, &reason)?,
    };
    let position = match d.position {
        Positions::Rows(k) => {
            let rows = raw.size_or(&[k], Sym::Context, d.positions, &reason)?;
            Some(PositionEmbedding::Learned {
                table: Table { rows, dim: hidden },
                offset: 0,
            })
        }
        Positions::Sinusoid(k) => {
            let rows = raw.size_or(&[k], Sym::Context, d.positions, &reason)?;
            Some(PositionEmbedding::Sinusoidal {
                table: Table { rows, dim: hidden },
            })
        }
        Positions::Offset2 | Positions::TrOcr => {
            let p = raw.size_or(
                &["max_position_embeddings"],
                Sym::Context,
                d.positions,
                &reason,
            )?;
            let rows = p.checked_add(2).ok_or_else(|| {
                raw.invalid(
                    "max_position_embeddings",
                    &p.into(),
                    "a size below 2^64 − 2",
                )
            })?;
            Some(PositionEmbedding::Learned {
                table: Table { rows, dim: hidden },
                offset: 2,
            })
        }
    };
    let enc = seq2seq::BartSide {
        heads: enc_heads,
        head_dim: enc_head_dim,
        ffn: enc_ffn,
        layers: raw.layer_count("encoder_layers", enc_layers)?,
    };
    let dec = seq2seq::BartSide {
        heads: dec_heads,
        head_dim: dec_head_dim,
        ffn: dec_ffn,
        layers: raw.layer_count("decoder_layers", dec_layers)?,
    };
    let ends = seq2seq::BartEnds {
        position,
        embedding_norm,
        final_norm: d.final_norm,
    };
    let [encoder, decoder] = seq2seq::bart_stacks(hidden, [enc, dec], ends);
    Ok(seq2seq::seq2seq_spec(
        family.model_type,
        architecture,
        hidden,
        vocab,
        if tied { 0 } else { 2 },
        encoder,
        decoder,
        seq2seq::lm_or_none(lm, tied),
    ))
}
