//! RWKV-4 (`modeling_rwkv.py`, transformers 5.24): every block is `ln1` → time mixing
//! (`RwkvSelfAttention`) → `ln2` → channel mixing (`RwkvFeedForward`), all `LayerNorm`s with
//! biases; block 0 also has `pre_ln`, the model ends with `ln_out`, the head is `head`.
//!
//! - Time mixing (category `Ssm`): `key`, `value`, `receptance` `d → A` and `output` `A → d`
//!   without biases, `time_decay` and `time_first` (`A`), `time_mix_key`/`_value`/`_receptance`
//!   (`d`); `A` = `attention_hidden_size`, default `d`.
//! - Channel mixing (category `Ffn`): `key` `d → I` and `value` `I → d` (an ungated MLP),
//!   `receptance` `d → d` and `time_mix_key`/`_receptance` (`d`); `I` = `intermediate_size`,
//!   default `4·d`.
//! - State (`RwkvModel.forward`): five `d`-wide vectors per layer, the two token shifts in the
//!   model's dtype and the three WKV accumulators in float32.

use llmsize_core::Category;
use llmsize_core::expr::{Expr, Sym};
use llmsize_core::spec::{Attention, Extra, Ffn, Layer, Layers, ModelSpec, Norm, RecurrentState};

use super::named;
use crate::error::ConfigError;
use crate::hf_config::HeadChoice;
use crate::hf_config::architecture;
use crate::hf_config::decoder::{Decoder, mlp};
use crate::hf_config::family::{Family, Read, Reader, key_or};
use crate::hf_config::raw::RawConfig;

pub(super) const RWKV: Family = Family {
    model_type: "rwkv",
    config_class: "RwkvConfig",
    architecture: "RwkvForCausalLM",
    read: Read::Code(read),
};

const TIME: &str = "time mixing";
const CHANNEL: &str = "channel mixing";

fn read(
    raw: &mut RawConfig<'_>,
    family: &Family,
    _head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let class = family.config_class;
    let reason = format!("absent; `{class}` default");
    let mut r = Reader { raw, class };
    let hidden = r.size(key_or(&["hidden_size"], 4096), Sym::Hidden)?;
    let layers = r.size(key_or(&["num_hidden_layers"], 32), Sym::Layers)?;
    let vocab = r.size(key_or(&["vocab_size"], 50_277), Sym::Vocab)?;
    let follow = |raw: &mut RawConfig<'_>, key: &str, sym: Sym, default: u64, why: &str| {
        if let Some(v) = raw.size_opt(key)? {
            raw.source(sym, key);
            Ok::<u64, ConfigError>(v)
        } else {
            raw.assume(
                key,
                default,
                &format!("absent or null; `RwkvConfig` uses {why}"),
            );
            Ok(default)
        }
    };
    let attention = follow(
        raw,
        "attention_hidden_size",
        Sym::Named("A"),
        hidden,
        "`hidden_size`",
    )?;
    let four_d = raw.mul(4, hidden, "4·hidden_size")?;
    let inner = follow(
        raw,
        "intermediate_size",
        Sym::Ffn,
        four_d,
        "4·`hidden_size`",
    )?;
    let tied = raw.flag_or("tie_word_embeddings", false, &reason)?;
    let n = raw.layer_count("num_hidden_layers", layers)?;
    let d = Expr::sym(Sym::Hidden, hidden);
    let a = named("A", attention);
    let ssm = Category::Ssm;
    let mut extras = vec![
        Extra::vector("time_mix.time_decay", TIME, ssm, a.clone()),
        Extra::vector("time_mix.time_first", TIME, ssm, a.clone()),
        Extra::vector("time_mix.time_mix_key", TIME, ssm, d.clone()),
        Extra::vector("time_mix.time_mix_value", TIME, ssm, d.clone()),
        Extra::vector("time_mix.time_mix_receptance", TIME, ssm, d.clone()),
        Extra::linear("time_mix.key.weight", TIME, ssm, d.clone(), a.clone()),
        Extra::linear("time_mix.value.weight", TIME, ssm, d.clone(), a.clone()),
        Extra::linear(
            "time_mix.receptance.weight",
            TIME,
            ssm,
            d.clone(),
            a.clone(),
        ),
        Extra::linear("time_mix.output.weight", TIME, ssm, a, d.clone()),
    ];
    extras.extend([
        Extra::vector(
            "channel_mix.time_mix_key",
            CHANNEL,
            Category::Ffn,
            d.clone(),
        ),
        Extra::vector(
            "channel_mix.time_mix_receptance",
            CHANNEL,
            Category::Ffn,
            d.clone(),
        ),
        Extra::linear(
            "channel_mix.receptance.weight",
            CHANNEL,
            Category::Ffn,
            d.clone(),
            d,
        ),
    ]);
    let state = RecurrentState {
        conv: raw.mul(2, hidden, "2·hidden_size")?,
        recurrent: raw.mul(3, hidden, "3·hidden_size")?,
        recurrent_f32: true,
        conv_f32: false,
    };
    let norm = Norm::layer_norm(hidden);
    let stack = Layers::from_pattern((0..n).map(|i| i == 0), |&first| Layer {
        attention: Attention::Absent,
        cross_attention: None,
        ffn: Ffn::Dense(mlp(hidden, inner, false, false)),
        norms: vec![norm; if first { 3 } else { 2 }],
        sliding_window: None,
        extras: extras.clone(),
        state: Some(state),
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
