//! `llmsize train`: the step's memory and compute as tables, with `--explain` formulas and
//! what the article's rules of thumb assume — a [`Doc`], so the same tables print on a
//! terminal (fitted to its width), as Markdown or as CSV with the exact bytes and FLOPs.

use std::fmt::Write as _;

use crate::fit::{Suggestion, TimeCost};
use crate::parallel::Parallelism;
use crate::{Term, TrainReport};
use llmsize_core::checked::Checked;
use llmsize_core::gpu::Gpu;
use llmsize_core::render::doc::{Cell, Column, Doc, Raw, Table, Tone};
use llmsize_core::units::{
    human_bytes, human_count, human_flops, human_seconds, thousands, thousands_u128, whole_f64,
};

/// Everything the table shows.
#[derive(Debug, Clone, Copy)]
pub struct View<'a> {
    /// The model.
    pub name: &'a str,
    /// The step.
    pub report: &'a TrainReport,
    /// The GPU and count.
    pub gpu: Option<(&'a Gpu, u64)>,
    /// The parallel layout.
    pub parallel: &'a Parallelism,
    /// Changes that would make it fit.
    pub suggestions: &'a [Suggestion],
    /// `--max-batch`.
    pub max_batch: Option<Option<u64>>,
    /// `--max-seq`.
    pub max_seq: Option<Option<u64>>,
    /// `--tokens`.
    pub time: Option<&'a TimeCost>,
    /// Formulas.
    pub explain: bool,
}

/// Bytes in a scaled binary unit (`12.55 GiB`, `1.00 MiB`, `4 B`).
fn gib(n: u128) -> String {
    u64::try_from(n).map_or_else(
        |_| {
            #[expect(clippy::cast_precision_loss, reason = "display only")]
            let pib = n as f64 / f64::from(1u32 << 25) / f64::from(1u32 << 25);
            format!("{pib:.2} PiB")
        },
        human_bytes,
    )
}

/// The number behind a `u128` cell (bytes, FLOPs): exact up to `i128::MAX`, which nothing
/// reaches.
fn raw_u128(n: u128) -> Raw {
    i128::try_from(n).map_or_else(
        |_| {
            #[expect(clippy::cast_precision_loss, reason = "only past i128::MAX")]
            let x = n as f64;
            Raw::Float(x)
        },
        Raw::Int,
    )
}

/// Bytes scaled (`14.96 GiB`); CSV gets the bytes.
fn bytes_cell(n: u128) -> Cell {
    Cell::with_raw(gib(n), raw_u128(n))
}

/// FLOPs scaled (`31.8 TFLOP`); CSV gets the FLOPs.
fn flops_cell(n: u128) -> Cell {
    Cell::with_raw(human_flops(n), raw_u128(n))
}

/// How a term's formula is shown under `--explain`: as is, or followed by `= value`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Formula {
    Bare,
    WithValue,
}

/// A table of terms (bytes or FLOPs): the exact number and its scaled words on each row, a
/// total, and under `--explain` what each term is and its formula (long words that fold
/// under the row on a narrow terminal). Both number columns are one `bytes` (or `flops`)
/// column in CSV.
fn terms_table(
    name: &str,
    title: &str,
    terms: &[Term],
    total: (&str, u128),
    unit: &str,
    explain: Option<Formula>,
) -> Table {
    let scaled = |n: u128| {
        if unit == "flops" {
            flops_cell(n)
        } else {
            bytes_cell(n)
        }
    };
    let mut columns = vec![
        // One `item` column in CSV for every table's line items.
        Column::left(title).csv("item"),
        Column::right(if unit == "flops" { "FLOPs" } else { "bytes" }).csv(unit),
        Column::right(if unit == "flops" { "scaled" } else { "size" }).csv(unit),
    ];
    if explain.is_some() {
        columns.push(Column::fold("what"));
        columns.push(Column::fold("formula"));
    }
    let mut t = Table::new(name, columns);
    for term in terms {
        let mut row = vec![
            Cell::text(format!("  {}", term.key)),
            Cell::count_u128(term.value),
            scaled(term.value),
        ];
        if let Some(f) = explain {
            row.push(Cell::text(term.what.clone()).tone(Tone::Dim));
            row.push(
                Cell::text(match f {
                    Formula::Bare => term.formula.clone(),
                    Formula::WithValue => {
                        format!("{} = {}", term.formula, thousands_u128(term.value))
                    }
                })
                .tone(Tone::Dim),
            );
        }
        t.push(row);
    }
    t.push(vec![
        Cell::text(total.0).tone(Tone::Strong),
        Cell::count_u128(total.1).tone(Tone::Strong),
        scaled(total.1).tone(Tone::Strong),
    ]);
    t
}

