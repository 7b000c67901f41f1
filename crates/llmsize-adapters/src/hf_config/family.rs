//! Model types as data.
//!
//! transformers builds ~270 causal-LM and vision-language model types; most are one decoder
//! block with a few switches (biases on some projections, q/k norms, sandwich norms, shared
//! experts, dense-first layers, MLA, tying). A model type is therefore a [`Family`]: which
//! keys it reads with their class defaults, and either a [`Block`] (the switches of the one
//! generic decoder reader, [`read_block`]) or, for what is really new (a state-space mixer, a
//! vision tower), a function of its own. Each family file under `families/` is a reviewable
//! page of such entries; `families::REGISTRY` dispatches.

use llmsize_core::expr::Sym;
use llmsize_core::spec::{
    Attention, Ffn, LatentAttention, Layer, Mlp, ModelSpec, Moe, Norm, NormKind, StandardAttention,
};

use super::architecture;
use super::decoder::{Decoder, mha, mlp};
use super::raw::RawConfig;
use super::runs::Runs;
use crate::error::ConfigError;

/// One model type: how its `config.json` is read.
pub(crate) struct Family {
    /// The `model_type` it reads.
    pub model_type: &'static str,
    /// Its configuration class, named in assumptions (`CohereConfig`).
    pub config_class: &'static str,
    /// The class counted when `architectures` names none (`CohereForCausalLM`).
    pub architecture: &'static str,
    /// How the config becomes a spec.
    pub read: Read,
}

/// How a family's config becomes a spec.
pub(crate) enum Read {
    /// The generic decoder block with these switches.
    Block(&'static Block),
    /// Code of its own (a new mixer or layer kind, an encoder, a vision tower).
    Code(ReadFn),
}

impl Family {
    /// A table entry read by the generic block with `block`'s switches.
    pub(crate) const fn block(
        model_type: &'static str,
        config_class: &'static str,
        architecture: &'static str,
        block: &'static Block,
    ) -> Self {
        Self {
            model_type,
            config_class,
            architecture,
            read: Read::Block(block),
        }
    }

    /// A table entry read by code of its own.
    pub(crate) const fn code(
        model_type: &'static str,
        config_class: &'static str,
        architecture: &'static str,
        read: ReadFn,
    ) -> Self {
        Self {
            model_type,
            config_class,
            architecture,
            read: Read::Code(read),
        }
    }
}

/// A family's own reader: the config, the family entry, the head asked for.
pub(crate) type ReadFn =
    fn(&mut RawConfig<'_>, &Family, super::HeadChoice) -> Result<ModelSpec, ConfigError>;

/// A change a family makes to the spec the block built (a rare extra tensor), in its file.
pub(crate) type TweakFn = fn(&mut RawConfig<'_>, &mut ModelSpec) -> Result<(), ConfigError>;

/// A size read from the config: the key spellings tried in order, and the class default
/// when none is present (`None`: the key is required).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Size {
    pub keys: &'static [&'static str],
    pub default: Option<u64>,
}

/// A size that must be in the config.
pub(crate) const fn key(keys: &'static [&'static str]) -> Size {
    Size {
        keys,
        default: None,
    }
}

/// A size with the configuration class's default.
pub(crate) const fn key_or(keys: &'static [&'static str], default: u64) -> Size {
    Size {
        keys,
        default: Some(default),
    }
}

/// A boolean switch of the block: fixed by the modeling code, or read from a key with the
/// class default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Switch {
    /// Always this.
    Fixed(bool),
    /// `config[key]`, else the default.
    Key(&'static str, bool),
}

/// Never.
pub(crate) const NO: Switch = Switch::Fixed(false);
/// Always.
pub(crate) const YES: Switch = Switch::Fixed(true);

/// How the head width is found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HeadDim {
    /// `head_dim` when present (or `null`-free), else `hidden / heads`.
    KeyOrSplit,
    /// `head_dim` when present, else this class default.
    KeyOr(u64),
    /// Always `hidden / heads` (the class has no `head_dim` field).
    Split,
    /// `head_dim` when present, else `hidden // heads` rounded down, as
    /// `getattr(config, "head_dim", hidden_size // num_attention_heads)` computes it
    /// (GLM-4-MoE, Aria, Qwen-VL-MoE text).
    KeyOrFloor,
    /// Always `hidden // heads` rounded down, whatever the config says (GLM-4V text).
    Floor,
}

