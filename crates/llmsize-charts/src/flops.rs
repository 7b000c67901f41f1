//! FLOPs of a forward pass by component, side by side for several models, and over a
//! `--sweep` of context lengths or batches as lines.

use llmsize_core::flops::FlopsReport;
use llmsize_core::units::{human_flops, thousands, thousands_u128};
use llmsize_engine::{FlopsOutcome, FlopsPoint, SweepAxis, Swept};
use plotters::style::RGBColor;

use crate::draw::{HBar, HBars, HRow, Header, Line, Lines, bound, series_color};
use crate::units::flops_scale;
use crate::{ChartError, MAX_POINTS, MAX_SERIES};

/// The colour of a FLOPs line, matching the parameter component it multiplies by.
fn key_color(key: &str) -> RGBColor {
    match key {
        "attention_projections" => RGBColor(0xf2, 0x8e, 0x2b),
        "attention_scores" => RGBColor(0xe1, 0x57, 0x59),
        "attention_values" => RGBColor(0xff, 0x9d, 0xa7),
        "ffn" => RGBColor(0x59, 0xa1, 0x4f),
        "moe_router" => RGBColor(0xb6, 0x99, 0x2d),
        "moe_experts_active" => RGBColor(0x8c, 0xd1, 0x7d),
        "moe_shared_experts" => RGBColor(0x3b, 0x7a, 0x35),
        "output_head" => RGBColor(0xb0, 0x7a, 0xa1),
        _ => RGBColor(0x49, 0x98, 0x94),
    }
}

/// `llmsize flops` as SVG. One point per model: the forward pass's FLOPs by component (the
/// table's keys: `attention_projections`, `attention_scores`, `ffn`, …) with their exact
/// counts, several models side by side. A sweep of `seq_len` or `batch`: the forward FLOPs of
/// each model against the swept value, every point's exact count in a table. A sweep of
/// formats or GPUs (which change the speed, not the FLOPs): bars per value.
///
/// # Errors
/// [`ChartError::Empty`] without a point, [`ChartError::TooMany`] past [`MAX_SERIES`] bars per
/// component or [`MAX_POINTS`] points.
pub fn flops_svg(outcome: &FlopsOutcome) -> Result<String, ChartError> {
    if outcome.points.is_empty() {
        return Err(ChartError::Empty("no model".to_owned()));
    }
    match outcome.sweep {
        Some(axis @ (SweepAxis::SeqLen | SweepAxis::Batch)) => lines(outcome, axis),
        _ => bars(&outcome.points),
    }
}

fn question(r: &FlopsReport) -> String {
    format!(
        "a forward pass over {} tokens × batch {}, attention {}",
        thousands(r.seq_len),
        r.batch,
        if r.generates {
            r.convention.name()
        } else {
            "bidirectional"
        }
    )
}

fn label(p: &FlopsPoint, several: bool) -> String {
    match (&p.swept, several) {
        (Some(v), true) => format!("{} · {}", p.name, v.label()),
        (Some(v), false) => v.label(),
        (None, _) => p.name.clone(),
    }
}

