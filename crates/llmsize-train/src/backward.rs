//! The backward pass as autograd's engine runs it, buffer by buffer: its peak.
//!
//! The truth's `backward_peak_bytes` is the largest sum of live storages during
//! `loss.backward()`: what the forward left for backward (held to the end: the oracle's
//! saved-tensor hook keeps every saved tensor, so it is the `retained` figure throughout) plus
//! everything backward creates — each parameter's gradient as it is made, and the gradients
//! flowing between ops, freed when their last consumer has run. On one device the engine runs
//! the graph's nodes in reverse creation order (`torch/csrc/autograd/engine.cpp`, the ready
//! queue ordered by `sequence_nr`), so the backward of a layer is a fixed list of allocations
//! and frees: each op's derivative (`tools/autograd/derivatives.yaml`) allocates its input
//! gradients, in the order its formula computes them, and the engine drops its output
//! gradient when it returns; a tensor used twice receives two gradients, summed out of place
//! (`InputBuffer::accumulate`). Each rule below is that list for one op, checked allocation by
//! allocation against the oracle's trace (`tools/train-truth/trace.py`).
//!
//! A run of equal layers adds the same gradients per layer, so its peak is at its last layer
//! to run: one layer is simulated and the run extrapolated — the work grows with the layer
//! kinds, not `num_hidden_layers`.

use crate::{AttnImpl, Term};
use llmsize_core::checked;
use llmsize_core::layout::TensorKind;
use llmsize_core::profile::{BlockNorms, LayerStyle, NormCode, TrainingProfile};
use llmsize_core::spec::{Attention, Ffn, ModelSpec, NormKind, OutputHead};
use llmsize_core::{Overflow, SpecError};

/// The backward's peak.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackwardPeak {
    /// Bytes live at the peak, the retained activations included (the truth's
    /// `backward_peak_bytes`).
    pub bytes: u128,
    /// What it is made of.
    pub terms: Vec<Term>,
    /// `None` when derived op by op; else why it is an estimate.
    pub estimate: Option<String>,
}

/// LoRA on a frozen base: its rank and the projections it adapts in every decoder layer, in
/// the order q, k, v, o, gate, up, down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Adapters {
    /// The rank.
    pub rank: u128,
    /// q, k, v, o, gate, up, down.
    pub on: [bool; 7],
    /// `lora_dropout` > 0: the adapter's input goes through `nn.Dropout` (fp32).
    pub dropout: bool,
}

/// The projections of a layer, indexing [`Adapters::on`].
#[derive(Debug, Clone, Copy)]
enum Proj {
    Q = 0,
    K = 1,
    V = 2,
    O = 3,
    Gate = 4,
    Up = 5,
    Down = 6,
}

/// One buffer of the tape.
#[derive(Debug, Clone, Copy)]
struct Buf(usize);

/// Live buffers during backward, with the peak and where it happened.
#[derive(Debug, Default)]
struct Tape {
    sizes: Vec<u128>,
    live: u128,
    /// Parameter gradients made so far (never freed; part of `live`).
    grads: u128,
    peak: u128,
    peak_grads: u128,
    peak_at: String,
    /// Where the ops now running belong (`layer 3's attention`).
    at: String,
}

impl Tape {
    fn alloc(&mut self, bytes: u128) -> Result<Buf, Overflow> {
        self.live = checked::add("backward live bytes", self.live, bytes)?;
        let id = Buf(self.sizes.len());
        self.sizes.push(bytes);
        if self.live > self.peak {
            self.peak = self.live;
            self.peak_grads = self.grads;
            self.peak_at.clone_from(&self.at);
        }
        Ok(id)
    }

    fn free(&mut self, b: Buf) {
        if let Some(s) = self.sizes.get_mut(b.0) {
            self.live = self.live.saturating_sub(*s);
            *s = 0;
        }
    }

    /// A parameter's gradient: kept to the end of the step.
    fn grad(&mut self, bytes: u128) -> Result<Buf, Overflow> {
        self.grads = checked::add("gradients", self.grads, bytes)?;
        self.alloc(bytes)
    }

    /// `a + b` into a new buffer, both freed (a tensor's second gradient).
    fn accumulate(&mut self, a: Buf, b: Buf, bytes: u128) -> Result<Buf, Overflow> {
        let s = self.alloc(bytes)?;
        self.free(a);
        self.free(b);
        Ok(s)
    }
}

/// Shapes of one llama-style layer's backward, in bytes.
#[allow(
    clippy::struct_excessive_bools,
    reason = "each is a switch of the layer's code or layout"
)]
#[derive(Debug, Clone, Copy)]
struct Dims {
    /// Tokens of the step (`b·s`).
    t: u128,
    /// Element bytes of the activations.
    e: u128,
    d: u128,
    q: u128,
    kv: u128,
    ff: u128,
    /// `b·h·s·s` elements of eager attention's score matrix.
    scores: u128,
    /// Heads equal key/value heads: `repeat_kv` is the identity.
    mha: bool,
    bias_qkv: bool,
    /// The layer code (llama's, or GPT-NeoX's).
    style: LayerStyle,
    /// One `qkv_proj` sliced into q, k, v (Phi-3's; the layout's `fused_qkv`).
    fused_qkv: bool,
    /// The norms' code and placement, the soft-capping.
    code: Code,
    /// A Mixtral MoE block in place of the MLP: experts `E`, per token `k`, expert width `Fm`.
    moe: Option<(u128, u128, u128)>,
    /// Per head: its width, and how many of its dimensions the rotary turns (GPT-NeoX).
    head_dim: u128,
    rot: u128,
    /// LoRA of this rank on every linear of the layers (peft's all-linear), on a frozen base:
    /// no base gradients, the adapters' in fp32.
    lora: Option<Adapters>,
    /// Qwen3's per-head `q_norm`/`k_norm` (RMSNorm over `head_dim`, before the rotary).
    qk_norm: Option<u128>,
    sdpa: bool,
}

impl Dims {
    fn x(&self, width: u128) -> Result<u128, Overflow> {
        checked::mul(
            "tokens·width·bytes",
            checked::mul("tokens·width", self.t, width)?,
            self.e,
        )
    }
}

/// `nn.Linear` (`mm`, or `addmm` with a bias): the gradient `g` of its output in, the
/// gradient of its input out; `g` is left to the caller (it may feed another op too).
/// `mm`'s formula computes the weight's gradient first, `addmm`'s the input's, then the
/// weight's and the bias's (`sum` over tokens).
fn linear(tape: &mut Tape, dm: &Dims, k: u128, n: u128, bias: bool) -> Result<Buf, Overflow> {
    let w = checked::mul("n·k·bytes", checked::mul("n·k", n, k)?, dm.e)?;
    if bias {
        let x = tape.alloc(dm.x(k)?)?;
        tape.grad(w)?;
        tape.grad(checked::mul("n·bytes", n, dm.e)?)?;
        Ok(x)
    } else {
        tape.grad(w)?;
        tape.alloc(dm.x(k)?)
    }
}

/// A projection as the step trains it, its input needing a gradient: the full layer's
/// gradients, or, under LoRA, peft's `lora.Linear` (`result = base(x) + lora_B(lora_A(x.float()))
/// · scaling`, cast back): the fp32 adapters' gradients and the two paths' input gradients
/// summed (a frozen, unadapted projection passes its input's only). `g` is freed here under
/// LoRA when given (not shared), by the caller otherwise. Returns the input's gradient.
fn project(
    tape: &mut Tape,
    dm: &Dims,
    (k, n, bias, which): (u128, u128, bool, Proj),
    g: Option<Buf>,
) -> Result<Buf, Overflow> {
    let Some(r) = adapted(dm, which) else {
        return match dm.lora {
            None => linear(tape, dm, k, n, bias),
            Some(_) => tape.alloc(dm.x(k)?),
        };
    };
    let (base, ga) = lora_weights(tape, dm, (k, n, r), g, true)?;
    let f = |w: u128| checked::mul("t·w·4", checked::mul("t·w", dm.t, w)?, 4);
    let mut gx = tape.alloc(f(k)?)?;
    tape.free(ga);
    if dm.lora.is_some_and(|a| a.dropout) {
        // The dropout's backward: the gradient times its mask, in fp32.
        let gd = tape.alloc(f(k)?)?;
        tape.free(gx);
        gx = gd;
    }
    let gxb = tape.alloc(dm.x(k)?)?;
    tape.free(gx);
    let xb = tape.alloc(dm.x(k)?)?;
    if let Some(base) = base {
        tape.free(base);
    }
    tape.accumulate(gxb, xb, dm.x(k)?)
}

