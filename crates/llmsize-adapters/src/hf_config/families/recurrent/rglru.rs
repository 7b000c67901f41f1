//! `RecurrentGemma` (Griffin, `modeling_recurrent_gemma.py`, transformers 5.24): layers cycle
//! through `block_types` (default recurrent, recurrent, attention); each is
//! `temporal_pre_norm` → temporal block → `channel_pre_norm` → MLP.
//!
//! - Recurrent block (`RecurrentGemmaRecurrentBlock`): `linear_y`, `linear_x` `d → lru` and
//!   `linear_out` `lru → d`, all biased; a depthwise `conv_1d` of `lru` channels and
//!   `conv1d_width` taps with bias; the RG-LRU: `recurrent_param` (`lru`), input and recurrent
//!   gates of `n_h` blocks `bw × bw` (`bw = lru / n_h`) with biases. Its state after a prefill:
//!   the conv window `lru × (conv1d_width − 1)` in the model's dtype and the float32
//!   recurrent state `lru`.
//! - Attention: local attention over `attention_window_size` (2048) tokens, `d_h` = `head_dim`
//!   or `d / n_h`, q/k/v biased with `attention_bias`, `o_proj` always biased; KV heads default
//!   to the heads.
//! - MLP: gated, biased, of `intermediate_size / 2` (`RecurrentGemmaMlp`).
//! - Categories as the coverage truth splits them: every `RecurrentGemma…` module that is not
//!   the attention (the recurrent block, the MLP, every `RMSNorm`, the final norm) is `Ssm`.

use llmsize_core::Category;
use llmsize_core::expr::{Expr, Sym};
use llmsize_core::spec::{Attention, Extra, Ffn, Layer, ModelSpec, RecurrentState};

use super::named;
use crate::error::ConfigError;
use crate::hf_config::HeadChoice;
use crate::hf_config::architecture;
use crate::hf_config::decoder::{Decoder, kv_heads, mha};
use crate::hf_config::family::{Family, Read, Reader, key_or};
use crate::hf_config::raw::RawConfig;
use crate::hf_config::runs::Runs;
use llmsize_core::checked::Checked;

pub(super) const RECURRENT_GEMMA: Family = Family {
    model_type: "recurrent_gemma",
    config_class: "RecurrentGemmaConfig",
    architecture: "RecurrentGemmaForCausalLM",
    read: Read::Code(read),
};

