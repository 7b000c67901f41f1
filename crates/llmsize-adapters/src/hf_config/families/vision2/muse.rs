//! Muse-Glimmer (`modeling_muse_glimmer.py`): a windowed vision tower with a linear
//! spatio-temporal patch embedding, a bias-free adapter and projection, and a text model with
//! gated attention (`gate_proj`), weight-free q/k norms and four centred `RMSNorm`s per layer.

use llmsize_core::Category;
use llmsize_core::spec::{Extra, ModelSpec};
use serde_json::Value;

use super::navit::{MOONVIT_NAMES, encoder_layers};
use super::parts::{lit, mul, sym, with_sub, with_top};
use super::{vision, with_parts};
use crate::error::ConfigError;
use crate::hf_config::HeadChoice;
use crate::hf_config::families::vision::not_read;
use crate::hf_config::families::vision::{Tie, text};
use crate::hf_config::family::{
    ALL_SPARSE, AttentionRule, Block, Family, HeadDim, LLAMA, LLAMA_ATTENTION, MlpRule, MoeRule,
    NO, NormRule, RMS2, Shared, Sparsity, key_or, map_kinds, read_block,
};
use crate::hf_config::raw::RawConfig;
use crate::hf_config::runs::Runs;
use llmsize_core::checked;

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

/// Reads `b` with the class's `layer_types` when the config has none (full attention every
/// 4th layer counted back from the last, sliding otherwise; `sliding_window` 2048), as
/// `MuseGlimmerTextConfig` and `MuseSparkTextConfig` set them.
fn with_class_layer_types(
    raw: &mut RawConfig<'_>,
    f: &Family,
    b: &Block,
    layers_default: u64,
) -> Result<ModelSpec, ConfigError> {
    if raw.has("layer_types") && raw.value("layer_types").is_some() {
        return read_block(raw, f, b);
    }
    let reason = format!("absent; `{}` default", f.config_class);
    let n = raw.size_or(
        &["num_hidden_layers"],
        llmsize_core::expr::Sym::Layers,
        layers_default,
        &reason,
    )?;
    // Full where `(n − 1 − i) % 4 == 0`: `i ≡ n − 1 (mod 4)`.
    let full = Runs::at_offset(n, 4, n.saturating_sub(1) % 4);
    let mut map = raw.map.clone();
    if !raw.has("sliding_window") {
        map.insert("sliding_window".to_owned(), Value::from(2048));
        raw.assume("sliding_window", 2048, &reason);
    }
    let mut inner = raw.sibling(&map);
    inner.derived.sliding = Some(full.map(|f| !f));
    let spec = read_block(&mut inner, f, b)?;
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
    Ok(spec)
}

/// `muse_glimmer_text`: [`GLIMMER_TEXT`] with the class's `layer_types` when absent (full
/// attention every 4th layer counted back from the last, sliding otherwise), and each layer's
/// output gate `gate_proj` `d → n_h·d_h` (bias-free).
pub(super) fn muse_glimmer_text(
    raw: &mut RawConfig<'_>,
    f: &Family,
    _head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let mut spec = with_class_layer_types(raw, f, &GLIMMER_TEXT, 52)?;
    let d = spec.hidden_size;
    map_kinds(&mut spec, |kind| {
        if let llmsize_core::spec::Attention::Standard(a) = &kind.attention {
            let width = mul(sym("n_h", a.num_heads), sym("d_h", a.head_dim));
            kind.extras.push(Extra::linear(
                "self_attn.gate_proj.weight",
                "attention gate",
                Category::Attention,
                sym("d", d),
                width,
            ));
        }
    });
    Ok(spec)
}

/// `MuseGlimmerForConditionalGeneration`: the vision tower (a bias-free linear patch
/// embedding of `patch_temporal·3·patch²`, a `pos_emb_height × pos_emb_width` position table,
/// `ln_pre`, `LayerNorm` layers with biased q/k/v/`proj` and `fc1`/`fc2`, `ln_post`), the
/// adapter (`fc1` `out_hidden_size → P`, `fc2` `P → P`) and `vision_projection` `P → d`, all
/// bias-free, the text model; tied by the composite's own `tie_word_embeddings` (default
/// false: `MuseGlimmerConfig` has no such field, and transformers reads it from the config
/// of the class that holds `_tied_weights_keys`, never from `text_config`).
pub(super) fn muse_glimmer(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let spec = text(raw, f, "muse_glimmer_text", head, Tie::Top(false))?;
    let mut p = vision();
    tower_and_adapter(raw, f, "MuseGlimmerVisionConfig", spec.hidden_size, &mut p)?;
    Ok(with_parts(spec, p))
}

