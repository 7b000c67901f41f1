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
use llmsize_core::spec::{
    Attention, CompressedCache, Extra, Ffn, LatentAttention, Layer, ModelSpec, Moe, Norm,
    RecurrentState,
};

use crate::error::ConfigError;
use crate::hf_config::decoder::{Decoder, mha, mlp};
use crate::hf_config::family::{
    ALL_SPARSE, Family, MoeRule, NO, Reader, Shared, Size, Switch, block_moe, key_or, map_layers_by,
};
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
fn hyper(prefix: &'static str, hc: u64, d: u64) -> [Extra; 3] {
    let c = Category::LayerExtras;
    let part = "hyper-connections";
    let n = || sym("hc_mult", hc);
    let rows = || prod(Expr::sum(vec![Expr::Lit(2), n()]), n());
    let name = |leaf: &str| format!("{prefix}.{leaf}");
    [
        Extra::table(
            name("fn"),
            part,
            c,
            rows(),
            prod(n(), Expr::sym(Sym::Hidden, d)),
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
        router_bias: llmsize_core::spec::RouterBias::None,
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
        all.extend(hyper("attn_hc", s.hc, d));
        all.extend(hyper("ffn_hc", s.hc, d));
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

/// `Glm5NextTextMoE`: fused routed experts, an unbiased `Glm5NextTextTopkRouter` (its
/// `e_score_correction_bias` is a buffer) and one shared `Glm5NextTextMLP` of
/// `moe_intermediate_size · n_shared_experts`.
const GLM5_NEXT_MOE: MoeRule = MoeRule {
    experts: key_or(&["n_routed_experts", "num_local_experts"], 288),
    top_k: key_or(&["num_experts_per_tok"], 8),
    expert_width: key_or(&["moe_intermediate_size"], 2048),
    correction_bias: NO,
    expert_bias: NO,
    shared: Shared::Count(key_or(&["n_shared_experts"], 1)),
    shared_gate: false,
    sparsity: ALL_SPARSE,
};

/// `Glm5NextTextAttention`'s MLA: `q_a_proj` (biased with `attention_bias`) `d → q_lora_rank`
/// with its norm, `q_b_proj`, `kv_a_proj_with_mqa` (biased) `d → kv_lora_rank +
/// qk_rope_head_dim`, `kv_a_layernorm`, `kv_b_proj`, `o_proj` (biased). `validate_architecture`
/// asks for `q_lora_rank`, no rotary part (`qk_rope_head_dim == 0`) and as many KV heads as
/// heads.
fn glm5_mla(r: &mut Reader<'_, '_>, d: u64) -> Result<LatentAttention, ConfigError> {
    let heads = r.size(key_or(&["num_attention_heads"], 64), Sym::Heads)?;
    if let Some(kv) = r.raw.size_opt("num_key_value_heads")?
        && kv != heads
    {
        return Err(r.raw.invalid(
            "num_key_value_heads",
            &kv.into(),
            &format!("`num_attention_heads` ({heads})"),
        ));
    }
    if let Some(v) = r.raw.value("q_lora_rank")
        && v.is_null()
    {
        return Err(r.raw.invalid(
            "q_lora_rank",
            v,
            "a positive integer (the DSA attention reads the query latent)",
        ));
    }
    let q_lora = r.size(key_or(&["q_lora_rank"], 1536), Sym::QueryRank)?;
    match r.raw.uint("qk_rope_head_dim")? {
        None | Some(0) => {}
        Some(n) => {
            return Err(r.raw.invalid(
                "qk_rope_head_dim",
                &n.into(),
                "`0` (the DSA layers have no rotary part)",
            ));
        }
    }
    Ok(LatentAttention {
        hidden: d,
        num_heads: heads,
        q_lora_rank: Some(q_lora),
        kv_lora_rank: r.size(key_or(&["kv_lora_rank"], 512), Sym::KvRank)?,
        qk_nope_head_dim: r.size(key_or(&["qk_nope_head_dim"], 256), Sym::NopeDim)?,
        qk_rope_head_dim: 0,
        v_head_dim: r.size(key_or(&["v_head_dim"], 256), Sym::ValueDim)?,
        bias: r.switch(Switch::Key("attention_bias", false))?,
        indexer_key_dim: None,
        category: Category::Attention,
    })
}

/// A per-layer list of strings under `key` (`num_hidden_layers` entries, as
/// `validate_layer_type` asks), mapped by `kind`; `None` when absent or null.
fn per_layer<K: Clone + PartialEq>(
    raw: &RawConfig<'_>,
    key: &str,
    n: u64,
    expected: &str,
    kind: impl Fn(&str) -> Option<K>,
) -> Result<Option<Runs<K>>, ConfigError> {
    let Some(v) = raw.value(key).filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    let items = v
        .as_array()
        .filter(|a| a.len() as u64 == n)
        .ok_or_else(|| raw.invalid(key, v, &format!("one entry per layer ({n})")))?;
    let mut out = Runs::default();
    for t in items {
        let k = t
            .as_str()
            .and_then(&kind)
            .ok_or_else(|| raw.invalid(key, t, expected))?;
        out.push(k, 1);
    }
    Ok(Some(out))
}

/// Which layers are MLA (`Glm5NextTextAttention`): `layer_types` entries other than
/// `linear_attention` (`mamba` is its legacy name, `remap_legacy_layer_types`); by default
/// every fourth (`idx % 4 == 3`).
fn glm5_mla_layers(raw: &RawConfig<'_>, n: u64) -> Result<Runs<bool>, ConfigError> {
    let kind = |t: &str| match t {
        "linear_attention" | "mamba" => Some(false),
        "full_attention"
        | "indexed_attention"
        | "sliding_attention"
        | "chunked_attention"
        | "attention"
        | "deepseek_sparse_attention" => Some(true),
        _ => None,
    };
    let expected = "`linear_attention` or `indexed_attention`";
    Ok(per_layer(raw, "layer_types", n, expected, kind)?
        .unwrap_or_else(|| Runs::periodic(n, &[(false, 3), (true, 1)])))
}

/// Which layers are MoE: `mlp_layer_types` (`sparse`), by default all but the first three.
fn glm5_sparse_layers(raw: &RawConfig<'_>, n: u64) -> Result<Runs<bool>, ConfigError> {
    let kind = |t: &str| match t {
        "sparse" => Some(true),
        "dense" => Some(false),
        _ => None,
    };
    let expected = "`dense` or `sparse`";
    Ok(per_layer(raw, "mlp_layer_types", n, expected, kind)?
        .unwrap_or_else(|| Runs::from_index(n, 3)))
}

/// A size of the KDA mixer: `linear_attn_config[nested]` (which `__post_init__` lets win),
/// else `key`, else the class default.
fn kda_size(
    r: &mut Reader<'_, '_>,
    nested: &str,
    size: Size,
    name: &'static str,
) -> Result<u64, ConfigError> {
    let path = format!("linear_attn_config.{nested}");
    match r.raw.value("linear_attn_config") {
        Some(serde_json::Value::Object(m)) if m.contains_key(nested) => {
            let v = &m[nested];
            let n = v
                .as_u64()
                .filter(|&n| n > 0)
                .ok_or_else(|| r.raw.invalid(&path, v, "a positive integer"))?;
            r.raw.source(Sym::Named(name), &path);
            Ok(n)
        }
        _ => r.size(size, Sym::Named(name)),
    }
}

/// `Glm5NextTextLinearAttention` (Kimi delta attention, its tensors as Kimi-Linear's) and
/// its cache: the conv window `3·n·h × kernel` and the float32 recurrent state `n × h × h`.
fn glm5_kda(r: &mut Reader<'_, '_>, d: u64) -> Result<(Vec<Extra>, RecurrentState), ConfigError> {
    let heads = kda_size(r, "num_heads", key_or(&["linear_num_heads"], 64), "n_lin")?;
    let dim = kda_size(r, "head_dim", key_or(&["linear_head_dim"], 128), "h_lin")?;
    let kernel = kda_size(
        r,
        "short_conv_kernel_size",
        key_or(&["linear_conv_kernel_dim"], 4),
        "d_conv",
    )?;
    let width = r.raw.mul(heads, dim, "linear_num_heads·linear_head_dim")?;
    let state = RecurrentState {
        conv: r
            .raw
            .mul(r.raw.mul(width, 3, "3·n·h")?, kernel, "3·n·h·kernel")?,
        recurrent: r.raw.mul(width, dim, "n·h·h")?,
        recurrent_f32: true,
        conv_f32: false,
    };
    Ok((super::recurrent::kimi_kda(d, heads, dim, kernel), state))
}

/// `Glm5NextTextIndexer`'s k-pool tensors beside the DSA indexer's: `index_kpool_compress_ape`
/// `index_kpool × d_idx` and `index_kpool_compress_gate` `d_idx × d`.
fn kpool(r: &mut Reader<'_, '_>, d: u64, dim: u64) -> Result<[Extra; 2], ConfigError> {
    let pool = r.size(key_or(&["index_kpool"], 16), Sym::Named("index_kpool"))?;
    let c = Category::Attention;
    let part = "indexer";
    let k = || sym("d_idx", dim);
    Ok([
        Extra::table(
            "self_attn.indexer.index_kpool_compress_ape",
            part,
            c,
            sym("index_kpool", pool),
            k(),
        ),
        Extra::table(
            "self_attn.indexer.index_kpool_compress_gate",
            part,
            c,
            k(),
            Expr::sym(Sym::Hidden, d),
        ),
    ])
}

/// `Glm5NextTextModel` (`modeling_glm5_next.py`, `Glm5NextTextConfig`): KDA and MLA layers
/// (`layer_types`), dense or MoE feed-forwards (`mlp_layer_types`), a DSA indexer with k-pool
/// compression on each MLA layer `indexer_types` marks `full`, two hyper-connections per
/// layer; `Glm5NextTextHyperHead` is an unweighted mean (no tensors).
fn glm5_next_text(
    raw: &mut RawConfig<'_>,
    family: &Family,
    _head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let mut r = Reader {
        raw,
        class: family.config_class,
    };
    let d = r.size(key_or(&["hidden_size"], 4096), Sym::Hidden)?;
    let layers = r.size(key_or(&["num_hidden_layers"], 45), Sym::Layers)?;
    let n = r.raw.bound_layers("num_hidden_layers", layers)?;
    let vocab = r.size(key_or(&["vocab_size"], 154_880), Sym::Vocab)?;
    let width = r.size(key_or(&["intermediate_size"], 12_288), Sym::Ffn)?;
    let hc = r.size(key_or(&["hc_mult"], 4), Sym::Named("hc_mult"))?;
    let mla = glm5_mla(&mut r, d)?;
    let (_, moe) = block_moe(&mut r, &GLM5_NEXT_MOE, d, layers)?;
    let (kda, state) = glm5_kda(&mut r, d)?;
    let index_heads = r.size(key_or(&["index_n_heads"], 32), Sym::Named("n_idx"))?;
    let index_dim = r.size(key_or(&["index_head_dim"], 128), Sym::Named("d_idx"))?;
    let kpool = kpool(&mut r, d, index_dim)?;
    // `Glm5NextForConditionalGeneration` decides the tie; the text model has no head.
    let tied = r.switch(Switch::Key("tie_word_embeddings", false))?;
    let is_mla = glm5_mla_layers(r.raw, n)?;
    let sparse = glm5_sparse_layers(r.raw, n)?;
    let full = super::latent::indexer_types(r.raw, n)?;
    let dense = mlp(d, width, true, false);
    let norm = Norm::rms_norm(d);
    let stack = is_mla.zip_layers(&sparse, |&(is_mla, is_sparse)| {
        let mut extras = if is_mla { Vec::new() } else { kda.clone() };
        extras.extend(hyper("attn_hc", hc, d));
        extras.extend(hyper("ffn_hc", hc, d));
        Layer {
            attention: if is_mla {
                Attention::Latent(mla.clone())
            } else {
                Attention::Absent
            },
            cross_attention: None,
            ffn: if is_sparse {
                Ffn::Moe(moe.clone())
            } else {
                Ffn::Dense(dense)
            },
            norms: vec![norm; 2],
            sliding_window: None,
            extras,
            state: (!is_mla).then_some(state),
        }
    });
    let mut spec = Decoder::new(
        family.model_type,
        architecture(r.raw, family.architecture),
        d,
        vocab,
        stack,
        Some(norm),
        tied,
    )
    .into_spec();
    let mut indexer = super::latent::indexer(r.raw, &spec, index_heads, index_dim)?;
    indexer.extend(kpool);
    // `Glm5NextTextIndexer` caches, per token, its key, its k-pool gate scores (`d_idx`
    // each) and a validity channel (`torch.cat([k, gate_scores, valid_channel])`, the
    // cache's `indexer_keys`) beside the latent; a `shared` layer caches the latent alone.
    let packed = r.raw.mul(index_dim, 2, "2·index_head_dim")?;
    let packed = r
        .raw
        .check(checked::add("2·index_head_dim + 1", packed, 1))?;
    let indexed = is_mla.zip(&full).map(|&(m, f)| m && f);
    map_layers_by(&mut spec, &indexed, |layer, on| {
        let mut l = layer.clone();
        if *on {
            l.extras.extend(indexer.iter().cloned());
            if let Attention::Latent(a) = &mut l.attention {
                a.indexer_key_dim = Some(packed);
            }
        }
        Ok(l)
    })?;
    Ok(spec)
}

/// The entries of this file.
pub(crate) const FAMILIES: &[Family] = &[
    Family::code(
        "deepseek_v4",
        "DeepseekV4Config",
        "DeepseekV4ForCausalLM",
        deepseek_v4,
    ),
    Family::code(
        "glm5_next_text",
        "Glm5NextTextConfig",
        "Glm5NextForConditionalGeneration",
        glm5_next_text,
    ),
];
