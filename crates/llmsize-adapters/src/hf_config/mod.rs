//! Hugging Face `config.json` → [`ModelSpec`].
//!
//! One module per family of model types; each reads its keys with the defaults of its
//! `transformers` configuration class (5.24) and builds the layer kinds, and the runs of them,
//! that the modeling code would build. Semantics are taken from `configuration_*.py` and
//! `modeling_*.py`; the comments say which rule came from where.

mod decoder;
mod encoder;
mod moe;
mod raw;
mod seq2seq;

use llmsize_core::ModelSpec;
use llmsize_core::spec::{OutputHead, StackRole};
use serde_json::{Map, Value};

use crate::error::ConfigError;
pub use raw::RawConfig;

/// Which head to count, for model types that have several (encoders).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum HeadChoice {
    /// The class named in `architectures` (the checkpoint's own), else the LM head.
    #[default]
    #[cfg_attr(
        feature = "clap",
        value(help = "The class named in the config's `architectures`")
    )]
    Config,
    /// The bare `AutoModel` (BERT's with pooler), as papers quote.
    #[cfg_attr(
        feature = "clap",
        value(help = "The bare model (`AutoModel`; BERT's with pooler)")
    )]
    Base,
    /// The language-model head (causal or masked).
    #[cfg_attr(
        feature = "clap",
        value(help = "The language-model head (causal or masked)")
    )]
    Lm,
}

/// How to read a config.
#[derive(Debug, Clone, Default)]
pub struct ReadOptions {
    /// `--set KEY=VALUE` overrides, applied before reading.
    pub overrides: Vec<String>,
    /// The head to count.
    pub head: HeadChoice,
}

/// How a model type is read: one reader per family module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reader {
    Gpt2,
    Gptj,
    GptNeox,
    Opt,
    Bloom,
    Falcon,
    Phi,
    LlamaLike,
    Moe,
    DeepSeek,
    Encoder,
    T5,
    Bart,
}

/// Every model type read exactly, with its reader: the one registry that dispatches and
/// that error messages list.
const REGISTRY: &[(&str, Reader)] = &[
    ("gpt2", Reader::Gpt2),
    ("gptj", Reader::Gptj),
    ("gpt_neox", Reader::GptNeox),
    ("opt", Reader::Opt),
    ("bloom", Reader::Bloom),
    ("falcon", Reader::Falcon),
    ("llama", Reader::LlamaLike),
    ("mistral", Reader::LlamaLike),
    ("qwen2", Reader::LlamaLike),
    ("qwen3", Reader::LlamaLike),
    ("gemma", Reader::LlamaLike),
    ("gemma2", Reader::LlamaLike),
    ("gemma3_text", Reader::LlamaLike),
    ("phi", Reader::Phi),
    ("phi3", Reader::LlamaLike),
    ("starcoder2", Reader::LlamaLike),
    ("olmo2", Reader::LlamaLike),
    ("mixtral", Reader::Moe),
    ("qwen2_moe", Reader::Moe),
    ("qwen3_moe", Reader::Moe),
    ("olmoe", Reader::Moe),
    ("granitemoe", Reader::Moe),
    ("deepseek_v2", Reader::DeepSeek),
    ("deepseek_v3", Reader::DeepSeek),
    ("gpt_oss", Reader::Moe),
    ("bert", Reader::Encoder),
    ("roberta", Reader::Encoder),
    ("distilbert", Reader::Encoder),
    ("modernbert", Reader::Encoder),
    ("t5", Reader::T5),
    ("bart", Reader::Bart),
];

/// Model types read exactly (the registry's keys), as listed in error messages.
#[allow(
    clippy::indexing_slicing,
    reason = "evaluated at compile time: an index out of range fails the build"
)]
pub const SUPPORTED: [&str; REGISTRY.len()] = {
    let mut out = [""; REGISTRY.len()];
    let mut i = 0;
    while i < REGISTRY.len() {
        out[i] = REGISTRY[i].0;
        i += 1;
    }
    out
};