/// The Muse vision tower under `vision_config` (read with `class`'s defaults), the adapter
/// and the projection to `d_text`.
fn tower_and_adapter(
    raw: &mut RawConfig<'_>,
    f: &Family,
    class: &'static str,
    d_text: u64,
    p: &mut super::parts::Parts,
) -> Result<(), ConfigError> {
    let one = lit(1);
    with_sub(raw, "vision_config", class, |s| {
        let d = sym("d_vis", s.size("hidden_size", 1536)?);
        let ff = sym("d_ff_vis", s.size("intermediate_size", 8960)?);
        let l = sym("L_vis", s.size("num_hidden_layers", 50)?);
        let ps = s.size("patch_size", 14)?;
        let t = s.size("patch_temporal", 2)?;
        let (gh, gw) = (s.size("pos_emb_height", 32)?, s.size("pos_emb_width", 32)?);
        let grid = s.mul(gh, gw, "pos_emb_height·pos_emb_width")?;
        let pre = "model.vision_tower";
        let part = "vision embeddings";
        let k = s.check(checked::product(
            "patch_temporal·3·patch_size²",
            [t, 3, ps, ps],
        ))?;
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
        encoder_layers(p, (&format!("{pre}.layers"), &MOONVIT_NAMES), &d, &ff, &l);
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
        (pp, sym("d", d_text)),
        false,
        &one,
    );
    Ok(())
}

/// Muse-Spark text (`MuseSparkTextDecoderLayer`): Muse-Glimmer's attention (with an
/// `o_norm` without weights), three weighted norms per layer (`post_attention_layernorm` has
/// none), `head_dim` 64, 16 KV heads; sparse layers route among `num_local_experts` experts
/// of `moe_intermediate_size` working at `moe_hidden_size` (see [`muse_spark_text`]); dense
/// layers a bias-free gated MLP.
const SPARK_TEXT: Block = Block {
    hidden: key_or(&["hidden_size"], 8192),
    layers: key_or(&["num_hidden_layers"], 62),
    heads: key_or(&["num_attention_heads"], 128),
    vocab: key_or(&["vocab_size"], 202_048),
    kv_default: Some(16),
    head_dim: HeadDim::KeyOr(64),
    mlp: MlpRule {
        width: key_or(&["intermediate_size"], 16384),
        ..GLIMMER_TEXT.mlp
    },
    moe: Some(MoeRule {
        experts: key_or(&["num_local_experts"], 256),
        top_k: key_or(&["num_experts_per_tok"], 8),
        expert_width: key_or(&["moe_intermediate_size"], 4096),
        correction_bias: NO,
        expert_bias: NO,
        shared: Shared::None,
        shared_gate: false,
        sparsity: Sparsity {
            dense_list: Some("mlp_only_layers"),
            ..ALL_SPARSE
        },
    }),
    norm: NormRule {
        per_layer: 3,
        ..RMS2
    },
    ..GLIMMER_TEXT
};

/// `muse_spark_text`: [`SPARK_TEXT`] with the dense layers of `mlp_layer_types` (none when
/// absent) and the class's `layer_types`; every layer gains `gate_proj` and two residual
/// gates (`post_attention_residual_gate`, `post_feedforward_residual_gate`: `d` each, in
/// `layer_extras`); a sparse layer's experts work at `m` = `moe_hidden_size` between
/// `pre_expert_proj` `d → m` and `post_expert_proj` `m → d` (bias-free, `ffn`), with an
/// `RMSNorm` of `m` on each side, while its router reads `d`: the MoE block counts a router
/// of `m` inputs, the other `d − m` are a tensor of their own (a config with `m > d` is
/// refused).
pub(super) fn muse_spark_text(
    raw: &mut RawConfig<'_>,
    f: &Family,
    _head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let reason = format!("absent; `{}` default", f.config_class);
    let n = raw.size_or(
        &["num_hidden_layers"],
        llmsize_core::expr::Sym::Layers,
        62,
        &reason,
    )?;
    let dense: Vec<Value> = match raw.value("mlp_layer_types") {
        None => Vec::new(),
        Some(Value::Array(a)) => {
            if a.len() as u64 != n {
                let v = Value::Array(a.clone());
                return Err(raw.invalid("mlp_layer_types", &v, "one entry per layer"));
            }
            let mut out = Vec::new();
            for (i, t) in a.iter().enumerate() {
                match t.as_str() {
                    Some("dense") => out.push(Value::from(i)),
                    Some("sparse") => {}
                    _ => return Err(raw.invalid("mlp_layer_types", t, "`dense` or `sparse`")),
                }
            }
            out
        }
        Some(v) => return Err(raw.invalid("mlp_layer_types", v, "a list of layer kinds")),
    };
    let m_width = raw.size_or(
        &["moe_hidden_size"],
        llmsize_core::expr::Sym::Named("moe_hidden_size"),
        4096,
        &reason,
    )?;
    let mut map = raw.map.clone();
    map.insert("mlp_only_layers".to_owned(), Value::Array(dense));
    let mut inner = raw.sibling(&map);
    let mut spec = with_class_layer_types(&mut inner, f, &SPARK_TEXT, 62)?;
    for a in inner.assumptions {
        if a.field != "mlp_only_layers" {
            raw.assume(&a.field, a.value, &a.reason);
        }
    }
    for (symbol, source) in inner.sources {
        raw.source(symbol, &source);
    }
    let d = spec.hidden_size;
    if m_width > d {
        return Err(not_read(
            raw,
            f.model_type,
            "moe_hidden_size > hidden_size",
            "the MoE block's router is counted at the experts' width",
        ));
    }
    // `m_width ≤ d` (checked above).
    let beyond = lit(d.saturating_sub(m_width));
    map_kinds(&mut spec, |kind| {
        let dd = sym("d", d);
        if let llmsize_core::spec::Attention::Standard(a) = &kind.attention {
            let width = mul(sym("n_h", a.num_heads), sym("d_h", a.head_dim));
            kind.extras.push(Extra::linear(
                "self_attn.gate_proj.weight",
                "attention gate",
                Category::Attention,
                dd.clone(),
                width,
            ));
        }
        kind.extras.push(
            Extra::vector(
                "post_*_residual_gate.gate",
                "residual gates",
                Category::LayerExtras,
                dd.clone(),
            )
            .times(lit(2)),
        );
        if let llmsize_core::spec::Ffn::Moe(moe) = &mut kind.ffn {
            moe.expert.hidden = m_width;
            let m = sym("moe_hidden_size", m_width);
            let e = sym("E", moe.num_experts);
            kind.extras.push(Extra::table(
                "mlp.gate.weight (inputs beyond moe_hidden_size)",
                "router",
                Category::MoeRouter,
                e,
                beyond.clone(),
            ));
            kind.extras.push(Extra::linear(
                "mlp.pre_expert_proj.weight",
                "expert projections",
                Category::Ffn,
                dd.clone(),
                m.clone(),
            ));
            kind.extras.push(Extra::linear(
                "mlp.post_expert_proj.weight",
                "expert projections",
                Category::Ffn,
                m.clone(),
                dd,
            ));
            kind.extras.push(
                Extra::vector(
                    "mlp.{pre_expert_norm,experts.post_expert_norm}.weight",
                    "expert norms",
                    Category::Norm,
                    m,
                )
                .times(lit(2)),
            );
        }
    });
    Ok(spec)
}

/// `MuseSparkAudioModel`: per level `i` a patch embedding (`proj` from the previous width
/// (1 for the first) times `patch_sizes[i]` to `hidden_sizes[i]`, biased, and an `RMSNorm`),
/// then `depths[i]` blocks (a biased depthwise convolution of `conv_kernel_size`, an
/// `RMSNorm`, a biased MLP of `int(h·mlp_ratio)`); a final `RMSNorm`, the biased `proj` to
/// `out_hidden_size` and its `RMSNorm`.
fn spark_audio(raw: &mut RawConfig<'_>, p: &mut super::parts::Parts) -> Result<(), ConfigError> {
    with_sub(raw, "audio_config", "MuseSparkAudioConfig", |s| {
        let patches = s.list("patch_sizes", &[16, 6, 5, 4])?;
        let widths = s.list("hidden_sizes", &[256, 512, 1024, 2048])?;
        let depths = s.list("depths", &[2, 2, 2, 2])?;
        let levels = s.size("num_hidden_layers", 4)?;
        let ratio = s.float("mlp_ratio", 4.0)?;
        let k = s.size("conv_kernel_size", 7)?;
        let out = s.size("out_hidden_size", 8192)?;
        let one = lit(1);
        let mut prev = 1u64;
        for i in 0..usize::try_from(levels).unwrap_or(usize::MAX) {
            let (Some(&h), Some(&ps), Some(&depth)) =
                (widths.get(i), patches.get(i), depths.get(i))
            else {
                let v = Value::from(levels);
                return Err(s.r.raw.invalid(
                    "num_hidden_layers",
                    &v,
                    "at most as many levels as `hidden_sizes`, `patch_sizes` and `depths` hold",
                ));
            };
            #[allow(
                clippy::cast_precision_loss,
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                reason = "Python's `int(hidden_size * mlp_ratio)` of positive sizes"
            )]
            let ff = (h as f64 * ratio).trunc().max(0.0) as u64;
            let pre = format!("model.audio_tower.layers.{i}");
            let part = "audio encoder";
            p.linear(
                format!("{pre}.patch_embedder.proj"),
                part,
                (
                    lit(s.mul(prev, ps, "hidden_sizes[i − 1]·patch_sizes[i]")?),
                    lit(h),
                ),
                true,
                &one,
            );
            p.norm(
                format!("{pre}.patch_embedder.norm"),
                part,
                &lit(h),
                false,
                &one,
            );
            let n = lit(depth);
            let b = format!("{pre}.conv_blocks");
            p.table(format!("{b}.conv.weight"), part, (lit(h), lit(k)), &n);
            p.vector(format!("{b}.conv.bias"), part, lit(h), &n);
            p.norm(format!("{b}.norm"), part, &lit(h), false, &n);
            p.linear(format!("{b}.mlp.fc1"), part, (lit(h), lit(ff)), true, &n);
            p.linear(format!("{b}.mlp.fc2"), part, (lit(ff), lit(h)), true, &n);
            prev = h;
        }
        p.norm(
            "model.audio_tower.norm",
            "audio encoder",
            &lit(prev),
            false,
            &one,
        );
        p.linear(
            "model.audio_tower.proj",
            "audio encoder",
            (lit(prev), lit(out)),
            true,
            &one,
        );
        p.norm(
            "model.audio_tower.post_proj_norm",
            "audio encoder",
            &lit(out),
            false,
            &one,
        );
        Ok(())
    })
}

