//! Mistral Large 4 (`modeling_mistral_large4.py`): Mistral 3's Pixtral tower, patch merger
//! and projector over `MistralLarge4TextModel`, an MLA model with DeepSeek Sparse Attention.
//!
//! The text layer (`MistralLarge4TextDecoderLayer`): two `RMSNorm`s; attention with a full
//! `q_proj` `d → H·(nope + rope)`, `kv_a_proj_with_mqa` `d → kv_lora + rope` and
//! `kv_a_layernorm` (absent on a layer reading an earlier layer's cache, `kv_source_layers`),
//! `kv_b_proj` `kv_lora → H·(nope + v)`, `o_proj`, and `softmax_scaling` (`scale`, `bias` of
//! `H`). A `NoPE` layer (`no_rope_layers[i] == 0`) has no rotary part in `kv_a_proj_with_mqa`
//! nor in its cache. Layers whose `indexer_types` is `"full"` build the indexer
//! (`q_input_norm` `LayerNorm(d)`, `wq_b` `d → n_idx·d_idx`, `wk` `d → d_idx`, `k_norm`
//! `LayerNorm(d_idx)`, `weights_proj` `d → n_idx`, its own `softmax_scaling` of `n_idx`) and
//! cache its key. The MLP is `mlp_layer_types[i]`: a dense `SwiGLU` of `intermediate_size` or
//! the MoE (router `E × d`, experts, shared experts of `moe_intermediate_size ·
//! n_shared_experts`). The rotary embedding learns `alpha`, one per frequency
//! (`ceil(qk_rope_head_dim / 2)`, `torch.arange(0, dim, 2)`).

use llmsize_core::Category;
use llmsize_core::expr::{Expr, Sym};
use llmsize_core::spec::{
    Attention, Extra, Ffn, LatentAttention, Layer, ModelSpec, Moe, Norm, OutputHead,
};
use serde_json::Value;

use super::parts::{lit, mul, sym, with_sub, with_top};
use super::pixtral::{merger, two_layers};
use super::{vision, vision_tower, with_parts};
use crate::error::ConfigError;
use crate::hf_config::decoder::{Decoder, mha, mlp};
use crate::hf_config::family::Family;
use crate::hf_config::raw::RawConfig;
use crate::hf_config::runs::Runs;
use crate::hf_config::{HeadChoice, architecture};
use llmsize_core::checked;

const CLASS: &str = "MistralLarge4TextConfig";

/// One entry per layer of the list under `key`, each mapped by `f`, or `default` (a rule,
/// as runs) when absent.
fn per_layer<T: Clone + PartialEq>(
    raw: &mut RawConfig<'_>,
    key: &str,
    n: u64,
    what: &str,
    f: impl Fn(&Value) -> Option<T>,
    default: impl FnOnce() -> (Runs<T>, String),
) -> Result<Runs<T>, ConfigError> {
    match raw.value(key) {
        None | Some(Value::Null) => {
            let (v, desc) = default();
            raw.assume(key, desc, &format!("absent; `{CLASS}` default"));
            Ok(v)
        }
        Some(v) => {
            let items: Option<Vec<T>> = v
                .as_array()
                .filter(|a| a.len() as u64 == n)
                .and_then(|a| a.iter().map(&f).collect());
            items
                .map(Runs::from_list)
                .ok_or_else(|| raw.invalid(key, v, &format!("{n} entries, {what}")))
        }
    }
}

