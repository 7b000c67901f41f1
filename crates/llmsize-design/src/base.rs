//! The structure a search keeps: a real model's `config.json` (`--like`) or a block style's
//! (`--style`), the keys that hold its sizes, and the config of any shape built from it.
//!
//! Only sizes change: every other key of the base config (norms, biases, tying, activation,
//! rope, experts and top-k) is copied as it is, so the model a candidate describes is the base
//! model resized — read by the same reader, counted by the same code as `llmsize params`.

use serde_json::{Map, Value, json};

use crate::error::DesignError;

/// The preset whose block `--style moe` keeps.
pub const MOE_PRESET: &str = "Mixtral-8x7B-v0.1";

/// The varied sizes of one shape. Queries are `heads · head_dim = hidden` wide (every shape
/// of the search keeps the query width equal to the hidden size, as the models it resizes
/// do), keys and values `kv_heads · head_dim`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Shape {
    /// Hidden size d.
    pub hidden: u64,
    /// Layers L.
    pub layers: u64,
    /// Attention heads (`hidden / head_dim`).
    pub heads: u64,
    /// Key/value heads.
    pub kv_heads: u64,
    /// Width of one head.
    pub head_dim: u64,
    /// FFN inner size (one expert's, for a mixture of experts).
    pub ffn: u64,
    /// Vocabulary.
    pub vocab: u64,
}

impl Shape {
    /// Width over depth, d / L.
    #[must_use]
    #[expect(clippy::cast_precision_loss, reason = "a ratio to rank by")]
    pub fn aspect(&self) -> f64 {
        self.hidden as f64 / self.layers.max(1) as f64
    }
}

/// A block style (`--style`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum DesignStyle {
    /// LLaMA block: `SwiGLU`, `RMSNorm`, `RoPE`, no biases, untied head.
    Llama,
    /// GPT-2/3 block: `d_ff` = 4d, biases, `LayerNorm`, learned positions, tied head.
    Gpt,
    /// Mixtral's sparse block: LLaMA attention, routed `SwiGLU` experts.
    Moe,
}

impl DesignStyle {
    /// The name users type.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            DesignStyle::Llama => "llama",
            DesignStyle::Gpt => "gpt",
            DesignStyle::Moe => "moe",
        }
    }
}

/// Where the base came from, which decides the command that reproduces a candidate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// `--like NAME`: `llmsize params NAME --set key=value …`.
    Like(String),
    /// `--style llama|gpt`: `llmsize params --style … --hidden … --layers …`.
    Style(DesignStyle),
}

/// The keys of a config that hold the sizes a search varies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keys {
    /// Hidden size.
    pub hidden: &'static str,
    /// Layers.
    pub layers: &'static str,
    /// Attention heads.
    pub heads: &'static str,
    /// Key/value heads; `None`: the type has none (every head has its own keys).
    pub kv_heads: Option<&'static str>,
    /// FFN inner size (one expert's in a mixture of experts).
    pub ffn: &'static str,
    /// Vocabulary.
    pub vocab: &'static str,
    /// Head width, when the config states it.
    pub head_dim: Option<&'static str>,
    /// Routed experts, for a mixture of experts.
    pub experts: Option<&'static str>,
    /// Experts per token.
    pub top_k: Option<&'static str>,
}

