//! xLSTM-7B (`modeling_xlstm.py`, transformers 5.24, without the external `xlstm` package):
//! every block is `norm_mlstm` → mLSTM layer → `norm_ffn` → gated feed-forward, the model ends
//! with `out_norm`; the head (`hidden_size` wide, whatever `embedding_dim`) is never tied (no
//! `_tied_weights_keys`).
//!
//! - mLSTM layer (`xLSTMLayer`, category `Ssm`): `q`, `k` `d → int(d·qk_dim_factor)`, `v` and
//!   `ogate_preact` `d → int(d·v_dim_factor)` (biased with `use_bias`), `igate_preact` and
//!   `fgate_preact` `d → n_h` always biased, a multi-head norm of `n_h·(v / n_h)` (bias with
//!   `use_bias`), `out_proj` `v → d`. `weight_mode: fused` fuses them into `qkv_opreact` and
//!   `ifgate_preact`: the same counts.
//! - Feed-forward (`Ffn`): gated, `d → round_up(d·ffn_proj_factor, ffn_round_up_to_multiple_of)`.
//! - Norms: `norm_mlstm`, `norm_ffn` (bias with `use_bias`), `out_norm` (never a bias).
//! - Blocks: `num_blocks`; states: `num_hidden_layers` (each defaults to the other).
//! - State (`xLSTMCache`, in the model's dtype): per layer `C` (`n_h × d_qk × d_v`), `n`
//!   (`n_h × d_qk`) and `m` (`n_h`), where `d_qk = round_up(d·qk_dim_factor, 64) / n_h` and
//!   `d_v = round_up(d·v_dim_factor, 64) / n_h` (`xLSTMConfig.qk_head_dim`, `.v_head_dim`).

use llmsize_core::Category;
use llmsize_core::expr::{Expr, Sym};
use llmsize_core::spec::{
    Attention, Extra, Ffn, Layer, Layers, Mlp, ModelSpec, Norm, NormKind, RecurrentState,
};

use super::named;
use crate::error::ConfigError;
use crate::hf_config::HeadChoice;
use crate::hf_config::architecture;
use crate::hf_config::decoder::Decoder;
use crate::hf_config::family::{Family, Read, Reader, key_or};
use crate::hf_config::raw::RawConfig;

pub(super) const XLSTM: Family = Family {
    model_type: "xlstm",
    config_class: "xLSTMConfig",
    architecture: "xLSTMForCausalLM",
    read: Read::Code(read),
};

/// A float field with the class default.
fn float_or(
    raw: &mut RawConfig<'_>,
    key: &str,
    default: f64,
    reason: &str,
) -> Result<f64, ConfigError> {
    match raw.value(key) {
        None => {
            raw.assume(key, default, reason);
            Ok(default)
        }
        Some(v) => v
            .as_f64()
            .filter(|x| x.is_finite() && *x > 0.0 && *x < 1e6)
            .ok_or_else(|| raw.invalid(key, v, "a positive number")),
    }
}

/// `int(x)` of a positive float below 2^53.
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "Python's `int()` of a positive float checked below 2^53"
)]
fn trunc(raw: &RawConfig<'_>, key: &str, x: f64) -> Result<u64, ConfigError> {
    if (1.0..9.0e15).contains(&x) {
        Ok(x as u64)
    } else {
        Err(raw.invalid(key, &x.into(), "a factor giving a positive width"))
    }
}

/// `round_up_to_next_multiple_of(x, m)`: `int(((x + m − 1) // m) · m)` on floats.
fn round_up(raw: &RawConfig<'_>, key: &str, x: f64, m: u64) -> Result<u64, ConfigError> {
    #[allow(
        clippy::cast_precision_loss,
        reason = "a small multiple, as Python's float"
    )]
    let m = m as f64;
    trunc(raw, key, ((x + m - 1.0) / m).floor() * m)
}

