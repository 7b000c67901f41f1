//! GLM-4-MoE (`glm4_moe`, `modeling_glm4_moe.py`) and the entries built on its modeling code:
//! Sarvam-MoE (`sarvam_moe`, `modular_sarvam_moe.py`) and Solar-Open (`solar_open`,
//! `modeling_solar_open.py`).

use serde_json::{Map, Value};

use crate::hf_config::family::{
    AttentionRule, Block, HeadDim, LLAMA, LLAMA_MLP, MlpRule, MoeRule, NO, PLAIN_ATTENTION, QkNorm,
    Shared, Sparsity, StandardRule, Switch, key_or,
};
use crate::hf_config::raw::RawConfig;

/// GLM-4-MoE (`modeling_glm4_moe.py`): q/k/v biased by `attention_bias` (never `o_proj`),
/// per-head q/k norms with `use_qk_norm`, `n_shared_experts` experts of
/// `moe_intermediate_size` as one shared MLP, the first `first_k_dense_replace` layers dense
/// (`intermediate_size`); the router has no bias (`e_score_correction_bias` is a buffer).
pub(super) const GLM4_MOE: Block = Block {
    kv_default: Some(8),
    attention: AttentionRule::Standard(StandardRule {
        qkv_bias: Switch::Key("attention_bias", false),
        o_bias: NO,
        qk_norm: QkNorm::PerHead,
        qk_norm_on: Switch::Key("use_qk_norm", false),
        ..PLAIN_ATTENTION
    }),
    mlp: MlpRule {
        up_bias: NO,
        down_bias: NO,
        ..LLAMA_MLP
    },
    moe: Some(MoeRule {
        experts: key_or(&["n_routed_experts", "num_local_experts"], 128),
        top_k: key_or(&["num_experts_per_tok"], 8),
        expert_width: key_or(&["moe_intermediate_size"], 1408),
        correction_bias: NO,
        expert_bias: NO,
        shared: Shared::Count(key_or(&["n_shared_experts"], 1)),
        shared_gate: false,
        sparsity: Sparsity {
            first_dense: Some(key_or(&["first_k_dense_replace"], 1)),
            step: None,
            dense_list: None,
        },
    }),
    ..LLAMA
};

/// [`GLM4_MOE`] as registered: `head_dim` absent is `hidden_size // num_attention_heads`, rounded
/// down (the blocks built on it keep the divisibility check).
pub(super) const GLM4_MOE_FLOORED: Block = Block {
    head_dim: HeadDim::KeyOrFloor,
    ..GLM4_MOE
};

/// Sarvam-MoE (`modular_sarvam_moe.py`: GLM-4-MoE's modeling): `head_dim` 64, q/k norms on
/// by default, 4 KV heads; `use_qkv_bias`, `num_experts` and `num_shared_experts` are
/// aliases of `attention_bias`, `n_routed_experts` and `n_shared_experts`.
pub(super) const SARVAM_MOE: Block = Block {
    kv_default: Some(4),
    head_dim: HeadDim::KeyOr(64),
    attention: AttentionRule::Standard(StandardRule {
        qkv_bias: Switch::Key("attention_bias", false),
        o_bias: NO,
        qk_norm: QkNorm::PerHead,
        qk_norm_on: Switch::Key("use_qk_norm", true),
        ..PLAIN_ATTENTION
    }),
    moe: Some(MoeRule {
        experts: key_or(
            &["n_routed_experts", "num_local_experts", "num_experts"],
            128,
        ),
        top_k: key_or(&["num_experts_per_tok"], 6),
        expert_width: key_or(&["moe_intermediate_size"], 1024),
        shared: Shared::Count(key_or(&["n_shared_experts", "num_shared_experts"], 1)),
        ..GLM4_MOE_RULE
    }),
    ..GLM4_MOE
};

/// GLM-4-MoE's expert rule, for the entries that change a field of it.
const GLM4_MOE_RULE: MoeRule = MoeRule {
    experts: key_or(&["n_routed_experts", "num_local_experts"], 128),
    top_k: key_or(&["num_experts_per_tok"], 8),
    expert_width: key_or(&["moe_intermediate_size"], 1408),
    correction_bias: NO,
    expert_bias: NO,
    shared: Shared::Count(key_or(&["n_shared_experts"], 1)),
    shared_gate: false,
    sparsity: Sparsity {
        first_dense: Some(key_or(&["first_k_dense_replace"], 1)),
        step: None,
        dense_list: None,
    },
};

/// Sarvam's alias `use_qkv_bias` of `attention_bias`.
pub(super) fn sarvam_patch(raw: &RawConfig<'_>, map: &mut Map<String, Value>) {
    if raw.value("attention_bias").is_none()
        && let Some(v) = raw.value("use_qkv_bias")
    {
        map.insert("attention_bias".to_owned(), v.clone());
    }
}

/// Solar-Open (`modeling_solar_open.py`): GLM-4-MoE without q/k norms or dense layers,
/// `head_dim` 128.
pub(super) const SOLAR_OPEN: Block = Block {
    head_dim: HeadDim::KeyOr(128),
    attention: AttentionRule::Standard(StandardRule {
        qkv_bias: Switch::Key("attention_bias", false),
        o_bias: NO,
        ..PLAIN_ATTENTION
    }),
    moe: Some(MoeRule {
        expert_width: key_or(&["moe_intermediate_size"], 1280),
        sparsity: crate::hf_config::family::ALL_SPARSE,
        ..GLM4_MOE_RULE
    }),
    ..GLM4_MOE
};
