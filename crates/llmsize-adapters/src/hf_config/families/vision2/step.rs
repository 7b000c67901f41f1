//! Step-3.7 (`modeling_step3p7.py`): a text model with per-head output gates (`g_proj`),
//! per-layer head counts for sliding layers, dense-first MoE layers with a shared expert, and a
//! vision transformer with per-channel layer scales and two stride-2 convolutional downsamplers.

use llmsize_core::Category;
use llmsize_core::spec::{Attention, Extra, Ffn, ModelSpec};
use serde_json::Value;

use super::parts::{lit, mul, sym, with_sub, with_top};
use super::{scaled_vit_layers, vision, with_parts};
use crate::error::ConfigError;
use crate::hf_config::HeadChoice;
use crate::hf_config::families::vision::not_read;
use crate::hf_config::family::{
    ALL_SPARSE, AttentionRule, Block, Family, HeadDim, LLAMA, LLAMA_ATTENTION, MlpRule, MoeRule,
    NO, QkNorm, Shared, Sparsity, StandardRule, Switch, key_or, map_layers_by, read_block,
};
use crate::hf_config::raw::RawConfig;
use crate::hf_config::runs::Runs;
use llmsize_core::checked;

/// `Step3p7TextConfig` as a block: `attention_bias` on q, k, v, o; per-head q/k norms;
/// `head_dim` 128; 8 KV heads; MLPs biased by `mlp_bias`; `n_routed_experts` experts (a
/// bias-free router; `e_score_correction_bias` is a buffer) with one shared expert of
/// `share_expert_dim`; the dense layers listed by [`step3p7_text`].
const TEXT: Block = Block {
    hidden: key_or(&["hidden_size"], 4096),
    layers: key_or(&["num_hidden_layers"], 45),
    heads: key_or(&["num_attention_heads"], 64),
    vocab: key_or(&["vocab_size"], 128_815),
    kv_default: Some(8),
    head_dim: HeadDim::KeyOr(128),
    attention: AttentionRule::Standard(StandardRule {
        qk_norm: QkNorm::PerHead,
        ..LLAMA_ATTENTION
    }),
    mlp: MlpRule {
        width: key_or(&["intermediate_size"], 11264),
        up_bias: Switch::Key("mlp_bias", false),
        down_bias: Switch::Key("mlp_bias", false),
        ..LLAMA.mlp
    },
    moe: Some(MoeRule {
        experts: key_or(&["n_routed_experts", "num_local_experts"], 288),
        top_k: key_or(&["num_experts_per_tok"], 8),
        expert_width: key_or(&["moe_intermediate_size"], 1280),
        correction_bias: NO,
        expert_bias: NO,
        shared: Shared::Width(key_or(&["share_expert_dim"], 1280)),
        shared_gate: false,
        sparsity: Sparsity {
            dense_list: None,
            ..ALL_SPARSE
        },
    }),
    ..LLAMA
};

/// The legacy hub keys `Step3p7TextConfig.__post_init__` rewrites; configs holding them are
/// refused rather than read half-way.
const LEGACY: &[&str] = &[
    "moe_layers_enum",
    "attention_other_setting",
    "sparse_attention_config",
    "moe_layer_freq",
];

