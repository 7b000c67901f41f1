//! Mixture-of-experts decoders: GLM-4-MoE and its kin (Sarvam, Solar-Open), MiniMax-M2/M3
//! (text), ERNIE-4.5-MoE, Llama 4 (text), Phi-MoE, Granite-MoE-shared/-SWA, EXAONE-MoE,
//! `FlexOlmo`, Aria (text), Cohere2-MoE, HY-V3, MiMo-V2-Flash, Laguna, `AFMoE`, Kolibri-1,
//! A.X-K1, Beam, Flint and Inkling (text); and, read by code, `JetMoE` (a mixture of attention
//! experts), dots.llm3 (text), A.X-K2, HY-V4 (and HY-V4-VL's text), which add DeepSeek's
//! sparse-attention indexer to MLA (its keys cached beside the latent), and Inkling 2 Loop
//! (text). Each entry is the configuration class's defaults and the switches of its
//! `modeling_*.py` (transformers 5.24).
//!
//! transformers 5 stores routed experts as fused 3-D tensors (`gate_up_proj` `[E, 2f, d]`,
//! `down_proj` `[E, d, f]`): the count is that of `E` gated MLPs. An
//! `e_score_correction_bias` registered as a buffer is not a parameter; where a family makes
//! it an `nn.Parameter` (ERNIE's `moe_statics`, Laguna's router, `AFMoE`'s `expert_bias`) it
//! counts as a router bias of `E`.
//!
//! Per-layer lists a `__post_init__` derives (`layer_types`, `mlp_layer_types`, `moe_layers`)
//! are computed here and written into a copy of the config ([`read_patched`]), which the
//! generic block then reads.

use llmsize_core::Category;
use llmsize_core::expr::{Expr, Sym};
use llmsize_core::spec::{Extra, Ffn, Layer, Layers, ModelSpec, NormKind, OutputHead};
use serde_json::{Map, Value};

use crate::error::ConfigError;
use crate::hf_config::family::{
    AttentionRule, Block, Family, HeadDim, LLAMA, LLAMA_ATTENTION, LLAMA_MLP, MlpRule, MoeRule, NO,
    NormRule, PLAIN_ATTENTION, QkNorm, Shared, Sparsity, StandardRule, Switch, Windows, YES,
    key_or, read_block, unbiased_mlp,
};
use crate::hf_config::family::{map_layers_by, try_map_kinds};
use crate::hf_config::raw::RawConfig;
use crate::hf_config::runs::{Runs, zip_runs};
use llmsize_core::checked;

// ---------------------------------------------------------------------------------------------
// Helpers for tweaks.

/// Change every MoE block of the spec.
fn map_moe(spec: &mut ModelSpec, mut f: impl FnMut(&mut llmsize_core::spec::Moe)) {
    for stack in &mut spec.stacks {
        let kinds: Vec<Layer> = stack.layers.kinds().to_vec();
        let mut out = Layers::new();
        for run in stack.layers.runs() {
            if let Some(kind) = kinds.get(run.kind) {
                let mut layer = kind.clone();
                if let Ffn::Moe(m) = &mut layer.ffn {
                    f(m);
                }
                out.push_run(layer, run.count);
            }
        }
        stack.layers = out;
    }
}

