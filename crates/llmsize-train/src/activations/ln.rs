//! What one training step keeps for backward in the `LayerNorm` families — GPT-2, GPT-NeoX
//! (Pythia), OPT, BLOOM, Falcon, `StarCoder2` — as their transformers 5.24 code runs on torch 2.15.
//!
//! The ground truth (`../shared/truth/train/README.md`, `formulas.py`) measured these steps on the
//! CPU kernels; the same oracle run on small configs of each family (dropout switched on and off,
//! fp32, batch 2, `LoRA` targets other than its two variants, `--freeze`) fixed what the
//! full-size runs could not separate. Each layer is walked as a dataflow: a tensor is saved when
//! the op that needs it for backward has an input that requires grad or a trainable weight, so
//! full fine-tuning, frozen parts, `LoRA` on a frozen base (which modules are adapted decides
//! what layer 0 keeps) and every dropout switch follow from one walk:
//! - a `Linear` saves its input for its weight gradient (only when the weight trains);
//! - `LayerNorm` saves its input, mean and rstd when its input requires grad or its weight trains;
//! - CPU `dropout` saves a noise tensor in the input's dtype, CUDA `native_dropout` a 1-byte mask;
//! - CPU SDPA with attention dropout falls back to the math path (fp32 q, k, v, probabilities,
//!   noise and dropped probabilities); without dropout the flash kernel saves q, k, v, out and
//!   the fp32 logsumexp (the CUDA kernels do so with dropout too, plus a philox seed and offset).
//!
//! `--device cuda` applies the README's documented kernel differences to this walk; those
//! figures are derived, not measured.

use std::ops::{Add, Mul};

use super::{ActInput, Activations};
use crate::{AttnImpl, Device, FreezePart, Term, sum};
use llmsize_core::checked::{self, Checked};
use llmsize_core::layout::TensorKind;
use llmsize_core::profile::{LayerStyle, PositionIds, TrainingProfile};
use llmsize_core::spec::{Attention, Ffn, Layer, StackRole};
use llmsize_core::units::thousands_u128;
use llmsize_core::{Overflow, SpecError};

// ------------------------------------------------------------------------------------ formulas

/// A formula: its symbols, the same with the values put in, and its value (checked: a step
/// that overflows is kept, and named with the formula's symbols where the value is used).
///
/// `X`'s operators are [`Checked`]'s, so `clippy.toml` allows them under
/// `arithmetic_side_effects` as it allows `Checked`'s.
#[derive(Debug, Clone)]
struct X {
    sym: String,
    num: String,
    value: Checked<u128>,
    sum: bool,
}

impl X {
    fn lit(n: u128) -> X {
        X {
            sym: n.to_string(),
            num: n.to_string(),
            value: Checked::new(n),
            sum: false,
        }
    }

    fn var(sym: &str, n: u128) -> X {
        X::derived(sym, Checked::new(n))
    }

    /// A symbol standing for a product of sizes (`T` = `b·s`), its value checked.
    fn derived(sym: &str, value: Checked<u128>) -> X {
        X {
            sym: sym.to_owned(),
            num: value
                .ok()
                .map_or_else(|| "overflow".to_owned(), |n| n.to_string()),
            value,
            sum: false,
        }
    }

    /// The value, or the error naming this formula and the step that overflowed.
    fn get(&self) -> Result<u128, Overflow> {
        self.value.get(&self.sym)
    }

    fn wrapped(&self, num: bool) -> String {
        let s = if num { &self.num } else { &self.sym };
        if self.sum {
            format!("({s})")
        } else {
            s.clone()
        }
    }
}

impl Mul for X {
    type Output = X;
    fn mul(self, o: X) -> X {
        if self.value.ok() == Some(1) && !self.sum && self.sym == "1" {
            return o;
        }
        X {
            sym: format!("{}·{}", self.wrapped(false), o.wrapped(false)),
            num: format!("{}·{}", self.wrapped(true), o.wrapped(true)),
            value: self.value * o.value,
            sum: false,
        }
    }
}

impl Add for X {
    type Output = X;
    fn add(self, o: X) -> X {
        X {
            sym: format!("{} + {}", self.sym, o.sym),
            num: format!("{} + {}", self.num, o.num),
            value: self.value + o.value,
            sum: true,
        }
    }
}

fn c(n: u128) -> X {
    X::lit(n)
}

// ------------------------------------------------------------------------------------ shapes

/// The sizes of one layer kind and of the step, as `u128` (products checked where used).
#[derive(Debug, Clone)]
struct Dims {
    /// Bytes per element of the weights' dtype.
    e: u128,
    b: u128,
    s: u128,
    d: u128,
    h: u128,
    kv: u128,
    hd: u128,
    f: u128,
    v: u128,
    /// Rotary dimensions per head (0: no rotary tables).
    rot: u128,
    /// `LoRA` rank.
    rank: u128,
    /// The layer's sliding window is shorter than the sequence: SDPA gets an explicit mask.
    window: bool,
}

impl Dims {
    fn e(&self) -> X {
        X::var("e", self.e)
    }
    fn b(&self) -> X {
        X::var("b", self.b)
    }
    fn s(&self) -> X {
        X::var("s", self.s)
    }
    fn s2(&self) -> X {
        X::derived("s²", Checked::new(self.s) * self.s)
    }
    fn t(&self) -> X {
        X::derived("T", Checked::new(self.b) * self.s)
    }
    fn d(&self) -> X {
        X::var("d", self.d)
    }
    fn h(&self) -> X {
        X::var("H", self.h)
    }
    fn a(&self) -> X {
        X::derived("A", Checked::new(self.h) * self.hd)
    }
    fn k(&self) -> X {
        X::derived("K", Checked::new(self.kv) * self.hd)
    }
    fn f(&self) -> X {
        X::var("F", self.f)
    }
    fn v(&self) -> X {
        X::var("V", self.v)
    }
    fn rot(&self) -> X {
        X::var("r_rope", self.rot)
    }
    fn rank(&self) -> X {
        X::var("r", self.rank)
    }
    /// `b·H·s²`, the size of one attention-score tensor.
    fn bhs2(&self) -> X {
        self.b() * self.h() * self.s2()
    }
    /// `e·T·d`, one `[b, s, d]` tensor in the weights' dtype.
    fn etd(&self) -> X {
        self.e() * self.t() * self.d()
    }
    /// `e·T·A`.
    fn eta(&self) -> X {
        self.e() * self.t() * self.a()
    }
}

// ------------------------------------------------------------------------------------ the walk

/// Where a saved tensor sits for tensor parallelism.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tp {
    /// Head- or MLP-width: Megatron's tensor parallelism divides it.
    Sharded,
    /// Width `d` (norms, residual stream, masks): only sequence parallelism divides it.
    Replicated,
}

/// One saved tensor (or a group of equal ones) of a layer or of the step.
#[derive(Debug, Clone)]
struct Piece {
    key: &'static str,
    what: String,
    x: X,
    tp: Tp,
}

/// The linear modules of a layer, by role.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Qkv,
    Q,
    K,
    V,
    O,
    Up,
    Down,
}

impl Role {
    fn label(self) -> &'static str {
        match self {
            Role::Qkv => "fused q/k/v",
            Role::Q => "q",
            Role::K => "k",
            Role::V => "v",
            Role::O => "attention output",
            Role::Up => "MLP up",
            Role::Down => "MLP down",
        }
    }

    fn of(kind: TensorKind) -> Option<Role> {
        Some(match kind {
            TensorKind::AttnQkv => Role::Qkv,
            TensorKind::AttnQ => Role::Q,
            TensorKind::AttnK => Role::K,
            TensorKind::AttnV => Role::V,
            TensorKind::AttnOutput => Role::O,
            TensorKind::FfnUp | TensorKind::FfnGate => Role::Up,
            TensorKind::FfnDown => Role::Down,
            _ => return None,
        })
    }
}

/// One `LoRA` adapter of a layer.
#[derive(Debug, Clone)]
struct Adapter {
    name: String,
    role: Role,
    n_in: u128,
}

#[allow(
    clippy::struct_excessive_bools,
    reason = "each is one switch of what trains, as the options name them"
)]
/// What trains: the base weights (full fine-tuning, minus `--freeze`) or the adapters.
#[derive(Debug, Clone)]
struct Trains {
    /// Base weights of each role train.
    attention: bool,
    mlp: bool,
    /// Norm weights train.
    norms: bool,
    /// The MLM head's transform trains (every full fine-tuning: no `--freeze` part holds
    /// it).
    transform: bool,
    /// The embedding tables train (the position table and, tied, the head with them).
    embeddings: bool,
    /// The output head's weight trains.
    head: bool,
    /// `LoRA` adapters (empty under full fine-tuning).
    adapters: Vec<Adapter>,
    /// `lora_dropout` > 0.
    lora_dropout: bool,
    /// The adapter on the MLM head transform's dense (BERT under all-linear): its name and
    /// input width.
    head_adapter: Option<(String, u128)>,
}

impl Trains {
    fn weight(&self, role: Role) -> bool {
        match role {
            Role::Qkv | Role::Q | Role::K | Role::V | Role::O => self.attention,
            Role::Up | Role::Down => self.mlp,
        }
    }
    fn adapted(&self, role: Role) -> bool {
        self.adapters.iter().any(|a| a.role == role)
    }
    /// Does the output of `role`'s module require grad, given its input?
    fn grad(&self, role: Role, input: bool) -> bool {
        input || self.weight(role) || self.adapted(role)
    }
}

/// The question, resolved.
#[allow(
    clippy::struct_excessive_bools,
    reason = "each is one switch of the modeling code (a dropout, the device, LoRA)"
)]
#[derive(Debug, Clone)]
struct Step {
    cpu: bool,
    attn: AttnImpl,
    attn_drop: bool,
    hid_drop: bool,
    emb_drop: bool,
    trains: Trains,
    /// The type's layer code, as its training profile states it (the switches read as they
    /// are: post-norm, the loss, the position ids, …).
    code: TrainingProfile,
    /// The embeddings and head around the layers, from the layout.
    ends: Ends,
}

/// What the layout says of the embeddings and the head (BERT's family varies them).
#[allow(
    clippy::struct_excessive_bools,
    reason = "each is a part the layout holds or not"
)]
#[derive(Debug, Clone)]
struct Ends {
    /// Width of the token embedding (ELECTRA's `embedding_size`; `d` for most).
    de: u128,
    /// Width of the MLM head transform's output (`d` without one).
    dh: u128,
    /// A token-type table (BERT's segments).
    token_types: bool,
    /// The embeddings are projected to `d` (ELECTRA's `embeddings_project`).
    projected: bool,
    /// An MLM head transform (`dense`, GELU, `LayerNorm`) before the decoder.
    head_transform: bool,
    /// A position table that trains with the embeddings (not a frozen sinusoid, not absent).
    learned_positions: bool,
    /// An embedding `LayerNorm` (`embeddings.LayerNorm`, `layernorm_embedding`).
    embedding_norm: bool,
    /// A `LayerNorm` after the last layer.
    final_norm: bool,
}

impl Ends {
    fn of(spec: &llmsize_core::spec::ModelSpec, stack: &llmsize_core::spec::Stack) -> Ends {
        let d = u128::from(spec.hidden_size);
        let transform = match &spec.head {
            llmsize_core::spec::OutputHead::Lm { transform, .. } => *transform,
            llmsize_core::spec::OutputHead::None => None,
        };
        Ends {
            de: spec.token_embedding.map_or(d, |t| u128::from(t.dim)),
            dh: transform.map_or(d, |t| u128::from(t.dense.output)),
            token_types: stack.token_type.is_some(),
            projected: !spec.embedding_projections.is_empty(),
            head_transform: transform.is_some(),
            learned_positions: matches!(
                stack.position,
                Some(llmsize_core::spec::PositionEmbedding::Learned { .. })
            ),
            embedding_norm: stack.embedding_norm.is_some(),
            final_norm: stack.final_norm.is_some(),
        }
    }
}

impl Step {
    /// The token embedding's output is a tensor of its own, not what layer 0 or the
    /// embedding norm saves: something (positions, token types, a dropout, a scale) comes
    /// between them — except Blenderbot-Small's norm, which reads the token embeddings.
    fn embedding_stands_alone(&self) -> bool {
        match self.code.style {
            LayerStyle::Bert => {
                !(self.ends.embedding_norm && self.code.embedding_norm_before_positions)
            }
            LayerStyle::Gpt2 | LayerStyle::Opt => true,
            LayerStyle::GptNeox | LayerStyle::Starcoder2 => self.emb_drop,
            _ => false,
        }
    }

    /// The CPU SDPA math path (attention dropout on the CPU).
    fn math(&self) -> bool {
        self.attn == AttnImpl::Sdpa && self.attn_drop && self.cpu
    }
    /// Bytes per element of a dropout's saved mask.
    fn noise(&self, x: &Dims) -> X {
        if self.cpu { x.e() } else { c(1) }
    }
    /// Bytes per element of `lora_dropout`'s saved noise (fp32 on the CPU, a 1-byte mask on
    /// CUDA).
    fn noise_lora(&self) -> X {
        if self.cpu { c(4) } else { c(1) }
    }
    /// A `LayerNorm`'s mean and rstd.
    fn ln_stats(&self, x: &Dims) -> X {
        if self.cpu {
            c(2) * x.e() * x.t()
        } else {
            c(2) * c(4) * x.t()
        }
    }
    fn noise_text(&self) -> &'static str {
        if self.cpu {
            "CPU dropout keeps a noise tensor in the input's dtype"
        } else {
            "CUDA native_dropout keeps a 1-byte mask (derived from the documented kernel difference, not measured)"
        }
    }
    fn stats_text(&self) -> &'static str {
        if self.cpu {
            "mean and rstd, in the input's dtype on the CPU"
        } else {
            "mean and rstd, fp32 on CUDA (derived from the documented kernel difference, not measured)"
        }
    }
}

