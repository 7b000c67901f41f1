//! Memory to serve a model: stacked bars per GPU against the GPU's capacity, and, over a
//! `--sweep` of context lengths or batches, lines of memory and KV cache per GPU.

use llmsize_core::memory::MemoryReport;
use llmsize_core::units::{bytes_both, thousands};
use llmsize_engine::{MemoryOutcome, MemoryResult, ModelMemory, SweepAxis, Swept};
use plotters::style::RGBColor;

use crate::draw::{Capacity, Column, Header, Line, Lines, Stacked, bound, series_color};
use crate::units::bytes_scale;
use crate::{ChartError, MAX_SERIES};

/// The items of a GPU's memory, bottom of the stack first, named as the table names them.
const ITEMS: [(&str, RGBColor); 5] = [
    ("weights", RGBColor(0x4e, 0x79, 0xa7)),
    ("KV cache", RGBColor(0xf2, 0x8e, 0x2b)),
    ("recurrent state", RGBColor(0x76, 0xb7, 0xb2)),
    ("activations", RGBColor(0x59, 0xa1, 0x4f)),
    ("runtime overhead", RGBColor(0xba, 0xb0, 0xac)),
];

/// Memory as SVG. Every model at one point: a stacked bar per model (per device when a
/// runtime placed it over several GPUs; per GPU under tensor parallelism) against the GPU's
/// memory, with the exact bytes of every segment in a table under the bars. A sweep of
/// `seq_len` or `batch`: total and KV cache per GPU against the swept value, every point's
/// bytes in a table. A sweep of formats or GPUs: a bar per value.
///
/// # Errors
/// [`ChartError::Empty`] without a model, [`ChartError::TooMany`] past [`MAX_SERIES`] bars or
/// [`crate::MAX_POINTS`] sweep points.
pub fn memory_svg(outcome: &MemoryOutcome) -> Result<String, ChartError> {
    if outcome.models.is_empty() {
        return Err(ChartError::Empty("no model".to_owned()));
    }
    bound("models", outcome.models.len(), MAX_SERIES)?;
    let numeric = outcome.models.iter().all(|m| {
        matches!(
            &m.result,
            MemoryResult::Sweep {
                axis: SweepAxis::SeqLen | SweepAxis::Batch,
                ..
            }
        )
    });
    if numeric {
        sweep_lines(&outcome.models)
    } else {
        bars(&outcome.models)
    }
}

/// The GPU asked for, as a capacity.
fn capacity(r: &MemoryReport) -> Option<Capacity> {
    r.options.gpu.map(|(g, _)| Capacity {
        label: g.name.to_owned(),
        bytes: u128::from(g.memory_bytes),
    })
}

/// The columns of one report: one per placed device, else one (per GPU).
fn columns(label: &str, r: &MemoryReport) -> Vec<Column> {
    let cap = capacity(r);
    if let Some(s) = &r.serving {
        return s
            .stages
            .iter()
            .map(|st| Column {
                label: format!("{label} · {}", st.device),
                values: [st.weights, st.kv, st.state, st.activations, st.overhead]
                    .map(u128::from)
                    .to_vec(),
                total: u128::from(st.total),
                capacity: if st.gpu { cap.clone() } else { None },
            })
            .collect();
    }
    let o = &r.options;
    // The report keeps the recurrent state whole; per GPU it is what the total leaves.
    let known = [
        r.weights_per_gpu,
        r.kv_per_gpu,
        r.activation_bytes,
        o.overhead_bytes,
    ]
    .iter()
    .fold(0u64, |a, b| a.saturating_add(*b));
    let state = r.per_gpu.saturating_sub(known);
    vec![Column {
        label: if o.tp > 1 {
            format!("{label} · per GPU (tp {})", o.tp)
        } else {
            label.to_owned()
        },
        values: [
            r.weights_per_gpu,
            r.kv_per_gpu,
            state,
            r.activation_bytes,
            o.overhead_bytes,
        ]
        .map(u128::from)
        .to_vec(),
        total: u128::from(r.per_gpu),
        capacity: cap,
    }]
}

/// What was asked, in the table's words.
fn question(r: &MemoryReport) -> String {
    let o = &r.options;
    format!(
        "{} weights, {} tokens × batch {}{}{}{}",
        if r.weights_from_files {
            "the weight files' own"
        } else {
            o.format.name()
        },
        thousands(o.seq_len),
        o.batch,
        if r.encoder_only {
            ", an encoder: no KV cache".to_owned()
        } else {
            format!(", KV cache {}", o.kv_dtype.name())
        },
        if o.tp > 1 {
            format!(", tensor parallel {}", o.tp)
        } else {
            String::new()
        },
        match &r.serving {
            Some(s) if s.pp > 1 => format!(
                "; as {} places it over {} pipeline stages",
                s.runtime.name(),
                s.pp
            ),
            Some(s) => format!("; as {} places it", s.runtime.name()),
            None => String::new(),
        }
    )
}

/// What stays fixed over a sweep of `axis`.
fn sweep_question(r: &MemoryReport, axis: SweepAxis) -> String {
    let o = &r.options;
    let weights = if r.weights_from_files {
        "the weight files' own"
    } else {
        o.format.name()
    };
    let kv = if r.encoder_only {
        "an encoder: no KV cache".to_owned()
    } else {
        format!("KV cache {}", o.kv_dtype.name())
    };
    match axis {
        SweepAxis::Batch => format!(
            "{weights} weights, {} tokens per sequence, {kv}",
            thousands(o.seq_len)
        ),
        _ => format!("{weights} weights, batch {}, {kv}", o.batch),
    }
}

