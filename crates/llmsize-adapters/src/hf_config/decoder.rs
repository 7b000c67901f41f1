//! Dense decoder-only families.
//!
//! Each function mirrors one `modeling_*.py` of transformers 5.24: which projections carry
//! biases, how many norms a block has, how `head_dim` is found, and the configuration
//! class's default for `tie_word_embeddings`.

use llmsize_core::expr::Sym;
use llmsize_core::spec::{
    Attention, Ffn, Layer, Layers, Linear, Mlp, ModelSpec, Norm, NormKind, OutputHead,
    PositionEmbedding, Stack, StackRole, StandardAttention, Table,
};

use super::family::{Windows, windows};
use super::raw::RawConfig;
use super::runs::Runs;
use super::{architecture, is_bare};
use crate::error::ConfigError;

/// The parts of a decoder-only model around its layers.
pub(crate) struct Decoder {
    pub(crate) model_type: String,
    pub(crate) architecture: String,
    pub(crate) hidden: u64,
    pub(crate) vocab: u64,
    /// Width of the token table (differs from `hidden` only with embedding projections).
    pub(crate) embedding_dim: u64,
    pub(crate) projections: Vec<Linear>,
    pub(crate) position: Option<PositionEmbedding>,
    pub(crate) embedding_norm: Option<Norm>,
    pub(crate) layers: Layers,
    pub(crate) final_norm: Option<Norm>,
    pub(crate) tied: bool,
    pub(crate) head_bias: bool,
}

impl Decoder {
    /// The common case: a token table as wide as the model, no projections, no position
    /// table, no embedding norm, no output bias.
    pub(crate) fn new(
        model_type: impl Into<String>,
        architecture: String,
        hidden: u64,
        vocab: u64,
        layers: Layers,
        final_norm: Option<Norm>,
        tied: bool,
    ) -> Self {
        Decoder {
            model_type: model_type.into(),
            architecture,
            hidden,
            vocab,
            embedding_dim: hidden,
            projections: Vec::new(),
            position: None,
            embedding_norm: None,
            layers,
            final_norm,
            tied,
            head_bias: false,
        }
    }

    pub(crate) fn into_spec(self) -> ModelSpec {
        // A bare `…Model` class (no `ForCausalLM`) has no output head.
        let bare = is_bare(&self.architecture);
        ModelSpec {
            name: String::new(),
            model_type: self.model_type,
            architecture: self.architecture,
            hidden_size: self.hidden,
            vocab_size: self.vocab,
            context_length: None,
            token_embedding: Some(Table {
                rows: self.vocab,
                dim: self.embedding_dim,
            }),
            extra_token_tables: 0,
            embedding_projections: self.projections,
            stacks: vec![Stack {
                role: StackRole::Decoder,
                position: self.position,
                token_type: None,
                embedding_norm: self.embedding_norm,
                layers: self.layers,
                final_norm: self.final_norm,
            }],
            head: if bare {
                OutputHead::None
            } else {
                OutputHead::Lm {
                    tied: self.tied,
                    biases: u64::from(self.head_bias),
                    transform: None,
                }
            },
            pooler: None,
            assumptions: Vec::new(),
            warnings: Vec::new(),
            symbol_sources: std::collections::BTreeMap::new(),
            extras: Vec::new(),
            estimate: None,
            image_tokens: None,
            quantization: None,
            training: None,
            facts: llmsize_core::facts::TypeFacts::NONE,
        }
    }
}

pub(crate) fn mha(
    hidden: u64,
    heads: u64,
    kv_heads: u64,
    head_dim: u64,
    bias: bool,
) -> StandardAttention {
    StandardAttention {
        hidden,
        num_heads: heads,
        num_kv_heads: kv_heads,
        head_dim,
        fused_qkv: false,
        q_bias: bias,
        k_bias: bias,
        v_bias: bias,
        o_bias: bias,
        q_norm: None,
        k_norm: None,
        sinks: false,
        transformers_cache_heads: None,
        v_from_k: false,
        indexer_key_dim: None,
        cache_prefix_tokens: 0,
        shared_kv: false,
        compressed: None,
    }
}