/// [`project`] where the input may need no gradient (`x_rg`: layer 0's under LoRA, fed by
/// the frozen embedding): then only an adapter's own gradients are made.
fn project_if(
    tape: &mut Tape,
    dm: &Dims,
    shape: (u128, u128, bool, Proj),
    g: Option<Buf>,
    x_rg: bool,
) -> Result<Option<Buf>, Overflow> {
    if x_rg || dm.lora.is_none() {
        return project(tape, dm, shape, g).map(Some);
    }
    let (k, n, _, which) = shape;
    if let Some(r) = adapted(dm, which) {
        let (_, ga) = lora_weights(tape, dm, (k, n, r), g, false)?;
        tape.free(ga);
    }
    Ok(None)
}

/// The rank of the adapter on `which`, under LoRA.
fn adapted(dm: &Dims, which: Proj) -> Option<u128> {
    dm.lora
        .filter(|a| a.on.get(which as usize).copied().unwrap_or(false))
        .map(|a| a.rank)
}

/// An adapted projection's backward up to `lora_A`'s input: `.to(dtype)` of the fp32 sum, the
/// sum's bf16 branch (the base output's gradient, where the input needs one: `base`),
/// `· scaling`, `lora_B`'s and `lora_A`'s weight gradients (fp32 `mm`s, the weight's first).
/// Returns the base branch's gradient and `lora_A`'s output gradient.
fn lora_weights(
    tape: &mut Tape,
    dm: &Dims,
    (k, n, r): (u128, u128, u128),
    g: Option<Buf>,
    base: bool,
) -> Result<(Option<Buf>, Buf), Overflow> {
    let f = |w: u128| checked::mul("t·w·4", checked::mul("t·w", dm.t, w)?, 4);
    let a = tape.alloc(f(n)?)?;
    if let Some(g) = g {
        tape.free(g);
    }
    let base = if base {
        Some(tape.alloc(dm.x(n)?)?)
    } else {
        None
    };
    let c = tape.alloc(f(n)?)?;
    tape.free(a);
    tape.grad(checked::mul("n·r·4", checked::mul("n·r", n, r)?, 4)?)?;
    let ga = tape.alloc(f(r)?)?;
    tape.free(c);
    tape.grad(checked::mul("r·k·4", checked::mul("r·k", r, k)?, 4)?)?;
    Ok((base, ga))
}

/// `LlamaRMSNorm` (`modeling_llama.py`): `weight * (x.float() * rsqrt(mean(x²) + eps)).to(dtype)`
/// over `rows` rows of `dim`; frees `g`, returns the input's gradient.
fn rms_norm(
    tape: &mut Tape,
    (e, train): (u128, bool),
    (rows, dim): (u128, u128),
    g: Buf,
) -> Result<Buf, Overflow> {
    let up = e != 4;
    let elems = checked::mul("rows·dim", rows, dim)?;
    let f = checked::mul("rows·dim·4", elems, 4)?;
    let x = checked::mul("rows·dim·e", elems, e)?;
    let row = checked::mul("rows·4", rows, 4)?;
    // weight * h: g·w for h, g·h summed over the rows for the weight (when trained).
    let a = tape.alloc(x)?;
    if train {
        let b = tape.alloc(x)?;
        tape.grad(checked::mul("dim·e", dim, e)?)?;
        tape.free(b);
    }
    tape.free(g);
    let c = if up {
        let c = tape.alloc(f)?;
        tape.free(a);
        c
    } else {
        a
    };
    // x * rsqrt(var): the x branch, and the rsqrt branch summed over the row.
    let c1 = tape.alloc(f)?;
    let c2 = tape.alloc(f)?;
    let s1 = tape.alloc(row)?;
    tape.free(c2);
    tape.free(c);
    rsqrt_tail(tape, (f, row), c1, s1, up.then_some(x))
}

/// `GemmaRMSNorm` (`modeling_gemma.py`): `(x.float() · rsqrt(mean(x²) + eps)) · (1 +
/// weight.float())`, then `type_as(x)`: the weight's gradient is summed in fp32 and cast;
/// `g` freed when this norm is its last reader (`own`); returns the input's gradient.
fn gemma_rms_norm(
    tape: &mut Tape,
    e: u128,
    rows: (u128, u128),
    g: (Buf, bool),
) -> Result<Buf, Overflow> {
    fp32_rms_norm(tape, (e, false), rows, g)
}

/// An RMSNorm computed in fp32 and cast back (Gemma's and `OLMo` 2's): the cast's fp32
/// gradient, the weight's summed in fp32 and cast to the dtype (`OLMo` 2 frees the cast's
/// gradient after that, Gemma before), then the normalisation's.
fn fp32_rms_norm(
    tape: &mut Tape,
    (e, olmo): (u128, bool),
    (rows, dim): (u128, u128),
    (g, own): (Buf, bool),
) -> Result<Buf, Overflow> {
    let up = e != 4;
    let elems = checked::mul("rows·dim", rows, dim)?;
    let f = checked::mul("rows·dim·4", elems, 4)?;
    let row = checked::mul("rows·4", rows, 4)?;
    let g32 = if up {
        let c = tape.alloc(f)?;
        if own {
            tape.free(g);
        }
        c
    } else {
        g
    };
    let a = tape.alloc(f)?;
    let b = tape.alloc(f)?;
    let wsum = checked::mul("dim·4", dim, 4)?;
    if up {
        let s = tape.alloc(wsum)?;
        tape.free(b);
        if !olmo {
            tape.free(g32);
        }
        tape.grad(checked::mul("dim·e", dim, e)?)?;
        tape.free(s);
    } else {
        tape.grad(wsum)?;
        tape.free(b);
    }
    // In fp32 there is no cast: `g32` is `g`, which the residual stream may still hold.
    if up || own {
        tape.free(g32);
    }
    let c1 = tape.alloc(f)?;
    let c2 = tape.alloc(f)?;
    let s1 = tape.alloc(row)?;
    tape.free(c2);
    tape.free(a);
    rsqrt_tail(
        tape,
        (f, row),
        c1,
        s1,
        up.then_some(checked::mul("rows·dim·e", elems, e)?),
    )
}

/// The rest of an RMSNorm's backward once `x · rsqrt(var)` is done: `c1` (x's branch) and
/// `s1` (the row sums for rsqrt) in, rsqrt's, mean's and `pow`'s derivatives, the two
/// branches summed, cast back to `cast` bytes where the norm upcast its input.
fn rsqrt_tail(
    tape: &mut Tape,
    (f, row): (u128, u128),
    c1: Buf,
    s1: Buf,
    cast: Option<u128>,
) -> Result<Buf, Overflow> {
    let p = tape.alloc(row)?;
    let m1 = tape.alloc(row)?;
    let m2 = tape.alloc(row)?;
    tape.free(p);
    tape.free(m1);
    tape.free(s1);
    let dmean = tape.alloc(f)?;
    tape.free(m2);
    let p2 = tape.alloc(f)?;
    let mm = tape.alloc(f)?;
    let r = tape.alloc(f)?;
    tape.free(p2);
    tape.free(mm);
    tape.free(dmean);
    let acc = tape.accumulate(c1, r, f)?;
    match cast {
        Some(x) => {
            let out = tape.alloc(x)?;
            tape.free(acc);
            Ok(out)
        }
        None => Ok(acc),
    }
}

/// The hidden-state norm of a layer: `T` rows of `d`.
fn norm(tape: &mut Tape, dm: &Dims, g: Buf) -> Result<Buf, Overflow> {
    if dm.style == LayerStyle::GptNeox {
        return layer_norm(tape, dm, g);
    }
    match dm.code.norm {
        NormCode::Olmo => olmo_rms_norm(tape, dm.e, (dm.t, dm.d), (g, true)),
        NormCode::Gemma | NormCode::Fp32Weight => {
            gemma_rms_norm(tape, dm.e, (dm.t, dm.d), (g, true))
        }
        NormCode::Llama => rms_norm(tape, (dm.e, dm.lora.is_none()), (dm.t, dm.d), g),
    }
}

