//! Mixtures read as a block with at most a `__post_init__` patch or a small tweak: Phi-MoE
//! (`phimoe`, `modeling_phimoe.py`), EXAONE-MoE (`exaone_moe`, `modeling_exaone_moe.py`),
//! `FlexOlmo` (`flex_olmo`, `modeling_flex_olmo.py`), Aria's text model (`aria_text`,
//! `modeling_aria.py`), Cohere2-MoE (`cohere2_moe`, `modeling_cohere2_moe.py`), Kolibri-1
//! (`kolibri1`, `modeling_kolibri1.py`) and Flint (`flint`, `modeling_flint.py`).

use llmsize_core::expr::Sym;
use llmsize_core::spec::{ModelSpec, NormKind, OutputHead};
use serde_json::{Map, Value};

use super::glm::GLM4_MOE;
use super::{all_but_every, layer_types_or, mlp_layer_types, shared_biases};
use crate::error::ConfigError;
use crate::hf_config::family::{
    AttentionRule, Block, HeadDim, LLAMA, LLAMA_ATTENTION, LLAMA_MLP, MlpRule, MoeRule, NO,
    NormRule, PLAIN_ATTENTION, QkNorm, Shared, Sparsity, StandardRule, Windows, YES, key_or,
    unbiased_mlp,
};
use crate::hf_config::raw::RawConfig;
use crate::hf_config::runs::Runs;

// ---------------------------------------------------------------------------------------------
// Phi-3.5-MoE, EXAONE-MoE, FlexOlmo.

/// Phi-MoE (`modeling_phimoe.py`): `LayerNorm`s with biases, q/k/v/o biased by
/// `attention_bias`, 16 experts of `intermediate_size` behind a bias-free router, every layer
/// sliding when `sliding_window` is set, `lm_head` biased by `lm_head_bias`.
pub(super) const PHIMOE: Block = Block {
    kv_default: Some(8),
    head_dim: HeadDim::KeyOrSplit,
    mlp: GLM4_MOE.mlp,
    moe: Some(MoeRule {
        experts: key_or(&["num_local_experts"], 16),
        top_k: key_or(&["num_experts_per_tok"], 2),
        expert_width: key_or(&["intermediate_size"], 6400),
        correction_bias: NO,
        expert_bias: NO,
        shared: Shared::None,
        shared_gate: false,
        sparsity: crate::hf_config::family::ALL_SPARSE,
    }),
    norm: NormRule {
        kind: NormKind::LayerNorm,
        bias: YES,
        per_layer: 2,
    },
    windows: Windows::All,
    tweak: Some(phimoe_tweak),
    ..LLAMA
};

/// Phi-MoE's `lm_head` bias.
fn phimoe_tweak(raw: &mut RawConfig<'_>, spec: &mut ModelSpec) -> Result<(), ConfigError> {
    if raw.flag_or("lm_head_bias", false, "absent; `PhimoeConfig` default")?
        && let OutputHead::Lm { biases, .. } = &mut spec.head
    {
        *biases = 1;
    }
    Ok(())
}

/// EXAONE-MoE (`modeling_exaone_moe.py`): no biases, per-head q/k norms, `num_experts` of
/// `moe_intermediate_size` with `num_shared_experts` of that width as one shared MLP; dense
/// layers from `mlp_layer_types`, else the first `first_k_dense_replace`; sliding layers from
/// `layer_types`, else all but every `sliding_window_pattern`-th.
pub(super) const EXAONE_MOE: Block = Block {
    kv_default: Some(32),
    attention: AttentionRule::Standard(StandardRule {
        qk_norm: QkNorm::PerHead,
        ..PLAIN_ATTENTION
    }),
    mlp: GLM4_MOE.mlp,
    moe: Some(MoeRule {
        experts: key_or(&["num_experts"], 64),
        top_k: key_or(&["num_experts_per_tok"], 8),
        expert_width: key_or(&["moe_intermediate_size"], 1024),
        correction_bias: NO,
        expert_bias: NO,
        shared: Shared::Count(key_or(&["num_shared_experts"], 1)),
        shared_gate: false,
        sparsity: Sparsity {
            first_dense: Some(key_or(&["first_k_dense_replace"], 1)),
            step: None,
            dense_list: None,
        },
    }),
    windows: Windows::Pattern(4),
    ..LLAMA
};

