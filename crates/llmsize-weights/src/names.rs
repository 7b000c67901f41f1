//! Tensor names to parameter categories, for Hugging Face checkpoints and llama.cpp GGUF files.
//!
//! The 13 parameter categories are those of the ground truth (`shared/truth/README.md`), which
//! the oracle (`shared/oracle/oracle.py`, `categorize`) assigns from the real `transformers`
//! modules. Here only the name is known, so the rules follow the oracle's on the module path
//! and add the names that checkpoints carry but models do not register as parameters
//! ([`Category::Buffer`]). `fixtures/names/*.tsv`, generated with the oracle, hold the
//! expected category of every parameter name of 34 models; the tests check them all.
//!
//! The category of a name is not the whole story: a checkpoint of a model with tied
//! embeddings may still store `lm_head.weight` (a copy of the input table). Telling a tied copy
//! apart needs the config, so it is the caller's job.

pub use llmsize_core::category::Category;

// Module names, compared lowercased, from the oracle's sets.
const ATTENTION_MODULES: &[&str] = &[
    "attn",
    "self_attn",
    "attention",
    "self_attention",
    "selfattention",
    "encdecattention",
    "encoder_attn",
    "cross_attn",
    "crossattention",
    "cross_attention",
    "inter_attention",
    "attn_layer",
    "mha",
    "self",
];
const FFN_MODULES: &[&str] = &[
    "mlp",
    "feed_forward",
    "feedforward",
    "ffn",
    "densereludense",
    "fc1",
    "fc2",
    "fc_in",
    "fc_out",
    "c_fc",
    "intermediate",
    "dense_h_to_4h",
    "dense_4h_to_h",
    "ff",
    "ffn_layer",
    "ffn_layers",
    "mlp_layer",
];
const ROUTER_MODULES: &[&str] = &["gate", "router", "gating", "moe_gate", "gate_network", "wg"];
const EXPERT_MODULES: &[&str] = &["experts", "expert", "local_experts", "routed_experts"];
const LM_HEAD_MODULES: &[&str] = &["lm_head", "embed_out", "output_layer", "proj_out"];
const EMBEDDING_PROJECTION_MODULES: &[&str] = &[
    "project_in",
    "project_out",
    "embedding_hidden_mapping_in",
    "embed_proj",
];
const TOKEN_EMBEDDING_MODULES: &[&str] = &[
    "wte",
    "embed_tokens",
    "word_embeddings",
    "embed_in",
    "shared",
    "tok_embeddings",
];
const POSITION_EMBEDDING_MODULES: &[&str] = &[
    "wpe",
    "embed_positions",
    "position_embeddings",
    "relative_attention_bias",
];

/// Last name segments that are never parameters.
const BUFFER_NAMES: &[&str] = &[
    "position_ids",
    "token_type_ids",
    "inv_freq",
    "original_inv_freq",
    "masked_bias",
    "e_score_correction_bias",
    "final_logits_bias",
    "num_batches_tracked",
    "running_mean",
    "running_var",
    "_float_tensor",
    "weight_scale_inv",
];

/// The category of a Hugging Face checkpoint tensor name, e.g.
/// `model.layers.0.self_attn.q_proj.weight` → [`Category::Attention`].
///
/// Audio towers and their projectors.
const AUDIO_MODULES: &[&str] = &[
    "audio_tower",
    "audio_model",
    "audio_encoder",
    "embed_audio",
    "audio_embed",
    "audio_projection",
    "audio_tokenizer",
];

/// Vision towers and multimodal projectors.
const VISION_MODULES: &[&str] = &[
    "vision_tower",
    "vision_model",
    "visual",
    "multi_modal_projector",
    "mm_projector",
    "connector",
    "merger",
    "qformer",
    "language_projection",
    "image_newline",
    "patch_embed",
    "vqmodel",
    "embed_vision",
];

/// State-space and linear-attention mixers as transformers names them (Mamba's `mixer`,
/// Jamba/Zamba's `mamba`, Qwen3-Next's `linear_attn`).
const SSM_MODULES: &[&str] = &["mixer", "mamba", "linear_attn"];

/// Residual-stream machinery that is neither attention nor MLP (Gemma-3n).
const LAYER_EXTRA_MODULES: &[&str] = &[
    "altup",
    "laurel",
    "per_layer_model_projection",
    "per_layer_input_gate",
    "per_layer_projection",
];