pub(crate) fn mlp(hidden: u64, intermediate: u64, gated: bool, bias: bool) -> Mlp {
    Mlp {
        hidden,
        intermediate,
        gated,
        up_bias: bias,
        down_bias: bias,
    }
}

pub(crate) fn layer(attention: StandardAttention, ffn: Mlp, norms: Vec<Norm>) -> Layer {
    Layer {
        attention: Attention::Standard(attention),
        cross_attention: None,
        ffn: Ffn::Dense(ffn),
        norms,
        sliding_window: None,
        extras: Vec::new(),
        state: None,
    }
}

fn tie(raw: &mut RawConfig<'_>, default: bool, class: &str) -> Result<bool, ConfigError> {
    raw.flag_or(
        "tie_word_embeddings",
        default,
        &format!("absent; `{class}` default"),
    )
}

/// GPT-2 (`modeling_gpt2.py`). `GPT2Config.attribute_map` aliases (`hidden_size`,
/// `num_hidden_layers`, …) are applied after the fields, so an alias in the JSON wins; the
/// aliases are tried first. `Conv1D` `c_attn` d→3d and `c_proj` with biases, `c_fc`/`c_proj`
/// MLP with biases, `ln_1`/`ln_2` `LayerNorm`, learned `wpe`, final `ln_f`, tied head.
pub(crate) fn gpt2(raw: &mut RawConfig<'_>) -> Result<ModelSpec, ConfigError> {
    let hidden = raw.size(&["hidden_size", "n_embd"], Sym::Hidden)?;
    let layers = raw.size(&["num_hidden_layers", "n_layer"], Sym::Layers)?;
    let heads = raw.size(&["num_attention_heads", "n_head"], Sym::Heads)?;
    let vocab = raw.size(&["vocab_size"], Sym::Vocab)?;
    let positions = raw.size_or(
        &["max_position_embeddings", "n_positions"],
        Sym::Context,
        1024,
        "absent; `GPT2Config` default",
    )?;
    let head_dim = raw.derived_head_dim(hidden, "n_embd", heads, "n_head")?;
    let inner = if let Some(n) = raw.size_opt("n_inner")? {
        raw.source(Sym::Ffn, "n_inner");
        n
    } else {
        let v = raw.mul(4, hidden, "4·n_embd")?;
        raw.assume("n_inner", v, "absent or null; GPT-2 uses 4·n_embd");
        raw.source(Sym::Ffn, "4·n_embd (n_inner null)");
        v
    };
    let tied = tie(raw, true, "GPT2Config")?;
    let cross = raw.flag("add_cross_attention")?.unwrap_or(false);
    let mut attn = mha(hidden, heads, heads, head_dim, true);
    attn.fused_qkv = true;
    let mut norms = vec![Norm::layer_norm(hidden); 2];
    let mut l = layer(attn.clone(), mlp(hidden, inner, false, true), norms.clone());
    if cross {
        // `crossattention` (q_attn d→d, c_attn d→2d, c_proj) and `ln_cross_attn`.
        l.cross_attention = Some(Attention::Standard(mha(
            hidden, heads, heads, head_dim, true,
        )));
        norms.push(Norm::layer_norm(hidden));
        l.norms = norms;
    }
    let n = raw.layer_count("n_layer", layers)?;
    Ok(Decoder {
        position: Some(PositionEmbedding::Learned {
            table: Table {
                rows: positions,
                dim: hidden,
            },
            offset: 0,
        }),
        ..Decoder::new(
            "gpt2",
            architecture(raw, "GPT2LMHeadModel"),
            hidden,
            vocab,
            Layers::repeat(l, n as u64),
            Some(Norm::layer_norm(hidden)),
            tied,
        )
    }
    .into_spec())
}

