//! Each model type's facts beyond shapes, in one place: the module names its
//! `modeling_*.py` gives its linear layers, peft's default targets and MoE conversion for it,
//! and the llama.cpp rules of the architecture it converts to. The reader copies them onto
//! the spec ([`ModelSpec::facts`](llmsize_core::ModelSpec)); core reads them there and holds
//! no `model_type` string.
//!
//! Sources: transformers 5.24's `modeling_*.py` (module names); peft 0.21's
//! `TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING` (default targets) and
//! `_MOE_TARGET_MODULE_MAPPING` with transformers' `_MODEL_TO_CONVERSION_PATTERN` (which
//! MoE types peft converts, and by which pattern); llama.cpp's `load_hparams`
//! (`src/llama-model.cpp`: the architectures that set `swa_type`).

use llmsize_core::facts::{LLAMA_MODULES, MoeConversion, TypeFacts};
use llmsize_core::layout::TensorKind as K;

/// GPT-2's `Conv1D` modules (`c_proj` names the attention output and the MLP's down).
const GPT2_MODULES: &[(K, &str)] = &[
    (K::AttnQkv, "c_attn"),
    (K::AttnOutput, "c_proj"),
    (K::FfnUp, "c_fc"),
    (K::FfnDown, "c_proj"),
];
/// GPT-NeoX, `BLOOM`, Falcon, Persimmon and GPT-NeoX-Japanese.
const NEOX_MODULES: &[(K, &str)] = &[
    (K::AttnQkv, "query_key_value"),
    (K::AttnOutput, "dense"),
    (K::FfnUp, "dense_h_to_4h"),
    (K::FfnDown, "dense_4h_to_h"),
];
/// OPT (`project_in`/`project_out` of OPT-350m are named from the layout: they share a kind).
const OPT_MODULES: &[(K, &str)] = &[
    (K::AttnQ, "q_proj"),
    (K::AttnK, "k_proj"),
    (K::AttnV, "v_proj"),
    (K::AttnOutput, "out_proj"),
    (K::FfnUp, "fc1"),
    (K::FfnDown, "fc2"),
];
/// `StarCoder2`.
const STARCODER2_MODULES: &[(K, &str)] = &[
    (K::AttnQ, "q_proj"),
    (K::AttnK, "k_proj"),
    (K::AttnV, "v_proj"),
    (K::AttnOutput, "o_proj"),
    (K::FfnUp, "c_fc"),
    (K::FfnDown, "c_proj"),
];
/// Phi-3: fused `qkv_proj` and `gate_up_proj`.
const PHI3_MODULES: &[(K, &str)] = &[
    (K::AttnQkv, "qkv_proj"),
    (K::AttnOutput, "o_proj"),
    (K::FfnGate, "gate_up_proj"),
    (K::FfnUp, "gate_up_proj"),
    (K::FfnDown, "down_proj"),
];
const GPTJ_MODULES: &[(K, &str)] = &[
    (K::AttnOutput, "out_proj"),
    (K::FfnUp, "fc_in"),
    (K::FfnDown, "fc_out"),
];
const CODEGEN_MODULES: &[(K, &str)] = &[
    (K::AttnQkv, "qkv_proj"),
    (K::AttnOutput, "out_proj"),
    (K::FfnUp, "fc_in"),
    (K::FfnDown, "fc_out"),
];
const GPT_NEO_MODULES: &[(K, &str)] = &[
    (K::AttnOutput, "out_proj"),
    (K::FfnUp, "c_fc"),
    (K::FfnDown, "c_proj"),
];
const BIGCODE_MODULES: &[(K, &str)] = &[
    (K::AttnQkv, "c_attn"),
    (K::AttnOutput, "c_proj"),
    (K::FfnUp, "c_fc"),
    (K::FfnDown, "c_proj"),
];
const PHI_MODULES: &[(K, &str)] = &[
    (K::AttnOutput, "dense"),
    (K::FfnUp, "fc1"),
    (K::FfnDown, "fc2"),
];
const MPT_MODULES: &[(K, &str)] = &[(K::AttnQkv, "Wqkv"), (K::AttnOutput, "out_proj")];
/// GLM and GLM-4: one fused `gate_up_proj`.
const GLM_MODULES: &[(K, &str)] = &[(K::FfnGate, "gate_up_proj"), (K::FfnUp, "gate_up_proj")];
const PHI4_MULTIMODAL_MODULES: &[(K, &str)] = &[
    (K::AttnQkv, "qkv_proj"),
    (K::FfnGate, "gate_up_proj"),
    (K::FfnUp, "gate_up_proj"),
];
const MINIMAX_M3_VL_TEXT_MODULES: &[(K, &str)] = &[
    (K::SharedGate, "shared_experts.gate_up_proj"),
    (K::SharedUp, "shared_experts.gate_up_proj"),
    (K::SharedDown, "shared_experts.down_proj"),
];
/// Granite's shared MLP (`shared_mlp.input_linear` holds gate and up).
const GRANITE_SHARED_MODULES: &[(K, &str)] = &[
    (K::SharedGate, "shared_mlp.input_linear"),
    (K::SharedUp, "shared_mlp.input_linear"),
    (K::SharedDown, "shared_mlp.output_linear"),
];
const MODERNBERT_DECODER_MODULES: &[(K, &str)] = &[
    (K::AttnOutput, "Wo"),
    (K::FfnGate, "Wi"),
    (K::FfnUp, "Wi"),
    (K::FfnDown, "Wo"),
];
/// Llama 4 and `PhiMoE`: the router is a module named `router` (an `nn.Linear`).
const ROUTER_MODULES: &[(K, &str)] = &[(K::Router, "router")];
/// gpt-oss: the router is `mlp.router` (a parameter module, `GptOssTopKRouter`).
const GPT_OSS_MODULES: &[(K, &str)] = ROUTER_MODULES;
/// DeepSeek's MoE calls its shared experts `shared_experts` (plural).
const DEEPSEEK_MODULES: &[(K, &str)] = &[
    (K::SharedGate, "shared_experts.gate_proj"),
    (K::SharedUp, "shared_experts.up_proj"),
    (K::SharedDown, "shared_experts.down_proj"),
];

