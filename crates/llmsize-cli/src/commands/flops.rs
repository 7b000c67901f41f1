//! `llmsize flops`: FLOPs by component, and speed on a GPU.

use std::fmt::Write as _;

use llmsize_core::render;
use llmsize_engine::{FlopsPoint, FlopsRequest, Sweep, Swept};

use super::{Env, Rendered, doc_text, hub};
use crate::Failure;
use crate::cli::{FlopsArgs, Format};

/// Arguments → the engine's request.
pub(crate) fn request(args: &FlopsArgs) -> Result<FlopsRequest, Failure> {
    let read = &args.model.read;
    Ok(FlopsRequest {
        models: args.model.models.clone(),
        overrides: read.set.clone(),
        assume: read.assume.clone(),
        text_only: read.text_only,
        images: read.images,
        image_tokens: read.image_tokens,
        hub: hub(&read.hub),
        seq_len: args.seq_len,
        prompt: args.prompt,
        batch: args.batch,
        attention: args.attention,
        gpu: args.gpu.clone(),
        dtype: args.dtype.clone(),
        kv_dtype: args.kv_dtype.clone(),
        mfu: args.mfu,
        bw_eff: args.bw_eff,
        price: args.price,
        sweep: args.sweep.as_deref().map(Sweep::parse).transpose()?,
    })
}

/// Notes on a point's options, one line each.
fn notes(p: &FlopsPoint) -> String {
    p.notes.iter().fold(String::new(), |mut s, n| {
        let _ = writeln!(s, "note: {n}");
        s
    })
}

pub(crate) fn run(args: &FlopsArgs, env: &Env) -> Result<Rendered, Failure> {
    let outcome = env.engine.flops(&request(args)?)?;
    let points = &outcome.points;
    let format = args.out.format();
    if format == Format::Json {
        return Ok(Rendered::new(outcome.to_json()?, outcome.warnings));
    }
    let text = if let Some(axis) = outcome.sweep {
        // One table per model, a row per value.
        let mut out = Vec::new();
        for run in points.chunk_by(|a, b| a.name == b.name) {
            let rows: Vec<_> = run
                .iter()
                .map(|p| {
                    (
                        p.swept.as_ref().map_or_else(String::new, Swept::label),
                        &p.report,
                        p.speed.as_ref(),
                    )
                })
                .collect();
            let mut notes_of: Vec<&String> = run.iter().flat_map(|p| &p.notes).collect();
            notes_of.dedup();
            let mut text = notes_of.iter().fold(String::new(), |mut s, n| {
                let _ = writeln!(s, "note: {n}");
                s
            });
            let name = run.first().map_or("", |p| p.name.as_str());
            text.push_str(&render::flops::render_sweep(name, axis.as_str(), &rows));
            out.push(text);
        }
        out.join("\n")
    } else if points.len() > 1 && !args.explain {
        let list: Vec<_> = points
            .iter()
            .map(|p| (p.name.clone(), &p.report, p.speed.as_ref()))
            .collect();
        let mut text: String = points.iter().map(notes).collect();
        text.push_str(&render::flops::render_comparison(&list));
        text
    } else {
        points
            .iter()
            .map(|p| {
                let mut text = notes(p);
                text.push_str(&render::flops::render(
                    &p.name,
                    &p.report,
                    p.speed.as_ref(),
                    args.explain,
                ));
                text
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    let mut doc = render::doc::Doc::new();
    doc.pre(text);
    Ok(Rendered::new(doc_text(&doc, format, env), outcome.warnings))
}
