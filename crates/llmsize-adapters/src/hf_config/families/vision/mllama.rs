//! Llama 3.2 Vision (`modeling_mllama.py`): a text model of Llama layers with gated
//! cross-attention layers at `cross_attention_layers` (which cache nothing in a text-only
//! prefill), and a tiled vision model (two encoders, the second gated, with tile and
//! aspect-ratio embeddings). `MllamaForCausalLM` is the text model alone; neither class
//! ties its head.

use llmsize_core::Category;
use llmsize_core::expr::{Expr, Sym};
use llmsize_core::spec::{Attention, Extra, Ffn, Layer, ModelSpec, Norm, Table};

use super::parts::{Parts, Sub, lit, mul, sym, with_sub};
use super::vision;
use super::vit::{VitLayer, layers};
use crate::error::ConfigError;
use crate::hf_config::HeadChoice;
use crate::hf_config::architecture;
use crate::hf_config::decoder::{Decoder, mha, mlp};
use crate::hf_config::family::{Family, index_list};
use crate::hf_config::raw::RawConfig;
use crate::hf_config::runs::Runs;
use llmsize_core::checked::{self, Checked};

/// `MllamaTextModel` with an untied `lm_head`: `embed_tokens` has `vocab_size + 8` rows.
fn text_model(s: &mut Sub<'_, '_>, arch: String) -> Result<ModelSpec, ConfigError> {
    let vocab = s.size("vocab_size", 128_256)?;
    let hidden = s.size("hidden_size", 4096)?;
    let n = s.count("num_hidden_layers", 40)?;
    let heads = s.size("num_attention_heads", 32)?;
    let kv = s.size("num_key_value_heads", 8)?;
    let ffn = s.size("intermediate_size", 14_336)?;
    s.r.raw.source(Sym::Hidden, "hidden_size");
    s.r.raw.source(Sym::Vocab, "vocab_size");
    let head_dim =
        s.r.raw
            .derived_head_dim(hidden, "hidden_size", heads, "num_attention_heads")?;
    let cross: Vec<u64> = if s.r.raw.value("cross_attention_layers").is_some() {
        index_list(s.r.raw, "cross_attention_layers", n)?
    } else {
        let d = [3, 8, 13, 18, 23, 28, 33, 38];
        s.r.raw.assume(
            "cross_attention_layers",
            format!("{d:?}"),
            "absent; `MllamaTextConfig` default",
        );
        // transformers would index past the layers; only those that exist count.
        d.into_iter().filter(|i| *i < n).collect()
    };
    let dense = mlp(hidden, ffn, true, false);
    let norm = Norm::rms_norm(hidden);
    let (d, q, k) = (
        Expr::sym(Sym::Hidden, hidden),
        mul(lit(heads), lit(head_dim)),
        mul(lit(kv), lit(head_dim)),
    );
    let stack = Runs::marked(n, cross, &true, &false).layers(|&is_cross| {
        if is_cross {
            let part = "cross-attention";
            let a = Category::Attention;
            let hd = lit(head_dim);
            Layer {
                attention: Attention::Absent,
                cross_attention: None,
                ffn: Ffn::Dense(dense),
                norms: vec![norm; 2],
                sliding_window: None,
                extras: vec![
                    Extra::linear("cross_attn.q_proj.weight", part, a, d.clone(), q.clone()),
                    Extra::linear("cross_attn.k_proj.weight", part, a, d.clone(), k.clone()),
                    Extra::linear("cross_attn.v_proj.weight", part, a, d.clone(), k.clone()),
                    Extra::linear("cross_attn.o_proj.weight", part, a, q.clone(), d.clone()),
                    Extra::vector("cross_attn.q_norm.weight", part, a, hd.clone()),
                    Extra::vector("cross_attn.k_norm.weight", part, a, hd),
                    // A part holds one category: the gates have their own.
                    Extra::vector("cross_attn_attn_gate", part, a, lit(1)),
                    Extra::vector("cross_attn_mlp_gate", "mlp gate", Category::Ffn, lit(1)),
                ],
                state: None,
            }
        } else {
            Layer {
                attention: Attention::Standard(mha(hidden, heads, kv, head_dim, false)),
                cross_attention: None,
                ffn: Ffn::Dense(dense),
                norms: vec![norm; 2],
                sliding_window: None,
                extras: Vec::new(),
                state: None,
            }
        }
    });
    let mut spec =
        Decoder::new("mllama", arch, hidden, vocab, stack, Some(norm), false).into_spec();
    spec.token_embedding = Some(Table {
        rows: s.check(checked::add("vocab_size + 8", vocab, 8))?,
        dim: hidden,
    });
    Ok(spec)
}

