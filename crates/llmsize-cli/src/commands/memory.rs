//! `llmsize memory`: can I run it?

use llmsize_core::render;
use llmsize_engine::{MemoryRequest, MemoryResult, Sweep};

use super::{engine, hub};
use crate::cli::MemoryArgs;
use crate::{Failure, Outcome, output};

/// Arguments → the engine's request.
pub(crate) fn request(args: &MemoryArgs) -> Result<MemoryRequest, Failure> {
    Ok(MemoryRequest {
        model: args.model.model.clone(),
        overrides: args.model.set.clone(),
        assume: args.model.assume.clone(),
        text_only: args.model.text_only,
        images: args.model.images,
        image_tokens: args.model.image_tokens,
        hub: hub(&args.model.hub),
        dtype: args.dtype.clone(),
        seq_len: args.seq_len,
        batch: args.batch,
        kv_dtype: args.kv_dtype.clone(),
        gpu: args.gpu.clone(),
        tp: args.tp,
        mla_cache: args.mla_cache,
        cache: args.cache,
        overhead_mib: args.overhead,
        max_context: args.max_context,
        sweep: args.sweep.as_deref().map(Sweep::parse).transpose()?,
    })
}

pub(crate) fn run(args: &MemoryArgs) -> Result<Outcome, Failure> {
    let outcome = engine().memory(&request(args)?)?;
    output::warn_all(&outcome.warnings);
    let text = if args.json {
        outcome.to_json()?
    } else {
        let table = match &outcome.result {
            MemoryResult::Single {
                report,
                max_context,
            } => render::memory::render(&outcome.name, report, *max_context, args.explain),
            MemoryResult::Sweep { axis, points } => {
                render::memory::render_sweep(&outcome.name, axis.as_str(), points)
            }
        };
        // The weight files measured, and those beside them that were not read.
        match &outcome.files {
            Some(files) => format!("{table}\n{}", files.table()),
            None => table,
        }
    };
    output::print(&text)?;
    Ok(if outcome.fits() {
        Outcome::Success
    } else {
        Outcome::No
    })
}
