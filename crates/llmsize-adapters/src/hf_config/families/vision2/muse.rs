//! Muse-Glimmer (`modeling_muse_glimmer.py`): a windowed vision tower with a linear
//! spatio-temporal patch embedding, a bias-free adapter and projection, and a text model with
//! gated attention (`gate_proj`), weight-free q/k norms and four centred `RMSNorm`s per layer.

use llmsize_core::Category;
use llmsize_core::spec::{Extra, Layers, ModelSpec};
use serde_json::Value;

use super::parts::{lit, mul, sym, with_sub, with_top};
use super::{vision, with_parts};
use crate::error::ConfigError;
use crate::hf_config::HeadChoice;
use crate::hf_config::families::vision::{Tie, text};
use crate::hf_config::family::{
    AttentionRule, Block, Family, HeadDim, LLAMA, LLAMA_ATTENTION, MlpRule, NO, NormRule, RMS2,
    key_or, read_block,
};
use crate::hf_config::raw::RawConfig;

/// Muse-Glimmer text (`MuseGlimmerTextAttention`, `MuseGlimmerTextDecoderLayer`):
/// `attention_bias` on q, k, v, o; `head_dim` 128; 2 KV heads; four norms per layer; a
/// bias-free gated MLP; untied.
const GLIMMER_TEXT: Block = Block {
    hidden: key_or(&["hidden_size"], 6656),
    layers: key_or(&["num_hidden_layers"], 52),
    heads: key_or(&["num_attention_heads"], 32),
    vocab: key_or(&["vocab_size"], 202_048),
    kv_default: Some(2),
    head_dim: HeadDim::KeyOr(128),
    attention: AttentionRule::Standard(LLAMA_ATTENTION),
    mlp: MlpRule {
        width: key_or(&["intermediate_size"], 19968),
        up_bias: NO,
        down_bias: NO,
        ..LLAMA.mlp
    },
    norm: NormRule {
        per_layer: 4,
        ..RMS2
    },
    ..LLAMA
};

/// `muse_glimmer_text`: [`GLIMMER_TEXT`] with the class's `layer_types` when absent (full
/// attention every 4th layer counted back from the last, sliding otherwise), and each layer's
/// output gate `gate_proj` `d → n_h·d_h` (bias-free).
pub(super) fn muse_glimmer_text(
    raw: &mut RawConfig<'_>,
    f: &Family,
    _head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let mut spec = if raw.has("layer_types") && raw.value("layer_types").is_some() {
        read_block(raw, f, &GLIMMER_TEXT)?
    } else {
        let reason = format!("absent; `{}` default", f.config_class);
        let n = raw.size_or(
            &["num_hidden_layers"],
            llmsize_core::expr::Sym::Layers,
            52,
            &reason,
        )?;
        let types: Vec<Value> = (0..n)
            .map(|i| {
                Value::from(if (n - 1 - i).is_multiple_of(4) {
                    "full_attention"
                } else {
                    "sliding_attention"
                })
            })
            .collect();
        let mut map = raw.map.clone();
        map.insert("layer_types".to_owned(), Value::Array(types));
        if !raw.has("sliding_window") {
            map.insert("sliding_window".to_owned(), Value::from(2048));
            raw.assume("sliding_window", 2048, &reason);
        }
        let mut inner = RawConfig::new(raw.file, &map);
        let spec = read_block(&mut inner, f, &GLIMMER_TEXT)?;
        raw.assume(
            "layer_types",
            "every 4th from the last full, others sliding",
            &reason,
        );
        for a in inner.assumptions {
            raw.assume(&a.field, a.value, &a.reason);
        }
        for (symbol, source) in inner.sources {
            raw.source(symbol, &source);
        }
        spec
    };
    for stack in &mut spec.stacks {
        let kinds = stack.layers.kinds().to_vec();
        let mut layers = Layers::new();
        for run in stack.layers.runs() {
            let Some(kind) = kinds.get(run.kind) else {
                continue;
            };
            let mut kind = kind.clone();
            if let llmsize_core::spec::Attention::Standard(a) = &kind.attention {
                let width = mul(sym("n_h", a.num_heads), sym("d_h", a.head_dim));
                kind.extras.push(Extra::linear(
                    "self_attn.gate_proj.weight",
                    "attention gate",
                    Category::Attention,
                    sym("d", spec.hidden_size),
                    width,
                ));
            }
            layers.push_run(kind, run.count);
        }
        stack.layers = layers;
    }
    Ok(spec)
}

