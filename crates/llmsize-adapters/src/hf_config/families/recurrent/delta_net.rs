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
use crate::hf_config::runs::Runs;

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
        correction_bias: NO,
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
        correction_bias: NO,
        expert_bias: NO,
        shared: Shared::Width(key_or(&["shared_expert_intermediate_size"], 512)),
        shared_gate: true,
        sparsity: ALL_SPARSE,
    }),
    tie: false,
    ..LLAMA
};

/// `OlmoHybridConfig`: 32 layers of 3840, 30 heads (KV heads: the heads), `OLMo2`'s
/// attention (q/k norms over the full widths, `attention_bias`) and its two norms per layer
/// (`post_attention_layernorm`, `post_feedforward_layernorm`; the `DeltaNet` layers have
/// `input_layernorm` and `post_attention_layernorm`: as many), MLP 11008.
const OLMO_HYBRID_BLOCK: Block = Block {
    hidden: key_or(&["hidden_size"], 3840),
    layers: key_or(&["num_hidden_layers"], 32),
    heads: key_or(&["num_attention_heads"], 30),
    vocab: key_or(&["vocab_size"], 100_352),
    kv_default: None,
    head_dim: HeadDim::KeyOrSplit,
    attention: AttentionRule::Standard(StandardRule {
        qk_norm: QkNorm::FullWidth,
        ..LLAMA_ATTENTION
    }),
    mlp: MlpRule {
        width: key_or(&["intermediate_size"], 11_008),
        ..MLP
    },
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
    /// `q_proj`, `k_proj`, `v_proj`, `g_proj`, `b_proj`, `a_proj` (`OLMo` Hybrid).
    Separate,
}

/// Where the defaults of the `DeltaNet` sizes and layer kinds come from.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Defaults {
    /// Fixed class defaults (16 key heads, 32 value heads of 128, 4 taps); without
    /// `layer_types`, every `full_attention_interval`-th layer (4) attends.
    Qwen,
    /// `OlmoHybridConfig.__post_init__`: key and value heads default to the attention heads,
    /// `d_k` to `int(0.75·d / n_k)`, `d_v` to `2·d_k`; without `layer_types`, layers with
    /// `i % 4 == 3` attend (the last one when none does). At least one layer of each kind.
    Olmo,
}

/// A gated-`DeltaNet` hybrid's own switches.
struct Hybrid {
    block: &'static Block,
    projections: Projections,
    /// `q_proj` also makes a sigmoid output gate (`d → 2·n_h·d_h`, Qwen).
    gated_attention: bool,
    defaults: Defaults,
}

const QWEN3_NEXT_HYBRID: Hybrid = Hybrid {
    block: &QWEN3_NEXT_BLOCK,
    projections: Projections::Fused,
    gated_attention: true,
    defaults: Defaults::Qwen,
};
const QWEN3_5_TEXT_HYBRID: Hybrid = Hybrid {
    block: &QWEN3_5_TEXT_BLOCK,
    projections: Projections::Split,
    gated_attention: true,
    defaults: Defaults::Qwen,
};
const QWEN3_5_MOE_TEXT_HYBRID: Hybrid = Hybrid {
    block: &QWEN3_5_MOE_TEXT_BLOCK,
    projections: Projections::Split,
    gated_attention: true,
    defaults: Defaults::Qwen,
};
const OLMO_HYBRID_HYBRID: Hybrid = Hybrid {
    block: &OLMO_HYBRID_BLOCK,
    projections: Projections::Separate,
    gated_attention: false,
    defaults: Defaults::Olmo,
};

