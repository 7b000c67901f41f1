//! What autograd keeps for backward after the forward, and the forward's peak, per family.
//!
//! The ground truth (`../shared/truth/train/`) measured this with autograd's saved-tensor
//! hooks on the Hugging Face code; each family file walks a layer's ops in the order that
//! code runs them and keeps a tensor when the op that needs it for backward has an input
//! that requires grad, so full fine-tuning, frozen parts and every LoRA target list are one
//! walk.

use crate::lora::LoraPlan;
use crate::{AttnImpl, Device, FreezePart, ParamDtype, Term};
use llmsize_core::SpecError;
use llmsize_core::profile::TrainingProfile;
use llmsize_core::spec::ModelSpec;

/// The question.
#[derive(Debug, Clone, Copy)]
pub struct ActInput<'a> {
    /// The model.
    pub spec: &'a ModelSpec,
    /// Its training profile (`None`: the type's layer code is not derived; an estimate).
    pub profile: Option<&'a TrainingProfile>,
    /// Sequences per step (micro-batch).
    pub batch: u64,
    /// Tokens per sequence.
    pub seq: u64,
    /// The element type of the weights (activations follow it).
    pub dtype: ParamDtype,
    /// Attention implementation.
    pub attn: AttnImpl,
    /// Non-reentrant gradient checkpointing of every decoder layer.
    pub checkpointing: bool,
    /// Kernels.
    pub device: Device,
    /// LoRA adapters on a frozen base.
    pub lora: Option<&'a LoraPlan>,
    /// Parts frozen under full fine-tuning.
    pub frozen: &'a [FreezePart],
}

/// The answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Activations {
    /// Held for backward after the forward (the truth's `retained_bytes`).
    pub retained: u128,
    /// The forward's peak of live tensors (the truth's `forward_peak_bytes`).
    pub forward_peak: u128,
    /// Every term with its formula (per-layer terms name their layer count).
    pub terms: Vec<Term>,
    /// What the peak is made of.
    pub peak_terms: Vec<Term>,
    /// `None` when exact; else why it is an estimate.
    pub estimate: Option<String>,
    /// The split tensor parallelism needs (sums over every layer): bytes inside the layers
    /// that Megatron's tensor parallelism divides by `tp` (attention heads, the MLP's inner
    /// width) ...
    pub layer_sharded: u128,
    /// ... bytes inside the layers at the full width `d` (norms, residual-stream tensors,
    /// layer inputs under checkpointing), which only sequence parallelism divides ...
    pub layer_replicated: u128,
    /// ... and bytes outside the layers (embeddings, final norm, the loss), held by the first
    /// or last pipeline stage. `layer_sharded + layer_replicated + outside = retained`.
    pub outside: u128,
    /// Decoder layers the layer bytes are spread over (pipeline stages hold `L/pp` of them).
    pub layers: u64,
}

mod ln;
mod rms;

/// The activations of one step.
///
/// Families whose layer code is derived ([`llmsize_core::profile::LayerStyle`]) are exact; any other
/// model type is counted with the nearest derived layer code (an RMSNorm model as llama, a
/// `LayerNorm` model as GPT-NeoX) and marked as an estimate.
pub fn activations(input: &ActInput<'_>) -> Result<Activations, SpecError> {
    use llmsize_core::profile::LayerStyle as S;
    match input.profile.map(|p| p.style) {
        Some(S::Llama) => rms::activations(input),
        Some(S::Gpt2 | S::GptNeox | S::Opt | S::Bloom | S::Falcon | S::Starcoder2 | S::Bert) => {
            ln::activations(input)
        }
        None => estimate(input),
    }
}

/// The attention the step runs: the one asked for, or eager where the class has no SDPA
/// (`eager_only`; asking transformers for SDPA raises), which `why` then says.
fn attention_run(input: &ActInput<'_>, why: &mut Vec<String>) -> AttnImpl {
    if input.attn == AttnImpl::Sdpa && input.profile.is_some_and(|p| p.eager_only) {
        why.push(format!(
            "`{}` has no SDPA attention in transformers 5.24 (asking for it raises); counted with its eager attention",
            input.spec.model_type
        ));
        return AttnImpl::Eager;
    }
    input.attn
}

/// A model type whose layer code is not derived: counted as the nearest derived family.
fn estimate(input: &ActInput<'_>) -> Result<Activations, SpecError> {
    use llmsize_core::facts::LLAMA_MODULES;
    use llmsize_core::profile::{LayerStyle, TrainingProfile};
    use llmsize_core::spec::NormKind;
    let rms = input
        .spec
        .layer_kinds()
        .any(|l| l.norms.iter().any(|n| n.kind == NormKind::RmsNorm));
    let style = if rms {
        LayerStyle::Llama
    } else {
        LayerStyle::GptNeox
    };
    let head_dim = input.spec.layer_kinds().find_map(|l| match &l.attention {
        llmsize_core::spec::Attention::Standard(a) => Some(a.head_dim),
        _ => None,
    });
    let profile = TrainingProfile {
        rotary_dims: head_dim,
        ..TrainingProfile::plain(style, LLAMA_MODULES)
    };
    let mut a = activations(&ActInput {
        profile: Some(&profile),
        ..*input
    })?;
    let why = format!(
        "the activations of `{}` layers are not derived from its code; counted as {} layers",
        input.spec.model_type,
        style.name()
    );
    a.estimate = Some(match a.estimate {
        Some(e) => format!("{why}; {e}"),
        None => why,
    });
    Ok(a)
}
