//! A GGUF file's metadata → the equivalent Hugging Face config, so `params`, `memory` and
//! `flops` of a `.gguf` use the same engine as a `config.json`.
//!
//! llama.cpp writes the sizes under `{arch}.*` keys (`llama.embedding_length`,
//! `llama.attention.head_count_kv`, …); each supported architecture maps them back to the
//! `config.json` keys of its `transformers` model type. Whether the head is tied is read from
//! the tensors: a file without `output.weight` ties it.

use llmsize_core::{ModelSpec, SpecError};
use llmsize_weights::gguf::{GgufHeader, GgufValue};
use serde_json::{Map, Value};

use crate::error::ConfigError;
use crate::hf_config::{ReadOptions, read_config_map};

/// GGUF architectures read from metadata, with the `model_type` each maps to: the one
/// registry that dispatches and that error messages list (`llama` with experts is Mixtral).
const ARCHS: &[(&str, &str)] = &[
    ("llama", "llama"),
    ("qwen2", "qwen2"),
    ("qwen3", "qwen3"),
    ("qwen2moe", "qwen2_moe"),
    ("qwen3moe", "qwen3_moe"),
    ("gemma", "gemma"),
    ("gemma2", "gemma2"),
    ("gemma3", "gemma3_text"),
    ("phi3", "phi3"),
    ("starcoder2", "starcoder2"),
    ("olmo2", "olmo2"),
    ("gpt2", "gpt2"),
    ("deepseek2", "deepseek_v3"),
    ("gpt-oss", "gpt_oss"),
];

/// GGUF architectures read from metadata (the registry's keys).
#[allow(
    clippy::indexing_slicing,
    reason = "evaluated at compile time: an index out of range fails the build"
)]
pub const SUPPORTED_ARCHS: [&str; ARCHS.len()] = {
    let mut out = [""; ARCHS.len()];
    let mut i = 0;
    while i < ARCHS.len() {
        out[i] = ARCHS[i].0;
        i += 1;
    }
    out
};

