//! `llmsize train`: one training step's memory, per GPU, and its compute, time and cost.

use llmsize_adapters::ReadOptions;
use llmsize_core::checked::Checked;
use llmsize_core::flops::AttentionConvention;
use llmsize_core::gpu::Gpu;
use llmsize_train::fit::{Suggestion, TimeCost, largest_fitting, suggestions, time_cost};
use llmsize_train::lora::{LoraOptions, LoraTargets};
use llmsize_train::parallel::Parallelism;
use llmsize_train::states::{Optimizer, Precision};
use llmsize_train::{
    AttnImpl, Device, FreezePart, ParamDtype, Term, TrainOptions, TrainReport, train,
};
use serde::Serialize;

use crate::error::Error;
use crate::hub::HubEnv;
use crate::request::HubOptions;
use crate::resolve::Want;
use crate::run::{gpu_spec, read_model, weight_format};
use crate::wire::{self, Envelope};

/// `train`: one training step of one model.
#[allow(
    clippy::struct_excessive_bools,
    reason = "each is a flag of the command"
)]
#[derive(Debug, Clone)]
pub struct TrainRequest {
    /// The model.
    pub model: String,
    /// `KEY=VALUE` overrides of config fields.
    pub overrides: Vec<String>,
    /// `--assume TYPE`.
    pub assume: Option<String>,
    /// `--text-only`.
    pub text_only: bool,
    /// Where Hub repo ids are looked up.
    pub hub: HubOptions,
    /// Tokens per sequence.
    pub seq_len: u64,
    /// Sequences per micro-batch per GPU.
    pub batch: u64,
    /// `bf16`, `fp16`, `fp32`.
    pub dtype: String,
    /// `sdpa` or `eager`.
    pub attn_impl: String,
    /// Gradient checkpointing.
    pub checkpointing: bool,
    /// `cuda` or `cpu`.
    pub device: String,
    /// FLOPs over the causal triangle or the full matrix.
    pub attention: AttentionConvention,
    /// LoRA rank (LoRA when set).
    pub lora_rank: Option<u64>,
    /// `all-linear`, `default`, or module names separated by commas.
    pub lora_targets: String,
    /// `lora_dropout`.
    pub lora_dropout: f64,
    /// DoRA.
    pub dora: bool,
    /// `QLoRA`: an NF4 base with double quantization.
    pub qlora: bool,
    /// `--freeze` parts.
    pub freeze: Vec<String>,
    /// `pure`, `mixed`, `mixed-fp32-grads`, `autocast`.
    pub precision: String,
    /// The optimizer.
    pub optimizer: String,
    /// Parallelism.
    pub parallel: Parallelism,
    /// The GPU (`h100`, `h100x8`).
    pub gpu: Option<String>,
    /// `--dp`: data-parallel replicas given explicitly (else the GPUs over `tp·pp·cp`).
    pub dp: Option<u64>,
    /// `--fsdp full|hybrid|grad-op`.
    pub fsdp: Option<String>,
    /// `parallel.micro_batches` was not given: a pipeline then gets `pp` of them.
    pub micro_batches_default: bool,
    /// Search the largest batch that fits the GPU.
    pub max_batch: bool,
    /// Search the longest sequence that fits the GPU.
    pub max_seq: bool,
    /// Tokens of the whole run, for time and cost.
    pub tokens: Option<u64>,
    /// Model FLOPs utilisation for time.
    pub mfu: f64,
    /// Price per GPU-hour, for cost.
    pub price: Option<f64>,
}

impl TrainRequest {
    /// A request with the command line's defaults.
    pub fn new(model: impl Into<String>) -> Self {
        TrainRequest {
            model: model.into(),
            overrides: Vec::new(),
            assume: None,
            text_only: false,
            hub: HubOptions::default(),
            seq_len: 2048,
            batch: 1,
            dtype: "bf16".into(),
            attn_impl: "sdpa".into(),
            checkpointing: false,
            device: "cuda".into(),
            attention: AttentionConvention::Causal,
            lora_rank: None,
            lora_targets: "all-linear".into(),
            lora_dropout: 0.0,
            dora: false,
            qlora: false,
            freeze: Vec::new(),
            precision: "pure".into(),
            optimizer: "adamw".into(),
            parallel: Parallelism::default(),
            gpu: None,
            dp: None,
            fsdp: None,
            micro_batches_default: true,
            max_batch: false,
            max_seq: false,
            tokens: None,
            mfu: 0.4,
            price: None,
        }
    }
}

