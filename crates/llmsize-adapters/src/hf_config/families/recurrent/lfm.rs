//! LFM2 and LFM3 (`modeling_lfm2.py`, `modeling_lfm3.py`, transformers 5.24): layers whose
//! `layer_types` entry is `conv` hold a gated short convolution (`Lfm2ShortConv`), every other
//! layer attention; each layer has a gated (`SiLU`) `feed_forward` (`w1`, `w3`, `w2`) and
//! `operator_norm` + `ffn_norm` (LFM3 adds `post_operator_norm` and `post_ffn_norm` with
//! `use_sandwich_norm`). The model's last norm is `embedding_norm`, applied after the layers.
//!
//! - Short convolution (category `Ssm`): `in_proj` `d → 3d`, a depthwise `conv` of `d`
//!   channels and `conv_L_cache` taps, `out_proj` `d → d`; every one biased with `conv_bias`.
//!   Its cache is the conv window `d × conv_L_cache` in the model's dtype, no recurrent state.
//! - LFM2 attention: no biases, per-head q/k `RMSNorm`s; `head_dim` only if the JSON has one
//!   (`getattr(config, "head_dim", d / n_h)`). Its MLP width is adjusted when
//!   `block_auto_adjust_ff_dim`: `int(2·ff/3)`, times `block_ffn_dim_multiplier`, rounded up
//!   to `block_multiple_of`; `block_ff_dim` and `tie_embedding` override `intermediate_size`
//!   and `tie_word_embeddings` (`Lfm2Config.__post_init__`). Without `layer_types`, the layers
//!   in `full_attn_idxs` (default: all) attend.
//! - LFM3 attention: Qwen3's (`attention_bias`, per-head q/k norms, `head_dim` 128) plus a gate
//!   `g_proj` `d → n_h` with `use_attention_gate`; `sliding_attention` layers keep a window of
//!   `sliding_window` (256). Default `layer_types`: `full_attention` when `i % 4 == 2`,
//!   `sliding_attention` when `i % 4 == 0` and `i > 0`, else `conv`.

use llmsize_core::Category;
use llmsize_core::expr::{Expr, Sym};
use llmsize_core::spec::{Attention, Extra, Ffn, ModelSpec, Norm, OutputHead, RecurrentState};

use super::{layer_types, named, relayer};
use crate::error::ConfigError;
use crate::hf_config::HeadChoice;
use crate::hf_config::family::{
    ALL_SPARSE, AttentionRule, Block, Family, HeadDim, LLAMA, LLAMA_ATTENTION, MlpRule, MoeRule,
    NO, NormRule, PLAIN_ATTENTION, QkNorm, RMS2, Read, Shared, Sparsity, StandardRule, key_or,
    read_block, unbiased_mlp,
};
use crate::hf_config::raw::RawConfig;
use crate::hf_config::runs::Runs;

/// `Lfm2Config`: 32 layers of 2560, 32 heads, 8 KV heads, `intermediate_size` 12288, tied.
const LFM2_BLOCK: Block = Block {
    hidden: key_or(&["hidden_size"], 2560),
    layers: key_or(&["num_hidden_layers"], 32),
    heads: key_or(&["num_attention_heads"], 32),
    vocab: key_or(&["vocab_size"], 65_536),
    kv_default: Some(8),
    head_dim: HeadDim::KeyOrSplit,
    attention: AttentionRule::Standard(StandardRule {
        qk_norm: QkNorm::PerHead,
        ..PLAIN_ATTENTION
    }),
    mlp: unbiased_mlp(key_or(&["block_ff_dim", "intermediate_size"], 12_288)),
    norm: RMS2,
    tie: true,
    ..LLAMA
};