/// Read `block` from a copy of the config that `patch` changed (a key the modeling code
/// derives in a way the block does not, written in), keeping the assumptions and sources.
pub(super) fn read_patched(
    raw: &mut RawConfig<'_>,
    family: &Family,
    block: &Block,
    patch: impl FnOnce(&mut RawConfig<'_>, &mut Map<String, Value>) -> Result<(), ConfigError>,
) -> Result<ModelSpec, ConfigError> {
    let mut map = raw.map.clone();
    patch(raw, &mut map)?;
    let mut inner = raw.sibling(&map);
    inner.derived = std::mem::take(&mut raw.derived);
    let spec = read_block(&mut inner, family, block)?;
    for a in inner.assumptions {
        raw.assume(&a.field, a.value, &a.reason);
    }
    for (symbol, source) in inner.sources {
        raw.source(symbol, &source);
    }
    raw.read.borrow_mut().extend(inner.read.into_inner());
    Ok(spec)
}

// ---------------------------------------------------------------------------------------------
// Per-layer lists the block cannot read directly, derived as runs (`RawConfig::derived`).

/// `mlp_layer_types` (`"dense"`/`"sparse"` per layer), when present, replaces
/// `first_k_dense_replace`: its dense entries become the derived dense layers.
fn mlp_layer_types(
    raw: &mut RawConfig<'_>,
    map: &mut Map<String, Value>,
) -> Result<(), ConfigError> {
    let Some(v) = raw.value("mlp_layer_types") else {
        return Ok(());
    };
    let list = v
        .as_array()
        .ok_or_else(|| raw.invalid("mlp_layer_types", v, "a list of `dense`/`sparse`"))?;
    let n = raw.size(&["num_hidden_layers"], Sym::Layers)?;
    if list.len() as u64 != n {
        return Err(raw.invalid("mlp_layer_types", v, &format!("one entry per layer ({n})")));
    }
    let mut dense = Runs::default();
    for t in list {
        match t.as_str() {
            Some("dense") => dense.push(true, 1),
            Some("sparse" | "moe") => dense.push(false, 1),
            _ => return Err(raw.invalid("mlp_layer_types", t, "`dense` or `sparse`")),
        }
    }
    map.insert("first_k_dense_replace".to_owned(), Value::from(0));
    raw.derived.dense = Some(dense);
    Ok(())
}

/// `mlp_layer_types` when present, else the first `first` layers dense (a `__post_init__`
/// default such as `["dense"] + ["sparse"] * (num_hidden_layers - 1)`).
fn dense_types_or_first(
    raw: &mut RawConfig<'_>,
    map: &mut Map<String, Value>,
    first: u64,
) -> Result<(), ConfigError> {
    if raw.value("mlp_layer_types").is_some() {
        return mlp_layer_types(raw, map);
    }
    let n = raw.size(&["num_hidden_layers"], Sym::Layers)?;
    raw.derived.dense = Some(Runs::from_index(n, first).map(|moe| !moe));
    Ok(())
}

/// Dense layers from `mlp_layer_types`, else the first layer only.
fn dense_first_layer(
    raw: &mut RawConfig<'_>,
    map: &mut Map<String, Value>,
) -> Result<(), ConfigError> {
    dense_types_or_first(raw, map, 1)
}

/// Dense layers only where `mlp_layer_types` (or the family's rule) says so.
const LISTED_DENSE: Sparsity = Sparsity {
    first_dense: None,
    step: None,
    dense_list: None,
};

/// `layer_types` when present, else `sliding(num_hidden_layers)`, which layers slide by a
/// `__post_init__` rule, as runs.
fn layer_types_or(
    raw: &mut RawConfig<'_>,
    sliding: impl FnOnce(u64) -> Runs<bool>,
) -> Result<(), ConfigError> {
    if raw.value("layer_types").is_none() {
        let n = raw.size(&["num_hidden_layers"], Sym::Layers)?;
        raw.derived.sliding = Some(sliding(n));
    }
    Ok(())
}

/// All but every `every`-th layer slide (`(i + 1) % every != 0`).
fn all_but_every(n: u64, every: u64) -> Runs<bool> {
    Runs::every(n, every).map(|global| !global)
}

/// The standard attention of a layer, to change.
fn standard(layer: &mut Layer) -> Option<&mut llmsize_core::spec::StandardAttention> {
    match &mut layer.attention {
        llmsize_core::spec::Attention::Standard(a) => Some(a),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------
// GLM-4-MoE and the families built on its modeling code.

/// GLM-4-MoE (`modeling_glm4_moe.py`): q/k/v biased by `attention_bias` (never `o_proj`),
/// per-head q/k norms with `use_qk_norm`, `n_shared_experts` experts of
/// `moe_intermediate_size` as one shared MLP, the first `first_k_dense_replace` layers dense
/// (`intermediate_size`); the router has no bias (`e_score_correction_bias` is a buffer).
const GLM4_MOE: Block = Block {
    kv_default: Some(8),
    attention: AttentionRule::Standard(StandardRule {
        qkv_bias: Switch::Key("attention_bias", false),
        o_bias: NO,
        qk_norm: QkNorm::PerHead,
        qk_norm_on: Switch::Key("use_qk_norm", false),
        ..PLAIN_ATTENTION
    }),
    mlp: MlpRule {
        up_bias: NO,
        down_bias: NO,
        ..LLAMA_MLP
    },
    moe: Some(MoeRule {
        experts: key_or(&["n_routed_experts", "num_local_experts"], 128),
        top_k: key_or(&["num_experts_per_tok"], 8),
        expert_width: key_or(&["moe_intermediate_size"], 1408),
        router_bias: NO,
        expert_bias: NO,
        shared: Shared::Count(key_or(&["n_shared_experts"], 1)),
        shared_gate: false,
        sparsity: Sparsity {
            first_dense: Some(key_or(&["first_k_dense_replace"], 1)),
            step: None,
            dense_list: None,
        },
    }),
    ..LLAMA
};

/// [`GLM4_MOE`] as registered: `head_dim` absent is `hidden_size // num_attention_heads`, rounded
/// down (the blocks built on it keep the divisibility check).
const GLM4_MOE_FLOORED: Block = Block {
    head_dim: HeadDim::KeyOrFloor,
    ..GLM4_MOE
};

/// Sarvam-MoE (`modular_sarvam_moe.py`: GLM-4-MoE's modeling): `head_dim` 64, q/k norms on
/// by default, 4 KV heads; `use_qkv_bias`, `num_experts` and `num_shared_experts` are
/// aliases of `attention_bias`, `n_routed_experts` and `n_shared_experts`.
const SARVAM_MOE: Block = Block {
    kv_default: Some(4),
    head_dim: HeadDim::KeyOr(64),
    attention: AttentionRule::Standard(StandardRule {
        qkv_bias: Switch::Key("attention_bias", false),
        o_bias: NO,
        qk_norm: QkNorm::PerHead,
        qk_norm_on: Switch::Key("use_qk_norm", true),
        ..PLAIN_ATTENTION
    }),
    moe: Some(MoeRule {
        experts: key_or(
            &["n_routed_experts", "num_local_experts", "num_experts"],
            128,
        ),
        top_k: key_or(&["num_experts_per_tok"], 6),
        expert_width: key_or(&["moe_intermediate_size"], 1024),
        shared: Shared::Count(key_or(&["n_shared_experts", "num_shared_experts"], 1)),
        ..GLM4_MOE_RULE
    }),
    ..GLM4_MOE
};

/// GLM-4-MoE's expert rule, for the entries that change a field of it.
const GLM4_MOE_RULE: MoeRule = MoeRule {
    experts: key_or(&["n_routed_experts", "num_local_experts"], 128),
    top_k: key_or(&["num_experts_per_tok"], 8),
    expert_width: key_or(&["moe_intermediate_size"], 1408),
    router_bias: NO,
    expert_bias: NO,
    shared: Shared::Count(key_or(&["n_shared_experts"], 1)),
    shared_gate: false,
    sparsity: Sparsity {
        first_dense: Some(key_or(&["first_k_dense_replace"], 1)),
        step: None,
        dense_list: None,
    },
};

/// Sarvam's alias `use_qkv_bias` of `attention_bias`.
fn sarvam_patch(raw: &RawConfig<'_>, map: &mut Map<String, Value>) {
    if raw.value("attention_bias").is_none()
        && let Some(v) = raw.value("use_qkv_bias")
    {
        map.insert("attention_bias".to_owned(), v.clone());
    }
}

/// Solar-Open (`modeling_solar_open.py`): GLM-4-MoE without q/k norms or dense layers,
/// `head_dim` 128.
const SOLAR_OPEN: Block = Block {
    head_dim: HeadDim::KeyOr(128),
    attention: AttentionRule::Standard(StandardRule {
        qkv_bias: Switch::Key("attention_bias", false),
        o_bias: NO,
        ..PLAIN_ATTENTION
    }),
    moe: Some(MoeRule {
        expert_width: key_or(&["moe_intermediate_size"], 1280),
        sparsity: crate::hf_config::family::ALL_SPARSE,
        ..GLM4_MOE_RULE
    }),
    ..GLM4_MOE
};

// ---------------------------------------------------------------------------------------------
// MiniMax-M2.

/// MiniMax-M2 (`modeling_minimax_m2.py`): no biases, q/k norms over the full projection
/// widths, every layer MoE with experts of `intermediate_size`; `e_score_correction_bias` is
/// a buffer.
const MINIMAX_M2: Block = Block {
    kv_default: Some(8),
    head_dim: HeadDim::KeyOr(128),
    attention: AttentionRule::Standard(StandardRule {
        qk_norm: QkNorm::FullWidth,
        ..PLAIN_ATTENTION
    }),
    mlp: GLM4_MOE.mlp,
    moe: Some(MoeRule {
        experts: key_or(&["num_local_experts", "num_experts"], 256),
        top_k: key_or(&["num_experts_per_tok"], 8),
        expert_width: key_or(&["intermediate_size"], 1536),
        router_bias: NO,
        expert_bias: NO,
        shared: Shared::None,
        shared_gate: false,
        sparsity: crate::hf_config::family::ALL_SPARSE,
    }),
    ..LLAMA
};

// ---------------------------------------------------------------------------------------------
// ERNIE-4.5-MoE.

/// ERNIE-4.5-MoE (`modeling_ernie4_5_moe.py`): every projection (attention, dense and shared
/// MLPs, `lm_head`) biased by `use_bias`; layer `i` is MoE when `(i + 1) %
/// moe_layer_interval == 0` and `moe_layer_start_index ≤ i ≤ moe_layer_end_index` (−1: the
/// last layer); `moe_num_shared_experts` experts of `moe_intermediate_size` as one shared MLP;
/// `moe_statics.e_score_correction_bias` is a parameter of `E` (counted as the router's bias).
const ERNIE4_5_MOE: Block = Block {
    kv_default: Some(4),
    attention: AttentionRule::Standard(StandardRule {
        qkv_bias: Switch::Key("use_bias", false),
        o_bias: Switch::Key("use_bias", false),
        ..LLAMA_ATTENTION
    }),
    mlp: MlpRule {
        width: key_or(&["intermediate_size"], 12288),
        up_bias: Switch::Key("use_bias", false),
        down_bias: Switch::Key("use_bias", false),
        ..LLAMA_MLP
    },
    moe: Some(MoeRule {
        experts: key_or(&["moe_num_experts", "num_experts"], 64),
        top_k: key_or(&["moe_k", "num_experts_per_tok"], 6),
        expert_width: key_or(&["moe_intermediate_size"], 1536),
        router_bias: YES,
        expert_bias: NO,
        shared: Shared::Count(key_or(&["moe_num_shared_experts"], 2)),
        shared_gate: false,
        sparsity: Sparsity {
            first_dense: Some(key_or(&["moe_layer_start_index"], 1)),
            step: Some("moe_layer_interval"),
            dense_list: None,
        },
    }),
    tie: true,
    tweak: Some(ernie_tweak),
    ..LLAMA
};

/// ERNIE: layers past `moe_layer_end_index` are dense; the shared MLP and `lm_head` carry
/// biases with `use_bias`.
fn ernie_tweak(raw: &mut RawConfig<'_>, spec: &mut ModelSpec) -> Result<(), ConfigError> {
    let reason = "absent; `Ernie4_5_MoeConfig` default";
    let bias = raw.flag_or("use_bias", false, reason)?;
    let end = match raw.value("moe_layer_end_index") {
        None => None,
        Some(v) => match v.as_i64() {
            Some(-1) => None,
            Some(n) if n >= 0 => Some(n.cast_unsigned()),
            _ => {
                return Err(raw.invalid(
                    "moe_layer_end_index",
                    v,
                    "a layer index, or -1 for the last layer",
                ));
            }
        },
    };
    if let Some(end) = end {
        let dense = crate::hf_config::decoder::mlp(
            spec.hidden_size,
            raw.size_or(&["intermediate_size"], Sym::Ffn, 12288, reason)?,
            true,
            bias,
        );
        // saturates: never, a layer index below the layer count.
        let past_end = Runs::from_index(spec.num_layers(), end.saturating_add(1));
        map_layers_by(spec, &past_end, |layer, past| {
            let mut l = layer.clone();
            if *past && matches!(l.ffn, Ffn::Moe(_)) {
                l.ffn = Ffn::Dense(dense);
            }
            Ok(l)
        })?;
    }
    if bias {
        map_moe(spec, |m| {
            if let Some(s) = &mut m.shared {
                s.up_bias = true;
                s.down_bias = true;
            }
        });
        if let OutputHead::Lm { biases, .. } = &mut spec.head {
            *biases = 1;
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Llama 4 (text).

/// Llama 4's text model (`modeling_llama4.py`): q/k/v/o biased by `attention_bias`, its q/k
/// norm an L2 norm without weights; MoE layers (`moe_layers`, else every
/// `interleave_moe_layer_step`-th) have 16 experts of `intermediate_size`, a bias-free router
/// and one shared expert of `intermediate_size`; the other layers a dense MLP of
/// `intermediate_size_mlp`. `RoPE` layers (`no_rope_layers`, else all but every
/// `no_rope_layer_interval`-th) attend in chunks of `attention_chunk_size`, which the cache
/// keeps as a sliding window of that size.
const LLAMA4_TEXT: Block = Block {
    kv_default: Some(8),
    head_dim: HeadDim::KeyOr(128),
    mlp: unbiased_mlp(key_or(&["intermediate_size_mlp"], 16384)),
    moe: Some(MoeRule {
        experts: key_or(&["num_local_experts"], 16),
        top_k: key_or(&["num_experts_per_tok"], 1),
        expert_width: key_or(&["intermediate_size"], 8192),
        router_bias: NO,
        expert_bias: NO,
        shared: Shared::Width(key_or(&["intermediate_size"], 8192)),
        shared_gate: false,
        sparsity: Sparsity {
            first_dense: None,
            step: Some("interleave_moe_layer_step"),
            dense_list: None,
        },
    }),
    ..LLAMA
};

/// `Llama4TextConfig.__post_init__`: `moe_layers` and `layer_types` (chunked attention as a
/// sliding window of `attention_chunk_size`).
fn llama4_patch(raw: &mut RawConfig<'_>, map: &mut Map<String, Value>) -> Result<(), ConfigError> {
    let reason = "absent; `Llama4TextConfig` default";
    let n = raw.size(&["num_hidden_layers"], Sym::Layers)?;
    if let Some(v) = raw.value("moe_layers") {
        let list = v
            .as_array()
            .ok_or_else(|| raw.invalid("moe_layers", v, "a list of layer indices"))?;
        let moe = list
            .iter()
            .map(|x| {
                x.as_u64()
                    .ok_or_else(|| raw.invalid("moe_layers", x, "layer indices"))
            })
            .collect::<Result<Vec<u64>, _>>()?;
        raw.derived.dense = Some(Runs::marked(n, moe, &false, &true));
        map.insert("interleave_moe_layer_step".to_owned(), Value::from(1));
    } else if !raw.has("interleave_moe_layer_step") {
        raw.assume("interleave_moe_layer_step", 1, reason);
    }
    let chunk = if raw.has("attention_chunk_size") {
        raw.size_opt("attention_chunk_size")?
    } else {
        raw.assume("attention_chunk_size", 8192, reason);
        Some(8192)
    };
    // `chunked_attention` layers are read as sliding (`family::windows`).
    let sliding = if let Some(v) = raw.value("layer_types") {
        let list = v
            .as_array()
            .ok_or_else(|| raw.invalid("layer_types", v, "a list of layer kinds"))?;
        let mut sliding = false;
        for t in list {
            let t = t
                .as_str()
                .ok_or_else(|| raw.invalid("layer_types", t, "strings such as `full_attention`"))?;
            sliding |= matches!(t, "chunked_attention" | "sliding_attention");
        }
        sliding
    } else {
        let rope: Runs<bool> = match raw.value("no_rope_layers") {
            Some(Value::Array(list)) if !list.is_empty() => {
                if (list.len() as u64) < n {
                    return Err(raw.invalid(
                        "no_rope_layers",
                        &Value::from(list.len()),
                        &format!("one entry per layer ({n})"),
                    ));
                }
                let mut rope = Runs::default();
                for x in list.iter().take(usize::try_from(n).unwrap_or(usize::MAX)) {
                    let on = match x.as_u64() {
                        Some(b) => b != 0,
                        None => x.as_bool().ok_or_else(|| {
                            raw.invalid("no_rope_layers", x, "1 (RoPE) or 0 (NoPE)")
                        })?,
                    };
                    rope.push(on, 1);
                }
                rope
            }
            _ => {
                let interval = if raw.has("no_rope_layer_interval") {
                    raw.size(
                        &["no_rope_layer_interval"],
                        Sym::Named("no_rope_layer_interval"),
                    )?
                } else {
                    raw.assume("no_rope_layer_interval", 4, reason);
                    4
                };
                all_but_every(n, interval)
            }
        };
        let sliding = rope.map(|r| *r && chunk.is_some());
        let any = sliding.any(|s| *s);
        raw.derived.sliding = Some(sliding);
        any
    };
    match chunk {
        Some(c) => {
            map.insert("sliding_window".to_owned(), Value::from(c));
        }
        None if sliding => {
            return Err(raw.missing("attention_chunk_size", "the chunk size of chunked layers"));
        }
        None => {}
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Phi-3.5-MoE, Granite-MoE-shared, EXAONE-MoE, FlexOlmo.

/// Phi-MoE (`modeling_phimoe.py`): `LayerNorm`s with biases, q/k/v/o biased by
/// `attention_bias`, 16 experts of `intermediate_size` behind a bias-free router, every layer
/// sliding when `sliding_window` is set, `lm_head` biased by `lm_head_bias`.
const PHIMOE: Block = Block {
    kv_default: Some(8),
    head_dim: HeadDim::KeyOrSplit,
    mlp: GLM4_MOE.mlp,
    moe: Some(MoeRule {
        experts: key_or(&["num_local_experts"], 16),
        top_k: key_or(&["num_experts_per_tok"], 2),
        expert_width: key_or(&["intermediate_size"], 6400),
        router_bias: NO,
        expert_bias: NO,
        shared: Shared::None,
        shared_gate: false,
        sparsity: crate::hf_config::family::ALL_SPARSE,
    }),
    norm: NormRule {
        kind: NormKind::LayerNorm,
        bias: YES,
        per_layer: 2,
    },
    windows: Windows::All,
    tweak: Some(phimoe_tweak),
    ..LLAMA
};

/// Phi-MoE's `lm_head` bias.
fn phimoe_tweak(raw: &mut RawConfig<'_>, spec: &mut ModelSpec) -> Result<(), ConfigError> {
    if raw.flag_or("lm_head_bias", false, "absent; `PhimoeConfig` default")?
        && let OutputHead::Lm { biases, .. } = &mut spec.head
    {
        *biases = 1;
    }
    Ok(())
}

/// Granite-MoE-shared (`modeling_granitemoeshared.py`): Granite-MoE (q/k/v/o biased by
/// `attention_bias`, experts of `intermediate_size`, bias-free router) plus, when
/// `shared_intermediate_size` is not 0, a shared gated MLP of that width.
const GRANITEMOESHARED: Block = Block {
    kv_default: None,
    mlp: GLM4_MOE.mlp,
    moe: Some(MoeRule {
        experts: key_or(&["num_local_experts"], 8),
        top_k: key_or(&["num_experts_per_tok"], 2),
        expert_width: key_or(&["intermediate_size"], 11008),
        router_bias: NO,
        expert_bias: NO,
        shared: Shared::None,
        shared_gate: false,
        sparsity: crate::hf_config::family::ALL_SPARSE,
    }),
    tweak: Some(granite_shared_tweak),
    ..LLAMA
};

/// Granite's shared MLP (`input_linear` `d → 2·s`, `output_linear` `s → d`), absent at 0.
fn granite_shared_tweak(raw: &mut RawConfig<'_>, spec: &mut ModelSpec) -> Result<(), ConfigError> {
    let width = if let Some(w) = raw.uint("shared_intermediate_size")? {
        w
    } else {
        raw.assume(
            "shared_intermediate_size",
            0,
            "absent; the config class default (no shared MLP)",
        );
        0
    };
    if width > 0 {
        raw.source(Sym::SharedFfn, "shared_intermediate_size");
        let shared = crate::hf_config::decoder::mlp(spec.hidden_size, width, true, false);
        map_moe(spec, |m| m.shared = Some(shared));
    }
    Ok(())
}

/// Granite-MoE-SWA (`modeling_granitemoe_swa.py`): Granite-MoE-shared with a learned sink per
/// head in every layer; sliding layers from `layer_types`, else all but every 4th from the
/// first.
const GRANITEMOE_SWA: Block = Block {
    attention: AttentionRule::Standard(StandardRule {
        sinks: YES,
        ..LLAMA_ATTENTION
    }),
    ..GRANITEMOESHARED
};

/// `GraniteMoeSWAConfig.__post_init__`: layer `i` is global when `i % 4 == 0`.
fn granite_swa_patch(
    raw: &mut RawConfig<'_>,
    _: &mut Map<String, Value>,
) -> Result<(), ConfigError> {
    layer_types_or(raw, |n| Runs::periodic(n, &[(false, 1), (true, 3)]))
}

/// EXAONE-MoE (`modeling_exaone_moe.py`): no biases, per-head q/k norms, `num_experts` of
/// `moe_intermediate_size` with `num_shared_experts` of that width as one shared MLP; dense
/// layers from `mlp_layer_types`, else the first `first_k_dense_replace`; sliding layers from
/// `layer_types`, else all but every `sliding_window_pattern`-th.
const EXAONE_MOE: Block = Block {
    kv_default: Some(32),
    attention: AttentionRule::Standard(StandardRule {
        qk_norm: QkNorm::PerHead,
        ..PLAIN_ATTENTION
    }),
    mlp: GLM4_MOE.mlp,
    moe: Some(MoeRule {
        experts: key_or(&["num_experts"], 64),
        top_k: key_or(&["num_experts_per_tok"], 8),
        expert_width: key_or(&["moe_intermediate_size"], 1024),
        router_bias: NO,
        expert_bias: NO,
        shared: Shared::Count(key_or(&["num_shared_experts"], 1)),
        shared_gate: false,
        sparsity: Sparsity {
            first_dense: Some(key_or(&["first_k_dense_replace"], 1)),
            step: None,
            dense_list: None,
        },
    }),
    windows: Windows::Pattern(4),
    ..LLAMA
};

/// `FlexOlmo` (`modeling_flex_olmo.py`): `OLMo2`'s block (q/k norms over the full projection
/// widths, post-attention and post-MLP norms) with every MLP a mixture of `num_experts`
/// experts of `intermediate_size`.
const FLEX_OLMO: Block = Block {
    kv_default: None,
    attention: AttentionRule::Standard(StandardRule {
        qk_norm: QkNorm::FullWidth,
        ..LLAMA_ATTENTION
    }),
    mlp: GLM4_MOE.mlp,
    moe: Some(MoeRule {
        experts: key_or(&["num_experts", "num_local_experts"], 7),
        top_k: key_or(&["num_experts_per_tok"], 5),
        expert_width: key_or(&["intermediate_size"], 11008),
        router_bias: NO,
        expert_bias: NO,
        shared: Shared::None,
        shared_gate: false,
        sparsity: crate::hf_config::family::ALL_SPARSE,
    }),
    ..LLAMA
};

// ---------------------------------------------------------------------------------------------
// Aria (text), Cohere2-MoE.

/// Aria's text model (`modeling_aria.py`): Llama's attention, every layer a mixture of
/// `moe_num_experts` experts of `intermediate_size` (bias-free router) plus
/// `moe_num_shared_experts` of that width as one shared MLP biased by `mlp_bias`; `head_dim`
/// `hidden_size // num_attention_heads` when absent.
const ARIA_TEXT: Block = Block {
    kv_default: None,
    mlp: GLM4_MOE.mlp,
    moe: Some(MoeRule {
        experts: key_or(&["moe_num_experts"], 8),
        top_k: key_or(&["moe_topk"], 2),
        expert_width: key_or(&["intermediate_size"], 4096),
        router_bias: NO,
        expert_bias: NO,
        shared: Shared::Count(key_or(&["moe_num_shared_experts"], 2)),
        shared_gate: false,
        sparsity: crate::hf_config::family::ALL_SPARSE,
    }),
    tweak: Some(aria_tweak),
    ..LLAMA
};

/// [`ARIA_TEXT`] as registered: `head_dim` absent is `hidden_size // num_attention_heads`, rounded
/// down (the blocks built on it keep the divisibility check).
const ARIA_TEXT_FLOORED: Block = Block {
    head_dim: HeadDim::KeyOrFloor,
    ..ARIA_TEXT
};

/// Aria's shared experts carry biases with `mlp_bias`.
fn aria_tweak(raw: &mut RawConfig<'_>, spec: &mut ModelSpec) -> Result<(), ConfigError> {
    if raw.flag_or("mlp_bias", false, "absent; `AriaTextConfig` default")? {
        map_moe(spec, |m| {
            if let Some(s) = &mut m.shared {
                s.up_bias = true;
                s.down_bias = true;
            }
        });
    }
    Ok(())
}

/// Cohere2-MoE (`modeling_cohere2_moe.py`): a parallel block (one norm, weight only), q/k/v/o
/// biased by `attention_bias`, no q/k norms, tied; MoE layers have `num_experts` experts of
/// `intermediate_size` (bias-free router) and `num_shared_experts` of that width as one shared
/// MLP; dense layers (`mlp_layer_types`, else the first `first_k_dense_replace`) an MLP of
/// `prefix_dense_intermediate_size` (else `intermediate_size`). Sliding layers from
/// `layer_types`, else by `prefix_dense_sliding_window_pattern` over the dense prefix and
/// `sliding_window_pattern` over the rest.
const COHERE2_MOE: Block = Block {
    kv_default: None,
    head_dim: HeadDim::KeyOr(128),
    mlp: MlpRule {
        width: key_or(
            &["prefix_dense_intermediate_size", "intermediate_size"],
            22528,
        ),
        up_bias: NO,
        down_bias: NO,
        ..LLAMA_MLP
    },
    moe: Some(MoeRule {
        experts: key_or(&["num_experts"], 8),
        top_k: key_or(&["num_experts_per_tok"], 2),
        expert_width: key_or(&["intermediate_size"], 22528),
        router_bias: NO,
        expert_bias: NO,
        shared: Shared::Count(key_or(&["num_shared_experts"], 0)),
        shared_gate: false,
        sparsity: Sparsity {
            first_dense: None,
            step: None,
            dense_list: None,
        },
    }),
    norm: NormRule {
        per_layer: 1,
        ..crate::hf_config::family::RMS2
    },
    tie: true,
    ..LLAMA
};

/// `Cohere2MoeConfig.__post_init__`: `layer_types` and `mlp_layer_types` from
/// `first_k_dense_replace` when absent.
fn cohere2_moe_patch(
    raw: &mut RawConfig<'_>,
    map: &mut Map<String, Value>,
) -> Result<(), ConfigError> {
    let reason = "absent; `Cohere2MoeConfig` default";
    let n = raw.size(&["num_hidden_layers"], Sym::Layers)?;
    let first = raw.uint("first_k_dense_replace")?.unwrap_or(0);
    if raw.value("layer_types").is_none() {
        let pattern = |raw: &mut RawConfig<'_>, k: &str, d: u64| -> Result<u64, ConfigError> {
            if raw.has(k) {
                raw.size(&[k], Sym::Named("sliding_window_pattern"))
            } else {
                raw.assume(k, d, reason);
                Ok(d)
            }
        };
        let prefix = pattern(raw, "prefix_dense_sliding_window_pattern", 1)?;
        let rest = pattern(raw, "sliding_window_pattern", 4)?;
        // The first `first` layers by `prefix` (`(i + 1) % prefix`), the rest by `rest`
        // counted from layer `first`.
        let head = n.min(first);
        let mut sliding = all_but_every(head, prefix);
        sliding.append(all_but_every(n.saturating_sub(head), rest));
        raw.derived.sliding = Some(sliding);
    }
    if raw.value("mlp_layer_types").is_none() {
        raw.derived.dense = Some(Runs::from_index(n, first).map(|moe| !moe));
        Ok(())
    } else {
        mlp_layer_types(raw, map)
    }
}

// ---------------------------------------------------------------------------------------------
// HY-V3, MiMo-V2-Flash, Laguna: per-layer lists of attention and MLP kinds.

/// HY-V3 (`modeling_hy_v3.py`): q/k/v/o biased by `attention_bias`, per-head q/k norms, MLPs
/// biased by `mlp_bias`; MoE layers (`mlp_layer_types`, else all but the first) have
/// `num_experts` experts of `moe_intermediate_size`, a bias-free router (its
/// `e_score_correction_bias` is a buffer) and `num_shared_experts` of that width as one
/// shared MLP.
const HY_V3: Block = Block {
    kv_default: Some(8),
    head_dim: HeadDim::KeyOr(128),
    attention: AttentionRule::Standard(StandardRule {
        qk_norm: QkNorm::PerHead,
        ..LLAMA_ATTENTION
    }),
    mlp: MlpRule {
        width: key_or(&["intermediate_size"], 13312),
        ..LLAMA_MLP
    },
    moe: Some(MoeRule {
        experts: key_or(&["num_experts", "num_local_experts"], 192),
        top_k: key_or(&["num_experts_per_tok"], 8),
        expert_width: key_or(&["moe_intermediate_size"], 1536),
        router_bias: NO,
        expert_bias: NO,
        shared: Shared::Count(key_or(&["num_shared_experts"], 1)),
        shared_gate: false,
        sparsity: LISTED_DENSE,
    }),
    tweak: Some(shared_mlp_bias),
    ..LLAMA
};

/// The shared experts carry biases with `mlp_bias`.
fn shared_mlp_bias(raw: &mut RawConfig<'_>, spec: &mut ModelSpec) -> Result<(), ConfigError> {
    if raw.flag("mlp_bias")? == Some(true) {
        map_moe(spec, |m| {
            if let Some(s) = &mut m.shared {
                s.up_bias = true;
                s.down_bias = true;
            }
        });
    }
    Ok(())
}

/// MiMo-V2-Flash (`modeling_mimo_v2_flash.py`): q/k of `head_dim` (192), v/o of `v_head_dim`
/// (128); sliding layers (`layer_types`, else all but the first and every 6th) have twice
/// `num_key_value_heads` and a learned sink per head; q/k/v biased by `attention_bias`, never
/// `o_proj`; MoE layers (`mlp_layer_types`, else all but the first) have `n_routed_experts`
/// experts of `moe_intermediate_size` behind a bias-free router, no shared expert.
const MIMO_V2_FLASH: Block = Block {
    kv_default: Some(4),
    head_dim: HeadDim::KeyOr(192),
    attention: AttentionRule::Standard(StandardRule {
        qkv_bias: Switch::Key("attention_bias", false),
        o_bias: NO,
        ..PLAIN_ATTENTION
    }),
    mlp: unbiased_mlp(key_or(&["intermediate_size"], 16384)),
    moe: Some(MoeRule {
        experts: key_or(&["n_routed_experts", "num_local_experts"], 256),
        top_k: key_or(&["num_experts_per_tok"], 8),
        expert_width: key_or(&["moe_intermediate_size"], 2048),
        router_bias: NO,
        expert_bias: NO,
        shared: Shared::None,
        shared_gate: false,
        sparsity: LISTED_DENSE,
    }),
    ..LLAMA
};

/// `MiMoV2FlashConfig.__post_init__`: `layer_types`, `mlp_layer_types`, and
/// `sliding_window_size + 1` as the window.
fn mimo_patch(raw: &mut RawConfig<'_>, map: &mut Map<String, Value>) -> Result<(), ConfigError> {
    // Global: the first layer and every 6th.
    layer_types_or(raw, |n| {
        let mut sliding = all_but_every(n, 6);
        sliding.overwrite(0..1, &false);
        sliding
    })?;
    if let Some(w) = raw.uint("sliding_window_size")? {
        map.insert(
            "sliding_window".to_owned(),
            // saturates: harmless, a window past any context takes every token either way.
            Value::from(w.saturating_add(1)),
        );
    } else if !raw.has("sliding_window") {
        raw.assume("sliding_window", 129, "absent; `MiMoV2FlashConfig` default");
        map.insert("sliding_window".to_owned(), Value::from(129));
    }
    dense_first_layer(raw, map)
}

/// MiMo-V2-Flash: q and k are `head_dim` wide per head, v and o `v_head_dim`. Every count
/// (projections, the cache's keys plus values, the score and value products) is that of a
/// head of the mean width `(head_dim + v_head_dim) / 2`, which the spec holds; `q_proj`'s bias
/// (`n_h·head_dim`) is an extra. Sliding layers double the KV heads and carry sinks.
fn read_mimo(
    raw: &mut RawConfig<'_>,
    family: &Family,
    _: crate::hf_config::HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let mut spec = read_patched(raw, family, &MIMO_V2_FLASH, mimo_patch)?;
    let reason = "absent; `MiMoV2FlashConfig` default";
    let qk = raw.size_or(&["head_dim"], Sym::HeadDim, 192, reason)?;
    let v = raw.size_or(&["v_head_dim"], Sym::Named("v_head_dim"), 128, reason)?;
    let sum = qk
        .checked_add(v)
        .ok_or_else(|| raw.invalid("v_head_dim", &v.into(), "a width below 2^63"))?;
    if !sum.is_multiple_of(2) {
        return Err(raw.invalid(
            "v_head_dim",
            &v.into(),
            "a width of the same parity as `head_dim` (llmsize holds the mean head width)",
        ));
    }
    let mean = sum / 2;
    let bias = raw.flag_or("attention_bias", false, reason)?;
    let mut err = None;
    try_map_kinds(&mut spec, |layer| {
        let mut l = layer.clone();
        let sliding = l.sliding_window.is_some();
        if let Some(a) = standard(&mut l) {
            a.head_dim = mean;
            a.q_bias = false;
            if sliding {
                match a.num_kv_heads.checked_mul(2) {
                    Some(k) => a.num_kv_heads = k,
                    None => err = Some(()),
                }
                a.sinks = true;
            }
            if bias {
                let n = a.num_heads;
                l.extras.push(Extra::vector(
                    "self_attn.q_proj.bias",
                    "attention",
                    Category::Attention,
                    Expr::product(vec![Expr::sym(Sym::Heads, n), Expr::sym(Sym::HeadDim, qk)]),
                ));
            }
        }
        Ok(l)
    })?;
    if err.is_some() {
        return Err(raw.invalid(
            "num_key_value_heads",
            &Value::Null,
            "a count whose double fits",
        ));
    }
    Ok(spec)
}

/// Laguna (`modeling_laguna.py`): per-layer query heads (`num_attention_heads_per_layer`),
/// per-head q/k norms, a softplus output gate `g_proj` (`d → n_h`, or `n_h·d_h` unless
/// `gating` is `true`/`"per-head"`), q/k/v/o biased by `attention_bias`; MoE layers
/// (`mlp_layer_types`, else all but the first) have `num_experts` experts of
/// `moe_intermediate_size`, a router whose `e_score_correction_bias` is a parameter of `E`,
/// and a shared MLP of `shared_expert_intermediate_size`.
const LAGUNA: Block = Block {
    kv_default: Some(8),
    head_dim: HeadDim::KeyOr(128),
    attention: AttentionRule::Standard(StandardRule {
        qk_norm: QkNorm::PerHead,
        ..LLAMA_ATTENTION
    }),
    mlp: unbiased_mlp(key_or(&["intermediate_size"], 8192)),
    moe: Some(MoeRule {
        experts: key_or(&["num_experts"], 256),
        top_k: key_or(&["num_experts_per_tok"], 8),
        expert_width: key_or(&["moe_intermediate_size"], 512),
        router_bias: YES,
        expert_bias: NO,
        shared: Shared::Width(key_or(&["shared_expert_intermediate_size"], 512)),
        shared_gate: false,
        sparsity: LISTED_DENSE,
    }),
    ..LLAMA
};

/// Laguna: per-layer heads and the output gate.
fn read_laguna(
    raw: &mut RawConfig<'_>,
    family: &Family,
    _: crate::hf_config::HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let mut spec = read_patched(raw, family, &LAGUNA, dense_first_layer)?;
    let per_head = match raw.value("gating") {
        None | Some(Value::Bool(true)) => true,
        Some(Value::Bool(false)) => false,
        Some(Value::String(s)) if s == "per-head" => true,
        Some(Value::String(s)) if s == "per-element" => false,
        Some(v) => {
            return Err(raw.invalid("gating", v, "true, false, `per-head` or `per-element`"));
        }
    };
    let heads: Option<Vec<u64>> = match raw.value("num_attention_heads_per_layer") {
        None => None,
        Some(v) => {
            let list = v.as_array().ok_or_else(|| {
                raw.invalid("num_attention_heads_per_layer", v, "a head count per layer")
            })?;
            let counts = list
                .iter()
                .map(|x| match x.as_u64() {
                    Some(n) if n > 0 => Ok(n),
                    _ => {
                        Err(raw.invalid("num_attention_heads_per_layer", x, "positive head counts"))
                    }
                })
                .collect::<Result<Vec<u64>, _>>()?;
            if (counts.len() as u64) < spec.num_layers() {
                return Err(raw.invalid(
                    "num_attention_heads_per_layer",
                    v,
                    &format!("one entry per layer ({})", spec.num_layers()),
                ));
            }
            Some(counts)
        }
    };
    // Each layer's head count from the list (itself one entry per layer), else its own.
    let heads = match heads {
        Some(counts) => Runs::from_list(counts.into_iter().map(Some)),
        None => Runs::uniform(None, spec.num_layers()),
    };
    map_layers_by(&mut spec, &heads, |layer, heads| {
        let mut l = layer.clone();
        if let Some(a) = standard(&mut l) {
            if let Some(n) = heads {
                a.num_heads = *n;
            }
            let (n, d, hidden) = (a.num_heads, a.head_dim, a.hidden);
            let out = if per_head {
                Expr::sym(Sym::Heads, n)
            } else {
                Expr::product(vec![Expr::sym(Sym::Heads, n), Expr::sym(Sym::HeadDim, d)])
            };
            l.extras.push(Extra::linear(
                "self_attn.g_proj.weight",
                "attention",
                Category::Attention,
                Expr::sym(Sym::Hidden, hidden),
                out,
            ));
        }
        Ok(l)
    })?;
    Ok(spec)
}

// ---------------------------------------------------------------------------------------------
// AFMoE.

/// `AFMoE` (`modeling_afmoe.py`): per-head q/k norms, a sigmoid output gate `gate_proj`
/// (`d → n_h·d_h`), q/k/v/o biased by `attention_bias`, four norms per layer; the first
/// `num_dense_layers` layers dense, the others `num_experts` experts of
/// `moe_intermediate_size` with a router whose `expert_bias` is a parameter of `E`, and
/// `num_shared_experts` of that width as one shared MLP. Sliding layers from `layer_types`,
/// else all but every `global_attn_every_n_layers`-th.
const AFMOE: Block = Block {
    kv_default: None,
    head_dim: HeadDim::KeyOr(128),
    attention: AttentionRule::Standard(StandardRule {
        qk_norm: QkNorm::PerHead,
        ..LLAMA_ATTENTION
    }),
    mlp: unbiased_mlp(key_or(&["intermediate_size"], 6144)),
    moe: Some(MoeRule {
        experts: key_or(&["num_experts"], 64),
        top_k: key_or(&["num_experts_per_tok"], 6),
        expert_width: key_or(&["moe_intermediate_size"], 1408),
        router_bias: YES,
        expert_bias: NO,
        shared: Shared::Count(key_or(&["num_shared_experts"], 2)),
        shared_gate: false,
        sparsity: Sparsity {
            first_dense: Some(key_or(&["num_dense_layers"], 1)),
            step: None,
            dense_list: None,
        },
    }),
    norm: NormRule {
        per_layer: 4,
        ..crate::hf_config::family::RMS2
    },
    tweak: Some(output_gate_full),
    ..LLAMA
};

/// `AfmoeConfig.__post_init__`: `layer_types` from `global_attn_every_n_layers`.
fn afmoe_patch(raw: &mut RawConfig<'_>, _: &mut Map<String, Value>) -> Result<(), ConfigError> {
    if raw.value("layer_types").is_none() {
        let every = raw.size_or(
            &["global_attn_every_n_layers"],
            Sym::Named("global_attn_every_n_layers"),
            4,
            "absent; `AfmoeConfig` default",
        )?;
        layer_types_or(raw, |n| all_but_every(n, every))?;
    }
    Ok(())
}

/// A gate `d → n_h·d_h` on the attention output (`self_attn.gate_proj`), in every layer.
fn output_gate_full(_: &mut RawConfig<'_>, spec: &mut ModelSpec) -> Result<(), ConfigError> {
    output_gate(spec, false)
}

/// The output gate `self_attn.gate_proj` (`d → n_h·d_h`) of every layer, with a bias of one
/// per head (`gate_bias`) when `head_bias`.
fn output_gate(spec: &mut ModelSpec, head_bias: bool) -> Result<(), ConfigError> {
    try_map_kinds(spec, |layer| {
        let mut l = layer.clone();
        if let Some(a) = standard(&mut l) {
            let (n, d, hidden) = (a.num_heads, a.head_dim, a.hidden);
            l.extras.push(Extra::linear(
                "self_attn.gate_proj.weight",
                "attention",
                Category::Attention,
                Expr::sym(Sym::Hidden, hidden),
                Expr::product(vec![Expr::sym(Sym::Heads, n), Expr::sym(Sym::HeadDim, d)]),
            ));
            if head_bias {
                l.extras.push(Extra::vector(
                    "self_attn.gate_bias",
                    "attention",
                    Category::Attention,
                    Expr::sym(Sym::Heads, n),
                ));
            }
        }
        Ok(l)
    })
}

// ---------------------------------------------------------------------------------------------
// Beam.

/// Beam (`modeling_beam.py`): per-head q/k norms, an output gate `gate_proj` (`d → n_h·d_h`)
/// with a bias per head, q/k/v/o biased by `attention_bias`, four norms per layer; MoE layers
/// (`mlp_layer_types`, else all but the first 3) have `num_experts` experts of
/// `moe_intermediate_size` behind a bias-free router, no shared expert. Sliding layers from
/// `layer_types`, else all but every 6th and the last.
const BEAM: Block = Block {
    kv_default: Some(8),
    head_dim: HeadDim::KeyOr(128),
    attention: AttentionRule::Standard(StandardRule {
        qk_norm: QkNorm::PerHead,
        ..LLAMA_ATTENTION
    }),
    mlp: unbiased_mlp(key_or(&["intermediate_size"], 20480)),
    moe: Some(MoeRule {
        experts: key_or(&["num_experts"], 256),
        top_k: key_or(&["num_experts_per_tok"], 8),
        expert_width: key_or(&["moe_intermediate_size"], 2560),
        router_bias: NO,
        expert_bias: NO,
        shared: Shared::None,
        shared_gate: false,
        sparsity: LISTED_DENSE,
    }),
    norm: NormRule {
        per_layer: 4,
        ..crate::hf_config::family::RMS2
    },
    tweak: Some(|_, spec| output_gate(spec, true)),
    ..LLAMA
};

/// `BeamConfig.__post_init__`: `layer_types` and `mlp_layer_types` when absent.
fn beam_patch(raw: &mut RawConfig<'_>, map: &mut Map<String, Value>) -> Result<(), ConfigError> {
    // Global: every 6th layer and the last.
    layer_types_or(raw, |n| {
        let mut sliding = all_but_every(n, 6);
        sliding.overwrite(n.saturating_sub(1)..n, &false);
        sliding
    })?;
    dense_types_or_first(raw, map, 3)
}

// ---------------------------------------------------------------------------------------------
// Kolibri-1.

/// Kolibri-1 (`modeling_kolibri1.py`): no biases, per-head q/k norms, four norms per layer;
/// every layer `num_experts` experts of `moe_intermediate_size` (bias-free router; its
/// `e_score_correction_bias` is a buffer) plus a shared MLP of
/// `shared_expert_intermediate_size`. Sliding layers from `layer_types`, else all but every
/// 5th.
const KOLIBRI1: Block = Block {
    kv_default: Some(4),
    head_dim: HeadDim::KeyOr(128),
    attention: AttentionRule::Standard(StandardRule {
        qk_norm: QkNorm::PerHead,
        ..PLAIN_ATTENTION
    }),
    mlp: GLM4_MOE.mlp,
    moe: Some(MoeRule {
        experts: key_or(&["num_local_experts", "num_experts"], 384),
        top_k: key_or(&["num_experts_per_tok"], 6),
        expert_width: key_or(&["moe_intermediate_size"], 512),
        router_bias: NO,
        expert_bias: NO,
        shared: Shared::Width(key_or(&["shared_expert_intermediate_size"], 512)),
        shared_gate: false,
        sparsity: crate::hf_config::family::ALL_SPARSE,
    }),
    norm: NormRule {
        per_layer: 4,
        ..crate::hf_config::family::RMS2
    },
    ..LLAMA
};

// ---------------------------------------------------------------------------------------------
// A.X-K1: DeepSeek-V3 with a norm after each MoE block.

/// A.X-K1 (`modeling_axk1.py`): DeepSeek-V3's latent attention (`q_a_proj`,
/// `kv_a_proj_with_mqa` and `o_proj` biased by `attention_bias`) and MoE (`n_routed_experts`
/// of `moe_intermediate_size`, bias-free router whose `e_score_correction_bias` is a buffer,
/// `n_shared_experts` of that width as one shared MLP), plus a `post_mlp_layernorm` in each
/// MoE block. Dense layers from `mlp_layer_types`, else those below `first_k_dense_replace`
/// or off `moe_layer_freq`.
const AXK1: Block = Block {
    kv_default: None,
    attention: AttentionRule::Latent {
        q_lora_default: Some(1536),
        bias: Switch::Key("attention_bias", false),
    },
    mlp: unbiased_mlp(key_or(&["intermediate_size"], 18432)),
    moe: Some(MoeRule {
        experts: key_or(&["n_routed_experts", "num_local_experts"], 192),
        top_k: key_or(&["num_experts_per_tok"], 8),
        expert_width: key_or(&["moe_intermediate_size"], 2048),
        router_bias: NO,
        expert_bias: NO,
        shared: Shared::Count(key_or(&["n_shared_experts"], 1)),
        shared_gate: false,
        sparsity: LISTED_DENSE,
    }),
    tweak: Some(post_moe_norm),
    ..LLAMA
};

/// `AXK1Config.__post_init__`: `mlp_layer_types` from `first_k_dense_replace` (1) and
/// `moe_layer_freq` (1) when absent.
fn axk1_patch(raw: &mut RawConfig<'_>, map: &mut Map<String, Value>) -> Result<(), ConfigError> {
    if raw.value("mlp_layer_types").is_some() {
        return mlp_layer_types(raw, map);
    }
    let n = raw.size(&["num_hidden_layers"], Sym::Layers)?;
    let first = raw.uint("first_k_dense_replace")?.unwrap_or(1);
    let freq = raw.size_opt("moe_layer_freq")?.unwrap_or(1);
    // Sparse where `i ≥ first` and `i % freq == 0`.
    let on_freq = Runs::periodic(n, &[(true, 1), (false, freq.saturating_sub(1))]);
    let sparse = Runs::from_index(n, first).zip(&on_freq);
    raw.derived.dense = Some(sparse.map(|&(from, on)| !(from && on)));
    Ok(())
}

/// An `RMSNorm` of `d` after every MoE block (`mlp.post_mlp_layernorm`).
fn post_moe_norm(_: &mut RawConfig<'_>, spec: &mut ModelSpec) -> Result<(), ConfigError> {
    let d = spec.hidden_size;
    try_map_kinds(spec, |layer| {
        let mut l = layer.clone();
        if matches!(l.ffn, Ffn::Moe(_)) {
            l.norms.push(llmsize_core::spec::Norm::rms_norm(d));
        }
        Ok(l)
    })
}

// ---------------------------------------------------------------------------------------------
// Flint.

/// Flint (`modeling_flint.py`): per-head q/k norms, a learned sink per head, q/k/v/o biased
/// by `attention_bias`; layers off `mlp_only_layers` (else `[0, 1]`) and on
/// `decoder_sparse_step` have `num_experts` experts of `moe_intermediate_size` (bias-free
/// router) plus a shared MLP of `shared_expert_intermediate_size`. Global layers from
/// `layer_types`, else the first two, every 4th from layer 1, and the last.
const FLINT: Block = Block {
    kv_default: Some(4),
    head_dim: HeadDim::KeyOr(128),
    attention: AttentionRule::Standard(StandardRule {
        qk_norm: QkNorm::PerHead,
        sinks: YES,
        ..LLAMA_ATTENTION
    }),
    mlp: unbiased_mlp(key_or(&["intermediate_size"], 6144)),
    moe: Some(MoeRule {
        experts: key_or(&["num_experts"], 256),
        top_k: key_or(&["num_experts_per_tok"], 6),
        expert_width: key_or(&["moe_intermediate_size"], 512),
        router_bias: NO,
        expert_bias: NO,
        shared: Shared::Width(key_or(&["shared_expert_intermediate_size"], 1024)),
        shared_gate: false,
        sparsity: Sparsity {
            first_dense: None,
            step: Some("decoder_sparse_step"),
            dense_list: None,
        },
    }),
    ..LLAMA
};

/// `FlintConfig.__post_init__`: `layer_types`, and `mlp_only_layers` `[0, 1]` when absent.
fn flint_patch(raw: &mut RawConfig<'_>, _: &mut Map<String, Value>) -> Result<(), ConfigError> {
    // Global: the first two, every 4th from layer 1 (`i % 4 == 1`), and the last.
    layer_types_or(raw, |n| {
        let mut sliding = Runs::periodic(n, &[(true, 1), (false, 1), (true, 2)]);
        sliding.overwrite(0..2, &false);
        sliding.overwrite(n.saturating_sub(1)..n, &false);
        sliding
    })?;
    let n = raw.size(&["num_hidden_layers"], Sym::Layers)?;
    let only = if raw.value("mlp_only_layers").is_some() {
        crate::hf_config::family::index_list(raw, "mlp_only_layers", n)?
    } else {
        raw.assume("mlp_only_layers", "[0, 1]", "absent; `FlintConfig` default");
        vec![0, 1]
    };
    raw.derived.dense = Some(Runs::marked(n, only, &true, &false));
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// MiniMax-M3 (text).

/// MiniMax-M3's text model (`modeling_minimax_m3_vl.py`): no biases, per-head q/k norms;
/// MoE layers (`mlp_layer_types`, else `moe_layer_freq`, else all) have `num_local_experts`
/// experts of `intermediate_size` (bias-free router; `e_score_correction_bias` is a buffer)
/// and a shared MLP of `shared_intermediate_size`; dense layers an MLP of
/// `dense_intermediate_size`. Layers with the sparse "lightning indexer"
/// (`minimax_m3_sparse`) also cache index keys, which llmsize does not hold: such configs
/// are refused.
const MINIMAX_M3_TEXT: Block = Block {
    kv_default: Some(4),
    head_dim: HeadDim::KeyOr(128),
    attention: AttentionRule::Standard(StandardRule {
        qk_norm: QkNorm::PerHead,
        ..PLAIN_ATTENTION
    }),
    mlp: unbiased_mlp(key_or(&["dense_intermediate_size"], 12288)),
    moe: Some(MoeRule {
        experts: key_or(&["num_local_experts", "num_experts"], 128),
        top_k: key_or(&["num_experts_per_tok"], 4),
        expert_width: key_or(&["intermediate_size"], 3072),
        router_bias: NO,
        expert_bias: NO,
        shared: Shared::Width(key_or(&["shared_intermediate_size"], 3072)),
        shared_gate: false,
        sparsity: LISTED_DENSE,
    }),
    ..LLAMA
};

/// A per-layer flag list entry as Python reads it (`if f`).
fn truthy(f: &Value) -> bool {
    f.as_bool() == Some(true)
        || f.as_u64().is_some_and(|n| n > 0)
        || f.as_f64().is_some_and(|x| x != 0.0)
}

/// `MiniMaxM3VLTextConfig.__post_init__`: which layers build the sparse lightning indexer
/// (`layer_types` entries `minimax_m3_sparse`, else `sparse_attention_config.
/// sparse_attention_freq`, else none).
fn minimax_m3_sparse_layers(raw: &RawConfig<'_>, n: u64) -> Result<Runs<bool>, ConfigError> {
    let (key, list) = if let Some(v) = raw.value("layer_types") {
        let list = v
            .as_array()
            .ok_or_else(|| raw.invalid("layer_types", v, "a list of layer kinds"))?;
        let list = Runs::from_list(list.iter().map(|t| t.as_str() == Some("minimax_m3_sparse")));
        ("layer_types", list)
    } else if let Some(v) = raw
        .value("sparse_attention_config")
        .and_then(|c| c.get("sparse_attention_freq"))
    {
        let list = v.as_array().ok_or_else(|| {
            raw.invalid(
                "sparse_attention_config.sparse_attention_freq",
                v,
                "a flag per layer",
            )
        })?;
        (
            "sparse_attention_config.sparse_attention_freq",
            Runs::from_list(list.iter().map(truthy)),
        )
    } else {
        return Ok(Runs::uniform(false, n));
    };
    let len = list.len().unwrap_or(u64::MAX);
    if len != n {
        return Err(raw.invalid(
            key,
            &Value::from(len),
            &format!("one entry per layer ({n})"),
        ));
    }
    Ok(list)
}

/// `MiniMaxM3VLTextConfig.__post_init__`: `layer_types` from `sparse_attention_freq` (no
/// layer slides either way: [`minimax_m3_sparse_layers`] places the indexers) and
/// `mlp_layer_types` from `moe_layer_freq`, else all sparse.
fn minimax_m3_patch(
    raw: &mut RawConfig<'_>,
    map: &mut Map<String, Value>,
) -> Result<(), ConfigError> {
    let n = raw.size(&["num_hidden_layers"], Sym::Layers)?;
    if raw.value("layer_types").is_none() {
        minimax_m3_sparse_layers(raw, n)?;
        raw.derived.sliding = Some(Runs::uniform(false, n));
    }
    if raw.value("mlp_layer_types").is_some() {
        return mlp_layer_types(raw, map);
    }
    if let Some(v) = raw.value("moe_layer_freq")
        && let Some(list) = v.as_array()
    {
        if list.len() as u64 > n {
            return Err(raw.invalid(
                "moe_layer_freq",
                v,
                &format!("at most one entry per layer ({n})"),
            ));
        }
        let mut dense = Runs::from_list(list.iter().map(|f| !truthy(f)));
        dense.push(false, n.saturating_sub(list.len() as u64));
        raw.derived.dense = Some(dense);
    }
    Ok(())
}

/// MiniMax-M3's text model: the block, then on sparse layers the lightning indexer
/// (`MiniMaxM3VLIndexer`: `q_proj` `d → index_n_heads·index_head_dim`, `k_proj`
/// `d → index_head_dim`, per-head q/k `RMSNorm`s of `index_head_dim`, all under `self_attn`),
/// whose keys (`index_head_dim` per token) the cache keeps beside K and V. The sizes come
/// from `index_*`, overridden by the legacy `sparse_attention_config` keys.
fn read_minimax_m3_text(
    raw: &mut RawConfig<'_>,
    family: &Family,
    _: crate::hf_config::HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let mut spec = read_patched(raw, family, &MINIMAX_M3_TEXT, minimax_m3_patch)?;
    let n = raw.size(&["num_hidden_layers"], Sym::Layers)?;
    let sparse = minimax_m3_sparse_layers(raw, n)?;
    if !sparse.any(|s| *s) {
        return Ok(spec);
    }
    let reason = "absent; `MiniMaxM3VLTextConfig` default";
    let legacy = |raw: &RawConfig<'_>, key: &str| -> Result<Option<u64>, ConfigError> {
        match raw
            .value("sparse_attention_config")
            .and_then(|c| c.get(key))
        {
            None => Ok(None),
            Some(v) => v.as_u64().filter(|x| *x > 0).map(Some).ok_or_else(|| {
                raw.invalid(
                    &format!("sparse_attention_config.{key}"),
                    v,
                    "a positive integer",
                )
            }),
        }
    };
    let idx_heads = match legacy(raw, "sparse_num_index_heads")? {
        Some(h) => h,
        None => raw.size_or(&["index_n_heads"], Sym::Named("index_n_heads"), 4, reason)?,
    };
    let idx_dim = match legacy(raw, "sparse_index_dim")? {
        Some(h) => h,
        None => raw.size_or(
            &["index_head_dim"],
            Sym::Named("index_head_dim"),
            128,
            reason,
        )?,
    };
    raw.mul(idx_heads, idx_dim, "index_n_heads·index_head_dim")?;
    let d = spec.hidden_size;
    map_layers_by(&mut spec, &sparse, |layer, on| {
        let mut l = layer.clone();
        if *on && let Some(a) = standard(&mut l) {
            a.indexer_key_dim = Some(idx_dim);
            l.extras
                .extend(indexer_extras(d, idx_heads, idx_dim, "self_attn.indexer"));
        }
        Ok(l)
    })?;
    Ok(spec)
}

/// A lightning indexer's tensors under `path`: `q_proj` `d → heads·dim`, `k_proj` `d → dim`,
/// q/k `RMSNorm`s of `dim` (the truth files them all as attention).
fn indexer_extras(d: u64, heads: u64, dim: u64, path: &str) -> Vec<Extra> {
    let idx = || Expr::sym(Sym::Named("d_idx"), dim);
    vec![
        Extra::linear(
            format!("{path}.q_proj.weight"),
            "indexer",
            Category::Attention,
            Expr::sym(Sym::Hidden, d),
            Expr::product(vec![Expr::sym(Sym::Named("index_n_heads"), heads), idx()]),
        ),
        Extra::linear(
            format!("{path}.k_proj.weight"),
            "indexer",
            Category::Attention,
            Expr::sym(Sym::Hidden, d),
            idx(),
        ),
        Extra::vector(
            format!("{path}.q_norm.weight"),
            "indexer",
            Category::Attention,
            idx(),
        ),
        Extra::vector(
            format!("{path}.k_norm.weight"),
            "indexer",
            Category::Attention,
            idx(),
        ),
    ]
}

// ---------------------------------------------------------------------------------------------
// Inkling (text).

/// Inkling's text model (`modeling_inkling.py`): per-head q/k norms, no biases; sliding layers
/// (`hybrid_sliding`: `layer_types`, else `local_layer_ids`, else all but every 6th) use the
/// `swa_*` head counts and width; every attention adds `r_proj` (`d → n_h·d_rel`), a
/// relative-logit bank `d_rel × rel_extent` (`sliding_window_size` on sliding layers) and
/// depthwise short convolutions of `conv_kernel_size` on k and v; each layer adds two more
/// on the residual stream (`attn_sconv`, `mlp_sconv`). MoE layers (`mlp_layer_types`, else
/// from `dense_mlp_idx`) have `n_routed_experts` experts of `moe_intermediate_size`, a router
/// over the routed and the `n_shared_experts` shared experts with a global scale, and the
/// shared experts as one MLP; dense MLPs carry a global scale. The token table is followed by
/// an `RMSNorm`; `lm_head` is never tied. The four convolutions keep float32 states of
/// `channels × conv_kernel_size`.
const INKLING_TEXT: Block = Block {
    kv_default: Some(8),
    head_dim: HeadDim::KeyOr(128),
    attention: AttentionRule::Standard(StandardRule {
        qk_norm: QkNorm::PerHead,
        ..PLAIN_ATTENTION
    }),
    mlp: unbiased_mlp(key_or(&["intermediate_size"], 24576)),
    moe: Some(MoeRule {
        experts: key_or(&["n_routed_experts"], 256),
        top_k: key_or(&["num_experts_per_tok"], 6),
        expert_width: key_or(&["moe_intermediate_size"], 3072),
        router_bias: NO,
        expert_bias: NO,
        shared: Shared::Count(key_or(&["n_shared_experts"], 2)),
        shared_gate: false,
        sparsity: LISTED_DENSE,
    }),
    ..LLAMA
};

/// `InklingTextConfig.__post_init__`: `layer_types` (as sliding/full with
/// `sliding_window_size`), `mlp_layer_types` from `dense_mlp_idx`, and
/// `dense_intermediate_size` (then `intermediate_size` is the experts' width).
fn inkling_patch(raw: &mut RawConfig<'_>, map: &mut Map<String, Value>) -> Result<(), ConfigError> {
    let reason = "absent; `InklingTextConfig` default";
    let n = raw.size(&["num_hidden_layers"], Sym::Layers)?;
    let sliding = if raw.value("layer_types").is_some() {
        hybrid_sliding(raw, n)?
    } else if let Some(v) = raw.value("local_layer_ids") {
        let ids = index_list_of(raw, "local_layer_ids", v, n)?;
        Runs::marked(n, ids, &true, &false)
    } else {
        all_but_every(n, 6)
    };
    set_sliding(raw, map, sliding);
    let window = raw.size_or(
        &["sliding_window_size"],
        Sym::Named("sliding_window_size"),
        512,
        reason,
    )?;
    map.insert("sliding_window".to_owned(), Value::from(window));
    if let Some(dense) = raw.size_opt("dense_intermediate_size")? {
        let experts = raw.size_or(&["intermediate_size"], Sym::ExpertFfn, 24576, reason)?;
        map.insert("moe_intermediate_size".to_owned(), Value::from(experts));
        map.insert("intermediate_size".to_owned(), Value::from(dense));
    }
    let first = raw.uint("dense_mlp_idx")?.unwrap_or(0);
    dense_types_or_first(raw, map, first)
}

/// Inkling's `layer_types` (one per layer; `hybrid_sliding` slides), as runs.
fn hybrid_sliding(raw: &RawConfig<'_>, n: u64) -> Result<Runs<bool>, ConfigError> {
    let Some(v) = raw.value("layer_types") else {
        return Ok(Runs::uniform(false, n));
    };
    let list = v
        .as_array()
        .ok_or_else(|| raw.invalid("layer_types", v, "a list of layer kinds"))?;
    if list.len() as u64 != n {
        return Err(raw.invalid("layer_types", v, &format!("one entry per layer ({n})")));
    }
    Ok(Runs::from_list(
        list.iter().map(|t| t.as_str() == Some("hybrid_sliding")),
    ))
}

/// Which layers slide, in place of the config's own `layer_types` (whose kinds the block
/// does not read).
fn set_sliding(raw: &mut RawConfig<'_>, map: &mut Map<String, Value>, sliding: Runs<bool>) {
    map.remove("layer_types");
    raw.derived.sliding = Some(sliding);
}

/// A list of layer indices below `layers`, as a set.
fn index_list_of(
    raw: &RawConfig<'_>,
    key: &str,
    v: &Value,
    layers: u64,
) -> Result<std::collections::HashSet<u64>, ConfigError> {
    let list = v
        .as_array()
        .ok_or_else(|| raw.invalid(key, v, "a list of layer indices"))?;
    list.iter()
        .map(|x| match x.as_u64() {
            Some(i) if i < layers => Ok(i),
            _ => Err(raw.invalid(key, x, &format!("layer indices below {layers}"))),
        })
        .collect()
}

/// Inkling's text model: the block, then per-layer heads, the extra tensors and states.
fn read_inkling_text(
    raw: &mut RawConfig<'_>,
    family: &Family,
    _: crate::hf_config::HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let mut spec = read_patched(raw, family, &INKLING_TEXT, inkling_patch)?;
    inkling_layers(raw, &mut spec, "InklingTextConfig")?;
    Ok(spec)
}

/// The parts every Inkling text model shares beyond the block: sliding layers' `swa_*`
/// heads, `r_proj` and the relative-logit bank, the four short convolutions and their float32
/// states, the router's shared-expert rows and global scale, dense MLPs' global scale, the
/// embedding norm and the never-tied head.
fn inkling_layers(
    raw: &mut RawConfig<'_>,
    spec: &mut ModelSpec,
    class: &str,
) -> Result<(), ConfigError> {
    let reason = format!("absent; `{class}` default");
    let swa_heads = raw.size_or(&["swa_num_attention_heads"], Sym::Heads, 64, &reason)?;
    let swa_kv = raw.size_or(&["swa_num_key_value_heads"], Sym::KvHeads, 16, &reason)?;
    let swa_dim = raw.size_or(&["swa_head_dim"], Sym::HeadDim, 128, &reason)?;
    let d_rel = raw.size_or(&["d_rel"], Sym::Named("d_rel"), 16, &reason)?;
    let extent = raw.size_or(&["rel_extent"], Sym::Named("rel_extent"), 1024, &reason)?;
    let kernel = raw.size_or(
        &["conv_kernel_size", "sconv_kernel_size"],
        Sym::Named("conv_kernel_size"),
        4,
        &reason,
    )?;
    let shared = raw.size_or(
        &["n_shared_experts"],
        Sym::Named("n_shared_experts"),
        2,
        &reason,
    )?;
    if !swa_heads.is_multiple_of(swa_kv) {
        return Err(raw.invalid(
            "swa_num_key_value_heads",
            &swa_kv.into(),
            &format!("a divisor of `swa_num_attention_heads` ({swa_heads})"),
        ));
    }
    let d = spec.hidden_size;
    let mut overflow = false;
    try_map_kinds(spec, |layer| {
        let mut l = layer.clone();
        let window = l.sliding_window;
        let ffn_dense = matches!(l.ffn, Ffn::Dense(_));
        let ffn_moe = matches!(l.ffn, Ffn::Moe(_));
        if let Some(a) = standard(&mut l) {
            if window.is_some() {
                a.num_heads = swa_heads;
                a.num_kv_heads = swa_kv;
                a.head_dim = swa_dim;
                a.q_norm = Some(llmsize_core::spec::Norm::rms_norm(swa_dim));
                a.k_norm = Some(llmsize_core::spec::Norm::rms_norm(swa_dim));
            }
            let (n, kv, hd) = (a.num_heads, a.num_kv_heads, a.head_dim);
            let kv_width = Expr::product(vec![
                Expr::sym(Sym::KvHeads, kv),
                Expr::sym(Sym::HeadDim, hd),
            ]);
            let bank = window.unwrap_or(extent);
            let mut extras = vec![
                Extra::linear(
                    "self_attn.r_proj.weight",
                    "attention",
                    Category::Attention,
                    Expr::sym(Sym::Hidden, d),
                    Expr::product(vec![
                        Expr::sym(Sym::Heads, n),
                        Expr::sym(Sym::Named("d_rel"), d_rel),
                    ]),
                ),
                Extra::table(
                    "self_attn.relative_logits.proj",
                    "attention",
                    Category::Attention,
                    Expr::sym(Sym::Named("d_rel"), d_rel),
                    Expr::sym(Sym::Named("rel_extent"), bank),
                ),
                Extra::table(
                    "self_attn.k_sconv.conv1d.weight",
                    "attention",
                    Category::Attention,
                    kv_width.clone(),
                    Expr::sym(Sym::Named("conv_kernel_size"), kernel),
                ),
                Extra::table(
                    "self_attn.v_sconv.conv1d.weight",
                    "attention",
                    Category::Attention,
                    kv_width,
                    Expr::sym(Sym::Named("conv_kernel_size"), kernel),
                ),
            ];
            for name in ["attn_sconv.conv1d.weight", "mlp_sconv.conv1d.weight"] {
                extras.push(Extra::table(
                    name,
                    "short convolution",
                    Category::LayerExtras,
                    Expr::sym(Sym::Hidden, d),
                    Expr::sym(Sym::Named("conv_kernel_size"), kernel),
                ));
            }
            if ffn_moe {
                extras.push(Extra::linear(
                    "mlp.gate.weight (shared rows)",
                    "router",
                    Category::MoeRouter,
                    Expr::sym(Sym::Hidden, d),
                    Expr::sym(Sym::Named("n_shared_experts"), shared),
                ));
                extras.push(Extra::vector(
                    "mlp.gate.global_scale",
                    "router",
                    Category::MoeRouter,
                    Expr::Lit(1),
                ));
            }
            if ffn_dense {
                extras.push(Extra::vector(
                    "mlp.global_scale",
                    "mlp",
                    Category::Ffn,
                    Expr::Lit(1),
                ));
            }
            // Conv states: k and v (`n_kv·d_h` channels each) and the two on the stream (`d`).
            let channels = kv
                .checked_mul(hd)
                .and_then(|c| c.checked_mul(2))
                .and_then(|c| c.checked_add(d.checked_mul(2)?));
            match channels.and_then(|c| c.checked_mul(kernel)) {
                Some(conv) => {
                    l.state = Some(llmsize_core::spec::RecurrentState {
                        conv,
                        recurrent: 0,
                        recurrent_f32: false,
                        conv_f32: true,
                    });
                }
                None => overflow = true,
            }
            l.extras.extend(extras);
        }
        Ok(l)
    })?;
    if overflow {
        return Err(raw.invalid(
            "conv_kernel_size",
            &kernel.into(),
            "sizes whose conv states fit in 64 bits",
        ));
    }
    if let Some(stack) = spec.stacks.first_mut() {
        stack.embedding_norm = Some(llmsize_core::spec::Norm::rms_norm(d));
    }
    if let OutputHead::Lm { tied, .. } = &mut spec.head {
        *tied = false;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Inkling 2 (text).

/// Inkling 2's text model (`modeling_inkling2.py`): every layer MoE (`n_routed_experts` of
/// `moe_intermediate_size`, bias-free router, no shared expert), no biases. Each attention
/// has `q_proj.linear` with a learned per-head scale, k/v linears followed by short
/// convolutions (static on sliding layers; on full layers static taps plus a projection
/// `d → n_kv·K` of the hidden state), a gated output (`gate_proj` and `linear`), `sink_proj`
/// (`d → n_h`) and a relative position bias (`linear` `d → n_h·d_rel`, a per-head scale, a
/// bank `d_rel × rel_extent`, `sliding_window_size` on sliding layers). Blocks read their
/// inputs through attention residual queries (`attention_input`: `d`, or `3·d` on full
/// layers, none on layer 0; `mlp_input`: `d`; `final_input`: `d`). Full layers have separate
/// q/k/v input norms. Sliding layers (`layer_types`, else all but every 6th) use the `swa_*`
/// heads. Two short convolutions sit on the residual stream; the four convolutions keep
/// float32 states of `channels × conv_kernel_size`. The token table (`vocab_size` rows) has an
/// `RMSNorm`; `lm_head` has `unpadded_vocab_size` rows and is never tied.
const INKLING2_TEXT: Block = Block {
    kv_default: Some(8),
    head_dim: HeadDim::KeyOr(128),
    attention: AttentionRule::Standard(PLAIN_ATTENTION),
    mlp: GLM4_MOE.mlp,
    moe: Some(MoeRule {
        experts: key_or(&["n_routed_experts", "num_local_experts"], 384),
        top_k: key_or(&["num_experts_per_tok"], 8),
        expert_width: key_or(&["moe_intermediate_size", "intermediate_size"], 2304),
        router_bias: NO,
        expert_bias: NO,
        shared: Shared::None,
        shared_gate: false,
        sparsity: crate::hf_config::family::ALL_SPARSE,
    }),
    ..LLAMA
};

/// `Inkling2TextConfig.__post_init__`: `layer_types` (as sliding/full with
/// `sliding_window_size`).
fn inkling2_patch(
    raw: &mut RawConfig<'_>,
    map: &mut Map<String, Value>,
) -> Result<(), ConfigError> {
    let n = raw.size(&["num_hidden_layers"], Sym::Layers)?;
    let sliding = if raw.value("layer_types").is_some() {
        hybrid_sliding(raw, n)?
    } else {
        all_but_every(n, 6)
    };
    set_sliding(raw, map, sliding);
    let window = raw.size_or(
        &["sliding_window_size", "sliding_window"],
        Sym::Named("sliding_window_size"),
        1024,
        "absent; `Inkling2TextConfig` default",
    )?;
    map.insert("sliding_window".to_owned(), Value::from(window));
    Ok(())
}

/// Inkling 2's text model: the block, then per-layer heads, the extra tensors and states.
#[allow(
    clippy::too_many_lines,
    reason = "one list of the tensors `modeling_inkling2.py` builds per layer"
)]
fn read_inkling2_text(
    raw: &mut RawConfig<'_>,
    family: &Family,
    _: crate::hf_config::HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let mut spec = read_patched(raw, family, &INKLING2_TEXT, inkling2_patch)?;
    let reason = "absent; `Inkling2TextConfig` default";
    let swa_heads = raw.size_or(&["swa_num_attention_heads"], Sym::Heads, 48, reason)?;
    let swa_kv = raw.size_or(&["swa_num_key_value_heads"], Sym::KvHeads, 8, reason)?;
    let swa_dim = raw.size_or(&["swa_head_dim"], Sym::HeadDim, 128, reason)?;
    let d_rel = raw.size_or(&["d_rel"], Sym::Named("d_rel"), 16, reason)?;
    let extent = raw.size_or(&["rel_extent"], Sym::Named("rel_extent"), 1024, reason)?;
    let kernel = raw.size_or(
        &["conv_kernel_size", "sconv_kernel_size"],
        Sym::Named("conv_kernel_size"),
        4,
        reason,
    )?;
    let unpadded = raw.size_or(
        &["unpadded_vocab_size"],
        Sym::Named("unpadded_vocab_size"),
        200_058,
        reason,
    )?;
    if !swa_heads.is_multiple_of(swa_kv) {
        return Err(raw.invalid(
            "swa_num_key_value_heads",
            &swa_kv.into(),
            &format!("a divisor of `swa_num_attention_heads` ({swa_heads})"),
        ));
    }
    let d = spec.hidden_size;
    let k = || Expr::sym(Sym::Named("conv_kernel_size"), kernel);
    let hidden = || Expr::sym(Sym::Hidden, d);
    let mut overflow = false;
    // A layer's tensors depend on its kind and on whether it is the first.
    let mut build = |i: u64, layer: &Layer| -> Result<Layer, ConfigError> {
        let mut l = layer.clone();
        let window = l.sliding_window;
        let Some(a) = standard(&mut l) else {
            return Ok(l);
        };
        if window.is_some() {
            a.num_heads = swa_heads;
            a.num_kv_heads = swa_kv;
            a.head_dim = swa_dim;
        }
        let (n, kv, hd) = (a.num_heads, a.num_kv_heads, a.head_dim);
        let heads = || Expr::sym(Sym::Heads, n);
        let q_width = || Expr::product(vec![heads(), Expr::sym(Sym::HeadDim, hd)]);
        let kv_width = || {
            Expr::product(vec![
                Expr::sym(Sym::KvHeads, kv),
                Expr::sym(Sym::HeadDim, hd),
            ])
        };
        let rel_width = || Expr::product(vec![heads(), Expr::sym(Sym::Named("d_rel"), d_rel)]);
        let part = "attention";
        let mut extras = vec![
            Extra::vector(
                "self_attn.q_proj.norm.scale",
                "attention scales",
                Category::Norm,
                q_width(),
            ),
            Extra::linear(
                "self_attn.o_proj.gate_proj.weight",
                part,
                Category::Attention,
                hidden(),
                q_width(),
            ),
            Extra::linear(
                "self_attn.sink_proj.weight",
                part,
                Category::Attention,
                hidden(),
                heads(),
            ),
            Extra::linear(
                "self_attn.relative_position_bias.linear.weight",
                part,
                Category::Attention,
                hidden(),
                rel_width(),
            ),
            Extra::vector(
                "self_attn.relative_position_bias.norm.scale",
                "attention scales",
                Category::Norm,
                rel_width(),
            ),
            Extra::table(
                "self_attn.relative_position_bias.proj",
                part,
                Category::Attention,
                Expr::sym(Sym::Named("d_rel"), d_rel),
                Expr::sym(Sym::Named("rel_extent"), window.unwrap_or(extent)),
            ),
            Extra::vector("mlp_input.query", part, Category::Attention, hidden()),
        ];
        for proj in ["k_proj", "v_proj"] {
            if window.is_some() {
                extras.push(Extra::table(
                    format!("self_attn.{proj}.sconv.conv1d.weight"),
                    part,
                    Category::Attention,
                    kv_width(),
                    k(),
                ));
            } else {
                extras.push(Extra::table(
                    format!("self_attn.{proj}.sconv.static_weight"),
                    part,
                    Category::Attention,
                    k(),
                    kv_width(),
                ));
                extras.push(Extra::linear(
                    format!("self_attn.{proj}.sconv.weight_proj.weight"),
                    part,
                    Category::Attention,
                    hidden(),
                    Expr::product(vec![Expr::sym(Sym::KvHeads, kv), k()]),
                ));
            }
        }
        if i > 0 {
            let rows = if window.is_some() { 1 } else { 3 };
            extras.push(Extra::table(
                "attention_input.query",
                part,
                Category::Attention,
                Expr::Lit(rows),
                hidden(),
            ));
        }
        for name in [
            "post_attention_convolution.conv1d.weight",
            "post_mlp_convolution.conv1d.weight",
        ] {
            extras.push(Extra::table(
                name,
                "short convolution",
                Category::LayerExtras,
                hidden(),
                k(),
            ));
        }
        if window.is_none() {
            // q/k/v input norms replace the input norm: four norms in all.
            l.norms.push(llmsize_core::spec::Norm::rms_norm(d));
            l.norms.push(llmsize_core::spec::Norm::rms_norm(d));
        }
        let channels = kv
            .checked_mul(hd)
            .and_then(|c| c.checked_mul(2))
            .and_then(|c| c.checked_add(d.checked_mul(2)?));
        match channels.and_then(|c| c.checked_mul(kernel)) {
            Some(conv) => {
                l.state = Some(llmsize_core::spec::RecurrentState {
                    conv,
                    recurrent: 0,
                    recurrent_f32: false,
                    conv_f32: true,
                });
            }
            None => overflow = true,
        }
        l.extras.extend(extras);
        Ok(l)
    };
    // Layer 0 has no attention residual queries; each distinct (kind, first) is built once.
    let n = spec.num_layers();
    let mut first = Runs::uniform(true, n.min(1));
    first.push(false, n.saturating_sub(1));
    map_layers_by(&mut spec, &first, |layer, first| {
        build(u64::from(!*first), layer)
    })?;
    if overflow {
        return Err(raw.invalid(
            "conv_kernel_size",
            &kernel.into(),
            "sizes whose conv states fit in 64 bits",
        ));
    }
    if let Some(stack) = spec.stacks.first_mut() {
        stack.embedding_norm = Some(llmsize_core::spec::Norm::rms_norm(d));
    }
    spec.extras.push(Extra::vector(
        "model.final_input.query",
        "attention",
        Category::Attention,
        Expr::sym(Sym::Hidden, d),
    ));
    // The table keeps `vocab_size` rows; the head (and the logits) `unpadded_vocab_size`.
    spec.vocab_size = unpadded;
    raw.source(Sym::Vocab, "unpadded_vocab_size");
    if let OutputHead::Lm { tied, .. } = &mut spec.head {
        *tied = false;
    }
    Ok(spec)
}

// ---------------------------------------------------------------------------------------------
// `JetMoE`: a mixture of attention heads and a mixture of MLP experts.

/// `JetMoE` (`modeling_jetmoe.py`). Attention is a mixture of experts (`JetMoeMoA`): each of
/// `num_local_experts` experts maps `d → n_kv·d_h` (`input_linear`, the queries of
/// `num_key_value_heads` heads) and back (`output_linear`), with a router `d → E` and an output
/// bias of `d`, all under `experts` (the truth's `moe_experts`); keys and values come from one
/// shared `kv_proj` (`d → 2·n_kv·d_h`, `attention`) and are cached once per layer
/// (`n_kv` heads of `kv_channels`), the queries of the `top_k` chosen experts attending to
/// them. The MLP (`JetMoeMoE`, under `mlp`: the truth's `ffn`) has `E` experts
/// `d → 2·intermediate_size → d`, an output bias of `d` and a router `d → E` (`moe_router`).
/// Two `RMSNorm`s per layer, tied by default.
fn read_jetmoe(
    raw: &mut RawConfig<'_>,
    family: &Family,
    _: crate::hf_config::HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let reason = "absent; `JetMoeConfig` default";
    let d = raw.size_or(&["hidden_size"], Sym::Hidden, 2048, reason)?;
    let layers = raw.size_or(&["num_hidden_layers"], Sym::Layers, 12, reason)?;
    let vocab = raw.size_or(&["vocab_size"], Sym::Vocab, 32000, reason)?;
    let kv = raw.size_or(&["num_key_value_heads"], Sym::KvHeads, 16, reason)?;
    let hd = raw.size_or(&["kv_channels", "head_dim"], Sym::HeadDim, 128, reason)?;
    let f = raw.size_or(&["intermediate_size"], Sym::ExpertFfn, 5632, reason)?;
    let experts = raw.size_or(&["num_local_experts"], Sym::Experts, 8, reason)?;
    let top_k = raw.size_or(&["num_experts_per_tok"], Sym::TopK, 2, reason)?;
    if top_k > experts {
        return Err(raw.invalid(
            "num_experts_per_tok",
            &top_k.into(),
            &format!("at most `num_local_experts` ({experts})"),
        ));
    }
    // `__post_init__`: `num_attention_heads = num_key_value_heads * num_experts_per_tok`.
    let heads = raw.mul(kv, top_k, "num_key_value_heads·num_experts_per_tok")?;
    raw.source(Sym::Heads, "num_key_value_heads·num_experts_per_tok");
    raw.mul(kv, hd, "num_key_value_heads·kv_channels")?;
    raw.mul(f, 2, "2·intermediate_size")?;
    let n = raw.layer_count("num_hidden_layers", layers)?;
    let tied = raw.flag_or("tie_word_embeddings", true, reason)?;
    let hidden = || Expr::sym(Sym::Hidden, d);
    let e = || Expr::sym(Sym::Experts, experts);
    let kv_width = || {
        Expr::product(vec![
            Expr::sym(Sym::KvHeads, kv),
            Expr::sym(Sym::HeadDim, hd),
        ])
    };
    let ffn = || Expr::sym(Sym::ExpertFfn, f);
    // A token goes through the `top_k` experts its router picks, in attention and MLP alike.
    let k = || Expr::sym(Sym::TopK, top_k);
    let extras = vec![
        Extra::linear(
            "self_attention.kv_proj.weight",
            "attention",
            Category::Attention,
            hidden(),
            Expr::product(vec![Expr::Lit(2), kv_width()]),
        ),
        Extra::linear(
            "self_attention.experts.input_linear.weight",
            "attention experts",
            Category::MoeExperts,
            hidden(),
            kv_width(),
        )
        .experts(e(), k()),
        Extra::linear(
            "self_attention.experts.output_linear.weight",
            "attention experts",
            Category::MoeExperts,
            kv_width(),
            hidden(),
        )
        .experts(e(), k()),
        Extra::vector(
            "self_attention.experts.bias",
            "attention experts",
            Category::MoeExperts,
            hidden(),
        ),
        Extra::linear(
            "self_attention.experts.router.layer.weight",
            "attention experts",
            Category::MoeExperts,
            hidden(),
            e(),
        ),
        Extra::linear(
            "mlp.input_linear.weight",
            "mlp experts",
            Category::Ffn,
            hidden(),
            Expr::product(vec![Expr::Lit(2), ffn()]),
        )
        .experts(e(), k()),
        Extra::linear(
            "mlp.output_linear.weight",
            "mlp experts",
            Category::Ffn,
            ffn(),
            hidden(),
        )
        .experts(e(), k()),
        Extra::vector("mlp.bias", "mlp experts", Category::Ffn, hidden()),
        Extra::linear(
            "mlp.router.layer.weight",
            "router",
            Category::MoeRouter,
            hidden(),
            e(),
        ),
    ];
    let layer = Layer {
        attention: llmsize_core::spec::Attention::CacheOnly(crate::hf_config::decoder::mha(
            d, heads, kv, hd, false,
        )),
        cross_attention: None,
        ffn: Ffn::Absent,
        norms: vec![llmsize_core::spec::Norm::rms_norm(d); 2],
        sliding_window: None,
        extras,
        state: None,
    };
    Ok(crate::hf_config::decoder::Decoder::new(
        family.model_type,
        crate::hf_config::architecture(raw, family.architecture),
        d,
        vocab,
        Layers::repeat(layer, n as u64),
        Some(llmsize_core::spec::Norm::rms_norm(d)),
        tied,
    )
    .into_spec())
}

// ---------------------------------------------------------------------------------------------
// dots.llm3 (dots3-note): MLA with per-layer shapes, a gated output and a DSA indexer.

/// A DeepSeek Sparse Attention indexer on MLA (`…Indexer`: `wq_b` `q_lora_rank →
/// index_n_heads·index_head_dim`, `wk` `d → index_head_dim`, `k_norm` a `LayerNorm` of
/// `index_head_dim` with bias, `weights_proj` `d → index_n_heads`), all attention.
fn dsa_indexer_extras(d: u64, q_lora: u64, heads: u64, dim: u64) -> Vec<Extra> {
    let idx = || Expr::sym(Sym::Named("d_idx"), dim);
    let n = || Expr::sym(Sym::Named("index_n_heads"), heads);
    let part = "indexer";
    vec![
        Extra::linear(
            "self_attn.indexer.wq_b.weight",
            part,
            Category::Attention,
            Expr::sym(Sym::QueryRank, q_lora),
            Expr::product(vec![n(), idx()]),
        ),
        Extra::linear(
            "self_attn.indexer.wk.weight",
            part,
            Category::Attention,
            Expr::sym(Sym::Hidden, d),
            idx(),
        ),
        Extra::vector(
            "self_attn.indexer.k_norm.weight",
            part,
            Category::Attention,
            idx(),
        ),
        Extra::vector(
            "self_attn.indexer.k_norm.bias",
            part,
            Category::Attention,
            idx(),
        ),
        Extra::linear(
            "self_attn.indexer.weights_proj.weight",
            part,
            Category::Attention,
            Expr::sym(Sym::Hidden, d),
            n(),
        ),
    ]
}

/// One override map per layer (`None`: the global config).
pub(crate) type Overrides<'a> = Vec<Option<&'a Map<String, Value>>>;

/// `per_layer_config` (a sparse map from layer index, an integer or a zero-padded string, to
/// the attributes that differ from the global config), as one override map per layer.
pub(crate) fn per_layer_overrides<'a>(
    raw: &RawConfig<'a>,
    n: usize,
) -> Result<Option<Overrides<'a>>, ConfigError> {
    let Some(v) = raw.value("per_layer_config") else {
        return Ok(None);
    };
    let map = match v {
        Value::Null => return Ok(None),
        Value::Object(m) => m,
        _ => return Err(raw.invalid("per_layer_config", v, "a map from layer index to overrides")),
    };
    let mut out = vec![None; n];
    for (k, o) in map {
        let i = k.parse::<usize>().ok().filter(|i| *i < n).ok_or_else(|| {
            raw.invalid(
                "per_layer_config",
                &Value::from(k.as_str()),
                &format!("layer indices below {n}"),
            )
        })?;
        let o = o.as_object().ok_or_else(|| {
            raw.invalid(&format!("per_layer_config.{k}"), o, "a map of overrides")
        })?;
        if let Some(slot) = out.get_mut(i) {
            *slot = Some(o);
        }
    }
    Ok(Some(out))
}

/// The layers `per_layer_config` names (number, overrides), and each layer's entry among them.
type PerLayer<'a> = (Vec<(u64, &'a Map<String, Value>)>, Runs<Option<usize>>);

/// `per_layer_config` as runs over the layers: the index of a named layer's overrides (with
/// the layer's number, for messages), `None` for a layer it does not name; the work is in the
/// number of entries the config lists, never in the layer count.
fn per_layer_runs<'a>(raw: &RawConfig<'a>, n: u64) -> Result<Option<PerLayer<'a>>, ConfigError> {
    let Some(v) = raw.value("per_layer_config") else {
        return Ok(None);
    };
    let map = match v {
        Value::Null => return Ok(None),
        Value::Object(m) => m,
        _ => return Err(raw.invalid("per_layer_config", v, "a map from layer index to overrides")),
    };
    let mut named: Vec<(u64, &'a Map<String, Value>)> = Vec::with_capacity(map.len());
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
    // In layer order; a layer named twice (`4` and `04`) takes the later, as the list did.
    named.sort_by_key(|(i, _)| *i);
    let mut kept: Vec<(u64, &'a Map<String, Value>)> = Vec::with_capacity(named.len());
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
        router_bias: false,
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

// ---------------------------------------------------------------------------------------------
// A.X-K2: DeepSeek-V3.2's MLA with a fused query/gate projection and gated norms.

/// A.X-K2 (`modeling_axk2.py`): DeepSeek's MLA without `q_b_proj`: `q_gate_proj` maps the
/// normed and the raw query latents (`2·q_lora_rank`) to each head's query and an output
/// gate (`n_h·(qk_head_dim + v_head_dim)`), held here as the MLA's `q_b_proj` (the normed
/// half to the queries) plus two extras (the raw half to the queries, both halves to the
/// gates); the DSA indexer on every layer (its keys cached beside the latent). The input
/// norm, and the post-attention norm of MoE layers, are gated (`GatedRMSNorm`: an `RMSNorm`
/// and a low-rank `fc1` `d → gated_norm_rank`, `fc2` back, under `mlp` in the truth's
/// rules). MoE layers (`mlp_layer_types`, else from `first_k_dense_replace` on every
/// `moe_layer_freq`-th): `n_routed_experts` of `moe_intermediate_size`, a bias-free router,
/// `n_shared_experts` of that width as one shared MLP.
const AXK2: Block = Block {
    kv_default: None,
    attention: AttentionRule::Latent {
        q_lora_default: Some(384),
        bias: Switch::Key("attention_bias", false),
    },
    mlp: unbiased_mlp(key_or(&["intermediate_size"], 5120)),
    moe: Some(MoeRule {
        experts: key_or(&["n_routed_experts", "num_local_experts"], 128),
        top_k: key_or(&["num_experts_per_tok"], 8),
        expert_width: key_or(&["moe_intermediate_size"], 512),
        router_bias: NO,
        expert_bias: NO,
        shared: Shared::Count(key_or(&["n_shared_experts"], 1)),
        shared_gate: false,
        sparsity: LISTED_DENSE,
    }),
    ..LLAMA
};

/// `AXK2Config`'s defaults for the MLA sizes, written in when absent; a null `q_lora_rank`
/// is refused as its `validate_architecture` does.
fn axk2_patch(raw: &mut RawConfig<'_>, map: &mut Map<String, Value>) -> Result<(), ConfigError> {
    if raw.has("q_lora_rank") && raw.value("q_lora_rank").is_none() {
        return Err(raw.invalid(
            "q_lora_rank",
            &Value::Null,
            "a positive rank (A.X-K2 requires `q_lora_rank`)",
        ));
    }
    let reason = "absent; `AXK2Config` default";
    for (k, d) in [
        ("hidden_size", 2048),
        ("num_hidden_layers", 48),
        ("num_attention_heads", 32),
        ("vocab_size", 163_840),
        ("kv_lora_rank", 128),
        ("qk_rope_head_dim", 32),
        ("v_head_dim", 64),
        ("qk_nope_head_dim", 64),
    ] {
        if !raw.has(k) {
            raw.assume(k, d, reason);
            map.insert(k.to_owned(), Value::from(d));
        }
    }
    // `mlp_layer_types` from `first_k_dense_replace` and `moe_layer_freq`, as A.X-K1's.
    let snapshot = map.clone();
    let mut inner = raw.sibling(&snapshot);
    axk1_patch(&mut inner, map)?;
    raw.derived = inner.derived;
    Ok(())
}

/// A.X-K2: the block, then the query/gate projection, the indexer and the gated norms.
fn read_axk2(
    raw: &mut RawConfig<'_>,
    family: &Family,
    _: crate::hf_config::HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let mut spec = read_patched(raw, family, &AXK2, axk2_patch)?;
    let reason = "absent; `AXK2Config` default";
    let idx_heads = raw.size_or(&["index_n_heads"], Sym::Named("index_n_heads"), 16, reason)?;
    let idx_dim = raw.size_or(&["index_head_dim"], Sym::Named("d_idx"), 128, reason)?;
    let rank = raw.size_or(
        &["gated_norm_rank"],
        Sym::Named("gated_norm_rank"),
        16,
        reason,
    )?;
    let d = spec.hidden_size;
    let gate = |name: &'static str| -> [Extra; 2] {
        [
            Extra::linear(
                format!("{name}.mlp.fc1.weight"),
                "gated norm",
                Category::Ffn,
                Expr::sym(Sym::Hidden, d),
                Expr::sym(Sym::Named("gated_norm_rank"), rank),
            ),
            Extra::linear(
                format!("{name}.mlp.fc2.weight"),
                "gated norm",
                Category::Ffn,
                Expr::sym(Sym::Named("gated_norm_rank"), rank),
                Expr::sym(Sym::Hidden, d),
            ),
        ]
    };
    try_map_kinds(&mut spec, |layer| {
        let mut l = layer.clone();
        let sparse = matches!(l.ffn, Ffn::Moe(_));
        if let llmsize_core::spec::Attention::Latent(a) = &mut l.attention {
            a.indexer_key_dim = Some(idx_dim);
            let r = a.q_lora_rank.unwrap_or(1);
            let heads = || Expr::sym(Sym::Heads, a.num_heads);
            let qk = Expr::product(vec![
                heads(),
                Expr::sum(vec![
                    Expr::sym(Sym::NopeDim, a.qk_nope_head_dim),
                    Expr::sym(Sym::RopeDim, a.qk_rope_head_dim),
                ]),
            ]);
            let extras = [
                Extra::linear(
                    "self_attn.q_gate_proj.weight (raw latent → queries)",
                    "attention",
                    Category::Attention,
                    Expr::sym(Sym::QueryRank, r),
                    qk,
                ),
                Extra::linear(
                    "self_attn.q_gate_proj.weight (latents → gates)",
                    "attention",
                    Category::Attention,
                    Expr::product(vec![Expr::Lit(2), Expr::sym(Sym::QueryRank, r)]),
                    Expr::product(vec![heads(), Expr::sym(Sym::ValueDim, a.v_head_dim)]),
                ),
            ];
            l.extras.extend(extras);
            l.extras
                .extend(dsa_indexer_extras(d, r, idx_heads, idx_dim));
        }
        l.extras.extend(gate("input_layernorm"));
        if sparse {
            l.extras.extend(gate("post_attention_layernorm"));
        }
        Ok(l)
    })?;
    Ok(spec)
}

// ---------------------------------------------------------------------------------------------
// HY-V4: DeepSeek-V3.2's MLA with shared top-k, output gates, sinks and hyper-connections.

/// HY-V4 (`modeling_hy_v4.py`): DeepSeek's MLA (`q_lora_rank` 1536) with a sigmoid output
/// gate `gate_proj` (`d → n_h·v_head_dim`) and a learned sink per head; the DSA indexer only
/// on `full` layers of `indexer_types` (else layer 0 and every 4th from 1; `shared` layers
/// reuse the previous top-k and cache no index keys). Every layer has two hyper-connections
/// (`attn_hc`, `ffn_hc`: `fn` `hc_mult·d → 2·hc_mult`, `base` `2·hc_mult`, `scale` 2) and the
/// model a hyper head (`hc_fn` `hc_mult·d → hc_mult`, `hc_base`, `hc_scale`), all
/// `layer_extras`. MoE layers (`mlp_layer_types`, else all but the first): `n_routed_experts`
/// of `moe_intermediate_size`, a bias-free router, `n_shared_experts` of that width as one
/// shared MLP.
const HY_V4: Block = Block {
    kv_default: None,
    attention: AttentionRule::Latent {
        q_lora_default: Some(1536),
        bias: Switch::Key("attention_bias", false),
    },
    mlp: unbiased_mlp(key_or(&["intermediate_size"], 6912)),
    moe: Some(MoeRule {
        experts: key_or(&["n_routed_experts", "num_local_experts"], 256),
        top_k: key_or(&["num_experts_per_tok"], 8),
        expert_width: key_or(&["moe_intermediate_size"], 768),
        router_bias: NO,
        expert_bias: NO,
        shared: Shared::Count(key_or(&["n_shared_experts"], 1)),
        shared_gate: false,
        sparsity: LISTED_DENSE,
    }),
    ..LLAMA
};

/// HY-V4-VL's text model (`modeling_hy_v4_vl.py`, `HYV4VLTextConfig`): HY-V4's layers with
/// larger defaults.
const HY_V4_VL_TEXT: Block = Block {
    attention: AttentionRule::Latent {
        q_lora_default: Some(2048),
        bias: Switch::Key("attention_bias", false),
    },
    mlp: unbiased_mlp(key_or(&["intermediate_size"], 18432)),
    moe: Some(MoeRule {
        experts: key_or(&["n_routed_experts", "num_local_experts"], 256),
        top_k: key_or(&["num_experts_per_tok"], 8),
        expert_width: key_or(&["moe_intermediate_size"], 2048),
        router_bias: NO,
        expert_bias: NO,
        shared: Shared::Count(key_or(&["n_shared_experts"], 1)),
        shared_gate: false,
        sparsity: LISTED_DENSE,
    }),
    ..HY_V4
};

/// A HY-V4 text class: its block and the defaults of the keys read as required.
struct HyV4Class {
    block: &'static Block,
    class: &'static str,
    /// `hidden_size`, `num_hidden_layers`, `num_attention_heads`, `index_n_heads`.
    sizes: [u64; 4],
}

/// HY-V4.
const HY_V4_CLASS: HyV4Class = HyV4Class {
    block: &HY_V4,
    class: "HYV4Config",
    sizes: [2816, 34, 32, 16],
};

/// HY-V4-VL's text model.
const HY_V4_VL_TEXT_CLASS: HyV4Class = HyV4Class {
    block: &HY_V4_VL_TEXT,
    class: "HYV4VLTextConfig",
    sizes: [6144, 78, 64, 32],
};

/// The class defaults of the sizes the block reads as required, and `mlp_layer_types`.
fn hy_v4_patch(
    raw: &mut RawConfig<'_>,
    map: &mut Map<String, Value>,
    c: &HyV4Class,
) -> Result<(), ConfigError> {
    if raw.has("q_lora_rank") && raw.value("q_lora_rank").is_none() {
        return Err(raw.invalid(
            "q_lora_rank",
            &Value::Null,
            "a positive rank (HY-V4's indexer reads the query latent)",
        ));
    }
    let reason = format!("absent; `{}` default", c.class);
    let [hidden, layers, heads, _] = c.sizes;
    for (k, d) in [
        ("hidden_size", hidden),
        ("num_hidden_layers", layers),
        ("num_attention_heads", heads),
        ("vocab_size", 120_832),
        ("kv_lora_rank", 512),
        ("qk_rope_head_dim", 64),
        ("v_head_dim", 256),
        ("qk_nope_head_dim", 192),
    ] {
        if !raw.has(k) {
            raw.assume(k, d, &reason);
            map.insert(k.to_owned(), Value::from(d));
        }
    }
    let snapshot = map.clone();
    let mut inner = raw.sibling(&snapshot);
    dense_first_layer(&mut inner, map)?;
    raw.derived = inner.derived;
    Ok(())
}

/// HY-V4's text model: the block, then gates, sinks, indexers and hyper-connections.
fn read_hy_v4(
    raw: &mut RawConfig<'_>,
    family: &Family,
    c: &HyV4Class,
) -> Result<ModelSpec, ConfigError> {
    let mut spec = read_patched(raw, family, c.block, |r, m| hy_v4_patch(r, m, c))?;
    let reason = &format!("absent; `{}` default", c.class);
    let [_, _, _, idx_default] = c.sizes;
    let idx_heads = raw.size_or(
        &["index_n_heads"],
        Sym::Named("index_n_heads"),
        idx_default,
        reason,
    )?;
    let idx_dim = raw.size_or(&["index_head_dim"], Sym::Named("d_idx"), 128, reason)?;
    let hc = raw.size_or(&["hc_mult"], Sym::Named("hc_mult"), 4, reason)?;
    let n = spec.num_layers();
    let full: Runs<bool> = match raw.value("indexer_types") {
        Some(v) if !v.is_null() => {
            let list = v
                .as_array()
                .ok_or_else(|| raw.invalid("indexer_types", v, "a list of `full`/`shared`"))?;
            if list.len() as u64 != n {
                return Err(raw.invalid("indexer_types", v, &format!("one entry per layer ({n})")));
            }
            let mut full = Runs::default();
            for t in list {
                match t.as_str() {
                    Some("full") => full.push(true, 1),
                    Some("shared") => full.push(false, 1),
                    _ => return Err(raw.invalid("indexer_types", t, "`full` or `shared`")),
                }
            }
            full
        }
        // Full: layer 0 and every 4th from layer 1 (`(i − 1) % 4 == 0`).
        _ => {
            let mut full = Runs::uniform(true, n.min(1));
            full.append(Runs::periodic(
                n.saturating_sub(1),
                &[(true, 1), (false, 3)],
            ));
            full
        }
    };
    let d = spec.hidden_size;
    raw.mul(hc, d, "hc_mult·hidden_size")?;
    let hc_sym = || Expr::sym(Sym::Named("hc_mult"), hc);
    let streams = || Expr::product(vec![hc_sym(), Expr::sym(Sym::Hidden, d)]);
    let connection = |name: &'static str| -> [Extra; 3] {
        let two = || Expr::product(vec![Expr::Lit(2), hc_sym()]);
        [
            Extra::linear(
                format!("{name}.fn"),
                "hyper-connections",
                Category::LayerExtras,
                streams(),
                two(),
            ),
            Extra::vector(
                format!("{name}.base"),
                "hyper-connections",
                Category::LayerExtras,
                two(),
            ),
            Extra::vector(
                format!("{name}.scale"),
                "hyper-connections",
                Category::LayerExtras,
                Expr::Lit(2),
            ),
        ]
    };
    map_layers_by(&mut spec, &full, |layer, own| {
        let own = *own;
        let mut l = layer.clone();
        if let llmsize_core::spec::Attention::Latent(a) = &mut l.attention {
            let heads = || Expr::sym(Sym::Heads, a.num_heads);
            l.extras.push(Extra::linear(
                "self_attn.gate_proj.weight",
                "attention",
                Category::Attention,
                Expr::sym(Sym::Hidden, d),
                Expr::product(vec![heads(), Expr::sym(Sym::ValueDim, a.v_head_dim)]),
            ));
            l.extras.push(Extra::vector(
                "self_attn.sinks",
                "attention",
                Category::Attention,
                heads(),
            ));
            if own {
                a.indexer_key_dim = Some(idx_dim);
                let r = a.q_lora_rank.unwrap_or(1);
                l.extras
                    .extend(dsa_indexer_extras(d, r, idx_heads, idx_dim));
            }
        }
        l.extras.extend(connection("attn_hc"));
        l.extras.extend(connection("ffn_hc"));
        Ok(l)
    })?;
    spec.extras.push(Extra::linear(
        "model.hc_head.hc_fn",
        "hyper-connections",
        Category::LayerExtras,
        streams(),
        hc_sym(),
    ));
    spec.extras.push(Extra::vector(
        "model.hc_head.hc_base",
        "hyper-connections",
        Category::LayerExtras,
        hc_sym(),
    ));
    spec.extras.push(Extra::vector(
        "model.hc_head.hc_scale",
        "hyper-connections",
        Category::LayerExtras,
        Expr::Lit(1),
    ));
    Ok(spec)
}

// ---------------------------------------------------------------------------------------------
// Inkling 2 Loop (text).

/// Inkling 2 Loop's text model (`modeling_inkling2_loop.py`): Inkling 2's layers with the
/// `Inkling2LoopTextConfig` defaults, where layers `loop_layer_index_start` to
/// `loop_layer_index_end − 1` (`loop_config.core_start`/`core_end`) run `loop_num_passes`
/// times (`loop_config.num_passes`). Each pass appends its own copies of those layers' caches
/// (keys and values, and the float32 convolution states), held as `passes` times the KV heads
/// transformers caches and `passes` times the conv state. Each looped layer adds four
/// message gates (q, k, v, MLP: `down_proj` `2d → loop_gate_rank`, `forget_gate_proj` and
/// `message_gate_proj` `loop_gate_rank → d`; `layer_extras`), and the model the message
/// queries (`message_input.query`: one `d` per message and looped layer; attention).
#[allow(
    clippy::too_many_lines,
    reason = "the loop keys and their checks, as `Inkling2LoopTextConfig` has them"
)]
fn read_inkling2_loop_text(
    raw: &mut RawConfig<'_>,
    family: &Family,
    head: crate::hf_config::HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let reason = "absent; `Inkling2LoopTextConfig` default";
    let mut map = raw.map.clone();
    for (k, d) in [
        ("hidden_size", 2304),
        ("num_hidden_layers", 24),
        ("num_attention_heads", 24),
        ("num_key_value_heads", 8),
        ("head_dim", 128),
        ("vocab_size", 201_024),
        ("unpadded_vocab_size", 200_058),
        ("swa_num_attention_heads", 24),
        ("swa_num_key_value_heads", 8),
        ("swa_head_dim", 128),
        ("sliding_window_size", 1024),
        ("d_rel", 16),
        ("rel_extent", 1024),
        ("moe_intermediate_size", 1152),
        ("n_routed_experts", 128),
        ("num_experts_per_tok", 8),
    ] {
        if !(raw.has(k) || k == "sliding_window_size" && raw.has("sliding_window")) {
            raw.assume(k, d, reason);
            map.insert(k.to_owned(), Value::from(d));
        }
    }
    let mut inner = raw.sibling(&map);
    let mut spec = read_inkling2_text(&mut inner, family, head)?;
    for a in inner.assumptions {
        raw.assume(&a.field, a.value, &a.reason);
    }
    for (symbol, source) in inner.sources {
        raw.source(symbol, &source);
    }
    raw.read.borrow_mut().extend(inner.read.into_inner());
    // The loop keys: `loop_config` wins over the flat ones.
    let loop_config = raw.value("loop_config").and_then(Value::as_object);
    let loop_key =
        |raw: &mut RawConfig<'_>, old: &str, key: &str, default: u64| -> Result<u64, ConfigError> {
            if let Some(v) = loop_config.and_then(|m| m.get(old)) {
                return v.as_u64().ok_or_else(|| {
                    raw.invalid(&format!("loop_config.{old}"), v, "a non-negative integer")
                });
            }
            if let Some(v) = raw.uint(key)? {
                Ok(v)
            } else {
                raw.assume(key, default, reason);
                Ok(default)
            }
        };
    let start = loop_key(raw, "core_start", "loop_layer_index_start", 6)?;
    let end = loop_key(raw, "core_end", "loop_layer_index_end", 18)?;
    let passes = loop_key(raw, "num_passes", "loop_num_passes", 3)?;
    let rank = loop_key(raw, "gate_rank", "loop_gate_rank", 64)?;
    let block = raw.size_or(
        &["n_layers_per_attn_res_block"],
        Sym::Named("n_layers_per_attn_res_block"),
        6,
        reason,
    )?;
    let n = spec.num_layers();
    if passes == 0 {
        return Err(raw.invalid("loop_num_passes", &passes.into(), "at least 1"));
    }
    if rank == 0 {
        return Err(raw.invalid("loop_gate_rank", &rank.into(), "a positive rank"));
    }
    if start == 0 || !start.is_multiple_of(block) {
        return Err(raw.invalid(
            "loop_layer_index_start",
            &start.into(),
            &format!("a positive multiple of `n_layers_per_attn_res_block` ({block})"),
        ));
    }
    let warning = loop_end_past_layers(raw, (start, end), block, n, passes)?;
    let d = spec.hidden_size;
    let hidden = || Expr::sym(Sym::Hidden, d);
    let r = || Expr::sym(Sym::Named("loop_gate_rank"), rank);
    let mut overflow = false;
    let mut looped = Runs::uniform(false, n);
    looped.overwrite(start.min(n)..end.min(n), &true);
    map_layers_by(&mut spec, &looped, |layer, looped| {
        let mut l = layer.clone();
        if !*looped {
            return Ok(l);
        }
        for gate in ["q", "k", "v", "mlp"] {
            let part = "message gates";
            l.extras.push(Extra::linear(
                format!("{gate}_message_gate.down_proj.weight"),
                part,
                Category::LayerExtras,
                Expr::product(vec![Expr::Lit(2), hidden()]),
                r(),
            ));
            for proj in ["forget_gate_proj", "message_gate_proj"] {
                l.extras.push(Extra::linear(
                    format!("{gate}_message_gate.{proj}.weight"),
                    part,
                    Category::LayerExtras,
                    r(),
                    hidden(),
                ));
            }
        }
        if let Some(a) = standard(&mut l) {
            match a.num_kv_heads.checked_mul(passes) {
                Some(h) if passes > 1 => a.transformers_cache_heads = Some(h),
                Some(_) => {}
                None => overflow = true,
            }
        }
        if let Some(s) = &mut l.state {
            match s.conv.checked_mul(passes) {
                Some(c) => s.conv = c,
                None => overflow = true,
            }
        }
        Ok(l)
    })?;
    if overflow {
        return Err(raw.invalid(
            "loop_num_passes",
            &passes.into(),
            "a count whose caches fit in 64 bits",
        ));
    }
    spec.extras.push(Extra::table(
        "model.message_input.query",
        "attention",
        Category::Attention,
        Expr::product(vec![
            Expr::sym(
                Sym::Named("loop_layers"),
                raw.check(checked::sub(
                    "loop_layer_index_end − loop_layer_index_start",
                    end,
                    start,
                ))?,
            ),
            Expr::Lit(4),
        ]),
        hidden(),
    ));
    spec.warnings.extend(warning);
    Ok(spec)
}