/// Collects the pieces of one layer.
struct Pieces {
    list: Vec<Piece>,
}

impl Pieces {
    fn add(&mut self, saved: bool, key: &'static str, what: impl Into<String>, x: X, tp: Tp) {
        if saved && x.value.ok() != Some(0) {
            self.list.push(Piece {
                key,
                what: what.into(),
                x,
                tp,
            });
        }
    }
}

/// Which of q, k, v require grad, and the attention's saved tensors.
struct Qkv {
    q: bool,
    k: bool,
    v: bool,
}

impl Qkv {
    fn any(&self) -> bool {
        self.q || self.k || self.v
    }
}

/// The eager / math-path / flash attention of the sequential families (GPT-2, OPT, BLOOM,
/// `StarCoder2`); returns whether its output (the o-projection's input) is SDPA's own output.
fn sequential_attention(step: &Step, x: &Dims, g: &Qkv, p: &mut Pieces) -> bool {
    let e4 = x.e >= 4;
    let style = step.code.style;
    let bhs2 = x.bhs2();
    let fused = matches!(style, LayerStyle::Gpt2 | LayerStyle::Bloom);
    match step.attn {
        AttnImpl::Eager => {
            if style == LayerStyle::Gpt2 {
                // q, kᵀ and v views of `c_attn`'s output (batch 1: the whole buffer; else copies:
                // the same bytes for multi-head attention); the softmax in the weights' dtype.
                p.add(
                    g.any(),
                    "attn_qkv",
                    "q, kᵀ, v (views of the fused c_attn output, or copies)",
                    c(3) * x.eta(),
                    Tp::Sharded,
                );
                p.add(
                    g.any(),
                    "attn_probs",
                    "softmax output, in the weights' dtype",
                    x.e() * bhs2.clone(),
                    Tp::Sharded,
                );
            } else if style == LayerStyle::Bert {
                // Separate q, k, v; `softmax` in the weights' dtype (no fp32 upcast), saved for its
                // own backward and, without dropout, by probs·v.
                p.add(
                    g.k,
                    "attn_q",
                    "q, saved by q·kᵀ for k's gradient",
                    x.eta(),
                    Tp::Sharded,
                );
                p.add(
                    g.q,
                    "attn_k",
                    "kᵀ, saved for q's gradient",
                    x.eta(),
                    Tp::Sharded,
                );
                p.add(
                    g.q || g.k,
                    "attn_v",
                    "v, saved by probs·v",
                    x.eta(),
                    Tp::Sharded,
                );
                p.add(
                    (g.q || g.k) && step.code.scores_clamped,
                    "attn_clamped",
                    "the masked scores and the fp32 floor, saved by torch.max's clamp",
                    x.e() * bhs2.clone() + c(4),
                    Tp::Sharded,
                );
                p.add(
                    g.q || g.k || (g.v && !step.attn_drop),
                    "attn_probs",
                    "softmax output, in the weights' dtype",
                    x.e() * bhs2.clone(),
                    Tp::Sharded,
                );
            } else {
                p.add(
                    g.k,
                    "attn_q",
                    "q, saved by q·kᵀ for k's gradient",
                    x.eta(),
                    Tp::Sharded,
                );
                p.add(
                    g.q,
                    "attn_k",
                    "kᵀ (repeated to every head), saved for q's gradient",
                    x.eta(),
                    Tp::Sharded,
                );
                p.add(
                    g.q || g.k,
                    "attn_v",
                    "v (repeated to every head), saved by probs·v",
                    x.eta(),
                    Tp::Sharded,
                );
                p.add(
                    g.q || g.k,
                    "attn_softmax",
                    "fp32 softmax output",
                    c(4) * bhs2.clone(),
                    Tp::Sharded,
                );
                if !step.attn_drop && !e4 {
                    p.add(
                        g.v,
                        "attn_probs",
                        "the softmax cast to the weights' dtype, saved by probs·v",
                        x.e() * bhs2.clone(),
                        Tp::Sharded,
                    );
                }
            }
            if step.attn_drop {
                let some = if style == LayerStyle::Gpt2 {
                    g.any()
                } else {
                    g.q || g.k
                };
                p.add(
                    some,
                    "attn_dropout_noise",
                    format!("attention-probability dropout: {}", step.noise_text()),
                    step.noise(x) * bhs2.clone(),
                    Tp::Sharded,
                );
                p.add(
                    g.v,
                    "attn_dropped",
                    "the dropped probabilities, saved by probs·v",
                    x.e() * bhs2,
                    Tp::Sharded,
                );
            }
            false
        }
        AttnImpl::Sdpa if step.math() => {
            // The CPU math fallback upcasts to fp32: q·scale (for k's gradient), kᵀ·scale (for
            // q's), v; fp32 probabilities, noise and dropped probabilities.
            p.add(
                g.k,
                "math_q",
                "fp32 q·√scale (CPU SDPA math path, forced by attention dropout)",
                c(4) * x.t() * x.a(),
                Tp::Sharded,
            );
            p.add(
                g.q,
                "math_k",
                "fp32 kᵀ·√scale (math path)",
                c(4) * x.t() * x.a(),
                Tp::Sharded,
            );
            let v = if !e4 {
                c(4) * x.t() * x.a()
            } else if x.b == 1 && fused {
                // fp32: `.float()` is a no-op and, at batch 1, v stays a view of the fused
                // qkv output: its whole storage.
                x.e() * x.t() * (x.a() + c(2) * x.k())
            } else {
                x.eta()
            };
            p.add(
                g.q || g.k,
                "math_v",
                "v in fp32 (math path; fp32 weights at batch 1: the fused qkv buffer it views)",
                v,
                Tp::Sharded,
            );
            p.add(
                g.q || g.k,
                "math_probs",
                "fp32 probabilities and dropout noise (math path)",
                c(8) * bhs2.clone(),
                Tp::Sharded,
            );
            p.add(
                g.v,
                "math_dropped",
                "fp32 dropped probabilities (math path)",
                c(4) * bhs2,
                Tp::Sharded,
            );
            false
        }
        AttnImpl::Sdpa => {
            // An explicit (sliding-window) mask turns off `enable_gqa`: k and v are repeated to
            // every head, and each layer's SDPA saves the mask.
            let window = x.window && style == LayerStyle::Starcoder2;
            let qkv = match style {
                LayerStyle::Starcoder2 if !window => x.e() * x.t() * (x.a() + c(2) * x.k()),
                _ => c(3) * x.eta(),
            };
            let what = match style {
                LayerStyle::Gpt2 => "q, k, v: views of the fused c_attn output, its whole storage",
                LayerStyle::Opt => "q·scale, k, v, as SDPA gets them",
                _ if window => {
                    "q, k after RoPE and v, k and v repeated to every head (an explicit mask turns enable_gqa off)"
                }
                _ => "q, k after RoPE and v (k, v at the key/value heads: enable_gqa)",
            };
            p.add(g.any(), "sdpa_qkv", what, qkv, Tp::Sharded);
            p.add(
                g.any() && window,
                "sdpa_window_mask",
                "the sliding-window mask [b, 1, s, s] SDPA gets, in the weights' dtype",
                x.e() * x.b() * x.s2(),
                Tp::Replicated,
            );
            p.add(
                g.any(),
                "sdpa_lse",
                "fp32 logsumexp of the flash kernel",
                c(4) * x.b() * x.h() * x.s(),
                Tp::Sharded,
            );
            if step.attn_drop {
                p.add(g.any(), "sdpa_philox", "philox seed and offset of the CUDA kernel's dropout (2 × 8 bytes; derived, not measured)", c(16), Tp::Replicated);
            }
            true
        }
    }
}

/// One layer of the style; `gx`: its input requires grad. Returns whether its output does.
fn layer(step: &Step, x: &Dims, gx: bool, p: &mut Pieces) -> bool {
    match step.code.style {
        LayerStyle::Gpt2 | LayerStyle::Opt | LayerStyle::Bloom | LayerStyle::Starcoder2 => {
            sequential_layer(step, x, gx, p)
        }
        LayerStyle::GptNeox | LayerStyle::Falcon => parallel_layer(step, x, gx, p),
        LayerStyle::Bert if step.code.post_norm => post_norm_layer(step, x, gx, p),
        LayerStyle::Bert => sequential_layer(step, x, gx, p),
        // Not a LayerNorm layer: this walk is never chosen for it.
        LayerStyle::Llama => gx,
    }
}

/// `activation_dropout` between the MLP's activation and its down projection: its noise (the
/// down projection then saves the dropped output in place of the activation's).
fn activation_dropout(step: &Step, x: &Dims, gu: bool, p: &mut Pieces) {
    p.add(
        step.code.activation_dropout && gu,
        "act_dropout",
        format!("activation dropout: {}", step.noise_text()),
        step.noise(x) * x.t() * x.f(),
        Tp::Sharded,
    );
}

/// A `LayerNorm`'s saved statistics, named.
fn ln(step: &Step, x: &Dims, p: &mut Pieces, saved: bool, key: &'static str, name: &str) {
    p.add(
        saved,
        key,
        format!("{name} {}", step.stats_text()),
        step.ln_stats(x),
        Tp::Replicated,
    );
}

/// A sequential-residual layer (GPT-2, OPT, BLOOM, `StarCoder2`):
/// `h = x + attn(ln1(x)); out = h + mlp(ln2(h))`.
fn sequential_layer(step: &Step, x: &Dims, gx: bool, p: &mut Pieces) -> bool {
    let tr = &step.trains;
    let style = step.code.style;
    let noise = step.noise(x);
    let (ln1, ln2) = match style {
        LayerStyle::Gpt2 => ("ln_1", "ln_2"),
        LayerStyle::Opt | LayerStyle::Bert => ("self_attn_layer_norm", "final_layer_norm"),
        _ => ("input_layernorm", "post_attention_layernorm"),
    };
    ln(step, x, p, gx || tr.norms, "ln1_stats", ln1);
    let fused = matches!(style, LayerStyle::Gpt2 | LayerStyle::Bloom);
    let g = if fused {
        let q = tr.grad(Role::Qkv, gx);
        Qkv { q, k: q, v: q }
    } else {
        Qkv {
            q: tr.grad(Role::Q, gx),
            k: tr.grad(Role::K, gx),
            v: tr.grad(Role::V, gx),
        }
    };
    p.add(
        tr.attention,
        "ln1_out",
        format!("{ln1} output, the q/k/v projection's input"),
        x.etd(),
        Tp::Replicated,
    );
    let out_is_sdpa = sequential_attention(step, x, &g, p);
    if out_is_sdpa {
        p.add(
            g.any() || tr.attention,
            "attn_out",
            "attention output (SDPA's, laid out [b, s, H, hd]: also the o-projection's input)",
            x.eta(),
            Tp::Sharded,
        );
    } else {
        p.add(
            tr.attention,
            "o_in",
            "the o-projection's input (heads merged, contiguous)",
            x.eta(),
            Tp::Sharded,
        );
    }
    let go = tr.grad(Role::O, g.any());
    p.add(
        step.hid_drop && go,
        "resid_dropout_attn",
        format!("residual dropout after attention: {}", step.noise_text()),
        noise.clone() * x.t() * x.d(),
        Tp::Replicated,
    );
    let gh1 = gx || go;
    p.add(
        gh1 || tr.norms,
        "residual_attn",
        format!("residual sum after attention ({ln2}'s input)"),
        x.etd(),
        Tp::Replicated,
    );
    ln(step, x, p, gh1 || tr.norms, "ln2_stats", ln2);
    p.add(
        tr.mlp,
        "ln2_out",
        format!("{ln2} output, the MLP's input"),
        x.etd(),
        Tp::Replicated,
    );
    let gu = tr.grad(Role::Up, gh1);
    match style {
        LayerStyle::Gpt2 => {
            p.add(
                gu,
                "gelu_new",
                "c_fc output and gelu_new's tanh, 1 + tanh and 0.5·x·(…) (written in Python)",
                c(4) * x.e() * x.t() * x.f(),
                Tp::Sharded,
            );
            p.add(
                tr.mlp,
                "mlp_act_out",
                "gelu_new output, c_proj's input",
                x.e() * x.t() * x.f(),
                Tp::Sharded,
            );
        }
        LayerStyle::Opt => {
            p.add(
                gu || tr.mlp,
                "relu_out",
                "ReLU output (saved by ReLU, and by fc2 as its input)",
                x.e() * x.t() * x.f(),
                Tp::Sharded,
            );
        }
        _ => {
            p.add(
                gu,
                "gelu_in",
                "GELU input (the up projection's output)",
                x.e() * x.t() * x.f(),
                Tp::Sharded,
            );
            activation_dropout(step, x, gu, p);
            p.add(
                tr.mlp,
                "mlp_act_out",
                "GELU output (after its dropout), the down projection's input",
                x.e() * x.t() * x.f(),
                Tp::Sharded,
            );
        }
    }
    let gm = tr.grad(Role::Down, gu);
    p.add(
        step.hid_drop && !step.code.mlp_output_undropped && gm,
        "resid_dropout_mlp",
        format!("residual dropout after the MLP: {}", step.noise_text()),
        noise * x.t() * x.d(),
        Tp::Replicated,
    );
    let gout = gh1 || gm;
    p.add(
        gout || tr.norms,
        "residual_mlp",
        "residual sum after the MLP (the next LayerNorm's input)",
        x.etd(),
        Tp::Replicated,
    );
    adapters(step, x, p, &|r| match r {
        Role::Qkv | Role::Q | Role::K | Role::V => gx,
        Role::O => g.any(),
        Role::Up => gh1,
        Role::Down => gu,
    });
    gout
}

