//! The composites' own text types as decoder blocks (`Qwen2VLTextConfig`, …), read through
//! the registry from `text_config`.

use crate::hf_config::family::{
    ALL_SPARSE, AttentionRule, Block, HeadDim, LLAMA, LLAMA_ATTENTION, MlpRule, MoeRule,
    NormRule, PLAIN_ATTENTION, QkNorm, RMS2, Shared, Sparsity, StandardRule, Windows, NO, YES, key_or,
};

/// Llama with these class defaults.
const fn sized(base: &Block, d: u64, l: u64, n_h: u64, v: u64, d_ff: u64) -> Block {
    Block {
        hidden: key_or(&["hidden_size"], d),
        layers: key_or(&["num_hidden_layers"], l),
        heads: key_or(&["num_attention_heads"], n_h),
        vocab: key_or(&["vocab_size"], v),
        mlp: MlpRule {
            width: key_or(&["intermediate_size"], d_ff),
            ..base.mlp
        },
        ..*base
    }
}

/// Qwen2-VL / Qwen2.5-VL text (`Qwen2VLAttention`): biases on q, k, v only; `head_dim` is
/// `hidden / heads`; with `use_sliding_window`, layers from `max_window_layers` slide.
pub(super) const QWEN2_VL_TEXT: Block = Block {
    kv_default: Some(8),
    head_dim: HeadDim::Split,
    attention: AttentionRule::Standard(StandardRule {
        qkv_bias: YES,
        ..PLAIN_ATTENTION
    }),
    mlp: MlpRule {
        up_bias: NO,
        down_bias: NO,
        ..LLAMA.mlp
    },
    windows: Windows::FromLayer(80),
    ..sized(&LLAMA, 8192, 80, 64, 152_064, 29568)
};

/// Qwen3-VL text (`Qwen3VLTextAttention`): `attention_bias` on all four projections, per-head
/// q/k norms, `head_dim` 128.
pub(super) const QWEN3_VL_TEXT: Block = Block {
    kv_default: Some(32),
    head_dim: HeadDim::KeyOr(128),
    attention: AttentionRule::Standard(StandardRule {
        qk_norm: QkNorm::PerHead,
        ..LLAMA_ATTENTION
    }),
    mlp: MlpRule {
        up_bias: NO,
        down_bias: NO,
        ..LLAMA.mlp
    },
    ..sized(&LLAMA, 4096, 32, 32, 151_936, 22016)
};

/// Qwen3-VL-MoE text: Qwen3-VL's attention (`head_dim` `hidden / heads` when null), experts
/// on every `decoder_sparse_step`-th layer not in `mlp_only_layers` (dense layers of
/// `intermediate_size`), a bias-free router, no shared expert.
pub(super) const QWEN3_VL_MOE_TEXT: Block = Block {
    kv_default: Some(16),
    head_dim: HeadDim::KeyOrSplit,
    moe: Some(MoeRule {
        experts: key_or(&["num_experts"], 60),
        top_k: key_or(&["num_experts_per_tok"], 4),
        expert_width: key_or(&["moe_intermediate_size"], 1408),
        router_bias: NO,
        expert_bias: NO,
        shared: Shared::None,
        shared_gate: false,
        sparsity: Sparsity {
            step: Some("decoder_sparse_step"),
            dense_list: Some("mlp_only_layers"),
            ..ALL_SPARSE
        },
    }),
    tie: true,
    ..sized(&QWEN3_VL_TEXT, 2048, 24, 16, 151_936, 5632)
};

/// GLM-4V text (`Glm4vTextAttention`, `Glm4vTextDecoderLayer`): biases on q, k, v; `head_dim`
/// `hidden / heads`; four norms per layer; a fused bias-free `gate_up_proj`.
pub(super) const GLM4V_TEXT: Block = Block {
    kv_default: Some(2),
    head_dim: HeadDim::Split,
    attention: AttentionRule::Standard(StandardRule {
        qkv_bias: YES,
        ..PLAIN_ATTENTION
    }),
    mlp: MlpRule {
        up_bias: NO,
        down_bias: NO,
        ..LLAMA.mlp
    },
    norm: NormRule {
        per_layer: 4,
        ..RMS2
    },
    ..sized(&LLAMA, 4096, 40, 32, 151_552, 13696)
};
