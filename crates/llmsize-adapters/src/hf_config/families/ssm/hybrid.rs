//! Hybrids: Mamba layers interleaved with attention, MLP and MoE layers. Each family is its
//! layer pattern; attention and MoE come from the block machinery of `family.rs`.

use llmsize_core::expr::Sym;
use llmsize_core::spec::{
    Attention, Extra, Ffn, Layer, Layers, Mlp, ModelSpec, Moe, Norm, RecurrentState,
};

use super::mixer::{Mamba1, Mamba2};
use super::{dt_rank, tied};
use crate::error::ConfigError;
use crate::hf_config::architecture;
use crate::hf_config::decoder::Decoder;
use crate::hf_config::family::{
    ALL_SPARSE, AttentionRule, Block, Family, LLAMA, LLAMA_ATTENTION, MoeRule, NO, PLAIN_ATTENTION,
    Reader, Shared, Switch, block_attention, block_moe, index_list, key_or,
};
use crate::hf_config::raw::RawConfig;

/// What mixes tokens in a layer.
#[derive(Debug, Clone)]
pub(super) enum Mixer {
    /// A state-space mixer: its tensors and the state it keeps.
    Ssm(Vec<Extra>, RecurrentState),
    /// Self-attention.
    Attention(Attention),
    /// Nothing (an MLP-only or MoE-only layer).
    None,
}

/// A hybrid layer: a mixer, a feed-forward part, the block's norms.
pub(super) fn layer(mixer: Mixer, ffn: Ffn, norms: Vec<Norm>) -> Layer {
    let (attention, extras, state) = match mixer {
        Mixer::Ssm(extras, state) => (Attention::Absent, extras, Some(state)),
        Mixer::Attention(a) => (a, Vec::new(), None),
        Mixer::None => (Attention::Absent, Vec::new(), None),
    };
    Layer {
        attention,
        cross_attention: None,
        ffn,
        norms,
        sliding_window: None,
        extras,
        state,
    }
}

fn gated(hidden: u64, width: u64, bias: bool) -> Mlp {
    Mlp {
        hidden,
        intermediate: width,
        gated: true,
        up_bias: bias,
        down_bias: bias,
    }
}

/// Jamba's attention: Llama's without biases, 8 KV heads, `head_dim` if the config has one.
const JAMBA: Block = Block {
    kv_default: Some(8),
    attention: AttentionRule::Standard(PLAIN_ATTENTION),
    ..LLAMA
};

