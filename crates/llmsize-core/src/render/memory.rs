//! `llmsize memory`: table (with `--explain` formulas) and JSON, in bytes.

use std::fmt::Write as _;

use super::columns;
use crate::memory::{MaxContext, MemoryReport};
use crate::units::{bytes_both, thousands};

/// A point of a sweep: the value swept and its report.
pub type SweepPoint = (u64, MemoryReport);

/// Human table; `explain` adds each line's formula and the assumptions in full.
#[must_use]
pub fn render(
    name: &str,
    r: &MemoryReport,
    max_context: Option<Option<MaxContext>>,
    explain: bool,
) -> String {
    let o = &r.options;
    let mut out = String::new();
    if let Some(why) = &r.estimate {
        let _ = writeln!(out, "ESTIMATE, not exact: {why}");
    }
    let _ = writeln!(
        out,
        "{name}: memory to serve in {} with {} tokens × batch {}, KV cache {}{}\n",
        if r.weights_from_files {
            "the weight files as stored"
        } else {
            o.format.name()
        },
        thousands(o.seq_len),
        o.batch,
        o.kv_dtype.name(),
        if o.tp > 1 {
            format!(", tensor parallel {}", o.tp)
        } else {
            String::new()
        }
    );
    let mut rows = vec![vec![
        "item".to_owned(),
        "bytes".to_owned(),
        "GiB (GB)".to_owned(),
        "what".to_owned(),
    ]];
    #[expect(clippy::cast_precision_loss, reason = "display only")]
    let bpw = r.weights_bytes as f64 * 8.0 / r.params.max(1) as f64;
    rows.push(vec![
        "weights".into(),
        thousands(r.weights_bytes),
        bytes_both(r.weights_bytes),
        format!(
            "{} parameters, {bpw:.3} bits per weight on average",
            thousands(r.params)
        ),
    ]);
    for l in &r.weights {
        #[expect(clippy::cast_precision_loss, reason = "display only")]
        let lbpw = l.bytes as f64 * 8.0 / l.params.max(1) as f64;
        rows.push(vec![
            format!("  {}", l.storage),
            thousands(l.bytes),
            bytes_both(l.bytes),
            if l.params == 0 {
                "saved tensors that are not parameters (quantization scales, buffers)".into()
            } else if explain {
                format!(
                    "{} parameters × {lbpw:.4} bits / 8 (blocks, scales and zeros included)",
                    thousands(l.params)
                )
            } else {
                format!("{} parameters, {lbpw:.4} bpw", thousands(l.params))
            },
        ]);
    }
    rows.push(vec![
        "KV cache".into(),
        thousands(r.kv_bytes),
        bytes_both(r.kv_bytes),
        format!(
            "{} B per token of context ({}), all layers",
            thousands(r.kv_bytes_per_token_full),
            o.kv_dtype.name()
        ),
    ]);
    for g in &r.kv {
        rows.push(vec![
            format!("  {} × {}", g.layers, g.stack.as_str()),
            thousands(g.bytes),
            bytes_both(g.bytes),
            if explain {
                {
                    // Bytes of one token's vector in one layer, whole blocks for q8_0/q4_0.
                    let (block, size) = o.kv_dtype.block();
                    let per = if block == 1 {
                        format!("{}·{size}", g.elements_per_token)
                    } else {
                        format!("⌈{}/{block}⌉·{size}", g.elements_per_token)
                    };
                    format!(
                        "layers·b·tokens·elements·bytes ({}) = {}·{}·{}·{per}",
                        o.kv_dtype.name(),
                        g.layers,
                        o.batch,
                        g.tokens
                    )
                }
            } else {
                format!("{}; {} tokens kept", g.what, thousands(g.tokens))
            },
        ]);
        if explain {
            rows.push(vec![
                String::new(),
                String::new(),
                String::new(),
                format!("{}; {} tokens kept", g.what, thousands(g.tokens)),
            ]);
        }
    }
    if let Some(formula) = &r.state_formula {
        rows.push(vec![
            "recurrent state".into(),
            thousands(r.state_bytes),
            bytes_both(r.state_bytes),
            format!("conv and SSM / linear-attention states, fixed per sequence: {formula}"),
        ]);
    }
    rows.push(vec![
        "activations".into(),
        thousands(r.activation_bytes),
        bytes_both(r.activation_bytes),
        if explain {
            r.activation_formula.clone()
        } else {
            "prefill workspace, estimate (per GPU)".into()
        },
    ]);
    rows.push(vec![
        "runtime overhead".into(),
        thousands(o.overhead_bytes),
        bytes_both(o.overhead_bytes),
        "CUDA context and allocator, per GPU".into(),
    ]);
    if o.tp > 1 {
        rows.push(vec![
            format!("per GPU (tp {})", o.tp),
            thousands(r.per_gpu),
            bytes_both(r.per_gpu),
            format!(
                "weights {} + KV {} + activations + overhead",
                bytes_both(r.weights_per_gpu),
                bytes_both(r.kv_per_gpu)
            ),
        ]);
    }
    rows.push(vec![
        "total".into(),
        thousands(r.total),
        bytes_both(r.total),
        if o.tp > 1 {
            format!(
                "per GPU × {} (weights and KV above are for the whole model)",
                o.tp
            )
        } else {
            String::new()
        },
    ]);
    out.push_str(&columns(&rows, &[false, true, true, false]));
    if let (Some((gpu, count)), Some(fits)) = (o.gpu, r.fits) {
        let verdict = if fits {
            format!(
                "fits: {} of {} used per GPU",
                bytes_both(r.per_gpu),
                bytes_both(gpu.memory_bytes)
            )
        } else {
            format!(
                "does not fit: needs {} per GPU, has {}",
                bytes_both(r.per_gpu),
                bytes_both(gpu.memory_bytes)
            )
        };
        let _ = writeln!(
            out,
            "\n{} × {} ({}): {verdict}",
            count, gpu.name, gpu.memory_source
        );
    }
    if let Some(mc) = max_context {
        match mc {
            Some(m) => {
                let why = match m.bound {
                    "memory" => "limited by memory",
                    "position table" => "all the learned position table allows",
                    "trained context" => "the trained context; more would still fit",
                    _ => "the search limit; more would still fit",
                };
                let _ = writeln!(
                    out,
                    "longest context that fits at batch {}: {} tokens ({why})",
                    o.batch,
                    thousands(m.tokens)
                );
            }
            None => {
                let _ = writeln!(out, "longest context that fits: none, not even 1 token");
            }
        }
    }
    out.push_str("\nassumptions\n");
    for a in &r.assumptions {
        let _ = writeln!(out, "  - {a}");
    }
    out
}

/// A sweep table.
#[must_use]
pub fn render_sweep(name: &str, axis: &str, points: &[SweepPoint]) -> String {
    let mut rows = vec![vec![
        axis.to_owned(),
        "weights per GPU".to_owned(),
        "KV cache per GPU".to_owned(),
        "total per GPU".to_owned(),
        "fits".to_owned(),
    ]];
    for (v, r) in points {
        rows.push(vec![
            thousands(*v),
            bytes_both(r.weights_per_gpu),
            bytes_both(r.kv_per_gpu),
            bytes_both(r.per_gpu),
            match r.fits {
                Some(true) => "yes".into(),
                Some(false) => "no".into(),
                None => "-".into(),
            },
        ]);
    }
    format!(
        "{name}: memory by {axis}\n\n{}",
        columns(&rows, &[true, true, true, true, false])
    )
}
