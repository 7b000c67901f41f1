//! Model states: weights, gradients, optimizer states and master weights, by precision policy
//! and optimizer, each as the library that keeps them allocates it.
//!
//! Sources (what each line of [`Optimizer`] and [`Precision`] follows):
//! - torch `AdamW` (`torch/optim/adamw.py`, `_init_group`): `exp_avg` and `exp_avg_sq` are
//!   `zeros_like(p)` (the parameter's dtype), and `step` is a 0-d float32 tensor per parameter
//!   tensor, on the CPU unless `fused`/`capturable` — the ground truth measured exactly this
//!   (`8·N + 4·n_tensors` on fp32 parameters, `4·N + 4·n_tensors` on bf16).
//! - bitsandbytes `AdamW8bit` (`bitsandbytes/optim/optimizer.py`, `Optimizer2State.init_state`):
//!   tensors of at least `min_8bit_size` = 4096 elements keep two uint8 states and, block-wise,
//!   one float32 absmax per 256 elements for each; smaller tensors keep two float32 states.
//!   The quantization maps are shared by all parameters.
//! - transformers `Adafactor` (`transformers/optimization.py`, default `beta1=None`): a matrix
//!   keeps factored second moments `exp_avg_sq_row` (its rows) and `exp_avg_sq_col` (its
//!   columns), a vector its full `exp_avg_sq`, in the gradient's dtype, plus a scalar `RMS`.
//! - torch `SGD(momentum>0)`: one `momentum_buffer` like the parameter.
//! - Lion (`lion-pytorch`, Chen et al. 2023): one `exp_avg` like the parameter.
//! - Muon (Keller Jordan's `MuonWithAuxAdam`, torch 2.9's `torch.optim.Muon`): hidden 2-D
//!   matrices keep one `momentum_buffer`; embeddings, the head and vectors go to `AdamW`.
//! - Mixed precision with an fp32 master copy (`DeepSpeed` ZeRO, Rajbhandari et al. 2020,
//!   §3.1): 2-byte weights and gradients, and fp32 master weights plus fp32 optimizer states,
//!   `2 + 2 + 12 = 16` bytes per parameter with Adam; Megatron-LM's fp32 main gradients
//!   (`--accumulate-allreduce-grads-in-fp32`, the default for bf16) make it `2 + 4 + 12 = 18`.

use crate::{ParamDtype, Term, sum};
use llmsize_core::SpecError;
use llmsize_core::checked::{self, Checked};
use llmsize_core::units::thousands_u128;

/// How parameters, gradients and optimizer states are typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Precision {
    /// `model.to(dtype)` and a torch optimizer: everything in the parameters' dtype (what the
    /// ground truth measures).
    Pure,
    /// 16-bit weights and gradients, fp32 master weights and optimizer states (`DeepSpeed`,
    /// Accelerate `mixed_precision` with a master copy): 16 bytes per parameter with Adam.
    Mixed,
    /// As [`Precision::Mixed`] with fp32 main gradients (Megatron-LM): 18 bytes with Adam.
    MixedFp32Grads,
    /// fp32 parameters, gradients and states; `torch.autocast` runs the matmuls in 16 bits
    /// (HF Trainer's `bf16=True` on an fp32 model).
    Autocast,
}

impl Precision {
    /// The name as `--precision` writes it.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Precision::Pure => "pure",
            Precision::Mixed => "mixed",
            Precision::MixedFp32Grads => "mixed-fp32-grads",
            Precision::Autocast => "autocast",
        }
    }

    /// Parse a `--precision` value.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "pure" => Some(Precision::Pure),
            "mixed" | "deepspeed" | "zero" => Some(Precision::Mixed),
            "mixed-fp32-grads" | "megatron" => Some(Precision::MixedFp32Grads),
            "autocast" | "amp" => Some(Precision::Autocast),
            _ => None,
        }
    }

    /// The names `--precision` accepts.
    pub const NAMES: &'static [&'static str] = &["pure", "mixed", "mixed-fp32-grads", "autocast"];
}

/// The optimizer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Optimizer {
    /// torch `AdamW` (also Adam).
    AdamW,
    /// bitsandbytes `AdamW8bit` (block-wise).
    AdamW8bit,
    /// transformers `Adafactor` without momentum.
    Adafactor,
    /// torch `SGD` with momentum.
    SgdMomentum,
    /// Lion.
    Lion,
    /// Muon on hidden matrices, `AdamW` on the rest.
    Muon,
}

