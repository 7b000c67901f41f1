//! Mixture-of-experts decoders, one file per family group (listed below); [`FAMILIES`], their
//! entries in registry order, and the helpers several files share are here. Each entry is the
//! configuration class's defaults and the switches of its `modeling_*.py` (transformers 5.24);
//! `JetMoE`, dots.llm3 (text), A.X-K2, HY-V4 (and HY-V4-VL's text), MiniMax-M3 (text), the
//! Inkling models, MiMo-V2-Flash and Laguna add what the block does not build by code.
//!
//! | file | model types |
//! |---|---|
//! | `glm.rs` | GLM-4-MoE and its kin: Sarvam-MoE, Solar-Open |
//! | `minimax.rs` | MiniMax-M2, MiniMax-M3 (text, with its lightning indexer) |
//! | `ernie.rs` | ERNIE-4.5-MoE |
//! | `llama4.rs` | Llama 4 (text) |
//! | `granite.rs` | Granite-MoE-shared, Granite-MoE-SWA |
//! | `blocks.rs` | a block and at most a patch: Phi-MoE, EXAONE-MoE, `FlexOlmo`, Aria (text), Cohere2-MoE, Kolibri-1, Flint |
//! | `hunyuan.rs` | Hunyuan MoE, HY-V3, HY-V4 and HY-V4-VL's text (MLA with DeepSeek's sparse-attention indexer) |
//! | `mimo.rs`, `laguna.rs` | MiMo-V2-Flash; Laguna (per-layer heads, an output gate) |
//! | `gated.rs` | `AFMoE`, Beam (a gate on the attention output) |
//! | `axk.rs` | A.X-K1 (DeepSeek-V3 with a post-MoE norm), A.X-K2 (MLA with the indexer, gated norms) |
//! | `inkling.rs` | Inkling, Inkling 2, Inkling 2 Loop (text) |
//! | `jetmoe.rs` | `JetMoE` (a mixture of attention experts) |
//! | `dots.rs` | dots.llm1, dots.llm3 (text: MLA with per-layer shapes and the indexer) |
//! | `dbrx.rs` | DBRX |
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

mod axk;
mod blocks;
mod dbrx;
mod dots;
mod ernie;
mod gated;
mod glm;
mod granite;
mod hunyuan;
mod inkling;
mod jetmoe;
mod laguna;
mod llama4;
mod mimo;
mod minimax;

pub(crate) use dots::{per_layer_overrides, read_dots3_note_text};

use llmsize_core::Category;
use llmsize_core::expr::{Expr, Sym};
use llmsize_core::spec::{Extra, Ffn, Layer, Layers, ModelSpec};
use serde_json::{Map, Value};

use crate::error::ConfigError;
use crate::hf_config::family::{Block, Family, Sparsity, read_block};
use crate::hf_config::raw::RawConfig;
use crate::hf_config::runs::Runs;

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
    fold_back(raw, inner);
    Ok(spec)
}

/// Keep what a reader of a patched copy (`inner`, a [`RawConfig::sibling`]) noted: its
/// assumptions, the sources of its symbols and the keys it read.
fn fold_back(raw: &mut RawConfig<'_>, inner: RawConfig<'_>) {
    for a in inner.assumptions {
        raw.assume(&a.field, a.value, &a.reason);
    }
    for (symbol, source) in inner.sources {
        raw.source(symbol, &source);
    }
    raw.read.borrow_mut().extend(inner.read.into_inner());
}

/// Biases on every shared expert's projections (a family's `mlp_bias` or `use_bias`).
fn shared_biases(spec: &mut ModelSpec) {
    map_moe(spec, |m| {
        if let Some(s) = &mut m.shared {
            s.up_bias = true;
            s.down_bias = true;
        }
    });
}

/// The class defaults of `sizes`, written into the copy `map` where the config has none.
fn write_defaults(
    raw: &mut RawConfig<'_>,
    map: &mut Map<String, Value>,
    sizes: &[(&str, u64)],
    reason: &str,
) {
    for &(k, d) in sizes {
        if !raw.has(k) {
            raw.assume(k, d, reason);
            map.insert(k.to_owned(), Value::from(d));
        }
    }
}

