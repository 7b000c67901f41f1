//! `llmsize memory`: can I run it?

use llmsize_core::render;
use llmsize_engine::{CustomGpuFlags, MemoryRequest, MemoryResult, RuntimeFlags, Sweep};

use super::{Env, Rendered, doc_text, hub};
use crate::Failure;
use crate::cli::{Format, MemoryArgs};

/// Arguments → the engine's request.
pub(crate) fn request(args: &MemoryArgs) -> Result<MemoryRequest, Failure> {
    let read = &args.model.read;
    Ok(MemoryRequest {
        models: args.model.models.clone(),
        overrides: read.set.clone(),
        assume: read.assume.clone(),
        text_only: read.text_only,
        images: read.images,
        image_tokens: read.image_tokens,
        hub: hub(&read.hub),
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

pub(crate) fn run(args: &MemoryArgs, env: &Env) -> Result<Rendered, Failure> {
    let outcome = env.engine.memory(&request(args)?)?;
    let format = args.out.format();
    let text = if format == Format::Json {
        outcome.to_json()?
    } else if format == Format::Svg {
        llmsize_charts::memory_svg(&outcome)?
    } else if format == Format::Mermaid {
        return Err(super::no_picture("memory", format));
    } else {
        let singles: Option<Vec<_>> = outcome
            .models
            .iter()
            .map(|m| match &m.result {
                MemoryResult::Single { report, .. } => Some((m.name.as_str(), &**report)),
                MemoryResult::Sweep { .. } => None,
            })
            .collect();
        let doc = match &singles {
            // Several models at one point: side by side (`--explain` and `--max-context`
            // print each in full).
            Some(list) if list.len() > 1 && !args.explain && !args.max_context => {
                render::memory::comparison_doc(list)
            }
            _ => {
                let mut doc = render::doc::Doc::new();
                for (i, m) in outcome.models.iter().enumerate() {
                    if i > 0 {
                        doc.blank();
                    }
                    doc.extend(match &m.result {
                        MemoryResult::Single {
                            report,
                            max_context,
                        } => render::memory::doc(&m.name, report, *max_context, args.explain),
                        MemoryResult::Sweep { axis, points } => {
                            let points: Vec<_> =
                                points.iter().map(|(v, r)| (v.label(), r)).collect();
                            render::memory::sweep_doc(&m.name, axis.as_str(), &points)
                        }
                    });
                    // The weight files measured, and those beside them that were not read.
                    if let Some(files) = &m.files {
                        doc.blank().table(files.table());
                    }
                }
                doc
            }
        };
        doc_text(&doc, format, env)
    };
    let fits = outcome.fits();
    Ok(Rendered::new(text, outcome.warnings).status(fits))
}
