//! `llmsize train`: the step's memory and compute as tables, with `--explain` formulas and
//! what the article's rules of thumb assume.

use std::fmt::Write as _;

use super::columns;
use crate::gpu::Gpu;
use crate::train::fit::{Suggestion, TimeCost};
use crate::train::parallel::Parallelism;
use crate::train::{Term, TrainReport};
use crate::units::{human_count, human_flops, human_seconds, thousands, thousands_u128};

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

/// `12.55 GiB` for bytes (two decimals; small values in MiB or KiB so nothing reads 0.00).
fn gib(n: u128) -> String {
    #[expect(clippy::cast_precision_loss, reason = "display only")]
    let x = n as f64;
    if n >= 1 << 30 {
        format!("{:.2} GiB", x / f64::from(1u32 << 30))
    } else if n >= 1 << 20 {
        format!("{:.2} MiB", x / f64::from(1u32 << 20))
    } else if n >= 1 << 10 {
        format!("{:.2} KiB", x / 1024.0)
    } else {
        format!("{n} B")
    }
}

fn rows(title: &str, terms: &[Term], total: (&str, u128), explain: bool) -> String {
    let mut rows = vec![vec![title.to_owned(), "bytes".to_owned(), String::new()]];
    for t in terms {
        rows.push(vec![
            format!("  {}", t.key),
            thousands_u128(t.value),
            gib(t.value),
        ]);
    }
    rows.push(vec![
        total.0.to_owned(),
        thousands_u128(total.1),
        gib(total.1),
    ]);
    let mut out = columns(&rows, &[false, true, true]);
    out.push('\n');
    if explain {
        for t in terms {
            let _ = writeln!(out, "  {}: {}\n      {}", t.key, t.what, t.formula);
        }
    }
    out
}

/// Each term's words, then its formula with values and its value (`--explain`).
fn explain_terms(out: &mut String, terms: &[Term]) {
    for t in terms {
        let _ = writeln!(
            out,
            "  {}: {}\n      {} = {}",
            t.key,
            t.what,
            t.formula,
            thousands_u128(t.value)
        );
    }
}

