//! FLOPs of one training step in the counting convention of torch's `FlopCounterMode`.
//!
//! The counter charges `2·m·n·k` per matmul (`mm`, `addmm`, `bmm`, `baddbmm`, grouped
//! matmuls), nothing for element-wise ops, and the SDPA kernels by formula: the forward
//! `scores + values` (`2·b·s²·n_h·d_qk + 2·b·s²·n_h·d_v` over the full matrix), the backward
//! `3·scores + 2·values` (it recomputes `QKᵀ`), so 2.5× the forward where `d_qk = d_v`.
//! The ground truth (`../shared/truth/train/README.md`, sections `FLOPs`, `LoRA FLOPs`, `MoE FLOPs`)
//! measured every figure this module reproduces; the rules, each checked there exactly:
//!
//! - **A Linear's backward** is one matmul for the weight gradient if the weight is trained
//!   and one for the grad-input if its input requires grad. Full fine-tuning: both everywhere,
//!   so every matmul costs 3× its forward. A frozen base (`LoRA`) skips every weight gradient,
//!   and layer 0's q/k/v also skip the grad-input (the frozen embedding's output needs none).
//! - **Attention**: eager attention (and CPU SDPA with attention dropout, which falls back to
//!   the math path of `bmm`s) backpropagates each `bmm` into the inputs that need it (`∂q`,
//!   `∂k` of `QKᵀ`; `∂P`, `∂v` of `P·V`); the fused SDPA backward is `3·scores + 2·values`
//!   whenever any of q, k, v requires grad.
//! - **An adapter** (peft `lora.Linear`): forward `2T·r·(n_in + n_out)`; backward `lora_B`'s
//!   weight and input gradients `4T·r·n_out`, `lora_A`'s weight gradient `2T·n_in·r` and its
//!   grad-input `2T·n_in·r` if its input requires grad.
//! - **Routed experts** (`grouped_mm`, `b·s·k` rows): `2·T·k·n_in·n_out` like a matmul. peft
//!   wraps 3-D expert tensors with `ParamWrapper`, which builds `W + scaling·B·A` (a `baddbmm`
//!   of `2·E·n_in·r·n_out`) twice per forward and backpropagates one of them (2 `bmm`s); the
//!   merged weight then needs its weight gradient. The router's wrapper builds `B·A` once.
//! - **Gradient checkpointing** (non-reentrant, every decoder layer) re-runs each layer's
//!   forward in the backward *up to the op that saves the last tensor* — autograd packs an
//!   op's saved inputs before its kernel runs, so that op itself is not re-run. A llama-style
//!   layer ends with `down_proj` (its input and weight are the last pack): the recompute skips
//!   `2·T·F·d`, or only the down adapter's `lora_B` (`2T·r·d`) when it is adapted. The whole
//!   layer is re-run where a later op saves a tensor: a residual dropout (GPT-2, OPT,
//!   `StarCoder2`), a norm after the MLP (Gemma 2, `OLMo` 2), the routing weights' product
//!   (MoE), a gate's product on a shared expert (Qwen2-MoE). An `MoE` block that adds its
//!   shared expert after the routed ones (DeepSeek-V3's code: GLM-4-MoE, Solar Open, Aria,
//!   …; `TrainingProfile::shared_expert`) ends with the shared `down_proj`: that matmul is
//!   skipped. `enable_input_require_grads` makes layer 0's input require grad.
//!
//! Layers are counted per layer kind (never per layer), and every product is checked.

use std::fmt::Write as _;
use std::ops::Range;

use crate::lora::{Adapted, LoraPlan};
use crate::{AttnImpl, Device, FreezePart, Term};
use llmsize_core::checked::{self, Checked};
use llmsize_core::flops::FlopsReport;
use llmsize_core::layout::{Layout, Place, Tensor, TensorKind, layout};
use llmsize_core::profile::{BlockNorms, LayerStyle, SharedExpertOrder, TrainingProfile};
use llmsize_core::spec::{Attention, Ffn, Layer, ModelSpec, OutputHead, StackRole};
use llmsize_core::units::thousands_u128;
use llmsize_core::{Overflow, SpecError};

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
    /// The forward FLOPs (`llmsize_core::flops::flops` at the step's batch, sequence and convention).
    pub forward: &'a FlopsReport,
    /// Attention implementation.
    pub attn: AttnImpl,
    /// Gradient checkpointing.
    pub checkpointing: bool,
    /// The adapters, for `LoRA`.
    pub lora: Option<&'a LoraPlan>,
    /// Nothing but the adapters (or the unfrozen parts) gets weight gradients.
    pub frozen_base: bool,
}

/// What [`StepInput`] does not carry: the kernels' device and the parts `--freeze` leaves
/// frozen under full fine-tuning.
#[derive(Debug, Clone, Copy)]
pub struct StepContext<'a> {
    /// CPU SDPA with attention dropout runs the math path (`bmm`s, 2× backward); CUDA runs
    /// a fused kernel (the SDPA backward formula).
    pub device: Device,
    /// Parts frozen under full fine-tuning (ignored with `LoRA`, where all the base is).
    pub freeze: &'a [FreezePart],
}

impl Default for StepContext<'_> {
    fn default() -> Self {
        StepContext {
            device: Device::Cpu,
            freeze: &[],
        }
    }
}

/// The training step's FLOPs, with the kernels the ground truth measured (CPU) and, under
/// `frozen_base` without adapters, no knowledge of which parts are frozen (see
/// [`step_flops_in`]).
pub fn step_flops(input: &StepInput<'_>) -> Result<StepFlops, SpecError> {
    step_flops_in(input, &StepContext::default())
}

/// The training step's FLOPs on `context.device` with `context.freeze` frozen.
pub fn step_flops_in(
    input: &StepInput<'_>,
    context: &StepContext<'_>,
) -> Result<StepFlops, SpecError> {
    let lay = layout(input.spec)?;
    Counter::new(input, context, &lay)?.count()
}

fn n(v: u128) -> String {
    thousands_u128(v)
}

/// Where a Linear sits in the layer's dataflow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// Reads the attention norm's output: q, k, v, fused qkv, MLA down/up projections.
    AttnIn,
    /// Reads the attention output.
    AttnOut,
    /// Reads the MLP norm's output: gate, up, experts' gate/up, shared experts' gate/up.
    MlpIn,
    /// The MoE router (its output scales the experts' output).
    Router,
    /// Reads the MLP's activation: down, experts' down, shared experts' down.
    MlpOut,
    /// A matrix the typed parts do not describe (a Mamba mixer's projections).
    Other,
}

fn role(kind: TensorKind) -> Option<Role> {
    use TensorKind as K;
    Some(match kind {
        K::AttnQ | K::AttnK | K::AttnV | K::AttnQkv | K::AttnQA | K::AttnKvA | K::AttnKvB => {
            Role::AttnIn
        }
        K::AttnOutput => Role::AttnOut,
        K::FfnGate
        | K::FfnUp
        | K::ExpertGate
        | K::ExpertUp
        | K::SharedGate
        | K::SharedUp
        | K::SharedExpertGate => Role::MlpIn,
        K::Router => Role::Router,
        K::FfnDown | K::ExpertDown | K::SharedDown => Role::MlpOut,
        K::Matrix => Role::Other,
        _ => return None,
    })
}

/// Families whose `--freeze` steps were checked against torch's count: small configs of
/// Llama-2, Qwen3, Mixtral, Qwen3-MoE, Phi-3, Gemma, Gemma 2 (eager), `OLMo` 2,
/// GPT-2, Pythia, OPT, BLOOM (eager), Falcon and `StarCoder2`, every part alone and several
/// together, with and without checkpointing (the tests below keep three of them).
const FREEZE_CHECKED: &[LayerStyle] = &[
    LayerStyle::Llama,
    LayerStyle::Gpt2,
    LayerStyle::GptNeox,
    LayerStyle::Opt,
    LayerStyle::Bloom,
    LayerStyle::Falcon,
    LayerStyle::Starcoder2,
];

/// One Linear of a layer kind.
#[derive(Debug, Clone)]
struct Lin {
    kind: TensorKind,
    role: Role,
    /// Input and output features.
    n_in: u64,
    n_out: u64,
    /// Forward FLOPs in one layer: `2·T·n_in·n_out·active_copies`.
    fwd: u128,
    /// `ParamWrapper` merges the adapters into this weight: it gets a weight gradient.
    merged: bool,
}

/// How peft wraps a module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wrapper {
    /// `lora.Linear`: `lora_B(lora_A(x))` beside the base.
    Linear,
    /// `ParamWrapper` on 3-D expert tensors: `W + scaling·B·A` built per forward.
    Experts,
    /// `ParamWrapper` on the router's 2-D weight.
    Router,
}

/// One adapter on one layer kind.
#[derive(Debug, Clone)]
struct Adapter {
    kind: TensorKind,
    role: Role,
    wrapper: Wrapper,
    n_in: u128,
    n_out: u128,
    copies: u128,
    rank: u128,
    /// It sits in the model's first layer.
    in_layer0: bool,
}

/// A layer kind with what it computes.
struct Kind<'a> {
    layer: &'a Layer,
    role: StackRole,
    /// Layers of the kind.
    count: u128,
    /// The kind holds the model's first layer.
    first: bool,
    lins: Vec<Lin>,
    /// Attention forward per layer: scores and values.
    scores: u128,
    values: u128,
    adapters: Vec<Adapter>,
}

