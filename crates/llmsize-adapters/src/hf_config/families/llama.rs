//! `LLaMA` and the dense decoders that change a few of its switches: Mistral, Qwen2/3,
//! Gemma 1/2/3, Phi-3, `StarCoder2`, `OLMo2`. Each entry is the configuration class's
//! defaults and the switches of its `modeling_*.py` (transformers 5.24).

use llmsize_core::spec::NormKind;

use crate::hf_config::family::{
    AttentionRule, Block, Family, HeadDim, LLAMA, LLAMA_ATTENTION, LLAMA_MLP, MlpRule, NO,
    NormRule, PLAIN_ATTENTION, QkNorm, RMS2, StandardRule, Switch, Windows, YES, key_or,
};

/// Mistral: no attention or MLP biases, 8 KV heads, every layer slides when
/// `sliding_window` is set.
const MISTRAL: Block = Block {
    kv_default: Some(8),
    attention: AttentionRule::Standard(PLAIN_ATTENTION),
    mlp: MlpRule {
        up_bias: NO,
        down_bias: NO,
        ..LLAMA_MLP
    },
    windows: Windows::All,
    ..LLAMA
};

/// Qwen2: biases on q, k, v (not o), 32 KV heads, windows from `max_window_layers`.
const QWEN2: Block = Block {
    kv_default: Some(32),
    attention: AttentionRule::Standard(StandardRule {
        qkv_bias: YES,
        ..PLAIN_ATTENTION
    }),
    mlp: MISTRAL.mlp,
    windows: Windows::FromLayer(28),
    ..LLAMA
};

/// Qwen3: per-head q/k norms, `head_dim` 128 by default.
const QWEN3: Block = Block {
    kv_default: Some(32),
    head_dim: HeadDim::KeyOr(128),
    attention: AttentionRule::Standard(StandardRule {
        qk_norm: QkNorm::PerHead,
        ..LLAMA_ATTENTION
    }),
    mlp: MISTRAL.mlp,
    windows: Windows::FromLayer(28),
    ..LLAMA
};

/// Gemma: `head_dim` 256, 16 KV heads, tied.
const GEMMA: Block = Block {
    kv_default: Some(16),
    head_dim: HeadDim::KeyOr(256),
    mlp: MISTRAL.mlp,
    tie: true,
    ..LLAMA
};

/// Gemma 2: sandwich norms (4 per layer), even layers slide.
const GEMMA2: Block = Block {
    kv_default: Some(4),
    norm: NormRule {
        per_layer: 4,
        ..RMS2
    },
    windows: Windows::Alternate,
    ..GEMMA
};

/// Gemma 3: Gemma 2 with per-head q/k norms, 5 local layers per global one. The published
/// Gemma 3 files (`google/gemma-3-27b-pt`, 12b, 4b) leave `vocab_size` out of `text_config`,
/// so `Gemma3TextConfig`'s 262,208 applies (and is shown as an assumption).
const GEMMA3_TEXT: Block = Block {
    vocab: key_or(&["vocab_size"], 262_208),
    attention: AttentionRule::Standard(StandardRule {
        qk_norm: QkNorm::PerHead,
        ..LLAMA_ATTENTION
    }),
    windows: Windows::Pattern(6),
    ..GEMMA2
};

/// Phi-3: fused `qkv_proj` and `gate_up_proj`, no biases.
const PHI3: Block = Block {
    attention: AttentionRule::Standard(StandardRule {
        fused: true,
        ..PLAIN_ATTENTION
    }),
    mlp: MISTRAL.mlp,
    windows: Windows::All,
    ..LLAMA
};

/// `StarCoder2`: `LayerNorm`s, a plain (ungated) MLP, every projection biased by `use_bias`.
const STARCODER2: Block = Block {
    kv_default: Some(2),
    attention: AttentionRule::Standard(StandardRule {
        qkv_bias: Switch::Key("use_bias", true),
        o_bias: Switch::Key("use_bias", true),
        ..LLAMA_ATTENTION
    }),
    mlp: MlpRule {
        gated: false,
        up_bias: Switch::Key("use_bias", true),
        down_bias: Switch::Key("use_bias", true),
        ..LLAMA_MLP
    },
    norm: NormRule {
        kind: NormKind::LayerNorm,
        bias: YES,
        per_layer: 2,
    },
    tie: true,
    windows: Windows::All,
    ..LLAMA
};

/// `OLMo2`: q/k norms over the full projection widths.
const OLMO2: Block = Block {
    attention: AttentionRule::Standard(StandardRule {
        qk_norm: QkNorm::FullWidth,
        ..LLAMA_ATTENTION
    }),
    mlp: MISTRAL.mlp,
    ..LLAMA
};

/// The entries of this file.
pub(crate) const FAMILIES: &[Family] = &[
    Family::block("llama", "LlamaConfig", "LlamaForCausalLM", &LLAMA),
    Family::block("mistral", "MistralConfig", "MistralForCausalLM", &MISTRAL),
    Family::block("qwen2", "Qwen2Config", "Qwen2ForCausalLM", &QWEN2),
    Family::block("qwen3", "Qwen3Config", "Qwen3ForCausalLM", &QWEN3),
    Family::block("gemma", "GemmaConfig", "GemmaForCausalLM", &GEMMA),
    Family::block("gemma2", "Gemma2Config", "Gemma2ForCausalLM", &GEMMA2),
    Family::block(
        "gemma3_text",
        "Gemma3TextConfig",
        "Gemma3ForCausalLM",
        &GEMMA3_TEXT,
    ),
    Family::block("phi3", "Phi3Config", "Phi3ForCausalLM", &PHI3),
    Family::block(
        "starcoder2",
        "Starcoder2Config",
        "Starcoder2ForCausalLM",
        &STARCODER2,
    ),
    Family::block("olmo2", "Olmo2Config", "Olmo2ForCausalLM", &OLMO2),
];
