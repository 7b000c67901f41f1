//! BERT-like encoders as transformers builds them from a causal-LM class
//! (`BertLMHeadModel`, `RobertaForCausalLM`, `ElectraForCausalLM`, …) or as the bare model.
//!
//! The causal class is the encoder without its pooler (`BigBird` keeps it), its layers causal
//! and cached, plus the MLM-style head of `modeling_bert.py`'s `BertLMPredictionHead`: a
//! transform (`dense` + `LayerNorm`), a decoder tied to the token table and an output bias
//! (`cls.predictions.bias`, one tensor with the decoder's bias while tied, two once
//! `tie_word_embeddings` is false). One [`Bert`] entry per model type says where it departs.

use std::collections::{BTreeMap, BTreeSet};

use llmsize_core::Category;
use llmsize_core::expr::{Expr, Sym};
use llmsize_core::spec::{
    Attention, Extra, Ffn, HeadTransform, Layer, Layers, Linear, ModelSpec, Norm, NormKind,
    OutputHead, PositionEmbedding, Stack, StackRole, Table,
};
use serde_json::Value;

use crate::error::ConfigError;
use crate::hf_config::decoder::{mha, mlp};
use crate::hf_config::family::Family;
use crate::hf_config::raw::RawConfig;
use crate::hf_config::{HeadChoice, architecture, encoder, is_bare};

/// Where the token table's width comes from.
#[derive(Debug, Clone, Copy)]
pub(super) enum Width {
    /// `hidden_size`.
    Hidden,
    /// `key` (class default), projected to `hidden_size` by a biased linear layer when it
    /// differs (ELECTRA's `embeddings_project`, `RoFormer`'s), or always (`RemBERT`'s
    /// `embedding_hidden_mapping_in`).
    Key {
        key: &'static str,
        default: u64,
        always_projected: bool,
    },
}

/// The position parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Positions {
    /// `position_embeddings`: `max_position_embeddings × E`.
    Learned,
    /// `RoFormer`'s `embed_positions`: a sinusoidal table of `max_position_embeddings ×
    /// hidden/heads` held as a parameter.
    Sinusoid,
}

/// The causal class's output head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Head {
    /// `BertLMPredictionHead`: transform `d → E` + `LayerNorm(E)`, decoder `E → V` tied to
    /// the token table, output bias.
    Mlm,
    /// `BertGenerationOnlyLMHead`: decoder tied to the token table and an output bias only.
    Plain,
    /// `RemBertLMPredictionHead`: `dense` `d → output_embedding_size` + `LayerNorm`, and a
    /// decoder of its own (never tied) to `V` with a bias.
    RemBert,
}

/// Extra parts a model type adds to the layer and the model.
pub(super) struct Parts {
    /// The hidden size.
    pub hidden: u64,
    /// The one layer kind.
    pub layer: Layer,
    /// The norm after the last layer.
    pub final_norm: Option<Norm>,
    /// Model-level tensors the typed parts do not hold.
    pub extras: Vec<Extra>,
}