/// Where q/k norms sit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum QkNorm {
    /// None.
    None,
    /// One norm of `d_h` shared by all heads (Qwen3, Gemma 3).
    PerHead,
    /// Over the full projection width (`OLMo2`: `n_h·d_h` and `n_kv·d_h`).
    FullWidth,
}

/// MHA/GQA/MQA switches.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StandardRule {
    /// Biases on q, k and v.
    pub qkv_bias: Switch,
    /// Bias on the output projection.
    pub o_bias: Switch,
    /// Where q/k norms sit.
    pub qk_norm: QkNorm,
    /// The switch that turns the q/k norms on (`use_qk_norm`).
    pub qk_norm_on: Switch,
    /// One fused `qkv_proj` (counts the same; named for formats).
    pub fused: bool,
    /// gpt-oss attention sinks.
    pub sinks: Switch,
}

/// Self-attention of the block.
#[derive(Debug, Clone, Copy)]
pub(crate) enum AttentionRule {
    /// MHA/GQA/MQA.
    Standard(StandardRule),
    /// DeepSeek's multi-head latent attention with the `DeepseekV3Config` keys
    /// (`q_lora_rank` default when absent, `kv_lora_rank`, `qk_nope_head_dim`, …).
    Latent {
        /// `q_lora_rank` when the key is absent (`None`: a full `q_proj`).
        q_lora_default: Option<u64>,
        /// Bias on the down projections and `o_proj`.
        bias: Switch,
    },
}

/// Llama's attention: no biases unless `attention_bias`, no q/k norms.
pub(crate) const LLAMA_ATTENTION: StandardRule = StandardRule {
    qkv_bias: Switch::Key("attention_bias", false),
    o_bias: Switch::Key("attention_bias", false),
    qk_norm: QkNorm::None,
    qk_norm_on: YES,
    fused: false,
    sinks: NO,
};

/// No biases anywhere, no q/k norms (Mistral).
pub(crate) const PLAIN_ATTENTION: StandardRule = StandardRule {
    qkv_bias: NO,
    o_bias: NO,
    ..LLAMA_ATTENTION
};

/// The block's norms.
#[derive(Debug, Clone, Copy)]
pub(crate) struct NormRule {
    /// `RMSNorm` or `LayerNorm`.
    pub kind: NormKind,
    /// `LayerNorm` with a bias vector.
    pub bias: Switch,
    /// Norms per layer (2: pre-attention and pre-MLP; 4: Gemma 2's sandwich; 1: parallel).
    pub per_layer: usize,
}

/// `RMSNorm`, two per layer.
pub(crate) const RMS2: NormRule = NormRule {
    kind: NormKind::RmsNorm,
    bias: NO,
    per_layer: 2,
};

/// The dense MLP.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MlpRule {
    /// Inner width `d_ff`.
    pub width: Size,
    /// Gated (`gate_proj`, `up_proj`, `down_proj`).
    pub gated: bool,
    /// Biases on the up (and gate) projections.
    pub up_bias: Switch,
    /// Bias on the down projection.
    pub down_bias: Switch,
}

/// Llama's MLP: gated, biases only with `mlp_bias`.
pub(crate) const LLAMA_MLP: MlpRule = MlpRule {
    width: key(&["intermediate_size"]),
    gated: true,
    up_bias: Switch::Key("mlp_bias", false),
    down_bias: Switch::Key("mlp_bias", false),
};

/// Llama's gated MLP for a class without `mlp_bias`: no biases, `width` wide.
pub(crate) const fn unbiased_mlp(width: Size) -> MlpRule {
    MlpRule {
        width,
        up_bias: NO,
        down_bias: NO,
        ..LLAMA_MLP
    }
}

/// The shared expert(s) of an MoE layer.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Shared {
    /// None.
    None,
    /// One MLP of this width (`shared_expert_intermediate_size`).
    Width(Size),
    /// This many experts of the routed width, as one MLP (`n_shared_experts`); 0 is none.
    Count(Size),
}