impl Optimizer {
    /// The name as `--optimizer` writes it.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Optimizer::AdamW => "adamw",
            Optimizer::AdamW8bit => "adamw-8bit",
            Optimizer::Adafactor => "adafactor",
            Optimizer::SgdMomentum => "sgd",
            Optimizer::Lion => "lion",
            Optimizer::Muon => "muon",
        }
    }

    /// Parse an `--optimizer` value.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        match s.to_ascii_lowercase().replace('_', "-").as_str() {
            "adamw" | "adam" => Some(Optimizer::AdamW),
            "adamw-8bit" | "adamw8bit" | "adam8bit" | "8bit-adam" | "paged-adamw-8bit" => {
                Some(Optimizer::AdamW8bit)
            }
            "adafactor" => Some(Optimizer::Adafactor),
            "sgd" | "sgd-momentum" => Some(Optimizer::SgdMomentum),
            "lion" => Some(Optimizer::Lion),
            "muon" => Some(Optimizer::Muon),
            _ => None,
        }
    }

    /// The names `--optimizer` accepts.
    pub const NAMES: &'static [&'static str] =
        &["adamw", "adamw-8bit", "adafactor", "sgd", "lion", "muon"];
}

/// A group of identical parameter tensors (one tensor of a layer kind, in all its layers).
#[allow(
    clippy::struct_excessive_bools,
    reason = "each says how the group is held"
)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    /// Elements of one tensor (all experts of a 3-D expert tensor).
    pub elements: u64,
    /// Tensors in the group (the layers that hold it).
    pub tensors: u64,
    /// `[rows, cols]` of each 2-D slice for factored states (`None` for a vector); a 3-D
    /// expert tensor has `elements / (rows·cols)` slices.
    pub matrix: Option<(u64, u64)>,
    /// A hidden matrix (Muon's; not an embedding, head or vector).
    pub hidden_matrix: bool,
    /// Trained (else frozen).
    pub trainable: bool,
    /// The dtype it is held in.
    pub dtype: ParamDtype,
    /// Bytes of the stored tensors when quantized (a `QLoRA` base), overriding `dtype`.
    pub stored_bytes: Option<u128>,
    /// What the tensor is (an adapter: the kind of the module it adapts).
    pub kind: llmsize_core::layout::TensorKind,
    /// Where it sits (an adapter: its module's layer).
    pub place: llmsize_core::layout::Place,
    /// A LoRA adapter (not a base tensor).
    pub adapter: bool,
    /// Stored in the same parameter tensor as the group before it (Phi-3's `gate_up_proj`,
    /// transformers 5's 3-D `experts.gate_up_proj`): its elements count, but it adds no tensor
    /// of its own, so no per-tensor optimizer scalar.
    pub part_of_previous: bool,
    /// Trainable but never reached by the step's forward (a decoder's cross-attention when no
    /// encoder runs: `BartForCausalLM`): it gets no gradient, so torch's optimizers keep no
    /// state for it (they skip a parameter whose `.grad` is `None`).
    pub unreached: bool,
}

/// What the step's parameters, gradients and optimizer hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelStates {
    /// Trained parameters.
    pub trainable_params: u64,
    /// Frozen parameters.
    pub frozen_params: u64,
    /// Trained parameter tensors.
    pub trainable_tensors: u64,
    /// Weights as held by the model.
    pub weights_bytes: u128,
    /// Gradients of the trained parameters.
    pub gradient_bytes: u128,
    /// Optimizer states, master weights included.
    pub optimizer_state_bytes: u128,
    /// Of which fp32 master weights.
    pub master_weight_bytes: u128,
    /// Of which torch's per-tensor `step` scalars, kept on the CPU.
    pub step_bytes_cpu: u128,
    /// Weights + gradients + optimizer states: the terms' sum, checked when they were made.
    pub total_bytes: u128,
    /// Each line with its formula.
    pub terms: Vec<Term>,
}

