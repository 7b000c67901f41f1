//! Mixture-of-experts families read by code (Mixtral, Qwen-MoE, `OLMoE`, `GraniteMoE`, gpt-oss).
//!
//! transformers 5.24 stores routed experts as fused 3-D tensors (`gate_up_proj` [E, 2f, h],
//! `down_proj` [E, h, f]); the count is the same as per-expert modules. Routers have no bias
//! except gpt-oss's; DeepSeek-V3's `e_score_correction_bias` is a buffer, not a parameter.

use llmsize_core::expr::Sym;
use llmsize_core::spec::{Attention, Ffn, Layer, Mlp, ModelSpec, Moe, Norm};

use super::architecture;
use super::decoder::{Decoder, kv_heads, mha, mlp, sliding_windows};
use super::raw::RawConfig;
use super::runs::Runs;
use crate::error::ConfigError;

/// The first present key of `keys`, as a positive size.
fn first_size(
    raw: &mut RawConfig<'_>,
    keys: &[&str],
    symbol: Sym,
) -> Result<Option<u64>, ConfigError> {
    for key in keys {
        if let Some(n) = raw.size_opt(key)? {
            raw.source(symbol, key);
            return Ok(Some(n));
        }
    }
    Ok(None)
}

fn required(raw: &mut RawConfig<'_>, keys: &[&str], symbol: Sym) -> Result<u64, ConfigError> {
    first_size(raw, keys, symbol)?
        .ok_or_else(|| raw.missing(&keys.join("` or `"), "a positive integer"))
}

/// Layers listed in `mlp_only_layers` must exist.
fn index_list(raw: &RawConfig<'_>, key: &str, layers: u64) -> Result<Vec<u64>, ConfigError> {
    let Some(v) = raw.value(key) else {
        return Ok(Vec::new());
    };
    let list = v
        .as_array()
        .ok_or_else(|| raw.invalid(key, v, "a list of layer indices"))?;
    list.iter()
        .map(|x| match x.as_u64() {
            Some(i) if i < layers => Ok(i),
            _ => Err(raw.invalid(
                key,
                x,
                &format!("layer indices below `num_hidden_layers` ({layers})"),
            )),
        })
        .collect()
}

