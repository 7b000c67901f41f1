//! Roofline speed estimates: a step takes `max(bytes / (bandwidth·efficiency),
//! FLOPs / (peak·MFU))`, with the efficiencies as stated inputs, never hidden constants.
//!
//! What a step reads is counted tensor by tensor, because that is where the naive "every weight
//! once per step" goes wrong: a decode step looks up one row of each input table per token (not
//! the whole table; a head tied to the table does read all of it, and it is counted once), a
//! generated token runs the decoder only (an encoder runs once, in prefill), and the routed
//! experts a batch touches are fewer than `min(E, b·k)` because tokens share experts.

use crate::checked::{self, Checked};
use crate::error::{NotFinite, SpecError};
use crate::flops::{AttentionConvention, flops};
use crate::formats::WeightFormat;
use crate::gpu::Gpu;
use crate::layout::{TensorKind, tensors};
use crate::memory::{MemoryOptions, MemoryReport, memory, mix_context, overflow};
use crate::spec::{ModelSpec, OutputHead, StackRole};
use crate::units::{float_text, thousands};

/// Efficiency and price assumptions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpeedOptions {
    /// The GPU.
    pub gpu: &'static Gpu,
    /// GPUs working on one model (tensor parallel, ideal scaling).
    pub gpus: u64,
    /// Model FLOPs utilisation reached in compute-bound phases (default 0.5).
    pub mfu: f64,
    /// Fraction of peak bandwidth reached in memory-bound phases (default 0.8).
    pub bandwidth_efficiency: f64,
    /// Dollars per GPU-hour, for the cost of a million tokens.
    pub price_per_gpu_hour: Option<f64>,
}

/// Which step: a prefill runs every stack over the prompt, a decode step only the decoder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// The prompt, all sequences at once.
    Prefill,
    /// One generated token per sequence.
    Decode,
}

/// Expected routed-expert coverage of a step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ExpertCoverage {
    /// Routed experts per layer, `E`.
    pub experts: u64,
    /// Experts per token, `k`.
    pub per_token: u64,
    /// Tokens of the step, `b`.
    pub tokens: u64,
    /// Expected experts touched per layer, `E·(1 − (1 − k/E)^b)`.
    pub touched: f64,
}

/// What a step reads of the weights.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WeightsRead {
    /// Bytes read.
    pub bytes: u64,
    /// Bytes of every weight stored (for comparison).
    pub stored: u64,
    /// Bytes of input tables (token, position, token-type) read.
    pub embedding_bytes: u64,
    /// Bytes of those tables stored.
    pub embedding_stored: u64,
    /// Routed experts, when the model has them (the first MoE shape; layers with another
    /// shape are counted with their own `E` and `k`).
    pub experts: Option<ExpertCoverage>,
    /// Bytes of routed experts read and stored.
    pub expert_bytes: (u64, u64),
    /// Bytes of an encoder stack and of vision/audio towers a decode step does not run.
    pub skipped_bytes: u64,
}

/// Expected number of distinct routed experts that `tokens` tokens touch in one layer of `e`
/// experts, `k` per token, when every token picks its `k` experts uniformly at random:
/// an expert is missed by one token with probability `1 − k/E`, by all of them with
/// `(1 − k/E)^b`, so `E·(1 − (1 − k/E)^b)` are touched on average.
#[must_use]
#[expect(
    clippy::cast_precision_loss,
    reason = "an expectation in floating point"
)]
pub fn expected_experts(e: u64, k: u64, tokens: u64) -> f64 {
    if e == 0 {
        return 0.0;
    }
    let miss = 1.0 - (k.min(e) as f64 / e as f64);
    e as f64 * (1.0 - miss.powf(tokens as f64))
}

/// `⌈bytes·part/whole⌉` without overflow.
fn share_of(bytes: u64, part: u64, whole: u128) -> u64 {
    if whole == 0 || u128::from(part) >= whole {
        return bytes;
    }
    // bytes·part < 2^128, and the share is below `bytes` (part < whole).
    (Checked::new(u128::from(bytes)) * u128::from(part))
        .div_ceil(whole)
        .ok()
        .and_then(|v| u64::try_from(v).ok())
        .unwrap_or(bytes)
}

/// Rows of a table over its copies, `rows·copies` (a u64 product: it fits u128).
fn rows_of(t: &crate::layout::Tensor) -> u128 {
    (Checked::new(u128::from(t.rows)) * u128::from(t.copies.max(1)))
        .ok()
        .unwrap_or(u128::MAX)
}

