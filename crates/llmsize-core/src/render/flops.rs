//! `llmsize flops`: the forward pass and one generated token by component, the article's
//! 2·P and 6·P next to them, and the roofline speed when a GPU is named — as a [`Doc`], so
//! the same tables print on a terminal (fitted to its width), as Markdown or as CSV with the
//! exact FLOPs, bytes, seconds, tokens/s and dollars behind the words.

use super::doc::{Cell, Column, Doc, Raw, Table, Tone};
use crate::checked::Checked;
use crate::flops::{AttentionConvention, FlopsLine, FlopsReport};
use crate::speed::{SpeedReport, StepEstimate};
use crate::units::{bytes_both, human_flops, human_seconds, thousands, thousands_u128, whole_f64};

/// FLOPs in words (`28.2 TFLOP`) with the exact count behind them for CSV.
fn flops_cell(n: u128) -> Cell {
    let raw = i128::try_from(n).map_or_else(|_| Raw::Float(to_f64(n)), Raw::Int);
    Cell::with_raw(human_flops(n), raw)
}

#[expect(
    clippy::cast_precision_loss,
    reason = "only past i128::MAX, which no FLOP count reaches"
)]
fn to_f64(n: u128) -> f64 {
    n as f64
}

/// Seconds in a readable unit (`32.19 ms`); CSV gets the seconds.
fn seconds_cell(s: f64) -> Cell {
    Cell::with_raw(human_seconds(s), Raw::Float(s))
}

/// A rate rounded to a whole number with thousands separators (`19,002`); CSV gets the rate.
/// `overflow` when the figure is not a whole number in `0..2^64`, never a clamped value.
fn whole_rate_cell(x: f64) -> Cell {
    let text = whole_f64(x).map_or_else(|| OVERFLOW.to_owned(), thousands);
    Cell::with_raw(text, Raw::Float(x))
}

/// What a table shows for a figure that is not a finite number.
const OVERFLOW: &str = "overflow";

/// A rate with one decimal (`248.5`); CSV gets the rate; `overflow` when not finite.
fn rate_cell(x: f64) -> Cell {
    let text = if x.is_finite() {
        format!("{x:.1}")
    } else {
        OVERFLOW.to_owned()
    };
    Cell::with_raw(text, Raw::Float(x))
}

/// `$1.234` per million tokens, or `-` without a price; CSV gets the dollars; `overflow`
/// when not finite.
fn cost_cell(step: &StepEstimate) -> Cell {
    step.cost_per_million.map_or_else(Cell::dash, |c| {
        // Past a trillion dollars the digits say nothing: exponent form (`$1.481e308`).
        let text = if !c.is_finite() {
            OVERFLOW.to_owned()
        } else if c.abs() >= 1e12 {
            format!("${c:.3e}")
        } else {
            format!("${c:.3}")
        };
        Cell::with_raw(text, Raw::Float(c))
    })
}

/// An exact count that may not fit 128 bits: the count, or `overflow`.
fn count_or_overflow(n: Checked<u128>) -> Cell {
    n.ok()
        .map_or_else(|| Cell::text(OVERFLOW), Cell::count_u128)
}

/// The fits verdict of a step: `yes` (good), `no` (bad) or `-` without a GPU's memory.
fn fits_cell(f: Option<bool>) -> Cell {
    match f {
        Some(true) => Cell::text("yes").tone(Tone::Good),
        Some(false) => Cell::text("no").tone(Tone::Bad),
        None => Cell::dash(),
    }
}

/// The attention convention as the report's model uses it: an encoder's self-attention is
/// bidirectional whatever `--attention` says.
#[must_use]
pub fn convention_text(r: &FlopsReport) -> String {
    let decoder = match r.convention {
        AttentionConvention::Full => {
            "full: scores over all s² query-key pairs (as torch's FlopCounterMode, PaLM, nanoGPT)"
        }
        AttentionConvention::Causal => {
            "causal: scores over the s(s+1)/2 pairs a causal mask keeps (Megatron, FlashAttention)"
        }
    };
    match (r.generates, r.has_encoder) {
        (false, _) => "bidirectional: every query sees all s keys, s² pairs (an encoder has no causal mask; `--attention` does not apply)".to_owned(),
        (true, true) => format!(
            "{decoder} in the decoder's self-attention; the encoder's self-attention and the cross-attention are bidirectional (s² pairs)"
        ),
        (true, false) => decoder.to_owned(),
    }
}

