//! What one training step keeps for backward in the `RMSNorm` families — Llama, Mistral,
//! Qwen2/3, Mixtral and Qwen3-MoE (the `llama` layer code), Phi-3, Gemma, Gemma 2 and `OLMo` 2 —
//! and the forward's peak.
//!
//! The ground truth (`../shared/truth/train/README.md`) measured what autograd saves in each
//! family's `modeling_*.py` and derived one closed form per family; this file writes those
//! forms as the tensors they are, with the shapes read from the [`ModelSpec`](llmsize_core::ModelSpec)
//! and the switches (layer code, rotary width, routing-weight dtype, sliding window) from the
//! [`TrainingProfile`](llmsize_core::profile::TrainingProfile).
//!
//! One rule of autograd decides every term: an op saves a tensor only for a gradient that is
//! needed. Full fine-tuning needs them all; a frozen base (`LoRA`) drops what only a frozen
//! weight's gradient would use — the input of every frozen `Linear`, the bf16 normalized tensor
//! a norm's weight would need — and before the first adapter nothing requires grad at all
//! (layer 0's first norm saves nothing, and in layer 0 what only the un-adapted `k` would need is
//! not saved). So each layer is computed from which of its tensors require grad, and full
//! fine-tuning and every `LoRA` target list are the same code.
//!
//! Work is bounded by the layer kinds and runs, never by `num_hidden_layers`; every product is
//! checked.

use super::{ActInput, Activations};
use crate::lora::LoraPlan;
use crate::{AttnImpl, Device, FreezePart, Term};
use llmsize_core::checked::{self, Checked};
use llmsize_core::layout::TensorKind;
use llmsize_core::profile::{BlockNorms, NormCode, RopeTables};
use llmsize_core::spec::{Attention, Ffn, Layer, StackRole};
use llmsize_core::units::thousands_u128;
use llmsize_core::{Overflow, SpecError};
use std::ops::Range;

fn n(x: u128) -> String {
    thousands_u128(x)
}

/// Where a tensor lives for parallelism.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// Inside a layer, at a width tensor parallelism divides (heads, the MLP's inner width).
    Sharded,
    /// Inside a layer, at the full width `d`.
    Replicated,
    /// Outside the layers.
    Outside,
}

/// A sum of products, kept as symbols, values and total: `4Td + 4T` / `4·512·4,096 + 4·512`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Sum {
    sym: Vec<String>,
    val: Vec<String>,
    value: u128,
}

impl Sum {
    fn add(&mut self, sym: impl Into<String>, factors: &[u128]) -> Result<(), Overflow> {
        let sym = sym.into();
        let v = checked::product(&sym, factors.iter().copied())?;
        if v == 0 {
            return Ok(());
        }
        self.value = checked::add("", self.value, v).map_err(|e| Overflow {
            formula: format!("{} + {sym}", self.sym()),
            ..e
        })?;
        self.sym.push(sym);
        self.val
            .push(factors.iter().map(|f| n(*f)).collect::<Vec<_>>().join("·"));
        Ok(())
    }

    fn sym(&self) -> String {
        self.sym.join(" + ")
    }

    fn val(&self) -> String {
        self.val.join(" + ")
    }
}

/// One meaningful piece of the step's activations, for one layer (or once).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Part {
    key: String,
    what: String,
    sum: Sum,
    place: Place,
}

fn push(parts: &mut Vec<Part>, key: &str, what: impl Into<String>, place: Place, sum: Sum) {
    if sum.value > 0 {
        parts.push(Part {
            key: key.to_owned(),
            what: what.into(),
            sum,
            place,
        });
    }
}

/// The sizes of the step.
#[derive(Debug, Clone, Copy)]
struct Dims {
    /// Batch.
    b: u128,
    /// Sequence.
    s: u128,
    /// Tokens `b·s`.
    t: u128,
    /// Hidden width.
    d: u128,
    /// Vocabulary.
    v: u128,
    /// Bytes per element of the weights' dtype.
    e: u128,
}

impl Dims {
    /// Bytes per element of a tensor's fp32 upcast (the logits', the scores'): none where the
    /// dtype is fp32 already.
    fn upcast(self) -> u128 {
        if self.e == 4 { 0 } else { 4 }
    }
}

/// How a family's `RMSNorm` computes (what it saves is below, in [`norm`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NormStyle {
    /// `w * (x.float() * rsqrt(mean(x²) + ε)).to(dtype)`.
    Llama,
    /// `(x.float() * rsqrt(…)) * (1 + w.float())`, then `.to(dtype)`.
    Gemma,
    /// `(w * (x.float() * rsqrt(…))).to(dtype)`.
    Olmo,
}

/// What one `RMSNorm` over `x` (`x_sym`, `x` factors, rows `r`) saves: with a grad-requiring
/// input its fp32 copy of `x` (`x.float()`; in fp32 `x` itself) and the fp32 `rsqrt` per row
/// (Gemma: also the fp32 `1 + w`); with a trained weight the normalized tensor the weight's
/// gradient needs (bf16 for llama, fp32 for Gemma and `OLMo`); and its output where the next
/// op's trained weight needs it.
#[allow(
    clippy::too_many_arguments,
    reason = "one norm's switches, named at each call"
)]
fn norm(
    sum: &mut Sum,
    style: NormStyle,
    (x_sym, x): (&str, &[u128]),
    (r_sym, r): (&str, &[u128]),
    dim: u128,
    grad_in: bool,
    trained: bool,
    out_saved: bool,
    e: u128,
) -> Result<(), SpecError> {
    let with = |c: u128, f: &[u128]| -> Vec<u128> {
        std::iter::once(c).chain(f.iter().copied()).collect()
    };
    if grad_in {
        sum.add(format!("4{x_sym}"), &with(4, x))?;
        sum.add(format!("4{r_sym}"), &with(4, r))?;
        if style == NormStyle::Gemma {
            sum.add("4d", &[4, dim])?;
        }
    }
    if trained {
        match style {
            NormStyle::Llama => sum.add(format!("e{x_sym}"), &with(e, x))?,
            NormStyle::Gemma | NormStyle::Olmo => sum.add(format!("4{x_sym}"), &with(4, x))?,
        }
    }
    if out_saved {
        sum.add(format!("e{x_sym}"), &with(e, x))?;
    }
    Ok(())
}

/// The feed-forward part of a layer kind.
#[derive(Debug, Clone, PartialEq, Eq)]
enum FfnShape {
    Dense {
        f: u128,
        gated: bool,
    },
    Moe {
        experts: u128,
        k: u128,
        fm: u128,
        gated: bool,
        shared: Option<u128>,
        /// A sigmoid gate on the shared expert (Qwen2-MoE).
        shared_gate: bool,
    },
    Absent,
}

/// A layer kind's shapes.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Shape {
    /// `None`: no attention in this layer.
    attention: Option<AttnShape>,
    ffn: FfnShape,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct AttnShape {
    h: u128,
    kv: u128,
    hd: u128,
    a: u128,
    k: u128,
    fused_qkv: bool,
    /// Norm width of the q norm / k norm (per head: `hd`; full width: `A` or `K`).
    q_norm: Option<u128>,
    k_norm: Option<u128>,
    /// The sliding window, where it applies.
    window: Option<u128>,
}

/// The adapters of one layer kind.
#[allow(
    clippy::struct_excessive_bools,
    reason = "one switch per adaptable module, as peft names them"
)]
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Ads {
    /// Adapted `Linear` modules: name, role, input width.
    lin: Vec<Lin>,
    q: bool,
    k: bool,
    v: bool,
    o: bool,
    gate: bool,
    up: bool,
    down: bool,
    /// The router (peft wraps transformers-5 routers' `weight` with `ParamWrapper`).
    router: bool,
    /// `ParamWrapper` on the experts' fused gate/up tensor: its trainable parameters.
    expert_gate_up: Option<u128>,
    /// `ParamWrapper` on the experts' down tensor: its trainable parameters.
    expert_down: Option<u128>,
}

impl Ads {
    fn any(&self) -> bool {
        !self.lin.is_empty()
            || self.router
            || self.expert_gate_up.is_some()
            || self.expert_down.is_some()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// Reads the attention block's input (q, k, v, fused qkv).
    Qkv,
    /// Reads the attention output.
    O,
    /// Reads the MLP block's input (gate, up, fused `gate_up`, shared expert's gate/up).
    MlpIn,
    /// Reads `act(gate)·up`.
    Down,
    /// Anything else (counted as reading a grad-requiring input).
    Other,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Lin {
    name: String,
    role: Role,
    n_in: u128,
}

/// The adapters as this file reads them from a [`LoraPlan`]: the plan's fields it needs, in
/// one place, so the arithmetic (and its tests) do not depend on the plan's other fields.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Lora {
    rank: u64,
    dropout: bool,
    dora: bool,
    modules: Vec<Module>,
}

/// One adapted module kind.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Module {
    name: String,
    kind: TensorKind,
    stack: Option<StackRole>,
    layer_runs: Vec<Range<u64>>,
    n_in: u64,
    /// Trainable parameters in one layer (a `ParamWrapper`'s factors, cast to the dtype).
    params: u64,
    /// A `gate` module whose peft name is also the up projection's (a fused `gate_up_proj`).
    fused_up: bool,
}

impl Lora {
    fn of(plan: &LoraPlan, names: &[(TensorKind, &str)]) -> Self {
        let up_named = |name: &str| {
            names
                .iter()
                .any(|(k, n)| *k == TensorKind::FfnUp && *n == name)
        };
        Lora {
            rank: plan.rank,
            dropout: plan.dropout,
            dora: plan.dora,
            modules: plan
                .modules
                .iter()
                .map(|m| Module {
                    name: m.name.clone(),
                    kind: m.kind,
                    stack: m.stack,
                    layer_runs: m.layer_runs.clone(),
                    n_in: m.n_in,
                    params: m.params,
                    fused_up: m.kind == TensorKind::FfnGate && up_named(&m.name),
                })
                .collect(),
        }
    }
}

/// Everything the layer arithmetic needs besides one layer's shapes.
#[allow(
    clippy::struct_excessive_bools,
    reason = "the step's switches, each read where the code branches"
)]
struct Cx<'a> {
    dm: Dims,
    block_norms: BlockNorms,
    attn_softcap: bool,
    logit_softcap: bool,
    norm_style: NormStyle,
    eager: bool,
    cuda: bool,
    attention_dropout: bool,
    /// Dropout on each block's output before the residual add (`TrainingProfile::hidden_dropout`).
    hidden_dropout: bool,
    routing_in_dtype: bool,
    /// The top-k weights are divided by their sum (see `TrainingProfile::topk_renormalized`).
    topk_renorm: bool,
    routing: llmsize_core::profile::Routing,
    /// See `TrainingProfile::rope_concatenated`.
    rope_cat: bool,
    /// The rotary width and, where each layer keeps its own interleaved copies of the
    /// tables, their element bytes.
    rope_copies: Option<(u128, u128)>,
    /// See `TrainingProfile::q_position_scale`.
    q_scale: bool,
    /// See `TrainingProfile::sub_norms`.
    sub_norms: bool,
    /// See `TypeFacts::router_fp32`.
    router_fp32: bool,
    lora: Option<&'a Lora>,
}

impl Cx<'_> {
    /// Bytes per element of a dropout's saved noise: the CPU's in the dtype, CUDA's
    /// `native_dropout` bool mask.
    fn noise(&self) -> u128 {
        if self.cuda { 1 } else { self.dm.e }
    }

    /// SDPA runs the CPU math path (attention dropout on the CPU).
    fn math(&self) -> bool {
        !self.eager && self.attention_dropout && !self.cuda
    }
}

/// One layer's activations and what the peak arithmetic needs of it.
#[derive(Debug, Clone, Default)]
struct LayerOut {
    parts: Vec<Part>,
    /// Saved before the attention scores: norms, q/k norms, q/k/v adapters.
    before_scores: u128,
    /// q, k, v as the eager attention holds them at its softmax.
    operands: Sum,
    /// The copies eager attention's matmuls make to fold `[b, H]` (batch > 1).
    folded: Sum,
    /// The input norm's output, alive through the attention.
    norm_out: Sum,
    /// The soft-capped scores' `tanh` (Gemma 2), saved before the softmax.
    tanh: u128,
    /// `b·H·s²` elements of one layer's scores (0 without attention).
    scores: u128,
    /// The layer's input is itself saved (so it is not a transient in the peak).
    input_saved: bool,
    /// What the last `MoE` layer holds when it puts the experts' rows back in order.
    moe_peak: Option<Sum>,
}

impl LayerOut {
    fn value(&self) -> Result<u128, Overflow> {
        checked::sum(
            "a layer's activations",
            self.parts.iter().map(|p| p.sum.value),
        )
    }
}

/// Which of a layer's tensors require grad, named by the `Linear`s that read them: an
/// adapter saves its dropout's noise only where its input requires grad.
#[allow(
    clippy::struct_excessive_bools,
    reason = "one switch per input a Linear reads, each read by its role"
)]
#[derive(Debug, Clone, Copy)]
struct InputGrads {
    /// The attention block's input (q, k, v read it).
    qkv: bool,
    /// The attention output (`o_proj` reads it).
    o: bool,
    /// The MLP block's input (gate and up read it).
    mlp_in: bool,
    /// `act(gate)·up` (down reads it).
    down: bool,
}

impl InputGrads {
    fn of(self, role: Role) -> bool {
        match role {
            Role::Qkv => self.qkv,
            Role::O => self.o,
            Role::MlpIn => self.mlp_in,
            Role::Down => self.down,
            Role::Other => true,
        }
    }
}

/// Which of q, k and v require grad.
#[derive(Debug, Clone, Copy)]
struct Qkv {
    q: bool,
    k: bool,
    v: bool,
}

impl Qkv {
    fn any(self) -> bool {
        self.q || self.k || self.v
    }
}

/// The bytes of one layer: `grad_in` says whether its input requires grad, `full` whether its
/// base weights are trained (full fine-tuning) or frozen (`LoRA`), `ads` its adapters.
///
/// The layer is walked in its forward's order — the attention block's input, attention, the
/// MLP block's input, the MLP, the adapters — each step learning from the one before which
/// of its tensors require grad.
fn layer(
    cx: &Cx<'_>,
    sh: &Shape,
    full: bool,
    grad_in: bool,
    ads: &Ads,
) -> Result<LayerOut, SpecError> {
    let Dims { t, d, e, .. } = cx.dm;
    let tw = full;
    let pre_norm = cx.block_norms.before();
    let post_norms = cx.block_norms.after();
    let mut out = LayerOut {
        input_saved: if pre_norm { e == 4 && grad_in } else { tw },
        ..LayerOut::default()
    };

    // The attention block's input: a pre-norm, or (OLMo 2) the residual stream itself.
    let block_in_grad = if pre_norm { grad_in || tw } else { grad_in };
    out.before_scores = block_input(
        cx,
        &mut out.parts,
        pre_norm,
        ("attention_norm", "the attention block's RMSNorm"),
        (
            "attention_input",
            "the layer input, which q, k and v read directly (post-norm layer)",
        ),
        grad_in,
        tw,
    )?;
    if pre_norm {
        out.norm_out.add("eTd", &[e, t, d])?;
    }

    let qkv = Qkv {
        q: block_in_grad || tw || ads.q,
        k: block_in_grad || tw || ads.k,
        v: block_in_grad || tw || ads.v,
    };
    let mut attn_out_g = ads.o || tw;
    if let Some(at) = &sh.attention {
        attention(cx, at, tw, qkv, &mut out)?;
        attn_out_g = attn_out_g || qkv.any();
    }

    if sh.attention.is_some() {
        residual_dropout(cx, &mut out.parts, "attention", attn_out_g)?;
    }
    let mid_g = grad_in || attn_out_g;
    if post_norms {
        stream_norm(
            cx,
            &mut out.parts,
            ("attention_post_norm", "the attention output's RMSNorm"),
            Place::Replicated,
            attn_out_g,
            tw,
            false,
        )?;
    }
    // The MLP block norm's output is saved by the trained gate/up (or router) weights.
    block_input(
        cx,
        &mut out.parts,
        pre_norm,
        ("mlp_norm", "the MLP block's RMSNorm"),
        (
            "mlp_input",
            "the residual stream after attention, which the MLP reads directly (post-norm layer)",
        ),
        mid_g,
        tw,
    )?;
    let ffn_in_g = if pre_norm { mid_g || tw } else { mid_g };

    let (mlp_out_g, down_in_g) = match &sh.ffn {
        FfnShape::Dense { f, gated } => dense_mlp(cx, (*f, *gated), tw, ffn_in_g, ads, &mut out)?,
        FfnShape::Moe {
            experts,
            k,
            fm,
            shared,
            shared_gate,
            ..
        } => {
            let active = ffn_in_g
                || tw
                || ads.router
                || ads.expert_gate_up.is_some()
                || ads.expert_down.is_some();
            if active {
                moe(
                    cx,
                    (*experts, *k, *fm),
                    (*shared, *shared_gate),
                    tw,
                    ads,
                    &mut out,
                )?;
            }
            (active, active)
        }
        FfnShape::Absent => (false, false),
    };
    if !matches!(sh.ffn, FfnShape::Absent) {
        residual_dropout(cx, &mut out.parts, "mlp", mlp_out_g)?;
    }

    if post_norms && !matches!(sh.ffn, FfnShape::Absent) {
        stream_norm(
            cx,
            &mut out.parts,
            ("mlp_post_norm", "the MLP output's RMSNorm"),
            Place::Replicated,
            mlp_out_g,
            tw,
            false,
        )?;
    }

    if let Some(plan) = cx.lora {
        let grads = InputGrads {
            qkv: block_in_grad,
            o: qkv.any(),
            mlp_in: ffn_in_g,
            down: down_in_g,
        };
        linear_adapters(cx, plan, &ads.lin, grads, &mut out)?;
    }
    Ok(out)
}