/// Mixtral, Qwen2-MoE, Qwen3-MoE, OLMoE, `GraniteMoE`, gpt-oss.
pub(crate) fn moe(raw: &mut RawConfig<'_>, model_type: &str) -> Result<ModelSpec, ConfigError> {
    let class = match model_type {
        "mixtral" => "MixtralConfig",
        "qwen2_moe" => "Qwen2MoeConfig",
        "qwen3_moe" => "Qwen3MoeConfig",
        "olmoe" => "OlmoeConfig",
        "granitemoe" => "GraniteMoeConfig",
        _ => "GptOssConfig",
    };
    let default_reason = format!("absent; `{class}` default");
    let hidden = raw.size(&["hidden_size"], Sym::Hidden)?;
    let layers = raw.size(&["num_hidden_layers"], Sym::Layers)?;
    let heads = raw.size(&["num_attention_heads"], Sym::Heads)?;
    let vocab = raw.size(&["vocab_size"], Sym::Vocab)?;
    let kv_default = match model_type {
        "mixtral" | "gpt_oss" => Some(8),
        "qwen2_moe" => Some(16),
        "qwen3_moe" => Some(4),
        _ => None,
    };
    let kv = kv_heads(raw, heads, class, kv_default)?;
    // Every family here reads `head_dim` from the config when present (attribute or JSON key);
    // absent, `GptOssConfig`'s field defaults to 64 (hidden / heads is 45 for gpt-oss), the
    // others derive it.
    let head_dim = if model_type == "gpt_oss" {
        raw.size_or(&["head_dim"], Sym::HeadDim, 64, &default_reason)?
    } else {
        raw.head_dim(
            &["head_dim"],
            hidden,
            "hidden_size",
            heads,
            "num_attention_heads",
        )?
    };
    let experts = required(raw, &["num_local_experts", "num_experts"], Sym::Experts)?;
    let top_k = required(raw, &["num_experts_per_tok"], Sym::TopK)?;
    if top_k > experts {
        return Err(raw.invalid(
            "num_experts_per_tok",
            &top_k.into(),
            &format!("at most the number of experts ({experts})"),
        ));
    }
    // The expert width: `moe_intermediate_size` where the family has dense layers too,
    // else `intermediate_size`.
    let has_dense_layers = matches!(model_type, "qwen2_moe" | "qwen3_moe");
    let expert_width = if has_dense_layers {
        required(raw, &["moe_intermediate_size"], Sym::ExpertFfn)?
    } else {
        required(raw, &["intermediate_size"], Sym::ExpertFfn)?
    };
    let (attention_bias, qkv_only) = match model_type {
        "mixtral" => (false, false),
        "qwen2_moe" => (raw.flag_or("qkv_bias", true, &default_reason)?, true),
        "gpt_oss" => (raw.flag_or("attention_bias", true, &default_reason)?, false),
        _ => (
            raw.flag_or("attention_bias", false, &default_reason)?,
            false,
        ),
    };
    let tied = raw.flag_or("tie_word_embeddings", false, &default_reason)?;

    let mut attn = mha(hidden, heads, kv, head_dim, attention_bias);
    if qkv_only {
        attn.o_bias = false;
    }
    match model_type {
        "qwen3_moe" => {
            attn.q_norm = Some(Norm::rms_norm(head_dim));
            attn.k_norm = Some(Norm::rms_norm(head_dim));
        }
        "olmoe" => {
            // `modeling_olmoe.py`: q_norm over hidden_size, k_norm over (hidden/heads)·n_kv.
            let per_head = raw.div(hidden, heads, "hidden_size / num_attention_heads")?;
            attn.q_norm = Some(Norm::rms_norm(hidden));
            attn.k_norm = Some(Norm::rms_norm(raw.mul(
                per_head,
                kv,
                "hidden_size/num_attention_heads·num_key_value_heads",
            )?));
        }
        "gpt_oss" => attn.sinks = true,
        _ => {}
    }
    let expert_bias = model_type == "gpt_oss";
    let moe = Moe {
        num_experts: experts,
        experts_per_token: top_k,
        expert: Mlp {
            hidden,
            intermediate: expert_width,
            gated: true,
            up_bias: expert_bias,
            down_bias: expert_bias,
        },
        router_bias: if model_type == "gpt_oss" {
            llmsize_core::spec::RouterBias::Linear
        } else {
            llmsize_core::spec::RouterBias::None
        },
        router: true,
        shared: None,
        shared_gate: false,
    };
    let moe = if model_type == "qwen2_moe" {
        let shared = raw.size_or(
            &["shared_expert_intermediate_size"],
            Sym::SharedFfn,
            5632,
            &default_reason,
        )?;
        Moe {
            shared: Some(mlp(hidden, shared, true, false)),
            shared_gate: true,
            ..moe
        }
    } else {
        moe
    };

    // Which layers are sparse: qwen2/3-moe honour `mlp_only_layers` and `decoder_sparse_step`.
    let (dense_layers, step) = if has_dense_layers {
        let only = index_list(raw, "mlp_only_layers", layers)?;
        // Zero is an error, as transformers' `(i + 1) % decoder_sparse_step` would be.
        let step = raw.size_opt("decoder_sparse_step")?.unwrap_or(1);
        (only, step)
    } else {
        (Vec::new(), 1)
    };
    let dense_width = if has_dense_layers && (step != 1 || !dense_layers.is_empty()) {
        Some(required(raw, &["intermediate_size"], Sym::Ffn)?)
    } else {
        None
    };
    let n = raw.bound_layers("num_hidden_layers", layers)?;
    let (slides, window) = sliding_windows(raw, model_type, class, n)?;
    let norms = vec![Norm::rms_norm(hidden); 2];
    // Each layer is (sparse?, window): sparse where `(i + 1) % step == 0` and not listed,
    // as runs; one kind per distinct pair.
    let sparse = Runs::every(n, step)
        .zip(&Runs::marked(n, dense_layers, &true, &false))
        .map(|&(every, listed)| (every && !listed) || dense_width.is_none());
    let layers_list = sparse.zip_layers(&slides, |&(sparse, slides)| {
        let ffn = match (sparse, dense_width) {
            (false, Some(width)) => Ffn::Dense(mlp(hidden, width, true, false)),
            _ => Ffn::Moe(moe.clone()),
        };
        Layer {
            attention: Attention::Standard(attn.clone()),
            cross_attention: None,
            ffn,
            norms: norms.clone(),
            sliding_window: crate::hf_config::family::window_of(slides, window),
            extras: Vec::new(),
            state: None,
        }
    });
    let default_arch = match model_type {
        "mixtral" => "MixtralForCausalLM",
        "qwen2_moe" => "Qwen2MoeForCausalLM",
        "qwen3_moe" => "Qwen3MoeForCausalLM",
        "olmoe" => "OlmoeForCausalLM",
        "granitemoe" => "GraniteMoeForCausalLM",
        _ => "GptOssForCausalLM",
    };
    Ok(Decoder::new(
        model_type.to_owned(),
        architecture(raw, default_arch),
        hidden,
        vocab,
        layers_list,
        Some(Norm::rms_norm(hidden)),
        tied,
    )
    .into_spec())
}
