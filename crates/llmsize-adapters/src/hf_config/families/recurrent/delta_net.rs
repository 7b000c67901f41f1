//! Qwen3-Next and Qwen3.5: gated `DeltaNet` layers (`linear_attention`) between gated full
//! attention layers (`full_attention`), with an MLP (Qwen3.5) or an MoE with one gated shared
//! expert (Qwen3-Next, Qwen3.5-MoE) in every layer (`modeling_qwen3_next.py`,
//! `modeling_qwen3_5.py`, `modeling_qwen3_5_moe.py`, transformers 5.24).
//!
//! - Full attention: Qwen3's (per-head q/k `RMSNorm`s, biases with `attention_bias`) whose
//!   `q_proj` is twice as wide (`d → 2·n_h·d_h`: the queries and an output gate), so the gate
//!   half is an extra `Attention` tensor.
//! - `GatedDeltaNet` (category `Ssm`): `in_proj_qkvz` `d → 2·n_k·d_k + 2·n_v·d_v` and
//!   `in_proj_ba` `d → 2·n_v` (Qwen3.5 splits them into `in_proj_qkv`, `in_proj_z`,
//!   `in_proj_b`, `in_proj_a`: the same counts), a depthwise `conv1d` without bias over
//!   `conv_dim = 2·n_k·d_k + n_v·d_v` channels of `linear_conv_kernel_dim` taps, `dt_bias` and
//!   `A_log` (`n_v` each), a gated `RMSNorm` of `d_v` and `out_proj` `n_v·d_v → d`.
//! - Cache of a `DeltaNet` layer: the conv window `conv_dim × kernel` in the model's dtype and
//!   the recurrent state `n_v × d_k × d_v` in float32 (the chunked delta rule returns it so).

use llmsize_core::Category;
use llmsize_core::expr::Expr;
use llmsize_core::spec::{Attention, Extra, Layer, ModelSpec, RecurrentState};

use super::{layer_types, mixer_size, named, relayer};
use crate::error::ConfigError;
use crate::hf_config::HeadChoice;
use crate::hf_config::family::{
    ALL_SPARSE, AttentionRule, Block, Family, HeadDim, LLAMA, LLAMA_ATTENTION, LLAMA_MLP, MlpRule,
    MoeRule, NO, QkNorm, Read, Shared, Sparsity, StandardRule, key_or, read_block,
};
use crate::hf_config::raw::RawConfig;

/// Qwen3's attention (per-head q/k norms, `attention_bias`).
const ATTENTION: AttentionRule = AttentionRule::Standard(StandardRule {
    qk_norm: QkNorm::PerHead,
    ..LLAMA_ATTENTION
});

/// The MLP: gated, no biases.
const MLP: MlpRule = MlpRule {
    up_bias: NO,
    down_bias: NO,
    ..LLAMA_MLP
};

/// `Qwen3NextConfig`: 48 layers of 2048, 512 experts (top 10) of 512 with a shared expert of
/// 512 behind a sigmoid gate; `decoder_sparse_step` and `mlp_only_layers` pick the dense
/// layers (`intermediate_size` 5632).
const QWEN3_NEXT_BLOCK: Block = Block {
    hidden: key_or(&["hidden_size"], 2048),
    layers: key_or(&["num_hidden_layers"], 48),
    heads: key_or(&["num_attention_heads"], 16),
    vocab: key_or(&["vocab_size"], 151_936),
    kv_default: Some(2),
    head_dim: HeadDim::KeyOr(256),
    attention: ATTENTION,
    mlp: MlpRule {
        width: key_or(&["intermediate_size"], 5632),
        ..MLP
    },
    moe: Some(MoeRule {
        experts: key_or(&["num_experts"], 512),
        top_k: key_or(&["num_experts_per_tok"], 10),
        expert_width: key_or(&["moe_intermediate_size"], 512),
        router_bias: NO,
        expert_bias: NO,
        shared: Shared::Width(key_or(&["shared_expert_intermediate_size"], 512)),
        shared_gate: true,
        sparsity: Sparsity {
            first_dense: None,
            step: Some("decoder_sparse_step"),
            dense_list: Some("mlp_only_layers"),
        },
    }),
    tie: false,
    ..LLAMA
};

/// `Qwen3_5TextConfig`: 32 layers of 4096, an MLP of 12288 in every layer.
const QWEN3_5_TEXT_BLOCK: Block = Block {
    hidden: key_or(&["hidden_size"], 4096),
    layers: key_or(&["num_hidden_layers"], 32),
    heads: key_or(&["num_attention_heads"], 16),
    vocab: key_or(&["vocab_size"], 248_320),
    kv_default: Some(4),
    head_dim: HeadDim::KeyOr(256),
    attention: ATTENTION,
    mlp: MlpRule {
        width: key_or(&["intermediate_size"], 12_288),
        ..MLP
    },
    tie: false,
    ..LLAMA
};