/// What one layer computes.
#[derive(Debug, Default, Clone, Copy)]
struct Pass {
    /// Base linears' forward.
    matmul: u128,
    /// Attention forward (scores + values).
    attn: u128,
    /// Adapters' forward (`lora.Linear`).
    adapters_fwd: u128,
    /// `ParamWrapper`'s merged weights, built in the forward.
    wrapper_fwd: u128,
    /// Weight-gradient matmuls.
    wgrad: u128,
    /// Grad-input matmuls.
    igrad: u128,
    /// Adapters' backward.
    adapters_bwd: u128,
    /// `ParamWrapper`'s backward.
    wrapper_bwd: u128,
    /// Attention backward.
    attn_bwd: u128,
    /// What the checkpoint's recompute does not re-run.
    tail: u128,
    /// The layer's output requires grad.
    out_rg: bool,
}

impl Pass {
    fn forward(&self) -> Result<u128, Overflow> {
        checked::sum(
            "M + S + A + wrapper (forward FLOPs)",
            [self.matmul, self.attn, self.adapters_fwd, self.wrapper_fwd],
        )
    }

    fn backward(&self) -> Result<u128, Overflow> {
        checked::sum(
            "W + I + A_b + wrapper + S_b (backward FLOPs)",
            [
                self.wgrad,
                self.igrad,
                self.adapters_bwd,
                self.wrapper_bwd,
                self.attn_bwd,
            ],
        )
    }

    fn recompute(&self) -> Result<u128, Overflow> {
        checked::sub(
            "forward − tail (recompute FLOPs)",
            self.forward()?,
            self.tail,
        )
    }
}

/// Query/key and value widths of all heads (`n_h·d_qk`, `n_h·d_v`).
fn widths(a: &Attention) -> Option<(u64, u64)> {
    match a {
        Attention::Standard(a) | Attention::CacheOnly(a) => {
            let w = a.num_heads.checked_mul(a.head_dim)?;
            Some((w, w))
        }
        Attention::Latent(a) => Some((
            a.num_heads
                .checked_mul(a.qk_nope_head_dim.checked_add(a.qk_rope_head_dim)?)?,
            a.num_heads.checked_mul(a.v_head_dim)?,
        )),
        Attention::Absent => None,
    }
}

/// Layers of `runs` that `ranges` also holds (both sorted), by a merge walk.
fn overlap(runs: impl Iterator<Item = Range<u64>>, ranges: &[Range<u64>]) -> u128 {
    let mut total = 0u128;
    let mut ranges = ranges.iter().peekable();
    for r in runs {
        while let Some(x) = ranges.peek() {
            if x.end <= r.start {
                ranges.next();
                continue;
            }
            if x.start >= r.end {
                break;
            }
            // The two meet here: min of the ends > max of the starts.
            let n = x.end.min(r.end).abs_diff(x.start.max(r.start));
            // saturates: never, the overlaps are layers of one stack, a u64.
            total = total.saturating_add(u128::from(n));
            if x.end <= r.end {
                ranges.next();
            } else {
                break;
            }
        }
    }
    total
}

struct Counter<'a> {
    input: &'a StepInput<'a>,
    context: &'a StepContext<'a>,
    layout: &'a Layout,
    t: u128,
    lora: bool,
    fused_sdpa: bool,
    /// Why the figure is not exact.
    why: Vec<String>,
}

impl<'a> Counter<'a> {
    fn new(
        input: &'a StepInput<'a>,
        context: &'a StepContext<'a>,
        layout: &'a Layout,
    ) -> Result<Self, Overflow> {
        let t = checked::mul(
            "b·s",
            u128::from(input.forward.batch),
            u128::from(input.forward.seq_len),
        )?;
        let attention_dropout = input.profile.is_some_and(|p| p.attention_dropout);
        // CPU SDPA with attention dropout falls back to the math path (`bmm`s).
        let fused_sdpa =
            input.attn == AttnImpl::Sdpa && !(attention_dropout && context.device == Device::Cpu);
        let mut why = Vec::new();
        if input.profile.is_none() {
            why.push(format!(
                "the training step of model type `{}` is not derived: counted as a llama-style layer",
                input.spec.model_type
            ));
        }
        if input.lora.is_none() && input.frozen_base && context.freeze.is_empty() {
            why.push(
                "which parts are frozen is not known here: counted as full fine-tuning".into(),
            );
        }
        if input.lora.is_none()
            && !context.freeze.is_empty()
            && !input
                .profile
                .is_some_and(|p| FREEZE_CHECKED.contains(&p.style))
        {
            why.push(
                "--freeze: frozen Linears skip their weight gradients (derived; checked against torch for the families with a training profile only)"
                    .into(),
            );
        }
        Ok(Counter {
            input,
            context,
            layout,
            t,
            lora: input.lora.is_some(),
            fused_sdpa,
            why,
        })
    }

    /// A `lora.Linear`'s two matmuls over the step's tokens: `lora_A` `2·T·n_in·r`, `lora_B`
    /// `2·T·r·n_out`.
    fn adapter_matmuls(&self, m: &Adapted) -> Result<(u128, u128), Overflow> {
        let (n_in, n_out, r) = (u128::from(m.n_in), u128::from(m.n_out), u128::from(m.rank));
        Ok((
            checked::product("2·T·n_in·rank", [2, self.t, n_in, r])?,
            checked::product("2·T·rank·n_out", [2, self.t, r, n_out])?,
        ))
    }

    fn note(&mut self, why: impl Into<String>) {
        let why = why.into();
        if !self.why.contains(&why) {
            self.why.push(why);
        }
    }

    fn style(&self) -> Option<LayerStyle> {
        self.input.profile.map(|p| p.style)
    }

    /// Is a base weight trained?
    fn trained(&self, kind: TensorKind) -> bool {
        !self.lora && !self.context.freeze.iter().any(|f| f.holds(kind))
    }

    fn norms_trained(&self) -> bool {
        !self.lora && !self.context.freeze.contains(&FreezePart::Norms)
    }

    fn embeddings_trained(&self) -> bool {
        !self.lora && !self.context.freeze.contains(&FreezePart::Embeddings)
    }

    /// The forward FLOPs of one copy of `t` in one layer: `2·T·rows·cols·active_copies`.
    fn linear_fwd(&self, t: &Tensor) -> Result<u128, Overflow> {
        checked::product(
            "2·T·rows·cols·active_copies",
            [
                2,
                self.t,
                u128::from(t.rows),
                u128::from(t.cols),
                u128::from(t.active_copies),
            ],
        )
    }

    /// The adapters of the plan on a layer kind.
    fn adapters_on(
        &mut self,
        stack: usize,
        role: StackRole,
        kind_index: usize,
        count: u128,
        first: bool,
    ) -> Vec<Adapter> {
        let Some(plan) = self.input.lora else {
            return Vec::new();
        };
        let Some(st) = self.input.spec.stacks.get(stack) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for m in &plan.modules {
            // Never run: no FLOPs (a decoder's cross-attention without an encoder).
            if m.stack != Some(role) || m.idle {
                continue;
            }
            let Some(r) = role_of_adapted(m) else {
                continue;
            };
            let covered = overlap(
                st.layers
                    .runs_of(kind_index)
                    .map(llmsize_core::spec::Run::range),
                &m.layer_runs,
            );
            if covered == 0 {
                continue;
            }
            if covered != count {
                self.note("an adapter on some layers of a layer kind: counted on all of them");
            }
            let wrapper = match (m.param_wrapper, m.copies > 1) {
                (false, _) => Wrapper::Linear,
                (true, true) => Wrapper::Experts,
                (true, false) => Wrapper::Router,
            };
            if plan.dora {
                self.note("DoRA's weight-norm FLOPs are not derived: counted as LoRA");
            }
            out.push(Adapter {
                kind: m.kind,
                role: r,
                wrapper,
                n_in: u128::from(m.n_in),
                n_out: u128::from(m.n_out),
                copies: u128::from(m.copies.max(1)),
                rank: u128::from(m.rank),
                in_layer0: first && m.layer_runs.iter().any(|x| x.contains(&0)),
            });
        }
        out
    }