/// `FlexOlmo` (`modeling_flex_olmo.py`): `OLMo2`'s block (q/k norms over the full projection
/// widths, post-attention and post-MLP norms) with every MLP a mixture of `num_experts`
/// experts of `intermediate_size`.
pub(super) const FLEX_OLMO: Block = Block {
    kv_default: None,
    attention: AttentionRule::Standard(StandardRule {
        qk_norm: QkNorm::FullWidth,
        ..LLAMA_ATTENTION
    }),
    mlp: GLM4_MOE.mlp,
    moe: Some(MoeRule {
        experts: key_or(&["num_experts", "num_local_experts"], 7),
        top_k: key_or(&["num_experts_per_tok"], 5),
        expert_width: key_or(&["intermediate_size"], 11008),
        correction_bias: NO,
        expert_bias: NO,
        shared: Shared::None,
        shared_gate: false,
        sparsity: crate::hf_config::family::ALL_SPARSE,
    }),
    ..LLAMA
};

// ---------------------------------------------------------------------------------------------
// Aria (text), Cohere2-MoE.

/// Aria's text model (`modeling_aria.py`): Llama's attention, every layer a mixture of
/// `moe_num_experts` experts of `intermediate_size` (bias-free router) plus
/// `moe_num_shared_experts` of that width as one shared MLP biased by `mlp_bias`; `head_dim`
/// `hidden_size // num_attention_heads` when absent.
const ARIA_TEXT: Block = Block {
    kv_default: None,
    mlp: GLM4_MOE.mlp,
    moe: Some(MoeRule {
        experts: key_or(&["moe_num_experts"], 8),
        top_k: key_or(&["moe_topk"], 2),
        expert_width: key_or(&["intermediate_size"], 4096),
        correction_bias: NO,
        expert_bias: NO,
        shared: Shared::Count(key_or(&["moe_num_shared_experts"], 2)),
        shared_gate: false,
        sparsity: crate::hf_config::family::ALL_SPARSE,
    }),
    tweak: Some(aria_tweak),
    ..LLAMA
};

/// [`ARIA_TEXT`] as registered: `head_dim` absent is `hidden_size // num_attention_heads`, rounded
/// down (the blocks built on it keep the divisibility check).
pub(super) const ARIA_TEXT_FLOORED: Block = Block {
    head_dim: HeadDim::KeyOrFloor,
    ..ARIA_TEXT
};

/// Aria's shared experts carry biases with `mlp_bias`.
fn aria_tweak(raw: &mut RawConfig<'_>, spec: &mut ModelSpec) -> Result<(), ConfigError> {
    if raw.flag_or("mlp_bias", false, "absent; `AriaTextConfig` default")? {
        shared_biases(spec);
    }
    Ok(())
}

/// Cohere2-MoE (`modeling_cohere2_moe.py`): a parallel block (one norm, weight only), q/k/v/o
/// biased by `attention_bias`, no q/k norms, tied; MoE layers have `num_experts` experts of
/// `intermediate_size` (bias-free router) and `num_shared_experts` of that width as one shared
/// MLP; dense layers (`mlp_layer_types`, else the first `first_k_dense_replace`) an MLP of
/// `prefix_dense_intermediate_size` (else `intermediate_size`). Sliding layers from
/// `layer_types`, else by `prefix_dense_sliding_window_pattern` over the dense prefix and
/// `sliding_window_pattern` over the rest.
pub(super) const COHERE2_MOE: Block = Block {
    kv_default: None,
    head_dim: HeadDim::KeyOr(128),
    mlp: MlpRule {
        width: key_or(
            &["prefix_dense_intermediate_size", "intermediate_size"],
            22528,
        ),
        up_bias: NO,
        down_bias: NO,
        ..LLAMA_MLP
    },
    moe: Some(MoeRule {
        experts: key_or(&["num_experts"], 8),
        top_k: key_or(&["num_experts_per_tok"], 2),
        expert_width: key_or(&["intermediate_size"], 22528),
        correction_bias: NO,
        expert_bias: NO,
        shared: Shared::Count(key_or(&["num_shared_experts"], 0)),
        shared_gate: false,
        sparsity: Sparsity {
            first_dense: None,
            step: None,
            dense_list: None,
        },
    }),
    norm: NormRule {
        per_layer: 1,
        ..crate::hf_config::family::RMS2
    },
    tie: true,
    ..LLAMA
};

/// `Cohere2MoeConfig.__post_init__`: `layer_types` and `mlp_layer_types` from
/// `first_k_dense_replace` when absent.
pub(super) fn cohere2_moe_patch(
    raw: &mut RawConfig<'_>,
    map: &mut Map<String, Value>,
) -> Result<(), ConfigError> {
    let reason = "absent; `Cohere2MoeConfig` default";
    let n = raw.size(&["num_hidden_layers"], Sym::Layers)?;
    let first = raw.uint("first_k_dense_replace")?.unwrap_or(0);
    if raw.value("layer_types").is_none() {
        let pattern = |raw: &mut RawConfig<'_>, k: &str, d: u64| -> Result<u64, ConfigError> {
            if raw.has(k) {
                raw.size(&[k], Sym::Named("sliding_window_pattern"))
            } else {
                raw.assume(k, d, reason);
                Ok(d)
            }
        };
        let prefix = pattern(raw, "prefix_dense_sliding_window_pattern", 1)?;
        let rest = pattern(raw, "sliding_window_pattern", 4)?;
        // The first `first` layers by `prefix` (`(i + 1) % prefix`), the rest by `rest`
        // counted from layer `first`.
        let head = n.min(first);
        let mut sliding = all_but_every(head, prefix);
        sliding.append(all_but_every(n.saturating_sub(head), rest));
        raw.derived.sliding = Some(sliding);
    }
    if raw.value("mlp_layer_types").is_none() {
        raw.derived.dense = Some(Runs::from_index(n, first).map(|moe| !moe));
        Ok(())
    } else {
        mlp_layer_types(raw, map)
    }
}

