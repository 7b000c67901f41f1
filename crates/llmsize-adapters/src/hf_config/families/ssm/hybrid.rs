//! Hybrids: Mamba layers interleaved with attention, MLP and MoE layers. Each family is its
//! layer pattern; attention and MoE come from the block machinery of `family.rs`.

use llmsize_core::Category;
use llmsize_core::expr::{Expr, Sym};
use llmsize_core::spec::{
    Attention, Extra, Ffn, Layer, Layers, Mlp, ModelSpec, Moe, Norm, RecurrentState,
};

use super::mixer::{GatedDeltaNet, Mamba1, Mamba2};
use super::{dt_rank, expanded, tied};
use crate::error::ConfigError;
use crate::hf_config::architecture;
use crate::hf_config::decoder::Decoder;
use crate::hf_config::family::{
    ALL_SPARSE, AttentionRule, Block, Family, HeadDim, LLAMA, LLAMA_ATTENTION, MoeRule, NO,
    PLAIN_ATTENTION, QkNorm, Reader, Shared, StandardRule, Switch, block_attention, block_moe,
    index_list, key_or,
};
use crate::hf_config::raw::RawConfig;
use crate::hf_config::runs::Runs;

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
    // `JambaConfig.validate_architecture`: each offset below its period.
    for (key, offset, period) in [
        ("attn_layer_offset", attn_offset, attn_period),
        ("expert_layer_offset", expert_offset, expert_period),
    ] {
        if offset >= period {
            return Err(r.raw.invalid(
                key,
                &offset.into(),
                &format!("an offset below its period ({period})"),
            ));
        }
    }
    // 0 or 1 expert: every layer has the dense MLP (`layers_num_experts` > 1 builds a MoE).
    let experts = r.count(key_or(&["num_experts", "num_local_experts"], 16))?;
    let n = r.raw.bound_layers("num_hidden_layers", layers)?;
    // (attends, sparse): `i % attn_layer_period == attn_layer_offset`, and likewise for
    // experts (when there are more than one).
    let sparse = if experts > 1 {
        Runs::at_offset(n, expert_period, expert_offset)
    } else {
        Runs::uniform(false, n)
    };
    let attends = Runs::at_offset(n, attn_period, attn_offset);
    let attention = if attends.any(|a| *a) {
        Some(block_attention(&mut r, &block, hidden)?)
    } else {
        None
    };
    let moe = if sparse.any(|s| *s) {
        let rule = MoeRule {
            experts: key_or(&["num_experts", "num_local_experts"], 16),
            top_k: key_or(&["num_experts_per_tok"], 2),
            expert_width: key_or(&["intermediate_size"], 14336),
            correction_bias: NO,
            expert_bias: NO,
            shared: Shared::None,
            shared_gate: false,
            sparsity: ALL_SPARSE,
        };
        Some(block_moe(&mut r, &rule, hidden, layers)?.1)
    } else {
        None
    };
    let mamba = if attends.any(|a| !*a) {
        let expand = r.size(key_or(&["mamba_expand"], 2), Sym::Named("expand"))?;
        let m = Mamba1 {
            hidden,
            inner: expanded(&mut r, expand, hidden, "mamba_expand·hidden_size")?,
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
    let stack = attends.zip_layers(&sparse, |&(attends, sparse)| {
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
    inner: Option<u64>,
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
    let inner = if let Some(i) = inner {
        i
    } else {
        let expand = r.size(key_or(&["mamba_expand"], expand_d), Sym::Named("expand"))?;
        expanded(r, expand, hidden, "mamba_expand·hidden_size")?
    };
    let auto = || {
        r.raw
            .div(inner, heads, "mamba_intermediate_size / mamba_n_heads")
    };
    let head_dim = match r.raw.value("mamba_d_head") {
        Some(serde_json::Value::String(s)) if s == "auto" => auto()?,
        Some(_) => r.size(key_or(&["mamba_d_head"], 0), Sym::Named("d_ssm_head"))?,
        None => {
            let d = auto()?;
            let reason = format!("absent; `{}` default \"auto\" (I / mamba_n_heads)", r.class);
            r.raw.assume("mamba_d_head", d, &reason);
            d
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
    let bias = r.switch(Switch::Key("mamba_proj_bias", false))?;
    Ok(Mamba2 {
        hidden,
        inner,
        heads,
        head_dim,
        groups,
        state,
        kernel,
        in_bias: bias,
        out_bias: bias,
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
    let n = r.raw.bound_layers("num_hidden_layers", layers)?;
    let attends = index_list(r.raw, "attn_layer_indices", u64::MAX)?;
    let kinds = Runs::marked(n, attends, &true, &false);
    let attention = if kinds.any(|&a| a) {
        let block = Block {
            heads: key_or(&["num_attention_heads"], 32),
            ..BAMBA
        };
        Some(block_attention(&mut r, &block, hidden)?)
    } else {
        None
    };
    let mamba = if kinds.any(|&a| !a) {
        let m = mamba2_keys(&mut r, hidden, None, [128, 1, 256, 4, 2])?;
        Some((m.extras("mamba"), m.state(r.raw)?))
    } else {
        None
    };
    let tie = tied(&mut r, false)?;
    let norm = Norm::rms_norm(hidden);
    let stack = kinds.layers(|&attends| {
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

/// A list of layer kinds under `key` (`null` or absent: `None`), legacy names remapped as
/// `remap_legacy_layer_types` does (`mamba` → `linear_attention`, `attention` →
/// `full_attention`).
pub(super) fn layer_list(
    raw: &RawConfig<'_>,
    key: &str,
) -> Result<Option<Vec<String>>, ConfigError> {
    let Some(v) = raw.value(key) else {
        return Ok(None);
    };
    let list = v
        .as_array()
        .ok_or_else(|| raw.invalid(key, v, "a list of layer kinds"))?;
    list.iter()
        .map(|t| match t.as_str() {
            Some("mamba") => Ok("linear_attention".to_owned()),
            Some("attention") => Ok("full_attention".to_owned()),
            Some(s) => Ok(s.to_owned()),
            None => Err(raw.invalid(key, t, "strings such as `linear_attention`")),
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// `GraniteMoeHybrid` (`modeling_granitemoehybrid.py`): each layer is a Mamba-2 mixer where
/// `layer_types` says `linear_attention`, else attention (biases with `attention_bias`); then
/// a MoE of `num_local_experts` (when > 0; experts of `intermediate_size`) plus the always-on
/// gated `shared_mlp` of `shared_intermediate_size`. Two `RMSNorm`s per layer, final `norm`,
/// untied head.
pub(super) fn granitemoehybrid(
    raw: &mut RawConfig<'_>,
    family: &Family,
) -> Result<ModelSpec, ConfigError> {
    let mut r = Reader {
        raw,
        class: family.config_class,
    };
    let hidden = r.size(key_or(&["hidden_size"], 4096), Sym::Hidden)?;
    let layers = r.size(key_or(&["num_hidden_layers"], 32), Sym::Layers)?;
    let vocab = r.size(key_or(&["vocab_size"], 32000), Sym::Vocab)?;
    let n = r.raw.bound_layers("num_hidden_layers", layers)?;
    let types = match layer_list(r.raw, "layer_types")? {
        Some(t) => Some(t),
        None => layer_list(r.raw, "layers_block_type")?,
    };
    let kinds: Runs<bool> = match types {
        Some(t) if t.len() as u64 == n => {
            Runs::from_list(t.iter().map(|k| k != "linear_attention"))
        }
        Some(_) => {
            let v = r
                .raw
                .value("layer_types")
                .or_else(|| r.raw.value("layers_block_type"));
            return Err(r.raw.invalid(
                "layer_types",
                v.unwrap_or(&serde_json::Value::Null),
                &format!("one entry per layer ({n})"),
            ));
        }
        None => Runs::uniform(false, n),
    };
    let attention = if kinds.any(|&a| a) {
        let block = Block {
            heads: key_or(&["num_attention_heads"], 32),
            ..LLAMA
        };
        Some(block_attention(&mut r, &block, hidden)?)
    } else {
        None
    };
    let mamba = if kinds.any(|&a| !a) {
        let m = mamba2_keys(&mut r, hidden, None, [128, 1, 256, 4, 2])?;
        Some((m.extras("mamba"), m.state(r.raw)?))
    } else {
        None
    };
    let shared_width = r.size(key_or(&["shared_intermediate_size"], 1024), Sym::SharedFfn)?;
    let experts = if let Some(e) = r.raw.uint("num_local_experts")? {
        e
    } else {
        let reason = format!("absent; `{}` default", r.class);
        r.raw.assume("num_local_experts", 8, &reason);
        8
    };
    let (ffn, shared_extras) = if experts > 0 {
        let rule = MoeRule {
            experts: key_or(&["num_local_experts"], 8),
            top_k: key_or(&["num_experts_per_tok"], 2),
            expert_width: key_or(&["intermediate_size"], 11008),
            correction_bias: NO,
            expert_bias: NO,
            shared: Shared::Width(key_or(&["shared_intermediate_size"], 1024)),
            shared_gate: false,
            sparsity: ALL_SPARSE,
        };
        (
            Ffn::Moe(block_moe(&mut r, &rule, hidden, layers)?.1),
            Vec::new(),
        )
    } else {
        // No experts: `shared_mlp` alone (`input_linear` d → 2·f, `output_linear` f → d),
        // still a shared expert by its name.
        let f = Expr::sym(Sym::SharedFfn, shared_width);
        let d = Expr::sym(Sym::Hidden, hidden);
        let part = "shared mlp";
        let c = Category::MoeSharedExperts;
        (
            Ffn::Absent,
            vec![
                Extra::linear(
                    "shared_mlp.input_linear.weight",
                    part,
                    c,
                    d.clone(),
                    Expr::product(vec![Expr::Lit(2), f.clone()]),
                ),
                Extra::linear("shared_mlp.output_linear.weight", part, c, f, d),
            ],
        )
    };
    let tie = tied(&mut r, false)?;
    let norm = Norm::rms_norm(hidden);
    let stack = kinds.layers(|&attends| {
        let mixer = match (attends, &attention, &mamba) {
            (true, Some(a), _) => Mixer::Attention(a.clone()),
            (false, _, Some((e, s))) => Mixer::Ssm(e.clone(), *s),
            _ => Mixer::None,
        };
        let mut l = layer(mixer, ffn.clone(), vec![norm; 2]);
        l.extras.extend(shared_extras.iter().cloned());
        l
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

/// `NemotronHConfig._pattern_to_list`: `M` Mamba-2, `E` MoE, `*` attention, `-` MLP.
fn nemotron_pattern(raw: &RawConfig<'_>, key: &str) -> Result<Option<Vec<String>>, ConfigError> {
    let Some(v) = raw.value(key) else {
        return Ok(None);
    };
    let p = v
        .as_str()
        .ok_or_else(|| raw.invalid(key, v, "a string of `M`, `E`, `*` and `-`"))?;
    p.chars()
        .map(|c| match c {
            'M' => Ok("linear_attention".to_owned()),
            'E' => Ok("moe".to_owned()),
            '*' => Ok("full_attention".to_owned()),
            '-' => Ok("mlp".to_owned()),
            _ => Err(raw.invalid(key, v, "a string of `M`, `E`, `*` and `-`")),
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// Nemotron-H's attention: no biases whatever `attention_bias` says, 8 KV heads, `head_dim`
/// 128.
const NEMOTRON_H: Block = Block {
    kv_default: Some(8),
    head_dim: HeadDim::KeyOr(128),
    attention: AttentionRule::Standard(PLAIN_ATTENTION),
    ..LLAMA
};

/// A Nemotron-H layer kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NemotronBlock {
    Mamba,
    Attention,
    Mlp,
    Moe,
}

/// Nemotron-H (`modeling_nemotron_h.py`): the layers are `layers_block_type` (or
/// `layer_types`, else `hybrid_override_pattern`, else the class default `M E * -`), whose
/// length is the layer count (`num_hidden_layers` is ignored). Each block is one `RMSNorm`
/// and one mixer: a Mamba-2 mixer with I = `mamba_num_heads·mamba_head_dim`, attention, an
/// ungated MLP of `intermediate_size`, or a MoE of ungated experts with an ungated shared
/// expert. `norm_f`, a head never tied (`_tied_weights_keys` is empty).
pub(super) fn nemotron_h(
    raw: &mut RawConfig<'_>,
    family: &Family,
) -> Result<ModelSpec, ConfigError> {
    let mut r = Reader {
        raw,
        class: family.config_class,
    };
    let hidden = r.size(key_or(&["hidden_size"], 4096), Sym::Hidden)?;
    let vocab = r.size(key_or(&["vocab_size"], 131_072), Sym::Vocab)?;
    let types = if let Some(t) = layer_list(r.raw, "layers_block_type")? {
        t
    } else if let Some(t) = layer_list(r.raw, "layer_types")? {
        t
    } else if let Some(t) = nemotron_pattern(r.raw, "hybrid_override_pattern")? {
        t
    } else {
        let reason = format!("absent; `{}` default", r.class);
        r.raw.assume("layers_block_type", "[M, E, *, -]", &reason);
        ["linear_attention", "moe", "full_attention", "mlp"]
            .map(str::to_owned)
            .to_vec()
    };
    let kinds = types
        .iter()
        .map(|t| match t.as_str() {
            "linear_attention" => Ok(NemotronBlock::Mamba),
            "full_attention" => Ok(NemotronBlock::Attention),
            "mlp" => Ok(NemotronBlock::Mlp),
            "moe" => Ok(NemotronBlock::Moe),
            other => Err(r.raw.invalid(
                "layers_block_type",
                &other.into(),
                "`linear_attention`, `full_attention`, `mlp` or `moe`",
            )),
        })
        .collect::<Result<Vec<_>, _>>()?;
    r.raw.layer_count("layers_block_type", kinds.len() as u64)?;
    r.raw.source(Sym::Layers, "len(layers_block_type)");
    let has = |k: NemotronBlock| kinds.contains(&k);
    let mlp_bias = r.switch(Switch::Key("mlp_bias", false))?;
    let attention = if has(NemotronBlock::Attention) {
        let block = Block {
            heads: key_or(&["num_attention_heads"], 32),
            ..NEMOTRON_H
        };
        Some(block_attention(&mut r, &block, hidden)?)
    } else {
        None
    };
    let mamba = if has(NemotronBlock::Mamba) {
        let heads = r.size(key_or(&["mamba_num_heads"], 128), Sym::Named("n_ssm_heads"))?;
        let head_dim = r.size(key_or(&["mamba_head_dim"], 64), Sym::Named("d_ssm_head"))?;
        let bias = r.switch(Switch::Key("use_bias", false))?;
        // `__post_init__` lets the `mamba_*` spellings override.
        let conv_bias = match r.raw.flag("mamba_conv_bias")? {
            Some(b) => b,
            None => r.switch(Switch::Key("use_conv_bias", true))?,
        };
        let m = Mamba2 {
            hidden,
            inner: r
                .raw
                .mul(heads, head_dim, "mamba_num_heads·mamba_head_dim")?,
            heads,
            head_dim,
            groups: r.size(
                key_or(&["mamba_n_groups", "n_groups"], 8),
                Sym::Named("n_groups"),
            )?,
            state: r.size(key_or(&["ssm_state_size"], 128), Sym::Named("d_state"))?,
            kernel: r.size(
                key_or(&["mamba_d_conv", "conv_kernel"], 4),
                Sym::Named("d_conv"),
            )?,
            in_bias: bias,
            out_bias: bias,
            conv_bias,
            norm: true,
        };
        Some((m.extras("mixer"), m.state(r.raw)?))
    } else {
        None
    };
    let mlp = if has(NemotronBlock::Mlp) {
        let width = r.size(key_or(&["intermediate_size"], 21504), Sym::Ffn)?;
        Some(Mlp {
            gated: false,
            ..gated(hidden, width, mlp_bias)
        })
    } else {
        None
    };
    let moe = if has(NemotronBlock::Moe) {
        if r.raw.value("moe_latent_size").is_some() {
            return Err(r.raw.invalid(
                "moe_latent_size",
                r.raw
                    .value("moe_latent_size")
                    .unwrap_or(&serde_json::Value::Null),
                "null (llmsize does not count latent MoE projections yet)",
            ));
        }
        let experts = r.size(
            key_or(&["n_routed_experts", "num_local_experts"], 8),
            Sym::Experts,
        )?;
        let top_k = r.size(key_or(&["num_experts_per_tok"], 2), Sym::TopK)?;
        if top_k > experts {
            return Err(r.raw.invalid(
                "num_experts_per_tok",
                &top_k.into(),
                &format!("at most the number of experts ({experts})"),
            ));
        }
        let width = r.size(key_or(&["moe_intermediate_size"], 7688), Sym::ExpertFfn)?;
        let shared = r.size(
            key_or(&["moe_shared_expert_intermediate_size"], 7688),
            Sym::SharedFfn,
        )?;
        Some(Moe {
            num_experts: experts,
            experts_per_token: top_k,
            expert: Mlp {
                gated: false,
                ..gated(hidden, width, false)
            },
            router_bias: llmsize_core::spec::RouterBias::None,
            router: true,
            shared: Some(Mlp {
                gated: false,
                ..gated(hidden, shared, mlp_bias)
            }),
            shared_gate: false,
        })
    } else {
        None
    };
    // `NemotronHForCausalLM._tied_weights_keys` is empty: the head is never tied, whatever
    // `tie_word_embeddings` says.
    let tie = false;
    let norm = Norm::rms_norm(hidden);
    let stack = Layers::from_pattern(kinds, |k| {
        let (mixer, ffn) = match (k, &attention, &mamba, &mlp, &moe) {
            (NemotronBlock::Mamba, _, Some((e, s)), _, _) => {
                (Mixer::Ssm(e.clone(), *s), Ffn::Absent)
            }
            (NemotronBlock::Attention, Some(a), _, _, _) => {
                (Mixer::Attention(a.clone()), Ffn::Absent)
            }
            (NemotronBlock::Mlp, _, _, Some(m), _) => (Mixer::None, Ffn::Dense(*m)),
            (NemotronBlock::Moe, _, _, _, Some(m)) => (Mixer::None, Ffn::Moe(m.clone())),
            _ => (Mixer::None, Ffn::Absent),
        };
        layer(mixer, ffn, vec![norm])
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

/// Falcon-H1's attention: biases with `attention_bias`, 8 KV heads.
const FALCON_H1: Block = BAMBA;

/// Falcon-H1 (`modeling_falcon_h1.py`): every layer runs attention and a Mamba-2 mixer side
/// by side (I = `mamba_d_ssm`, or `mamba_expand·d` when it is null; `out_proj` biased by
/// `projectors_bias`; the gated norm only with `mamba_rms_norm`), then the gated MLP of
/// `intermediate_size` (biases with `mlp_bias`); `input_layernorm` and `pre_ff_layernorm`,
/// `final_layernorm`, untied head.
pub(super) fn falcon_h1(
    raw: &mut RawConfig<'_>,
    family: &Family,
) -> Result<ModelSpec, ConfigError> {
    let mut r = Reader {
        raw,
        class: family.config_class,
    };
    let hidden = r.size(key_or(&["hidden_size"], 4096), Sym::Hidden)?;
    let layers = r.size(key_or(&["num_hidden_layers"], 32), Sym::Layers)?;
    let vocab = r.size(key_or(&["vocab_size"], 128_000), Sym::Vocab)?;
    let width = r.size(key_or(&["intermediate_size"], 14336), Sym::Ffn)?;
    let mlp_bias = r.switch(Switch::Key("mlp_bias", false))?;
    let block = Block {
        heads: key_or(&["num_attention_heads"], 32),
        ..FALCON_H1
    };
    let attention = block_attention(&mut r, &block, hidden)?;
    // `mamba_d_ssm`: absent → the class default 1024; null → `mamba_expand·d`.
    let inner = if r.raw.has("mamba_d_ssm") {
        match r.raw.size_opt("mamba_d_ssm")? {
            Some(i) => {
                r.raw.source(Sym::Named("d_inner"), "mamba_d_ssm");
                Some(i)
            }
            None => None,
        }
    } else {
        let reason = format!("absent; `{}` default", r.class);
        r.raw.assume("mamba_d_ssm", 1024, &reason);
        Some(1024)
    };
    let mut m = mamba2_keys(&mut r, hidden, inner, [128, 1, 256, 4, 2])?;
    m.out_bias = r.switch(Switch::Key("projectors_bias", false))?;
    m.norm = r.switch(Switch::Key("mamba_rms_norm", false))?;
    let tie = tied(&mut r, false)?;
    let norm = Norm::rms_norm(hidden);
    let mut l = layer(
        Mixer::Attention(attention),
        Ffn::Dense(gated(hidden, width, mlp_bias)),
        vec![norm; 2],
    );
    l.extras = m.extras("mamba");
    l.state = Some(m.state(r.raw)?);
    let n = r.raw.layer_count("num_hidden_layers", layers)?;
    Ok(Decoder::new(
        family.model_type,
        architecture(r.raw, family.architecture),
        hidden,
        vocab,
        Layers::repeat(l, n as u64),
        Some(norm),
        tie,
    )
    .into_spec())
}

/// `LaraMini`'s attention: Qwen3's, per-head q/k norms, biases with `attention_bias`, 4 KV
/// heads, `head_dim` 128.
const LARA_MINI: Block = Block {
    kv_default: Some(4),
    head_dim: HeadDim::KeyOr(128),
    attention: AttentionRule::Standard(StandardRule {
        qk_norm: QkNorm::PerHead,
        ..LLAMA_ATTENTION
    }),
    ..LLAMA
};

/// `LaraMini` (`modeling_lara_mini.py`): `layer_types` (default: `linear_attention`,
/// `sliding_attention`, `linear_attention`, `full_attention`, `sliding_attention` repeated)
/// picks a gated `DeltaNet` or attention (a window of `sliding_window` on the sliding
/// layers); every layer then has the MoE of `num_experts` experts of
/// `moe_intermediate_size` with an ungated-sum shared expert of
/// `shared_expert_intermediate_size`. Two `RMSNorm`s per layer, final `norm`, tied head.
pub(super) fn lara_mini(
    raw: &mut RawConfig<'_>,
    family: &Family,
) -> Result<ModelSpec, ConfigError> {
    const PATTERN: [&str; 5] = [
        "linear_attention",
        "sliding_attention",
        "linear_attention",
        "full_attention",
        "sliding_attention",
    ];
    let mut r = Reader {
        raw,
        class: family.config_class,
    };
    let hidden = r.size(key_or(&["hidden_size"], 1024), Sym::Hidden)?;
    let layers = r.size(key_or(&["num_hidden_layers"], 34), Sym::Layers)?;
    let vocab = r.size(key_or(&["vocab_size"], 151_936), Sym::Vocab)?;
    let n = r.raw.bound_layers("num_hidden_layers", layers)?;
    let types = layer_list(r.raw, "layer_types")?;
    if let Some(types) = &types
        && types.len() as u64 != n
    {
        let v = r
            .raw
            .value("layer_types")
            .unwrap_or(&serde_json::Value::Null);
        return Err(r
            .raw
            .invalid("layer_types", v, &format!("one entry per layer ({n})")));
    }
    if types.is_none() {
        let reason = format!("absent; `{}` default (period 5: L S L F S)", r.class);
        r.raw.assume("layer_types", "L S L F S …", &reason);
    }
    let window = r.size(key_or(&["sliding_window"], 512), Sym::Named("window"))?;
    // (linear?, window)
    let kind = |t: &str| match t {
        "linear_attention" => (true, None),
        "sliding_attention" => (false, Some(window)),
        _ => (false, None),
    };
    let kinds: Runs<(bool, Option<u64>)> = if let Some(types) = types {
        Runs::from_list(types.iter().map(|t| kind(t)))
    } else {
        let period: Vec<_> = PATTERN.iter().map(|t| (kind(t), 1)).collect();
        Runs::periodic(n, &period)
    };
    let attention = if kinds.any(|k| !k.0) {
        let block = Block {
            heads: key_or(&["num_attention_heads"], 16),
            ..LARA_MINI
        };
        Some(block_attention(&mut r, &block, hidden)?)
    } else {
        None
    };
    let delta = if kinds.any(|k| k.0) {
        let key_heads = r.size(
            key_or(&["linear_num_key_heads"], 8),
            Sym::Named("n_k_heads"),
        )?;
        let value_heads = r.size(
            key_or(&["linear_num_value_heads"], 16),
            Sym::Named("n_v_heads"),
        )?;
        if !value_heads.is_multiple_of(key_heads) {
            return Err(r.raw.invalid(
                "linear_num_value_heads",
                &value_heads.into(),
                "a multiple of `linear_num_key_heads`",
            ));
        }
        let m = GatedDeltaNet {
            hidden,
            key_heads,
            value_heads,
            key_dim: r.size(
                key_or(&["linear_key_head_dim"], 128),
                Sym::Named("d_k_head"),
            )?,
            value_dim: r.size(
                key_or(&["linear_value_head_dim"], 128),
                Sym::Named("d_v_head"),
            )?,
            kernel: r.size(key_or(&["linear_conv_kernel_dim"], 4), Sym::Named("d_conv"))?,
        };
        Some((m.extras("linear_attn"), m.state(r.raw)?))
    } else {
        None
    };
    let rule = MoeRule {
        experts: key_or(&["num_experts"], 128),
        top_k: key_or(&["num_experts_per_tok"], 4),
        expert_width: key_or(&["moe_intermediate_size"], 512),
        correction_bias: NO,
        expert_bias: NO,
        shared: Shared::Width(key_or(&["shared_expert_intermediate_size"], 512)),
        shared_gate: false,
        sparsity: ALL_SPARSE,
    };
    let moe = block_moe(&mut r, &rule, hidden, layers)?.1;
    let tie = tied(&mut r, true)?;
    let norm = Norm::rms_norm(hidden);
    let stack = kinds.layers(|&(linear, window)| {
        let mixer = match (linear, &attention, &delta) {
            (false, Some(a), _) => Mixer::Attention(a.clone()),
            (true, _, Some((e, s))) => Mixer::Ssm(e.clone(), *s),
            _ => Mixer::None,
        };
        let mut l = layer(mixer, Ffn::Moe(moe.clone()), vec![norm; 2]);
        l.sliding_window = window;
        l
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
