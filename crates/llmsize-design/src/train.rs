//! `--train-memory`: the largest shapes whose one training step fits a GPU.
//!
//! Every figure printed is the core's training step (`llmsize_core::train::train`, the
//! computation behind `llmsize train`), run on the candidate's config as the reader reads it:
//! no second formula. The search itself needs a cheap bound to prune millions of shapes; it
//! is a closed form of the sizes in micro-bytes, *fitted* on the training step of a few probe
//! shapes of the base (same options, realistic sizes):
//!
//! ```text
//! bytes ≈ L·(r·P_layer + α·d + β) + r·P_global + γ·d + δ
//! ```
//!
//! where `P_layer`, `P_global` are the exact parameter forms ([`crate::form`]), r the bytes
//! the step holds per parameter (weights, gradients, optimizer states, sharded as the options
//! say), and α, β, γ, δ the activations that grow with width (per layer: saved inputs of the
//! projections, the FFN's, attention's; once: the logits and the embeddings' output). Three
//! widths at two depths give r, α, β (per-layer slope) and γ, δ (what is left at one depth).
//! The bound only prunes: each shape kept is then measured exactly.

use llmsize_core::train::states::{Optimizer, Precision};
use llmsize_core::train::{ParamDtype, TrainOptions, train};

use crate::base::{Base, Shape};
use crate::error::DesignError;
use crate::form::{self, Form, Forms};
use crate::search::{KvChoice, Space};

/// Micro-units per unit, as the memory form.
const MICRO: f64 = 1_000_000.0;

/// The per-GPU bytes of one training step of `shape` (the most loaded GPU), as
/// `llmsize train` computes them.
pub fn step_bytes(base: &Base, shape: &Shape, options: &TrainOptions) -> Result<u128, DesignError> {
    let spec = crate::read(base, shape)?;
    let report = train(&spec, options).map_err(|e| DesignError::Reader {
        model: base.name.clone(),
        shape: form::describe(shape),
        message: e.to_string(),
    })?;
    Ok(report.per_gpu.bytes)
}

/// The `llmsize train` flags that give `options` (only those that differ from its defaults;
/// the design sets no other option).
#[must_use]
pub fn flags(o: &TrainOptions) -> String {
    let d = TrainOptions::default();
    let mut out = Vec::new();
    if o.seq_len != d.seq_len {
        out.push(format!("--seq-len {}", o.seq_len));
    }
    if o.batch != d.batch {
        out.push(format!("--batch {}", o.batch));
    }
    if o.dtype != ParamDtype::Bf16 {
        out.push(format!("--dtype {}", o.dtype.name()));
    }
    if o.precision != Precision::Pure {
        out.push(format!("--precision {}", o.precision.name()));
    }
    if o.optimizer != Optimizer::AdamW {
        out.push(format!("--optimizer {}", o.optimizer.name()));
    }
    if o.checkpointing {
        out.push("--checkpointing".to_owned());
    }
    if let Some(l) = &o.lora {
        out.push(format!("--lora-rank {}", l.rank));
    }
    if o.base_format.is_some() {
        out.push("--qlora".to_owned());
    }
    let p = &o.parallel;
    if p.zero > 0 {
        out.push(format!("--zero {}", p.zero));
    }
    for (flag, v) in [("--dp", p.dp), ("--tp", p.tp), ("--pp", p.pp)] {
        if v > 1 {
            out.push(format!("{flag} {v}"));
        }
    }
    out.join(" ")
}

/// A probe shape of width `d` and `layers`, following the space's rules (its first head
/// width and KV choice, its FFN rule).
fn probe(space: &Space, d: u64, layers: u64) -> Shape {
    let hd = space.head_dims.first().copied().unwrap_or(128).max(1);
    let heads = (d / hd).max(1);
    let kv = if space.mha_only {
        heads
    } else {
        match &space.kv {
            KvChoice::Heads(v) => v.first().copied().unwrap_or(1),
            KvChoice::Group(g) => heads / g.first().copied().unwrap_or(1).max(1),
        }
    };
    Shape {
        hidden: d,
        layers,
        heads,
        kv_heads: kv.max(1),
        head_dim: hd,
        ffn: space.ffn.ffn(d),
        vocab: space.vocab,
    }
}

/// Least common multiple.
fn lcm(a: u64, b: u64) -> u64 {
    let g = crate::search::gcd(a, b).max(1);
    a / g * b
}