fn bars(points: &[FlopsPoint]) -> Result<String, ChartError> {
    bound("bars per component", points.len(), MAX_SERIES)?;
    let several_models = points.windows(2).any(|w| match w {
        [a, b] => a.name != b.name,
        _ => false,
    });
    // Keys in the order the reports give them.
    let mut keys: Vec<&'static str> = Vec::new();
    for p in points {
        for l in p.report.forward.iter().filter(|l| l.flops > 0) {
            if !keys.contains(&l.key) {
                keys.push(l.key);
            }
        }
    }
    let value = |p: &FlopsPoint, key: &str| {
        p.report
            .forward
            .iter()
            .filter(|l| l.key == key)
            .map(|l| l.flops)
            .fold(0u128, u128::saturating_add)
    };
    let one = points.len() == 1;
    let rows: Vec<HRow> = keys
        .iter()
        .map(|key| HRow {
            label: (*key).to_owned(),
            color: key_color(key),
            bars: points
                .iter()
                .enumerate()
                .map(|(i, p)| HBar {
                    series: i,
                    value: value(p, key),
                    note: if one {
                        share(value(p, key), p.report.forward_flops)
                    } else {
                        label(p, several_models)
                    },
                })
                .collect(),
        })
        .collect();
    let max = rows
        .iter()
        .flat_map(|r| r.bars.iter().map(|b| b.value))
        .max()
        .unwrap_or(0);
    let mut lines = Vec::new();
    for p in points {
        let who = if one {
            String::new()
        } else {
            format!(
                "{} ({} tokens × batch {}): ",
                label(p, several_models),
                thousands(p.report.seq_len),
                p.report.batch
            )
        };
        lines.push(format!(
            "{who}forward {} FLOPs ({}); one generated token {} FLOPs",
            thousands_u128(p.report.forward_flops),
            human_flops(p.report.forward_flops),
            thousands_u128(p.report.per_token_flops),
        ));
    }
    let first = points.first().map(|p| &p.report);
    let title = match (points, first) {
        ([p], Some(r)) => format!("{}: FLOPs of {}", p.name, question(r)),
        (_, Some(_)) => format!("FLOPs of a forward pass: {}", names(points)),
        _ => "FLOPs".to_owned(),
    };
    HBars {
        header: Header { title, lines },
        axis: "forward FLOPs".to_owned(),
        scale: flops_scale(max),
        series: points.iter().map(|p| label(p, several_models)).collect(),
        rows,
        notes: vec![
            "a multiply-add is 2 FLOPs; embedding lookups, norms, activations, softmax and biases count 0"
                .to_owned(),
        ],
    }
    .svg()
}

fn names(points: &[FlopsPoint]) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for p in points {
        if !seen.contains(&p.name.as_str()) {
            seen.push(&p.name);
        }
    }
    seen.join(" vs ")
}

fn share(part: u128, whole: u128) -> String {
    if whole == 0 {
        return "-".to_owned();
    }
    // Permyriad in integers, so that no float enters the text; a part too large to multiply
    // is divided by whole/10⁴ instead (whole ≥ part is then ≥ 10⁴ as well).
    let bp = match part.checked_mul(10_000) {
        Some(p) => p / whole,
        None => part / (whole / 10_000).max(1),
    };
    format!("{}.{:02}%", bp / 100, bp % 100)
}

fn swept_number(v: Option<&Swept>) -> u64 {
    match v {
        Some(Swept::SeqLen(n) | Swept::Batch(n)) => *n,
        _ => 0,
    }
}

fn lines(outcome: &FlopsOutcome, axis: SweepAxis) -> Result<String, ChartError> {
    bound(
        "sweep points",
        outcome.points.len(),
        MAX_POINTS.saturating_mul(MAX_SERIES),
    )?;
    let mut series: Vec<Line> = Vec::new();
    let mut header_lines = Vec::new();
    for p in &outcome.points {
        let point = (swept_number(p.swept.as_ref()), p.report.forward_flops);
        if let Some(l) = series.iter_mut().find(|l| l.name == p.name) {
            l.points.push(point);
        } else {
            bound("models", series.len() + 1, MAX_SERIES)?;
            header_lines.push(format!(
                "{}: attention {}, {}",
                p.name,
                p.report.convention.name(),
                if axis == SweepAxis::SeqLen {
                    format!("batch {}", p.report.batch)
                } else {
                    format!("{} tokens", thousands(p.report.seq_len))
                }
            ));
            series.push(Line {
                name: p.name.clone(),
                color: series_color(series.len()),
                dashed: false,
                points: vec![point],
            });
        }
    }
    let what = match axis {
        SweepAxis::Batch => "batch",
        _ => "context length",
    };
    Lines {
        header: Header {
            title: format!(
                "{}: FLOPs of a forward pass by {what}",
                names(&outcome.points)
            ),
            lines: header_lines,
        },
        x_axis: axis.as_str().to_owned(),
        y_axis: "forward FLOPs".to_owned(),
        series,
        capacity: None,
        notes: vec![
            "a multiply-add is 2 FLOPs; attention's share grows with the context (s² pairs)"
                .to_owned(),
        ],
    }
    .svg(flops_scale)
}

#[cfg(test)]
mod tests {
    use super::share;

    #[test]
    fn shares_are_integer_permyriad() {
        assert_eq!(share(1, 3), "33.33%");
        assert_eq!(share(u128::MAX, u128::MAX), "100.00%");
        assert_eq!(share(u128::MAX / 2, u128::MAX), "50.00%");
        assert_eq!(share(5, 0), "-");
    }
}
