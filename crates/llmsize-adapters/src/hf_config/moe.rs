//! Mixture-of-experts families, and DeepSeek's multi-head latent attention.
//!
//! transformers 5.24 stores routed experts as fused 3-D tensors (`gate_up_proj` [E, 2f, h],
//! `down_proj` [E, h, f]); the count is the same as per-expert modules. Routers have no bias
//! except gpt-oss's; DeepSeek-V3's `e_score_correction_bias` is a buffer, not a parameter.

use llmsize_core::expr::Sym;
use llmsize_core::spec::{
    Attention, Ffn, LatentAttention, Layer, Layers, Mlp, ModelSpec, Moe, Norm,
};

use super::architecture;
use super::decoder::{Decoder, kv_heads, mha, mlp, sliding_windows};
use super::raw::RawConfig;
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
    // Every family here reads `head_dim` from the config when present (attribute or JSON key).
    let head_dim = raw.head_dim(
        &["head_dim"],
        hidden,
        "hidden_size",
        heads,
        "num_attention_heads",
    )?;
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
            let per_head = hidden / heads;
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
        router_bias: model_type == "gpt_oss",
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
    let n = raw.layer_count("num_hidden_layers", layers)?;
    let windows = sliding_windows(raw, model_type, n)?;
    let norms = vec![Norm::rms_norm(hidden); 2];
    // A set, so the loop over layers stays linear whatever the list's length.
    let dense_set: std::collections::HashSet<u64> = dense_layers.iter().copied().collect();
    // Each layer is (sparse?, window): one kind per distinct pair, then runs of them.
    let keys = (0..n as u64).zip(windows).map(|(i, window)| {
        let sparse = !dense_set.contains(&i) && step > 0 && (i + 1).is_multiple_of(step);
        (sparse || dense_width.is_none(), window)
    });
    let layers_list = Layers::from_pattern(keys, |&(sparse, window)| {
        let ffn = match (sparse, dense_width) {
            (false, Some(width)) => Ffn::Dense(mlp(hidden, width, true, false)),
            _ => Ffn::Moe(moe.clone()),
        };
        Layer {
            attention: Attention::Standard(attn.clone()),
            cross_attention: None,
            ffn,
            norms: norms.clone(),
            sliding_window: window,
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

/// DeepSeek-V2/V3 (`modeling_deepseek_v2.py`, `modeling_deepseek_v3.py`): MLA attention,
/// the first `first_k_dense_replace` layers dense, the rest MoE with `n_shared_experts`
/// shared experts as one MLP of `moe_intermediate_size · n_shared_experts`. The MTP layer
/// of V3 checkpoints is not built by transformers and not counted.
pub(crate) fn deepseek(
    raw: &mut RawConfig<'_>,
    model_type: &str,
) -> Result<ModelSpec, ConfigError> {
    let v3 = model_type == "deepseek_v3";
    let class = if v3 {
        "DeepseekV3Config"
    } else {
        "DeepseekV2Config"
    };
    let default_reason = format!("absent; `{class}` default");
    let hidden = raw.size(&["hidden_size"], Sym::Hidden)?;
    let layers = raw.size(&["num_hidden_layers"], Sym::Layers)?;
    let heads = raw.size(&["num_attention_heads"], Sym::Heads)?;
    let vocab = raw.size(&["vocab_size"], Sym::Vocab)?;
    let dense_width = raw.size(&["intermediate_size"], Sym::Ffn)?;
    let expert_width = raw.size(&["moe_intermediate_size"], Sym::ExpertFfn)?;
    let experts = required(raw, &["n_routed_experts"], Sym::Experts)?;
    let top_k = required(raw, &["num_experts_per_tok"], Sym::TopK)?;
    if top_k > experts {
        return Err(raw.invalid(
            "num_experts_per_tok",
            &top_k.into(),
            &format!("at most `n_routed_experts` ({experts})"),
        ));
    }
    let shared = raw.uint("n_shared_experts")?;
    let first_dense = raw.uint("first_k_dense_replace")?.unwrap_or_else(|| {
        let d = u64::from(v3) * 3;
        raw.assume("first_k_dense_replace", d, &default_reason);
        d
    });
    if first_dense > layers {
        return Err(raw.invalid(
            "first_k_dense_replace",
            &first_dense.into(),
            &format!("at most `num_hidden_layers` ({layers})"),
        ));
    }
    // MLA ranks: `q_lora_rank` may be null (a full q_proj); the others are required.
    let q_lora_rank = if raw.has("q_lora_rank") {
        raw.size_opt("q_lora_rank")?
    } else {
        raw.assume("q_lora_rank", 1536, &default_reason);
        Some(1536)
    };
    if q_lora_rank.is_some() {
        raw.source(Sym::QueryRank, "q_lora_rank");
    }
    let kv_lora_rank = raw.size(&["kv_lora_rank"], Sym::KvRank)?;
    let nope = raw.size(&["qk_nope_head_dim"], Sym::NopeDim)?;
    let rope = raw.size(&["qk_rope_head_dim"], Sym::RopeDim)?;
    let v_dim = raw.size(&["v_head_dim"], Sym::ValueDim)?;
    let bias = raw.flag_or("attention_bias", false, &default_reason)?;
    let mlp_bias = if v3 {
        false
    } else {
        raw.flag_or("mlp_bias", false, &default_reason)?
    };
    let tied = raw.flag_or("tie_word_embeddings", false, &default_reason)?;
    let attention = Attention::Latent(LatentAttention {
        hidden,
        num_heads: heads,
        q_lora_rank,
        kv_lora_rank,
        qk_nope_head_dim: nope,
        qk_rope_head_dim: rope,
        v_head_dim: v_dim,
        bias,
    });
    let shared_mlp = match shared {
        Some(s) if s > 0 => Some(mlp(
            hidden,
            raw.mul(expert_width, s, "moe_intermediate_size·n_shared_experts")?,
            true,
            mlp_bias,
        )),
        _ => None,
    };
    if shared_mlp.is_some() {
        raw.source(Sym::SharedFfn, "moe_intermediate_size·n_shared_experts");
    }
    let moe = Moe {
        num_experts: experts,
        experts_per_token: top_k,
        expert: Mlp {
            hidden,
            intermediate: expert_width,
            gated: true,
            up_bias: mlp_bias,
            down_bias: mlp_bias,
        },
        router_bias: false,
        shared: shared_mlp,
        shared_gate: false,
    };
    let n = raw.layer_count("num_hidden_layers", layers)?;
    let norms = vec![Norm::rms_norm(hidden); 2];
    // The first `first_k_dense_replace` layers are dense, the rest MoE: two runs.
    let layer = |ffn| Layer {
        attention: attention.clone(),
        cross_attention: None,
        ffn,
        norms: norms.clone(),
        sliding_window: None,
        extras: Vec::new(),
        state: None,
    };
    let mut layers_list = Layers::new();
    let n = n as u64;
    let dense = first_dense.min(n);
    layers_list.push_run(
        layer(Ffn::Dense(mlp(hidden, dense_width, true, mlp_bias))),
        dense,
    );
    layers_list.push_run(layer(Ffn::Moe(moe.clone())), n - dense);
    Ok(Decoder::new(
        model_type.to_owned(),
        architecture(
            raw,
            if v3 {
                "DeepseekV3ForCausalLM"
            } else {
                "DeepseekV2ForCausalLM"
            },
        ),
        hidden,
        vocab,
        layers_list,
        Some(Norm::rms_norm(hidden)),
        tied,
    )
    .into_spec())
}