/// FLOPs by component: a row per component that costs any, then the total (its share column
/// shows the total in words). `explain` adds the formula, which folds under its row on a
/// narrow terminal.
fn components(name: &str, lines: &[FlopsLine], total: u128, label: &str, explain: bool) -> Table {
    let mut columns = vec![
        Column::left("component"),
        Column::right("FLOPs").csv("flops"),
        Column::right("share"),
    ];
    if explain {
        columns.push(Column::fold("formula"));
    }
    let mut t = Table::new(name, columns);
    for l in lines.iter().filter(|l| l.flops > 0) {
        let mut row = vec![
            Cell::text(l.key),
            Cell::count_u128(l.flops),
            Cell::share(l.flops, total),
        ];
        if explain {
            row.push(Cell::text(l.formula.clone()).tone(Tone::Dim));
        }
        t.push(row);
    }
    t.push(vec![
        Cell::text(label).tone(Tone::Strong),
        Cell::count_u128(total).tone(Tone::Strong),
        Cell::share(total, total).text_as(human_flops(total)),
    ]);
    t
}

/// The document for one model: the forward pass and one generated token by component, the
/// article's estimates beside the exact counts, and the roofline speed when a GPU is named.
#[must_use]
pub fn doc(name: &str, r: &FlopsReport, speed: Option<&SpeedReport>, explain: bool) -> Doc {
    let mut doc = Doc::new();
    if let Some(why) = &r.estimate {
        doc.toned(format!("ESTIMATE, not exact: {why}"), Tone::Warn);
    }
    doc.title(format!(
        "{name}: FLOPs of a forward pass over {} tokens × batch {}",
        thousands(r.seq_len),
        r.batch
    ))
    .line(format!(
        "convention: multiply-add = 2 FLOPs; embedding lookups, norms, activations, softmax and biases = 0; attention {}",
        convention_text(r)
    ))
    .blank()
    .table(components(
        "forward",
        &r.forward,
        r.forward_flops,
        "forward total",
        explain,
    ));
    if r.generates {
        doc.blank()
            .heading(format!(
                "one generated token with {} tokens of context (one sequence)",
                thousands(r.seq_len)
            ))
            .table(components(
                "per_token",
                &r.per_token,
                r.per_token_flops,
                "per token",
                explain,
            ));
    } else {
        doc.blank()
            .line("no generated tokens: an encoder reads its input in one pass");
    }
    doc.blank()
        .heading("the article's estimates")
        .table(estimates(r));
    doc.line(format!(
        "  why they differ: P counts the embedding tables, which cost no FLOPs (a lookup), and norms and biases; \
the matmuls use {} parameters per token{}; attention adds 4·n_h·d_h per key per layer, which grows with the context",
        thousands(r.matmul_params),
        if r.generates && r.has_encoder {
            " (a generated token runs the decoder only)"
        } else {
            ""
        }
    ));
    if let Some(s) = speed {
        speed_doc(&mut doc, r, s);
    }
    doc
}

