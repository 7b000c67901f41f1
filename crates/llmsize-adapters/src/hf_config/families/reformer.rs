//! Reformer (`modeling_reformer.py`, `ReformerModelWithLMHead`).
//!
//! A token table and a position table — axial (`axial_pos_embds`: one `shape[i] × dim[i]`
//! weight per axis, the dims summing to `d`) or a learned `max_position_embeddings × d` one;
//! one layer per entry of `attn_layers` (`num_hidden_layers` is its length, whatever the
//! config says), each a reversible pair of an attention block (`LayerNorm`, then
//! `LocalSelfAttention`'s `query`/`key`/`value` or `LSHSelfAttention`'s shared `query_key`
//! and `value`, all `d → n_h·d_h` without bias, and `output.dense` back) and a chunked
//! feed-forward (`LayerNorm`, `d → d_ff → d` with biases); a `LayerNorm` over the two
//! concatenated residual streams (`2·d`); the LM head's `decoder` (`2·d → V` with a bias)
//! and its own `bias` (`V`, a second tensor: nothing ties it to the decoder's, nor the
//! decoder to the token table).
//!
//! Its cache (`past_buckets_states`, `ReformerDynamicCache`) holds each layer's past hidden
//! states and, on LSH layers, their int64 hash buckets, not keys and values: a per-token
//! state the spec has no shape for. So the layers hold their attention tensors as extras (no
//! cached attention), and every output carries a warning that no cache is counted.

use llmsize_core::Category;
use llmsize_core::checked;
use llmsize_core::expr::{Expr, Sym};
use llmsize_core::spec::{Attention, Extra, Ffn, Layer, Layers, ModelSpec, Norm, OutputHead};
use serde_json::Value;

use crate::error::ConfigError;
use crate::hf_config::decoder::{Decoder, mlp};
use crate::hf_config::family::Family;
use crate::hf_config::raw::RawConfig;
use crate::hf_config::{HeadChoice, architecture};

/// The entries of this file.
pub(crate) const FAMILIES: &[Family] = &[Family::code(
    "reformer",
    "ReformerConfig",
    "ReformerModelWithLMHead",
    reformer,
)];

/// Why a value was filled in.
const REASON: &str = "absent; `ReformerConfig` default";

/// The two attention kinds `attn_layers` names.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Local,
    Lsh,
}

/// `ReformerModelWithLMHead` (or the bare `ReformerModel` when asked for).
fn reformer(
    raw: &mut RawConfig<'_>,
    family: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let with_head = wants_head(raw, family, head)?;
    let kinds = attn_layers(raw)?;
    if with_head {
        causal_switches(raw, &kinds)?;
    }
    let hidden = raw.size_or(&["hidden_size"], Sym::Hidden, 256, REASON)?;
    let heads = raw.size_or(&["num_attention_heads"], Sym::Heads, 12, REASON)?;
    let head_dim = raw.size_or(&["attention_head_size"], Sym::HeadDim, 64, REASON)?;
    let ff = raw.size_or(&["feed_forward_size"], Sym::Ffn, 512, REASON)?;
    let vocab = raw.size_or(&["vocab_size"], Sym::Vocab, 320, REASON)?;
    raw.mul(heads, head_dim, "num_attention_heads·attention_head_size")?;
    let two_d = raw.mul(2, hidden, "2·hidden_size")?;
    let layers = layers(&kinds, hidden, (heads, head_dim), ff);
    let decoder = Decoder::new(
        family.model_type,
        architecture(raw, family.architecture),
        hidden,
        vocab,
        layers,
        None,
        false,
    );
    let positions = raw.size_or(&["max_position_embeddings"], Sym::Context, 4096, REASON)?;
    let mut extras = if raw.flag_or("axial_pos_embds", true, REASON)? {
        axial(raw, hidden)?
    } else {
        // `PositionEmbeddings.embedding`: the truth's categorizer counts an embedding whose
        // own module is named `embedding` with the token table, so it is one here too.
        vec![Extra::table(
            "reformer.embeddings.position_embeddings.embedding.weight",
            "learned position table (PositionEmbeddings)",
            Category::TokenEmbedding,
            Expr::sym(Sym::Context, positions),
            Expr::sym(Sym::Hidden, hidden),
        )]
    };
    let mut spec = decoder.into_spec();
    // `ReformerEmbeddings` refuses a sequence longer than `max_position_embeddings`.
    spec.context_length = Some(positions);
    let wide = || Expr::sym(Sym::Named("2·d"), two_d);
    for name in [
        "reformer.encoder.layer_norm.weight",
        "reformer.encoder.layer_norm.bias",
    ] {
        extras.push(Extra::vector(
            name,
            "final norm (2·d)",
            Category::Norm,
            wide(),
        ));
    }
    spec.head = OutputHead::None;
    if with_head {
        let v = || Expr::sym(Sym::Vocab, vocab);
        let part = "LM head (ReformerOnlyLMHead)";
        extras.push(Extra::linear(
            "lm_head.decoder.weight",
            part,
            Category::LmHead,
            wide(),
            v(),
        ));
        extras.push(Extra::vector(
            "lm_head.decoder.bias",
            part,
            Category::LmHead,
            v(),
        ));
        extras.push(Extra::vector("lm_head.bias", part, Category::LmHead, v()));
    }
    spec.extras = extras;
    Ok(spec)
}

