//! `llmsize train`: one training step's memory, per GPU, and its compute, time and cost.

use llmsize_adapters::ReadOptions;
use llmsize_core::flops::AttentionConvention;
use llmsize_core::gpu::Gpu;
use llmsize_core::train::lora::{LoraOptions, LoraTargets};
use llmsize_core::train::parallel::Parallelism;
use llmsize_core::train::states::{Optimizer, Precision};
use llmsize_core::train::{
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
    /// Warnings.
    pub warnings: Vec<String>,
}

impl TrainOutcome {
    /// Fits the named GPU (true without one).
    #[must_use]
    pub fn fits(&self) -> bool {
        self.gpu
            .is_none_or(|(g, _)| self.report.per_gpu.bytes <= u128::from(g.memory_bytes))
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
    /// The most loaded GPU's peak.
    pub per_gpu_bytes: u128,
    /// Which GPU is the most loaded, and why.
    pub most_loaded: String,
    /// FLOPs of one step.
    pub train_step_flops: u128,
    /// Of which the forward.
    pub forward_flops: u128,
    /// Of which the checkpoint's recompute.
    pub recompute_flops: u128,
    /// The article's `6·P·tokens` for this step.
    pub estimate_6pd_flops: u128,
    /// LoRA: the modules reached.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lora_modules: Option<Vec<String>>,
    /// The GPU's memory, when named.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_memory_bytes: Option<u64>,
    /// Fits the GPU, when named.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fits: Option<bool>,
    /// Model-state terms.
    pub states: Vec<TermJson>,
    /// Activation terms.
    pub activations: Vec<TermJson>,
    /// Forward-peak terms.
    pub activation_peak: Vec<TermJson>,
    /// FLOP terms.
    pub flops: Vec<TermJson>,
    /// Per-GPU terms.
    pub per_gpu: Vec<TermJson>,
}

impl TrainJson {
    fn new(o: &TrainOutcome) -> Self {
        let r = &o.report;
        let tokens = u128::from(r.activations_tokens());
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
            per_gpu_bytes: r.per_gpu.bytes,
            most_loaded: r.per_gpu.most_loaded.clone(),
            train_step_flops: r.flops.train_step,
            forward_flops: r.flops.forward,
            recompute_flops: r.flops.recompute,
            estimate_6pd_flops: 6 * u128::from(r.params) * tokens,
            lora_modules: r.lora.as_ref().map(|l| l.resolved.clone()),
            gpu_memory_bytes: o.gpu.map(|(g, _)| g.memory_bytes),
            fits: o.gpu.map(|_| o.fits()),
            states: terms(&r.states.terms),
            activations: terms(&r.activations.terms),
            activation_peak: terms(&r.activations.peak_terms),
            flops: terms(&r.flops.terms),
            per_gpu: terms(&r.per_gpu.terms),
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
fn options(req: &TrainRequest) -> Result<TrainOptions, Error> {
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
    let opts = options(req)?;
    let gpu = gpu_spec(req.gpu.as_deref())?;
    let report = train(&spec, &opts).map_err(Error::spec(&spec.name))?;
    Ok(TrainOutcome {
        name: spec.name,
        report,
        gpu,
        warnings,
    })
}