/// The article's 2·P and 6·P per token beside the exact counts they estimate.
fn estimates(r: &FlopsReport) -> Table {
    // Twice and six times a u64 fit u128: these never overflow, and would say so.
    let two_p = Checked::new(u128::from(r.params)) * 2u128;
    let two_active = Checked::new(u128::from(r.active_params)) * 2u128;
    // A u64 product fits u128; `max(1)` keeps the divisor positive.
    let tokens = (Checked::new(u128::from(r.seq_len)) * u128::from(r.batch))
        .ok()
        .unwrap_or(u128::MAX)
        .max(1);
    let forward_per_token = r.forward_flops.checked_div(tokens).unwrap_or(0);
    let mut t = Table::new(
        "estimates",
        vec![
            Column::left("estimate"),
            Column::right("FLOPs").csv("flops"),
            Column::fold("against the exact count"),
        ],
    );
    t.push(vec![
        Cell::text("2·P per token"),
        count_or_overflow(two_p),
        Cell::text(if r.generates {
            format!("exact {} per token", thousands_u128(r.per_token_flops))
        } else {
            format!(
                "exact {} per token of the forward (forward / tokens)",
                thousands_u128(forward_per_token)
            )
        }),
    ]);
    t.push(vec![
        Cell::text("2·P_active per token"),
        count_or_overflow(two_active),
        Cell::text("(MoE: only the routed experts a token uses)"),
    ]);
    t.push(vec![
        Cell::text("6·P_active per training token"),
        count_or_overflow(two_active * 3u128),
        Cell::text("(fwd 2·P + bwd 4·P; Kaplan, EleutherAI)"),
    ]);
    t.push(vec![
        Cell::text("6·P per training token"),
        count_or_overflow(two_p * 3u128),
        Cell::text(format!(
            "exact 3 × forward per token = {}",
            (Checked::new(forward_per_token) * 3u128)
                .ok()
                .map_or_else(|| OVERFLOW.to_owned(), thousands_u128)
        )),
    ]);
    t
}

/// The roofline section: time to first token and decode (time, tokens/s, $ per million
/// tokens, bytes moved), decode by batch, and what the estimate assumes.
fn speed_doc(doc: &mut Doc, r: &FlopsReport, s: &SpeedReport) {
    doc.blank().heading(format!(
        "speed on {} × {} (roofline estimate)",
        s.options.gpus, s.options.gpu.name
    ));
    let step_fits = s.decode.as_ref().map_or(s.prefill.fits, |d| d.fits);
    if step_fits == Some(false) {
        let need = s
            .decode
            .as_ref()
            .map_or(s.prefill.memory_per_gpu, |d| d.memory_per_gpu);
        doc.toned(
            format!(
                "  warning: does not fit: needs {} per GPU, has {} (see `llmsize memory`); the times assume it did",
                bytes_both(need),
                bytes_both(s.options.gpu.memory_bytes)
            ),
            Tone::Bad,
        );
    }
    let mut t = Table::new(
        "speed",
        vec![
            Column::left("step"),
            Column::right("time").csv("seconds"),
            Column::right("tokens/s").csv("tokens_per_second"),
            Column::right("$/M tokens").csv("usd_per_million_tokens"),
            Column::right("bytes moved").csv("bytes"),
            Column::left("bound"),
            Column::fold("what"),
        ],
    );
    let p = &s.prefill;
    t.push(vec![
        Cell::text(if r.generates {
            "time to first token"
        } else {
            "forward"
        }),
        seconds_cell(p.seconds),
        whole_rate_cell(p.tokens_per_second),
        cost_cell(p),
        Cell::bytes(p.bytes),
        Cell::text(p.bound),
        Cell::text(format!(
            "prefill of {} tokens × batch {}: {}, {} B moved{}{}",
            thousands(s.prompt),
            p.batch,
            human_flops(p.flops),
            thousands(p.bytes),
            if p.cache_bytes > 0 {
                " (weights read, KV cache written)"
            } else {
                " (weights read)"
            },
            if p.cost_per_million.is_some() {
                "; $ per million prompt tokens"
            } else {
                ""
            }
        ))
        .tone(Tone::Dim),
    ]);
    if let Some(d) = &s.decode {
        t.push(vec![
            Cell::text("decode step"),
            seconds_cell(d.seconds),
            rate_cell(d.tokens_per_second),
            cost_cell(d),
            Cell::bytes(d.bytes),
            Cell::text(d.bound),
            Cell::text(format!(
                "batch {}, {:.1} tokens/s per sequence: {} B read (weights {} + KV cache {}), {}{}",
                d.batch,
                1.0 / d.seconds,
                thousands(d.bytes),
                thousands(d.weights.bytes),
                thousands(d.cache_bytes),
                human_flops(d.flops),
                if d.cost_per_million.is_some() {
                    "; $ per million generated tokens"
                } else {
                    ""
                }
            ))
            .tone(Tone::Dim),
        ]);
    }
    doc.table(t);
    if !s.by_batch.is_empty() {
        doc.blank().heading(format!(
            "decode by batch ({} tokens of context)",
            thousands(s.context)
        ));
        let mut t = Table::new(
            "decode_by_batch",
            vec![
                Column::right("batch"),
                Column::right("bytes read").csv("bytes"),
                Column::left("bound"),
                Column::right("step").csv("seconds"),
                Column::right("tokens/s").csv("tokens_per_second"),
                Column::right("per sequence").csv("tokens_per_second_per_sequence"),
                Column::right("$/M tokens").csv("usd_per_million_tokens"),
                Column::left("fits"),
            ],
        );
        for d in &s.by_batch {
            t.push(vec![
                Cell::count(d.batch),
                Cell::bytes(d.bytes),
                Cell::text(d.bound),
                seconds_cell(d.seconds),
                rate_cell(d.tokens_per_second),
                rate_cell(1.0 / d.seconds),
                cost_cell(d),
                fits_cell(d.fits),
            ]);
        }
        doc.table(t);
    }
    for a in &s.assumptions {
        doc.line(format!("  - {a}"));
    }
}