/// GPT-J (`modeling_gptj.py`): q/k/v/out without biases, `fc_in`/`fc_out` with biases, one
/// `ln_1` per block (parallel attention and MLP), `lm_head` with a bias, untied by default.
pub(crate) fn gptj(raw: &mut RawConfig<'_>) -> Result<ModelSpec, ConfigError> {
    let hidden = raw.size(&["hidden_size", "n_embd"], Sym::Hidden)?;
    let layers = raw.size(&["num_hidden_layers", "n_layer"], Sym::Layers)?;
    let heads = raw.size(&["num_attention_heads", "n_head"], Sym::Heads)?;
    let vocab = raw.size(&["vocab_size"], Sym::Vocab)?;
    let head_dim = raw.derived_head_dim(hidden, "n_embd", heads, "n_head")?;
    let inner = if let Some(n) = raw.size_opt("n_inner")? {
        raw.source(Sym::Ffn, "n_inner");
        n
    } else {
        let v = raw.mul(4, hidden, "4·n_embd")?;
        raw.assume("n_inner", v, "absent or null; GPT-J uses 4·n_embd");
        v
    };
    let tied = tie(raw, false, "GPTJConfig")?;
    let n = raw.layer_count("n_layer", layers)?;
    Ok(Decoder {
        head_bias: true,
        ..Decoder::new(
            "gptj",
            architecture(raw, "GPTJForCausalLM"),
            hidden,
            vocab,
            Layers::repeat(
                layer(
                    mha(hidden, heads, heads, head_dim, false),
                    mlp(hidden, inner, false, true),
                    vec![Norm::layer_norm(hidden)],
                ),
                n as u64,
            ),
            Some(Norm::layer_norm(hidden)),
            tied,
        )
    }
    .into_spec())
}

/// GPT-NeoX / Pythia (`modeling_gpt_neox.py`): fused `query_key_value` and `dense` with
/// biases (`attention_bias`), `dense_h_to_4h`/`dense_4h_to_h` with biases, two `LayerNorms` per
/// block, `final_layer_norm`, untied `embed_out` without bias.
pub(crate) fn gpt_neox(raw: &mut RawConfig<'_>) -> Result<ModelSpec, ConfigError> {
    let hidden = raw.size(&["hidden_size"], Sym::Hidden)?;
    let layers = raw.size(&["num_hidden_layers"], Sym::Layers)?;
    let heads = raw.size(&["num_attention_heads"], Sym::Heads)?;
    let vocab = raw.size(&["vocab_size"], Sym::Vocab)?;
    let inner = raw.size(&["intermediate_size"], Sym::Ffn)?;
    let head_dim = raw.derived_head_dim(hidden, "hidden_size", heads, "num_attention_heads")?;
    let bias = raw.flag_or("attention_bias", true, "absent; `GPTNeoXConfig` default")?;
    let tied = tie(raw, false, "GPTNeoXConfig")?;
    let mut attn = mha(hidden, heads, heads, head_dim, bias);
    attn.fused_qkv = true;
    let n = raw.layer_count("num_hidden_layers", layers)?;
    Ok(Decoder::new(
        "gpt_neox",
        architecture(raw, "GPTNeoXForCausalLM"),
        hidden,
        vocab,
        Layers::repeat(
            layer(
                attn,
                mlp(hidden, inner, false, true),
                vec![Norm::layer_norm(hidden); 2],
            ),
            n as u64,
        ),
        Some(Norm::layer_norm(hidden)),
        tied,
    )
    .into_spec())
}

