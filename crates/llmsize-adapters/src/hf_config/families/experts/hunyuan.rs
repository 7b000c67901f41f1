//! Tencent's Hunyuan and HY mixtures: Hunyuan MoE (`hunyuan_v1_moe`,
//! `modeling_hunyuan_v1_moe.py`), HY-V3 (`hy_v3`, `modeling_hy_v3.py`), and HY-V4 (`hy_v4`,
//! `modeling_hy_v4.py`) with HY-V4-VL's text model (`hy_v4_vl_text`, `modeling_hy_v4_vl.py`):
//! DeepSeek-V3.2's MLA with shared top-k, output gates, sinks and hyper-connections.

use llmsize_core::Category;
use llmsize_core::expr::{Expr, Sym};
use llmsize_core::spec::{Extra, Ffn, Layer, ModelSpec};
use serde_json::{Map, Value};

use super::{
    LISTED_DENSE, dense_first_layer, derive_on_copy, dsa_indexer_extras, read_patched,
    shared_biases, write_defaults,
};
use crate::error::ConfigError;
use crate::hf_config::HeadChoice;
use crate::hf_config::family::{
    ALL_SPARSE, AttentionRule, Block, Family, HeadDim, LLAMA, LLAMA_ATTENTION, LLAMA_MLP, MlpRule,
    MoeRule, NO, QkNorm, Shared, StandardRule, Switch, key_or, map_layers_by, read_block,
    unbiased_mlp,
};
use crate::hf_config::raw::RawConfig;
use crate::hf_config::runs::Runs;

// ---------------------------------------------------------------------------------------------
// Hunyuan MoE.