/// What one step over `tokens` tokens reads of the weights stored in `format`.
///
/// Each input table (token, learned position, token type) is read one row per token, up to
/// the whole table; a head tied to the token table multiplies by all of it, so that table is
/// read whole (once). Routed experts are read in the expected share
/// `(1 − (1 − k/E)^tokens)`. A decode step skips the encoder stack (run once per request) and
/// the vision/audio towers (run on the images in prefill; their FLOPs are not counted either).
/// Everything else is read once per step, however many tokens share it.
pub fn weights_read(
    spec: &ModelSpec,
    format: WeightFormat,
    tokens: u64,
    phase: Phase,
) -> Result<WeightsRead, SpecError> {
    let ctx = mix_context(spec);
    let tied = matches!(spec.head, OutputHead::Lm { tied: true, .. });
    let mut out = WeightsRead {
        bytes: 0,
        stored: 0,
        embedding_bytes: 0,
        embedding_stored: 0,
        experts: None,
        expert_bytes: (0, 0),
        skipped_bytes: 0,
    };
    let add = |acc: &mut u64, n: u64| -> Result<(), SpecError> {
        *acc = checked::add("bytes read", *acc, n)?;
        Ok(())
    };
    let mut tied_seen = false;
    for t in tensors(spec)? {
        let stored = format
            .tensor_storage(&t, ctx)
            .ok_or_else(|| overflow(&format!("bytes of `{}`", t.name)))?
            .iter()
            .try_fold(0u64, |a, (_, b, _)| {
                checked::add("bytes of a tensor", a, *b)
            })?;
        add(&mut out.stored, stored)?;
        let skipped = t.category.is_modality()
            || (phase == Phase::Decode && t.stack == Some(StackRole::Encoder));
        if skipped {
            add(&mut out.skipped_bytes, stored)?;
            continue;
        }
        let read = match t.kind {
            // The first token table is the one a tied head multiplies by.
            TensorKind::TokenEmbedding if tied && !tied_seen => {
                tied_seen = true;
                add(&mut out.embedding_stored, stored)?;
                add(&mut out.embedding_bytes, stored)?;
                stored
            }
            // A learned table is looked up; T5's relative-bias buckets are all used.
            TensorKind::TokenEmbedding | TensorKind::TokenTypeEmbedding => {
                let r = share_of(stored, tokens, rows_of(&t));
                add(&mut out.embedding_stored, stored)?;
                add(&mut out.embedding_bytes, r)?;
                r
            }
            TensorKind::PositionEmbedding if t.part == "position_embd" => {
                let r = share_of(stored, tokens, rows_of(&t));
                add(&mut out.embedding_stored, stored)?;
                add(&mut out.embedding_bytes, r)?;
                r
            }
            TensorKind::ExpertGate | TensorKind::ExpertUp | TensorKind::ExpertDown => {
                let (e, k) = (t.copies, t.active_copies);
                let touched = expected_experts(e, k, tokens);
                if out.experts.is_none() {
                    out.experts = Some(ExpertCoverage {
                        experts: e,
                        per_token: k,
                        tokens,
                        touched,
                    });
                }
                #[expect(
                    clippy::cast_precision_loss,
                    clippy::cast_possible_truncation,
                    clippy::cast_sign_loss,
                    reason = "0 ≤ touched/E ≤ 1: a non-negative byte count at most `stored`"
                )]
                let r = if e == 0 {
                    stored
                } else {
                    ((stored as f64) * touched / e as f64).round() as u64
                };
                let r = r.min(stored);
                add(&mut out.expert_bytes.0, r)?;
                add(&mut out.expert_bytes.1, stored)?;
                r
            }
            _ => stored,
        };
        add(&mut out.bytes, read)?;
    }
    Ok(out)
}

/// One step of the roofline: prefill of the prompt, or one decode step of a batch.
#[derive(Debug, Clone, PartialEq)]
pub struct StepEstimate {
    /// Sequences.
    pub batch: u64,
    /// Tokens the step produces (decode: one per sequence) or reads (prefill: the prompts).
    pub tokens: u64,
    /// What the step reads of the weights.
    pub weights: WeightsRead,
    /// KV cache (and recurrent state) bytes the step moves: a decode step reads the whole
    /// cache of the batch (and reads and writes the recurrent state); a prefill writes it.
    pub cache_bytes: u64,
    /// Weights read plus cache bytes, all GPUs.
    pub bytes: u64,
    /// What one GPU moves, which sets the time: its share of the weights and its own cache
    /// (KV heads replicated when fewer than the ranks, an MLA latent held by every rank).
    pub bytes_per_gpu: u64,
    /// FLOPs of the step, all sequences.
    pub flops: u128,
    /// Seconds.
    pub seconds: f64,
    /// `memory` or `compute`.
    pub bound: &'static str,
    /// Tokens per second (decode: generated; prefill: prompt tokens).
    pub tokens_per_second: f64,
    /// Dollars per million tokens at `--price`.
    pub cost_per_million: Option<f64>,
    /// Whether the model and this batch's cache fit the GPUs.
    pub fits: Option<bool>,
    /// Memory needed per GPU, bytes.
    pub memory_per_gpu: u64,
}