/// OPT (`modeling_opt.py`): learned positions with 2 extra rows (`OPTLearnedPositionalEmbedding`
/// offset), optional `project_in`/`project_out` when `word_embed_proj_dim` ≠ `hidden_size`,
/// biases on q/k/v/out and fc1/fc2 (`enable_bias`), a final norm only when
/// `do_layer_norm_before` and not `_remove_final_layer_norm`, tied head.
pub(crate) fn opt(raw: &mut RawConfig<'_>) -> Result<ModelSpec, ConfigError> {
    let hidden = raw.size(&["hidden_size"], Sym::Hidden)?;
    let layers = raw.size(&["num_hidden_layers"], Sym::Layers)?;
    let heads = raw.size(&["num_attention_heads"], Sym::Heads)?;
    let vocab = raw.size(&["vocab_size"], Sym::Vocab)?;
    let ffn = raw.size(&["ffn_dim"], Sym::Ffn)?;
    let positions = raw.size_or(
        &["max_position_embeddings"],
        Sym::Context,
        2048,
        "absent; `OPTConfig` default",
    )?;
    let embed_dim = raw.size_or(
        &["word_embed_proj_dim"],
        Sym::EmbeddingDim,
        hidden,
        "absent; `OPTConfig` uses hidden_size",
    )?;
    let head_dim = raw.derived_head_dim(hidden, "hidden_size", heads, "num_attention_heads")?;
    let bias = raw.flag_or("enable_bias", true, "absent; `OPTConfig` default")?;
    let affine = raw.flag_or(
        "layer_norm_elementwise_affine",
        true,
        "absent; `OPTConfig` default",
    )?;
    let before = raw.flag_or("do_layer_norm_before", true, "absent; `OPTConfig` default")?;
    let removed = raw.flag("_remove_final_layer_norm")?.unwrap_or(false);
    let tied = tie(raw, true, "OPTConfig")?;
    let norm = Norm {
        kind: NormKind::LayerNorm,
        dim: hidden,
        bias: true,
    };
    let norms = if affine { vec![norm; 2] } else { Vec::new() };
    let projections = if embed_dim == hidden {
        Vec::new()
    } else {
        vec![
            Linear {
                input: hidden,
                output: embed_dim,
                bias: false,
            },
            Linear {
                input: embed_dim,
                output: hidden,
                bias: false,
            },
        ]
    };
    let final_norm = (before && !removed && affine).then_some(norm);
    let rows = positions.checked_add(2).ok_or_else(|| {
        raw.invalid(
            "max_position_embeddings",
            &positions.into(),
            "a size below 2^64 − 2",
        )
    })?;
    let n = raw.layer_count("num_hidden_layers", layers)?;
    let spec = Decoder {
        model_type: "opt".into(),
        architecture: architecture(raw, "OPTForCausalLM"),
        hidden,
        vocab,
        embedding_dim: embed_dim,
        projections,
        position: Some(PositionEmbedding::Learned {
            table: Table { rows, dim: hidden },
            offset: 2,
        }),
        embedding_norm: None,
        layers: Layers::repeat(
            layer(
                mha(hidden, heads, heads, head_dim, bias),
                mlp(hidden, ffn, false, bias),
                norms,
            ),
            n as u64,
        ),
        final_norm,
        tied,
        head_bias: false,
    }
    .into_spec();
    Ok(spec)
}

/// BLOOM (`modeling_bloom.py`): `word_embeddings_layernorm`, fused `query_key_value` d→3d and
/// `dense` with biases, 4d MLP with biases, two `LayerNorms` per block, `ln_f`, `ALiBi` (no
/// position parameters), tied head.
pub(crate) fn bloom(raw: &mut RawConfig<'_>) -> Result<ModelSpec, ConfigError> {
    // A legacy `n_embed` overrides `hidden_size` (`BloomConfig.__post_init__`).
    let hidden = raw.size(&["n_embed", "hidden_size"], Sym::Hidden)?;
    let layers = raw.size(&["num_hidden_layers", "n_layer"], Sym::Layers)?;
    let heads = raw.size(&["num_attention_heads", "n_head"], Sym::Heads)?;
    let vocab = raw.size(&["vocab_size"], Sym::Vocab)?;
    let head_dim = raw.derived_head_dim(hidden, "hidden_size", heads, "n_head")?;
    let tied = tie(raw, true, "BloomConfig")?;
    let inner = raw.mul(4, hidden, "4·hidden_size")?;
    raw.source(Sym::Ffn, "4·hidden_size (BloomMLP)");
    let mut attn = mha(hidden, heads, heads, head_dim, true);
    attn.fused_qkv = true;
    let n = raw.layer_count("n_layer", layers)?;
    Ok(Decoder {
        embedding_norm: Some(Norm::layer_norm(hidden)),
        ..Decoder::new(
            "bloom",
            architecture(raw, "BloomForCausalLM"),
            hidden,
            vocab,
            Layers::repeat(
                layer(
                    attn,
                    mlp(hidden, inner, false, true),
                    vec![Norm::layer_norm(hidden); 2],
                ),
                n as u64,
            ),
            Some(Norm::layer_norm(hidden)),
            tied,
        )
    }
    .into_spec())
}

