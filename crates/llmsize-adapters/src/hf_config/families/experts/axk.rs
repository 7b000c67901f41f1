//! A.X-K1 (`axk1`, `modeling_axk1.py`: DeepSeek-V3 with a norm after each MoE block) and
//! A.X-K2 (`axk2`, `modeling_axk2.py`: DeepSeek-V3.2's MLA with a fused query/gate projection
//! and gated norms).

use llmsize_core::Category;
use llmsize_core::expr::{Expr, Sym};
use llmsize_core::spec::{Extra, Ffn, ModelSpec};
use serde_json::{Map, Value};

use super::{
    LISTED_DENSE, derive_on_copy, dsa_indexer_extras, mlp_layer_types, read_patched, write_defaults,
};
use crate::error::ConfigError;
use crate::hf_config::family::{
    AttentionRule, Block, Family, LLAMA, MoeRule, NO, Shared, Switch, key_or, try_map_kinds,
    unbiased_mlp,
};
use crate::hf_config::raw::RawConfig;
use crate::hf_config::runs::Runs;

// ---------------------------------------------------------------------------------------------
// A.X-K1: DeepSeek-V3 with a norm after each MoE block.

/// A.X-K1 (`modeling_axk1.py`): DeepSeek-V3's latent attention (`q_a_proj`,
/// `kv_a_proj_with_mqa` and `o_proj` biased by `attention_bias`) and MoE (`n_routed_experts`
/// of `moe_intermediate_size`, bias-free router whose `e_score_correction_bias` is a buffer,
/// `n_shared_experts` of that width as one shared MLP), plus a `post_mlp_layernorm` in each
/// MoE block. Dense layers from `mlp_layer_types`, else those below `first_k_dense_replace`
/// or off `moe_layer_freq`.
pub(super) const AXK1: Block = Block {
    kv_default: None,
    attention: AttentionRule::Latent {
        q_lora_default: Some(1536),
        bias: Switch::Key("attention_bias", false),
    },
    mlp: unbiased_mlp(key_or(&["intermediate_size"], 18432)),
    moe: Some(MoeRule {
        experts: key_or(&["n_routed_experts", "num_local_experts"], 192),
        top_k: key_or(&["num_experts_per_tok"], 8),
        expert_width: key_or(&["moe_intermediate_size"], 2048),
        correction_bias: NO,
        expert_bias: NO,
        shared: Shared::Count(key_or(&["n_shared_experts"], 1)),
        shared_gate: false,
        sparsity: LISTED_DENSE,
    }),
    tweak: Some(post_moe_norm),
    ..LLAMA
};

/// `AXK1Config.__post_init__`: `mlp_layer_types` from `first_k_dense_replace` (1) and
/// `moe_layer_freq` (1) when absent.
pub(super) fn axk1_patch(
    raw: &mut RawConfig<'_>,
    map: &mut Map<String, Value>,
) -> Result<(), ConfigError> {
    if raw.value("mlp_layer_types").is_some() {
        return mlp_layer_types(raw, map);
    }
    let n = raw.size(&["num_hidden_layers"], Sym::Layers)?;
    let first = raw.uint("first_k_dense_replace")?.unwrap_or(1);
    let freq = raw.size_opt("moe_layer_freq")?.unwrap_or(1);
    // Sparse where `i ≥ first` and `i % freq == 0`.
    let on_freq = Runs::periodic(n, &[(true, 1), (false, freq.saturating_sub(1))]);
    let sparse = Runs::from_index(n, first).zip(&on_freq);
    raw.derived.dense = Some(sparse.map(|&(from, on)| !(from && on)));
    Ok(())
}

/// An `RMSNorm` of `d` after every MoE block (`mlp.post_mlp_layernorm`).
fn post_moe_norm(_: &mut RawConfig<'_>, spec: &mut ModelSpec) -> Result<(), ConfigError> {
    let d = spec.hidden_size;
    try_map_kinds(spec, |layer| {
        let mut l = layer.clone();
        if matches!(l.ffn, Ffn::Moe(_)) {
            l.norms.push(llmsize_core::spec::Norm::rms_norm(d));
        }
        Ok(l)
    })
}

// ---------------------------------------------------------------------------------------------
// A.X-K2: DeepSeek-V3.2's MLA with a fused query/gate projection and gated norms.

