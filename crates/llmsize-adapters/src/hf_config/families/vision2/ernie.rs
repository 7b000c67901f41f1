//! ERNIE 4.5-VL-MoE (`modeling_ernie4_5_vl_moe.py`): a text model whose sparse layers hold
//! two sets of experts (text experts of `moe_intermediate_size[0]` that text tokens use, and
//! vision experts of `moe_intermediate_size[1]` that only image and video tokens use), a
//! Qwen2-VL-style vision tower with a linear patch embedding, and the variable-resolution
//! resampler.

use llmsize_core::Category;
use llmsize_core::expr::Expr;
use llmsize_core::spec::{Extra, Ffn, ModelSpec};
use serde_json::Value;

use super::parts::{lit, mul, sym, with_sub};
use super::{vision, with_parts};
use crate::error::ConfigError;
use crate::hf_config::HeadChoice;
use crate::hf_config::families::vision::{Tie, text};
use crate::hf_config::family::{
    ALL_SPARSE, AttentionRule, Block, Family, HeadDim, LLAMA, LLAMA_ATTENTION, MlpRule, MoeRule,
    NO, Shared, Sparsity, StandardRule, Switch, key_or, read_block,
};
use crate::hf_config::raw::RawConfig;
use llmsize_core::checked;

/// The text block with the text experts (the keys patched in by [`ernie4_5_vl_moe_text`]):
/// `use_bias` on every projection of attention and dense MLPs, a bias-free router, 2 shared
/// experts of the text experts' width, tied.
const TEXT: Block = Block {
    hidden: key_or(&["hidden_size"], 2560),
    layers: key_or(&["num_hidden_layers"], 28),
    heads: key_or(&["num_attention_heads"], 20),
    vocab: key_or(&["vocab_size"], 103_424),
    kv_default: Some(4),
    head_dim: HeadDim::KeyOrSplit,
    attention: AttentionRule::Standard(StandardRule {
        qkv_bias: Switch::Key("use_bias", false),
        o_bias: Switch::Key("use_bias", false),
        ..LLAMA_ATTENTION
    }),
    mlp: MlpRule {
        width: key_or(&["intermediate_size"], 12288),
        up_bias: Switch::Key("use_bias", false),
        down_bias: Switch::Key("use_bias", false),
        ..LLAMA.mlp
    },
    moe: Some(MoeRule {
        experts: key_or(&["moe_num_experts"], 64),
        top_k: key_or(&["moe_k"], 6),
        expert_width: key_or(&["moe_intermediate_size"], 1536),
        correction_bias: NO,
        expert_bias: NO,
        shared: Shared::Count(key_or(&["moe_num_shared_experts"], 2)),
        shared_gate: false,
        sparsity: Sparsity {
            dense_list: Some("mlp_only_layers"),
            ..ALL_SPARSE
        },
    }),
    tie: true,
    ..LLAMA
};

/// `ernie4_5_vl_moe_text`: [`TEXT`] read from a copy of the config where
/// `moe_intermediate_size` is its first entry, the layers `mlp_layer_types` calls `dense` are
/// listed, and `head_dim` is `hidden // heads` when absent; then each sparse layer gains the
/// vision experts and their router as tensors no text token multiplies by, and both routers'
/// `e_score_correction_bias` (a parameter here); the shared experts carry `use_bias` biases.
pub(super) fn ernie4_5_vl_moe_text(
    raw: &mut RawConfig<'_>,
    f: &Family,
    _head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let reason = format!("absent; `{}` default", f.config_class);
    let widths = match raw.value("moe_intermediate_size") {
        None => vec![1536, 512],
        Some(Value::Array(a)) => a
            .iter()
            .map(|x| {
                x.as_u64().filter(|n| *n > 0).ok_or_else(|| {
                    raw.invalid("moe_intermediate_size", x, "a list of positive widths")
                })
            })
            .collect::<Result<Vec<_>, _>>()?,
        Some(v) => return Err(raw.invalid("moe_intermediate_size", v, "a list of two widths")),
    };
    let [text_w, vision_w, ..] = widths.as_slice() else {
        let v = Value::from(widths.clone());
        return Err(raw.invalid("moe_intermediate_size", &v, "a list of two widths"));
    };
    let (text_w, vision_w) = (*text_w, *vision_w);
    let layers = raw.size_or(
        &["num_hidden_layers"],
        llmsize_core::expr::Sym::Layers,
        28,
        &reason,
    )?;
    let dense: Vec<Value> = match raw.value("mlp_layer_types") {
        None => vec![Value::from(0)],
        Some(Value::Array(a)) => {
            let mut out = Vec::new();
            for (i, t) in a.iter().enumerate() {
                match t.as_str() {
                    Some("dense") => out.push(Value::from(i)),
                    Some("sparse") => {}
                    _ => {
                        return Err(raw.invalid("mlp_layer_types", t, "`dense` or `sparse`"));
                    }
                }
            }
            if a.len() as u64 != layers {
                let v = Value::Array(a.clone());
                return Err(raw.invalid("mlp_layer_types", &v, "one entry per layer"));
            }
            out
        }
        Some(v) => return Err(raw.invalid("mlp_layer_types", v, "a list of layer kinds")),
    };
    let use_bias = raw.flag_or("use_bias", false, &reason)?;
    let mut map = raw.map.clone();
    map.insert("moe_intermediate_size".to_owned(), Value::from(text_w));
    map.insert("mlp_only_layers".to_owned(), Value::Array(dense));
    if raw.size_opt("head_dim")?.is_none() {
        let hidden = raw.size_or(
            &["hidden_size"],
            llmsize_core::expr::Sym::Hidden,
            2560,
            &reason,
        )?;
        let heads = raw.size_or(
            &["num_attention_heads"],
            llmsize_core::expr::Sym::Heads,
            20,
            &reason,
        )?;
        let head_dim = raw.div(hidden, heads, "hidden_size / num_attention_heads")?;
        map.insert("head_dim".to_owned(), Value::from(head_dim));
    }
    let mut inner = raw.sibling(&map);
    let mut spec = read_block(&mut inner, f, &TEXT)?;
    for a in inner.assumptions {
        if a.field != "mlp_only_layers" {
            raw.assume(&a.field, a.value, &a.reason);
        }
    }
    for (symbol, source) in inner.sources {
        raw.source(symbol, &source);
    }
    for stack in &mut spec.stacks {
        let mut layers = llmsize_core::spec::Layers::new();
        let kinds = stack.layers.kinds().to_vec();
        for run in stack.layers.runs() {
            let Some(kind) = kinds.get(run.kind) else {
                continue;
            };
            let mut kind = kind.clone();
            if let Ffn::Moe(m) = &mut kind.ffn {
                if let Some(s) = &mut m.shared {
                    s.up_bias = use_bias;
                    s.down_bias = use_bias;
                }
                let (e, d) = (sym("E", m.num_experts), sym("d", m.expert.hidden));
                let w = sym("d_ff_vis_expert", vision_w);
                let part = "vision experts";
                kind.extras.push(Extra::table(
                    "mlp.vision_moe.experts.gate_up_proj",
                    part,
                    Category::MoeExperts,
                    Expr::product(vec![e.clone(), lit(2), w.clone()]),
                    d.clone(),
                ));
                kind.extras.push(Extra::table(
                    "mlp.vision_moe.experts.down_proj",
                    part,
                    Category::MoeExperts,
                    mul(e.clone(), d.clone()),
                    w,
                ));
                kind.extras.push(Extra::table(
                    "mlp.vision_moe.gate.weight",
                    "vision router",
                    Category::MoeRouter,
                    e.clone(),
                    d,
                ));
                kind.extras.push(
                    Extra::vector(
                        "mlp.*_moe.gate.moe_statics.e_score_correction_bias",
                        "router",
                        Category::MoeRouter,
                        e,
                    )
                    .times(lit(2)),
                );
            }
            layers.push_run(kind, run.count);
        }
        stack.layers = layers;
    }
    Ok(spec)
}