/// Which layers are MoE.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sparsity {
    /// The first `first_k_dense_replace` layers are dense.
    pub first_dense: Option<Size>,
    /// Every `decoder_sparse_step`-th layer is MoE (`(i + 1) % step == 0`).
    pub step: Option<&'static str>,
    /// Layers listed here are dense (`mlp_only_layers`).
    pub dense_list: Option<&'static str>,
}

/// Every layer MoE.
pub(crate) const ALL_SPARSE: Sparsity = Sparsity {
    first_dense: None,
    step: None,
    dense_list: None,
};

/// The mixture of experts.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MoeRule {
    /// Routed experts `E`.
    pub experts: Size,
    /// Experts per token `k`.
    pub top_k: Size,
    /// One expert's inner width.
    pub expert_width: Size,
    /// A selection-only correction bias of `E` beside the router, held as a parameter
    /// that never requires grad ([`llmsize_core::spec::RouterBias::Correction`]).
    pub correction_bias: Switch,
    /// Biases on the experts' projections.
    pub expert_bias: Switch,
    /// Shared experts.
    pub shared: Shared,
    /// A sigmoid gate `d → 1` on the shared expert (Qwen2-MoE).
    pub shared_gate: bool,
    /// Which layers are sparse; the others use the block's dense MLP.
    pub sparsity: Sparsity,
}

/// Which layers attend in a sliding window. `layer_types` wins whenever the config has it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Windows {
    /// Global attention everywhere (unless `layer_types` says otherwise).
    None,
    /// Every layer slides when `sliding_window` is set (Mistral).
    All,
    /// Even layers slide (Gemma 2).
    Alternate,
    /// `(i + 1) % sliding_window_pattern != 0` slides, default pattern given (Gemma 3).
    Pattern(u64),
    /// With `use_sliding_window`, layers from `max_window_layers` on (Qwen2/3).
    FromLayer(u64),
}

/// The generic decoder-only block: embeddings, `L` layers of norm → attention → norm → MLP
/// (or MoE), a final norm and an optional untied head.
pub(crate) struct Block {
    /// `d`.
    pub hidden: Size,
    /// `L`.
    pub layers: Size,
    /// `n_h`.
    pub heads: Size,
    /// `V`.
    pub vocab: Size,
    /// `n_kv` when `num_key_value_heads` is absent (`None`: the query heads).
    pub kv_default: Option<u64>,
    /// How `d_h` is found.
    pub head_dim: HeadDim,
    /// Self-attention.
    pub attention: AttentionRule,
    /// The dense MLP (every layer, or the dense ones of an MoE model).
    pub mlp: MlpRule,
    /// MoE layers.
    pub moe: Option<MoeRule>,
    /// Norms.
    pub norm: NormRule,
    /// `tie_word_embeddings` default.
    pub tie: bool,
    /// Sliding-window layers.
    pub windows: Windows,
    /// A family's own change to the built spec.
    pub tweak: Option<TweakFn>,
}

/// Llama itself, the base most entries change a few fields of (`..LLAMA`).
pub(crate) const LLAMA: Block = Block {
    hidden: key(&["hidden_size"]),
    layers: key(&["num_hidden_layers"]),
    heads: key(&["num_attention_heads"]),
    vocab: key(&["vocab_size"]),
    kv_default: None,
    head_dim: HeadDim::KeyOrSplit,
    attention: AttentionRule::Standard(LLAMA_ATTENTION),
    mlp: LLAMA_MLP,
    moe: None,
    norm: RMS2,
    tie: false,
    windows: Windows::None,
    tweak: None,
};

/// Reads sizes and switches with the family's defaults, recording each assumption.
pub(crate) struct Reader<'r, 'a> {
    pub raw: &'r mut RawConfig<'a>,
    pub class: &'static str,
}

impl Reader<'_, '_> {
    fn reason(&self) -> String {
        format!("absent; `{}` default", self.class)
    }

    /// A size, its first present key recorded as the symbol's source.
    pub(crate) fn size(&mut self, s: Size, symbol: Sym) -> Result<u64, ConfigError> {
        match s.default {
            None => self.raw.size(s.keys, symbol),
            Some(d) => {
                let reason = self.reason();
                self.raw.size_or(s.keys, symbol, d, &reason)
            }
        }
    }

