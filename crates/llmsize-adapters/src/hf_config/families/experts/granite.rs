//! Granite-MoE-shared (`granitemoeshared`, `modeling_granitemoeshared.py`) and
//! Granite-MoE-SWA (`granitemoe_swa`, `modeling_granitemoe_swa.py`).

use llmsize_core::expr::Sym;
use llmsize_core::spec::ModelSpec;
use serde_json::{Map, Value};

use super::glm::GLM4_MOE;
use super::{layer_types_or, map_moe};
use crate::error::ConfigError;
use crate::hf_config::family::{
    AttentionRule, Block, LLAMA, LLAMA_ATTENTION, MoeRule, NO, Shared, StandardRule, YES, key_or,
};
use crate::hf_config::raw::RawConfig;
use crate::hf_config::runs::Runs;

/// Granite-MoE-shared (`modeling_granitemoeshared.py`): Granite-MoE (q/k/v/o biased by
/// `attention_bias`, experts of `intermediate_size`, bias-free router) plus, when
/// `shared_intermediate_size` is not 0, a shared gated MLP of that width.
pub(super) const GRANITEMOESHARED: Block = Block {
    kv_default: None,
    mlp: GLM4_MOE.mlp,
    moe: Some(MoeRule {
        experts: key_or(&["num_local_experts"], 8),
        top_k: key_or(&["num_experts_per_tok"], 2),
        expert_width: key_or(&["intermediate_size"], 11008),
        correction_bias: NO,
        expert_bias: NO,
        shared: Shared::None,
        shared_gate: false,
        sparsity: crate::hf_config::family::ALL_SPARSE,
    }),
    tweak: Some(granite_shared_tweak),
    ..LLAMA
};

/// Granite's shared MLP (`input_linear` `d → 2·s`, `output_linear` `s → d`), absent at 0.
fn granite_shared_tweak(raw: &mut RawConfig<'_>, spec: &mut ModelSpec) -> Result<(), ConfigError> {
    let width = if let Some(w) = raw.uint("shared_intermediate_size")? {
        w
    } else {
        raw.assume(
            "shared_intermediate_size",
            0,
            "absent; the config class default (no shared MLP)",
        );
        0
    };
    if width > 0 {
        raw.source(Sym::SharedFfn, "shared_intermediate_size");
        let shared = crate::hf_config::decoder::mlp(spec.hidden_size, width, true, false);
        map_moe(spec, |m| m.shared = Some(shared));
    }
    Ok(())
}

/// Granite-MoE-SWA (`modeling_granitemoe_swa.py`): Granite-MoE-shared with a learned sink per
/// head in every layer; sliding layers from `layer_types`, else all but every 4th from the
/// first.
pub(super) const GRANITEMOE_SWA: Block = Block {
    attention: AttentionRule::Standard(StandardRule {
        sinks: YES,
        ..LLAMA_ATTENTION
    }),
    ..GRANITEMOESHARED
};

/// `GraniteMoeSWAConfig.__post_init__`: layer `i` is global when `i % 4 == 0`.
pub(super) fn granite_swa_patch(
    raw: &mut RawConfig<'_>,
    _: &mut Map<String, Value>,
) -> Result<(), ConfigError> {
    layer_types_or(raw, |n| Runs::periodic(n, &[(false, 1), (true, 3)]))
}
