//! Roofline speed estimates: prefill is compute bound, decode is bandwidth bound at small
//! batch. `time = max(bytes / (bandwidth·efficiency), FLOPs / (peak·MFU))`, with the
//! efficiencies as stated inputs, never hidden constants.

use crate::error::SpecError;
use crate::flops::FlopsReport;
use crate::formats::WeightFormat;
use crate::gpu::Gpu;
use crate::layout::{TensorKind, tensors};
use crate::memory::{MemoryReport, mix_context};
use crate::spec::{Ffn, ModelSpec};

/// Efficiency assumptions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpeedOptions {
    /// The GPU.
    pub gpu: &'static Gpu,
    /// GPUs working on one model (tensor parallel, ideal scaling).
    pub gpus: u64,
    /// Model FLOPs utilisation reached in prefill (default 0.5).
    pub mfu: f64,
    /// Fraction of peak bandwidth reached in decode (default 0.8).
    pub bandwidth_efficiency: f64,
}

/// The estimate.
#[derive(Debug, Clone, PartialEq)]
pub struct SpeedReport {
    /// The inputs.
    pub options: SpeedOptions,
    /// Peak FLOP/s used (16-bit, or FP8 for FP8 weights on a part that has it).
    pub peak: f64,
    /// Prefill of the whole prompt, seconds.
    pub prefill_seconds: f64,
    /// Bytes read per decode step (weights touched + KV of the batch).
    pub decode_bytes: u64,
    /// FLOPs per decode step (the batch).
    pub decode_flops: u128,
    /// Seconds per decode step.
    pub decode_step_seconds: f64,
    /// `memory` or `compute`.
    pub decode_bound: &'static str,
    /// Tokens per second for the batch.
    pub decode_tokens_per_second: f64,
    /// Tokens per second of one sequence.
    pub per_sequence_tokens_per_second: f64,
    /// Whether the model fits the GPUs at this length and batch (weights, KV, workspace).
    pub fits: Option<bool>,
    /// Memory needed per GPU, bytes.
    pub memory_per_gpu: u64,
    /// Assumptions.
    pub assumptions: Vec<String>,
}

/// Bytes of routed experts under a format.
fn expert_bytes(spec: &ModelSpec, format: WeightFormat) -> Result<u64, SpecError> {
    let ctx = mix_context(spec);
    let mut sum = 0u64;
    for t in tensors(spec)? {
        if matches!(
            t.kind,
            TensorKind::ExpertGate | TensorKind::ExpertUp | TensorKind::ExpertDown
        ) {
            let stored = format
                .tensor_storage(&t, ctx)
                .ok_or_else(|| SpecError::Invalid {
                    field: t.name.to_string(),
                    found: "a size that overflows".into(),
                    expected: "a smaller model".into(),
                })?;
            for (_, b, _) in stored {
                sum = sum.checked_add(b).ok_or_else(|| SpecError::TooLarge {
                    what: "expert bytes".into(),
                })?;
            }
        }
    }
    Ok(sum)
}

#[expect(clippy::cast_precision_loss, reason = "estimates in floating point")]
/// Estimate prefill time and decode throughput.
pub fn speed(
    spec: &ModelSpec,
    memory: &MemoryReport,
    flops: &FlopsReport,
    options: SpeedOptions,
) -> Result<SpeedReport, SpecError> {
    let gpus = options.gpus.max(1) as f64;
    let fp8 = memory.options.format.is_fp8();
    let peak = match (fp8, options.gpu.peak_fp8) {
        (true, Some(p)) => p,
        _ => options.gpu.peak_16bit,
    };
    let prefill_seconds = flops.forward_flops as f64 / (gpus * peak * options.mfu);
    // Decode reads every weight once per step, except routed experts: a step touches at most
    // min(E, batch·k) of each layer's E experts.
    let mut touched = 1.0f64;
    for l in spec.layers_by_run() {
        if let Ffn::Moe(m) = &l.ffn {
            touched = ((flops.batch.saturating_mul(m.experts_per_token)).min(m.num_experts) as f64)
                / m.num_experts as f64;
        }
    }
    let experts = expert_bytes(spec, memory.options.format)?;
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "0 ≤ touched ≤ 1, so the product is a non-negative byte count below `experts`"
    )]
    let touched_bytes = (experts as f64 * touched).round() as u64;
    let weights_read = memory.weights_bytes - experts + touched_bytes;
    let decode_bytes = weights_read.saturating_add(memory.kv_bytes);
    let decode_flops = flops
        .per_token_flops
        .saturating_mul(u128::from(flops.batch));
    let t_mem = decode_bytes as f64 / (gpus * options.gpu.bandwidth * options.bandwidth_efficiency);
    let t_compute = decode_flops as f64 / (gpus * peak * options.mfu);
    let (decode_step_seconds, decode_bound) = if t_mem >= t_compute {
        (t_mem, "memory")
    } else {
        (t_compute, "compute")
    };
    let decode_tokens_per_second = flops.batch as f64 / decode_step_seconds;
    let assumptions = vec![
        format!(
            "prefill: forward FLOPs / ({} GPU × {:.1} TFLOP/s dense peak × MFU {})",
            options.gpus,
            peak / 1e12,
            options.mfu
        ),
        format!(
            "decode step: max(bytes read / ({} GPU × {:.0} GB/s × {}), FLOPs / (peak × MFU)); bytes = weights touched + the batch's KV cache at {} tokens",
            options.gpus,
            options.gpu.bandwidth / 1e9,
            options.bandwidth_efficiency,
            flops.seq_len
        ),
        "tensor parallelism scales ideally (no communication time)".to_owned(),
        format!("peaks and bandwidth: {}", options.gpu.source),
    ];
    Ok(SpeedReport {
        options,
        peak,
        prefill_seconds,
        decode_bytes,
        decode_flops,
        decode_step_seconds,
        decode_bound,
        decode_tokens_per_second,
        per_sequence_tokens_per_second: 1.0 / decode_step_seconds,
        fits: memory.fits,
        memory_per_gpu: memory.per_gpu,
        assumptions,
    })
}