/// A post-`LayerNorm` layer (BERT): `h = LN1(x + dropout(o(attn(x)))); out = LN2(h +
/// dropout(down(gelu(up(h)))))`. The layer's input is saved by the q/k/v projections (it is
/// the previous layer's output, counted there); its output, by the next layer's.
fn post_norm_layer(step: &Step, x: &Dims, gx: bool, p: &mut Pieces) -> bool {
    let tr = &step.trains;
    let noise = step.noise(x);
    let g = Qkv {
        q: tr.grad(Role::Q, gx),
        k: tr.grad(Role::K, gx),
        v: tr.grad(Role::V, gx),
    };
    let out_is_sdpa = sequential_attention(step, x, &g, p);
    p.add(
        tr.attention || (out_is_sdpa && g.any()),
        "o_in",
        "the attention output projection's input (heads merged, contiguous)",
        x.eta(),
        Tp::Sharded,
    );
    let go = tr.grad(Role::O, g.any());
    p.add(
        step.hid_drop && go,
        "resid_dropout_attn",
        format!("attention.output.dropout: {}", step.noise_text()),
        noise.clone() * x.t() * x.d(),
        Tp::Replicated,
    );
    let gh1 = gx || go;
    p.add(
        gh1 || tr.norms,
        "residual_attn",
        "x + attention output, attention.output.LayerNorm's input",
        x.etd(),
        Tp::Replicated,
    );
    ln(
        step,
        x,
        p,
        gh1 || tr.norms,
        "ln1_stats",
        "attention.output.LayerNorm",
    );
    let gn1 = gh1 || tr.norms;
    p.add(
        tr.mlp,
        "ln1_out",
        "attention.output.LayerNorm output, the MLP's input",
        x.etd(),
        Tp::Replicated,
    );
    let gu = tr.grad(Role::Up, gn1);
    p.add(
        gu,
        "gelu_in",
        "GELU input (intermediate.dense's output)",
        x.e() * x.t() * x.f(),
        Tp::Sharded,
    );
    activation_dropout(step, x, gu, p);
    p.add(
        tr.mlp,
        "mlp_act_out",
        "GELU output (after its dropout), output.dense's input",
        x.e() * x.t() * x.f(),
        Tp::Sharded,
    );
    let gm = tr.grad(Role::Down, gu);
    p.add(
        step.hid_drop && !step.code.mlp_output_undropped && gm,
        "resid_dropout_mlp",
        format!("output.dropout: {}", step.noise_text()),
        noise * x.t() * x.d(),
        Tp::Replicated,
    );
    let gh2 = gn1 || gm;
    p.add(
        gh2 || tr.norms,
        "residual_mlp",
        "h + MLP output, output.LayerNorm's input",
        x.etd(),
        Tp::Replicated,
    );
    ln(step, x, p, gh2 || tr.norms, "ln2_stats", "output.LayerNorm");
    p.add(
        tr.attention,
        "layer_out",
        "output.LayerNorm output (the layer's output, the next q/k/v projections' input)",
        x.etd(),
        Tp::Replicated,
    );
    adapters(step, x, p, &|r| match r {
        Role::Qkv | Role::Q | Role::K | Role::V => gx,
        Role::O => g.any(),
        Role::Up => gn1,
        Role::Down => gu,
    });
    gh2 || tr.norms
}

/// A parallel layer (GPT-NeoX: `x + attn(ln1(x)) + mlp(ln2(x))`; Falcon: one `LayerNorm` feeds
/// both).
fn parallel_layer(step: &Step, x: &Dims, gx: bool, p: &mut Pieces) -> bool {
    let tr = &step.trains;
    let noise = step.noise(x);
    let neox = step.code.style == LayerStyle::GptNeox;
    if neox {
        ln(step, x, p, gx || tr.norms, "ln1_stats", "input_layernorm");
        ln(
            step,
            x,
            p,
            gx || tr.norms,
            "ln2_stats",
            "post_attention_layernorm",
        );
        p.add(
            tr.attention,
            "ln1_out",
            "input_layernorm output, query_key_value's input",
            x.etd(),
            Tp::Replicated,
        );
        p.add(
            tr.mlp,
            "ln2_out",
            "post_attention_layernorm output, dense_h_to_4h's input",
            x.etd(),
            Tp::Replicated,
        );
    } else {
        ln(step, x, p, gx || tr.norms, "ln1_stats", "input_layernorm");
        p.add(
            tr.attention || tr.mlp,
            "ln1_out",
            "input_layernorm output, the input of query_key_value and dense_h_to_4h",
            x.etd(),
            Tp::Replicated,
        );
    }
    let gq = tr.grad(Role::Qkv, gx);
    if neox {
        neox_attention(step, x, gq, p);
    } else {
        falcon_attention(step, x, gq, p);
    }
    let go = tr.grad(Role::O, gq);
    if neox {
        p.add(
            step.hid_drop && go,
            "resid_dropout_attn",
            format!("post_attention_dropout: {}", step.noise_text()),
            noise.clone() * x.t() * x.d(),
            Tp::Replicated,
        );
    }
    let gu = tr.grad(Role::Up, gx);
    p.add(
        gu,
        "gelu_in",
        "GELU input (dense_h_to_4h's output)",
        x.e() * x.t() * x.f(),
        Tp::Sharded,
    );
    p.add(
        tr.mlp,
        "mlp_act_out",
        "GELU output, dense_4h_to_h's input",
        x.e() * x.t() * x.f(),
        Tp::Sharded,
    );
    let gm = tr.grad(Role::Down, gu);
    if neox {
        p.add(
            step.hid_drop && gm,
            "resid_dropout_mlp",
            format!("post_mlp_dropout: {}", step.noise_text()),
            noise * x.t() * x.d(),
            Tp::Replicated,
        );
    } else {
        p.add(
            step.hid_drop && (gm || go),
            "resid_dropout",
            format!(
                "hidden dropout on attention + MLP output: {}",
                step.noise_text()
            ),
            noise * x.t() * x.d(),
            Tp::Replicated,
        );
    }
    let gout = gx || go || gm;
    p.add(
        gout || tr.norms,
        "layer_out",
        "layer output (the next LayerNorm's input)",
        x.etd(),
        Tp::Replicated,
    );
    adapters(step, x, p, &|r| match r {
        Role::Qkv | Role::Q | Role::K | Role::V | Role::Up => gx,
        Role::O => gq,
        Role::Down => gu,
    });
    gout
}

/// GPT-NeoX's attention: the fused `query_key_value` split by views, partial rotary ending
/// in a `cat`; `gq`: its output requires grad.
fn neox_attention(step: &Step, x: &Dims, gq: bool, p: &mut Pieces) {
    let tr = &step.trains;
    let bhs2 = x.bhs2();
    match step.attn {
        AttnImpl::Eager => {
            p.add(
                gq,
                "attn_qk",
                "q and k after the partial RoPE (torch.cat: fresh tensors)",
                c(2) * x.eta(),
                Tp::Sharded,
            );
            let v = if x.b == 1 { c(3) * x.eta() } else { x.eta() };
            p.add(
                gq,
                "attn_v",
                "v (batch 1: a view that keeps the whole fused qkv output; else a copy)",
                v,
                Tp::Sharded,
            );
            p.add(
                gq,
                "attn_softmax",
                "fp32 softmax output",
                c(4) * bhs2.clone(),
                Tp::Sharded,
            );
            if step.attn_drop {
                p.add(
                    gq,
                    "attn_dropout_noise",
                    format!("attention-probability dropout: {}", step.noise_text()),
                    step.noise(x) * bhs2.clone(),
                    Tp::Sharded,
                );
                p.add(
                    gq,
                    "attn_dropped",
                    "the dropped probabilities, saved by probs·v",
                    x.e() * bhs2,
                    Tp::Sharded,
                );
            } else if x.e < 4 {
                p.add(
                    gq,
                    "attn_probs",
                    "the softmax cast to the weights' dtype, saved by probs·v",
                    x.e() * bhs2,
                    Tp::Sharded,
                );
            }
        }
        AttnImpl::Sdpa if step.math() => {
            p.add(
                gq,
                "math_qk",
                "fp32 q·√scale and kᵀ·√scale (CPU SDPA math path, forced by attention dropout)",
                c(8) * x.t() * x.a(),
                Tp::Sharded,
            );
            let v = if x.e < 4 {
                c(4) * x.t() * x.a()
            } else if x.b == 1 {
                c(3) * x.eta()
            } else {
                x.eta()
            };
            p.add(
                gq,
                "math_v",
                "v in fp32 (math path; fp32 weights at batch 1: the fused qkv buffer it views)",
                v,
                Tp::Sharded,
            );
            p.add(
                gq,
                "math_probs",
                "fp32 probabilities, dropout noise and dropped probabilities (math path)",
                c(12) * bhs2,
                Tp::Sharded,
            );
        }
        AttnImpl::Sdpa => {
            p.add(
                gq,
                "sdpa_qk",
                "q and k after the partial RoPE",
                c(2) * x.eta(),
                Tp::Sharded,
            );
            p.add(
                gq,
                "sdpa_qkv_buffer",
                "the fused qkv output, kept whole by the v view",
                c(3) * x.eta(),
                Tp::Sharded,
            );
            p.add(gq, "sdpa_out", "SDPA output", x.eta(), Tp::Sharded);
            p.add(
                gq,
                "sdpa_lse",
                "fp32 logsumexp of the flash kernel",
                c(4) * x.b() * x.h() * x.s(),
                Tp::Sharded,
            );
            if step.attn_drop {
                p.add(gq, "sdpa_philox", "philox seed and offset of the CUDA kernel's dropout (2 × 8 bytes; derived, not measured)", c(16), Tp::Replicated);
            }
        }
    }
    p.add(
        tr.attention,
        "o_in",
        "dense's input (heads merged, contiguous)",
        x.eta(),
        Tp::Sharded,
    );
}

/// Falcon's multi-query attention: k and v indexed out of the fused output;
/// `gq`: its output requires grad.
fn falcon_attention(step: &Step, x: &Dims, gq: bool, p: &mut Pieces) {
    let tr = &step.trains;
    let bhs2 = x.bhs2();
    // Falcon's multi-query attention: two index constants for the k and v slices.
    p.add(
        gq,
        "index_constants",
        "two 0-d int64 index tensors (the [-2], [-1] k/v slices)",
        c(16),
        Tp::Replicated,
    );
    match step.attn {
        AttnImpl::Sdpa => {
            p.add(
                gq,
                "sdpa_qkv",
                "q, k after RoPE, v (k, v at the key/value heads)",
                x.e() * x.t() * (c(2) * x.k() + x.a()),
                Tp::Sharded,
            );
            p.add(
                gq || tr.attention,
                "sdpa_out",
                "SDPA output (laid out [b, s, H, hd]: also dense's input)",
                x.eta(),
                Tp::Sharded,
            );
            p.add(
                gq,
                "sdpa_lse",
                "fp32 logsumexp",
                c(4) * x.b() * x.h() * x.s(),
                Tp::Sharded,
            );
            p.add(
                gq,
                "sdpa_mask",
                "the [b, 1, s, s] attention mask SDPA gets, in the weights' dtype",
                x.e() * x.b() * x.s2(),
                Tp::Replicated,
            );
        }
        AttnImpl::Eager => {
            let qkv = if x.b == 1 {
                x.e() * x.t() * (x.a() + c(2) * x.k())
            } else {
                c(3) * x.eta()
            };
            p.add(gq, "attn_qkv", "q, kᵀ, v (batch 1: k, v stay broadcast views at the key/value heads; else copies at every head)", qkv, Tp::Sharded);
            p.add(
                gq,
                "attn_probs",
                "softmax output, in the weights' dtype",
                x.e() * bhs2,
                Tp::Sharded,
            );
            p.add(
                tr.attention,
                "o_in",
                "dense's input (heads merged)",
                x.eta(),
                Tp::Sharded,
            );
        }
    }
}

/// Each adapter's own saved tensors: its fp32 copy of the input (saved by `lora_A` for its
/// weight gradient), the r-wide fp32 `lora_A` output (saved by `lora_B`) and, with
/// `lora_dropout`, the dropout's noise where the input requires grad.
fn adapters(step: &Step, x: &Dims, p: &mut Pieces, input_grad: &dyn Fn(Role) -> bool) {
    for a in &step.trains.adapters {
        let n_in = match a.role {
            Role::O => X::var("A", a.n_in),
            Role::Down => X::var("F", a.n_in),
            _ => X::var("d", a.n_in),
        };
        let tp = if matches!(a.role, Role::O | Role::Down) {
            Tp::Sharded
        } else {
            Tp::Replicated
        };
        p.add(
            true,
            "lora",
            format!(
                "{} ({}) adapter: its fp32 copy of the input and the r-wide lora_A output",
                a.name,
                a.role.label()
            ),
            c(4) * x.t() * n_in.clone() + c(4) * x.t() * x.rank(),
            tp,
        );
        if step.trains.lora_dropout {
            let per = step.noise_lora();
            let text = if step.cpu {
                "lora_dropout noise (CPU: fp32)"
            } else {
                "lora_dropout mask (CUDA: 1 byte; derived, not measured)"
            };
            p.add(
                input_grad(a.role),
                "lora_dropout",
                format!("{} ({}) {text}", a.name, a.role.label()),
                per * x.t() * n_in,
                tp,
            );
        }
    }
}

