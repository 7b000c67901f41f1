//! Encoders: BERT, RoBERTa, DistilBERT, ModernBERT.
//!
//! The head is the class in `architectures` unless the user asks: `*ForMaskedLM` has the MLM
//! head (transform `dense` + norm, a decoder tied to the token table, a decoder bias) and no
//! pooler; the bare `*Model` has BERT's pooler (RoBERTa's too) and no head.

use llmsize_core::expr::Sym;
use std::collections::BTreeMap;

use llmsize_core::spec::{
    Attention, Ffn, HeadTransform, Layer, Layers, Linear, ModelSpec, Norm, NormKind, OutputHead,
    PositionEmbedding, Stack, StackRole, Table,
};

use super::decoder::{mha, mlp};
use super::raw::RawConfig;
use super::{HeadChoice, architecture};
use crate::error::ConfigError;

/// Whether to build the MLM head or the bare model.
fn wants_mlm(arch: &str, head: HeadChoice) -> (bool, String, Option<String>) {
    let base_class = arch
        .find("For")
        .map_or_else(|| arch.to_owned(), |i| format!("{}Model", &arch[..i]));
    let mlm_class = format!("{}ForMaskedLM", base_class.trim_end_matches("Model"));
    match head {
        HeadChoice::Base => (false, base_class, None),
        HeadChoice::Lm => (true, mlm_class, None),
        HeadChoice::Config if arch.ends_with("ForMaskedLM") => (true, arch.to_owned(), None),
        HeadChoice::Config if arch.ends_with("Model") => (false, arch.to_owned(), None),
        HeadChoice::Config => (
            false,
            base_class.clone(),
            Some(format!(
                "`{arch}`'s task head is not counted; counted `{base_class}` (pass `--head lm` for the MLM head)"
            )),
        ),
    }
}

/// A post-LN BERT layer: biased q/k/v/o and 2-matrix MLP, two `LayerNorms`.
fn bert_layer(hidden: u64, heads: u64, head_dim: u64, inner: u64) -> Layer {
    Layer {
        attention: Attention::Standard(mha(hidden, heads, heads, head_dim, true)),
        cross_attention: None,
        ffn: Ffn::Dense(mlp(hidden, inner, false, true)),
        norms: vec![Norm::layer_norm(hidden); 2],
        sliding_window: None,
        extras: Vec::new(),
        state: None,
    }
}

fn learned_positions(rows: u64, hidden: u64) -> PositionEmbedding {
    PositionEmbedding::Learned {
        table: Table { rows, dim: hidden },
        offset: 0,
    }
}

/// The MLM head of BERT-like encoders (biased `dense` + `LayerNorm`, decoder with `biases`
/// vectors of `V`), or none for the bare model.
fn mlm_head(mlm: bool, tied: bool, biases: u64, hidden: u64, norm: Norm) -> OutputHead {
    if !mlm {
        return OutputHead::None;
    }
    OutputHead::Lm {
        tied,
        biases,
        transform: Some(HeadTransform {
            dense: Linear {
                input: hidden,
                output: hidden,
                bias: true,
            },
            norm,
        }),
    }
}

/// BERT family and ModernBERT.
pub(crate) fn encoder(
    raw: &mut RawConfig<'_>,
    model_type: &str,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    match model_type {
        "distilbert" => distilbert(raw, head),
        "modernbert" => modernbert(raw, head),
        _ => bert(raw, model_type, head),
    }
}

struct Encoder {
    model_type: String,
    architecture: String,
    hidden: u64,
    vocab: u64,
    stack: Stack,
    head: OutputHead,
    pooler: Option<Linear>,
    warning: Option<String>,
}

impl Encoder {
    fn into_spec(self) -> ModelSpec {
        ModelSpec {
            name: String::new(),
            model_type: self.model_type,
            architecture: self.architecture,
            hidden_size: self.hidden,
            vocab_size: self.vocab,
            context_length: None,
            token_embedding: Some(Table {
                rows: self.vocab,
                dim: self.hidden,
            }),
            extra_token_tables: 0,
            embedding_projections: Vec::new(),
            stacks: vec![self.stack],
            head: self.head,
            pooler: self.pooler,
            assumptions: Vec::new(),
            warnings: self.warning.into_iter().collect(),
            symbol_sources: BTreeMap::new(),
            extras: Vec::new(),
            estimate: None,
            image_tokens: None,
            quantization: None,
            training: None,
            facts: llmsize_core::facts::TypeFacts::NONE,
        }
    }
}

