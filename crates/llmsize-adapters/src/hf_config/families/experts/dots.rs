//! The dots models: dots.llm1 (`dots1`, `modeling_dots1.py`) and dots.llm3's text model
//! (`dots3_note_text`, `modeling_dots3_note.py`: MLA with per-layer shapes, a gated output,
//! a DSA indexer and sliding MLA layers).

use llmsize_core::Category;
use llmsize_core::checked;
use llmsize_core::expr::{Expr, Sym};
use llmsize_core::spec::{Extra, Ffn, Layer, ModelSpec};
use serde_json::{Map, Value};

use super::{dsa_indexer_extras, read_patched, truthy};
use crate::error::ConfigError;
use crate::hf_config::HeadChoice;
use crate::hf_config::family::{
    ALL_SPARSE, AttentionRule, Block, Family, HeadDim, LLAMA, LLAMA_ATTENTION, MlpRule, MoeRule,
    NO, QkNorm, Shared, Sparsity, StandardRule, key, key_or,
};
use crate::hf_config::raw::RawConfig;
use crate::hf_config::runs::{Runs, zip_runs};

// ---------------------------------------------------------------------------------------------
// dots.llm1.

/// dots.llm1 (`modeling_dots1.py`): q/k/v/o biased by `attention_bias`, per-head q/k
/// `RMSNorm`s, `head_dim` `hidden_size // num_attention_heads` (the class has no such field);
/// from layer `first_k_dense_replace` on, `Dots1MoE`: a router `d → E` (its
/// `e_score_correction_bias` is a buffer), `n_routed_experts` gated experts of
/// `moe_intermediate_size` and one shared MLP `n_shared_experts` times as wide; the others a
/// gated MLP of `intermediate_size`. The expert counts default to `null`, which does not build.
const DOTS1: Block = Block {
    hidden: key_or(&["hidden_size"], 4608),
    layers: key_or(&["num_hidden_layers"], 62),
    heads: key_or(&["num_attention_heads"], 32),
    vocab: key_or(&["vocab_size"], 152_064),
    kv_default: Some(32),
    head_dim: HeadDim::KeyOrFloor,
    attention: AttentionRule::Standard(StandardRule {
        qk_norm: QkNorm::PerHead,
        ..LLAMA_ATTENTION
    }),
    mlp: MlpRule {
        width: key_or(&["intermediate_size"], 10944),
        gated: true,
        up_bias: NO,
        down_bias: NO,
    },
    moe: Some(MoeRule {
        experts: key(&["n_routed_experts", "num_local_experts"]),
        top_k: key(&["num_experts_per_tok"]),
        expert_width: key_or(&["moe_intermediate_size"], 1408),
        correction_bias: NO,
        expert_bias: NO,
        shared: Shared::Count(key(&["n_shared_experts"])),
        shared_gate: false,
        sparsity: Sparsity {
            first_dense: Some(key_or(&["first_k_dense_replace"], 0)),
            ..ALL_SPARSE
        },
    }),
    ..LLAMA
};

/// dots.llm1.
pub(super) fn read_dots1(
    raw: &mut RawConfig<'_>,
    family: &Family,
    _: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    read_patched(raw, family, &DOTS1, dots1_windows)
}

