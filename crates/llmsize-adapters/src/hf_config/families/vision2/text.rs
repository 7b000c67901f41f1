//! The composites' own text types as decoder blocks (`Qwen2VLTextConfig`, …), read through
//! the registry from `text_config`.

use crate::hf_config::family::{
    ALL_SPARSE, AttentionRule, Block, HeadDim, LLAMA, LLAMA_ATTENTION, MlpRule, MoeRule, NO,
    NormRule, PLAIN_ATTENTION, QkNorm, RMS2, Shared, Sparsity, StandardRule, Switch, Windows, YES,
    key_or,
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
/// `hidden / heads`, which must divide (the attention class raises otherwise); with `use_sliding_window`, layers from `max_window_layers` slide.
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
    head_dim: HeadDim::KeyOrFloor,
    moe: Some(MoeRule {
        experts: key_or(&["num_local_experts", "num_experts"], 60),
        top_k: key_or(&["num_experts_per_tok"], 4),
        expert_width: key_or(&["moe_intermediate_size"], 1408),
        correction_bias: NO,
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
/// `hidden // heads` (set by [`glm4v_text`]); four norms per layer; a fused bias-free `gate_up_proj`.
pub(super) const GLM4V_TEXT: Block = Block {
    kv_default: Some(2),
    head_dim: HeadDim::Floor,
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

/// GLM-4V-MoE text (`Glm4vMoeTextAttention`, `Glm4vMoeTextMoE`): `attention_bias` on q, k,
/// v (on by default); `head_dim` `hidden / heads` unless given; two norms per layer; the
/// first `first_k_dense_replace` layers dense, the rest `n_routed_experts` experts with a
/// bias-free router (`e_score_correction_bias` is a buffer) and `n_shared_experts` shared
/// experts of `moe_intermediate_size`.
pub(super) const GLM4V_MOE_TEXT: Block = Block {
    kv_default: Some(8),
    head_dim: HeadDim::KeyOrFloor,
    attention: AttentionRule::Standard(StandardRule {
        qkv_bias: Switch::Key("attention_bias", true),
        ..PLAIN_ATTENTION
    }),
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
            ..ALL_SPARSE
        },
    }),
    windows: Windows::None,
    ..sized(&QWEN2_VL_TEXT, 4096, 46, 96, 151_424, 10944)
};

/// GLM-OCR text (`GlmOcrTextAttention`): no biases; `head_dim` `hidden / heads` unless
/// given; four norms per layer.
pub(super) const GLM_OCR_TEXT: Block = Block {
    kv_default: Some(8),
    head_dim: HeadDim::KeyOrFloor,
    attention: AttentionRule::Standard(PLAIN_ATTENTION),
    ..sized(&GLM4V_TEXT, 1024, 16, 16, 59392, 4096)
};

/// PaddleOCR-VL text (`PaddleOCRAttention`, `PaddleOCRMLP`): `use_bias` on every projection
/// of attention and MLP, `head_dim` 128, 2 KV heads, tied.
pub(super) const PADDLEOCR_VL_TEXT: Block = Block {
    kv_default: Some(2),
    head_dim: HeadDim::KeyOr(128),
    attention: AttentionRule::Standard(StandardRule {
        qkv_bias: Switch::Key("use_bias", false),
        o_bias: Switch::Key("use_bias", false),
        ..LLAMA_ATTENTION
    }),
    mlp: MlpRule {
        up_bias: Switch::Key("use_bias", false),
        down_bias: Switch::Key("use_bias", false),
        ..LLAMA.mlp
    },
    tie: true,
    ..sized(&LLAMA, 1024, 18, 16, 103_424, 3072)
};

/// Qwen2.5-Omni text (`Qwen2_5OmniAttention`): Qwen2-VL's text block with `head_dim` read
/// when given (else `hidden // heads`), other defaults, tied by default.
pub(super) const QWEN2_5_OMNI_TEXT: Block = Block {
    kv_default: Some(4),
    head_dim: HeadDim::KeyOrFloor,
    windows: Windows::FromLayer(28),
    tie: true,
    ..sized(&QWEN2_VL_TEXT, 3584, 28, 28, 152_064, 18944)
};

/// Qwen3-Omni-MoE thinker text (`Qwen3OmniMoeThinkerTextAttention`,
/// `Qwen3OmniMoeThinkerTextDecoderLayer`): Qwen3-VL-MoE's block with `head_dim` `hidden //
/// heads` unless given, `num_experts` experts, other defaults, untied.
pub(super) const QWEN3_OMNI_MOE_TEXT: Block = Block {
    kv_default: Some(4),
    moe: Some(MoeRule {
        experts: key_or(&["num_experts"], 128),
        top_k: key_or(&["num_experts_per_tok"], 8),
        expert_width: key_or(&["moe_intermediate_size"], 768),
        correction_bias: NO,
        expert_bias: NO,
        shared: Shared::None,
        shared_gate: false,
        sparsity: Sparsity {
            step: Some("decoder_sparse_step"),
            dense_list: Some("mlp_only_layers"),
            ..ALL_SPARSE
        },
    }),
    tie: false,
    ..sized(&QWEN3_VL_MOE_TEXT, 2048, 28, 28, 3584, 18944)
};

/// Cosmos3-Edge text (`Cosmos3EdgeTextAttention`, `Cosmos3EdgeTextMLP`): `attention_bias` on
/// all four projections, `head_dim` 128, 8 KV heads, a plain `fc1`/`fc2` MLP biased by
/// `mlp_bias`.
pub(super) const COSMOS3_EDGE_TEXT: Block = Block {
    kv_default: Some(8),
    head_dim: HeadDim::KeyOr(128),
    mlp: MlpRule {
        gated: false,
        ..LLAMA.mlp
    },
    ..sized(&LLAMA, 2048, 28, 16, 131_072, 9216)
};
