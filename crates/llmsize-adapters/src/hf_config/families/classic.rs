//! The families read by code of their own since llmsize began: GPT-2, GPT-J, GPT-NeoX, OPT,
//! BLOOM, Falcon, Phi, the first MoE families, DistilBERT, ModernBERT and T5. Their
//! readers live in `decoder.rs`, `moe.rs`, `encoder.rs` and `seq2seq.rs`.

use crate::hf_config::family::Family;
use crate::hf_config::{decoder, encoder, moe, seq2seq};

/// The entries of this file.
pub(crate) const FAMILIES: &[Family] = &[
    Family::code("gpt2", "GPT2Config", "GPT2LMHeadModel", |r, _, _| {
        decoder::gpt2(r)
    }),
    Family::code("gptj", "GPTJConfig", "GPTJForCausalLM", |r, _, _| {
        decoder::gptj(r)
    }),
    Family::code(
        "gpt_neox",
        "GPTNeoXConfig",
        "GPTNeoXForCausalLM",
        |r, _, _| decoder::gpt_neox(r),
    ),
    Family::code("opt", "OPTConfig", "OPTForCausalLM", |r, _, _| {
        decoder::opt(r)
    }),
    Family::code("bloom", "BloomConfig", "BloomForCausalLM", |r, _, _| {
        decoder::bloom(r)
    }),
    Family::code("falcon", "FalconConfig", "FalconForCausalLM", |r, _, _| {
        decoder::falcon(r)
    }),
    Family::code("phi", "PhiConfig", "PhiForCausalLM", |r, _, _| {
        decoder::phi(r)
    }),
    Family::code(
        "mixtral",
        "MixtralConfig",
        "MixtralForCausalLM",
        |r, f, _| moe::moe(r, f.model_type),
    ),
    Family::code(
        "qwen2_moe",
        "Qwen2MoeConfig",
        "Qwen2MoeForCausalLM",
        |r, f, _| moe::moe(r, f.model_type),
    ),
    Family::code(
        "qwen3_moe",
        "Qwen3MoeConfig",
        "Qwen3MoeForCausalLM",
        |r, f, _| moe::moe(r, f.model_type),
    ),
    Family::code("olmoe", "OlmoeConfig", "OlmoeForCausalLM", |r, f, _| {
        moe::moe(r, f.model_type)
    }),
    Family::code(
        "granitemoe",
        "GraniteMoeConfig",
        "GraniteMoeForCausalLM",
        |r, f, _| moe::moe(r, f.model_type),
    ),
    Family::code("gpt_oss", "GptOssConfig", "GptOssForCausalLM", |r, f, _| {
        moe::moe(r, f.model_type)
    }),
    Family::code(
        "distilbert",
        "DistilBertConfig",
        "DistilBertForMaskedLM",
        |r, f, h| encoder::encoder(r, f.model_type, h),
    ),
    Family::code(
        "modernbert",
        "ModernBertConfig",
        "ModernBertForMaskedLM",
        |r, f, h| encoder::encoder(r, f.model_type, h),
    ),
    Family::code("t5", "T5Config", "T5ForConditionalGeneration", |r, _, h| {
        seq2seq::t5(r, h)
    }),
];