/// The text model of `Step3p7ForConditionalGeneration` (its `text_config`, whatever
/// `model_type` it names, as the composite drops it): [`TEXT`] with the dense layers of
/// `mlp_layer_types` (the first 3 when absent), each layer's `g_proj` (`d → n_h` with
/// per-head `gating`, else `d → n_h·d_h`), and the head counts of `per_layer_config` (when
/// absent: `num_sliding_attention_heads` on sliding layers).
fn step3p7_text(raw: &mut RawConfig<'_>, f: &Family) -> Result<ModelSpec, ConfigError> {
    for k in LEGACY {
        if raw.value(k).is_some() {
            return Err(not_read(
                raw,
                f.model_type,
                k,
                "a legacy hub key the class rewrites",
            ));
        }
    }
    let reason = format!("absent; `{}` default", f.config_class);
    let n = raw.size_or(
        &["num_hidden_layers"],
        llmsize_core::expr::Sym::Layers,
        45,
        &reason,
    )?;
    let dense: Runs<bool> = match raw.value("mlp_layer_types") {
        None => Runs::from_index(n, 3).map(|sparse| !sparse),
        Some(Value::Array(a)) => {
            let mut out = Runs::default();
            for t in a {
                match t.as_str() {
                    Some("dense") => out.push(true, 1),
                    Some("sparse") => out.push(false, 1),
                    _ => return Err(raw.invalid("mlp_layer_types", t, "`dense` or `sparse`")),
                }
            }
            if a.len() as u64 != n {
                let v = Value::Array(a.clone());
                return Err(raw.invalid("mlp_layer_types", &v, "one entry per layer"));
            }
            out
        }
        Some(v) => return Err(raw.invalid("mlp_layer_types", v, "a list of layer kinds")),
    };
    let heads = raw.size_or(
        &["num_attention_heads"],
        llmsize_core::expr::Sym::Heads,
        64,
        &reason,
    )?;
    let per_head_gate = match raw.value("gating") {
        None | Some(Value::Bool(true)) => true,
        Some(Value::String(s)) if s == "per-head" => true,
        Some(_) => false,
    };
    let map = raw.map.clone();
    let mut inner = raw.sibling(&map);
    inner.derived.dense = Some(dense);
    let mut spec = read_block(&mut inner, f, &TEXT)?;
    for a in inner.assumptions {
        raw.assume(&a.field, a.value, &a.reason);
    }
    for (symbol, source) in inner.sources {
        raw.source(symbol, &source);
    }
    let mlp_bias = raw.flag_or("mlp_bias", false, &reason)?;
    // The head count of each layer.
    let sliding_heads = raw
        .size_opt("num_sliding_attention_heads")?
        .unwrap_or(heads);
    // Each layer's head count: `per_layer_config`'s entry (a layer it does not name keeps
    // `num_attention_heads`), else by whether it slides.
    let listed: Runs<Option<u64>> = match raw.value("per_layer_config") {
        None | Some(Value::Null) => Runs::uniform(None, n),
        Some(Value::Object(m)) => {
            let mut named: Vec<(u64, u64)> = Vec::new();
            for (k, o) in m {
                // Only a layer's own index names it (`str(i)`).
                let Some(i) = k
                    .parse::<u64>()
                    .ok()
                    .filter(|i| *i < n && i.to_string() == *k)
                else {
                    continue;
                };
                let h = match o {
                    Value::Object(o) => match o.get("num_attention_heads") {
                        None => heads,
                        Some(v) => v.as_u64().filter(|h| *h > 0).ok_or_else(|| {
                            raw.invalid("per_layer_config", v, "a positive `num_attention_heads`")
                        })?,
                    },
                    v => return Err(raw.invalid("per_layer_config", v, "an object per layer")),
                };
                named.push((i, h));
            }
            named.sort_unstable();
            let mut out = Runs::default();
            let mut next = 0u64;
            for (i, h) in named {
                // `next ≤ i < n`.
                out.push(Some(heads), i.saturating_sub(next));
                out.push(Some(h), 1);
                // saturates: never, i < n (above).
                next = i.saturating_add(1);
            }
            out.push(Some(heads), n.saturating_sub(next));
            out
        }
        Some(v) if n > 0 => {
            return Err(raw.invalid("per_layer_config", v, "an object of layer overrides"));
        }
        Some(_) => Runs::default(),
    };
    let d = spec.hidden_size;
    map_layers_by(&mut spec, &listed, |kind, listed| {
        let mut layer = kind.clone();
        let sliding = layer.sliding_window.is_some();
        if let Attention::Standard(a) = &mut layer.attention {
            a.num_heads = match listed {
                Some(h) => *h,
                None if sliding => sliding_heads,
                None => heads,
            };
            let width = if per_head_gate {
                sym("n_h", a.num_heads)
            } else {
                mul(sym("n_h", a.num_heads), sym("d_h", a.head_dim))
            };
            layer.extras.push(Extra::linear(
                "self_attn.g_proj.weight",
                "attention gate",
                Category::Attention,
                sym("d", d),
                width,
            ));
        }
        if let Ffn::Moe(m) = &mut layer.ffn
            && let Some(s) = &mut m.shared
        {
            s.up_bias = mlp_bias;
            s.down_bias = mlp_bias;
        }
        Ok(layer)
    })?;
    Ok(spec)
}