fn read(
    raw: &mut RawConfig<'_>,
    family: &Family,
    _head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let class = family.config_class;
    let reason = format!("absent; `{class}` default");
    let mut r = Reader { raw, class };
    let hidden = r.size(key_or(&["hidden_size"], 2560), Sym::Hidden)?;
    let layers = r.size(key_or(&["num_hidden_layers"], 26), Sym::Layers)?;
    let vocab = r.size(key_or(&["vocab_size"], 256_000), Sym::Vocab)?;
    let heads = r.size(key_or(&["num_attention_heads"], 10), Sym::Heads)?;
    let ff = r.size(
        key_or(&["intermediate_size"], 7680),
        Sym::Named("intermediate_size"),
    )?;
    let kernel = r.size(key_or(&["conv1d_width"], 4), Sym::Named("d_conv"))?;
    let window = r.size(
        key_or(&["attention_window_size", "sliding_window"], 2048),
        Sym::Named("window"),
    )?;
    let lru = if let Some(w) = raw.size_opt("lru_width")? {
        raw.source(Sym::Named("lru"), "lru_width");
        w
    } else {
        raw.assume(
            "lru_width",
            hidden,
            "absent or null; `RecurrentGemmaConfig` uses `hidden_size`",
        );
        hidden
    };
    let kv = kv_heads(raw, heads, class, None)?;
    if kv > heads {
        return Err(raw.invalid(
            "num_key_value_heads",
            &kv.into(),
            "at most `num_attention_heads`",
        ));
    }
    let head_dim = raw.head_dim(
        &["head_dim"],
        hidden,
        "hidden_size",
        heads,
        "num_attention_heads",
    )?;
    let bias = raw.flag_or("attention_bias", false, &reason)?;
    let tied = raw.flag_or("tie_word_embeddings", true, &reason)?;
    if !lru.is_multiple_of(heads) {
        return Err(raw.invalid(
            "lru_width",
            &lru.into(),
            "a multiple of `num_attention_heads` (the RG-LRU's gate blocks)",
        ));
    }
    // `(block_types * 100)[:num_hidden_layers]`.
    let types: Vec<bool> = match raw.value("block_types") {
        None => vec![false, false, true],
        Some(v) => v
            .as_array()
            .filter(|a| !a.is_empty())
            .and_then(|a| {
                a.iter()
                    .map(|t| match t.as_str() {
                        Some("recurrent") => Some(false),
                        Some("attention") => Some(true),
                        _ => None,
                    })
                    .collect()
            })
            .ok_or_else(|| {
                raw.invalid("block_types", v, "a list of `recurrent` and `attention`")
            })?,
    };
    let n = raw.bound_layers("num_hidden_layers", layers)?;
    let mut attention = mha(hidden, heads, kv, head_dim, bias);
    attention.o_bias = true;
    let d = Expr::sym(Sym::Hidden, hidden);
    let ssm = Category::Ssm;
    let norm =
        |name: &'static str| Extra::vector(name, "norms (RecurrentGemmaRMSNorm)", ssm, d.clone());
    let inner = named("d_ff/2", ff / 2);
    let mlp = vec![
        Extra::linear(
            "mlp.gate_proj.weight",
            "mlp (RecurrentGemmaMlp)",
            ssm,
            d.clone(),
            inner.clone(),
        ),
        Extra::vector(
            "mlp.gate_proj.bias",
            "mlp (RecurrentGemmaMlp)",
            ssm,
            inner.clone(),
        ),
        Extra::linear(
            "mlp.up_proj.weight",
            "mlp (RecurrentGemmaMlp)",
            ssm,
            d.clone(),
            inner.clone(),
        ),
        Extra::vector(
            "mlp.up_proj.bias",
            "mlp (RecurrentGemmaMlp)",
            ssm,
            inner.clone(),
        ),
        Extra::linear(
            "mlp.down_proj.weight",
            "mlp (RecurrentGemmaMlp)",
            ssm,
            inner,
            d.clone(),
        ),
        Extra::vector(
            "mlp.down_proj.bias",
            "mlp (RecurrentGemmaMlp)",
            ssm,
            d.clone(),
        ),
    ];
    let mut common = vec![
        norm("temporal_pre_norm.weight"),
        norm("channel_pre_norm.weight"),
    ];
    common.extend(mlp);
    let recurrent = {
        let mut e = common.clone();
        let bw = raw.div(lru, heads, "lru_width / num_attention_heads")?;
        e.extend(recurrent_block(hidden, lru, (heads, bw), kernel));
        e
    };
    let state = RecurrentState {
        conv: raw.check(
            (Checked::new(lru) * (Checked::new(kernel) - 1u64)).get("lru_width·(conv1d_width − 1)"),
        )?,
        recurrent: lru,
        recurrent_f32: true,
        conv_f32: false,
    };
    // `block_types` over and over.
    let period: Vec<(bool, u64)> = types.iter().map(|t| (*t, 1)).collect();
    let stack = Runs::periodic(n, &period).layers(|&is_attention| Layer {
        attention: if is_attention {
            Attention::Standard(attention.clone())
        } else {
            Attention::Absent
        },
        cross_attention: None,
        ffn: Ffn::Absent,
        norms: Vec::new(),
        sliding_window: is_attention.then_some(window),
        extras: if is_attention {
            common.clone()
        } else {
            recurrent.clone()
        },
        state: (!is_attention).then_some(state),
    });
    let mut spec = Decoder::new(
        family.model_type,
        architecture(raw, family.architecture),
        hidden,
        vocab,
        stack,
        None,
        tied,
    )
    .into_spec();
    spec.extras.push(Extra::vector(
        "final_norm.weight",
        "final norm (RecurrentGemmaRMSNorm)",
        ssm,
        d,
    ));
    Ok(spec)
}

/// `RecurrentGemmaRecurrentBlock`'s tensors.
fn recurrent_block(hidden: u64, lru: u64, (heads, bw): (u64, u64), kernel: u64) -> Vec<Extra> {
    const PART: &str = "recurrent block (RG-LRU)";
    let ssm = Category::Ssm;
    let d = Expr::sym(Sym::Hidden, hidden);
    let w = named("lru", lru);
    let bw = named("bw", bw);
    let gate = Expr::product(vec![Expr::sym(Sym::Heads, heads), bw.clone(), bw]);
    vec![
        Extra::linear("temporal.linear_y.weight", PART, ssm, d.clone(), w.clone()),
        Extra::vector("temporal.linear_y.bias", PART, ssm, w.clone()),
        Extra::linear("temporal.linear_x.weight", PART, ssm, d.clone(), w.clone()),
        Extra::vector("temporal.linear_x.bias", PART, ssm, w.clone()),
        Extra::linear(
            "temporal.linear_out.weight",
            PART,
            ssm,
            w.clone(),
            d.clone(),
        ),
        Extra::vector("temporal.linear_out.bias", PART, ssm, d),
        Extra::table(
            "temporal.conv_1d.weight",
            PART,
            ssm,
            w.clone(),
            named("d_conv", kernel),
        ),
        Extra::vector("temporal.conv_1d.bias", PART, ssm, w.clone()),
        Extra::vector("temporal.rg_lru.recurrent_param", PART, ssm, w.clone()),
        Extra::table(
            "temporal.rg_lru.input_gate_weight",
            PART,
            ssm,
            Expr::Lit(1),
            gate.clone(),
        ),
        Extra::vector("temporal.rg_lru.input_gate_bias", PART, ssm, w.clone()),
        Extra::table(
            "temporal.rg_lru.recurrent_gate_weight",
            PART,
            ssm,
            Expr::Lit(1),
            gate,
        ),
        Extra::vector("temporal.rg_lru.recurrent_gate_bias", PART, ssm, w),
    ]
}
