//! FLOPs of a forward pass (prefill) and of one generated token, by component.
//!
//! Convention (printed with every result): a multiply-add is 2 FLOPs, so a matmul
//! `(m×k)·(k×n)` is `2·m·k·n`; embedding lookups, norms, activations, softmax and bias adds
//! count 0; attention scores `QKᵀ` and `attention·V` over the full `s×s` matrix (`full`, what
//! torch's `FlopCounterMode` counts and PaLM/nanoGPT use) or over the causal triangle
//! `s(s+1)/2` (`causal`, Megatron and `FlashAttention` benchmarks; sliding-window layers then
//! see at most `window` keys). MoE layers count the `k` routed experts a token uses.

use crate::checked::{self, Checked};
use crate::error::{Overflow, SpecError};
use crate::layout::{AttentionGeometry, Tensor, TensorKind, layout};
use crate::spec::{ModelSpec, OutputHead, StackRole};

/// How attention FLOPs are counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum AttentionConvention {
    /// Only the causal triangle (each query attends to itself and earlier keys).
    #[cfg_attr(
        feature = "clap",
        value(help = "Only the pairs a causal mask keeps, s(s+1)/2")
    )]
    Causal,
    /// The full `s×s` matrix.
    #[cfg_attr(
        feature = "clap",
        value(help = "All s² pairs (what torch's FlopCounterMode counts)")
    )]
    Full,
}

impl AttentionConvention {
    /// The name.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            AttentionConvention::Causal => "causal",
            AttentionConvention::Full => "full",
        }
    }
}

/// FLOPs of one component.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlopsLine {
    /// A stable key (`attention_projections`, `attention_scores`, …).
    pub key: &'static str,
    /// The formula with its numbers.
    pub formula: String,
    /// FLOPs.
    pub flops: u128,
}

/// FLOPs of a forward pass and of decoding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlopsReport {
    /// Tokens per sequence.
    pub seq_len: u64,
    /// Sequences.
    pub batch: u64,
    /// Attention convention.
    pub convention: AttentionConvention,
    /// Forward pass over `seq_len` tokens of `batch` sequences.
    pub forward: Vec<FlopsLine>,
    /// Their sum.
    pub forward_flops: u128,
    /// One generated token of one sequence with `seq_len` tokens of context (itself included).
    pub per_token: Vec<FlopsLine>,
    /// Their sum.
    pub per_token_flops: u128,
    /// Parameters that take part in a token's matmuls (active experts only; a tied head counts).
    pub matmul_params: u64,
    /// All parameters (for the article's 2·P).
    pub params: u64,
    /// Active parameters per token (MoE), else all.
    pub active_params: u64,
    /// `None` when the model's structure is known exactly; else why this is an estimate.
    pub estimate: Option<String>,
    /// The model generates tokens (it has a decoder); an encoder alone reads its input in one
    /// pass, has no per-token lines, and its matmul parameters are the forward's.
    pub generates: bool,
    /// The model has an encoder stack, whose self-attention is bidirectional (every query sees
    /// every key, `s²` pairs, whatever the convention).
    pub has_encoder: bool,
}

/// Parameters of the matrices a token multiplies by (`2·rows·cols` FLOPs per token each),
/// split by component.
#[derive(Default)]
struct MatmulParams {
    attention: u64,
    ffn: u64,
    router: u64,
    experts: u64,
    shared: u64,
    head: u64,
    other: u64,
}

/// Matrices a token multiplies by; `decoding` leaves out an encoder stack (a generated
/// token runs only the decoder).
fn matmul_params(
    spec: &ModelSpec,
    tensors: &[Tensor],
    decoding: bool,
) -> Result<MatmulParams, SpecError> {
    use TensorKind as K;
    let mut m = MatmulParams::default();
    let add = |acc: &mut u64, n: u64| -> Result<(), Overflow> {
        *acc = checked::add("matrix parameters a token multiplies by", *acc, n)?;
        Ok(())
    };
    for t in tensors {
        // A text token never multiplies by a vision or audio tower, nor by what the forward
        // never runs (a decoder's cross-attention without an encoder).
        if !t.is_matrix()
            || t.category.is_modality()
            || t.idle
            || (decoding && t.stack == Some(StackRole::Encoder))
        {
            continue;
        }
        // One token multiplies by every layer's copy of the matrix, and by `k` of `E` experts.
        let one = (Checked::new(t.rows) * t.cols * t.layers * t.active_copies)
            .get("rows·cols·layers·active copies")?;
        match t.kind {
            K::AttnQ
            | K::AttnK
            | K::AttnV
            | K::AttnQkv
            | K::AttnOutput
            | K::AttnQA
            | K::AttnKvA
            | K::AttnKvB => add(&mut m.attention, one)?,
            K::FfnGate | K::FfnUp | K::FfnDown => add(&mut m.ffn, one)?,
            K::Router => add(&mut m.router, one)?,
            K::ExpertGate | K::ExpertUp | K::ExpertDown => add(&mut m.experts, one)?,
            K::SharedGate | K::SharedUp | K::SharedDown | K::SharedExpertGate => {
                add(&mut m.shared, one)?;
            }
            K::Output => add(&mut m.head, one)?,
            K::EmbeddingProjection | K::HeadTransform | K::Pooler | K::Matrix => {
                add(&mut m.other, one)?;
            }
            K::TokenEmbedding
            | K::PositionEmbedding
            | K::TokenTypeEmbedding
            | K::Norm
            | K::Bias
            | K::Sinks
            | K::Block
            | K::Vector => {}
        }
    }
    if let OutputHead::Lm { tied: true, .. } = spec.head {
        // A tied head still multiplies by the V×d table.
        if let Some(t) = spec.token_embedding {
            add(&mut m.head, checked::mul("V·d", t.rows, t.dim)?)?;
        }
    }
    Ok(m)
}