    /// A size that may be 0 (a count of shared experts).
    pub(crate) fn count(&mut self, s: Size) -> Result<u64, ConfigError> {
        for k in s.keys {
            if let Some(n) = self.raw.uint(k)? {
                return Ok(n);
            }
        }
        match s.default {
            Some(d) => {
                let reason = self.reason();
                let k = s.keys.first().copied().unwrap_or_default();
                self.raw.assume(k, d, &reason);
                Ok(d)
            }
            None => Err(self
                .raw
                .missing(&s.keys.join("` or `"), "a non-negative integer")),
        }
    }

    /// A switch.
    pub(crate) fn switch(&mut self, s: Switch) -> Result<bool, ConfigError> {
        match s {
            Switch::Fixed(b) => Ok(b),
            Switch::Key(k, d) => {
                let reason = self.reason();
                self.raw.flag_or(k, d, &reason)
            }
        }
    }
}

/// Every layer kind of every stack rewritten by `f`, the runs kept: work in the number of
/// kinds and runs, never in the number of layers (a family's tweak that adds a tensor or a
/// norm to every layer).
pub(crate) fn map_kinds(spec: &mut ModelSpec, mut f: impl FnMut(&mut Layer)) {
    let never: Result<(), std::convert::Infallible> = try_map_kinds(spec, |layer| {
        let mut l = layer.clone();
        f(&mut l);
        Ok(l)
    });
    let Ok(()) = never;
}

/// Every layer kind of every stack rebuilt by `f`, which may fail; each kind is built once.
pub(crate) fn try_map_kinds<E>(
    spec: &mut ModelSpec,
    mut f: impl FnMut(&Layer) -> Result<Layer, E>,
) -> Result<(), E> {
    for stack in &mut spec.stacks {
        let all = Runs::uniform((), stack.layers.len());
        stack.layers = super::runs::remap(&stack.layers, &all, |l, ()| f(l))?;
    }
    Ok(())
}

/// Every stack's layers rebuilt by `f(layer, key)` with layer `i`'s value `i` of `keys`, a
/// per-layer rule held as runs (which layers are past an index, which are listed): each
/// distinct (kind, key) is built once, so the work is in the number of runs.
pub(crate) fn map_layers_by<K: Clone + std::hash::Hash + Eq>(
    spec: &mut ModelSpec,
    keys: &Runs<K>,
    mut f: impl FnMut(&Layer, &K) -> Result<Layer, ConfigError>,
) -> Result<(), ConfigError> {
    for stack in &mut spec.stacks {
        stack.layers = super::runs::remap(&stack.layers, keys, &mut f)?;
    }
    Ok(())
}

/// Read a [`Block`] family.
pub(crate) fn read_block(
    raw: &mut RawConfig<'_>,
    family: &Family,
    b: &Block,
) -> Result<ModelSpec, ConfigError> {
    let mut r = Reader {
        raw,
        class: family.config_class,
    };
    let hidden = r.size(b.hidden, Sym::Hidden)?;
    let layers = r.size(b.layers, Sym::Layers)?;
    let vocab = r.size(b.vocab, Sym::Vocab)?;
    let attention = block_attention(&mut r, b, hidden)?;
    let norm = block_norm(&mut r, b.norm, hidden)?;
    let n = r.raw.bound_layers(
        b.layers
            .keys
            .first()
            .copied()
            .unwrap_or("num_hidden_layers"),
        layers,
    )?;
    // Which layers are MoE, and the MoE block.
    let (is_sparse, moe) = match &b.moe {
        Some(m) => {
            let (pattern, moe) = block_moe(&mut r, m, hidden, layers)?;
            (pattern, Some(moe))
        }
        None => (Runs::uniform(false, n), None),
    };
    let dense = if moe.is_none() || is_sparse.any(|s| !s) {
        let width = r.size(b.mlp.width, Sym::Ffn)?;
        Some(Mlp {
            hidden,
            intermediate: width,
            gated: b.mlp.gated,
            up_bias: r.switch(b.mlp.up_bias)?,
            down_bias: r.switch(b.mlp.down_bias)?,
        })
    } else {
        None
    };
    let tied = {
        let reason = r.reason();
        r.raw.flag_or("tie_word_embeddings", b.tie, &reason)?
    };
    let (slides, window) = windows(r.raw, b.windows, family.config_class, n)?;
    let stack = is_sparse.zip_layers(&slides, |&(sparse, slides)| Layer {
        attention: attention.clone(),
        cross_attention: None,
        ffn: match (&moe, sparse, dense) {
            (Some(m), true, _) => Ffn::Moe(m.clone()),
            (_, _, Some(d)) => Ffn::Dense(d),
            // Unreachable: a dense MLP is read whenever a layer is not sparse.
            _ => Ffn::Absent,
        },
        norms: vec![norm; b.norm.per_layer],
        sliding_window: window_of(slides, window),
        extras: Vec::new(),
        state: None,
    });
    let mut spec = Decoder::new(
        family.model_type,
        architecture(r.raw, family.architecture),
        hidden,
        vocab,
        stack,
        Some(norm),
        tied,
    )
    .into_spec();
    if let Some(tweak) = b.tweak {
        tweak(r.raw, &mut spec)?;
    }
    Ok(spec)
}