/// BERT and RoBERTa (`modeling_bert.py`, `modeling_roberta.py`): word, position and token-type
/// tables with a `LayerNorm`; post-LN layers with biased q/k/v/o and MLP; MLM head whose
/// decoder weight and bias tie to the token table and the head's `bias` (both untie when
/// `tie_word_embeddings` is false, leaving two bias vectors).
fn bert(
    raw: &mut RawConfig<'_>,
    model_type: &str,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let roberta = model_type == "roberta";
    let class = if roberta {
        "RobertaConfig"
    } else {
        "BertConfig"
    };
    let reason = format!("absent; `{class}` default");
    let hidden = raw.size(&["hidden_size"], Sym::Hidden)?;
    let layers = raw.size(&["num_hidden_layers"], Sym::Layers)?;
    let heads = raw.size(&["num_attention_heads"], Sym::Heads)?;
    let vocab = raw.size(&["vocab_size"], Sym::Vocab)?;
    let inner = raw.size(&["intermediate_size"], Sym::Ffn)?;
    let positions = raw.size_or(&["max_position_embeddings"], Sym::Context, 512, &reason)?;
    let types = raw.size_or(&["type_vocab_size"], Sym::TokenTypes, 2, &reason)?;
    let head_dim = raw.derived_head_dim(hidden, "hidden_size", heads, "num_attention_heads")?;
    let tied = raw.flag_or("tie_word_embeddings", true, &reason)?;
    let arch = architecture(
        raw,
        if roberta {
            "RobertaForMaskedLM"
        } else {
            "BertForMaskedLM"
        },
    );
    let (mlm, architecture, warning) = wants_mlm(&arch, head);
    let n = raw.layer_count("num_hidden_layers", layers)?;
    let norm = Norm::layer_norm(hidden);
    let layer = bert_layer(hidden, heads, head_dim, inner);
    Ok(Encoder {
        model_type: model_type.to_owned(),
        architecture,
        hidden,
        vocab,
        stack: Stack {
            role: StackRole::Encoder,
            position: Some(learned_positions(positions, hidden)),
            token_type: Some(Table {
                rows: types,
                dim: hidden,
            }),
            embedding_norm: Some(norm),
            layers: Layers::repeat(layer, n as u64),
            final_norm: None,
        },
        head: mlm_head(mlm, tied, if tied { 1 } else { 2 }, hidden, norm),
        pooler: (!mlm).then_some(Linear {
            input: hidden,
            output: hidden,
            bias: true,
        }),
        warning,
    }
    .into_spec())
}

/// DistilBERT (`modeling_distilbert.py`): `dim`, `n_layers`, `n_heads`, `hidden_dim`; no
/// token types (a sinusoidal position table is still a parameter); MLM head
/// `vocab_transform` + `vocab_layer_norm` + `vocab_projector` whose bias is never tied.
fn distilbert(raw: &mut RawConfig<'_>, head: HeadChoice) -> Result<ModelSpec, ConfigError> {
    let reason = "absent; `DistilBertConfig` default";
    let hidden = raw.size(&["hidden_size", "dim"], Sym::Hidden)?;
    let layers = raw.size(&["num_hidden_layers", "n_layers"], Sym::Layers)?;
    let heads = raw.size(&["num_attention_heads", "n_heads"], Sym::Heads)?;
    let vocab = raw.size(&["vocab_size"], Sym::Vocab)?;
    let inner = raw.size(&["hidden_dim"], Sym::Ffn)?;
    let positions = raw.size_or(&["max_position_embeddings"], Sym::Context, 512, reason)?;
    let head_dim = raw.derived_head_dim(hidden, "dim", heads, "n_heads")?;
    let tied = raw.flag_or("tie_word_embeddings", true, reason)?;
    let arch = architecture(raw, "DistilBertForMaskedLM");
    let (mlm, architecture, warning) = wants_mlm(&arch, head);
    let n = raw.layer_count("n_layers", layers)?;
    let norm = Norm::layer_norm(hidden);
    let layer = bert_layer(hidden, heads, head_dim, inner);
    Ok(Encoder {
        model_type: "distilbert".into(),
        architecture,
        hidden,
        vocab,
        stack: Stack {
            role: StackRole::Encoder,
            position: Some(learned_positions(positions, hidden)),
            token_type: None,
            embedding_norm: Some(norm),
            layers: Layers::repeat(layer, n as u64),
            final_norm: None,
        },
        head: mlm_head(mlm, tied, 1, hidden, norm),
        pooler: None,
        warning,
    }
    .into_spec())
}

