//! `llmsize memory`: can I run it?

use llmsize_core::render;
use llmsize_engine::{CustomGpuFlags, MemoryRequest, MemoryResult, RuntimeFlags, Sweep};

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
        custom_gpu: CustomGpuFlags {
            memory: args.gpu_mem.clone(),
            bandwidth: args.gpu_bw.clone(),
            tflops: args.gpu_tflops.clone(),
        },
        tp: args.tp,
        pp: args.pp,
        runtime: RuntimeFlags {
            runtime: args.runtime,
            ctx_size: args.ctx_size,
            n_gpu_layers: args.n_gpu_layers,
            tensor_split: args.tensor_split.clone(),
            swa_full: args.swa_full,
            gpu_memory_utilization: args.gpu_memory_utilization,
            block_size: args.block_size,
            max_model_len: args.max_model_len,
            max_num_batched_tokens: args.max_num_batched_tokens,
        },
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
        match &outcome.result {
            MemoryResult::Single {
                report,
                max_context,
            } => render::memory::render(&outcome.name, report, *max_context, args.explain),
            MemoryResult::Sweep { axis, points } => {
                render::memory::render_sweep(&outcome.name, axis.as_str(), points)
            }
        }
    };
    output::print(&text)?;
    Ok(if outcome.fits() {
        Outcome::Success
    } else {
        Outcome::No
    })
}
