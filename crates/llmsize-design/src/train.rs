//! `--train-memory`: the largest shapes whose one training step fits a GPU.
//!
//! Every figure printed is the training planner's step (`llmsize_train::train`, the
//! computation behind `llmsize train`), run on the candidate's config as the reader reads it:
//! no second formula. The search itself needs a cheap bound to prune millions of shapes; it
//! is a closed form of the sizes in micro-bytes, *fitted* on the training step of a few probe
//! shapes of the base (same options, realistic sizes):
//!
//! ```text
//! bytes ≈ L·(r·P_layer + α·d + φ·f + β) + r·P_global + γ·d + δ
//! ```
//!
//! where `P_layer`, `P_global` are the exact parameter forms ([`crate::form`]), r the bytes
//! the step holds per parameter (weights, gradients, optimizer states, sharded as the options
//! say), and α, φ, β, γ, δ the activations that grow with the widths (per layer: the saved
//! inputs of the projections, the FFN's, attention's; once: the logits and the embeddings'
//! output). Four (hidden, FFN) points at two depths give r, α, φ, β (the per-layer slope)
//! and γ, δ (what one depth leaves).
//! The bound only prunes: each shape kept is then measured exactly.

use llmsize_train::states::{Optimizer, Precision};
use llmsize_train::{ParamDtype, TrainOptions, train};

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
    // The model states plus the forward's peak: linear in the depth, so the fitted bound
    // holds; `llmsize train`'s verdict compares the step's peak, which is within a few % of it
    // (the larger of the forward's and the backward's transients).
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
    let pp = space.pp.max(1);
    let hi = (base.shape.layers / pp * pp).max(2 * pp);
    let lo = (hi / 2 / pp * pp).max(pp);
    // Four (d, f) points: three widths with the space's FFN rule, and one with twice its FFN
    // width, so the FFN's activations are told apart from the hidden size's.
    let (d1, d2, d3) = (step * (k / 4), step * (k / 2), step * k);
    let with_ffn = |d: u64, f: u64, l: u64| Shape {
        ffn: f,
        ..probe(space, d, l)
    };
    let points = [
        (d1, space.ffn.ffn(d1)),
        (d2, space.ffn.ffn(d2)),
        (d3, space.ffn.ffn(d3)),
        (d2, 2 * space.ffn.ffn(d2)),
    ];
    #[expect(clippy::cast_precision_loss, reason = "a fit")]
    let f = |x: i128| x as f64;
    #[expect(clippy::cast_precision_loss, reason = "a fit")]
    let (span, lf) = ((hi - lo) as f64, lo as f64);
    // Per point: [P_layer, d, f, 1] → the per-layer slope, and what one depth leaves once.
    let mut rows: Vec<([f64; 4], f64, f64, f64)> = Vec::with_capacity(4);
    for (d, ffn) in points {
        #[expect(clippy::cast_precision_loss, reason = "a fit")]
        let (a, b) = (
            step_bytes(base, &with_ffn(d, ffn, lo), options)? as f64,
            step_bytes(base, &with_ffn(d, ffn, hi), options)? as f64,
        );
        let slope = (b - a) / span;
        let s = with_ffn(d, ffn, 1);
        #[expect(clippy::cast_precision_loss, reason = "a fit")]
        let (df, ff) = (d as f64, ffn as f64);
        rows.push((
            [f(forms.total.per_layer(&s)), df, ff, 1.0],
            slope,
            a - lf * slope,
            f(forms.total.global(&s)),
        ));
    }
    // slope = r·P_layer + α·d + φ·f + β: four equations, four unknowns.
    let m: Vec<[f64; 4]> = rows.iter().map(|r| r.0).collect();
    let y: Vec<f64> = rows.iter().map(|r| r.1).collect();
    let [r, alpha, phi, beta] = solve4(&m, &y).unwrap_or_else(|| {
        // Degenerate probes: all per parameter.
        let (p, s) = rows.last().map_or((1.0, 0.0), |r| (r.0[0], r.1));
        [s / p.max(1.0), 0.0, 0.0, 0.0]
    });
    // What one depth leaves once: r·P_global + γ·d + δ, from the narrowest and widest.
    let (Some(n1), Some(n3)) = (rows.first(), rows.get(2)) else {
        return Err(DesignError::Internal("probe widths".into()));
    };
    let g1 = n1.2 - r * n1.3;
    let g3 = n3.2 - r * n3.3;
    let gamma = (g3 - g1) / (n3.0[1] - n1.0[1]);
    let delta = g1 - gamma * n1.0[1];
    #[expect(clippy::cast_possible_truncation, reason = "a rounded bound")]
    let round = |x: f64| if x.is_finite() { x.round() as i128 } else { 0 };
    let mut out = Form {
        layer: forms.total.layer.map(|c| round(r * MICRO * f(c))),
        global: forms.total.global.map(|c| round(r * MICRO * f(c))),
    };
    for (i, v) in [(3, alpha), (5, phi), (9, beta)] {
        if let Some(c) = out.layer.get_mut(i) {
            *c += round(v * MICRO);
        }
    }
    for (i, v) in [(2, gamma), (3, delta)] {
        if let Some(c) = out.global.get_mut(i) {
            *c += round(v * MICRO);
        }
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
    use llmsize_train::lora::{LoraOptions, LoraTargets};
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

/// Solve a 4×4 system by Gauss-Jordan elimination with partial pivoting; `None` when
/// singular.
#[expect(clippy::indexing_slicing, reason = "fixed 4×4 indices")]
fn solve4(m: &[[f64; 4]], y: &[f64]) -> Option<[f64; 4]> {
    if m.len() != 4 || y.len() != 4 {
        return None;
    }
    let mut a = [[0.0; 5]; 4];
    for ((row, src), v) in a.iter_mut().zip(m).zip(y) {
        row[..4].copy_from_slice(src);
        row[4] = *v;
    }
    for c in 0..4 {
        let p = (c..4).max_by(|&i, &j| a[i][c].abs().total_cmp(&a[j][c].abs()))?;
        a.swap(c, p);
        let pivot = a[c];
        let scale = pivot.iter().map(|x| x.abs()).fold(0.0, f64::max);
        if pivot[c].abs() <= scale * 1e-12 || !pivot[c].is_finite() {
            return None;
        }
        for (i, row) in a.iter_mut().enumerate() {
            if i != c {
                let k = row[c] / pivot[c];
                for (x, p) in row.iter_mut().zip(pivot).skip(c) {
                    *x -= k * p;
                }
            }
        }
    }
    let x = [
        a[0][4] / a[0][0],
        a[1][4] / a[1][1],
        a[2][4] / a[2][2],
        a[3][4] / a[3][3],
    ];
    x.iter().all(|v| v.is_finite()).then_some(x)
}
