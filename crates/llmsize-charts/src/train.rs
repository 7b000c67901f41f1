//! One training step's memory on the most loaded GPU, stacked term by term (weights,
//! gradients, optimizer states, activations, …) against the GPU's memory.

use llmsize_core::units::thousands_u128;
use llmsize_engine::TrainOutcome;
use plotters::style::RGBColor;

use crate::draw::{Capacity, Column, Header, Stacked, bound, series_color};
use crate::units::bytes_scale;
use crate::{ChartError, MAX_SERIES};

/// The colour of a term, by its key (the table's names); others take the series palette.
fn term_color(key: &str, i: usize) -> RGBColor {
    match key {
        "weights" => RGBColor(0x4e, 0x79, 0xa7),
        "gradients" => RGBColor(0xb0, 0x7a, 0xa1),
        "optimizer_states" => RGBColor(0xe1, 0x57, 0x59),
        "optimizer_step" => RGBColor(0xff, 0x9d, 0xa7),
        "gathered_units" => RGBColor(0x76, 0xb7, 0xb2),
        "activations" => RGBColor(0x59, 0xa1, 0x4f),
        "activations_outside" => RGBColor(0x8c, 0xd1, 0x7d),
        "activation_transient" => RGBColor(0xed, 0xc9, 0x48),
        _ => series_color(i + 5),
    }
}

/// `llmsize train` as SVG: the per-GPU memory of one training step as a stacked bar of its
/// terms (the table's keys, in its order, each with its exact bytes in the table under the
/// bar) against the named GPU's memory; memory kept in CPU RAM (offload) is said in a note.
///
/// # Errors
/// [`ChartError::TooMany`] past [`MAX_SERIES`] terms.
pub fn train_svg(outcome: &TrainOutcome) -> Result<String, ChartError> {
    let p = &outcome.report.per_gpu;
    bound("terms", p.terms.len(), MAX_SERIES)?;
    let items: Vec<(String, RGBColor)> = p
        .terms
        .iter()
        .enumerate()
        .map(|(i, t)| (t.key.clone(), term_color(&t.key, i)))
        .collect();
    let capacity = outcome.gpu.map(|(g, _)| Capacity {
        label: g.name.to_owned(),
        bytes: u128::from(g.memory_bytes),
    });
    let mut lines = vec![outcome.report.setup.clone()];
    if let Some((g, n)) = outcome.gpu {
        let cap = u128::from(g.memory_bytes);
        lines.push(if p.bytes <= cap {
            format!(
                "fits {n} × {}: {} of {} bytes per GPU",
                g.name,
                thousands_u128(p.bytes),
                thousands_u128(cap)
            )
        } else {
            format!(
                "does not fit {n} × {}: needs {} bytes per GPU, has {}",
                g.name,
                thousands_u128(p.bytes),
                thousands_u128(cap)
            )
        });
    }
    let mut notes = vec![format!("the most loaded GPU: {}", p.most_loaded)];
    if p.cpu_bytes > 0 {
        notes.push(format!(
            "and {} bytes per GPU kept in CPU memory (offload), not drawn",
            thousands_u128(p.cpu_bytes)
        ));
    }
    notes.extend(p.notes.iter().cloned());
    notes.push(
        "tensor storage; the CUDA context, allocator rounding and NCCL buffers come on top"
            .to_owned(),
    );
    if let Some(why) = &outcome.report.estimate {
        notes.push(format!("ESTIMATE: {why}"));
    }
    Stacked {
        header: Header {
            title: format!(
                "{}: memory per GPU of one training step{}",
                outcome.name,
                outcome
                    .gpu
                    .map(|(g, n)| format!(" on {n} × {}", g.name))
                    .unwrap_or_default()
            ),
            lines,
        },
        axis: "memory per GPU".to_owned(),
        items,
        columns: vec![Column {
            label: format!("{} · per GPU", outcome.name),
            values: p.terms.iter().map(|t| t.value).collect(),
            total: p.bytes,
            capacity,
        }],
        total_label: "per GPU".to_owned(),
        notes,
    }
    .svg(bytes_scale)
}