/// A model type's own additions, in this file.
pub(super) type Tweak = fn(&mut RawConfig<'_>, &Bert, &mut Parts) -> Result<(), ConfigError>;

/// One BERT-like model type: its configuration class defaults and where it departs from
/// `modeling_bert.py`.
#[expect(
    clippy::struct_excessive_bools,
    reason = "each switch is one departure of a modeling file, named"
)]
pub(super) struct Bert {
    /// The configuration class.
    pub class: &'static str,
    /// The causal-LM class (`BertLMHeadModel`).
    pub causal: &'static str,
    /// The bare class (`BertModel`).
    pub base: &'static str,
    /// BERT and RoBERTa: any other class is read by the classic reader (`encoder.rs`), and
    /// a config naming no class counts this masked-LM class, as before.
    pub classic: Option<&'static str>,
    /// Class defaults.
    pub vocab: u64,
    pub hidden: u64,
    pub layers: u64,
    pub heads: u64,
    pub inner: u64,
    pub positions: u64,
    /// `type_vocab_size` default, or `None`: no token-type table (`BertGeneration`).
    pub types: Option<u64>,
    /// `tie_word_embeddings` default.
    pub tie: bool,
    /// The token table's width.
    pub width: Width,
    /// The position parameters.
    pub position: Positions,
    /// A `LayerNorm` on the embeddings (Megatron-BERT, XLM-RoBERTa-XL have none).
    pub embedding_norm: bool,
    /// A final `LayerNorm` after the layers (the pre-LN variants).
    pub final_norm: bool,
    /// The key of q/k/v biases (`BigBird`'s `use_bias`), else always biased.
    pub qkv_bias_key: Option<(&'static str, bool)>,
    /// The causal class's head.
    pub head: Head,
    /// The head's own `bias` and the decoder's are two tensors once untied.
    pub separate_bias: bool,
    /// The causal class keeps the pooler (`BigBirdForCausalLM` builds `BigBirdModel` with it).
    pub causal_pooler: bool,
    /// The bare class has a pooler.
    pub base_pooler: bool,
    /// The causal class registers its head before the encoder (`CamembertForCausalLM`,
    /// `XLMRobertaForCausalLM`), so the tied table is first named `lm_head.decoder.weight`
    /// and counted as the output head, not the token table.
    pub table_in_head: bool,
    /// The head's class matches the norm rule (`RobertaPreLayerNormLMHead`), so its own
    /// `bias` counts as a norm parameter.
    pub head_bias_is_norm: bool,
    /// `BigBird`'s `attention_type` (`block_sparse` caches nothing).
    pub block_sparse: bool,
    /// The type's own additions.
    pub tweak: Option<Tweak>,
}

/// `modeling_bert.py` with the `BertConfig` defaults; entries change what differs.
pub(super) const BERT: Bert = Bert {
    class: "BertConfig",
    causal: "BertLMHeadModel",
    base: "BertModel",
    classic: None,
    vocab: 30522,
    hidden: 768,
    layers: 12,
    heads: 12,
    inner: 3072,
    positions: 512,
    types: Some(2),
    tie: true,
    width: Width::Hidden,
    position: Positions::Learned,
    embedding_norm: true,
    final_norm: false,
    qkv_bias_key: None,
    head: Head::Mlm,
    separate_bias: true,
    causal_pooler: false,
    base_pooler: true,
    table_in_head: false,
    head_bias_is_norm: false,
    block_sparse: false,
    tweak: None,
};

/// The class a config asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Built {
    Causal,
    /// `…ForMaskedLM`: the causal class's modules (pooler likewise), run bidirectionally.
    Masked,
    Base,
}

fn is_causal(arch: &str, b: &Bert) -> bool {
    arch == b.causal || arch.ends_with("ForCausalLM") || arch.ends_with("LMHeadModel")
}

/// Read a BERT-like config.
pub(super) fn read(
    raw: &mut RawConfig<'_>,
    family: &Family,
    head: HeadChoice,
    b: &Bert,
) -> Result<ModelSpec, ConfigError> {
    let arch = architecture(raw, b.classic.unwrap_or(b.causal));
    let causal = is_causal(&arch, b);
    if b.classic.is_some() && (!causal || head == HeadChoice::Base) {
        let mut spec = encoder::encoder(raw, family.model_type, head)?;
        if causal {
            // `--head base` of a causal config: the bare class, as `encoder.rs` counts it.
            b.base.clone_into(&mut spec.architecture);
        }
        return Ok(spec);
    }
    let masked = arch.ends_with("ForMaskedLM") && b.head != Head::Plain;
    let bare = arch == b.base || (is_bare(&arch) && !arch.contains("For"));
    let built = match head {
        HeadChoice::Base => Built::Base,
        HeadChoice::Lm | HeadChoice::Config if masked => Built::Masked,
        HeadChoice::Lm => Built::Causal,
        HeadChoice::Config if causal => Built::Causal,
        HeadChoice::Config if bare => Built::Base,
        HeadChoice::Config => {
            let found = raw.value("architectures").cloned().unwrap_or(Value::Null);
            return Err(raw.invalid(
                "architectures",
                &found,
                &format!(
                    "`{}`, its masked-LM class or `{}` (llmsize reads these `{}` classes exactly; `--head base` counts the bare model)",
                    b.causal, b.base, family.model_type
                ),
            ));
        }
    };
    let architecture = match built {
        Built::Causal if !causal => b.causal.to_owned(),
        Built::Base if !bare => b.base.to_owned(),
        Built::Causal | Built::Masked | Built::Base => arch,
    };
    build(raw, family, b, built, architecture)
}

