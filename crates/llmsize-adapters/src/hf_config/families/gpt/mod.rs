//! GPT-style decoders (transformers 5.24): the GPT-2 line (GPT-SW3, GPT-BigCode, GPT-Neo,
//! `CodeGen`, `OpenAI` GPT, CTRL), the fairseq-style decoders (XGLM, `BioGPT`), the `NeoX` line
//! (GPT-NeoX-Japanese, Persimmon, `StableLM`) and `OLMo`, MPT, CPM-Ant. Each reader mirrors one
//! `modeling_*.py`: which projections carry biases, which norms a block has, the position
//! table, the head's bias, and the configuration class's defaults.

use llmsize_core::Category;
use llmsize_core::expr::{Expr, Sym};
use llmsize_core::spec::{
    Attention, Extra, HeadTransform, Layers, Linear, ModelSpec, Norm, NormKind, OutputHead,
    PositionEmbedding, Table,
};

mod blt;
mod gemma;

use crate::error::ConfigError;
use crate::hf_config::architecture;
use crate::hf_config::decoder::{self, Decoder, layer, mha, mlp};
use crate::hf_config::family::map_kinds;
use crate::hf_config::family::{
    AttentionRule, Block, Family, HeadDim, LLAMA, LLAMA_ATTENTION, LLAMA_MLP, MlpRule, NO,
    NormRule, Reader, StandardRule, Switch, YES, key_or,
};
use crate::hf_config::raw::RawConfig;
use llmsize_core::checked;

/// The entries of this file.
pub(crate) const FAMILIES: &[Family] = &[
    Family::code("gpt-sw3", "GPT2Config", "GPT2LMHeadModel", |r, f, _| {
        gpt_sw3(r, f)
    }),
    Family::code(
        "gpt_bigcode",
        "GPTBigCodeConfig",
        "GPTBigCodeForCausalLM",
        |r, f, _| gpt_bigcode(r, f),
    ),
    Family::code("gpt_neo", "GPTNeoConfig", "GPTNeoForCausalLM", |r, f, _| {
        gpt_neo(r, f)
    }),
    Family::code(
        "codegen",
        "CodeGenConfig",
        "CodeGenForCausalLM",
        |r, f, _| codegen(r, f),
    ),
    Family::code(
        "openai-gpt",
        "OpenAIGPTConfig",
        "OpenAIGPTLMHeadModel",
        |r, f, _| openai_gpt(r, f),
    ),
    Family::code("ctrl", "CTRLConfig", "CTRLLMHeadModel", |r, f, _| {
        ctrl(r, f)
    }),
    Family::code("xglm", "XGLMConfig", "XGLMForCausalLM", |r, f, _| {
        xglm(r, f)
    }),
    Family::code("biogpt", "BioGptConfig", "BioGptForCausalLM", |r, f, _| {
        biogpt(r, f)
    }),
    Family::code(
        "gpt_neox_japanese",
        "GPTNeoXJapaneseConfig",
        "GPTNeoXJapaneseForCausalLM",
        |r, f, _| gpt_neox_japanese(r, f),
    ),
    Family::code(
        "persimmon",
        "PersimmonConfig",
        "PersimmonForCausalLM",
        |r, f, _| persimmon(r, f),
    ),
    Family::code("mpt", "MptConfig", "MptForCausalLM", |r, f, _| mpt(r, f)),
    Family::code("cpmant", "CpmAntConfig", "CpmAntForCausalLM", |r, f, _| {
        cpmant(r, f)
    }),
    Family::code(
        "gemma3n_text",
        "Gemma3nTextConfig",
        "Gemma3nForCausalLM",
        |r, f, _| gemma::text(r, f, gemma::Kind::Gemma3n),
    ),
    Family::code(
        "gemma4_text",
        "Gemma4TextConfig",
        "Gemma4ForCausalLM",
        |r, f, _| gemma::text(r, f, gemma::Kind::Gemma4),
    ),
    Family::code(
        "gemma4_unified_text",
        "Gemma4UnifiedTextConfig",
        "Gemma4UnifiedForCausalLM",
        |r, f, _| gemma::text(r, f, gemma::Kind::Gemma4Unified),
    ),
    Family::code(
        "gemma4_assistant",
        "Gemma4AssistantConfig",
        "Gemma4AssistantForCausalLM",
        |r, f, _| gemma::assistant(r, f, gemma::Kind::Gemma4, 1536),
    ),
    Family::code(
        "gemma4_unified_assistant",
        "Gemma4UnifiedAssistantConfig",
        "Gemma4UnifiedAssistantForCausalLM",
        |r, f, _| gemma::assistant(r, f, gemma::Kind::Gemma4Unified, 3840),
    ),
    Family::code("blt", "BltConfig", "BltForCausalLM", |r, f, _| {
        blt::blt(r, f)
    }),
    Family::code("moshi", "MoshiConfig", "MoshiForCausalLM", |r, f, _| {
        moshi(r, f)
    }),
    Family::code(
        "modernbert-decoder",
        "ModernBertDecoderConfig",
        "ModernBertDecoderForCausalLM",
        |r, f, _| modernbert_decoder(r, f),
    ),
    Family::block(
        "stablelm",
        "StableLmConfig",
        "StableLmForCausalLM",
        &STABLELM,
    ),
    Family::block("olmo", "OlmoConfig", "OlmoForCausalLM", &OLMO),
];

/// A plain MLP without biases (`gate_proj`/`up_proj`/`down_proj` with `bias=False`).
const GATED_NO_BIAS: MlpRule = MlpRule {
    up_bias: NO,
    down_bias: NO,
    ..LLAMA_MLP
};

/// `StableLM` (`modeling_stablelm.py`): `LayerNorm`s with biases; q/k/v biased by
/// `use_qkv_bias`, `o_proj` never; with `qk_layernorm` one bias-free `LayerNorm(d_h)` per query
/// head and per KV head (`StableLmLayerNormPerHead`: `q_layernorm.norms.N`, which the truth files
/// under `norm`, not `attention`, so they are extras of the layer); gated MLP without biases;
/// `num_key_value_heads` 32 by class default; `use_parallel_residual` drops the
/// `post_attention_layernorm`.
const STABLELM: Block = Block {
    kv_default: Some(32),
    head_dim: HeadDim::Split,
    attention: AttentionRule::Standard(StandardRule {
        qkv_bias: Switch::Key("use_qkv_bias", false),
        o_bias: NO,
        ..LLAMA_ATTENTION
    }),
    mlp: GATED_NO_BIAS,
    norm: NormRule {
        kind: NormKind::LayerNorm,
        bias: YES,
        per_layer: 2,
    },
    tweak: Some(stablelm_tweak),
    ..LLAMA
};