/// One column of a comparison or one row of a sweep: a label, the FLOPs and the speed.
pub type FlopsPoint<'a> = (String, &'a FlopsReport, Option<&'a SpeedReport>);

/// The cells of one sweep point: FLOPs, and the roofline when a GPU was named.
fn cells(r: &FlopsReport, s: Option<&SpeedReport>, with_speed: bool) -> Vec<Cell> {
    let dash = || Cell::dash();
    let mut c = vec![
        Cell::count(r.seq_len),
        Cell::count(r.batch),
        flops_cell(r.forward_flops),
        if r.generates {
            flops_cell(r.per_token_flops)
        } else {
            dash()
        },
    ];
    if with_speed {
        match s {
            None => c.extend(std::iter::repeat_with(dash).take(SPEED_COLUMNS.len())),
            Some(s) => {
                let d = s.decode.as_ref();
                c.extend([
                    Cell::text(format!("{} × {}", s.options.gpus, s.options.gpu.name)),
                    seconds_cell(s.prefill.seconds),
                    d.map_or_else(dash, |d| seconds_cell(d.seconds)),
                    d.map_or_else(dash, |d| rate_cell(d.tokens_per_second)),
                    d.map_or_else(dash, |d| Cell::text(d.bound)),
                    d.map_or_else(|| cost_cell(&s.prefill), cost_cell),
                    fits_cell(d.map_or(s.prefill.fits, |d| d.fits)),
                ]);
            }
        }
    }
    c
}

/// The speed columns of a sweep: header, CSV name, right-aligned.
const SPEED_COLUMNS: [(&str, &str, bool); 7] = [
    ("GPU", "gpu", false),
    ("first token", "first_token_seconds", true),
    ("decode step", "decode_step_seconds", true),
    ("tokens/s", "decode_tokens_per_second", true),
    ("bound", "bound", false),
    ("$/M tokens", "usd_per_million_tokens", true),
    ("fits", "fits", false),
];