/// `Lfm3Config`: 24 layers of 2048, 16 heads of 128, 4 KV heads, MLP 7680, tied.
const LFM3_BLOCK: Block = Block {
    hidden: key_or(&["hidden_size"], 2048),
    layers: key_or(&["num_hidden_layers"], 24),
    heads: key_or(&["num_attention_heads"], 16),
    vocab: key_or(&["vocab_size"], 128_000),
    kv_default: Some(4),
    head_dim: HeadDim::KeyOr(128),
    attention: AttentionRule::Standard(StandardRule {
        qk_norm: QkNorm::PerHead,
        ..LLAMA_ATTENTION
    }),
    mlp: unbiased_mlp(key_or(&["intermediate_size"], 7680)),
    norm: NormRule {
        per_layer: 2,
        ..RMS2
    },
    tie: true,
    ..LLAMA
};

/// `Lfm2MoeConfig` (`modeling_lfm2_moe.py`): LFM2's attention (`head_dim`
/// `hidden_size // num_attention_heads`, the class has no such field) and convolutions; the
/// first `num_dense_layers` feed-forwards are gated MLPs of `intermediate_size`, the others
/// `Lfm2MoeSparseMoeBlock`: a bias-free router (its `expert_bias` is a buffer) and
/// `num_experts` gated experts of `moe_intermediate_size`, no shared expert.
const LFM2_MOE_BLOCK: Block = Block {
    hidden: key_or(&["hidden_size"], 2048),
    vocab: key_or(&["vocab_size"], 65_536),
    head_dim: HeadDim::KeyOrFloor,
    mlp: MlpRule {
        width: key_or(&["intermediate_size"], 7168),
        ..LFM2_BLOCK.mlp
    },
    moe: Some(MoeRule {
        experts: key_or(&["num_experts"], 32),
        top_k: key_or(&["num_experts_per_tok"], 4),
        expert_width: key_or(&["moe_intermediate_size"], 1792),
        correction_bias: NO,
        expert_bias: NO,
        shared: Shared::None,
        shared_gate: false,
        sparsity: Sparsity {
            first_dense: Some(key_or(&["num_dense_layers"], 2)),
            ..ALL_SPARSE
        },
    }),
    ..LFM2_BLOCK
};

pub(super) const LFM2: Family = Family {
    model_type: "lfm2",
    config_class: "Lfm2Config",
    architecture: "Lfm2ForCausalLM",
    read: Read::Code(|r, f, h| read(r, f, h, Version::Lfm2)),
};
pub(super) const LFM3: Family = Family {
    model_type: "lfm3",
    config_class: "Lfm3Config",
    architecture: "Lfm3ForCausalLM",
    read: Read::Code(|r, f, h| read(r, f, h, Version::Lfm3)),
};

pub(super) const LFM2_MOE: Family = Family {
    model_type: "lfm2_moe",
    config_class: "Lfm2MoeConfig",
    architecture: "Lfm2MoeForCausalLM",
    read: Read::Code(|r, f, h| read(r, f, h, Version::Lfm2Moe)),
};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Version {
    Lfm2,
    Lfm2Moe,
    Lfm3,
}

/// What a layer is.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Conv,
    /// Attention, with its sliding window.
    Attention(Option<u64>),
}