/// `Ernie4_5_VLMoeForConditionalGeneration`: the vision tower (a bias-free linear patch
/// embedding of `in_channels·patch²`, `LayerNorm` blocks with a biased `qkv`/`proj` and a
/// biased `fc1`/`fc2` of `intermediate_size`, a final `ln`), the resampler (`spatial_linear`
/// and `temporal_linear`: `fc1`, `fc2` and a `LayerNorm` over `S = d_vis·m²`, `fc1` of the
/// temporal one from `S·temporal_merge_size`; `mlp` `S → d`; an `RMSNorm` `after_norm`), the
/// text model; tied by default.
pub(super) fn ernie4_5_vl_moe(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let spec = text(raw, f, "ernie4_5_vl_moe_text", head, Tie::Either(true))?;
    let mut p = vision();
    let (dv, m, t) = with_sub(raw, "vision_config", "Ernie4_5_VLMoeVisionConfig", |s| {
        let dv = s.size("hidden_size", 1280)?;
        let d = sym("d_vis", dv);
        let ff = sym("d_ff_vis", s.size("intermediate_size", 5120)?);
        let l = sym("L_vis", s.size("depth", 32)?);
        let c = s.size("in_channels", 3)?;
        let ps = s.size("patch_size", 14)?;
        let one = lit(1);
        let pre = "model.vision_tower";
        p.linear(
            format!("{pre}.patch_embed.proj"),
            "vision embeddings",
            (
                lit(s.check(checked::product("in_channels·patch_size²", [c, ps, ps]))?),
                d.clone(),
            ),
            false,
            &one,
        );
        let b = format!("{pre}.blocks");
        p.norm(format!("{b}.norm1"), "vision norms", &d, true, &l);
        p.norm(format!("{b}.norm2"), "vision norms", &d, true, &l);
        super::qwen::attention(&mut p, &b, &d, true, true, &l);
        p.linear(
            format!("{b}.mlp.fc1"),
            "vision mlp",
            (d.clone(), ff.clone()),
            true,
            &l,
        );
        p.linear(
            format!("{b}.mlp.fc2"),
            "vision mlp",
            (ff, d.clone()),
            true,
            &l,
        );
        p.norm(format!("{pre}.ln"), "vision norms", &d, true, &one);
        Ok((
            dv,
            s.size("spatial_merge_size", 2)?,
            s.size("temporal_merge_size", 2)?,
        ))
    })?;
    let one = lit(1);
    let s = mul(
        sym("d_vis", dv),
        lit(raw.mul(m, m, "vision_config.spatial_merge_size²")?),
    );
    let part = "multimodal projector";
    let pre = "model.resampler_model";
    for (name, input) in [
        ("spatial_linear", s.clone()),
        ("temporal_linear", mul(s.clone(), lit(t))),
    ] {
        p.linear(
            format!("{pre}.{name}.fc1"),
            part,
            (input, s.clone()),
            true,
            &one,
        );
        p.linear(
            format!("{pre}.{name}.fc2"),
            part,
            (s.clone(), s.clone()),
            true,
            &one,
        );
        p.norm(format!("{pre}.{name}.ln"), part, &s, true, &one);
    }
    let d = sym("d", spec.hidden_size);
    p.linear(format!("{pre}.mlp"), part, (s, d.clone()), true, &one);
    p.norm(format!("{pre}.after_norm"), part, &d, false, &one);
    Ok(with_parts(spec, p))
}
