//! dots.llm3 (`modeling_dots3_note.py`, `Dots3NoteForConditionalGeneration`): a native-
//! resolution vision tower whose later blocks are mixtures of experts (a "pyramid" of expert
//! counts), a Whisper-style audio encoder with a convolution stem, and the `dots3_note_text`
//! model. `Dots3NoteForCausalLM` named in `architectures` is the text model alone.

use llmsize_core::Category;
use llmsize_core::spec::ModelSpec;
use serde_json::{Map, Value};

use super::parts::{Parts, Sub, lit, mul, sym};
use super::{vision, with_parts, with_sub_or_default};
use crate::error::ConfigError;
use crate::hf_config::families::experts::{per_layer_overrides, read_dots3_note_text};
use crate::hf_config::families::vision::{Tie, text};
use crate::hf_config::family::Family;
use crate::hf_config::raw::RawConfig;
use crate::hf_config::{HeadChoice, architecture};
use llmsize_core::checked;

/// A size under any of `keys` (aliases a `__post_init__` pops), else `default`.
fn size_alias(
    s: &mut Sub<'_, '_>,
    keys: &[&'static str],
    default: u64,
) -> Result<u64, ConfigError> {
    for k in keys {
        if let Some(v) = s.size_opt(k)? {
            return Ok(v);
        }
    }
    let first = keys.first().copied().unwrap_or_default();
    s.size(first, default)
}

/// The vision tower (`Dots3NoteVisionModel`): a patch convolution (`num_channels·p² → d`,
/// biased) and its `RMSNorm`; blocks of `RMSNorm`, attention (`qkv` `d → 3d` and `proj`,
/// biased by `attention_bias`, per-head q/k `RMSNorm`s), `RMSNorm` and an MLP: dense (`d →
/// intermediate_size`, gated, biased by `mlp_bias`) or, on `sparse` layers, the layer's
/// `num_local_experts` gated experts of `moe_intermediate_size` and a router `d → E`. Layer
/// kinds and expert counts: `pyramid_num_routed` (a count per layer, dense at ≤ 0), else
/// `mlp_layer_types` with `per_layer_config`, else the default pyramid (25 dense layers,
/// then 4, 8, …, 64 experts, then 64). Then a final `RMSNorm` and the merger (`LayerNorm` of
/// `adapter_in_dim`, `m²·adapter_in_dim` → itself → `adapter_out_dim`, biased).
#[allow(
    clippy::too_many_lines,
    reason = "one list of the tensors `Dots3NoteVisionModel` builds"
)]
fn vision_tower(s: &mut Sub<'_, '_>, p: &mut Parts) -> Result<(), ConfigError> {
    let d = size_alias(s, &["hidden_size", "embed_dim"], 1536)?;
    let n = s.size("num_hidden_layers", 42)?;
    let count = s.r.raw.layer_count("num_hidden_layers", n)?;
    let heads = size_alias(s, &["num_attention_heads", "num_heads"], 24)?;
    if !d.is_multiple_of(heads) {
        return Err(s.r.raw.invalid(
            "num_attention_heads",
            &heads.into(),
            &format!("a divisor of `hidden_size` ({d})"),
        ));
    }
    let channels = s.size("num_channels", 3)?;
    let patch = s.size("patch_size", 14)?;
    let ffn = s.size("intermediate_size", 4224)?;
    let expert_ffn = s.size("moe_intermediate_size", 2112)?;
    let experts = s.size("num_local_experts", 64)?;
    let attn_bias = match s.r.raw.flag("attention_bias")? {
        Some(b) => b,
        None => s.flag("use_bias", false)?,
    };
    let mlp_bias = s.flag("mlp_bias", false)?;
    let in_dim = s.size("adapter_in_dim", 1536)?;
    let out_dim = s.size("adapter_out_dim", 5120)?;
    let merge = s.size("adapter_merge_size", 2)?;
    // Layer kinds and per-layer overrides.
    let pyramid: Option<Vec<i64>> = match s.r.raw.value("pyramid_num_routed") {
        Some(Value::Array(list)) => Some(
            list.iter()
                .map(|x| {
                    x.as_i64().ok_or_else(|| {
                        s.r.raw
                            .invalid("pyramid_num_routed", x, "an expert count per layer")
                    })
                })
                .collect::<Result<_, _>>()?,
        ),
        Some(Value::Null) | None => {
            if s.r
                .raw
                .value("mlp_layer_types")
                .is_some_and(|v| !v.is_null())
            {
                None
            } else {
                s.r.raw.assume(
                    "pyramid_num_routed",
                    "[-1]*25 + [4, 8, …, 64] + [64]",
                    "absent; `Dots3NoteVisionConfig` default",
                );
                Some(
                    std::iter::repeat_n(-1, 25)
                        .chain((4..65).step_by(4))
                        .chain([64])
                        .collect(),
                )
            }
        }
        Some(v) => {
            return Err(s
                .r
                .raw
                .invalid("pyramid_num_routed", v, "an expert count per layer"));
        }
    };
    let given = per_layer_overrides(s.r.raw, count)?;
    // (sparse, experts, expert width, dense width) per layer.
    let mut layers: Vec<(bool, u64, u64, u64)> = Vec::with_capacity(count);
    let list_len = match (&pyramid, s.r.raw.value("mlp_layer_types")) {
        (Some(p), _) => p.len(),
        (None, Some(Value::Array(l))) => l.len(),
        (None, v) => {
            return Err(s.r.raw.invalid(
                "mlp_layer_types",
                v.unwrap_or(&Value::Null),
                "a list of `dense`/`sparse`",
            ));
        }
    };
    if list_len != count {
        return Err(s.r.raw.invalid(
            if pyramid.is_some() {
                "pyramid_num_routed"
            } else {
                "mlp_layer_types"
            },
            &Value::from(list_len),
            &format!("one entry per layer ({n})"),
        ));
    }
    for i in 0..count {
        let o: Option<&Map<String, Value>> =
            given.as_ref().and_then(|g| g.get(i).copied().flatten());
        let get = |key: &str, g: u64| -> Result<u64, ConfigError> {
            match o.and_then(|m| m.get(key)) {
                None => Ok(g),
                Some(v) => v.as_u64().filter(|x| *x > 0).ok_or_else(|| {
                    s.r.raw.invalid(
                        &format!("per_layer_config.{i}.{key}"),
                        v,
                        "a positive integer",
                    )
                }),
            }
        };
        let (sparse, e) = if let Some(p) = &pyramid {
            let c = p.get(i).copied().unwrap_or(-1);
            // `per_layer_config` defaults to the pyramid's counts.
            let e = if given.is_some() {
                get("num_local_experts", experts)?
            } else {
                c.unsigned_abs()
            };
            (c > 0, e)
        } else {
            let t = match s.r.raw.value("mlp_layer_types") {
                Some(Value::Array(l)) => l.get(i).and_then(Value::as_str),
                _ => None,
            };
            let sparse = match t {
                Some("sparse") => true,
                Some("dense") => false,
                _ => {
                    return Err(s.r.raw.invalid(
                        "mlp_layer_types",
                        &Value::from(t.unwrap_or_default()),
                        "`dense` or `sparse`",
                    ));
                }
            };
            (sparse, get("num_local_experts", experts)?)
        };
        layers.push((
            sparse,
            e,
            get("moe_intermediate_size", expert_ffn)?,
            get("intermediate_size", ffn)?,
        ));
    }
    let dv = || sym("d_vis", d);
    let one = lit(1);
    p.conv(
        "vision_tower.patch_embed.proj",
        "vision patch embedding",
        (
            sym("num_channels", channels),
            mul(sym("p", patch), sym("p", patch)),
            dv(),
        ),
        true,
        &one,
    );
    p.norm(
        "vision_tower.patch_embed.norm",
        "vision patch embedding",
        &dv(),
        false,
        &one,
    );
    let all = sym("L_vis", n);
    let hd = sym(
        "d_head_vis",
        s.check(checked::div("hidden_size / num_attention_heads", d, heads))?,
    );
    p.norm(
        "vision_tower.blocks.norm1",
        "vision blocks",
        &dv(),
        false,
        &all,
    );
    p.linear(
        "vision_tower.blocks.attn.qkv",
        "vision blocks",
        (dv(), mul(lit(3), dv())),
        attn_bias,
        &all,
    );
    p.linear(
        "vision_tower.blocks.attn.proj",
        "vision blocks",
        (dv(), dv()),
        attn_bias,
        &all,
    );
    p.norm(
        "vision_tower.blocks.attn.q_norm",
        "vision blocks",
        &hd,
        false,
        &all,
    );
    p.norm(
        "vision_tower.blocks.attn.k_norm",
        "vision blocks",
        &hd,
        false,
        &all,
    );
    p.norm(
        "vision_tower.blocks.norm2",
        "vision blocks",
        &dv(),
        false,
        &all,
    );
    // Each distinct MLP once (in order of first use), times the layers that have it.
    let mut kinds: Vec<((bool, u64, u64, u64), u64)> = Vec::new();
    let mut index: std::collections::HashMap<(bool, u64, u64, u64), usize> =
        std::collections::HashMap::new();
    for l in &layers {
        let l = if l.0 {
            (true, l.1, l.2, 0)
        } else {
            (false, 0, 0, l.3)
        };
        let i = *index.entry(l).or_insert_with(|| {
            kinds.push((l, 0));
            kinds.len().saturating_sub(1)
        });
        if let Some((_, c)) = kinds.get_mut(i) {
            // At most the layers, one per layer.
            // saturates: never, at most the layers, one per layer.
            *c = c.saturating_add(1);
        }
    }
    for ((sparse, e, w, f), c) in kinds {
        let copies = sym("L_vis", c);
        if sparse {
            let ec = mul(copies.clone(), sym("E_vis", e));
            let wf = || sym("d_ff_exp_vis", w);
            p.linear(
                "vision_tower.blocks.mlp.experts.gate_up_proj",
                "vision experts",
                (dv(), mul(lit(2), wf())),
                false,
                &ec,
            );
            p.linear(
                "vision_tower.blocks.mlp.experts.down_proj",
                "vision experts",
                (wf(), dv()),
                false,
                &ec,
            );
            p.linear(
                "vision_tower.blocks.mlp.gate",
                "vision experts",
                (dv(), sym("E_vis", e)),
                false,
                &copies,
            );
        } else {
            let ff = || sym("d_ff_vis", f);
            for name in ["gate_proj", "up_proj"] {
                p.linear(
                    format!("vision_tower.blocks.mlp.{name}"),
                    "vision blocks",
                    (dv(), ff()),
                    mlp_bias,
                    &copies,
                );
            }
            p.linear(
                "vision_tower.blocks.mlp.down_proj",
                "vision blocks",
                (ff(), dv()),
                mlp_bias,
                &copies,
            );
        }
    }
    p.norm("vision_tower.norm", "vision blocks", &dv(), false, &one);
    let wide = mul(
        sym("adapter_in_dim", in_dim),
        mul(sym("m", merge), sym("m", merge)),
    );
    p.norm(
        "vision_tower.merger.ln_q",
        "vision merger",
        &sym("adapter_in_dim", in_dim),
        true,
        &one,
    );
    p.linear(
        "vision_tower.merger.mlp.0",
        "vision merger",
        (wide.clone(), wide.clone()),
        true,
        &one,
    );
    p.linear(
        "vision_tower.merger.mlp.2",
        "vision merger",
        (wide, sym("d", out_dim)),
        true,
        &one,
    );
    Ok(())
}

