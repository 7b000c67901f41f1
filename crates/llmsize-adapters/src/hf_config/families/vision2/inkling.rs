//! Inkling (`modeling_inkling.py`, `InklingForConditionalGeneration`): an MLP vision encoder
//! that folds time and space into channels layer by layer (`plan_out_scales`), an audio
//! table of quantized mel bins, and the `inkling_text` model.

use llmsize_core::Category;
use llmsize_core::checked::{self, Checked};
use llmsize_core::spec::ModelSpec;

use super::parts::{Parts, lit, sym, with_sub};
use super::{scaled_vit_layers, vision, with_parts};
use crate::error::ConfigError;
use crate::hf_config::HeadChoice;
use crate::hf_config::families::vision::{Tie, not_read, text};
use crate::hf_config::family::Family;
use crate::hf_config::raw::RawConfig;
use crate::hf_config::runs::Runs;

/// Trial divisors tried when factoring a patch size: a cofactor left above `FACTOR_LIMIT²`
/// may hide two large primes, which trial division cannot tell from one, so such a size is
/// refused rather than factored for seconds (real patches are 2 to 40 pixels).
const FACTOR_LIMIT: u64 = 1 << 20;

/// The prime factors of `n`, smallest first (`prime_factors`); `None` when a cofactor above
/// `FACTOR_LIMIT²` remains (see [`FACTOR_LIMIT`]). At most `FACTOR_LIMIT / 2` divisions.
#[expect(
    clippy::arithmetic_side_effects,
    reason = "`p ≤ FACTOR_LIMIT + 1` steps by 2 far below 2^64, and divides only by `p ≥ 2`"
)]
fn prime_factors(mut n: u64) -> Option<Vec<u64>> {
    let mut out = Vec::new();
    while n > 1 && n.is_multiple_of(2) {
        out.push(2);
        n /= 2;
    }
    let mut p: u64 = 3;
    while p <= FACTOR_LIMIT && p.checked_mul(p).is_some_and(|pp| pp <= n) {
        while n.is_multiple_of(p) {
            out.push(p);
            n /= p;
        }
        p += 2;
    }
    // No divisor up to `p − 2`: `n` is prime when `p² > n`, else unknown.
    if n > 1 && p.checked_mul(p).is_some_and(|pp| pp <= n) {
        return None;
    }
    if n > 1 {
        out.push(n);
    }
    Some(out)
}

/// `torch.linspace(0, end, steps)[i]` in `float32`, as its CPU kernel computes it (from the
/// start for the first half, from the end for the second), for `i < steps`, `steps ≥ 2`.
#[allow(
    clippy::cast_precision_loss,
    reason = "float32 arithmetic, as torch computes it; indices are at most 2^20 (`MAX_LAYERS`)"
)]
#[expect(
    clippy::arithmetic_side_effects,
    reason = "`i < steps` and `steps ≥ 2`: the differences are at least 0 and 1"
)]
fn linspace_at(end: f32, steps: u64, i: u64) -> f32 {
    let step = end / (steps - 1) as f32;
    if i < steps / 2 {
        step * i as f32
    } else {
        end - step * (steps - 1 - i) as f32
    }
}

/// One scale of the encoder: `(t, h, w, channels)`.
type Scale = [u64; 4];

/// The reverse cumulative products of `f`: `[2, 2, 2, 5]` → `[5, 10, 20, 40]`.
fn cumulative(f: &[u64]) -> Result<Vec<u64>, llmsize_core::Overflow> {
    let mut acc = 1u64;
    f.iter()
        .rev()
        .map(|x| {
            acc = checked::mul("cumulative patch factors", acc, *x)?;
            Ok(acc)
        })
        .collect()
}

/// The candidate scales of `plan_out_scales(temporal_patch_size, patch_size, …, channels)`:
/// the input, one per spatial factor, one per temporal factor; `None` when transformers
/// cannot build them (a patch or temporal patch of 1).
#[allow(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "`math.ceil(x·x·channels / 64)` in float, as the modeling code computes it"
)]
fn scales(
    (h_factors, t_factors): (&[u64], &[u64]),
    channels: u64,
) -> Result<Option<Vec<Scale>>, llmsize_core::Overflow> {
    let h = cumulative(h_factors)?;
    let t = cumulative(t_factors)?;
    // A temporal patch of 1 has no factors: torch then builds the scales as floats and the
    // projections cannot be made.
    let (Some(&h_last), false) = (h.last(), t.is_empty()) else {
        return Ok(None);
    };
    let mut out: Vec<Scale> = vec![[1, 1, 1, channels]];
    for &x in &h {
        let pixels = checked::product("patch factor²·num_channels", [x, x, channels])?;
        let ch = (pixels as f64 / 64.0).ceil() as u64;
        out.push([1, x, x, checked::mul("⌈x²·num_channels / 64⌉·64", ch, 64)?]);
    }
    for &x in &t {
        let ch = checked::product(
            "patch_size²·num_channels·temporal factor·64",
            [h_last, h_last, channels, x, 64],
        )?;
        out.push([x, h_last, h_last, ch]);
    }
    Ok(Some(out))
}