fn build(
    raw: &mut RawConfig<'_>,
    family: &Family,
    b: &Bert,
    built: Built,
    architecture: String,
) -> Result<ModelSpec, ConfigError> {
    let reason = format!("absent; `{}` default", b.class);
    let hidden = raw.size_or(&["hidden_size"], Sym::Hidden, b.hidden, &reason)?;
    let layers = raw.size_or(&["num_hidden_layers"], Sym::Layers, b.layers, &reason)?;
    let heads = raw.size_or(&["num_attention_heads"], Sym::Heads, b.heads, &reason)?;
    let vocab = raw.size_or(&["vocab_size"], Sym::Vocab, b.vocab, &reason)?;
    let inner = raw.size_or(&["intermediate_size"], Sym::Ffn, b.inner, &reason)?;
    let positions = raw.size_or(
        &["max_position_embeddings"],
        Sym::Context,
        b.positions,
        &reason,
    )?;
    let types = match b.types {
        Some(d) => Some(raw.size_or(&["type_vocab_size"], Sym::TokenTypes, d, &reason)?),
        None => None,
    };
    let head_dim = raw.derived_head_dim(hidden, "hidden_size", heads, "num_attention_heads")?;
    let (width, projected) = match b.width {
        Width::Hidden => (hidden, false),
        Width::Key {
            key,
            default,
            always_projected,
        } => {
            let e = raw.size_or(&[key], Sym::EmbeddingDim, default, &reason)?;
            (e, always_projected || e != hidden)
        }
    };
    let tied = b.head != Head::RemBert && raw.flag_or("tie_word_embeddings", b.tie, &reason)?;
    let cross = raw.flag_or("add_cross_attention", false, &reason)?;
    let qkv_bias = match b.qkv_bias_key {
        Some((k, d)) => raw.flag_or(k, d, &reason)?,
        None => true,
    };
    let n = raw.layer_count("num_hidden_layers", layers)?;
    let with_head = built != Built::Base;

    let mut attention = mha(hidden, heads, heads, head_dim, true);
    attention.q_bias = qkv_bias;
    attention.k_bias = qkv_bias;
    attention.v_bias = qkv_bias;
    let mut extras_of_layer = Vec::new();
    if cross {
        // `BertLayer.crossattention` (built when `add_cross_attention`): q/k/v/o and a
        // `LayerNorm`. With no encoder output it never runs, so it caches nothing: held as
        // tensors of the layer, not as a cross-attention the cache would count.
        extras_of_layer = cross_attention_extras(hidden, qkv_bias, true, "crossattention")
            .into_iter()
            .chain(norm_extras(hidden, "crossattention.output.LayerNorm"))
            .map(Extra::idle)
            .collect();
    }
    let layer = Layer {
        attention: Attention::Standard(attention),
        cross_attention: None,
        ffn: Ffn::Dense(mlp(hidden, inner, false, true)),
        norms: vec![Norm::layer_norm(hidden); 2],
        sliding_window: None,
        extras: extras_of_layer,
        state: None,
    };
    let mut parts = Parts {
        hidden,
        layer,
        final_norm: b.final_norm.then(|| Norm::layer_norm(hidden)),
        extras: Vec::new(),
    };
    if let Some(t) = b.tweak {
        t(raw, b, &mut parts)?;
    }

    let position = match b.position {
        Positions::Learned => Some(PositionEmbedding::Learned {
            table: Table {
                rows: positions,
                dim: width,
            },
            offset: 0,
        }),
        Positions::Sinusoid => {
            parts.extras.push(
                Extra::table(
                    "encoder.embed_positions.weight",
                    "sinusoidal positions",
                    Category::PositionEmbedding,
                    Expr::sym(Sym::Context, positions),
                    Expr::sym(Sym::HeadDim, head_dim),
                )
                // `RoFormerSinusoidalPositionalEmbedding` is `nn.Embedding(…, _freeze=True)`.
                .frozen(),
            );
            None
        }
    };
    let mut token_embedding = Some(Table {
        rows: vocab,
        dim: width,
    });
    let mut output = OutputHead::None;
    let mut pooler = None;
    if with_head {
        let biases = if tied || !b.separate_bias { 1 } else { 2 };
        let transform = HeadTransform {
            dense: Linear {
                input: hidden,
                output: width,
                bias: true,
            },
            norm: Norm::layer_norm(width),
        };
        output = match b.head {
            Head::Mlm => OutputHead::Lm {
                tied,
                biases,
                transform: Some(transform),
            },
            Head::Plain => OutputHead::Lm {
                tied,
                biases,
                transform: None,
            },
            Head::RemBert => {
                let out =
                    raw.size_or(&["output_embedding_size"], Sym::EmbeddingDim, 1664, &reason)?;
                parts.extras.extend(rembert_head(hidden, out, vocab));
                OutputHead::None
            }
        };
        if b.table_in_head && tied {
            token_embedding = None;
            if let OutputHead::Lm { tied, .. } = &mut output {
                *tied = false;
            }
        }
        if b.head_bias_is_norm
            && let OutputHead::Lm { biases, .. } = &mut output
            && *biases > 0
        {
            // Only the head's own `lm_head.bias` is a parameter of the head class; an
            // untied decoder's bias belongs to its `nn.Linear` and stays the head's.
            parts.extras.push(Extra::vector(
                "lm_head.bias",
                "output bias",
                Category::Norm,
                Expr::sym(Sym::Vocab, vocab),
            ));
            *biases = biases.saturating_sub(1);
        }
        if b.causal_pooler {
            pooler = Some(Linear {
                input: hidden,
                output: hidden,
                bias: true,
            });
        }
    } else if b.base_pooler {
        pooler = Some(Linear {
            input: hidden,
            output: hidden,
            bias: true,
        });
    }
    // A causal class caches keys and values (it is meant to run with `is_decoder`, which
    // transformers asks for), the bare model only with `is_decoder`; `BigBird`'s
    // block-sparse attention never writes the cache.
    let decoder = raw.flag_or("is_decoder", false, &reason)?;
    let cached = match built {
        Built::Causal => true,
        Built::Masked => false,
        Built::Base => decoder,
    } && !block_sparse_only(raw, b, positions)?;
    let stack = Stack {
        role: if cached {
            StackRole::Decoder
        } else {
            StackRole::Encoder
        },
        position,
        token_type: types.map(|rows| Table { rows, dim: width }),
        embedding_norm: b.embedding_norm.then(|| Norm::layer_norm(width)),
        layers: Layers::repeat(parts.layer, n as u64),
        final_norm: parts.final_norm,
    };
    Ok(ModelSpec {
        name: String::new(),
        model_type: family.model_type.to_owned(),
        architecture,
        hidden_size: hidden,
        vocab_size: vocab,
        context_length: None,
        token_embedding,
        extra_token_tables: 0,
        embedding_projections: if projected {
            vec![Linear {
                input: width,
                output: hidden,
                bias: true,
            }]
        } else {
            Vec::new()
        },
        stacks: vec![stack],
        head: output,
        pooler,
        assumptions: Vec::new(),
        warnings: Vec::new(),
        symbol_sources: BTreeMap::new(),
        extras: parts.extras,
        estimate: None,
        image_tokens: None,
        quantization: None,
        training: None,
        facts: llmsize_core::facts::TypeFacts::NONE,
    })
}

