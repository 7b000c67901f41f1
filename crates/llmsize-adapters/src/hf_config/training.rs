//! The training profile of each model type whose training step is derived: which layer code
//! (`modeling_*.py`) it runs, which dropouts are active, its rotary width and peft's module
//! names. Read from the same `config.json` as the shapes, with the configuration classes'
//! defaults (transformers 5.24).

use llmsize_core::layout::TensorKind as K;
use llmsize_core::train::lora::peft_default_targets;
use llmsize_core::train::profile::LLAMA_MODULES;
use llmsize_core::train::{LayerStyle, TrainingProfile};
use serde_json::{Map, Value};

/// GPT-2's `Conv1D` modules (`c_proj` names the attention output and the MLP's down).
const GPT2_MODULES: &[(K, &str)] = &[
    (K::AttnQkv, "c_attn"),
    (K::AttnOutput, "c_proj"),
    (K::FfnUp, "c_fc"),
    (K::FfnDown, "c_proj"),
];
/// GPT-NeoX, `BLOOM` and Falcon.
const NEOX_MODULES: &[(K, &str)] = &[
    (K::AttnQkv, "query_key_value"),
    (K::AttnOutput, "dense"),
    (K::FfnUp, "dense_h_to_4h"),
    (K::FfnDown, "dense_4h_to_h"),
];
/// OPT (`project_in`/`project_out` of OPT-350m are named from the layout: they share a kind).
const OPT_MODULES: &[(K, &str)] = &[
    (K::AttnQ, "q_proj"),
    (K::AttnK, "k_proj"),
    (K::AttnV, "v_proj"),
    (K::AttnOutput, "out_proj"),
    (K::FfnUp, "fc1"),
    (K::FfnDown, "fc2"),
];
/// `StarCoder2`.
const STARCODER2_MODULES: &[(K, &str)] = &[
    (K::AttnQ, "q_proj"),
    (K::AttnK, "k_proj"),
    (K::AttnV, "v_proj"),
    (K::AttnOutput, "o_proj"),
    (K::FfnUp, "c_fc"),
    (K::FfnDown, "c_proj"),
];
/// Phi-3: fused `qkv_proj` and `gate_up_proj`.
const PHI3_MODULES: &[(K, &str)] = &[
    (K::AttnQkv, "qkv_proj"),
    (K::AttnOutput, "o_proj"),
    (K::FfnGate, "gate_up_proj"),
    (K::FfnUp, "gate_up_proj"),
    (K::FfnDown, "down_proj"),
];

fn num(map: &Map<String, Value>, key: &str, default: f64) -> f64 {
    map.get(key).and_then(Value::as_f64).unwrap_or(default)
}

/// The profile of `model_type`, or `None` where its training step is not derived.
pub(crate) fn profile(
    model_type: &str,
    map: &Map<String, Value>,
    head_dim: Option<u64>,
) -> Option<TrainingProfile> {
    let on = |key: &str, default: f64| num(map, key, default) > 0.0;
    let rope = head_dim;
    // peft's own table (`TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING`, as its
    // transformers-5 MoE conversion leaves it).
    let peft_default = peft_default_targets(model_type);
    let base = |style, modules| TrainingProfile {
        style,
        attention_dropout: on("attention_dropout", 0.0),
        hidden_dropout: false,
        embedding_dropout: false,
        rotary_dims: rope,
        routing_weights_in_dtype: false,
        sliding_window_applies: map.get("use_sliding_window").and_then(Value::as_bool)
            != Some(false),
        modules,
        peft_default,
    };
    Some(match model_type {
        "llama" | "mistral" | "qwen2" | "qwen3" | "mixtral" => {
            base(LayerStyle::Llama, LLAMA_MODULES)
        }
        "qwen3_moe" => TrainingProfile {
            routing_weights_in_dtype: true,
            ..base(LayerStyle::Llama, LLAMA_MODULES)
        },
        // Phi-3's residual dropouts (`resid_pdrop`) decide whether a checkpointed layer is
        // re-run whole (a dropout mask is its last saved tensor).
        "phi3" => TrainingProfile {
            hidden_dropout: on("resid_pdrop", 0.0),
            ..base(LayerStyle::Phi3, PHI3_MODULES)
        },
        "gemma" => base(LayerStyle::Gemma, LLAMA_MODULES),
        "gemma2" => base(LayerStyle::Gemma2, LLAMA_MODULES),
        "olmo2" => base(LayerStyle::Olmo2, LLAMA_MODULES),
        "gpt2" => TrainingProfile {
            attention_dropout: on("attn_pdrop", 0.1),
            hidden_dropout: on("resid_pdrop", 0.1),
            embedding_dropout: on("embd_pdrop", 0.1),
            rotary_dims: None,
            ..base(LayerStyle::Gpt2, GPT2_MODULES)
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
                ..base(LayerStyle::GptNeox, NEOX_MODULES)
            }
        }
        "opt" => TrainingProfile {
            hidden_dropout: on("dropout", 0.1),
            rotary_dims: None,
            ..base(LayerStyle::Opt, OPT_MODULES)
        },
        "bloom" => TrainingProfile {
            hidden_dropout: on("hidden_dropout", 0.0),
            rotary_dims: None,
            ..base(LayerStyle::Bloom, NEOX_MODULES)
        },
        "falcon" => TrainingProfile {
            hidden_dropout: on("hidden_dropout", 0.0),
            ..base(LayerStyle::Falcon, NEOX_MODULES)
        },
        "starcoder2" => TrainingProfile {
            hidden_dropout: on("residual_dropout", 0.0),
            embedding_dropout: on("embedding_dropout", 0.0),
            ..base(LayerStyle::Starcoder2, STARCODER2_MODULES)
        },
        _ => return None,
    })
}