/// `kv_source_layers`: per layer, whether it keeps its own cache (it is its own source),
/// checked as `validate_architecture` checks it — every layer reads its own cache or an
/// earlier layer's that does. Absent: every layer its own.
fn own_kv(raw: &mut RawConfig<'_>, n: u64) -> Result<Runs<bool>, ConfigError> {
    let Some(v) = raw.value("kv_source_layers") else {
        raw.assume(
            "kv_source_layers",
            "every layer its own",
            &format!("absent; `{CLASS}` default"),
        );
        return Ok(Runs::uniform(true, n));
    };
    let bad = || {
        raw.invalid(
            "kv_source_layers",
            v,
            "for each layer itself or an earlier layer that is its own source",
        )
    };
    let sources: Vec<u64> = v
        .as_array()
        .filter(|a| a.len() as u64 == n)
        .and_then(|a| a.iter().map(Value::as_u64).collect())
        .ok_or_else(|| {
            raw.invalid(
                "kv_source_layers",
                v,
                &format!("{n} entries, layer indices"),
            )
        })?;
    let owns = |s: u64| usize::try_from(s).ok().and_then(|s| sources.get(s)) == Some(&s);
    if sources.iter().zip(0u64..).any(|(s, i)| *s > i || !owns(*s)) {
        return Err(bad());
    }
    Ok(Runs::from_list(
        sources.iter().zip(0u64..).map(|(s, i)| *s == i),
    ))
}

/// `indexer_types` (`GlmMoeDsaConfig.__post_init__`): the key, else `index_topk_pattern`,
/// else `full` where `max(i − index_skip_topk_offset + 1, 0) % index_topk_freq == 0`.
fn indexer_types(raw: &mut RawConfig<'_>, n: u64) -> Result<Runs<bool>, ConfigError> {
    let name = |t: &Value| match t.as_str() {
        Some("full") => Some(true),
        Some("shared") => Some(false),
        _ => None,
    };
    if raw.value("indexer_types").is_none()
        && let Some(v) = raw.value("index_topk_pattern")
    {
        let items: Option<Vec<bool>> = match v {
            Value::String(p) => p
                .chars()
                .map(|c| match c {
                    'F' => Some(true),
                    'S' => Some(false),
                    _ => None,
                })
                .collect(),
            Value::Array(a) => a.iter().map(name).collect(),
            _ => None,
        };
        return items
            .filter(|i| i.len() as u64 == n)
            .map(Runs::from_list)
            .ok_or_else(|| raw.invalid("index_topk_pattern", v, &format!("{n} of `F`/`S`")));
    }
    let freq = raw.uint("index_topk_freq")?.unwrap_or(1).max(1);
    let offset = raw.uint("index_skip_topk_offset")?.unwrap_or(2);
    per_layer(raw, "indexer_types", n, "`full` or `shared`", name, || {
        (
            crate::hf_config::families::latent::topk_full(n, freq, offset),
            format!("from index_topk_freq {freq}, index_skip_topk_offset {offset}"),
        )
    })
}