/// The dropout on a block's output before the residual add (`hidden_dropout`), where that
/// output requires grad: its noise, `[T, d]` (CPU: in the dtype; CUDA: a bool mask).
fn residual_dropout(
    cx: &Cx<'_>,
    parts: &mut Vec<Part>,
    block: &str,
    out_g: bool,
) -> Result<(), SpecError> {
    if !(cx.hidden_dropout && out_g) {
        return Ok(());
    }
    let Dims { t, d, .. } = cx.dm;
    let noise = cx.noise();
    let mut sum = Sum::default();
    sum.add(format!("{noise}·Td"), &[noise, t, d])?;
    push(
        parts,
        &format!("{block}_dropout"),
        format!("the dropout on the {block} block's output: its noise"),
        Place::Replicated,
        sum,
    );
    Ok(())
}

/// An `RMSNorm` over the residual stream (`[T, d]`, one `rsqrt` per token) as one part named
/// `key` (`name` in its description); returns its bytes.
fn stream_norm(
    cx: &Cx<'_>,
    parts: &mut Vec<Part>,
    (key, name): (&str, &str),
    place: Place,
    grad_in: bool,
    trained: bool,
    out_saved: bool,
) -> Result<u128, SpecError> {
    let Dims { t, d, e, .. } = cx.dm;
    let ns = cx.norm_style;
    let mut sum = Sum::default();
    norm(
        &mut sum,
        ns,
        ("Td", &[t, d]),
        ("T", &[t]),
        d,
        grad_in,
        trained,
        out_saved,
        e,
    )?;
    let value = sum.value;
    push(
        parts,
        key,
        norm_what(name, ns, grad_in, trained, out_saved),
        place,
        sum,
    );
    Ok(value)
}

/// A norm inside a block over `[T, width]` (`BitNet`'s sub-norms), sharded with the block:
/// `(grad_in, trained, out_saved)` as [`norm`] takes them.
fn sub_norm(
    cx: &Cx<'_>,
    parts: &mut Vec<Part>,
    (key, name): (&str, &str),
    (w_sym, width): (&str, u128),
    (grad_in, trained, out_saved): (bool, bool, bool),
) -> Result<(), SpecError> {
    let Dims { t, e, .. } = cx.dm;
    let mut sum = Sum::default();
    norm(
        &mut sum,
        cx.norm_style,
        (&format!("T{w_sym}"), &[t, width]),
        ("T", &[t]),
        width,
        grad_in,
        trained,
        out_saved,
        e,
    )?;
    if sum.value > 0 {
        let what = norm_what(name, cx.norm_style, grad_in, trained, out_saved);
        push(parts, key, what, Place::Sharded, sum);
    }
    Ok(())
}

/// What a block (attention or MLP) saves of its input: its pre-norm (`norm`: key and name),
/// whose output the trained weights of the block's first `Linear`s read; or, in a
/// post-norm layer, the residual stream itself where those weights are trained (`stream`:
/// key and description). Returns the bytes.
fn block_input(
    cx: &Cx<'_>,
    parts: &mut Vec<Part>,
    pre_norm: bool,
    norm: (&str, &str),
    (stream_key, stream_what): (&str, &str),
    grad_in: bool,
    tw: bool,
) -> Result<u128, SpecError> {
    if pre_norm {
        return stream_norm(cx, parts, norm, Place::Replicated, grad_in, tw, tw);
    }
    if !tw {
        return Ok(0);
    }
    let Dims { t, d, e, .. } = cx.dm;
    let mut sum = Sum::default();
    sum.add("eTd", &[e, t, d])?;
    let value = sum.value;
    push(parts, stream_key, stream_what, Place::Replicated, sum);
    Ok(value)
}

/// The attention of a layer: its q/k norms, the attention op's saved tensors (eager or
/// SDPA), attention dropout and the sliding-window mask.
fn attention(
    cx: &Cx<'_>,
    at: &AttnShape,
    tw: bool,
    g: Qkv,
    out: &mut LayerOut,
) -> Result<(), SpecError> {
    let Dims { b, s, e, .. } = cx.dm;
    qk_norms(cx, at, tw, g, out)?;
    let a2k = (Checked::new(at.a) + Checked::new(at.k) * 2u128).get("A + 2K")?;
    let mask = !cx.eager && at.window.is_some_and(|w| s > w);
    out.scores = checked::product("bHs²", [b, at.h, s, s])?;
    let (sum, what) = if cx.eager {
        eager_attention(cx, at, tw, g, a2k, out)?
    } else if cx.math() {
        sdpa_math(cx, at, tw, g, a2k, out)?
    } else if g.any() {
        sdpa(cx, at, tw, a2k, mask)?
    } else {
        (Sum::default(), String::new())
    };
    push(&mut out.parts, "attention", what, Place::Sharded, sum);
    if cx.sub_norms {
        // `o_proj` reads the sub-norm's output: saved where its weight trains, in place of
        // SDPA's output view (eager attention counts its `o_proj` input already, as does
        // SDPA where that input is a contiguous copy).
        let counted = cx.eager || at.fused_qkv || cx.rope_cat;
        sub_norm(
            cx,
            &mut out.parts,
            ("attention_sub_norm", "the attention output's sub-norm"),
            ("A", at.a),
            (g.any(), tw, tw && !counted),
        )?;
    }
    if let Some((r, el)) = cx.rope_copies
        && (g.q || g.k)
    {
        let mut copies = Sum::default();
        copies.add("2·s·r·el", &[2, s, r, el])?;
        push(
            &mut out.parts,
            "rope_copies",
            "this layer's interleaved copies of the rotary cos and sin (`repeat_interleave`)",
            Place::Replicated,
            copies,
        );
    }
    if cx.q_scale && g.q {
        let mut scale = Sum::default();
        scale.add("e·s", &[e, s])?;
        push(
            &mut out.parts,
            "q_position_scale",
            "the position-dependent scale q is multiplied by, [1, 1, s, 1] in the dtype",
            Place::Replicated,
            scale,
        );
    }
    if mask && g.any() {
        let mut m = Sum::default();
        m.add("e·b·s²", &[e, b, s, s])?;
        push(
            &mut out.parts,
            "window_mask",
            "the sliding-window mask, converted to the dtype by every layer's SDPA (s > window)",
            Place::Replicated,
            m,
        );
    }
    Ok(())
}

/// The q/k norms (Qwen3 per head, `OLMo` 2 over the full width): their output goes to `RoPE`.
fn qk_norms(
    cx: &Cx<'_>,
    at: &AttnShape,
    tw: bool,
    g: Qkv,
    out: &mut LayerOut,
) -> Result<(), SpecError> {
    let Dims { t, e, .. } = cx.dm;
    let AttnShape { h, kv, a, k, .. } = *at;
    // A q/k norm is the model's RMSNorm class (Qwen3's, OLMo 2's, Gemma 3's).
    let qk_style = cx.norm_style;
    for (name, dim, width, wsym, heads, grad) in [
        ("q", at.q_norm, a, "A", h, g.q),
        ("k", at.k_norm, k, "K", kv, g.k),
    ] {
        let Some(dim) = dim else { continue };
        let rows = width.div_ceil(dim.max(1));
        let (rsym, rf): (String, Vec<u128>) = if rows == 1 {
            ("T".into(), vec![t])
        } else if rows == heads {
            (
                format!("T·{}", if name == "q" { "H" } else { "KV" }),
                vec![t, rows],
            )
        } else {
            (format!("T·{rows}"), vec![t, rows])
        };
        let mut sum = Sum::default();
        norm(
            &mut sum,
            qk_style,
            (&format!("T{wsym}"), &[t, width]),
            (&rsym, &rf),
            dim,
            grad,
            tw,
            false,
            e,
        )?;
        out.before_scores = checked::add("saved before the scores", out.before_scores, sum.value)?;
        push(
            &mut out.parts,
            &format!("{name}_norm"),
            norm_what(&format!("the {name} norm"), qk_style, grad, tw, false),
            Place::Sharded,
            sum,
        );
    }
    Ok(())
}

/// What eager attention saves, and its description; sets the layer's `tanh` (Gemma 2) and
/// the operands alive at its softmax.
///
/// q·kᵀ saves q for kᵀ's gradient and kᵀ for q's; the softmax its fp32 output; probs·v saves
/// the probabilities (cast to the dtype) for v's gradient and v for the probabilities';
/// `o_proj` its (contiguous) input for its weight's gradient. One KV head at batch 1:
/// `repeat_kv` and the matmul's batch folding stay views, so k and v are saved at KV heads
/// (as Falcon's multi-query attention).
fn eager_attention(
    cx: &Cx<'_>,
    at: &AttnShape,
    tw: bool,
    g: Qkv,
    a2k: u128,
    out: &mut LayerOut,
) -> Result<(Sum, String), SpecError> {
    let Dims { b, s, t, e, .. } = cx.dm;
    let AttnShape { h, kv, a, k, .. } = *at;
    let mqa_view = kv == 1 && kv < h && b == 1;
    let mut sum = Sum::default();
    let mut items = Vec::new();
    if g.k {
        sum.add("eTA", &[e, t, a])?;
        items.push("q");
    }
    if g.q {
        if mqa_view {
            sum.add("eTK", &[e, t, k])?;
            items.push("kᵀ (a broadcast view of the single KV head)");
        } else {
            sum.add("eTA", &[e, t, a])?;
            items.push("kᵀ at H heads");
        }
    }
    if g.q || g.k {
        if cx.attn_softcap {
            sum.add("e·bHs²", &[e, b, h, s, s])?;
            out.tanh = checked::product("e·bHs²", [e, b, h, s, s])?;
            items.push("tanh of the soft-capped scores");
        }
        sum.add("4bHs²", &[4, b, h, s, s])?;
        items.push("fp32 softmax");
        if cx.attention_dropout {
            // The dropout's input (the probabilities) requires grad: it saves its noise
            // (CPU: in the dtype; CUDA's `native_dropout`: a bool mask).
            let noise = cx.noise();
            sum.add(format!("{noise}·bHs²"), &[noise, b, h, s, s])?;
            items.push("the dropout's noise");
        }
        if at.fused_qkv && b == 1 && kv == h {
            sum.add("eT(A+2K)", &[e, t, a2k])?;
            items.push("v (a view: the whole fused qkv output)");
        } else if mqa_view {
            sum.add("eTK", &[e, t, k])?;
            items.push("v (a broadcast view of the single KV head)");
        } else {
            sum.add("eTA", &[e, t, a])?;
            items.push("v at H heads");
        }
    }
    if g.v {
        if cx.attention_dropout {
            sum.add("e·bHs²", &[e, b, h, s, s])?;
            items.push("the dropped probabilities (probs·v's input)");
        } else if e != 4 {
            sum.add("e·bHs²", &[e, b, h, s, s])?;
            items.push("its cast to the dtype");
        } else if !(g.q || g.k) {
            sum.add("4bHs²", &[4, b, h, s, s])?;
            items.push("the probabilities");
        }
    }
    if tw {
        sum.add("eTA", &[e, t, a])?;
        items.push("o_proj input");
    }
    (out.operands, out.folded) = eager_operands(cx, at, a2k)?;
    Ok((sum, format!("eager attention: {}", items.join(", "))))
}

/// What eager attention holds at its softmax: q after `RoPE`, k after `RoPE`, v (or the fused
/// qkv output), and k, v repeated to H heads where there are fewer KV heads; and apart, the
/// copies the matmul makes to fold `[b, H]` (saved for backward, so alive at the softmax,
/// unless a checkpoint's forward drops what is saved).
fn eager_operands(cx: &Cx<'_>, at: &AttnShape, a2k: u128) -> Result<(Sum, Sum), Overflow> {
    let Dims { b, t, e, .. } = cx.dm;
    let AttnShape { h, kv, a, k, .. } = *at;
    let mut ops = Sum::default();
    ops.add("eTA", &[e, t, a])?;
    ops.add("eTK", &[e, t, k])?;
    if at.fused_qkv {
        ops.add("eT(A+2K)", &[e, t, a2k])?;
    } else {
        ops.add("eTK", &[e, t, k])?;
    }
    // Beyond batch 1 the matmul folds [b, H] into one dimension: q and k after RoPE,
    // laid out [b, s, H, hd] (unless sliced from a fused qkv output), are copied.
    let mut folded = Sum::default();
    let fold = b > 1 && !at.fused_qkv;
    if fold {
        folded.add("eTA", &[e, t, a])?;
    }
    if kv == h {
        if fold {
            folded.add("eTA", &[e, t, a])?;
        }
    } else if kv == 1 {
        // One KV head: repeat_kv is a broadcast view, copied by the fold.
        if b > 1 {
            folded.add("eTA", &[e, t, a])?;
        }
    } else {
        ops.add("2eTA", &[2, e, t, a])?;
    }
    Ok((ops, folded))
}