/// The states of `held` under `precision` and `optimizer`.
pub fn model_states(
    held: &[Held],
    precision: Precision,
    optimizer: Optimizer,
) -> Result<ModelStates, SpecError> {
    let (mut n_train, mut n_frozen, mut t_train) = (0u128, 0u128, 0u128);
    let (mut weights, mut grads, mut opt, mut master, mut step) =
        (0u128, 0u128, 0u128, 0u128, 0u128);
    // Trained bytes by element size, for the formulas.
    let mut by_dtype: [u128; 2] = [0, 0]; // [2-byte, 4-byte] trained parameters
    for h in held {
        let n = checked::mul(
            "elements·layers",
            u128::from(h.elements),
            u128::from(h.tensors),
        )?;
        let e = u128::from(h.dtype.bytes());
        // Autocast keeps fp32 parameters whatever `--dtype` says.
        let e_held = if precision == Precision::Autocast {
            4
        } else {
            e
        };
        let held_bytes = match h.stored_bytes {
            Some(b) => b,
            None => checked::mul("e·N", n, e_held)?,
        };
        weights = checked::add("weights", weights, held_bytes)?;
        if !h.trainable {
            n_frozen = checked::add("frozen parameters", n_frozen, n)?;
            continue;
        }
        n_train = checked::add("trained parameters", n_train, n)?;
        if h.unreached {
            continue;
        }
        // Per-tensor scalars belong to whole parameter tensors.
        let tensors = if h.part_of_previous {
            0
        } else {
            u128::from(h.tensors)
        };
        t_train = checked::add("trained tensors", t_train, tensors)?;
        let slot = usize::from(e_held == 4);
        if let Some(b) = by_dtype.get_mut(slot) {
            *b = checked::add("trained parameters by dtype", *b, n)?;
        }
        let (grad_e, state_e) = match precision {
            Precision::Pure | Precision::Autocast => (e_held, e_held),
            Precision::Mixed => (e_held, 4),
            Precision::MixedFp32Grads => (4, 4),
        };
        grads = (Checked::new(grads) + Checked::new(n) * grad_e).get("gradients")?;
        if matches!(precision, Precision::Mixed | Precision::MixedFp32Grads) && e_held != 4 {
            master = (Checked::new(master) + Checked::new(n) * 4u128).get("master weights")?;
        }
        let scalars = Checked::new(tensors) * 4u128;
        let adam = |n: u128| Checked::new(n) * 2u128 * state_e;
        let state = match optimizer {
            Optimizer::AdamW => {
                if precision == Precision::Pure || precision == Precision::Autocast {
                    step = (Checked::new(step) + scalars).get("4·n_tensors")?;
                }
                adam(n).get("2·e·N")?
            }
            Optimizer::AdamW8bit => {
                let per = u128::from(h.elements);
                let one = if h.elements >= 4096 {
                    // two uint8 states + two fp32 absmax per 256-element block
                    Checked::new(per) * 2u128 + Checked::new(per.div_ceil(256)) * 8u128
                } else {
                    Checked::new(per) * 8u128
                };
                (one * u128::from(h.tensors)).get("8-bit AdamW states·layers")?
            }
            Optimizer::Adafactor => match h.matrix {
                Some((rows, cols)) if rows > 1 && cols > 1 => {
                    let area = checked::mul("rows·cols", rows, cols)?;
                    let slices =
                        u128::from(checked::div("elements / (rows·cols)", h.elements, area)?);
                    let one =
                        Checked::new(slices) * (Checked::new(u128::from(rows)) + u128::from(cols));
                    (one * u128::from(h.tensors) * state_e + scalars)
                        .get("e·(rows + cols)·slices·layers + 4·n_tensors")?
                }
                _ => (Checked::new(n) * state_e + scalars).get("e·N + 4·n_tensors")?,
            },
            Optimizer::SgdMomentum | Optimizer::Lion => checked::mul("e·N", n, state_e)?,
            Optimizer::Muon => {
                if h.hidden_matrix {
                    checked::mul("e·N", n, state_e)?
                } else {
                    step = (Checked::new(step) + scalars).get("4·n_tensors")?;
                    adam(n).get("2·e·N")?
                }
            }
        };
        opt = checked::add("optimizer states", opt, state)?;
    }
    let optimizer_state_bytes = checked::sum(
        "optimizer states + master weights + step scalars",
        [opt, master, step],
    )?;
    let n = |x: u128| thousands_u128(x);
    let mut terms = vec![
        Term::new(
            "weights",
            "weights, as held during the step",
            format!("{} trained + {} frozen parameters", n(n_train), n(n_frozen)),
            weights,
        ),
        Term::new(
            "gradients",
            "gradients of the trained parameters",
            match precision {
                Precision::MixedFp32Grads => format!("4·N_trained = 4·{}", n(n_train)),
                _ => format!(
                    "2·N₁₆ + 4·N₃₂ = 2·{} + 4·{}",
                    n(by_dtype[0]),
                    n(by_dtype[1])
                ),
            },
            grads,
        ),
    ];
    if master > 0 {
        terms.push(Term::new(
            "master_weights",
            "fp32 master copy of the trained 16-bit weights",
            format!("4·N₁₆ = 4·{}", n(by_dtype[0])),
            master,
        ));
    }
    terms.push(Term::new(
        "optimizer_states",
        format!("{} states", optimizer.name()),
        optimizer_formula(optimizer, precision),
        opt,
    ));
    if step > 0 {
        terms.push(Term::new(
            "optimizer_step",
            "torch's `step` scalar per trained tensor (fp32, on the CPU)",
            format!("4·n_tensors = 4·{}", n(t_train)),
            step,
        ));
    }
    let gradient_bytes = grads;
    let total_bytes = sum(&terms, "model states")?;
    Ok(ModelStates {
        trainable_params: checked::to_u64("trained parameters", n_train)?,
        frozen_params: checked::to_u64("frozen parameters", n_frozen)?,
        trainable_tensors: checked::to_u64("trained tensors", t_train)?,
        weights_bytes: weights,
        gradient_bytes,
        optimizer_state_bytes,
        master_weight_bytes: master,
        step_bytes_cpu: step,
        total_bytes,
        terms,
    })
}