const QV: &[&str] = &["q_proj", "v_proj"];
const QKV_FUSED: &[&str] = &["query_key_value"];

/// Facts with these module names and nothing else.
const fn named(modules: &'static [(K, &'static str)]) -> TypeFacts {
    TypeFacts {
        modules,
        ..TypeFacts::NONE
    }
}

/// Facts with these module names and peft's default targets.
const fn peft(
    modules: &'static [(K, &'static str)],
    default: &'static [&'static str],
) -> TypeFacts {
    TypeFacts {
        modules,
        peft_default: Some(default),
        ..TypeFacts::NONE
    }
}

/// A MoE type that peft converts by `conversion`.
const fn converted(modules: &'static [(K, &'static str)], conversion: MoeConversion) -> TypeFacts {
    TypeFacts {
        modules,
        moe_conversion: Some(conversion),
        ..TypeFacts::NONE
    }
}

/// With llama.cpp's sliding-window cache.
const fn swa(facts: TypeFacts) -> TypeFacts {
    TypeFacts {
        llama_cpp_swa: true,
        ..facts
    }
}

/// With an `nn.Linear` router.
const fn linear_router(facts: TypeFacts) -> TypeFacts {
    TypeFacts {
        linear_router: true,
        ..facts
    }
}

/// The types whose router weight `modeling_*.py` creates in fp32 and reads over
/// `hidden.float()` (DeepSeek-V3's `TopkRouter` and its copies; `grep 'self.weight =
/// nn.Parameter(torch.zeros(…, dtype=torch.float32))'` over transformers 5.24), with the
/// types that run one of those modules (`sarvam_mla`: DeepSeek-V3's, `sarvam_moe`:
/// GLM-4-MoE's). A vision-language model's text config (`…_text`) shares its module.
const FP32_ROUTERS: &[&str] = &[
    "axk1",
    "axk2",
    "bailing_hybrid",
    "beam",
    "deepseek_ocr2",
    "deepseek_v2",
    "deepseek_v3",
    "deepseek_v32",
    "dots1",
    "dots3_note",
    "ernie4_5_moe",
    "ernie4_5_vl_moe",
    "exaone_moe",
    "flint",
    "glm4_moe",
    "glm4_moe_lite",
    "glm4v_moe",
    "glm5_next",
    "glm_moe_dsa",
    "hy_v3",
    "hy_v4",
    "hy_v4_vl",
    "inkling2",
    "inkling2_loop",
    "kimi_linear",
    "mimo_v2_flash",
    "mistral_large4",
    "muse_spark",
    "nemotron_h",
    "solar_open",
    "unlimited_ocr",
    "sarvam_mla",
    "sarvam_moe",
];

