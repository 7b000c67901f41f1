//! `llmsize memory` as a [`Doc`]: the line items (weights by storage line, KV cache groups,
//! activations, overhead, per GPU, total) as one table, the runtime's placement and its cache
//! figures as tables of their own, the verdict and assumptions as lines. The same document
//! prints as a terminal table that fits the width, Markdown, or CSV with plain bytes.

use super::doc::{Cell, Column, Doc, Raw, Table, Tone};
use crate::checked::Checked;
use crate::memory::{MaxContext, MemoryReport};
use crate::runtime::{LlamaCppView, Runtime, ServingReport, VllmView};
use crate::units::{bytes_both, thousands};

/// A point of a sweep: the value swept, as a table writes it, and its report.
pub type SweepPoint<'a> = (String, &'a MemoryReport);

/// Bytes as `4.58 GiB (4.91 GB)`; CSV gets the bytes.
fn both(n: u64) -> Cell {
    Cell::with_raw(bytes_both(n), Raw::Int(i128::from(n)))
}

/// Bytes in GiB for CSV, beside the exact bytes: the table's `size` column is the same
/// quantity as `bytes`, so CSV gets it in the one unit its header names.
fn gib(n: u64) -> Cell {
    #[expect(clippy::cast_precision_loss, reason = "a size in GiB is for reading")]
    let g = n as f64 / f64::from(1u32 << 30);
    Cell::with_raw(bytes_both(n), Raw::Float(g))
}

/// A count of tokens, cells or blocks with words after it (`16 tokens`); CSV gets the number.
fn count_with(n: u64, unit: &str) -> Cell {
    Cell::with_raw(format!("{} {unit}", thousands(n)), Raw::Int(i128::from(n)))
}

/// A line item of the main table: `item`, exact bytes, the scaled size, and what it is.
fn item(table: &mut Table, name: impl Into<String>, bytes: u64, what: impl Into<String>) {
    table.push(vec![
        Cell::text(name),
        Cell::count(bytes),
        gib(bytes),
        Cell::text(what),
    ]);
}

/// The document for one model at one point; `explain` puts each line's formula in the
/// `what` column, and `max_context` (from `--max-context`) adds the longest context line;
#[must_use]
pub fn doc(
    name: &str,
    r: &MemoryReport,
    max_context: Option<Option<MaxContext>>,
    explain: bool,
) -> Doc {
    let o = &r.options;
    let mut doc = Doc::new();
    if let Some(why) = &r.estimate {
        doc.toned(format!("ESTIMATE, not exact: {why}"), Tone::Warn);
    }
    doc.title(format!(
        "{name}: memory to serve in {} with {} tokens × batch {}{}{}",
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
    ))
    .blank();
    if let Some(s) = &r.serving {
        doc.line(format!(
            "as {} places it{}",
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
        ))
        .blank();
    }
    doc.table(items(r, explain));
    if let Some(s) = &r.serving {
        placement(&mut doc, s);
    }
    verdict(&mut doc, r);
    if let Some(mc) = max_context {
        let text = match mc {
            Some(m) => {
                let why = match m.bound {
                    "memory" => "limited by memory",
                    "position table" => "all the learned position table allows",
                    "trained context" => "the trained context; more would still fit",
                    _ => "the search limit; more would still fit",
                };
                format!(
                    "longest context that fits at batch {}: {} tokens ({why})",
                    o.batch,
                    thousands(m.tokens)
                )
            }
            None => "longest context that fits: none, not even 1 token".to_owned(),
        };
        doc.line(text);
    }
    doc.blank().heading("assumptions");
    for a in &r.assumptions {
        doc.line(format!("  {a}"));
    }
    doc
}

