//! Bailing hybrid (Ling/Ring linear, `modeling_bailing_hybrid.py`, transformers 5.24): layers
//! of Kimi delta attention (KDA, a gated `DeltaNet` with per-channel decay) with an MLA layer
//! every `layer_group_size`-th, and `DeepSeek`-style MoE (shared experts, dense first layers).
//!
//! - `full_attention` layers: MLA (`q_proj` or `q_a`/`q_b` with `q_lora_rank`,
//!   `kv_a_proj_with_mqa`, `kv_a_layernorm`, `kv_b_proj`, `o_proj`; `attention_bias` on the
//!   down projections and `o_proj`) plus a head gate `g_proj` `d → n_h`. Cache: the latent.
//! - Other layers: `BailingHybridDeltaAttention` (category `Ssm`) of `n` heads of `h`
//!   (`linear_num_heads`, `linear_head_dim`): `q_proj`, `k_proj`, `v_proj`, `g_proj` and the
//!   forget gate's `f_proj` `d → n·h`, a depthwise `conv1d` over `3·n·h` channels of
//!   `linear_conv_kernel_dim` taps, `dt_bias` (`n·h`), `A_log` (`n`), `b_proj` `d → n`, a gated
//!   `o_norm` of `h`, `o_proj` `n·h → d`. Cache: the conv window `3·n·h × kernel` in the
//!   model's dtype and the float32 recurrent state `n × h × h`.
//! - `mlp_layer_types[i] == "sparse"`: the MoE (router without bias, `num_experts` experts of
//!   `moe_intermediate_size`, shared experts of `moe_intermediate_size · num_shared_experts`);
//!   otherwise the MLP of `intermediate_size`. Default: the first `first_k_dense_replace`
//!   layers dense.
//! - `BailingHybridConfig.__post_init__` sets `linear_head_dim = head_dim`,
//!   `linear_num_heads = num_attention_heads` and `linear_conv_kernel_dim =
//!   short_conv_kernel_size`, then its keyword arguments (the saved `linear_*` keys) win.
//! - The head is never tied (`_tied_weights_keys = {}`).

use llmsize_core::Category;
use llmsize_core::expr::{Expr, Sym};
use llmsize_core::spec::{Attention, Extra, Ffn, Layer, ModelSpec, Norm, RecurrentState};

use super::{layer_types, named};
use crate::error::ConfigError;
use crate::hf_config::architecture;
use crate::hf_config::decoder::{Decoder, mlp};
use crate::hf_config::family::{
    ALL_SPARSE, AttentionRule, Block, Family, LLAMA, MoeRule, NO, Read, Reader, Shared, Switch,
    block_attention, block_moe, key_or,
};
use crate::hf_config::raw::RawConfig;
use crate::hf_config::runs::Runs;

/// The sizes of `BailingHybridConfig` the generic readers take (MLA and the MoE).
const BAILING_BLOCK: Block = Block {
    hidden: key_or(&["hidden_size"], 2560),
    layers: key_or(&["num_hidden_layers"], 42),
    heads: key_or(&["num_attention_heads"], 32),
    vocab: key_or(&["vocab_size"], 157_184),
    attention: AttentionRule::Latent {
        q_lora_default: None,
        bias: Switch::Key("attention_bias", false),
    },
    moe: Some(BAILING_MOE),
    tie: false,
    ..LLAMA
};

/// The sizes of `KimiLinearConfig` the generic readers take.
const KIMI_BLOCK: Block = Block {
    hidden: key_or(&["hidden_size"], 2304),
    layers: key_or(&["num_hidden_layers"], 27),
    heads: key_or(&["num_attention_heads"], 32),
    vocab: key_or(&["vocab_size"], 163_840),
    moe: Some(MoeRule {
        experts: key_or(&["num_experts", "num_local_experts"], 256),
        top_k: key_or(&["num_experts_per_token", "num_experts_per_tok"], 8),
        expert_width: key_or(&["moe_intermediate_size"], 1024),
        shared: Shared::Count(key_or(&["num_shared_experts", "n_shared_experts"], 1)),
        ..BAILING_MOE
    }),
    ..BAILING_BLOCK
};

/// Bailing's MoE switches (Kimi's differ in sizes only).
const BAILING_MOE: MoeRule = MoeRule {
    experts: key_or(&["num_experts", "num_local_experts"], 512),
    top_k: key_or(&["num_experts_per_token", "num_experts_per_tok"], 8),
    expert_width: key_or(&["moe_intermediate_size"], 768),
    correction_bias: NO,
    expert_bias: NO,
    shared: Shared::Count(key_or(&["num_shared_experts", "n_shared_experts"], 1)),
    shared_gate: false,
    sparsity: ALL_SPARSE,
};