/// The answer of `train`.
#[derive(Debug, Clone)]
pub struct TrainOutcome {
    /// The model's name.
    pub name: String,
    /// The step.
    pub report: TrainReport,
    /// The GPU and how many, when named.
    pub gpu: Option<(&'static Gpu, u64)>,
    /// The parallel layout used.
    pub parallel: Parallelism,
    /// When it does not fit: the cheapest changes, each with its new per-GPU total.
    pub suggestions: Vec<Suggestion>,
    /// `--max-batch`: the largest batch that fits (`None`: not even 1).
    pub max_batch: Option<Option<u64>>,
    /// `--max-seq`: the longest sequence that fits.
    pub max_seq: Option<Option<u64>>,
    /// `--tokens`: time and cost.
    pub time: Option<TimeCost>,
    /// Warnings.
    pub warnings: Vec<String>,
}

impl TrainOutcome {
    /// Fits the named GPU (true without one).
    #[must_use]
    pub fn fits(&self) -> bool {
        self.gpu
            .is_none_or(|(g, _)| self.report.step_peak <= u128::from(g.memory_bytes))
    }

    /// The wire form.
    #[must_use]
    pub fn wire(&self) -> Envelope<TrainJson> {
        Envelope::new(TrainJson::new(self))
    }

    /// `--json`.
    pub fn to_json(&self) -> Result<String, Error> {
        wire::to_pretty(&self.wire())
    }
}

/// One term.
#[derive(Debug, Clone, Serialize)]
pub struct TermJson {
    /// Stable key.
    pub key: String,
    /// In words.
    pub what: String,
    /// Formula with values.
    pub formula: String,
    /// Bytes or FLOPs.
    pub value: u128,
}

impl From<&Term> for TermJson {
    fn from(t: &Term) -> Self {
        TermJson {
            key: t.key.clone(),
            what: t.what.clone(),
            formula: t.formula.clone(),
            value: t.value,
        }
    }
}

fn terms(t: &[Term]) -> Vec<TermJson> {
    t.iter().map(TermJson::from).collect()
}

/// `train --json`: all integers in plain units (bytes, FLOPs, parameters).
#[derive(Debug, Clone, Serialize)]
pub struct TrainJson {
    /// Display name.
    pub name: String,
    /// True when every figure is exact.
    pub exact: bool,
    /// When not exact: why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub estimate_basis: Option<String>,
    /// The setup in words.
    pub setup: String,
    /// Trained parameters.
    pub trainable_params: u64,
    /// Frozen parameters.
    pub frozen_params: u64,
    /// Trained tensors.
    pub trainable_tensors: u64,
    /// Weights.
    pub weights_bytes: u128,
    /// Gradients.
    pub gradient_bytes: u128,
    /// Optimizer states (master weights and torch's CPU `step` scalars included).
    pub optimizer_state_bytes: u128,
    /// Of which fp32 master weights.
    pub master_weight_bytes: u128,
    /// Held for backward after the forward.
    pub activation_bytes: u128,
    /// The forward's peak of live activations and temporaries.
    pub activation_peak_bytes: u128,
    /// The backward's peak: the activations held for it, the gradients made so far and
    /// those in flight (the truth's `backward_peak_bytes`).
    pub backward_peak_bytes: u128,
    /// `null` when the backward's peak is derived op by op; else why it is an estimate.
    pub backward_peak_estimate: Option<String>,
    /// The whole step's peak, weights and optimizer states included: what "fits" compares.
    pub step_peak_bytes: u128,
    /// `null` when the step's peak is exact; else why not.
    pub step_peak_estimate: Option<String>,
    /// The most loaded GPU's model states plus the forward's peak.
    pub per_gpu_bytes: u128,
    /// Which GPU is the most loaded, and why.
    pub most_loaded: String,
    /// Its pipeline stage (0-based).
    pub stage: u64,
    /// Bytes kept in CPU memory per GPU (offload).
    pub per_gpu_cpu_bytes: u128,
    /// Facts about the layout worth knowing.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// FLOPs of one step.
    pub train_step_flops: u128,
    /// Of which the forward.
    pub forward_flops: u128,
    /// Of which the checkpoint's recompute.
    pub recompute_flops: u128,
    /// The article's `6·P·tokens` for this step.
    pub estimate_6pd_flops: Option<u128>,
    /// LoRA: the modules reached.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lora_modules: Option<Vec<String>>,
    /// The GPU's memory, when named.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_memory_bytes: Option<u64>,
    /// Fits the GPU, when named.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fits: Option<bool>,
    /// GPUs of the layout.
    pub gpus: u64,
    /// The parallel layout.
    pub parallel: ParallelJson,
    /// When it does not fit: the cheapest changes.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub suggestions: Vec<SuggestionJson>,
    /// `--max-batch` (null: not even 1 fits).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_batch: Option<Option<u64>>,
    /// `--max-seq` (null: not even 1 fits).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_seq: Option<Option<u64>>,
    /// `--tokens`: time and cost.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<TimeJson>,
    /// Model-state terms.
    pub states: Vec<TermJson>,
    /// Activation terms.
    pub activations: Vec<TermJson>,
    /// Forward-peak terms.
    pub activation_peak: Vec<TermJson>,
    /// Backward-peak terms.
    pub backward_peak: Vec<TermJson>,
    /// Step-peak terms.
    pub step_peak: Vec<TermJson>,
    /// FLOP terms.
    pub flops: Vec<TermJson>,
    /// Per-GPU terms.
    pub per_gpu: Vec<TermJson>,
    /// Per-GPU CPU terms (offload).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub per_gpu_cpu: Vec<TermJson>,
}

impl TrainJson {
    fn new(o: &TrainOutcome) -> Self {
        let r = &o.report;
        let tokens = u128::from(r.tokens);
        TrainJson {
            name: o.name.clone(),
            exact: r.estimate.is_none(),
            estimate_basis: r.estimate.clone(),
            setup: r.setup.clone(),
            trainable_params: r.states.trainable_params,
            frozen_params: r.states.frozen_params,
            trainable_tensors: r.states.trainable_tensors,
            weights_bytes: r.states.weights_bytes,
            gradient_bytes: r.states.gradient_bytes,
            optimizer_state_bytes: r.states.optimizer_state_bytes,
            master_weight_bytes: r.states.master_weight_bytes,
            activation_bytes: r.activations.retained,
            activation_peak_bytes: r.activations.forward_peak,
            backward_peak_bytes: r.backward.bytes,
            backward_peak_estimate: r.backward.estimate.clone(),
            step_peak_bytes: r.step_peak,
            step_peak_estimate: r.step_peak_estimate(),
            per_gpu_bytes: r.per_gpu.bytes,
            most_loaded: r.per_gpu.most_loaded.clone(),
            stage: r.per_gpu.stage,
            per_gpu_cpu_bytes: r.per_gpu.cpu_bytes,
            notes: r.per_gpu.notes.clone(),
            train_step_flops: r.flops.train_step,
            forward_flops: r.flops.forward,
            recompute_flops: r.flops.recompute,
            // `null` past 128 bits (never for the bounded batch and length of a request).
            estimate_6pd_flops: (Checked::new(6u128) * u128::from(r.params) * tokens).ok(),
            lora_modules: r.lora.as_ref().map(|l| l.resolved.clone()),
            gpu_memory_bytes: o.gpu.map(|(g, _)| g.memory_bytes),
            fits: o.gpu.map(|_| o.fits()),
            gpus: o.parallel.gpus(),
            parallel: ParallelJson::from(&o.parallel),
            suggestions: o
                .suggestions
                .iter()
                .map(|s| SuggestionJson {
                    flags: s.flags.clone(),
                    why: s.why.clone(),
                    per_gpu_bytes: s.per_gpu_bytes,
                    fits: s.fits,
                })
                .collect(),
            max_batch: o.max_batch,
            max_seq: o.max_seq,
            time: o.time.as_ref().map(TimeJson::from),
            states: terms(&r.states.terms),
            activations: terms(&r.activations.terms),
            activation_peak: terms(&r.activations.peak_terms),
            backward_peak: terms(&r.backward.terms),
            step_peak: terms(&r.step_terms),
            flops: terms(&r.flops.terms),
            per_gpu: terms(&r.per_gpu.terms),
            per_gpu_cpu: terms(&r.per_gpu.cpu_terms),
        }
    }
}

/// The parallel layout in JSON.
#[derive(Debug, Clone, Serialize)]
#[allow(
    clippy::struct_excessive_bools,
    reason = "each is a switch of the layout"
)]
pub struct ParallelJson {
    /// Data parallel.
    pub dp: u64,
    /// Tensor parallel.
    pub tp: u64,
    /// Pipeline stages.
    pub pp: u64,
    /// Context parallel.
    pub cp: u64,
    /// Expert parallel.
    pub ep: u64,
    /// ZeRO stage.
    pub zero: u8,
    /// Sequence parallelism.
    pub sequence_parallel: bool,
    /// Optimizer offload.
    pub offload_optimizer: bool,
    /// Parameter offload.
    pub offload_params: bool,
    /// Micro-batches per step.
    pub micro_batches: u64,
}

