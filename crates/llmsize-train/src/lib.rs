//! llmsize-train: the training planner. One training step of a [`llmsize_core::ModelSpec`]:
//! what it holds in memory and what it computes, exactly as the Hugging Face code and torch's
//! optimizers do it, and the `llmsize train` report ([`render`]).
//!
//! It is its own crate because it is its own job: core describes a model and counts it; this
//! crate plans a step on top of that description and depends on core, never the reverse (the
//! spec carries the family's [`llmsize_core::profile::TrainingProfile`], core's data). Like
//! core it performs no I/O.
//!
//! The figures split the way a training run does:
//! - **model states** ([`states`]): weights, gradients, optimizer states and master weights,
//!   by precision policy and optimizer, each from the library's own source;
//! - **activations** ([`activations`]): what autograd keeps for backward after the forward
//!   (the ground truth's `retained_bytes`) and the forward's peak, per family
//!   ([`llmsize_core::profile::LayerStyle`]), with and without gradient checkpointing and LoRA;
//! - **compute** ([`step_flops`]): forward + backward (+ the checkpoint recompute) in the
//!   counting convention of torch's `FlopCounterMode`;
//! - **placement** ([`parallel`]): the same per GPU under DDP, ZeRO/FSDP, tensor, pipeline,
//!   context and expert parallelism, and the most loaded rank.
//!
//! Every figure is a [`Term`]: a key, what it is, the formula with its values, and bytes or
//! FLOPs, so the table, `--explain` and JSON come from one list.

#![deny(missing_docs)]
// Every `+`, `-`, `*`, `/` on an integer goes through `checked` (or carries a local proof).
#![cfg_attr(not(test), deny(clippy::arithmetic_side_effects))]

pub mod activations;
pub mod backward;
pub mod fit;
pub mod lora;
pub mod parallel;
pub mod render;
pub mod states;
pub mod step_flops;

/// The element type parameters are held in (`model.to(dtype)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ParamDtype {
    /// bfloat16, 2 bytes.
    Bf16,
    /// float16, 2 bytes.
    Fp16,
    /// float32, 4 bytes.
    Fp32,
}

impl ParamDtype {
    /// Bytes per element.
    #[must_use]
    pub fn bytes(self) -> u64 {
        match self {
            ParamDtype::Bf16 | ParamDtype::Fp16 => 2,
            ParamDtype::Fp32 => 4,
        }
    }

    /// The name as flags and JSON write it.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            ParamDtype::Bf16 => "bf16",
            ParamDtype::Fp16 => "fp16",
            ParamDtype::Fp32 => "fp32",
        }
    }

    /// Parse `bf16`, `fp16`, `fp32` (and `float32`, `bfloat16`, `float16`, `half`).
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        match s.to_ascii_lowercase().as_str() {
            "bf16" | "bfloat16" => Some(ParamDtype::Bf16),
            "fp16" | "float16" | "half" => Some(ParamDtype::Fp16),
            "fp32" | "float32" | "float" => Some(ParamDtype::Fp32),
            _ => None,
        }
    }
}

/// The attention implementation (`attn_implementation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AttnImpl {
    /// `torch.nn.functional.scaled_dot_product_attention` (flash kernel: q, k, v, out, lse).
    Sdpa,
    /// The Python `eager` attention (the `s²` softmax is materialised and saved).
    Eager,
}

impl AttnImpl {
    /// The name.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            AttnImpl::Sdpa => "sdpa",
            AttnImpl::Eager => "eager",
        }
    }
}

/// Where the step runs: the kernels differ in what they save.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Device {
    /// CUDA kernels: dropout keeps a 1-byte bool mask, `LayerNorm` keeps fp32 statistics,
    /// SDPA with dropout uses a fused kernel (derived from the documented differences).
    Cuda,
    /// CPU kernels, as the ground truth measured them.
    Cpu,
}

impl Device {
    /// The name.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Device::Cuda => "cuda",
            Device::Cpu => "cpu",
        }
    }
}

/// A part of the model left frozen during full fine-tuning (`--freeze`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FreezePart {
    /// The token (and position) embedding tables.
    Embeddings,
    /// Attention projections.
    Attention,
    /// MLPs and experts.
    Mlp,
    /// Norm weights and biases.
    Norms,
    /// An untied output head.
    Head,
}