/// `apply_rotary_pos_emb` on one of q or k (`x·cos + rotate_half(x)·sin`, `rotate_half`
/// = `cat(-x2, x1)`): `g` the rotated tensor's gradient, freed here where it is its own
/// (`Some`), left where it is a view of a concatenation's gradient that another part still
/// reads (Phi-3's, GPT-NeoX's `cat([rotated, pass])`); returns the unrotated part's gradient.
fn rope(tape: &mut Tape, bytes: u128, g: Option<Buf>) -> Result<Buf, Overflow> {
    let m1 = tape.alloc(bytes)?;
    let neg = tape.alloc(bytes / 2)?;
    let sb2 = tape.alloc(bytes)?;
    tape.free(neg);
    let sb1 = tape.alloc(bytes)?;
    tape.free(m1);
    let acc = tape.accumulate(sb2, sb1, bytes)?;
    let mc = tape.alloc(bytes)?;
    if let Some(g) = g {
        tape.free(g);
    }
    tape.accumulate(acc, mc, bytes)
}

/// Eager attention (`eager_attention_forward`): `softmax(q·kᵀ·scale + mask, fp32).to(dtype) · v`;
/// frees `x` (the gradient of its output); returns q's, k's and v's gradients.
fn eager_core(tape: &mut Tape, dm: &Dims, x: Buf) -> Result<(Buf, Buf, Buf), Overflow> {
    let qb = dm.x(dm.q)?;
    let kb = dm.x(dm.kv)?;
    let sb = checked::mul("scores·bytes", dm.scores, dm.e)?;
    let s4 = checked::mul("scores·4", dm.scores, 4)?;
    // bmm(attn, v): v's gradient (mat2) first, then the scores'.
    let gv = tape.alloc(qb)?;
    let ga = tape.alloc(sb)?;
    tape.free(x);
    let up = dm.e != 4;
    let g32 = if up {
        let g = tape.alloc(s4)?;
        tape.free(ga);
        g
    } else {
        ga
    };
    let gs = tape.alloc(s4)?;
    tape.free(g32);
    let gsb = if up {
        let g = tape.alloc(sb)?;
        tape.free(gs);
        g
    } else {
        gs
    };
    // Gemma 2's soft-capping of the scores (`/ cap`, `tanh`, `· cap`): three gradients in
    // turn, before the scaling's.
    let mut gsb = gsb;
    if dm.code.attn_softcap {
        for _ in 0..3 {
            let next = tape.alloc(sb)?;
            tape.free(gsb);
            gsb = next;
        }
    }
    let gm = tape.alloc(sb)?;
    tape.free(gsb);
    // bmm(q, kᵀ): kᵀ's gradient first.
    let gk = tape.alloc(qb)?;
    let gq = tape.alloc(qb)?;
    tape.free(gm);
    if dm.mha {
        return Ok((gq, gk, gv));
    }
    // repeat_kv's expand: summed over each group, v's first.
    let v = tape.alloc(kb)?;
    tape.free(gv);
    let k = tape.alloc(kb)?;
    tape.free(gk);
    Ok((gq, k, v))
}

/// The attention op's gradients of q, k and v from its output's (`x`, freed): SDPA's one
/// backward kernel, or eager attention's chain.
fn qkv_grads(tape: &mut Tape, dm: &Dims, x: Buf) -> Result<(Buf, Buf, Buf), Overflow> {
    if !dm.sdpa {
        return eager_core(tape, dm, x);
    }
    let gq = tape.alloc(dm.x(dm.q)?)?;
    let gk = tape.alloc(dm.x(dm.kv)?)?;
    let gv = tape.alloc(dm.x(dm.kv)?)?;
    tape.free(x);
    Ok((gq, gk, gv))
}

/// A llama attention block (q/k/v/o projections, rotary, SDPA or eager): `g` is the
/// gradient of its output, shared with the residual stream where the block's input needs a
/// gradient (`x_rg`), else this block's alone (freed here); returns the gradient of its
/// input, if it needs one.
fn attention(
    tape: &mut Tape,
    dm: &Dims,
    g: Buf,
    x_rg: bool,
    own: bool,
) -> Result<Option<Buf>, Overflow> {
    tape.at.push_str("attention");
    let own = own || !x_rg;
    let x = project(tape, dm, (dm.q, dm.d, false, Proj::O), own.then_some(g))?;
    if own {
        tape.free(g);
    }
    // Which of q, k, v need a gradient: all where the input does, else the adapted ones.
    let rg = |p: Proj| x_rg || dm.lora.is_some_and(|a| a.on.get(p as usize) == Some(&true));
    let (gq, gk, gv) = qkv_grads(tape, dm, x)?;
    // The kernels return all three; the engine drops those no input needs.
    for (p, b) in [(Proj::Q, gq), (Proj::K, gk), (Proj::V, gv)] {
        if !rg(p) {
            tape.free(b);
        }
    }
    if dm.fused_qkv {
        return phi3_qkv(tape, dm, (gq, gk, gv)).map(Some);
    }
    let rk = if rg(Proj::K) {
        Some(rope(tape, dm.x(dm.kv)?, Some(gk))?)
    } else {
        None
    };
    let rq = if rg(Proj::Q) {
        Some(rope(tape, dm.x(dm.q)?, Some(gq))?)
    } else {
        None
    };
    // The projections' `view(...).transpose(1, 2)`: a gradient that is not contiguous in
    // the projection's layout is copied first (SDPA's v gradient already is).
    let kv = (dm.d, dm.kv, dm.bias_qkv);
    let xv = if rg(Proj::V) {
        let v_in = if dm.sdpa {
            gv
        } else {
            contiguous(tape, dm.x(dm.kv)?, gv)?
        };
        let xv = project_if(tape, dm, (kv.0, kv.1, kv.2, Proj::V), Some(v_in), x_rg)?;
        tape.free(v_in);
        xv
    } else {
        None
    };
    let xk = match rk {
        Some(rk) => {
            let k_in = head_norm(tape, dm, dm.kv, rk)?;
            let xk = project_if(tape, dm, (kv.0, kv.1, kv.2, Proj::K), Some(k_in), x_rg)?;
            tape.free(k_in);
            xk
        }
        None => None,
    };
    let acc = match (xv, xk) {
        (Some(v), Some(k)) => Some(tape.accumulate(v, k, dm.x(dm.d)?)?),
        (v, k) => v.or(k),
    };
    let xq = match rq {
        Some(rq) => {
            let q_in = head_norm(tape, dm, dm.q, rq)?;
            let xq = project_if(
                tape,
                dm,
                (dm.d, dm.q, dm.bias_qkv, Proj::Q),
                Some(q_in),
                x_rg,
            )?;
            tape.free(q_in);
            xq
        }
        None => None,
    };
    match (acc, xq) {
        (Some(acc), Some(xq)) => tape.accumulate(acc, xq, dm.x(dm.d)?).map(Some),
        (a, q) => Ok(a.or(q)),
    }
}

/// q's or k's gradient on its way to the projection: through the per-head norm where there is
/// one, then made contiguous in the projection's `[b, s, heads·head_dim]` layout; frees `g`.
fn head_norm(tape: &mut Tape, dm: &Dims, width: u128, g: Buf) -> Result<Buf, Overflow> {
    let g = match dm.qk_norm {
        Some(hd) => {
            let heads = width.checked_div(hd).unwrap_or(0);
            rms_norm(
                tape,
                (dm.e, dm.lora.is_none()),
                (checked::mul("tokens·heads", dm.t, heads)?, hd),
                g,
            )?
        }
        None => g,
    };
    contiguous(tape, dm.x(width)?, g)
}