/// `MistralLarge4TextModel` (with an LM head unless `architecture` names a bare model).
fn text_model(
    raw: &mut RawConfig<'_>,
    model_type: &str,
    arch: String,
) -> Result<ModelSpec, ConfigError> {
    let reason = format!("absent; `{CLASS}` default");
    let size =
        |raw: &mut RawConfig<'_>, key: &str, s: Sym, d: u64| raw.size_or(&[key], s, d, &reason);
    let d = size(raw, "hidden_size", Sym::Hidden, 6144)?;
    let n = size(raw, "num_hidden_layers", Sym::Layers, 72)?;
    let heads = size(raw, "num_attention_heads", Sym::Heads, 64)?;
    let vocab = size(raw, "vocab_size", Sym::Vocab, 204_800)?;
    let kv_lora = size(raw, "kv_lora_rank", Sym::KvRank, 512)?;
    let nope = size(raw, "qk_nope_head_dim", Sym::NopeDim, 64)?;
    let rope = size(raw, "qk_rope_head_dim", Sym::RopeDim, 64)?;
    let v = size(raw, "v_head_dim", Sym::ValueDim, 128)?;
    let ff = size(raw, "intermediate_size", Sym::Ffn, 24576)?;
    let moe_ff = size(
        raw,
        "moe_intermediate_size",
        Sym::Named("d_ff_expert"),
        6144,
    )?;
    let experts = size(raw, "n_routed_experts", Sym::Named("E"), 128)?;
    let top_k = size(raw, "num_experts_per_tok", Sym::Named("k"), 4)?;
    let n_idx = size(raw, "index_n_heads", Sym::Named("n_idx"), 32)?;
    let d_idx = size(raw, "index_head_dim", Sym::Named("d_idx"), 128)?;
    let shared = if let Some(x) = raw.uint("n_shared_experts")? {
        x
    } else {
        raw.assume("n_shared_experts", 1, &reason);
        1
    };
    let bias = raw.flag_or("attention_bias", false, &reason)?;
    let tied = raw.flag_or("tie_word_embeddings", false, &reason)?;
    let first_dense = if let Some(x) = raw.uint("first_k_dense_replace")? {
        x
    } else {
        raw.assume("first_k_dense_replace", 1, &reason);
        1
    };
    let sparse = per_layer(
        raw,
        "mlp_layer_types",
        n,
        "`dense` or `sparse`",
        |t| match t.as_str() {
            Some("sparse") => Some(true),
            Some("dense") => Some(false),
            _ => None,
        },
        || {
            (
                Runs::from_index(n, first_dense),
                format!("{first_dense} dense, then sparse"),
            )
        },
    )?;
    let interval = raw.uint("no_rope_layer_interval")?.unwrap_or(4).max(1);
    let uses_rope = per_layer(
        raw,
        "no_rope_layers",
        n,
        "1 (RoPE) or 0 (NoPE)",
        |t| t.as_u64().filter(|x| *x <= 1).map(|x| x == 1),
        || {
            (
                Runs::every(n, interval).map(|nope| !nope),
                format!("NoPE every {interval}th layer"),
            )
        },
    )?;
    let own_kv = own_kv(raw, n)?;
    let full = indexer_types(raw, n)?;
    if let Some(v) = raw.value("layer_types")
        && !v
            .as_array()
            .is_some_and(|a| a.iter().all(|t| t.as_str() == Some("indexed_attention")))
    {
        return Err(raw.invalid("layer_types", v, "`indexed_attention` layers"));
    }

    let c = Category::Attention;
    let hid = || Expr::sym(Sym::Hidden, d);
    let h = || Expr::sym(Sym::Heads, heads);
    let ni = || Expr::sym(Sym::Named("n_idx"), n_idx);
    let di = || Expr::sym(Sym::Named("d_idx"), d_idx);
    let scaling = |pre: &str, width: Expr| {
        vec![
            Extra::vector(
                format!("{pre}softmax_scaling.scale"),
                "attention",
                c,
                width.clone(),
            ),
            Extra::vector(format!("{pre}softmax_scaling.bias"), "attention", c, width),
        ]
    };
    let mut indexer = vec![
        // A `LayerNorm` of the block (the truth files it under norms), not a q/k norm.
        Extra::vector(
            "self_attn.indexer.q_input_norm.weight",
            "indexer norm",
            Category::Norm,
            hid(),
        ),
        Extra::vector(
            "self_attn.indexer.q_input_norm.bias",
            "indexer norm",
            Category::Norm,
            hid(),
        ),
        Extra::linear(
            "self_attn.indexer.wq_b.weight",
            "indexer",
            c,
            hid(),
            Expr::product(vec![ni(), di()]),
        ),
        Extra::linear("self_attn.indexer.wk.weight", "indexer", c, hid(), di()),
        Extra::vector("self_attn.indexer.k_norm.weight", "indexer", c, di()),
        Extra::vector("self_attn.indexer.k_norm.bias", "indexer", c, di()),
        Extra::linear(
            "self_attn.indexer.weights_proj.weight",
            "indexer",
            c,
            hid(),
            ni(),
        ),
    ];
    indexer.extend(scaling("self_attn.indexer.", ni()));
    let moe = Moe {
        num_experts: experts,
        experts_per_token: top_k,
        expert: mlp(d, moe_ff, true, false),
        router_bias: llmsize_core::spec::RouterBias::None,
        router: true,
        shared: if shared > 0 {
            let w = raw.mul(moe_ff, shared, "moe_intermediate_size·n_shared_experts")?;
            Some(mlp(d, w, true, false))
        } else {
            None
        },
        shared_gate: false,
    };
    // Each layer by (RoPE?, indexed?, own cache?, sparse?): each distinct one built once.
    let keys = uses_rope.zip(&full).zip(&own_kv.zip(&sparse));
    let mut plans: Vec<((bool, bool), (bool, bool))> = Vec::new();
    for (k, _) in keys.runs() {
        if !plans.contains(k) {
            plans.push(*k);
        }
    }
    let mut built: Vec<Layer> = Vec::with_capacity(plans.len());
    for &((with_rope, indexed), (own_kv, is_sparse)) in &plans {
        let mut extras = scaling("self_attn.", h());
        if indexed {
            extras.extend(indexer.iter().cloned());
        }
        let attention = if with_rope && own_kv {
            Attention::Latent(LatentAttention {
                hidden: d,
                num_heads: heads,
                q_lora_rank: None,
                kv_lora_rank: kv_lora,
                qk_nope_head_dim: nope,
                qk_rope_head_dim: rope,
                v_head_dim: v,
                bias,
                indexer_key_dim: indexed.then_some(d_idx),
                category: c,
            })
        } else {
            let rot = if with_rope { rope } else { 0 };
            extras.extend(mla_extras(
                d,
                heads,
                (kv_lora, nope, rope, v),
                bias,
                with_rope,
                own_kv,
            ));
            // `kv_sharing_modes`: a layer reading another's cache stores nothing ("reuse", a
            // `DummyLayer`) or only its indexer's key ("reuse_but_indexer").
            let latent = if own_kv {
                raw.check(checked::add(
                    "kv_lora_rank + qk_rope_head_dim",
                    kv_lora,
                    rot,
                ))?
            } else {
                0
            };
            let per_token = raw.check(checked::add(
                "kv latent + index_head_dim",
                latent,
                if indexed { d_idx } else { 0 },
            ))?;
            if per_token == 0 {
                Attention::Absent
            } else {
                cache_only(raw, d, heads, per_token)?
            }
        };
        let layer = Layer {
            attention,
            cross_attention: None,
            ffn: if is_sparse {
                Ffn::Moe(moe.clone())
            } else {
                Ffn::Dense(mlp(d, ff, true, false))
            },
            norms: vec![Norm::rms_norm(d), Norm::rms_norm(d)],
            sliding_window: None,
            extras,
            state: None,
        };
        built.push(layer);
    }
    let layers = keys.layers(|k| {
        plans
            .iter()
            .position(|p| p == k)
            .and_then(|i| built.get(i))
            .cloned()
            .unwrap_or_else(|| Layer {
                attention: Attention::Absent,
                cross_attention: None,
                ffn: Ffn::Absent,
                norms: Vec::new(),
                sliding_window: None,
                extras: Vec::new(),
                state: None,
            })
    });
    let dec = Decoder::new(
        model_type,
        arch,
        d,
        vocab,
        layers,
        Some(Norm::rms_norm(d)),
        tied,
    );
    let mut spec = dec.into_spec();
    // `MistralLarge4TextRotaryEmbedding.alpha`: one per rotary frequency.
    spec.extras.push(Extra::vector(
        "rotary_emb.alpha",
        "rotary embedding",
        Category::PositionEmbedding,
        Expr::sym(Sym::Named("rope_freqs"), rope.div_ceil(2)),
    ));
    Ok(spec)
}