/// The estimate.
#[derive(Debug, Clone, PartialEq)]
pub struct SpeedReport {
    /// The inputs.
    pub options: SpeedOptions,
    /// Peak FLOP/s of one GPU used (16-bit, or FP8 for FP8 weights on a part that has it).
    pub peak: f64,
    /// Prompt tokens per sequence (the prefill).
    pub prompt: u64,
    /// Tokens of context a decode step sees (`--seq-len`).
    pub context: u64,
    /// The prefill of the prompts of the batch: its seconds are the time to first token.
    pub prefill: StepEstimate,
    /// One decode step at the batch asked (`None` for an encoder: it generates nothing).
    pub decode: Option<StepEstimate>,
    /// Decode steps at several batches (tokens/s versus batch).
    pub by_batch: Vec<StepEstimate>,
    /// Assumptions.
    pub assumptions: Vec<String>,
}

/// The roofline inputs shared by every step.
struct Roofline {
    options: SpeedOptions,
    peak: f64,
    /// Tokens of context of a decode step.
    context: u64,
}

impl Roofline {
    #[expect(clippy::cast_precision_loss, reason = "estimates in floating point")]
    /// One step reading `weights` and moving the cache of `m` (`state` times its recurrent
    /// state: read in prefill's write, read and written in decode).
    fn step(
        &self,
        batch: u64,
        tokens: u64,
        weights: WeightsRead,
        m: &MemoryReport,
        state: u64,
        flops: u128,
    ) -> Result<StepEstimate, SpecError> {
        let o = &self.options;
        let gpus = o.gpus.max(1) as f64;
        let tp = m.options.tp.max(1);
        let state_all = checked::mul("state bytes·passes", m.state_bytes, state)?;
        let cache_bytes = checked::add("KV cache + state bytes", m.kv_bytes, state_all)?;
        let bytes = checked::add("weights read + cache bytes", weights.bytes, cache_bytes)?;
        let bytes_per_gpu = checked::sum(
            "⌈weights ÷ tp⌉ + KV per GPU + ⌈state ÷ tp⌉ (bytes per GPU)",
            [
                weights.bytes.div_ceil(tp),
                m.kv_per_gpu,
                state_all.div_ceil(tp),
            ],
        )?;
        let t_mem = bytes_per_gpu as f64 / (o.gpu.bandwidth * o.bandwidth_efficiency);
        let t_compute = flops as f64 / (gpus * self.peak * o.mfu);
        let (seconds, bound) = if t_mem >= t_compute {
            (t_mem, "memory")
        } else {
            (t_compute, "compute")
        };
        let tokens_per_second = NotFinite::check(
            tokens as f64 / seconds,
            ("throughput", "tokens / seconds", "tokens per second"),
            || format!("{} / {}", thousands(tokens), float_text(seconds)),
        )?;
        let cost_per_million = match o.price_per_gpu_hour {
            Some(p) => Some(NotFinite::check(
                p * gpus / (tokens_per_second * 3600.0) * 1e6,
                (
                    "cost",
                    "price · GPUs / (tokens per second · 3600) · 10⁶",
                    "dollars per million tokens",
                ),
                || {
                    format!(
                        "{} · {gpus} / ({} · 3600) · 10⁶",
                        float_text(p),
                        float_text(tokens_per_second)
                    )
                },
            )?),
            None => None,
        };
        Ok(StepEstimate {
            batch,
            tokens,
            weights,
            cache_bytes,
            bytes,
            bytes_per_gpu,
            flops,
            seconds,
            bound,
            tokens_per_second,
            cost_per_million,
            fits: m.fits,
            memory_per_gpu: m.per_gpu,
        })
    }
}