/// The block's norm over `dim`.
pub(crate) fn block_norm(
    r: &mut Reader<'_, '_>,
    rule: NormRule,
    dim: u64,
) -> Result<Norm, ConfigError> {
    Ok(match rule.kind {
        NormKind::RmsNorm => Norm::rms_norm(dim),
        NormKind::LayerNorm => Norm {
            bias: r.switch(rule.bias)?,
            ..Norm::layer_norm(dim)
        },
    })
}

/// The block's self-attention.
pub(crate) fn block_attention(
    r: &mut Reader<'_, '_>,
    b: &Block,
    hidden: u64,
) -> Result<Attention, ConfigError> {
    let heads = r.size(b.heads, Sym::Heads)?;
    match b.attention {
        AttentionRule::Standard(StandardRule {
            qkv_bias,
            o_bias,
            qk_norm,
            qk_norm_on,
            fused,
            sinks,
        }) => {
            let kv = super::decoder::kv_heads(r.raw, heads, r.class, b.kv_default)?;
            let head_dim = match b.head_dim {
                HeadDim::KeyOrSplit => r.raw.head_dim(
                    &["head_dim"],
                    hidden,
                    "hidden_size",
                    heads,
                    "num_attention_heads",
                )?,
                HeadDim::Split => {
                    r.raw
                        .derived_head_dim(hidden, "hidden_size", heads, "num_attention_heads")?
                }
                HeadDim::KeyOr(d) => r.size(key_or(&["head_dim"], d), Sym::HeadDim)?,
                HeadDim::KeyOrFloor | HeadDim::Floor => {
                    match r
                        .raw
                        .size_opt("head_dim")?
                        .filter(|_| b.head_dim != HeadDim::Floor)
                    {
                        Some(n) => {
                            r.raw.source(Sym::HeadDim, "head_dim");
                            n
                        }
                        None if heads <= hidden => {
                            let what = "hidden_size // num_attention_heads";
                            r.raw.source(Sym::HeadDim, what);
                            r.raw.div(hidden, heads, what)?
                        }
                        None => {
                            return Err(r.raw.invalid(
                                "num_attention_heads",
                                &heads.into(),
                                &format!("at most `hidden_size` ({hidden})"),
                            ));
                        }
                    }
                }
            };
            let mut a: StandardAttention = mha(hidden, heads, kv, head_dim, false);
            let qkv = r.switch(qkv_bias)?;
            a.q_bias = qkv;
            a.k_bias = qkv;
            a.v_bias = qkv;
            a.o_bias = r.switch(o_bias)?;
            a.fused_qkv = fused;
            a.sinks = r.switch(sinks)?;
            if qk_norm != QkNorm::None && r.switch(qk_norm_on)? {
                let kind = b.norm.kind;
                let make = |dim| Norm {
                    kind,
                    dim,
                    bias: false,
                };
                let (q, k) = match qk_norm {
                    QkNorm::PerHead => (head_dim, head_dim),
                    _ => (
                        r.raw.mul(heads, head_dim, "num_attention_heads·head_dim")?,
                        r.raw.mul(kv, head_dim, "num_key_value_heads·head_dim")?,
                    ),
                };
                a.q_norm = Some(make(q));
                a.k_norm = Some(make(k));
            }
            Ok(Attention::Standard(a))
        }
        AttentionRule::Latent {
            q_lora_default,
            bias,
        } => {
            let q_lora_rank = if r.raw.has("q_lora_rank") {
                r.raw.size_opt("q_lora_rank")?
            } else {
                let reason = r.reason();
                match q_lora_default {
                    Some(d) => r.raw.assume("q_lora_rank", d, &reason),
                    None => r.raw.assume("q_lora_rank", "null", &reason),
                }
                q_lora_default
            };
            if q_lora_rank.is_some() {
                r.raw.source(Sym::QueryRank, "q_lora_rank");
            }
            Ok(Attention::Latent(LatentAttention {
                hidden,
                num_heads: heads,
                q_lora_rank,
                kv_lora_rank: r.raw.size(&["kv_lora_rank"], Sym::KvRank)?,
                qk_nope_head_dim: r.raw.size(&["qk_nope_head_dim"], Sym::NopeDim)?,
                qk_rope_head_dim: r.raw.size(&["qk_rope_head_dim"], Sym::RopeDim)?,
                v_head_dim: r.raw.size(&["v_head_dim"], Sym::ValueDim)?,
                bias: r.switch(bias)?,
                indexer_key_dim: None,
                category: llmsize_core::Category::Attention,
            }))
        }
    }
}

