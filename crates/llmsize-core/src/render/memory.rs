//! `llmsize memory`: table (with `--explain` formulas) and JSON, in bytes.

use std::fmt::Write as _;

use super::columns;
use crate::memory::{MaxContext, MemoryReport};
use crate::runtime::{Runtime, ServingReport};
use crate::units::{bytes_both, thousands};

/// A point of a sweep: the value swept, as a table writes it, and its report.
pub type SweepPoint<'a> = (String, &'a MemoryReport);

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
        "{name}: memory to serve in {} with {} tokens × batch {}{}{}\n",
        if r.weights_from_files {
            "the weight files as stored"
        } else {
            o.format.name()
        },
        thousands(o.seq_len),
        o.batch,
        if r.encoder_only {
            " (one forward; an encoder keeps no KV cache)".to_owned()
        } else {
            format!(", KV cache {}", o.kv_dtype.name())
        },
        if o.tp > 1 {
            format!(", tensor parallel {}", o.tp)
        } else {
            String::new()
        }
    );
    if let Some(s) = &r.serving {
        let _ = writeln!(
            out,
            "as {} places it{}\n",
            s.runtime.name(),
            if s.pp > 1 {
                format!(
                    ", layers split over {} {}",
                    s.pp,
                    if s.tp > 1 { "stages" } else { "GPUs" }
                )
            } else {
                String::new()
            }
        );
    }
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
    if let Some(e) = r.weights_estimate_bytes {
        rows.push(vec![
            "  (estimate)".into(),
            thousands(e),
            bytes_both(e),
            format!(
                "the config's {} estimate, beside the files' bytes",
                o.format.name()
            ),
        ]);
    }
    if let Some((what, bytes)) = &r.files_only {
        rows.push(vec![
            "  (not loaded)".into(),
            thousands(*bytes),
            bytes_both(*bytes),
            format!("{what}; not in the totals"),
        ]);
    }
    // An encoder caches nothing (its groups are empty): no KV line rather than zeros.
    if !r.encoder_only {
        rows.push(vec![
            "KV cache".into(),
            thousands(r.kv_bytes),
            bytes_both(r.kv_bytes),
            format!(
                "{} B per token of context ({}), all layers{}",
                thousands(r.kv_bytes_per_token_full),
                o.kv_dtype.name(),
                match r.serving.as_ref().map(|s| s.runtime) {
                    Some(Runtime::Vllm) => "; what the batch needs at max_model_len (vLLM's pool, below, takes what is left)",
                    Some(Runtime::LlamaCpp) => "; llama.cpp's cells for the whole context",
                    _ => "",
                }
            ),
        ]);
    }
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
        } else if r.encoder_only {
            "workspace of one forward, estimate (per GPU)".into()
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
    if let Some(s) = &r.serving
        && let Some(st) = s.stages.get(s.most_loaded)
    {
        rows.push(vec![
            format!("per GPU ({})", st.device),
            thousands(r.per_gpu),
            bytes_both(r.per_gpu),
            format!(
                "the most loaded GPU: weights {} + KV {} + compute {} + overhead",
                bytes_both(r.weights_per_gpu),
                bytes_both(r.kv_per_gpu),
                bytes_both(r.activation_bytes)
            ),
        ]);
    } else if o.tp > 1 {
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
        if r.serving.is_some() {
            "every GPU (system RAM apart)".to_owned()
        } else if o.tp > 1 {
            format!(
                "per GPU × {} (weights and KV above are for the whole model)",
                o.tp
            )
        } else {
            String::new()
        },
    ]);
    out.push_str(&columns(&rows, &[false, true, true, false]));
    if let Some(s) = &r.serving {
        placement(&mut out, s);
    }
    let vllm = r.serving.as_ref().and_then(|s| s.vllm);
    if let (Some((gpu, count)), Some(fits)) = (o.gpu, r.fits) {
        let verdict = if let Some(v) = vllm {
            if fits {
                format!(
                    "fits: {} sequences of {} tokens at once (batch {} asked)",
                    thousands(v.max_sequences),
                    thousands(v.max_model_len),
                    o.batch
                )
            } else {
                format!(
                    "does not fit: the KV budget ({}) holds {} blocks; {} sequences of {} tokens need {} (vLLM refuses to start below one)",
                    bytes_both(v.kv_budget),
                    thousands(v.num_blocks),
                    o.batch,
                    thousands(v.max_model_len),
                    thousands(v.blocks_per_request.saturating_mul(o.batch))
                )
            }
        } else if fits {
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

/// Where the runtime put things, device by device, and its cache's own figures.
fn placement(out: &mut String, s: &ServingReport) {
    let mut rows = vec![vec![
        "device".to_owned(),
        "layers".to_owned(),
        "weights".to_owned(),
        "KV cache".to_owned(),
        "compute".to_owned(),
        "total".to_owned(),
        "also holds".to_owned(),
    ]];
    for st in &s.stages {
        let layers = if st.layers.iter().all(std::ops::Range::is_empty) {
            "-".to_owned()
        } else {
            st.layers
                .iter()
                .filter(|r| !r.is_empty())
                .map(|r| format!("{}–{}", r.start, r.end - 1))
                .collect::<Vec<_>>()
                .join(", ")
        };
        rows.push(vec![
            st.device.clone(),
            layers,
            bytes_both(st.weights),
            bytes_both(st.kv),
            bytes_both(st.activations),
            bytes_both(st.total),
            st.extras.join(", "),
        ]);
    }
    let _ = writeln!(
        out,
        "\nplacement ({}{})",
        s.runtime.name(),
        if s.tp > 1 {
            format!(
                "; each stage {} tensor-parallel GPUs, figures per GPU",
                s.tp
            )
        } else {
            String::new()
        }
    );
    out.push_str(&columns(
        &rows,
        &[false, false, true, true, true, true, false],
    ));
    if let Some(l) = &s.llama_cpp {
        let _ = writeln!(
            out,
            "llama.cpp: n_ctx {} cells{}{}; --n-gpu-layers {}, output layer on {}",
            thousands(l.n_ctx),
            if l.n_ctx == l.n_ctx_asked {
                String::new()
            } else {
                format!(" (asked {}, padded to 256)", thousands(l.n_ctx_asked))
            },
            l.swa_cells
                .map(|c| format!(", sliding layers {} cells", thousands(c)))
                .unwrap_or_default(),
            l.n_gpu_layers,
            if l.output_on_gpu { "a GPU" } else { "the CPU" }
        );
    }
    if let Some(v) = &s.vllm {
        let _ = writeln!(
            out,
            "vLLM: {} × GPU = {} per GPU; KV budget {}; {} blocks of {} tokens ({} B a layer, {} layers a block); a request of {} tokens needs {} blocks: max concurrency {:.2}, {} whole sequences; KV cache {} tokens",
            v.gpu_memory_utilization,
            bytes_both(v.budget),
            bytes_both(v.kv_budget),
            thousands(v.num_blocks),
            v.block_size,
            thousands(v.page_bytes),
            v.layers_per_block,
            thousands(v.max_model_len),
            thousands(v.blocks_per_request),
            v.max_concurrency,
            thousands(v.max_sequences),
            thousands(v.kv_tokens)
        );
    }
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
    // Under vLLM the pool is the same size at every point; what changes is how many
    // sequences it holds.
    let vllm = points
        .iter()
        .any(|(_, r)| r.serving.as_ref().is_some_and(|s| s.vllm.is_some()));
    if vllm && let Some(h) = rows.first_mut() {
        h.push("max sequences".to_owned());
    }
    for (v, r) in points {
        let mut row = vec![
            v.clone(),
            bytes_both(r.weights_per_gpu),
            bytes_both(r.kv_per_gpu),
            bytes_both(r.per_gpu),
            match r.fits {
                Some(true) => "yes".into(),
                Some(false) => "no".into(),
                None => "-".into(),
            },
        ];
        if vllm {
            row.push(
                r.serving
                    .as_ref()
                    .and_then(|s| s.vllm)
                    .map_or_else(|| "-".to_owned(), |p| thousands(p.max_sequences)),
            );
        }
        rows.push(row);
    }
    format!(
        "{name}: memory by {axis}\n\n{}",
        // Counts right-aligned, names (`dtype`, `gpu`) left.
        columns(
            &rows,
            &[
                matches!(axis, "seq_len" | "batch"),
                true,
                true,
                true,
                false,
                true
            ]
        )
    )
}

/// Several models side by side: one column each, the items as rows.
#[must_use]
pub fn render_comparison(models: &[(&str, &MemoryReport)]) -> String {
    let mut rows = vec![
        std::iter::once("item".to_owned())
            .chain(models.iter().map(|(n, _)| (*n).to_owned()))
            .collect::<Vec<_>>(),
    ];
    let mut row = |label: &str, f: &dyn Fn(&MemoryReport) -> String| {
        rows.push(
            std::iter::once(label.to_owned())
                .chain(models.iter().map(|(_, r)| f(r)))
                .collect(),
        );
    };
    row("format", &|r| {
        if r.weights_from_files {
            "files as stored".into()
        } else {
            r.options.format.name().into()
        }
    });
    row("tokens × batch", &|r| {
        format!("{} × {}", thousands(r.options.seq_len), r.options.batch)
    });
    row("parameters", &|r| thousands(r.params));
    row("weights", &|r| bytes_both(r.weights_bytes));
    row("KV cache", &|r| {
        if r.kv.is_empty() {
            "none".into()
        } else {
            bytes_both(r.kv_bytes)
        }
    });
    if models.iter().any(|(_, r)| r.state_bytes > 0) {
        row("recurrent state", &|r| bytes_both(r.state_bytes));
    }
    row("activations", &|r| bytes_both(r.activation_bytes));
    row("runtime overhead", &|r| {
        bytes_both(r.options.overhead_bytes)
    });
    row("per GPU", &|r| bytes_both(r.per_gpu));
    row("total", &|r| bytes_both(r.total));
    if models.iter().any(|(_, r)| r.fits.is_some()) {
        row("fits", &|r| match (r.options.gpu, r.fits) {
            (Some((g, n)), Some(true)) => format!("yes ({n} × {})", g.name),
            (Some((g, n)), Some(false)) => format!("no ({n} × {})", g.name),
            _ => "-".into(),
        });
    }
    let right: Vec<bool> = std::iter::once(false)
        .chain(models.iter().map(|_| true))
        .collect();
    let mut out = columns(&rows, &right);
    // What every model assumes is said once; what one model adds, under its name.
    let common: Vec<&String> = models.first().map_or_else(Vec::new, |(_, r)| {
        r.assumptions
            .iter()
            .filter(|a| models.iter().all(|(_, m)| m.assumptions.contains(a)))
            .collect()
    });
    out.push_str("\nassumptions\n");
    for a in &common {
        let _ = writeln!(out, "  - {a}");
    }
    for (name, r) in models {
        for a in r.assumptions.iter().filter(|a| !common.contains(a)) {
            let _ = writeln!(out, "  - {name}: {a}");
        }
    }
    out
}