/// Human tables.
#[must_use]
pub fn render(v: &View<'_>) -> String {
    let r = v.report;
    let mut out = String::new();
    if let Some(why) = &r.estimate {
        let _ = writeln!(out, "ESTIMATE, not exact: {why}\n");
    }
    let _ = writeln!(out, "{}: one training step, {}", v.name, r.setup);
    let p = v.parallel;
    if p.gpus() > 1 || p.zero > 0 {
        let _ = writeln!(
            out,
            "layout: dp {} × tp {} × pp {} × cp {}{}{}{}{}",
            p.dp,
            p.tp,
            p.pp,
            p.cp,
            if p.ep > 1 {
                format!(", ep {}", p.ep)
            } else {
                String::new()
            },
            if p.zero > 0 {
                format!(", ZeRO-{}", p.zero)
            } else {
                String::new()
            },
            if p.sequence_parallel {
                ", sequence parallel"
            } else {
                ""
            },
            if p.offload_optimizer {
                ", optimizer offloaded"
            } else {
                ""
            },
        );
    }
    let s = &r.states;
    let _ = writeln!(
        out,
        "trained {} parameters ({} tensors), frozen {}",
        thousands(s.trainable_params),
        thousands(s.trainable_tensors),
        thousands(s.frozen_params)
    );
    if let Some(l) = &r.lora {
        let _ = writeln!(
            out,
            "LoRA r={} on {}{}",
            l.rank,
            l.resolved.join(", "),
            if l.dora { " (DoRA)" } else { "" }
        );
    }
    out.push('\n');
    let states_total = s.weights_bytes + s.gradient_bytes + s.optimizer_state_bytes;
    out.push_str(&rows(
        if r.per_gpu.gpus > 1 {
            "model states (whole model; per GPU below)"
        } else {
            "model states"
        },
        &s.terms,
        ("total", states_total),
        v.explain,
    ));
    out.push('\n');
    out.push_str(&rows(
        "activations held for backward",
        &r.activations.terms,
        ("total", r.activations.retained),
        v.explain,
    ));
    let extra = r
        .activations
        .forward_peak
        .saturating_sub(r.activations.retained);
    let _ = writeln!(
        out,
        "forward peak: {} (held + {} of temporaries alive at the peak: {})",
        gib(r.activations.forward_peak),
        gib(extra),
        r.activations
            .peak_terms
            .iter()
            .filter(|t| t.key != "retained")
            .map(|t| t.key.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    if v.explain {
        explain_terms(&mut out, &r.activations.peak_terms);
    }
    out.push('\n');
    let _ = writeln!(
        out,
        "per GPU: {} bytes = {} ({})",
        thousands_u128(r.per_gpu.bytes),
        gib(r.per_gpu.bytes),
        r.per_gpu.most_loaded
    );
    if v.explain {
        explain_terms(&mut out, &r.per_gpu.terms);
    }
    if r.per_gpu.cpu_bytes > 0 {
        let _ = writeln!(out, "in CPU memory per GPU: {}", gib(r.per_gpu.cpu_bytes));
        if v.explain {
            explain_terms(&mut out, &r.per_gpu.cpu_terms);
        }
    }
    for n in &r.per_gpu.notes {
        let _ = writeln!(out, "note: {n}");
    }
    if let Some((g, _)) = v.gpu {
        let cap = u128::from(g.memory_bytes);
        let fits = r.per_gpu.bytes <= cap;
        let _ = writeln!(
            out,
            "{}: {} per GPU → {}",
            g.name,
            gib(cap),
            if fits {
                format!("fits, {} free", gib(cap - r.per_gpu.bytes))
            } else {
                format!("does NOT fit, {} short", gib(r.per_gpu.bytes - cap))
            }
        );
        let _ = writeln!(
            out,
            "  (tensor storage; the CUDA context, allocator rounding and NCCL buffers come on top)"
        );
    }
    if !v.suggestions.is_empty() {
        out.push_str("\nwhat would make it fit (cheapest first):\n");
        let mut rows = Vec::new();
        for s in v.suggestions {
            rows.push(vec![
                format!("  {}", s.flags),
                gib(s.per_gpu_bytes),
                if s.fits {
                    "fits".into()
                } else {
                    "too big".into()
                },
            ]);
        }
        out.push_str(&columns(&rows, &[false, true, false]));
        out.push('\n');
        if v.explain {
            for s in v.suggestions {
                let _ = writeln!(out, "  {}: {}", s.flags, s.why);
            }
        }
    }
    for (what, v) in [("batch", v.max_batch), ("sequence length", v.max_seq)] {
        match v {
            Some(Some(n)) => {
                let _ = writeln!(out, "largest {what} that fits: {}", thousands(n));
            }
            Some(None) => {
                let _ = writeln!(out, "no {what} fits: even 1 is too much");
            }
            None => {}
        }
    }
    out.push('\n');
    let f = &r.flops;
    let _ = writeln!(
        out,
        "compute per step: {} (forward {}, backward {}{})",
        human_flops(f.train_step),
        human_flops(f.forward),
        human_flops(f.backward),
        if f.recompute > 0 {
            format!(", checkpoint recompute {}", human_flops(f.recompute))
        } else {
            String::new()
        }
    );
    let six = 6 * u128::from(r.params) * u128::from(r.tokens);
    let _ = writeln!(
        out,
        "  the article's 6·P·tokens = 6·{}·{} = {} ({})",
        human_count(r.params),
        thousands(r.tokens),
        human_flops(six),
        crate::units::relative(
            u64::try_from(six / 1_000_000).unwrap_or(u64::MAX),
            u64::try_from(f.train_step / 1_000_000)
                .unwrap_or(u64::MAX)
                .max(1)
        )
    );
    let _ = writeln!(
        out,
        "  {}",
        if r.lora.is_some() || r.states.frozen_params > 0 {
            "(a frozen weight needs no weight gradient: about 4·P per token, not 6·P; the adapters add a little)"
        } else if f.recompute > 0 {
            "(6·P has no recompute: checkpointing adds about one more forward, ~8·P per token)"
        } else {
            "(6·P counts every parameter in a matmul: the embedding lookup is not one, the s² attention scores are not in P)"
        }
    );
    if v.explain {
        explain_terms(&mut out, &f.terms);
    }
    if let Some(t) = v.time {
        out.push('\n');
        let _ = writeln!(
            out,
            "training on {} tokens with {} GPUs at {:.0}% MFU:",
            human_count(t.tokens),
            t.gpus,
            t.mfu * 100.0
        );
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "display"
        )]
        let _ = writeln!(
            out,
            "  {:.0} tokens/s, {} per step of {} tokens; {} in all ({} by 6·P·D)",
            t.tokens_per_second,
            human_seconds(t.step_seconds),
            thousands(t.tokens_per_step),
            human_flops(t.run_flops as u128),
            human_flops(t.six_pd as u128)
        );
        let _ = writeln!(
            out,
            "  wall time {}, {:.0} GPU-hours{}",
            human_seconds(t.seconds),
            t.gpu_hours,
            t.cost.map_or(String::new(), |c| format!(", ${c:.0}"))
        );
    }
    if v.explain {
        out.push('\n');
        out.push_str(&article_notes(r));
    }
    out
}

/// What the article's "training ≈ 8P bytes" and "LLaMA 7B training ≈ 56 GB" assume, against
/// this report.
fn article_notes(r: &TrainReport) -> String {
    let s = &r.states;
    let n = u128::from(s.trainable_params + s.frozen_params);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "The article's rules of thumb, against this step:\n\
         - \"training ≈ 8P bytes\" ({}): 2 bytes of bf16 weights + 2 of gradients + 4 of\n\
         \x20 Adam states only fits 8-bit Adam; torch AdamW on bf16 parameters holds\n\
         \x20 2 + 2 + 4 = 8 bytes, but keeps no fp32 master copy, which mixed precision\n\
         \x20 needs: 2 + 2 + 12 = 16 bytes per parameter (DeepSpeed), 18 with Megatron's\n\
         \x20 fp32 gradients — before any activation.",
        gib(8 * n)
    );
    let _ = writeln!(
        out,
        "- \"LLaMA 7B needs about 56 GB\" is 8 bytes × 7B: here the model states alone are {},\n\
         \x20 and the activations add {} at this batch and length (the fp32 log-probs of a\n\
         \x20 large vocabulary, 4·b·s·V, are among them).",
        gib(s.weights_bytes + s.gradient_bytes + s.optimizer_state_bytes),
        gib(r.activations.forward_peak)
    );
    out
}