/// Parse JSON text into an object map, with a message naming the file.
pub fn parse_json(text: &str, file: &str) -> Result<Map<String, Value>, ConfigError> {
    let value: Value = serde_json::from_str(text).map_err(|e| ConfigError::Json {
        file: file.to_owned(),
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    })?;
    match value {
        Value::Object(map) => Ok(map),
        other => Err(ConfigError::NotObject {
            file: file.to_owned(),
            found: raw::describe(&other),
        }),
    }
}

/// Apply one `KEY=VALUE` override. The value is read as JSON when it parses (`8`, `true`,
/// `null`, `[1,2]`), else as a string; `a.b=1` sets a nested key.
pub fn apply_override(map: &mut Map<String, Value>, arg: &str) -> Result<(), ConfigError> {
    let err = |problem: &str| ConfigError::Override {
        given: arg.to_owned(),
        problem: problem.to_owned(),
    };
    let (key, value) = arg
        .split_once('=')
        .ok_or_else(|| err("expected `KEY=VALUE`, e.g. `num_key_value_heads=8`"))?;
    let key = key.trim();
    if key.is_empty() || key.split('.').any(str::is_empty) {
        return Err(err("the key is empty"));
    }
    let value =
        serde_json::from_str(value.trim()).unwrap_or_else(|_| Value::String(value.to_owned()));
    let mut target = map;
    let mut parts = key.split('.').peekable();
    while let Some(part) = parts.next() {
        if parts.peek().is_none() {
            target.insert(part.to_owned(), value);
            return Ok(());
        }
        let entry = target
            .entry(part.to_owned())
            .or_insert_with(|| Value::Object(Map::new()));
        target = entry
            .as_object_mut()
            .ok_or_else(|| err(&format!("`{part}` is not an object")))?;
    }
    Ok(())
}

/// Read a `config.json` text into a spec named `name`; `file` names it in messages.
pub fn read_config(
    text: &str,
    file: &str,
    name: &str,
    options: &ReadOptions,
) -> Result<ModelSpec, ConfigError> {
    read_config_map(parse_json(text, file)?, file, name, options)
}

/// [`read_config`] of a config already parsed (GGUF metadata mapped to a config).
pub fn read_config_map(
    mut map: Map<String, Value>,
    file: &str,
    name: &str,
    options: &ReadOptions,
) -> Result<ModelSpec, ConfigError> {
    for o in &options.overrides {
        apply_override(&mut map, o)?;
    }
    let (mut spec, read) = read_map_tracked(&map, file, name, options.head)?;
    // A `--set` of a key this model type never reads changes nothing: say so.
    for o in &options.overrides {
        let key = o.split_once('=').map_or(o.as_str(), |(k, _)| k).trim();
        let top = key.split('.').next().unwrap_or(key);
        if !read.contains(top) {
            spec.warnings.push(format!(
                "`--set {o}`: `{}` models do not read `{top}`, so it changed nothing",
                spec.model_type
            ));
        }
    }
    llmsize_core::count(&spec).map_err(|source| ConfigError::Spec {
        file: file.to_owned(),
        source,
    })?;
    Ok(spec)
}

