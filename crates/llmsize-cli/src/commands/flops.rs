//! `llmsize flops`: FLOPs by component, and speed on a GPU.

use llmsize_core::render;
use llmsize_core::render::doc::Doc;
use llmsize_engine::{FlopsRequest, Sweep, Swept};

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

/// A point's notes on its options, one line each.
fn notes(doc: &mut Doc, notes: &[String]) {
    for n in notes {
        doc.line(format!("note: {n}"));
    }
}

pub(crate) fn run(args: &FlopsArgs, env: &Env) -> Result<Rendered, Failure> {
    let outcome = env.engine.flops(&request(args)?)?;
    let points = &outcome.points;
    let format = args.out.format();
    match format {
        Format::Json => return Ok(Rendered::new(outcome.to_json()?, outcome.warnings)),
        Format::Svg => {
            return Ok(Rendered::new(
                llmsize_charts::flops_svg(&outcome)?,
                outcome.warnings,
            ));
        }
        Format::Mermaid => return Err(super::no_picture("flops", format)),
        Format::Table | Format::Markdown | Format::Csv => {}
    }
    let mut doc = Doc::new();
    if let Some(axis) = outcome.sweep {
        // One table per model, a row per value.
        for (i, run) in points.chunk_by(|a, b| a.name == b.name).enumerate() {
            if i > 0 {
                doc.blank();
            }
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
            let mut notes_of: Vec<String> = run.iter().flat_map(|p| p.notes.clone()).collect();
            notes_of.dedup();
            notes(&mut doc, &notes_of);
            let name = run.first().map_or("", |p| p.name.as_str());
            doc.extend(render::flops::sweep_doc(name, axis.as_str(), &rows));
        }
    } else if points.len() > 1 && !args.explain {
        let list: Vec<_> = points
            .iter()
            .map(|p| (p.name.clone(), &p.report, p.speed.as_ref()))
            .collect();
        for p in points {
            notes(&mut doc, &p.notes);
        }
        doc.extend(render::flops::comparison_doc(&list));
    } else {
        for (i, p) in points.iter().enumerate() {
            if i > 0 {
                doc.blank();
            }
            notes(&mut doc, &p.notes);
            doc.extend(render::flops::doc(
                &p.name,
                &p.report,
                p.speed.as_ref(),
                args.explain,
            ));
        }
    }
    Ok(Rendered::new(doc_text(&doc, format, env), outcome.warnings))
}
