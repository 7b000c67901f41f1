//! Does the step fit, and if not, what to change: the cheapest changes that make it fit, the
//! largest batch or sequence that fits, and the time and money a training run takes.
//!
//! Every answer re-runs [`super::train`] on changed options, so a suggestion's total is the
//! same exact arithmetic as the report's, never a rule of thumb.

use crate::lora::{LoraOptions, LoraTargets};
use crate::states::Optimizer;
use crate::{TrainOptions, TrainReport, train};
use llmsize_core::SpecError;
use llmsize_core::checked::{self, Checked};
use llmsize_core::error::NotFinite;
use llmsize_core::gpu::Gpu;
use llmsize_core::spec::ModelSpec;
use llmsize_core::units::{float_text, thousands};

/// One change and what it gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Suggestion {
    /// The change, as flags (`--checkpointing`).
    pub flags: String,
    /// What it does and costs, in words.
    pub why: String,
    /// The most loaded GPU's bytes after the change.
    pub per_gpu_bytes: u128,
    /// It fits the capacity.
    pub fits: bool,
}

/// Changes to try, cheapest first: what each costs the run (compute, communication, a
/// different training method) decides the order.
fn candidates(options: &TrainOptions) -> Vec<(String, String, TrainOptions)> {
    let mut out = Vec::new();
    let mut push = |flags: &str, why: &str, change: &dyn Fn(&mut TrainOptions)| {
        let mut o = options.clone();
        change(&mut o);
        if o != *options {
            out.push((flags.to_owned(), why.to_owned(), o));
        }
    };
    push(
        "--optimizer adamw-8bit",
        "8-bit AdamW states (bitsandbytes): same method, about a quarter of the state bytes",
        &|o| o.optimizer = Optimizer::AdamW8bit,
    );
    push(
        "--checkpointing",
        "recompute each layer in the backward: about one more forward of compute",
        &|o| o.checkpointing = true,
    );
    if options.parallel.dp > 1 {
        for stage in (0..=3).filter(|&s| s > options.parallel.zero) {
            push(
                &format!("--zero {stage}"),
                match stage {
                    1 => "shard optimizer states over the data-parallel GPUs (ZeRO-1)",
                    2 => "shard optimizer states and gradients (ZeRO-2)",
                    _ => "shard parameters too (ZeRO-3 / FSDP full shard): more communication",
                },
                &|o| o.parallel.zero = stage,
            );
        }
    }
    push("--checkpointing --optimizer adamw-8bit", "both", &|o| {
        o.checkpointing = true;
        o.optimizer = Optimizer::AdamW8bit;
    });
    if options.lora.is_none() {
        push(
            "--lora-rank 16",
            "LoRA r=16 on all linear layers: a different method (adapters on a frozen base)",
            &|o| {
                o.lora = Some(LoraOptions {
                    rank: 16,
                    targets: LoraTargets::AllLinear,
                    dropout: 0.0,
                    dora: false,
                });
            },
        );
        push(
            "--lora-rank 16 --checkpointing",
            "LoRA with gradient checkpointing",
            &|o| {
                o.checkpointing = true;
                o.lora = Some(LoraOptions {
                    rank: 16,
                    targets: LoraTargets::AllLinear,
                    dropout: 0.0,
                    dora: false,
                });
            },
        );
    }
    if options.base_format.is_none() {
        push(
            "--qlora --lora-rank 16 --checkpointing",
            "QLoRA: the frozen base in NF4 with double quantization, adapters in fp32",
            &|o| {
                o.checkpointing = true;
                o.base_format =
                    Some(llmsize_core::formats::WeightFormat::Nf4 { double_quant: true });
                if o.lora.is_none() {
                    o.lora = Some(LoraOptions {
                        rank: 16,
                        targets: LoraTargets::AllLinear,
                        dropout: 0.0,
                        dora: false,
                    });
                }
            },
        );
    }
    if !options.parallel.offload_optimizer && options.lora.is_none() {
        push(
            "--offload-optimizer",
            "optimizer states and master weights in CPU memory: slower steps",
            &|o| o.parallel.offload_optimizer = true,
        );
    }
    out
}

