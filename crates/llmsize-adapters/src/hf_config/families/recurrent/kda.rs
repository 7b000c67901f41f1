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
use llmsize_core::spec::{Attention, Extra, Ffn, Layer, Layers, ModelSpec, Norm, RecurrentState};

use super::{layer_types, named};
use crate::error::ConfigError;
use crate::hf_config::HeadChoice;
use crate::hf_config::architecture;
use crate::hf_config::decoder::{Decoder, mlp};
use crate::hf_config::family::{
    ALL_SPARSE, AttentionRule, Block, Family, LLAMA, MoeRule, NO, Read, Reader, Shared, Switch,
    block_attention, block_moe, key_or,
};
use crate::hf_config::raw::RawConfig;

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
    moe: Some(MoeRule {
        experts: key_or(&["num_experts", "num_local_experts"], 512),
        top_k: key_or(&["num_experts_per_token", "num_experts_per_tok"], 8),
        expert_width: key_or(&["moe_intermediate_size"], 768),
        router_bias: NO,
        expert_bias: NO,
        shared: Shared::Count(key_or(&["num_shared_experts", "n_shared_experts"], 1)),
        shared_gate: false,
        sparsity: ALL_SPARSE,
    }),
    tie: false,
    ..LLAMA
};

pub(super) const BAILING_HYBRID: Family = Family {
    model_type: "bailing_hybrid",
    config_class: "BailingHybridConfig",
    architecture: "BailingHybridForCausalLM",
    read: Read::Code(read),
};

fn read(
    raw: &mut RawConfig<'_>,
    family: &Family,
    _head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let class = family.config_class;
    let reason = format!("absent; `{class}` default");
    let b = &BAILING_BLOCK;
    let mut r = Reader { raw, class };
    let hidden = r.size(b.hidden, Sym::Hidden)?;
    let layers = r.size(b.layers, Sym::Layers)?;
    let vocab = r.size(b.vocab, Sym::Vocab)?;
    let mla = block_attention(&mut r, b, hidden)?;
    let heads = match &mla {
        Attention::Latent(a) => a.num_heads,
        _ => 1,
    };
    let moe = match &b.moe {
        Some(m) => Some(block_moe(&mut r, m, hidden, layers)?.1),
        None => None,
    };
    let dense_width = r.size(key_or(&["intermediate_size"], 6144), Sym::Ffn)?;
    // `BailingHybridForCausalLM._tied_weights_keys = {}`: the head is never tied, whatever
    // `tie_word_embeddings` says.
    let tied = false;
    let n = raw.layer_count("num_hidden_layers", layers)?;
    // The KDA sizes: saved `linear_*` keys, else what `__post_init__` copies.
    let linear_heads = first_size(raw, &["linear_num_heads"], heads, "n_lin")?;
    let linear_dim = first_or(raw, &["linear_head_dim", "head_dim"], 128, &reason, "h_lin")?;
    let kernel = first_or(
        raw,
        &["linear_conv_kernel_dim", "short_conv_kernel_size"],
        4,
        &reason,
        "d_conv",
    )?;
    // `layer_types`: `full_attention` is MLA, anything else KDA; default every
    // `layer_group_size`-th layer.
    let full: Vec<bool> = if let Some(t) = layer_types(raw, n)? {
        t.iter().map(|t| t == "full_attention").collect()
    } else {
        {
            let group = raw.size_or(&["layer_group_size"], Sym::Named("group"), 6, &reason)?;
            (1..=n as u64).map(|i| i.is_multiple_of(group)).collect()
        }
    };
    let sparse: Vec<bool> = if let Some(t) = layer_types_key(raw, "mlp_layer_types", n)? {
        t.iter().map(|t| t == "sparse").collect()
    } else {
        {
            let first = if let Some(k) = raw.uint("first_k_dense_replace")? {
                k
            } else {
                raw.assume("first_k_dense_replace", 2, &reason);
                2
            };
            (0..n as u64).map(|i| i >= first).collect()
        }
    };
    let width = raw.mul(linear_heads, linear_dim, "linear_num_heads·linear_head_dim")?;
    let state = RecurrentState {
        conv: raw.mul(raw.mul(width, 3, "3·n·h")?, kernel, "3·n·h·kernel")?,
        recurrent: raw.mul(width, linear_dim, "n·h·h")?,
        recurrent_f32: true,
        conv_f32: false,
    };
    let kda = kda(hidden, linear_heads, linear_dim, kernel);
    let gate = Extra::linear(
        "attn_gate.weight",
        "attention head gate (g_proj)",
        Category::Attention,
        Expr::sym(Sym::Hidden, hidden),
        Expr::sym(Sym::Heads, heads),
    );
    let dense = mlp(hidden, dense_width, true, false);
    let norm = Norm::rms_norm(hidden);
    let keys = full.iter().copied().zip(sparse.iter().copied());
    let stack = Layers::from_pattern(keys, |&(is_full, is_sparse)| Layer {
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
        extras: if is_full {
            vec![gate.clone()]
        } else {
            kda.clone()
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
    layers: usize,
) -> Result<Option<Vec<String>>, ConfigError> {
    let Some(v) = raw.value(key) else {
        return Ok(None);
    };
    let list = v
        .as_array()
        .filter(|a| a.len() == layers)
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

/// `BailingHybridDeltaAttention`'s tensors.
fn kda(hidden: u64, heads: u64, head_dim: u64, kernel: u64) -> Vec<Extra> {
    const PART: &str = "Kimi delta attention";
    let d = Expr::sym(Sym::Hidden, hidden);
    let n = named("n_lin", heads);
    let width = Expr::product(vec![n.clone(), named("h_lin", head_dim)]);
    let ssm = Category::Ssm;
    vec![
        Extra::linear("kda.q_proj.weight", PART, ssm, d.clone(), width.clone()),
        Extra::linear("kda.k_proj.weight", PART, ssm, d.clone(), width.clone()),
        Extra::linear("kda.v_proj.weight", PART, ssm, d.clone(), width.clone()),
        Extra::table(
            "kda.conv1d.weight",
            PART,
            ssm,
            Expr::product(vec![Expr::Lit(3), width.clone()]),
            named("d_conv", kernel),
        ),
        Extra::linear("kda.f_proj.weight", PART, ssm, d.clone(), width.clone()),
        Extra::vector("kda.dt_bias", PART, ssm, width.clone()),
        Extra::vector("kda.A_log", PART, ssm, n.clone()),
        Extra::linear("kda.b_proj.weight", PART, ssm, d.clone(), n),
        Extra::vector("kda.o_norm.weight", PART, ssm, named("h_lin", head_dim)),
        Extra::linear("kda.g_proj.weight", PART, ssm, d.clone(), width.clone()),
        Extra::linear("kda.o_proj.weight", PART, ssm, width, d),
    ]
}