/// `MuseSparkForConditionalGeneration`: Muse-Glimmer's tower, adapter and projection, the
/// audio encoder, the text model; never tied (the class has no `_tied_weights_keys`).
pub(super) fn muse_spark(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let spec = text(raw, f, "muse_spark_text", head, Tie::Never)?;
    // `AutoModel` builds both towers: only these types are read here.
    let class = match super::parts::sub_type(raw, "vision_config", "muse_spark_vision")? {
        "muse_spark_vision" => "MuseSparkVisionConfig",
        "muse_glimmer_vision" => "MuseGlimmerVisionConfig",
        other => {
            return Err(crate::hf_config::unsupported(
                &format!("{} (vision_config)", raw.file),
                other,
            ));
        }
    };
    let audio = super::parts::sub_type(raw, "audio_config", "muse_spark_audio")?;
    if audio != "muse_spark_audio" {
        return Err(crate::hf_config::unsupported(
            &format!("{} (audio_config)", raw.file),
            audio,
        ));
    }
    let mut p = vision();
    tower_and_adapter(raw, f, class, spec.hidden_size, &mut p)?;
    let mut a = super::parts::Parts::new(Category::Audio);
    spark_audio(raw, &mut a)?;
    p.out.extend(a.out);
    Ok(with_parts(spec, p))
}