/// What the step keeps outside the layers; `gemb`: the embedding output requires grad.
fn outside(step: &Step, x: &Dims, gemb: bool, p: &mut Pieces) {
    let tr = &step.trains;
    match step.code.style {
        LayerStyle::Gpt2 => p.add(
            tr.embeddings,
            "position_ids",
            "int64 position ids [1, s], saved by wpe",
            c(8) * x.s(),
            Tp::Replicated,
        ),
        LayerStyle::Opt => p.add(
            tr.embeddings,
            "position_ids",
            "int64 position ids + offset [b, s], saved by embed_positions",
            c(8) * x.t(),
            Tp::Replicated,
        ),
        _ => {}
    }
    p.add(
        step.emb_drop && gemb && step.code.style != LayerStyle::Bert,
        "embedding_dropout",
        format!("embedding dropout: {}", step.noise_text()),
        step.noise(x) * x.t() * x.d(),
        Tp::Replicated,
    );
    if step.code.style == LayerStyle::Bert {
        bert_embeddings(step, x, gemb, p);
    } else if step.code.style == LayerStyle::Bloom {
        p.add(
            gemb || tr.norms,
            "embeddings",
            "word embeddings (word_embeddings_layernorm's input)",
            x.etd(),
            Tp::Replicated,
        );
        p.add(
            gemb || tr.norms,
            "embedding_ln_stats",
            format!("word_embeddings_layernorm {}", step.stats_text()),
            step.ln_stats(x),
            Tp::Replicated,
        );
        p.add(
            gemb || tr.norms,
            "embedding_ln_out",
            "word_embeddings_layernorm output (layer 0's input)",
            x.etd(),
            Tp::Replicated,
        );
    } else {
        p.add(
            gemb || tr.norms,
            "embeddings",
            "embedding output (layer 0's input, saved by its first LayerNorm)",
            x.etd(),
            Tp::Replicated,
        );
    }
    if x.rot > 0 {
        p.add(
            true,
            "rope",
            "rotary cos and sin [1, 1, s, r_rope], computed once, shared by the layers",
            c(2) * x.s() * x.rot() * x.e(),
            Tp::Replicated,
        );
    }
    let eth = x.e() * x.t() * X::var("d_head", step.ends.dh);
    if step.code.style == LayerStyle::Bert && step.ends.head_transform && step.ends.final_norm {
        // Pre-LayerNorm BERTs end the encoder in a LayerNorm before the head's transform.
        p.add(
            true,
            "encoder_ln_stats",
            format!("the encoder's final LayerNorm {}", step.stats_text()),
            step.ln_stats(x),
            Tp::Replicated,
        );
        p.add(
            tr.transform,
            "encoder_ln_out",
            "the encoder's final LayerNorm output, saved by the head transform's dense",
            x.etd(),
            Tp::Replicated,
        );
    }
    if step.code.style == LayerStyle::Bert && step.ends.head_transform {
        // The MLM head's transform (`cls.predictions.transform`): dense, GELU, LayerNorm.
        p.add(
            true,
            "head_gelu_in",
            "the head transform's dense output, its GELU's input",
            eth.clone(),
            Tp::Replicated,
        );
        p.add(
            true,
            "head_ln_in",
            "the head transform's GELU output, its LayerNorm's input",
            eth.clone(),
            Tp::Replicated,
        );
        if let Some((name, n_in)) = &tr.head_adapter {
            p.add(
                true,
                "lora",
                format!("{name} (head transform) adapter: its fp32 copy of the input and the r-wide lora_A output"),
                c(4) * x.t() * X::var("d", *n_in) + c(4) * x.t() * x.rank(),
                Tp::Replicated,
            );
            p.add(
                tr.lora_dropout,
                "lora_dropout",
                format!("{name} (head transform) lora_dropout noise"),
                step.noise_lora() * x.t() * X::var("d", *n_in),
                Tp::Replicated,
            );
        }
    }
    // BERT's post-norm layers end in their own LayerNorm: the head's is the transform's; in
    // BART's family the layout says whether the decoder has a final `layer_norm`.
    let final_norm =
        step.code.style != LayerStyle::Bert || step.ends.head_transform || step.ends.final_norm;
    p.add(
        final_norm,
        "final_ln_stats",
        format!("final LayerNorm {}", step.stats_text()),
        step.ln_stats(x),
        Tp::Replicated,
    );
    p.add(
        tr.head && final_norm,
        "final_ln_out",
        "final LayerNorm output, the lm_head's input",
        eth,
        Tp::Replicated,
    );
    if step.code.loss_in_dtype {
        // `CrossEntropyLoss()(logits.view(-1, V), labels.view(-1))`: the labels are the input
        // ids (a view), nll_loss's total weight and the loss are in the dtype.
        p.add(
            true,
            "log_probs",
            "log_softmax of the logits in the weights' dtype, saved by nll_loss",
            x.e() * x.t() * x.v(),
            Tp::Replicated,
        );
        p.add(
            true,
            "loss",
            "nll_loss's total weight and the loss (scalars in the weights' dtype)",
            c(2) * x.e(),
            Tp::Replicated,
        );
        return;
    }
    p.add(
        true,
        "log_probs",
        "fp32 log_softmax of the upcast logits, saved by nll_loss",
        c(4) * x.t() * x.v(),
        Tp::Replicated,
    );
    if x.b == 1 {
        p.add(
            true,
            "labels",
            "int64 shifted labels: the whole padded [1, s + 1] storage",
            c(8) * (x.s() + c(1)),
            Tp::Replicated,
        );
    } else {
        p.add(
            true,
            "labels",
            "int64 shifted labels (a contiguous copy)",
            c(8) * x.t(),
            Tp::Replicated,
        );
    }
    p.add(
        true,
        "loss",
        "nll_loss's total weight and the loss (fp32 scalars)",
        c(8),
        Tp::Replicated,
    );
}

/// The embeddings of BERT's and BART's families: word (+ token type) + position, an
/// optional `LayerNorm` (on the sum, or on the token embeddings before the positions:
/// Blenderbot-Small), dropout, at the embedding width (ELECTRA then projects to `d`). The
/// position ids are what [`PositionIds`] says: a buffer's slice (nothing made), `arange`
/// `[1, s]` or `[b, s]`, or made from the input ids (RoBERTa, the token types gathered by
/// them); a frozen sinusoidal table saves no ids.
fn bert_embeddings(step: &Step, x: &Dims, gemb: bool, p: &mut Pieces) {
    let tr = &step.trains;
    let en = &step.ends;
    let ids = match step.code.position_ids {
        PositionIds::Buffer => None,
        PositionIds::Arange => Some((c(8) * x.s(), "[1, s] (arange + offset)")),
        PositionIds::ArangeBatch => Some((c(8) * x.t(), "[b, s] (arange expanded + offset)")),
        PositionIds::FromInputIds => Some((c(8) * x.t(), "[b, s] made from the input ids")),
    };
    if let Some((bytes, how)) = ids {
        p.add(
            tr.embeddings && en.learned_positions,
            "position_ids",
            format!("int64 position ids {how}, saved by the position table"),
            bytes,
            Tp::Replicated,
        );
    }
    let type_ids =
        if step.code.position_ids == PositionIds::FromInputIds || step.code.token_types_zeros {
            x.t()
        } else {
            x.s()
        };
    p.add(
        tr.embeddings && en.token_types,
        "token_type_ids",
        "int64 token type ids (gathered from the buffer, or zeros [b, s]), saved by token_type_embeddings",
        c(8) * type_ids,
        Tp::Replicated,
    );
    let ete = x.e() * x.t() * X::var("d_emb", en.de);
    let normed = en.embedding_norm && (gemb || tr.norms);
    p.add(
        normed,
        "embeddings",
        if step.code.embedding_norm_before_positions {
            "the token embeddings, layernorm_embedding's input (before the positions are added)"
        } else {
            "the summed embeddings, the embedding LayerNorm's input"
        },
        ete.clone(),
        Tp::Replicated,
    );
    p.add(
        normed,
        "embedding_ln_stats",
        format!("the embedding LayerNorm's {}", step.stats_text()),
        step.ln_stats(x),
        Tp::Replicated,
    );
    // The embeddings' output requires grad when the tables train, or the norm does.
    let out_rg = gemb || (en.embedding_norm && tr.norms);
    p.add(
        step.emb_drop && out_rg,
        "embedding_dropout",
        format!("embedding dropout: {}", step.noise_text()),
        step.noise(x) * x.t() * X::var("d_emb", en.de),
        Tp::Replicated,
    );
    // Layer 0's input: saved by its q/k/v projections (post-norm layers) or by its first
    // LayerNorm (pre-norm).
    let by_layer0 = if step.code.post_norm {
        tr.attention
    } else {
        out_rg || tr.norms
    };
    if en.projected {
        p.add(
            tr.embeddings,
            "embedding_out",
            "the embeddings' output, saved by embeddings_project",
            ete,
            Tp::Replicated,
        );
        p.add(
            by_layer0,
            "embedding_projected",
            "embeddings_project's output (layer 0's input, saved by its q/k/v projections)",
            x.etd(),
            Tp::Replicated,
        );
    } else {
        p.add(
            by_layer0,
            "embedding_out",
            if step.code.post_norm {
                "the embeddings' output (layer 0's input, saved by its q/k/v projections)"
            } else {
                "the embeddings' output (layer 0's input, saved by its first LayerNorm)"
            },
            ete,
            Tp::Replicated,
        );
    }
}

/// What the non-reentrant checkpoint's recompute closure keeps, once (keyword inputs of the
/// layers), plus the embedding leaf `enable_input_require_grads` makes (`LoRA`).
fn checkpoint_extras(step: &Step, x: &Dims, p: &mut Pieces) {
    let tr = &step.trains;
    match step.code.style {
        // GPT-2's position ids are the same storage wpe saves when it trains.
        LayerStyle::Gpt2 => p.add(
            !tr.embeddings,
            "ckpt_position_ids",
            "int64 position ids [1, s] the recompute closure keeps",
            c(8) * x.s(),
            Tp::Replicated,
        ),
        LayerStyle::Opt => p.add(
            true,
            "ckpt_position_ids",
            "int64 position ids [b, s] the recompute closure keeps",
            c(8) * x.t(),
            Tp::Replicated,
        ),
        LayerStyle::Bloom => p.add(
            true,
            "ckpt_alibi",
            "the ALiBi bias [b·H, 1, s] the recompute closure keeps",
            x.e() * x.b() * x.h() * x.s(),
            Tp::Replicated,
        ),
        // BERT's and BART's layers get no position ids (the positions are added to the
        // embeddings); BioGPT's do.
        LayerStyle::Bert => p.add(
            // Not the storage the table saves (that one is `position_ids + offset`).
            step.code.layers_take_position_ids,
            "ckpt_position_ids",
            "int64 position ids [1, s] the recompute closure keeps",
            c(8) * x.s(),
            Tp::Replicated,
        ),
        _ => p.add(
            true,
            "ckpt_position_ids",
            "int64 position ids [1, s] the recompute closure keeps",
            c(8) * x.s(),
            Tp::Replicated,
        ),
    }
    // BERT without `is_decoder` attends both ways: without padding its mask is `None` — unless
    // the model makes an all-ones mask itself (Megatron-BERT), which eager expands.
    if step.attn == AttnImpl::Eager && (!step.code.bidirectional || step.code.ones_attention_mask) {
        p.add(
            true,
            "ckpt_mask",
            "the additive causal mask [b, 1, s, s] the recompute closure keeps",
            x.e() * x.b() * x.s2(),
            Tp::Replicated,
        );
    } else if step.code.style == LayerStyle::Falcon
        || (step.code.style == LayerStyle::Starcoder2 && x.window)
    {
        p.add(
            true,
            "ckpt_mask",
            "the bool mask [1, 1, s, s] the recompute closure keeps (Falcon's; a sliding window's)",
            x.s2(),
            Tp::Replicated,
        );
    }
    if !tr.embeddings {
        // With the embedding frozen (`LoRA`, `--freeze embeddings`), transformers'
        // `enable_input_require_grads` turns the token embedding's output into a grad-requiring
        // leaf, kept by its AccumulateGrad node: free where it is layer 0's input (or the
        // embedding LayerNorm's saved input), else one more [b, s, d] tensor.
        p.add(
            step.embedding_stands_alone(),
            "ckpt_embedding_leaf",
            "the token embedding output, a grad-requiring leaf (enable_input_require_grads)",
            x.etd(),
            Tp::Replicated,
        );
    }
}

/// Under checkpointing the forward's peak can fall inside the last layer instead of at the
/// loss: everything kept so far (what is outside the layers and created before them, the
/// earlier layers' inputs), the Python locals of the model's forward, and that layer's own
/// temporaries at its largest op — eager attention's scores (the softmax in fp32 with its
/// upcast input), or the CPU math path's fp32 copies and probabilities. Measured with the
/// oracle's tracker at batch 1 in bf16 (live storages at the peak op, small configs and OPT-1.3B
/// at 2048 tokens); other batches and dtypes follow the same ops. `None` where no `s²`
/// temporaries make a layer larger than the loss (flash attention).
fn layer_peak(
    step: &Step,
    x: &Dims,
    out: &[Piece],
    layers: u128,
) -> Result<Option<Vec<Piece>>, Overflow> {
    let math = step.math();
    // BERT's and BART's GELU MLP can outweigh the attention (a wide MLP, a small vocabulary).
    let mlp = step.code.style == LayerStyle::Bert;
    if step.attn != AttnImpl::Eager && !math && !mlp {
        return Ok(None);
    }
    let style = step.code.style;
    let mut p = Pieces { list: Vec::new() };
    let after = [
        "final_ln_stats",
        "final_ln_out",
        "log_probs",
        "labels",
        "loss",
    ];
    let before: Vec<&Piece> = out.iter().filter(|q| !after.contains(&q.key)).collect();
    if let Some(first) = before.first() {
        let mut sum = first.x.clone();
        for q in before.iter().skip(1) {
            sum = sum + q.x.clone();
        }
        p.add(
            true,
            "before_layers",
            "kept so far outside the layers (embeddings, masks, position ids, rotary tables)",
            sum,
            Tp::Replicated,
        );
    }
    // The token embedding's output, a Python local, when nothing above holds it already.
    p.add(
        step.embedding_stands_alone() && step.trains.embeddings,
        "inputs_embeds",
        "the token embedding's output (a local of the model's forward)",
        x.etd(),
        Tp::Replicated,
    );
    match style {
        LayerStyle::Gpt2 => p.add(
            true,
            "position_embeds",
            "wpe's output [1, s, d] (a local)",
            x.e() * x.s() * x.d(),
            Tp::Replicated,
        ),
        LayerStyle::Opt => {
            p.add(
                true,
                "pos_embeds",
                "embed_positions' output (a local)",
                x.etd(),
                Tp::Replicated,
            );
            p.add(
                true,
                "position_mask",
                "the fp32 ones [b, s] the position ids are summed from",
                c(4) * x.t(),
                Tp::Replicated,
            );
        }
        LayerStyle::Bloom => p.add(
            true,
            "alibi_slopes",
            "the fp32 ALiBi slopes [H]",
            c(4) * x.h(),
            Tp::Replicated,
        ),
        _ => {}
    }
    decoder_locals(step, x, &mut p);
    p.add(
        layers > 1,
        "earlier_layers",
        "the earlier layers' outputs, kept as checkpoint inputs",
        // Only added when `layers > 1`: the difference is never floored.
        X::var("(L − 1)", layers.saturating_sub(1)) * x.etd(),
        Tp::Replicated,
    );
    let bhs2 = x.bhs2();
    if step.attn == AttnImpl::Eager && matches!(style, LayerStyle::Bloom | LayerStyle::Falcon) {
        p.add(
            true,
            "previous_probs",
            "the previous layer's attention probabilities, returned and still referenced",
            x.e() * bhs2.clone(),
            Tp::Sharded,
        );
    }
    let mut attention = Pieces { list: Vec::new() };
    attention.add(
        true,
        "ln_out",
        "the last layer's first LayerNorm output",
        x.etd(),
        Tp::Replicated,
    );
    if math {
        math_peak(x, step.code.style, &mut attention);
    } else if step.attn == AttnImpl::Eager {
        eager_peak(step, x, &mut attention);
    } else {
        attention.list.clear();
    }
    let mut at_mlp = Pieces { list: Vec::new() };
    if mlp {
        mlp_peak(step, x, &mut at_mlp)?;
    }
    let larger = if total(&at_mlp.list)? > total(&attention.list)? {
        at_mlp
    } else {
        attention
    };
    p.list.extend(larger.list);
    Ok(Some(p.list))
}