/// Build the config map, or say why not.
pub fn config_from_gguf(
    header: &GgufHeader,
    file: &str,
) -> Result<Map<String, Value>, ConfigError> {
    let arch = match header.get("general.architecture") {
        None => {
            return Err(ConfigError::Missing {
                file: file.to_owned(),
                key: "general.architecture".into(),
                expected: "the model architecture (e.g. `llama`)".into(),
            });
        }
        Some(v) => v.as_str().ok_or_else(|| ConfigError::Invalid {
            file: file.to_owned(),
            key: "general.architecture".into(),
            found: v.describe(),
            expected: "a string naming the model architecture (e.g. `llama`)".into(),
        })?,
    };
    // A present key with a value of the wrong type is named with its GGUF type and value, not
    // taken for an absent one.
    let get = |suffix: &str| -> Result<Option<u64>, ConfigError> {
        match header.arch_value(suffix) {
            None => Ok(None),
            Some(v) => v.as_u64().map(Some).ok_or_else(|| ConfigError::Invalid {
                file: file.to_owned(),
                key: format!("{arch}.{suffix}"),
                found: v.describe(),
                expected: "an unsigned integer".into(),
            }),
        }
    };
    let need = |suffix: &str| -> Result<u64, ConfigError> {
        let key = format!("{arch}.{suffix}");
        match get(suffix)? {
            None => Err(ConfigError::Missing {
                file: file.to_owned(),
                key,
                expected: "a positive integer".into(),
            }),
            Some(0) => Err(ConfigError::Invalid {
                file: file.to_owned(),
                key,
                found: header
                    .arch_value(suffix)
                    .map_or_else(|| "0".into(), GgufValue::describe),
                expected: "a positive integer".into(),
            }),
            Some(n) => Ok(n),
        }
    };
    let experts = get("expert_count")?.unwrap_or(0);
    let model_type = match ARCHS.iter().find(|(a, _)| *a == arch) {
        Some(("llama", _)) if experts > 0 => "mixtral",
        Some((_, model_type)) => *model_type,
        None => {
            return Err(ConfigError::Unsupported {
                file: file.to_owned(),
                found: format!("{arch} (GGUF architecture)"),
                supported: format!(
                    "{}; `llmsize inspect` counts any GGUF from its tensors",
                    SUPPORTED_ARCHS.join(", ")
                ),
            });
        }
    };
    let mut m = Map::new();
    let mut set = |k: &str, v: Value| {
        m.insert(k.to_owned(), v);
    };
    set("model_type", Value::from(model_type));
    let hidden = need("embedding_length")?;
    let heads = need("attention.head_count")?;
    set("hidden_size", hidden.into());
    set("num_hidden_layers", need("block_count")?.into());
    set("num_attention_heads", heads.into());
    if let Some(kv) = get("attention.head_count_kv")? {
        set("num_key_value_heads", kv.into());
    }
    let vocab = header.vocab_size().or_else(|| {
        header
            .tensor("token_embd.weight")
            .and_then(|t| t.dims.get(1).copied())
    });
    set(
        "vocab_size",
        vocab
            .ok_or_else(|| ConfigError::Missing {
                file: file.to_owned(),
                key: "tokenizer.ggml.tokens".into(),
                expected: "the vocabulary (or a `token_embd.weight` tensor)".into(),
            })?
            .into(),
    );
    if let Some(ff) = get("feed_forward_length")? {
        set("intermediate_size", ff.into());
    }
    if let Some(k) = get("attention.key_length")?.filter(|k| Some(*k) != hidden.checked_div(heads))
    {
        set("head_dim", k.into());
    } else if matches!(
        model_type,
        "qwen3" | "qwen3_moe" | "gemma" | "gemma2" | "gemma3_text"
    ) {
        // These classes default `head_dim` to a constant, not hidden / heads: give it.
        if let Some(k) = get("attention.key_length")? {
            set("head_dim", k.into());
        }
    }
    if let Some(w) = get("attention.sliding_window")? {
        set("sliding_window", w.into());
    }
    if let Some(c) = get("context_length")? {
        set("max_position_embeddings", c.into());
        if model_type == "gpt2" {
            set("n_positions", c.into());
        }
    }
    let tied = header.tensor("output.weight").is_none();
    set("tie_word_embeddings", Value::Bool(tied));
    if experts > 0 {
        set("num_local_experts", experts.into());
        set("num_experts", experts.into());
        set("n_routed_experts", experts.into());
        if let Some(k) = get("expert_used_count")? {
            set("num_experts_per_tok", k.into());
        }
        if let Some(f) = get("expert_feed_forward_length")? {
            set("moe_intermediate_size", f.into());
            if matches!(model_type, "mixtral" | "gpt_oss") {
                set("intermediate_size", f.into());
            }
        }
        if let Some(f) = get("expert_shared_feed_forward_length")? {
            set("shared_expert_intermediate_size", f.into());
        }
    }
    if model_type == "deepseek_v3" {
        set(
            "first_k_dense_replace",
            get("leading_dense_block_count")?.unwrap_or(0).into(),
        );
        set(
            "n_shared_experts",
            get("expert_shared_count")?.unwrap_or(0).into(),
        );
        set(
            "q_lora_rank",
            get("attention.q_lora_rank")?
                .filter(|r| *r > 0)
                .map_or(Value::Null, Value::from),
        );
        set("kv_lora_rank", need("attention.kv_lora_rank")?.into());
        let rope = need("rope.dimension_count")?;
        // Newer llama.cpp converts MLA with `key_length` = the cached latent width and puts
        // the per-head sizes in `*_length_mla`.
        let key = match get("attention.key_length_mla")? {
            Some(k) => k,
            None => need("attention.key_length")?,
        };
        let value = match get("attention.value_length_mla")? {
            Some(v) => v,
            None => need("attention.value_length")?,
        };
        set("qk_rope_head_dim", rope.into());
        let nope = key.checked_sub(rope).ok_or_else(|| ConfigError::Invalid {
            file: file.to_owned(),
            key: format!("{arch}.attention.key_length"),
            found: key.to_string(),
            expected: format!("at least `{arch}.rope.dimension_count` ({rope})"),
        })?;
        set("qk_nope_head_dim", nope.into());
        set("v_head_dim", value.into());
        m.remove("head_dim");
    }
    if model_type == "gpt2" {
        m.insert("n_embd".into(), hidden.into());
    }
    Ok(m)
}