/// What the CPU SDPA math path saves (attention dropout sends SDPA there), and its
/// description: it upcasts to fp32 and computes `(q·√scale)·(kᵀ·√scale)`, saving both
/// scaled operands (k repeated to H heads), the fp32 probabilities and the dropout's fp32
/// noise, v in fp32 (repeated) and the dropped probabilities; its output, cast back and
/// transposed, reaches `o_proj` through a contiguous copy (the same rules as the `LayerNorm`
/// families' walk, measured there and on Emu3 and Seed-OSS).
fn sdpa_math(
    cx: &Cx<'_>,
    at: &AttnShape,
    tw: bool,
    g: Qkv,
    a2k: u128,
    out: &mut LayerOut,
) -> Result<(Sum, String), SpecError> {
    let Dims { b, s, t, e, .. } = cx.dm;
    let AttnShape { h, kv, a, k, .. } = *at;
    // At its largest op (the dropout): q, k, v as SDPA gets them (k, v at the KV heads), the
    // fp32 copies of q, k, v and q·scale (the casts are no-ops in fp32), k and v repeated to
    // H heads, the fp32 causal mask; the scores' `12·bHs²` are added by the peak.
    let mut ops = Sum::default();
    if at.fused_qkv {
        ops.add("eT(A+2K)", &[e, t, a2k])?;
    } else {
        ops.add("eTA", &[e, t, a])?;
        ops.add("2eTK", &[2, e, t, k])?;
    }
    if e == 4 {
        ops.add("4TA", &[4, t, a])?;
    } else {
        ops.add("8T(A+K)", &[8, t, checked::add("A+K", a, k)?])?;
    }
    if kv < h {
        ops.add("8TA", &[8, t, a])?;
    }
    ops.add("4s²", &[4, s, s])?;
    out.operands = ops;
    let mut sum = Sum::default();
    let mut items = Vec::new();
    if g.k {
        sum.add("4TA", &[4, t, a])?;
        items.push("fp32 q·√scale");
    }
    if g.q {
        sum.add("4TA", &[4, t, a])?;
        items.push("fp32 kᵀ·√scale at H heads");
    }
    if g.q || g.k {
        if e != 4 {
            sum.add("4TA", &[4, t, a])?;
            items.push("fp32 v at H heads");
        } else if b == 1 && at.fused_qkv {
            sum.add("eT(A+2K)", &[e, t, a2k])?;
            items.push("v (fp32 weights at batch 1: a view of the fused qkv output)");
        } else {
            sum.add("eTA", &[e, t, a])?;
            items.push("v at H heads");
        }
        sum.add("8bHs²", &[8, b, h, s, s])?;
        items.push("fp32 probabilities and dropout noise");
    }
    if g.v {
        sum.add("4bHs²", &[4, b, h, s, s])?;
        items.push("fp32 dropped probabilities");
    }
    if tw {
        sum.add("eTA", &[e, t, a])?;
        items.push("a contiguous o_proj input");
    }
    Ok((
        sum,
        format!(
            "SDPA (CPU math path, forced by attention dropout): {}",
            items.join(", ")
        ),
    ))
}

/// What SDPA saves (some of q, k, v requires grad), and its description. `mask`: a sliding
/// window shorter than the sequence.
fn sdpa(
    cx: &Cx<'_>,
    at: &AttnShape,
    tw: bool,
    a2k: u128,
    mask: bool,
) -> Result<(Sum, String), SpecError> {
    let Dims { b, s, t, e, .. } = cx.dm;
    let AttnShape { h, kv, a, k, .. } = *at;
    // SDPA (never eager here) repeats k and v to H heads itself where it has no GQA path.
    let repeat = kv < h && (mask || at.hd > 256);
    let (kvw, kv_sym) = if repeat { (a, "A") } else { (k, "K") };
    let fused_view = at.fused_qkv && !repeat;
    let mut sum = Sum::default();
    let mut items = vec!["q, k after RoPE"];
    sum.add("eTA", &[e, t, a])?;
    sum.add(format!("eT{kv_sym}"), &[e, t, kvw])?;
    if fused_view {
        sum.add("eT(A+2K)", &[e, t, a2k])?;
        items.push("the fused qkv output (v is a view of it)");
    } else {
        sum.add(format!("eT{kv_sym}"), &[e, t, kvw])?;
        items.push("v");
    }
    sum.add("eTA", &[e, t, a])?;
    items.push("the SDPA output");
    // CUDA: FlashAttention for 16-bit without a mask, else memory-efficient attention,
    // whose logsumexp is padded to a multiple of 32 in s.
    let efficient = cx.cuda && (e == 4 || mask || at.hd > 256);
    if efficient {
        let s32 = (Checked::new(s).div_ceil(32u128) * 32u128).get("⌈s⌉₃₂")?;
        sum.add("4bH·⌈s⌉₃₂", &[4, b, h, s32])?;
    } else {
        sum.add("4bHs", &[4, b, h, s])?;
    }
    items.push("fp32 logsumexp");
    if cx.cuda {
        sum.add("16", &[16])?;
        items.push(if efficient {
            "the philox seed and offset (CUDA memory-efficient attention, its logsumexp padded to 32 in s: derived from the documented kernel, not measured)"
        } else {
            "the philox seed and offset (CUDA FlashAttention: derived from the documented kernel, not measured)"
        });
    }
    if (at.fused_qkv || cx.rope_cat) && tw {
        // q after RoPE of a slice of the fused output (or after a rotary that ends in a
        // `cat`) is laid out [b, H, s, hd], and so is the SDPA output: o_proj's input is a
        // contiguous copy.
        sum.add("eTA", &[e, t, a])?;
        items.push("a contiguous o_proj input");
    }
    if repeat {
        items.push("k and v repeated to H heads (no GQA in SDPA here)");
    }
    Ok((sum, format!("SDPA: {}", items.join(", "))))
}

/// A dense MLP of inner width `f` (gated or not) whose input requires grad as `ffn_in_g`
/// says; returns whether its output and down's input require grad.
fn dense_mlp(
    cx: &Cx<'_>,
    (f, gated): (u128, bool),
    tw: bool,
    ffn_in_g: bool,
    ads: &Ads,
    out: &mut LayerOut,
) -> Result<(bool, bool), SpecError> {
    let Dims { t, e, .. } = cx.dm;
    let gate_g = ffn_in_g || tw || ads.gate;
    let up_g = ffn_in_g || tw || ads.up;
    // Each item is one `[T, F]` tensor in the dtype.
    let mut items = Vec::new();
    let down_in_g = if gated {
        if gate_g {
            items.push("gate output");
            items.push("up output");
        }
        if up_g {
            items.push("act(gate)");
        }
        gate_g || up_g
    } else {
        if up_g {
            items.push("up output");
        }
        up_g
    };
    if tw {
        items.push(if gated {
            "act(gate)·up (down_proj input)"
        } else {
            "act(up) (down_proj input)"
        });
    }
    let count = items.len() as u128;
    let mut sum = Sum::default();
    sum.add(format!("{count}eTF"), &[count, e, t, f])?;
    push(
        &mut out.parts,
        "mlp",
        format!("MLP: {}", items.join(", ")),
        Place::Sharded,
        sum,
    );
    if cx.sub_norms {
        // `down_proj` reads the sub-norm's output (counted above as its input).
        sub_norm(
            cx,
            &mut out.parts,
            ("mlp_sub_norm", "the MLP product's sub-norm"),
            ("F", f),
            (down_in_g, tw, false),
        )?;
    }
    Ok((down_in_g || tw || ads.down, down_in_g))
}

/// An `MoE` block that takes part in backward: `(E, k, Fm)` its experts, `shared` a shared
/// expert's width. Its router and routing, its routed experts, `LoRA`'s merged expert
/// weights, a shared expert, and what it holds at its peak.
fn moe(
    cx: &Cx<'_>,
    (en, k, fm): (u128, u128, u128),
    (shared, shared_gate): (Option<u128>, bool),
    tw: bool,
    ads: &Ads,
    out: &mut LayerOut,
) -> Result<(), SpecError> {
    let Dims { t, d, e, .. } = cx.dm;
    moe_routing(cx, (en, k, tw), ads, &mut out.parts)?;
    moe_experts(cx, (en, k, fm), tw, ads, &mut out.parts)?;
    if let Some(fs) = shared {
        let mut sum = Sum::default();
        let c = if tw { 4 } else { 3 };
        sum.add(format!("{c}eTF_s"), &[c, e, t, fs])?;
        if shared_gate {
            // Qwen2-MoE's `sigmoid(shared_expert_gate(x)) * shared_expert(x)`: the multiply
            // saves the shared expert's output and the sigmoid's.
            sum.add("eTd", &[e, t, d])?;
            sum.add("eT", &[e, t])?;
        }
        push(
            &mut out.parts,
            "shared_expert",
            "the shared expert's MLP (as a dense MLP)",
            Place::Sharded,
            sum,
        );
    }
    out.moe_peak = Some(moe_combine(cx, (en, k, fm), ads)?);
    Ok(())
}

/// The router (over `E` experts, with its `LoRA`) and the routing of each token to `k`.
fn moe_routing(
    cx: &Cx<'_>,
    (en, k, tw): (u128, u128, bool),
    ads: &Ads,
    parts: &mut Vec<Part>,
) -> Result<(), SpecError> {
    use llmsize_core::profile::Routing;
    let Dims { t, d, e, .. } = cx.dm;
    let mut router = Sum::default();
    let mut what_router = if matches!(
        cx.routing,
        Routing::SoftmaxThenTopK | Routing::Grouped { .. }
    ) {
        router.add("4TE", &[4, t, en])?;
        String::from("router: fp32 softmax (or sigmoid) over the experts, int32 offsets per expert")
    } else {
        String::from("router: int32 offsets per expert (the softmax is over the top k)")
    };
    router.add("4E", &[4, en])?;
    if cx.router_fp32 && tw && !ads.router {
        router.add("4Td", &[4, t, d])?;
        what_router.push_str(
            "; the fp32 copy of its input (`hidden.float()`, for the fp32 weight's gradient)",
        );
    }
    if ads.router {
        // peft's ParamWrapper: the router's input and its merged weight, fp32 where the
        // router reads `hidden.float()`.
        let w = if cx.router_fp32 { 4 } else { e };
        router.add(if cx.router_fp32 { "4Td" } else { "eTd" }, &[w, t, d])?;
        router.add(if cx.router_fp32 { "4dE" } else { "edE" }, &[w, d, en])?;
        what_router.push_str(
            "; LoRA on the router (peft ParamWrapper): its input and the merged weight W + B·A",
        );
    }
    push(parts, "moe_router", what_router, Place::Sharded, router);
    let mut routing = Sum::default();
    let mut what = vec!["routing: int64 top-k indices, token index, sort and inverse permutations"];
    // 32 bytes per routed row of int64 indices; then what the weights' path saves.
    let mut c: u128 = 32;
    match cx.routing {
        // The renormalisation (`w / w.sum(-1)`) saves the fp32 sum and the fp32 weights.
        Routing::SoftmaxThenTopK if cx.topk_renorm => {
            routing.add("4T", &[4, t])?;
            c = checked::add("c + 4", c, 4)?;
            what.push("the top-k renormalisation (fp32)");
        }
        Routing::SoftmaxThenTopK => {}
        Routing::Grouped { groups, top_groups } => {
            if cx.topk_renorm {
                routing.add("4T", &[4, t])?;
                c = checked::add("c + 4", c, 4)?;
                what.push("the top-k renormalisation (fp32)");
            }
            routing.add("16T·n_group", &[16, t, u128::from(groups)])?;
            routing.add("8T·topk_group", &[8, t, u128::from(top_groups)])?;
            routing.add("TE", &[t, en])?;
            what.push(
                "the groups' int64 top-2 and top-group indices, the bool mask over the experts",
            );
        }
        Routing::TopKThenSoftmax { logits_in_dtype } => {
            c = checked::add("c + softmax bytes", c, if logits_in_dtype { e } else { 4 })?;
            what.push(if logits_in_dtype {
                "the softmax over the top k (in the dtype)"
            } else {
                "the softmax over the top k (fp32)"
            });
        }
    }
    c = checked::add(
        "c + weight bytes",
        c,
        if cx.routing_in_dtype { e } else { 4 },
    )?;
    what.push(if cx.routing_in_dtype {
        "per-row weights in the dtype"
    } else {
        "fp32 per-row weights"
    });
    routing.add(format!("{c}Tk"), &[c, t, k])?;
    push(
        parts,
        "moe_routing",
        what.join("; "),
        Place::Replicated,
        routing,
    );
    Ok(())
}

/// The routed experts' rows (one per token and expert) and inner tensors, and `LoRA`'s
/// merged expert weights.
fn moe_experts(
    cx: &Cx<'_>,
    (en, k, fm): (u128, u128, u128),
    tw: bool,
    ads: &Ads,
    parts: &mut Vec<Part>,
) -> Result<(), SpecError> {
    let Dims { t, d, e, .. } = cx.dm;
    let mut rows = Sum::default();
    let mut inner = Sum::default();
    let mut row_items = Vec::new();
    let mut inner_items = vec![
        "gate_up output (saved by act through its views)",
        "act(gate)",
    ];
    if tw || ads.expert_gate_up.is_some() {
        rows.add("eTkd", &[e, t, k, d])?;
        row_items.push("the gathered inputs");
    }
    rows.add("eTkd", &[e, t, k, d])?;
    row_items.push("the down outputs");
    inner.add("3eTkFm", &[3, e, t, k, fm])?;
    if tw || ads.expert_down.is_some() {
        inner.add("eTkFm", &[e, t, k, fm])?;
        inner_items.push("act·up (down's input)");
    }
    push(
        parts,
        "experts",
        format!(
            "routed experts (grouped_mm), one row per (token, expert): {}",
            row_items.join(", ")
        ),
        Place::Replicated,
        rows,
    );
    push(
        parts,
        "experts_inner",
        format!(
            "routed experts at their inner width Fm: {}",
            inner_items.join(", ")
        ),
        Place::Sharded,
        inner,
    );
    let mut merged = Sum::default();
    merged_expert_weights(&mut merged, cx.dm, (en, fm), ads)?;
    push(
        parts,
        "experts_merged",
        "peft ParamWrapper on the 3-D expert tensors: the merged weights W + B·A, rebuilt and saved every forward, and the dtype copies of the LoRA factors",
        Place::Sharded,
        merged,
    );
    Ok(())
}

/// peft's `ParamWrapper` on the 3-D expert tensors (`E` experts of inner width `Fm`): the
/// merged weights `W + B·A`, rebuilt every forward, and the dtype copies of the factors.
fn merged_expert_weights(
    sum: &mut Sum,
    dm: Dims,
    (en, fm): (u128, u128),
    ads: &Ads,
) -> Result<(), Overflow> {
    let Dims { d, e, .. } = dm;
    if let Some(p) = ads.expert_gate_up {
        sum.add("2eEdFm", &[2, e, en, d, fm])?;
        sum.add("e·P_gate_up", &[e, p])?;
    }
    if let Some(p) = ads.expert_down {
        sum.add("eEdFm", &[e, en, d, fm])?;
        sum.add("e·P_down", &[e, p])?;
    }
    Ok(())
}

/// At the peak of a checkpointed layer: the experts put their weighted rows back in order
/// (`weighted_out[inv_perm]`), holding (beyond the layer inputs) the residual, the router's
/// input and logits, the routing tensors, the gathered inputs, the down outputs, the
/// weighted rows and their reordered copy.
fn moe_combine(cx: &Cx<'_>, (en, k, fm): (u128, u128, u128), ads: &Ads) -> Result<Sum, Overflow> {
    let Dims { t, d, e, .. } = cx.dm;
    let w = if cx.routing_in_dtype { e } else { 4 };
    let w36 = (Checked::new(w) * 2u128 + 36u128).get("2w + 36")?;
    let w28 = (Checked::new(w) * 2u128 + 28u128).get("2w + 28")?;
    let wp2 = checked::mul("2·max(w, e)", w.max(e), 2)?;
    let mut pk = Sum::default();
    // The residual stream: the layer's input and the attention block's output (one with
    // OLMo 2's output norms, whose attention output is normed in place of the stream).
    if cx.block_norms == BlockNorms::Output {
        pk.add("eTd", &[e, t, d])?;
    } else {
        pk.add("2eTd", &[2, e, t, d])?;
    }
    // The router's logits: fp32 where the router reads `hidden.float()`.
    if cx.router_fp32 {
        pk.add("4TE", &[4, t, en])?;
    } else {
        pk.add("eTE", &[e, t, en])?;
    }
    pk.add("2eTkd", &[2, e, t, k, d])?;
    // At the combine (the experts' outputs weighted and put back in order) or, with experts
    // wider than the model, at the down projection's grouped matmul.
    let combine = checked::add(
        "combine",
        checked::product("2·max(w, e)·Tkd", [wp2, t, k, d])?,
        checked::product("(2w + 36)Tk", [w36, t, k])?,
    )?;
    let down = checked::add(
        "down",
        checked::product("eTkFm", [e, t, k, fm])?,
        checked::product("(2w + 28)Tk", [w28, t, k])?,
    )?;
    if down > combine {
        pk.add("eTkF_m", &[e, t, k, fm])?;
        pk.add(format!("({w28})Tk"), &[w28, t, k])?;
    } else {
        pk.add(format!("({w36})Tk"), &[w36, t, k])?;
        pk.add(format!("{wp2}Tkd"), &[wp2, t, k, d])?;
    }
    pk.add("8E", &[8, en])?;
    merged_expert_weights(&mut pk, cx.dm, (en, fm), ads)?;
    Ok(pk)
}

