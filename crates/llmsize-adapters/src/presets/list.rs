//! Built-in presets: the real `config.json` of every model in the ground truth, kept in this
//! crate's `presets/configs/` and compiled into the binary so `llmsize` works offline.
//! Listed in the order of `tests/fixtures/truth/truth.json`; a test checks they stay in step.
//! The presets after those are today's most used releases (`presets/added.json` holds what
//! `transformers` builds from each, `presets/SOURCES.md` where each file comes from).

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

/// The table below, one row a preset: `family: "org"/"id"`, the Hub repository being
/// `org/id`, or `family: None/"id"` for a config that has none; each config is
/// `presets/configs/<id>.json`.
macro_rules! presets {
    ($($family:ident: $org:tt / $id:literal,)*) => {
        &[$(Preset {
            id: $id,
            hf_repo: hub_repo!($org, $id),
            family: stringify!($family),
            config: include_str!(concat!("../../presets/configs/", $id, ".json")),
        },)*]
    };
}

/// A preset's Hub repository: none, or `org/id`.
macro_rules! hub_repo {
    (None, $id:literal) => {
        None
    };
    ($org:literal, $id:literal) => {
        Some(concat!($org, "/", $id))
    };
}

/// Every preset: the ground truth's, in its order, then the added ones.
pub static PRESETS: &[Preset] = presets! {
    decoder: "openai-community"/"gpt2",
    decoder: "openai-community"/"gpt2-medium",
    decoder: "openai-community"/"gpt2-xl",
    decoder: None/"gpt3-small",
    decoder: None/"gpt3-medium",
    decoder: None/"gpt3-large",
    decoder: None/"gpt3-xl",
    decoder: None/"gpt3-2.7b",
    decoder: None/"gpt3-6.7b",
    decoder: None/"gpt3-175b",
    decoder: "EleutherAI"/"gpt-j-6b",
    decoder: "EleutherAI"/"gpt-neox-20b",
    decoder: "EleutherAI"/"pythia-70m",
    decoder: "EleutherAI"/"pythia-160m",
    decoder: "EleutherAI"/"pythia-410m",
    decoder: "EleutherAI"/"pythia-1b",
    decoder: "EleutherAI"/"pythia-1.4b",
    decoder: "EleutherAI"/"pythia-6.9b",
    decoder: "EleutherAI"/"pythia-12b",
    decoder: "facebook"/"opt-125m",
    decoder: "facebook"/"opt-1.3b",
    decoder: "facebook"/"opt-2.7b",
    decoder: "facebook"/"opt-13b",
    decoder: "facebook"/"opt-30b",
    decoder: "facebook"/"opt-66b",
    decoder: "bigscience"/"bloom-560m",
    decoder: "bigscience"/"bloom",
    decoder: "tiiuae"/"falcon-7b",
    decoder: "huggyllama"/"llama-7b",
    decoder: "huggyllama"/"llama-13b",
    decoder: "huggyllama"/"llama-65b",
    decoder: "meta-llama"/"Llama-2-7b-hf",
    decoder: "meta-llama"/"Llama-2-13b-hf",
    decoder: "meta-llama"/"Llama-2-70b-hf",
    decoder: "meta-llama"/"Meta-Llama-3-8B",
    decoder: "meta-llama"/"Llama-3.1-8B",
    decoder: "meta-llama"/"Llama-3.1-405B",
    decoder: "meta-llama"/"Llama-3.2-1B",
    decoder: "mistralai"/"Mistral-7B-v0.1",
    decoder: "Qwen"/"Qwen2-0.5B",
    decoder: "Qwen"/"Qwen2-1.5B",
    decoder: "Qwen"/"Qwen2-7B",
    decoder: "Qwen"/"Qwen2.5-0.5B",
    decoder: "Qwen"/"Qwen2.5-3B",
    decoder: "Qwen"/"Qwen2.5-7B",
    decoder: "Qwen"/"Qwen2.5-32B",
    decoder: "Qwen"/"Qwen2.5-72B",
    decoder: "Qwen"/"Qwen3-0.6B",
    decoder: "Qwen"/"Qwen3-1.7B",
    decoder: "Qwen"/"Qwen3-4B",
    decoder: "Qwen"/"Qwen3-8B",
    decoder: "Qwen"/"Qwen3-32B",
    decoder: "google"/"gemma-2b",
    decoder: "google"/"gemma-7b",
    decoder: "google"/"gemma-2-2b",
    decoder: "google"/"gemma-2-9b",
    decoder: "google"/"gemma-3-1b-pt",
    decoder: "microsoft"/"phi-2",
    decoder: "microsoft"/"Phi-3-mini-4k-instruct",
    decoder: "TinyLlama"/"TinyLlama-1.1B-intermediate-step-1431k-3T",
    decoder: "HuggingFaceTB"/"SmolLM2-135M",
    decoder: "HuggingFaceTB"/"SmolLM2-1.7B",
    moe: "mistralai"/"Mixtral-8x7B-v0.1",
    moe: "Qwen"/"Qwen1.5-MoE-A2.7B",
    moe: "Qwen"/"Qwen3-30B-A3B",
    moe: "deepseek-ai"/"DeepSeek-V2-Lite",
    moe: "deepseek-ai"/"DeepSeek-V3",
    moe: "openai"/"gpt-oss-20b",
    encoder: "google-bert"/"bert-base-uncased",
    encoder: "FacebookAI"/"roberta-base",
    encoder: "distilbert"/"distilbert-base-uncased",
    encoder: "sentence-transformers"/"all-MiniLM-L6-v2",
    encoder: "answerdotai"/"ModernBERT-base",
    seq2seq: "google-t5"/"t5-small",
    seq2seq: "google-t5"/"t5-base",
    seq2seq: "google-t5"/"t5-large",
    seq2seq: "google"/"flan-t5-xl",
    seq2seq: "facebook"/"bart-base",
    // Added after the ground truth: today's most used releases, counted by the same oracle
    // (`presets/added.json`, sources in `presets/SOURCES.md`; `tests/added_presets.rs`).
    decoder: "meta-llama"/"Llama-3.1-70B",
    decoder: "meta-llama"/"Llama-3.3-70B-Instruct",
    moe: "openai"/"gpt-oss-120b",
    moe: "deepseek-ai"/"DeepSeek-R1",
    moe: "Qwen"/"Qwen3-235B-A22B",
    decoder: "Qwen"/"Qwen2.5-14B",
    decoder: "microsoft"/"phi-4",
    decoder: "mistralai"/"Mistral-Small-24B-Base-2501",
    decoder: "mistralai"/"Mistral-Nemo-Base-2407",
    decoder: "meta-llama"/"Llama-3.2-3B",
    decoder: "Qwen"/"Qwen3-14B",
    decoder: "google"/"gemma-3-27b-pt",
    decoder: "google"/"gemma-3-12b-pt",
    decoder: "mistralai"/"Mistral-7B-v0.3",
    decoder: "deepseek-ai"/"DeepSeek-R1-Distill-Qwen-1.5B",
    moe: "Qwen"/"Qwen3-Coder-480B-A35B-Instruct",
    moe: "meta-llama"/"Llama-4-Scout-17B-16E",
    moe: "meta-llama"/"Llama-4-Maverick-17B-128E-Instruct",
    decoder: "deepseek-ai"/"DeepSeek-R1-Distill-Qwen-7B",
};
