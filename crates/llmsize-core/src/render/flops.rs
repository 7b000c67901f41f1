//! `llmsize flops`: the forward pass and one generated token by component, the article's
//! 2·P and 6·P next to them, and the roofline speed when a GPU is named.

use std::fmt::Write as _;

use super::columns;
use crate::flops::{AttentionConvention, FlopsReport};
use crate::speed::{SpeedReport, StepEstimate};
use crate::units::{bytes_both, human_flops, human_seconds, share, thousands, thousands_u128};

fn pct(part: u128, whole: u128) -> String {
    // Shares of u128 totals: scale down to u64 range first, exactness is not needed here.
    let shift = 128 - whole.leading_zeros().min(128);
    let s = shift.saturating_sub(60);
    share(
        u64::try_from(part >> s).unwrap_or(u64::MAX),
        u64::try_from(whole >> s).unwrap_or(u64::MAX),
    )
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

/// Human table; `explain` adds formulas.
#[must_use]
pub fn render(name: &str, r: &FlopsReport, speed: Option<&SpeedReport>, explain: bool) -> String {
    let mut out = String::new();
    if let Some(why) = &r.estimate {
        let _ = writeln!(out, "ESTIMATE, not exact: {why}");
    }
    let _ = writeln!(
        out,
        "{name}: FLOPs of a forward pass over {} tokens × batch {}\nconvention: multiply-add = 2 FLOPs; embedding lookups, norms, activations, softmax and biases = 0; attention {}\n",
        thousands(r.seq_len),
        r.batch,
        convention_text(r)
    );
    let table = |lines: &[crate::flops::FlopsLine], total: u128, label: &str| {
        let mut rows = vec![vec![
            "component".to_owned(),
            "FLOPs".to_owned(),
            "share".to_owned(),
            String::new(),
        ]];
        for l in lines.iter().filter(|l| l.flops > 0) {
            rows.push(vec![
                l.key.to_owned(),
                thousands_u128(l.flops),
                pct(l.flops, total),
                if explain {
                    l.formula.clone()
                } else {
                    String::new()
                },
            ]);
        }
        rows.push(vec![
            label.to_owned(),
            thousands_u128(total),
            human_flops(total),
            String::new(),
        ]);
        columns(&rows, &[false, true, true, false])
    };
    out.push_str(&table(&r.forward, r.forward_flops, "forward total"));
    if r.generates {
        let _ = writeln!(
            out,
            "\none generated token with {} tokens of context (one sequence)",
            thousands(r.seq_len)
        );
        out.push_str(&table(&r.per_token, r.per_token_flops, "per token"));
    } else {
        out.push_str("\nno generated tokens: an encoder reads its input in one pass\n");
    }

    let two_p = 2 * u128::from(r.params);
    let two_active = 2 * u128::from(r.active_params);
    let tokens = u128::from(r.seq_len).saturating_mul(u128::from(r.batch));
    let forward_per_token = r.forward_flops / tokens.max(1);
    let _ = writeln!(out, "\nthe article's estimates");
    let rows = vec![
        vec![
            "2·P per token".to_owned(),
            thousands_u128(two_p),
            if r.generates {
                format!("exact {} per token", thousands_u128(r.per_token_flops))
            } else {
                format!(
                    "exact {} per token of the forward (forward / tokens)",
                    thousands_u128(forward_per_token)
                )
            },
        ],
        vec![
            "2·P_active per token".to_owned(),
            thousands_u128(two_active),
            "(MoE: only the routed experts a token uses)".to_owned(),
        ],
        vec![
            "6·P_active per training token".to_owned(),
            thousands_u128(3 * two_active),
            "(fwd 2·P + bwd 4·P; Kaplan, EleutherAI)".to_owned(),
        ],
        vec![
            "6·P per training token".to_owned(),
            thousands_u128(3 * two_p),
            format!(
                "exact 3 × forward per token = {}",
                thousands_u128(forward_per_token.saturating_mul(3))
            ),
        ],
    ];
    out.push_str(&columns(&rows, &[false, true, false]));
    let _ = writeln!(
        out,
        "  why they differ: P counts the embedding tables, which cost no FLOPs (a lookup), and norms and biases; \
the matmuls use {} parameters per token{}; attention adds 4·n_h·d_h per key per layer, which grows with the context",
        thousands(r.matmul_params),
        if r.generates && r.has_encoder {
            " (a generated token runs the decoder only)"
        } else {
            ""
        }
    );
    if let Some(s) = speed {
        out.push_str(&render_speed(r, s));
    }
    out
}

/// A rate rounded to a whole number with thousands separators.
fn whole(x: f64) -> String {
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "display only; a rate is positive and far below u64::MAX"
    )]
    let n = x.round().max(0.0) as u64;
    thousands(n)
}