fn read(
    raw: &mut RawConfig<'_>,
    family: &Family,
    _head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let class = family.config_class;
    let reason = format!("absent; `{class}` default");
    let mut r = Reader { raw, class };
    let hidden = r.size(key_or(&["hidden_size", "embedding_dim"], 4096), Sym::Hidden)?;
    let layers = r.size(
        key_or(&["num_blocks", "num_hidden_layers"], 32),
        Sym::Layers,
    )?;
    let vocab = r.size(key_or(&["vocab_size"], 50_304), Sym::Vocab)?;
    let heads = r.size(key_or(&["num_heads"], 8), Sym::Heads)?;
    let embedding = raw.size_opt("embedding_dim")?.unwrap_or(hidden);
    // `xLSTMModel` builds `num_blocks` blocks; `xLSTMCache` keeps `num_hidden_layers` states
    // (each defaults to the other). They differ only in a hand-edited config.
    let cached = raw.size_opt("num_hidden_layers")?.unwrap_or(layers);
    let bias = raw.flag_or("use_bias", false, &reason)?;
    let qk_factor = float_or(raw, "qk_dim_factor", 0.5, &reason)?;
    let v_factor = float_or(raw, "v_dim_factor", 1.0, &reason)?;
    let ffn_factor = float_or(raw, "ffn_proj_factor", 2.667, &reason)?;
    let multiple = raw.size_or(
        &["ffn_round_up_to_multiple_of"],
        Sym::Named("multiple_of"),
        64,
        &reason,
    )?;
    #[allow(
        clippy::cast_precision_loss,
        reason = "Python's `hidden_size * factor` on floats"
    )]
    let d = hidden as f64;
    if hidden >= 1 << 52 {
        return Err(raw.invalid("hidden_size", &hidden.into(), "a size below 2^52"));
    }
    // The layer's widths (`int(d · factor)`) and the cache's (rounded up to 64, per head).
    let qk = trunc(raw, "qk_dim_factor", d * qk_factor)?;
    let v = trunc(raw, "v_dim_factor", d * v_factor)?;
    let up = round_up(raw, "ffn_proj_factor", d * ffn_factor, multiple)?;
    let qk_head = round_up(raw, "qk_dim_factor", d * qk_factor, 64)?;
    let qk_head = raw.div(qk_head, heads, "qk_dim / num_heads")?;
    let v_head = round_up(raw, "v_dim_factor", d * v_factor, 64)?;
    let v_head = raw.div(v_head, heads, "v_dim / num_heads")?;
    let per_head = raw.mul(qk_head, v_head, "qk_head_dim·v_head_dim")?;
    let state = RecurrentState {
        conv: 0,
        recurrent: raw.mul(
            heads,
            per_head
                .checked_add(qk_head)
                .and_then(|s| s.checked_add(1))
                .ok_or_else(|| {
                    raw.invalid(
                        "hidden_size",
                        &hidden.into(),
                        "a size whose state fits in 64 bits",
                    )
                })?,
            "num_heads·(d_qk·d_v + d_qk + 1)",
        )?,
        recurrent_f32: false,
        conv_f32: false,
    };
    raw.layer_count("num_blocks", layers)?;
    raw.layer_count("num_hidden_layers", cached)?;
    let norm = if bias {
        Norm {
            kind: NormKind::LayerNorm,
            dim: hidden,
            bias: true,
        }
    } else {
        Norm::rms_norm(hidden)
    };
    let v_per_head = raw.div(v, heads, "v_dim / num_heads")?;
    let extras = mlstm(hidden, heads, qk, (v, v_per_head), bias);
    let layer = Layer {
        attention: Attention::Absent,
        cross_attention: None,
        ffn: Ffn::Dense(Mlp {
            hidden,
            intermediate: up,
            gated: true,
            up_bias: bias,
            down_bias: bias,
        }),
        norms: vec![norm; 2],
        sliding_window: None,
        extras,
        state: Some(state),
    };
    let decoder = Decoder::new(
        family.model_type,
        architecture(raw, family.architecture),
        hidden,
        vocab,
        stack(layer, layers, cached),
        Some(Norm::rms_norm(hidden)),
        false,
    );
    Ok(with_table(decoder.into_spec(), vocab, embedding))
}

