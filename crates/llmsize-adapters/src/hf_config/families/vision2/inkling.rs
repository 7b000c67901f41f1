//! Inkling (`modeling_inkling.py`, `InklingForConditionalGeneration`): an MLP vision encoder
//! that folds time and space into channels layer by layer (`plan_out_scales`), an audio
//! table of quantized mel bins, and the `inkling_text` model.

use llmsize_core::Category;
use llmsize_core::spec::ModelSpec;

use super::parts::{Parts, lit, sym, with_sub};
use super::{scaled_vit_layers, vision, with_parts};
use crate::error::ConfigError;
use crate::hf_config::HeadChoice;
use crate::hf_config::families::vision::{Tie, not_read, text};
use crate::hf_config::family::Family;
use crate::hf_config::raw::RawConfig;

/// The prime factors of `n`, smallest first (`prime_factors`).
fn prime_factors(mut n: u64) -> Vec<u64> {
    let mut out = Vec::new();
    while n > 1 && n.is_multiple_of(2) {
        out.push(2);
        n /= 2;
    }
    let mut p: u64 = 3;
    while p.saturating_mul(p) <= n {
        while n.is_multiple_of(p) {
            out.push(p);
            n /= p;
        }
        p += 2;
    }
    if n > 1 {
        out.push(n);
    }
    out
}

/// `torch.linspace(0, end, steps)` in `float32`, as its CPU kernel computes it (from the start
/// for the first half, from the end for the second).
#[allow(
    clippy::cast_precision_loss,
    reason = "float32 arithmetic, as torch computes it; the step counts are small"
)]
fn linspace(end: f32, steps: usize) -> Vec<f32> {
    if steps <= 1 {
        return vec![0.0; steps];
    }
    let step = end / (steps - 1) as f32;
    let half = steps / 2;
    (0..steps)
        .map(|i| {
            if i < half {
                step * i as f32
            } else {
                end - step * (steps - 1 - i) as f32
            }
        })
        .collect()
}

/// One scale of the encoder: `(t, h, w, channels)`.
type Scale = [u64; 4];

/// `plan_out_scales(temporal_patch_size, patch_size, n_layers, n_channels)` for `n_layers` at
/// least the number of candidate scales (each layer's nearest scale in log size; the first and
/// last fixed); `None` when transformers would need `scipy`'s assignment (fewer layers) or
/// cannot build it (a patch or temporal patch of 1).
#[allow(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "float32 arithmetic on small positive integers, as torch computes it"
)]
fn plan_out_scales(t_patch: u64, patch: u64, n_layers: u64, channels: u64) -> Option<Vec<Scale>> {
    let cum = |f: Vec<u64>| -> Vec<u64> {
        let mut acc = 1u64;
        f.iter()
            .rev()
            .map(|x| {
                acc = acc.saturating_mul(*x);
                acc
            })
            .collect()
    };
    let h = cum(prime_factors(patch));
    let t = cum(prime_factors(t_patch));
    let h_last = *h.last()?;
    // A temporal patch of 1 has no factors: torch then builds the scales as floats and the
    // projections cannot be made.
    if t.is_empty() {
        return None;
    }
    let mut scales: Vec<Scale> = vec![[1, 1, 1, channels]];
    for &x in &h {
        let ch = (x.saturating_mul(x).saturating_mul(channels) as f64 / 64.0).ceil() as u64;
        scales.push([1, x, x, ch.saturating_mul(64)]);
    }
    for &x in &t {
        let ch = h_last
            .saturating_mul(h_last)
            .saturating_mul(channels)
            .saturating_mul(x)
            .saturating_mul(64);
        scales.push([x, h_last, h_last, ch]);
    }
    if n_layers < scales.len() as u64 {
        return None;
    }
    let total = patch
        .saturating_mul(patch)
        .saturating_mul(t_patch)
        .saturating_mul(channels);
    let ideal = linspace(
        (total as f32).ln(),
        usize::try_from(n_layers).ok()?.checked_add(1)?,
    );
    let logs: Vec<f32> = scales
        .iter()
        .map(|s| (s[0].saturating_mul(s[1]).saturating_mul(s[2]) as f32).ln())
        .collect();
    let last = scales.len() - 1;
    let n = ideal.len();
    ideal
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let j = if i == 0 {
                0
            } else if i + 1 == n {
                last
            } else {
                let mut best = 0;
                let mut cost = f32::INFINITY;
                for (j, b) in logs.iter().enumerate() {
                    let c = (a - b).abs();
                    if c < cost {
                        cost = c;
                        best = j;
                    }
                }
                best
            };
            scales.get(j).copied()
        })
        .collect()
}