impl MatmulParams {
    fn total(&self) -> Result<u64, Overflow> {
        checked::sum(
            "matrix parameters a token multiplies by",
            [
                self.attention,
                self.ffn,
                self.router,
                self.experts,
                self.shared,
                self.head,
                self.other,
            ],
        )
    }
}

/// What attention costs in one layer: score and value widths, window, cross or self.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct AttentionShape {
    /// `n_h·d_qk`.
    qk: u64,
    /// `n_h·d_v`.
    v: u64,
    /// Sliding window.
    window: Option<u64>,
    /// Cross-attention or an encoder's self-attention: every query sees every key.
    cross: bool,
    /// In an encoder stack (not run when generating a token).
    encoder: bool,
}

/// `n_h·d_qk` and `n_h·d_v` (scores and values widths) and the window of every distinct
/// attention of the layout, with the number of layers that have it, in order of first
/// occurrence.
fn attention_widths(
    attention: &[AttentionGeometry],
) -> Result<Vec<(AttentionShape, u64)>, SpecError> {
    let mut out: Vec<(AttentionShape, u64)> = Vec::new();
    for g in attention {
        let encoder = g.stack == StackRole::Encoder;
        let shape = AttentionShape {
            qk: g.qk_width,
            v: g.v_width,
            window: g.window,
            // Cross-attention and an encoder's self-attention see every key.
            cross: g.cross || encoder,
            encoder,
        };
        match out.iter_mut().find(|(x, _)| *x == shape) {
            Some((_, m)) => *m = checked::add("layers that attend alike", *m, g.layers)?,
            None => out.push((shape, g.layers)),
        }
    }
    Ok(out)
}

/// Pairs (query, key) a forward over `s` tokens scores in one layer: within `window` when
/// the layer slides, the whole `s²` for a cross-attention or the full convention. Public
/// because the training step's backward (`llmsize-train`) scores the same pairs.
pub fn pairs(
    s: u128,
    window: Option<u64>,
    convention: AttentionConvention,
    cross: bool,
) -> Result<u128, Overflow> {
    let triangle = |n: u128| Checked::new(n) * (Checked::new(n) + 1u128) / 2u128;
    match convention {
        AttentionConvention::Full => checked::mul("s²", s, s),
        AttentionConvention::Causal if cross => checked::mul("s²", s, s),
        AttentionConvention::Causal => match window {
            None => triangle(s).get("s(s+1)/2"),
            Some(w) => {
                let w = u128::from(w).max(1);
                if s <= w {
                    triangle(s).get("s(s+1)/2")
                } else {
                    (triangle(w) + (Checked::new(s) - w) * w).get("w(w+1)/2 + (s − w)·w")
                }
            }
        },
    }
}

