//! MiMo-V2-Flash (`mimo_v2_flash`, `modeling_mimo_v2_flash.py`): q/k and v/o heads of
//! different widths, doubled KV heads and sinks on sliding layers.

use llmsize_core::Category;
use llmsize_core::expr::{Expr, Sym};
use llmsize_core::spec::{Extra, ModelSpec};
use serde_json::{Map, Value};

use super::{
    LISTED_DENSE, all_but_every, dense_first_layer, layer_types_or, read_patched, standard,
};
use crate::error::ConfigError;
use crate::hf_config::family::{
    AttentionRule, Block, Family, HeadDim, LLAMA, MoeRule, NO, PLAIN_ATTENTION, Shared,
    StandardRule, Switch, key_or, try_map_kinds, unbiased_mlp,
};
use crate::hf_config::raw::RawConfig;

/// MiMo-V2-Flash (`modeling_mimo_v2_flash.py`): q/k of `head_dim` (192), v/o of `v_head_dim`
/// (128); sliding layers (`layer_types`, else all but the first and every 6th) have twice
/// `num_key_value_heads` and a learned sink per head; q/k/v biased by `attention_bias`, never
/// `o_proj`; MoE layers (`mlp_layer_types`, else all but the first) have `n_routed_experts`
/// experts of `moe_intermediate_size` behind a bias-free router, no shared expert.
const MIMO_V2_FLASH: Block = Block {
    kv_default: Some(4),
    head_dim: HeadDim::KeyOr(192),
    attention: AttentionRule::Standard(StandardRule {
        qkv_bias: Switch::Key("attention_bias", false),
        o_bias: NO,
        ..PLAIN_ATTENTION
    }),
    mlp: unbiased_mlp(key_or(&["intermediate_size"], 16384)),
    moe: Some(MoeRule {
        experts: key_or(&["n_routed_experts", "num_local_experts"], 256),
        top_k: key_or(&["num_experts_per_tok"], 8),
        expert_width: key_or(&["moe_intermediate_size"], 2048),
        correction_bias: NO,
        expert_bias: NO,
        shared: Shared::None,
        shared_gate: false,
        sparsity: LISTED_DENSE,
    }),
    ..LLAMA
};

/// `MiMoV2FlashConfig.__post_init__`: `layer_types`, `mlp_layer_types`, and
/// `sliding_window_size + 1` as the window.
fn mimo_patch(raw: &mut RawConfig<'_>, map: &mut Map<String, Value>) -> Result<(), ConfigError> {
    // Global: the first layer and every 6th.
    layer_types_or(raw, |n| {
        let mut sliding = all_but_every(n, 6);
        sliding.overwrite(0..1, &false);
        sliding
    })?;
    if let Some(w) = raw.uint("sliding_window_size")? {
        map.insert(
            "sliding_window".to_owned(),
            // saturates: harmless, a window past any context takes every token either way.
            Value::from(w.saturating_add(1)),
        );
    } else if !raw.has("sliding_window") {
        raw.assume("sliding_window", 129, "absent; `MiMoV2FlashConfig` default");
        map.insert("sliding_window".to_owned(), Value::from(129));
    }
    dense_first_layer(raw, map)
}

/// MiMo-V2-Flash: q and k are `head_dim` wide per head, v and o `v_head_dim`. Every count
/// (projections, the cache's keys plus values, the score and value products) is that of a
/// head of the mean width `(head_dim + v_head_dim) / 2`, which the spec holds; `q_proj`'s bias
/// (`n_h·head_dim`) is an extra. Sliding layers double the KV heads and carry sinks.
pub(super) fn read_mimo(
    raw: &mut RawConfig<'_>,
    family: &Family,
    _: crate::hf_config::HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let mut spec = read_patched(raw, family, &MIMO_V2_FLASH, mimo_patch)?;
    let reason = "absent; `MiMoV2FlashConfig` default";
    let qk = raw.size_or(&["head_dim"], Sym::HeadDim, 192, reason)?;
    let v = raw.size_or(&["v_head_dim"], Sym::Named("v_head_dim"), 128, reason)?;
    let sum = qk
        .checked_add(v)
        .ok_or_else(|| raw.invalid("v_head_dim", &v.into(), "a width below 2^63"))?;
    if !sum.is_multiple_of(2) {
        return Err(raw.invalid(
            "v_head_dim",
            &v.into(),
            "a width of the same parity as `head_dim` (llmsize holds the mean head width)",
        ));
    }
    let mean = sum / 2;
    let bias = raw.flag_or("attention_bias", false, reason)?;
    let mut err = None;
    try_map_kinds(&mut spec, |layer| {
        let mut l = layer.clone();
        let sliding = l.sliding_window.is_some();
        if let Some(a) = standard(&mut l) {
            a.head_dim = mean;
            a.q_bias = false;
            if sliding {
                match a.num_kv_heads.checked_mul(2) {
                    Some(k) => a.num_kv_heads = k,
                    None => err = Some(()),
                }
                a.sinks = true;
            }
            if bias {
                let n = a.num_heads;
                l.extras.push(Extra::vector(
                    "self_attn.q_proj.bias",
                    "attention",
                    Category::Attention,
                    Expr::product(vec![Expr::sym(Sym::Heads, n), Expr::sym(Sym::HeadDim, qk)]),
                ));
            }
        }
        Ok(l)
    })?;
    if err.is_some() {
        return Err(raw.invalid(
            "num_key_value_heads",
            &Value::Null,
            "a count whose double fits",
        ));
    }
    Ok(spec)
}