/// Phi-3 (`modeling_phi3.py`): `cat([rotary(x[..., :r]), x[..., r:]])` on q and k (`r` the
/// full head here), then q, k and v sliced from one `qkv_proj` output; frees the three
/// gradients, returns the input's.
fn phi3_qkv(tape: &mut Tape, dm: &Dims, (gq, gk, gv): (Buf, Buf, Buf)) -> Result<Buf, Overflow> {
    let (qb, kb) = (dm.x(dm.q)?, dm.x(dm.kv)?);
    let rk = rope(tape, kb, None)?;
    let rq = rope(tape, qb, None)?;
    // `x[..., :r]`'s gradient, summed with the concatenation's gradient of the rest.
    let sk = tape.alloc(kb)?;
    tape.free(rk);
    let k = tape.accumulate(sk, gk, kb)?;
    let sq = tape.alloc(qb)?;
    tape.free(rq);
    let q = tape.accumulate(sq, gq, qb)?;
    let k = contiguous(tape, kb, k)?;
    let q = contiguous(tape, qb, q)?;
    // Each slice of the fused output gets a full-width gradient; v's, k's, q's, summed.
    let qkv = dm.x(checked::add(
        "q + 2·kv",
        dm.q,
        checked::mul("2·kv", dm.kv, 2)?,
    )?)?;
    let sv = tape.alloc(qkv)?;
    tape.free(gv);
    let sk = tape.alloc(qkv)?;
    tape.free(k);
    let acc = tape.accumulate(sv, sk, qkv)?;
    let sq = tape.alloc(qkv)?;
    tape.free(q);
    let acc = tape.accumulate(acc, sq, qkv)?;
    let n = checked::add("q + 2·kv", dm.q, checked::mul("2·kv", dm.kv, 2)?)?;
    let x = linear(tape, dm, dm.d, n, false)?;
    tape.free(acc);
    Ok(x)
}

/// `.contiguous()` of a gradient (a `clone`): frees `g`.
fn contiguous(tape: &mut Tape, bytes: u128, g: Buf) -> Result<Buf, Overflow> {
    let c = tape.alloc(bytes)?;
    tape.free(g);
    Ok(c)
}

/// Mixtral's MoE block (`modeling_mixtral.py`, transformers 5.24's grouped experts): fp32
/// softmax routing, top-k renormalised, fp32 weights, the experts' rows sorted by expert for
/// two `grouped_mm`s, combined in fp32. `g` (the block's output gradient) is shared with the
/// residual stream; returns the block input's gradient (the experts' and the router's summed).
fn mixtral_moe(
    tape: &mut Tape,
    dm: &Dims,
    (en, k, fm): (u128, u128, u128),
) -> Result<Buf, Overflow> {
    let p = |what: &str, f: &[u128]| checked::product(what, f.iter().copied());
    let (t, d, e) = (dm.t, dm.d, dm.e);
    let tk = p("T·k", &[t, k])?;
    // The combine: its fp32 result cast back, the sum over k, the rows put back in order.
    let a = tape.alloc(p("4Td", &[4, t, d])?)?;
    let b = tape.alloc(p("4Tkd", &[4, tk, d])?)?;
    tape.free(a);
    let z = tape.alloc(p("4Tkd", &[4, tk, d])?)?;
    let rows = tape.alloc(p("4Tkd", &[4, tk, d])?)?;
    tape.free(z);
    tape.free(b);
    // rows · weights: the experts' outputs' gradient (cast to the dtype) and the weights'.
    let m1 = tape.alloc(p("4Tkd", &[4, tk, d])?)?;
    let m2 = tape.alloc(p("4Tkd", &[4, tk, d])?)?;
    let out = tape.alloc(p("eTkd", &[e, tk, d])?)?;
    tape.free(m1);
    let wsum = tape.alloc(p("4Tk", &[4, tk])?)?;
    tape.free(m2);
    tape.free(rows);
    // down, act · up, gate_up: grouped matmuls over the sorted rows.
    tape.grad(p("eEdFm", &[e, en, d, fm])?)?;
    let xd = tape.alloc(p("eTkFm", &[e, tk, fm])?)?;
    tape.free(out);
    let ga = tape.alloc(p("eTkFm", &[e, tk, fm])?)?;
    let gu = tape.alloc(p("eTkFm", &[e, tk, fm])?)?;
    tape.free(xd);
    let gs = tape.alloc(p("eTkFm", &[e, tk, fm])?)?;
    tape.free(ga);
    let cat = tape.alloc(p("2eTkFm", &[2, e, tk, fm])?)?;
    tape.free(gs);
    tape.free(gu);
    tape.grad(p("2eEFmd", &[2, e, en, fm, d])?)?;
    let x3 = tape.alloc(p("eTkd", &[e, tk, d])?)?;
    tape.free(cat);
    // The weights' gradient and the rows' back to token order.
    let z = tape.alloc(p("4Tk", &[4, tk])?)?;
    let wp = tape.alloc(p("4Tk", &[4, tk])?)?;
    tape.free(z);
    tape.free(wsum);
    let z = tape.alloc(p("eTd", &[e, t, d])?)?;
    let xt = tape.alloc(p("eTd", &[e, t, d])?)?;
    tape.free(z);
    tape.free(x3);
    // The renormalisation `w / w.sum(-1)`.
    let r: Vec<Buf> = (0..4)
        .map(|_| tape.alloc(p("4Tk", &[4, tk])?))
        .collect::<Result<_, _>>()?;
    let buf = |i: usize| r.get(i).copied().unwrap_or(Buf(usize::MAX));
    tape.free(buf(0));
    tape.free(buf(1));
    let s = tape.alloc(p("4T", &[4, t])?)?;
    tape.free(buf(2));
    tape.free(wp);
    let ad = tape.alloc(p("4Tk", &[4, tk])?)?;
    tape.free(buf(3));
    tape.free(s);
    // top-k (scattered into [T, E]), the fp32 softmax, the logits' cast, the router.
    let z = tape.alloc(p("4TE", &[4, t, en])?)?;
    let sc = tape.alloc(p("4TE", &[4, t, en])?)?;
    tape.free(z);
    tape.free(ad);
    let sm = tape.alloc(p("4TE", &[4, t, en])?)?;
    tape.free(sc);
    let lb = tape.alloc(p("eTE", &[e, t, en])?)?;
    tape.free(sm);
    tape.grad(p("eEd", &[e, en, d])?)?;
    let xr = tape.alloc(p("eTd", &[e, t, d])?)?;
    tape.free(lb);
    tape.accumulate(xt, xr, p("eTd", &[e, t, d])?)
}

/// `LlamaMLP`: `down(act(gate(x)) * up(x))`; `g` shared (not freed); returns the input's
/// gradient.
fn mlp(tape: &mut Tape, dm: &Dims, g: Buf, own: bool) -> Result<Buf, Overflow> {
    if let Some(moe) = dm.moe {
        tape.at.push_str("MoE block");
        return mixtral_moe(tape, dm, moe);
    }
    tape.at.push_str("MLP");
    let xd = project(tape, dm, (dm.ff, dm.d, false, Proj::Down), None)?;
    if own {
        tape.free(g);
    }
    let ga = tape.alloc(dm.x(dm.ff)?)?;
    let gu = tape.alloc(dm.x(dm.ff)?)?;
    tape.free(xd);
    if dm.code.fused_gate_up {
        // `gate, up = gate_up_proj(x).chunk(2)`: the activation's gradient, then both
        // halves concatenated for the one projection.
        let gs = tape.alloc(dm.x(dm.ff)?)?;
        tape.free(ga);
        let two = checked::mul("2·ff", dm.ff, 2)?;
        let cat = tape.alloc(dm.x(two)?)?;
        tape.free(gs);
        tape.free(gu);
        let x = project(tape, dm, (dm.d, two, false, Proj::Gate), Some(cat))?;
        tape.free(cat);
        return Ok(x);
    }
    let xu = project(tape, dm, (dm.d, dm.ff, false, Proj::Up), Some(gu))?;
    tape.free(gu);
    let gs = tape.alloc(dm.x(dm.ff)?)?;
    tape.free(ga);
    let xg = project(tape, dm, (dm.d, dm.ff, false, Proj::Gate), Some(gs))?;
    tape.free(gs);
    tape.accumulate(xu, xg, dm.x(dm.d)?)
}

/// One pre-norm decoder layer: `h = x + attn(norm1(x)); y = h + mlp(norm2(h))`; frees `g`,
/// returns the gradient of the layer's input where it needs one (`x_rg`: not layer 0's
/// under LoRA, whose input is the frozen embedding's output).
fn layer(
    tape: &mut Tape,
    dm: &Dims,
    g: Buf,
    (name, x_rg): (&str, bool),
) -> Result<Option<Buf>, Overflow> {
    tape.at = format!("{name}'s ");
    let m = mlp(tape, dm, g, false)?;
    let n2 = norm(tape, dm, m)?;
    let h = tape.accumulate(g, n2, dm.x(dm.d)?)?;
    tape.at = format!("{name}'s ");
    let Some(a) = attention(tape, dm, h, x_rg, false)? else {
        return Ok(None);
    };
    let n1 = norm(tape, dm, a)?;
    tape.accumulate(h, n1, dm.x(dm.d)?).map(Some)
}

