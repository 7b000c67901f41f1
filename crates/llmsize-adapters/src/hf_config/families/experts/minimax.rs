//! MiniMax-M2 (`minimax_m2`, `modeling_minimax_m2.py`) and MiniMax-M3's text model
//! (`minimax_m3_vl_text`, `modeling_minimax_m3_vl.py`), whose sparse layers add a lightning
//! indexer.

use llmsize_core::Category;
use llmsize_core::expr::{Expr, Sym};
use llmsize_core::spec::{Extra, ModelSpec};
use serde_json::{Map, Value};

use super::glm::GLM4_MOE;
use super::{LISTED_DENSE, mlp_layer_types, read_patched, standard, truthy};
use crate::error::ConfigError;
use crate::hf_config::family::{
    AttentionRule, Block, Family, HeadDim, LLAMA, MoeRule, NO, PLAIN_ATTENTION, QkNorm, Shared,
    StandardRule, key_or, map_layers_by, unbiased_mlp,
};
use crate::hf_config::raw::RawConfig;
use crate::hf_config::runs::Runs;

// ---------------------------------------------------------------------------------------------
// MiniMax-M2.

/// MiniMax-M2 (`modeling_minimax_m2.py`): no biases, q/k norms over the full projection
/// widths, every layer MoE with experts of `intermediate_size`; `e_score_correction_bias` is
/// a buffer.
pub(super) const MINIMAX_M2: Block = Block {
    kv_default: Some(8),
    head_dim: HeadDim::KeyOr(128),
    attention: AttentionRule::Standard(StandardRule {
        qk_norm: QkNorm::FullWidth,
        ..PLAIN_ATTENTION
    }),
    mlp: GLM4_MOE.mlp,
    moe: Some(MoeRule {
        experts: key_or(&["num_local_experts", "num_experts"], 256),
        top_k: key_or(&["num_experts_per_tok"], 8),
        expert_width: key_or(&["intermediate_size"], 1536),
        correction_bias: NO,
        expert_bias: NO,
        shared: Shared::None,
        shared_gate: false,
        sparsity: crate::hf_config::family::ALL_SPARSE,
    }),
    ..LLAMA
};

// ---------------------------------------------------------------------------------------------
// MiniMax-M3 (text).

/// MiniMax-M3's text model (`modeling_minimax_m3_vl.py`): no biases, per-head q/k norms;
/// MoE layers (`mlp_layer_types`, else `moe_layer_freq`, else all) have `num_local_experts`
/// experts of `intermediate_size` (bias-free router; `e_score_correction_bias` is a buffer)
/// and a shared MLP of `shared_intermediate_size`; dense layers an MLP of
/// `dense_intermediate_size`. Layers with the sparse "lightning indexer"
/// (`minimax_m3_sparse`) also cache index keys, which llmsize does not hold: such configs
/// are refused.
const MINIMAX_M3_TEXT: Block = Block {
    kv_default: Some(4),
    head_dim: HeadDim::KeyOr(128),
    attention: AttentionRule::Standard(StandardRule {
        qk_norm: QkNorm::PerHead,
        ..PLAIN_ATTENTION
    }),
    mlp: unbiased_mlp(key_or(&["dense_intermediate_size"], 12288)),
    moe: Some(MoeRule {
        experts: key_or(&["num_local_experts", "num_experts"], 128),
        top_k: key_or(&["num_experts_per_tok"], 4),
        expert_width: key_or(&["intermediate_size"], 3072),
        correction_bias: NO,
        expert_bias: NO,
        shared: Shared::Width(key_or(&["shared_intermediate_size"], 3072)),
        shared_gate: false,
        sparsity: LISTED_DENSE,
    }),
    ..LLAMA
};

/// `MiniMaxM3VLTextConfig.__post_init__`: which layers build the sparse lightning indexer
/// (`layer_types` entries `minimax_m3_sparse`, else `sparse_attention_config.
/// sparse_attention_freq`, else none).
fn minimax_m3_sparse_layers(raw: &RawConfig<'_>, n: u64) -> Result<Runs<bool>, ConfigError> {
    let (key, list) = if let Some(v) = raw.value("layer_types") {
        let list = v
            .as_array()
            .ok_or_else(|| raw.invalid("layer_types", v, "a list of layer kinds"))?;
        let list = Runs::from_list(list.iter().map(|t| t.as_str() == Some("minimax_m3_sparse")));
        ("layer_types", list)
    } else if let Some(v) = raw
        .value("sparse_attention_config")
        .and_then(|c| c.get("sparse_attention_freq"))
    {
        let list = v.as_array().ok_or_else(|| {
            raw.invalid(
                "sparse_attention_config.sparse_attention_freq",
                v,
                "a flag per layer",
            )
        })?;
        (
            "sparse_attention_config.sparse_attention_freq",
            Runs::from_list(list.iter().map(truthy)),
        )
    } else {
        return Ok(Runs::uniform(false, n));
    };
    let len = list.len().unwrap_or(u64::MAX);
    if len != n {
        return Err(raw.invalid(
            key,
            &Value::from(len),
            &format!("one entry per layer ({n})"),
        ));
    }
    Ok(list)
}