/// Jamba (`modeling_jamba.py`): layer i attends when `i % attn_layer_period ==
/// attn_layer_offset`, else is a `JambaMambaMixer` (Mamba-1 with I = `mamba_expand·d` and
/// weighted dt/B/C `RMSNorm`s); its feed-forward part is a MoE of `num_experts` when `i %
/// expert_layer_period == expert_layer_offset` and `num_experts` > 1, else the gated MLP of
/// `intermediate_size`. Two `RMSNorm`s per layer, `final_layernorm`, untied head.
pub(super) fn jamba(raw: &mut RawConfig<'_>, family: &Family) -> Result<ModelSpec, ConfigError> {
    let mut r = Reader {
        raw,
        class: family.config_class,
    };
    let hidden = r.size(key_or(&["hidden_size"], 4096), Sym::Hidden)?;
    let layers = r.size(key_or(&["num_hidden_layers"], 32), Sym::Layers)?;
    let vocab = r.size(key_or(&["vocab_size"], 65536), Sym::Vocab)?;
    let block = Block {
        heads: key_or(&["num_attention_heads"], 32),
        ..JAMBA
    };
    let width = r.size(key_or(&["intermediate_size"], 14336), Sym::Ffn)?;
    let attn_period = r.size(key_or(&["attn_layer_period"], 8), Sym::Named("attn_period"))?;
    let attn_offset = r.count(key_or(&["attn_layer_offset"], 4))?;
    let expert_period = r.size(
        key_or(&["expert_layer_period"], 2),
        Sym::Named("expert_period"),
    )?;
    let expert_offset = r.count(key_or(&["expert_layer_offset"], 1))?;
    let experts = r.size(
        key_or(&["num_experts", "num_local_experts"], 16),
        Sym::Experts,
    )?;
    let n = r.raw.layer_count("num_hidden_layers", layers)?;
    let kinds: Vec<(bool, bool)> = (0..n as u64)
        .map(|i| {
            (
                i % attn_period == attn_offset,
                experts > 1 && i % expert_period == expert_offset,
            )
        })
        .collect();
    let attention = if kinds.iter().any(|k| k.0) {
        Some(block_attention(&mut r, &block, hidden)?)
    } else {
        None
    };
    let moe = if kinds.iter().any(|k| k.1) {
        let rule = MoeRule {
            experts: key_or(&["num_experts", "num_local_experts"], 16),
            top_k: key_or(&["num_experts_per_tok"], 2),
            expert_width: key_or(&["intermediate_size"], 14336),
            router_bias: NO,
            expert_bias: NO,
            shared: Shared::None,
            shared_gate: false,
            sparsity: ALL_SPARSE,
        };
        Some(block_moe(&mut r, &rule, hidden, layers)?.1)
    } else {
        None
    };
    let mamba = if kinds.iter().any(|k| !k.0) {
        let expand = r.size(key_or(&["mamba_expand"], 2), Sym::Named("expand"))?;
        let m = Mamba1 {
            hidden,
            inner: r.raw.mul(expand, hidden, "mamba_expand·hidden_size")?,
            state: r.size(key_or(&["mamba_d_state"], 16), Sym::Named("d_state"))?,
            kernel: r.size(key_or(&["mamba_d_conv"], 4), Sym::Named("d_conv"))?,
            dt_rank: dt_rank(&mut r, "mamba_dt_rank", hidden)?,
            proj_bias: r.switch(Switch::Key("mamba_proj_bias", false))?,
            conv_bias: r.switch(Switch::Key("mamba_conv_bias", true))?,
            inner_norms: true,
        };
        Some((m.extras("mamba"), m.state(r.raw)?))
    } else {
        None
    };
    let tie = tied(&mut r, false)?;
    let norm = Norm::rms_norm(hidden);
    let stack = Layers::from_pattern(kinds, |&(attends, sparse)| {
        let mixer = match (attends, &attention, &mamba) {
            (true, Some(a), _) => Mixer::Attention(a.clone()),
            (false, _, Some((e, s))) => Mixer::Ssm(e.clone(), *s),
            _ => Mixer::None,
        };
        let ffn = match (sparse, &moe) {
            (true, Some(m)) => Ffn::Moe(Moe::clone(m)),
            _ => Ffn::Dense(gated(hidden, width, false)),
        };
        layer(mixer, ffn, vec![norm; 2])
    });
    Ok(Decoder::new(
        family.model_type,
        architecture(r.raw, family.architecture),
        hidden,
        vocab,
        stack,
        Some(norm),
        tie,
    )
    .into_spec())
}

/// Bamba's attention: biases with `attention_bias`, 8 KV heads.
const BAMBA: Block = Block {
    kv_default: Some(8),
    attention: AttentionRule::Standard(LLAMA_ATTENTION),
    ..LLAMA
};

