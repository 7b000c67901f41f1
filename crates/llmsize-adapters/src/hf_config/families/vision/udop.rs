//! UDOP (`modeling_udop.py`, `UdopForConditionalGeneration`): T5's encoder-decoder (the same
//! blocks, `UdopStack` after `T5Stack`, read by [`seq2seq::t5`]) with the image as patches and
//! 2D layout positions:
//!
//! - `patch_embed` and the decoder's `embed_patches` (the encoder's is tied to `patch_embed`):
//!   a biased `Conv2d(c, d, patch)` each (`vision`);
//! - the encoder's `cell_2d_embedding`: `x_` and `y_position_embeddings` of
//!   `max_2d_position_embeddings × d` (`position_embedding`);
//! - each stack's `relative_bias`: one `RelativePositionBias…` per `relative_bias_args` entry,
//!   `(relative_attention_num_buckets of the entry, default 32, + 2 with prefix_bucket unless
//!   expand) × heads` (`position_embedding`); `_tied_weights_keys` replaces both stacks'
//!   first entry by the encoder's block-0 relative bias, whatever its shape.
//!
//! The MLP is gated by `is_gated_act` when the config saves it (else `feed_forward_proj`).
//! The shared table, the stacks' `embed_tokens` and the LM head follow T5 (the head is tied
//! unless `tie_word_embeddings` is false).

use llmsize_core::Category;
use llmsize_core::spec::{Extra, Ffn, Layers, ModelSpec};
use serde_json::Value;

use super::parts::{lit, sym, with_top};
use crate::error::ConfigError;
use crate::hf_config::HeadChoice;
use crate::hf_config::family::Family;
use crate::hf_config::raw::RawConfig;
use crate::hf_config::seq2seq;

/// The embedding rows of one `relative_bias_args` entry.
fn bias_rows(raw: &RawConfig<'_>, entry: &Value) -> Result<u64, ConfigError> {
    let key = "relative_bias_args";
    let bad = || {
        raw.invalid(
            key,
            entry,
            "objects with a `type` of 1d, horizontal or vertical",
        )
    };
    let m = entry.as_object().ok_or_else(bad)?;
    match m.get("type").and_then(Value::as_str) {
        Some("1d" | "horizontal" | "vertical") => {}
        _ => return Err(bad()),
    }
    let flag = |k: &str| m.get(k).and_then(Value::as_bool).unwrap_or(false);
    let buckets = match m.get("relative_attention_num_buckets") {
        None => 32,
        Some(v) => v.as_u64().ok_or_else(bad)?,
    };
    let extra = if flag("prefix_bucket") && !flag("expand") {
        2
    } else {
        0
    };
    raw.check(llmsize_core::checked::add(
        "relative_attention_num_buckets + 2 (prefix bucket)",
        buckets,
        extra,
    ))
}

/// `UdopForConditionalGeneration`.
pub(crate) fn udop(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let mut spec = seq2seq::t5(raw, head)?;
    f.model_type.clone_into(&mut spec.model_type);
    // A saved `is_gated_act` is set after `__post_init__` derives it from `feed_forward_proj`.
    if let Some(gated) = raw.flag("is_gated_act")? {
        for stack in &mut spec.stacks {
            let mut layers = Layers::new();
            for run in stack.layers.runs() {
                if let Some(kind) = stack.layers.kinds().get(run.kind) {
                    let mut l = kind.clone();
                    if let Ffn::Dense(m) = &mut l.ffn {
                        m.gated = gated;
                    }
                    layers.push_run(l, run.count);
                }
            }
            stack.layers = layers;
        }
    }
    let d = spec.hidden_size;
    let heads = raw.size(
        &["num_attention_heads", "num_heads"],
        llmsize_core::expr::Sym::Heads,
    )?;
    let (max_2d, channels, image_patch) = with_top(raw, f.config_class, |s| {
        Ok((
            s.size("max_2d_position_embeddings", 1024)?,
            s.size("num_channels", 3)?,
            s.size("patch_size", 16)?,
        ))
    })?;
    let rows: Vec<u64> = match raw.value("relative_bias_args") {
        None | Some(Value::Null) => {
            raw.assume(
                "relative_bias_args",
                "1d, horizontal, vertical",
                "absent; `UdopConfig` default",
            );
            vec![32, 32, 32]
        }
        Some(v @ Value::Array(a)) => {
            if a.is_empty() {
                // Tying the first entry to the block-0 bias fails without one.
                return Err(raw.invalid("relative_bias_args", v, "at least one relative bias"));
            }
            a.iter()
                .map(|e| bias_rows(raw, e))
                .collect::<Result<_, _>>()?
        }
        Some(v) => return Err(raw.invalid("relative_bias_args", v, "a list of relative biases")),
    };
    let dm = sym("d", d);
    let h = sym("n_heads", heads);
    let pos = Category::PositionEmbedding;
    for axis in ["x", "y"] {
        spec.extras.push(Extra::table(
            format!("encoder.cell_2d_embedding.{axis}_position_embeddings.weight"),
            "2D positions",
            pos,
            sym("max_2d", max_2d),
            dm.clone(),
        ));
    }
    for stack in ["encoder", "decoder"] {
        for (i, r) in rows.iter().enumerate().skip(1) {
            spec.extras.push(Extra::table(
                format!("{stack}.relative_bias.biases.{i}.relative_attention_bias.weight"),
                "relative position bias",
                pos,
                lit(*r),
                h.clone(),
            ));
        }
    }
    let kernel = raw.mul(image_patch, image_patch, "image_size (patch)²")?;
    for name in ["patch_embed.proj", "decoder.embed_patches.proj"] {
        spec.extras.push(Extra::linear(
            format!("{name}.weight"),
            "patch embedding",
            Category::Vision,
            llmsize_core::expr::Expr::product(vec![lit(channels), lit(kernel)]),
            dm.clone(),
        ));
        spec.extras.push(Extra::vector(
            format!("{name}.bias"),
            "patch embedding",
            Category::Vision,
            dm.clone(),
        ));
    }
    Ok(spec)
}