/// Count the FLOPs.
pub fn flops(
    spec: &ModelSpec,
    seq_len: u64,
    batch: u64,
    convention: AttentionConvention,
) -> Result<FlopsReport, SpecError> {
    spec.validate()?;
    crate::facts::modelled(spec)?;
    if seq_len == 0 {
        return Err(SpecError::Zero {
            field: "--seq-len".into(),
        });
    }
    if batch == 0 {
        return Err(SpecError::Zero {
            field: "--batch".into(),
        });
    }
    let count = crate::count::count(spec)?;
    let layout = layout(spec)?;
    let m = matmul_params(spec, &layout.tensors, false)?;
    let dm = matmul_params(spec, &layout.tensors, true)?;
    let generates = spec.stacks.iter().any(|s| s.role != StackRole::Encoder);
    let s = u128::from(seq_len);
    let b = u128::from(batch);
    let mut forward = Vec::new();
    let mut per_token = Vec::new();
    for (key, label, p, dp) in [
        ("attention_projections", "W_attn", m.attention, dm.attention),
        ("ffn", "W_ffn", m.ffn, dm.ffn),
        ("moe_router", "W_router", m.router, dm.router),
        ("moe_experts_active", "k·W_expert", m.experts, dm.experts),
        ("moe_shared_experts", "W_shared", m.shared, dm.shared),
        (
            "embedding_projection_and_heads",
            "W_other",
            m.other,
            dm.other,
        ),
        ("output_head", "V·d", m.head, dm.head),
    ] {
        if p > 0 {
            forward.push(FlopsLine {
                key,
                formula: format!("2·b·s·{label} = 2·{batch}·{seq_len}·{p}"),
                flops: checked::product(&format!("2·b·s·{label}"), [2, b, s, u128::from(p)])?,
            });
        }
        if dp > 0 && generates {
            per_token.push(FlopsLine {
                key,
                formula: format!("2·{label} = 2·{dp}"),
                flops: checked::mul(&format!("2·{label}"), 2, u128::from(dp))?,
            });
        }
    }

    // Layers that attend alike, counted together so the formula reads `L·2·b·pairs·width`.
    let same = attention_widths(&layout.attention)?;
    let pair_label = match convention {
        AttentionConvention::Full => "s²",
        AttentionConvention::Causal => "s(s+1)/2",
    };
    let (mut scores, mut values, mut decode_scores, mut decode_values) =
        (0u128, 0u128, 0u128, 0u128);
    let (mut f_scores, mut f_values, mut d_scores, mut d_values) = (vec![], vec![], vec![], vec![]);
    for (
        AttentionShape {
            qk,
            v,
            window,
            cross,
            encoder,
        },
        n,
    ) in &same
    {
        let p = pairs(s, *window, convention, *cross)?;
        let n128 = u128::from(*n);
        let add = |acc: u128, formula: &str, f: &[u128]| {
            (Checked::new(acc) + checked::product(formula, f.iter().copied())?).get(formula)
        };
        scores = add(
            scores,
            "layers·2·b·pairs·n_h·d_qk",
            &[n128, 2, b, p, u128::from(*qk)],
        )?;
        values = add(
            values,
            "layers·2·b·pairs·n_h·d_v",
            &[n128, 2, b, p, u128::from(*v)],
        )?;
        let keys = match window {
            Some(w) if !cross => s.min(u128::from(*w)),
            _ => s,
        };
        if !encoder {
            decode_scores = add(
                decode_scores,
                "layers·2·keys·n_h·d_qk",
                &[n128, 2, keys, u128::from(*qk)],
            )?;
            decode_values = add(
                decode_values,
                "layers·2·keys·n_h·d_v",
                &[n128, 2, keys, u128::from(*v)],
            )?;
        }
        let what = match (window, cross) {
            (_, true) if *encoder => " (encoder, bidirectional)".to_owned(),
            (_, true) => " (cross-attention)".to_owned(),
            (Some(w), false) => format!(" (window {w})"),
            (None, false) => String::new(),
        };
        f_scores.push(format!("{n}·2·{batch}·{p}·{qk}{what}"));
        f_values.push(format!("{n}·2·{batch}·{p}·{v}{what}"));
        if !encoder {
            d_scores.push(format!("{n}·2·{keys}·{qk}{what}"));
            d_values.push(format!("{n}·2·{keys}·{v}{what}"));
        }
    }
    forward.push(FlopsLine {
        key: "attention_scores",
        formula: format!(
            "layers·2·b·{pair_label}·n_h·d_qk = {}",
            f_scores.join(" + ")
        ),
        flops: scores,
    });
    forward.push(FlopsLine {
        key: "attention_values",
        formula: format!("layers·2·b·{pair_label}·n_h·d_v = {}", f_values.join(" + ")),
        flops: values,
    });
    if generates {
        per_token.push(FlopsLine {
            key: "attention_scores",
            formula: format!("layers·2·keys·n_h·d_qk = {}", d_scores.join(" + ")),
            flops: decode_scores,
        });
        per_token.push(FlopsLine {
            key: "attention_values",
            formula: format!("layers·2·keys·n_h·d_v = {}", d_values.join(" + ")),
            flops: decode_values,
        });
    }
    let forward_flops = checked::sum("forward FLOPs", forward.iter().map(|l| l.flops))?;
    let per_token_flops = checked::sum("FLOPs per token", per_token.iter().map(|l| l.flops))?;
    // The parameters a token multiplies by: a generated token runs the decoder only; an
    // encoder's token runs the whole forward (its stack is what `dm` leaves out).
    let matmul = if generates { dm.total()? } else { m.total()? };
    Ok(FlopsReport {
        seq_len,
        batch,
        convention,
        forward,
        forward_flops,
        per_token,
        per_token_flops,
        matmul_params: matmul,
        params: count.total,
        active_params: count.active.as_ref().map_or(count.total, |a| a.per_token),
        estimate: spec.estimate.clone(),
        generates,
        has_encoder: spec.stacks.iter().any(|s| s.role == StackRole::Encoder),
    })
}
