//! More mixtures of experts, listed in `experts.rs`'s `FAMILIES`: Hunyuan MoE, dots.llm1,
//! DBRX. Each block is the configuration class's defaults and the switches of its
//! `modeling_*.py` (transformers 5.24).

use llmsize_core::spec::{Ffn, Layer, ModelSpec};
use serde_json::Value;

use crate::error::ConfigError;
use crate::hf_config::HeadChoice;
use crate::hf_config::family::{
    ALL_SPARSE, Block, Family, MoeRule, NO, Shared, key_or, map_layers_by, read_block,
};
use crate::hf_config::raw::RawConfig;
use crate::hf_config::runs::Runs;

/// Hunyuan MoE (`modeling_hunyuan_v1_moe.py`): Hunyuan dense's attention and norms; every
/// layer's `HunYuanMoEV1Moe` is a bias-free router `wg` (`d → E`), `num_experts` gated experts
/// of `intermediate_size` and one `shared_mlp` of the same width.
const HUNYUAN_V1_MOE: Block = Block {
    moe: Some(MoeRule {
        experts: key_or(&["num_experts", "num_local_experts"], 1),
        top_k: key_or(&["moe_topk", "num_experts_per_tok"], 1),
        expert_width: key_or(&["intermediate_size"], 11008),
        router_bias: NO,
        expert_bias: NO,
        shared: Shared::Width(key_or(&["intermediate_size"], 11008)),
        shared_gate: false,
        sparsity: ALL_SPARSE,
    }),
    ..super::dense::HUNYUAN_V1_DENSE
};

/// Hunyuan MoE: `moe_topk` may be a list, layer `i`'s router picking `moe_topk[i]`
/// (`HunYuanMoEV1Gate`); the block is read with the largest (checked against `num_experts`)
/// and each layer's `k` set after. A list `num_experts` does not build (the experts read it
/// as one number) and is refused by the block.
pub(super) fn read_hunyuan_v1_moe(
    raw: &mut RawConfig<'_>,
    family: &Family,
    _: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let Some(Value::Array(list)) = raw.value("moe_topk").cloned() else {
        return read_block(raw, family, &HUNYUAN_V1_MOE);
    };
    let found = Value::Array(list.clone());
    let ks = list
        .iter()
        .map(|k| k.as_u64().filter(|&k| k > 0))
        .collect::<Option<Vec<u64>>>()
        .ok_or_else(|| raw.invalid("moe_topk", &found, "positive integers, one per layer"))?;
    let max = ks.iter().copied().max().unwrap_or(1);
    let mut spec = super::experts::read_patched(raw, family, &HUNYUAN_V1_MOE, |_, map| {
        map.insert("moe_topk".to_owned(), Value::from(max));
        Ok(())
    })?;
    let n = spec.stacks.first().map_or(0, |s| s.layers.len());
    if (ks.len() as u64) < n {
        return Err(raw.invalid("moe_topk", &found, &format!("one entry per layer ({n})")));
    }
    let mut per_layer = Runs::default();
    for &k in ks.iter().take(usize::try_from(n).unwrap_or(usize::MAX)) {
        per_layer.push(k, 1);
    }
    map_layers_by(&mut spec, &per_layer, |layer, &k| {
        let mut l: Layer = layer.clone();
        if let Ffn::Moe(m) = &mut l.ffn {
            m.experts_per_token = k;
        }
        Ok(l)
    })?;
    Ok(spec)
}