/// Hunyuan MoE (`modeling_hunyuan_v1_moe.py`): Hunyuan dense's attention and norms; every
/// layer's `HunYuanMoEV1Moe` is a bias-free router `wg` (`d → E`), `num_experts` gated experts
/// of `intermediate_size` and one `shared_mlp` of the same width.
const HUNYUAN_V1_MOE: Block = Block {
    moe: Some(MoeRule {
        experts: key_or(&["num_experts", "num_local_experts"], 1),
        top_k: key_or(&["moe_topk", "num_experts_per_tok"], 1),
        expert_width: key_or(&["intermediate_size"], 11008),
        correction_bias: NO,
        expert_bias: NO,
        shared: Shared::Width(key_or(&["intermediate_size"], 11008)),
        shared_gate: false,
        sparsity: ALL_SPARSE,
    }),
    ..crate::hf_config::families::dense::HUNYUAN_V1_DENSE
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
    let mut spec = read_patched(raw, family, &HUNYUAN_V1_MOE, |_, map| {
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

// ---------------------------------------------------------------------------------------------
// HY-V3.

/// HY-V3 (`modeling_hy_v3.py`): q/k/v/o biased by `attention_bias`, per-head q/k norms, MLPs
/// biased by `mlp_bias`; MoE layers (`mlp_layer_types`, else all but the first) have
/// `num_experts` experts of `moe_intermediate_size`, a bias-free router (its
/// `e_score_correction_bias` is a buffer) and `num_shared_experts` of that width as one
/// shared MLP.
pub(super) const HY_V3: Block = Block {
    kv_default: Some(8),
    head_dim: HeadDim::KeyOr(128),
    attention: AttentionRule::Standard(StandardRule {
        qk_norm: QkNorm::PerHead,
        ..LLAMA_ATTENTION
    }),
    mlp: MlpRule {
        width: key_or(&["intermediate_size"], 13312),
        ..LLAMA_MLP
    },
    moe: Some(MoeRule {
        experts: key_or(&["num_experts", "num_local_experts"], 192),
        top_k: key_or(&["num_experts_per_tok"], 8),
        expert_width: key_or(&["moe_intermediate_size"], 1536),
        correction_bias: NO,
        expert_bias: NO,
        shared: Shared::Count(key_or(&["num_shared_experts"], 1)),
        shared_gate: false,
        sparsity: LISTED_DENSE,
    }),
    tweak: Some(shared_mlp_bias),
    ..LLAMA
};

/// The shared experts carry biases with `mlp_bias`.
fn shared_mlp_bias(raw: &mut RawConfig<'_>, spec: &mut ModelSpec) -> Result<(), ConfigError> {
    if raw.flag("mlp_bias")? == Some(true) {
        shared_biases(spec);
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// HY-V4: DeepSeek-V3.2's MLA with shared top-k, output gates, sinks and hyper-connections.

/// HY-V4 (`modeling_hy_v4.py`): DeepSeek's MLA (`q_lora_rank` 1536) with a sigmoid output
/// gate `gate_proj` (`d → n_h·v_head_dim`) and a learned sink per head; the DSA indexer only
/// on `full` layers of `indexer_types` (else layer 0 and every 4th from 1; `shared` layers
/// reuse the previous top-k and cache no index keys). Every layer has two hyper-connections
/// (`attn_hc`, `ffn_hc`: `fn` `hc_mult·d → 2·hc_mult`, `base` `2·hc_mult`, `scale` 2) and the
/// model a hyper head (`hc_fn` `hc_mult·d → hc_mult`, `hc_base`, `hc_scale`), all
/// `layer_extras`. MoE layers (`mlp_layer_types`, else all but the first): `n_routed_experts`
/// of `moe_intermediate_size`, a bias-free router, `n_shared_experts` of that width as one
/// shared MLP.
const HY_V4: Block = Block {
    kv_default: None,
    attention: AttentionRule::Latent {
        q_lora_default: Some(1536),
        bias: Switch::Key("attention_bias", false),
    },
    mlp: unbiased_mlp(key_or(&["intermediate_size"], 6912)),
    moe: Some(MoeRule {
        experts: key_or(&["n_routed_experts", "num_local_experts"], 256),
        top_k: key_or(&["num_experts_per_tok"], 8),
        expert_width: key_or(&["moe_intermediate_size"], 768),
        correction_bias: NO,
        expert_bias: NO,
        shared: Shared::Count(key_or(&["n_shared_experts"], 1)),
        shared_gate: false,
        sparsity: LISTED_DENSE,
    }),
    ..LLAMA
};

/// HY-V4-VL's text model (`modeling_hy_v4_vl.py`, `HYV4VLTextConfig`): HY-V4's layers with
/// larger defaults.
const HY_V4_VL_TEXT: Block = Block {
    attention: AttentionRule::Latent {
        q_lora_default: Some(2048),
        bias: Switch::Key("attention_bias", false),
    },
    mlp: unbiased_mlp(key_or(&["intermediate_size"], 18432)),
    moe: Some(MoeRule {
        experts: key_or(&["n_routed_experts", "num_local_experts"], 256),
        top_k: key_or(&["num_experts_per_tok"], 8),
        expert_width: key_or(&["moe_intermediate_size"], 2048),
        correction_bias: NO,
        expert_bias: NO,
        shared: Shared::Count(key_or(&["n_shared_experts"], 1)),
        shared_gate: false,
        sparsity: LISTED_DENSE,
    }),
    ..HY_V4
};

/// A HY-V4 text class: its block and the defaults of the keys read as required.
pub(super) struct HyV4Class {
    block: &'static Block,
    class: &'static str,
    /// `hidden_size`, `num_hidden_layers`, `num_attention_heads`, `index_n_heads`.
    sizes: [u64; 4],
}

/// HY-V4.
pub(super) const HY_V4_CLASS: HyV4Class = HyV4Class {
    block: &HY_V4,
    class: "HYV4Config",
    sizes: [2816, 34, 32, 16],
};

/// HY-V4-VL's text model.
pub(super) const HY_V4_VL_TEXT_CLASS: HyV4Class = HyV4Class {
    block: &HY_V4_VL_TEXT,
    class: "HYV4VLTextConfig",
    sizes: [6144, 78, 64, 32],
};

/// The class defaults of the sizes the block reads as required, and `mlp_layer_types`.
fn hy_v4_patch(
    raw: &mut RawConfig<'_>,
    map: &mut Map<String, Value>,
    c: &HyV4Class,
) -> Result<(), ConfigError> {
    if raw.has("q_lora_rank") && raw.value("q_lora_rank").is_none() {
        return Err(raw.invalid(
            "q_lora_rank",
            &Value::Null,
            "a positive rank (HY-V4's indexer reads the query latent)",
        ));
    }
    let reason = format!("absent; `{}` default", c.class);
    let [hidden, layers, heads, _] = c.sizes;
    let sizes = [
        ("hidden_size", hidden),
        ("num_hidden_layers", layers),
        ("num_attention_heads", heads),
        ("vocab_size", 120_832),
        ("kv_lora_rank", 512),
        ("qk_rope_head_dim", 64),
        ("v_head_dim", 256),
        ("qk_nope_head_dim", 192),
    ];
    write_defaults(raw, map, &sizes, &reason);
    derive_on_copy(raw, map, dense_first_layer)
}

/// HY-V4's text model: the block, then gates, sinks, indexers and hyper-connections.
pub(super) fn read_hy_v4(
    raw: &mut RawConfig<'_>,
    family: &Family,
    c: &HyV4Class,
) -> Result<ModelSpec, ConfigError> {
    let mut spec = read_patched(raw, family, c.block, |r, m| hy_v4_patch(r, m, c))?;
    let reason = &format!("absent; `{}` default", c.class);
    let [_, _, _, idx_default] = c.sizes;
    let idx_heads = raw.size_or(
        &["index_n_heads"],
        Sym::Named("index_n_heads"),
        idx_default,
        reason,
    )?;
    let idx_dim = raw.size_or(&["index_head_dim"], Sym::Named("d_idx"), 128, reason)?;
    let hc = raw.size_or(&["hc_mult"], Sym::Named("hc_mult"), 4, reason)?;
    let n = spec.num_layers();
    let full: Runs<bool> = match raw.value("indexer_types") {
        Some(v) if !v.is_null() => {
            let list = v
                .as_array()
                .ok_or_else(|| raw.invalid("indexer_types", v, "a list of `full`/`shared`"))?;
            if list.len() as u64 != n {
                return Err(raw.invalid("indexer_types", v, &format!("one entry per layer ({n})")));
            }
            let mut full = Runs::default();
            for t in list {
                match t.as_str() {
                    Some("full") => full.push(true, 1),
                    Some("shared") => full.push(false, 1),
                    _ => return Err(raw.invalid("indexer_types", t, "`full` or `shared`")),
                }
            }
            full
        }
        // Full: layer 0 and every 4th from layer 1 (`(i − 1) % 4 == 0`).
        _ => {
            let mut full = Runs::uniform(true, n.min(1));
            full.append(Runs::periodic(
                n.saturating_sub(1),
                &[(true, 1), (false, 3)],
            ));
            full
        }
    };
    let d = spec.hidden_size;
    raw.mul(hc, d, "hc_mult·hidden_size")?;
    let hc_sym = || Expr::sym(Sym::Named("hc_mult"), hc);
    let streams = || Expr::product(vec![hc_sym(), Expr::sym(Sym::Hidden, d)]);
    let connection = |name: &'static str| -> [Extra; 3] {
        let two = || Expr::product(vec![Expr::Lit(2), hc_sym()]);
        [
            Extra::linear(
                format!("{name}.fn"),
                "hyper-connections",
                Category::LayerExtras,
                streams(),
                two(),
            ),
            Extra::vector(
                format!("{name}.base"),
                "hyper-connections",
                Category::LayerExtras,
                two(),
            ),
            Extra::vector(
                format!("{name}.scale"),
                "hyper-connections",
                Category::LayerExtras,
                Expr::Lit(2),
            ),
        ]
    };
    map_layers_by(&mut spec, &full, |layer, own| {
        let own = *own;
        let mut l = layer.clone();
        if let llmsize_core::spec::Attention::Latent(a) = &mut l.attention {
            let heads = || Expr::sym(Sym::Heads, a.num_heads);
            l.extras.push(Extra::linear(
                "self_attn.gate_proj.weight",
                "attention",
                Category::Attention,
                Expr::sym(Sym::Hidden, d),
                Expr::product(vec![heads(), Expr::sym(Sym::ValueDim, a.v_head_dim)]),
            ));
            l.extras.push(Extra::vector(
                "self_attn.sinks",
                "attention",
                Category::Attention,
                heads(),
            ));
            if own {
                a.indexer_key_dim = Some(idx_dim);
                let r = a.q_lora_rank.unwrap_or(1);
                l.extras
                    .extend(dsa_indexer_extras(d, r, idx_heads, idx_dim));
            }
        }
        l.extras.extend(connection("attn_hc"));
        l.extras.extend(connection("ffn_hc"));
        Ok(l)
    })?;
    spec.extras.push(Extra::linear(
        "model.hc_head.hc_fn",
        "hyper-connections",
        Category::LayerExtras,
        streams(),
        hc_sym(),
    ));
    spec.extras.push(Extra::vector(
        "model.hc_head.hc_base",
        "hyper-connections",
        Category::LayerExtras,
        hc_sym(),
    ));
    spec.extras.push(Extra::vector(
        "model.hc_head.hc_scale",
        "hyper-connections",
        Category::LayerExtras,
        Expr::Lit(1),
    ));
    Ok(spec)
}