/// The cheapest changes, in order, each with its new per-GPU total; those that fit first.
pub fn suggestions(
    spec: &ModelSpec,
    options: &TrainOptions,
    capacity: u128,
) -> Result<Vec<Suggestion>, SpecError> {
    let mut out = Vec::new();
    for (flags, why, o) in candidates(options) {
        // A change that is not valid for this model (no module to adapt) is not suggested.
        let Ok(r) = train(spec, &o) else { continue };
        out.push(Suggestion {
            flags,
            why,
            per_gpu_bytes: r.step_peak,
            fits: r.step_peak <= capacity,
        });
    }
    out.sort_by_key(|s| !s.fits);
    Ok(out)
}

/// The largest value of `set` in `1..=limit` for which the step fits, by bisection (the
/// per-GPU bytes grow with batch and with sequence length); `None` when even 1 does not fit.
pub fn largest_fitting(
    spec: &ModelSpec,
    options: &TrainOptions,
    capacity: u128,
    limit: u64,
    set: impl Fn(&mut TrainOptions, u64),
) -> Result<Option<u64>, SpecError> {
    let fits = |v: u64| -> Result<bool, SpecError> {
        let mut o = options.clone();
        set(&mut o, v);
        match train(spec, &o) {
            Ok(r) => Ok(r.step_peak <= capacity),
            // Too large to count is too large to fit.
            Err(SpecError::TooLarge { .. } | SpecError::Overflow(_)) => Ok(false),
            Err(e) => Err(e),
        }
    };
    if !fits(1)? {
        return Ok(None);
    }
    let (mut lo, mut hi) = (1u64, limit.max(1));
    if fits(hi)? {
        return Ok(Some(hi));
    }
    // lo fits, hi does not.
    while hi.checked_sub(lo).is_some_and(|gap| gap > 1) {
        let mid = lo.midpoint(hi);
        if fits(mid)? {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(Some(lo))
}

/// Time and money for a run of `tokens` tokens.
#[derive(Debug, Clone, PartialEq)]
pub struct TimeCost {
    /// GPUs of the run.
    pub gpus: u64,
    /// Tokens per step over every data-parallel replica.
    pub tokens_per_step: u64,
    /// Training FLOPs per token (the exact step's FLOPs over its tokens).
    pub flops_per_token: f64,
    /// Tokens per second at the MFU.
    pub tokens_per_second: f64,
    /// Seconds per step.
    pub step_seconds: f64,
    /// The run's tokens.
    pub tokens: u64,
    /// The run's FLOPs.
    pub run_flops: f64,
    /// The article's `6·P·D`.
    pub six_pd: f64,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// GPU-hours.
    pub gpu_hours: f64,
    /// Cost at the price, when given.
    pub cost: Option<f64>,
    /// The MFU assumed.
    pub mfu: f64,
}

/// Time and cost of training on `tokens` tokens with `gpus` of `gpu` at `mfu`.
///
/// One step of a data-parallel replica processes `batch·seq_len` tokens on `tp·pp·cp` GPUs;
/// the run's FLOPs are the exact step's FLOPs per token times the tokens. A figure the inputs
/// make infinite (a price near `f64::MAX`) is a [`NotFinite`] naming it and its values, never
/// a number printed as data.
#[expect(
    clippy::cast_precision_loss,
    reason = "time estimates are floating point"
)]
pub fn time_cost(
    report: &TrainReport,
    options: &TrainOptions,
    gpu: &Gpu,
    gpus: u64,
    mfu: f64,
    tokens: u64,
    price_per_gpu_hour: Option<f64>,
) -> Result<TimeCost, SpecError> {
    let p = &options.parallel;
    let replica_tokens = checked::mul("batch·seq_len", options.batch, options.seq_len)?;
    let tokens_per_step = (Checked::new(replica_tokens) * p.dp * p.micro_batches.max(1))
        .get("batch·seq_len·dp·micro-batches (tokens per step)")?;
    let f = float_text;
    let flops_per_token = report.flops.train_step as f64 / replica_tokens.max(1) as f64;
    let throughput = gpu.peak_16bit * mfu * gpus as f64;
    let tokens_per_second = NotFinite::check(
        throughput / flops_per_token.max(1.0),
        (
            "throughput",
            "peak·MFU·GPUs / FLOPs per token",
            "tokens per second",
        ),
        || {
            format!(
                "{}·{mfu}·{gpus} / {}",
                f(gpu.peak_16bit),
                f(flops_per_token)
            )
        },
    )?;
    let run_flops = NotFinite::check(
        flops_per_token * tokens as f64,
        ("run's FLOPs", "FLOPs per token · tokens", "FLOPs"),
        || format!("{} · {}", f(flops_per_token), thousands(tokens)),
    )?;
    let seconds = run_flops / throughput.max(1.0);
    let gpu_hours = NotFinite::check(
        seconds * gpus as f64 / 3600.0,
        ("GPU-hours", "seconds · GPUs / 3600", "GPU-hours"),
        || format!("{} · {gpus} / 3600", f(seconds)),
    )?;
    let cost = match price_per_gpu_hour {
        Some(price) => Some(NotFinite::check(
            price * gpu_hours,
            ("cost", "price · GPU-hours", "dollars"),
            || format!("{} · {}", f(price), f(gpu_hours)),
        )?),
        None => None,
    };
    Ok(TimeCost {
        gpus,
        tokens_per_step,
        flops_per_token,
        tokens_per_second,
        step_seconds: tokens_per_step as f64 / tokens_per_second.max(f64::MIN_POSITIVE),
        tokens,
        run_flops,
        six_pd: 6.0 * report.params as f64 * tokens as f64,
        seconds,
        gpu_hours,
        cost,
        mfu,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use llmsize_core::design::{Design, Style, design_spec};
    use llmsize_core::gpu::find;

    /// LLaMA-7B by design (d 4096, 32 layers, V 32000), one step of the default options
    /// (2048 tokens, batch 1, bf16), on H100s.
    fn run(gpus: u64, tokens: u64, price: Option<f64>) -> Result<TimeCost, SpecError> {
        let spec = design_spec(
            &Design {
                hidden: 4096,
                layers: 32,
                vocab: Some(32_000),
                ..Design::default()
            },
            Style::Llama,
        )
        .unwrap();
        let options = TrainOptions::default();
        let report = train(&spec, &options).unwrap();
        let h100 = find("h100").unwrap();
        time_cost(&report, &options, h100, gpus, 0.4, tokens, price)
    }

    #[test]
    fn a_cost_that_is_not_a_number_is_an_error_naming_it() {
        let t = run(8, 1_000_000_000_000, Some(2.0)).unwrap();
        assert_eq!(t.cost, Some(2.0 * t.gpu_hours));
        // 1e308 dollars per GPU-hour times thousands of GPU-hours is past f64::MAX.
        let hours = float_text(t.gpu_hours);
        assert!(t.gpu_hours > 100.0 && hours.contains(','), "{hours}");
        let Err(SpecError::NotFinite(e)) = run(8, 1_000_000_000_000, Some(1e308)) else {
            panic!("an infinite cost")
        };
        assert_eq!(
            e.to_string(),
            format!(
                "the cost `price · GPU-hours` = 1e308 · {hours} is not a finite number of dollars"
            )
        );
    }

    #[test]
    fn tokens_per_step_past_u64_are_an_error() {
        let spec = design_spec(
            &Design {
                hidden: 256,
                layers: 2,
                vocab: Some(128),
                ..Design::default()
            },
            Style::Llama,
        )
        .unwrap();
        let mut options = TrainOptions::default();
        let report = train(&spec, &options).unwrap();
        // The report is the default step's; the options now claim 2^40 data-parallel
        // replicas of 2^30 micro-batches: 2048 · 2^40 · 2^30 tokens per step > 2^64.
        options.parallel.dp = 1 << 40;
        options.parallel.micro_batches = 1 << 30;
        let h100 = find("h100").unwrap();
        let e = time_cost(&report, &options, h100, 8, 0.4, 1000, None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "`batch·seq_len·dp·micro-batches (tokens per step)` overflows 64 bits \
             (with values: 2251799813685248 · 1073741824)"
        );
    }
}