/// The line items: weights and their storage lines, KV cache and its groups, state,
/// activations, overhead, per GPU, total.
fn items(r: &MemoryReport, explain: bool) -> Table {
    let o = &r.options;
    let mut t = Table::new(
        "memory",
        vec![
            Column::left("item"),
            Column::right("bytes"),
            Column::right("size").csv("GiB"),
            Column::fold("what"),
        ],
    );
    #[expect(clippy::cast_precision_loss, reason = "display only")]
    let bpw = r.weights_bytes as f64 * 8.0 / r.params.max(1) as f64;
    item(
        &mut t,
        "weights",
        r.weights_bytes,
        format!(
            "{} parameters, {bpw:.3} bits per weight on average",
            thousands(r.params)
        ),
    );
    for l in &r.weights {
        #[expect(clippy::cast_precision_loss, reason = "display only")]
        let lbpw = l.bytes as f64 * 8.0 / l.params.max(1) as f64;
        item(
            &mut t,
            format!("  {}", l.storage),
            l.bytes,
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
        );
    }
    if let Some(e) = r.weights_estimate_bytes {
        item(
            &mut t,
            "  (estimate)",
            e,
            format!(
                "the config's {} estimate, beside the files' bytes",
                o.format.name()
            ),
        );
    }
    if let Some((what, bytes)) = &r.files_only {
        item(
            &mut t,
            "  (not loaded)",
            *bytes,
            format!("{what}; not in the totals"),
        );
    }
    // An encoder caches nothing (its groups are empty): no KV line rather than zeros.
    if !r.encoder_only {
        item(
            &mut t,
            "KV cache",
            r.kv_bytes,
            format!(
                "{} B per token of context ({}), all layers{}",
                thousands(r.kv_bytes_per_token_full),
                o.kv_dtype.name(),
                match r.serving.as_ref().map(|s| s.runtime) {
                    Some(Runtime::Vllm) =>
                        "; what the batch needs at max_model_len (vLLM's pool, below, takes what is left)",
                    Some(Runtime::LlamaCpp) => "; llama.cpp's cells for the whole context",
                    _ => "",
                }
            ),
        );
    }
    for g in &r.kv {
        let kept = format!("{}; {} tokens kept", g.what, thousands(g.tokens));
        let what = if explain {
            // Bytes of one token's vector in one layer, whole blocks for q8_0/q4_0.
            let (block, size) = o.kv_dtype.block();
            let per = if block == 1 {
                format!("{}·{size}", g.elements_per_token)
            } else {
                format!("⌈{}/{block}⌉·{size}", g.elements_per_token)
            };
            format!(
                "layers·b·tokens·elements·bytes ({}) = {}·{}·{}·{per}; {kept}",
                o.kv_dtype.name(),
                g.layers,
                o.batch,
                g.tokens
            )
        } else {
            kept
        };
        item(
            &mut t,
            format!("  {} × {}", g.layers, g.stack.as_str()),
            g.bytes,
            what,
        );
    }
    if let Some(formula) = &r.state_formula {
        item(
            &mut t,
            "recurrent state",
            r.state_bytes,
            format!("conv and SSM / linear-attention states, fixed per sequence: {formula}"),
        );
    }
    item(
        &mut t,
        "activations",
        r.activation_bytes,
        if explain {
            r.activation_formula.clone()
        } else if r.encoder_only {
            "workspace of one forward, estimate (per GPU)".into()
        } else {
            "prefill workspace, estimate (per GPU)".into()
        },
    );
    item(
        &mut t,
        "runtime overhead",
        o.overhead_bytes,
        "CUDA context and allocator, per GPU",
    );
    if let Some(s) = &r.serving
        && let Some(st) = s.stages.get(s.most_loaded)
    {
        item(
            &mut t,
            format!("per GPU ({})", st.device),
            r.per_gpu,
            format!(
                "the most loaded GPU: weights {} + KV {} + compute {} + overhead",
                bytes_both(r.weights_per_gpu),
                bytes_both(r.kv_per_gpu),
                bytes_both(r.activation_bytes)
            ),
        );
    } else if o.tp > 1 {
        item(
            &mut t,
            format!("per GPU (tp {})", o.tp),
            r.per_gpu,
            format!(
                "weights {} + KV {} + activations + overhead",
                bytes_both(r.weights_per_gpu),
                bytes_both(r.kv_per_gpu)
            ),
        );
    }
    t.push(vec![
        Cell::text("total").tone(Tone::Strong),
        Cell::count(r.total).tone(Tone::Strong),
        gib(r.total).tone(Tone::Strong),
        Cell::text(if r.serving.is_some() {
            "every GPU (system RAM apart)".to_owned()
        } else if o.tp > 1 {
            format!(
                "per GPU × {} (weights and KV above are for the whole model)",
                o.tp
            )
        } else {
            String::new()
        }),
    ]);
    t
}