/// `LoRA` adapters on `Linear` modules (peft: `result = base(x); x = x.to(fp32);
/// result += lora_B(lora_A(dropout(x))) * scaling`).
fn linear_adapters(
    cx: &Cx<'_>,
    plan: &Lora,
    lins: &[Lin],
    grads: InputGrads,
    out: &mut LayerOut,
) -> Result<(), SpecError> {
    let Dims { t, d, .. } = cx.dm;
    let r = u128::from(plan.rank);
    for lin in lins {
        let mut sum = Sum::default();
        sum.add("4T·n_in", &[4, t, lin.n_in])?;
        sum.add("4Tr", &[4, t, r])?;
        let mut what = format!(
            "{} adapter: its own fp32 copy of the input (n_in = {}), lora_A's r-wide output",
            lin.name,
            n(lin.n_in)
        );
        if plan.dropout && grads.of(lin.role) {
            if cx.cuda {
                sum.add("1T·n_in", &[1, t, lin.n_in])?;
                what.push_str(
                    ", the dropout's bool mask (CUDA, derived from the documented difference)",
                );
            } else {
                sum.add("4T·n_in", &[4, t, lin.n_in])?;
                what.push_str(", the dropout's fp32 noise (CPU)");
            }
        }
        if lin.role == Role::Qkv {
            out.before_scores =
                checked::add("saved before the scores", out.before_scores, sum.value)?;
        }
        let place = if lin.n_in == d {
            Place::Replicated
        } else {
            Place::Sharded
        };
        push(
            &mut out.parts,
            &format!("adapter.{}", lin.name),
            what,
            place,
            sum,
        );
    }
    Ok(())
}

fn norm_what(
    name: &str,
    style: NormStyle,
    grad_in: bool,
    trained: bool,
    out_saved: bool,
) -> String {
    let mut items = Vec::new();
    if grad_in {
        items.push("fp32 copy of its input");
        items.push("rsqrt");
        if style == NormStyle::Gemma {
            items.push("fp32 (1 + w)");
        }
    }
    if trained {
        items.push(match style {
            NormStyle::Llama => "the normalized tensor in the dtype (for w's gradient)",
            NormStyle::Gemma | NormStyle::Olmo => "the fp32 normalized tensor (for w's gradient)",
        });
    }
    if out_saved {
        items.push("its output (the next Linear's input)");
    }
    format!("{name}: {}", items.join(", "))
}

/// The shapes of a layer kind; `why` collects what is approximated.
fn shape(layer: &Layer, profile_window: bool, why: &mut Vec<String>) -> Result<Shape, Overflow> {
    let u = u128::from;
    let attention = match &layer.attention {
        Attention::Standard(a) | Attention::CacheOnly(a) => {
            if matches!(layer.attention, Attention::CacheOnly(_)) {
                why.push(
                    "a shared attention block's layers are counted as ordinary attention".into(),
                );
            }
            let q_dim = |nm: &Option<llmsize_core::spec::Norm>| nm.as_ref().map(|x| u(x.dim));
            Some(AttnShape {
                h: u(a.num_heads),
                kv: u(a.num_kv_heads),
                hd: u(a.head_dim),
                a: checked::mul(
                    "num_attention_heads·head_dim",
                    u(a.num_heads),
                    u(a.head_dim),
                )?,
                k: checked::mul(
                    "num_key_value_heads·head_dim",
                    u(a.num_kv_heads),
                    u(a.head_dim),
                )?,
                fused_qkv: a.fused_qkv,
                q_norm: q_dim(&a.q_norm),
                k_norm: q_dim(&a.k_norm),
                window: if profile_window {
                    layer.sliding_window.map(u)
                } else {
                    None
                },
            })
        }
        Attention::Latent(m) => {
            why.push(
                "latent (MLA) attention is counted as multi-head attention of its query/key width"
                    .into(),
            );
            let hd = checked::add(
                "qk_nope_head_dim + qk_rope_head_dim",
                u(m.qk_nope_head_dim),
                u(m.qk_rope_head_dim),
            )?;
            let a = checked::mul(
                "num_attention_heads·(qk_nope_head_dim + qk_rope_head_dim)",
                u(m.num_heads),
                hd,
            )?;
            Some(AttnShape {
                h: u(m.num_heads),
                kv: u(m.num_heads),
                hd,
                a,
                k: a,
                fused_qkv: false,
                q_norm: None,
                k_norm: None,
                window: None,
            })
        }
        Attention::Absent => {
            why.push("layers without attention (their mixer) are not derived".into());
            None
        }
    };
    if layer.cross_attention.is_some() {
        why.push("cross-attention is not counted".into());
    }
    if !layer.extras.is_empty() {
        why.push(
            "layer tensors outside attention and MLP (e.g. a state-space mixer) are not counted"
                .into(),
        );
    }
    let ffn = match &layer.ffn {
        Ffn::Dense(m) => FfnShape::Dense {
            f: u(m.intermediate),
            gated: m.gated,
        },
        Ffn::Moe(m) => {
            if m.shared.is_some()
                && !m
                    .shared
                    .is_some_and(|s| s.gated && !s.up_bias && !s.down_bias)
            {
                why.push("an ungated or biased shared expert is counted as a gated MLP beside the routed experts (not measured)".into());
            }
            if !m.router {
                why.push("a router network is counted as a single router matrix".into());
            }
            if !m.expert.gated {
                why.push("ungated experts are counted as gated ones".into());
            }
            FfnShape::Moe {
                experts: u(m.num_experts),
                k: u(m.experts_per_token),
                fm: u(m.expert.intermediate),
                gated: m.expert.gated,
                shared: m.shared.map(|x| u(x.intermediate)),
                shared_gate: m.shared_gate,
            }
        }
        Ffn::Absent => FfnShape::Absent,
    };
    Ok(Shape { attention, ffn })
}

/// The adapters of `plan` on each layer kind of the stack.
fn adapters_by_kind(
    plan: &Lora,
    stack: &llmsize_core::spec::Stack,
    why: &mut Vec<String>,
) -> Vec<Ads> {
    let kinds = stack.layers.kinds().len();
    let counts = stack.layers.kind_counts();
    let mut out = vec![Ads::default(); kinds];
    // Layers of each kind each module covers. The stack's runs and a module's ranges are
    // both in layer order, so one merge walk per module intersects them: runs + ranges
    // steps, never runs × ranges (a million alternating layers have half a million runs).
    let mut covered = vec![vec![0u64; plan.modules.len()]; kinds];
    let runs = stack.layers.runs();
    for (m, module) in plan.modules.iter().enumerate() {
        if module.stack.is_some_and(|r| r != stack.role) {
            continue;
        }
        let (mut runs, mut ranges) = (runs.iter().peekable(), module.layer_runs.iter().peekable());
        while let (Some(run), Some(range)) = (runs.peek(), ranges.peek()) {
            let run_end = run.range().end;
            let lo = range.start.max(run.start);
            let hi = range.end.min(run_end);
            if let Some(n) = hi.checked_sub(lo)
                && let Some(c) = covered.get_mut(run.kind).and_then(|v| v.get_mut(m))
            {
                // saturates: never, a kind's covered layers are at most its layers.
                *c = c.saturating_add(n);
            }
            if run_end <= range.end {
                runs.next();
            } else {
                ranges.next();
            }
        }
    }
    for (kind, ads) in out.iter_mut().enumerate() {
        let layers = counts.get(kind).map_or(0, |(_, c)| *c);
        for (m, module) in plan.modules.iter().enumerate() {
            let c = covered
                .get(kind)
                .and_then(|v| v.get(m))
                .copied()
                .unwrap_or(0);
            if c == 0 {
                continue;
            }
            if c < layers {
                why.push(format!(
                    "`{}` adapts part of a layer kind's layers; counted on all of them",
                    module.name
                ));
            }
            let role = match module.kind {
                TensorKind::AttnQ => {
                    ads.q = true;
                    Role::Qkv
                }
                TensorKind::AttnK => {
                    ads.k = true;
                    Role::Qkv
                }
                TensorKind::AttnV => {
                    ads.v = true;
                    Role::Qkv
                }
                TensorKind::AttnQkv => {
                    ads.q = true;
                    ads.k = true;
                    ads.v = true;
                    Role::Qkv
                }
                TensorKind::AttnOutput => {
                    ads.o = true;
                    Role::O
                }
                TensorKind::FfnGate => {
                    ads.gate = true;
                    // A fused `gate_up_proj` (Phi-3) adapts the up projection too.
                    ads.up |= module.fused_up;
                    Role::MlpIn
                }
                TensorKind::FfnUp => {
                    ads.up = true;
                    Role::MlpIn
                }
                TensorKind::FfnDown => {
                    ads.down = true;
                    Role::Down
                }
                TensorKind::Router => {
                    ads.router = true;
                    continue;
                }
                TensorKind::ExpertGate | TensorKind::ExpertUp => {
                    if ads.expert_gate_up.is_none() {
                        ads.expert_gate_up = Some(u128::from(module.params));
                    }
                    continue;
                }
                TensorKind::ExpertDown => {
                    if ads.expert_down.is_none() {
                        ads.expert_down = Some(u128::from(module.params));
                    }
                    continue;
                }
                TensorKind::SharedGate | TensorKind::SharedUp => {
                    ads.gate = true;
                    ads.up = true;
                    Role::MlpIn
                }
                TensorKind::SharedDown => Role::Down,
                _ => {
                    why.push(format!(
                        "the adapter on `{}` is counted as reading a grad-requiring input",
                        module.name
                    ));
                    Role::Other
                }
            };
            // One peft module per name (Phi-3's `gate_up_proj` adapts gate and up at once).
            if !ads.lin.iter().any(|l| l.name == module.name) {
                ads.lin.push(Lin {
                    name: module.name.clone(),
                    role,
                    n_in: u128::from(module.n_in),
                });
            }
        }
    }
    out
}

/// Terms of `count` layers of one part.
fn layer_term(
    part: &Part,
    count: u64,
    all: u64,
    kinds: bool,
    label: &str,
) -> Result<Term, SpecError> {
    let c = u128::from(count);
    let value = checked::mul(&format!("L·({})", part.sum.sym()), c, part.sum.value)?;
    let csym = if count == all && !kinds {
        "L".to_owned()
    } else {
        n(c)
    };
    let key = if label.is_empty() {
        part.key.clone()
    } else {
        format!("{}.{label}", part.key)
    };
    let per = if count == 1 {
        String::from(" (one layer)")
    } else {
        format!(" (per layer × {})", n(c))
    };
    let formula = if count == 1 {
        format!("{} = {}", part.sum.sym(), part.sum.val())
    } else {
        format!(
            "{csym}·({}) = {}·({})",
            part.sum.sym(),
            n(c),
            part.sum.val()
        )
    };
    Ok(Term::new(
        key,
        format!("{}{per}", part.what),
        formula,
        value,
    ))
}

fn once_term(part: &Part) -> Term {
    Term::new(
        part.key.clone(),
        part.what.clone(),
        format!("{} = {}", part.sum.sym(), part.sum.val()),
        part.sum.value,
    )
}

/// The activations of a family of this file.
pub(super) fn activations(input: &ActInput<'_>) -> Result<Activations, SpecError> {
    let lora = input
        .lora
        .map(|p| Lora::of(p, input.profile.map_or(&[][..], |x| x.modules)));
    compute(input, lora.as_ref())
}

/// The activations, with the adapters (if any) as [`Lora`] (`input.lora` is not read).
///
/// In phases: the step's sizes and switches ([`context`]), the layers of every stack
/// ([`walk_stacks`]), what lives outside the layers ([`outside_parts`], [`checkpointed`]),
/// and the forward's peak ([`loss_peak`], [`eager_peak`], [`experts_combine_peak`]).
fn compute(input: &ActInput<'_>, lora: Option<&Lora>) -> Result<Activations, SpecError> {
    let mut why: Vec<String> = Vec::new();
    let cx = context(input, lora, &mut why)?;
    if cx.math() && !input.checkpointing {
        // Measured with checkpointing (the last layer's math path at its dropout, beside the
        // checkpoint inputs); without it, what the math path's C++ locals and the layer's
        // saved tensors hold at that op was not separated (2.4 MB above this count on a
        // 512-token, 32-word-vocabulary Seed-OSS). Where the loss is larger it does not matter.
        why.push("the forward peak inside the CPU SDPA math path (attention dropout) without checkpointing is not derived: counted at the loss".into());
    }
    let full = lora.is_none();
    let emb_frozen = frozen_embeddings(input, full, &mut why);
    let tied = matches!(
        input.spec.head,
        llmsize_core::spec::OutputHead::Lm { tied: true, .. }
    );
    let head_trained = full && !(emb_frozen && tied);
    caveats(input, lora, cx.dm.e, &mut why);

    let mut walk = walk_stacks(&cx, input, emb_frozen, &mut why)?;
    let masks = attention_masks(&cx, walk.windows)?;
    let mut outside_parts = outside_parts(&cx, input, walk.head_dim, head_trained, &mut why)?;
    if input.checkpointing {
        checkpointed(&cx, input, &masks, &mut walk, &mut outside_parts)?;
        // The embedding is frozen under LoRA too (unless an adapter trains it).
        let frozen = emb_frozen
            || lora.is_some_and(|l| {
                !l.modules
                    .iter()
                    .any(|m| m.kind == TensorKind::TokenEmbedding)
            });
        if frozen && input.profile.is_some_and(|p| p.scaled_embedding_output) {
            // `enable_input_require_grads` makes the frozen embedding's output a
            // grad-requiring leaf; the scaling's `MulBackward0` holds it through its
            // `AccumulateGrad`, beside layer 0's (scaled) input.
            let Dims { t, d, e, .. } = cx.dm;
            let mut leaf = Sum::default();
            leaf.add("eTd", &[e, t, d])?;
            push(
                &mut outside_parts,
                "ckpt_embedding_leaf",
                "the token embedding output, a grad-requiring leaf (enable_input_require_grads) held by the scaling's backward",
                Place::Outside,
                leaf,
            );
        }
    }
    let outside = checked::sum(
        "activations outside the layers",
        outside_parts.iter().map(|p| p.sum.value),
    )?;
    walk.terms.extend(outside_parts.iter().map(once_term));
    let retained = checked::sum("activations", [walk.sharded, walk.replicated, outside])?;

    // The forward's peak: the largest of (1) the loss, where the logits, their fp32 upcast and
    // the fp32 log-probs are alive together, (2) the last layer's eager softmax, (3) the last
    // MoE layer putting its experts' rows back in order (checkpointed).
    let mut best = loss_peak(&cx, retained, head_trained)?;
    if let Some(lo) = &walk.last {
        let rope = outside_parts
            .iter()
            .find(|p| p.key == "rope")
            .map_or(0, |p| p.sum.value);
        let alive = alive_at_last_layer(&cx, input, &walk, lo, rope, &masks)?;
        let eager = eager_peak(&cx, input.checkpointing, lo, &alive)?;
        let combine = experts_combine_peak(input.checkpointing, lo, &alive)?;
        for candidate in [eager, combine].into_iter().flatten() {
            if candidate.0 > best.0 {
                best = candidate;
            }
        }
    }
    let (forward_peak, mut peak_terms) = best;
    peak_terms.retain(|x| x.value > 0);
    why.sort();
    why.dedup();
    Ok(Activations {
        retained,
        forward_peak,
        terms: walk.terms,
        peak_terms,
        estimate: (!why.is_empty()).then(|| why.join("; ")),
        layer_sharded: walk.sharded,
        layer_replicated: walk.replicated,
        outside,
        layers: walk.layers,
    })
}