/// `sliding_window` 4096 when absent (written in: the sliding layers keep it), and
/// `Dots1Config.__post_init__` without `layer_types`: layers from `max_window_layers`
/// (default 62) slide when `sliding_window` is set.
fn dots1_windows(raw: &mut RawConfig<'_>, map: &mut Map<String, Value>) -> Result<(), ConfigError> {
    if !raw.has("sliding_window") {
        raw.assume("sliding_window", 4096, "absent; `Dots1Config` default");
        map.insert("sliding_window".to_owned(), Value::from(4096));
    }
    if raw.value("layer_types").is_some() {
        return Ok(());
    }
    let n = raw.size_opt("num_hidden_layers")?.unwrap_or(62);
    let from = match raw.uint("max_window_layers")? {
        Some(from) => from,
        None if raw.has("max_window_layers")
            && map.get("sliding_window").is_some_and(|w| !w.is_null()) =>
        {
            return Err(raw.missing(
                "max_window_layers",
                "an integer (`__post_init__` compares each layer index with it)",
            ));
        }
        None => 62,
    };
    let slides = map.get("sliding_window").is_some_and(|w| !w.is_null());
    raw.derived.sliding = Some(Runs::from_index(n, from).map(|&past| past && slides));
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// dots.llm3 (dots3-note): MLA with per-layer shapes, a gated output and a DSA indexer.

/// One override map per layer (`None`: the global config).
pub(crate) type Overrides<'a> = Vec<Option<&'a Map<String, Value>>>;

/// `per_layer_config` (a sparse map from layer index, an integer or a zero-padded string, to
/// the attributes that differ from the global config), as one override map per layer.
pub(crate) fn per_layer_overrides<'a>(
    raw: &RawConfig<'a>,
    n: usize,
) -> Result<Option<Overrides<'a>>, ConfigError> {
    let Some(named) = per_layer_entries(raw, n as u64)? else {
        return Ok(None);
    };
    let mut out = vec![None; n];
    for (i, o) in named {
        // `i < n`, a `usize`: it converts.
        if let Some(slot) = usize::try_from(i).ok().and_then(|i| out.get_mut(i)) {
            *slot = Some(o);
        }
    }
    Ok(Some(out))
}

/// The layers `per_layer_config` names: each one's number and overrides.
type Named<'a> = Vec<(u64, &'a Map<String, Value>)>;

/// `per_layer_config`'s entries (the layer's number below `n`, its overrides) in the
/// config's order, a layer named twice (`4` and `04`) as often; `None` when absent or null.
fn per_layer_entries<'a>(raw: &RawConfig<'a>, n: u64) -> Result<Option<Named<'a>>, ConfigError> {
    let Some(v) = raw.value("per_layer_config") else {
        return Ok(None);
    };
    let map = match v {
        Value::Null => return Ok(None),
        Value::Object(m) => m,
        _ => return Err(raw.invalid("per_layer_config", v, "a map from layer index to overrides")),
    };
    let mut named: Named<'a> = Vec::with_capacity(map.len());
    for (k, o) in map {
        let i = k.parse::<u64>().ok().filter(|i| *i < n).ok_or_else(|| {
            raw.invalid(
                "per_layer_config",
                &Value::from(k.as_str()),
                &format!("layer indices below {n}"),
            )
        })?;
        let o = o.as_object().ok_or_else(|| {
            raw.invalid(&format!("per_layer_config.{k}"), o, "a map of overrides")
        })?;
        named.push((i, o));
    }
    Ok(Some(named))
}

/// The layers `per_layer_config` names (number, overrides), and each layer's entry among them.
type PerLayer<'a> = (Named<'a>, Runs<Option<usize>>);

/// `per_layer_config` as runs over the layers: the index of a named layer's overrides (with
/// the layer's number, for messages), `None` for a layer it does not name; the work is in the
/// number of entries the config lists, never in the layer count.
fn per_layer_runs<'a>(raw: &RawConfig<'a>, n: u64) -> Result<Option<PerLayer<'a>>, ConfigError> {
    let Some(mut named) = per_layer_entries(raw, n)? else {
        return Ok(None);
    };
    // In layer order; a layer named twice (`4` and `04`) takes the later, as the list did.
    named.sort_by_key(|(i, _)| *i);
    let mut kept: Named<'a> = Vec::with_capacity(named.len());
    for (i, o) in named {
        match kept.last_mut() {
            Some((j, m)) if *j == i => *m = o,
            _ => kept.push((i, o)),
        }
    }
    let mut at = Runs::default();
    let mut next = 0u64;
    for (j, (i, _)) in kept.iter().enumerate() {
        // `next ≤ i < n`.
        at.push(None, i.saturating_sub(next));
        at.push(Some(j), 1);
        // saturates: never, i < n (above).
        next = i.saturating_add(1);
    }
    at.push(None, n.saturating_sub(next));
    Ok(Some((kept, at)))
}

