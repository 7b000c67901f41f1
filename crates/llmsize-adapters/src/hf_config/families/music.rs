//! Music-generation decoders: `MusicGen` and `MusicGen` Melody (`modeling_musicgen.py`,
//! `modeling_musicgen_melody.py`), as the causal-LM mapping builds them.
//!
//! `MusicgenForCausalLM` is built from the decoder's own config (`MusicgenDecoderConfig`,
//! `model_type` `musicgen_decoder`, the `decoder` entry of a full `musicgen` config): the
//! composite `MusicgenConfig` (text encoder, audio encoder, decoder) is not a causal LM —
//! transformers 5.24 fails to build `MusicgenForCausalLM` from it, by the class or by
//! `AutoModelForCausalLM` — so `musicgen` itself is not read here.
//!
//! The decoder predicts `num_codebooks` parallel streams of audio codes: one token table per
//! codebook (`vocab_size + 1` rows, the extra row the pad/BOS code 2048) whose lookups are
//! summed, sinusoidal positions (a buffer, no parameters), pre-norm `LayerNorm` layers with
//! bias-free attention and a bias-free `fc1`/`fc2` MLP, a final `LayerNorm`, and one
//! bias-free head per codebook (`lm_heads`, never tied: no class lists `_tied_weights_keys`,
//! whatever `tie_word_embeddings` says). `MusicGen`'s layers also build a bias-free
//! cross-attention (`encoder_attn`, `H → H` whatever `cross_attention_hidden_size`, which
//! only the composite reads) with its own `LayerNorm`; with no encoder output it never runs
//! and caches nothing. `MusicGen` Melody's layers have none: it prepends its conditioning to
//! the sequence instead. The cache holds self-attention keys and values per sequence (the
//! `batch · num_codebooks` rows of `input_ids` are `batch` sequences).

use std::collections::BTreeMap;

use llmsize_core::category::Category;
use llmsize_core::expr::{Expr, Sym};
use llmsize_core::spec::{
    Attention, Extra, Ffn, Layer, Layers, ModelSpec, Norm, OutputHead, Stack, StackRole, Table,
};
use serde_json::Value;

use crate::error::ConfigError;
use crate::hf_config::decoder::{mha, mlp};
use crate::hf_config::family::Family;
use crate::hf_config::raw::RawConfig;
use crate::hf_config::{HeadChoice, architecture, is_bare};

/// The entries of this file.
pub(crate) const FAMILIES: &[Family] = &[
    Family::code(
        "musicgen_decoder",
        "MusicgenDecoderConfig",
        "MusicgenForCausalLM",
        musicgen,
    ),
    Family::code(
        "musicgen_melody_decoder",
        "MusicgenMelodyDecoderConfig",
        "MusicgenMelodyForCausalLM",
        melody,
    ),
];

/// `MusicgenForCausalLM`: layers with cross-attention.
fn musicgen(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    read(raw, f, head, true)
}

/// `MusicgenMelodyForCausalLM`: layers without cross-attention.
fn melody(raw: &mut RawConfig<'_>, f: &Family, head: HeadChoice) -> Result<ModelSpec, ConfigError> {
    read(raw, f, head, false)
}

/// The classes read: the causal LM (`…ForCausalLM`) or the bare decoder (`…Model`), and
/// whether the heads are built.
fn class(raw: &RawConfig<'_>, f: &Family, head: HeadChoice) -> Result<(String, bool), ConfigError> {
    let arch = architecture(raw, f.architecture);
    let stem = f.architecture.trim_end_matches("ForCausalLM");
    let bare = format!("{stem}Model");
    if arch != f.architecture && arch != bare {
        let found = raw.value("architectures").cloned().unwrap_or(Value::Null);
        return Err(raw.invalid(
            "architectures",
            &found,
            &format!(
                "`{}` or `{bare}` (llmsize reads `{}` as its decoder)",
                f.architecture, f.model_type
            ),
        ));
    }
    let lm = match head {
        HeadChoice::Base => false,
        HeadChoice::Lm => true,
        HeadChoice::Config => !is_bare(&arch),
    };
    Ok((if lm { f.architecture.to_owned() } else { bare }, lm))
}

/// The config's switches that change no tensor, checked as the class checks them:
/// `audio_channels` is 1 or 2 (`validate_architecture`); the sinusoidal table divides by
/// `hidden_size / 2 − 1`, so a width below 4 does not build.
fn check(raw: &mut RawConfig<'_>, hidden: u64, reason: &str) -> Result<(), ConfigError> {
    let channels = match raw.value("audio_channels") {
        None => {
            raw.assume("audio_channels", 1, reason);
            1
        }
        Some(v) => v.as_u64().unwrap_or(0),
    };
    if !matches!(channels, 1 | 2) {
        let found = raw.value("audio_channels").cloned().unwrap_or(Value::Null);
        return Err(raw.invalid("audio_channels", &found, "1 (mono) or 2 (stereo)"));
    }
    if hidden < 4 {
        return Err(raw.invalid(
            "hidden_size",
            &hidden.into(),
            "at least 4 (the sinusoidal positions divide by hidden_size / 2 − 1)",
        ));
    }
    Ok(())
}