impl FreezePart {
    /// Parse one name of `--freeze`.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "embeddings" | "embedding" | "embed" => Some(FreezePart::Embeddings),
            "attention" | "attn" => Some(FreezePart::Attention),
            "mlp" | "ffn" | "experts" => Some(FreezePart::Mlp),
            "norms" | "norm" => Some(FreezePart::Norms),
            "head" | "lm_head" => Some(FreezePart::Head),
            _ => None,
        }
    }

    /// The names `--freeze` accepts.
    pub const NAMES: &'static [&'static str] = &["embeddings", "attention", "mlp", "norms", "head"];
}

/// One figure of the step: what it is, its formula with values, and its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Term {
    /// A stable key (`gradients`, `attention_sdpa`, …).
    pub key: String,
    /// What it is, in words.
    pub what: String,
    /// The formula, with symbols and then values (`2·N = 2·6,738,415,616`).
    pub formula: String,
    /// Bytes (or FLOPs for compute terms).
    pub value: u128,
}

impl Term {
    /// A term.
    pub fn new(
        key: impl Into<String>,
        what: impl Into<String>,
        formula: impl Into<String>,
        value: u128,
    ) -> Self {
        Term {
            key: key.into(),
            what: what.into(),
            formula: formula.into(),
            value,
        }
    }
}

/// The sum of terms' values, checked: `what` names the sum in the error.
pub(crate) fn sum(terms: &[Term], what: &str) -> Result<u128, llmsize_core::Overflow> {
    llmsize_core::checked::sum(what, terms.iter().map(|t| t.value))
}

use activations::{ActInput, Activations};
use llmsize_core::checked;
use llmsize_core::flops::AttentionConvention;
use llmsize_core::formats::WeightFormat;
use llmsize_core::layout::{Place, TensorKind, layout};
use llmsize_core::spec::ModelSpec;
use lora::{LoraOptions, LoraPlan};
use parallel::{Parallelism, PerGpu};
use states::{Held, ModelStates, Optimizer, Precision};
use step_flops::{StepFlops, StepInput};

/// The question `llmsize train` answers.
#[derive(Debug, Clone, PartialEq)]
pub struct TrainOptions {
    /// Tokens per sequence.
    pub seq_len: u64,
    /// Sequences per micro-batch (per GPU).
    pub batch: u64,
    /// The parameters' dtype.
    pub dtype: ParamDtype,
    /// Attention implementation.
    pub attn: AttnImpl,
    /// Gradient checkpointing.
    pub checkpointing: bool,
    /// Kernels.
    pub device: Device,
    /// Attention FLOPs over the full matrix (torch's counter) or the causal triangle.
    pub convention: AttentionConvention,
    /// LoRA on a frozen base.
    pub lora: Option<LoraOptions>,
    /// `QLoRA`: the frozen base stored in this format (NF4 with double quantization).
    pub base_format: Option<WeightFormat>,
    /// Parts frozen under full fine-tuning.
    pub freeze: Vec<FreezePart>,
    /// Precision policy.
    pub precision: Precision,
    /// Optimizer.
    pub optimizer: Optimizer,
    /// Parallelism.
    pub parallel: Parallelism,
}

impl Default for TrainOptions {
    fn default() -> Self {
        TrainOptions {
            seq_len: 2048,
            batch: 1,
            dtype: ParamDtype::Bf16,
            attn: AttnImpl::Sdpa,
            checkpointing: false,
            device: Device::Cuda,
            convention: AttentionConvention::Causal,
            lora: None,
            base_format: None,
            freeze: Vec::new(),
            precision: Precision::Pure,
            optimizer: Optimizer::AdamW,
            parallel: Parallelism::default(),
        }
    }
}

/// Everything about one training step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrainReport {
    /// The options' description, for titles.
    pub setup: String,
    /// Model states.
    pub states: ModelStates,
    /// The adapters, for LoRA.
    pub lora: Option<LoraPlan>,
    /// Activations.
    pub activations: Activations,
    /// The backward's peak (retained activations, gradients, gradients in flight).
    pub backward: backward::BackwardPeak,
    /// The whole step's peak on the most loaded GPU: weights and optimizer states, plus the
    /// largest of the forward's peak, the backward's and the gradients at the optimizer step.
    pub step_peak: u128,
    /// Its terms.
    pub step_terms: Vec<Term>,
    /// Compute.
    pub flops: StepFlops,
    /// The most loaded GPU.
    pub per_gpu: PerGpu,
    /// Parameters of the model (all), for the article's `6·P·D`.
    pub params: u64,
    /// Tokens of the step on one GPU (`batch · seq_len`).
    pub tokens: u64,
    /// `None` when every figure is exact; else why not.
    pub estimate: Option<String>,
}

