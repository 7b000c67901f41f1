//! `llmsize presets` and `llmsize gpus`: the built-in models and GPUs.

use llmsize_core::render::doc::{Cell, Column, Doc, Raw, Table};
use llmsize_core::units::human_count;
use llmsize_engine::wire;

use super::{Env, Rendered, doc_text};
use crate::Failure;
use crate::cli::{Format, PresetsArgs, PresetsListArgs};

pub(crate) fn run(args: &PresetsListArgs, env: &Env) -> Result<Rendered, Failure> {
    let format = args.out.format();
    if matches!(format, Format::Svg | Format::Mermaid) {
        return Err(super::no_picture("presets", format));
    }
    if args.types {
        return types(format, env);
    }
    let rows = llmsize_engine::presets()?;
    if format == Format::Json {
        return Ok(Rendered::new(wire::to_pretty(&rows)?, Vec::new()));
    }
    let mut table = Table::new(
        "presets",
        vec![
            Column::left("preset"),
            Column::right("parameters"),
            Column::right("size"),
            Column::right("active").csv("active_per_token"),
            Column::fold("type"),
            Column::fold("Hugging Face repo"),
        ],
    );
    for r in &rows {
        table.push(vec![
            Cell::text(&r.id),
            Cell::count(r.total),
            Cell::text(human_count(r.total)),
            r.active_per_token.map_or_else(Cell::empty, |a| {
                Cell::with_raw(human_count(a), Raw::Int(i128::from(a)))
            }),
            Cell::text(&r.model_type),
            Cell::text(r.hf_repo.as_deref().unwrap_or("-")),
        ]);
    }
    let mut doc = Doc::new();
    doc.table(table).blank().line(format!(
        "{} built-in models; any config of the {} model types of `llmsize presets --types` is read exactly",
        rows.len(),
        llmsize_engine::model_types().len()
    ));
    Ok(Rendered::new(doc_text(&doc, format, env), Vec::new()))
}

/// `llmsize presets --types`: the registry's model types.
fn types(format: Format, env: &Env) -> Result<Rendered, Failure> {
    let rows = llmsize_engine::model_types();
    if format == Format::Json {
        return Ok(Rendered::new(wire::to_pretty(&rows)?, Vec::new()));
    }
    let mut table = Table::new(
        "model_types",
        vec![
            Column::left("model_type"),
            Column::left("config class"),
            Column::left("reader"),
            Column::fold("default class"),
        ],
    );
    for r in &rows {
        table.push(vec![
            Cell::text(&r.model_type),
            Cell::text(&r.config_class),
            Cell::text(&r.reader),
            Cell::text(&r.default_class),
        ]);
    }
    let mut doc = Doc::new();
    doc.table(table)
        .blank()
        .line(format!("{} model types read exactly", rows.len()));
    Ok(Rendered::new(doc_text(&doc, format, env), Vec::new()))
}

/// `llmsize gpus`.
pub(crate) fn gpus(args: &PresetsArgs, env: &Env) -> Result<Rendered, Failure> {
    let rows = llmsize_engine::gpus();
    let format = args.out.format();
    if matches!(format, Format::Svg | Format::Mermaid) {
        return Err(super::no_picture("gpus", format));
    }
    if format == Format::Json {
        return Ok(Rendered::new(wire::to_pretty(&rows)?, Vec::new()));
    }
    let mut table = Table::new(
        "gpus",
        vec![
            Column::left("gpu"),
            Column::right("memory").csv("memory_bytes"),
            Column::right("bandwidth").csv("bandwidth_bytes_per_s"),
            Column::right("16-bit TFLOP/s").csv("peak_16bit_flops"),
            Column::right("fp8 TFLOP/s").csv("peak_fp8_flops"),
            Column::fold("sources"),
        ],
    );
    for g in &rows {
        table.push(vec![
            Cell::text(&g.name),
            Cell::bytes(g.memory_bytes),
            Cell::with_raw(
                format!("{:.0} GB/s", g.bandwidth_bytes_per_s / 1e9),
                Raw::Float(g.bandwidth_bytes_per_s),
            ),
            Cell::with_raw(
                format!("{:.1}", g.peak_16bit_flops / 1e12),
                Raw::Float(g.peak_16bit_flops),
            ),
            g.peak_fp8_flops.map_or_else(Cell::dash, |p| {
                Cell::with_raw(format!("{:.0}", p / 1e12), Raw::Float(p))
            }),
            Cell::text(format!("memory: {}; {}", g.memory_source, g.source)),
        ]);
    }
    let mut doc = Doc::new();
    doc.table(table);
    Ok(Rendered::new(doc_text(&doc, format, env), Vec::new()))
}
