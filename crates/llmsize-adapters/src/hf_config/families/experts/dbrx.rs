//! DBRX (`dbrx`, `modeling_dbrx.py`): the attention's and the experts' sizes in sub-configs,
//! a fused `Wqkv`.

use llmsize_core::Category;
use llmsize_core::expr::{Expr, Sym};
use llmsize_core::spec::{Attention, Extra, ModelSpec, NormKind};
use serde_json::{Map, Value};

use super::read_patched;
use crate::error::ConfigError;
use crate::hf_config::HeadChoice;
use crate::hf_config::family::{
    ALL_SPARSE, AttentionRule, Block, Family, HeadDim, LLAMA, MlpRule, MoeRule, NO, NormRule,
    PLAIN_ATTENTION, Shared, StandardRule, key_or, map_kinds,
};
use crate::hf_config::raw::RawConfig;

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
        correction_bias: NO,
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
    let mut spec = read_patched(raw, family, &DBRX, dbrx_patch)?;
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