/// The step's sizes and switches, from the input and the family's profile.
fn context<'a>(
    input: &ActInput<'_>,
    lora: Option<&'a Lora>,
    why: &mut Vec<String>,
) -> Result<Cx<'a>, SpecError> {
    let spec = input.spec;
    let u = u128::from;
    let dm = Dims {
        b: u(input.batch),
        s: u(input.seq),
        t: checked::mul("b·s", u(input.batch), u(input.seq))?,
        d: u(spec.hidden_size),
        v: u(spec.vocab_size),
        e: u(input.dtype.bytes()),
    };
    let eager = super::attention_run(input, why) == AttnImpl::Eager;
    let attention_dropout = input.profile.is_some_and(|p| p.attention_dropout);
    let norm_style = match input.profile.map(|p| p.norm).unwrap_or_default() {
        NormCode::Gemma | NormCode::Fp32Weight => NormStyle::Gemma,
        NormCode::Olmo => NormStyle::Olmo,
        NormCode::Llama => NormStyle::Llama,
    };
    Ok(Cx {
        dm,
        block_norms: input.profile.map(|p| p.block_norms).unwrap_or_default(),
        attn_softcap: input.profile.is_some_and(|p| p.attn_softcap),
        logit_softcap: input.profile.is_some_and(|p| p.logit_softcap),
        norm_style,
        eager,
        cuda: input.device == Device::Cuda,
        attention_dropout,
        hidden_dropout: input.profile.is_some_and(|p| p.hidden_dropout),
        routing_in_dtype: input.profile.is_some_and(|p| p.routing_weights_in_dtype),
        topk_renorm: input.profile.is_none_or(|p| p.topk_renormalized),
        routing: input.profile.map(|p| p.routing).unwrap_or_default(),
        rope_cat: input.profile.is_some_and(|p| p.rope_concatenated),
        rope_copies: input.profile.and_then(|p| match p.rope_tables {
            RopeTables::Interleaved => p
                .rotary_dims
                .map(|r| (u128::from(r), if p.rotary_fp32 { 4 } else { dm.e })),
            RopeTables::Shared => None,
        }),
        q_scale: input.profile.is_some_and(|p| p.q_position_scale),
        sub_norms: input.profile.is_some_and(|p| p.sub_norms),
        router_fp32: input.spec.facts.router_fp32,
        lora,
    })
}

/// Whether full fine-tuning freezes the embeddings; any other `--freeze` is not derived for
/// activations (counted as full fine-tuning, and said in `why`).
fn frozen_embeddings(input: &ActInput<'_>, full: bool, why: &mut Vec<String>) -> bool {
    let mut emb_frozen = false;
    if full {
        for f in input.frozen {
            match f {
                FreezePart::Embeddings => emb_frozen = true,
                other => why.push(format!(
                    "`--freeze {}` is not derived for activations: counted as full fine-tuning",
                    match other {
                        FreezePart::Attention => "attention",
                        FreezePart::Mlp => "mlp",
                        FreezePart::Norms => "norms",
                        FreezePart::Head => "head",
                        FreezePart::Embeddings => "embeddings",
                    }
                )),
            }
        }
    }
    emb_frozen
}

/// What the arithmetic approximates of the adapters (`e`: the dtype's bytes) and of the
/// model's stacks and head.
fn caveats(input: &ActInput<'_>, lora: Option<&Lora>, e: u128, why: &mut Vec<String>) {
    let spec = input.spec;
    if let Some(plan) = lora {
        if e == 4 {
            why.push("LoRA on an fp32 base is not measured (the adapters' fp32 input copies are the input itself)".into());
        }
        if plan.dora {
            why.push("DoRA's magnitude and weight-norm tensors are not counted".into());
        }
    }
    // The decoder stack; any other stacks (an encoder, a cross-attending decoder) are counted
    // as decoder layers.
    let plain = matches!(spec.stacks.as_slice(), [only] if only.role == StackRole::Decoder);
    if !plain {
        why.push("only a decoder-only stack is derived; every stack's layers are counted as decoder layers".into());
    }
    if !matches!(spec.head, llmsize_core::spec::OutputHead::Lm { .. }) {
        why.push("a model without a language-model head is counted with one".into());
    }
}

/// Which attention the layers have, for the masks.
#[derive(Debug, Clone, Copy, Default)]
struct Windows {
    /// Some layer attends globally.
    global: bool,
    /// Some layer has a sliding window.
    sliding: bool,
    /// Some sliding window is shorter than the sequence.
    bites: bool,
}

/// The layers of every stack, walked once.
#[derive(Debug, Default)]
struct Walk {
    /// Layers of the stacks.
    layers: u64,
    /// The layers' bytes at a width tensor parallelism divides.
    sharded: u128,
    /// The layers' bytes at the full width.
    replicated: u128,
    /// The layers' terms.
    terms: Vec<Term>,
    /// Saved bytes of every layer (without checkpointing).
    bytes: u128,
    /// The last layer.
    last: Option<LayerOut>,
    /// Layer 0's input is itself saved.
    first_input_saved: bool,
    windows: Windows,
    /// The first attention's head width (the rotary width where the profile names none).
    head_dim: Option<u128>,
}

impl Walk {
    /// Notes the attention of a stack's layer kinds.
    fn note_attention(&mut self, shapes: &[Shape], s: u128) {
        for a in shapes.iter().filter_map(|sh| sh.attention.as_ref()) {
            self.head_dim.get_or_insert(a.hd);
            match a.window {
                Some(w) => {
                    self.windows.sliding = true;
                    self.windows.bites |= s > w;
                }
                None => self.windows.global = true,
            }
        }
    }

    /// Adds `count` layers like `lo`, and layer 0 as `lo0` where it differs, to the saved
    /// bytes and to `entries` (`label`: the layer kind's, where kinds differ).
    fn save(
        &mut self,
        entries: &mut Vec<(u64, Part, String)>,
        count: u64,
        (lo, lo0): (&LayerOut, Option<&LayerOut>),
        label: &str,
    ) -> Result<(), SpecError> {
        let per = lo.value()?;
        self.bytes = (Checked::new(self.bytes) + Checked::new(u128::from(count)) * per)
            .get("saved bytes of the layers")?;
        for p in &lo.parts {
            merge(entries, count, p, label);
        }
        if let Some(l0) = lo0 {
            self.bytes = checked::add("saved bytes of the layers", self.bytes, l0.value()?)?;
            for p in &l0.parts {
                if lo.parts.contains(p) {
                    merge(entries, 1, p, label);
                } else {
                    let mut p = p.clone();
                    p.key = format!("layer0.{}", p.key);
                    p.what = format!("layer 0 (its input needs no grad): {}", p.what);
                    merge(entries, 1, &p, "");
                }
            }
        }
        Ok(())
    }

    /// The terms of a stack of `all` layers, from its merged `entries`.
    fn add_terms(
        &mut self,
        entries: &[(u64, Part, String)],
        all: u64,
        kinds_differ: bool,
    ) -> Result<(), SpecError> {
        for (count, part, label) in entries {
            let t = layer_term(part, *count, all, kinds_differ, label)?;
            match part.place {
                Place::Sharded => {
                    self.sharded = checked::add("sharded layer bytes", self.sharded, t.value)?;
                }
                _ => {
                    self.replicated =
                        checked::add("replicated layer bytes", self.replicated, t.value)?;
                }
            }
            self.terms.push(t);
        }
        Ok(())
    }
}

/// The layers of every stack with layers.
fn walk_stacks(
    cx: &Cx<'_>,
    input: &ActInput<'_>,
    emb_frozen: bool,
    why: &mut Vec<String>,
) -> Result<Walk, SpecError> {
    let mut walk = Walk::default();
    for stack in input.spec.stacks.iter().filter(|st| !st.layers.is_empty()) {
        walk_stack(cx, input, stack, emb_frozen, &mut walk, why)?;
    }
    Ok(walk)
}

/// One stack's layers, kind by kind, added to `walk`: one layer of each kind, and layer 0
/// apart where its input needs no grad.
fn walk_stack(
    cx: &Cx<'_>,
    input: &ActInput<'_>,
    stack: &llmsize_core::spec::Stack,
    emb_frozen: bool,
    walk: &mut Walk,
    why: &mut Vec<String>,
) -> Result<(), SpecError> {
    let full = cx.lora.is_none();
    let ckpt = input.checkpointing;
    let profile_window = input.profile.is_none_or(|p| p.sliding_window_applies);
    let runs = stack.layers.runs();
    let counts = stack.layers.kind_counts();
    let all = stack.layers.len();
    walk.layers = checked::add("layers of the stacks", walk.layers, all)?;
    let shapes: Vec<Shape> = counts
        .iter()
        .map(|(l, _)| shape(l, profile_window, why))
        .collect::<Result<_, _>>()?;
    walk.note_attention(&shapes, cx.dm.s);
    let ads: Vec<Ads> = match cx.lora {
        Some(plan) => adapters_by_kind(plan, stack, why),
        None => vec![Ads::default(); shapes.len()],
    };
    let first_kind = runs.first().map_or(0, |r| r.kind);
    let last_kind = runs.last().map_or(0, |r| r.kind);
    // Layer 0's input requires grad under full fine-tuning (unless the embeddings are
    // frozen); under LoRA nothing before the first adapter does.
    let first_grad = full && !emb_frozen;
    let layer0_differs = !ckpt && !first_grad;
    if cx.lora.is_some()
        && let Some(a0) = ads.get(first_kind)
        && !a0.any()
    {
        why.push("layer 0 has no adapter: the layers after it are counted as if their input required grad".into());
    }
    let kinds_differ = shapes.len() > 1;
    // (count, part, label) of the stack's layers, merging equal parts of different kinds.
    let mut entries: Vec<(u64, Part, String)> = Vec::new();
    for (kind, ((_, count), sh)) in counts.iter().zip(&shapes).enumerate() {
        let a = ads.get(kind).cloned().unwrap_or_default();
        let lo = layer(cx, sh, full, true, &a)?;
        let mut count = *count;
        let lo0 = if layer0_differs && kind == first_kind {
            // The first kind holds layer 0: its count is at least 1.
            count = count.saturating_sub(1);
            Some(layer(cx, sh, full, false, &a)?)
        } else {
            None
        };
        if kind == first_kind {
            walk.first_input_saved = lo0.as_ref().map_or(lo.input_saved, |x| x.input_saved);
        }
        let label = if kinds_differ {
            kind_label(&shapes, kind)
        } else {
            String::new()
        };
        if !ckpt {
            walk.save(&mut entries, count, (&lo, lo0.as_ref()), &label)?;
        }
        if kind == last_kind {
            // The last layer is layer 0 only for a one-layer model.
            walk.last = Some(match lo0 {
                Some(l0) if all == 1 => l0,
                _ => lo,
            });
        }
    }
    walk.add_terms(&entries, all, kinds_differ)
}

/// The attention masks and their description: eager materializes a dtype mask per mask kind
/// (full, sliding); SDPA a bool mask only where a sliding window is shorter than the sequence.
fn attention_masks(cx: &Cx<'_>, w: Windows) -> Result<(Sum, &'static str), Overflow> {
    let Dims { b, s, e, .. } = cx.dm;
    let mask_kinds: u128 = if w.global && w.sliding {
        2
    } else {
        u128::from(w.global || w.sliding)
    };
    let mut masks = Sum::default();
    if cx.eager && mask_kinds > 1 {
        masks.add(format!("{mask_kinds}·e·b·s²"), &[mask_kinds, e, b, s, s])?;
    } else if cx.eager {
        masks.add("e·b·s²", &[e, b, s, s])?;
    } else if w.bites {
        masks.add("b·s²", &[b, s, s])?;
    }
    let what = if cx.eager {
        "the additive attention mask(s) in the dtype (one per kind: full, sliding)"
    } else {
        "the bool sliding-window mask (s > window)"
    };
    Ok((masks, what))
}

/// Whether the family rotates q and k (without a profile: assumed).
fn rotary(input: &ActInput<'_>) -> bool {
    input.profile.is_none_or(|p| p.rotary_dims.is_some())
}

/// What lives outside the layers: rotary cos and sin, the final norm, the loss and an
/// adapter on the output head. `head_dim`: the first attention's (the rotary width where
/// the profile names none).
fn outside_parts(
    cx: &Cx<'_>,
    input: &ActInput<'_>,
    head_dim: Option<u128>,
    head_trained: bool,
    why: &mut Vec<String>,
) -> Result<Vec<Part>, SpecError> {
    let Dims { s, e, .. } = cx.dm;
    let mut parts: Vec<Part> = Vec::new();
    let rope_dims = input
        .profile
        .and_then(|p| p.rotary_dims)
        .map(u128::from)
        .or(head_dim);
    // Interleaved tables are copied in every layer; the model's own are kept only by a
    // checkpoint's recompute closure.
    let interleaved = cx.rope_copies.map(|(_, el)| el);
    if rotary(input)
        && let Some(r) = rope_dims
        && (interleaved.is_none() || input.checkpointing)
    {
        let el = match interleaved {
            Some(el) => el,
            None if input.profile.is_some_and(|p| p.rotary_fp32) => 4,
            None => e,
        };
        let tables = u128::from(input.profile.map_or(1, |p| p.rotary_tables.max(1)));
        let mut sum = Sum::default();
        let sym = if el == 4 && e != 4 {
            "2·s·r·4"
        } else {
            "2·s·r·e"
        };
        if tables > 1 {
            sum.add(format!("{tables}·{sym}"), &[tables, 2, s, r, el])?;
        } else {
            sum.add(sym, &[2, s, r, el])?;
        }
        push(
            &mut parts,
            "rope",
            "rotary cos and sin, computed once and shared by every layer",
            Place::Outside,
            sum,
        );
    }
    // Gemma's sqrt(d) normalizer (the scaled embedding's `embed_scale` buffer, in the dtype)
    // is saved by the embedding's multiply, but it exists before the step: the truth's
    // retained bytes and peak never count it (its saved bytes do: `e`), nor does this file.
    stream_norm(
        cx,
        &mut parts,
        ("final_norm", "the final RMSNorm"),
        Place::Outside,
        true,
        cx.lora.is_none(),
        head_trained,
    )?;
    loss_parts(cx, &mut parts)?;
    // An adapter on the output head (named in --lora-targets): its fp32 input copy and
    // lora_A's output, as any adapter's; not measured.
    if let Some(plan) = cx.lora {
        head_adapters(cx, plan, &mut parts, why)?;
    }
    Ok(parts)
}

/// The loss: Gemma 2's soft-capped logits, the log-probs, labels and output, and the loss
/// the step returns.
fn loss_parts(cx: &Cx<'_>, parts: &mut Vec<Part>) -> Result<(), SpecError> {
    let Dims { b, s, t, v, e, .. } = cx.dm;
    if cx.logit_softcap {
        let mut sum = Sum::default();
        sum.add("eTV", &[e, t, v])?;
        push(
            parts,
            "logit_softcap",
            "tanh of the soft-capped logits",
            Place::Outside,
            sum,
        );
    }
    let mut sum = Sum::default();
    sum.add("4TV", &[4, t, v])?;
    if b == 1 {
        sum.add("8(s+1)", &[8, checked::add("s + 1", s, 1)?])?;
    } else {
        sum.add("8T", &[8, t])?;
    }
    sum.add("4", &[4])?;
    push(
        parts,
        "loss",
        if b == 1 {
            "loss: fp32 log-probs of the upcast logits, the padded labels (the shifted view is contiguous, so all s+1), nll output"
        } else {
            "loss: fp32 log-probs of the upcast logits, the shifted labels, nll output"
        },
        Place::Outside,
        sum,
    );
    let mut sum = Sum::default();
    sum.add("4", &[4])?;
    push(
        parts,
        "loss_scalar",
        "the loss the step returns (fp32 scalar)",
        Place::Outside,
        sum,
    );
    Ok(())
}