/// Which of the two KDA hybrids.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Variant {
    Bailing,
    /// Kimi-Linear (`modeling_kimi_linear.py`): no head gate on MLA; the KDA output gate and
    /// the forget gate are low-rank (`g_a_proj` `d → h`, `g_b_proj` `h → n·h`; `f_a_proj`,
    /// `f_b_proj` likewise); `linear_attn_config` (`head_dim`, `num_heads`,
    /// `short_conv_kernel_size`, 1-based `full_attn_layers`/`kda_layers`) wins over the
    /// `linear_*` keys; default `layer_types`: `full_attention` when `i > 0 && i % 4 == 0`;
    /// default dense layers: `first_k_dense_replace` (1).
    Kimi,
}

pub(super) const BAILING_HYBRID: Family = Family {
    model_type: "bailing_hybrid",
    config_class: "BailingHybridConfig",
    architecture: "BailingHybridForCausalLM",
    read: Read::Code(|r, f, _| read(r, f, Variant::Bailing)),
};

/// Kimi-Linear: KDA layers and MLA layers whose tensors the truth files under `ssm` (the
/// class is `KimiLinearAttention`).
pub(super) const KIMI_LINEAR: Family = Family {
    model_type: "kimi_linear",
    config_class: "KimiLinearConfig",
    architecture: "KimiLinearForCausalLM",
    read: Read::Code(|r, f, _| read(r, f, Variant::Kimi)),
};