/// `OLMo` (`modeling_olmo.py`): `OlmoLayerNorm` has no weight or bias, so the block and the
/// final norm hold no parameters; all four projections biased by `attention_bias`; gated MLP
/// without biases; untied.
const OLMO: Block = Block {
    mlp: GATED_NO_BIAS,
    norm: NormRule {
        kind: NormKind::LayerNorm,
        bias: NO,
        per_layer: 0,
    },
    tweak: Some(no_final_norm),
    ..LLAMA
};

/// `StableLmDecoderLayer`: `post_attention_layernorm` only without `use_parallel_residual`;
/// `StableLmAttention`: with `qk_layernorm`, `n_h` norms of `d_h` on queries and `n_kv` on keys.
fn stablelm_tweak(raw: &mut RawConfig<'_>, spec: &mut ModelSpec) -> Result<(), ConfigError> {
    let reason = "absent; `StableLmConfig` default";
    let parallel = raw.flag_or("use_parallel_residual", false, reason)?;
    let qk_norm = raw.flag_or("qk_layernorm", false, reason)?;
    map_kinds(spec, |l| {
        if parallel {
            l.norms.truncate(1);
        }
        if let (true, Attention::Standard(a)) = (qk_norm, &l.attention) {
            let d_h = Expr::sym(Sym::HeadDim, a.head_dim);
            let q = Expr::product(vec![Expr::sym(Sym::Heads, a.num_heads), d_h.clone()]);
            let k = Expr::product(vec![Expr::sym(Sym::KvHeads, a.num_kv_heads), d_h]);
            l.extras.extend([
                Extra::vector(
                    "self_attn.q_layernorm.norms.*.weight",
                    "per-head q norms",
                    Category::Norm,
                    q,
                ),
                Extra::vector(
                    "self_attn.k_layernorm.norms.*.weight",
                    "per-head k norms",
                    Category::Norm,
                    k,
                ),
            ]);
        }
    });
    Ok(())
}

/// A decoder layer's cross-attention to an encoder's states (`add_cross_attention`), as
/// tensors of the layer: transformers' causal-LM forward runs without encoder states, so its
/// cache holds no cross-attention keys and values; each `(name, k)` is a biased
/// `d → k·d` projection.
fn cross_attention_extras(hidden: u64, parts: &[(&'static str, u64)]) -> Vec<Extra> {
    let d = Expr::sym(Sym::Hidden, hidden);
    let mut out = Vec::new();
    for &(name, k) in parts {
        let width = if k == 1 {
            d.clone()
        } else {
            Expr::product(vec![Expr::Lit(k), d.clone()])
        };
        out.push(Extra::linear(
            format!("{name}.weight"),
            "cross-attention",
            Category::Attention,
            d.clone(),
            width.clone(),
        ));
        out.push(Extra::vector(
            format!("{name}.bias"),
            "cross-attention",
            Category::Attention,
            width,
        ));
    }
    out
}

/// GPT-2's `crossattention` (`q_attn` d→d, `c_attn` d→2d, `c_proj` d→d, all biased).
const GPT2_CROSS: &[(&str, u64)] = &[
    ("crossattention.q_attn", 1),
    ("crossattention.c_attn", 2),
    ("crossattention.c_proj", 1),
];

/// `OlmoModel.norm` is a parameter-free `OlmoLayerNorm`.
#[allow(
    clippy::unnecessary_wraps,
    reason = "a tweak's signature; reading cannot fail here"
)]
fn no_final_norm(_: &mut RawConfig<'_>, spec: &mut ModelSpec) -> Result<(), ConfigError> {
    for s in &mut spec.stacks {
        s.final_norm = None;
    }
    Ok(())
}

/// The reader of a family's keys with its class defaults.
fn reader<'r, 'a>(raw: &'r mut RawConfig<'a>, family: &Family) -> Reader<'r, 'a> {
    Reader {
        raw,
        class: family.config_class,
    }
}

/// `tie_word_embeddings` with the class default.
fn tie(r: &mut Reader<'_, '_>, default: bool) -> Result<bool, ConfigError> {
    r.switch(Switch::Key("tie_word_embeddings", default))
}

/// A learned position table of `rows` (+ `offset`) × `dim`.
fn learned(
    raw: &RawConfig<'_>,
    key: &str,
    rows: u64,
    offset: u64,
    dim: u64,
) -> Result<PositionEmbedding, ConfigError> {
    let rows = rows
        .checked_add(offset)
        .ok_or_else(|| raw.invalid(key, &rows.into(), "a size below 2^64 − 2"))?;
    Ok(PositionEmbedding::Learned {
        table: Table { rows, dim },
        offset,
    })
}

/// `n_inner` (or another optional width key) when set, else `4·d`.
fn inner_or_4d(r: &mut Reader<'_, '_>, key: &str, hidden: u64) -> Result<u64, ConfigError> {
    if let Some(n) = r.raw.size_opt(key)? {
        r.raw.source(Sym::Ffn, key);
        return Ok(n);
    }
    let v = r.raw.mul(4, hidden, "4·hidden_size")?;
    let reason = format!("absent or null; `{}` uses 4·hidden_size", r.class);
    r.raw.assume(key, v, &reason);
    r.raw
        .source(Sym::Ffn, &format!("4·hidden_size ({key} null)"));
    Ok(v)
}

/// The number of layers as a `usize` (bounded), for the layer list.
fn count(raw: &RawConfig<'_>, key: &str, layers: u64) -> Result<u64, ConfigError> {
    Ok(raw.layer_count(key, layers)? as u64)
}