impl TrainReport {
    /// Why the step's peak is an estimate (`None`: exact): any estimate among the figures it
    /// is the largest of makes it one.
    #[must_use]
    pub fn step_peak_estimate(&self) -> Option<String> {
        let parts: Vec<&str> = [
            self.estimate.as_deref(),
            self.backward.estimate.as_deref(),
            // The placed branch of `step_peak` (several GPUs, or offload) adds the backward's
            // excess unsplit.
            self.step_terms
                .iter()
                .any(|t| t.key == "backward_excess")
                .then_some(
                    "the backward's excess over the forward's peak is counted unsplit on the most loaded GPU",
                ),
        ]
        .into_iter()
        .flatten()
        .collect();
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}

fn bad(field: &str, found: &str, expected: &str) -> llmsize_core::SpecError {
    llmsize_core::SpecError::Invalid {
        field: field.into(),
        found: found.into(),
        expected: expected.into(),
    }
}

impl FreezePart {
    /// Does this part hold tensors of `kind`? (The output head's bias vectors, which have
    /// no kind of their own, are [`frozen_by`]'s.) The parameter count and the step's FLOPs
    /// both ask here, so `--freeze` means one thing.
    pub(crate) fn holds(self, kind: TensorKind) -> bool {
        use TensorKind as K;
        match self {
            FreezePart::Embeddings => matches!(
                kind,
                K::TokenEmbedding | K::PositionEmbedding | K::TokenTypeEmbedding
            ),
            FreezePart::Attention => kind.is_attention_projection() || kind == K::Sinks,
            FreezePart::Mlp => kind.is_mlp(),
            FreezePart::Norms => kind == K::Norm,
            FreezePart::Head => kind == K::Output,
        }
    }
}

/// Is a base tensor frozen by `--freeze`?
fn frozen_by(kind: TensorKind, place: Place, freeze: &[FreezePart]) -> bool {
    freeze.iter().any(|f| {
        f.holds(kind)
            || (*f == FreezePart::Head && place == Place::Output && kind == TensorKind::Bias)
    })
}

/// A training step walks each stack's runs in layer order (pipeline stages, LoRA's layer
/// ranges, the first layer's saved input), several times when it looks for what would fit: a
/// stack may change its layer kind at most [`llmsize_core::limits::MAX_RUNS`] times, so the step
/// stays within its second whatever the config's layer count and window pattern.
/// Whether the model has an encoder: a decoder's cross-attention runs only on its output.
pub(crate) fn has_encoder(spec: &ModelSpec) -> bool {
    spec.stacks
        .iter()
        .any(|s| s.role == llmsize_core::spec::StackRole::Encoder)
}

/// Whether a causal-LM step never runs `t`: built but idle ([`llmsize_core::layout::Tensor::idle`]), a decoder's
/// cross-attention without an encoder, a vision or audio tower (`train` counts no image
/// positions: the step is text-only), or a pooler, whose output the language-model loss
/// never reads (`BigBirdForCausalLM` keeps its pooler).
pub(crate) fn never_run(t: &llmsize_core::layout::Tensor, has_encoder: bool) -> bool {
    t.idle
        || (t.name.cross && !has_encoder)
        || t.category.is_modality()
        || t.category == llmsize_core::category::Category::Pooler
}

fn check_runs(spec: &ModelSpec) -> Result<(), llmsize_core::SpecError> {
    for stack in &spec.stacks {
        let runs = stack.layers.runs().len();
        if runs > llmsize_core::limits::MAX_RUNS {
            let n = |v: usize| llmsize_core::units::thousands(u64::try_from(v).unwrap_or(u64::MAX));
            return Err(llmsize_core::SpecError::TooManyRuns {
                layers: llmsize_core::units::thousands(stack.layers.len()),
                runs: n(runs),
                max: n(llmsize_core::limits::MAX_RUNS),
            });
        }
    }
    Ok(())
}

/// One training step of `spec` under `options`.
pub fn train(
    spec: &ModelSpec,
    options: &TrainOptions,
) -> Result<TrainReport, llmsize_core::SpecError> {
    spec.validate()?;
    check_runs(spec)?;
    parallel::validate(&options.parallel, spec)?;
    if options.seq_len == 0 {
        return Err(llmsize_core::SpecError::Zero {
            field: "--seq-len".into(),
        });
    }
    if options.batch == 0 {
        return Err(llmsize_core::SpecError::Zero {
            field: "--batch".into(),
        });
    }
    if options.lora.is_none() && options.base_format.is_some() {
        return Err(bad(
            "--qlora",
            "without --lora-rank",
            "a quantized base is trained through adapters: add --lora-rank R",
        ));
    }
    let lay = layout(spec)?;
    let profile = spec.training.as_ref();
    let lora = match &options.lora {
        Some(o) => Some(lora::plan(spec, &lay, o)?),
        None => None,
    };
    let frozen_base = lora.is_some();

    // The parameters as the step holds them.
    // saturates: harmless, a capacity hint.
    let mut held = Vec::with_capacity(lay.tensors.len().saturating_add(8));
    let quantized = match options.base_format {
        Some(f) => Some(llmsize_core::memory::weight_lines(spec, f)?),
        None => None,
    };
    let has_encoder = has_encoder(spec);
    for t in &lay.tensors {
        let trainable = !t.frozen && !frozen_base && !frozen_by(t.kind, t.place, &options.freeze);
        let hidden_matrix = matches!(t.place, Place::Layer { .. }) && !t.is_vector();
        // Two matrices peft and torch see as one parameter (a fused `gate_up_proj`): the
        // profile names both kinds alike, and they sit next to each other in the layout.
        let module = |kind| {
            profile.and_then(|p| p.modules.iter().find(|(k, _)| *k == kind).map(|(_, n)| *n))
        };
        let part_of_previous = held.last().is_some_and(|prev: &Held| {
            prev.place == t.place
                && prev.kind != t.kind
                && !t.is_vector()
                && module(t.kind).is_some()
                && module(t.kind) == module(prev.kind)
        });
        held.push(Held {
            part_of_previous,
            // Required grad, but none comes: AdamW keeps no state for it either.
            unreached: never_run(t, has_encoder) || t.gradless,
            elements: t.elements()?,
            tensors: t.layers,
            matrix: (!t.is_vector()).then_some((t.rows, t.cols)),
            hidden_matrix,
            trainable,
            // A tensor (Tensor::fp32) or a router (TypeFacts::router_fp32) the code creates
            // in fp32 stays fp32 under the dtype the model is built in.
            dtype: if t.fp32 || (t.kind == TensorKind::Router && spec.facts.router_fp32) {
                ParamDtype::Fp32
            } else {
                options.dtype
            },
            stored_bytes: None,
            kind: t.kind,
            place: t.place,
            adapter: false,
        });
    }
    if let Some(lines) = &quantized {
        // The quantized base replaces the base's bytes, as `memory --dtype` stores it.
        let total = checked::sum("weights", lines.iter().map(|l| u128::from(l.bytes)))?;
        for (i, h) in held.iter_mut().enumerate() {
            h.stored_bytes = Some(if i == 0 { total } else { 0 });
        }
    }
    if let Some(plan) = &lora {
        // peft keeps the adapters in fp32 on a 16-bit base (`autocast_adapter_dtype=True`).
        for m in &plan.modules {
            let base = lay.tensors.iter().find(|t| {
                t.kind == m.kind
                    && t.stack == m.stack
                    && t.layer_runs.first() == m.layer_runs.first()
            });
            // One group per trained tensor of the module (`lora_A`, `lora_B`, DoRA's
            // magnitude vector), each in every layer that holds the module.
            for (i, &(rows, cols)) in m.factors.iter().enumerate() {
                let matrix = i < 2;
                held.push(Held {
                    kind: m.kind,
                    place: base.map_or(Place::Output, |t| t.place),
                    adapter: true,
                    part_of_previous: false,
                    unreached: m.idle || m.gradless,
                    elements: checked::mul("LoRA rows·cols", rows, cols)?,
                    tensors: m.layers,
                    matrix: matrix.then_some((rows, cols)),
                    hidden_matrix: matrix,
                    trainable: true,
                    dtype: ParamDtype::Fp32,
                    stored_bytes: None,
                });
            }
        }
    }
    let states = states::model_states(&held, options.precision, options.optimizer)?;

    let act = activations::activations(&ActInput {
        spec,
        profile,
        batch: options.batch,
        seq: options.seq_len,
        dtype: options.dtype,
        attn: options.attn,
        checkpointing: options.checkpointing,
        device: options.device,
        lora: lora.as_ref(),
        frozen: &options.freeze,
    })?;

    let mut act = act;
    if options.base_format.is_some() {
        // bitsandbytes' `MatMul4Bit` saves only the quantized weight for a frozen base, so
        // what autograd holds is LoRA's on a 16-bit base; each matmul dequantizes its weight
        // to 16 bits for the duration of the product: the largest one joins the peak.
        let largest = lay
            .tensors
            .iter()
            .filter(|t| t.kind.is_block_matrix() && !t.is_vector() && t.copies == 1)
            .map(|t| checked::mul("rows·cols", u128::from(t.rows), u128::from(t.cols)))
            .try_fold(0, |m, e| e.map(|e| m.max(e)))?;
        let bytes = checked::mul("2·rows·cols", 2, largest)?;
        act.forward_peak = checked::add("forward peak", act.forward_peak, bytes)?;
        act.peak_terms.push(Term::new(
            "qlora_dequantized_weight",
            "the largest NF4 weight dequantized to 16 bits during its matmul (derived from bitsandbytes' MatMul4Bit, not measured)",
            format!("2·rows·cols = 2·{largest}"),
            bytes,
        ));
    }

    let fwd = llmsize_core::flops::flops(spec, options.seq_len, options.batch, options.convention)?;
    let flops = step_flops::step_flops_in(
        &StepInput {
            spec,
            profile,
            forward: &fwd,
            attn: options.attn,
            checkpointing: options.checkpointing,
            lora: lora.as_ref(),
            frozen_base: frozen_base || !options.freeze.is_empty(),
        },
        &step_flops::StepContext {
            device: options.device,
            freeze: &options.freeze,
        },
    )?;

    // The most loaded GPU of the job (one GPU by default): model states on it plus the
    // larger of its forward peak and the optimizer step's transient.
    let per_gpu = parallel::per_gpu(&parallel::ParallelInput {
        spec,
        layout: &lay,
        held: &held,
        precision: options.precision,
        optimizer: options.optimizer,
        parallel: &options.parallel,
        activations: &act,
        batch: options.batch,
        seq: options.seq_len,
    })?;

    let bwd = backward_of(spec, options, lora.as_ref(), &act, &states)?;
    let (step_peak, step_terms) = step_peak(&states, &act, &bwd, &per_gpu, &options.parallel)?;

    let mut why = Vec::new();
    if let Some(e) = &spec.estimate {
        why.push(e.clone());
    }
    if let Some(e) = &act.estimate {
        why.push(e.clone());
    }
    if let Some(e) = &per_gpu.estimate {
        why.push(e.clone());
    }
    if let Some(plan) = &lora
        // An idle module is a decoder's cross-attention, whose projections the family reads
        // as `nn.Linear`: peft adapts them.
        && let Some(m) = plan
            .modules
            .iter()
            .find(|m| m.kind == TensorKind::Matrix && !m.idle)
    {
        // A matrix of a part the typed blocks do not describe may be an `nn.Linear` (peft
        // adapts it) or a convolution or bare parameter (it does not): not known here.
        why.push(format!(
            "LoRA adapts `{}`, a matrix of a part whose module type (Linear or not) llmsize does not know; peft may leave it out",
            m.name
        ));
    }
    if !flops.exact {
        why.push("the training step's FLOPs are 3× the forward, not derived per op".into());
    }
    let setup = format!(
        "{} tokens × batch {}, {} ({}), {}{}",
        options.seq_len,
        options.batch,
        options.dtype.name(),
        options.precision.name(),
        options.attn.name(),
        if options.checkpointing {
            ", gradient checkpointing"
        } else {
            ""
        }
    );
    Ok(TrainReport {
        setup,
        states,
        lora,
        backward: bwd,
        step_peak,
        step_terms,
        activations: act,
        flops,
        per_gpu,
        params: llmsize_core::count::count(spec)?.total,
        tokens: checked::mul("batch·seq_len", options.batch, options.seq_len)?,
        estimate: (!why.is_empty()).then(|| why.join("; ")),
    })
}

/// The step's peak: weights and optimizer states are held throughout; on top, the forward's
/// peak (no gradients yet: `zero_grad(set_to_none=True)`), the backward's (which holds every
/// gradient by its end) or the gradients during the optimizer step, whichever is largest. A
/// job split over GPUs takes the most loaded GPU's figure and adds the backward's excess
/// over the forward's peak, unsplit.
fn step_peak(
    states: &ModelStates,
    act: &Activations,
    bwd: &backward::BackwardPeak,
    per_gpu: &PerGpu,
    parallel: &Parallelism,
) -> Result<(u128, Vec<Term>), llmsize_core::Overflow> {
    let t = llmsize_core::units::thousands_u128;
    if per_gpu.gpus > 1 || parallel.offload_optimizer || parallel.offload_params {
        let excess = bwd.bytes.saturating_sub(checked::add(
            "G + forward peak",
            states.gradient_bytes,
            act.forward_peak,
        )?);
        let terms = vec![
            Term::new("per_gpu", "the most loaded GPU", "per GPU", per_gpu.bytes),
            Term::new(
                "backward_excess",
                "the backward's peak beyond gradients + the forward's peak, unsplit (an upper bound)",
                format!(
                    "max(0, backward − G − forward) = max(0, {} − {} − {})",
                    t(bwd.bytes),
                    t(states.gradient_bytes),
                    t(act.forward_peak)
                ),
                excess,
            ),
        ];
        return Ok((sum(&terms, "step peak")?, terms));
    }
    let optimizer = states
        .optimizer_state_bytes
        .saturating_sub(states.step_bytes_cpu);
    let phases = [
        ("forward", act.forward_peak),
        ("backward", bwd.bytes),
        ("optimizer step", states.gradient_bytes),
    ];
    let (phase, top) = phases
        .iter()
        .copied()
        .fold(("forward", 0), |m, p| if p.1 > m.1 { p } else { m });
    let terms = vec![
        Term::new("step_weights", "weights", "W", states.weights_bytes),
        Term::new(
            "step_optimizer",
            "optimizer states on the GPU (torch's `step` scalars stay on the CPU)",
            "O",
            optimizer,
        ),
        Term::new(
            "step_phase",
            format!("the largest phase: the {phase}"),
            format!(
                "max(forward peak, backward peak, G) = max({}, {}, {})",
                t(act.forward_peak),
                t(bwd.bytes),
                t(states.gradient_bytes)
            ),
            top,
        ),
    ];
    Ok((sum(&terms, "step peak")?, terms))
}

/// The backward's peak of the step `options` describes (see [`backward`]).
fn backward_of(
    spec: &ModelSpec,
    options: &TrainOptions,
    lora: Option<&LoraPlan>,
    act: &Activations,
    states: &ModelStates,
) -> Result<backward::BackwardPeak, llmsize_core::SpecError> {
    let profile = spec.training.as_ref();
    let lora_all = lora.and_then(|p| layer_adapters(p, spec, options.base_format.is_some()));
    backward::backward_peak(
        spec,
        &backward::Options {
            batch: options.batch,
            seq: options.seq_len,
            e: u128::from(options.dtype.bytes()),
            attn: options.attn,
            checkpointing: options.checkpointing,
            trains_less: (lora.is_some() && lora_all.is_none()) || !options.freeze.is_empty(),
            lora: lora_all,
            pure: options.precision == Precision::Pure,
            style: profile.map_or(llmsize_core::profile::LayerStyle::Llama, |p| p.style),
            code: backward::Code::of(profile),
            device: options.device,
            rotary: profile.and_then(|p| p.rotary_dims),
        },
        act.retained,
        states.gradient_bytes,
    )
}

/// A LoRA plan the backward's rules cover: plain adapters on some of a llama-layout model's
/// projections (q, k, v, o, gate, up, down), each in every layer, one of the attention's
/// among them (so layer 0's attention output needs a gradient), without DoRA or a quantized
/// base.
fn layer_adapters(
    plan: &LoraPlan,
    spec: &ModelSpec,
    quantized: bool,
) -> Option<backward::Adapters> {
    use TensorKind as K;
    let layers = spec.stacks.iter().map(|s| s.layers.len()).sum::<u64>();
    let kinds = [
        K::AttnQ,
        K::AttnK,
        K::AttnV,
        K::AttnOutput,
        K::FfnGate,
        K::FfnUp,
        K::FfnDown,
    ];
    let plain = plan.modules.iter().all(|m| {
        kinds.contains(&m.kind)
            && m.layers == layers
            && m.copies == 1
            && !m.param_wrapper
            && m.rank == plan.rank
    });
    let on = kinds.map(|k| plan.modules.iter().any(|m| m.kind == k));
    let attention = on.iter().take(4).any(|&a| a);
    (plain && attention && !plan.dora && !quantized).then(|| backward::Adapters {
        rank: u128::from(plan.rank),
        on,
        dropout: plan.dropout,
    })
}