/// `loop_layer_index_end`, which `Inkling2LoopTextConfig.validate_architecture` asks only to
/// be a multiple of `n_layers_per_attn_res_block`. `Inkling2LoopModel` loops the layers
/// `start ≤ i < end` that exist, while `message_input.query` has `end − start` rows (built
/// down to 0; `torch.zeros` refuses fewer). Past the layers, the cache offsets of the third
/// and later passes count `end − start` looped layers and overrun the copies appended for
/// the ones built, so that forward fails: the weights are exact, the cache is warned about.
fn loop_end_past_layers(
    raw: &RawConfig<'_>,
    (start, end): (u64, u64),
    block: u64,
    layers: u64,
    passes: u64,
) -> Result<Option<String>, ConfigError> {
    if !end.is_multiple_of(block) || end < start {
        return Err(raw.invalid(
            "loop_layer_index_end",
            &end.into(),
            &format!(
                "a multiple of `n_layers_per_attn_res_block` ({block}), at least the start ({start})"
            ),
        ));
    }
    Ok((end > layers && start < layers && passes > 2).then(|| {
        format!(
            "`loop_layer_index_end` ({end}) is past the layers ({layers}): transformers builds \
             these weights, but from the third pass its cache offsets count {} looped layers \
             and overrun the caches of the {} built, so the KV cache describes no model that runs",
            end.saturating_sub(start),
            layers.saturating_sub(start)
        )
    }))
}