/// The bytes of some pieces.
fn total<'a>(pieces: impl IntoIterator<Item = &'a Piece>) -> Result<u128, Overflow> {
    pieces
        .into_iter()
        .try_fold(0u128, |s, q| checked::add("pieces", s, q.x.get()?))
}

/// What BART's decoder keeps as locals while its layers run: the token embeddings (counted
/// above), the position embeddings (`[1, s, d]`, or `[b, s, d]` where the table expands its
/// ids), the all-ones fp32 attention mask `[b, s]` it builds; in eager attention, the last
/// layer's attention probabilities, which `hidden_states, _ = self.self_attn(…)` keeps in `_`.
fn decoder_locals(step: &Step, x: &Dims, p: &mut Pieces) {
    p.add(
        step.code.ones_attention_mask,
        "ones_mask",
        "the all-ones fp32 attention mask [b, s] the model builds",
        c(4) * x.t(),
        Tp::Replicated,
    );
    if !step.code.decoder_locals {
        return;
    }
    let rows = if step.code.position_ids == PositionIds::ArangeBatch {
        x.t()
    } else {
        x.s()
    };
    p.add(
        true,
        "positions",
        "the position embeddings (a local of the decoder's forward)",
        x.e() * rows * x.d(),
        Tp::Replicated,
    );
}

/// The last layer at its MLP's activation (BERT's and BART's GELU MLP): the attention block's
/// output (pre-norm: the residual and the second `LayerNorm`'s output; post-norm: the first
/// `LayerNorm`'s output, which is both), the up projection's output and the GELU's (with
/// `activation_dropout`, at the dropout: the GELU's output, the noise and the dropped output).
/// In eager attention the layer still holds its attention probabilities (`_`).
fn mlp_peak(step: &Step, x: &Dims, p: &mut Pieces) -> Result<(), Overflow> {
    p.add(
        step.attn == AttnImpl::Eager && step.code.decoder_locals,
        "attn_weights",
        "the last layer's attention probabilities, kept by `_`",
        x.e() * x.bhs2(),
        Tp::Sharded,
    );
    let blocks = if step.code.post_norm { c(1) } else { c(2) };
    let widths = if step.code.activation_dropout {
        x.e() + x.e() + step.noise(x)
    } else {
        c(2) * x.e()
    };
    let input = |q: &mut Pieces| {
        q.add(
            true,
            "mlp_input",
            "the attention block's output and the MLP's LayerNorm output (one tensor post-norm)",
            blocks.clone() * x.etd(),
            Tp::Replicated,
        );
    };
    let mut gelu = Pieces { list: Vec::new() };
    input(&mut gelu);
    gelu.add(
        true,
        "mlp_act",
        "the up projection's and the GELU's outputs (with activation dropout: the GELU's, the noise and the dropped output)",
        widths * x.t() * x.f(),
        Tp::Sharded,
    );
    let adapted = |r: Role| step.trains.adapters.iter().any(|a| a.role == r);
    let mut up = Pieces { list: Vec::new() };
    if adapted(Role::Up) {
        input(&mut up);
        up.add(
            true,
            "up_adapter",
            "at the up projection's adapter: the base output, the fp32 input copy, lora_B's fp32 output and its scaling",
            x.e() * x.t() * x.f() + c(4) * x.t() * x.d() + c(8) * x.t() * x.f(),
            Tp::Sharded,
        );
    }
    let mut down = Pieces { list: Vec::new() };
    down.add(
        adapted(Role::Down),
        "down_adapter",
        "at the down projection's adapter: the residual, the GELU output and its fp32 copy, the base output, lora_B's fp32 output and its scaling",
        x.etd() + (x.e() + c(4)) * x.t() * x.f() + (x.e() + c(8)) * x.t() * x.d(),
        Tp::Sharded,
    );
    let mut best = gelu;
    for q in [up, down] {
        if total(&q.list)? > total(&best.list)? {
            best = q;
        }
    }
    p.list.extend(best.list);
    Ok(())
}

/// Without checkpointing, a `LoRA` step's forward can peak inside the last layer, at its MLP
/// adapters' fp32 paths (a wide MLP, a small vocabulary: Blenderbot): what is kept so far
/// (everything retained but what the last layer and the head make after that point), the
/// decoder's locals, and the adapter's temporaries. BERT's and BART's GELU MLP; measured on
/// real runs. `None` where no MLP projection is adapted.
fn adapter_peak(
    step: &Step,
    x: &Dims,
    retained: u128,
    out: &[Piece],
) -> Result<Option<u128>, Overflow> {
    let adapted = |r: Role| step.trains.adapters.iter().any(|a| a.role == r);
    if step.code.style != LayerStyle::Bert || !(adapted(Role::Up) || adapted(Role::Down)) {
        return Ok(None);
    }
    let mut last = Pieces { list: Vec::new() };
    layer(step, x, true, &mut last);
    let head = total(out.iter().filter(|q| {
        matches!(
            q.key,
            "final_ln_stats" | "final_ln_out" | "log_probs" | "labels" | "loss"
        )
    }))?;
    let down = format!("({})", Role::Down.label());
    // Post-norm, the second LayerNorm follows the MLP; pre-norm, it precedes it.
    let after_down = |q: &&Piece| {
        matches!(q.key, "resid_dropout_mlp" | "residual_mlp" | "layer_out")
            || (step.code.post_norm && q.key == "ln2_stats")
    };
    let after_up = |q: &&Piece| {
        after_down(q)
            || matches!(q.key, "gelu_in" | "act_dropout" | "mlp_act_out")
            || (q.key.starts_with("lora") && q.what.contains(&down))
    };
    let mut locals = Pieces { list: Vec::new() };
    decoder_locals(step, x, &mut locals);
    locals.add(
        step.code.decoder_locals,
        "inputs_embeds",
        "the token embeddings (a local of the decoder's forward)",
        x.etd(),
        Tp::Replicated,
    );
    // What the head makes after the layers is part of `retained`: never more than it.
    let base = checked::add(
        "kept before the head + the decoder's locals",
        checked::sub("retained − the head's", retained, head)?,
        total(&locals.list)?,
    )?;
    let at = |after: &dyn Fn(&&Piece) -> bool, transient: X| -> Result<u128, Overflow> {
        let later = total(last.list.iter().filter(|q| after(q)))?;
        // The last layer's later pieces are part of `retained` too (several layer kinds, for
        // which the walk is already an estimate, may break this: then no such peak).
        let Some(before) = base.checked_sub(later) else {
            return Ok(0);
        };
        checked::add("peak at an MLP adapter", before, transient.get()?)
    };
    let up = at(&after_up, x.e() * x.t() * x.f() + c(8) * x.t() * x.f())?;
    let dn = at(
        &after_down,
        x.e() * x.t() * x.f() + (x.e() + c(8)) * x.t() * x.d(),
    )?;
    Ok(Some(match (adapted(Role::Up), adapted(Role::Down)) {
        (true, true) => up.max(dn),
        (true, false) => up,
        _ => dn,
    }))
}

/// The last layer's largest op on the CPU SDPA math path: its fp32 copies and probabilities.
fn math_peak(x: &Dims, style: LayerStyle, p: &mut Pieces) {
    let upcast = x.e < 4;
    let bhs2 = x.bhs2();
    let qkv = match style {
        LayerStyle::Starcoder2 => x.e() * x.t() * (x.a() + c(2) * x.k()),
        LayerStyle::GptNeox => c(5) * x.eta(),
        _ => c(3) * x.eta(),
    };
    p.add(
        true,
        "attn_inputs",
        "q, k, v as the attention gets them (and the fused output they come from)",
        qkv,
        Tp::Sharded,
    );
    p.add(
        true,
        "math_copies",
        "the math path's fp32 q, k, v and q·scale (fp32 weights: q·scale only, the casts are no-ops)",
        if upcast {
            c(4) * x.t() * (c(2) * x.a() + c(2) * x.k())
        } else {
            c(4) * x.t() * x.a()
        },
        Tp::Sharded,
    );
    p.add(
        x.kv < x.h,
        "math_repeats",
        "k, v repeated to every head (fp32)",
        c(8) * x.t() * x.a(),
        Tp::Sharded,
    );
    p.add(
        true,
        "math_mask",
        "the math path's fp32 causal mask [s, s]",
        c(4) * x.s2(),
        Tp::Replicated,
    );
    p.add(
        true,
        "math_probs",
        "fp32 probabilities, dropout noise and dropped probabilities",
        c(12) * bhs2,
        Tp::Sharded,
    );
}

/// The last layer's largest op in eager attention: the scores and the softmax (or the
/// attention dropout).
fn eager_peak(step: &Step, x: &Dims, p: &mut Pieces) {
    let style = step.code.style;
    let upcast = x.e < 4;
    let bhs2 = x.bhs2();
    match style {
        LayerStyle::Gpt2 => {
            p.add(
                true,
                "attn_inputs",
                "the fused c_attn output q, k, v view",
                c(3) * x.eta(),
                Tp::Sharded,
            );
            let n = if step.attn_drop { 3 } else { 2 };
            p.add(true, "scores", "softmax input and output (and the dropout's noise and output), in the weights' dtype", c(n) * x.e() * bhs2, Tp::Sharded);
        }
        LayerStyle::Falcon => {
            p.add(
                true,
                "attn_inputs",
                "the fused qkv output, v, q and k after RoPE",
                x.e() * x.t() * (c(2) * x.a() + c(4) * x.k()),
                Tp::Sharded,
            );
            p.add(
                true,
                "scores",
                "q·kᵀ, the masked scores and the softmax, in the weights' dtype",
                c(3) * x.e() * bhs2,
                Tp::Sharded,
            );
        }
        _ => {
            let qkv = match style {
                LayerStyle::GptNeox => c(5) * x.eta(),
                LayerStyle::Starcoder2 => x.e() * x.t() * (c(3) * x.a() + c(2) * x.k()),
                _ => c(3) * x.eta(),
            };
            p.add(
                true,
                "attn_inputs",
                "q, k, v as the attention gets them (and what they view)",
                qkv,
                Tp::Sharded,
            );
            // BLOOM at batch > 1: the q, k, v reshapes are copies.
            p.add(
                style == LayerStyle::Bloom && x.b > 1,
                "attn_copies",
                "q, k, v reshaped for baddbmm (copies at batch > 1)",
                c(3) * x.eta(),
                Tp::Sharded,
            );
            // The largest op: the softmax (its masked input, BLOOM's baddbmm output too, the
            // fp32 upcast and output) or, with attention dropout, the dropout (the fp32
            // softmax, its cast, the noise and the dropped probabilities).
            let scores = if style == LayerStyle::Bloom {
                c(2) * x.e()
            } else {
                x.e()
            };
            // Bytes per element of a few dtypes: small constants, never an overflow.
            let at_softmax = (scores.clone() + if upcast { c(4) } else { c(0) } + c(4))
                .value
                .ok()
                .unwrap_or(0);
            let cast = if upcast { x.e() } else { c(0) };
            let at_dropout = (c(4) + cast.clone() + step.noise(x) + x.e())
                .value
                .ok()
                .unwrap_or(0);
            if step.attn_drop && at_dropout > at_softmax {
                p.add(
                    true,
                    "softmax",
                    "the fp32 softmax output",
                    c(4) * bhs2.clone(),
                    Tp::Sharded,
                );
                p.add(
                    upcast,
                    "probs",
                    "its cast to the weights' dtype",
                    cast * bhs2.clone(),
                    Tp::Sharded,
                );
                p.add(
                    true,
                    "dropout",
                    "the dropout's noise and the dropped probabilities",
                    (step.noise(x) + x.e()) * bhs2,
                    Tp::Sharded,
                );
            } else {
                p.add(
                    true,
                    "scores",
                    "the masked scores in the weights' dtype (BLOOM: and baddbmm's output)",
                    scores * bhs2.clone(),
                    Tp::Sharded,
                );
                p.add(
                    upcast,
                    "scores_fp32",
                    "their fp32 upcast for the softmax",
                    c(4) * bhs2.clone(),
                    Tp::Sharded,
                );
                p.add(
                    true,
                    "softmax",
                    "the fp32 softmax output",
                    c(4) * bhs2,
                    Tp::Sharded,
                );
            }
        }
    }
}