/// The `config.json` keys [`config_from_gguf`] writes, with the GGUF key each comes from
/// (`{arch}.` + suffix; `tokenizer.ggml.tokens` as is): a message about a config key names
/// the key the file has.
const FROM_GGUF: &[(&str, &str)] = &[
    ("hidden_size", "embedding_length"),
    ("n_embd", "embedding_length"),
    ("num_attention_heads", "attention.head_count"),
    ("num_hidden_layers", "block_count"),
    ("num_key_value_heads", "attention.head_count_kv"),
    ("vocab_size", "tokenizer.ggml.tokens"),
    ("intermediate_size", "feed_forward_length"),
    ("head_dim", "attention.key_length"),
    ("sliding_window", "attention.sliding_window"),
    ("max_position_embeddings", "context_length"),
    ("n_positions", "context_length"),
    ("num_local_experts", "expert_count"),
    ("num_experts", "expert_count"),
    ("n_routed_experts", "expert_count"),
    ("num_experts_per_tok", "expert_used_count"),
    ("moe_intermediate_size", "expert_feed_forward_length"),
    (
        "shared_expert_intermediate_size",
        "expert_shared_feed_forward_length",
    ),
    ("first_k_dense_replace", "leading_dense_block_count"),
    ("n_shared_experts", "expert_shared_count"),
    ("q_lora_rank", "attention.q_lora_rank"),
    ("kv_lora_rank", "attention.kv_lora_rank"),
    ("qk_rope_head_dim", "rope.dimension_count"),
    ("qk_nope_head_dim", "attention.key_length"),
    ("v_head_dim", "attention.value_length"),
];

/// An error of reading the config made from a GGUF file, with the config key it names
/// replaced by the GGUF key it came from (its type and value when present): the file has
/// `llama.feed_forward_length`, not `intermediate_size`. Keys set by `--set` (`overrides`)
/// are the user's and stay as given.
#[must_use]
pub fn name_gguf_keys(err: ConfigError, header: &GgufHeader, overrides: &[String]) -> ConfigError {
    let arch = header.architecture().unwrap_or("general");
    let overridden = |key: &str| {
        overrides
            .iter()
            .any(|o| o.split('=').next().map(str::trim) == Some(key))
    };
    let gguf_key = |key: &str| -> Option<(String, Option<&GgufValue>)> {
        if overridden(key) {
            return None;
        }
        let (_, suffix) = FROM_GGUF.iter().find(|(k, _)| *k == key)?;
        Some(if suffix.starts_with("tokenizer.") {
            ((*suffix).to_owned(), header.get(suffix))
        } else {
            (format!("{arch}.{suffix}"), header.arch_value(suffix))
        })
    };
    match err {
        ConfigError::Missing {
            file,
            key,
            expected,
        } => match gguf_key(&key) {
            Some((gguf, _)) => ConfigError::Missing {
                file,
                key: gguf,
                expected,
            },
            None => ConfigError::Missing {
                file,
                key,
                expected,
            },
        },
        ConfigError::Invalid {
            file,
            key,
            found,
            expected,
        } => match gguf_key(&key) {
            Some((gguf, value)) => ConfigError::Invalid {
                file,
                key: gguf,
                found: value.map_or(found, GgufValue::describe),
                expected,
            },
            None => ConfigError::Invalid {
                file,
                key,
                found,
                expected,
            },
        },
        ConfigError::Spec { file, source } => {
            let rename = |field: String| gguf_key(&field).map_or(field, |(k, _)| k);
            let source = match source {
                SpecError::KvHeadsDoNotDivide { heads, kv_heads } => {
                    let key = format!("{arch}.attention.head_count_kv");
                    return ConfigError::Invalid {
                        found: header
                            .arch_value("attention.head_count_kv")
                            .map_or_else(|| kv_heads.to_string(), GgufValue::describe),
                        file,
                        key,
                        expected: format!(
                            "a divisor of `{arch}.attention.head_count` = {heads} (whole groups of query heads per key/value head)"
                        ),
                    };
                }
                SpecError::Zero { field } => SpecError::Zero {
                    field: rename(field),
                },
                SpecError::Invalid {
                    field,
                    found,
                    expected,
                } => SpecError::Invalid {
                    field: rename(field),
                    found,
                    expected,
                },
                SpecError::HeadsDoNotDivide {
                    heads_field,
                    heads,
                    hidden_field,
                    hidden,
                } => SpecError::HeadsDoNotDivide {
                    heads_field: rename(heads_field),
                    heads,
                    hidden_field: rename(hidden_field),
                    hidden,
                },
                other => other,
            };
            ConfigError::Spec { file, source }
        }
        other => other,
    }
}

/// The spec of a GGUF file, from its metadata.
pub fn spec_from_gguf(
    header: &GgufHeader,
    file: &str,
    name: &str,
) -> Result<ModelSpec, ConfigError> {
    // The same reader as a config file (and as the engine's GGUF path).
    read_config_map(
        config_from_gguf(header, file)?,
        file,
        name,
        &ReadOptions::default(),
    )
    .map_err(|e| name_gguf_keys(e, header, &[]))
}