/// `BigBird` with `attention_type: "block_sparse"`: its block-sparse attention caches
/// nothing, and transformers uses it for every prompt longer than `(5 + 2·num_random_blocks)
/// · block_size` tokens, so for any model whose positions allow such prompts the cache is
/// counted empty. (Shorter prompts switch to full attention, which does cache.)
fn block_sparse_only(
    raw: &mut RawConfig<'_>,
    b: &Bert,
    positions: u64,
) -> Result<bool, ConfigError> {
    if !b.block_sparse {
        return Ok(false);
    }
    let reason = format!("absent; `{}` default", b.class);
    let kind = match raw.value("attention_type") {
        None => {
            raw.assume("attention_type", "block_sparse", &reason);
            "block_sparse".to_owned()
        }
        Some(Value::String(s)) => s.clone(),
        Some(v) => {
            return Err(raw.invalid("attention_type", v, "`block_sparse` or `original_full`"));
        }
    };
    if kind != "block_sparse" || raw.flag_or("add_cross_attention", false, &reason)? {
        return Ok(false);
    }
    let block = raw.size_or(&["block_size"], Sym::Named("block_size"), 64, &reason)?;
    let random = raw.uint("num_random_blocks")?.unwrap_or_else(|| {
        raw.assume("num_random_blocks", 3, &reason);
        3
    });
    let attend = random
        .checked_mul(2)
        .and_then(|r| r.checked_add(5))
        .and_then(|r| r.checked_mul(block))
        .unwrap_or(u64::MAX);
    Ok(positions > attend)
}

