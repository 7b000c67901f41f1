//! The training profile of each model type whose training step is derived: which layer code
//! (`modeling_*.py`) it runs, which dropouts are active, its rotary width and peft's module
//! names. Read from the same `config.json` as the shapes, with the configuration classes'
//! defaults (transformers 5.24).

use llmsize_core::facts::TypeFacts;
use llmsize_core::profile::{LayerStyle, TrainingProfile};
use serde_json::{Map, Value};

fn num(map: &Map<String, Value>, key: &str, default: f64) -> f64 {
    map.get(key).and_then(Value::as_f64).unwrap_or(default)
}

/// The profile of `model_type`, or `None` where its training step is not derived.
pub(crate) fn profile(
    model_type: &str,
    map: &Map<String, Value>,
    head_dim: Option<u64>,
    facts: &TypeFacts,
) -> Option<TrainingProfile> {
    let on = |key: &str, default: f64| num(map, key, default) > 0.0;
    let rope = head_dim;
    let base = |style| TrainingProfile {
        style,
        attention_dropout: on("attention_dropout", 0.0),
        hidden_dropout: false,
        embedding_dropout: false,
        rotary_dims: rope,
        routing_weights_in_dtype: false,
        topk_renormalized: true,
        sliding_window_applies: map.get("use_sliding_window").and_then(Value::as_bool)
            != Some(false),
        modules: facts.modules,
        peft_default: facts.peft_default,
    };
    Some(match model_type {
        "llama" | "mistral" | "qwen2" | "qwen3" | "mixtral" => base(LayerStyle::Llama),
        "qwen3_moe" => TrainingProfile {
            routing_weights_in_dtype: true,
            topk_renormalized: map.get("norm_topk_prob").and_then(Value::as_bool) == Some(true),
            ..base(LayerStyle::Llama)
        },
        // Phi-3's residual dropouts (`resid_pdrop`) decide whether a checkpointed layer is
        // re-run whole (a dropout mask is its last saved tensor).
        "phi3" => TrainingProfile {
            hidden_dropout: on("resid_pdrop", 0.0),
            ..base(LayerStyle::Phi3)
        },
        "gemma" => base(LayerStyle::Gemma),
        "gemma2" => base(LayerStyle::Gemma2),
        "olmo2" => base(LayerStyle::Olmo2),
        "gpt2" => TrainingProfile {
            attention_dropout: on("attn_pdrop", 0.1),
            hidden_dropout: on("resid_pdrop", 0.1),
            embedding_dropout: on("embd_pdrop", 0.1),
            rotary_dims: None,
            ..base(LayerStyle::Gpt2)
        },
        "gpt_neox" => {
            let pct = map
                .get("rope_parameters")
                .and_then(|r| r.get("partial_rotary_factor"))
                .and_then(Value::as_f64)
                .unwrap_or_else(|| num(map, "rotary_pct", 0.25));
            #[allow(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                clippy::cast_precision_loss
            )]
            let r = head_dim.map(|hd| (hd as f64 * pct) as u64);
            TrainingProfile {
                hidden_dropout: on("hidden_dropout", 0.0),
                rotary_dims: r,
                ..base(LayerStyle::GptNeox)
            }
        }
        "opt" => TrainingProfile {
            hidden_dropout: on("dropout", 0.1),
            rotary_dims: None,
            ..base(LayerStyle::Opt)
        },
        "bloom" => TrainingProfile {
            hidden_dropout: on("hidden_dropout", 0.0),
            rotary_dims: None,
            ..base(LayerStyle::Bloom)
        },
        "falcon" => TrainingProfile {
            hidden_dropout: on("hidden_dropout", 0.0),
            ..base(LayerStyle::Falcon)
        },
        "starcoder2" => TrainingProfile {
            hidden_dropout: on("residual_dropout", 0.0),
            embedding_dropout: on("embedding_dropout", 0.0),
            ..base(LayerStyle::Starcoder2)
        },
        _ => return None,
    })
}