/// `Qwen3_5MoeTextConfig`: 40 layers of 2048, every one an MoE of 256 experts (top 8) of
/// 512 with a gated shared expert of 512.
const QWEN3_5_MOE_TEXT_BLOCK: Block = Block {
    hidden: key_or(&["hidden_size"], 2048),
    layers: key_or(&["num_hidden_layers"], 40),
    heads: key_or(&["num_attention_heads"], 16),
    vocab: key_or(&["vocab_size"], 248_320),
    kv_default: Some(2),
    head_dim: HeadDim::KeyOr(256),
    attention: ATTENTION,
    mlp: MLP,
    moe: Some(MoeRule {
        experts: key_or(&["num_experts"], 256),
        top_k: key_or(&["num_experts_per_tok"], 8),
        expert_width: key_or(&["moe_intermediate_size"], 512),
        router_bias: NO,
        expert_bias: NO,
        shared: Shared::Width(key_or(&["shared_expert_intermediate_size"], 512)),
        shared_gate: true,
        sparsity: ALL_SPARSE,
    }),
    tie: false,
    ..LLAMA
};

/// How a model names its `DeltaNet` input projections.
#[derive(Clone, Copy)]
enum Projections {
    /// `in_proj_qkvz` and `in_proj_ba` (Qwen3-Next).
    Fused,
    /// `in_proj_qkv`, `in_proj_z`, `in_proj_b`, `in_proj_a` (Qwen3.5).
    Split,
}

/// A gated-`DeltaNet` hybrid's own switches.
struct Hybrid {
    block: &'static Block,
    projections: Projections,
}

const QWEN3_NEXT_HYBRID: Hybrid = Hybrid {
    block: &QWEN3_NEXT_BLOCK,
    projections: Projections::Fused,
};
const QWEN3_5_TEXT_HYBRID: Hybrid = Hybrid {
    block: &QWEN3_5_TEXT_BLOCK,
    projections: Projections::Split,
};
const QWEN3_5_MOE_TEXT_HYBRID: Hybrid = Hybrid {
    block: &QWEN3_5_MOE_TEXT_BLOCK,
    projections: Projections::Split,
};

pub(super) const QWEN3_NEXT: Family = Family {
    model_type: "qwen3_next",
    config_class: "Qwen3NextConfig",
    architecture: "Qwen3NextForCausalLM",
    read: Read::Code(|r, f, h| read(r, f, h, &QWEN3_NEXT_HYBRID)),
};
pub(super) const QWEN3_5_TEXT: Family = Family {
    model_type: "qwen3_5_text",
    config_class: "Qwen3_5TextConfig",
    architecture: "Qwen3_5ForCausalLM",
    read: Read::Code(|r, f, h| read(r, f, h, &QWEN3_5_TEXT_HYBRID)),
};
pub(super) const QWEN3_5_MOE_TEXT: Family = Family {
    model_type: "qwen3_5_moe_text",
    config_class: "Qwen3_5MoeTextConfig",
    architecture: "Qwen3_5MoeForCausalLM",
    read: Read::Code(|r, f, h| read(r, f, h, &QWEN3_5_MOE_TEXT_HYBRID)),
};

/// The `DeltaNet` sizes (`linear_*` keys; the same class defaults in all three configs).
struct DeltaNet {
    kernel: u64,
    key_dim: u64,
    value_dim: u64,
    key_heads: u64,
    value_heads: u64,
}

fn read(
    raw: &mut RawConfig<'_>,
    family: &Family,
    _head: HeadChoice,
    hybrid: &Hybrid,
) -> Result<ModelSpec, ConfigError> {
    let class = family.config_class;
    let mut spec = read_block(raw, family, hybrid.block)?;
    let net = DeltaNet {
        kernel: mixer_size(raw, class, key_or(&["linear_conv_kernel_dim"], 4), "d_conv")?,
        key_dim: mixer_size(raw, class, key_or(&["linear_key_head_dim"], 128), "d_k")?,
        value_dim: mixer_size(raw, class, key_or(&["linear_value_head_dim"], 128), "d_v")?,
        key_heads: mixer_size(raw, class, key_or(&["linear_num_key_heads"], 16), "n_k")?,
        value_heads: mixer_size(raw, class, key_or(&["linear_num_value_heads"], 32), "n_v")?,
    };
    let n = usize::try_from(spec.num_layers())
        .map_err(|_| raw.invalid("num_hidden_layers", &spec.num_layers().into(), "a layer count"))?;
    // `layer_types`, else every `full_attention_interval`-th layer (default 4) attends.
    let linear: Vec<bool> = if let Some(types) = layer_types(raw, n)? {
        types
            .iter()
            .map(|t| match t.as_str() {
                "linear_attention" | "mamba" => Ok(true),
                "full_attention" | "attention" => Ok(false),
                other => Err(raw.invalid(
                    "layer_types",
                    &other.into(),
                    "`linear_attention` or `full_attention`",
                )),
            })
            .collect::<Result<_, _>>()?
    } else {
        let interval = {
            let reason = format!("absent; `{class}` default");
            raw.size_or(
                &["full_attention_interval"],
                llmsize_core::expr::Sym::Named("full_attention_interval"),
                4,
                &reason,
            )?
        };
        (1..=n as u64)
            .map(|i| !i.is_multiple_of(interval))
            .collect()
    };
    let hidden = spec.hidden_size;
    let state = state(raw, &net)?;
    let mixer = mixer(hidden, &net, hybrid.projections);
    let bias = {
        let reason = format!("absent; `{class}` default");
        raw.flag_or("attention_bias", false, &reason)?
    };
    relayer(&mut spec, &linear, |layer, &is_linear| {
        Ok(if is_linear {
            Layer {
                attention: Attention::Absent,
                extras: mixer.clone(),
                state: Some(state),
                sliding_window: None,
                ..layer.clone()
            }
        } else {
            let mut l = layer.clone();
            if let Attention::Standard(a) = &l.attention {
                // `q_proj` also makes the output gate: `n_h·d_h` more outputs (and biases).
                let width = Expr::product(vec![
                    Expr::sym(llmsize_core::expr::Sym::Heads, a.num_heads),
                    Expr::sym(llmsize_core::expr::Sym::HeadDim, a.head_dim),
                ]);
                l.extras.push(Extra::linear(
                    "attn_q_gate.weight",
                    "attention output gate (q_proj)",
                    Category::Attention,
                    Expr::sym(llmsize_core::expr::Sym::Hidden, hidden),
                    width.clone(),
                ));
                if bias {
                    l.extras.push(Extra::vector(
                        "attn_q_gate.bias",
                        "attention output gate (q_proj)",
                        Category::Attention,
                        width,
                    ));
                }
            }
            l
        })
    })?;
    Ok(spec)
}