fn read(
    raw: &mut RawConfig<'_>,
    family: &Family,
    _head: HeadChoice,
    version: Version,
) -> Result<ModelSpec, ConfigError> {
    let class = family.config_class;
    let reason = format!("absent; `{class}` default");
    let block = match version {
        Version::Lfm2 => &LFM2_BLOCK,
        Version::Lfm2Moe => &LFM2_MOE_BLOCK,
        Version::Lfm3 => &LFM3_BLOCK,
    };
    let mut spec = read_block(raw, family, block)?;
    let hidden = spec.hidden_size;
    let kinds = kinds(raw, version, spec.num_layers(), &reason)?;
    let kernel = raw.size_or(
        &["conv_L_cache"],
        Sym::Named("d_conv"),
        match version {
            Version::Lfm2 | Version::Lfm2Moe => 3,
            Version::Lfm3 => 7,
        },
        &reason,
    )?;
    let bias = raw.flag_or("conv_bias", false, &reason)?;
    let conv = short_conv(hidden, kernel, bias);
    let state = RecurrentState {
        conv: raw.mul(hidden, kernel, "hidden_size·conv_L_cache")?,
        recurrent: 0,
        recurrent_f32: false,
        conv_f32: false,
    };
    let width = match version {
        Version::Lfm2 => Some(lfm2_width(raw, &reason)?),
        Version::Lfm2Moe | Version::Lfm3 => None,
    };
    let (sandwich, gate) = match version {
        Version::Lfm2 | Version::Lfm2Moe => (false, false),
        Version::Lfm3 => (
            raw.flag_or("use_sandwich_norm", true, &reason)?,
            raw.flag_or("use_attention_gate", true, &reason)?,
        ),
    };
    relayer(&mut spec, &kinds, |layer, kind| {
        let mut l = layer.clone();
        if let (Some(w), Ffn::Dense(m)) = (width, &mut l.ffn) {
            m.intermediate = w;
        }
        if sandwich {
            l.norms = vec![Norm::rms_norm(hidden); 4];
        }
        match *kind {
            Kind::Conv => {
                l.attention = Attention::Absent;
                l.sliding_window = None;
                l.extras.clone_from(&conv);
                l.state = Some(state);
            }
            Kind::Attention(window) => {
                l.sliding_window = window;
                if let (true, Attention::Standard(a)) = (gate, &l.attention) {
                    l.extras.push(Extra::linear(
                        "attn_gate.weight",
                        "attention gate (g_proj)",
                        Category::Attention,
                        Expr::sym(Sym::Hidden, hidden),
                        Expr::sym(Sym::Heads, a.num_heads),
                    ));
                }
            }
        }
        Ok(l)
    })?;
    if version != Version::Lfm3
        && let Some(tied) = raw.flag("tie_embedding")?
        && let OutputHead::Lm { tied: t, .. } = &mut spec.head
    {
        // `tie_embedding` overrides `tie_word_embeddings` in `Lfm2Config.__post_init__`
        // (and `Lfm2MoeConfig`'s).
        *t = tied;
    }
    Ok(spec)
}

/// Each layer's kind from `layer_types`, else the class's own default pattern.
fn kinds(
    raw: &mut RawConfig<'_>,
    version: Version,
    n: u64,
    reason: &str,
) -> Result<Runs<Kind>, ConfigError> {
    // LFM3's sliding layers keep `sliding_window` (class default 256; `null`: none).
    let window = match version {
        Version::Lfm2 | Version::Lfm2Moe => raw.uint("sliding_window")?,
        Version::Lfm3 => {
            if raw.has("sliding_window") {
                raw.size_opt("sliding_window")?
            } else {
                raw.assume("sliding_window", 256, reason);
                Some(256)
            }
        }
    };
    if let Some(types) = layer_types(raw, n)? {
        return Ok(Runs::from_list(types.iter().map(|t| match t.as_str() {
            "conv" => Kind::Conv,
            "sliding_attention" if version == Version::Lfm3 => Kind::Attention(window),
            _ => Kind::Attention(None),
        })));
    }
    Ok(match version {
        // `Lfm2MoeConfig.layer_types` defaults to `null`, which the layers index: no build.
        Version::Lfm2Moe => {
            return Err(raw.missing(
                "layer_types",
                "a list of `conv`/`full_attention` per layer (the class default `null` does not build)",
            ));
        }
        Version::Lfm2 => {
            let full: Option<Vec<u64>> = match raw.value("full_attn_idxs") {
                None => None,
                Some(v) => Some(
                    v.as_array()
                        .and_then(|a| a.iter().map(serde_json::Value::as_u64).collect())
                        .ok_or_else(|| {
                            raw.invalid("full_attn_idxs", v, "a list of layer indices")
                        })?,
                ),
            };
            match full {
                Some(f) => Runs::marked(n, f, &Kind::Attention(None), &Kind::Conv),
                None => Runs::uniform(Kind::Attention(None), n),
            }
        }
        // By `i % 4`: 0 sliding (but layer 0 a convolution), 1 and 3 convolutions, 2 full.
        Version::Lfm3 => {
            let mut kinds = Runs::periodic(
                n,
                &[
                    (Kind::Attention(window), 1),
                    (Kind::Conv, 1),
                    (Kind::Attention(None), 1),
                    (Kind::Conv, 1),
                ],
            );
            kinds.overwrite(0..1, &Kind::Conv);
            kinds
        }
    })
}