/// `MiniMaxM3VLTextConfig.__post_init__`: `layer_types` from `sparse_attention_freq` (no
/// layer slides either way: [`minimax_m3_sparse_layers`] places the indexers) and
/// `mlp_layer_types` from `moe_layer_freq`, else all sparse.
fn minimax_m3_patch(
    raw: &mut RawConfig<'_>,
    map: &mut Map<String, Value>,
) -> Result<(), ConfigError> {
    let n = raw.size(&["num_hidden_layers"], Sym::Layers)?;
    if raw.value("layer_types").is_none() {
        minimax_m3_sparse_layers(raw, n)?;
        raw.derived.sliding = Some(Runs::uniform(false, n));
    }
    if raw.value("mlp_layer_types").is_some() {
        return mlp_layer_types(raw, map);
    }
    if let Some(v) = raw.value("moe_layer_freq")
        && let Some(list) = v.as_array()
    {
        if list.len() as u64 > n {
            return Err(raw.invalid(
                "moe_layer_freq",
                v,
                &format!("at most one entry per layer ({n})"),
            ));
        }
        let mut dense = Runs::from_list(list.iter().map(|f| !truthy(f)));
        dense.push(false, n.saturating_sub(list.len() as u64));
        raw.derived.dense = Some(dense);
    }
    Ok(())
}

/// MiniMax-M3's text model: the block, then on sparse layers the lightning indexer
/// (`MiniMaxM3VLIndexer`: `q_proj` `d → index_n_heads·index_head_dim`, `k_proj`
/// `d → index_head_dim`, per-head q/k `RMSNorm`s of `index_head_dim`, all under `self_attn`),
/// whose keys (`index_head_dim` per token) the cache keeps beside K and V. The sizes come
/// from `index_*`, overridden by the legacy `sparse_attention_config` keys.
pub(super) fn read_minimax_m3_text(
    raw: &mut RawConfig<'_>,
    family: &Family,
    _: crate::hf_config::HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let mut spec = read_patched(raw, family, &MINIMAX_M3_TEXT, minimax_m3_patch)?;
    let n = raw.size(&["num_hidden_layers"], Sym::Layers)?;
    let sparse = minimax_m3_sparse_layers(raw, n)?;
    if !sparse.any(|s| *s) {
        return Ok(spec);
    }
    let reason = "absent; `MiniMaxM3VLTextConfig` default";
    let legacy = |raw: &RawConfig<'_>, key: &str| -> Result<Option<u64>, ConfigError> {
        match raw
            .value("sparse_attention_config")
            .and_then(|c| c.get(key))
        {
            None => Ok(None),
            Some(v) => v.as_u64().filter(|x| *x > 0).map(Some).ok_or_else(|| {
                raw.invalid(
                    &format!("sparse_attention_config.{key}"),
                    v,
                    "a positive integer",
                )
            }),
        }
    };
    let idx_heads = match legacy(raw, "sparse_num_index_heads")? {
        Some(h) => h,
        None => raw.size_or(&["index_n_heads"], Sym::Named("index_n_heads"), 4, reason)?,
    };
    let idx_dim = match legacy(raw, "sparse_index_dim")? {
        Some(h) => h,
        None => raw.size_or(
            &["index_head_dim"],
            Sym::Named("index_head_dim"),
            128,
            reason,
        )?,
    };
    raw.mul(idx_heads, idx_dim, "index_n_heads·index_head_dim")?;
    let d = spec.hidden_size;
    map_layers_by(&mut spec, &sparse, |layer, on| {
        let mut l = layer.clone();
        if *on && let Some(a) = standard(&mut l) {
            a.indexer_key_dim = Some(idx_dim);
            l.extras
                .extend(indexer_extras(d, idx_heads, idx_dim, "self_attn.indexer"));
        }
        Ok(l)
    })?;
    Ok(spec)
}

/// A lightning indexer's tensors under `path`: `q_proj` `d → heads·dim`, `k_proj` `d → dim`,
/// q/k `RMSNorm`s of `dim` (the truth files them all as attention). Its block indices only
/// build the mask (`MiniMaxM3VLIndexer`): no gradient reaches it ([`Extra::gradless`]).
fn indexer_extras(d: u64, heads: u64, dim: u64, path: &str) -> Vec<Extra> {
    let idx = || Expr::sym(Sym::Named("d_idx"), dim);
    vec![
        Extra::linear(
            format!("{path}.q_proj.weight"),
            "indexer",
            Category::Attention,
            Expr::sym(Sym::Hidden, d),
            Expr::product(vec![Expr::sym(Sym::Named("index_n_heads"), heads), idx()]),
        ),
        Extra::linear(
            format!("{path}.k_proj.weight"),
            "indexer",
            Category::Attention,
            Expr::sym(Sym::Hidden, d),
            idx(),
        ),
        Extra::vector(
            format!("{path}.q_norm.weight"),
            "indexer",
            Category::Attention,
            idx(),
        ),
        Extra::vector(
            format!("{path}.k_norm.weight"),
            "indexer",
            Category::Attention,
            idx(),
        ),
    ]
    .into_iter()
    .map(Extra::gradless)
    .collect()
}
