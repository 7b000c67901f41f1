//! `llmsize train`: one training step's memory per GPU and its compute.

use llmsize_core::render;
use llmsize_engine::{Parallelism, TrainRequest};

use super::{engine, hub};
use crate::cli::TrainArgs;
use crate::{Failure, Outcome, output};

/// Arguments → the engine's request.
pub(crate) fn request(args: &TrainArgs) -> TrainRequest {
    TrainRequest {
        model: args.model.model.clone(),
        overrides: args.model.set.clone(),
        assume: args.model.assume.clone(),
        text_only: args.model.text_only,
        hub: hub(&args.model.hub),
        seq_len: args.seq_len,
        batch: args.batch,
        dtype: args.dtype.clone(),
        attn_impl: args.attn_impl.clone(),
        checkpointing: args.checkpointing,
        device: args.device.clone(),
        attention: args.attention,
        lora_rank: args.lora_rank,
        lora_targets: args.lora_targets.clone(),
        lora_dropout: args.lora_dropout,
        dora: args.dora,
        qlora: args.qlora,
        freeze: args.freeze.clone(),
        precision: args.precision.clone(),
        optimizer: args.optimizer.clone(),
        parallel: Parallelism::default(),
        gpu: args.gpu.clone(),
    }
}

pub(crate) fn run(args: &TrainArgs) -> Result<Outcome, Failure> {
    let outcome = engine().train(&request(args))?;
    output::warn_all(&outcome.warnings);
    let text = if args.json {
        outcome.to_json()?
    } else {
        render::train::render(&outcome.name, &outcome.report, outcome.gpu, args.explain)
    };
    output::print(&text)?;
    Ok(if outcome.fits() {
        Outcome::Success
    } else {
        Outcome::No
    })
}