    /// Every layer kind of every stack, with its linears, attention and adapters.
    fn kinds(&mut self) -> Result<Vec<Kind<'a>>, SpecError> {
        let spec = self.input.spec;
        let convention = self.input.forward.convention;
        let s = u128::from(self.input.forward.seq_len);
        let b = u128::from(self.input.forward.batch);
        let mut out = Vec::new();
        for (si, stack) in spec.stacks.iter().enumerate() {
            let encoder = stack.role == StackRole::Encoder;
            for (ki, (layer, count)) in stack.layers.kind_counts().into_iter().enumerate() {
                if count == 0 {
                    continue;
                }
                let first = si == 0
                    && stack
                        .layers
                        .runs()
                        .first()
                        .is_some_and(|r| r.kind == ki && r.start == 0);
                let mut lins = Vec::new();
                for t in &self.layout.tensors {
                    if t.place
                        != (Place::Layer {
                            stack: si,
                            kind: ki,
                        })
                        || !t.is_matrix()
                        || t.category.is_modality()
                        // Never run (a decoder's cross-attention without an encoder).
                        || t.idle
                    {
                        continue;
                    }
                    let Some(r) = role(t.kind) else { continue };
                    if t.name.cross {
                        self.note("cross-attention's backward is not derived");
                    }
                    lins.push(Lin {
                        kind: t.kind,
                        role: r,
                        n_in: t.cols,
                        n_out: t.rows,
                        fwd: self.linear_fwd(t)?,
                        merged: false,
                    });
                }
                let (mut scores, mut values) = (0u128, 0u128);
                let attentions = std::iter::once((&layer.attention, encoder))
                    .chain(layer.cross_attention.iter().map(|c| (c, true)));
                for (a, cross) in attentions {
                    let Some((qk, v)) = widths(a) else { continue };
                    let window = if cross { None } else { layer.sliding_window };
                    let p = llmsize_core::flops::pairs(s, window, convention, cross)?;
                    scores = checked::add(
                        "scores FLOPs",
                        scores,
                        checked::product("2·b·p·qk", [2, b, p, u128::from(qk)])?,
                    )?;
                    values = checked::add(
                        "values FLOPs",
                        values,
                        checked::product("2·b·p·v", [2, b, p, u128::from(v)])?,
                    )?;
                }
                let count = u128::from(count);
                let adapters = self.adapters_on(si, stack.role, ki, count, first);
                // ParamWrapper merges its adapters into the base weights it wraps.
                for a in &adapters {
                    if a.wrapper != Wrapper::Linear {
                        for l in &mut lins {
                            if same_module(l.kind, a.kind) {
                                l.merged = true;
                            }
                        }
                    }
                }
                out.push(Kind {
                    layer,
                    role: stack.role,
                    count,
                    first,
                    lins,
                    scores,
                    values,
                    adapters,
                });
            }
        }
        Ok(out)
    }

    /// The linears of `role` in one layer whose input requires grad iff `input`: forward,
    /// weight and input gradients; returns whether each output requires grad, per kind.
    fn group(
        &self,
        kind: &Kind<'_>,
        pass: &mut Pass,
        role: Role,
        input: bool,
        layer0: bool,
    ) -> Result<Vec<(TensorKind, bool)>, SpecError> {
        let mut outs = Vec::new();
        for l in kind.lins.iter().filter(|l| l.role == role) {
            pass.matmul = checked::add("matmul FLOPs", pass.matmul, l.fwd)?;
            let trained = self.trained(l.kind) || l.merged;
            if trained {
                pass.wgrad = checked::add("wgrad FLOPs", pass.wgrad, l.fwd)?;
            }
            if input {
                pass.igrad = checked::add("igrad FLOPs", pass.igrad, l.fwd)?;
            }
            outs.push((l.kind, trained || input));
        }
        for a in kind.adapters.iter().filter(|a| a.role == role) {
            if layer0 && !a.in_layer0 {
                continue;
            }
            let t = self.t;
            match a.wrapper {
                Wrapper::Linear => {
                    // lora_A(x): [T, n_in]·[n_in, r]; lora_B: [T, r]·[r, n_out].
                    let a_mm =
                        checked::product("2·T·n_in·rank·copies", [2, t, a.n_in, a.rank, a.copies])?;
                    let b_mm = checked::product(
                        "2·T·rank·n_out·copies",
                        [2, t, a.rank, a.n_out, a.copies],
                    )?;
                    pass.adapters_fwd =
                        checked::add("adapters fwd FLOPs", pass.adapters_fwd, a_mm)?;
                    pass.adapters_fwd =
                        checked::add("adapters fwd FLOPs", pass.adapters_fwd, b_mm)?;
                    // lora_B: weight and input gradients; lora_A: weight gradient, and the
                    // grad-input where its input requires grad.
                    pass.adapters_bwd = checked::add(
                        "adapters bwd FLOPs",
                        pass.adapters_bwd,
                        checked::product("2·b_mm", [2, b_mm])?,
                    )?;
                    pass.adapters_bwd =
                        checked::add("adapters bwd FLOPs", pass.adapters_bwd, a_mm)?;
                    if input {
                        pass.adapters_bwd =
                            checked::add("adapters bwd FLOPs", pass.adapters_bwd, a_mm)?;
                    }
                }
                Wrapper::Experts => {
                    // baddbmm(W, lhs [E, n_in, r], rhs [E, r, n_out]), built twice per
                    // forward; one of them is backpropagated (∂lhs, ∂rhs).
                    let delta = checked::product(
                        "2·copies·n_in·rank·n_out",
                        [2, a.copies, a.n_in, a.rank, a.n_out],
                    )?;
                    pass.wrapper_fwd = checked::add(
                        "wrapper fwd FLOPs",
                        pass.wrapper_fwd,
                        checked::product("2·delta", [2, delta])?,
                    )?;
                    pass.wrapper_bwd = checked::add(
                        "wrapper bwd FLOPs",
                        pass.wrapper_bwd,
                        checked::product("2·delta", [2, delta])?,
                    )?;
                }
                Wrapper::Router => {
                    // B·A once: [n_out, r]·[r, n_in]; its backward ∂A, ∂B.
                    let delta =
                        checked::product("2·n_out·rank·n_in", [2, a.n_out, a.rank, a.n_in])?;
                    pass.wrapper_fwd = checked::add("wrapper fwd FLOPs", pass.wrapper_fwd, delta)?;
                    pass.wrapper_bwd = checked::add(
                        "wrapper bwd FLOPs",
                        pass.wrapper_bwd,
                        checked::product("2·delta", [2, delta])?,
                    )?;
                }
            }
            outs.push((a.kind, true));
        }
        Ok(outs)
    }

    /// One layer of `kind` whose input requires grad iff `rg_in`.
    fn layer(&mut self, kind: &Kind<'_>, rg_in: bool, layer0: bool) -> Result<Pass, SpecError> {
        use TensorKind as K;
        let mut pass = Pass::default();
        let norms = self.norms_trained();
        let parallel = matches!(self.style(), Some(LayerStyle::GptNeox | LayerStyle::Falcon));
        // OLMo 2 normalises the blocks' outputs, not their inputs: q, k, v and the MLP read
        // the residual stream itself.
        let post_norm = self
            .input
            .profile
            .is_some_and(|p| p.block_norms == BlockNorms::Output);
        // Attention: the norm's output feeds q, k, v.
        let a_in = rg_in || (norms && !post_norm);
        let outs = self.group(kind, &mut pass, Role::AttnIn, a_in, layer0)?;
        let flag = |ks: &[K]| outs.iter().any(|(k, o)| *o && ks.contains(k));
        // A trained q/k norm (Qwen3, OLMo 2) makes q/k require grad on its own.
        let (q_norm, k_norm) = match &kind.layer.attention {
            Attention::Standard(a) => (a.q_norm.is_some(), a.k_norm.is_some()),
            _ => (false, false),
        };
        let q = flag(&[K::AttnQ, K::AttnQA, K::AttnQkv]) || (norms && q_norm);
        let k = flag(&[K::AttnK, K::AttnKvA, K::AttnKvB, K::AttnQkv]) || (norms && k_norm);
        let has_v = kind
            .lins
            .iter()
            .any(|l| matches!(l.kind, K::AttnV | K::AttnQkv | K::AttnKvB));
        let v = if has_v {
            flag(&[K::AttnV, K::AttnKvB, K::AttnQkv])
        } else {
            k
        };
        pass.attn = checked::add("attn FLOPs", pass.attn, kind.scores)?;
        pass.attn = checked::add("attn FLOPs", pass.attn, kind.values)?;
        if self.fused_sdpa {
            if q || k || v {
                pass.attn_bwd = checked::add(
                    "attn bwd FLOPs",
                    pass.attn_bwd,
                    checked::product("3·scores", [3, kind.scores])?,
                )?;
                pass.attn_bwd = checked::add(
                    "attn bwd FLOPs",
                    pass.attn_bwd,
                    checked::product("2·values", [2, kind.values])?,
                )?;
            }
        } else {
            // QKᵀ: ∂q, ∂k; P·V: ∂P (if q or k needs it), ∂v.
            for need in [q, k] {
                if need {
                    pass.attn_bwd = checked::add("attn bwd FLOPs", pass.attn_bwd, kind.scores)?;
                }
            }
            for need in [q || k, v] {
                if need {
                    pass.attn_bwd = checked::add("attn bwd FLOPs", pass.attn_bwd, kind.values)?;
                }
            }
        }
        let attn_rg = q || k || v;
        let o_rg = self
            .group(kind, &mut pass, Role::AttnOut, attn_rg, layer0)?
            .iter()
            .any(|(_, o)| *o);
        let other_rg = self
            .group(kind, &mut pass, Role::Other, a_in, layer0)?
            .iter()
            .any(|(_, o)| *o);
        // The residual adds the attention output (normalised, for OLMo 2).
        let h = rg_in || o_rg || other_rg || (post_norm && norms);
        // The MLP reads its norm of the residual (of the layer input, for a parallel layer).
        let mlp_in = if parallel {
            rg_in || norms
        } else {
            h || (norms && !post_norm)
        };
        let mid = self
            .group(kind, &mut pass, Role::MlpIn, mlp_in, layer0)?
            .iter()
            .any(|(_, o)| *o);
        let router = self
            .group(kind, &mut pass, Role::Router, mlp_in, layer0)?
            .iter()
            .any(|(_, o)| *o);
        let down = self
            .group(kind, &mut pass, Role::MlpOut, mid, layer0)?
            .iter()
            .any(|(_, o)| *o);
        pass.out_rg = h || down || router;
        pass.tail = self.tail(kind, layer0)?;
        Ok(pass)
    }

    /// What the checkpoint's recompute does not re-run in a layer of `kind`.
    fn tail(&mut self, kind: &Kind<'_>, layer0: bool) -> Result<u128, Overflow> {
        let Some(last) = self.last_linear(kind) else {
            return Ok(0);
        };
        let adapter = kind
            .adapters
            .iter()
            .find(|a| a.kind == last && a.wrapper == Wrapper::Linear && (!layer0 || a.in_layer0));
        match adapter {
            // Base and lora_A run; lora_B's pack is the last: its matmul is not run.
            Some(a) => checked::product(
                "2·T·rank·n_out·copies",
                [2, self.t, a.rank, a.n_out, a.copies],
            ),
            None => kind
                .lins
                .iter()
                .filter(|l| l.kind == last)
                .map(|l| l.fwd)
                .try_fold(0u128, |s, f| checked::add("down_proj FLOPs", s, f)),
        }
    }

    /// The Linear whose pack is a layer's last (its matmul is not re-run by the recompute):
    /// a dense MLP's down projection, or the shared expert's where the block adds it after
    /// the routed experts; `None` where a later op saves a tensor (a residual dropout, a norm
    /// after the MLP, the routed experts' weighting) and the whole layer is re-run.
    fn last_linear(&self, kind: &Kind<'_>) -> Option<TensorKind> {
        let whole_style = self.input.profile.is_some_and(|p| {
            p.block_norms.after() || p.post_norm || (p.hidden_dropout && !p.mlp_output_undropped)
        });
        if whole_style {
            return None;
        }
        match &kind.layer.ffn {
            Ffn::Dense(_) => Some(TensorKind::FfnDown),
            Ffn::Moe(m)
                if m.shared.is_some()
                    && !m.shared_gate
                    && self
                        .input
                        .profile
                        .is_some_and(|p| p.shared_expert == SharedExpertOrder::After) =>
            {
                Some(TensorKind::SharedDown)
            }
            Ffn::Moe(_) | Ffn::Absent => None,
        }
    }

    /// The tail's formula: symbols, then values.
    fn tail_symbols(&self, kind: &Kind<'_>) -> (String, String) {
        let t = self.t;
        let Some(last) = self.last_linear(kind) else {
            return ("tail".into(), String::new());
        };
        if let Some(a) = kind
            .adapters
            .iter()
            .find(|a| a.kind == last && a.wrapper == Wrapper::Linear)
        {
            return ("2·T·r·d".into(), format!("2·{t}·{}·{}", a.rank, a.n_out));
        }
        let sym = if last == TensorKind::SharedDown {
            "2·T·F_shared·d"
        } else {
            "2·T·F·d"
        };
        match kind.lins.iter().find(|l| l.kind == last) {
            Some(l) => (sym.into(), format!("2·{t}·{}·{}", l.n_in, l.n_out)),
            None => ("tail".into(), String::new()),
        }
    }

    /// Flags what the derivation does not cover.
    fn check_coverage(&mut self, kinds: &[Kind<'_>]) {
        let spec = self.input.spec;
        // A decoder built for cross-attention runs as a plain decoder without an encoder
        // (`BartForCausalLM`): its cross-attention is idle, or typed and noted below.
        if spec.stacks.len() > 1
            || spec
                .stacks
                .iter()
                .any(|s| !matches!(s.role, StackRole::Decoder | StackRole::CrossDecoder))
        {
            self.note("encoder stacks' training step is not derived");
        }
        for k in kinds {
            match &k.layer.attention {
                Attention::Standard(_) => {}
                Attention::Latent(_) => self.note("latent attention's backward is not derived"),
                Attention::CacheOnly(_) | Attention::Absent => {
                    self.note("a layer without its own attention is not derived");
                }
            }
            // Idle extras (a decoder's cross-attention without an encoder) never run.
            if k.layer.extras.iter().any(|e| !e.idle) {
                self.note("a layer's extra tensors (a state-space mixer, …) are not derived");
            }
            if let Ffn::Moe(m) = &k.layer.ffn {
                let read = self
                    .input
                    .profile
                    .is_some_and(|p| p.shared_expert != SharedExpertOrder::Unread);
                if (m.shared.is_some() || m.shared_gate) && !read {
                    self.note("shared experts' recompute and backward are not derived");
                }
                if !m.router {
                    self.note("a router network's recompute and backward are not derived");
                }
            }
            if matches!(k.layer.ffn, Ffn::Absent) {
                self.note("a layer without an MLP is not derived");
            }
            if k.role == StackRole::Encoder {
                self.note("encoder stacks' training step is not derived");
            }
        }
    }

    /// Outside the layers: the head (and its grad-input), OPT's projections, extras.
    fn outside(&mut self, rg_final: bool, checkpointing: bool) -> Result<Pass, SpecError> {
        use TensorKind as K;
        let mut pass = Pass::default();
        for t in &self.layout.tensors {
            if matches!(t.place, Place::Layer { .. }) || t.is_vector() || t.category.is_modality() {
                continue;
            }
            let fwd = checked::product(
                "2·T·rows·cols·active_copies·layers",
                [
                    2,
                    self.t,
                    u128::from(t.rows),
                    u128::from(t.cols),
                    u128::from(t.active_copies),
                    u128::from(t.layers),
                ],
            )?;
            let (trained, input) = match t.kind {
                K::Output => (self.trained(K::Output), rg_final),
                K::EmbeddingProjection if t.name.local == "project_in" => {
                    (!self.lora, self.embeddings_trained() || checkpointing)
                }
                // OPT's `project_out`, and the MLM head's transform (BERT's
                // `cls.predictions.transform.dense`): Linears on the last layer's output,
                // trained with the base.
                K::EmbeddingProjection | K::HeadTransform => (!self.lora, rg_final),
                K::Pooler | K::Matrix => {
                    self.note("heads and extras outside the layers are counted 3×");
                    (!self.lora, true)
                }
                _ => continue,
            };
            pass.matmul = checked::add("matmul FLOPs", pass.matmul, fwd)?;
            if trained {
                pass.wgrad = checked::add("wgrad FLOPs", pass.wgrad, fwd)?;
            }
            if input {
                pass.igrad = checked::add("igrad FLOPs", pass.igrad, fwd)?;
            }
            if let Some(plan) = self.input.lora {
                for m in plan
                    .modules
                    .iter()
                    .filter(|m| m.kind == t.kind && m.stack.is_none())
                {
                    if m.param_wrapper || t.kind != K::HeadTransform {
                        self.note("adapters outside the layers are not counted");
                        continue;
                    }
                    // The MLM head transform's `lora.Linear` (all-linear reaches it): as a
                    // layer's adapter, its input (the last layer's output) requiring grad.
                    let (a_mm, b_mm) = self.adapter_matmuls(m)?;
                    pass.adapters_fwd =
                        checked::add("adapters fwd FLOPs", pass.adapters_fwd, a_mm)?;
                    pass.adapters_fwd =
                        checked::add("adapters fwd FLOPs", pass.adapters_fwd, b_mm)?;
                    let both = checked::add("a_mm + b_mm", a_mm, b_mm)?;
                    let bwd = checked::product("2·(a_mm + b_mm)", [2, both])?;
                    pass.adapters_bwd = checked::add("adapters bwd FLOPs", pass.adapters_bwd, bwd)?;
                }
            }
        }
        if let OutputHead::Lm { tied: true, .. } = self.input.spec.head
            && let Some(e) = self.input.spec.token_embedding
        {
            // The tied head multiplies by the token table (a trained weight iff the
            // embeddings are).
            let fwd = checked::product(
                "2·T·rows·dim",
                [2, self.t, u128::from(e.rows), u128::from(e.dim)],
            )?;
            pass.matmul = checked::add("matmul FLOPs", pass.matmul, fwd)?;
            if self.embeddings_trained() {
                pass.wgrad = checked::add("wgrad FLOPs", pass.wgrad, fwd)?;
            }
            if rg_final {
                pass.igrad = checked::add("igrad FLOPs", pass.igrad, fwd)?;
            }
        }
        Ok(pass)
    }

    fn count(mut self) -> Result<StepFlops, SpecError> {
        let kinds = self.kinds()?;
        self.check_coverage(&kinds);
        let ckpt = self.input.checkpointing;
        // Layer 0's input requires grad when the embeddings are trained (or OPT's project_in,
        // BLOOM's embedding norm), and with checkpointing (`enable_input_require_grads`).
        let spec = self.input.spec;
        let rg0 = ckpt
            || self.embeddings_trained()
            || (!self.lora && !spec.embedding_projections.is_empty())
            || (self.norms_trained() && spec.stacks.iter().any(|s| s.embedding_norm.is_some()));
        // Layer 0 first: its output decides whether the later layers' inputs require grad.
        let mut first: Option<(usize, Pass)> = None;
        for (i, k) in kinds.iter().enumerate() {
            if k.first {
                first = Some((i, self.layer(k, rg0, true)?));
            }
        }
        let rg_rest = first.map_or(rg0, |(_, p)| p.out_rg || rg0);
        let mut total = Pass::default();
        let mut per_kind: Vec<(u128, Pass)> = Vec::new();
        let mut rg_final = rg_rest;
        for (i, k) in kinds.iter().enumerate() {
            // The first kind holds layer 0: its count is at least 1.
            let rest = if k.first {
                k.count.saturating_sub(1)
            } else {
                k.count
            };
            let pass = self.layer(k, rg_rest, false)?;
            rg_final = rg_final || pass.out_rg;
            if rest > 0 {
                accumulate(&mut total, &pass, rest)?;
            }
            let layer0 = first.filter(|(j, _)| *j == i).map(|(_, p)| p);
            if let Some(p0) = layer0 {
                accumulate(&mut total, &p0, 1)?;
            }
            per_kind.push((k.count, pass));
        }
        let outside = self.outside(rg_final, ckpt)?;
        accumulate(&mut total, &outside, 1)?;

        // The recompute: every layer's forward but its tail.
        let mut recompute = 0u128;
        if ckpt {
            for (k, (count, pass)) in kinds.iter().zip(&per_kind) {
                let mut r = checked::product("count·recompute", [*count, pass.recompute()?])?;
                if k.first
                    && let Some((_, p0)) = first
                {
                    // Layer 0 recomputes what its own pass computes (with adapters of
                    // layer 0 only).
                    r = (Checked::new(r) - pass.recompute()? + p0.recompute()?)
                        .get("L·recompute − recompute + layer 0's recompute")?;
                }
                recompute = checked::add("recompute FLOPs", recompute, r)?;
            }
        }

        let forward = total.forward()?;
        // Cross-check against the forward report: the same matmuls and attention.
        let reported = self.input.forward.forward_flops;
        let base_forward = checked::add("M + S", total.matmul, total.attn)?;
        let mut backward = total.backward()?;
        let mut forward_total = forward;
        if base_forward != reported {
            self.note(format!(
                "the layers counted here ({}) differ from the forward count ({}): the difference is counted 3×",
                n(base_forward),
                n(reported)
            ));
            if let Some(extra) = reported.checked_sub(base_forward) {
                forward_total = checked::add("forward total FLOPs", forward_total, extra)?;
                backward = checked::add(
                    "backward FLOPs",
                    backward,
                    checked::product("2·extra", [2, extra])?,
                )?;
            }
        }
        let train_step = checked::sum(
            "forward + backward + recompute",
            [forward_total, backward, recompute],
        )?;
        let terms = self.terms(
            &kinds,
            &per_kind,
            &total,
            forward_total,
            backward,
            recompute,
        );
        Ok(StepFlops {
            forward: forward_total,
            backward,
            recompute,
            train_step,
            terms,
            exact: self.why.is_empty(),
        })
    }

    fn terms(
        &self,
        kinds: &[Kind<'_>],
        per_kind: &[(u128, Pass)],
        total: &Pass,
        forward: u128,
        backward: u128,
        recompute: u128,
    ) -> Vec<Term> {
        let mut terms = Vec::new();
        // saturates: never, both are parts of `forward`, a checked sum; and `other` is what
        // `forward` holds beyond its parts, never floored.
        let adapters_fwd = total.adapters_fwd.saturating_add(total.wrapper_fwd);
        let other = forward
            .saturating_sub(total.matmul)
            .saturating_sub(total.attn)
            .saturating_sub(adapters_fwd);
        let mut f = String::from("M + S");
        let mut v = format!("{} + {}", n(total.matmul), n(total.attn));
        if adapters_fwd > 0 {
            f.push_str(" + A");
            let _ = write!(v, " + {}", n(adapters_fwd));
        }
        if other > 0 {
            f.push_str(" + X");
            let _ = write!(v, " + {}", n(other));
        }
        let attention = if self.fused_sdpa {
            "SDPA"
        } else if self.input.attn == AttnImpl::Sdpa {
            "SDPA's math path (CPU, attention dropout)"
        } else {
            "eager attention"
        };
        terms.push(Term::new(
            "forward",
            format!(
                "forward: linear layers M (2·T·n_in·n_out each, lm_head included), attention S ({attention}: scores + values){}",
                if adapters_fwd > 0 {
                    ", adapters A (2·T·r·(n_in + n_out) each; peft's merged expert weights W + B·A)"
                } else {
                    ""
                }
            ),
            format!("{f} = {v}"),
            forward,
        ));
        let full_ft = !self.lora && self.context.freeze.is_empty() && other == 0;
        let same_widths = kinds.iter().all(|k| k.scores == k.values);
        let (bf, bv) = if full_ft && self.fused_sdpa && same_widths {
            (
                "2·M + 2.5·S".to_owned(),
                format!("2·{} + 2.5·{}", n(total.matmul), n(total.attn)),
            )
        } else if full_ft && !self.fused_sdpa {
            (
                "2·M + 2·S".to_owned(),
                format!("2·{} + 2·{}", n(total.matmul), n(total.attn)),
            )
        } else {
            let mut f = String::from("W + I + S_b");
            let mut v = format!(
                "{} + {} + {}",
                n(total.wgrad),
                n(total.igrad),
                n(total.attn_bwd)
            );
            // saturates: never, both are parts of `backward`, a checked sum.
            let ab = total.adapters_bwd.saturating_add(total.wrapper_bwd);
            if ab > 0 {
                f.push_str(" + A_b");
                let _ = write!(v, " + {}", n(ab));
            }
            if other > 0 {
                f.push_str(" + 2·X");
                let _ = write!(v, " + 2·{}", n(other));
            }
            (f, v)
        };
        terms.push(Term::new(
            "backward",
            if full_ft {
                format!(
                    "backward: every matmul's weight and input gradients (2× its forward); {}",
                    if self.fused_sdpa {
                        "the SDPA backward recomputes QKᵀ: 3·scores + 2·values"
                    } else {
                        "each attention bmm's two input gradients"
                    }
                )
            } else {
                "backward: weight gradients W (trained weights only), grad-inputs I (where the input requires grad: not layer 0's q/k/v on a frozen embedding), attention S_b, adapters A_b".to_owned()
            },
            format!("{bf} = {bv}"),
            backward,
        ));
        if self.input.checkpointing {
            let mut f = Vec::new();
            let mut v = Vec::new();
            for (k, (count, pass)) in kinds.iter().zip(per_kind) {
                let mut fs = String::from("M_l + S_l");
                let mut vs = format!("{} + {}", n(pass.matmul), n(pass.attn));
                // saturates: never, both are parts of the pass's forward, a checked sum.
                let a = pass.adapters_fwd.saturating_add(pass.wrapper_fwd);
                if a > 0 {
                    fs.push_str(" + A_l");
                    let _ = write!(vs, " + {}", n(a));
                }
                if pass.tail > 0 {
                    let (sym, val) = self.tail_symbols(k);
                    let _ = write!(fs, " − {sym}");
                    let _ = write!(vs, " − {val}");
                }
                f.push(format!("{count}·({fs})"));
                v.push(format!("{count}·({vs})"));
            }
            let skip = per_kind.iter().any(|(_, p)| p.tail > 0);
            terms.push(Term::new(
                "recompute",
                if skip {
                    "recompute: each checkpointed layer's forward up to its last saved tensor — the last Linear (down_proj, the shared expert's down_proj where it is added after the routed experts, or its adapter's lora_B) is not re-run"
                } else {
                    "recompute: each checkpointed layer's whole forward (its last op saves a tensor: a dropout, a post-norm or the routing weights' product)"
                },
                format!("{} = {}", f.join(" + "), v.join(" + ")),
                recompute,
            ));
        }
        terms
    }
}

/// Add `count` layers of `pass` into `total`.
fn accumulate(total: &mut Pass, pass: &Pass, count: u128) -> Result<(), SpecError> {
    for (t, p) in [
        (&mut total.matmul, pass.matmul),
        (&mut total.attn, pass.attn),
        (&mut total.adapters_fwd, pass.adapters_fwd),
        (&mut total.wrapper_fwd, pass.wrapper_fwd),
        (&mut total.wgrad, pass.wgrad),
        (&mut total.igrad, pass.igrad),
        (&mut total.adapters_bwd, pass.adapters_bwd),
        (&mut total.wrapper_bwd, pass.wrapper_bwd),
        (&mut total.attn_bwd, pass.attn_bwd),
    ] {
        *t = (Checked::new(*t) + Checked::new(p) * count).get("FLOPs of the layers")?;
    }
    Ok(())
}

/// The role of an adapted module.
fn role_of_adapted(m: &Adapted) -> Option<Role> {
    role(m.kind)
}

/// Two tensor kinds are one peft module (`experts.gate_up_proj` holds gate and up).
fn same_module(a: TensorKind, b: TensorKind) -> bool {
    use TensorKind as K;
    let group = |k| match k {
        K::ExpertGate | K::ExpertUp => 1,
        K::FfnGate | K::FfnUp => 2,
        _ => 0,
    };
    a == b || (group(a) != 0 && group(a) == group(b))
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::indexing_slicing,
        reason = "a test fails loudly on what it did not expect"
    )]

    use super::*;
    use llmsize_core::design::{Design, Style, design_spec};
    use llmsize_core::facts::LLAMA_MODULES;
    use llmsize_core::flops::AttentionConvention;
    use llmsize_core::flops::flops;
    use llmsize_core::spec::{Layers, Mlp, Moe};

    fn profile(
        style: LayerStyle,
        attention_dropout: bool,
        hidden_dropout: bool,
    ) -> TrainingProfile {
        TrainingProfile {
            attention_dropout,
            hidden_dropout,
            embedding_dropout: hidden_dropout,
            ..TrainingProfile::plain(style, LLAMA_MODULES)
        }
    }

    /// Llama-2-7B (d 4096, L 32, V 32000, F 11008, 32 heads), as `config.json` reads.
    fn llama2() -> ModelSpec {
        let mut spec = design_spec(
            &Design {
                hidden: 4096,
                layers: 32,
                vocab: Some(32_000),
                ..Design::default()
            },
            Style::Llama,
        )
        .unwrap();
        spec.training = Some(profile(LayerStyle::Llama, false, false));
        spec
    }

    /// GPT-2 small (d 768, L 12, V 50257, tied head, dropouts 0.1).
    fn gpt2() -> ModelSpec {
        let mut spec = design_spec(
            &Design {
                hidden: 768,
                layers: 12,
                vocab: Some(50_257),
                ctx: Some(1024),
                ..Design::default()
            },
            Style::Gpt,
        )
        .unwrap();
        spec.training = Some(profile(LayerStyle::Gpt2, true, true));
        spec
    }

    /// Mixtral-8x7B: llama attention with 8 kv heads, 8 experts of width 14336, top-2.
    fn mixtral() -> ModelSpec {
        let mut spec = design_spec(
            &Design {
                hidden: 4096,
                layers: 32,
                vocab: Some(32_000),
                kv_heads: Some(8),
                ffn: Some(14_336),
                ..Design::default()
            },
            Style::Llama,
        )
        .unwrap();
        let mut layer = spec.stacks[0].layers.kinds()[0].clone();
        layer.ffn = Ffn::Moe(Moe {
            num_experts: 8,
            experts_per_token: 2,
            expert: Mlp {
                hidden: 4096,
                intermediate: 14_336,
                gated: true,
                up_bias: false,
                down_bias: false,
            },
            router_bias: llmsize_core::spec::RouterBias::None,
            router: true,
            shared: None,
            shared_gate: false,
        });
        spec.stacks[0].layers = Layers::repeat(layer, 32);
        spec.training = Some(profile(LayerStyle::Llama, false, false));
        spec
    }

    struct Case<'a> {
        spec: &'a ModelSpec,
        seq: u64,
        batch: u64,
        attn: AttnImpl,
        checkpointing: bool,
        lora: Option<&'a LoraPlan>,
        convention: AttentionConvention,
        context: StepContext<'a>,
    }

    impl<'a> Case<'a> {
        fn new(spec: &'a ModelSpec, seq: u64) -> Self {
            Case {
                spec,
                seq,
                batch: 1,
                attn: AttnImpl::Sdpa,
                checkpointing: false,
                lora: None,
                convention: AttentionConvention::Full,
                context: StepContext::default(),
            }
        }

        fn run(&self) -> StepFlops {
            let fwd = flops(self.spec, self.seq, self.batch, self.convention).unwrap();
            step_flops_in(
                &StepInput {
                    spec: self.spec,
                    profile: self.spec.training.as_ref(),
                    forward: &fwd,
                    attn: self.attn,
                    checkpointing: self.checkpointing,
                    lora: self.lora,
                    frozen_base: self.lora.is_some() || !self.context.freeze.is_empty(),
                },
                &self.context,
            )
            .unwrap()
        }

        fn train(&self) -> u128 {
            let r = self.run();
            assert_eq!(r.train_step, r.forward + r.backward + r.recompute);
            assert_eq!(
                r.terms.iter().map(|t| t.value).sum::<u128>(),
                r.train_step,
                "the terms add up to the step"
            );
            r.train_step
        }
    }

    /// An adapter on every layer of the (single-kind) stack.
    fn adapted(
        name: &str,
        kind: TensorKind,
        layers: u64,
        shape: (u64, u64, u64),
        rank: u64,
    ) -> Adapted {
        let (n_in, n_out, copies) = shape;
        Adapted {
            name: name.into(),
            kind,
            stack: Some(StackRole::Decoder),
            layer_runs: std::iter::once(0..layers).collect(),
            layers,
            n_in,
            n_out,
            copies,
            rank,
            param_wrapper: copies > 1 || kind == TensorKind::Router,
            factors: vec![(rank * copies, n_in), (n_out, rank * copies)],
            params: rank * copies * (n_in + n_out),
            tensors: 2,
            idle: false,
            gradless: false,
        }
    }

    fn plan(rank: u64, modules: Vec<Adapted>) -> LoraPlan {
        LoraPlan {
            rank,
            dropout: false,
            dora: false,
            trainable: modules.iter().map(|m| m.params * m.layers).sum(),
            tensors: modules.iter().map(|m| m.tensors * m.layers).sum(),
            resolved: modules.iter().map(|m| m.name.clone()).collect(),
            modules,
        }
    }

    fn llama_all_linear(d: u64, kv: u64, f: u64, layers: u64, r: u64) -> LoraPlan {
        use TensorKind as K;
        plan(
            r,
            vec![
                adapted("q_proj", K::AttnQ, layers, (d, d, 1), r),
                adapted("k_proj", K::AttnK, layers, (d, kv, 1), r),
                adapted("v_proj", K::AttnV, layers, (d, kv, 1), r),
                adapted("o_proj", K::AttnOutput, layers, (d, d, 1), r),
                adapted("gate_proj", K::FfnGate, layers, (d, f, 1), r),
                adapted("up_proj", K::FfnUp, layers, (d, f, 1), r),
                adapted("down_proj", K::FfnDown, layers, (f, d, 1), r),
            ],
        )
    }

    fn llama_qv(d: u64, kv: u64, layers: u64, r: u64) -> LoraPlan {
        use TensorKind as K;
        plan(
            r,
            vec![
                adapted("q_proj", K::AttnQ, layers, (d, d, 1), r),
                adapted("v_proj", K::AttnV, layers, (d, kv, 1), r),
            ],
        )
    }

    #[test]
    fn llama2_full_fine_tuning_is_torchs_count() {
        // train.json, Llama-2-7b-hf, train_step_flops / runs[].flops (bf16, --attention full).
        let spec = llama2();
        let mut c = Case::new(&spec, 512);
        assert_eq!(c.train(), 20_777_978_036_224);
        c.checkpointing = true;
        assert_eq!(c.train(), 26_069_377_744_896);
        assert!(c.run().exact);
        c.attn = AttnImpl::Eager;
        assert_eq!(c.train(), 26_000_658_268_160);
        c.checkpointing = false;
        assert_eq!(c.train(), 20_709_258_559_488);
        let mut c = Case::new(&spec, 2048);
        assert_eq!(c.train(), 88_884_348_190_720);
        c.checkpointing = true;
        assert_eq!(c.train(), 111_699_214_467_072);
        let mut c = Case::new(&spec, 512);
        c.batch = 4;
        assert_eq!(c.train(), 83_111_912_144_896);
    }

    #[test]
    fn the_recompute_skips_down_proj_exactly() {
        // README: Llama-2-7B at 512, recompute = layer forward − 2·T·F·d per layer.
        let spec = llama2();
        let mut c = Case::new(&spec, 512);
        c.checkpointing = true;
        let r = c.run();
        let layer_fwd = (r.forward - 2 * 512 * 4096 * 32_000) / 32;
        assert_eq!(r.recompute, 32 * (layer_fwd - 2 * 512 * 11_008 * 4096));
        let explain = &r.terms.last().unwrap().formula;
        assert!(
            explain.contains("2·T·F·d") && explain.contains("2·512·11008·4096"),
            "{explain}"
        );
    }

    #[test]
    fn gpt2_recomputes_whole_layers_and_runs_sdpa_as_bmm_on_cpu() {
        // train.json, gpt2 at 512: 3.0× (attention dropout: the CPU math path), ckpt 3.71×.
        let spec = gpt2();
        let mut c = Case::new(&spec, 512);
        assert_eq!(c.train(), 408_481_431_552);
        c.checkpointing = true;
        assert_eq!(c.train(), 505_118_195_712);
        // runs[] batch 4: 1,633,925,726,208.
        c.checkpointing = false;
        c.batch = 4;
        assert_eq!(c.train(), 1_633_925_726_208);
        // On CUDA SDPA keeps its fused kernel with dropout: 0.5·S more than the math path.
        c.batch = 1;
        c.context.device = Device::Cuda;
        let s = 12 * 4 * 512 * 512 * 768;
        assert_eq!(c.train(), 408_481_431_552 + s / 2);
    }

    #[test]
    fn mixtral_counts_the_experts_grouped_matmuls() {
        // train.json, Mixtral-8x7B-v0.1, train_step_flops (experts_counted).
        let spec = mixtral();
        let mut c = Case::new(&spec, 512);
        assert_eq!(c.train(), 39_644_695_625_728);
        c.checkpointing = true;
        assert_eq!(c.train(), 52_702_469_947_392);
        let mut c = Case::new(&spec, 2048);
        assert_eq!(c.train(), 164_351_218_548_736);
        c.checkpointing = true;
        assert_eq!(c.train(), 218_231_583_277_056);
    }

    #[test]
    fn lora_on_llama2_is_formulas_py() {
        // train.json lora_runs, Llama-2-7b-hf (= formulas.py lora_flops).
        let spec = llama2();
        let all = llama_all_linear(4096, 4096, 11_008, 32, 16);
        let qv = llama_qv(4096, 4096, 32, 8);
        for (p, seq, want, want_ckpt) in [
            (&all, 512, 14_083_399_090_176u128, 20_942_797_406_208u128),
            (&all, 2048, 62_106_032_406_528, 91_192_893_112_320),
            (&qv, 512, 13_973_608_988_672, 19_320_910_381_056),
            (&qv, 2048, 61_666_872_000_512, 84_705_345_011_712),
        ] {
            let mut c = Case::new(&spec, seq);
            c.lora = Some(p);
            assert_eq!(c.train(), want, "{} at {seq}", p.resolved.join(","));
            c.checkpointing = true;
            assert_eq!(
                c.train(),
                want_ckpt,
                "{} at {seq}, ckpt",
                p.resolved.join(",")
            );
            assert!(c.run().exact);
        }
        // The forward of r16 all-linear at 512: 6,944,022,593,536.
        let mut c = Case::new(&spec, 512);
        c.lora = Some(&all);
        assert_eq!(c.run().forward, 6_944_022_593_536);
    }

    #[test]
    fn lora_on_gpt2_fused_c_attn() {
        // train.json lora_runs, gpt2 at 512: r8 c_attn and r16 all-linear (c_attn, c_proj ×2, c_fc).
        use TensorKind as K;
        let spec = gpt2();
        let qv = plan(
            8,
            vec![adapted("c_attn", K::AttnQkv, 12, (768, 2304, 1), 8)],
        );
        let all = plan(
            16,
            vec![
                adapted("c_attn", K::AttnQkv, 12, (768, 2304, 1), 16),
                adapted("c_proj", K::AttnOutput, 12, (768, 768, 1), 16),
                adapted("c_fc", K::FfnUp, 12, (768, 3072, 1), 16),
                adapted("c_proj", K::FfnDown, 12, (3072, 768, 1), 16),
            ],
        );
        for (p, want, want_ckpt) in [
            (&qv, 281_072_369_664u128, 379_829_354_496u128),
            (&all, 287_407_865_856, 388_285_071_360),
        ] {
            let mut c = Case::new(&spec, 512);
            c.lora = Some(p);
            assert_eq!(c.train(), want);
            c.checkpointing = true;
            assert_eq!(c.train(), want_ckpt);
        }
    }

    #[test]
    fn lora_on_mixtral_wraps_the_experts() {
        // train.json lora_runs, Mixtral-8x7B-v0.1 at 512 (experts counted): peft's all-linear
        // adapts q/k/v/o, the router (ParamWrapper on `gate.weight`) and the experts
        // (gate_up at rank 2r: transformers 5 fused w1 and w3).
        use TensorKind as K;
        let spec = mixtral();
        let (d, f, e) = (4096, 14_336, 8);
        let all = plan(
            16,
            vec![
                adapted("q_proj", K::AttnQ, 32, (d, d, 1), 16),
                adapted("k_proj", K::AttnK, 32, (d, 1024, 1), 16),
                adapted("v_proj", K::AttnV, 32, (d, 1024, 1), 16),
                adapted("o_proj", K::AttnOutput, 32, (d, d, 1), 16),
                adapted("gate", K::Router, 32, (d, e, 1), 16),
                adapted("experts.gate_up_proj", K::ExpertGate, 32, (d, 2 * f, e), 32),
                adapted("experts.down_proj", K::ExpertDown, 32, (f, d, e), 16),
            ],
        );
        assert_eq!(all.trainable, 359_665_664, "peft's count");
        let qv = llama_qv(d, 1024, 32, 8);
        for (p, want, want_ckpt) in [
            (&all, 47_772_820_570_112u128, 65_680_921_591_808u128),
            (&qv, 26_574_774_599_680, 39_661_875_494_912),
        ] {
            let mut c = Case::new(&spec, 512);
            c.lora = Some(p);
            assert_eq!(c.train(), want);
            c.checkpointing = true;
            assert_eq!(c.train(), want_ckpt);
        }
        let mut c = Case::new(&spec, 512);
        c.lora = Some(&all);
        assert_eq!(c.run().forward, 18_016_347_619_328);
    }

    #[test]
    fn causal_convention_charges_sdpa_on_the_triangle() {
        // 3·M + 3.5·S with S over s(s+1)/2 pairs: Llama-2-7B at 512.
        let spec = llama2();
        let mut c = Case::new(&spec, 512);
        c.convention = AttentionConvention::Causal;
        let m: u128 = 2 * 512 * (32 * (4 * 4096 * 4096 + 3 * 4096 * 11_008) + 4096 * 32_000);
        let s: u128 = 32 * 2 * 2 * (512 * 513 / 2) * 4096;
        assert_eq!(c.train(), 3 * m + 3 * s + s / 2);
    }

    #[test]
    fn freezing_drops_weight_gradients() {
        let spec = llama2();
        let freeze = [FreezePart::Attention, FreezePart::Embeddings];
        let mut c = Case::new(&spec, 512);
        c.context.freeze = &freeze;
        let r = c.run();
        assert!(r.exact, "checked on a small llama");
        // Without the context, `frozen_base` alone does not say what is frozen.
        let fwd = flops(&spec, 512, 1, AttentionConvention::Full).unwrap();
        let blind = step_flops(&StepInput {
            spec: &spec,
            profile: spec.training.as_ref(),
            forward: &fwd,
            attn: AttnImpl::Sdpa,
            checkpointing: false,
            lora: None,
            frozen_base: true,
        })
        .unwrap();
        assert!(!blind.exact);
        assert_eq!(blind.train_step, 20_777_978_036_224);
        // Frozen attention projections lose their weight gradients, and layer 0's q/k/v
        // still get grad-inputs (the input norm's weight is trained).
        let attn: u128 = 2 * 512 * 4 * 4096 * 4096;
        assert_eq!(r.train_step, 20_777_978_036_224 - 32 * attn);
    }

    #[test]
    fn a_million_layers_cost_no_loop_and_huge_shapes_error() {
        let mut spec = design_spec(
            &Design {
                hidden: 4096,
                layers: 1_000_000,
                vocab: Some(32_000),
                ..Design::default()
            },
            Style::Llama,
        )
        .unwrap();
        spec.training = Some(profile(LayerStyle::Llama, false, false));
        let mut c = Case::new(&spec, 4096);
        c.checkpointing = true;
        assert!(c.train() > 0);
        // A hostile width overflows u128 somewhere: an error, never a panic.
        let fwd = flops(&spec, 4096, 1, AttentionConvention::Full).unwrap();
        let mut huge = fwd.clone();
        huge.batch = u64::MAX;
        huge.seq_len = u64::MAX;
        let r = step_flops(&StepInput {
            spec: &spec,
            profile: spec.training.as_ref(),
            forward: &huge,
            attn: AttnImpl::Sdpa,
            checkpointing: true,
            lora: None,
            frozen_base: false,
        });
        let Err(SpecError::Overflow(e)) = r else {
            panic!("{r:?}")
        };
        // T = b·s = (2^64 − 1)² fits u128; 2·T does not.
        assert_eq!(
            e.to_string(),
            "`2·T·rows·cols·active_copies` overflows 128 bits (with values: 2 · 340282366920938463426481119284349108225)"
        );
    }

    #[test]
    fn a_model_without_a_profile_is_an_estimate() {
        let mut spec = llama2();
        spec.training = None;
        let r = Case::new(&spec, 512).run();
        assert!(!r.exact);
        assert_eq!(r.train_step, 20_777_978_036_224);
    }

    /// Freeze cases measured with the oracle's method (`FakeTensorMode`, `FlopCounterMode`, one
    /// step of `model(input_ids, labels).loss.backward()`, bf16, SDPA, 16 tokens) on the
    /// truth's config scaled by `train_oracle.scale_raw` (d 64, 2 layers, 4 heads, V 256), the
    /// parts' parameters set `requires_grad_(False)`.
    type FreezeCase = (&'static [FreezePart], bool, u128);

    fn check_freeze(spec: &ModelSpec, cases: &[FreezeCase]) {
        for &(freeze, checkpointing, want) in cases {
            let mut c = Case::new(spec, 16);
            c.checkpointing = checkpointing;
            c.context.freeze = freeze;
            assert_eq!(c.train(), want, "{freeze:?}, checkpointing {checkpointing}");
        }
    }

    fn small(style: Style, ffn: u64) -> ModelSpec {
        design_spec(
            &Design {
                hidden: 64,
                layers: 2,
                vocab: Some(256),
                heads: Some(4),
                kv_heads: Some(if style == Style::Llama { 2 } else { 4 }),
                ffn: Some(ffn),
                ctx: Some(1024),
            },
            style,
        )
        .unwrap()
    }

    #[test]
    fn freezing_matches_torch_on_a_small_llama() {
        // Llama-2 scaled: 2 kv heads, F 128.
        let mut spec = small(Style::Llama, 128);
        spec.training = Some(profile(LayerStyle::Llama, false, false));
        check_freeze(
            &spec,
            &[
                (&[][..], false, 9_109_504u128),
                (&[][..], true, 11_075_584u128),
                (&[FreezePart::Embeddings][..], false, 9_109_504u128),
                (&[FreezePart::Embeddings][..], true, 11_075_584u128),
                (&[FreezePart::Attention][..], false, 8_323_072u128),
                (&[FreezePart::Attention][..], true, 10_289_152u128),
                (&[FreezePart::Mlp][..], false, 7_536_640u128),
                (&[FreezePart::Mlp][..], true, 9_502_720u128),
                (&[FreezePart::Norms][..], false, 9_109_504u128),
                (&[FreezePart::Norms][..], true, 11_075_584u128),
                (&[FreezePart::Head][..], false, 8_585_216u128),
                (&[FreezePart::Head][..], true, 10_551_296u128),
                (
                    &[FreezePart::Attention, FreezePart::Embeddings][..],
                    false,
                    8_323_072u128,
                ),
                (
                    &[FreezePart::Attention, FreezePart::Embeddings][..],
                    true,
                    10_289_152u128,
                ),
                (
                    &[FreezePart::Embeddings, FreezePart::Norms][..],
                    false,
                    8_847_360u128,
                ),
                (
                    &[FreezePart::Embeddings, FreezePart::Norms][..],
                    true,
                    11_075_584u128,
                ),
                (
                    &[FreezePart::Mlp, FreezePart::Head][..],
                    false,
                    7_012_352u128,
                ),
                (
                    &[FreezePart::Mlp, FreezePart::Head][..],
                    true,
                    8_978_432u128,
                ),
                (
                    &[
                        FreezePart::Embeddings,
                        FreezePart::Attention,
                        FreezePart::Norms,
                    ][..],
                    false,
                    7_241_728u128,
                ),
                (
                    &[
                        FreezePart::Embeddings,
                        FreezePart::Attention,
                        FreezePart::Norms,
                    ][..],
                    true,
                    10_289_152u128,
                ),
            ],
        );
    }

    #[test]
    fn freezing_matches_torch_on_a_small_gpt2() {
        // GPT-2 scaled: F 4d = 256, tied head (freezing `head` freezes nothing more), dropouts.
        let mut spec = small(Style::Gpt, 256);
        spec.training = Some(profile(LayerStyle::Gpt2, true, true));
        check_freeze(
            &spec,
            &[
                (&[][..], false, 11_403_264u128),
                (&[][..], true, 14_680_064u128),
                (&[FreezePart::Embeddings][..], false, 10_878_976u128),
                (&[FreezePart::Embeddings][..], true, 14_155_776u128),
                (&[FreezePart::Attention][..], false, 10_354_688u128),
                (&[FreezePart::Attention][..], true, 13_631_488u128),
                (&[FreezePart::Mlp][..], false, 9_306_112u128),
                (&[FreezePart::Mlp][..], true, 12_582_912u128),
                (&[FreezePart::Norms][..], false, 11_403_264u128),
                (&[FreezePart::Norms][..], true, 14_680_064u128),
                (&[FreezePart::Head][..], false, 11_403_264u128),
                (&[FreezePart::Head][..], true, 14_680_064u128),
                (
                    &[FreezePart::Attention, FreezePart::Embeddings][..],
                    false,
                    9_830_400u128,
                ),
                (
                    &[FreezePart::Attention, FreezePart::Embeddings][..],
                    true,
                    13_107_200u128,
                ),
                (
                    &[FreezePart::Embeddings, FreezePart::Norms][..],
                    false,
                    10_485_760u128,
                ),
                (
                    &[FreezePart::Embeddings, FreezePart::Norms][..],
                    true,
                    14_155_776u128,
                ),
                (
                    &[FreezePart::Mlp, FreezePart::Head][..],
                    false,
                    9_306_112u128,
                ),
                (
                    &[FreezePart::Mlp, FreezePart::Head][..],
                    true,
                    12_582_912u128,
                ),
                (
                    &[
                        FreezePart::Embeddings,
                        FreezePart::Attention,
                        FreezePart::Norms,
                    ][..],
                    false,
                    8_650_752u128,
                ),
                (
                    &[
                        FreezePart::Embeddings,
                        FreezePart::Attention,
                        FreezePart::Norms,
                    ][..],
                    true,
                    13_107_200u128,
                ),
            ],
        );
    }

    #[test]
    fn freezing_matches_torch_on_a_small_pythia() {
        // pythia-1.4b scaled: parallel residual, F 128, untied `embed_out`.
        let mut spec = small(Style::Gpt, 128);
        spec.head = OutputHead::Lm {
            tied: false,
            biases: 0,
            transform: None,
        };
        spec.training = Some(profile(LayerStyle::GptNeox, false, false));
        check_freeze(
            &spec,
            &[
                (&[][..], false, 8_323_072u128),
                (&[][..], true, 10_027_008u128),
                (&[FreezePart::Embeddings][..], false, 8_323_072u128),
                (&[FreezePart::Embeddings][..], true, 10_027_008u128),
                (&[FreezePart::Attention][..], false, 7_274_496u128),
                (&[FreezePart::Attention][..], true, 8_978_432u128),
                (&[FreezePart::Mlp][..], false, 7_274_496u128),
                (&[FreezePart::Mlp][..], true, 8_978_432u128),
                (&[FreezePart::Norms][..], false, 8_323_072u128),
                (&[FreezePart::Norms][..], true, 10_027_008u128),
                (&[FreezePart::Head][..], false, 7_798_784u128),
                (&[FreezePart::Head][..], true, 9_502_720u128),
                (
                    &[FreezePart::Attention, FreezePart::Embeddings][..],
                    false,
                    7_274_496u128,
                ),
                (
                    &[FreezePart::Attention, FreezePart::Embeddings][..],
                    true,
                    8_978_432u128,
                ),
                (
                    &[FreezePart::Embeddings, FreezePart::Norms][..],
                    false,
                    7_667_712u128,
                ),
                (
                    &[FreezePart::Embeddings, FreezePart::Norms][..],
                    true,
                    10_027_008u128,
                ),
                (
                    &[FreezePart::Mlp, FreezePart::Head][..],
                    false,
                    6_750_208u128,
                ),
                (
                    &[FreezePart::Mlp, FreezePart::Head][..],
                    true,
                    8_454_144u128,
                ),
                (
                    &[
                        FreezePart::Embeddings,
                        FreezePart::Attention,
                        FreezePart::Norms,
                    ][..],
                    false,
                    6_324_224u128,
                ),
                (
                    &[
                        FreezePart::Embeddings,
                        FreezePart::Attention,
                        FreezePart::Norms,
                    ][..],
                    true,
                    8_978_432u128,
                ),
            ],
        );
    }

    #[test]
    fn freezing_matches_torch_on_a_small_olmo2() {
        // OLMo-2-0425-1B scaled: post-norms only (q, k, v and the MLP read the residual
        // itself), full-width q/k norms whose trained weights make q and k require grad.
        let mut spec = small(Style::Llama, 128);
        let mut layer = spec.stacks[0].layers.kinds()[0].clone();
        if let Attention::Standard(a) = &mut layer.attention {
            a.q_norm = Some(llmsize_core::spec::Norm::rms_norm(64));
            a.k_norm = Some(llmsize_core::spec::Norm::rms_norm(32));
        }
        spec.stacks[0].layers = Layers::repeat(layer, 2);
        spec.training = Some(TrainingProfile {
            norm: llmsize_core::profile::NormCode::Olmo,
            block_norms: BlockNorms::Output,
            rotary_fp32: true,
            ..profile(LayerStyle::Llama, false, false)
        });
        check_freeze(
            &spec,
            &[
                (&[FreezePart::Embeddings][..], false, 8_847_360u128),
                (&[FreezePart::Embeddings][..], true, 11_599_872u128),
                (&[FreezePart::Attention][..], false, 8_323_072u128),
                (&[FreezePart::Attention][..], true, 10_813_440u128),
                (&[FreezePart::Mlp][..], false, 7_536_640u128),
                (&[FreezePart::Mlp][..], true, 10_027_008u128),
                (&[FreezePart::Norms][..], false, 9_109_504u128),
                (&[FreezePart::Norms][..], true, 11_599_872u128),
                (&[FreezePart::Head][..], false, 8_585_216u128),
                (&[FreezePart::Head][..], true, 11_075_584u128),
                (
                    &[FreezePart::Attention, FreezePart::Embeddings][..],
                    false,
                    8_060_928u128,
                ),
                (
                    &[FreezePart::Attention, FreezePart::Embeddings][..],
                    true,
                    10_813_440u128,
                ),
                (
                    &[FreezePart::Embeddings, FreezePart::Norms][..],
                    false,
                    8_847_360u128,
                ),
                (
                    &[FreezePart::Embeddings, FreezePart::Norms][..],
                    true,
                    11_599_872u128,
                ),
                (
                    &[FreezePart::Mlp, FreezePart::Head][..],
                    false,
                    7_012_352u128,
                ),
                (
                    &[FreezePart::Mlp, FreezePart::Head][..],
                    true,
                    9_502_720u128,
                ),
                (
                    &[
                        FreezePart::Embeddings,
                        FreezePart::Attention,
                        FreezePart::Norms,
                    ][..],
                    false,
                    7_241_728u128,
                ),
                (
                    &[
                        FreezePart::Embeddings,
                        FreezePart::Attention,
                        FreezePart::Norms,
                    ][..],
                    true,
                    10_813_440u128,
                ),
                (
                    &[
                        FreezePart::Embeddings,
                        FreezePart::Attention,
                        FreezePart::Mlp,
                    ][..],
                    false,
                    6_488_064u128,
                ),
                (
                    &[
                        FreezePart::Embeddings,
                        FreezePart::Attention,
                        FreezePart::Mlp,
                    ][..],
                    true,
                    9_240_576u128,
                ),
                (
                    &[FreezePart::Embeddings, FreezePart::Norms, FreezePart::Mlp][..],
                    false,
                    7_274_496u128,
                ),
                (
                    &[FreezePart::Embeddings, FreezePart::Norms, FreezePart::Mlp][..],
                    true,
                    10_027_008u128,
                ),
                (
                    &[
                        FreezePart::Embeddings,
                        FreezePart::Attention,
                        FreezePart::Mlp,
                        FreezePart::Head,
                    ][..],
                    false,
                    5_963_776u128,
                ),
                (
                    &[
                        FreezePart::Embeddings,
                        FreezePart::Attention,
                        FreezePart::Mlp,
                        FreezePart::Head,
                    ][..],
                    true,
                    8_716_288u128,
                ),
                (
                    &[FreezePart::Attention, FreezePart::Mlp, FreezePart::Norms][..],
                    false,
                    6_750_208u128,
                ),
                (
                    &[FreezePart::Attention, FreezePart::Mlp, FreezePart::Norms][..],
                    true,
                    9_240_576u128,
                ),
                (
                    &[FreezePart::Embeddings, FreezePart::Mlp][..],
                    false,
                    7_274_496u128,
                ),
                (
                    &[FreezePart::Embeddings, FreezePart::Mlp][..],
                    true,
                    10_027_008u128,
                ),
            ],
        );
    }
}