// ---------------------------------------------------------------------------------------------
// Kolibri-1, Flint.

/// Kolibri-1 (`modeling_kolibri1.py`): no biases, per-head q/k norms, four norms per layer;
/// every layer `num_experts` experts of `moe_intermediate_size` (bias-free router; its
/// `e_score_correction_bias` is a buffer) plus a shared MLP of
/// `shared_expert_intermediate_size`. Sliding layers from `layer_types`, else all but every
/// 5th.
pub(super) const KOLIBRI1: Block = Block {
    kv_default: Some(4),
    head_dim: HeadDim::KeyOr(128),
    attention: AttentionRule::Standard(StandardRule {
        qk_norm: QkNorm::PerHead,
        ..PLAIN_ATTENTION
    }),
    mlp: GLM4_MOE.mlp,
    moe: Some(MoeRule {
        experts: key_or(&["num_local_experts", "num_experts"], 384),
        top_k: key_or(&["num_experts_per_tok"], 6),
        expert_width: key_or(&["moe_intermediate_size"], 512),
        correction_bias: NO,
        expert_bias: NO,
        shared: Shared::Width(key_or(&["shared_expert_intermediate_size"], 512)),
        shared_gate: false,
        sparsity: crate::hf_config::family::ALL_SPARSE,
    }),
    norm: NormRule {
        per_layer: 4,
        ..crate::hf_config::family::RMS2
    },
    ..LLAMA
};

/// Flint (`modeling_flint.py`): per-head q/k norms, a learned sink per head, q/k/v/o biased
/// by `attention_bias`; layers off `mlp_only_layers` (else `[0, 1]`) and on
/// `decoder_sparse_step` have `num_experts` experts of `moe_intermediate_size` (bias-free
/// router) plus a shared MLP of `shared_expert_intermediate_size`. Global layers from
/// `layer_types`, else the first two, every 4th from layer 1, and the last.
pub(super) const FLINT: Block = Block {
    kv_default: Some(4),
    head_dim: HeadDim::KeyOr(128),
    attention: AttentionRule::Standard(StandardRule {
        qk_norm: QkNorm::PerHead,
        sinks: YES,
        ..LLAMA_ATTENTION
    }),
    mlp: unbiased_mlp(key_or(&["intermediate_size"], 6144)),
    moe: Some(MoeRule {
        experts: key_or(&["num_experts"], 256),
        top_k: key_or(&["num_experts_per_tok"], 6),
        expert_width: key_or(&["moe_intermediate_size"], 512),
        correction_bias: NO,
        expert_bias: NO,
        shared: Shared::Width(key_or(&["shared_expert_intermediate_size"], 1024)),
        shared_gate: false,
        sparsity: Sparsity {
            first_dense: None,
            step: Some("decoder_sparse_step"),
            dense_list: None,
        },
    }),
    ..LLAMA
};

/// `FlintConfig.__post_init__`: `layer_types`, and `mlp_only_layers` `[0, 1]` when absent.
pub(super) fn flint_patch(
    raw: &mut RawConfig<'_>,
    _: &mut Map<String, Value>,
) -> Result<(), ConfigError> {
    // Global: the first two, every 4th from layer 1 (`i % 4 == 1`), and the last.
    layer_types_or(raw, |n| {
        let mut sliding = Runs::periodic(n, &[(true, 1), (false, 1), (true, 2)]);
        sliding.overwrite(0..2, &false);
        sliding.overwrite(n.saturating_sub(1)..n, &false);
        sliding
    })?;
    let n = raw.size(&["num_hidden_layers"], Sym::Layers)?;
    let only = if raw.value("mlp_only_layers").is_some() {
        crate::hf_config::family::index_list(raw, "mlp_only_layers", n)?
    } else {
        raw.assume("mlp_only_layers", "[0, 1]", "absent; `FlintConfig` default");
        vec![0, 1]
    };
    raw.derived.dense = Some(Runs::marked(n, only, &true, &false));
    Ok(())
}