/// ModernBERT (`modeling_modernbert.py`): no position table (`RoPE`); `LayerNorms` with a bias
/// only when `norm_bias`; layer 0 has no attention norm (`nn.Identity`); fused `Wqkv`;
/// gated `Wi` (d → `2·d_ff`); `final_norm`; MLM head `dense` (bias `classifier_bias`) + norm,
/// decoder tied with a bias (`decoder_bias`).
fn modernbert(raw: &mut RawConfig<'_>, head: HeadChoice) -> Result<ModelSpec, ConfigError> {
    let reason = "absent; `ModernBertConfig` default";
    let hidden = raw.size(&["hidden_size"], Sym::Hidden)?;
    let layers = raw.size(&["num_hidden_layers"], Sym::Layers)?;
    let heads = raw.size(&["num_attention_heads"], Sym::Heads)?;
    let vocab = raw.size(&["vocab_size"], Sym::Vocab)?;
    let inner = raw.size(&["intermediate_size"], Sym::Ffn)?;
    let head_dim = raw.derived_head_dim(hidden, "hidden_size", heads, "num_attention_heads")?;
    let norm_bias = raw.flag_or("norm_bias", false, reason)?;
    let attention_bias = raw.flag_or("attention_bias", false, reason)?;
    let mlp_bias = raw.flag_or("mlp_bias", false, reason)?;
    let decoder_bias = raw.flag_or("decoder_bias", true, reason)?;
    let classifier_bias = raw.flag_or("classifier_bias", false, reason)?;
    let tied = raw.flag_or("tie_word_embeddings", true, reason)?;
    let arch = architecture(raw, "ModernBertForMaskedLM");
    let (mlm, architecture, warning) = wants_mlm(&arch, head);
    let n = raw.layer_count("num_hidden_layers", layers)?;
    let norm = Norm {
        kind: NormKind::LayerNorm,
        dim: hidden,
        bias: norm_bias,
    };
    let mut attention = mha(hidden, heads, heads, head_dim, attention_bias);
    attention.fused_qkv = true;
    let layer = Layer {
        attention: Attention::Standard(attention),
        cross_attention: None,
        ffn: Ffn::Dense(mlp(hidden, inner, true, mlp_bias)),
        norms: vec![norm; 2],
        sliding_window: None,
        extras: Vec::new(),
        state: None,
    };
    // The first layer has no attention norm (its input is the embedding norm's output).
    let mut all = Layers::new();
    all.push(Layer {
        norms: vec![norm],
        ..layer.clone()
    });
    all.push_run(layer, (n as u64).saturating_sub(1));
    Ok(Encoder {
        model_type: "modernbert".into(),
        architecture,
        hidden,
        vocab,
        stack: Stack {
            role: StackRole::Encoder,
            position: None,
            token_type: None,
            embedding_norm: Some(norm),
            layers: all,
            final_norm: Some(norm),
        },
        head: if mlm {
            OutputHead::Lm {
                tied,
                biases: u64::from(decoder_bias),
                transform: Some(HeadTransform {
                    dense: Linear {
                        input: hidden,
                        output: hidden,
                        bias: classifier_bias,
                    },
                    norm,
                }),
            }
        } else {
            OutputHead::None
        },
        pooler: None,
        warning,
    }
    .into_spec())
}