/// Estimate the time to first token (prefill of `prompt` tokens per sequence), a decode step
/// at `memory.seq_len` tokens of context and `memory.batch` sequences, and decode at each of
/// `batches`.
pub fn speed(
    spec: &ModelSpec,
    memory_options: &MemoryOptions,
    prompt: u64,
    convention: AttentionConvention,
    options: SpeedOptions,
    batches: &[u64],
) -> Result<SpeedReport, SpecError> {
    let fp8 = memory_options.format.is_fp8();
    let peak = match (fp8, options.gpu.peak_fp8) {
        (true, Some(p)) => p,
        _ => options.gpu.peak_16bit,
    };
    let batch = memory_options.batch;
    let context = memory_options.seq_len;
    let roof = Roofline {
        options,
        peak,
        context,
    };
    let generates = spec.stacks.iter().any(|s| s.role != StackRole::Encoder);

    // Prefill: every stack over the prompts; it writes the prompts' KV cache.
    let prefill_tokens = checked::mul("prompt·batch (prompt tokens)", prompt, batch)?;
    let at_prompt = memory(
        spec,
        &MemoryOptions {
            seq_len: prompt,
            ..*memory_options
        },
    )?;
    let prefill_flops = flops(spec, prompt, batch, convention)?.forward_flops;
    let prefill = roof.step(
        batch,
        prefill_tokens,
        weights_read(spec, memory_options.format, prefill_tokens, Phase::Prefill)?,
        &at_prompt,
        1,
        prefill_flops,
    )?;

    // Decode: one token per sequence at `context` tokens; reads the batch's whole cache.
    let per_token = flops(spec, context, 1, convention)?.per_token_flops;
    let decode_at = |b: u64| -> Result<StepEstimate, SpecError> {
        let m = memory(
            spec,
            &MemoryOptions {
                batch: b,
                ..*memory_options
            },
        )?;
        roof.step(
            b,
            b,
            weights_read(spec, memory_options.format, b, Phase::Decode)?,
            &m,
            2,
            checked::mul("FLOPs per token·batch", per_token, u128::from(b))?,
        )
    };
    let (decode, by_batch) = if generates {
        let mut list = Vec::with_capacity(batches.len());
        for &b in batches {
            list.push(decode_at(b)?);
        }
        (Some(decode_at(batch)?), list)
    } else {
        (None, Vec::new())
    };
    let has_state = at_prompt.state_bytes > 0;
    let assumptions = assumptions(spec, &roof, &prefill, decode.as_ref(), prompt, has_state);
    Ok(SpeedReport {
        options,
        peak,
        prompt,
        context,
        prefill,
        decode,
        by_batch,
        assumptions,
    })
}