fn verdict(name: &str, r: &MemoryReport) -> Option<String> {
    let (gpu, _) = r.options.gpu?;
    Some(if r.fits? {
        format!(
            "{name} fits: {} of {} per GPU",
            bytes_both(r.per_gpu),
            bytes_both(gpu.memory_bytes)
        )
    } else {
        format!(
            "{name} does not fit: needs {} per GPU, has {}",
            bytes_both(r.per_gpu),
            bytes_both(gpu.memory_bytes)
        )
    })
}

fn on_gpu(r: &MemoryReport) -> String {
    r.options
        .gpu
        .map(|(g, n)| format!(" on {n} × {}", g.name))
        .unwrap_or_default()
}

fn bars(models: &[ModelMemory]) -> Result<String, ChartError> {
    let mut cols = Vec::new();
    let mut lines = Vec::new();
    let mut notes = Vec::new();
    let mut first: Option<&MemoryReport> = None;
    let several = models.len() > 1;
    for m in models {
        match &m.result {
            MemoryResult::Single { report, .. } => {
                first.get_or_insert(report);
                bound("bars", cols.len(), MAX_SERIES)?;
                cols.extend(columns(&m.name, report));
                lines.push(if several {
                    format!("{}: {}", m.name, question(report))
                } else {
                    question(report)
                });
                lines.extend(verdict(&m.name, report));
                if let Some(why) = &report.estimate {
                    notes.push(format!("{}: ESTIMATE: {why}", m.name));
                }
            }
            MemoryResult::Sweep { axis, points } => {
                bound("bars", cols.len() + points.len(), MAX_SERIES)?;
                for (v, r) in points {
                    first.get_or_insert(r);
                    let label = if several {
                        format!("{} · {}", m.name, v.label())
                    } else {
                        v.label()
                    };
                    cols.extend(columns(&label, r));
                }
                lines.push(format!("{}: by {}", m.name, axis.as_str()));
            }
        }
        bound("bars", cols.len(), MAX_SERIES)?;
    }
    let names: Vec<&str> = models.iter().map(|m| m.name.as_str()).collect();
    let title = match (models, first) {
        ([m], Some(r)) => format!("{}: memory to serve{}", m.name, on_gpu(r)),
        (_, Some(r)) => format!("Memory to serve{}: {}", on_gpu(r), names.join(" vs ")),
        _ => format!("Memory to serve: {}", names.join(" vs ")),
    };
    if first.is_some_and(|r| r.serving.is_some() || r.options.tp > 1) {
        notes.push(
            "each bar is one GPU (the figures of every GPU of a tensor-parallel stage)".to_owned(),
        );
    }
    notes.push("activations: a prefill workspace, an estimate; runtime overhead: CUDA context and allocator".to_owned());
    Stacked {
        header: Header { title, lines },
        axis: "memory per GPU".to_owned(),
        items: ITEMS.iter().map(|(n, c)| ((*n).to_owned(), *c)).collect(),
        columns: cols,
        total_label: "total per GPU".to_owned(),
        notes,
    }
    .svg(bytes_scale)
}

fn swept_number(v: &Swept) -> u64 {
    match v {
        Swept::SeqLen(n) | Swept::Batch(n) => *n,
        Swept::Dtype(_) | Swept::Gpu(_) => 0,
    }
}

fn sweep_lines(models: &[ModelMemory]) -> Result<String, ChartError> {
    let mut lines = Vec::new();
    let mut caps: Vec<Capacity> = Vec::new();
    let mut axis = SweepAxis::SeqLen;
    let mut header_lines = Vec::new();
    for (i, m) in models.iter().enumerate() {
        let MemoryResult::Sweep { axis: a, points } = &m.result else {
            continue;
        };
        axis = *a;
        bound("sweep points", points.len(), crate::MAX_POINTS)?;
        let color = series_color(i);
        lines.push(Line {
            name: format!("{}: total per GPU", m.name),
            color,
            dashed: false,
            points: points
                .iter()
                .map(|(v, r)| (swept_number(v), u128::from(r.per_gpu)))
                .collect(),
        });
        lines.push(Line {
            name: format!("{}: KV cache per GPU", m.name),
            color,
            dashed: true,
            points: points
                .iter()
                .map(|(v, r)| (swept_number(v), u128::from(r.kv_per_gpu)))
                .collect(),
        });
        if let Some((_, r)) = points.first() {
            header_lines.push(format!("{}: {}", m.name, sweep_question(r, *a)));
            caps.extend(capacity(r));
        }
        if let Some((v, r)) = points.iter().find(|(_, r)| r.fits == Some(false)) {
            header_lines.push(format!(
                "{}: does not fit from {} = {} ({} per GPU)",
                m.name,
                axis.as_str(),
                v.label(),
                bytes_both(r.per_gpu)
            ));
        }
    }
    caps.dedup();
    let capacity = match caps.as_slice() {
        [one] => Some(one.clone()),
        _ => None,
    };
    let what = match axis {
        SweepAxis::Batch => "batch",
        _ => "context length",
    };
    let names: Vec<&str> = models.iter().map(|m| m.name.as_str()).collect();
    Lines {
        header: Header {
            title: format!("{}: memory per GPU by {what}", names.join(" vs ")),
            lines: header_lines,
        },
        x_axis: axis.as_str().to_owned(),
        y_axis: "memory per GPU".to_owned(),
        series: lines,
        capacity,
        notes: vec![
            "solid: total per GPU (weights, KV cache, activations, overhead); dashed: KV cache per GPU".to_owned(),
        ],
    }
    .svg(bytes_scale)
}