/// The entries of this file.
pub(crate) const FAMILIES: &[Family] = &[
    Family::code(
        "hunyuan_v1_moe",
        "HunYuanMoEV1Config",
        "HunYuanMoEV1ForCausalLM",
        super::experts2::read_hunyuan_v1_moe,
    ),
    Family::code(
        "dots1",
        "Dots1Config",
        "Dots1ForCausalLM",
        super::experts2::read_dots1,
    ),
    Family::code(
        "dbrx",
        "DbrxConfig",
        "DbrxForCausalLM",
        super::experts2::read_dbrx,
    ),
    Family::code(
        "inkling2_loop_text",
        "Inkling2LoopTextConfig",
        "Inkling2LoopForCausalLM",
        read_inkling2_loop_text,
    ),
    Family::code("hy_v4", "HYV4Config", "HYV4ForCausalLM", |r, f, _| {
        read_hy_v4(r, f, &HY_V4_CLASS)
    }),
    Family::code(
        "hy_v4_vl_text",
        "HYV4VLTextConfig",
        "HYV4VLForConditionalGeneration",
        |r, f, _| read_hy_v4(r, f, &HY_V4_VL_TEXT_CLASS),
    ),
    Family::code("axk2", "AXK2Config", "AXK2ForCausalLM", read_axk2),
    Family::code(
        "dots3_note_text",
        "Dots3NoteTextConfig",
        "Dots3NoteForCausalLM",
        read_dots3_note_text,
    ),
    Family::code("jetmoe", "JetMoeConfig", "JetMoeForCausalLM", read_jetmoe),
    // `head_dim` = `hidden_size // num_attention_heads` (4096 // 96 = 42 by default).
    Family::block(
        "glm4_moe",
        "Glm4MoeConfig",
        "Glm4MoeForCausalLM",
        &GLM4_MOE_FLOORED,
    ),
    Family::code(
        "sarvam_moe",
        "SarvamMoEConfig",
        "Glm4MoeForCausalLM",
        |r, f, _| {
            read_patched(r, f, &SARVAM_MOE, |r, m| {
                sarvam_patch(r, m);
                Ok(())
            })
        },
    ),
    Family::block(
        "solar_open",
        "SolarOpenConfig",
        "SolarOpenForCausalLM",
        &SOLAR_OPEN,
    ),
    Family::block(
        "minimax_m2",
        "MiniMaxM2Config",
        "MiniMaxM2ForCausalLM",
        &MINIMAX_M2,
    ),
    Family::block(
        "ernie4_5_moe",
        "Ernie4_5_MoeConfig",
        "Ernie4_5_MoeForCausalLM",
        &ERNIE4_5_MOE,
    ),
    Family::code(
        "llama4_text",
        "Llama4TextConfig",
        "Llama4ForCausalLM",
        |r, f, _| read_patched(r, f, &LLAMA4_TEXT, llama4_patch),
    ),
    Family::block("phimoe", "PhimoeConfig", "PhimoeForCausalLM", &PHIMOE),
    Family::block(
        "granitemoeshared",
        "GraniteMoeSharedConfig",
        "GraniteMoeSharedForCausalLM",
        &GRANITEMOESHARED,
    ),
    Family::code(
        "exaone_moe",
        "ExaoneMoeConfig",
        "ExaoneMoeForCausalLM",
        |r, f, _| read_patched(r, f, &EXAONE_MOE, mlp_layer_types),
    ),
    Family::block(
        "flex_olmo",
        "FlexOlmoConfig",
        "FlexOlmoForCausalLM",
        &FLEX_OLMO,
    ),
    Family::block(
        "aria_text",
        "AriaTextConfig",
        "AriaTextForCausalLM",
        &ARIA_TEXT_FLOORED,
    ),
    Family::code(
        "cohere2_moe",
        "Cohere2MoeConfig",
        "Cohere2MoeForCausalLM",
        |r, f, _| read_patched(r, f, &COHERE2_MOE, cohere2_moe_patch),
    ),
    Family::code("hy_v3", "HYV3Config", "HYV3ForCausalLM", |r, f, _| {
        read_patched(r, f, &HY_V3, dense_first_layer)
    }),
    Family::code(
        "mimo_v2_flash",
        "MiMoV2FlashConfig",
        "MiMoV2FlashForCausalLM",
        read_mimo,
    ),
    Family::code("laguna", "LagunaConfig", "LagunaForCausalLM", read_laguna),
    Family::code("afmoe", "AfmoeConfig", "AfmoeForCausalLM", |r, f, _| {
        read_patched(r, f, &AFMOE, afmoe_patch)
    }),
    Family::code(
        "granitemoe_swa",
        "GraniteMoeSWAConfig",
        "GraniteMoeSWAForCausalLM",
        |r, f, _| read_patched(r, f, &GRANITEMOE_SWA, granite_swa_patch),
    ),
    Family::code(
        "kolibri1",
        "Kolibri1Config",
        "Kolibri1ForCausalLM",
        |r, f, _| {
            read_patched(r, f, &KOLIBRI1, |r, m| {
                let _ = m;
                layer_types_or(r, |n| all_but_every(n, 5))
            })
        },
    ),
    Family::code("axk1", "AXK1Config", "AXK1ForCausalLM", |r, f, _| {
        read_patched(r, f, &AXK1, axk1_patch)
    }),
    Family::code("beam", "BeamConfig", "BeamForCausalLM", |r, f, _| {
        read_patched(r, f, &BEAM, beam_patch)
    }),
    Family::code("flint", "FlintConfig", "FlintForCausalLM", |r, f, _| {
        read_patched(r, f, &FLINT, flint_patch)
    }),
    Family::code(
        "minimax_m3_vl_text",
        "MiniMaxM3VLTextConfig",
        "MiniMaxM3VLForCausalLM",
        read_minimax_m3_text,
    ),
    Family::code(
        "inkling_text",
        "InklingTextConfig",
        "InklingForCausalLM",
        read_inkling_text,
    ),
    Family::code(
        "inkling2_text",
        "Inkling2TextConfig",
        "Inkling2ForCausalLM",
        read_inkling2_text,
    ),
];