/// `GPT-SW3` is built by `GPT2LMHeadModel` from a `GPT2Config`: GPT-2's reader, its
/// cross-attention (`add_cross_attention`) held as the layer's tensors (no cached K/V).
fn gpt_sw3(raw: &mut RawConfig<'_>, family: &Family) -> Result<ModelSpec, ConfigError> {
    let mut spec = decoder::gpt2(raw)?;
    family.model_type.clone_into(&mut spec.model_type);
    let hidden = spec.hidden_size;
    map_kinds(&mut spec, |l| {
        if l.cross_attention.take().is_some() {
            l.extras.extend(cross_attention_extras(hidden, GPT2_CROSS));
        }
    });
    if !raw.has("architectures") {
        family.architecture.clone_into(&mut spec.architecture);
    }
    Ok(spec)
}

/// GPT-BigCode (`modeling_gpt_bigcode.py`): GPT-2 with multi-query attention. `c_attn`
/// d → d + 2·`kv_dim` (`kv_heads` = 1 with `multi_query`, else `n_head`) and `c_proj`, both
/// biased; `c_fc`/`c_proj` (`n_inner` or 4d) biased; `ln_1`, `ln_2`, learned `wpe`, `ln_f`,
/// tied `lm_head` without bias. The attribute-map aliases (`hidden_size`, …) win over the
/// fields, so they are tried first. Cross-attention (`add_cross_attention`) needs MHA.
fn gpt_bigcode(raw: &mut RawConfig<'_>, family: &Family) -> Result<ModelSpec, ConfigError> {
    let mut r = reader(raw, family);
    let hidden = r.size(key_or(&["hidden_size", "n_embd"], 768), Sym::Hidden)?;
    let layers = r.size(key_or(&["num_hidden_layers", "n_layer"], 12), Sym::Layers)?;
    let heads = r.size(key_or(&["num_attention_heads", "n_head"], 12), Sym::Heads)?;
    let vocab = r.size(key_or(&["vocab_size"], 50257), Sym::Vocab)?;
    let positions = r.size(
        key_or(&["max_position_embeddings", "n_positions"], 1024),
        Sym::Context,
    )?;
    let head_dim = r.raw.derived_head_dim(hidden, "n_embd", heads, "n_head")?;
    let inner = inner_or_4d(&mut r, "n_inner", hidden)?;
    let multi_query = r.switch(Switch::Key("multi_query", true))?;
    let cross = r.switch(Switch::Key("add_cross_attention", false))?;
    let tied = tie(&mut r, true)?;
    if cross && multi_query {
        return Err(r.raw.invalid(
            "add_cross_attention",
            &true.into(),
            "`false` with `multi_query` (GPT-BigCode has no multi-query cross-attention)",
        ));
    }
    let kv = if multi_query {
        r.raw.source(Sym::KvHeads, "multi_query: 1");
        1
    } else {
        heads
    };
    let mut attn = mha(hidden, heads, kv, head_dim, true);
    attn.fused_qkv = true;
    let mut l = layer(
        attn,
        mlp(hidden, inner, false, true),
        vec![Norm::layer_norm(hidden); 2],
    );
    if cross {
        // `crossattention`: `q_attn` d→d, `c_attn` d→2d, `c_proj`, all biased; `ln_cross_attn`.
        l.extras = cross_attention_extras(hidden, GPT2_CROSS);
        l.norms.push(Norm::layer_norm(hidden));
    }
    let n = count(r.raw, "n_layer", layers)?;
    Ok(Decoder {
        position: Some(learned(r.raw, "n_positions", positions, 0, hidden)?),
        ..Decoder::new(
            family.model_type,
            architecture(r.raw, family.architecture),
            hidden,
            vocab,
            Layers::repeat(l, n),
            Some(Norm::layer_norm(hidden)),
            tied,
        )
    }
    .into_spec())
}

/// The per-layer kinds of GPT-Neo, which must number `num_layers` and each be `global` or
/// `local` (`GPTNeoBlock` refuses any other). `GPTNeoConfig.__post_init__` expands
/// `attention_types` (`[[kinds, repeat], …]`, default `[[["global", "local"], 12]]`) into
/// `attention_layers`, but a saved config's own `attention_layers` is set after it and wins, and
/// `GPTNeoBlock` reads only `config.attention_layers`; `validate_architecture` checks the length.
fn gpt_neo_types(raw: &RawConfig<'_>, layers: u64) -> Result<(), ConfigError> {
    if let Some(v) = raw.value("attention_layers") {
        let list = v
            .as_array()
            .ok_or_else(|| raw.invalid("attention_layers", v, "a list of layer kinds"))?;
        gpt_neo_kinds(raw, "attention_layers", list)?;
        return gpt_neo_count(raw, "attention_layers", v, list.len() as u64, layers);
    }
    let Some(v) = raw.value("attention_types") else {
        // The default `[[["global", "local"], 12]]` expands to 24 layers.
        return if layers == 24 {
            Ok(())
        } else {
            Err(raw.missing(
                "attention_types",
                &format!("a layer pattern for {layers} layers (the default covers 24)"),
            ))
        };
    };
    let bad = || raw.invalid("attention_types", v, "a list of [[kinds…], repeat] pairs");
    let mut total = 0u64;
    for item in v.as_array().ok_or_else(bad)? {
        let pair = item.as_array().ok_or_else(bad)?;
        let (Some(kinds), Some(repeat), 2) = (
            pair.first().and_then(|k| k.as_array()),
            pair.get(1).and_then(serde_json::Value::as_u64),
            pair.len(),
        ) else {
            return Err(bad());
        };
        gpt_neo_kinds(raw, "attention_types", kinds)?;
        let n = (kinds.len() as u64).checked_mul(repeat).ok_or_else(bad)?;
        total = total.checked_add(n).ok_or_else(bad)?;
    }
    gpt_neo_count(raw, "attention_types", v, total, layers)
}

/// Every kind is `global` or `local` (the two share one shape: local layers only mask).
fn gpt_neo_kinds(
    raw: &RawConfig<'_>,
    key: &str,
    kinds: &[serde_json::Value],
) -> Result<(), ConfigError> {
    match kinds
        .iter()
        .find(|k| !matches!(k.as_str(), Some("global" | "local")))
    {
        Some(k) => Err(raw.invalid(key, k, "`global` or `local` layers")),
        None => Ok(()),
    }
}