/// The MLA weights of a layer the spec's latent attention cannot describe, as extras: a `NoPE`
/// layer (no rotary part in `kv_a_proj_with_mqa`; `kv_b_proj` is built after the layer widened
/// `qk_nope_head_dim` by the rotary part) or one reading an earlier layer's cache (no
/// `kv_a_proj_with_mqa`, no `kv_a_layernorm`).
fn mla_extras(
    d: u64,
    heads: u64,
    (kv_lora, nope, rope, v): (u64, u64, u64, u64),
    bias: bool,
    with_rope: bool,
    own_kv: bool,
) -> Vec<Extra> {
    let c = Category::Attention;
    let hid = || Expr::sym(Sym::Hidden, d);
    let h = || Expr::sym(Sym::Heads, heads);
    let r = || Expr::sym(Sym::KvRank, kv_lora);
    let rot = || Expr::sym(Sym::RopeDim, rope);
    let q = Expr::product(vec![
        h(),
        Expr::sum(vec![Expr::sym(Sym::NopeDim, nope), rot()]),
    ]);
    let mut kv_b_head = vec![Expr::sym(Sym::NopeDim, nope), Expr::sym(Sym::ValueDim, v)];
    let mut kv_a = vec![r()];
    if with_rope {
        kv_a.push(rot());
    } else {
        kv_b_head.push(rot());
    }
    let kv_a = Expr::sum(kv_a);
    let kv_b = Expr::product(vec![h(), Expr::sum(kv_b_head)]);
    let o_in = Expr::product(vec![h(), Expr::sym(Sym::ValueDim, v)]);
    let part = "attention";
    let mut out = vec![
        Extra::linear("self_attn.q_proj.weight", part, c, hid(), q),
        Extra::linear("self_attn.kv_b_proj.weight", part, c, r(), kv_b),
        Extra::linear("self_attn.o_proj.weight", part, c, o_in, hid()),
    ];
    if bias {
        out.push(Extra::vector("self_attn.o_proj.bias", part, c, hid()));
    }
    if own_kv {
        out.push(Extra::linear(
            "self_attn.kv_a_proj_with_mqa.weight",
            part,
            c,
            hid(),
            kv_a.clone(),
        ));
        out.push(Extra::vector(
            "self_attn.kv_a_layernorm.weight",
            part,
            c,
            r(),
        ));
        if bias {
            out.push(Extra::vector(
                "self_attn.kv_a_proj_with_mqa.bias",
                part,
                c,
                kv_a,
            ));
        }
    }
    out
}