/// Adapters on the output head: each one's fp32 input copy, `lora_A`'s output and its
/// dropout's noise.
fn head_adapters(
    cx: &Cx<'_>,
    plan: &Lora,
    parts: &mut Vec<Part>,
    why: &mut Vec<String>,
) -> Result<(), SpecError> {
    let t = cx.dm.t;
    let u = u128::from;
    for m in plan.modules.iter().filter(|m| m.kind == TensorKind::Output) {
        let mut sum = Sum::default();
        sum.add("4T·n_in", &[4, t, u(m.n_in)])?;
        sum.add("4Tr", &[4, t, u(plan.rank)])?;
        if plan.dropout {
            let noise = if cx.cuda { 1 } else { 4 };
            sum.add(format!("{noise}T·n_in"), &[noise, t, u(m.n_in)])?;
        }
        push(
            parts,
            "adapter.lm_head",
            format!(
                "{} adapter: its own fp32 copy of the input, lora_A's r-wide output",
                m.name
            ),
            Place::Outside,
            sum,
        );
        why.push("an adapter on the output head is not measured (its fp32 [T, V] output in the peak is not counted)".into());
    }
    Ok(())
}

/// Under checkpointing: the recompute closure keeps the position ids and the masks, and the
/// layers keep only their inputs (their own tensors are recomputed in backward, so their
/// terms give way to one).
fn checkpointed(
    cx: &Cx<'_>,
    input: &ActInput<'_>,
    (masks, masks_what): &(Sum, &str),
    walk: &mut Walk,
    outside_parts: &mut Vec<Part>,
) -> Result<(), SpecError> {
    let Dims { s, t, d, e, .. } = cx.dm;
    let mut ids = Sum::default();
    if rotary(input) {
        ids.add("8s", &[8, s])?;
    }
    push(
        outside_parts,
        "position_ids",
        "int64 position ids, kept by the checkpoint's recompute closure",
        Place::Outside,
        ids,
    );
    push(
        outside_parts,
        "masks",
        format!("{masks_what}, kept by the checkpoint's recompute closure"),
        Place::Outside,
        masks.clone(),
    );
    let mut inputs = Sum::default();
    inputs.add("L·eTd", &[u128::from(walk.layers), e, t, d])?;
    walk.replicated = inputs.value;
    walk.sharded = 0;
    walk.terms.clear();
    walk.terms.push(Term::new(
        "layer_inputs",
        "one [b, s, d] input per decoder layer, saved by the non-reentrant checkpoint (the layers' own tensors are recomputed in backward)",
        format!("{} = {}", inputs.sym(), inputs.val()),
        inputs.value,
    ));
    Ok(())
}

/// The peak at the loss: everything retained, the logits, their fp32 upcast, batch > 1's
/// padded labels and a frozen head's final norm output.
fn loss_peak(
    cx: &Cx<'_>,
    retained: u128,
    head_trained: bool,
) -> Result<(u128, Vec<Term>), SpecError> {
    let Dims { b, s, t, d, v, e } = cx.dm;
    let mut loss_peak = vec![Term::new(
        "retained",
        "everything kept for backward",
        n(retained),
        retained,
    )];
    let mut logits = Sum::default();
    logits.add("eTV", &[e, t, v])?;
    loss_peak.push(Term::new(
        "logits",
        "the logits in the dtype (alive at log_softmax)",
        format!("{} = {}", logits.sym(), logits.val()),
        logits.value,
    ));
    if cx.dm.upcast() > 0 {
        let mut up = Sum::default();
        up.add("4TV", &[4, t, v])?;
        loss_peak.push(Term::new(
            "logits_fp32",
            "their fp32 upcast (`logits.float()`)",
            format!("{} = {}", up.sym(), up.val()),
            up.value,
        ));
    }
    if b > 1 {
        let mut lab = Sum::default();
        lab.add("8b(s+1)", &[8, b, checked::add("s + 1", s, 1)?])?;
        loss_peak.push(Term::new(
            "labels_padded",
            "the padded labels (a transient for batch > 1)",
            format!("{} = {}", lab.sym(), lab.val()),
            lab.value,
        ));
    }
    if !head_trained {
        let mut fo = Sum::default();
        fo.add("eTd", &[e, t, d])?;
        loss_peak.push(Term::new(
            "final_norm_output",
            "the final norm's output, not saved for a frozen head but alive at the loss",
            format!("{} = {}", fo.sym(), fo.val()),
            fo.value,
        ));
    }
    let value = checked::sum("peak at the loss", loss_peak.iter().map(|x| x.value))?;
    Ok((value, loss_peak))
}

/// What is alive at a peak inside the last layer `lo`, beside that layer's own tensors: the
/// tensors made before the layers (rope of `rope` bytes, position ids, the masks; Gemma's
/// normalizer is not counted), and the layers' — checkpointed, every layer's input; else
/// what the earlier layers saved and the inputs alive as locals.
fn alive_at_last_layer(
    cx: &Cx<'_>,
    input: &ActInput<'_>,
    walk: &Walk,
    lo: &LayerOut,
    rope: u128,
    (masks, masks_what): &(Sum, &str),
) -> Result<Vec<Term>, SpecError> {
    let Dims { s, t, d, e, .. } = cx.dm;
    let l = u128::from(walk.layers);
    let mut alive = vec![Term::new("rope", "rotary cos and sin", n(rope), rope)];
    alive.push(Term::new(
        "position_ids",
        "int64 position ids",
        format!("8s = 8·{}", n(s)),
        if rotary(input) {
            checked::mul("8s", 8, s)?
        } else {
            0
        },
    ));
    alive.push(Term::new(
        "masks",
        *masks_what,
        format!("{} = {}", masks.sym(), masks.val()),
        masks.value,
    ));
    if input.checkpointing {
        alive.push(Term::new(
            "layer_inputs",
            "every layer's checkpointed input",
            format!("L·eTd = {}·{}·{}·{}", n(l), e, n(t), n(d)),
            checked::product("L·eTd", [l, e, t, d])?,
        ));
        return Ok(alive);
    }
    // Every layer's saved tensors but the last's, the inputs alive as locals.
    let last_value = lo.value()?;
    let before = checked::sub(
        "saved by the layers − the last layer",
        walk.bytes,
        last_value,
    )?;
    alive.push(Term::new(
        "earlier_layers",
        "what the earlier layers saved",
        n(before),
        before,
    ));
    let etd = checked::product("eTd", [e, t, d])?;
    let alive_inputs = [!walk.first_input_saved, l > 1 && !lo.input_saved];
    let inputs = checked::sum(
        "eTd of the inputs alive",
        alive_inputs.iter().filter(|&&a| a).map(|_| etd),
    )?;
    alive.push(Term::new(
        "inputs",
        "the embedding output and the last layer's input, alive as locals",
        n(inputs),
        inputs,
    ));
    Ok(alive)
}

/// The peak at the last layer's eager softmax (with `alive` beside it), where there is one.
fn eager_peak(
    cx: &Cx<'_>,
    ckpt: bool,
    lo: &LayerOut,
    alive: &[Term],
) -> Result<Option<(u128, Vec<Term>)>, SpecError> {
    if !((cx.eager || cx.math()) && lo.scores > 0) {
        return Ok(None);
    }
    let mut terms_eager = alive.to_vec();
    if ckpt {
        terms_eager.push(Term::new(
            "norm_output",
            "the last layer's input norm output",
            format!("{} = {}", lo.norm_out.sym(), lo.norm_out.val()),
            lo.norm_out.value,
        ));
    } else {
        terms_eager.push(Term::new(
            "saved_before_scores",
            "what the last layer saved before its scores (norms, adapters)",
            n(lo.before_scores),
            lo.before_scores,
        ));
        terms_eager.push(Term::new(
            "tanh",
            "tanh of the soft-capped scores",
            n(lo.tanh),
            lo.tanh,
        ));
    }
    if !ckpt {
        terms_eager.push(Term::new(
            "folded",
            "q and k copied by the matmul to fold [b, H] (saved for backward)",
            format!("{} = {}", lo.folded.sym(), lo.folded.val()),
            lo.folded.value,
        ));
    }
    terms_eager.push(Term::new(
        "operands",
        "q and k after RoPE, v (k and v repeated to H heads with fewer KV heads)",
        format!("{} = {}", lo.operands.sym(), lo.operands.val()),
        lo.operands.value,
    ));
    let e = cx.dm.e;
    let at_softmax = (Checked::new(e) + 4u128 + cx.dm.upcast()).get("e + 4 + conv")?;
    // With attention dropout the dropout is the largest op: the fp32 softmax, its cast (a
    // no-op in fp32), the noise and the dropped probabilities (the math path: all fp32, and
    // the fp32 scores the softmax read).
    let cast = if e == 4 { 0 } else { e };
    let at_dropout = (Checked::new(4u128) + cast + cx.noise() + e).get("4 + e + noise + e")?;
    let c = if cx.math() {
        12
    } else if cx.attention_dropout {
        at_softmax.max(at_dropout)
    } else {
        at_softmax
    };
    terms_eager.push(Term::new(
        "scores",
        "the last layer's scores at its softmax: scores (after the mask), their fp32 copy, the fp32 softmax",
        format!("{c}·bHs² = {c}·{}", n(lo.scores)),
        checked::mul(&format!("{c}·bHs²"), c, lo.scores)?,
    ));
    let value = checked::sum("peak at the softmax", terms_eager.iter().map(|x| x.value))?;
    Ok(Some((value, terms_eager)))
}

/// The peak of a checkpointed last `MoE` layer putting its experts' rows back in order (with
/// `alive` beside it), where there is one.
fn experts_combine_peak(
    ckpt: bool,
    lo: &LayerOut,
    alive: &[Term],
) -> Result<Option<(u128, Vec<Term>)>, Overflow> {
    let Some(pk) = lo.moe_peak.as_ref().filter(|_| ckpt) else {
        return Ok(None);
    };
    let mut terms_moe = alive.to_vec();
    terms_moe.push(Term::new(
        "experts_combine",
        "the last MoE layer putting its experts' rows back in order: the residual and the router input, logits, routing tensors, gathered inputs, down outputs, weighted rows and their reordered copy (and LoRA's merged expert weights)",
        format!("{} = {}", pk.sym(), pk.val()),
        pk.value,
    ));
    let value = checked::sum(
        "peak at the experts' combine",
        terms_moe.iter().map(|x| x.value),
    )?;
    Ok(Some((value, terms_moe)))
}

fn merge(entries: &mut Vec<(u64, Part, String)>, count: u64, part: &Part, label: &str) {
    if count == 0 {
        return;
    }
    if let Some(e) = entries.iter_mut().find(|(_, p, _)| p == part) {
        // saturates: never, merged counts are layers of one stack, a u64.
        e.0 = e.0.saturating_add(count);
        if e.2 != label {
            // The same tensors in layers of different kinds: one term for both.
            e.2 = String::new();
        }
    } else {
        entries.push((count, part.clone(), label.to_owned()));
    }
}

fn kind_label(shapes: &[Shape], kind: usize) -> String {
    let name = |sh: &Shape| {
        let window = sh.attention.as_ref().and_then(|a| a.window);
        let moe = matches!(sh.ffn, FfnShape::Moe { .. });
        match (window, moe, sh.attention.is_some()) {
            (Some(_), true, _) => "sliding_moe",
            (Some(_), false, _) => "sliding",
            (None, true, true) => "moe",
            (None, false, true) => "global",
            (None, _, false) => "no_attention",
        }
    };
    let Some(sh) = shapes.get(kind) else {
        return kind.to_string();
    };
    let l = name(sh);
    if shapes.iter().filter(|x| name(x) == l).count() > 1 {
        format!("{l}{kind}")
    } else {
        l.to_owned()
    }
}

#[cfg(test)]
mod tests {
    //! Every expected figure is a measurement of the ground truth: `train.json` (visible
    //! models) or `holdout.json` (models held back), `runs[]` / `lora_runs[]`,
    //! `retained_bytes` and `forward_peak_bytes`, CPU kernels.