/// Read an already parsed config, and return the keys that were looked up.
fn read_map_tracked(
    map: &Map<String, Value>,
    file: &str,
    name: &str,
    head: HeadChoice,
) -> Result<(ModelSpec, std::collections::BTreeSet<String>), ConfigError> {
    let mut raw = RawConfig::new(file, map);
    let model_type = match raw.value("model_type") {
        Some(Value::String(s)) => s.clone(),
        Some(v) => return Err(raw.invalid("model_type", v, "a string such as `llama`")),
        None => return Err(raw.missing("model_type", "a string such as `llama`")),
    };
    let reader = REGISTRY
        .iter()
        .find(|(t, _)| *t == model_type)
        .map(|(_, r)| *r);
    let mut spec = match (reader, model_type.as_str()) {
        (Some(Reader::Gpt2), _) => decoder::gpt2(&mut raw)?,
        (Some(Reader::Gptj), _) => decoder::gptj(&mut raw)?,
        (Some(Reader::GptNeox), _) => decoder::gpt_neox(&mut raw)?,
        (Some(Reader::Opt), _) => decoder::opt(&mut raw)?,
        (Some(Reader::Bloom), _) => decoder::bloom(&mut raw)?,
        (Some(Reader::Falcon), _) => decoder::falcon(&mut raw)?,
        (Some(Reader::Phi), _) => decoder::phi(&mut raw)?,
        (Some(Reader::LlamaLike), t) => decoder::llama_like(&mut raw, t)?,
        (Some(Reader::Moe), t) => moe::moe(&mut raw, t)?,
        (Some(Reader::DeepSeek), t) => moe::deepseek(&mut raw, t)?,
        (Some(Reader::Encoder), t) => encoder::encoder(&mut raw, t, head)?,
        (Some(Reader::T5), _) => seq2seq::t5(&mut raw, head)?,
        (Some(Reader::Bart), _) => seq2seq::bart(&mut raw, head)?,
        (None, other) if decoder::looks_llama_like(&raw) => {
            let mut spec = decoder::llama_like(&mut raw, "llama")?;
            spec.warnings.push(format!(
                "`model_type` `{other}` is not supported; it has llama-style keys, so it was counted as a llama-style decoder (RMSNorm, SwiGLU, no biases) — check the result"
            ));
            other.clone_into(&mut spec.model_type);
            spec
        }
        (None, other) => {
            return Err(ConfigError::Unsupported {
                file: file.to_owned(),
                found: other.to_owned(),
                supported: SUPPORTED.join(", "),
            });
        }
    };
    // `--head base` on a decoder: the bare `…Model`, without the output head.
    let decoder_only = spec.stacks.iter().all(|s| s.role == StackRole::Decoder);
    if head == HeadChoice::Base && decoder_only && spec.head != OutputHead::None {
        spec.head = OutputHead::None;
        for suffix in ["ForCausalLM", "LMHeadModel"] {
            if let Some(stem) = spec.architecture.strip_suffix(suffix) {
                spec.architecture = format!("{stem}Model");
                break;
            }
        }
    }
    name.clone_into(&mut spec.name);
    spec.context_length = [
        "max_position_embeddings",
        "n_positions",
        "n_ctx",
        "seq_length",
    ]
    .iter()
    .find_map(|k| raw.value(k).and_then(Value::as_u64))
    .filter(|n| *n > 0);
    // Keys that matter later (sliding windows are read for the KV cache) count as read.
    for k in [
        "sliding_window",
        "layer_types",
        "use_sliding_window",
        "max_window_layers",
        "sliding_window_pattern",
    ] {
        raw.has(k);
    }
    spec.assumptions = std::mem::take(&mut raw.assumptions);
    spec.symbol_sources = std::mem::take(&mut raw.sources);
    Ok((spec, raw.read.into_inner()))
}

/// A bare `…Model` class (`BertModel`, `BartModel`): no output head. `GPT2LMHeadModel` and
/// `T5WithLMHeadModel` end in `Model` too but carry one.
pub(crate) fn is_bare(architecture: &str) -> bool {
    architecture.ends_with("Model") && !architecture.ends_with("LMHeadModel")
}

/// The model class from `architectures[0]`, or `default`.
pub(crate) fn architecture(raw: &RawConfig<'_>, default: &str) -> String {
    raw.value("architectures")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .and_then(Value::as_str)
        .map_or_else(|| default.to_owned(), str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn override_sets_scalars_and_nested_keys() {
        let mut m = Map::new();
        apply_override(&mut m, "num_key_value_heads=8").unwrap();
        apply_override(&mut m, "tie_word_embeddings=true").unwrap();
        apply_override(&mut m, "q_lora_rank=null").unwrap();
        apply_override(&mut m, "rope_scaling.type=linear").unwrap();
        assert_eq!(m["num_key_value_heads"], Value::from(8));
        assert_eq!(m["tie_word_embeddings"], Value::Bool(true));
        assert_eq!(m["q_lora_rank"], Value::Null);
        assert_eq!(m["rope_scaling"]["type"], Value::from("linear"));
        assert!(apply_override(&mut m, "novalue").is_err());
        assert!(apply_override(&mut m, "=3").is_err());
    }
}
