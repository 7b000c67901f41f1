//! Mixtures with a gate on the attention output (`self_attn.gate_proj`) and four norms per
//! layer: `AFMoE` (`afmoe`, `modeling_afmoe.py`) and Beam (`beam`, `modeling_beam.py`).

use llmsize_core::Category;
use llmsize_core::expr::{Expr, Sym};
use llmsize_core::spec::{Extra, ModelSpec};
use serde_json::{Map, Value};

use super::{LISTED_DENSE, all_but_every, dense_types_or_first, layer_types_or, standard};
use crate::error::ConfigError;
use crate::hf_config::family::{
    AttentionRule, Block, HeadDim, LLAMA, LLAMA_ATTENTION, MoeRule, NO, NormRule, QkNorm, Shared,
    Sparsity, StandardRule, YES, key_or, try_map_kinds, unbiased_mlp,
};
use crate::hf_config::raw::RawConfig;

// ---------------------------------------------------------------------------------------------
// AFMoE.

/// `AFMoE` (`modeling_afmoe.py`): per-head q/k norms, a sigmoid output gate `gate_proj`
/// (`d → n_h·d_h`), q/k/v/o biased by `attention_bias`, four norms per layer; the first
/// `num_dense_layers` layers dense, the others `num_experts` experts of
/// `moe_intermediate_size` with a router whose `expert_bias` is a parameter of `E`, and
/// `num_shared_experts` of that width as one shared MLP. Sliding layers from `layer_types`,
/// else all but every `global_attn_every_n_layers`-th.
pub(super) const AFMOE: Block = Block {
    kv_default: None,
    head_dim: HeadDim::KeyOr(128),
    attention: AttentionRule::Standard(StandardRule {
        qk_norm: QkNorm::PerHead,
        ..LLAMA_ATTENTION
    }),
    mlp: unbiased_mlp(key_or(&["intermediate_size"], 6144)),
    moe: Some(MoeRule {
        experts: key_or(&["num_experts"], 64),
        top_k: key_or(&["num_experts_per_tok"], 6),
        expert_width: key_or(&["moe_intermediate_size"], 1408),
        correction_bias: YES,
        expert_bias: NO,
        shared: Shared::Count(key_or(&["num_shared_experts"], 2)),
        shared_gate: false,
        sparsity: Sparsity {
            first_dense: Some(key_or(&["num_dense_layers"], 1)),
            step: None,
            dense_list: None,
        },
    }),
    norm: NormRule {
        per_layer: 4,
        ..crate::hf_config::family::RMS2
    },
    tweak: Some(output_gate_full),
    ..LLAMA
};

/// `AfmoeConfig.__post_init__`: `layer_types` from `global_attn_every_n_layers`.
pub(super) fn afmoe_patch(
    raw: &mut RawConfig<'_>,
    _: &mut Map<String, Value>,
) -> Result<(), ConfigError> {
    if raw.value("layer_types").is_none() {
        let every = raw.size_or(
            &["global_attn_every_n_layers"],
            Sym::Named("global_attn_every_n_layers"),
            4,
            "absent; `AfmoeConfig` default",
        )?;
        layer_types_or(raw, |n| all_but_every(n, every))?;
    }
    Ok(())
}

/// A gate `d → n_h·d_h` on the attention output (`self_attn.gate_proj`), in every layer.
fn output_gate_full(_: &mut RawConfig<'_>, spec: &mut ModelSpec) -> Result<(), ConfigError> {
    output_gate(spec, false)
}

/// The output gate `self_attn.gate_proj` (`d → n_h·d_h`) of every layer, with a bias of one
/// per head (`gate_bias`) when `head_bias`.
fn output_gate(spec: &mut ModelSpec, head_bias: bool) -> Result<(), ConfigError> {
    try_map_kinds(spec, |layer| {
        let mut l = layer.clone();
        if let Some(a) = standard(&mut l) {
            let (n, d, hidden) = (a.num_heads, a.head_dim, a.hidden);
            l.extras.push(Extra::linear(
                "self_attn.gate_proj.weight",
                "attention",
                Category::Attention,
                Expr::sym(Sym::Hidden, hidden),
                Expr::product(vec![Expr::sym(Sym::Heads, n), Expr::sym(Sym::HeadDim, d)]),
            ));
            if head_bias {
                l.extras.push(Extra::vector(
                    "self_attn.gate_bias",
                    "attention",
                    Category::Attention,
                    Expr::sym(Sym::Heads, n),
                ));
            }
        }
        Ok(l)
    })
}

// ---------------------------------------------------------------------------------------------
// Beam.

/// Beam (`modeling_beam.py`): per-head q/k norms, an output gate `gate_proj` (`d → n_h·d_h`)
/// with a bias per head, q/k/v/o biased by `attention_bias`, four norms per layer; MoE layers
/// (`mlp_layer_types`, else all but the first 3) have `num_experts` experts of
/// `moe_intermediate_size` behind a bias-free router, no shared expert. Sliding layers from
/// `layer_types`, else all but every 6th and the last.
pub(super) const BEAM: Block = Block {
    kv_default: Some(8),
    head_dim: HeadDim::KeyOr(128),
    attention: AttentionRule::Standard(StandardRule {
        qk_norm: QkNorm::PerHead,
        ..LLAMA_ATTENTION
    }),
    mlp: unbiased_mlp(key_or(&["intermediate_size"], 20480)),
    moe: Some(MoeRule {
        experts: key_or(&["num_experts"], 256),
        top_k: key_or(&["num_experts_per_tok"], 8),
        expert_width: key_or(&["moe_intermediate_size"], 2560),
        correction_bias: NO,
        expert_bias: NO,
        shared: Shared::None,
        shared_gate: false,
        sparsity: LISTED_DENSE,
    }),
    norm: NormRule {
        per_layer: 4,
        ..crate::hf_config::family::RMS2
    },
    tweak: Some(|_, spec| output_gate(spec, true)),
    ..LLAMA
};

/// `BeamConfig.__post_init__`: `layer_types` and `mlp_layer_types` when absent.
pub(super) fn beam_patch(
    raw: &mut RawConfig<'_>,
    map: &mut Map<String, Value>,
) -> Result<(), ConfigError> {
    // Global: every 6th layer and the last.
    layer_types_or(raw, |n| {
        let mut sliding = all_but_every(n, 6);
        sliding.overwrite(n.saturating_sub(1)..n, &false);
        sliding
    })?;
    dense_types_or_first(raw, map, 3)
}