/// `Lfm2MLP`'s inner width.
fn lfm2_width(raw: &mut RawConfig<'_>, reason: &str) -> Result<u64, ConfigError> {
    let ff = raw.size_or(
        &["block_ff_dim", "intermediate_size"],
        Sym::Ffn,
        12_288,
        reason,
    )?;
    if !raw.flag_or("block_auto_adjust_ff_dim", true, reason)? {
        return Ok(ff);
    }
    if ff >= 1 << 52 {
        return Err(raw.invalid("intermediate_size", &ff.into(), "a size below 2^52"));
    }
    // `int(2 * intermediate_size / 3)`: float division, truncated.
    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "Python's float arithmetic on a size below 2^52"
    )]
    let mut w = (raw.mul(2, ff, "2·intermediate_size")? as f64 / 3.0) as u64;
    // `block_ffn_dim_multiplier: float | int` (the strict class refuses `null`).
    let m = match raw.value("block_ffn_dim_multiplier") {
        None if !raw.has("block_ffn_dim_multiplier") => {
            raw.assume("block_ffn_dim_multiplier", 1.0, reason);
            1.0
        }
        None => {
            return Err(raw.invalid(
                "block_ffn_dim_multiplier",
                &serde_json::Value::Null,
                "a non-negative number",
            ));
        }
        Some(v) => v
            .as_f64()
            .filter(|m| m.is_finite() && *m >= 0.0)
            .ok_or_else(|| raw.invalid("block_ffn_dim_multiplier", v, "a non-negative number"))?,
    };
    {
        #[allow(
            clippy::cast_precision_loss,
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "Python's `int(multiplier * size)`"
        )]
        let scaled = (m * w as f64) as u64;
        let of = raw.size_or(
            &["block_multiple_of"],
            Sym::Named("multiple_of"),
            256,
            reason,
        )?;
        w = scaled.div_ceil(of).checked_mul(of).ok_or_else(|| {
            raw.invalid(
                "block_multiple_of",
                &of.into(),
                "a size whose multiples fit in 64 bits",
            )
        })?;
    }
    if w == 0 {
        return Err(raw.invalid(
            "intermediate_size",
            &ff.into(),
            "a size whose adjusted MLP width is positive",
        ));
    }
    Ok(w)
}

/// `Lfm2ShortConv`'s tensors.
fn short_conv(hidden: u64, kernel: u64, bias: bool) -> Vec<Extra> {
    const PART: &str = "short convolution";
    let d = Expr::sym(Sym::Hidden, hidden);
    let three_d = Expr::product(vec![Expr::Lit(3), d.clone()]);
    let ssm = Category::Ssm;
    let mut out = vec![
        Extra::table(
            "shortconv.conv.weight",
            PART,
            ssm,
            d.clone(),
            named("d_conv", kernel),
        ),
        Extra::linear(
            "shortconv.in_proj.weight",
            PART,
            ssm,
            d.clone(),
            three_d.clone(),
        ),
        Extra::linear("shortconv.out_proj.weight", PART, ssm, d.clone(), d.clone()),
    ];
    if bias {
        out.extend([
            Extra::vector("shortconv.conv.bias", PART, ssm, d.clone()),
            Extra::vector("shortconv.in_proj.bias", PART, ssm, three_d),
            Extra::vector("shortconv.out_proj.bias", PART, ssm, d),
        ]);
    }
    out
}
