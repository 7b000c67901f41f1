//! `llmsize flops`: FLOPs by component, and speed on a GPU.

use llmsize_core::render;
use llmsize_engine::FlopsRequest;

use super::{engine, hub};
use crate::cli::FlopsArgs;
use crate::{Failure, Outcome, output};

/// Arguments → the engine's request.
pub(crate) fn request(args: &FlopsArgs) -> FlopsRequest {
    FlopsRequest {
        model: args.model.model.clone(),
        overrides: args.model.set.clone(),
        assume: args.model.assume.clone(),
        text_only: args.model.text_only,
        images: args.model.images,
        image_tokens: args.model.image_tokens,
        hub: hub(&args.model.hub),
        seq_len: args.seq_len,
        batch: args.batch,
        attention: args.attention,
        gpu: args.gpu.clone(),
        dtype: args.dtype.clone(),
        kv_dtype: args.kv_dtype.clone(),
        mfu: args.mfu,
        bw_eff: args.bw_eff,
    }
}

pub(crate) fn run(args: &FlopsArgs) -> Result<Outcome, Failure> {
    let outcome = engine().flops(&request(args))?;
    output::warn_all(&outcome.warnings);
    let text = if args.json {
        outcome.to_json()?
    } else {
        render::flops::render(
            &outcome.name,
            &outcome.report,
            outcome.speed.as_ref(),
            args.explain,
        )
    };
    output::print(&text)?;
    Ok(Outcome::Success)
}
