//! The Inkling text models: Inkling (`inkling_text`, `modeling_inkling.py`), Inkling 2
//! (`inkling2_text`, `modeling_inkling2.py`) and Inkling 2 Loop (`inkling2_loop_text`,
//! `modeling_inkling2_loop.py`), which runs a core of Inkling 2's layers several times.

use llmsize_core::Category;
use llmsize_core::checked;
use llmsize_core::expr::{Expr, Sym};
use llmsize_core::spec::{Extra, Ffn, Layer, ModelSpec, OutputHead};
use serde_json::{Map, Value};

use super::glm::GLM4_MOE;
use super::{LISTED_DENSE, all_but_every, dense_types_or_first, fold_back, read_patched, standard};
use crate::error::ConfigError;
use crate::hf_config::family::{
    AttentionRule, Block, Family, HeadDim, LLAMA, MoeRule, NO, PLAIN_ATTENTION, QkNorm, Shared,
    StandardRule, key_or, map_layers_by, try_map_kinds, unbiased_mlp,
};
use crate::hf_config::raw::RawConfig;
use crate::hf_config::runs::Runs;

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
        correction_bias: NO,
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
pub(super) fn read_inkling_text(
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
    check_swa_kv(raw, swa_heads, swa_kv)?;
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
            match conv_state(kv, hd, d, kernel) {
                Some(s) => l.state = Some(s),
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
    norm_table_untie_head(spec);
    Ok(())
}

/// The `swa_*` heads share their KV heads evenly (`swa_num_key_value_heads` divides
/// `swa_num_attention_heads`).
fn check_swa_kv(raw: &RawConfig<'_>, swa_heads: u64, swa_kv: u64) -> Result<(), ConfigError> {
    if swa_heads.is_multiple_of(swa_kv) {
        return Ok(());
    }
    Err(raw.invalid(
        "swa_num_key_value_heads",
        &swa_kv.into(),
        &format!("a divisor of `swa_num_attention_heads` ({swa_heads})"),
    ))
}

/// A layer's float32 conv states: k and v (`n_kv·d_h` channels each) and the two
/// convolutions on the stream (`d` each), `kernel` taps per channel; `None` past 64 bits.
fn conv_state(kv: u64, hd: u64, d: u64, kernel: u64) -> Option<llmsize_core::spec::RecurrentState> {
    let channels = kv
        .checked_mul(hd)
        .and_then(|c| c.checked_mul(2))
        .and_then(|c| c.checked_add(d.checked_mul(2)?));
    let conv = channels.and_then(|c| c.checked_mul(kernel))?;
    Some(llmsize_core::spec::RecurrentState {
        conv,
        recurrent: 0,
        recurrent_f32: false,
        conv_f32: true,
    })
}

/// An `RMSNorm` after the token table, and an `lm_head` of its own (never tied).
fn norm_table_untie_head(spec: &mut ModelSpec) {
    let d = spec.hidden_size;
    if let Some(stack) = spec.stacks.first_mut() {
        stack.embedding_norm = Some(llmsize_core::spec::Norm::rms_norm(d));
    }
    if let OutputHead::Lm { tied, .. } = &mut spec.head {
        *tied = false;
    }
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
        correction_bias: NO,
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
pub(super) fn read_inkling2_text(
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
    check_swa_kv(raw, swa_heads, swa_kv)?;
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
        match conv_state(kv, hd, d, kernel) {
            Some(s) => l.state = Some(s),
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
    norm_table_untie_head(&mut spec);
    spec.extras.push(Extra::vector(
        "model.final_input.query",
        "attention",
        Category::Attention,
        Expr::sym(Sym::Hidden, d),
    ));
    // The table keeps `vocab_size` rows; the head (and the logits) `unpadded_vocab_size`.
    spec.vocab_size = unpadded;
    raw.source(Sym::Vocab, "unpadded_vocab_size");
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
pub(super) fn read_inkling2_loop_text(
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
    fold_back(raw, inner);
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
