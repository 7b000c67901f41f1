//! MiniMax-Text-01 (`modeling_minimax.py`, transformers 5.24): Mixtral's block (GQA without
//! biases, 8 experts of `intermediate_size`, top 2, no shared expert) in which the layers whose
//! `layer_types` entry is `linear_attention` (default: odd layers) hold lightning attention.
//!
//! - Lightning attention (`MiniMaxLightningAttention`, category `Ssm`): `qkv_proj`
//!   `d → 3·n_h·d_h`, an `RMSNorm` of `n_h·d_h`, `output_gate` `d → n_h·d_h` and `out_proj`
//!   `n_h·d_h → d`, no biases; `d_h` = `head_dim` or `d / n_h` (`head_dim or …`).
//! - Its cache (`MiniMaxCache.linear_cache`) is the `n_h × d_h × d_h` key-value state in the
//!   model's dtype; no convolution. `MiniMaxCache` is a plain `DynamicCache`: the attention
//!   layers keep every token whatever `sliding_window` says.

use llmsize_core::Category;
use llmsize_core::expr::{Expr, Sym};
use llmsize_core::spec::{Attention, Extra, ModelSpec, RecurrentState};

use super::{layer_types, relayer};
use crate::error::ConfigError;
use crate::hf_config::HeadChoice;
use crate::hf_config::family::{
    ALL_SPARSE, AttentionRule, Block, Family, HeadDim, LLAMA, MoeRule, NO, PLAIN_ATTENTION, Read,
    Shared, key_or, read_block, unbiased_mlp,
};
use crate::hf_config::raw::RawConfig;
use crate::hf_config::runs::Runs;

/// `MiniMaxConfig`: 32 layers of 4096, 32 heads, 8 KV heads, 8 experts of 14336, top 2.
const MINIMAX_BLOCK: Block = Block {
    hidden: key_or(&["hidden_size"], 4096),
    layers: key_or(&["num_hidden_layers"], 32),
    heads: key_or(&["num_attention_heads"], 32),
    vocab: key_or(&["vocab_size"], 32_000),
    kv_default: Some(8),
    head_dim: HeadDim::KeyOrSplit,
    attention: AttentionRule::Standard(PLAIN_ATTENTION),
    mlp: unbiased_mlp(key_or(&["intermediate_size"], 14_336)),
    moe: Some(MoeRule {
        experts: key_or(&["num_local_experts", "num_experts"], 8),
        top_k: key_or(&["num_experts_per_tok"], 2),
        expert_width: key_or(&["intermediate_size"], 14_336),
        correction_bias: NO,
        expert_bias: NO,
        shared: Shared::None,
        shared_gate: false,
        sparsity: ALL_SPARSE,
    }),
    tie: false,
    ..LLAMA
};

pub(super) const MINIMAX: Family = Family {
    model_type: "minimax",
    config_class: "MiniMaxConfig",
    architecture: "MiniMaxForCausalLM",
    read: Read::Code(read),
};

fn read(
    raw: &mut RawConfig<'_>,
    family: &Family,
    _head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let mut spec = read_block(raw, family, &MINIMAX_BLOCK)?;
    let hidden = spec.hidden_size;
    let n = spec.num_layers();
    // `layer_types`, else even layers attend and odd layers are lightning attention.
    let linear = match layer_types(raw, n)? {
        Some(types) => Runs::from_list(types.iter().map(|t| t == "linear_attention")),
        None => Runs::periodic(n, &[(false, 1), (true, 1)]),
    };
    relayer(&mut spec, &linear, |layer, &is_linear| {
        let mut l = layer.clone();
        l.sliding_window = None;
        if is_linear {
            if let Attention::Standard(a) = &l.attention {
                let width = raw.mul(a.num_heads, a.head_dim, "num_attention_heads·head_dim")?;
                l.state = Some(RecurrentState {
                    conv: 0,
                    recurrent: raw.mul(width, a.head_dim, "num_attention_heads·head_dim²")?,
                    recurrent_f32: false,
                    conv_f32: false,
                });
                l.extras = lightning(hidden, a.num_heads, a.head_dim);
            }
            l.attention = Attention::Absent;
        }
        Ok(l)
    })?;
    Ok(spec)
}

/// `MiniMaxLightningAttention`'s tensors.
fn lightning(hidden: u64, heads: u64, head_dim: u64) -> Vec<Extra> {
    const PART: &str = "lightning attention";
    let d = Expr::sym(Sym::Hidden, hidden);
    let width = Expr::product(vec![
        Expr::sym(Sym::Heads, heads),
        Expr::sym(Sym::HeadDim, head_dim),
    ]);
    let ssm = Category::Ssm;
    vec![
        Extra::linear(
            "lightning.qkv_proj.weight",
            PART,
            ssm,
            d.clone(),
            Expr::product(vec![Expr::Lit(3), width.clone()]),
        ),
        Extra::vector("lightning.norm.weight", PART, ssm, width.clone()),
        Extra::linear(
            "lightning.output_gate.weight",
            PART,
            ssm,
            d.clone(),
            width.clone(),
        ),
        Extra::linear("lightning.out_proj.weight", PART, ssm, width, d),
    ]
}