/// The bias-free cross-attention `encoder_attn` (`H → H`) and its `LayerNorm`.
fn cross_attention(hidden: u64) -> Vec<Extra> {
    let d = || Expr::sym(Sym::Hidden, hidden);
    let part = "cross-attention (not run without an encoder)";
    let mut out: Vec<Extra> = ["q", "k", "v", "out"]
        .into_iter()
        .map(|p| {
            let name = format!("encoder_attn.{p}_proj.weight");
            Extra::linear(name, part, Category::Attention, d(), d())
        })
        .collect();
    for w in ["weight", "bias"] {
        let name = format!("encoder_attn_layer_norm.{w}");
        let dim = Expr::sym(Sym::NormDim, hidden);
        out.push(Extra::vector(name, "norm", Category::Norm, dim));
    }
    out
}

/// The codebooks past the first, as one tensor of `num_codebooks − 1` copies (the first is
/// the spec's token table, and its LM head): their token tables of `rows`, and their heads
/// when `lm`.
fn more_codebooks(hidden: u64, (vocab, rows): (u64, u64), codebooks: u64, lm: bool) -> Vec<Extra> {
    let Some(more) = codebooks.checked_sub(1).filter(|n| *n > 0) else {
        return Vec::new();
    };
    let copies = || Expr::sym(Sym::Named("(num_codebooks − 1)"), more);
    let d = || Expr::sym(Sym::Hidden, hidden);
    let table = Extra::table(
        "embed_tokens.rest.weight",
        "the other codebooks' token tables",
        Category::TokenEmbedding,
        Expr::sym(Sym::Vocab, rows),
        d(),
    );
    let mut out = vec![table.times(copies())];
    if lm {
        let e = Extra::linear(
            "lm_heads.rest.weight",
            "the other codebooks' heads",
            Category::LmHead,
            d(),
            Expr::sym(Sym::Vocab, vocab),
        );
        out.push(e.times(copies()));
    }
    out
}

/// Read a `MusicGen` decoder config as its causal LM (or its bare decoder).
fn read(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
    cross: bool,
) -> Result<ModelSpec, ConfigError> {
    let (architecture, lm) = class(raw, f, head)?;
    let reason = format!("absent; `{}` default", f.config_class);
    let hidden = raw.size_or(&["hidden_size"], Sym::Hidden, 1024, &reason)?;
    let layers = raw.size_or(&["num_hidden_layers"], Sym::Layers, 24, &reason)?;
    let heads = raw.size_or(&["num_attention_heads"], Sym::Heads, 16, &reason)?;
    let ffn = raw.size_or(&["ffn_dim"], Sym::Ffn, 4096, &reason)?;
    let vocab = raw.size_or(&["vocab_size"], Sym::Vocab, 2048, &reason)?;
    let codebooks = raw.size_or(&["num_codebooks"], Sym::Named("num_codebooks"), 4, &reason)?;
    check(raw, hidden, &reason)?;
    let head_dim = raw.derived_head_dim(hidden, "hidden_size", heads, "num_attention_heads")?;
    let rows = vocab
        .checked_add(1)
        .ok_or_else(|| raw.invalid("vocab_size", &vocab.into(), "a size below 2^64 − 1"))?;
    let norm = Norm::layer_norm(hidden);
    let layer = Layer {
        attention: Attention::Standard(mha(hidden, heads, heads, head_dim, false)),
        cross_attention: None,
        ffn: Ffn::Dense(mlp(hidden, ffn, false, false)),
        norms: vec![norm; 2],
        sliding_window: None,
        extras: if cross {
            cross_attention(hidden)
        } else {
            Vec::new()
        },
        state: None,
    };
    let n = raw.layer_count("num_hidden_layers", layers)?;
    let head = if lm {
        OutputHead::Lm {
            tied: false,
            biases: 0,
            transform: None,
        }
    } else {
        OutputHead::None
    };
    Ok(ModelSpec {
        name: String::new(),
        model_type: f.model_type.to_owned(),
        architecture,
        hidden_size: hidden,
        vocab_size: vocab,
        context_length: None,
        token_embedding: Some(Table { rows, dim: hidden }),
        extra_token_tables: 0,
        embedding_projections: Vec::new(),
        stacks: vec![Stack {
            role: StackRole::Decoder,
            position: None,
            token_type: None,
            embedding_norm: None,
            layers: Layers::repeat(layer, n as u64),
            final_norm: Some(norm),
        }],
        head,
        pooler: None,
        assumptions: Vec::new(),
        warnings: Vec::new(),
        symbol_sources: BTreeMap::new(),
        extras: more_codebooks(hidden, (vocab, rows), codebooks, lm),
        estimate: None,
        image_tokens: None,
        quantization: None,
        training: None,
        facts: llmsize_core::facts::TypeFacts::NONE,
    })
}