impl From<&Parallelism> for ParallelJson {
    fn from(p: &Parallelism) -> Self {
        ParallelJson {
            dp: p.dp,
            tp: p.tp,
            pp: p.pp,
            cp: p.cp,
            ep: p.ep,
            zero: p.zero,
            sequence_parallel: p.sequence_parallel,
            offload_optimizer: p.offload_optimizer,
            offload_params: p.offload_params,
            micro_batches: p.micro_batches,
        }
    }
}

/// A suggested change.
#[derive(Debug, Clone, Serialize)]
pub struct SuggestionJson {
    /// The flags.
    pub flags: String,
    /// In words.
    pub why: String,
    /// The most loaded GPU's bytes with it.
    pub per_gpu_bytes: u128,
    /// Fits.
    pub fits: bool,
}

/// Time and cost in JSON (floating point: estimates at an assumed MFU).
#[derive(Debug, Clone, Serialize)]
pub struct TimeJson {
    /// GPUs.
    pub gpus: u64,
    /// MFU assumed.
    pub mfu: f64,
    /// Tokens of the run.
    pub tokens: u64,
    /// Tokens per optimizer step (all replicas, all micro-batches).
    pub tokens_per_step: u64,
    /// Exact training FLOPs per token of this step.
    pub flops_per_token: f64,
    /// Tokens per second.
    pub tokens_per_second: f64,
    /// FLOPs of the run.
    pub run_flops: f64,
    /// The article's 6·P·D.
    pub six_pd_flops: f64,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// GPU-hours.
    pub gpu_hours: f64,
    /// Cost, when a price was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
}