/// The expanded kinds number `num_layers` (`GPTNeoConfig.validate_architecture`).
fn gpt_neo_count(
    raw: &RawConfig<'_>,
    key: &str,
    v: &serde_json::Value,
    found: u64,
    layers: u64,
) -> Result<(), ConfigError> {
    if found == layers {
        Ok(())
    } else {
        Err(raw.invalid(
            key,
            v,
            &format!("as many layers as `num_layers` ({layers})"),
        ))
    }
}

/// GPT-Neo (`modeling_gpt_neo.py`): q/k/v without biases, `out_proj` with one; `c_fc`/`c_proj`
/// (`intermediate_size` or 4d) biased; `ln_1`, `ln_2`, learned `wpe`, `ln_f`, tied head. Local
/// layers only mask (their cache holds every token), so no layer is a sliding one.
fn gpt_neo(raw: &mut RawConfig<'_>, family: &Family) -> Result<ModelSpec, ConfigError> {
    let mut r = reader(raw, family);
    let hidden = r.size(key_or(&["hidden_size"], 2048), Sym::Hidden)?;
    let layers = r.size(
        key_or(&["num_hidden_layers", "num_layers"], 24),
        Sym::Layers,
    )?;
    let heads = r.size(
        key_or(&["num_attention_heads", "num_heads"], 16),
        Sym::Heads,
    )?;
    let vocab = r.size(key_or(&["vocab_size"], 50257), Sym::Vocab)?;
    let positions = r.size(key_or(&["max_position_embeddings"], 2048), Sym::Context)?;
    let head_dim = r
        .raw
        .derived_head_dim(hidden, "hidden_size", heads, "num_heads")?;
    let inner = inner_or_4d(&mut r, "intermediate_size", hidden)?;
    let tied = tie(&mut r, true)?;
    gpt_neo_types(r.raw, layers)?;
    let mut attn = mha(hidden, heads, heads, head_dim, false);
    attn.o_bias = true;
    let n = count(r.raw, "num_layers", layers)?;
    Ok(Decoder {
        position: Some(learned(
            r.raw,
            "max_position_embeddings",
            positions,
            0,
            hidden,
        )?),
        ..Decoder::new(
            family.model_type,
            architecture(r.raw, family.architecture),
            hidden,
            vocab,
            Layers::repeat(
                layer(
                    attn,
                    mlp(hidden, inner, false, true),
                    vec![Norm::layer_norm(hidden); 2],
                ),
                n,
            ),
            Some(Norm::layer_norm(hidden)),
            tied,
        )
    }
    .into_spec())
}

/// `CodeGen` (`modeling_codegen.py`): fused `qkv_proj` d→3d and `out_proj` without biases,
/// `fc_in`/`fc_out` (`n_inner` or 4d) biased, one `ln_1` (parallel block), rotary positions,
/// `ln_f`, `lm_head` with a bias, untied by default.
fn codegen(raw: &mut RawConfig<'_>, family: &Family) -> Result<ModelSpec, ConfigError> {
    let mut r = reader(raw, family);
    let hidden = r.size(key_or(&["hidden_size", "n_embd"], 4096), Sym::Hidden)?;
    let layers = r.size(key_or(&["num_hidden_layers", "n_layer"], 28), Sym::Layers)?;
    let heads = r.size(key_or(&["num_attention_heads", "n_head"], 16), Sym::Heads)?;
    let vocab = r.size(key_or(&["vocab_size"], 50400), Sym::Vocab)?;
    let head_dim = r.raw.derived_head_dim(hidden, "n_embd", heads, "n_head")?;
    let inner = inner_or_4d(&mut r, "n_inner", hidden)?;
    let tied = tie(&mut r, false)?;
    let mut attn = mha(hidden, heads, heads, head_dim, false);
    attn.fused_qkv = true;
    let n = count(r.raw, "n_layer", layers)?;
    Ok(Decoder {
        head_bias: true,
        ..Decoder::new(
            family.model_type,
            architecture(r.raw, family.architecture),
            hidden,
            vocab,
            Layers::repeat(
                layer(
                    attn,
                    mlp(hidden, inner, false, true),
                    vec![Norm::layer_norm(hidden)],
                ),
                n,
            ),
            Some(Norm::layer_norm(hidden)),
            tied,
        )
    }
    .into_spec())
}

/// `OpenAI` GPT (`modeling_openai.py`): `Conv1D` `c_attn` d→3d and `c_proj`, `c_fc` d→4d and
/// `c_proj`, all biased; `ln_1`, `ln_2` (post-norm), no final norm; learned `positions_embed`
/// of `n_positions`; tied `lm_head` without bias.
fn openai_gpt(raw: &mut RawConfig<'_>, family: &Family) -> Result<ModelSpec, ConfigError> {
    let mut r = reader(raw, family);
    let hidden = r.size(key_or(&["hidden_size", "n_embd"], 768), Sym::Hidden)?;
    let layers = r.size(key_or(&["num_hidden_layers", "n_layer"], 12), Sym::Layers)?;
    let heads = r.size(key_or(&["num_attention_heads", "n_head"], 12), Sym::Heads)?;
    let vocab = r.size(key_or(&["vocab_size"], 40478), Sym::Vocab)?;
    let positions = r.size(
        key_or(&["max_position_embeddings", "n_positions"], 512),
        Sym::Context,
    )?;
    let head_dim = r.raw.derived_head_dim(hidden, "n_embd", heads, "n_head")?;
    let inner = r.raw.mul(4, hidden, "4·n_embd")?;
    r.raw.source(Sym::Ffn, "4·n_embd (Block: MLP(4 * nx))");
    let tied = tie(&mut r, true)?;
    let mut attn = mha(hidden, heads, heads, head_dim, true);
    attn.fused_qkv = true;
    let n = count(r.raw, "n_layer", layers)?;
    Ok(Decoder {
        position: Some(learned(r.raw, "n_positions", positions, 0, hidden)?),
        ..Decoder::new(
            family.model_type,
            architecture(r.raw, family.architecture),
            hidden,
            vocab,
            Layers::repeat(
                layer(
                    attn,
                    mlp(hidden, inner, false, true),
                    vec![Norm::layer_norm(hidden); 2],
                ),
                n,
            ),
            None,
            tied,
        )
    }
    .into_spec())
}