/// One dots.llm3 layer's attention shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Dots3Attention {
    heads: u64,
    q_lora: u64,
    kv_lora: u64,
    nope: u64,
    rope: u64,
    v: u64,
    bias: bool,
    window: Option<u64>,
    indexer: Option<(u64, u64)>,
}

/// dots.llm3's text model (`modeling_dots3_note.py`). Each layer's attention reads its own
/// config (`per_layer_config[i]`: the global keys with the layer's overrides): DeepSeek's
/// MLA (`q_a_proj`, `q_a_layernorm`, `q_b_proj`, `kv_a_proj_with_mqa`, `kv_a_layernorm`,
/// `kv_b_proj`, `o_proj`; `attention_bias` on the down projections and `o_proj`), a
/// per-head sigmoid gate `g_proj` (`d → n_h`), an `RMSNorm` of the rotary key
/// (`k_rope_only_layernorm`, a norm by the truth's rules); `indexed_attention` layers add the
/// DSA indexer, whose keys are cached beside the latent, and `sliding_attention` layers keep
/// `sliding_window` tokens. Layer kinds: `layer_types`, else the first two, every 4th from 1
/// (indexed, or full without `use_dsa`) and sliding between (none without
/// `use_sliding_window`); when `per_layer_config` is absent, sliding layers take the `swa_*`
/// shapes (64 heads, ranks 1024/1024, `qk_nope_head_dim` 192, `v_head_dim` 128,
/// `head_dim` 256). MoE layers (`mlp_layer_types`, else from layer `first_k_dense_replace`
/// (1) on every `moe_layer_freq`-th): `n_routed_experts` of `moe_intermediate_size`, a
/// bias-free router, `n_shared_experts` × `shared_experts_intermediate_size` as one shared
/// MLP; dense layers `intermediate_size`.
#[allow(
    clippy::too_many_lines,
    reason = "one list of the keys `Dots3NoteTextConfig.__post_init__` derives"
)]
pub(crate) fn read_dots3_note_text(
    raw: &mut RawConfig<'_>,
    family: &Family,
    _: crate::hf_config::HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let reason = "absent; `Dots3NoteTextConfig` default";
    let d = raw.size_or(&["hidden_size"], Sym::Hidden, 5120, reason)?;
    let layers = raw.size_or(&["num_hidden_layers"], Sym::Layers, 46, reason)?;
    let vocab = raw.size_or(&["vocab_size"], Sym::Vocab, 152_064, reason)?;
    let n = raw.bound_layers("num_hidden_layers", layers)?;
    let tied = raw.flag_or("tie_word_embeddings", false, reason)?;
    // Layer kinds.
    let use_dsa = match raw.flag("use_dsa")? {
        Some(b) => Some(b),
        None if raw.has("per_layer_config") => None,
        None => Some(true),
    };
    let use_sliding = raw.flag("use_sliding_window")?.unwrap_or(true);
    // Each layer's kind, borrowed from the config or one of the class's names.
    let mut types: Runs<&str> = match raw.value("layer_types") {
        Some(v) if !v.is_null() => {
            let list = v
                .as_array()
                .ok_or_else(|| raw.invalid("layer_types", v, "a list of layer kinds"))?;
            if list.len() as u64 != n {
                return Err(raw.invalid("layer_types", v, &format!("one entry per layer ({n})")));
            }
            let mut types = Runs::default();
            for t in list {
                let t = t.as_str().ok_or_else(|| {
                    raw.invalid("layer_types", t, "strings such as `indexed_attention`")
                })?;
                types.push(t, 1);
            }
            types
        }
        _ => {
            let full = if use_dsa == Some(false) {
                "full_attention"
            } else {
                "indexed_attention"
            };
            if use_sliding {
                // The first two and every 4th from layer 1 (`i % 4 == 1`) full, sliding
                // between.
                let mut types = Runs::periodic(
                    n,
                    &[
                        ("sliding_attention", 1),
                        (full, 1),
                        ("sliding_attention", 2),
                    ],
                );
                types.overwrite(0..2, &full);
                types
            } else {
                Runs::uniform(full, n)
            }
        }
    };
    if let Some(dsa) = use_dsa {
        let (old, new) = if dsa {
            ("full_attention", "indexed_attention")
        } else {
            ("indexed_attention", "full_attention")
        };
        types = types.map(|t| if *t == old { new } else { *t });
    }
    for &(t, _) in types.runs() {
        if !matches!(
            t,
            "full_attention" | "indexed_attention" | "sliding_attention"
        ) {
            return Err(raw.invalid(
                "layer_types",
                &Value::from(t),
                "`full_attention`, `indexed_attention` or `sliding_attention`",
            ));
        }
    }
    // Per-layer overrides: given, or the `swa_*` shapes on sliding layers.
    let given = per_layer_runs(raw, n)?;
    let mut swa = Map::new();
    if given.is_none() {
        let mut put =
            |raw: &mut RawConfig<'_>, name: &str, default: u64| -> Result<u64, ConfigError> {
                let key = format!("swa_{name}");
                let v = if let Some(v) = raw.size_opt(&key)? {
                    v
                } else {
                    raw.assume(&key, default, reason);
                    default
                };
                swa.insert(name.to_owned(), Value::from(v));
                Ok(v)
            };
        put(raw, "num_attention_heads", 64)?;
        put(raw, "num_key_value_heads", 64)?;
        put(raw, "q_lora_rank", 1024)?;
        put(raw, "kv_lora_rank", 1024)?;
        let head = put(raw, "head_dim", 256)?;
        let nope = put(raw, "qk_nope_head_dim", 192)?;
        put(raw, "v_head_dim", 128)?;
        let rope = match raw.size_opt("swa_qk_rope_head_dim")? {
            Some(r) => r,
            None => head.checked_sub(nope).filter(|r| *r > 0).ok_or_else(|| {
                raw.invalid(
                    "swa_qk_nope_head_dim",
                    &nope.into(),
                    "below `swa_head_dim` (the rotary part is the rest)",
                )
            })?,
        };
        swa.insert("qk_rope_head_dim".to_owned(), Value::from(rope));
    }
    // A layer's attribute: its override, else the global key, else the class default.
    let global =
        |raw: &mut RawConfig<'_>, key: &str, sym: Sym, default: u64| -> Result<u64, ConfigError> {
            raw.size_or(&[key], sym, default, reason)
        };
    let g_heads = global(raw, "num_attention_heads", Sym::Heads, 128)?;
    let g_q_lora = if raw.has("q_lora_rank") && raw.value("q_lora_rank").is_none() {
        return Err(raw.invalid(
            "q_lora_rank",
            &Value::Null,
            "a rank: Dots 3 Note requires q_lora_rank for MLA queries",
        ));
    } else {
        global(raw, "q_lora_rank", Sym::QueryRank, 1024)?
    };
    let g_kv_lora = global(raw, "kv_lora_rank", Sym::KvRank, 512)?;
    let g_nope = global(raw, "qk_nope_head_dim", Sym::NopeDim, 128)?;
    let g_rope = global(raw, "qk_rope_head_dim", Sym::RopeDim, 64)?;
    let g_v = global(raw, "v_head_dim", Sym::ValueDim, 128)?;
    let g_idx_heads = global(raw, "index_n_heads", Sym::Named("index_n_heads"), 64)?;
    let g_idx_dim = global(raw, "index_head_dim", Sym::Named("d_idx"), 128)?;
    let g_bias = raw.flag_or("attention_bias", false, reason)?;
    let g_window = match raw.size_opt("sliding_window")? {
        Some(w) => w,
        None => {
            if let Some(w) = raw.size_opt("sliding_window_size")? {
                w
            } else {
                raw.assume("sliding_window", 512, reason);
                512
            }
        }
    };
    // Each layer's shape from its type and its own `per_layer_config` entry: one shape per
    // distinct (type, entry), each layer holding its shape's index.
    let none = Runs::uniform(None, n);
    let at = given.as_ref().map_or(&none, |(_, at)| at);
    let mut shapes: Vec<Dots3Attention> = Vec::new();
    let mut shape_index: std::collections::HashMap<Dots3Attention, usize> =
        std::collections::HashMap::new();
    // (type, entry) → shape: compared one by one while few, hashed beyond.
    let mut keys: Vec<(&str, Option<usize>)> = Vec::new();
    let mut shape_of: std::collections::HashMap<(&str, Option<usize>), usize> =
        std::collections::HashMap::new();
    let mut kinds: Runs<usize> = Runs::default();
    for ((t, entry), count) in zip_runs(types.iter(), at.iter()) {
        let known = if keys.len() <= 8 {
            keys.iter().position(|k| *k == (t, entry))
        } else {
            shape_of.get(&(t, entry)).copied()
        };
        if let Some(k) = known {
            kinds.push(k, count);
            continue;
        }
        let (i, o): (u64, Option<&Map<String, Value>>) = match (&given, entry) {
            (Some((named, _)), Some(j)) => match named.get(j) {
                Some((i, o)) => (*i, Some(*o)),
                None => (0, None),
            },
            (None, _) if t == "sliding_attention" => (0, Some(&swa)),
            (Some(_) | None, _) => (0, None),
        };
        let get = |key: &str, g: u64| -> Result<u64, ConfigError> {
            match o.and_then(|m| m.get(key)) {
                None => Ok(g),
                Some(v) => v.as_u64().filter(|x| *x > 0).ok_or_else(|| {
                    raw.invalid(
                        &format!("per_layer_config.{i}.{key}"),
                        v,
                        "a positive integer",
                    )
                }),
            }
        };
        let heads = get("num_attention_heads", g_heads)?;
        let kv_heads = match o.and_then(|m| m.get("num_key_value_heads")) {
            Some(_) => get("num_key_value_heads", heads)?,
            None if o.is_some_and(|m| m.contains_key("num_attention_heads")) => heads,
            None => heads,
        };
        if kv_heads != heads {
            return Err(raw.invalid(
                "num_key_value_heads",
                &kv_heads.into(),
                &format!("the layer's `num_attention_heads` ({heads})"),
            ));
        }
        if o.and_then(|m| m.get("q_lora_rank"))
            .is_some_and(Value::is_null)
        {
            return Err(raw.invalid(
                &format!("per_layer_config.{i}.q_lora_rank"),
                &Value::Null,
                "a rank: Dots 3 Note requires q_lora_rank for MLA queries",
            ));
        }
        let bias = match o.and_then(|m| m.get("attention_bias")) {
            None => g_bias,
            Some(Value::Bool(b)) => *b,
            Some(v) => {
                return Err(raw.invalid(
                    &format!("per_layer_config.{i}.attention_bias"),
                    v,
                    "`true` or `false`",
                ));
            }
        };
        let indexed = t == "indexed_attention";
        let kind = Dots3Attention {
            heads,
            q_lora: get("q_lora_rank", g_q_lora)?,
            kv_lora: get("kv_lora_rank", g_kv_lora)?,
            nope: get("qk_nope_head_dim", g_nope)?,
            rope: get("qk_rope_head_dim", g_rope)?,
            v: get("v_head_dim", g_v)?,
            bias,
            window: if t == "sliding_attention" {
                Some(get("sliding_window", g_window)?)
            } else {
                None
            },
            indexer: if indexed {
                Some((
                    get("index_n_heads", g_idx_heads)?,
                    get("index_head_dim", g_idx_dim)?,
                ))
            } else {
                None
            },
        };
        // Equal shapes (named layers with the same overrides) are one.
        let k = *shape_index.entry(kind).or_insert(shapes.len());
        if k == shapes.len() {
            shapes.push(kind);
        }
        shape_of.insert((t, entry), k);
        keys.push((t, entry));
        kinds.push(k, count);
    }
    // MLP kinds.
    let sparse: Runs<bool> = match raw.value("mlp_layer_types") {
        Some(v) if !v.is_null() => {
            let list = v
                .as_array()
                .ok_or_else(|| raw.invalid("mlp_layer_types", v, "a list of `dense`/`sparse`"))?;
            if list.len() as u64 != n {
                return Err(raw.invalid(
                    "mlp_layer_types",
                    v,
                    &format!("one entry per layer ({n})"),
                ));
            }
            let mut sparse = Runs::default();
            for t in list {
                match t.as_str() {
                    Some("sparse") => sparse.push(true, 1),
                    Some("dense") => sparse.push(false, 1),
                    _ => return Err(raw.invalid("mlp_layer_types", t, "`dense` or `sparse`")),
                }
            }
            sparse
        }
        _ => {
            // Sparse from layer `first_k_dense_replace` on, where `moe_layer_freq` says.
            let first = raw.uint("first_k_dense_replace")?.unwrap_or(1);
            let on = match raw.value("moe_layer_freq") {
                None => Runs::uniform(true, n),
                Some(Value::Array(list)) => {
                    let shown = n.min(list.len() as u64);
                    let mut on = Runs::from_list(
                        list.iter()
                            .take(usize::try_from(shown).unwrap_or(usize::MAX))
                            .map(truthy),
                    );
                    on.push(false, n.saturating_sub(shown));
                    on
                }
                Some(v) => match v.as_u64() {
                    Some(f) if f > 0 => Runs::at_offset(n, f, 0),
                    _ => {
                        return Err(raw.invalid(
                            "moe_layer_freq",
                            v,
                            "a positive integer or a flag per layer",
                        ));
                    }
                },
            };
            Runs::from_index(n, first)
                .zip(&on)
                .map(|&(from, on)| from && on)
        }
    };
    let experts = raw.size_or(
        &["n_routed_experts", "num_local_experts"],
        Sym::Experts,
        256,
        reason,
    )?;
    let top_k = raw.size_or(&["num_experts_per_tok"], Sym::TopK, 8, reason)?;
    if top_k > experts {
        return Err(raw.invalid(
            "num_experts_per_tok",
            &top_k.into(),
            &format!("at most the number of experts ({experts})"),
        ));
    }
    let width = raw.size_or(&["moe_intermediate_size"], Sym::ExpertFfn, 1536, reason)?;
    let shared_width = raw.size_or(
        &[
            "shared_experts_intermediate_size",
            "moe_shared_expert_intermediate_size",
        ],
        Sym::Named("shared_experts_intermediate_size"),
        1536,
        reason,
    )?;
    let shared_count = raw.size_or(
        &["n_shared_experts"],
        Sym::Named("n_shared_experts"),
        1,
        reason,
    )?;
    let shared = raw.mul(
        shared_width,
        shared_count,
        "shared_experts_intermediate_size·n_shared_experts",
    )?;
    raw.source(
        Sym::SharedFfn,
        "shared_experts_intermediate_size·n_shared_experts",
    );
    let dense_width = raw.size_or(&["intermediate_size"], Sym::Ffn, 13824, reason)?;
    let moe = llmsize_core::spec::Moe {
        num_experts: experts,
        experts_per_token: top_k,
        expert: crate::hf_config::decoder::mlp(d, width, true, false),
        router_bias: llmsize_core::spec::RouterBias::None,
        router: true,
        shared: Some(crate::hf_config::decoder::mlp(d, shared, true, false)),
        shared_gate: false,
    };
    let dense = crate::hf_config::decoder::mlp(d, dense_width, true, false);
    let mut overflow = None;
    let stack = kinds.zip_layers(&sparse, |&(k, sparse)| {
        // Every index is of a shape made above.
        let a = shapes.get(k).copied().unwrap_or(Dots3Attention {
            heads: g_heads,
            q_lora: g_q_lora,
            kv_lora: g_kv_lora,
            nope: g_nope,
            rope: g_rope,
            v: g_v,
            bias: g_bias,
            window: None,
            indexer: None,
        });
        let mut extras = vec![Extra::linear(
            "self_attn.g_proj.weight",
            "attention",
            Category::Attention,
            Expr::sym(Sym::Hidden, d),
            Expr::sym(Sym::Heads, a.heads),
        )];
        if let Some((heads, dim)) = a.indexer {
            extras.extend(dsa_indexer_extras(d, a.q_lora, heads, dim));
        }
        let latent = llmsize_core::spec::LatentAttention {
            hidden: d,
            num_heads: a.heads,
            q_lora_rank: Some(a.q_lora),
            kv_lora_rank: a.kv_lora,
            qk_nope_head_dim: a.nope,
            qk_rope_head_dim: a.rope,
            v_head_dim: a.v,
            bias: a.bias,
            // `Dots3NoteTextModel` builds the indexed layers' rotary tables from
            // `inputs_embeds.float()`, so the indexer's rotated keys are cached in float32
            // whatever the model's dtype: four bytes an element, two bf16 widths.
            indexer_key_dim: match a
                .indexer
                .map(|(_, dim)| checked::mul("2·index_head_dim", dim, 2))
            {
                Some(Ok(w)) => Some(w),
                Some(Err(e)) => {
                    overflow.get_or_insert(e);
                    None
                }
                None => None,
            },
            category: Category::Attention,
        };
        let attention = if a.window.is_some() {
            extras.extend(latent_extras(&latent));
            windowed_latent_cache(&latent).unwrap_or_else(|e| {
                overflow.get_or_insert(e);
                llmsize_core::spec::Attention::Absent
            })
        } else {
            llmsize_core::spec::Attention::Latent(latent)
        };
        Layer {
            attention,
            cross_attention: None,
            ffn: if sparse {
                Ffn::Moe(moe.clone())
            } else {
                Ffn::Dense(dense)
            },
            norms: vec![
                llmsize_core::spec::Norm::rms_norm(d),
                llmsize_core::spec::Norm::rms_norm(d),
                llmsize_core::spec::Norm::rms_norm(a.rope),
            ],
            sliding_window: a.window,
            extras,
            state: None,
        }
    });
    if let Some(e) = overflow {
        return raw.check(Err(e));
    }
    Ok(crate::hf_config::decoder::Decoder::new(
        family.model_type,
        crate::hf_config::architecture(raw, family.architecture),
        d,
        vocab,
        stack,
        Some(llmsize_core::spec::Norm::rms_norm(d)),
        tied,
    )
    .into_spec())
}