/// `Step3p7ForConditionalGeneration`: the text model, the vision tower (a bias-free patch
/// convolution, a `(image_size / patch_size)²` position table, `pre_layernorm`, layers of
/// `LayerNorm`s, biased q/k/v/out and `fc1`/`fc2` of `int(d_vis·mlp_ratio)` with per-channel
/// scales `lambda_1`, `lambda_2`, and biased 3×3 downsamplers `d_vis → 2·d_vis → 4·d_vis`), and
/// the projector `4·d_vis → d` (biased by `projector_bias`); tied by the composite's own
/// `tie_word_embeddings` (default false: `Step3p7Config` has no such field, and transformers
/// reads it from the config of the class that holds `_tied_weights_keys`, never from
/// `text_config`).
pub(super) fn step3p7(
    raw: &mut RawConfig<'_>,
    f: &Family,
    _head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    // The composite drops the text config's `model_type` (the hub's names remote code) and
    // always builds `Step3p7TextConfig`.
    let sub = super::parts::object(raw, "text_config")?;
    let mut inner = raw.nested("text_config", sub);
    let mut spec = step3p7_text(&mut inner, &TEXT_FAMILY)?;
    for a in inner.assumptions {
        raw.assume(&format!("text_config.{}", a.field), a.value, &a.reason);
    }
    for (symbol, source) in inner.sources {
        raw.source(symbol, &format!("text_config.{source}"));
    }
    f.model_type.clone_into(&mut spec.model_type);
    spec.architecture = crate::hf_config::architecture(raw, f.architecture);
    let reason = format!("absent; `{}` default", f.config_class);
    let tied = raw.flag_or("tie_word_embeddings", false, &reason)?;
    if let llmsize_core::spec::OutputHead::Lm { tied: t, .. } = &mut spec.head {
        *t = tied;
    }
    let mut p = vision();
    let one = lit(1);
    let dv = with_sub(raw, "vision_config", "Step3p7VisionConfig", |s| {
        let dv = match s.size_opt("width")? {
            Some(w) => w,
            None => s.size("hidden_size", 1536)?,
        };
        let ratio = s.float("mlp_ratio", 8960.0 / 1536.0)?;
        #[allow(
            clippy::cast_precision_loss,
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "Python's `int(hidden_size * mlp_ratio)` of positive sizes"
        )]
        let ff = (dv as f64 * ratio).trunc().max(0.0) as u64;
        let l = match s.size_opt("layers")? {
            Some(n) => n,
            None => s.size("num_hidden_layers", 47)?,
        };
        let c = s.size("num_channels", 3)?;
        let ps = s.size("patch_size", 14)?;
        let image = s.size("image_size", 728)?;
        let side = s.check(checked::div("image_size / patch_size", image, ps))?;
        let (d, ff, l) = (sym("d_vis", dv), sym("d_ff_vis", ff), sym("L_vis", l));
        let pre = "model.vision_model";
        let part = "vision embeddings";
        p.conv(
            format!("{pre}.embeddings.patch_embedding"),
            part,
            (lit(c), lit(s.mul(ps, ps, "patch_size²")?), d.clone()),
            false,
            &one,
        );
        p.table(
            format!("{pre}.embeddings.position_embedding"),
            part,
            (
                lit(s.mul(side, side, "(image_size / patch_size)²")?),
                d.clone(),
            ),
            &one,
        );
        scaled_vit_layers(&mut p, pre, &d, ff, &l);
        let d2 = mul(lit(2), d.clone());
        let d4 = mul(lit(4), d.clone());
        p.conv(
            format!("{pre}.downsampler1"),
            "vision downsampler",
            (d, lit(9), d2.clone()),
            true,
            &one,
        );
        p.conv(
            format!("{pre}.downsampler2"),
            "vision downsampler",
            (d2, lit(9), d4),
            true,
            &one,
        );
        Ok(dv)
    })?;
    let bias = with_top(raw, f.config_class, |s| s.flag("projector_bias", false))?;
    p.linear(
        "model.multi_modal_projector",
        "multimodal projector",
        (mul(lit(4), sym("d_vis", dv)), sym("d", spec.hidden_size)),
        bias,
        &one,
    );
    Ok(with_parts(spec, p))
}

/// The text model's own entry (not registered: transformers has no such `model_type`).
const TEXT_FAMILY: Family = Family {
    model_type: "step3p7",
    config_class: "Step3p7TextConfig",
    architecture: "Step3p7ForConditionalGeneration",
    read: crate::hf_config::family::Read::Block(&TEXT),
};