/// `InklingForConditionalGeneration`: the text model (never tied), the audio tower
/// (`embed_audio_tokens` of `n_mel_bins·mel_vocab_size × d`, an `RMSNorm`) and the vision
/// encoder: per layer a bias-free projection from the previous scale's channels times the
/// folded `t·h·w` to the next scale's (to `d` for the last), an `RMSNorm` after every layer
/// but the last, and a final `RMSNorm` (`d` is the text width, as `InklingConfig` sets it).
pub(super) fn inkling_mm_model(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let spec = text(raw, f, "inkling_text", head, Tie::Text)?;
    let d = sym("d", spec.hidden_size);
    let one = lit(1);
    let (bins, vocab) = with_sub(raw, "audio_config", "InklingAudioConfig", |s| {
        Ok((s.size("n_mel_bins", 80)?, s.size("mel_vocab_size", 256)?))
    })?;
    let mut a = Parts::new(Category::Audio);
    a.table(
        "model.audio_tower.embed_audio_tokens.embed_audio_tokens",
        "audio embeddings",
        (lit(bins.saturating_mul(vocab)), d.clone()),
        &one,
    );
    a.norm("model.audio_tower.norm", "audio norms", &d, false, &one);
    let (t, patch, layers, c) = with_sub(raw, "vision_config", "InklingVisionConfig", |s| {
        let layers = match s.r.raw.size_opt("n_layers")? {
            Some(n) => n,
            None => s.size("num_hidden_layers", 24)?,
        };
        Ok((
            s.size("temporal_patch_size", 2)?,
            s.size("patch_size", 40)?,
            layers,
            s.size("num_channels", 3)?,
        ))
    })?;
    let scales = plan_out_scales(t, patch, layers, c).ok_or_else(|| {
        not_read(
            raw,
            f.model_type,
            "fewer vision layers than scales (or a patch or temporal patch of 1)",
            "transformers plans such encoders with scipy's linear_sum_assignment",
        )
    })?;
    let mut p = vision();
    let pre = "model.vision_tower.encoder_layers";
    let n = scales.len().saturating_sub(1);
    // Consecutive layers between the same two scales are identical: one tensor of as many
    // copies, so the work follows the number of distinct scales, not `n_layers`.
    let mut groups: Vec<(usize, Scale, Scale, u64)> = Vec::new();
    for (i, pair) in scales.windows(2).enumerate() {
        let [s, e] = pair else { continue };
        let last = i + 1 == n;
        match groups.last_mut() {
            Some((_, gs, ge, count)) if !last && gs == s && ge == e => *count += 1,
            _ => groups.push((i, *s, *e, 1)),
        }
    }
    for (i, s, e, count) in groups {
        let mult = (e[0] / s[0].max(1))
            .saturating_mul(e[1] / s[1].max(1))
            .saturating_mul(e[2] / s[2].max(1));
        let input = lit(s[3].saturating_mul(mult));
        let last = i + 1 == n;
        let output = if last { d.clone() } else { lit(e[3]) };
        let copies = lit(count);
        p.linear(
            format!("{pre}.{i}.projection"),
            "vision encoder",
            (input, output.clone()),
            false,
            &copies,
        );
        if !last {
            p.norm(
                format!("{pre}.{i}.layer_norm"),
                "vision norms",
                &output,
                false,
                &copies,
            );
        }
    }
    p.norm(
        "model.vision_tower.final_norm",
        "vision norms",
        &d,
        false,
        &one,
    );
    p.out.extend(a.out);
    Ok(with_parts(spec, p))
}