/// The fitted bound, in micro-bytes (see the module's doc).
pub fn bound(
    base: &Base,
    forms: &Forms,
    space: &Space,
    options: &TrainOptions,
) -> Result<Form, DesignError> {
    // Widths whose heads divide by the KV group (or count) and the tensor-parallel degree.
    let hd = space.head_dims.first().copied().unwrap_or(128).max(1);
    let q = if space.mha_only {
        1
    } else {
        match &space.kv {
            KvChoice::Heads(v) => v.first().copied().unwrap_or(1),
            KvChoice::Group(g) => g.first().copied().unwrap_or(1),
        }
    };
    let step = lcm(hd * q.max(1), hd * space.tp.max(1));
    let k = (base.shape.hidden / step).max(4);
    let widths = [step * (k / 4), step * (k / 2), step * k];
    let pp = space.pp.max(1);
    let hi = (base.shape.layers / pp * pp).max(2 * pp);
    let lo = (hi / 2 / pp * pp).max(pp);
    let measure = |d: u64, l: u64| -> Result<f64, DesignError> {
        #[expect(clippy::cast_precision_loss, reason = "a fit")]
        Ok(step_bytes(base, &probe(space, d, l), options)? as f64)
    };
    #[expect(clippy::cast_precision_loss, reason = "a fit")]
    let f = |x: i128| x as f64;
    #[expect(clippy::cast_precision_loss, reason = "a fit")]
    let span = (hi - lo) as f64;
    let mut rows = Vec::with_capacity(3);
    for &d in &widths {
        let (a, b) = (measure(d, lo)?, measure(d, hi)?);
        let slope = (b - a) / span;
        let s = probe(space, d, 1);
        #[expect(clippy::cast_precision_loss, reason = "a fit")]
        let (df, lf) = (d as f64, lo as f64);
        rows.push((
            df,
            slope,
            f(forms.total.per_layer(&s)),
            a - lf * slope,
            f(forms.total.global(&s)),
        ));
    }
    let (Some(r1), Some(r2), Some(r3)) = (rows.first(), rows.get(1), rows.get(2)) else {
        return Err(DesignError::Internal("three probe widths".into()));
    };
    // slope_i = r·P_i + α·d_i + β, by Cramer's rule.
    let det3 = |m: [[f64; 3]; 3]| {
        m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1])
            - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
            + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0])
    };
    let m = [[r1.2, r1.0, 1.0], [r2.2, r2.0, 1.0], [r3.2, r3.0, 1.0]];
    let y = [r1.1, r2.1, r3.1];
    let det = det3(m);
    let col = |c: usize| {
        let mut x = m;
        for (row, v) in x.iter_mut().zip(y) {
            if let Some(e) = row.get_mut(c) {
                *e = v;
            }
        }
        det3(x) / det
    };
    let (r, alpha, beta) = if det.abs() > f64::EPSILON && det.is_finite() {
        (col(0), col(1), col(2))
    } else {
        (r3.1 / r3.2.max(1.0), 0.0, 0.0)
    };
    // What one depth leaves once: r·P_global + γ·d + δ, from the narrowest and widest.
    let g1 = r1.3 - r * r1.4;
    let g3 = r3.3 - r * r3.4;
    let gamma = (g3 - g1) / (r3.0 - r1.0);
    let delta = g1 - gamma * r1.0;
    #[expect(clippy::cast_possible_truncation, reason = "a rounded bound")]
    let round = |x: f64| if x.is_finite() { x.round() as i128 } else { 0 };
    let mut out = Form {
        layer: forms.total.layer.map(|c| round(r * MICRO * f(c))),
        global: forms.total.global.map(|c| round(r * MICRO * f(c))),
    };
    if let Some(c3) = out.layer.get_mut(3) {
        *c3 += round(alpha * MICRO);
    }
    if let Some(c9) = out.layer.get_mut(9) {
        *c9 += round(beta * MICRO);
    }
    if let Some(g2) = out.global.get_mut(2) {
        *g2 += round(gamma * MICRO);
    }
    if let Some(g3) = out.global.get_mut(3) {
        *g3 += round(delta * MICRO);
    }
    Ok(out)
}

/// The exact check of a relaxation: some shape it gives fits `bytes` when measured.
pub struct Fits<'a> {
    /// The base.
    pub base: &'a Base,
    /// The step.
    pub options: &'a TrainOptions,
    /// The budget per GPU.
    pub bytes: u64,
}

impl Fits<'_> {
    /// The bound's target for a relaxation's search: shapes just under the budget.
    #[must_use]
    pub fn target(&self) -> crate::search::Target {
        let budget = i128::from(self.bytes) * 1_000_000;
        crate::search::Target {
            value: budget,
            tolerance: 0,
            resolution: (budget / 200).max(1),
            maximize: true,
        }
    }

    /// Does a shape found fit, measured with `options`?
    #[must_use]
    pub fn any(&self, found: &crate::search::Found, options: &TrainOptions) -> bool {
        found.hits.iter().any(|h| {
            step_bytes(self.base, &h.shape, options).is_ok_and(|b| b <= u128::from(self.bytes))
        })
    }
}

/// When no shape's step fits: the training options whose addition alone gives shapes
/// (measured): gradient checkpointing, LoRA r16 on the 16-bit base, `QLoRA` r16, a quarter
/// of the sequence.
pub fn relaxations(
    base: &Base,
    forms: &Forms,
    space: &Space,
    fits: &Fits<'_>,
    pref: crate::search::Preference,
) -> Result<Vec<String>, DesignError> {
    use llmsize_core::train::lora::{LoraOptions, LoraTargets};
    let options = fits.options;
    let lora = LoraOptions {
        rank: 16,
        targets: LoraTargets::AllLinear,
        dropout: 0.0,
        dora: false,
    };
    let mut tries: Vec<(String, TrainOptions)> = Vec::new();
    if !options.checkpointing {
        tries.push((
            "add --checkpointing".into(),
            TrainOptions {
                checkpointing: true,
                ..options.clone()
            },
        ));
    }
    if options.lora.is_none() {
        tries.push((
            "add --lora-rank 16".into(),
            TrainOptions {
                lora: Some(lora.clone()),
                ..options.clone()
            },
        ));
    }
    if options.base_format.is_none() {
        tries.push((
            "add --lora-rank 16 --qlora".into(),
            TrainOptions {
                lora: Some(options.lora.clone().unwrap_or(lora)),
                base_format: llmsize_core::formats::WeightFormat::parse("nf4-dq"),
                ..options.clone()
            },
        ));
    }
    if options.seq_len >= 4 {
        tries.push((
            format!("shorten the sequence (--ctx {})", options.seq_len / 4),
            TrainOptions {
                seq_len: options.seq_len / 4,
                ..options.clone()
            },
        ));
    }
    let mut out = Vec::new();
    for (name, o) in tries {
        let f = bound(base, forms, space, &o)?;
        let found = crate::search::search(space, &f, &fits.target(), pref, crate::RELAX_KEEP);
        if fits.any(&found, &o) {
            out.push(name);
        }
    }
    Ok(out)
}