/// `$1.23` per million tokens, or `-` without a price.
fn cost(step: &StepEstimate) -> String {
    step.cost_per_million
        .map_or_else(|| "-".to_owned(), |c| format!("${c:.3}"))
}

fn fits(f: Option<bool>) -> &'static str {
    match f {
        Some(true) => "yes",
        Some(false) => "no",
        None => "-",
    }
}

/// The roofline section: time to first token, decode, cost, and decode by batch.
fn render_speed(r: &FlopsReport, s: &SpeedReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\nspeed on {} × {} (roofline estimate)",
        s.options.gpus, s.options.gpu.name
    );
    let step_fits = s.decode.as_ref().map_or(s.prefill.fits, |d| d.fits);
    if step_fits == Some(false) {
        let need = s
            .decode
            .as_ref()
            .map_or(s.prefill.memory_per_gpu, |d| d.memory_per_gpu);
        let _ = writeln!(
            out,
            "  warning: does not fit: needs {} per GPU, has {} (see `llmsize memory`); the times assume it did",
            bytes_both(need),
            bytes_both(s.options.gpu.memory_bytes)
        );
    }
    let p = &s.prefill;
    let mut rows = vec![vec![
        if r.generates {
            "time to first token".to_owned()
        } else {
            "forward".to_owned()
        },
        human_seconds(p.seconds),
        format!(
            "prefill of {} tokens × batch {}, {} bound: {}, {} B moved{}",
            thousands(s.prompt),
            p.batch,
            p.bound,
            human_flops(p.flops),
            thousands(p.bytes),
            if p.cache_bytes > 0 {
                " (weights read, KV cache written)"
            } else {
                " (weights read)"
            }
        ),
    ]];
    rows.push(vec![
        if r.generates { "prefill" } else { "throughput" }.to_owned(),
        format!("{} tokens/s", whole(p.tokens_per_second)),
        match p.cost_per_million {
            Some(_) => format!("{} per million prompt tokens", cost(p)),
            None => "prompt tokens".to_owned(),
        },
    ]);
    if let Some(d) = &s.decode {
        rows.extend([
            vec![
                "decode step".to_owned(),
                human_seconds(d.seconds),
                format!(
                    "{} bound: {} B read (weights {} + KV cache {}), {}",
                    d.bound,
                    thousands(d.bytes),
                    thousands(d.weights.bytes),
                    thousands(d.cache_bytes),
                    human_flops(d.flops)
                ),
            ],
            vec![
                "decode".to_owned(),
                format!("{:.1} tokens/s", d.tokens_per_second),
                format!(
                    "batch {}; {:.1} tokens/s per sequence{}",
                    d.batch,
                    1.0 / d.seconds,
                    match d.cost_per_million {
                        Some(_) => format!("; {} per million generated tokens", cost(d)),
                        None => String::new(),
                    }
                ),
            ],
        ]);
    }
    out.push_str(&columns(&rows, &[false, true, false]));
    if !s.by_batch.is_empty() {
        let _ = writeln!(
            out,
            "\ndecode by batch ({} tokens of context)",
            thousands(s.context)
        );
        let mut rows = vec![vec![
            "batch".to_owned(),
            "bytes read".to_owned(),
            "bound".to_owned(),
            "step".to_owned(),
            "tokens/s".to_owned(),
            "per sequence".to_owned(),
            "$/M tokens".to_owned(),
            "fits".to_owned(),
        ]];
        for d in &s.by_batch {
            rows.push(vec![
                thousands(d.batch),
                thousands(d.bytes),
                d.bound.to_owned(),
                human_seconds(d.seconds),
                format!("{:.1}", d.tokens_per_second),
                format!("{:.1}", 1.0 / d.seconds),
                cost(d),
                fits(d.fits).to_owned(),
            ]);
        }
        out.push_str(&columns(
            &rows,
            &[true, true, false, true, true, true, true, false],
        ));
    }
    for a in &s.assumptions {
        let _ = writeln!(out, "  - {a}");
    }
    out
}

/// One column of a comparison or one row of a sweep: a label, the FLOPs and the speed.
pub type FlopsPoint<'a> = (String, &'a FlopsReport, Option<&'a SpeedReport>);

