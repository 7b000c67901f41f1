//! DeepSeek-V4 (`modeling_deepseek_v4.py`, `DeepseekV4Config`, transformers 5.24): shared-KV
//! MQA over a sliding window with a low-rank query (`q_a_proj`/`q_a_norm`/`q_b_proj`), one
//! `kv_proj` read as both key and value, a grouped low-rank output (`o_a_proj`, `o_b_proj`)
//! and a learned sink per head; `layer_types` adds a compressor to a layer (HCA: one entry per
//! `compress_rates` source tokens; CSA: overlapping windows and a Lightning Indexer). Every
//! layer is an MoE (hash-routed or top-k: the same tensors) with one shared MLP, and its
//! residual runs in `hc_mult` streams mixed by two hyper-connections (`attn_hc`, `ffn_hc`),
//! collapsed by the model's `hc_head`.

use llmsize_core::Category;
use llmsize_core::expr::{Expr, Sym};
use llmsize_core::spec::{Attention, CompressedCache, Extra, Ffn, Layer, ModelSpec, Moe, Norm};

use crate::error::ConfigError;
use crate::hf_config::decoder::{Decoder, mha, mlp};
use crate::hf_config::family::{Family, Read, Reader, Switch, key_or};
use crate::hf_config::raw::RawConfig;
use crate::hf_config::runs::Runs;
use crate::hf_config::{HeadChoice, architecture};
use llmsize_core::checked;

/// A layer's attention kind (`DEEPSEEK_V4_LAYER_TYPES`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    /// `sliding_attention`: the window alone.
    Sliding,
    /// `compressed_sparse_attention`: `DeepseekV4CSACompressor` with its indexer.
    Csa,
    /// `heavily_compressed_attention`: `DeepseekV4HCACompressor`.
    Hca,
}

/// The sizes every layer reads.
struct Sizes {
    d: u64,
    heads: u64,
    head_dim: u64,
    q_lora: u64,
    o_groups: u64,
    o_lora: u64,
    index_heads: u64,
    index_dim: u64,
    csa_rate: u64,
    hca_rate: u64,
    hc: u64,
}

fn sym(name: &'static str, v: u64) -> Expr {
    Expr::sym(Sym::Named(name), v)
}

fn prod(a: Expr, b: Expr) -> Expr {
    Expr::product(vec![a, b])
}

/// The class defaults' `layer_types`: two HCA layers, then CSA and HCA alternating
/// (`DeepseekV4Config.__post_init__`); or the legacy `compress_ratios` (0, 4, 128).
fn layer_kinds(raw: &RawConfig<'_>, n: u64) -> Result<Runs<Kind>, ConfigError> {
    let (key, list) = match (raw.value("layer_types"), raw.value("compress_ratios")) {
        (Some(v), _) if !v.is_null() => ("layer_types", v),
        (_, Some(v)) if !v.is_null() => ("compress_ratios", v),
        _ => {
            let mut out = Runs::uniform(Kind::Hca, n.min(2));
            let rest = n.saturating_sub(2);
            out.append(Runs::periodic(rest, &[(Kind::Hca, 1), (Kind::Csa, 1)]));
            return Ok(out);
        }
    };
    let items = list
        .as_array()
        .ok_or_else(|| raw.invalid(key, list, "a list with one entry per layer"))?;
    // `list(self.layer_types[:n])`, then `validate_layer_type` asks for `n` entries.
    if (items.len() as u64) < n {
        return Err(raw.invalid(key, list, &format!("one entry per layer ({n})")));
    }
    let mut out = Runs::default();
    for v in items.iter().take(usize::try_from(n).unwrap_or(usize::MAX)) {
        let kind = match (v.as_str(), v.as_u64()) {
            (Some("sliding_attention"), _) | (_, Some(0)) => Kind::Sliding,
            (Some("compressed_sparse_attention"), _) | (_, Some(4)) => Kind::Csa,
            (Some("heavily_compressed_attention"), _) | (_, Some(128)) => Kind::Hca,
            _ => {
                return Err(raw.invalid(
                    key,
                    v,
                    "`sliding_attention`, `compressed_sparse_attention` or `heavily_compressed_attention` (ratios 0, 4, 128)",
                ));
            }
        };
        out.push(kind, 1);
    }
    Ok(out)
}

