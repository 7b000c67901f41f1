//! Hugging Face `config.json` → [`ModelSpec`].
//!
//! One module per family of model types; each reads its keys with the defaults of its
//! `transformers` configuration class (5.24) and builds the layer kinds, and the runs of them,
//! that the modeling code would build. Semantics are taken from `configuration_*.py` and
//! `modeling_*.py`; the comments say which rule came from where.

mod decoder;
mod encoder;
mod facts;
mod families;
mod family;
mod moe;
mod quant;
mod raw;
mod runs;
mod seq2seq;
mod training;

use llmsize_core::ModelSpec;
use llmsize_core::spec::{OutputHead, StackRole};
use serde_json::{Map, Value};

use crate::error::ConfigError;
pub use raw::{RawConfig, layer_count_keys};

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
    /// `--assume TYPE`: read a config of a model type llmsize does not know as this known
    /// type, and mark every figure as an estimate.
    pub assume: Option<String>,
    /// `--text-only`: a vision-language (or audio) model's text tower alone: its vision and
    /// audio towers and projectors are left out.
    pub text_only: bool,
}

/// Every model type read exactly, in registry order: the list error messages, `presets` and
/// the README give.
#[must_use]
pub fn supported_model_types() -> Vec<&'static str> {
    families::model_types().collect()
}

/// A model type of the registry, as `llmsize presets --types` lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TypeInfo {
    /// The `model_type`.
    pub model_type: &'static str,
    /// Its transformers configuration class.
    pub config_class: &'static str,
    /// The class counted when `architectures` names none.
    pub architecture: &'static str,
    /// Read by the generic block with switches (data), not by code of its own.
    pub declarative: bool,
    /// The family file's group (`mixtures of experts`).
    pub group: &'static str,
}

/// Every model type of the registry, in registry order.
#[must_use]
pub fn model_type_infos() -> Vec<TypeInfo> {
    let mut seen = std::collections::HashSet::new();
    families::entries()
        .filter(|(_, f)| seen.insert(f.model_type))
        .map(|(group, f)| TypeInfo {
            model_type: f.model_type,
            config_class: f.config_class,
            architecture: f.architecture,
            declarative: matches!(f.read, family::Read::Block(_)),
            group,
        })
        .collect()
}

/// True when `model_type` is read exactly.
#[must_use]
pub fn is_supported(model_type: &str) -> bool {
    families::find(model_type).is_some()
}

/// The error for a model type the registry does not hold, with the nearest supported name.
pub(crate) fn unsupported(file: &str, model_type: &str) -> ConfigError {
    let norm = |s: &str| s.to_ascii_lowercase().replace(['-', '_', '.'], "");
    let wanted = norm(model_type);
    let near = families::model_types()
        .find(|t| {
            let t = norm(t);
            !wanted.is_empty() && (t == wanted || t.starts_with(&wanted) || wanted.starts_with(&t))
        })
        .map_or_else(String::new, |t| format!(" (did you mean `{t}`?)"));
    ConfigError::UnsupportedType {
        file: file.to_owned(),
        found: model_type.to_owned(),
        count: families::model_types().count(),
        near,
    }
}

/// Parse JSON text into an object map, with a message naming the file.
pub fn parse_json(text: &str, file: &str) -> Result<Map<String, Value>, ConfigError> {
    // `json.loads`, which transformers reads configs with, refuses a byte-order mark too.
    if text.starts_with('\u{feff}') {
        return Err(ConfigError::ByteOrderMark {
            file: file.to_owned(),
        });
    }
    let value: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            // Python's `json.dump` writes `Infinity` and `NaN` (Mamba-2's `time_step_limit`),
            // which JSON does not allow: they parse as a sentinel that a key read as a number
            // refuses by name (`raw::non_finite`), and a key nobody reads never matters.
            let err = || ConfigError::Json {
                file: file.to_owned(),
                line: e.line(),
                column: e.column(),
                message: e.to_string(),
            };
            let cleaned = non_finite_as_sentinel(text).ok_or_else(err)?;
            serde_json::from_str(&cleaned).map_err(|_| err())?
        }
    };
    match value {
        Value::Object(map) => Ok(map),
        other => Err(ConfigError::NotObject {
            file: file.to_owned(),
            found: raw::describe(&other),
        }),
    }
}

