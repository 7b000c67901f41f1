//! The families read by code of their own since llmsize began: GPT-2, GPT-J, GPT-NeoX, OPT,
//! BLOOM, Falcon, Phi, the first MoE families, DistilBERT, ModernBERT and T5. Their
//! readers live in `decoder.rs`, `moe.rs`, `encoder.rs` and `seq2seq.rs`.

use crate::hf_config::family::{Family, Read};
use crate::hf_config::{decoder, encoder, moe, seq2seq};

macro_rules! code {
    ($t:literal, $class:literal, $arch:literal, $f:expr) => {
        Family {
            model_type: $t,
            config_class: $class,
            architecture: $arch,
            read: Read::Code($f),
        }
    };
}

/// The entries of this file.
pub(crate) const FAMILIES: &[Family] = &[
    code!("gpt2", "GPT2Config", "GPT2LMHeadModel", |r, _, _| {
        decoder::gpt2(r)
    }),
    code!("gptj", "GPTJConfig", "GPTJForCausalLM", |r, _, _| {
        decoder::gptj(r)
    }),
    code!(
        "gpt_neox",
        "GPTNeoXConfig",
        "GPTNeoXForCausalLM",
        |r, _, _| decoder::gpt_neox(r)
    ),
    code!(
        "opt",
        "OPTConfig",
        "OPTForCausalLM",
        |r, _, _| decoder::opt(r)
    ),
    code!("bloom", "BloomConfig", "BloomForCausalLM", |r, _, _| {
        decoder::bloom(r)
    }),
    code!("falcon", "FalconConfig", "FalconForCausalLM", |r, _, _| {
        decoder::falcon(r)
    }),
    code!(
        "phi",
        "PhiConfig",
        "PhiForCausalLM",
        |r, _, _| decoder::phi(r)
    ),
    code!(
        "mixtral",
        "MixtralConfig",
        "MixtralForCausalLM",
        |r, f, _| moe::moe(r, f.model_type)
    ),
    code!(
        "qwen2_moe",
        "Qwen2MoeConfig",
        "Qwen2MoeForCausalLM",
        |r, f, _| moe::moe(r, f.model_type)
    ),
    code!(
        "qwen3_moe",
        "Qwen3MoeConfig",
        "Qwen3MoeForCausalLM",
        |r, f, _| moe::moe(r, f.model_type)
    ),
    code!("olmoe", "OlmoeConfig", "OlmoeForCausalLM", |r, f, _| {
        moe::moe(r, f.model_type)
    }),
    code!(
        "granitemoe",
        "GraniteMoeConfig",
        "GraniteMoeForCausalLM",
        |r, f, _| moe::moe(r, f.model_type)
    ),
    code!("gpt_oss", "GptOssConfig", "GptOssForCausalLM", |r, f, _| {
        moe::moe(r, f.model_type)
    }),
    code!(
        "distilbert",
        "DistilBertConfig",
        "DistilBertForMaskedLM",
        |r, f, h| encoder::encoder(r, f.model_type, h)
    ),
    code!(
        "modernbert",
        "ModernBertConfig",
        "ModernBertForMaskedLM",
        |r, f, h| encoder::encoder(r, f.model_type, h)
    ),
    code!("t5", "T5Config", "T5ForConditionalGeneration", |r, _, h| {
        seq2seq::t5(r, h)
    }),
];