/// Works with or without the usual prefixes (`model.`, `transformer.`, `bert.`, ...), for
/// per-expert checkpoint names (`block_sparse_moe.experts.3.w1.weight`) and for the fused
/// expert parameters of `transformers` 5 (`mlp.experts.gate_up_proj`). Rules, in order:
/// buffers; embedding tables by module name; norms (q/k norms and MLA's `q_a_layernorm`,
/// `kv_a_layernorm` are attention); shared experts, experts, routers; attention; MLM and LM
/// heads; embedding projections; pooler; dense MLP.
#[must_use]
pub fn category_of_hf(name: &str) -> Category {
    let parts: Vec<&str> = name.split('.').collect();
    let Some((&param, modules)) = parts.split_last() else {
        return Category::Unknown;
    };
    let lower: Vec<String> = modules.iter().map(|m| m.to_ascii_lowercase()).collect();
    let leaf = lower.last().map_or("", String::as_str);
    let has = |set: &[&str]| lower.iter().any(|m| set.contains(&m.as_str()));

    if BUFFER_NAMES.contains(&param)
        || lower.iter().any(|m| m == "rotary_emb")
        // GPT-2/GPT-J `attn.bias`, GPT-NeoX `attention.bias`: the causal mask, a buffer. The
        // real biases hang one level down (`attn.c_attn.bias`).
        || (param == "bias" && matches!(leaf, "attn" | "attention"))
    {
        return Category::Buffer;
    }

    // Whole towers and mixers first: everything inside them is theirs, norms and
    // projections included (the coverage truth's rules, `shared/truth/coverage/README.md`).
    if has(AUDIO_MODULES) {
        return Category::Audio;
    }
    if has(VISION_MODULES) {
        return Category::Vision;
    }
    if has(SSM_MODULES) {
        return Category::Ssm;
    }
    if has(LAYER_EXTRA_MODULES) {
        return Category::LayerExtras;
    }

    if TOKEN_EMBEDDING_MODULES.contains(&leaf) {
        return Category::TokenEmbedding;
    }
    if POSITION_EMBEDDING_MODULES.contains(&leaf) {
        return Category::PositionEmbedding;
    }
    if leaf == "token_type_embeddings" {
        return Category::TokenTypeEmbedding;
    }

    if is_norm_module(leaf) {
        return if is_qk_norm(leaf) {
            Category::Attention
        } else {
            Category::Norm
        };
    }

    if lower.iter().any(|m| is_shared_expert_module(m)) {
        return Category::MoeSharedExperts;
    }
    // GraniteMoE checkpoints store all experts of a layer in `input_linear`/`output_linear`.
    if has(EXPERT_MODULES)
        || (has(&["block_sparse_moe"]) && matches!(leaf, "input_linear" | "output_linear"))
    {
        return Category::MoeExperts;
    }
    if has(ROUTER_MODULES) {
        return Category::MoeRouter;
    }

    if has(ATTENTION_MODULES) {
        return Category::Attention;
    }

    // MLM heads: BERT `cls.predictions.{transform.dense, bias, decoder}`, RoBERTa
    // `lm_head.{dense, bias, decoder}`.
    if has(&["predictions", "lm_head"]) {
        return if has(&["transform"]) || leaf == "dense" {
            Category::LmHeadTransform
        } else {
            Category::LmHead
        };
    }
    if has(LM_HEAD_MODULES) {
        return Category::LmHead;
    }
    // DistilBERT (`vocab_transform`, `vocab_projector`) and ModernBERT (`head.dense`,
    // top-level `decoder`) name their MLM heads their own way.
    if leaf == "vocab_transform" || lower == ["head", "dense"] {
        return Category::LmHeadTransform;
    }
    if leaf == "vocab_projector" || lower == ["decoder"] {
        return Category::LmHead;
    }
    if lower.len() == 1 && matches!(leaf, "output" | "head") {
        return Category::LmHead;
    }

    if lower.iter().any(|m| {
        EMBEDDING_PROJECTION_MODULES.contains(&m.as_str()) || m.starts_with("word_embed_proj")
    }) {
        return Category::EmbeddingProjection;
    }
    if has(&["pooler"]) {
        return Category::Pooler;
    }

    if has(FFN_MODULES) || is_bert_ffn_output(&lower) {
        return Category::Ffn;
    }
    let param_lower = param.to_ascii_lowercase();
    if param_lower.contains("embed")
        && (param_lower.contains("pos") || param_lower.contains("position"))
    {
        return Category::PositionEmbedding;
    }
    Category::Unknown
}

/// BERT's FFN output is `encoder.layer.N.output.dense` (the attention's is
/// `attention.output.dense`, caught earlier).
fn is_bert_ffn_output(lower: &[String]) -> bool {
    lower.windows(3).any(|w| {
        matches!(w, [n, o, d] if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) && o == "output" && d == "dense")
    })
}

/// The oracle's `NORM_NAME_RE` on a lowercased module name.
fn is_norm_module(m: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let word = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    m == "ln"
        || m.strip_prefix("ln_").is_some_and(word)
        || m.strip_prefix("ln").is_some_and(digits)
        || m.ends_with("_ln")
        || m == "norm"
        || m.strip_prefix("norm").is_some_and(digits)
        || m.ends_with("_norm")
        || m.contains("layernorm")
        || m.contains("layer_norm")
        || m.contains("rmsnorm")
        || m == "rms_norm"
}

/// The oracle's `QK_NORM_RE`: `(q|k|kv|qk|q_a|kv_a|query|key)_?(layer_?)?(norm|ln)`.
fn is_qk_norm(m: &str) -> bool {
    ["q_a", "kv_a", "query", "key", "qk", "kv", "q", "k"]
        .into_iter()
        .any(|prefix| {
            let Some(rest) = m.strip_prefix(prefix) else {
                return false;
            };
            let rest = rest.strip_prefix('_').unwrap_or(rest);
            let rest = rest
                .strip_prefix("layer")
                .map_or(rest, |r| r.strip_prefix('_').unwrap_or(r));
            rest == "norm" || rest == "ln"
        })
}