/// The MoE block and which layers use it.
pub(crate) fn block_moe(
    r: &mut Reader<'_, '_>,
    m: &MoeRule,
    hidden: u64,
    layers: u64,
) -> Result<(Runs<bool>, Moe), ConfigError> {
    let experts = r.size(m.experts, Sym::Experts)?;
    let top_k = r.size(m.top_k, Sym::TopK)?;
    if top_k > experts {
        let k = m
            .top_k
            .keys
            .first()
            .copied()
            .unwrap_or("num_experts_per_tok");
        return Err(r.raw.invalid(
            k,
            &top_k.into(),
            &format!("at most the number of experts ({experts})"),
        ));
    }
    let width = r.size(m.expert_width, Sym::ExpertFfn)?;
    let expert_bias = r.switch(m.expert_bias)?;
    let shared = match m.shared {
        Shared::None => None,
        Shared::Width(s) => Some(mlp(hidden, r.size(s, Sym::SharedFfn)?, true, false)),
        Shared::Count(s) => match r.count(s)? {
            0 => None,
            c => {
                let k = s.keys.first().copied().unwrap_or_default();
                let w = r.raw.mul(width, c, k)?;
                r.raw.source(Sym::SharedFfn, &format!("expert width·{k}"));
                Some(mlp(hidden, w, true, false))
            }
        },
    };
    let moe = Moe {
        num_experts: experts,
        experts_per_token: top_k,
        expert: Mlp {
            hidden,
            intermediate: width,
            gated: true,
            up_bias: expert_bias,
            down_bias: expert_bias,
        },
        router_bias: if r.switch(m.correction_bias)? {
            llmsize_core::spec::RouterBias::Correction
        } else {
            llmsize_core::spec::RouterBias::None
        },
        router: true,
        shared,
        shared_gate: m.shared_gate,
    };
    let n = r.raw.bound_layers("num_hidden_layers", layers)?;
    let first = match m.sparsity.first_dense {
        Some(s) => r.count(s)?,
        None => 0,
    };
    let step = match m.sparsity.step {
        // Zero is an error, as transformers' `(i + 1) % step` would be.
        Some(k) => r.raw.size_opt(k)?.unwrap_or(1),
        None => 1,
    };
    let listed = match m.sparsity.dense_list {
        Some(k) => index_list(r.raw, k, layers)?,
        None => Vec::new(),
    };
    // Sparse where `i ≥ first`, `(i + 1) % step == 0` and `i` is not listed (nor derived)
    // dense: each rule as runs, combined run by run.
    let listed = Runs::marked(n, listed, &true, &false);
    let derived = r
        .raw
        .derived
        .dense
        .clone()
        .unwrap_or_else(|| Runs::uniform(false, n));
    let pattern = Runs::every(n, step)
        .zip(&Runs::from_index(n, first))
        .zip(&listed.zip(&derived))
        .map(|&((every, from), (listed, derived))| every && from && !listed && !derived);
    Ok((pattern, moe))
}

