//! `llmsize flops`: FLOPs by component, and speed on a GPU.

use llmsize_core::flops::{AttentionConvention, flops};
use llmsize_core::memory::{CachePolicy, MemoryOptions, MlaCache, memory};
use llmsize_core::render;
use llmsize_core::speed::{SpeedOptions, speed};

use super::memory::{gpu_spec, kv_dtype, read_model, weight_format};
use crate::Outcome;
use crate::cli::{AttentionArg, FlopsArgs};
use crate::output;
use crate::resolve::{Want, with_hint};

pub(crate) fn run(args: &FlopsArgs) -> anyhow::Result<Outcome> {
    let (spec, _) = read_model(&args.model, Want::No)?;
    let wrap = |e: llmsize_core::SpecError| anyhow::anyhow!("{}: {e}", spec.name);
    let convention = match args.attention {
        AttentionArg::Causal => AttentionConvention::Causal,
        AttentionArg::Full => AttentionConvention::Full,
    };
    for (flag, v) in [("--mfu", args.mfu), ("--bw-eff", args.bw_eff)] {
        if !(v > 0.0 && v <= 1.0) {
            return Err(with_hint(
                format!("`{flag} {v}` is out of range"),
                "give a fraction in (0, 1], e.g. 0.5".into(),
            ));
        }
    }
    // Validate every flag up front, even those only the speed estimate uses.
    let format = weight_format(&args.dtype)?;
    let kv = kv_dtype(&args.kv_dtype)?;
    let report = flops(&spec, args.seq_len, args.batch, convention).map_err(wrap)?;
    let speed_report = match gpu_spec(args.gpu.as_deref())? {
        None => None,
        Some((gpu, count)) => {
            let mem = memory(
                &spec,
                &MemoryOptions {
                    format,
                    seq_len: args.seq_len,
                    batch: args.batch,
                    kv_dtype: kv,
                    tp: count,
                    gpu: Some((gpu, count)),
                    mla: MlaCache::Latent,
                    window: CachePolicy::Transformers,
                    overhead_bytes: 0,
                },
            )
            .map_err(wrap)?;
            Some(
                speed(
                    &spec,
                    &mem,
                    &report,
                    SpeedOptions {
                        gpu,
                        gpus: count,
                        mfu: args.mfu,
                        bandwidth_efficiency: args.bw_eff,
                    },
                )
                .map_err(wrap)?,
            )
        }
    };
    let text = if args.json {
        serde_json::to_string_pretty(&render::flops::value(
            &spec.name,
            &report,
            speed_report.as_ref(),
        ))? + "\n"
    } else {
        render::flops::render(&spec.name, &report, speed_report.as_ref(), args.explain)
    };
    output::print(&text)?;
    Ok(Outcome::Success)
}