/// The conv window (`conv_dim × kernel`) and float32 recurrent state (`n_v × d_k × d_v`).
fn state(raw: &RawConfig<'_>, net: &DeltaNet) -> Result<RecurrentState, ConfigError> {
    let key = raw.mul(net.key_heads, net.key_dim, "linear_num_key_heads·linear_key_head_dim")?;
    let value = raw.mul(
        net.value_heads,
        net.value_dim,
        "linear_num_value_heads·linear_value_head_dim",
    )?;
    let conv_dim = raw
        .mul(key, 2, "2·key_dim")?
        .checked_add(value)
        .ok_or_else(|| raw.invalid("linear_value_head_dim", &net.value_dim.into(), "a size whose products fit in 64 bits"))?;
    Ok(RecurrentState {
        conv: raw.mul(conv_dim, net.kernel, "conv_dim·linear_conv_kernel_dim")?,
        recurrent: raw.mul(value, net.key_dim, "n_v·d_v·d_k")?,
        recurrent_f32: true,
        conv_f32: false,
    })
}

/// The `GatedDeltaNet` tensors.
fn mixer(hidden: u64, net: &DeltaNet, projections: Projections) -> Vec<Extra> {
    const PART: &str = "gated DeltaNet";
    let d = Expr::sym(llmsize_core::expr::Sym::Hidden, hidden);
    let n_k = named("n_k", net.key_heads);
    let d_k = named("d_k", net.key_dim);
    let n_v = named("n_v", net.value_heads);
    let d_v = named("d_v", net.value_dim);
    let key = Expr::product(vec![n_k, d_k]);
    let value = Expr::product(vec![n_v.clone(), d_v.clone()]);
    let two_keys = Expr::product(vec![Expr::Lit(2), key]);
    let conv_dim = Expr::sum(vec![two_keys.clone(), value.clone()]);
    let ssm = Category::Ssm;
    let mut out = match projections {
        Projections::Fused => vec![
            Extra::linear(
                "ssm_in_qkvz.weight",
                PART,
                ssm,
                d.clone(),
                Expr::sum(vec![
                    two_keys,
                    Expr::product(vec![Expr::Lit(2), value.clone()]),
                ]),
            ),
            Extra::linear(
                "ssm_in_ba.weight",
                PART,
                ssm,
                d.clone(),
                Expr::product(vec![Expr::Lit(2), n_v.clone()]),
            ),
        ],
        Projections::Split => vec![
            Extra::linear("ssm_in_qkv.weight", PART, ssm, d.clone(), conv_dim.clone()),
            Extra::linear("ssm_in_z.weight", PART, ssm, d.clone(), value.clone()),
            Extra::linear("ssm_in_b.weight", PART, ssm, d.clone(), n_v.clone()),
            Extra::linear("ssm_in_a.weight", PART, ssm, d.clone(), n_v.clone()),
        ],
    };
    out.extend([
        Extra::table(
            "ssm_conv1d.weight",
            PART,
            ssm,
            conv_dim,
            named("d_conv", net.kernel),
        ),
        Extra::vector("ssm_dt.bias", PART, ssm, n_v.clone()),
        Extra::vector("ssm_a_log", PART, ssm, n_v),
        Extra::vector("ssm_norm.weight", PART, ssm, d_v),
        Extra::linear("ssm_out.weight", PART, ssm, value, d),
    ]);
    out
}