/// Whether the LM head is built: the class named (`ReformerModelWithLMHead` or the bare
/// `ReformerModel`), or the head asked for; any other Reformer class is refused.
fn wants_head(raw: &RawConfig<'_>, family: &Family, head: HeadChoice) -> Result<bool, ConfigError> {
    match head {
        HeadChoice::Base => return Ok(false),
        HeadChoice::Lm => return Ok(true),
        HeadChoice::Config => {}
    }
    match architecture(raw, family.architecture).as_str() {
        "ReformerModelWithLMHead" => Ok(true),
        "ReformerModel" => Ok(false),
        _ => {
            let found = raw.value("architectures").cloned().unwrap_or(Value::Null);
            Err(raw.invalid(
                "architectures",
                &found,
                "`ReformerModelWithLMHead` or `ReformerModel` (llmsize reads no other Reformer class)",
            ))
        }
    }
}

/// `attn_layers`: each entry `"local"` or `"lsh"`, at least one.
fn attn_layers(raw: &mut RawConfig<'_>) -> Result<Vec<Kind>, ConfigError> {
    let expected = "a non-empty list of \"local\" and \"lsh\" (the attention of each layer)";
    let Some(v) = raw.value("attn_layers") else {
        raw.assume(
            "attn_layers",
            "[local, lsh, local, lsh, local, lsh]",
            REASON,
        );
        return Ok([Kind::Local, Kind::Lsh].repeat(3));
    };
    let list = v
        .as_array()
        .filter(|l| !l.is_empty())
        .ok_or_else(|| raw.invalid("attn_layers", v, expected))?;
    raw.bound_layers("attn_layers", list.len() as u64)?;
    list.iter()
        .map(|e| match e.as_str() {
            Some("local") => Ok(Kind::Local),
            Some("lsh") => Ok(Kind::Lsh),
            _ => Err(raw.invalid("attn_layers", e, expected)),
        })
        .collect()
}

/// What `ReformerModelWithLMHead` asserts: a causal model (`is_decoder`) whose local and
/// LSH layers attend to no later chunk.
fn causal_switches(raw: &mut RawConfig<'_>, kinds: &[Kind]) -> Result<(), ConfigError> {
    if !raw.flag_or("is_decoder", false, REASON)? {
        let found = raw.value("is_decoder").cloned().unwrap_or(Value::Null);
        return Err(raw.invalid(
            "is_decoder",
            &found,
            "`true` (`ReformerModelWithLMHead` asserts `is_decoder`)",
        ));
    }
    for (kind, key) in [
        (Kind::Local, "local_num_chunks_after"),
        (Kind::Lsh, "lsh_num_chunks_after"),
    ] {
        let after = raw.uint(key)?.unwrap_or(0);
        if after != 0 && kinds.contains(&kind) {
            return Err(raw.invalid(
                key,
                &Value::from(after),
                "0 (`ReformerModelWithLMHead` asserts a causal model attends to no later chunk)",
            ));
        }
    }
    Ok(())
}