/// `Inkling2ForConditionalGeneration`: the `inkling2_text` model (never tied) and
/// `Inkling2VisionModel` (a bias-free linear patch embedding of `channels·patch²`, a
/// `posemb_grid_size²` position table, a class embedding and its position, `pre_layernorm`,
/// layers of `LayerNorm`s, biased q/k/v/out and `fc1`/`fc2` (`intermediate_size`, else
/// `int(d_vis·mlp_ratio)`) with per-channel scales `lambda_1`, `lambda_2`, and the merger
/// `linear_1` `d_vis·m² → P`, `linear_2` `P → text_hidden_size`, biased by
/// `projector_bias`).
pub(super) fn inkling2(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    inkling2_of(raw, f, head, "inkling2_text", 4608)
}

/// `Inkling2LoopForConditionalGeneration`: Inkling 2's tower (its `text_hidden_size`
/// defaulting to 2304) over the looped `inkling2_loop_text` model.
pub(super) fn inkling2_loop(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    inkling2_of(raw, f, head, "inkling2_loop_text", 2304)
}

/// Inkling 2's tower and projector over the text model of `text_type`.
fn inkling2_of(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
    text_type: &str,
    text_hidden: u64,
) -> Result<ModelSpec, ConfigError> {
    let spec = super::text_or_default(raw, f, text_type, head, Tie::Text)?;
    let mut p = vision();
    let one = lit(1);
    with_sub(raw, "vision_config", "Inkling2VisionConfig", |s| {
        let dv = s.size("hidden_size", 1024)?;
        let ff = if let Some(n) = s.size_opt("intermediate_size")? {
            n
        } else {
            let ratio = s.float("mlp_ratio", 4.0)?;
            #[allow(
                clippy::cast_precision_loss,
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                reason = "Python's `int(hidden_size * mlp_ratio)` of positive sizes"
            )]
            let n = (dv as f64 * ratio).trunc().max(0.0) as u64;
            n
        };
        let d = sym("d_vis", dv);
        let ff = sym("d_ff_vis", ff);
        let l = sym("L_vis", s.size("num_hidden_layers", 23)?);
        let c = s.size("num_channels", 3)?;
        let ps = s.size("patch_size", 20)?;
        let grid = s.size("posemb_grid_size", 32)?;
        let m = s.size("spatial_merge_size", 2)?;
        let proj = sym("d_proj", s.size("projection_hidden_dim", 4096)?);
        let out = sym("d", s.size("text_hidden_size", text_hidden)?);
        let bias = s.flag("projector_bias", false)?;
        let pre = "model.vision_tower";
        let part = "vision embeddings";
        p.linear(
            format!("{pre}.embeddings.patch_embedding"),
            part,
            (lit(c.saturating_mul(ps).saturating_mul(ps)), d.clone()),
            false,
            &one,
        );
        p.table(
            format!("{pre}.embeddings.position_embedding"),
            part,
            (lit(grid.saturating_mul(grid)), d.clone()),
            &one,
        );
        p.vector(
            format!("{pre}.embeddings.class_embedding"),
            part,
            d.clone(),
            &one,
        );
        p.vector(
            format!("{pre}.embeddings.cls_position_embedding"),
            part,
            d.clone(),
            &one,
        );
        scaled_vit_layers(&mut p, pre, &d, ff, &l);
        let part = "multimodal projector";
        let wide = super::parts::mul(d, lit(m.saturating_mul(m)));
        p.linear(
            format!("{pre}.merger.linear_1"),
            part,
            (wide, proj.clone()),
            bias,
            &one,
        );
        p.linear(
            format!("{pre}.merger.linear_2"),
            part,
            (proj, out),
            bias,
            &one,
        );
        Ok(())
    })?;
    Ok(with_parts(spec, p))
}