/// `compress_rates[name]`, else the legacy top-level key, else the class default.
fn rate(
    raw: &mut RawConfig<'_>,
    name: &str,
    legacy: &str,
    default: u64,
) -> Result<u64, ConfigError> {
    if let Some(n) = raw.size_opt(legacy)? {
        return Ok(n);
    }
    let key = format!("compress_rates.{name}");
    match raw.value("compress_rates") {
        Some(serde_json::Value::Object(m)) => match m.get(name) {
            Some(v) => v
                .as_u64()
                .filter(|&n| n > 0)
                .ok_or_else(|| raw.invalid(&key, v, "a positive integer")),
            None => Err(raw.missing(&key, "a positive integer")),
        },
        None | Some(serde_json::Value::Null) => {
            raw.assume(&key, default, "absent; `DeepseekV4Config` default");
            Ok(default)
        }
        Some(v) => Err(raw.invalid("compress_rates", v, "an object of rates per layer type")),
    }
}

/// `DeepseekV4Attention`'s own tensors.
fn attention_extras(s: &Sizes) -> Result<Vec<Extra>, ConfigError> {
    let c = Category::Attention;
    let part = "attention (DeepseekV4Attention)";
    let d = || Expr::sym(Sym::Hidden, s.d);
    let hd = || Expr::sym(Sym::HeadDim, s.head_dim);
    let q = || Expr::sym(Sym::QueryRank, s.q_lora);
    let width = || prod(Expr::sym(Sym::Heads, s.heads), hd());
    let o = || prod(sym("o_groups", s.o_groups), sym("o_lora_rank", s.o_lora));
    // `DeepseekV4GroupedLinear(n_h·d_h // o_groups, o_groups·o_lora_rank)`.
    let per_group = checked::mul("n_h·d_h", s.heads, s.head_dim)
        .map(|w| w.checked_div(s.o_groups).unwrap_or(0))
        .map_err(|e| crate::hf_config::raw::overflow("config.json", e))?;
    Ok(vec![
        Extra::vector("self_attn.sinks", part, c, Expr::sym(Sym::Heads, s.heads)),
        Extra::linear("self_attn.q_a_proj.weight", part, c, d(), q()),
        Extra::vector("self_attn.q_a_norm.weight", part, c, q()),
        Extra::linear("self_attn.q_b_proj.weight", part, c, q(), width()),
        Extra::linear("self_attn.kv_proj.weight", part, c, d(), hd()),
        Extra::vector("self_attn.kv_norm.weight", part, c, hd()),
        Extra::linear(
            "self_attn.o_a_proj.weight",
            part,
            c,
            sym("n_h·d_h/o_groups", per_group),
            o(),
        ),
        Extra::linear("self_attn.o_b_proj.weight", part, c, o(), d()),
    ])
}

/// A compressor's `kv_proj`, `gate_proj` (`series·width` wide), `position_bias`
/// (`rate × series·width`) and `kv_norm` (`width`).
fn compressor(prefix: &'static str, d: u64, rate: u64, series: u64, width: u64) -> [Extra; 4] {
    let c = Category::Attention;
    let part = "attention compressor";
    let w = || {
        if series == 1 {
            sym("d_c", width)
        } else {
            prod(Expr::Lit(series), sym("d_c", width))
        }
    };
    let d = || Expr::sym(Sym::Hidden, d);
    let name = |leaf: &str| format!("self_attn.{prefix}.{leaf}");
    [
        Extra::table(name("position_bias"), part, c, sym("m", rate), w()),
        Extra::linear(name("kv_proj.weight"), part, c, d(), w()),
        Extra::linear(name("gate_proj.weight"), part, c, d(), w()),
        Extra::vector(name("kv_norm.weight"), part, c, sym("d_c", width)),
    ]
}