/// The oracle's `SHARED_EXPERT_RE`.
fn is_shared_expert_module(m: &str) -> bool {
    matches!(
        m,
        "shared_expert" | "shared_experts" | "shared_expert_gate" | "shared_mlp" | "shared_ffn"
    ) || m.strip_prefix("shared_expert_").is_some_and(|rest| {
        !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    })
}

/// The category of a llama.cpp GGUF tensor name, e.g. `blk.0.ffn_gate_exps.weight` →
/// [`Category::MoeExperts`].
///
/// Names follow `LLM_TENSOR_NAMES` in llama.cpp's `src/llama-arch.cpp` (mirrored by
/// gguf-py's `TENSOR_NAMES`): top-level tensors (`token_embd`, `output_norm`, `output`, ...),
/// per-block tensors `blk.N.<base>`, and T5's `enc.blk.N.<base>` / `dec.blk.N.<base>`, each
/// with an optional `.weight` / `.bias` suffix.
///
/// `blk.N.exp_probs_b` is [`Category::Buffer`]: it is DeepSeek-V3's
/// `e_score_correction_bias` renamed by `convert_hf_to_gguf.py`, a buffer in `transformers`
/// that the ground truth leaves out of the parameter count, so GGUF and Hugging Face totals of
/// the same model agree. `rope_freqs`, `rope_factors_long/short` and `attn_rot_embd` are
/// rotary tables, also buffers. `cls` is ambiguous in llama.cpp (a classifier's dense layer, or
/// ModernBERT's `head.dense`); it is read as [`Category::LmHeadTransform`], `cls.output` as
/// [`Category::LmHead`]. Vision (`v.`), audio (`a.`), projector (`mm.`), MTP (`nextn.`) and
/// state-space tensors are [`Category::Unknown`].
#[must_use]
pub fn category_of_gguf(name: &str) -> Category {
    let stem = name
        .strip_suffix(".weight")
        .or_else(|| name.strip_suffix(".bias"))
        .unwrap_or(name);
    let parts: Vec<&str> = stem.split('.').collect();
    let base = match parts.as_slice() {
        ["blk", n, base] | ["enc" | "dec", "blk", n, base] if is_number(n) => *base,
        [top] => return top_level_gguf(top),
        ["enc" | "dec", "output_norm"] | ["cls", "norm"] => return Category::Norm,
        ["cls", "output"] => return Category::LmHead,
        _ => return Category::Unknown,
    };
    block_gguf(base)
}

fn is_number(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

fn top_level_gguf(name: &str) -> Category {
    match name {
        "token_embd" => Category::TokenEmbedding,
        "position_embd" => Category::PositionEmbedding,
        "token_types" => Category::TokenTypeEmbedding,
        "token_embd_norm" | "output_norm" => Category::Norm,
        "output" => Category::LmHead,
        "cls" => Category::LmHeadTransform,
        "rope_freqs" | "rope_factors_long" | "rope_factors_short" => Category::Buffer,
        _ => Category::Unknown,
    }
}

fn block_gguf(base: &str) -> Category {
    match base {
        "attn_q" | "attn_k" | "attn_v" | "attn_qkv" | "attn_output" | "attn_o" | "attn_q_a"
        | "attn_q_b" | "attn_kv_a_mqa" | "attn_kv_b" | "attn_k_b" | "attn_v_b" | "attn_q_norm"
        | "attn_k_norm" | "attn_q_a_norm" | "attn_kv_a_norm" | "attn_sinks" | "attn_gate"
        | "cross_attn_q" | "cross_attn_k" | "cross_attn_v" | "cross_attn_o" => Category::Attention,
        "attn_rel_b" | "cross_attn_rel_b" => Category::PositionEmbedding,
        "attn_rot_embd" | "exp_probs_b" => Category::Buffer,
        "ffn_gate" | "ffn_up" | "ffn_down" => Category::Ffn,
        "ffn_gate_inp" => Category::MoeRouter,
        "ffn_gate_exps" | "ffn_up_exps" | "ffn_down_exps" | "ffn_gate_up_exps"
        | "ffn_gate_chexps" | "ffn_up_chexps" | "ffn_down_chexps" => Category::MoeExperts,
        "ffn_gate_shexp" | "ffn_up_shexp" | "ffn_down_shexp" | "ffn_gate_inp_shexp" => {
            Category::MoeSharedExperts
        }
        // attn_norm, attn_norm_2, attn_output_norm, ffn_norm, post_attention_norm,
        // post_ffw_norm, layer_output_norm, cross_attn_norm, attn_sub_norm, ...
        other if other.ends_with("_norm") || other.ends_with("_norm_2") => Category::Norm,
        _ => Category::Unknown,
    }
}

#[cfg(test)]
mod tests;