/// `xLSTMModel.embeddings` is `vocab_size × embedding_dim` while `lm_head` is
/// `hidden_size → vocab_size` (`modeling_xlstm.py`): the two widths are independent keys
/// (each defaults to the other in `xLSTMConfig.__post_init__`). Where they differ the table is
/// its own tensor, so the untied head keeps the model's width. The forward then cannot feed
/// the table's rows to the first block's `hidden_size` norm: the weights are exact, the
/// memory and FLOPs of such a file describe no model that runs, said in a warning.
fn with_table(mut spec: ModelSpec, vocab: u64, embedding: u64) -> ModelSpec {
    if embedding != spec.hidden_size {
        spec.warnings.push(format!(
            "`embedding_dim` ({embedding}) is not `hidden_size` ({}): transformers builds these \
             weights but its forward cannot feed the token table to the blocks, so memory and \
             FLOPs describe no model that runs",
            spec.hidden_size
        ));
        spec.token_embedding = None;
        spec.extras.push(Extra::table(
            "backbone.embeddings.weight",
            "token table",
            Category::TokenEmbedding,
            Expr::sym(Sym::Vocab, vocab),
            Expr::sym(Sym::EmbeddingDim, embedding),
        ));
    }
    spec
}

/// `blocks` blocks, the first `cached` of them with their state; cache entries beyond the
/// blocks (`num_hidden_layers > num_blocks`) are states without a block.
fn stack(block: Layer, blocks: u64, cached: u64) -> Layers {
    let mut layers = Layers::new();
    layers.push_run(block.clone(), blocks.min(cached));
    layers.push_run(
        Layer {
            state: None,
            ..block.clone()
        },
        blocks.saturating_sub(cached),
    );
    layers.push_run(
        Layer {
            ffn: Ffn::Absent,
            norms: Vec::new(),
            extras: Vec::new(),
            ..block
        },
        cached.saturating_sub(blocks),
    );
    layers
}

/// `xLSTMLayer`'s tensors.
fn mlstm(hidden: u64, heads: u64, qk: u64, (v, v_per_head): (u64, u64), bias: bool) -> Vec<Extra> {
    const PART: &str = "mLSTM layer";
    let ssm = Category::Ssm;
    let d = Expr::sym(Sym::Hidden, hidden);
    let qk = named("d_qk", qk);
    let v_dim = named("d_v", v);
    let h = Expr::sym(Sym::Heads, heads);
    let mut out = vec![
        Extra::linear("mlstm.q.weight", PART, ssm, d.clone(), qk.clone()),
        Extra::linear("mlstm.k.weight", PART, ssm, d.clone(), qk.clone()),
        Extra::linear("mlstm.v.weight", PART, ssm, d.clone(), v_dim.clone()),
        Extra::linear(
            "mlstm.ogate_preact.weight",
            PART,
            ssm,
            d.clone(),
            v_dim.clone(),
        ),
        Extra::linear("mlstm.igate_preact.weight", PART, ssm, d.clone(), h.clone()),
        Extra::vector("mlstm.igate_preact.bias", PART, ssm, h.clone()),
        Extra::linear("mlstm.fgate_preact.weight", PART, ssm, d.clone(), h.clone()),
        Extra::vector("mlstm.fgate_preact.bias", PART, ssm, h.clone()),
        Extra::linear("mlstm.out_proj.weight", PART, ssm, v_dim.clone(), d.clone()),
    ];
    let norm_width = Expr::product(vec![h, named("d_v/n_h", v_per_head)]);
    out.push(Extra::vector(
        "mlstm.multihead_norm.weight",
        PART,
        ssm,
        norm_width.clone(),
    ));
    if bias {
        out.extend([
            Extra::vector("mlstm.q.bias", PART, ssm, qk.clone()),
            Extra::vector("mlstm.k.bias", PART, ssm, qk),
            Extra::vector("mlstm.v.bias", PART, ssm, v_dim.clone()),
            Extra::vector("mlstm.ogate_preact.bias", PART, ssm, v_dim),
            Extra::vector("mlstm.out_proj.bias", PART, ssm, d),
            Extra::vector("mlstm.multihead_norm.bias", PART, ssm, norm_width),
        ]);
    }
    out
}