/// Falcon (`modeling_falcon.py`): fused `query_key_value` whose width depends on the layout
/// (`new_decoder_architecture`: (`n_h` + `2·n_kv)·d_h`; `multi_query`: d + `2·d_h`; else 3d),
/// `dense`, MLP d→`ffn_hidden_size`→d, all with `bias`; norms: `ln_attn` + `ln_mlp` in the new
/// layout with `num_ln_in_parallel_attn` = 2, else `input_layernorm` (+
/// `post_attention_layernorm` when not `parallel_attn`); `ln_f`; tied head.
pub(crate) fn falcon(raw: &mut RawConfig<'_>) -> Result<ModelSpec, ConfigError> {
    // `FalconConfig` (5.24) has no attribute map: `n_layer`/`n_head` are not read; only the
    // legacy `n_embed` is.
    let hidden = raw.size(&["n_embed", "hidden_size"], Sym::Hidden)?;
    let layers = raw.size(&["num_hidden_layers"], Sym::Layers)?;
    let heads = raw.size(&["num_attention_heads"], Sym::Heads)?;
    let vocab = raw.size(&["vocab_size"], Sym::Vocab)?;
    let head_dim = raw.derived_head_dim(hidden, "hidden_size", heads, "num_attention_heads")?;
    let new_arch = raw.flag_or(
        "new_decoder_architecture",
        false,
        "absent; `FalconConfig` default",
    )?;
    let multi_query = raw.flag_or("multi_query", true, "absent; `FalconConfig` default")?;
    let parallel = raw.flag_or("parallel_attn", true, "absent; `FalconConfig` default")?;
    let bias = raw.flag_or("bias", false, "absent; `FalconConfig` default")?;
    let tied = tie(raw, true, "FalconConfig")?;
    let kv_heads = if new_arch {
        if let Some(n) = raw.size_opt("num_kv_heads")? {
            raw.source(Sym::KvHeads, "num_kv_heads");
            n
        } else {
            raw.assume(
                "num_kv_heads",
                heads,
                "absent; `FalconConfig` uses num_attention_heads",
            );
            heads
        }
    } else if multi_query {
        raw.source(Sym::KvHeads, "multi_query: 1");
        1
    } else {
        heads
    };
    let ffn = if let Some(n) = raw.size_opt("ffn_hidden_size")? {
        raw.source(Sym::Ffn, "ffn_hidden_size");
        n
    } else {
        let v = raw.mul(4, hidden, "4·hidden_size")?;
        raw.assume(
            "ffn_hidden_size",
            v,
            "absent; `FalconConfig` uses 4·hidden_size",
        );
        v
    };
    // `FalconDecoderLayer`: not parallel → input + post-attention norms; parallel with
    // `num_ln_in_parallel_attn` = 2 (the default of the new layout) → `ln_attn` + `ln_mlp`;
    // otherwise one `input_layernorm`.
    let ln_in_parallel = match raw.uint("num_ln_in_parallel_attn")? {
        Some(n) => Some(n),
        None if new_arch => {
            raw.assume(
                "num_ln_in_parallel_attn",
                2,
                "absent; set to 2 for the new decoder architecture",
            );
            Some(2)
        }
        None => None,
    };
    let norm = Norm::layer_norm(hidden);
    let norms = if !parallel || ln_in_parallel == Some(2) {
        vec![norm; 2]
    } else {
        vec![norm]
    };
    let mut attn = mha(hidden, heads, kv_heads, head_dim, bias);
    attn.fused_qkv = true;
    if new_arch && kv_heads != heads {
        // `FalconAttention._split_heads` broadcasts K and V to all query heads before
        // `layer_past.update`, so transformers' cache holds n_h heads, not n_kv.
        attn.transformers_cache_heads = Some(heads);
    }
    let n = raw.layer_count("num_hidden_layers", layers)?;
    Ok(Decoder::new(
        "falcon",
        architecture(raw, "FalconForCausalLM"),
        hidden,
        vocab,
        Layers::repeat(layer(attn, mlp(hidden, ffn, false, bias), norms), n as u64),
        Some(norm),
        tied,
    )
    .into_spec())
}

