//! Built-in presets: the real `config.json` of every model in the ground truth, kept in this
//! crate's `presets/configs/` and compiled into the binary so `llmsize` works offline.
//! Listed in the order of `tests/fixtures/truth/truth.json`; a test checks they stay in step.

/// One built-in model.
#[derive(Debug, Clone, Copy)]
pub struct Preset {
    /// Short name (`Llama-2-7b-hf`).
    pub id: &'static str,
    /// Hugging Face Hub repository (`meta-llama/Llama-2-7b-hf`); none for the GPT-3 configs,
    /// which were never published as checkpoints.
    pub hf_repo: Option<&'static str>,
    /// `decoder`, `moe`, `encoder` or `seq2seq`.
    pub family: &'static str,
    /// The `config.json` text.
    pub config: &'static str,
}

/// Every preset, in the order of the ground truth.
pub static PRESETS: &[Preset] = &[
    Preset {
        id: "gpt2",
        hf_repo: Some("openai-community/gpt2"),
        family: "decoder",
        config: include_str!("../../presets/configs/gpt2.json"),
    },
    Preset {
        id: "gpt2-medium",
        hf_repo: Some("openai-community/gpt2-medium"),
        family: "decoder",
        config: include_str!("../../presets/configs/gpt2-medium.json"),
    },
    Preset {
        id: "gpt2-xl",
        hf_repo: Some("openai-community/gpt2-xl"),
        family: "decoder",
        config: include_str!("../../presets/configs/gpt2-xl.json"),
    },
    Preset {
        id: "gpt3-small",
        hf_repo: None,
        family: "decoder",
        config: include_str!("../../presets/configs/gpt3-small.json"),
    },
    Preset {
        id: "gpt3-medium",
        hf_repo: None,
        family: "decoder",
        config: include_str!("../../presets/configs/gpt3-medium.json"),
    },
    Preset {
        id: "gpt3-large",
        hf_repo: None,
        family: "decoder",
        config: include_str!("../../presets/configs/gpt3-large.json"),
    },
    Preset {
        id: "gpt3-xl",
        hf_repo: None,
        family: "decoder",
        config: include_str!("../../presets/configs/gpt3-xl.json"),
    },
    Preset {
        id: "gpt3-2.7b",
        hf_repo: None,
        family: "decoder",
        config: include_str!("../../presets/configs/gpt3-2.7b.json"),
    },
    Preset {
        id: "gpt3-6.7b",
        hf_repo: None,
        family: "decoder",
        config: include_str!("../../presets/configs/gpt3-6.7b.json"),
    },
    Preset {
        id: "gpt3-175b",
        hf_repo: None,
        family: "decoder",
        config: include_str!("../../presets/configs/gpt3-175b.json"),
    },
    Preset {
        id: "gpt-j-6b",
        hf_repo: Some("EleutherAI/gpt-j-6b"),
        family: "decoder",
        config: include_str!("../../presets/configs/gpt-j-6b.json"),
    },
    Preset {
        id: "gpt-neox-20b",
        hf_repo: Some("EleutherAI/gpt-neox-20b"),
        family: "decoder",
        config: include_str!("../../presets/configs/gpt-neox-20b.json"),
    },
    Preset {
        id: "pythia-70m",
        hf_repo: Some("EleutherAI/pythia-70m"),
        family: "decoder",
        config: include_str!("../../presets/configs/pythia-70m.json"),
    },
    Preset {
        id: "pythia-160m",
        hf_repo: Some("EleutherAI/pythia-160m"),
        family: "decoder",
        config: include_str!("../../presets/configs/pythia-160m.json"),
    },
    Preset {
        id: "pythia-410m",
        hf_repo: Some("EleutherAI/pythia-410m"),
        family: "decoder",
        config: include_str!("../../presets/configs/pythia-410m.json"),
    },
    Preset {
        id: "pythia-1b",
        hf_repo: Some("EleutherAI/pythia-1b"),
        family: "decoder",
        config: include_str!("../../presets/configs/pythia-1b.json"),
    },
    Preset {
        id: "pythia-1.4b",
        hf_repo: Some("EleutherAI/pythia-1.4b"),
        family: "decoder",
        config: include_str!("../../presets/configs/pythia-1.4b.json"),
    },
    Preset {
        id: "pythia-6.9b",
        hf_repo: Some("EleutherAI/pythia-6.9b"),
        family: "decoder",
        config: include_str!("../../presets/configs/pythia-6.9b.json"),
    },
    Preset {
        id: "pythia-12b",
        hf_repo: Some("EleutherAI/pythia-12b"),
        family: "decoder",
        config: include_str!("../../presets/configs/pythia-12b.json"),
    },
    Preset {
        id: "opt-125m",
        hf_repo: Some("facebook/opt-125m"),
        family: "decoder",
        config: include_str!("../../presets/configs/opt-125m.json"),
    },
    Preset {
        id: "opt-1.3b",
        hf_repo: Some("facebook/opt-1.3b"),
        family: "decoder",
        config: include_str!("../../presets/configs/opt-1.3b.json"),
    },
    Preset {
        id: "opt-2.7b",
        hf_repo: Some("facebook/opt-2.7b"),
        family: "decoder",
        config: include_str!("../../presets/configs/opt-2.7b.json"),
    },
    Preset {
        id: "opt-13b",
        hf_repo: Some("facebook/opt-13b"),
        family: "decoder",
        config: include_str!("../../presets/configs/opt-13b.json"),
    },
    Preset {
        id: "opt-30b",
        hf_repo: Some("facebook/opt-30b"),
        family: "decoder",
        config: include_str!("../../presets/configs/opt-30b.json"),
    },
    Preset {
        id: "opt-66b",
        hf_repo: Some("facebook/opt-66b"),
        family: "decoder",
        config: include_str!("../../presets/configs/opt-66b.json"),
    },
    Preset {
        id: "bloom-560m",
        hf_repo: Some("bigscience/bloom-560m"),
        family: "decoder",
        config: include_str!("../../presets/configs/bloom-560m.json"),
    },
    Preset {
        id: "bloom",
        hf_repo: Some("bigscience/bloom"),
        family: "decoder",
        config: include_str!("../../presets/configs/bloom.json"),
    },
    Preset {
        id: "falcon-7b",
        hf_repo: Some("tiiuae/falcon-7b"),
        family: "decoder",
        config: include_str!("../../presets/configs/falcon-7b.json"),
    },
    Preset {
        id: "llama-7b",
        hf_repo: Some("huggyllama/llama-7b"),
        family: "decoder",
        config: include_str!("../../presets/configs/llama-7b.json"),
    },
    Preset {
        id: "llama-13b",
        hf_repo: Some("huggyllama/llama-13b"),
        family: "decoder",
        config: include_str!("../../presets/configs/llama-13b.json"),
    },
    Preset {
        id: "llama-65b",
        hf_repo: Some("huggyllama/llama-65b"),
        family: "decoder",
        config: include_str!("../../presets/configs/llama-65b.json"),
    },
    Preset {
        id: "Llama-2-7b-hf",
        hf_repo: Some("meta-llama/Llama-2-7b-hf"),
        family: "decoder",
        config: include_str!("../../presets/configs/Llama-2-7b-hf.json"),
    },
    Preset {
        id: "Llama-2-13b-hf",
        hf_repo: Some("meta-llama/Llama-2-13b-hf"),
        family: "decoder",
        config: include_str!("../../presets/configs/Llama-2-13b-hf.json"),
    },
    Preset {
        id: "Llama-2-70b-hf",
        hf_repo: Some("meta-llama/Llama-2-70b-hf"),
        family: "decoder",
        config: include_str!("../../presets/configs/Llama-2-70b-hf.json"),
    },
    Preset {
        id: "Meta-Llama-3-8B",
        hf_repo: Some("meta-llama/Meta-Llama-3-8B"),
        family: "decoder",
        config: include_str!("../../presets/configs/Meta-Llama-3-8B.json"),
    },
    Preset {
        id: "Llama-3.1-8B",
        hf_repo: Some("meta-llama/Llama-3.1-8B"),
        family: "decoder",
        config: include_str!("../../presets/configs/Llama-3.1-8B.json"),
    },
    Preset {
        id: "Llama-3.1-405B",
        hf_repo: Some("meta-llama/Llama-3.1-405B"),
        family: "decoder",
        config: include_str!("../../presets/configs/Llama-3.1-405B.json"),
    },
    Preset {
        id: "Llama-3.2-1B",
        hf_repo: Some("meta-llama/Llama-3.2-1B"),
        family: "decoder",
        config: include_str!("../../presets/configs/Llama-3.2-1B.json"),
    },
    Preset {
        id: "Mistral-7B-v0.1",
        hf_repo: Some("mistralai/Mistral-7B-v0.1"),
        family: "decoder",
        config: include_str!("../../presets/configs/Mistral-7B-v0.1.json"),
    },
    Preset {
        id: "Qwen2-0.5B",
        hf_repo: Some("Qwen/Qwen2-0.5B"),
        family: "decoder",
        config: include_str!("../../presets/configs/Qwen2-0.5B.json"),
    },
    Preset {
        id: "Qwen2-1.5B",
        hf_repo: Some("Qwen/Qwen2-1.5B"),
        family: "decoder",
        config: include_str!("../../presets/configs/Qwen2-1.5B.json"),
    },
    Preset {
        id: "Qwen2-7B",
        hf_repo: Some("Qwen/Qwen2-7B"),
        family: "decoder",
        config: include_str!("../../presets/configs/Qwen2-7B.json"),
    },
    Preset {
        id: "Qwen2.5-0.5B",
        hf_repo: Some("Qwen/Qwen2.5-0.5B"),
        family: "decoder",
        config: include_str!("../../presets/configs/Qwen2.5-0.5B.json"),
    },
    Preset {
        id: "Qwen2.5-3B",
        hf_repo: Some("Qwen/Qwen2.5-3B"),
        family: "decoder",
        config: include_str!("../../presets/configs/Qwen2.5-3B.json"),
    },
    Preset {
        id: "Qwen2.5-7B",
        hf_repo: Some("Qwen/Qwen2.5-7B"),
        family: "decoder",
        config: include_str!("../../presets/configs/Qwen2.5-7B.json"),
    },
    Preset {
        id: "Qwen2.5-32B",
        hf_repo: Some("Qwen/Qwen2.5-32B"),
        family: "decoder",
        config: include_str!("../../presets/configs/Qwen2.5-32B.json"),
    },
    Preset {
        id: "Qwen2.5-72B",
        hf_repo: Some("Qwen/Qwen2.5-72B"),
        family: "decoder",
        config: include_str!("../../presets/configs/Qwen2.5-72B.json"),
    },
    Preset {
        id: "Qwen3-0.6B",
        hf_repo: Some("Qwen/Qwen3-0.6B"),
        family: "decoder",
        config: include_str!("../../presets/configs/Qwen3-0.6B.json"),
    },
    Preset {
        id: "Qwen3-1.7B",
        hf_repo: Some("Qwen/Qwen3-1.7B"),
        family: "decoder",
        config: include_str!("../../presets/configs/Qwen3-1.7B.json"),
    },
    Preset {
        id: "Qwen3-4B",
        hf_repo: Some("Qwen/Qwen3-4B"),
        family: "decoder",
        config: include_str!("../../presets/configs/Qwen3-4B.json"),
    },
    Preset {
        id: "Qwen3-8B",
        hf_repo: Some("Qwen/Qwen3-8B"),
        family: "decoder",
        config: include_str!("../../presets/configs/Qwen3-8B.json"),
    },
    Preset {
        id: "Qwen3-32B",
        hf_repo: Some("Qwen/Qwen3-32B"),
        family: "decoder",
        config: include_str!("../../presets/configs/Qwen3-32B.json"),
    },
    Preset {
        id: "gemma-2b",
        hf_repo: Some("google/gemma-2b"),
        family: "decoder",
        config: include_str!("../../presets/configs/gemma-2b.json"),
    },
    Preset {
        id: "gemma-7b",
        hf_repo: Some("google/gemma-7b"),
        family: "decoder",
        config: include_str!("../../presets/configs/gemma-7b.json"),
    },
    Preset {
        id: "gemma-2-2b",
        hf_repo: Some("google/gemma-2-2b"),
        family: "decoder",
        config: include_str!("../../presets/configs/gemma-2-2b.json"),
    },
    Preset {
        id: "gemma-2-9b",
        hf_repo: Some("google/gemma-2-9b"),
        family: "decoder",
        config: include_str!("../../presets/configs/gemma-2-9b.json"),
    },
    Preset {
        id: "gemma-3-1b-pt",
        hf_repo: Some("google/gemma-3-1b-pt"),
        family: "decoder",
        config: include_str!("../../presets/configs/gemma-3-1b-pt.json"),
    },
    Preset {
        id: "phi-2",
        hf_repo: Some("microsoft/phi-2"),
        family: "decoder",
        config: include_str!("../../presets/configs/phi-2.json"),
    },
    Preset {
        id: "Phi-3-mini-4k-instruct",
        hf_repo: Some("microsoft/Phi-3-mini-4k-instruct"),
        family: "decoder",
        config: include_str!(
            "../../presets/configs/Phi-3-mini-4k-instruct.json"
        ),
    },
    Preset {
        id: "TinyLlama-1.1B-intermediate-step-1431k-3T",
        hf_repo: Some("TinyLlama/TinyLlama-1.1B-intermediate-step-1431k-3T"),
        family: "decoder",
        config: include_str!(
            "../../presets/configs/TinyLlama-1.1B-intermediate-step-1431k-3T.json"
        ),
    },
    Preset {
        id: "SmolLM2-135M",
        hf_repo: Some("HuggingFaceTB/SmolLM2-135M"),
        family: "decoder",
        config: include_str!("../../presets/configs/SmolLM2-135M.json"),
    },
    Preset {
        id: "SmolLM2-1.7B",
        hf_repo: Some("HuggingFaceTB/SmolLM2-1.7B"),
        family: "decoder",
        config: include_str!("../../presets/configs/SmolLM2-1.7B.json"),
    },
    Preset {
        id: "Mixtral-8x7B-v0.1",
        hf_repo: Some("mistralai/Mixtral-8x7B-v0.1"),
        family: "moe",
        config: include_str!("../../presets/configs/Mixtral-8x7B-v0.1.json"),
    },
    Preset {
        id: "Qwen1.5-MoE-A2.7B",
        hf_repo: Some("Qwen/Qwen1.5-MoE-A2.7B"),
        family: "moe",
        config: include_str!("../../presets/configs/Qwen1.5-MoE-A2.7B.json"),
    },
    Preset {
        id: "Qwen3-30B-A3B",
        hf_repo: Some("Qwen/Qwen3-30B-A3B"),
        family: "moe",
        config: include_str!("../../presets/configs/Qwen3-30B-A3B.json"),
    },
    Preset {
        id: "DeepSeek-V2-Lite",
        hf_repo: Some("deepseek-ai/DeepSeek-V2-Lite"),
        family: "moe",
        config: include_str!("../../presets/configs/DeepSeek-V2-Lite.json"),
    },
    Preset {
        id: "DeepSeek-V3",
        hf_repo: Some("deepseek-ai/DeepSeek-V3"),
        family: "moe",
        config: include_str!("../../presets/configs/DeepSeek-V3.json"),
    },
    Preset {
        id: "gpt-oss-20b",
        hf_repo: Some("openai/gpt-oss-20b"),
        family: "moe",
        config: include_str!("../../presets/configs/gpt-oss-20b.json"),
    },
    Preset {
        id: "bert-base-uncased",
        hf_repo: Some("google-bert/bert-base-uncased"),
        family: "encoder",
        config: include_str!("../../presets/configs/bert-base-uncased.json"),
    },
    Preset {
        id: "roberta-base",
        hf_repo: Some("FacebookAI/roberta-base"),
        family: "encoder",
        config: include_str!("../../presets/configs/roberta-base.json"),
    },
    Preset {
        id: "distilbert-base-uncased",
        hf_repo: Some("distilbert/distilbert-base-uncased"),
        family: "encoder",
        config: include_str!(
            "../../presets/configs/distilbert-base-uncased.json"
        ),
    },
    Preset {
        id: "all-MiniLM-L6-v2",
        hf_repo: Some("sentence-transformers/all-MiniLM-L6-v2"),
        family: "encoder",
        config: include_str!("../../presets/configs/all-MiniLM-L6-v2.json"),
    },
    Preset {
        id: "ModernBERT-base",
        hf_repo: Some("answerdotai/ModernBERT-base"),
        family: "encoder",
        config: include_str!("../../presets/configs/ModernBERT-base.json"),
    },
    Preset {
        id: "t5-small",
        hf_repo: Some("google-t5/t5-small"),
        family: "seq2seq",
        config: include_str!("../../presets/configs/t5-small.json"),
    },
    Preset {
        id: "t5-base",
        hf_repo: Some("google-t5/t5-base"),
        family: "seq2seq",
        config: include_str!("../../presets/configs/t5-base.json"),
    },
    Preset {
        id: "t5-large",
        hf_repo: Some("google-t5/t5-large"),
        family: "seq2seq",
        config: include_str!("../../presets/configs/t5-large.json"),
    },
    Preset {
        id: "flan-t5-xl",
        hf_repo: Some("google/flan-t5-xl"),
        family: "seq2seq",
        config: include_str!("../../presets/configs/flan-t5-xl.json"),
    },
    Preset {
        id: "bart-base",
        hf_repo: Some("facebook/bart-base"),
        family: "seq2seq",
        config: include_str!("../../presets/configs/bart-base.json"),
    },
];