// ------------------------------------------------------------------------------------ assembly

/// The decoder layers' kinds and their counts, and the kind of layer 0.
struct Kinds<'a> {
    counts: Vec<(&'a Layer, u64)>,
    first: usize,
    layers: u64,
}

/// The terms as they are added, and the split tensor parallelism needs.
#[derive(Default)]
struct Tally {
    terms: Vec<Term>,
    sharded: u128,
    replicated: u128,
    outside: u128,
}

impl Tally {
    /// Adds `count` copies of `p` (`count_sym` names the count in the formula); `part`: the
    /// layers' split it belongs to, `None` outside the layers.
    fn push(
        &mut self,
        p: &Piece,
        count: u128,
        count_sym: &str,
        part: Option<Tp>,
    ) -> Result<(), SpecError> {
        let v = p.x.get()?;
        let value = checked::mul(&format!("{count_sym}·{}", p.x.wrapped(false)), count, v)?;
        let formula = if count_sym.is_empty() {
            format!("{} = {}", p.x.sym, p.x.num)
        } else {
            format!(
                "{count_sym}·{} = {count}·{}",
                p.x.wrapped(false),
                p.x.wrapped(true)
            )
        };
        let slot = match part {
            Some(Tp::Sharded) => &mut self.sharded,
            Some(Tp::Replicated) => &mut self.replicated,
            None => &mut self.outside,
        };
        *slot = checked::add("activations", *slot, value)?;
        self.terms
            .push(Term::new(p.key, p.what.clone(), formula, value));
        Ok(())
    }
}

pub(super) fn activations(input: &ActInput<'_>) -> Result<Activations, SpecError> {
    let spec = input.spec;
    let fallback = TrainingProfile::plain(LayerStyle::GptNeox, &[]);
    let profile = input.profile.unwrap_or(&fallback);
    let mut why: Vec<String> = Vec::new();
    let Some(stack) = spec
        .stacks
        .iter()
        .rev()
        .find(|s| matches!(s.role, StackRole::Decoder | StackRole::CrossDecoder))
        .or_else(|| spec.stacks.last())
    else {
        return Ok(empty("the model has no layers"));
    };
    if spec.stacks.len() > 1 {
        why.push("the encoder stack's activations are not counted".into());
    }
    let ks = Kinds {
        layers: stack.layers.len(),
        counts: stack.layers.kind_counts(),
        first: stack.layers.runs().first().map_or(0, |r| r.kind),
    };
    if ks.counts.len() > 1 {
        why.push(
            "the layers are of several kinds; each is counted with the family's layer code".into(),
        );
    }
    let step = step_of(input, profile, stack, ks.layers, &mut why);
    stack_reasons(profile.style, spec, stack, &mut why);
    let Some((first_kind, _)) = ks.counts.get(ks.first) else {
        return Ok(empty("the model has no layers"));
    };
    let base = layer_dims(input, profile, first_kind, &mut why)?;

    // Outside the layers. The embedding output requires grad when the tables train, or under
    // checkpointing (transformers' `enable_input_require_grads`).
    let mut tally = Tally::default();
    let gemb = step.trains.embeddings || input.checkpointing;
    let mut out = Pieces { list: Vec::new() };
    outside(&step, &base, gemb, &mut out);
    if input.checkpointing {
        checkpoint_extras(&step, &base, &mut out);
    }
    for p in &out.list {
        tally.push(p, 1, "", None)?;
    }
    let l_total = u128::from(ks.layers);
    if input.checkpointing {
        // One [b, s, d] input per checkpointed layer.
        let p = Piece {
            key: "ckpt_layer_inputs",
            what: "each checkpointed layer's input, kept for the recompute".into(),
            x: base.etd(),
            tp: Tp::Replicated,
        };
        tally.push(&p, l_total, "L", Some(Tp::Replicated))?;
    } else {
        layer_terms(input, profile, &step, &ks, &base, &mut tally, &mut why)?;
    }

    let retained = sum(&tally.terms, "activations")?;
    let (forward_peak, peak_terms) = forward_peak(
        &step,
        &base,
        retained,
        &out.list,
        input.checkpointing.then_some(l_total),
    )?;
    Ok(Activations {
        retained,
        forward_peak,
        terms: tally.terms,
        peak_terms,
        estimate: joined(why),
        layer_sharded: tally.sharded,
        layer_replicated: tally.replicated,
        outside: tally.outside,
        layers: ks.layers,
    })
}

/// What the stack's modules say about the family's layout.
fn stack_reasons(
    style: LayerStyle,
    spec: &llmsize_core::spec::ModelSpec,
    stack: &llmsize_core::spec::Stack,
    why: &mut Vec<String>,
) {
    if style == LayerStyle::Opt
        && (!spec.embedding_projections.is_empty() || stack.final_norm.is_none())
    {
        why.push("OPT with project_in/project_out or post-LayerNorm blocks is counted as the pre-LayerNorm layout".into());
    }
    if style == LayerStyle::Bloom && stack.embedding_norm.is_none() {
        why.push("BLOOM without its embedding LayerNorm is not derived".into());
    }
}

/// The question resolved: the device, the attention, the dropouts and what trains.
fn step_of(
    input: &ActInput<'_>,
    profile: &TrainingProfile,
    stack: &llmsize_core::spec::Stack,
    layers: u64,
    why: &mut Vec<String>,
) -> Step {
    let style = profile.style;
    let ends = Ends::of(input.spec, stack);
    let attn = super::attention_run(input, why);
    // GPT-NeoX's embedding dropout is `hidden_dropout` (`GPTNeoXModel.emb_dropout`).
    let emb_drop =
        profile.embedding_dropout || (style == LayerStyle::GptNeox && profile.hidden_dropout);
    Step {
        cpu: input.device == Device::Cpu,
        attn,
        attn_drop: profile.attention_dropout && style != LayerStyle::Falcon,
        hid_drop: profile.hidden_dropout,
        emb_drop,
        code: profile.clone(),
        trains: trains_of(input, layers, why),
        ends,
    }
}

/// What trains: the adapters on a frozen base, or every part not frozen.
fn trains_of(input: &ActInput<'_>, layers: u64, why: &mut Vec<String>) -> Trains {
    let Some(plan) = input.lora else {
        let frozen = |f: FreezePart| input.frozen.contains(&f);
        let tied = matches!(
            input.spec.head,
            llmsize_core::spec::OutputHead::Lm { tied: true, .. }
        );
        let embeddings = !frozen(FreezePart::Embeddings);
        return Trains {
            attention: !frozen(FreezePart::Attention),
            mlp: !frozen(FreezePart::Mlp),
            norms: !frozen(FreezePart::Norms),
            embeddings,
            head: if tied {
                embeddings
            } else {
                !frozen(FreezePart::Head)
            },
            adapters: Vec::new(),
            lora_dropout: false,
            head_adapter: None,
            transform: true,
        };
    };
    let mut adapters = Vec::new();
    let mut head_adapter = None;
    for m in &plan.modules {
        // An adapter on a module the forward never runs keeps nothing.
        if m.idle {
            continue;
        }
        if m.kind == TensorKind::HeadTransform {
            head_adapter = Some((m.name.clone(), u128::from(m.n_in)));
            continue;
        }
        match Role::of(m.kind) {
            Some(role) => adapters.push(Adapter {
                name: m.name.clone(),
                role,
                n_in: u128::from(m.n_in),
            }),
            None => why.push(format!(
                "the `{}` adapter is not on a layer projection the walk knows; its activations are not counted",
                m.name
            )),
        }
        if m.layers != layers {
            why.push(format!(
                "the `{}` adapter is on {} of {layers} layers; counted as on every layer",
                m.name, m.layers
            ));
        }
    }
    if plan.dora {
        why.push(
            "DoRA's magnitude and weight-norm tensors are not derived; counted as LoRA".into(),
        );
    }
    if input.dtype.bytes() >= 4 {
        why.push("LoRA on an fp32 base is not derived (the adapters' fp32 input copies would share the base's storage); counted as on a 16-bit base".into());
    }
    Trains {
        attention: false,
        mlp: false,
        norms: false,
        embeddings: false,
        head: false,
        adapters,
        lora_dropout: plan.dropout,
        head_adapter,
        transform: false,
    }
}

/// The sizes of one layer kind and of the step; what of the layer the walk does not derive
/// goes to `why`.
fn layer_dims(
    input: &ActInput<'_>,
    profile: &TrainingProfile,
    l: &Layer,
    why: &mut Vec<String>,
) -> Result<Dims, Overflow> {
    let style = profile.style;
    let (h, kv, hd) = match &l.attention {
        Attention::Standard(a) | Attention::CacheOnly(a) => {
            (a.num_heads, a.num_kv_heads, a.head_dim)
        }
        Attention::Latent(m) => {
            why.push(
                "multi-head latent attention is counted as multi-head attention of the same heads"
                    .into(),
            );
            let hd = checked::add(
                "qk_nope_head_dim + qk_rope_head_dim",
                m.qk_nope_head_dim,
                m.qk_rope_head_dim,
            )?;
            (m.num_heads, m.num_heads, hd)
        }
        Attention::Absent => {
            why.push("a layer without attention is counted without its mixer".into());
            (0, 0, 0)
        }
    };
    if l.cross_attention.is_some() {
        why.push("cross-attention is not counted".into());
    }
    // A decoder's cross-attention that never runs (idle extras) keeps nothing.
    if l.extras.iter().any(|e| !e.idle) || l.state.is_some() {
        why.push("a layer's extra tensors (a mixer, gates) are not counted".into());
    }
    let expected_norms = if style == LayerStyle::Falcon { 1 } else { 2 };
    if l.norms.len() != expected_norms {
        why.push(format!(
            "{} layers with {} norms are not derived (the measured layout has {expected_norms})",
            style.name(),
            l.norms.len()
        ));
    }
    if style == LayerStyle::Falcon && kv != 1 {
        why.push("Falcon is derived for its multi-query layout (one key/value head)".into());
    }
    let f = match &l.ffn {
        Ffn::Dense(m) => {
            if m.gated {
                why.push("a gated MLP is counted as an ungated one".into());
            }
            m.intermediate
        }
        Ffn::Moe(m) => {
            why.push("experts are counted as one dense MLP of the routed width".into());
            (Checked::new(m.expert.intermediate) * m.experts_per_token
                + m.shared.map_or(0, |s| s.intermediate))
            .get("moe_intermediate_size·num_experts_per_tok + shared_intermediate_size")?
        }
        Ffn::Absent => 0,
    };
    Ok(Dims {
        e: u128::from(input.dtype.bytes()),
        b: u128::from(input.batch),
        s: u128::from(input.seq),
        d: u128::from(input.spec.hidden_size),
        h: u128::from(h),
        kv: u128::from(kv),
        hd: u128::from(hd),
        f: u128::from(f),
        v: u128::from(input.spec.vocab_size),
        rot: profile.rotary_dims.map_or(0, u128::from),
        rank: input.lora.map_or(0, |p| u128::from(p.rank)),
        window: profile.sliding_window_applies && l.sliding_window.is_some_and(|w| input.seq > w),
    })
}

/// Every layer kind's saved tensors, without checkpointing: layer 0's kind walked twice (with
/// and without a gradient-requiring input), the pieces only layer 0 keeps or lacks counted
/// apart.
fn layer_terms(
    input: &ActInput<'_>,
    profile: &TrainingProfile,
    step: &Step,
    ks: &Kinds<'_>,
    base: &Dims,
    tally: &mut Tally,
    why: &mut Vec<String>,
) -> Result<(), SpecError> {
    // Layer 0's input requires grad when the tables train, or an embedding norm does.
    let gx0 = step.trains.embeddings || (step.ends.embedding_norm && step.trains.norms);
    let multi = ks.counts.len() > 1;
    for (i, (kind, count)) in ks.counts.iter().enumerate() {
        let x = if i == ks.first {
            base.clone()
        } else {
            layer_dims(input, profile, kind, why)?
        };
        let count = u128::from(*count);
        let mut later = Pieces { list: Vec::new() };
        layer(step, &x, true, &mut later);
        if i != ks.first {
            for p in &later.list {
                tally.push(p, count, "L_kind", Some(p.tp))?;
            }
            continue;
        }
        let mut zero = Pieces { list: Vec::new() };
        layer(step, &x, gx0, &mut zero);
        // Pieces layer 0 keeps like every layer count L; the rest L − 1 (+ layer 0's own).
        // A kind's count is at least 1 (it holds layer 0).
        let rest = count.saturating_sub(1);
        let same = |a: &Piece, b: &Piece| a.key == b.key && a.what == b.what;
        for p in &later.list {
            let (n, sym) = if zero.list.iter().any(|z| same(z, p)) {
                (count, if multi { "L_kind" } else { "L" })
            } else {
                (rest, if multi { "(L_kind − 1)" } else { "(L − 1)" })
            };
            if n > 0 {
                tally.push(p, n, sym, Some(p.tp))?;
            }
        }
        for z in &zero.list {
            if !later.list.iter().any(|p| same(p, z)) {
                let mut z = z.clone();
                z.what = format!("layer 0: {}", z.what);
                tally.push(&z, 1, "", Some(z.tp))?;
            }
        }
    }
    Ok(())
}

