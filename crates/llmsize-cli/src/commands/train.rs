//! `llmsize train`: one training step's memory per GPU and its compute.

use llmsize_engine::{Parallelism, TrainRequest};
use llmsize_train::render;

use super::{Env, Rendered, doc_text, hub};
use crate::Failure;
use crate::cli::{Format, TrainArgs};

/// Arguments → the engine's request.
pub(crate) fn request(args: &TrainArgs) -> TrainRequest {
    TrainRequest {
        model: args.model.model.clone(),
        overrides: args.model.read.set.clone(),
        assume: args.model.read.assume.clone(),
        text_only: args.model.read.text_only,
        hub: hub(&args.model.read.hub),
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
        parallel: Parallelism {
            dp: 1,
            tp: args.tp,
            pp: args.pp,
            cp: args.cp,
            ep: args.ep,
            zero: args.zero,
            shard_group: args.shard_group,
            sequence_parallel: args.sp,
            offload_optimizer: args.offload_optimizer,
            offload_params: args.offload_params,
            micro_batches: args.micro_batches.unwrap_or(1),
            interleave: args.interleave,
        },
        gpu: args.gpu.clone(),
        dp: args.dp,
        fsdp: args.fsdp.clone(),
        micro_batches_default: args.micro_batches.is_none(),
        max_batch: args.max_batch,
        max_seq: args.max_seq,
        tokens: args.tokens,
        mfu: args.mfu,
        price: args.price,
    }
}

pub(crate) fn run(args: &TrainArgs, env: &Env) -> Result<Rendered, Failure> {
    // The model options `train` shares with `memory` and `flops` include the image positions,
    // which a training step does not count yet: refused, never silently left out.
    let read = &args.model.read;
    if read.images != 0 || read.image_tokens.is_some() {
        return Err(Failure::Usage(
            "`llmsize train` does not count image positions (`--images`, `--image-tokens`): give `--seq-len` with the image positions included".to_owned(),
        ));
    }
    let outcome = env.engine.train(&request(args))?;
    let format = args.out.format();
    let text = if format == Format::Json {
        outcome.to_json()?
    } else if format == Format::Svg {
        llmsize_charts::train_svg(&outcome)?
    } else if format == Format::Mermaid {
        return Err(super::no_picture("train", format));
    } else {
        let doc = render::doc(&render::View {
            name: &outcome.name,
            report: &outcome.report,
            gpu: outcome.gpu,
            parallel: &outcome.parallel,
            suggestions: &outcome.suggestions,
            max_batch: outcome.max_batch,
            max_seq: outcome.max_seq,
            time: outcome.time.as_ref(),
            explain: args.explain,
        });
        doc_text(&doc, format, env)
    };
    let fits = outcome.fits();
    Ok(Rendered::new(text, outcome.warnings.clone()).status(fits))
}