/// `MllamaVisionModel`; returns `vision_output_dim`.
fn vision_model(s: &mut Sub<'_, '_>, p: &mut Parts) -> Result<u64, ConfigError> {
    let hidden = s.size("hidden_size", 1280)?;
    let n = s.count("num_hidden_layers", 32)?;
    let global = s.count("num_global_layers", 8)?;
    let channels = s.size("num_channels", 3)?;
    let ffn = s.size("intermediate_size", 5120)?;
    let out = s.size("vision_output_dim", 7680)?;
    let image = s.size("image_size", 448)?;
    let patch = s.size("patch_size", 14)?;
    let tiles = s.size("max_num_tiles", 4)?;
    let ratios = match s.r.raw.value("supported_aspect_ratios") {
        Some(serde_json::Value::Array(a)) => a.len() as u64,
        Some(v) => {
            return Err(s.r.raw.invalid(
                "supported_aspect_ratios",
                v,
                "a list of [rows, columns] pairs",
            ));
        }
        None => {
            s.r.raw.assume(
                "supported_aspect_ratios",
                "8 ratios",
                "absent; `MllamaVisionConfig` default",
            );
            8
        }
    };
    let side = s.check(checked::div("image_size / patch_size", image, patch))?;
    let patches =
        s.check((Checked::new(side) * side + 1u64).get("(image_size / patch_size)² + 1"))?;
    let ratios = s.check(checked::add("len(supported_aspect_ratios) + 1", ratios, 1))?;
    let d = sym("d_vis", hidden);
    let one = lit(1);
    let pre = "model.vision_model";
    let part = "vision embeddings";
    p.conv(
        format!("{pre}.patch_embedding"),
        part,
        (
            lit(channels),
            lit(s.mul(patch, patch, "patch_size²")?),
            d.clone(),
        ),
        false,
        &one,
    );
    p.vector(format!("{pre}.class_embedding"), part, d.clone(), &one);
    let g = format!("{pre}.gated_positional_embedding");
    p.vector(format!("{g}.gate"), part, lit(1), &one);
    p.table(
        format!("{g}.embedding"),
        part,
        (lit(patches), d.clone()),
        &one,
    );
    p.table(
        format!("{g}.tile_embedding"),
        part,
        (
            lit(ratios),
            Expr::product(vec![lit(tiles), lit(patches), d.clone()]),
        ),
        &one,
    );
    for t in [
        "pre_tile_positional_embedding",
        "post_tile_positional_embedding",
    ] {
        p.table(
            format!("{pre}.{t}.embedding"),
            part,
            (lit(ratios), mul(lit(tiles), d.clone())),
            &one,
        );
        p.vector(format!("{pre}.{t}.gate"), part, lit(1), &one);
    }
    p.norm(
        format!("{pre}.layernorm_pre"),
        "vision norms",
        &d,
        true,
        &one,
    );
    p.norm(
        format!("{pre}.layernorm_post"),
        "vision norms",
        &d,
        true,
        &one,
    );
    let layer = VitLayer {
        qkv_bias: false,
        o_bias: false,
        ..VitLayer::clip(d.clone(), sym("d_ff_vis", ffn))
    };
    layers(
        p,
        &format!("{pre}.transformer.layers"),
        &sym("L_vis", n),
        &layer,
    );
    let lg = sym("L_global", global);
    layers(p, &format!("{pre}.global_transformer.layers"), &lg, &layer);
    p.vector(
        format!("{pre}.global_transformer.layers.gate_attn"),
        part,
        lit(1),
        &lg,
    );
    p.vector(
        format!("{pre}.global_transformer.layers.gate_ffn"),
        part,
        lit(1),
        &lg,
    );
    Ok(out)
}

/// `MllamaForConditionalGeneration`, or `MllamaForCausalLM` when `architectures` names it.
pub(crate) fn mllama(
    raw: &mut RawConfig<'_>,
    f: &Family,
    _head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let arch = architecture(raw, f.architecture);
    let mut spec = with_sub(raw, "text_config", "MllamaTextConfig", |s| {
        text_model(s, arch.clone())
    })?;
    if arch.ends_with("ForCausalLM") {
        return Ok(spec);
    }
    let mut p = vision();
    let out = with_sub(raw, "vision_config", "MllamaVisionConfig", |s| {
        vision_model(s, &mut p)
    })?;
    p.linear(
        "model.multi_modal_projector",
        "multimodal projector",
        (sym("vision_output_dim", out), sym("d", spec.hidden_size)),
        true,
        &lit(1),
    );
    spec.extras.extend(p.out);
    Ok(spec)
}