/// The forward's peak: at `log_softmax` the logits, their fp32 upcast (a no-op in fp32) and
/// the fp32 log-probs (retained) are alive; at batch > 1 the padded labels too; under LoRA the
/// final LayerNorm's output, no longer saved, is still referenced. Under checkpointing
/// (`ckpt`: what is kept outside the layers, and the layer count) the last layer's forward
/// can be larger.
fn forward_peak(
    step: &Step,
    x: &Dims,
    retained: u128,
    out: &[Piece],
    ckpt: Option<u128>,
) -> Result<(u128, Vec<Term>), SpecError> {
    let mut peak_terms = vec![Term::new(
        "retained",
        "everything kept for backward",
        thousands_u128(retained),
        retained,
    )];
    let mut transient = Pieces { list: Vec::new() };
    transient.add(
        true,
        "logits",
        "the logits, in the weights' dtype",
        x.e() * x.t() * x.v(),
        Tp::Replicated,
    );
    transient.add(
        x.e < 4 && !step.code.loss_in_dtype,
        "logits_fp32",
        "their fp32 upcast (ForCausalLMLoss)",
        c(4) * x.t() * x.v(),
        Tp::Replicated,
    );
    transient.add(
        x.b > 1 && !step.code.loss_in_dtype,
        "padded_labels",
        "the padded labels [b, s + 1] (int64)",
        c(8) * x.b() * (x.s() + c(1)),
        Tp::Replicated,
    );
    transient.add(
        !step.trains.head,
        "final_ln_out",
        "the final LayerNorm's output (not saved: the head is frozen)",
        x.etd(),
        Tp::Replicated,
    );
    let mut peak = retained;
    for p in &transient.list {
        let v = p.x.get()?;
        peak = checked::add("forward peak", peak, v)?;
        peak_terms.push(Term::new(
            p.key,
            p.what.clone(),
            format!("{} = {}", p.x.sym, p.x.num),
            v,
        ));
    }
    if ckpt.is_none()
        && let Some(inside) = adapter_peak(step, x, retained, out)?
        && inside > peak
    {
        let term = Term::new(
            "last_layer_adapter",
            "in the last layer's MLP adapter: what is kept so far, the decoder's locals and the adapter's fp32 temporaries",
            thousands_u128(inside),
            inside,
        );
        return Ok((inside, vec![term]));
    }
    if let Some(layers) = ckpt
        && let Some(list) = layer_peak(step, x, out, layers)?
    {
        let inside_terms = list
            .iter()
            .map(|p| {
                Ok(Term::new(
                    p.key,
                    format!("in the last layer's forward: {}", p.what),
                    format!("{} = {}", p.x.sym, p.x.num),
                    p.x.get()?,
                ))
            })
            .collect::<Result<Vec<_>, Overflow>>()?;
        let inside = sum(&inside_terms, "peak in the last layer's forward")?;
        if inside > peak {
            return Ok((inside, inside_terms));
        }
    }
    Ok((peak, peak_terms))
}

/// The reasons for an estimate, each once in the order met (several layer kinds can give the
/// same one); `None` when there are none: the figures are exact.
fn joined(mut why: Vec<String>) -> Option<String> {
    let mut seen: Vec<String> = Vec::new();
    why.retain(|w| {
        let new = !seen.contains(w);
        if new {
            seen.push(w.clone());
        }
        new
    });
    (!why.is_empty()).then(|| why.join("; "))
}

fn empty(why: &str) -> Activations {
    Activations {
        retained: 0,
        forward_peak: 0,
        terms: Vec::new(),
        peak_terms: Vec::new(),
        estimate: Some(why.to_owned()),
        layer_sharded: 0,
        layer_replicated: 0,
        outside: 0,
        layers: 0,
    }
}

#[cfg(test)]
mod tests {
    //! Figures from the ground truth (`../shared/truth/train/train.json`, cited per test) and
    //! from `train_oracle.py` / `lora_oracle.py` run on small configs of the held-out families
    //! (`scale_raw`: hidden 64, 3 layers, 4 heads, vocab 256; cited as "small").

    use super::*;
    use crate::ParamDtype;
    use crate::lora::{Adapted, LoraPlan};
    use llmsize_core::design::{Design, Style, design_spec};
    use llmsize_core::spec::{ModelSpec, Norm, OutputHead};

    struct Model {
        d: u64,
        layers: u64,
        heads: u64,
        kv: u64,
        ffn: u64,
        vocab: u64,
        norms: usize,
        tied: bool,
        window: Option<u64>,
    }

    fn spec(m: &Model) -> ModelSpec {
        let mut spec = design_spec(
            &Design {
                hidden: m.d,
                layers: 1,
                vocab: Some(m.vocab),
                heads: Some(m.heads),
                kv_heads: Some(m.kv),
                ffn: Some(m.ffn),
                ctx: Some(4096),
            },
            Style::Gpt,
        )
        .unwrap();
        let mut layer = spec.stacks[0].layers.kinds()[0].clone();
        layer.norms = vec![Norm::layer_norm(m.d); m.norms];
        layer.sliding_window = m.window;
        spec.stacks[0].layers = llmsize_core::spec::Layers::repeat(layer, m.layers);
        spec.head = OutputHead::Lm {
            tied: m.tied,
            biases: 0,
            transform: None,
        };
        if !m.tied {
            spec.head = OutputHead::Lm {
                tied: false,
                biases: 0,
                transform: None,
            };
        }
        spec
    }

    fn profile(
        style: LayerStyle,
        drops: (bool, bool, bool),
        rotary: Option<u64>,
    ) -> TrainingProfile {
        TrainingProfile {
            attention_dropout: drops.0,
            hidden_dropout: drops.1,
            embedding_dropout: drops.2,
            rotary_dims: rotary,
            ..TrainingProfile::plain(style, &[])
        }
    }

    struct Run {
        batch: u64,
        seq: u64,
        dtype: ParamDtype,
        attn: AttnImpl,
        ckpt: bool,
        device: Device,
    }

    fn run(seq: u64, attn: AttnImpl) -> Run {
        Run {
            batch: 1,
            seq,
            dtype: ParamDtype::Bf16,
            attn,
            ckpt: false,
            device: Device::Cpu,
        }
    }

    fn act(spec: &ModelSpec, p: &TrainingProfile, r: &Run, lora: Option<&LoraPlan>) -> Activations {
        let a = activations(&ActInput {
            spec,
            profile: Some(p),
            batch: r.batch,
            seq: r.seq,
            dtype: r.dtype,
            attn: r.attn,
            checkpointing: r.ckpt,
            device: r.device,
            lora,
            frozen: &[],
        })
        .unwrap();
        assert_eq!(
            a.layer_sharded + a.layer_replicated + a.outside,
            a.retained,
            "the split adds up"
        );
        assert_eq!(a.terms.iter().map(|t| t.value).sum::<u128>(), a.retained);
        a
    }

    fn plan(
        mods: &[(&str, TensorKind, u64, u64)],
        rank: u64,
        dropout: bool,
        layers: u64,
    ) -> LoraPlan {
        LoraPlan {
            rank,
            dropout,
            dora: false,
            modules: mods
                .iter()
                .map(|&(name, kind, n_in, n_out)| Adapted {
                    name: name.into(),
                    kind,
                    stack: Some(StackRole::Decoder),
                    layer_runs: std::iter::once(0..layers).collect(),
                    layers,
                    n_in,
                    n_out,
                    copies: 1,
                    rank,
                    param_wrapper: false,
                    factors: vec![(rank, n_in), (n_out, rank)],
                    params: rank * (n_in + n_out),
                    tensors: 2,
                    idle: false,
                    gradless: false,
                })
                .collect(),
            resolved: mods.iter().map(|m| m.0.to_owned()).collect(),
            trainable: 0,
            tensors: 0,
        }
    }

    const GPT2: Model = Model {
        d: 768,
        layers: 12,
        heads: 12,
        kv: 12,
        ffn: 3072,
        vocab: 50_257,
        norms: 2,
        tied: true,
        window: None,
    };
    const PYTHIA_1_4B: Model = Model {
        d: 2048,
        layers: 24,
        heads: 16,
        kv: 16,
        ffn: 8192,
        vocab: 50_304,
        norms: 2,
        tied: false,
        window: None,
    };
    const OPT_1_3B: Model = Model {
        d: 2048,
        layers: 24,
        heads: 32,
        kv: 32,
        ffn: 8192,
        vocab: 50_272,
        norms: 2,
        tied: true,
        window: None,
    };
    /// Small configs of the held-out families (`scale_raw` of falcon-7b, bloom-560m,
    /// starcoder2-3b): d = 64, 4 heads of 16, 3 layers, vocab 256.
    const FALCON_SMALL: Model = Model {
        d: 64,
        layers: 3,
        heads: 4,
        kv: 1,
        ffn: 256,
        vocab: 256,
        norms: 1,
        tied: true,
        window: None,
    };
    const BLOOM_SMALL: Model = Model {
        d: 64,
        layers: 3,
        heads: 4,
        kv: 4,
        ffn: 256,
        vocab: 256,
        norms: 2,
        tied: true,
        window: None,
    };
    const STARCODER2_SMALL: Model = Model {
        d: 64,
        layers: 3,
        heads: 4,
        kv: 2,
        ffn: 128,
        vocab: 256,
        norms: 2,
        tied: true,
        window: Some(4096),
    };

    fn gpt2() -> (ModelSpec, TrainingProfile) {
        (
            spec(&GPT2),
            profile(LayerStyle::Gpt2, (true, true, true), None),
        )
    }

    #[test]
    fn gpt2_full_fine_tuning_as_measured() {
        // train.json gpt2, batch 1, 512 tokens: (retained_bytes, forward_peak_bytes).
        let (s, p) = gpt2();
        let a = act(&s, &p, &run(512, AttnImpl::Sdpa), None);
        assert_eq!((a.retained, a.forward_peak), (869_756_944, 1_024_146_448));
        assert!(a.estimate.is_none());
        let a = act(&s, &p, &run(512, AttnImpl::Eager), None);
        assert_eq!((a.retained, a.forward_peak), (614_952_976, 769_342_480));
        // batch 4: the padded labels [4, 513] are a transient (+8·b·(s + 1)).
        let r = Run {
            batch: 4,
            ..run(512, AttnImpl::Sdpa)
        };
        let a = act(&s, &p, &r, None);
        assert_eq!((a.retained, a.forward_peak), (3_479_015_432, 4_096_589_864));
        // fp32: the CPU math path keeps q·scale, kᵀ·scale and (batch 1) the whole fused qkv
        // output v views; the logits' upcast is a no-op (peak = retained + 4·T·V).
        let r = Run {
            dtype: ParamDtype::Fp32,
            ..run(512, AttnImpl::Sdpa)
        };
        let a = act(&s, &p, &r, None);
        assert_eq!((a.retained, a.forward_peak), (1_164_720_144, 1_267_646_480));
        let r = Run {
            ckpt: true,
            ..run(512, AttnImpl::Eager)
        };
        let a = act(&s, &p, &r, None);
        assert_eq!((a.retained, a.forward_peak), (115_257_360, 269_646_864));
    }

    #[test]
    fn gpt2_without_dropout_keeps_no_noise() {
        // Small gpt2 (d = 64, 4 heads, 3 layers, vocab 256, n_inner 256) with attn_pdrop,
        // resid_pdrop and embd_pdrop all 0, bf16, batch 1, 48 tokens, measured: SDPA takes
        // the flash kernel (q, k, v views of c_attn's output, out, lse) and no dropout saves
        // noise: 581,968 (SDPA) and 634,960 (eager) retained.
        let m = Model {
            d: 64,
            layers: 3,
            heads: 4,
            kv: 4,
            ffn: 256,
            vocab: 256,
            ..GPT2
        };
        let s = spec(&m);
        let p = profile(LayerStyle::Gpt2, (false, false, false), None);
        assert_eq!(
            act(&s, &p, &run(48, AttnImpl::Sdpa), None).retained,
            581_968
        );
        assert_eq!(
            act(&s, &p, &run(48, AttnImpl::Eager), None).retained,
            634_960
        );
    }

    #[test]
    fn gpt2_lora_as_measured() {
        // train.json gpt2 lora_runs, 512 tokens: r16 all-linear, r8 c_attn, checkpointed.
        let (s, p) = gpt2();
        let all = plan(
            &[
                ("c_attn", TensorKind::AttnQkv, 768, 2304),
                ("c_proj", TensorKind::AttnOutput, 768, 768),
                ("c_fc", TensorKind::FfnUp, 768, 3072),
                ("c_proj", TensorKind::FfnDown, 3072, 768),
            ],
            16,
            false,
            12,
        );
        let a = act(&s, &p, &run(512, AttnImpl::Sdpa), Some(&all));
        assert_eq!((a.retained, a.forward_peak), (935_024_656, 1_090_200_592));
        let qv = plan(&[("c_attn", TensorKind::AttnQkv, 768, 2304)], 8, false, 12);
        let a = act(&s, &p, &run(512, AttnImpl::Sdpa), Some(&qv));
        assert_eq!((a.retained, a.forward_peak), (820_402_192, 975_578_128));
        let r = Run {
            ckpt: true,
            ..run(512, AttnImpl::Sdpa)
        };
        let a = act(&s, &p, &r, Some(&qv));
        assert_eq!((a.retained, a.forward_peak), (114_733_072, 269_909_008));
    }