/// CTRL (`modeling_ctrl.py`): `Wq`/`Wk`/`Wv`/`dense` biased, FFN d→`dff`→d biased,
/// `layernorm1`/`layernorm2`, sinusoidal positions (a buffer), final `layernorm`, tied
/// `lm_head` with a bias.
fn ctrl(raw: &mut RawConfig<'_>, family: &Family) -> Result<ModelSpec, ConfigError> {
    let mut r = reader(raw, family);
    let hidden = r.size(key_or(&["hidden_size", "n_embd"], 1280), Sym::Hidden)?;
    let layers = r.size(key_or(&["num_hidden_layers", "n_layer"], 48), Sym::Layers)?;
    let heads = r.size(key_or(&["num_attention_heads", "n_head"], 16), Sym::Heads)?;
    let vocab = r.size(key_or(&["vocab_size"], 246_534), Sym::Vocab)?;
    let dff = r.size(key_or(&["dff"], 8192), Sym::Ffn)?;
    let head_dim = r.raw.derived_head_dim(hidden, "n_embd", heads, "n_head")?;
    let tied = tie(&mut r, true)?;
    let n = count(r.raw, "n_layer", layers)?;
    Ok(Decoder {
        head_bias: true,
        ..Decoder::new(
            family.model_type,
            architecture(r.raw, family.architecture),
            hidden,
            vocab,
            Layers::repeat(
                layer(
                    mha(hidden, heads, heads, head_dim, true),
                    mlp(hidden, dff, false, true),
                    vec![Norm::layer_norm(hidden); 2],
                ),
                n,
            ),
            Some(Norm::layer_norm(hidden)),
            tied,
        )
    }
    .into_spec())
}

/// XGLM (`modeling_xglm.py`): fairseq decoder layers (q/k/v/`out_proj` and `fc1`/`fc2`
/// biased, `self_attn_layer_norm`, `final_layer_norm`; with `add_cross_attention` an
/// `encoder_attn` and its norm), sinusoidal positions (a buffer), final `layer_norm`, tied
/// `lm_head` without bias.
fn xglm(raw: &mut RawConfig<'_>, family: &Family) -> Result<ModelSpec, ConfigError> {
    let mut r = reader(raw, family);
    let hidden = r.size(key_or(&["hidden_size", "d_model"], 1024), Sym::Hidden)?;
    let layers = r.size(
        key_or(&["num_hidden_layers", "num_layers"], 24),
        Sym::Layers,
    )?;
    let heads = r.size(
        key_or(&["num_attention_heads", "attention_heads"], 16),
        Sym::Heads,
    )?;
    let vocab = r.size(key_or(&["vocab_size"], 256_008), Sym::Vocab)?;
    let ffn = r.size(key_or(&["ffn_dim"], 4096), Sym::Ffn)?;
    let head_dim = r
        .raw
        .derived_head_dim(hidden, "d_model", heads, "attention_heads")?;
    let cross = r.switch(Switch::Key("add_cross_attention", false))?;
    let tied = tie(&mut r, true)?;
    let mut l = layer(
        mha(hidden, heads, heads, head_dim, true),
        mlp(hidden, ffn, false, true),
        vec![Norm::layer_norm(hidden); 2],
    );
    if cross {
        l.extras = cross_attention_extras(
            hidden,
            &[
                ("encoder_attn.q_proj", 1),
                ("encoder_attn.k_proj", 1),
                ("encoder_attn.v_proj", 1),
                ("encoder_attn.out_proj", 1),
            ],
        );
        l.norms.push(Norm::layer_norm(hidden));
    }
    let n = count(r.raw, "num_layers", layers)?;
    Ok(Decoder::new(
        family.model_type,
        architecture(r.raw, family.architecture),
        hidden,
        vocab,
        Layers::repeat(l, n),
        Some(Norm::layer_norm(hidden)),
        tied,
    )
    .into_spec())
}

/// `BioGPT` (`modeling_biogpt.py`): learned positions with 2 offset rows
/// (`BioGptLearnedPositionalEmbedding`), fairseq decoder layers (all projections biased, two
/// `LayerNorm`s), final `layer_norm`, `output_projection` without bias, tied by default.
fn biogpt(raw: &mut RawConfig<'_>, family: &Family) -> Result<ModelSpec, ConfigError> {
    let mut r = reader(raw, family);
    let hidden = r.size(key_or(&["hidden_size"], 1024), Sym::Hidden)?;
    let layers = r.size(key_or(&["num_hidden_layers"], 24), Sym::Layers)?;
    let heads = r.size(key_or(&["num_attention_heads"], 16), Sym::Heads)?;
    let vocab = r.size(key_or(&["vocab_size"], 42384), Sym::Vocab)?;
    let ffn = r.size(key_or(&["intermediate_size"], 4096), Sym::Ffn)?;
    let positions = r.size(key_or(&["max_position_embeddings"], 1024), Sym::Context)?;
    let head_dim = r
        .raw
        .derived_head_dim(hidden, "hidden_size", heads, "num_attention_heads")?;
    let tied = tie(&mut r, true)?;
    let n = count(r.raw, "num_hidden_layers", layers)?;
    Ok(Decoder {
        position: Some(learned(
            r.raw,
            "max_position_embeddings",
            positions,
            2,
            hidden,
        )?),
        ..Decoder::new(
            family.model_type,
            architecture(r.raw, family.architecture),
            hidden,
            vocab,
            Layers::repeat(
                layer(
                    mha(hidden, heads, heads, head_dim, true),
                    mlp(hidden, ffn, false, true),
                    vec![Norm::layer_norm(hidden); 2],
                ),
                n,
            ),
            Some(Norm::layer_norm(hidden)),
            tied,
        )
    }
    .into_spec())
}

