//! FLOPs of one training step in the counting convention of torch's `FlopCounterMode`.
//!
//! OWNED BY A HELPER: see `/work/wt/BRIEF-train.md`.

use crate::SpecError;
use crate::flops::FlopsReport;
use crate::spec::ModelSpec;
use crate::train::lora::LoraPlan;
use crate::train::{AttnImpl, Term, TrainingProfile};

/// What the step computes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepFlops {
    /// The forward.
    pub forward: u128,
    /// The backward.
    pub backward: u128,
    /// The checkpoint's recompute (0 without checkpointing).
    pub recompute: u128,
    /// forward + backward + recompute.
    pub train_step: u128,
    /// Every term with its formula.
    pub terms: Vec<Term>,
    /// `false` where the family's backward or recompute rule is not derived.
    pub exact: bool,
}

/// The inputs.
#[derive(Debug, Clone, Copy)]
pub struct StepInput<'a> {
    /// The model.
    pub spec: &'a ModelSpec,
    /// Its training profile.
    pub profile: Option<&'a TrainingProfile>,
    /// The forward FLOPs (`crate::flops::flops` at the step's batch, sequence and convention).
    pub forward: &'a FlopsReport,
    /// Attention implementation.
    pub attn: AttnImpl,
    /// Gradient checkpointing.
    pub checkpointing: bool,
    /// The adapters, for LoRA.
    pub lora: Option<&'a LoraPlan>,
    /// Nothing but the adapters (or the unfrozen parts) gets weight gradients.
    pub frozen_base: bool,
}

/// The training step's FLOPs.
pub fn step_flops(input: &StepInput<'_>) -> Result<StepFlops, SpecError> {
    let fwd = input.forward.forward_flops;
    let train = fwd.checked_mul(3).ok_or(SpecError::TooLarge {
        what: "FLOPs".into(),
    })?;
    Ok(StepFlops {
        forward: fwd,
        backward: 2 * fwd,
        recompute: 0,
        train_step: train,
        terms: vec![Term::new(
            "train_step",
            "forward + backward",
            "3·forward",
            train,
        )],
        exact: false,
    })
}