/// The facts of a model type; [`TypeFacts::NONE`] (llama's names, no peft default, no
/// conversion, no runtime rule) for the types that have none of their own.
pub(crate) fn of(model_type: &str) -> TypeFacts {
    let base = model_type.strip_suffix("_text").unwrap_or(model_type);
    TypeFacts {
        router_fp32: FP32_ROUTERS.contains(&model_type) || FP32_ROUTERS.contains(&base),
        ..by_name(model_type)
    }
}

fn by_name(model_type: &str) -> TypeFacts {
    match model_type {
        // The types whose training step is derived: llama's names spelled out.
        "llama" | "mistral" | "qwen2" | "qwen3" | "gemma" => peft(LLAMA_MODULES, QV),
        "gemma2" => swa(peft(LLAMA_MODULES, QV)),
        "olmo2" => named(LLAMA_MODULES),
        "mixtral" => converted(LLAMA_MODULES, MoeConversion::MIXTRAL),
        "qwen3_moe" => converted(LLAMA_MODULES, MoeConversion::QWEN2_MOE),
        "phi3" => named(PHI3_MODULES),
        "gpt2" => peft(GPT2_MODULES, &["c_attn"]),
        // GPT-SW3 runs `GPT2LMHeadModel` (its config differs in `model_type` only); peft
        // 0.21 has no default targets for it.
        "gpt-sw3" => named(GPT2_MODULES),
        "gpt_neox" | "bloom" | "falcon" => peft(NEOX_MODULES, QKV_FUSED),
        "opt" => peft(OPT_MODULES, QV),
        // MusicGen's decoders use OPT's names (`out_proj`, `fc1`, `fc2`); peft has no default.
        "musicgen_decoder" | "musicgen_melody_decoder" => named(OPT_MODULES),
        "starcoder2" => named(STARCODER2_MODULES),
        // Decoders with names of their own.
        "gpt_bigcode" => peft(BIGCODE_MODULES, &["c_attn"]),
        "gptj" => peft(GPTJ_MODULES, QV),
        "gpt_neo" => peft(GPT_NEO_MODULES, QV),
        "codegen" => peft(CODEGEN_MODULES, &["qkv_proj"]),
        "phi" => peft(PHI_MODULES, &["q_proj", "v_proj", "fc1", "fc2"]),
        "mpt" => peft(MPT_MODULES, &["Wqkv"]),
        "persimmon" | "gpt_neox_japanese" => named(NEOX_MODULES),
        "glm" | "glm4" => named(GLM_MODULES),
        "phi4_multimodal" => named(PHI4_MULTIMODAL_MODULES),
        "minimax_m3_vl_text" => named(MINIMAX_M3_VL_TEXT_MODULES),
        "granitemoeshared" | "granitemoehybrid" => named(GRANITE_SHARED_MODULES),
        "modernbert-decoder" => named(MODERNBERT_DECODER_MODULES),
        "llama4" => swa(linear_router(peft(ROUTER_MODULES, QV))),
        "llama4_text" => swa(linear_router(named(ROUTER_MODULES))),
        "phimoe" => linear_router(named(ROUTER_MODULES)),
        "gpt_oss" => swa(named(GPT_OSS_MODULES)),
        // Types with only a peft default.
        "chatglm" | "RefinedWeb" | "RefinedWebModel" => peft(&[], QKV_FUSED),
        "stablelm" | "gemma4" | "bart" => peft(&[], QV),
        "gemma3_text" => swa(peft(&[], QV)),
        "btlm" => peft(&[], &["c_proj", "c_attn"]),
        "nemotron_h" => peft(&[], &["q_proj", "k_proj", "v_proj", "o_proj"]),
        "t5" | "mt5" => peft(&[], &["q", "v"]),
        "bert" | "roberta" | "xlm-roberta" | "electra" | "layoutlm" => {
            peft(&[], &["query", "value"])
        }
        "deberta-v2" => peft(&[], &["query_proj", "value_proj"]),
        "deberta" => peft(&[], &["in_proj"]),
        // MoE types peft converts.
        "minimax" | "minimax_m2" => converted(&[], MoeConversion::MIXTRAL),
        "deepseek_v2" | "deepseek_v3" | "deepseek_v32" => {
            converted(DEEPSEEK_MODULES, MoeConversion::QWEN2_MOE)
        }
        "afmoe"
        | "beam"
        | "cohere2_moe"
        | "dots1"
        | "ernie4_5_moe"
        | "exaone_moe"
        | "flex_olmo"
        | "glm4_moe"
        | "glm4_moe_lite"
        | "glm4v_moe"
        | "glm_moe_dsa"
        | "hunyuan_v1_moe"
        | "longcat_flash"
        | "mellum"
        | "olmoe"
        | "qwen3_next"
        | "qwen3_omni_moe"
        | "qwen3_omni_moe_text"
        | "qwen3_omni_moe_thinker"
        | "sarvam_mla"
        | "solar_open" => converted(&[], MoeConversion::QWEN2_MOE),
        "deepseek_v4" | "deepseek_vl" | "deepseek_vl_hybrid" | "kimi_k2" => named(DEEPSEEK_MODULES),
        // Reformer's cache (`past_buckets_states`) and LSH attention are not modelled.
        "reformer" => TypeFacts {
            unmodelled: Some(
                "its cache (`past_buckets_states`: each layer's past hidden states, d per \
                 token, and on LSH layers their int64 hash buckets, n_h·num_hashes per token) \
                 and its LSH and local attention's scores are not modelled",
            ),
            ..TypeFacts::NONE
        },
        // llama.cpp's sliding-window cache.
        "gemma3" | "gemma3n" | "gemma3n_text" | "cohere2" | "exaone4" | "olmo3"
        | "smallthinker" => swa(TypeFacts::NONE),
        _ => TypeFacts::NONE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peft_defaults() {
        assert_eq!(of("gpt2").peft_default, Some(&["c_attn"][..]));
        assert_eq!(of("qwen2").peft_default, Some(&["q_proj", "v_proj"][..]));
        // train.json lora_default errors: Phi-3 (no default), Mixtral (conversion).
        assert_eq!(of("phi3").peft_default, None);
        assert_eq!(of("mixtral").peft_default, None);
        assert_eq!(of("mixtral").moe_conversion, Some(MoeConversion::MIXTRAL));
    }

    #[test]
    fn every_named_type_is_one_the_registry_reads() {
        // A record for a type no reader builds is a typo or a stale entry, except where the
        // source table it copies names types llmsize does not read (yet): peft's encoders
        // and the types transformers 5.24 no longer has (`RefinedWeb`), transformers'
        // conversion entry for the whole Qwen3-Omni and llama.cpp's SWA architectures. They
        // stay so that each table is copied whole.
        const NOT_READ: &[&str] = &[
            "RefinedWeb",
            "RefinedWebModel",
            "btlm",
            "chatglm",
            "mt5",
            "layoutlm",
            "deberta-v2",
            "deberta",
            "qwen3_omni_moe",
            "gemma3n",
            "smallthinker",
        ];
        let known: std::collections::HashSet<&str> =
            super::super::families::model_types().collect();
        let src = include_str!("facts.rs");
        let body = &src[src.find("match model_type {").unwrap_or(0)..];
        let body = &body[..body.find("_ => TypeFacts::NONE").unwrap_or(body.len())];
        // The arms' patterns: the lines that start with a quoted type or a `|`.
        let patterns = body
            .lines()
            .map(str::trim)
            .filter(|l| l.starts_with(['"', '|']));
        let mut unknown = Vec::new();
        for line in patterns {
            let pattern = line.split("=>").next().unwrap_or(line);
            // (A quoted text with spaces is a message, not a type.)
            for name in pattern
                .split('"')
                .skip(1)
                .step_by(2)
                .filter(|n| !n.contains(' '))
            {
                if !known.contains(name) && !NOT_READ.contains(&name) {
                    unknown.push(name);
                }
            }
        }
        assert!(
            unknown.is_empty(),
            "records of types no reader builds: {unknown:?}"
        );
    }
}