/// The compressor tensors and cache of one kind of layer.
fn compressed(s: &Sizes, kind: Kind) -> Result<(Vec<Extra>, Option<CompressedCache>), ConfigError> {
    Ok(match kind {
        Kind::Sliding => (Vec::new(), None),
        Kind::Hca => (
            compressor("compressor", s.d, s.hca_rate, 1, s.head_dim).into(),
            Some(CompressedCache {
                rate: s.hca_rate,
                entry: s.head_dim,
                overlap: false,
            }),
        ),
        Kind::Csa => {
            let c = Category::Attention;
            let part = "attention indexer";
            let mut v: Vec<Extra> = compressor("compressor", s.d, s.csa_rate, 2, s.head_dim).into();
            v.extend(compressor(
                "compressor.indexer",
                s.d,
                s.csa_rate,
                2,
                s.index_dim,
            ));
            v.push(Extra::linear(
                "self_attn.compressor.indexer.q_b_proj.weight",
                part,
                c,
                Expr::sym(Sym::QueryRank, s.q_lora),
                prod(sym("index_n_heads", s.index_heads), sym("d_c", s.index_dim)),
            ));
            v.push(Extra::linear(
                "self_attn.compressor.indexer.scorer.weights_proj.weight",
                part,
                c,
                Expr::sym(Sym::Hidden, s.d),
                sym("index_n_heads", s.index_heads),
            ));
            let entry = checked::add("head_dim + index_head_dim", s.head_dim, s.index_dim)
                .map_err(|e| crate::hf_config::raw::overflow("config.json", e))?;
            (
                v,
                Some(CompressedCache {
                    rate: s.csa_rate,
                    entry,
                    overlap: true,
                }),
            )
        }
    })
}

/// One `DeepseekV4HyperConnection` (`attn_hc` or `ffn_hc`): `fn` `(2 + n)·n × n·d`, `base`
/// `(2 + n)·n`, `scale` 3.
fn hyper(prefix: &'static str, s: &Sizes) -> [Extra; 3] {
    let c = Category::LayerExtras;
    let part = "hyper-connections";
    let n = || sym("hc_mult", s.hc);
    let rows = || prod(Expr::sum(vec![Expr::Lit(2), n()]), n());
    let name = |leaf: &str| format!("{prefix}.{leaf}");
    [
        Extra::table(
            name("fn"),
            part,
            c,
            rows(),
            prod(n(), Expr::sym(Sym::Hidden, s.d)),
        ),
        Extra::vector(name("base"), part, c, rows()),
        Extra::vector(name("scale"), part, c, Expr::Lit(3)),
    ]
}

/// `DeepseekV4HyperHead`: `hc_fn` `n × n·d`, `hc_base` `n`, `hc_scale` 1.
fn hyper_head(s: &Sizes) -> [Extra; 3] {
    let c = Category::LayerExtras;
    let part = "hyper-connection head";
    let n = || sym("hc_mult", s.hc);
    [
        Extra::table(
            "hc_head.hc_fn",
            part,
            c,
            n(),
            prod(n(), Expr::sym(Sym::Hidden, s.d)),
        ),
        Extra::vector("hc_head.hc_base", part, c, n()),
        Extra::vector("hc_head.hc_scale", part, c, Expr::Lit(1)),
    ]
}

/// The sizes, each with the `DeepseekV4Config` default.
fn sizes(r: &mut Reader<'_, '_>, d: u64) -> Result<Sizes, ConfigError> {
    let heads = r.size(key_or(&["num_attention_heads"], 64), Sym::Heads)?;
    let head_dim = r.size(key_or(&["head_dim"], 512), Sym::HeadDim)?;
    let q_lora = r.size(key_or(&["q_lora_rank"], 1024), Sym::QueryRank)?;
    let o_groups = r.size(key_or(&["o_groups"], 8), Sym::Named("o_groups"))?;
    let o_lora = r.size(key_or(&["o_lora_rank"], 1024), Sym::Named("o_lora_rank"))?;
    let index_heads = r.size(key_or(&["index_n_heads"], 64), Sym::Named("index_n_heads"))?;
    let index_dim = r.size(
        key_or(&["index_head_dim"], 128),
        Sym::Named("index_head_dim"),
    )?;
    let hc = r.size(key_or(&["hc_mult"], 4), Sym::Named("hc_mult"))?;
    let csa_rate = rate(r.raw, "compressed_sparse_attention", "compress_rate_csa", 4)?;
    let hca_rate = rate(
        r.raw,
        "heavily_compressed_attention",
        "compress_rate_hca",
        128,
    )?;
    Ok(Sizes {
        d,
        heads,
        head_dim,
        q_lora,
        o_groups,
        o_lora,
        index_heads,
        index_dim,
        csa_rate,
        hca_rate,
        hc,
    })
}