/// An MLA's tensors as extras (`q_a_proj`, `q_a_layernorm`, `q_b_proj`, `kv_a_proj_with_mqa`,
/// `kv_a_layernorm`, `kv_b_proj`, `o_proj`; `bias` on the down projections and `o_proj`),
/// counted as [`LatentAttention`](llmsize_core::spec::LatentAttention) counts them, for a
/// sliding-window MLA layer whose cache [`windowed_latent_cache`] holds.
fn latent_extras(a: &llmsize_core::spec::LatentAttention) -> Vec<Extra> {
    let part = "attention (MLA, sliding)";
    let c = a.category;
    let hidden = || Expr::sym(Sym::Hidden, a.hidden);
    let heads = || Expr::sym(Sym::Heads, a.num_heads);
    let rope = || Expr::sym(Sym::RopeDim, a.qk_rope_head_dim);
    let kv = || Expr::sym(Sym::KvRank, a.kv_lora_rank);
    let qk = || {
        Expr::product(vec![
            heads(),
            Expr::sum(vec![Expr::sym(Sym::NopeDim, a.qk_nope_head_dim), rope()]),
        ])
    };
    let out = || Expr::product(vec![heads(), Expr::sym(Sym::ValueDim, a.v_head_dim)]);
    let mut e = Vec::new();
    match a.q_lora_rank {
        Some(r) => {
            let q = || Expr::sym(Sym::QueryRank, r);
            e.push(Extra::linear(
                "self_attn.q_a_proj.weight",
                part,
                c,
                hidden(),
                q(),
            ));
            if a.bias {
                e.push(Extra::vector("self_attn.q_a_proj.bias", part, c, q()));
            }
            e.push(Extra::vector(
                "self_attn.q_a_layernorm.weight",
                part,
                c,
                q(),
            ));
            e.push(Extra::linear(
                "self_attn.q_b_proj.weight",
                part,
                c,
                q(),
                qk(),
            ));
        }
        None => e.push(Extra::linear(
            "self_attn.q_proj.weight",
            part,
            c,
            hidden(),
            qk(),
        )),
    }
    let down = || Expr::sum(vec![kv(), rope()]);
    e.push(Extra::linear(
        "self_attn.kv_a_proj_with_mqa.weight",
        part,
        c,
        hidden(),
        down(),
    ));
    if a.bias {
        e.push(Extra::vector(
            "self_attn.kv_a_proj_with_mqa.bias",
            part,
            c,
            down(),
        ));
    }
    e.push(Extra::vector(
        "self_attn.kv_a_layernorm.weight",
        part,
        c,
        kv(),
    ));
    e.push(Extra::linear(
        "self_attn.kv_b_proj.weight",
        part,
        c,
        kv(),
        Expr::product(vec![
            heads(),
            Expr::sum(vec![
                Expr::sym(Sym::NopeDim, a.qk_nope_head_dim),
                Expr::sym(Sym::ValueDim, a.v_head_dim),
            ]),
        ]),
    ));
    e.push(Extra::linear(
        "self_attn.o_proj.weight",
        part,
        c,
        out(),
        hidden(),
    ));
    if a.bias {
        e.push(Extra::vector("self_attn.o_proj.bias", part, c, hidden()));
    }
    e
}