/// A list of layer indices, each below `layers`.
pub(crate) fn index_list(
    raw: &RawConfig<'_>,
    key: &str,
    layers: u64,
) -> Result<Vec<u64>, ConfigError> {
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

/// The config classes of transformers 5.24 whose `sliding_window` field defaults to a number
/// (read off every `configuration_*.py`): a config that leaves the key out still slides by
/// it, where an explicit `null` is no window. `MistralConfig.sliding_window: int | None = 4096`.
const SLIDING_WINDOW_DEFAULTS: &[(&str, u64)] = &[
    ("AfmoeConfig", 1024),
    ("BeamConfig", 512),
    ("BltPatcherConfig", 512),
    ("Cohere2Config", 4096),
    ("Cohere2MoeConfig", 4096),
    ("CohereCompassTextConfig", 4096),
    ("CwmConfig", 8192),
    ("DeepseekOcr2VisionEncoderConfig", 4096),
    ("DeepseekV4Config", 128),
    ("DiffusionGemmaTextConfig", 512),
    ("DoryConfig", 1024),
    ("Dots1Config", 4096),
    ("EmbeddingGemma2TextConfig", 512),
    ("EsmFold2Config", 128),
    ("Exaone4Config", 4096),
    ("ExaoneMoeConfig", 4096),
    ("FlintConfig", 513),
    ("Gemma2Config", 4096),
    ("Gemma3TextConfig", 4096),
    ("Gemma3nTextConfig", 512),
    ("Gemma4TextConfig", 512),
    ("Gemma4UnifiedTextConfig", 1024),
    ("GptOssConfig", 128),
    ("GraniteSWAConfig", 128),
    ("GraniteMoeSWAConfig", 128),
    ("Kolibri1Config", 513),
    ("KyutaiSpeechToTextConfig", 375),
    ("LagunaConfig", 512),
    ("LaraMiniConfig", 512),
    ("Lfm3Config", 256),
    ("MellumConfig", 1024),
    ("MimiConfig", 250),
    ("MiMoV2FlashConfig", 129),
    ("MinistralConfig", 4096),
    ("MistralConfig", 4096),
    ("MoshiDepthConfig", 8),
    ("MoshiConfig", 3000),
    ("MuseGlimmerTextConfig", 2048),
    ("MuseGlimmerAssistantConfig", 2048),
    ("MuseSparkTextConfig", 2048),
    ("NemotronAsrStreamingEncoderConfig", 71),
    ("NeoMMEConfig", 256),
    ("Olmo3Config", 4096),
    ("OpenAIPrivacyFilterConfig", 128),
    ("PocketTTSAudioTokenizerConfig", 250),
    ("Qwen2Config", 4096),
    ("Qwen2_5OmniTextConfig", 32768),
    ("Qwen2_5OmniTalkerConfig", 32768),
    ("Qwen2_5_VLTextConfig", 4096),
    ("Qwen2MoeConfig", 4096),
    ("Qwen2VLTextConfig", 4096),
    ("Qwen3Config", 4096),
    ("Qwen3MoeConfig", 4096),
    ("Qwen3OmniMoeCode2WavConfig", 72),
    ("T5GemmaModuleConfig", 4096),
    ("T5Gemma2TextConfig", 4096),
    ("T5Gemma2DecoderConfig", 4096),
    ("UltrabertConfig", 128),
    ("UnlimitedOcrTextConfig", 128),
    ("VaultGemmaConfig", 4096),
    ("VoxtralRealtimeTextConfig", 4096),
    ("VoxtralRealtimeEncoderConfig", 750),
];

/// Which layers slide, as runs, and the window they share (`None`: no layer slides).
/// `layer_types` wins when present, then a list the family derived
/// ([`Derived::sliding`](super::raw::Derived)), then the block's rule.
pub(crate) fn windows(
    raw: &mut RawConfig<'_>,
    rule: Windows,
    class: &str,
    layers: u64,
) -> Result<(Runs<bool>, Option<u64>), ConfigError> {
    let default = SLIDING_WINDOW_DEFAULTS
        .iter()
        .find(|(c, _)| *c == class)
        .map(|(_, w)| *w);
    let window = if raw.has("sliding_window") {
        raw.uint("sliding_window")?
    } else {
        if let Some(w) = default {
            raw.assume("sliding_window", w, &format!("absent; `{class}` default"));
        }
        default
    };
    if let Some(types) = raw.value("layer_types") {
        let list = types
            .as_array()
            .ok_or_else(|| raw.invalid("layer_types", types, "a list of layer kinds"))?;
        if list.len() as u64 != layers {
            return Err(raw.invalid(
                "layer_types",
                types,
                &format!("one entry per layer ({layers})"),
            ));
        }
        let mut out = Runs::default();
        for t in list {
            match t.as_str() {
                Some("sliding_attention" | "chunked_attention") => out.push(true, 1),
                Some(_) => out.push(false, 1),
                None => {
                    return Err(raw.invalid("layer_types", t, "strings such as `full_attention`"));
                }
            }
        }
        return Ok((out, window));
    }
    if let Some(sliding) = &raw.derived.sliding {
        return Ok((sliding.clone(), window));
    }
    let use_window = raw.flag("use_sliding_window")?;
    let slides = match (rule, window) {
        (Windows::Alternate, Some(_)) => Runs::periodic(layers, &[(true, 1), (false, 1)]),
        (Windows::Pattern(default), Some(_)) => {
            // Zero is an error, as transformers' `(i + 1) % pattern` would be.
            let pattern = raw.size_opt("sliding_window_pattern")?.unwrap_or(default);
            Runs::every(layers, pattern).map(|global| !global)
        }
        (Windows::FromLayer(default), Some(_)) => {
            if use_window == Some(true) {
                let from = if let Some(from) = raw.uint("max_window_layers")? {
                    from
                } else {
                    raw.assume(
                        "max_window_layers",
                        default,
                        &format!("absent; `{class}` default"),
                    );
                    default
                };
                Runs::from_index(layers, from)
            } else {
                Runs::uniform(false, layers)
            }
        }
        (Windows::All, Some(_)) => Runs::uniform(true, layers),
        _ => Runs::uniform(false, layers),
    };
    Ok((slides, window))
}

/// A layer's window: `window` where it slides.
pub(crate) fn window_of(slides: bool, window: Option<u64>) -> Option<u64> {
    window.filter(|_| slides)
}

/// Read the sub-config under `key` (a vision-language model's `text_config`) as a model of
/// its own `model_type` (or `default_type` when it names none), through the registry; its
/// assumptions and symbol sources join the parent's, prefixed with `key.`.
pub(crate) fn read_sub_config(
    raw: &mut RawConfig<'_>,
    key: &str,
    default_type: &str,
    head: super::HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let value = raw
        .value(key)
        .ok_or_else(|| raw.missing(key, "an object holding the sub-model's config"))?;
    let sub = value
        .as_object()
        .ok_or_else(|| raw.invalid(key, value, "an object holding the sub-model's config"))?;
    let model_type = match sub.get("model_type") {
        Some(serde_json::Value::String(s)) => s.as_str(),
        Some(serde_json::Value::Null) | None => default_type,
        Some(v) => {
            return Err(raw.invalid(&format!("{key}.model_type"), v, "a string such as `llama`"));
        }
    };
    let family = super::families::find(model_type)
        .ok_or_else(|| super::unsupported(&format!("{} ({key})", raw.file), model_type))?;
    let mut inner = raw.nested(key, sub);
    let spec = match &family.read {
        Read::Block(b) => read_block(&mut inner, family, b)?,
        Read::Code(f) => f(&mut inner, family, head)?,
    };
    for a in inner.assumptions {
        raw.assume(&format!("{key}.{}", a.field), a.value, &a.reason);
    }
    for (symbol, source) in inner.sources {
        raw.source(symbol, &format!("{key}.{source}"));
    }
    Ok(spec)
}