/// A Gemma 2 layer (`modeling_gemma2.py`): `h = x + post_attn(attn(pre_attn(x))); y = h +
/// post_ff(mlp(pre_ff(h)))`, Gemma's norms, eager attention with soft-capped scores; frees
/// `g`, returns the input's gradient.
fn sandwich_layer(tape: &mut Tape, dm: &Dims, g: Buf, name: &str) -> Result<Option<Buf>, Overflow> {
    tape.at = format!("{name}'s MLP");
    let rows = (dm.t, dm.d);
    let n = gemma_rms_norm(tape, dm.e, rows, (g, false))?;
    let m = mlp(tape, dm, n, true)?;
    let n2 = gemma_rms_norm(tape, dm.e, rows, (m, true))?;
    let h = tape.accumulate(g, n2, dm.x(dm.d)?)?;
    tape.at = format!("{name}'s attention");
    let na = gemma_rms_norm(tape, dm.e, rows, (h, false))?;
    // Its output's gradient is the post-norm's own, freed after `o_proj`.
    let Some(a) = attention(tape, dm, na, true, true)? else {
        return Ok(None);
    };
    let n1 = gemma_rms_norm(tape, dm.e, rows, (a, true))?;
    tape.accumulate(h, n1, dm.x(dm.d)?).map(Some)
}

/// `Olmo2RMSNorm` (`modeling_olmo2.py`): `(weight · (x.float() · rsqrt(…))).to(dtype)`; `g`
/// freed only when this norm is its last reader (`own`), not where the residual stream shares
/// it.
fn olmo_rms_norm(
    tape: &mut Tape,
    e: u128,
    rows: (u128, u128),
    g: (Buf, bool),
) -> Result<Buf, Overflow> {
    fp32_rms_norm(tape, (e, true), rows, g)
}

/// `OLMo` 2's rotary (`apply_rotary_pos_emb` on q and k cast to fp32 by the caller, against fp32
/// tables, `rotate_half` in the dtype): `g32` the fp32 gradient (freed), `bytes` the tensor's
/// in the dtype; returns the unrotated tensor's gradient in the dtype.
fn olmo_rope(tape: &mut Tape, bytes: u128, g32: Buf) -> Result<Buf, Overflow> {
    let wide = checked::mul("2·bytes", bytes, 2)?;
    let m1 = tape.alloc(wide)?;
    let mb = tape.alloc(bytes)?;
    tape.free(m1);
    let neg = tape.alloc(bytes / 2)?;
    let sb2 = tape.alloc(bytes)?;
    tape.free(neg);
    let sb1 = tape.alloc(bytes)?;
    tape.free(mb);
    let acc = tape.accumulate(sb2, sb1, bytes)?;
    let mc = tape.alloc(wide)?;
    let mcb = tape.alloc(bytes)?;
    tape.free(mc);
    tape.free(g32);
    tape.accumulate(acc, mcb, bytes)
}

/// An `OLMo` 2 layer (`modeling_olmo2.py`, post-norms): `h = x + norm_a(attn(x)); y = h +
/// norm_f(mlp(h))`, q and k normed over their full width before the rotary; frees `g`,
/// returns the input's gradient.
fn olmo_layer(tape: &mut Tape, dm: &Dims, g: Buf, name: &str) -> Result<Buf, Overflow> {
    tape.at = format!("{name}'s MLP");
    let n = olmo_rms_norm(tape, dm.e, (dm.t, dm.d), (g, false))?;
    let xd = linear(tape, dm, dm.ff, dm.d, false)?;
    tape.free(n);
    let ga = tape.alloc(dm.x(dm.ff)?)?;
    let gu = tape.alloc(dm.x(dm.ff)?)?;
    tape.free(xd);
    let xu = linear(tape, dm, dm.d, dm.ff, false)?;
    tape.free(gu);
    // h's gradient: the residual's, then each of the MLP's inputs' (h itself) in turn.
    let h = tape.accumulate(g, xu, dm.x(dm.d)?)?;
    let gs = tape.alloc(dm.x(dm.ff)?)?;
    tape.free(ga);
    let xg = linear(tape, dm, dm.d, dm.ff, false)?;
    tape.free(gs);
    let h = tape.accumulate(h, xg, dm.x(dm.d)?)?;
    tape.at = format!("{name}'s attention");
    let n = olmo_rms_norm(tape, dm.e, (dm.t, dm.d), (h, false))?;
    let xo = linear(tape, dm, dm.q, dm.d, false)?;
    tape.free(n);
    let (gq, gk, gv) = qkv_grads(tape, dm, xo)?;
    let f = |w: u128| checked::mul("t·w·4", checked::mul("t·w", dm.t, w)?, 4);
    let k32 = tape.alloc(f(dm.kv)?)?;
    tape.free(gk);
    let q32 = tape.alloc(f(dm.q)?)?;
    tape.free(gq);
    let rk = olmo_rope(tape, dm.x(dm.kv)?, k32)?;
    let rq = olmo_rope(tape, dm.x(dm.q)?, q32)?;
    let ck = contiguous(tape, dm.x(dm.kv)?, rk)?;
    let cq = contiguous(tape, dm.x(dm.q)?, rq)?;
    // The layer's input gradient gathers the residual's and v's, k's, q's inputs'.
    let v_in = if dm.sdpa {
        gv
    } else {
        contiguous(tape, dm.x(dm.kv)?, gv)?
    };
    let xv = linear(tape, dm, dm.d, dm.kv, false)?;
    tape.free(v_in);
    let x = tape.accumulate(h, xv, dm.x(dm.d)?)?;
    let nk = olmo_rms_norm(tape, dm.e, (dm.t, dm.kv), (ck, true))?;
    let xk = linear(tape, dm, dm.d, dm.kv, false)?;
    tape.free(nk);
    let x = tape.accumulate(x, xk, dm.x(dm.d)?)?;
    let nq = olmo_rms_norm(tape, dm.e, (dm.t, dm.q), (cq, true))?;
    let xq = linear(tape, dm, dm.d, dm.q, false)?;
    tape.free(nq);
    tape.accumulate(x, xq, dm.x(dm.d)?)
}

/// One stack of decoder layers: no position or token-type table, no embedding norm or
/// projection, a final norm that `final_norm` accepts, an LM head without biases (`untied`:
/// not the embedding either) — what every layer program's walk from the loss to the
/// embedding assumes.
fn plain_model(
    spec: &ModelSpec,
    final_norm: impl Fn(&llmsize_core::spec::Norm) -> bool,
    untied: bool,
) -> bool {
    spec.stacks.len() == 1
        && spec.stacks.iter().all(|s| {
            s.position.is_none()
                && s.token_type.is_none()
                && s.embedding_norm.is_none()
                && s.final_norm.as_ref().is_some_and(&final_norm)
        })
        && spec.embedding_projections.is_empty()
        && matches!(spec.head, OutputHead::Lm { biases: 0, transform: None, tied } if !(untied && tied))
}

/// A layer of attention and an MLP only (no cross-attention, extras or recurrent state), with
/// `norms` norms that `norm` accepts.
fn plain_layer(
    l: &llmsize_core::spec::Layer,
    norms: usize,
    norm: impl Fn(&llmsize_core::spec::Norm) -> bool,
) -> bool {
    l.cross_attention.is_none()
        && l.extras.is_empty()
        && l.state.is_none()
        && l.norms.len() == norms
        && l.norms.iter().all(norm)
}