/// Run `derive` on the copy `map` as the defaults made it so far (a derivation that reads
/// the sizes just written in), keeping the per-layer lists it derives.
fn derive_on_copy(
    raw: &mut RawConfig<'_>,
    map: &mut Map<String, Value>,
    derive: impl FnOnce(&mut RawConfig<'_>, &mut Map<String, Value>) -> Result<(), ConfigError>,
) -> Result<(), ConfigError> {
    let snapshot = map.clone();
    let mut inner = raw.sibling(&snapshot);
    derive(&mut inner, map)?;
    raw.derived = inner.derived;
    Ok(())
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

/// A per-layer flag list entry as Python reads it (`if f`).
fn truthy(f: &Value) -> bool {
    f.as_bool() == Some(true)
        || f.as_u64().is_some_and(|n| n > 0)
        || f.as_f64().is_some_and(|x| x != 0.0)
}

// ---------------------------------------------------------------------------------------------
// Tensors several families add.

/// A DeepSeek Sparse Attention indexer on MLA (`…Indexer`: `wq_b` `q_lora_rank →
/// index_n_heads·index_head_dim`, `wk` `d → index_head_dim`, `k_norm` a `LayerNorm` of
/// `index_head_dim` with bias, `weights_proj` `d → index_n_heads`), all attention. Its
/// scores only pick keys (`topk` indices): no gradient reaches it ([`Extra::gradless`]).
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
    .into_iter()
    .map(Extra::gradless)
    .collect()
}

/// The entries of this folder, in registry order (a lookup takes the first entry of a type,
/// and the README lists them so).
pub(crate) const FAMILIES: &[Family] = &[
    Family::code(
        "hunyuan_v1_moe",
        "HunYuanMoEV1Config",
        "HunYuanMoEV1ForCausalLM",
        hunyuan::read_hunyuan_v1_moe,
    ),
    Family::code("dots1", "Dots1Config", "Dots1ForCausalLM", dots::read_dots1),
    Family::code("dbrx", "DbrxConfig", "DbrxForCausalLM", dbrx::read_dbrx),
    Family::code(
        "inkling2_loop_text",
        "Inkling2LoopTextConfig",
        "Inkling2LoopForCausalLM",
        inkling::read_inkling2_loop_text,
    ),
    Family::code("hy_v4", "HYV4Config", "HYV4ForCausalLM", |r, f, _| {
        hunyuan::read_hy_v4(r, f, &hunyuan::HY_V4_CLASS)
    }),
    Family::code(
        "hy_v4_vl_text",
        "HYV4VLTextConfig",
        "HYV4VLForConditionalGeneration",
        |r, f, _| hunyuan::read_hy_v4(r, f, &hunyuan::HY_V4_VL_TEXT_CLASS),
    ),
    Family::code("axk2", "AXK2Config", "AXK2ForCausalLM", axk::read_axk2),
    Family::code(
        "dots3_note_text",
        "Dots3NoteTextConfig",
        "Dots3NoteForCausalLM",
        dots::read_dots3_note_text,
    ),
    Family::code(
        "jetmoe",
        "JetMoeConfig",
        "JetMoeForCausalLM",
        jetmoe::read_jetmoe,
    ),
    // `head_dim` = `hidden_size // num_attention_heads` (4096 // 96 = 42 by default).
    Family::block(
        "glm4_moe",
        "Glm4MoeConfig",
        "Glm4MoeForCausalLM",
        &glm::GLM4_MOE_FLOORED,
    ),
    Family::code(
        "sarvam_moe",
        "SarvamMoEConfig",
        "Glm4MoeForCausalLM",
        |r, f, _| {
            read_patched(r, f, &glm::SARVAM_MOE, |r, m| {
                glm::sarvam_patch(r, m);
                Ok(())
            })
        },
    ),
    Family::block(
        "solar_open",
        "SolarOpenConfig",
        "SolarOpenForCausalLM",
        &glm::SOLAR_OPEN,
    ),
    Family::block(
        "minimax_m2",
        "MiniMaxM2Config",
        "MiniMaxM2ForCausalLM",
        &minimax::MINIMAX_M2,
    ),
    Family::block(
        "ernie4_5_moe",
        "Ernie4_5_MoeConfig",
        "Ernie4_5_MoeForCausalLM",
        &ernie::ERNIE4_5_MOE,
    ),
    Family::code(
        "llama4_text",
        "Llama4TextConfig",
        "Llama4ForCausalLM",
        |r, f, _| read_patched(r, f, &llama4::LLAMA4_TEXT, llama4::llama4_patch),
    ),
    Family::block(
        "phimoe",
        "PhimoeConfig",
        "PhimoeForCausalLM",
        &blocks::PHIMOE,
    ),
    Family::block(
        "granitemoeshared",
        "GraniteMoeSharedConfig",
        "GraniteMoeSharedForCausalLM",
        &granite::GRANITEMOESHARED,
    ),
    Family::code(
        "exaone_moe",
        "ExaoneMoeConfig",
        "ExaoneMoeForCausalLM",
        |r, f, _| read_patched(r, f, &blocks::EXAONE_MOE, mlp_layer_types),
    ),
    Family::block(
        "flex_olmo",
        "FlexOlmoConfig",
        "FlexOlmoForCausalLM",
        &blocks::FLEX_OLMO,
    ),
    Family::block(
        "aria_text",
        "AriaTextConfig",
        "AriaTextForCausalLM",
        &blocks::ARIA_TEXT_FLOORED,
    ),
    Family::code(
        "cohere2_moe",
        "Cohere2MoeConfig",
        "Cohere2MoeForCausalLM",
        |r, f, _| read_patched(r, f, &blocks::COHERE2_MOE, blocks::cohere2_moe_patch),
    ),
    Family::code("hy_v3", "HYV3Config", "HYV3ForCausalLM", |r, f, _| {
        read_patched(r, f, &hunyuan::HY_V3, dense_first_layer)
    }),
    Family::code(
        "mimo_v2_flash",
        "MiMoV2FlashConfig",
        "MiMoV2FlashForCausalLM",
        mimo::read_mimo,
    ),
    Family::code(
        "laguna",
        "LagunaConfig",
        "LagunaForCausalLM",
        laguna::read_laguna,
    ),
    Family::code("afmoe", "AfmoeConfig", "AfmoeForCausalLM", |r, f, _| {
        read_patched(r, f, &gated::AFMOE, gated::afmoe_patch)
    }),
    Family::code(
        "granitemoe_swa",
        "GraniteMoeSWAConfig",
        "GraniteMoeSWAForCausalLM",
        |r, f, _| read_patched(r, f, &granite::GRANITEMOE_SWA, granite::granite_swa_patch),
    ),
    Family::code(
        "kolibri1",
        "Kolibri1Config",
        "Kolibri1ForCausalLM",
        |r, f, _| {
            read_patched(r, f, &blocks::KOLIBRI1, |r, m| {
                let _ = m;
                layer_types_or(r, |n| all_but_every(n, 5))
            })
        },
    ),
    Family::code("axk1", "AXK1Config", "AXK1ForCausalLM", |r, f, _| {
        read_patched(r, f, &axk::AXK1, axk::axk1_patch)
    }),
    Family::code("beam", "BeamConfig", "BeamForCausalLM", |r, f, _| {
        read_patched(r, f, &gated::BEAM, gated::beam_patch)
    }),
    Family::code("flint", "FlintConfig", "FlintForCausalLM", |r, f, _| {
        read_patched(r, f, &blocks::FLINT, blocks::flint_patch)
    }),
    Family::code(
        "minimax_m3_vl_text",
        "MiniMaxM3VLTextConfig",
        "MiniMaxM3VLForCausalLM",
        minimax::read_minimax_m3_text,
    ),
    Family::code(
        "inkling_text",
        "InklingTextConfig",
        "InklingForCausalLM",
        inkling::read_inkling_text,
    ),
    Family::code(
        "inkling2_text",
        "Inkling2TextConfig",
        "Inkling2ForCausalLM",
        inkling::read_inkling2_text,
    ),
];
