//! LoRA (and DoRA, QLoRA) as peft 0.21 applies it: which modules a `target_modules` value
//! reaches in a family, and what the adapters add.
//!
//! OWNED BY A HELPER: see `/work/wt/BRIEF-train.md`.

use crate::SpecError;
use crate::layout::{Layout, TensorKind};
use crate::spec::{ModelSpec, StackRole};
use crate::train::TrainingProfile;
use std::ops::Range;

/// `--lora-targets`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoraTargets {
    /// peft's `"all-linear"`: every linear module but the output head.
    AllLinear,
    /// peft's per-model-type default (`LoraConfig()` without `target_modules`).
    Default,
    /// Module names (peft matches a name against the end of each module path).
    Modules(Vec<String>),
}

/// What the user asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct LoraOptions {
    /// Rank `r`.
    pub rank: u64,
    /// The targets.
    pub targets: LoraTargets,
    /// `lora_dropout`.
    pub dropout: f64,
    /// DoRA (`use_dora=True`): a trained magnitude vector per adapted module.
    pub dora: bool,
}

/// One adapted module kind (the same module in every layer of a layer kind).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Adapted {
    /// peft's module name (`q_proj`, `c_attn`, `experts.gate_up_proj`).
    pub name: String,
    /// The base tensor it adapts.
    pub kind: TensorKind,
    /// The stack.
    pub stack: Option<StackRole>,
    /// The layers (within the stack) that hold it.
    pub layer_runs: Vec<Range<u64>>,
    /// How many layers hold it.
    pub layers: u64,
    /// Input features of the base module.
    pub n_in: u64,
    /// Output features of the base module.
    pub n_out: u64,
    /// Experts wrapped by peft's `ParamWrapper` (1 for a plain `Linear`).
    pub copies: u64,
    /// Trainable parameters this module adds in one layer.
    pub params: u64,
    /// Trainable tensors it adds in one layer.
    pub tensors: u64,
}

/// The resolved adapters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoraPlan {
    /// Rank.
    pub rank: u64,
    /// `lora_dropout` > 0.
    pub dropout: bool,
    /// DoRA.
    pub dora: bool,
    /// Every adapted module kind.
    pub modules: Vec<Adapted>,
    /// The module names reached, sorted (peft's `target_modules` after resolution).
    pub resolved: Vec<String>,
    /// Trainable parameters (adapters only).
    pub trainable: u64,
    /// Trainable tensors.
    pub tensors: u64,
}

/// Resolve `options` on a model.
pub fn plan(
    spec: &ModelSpec,
    layout: &Layout,
    profile: Option<&TrainingProfile>,
    options: &LoraOptions,
) -> Result<LoraPlan, SpecError> {
    let _ = (spec, layout, profile, options);
    Err(SpecError::Invalid {
        field: "--lora-rank".into(),
        found: "LoRA".into(),
        expected: "(not built yet)".into(),
    })
}