/// `dp 8 × tp 1 × pp 1 × cp 1, ZeRO-3`: the layout of a job of more than one GPU.
fn layout(p: &Parallelism) -> String {
    let mut out = format!(
        "layout: dp {} × tp {} × pp {} × cp {}",
        p.dp, p.tp, p.pp, p.cp
    );
    if p.ep > 1 {
        let _ = write!(out, ", ep {}", p.ep);
    }
    if p.zero > 0 {
        let _ = write!(out, ", ZeRO-{}", p.zero);
    }
    if p.sequence_parallel {
        out.push_str(", sequence parallel");
    }
    if p.offload_optimizer {
        out.push_str(", optimizer offloaded");
    }
    out
}

/// The document: the setup, model states, activations, the most loaded GPU against its
/// capacity, what would make it fit, the step's compute, and the run's time and cost.
#[must_use]
pub fn doc(v: &View<'_>) -> Doc {
    let r = v.report;
    let explain = v.explain;
    let mut doc = Doc::new();
    if let Some(why) = &r.estimate {
        doc.toned(format!("ESTIMATE, not exact: {why}"), Tone::Warn)
            .blank();
    }
    doc.title(format!("{}: one training step, {}", v.name, r.setup));
    let p = v.parallel;
    if p.gpus() > 1 || p.zero > 0 {
        doc.line(layout(p));
    }
    let s = &r.states;
    doc.line(format!(
        "trained {} parameters ({} tensors), frozen {}",
        thousands(s.trainable_params),
        thousands(s.trainable_tensors),
        thousands(s.frozen_params)
    ));
    if let Some(l) = &r.lora {
        doc.line(format!(
            "LoRA r={} on {}{}",
            l.rank,
            l.resolved.join(", "),
            if l.dora { " (DoRA)" } else { "" }
        ));
    }
    let states_total = s.total_bytes;
    doc.blank().table(terms_table(
        "model_states",
        if r.per_gpu.gpus > 1 {
            "model states (whole model; per GPU below)"
        } else {
            "model states"
        },
        &s.terms,
        ("total", states_total),
        "bytes",
        explain.then_some(Formula::Bare),
    ));
    let a = &r.activations;
    let mut held = terms_table(
        "activations",
        "activations held for backward",
        &a.terms,
        ("total", a.retained),
        "bytes",
        explain.then_some(Formula::Bare),
    );
    held.push(vec![
        Cell::text("forward peak"),
        Cell::count_u128(a.forward_peak),
        bytes_cell(a.forward_peak),
    ]);
    doc.blank().table(held);
    doc.line(format!(
        "forward peak = held + {} of temporaries alive at the peak: {}",
        gib(a.forward_peak.saturating_sub(a.retained)),
        a.peak_terms
            .iter()
            .filter(|t| t.key != "retained")
            .map(|t| t.key.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    ));
    if explain {
        doc.blank().table(terms_table(
            "forward_peak",
            "forward peak",
            &a.peak_terms,
            ("forward peak", a.forward_peak),
            "bytes",
            Some(Formula::WithValue),
        ));
    }
    backward(&mut doc, r, explain);
    per_gpu(&mut doc, v);
    suggestions(&mut doc, v);
    compute(&mut doc, r, explain);
    if let Some(t) = v.time {
        time_cost(&mut doc, t);
    }
    if explain {
        doc.blank();
        article_notes(&mut doc, r);
    }
    doc
}

/// The backward's peak: one line, its terms with `--explain`, and its status.
fn backward(doc: &mut Doc, r: &TrainReport, explain: bool) {
    let b = &r.backward;
    let label = match &b.estimate {
        None => String::new(),
        Some(why) => format!(" (estimate: {why})"),
    };
    doc.line(format!(
        "backward peak = {} (held + gradients made so far + gradients in flight){label}",
        gib(b.bytes)
    ));
    if explain {
        doc.blank().table(terms_table(
            "backward_peak",
            "backward peak",
            &b.terms,
            ("backward peak", b.bytes),
            "bytes",
            Some(Formula::WithValue),
        ));
    }
}

/// The most loaded GPU's bytes by term, in CPU memory too when offloaded, and the verdict
/// against the GPU's capacity.
fn per_gpu(doc: &mut Doc, v: &View<'_>) {
    let r = v.report;
    let g = &r.per_gpu;
    let formula = v.explain.then_some(Formula::WithValue);
    doc.blank()
        .toned(format!("per GPU ({})", g.most_loaded), Tone::Strong)
        .table(terms_table(
            "per_gpu",
            "per GPU",
            &g.terms,
            ("total per GPU", g.bytes),
            "bytes",
            formula,
        ));
    if g.cpu_bytes > 0 {
        doc.blank().table(terms_table(
            "cpu_per_gpu",
            "in CPU memory per GPU",
            &g.cpu_terms,
            ("total in CPU memory", g.cpu_bytes),
            "bytes",
            formula,
        ));
    }
    for n in &g.notes {
        doc.line(format!("note: {n}"));
    }
    let why = r.step_peak_estimate();
    doc.blank().table(terms_table(
        "step_peak",
        if why.is_some() {
            "step peak (estimate)"
        } else {
            "step peak"
        },
        &r.step_terms,
        ("step peak", r.step_peak),
        "bytes",
        formula,
    ));
    doc.line(match &why {
        None => "the step's peak is what a GPU must hold; \"fits\" compares it".to_string(),
        Some(why) => format!("the step's peak is what \"fits\" compares; an estimate: {why}"),
    });
    if let Some((gpu, _)) = v.gpu {
        let cap = u128::from(gpu.memory_bytes);
        let peak = r.step_peak;
        // Each difference is taken on the side of the comparison that makes it positive.
        let (verdict, tone) = if peak <= cap {
            (
                format!("fits, {} free", gib(cap.abs_diff(peak))),
                Tone::Good,
            )
        } else {
            (
                format!("does NOT fit, {} short", gib(peak.abs_diff(cap))),
                Tone::Bad,
            )
        };
        doc.toned(
            format!("{}: {} per GPU → {verdict}", gpu.name, gib(cap)),
            tone,
        );
        doc.toned(
            "  (tensor storage; the CUDA context, allocator rounding and NCCL buffers come on top)",
            Tone::Dim,
        );
    }
}

/// What would make it fit, cheapest first, and the largest batch or length that fits.
fn suggestions(doc: &mut Doc, v: &View<'_>) {
    if !v.suggestions.is_empty() {
        doc.blank()
            .heading("what would make it fit (cheapest first)");
        let mut columns = vec![
            Column::left("change"),
            Column::right("per GPU").csv("bytes"),
            Column::left("verdict"),
        ];
        if v.explain {
            columns.push(Column::fold("why"));
        }
        let mut t = Table::new("suggestions", columns);
        for s in v.suggestions {
            let mut row = vec![
                Cell::text(s.flags.clone()),
                bytes_cell(s.per_gpu_bytes),
                if s.fits {
                    Cell::text("fits").tone(Tone::Good)
                } else {
                    Cell::text("too big").tone(Tone::Bad)
                },
            ];
            if v.explain {
                row.push(Cell::text(s.why.clone()).tone(Tone::Dim));
            }
            t.push(row);
        }
        doc.table(t);
    }
    let mut first = true;
    for (what, found) in [("batch", v.max_batch), ("sequence length", v.max_seq)] {
        let line = match found {
            Some(Some(n)) => format!("largest {what} that fits: {}", thousands(n)),
            Some(None) => format!("no {what} fits: even 1 is too much"),
            None => continue,
        };
        if first {
            doc.blank();
            first = false;
        }
        doc.line(line);
    }
}

/// The step's FLOPs by term against the article's 6·P·tokens.
fn compute(doc: &mut Doc, r: &TrainReport, explain: bool) {
    let f = &r.flops;
    doc.blank().table(terms_table(
        "compute",
        "compute per step",
        &f.terms,
        ("train step", f.train_step),
        "flops",
        explain.then_some(Formula::WithValue),
    ));
    let six = (Checked::new(6u128) * u128::from(r.params) * u128::from(r.tokens)).ok();
    // Both in millions for the comparison; one past 2^64 millions is shown, not compared.
    let compared = six.and_then(|six| {
        let six = u64::try_from(six / 1_000_000).ok()?;
        let exact = u64::try_from(f.train_step / 1_000_000).ok()?;
        Some(llmsize_core::units::relative(six, exact.max(1)))
    });
    doc.line(format!(
        "  the article's 6·P·tokens = 6·{}·{} = {} ({})",
        human_count(r.params),
        thousands(r.tokens),
        six.map_or_else(|| OVERFLOW.to_owned(), human_flops),
        compared.unwrap_or_else(|| OVERFLOW.to_owned())
    ));
    doc.line(format!(
        "  {}",
        if r.lora.is_some() || r.states.frozen_params > 0 {
            "(a frozen weight needs no weight gradient: about 4·P per token, not 6·P; the adapters add a little)"
        } else if f.recompute > 0 {
            "(6·P has no recompute: checkpointing adds about one more forward, ~8·P per token)"
        } else {
            "(6·P counts every parameter in a matmul: the embedding lookup is not one, the s² attention scores are not in P)"
        }
    ));
}

/// What a table shows for a figure that does not fit its type: never a clamped number.
const OVERFLOW: &str = "overflow";

/// A positive quantity rounded to a whole number with thousands separators (`493,859`);
/// `overflow` when it is not a number in `0..2^64`.
fn whole(x: f64) -> String {
    whole_f64(x).map_or_else(|| OVERFLOW.to_owned(), thousands)
}

/// FLOPs held as `f64` (a run's), in words; `overflow` past `u128` or when not a number.
fn flops_f64(x: f64) -> String {
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss,
        reason = "checked to lie in 0..2^128 first"
    )]
    let n = (x.is_finite() && x >= 0.0 && x < u128::MAX as f64).then_some(x as u128);
    n.map_or_else(|| OVERFLOW.to_owned(), human_flops)
}

