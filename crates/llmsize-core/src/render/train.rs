//! `llmsize train`: the step's memory and compute as a table, with `--explain` formulas.

use std::fmt::Write as _;

use super::columns;
use crate::gpu::Gpu;
use crate::train::{Term, TrainReport};
use crate::units::{bytes_both, human_flops, thousands, thousands_u128};

fn b(n: u128) -> String {
    bytes_both(u64::try_from(n).unwrap_or(u64::MAX))
}

fn section(out: &mut String, title: &str, terms: &[Term], total: (&str, u128), explain: bool) {
    let mut rows = vec![vec![
        title.to_owned(),
        "bytes".to_owned(),
        "GiB (GB)".to_owned(),
        "what".to_owned(),
    ]];
    for t in terms {
        rows.push(vec![
            format!("  {}", t.key),
            thousands_u128(t.value),
            b(t.value),
            if explain {
                format!("{}: {}", t.what, t.formula)
            } else {
                t.what.clone()
            },
        ]);
    }
    rows.push(vec![
        total.0.to_owned(),
        thousands_u128(total.1),
        b(total.1),
        String::new(),
    ]);
    out.push_str(&columns(&rows, &[false, true, true, false]));
    out.push('\n');
}

/// Human table; `explain` adds every formula.
#[must_use]
pub fn render(name: &str, r: &TrainReport, gpu: Option<(&Gpu, u64)>, explain: bool) -> String {
    let mut out = String::new();
    if let Some(why) = &r.estimate {
        let _ = writeln!(out, "ESTIMATE, not exact: {why}");
    }
    let _ = writeln!(out, "{name}: one training step, {}\n", r.setup);
    let s = &r.states;
    let _ = writeln!(
        out,
        "trained parameters {} ({} tensors), frozen {}",
        thousands(s.trainable_params),
        thousands(s.trainable_tensors),
        thousands(s.frozen_params)
    );
    if let Some(l) = &r.lora {
        let _ = writeln!(
            out,
            "LoRA r={} on {} ({} adapter parameters)",
            l.rank,
            l.resolved.join(", "),
            thousands(l.trainable)
        );
    }
    out.push('\n');
    let states_total = s.weights_bytes + s.gradient_bytes + s.optimizer_state_bytes;
    section(
        &mut out,
        "model states",
        &s.terms,
        ("model states", states_total),
        explain,
    );
    out.push('\n');
    section(
        &mut out,
        "activations",
        &r.activations.terms,
        ("held for backward", r.activations.retained),
        explain,
    );
    let _ = writeln!(
        out,
        "forward peak (held + the loss's transients): {} bytes, {}",
        thousands_u128(r.activations.forward_peak),
        b(r.activations.forward_peak)
    );
    out.push('\n');
    let _ = writeln!(
        out,
        "per GPU ({}): {} bytes, {}",
        r.per_gpu.most_loaded,
        thousands_u128(r.per_gpu.bytes),
        b(r.per_gpu.bytes)
    );
    if let Some((g, n)) = gpu {
        let cap = u128::from(g.memory_bytes);
        let _ = writeln!(
            out,
            "{} ({}× {}): {}",
            g.name,
            n,
            b(cap),
            if r.per_gpu.bytes <= cap {
                "fits"
            } else {
                "does NOT fit"
            }
        );
    }
    out.push('\n');
    let _ = writeln!(
        out,
        "compute: {} FLOPs per step (forward {}, backward {}, recompute {})",
        human_flops(r.flops.train_step),
        human_flops(r.flops.forward),
        human_flops(r.flops.backward),
        human_flops(r.flops.recompute)
    );
    if explain {
        for t in &r.flops.terms {
            let _ = writeln!(
                out,
                "  {}: {} = {}",
                t.key,
                t.formula,
                thousands_u128(t.value)
            );
        }
    }
    out
}