impl From<&TimeCost> for TimeJson {
    fn from(t: &TimeCost) -> Self {
        TimeJson {
            gpus: t.gpus,
            mfu: t.mfu,
            tokens: t.tokens,
            tokens_per_step: t.tokens_per_step,
            flops_per_token: t.flops_per_token,
            tokens_per_second: t.tokens_per_second,
            run_flops: t.run_flops,
            six_pd_flops: t.six_pd,
            seconds: t.seconds,
            gpu_hours: t.gpu_hours,
            cost: t.cost,
        }
    }
}

fn parse<T>(
    flag: &str,
    value: &str,
    f: impl Fn(&str) -> Option<T>,
    valid: &[&str],
) -> Result<T, Error> {
    f(value).ok_or_else(|| {
        Error::bad_input(
            format!("unknown value `{value}` for `{flag}`"),
            format!("valid: {}", valid.join(", ")),
        )
    })
}

/// The core's options from a request, every value checked.
pub(crate) fn options(req: &TrainRequest) -> Result<TrainOptions, Error> {
    let dtype = parse(
        "--dtype",
        &req.dtype,
        ParamDtype::parse,
        &["bf16", "fp16", "fp32"],
    )?;
    let attn = parse(
        "--attn-impl",
        &req.attn_impl,
        |s| match s {
            "sdpa" | "flash" | "flash_attention_2" => Some(AttnImpl::Sdpa),
            "eager" => Some(AttnImpl::Eager),
            _ => None,
        },
        &["sdpa", "eager"],
    )?;
    let device = parse(
        "--device",
        &req.device,
        |s| match s {
            "cuda" | "gpu" => Some(Device::Cuda),
            "cpu" => Some(Device::Cpu),
            _ => None,
        },
        &["cuda", "cpu"],
    )?;
    let precision = parse(
        "--precision",
        &req.precision,
        Precision::parse,
        Precision::NAMES,
    )?;
    let optimizer = parse(
        "--optimizer",
        &req.optimizer,
        Optimizer::parse,
        Optimizer::NAMES,
    )?;
    let mut freeze = Vec::new();
    for f in req.freeze.iter().flat_map(|f| f.split(',')) {
        freeze.push(parse("--freeze", f, FreezePart::parse, FreezePart::NAMES)?);
    }
    if !(0.0..1.0).contains(&req.lora_dropout) {
        return Err(Error::bad_input(
            format!("`--lora-dropout {}` is out of range", req.lora_dropout),
            "give a probability in [0, 1), e.g. 0.05",
        ));
    }
    let lora = match req.lora_rank {
        None => {
            if req.qlora || req.dora {
                return Err(Error::bad_input(
                    "`--qlora` and `--dora` train adapters",
                    "add `--lora-rank R` (e.g. 16)",
                ));
            }
            None
        }
        Some(0) => {
            return Err(Error::bad_input(
                "`--lora-rank 0` adapts nothing",
                "give a rank of at least 1, e.g. 16",
            ));
        }
        Some(rank) => Some(LoraOptions {
            rank,
            targets: match req.lora_targets.trim() {
                "all-linear" => LoraTargets::AllLinear,
                "default" => LoraTargets::Default,
                list => LoraTargets::Modules(
                    list.split(',')
                        .map(|s| s.trim().to_owned())
                        .filter(|s| !s.is_empty())
                        .collect(),
                ),
            },
            dropout: req.lora_dropout,
            dora: req.dora,
        }),
    };
    if lora.is_some() && !freeze.is_empty() {
        return Err(Error::bad_input(
            "`--freeze` with `--lora-rank`: LoRA already freezes the whole base",
            "`--freeze` chooses what full fine-tuning leaves untrained; drop one of them",
        ));
    }
    let base_format = if req.qlora {
        Some(weight_format("nf4-dq")?)
    } else {
        None
    };
    Ok(TrainOptions {
        seq_len: req.seq_len,
        batch: req.batch,
        dtype,
        attn,
        checkpointing: req.checkpointing,
        device,
        convention: req.attention,
        lora,
        base_format,
        freeze,
        precision,
        optimizer,
        parallel: req.parallel,
    })
}

