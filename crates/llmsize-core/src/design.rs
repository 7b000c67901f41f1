//! Models described by a few numbers, for design questions ("how big is d = 4096, L = 32?").
//!
//! Two block styles: the classic GPT block of the article (`d_ff` = 4d, biases everywhere,
//! `LayerNorm`, learned positions, tied head) and a LLaMA-style block (`SwiGLU`, `RMSNorm`, `RoPE`,
//! no biases, untied head). Every default filled in is recorded as an [`Assumption`].

use std::collections::BTreeMap;

use crate::checked::{self, Checked};
use crate::error::SpecError;
use crate::expr::Sym;
use crate::spec::{
    Assumption, Attention, Ffn, Layer, Layers, Mlp, ModelSpec, Norm, OutputHead, PositionEmbedding,
    Stack, StackRole, StandardAttention, Table,
};

pub use crate::limits::MAX_LAYERS;

/// Block style of a designed model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Style {
    /// GPT-2/GPT-3 block.
    #[cfg_attr(
        feature = "clap",
        value(help = "GPT-2/3 block: d_ff = 4d, biases, LayerNorm, learned positions, tied head")
    )]
    Gpt,
    /// `LLaMA` block.
    #[cfg_attr(
        feature = "clap",
        value(help = "LLaMA block: SwiGLU, RMSNorm, RoPE, no biases, untied head")
    )]
    Llama,
}

/// The numbers a user gives; `None` means "use the style's default".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Design {
    /// `--hidden`.
    pub hidden: u64,
    /// `--layers`.
    pub layers: u64,
    /// `--vocab`.
    pub vocab: Option<u64>,
    /// `--heads`.
    pub heads: Option<u64>,
    /// `--kv-heads`.
    pub kv_heads: Option<u64>,
    /// `--ffn`.
    pub ffn: Option<u64>,
    /// `--ctx`.
    pub ctx: Option<u64>,
}

fn fill(
    assumptions: &mut Vec<Assumption>,
    flag: &str,
    given: Option<u64>,
    default: u64,
    reason: &str,
) -> u64 {
    given.unwrap_or_else(|| {
        assumptions.push(Assumption {
            field: flag.to_owned(),
            value: default.to_string(),
            reason: reason.to_owned(),
        });
        default
    })
}