/// GPT-NeoX-Japanese (`modeling_gpt_neox_japanese.py`): fused `query_key_value` d→3d and
/// `dense` without biases, except the last layer's separate `dense_bias` (`use_bias=layer_number
/// == num_hidden_layers - 1`); MLP d → `int(d·intermediate_multiple_size)` → d without biases;
/// two `LayerNorm`s, `final_layer_norm`; `embed_out` without bias, tied by default.
fn gpt_neox_japanese(raw: &mut RawConfig<'_>, family: &Family) -> Result<ModelSpec, ConfigError> {
    let mut r = reader(raw, family);
    let hidden = r.size(key_or(&["hidden_size"], 2560), Sym::Hidden)?;
    let layers = r.size(key_or(&["num_hidden_layers"], 32), Sym::Layers)?;
    let heads = r.size(key_or(&["num_attention_heads"], 32), Sym::Heads)?;
    let vocab = r.size(key_or(&["vocab_size"], 32000), Sym::Vocab)?;
    let head_dim = r
        .raw
        .derived_head_dim(hidden, "hidden_size", heads, "num_attention_heads")?;
    let inner = match r.raw.value("intermediate_multiple_size") {
        None => {
            let reason = format!("absent; `{}` default", r.class);
            r.raw.assume("intermediate_multiple_size", 4, &reason);
            r.raw
                .mul(hidden, 4, "hidden_size·intermediate_multiple_size")?
        }
        Some(v) => {
            if let Some(m) = v.as_u64() {
                r.raw
                    .mul(hidden, m, "hidden_size·intermediate_multiple_size")?
            } else {
                // `int(hidden_size * intermediate_multiple_size)` of a float multiple.
                let m = v
                    .as_f64()
                    .filter(|m| m.is_finite() && *m > 0.0)
                    .ok_or_else(|| {
                        r.raw
                            .invalid("intermediate_multiple_size", v, "a positive number")
                    })?;
                #[allow(
                    clippy::cast_precision_loss,
                    clippy::cast_possible_truncation,
                    clippy::cast_sign_loss,
                    reason = "Python's int() of a float product"
                )]
                let w = (hidden as f64 * m) as u64;
                w
            }
        }
    };
    if inner == 0 {
        return Err(r.raw.invalid(
            "intermediate_multiple_size",
            &serde_json::Value::from(0),
            "a multiple giving a positive width",
        ));
    }
    r.raw
        .source(Sym::Ffn, "hidden_size·intermediate_multiple_size");
    let tied = tie(&mut r, true)?;
    let mut attn = mha(hidden, heads, heads, head_dim, false);
    attn.fused_qkv = true;
    let norms = vec![Norm::layer_norm(hidden); 2];
    let body = layer(
        attn.clone(),
        mlp(hidden, inner, false, false),
        norms.clone(),
    );
    attn.o_bias = true;
    let last = layer(attn, mlp(hidden, inner, false, false), norms);
    let n = count(r.raw, "num_hidden_layers", layers)?;
    let mut stack = Layers::repeat(
        body,
        r.raw.check(checked::sub("num_hidden_layers − 1", n, 1))?,
    );
    stack.push(last);
    Ok(Decoder::new(
        family.model_type,
        architecture(r.raw, family.architecture),
        hidden,
        vocab,
        stack,
        Some(Norm::layer_norm(hidden)),
        tied,
    )
    .into_spec())
}

/// Persimmon (`modeling_persimmon.py`): fused `query_key_value` d→3d and `dense` biased; with
/// `qk_layernorm` (default on) a `LayerNorm(d_h)` with bias on queries and keys; MLP
/// `dense_h_to_4h`/`dense_4h_to_h` biased; two `LayerNorm`s, `final_layernorm`; untied
/// `lm_head` without bias.
fn persimmon(raw: &mut RawConfig<'_>, family: &Family) -> Result<ModelSpec, ConfigError> {
    let mut r = reader(raw, family);
    let hidden = r.size(key_or(&["hidden_size"], 4096), Sym::Hidden)?;
    let layers = r.size(key_or(&["num_hidden_layers"], 36), Sym::Layers)?;
    let heads = r.size(key_or(&["num_attention_heads"], 64), Sym::Heads)?;
    let vocab = r.size(key_or(&["vocab_size"], 262_144), Sym::Vocab)?;
    let inner = r.size(key_or(&["intermediate_size"], 16384), Sym::Ffn)?;
    let head_dim = r
        .raw
        .derived_head_dim(hidden, "hidden_size", heads, "num_attention_heads")?;
    let qk_norm = r.switch(Switch::Key("qk_layernorm", true))?;
    let tied = tie(&mut r, false)?;
    let mut attn = mha(hidden, heads, heads, head_dim, true);
    attn.fused_qkv = true;
    if qk_norm {
        attn.q_norm = Some(Norm::layer_norm(head_dim));
        attn.k_norm = Some(Norm::layer_norm(head_dim));
    }
    let n = count(r.raw, "num_hidden_layers", layers)?;
    Ok(Decoder::new(
        family.model_type,
        architecture(r.raw, family.architecture),
        hidden,
        vocab,
        Layers::repeat(
            layer(
                attn,
                mlp(hidden, inner, false, true),
                vec![Norm::layer_norm(hidden); 2],
            ),
            n,
        ),
        Some(Norm::layer_norm(hidden)),
        tied,
    )
    .into_spec())
}

/// MPT (`modeling_mpt.py`): fused `Wqkv` d→3d and `out_proj` without biases, MLP d→4d→d
/// without biases (`MptMLP` ignores `expansion_ratio`), `norm_1`/`norm_2` and `norm_f` are
/// `LayerNorm`s whose bias is removed, `ALiBi` (no position parameters), tied `lm_head`.
fn mpt(raw: &mut RawConfig<'_>, family: &Family) -> Result<ModelSpec, ConfigError> {
    let mut r = reader(raw, family);
    let hidden = r.size(key_or(&["hidden_size", "d_model"], 2048), Sym::Hidden)?;
    let layers = r.size(key_or(&["num_hidden_layers", "n_layers"], 24), Sym::Layers)?;
    let heads = r.size(key_or(&["num_attention_heads", "n_heads"], 16), Sym::Heads)?;
    let vocab = r.size(key_or(&["vocab_size"], 50368), Sym::Vocab)?;
    let head_dim = r
        .raw
        .derived_head_dim(hidden, "d_model", heads, "n_heads")?;
    let inner = r.raw.mul(4, hidden, "4·d_model")?;
    r.raw.source(Sym::Ffn, "4·d_model (MptMLP)");
    let tied = tie(&mut r, true)?;
    let mut attn = mha(hidden, heads, heads, head_dim, false);
    attn.fused_qkv = true;
    let norm = Norm {
        bias: false,
        ..Norm::layer_norm(hidden)
    };
    let n = count(r.raw, "n_layers", layers)?;
    Ok(Decoder::new(
        family.model_type,
        architecture(r.raw, family.architecture),
        hidden,
        vocab,
        Layers::repeat(
            layer(attn, mlp(hidden, inner, false, false), vec![norm; 2]),
            n,
        ),
        Some(norm),
        tied,
    )
    .into_spec())
}