pub(crate) fn run(req: &TrainRequest, env: &HubEnv) -> Result<TrainOutcome, Error> {
    let mut warnings = Vec::new();
    let (spec, _) = read_model(
        &req.model,
        &ReadOptions {
            overrides: req.overrides.clone(),
            assume: req.assume.clone(),
            text_only: req.text_only,
            ..ReadOptions::default()
        },
        &req.hub,
        Want::No,
        env,
        &mut warnings,
    )?;
    let mut opts = options(req)?;
    let gpu = gpu_spec(req.gpu.as_deref())?;
    opts.parallel = layout_of(req, gpu.map(|(_, n)| n))?;
    let report = train(&spec, &opts).map_err(Error::spec(&spec.name))?;
    let capacity = gpu.map(|(g, _)| u128::from(g.memory_bytes));
    let need_gpu = |flag: &str| {
        Error::bad_input(
            format!("`{flag}` searches what fits a GPU"),
            "name one with `--gpu` (e.g. `--gpu h100`)",
        )
    };
    let mut suggested = Vec::new();
    let (mut max_batch, mut max_seq) = (None, None);
    if let Some(cap) = capacity {
        if report.step_peak > cap {
            suggested = suggestions(&spec, &opts, cap).map_err(Error::spec(&spec.name))?;
        }
        if req.max_batch {
            max_batch = Some(
                largest_fitting(&spec, &opts, cap, 1 << 20, |o, v| o.batch = v)
                    .map_err(Error::spec(&spec.name))?,
            );
        }
        if req.max_seq {
            let limit = spec.position_limit().unwrap_or(1 << 24);
            max_seq = Some(
                largest_fitting(&spec, &opts, cap, limit, |o, v| o.seq_len = v)
                    .map_err(Error::spec(&spec.name))?,
            );
        }
    } else if req.max_batch {
        return Err(need_gpu("--max-batch"));
    } else if req.max_seq {
        return Err(need_gpu("--max-seq"));
    }
    if !(req.mfu > 0.0 && req.mfu <= 1.0) {
        return Err(Error::bad_input(
            format!("`--mfu {}` is out of range", req.mfu),
            "give a fraction in (0, 1], e.g. 0.4",
        ));
    }
    if let Some(p) = req.price
        && !(p.is_finite() && p >= 0.0)
    {
        return Err(Error::bad_input(
            format!("`--price {p}` is not a price"),
            "give dollars per GPU-hour, e.g. 2.5",
        ));
    }
    let time = match (req.tokens, gpu) {
        (None, _) => None,
        (Some(_), None) => return Err(need_gpu("--tokens")),
        (Some(0), _) => {
            return Err(Error::bad_input(
                "`--tokens 0` trains on nothing",
                "give the run's tokens, e.g. 2T or 15B",
            ));
        }
        (Some(t), Some((g, _))) => Some(
            time_cost(
                &report,
                &opts,
                g,
                opts.parallel.gpus(),
                req.mfu,
                t,
                req.price,
            )
            .map_err(Error::spec(&spec.name))?,
        ),
    };
    if let Some(l) = spec.position_limit()
        && opts.seq_len > l
    {
        warnings.push(format!(
            "{}: `--seq-len {}` is longer than the model's {} positions",
            spec.name, opts.seq_len, l
        ));
    }
    Ok(TrainOutcome {
        name: spec.name,
        report,
        gpu,
        parallel: opts.parallel,
        suggestions: suggested,
        max_batch,
        max_seq,
        time,
        warnings,
    })
}