/// Build the spec of a designed model.
pub fn design_spec(design: &Design, style: Style) -> Result<ModelSpec, SpecError> {
    let d = design.hidden;
    if d == 0 {
        return Err(SpecError::Zero {
            field: "--hidden".into(),
        });
    }
    if design.layers == 0 {
        return Err(SpecError::Zero {
            field: "--layers".into(),
        });
    }
    // The same cap as the config reader's.
    if design.layers > MAX_LAYERS {
        return Err(SpecError::Invalid {
            field: "--layers".into(),
            found: design.layers.to_string(),
            expected: format!("at most {MAX_LAYERS} layers"),
        });
    }
    let mut assumptions = Vec::new();
    let (head_size, style_name) = match style {
        Style::Gpt => (64, "gpt"),
        Style::Llama => (128, "llama"),
    };
    let vocab = fill(
        &mut assumptions,
        "--vocab",
        design.vocab,
        if style == Style::Gpt { 50_257 } else { 32_000 },
        if style == Style::Gpt {
            "GPT-2's BPE vocabulary"
        } else {
            "LLaMA's SentencePiece vocabulary"
        },
    );
    let heads = match design.heads {
        Some(h) => h,
        None if d.is_multiple_of(head_size) => fill(
            &mut assumptions,
            "--heads",
            None,
            checked::div("d / head size", d, head_size)?,
            &format!("d / {head_size}: head size {head_size}, the {style_name} convention"),
        ),
        None => {
            return Err(SpecError::HeadsDoNotDivide {
                heads_field: format!("--heads (default d/{head_size})"),
                heads: checked::div("d / head size", d, head_size)?,
                hidden_field: "--hidden".into(),
                hidden: d,
            });
        }
    };
    if heads == 0 {
        return Err(SpecError::Zero {
            field: "--heads".into(),
        });
    }
    if !d.is_multiple_of(heads) {
        return Err(SpecError::HeadsDoNotDivide {
            heads_field: "--heads".into(),
            heads,
            hidden_field: "--hidden".into(),
            hidden: d,
        });
    }
    let kv_heads = fill(
        &mut assumptions,
        "--kv-heads",
        design.kv_heads,
        heads,
        "= heads: multi-head attention",
    );
    let ffn = match style {
        Style::Gpt => fill(
            &mut assumptions,
            "--ffn",
            design.ffn,
            checked::mul("4·d (--hidden)", 4, d)?,
            "4·d, the GPT block",
        ),
        Style::Llama => {
            // LLaMA: hidden = 2/3 · 4d, rounded up to a multiple of 256 (`multiple_of`).
            let raw = checked::mul("8·d (--hidden)", 8, d)? / 3;
            let rounded = (Checked::new(raw).div_ceil(256u64) * 256u64)
                .get("⌈8·d/3 ÷ 256⌉·256 (--hidden)")?;
            fill(
                &mut assumptions,
                "--ffn",
                design.ffn,
                rounded,
                "SwiGLU 2/3·4d rounded up to a multiple of 256, as LLaMA",
            )
        }
    };
    let ctx = fill(
        &mut assumptions,
        "--ctx",
        design.ctx,
        if style == Style::Gpt { 2048 } else { 4096 },
        if style == Style::Gpt {
            "GPT-3's context (learned position table)"
        } else {
            "LLaMA-2's context (RoPE: no parameters)"
        },
    );
    let gpt = style == Style::Gpt;
    let norm = if gpt {
        Norm::layer_norm(d)
    } else {
        Norm::rms_norm(d)
    };
    let layer = Layer {
        attention: Attention::Standard(StandardAttention {
            hidden: d,
            num_heads: heads,
            num_kv_heads: kv_heads,
            head_dim: checked::div("d / heads", d, heads)?,
            fused_qkv: gpt,
            q_bias: gpt,
            k_bias: gpt,
            v_bias: gpt,
            o_bias: gpt,
            q_norm: None,
            k_norm: None,
            sinks: false,
            transformers_cache_heads: None,
            v_from_k: false,
            indexer_key_dim: None,
            cache_prefix_tokens: 0,
            shared_kv: false,
            compressed: None,
        }),
        cross_attention: None,
        ffn: Ffn::Dense(Mlp {
            hidden: d,
            intermediate: ffn,
            gated: !gpt,
            up_bias: gpt,
            down_bias: gpt,
        }),
        norms: vec![norm; 2],
        sliding_window: None,
        extras: Vec::new(),
        state: None,
    };
    let mut symbol_sources = BTreeMap::new();
    for (s, f) in [
        (Sym::Hidden, "--hidden"),
        (Sym::Layers, "--layers"),
        (Sym::Vocab, "--vocab"),
        (Sym::Heads, "--heads"),
        (Sym::KvHeads, "--kv-heads"),
        (Sym::Ffn, "--ffn"),
        (Sym::Context, "--ctx"),
        (Sym::HeadDim, "d / n_h"),
    ] {
        symbol_sources.insert(s, f.to_owned());
    }
    Ok(ModelSpec {
        name: format!("{style_name}-style d={d} L={}", design.layers),
        model_type: "design".into(),
        architecture: format!("{style_name} block"),
        hidden_size: d,
        vocab_size: vocab,
        context_length: Some(ctx),
        token_embedding: Some(Table {
            rows: vocab,
            dim: d,
        }),
        extra_token_tables: 0,
        embedding_projections: Vec::new(),
        stacks: vec![Stack {
            role: StackRole::Decoder,
            position: gpt.then_some(PositionEmbedding::Learned {
                table: Table { rows: ctx, dim: d },
                offset: 0,
            }),
            token_type: None,
            embedding_norm: None,
            layers: Layers::repeat(layer, design.layers),
            final_norm: Some(norm),
        }],
        head: OutputHead::Lm {
            tied: gpt,
            biases: 0,
            transform: None,
        },
        pooler: None,
        assumptions,
        warnings: Vec::new(),
        symbol_sources,
        extras: Vec::new(),
        estimate: None,
        image_tokens: None,
        quantization: None,
        training: None,
        facts: crate::facts::TypeFacts::NONE,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::count::count;

    #[test]
    fn gpt2_small_by_design_equals_hf() {
        // GPT-2 small: d=768, L=12, V=50257, n_ctx=1024 → 124,439,808 (HF GPT2LMHeadModel).
        let spec = design_spec(
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
        assert_eq!(count(&spec).unwrap().total, 124_439_808);
    }

    #[test]
    fn llama_7b_by_design_equals_hf() {
        // LLaMA-7B: d=4096, L=32, V=32000, d_ff=11008 (default rule) → 6,738,415,616.
        let spec = design_spec(
            &Design {
                hidden: 4096,
                layers: 32,
                vocab: Some(32_000),
                ..Design::default()
            },
            Style::Llama,
        )
        .unwrap();
        assert_eq!(count(&spec).unwrap().total, 6_738_415_616);
    }

    #[test]
    fn articles_opening_question() {
        // d=4096, L=32, V=32000, GPT block, n_ctx=2048:
        // V·d + n_ctx·d + L·(12d² + 13d) + 2d
        // = 131,072,000 + 8,388,608 + 32·(201,326,592 + 53,248) + 8,192 = 6,583,623,680
        let spec = design_spec(
            &Design {
                hidden: 4096,
                layers: 32,
                vocab: Some(32_000),
                ..Design::default()
            },
            Style::Gpt,
        )
        .unwrap();
        assert_eq!(count(&spec).unwrap().total, 6_583_623_680);
    }

    #[test]
    fn heads_must_divide_hidden() {
        let err = design_spec(
            &Design {
                hidden: 100,
                layers: 2,
                heads: Some(3),
                ..Design::default()
            },
            Style::Gpt,
        )
        .unwrap_err();
        assert!(matches!(err, SpecError::HeadsDoNotDivide { heads: 3, .. }));
    }
}