/// Moshi's text decoder (`modeling_moshi.py`, `MoshiForCausalLM`): `embed_tokens` of V + 1
/// rows; q/k/v/o without biases (`head_dim` or d / `n_h`, `num_key_value_heads` or `n_h`);
/// `MoshiGatingMLP` `fc1` d → `ffn_dim`, `fc2` `ffn_dim`/2 → d (a gated MLP of `ffn_dim`/2);
/// two `RMSNorm`s, a final `norm`; `lm_head` never tied. Without `layer_types`, `DynamicCache`
/// makes every layer a sliding one of `sliding_window`.
fn moshi(raw: &mut RawConfig<'_>, family: &Family) -> Result<ModelSpec, ConfigError> {
    let mut r = reader(raw, family);
    let hidden = r.size(key_or(&["hidden_size"], 4096), Sym::Hidden)?;
    let layers = r.size(key_or(&["num_hidden_layers"], 32), Sym::Layers)?;
    let heads = r.size(key_or(&["num_attention_heads"], 32), Sym::Heads)?;
    let vocab = r.size(key_or(&["vocab_size"], 32000), Sym::Vocab)?;
    let ffn_dim = r.size(key_or(&["ffn_dim"], 22528), Sym::Named("ffn_dim"))?;
    let window = r.size(key_or(&["sliding_window"], 3000), Sym::Named("w"))?;
    if !hidden.is_multiple_of(heads) {
        // `MoshiAttention` requires it whatever `head_dim` is.
        return Err(r.raw.invalid(
            "hidden_size",
            &hidden.into(),
            &format!("a multiple of `num_attention_heads` ({heads})"),
        ));
    }
    let head_dim = r.raw.head_dim(
        &["head_dim"],
        hidden,
        "hidden_size",
        heads,
        "num_attention_heads",
    )?;
    let kv = decoder::kv_heads(r.raw, heads, family.config_class, None)?;
    if !ffn_dim.is_multiple_of(2) {
        // `fc1`'s output is chunked in two halves that multiply.
        return Err(r.raw.invalid("ffn_dim", &ffn_dim.into(), "an even width"));
    }
    // Read (a boolean), but neither `MoshiForCausalLM` nor `MoshiModel` has
    // `_tied_weights_keys`, so `get_expanded_tied_weights_keys` ties nothing: never tied.
    tie(&mut r, false)?;
    let rows = vocab.checked_add(1).ok_or_else(|| {
        r.raw
            .invalid("vocab_size", &vocab.into(), "a size below 2^64 − 1")
    })?;
    let mut l = layer(
        mha(hidden, heads, kv, head_dim, false),
        mlp(hidden, ffn_dim / 2, true, false),
        vec![Norm::rms_norm(hidden); 2],
    );
    l.sliding_window = Some(window);
    let n = count(r.raw, "num_hidden_layers", layers)?;
    let mut spec = Decoder::new(
        family.model_type,
        architecture(r.raw, family.architecture),
        hidden,
        vocab,
        Layers::repeat(l, n),
        Some(Norm::rms_norm(hidden)),
        false,
    )
    .into_spec();
    // `nn.Embedding(vocab_size + 1, hidden_size)`; the head has `vocab_size` rows.
    spec.token_embedding = Some(Table { rows, dim: hidden });
    Ok(spec)
}

/// `ModernBERT` decoder (`modeling_modernbert_decoder.py`): `tok_embeddings` and a `LayerNorm`
/// on them (`norm_bias`); layers with `attn_norm` (not in layer 0), q/k/v d→d and `Wo`
/// (`attention_bias`), `mlp_norm`, `Wi` d→2·`intermediate_size` and `Wo` (`mlp_bias`, a gated
/// MLP); `final_norm`; the head's `dense` d→d (`classifier_bias`) and `norm`, then `decoder`
/// (bias `decoder_bias`), tied by default. Sliding layers (`layer_types`, else every
/// `global_attn_every_n_layers`-th layer from 0 is global) keep `local_attention // 2`.
fn modernbert_decoder(raw: &mut RawConfig<'_>, family: &Family) -> Result<ModelSpec, ConfigError> {
    let mut r = reader(raw, family);
    let hidden = r.size(key_or(&["hidden_size"], 768), Sym::Hidden)?;
    let layers = r.size(key_or(&["num_hidden_layers"], 22), Sym::Layers)?;
    let heads = r.size(key_or(&["num_attention_heads"], 12), Sym::Heads)?;
    let vocab = r.size(key_or(&["vocab_size"], 50368), Sym::Vocab)?;
    let inner = r.size(key_or(&["intermediate_size"], 1152), Sym::Ffn)?;
    let head_dim = r
        .raw
        .derived_head_dim(hidden, "hidden_size", heads, "num_attention_heads")?;
    let norm_bias = r.switch(Switch::Key("norm_bias", false))?;
    let attention_bias = r.switch(Switch::Key("attention_bias", false))?;
    let mlp_bias = r.switch(Switch::Key("mlp_bias", false))?;
    let decoder_bias = r.switch(Switch::Key("decoder_bias", true))?;
    let classifier_bias = r.switch(Switch::Key("classifier_bias", false))?;
    let tied = tie(&mut r, true)?;
    // `sliding_window = local_attention // 2` (none when `local_attention` is null or 0).
    let local = if r.raw.has("local_attention") {
        r.raw.uint("local_attention")?.unwrap_or(0)
    } else {
        let why = format!("absent; `{}` default", r.class);
        r.raw.assume("local_attention", 128, &why);
        128
    };
    let window = (local / 2 > 0).then_some(local / 2);
    let n = count(r.raw, "num_hidden_layers", layers)?;
    let sliding: Vec<bool> = if let Some(v) = r.raw.value("layer_types") {
        let list = v
            .as_array()
            .ok_or_else(|| r.raw.invalid("layer_types", v, "a list of layer kinds"))?;
        if list.len() as u64 != n {
            return Err(r
                .raw
                .invalid("layer_types", v, &format!("one entry per layer ({n})")));
        }
        list.iter()
            .map(|t| match t.as_str() {
                Some("sliding_attention") => Ok(true),
                Some("full_attention") => Ok(false),
                _ => {
                    Err(r
                        .raw
                        .invalid("layer_types", t, "`sliding_attention` or `full_attention`"))
                }
            })
            .collect::<Result<_, _>>()?
    } else {
        let every = r.raw.size_opt("global_attn_every_n_layers")?.unwrap_or(3);
        (0..n).map(|i| !i.is_multiple_of(every)).collect()
    };
    let norm = Norm {
        bias: norm_bias,
        ..Norm::layer_norm(hidden)
    };
    let stack = Layers::from_pattern(
        sliding.iter().enumerate().map(|(i, s)| (i == 0, *s)),
        |&(first, slides)| {
            let mut l = layer(
                mha(hidden, heads, heads, head_dim, attention_bias),
                mlp(hidden, inner, true, mlp_bias),
                if first { vec![norm] } else { vec![norm; 2] },
            );
            l.sliding_window = if slides { window } else { None };
            l
        },
    );
    let mut spec = Decoder {
        embedding_norm: Some(norm),
        ..Decoder::new(
            family.model_type,
            architecture(r.raw, family.architecture),
            hidden,
            vocab,
            stack,
            Some(norm),
            tied,
        )
    }
    .into_spec();
    if let OutputHead::Lm { .. } = spec.head {
        spec.head = OutputHead::Lm {
            tied,
            biases: u64::from(decoder_bias),
            transform: Some(HeadTransform {
                dense: Linear {
                    input: hidden,
                    output: hidden,
                    bias: classifier_bias,
                },
                norm,
            }),
        };
    }
    Ok(spec)
}