    #[test]
    fn layer_zero_follows_which_modules_are_adapted() {
        // Small configs, bf16, SDPA, batch 1, 48 tokens, r = 8, measured with peft on the
        // oracle (`lora_oracle.train_step` with these target_modules): (retained, peak).
        // GPT-2 (every dropout 0.1), only the MLP's c_proj: layer 0's attention, residual
        // dropouts, ln_2 and GELU need no grad; from layer 1 on everything does.
        let m = Model {
            d: 64,
            layers: 3,
            heads: 4,
            kv: 4,
            ffn: 256,
            vocab: 256,
            ..GPT2
        };
        let s = spec(&m);
        let p = profile(LayerStyle::Gpt2, (true, true, true), None);
        let down = plan(&[("c_proj", TensorKind::FfnDown, 256, 64)], 8, false, 3);
        let a = act(&s, &p, &run(48, AttnImpl::Sdpa), Some(&down));
        assert_eq!((a.retained, a.forward_peak), (755_536, 835_408));
        let out = plan(&[("c_proj", TensorKind::AttnOutput, 64, 64)], 8, false, 3);
        assert_eq!(
            act(&s, &p, &run(48, AttnImpl::Sdpa), Some(&out)).retained,
            755_728
        );
        // Pythia (parallel residual, rotary 4 of 16): dense_h_to_4h alone keeps layer 0's
        // GELU input; dense_4h_to_h or dense alone do not.
        let m = Model {
            d: 64,
            layers: 3,
            heads: 4,
            kv: 4,
            ffn: 128,
            vocab: 256,
            ..PYTHIA_1_4B
        };
        let s = spec(&m);
        let p = profile(LayerStyle::GptNeox, (false, false, false), Some(4));
        for (module, kind, n_in, n_out, want) in [
            ("dense_h_to_4h", TensorKind::FfnUp, 64, 128, 223_312),
            ("dense_4h_to_h", TensorKind::FfnDown, 128, 64, 247_888),
            ("dense", TensorKind::AttnOutput, 64, 64, 211_024),
        ] {
            let one = plan(&[(module, kind, n_in, n_out)], 8, false, 3);
            let a = act(&s, &p, &run(48, AttnImpl::Sdpa), Some(&one));
            assert_eq!(a.retained, want, "{module}");
        }
    }

    #[test]
    fn frozen_parts_follow_the_same_walk() {
        // Small configs, bf16, batch 1, 48 tokens, measured with the oracle's step on a model
        // whose parameters of that part have requires_grad off: (retained, peak).
        let m = Model {
            d: 64,
            layers: 3,
            heads: 4,
            kv: 4,
            ffn: 256,
            vocab: 256,
            ..GPT2
        };
        let s = spec(&m);
        let p = profile(LayerStyle::Gpt2, (true, true, true), None);
        let frozen = |parts: &[FreezePart], ckpt: bool, attn: AttnImpl| {
            let a = activations(&ActInput {
                spec: &s,
                profile: Some(&p),
                batch: 1,
                seq: 48,
                dtype: ParamDtype::Bf16,
                attn,
                checkpointing: ckpt,
                device: Device::Cpu,
                lora: None,
                frozen: parts,
            })
            .unwrap();
            assert!(a.estimate.is_none());
            (a.retained, a.forward_peak)
        };
        // wte and wpe (and with them the tied head): no position ids, no embedding noise, no
        // lm_head input; layer 0's ln_1 keeps nothing.
        assert_eq!(
            frozen(&[FreezePart::Embeddings], false, AttnImpl::Sdpa),
            (997_072, 1_076_944)
        );
        // c_attn and c_proj: their inputs are not saved.
        assert_eq!(
            frozen(&[FreezePart::Attention], false, AttnImpl::Sdpa),
            (972_880, 1_046_608)
        );
        // Checkpointed with frozen embeddings: the embedding output becomes a leaf
        // (`enable_input_require_grads`), kept beside the layer inputs.
        assert_eq!(
            frozen(&[FreezePart::Embeddings], true, AttnImpl::Eager).0,
            91_600
        );
    }

    fn pythia() -> (ModelSpec, TrainingProfile) {
        (
            spec(&PYTHIA_1_4B),
            profile(LayerStyle::GptNeox, (false, false, false), Some(32)),
        )
    }

    #[test]
    fn pythia_full_and_lora_as_measured() {
        // train.json pythia-1.4b: eager at 2048 tokens (v keeps the whole fused qkv output at
        // batch 1), and LoRA at 2048 tokens.
        let (s, p) = pythia();
        let a = act(&s, &p, &run(2048, AttnImpl::Eager), None);
        assert_eq!(
            (a.retained, a.forward_peak),
            (13_515_776_016, 14_133_911_568)
        );
        let qkv = ("query_key_value", TensorKind::AttnQkv, 2048, 6144);
        let qv = plan(&[qkv], 8, false, 24);
        let a = act(&s, &p, &run(2048, AttnImpl::Sdpa), Some(&qv));
        assert_eq!((a.retained, a.forward_peak), (3_001_163_792, 3_627_687_952));
        let all = plan(
            &[
                qkv,
                ("dense", TensorKind::AttnOutput, 2048, 2048),
                ("dense_h_to_4h", TensorKind::FfnUp, 2048, 8192),
                ("dense_4h_to_h", TensorKind::FfnDown, 8192, 2048),
            ],
            16,
            false,
            24,
        );
        let a = act(&s, &p, &run(2048, AttnImpl::Sdpa), Some(&all));
        assert_eq!((a.retained, a.forward_peak), (5_461_647_376, 6_088_171_536));
        // The q/v step's layer 0 keeps no GELU input (its parallel MLP branch needs no grad):
        // the difference to all-linear is the three other adapters and that e·T·F.
        let layer0 = a.terms.iter().find(|t| t.key == "gelu_in").unwrap();
        assert!(layer0.formula.starts_with("L·"), "{}", layer0.formula);
        let a = act(&s, &p, &run(2048, AttnImpl::Sdpa), Some(&qv));
        let gelu = a.terms.iter().find(|t| t.key == "gelu_in").unwrap();
        assert!(gelu.formula.starts_with("(L − 1)·"), "{}", gelu.formula);
    }

    #[test]
    fn opt_checkpointed_eager_peaks_inside_the_last_layer() {
        // train.json opt-1.3b, eager, checkpointing, 2048 tokens: retained 638,378,000, forward
        // peak 1,602,265,088 — the last layer's scores (bf16 + fp32 upcast + fp32 softmax,
        // 10·b·H·s² = 1,342,177,280) outweigh the loss's 6·T·V.
        let s = spec(&OPT_1_3B);
        let p = profile(LayerStyle::Opt, (false, true, false), None);
        let r = Run {
            ckpt: true,
            ..run(2048, AttnImpl::Eager)
        };
        let a = act(&s, &p, &r, None);
        assert_eq!((a.retained, a.forward_peak), (638_378_000, 1_602_265_088));
        assert!(a.peak_terms.iter().any(|t| t.key == "scores_fp32"));
        // LoRA q/v, 512 tokens (train.json opt-1.3b lora_runs).
        let qv = plan(
            &[
                ("q_proj", TensorKind::AttnQ, 2048, 2048),
                ("v_proj", TensorKind::AttnV, 2048, 2048),
            ],
            8,
            false,
            24,
        );
        let a = act(&s, &p, &run(512, AttnImpl::Sdpa), Some(&qv));
        assert_eq!((a.retained, a.forward_peak), (910_725_136, 1_067_257_872));
    }

    #[test]
    fn falcon_multi_query_as_measured_small() {
        // Small falcon-7b (multi-query, one LayerNorm, parallel), measured: (retained, peak).
        let s = spec(&FALCON_SMALL);
        let p = profile(LayerStyle::Falcon, (false, false, false), Some(16));
        let a = act(&s, &p, &run(48, AttnImpl::Sdpa), None);
        assert_eq!((a.retained, a.forward_peak), (312_256, 385_984));
        // Batch 2, eager: k, v copied to every head (batch 1 keeps broadcast views).
        let r = Run {
            batch: 2,
            ..run(40, AttnImpl::Eager)
        };
        let a = act(&s, &p, &r, None);
        assert_eq!((a.retained, a.forward_peak), (613_816, 737_352));
        // Checkpointed SDPA at batch 2: the closure's bool mask is [1, 1, s, s].
        let r = Run {
            batch: 2,
            ckpt: true,
            ..run(40, AttnImpl::Sdpa)
        };
        assert_eq!(act(&s, &p, &r, None).retained, 138_568);
    }

    #[test]
    fn bloom_as_measured_small() {
        // Small bloom-560m (ALiBi, embedding LayerNorm, eager only), measured.
        let mut s = spec(&BLOOM_SMALL);
        s.stacks[0].embedding_norm = Some(Norm::layer_norm(64));
        s.stacks[0].position = None;
        let p = TrainingProfile {
            eager_only: true,
            ..profile(LayerStyle::Bloom, (false, false, false), None)
        };
        let a = act(&s, &p, &run(48, AttnImpl::Eager), None);
        assert_eq!((a.retained, a.forward_peak), (530_320, 604_048));
        assert!(a.estimate.is_none());
        let r = Run {
            batch: 2,
            ..run(40, AttnImpl::Eager)
        };
        let a = act(&s, &p, &r, None);
        assert_eq!((a.retained, a.forward_peak), (837_768, 961_304));
        // fp32 (at this vocabulary of 256 a layer's temporaries, not the loss, make the peak:
        // only the retained bytes are compared).
        let r = Run {
            batch: 2,
            dtype: ParamDtype::Fp32,
            ..run(40, AttnImpl::Eager)
        };
        assert_eq!(act(&s, &p, &r, None).retained, 1_285_768);
        // SDPA is refused by transformers' BLOOM: counted as eager, and said so.
        let a = act(&s, &p, &run(48, AttnImpl::Sdpa), None);
        assert_eq!(a.retained, 530_320);
        assert!(a.estimate.unwrap().contains("has no SDPA attention"));
    }

    #[test]
    fn starcoder2_dropouts_and_window_as_measured_small() {
        // Small starcoder2-3b (GQA 4/2, every dropout 0.1): CPU SDPA takes the math path.
        let s = spec(&STARCODER2_SMALL);
        let p = profile(LayerStyle::Starcoder2, (true, true, true), Some(16));
        assert_eq!(
            act(&s, &p, &run(48, AttnImpl::Sdpa), None).retained,
            717_520
        );
        // No dropout and a 32-token window shorter than 48 tokens: the flash kernel gets an
        // explicit mask (saved per layer) and k, v repeated to every head.
        let s = spec(&Model {
            window: Some(32),
            ..STARCODER2_SMALL
        });
        let p = profile(LayerStyle::Starcoder2, (false, false, false), Some(16));
        assert_eq!(
            act(&s, &p, &run(48, AttnImpl::Sdpa), None).retained,
            303_568
        );
        let r = Run {
            batch: 2,
            ckpt: true,
            ..run(40, AttnImpl::Sdpa)
        };
        assert_eq!(act(&s, &p, &r, None).retained, 138_568);
    }

    #[test]
    fn cuda_masks_stats_and_fused_kernel_are_derived() {
        // gpt2, 512 tokens, eager, bf16: CUDA keeps 1-byte dropout masks (attention
        // probabilities b·H·s² = 3,145,728 and two residual T·d = 393,216 per layer, the
        // embedding's once) and fp32 LayerNorm statistics (+2·T per LN: 25 LNs).
        let (s, p) = gpt2();
        let cpu = act(&s, &p, &run(512, AttnImpl::Eager), None).retained;
        let r = Run {
            device: Device::Cuda,
            ..run(512, AttnImpl::Eager)
        };
        let cuda = act(&s, &p, &r, None);
        let masks = 12 * (3_145_728 + 2 * 393_216) + 393_216;
        let stats = 25 * 2 * 2 * 512;
        assert_eq!(cuda.retained, cpu - masks + stats);
        assert!(cuda.terms.iter().any(|t| t.what.contains("derived")));
        // LoRA dropout on CUDA keeps a 1-byte mask per adapter input instead of fp32 noise.
        let qv = |dropout| {
            plan(
                &[("c_attn", TensorKind::AttnQkv, 768, 2304)],
                8,
                dropout,
                12,
            )
        };
        let with = act(&s, &p, &r, Some(&qv(true))).retained;
        let without = act(&s, &p, &r, Some(&qv(false))).retained;
        // 11 layers (layer 0's input needs no grad) × T·d.
        assert_eq!(with - without, 11 * 512 * 768);
    }

    #[test]
    fn odd_specs_are_estimates_without_panics() {
        // A million layers: the work is per kind.
        let (mut s, p) = gpt2();
        let layer = s.stacks[0].layers.kinds()[0].clone();
        s.stacks[0].layers = llmsize_core::spec::Layers::repeat(layer.clone(), 1_000_000);
        let a = act(&s, &p, &run(512, AttnImpl::Sdpa), None);
        assert!(a.retained > 0 && a.estimate.is_none());
        // Latent attention, experts, no attention: counted, and said to be estimates.
        let mut latent = layer.clone();
        latent.attention = Attention::Latent(llmsize_core::spec::LatentAttention {
            hidden: 768,
            num_heads: 12,
            q_lora_rank: None,
            kv_lora_rank: 512,
            qk_nope_head_dim: 64,
            qk_rope_head_dim: 32,
            v_head_dim: 64,
            bias: false,
            indexer_key_dim: None,
            category: llmsize_core::Category::Attention,
        });
        let mut absent = layer.clone();
        absent.attention = Attention::Absent;
        absent.ffn = Ffn::Absent;
        s.stacks[0].layers = llmsize_core::spec::Layers::from_pattern([0, 1, 2, 0], |k| match k {
            0 => layer.clone(),
            1 => latent.clone(),
            _ => absent.clone(),
        });
        for attn in [AttnImpl::Sdpa, AttnImpl::Eager] {
            let a = act(&s, &p, &run(512, attn), None);
            assert!(a.retained > 0);
            assert!(a.estimate.is_some());
        }
        // Sizes that overflow are an error, not a wrap.
        let mut huge = spec(&GPT2);
        huge.hidden_size = u64::MAX;
        let r = activations(&ActInput {
            spec: &huge,
            profile: Some(&p),
            batch: u64::MAX,
            seq: u64::MAX,
            dtype: ParamDtype::Fp32,
            attn: AttnImpl::Eager,
            checkpointing: false,
            device: Device::Cpu,
            lora: None,
            frozen: &[],
        });
        let Err(SpecError::Overflow(e)) = r else {
            panic!("{r:?}")
        };
        // T = b·s = (2^64 − 1)² fits u128; e·T (e = 4, fp32) does not.
        assert_eq!(
            e.to_string(),
            "`e·T·d` overflows 128 bits (with values: 4 · 340282366920938463426481119284349108225)"
        );
    }
}