/// The routed experts with the one shared `DeepseekV4MLP` (`moe_intermediate_size` wide, biased
/// with `mlp_bias`; `n_shared_experts` builds nothing more).
fn moe(r: &mut Reader<'_, '_>, d: u64) -> Result<Moe, ConfigError> {
    let experts = r.size(
        key_or(&["n_routed_experts", "num_local_experts"], 256),
        Sym::Experts,
    )?;
    let top_k = r.size(key_or(&["num_experts_per_tok"], 6), Sym::TopK)?;
    if top_k > experts {
        return Err(r.raw.invalid(
            "num_experts_per_tok",
            &top_k.into(),
            &format!("at most the number of experts ({experts})"),
        ));
    }
    let width = r.size(
        key_or(&["moe_intermediate_size", "intermediate_size"], 2048),
        Sym::ExpertFfn,
    )?;
    let bias = r.switch(Switch::Key("mlp_bias", false))?;
    Ok(Moe {
        num_experts: experts,
        experts_per_token: top_k,
        expert: mlp(d, width, true, false),
        router_bias: false,
        router: true,
        shared: Some(mlp(d, width, true, bias)),
        shared_gate: false,
    })
}

/// `DeepseekV4ForCausalLM`.
fn deepseek_v4(
    raw: &mut RawConfig<'_>,
    family: &Family,
    _head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let mut r = Reader {
        raw,
        class: family.config_class,
    };
    let d = r.size(key_or(&["hidden_size"], 4096), Sym::Hidden)?;
    let layers = r.size(key_or(&["num_hidden_layers"], 43), Sym::Layers)?;
    let n = r.raw.bound_layers("num_hidden_layers", layers)?;
    let vocab = r.size(key_or(&["vocab_size"], 129_280), Sym::Vocab)?;
    let window = r.size(
        key_or(&["sliding_window"], 128),
        Sym::Named("sliding_window"),
    )?;
    let s = sizes(&mut r, d)?;
    let moe = moe(&mut r, d)?;
    let tied = r.switch(Switch::Key("tie_word_embeddings", false))?;
    let kinds = layer_kinds(r.raw, n)?;
    let base = attention_extras(&s)?;
    let make = |kind| -> Result<Layer, ConfigError> {
        let (extras, cache) = compressed(&s, kind)?;
        let mut a = mha(d, s.heads, 1, s.head_dim, false);
        // A compressed layer's `DeepseekV4HCACache` holds the one K=V tensor once; a
        // sliding one's `DynamicSlidingWindowLayer` stores keys and values apart.
        a.shared_kv = kind != Kind::Sliding;
        a.compressed = cache;
        let mut all = base.clone();
        all.extend(extras);
        all.extend(hyper("attn_hc", &s));
        all.extend(hyper("ffn_hc", &s));
        Ok(Layer {
            attention: Attention::CacheOnly(a),
            cross_attention: None,
            ffn: Ffn::Moe(moe.clone()),
            norms: vec![Norm::rms_norm(d); 2],
            sliding_window: Some(window),
            extras: all,
            state: None,
        })
    };
    let (sliding, csa, hca) = (make(Kind::Sliding)?, make(Kind::Csa)?, make(Kind::Hca)?);
    let stack = kinds.layers(|k| match k {
        Kind::Sliding => sliding.clone(),
        Kind::Csa => csa.clone(),
        Kind::Hca => hca.clone(),
    });
    let mut spec = Decoder::new(
        family.model_type,
        architecture(r.raw, family.architecture),
        d,
        vocab,
        stack,
        Some(Norm::rms_norm(d)),
        tied,
    )
    .into_spec();
    spec.extras.extend(hyper_head(&s));
    Ok(spec)
}

/// The entries of this file.
pub(crate) const FAMILIES: &[Family] = &[Family {
    model_type: "deepseek_v4",
    config_class: "DeepseekV4Config",
    architecture: "DeepseekV4ForCausalLM",
    read: Read::Code(deepseek_v4),
}];