/// `AxialPositionEmbeddings`: per axis `i` of `axial_pos_embds_dim`, a weight of
/// `axial_pos_shape[i] × axial_pos_embds_dim[i]`; the dims must sum to `hidden_size`.
fn axial(raw: &mut RawConfig<'_>, hidden: u64) -> Result<Vec<Extra>, ConfigError> {
    let shape = uint_list(raw, "axial_pos_shape", &[64, 64])?;
    let dims = uint_list(raw, "axial_pos_embds_dim", &[64, 192])?;
    if dims.len() > shape.len() {
        let found = raw
            .value("axial_pos_embds_dim")
            .cloned()
            .unwrap_or(Value::Null);
        return Err(raw.invalid(
            "axial_pos_embds_dim",
            &found,
            "no more entries than `axial_pos_shape` (one weight per axis)",
        ));
    }
    let sum = raw.check(checked::sum(
        "sum of axial_pos_embds_dim",
        dims.iter().copied(),
    ))?;
    if sum != hidden {
        let found = raw
            .value("axial_pos_embds_dim")
            .cloned()
            .unwrap_or(Value::Null);
        return Err(raw.invalid(
            "axial_pos_embds_dim",
            &found,
            &format!(
                "factors summing to hidden_size {hidden} (AxialPositionEmbeddings refuses others)"
            ),
        ));
    }
    Ok(dims
        .iter()
        .zip(&shape)
        .enumerate()
        .map(|(i, (dim, rows))| {
            Extra::table(
                format!("reformer.embeddings.position_embeddings.weights.{i}"),
                "axial position embeddings",
                Category::PositionEmbedding,
                Expr::Lit(*rows),
                Expr::Lit(*dim),
            )
        })
        .collect())
}

/// A list of positive integers at `key`, or the class's default.
fn uint_list(raw: &mut RawConfig<'_>, key: &str, default: &[u64]) -> Result<Vec<u64>, ConfigError> {
    let Some(v) = raw.value(key) else {
        raw.assume(key, format!("{default:?}"), REASON);
        return Ok(default.to_vec());
    };
    let expected = "a non-empty list of positive integers";
    let list = v
        .as_array()
        .filter(|l| !l.is_empty())
        .ok_or_else(|| raw.invalid(key, v, expected))?;
    list.iter()
        .map(|e| {
            e.as_u64()
                .filter(|n| *n > 0)
                .ok_or_else(|| raw.invalid(key, e, expected))
        })
        .collect()
}

/// One layer per `attn_layers` entry: its attention as extras (no cached keys and values),
/// two `LayerNorm`s and the feed-forward.
fn layers(kinds: &[Kind], hidden: u64, (heads, head_dim): (u64, u64), ff: u64) -> Layers {
    let mut out = Layers::new();
    for kind in kinds {
        out.push(layer(*kind, hidden, (heads, head_dim), ff));
    }
    out
}

/// A `ReformerLayer` of one attention kind.
fn layer(kind: Kind, hidden: u64, (heads, head_dim): (u64, u64), ff: u64) -> Layer {
    let d = || Expr::sym(Sym::Hidden, hidden);
    let inner = || {
        Expr::product(vec![
            Expr::sym(Sym::Heads, heads),
            Expr::sym(Sym::HeadDim, head_dim),
        ])
    };
    let (part, names): (&'static str, &[&str]) = match kind {
        Kind::Local => ("local self-attention", &["query", "key", "value"]),
        Kind::Lsh => ("LSH self-attention", &["query_key", "value"]),
    };
    let mut extras: Vec<Extra> = names
        .iter()
        .map(|n| {
            Extra::linear(
                format!("attention.self_attention.{n}.weight"),
                part,
                Category::Attention,
                d(),
                inner(),
            )
        })
        .collect();
    extras.push(Extra::linear(
        "attention.output.dense.weight",
        part,
        Category::Attention,
        inner(),
        d(),
    ));
    Layer {
        attention: Attention::Absent,
        cross_attention: None,
        ffn: Ffn::Dense(mlp(hidden, ff, false, true)),
        norms: vec![Norm::layer_norm(hidden); 2],
        sliding_window: None,
        extras,
        state: None,
    }
}