/// `OLMo` 2's layout as [`olmo_layer`] reads it.
fn olmo_layout(spec: &ModelSpec, p: &llmsize_core::profile::TrainingProfile, o: &Options) -> bool {
    let rms = |n: &llmsize_core::spec::Norm| n.kind == NormKind::RmsNorm;
    o.e == 2
        && plain_model(spec, rms, true)
        && spec.layer_kinds().all(|l| {
            let attn = matches!(&l.attention, Attention::Standard(a)
                if !a.fused_qkv && !a.q_bias && !a.o_bias && !a.sinks
                    && a.q_norm.is_some_and(|n| rms(&n) && Some(n.dim) == a.num_heads.checked_mul(a.head_dim))
                    && a.k_norm.is_some_and(|n| rms(&n) && Some(n.dim) == a.num_kv_heads.checked_mul(a.head_dim))
                    && p.rotary_dims.is_none_or(|r| r == a.head_dim)
                    && p.rotary_tables <= 1
                    && l.sliding_window.is_none_or(|w| w >= o.seq));
            let ffn = matches!(l.ffn, Ffn::Dense(m) if m.gated && !m.up_bias && !m.down_bias);
            attn && ffn && plain_layer(l, 2, rms)
        })
}

/// `nn.LayerNorm` (`native_layer_norm_backward`: the input's gradient and the weight's and
/// bias's, in one op); frees `g`.
fn layer_norm(tape: &mut Tape, dm: &Dims, g: Buf) -> Result<Buf, Overflow> {
    let x = tape.alloc(dm.x(dm.d)?)?;
    let w = checked::mul("d·e", dm.d, dm.e)?;
    tape.grad(w)?;
    tape.grad(w)?;
    tape.free(g);
    Ok(x)
}

/// A GPT-NeoX layer (`modeling_gpt_neox.py`, parallel residual): `x + attn(ln1(x)) +
/// mlp(ln2(x))`, biased projections, fused `query_key_value`, rotary on the first `rot`
/// dimensions of each head; frees `g`, returns the input's gradient.
fn neox_layer(tape: &mut Tape, dm: &Dims, g: Buf, name: &str) -> Result<Buf, Overflow> {
    tape.at = format!("{name}'s MLP");
    // The MLP: dense_4h_to_h (addmm: the input's gradient first), GELU, dense_h_to_4h.
    let xd = linear(tape, dm, dm.ff, dm.d, true)?;
    let gg = tape.alloc(dm.x(dm.ff)?)?;
    tape.free(xd);
    let xu = linear(tape, dm, dm.d, dm.ff, true)?;
    tape.free(gg);
    let n2 = norm(tape, dm, xu)?;
    // x's gradient so far: the residual's (still the attention's too) plus the MLP path's.
    let acc = tape.alloc(dm.x(dm.d)?)?;
    tape.free(n2);
    tape.at = format!("{name}'s attention");
    let xo = linear(tape, dm, dm.q, dm.d, true)?;
    tape.free(g);
    let (gq, gk, gv) = qkv_grads(tape, dm, xo)?;
    let rot = |w: u128| -> Result<u128, Overflow> {
        let heads = w.checked_div(dm.head_dim).unwrap_or(0);
        dm.x(checked::mul("heads·rot", heads, dm.rot)?)
    };
    let rk = rope(tape, rot(dm.kv)?, None)?;
    let rq = rope(tape, rot(dm.q)?, None)?;
    let k = neox_unslice(tape, dm.x(dm.kv)?, gk, rk)?;
    let q = neox_unslice(tape, dm.x(dm.q)?, gq, rq)?;
    // `chunk(3)` of the fused output, transposed back: one `cat`, one `clone`.
    let three = checked::add("q + 2·kv", dm.q, checked::mul("2·kv", dm.kv, 2)?)?;
    let cat = tape.alloc(dm.x(three)?)?;
    tape.free(q);
    tape.free(k);
    tape.free(gv);
    let c = contiguous(tape, dm.x(three)?, cat)?;
    let xq = linear(tape, dm, dm.d, three, true)?;
    tape.free(c);
    let n1 = norm(tape, dm, xq)?;
    tape.accumulate(acc, n1, dm.x(dm.d)?)
}

/// q's or k's gradient from its rotated part's (`rot`, whose own buffer stays until here)
/// and the pass-through part's (a view of `g`): each sliced back to the full width, summed.
fn neox_unslice(tape: &mut Tape, bytes: u128, g: Buf, rot: Buf) -> Result<Buf, Overflow> {
    let pass = tape.alloc(bytes)?;
    tape.free(g);
    let r = tape.alloc(bytes)?;
    tape.free(rot);
    tape.accumulate(pass, r, bytes)
}

/// GPT-NeoX's layout as [`neox_layer`] reads it.
fn neox_layout(spec: &ModelSpec, p: &llmsize_core::profile::TrainingProfile, o: &Options) -> bool {
    let ln = |n: &llmsize_core::spec::Norm| n.kind == NormKind::LayerNorm && n.bias;
    p.parallel_residual
        && plain_model(spec, ln, true)
        && spec.layer_kinds().all(|l| {
            let attn = matches!(&l.attention, Attention::Standard(a)
                if a.fused_qkv && a.q_bias && a.o_bias && a.q_norm.is_none() && !a.sinks
                    && a.num_kv_heads == a.num_heads
                    && p.rotary_dims.is_some_and(|r| r > 0 && r < a.head_dim && r % 2 == 0)
                    && l.sliding_window.is_none_or(|w| w >= o.seq));
            let ffn = matches!(l.ffn, Ffn::Dense(m) if !m.gated && m.up_bias && m.down_bias);
            attn && ffn && plain_layer(l, 2, ln)
        })
}

/// Mixtral's routing, as [`mixtral_moe`] was traced on: a softmax over every expert, the top
/// k renormalised, fp32 weights, a bf16 router; full fine-tuning of a llama layer.
fn mixtral_routing(p: &llmsize_core::profile::TrainingProfile, o: &Options) -> bool {
    p.routing == llmsize_core::profile::Routing::SoftmaxThenTopK
        && p.topk_renormalized
        && !p.routing_weights_in_dtype
        && o.lora.is_none()
        && o.style == LayerStyle::Llama
}

/// Mixtral's experts: a plain router, gated experts without biases, no shared expert.
fn mixtral_experts(m: &llmsize_core::spec::Moe) -> bool {
    m.router
        && !m.router_bias.present()
        && m.shared.is_none()
        && m.expert.gated
        && !m.expert.up_bias
        && !m.expert.down_bias
}

/// Why a model's backward is not derived here (`None`: it is).
fn unsupported(spec: &ModelSpec, o: &Options) -> Option<String> {
    let style = spec.training.as_ref().map(|p| (p.style, p));
    let Some((LayerStyle::Llama | LayerStyle::GptNeox, p)) = style else {
        return Some(format!(
            "the backward of `{}` layers is not derived op by op",
            spec.model_type
        ));
    };
    if !p.backward_traced {
        return Some(format!(
            "the backward of `{}`'s code is not traced op by op",
            spec.model_type
        ));
    }
    if o.trains_less {
        return Some(
            "the backward of frozen parts, or of LoRA other than every linear of the layers, is not derived op by op"
                .into(),
        );
    }
    if o.lora.is_some() && (o.e == 4 || o.style != LayerStyle::Llama) {
        return Some("the backward of LoRA is derived for 16-bit llama-layout bases only".into());
    }
    if !o.pure {
        return Some(
            "the backward under mixed precision or autocast is not derived op by op".into(),
        );
    }
    if o.checkpointing {
        return Some(
            "with checkpointing, the recomputed layers' tensors stay held (the truth measures it within a few %)"
                .into(),
        );
    }
    if p.attention_dropout || p.hidden_dropout || p.embedding_dropout {
        return Some("dropout's masks in backward are not derived".into());
    }
    if o.code.block_norms == BlockNorms::Sandwich
        && (o.code.norm != NormCode::Gemma || o.lora.is_some() || o.attn == AttnImpl::Sdpa)
    {
        return Some(
            "the backward of sandwich-normed layers is derived for Gemma's norms, full fine-tuning, eager"
                .into(),
        );
    }
    if o.code.block_norms == BlockNorms::Output {
        return (o.lora.is_some() || !olmo_layout(spec, p, o)).then(|| {
            format!(
                "the backward of this `{}` layer layout is not derived op by op",
                spec.model_type
            )
        });
    }
    if o.style == LayerStyle::GptNeox {
        return (!neox_layout(spec, p, o)).then(|| {
            format!(
                "the backward of this `{}` layer layout is not derived op by op",
                spec.model_type
            )
        });
    }
    let simple = plain_model(spec, |n| n.kind == NormKind::RmsNorm, false)
        && spec.layer_kinds().all(|l| {
            let attn = match &l.attention {
                Attention::Standard(a) => {
                    let per_head = |n: Option<llmsize_core::spec::Norm>| {
                        n.is_none_or(|n| n.kind == NormKind::RmsNorm && n.dim == a.head_dim)
                    };
                    per_head(a.q_norm)
                        && per_head(a.k_norm)
                        && a.q_norm.is_some() == a.k_norm.is_some()
                        && !a.sinks
                        && a.fused_qkv == o.code.fused_gate_up
                        && !a.o_bias
                        && a.q_bias == a.k_bias
                        && a.k_bias == a.v_bias
                        && p.rotary_dims.is_none_or(|r| r == a.head_dim)
                        && l.sliding_window.is_none_or(|w| w >= o.seq)
                }
                _ => false,
            };
            let ffn = match &l.ffn {
                Ffn::Dense(m) => m.gated && !m.up_bias && !m.down_bias,
                Ffn::Moe(m) => {
                    !spec.facts.router_fp32 && mixtral_routing(p, o) && mixtral_experts(m)
                }
                Ffn::Absent => false,
            };
            attn && ffn
                && plain_layer(
                    l,
                    if o.code.block_norms == BlockNorms::Sandwich {
                        4
                    } else {
                        2
                    },
                    |n| n.kind == NormKind::RmsNorm,
                )
        });
    (!simple).then(|| {
        format!(
            "the backward of this `{}` layer layout is not derived op by op",
            spec.model_type
        )
    })
}