fn read(
    raw: &mut RawConfig<'_>,
    family: &Family,
    variant: Variant,
) -> Result<ModelSpec, ConfigError> {
    let class = family.config_class;
    let reason = format!("absent; `{class}` default");
    let b = match variant {
        Variant::Bailing => &BAILING_BLOCK,
        Variant::Kimi => &KIMI_BLOCK,
    };
    let mut r = Reader { raw, class };
    let hidden = r.size(b.hidden, Sym::Hidden)?;
    let layers = r.size(b.layers, Sym::Layers)?;
    let vocab = r.size(b.vocab, Sym::Vocab)?;
    let mut mla = block_attention(&mut r, b, hidden)?;
    // The coverage truth's rule files any module whose class matches `LinearAttention` under
    // `ssm`; Kimi-Linear names its MLA class `KimiLinearAttention`, so its tensors count there
    // (the cache is still the MLA latent).
    if let (Variant::Kimi, Attention::Latent(a)) = (variant, &mut mla) {
        a.category = Category::Ssm;
    }
    let heads = match &mla {
        Attention::Latent(a) => a.num_heads,
        _ => 1,
    };
    let moe = match &b.moe {
        Some(m) => Some(block_moe(&mut r, m, hidden, layers)?.1),
        None => None,
    };
    let dense_width = r.size(
        key_or(
            &["intermediate_size"],
            match variant {
                Variant::Bailing => 6144,
                Variant::Kimi => 9216,
            },
        ),
        Sym::Ffn,
    )?;
    // `_tied_weights_keys = {}`: the head is never tied, whatever `tie_word_embeddings` says.
    let tied = false;
    let n = raw.bound_layers("num_hidden_layers", layers)?;
    // Kimi's checkpoint keeps the KDA sizes in `linear_attn_config`.
    let nested = match variant {
        Variant::Kimi => raw.value("linear_attn_config").and_then(|v| v.as_object()),
        Variant::Bailing => None,
    };
    let nested_size = |key: &str| -> Result<Option<u64>, ConfigError> {
        match nested.and_then(|m| m.get(key)) {
            None | Some(serde_json::Value::Null) => Ok(None),
            Some(v) => v.as_u64().filter(|n| *n > 0).map(Some).ok_or_else(|| {
                raw.invalid(
                    &format!("linear_attn_config.{key}"),
                    v,
                    "a positive integer",
                )
            }),
        }
    };
    let (nested_heads, nested_dim, nested_kernel) = (
        nested_size("num_heads")?,
        nested_size("head_dim")?,
        nested_size("short_conv_kernel_size")?,
    );
    // The KDA sizes: saved `linear_*` keys, else what `__post_init__` copies (Bailing) or
    // the class defaults (Kimi).
    let (linear_heads, linear_dim, kernel) = match variant {
        Variant::Bailing => (
            first_size(raw, &["linear_num_heads"], heads, "n_lin")?,
            first_or(raw, &["linear_head_dim", "head_dim"], 128, &reason, "h_lin")?,
            first_or(
                raw,
                &["linear_conv_kernel_dim", "short_conv_kernel_size"],
                4,
                &reason,
                "d_conv",
            )?,
        ),
        Variant::Kimi => (
            match nested_heads {
                Some(v) => v,
                None => first_or(raw, &["linear_num_heads"], 32, &reason, "n_lin")?,
            },
            match nested_dim {
                Some(v) => v,
                None => first_or(raw, &["linear_head_dim"], 128, &reason, "h_lin")?,
            },
            match nested_kernel {
                Some(v) => v,
                None => first_or(raw, &["linear_conv_kernel_dim"], 4, &reason, "d_conv")?,
            },
        ),
    };
    // `layer_types`: `full_attention` is MLA, anything else KDA; by default every
    // `layer_group_size`-th layer (Bailing) or every fourth after the first (Kimi).
    let full: Runs<bool> = if let Some(t) = layer_types(raw, n)? {
        Runs::from_list(t.iter().map(|t| t == "full_attention"))
    } else if let Some(m) = nested
        && m.contains_key("full_attn_layers")
        && m.contains_key("kda_layers")
    {
        // 1-based lists; a layer in neither list has no kind, which transformers rejects.
        let list = |key: &str| -> Result<Vec<u64>, ConfigError> {
            let v = m.get(key).unwrap_or(&serde_json::Value::Null);
            v.as_array()
                .and_then(|a| {
                    a.iter()
                        .map(serde_json::Value::as_u64)
                        .collect::<Option<Vec<_>>>()
                })
                .filter(|l| l.iter().all(|i| (1..=n).contains(i)))
                .ok_or_else(|| {
                    raw.invalid(
                        &format!("linear_attn_config.{key}"),
                        v,
                        "1-based layer numbers",
                    )
                })
        };
        // Numbers 1..=n; each list marked in one pass, a KDA layer winning.
        let at = |l: Vec<u64>| l.into_iter().map(|i| i.saturating_sub(1));
        let full = Runs::marked(n, at(list("full_attn_layers")?), &true, &false);
        let kda = Runs::marked(n, at(list("kda_layers")?), &true, &false);
        let both = full.zip(&kda);
        let mut i = 0u64;
        for ((f, k), c) in both.runs() {
            if !f && !k {
                return Err(raw.missing(
                    "linear_attn_config.kda_layers",
                    &format!(
                        "layer {} in `full_attn_layers` or `kda_layers`",
                        // saturates: never, a layer index below the layer count.
                        i.saturating_add(1)
                    ),
                ));
            }
            // saturates: never, the runs sum to the layer count.
            i = i.saturating_add(*c);
        }
        both.map(|&(f, k)| f && !k)
    } else if variant == Variant::Kimi {
        // Full at `i > 0` with `i % 4 == 0`.
        let mut full = Runs::uniform(false, n.min(1));
        full.append(Runs::periodic(
            n.saturating_sub(1),
            &[(false, 3), (true, 1)],
        ));
        full
    } else {
        let group = raw.size_or(&["layer_group_size"], Sym::Named("group"), 6, &reason)?;
        Runs::every(n, group)
    };
    let sparse: Runs<bool> = if let Some(t) = layer_types_key(raw, "mlp_layer_types", n)? {
        Runs::from_list(t.iter().map(|t| t == "sparse"))
    } else {
        {
            let default = match variant {
                Variant::Bailing => 2,
                Variant::Kimi => 1,
            };
            let first = if let Some(k) = raw.uint("first_k_dense_replace")? {
                k
            } else {
                raw.assume("first_k_dense_replace", default, &reason);
                default
            };
            Runs::from_index(n, first)
        }
    };
    let width = raw.mul(linear_heads, linear_dim, "linear_num_heads·linear_head_dim")?;
    let state = RecurrentState {
        conv: raw.mul(raw.mul(width, 3, "3·n·h")?, kernel, "3·n·h·kernel")?,
        recurrent: raw.mul(width, linear_dim, "n·h·h")?,
        recurrent_f32: true,
        conv_f32: false,
    };
    let kda = kda(hidden, linear_heads, linear_dim, kernel, variant);
    let gate = Extra::linear(
        "attn_gate.weight",
        "attention head gate (g_proj)",
        Category::Attention,
        Expr::sym(Sym::Hidden, hidden),
        Expr::sym(Sym::Heads, heads),
    );
    let dense = mlp(hidden, dense_width, true, false);
    let norm = Norm::rms_norm(hidden);
    let stack = full.zip_layers(&sparse, |&(is_full, is_sparse)| Layer {
        attention: if is_full {
            mla.clone()
        } else {
            Attention::Absent
        },
        cross_attention: None,
        ffn: match (&moe, is_sparse) {
            (Some(m), true) => Ffn::Moe(m.clone()),
            _ => Ffn::Dense(dense),
        },
        norms: vec![norm; 2],
        sliding_window: None,
        extras: match (is_full, variant) {
            (true, Variant::Bailing) => vec![gate.clone()],
            (true, Variant::Kimi) => Vec::new(),
            (false, _) => kda.clone(),
        },
        state: (!is_full).then_some(state),
    });
    Ok(Decoder::new(
        family.model_type,
        architecture(raw, family.architecture),
        hidden,
        vocab,
        stack,
        Some(norm),
        tied,
    )
    .into_spec())
}