/// The audio encoder (`Dots3NoteAudioModel`): three 3×3 stride-2 convolutions (`1 → c`,
/// `c → c`, `c → c`, biased; `c` = `downsample_hidden_size`), `conv_out` (`c·⌈feature_size/8⌉
/// → d`), layers of `RMSNorm`, attention (q, v, o `d → d` biased by `attention_bias`, k `d →
/// d` without bias), `RMSNorm` and an MLP (`gate_up_proj` `d → 2f`, `down_proj`, biased), a
/// final `RMSNorm`, and the adapter (`LayerNorm`, `fc1` `adapter_input_size →
/// adapter_out_dim`, `fc2` square, biased). Sizes may come from the legacy `whisper_config`.
fn audio_tower(s: &mut Sub<'_, '_>, p: &mut Parts) -> Result<(), ConfigError> {
    let legacy =
        s.r.raw
            .value("whisper_config")
            .and_then(Value::as_object)
            .cloned();
    let from_legacy = |s: &mut Sub<'_, '_>,
                       old: &str,
                       key: &'static str,
                       default: u64|
     -> Result<u64, ConfigError> {
        if let Some(v) = legacy.as_ref().and_then(|m| m.get(old)) {
            return v.as_u64().filter(|x| *x > 0).ok_or_else(|| {
                s.r.raw
                    .invalid(&format!("whisper_config.{old}"), v, "a positive integer")
            });
        }
        s.size(key, default)
    };
    let d = from_legacy(s, "d_model", "hidden_size", 1280)?;
    let heads = from_legacy(s, "encoder_attention_heads", "num_attention_heads", 20)?;
    let n = from_legacy(s, "encoder_layers", "num_hidden_layers", 32)?;
    s.r.raw.layer_count("num_hidden_layers", n)?;
    let f = from_legacy(s, "encoder_ffn_dim", "intermediate_size", 5120)?;
    let mels = from_legacy(s, "num_mel_bins", "feature_size", 128)?;
    if !d.is_multiple_of(heads) {
        return Err(s.r.raw.invalid(
            "num_attention_heads",
            &heads.into(),
            &format!("a divisor of `hidden_size` ({d})"),
        ));
    }
    let bias = s.flag("attention_bias", true)?;
    let c = s.size("downsample_hidden_size", 480)?;
    let adapter_in = size_alias(s, &["whisper_adapter_in_dim", "adapter_input_size"], 1280)?;
    let adapter_out = size_alias(
        s,
        &[
            "whisper_adapter_out_dim",
            "adapter_output_size",
            "adapter_out_dim",
        ],
        5120,
    )?;
    let one = lit(1);
    let da = || sym("d_audio", d);
    let k = || lit(9);
    let cc = || sym("downsample_hidden_size", c);
    p.conv(
        "audio_tower.conv_stem.convs.0",
        "audio stem",
        (lit(1), k(), cc()),
        true,
        &one,
    );
    p.conv(
        "audio_tower.conv_stem.convs.1",
        "audio stem",
        (cc(), k(), cc()),
        true,
        &lit(2),
    );
    p.linear(
        "audio_tower.conv_stem.conv_out",
        "audio stem",
        (mul(cc(), sym("mel_bins/8", mels.div_ceil(8))), da()),
        false,
        &one,
    );
    let all = sym("L_audio", n);
    p.norm(
        "audio_tower.layers.input_layernorm",
        "audio layers",
        &da(),
        false,
        &all,
    );
    p.linear(
        "audio_tower.layers.self_attn.q_proj",
        "audio layers",
        (da(), da()),
        bias,
        &all,
    );
    p.linear(
        "audio_tower.layers.self_attn.k_proj",
        "audio layers",
        (da(), da()),
        false,
        &all,
    );
    p.linear(
        "audio_tower.layers.self_attn.v_proj",
        "audio layers",
        (da(), da()),
        bias,
        &all,
    );
    p.linear(
        "audio_tower.layers.self_attn.o_proj",
        "audio layers",
        (da(), da()),
        bias,
        &all,
    );
    p.norm(
        "audio_tower.layers.post_attention_layernorm",
        "audio layers",
        &da(),
        false,
        &all,
    );
    let ff = || sym("d_ff_audio", f);
    p.linear(
        "audio_tower.layers.mlp.gate_up_proj",
        "audio layers",
        (da(), mul(lit(2), ff())),
        true,
        &all,
    );
    p.linear(
        "audio_tower.layers.mlp.down_proj",
        "audio layers",
        (ff(), da()),
        true,
        &all,
    );
    p.norm("audio_tower.layer_norm", "audio layers", &da(), false, &one);
    let ai = || sym("adapter_input_size", adapter_in);
    let ao = || sym("d", adapter_out);
    p.norm(
        "audio_tower.adapter.norm",
        "audio adapter",
        &ai(),
        true,
        &one,
    );
    p.linear(
        "audio_tower.adapter.fc1",
        "audio adapter",
        (ai(), ao()),
        true,
        &one,
    );
    p.linear(
        "audio_tower.adapter.fc2",
        "audio adapter",
        (ao(), ao()),
        true,
        &one,
    );
    Ok(())
}

