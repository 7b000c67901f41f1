//! ERNIE-4.5-MoE (`ernie4_5_moe`, `modeling_ernie4_5_moe.py`).

use llmsize_core::expr::Sym;
use llmsize_core::spec::{Ffn, ModelSpec, OutputHead};

use super::shared_biases;
use crate::error::ConfigError;
use crate::hf_config::family::{
    AttentionRule, Block, LLAMA, LLAMA_ATTENTION, LLAMA_MLP, MlpRule, MoeRule, NO, Shared,
    Sparsity, StandardRule, Switch, YES, key_or, map_layers_by,
};
use crate::hf_config::raw::RawConfig;
use crate::hf_config::runs::Runs;

/// ERNIE-4.5-MoE (`modeling_ernie4_5_moe.py`): every projection (attention, dense and shared
/// MLPs, `lm_head`) biased by `use_bias`; layer `i` is MoE when `(i + 1) %
/// moe_layer_interval == 0` and `moe_layer_start_index ≤ i ≤ moe_layer_end_index` (−1: the
/// last layer); `moe_num_shared_experts` experts of `moe_intermediate_size` as one shared MLP;
/// `moe_statics.e_score_correction_bias` is a parameter of `E` (counted as the router's bias).
pub(super) const ERNIE4_5_MOE: Block = Block {
    kv_default: Some(4),
    attention: AttentionRule::Standard(StandardRule {
        qkv_bias: Switch::Key("use_bias", false),
        o_bias: Switch::Key("use_bias", false),
        ..LLAMA_ATTENTION
    }),
    mlp: MlpRule {
        width: key_or(&["intermediate_size"], 12288),
        up_bias: Switch::Key("use_bias", false),
        down_bias: Switch::Key("use_bias", false),
        ..LLAMA_MLP
    },
    moe: Some(MoeRule {
        experts: key_or(&["moe_num_experts", "num_experts"], 64),
        top_k: key_or(&["moe_k", "num_experts_per_tok"], 6),
        expert_width: key_or(&["moe_intermediate_size"], 1536),
        correction_bias: YES,
        expert_bias: NO,
        shared: Shared::Count(key_or(&["moe_num_shared_experts"], 2)),
        shared_gate: false,
        sparsity: Sparsity {
            first_dense: Some(key_or(&["moe_layer_start_index"], 1)),
            step: Some("moe_layer_interval"),
            dense_list: None,
        },
    }),
    tie: true,
    tweak: Some(ernie_tweak),
    ..LLAMA
};

/// ERNIE: layers past `moe_layer_end_index` are dense; the shared MLP and `lm_head` carry
/// biases with `use_bias`.
fn ernie_tweak(raw: &mut RawConfig<'_>, spec: &mut ModelSpec) -> Result<(), ConfigError> {
    let reason = "absent; `Ernie4_5_MoeConfig` default";
    let bias = raw.flag_or("use_bias", false, reason)?;
    let end = match raw.value("moe_layer_end_index") {
        None => None,
        Some(v) => match v.as_i64() {
            Some(-1) => None,
            Some(n) if n >= 0 => Some(n.cast_unsigned()),
            _ => {
                return Err(raw.invalid(
                    "moe_layer_end_index",
                    v,
                    "a layer index, or -1 for the last layer",
                ));
            }
        },
    };
    if let Some(end) = end {
        let dense = crate::hf_config::decoder::mlp(
            spec.hidden_size,
            raw.size_or(&["intermediate_size"], Sym::Ffn, 12288, reason)?,
            true,
            bias,
        );
        // saturates: never, a layer index below the layer count.
        let past_end = Runs::from_index(spec.num_layers(), end.saturating_add(1));
        map_layers_by(spec, &past_end, |layer, past| {
            let mut l = layer.clone();
            if *past && matches!(l.ffn, Ffn::Moe(_)) {
                l.ffn = Ffn::Dense(dense);
            }
            Ok(l)
        })?;
    }
    if bias {
        shared_biases(spec);
        if let OutputHead::Lm { biases, .. } = &mut spec.head {
            *biases = 1;
        }
    }
    Ok(())
}