/// Training on `--tokens`: throughput, step time, FLOPs, wall time, GPU-hours and cost. CSV
/// gets plain numbers: times in seconds, cost in dollars.
fn time_cost(doc: &mut Doc, t: &TimeCost) {
    doc.blank().heading(format!(
        "training on {} tokens with {} GPUs at {:.0}% MFU",
        human_count(t.tokens),
        t.gpus,
        t.mfu * 100.0
    ));
    let mut table = Table::new(
        "training_run",
        vec![
            Column::left("quantity").csv("item"),
            Column::right("value").csv("value (seconds for times, dollars for cost)"),
        ],
    );
    let rows = [
        (
            "tokens/s",
            Cell::with_raw(whole(t.tokens_per_second), Raw::Float(t.tokens_per_second)),
        ),
        (
            "time per step",
            Cell::with_raw(human_seconds(t.step_seconds), Raw::Float(t.step_seconds)),
        ),
        ("tokens per step", Cell::count(t.tokens_per_step)),
        (
            "FLOPs in all",
            Cell::with_raw(flops_f64(t.run_flops), Raw::Float(t.run_flops)),
        ),
        (
            "FLOPs by 6·P·D",
            Cell::with_raw(flops_f64(t.six_pd), Raw::Float(t.six_pd)),
        ),
        (
            "wall time",
            Cell::with_raw(human_seconds(t.seconds), Raw::Float(t.seconds)),
        ),
        (
            "GPU-hours",
            Cell::with_raw(whole(t.gpu_hours), Raw::Float(t.gpu_hours)),
        ),
    ];
    for (k, c) in rows {
        table.push(vec![Cell::text(k), c]);
    }
    if let Some(c) = t.cost {
        table.push(vec![
            Cell::text("cost").tone(Tone::Strong),
            Cell::with_raw(
                whole_f64(c).map_or_else(|| OVERFLOW.to_owned(), |n| format!("${}", thousands(n))),
                Raw::Float(c),
            )
            .tone(Tone::Strong),
        ]);
    }
    doc.table(table);
}