fn first_key(map: &Map<String, Value>, names: &[&'static str]) -> Option<&'static str> {
    names
        .iter()
        .copied()
        .find(|k| map.get(*k).is_some_and(|v| v.as_u64().is_some()))
}

/// The structure kept: a config, its size keys, its own shape.
#[derive(Debug, Clone)]
pub struct Base {
    /// What it is called in output (`Meta-Llama-3-8B`, `llama style`).
    pub name: String,
    /// Where it came from.
    pub origin: Origin,
    /// The config every candidate's config is a copy of.
    pub config: Map<String, Value>,
    /// Its size keys.
    pub keys: Keys,
    /// Its own shape.
    pub shape: Shape,
    /// Routed experts (0 for a dense model).
    pub experts: u64,
    /// Experts per token (0 for a dense model).
    pub top_k: u64,
    /// The named model's own config, before `--vocab`, `--experts`, `--top-k`: a command's
    /// `--set` lists what differs from it.
    pub original: Map<String, Value>,
}

fn get(map: &Map<String, Value>, key: &str) -> Option<u64> {
    map.get(key).and_then(Value::as_u64)
}

impl Base {
    /// The base of a real model's parsed `config.json`: its size keys found by the names the
    /// `transformers` configuration classes use.
    pub fn like(name: &str, config: Map<String, Value>) -> Result<Self, DesignError> {
        const HIDDEN: &[&str] = &["hidden_size", "n_embd", "d_model"];
        const LAYERS: &[&str] = &["num_hidden_layers", "n_layer", "num_layers"];
        const HEADS: &[&str] = &["num_attention_heads", "n_head"];
        const VOCAB: &[&str] = &["vocab_size"];
        const EXPERTS: &[&str] = &["num_local_experts", "num_experts", "n_routed_experts"];
        let missing = |what: &str, names: &[&str]| DesignError::Unsupported {
            model: name.to_owned(),
            reason: format!(
                "its config has no {what} (looked for {})",
                names
                    .iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        let hidden = first_key(&config, HIDDEN).ok_or_else(|| missing("hidden size", HIDDEN))?;
        let layers = first_key(&config, LAYERS).ok_or_else(|| missing("layer count", LAYERS))?;
        let heads = first_key(&config, HEADS).ok_or_else(|| missing("head count", HEADS))?;
        let vocab = first_key(&config, VOCAB).ok_or_else(|| missing("vocabulary", VOCAB))?;
        let experts_key = first_key(&config, EXPERTS).filter(|k| get(&config, k).unwrap_or(0) > 1);
        // A mixture of experts varies one expert's width (`moe_intermediate_size` where the
        // type has it apart from a dense layer's `intermediate_size`).
        let ffn_names: &[&'static str] = if experts_key.is_some() {
            &["moe_intermediate_size", "intermediate_size", "ffn_dim"]
        } else {
            &["intermediate_size", "n_inner", "ffn_dim"]
        };
        let ffn_key = first_key(&config, ffn_names);
        let d = get(&config, hidden).unwrap_or(0);
        let l = get(&config, layers).unwrap_or(0);
        let nh = get(&config, heads).unwrap_or(0);
        if d == 0 || l == 0 || nh == 0 {
            return Err(DesignError::Unsupported {
                model: name.to_owned(),
                reason: "its hidden size, layers or heads is 0".into(),
            });
        }
        let head_dim_key = first_key(&config, &["head_dim"]);
        let head_dim = head_dim_key.and_then(|k| get(&config, k)).unwrap_or(d / nh);
        if head_dim * nh != d {
            return Err(DesignError::Unsupported {
                model: name.to_owned(),
                reason: format!(
                    "its queries are {nh} × {head_dim} = {} wide, not the hidden size {d}; \
                     the search keeps queries as wide as the hidden size",
                    nh * head_dim
                ),
            });
        }
        // GPT-2's `n_inner: null` means 4d.
        let (ffn, ffn_key) = match ffn_key {
            Some(k) => (get(&config, k).unwrap_or(0), k),
            None if hidden == "n_embd" => (4 * d, "n_inner"),
            None => return Err(missing("FFN size", ffn_names)),
        };
        let kv_key = first_key(&config, &["num_key_value_heads", "n_head_kv"]);
        let kv_heads = kv_key.and_then(|k| get(&config, k)).unwrap_or(nh);
        let experts = experts_key.and_then(|k| get(&config, k)).unwrap_or(0);
        let top_k_key = experts_key.and(first_key(&config, &["num_experts_per_tok", "moe_top_k"]));
        let top_k = top_k_key.and_then(|k| get(&config, k)).unwrap_or(0);
        let shape = Shape {
            hidden: d,
            layers: l,
            heads: nh,
            kv_heads,
            head_dim,
            ffn,
            vocab: get(&config, vocab).unwrap_or(0),
        };
        Ok(Base {
            name: name.to_owned(),
            origin: Origin::Like(name.to_owned()),
            keys: Keys {
                hidden,
                layers,
                heads,
                kv_heads: kv_key,
                ffn: ffn_key,
                vocab,
                head_dim: head_dim_key,
                experts: experts_key,
                top_k: top_k_key,
            },
            shape,
            experts,
            top_k,
            original: config.clone(),
            config,
        })
    }

    /// The base of a block style: a config of the type that builds that block, with the
    /// defaults of `llmsize params --style` (vocabulary 50,257 and 2,048 learned positions
    /// for GPT; 32,000 for LLaMA; Mixtral's block for MoE).
    pub fn style(style: DesignStyle) -> Result<Self, DesignError> {
        let config = match style {
            DesignStyle::Gpt => json!({
                "model_type": "gpt2",
                "architectures": ["GPT2LMHeadModel"],
                "activation_function": "gelu_new",
                "n_embd": 768, "n_layer": 12, "n_head": 12, "n_inner": 3072,
                "n_positions": 2048, "vocab_size": 50257,
                "layer_norm_epsilon": 1e-5,
                "tie_word_embeddings": true
            }),
            DesignStyle::Llama => json!({
                "model_type": "llama",
                "architectures": ["LlamaForCausalLM"],
                "hidden_act": "silu",
                "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
                "num_key_value_heads": 32, "intermediate_size": 11008, "vocab_size": 32000,
                "max_position_embeddings": 4096,
                "attention_bias": false, "mlp_bias": false,
                "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
                "tie_word_embeddings": false
            }),
            DesignStyle::Moe => {
                // Mixtral's own config: the command names the preset.
                let preset = llmsize_adapters::presets::find(MOE_PRESET).ok_or_else(|| {
                    DesignError::Internal(format!("the preset `{MOE_PRESET}` is missing"))
                })?;
                let map = llmsize_adapters::hf_config::parse_json(preset.config, preset.id)
                    .map_err(|e| DesignError::Internal(e.to_string()))?;
                Value::Object(map)
            }
        };
        let Value::Object(map) = config else {
            return Err(DesignError::Internal(
                "a style's config is not an object".into(),
            ));
        };
        let mut base = Base::like(&format!("{} style", style.name()), map)?;
        base.origin = Origin::Style(style);
        Ok(base)
    }

    /// Set the experts and top-k of a mixture of experts (`--experts`, `--top-k`).
    pub fn set_experts(
        &mut self,
        experts: Option<u64>,
        top_k: Option<u64>,
    ) -> Result<(), DesignError> {
        if experts.is_none() && top_k.is_none() {
            return Ok(());
        }
        let (Some(ek), Some(kk)) = (self.keys.experts, self.keys.top_k) else {
            return Err(DesignError::Unsupported {
                model: self.name.clone(),
                reason: "it is not a mixture of experts: `--experts` and `--top-k` need one \
                         (`--style moe`, or `--like` a MoE model)"
                    .into(),
            });
        };
        if let Some(e) = experts {
            self.experts = e;
            self.config.insert(ek.to_owned(), json!(e));
        }
        if let Some(k) = top_k {
            self.top_k = k;
            self.config.insert(kk.to_owned(), json!(k));
        }
        Ok(())
    }

    /// Set the vocabulary every shape has (`--vocab`).
    pub fn set_vocab(&mut self, vocab: u64) {
        self.shape.vocab = vocab;
        self.config.insert(self.keys.vocab.to_owned(), json!(vocab));
    }

    /// The key/value pairs that turn the base config into `shape`'s, in a stable order.
    #[must_use]
    pub fn changes(&self, shape: &Shape) -> Vec<(String, Value)> {
        let k = &self.keys;
        let mut out = vec![
            (k.hidden.to_owned(), json!(shape.hidden)),
            (k.layers.to_owned(), json!(shape.layers)),
            (k.heads.to_owned(), json!(shape.heads)),
        ];
        if let Some(kv) = k.kv_heads {
            out.push((kv.to_owned(), json!(shape.kv_heads)));
        }
        if let Some(hd) = k.head_dim {
            out.push((hd.to_owned(), json!(shape.head_dim)));
        }
        out.push((k.ffn.to_owned(), json!(shape.ffn)));
        out.push((k.vocab.to_owned(), json!(shape.vocab)));
        // Qwen2's sliding-window layer bound follows the depth when it spans every layer.
        if get(&self.config, "max_window_layers") == Some(self.shape.layers) {
            out.push(("max_window_layers".to_owned(), json!(shape.layers)));
        }
        out
    }

    /// The complete `config.json` of `shape`.
    #[must_use]
    pub fn config_of(&self, shape: &Shape) -> Map<String, Value> {
        let mut map = self.config.clone();
        for (k, v) in self.changes(shape) {
            map.insert(k, v);
        }
        map
    }

    /// The `llmsize params` command that counts `shape`: the style's flags, or the like
    /// model's name with the changed keys as `--set`.
    #[must_use]
    pub fn command(&self, shape: &Shape) -> String {
        match &self.origin {
            Origin::Style(DesignStyle::Gpt) => format!(
                "llmsize params --style gpt --hidden {} --layers {} --heads {} --ffn {} --vocab {}",
                shape.hidden, shape.layers, shape.heads, shape.ffn, shape.vocab
            ),
            Origin::Style(DesignStyle::Llama) => format!(
                "llmsize params --style llama --hidden {} --layers {} --heads {} --kv-heads {} \
                 --ffn {} --vocab {}",
                shape.hidden, shape.layers, shape.heads, shape.kv_heads, shape.ffn, shape.vocab
            ),
            Origin::Style(DesignStyle::Moe) | Origin::Like(_) => {
                let name = match &self.origin {
                    Origin::Like(n) => n.clone(),
                    Origin::Style(_) => MOE_PRESET.to_owned(),
                };
                let mut cmd = format!("llmsize params {}", shell_word(&name));
                let mut changes = self.changes(shape);
                // `--experts`, `--top-k`, which may differ from the named model's.
                for key in [self.keys.experts, self.keys.top_k].into_iter().flatten() {
                    if let Some(v) = self.config.get(key) {
                        changes.push((key.to_owned(), v.clone()));
                    }
                }
                for (k, v) in changes {
                    // Only what differs from the named model's own config.
                    if self.original(&k) != Some(&v) {
                        cmd.push_str(" --set ");
                        cmd.push_str(&shell_word(&format!("{k}={v}")));
                    }
                }
                cmd
            }
        }
    }

    /// The `llmsize train` command that measures `shape` with `flags`: the like model's name
    /// (or the MoE style's preset) with `--set`, else the config's JSON text, which `train`
    /// reads as a model.
    #[must_use]
    pub fn train_command(&self, shape: &Shape, flags: &str) -> String {
        let model = match &self.origin {
            Origin::Style(DesignStyle::Moe) | Origin::Like(_) => {
                let cmd = self.command(shape);
                cmd.strip_prefix("llmsize params ")
                    .map_or(cmd.clone(), str::to_owned)
            }
            Origin::Style(_) => shell_word(&Value::Object(self.config_of(shape)).to_string()),
        };
        if flags.is_empty() {
            format!("llmsize train {model}")
        } else {
            format!("llmsize train {model} {flags}")
        }
    }

    fn original(&self, key: &str) -> Option<&Value> {
        self.original.get(key)
    }
}

/// A word for a POSIX shell: as is when it is plain, else in single quotes.
fn shell_word(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._/-=:+,".contains(&b))
    {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}