fn optimizer_formula(optimizer: Optimizer, precision: Precision) -> String {
    let e = match precision {
        Precision::Pure => "e",
        _ => "4",
    };
    match optimizer {
        Optimizer::AdamW => format!("exp_avg + exp_avg_sq = 2·{e}·N_trained"),
        Optimizer::AdamW8bit => {
            "2 uint8 states + 2 fp32 absmax per 256 elements (tensors ≥ 4096 elements), else 2·4 bytes"
                .into()
        }
        Optimizer::Adafactor => {
            format!("{e}·(rows + cols) per matrix, {e}·n per vector, + a 4-byte RMS per tensor")
        }
        Optimizer::SgdMomentum => format!("momentum_buffer = {e}·N_trained"),
        Optimizer::Lion => format!("exp_avg = {e}·N_trained"),
        Optimizer::Muon => {
            format!("{e}·N_matrices (momentum) + 2·{e}·N_rest (AdamW on embeddings, head, vectors)")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn llama2_like(dtype: ParamDtype) -> Vec<Held> {
        // Llama-2-7B's 291 tensors: 6,738,415,616 parameters (ground truth).
        vec![
            Held {
                elements: 6_738_415_616 - 291 + 1,
                tensors: 1,
                matrix: Some((1, 1)),
                hidden_matrix: true,
                trainable: true,
                dtype,
                stored_bytes: None,
                kind: llmsize_core::layout::TensorKind::Matrix,
                place: llmsize_core::layout::Place::Output,
                adapter: false,
                part_of_previous: false,
                unreached: false,
            },
            Held {
                elements: 1,
                tensors: 290,
                matrix: None,
                hidden_matrix: false,
                trainable: true,
                dtype,
                stored_bytes: None,
                kind: llmsize_core::layout::TensorKind::Matrix,
                place: llmsize_core::layout::Place::Output,
                adapter: false,
                part_of_previous: false,
                unreached: false,
            },
        ]
    }

    #[test]
    fn torch_adamw_matches_the_measured_state() {
        // train.json, Llama-2-7b-hf: adamw_fp32_params 53,907,326,092 and adamw_bf16_params
        // 26,953,663,628 bytes; gradients 26,953,662,464 (fp32) and 13,476,831,232 (bf16).
        let s = model_states(
            &llama2_like(ParamDtype::Fp32),
            Precision::Pure,
            Optimizer::AdamW,
        )
        .unwrap();
        assert_eq!(s.optimizer_state_bytes, 53_907_326_092);
        assert_eq!(s.gradient_bytes, 26_953_662_464);
        assert_eq!(s.trainable_tensors, 291);
        let s = model_states(
            &llama2_like(ParamDtype::Bf16),
            Precision::Pure,
            Optimizer::AdamW,
        )
        .unwrap();
        assert_eq!(s.optimizer_state_bytes, 26_953_663_628);
        assert_eq!(s.gradient_bytes, 13_476_831_232);
    }

    #[test]
    fn mixed_precision_is_16_bytes_and_megatron_18() {
        let n = 6_738_415_616u128;
        let s = model_states(
            &llama2_like(ParamDtype::Bf16),
            Precision::Mixed,
            Optimizer::AdamW,
        )
        .unwrap();
        assert_eq!(
            s.weights_bytes + s.gradient_bytes + s.optimizer_state_bytes,
            16 * n
        );
        let s = model_states(
            &llama2_like(ParamDtype::Bf16),
            Precision::MixedFp32Grads,
            Optimizer::AdamW,
        )
        .unwrap();
        assert_eq!(
            s.weights_bytes + s.gradient_bytes + s.optimizer_state_bytes,
            18 * n
        );
    }

    #[test]
    fn eight_bit_adam_keeps_small_tensors_in_32_bits() {
        let h = |elements| Held {
            elements,
            tensors: 1,
            matrix: None,
            hidden_matrix: false,
            trainable: true,
            dtype: ParamDtype::Bf16,
            stored_bytes: None,
            kind: llmsize_core::layout::TensorKind::Matrix,
            place: llmsize_core::layout::Place::Output,
            adapter: false,
            part_of_previous: false,
            unreached: false,
        };
        // 4096 elements: 2·4096 + 2·4·16 = 8,320; 4095: 2·4·4095 = 32,760.
        let s = model_states(&[h(4096)], Precision::Pure, Optimizer::AdamW8bit).unwrap();
        assert_eq!(s.optimizer_state_bytes, 8_320);
        let s = model_states(&[h(4095)], Precision::Pure, Optimizer::AdamW8bit).unwrap();
        assert_eq!(s.optimizer_state_bytes, 32_760);
    }
}