    #![allow(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::indexing_slicing,
        clippy::too_many_arguments,
        reason = "a test fails loudly"
    )]

    use super::*;
    use crate::ParamDtype;
    use crate::activations::activations as dispatch;
    use llmsize_core::design::{Design, Style, design_spec};
    use llmsize_core::facts::LLAMA_MODULES;
    use llmsize_core::profile::TrainingProfile;
    use llmsize_core::spec::{Layers, Mlp, ModelSpec, Moe, Norm, OutputHead, StandardAttention};

    /// The layer codes these tests build, as the adapter's profiles declare them.
    #[derive(Clone, Copy, PartialEq, Eq)]
    enum Fam {
        Llama,
        Phi3,
        Gemma,
        Gemma2,
        Olmo2,
    }

    #[allow(clippy::struct_excessive_bools, reason = "a model's switches")]
    #[derive(Clone, Copy)]
    struct M {
        d: u64,
        layers: u64,
        vocab: u64,
        heads: u64,
        kv: u64,
        hd: u64,
        ffn: u64,
        /// (experts, top-k) for an MoE (ffn is then the expert width).
        moe: Option<(u64, u64)>,
        /// Sliding window on every layer (`Some`), on even layers (`alternate`).
        window: Option<u64>,
        alternate: bool,
        fused: bool,
        /// Per-head q/k norms (Qwen3).
        qk_norm: bool,
        /// Full-width q/k norms (`OLMo` 2).
        qk_full: bool,
        /// Top-k routing weights in the dtype (Qwen3-MoE).
        routing_in_dtype: bool,
        norms: usize,
        tied: bool,
        style: Fam,
    }

    const LLAMA2: M = M {
        d: 4096,
        layers: 32,
        vocab: 32000,
        heads: 32,
        kv: 32,
        hd: 128,
        ffn: 11008,
        moe: None,
        window: None,
        alternate: false,
        fused: false,
        qk_norm: false,
        qk_full: false,
        routing_in_dtype: false,
        norms: 2,
        tied: false,
        style: Fam::Llama,
    };
    const MISTRAL: M = M {
        kv: 8,
        ffn: 14336,
        window: Some(4096),
        ..LLAMA2
    };
    const MIXTRAL: M = M {
        kv: 8,
        ffn: 14336,
        moe: Some((8, 2)),
        ..LLAMA2
    };
    const PHI3: M = M {
        d: 3072,
        vocab: 32064,
        hd: 96,
        ffn: 8192,
        window: Some(2047),
        fused: true,
        style: Fam::Phi3,
        ..LLAMA2
    };
    const GEMMA2_9B: M = M {
        d: 3584,
        layers: 42,
        vocab: 256_000,
        heads: 16,
        kv: 8,
        hd: 256,
        ffn: 14336,
        window: Some(4096),
        alternate: true,
        norms: 4,
        tied: true,
        style: Fam::Gemma2,
        ..LLAMA2
    };
    const QWEN25_7B: M = M {
        d: 3584,
        layers: 28,
        vocab: 152_064,
        heads: 28,
        kv: 4,
        hd: 128,
        ffn: 18944,
        ..LLAMA2
    };
    // Held-out models.
    const GEMMA_2B: M = M {
        d: 2048,
        layers: 18,
        vocab: 256_000,
        heads: 8,
        kv: 1,
        hd: 256,
        ffn: 16384,
        tied: true,
        style: Fam::Gemma,
        ..LLAMA2
    };
    const QWEN3_1_7B: M = M {
        d: 2048,
        layers: 28,
        vocab: 151_936,
        heads: 16,
        kv: 8,
        hd: 128,
        ffn: 6144,
        qk_norm: true,
        tied: true,
        ..LLAMA2
    };

    fn spec(m: M) -> ModelSpec {
        let mut spec = design_spec(
            &Design {
                hidden: m.d,
                layers: m.layers,
                vocab: Some(m.vocab),
                heads: Some(m.heads),
                kv_heads: Some(m.kv),
                ffn: Some(m.ffn),
                ctx: Some(4096),
            },
            Style::Llama,
        )
        .unwrap();
        let mlp = Mlp {
            hidden: m.d,
            intermediate: m.ffn,
            gated: true,
            up_bias: false,
            down_bias: false,
        };
        let layer = |window: Option<u64>| Layer {
            attention: Attention::Standard(StandardAttention {
                hidden: m.d,
                num_heads: m.heads,
                num_kv_heads: m.kv,
                head_dim: m.hd,
                fused_qkv: m.fused,
                q_bias: false,
                k_bias: false,
                v_bias: false,
                o_bias: false,
                q_norm: if m.qk_full {
                    Some(Norm::rms_norm(m.heads * m.hd))
                } else {
                    m.qk_norm.then(|| Norm::rms_norm(m.hd))
                },
                k_norm: if m.qk_full {
                    Some(Norm::rms_norm(m.kv * m.hd))
                } else {
                    m.qk_norm.then(|| Norm::rms_norm(m.hd))
                },
                sinks: false,
                indexer_key_dim: None,
                cache_prefix_tokens: 0,
                shared_kv: false,
                compressed: None,
                v_from_k: false,
                transformers_cache_heads: None,
            }),
            cross_attention: None,
            ffn: match m.moe {
                Some((experts, k)) => Ffn::Moe(Moe {
                    num_experts: experts,
                    experts_per_token: k,
                    expert: mlp,
                    router_bias: llmsize_core::spec::RouterBias::None,
                    router: true,
                    shared: None,
                    shared_gate: false,
                }),
                None => Ffn::Dense(mlp),
            },
            norms: vec![Norm::rms_norm(m.d); m.norms],
            sliding_window: window,
            extras: Vec::new(),
            state: None,
        };
        spec.stacks[0].layers = if m.alternate {
            Layers::from_pattern((0..m.layers).map(|i| i % 2 == 0), |slides| {
                layer(slides.then_some(m.window.unwrap()))
            })
        } else {
            Layers::repeat(layer(m.window), m.layers)
        };
        spec.head = OutputHead::Lm {
            tied: m.tied,
            biases: 0,
            transform: None,
        };
        spec.training = Some(profile(m));
        spec
    }

    fn profile(m: M) -> TrainingProfile {
        use llmsize_core::profile::LayerStyle;
        let base = TrainingProfile {
            rotary_dims: Some(m.hd),
            routing_weights_in_dtype: m.routing_in_dtype,
            ..TrainingProfile::plain(LayerStyle::Llama, LLAMA_MODULES)
        };
        let gemma = TrainingProfile {
            norm: NormCode::Gemma,
            embedding_normalizer: true,
            ..base.clone()
        };
        match m.style {
            Fam::Llama | Fam::Phi3 => base,
            Fam::Gemma => gemma,
            Fam::Gemma2 => TrainingProfile {
                block_norms: BlockNorms::Sandwich,
                attn_softcap: true,
                logit_softcap: true,
                eager_only: true,
                ..gemma
            },
            Fam::Olmo2 => TrainingProfile {
                norm: NormCode::Olmo,
                block_norms: BlockNorms::Output,
                rotary_fp32: true,
                ..base
            },
        }
    }

    /// Adapters on every layer: (kind, peft name, `n_in`, trainable parameters), as
    /// `lora::plan` resolves them (fused modules once).
    fn plan(m: M, rank: u64, dropout: bool, modules: &[(TensorKind, &str, u64, u64)]) -> Lora {
        Lora {
            rank,
            dropout,
            dora: false,
            modules: modules
                .iter()
                .map(|&(kind, name, n_in, params)| Module {
                    name: name.into(),
                    kind,
                    stack: Some(StackRole::Decoder),
                    layer_runs: std::iter::once(0..m.layers).collect(),
                    n_in,
                    params,
                    fused_up: name == "gate_up_proj",
                })
                .collect(),
        }
    }

    fn all_linear(m: M, r: u64, dropout: bool) -> Lora {
        let (d, a, k, f) = (m.d, m.heads * m.hd, m.kv * m.hd, m.ffn);
        let p = |i: u64, o: u64| r * (i + o);
        if m.fused {
            // Phi-3: peft sees the fused modules once.
            return plan(
                m,
                r,
                dropout,
                &[
                    (TensorKind::AttnQkv, "qkv_proj", d, p(d, a + 2 * k)),
                    (TensorKind::AttnOutput, "o_proj", a, p(a, d)),
                    (TensorKind::FfnGate, "gate_up_proj", d, p(d, 2 * f)),
                    (TensorKind::FfnDown, "down_proj", f, p(f, d)),
                ],
            );
        }
        let mut mods = vec![
            (TensorKind::AttnQ, "q_proj", d, p(d, a)),
            (TensorKind::AttnK, "k_proj", d, p(d, k)),
            (TensorKind::AttnV, "v_proj", d, p(d, k)),
            (TensorKind::AttnOutput, "o_proj", a, p(a, d)),
        ];
        match m.moe {
            // peft 0.21 on transformers 5: the router and the 3-D expert tensors through
            // ParamWrapper (gate_up at rank 2r): Mixtral-8x7B 359,665,664 LoRA parameters.
            Some((experts, _)) => mods.extend([
                (TensorKind::Router, "gate", d, p(d, experts)),
                (
                    TensorKind::ExpertGate,
                    "experts.gate_up_proj",
                    d,
                    experts * 2 * r * (d + 2 * f),
                ),
                (
                    TensorKind::ExpertDown,
                    "experts.down_proj",
                    f,
                    experts * r * (f + d),
                ),
            ]),
            None => mods.extend([
                (TensorKind::FfnGate, "gate_proj", d, p(d, f)),
                (TensorKind::FfnUp, "up_proj", d, p(d, f)),
                (TensorKind::FfnDown, "down_proj", f, p(f, d)),
            ]),
        }
        plan(m, r, dropout, &mods)
    }

    /// peft's q/v default (Phi-3: its fused `qkv_proj`).
    fn qv(m: M, r: u64) -> Lora {
        let (d, a, k) = (m.d, m.heads * m.hd, m.kv * m.hd);
        if m.fused {
            return plan(
                m,
                r,
                false,
                &[(TensorKind::AttnQkv, "qkv_proj", d, r * (d + a + 2 * k))],
            );
        }
        plan(
            m,
            r,
            false,
            &[
                (TensorKind::AttnQ, "q_proj", d, r * (d + a)),
                (TensorKind::AttnV, "v_proj", d, r * (d + k)),
            ],
        )
    }

    struct Run {
        batch: u64,
        seq: u64,
        dtype: ParamDtype,
        attn: AttnImpl,
        ckpt: bool,
        device: Device,
    }

    const BF16_SDPA_512: Run = Run {
        batch: 1,
        seq: 512,
        dtype: ParamDtype::Bf16,
        attn: AttnImpl::Sdpa,
        ckpt: false,
        device: Device::Cpu,
    };

    fn run(m: M, r: &Run, lora: Option<&Lora>) -> Activations {
        run_frozen(m, r, lora, &[])
    }

    fn run_frozen(m: M, r: &Run, lora: Option<&Lora>, frozen: &[FreezePart]) -> Activations {
        let spec = spec(m);
        let input = ActInput {
            spec: &spec,
            profile: spec.training.as_ref(),
            batch: r.batch,
            seq: r.seq,
            dtype: r.dtype,
            attn: r.attn,
            checkpointing: r.ckpt,
            device: r.device,
            lora: None,
            frozen,
        };
        if lora.is_none() {
            // Through the dispatch, as `train()` calls it.
            return dispatch(&input).unwrap();
        }
        compute(&input, lora).unwrap()
    }

    /// `retained` and `forward_peak` equal the measurement, the split adds up, and the
    /// terms add up to what they explain.
    fn check(a: &Activations, retained: u128, peak: u128) {
        assert_eq!((a.retained, a.forward_peak), (retained, peak), "{a:#?}");
        assert_eq!(a.layer_sharded + a.layer_replicated + a.outside, a.retained);
        assert_eq!(a.terms.iter().map(|t| t.value).sum::<u128>(), a.retained);
        let keys: std::collections::BTreeSet<&str> =
            a.terms.iter().map(|t| t.key.as_str()).collect();
        assert_eq!(keys.len(), a.terms.len(), "unique keys: {:?}", a.terms);
        assert_eq!(
            a.peak_terms.iter().map(|t| t.value).sum::<u128>(),
            a.forward_peak
        );
    }

    fn at(seq: u64, attn: AttnImpl, ckpt: bool) -> Run {
        Run {
            seq,
            attn,
            ckpt,
            ..BF16_SDPA_512
        }
    }

    #[test]
    fn llama2_full_fine_tuning() {
        use AttnImpl::{Eager, Sdpa};
        // train.json, Llama-2-7b-hf, bf16.
        let b4 = Run {
            batch: 4,
            ..BF16_SDPA_512
        };
        check(&run(LLAMA2, &b4, None), 12_552_265_736, 12_945_498_152);
        check(
            &run(LLAMA2, &at(2048, Sdpa, false), None),
            12_553_052_176,
            12_946_268_176,
        );
        check(
            &run(LLAMA2, &at(2048, Sdpa, true), None),
            867_213_328,
            1_260_429_328,
        );
        check(
            &run(LLAMA2, &at(2048, Eager, false), None),
            38_314_467_344,
            38_707_683_344,
        );
        // Checkpointed eager at 2048: one layer's softmax (10·bHs² with the scores' fp32
        // copy) is the forward's peak, not the loss.
        let a = run(LLAMA2, &at(2048, Eager, true), None);
        check(&a, 875_601_936, 1_955_610_624);
        assert!(a.peak_terms.iter().any(|t| t.key == "scores"));
        let fp32 = |attn, ckpt| Run {
            dtype: ParamDtype::Fp32,
            ..at(512, attn, ckpt)
        };
        check(
            &run(LLAMA2, &fp32(Sdpa, false), None),
            5_663_496_208,
            5_729_032_208,
        );
        check(
            &run(LLAMA2, &fp32(Eager, false), None),
            6_735_140_880,
            6_800_676_880,
        );
        check(
            &run(LLAMA2, &fp32(Eager, true), None),
            360_720_400,
            426_256_400,
        );
    }

    #[test]
    fn mistral_mixtral_qwen_full_fine_tuning() {
        use AttnImpl::{Eager, Sdpa};
        // train.json: Mistral-7B-v0.1 (GQA, window 4096 > 2048).
        check(
            &run(MISTRAL, &at(2048, Eager, false), None),
            40_059_297_808,
            40_452_513_808,
        );
        check(
            &run(MISTRAL, &at(2048, Eager, true), None),
            875_601_936,
            1_963_999_232,
        );
        // Mixtral-8x7B-v0.1: the routed experts.
        check(
            &run(MIXTRAL, &at(2048, Sdpa, false), None),
            23_163_855_888,
            23_557_071_888,
        );
        check(
            &run(MIXTRAL, &at(512, Eager, false), None),
            7_600_806_928,
            7_699_110_928,
        );
        check(
            &run(MIXTRAL, &at(2048, Eager, true), None),
            875_601_936,
            1_963_999_232,
        );
        // Qwen2.5-7B (no window: `use_sliding_window` false leaves the spec without one).
        check(
            &run(QWEN25_7B, &at(2048, Eager, true), None),
            1_724_948_496,
            3_593_510_928,
        );
        // holdout.json: Qwen3-1.7B, per-head q/k norms, tied.
        check(
            &run(QWEN3_1_7B, &at(2048, Eager, false), None),
            19_253_649_424,
            21_120_638_992,
        );
        check(
            &run(QWEN3_1_7B, &at(512, Sdpa, true), None),
            378_546_192,
            845_293_584,
        );
    }

    #[test]
    fn phi3_fused_and_its_window() {
        use AttnImpl::{Eager, Sdpa};
        // train.json, Phi-3-mini-4k-instruct: at 2048 the window (2047) is shorter than the
        // sequence, so every layer's SDPA saves the explicit mask.
        check(
            &run(PHI3, &at(2048, Sdpa, false), None),
            10_925_924_368,
            11_319_926_800,
        );
        check(
            &run(PHI3, &at(2048, Sdpa, true), None),
            720_674_832,
            1_114_677_264,
        );
        check(
            &run(PHI3, &at(512, Eager, false), None),
            4_172_224_528,
            4_270_725_136,
        );
        check(
            &run(PHI3, &at(2048, Eager, true), None),
            724_869_136,
            1_829_519_360,
        );
    }

    #[test]
    fn gemma_families() {
        use AttnImpl::{Eager, Sdpa};
        // train.json, gemma-2-9b (eager only: soft-capping).
        let b4 = Run {
            batch: 4,
            attn: Eager,
            ..BF16_SDPA_512
        };
        check(&run(GEMMA2_9B, &b4, None), 32_642_324_488, 35_788_068_904);
        check(
            &run(GEMMA2_9B, &at(2048, Eager, false), None),
            49_555_331_088,
            52_701_059_088,
        );
        check(
            &run(GEMMA2_9B, &at(512, Eager, true), None),
            960_520_208,
            1_746_952_208,
        );
        let fp32 = Run {
            dtype: ParamDtype::Fp32,
            ..at(512, Eager, true)
        };
        check(&run(GEMMA2_9B, &fp32, None), 1_382_047_760, 1_906_335_760);
        // SDPA is refused by transformers: counted as eager, and said so.
        let a = run(GEMMA2_9B, &at(512, Sdpa, false), None);
        assert!(a.estimate.as_deref().unwrap().contains("no SDPA attention"));
        // holdout.json, gemma-2b: one KV head, whose eager k and v stay broadcast views.
        check(
            &run(GEMMA_2B, &at(2048, Eager, false), None),
            12_447_219_728,
            15_592_947_728,
        );
        check(
            &run(GEMMA_2B, &at(512, Eager, true), None),
            573_589_520,
            1_360_021_520,
        );
        check(
            &run(GEMMA_2B, &at(2048, Sdpa, false), None),
            8_824_520_720,
            11_970_248_720,
        );
    }

    #[test]
    fn lora_llama_family() {
        use AttnImpl::Sdpa;
        // train.json lora_runs, Llama-2-7b-hf: r16 all-linear, r8 q/v, r16 all-linear with
        // dropout 0.05 (CPU: fp32 noise per adapter whose input requires grad).
        check(
            &run(LLAMA2, &BF16_SDPA_512, Some(&all_linear(LLAMA2, 16, false))),
            4_563_275_792,
            4_665_774_096,
        );
        check(
            &run(LLAMA2, &at(2048, Sdpa, false), Some(&qv(LLAMA2, 8))),
            11_047_288_848,
            11_457_282_064,
        );
        check(
            &run(LLAMA2, &BF16_SDPA_512, Some(&all_linear(LLAMA2, 16, true))),
            6_870_142_992,
            6_972_641_296,
        );
        // With checkpointing the adapters cost nothing retained.
        check(
            &run(
                LLAMA2,
                &at(2048, Sdpa, true),
                Some(&all_linear(LLAMA2, 16, true)),
            ),
            833_658_896,
            1_243_652_112,
        );
        check(
            &run(
                MISTRAL,
                &at(2048, Sdpa, false),
                Some(&all_linear(MISTRAL, 16, false)),
            ),
            19_628_834_832,
            20_038_828_048,
        );
        check(
            &run(QWEN25_7B, &BF16_SDPA_512, Some(&qv(QWEN25_7B, 8))),
            3_000_782_864,
            3_471_593_488,
        );
        // Phi-3: fused qkv_proj (the q/v default adapts q, k and v) and gate_up_proj.
        check(
            &run(
                PHI3,
                &at(2048, Sdpa, false),
                Some(&all_linear(PHI3, 16, false)),
            ),
            12_368_756_752,
            12_775_342_096,
        );
        check(
            &run(PHI3, &BF16_SDPA_512, Some(&qv(PHI3, 8))),
            2_081_886_224,
            2_183_532_560,
        );
        // holdout.json: Qwen3-1.7B (layer 0 with q/v: k needs no grad, k_norm saves nothing).
        check(
            &run(QWEN3_1_7B, &BF16_SDPA_512, Some(&qv(QWEN3_1_7B, 8))),
            1_663_209_488,
            2_132_054_032,
        );
        check(
            &run(
                QWEN3_1_7B,
                &BF16_SDPA_512,
                Some(&all_linear(QWEN3_1_7B, 16, false)),
            ),
            2_492_911_632,
            2_961_756_176,
        );
        // gemma-2b.
        check(
            &run(GEMMA_2B, &BF16_SDPA_512, Some(&qv(GEMMA_2B, 8))),
            1_818_963_984,
            2_607_493_136,
        );
    }

    #[test]
    fn lora_gemma2_eager() {
        use AttnImpl::Eager;
        // train.json lora_runs, gemma-2-9b (eager): with q/v, layer 0's q is not saved (kᵀ
        // needs no grad).
        check(
            &run(
                GEMMA2_9B,
                &at(512, Eager, false),
                Some(&all_linear(GEMMA2_9B, 16, false)),
            ),
            8_946_782_224,
            9_736_884_240,
        );
        check(
            &run(GEMMA2_9B, &at(2048, Eager, false), Some(&qv(GEMMA2_9B, 8))),
            42_600_366_096,
            45_760_774_160,
        );
        check(
            &run(GEMMA2_9B, &at(2048, Eager, true), Some(&qv(GEMMA2_9B, 8))),
            3_810_580_496,
            6_970_988_560,
        );
    }

    #[test]
    fn lora_mixtral_merged_experts() {
        use AttnImpl::Sdpa;
        // train.json lora_runs, Mixtral-8x7B-v0.1. q/v: frozen experts.
        check(
            &run(MIXTRAL, &at(2048, Sdpa, false), Some(&qv(MIXTRAL, 8))),
            18_269_094_928,
            18_679_088_144,
        );
        // all-linear: peft's ParamWrapper saves the merged expert weights in every layer.
        let all = all_linear(MIXTRAL, 16, false);
        check(
            &run(MIXTRAL, &BF16_SDPA_512, Some(&all)),
            97_333_744_656,
            97_436_242_960,
        );
        // Checkpointed: the peak is the last layer's experts, with both merged weights alive.
        let a = run(MIXTRAL, &at(512, Sdpa, true), Some(&all));
        check(&a, 208_414_736, 3_033_325_632);
        assert!(a.peak_terms.iter().any(|t| t.key == "experts_combine"));
        check(
            &run(MIXTRAL, &at(2048, Sdpa, true), Some(&all)),
            833_658_896,
            3_613_098_048,
        );
    }

    /// A scaled-down Llama-2 (`train_oracle.scale_raw`: hidden 64, 2 layers, 4 heads, 2 KV
    /// heads, MLP 96, vocabulary 256), where one layer's eager scores outweigh the loss.
    const TINY_LLAMA2: M = M {
        d: 64,
        layers: 2,
        vocab: 256,
        heads: 4,
        kv: 2,
        hd: 16,
        ffn: 96,
        ..LLAMA2
    };

    #[test]
    fn the_peak_is_a_layer_when_its_scores_outweigh_the_loss() {
        // Measured with the truth's `train_oracle.train_step` (transformers 5.24, CPU, fake
        // tensors) on TINY_LLAMA2 at 256 tokens, eager, without checkpointing: the peak is the
        // last layer's `_softmax` (the earlier layer's saved tensors, the embedding output,
        // the last layer's input, its norm, q, k, v, repeated k and v, and 10·bHs²).
        let a = run(TINY_LLAMA2, &at(256, AttnImpl::Eager, false), None);
        check(&a, 4_742_160, 5_264_384);
        assert!(a.peak_terms.iter().any(|t| t.key == "earlier_layers"));
        // Mixtral scaled the same way (4 experts, top-2), LoRA r16 all-linear, 40 tokens,
        // checkpointed: the peak is the last layer's experts putting their rows back in order,
        // with both merged expert weights alive.
        let m = M {
            ffn: 96,
            moe: Some((4, 2)),
            ..TINY_LLAMA2
        };
        let a = run(
            m,
            &at(40, AttnImpl::Sdpa, true),
            Some(&all_linear(m, 16, false)),
        );
        check(&a, 64_816, 322_144);
    }

    #[test]
    fn cuda_keeps_one_byte_dropout_masks_and_flash_seeds() {
        // Derived from the documented CUDA differences (not measured): the CPU step of
        // Llama-2-7b-hf, r16 all-linear, dropout 0.05, 512 tokens, is 6,870,142,992 bytes
        // (train.json); on CUDA each adapter whose input requires grad keeps a 1-byte mask
        // instead of fp32 noise, 3·T·Σn_in less: per layer n_in = 5d + A + F = 35,584, layer
        // 0 without q, k, v (3d) = 23,296: 3·512·(31·35,584 + 23,296) = 1,730,150,400; and
        // FlashAttention saves a philox seed and offset per layer, 16·32 = 512.
        let cuda = Run {
            device: Device::Cuda,
            ..BF16_SDPA_512
        };
        let a = run(LLAMA2, &cuda, Some(&all_linear(LLAMA2, 16, true)));
        assert_eq!(a.retained, 6_870_142_992 - 1_730_150_400 + 512);
        assert!(a.estimate.is_none());
        assert!(a.terms.iter().any(|t| t.what.contains("bool mask (CUDA")));
    }

    #[test]
    fn a_million_layers_cost_what_two_do() {
        // Gemma-2 style alternation over 1,000,000 layers: two kinds, 1,000,000 runs.
        let big = M {
            layers: 1_000_000,
            ..GEMMA2_9B
        };
        let two = M {
            layers: 2,
            ..GEMMA2_9B
        };
        let r = at(512, AttnImpl::Eager, false);
        let (a, b) = (run(big, &r, None), run(two, &r, None));
        let layers = |x: &Activations| x.layer_sharded + x.layer_replicated;
        assert_eq!(layers(&a), 500_000 * layers(&b));
        assert_eq!(a.outside, b.outside);
        assert_eq!(a.layers, 1_000_000);
        // LoRA on the same: adapters found per kind over the runs.
        // LoRA (layer 0 differs: its input needs no grad): adapters found per kind over the
        // runs; 1,000,000 layers = 2 + 499,999 × (4 − 2).
        let four = M {
            layers: 4,
            ..GEMMA2_9B
        };
        let lora = |m: M| layers(&run(m, &r, Some(&all_linear(m, 16, false))));
        assert_eq!(lora(big), lora(two) + 499_999 * (lora(four) - lora(two)));
    }

    #[test]
    fn sizes_past_u128_are_an_error() {
        let spec = spec(LLAMA2);
        let input = ActInput {
            spec: &spec,
            profile: spec.training.as_ref(),
            batch: u64::MAX,
            seq: u64::MAX,
            dtype: ParamDtype::Fp32,
            attn: AttnImpl::Eager,
            checkpointing: false,
            device: Device::Cpu,
            lora: None,
            frozen: &[],
        };
        let r = dispatch(&input);
        let Err(SpecError::Overflow(e)) = r else {
            panic!("{r:?}")
        };
        // T = b·s = (2^64 − 1)² fits u128; the first term, 4·T·d, does not (4·T > 2^128).
        assert_eq!(
            e.to_string(),
            "`4Td` overflows 128 bits (with values: 4 · 340282366920938463426481119284349108225)"
        );
    }

    #[test]
    fn layers_not_derived_are_estimates_not_panics() {
        use llmsize_core::spec::LatentAttention;
        let mut spec = spec(LLAMA2);
        let mut mamba = spec.stacks[0].layers.kinds()[0].clone();
        mamba.attention = Attention::Absent;
        mamba.ffn = Ffn::Absent;
        let mut mla = mamba.clone();
        mla.attention = Attention::Latent(LatentAttention {
            hidden: 4096,
            num_heads: 32,
            q_lora_rank: Some(1536),
            kv_lora_rank: 512,
            qk_nope_head_dim: 128,
            qk_rope_head_dim: 64,
            v_head_dim: 128,
            bias: false,
            indexer_key_dim: None,
            category: llmsize_core::category::Category::Attention,
        });
        spec.stacks[0].layers = Layers::from_pattern(0..6u64, |i| match i % 3 {
            0 => mamba.clone(),
            1 => mla.clone(),
            _ => spec.stacks[0].layers.kinds()[0].clone(),
        });
        for (attn, ckpt) in [(AttnImpl::Sdpa, false), (AttnImpl::Eager, true)] {
            let input = ActInput {
                spec: &spec,
                profile: spec.training.as_ref(),
                batch: 2,
                seq: 64,
                dtype: ParamDtype::Bf16,
                attn,
                checkpointing: ckpt,
                device: Device::Cuda,
                lora: None,
                frozen: &[FreezePart::Mlp],
            };
            let a = dispatch(&input).unwrap();
            let why = a.estimate.clone().unwrap();
            assert!(
                why.contains("latent") && why.contains("without attention"),
                "{why}"
            );
            assert!(why.contains("--freeze mlp"), "{why}");
            assert_eq!(a.layer_sharded + a.layer_replicated + a.outside, a.retained);
            assert_eq!(a.layers, 6);
        }
    }

    // Configs scaled by the truth oracle's `scale_raw` (hidden 64, 4 heads, 2 KV heads, head
    // 16, MLP 96, vocabulary 256), measured with its oracle (`train_oracle.train_step`, LoRA
    // through `lora_oracle.build_lora`; transformers 5.24, peft 0.21.2, CPU, fake tensors):
    // paths the full-size truth has no step for — OLMo 2, Qwen3-MoE's bf16 routing weights,
    // windows shorter than the sequence with GQA (k and v repeated to H heads, Phi-3's fused
    // qkv among them), Gemma 2's window, the frozen embedding, batch 2 and fp32 eager peaks.
    const TINY_OLMO2: M = M {
        qk_full: true,
        style: Fam::Olmo2,
        ..TINY_LLAMA2
    };
    const TINY_QWEN3_MOE: M = M {
        ffn: 32,
        moe: Some((8, 2)),
        qk_norm: true,
        routing_in_dtype: true,
        ..TINY_LLAMA2
    };
    const TINY_MISTRAL: M = M {
        window: Some(32),
        ..TINY_LLAMA2
    };
    const TINY_GEMMA2: M = M {
        layers: 3,
        window: Some(32),
        alternate: true,
        norms: 4,
        tied: true,
        style: Fam::Gemma2,
        ..TINY_LLAMA2
    };
    const TINY_PHI3: M = M {
        window: Some(32),
        fused: true,
        style: Fam::Phi3,
        ..TINY_LLAMA2
    };
    const TINY_GEMMA: M = M {
        kv: 1,
        tied: true,
        style: Fam::Gemma,
        ..TINY_LLAMA2
    };

    fn fp32(seq: u64, attn: AttnImpl, ckpt: bool) -> Run {
        Run {
            dtype: ParamDtype::Fp32,
            ..at(seq, attn, ckpt)
        }
    }

    /// Each run of the scaled model `m` (`name` in a failure), with its adapters, measures
    /// `(retained, forward_peak)`.
    fn scaled(name: &str, m: M, runs: impl IntoIterator<Item = (Run, Option<Lora>, (u128, u128))>) {
        for (r, lora, want) in runs {
            let a = run(m, &r, lora.as_ref());
            assert_eq!((a.retained, a.forward_peak), want, "{name} {lora:?}");
            check(&a, want.0, want.1);
        }
    }

    #[test]
    fn scaled_olmo2() {
        use AttnImpl::{Eager, Sdpa};
        let m = TINY_OLMO2;
        scaled(
            "olmo2",
            m,
            [
                (at(64, Sdpa, false), None, (529_168, 627_472)),
                (at(64, Eager, false), None, (740_112, 838_416)),
                (at(64, Sdpa, true), None, (132_368, 230_672)),
                (at(64, Eager, true), None, (140_560, 238_864)),
                (fp32(64, Sdpa, false), None, (717_584, 783_120)),
                (at(256, Eager, false), None, (5_319_696, 5_712_912)),
                (
                    at(64, Sdpa, false),
                    Some(all_linear(m, 16, false)),
                    (635_664, 742_160),
                ),
                (
                    at(64, Sdpa, true),
                    Some(all_linear(m, 16, false)),
                    (107_792, 214_288),
                ),
                (at(64, Sdpa, false), Some(qv(m, 8)), (397_840, 504_336)),
                (at(64, Eager, false), Some(qv(m, 8)), (584_208, 690_704)),
                (
                    at(64, Sdpa, false),
                    Some(all_linear(m, 16, true)),
                    (832_272, 938_768),
                ),
            ],
        );
    }

    #[test]
    fn scaled_qwen3_moe_routing_weights_in_the_dtype() {
        use AttnImpl::{Eager, Sdpa};
        let m = TINY_QWEN3_MOE;
        scaled(
            "qwen3_moe",
            m,
            [
                (at(40, Sdpa, false), None, (318_000, 379_440)),
                (at(40, Sdpa, true), None, (75_056, 136_496)),
                (at(40, Eager, true), None, (78_256, 139_696)),
                (
                    at(40, Sdpa, false),
                    Some(all_linear(m, 16, false)),
                    (732_560, 799_120),
                ),
                (
                    at(40, Sdpa, true),
                    Some(all_linear(m, 16, false)),
                    (64_816, 256_640),
                ),
                (at(40, Sdpa, false), Some(qv(m, 8)), (250_960, 317_520)),
            ],
        );
    }

    #[test]
    fn scaled_windows_shorter_than_the_sequence() {
        use AttnImpl::{Eager, Sdpa};
        let m = TINY_MISTRAL;
        scaled(
            "mistral",
            m,
            [
                (at(64, Sdpa, false), None, (417_552, 515_856)),
                (at(64, Eager, false), None, (595_728, 694_032)),
                (at(64, Sdpa, true), None, (124_176, 222_480)),
                (at(64, Eager, true), None, (128_272, 233_984)),
                (at(64, Sdpa, false), Some(qv(m, 8)), (368_144, 474_640)),
            ],
        );
        let m = TINY_GEMMA2;
        scaled(
            "gemma2",
            m,
            [
                (at(64, Eager, false), None, (1_231_888, 1_330_192)),
                (at(64, Eager, true), None, (185_872, 284_176)),
                (
                    at(64, Eager, false),
                    Some(all_linear(m, 16, false)),
                    (1_337_872, 1_444_368),
                ),
            ],
        );
        let m = TINY_PHI3;
        scaled(
            "phi3",
            m,
            [
                (at(64, Sdpa, false), None, (433_936, 532_240)),
                (at(64, Eager, false), None, (595_728, 694_032)),
                (at(64, Sdpa, true), None, (124_176, 222_480)),
                (at(64, Eager, true), None, (128_272, 246_272)),
                (
                    at(64, Sdpa, false),
                    Some(all_linear(m, 16, false)),
                    (474_640, 581_136),
                ),
            ],
        );
    }

    #[test]
    fn scaled_batch_2_and_fp32_eager_peaks() {
        use AttnImpl::Eager;
        let b2 = Run {
            batch: 2,
            ..at(256, Eager, false)
        };
        scaled(
            "llama",
            TINY_LLAMA2,
            [
                (b2, None, (9_467_912, 10_575_872)),
                (fp32(256, Eager, false), None, (4_693_008, 4_955_152)),
                (fp32(256, Eager, true), None, (889_872, 2_852_864)),
            ],
        );
        scaled(
            "gemma",
            TINY_GEMMA,
            [
                (at(256, Eager, false), None, (4_808_976, 5_232_384)),
                (at(256, Eager, true), None, (644_368, 2_918_400)),
            ],
        );
    }

    #[test]
    fn scaled_frozen_embedding() {
        // The frozen embedding (`embed_tokens.weight.requires_grad_(False)`, full
        // fine-tuning otherwise): layer 0's first norm keeps no fp32 input copy or rsqrt;
        // Gemma's head is tied, so the final norm's output is not saved either.
        let frozen = [FreezePart::Embeddings];
        let a = run_frozen(TINY_LLAMA2, &at(64, AttnImpl::Sdpa, false), None, &frozen);
        check(&a, 368_144, 466_448);
        assert!(a.estimate.is_none());
        check(
            &run_frozen(TINY_GEMMA, &at(64, AttnImpl::Sdpa, false), None, &frozen),
            393_744,
            500_240,
        );
    }
}