/// `text` with Python's non-finite literals (`NaN`, `Infinity`, `-Infinity`) outside strings
/// replaced by the string [`raw::NON_FINITE_PREFIX`] + the literal, or `None` when it has
/// none.
fn non_finite_as_sentinel(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let (mut in_string, mut escaped, mut changed) = (false, false, false);
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
        } else if c == '"' {
            in_string = true;
        } else if let Some(word) = ["-Infinity", "Infinity", "NaN"]
            .into_iter()
            .find(|w| rest.starts_with(w))
        {
            out.push_str(&Value::from(format!("{}{word}", raw::NON_FINITE_PREFIX)).to_string());
            rest = rest.get(word.len()..).unwrap_or_default();
            changed = true;
            continue;
        }
        out.push(c);
        rest = rest.get(c.len_utf8()..).unwrap_or_default();
    }
    changed.then_some(out)
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
    let (mut spec, read) = read_map_tracked(&map, file, name, options)?;
    if spec
        .extras
        .iter()
        .any(|e| e.category == llmsize_core::Category::Vision)
    {
        // The fixed number of text positions an image takes, where the config states it.
        spec.image_tokens = [
            "image_seq_length",
            "mm_tokens_per_image",
            "num_image_tokens",
            "num_query_tokens",
        ]
        .iter()
        .find_map(|k| {
            map.get(*k)
                .and_then(Value::as_u64)
                .filter(|n| *n > 0)
                .map(|n| (n, (*k).to_owned()))
        });
    }
    if options.text_only {
        let before = spec.extras.len();
        spec.extras.retain(|e| !e.category.is_modality());
        if spec.extras.len() < before {
            spec.assumptions.push(llmsize_core::spec::Assumption {
                field: "--text-only".into(),
                value: "true".into(),
                reason: "the text tower alone: vision and audio towers and projectors left out"
                    .into(),
            });
        } else {
            spec.warnings.push(
                "`--text-only`: the model has no vision or audio tower, so it changed nothing"
                    .into(),
            );
        }
    }
    // The release's quantization (read after the layers, whose module paths it matches).
    spec.quantization = quant::read(&map, &mut spec, file)?;
    // A `--set` of a key this model type never reads changes nothing: say so.
    for o in &options.overrides {
        let key = o.split_once('=').map_or(o.as_str(), |(k, _)| k).trim();
        let top = key.split('.').next().unwrap_or(key);
        if !read.contains(top) && top != "quantization_config" && top != "compression_config" {
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
    options: &ReadOptions,
) -> Result<(ModelSpec, std::collections::BTreeSet<String>), ConfigError> {
    let head = options.head;
    let mut raw = RawConfig::new(file, map);
    let model_type = match raw.value("model_type") {
        Some(Value::String(s)) => s.clone(),
        Some(v) => return Err(raw.invalid("model_type", v, "a string such as `llama`")),
        None => return Err(raw.missing("model_type", "a string such as `llama`")),
    };
    let (family, estimate) = match (families::find(&model_type), &options.assume) {
        (Some(f), _) => (f, None),
        // Never a silent guess: an unknown type is counted only when the user names the
        // known type to read it as, and then every output says it is an estimate.
        (None, Some(assumed)) => {
            let f = families::find(assumed).ok_or_else(|| ConfigError::UnknownAssume {
                given: assumed.clone(),
                supported: supported_model_types().join(", "),
            })?;
            let why = format!(
                "`model_type` `{model_type}` is not supported; read as `{assumed}` (`--assume {assumed}`), so every figure is an estimate"
            );
            (f, Some(why))
        }
        (None, None) => {
            return Err(unsupported(file, &model_type));
        }
    };
    let mut spec = match &family.read {
        family::Read::Block(b) => family::read_block(&mut raw, family, b)?,
        family::Read::Code(f) => f(&mut raw, family, head)?,
    };
    // The type's record beyond shapes (module names, peft's and the runtimes' rules).
    spec.facts = facts::of(&spec.model_type);
    // A layer that attends in a window of 0 tokens sees nothing: transformers accepts the
    // number but the mask and cache it builds are empty (llmsize would size a 1-token cache).
    // Where the file turns sliding off (`use_sliding_window: false`, which `Qwen2MoeConfig`
    // itself writes as `sliding_window: 0`), no layer slides and the 0 is never used.
    if spec.layer_kinds().any(|l| l.sliding_window == Some(0)) {
        return Err(raw.invalid(
            "sliding_window",
            &Value::from(0),
            "a window of at least 1 token, or null (no sliding window)",
        ));
    }
    if estimate.is_none() {
        let head_dim = spec.layer_kinds().find_map(|l| match &l.attention {
            llmsize_core::spec::Attention::Standard(a) => Some(a.head_dim),
            _ => None,
        });
        spec.training = training::profile(&model_type, map, head_dim, &spec.facts);
    }
    if let Some(why) = estimate {
        spec.warnings.push(why.clone());
        spec.estimate = Some(why);
        model_type.clone_into(&mut spec.model_type);
    } else if let Some(assumed) = &options.assume {
        spec.warnings.push(format!(
            "`--assume {assumed}` is ignored: `{model_type}` is read exactly"
        ));
    }
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
    raw.non_finite_read()?;
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
    fn head_dim_floors_where_the_class_floors_it() {
        use llmsize_core::spec::Attention;
        let head_dim = |text: &str| {
            let spec = read_config(text, "c.json", "c", &ReadOptions::default()).unwrap();
            match &spec.stacks[0].layers.kinds()[0].attention {
                Attention::Standard(a) => a.head_dim,
                other => panic!("{other:?}"),
            }
        };
        // GLM-4-MoE: `head_dim` absent is `hidden_size // num_attention_heads`: 100 // 3 = 33.
        let glm = r#"{"model_type":"glm4_moe","hidden_size":100,"num_attention_heads":3,
            "num_key_value_heads":1,"num_hidden_layers":2,"vocab_size":10,
            "intermediate_size":8,"moe_intermediate_size":4,"n_routed_experts":4,
            "num_experts_per_tok":2,"first_k_dense_replace":1}"#;
        assert_eq!(head_dim(glm), 33);
        // GLM-4V's text model floors whatever the config says: 96 // 4 = 24, not 7.
        let glm4v = r#"{"model_type":"glm4v_text","hidden_size":96,"num_attention_heads":4,
            "num_key_value_heads":2,"head_dim":7,"num_hidden_layers":1,"vocab_size":10,
            "intermediate_size":8}"#;
        assert_eq!(head_dim(glm4v), 24);
    }

    #[test]
    fn python_non_finite_literals_parse_as_sentinels() {
        let text = r#"{"time_step_limit": [0.0, Infinity], "x": -Infinity, "s": "NaN \" Infinity", "n": NaN}"#;
        let map = parse_json(text, "config.json").unwrap();
        let limit = map["time_step_limit"].as_array().unwrap();
        assert_eq!(limit[0], serde_json::json!(0.0));
        assert_eq!(raw::non_finite(&limit[1]), Some("Infinity"));
        assert_eq!(raw::non_finite(&map["x"]), Some("-Infinity"));
        assert_eq!(raw::non_finite(&map["n"]), Some("NaN"));
        // Inside a string they are text.
        assert_eq!(map["s"], Value::from("NaN \" Infinity"));
        assert_eq!(raw::non_finite(&map["s"]), None);
        // Still an error: a real syntax error, named by line and column.
        assert!(parse_json("{\"a\": Infinit}", "config.json").is_err());
    }

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