/// The parallel layout: the flags as given, the data-parallel degree filling the GPUs.
pub(crate) fn layout_of(req: &TrainRequest, gpus: Option<u64>) -> Result<Parallelism, Error> {
    // Every rule of the layout (degrees, ZeRO stages, offload, divisibility by the model) is
    // the core's `parallel::validate`; here only what filling the GPUs divides by.
    let mut p = req.parallel;
    for (flag, v) in [("--tp", p.tp), ("--pp", p.pp), ("--cp", p.cp)] {
        if v == 0 {
            return Err(Error::bad_input(
                format!("`{flag} 0` is not a parallel degree"),
                "give at least 1",
            ));
        }
    }
    let mut default_group = false;
    match req.fsdp.as_deref() {
        None => {}
        Some("full" | "full-shard") => p.zero = 3,
        Some("grad-op" | "shard-grad-op") => p.zero = 2,
        Some("hybrid" | "hybrid-shard") => {
            p.zero = 3;
            if p.shard_group.is_none() {
                // One node of 8 GPUs, or all of them when there are fewer.
                default_group = true;
            }
        }
        Some(other) => {
            return Err(Error::bad_input(
                format!("unknown value `{other}` for `--fsdp`"),
                "valid: full, grad-op, hybrid",
            ));
        }
    }
    if req.micro_batches_default && p.pp > 1 {
        // A pipeline of pp stages fills with at least pp micro-batches.
        p.micro_batches = p.pp;
    }
    // saturates: never, each degree is at most MAX_GPUS = 2^20 (bounds.rs), the three 2^60.
    let model_parallel = p.tp.saturating_mul(p.pp).saturating_mul(p.cp);
    p.dp = match (req.dp, gpus) {
        (Some(0), _) => {
            return Err(Error::bad_input(
                "`--dp 0` is not a parallel degree",
                "give at least 1",
            ));
        }
        // saturates: never, dp ≤ 2^20 and model_parallel ≤ 2^60 (above).
        (Some(dp), Some(n)) if dp.saturating_mul(model_parallel) != n => {
            return Err(Error::bad_input(
                format!(
                    "`--dp {dp}` × tp·pp·cp = {} GPUs, but `--gpu` names {n}",
                    dp.saturating_mul(model_parallel) // saturates: never, as above
                ),
                "make dp·tp·pp·cp equal the GPUs, or leave `--dp` out",
            ));
        }
        (Some(dp), _) => dp,
        (None, Some(n)) => {
            if n.checked_rem(model_parallel) != Some(0) {
                return Err(Error::bad_input(
                    format!("tp·pp·cp = {model_parallel} does not divide the {n} GPUs of `--gpu`"),
                    "choose degrees whose product divides the GPU count",
                ));
            }
            n.checked_div(model_parallel).unwrap_or(1)
        }
        (None, None) => 1,
    };
    if default_group {
        p.shard_group = Some(p.dp.min(8));
    }
    Ok(p)
}