/// A Mamba-2 mixer of a hybrid read from the `mamba_*` keys (Bamba, `GraniteMoeHybrid`):
/// I = `mamba_expand·d`, `mamba_d_head` "auto" = I / `mamba_n_heads`, and the configuration
/// classes' check that heads·head width = I.
pub(super) fn mamba2_keys(
    r: &mut Reader<'_, '_>,
    hidden: u64,
    defaults: [u64; 5],
) -> Result<Mamba2, ConfigError> {
    let [heads_d, groups_d, state_d, kernel_d, expand_d] = defaults;
    let heads = r.size(
        key_or(&["mamba_n_heads"], heads_d),
        Sym::Named("n_ssm_heads"),
    )?;
    let groups = r.size(
        key_or(&["mamba_n_groups"], groups_d),
        Sym::Named("n_groups"),
    )?;
    let state = r.size(key_or(&["mamba_d_state"], state_d), Sym::Named("d_state"))?;
    let kernel = r.size(key_or(&["mamba_d_conv"], kernel_d), Sym::Named("d_conv"))?;
    let expand = r.size(key_or(&["mamba_expand"], expand_d), Sym::Named("expand"))?;
    let inner = r.raw.mul(expand, hidden, "mamba_expand·hidden_size")?;
    let head_dim = match r.raw.value("mamba_d_head") {
        Some(serde_json::Value::String(s)) if s == "auto" => inner / heads,
        Some(_) => r.size(key_or(&["mamba_d_head"], 0), Sym::Named("d_ssm_head"))?,
        None => {
            let reason = format!("absent; `{}` default \"auto\" (I / mamba_n_heads)", r.class);
            r.raw.assume("mamba_d_head", inner / heads, &reason);
            inner / heads
        }
    };
    if !inner.is_multiple_of(heads)
        || r.raw.mul(heads, head_dim, "mamba_n_heads·mamba_d_head")? != inner
    {
        return Err(r.raw.invalid(
            "mamba_d_head",
            &head_dim.into(),
            &format!("mamba_n_heads·mamba_d_head equal to mamba_expand·hidden_size ({inner})"),
        ));
    }
    Ok(Mamba2 {
        hidden,
        inner,
        heads,
        head_dim,
        groups,
        state,
        kernel,
        proj_bias: r.switch(Switch::Key("mamba_proj_bias", false))?,
        conv_bias: r.switch(Switch::Key("mamba_conv_bias", true))?,
        norm: true,
    })
}

/// Bamba (`modeling_bamba.py`): layers listed in `attn_layer_indices` attend (default none),
/// the others hold a `BambaMixer` (Mamba-2); every layer has the gated MLP of
/// `intermediate_size` (biases with `mlp_bias`), `input_layernorm` and `pre_ff_layernorm`;
/// `final_layernorm`, untied head.
pub(super) fn bamba(raw: &mut RawConfig<'_>, family: &Family) -> Result<ModelSpec, ConfigError> {
    let mut r = Reader {
        raw,
        class: family.config_class,
    };
    let hidden = r.size(key_or(&["hidden_size"], 4096), Sym::Hidden)?;
    let layers = r.size(key_or(&["num_hidden_layers"], 32), Sym::Layers)?;
    let vocab = r.size(key_or(&["vocab_size"], 128_000), Sym::Vocab)?;
    let width = r.size(key_or(&["intermediate_size"], 14336), Sym::Ffn)?;
    let mlp_bias = r.switch(Switch::Key("mlp_bias", false))?;
    let n = r.raw.layer_count("num_hidden_layers", layers)?;
    let attends: std::collections::HashSet<u64> =
        index_list(r.raw, "attn_layer_indices", u64::MAX)?
            .into_iter()
            .collect();
    let kinds: Vec<bool> = (0..n as u64).map(|i| attends.contains(&i)).collect();
    let attention = if kinds.iter().any(|&a| a) {
        let block = Block {
            heads: key_or(&["num_attention_heads"], 32),
            ..BAMBA
        };
        Some(block_attention(&mut r, &block, hidden)?)
    } else {
        None
    };
    let mamba = if kinds.iter().any(|&a| !a) {
        let m = mamba2_keys(&mut r, hidden, [128, 1, 256, 4, 2])?;
        Some((m.extras("mamba"), m.state(r.raw)?))
    } else {
        None
    };
    let tie = tied(&mut r, false)?;
    let norm = Norm::rms_norm(hidden);
    let stack = Layers::from_pattern(kinds, |&attends| {
        let mixer = match (attends, &attention, &mamba) {
            (true, Some(a), _) => Mixer::Attention(a.clone()),
            (false, _, Some((e, s))) => Mixer::Ssm(e.clone(), *s),
            _ => Mixer::None,
        };
        layer(
            mixer,
            Ffn::Dense(gated(hidden, width, mlp_bias)),
            vec![norm; 2],
        )
    });
    Ok(Decoder::new(
        family.model_type,
        architecture(r.raw, family.architecture),
        hidden,
        vocab,
        stack,
        Some(norm),
        tie,
    )
    .into_spec())
}