/// What the op rules read of a profile beyond its layer style.
#[allow(
    clippy::struct_excessive_bools,
    reason = "each is a switch of the layer's code"
)]
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Code {
    norm: NormCode,
    block_norms: BlockNorms,
    attn_softcap: bool,
    logit_softcap: bool,
    embedding_normalizer: bool,
    /// One `gate_up_proj`, chunked into gate and up (Phi-3's): the type's module names say
    /// so, gate's and up's being one.
    fused_gate_up: bool,
}

impl Code {
    pub(crate) fn of(p: Option<&TrainingProfile>) -> Self {
        p.map_or_else(Code::default, |p| Code {
            norm: p.norm,
            block_norms: p.block_norms,
            attn_softcap: p.attn_softcap,
            logit_softcap: p.logit_softcap,
            embedding_normalizer: p.embedding_normalizer,
            fused_gate_up: {
                let name = |k: TensorKind| p.modules.iter().find(|m| m.0 == k).map(|m| m.1);
                name(TensorKind::FfnGate).is_some_and(|g| Some(g) == name(TensorKind::FfnUp))
            },
        })
    }
}

/// The question.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Options {
    pub batch: u64,
    pub seq: u64,
    pub e: u128,
    pub attn: AttnImpl,
    pub checkpointing: bool,
    /// Frozen parts, or LoRA other than what [`Options::lora`] describes: some gradients
    /// are not made.
    pub trains_less: bool,
    /// LoRA of this rank on every linear of the decoder layers (and nothing else), without
    /// dropout or DoRA.
    pub lora: Option<Adapters>,
    /// Weights, activations and gradients in one dtype (`--precision pure`).
    pub pure: bool,
    /// The type's layer code (from its training profile).
    pub style: LayerStyle,
    /// The profile's norms and soft-capping.
    pub code: Code,
    /// The kernels: the rules are torch's CPU ones.
    pub device: crate::Device,
    /// Rotary dimensions per head (the profile's).
    pub rotary: Option<u64>,
}

/// The peak of `loss.backward()` of `spec`, given what the forward retained and the bytes of
/// every gradient (for the estimate).
pub(crate) fn backward_peak(
    spec: &ModelSpec,
    o: &Options,
    retained: u128,
    gradients: u128,
) -> Result<BackwardPeak, SpecError> {
    if let Some(why) = unsupported(spec, o) {
        return estimate(spec, o, retained, gradients, why);
    }
    let mut tape = Tape::default();
    walk(&mut tape, spec, o)?;
    let transient = tape.peak.saturating_sub(tape.peak_grads);
    let bytes = checked::add("backward peak", retained, tape.peak)?;
    Ok(BackwardPeak {
        bytes,
        terms: vec![
            Term::new(
                "backward_retained",
                "what the forward left for backward (held through the backward)",
                "retained",
                retained,
            ),
            Term::new(
                "backward_gradients_so_far",
                format!(
                    "parameter gradients made before the peak ({})",
                    tape.peak_at
                ),
                "Σ gradients of the ops already run",
                tape.peak_grads,
            ),
            Term::new(
                "backward_transient",
                format!("gradients in flight at the peak ({})", tape.peak_at),
                "op by op (autograd's derivatives)",
                transient,
            ),
        ],
        // The walk is torch's CPU kernels'; on CUDA, SDPA's backward kernels (flash, memory-
        // efficient) allocate their own workspace, which no op-level rule sees.
        estimate: (o.device == crate::Device::Cuda && o.attn == AttnImpl::Sdpa).then(|| {
            "derived from the CPU kernels; CUDA's SDPA backward allocates its own workspace"
                .to_string()
        }),
    })
}

/// The loss, the head, the final norm, the layers from the last, the embedding.
fn walk(tape: &mut Tape, spec: &ModelSpec, o: &Options) -> Result<(), SpecError> {
    let t = u128::from(checked::mul("batch·seq", o.batch, o.seq)?);
    let d = u128::from(spec.hidden_size);
    let v = u128::from(spec.vocab_size);
    let tied = matches!(spec.head, OutputHead::Lm { tied: true, .. });
    let e = o.e;
    let x = |w: u128| -> Result<u128, Overflow> {
        checked::mul("t·w·e", checked::mul("t·w", t, w)?, e)
    };
    tape.at = "the loss".into();
    // `ones_like(loss)`, then cross-entropy over fp32 logits: nll_loss's and log_softmax's
    // gradients (fp32), cast back to the logits' dtype.
    tape.alloc(4)?;
    let tv4 = checked::mul("t·V·4", checked::mul("t·V", t, v)?, 4)?;
    let a = tape.alloc(tv4)?;
    let b = tape.alloc(tv4)?;
    tape.free(a);
    let c = if e == 4 {
        b
    } else {
        let c = tape.alloc(x(v)?)?;
        tape.free(b);
        c
    };
    let mut c = c;
    if o.code.logit_softcap {
        // The final logit soft-capping (`/ cap`, `tanh`, `· cap`) on [T, V] in the dtype.
        for _ in 0..3 {
            let next = tape.alloc(x(v)?)?;
            tape.free(c);
            c = next;
        }
    }
    tape.at = "the output head".into();
    let full = o.lora.is_none();
    let vd = checked::mul("V·d·e", checked::mul("V·d", v, d)?, e)?;
    let head_grad = if full { Some(tape.grad(vd)?) } else { None };
    let mut g = tape.alloc(x(d)?)?;
    tape.free(c);
    let dm0 = Dims {
        t,
        e,
        d,
        q: 0,
        kv: 0,
        ff: 0,
        scores: 0,
        mha: true,
        bias_qkv: false,
        style: o.style,
        fused_qkv: false,
        code: o.code,
        moe: None,
        head_dim: 0,
        rot: 0,
        lora: o.lora,
        qk_norm: None,
        sdpa: true,
    };
    tape.at = "the final norm".into();
    g = norm(tape, &dm0, g)?;
    let stack = spec.stacks.first();
    let runs: Vec<_> = stack.map(|s| s.layers.runs().to_vec()).unwrap_or_default();
    for run in runs.iter().rev() {
        let Some(kind) = stack.and_then(|s| s.layers.kinds().get(run.kind)) else {
            continue;
        };
        let dm = layer_dims(kind, &dm0, o)?;
        // Under LoRA layer 0's input (the frozen embedding's output) needs no gradient.
        let first = u64::from(!(full || run.start > 0));
        if run.count > first {
            // saturates: never, `first` is 1 only for a run starting at layer 0.
            let (start, count) = (
                run.start.saturating_add(first),
                run.count.saturating_sub(first),
            );
            match run_of_layers(tape, &dm, g, (start, count), true)? {
                Some(next) => g = next,
                None => return Ok(()),
            }
        }
        if first == 1 {
            run_of_layers(tape, &dm, g, (0, 1), false)?;
            return Ok(());
        }
    }
    let Some(head_grad) = head_grad else {
        return Ok(());
    };
    tape.at = "the token embedding".into();
    if o.code.embedding_normalizer {
        // `hidden * normalizer` (√d in the dtype): its gradient, then the embedding's.
        let scaled = tape.alloc(x(d)?)?;
        tape.free(g);
        g = scaled;
    }
    if tied {
        // The head's gradient is the embedding's: `AccumulateGrad` sums the two out of place.
        let dense = tape.alloc(vd)?;
        tape.free(g);
        tape.accumulate(head_grad, dense, vd)?;
    } else {
        tape.grad(vd)?;
        tape.free(g);
    }
    Ok(())
}