/// `Dots3NoteForConditionalGeneration` (the text model of `text_config`, or of the top level
/// when a published checkpoint keeps it there; tied by the top-level `tie_word_embeddings`,
/// default false), the vision tower and the audio encoder; or `Dots3NoteForCausalLM`, the
/// text model alone.
pub(super) fn dots3_note(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let causal = architecture(raw, f.architecture).ends_with("ForCausalLM");
    let nested = raw.value("text_config").is_some_and(|v| !v.is_null());
    let spec = if nested {
        text(
            raw,
            f,
            "dots3_note_text",
            head,
            if causal { Tie::Text } else { Tie::Top(false) },
        )?
    } else {
        let mut spec = read_dots3_note_text(raw, f, head)?;
        f.model_type.clone_into(&mut spec.model_type);
        spec
    };
    if causal {
        return Ok(spec);
    }
    let mut p = vision();
    with_sub_or_default(raw, "vision_config", "Dots3NoteVisionConfig", |s| {
        vision_tower(s, &mut p)
    })?;
    let mut a = Parts::new(Category::Audio);
    with_sub_or_default(raw, "audio_config", "Dots3NoteAudioConfig", |s| {
        audio_tower(s, &mut a)
    })?;
    let mut spec = with_parts(spec, p);
    spec.extras.extend(a.out);
    Ok(spec)
}