/// `N × GPU (source): fits: …` or `does not fit: …`, when a GPU was named.
fn verdict(doc: &mut Doc, r: &MemoryReport) {
    let o = &r.options;
    let (Some((gpu, count)), Some(fits)) = (o.gpu, r.fits) else {
        return;
    };
    let vllm = r.serving.as_ref().and_then(|s| s.vllm);
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
                (Checked::new(v.blocks_per_request) * o.batch)
                    .ok()
                    .map_or_else(|| "overflow".to_owned(), thousands)
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
    doc.blank().toned(
        format!(
            "{} × {} ({}): {verdict}",
            count, gpu.name, gpu.memory_source
        ),
        if fits { Tone::Good } else { Tone::Bad },
    );
}

/// Where the runtime put things, device by device, and its cache's own figures.
fn placement(doc: &mut Doc, s: &ServingReport) {
    let mut t = Table::new(
        "placement",
        vec![
            Column::left("device"),
            Column::left("layers"),
            Column::right("weights").csv("weights_bytes"),
            Column::right("KV cache").csv("kv_cache_bytes"),
            Column::right("compute").csv("compute_bytes"),
            Column::right("total").csv("total_bytes"),
            Column::fold("also holds"),
        ],
    );
    for st in &s.stages {
        let layers = if st.layers.iter().all(std::ops::Range::is_empty) {
            "-".to_owned()
        } else {
            st.layers
                .iter()
                .filter(|r| !r.is_empty())
                // A non-empty range: its end is at least 1.
                .map(|r| format!("{}–{}", r.start, r.end.saturating_sub(1)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        t.push(vec![
            Cell::text(st.device.clone()),
            Cell::text(layers),
            Cell::bytes_both(st.weights),
            Cell::bytes_both(st.kv),
            Cell::bytes_both(st.activations),
            Cell::bytes_both(st.total),
            Cell::text(st.extras.join(", ")),
        ]);
    }
    doc.blank().heading(format!(
        "placement ({}{})",
        s.runtime.name(),
        if s.tp > 1 {
            format!(
                "; each stage {} tensor-parallel GPUs, figures per GPU",
                s.tp
            )
        } else {
            String::new()
        }
    ));
    doc.table(t);
    if let Some(l) = &s.llama_cpp {
        doc.blank().heading("llama.cpp");
        doc.table(llama_cpp(l));
    }
    if let Some(v) = &s.vllm {
        doc.blank().heading("vLLM's KV cache pool");
        doc.table(vllm(v));
    }
}

/// A runtime's settings and figures: `setting`, `value`, what it is.
fn settings(name: &str) -> Table {
    Table::new(
        name,
        vec![
            Column::left("setting"),
            Column::right("value"),
            Column::fold("what"),
        ],
    )
}

/// llama.cpp's context cells and layer split.
fn llama_cpp(l: &LlamaCppView) -> Table {
    let mut t = settings("llama.cpp");
    t.push(vec![
        Cell::text("n_ctx"),
        count_with(l.n_ctx, "cells"),
        Cell::text(if l.n_ctx == l.n_ctx_asked {
            "KV cells of every full-attention layer".to_owned()
        } else {
            format!(
                "KV cells of every full-attention layer (asked {}, padded to 256)",
                thousands(l.n_ctx_asked)
            )
        }),
    ]);
    if let Some(c) = l.swa_cells {
        t.push(vec![
            Cell::text("sliding layers"),
            count_with(c, "cells"),
            Cell::text("KV cells of a sliding-window layer"),
        ]);
    }
    t.push(vec![
        Cell::text("--n-gpu-layers"),
        Cell::count(l.n_gpu_layers),
        Cell::text("layers offloaded to the GPUs"),
    ]);
    t.push(vec![
        Cell::text("output layer"),
        Cell::text(if l.output_on_gpu { "a GPU" } else { "the CPU" }),
        Cell::text("where the output layer and its logits are"),
    ]);
    t
}

/// vLLM's block pool, line by line as its startup log reports it.
fn vllm(v: &VllmView) -> Table {
    let mut t = settings("vllm");
    t.push(vec![
        Cell::text("gpu_memory_utilization"),
        Cell::with_raw(
            v.gpu_memory_utilization.to_string(),
            Raw::Float(v.gpu_memory_utilization),
        ),
        Cell::text("the share of each GPU vLLM may use"),
    ]);
    t.push(vec![
        Cell::text("budget per GPU"),
        both(v.budget),
        Cell::text("gpu_memory_utilization × the GPU's memory"),
    ]);
    t.push(vec![
        Cell::text("KV budget"),
        both(v.kv_budget),
        Cell::text("what is left for the KV cache on the most constrained GPU"),
    ]);
    t.push(vec![
        Cell::text("block_size"),
        count_with(v.block_size, "tokens"),
        Cell::text("tokens per block"),
    ]);
    t.push(vec![
        Cell::text("page"),
        count_with(v.page_bytes, "B"),
        Cell::text("one block of one layer on one GPU"),
    ]);
    t.push(vec![
        Cell::text("layers per block"),
        Cell::count(v.layers_per_block),
        Cell::text("layers that share a block id"),
    ]);
    t.push(vec![
        Cell::text("num_blocks"),
        Cell::count(v.num_blocks),
        Cell::text("KV budget // page // layers per block"),
    ]);
    t.push(vec![
        Cell::text("max_model_len"),
        count_with(v.max_model_len, "tokens"),
        Cell::text("the longest request"),
    ]);
    t.push(vec![
        Cell::text("blocks per request"),
        Cell::count(v.blocks_per_request),
        Cell::text("what one request of max_model_len tokens needs"),
    ]);
    t.push(vec![
        Cell::text("max concurrency"),
        Cell::with_raw(
            format!("{:.2}", v.max_concurrency),
            Raw::Float(v.max_concurrency),
        ),
        Cell::text("num_blocks / blocks per request"),
    ]);
    t.push(vec![
        Cell::text("whole sequences"),
        Cell::count(v.max_sequences),
        Cell::text("requests of max_model_len tokens at once"),
    ]);
    t.push(vec![
        Cell::text("KV cache"),
        count_with(v.kv_tokens, "tokens"),
        Cell::text("tokens the pool holds (vLLM's \"GPU KV cache size\")"),
    ]);
    t
}

/// A sweep: one row per point, per-GPU bytes and the verdict.
#[must_use]
pub fn sweep_doc(name: &str, axis: &str, points: &[SweepPoint]) -> Doc {
    // Counts right-aligned, names (`dtype`, `gpu`) left.
    let first = if matches!(axis, "seq_len" | "batch") {
        Column::right(axis)
    } else {
        Column::left(axis)
    };
    let mut columns = vec![
        first,
        Column::right("weights per GPU").csv("weights_per_gpu_bytes"),
        Column::right("KV cache per GPU").csv("kv_cache_per_gpu_bytes"),
        Column::right("total per GPU").csv("total_per_gpu_bytes"),
        Column::left("fits"),
    ];
    // Under vLLM the pool is the same size at every point; what changes is how many
    // sequences it holds.
    let vllm = points
        .iter()
        .any(|(_, r)| r.serving.as_ref().is_some_and(|s| s.vllm.is_some()));
    if vllm {
        columns.push(Column::right("max sequences"));
    }
    let mut t = Table::new("sweep", columns);
    for (v, r) in points {
        let value = match axis {
            "seq_len" => Cell::with_raw(v.clone(), Raw::Int(i128::from(r.options.seq_len))),
            "batch" => Cell::with_raw(v.clone(), Raw::Int(i128::from(r.options.batch))),
            _ => Cell::text(v.clone()),
        };
        let mut row = vec![
            value,
            Cell::bytes_both(r.weights_per_gpu),
            Cell::bytes_both(r.kv_per_gpu),
            Cell::bytes_both(r.per_gpu),
            match r.fits {
                Some(true) => Cell::text("yes").tone(Tone::Good),
                Some(false) => Cell::text("no").tone(Tone::Bad),
                None => Cell::text("-"),
            },
        ];
        if vllm {
            row.push(
                r.serving
                    .as_ref()
                    .and_then(|s| s.vllm)
                    .map_or_else(|| Cell::text("-"), |p| Cell::count(p.max_sequences)),
            );
        }
        t.push(row);
    }
    let mut doc = Doc::new();
    doc.title(format!("{name}: memory by {axis}"))
        .blank()
        .table(t);
    doc
}

/// Several models side by side: one column each, the items as rows. On a terminal too narrow
/// for it, sizes drop their decimal GB and the GPU is named once under the table rather than
/// in every `fits` cell.
#[must_use]
pub fn comparison_doc(models: &[(&str, &MemoryReport)]) -> Doc {
    let mut t = Table::new(
        "comparison",
        std::iter::once(Column::left("item"))
            .chain(models.iter().map(|(n, _)| Column::right(*n)))
            .collect(),
    );
    let mut row = |label: &str, f: &dyn Fn(&MemoryReport) -> Cell| {
        t.push(
            std::iter::once(Cell::text(label))
                .chain(models.iter().map(|(_, r)| f(r)))
                .collect(),
        );
    };
    row("format", &|r| {
        Cell::text(if r.weights_from_files {
            "files as stored"
        } else {
            r.options.format.name()
        })
    });
    row("tokens × batch", &|r| {
        Cell::text(format!(
            "{} × {}",
            thousands(r.options.seq_len),
            r.options.batch
        ))
    });
    row("parameters", &|r| Cell::count(r.params));
    row("weights", &|r| Cell::bytes_both(r.weights_bytes));
    row("KV cache", &|r| {
        if r.kv.is_empty() {
            Cell::text("none").raw(Raw::Int(0))
        } else {
            Cell::bytes_both(r.kv_bytes)
        }
    });
    if models.iter().any(|(_, r)| r.state_bytes > 0) {
        row("recurrent state", &|r| Cell::bytes_both(r.state_bytes));
    }
    row("activations", &|r| Cell::bytes_both(r.activation_bytes));
    row("runtime overhead", &|r| {
        Cell::bytes_both(r.options.overhead_bytes)
    });
    row("per GPU", &|r| Cell::bytes_both(r.per_gpu));
    row("total", &|r| Cell::bytes_both(r.total).tone(Tone::Strong));
    if models.iter().any(|(_, r)| r.fits.is_some()) {
        row("fits", &|r| {
            let on = match r.options.gpu {
                Some((g, n)) => format!(" ({n} × {})", g.name),
                None => String::new(),
            };
            match r.fits {
                Some(true) => Cell::text(format!("yes{on}")).short("yes").tone(Tone::Good),
                Some(false) => Cell::text(format!("no{on}")).short("no").tone(Tone::Bad),
                None => Cell::text("-"),
            }
        });
    }
    // Every model was asked about the same GPU: named once when the cells are short.
    t.short_note = models
        .iter()
        .find_map(|(_, r)| r.options.gpu)
        .map(|(g, n)| format!("fits: on {n} × {} ({})", g.name, g.memory_source));
    let mut doc = Doc::new();
    doc.table(t);
    // What every model assumes is said once; what one model adds, under its name.
    let common: Vec<&String> = models.first().map_or_else(Vec::new, |(_, r)| {
        r.assumptions
            .iter()
            .filter(|a| models.iter().all(|(_, m)| m.assumptions.contains(a)))
            .collect()
    });
    doc.blank().heading("assumptions");
    for a in &common {
        doc.line(format!("  {a}"));
    }
    for (name, r) in models {
        for a in r.assumptions.iter().filter(|a| !common.contains(a)) {
            doc.line(format!("  {name}: {a}"));
        }
    }
    doc
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::doc::TextOptions;

    #[test]
    fn sizes_drop_their_decimal_unit_only_on_a_narrow_terminal() {
        // A placement-like table of two sizes: one line per row at 100 columns, binary
        // units alone at 40 (and CSV's number either way).
        let mut t = Table::new(
            "placement",
            vec![
                Column::left("device"),
                Column::right("weights"),
                Column::right("total"),
            ],
        );
        t.push(vec![
            Cell::text("GPU 0"),
            Cell::bytes_both(4_194_304),
            Cell::bytes_both(16_498_955_264),
        ]);
        t.short_note = Some("on 1 × a GPU".into());
        let mut doc = Doc::new();
        doc.table(t);
        let wide = doc.to_text(&TextOptions {
            width: Some(100),
            color: false,
        });
        assert!(
            wide.contains("4.00 MiB (4.19 MB)") && !wide.contains("on 1 ×"),
            "{wide}"
        );
        let narrow = doc.to_text(&TextOptions {
            width: Some(40),
            color: false,
        });
        assert!(
            narrow.contains("GPU 0   4.00 MiB  15.37 GiB") && narrow.contains("on 1 × a GPU"),
            "{narrow}"
        );
        assert!(doc.to_csv().contains("placement,GPU 0,4194304,16498955264"));
    }
}
