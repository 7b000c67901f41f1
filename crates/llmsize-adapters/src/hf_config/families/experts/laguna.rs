//! Laguna (`laguna`, `modeling_laguna.py`): per-layer query heads and an output gate.

use llmsize_core::Category;
use llmsize_core::expr::{Expr, Sym};
use llmsize_core::spec::{Extra, ModelSpec};
use serde_json::Value;

use super::{LISTED_DENSE, dense_first_layer, read_patched, standard};
use crate::error::ConfigError;
use crate::hf_config::family::{
    AttentionRule, Block, Family, HeadDim, LLAMA, LLAMA_ATTENTION, MoeRule, NO, QkNorm, Shared,
    StandardRule, YES, key_or, map_layers_by, unbiased_mlp,
};
use crate::hf_config::raw::RawConfig;
use crate::hf_config::runs::Runs;

/// Laguna (`modeling_laguna.py`): per-layer query heads (`num_attention_heads_per_layer`),
/// per-head q/k norms, a softplus output gate `g_proj` (`d → n_h`, or `n_h·d_h` unless
/// `gating` is `true`/`"per-head"`), q/k/v/o biased by `attention_bias`; MoE layers
/// (`mlp_layer_types`, else all but the first) have `num_experts` experts of
/// `moe_intermediate_size`, a router whose `e_score_correction_bias` is a parameter of `E`,
/// and a shared MLP of `shared_expert_intermediate_size`.
const LAGUNA: Block = Block {
    kv_default: Some(8),
    head_dim: HeadDim::KeyOr(128),
    attention: AttentionRule::Standard(StandardRule {
        qk_norm: QkNorm::PerHead,
        ..LLAMA_ATTENTION
    }),
    mlp: unbiased_mlp(key_or(&["intermediate_size"], 8192)),
    moe: Some(MoeRule {
        experts: key_or(&["num_experts"], 256),
        top_k: key_or(&["num_experts_per_tok"], 8),
        expert_width: key_or(&["moe_intermediate_size"], 512),
        correction_bias: YES,
        expert_bias: NO,
        shared: Shared::Width(key_or(&["shared_expert_intermediate_size"], 512)),
        shared_gate: false,
        sparsity: LISTED_DENSE,
    }),
    ..LLAMA
};

/// Laguna: per-layer heads and the output gate.
pub(super) fn read_laguna(
    raw: &mut RawConfig<'_>,
    family: &Family,
    _: crate::hf_config::HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let mut spec = read_patched(raw, family, &LAGUNA, dense_first_layer)?;
    let per_head = match raw.value("gating") {
        None | Some(Value::Bool(true)) => true,
        Some(Value::Bool(false)) => false,
        Some(Value::String(s)) if s == "per-head" => true,
        Some(Value::String(s)) if s == "per-element" => false,
        Some(v) => {
            return Err(raw.invalid("gating", v, "true, false, `per-head` or `per-element`"));
        }
    };
    let heads: Option<Vec<u64>> = match raw.value("num_attention_heads_per_layer") {
        None => None,
        Some(v) => {
            let list = v.as_array().ok_or_else(|| {
                raw.invalid("num_attention_heads_per_layer", v, "a head count per layer")
            })?;
            let counts = list
                .iter()
                .map(|x| match x.as_u64() {
                    Some(n) if n > 0 => Ok(n),
                    _ => {
                        Err(raw.invalid("num_attention_heads_per_layer", x, "positive head counts"))
                    }
                })
                .collect::<Result<Vec<u64>, _>>()?;
            if (counts.len() as u64) < spec.num_layers() {
                return Err(raw.invalid(
                    "num_attention_heads_per_layer",
                    v,
                    &format!("one entry per layer ({})", spec.num_layers()),
                ));
            }
            Some(counts)
        }
    };
    // Each layer's head count from the list (itself one entry per layer), else its own.
    let heads = match heads {
        Some(counts) => Runs::from_list(counts.into_iter().map(Some)),
        None => Runs::uniform(None, spec.num_layers()),
    };
    map_layers_by(&mut spec, &heads, |layer, heads| {
        let mut l = layer.clone();
        if let Some(a) = standard(&mut l) {
            if let Some(n) = heads {
                a.num_heads = *n;
            }
            let (n, d, hidden) = (a.num_heads, a.head_dim, a.hidden);
            let out = if per_head {
                Expr::sym(Sym::Heads, n)
            } else {
                Expr::product(vec![Expr::sym(Sym::Heads, n), Expr::sym(Sym::HeadDim, d)])
            };
            l.extras.push(Extra::linear(
                "self_attn.g_proj.weight",
                "attention",
                Category::Attention,
                Expr::sym(Sym::Hidden, hidden),
                out,
            ));
        }
        Ok(l)
    })?;
    Ok(spec)
}