/// `MuseGlimmerForConditionalGeneration`: the vision tower (a bias-free linear patch
/// embedding of `patch_temporal·3·patch²`, a `pos_emb_height × pos_emb_width` position table,
/// `ln_pre`, `LayerNorm` layers with biased q/k/v/`proj` and `fc1`/`fc2`, `ln_post`), the
/// adapter (`fc1` `out_hidden_size → P`, `fc2` `P → P`) and `vision_projection` `P → d`, all
/// bias-free, the text model; tied by the text config.
pub(super) fn muse_glimmer(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let spec = text(raw, f, "muse_glimmer_text", head, Tie::Text)?;
    let mut p = vision();
    let one = lit(1);
    with_sub(raw, "vision_config", "MuseGlimmerVisionConfig", |s| {
        let d = sym("d_vis", s.size("hidden_size", 1536)?);
        let ff = sym("d_ff_vis", s.size("intermediate_size", 8960)?);
        let l = sym("L_vis", s.size("num_hidden_layers", 50)?);
        let ps = s.size("patch_size", 14)?;
        let t = s.size("patch_temporal", 2)?;
        let grid = s
            .size("pos_emb_height", 32)?
            .saturating_mul(s.size("pos_emb_width", 32)?);
        let pre = "model.vision_tower";
        let part = "vision embeddings";
        let k = t.saturating_mul(3).saturating_mul(ps).saturating_mul(ps);
        p.linear(
            format!("{pre}.patch_embedder.patch_embedding"),
            part,
            (lit(k), d.clone()),
            false,
            &one,
        );
        p.table(
            format!("{pre}.patch_embedder.position_embedding_table"),
            part,
            (lit(grid), d.clone()),
            &one,
        );
        p.norm(format!("{pre}.ln_pre"), "vision norms", &d, true, &one);
        let lp = format!("{pre}.layers");
        p.norm(format!("{lp}.norm1"), "vision norms", &d, true, &l);
        p.norm(format!("{lp}.norm2"), "vision norms", &d, true, &l);
        for name in ["q_proj", "k_proj", "v_proj", "proj"] {
            p.linear(
                format!("{lp}.attn.{name}"),
                "vision attention",
                (d.clone(), d.clone()),
                true,
                &l,
            );
        }
        p.linear(
            format!("{lp}.mlp.fc1"),
            "vision mlp",
            (d.clone(), ff.clone()),
            true,
            &l,
        );
        p.linear(
            format!("{lp}.mlp.fc2"),
            "vision mlp",
            (ff, d.clone()),
            true,
            &l,
        );
        p.norm(format!("{pre}.ln_post"), "vision norms", &d, true, &one);
        Ok(())
    })?;
    let (out, proj) = with_top(raw, f.config_class, |s| {
        Ok((
            s.size("out_hidden_size", 6144)?,
            s.size("projector_hidden_size", 4096)?,
        ))
    })?;
    let (out, pp) = (sym("d_out", out), sym("d_proj", proj));
    let part = "multimodal projector";
    p.linear(
        "model.vision_adapter.fc1",
        part,
        (out, pp.clone()),
        false,
        &one,
    );
    p.linear(
        "model.vision_adapter.fc2",
        part,
        (pp.clone(), pp.clone()),
        false,
        &one,
    );
    p.linear(
        "model.vision_projection",
        part,
        (pp, sym("d", spec.hidden_size)),
        false,
        &one,
    );
    Ok(with_parts(spec, p))
}
