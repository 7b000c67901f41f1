//! More mixtures of experts, listed in `experts.rs`'s `FAMILIES`: Hunyuan MoE, dots.llm1,
//! DBRX. Each block is the configuration class's defaults and the switches of its
//! `modeling_*.py` (transformers 5.24).

use llmsize_core::Category;
use llmsize_core::expr::{Expr, Sym};
use llmsize_core::spec::{Attention, Extra, Ffn, Layer, ModelSpec, NormKind};
use serde_json::{Map, Value};

use crate::error::ConfigError;
use crate::hf_config::HeadChoice;
use crate::hf_config::family::{
    ALL_SPARSE, AttentionRule, Block, Family, HeadDim, LLAMA, LLAMA_ATTENTION, MlpRule, MoeRule,
    NO, NormRule, PLAIN_ATTENTION, QkNorm, Shared, Sparsity, StandardRule, key, key_or, map_kinds,
    map_layers_by, read_block,
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

/// dots.llm1 (`modeling_dots1.py`): q/k/v/o biased by `attention_bias`, per-head q/k
/// `RMSNorm`s, `head_dim` `hidden_size // num_attention_heads` (the class has no such field);
/// from layer `first_k_dense_replace` on, `Dots1MoE`: a router `d → E` (its
/// `e_score_correction_bias` is a buffer), `n_routed_experts` gated experts of
/// `moe_intermediate_size` and one shared MLP `n_shared_experts` times as wide; the others a
/// gated MLP of `intermediate_size`. The expert counts default to `null`, which does not build.
const DOTS1: Block = Block {
    hidden: key_or(&["hidden_size"], 4608),
    layers: key_or(&["num_hidden_layers"], 62),
    heads: key_or(&["num_attention_heads"], 32),
    vocab: key_or(&["vocab_size"], 152_064),
    kv_default: Some(32),
    head_dim: HeadDim::KeyOrFloor,
    attention: AttentionRule::Standard(StandardRule {
        qk_norm: QkNorm::PerHead,
        ..LLAMA_ATTENTION
    }),
    mlp: MlpRule {
        width: key_or(&["intermediate_size"], 10944),
        gated: true,
        up_bias: NO,
        down_bias: NO,
    },
    moe: Some(MoeRule {
        experts: key(&["n_routed_experts", "num_local_experts"]),
        top_k: key(&["num_experts_per_tok"]),
        expert_width: key_or(&["moe_intermediate_size"], 1408),
        router_bias: NO,
        expert_bias: NO,
        shared: Shared::Count(key(&["n_shared_experts"])),
        shared_gate: false,
        sparsity: Sparsity {
            first_dense: Some(key_or(&["first_k_dense_replace"], 0)),
            ..ALL_SPARSE
        },
    }),
    ..LLAMA
};

/// dots.llm1.
pub(super) fn read_dots1(
    raw: &mut RawConfig<'_>,
    family: &Family,
    _: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    super::experts::read_patched(raw, family, &DOTS1, dots1_windows)
}

/// `sliding_window` 4096 when absent (written in: the sliding layers keep it), and
/// `Dots1Config.__post_init__` without `layer_types`: layers from `max_window_layers`
/// (default 62) slide when `sliding_window` is set.
fn dots1_windows(raw: &mut RawConfig<'_>, map: &mut Map<String, Value>) -> Result<(), ConfigError> {
    if !raw.has("sliding_window") {
        raw.assume("sliding_window", 4096, "absent; `Dots1Config` default");
        map.insert("sliding_window".to_owned(), Value::from(4096));
    }
    if raw.value("layer_types").is_some() {
        return Ok(());
    }
    let n = raw.size_opt("num_hidden_layers")?.unwrap_or(62);
    let from = match raw.uint("max_window_layers")? {
        Some(from) => from,
        None if raw.has("max_window_layers")
            && map.get("sliding_window").is_some_and(|w| !w.is_null()) =>
        {
            return Err(raw.missing(
                "max_window_layers",
                "an integer (`__post_init__` compares each layer index with it)",
            ));
        }
        None => 62,
    };
    let slides = map.get("sliding_window").is_some_and(|w| !w.is_null());
    raw.derived.sliding = Some(Runs::from_index(n, from).map(|&past| past && slides));
    Ok(())
}

/// DBRX (`modeling_dbrx.py`): `d_model`, `n_heads` and `n_layers` at the top, the attention's
/// and the experts' sizes in `attn_config` and `ffn_config` (moved up before the block reads
/// them, [`dbrx_patch`]). `DbrxAttention`: a fused bias-free `Wqkv` `d → d + 2·n_kv·d_h` with
/// `d_h = d // n_h` and `out_proj` `d → d`; bias-free `LayerNorm`s; every layer a router
/// `d → E` and `moe_num_experts` gated experts (`w1`, `v1`, `w2`) of `ffn_hidden_size`.
const DBRX: Block = Block {
    hidden: key_or(&["d_model", "hidden_size"], 2048),
    layers: key_or(&["n_layers", "num_hidden_layers"], 24),
    heads: key_or(&["n_heads", "num_attention_heads"], 16),
    vocab: key_or(&["vocab_size"], 32000),
    kv_default: Some(1),
    head_dim: HeadDim::Floor,
    attention: AttentionRule::Standard(StandardRule {
        fused: true,
        ..PLAIN_ATTENTION
    }),
    mlp: MlpRule {
        width: key_or(&["ffn_hidden_size"], 3584),
        gated: true,
        up_bias: NO,
        down_bias: NO,
    },
    moe: Some(MoeRule {
        experts: key_or(&["moe_num_experts"], 4),
        top_k: key_or(&["moe_top_k"], 1),
        expert_width: key_or(&["ffn_hidden_size"], 3584),
        router_bias: NO,
        expert_bias: NO,
        shared: Shared::None,
        shared_gate: false,
        sparsity: ALL_SPARSE,
    }),
    norm: NormRule {
        kind: NormKind::LayerNorm,
        bias: NO,
        per_layer: 2,
    },
    ..LLAMA
};

/// DBRX. `DbrxConfig.validate_architecture` refuses `tie_word_embeddings`; the attention
/// reads `attn_config.rope_theta`, which `DbrxAttentionConfig` does not define (its default
/// does not build).
pub(super) fn read_dbrx(
    raw: &mut RawConfig<'_>,
    family: &Family,
    _: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    if raw.flag("tie_word_embeddings")? == Some(true) {
        return Err(raw.invalid(
            "tie_word_embeddings",
            &Value::Bool(true),
            "`false` (`DbrxConfig` does not support tied embeddings)",
        ));
    }
    let mut spec = super::experts::read_patched(raw, family, &DBRX, dbrx_patch)?;
    dbrx_full_width(&mut spec);
    Ok(spec)
}

/// `attn_config.kv_n_heads` as `num_key_value_heads` (as `__post_init__` sets it) and
/// `ffn_config`'s `ffn_hidden_size`, `moe_num_experts`, `moe_top_k` at the top level (the
/// sub-configs' defaults when absent).
fn dbrx_patch(raw: &mut RawConfig<'_>, map: &mut Map<String, Value>) -> Result<(), ConfigError> {
    let sub = |raw: &RawConfig<'_>, key: &str| match raw.value(key) {
        None => Ok(Map::new()),
        Some(Value::Object(m)) => Ok(m.clone()),
        Some(v) => Err(raw.invalid(key, v, "an object")),
    };
    let attn = sub(raw, "attn_config")?;
    if !attn.contains_key("rope_theta") {
        return Err(raw.missing(
            "attn_config.rope_theta",
            "a number (`DbrxAttention` reads it; `DbrxAttentionConfig` has no default)",
        ));
    }
    let ffn = sub(raw, "ffn_config")?;
    let moved = [
        (&attn, "kv_n_heads", "num_key_value_heads"),
        (&ffn, "ffn_hidden_size", "ffn_hidden_size"),
        (&ffn, "moe_num_experts", "moe_num_experts"),
        (&ffn, "moe_top_k", "moe_top_k"),
    ];
    for (from, key, to) in moved {
        map.remove(to);
        if let Some(v) = from.get(key) {
            map.insert(to.to_owned(), v.clone());
        }
    }
    Ok(())
}

/// `Wqkv`'s query rows and `out_proj`'s inputs are `d` wide, not `n_h·(d // n_h)`: where
/// `n_h` does not divide `d` (the model builds, only its forward fails), the `r = d − n_h·d_h`
/// rows and columns past the heads are extras.
fn dbrx_full_width(spec: &mut ModelSpec) {
    let d = spec.hidden_size;
    map_kinds(spec, |l| {
        let Attention::Standard(a) = &l.attention else {
            return;
        };
        // `n_h·(d // n_h) ≤ d`: the product never overflows.
        let r = a
            .num_heads
            .checked_mul(a.head_dim)
            .map_or(0, |w| d.saturating_sub(w));
        if r > 0 {
            let (part, c) = ("attention", Category::Attention);
            let hid = || Expr::sym(Sym::Hidden, d);
            l.extras.push(Extra::linear(
                "attn.Wqkv.weight (query rows past n_h·d_h)",
                part,
                c,
                hid(),
                Expr::Lit(r),
            ));
            l.extras.push(Extra::linear(
                "attn.out_proj.weight (columns past n_h·d_h)",
                part,
                c,
                Expr::Lit(r),
                hid(),
            ));
        }
    });
}