/// The sentences behind the numbers, with the numbers.
fn assumptions(
    spec: &ModelSpec,
    roof: &Roofline,
    prefill: &StepEstimate,
    decode: Option<&StepEstimate>,
    prompt: u64,
    has_state: bool,
) -> Vec<String> {
    let o = &roof.options;
    let mut out = vec![
        format!(
            "a step takes max(bytes per GPU / ({:.0} GB/s × {}), FLOPs / ({} GPU × {:.1} TFLOP/s dense peak × MFU {}))",
            o.gpu.bandwidth / 1e9,
            o.bandwidth_efficiency,
            o.gpus,
            roof.peak / 1e12,
            o.mfu
        ),
        if decode.is_some() {
            format!(
                "time to first token: the prefill of {prompt} prompt tokens × batch {}: every weight read once, the prompts' KV cache written, the forward FLOPs",
                prefill.batch
            )
        } else {
            format!(
                "forward: {prompt} tokens × batch {}: every weight read once, the forward FLOPs",
                prefill.batch
            )
        },
    ];
    if let Some(d) = decode {
        out.push(format!(
            "decode step: one token per sequence with {} tokens of context (the last step; earlier steps read less KV); bytes = weights read + the batch's KV cache{}",
            roof.context,
            if has_state {
                " + the recurrent state (read and written)"
            } else {
                ""
            }
        ));
        let w = &d.weights;
        if w.embedding_stored > 0 {
            out.push(match spec.head {
                OutputHead::Lm { tied: true, .. } => "input tables: the token table is tied to the head, which multiplies by all of it: read whole, once; other tables one row per token".to_owned(),
                _ => format!(
                    "input tables: one row per token of the step ({} of {} B of tables read at batch {})",
                    thousands(w.embedding_bytes),
                    thousands(w.embedding_stored),
                    d.batch
                ),
            });
        }
        if let Some(c) = w.experts {
            out.push(format!(
                "routed experts: uniform routing assumed (real routers are skewed, which touches fewer); expected experts touched per layer at batch b = E·(1 − (1 − k/E)^b) = {}·(1 − (1 − {}/{})^{}) = {:.2} of {}, so {} of {} B of experts are read",
                c.experts,
                c.per_token,
                c.experts,
                c.tokens,
                c.touched,
                c.experts,
                thousands(w.expert_bytes.0),
                thousands(w.expert_bytes.1)
            ));
        }
        if w.skipped_bytes > 0 {
            out.push(format!(
                "a decode step does not run the encoder (once per request, in prefill) or the vision/audio towers: {} B not read",
                thousands(w.skipped_bytes)
            ));
        }
    } else {
        out.push(
            "an encoder generates nothing: one forward over the input, no decode steps".to_owned(),
        );
    }
    if let Some(p) = o.price_per_gpu_hour {
        out.push(format!(
            "cost per million tokens = ${}/GPU-hour × {} GPU / (tokens/s × 3600) × 10⁶ (the GPUs busy with this work alone)",
            // A price as given, in exponent form past 10^15 (`1e308`, not 309 digits).
            if p.abs() >= 1e15 {
                format!("{p:e}")
            } else {
                p.to_string()
            },
            o.gpus
        ));
    }
    if o.gpus > 1 {
        out.push(format!(
            "tensor parallel over {} GPUs: the time is one GPU's bytes (its share of the weights and its own KV cache: KV heads replicated when fewer than the ranks, an MLA latent on every rank); no communication time",
            o.gpus
        ));
    }
    out.push(format!("peaks and bandwidth: {}", o.gpu.source));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expected_experts_formula() {
        // One token touches exactly k; two tokens of Mixtral (E 8, k 2):
        // 8·(1 − 0.75²) = 8·0.4375 = 3.5, not min(8, 4) = 4.
        assert!((expected_experts(8, 2, 1) - 2.0).abs() < 1e-12);
        assert!((expected_experts(8, 2, 2) - 3.5).abs() < 1e-12);
        // b = 4: 8·(1 − 0.75⁴) = 8·(1 − 0.31640625) = 5.46875.
        assert!((expected_experts(8, 2, 4) - 5.468_75).abs() < 1e-12);
        // Many tokens touch every expert.
        assert!((expected_experts(128, 8, 100_000) - 128.0).abs() < 1e-9);
        assert!(expected_experts(0, 0, 5).abs() < f64::EPSILON);
    }

    fn designed(style: crate::design::Style) -> ModelSpec {
        crate::design::design_spec(
            &crate::design::Design {
                hidden: 256,
                layers: 2,
                vocab: Some(1000),
                heads: Some(4),
                kv_heads: None,
                ffn: Some(1024),
                ctx: Some(128),
            },
            style,
        )
        .unwrap()
    }

    #[test]
    fn an_untied_table_is_read_one_row_per_token() {
        // LLaMA style, untied: the 1,000 × 256 table is 512,000 B in bf16; a row 512 B.
        let spec = designed(crate::design::Style::Llama);
        let bf16 = WeightFormat::parse("bf16").unwrap();
        let one = weights_read(&spec, bf16, 1, Phase::Decode).unwrap();
        assert_eq!(one.embedding_stored, 512_000);
        assert_eq!(one.embedding_bytes, 512);
        assert_eq!(one.bytes, one.stored - 512_000 + 512);
        // Three tokens read three rows; 5,000 tokens the whole table, no more.
        let three = weights_read(&spec, bf16, 3, Phase::Decode).unwrap();
        assert_eq!(three.bytes, one.bytes + 2 * 512);
        let all = weights_read(&spec, bf16, 5000, Phase::Prefill).unwrap();
        assert_eq!(all.bytes, all.stored);
        assert!(one.experts.is_none());
    }

    #[test]
    fn a_tied_table_is_read_whole_and_positions_one_row() {
        // GPT style: the head is tied to the 1,000 × 256 table (read whole, 512,000 B); the
        // learned 128 × 256 position table (65,536 B) is read one row (512 B).
        let spec = designed(crate::design::Style::Gpt);
        let bf16 = WeightFormat::parse("bf16").unwrap();
        let one = weights_read(&spec, bf16, 1, Phase::Decode).unwrap();
        assert_eq!(one.embedding_stored, 512_000 + 65_536);
        assert_eq!(one.embedding_bytes, 512_000 + 512);
        assert_eq!(one.bytes, one.stored - 65_536 + 512);
    }

    #[test]
    fn share_rounds_up_and_caps() {
        assert_eq!(share_of(10, 1, 3), 4);
        assert_eq!(share_of(10, 5, 3), 10);
        assert_eq!(
            share_of(u64::MAX, u64::MAX - 1, u128::from(u64::MAX)),
            u64::MAX - 1
        );
    }
}