/// A biased or unbiased q/k/v/o projection set `d → d`, as tensors of the layer.
pub(super) fn cross_attention_extras(
    hidden: u64,
    qkv_bias: bool,
    o_bias: bool,
    prefix: &'static str,
) -> Vec<Extra> {
    cross_attention_from(
        hidden,
        hidden,
        (qkv_bias, o_bias),
        prefix,
        ["q", "k", "v", "o"],
    )
}

/// [`cross_attention_extras`] whose k/v read `kv_input` features (`TrOCR`'s
/// `cross_attention_hidden_size`, the encoder's width).
pub(super) fn cross_attention_from(
    hidden: u64,
    kv_input: u64,
    (qkv_bias, o_bias): (bool, bool),
    prefix: &'static str,
    [q, k, v, o]: [&'static str; 4],
) -> Vec<Extra> {
    let d = || Expr::sym(Sym::Hidden, hidden);
    let part = "cross-attention (not run without an encoder)";
    let mut out = Vec::new();
    for (name, bias, input) in [
        (q, qkv_bias, d()),
        (k, qkv_bias, Expr::Lit(kv_input)),
        (v, qkv_bias, Expr::Lit(kv_input)),
        (o, o_bias, d()),
    ] {
        let input = if kv_input == hidden { d() } else { input };
        out.push(Extra::linear(
            format!("{prefix}.{name}.weight"),
            part,
            Category::Attention,
            input,
            d(),
        ));
        if bias {
            out.push(Extra::vector(
                format!("{prefix}.{name}.bias"),
                part,
                Category::Attention,
                d(),
            ));
        }
    }
    out
}

/// A `LayerNorm`'s weight and bias as tensors.
pub(super) fn norm_extras(dim: u64, name: &'static str) -> Vec<Extra> {
    ["weight", "bias"]
        .into_iter()
        .map(|w| {
            Extra::vector(
                format!("{name}.{w}"),
                "norm",
                Category::Norm,
                Expr::sym(Sym::NormDim, dim),
            )
        })
        .collect()
}

/// `RemBertLMPredictionHead`: `dense` `d → O` with a bias, `LayerNorm(O)`, `decoder`
/// `O → V` with a bias.
fn rembert_head(hidden: u64, out: u64, vocab: u64) -> Vec<Extra> {
    let o = || Expr::sym(Sym::EmbeddingDim, out);
    let v = || Expr::sym(Sym::Vocab, vocab);
    let mut e = vec![
        Extra::linear(
            "cls.predictions.dense.weight",
            "head transform",
            Category::LmHeadTransform,
            Expr::sym(Sym::Hidden, hidden),
            o(),
        ),
        Extra::vector(
            "cls.predictions.dense.bias",
            "head transform",
            Category::LmHeadTransform,
            o(),
        ),
    ];
    e.extend(norm_extras(out, "cls.predictions.LayerNorm"));
    e.push(Extra::linear(
        "cls.predictions.decoder.weight",
        "output",
        Category::LmHead,
        o(),
        v(),
    ));
    e.push(Extra::vector(
        "cls.predictions.decoder.bias",
        "output",
        Category::LmHead,
        v(),
    ));
    e
}

/// `RoCBertEmbeddings`: pronunciation and shape tables (always built), and with
/// `concat_input` the `map_inputs_layer` from the concatenated embeddings to `d`.
pub(super) fn roc_bert(
    raw: &mut RawConfig<'_>,
    b: &Bert,
    parts: &mut Parts,
) -> Result<(), ConfigError> {
    let reason = format!("absent; `{}` default", b.class);
    let pv = raw.size_or(
        &["pronunciation_vocab_size"],
        Sym::Named("pronunciation_vocab"),
        910,
        &reason,
    )?;
    let pd = raw.size_or(
        &["pronunciation_embed_dim"],
        Sym::Named("pronunciation_dim"),
        768,
        &reason,
    )?;
    let sv = raw.size_or(
        &["shape_vocab_size"],
        Sym::Named("shape_vocab"),
        24858,
        &reason,
    )?;
    let sd = raw.size_or(&["shape_embed_dim"], Sym::Named("shape_dim"), 512, &reason)?;
    let concat = raw.flag_or("concat_input", true, &reason)?;
    let pron = raw.flag_or("enable_pronunciation", true, &reason)?;
    let shape = raw.flag_or("enable_shape", true, &reason)?;
    parts.extras.push(Extra::table(
        "embeddings.pronunciation_embed.weight",
        "pronunciation table",
        Category::TokenEmbedding,
        Expr::sym(Sym::Named("pronunciation_vocab"), pv),
        Expr::sym(Sym::Named("pronunciation_dim"), pd),
    ));
    parts.extras.push(Extra::table(
        "embeddings.shape_embed.weight",
        "shape table",
        Category::TokenEmbedding,
        Expr::sym(Sym::Named("shape_vocab"), sv),
        Expr::sym(Sym::Named("shape_dim"), sd),
    ));
    if concat {
        let mut input = parts.hidden;
        for (on, dim) in [(pron, pd), (shape, sd)] {
            if on {
                input = input
                    .checked_add(dim)
                    .ok_or_else(|| raw.invalid("shape_embed_dim", &dim.into(), "a smaller size"))?;
            }
        }
        let d = Expr::sym(Sym::Hidden, parts.hidden);
        parts.extras.push(Extra::linear(
            "embeddings.map_inputs_layer.weight",
            "input mapping",
            Category::EmbeddingProjection,
            Expr::Lit(input),
            d.clone(),
        ));
        parts.extras.push(Extra::vector(
            "embeddings.map_inputs_layer.bias",
            "input mapping",
            Category::EmbeddingProjection,
            d,
        ));
    }
    Ok(())
}

/// X-MOD (`modeling_xmod.py`): one bottleneck adapter per language in every layer's output
/// (`dense1` `d → d/adapter_reduction_factor`, `dense2` back, both biased), an
/// `adapter_layer_norm` when asked, and with `pre_norm` a final `LayerNorm`.
pub(super) fn xmod(
    raw: &mut RawConfig<'_>,
    b: &Bert,
    parts: &mut Parts,
) -> Result<(), ConfigError> {
    let reason = format!("absent; `{}` default", b.class);
    let factor = raw.size_or(
        &["adapter_reduction_factor"],
        Sym::Named("adapter_reduction_factor"),
        2,
        &reason,
    )?;
    let adapter_norm = raw.flag_or("adapter_layer_norm", false, &reason)?;
    let pre_norm = raw.flag_or("pre_norm", false, &reason)?;
    let languages = match raw.value("languages") {
        None => {
            raw.assume("languages", "[\"en_XX\"]", &reason);
            1
        }
        Some(Value::Array(a)) => {
            // `nn.ModuleDict` keys: repeated names are one adapter.
            let names: BTreeSet<String> = a
                .iter()
                .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
                .collect();
            names.len() as u64
        }
        Some(v) => return Err(raw.invalid("languages", v, "a list of language codes")),
    };
    let d = parts.hidden;
    let r = raw.div(d, factor, "hidden_size / adapter_reduction_factor")?;
    let part = "language adapters";
    let langs = Expr::sym(Sym::Named("languages"), languages);
    let dd = || Expr::sym(Sym::Hidden, d);
    let rr = || Expr::sym(Sym::Named("adapter_dim"), r);
    if languages > 0 && r > 0 {
        parts.layer.extras.extend([
            Extra::linear(
                "output.adapter.dense1.weight",
                part,
                Category::Ffn,
                dd(),
                rr(),
            )
            .times(langs.clone()),
            Extra::vector("output.adapter.dense1.bias", part, Category::Ffn, rr())
                .times(langs.clone()),
            Extra::linear(
                "output.adapter.dense2.weight",
                part,
                Category::Ffn,
                rr(),
                dd(),
            )
            .times(langs.clone()),
            Extra::vector("output.adapter.dense2.bias", part, Category::Ffn, dd()).times(langs),
        ]);
    } else if languages > 0 {
        // A bottleneck of 0 features still has `dense2`'s bias.
        parts.layer.extras.push(
            Extra::vector("output.adapter.dense2.bias", part, Category::Ffn, dd()).times(langs),
        );
    }
    if adapter_norm {
        parts
            .layer
            .extras
            .extend(norm_extras(d, "output.adapter_layer_norm"));
    }
    if pre_norm {
        parts.final_norm = Some(Norm {
            kind: NormKind::LayerNorm,
            dim: d,
            bias: true,
        });
    }
    Ok(())
}

/// ERNIE (`modeling_ernie.py`): with `use_task_id`, a `task_type_embeddings` table of
/// `task_type_vocab_size × d`.
pub(super) fn ernie(
    raw: &mut RawConfig<'_>,
    b: &Bert,
    parts: &mut Parts,
) -> Result<(), ConfigError> {
    let reason = format!("absent; `{}` default", b.class);
    if raw.flag_or("use_task_id", false, &reason)? {
        let rows = raw.size_or(
            &["task_type_vocab_size"],
            Sym::Named("task_types"),
            3,
            &reason,
        )?;
        parts.extras.push(Extra::table(
            "embeddings.task_type_embeddings.weight",
            "task-type table",
            Category::TokenEmbedding,
            Expr::sym(Sym::Named("task_types"), rows),
            Expr::sym(Sym::Hidden, parts.hidden),
        ));
    }
    Ok(())
}