/// The scale each layer boundary `0..=n_layers` lands on, as runs: the first and last fixed,
/// each other the candidate nearest to `linspace(0, ln(total), n_layers + 1)` in log size
/// (the first of equals), as `plan_out_scales` assigns them when there are at least as many
/// layers as scales.
///
/// The ideal sizes grow with the index within each half of `linspace` (each half is
/// computed from its own end), and the nearest of sizes sorted ascending then never moves
/// back: each half is runs of scale indices found by bisection, so the work is in the number
/// of scales times `log n_layers`, never in `n_layers` (a test checks every boundary of real
/// and odd shapes against the per-boundary rule).
#[allow(
    clippy::cast_precision_loss,
    reason = "float32 logs of sizes, as torch computes them"
)]
#[expect(
    clippy::arithmetic_side_effects,
    reason = "indices below `steps = n_layers + 1 ≤ MAX_LAYERS + 1`; a bisection's midpoint \
              between two of them"
)]
fn assignment(scales: &[Scale], total: u64, n_layers: u64) -> Runs<usize> {
    let steps = n_layers + 1;
    let end = (total as f32).ln();
    let logs: Vec<f32> = scales
        .iter()
        .map(|s| ((s[0] * s[1] * s[2]) as f32).ln())
        .collect();
    let last = scales.len().saturating_sub(1);
    let nearest = |i: u64| -> usize {
        let a = linspace_at(end, steps, i);
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
    let mut out = Runs::uniform(0, 1);
    let half = steps / 2;
    for (lo, hi) in [(1, half.max(1)), (half.max(1), steps - 1)] {
        let mut i = lo;
        while i < hi {
            let v = nearest(i);
            // The first boundary past `i` on another scale (or `hi`).
            let (mut a, mut b) = (i + 1, hi);
            while a < b {
                let m = a + (b - a) / 2;
                if nearest(m) == v {
                    a = m + 1;
                } else {
                    b = m;
                }
            }
            out.push(v, a - i);
            i = a;
        }
    }
    out.push(last, 1);
    out
}

/// The encoder's layers as groups `(first layer, from scale, to scale, layers)`: consecutive
/// layers between the same two scales are identical (one tensor of as many copies); the last
/// layer, which projects to the text width, is a group of its own.
#[expect(
    clippy::arithmetic_side_effects,
    reason = "run counts are at least 1 and sum to `n_layers + 1`; starts add up to `n_layers`"
)]
fn groups(scales: &[Scale], boundaries: &Runs<usize>) -> Vec<(u64, Scale, Scale, u64)> {
    let at = |j: usize| scales.get(j).copied().unwrap_or_default();
    // Each layer's (from, to): within a run of `c` boundaries, `c − 1` layers stay on its
    // scale; one more moves to the next run's.
    let mut pairs: Runs<(Scale, Scale)> = Runs::default();
    let runs = boundaries.runs();
    for (k, &(j, c)) in runs.iter().enumerate() {
        pairs.push((at(j), at(j)), c - 1);
        if let Some(&(next, _)) = runs.get(k + 1) {
            pairs.push((at(j), at(next)), 1);
        }
    }
    let mut out: Vec<(u64, Scale, Scale, u64)> = Vec::new();
    let mut start = 0;
    for &((s, e), c) in pairs.runs() {
        out.push((start, s, e, c));
        start += c;
    }
    // The last layer apart.
    if let Some(g) = out.last_mut()
        && g.3 > 1
    {
        g.3 -= 1;
        let (s, e) = (g.1, g.2);
        out.push((start - 1, s, e, 1));
    }
    out
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
        (
            lit(raw.mul(bins, vocab, "audio_config: n_mel_bins·mel_vocab_size")?),
            d.clone(),
        ),
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
    // Factors first: a patch size past what trial division can factor is refused by name.
    let factors = |n: u64, key: &str| {
        prime_factors(n).ok_or_else(|| {
            raw.invalid(
                &format!("vision_config.{key}"),
                &n.into(),
                "a patch size whose prime factors are below 2^20 (or one prime above)",
            )
        })
    };
    let (h_factors, t_factors) = (
        factors(patch, "patch_size")?,
        factors(t, "temporal_patch_size")?,
    );
    let candidates = raw.check(scales((&h_factors, &t_factors), c))?;
    let Some(candidates) = candidates.filter(|s| layers >= s.len() as u64) else {
        return Err(not_read(
            raw,
            f.model_type,
            "fewer vision layers than scales (or a patch or temporal patch of 1)",
            "transformers plans such encoders with scipy's linear_sum_assignment",
        ));
    };
    let total = raw.check(checked::product(
        "vision_config: patch_size²·temporal_patch_size·num_channels",
        [patch, patch, t, c],
    ))?;
    let mut p = vision();
    let pre = "model.vision_tower.encoder_layers";
    let last_layer = layers.saturating_sub(1);
    for (i, s, e, count) in groups(&candidates, &assignment(&candidates, total, layers)) {
        let mult = raw.check(
            (Checked::new(e[0]) / s[0] * (Checked::new(e[1]) / s[1]) * (Checked::new(e[2]) / s[2]))
                .get("vision_config: the folded t·h·w of a layer"),
        )?;
        let input = lit(raw.mul(s[3], mult, "vision_config: channels·folded t·h·w")?);
        let last = i == last_layer;
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
            (
                lit(s.check(checked::product("num_channels·patch_size²", [c, ps, ps]))?),
                d.clone(),
            ),
            false,
            &one,
        );
        p.table(
            format!("{pre}.embeddings.position_embedding"),
            part,
            (lit(s.mul(grid, grid, "posemb_grid_size²")?), d.clone()),
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
        let wide = super::parts::mul(d, lit(s.mul(m, m, "spatial_merge_size²")?));
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

#[cfg(test)]
mod tests {
    use super::*;

    // The per-boundary plan as it was first written (one float per boundary), to check the
    // runs against.
    /// The prime factors of `n`, smallest first (`prime_factors`).
    fn prime_factors_plain(mut n: u64) -> Vec<u64> {
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
    fn linspace_all(end: f32, steps: usize) -> Vec<f32> {
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
    pub(super) fn plan_out_scales(
        t_patch: u64,
        patch: u64,
        n_layers: u64,
        channels: u64,
    ) -> Option<Vec<Scale>> {
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
        let h = cum(prime_factors_plain(patch));
        let t = cum(prime_factors_plain(t_patch));
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
        let ideal = linspace_all(
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

    /// The runs' groups as the per-boundary plan groups layers.
    fn groups_per_layer(plan: &[Scale]) -> Vec<(u64, Scale, Scale, u64)> {
        let n = plan.len() - 1;
        let mut groups: Vec<(u64, Scale, Scale, u64)> = Vec::new();
        for (i, pair) in plan.windows(2).enumerate() {
            let [s, e] = pair else { continue };
            let last = i + 1 == n;
            match groups.last_mut() {
                Some((_, gs, ge, count)) if !last && gs == s && ge == e => *count += 1,
                _ => groups.push((i as u64, *s, *e, 1)),
            }
        }
        groups
    }

    #[test]
    fn runs_of_the_plan_are_the_plan_boundary_by_boundary() {
        let mut checked_shapes = 0;
        for (t, patch, c) in [
            (2, 40, 3),
            (2, 14, 3),
            (2, 16, 3),
            (4, 12, 1),
            (3, 30, 4),
            (2, 2, 1),
            (8, 64, 3),
        ] {
            let Some(cands) = scales(
                (&prime_factors(patch).unwrap(), &prime_factors(t).unwrap()),
                c,
            )
            .unwrap() else {
                continue;
            };
            let total = patch * patch * t * c;
            for layers in (cands.len() as u64..200).chain([511, 1000, 4097, 20_000]) {
                let plan = plan_out_scales(t, patch, layers, c).unwrap();
                let runs = assignment(&cands, total, layers);
                assert_eq!(
                    groups(&cands, &runs),
                    groups_per_layer(&plan),
                    "t {t}, patch {patch}, c {c}, layers {layers}"
                );
                checked_shapes += 1;
            }
        }
        assert!(checked_shapes > 500, "{checked_shapes}");
    }

    #[test]
    fn factoring_is_bounded() {
        assert_eq!(prime_factors(40), Some(vec![2, 2, 2, 5]));
        assert_eq!(
            prime_factors(u64::MAX),
            Some(vec![3, 5, 17, 257, 641, 65537, 6_700_417])
        );
        // 2^64 − 59 is prime, but above 2^40 trial division to 2^20 cannot tell.
        assert_eq!(prime_factors(18_446_744_073_709_551_557), None);
        assert_eq!(prime_factors(1), Some(vec![]));
    }
}