/// What the article's "training ≈ 8P bytes" and "LLaMA 7B training ≈ 56 GB" assume, against
/// this report: prose, one wrapped line per point.
fn article_notes(doc: &mut Doc, r: &TrainReport) {
    let s = &r.states;
    let eight_p =
        (Checked::new(u128::from(s.trainable_params)) + u128::from(s.frozen_params)) * 8u128;
    doc.line("The article's rules of thumb, against this step:");
    doc.line(format!(
        "- \"training ≈ 8P bytes\" ({}): 2 bytes of bf16 weights + 2 of gradients + 4 of \
         Adam states only fits 8-bit Adam; torch AdamW on bf16 parameters holds \
         2 + 2 + 4 = 8 bytes, but keeps no fp32 master copy, which mixed precision \
         needs: 2 + 2 + 12 = 16 bytes per parameter (DeepSpeed), 18 with Megatron's \
         fp32 gradients — before any activation.",
        eight_p.ok().map_or_else(|| OVERFLOW.to_owned(), gib)
    ));
    doc.line(format!(
        "- \"LLaMA 7B needs about 56 GB\" is 8 bytes × 7B: here the model states alone are {}, \
         and the activations add {} at this batch and length (the fp32 log-probs of a \
         large vocabulary, 4·b·s·V, are among them).",
        gib(s.total_bytes),
        gib(r.activations.forward_peak)
    ));
}