/// The cache of such a layer, `per_token` elements (its latent, and the indexer's key when
/// it has one), carried as one K/V head of `per_token / 2` (and an odd element as an
/// indexer key): the layer's weights are its extras.
fn cache_only(
    raw: &RawConfig<'_>,
    d: u64,
    heads: u64,
    per_token: u64,
) -> Result<Attention, ConfigError> {
    let half = per_token / 2;
    if half == 0 {
        return Err(raw.invalid(
            "kv_lora_rank",
            &Value::from(per_token),
            "at least 2 cached elements per token on this layer",
        ));
    }
    let odd = per_token % 2;
    let mut a = mha(d, heads, 1, half, false);
    a.indexer_key_dim = (odd > 0).then_some(odd);
    Ok(Attention::CacheOnly(a))
}

/// `mistral_large4_text` on its own: `AutoModel` builds the bare `MistralLarge4TextModel`.
pub(crate) fn mistral_large4_text(
    raw: &mut RawConfig<'_>,
    f: &Family,
    _head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let arch = architecture(raw, f.architecture);
    text_model(raw, f.model_type, arch)
}

/// `MistralLarge4ForConditionalGeneration`: the text model of `text_config` with its LM head
/// (`tie_word_embeddings` at the top, default false), Pixtral, the merger, and the projector
/// `d_vis·n → d → d` biased by `multimodal_projector_bias` (default false).
pub(crate) fn mistral_large4(
    raw: &mut RawConfig<'_>,
    f: &Family,
    _head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let mut spec = with_sub(raw, "text_config", CLASS, |s| {
        text_model(s.r.raw, f.model_type, f.architecture.to_owned())
    })?;
    let tied = raw.flag_or(
        "tie_word_embeddings",
        false,
        &format!("absent; `{}` default", f.config_class),
    )?;
    if let OutputHead::Lm { tied: t, .. } = &mut spec.head {
        *t = tied;
    }
    spec.architecture = architecture(raw, f.architecture);
    let mut p = vision();
    let t = vision_tower(raw, "vision_config", "pixtral", &mut p)?;
    merger(raw, f.config_class, &mut p, t.hidden)?;
    let (n, bias) = with_top(raw, f.config_class, |s| {
        Ok((
            s.list_len_or_one("vision_feature_layer")?,
            s.flag("multimodal_projector_bias", false)?,
        ))
    })?;
    two_layers(
        &mut p,
        (mul(sym("d_vis", t.hidden), lit(n)), spec.hidden_size),
        bias,
    );
    Ok(with_parts(spec, p))
}