pub(super) const OLMO_HYBRID: Family = Family {
    model_type: "olmo_hybrid",
    config_class: "OlmoHybridConfig",
    architecture: "OlmoHybridForCausalLM",
    read: Read::Code(|r, f, h| read(r, f, h, &OLMO_HYBRID_HYBRID)),
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
    let net = match hybrid.defaults {
        Defaults::Qwen => DeltaNet {
            kernel: mixer_size(raw, class, key_or(&["linear_conv_kernel_dim"], 4), "d_conv")?,
            key_dim: mixer_size(raw, class, key_or(&["linear_key_head_dim"], 128), "d_k")?,
            value_dim: mixer_size(raw, class, key_or(&["linear_value_head_dim"], 128), "d_v")?,
            key_heads: mixer_size(raw, class, key_or(&["linear_num_key_heads"], 16), "n_k")?,
            value_heads: mixer_size(raw, class, key_or(&["linear_num_value_heads"], 32), "n_v")?,
        },
        Defaults::Olmo => olmo_sizes(raw, class, &spec)?,
    };
    let n = spec.num_layers();
    // `layer_types`, else every `full_attention_interval`-th layer (default 4) attends.
    let linear: Runs<bool> = if let Some(types) = layer_types(raw, n)? {
        let mut linear = Runs::default();
        for t in &types {
            match t.as_str() {
                "linear_attention" | "mamba" => linear.push(true, 1),
                "full_attention" | "attention" => linear.push(false, 1),
                other => {
                    return Err(raw.invalid(
                        "layer_types",
                        &other.into(),
                        "`linear_attention` or `full_attention`",
                    ));
                }
            }
        }
        linear
    } else if hybrid.defaults == Defaults::Olmo {
        // Linear but every 4th (`i % 4 == 3`); with fewer than 4 layers the last attends.
        let mut kinds = Runs::periodic(n, &[(true, 3), (false, 1)]);
        if n < 4 {
            kinds.overwrite(n.saturating_sub(1)..n, &false);
        }
        kinds
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
        // Linear but every `interval`-th (1-based).
        Runs::every(n, interval).map(|full| !full)
    };
    if hybrid.defaults == Defaults::Olmo && (!linear.any(|l| !*l) || !linear.any(|l| *l)) {
        // `OlmoHybridConfig.validate_architecture`.
        return Err(raw.missing(
            "layer_types",
            "at least one `linear_attention` and one `full_attention` layer",
        ));
    }
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
            if let (true, Attention::Standard(a)) = (hybrid.gated_attention, &l.attention) {
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

/// `OlmoHybridConfig`'s `DeltaNet` sizes, whose defaults follow the attention heads and width.
fn olmo_sizes(
    raw: &mut RawConfig<'_>,
    class: &'static str,
    spec: &ModelSpec,
) -> Result<DeltaNet, ConfigError> {
    let reason = "absent or null; `OlmoHybridConfig` follows the attention";
    let heads = spec
        .layer_kinds()
        .find_map(|l| match &l.attention {
            Attention::Standard(a) => Some(a.num_heads),
            _ => None,
        })
        .unwrap_or(1);
    let hidden = spec.hidden_size;
    let or = |raw: &mut RawConfig<'_>, key: &str, name: &'static str, default: u64| {
        if let Some(v) = raw.size_opt(key)? {
            raw.source(llmsize_core::expr::Sym::Named(name), key);
            Ok::<u64, ConfigError>(v)
        } else {
            raw.assume(key, default, reason);
            Ok(default)
        }
    };
    let key_heads = or(raw, "linear_num_key_heads", "n_k", heads)?;
    let value_heads = or(raw, "linear_num_value_heads", "n_v", heads)?;
    // `int(0.75 * hidden_size / linear_num_key_heads)`: float arithmetic, truncated.
    if hidden >= 1 << 52 {
        return Err(raw.invalid("hidden_size", &hidden.into(), "a size below 2^52"));
    }
    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "Python's float arithmetic on a size below 2^52"
    )]
    let derived = (0.75 * hidden as f64 / key_heads as f64) as u64;
    let key_dim = or(raw, "linear_key_head_dim", "d_k", derived)?;
    let value_dim = or(
        raw,
        "linear_value_head_dim",
        "d_v",
        raw.mul(2, key_dim, "2·linear_key_head_dim")?,
    )?;
    if key_dim == 0 {
        return Err(raw.invalid("linear_key_head_dim", &key_dim.into(), "a positive integer"));
    }
    Ok(DeltaNet {
        kernel: mixer_size(raw, class, key_or(&["linear_conv_kernel_dim"], 4), "d_conv")?,
        key_dim,
        value_dim,
        key_heads,
        value_heads,
    })
}

/// The conv window (`conv_dim × kernel`) and float32 recurrent state (`n_v × d_k × d_v`).
fn state(raw: &RawConfig<'_>, net: &DeltaNet) -> Result<RecurrentState, ConfigError> {
    let key = raw.mul(
        net.key_heads,
        net.key_dim,
        "linear_num_key_heads·linear_key_head_dim",
    )?;
    let value = raw.mul(
        net.value_heads,
        net.value_dim,
        "linear_num_value_heads·linear_value_head_dim",
    )?;
    let conv_dim = raw
        .mul(key, 2, "2·key_dim")?
        .checked_add(value)
        .ok_or_else(|| {
            raw.invalid(
                "linear_value_head_dim",
                &net.value_dim.into(),
                "a size whose products fit in 64 bits",
            )
        })?;
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
    let two_keys = Expr::product(vec![Expr::Lit(2), key.clone()]);
    let value = Expr::product(vec![n_v.clone(), d_v.clone()]);
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
        Projections::Separate => vec![
            Extra::linear("ssm_q.weight", PART, ssm, d.clone(), key.clone()),
            Extra::linear("ssm_k.weight", PART, ssm, d.clone(), key),
            Extra::linear("ssm_v.weight", PART, ssm, d.clone(), value.clone()),
            Extra::linear("ssm_a.weight", PART, ssm, d.clone(), n_v.clone()),
            Extra::linear("ssm_b.weight", PART, ssm, d.clone(), n_v.clone()),
            Extra::linear("ssm_gate.weight", PART, ssm, d.clone(), value.clone()),
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