/// Phi-1/1.5/2 (`modeling_phi.py`): q/k/v/`dense` with biases, optional `qk_layernorm`
/// (`LayerNorm` over `d_h`), `fc1`/`fc2` with biases, one `input_layernorm` (parallel block),
/// `final_layernorm`, `lm_head` with a bias, untied by default.
pub(crate) fn phi(raw: &mut RawConfig<'_>) -> Result<ModelSpec, ConfigError> {
    let hidden = raw.size(&["hidden_size"], Sym::Hidden)?;
    let layers = raw.size(&["num_hidden_layers"], Sym::Layers)?;
    let heads = raw.size(&["num_attention_heads"], Sym::Heads)?;
    let vocab = raw.size(&["vocab_size"], Sym::Vocab)?;
    let inner = raw.size(&["intermediate_size"], Sym::Ffn)?;
    let kv_heads = kv_heads(raw, heads, "PhiConfig", None)?;
    // `getattr(config, "head_dim", hidden // heads)`; the q/k LayerNorms use hidden // heads.
    let head_dim = raw.head_dim(
        &["head_dim"],
        hidden,
        "hidden_size",
        heads,
        "num_attention_heads",
    )?;
    let norm_dim = raw.div(hidden, heads, "hidden_size / num_attention_heads")?;
    let qk_norm = raw.flag_or("qk_layernorm", false, "absent; `PhiConfig` default")?;
    let tied = tie(raw, false, "PhiConfig")?;
    let mut attn = mha(hidden, heads, kv_heads, head_dim, true);
    if qk_norm {
        attn.q_norm = Some(Norm::layer_norm(norm_dim));
        attn.k_norm = Some(Norm::layer_norm(norm_dim));
    }
    let n = raw.layer_count("num_hidden_layers", layers)?;
    Ok(Decoder {
        head_bias: true,
        ..Decoder::new(
            "phi",
            architecture(raw, "PhiForCausalLM"),
            hidden,
            vocab,
            Layers::repeat(
                layer(
                    attn,
                    mlp(hidden, inner, false, true),
                    vec![Norm::layer_norm(hidden)],
                ),
                n as u64,
            ),
            Some(Norm::layer_norm(hidden)),
            tied,
        )
    }
    .into_spec())
}

/// `num_key_value_heads`: when absent, the configuration class's default (`None` in most
/// classes, meaning the query heads; a fixed number in some: Mistral 8, Gemma 16, Gemma 2/3 4,
/// Qwen2/3 32, `StarCoder2` 2); when `null`, the query heads.
pub(crate) fn kv_heads(
    raw: &mut RawConfig<'_>,
    heads: u64,
    class: &str,
    class_default: Option<u64>,
) -> Result<u64, ConfigError> {
    if let Some(n) = raw.size_opt("num_key_value_heads")? {
        raw.source(Sym::KvHeads, "num_key_value_heads");
        return Ok(n);
    }
    match class_default {
        Some(d) if !raw.has("num_key_value_heads") => {
            raw.assume(
                "num_key_value_heads",
                d,
                &format!("absent; `{class}` default"),
            );
            Ok(d)
        }
        _ => {
            raw.assume(
                "num_key_value_heads",
                heads,
                &format!("absent or null; `{class}` uses num_attention_heads (MHA)"),
            );
            Ok(heads)
        }
    }
}

/// Which layers attend in a sliding window (no parameters; the KV cache will need it), for
/// the families read by code: Mixtral's rule is Mistral's. `class` (the caller's config
/// class) names the `sliding_window` default (`GptOssConfig`: 128).
pub(crate) fn sliding_windows(
    raw: &mut RawConfig<'_>,
    model_type: &str,
    class: &str,
    layers: u64,
) -> Result<(Runs<bool>, Option<u64>), ConfigError> {
    let rule = match model_type {
        "mixtral" => Windows::All,
        _ => Windows::None,
    };
    windows(raw, rule, class, layers)
}