/// A.X-K2 (`modeling_axk2.py`): DeepSeek's MLA without `q_b_proj`: `q_gate_proj` maps the
/// normed and the raw query latents (`2·q_lora_rank`) to each head's query and an output
/// gate (`n_h·(qk_head_dim + v_head_dim)`), held here as the MLA's `q_b_proj` (the normed
/// half to the queries) plus two extras (the raw half to the queries, both halves to the
/// gates); the DSA indexer on every layer (its keys cached beside the latent). The input
/// norm, and the post-attention norm of MoE layers, are gated (`GatedRMSNorm`: an `RMSNorm`
/// and a low-rank `fc1` `d → gated_norm_rank`, `fc2` back, under `mlp` in the truth's
/// rules). MoE layers (`mlp_layer_types`, else from `first_k_dense_replace` on every
/// `moe_layer_freq`-th): `n_routed_experts` of `moe_intermediate_size`, a bias-free router,
/// `n_shared_experts` of that width as one shared MLP.
const AXK2: Block = Block {
    kv_default: None,
    attention: AttentionRule::Latent {
        q_lora_default: Some(384),
        bias: Switch::Key("attention_bias", false),
    },
    mlp: unbiased_mlp(key_or(&["intermediate_size"], 5120)),
    moe: Some(MoeRule {
        experts: key_or(&["n_routed_experts", "num_local_experts"], 128),
        top_k: key_or(&["num_experts_per_tok"], 8),
        expert_width: key_or(&["moe_intermediate_size"], 512),
        correction_bias: NO,
        expert_bias: NO,
        shared: Shared::Count(key_or(&["n_shared_experts"], 1)),
        shared_gate: false,
        sparsity: LISTED_DENSE,
    }),
    ..LLAMA
};

/// `AXK2Config`'s defaults for the MLA sizes, written in when absent; a null `q_lora_rank`
/// is refused as its `validate_architecture` does.
fn axk2_patch(raw: &mut RawConfig<'_>, map: &mut Map<String, Value>) -> Result<(), ConfigError> {
    if raw.has("q_lora_rank") && raw.value("q_lora_rank").is_none() {
        return Err(raw.invalid(
            "q_lora_rank",
            &Value::Null,
            "a positive rank (A.X-K2 requires `q_lora_rank`)",
        ));
    }
    let sizes = [
        ("hidden_size", 2048),
        ("num_hidden_layers", 48),
        ("num_attention_heads", 32),
        ("vocab_size", 163_840),
        ("kv_lora_rank", 128),
        ("qk_rope_head_dim", 32),
        ("v_head_dim", 64),
        ("qk_nope_head_dim", 64),
    ];
    write_defaults(raw, map, &sizes, "absent; `AXK2Config` default");
    // `mlp_layer_types` from `first_k_dense_replace` and `moe_layer_freq`, as A.X-K1's.
    derive_on_copy(raw, map, axk1_patch)
}

/// A.X-K2: the block, then the query/gate projection, the indexer and the gated norms.
pub(super) fn read_axk2(
    raw: &mut RawConfig<'_>,
    family: &Family,
    _: crate::hf_config::HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let mut spec = read_patched(raw, family, &AXK2, axk2_patch)?;
    let reason = "absent; `AXK2Config` default";
    let idx_heads = raw.size_or(&["index_n_heads"], Sym::Named("index_n_heads"), 16, reason)?;
    let idx_dim = raw.size_or(&["index_head_dim"], Sym::Named("d_idx"), 128, reason)?;
    let rank = raw.size_or(
        &["gated_norm_rank"],
        Sym::Named("gated_norm_rank"),
        16,
        reason,
    )?;
    let d = spec.hidden_size;
    let gate = |name: &'static str| -> [Extra; 2] {
        [
            Extra::linear(
                format!("{name}.mlp.fc1.weight"),
                "gated norm",
                Category::Ffn,
                Expr::sym(Sym::Hidden, d),
                Expr::sym(Sym::Named("gated_norm_rank"), rank),
            ),
            Extra::linear(
                format!("{name}.mlp.fc2.weight"),
                "gated norm",
                Category::Ffn,
                Expr::sym(Sym::Named("gated_norm_rank"), rank),
                Expr::sym(Sym::Hidden, d),
            ),
        ]
    };
    try_map_kinds(&mut spec, |layer| {
        let mut l = layer.clone();
        let sparse = matches!(l.ffn, Ffn::Moe(_));
        if let llmsize_core::spec::Attention::Latent(a) = &mut l.attention {
            a.indexer_key_dim = Some(idx_dim);
            let r = a.q_lora_rank.unwrap_or(1);
            let heads = || Expr::sym(Sym::Heads, a.num_heads);
            let qk = Expr::product(vec![
                heads(),
                Expr::sum(vec![
                    Expr::sym(Sym::NopeDim, a.qk_nope_head_dim),
                    Expr::sym(Sym::RopeDim, a.qk_rope_head_dim),
                ]),
            ]);
            let extras = [
                Extra::linear(
                    "self_attn.q_gate_proj.weight (raw latent → queries)",
                    "attention",
                    Category::Attention,
                    Expr::sym(Sym::QueryRank, r),
                    qk,
                ),
                Extra::linear(
                    "self_attn.q_gate_proj.weight (latents → gates)",
                    "attention",
                    Category::Attention,
                    Expr::product(vec![Expr::Lit(2), Expr::sym(Sym::QueryRank, r)]),
                    Expr::product(vec![heads(), Expr::sym(Sym::ValueDim, a.v_head_dim)]),
                ),
            ];
            l.extras.extend(extras);
            l.extras
                .extend(dsa_indexer_extras(d, r, idx_heads, idx_dim));
        }
        l.extras.extend(gate("input_layernorm"));
        if sparse {
            l.extras.extend(gate("post_attention_layernorm"));
        }
        Ok(l)
    })?;
    Ok(spec)
}