/// A sweep of one model: a row per value, then what every point assumes (once) and what
/// depends on the value (under the value).
#[must_use]
pub fn sweep_doc(name: &str, axis: &str, points: &[FlopsPoint<'_>]) -> Doc {
    let with_speed = points.iter().any(|(_, _, s)| s.is_some());
    let numeric_axis = matches!(axis, "seq_len" | "batch");
    let mut columns = vec![
        if numeric_axis {
            Column::right(axis)
        } else {
            Column::left(axis)
        },
        Column::right("seq_len"),
        Column::right("batch"),
        Column::right("forward").csv("forward_flops"),
        Column::right("per token").csv("per_token_flops"),
    ];
    if with_speed {
        columns.extend(SPEED_COLUMNS.iter().map(|(h, csv, right)| {
            if *right {
                Column::right(*h).csv(*csv)
            } else {
                Column::left(*h).csv(*csv)
            }
        }));
    }
    let mut rows: Vec<Vec<Cell>> = points
        .iter()
        .map(|(label, r, s)| {
            let first = match axis {
                "seq_len" => Cell::count(r.seq_len),
                "batch" => Cell::count(r.batch),
                _ => Cell::text(label.clone()),
            };
            std::iter::once(first)
                .chain(cells(r, *s, with_speed))
                .collect()
        })
        .collect();
    // The swept option is the first column: its own column again would repeat it.
    let repeated = match axis {
        "seq_len" => Some(1),
        "batch" => Some(2),
        _ => None,
    };
    if let Some(c) = repeated {
        for row in &mut rows {
            if c < row.len() {
                row.remove(c);
            }
        }
        if c < columns.len() {
            columns.remove(c);
        }
    }
    let mut t = Table::new("sweep", columns);
    for row in rows {
        t.push(row);
    }
    let mut doc = Doc::new();
    doc.title(format!("{name}: FLOPs by {axis}"))
        .blank()
        .table(t);
    if let Some((_, r, _)) = points.first() {
        doc.line(format!("attention {}", convention_text(r)));
    }
    // What every point assumes is said once; what depends on the value, under the value.
    let speeds: Vec<(&String, &SpeedReport)> = points
        .iter()
        .filter_map(|(l, _, s)| s.map(|s| (l, s)))
        .collect();
    if let Some((_, first)) = speeds.first() {
        let common: Vec<&String> = first
            .assumptions
            .iter()
            .filter(|a| speeds.iter().all(|(_, s)| s.assumptions.contains(a)))
            .collect();
        for a in &common {
            doc.line(format!("  - {a}"));
        }
        for (label, s) in &speeds {
            for a in s.assumptions.iter().filter(|a| !common.contains(a)) {
                doc.line(format!("  - {axis} {label}: {a}"));
            }
        }
    }
    doc
}

/// Several models side by side: a column each, a row per quantity. On a narrow terminal the
/// models split into groups, each with the row labels.
#[must_use]
pub fn comparison_doc(points: &[FlopsPoint<'_>]) -> Doc {
    let with_speed = points.iter().any(|(_, _, s)| s.is_some());
    let mut t = Table::new(
        "comparison",
        std::iter::once(Column::left(""))
            .chain(points.iter().map(|(n, _, _)| Column::right(n.clone())))
            .collect(),
    );
    let mut add = |label: &str, f: &dyn Fn(&FlopsReport, Option<&SpeedReport>) -> Cell| {
        t.push(
            std::iter::once(Cell::text(label))
                .chain(points.iter().map(|(_, r, s)| f(r, *s)))
                .collect(),
        );
    };
    add("tokens × batch", &|r, _| {
        Cell::text(format!("{} × {}", thousands(r.seq_len), r.batch))
    });
    add("attention", &|r, _| {
        Cell::text(if r.generates {
            r.convention.name()
        } else {
            "bidirectional"
        })
    });
    add("parameters", &|r, _| Cell::count(r.params));
    add("active per token", &|r, _| Cell::count(r.active_params));
    add("matmul parameters per token", &|r, _| {
        Cell::count(r.matmul_params)
    });
    add("forward", &|r, _| flops_cell(r.forward_flops));
    add("per generated token", &|r, _| {
        if r.generates {
            flops_cell(r.per_token_flops)
        } else {
            Cell::text("- (encoder)")
        }
    });
    if with_speed {
        let dash = || Cell::dash();
        add("GPU", &|_, s| {
            s.map_or_else(dash, |s| {
                Cell::text(format!("{} × {}", s.options.gpus, s.options.gpu.name))
            })
        });
        add("time to first token", &|_, s| {
            s.map_or_else(dash, |s| seconds_cell(s.prefill.seconds))
        });
        add("decode tokens/s", &|_, s| {
            s.and_then(|s| s.decode.as_ref()).map_or_else(dash, |d| {
                rate_cell(d.tokens_per_second)
                    .text_as(format!("{:.1} ({} bound)", d.tokens_per_second, d.bound))
            })
        });
        add("$/M generated tokens", &|_, s| {
            s.and_then(|s| s.decode.as_ref())
                .map_or_else(dash, cost_cell)
        });
        add("fits", &|_, s| {
            s.map_or_else(dash, |s| {
                fits_cell(s.decode.as_ref().map_or(s.prefill.fits, |d| d.fits))
            })
        });
    }
    let mut doc = Doc::new();
    doc.table(t);
    doc
}