/// The cells of one point: FLOPs, and the roofline when a GPU was named.
fn cells(r: &FlopsReport, s: Option<&SpeedReport>, with_speed: bool) -> Vec<String> {
    let mut c = vec![
        thousands(r.seq_len),
        thousands(r.batch),
        human_flops(r.forward_flops),
        if r.generates {
            human_flops(r.per_token_flops)
        } else {
            "-".to_owned()
        },
    ];
    if with_speed {
        match s {
            None => c.extend(std::iter::repeat_n("-".to_owned(), 7)),
            Some(s) => {
                let d = s.decode.as_ref();
                let dash = || "-".to_owned();
                c.extend([
                    format!("{} × {}", s.options.gpus, s.options.gpu.name),
                    human_seconds(s.prefill.seconds),
                    d.map_or_else(dash, |d| human_seconds(d.seconds)),
                    d.map_or_else(dash, |d| format!("{:.1}", d.tokens_per_second)),
                    d.map_or_else(dash, |d| d.bound.to_owned()),
                    d.map_or_else(|| cost(&s.prefill), cost),
                    fits(d.map_or(s.prefill.fits, |d| d.fits)).to_owned(),
                ]);
            }
        }
    }
    c
}

const SPEED_HEADERS: [&str; 7] = [
    "GPU",
    "first token",
    "decode step",
    "tokens/s",
    "bound",
    "$/M tokens",
    "fits",
];

/// A sweep of one model: a row per value.
#[must_use]
pub fn render_sweep(name: &str, axis: &str, points: &[FlopsPoint<'_>]) -> String {
    let with_speed = points.iter().any(|(_, _, s)| s.is_some());
    let mut header = vec![
        axis.to_owned(),
        "seq_len".to_owned(),
        "batch".to_owned(),
        "forward".to_owned(),
        "per token".to_owned(),
    ];
    if with_speed {
        header.extend(SPEED_HEADERS.iter().map(|h| (*h).to_owned()));
    }
    let mut rows = vec![header];
    for (label, r, s) in points {
        rows.push(
            std::iter::once(label.clone())
                .chain(cells(r, *s, with_speed))
                .collect(),
        );
    }
    let mut right = vec![matches!(axis, "seq_len" | "batch"), true, true, true, true];
    if with_speed {
        right.extend([false, true, true, true, false, true, false]);
    }
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
        right.remove(c);
    }
    let mut out = format!("{name}: FLOPs by {axis}\n\n{}", columns(&rows, &right));
    if let Some((_, r, _)) = points.first() {
        let _ = writeln!(out, "attention {}", convention_text(r));
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
            let _ = writeln!(out, "  - {a}");
        }
        for (label, s) in &speeds {
            for a in s.assumptions.iter().filter(|a| !common.contains(a)) {
                let _ = writeln!(out, "  - {axis} {label}: {a}");
            }
        }
    }
    out
}

/// Several models side by side: a column each.
#[must_use]
pub fn render_comparison(points: &[FlopsPoint<'_>]) -> String {
    let with_speed = points.iter().any(|(_, _, s)| s.is_some());
    let mut rows: Vec<Vec<String>> = vec![
        std::iter::once(String::new())
            .chain(points.iter().map(|(n, _, _)| n.clone()))
            .collect(),
    ];
    let mut add = |label: &str, f: &dyn Fn(&FlopsReport, Option<&SpeedReport>) -> String| {
        rows.push(
            std::iter::once(label.to_owned())
                .chain(points.iter().map(|(_, r, s)| f(r, *s)))
                .collect(),
        );
    };
    add("tokens × batch", &|r, _| {
        format!("{} × {}", thousands(r.seq_len), r.batch)
    });
    add("attention", &|r, _| {
        if r.generates {
            r.convention.name().to_owned()
        } else {
            "bidirectional".to_owned()
        }
    });
    add("parameters", &|r, _| thousands(r.params));
    add("active per token", &|r, _| thousands(r.active_params));
    add("matmul parameters per token", &|r, _| {
        thousands(r.matmul_params)
    });
    add("forward", &|r, _| human_flops(r.forward_flops));
    add("per generated token", &|r, _| {
        if r.generates {
            human_flops(r.per_token_flops)
        } else {
            "- (encoder)".to_owned()
        }
    });
    if with_speed {
        add("GPU", &|_, s| {
            s.map_or("-".into(), |s| {
                format!("{} × {}", s.options.gpus, s.options.gpu.name)
            })
        });
        add("time to first token", &|_, s| {
            s.map_or("-".into(), |s| human_seconds(s.prefill.seconds))
        });
        add("decode tokens/s", &|_, s| {
            s.and_then(|s| s.decode.as_ref()).map_or("-".into(), |d| {
                format!("{:.1} ({} bound)", d.tokens_per_second, d.bound)
            })
        });
        add("$/M generated tokens", &|_, s| {
            s.and_then(|s| s.decode.as_ref()).map_or("-".into(), cost)
        });
        add("fits", &|_, s| {
            s.map_or("-", |s| {
                fits(s.decode.as_ref().map_or(s.prefill.fits, |d| d.fits))
            })
            .to_owned()
        });
    }
    let right: Vec<bool> = std::iter::once(false)
        .chain(points.iter().map(|_| true))
        .collect();
    columns(&rows, &right)
}