fn layer_dims(
    kind: &llmsize_core::spec::Layer,
    dm0: &Dims,
    o: &Options,
) -> Result<Dims, SpecError> {
    let bad = |found: &str| SpecError::Invalid {
        field: "layers".into(),
        found: found.into(),
        expected: "the llama layout this walk was chosen for".into(),
    };
    let Attention::Standard(a) = &kind.attention else {
        return Err(bad("a layer without standard attention"));
    };
    let (ff, moe) = match &kind.ffn {
        Ffn::Dense(m) => (m.intermediate, None),
        Ffn::Moe(m) => (
            0,
            Some((
                u128::from(m.num_experts),
                u128::from(m.experts_per_token),
                u128::from(m.expert.intermediate),
            )),
        ),
        Ffn::Absent => return Err(bad("a layer without an MLP")),
    };
    let h = u128::from(a.num_heads);
    let b = u128::from(o.batch);
    let s = u128::from(o.seq);
    Ok(Dims {
        q: checked::mul("heads·head_dim", h, u128::from(a.head_dim))?,
        kv: checked::mul(
            "kv_heads·head_dim",
            u128::from(a.num_kv_heads),
            u128::from(a.head_dim),
        )?,
        ff: u128::from(ff),
        moe,
        scores: checked::mul(
            "b·h·s·s",
            checked::mul("b·h", b, h)?,
            checked::mul("s·s", s, s)?,
        )?,
        mha: a.num_kv_heads == a.num_heads,
        bias_qkv: a.q_bias,
        head_dim: u128::from(a.head_dim),
        rot: u128::from(o.rotary.unwrap_or(a.head_dim)),
        qk_norm: a.q_norm.map(|_| u128::from(a.head_dim)),
        fused_qkv: a.fused_qkv,
        sdpa: o.attn == AttnImpl::Sdpa,
        ..*dm0
    })
}

/// `count` equal layers from `start`, run from the last: one layer simulated, the rest each
/// add the same gradients, so the run's peak is at its last layer to run (`start`).
fn run_of_layers(
    tape: &mut Tape,
    dm: &Dims,
    g: Buf,
    (start, count): (u64, u64),
    x_rg: bool,
) -> Result<Option<Buf>, SpecError> {
    let before = (
        tape.peak,
        tape.peak_grads,
        std::mem::take(&mut tape.peak_at),
    );
    let grads_before = tape.grads;
    tape.peak = 0;
    let name = if count == 1 {
        format!("layer {start}")
    } else {
        format!("layer {start}, the last of {count} like it to run")
    };
    let out = if dm.style == LayerStyle::GptNeox {
        neox_layer(tape, dm, g, &name).map(Some)?
    } else if dm.code.block_norms == BlockNorms::Output {
        olmo_layer(tape, dm, g, &name).map(Some)?
    } else if dm.code.block_norms == BlockNorms::Sandwich {
        sandwich_layer(tape, dm, g, &name)?
    } else {
        layer(tape, dm, g, (&name, x_rg))?
    };
    // The layers of the run that run before the last add the same gradients each.
    let more = checked::mul(
        "gradients·layers",
        tape.grads.saturating_sub(grads_before),
        u128::from(count.saturating_sub(1)),
    )?;
    let local = checked::add("backward peak", tape.peak, more)?;
    if local > before.0 {
        tape.peak = local;
        tape.peak_grads = checked::add("gradients", tape.peak_grads, more)?;
    } else {
        (tape.peak, tape.peak_grads, tape.peak_at) = before;
    }
    tape.grads = checked::add("gradients", tape.grads, more)?;
    tape.live = checked::add("backward live bytes", tape.live, more)?;
    Ok(out)
}

/// A type whose backward is not derived: what the forward held, every gradient, and the
/// larger of the loss's fp32 gradients and one residual-stream gradient.
fn estimate(
    spec: &ModelSpec,
    o: &Options,
    retained: u128,
    gradients: u128,
    why: String,
) -> Result<BackwardPeak, SpecError> {
    let t = u128::from(checked::mul("batch·seq", o.batch, o.seq)?);
    let loss = checked::mul(
        "t·V·8",
        checked::mul("t·V", t, u128::from(spec.vocab_size))?,
        8,
    )?;
    let stream = checked::mul(
        "t·d·e",
        checked::mul("t·d", t, u128::from(spec.hidden_size))?,
        o.e,
    )?;
    let transient = loss.max(stream);
    let bytes = checked::sum("backward peak", [retained, gradients, transient, 4])?;
    Ok(BackwardPeak {
        bytes,
        terms: vec![
            Term::new(
                "backward_retained",
                "what the forward left for backward",
                "retained",
                retained,
            ),
            Term::new(
                "backward_gradients_so_far",
                "every parameter gradient",
                "Σ gradients",
                gradients,
            ),
            Term::new(
                "backward_transient",
                "the larger of the loss's fp32 gradients and one residual-stream gradient (an estimate)",
                format!("max(8·b·s·V, b·s·d·e) = max({loss}, {stream})"),
                transient,
            ),
        ],
        estimate: Some(why),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Llama-2-7B's layer at 512 tokens, bf16, as the walk sees it.
    fn llama_dims(sdpa: bool, lora: Option<Adapters>) -> Dims {
        Dims {
            t: 512,
            e: 2,
            d: 4096,
            q: 4096,
            kv: 4096,
            ff: 11008,
            scores: 32 * 512 * 512,
            mha: true,
            bias_qkv: false,
            style: LayerStyle::Llama,
            fused_qkv: false,
            code: Code::default(),
            moe: None,
            head_dim: 128,
            rot: 128,
            lora,
            qk_norm: None,
            sdpa,
        }
    }

    /// The run of `count` equal layers simulated once and extrapolated gives the peak,
    /// the gradients and the live bytes that simulating every layer gives.
    fn extrapolation_matches(dm: &Dims, count: u64) {
        let mut one = Tape::default();
        let g = one.alloc(dm.x(dm.d).unwrap()).unwrap();
        run_of_layers(&mut one, dm, g, (0, count), true).unwrap();
        let mut each = Tape::default();
        let mut g = each.alloc(dm.x(dm.d).unwrap()).unwrap();
        for layer in (0..count).rev() {
            g = run_of_layers(&mut each, dm, g, (layer, 1), true)
                .unwrap()
                .unwrap();
        }
        assert_eq!(
            (one.peak, one.grads, one.live),
            (each.peak, each.grads, each.live)
        );
    }

    #[test]
    fn a_run_is_one_layer_extrapolated() {
        for sdpa in [true, false] {
            extrapolation_matches(&llama_dims(sdpa, None), 32);
            let ads = Adapters {
                rank: 16,
                on: [true; 7],
                dropout: true,
            };
            extrapolation_matches(&llama_dims(sdpa, Some(ads)), 7);
        }
    }

    #[test]
    fn a_layer_keeps_its_gradients_and_hands_one_stream_gradient_on() {
        // Full fine-tuning: after one layer the live bytes are the gradient flowing on (one
        // [T, d] tensor, as the one that came in) plus the layer's weight gradients:
        // 2·(4·d² + 3·d·ff + 2·d) bytes (q, k, v, o; gate, up, down; two norms).
        let dm = llama_dims(true, None);
        let mut tape = Tape::default();
        let g = tape.alloc(dm.x(dm.d).unwrap()).unwrap();
        let before = tape.live;
        run_of_layers(&mut tape, &dm, g, (0, 1), true).unwrap();
        let (d, ff) = (4096u128, 11008u128);
        assert_eq!(tape.grads, 2 * (4 * d * d + 3 * d * ff + 2 * d));
        assert_eq!(tape.live, before + tape.grads);
    }
}