/// CPM-Ant (`modeling_cpmant.py`). `input_embedding` has `vocab_size + prompt_types ·
/// prompt_length` rows, `segment_embedding` `segment_types` rows (both token embedding);
/// `CpmAntSegmentPositionEmbedding.relative_attention_bias` is `(segment_types² +
/// position_bias_num_buckets) × num_attention_heads`, once. Each block: weight-only
/// `CpmAntLayerNorm` before attention (`project_q/k/v` d → heads·`dim_head`, `attention_out`
/// back, no biases) and before the gated GELU FFN (`w_0`, `w_1` d → `dim_ff`, `w_out`, no
/// biases); `output_layernorm` at the end. `lm_head` (V rows) is never tied
/// (`_tied_weights_keys = {}`). The forward prepends `prompt_length` prompt tokens in every
/// layer, so each layer's cache holds them beyond the input.
fn cpmant(raw: &mut RawConfig<'_>, family: &Family) -> Result<ModelSpec, ConfigError> {
    let mut r = reader(raw, family);
    let hidden = r.size(key_or(&["hidden_size"], 4096), Sym::Hidden)?;
    let layers = r.size(key_or(&["num_hidden_layers"], 48), Sym::Layers)?;
    let heads = r.size(key_or(&["num_attention_heads"], 32), Sym::Heads)?;
    let head_dim = r.size(key_or(&["dim_head"], 128), Sym::HeadDim)?;
    let vocab = r.size(key_or(&["vocab_size"], 30720), Sym::Vocab)?;
    let dim_ff = r.size(key_or(&["dim_ff"], 10240), Sym::Ffn)?;
    let class = family.config_class;
    let buckets = count_or(r.raw, "position_bias_num_buckets", 512, class)?;
    let prompt_types = count_or(r.raw, "prompt_types", 32, class)?;
    let prompt_length = count_or(r.raw, "prompt_length", 32, class)?;
    let segments = count_or(r.raw, "segment_types", 32, class)?;
    let too_big =
        |raw: &RawConfig<'_>, key: &str, v: u64| raw.invalid(key, &v.into(), "a smaller size");
    let rows = prompt_types
        .checked_mul(prompt_length)
        .and_then(|p| p.checked_add(vocab))
        .ok_or_else(|| too_big(r.raw, "prompt_length", prompt_length))?;
    let bias_rows = segments
        .checked_mul(segments)
        .and_then(|s| s.checked_add(buckets))
        .ok_or_else(|| too_big(r.raw, "segment_types", segments))?;
    let mut attn = mha(hidden, heads, heads, head_dim, false);
    attn.cache_prefix_tokens = prompt_length;
    let n = count(r.raw, "num_hidden_layers", layers)?;
    let mut spec = Decoder {
        position: Some(PositionEmbedding::RelativeBias {
            buckets: bias_rows,
            heads,
        }),
        ..Decoder::new(
            family.model_type,
            architecture(r.raw, family.architecture),
            hidden,
            vocab,
            Layers::repeat(
                layer(
                    attn,
                    mlp(hidden, dim_ff, true, false),
                    vec![Norm::rms_norm(hidden); 2],
                ),
                n,
            ),
            Some(Norm::rms_norm(hidden)),
            false,
        )
    }
    .into_spec();
    spec.token_embedding = Some(Table { rows, dim: hidden });
    spec.extras.push(Extra::table(
        "segment_embedding",
        "segment_embedding",
        Category::TokenEmbedding,
        Expr::sym(Sym::Named("segment_types"), segments),
        Expr::sym(Sym::Hidden, hidden),
    ));
    Ok(spec)
}

/// A count that may be 0 (CPM-Ant's `prompt_length`), with the class default when absent.
fn count_or(
    raw: &mut RawConfig<'_>,
    key: &'static str,
    default: u64,
    class: &str,
) -> Result<u64, ConfigError> {
    if let Some(n) = raw.uint(key)? {
        raw.source(Sym::Named(key), key);
        return Ok(n);
    }
    raw.assume(key, default, &format!("absent; `{class}` default"));
    raw.source(Sym::Named(key), &format!("{key} (default)"));
    Ok(default)
}