/// The cache of a sliding-window MLA layer: the latent (`kv_lora_rank + qk_rope_head_dim`,
/// plus any indexer key) per kept token. llmsize's latent caches do not slide, so the layer
/// caches it as one head, which the window then trims as transformers'
/// `DynamicSlidingWindowLayer` does; its weights are [`latent_extras`]. The head is as wide as
/// the mean of the query/key and value head widths, so the score and value products count as
/// MLA's do (as for MiMo-V2-Flash), and the rest of the latent is held as an index key.
fn windowed_latent_cache(
    a: &llmsize_core::spec::LatentAttention,
) -> Result<llmsize_core::spec::Attention, llmsize_core::Overflow> {
    let latent = checked::sum(
        "kv_lora_rank + qk_rope_head_dim + index key",
        [
            a.kv_lora_rank,
            a.qk_rope_head_dim,
            a.indexer_key_dim.unwrap_or(0),
        ],
    )?;
    let mean = checked::sum(
        "qk_nope_head_dim + qk_rope_head_dim + v_head_dim",
        [a.qk_nope_head_dim, a.qk_rope_head_dim, a.v_head_dim],
    )? / 2;
    // One head of `d_h` caches `2·d_h` (`mean ≤ 2^63`); a latent narrower than that is held
    // as half-width heads.
    let head = if mean > 0 && latent / 2 >= mean {
        mean
    } else {
        (latent / 2).max(1)
    };
    let mut s = crate::hf_config::decoder::mha(a.hidden, a.num_heads, 1, head, false);
    // `2·head ≤ latent` unless the latent is 1 wide (then nothing is left).
    let rest = latent.saturating_sub(checked::mul("2·d_h", head, 2)?);
    s.indexer_key_dim = (rest > 0).then_some(rest);
    Ok(llmsize_core::spec::Attention::CacheOnly(s))
}
