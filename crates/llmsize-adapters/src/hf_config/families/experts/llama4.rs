//! Llama 4's text model (`llama4_text`, `modeling_llama4.py`): interleaved MoE layers and
//! chunked attention.

use llmsize_core::expr::Sym;
use serde_json::{Map, Value};

use super::all_but_every;
use crate::error::ConfigError;
use crate::hf_config::family::{
    Block, HeadDim, LLAMA, MoeRule, NO, Shared, Sparsity, key_or, unbiased_mlp,
};
use crate::hf_config::raw::RawConfig;
use crate::hf_config::runs::Runs;

/// Llama 4's text model (`modeling_llama4.py`): q/k/v/o biased by `attention_bias`, its q/k
/// norm an L2 norm without weights; MoE layers (`moe_layers`, else every
/// `interleave_moe_layer_step`-th) have 16 experts of `intermediate_size`, a bias-free router
/// and one shared expert of `intermediate_size`; the other layers a dense MLP of
/// `intermediate_size_mlp`. `RoPE` layers (`no_rope_layers`, else all but every
/// `no_rope_layer_interval`-th) attend in chunks of `attention_chunk_size`, which the cache
/// keeps as a sliding window of that size.
pub(super) const LLAMA4_TEXT: Block = Block {
    kv_default: Some(8),
    head_dim: HeadDim::KeyOr(128),
    mlp: unbiased_mlp(key_or(&["intermediate_size_mlp"], 16384)),
    moe: Some(MoeRule {
        experts: key_or(&["num_local_experts"], 16),
        top_k: key_or(&["num_experts_per_tok"], 1),
        expert_width: key_or(&["intermediate_size"], 8192),
        correction_bias: NO,
        expert_bias: NO,
        shared: Shared::Width(key_or(&["intermediate_size"], 8192)),
        shared_gate: false,
        sparsity: Sparsity {
            first_dense: None,
            step: Some("interleave_moe_layer_step"),
            dense_list: None,
        },
    }),
    ..LLAMA
};

/// `Llama4TextConfig.__post_init__`: `moe_layers` and `layer_types` (chunked attention as a
/// sliding window of `attention_chunk_size`).
pub(super) fn llama4_patch(
    raw: &mut RawConfig<'_>,
    map: &mut Map<String, Value>,
) -> Result<(), ConfigError> {
    let reason = "absent; `Llama4TextConfig` default";
    let n = raw.size(&["num_hidden_layers"], Sym::Layers)?;
    if let Some(v) = raw.value("moe_layers") {
        let list = v
            .as_array()
            .ok_or_else(|| raw.invalid("moe_layers", v, "a list of layer indices"))?;
        let moe = list
            .iter()
            .map(|x| {
                x.as_u64()
                    .ok_or_else(|| raw.invalid("moe_layers", x, "layer indices"))
            })
            .collect::<Result<Vec<u64>, _>>()?;
        raw.derived.dense = Some(Runs::marked(n, moe, &false, &true));
        map.insert("interleave_moe_layer_step".to_owned(), Value::from(1));
    } else if !raw.has("interleave_moe_layer_step") {
        raw.assume("interleave_moe_layer_step", 1, reason);
    }
    let chunk = if raw.has("attention_chunk_size") {
        raw.size_opt("attention_chunk_size")?
    } else {
        raw.assume("attention_chunk_size", 8192, reason);
        Some(8192)
    };
    // `chunked_attention` layers are read as sliding (`family::windows`).
    let sliding = if let Some(v) = raw.value("layer_types") {
        let list = v
            .as_array()
            .ok_or_else(|| raw.invalid("layer_types", v, "a list of layer kinds"))?;
        let mut sliding = false;
        for t in list {
            let t = t
                .as_str()
                .ok_or_else(|| raw.invalid("layer_types", t, "strings such as `full_attention`"))?;
            sliding |= matches!(t, "chunked_attention" | "sliding_attention");
        }
        sliding
    } else {
        let rope: Runs<bool> = match raw.value("no_rope_layers") {
            Some(Value::Array(list)) if !list.is_empty() => {
                if (list.len() as u64) < n {
                    return Err(raw.invalid(
                        "no_rope_layers",
                        &Value::from(list.len()),
                        &format!("one entry per layer ({n})"),
                    ));
                }
                let mut rope = Runs::default();
                for x in list.iter().take(usize::try_from(n).unwrap_or(usize::MAX)) {
                    let on = match x.as_u64() {
                        Some(b) => b != 0,
                        None => x.as_bool().ok_or_else(|| {
                            raw.invalid("no_rope_layers", x, "1 (RoPE) or 0 (NoPE)")
                        })?,
                    };
                    rope.push(on, 1);
                }
                rope
            }
            _ => {
                let interval = if raw.has("no_rope_layer_interval") {
                    raw.size(
                        &["no_rope_layer_interval"],
                        Sym::Named("no_rope_layer_interval"),
                    )?
                } else {
                    raw.assume("no_rope_layer_interval", 4, reason);
                    4
                };
                all_but_every(n, interval)
            }
        };
        let sliding = rope.map(|r| *r && chunk.is_some());
        let any = sliding.any(|s| *s);
        raw.derived.sliding = Some(sliding);
        any
    };
    match chunk {
        Some(c) => {
            map.insert("sliding_window".to_owned(), Value::from(c));
        }
        None if sliding => {
            return Err(raw.missing("attention_chunk_size", "the chunk size of chunked layers"));
        }
        None => {}
    }
    Ok(())
}