/// The first present key of a size, else `default` (a value another key gave).
fn first_size(
    raw: &mut RawConfig<'_>,
    keys: &[&str],
    default: u64,
    name: &'static str,
) -> Result<u64, ConfigError> {
    for k in keys {
        if let Some(v) = raw.size_opt(k)? {
            raw.source(Sym::Named(name), k);
            return Ok(v);
        }
    }
    Ok(default)
}

/// The first present key of a size, else the class default (recorded).
fn first_or(
    raw: &mut RawConfig<'_>,
    keys: &[&str],
    default: u64,
    reason: &str,
    name: &'static str,
) -> Result<u64, ConfigError> {
    raw.size_or(keys, Sym::Named(name), default, reason)
}

/// A per-layer list of strings under `key`, one per layer.
fn layer_types_key(
    raw: &RawConfig<'_>,
    key: &str,
    layers: u64,
) -> Result<Option<Vec<String>>, ConfigError> {
    let Some(v) = raw.value(key) else {
        return Ok(None);
    };
    let list = v
        .as_array()
        .filter(|a| a.len() as u64 == layers)
        .ok_or_else(|| raw.invalid(key, v, &format!("a list of {layers} layer kinds")))?;
    list.iter()
        .map(|t| {
            t.as_str()
                .map(str::to_owned)
                .ok_or_else(|| raw.invalid(key, t, "strings such as `sparse`"))
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// `KimiLinearDeltaAttention`'s tensors (`Glm5NextTextLinearAttention`, `latent2.rs`, has
/// the same).
pub(in crate::hf_config::families) fn kimi_kda(
    hidden: u64,
    heads: u64,
    head_dim: u64,
    kernel: u64,
) -> Vec<Extra> {
    kda(hidden, heads, head_dim, kernel, Variant::Kimi)
}

/// `BailingHybridDeltaAttention`'s (`KimiLinearDeltaAttention`'s) tensors.
fn kda(hidden: u64, heads: u64, head_dim: u64, kernel: u64, variant: Variant) -> Vec<Extra> {
    const PART: &str = "Kimi delta attention";
    let d = Expr::sym(Sym::Hidden, hidden);
    let n = named("n_lin", heads);
    let h = named("h_lin", head_dim);
    let width = Expr::product(vec![n.clone(), h.clone()]);
    let ssm = Category::Ssm;
    let fp32_if_bailing = |e: Extra| {
        if variant == Variant::Bailing {
            e.fp32()
        } else {
            e
        }
    };
    // The output and forget gates: full (`d → n·h`) or low-rank (`d → h → n·h`).
    let gates = match variant {
        Variant::Bailing => vec![
            Extra::linear("kda.f_proj.weight", PART, ssm, d.clone(), width.clone()),
            Extra::linear("kda.g_proj.weight", PART, ssm, d.clone(), width.clone()),
        ],
        Variant::Kimi => vec![
            Extra::linear("kda.f_a_proj.weight", PART, ssm, d.clone(), h.clone()),
            Extra::linear("kda.f_b_proj.weight", PART, ssm, h.clone(), width.clone()),
            Extra::linear("kda.g_a_proj.weight", PART, ssm, d.clone(), h.clone()),
            Extra::linear("kda.g_b_proj.weight", PART, ssm, h.clone(), width.clone()),
        ],
    };
    let mut out = vec![
        Extra::linear("kda.q_proj.weight", PART, ssm, d.clone(), width.clone()),
        Extra::linear("kda.k_proj.weight", PART, ssm, d.clone(), width.clone()),
        Extra::linear("kda.v_proj.weight", PART, ssm, d.clone(), width.clone()),
        // Bailing builds its `nn.Conv1d(…, dtype=torch.float32)`.
        fp32_if_bailing(Extra::table(
            "kda.conv1d.weight",
            PART,
            ssm,
            Expr::product(vec![Expr::Lit(3), width.clone()]),
            named("d_conv", kernel),
        )),
        // `dt_bias` is created in fp32 by both forget gates, `A_log` by Bailing's only
        // (`BailingHybridForgetGate`, `KimiLinearForgetGate.__init__`).
        Extra::vector("kda.dt_bias", PART, ssm, width.clone()).fp32(),
        fp32_if_bailing(Extra::vector("kda.A_log", PART, ssm, n.clone())),
        Extra::linear("kda.b_proj.weight", PART, ssm, d.clone(), n),
        Extra::vector("kda.o_norm.weight", PART, ssm, h),
        Extra::linear("kda.o_proj.weight", PART, ssm, width, d),
    ];
    out.extend(gates);
    out
}
