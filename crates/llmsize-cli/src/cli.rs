//! Command-line arguments (clap derive); validation into settings happens in `commands`.
//!
//! The doc comments of the arguments are the help text users read, written for a terminal,
//! not rustdoc: `doc_markdown` does not apply.
#![allow(clippy::doc_markdown, reason = "doc comments here are --help text")]

use clap::{Args, Parser, Subcommand};
// The option enums are the engine's own, deriving `clap::ValueEnum` (feature `clap`).
use llmsize_engine::{
    AttentionConvention, CachePolicy, HeadChoice, MlaCache, Runtime, Style, parse_count, parse_size,
};

const EXIT_CODES: &str = "\
Exit status: 0 success; 1 a well-formed \"no\" (e.g. does not fit); 2 any error \
(bad input, unsupported model, usage).";

/// Exact Transformer sizes: parameters by component, with the formulas that give them.
#[derive(Debug, Parser)]
#[command(name = "llmsize", version, after_help = EXIT_CODES, arg_required_else_help = true)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Count a model's parameters, by component, exactly
    ///
    /// MODEL is a built-in preset (`llmsize presets`), a `config.json`, or a directory that
    /// holds one. Several MODELs print a side-by-side comparison. Or describe a model with
    /// `--hidden`/`--layers` (and optionally `--vocab`, `--heads`, `--kv-heads`, `--ffn`,
    /// `--ctx`, `--style`).
    #[command(after_help = EXIT_CODES)]
    Params(ParamsArgs),
    /// Memory to serve a model: weights in a format, KV cache, activations, overhead; fits?
    ///
    /// Several MODELs print side by side; `--sweep` varies one option (length, batch, format,
    /// GPU). Exits 1 when a model does not fit the `--gpu` (0 when it fits or no GPU is named).
    #[command(after_help = EXIT_CODES)]
    Memory(Box<MemoryArgs>),
    /// FLOPs of a forward pass and of one generated token, by component; speed on a GPU
    ///
    /// With `--gpu`: time to first token, decode tokens/s by batch (the bytes a step really
    /// reads), and with `--price` the cost of a million tokens. Several MODELs print side by
    /// side; `--sweep` varies one option (length, batch, format, GPU).
    #[command(after_help = EXIT_CODES)]
    Flops(FlopsArgs),
    /// Memory and compute of one training step: model states, activations, per GPU; fits?
    ///
    /// Full fine-tuning, frozen parts, LoRA/DoRA/QLoRA; precision policies and optimizers;
    /// DDP, ZeRO/FSDP, tensor, pipeline, context and expert parallelism. Exits 1 when the
    /// step does not fit the `--gpu`.
    #[command(after_help = EXIT_CODES)]
    Train(Box<TrainArgs>),
    /// Count the tensors of weight files: SafeTensors (file, shards, directory), GGUF, or a
    /// Hub repo in the local cache; by component and stored type, buffers apart
    #[command(after_help = EXIT_CODES)]
    Inspect(WeightsArgs),
    /// Compare the config-based count with the tensors of the weight files, component by
    /// component; exit 0 when they agree, 1 when they do not
    #[command(after_help = EXIT_CODES)]
    Audit(WeightsArgs),
    /// Design a model: the shapes that meet a parameter, memory or compute target
    ///
    /// Searches every shape of the declared space (hidden sizes, layers, head widths, KV
    /// heads, the FFN rule) of a block style or of a real model resized (`--like`), each
    /// counted exactly, and prints the best with the `llmsize params` command that counts
    /// it. Exits 1 when no shape meets the target and constraints, naming what to relax.
    #[command(after_help = EXIT_CODES)]
    Design(Box<DesignCmdArgs>),
    /// List the built-in presets with their sizes
    #[command(after_help = EXIT_CODES)]
    Presets(PresetsListArgs),
    /// List the built-in GPUs with memory, bandwidth and peak FLOP/s
    #[command(after_help = EXIT_CODES)]
    Gpus(PresetsArgs),
    /// A local web calculator: pick or paste a model, see its tables and charts
    ///
    /// Serves one page and its JSON API (`/api/params`, `/api/memory`, … answer as `--json`)
    /// on 127.0.0.1 only; everything the page needs is in the binary.
    #[command(after_help = EXIT_CODES)]
    Serve(ServeArgs),
    /// Print a shell completion script: `llmsize completions bash > ~/.local/share/bash-completion/completions/llmsize`
    #[command(after_help = EXIT_CODES)]
    Completions(CompletionsArgs),
    /// Print the manual page (roff): `llmsize man > llmsize.1; man ./llmsize.1`
    #[command(after_help = EXIT_CODES)]
    Man,
}

/// `llmsize serve`.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// Port on 127.0.0.1 (0 picks a free one, printed on stderr)
    #[arg(long, default_value_t = 8421)]
    pub(crate) port: u16,
    /// Open the page in the default browser
    #[arg(long)]
    pub(crate) open: bool,
}

/// `llmsize completions`.
#[derive(Debug, Args)]
pub(crate) struct CompletionsArgs {
    /// The shell
    #[arg(value_enum)]
    pub(crate) shell: clap_complete::Shell,
}

impl Command {
    /// `--wide`, where the command prints tables.
    pub(crate) fn wide(&self) -> bool {
        match self {
            Command::Params(a) => a.out.wide,
            Command::Memory(a) => a.out.wide,
            Command::Flops(a) => a.out.wide,
            Command::Train(a) => a.out.wide,
            Command::Inspect(a) | Command::Audit(a) => a.out.wide,
            Command::Design(a) => a.out.wide,
            Command::Presets(a) => a.out.wide,
            Command::Gpus(a) => a.out.wide,
            Command::Serve(_) | Command::Completions(_) | Command::Man => false,
        }
    }
}

/// One model and the way to read it.
#[derive(Debug, Args)]
pub(crate) struct ModelArgs {
    /// A preset name, a `config.json` or a directory containing one
    #[arg(value_name = "MODEL")]
    pub(crate) model: String,

    #[command(flatten)]
    pub(crate) read: ReadArgs,
}

/// Several models side by side, read alike.
#[derive(Debug, Args)]
pub(crate) struct ModelsArgs {
    /// Preset names, `config.json` files or directories containing one; several print side by
    /// side
    #[arg(value_name = "MODEL", required = true)]
    pub(crate) models: Vec<String>,

    #[command(flatten)]
    pub(crate) read: ReadArgs,
}

/// How a model is read.
#[derive(Debug, Args)]
pub(crate) struct ReadArgs {
    /// Override a config field before counting (repeatable), e.g. `num_key_value_heads=8`
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub(crate) set: Vec<String>,

    /// Count a model type llmsize does not know as this known type (e.g. `llama`); every
    /// figure is then marked as an estimate. Without it, an unknown type is an error
    #[arg(long, value_name = "TYPE")]
    pub(crate) assume: Option<String>,

    /// A vision-language model's text tower alone (its vision and audio towers and projectors
    /// left out)
    #[arg(long)]
    pub(crate) text_only: bool,

    /// Images per sequence (vision-language models): their positions join each sequence's
    /// tokens in the KV cache, activations and FLOPs
    #[arg(long, default_value_t = 0)]
    pub(crate) images: u64,

    /// Positions one image takes, where the config does not fix it (it depends on the
    /// resolution for Qwen-VL and others)
    #[arg(long, value_parser = parse_size)]
    pub(crate) image_tokens: Option<u64>,

    #[command(flatten)]
    pub(crate) hub: HubArgs,
}

/// Where Hub repo ids are looked up.
#[derive(Debug, Args)]
pub(crate) struct HubArgs {
    /// Fetch a Hub repo that is not in the local cache: only config.json and the weight
    /// headers (HTTP range requests), from `HF_ENDPOINT` with `HF_TOKEN`
    #[arg(long)]
    pub(crate) online: bool,
    /// Branch, tag or commit of a Hub repo (cache or `--online`); in the cache, also any
    /// folder under `snapshots/` or a unique start of one
    #[arg(long, default_value = "main")]
    pub(crate) revision: String,
    /// One file of a Hub repo that holds several (every GGUF quant repo), as the repo lists
    /// it; the same as `org/name:FILE`. A split GGUF is named by any of its shards
    #[arg(long, value_name = "FILE")]
    pub(crate) file: Option<String>,
    /// `--online`: give up when connecting, or waiting for the server's next bytes, takes
    /// longer than this many seconds
    #[arg(long, value_name = "SECONDS", default_value = "30", value_parser = parse_timeout)]
    pub(crate) timeout: std::time::Duration,
    /// `--online`: give up on a file when all of its requests take longer than this many
    /// seconds (a server that drips bytes never trips `--timeout`)
    #[arg(long, value_name = "SECONDS", default_value = "120", value_parser = parse_timeout)]
    pub(crate) deadline: std::time::Duration,
    /// `--online`: weight-file headers fetched at once
    #[arg(long, value_name = "N", default_value = "8", value_parser = clap::value_parser!(u16).range(1..=64))]
    pub(crate) jobs: u16,
}

/// `--timeout 30`, `--deadline 2.5`: positive seconds, at most a day.
fn parse_timeout(s: &str) -> Result<std::time::Duration, String> {
    let secs: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number of seconds"))?;
    if !(secs > 0.0 && secs <= 86_400.0) {
        return Err(format!(
            "`{s}`: a time limit is more than 0 and at most 86400 seconds"
        ));
    }
    Ok(std::time::Duration::from_secs_f64(secs))
}

#[allow(
    clippy::struct_excessive_bools,
    reason = "each is a flag of the command"
)]
#[derive(Debug, Args)]
pub(crate) struct MemoryArgs {
    #[command(flatten)]
    pub(crate) model: ModelsArgs,
    /// Weight format: bf16, fp16, fp32, fp8, fp8-block, int8, int4, nf4, nf4-dq, gptq-4bit,
    /// awq-4bit, or a llama.cpp preset (q8_0, q6_k, q5_k_m, q5_k_s, q5_1, q5_0, q4_k_m,
    /// q4_k_s, q4_1, q4_0, q3_k_l, q3_k_m, q3_k_s, q2_k, iq4_xs, iq4_nl) [default: bf16;
    /// weight files are measured as stored]
    #[arg(long)]
    pub(crate) dtype: Option<String>,
    /// Tokens per sequence (prompt + generated), e.g. 4096 or 8k [default: 4096, capped at a
    /// learned position table]
    #[arg(long, value_parser = parse_size, allow_hyphen_values = true)]
    pub(crate) seq_len: Option<u64>,
    /// Sequences served at once
    #[arg(long, default_value = "1", value_parser = parse_size, allow_hyphen_values = true)]
    pub(crate) batch: u64,
    /// KV cache element type: bf16, fp16, fp32, fp8, q8_0, q4_0 [default: bf16; f16 under
    /// llama.cpp, whose --cache-type-k/v this is]
    #[arg(long)]
    pub(crate) kv_dtype: Option<String>,
    /// GPU and count, e.g. `h100`, `h100x8`, `rtx4090` (`llmsize gpus` lists them)
    #[arg(long)]
    pub(crate) gpu: Option<String>,
    /// A GPU's memory, e.g. `24GiB` or `48GB`: describes a GPU not in the table (with
    /// --gpu-bw, --gpu-tflops) or overrides --gpu's
    #[arg(long, value_name = "SIZE")]
    pub(crate) gpu_mem: Option<String>,
    /// A GPU's memory bandwidth, e.g. `936GB/s`
    #[arg(long, value_name = "RATE")]
    pub(crate) gpu_bw: Option<String>,
    /// A GPU's dense 16-bit peak in TFLOP/s, e.g. `71`
    #[arg(long, value_name = "TFLOPS")]
    pub(crate) gpu_tflops: Option<String>,
    /// Tensor-parallel degree [default: the most of the GPUs the attention heads divide by]
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) tp: Option<u64>,
    /// Pipeline stages: layers split over GPUs, embeddings on the first, head on the last
    /// [default: the GPUs tensor parallelism cannot use; every GPU under llama.cpp]
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) pp: Option<u64>,
    /// Serving runtime whose allocation to size [default: llama.cpp for a GGUF file, else
    /// transformers]
    #[arg(long, value_enum)]
    pub(crate) runtime: Option<Runtime>,
    /// llama.cpp --ctx-size: KV cells for all sequences [default: seq-len × batch]
    #[arg(long, value_parser = parse_size, help_heading = "llama.cpp (--runtime llama.cpp)")]
    pub(crate) ctx_size: Option<u64>,
    /// llama.cpp --n-gpu-layers: the last N layers on the GPUs, the rest (and their KV) in
    /// system RAM; layers + 1 also puts the output layer there [default: all]
    #[arg(
        long,
        visible_alias = "ngl",
        help_heading = "llama.cpp (--runtime llama.cpp)"
    )]
    pub(crate) n_gpu_layers: Option<u64>,
    /// llama.cpp --tensor-split: proportions of the layers per GPU, e.g. `3,1` [default: equal]
    #[arg(
        long,
        value_delimiter = ',',
        help_heading = "llama.cpp (--runtime llama.cpp)"
    )]
    pub(crate) tensor_split: Vec<f64>,
    /// llama.cpp --swa-full: sliding-window layers keep the whole context
    #[arg(long, help_heading = "llama.cpp (--runtime llama.cpp)")]
    pub(crate) swa_full: bool,
    /// vLLM --gpu-memory-utilization: the fraction of each GPU vLLM takes
    #[arg(long, default_value = "0.9", help_heading = "vLLM (--runtime vllm)")]
    pub(crate) gpu_memory_utilization: f64,
    /// vLLM --block-size: tokens per KV block
    #[arg(long, default_value = "16", value_parser = parse_size, help_heading = "vLLM (--runtime vllm)")]
    pub(crate) block_size: u64,
    /// vLLM --max-model-len: the context each request may reach [default: --seq-len]
    #[arg(long, value_parser = parse_size, help_heading = "vLLM (--runtime vllm)")]
    pub(crate) max_model_len: Option<u64>,
    /// vLLM --max-num-batched-tokens [default: 8192 on GPUs of 70 GiB or more other than the
    /// A100, else 2048, as `vllm serve`]
    #[arg(long, value_parser = parse_size, help_heading = "vLLM (--runtime vllm)")]
    pub(crate) max_num_batched_tokens: Option<u64>,
    /// DeepSeek MLA cache: the compressed latent, or expanded per-head K/V
    #[arg(long, value_enum, default_value_t = MlaCache::Latent)]
    pub(crate) mla_cache: MlaCache,
    /// KV cache layout: transformers' own cache (sliding layers keep `window − 1` tokens;
    /// Falcon's new layout caches every head) or a serving runtime's (whole windows, grouped
    /// KV heads)
    #[arg(long, value_enum, default_value_t = CachePolicy::Transformers)]
    pub(crate) cache: CachePolicy,
    /// Runtime overhead per GPU in MiB (CUDA context, allocator reserve)
    #[arg(long, default_value = "512")]
    pub(crate) overhead: u64,
    /// Also find the longest context that fits the GPU at this batch
    #[arg(long, requires = "gpu")]
    pub(crate) max_context: bool,
    /// A table over several values of one option: `seq=1k,8k,32k,128k`, `batch=1,8,32`,
    /// `dtype=bf16,q8_0,q4_k_m` or `gpu=rtx4090,a100,h100`
    #[arg(long, conflicts_with_all = ["max_context", "explain"])]
    pub(crate) sweep: Option<String>,
    #[command(flatten)]
    pub(crate) out: OutputArgs,
    /// Print every formula with its numbers
    #[arg(long, conflicts_with_all = ["json", "format"])]
    pub(crate) explain: bool,
}

#[derive(Debug, Args)]
pub(crate) struct FlopsArgs {
    #[command(flatten)]
    pub(crate) model: ModelsArgs,
    /// Tokens per sequence, e.g. 2048 or 8k; a decode step's context [default: 2048 (or the
    /// prompt), capped at a learned position table]
    #[arg(long, value_parser = parse_size, allow_hyphen_values = true)]
    pub(crate) seq_len: Option<u64>,
    /// Prompt tokens per sequence, for the time to first token [default: --seq-len]
    #[arg(long, value_parser = parse_size, allow_hyphen_values = true)]
    pub(crate) prompt: Option<u64>,
    /// Sequences
    #[arg(long, default_value = "1", value_parser = parse_size, allow_hyphen_values = true)]
    pub(crate) batch: u64,
    /// Count attention over the full s×s matrix or the causal triangle
    #[arg(long, value_enum, default_value_t = AttentionConvention::Causal)]
    pub(crate) attention: AttentionConvention,
    /// Estimate speed on this GPU (`h100`, `h100x8`, …)
    #[arg(long)]
    pub(crate) gpu: Option<String>,
    /// Weight format for the bytes a decode step reads (see `memory --dtype`) [default: a
    /// quantized release's format, else bf16; any value overrides the release's]
    #[arg(long)]
    pub(crate) dtype: Option<String>,
    /// KV cache element type for the bytes a decode step reads
    #[arg(long, default_value = "bf16")]
    pub(crate) kv_dtype: String,
    /// Model FLOPs utilisation assumed for compute-bound phases
    #[arg(long, default_value = "0.5")]
    pub(crate) mfu: f64,
    /// Fraction of peak memory bandwidth assumed for decode
    #[arg(long, default_value = "0.8")]
    pub(crate) bw_eff: f64,
    /// Price in dollars per GPU-hour, for the cost of a million tokens (with a GPU)
    #[arg(long, allow_hyphen_values = true)]
    pub(crate) price: Option<f64>,
    /// A table over several values of one option: `seq=1k,8k`, `batch=1,8,32`,
    /// `dtype=bf16,q4_k_m` (with --gpu) or `gpu=rtx4090,a100,h100`
    #[arg(long, conflicts_with = "explain")]
    pub(crate) sweep: Option<String>,
    #[command(flatten)]
    pub(crate) out: OutputArgs,
    /// Print every formula
    #[arg(long, conflicts_with_all = ["json", "format"])]
    pub(crate) explain: bool,
}

#[allow(
    clippy::struct_excessive_bools,
    reason = "each is a flag of the command"
)]
#[derive(Debug, Args)]
pub(crate) struct TrainArgs {
    #[command(flatten)]
    pub(crate) model: ModelArgs,
    /// Tokens per sequence, e.g. 2048 or 8k
    #[arg(long, default_value = "2048", value_parser = parse_size, allow_hyphen_values = true)]
    pub(crate) seq_len: u64,
    /// Sequences per micro-batch on each GPU
    #[arg(long, default_value = "1", value_parser = parse_size, allow_hyphen_values = true)]
    pub(crate) batch: u64,
    /// The parameters' dtype (`model.to(dtype)`): bf16, fp16, fp32
    #[arg(long, default_value = "bf16")]
    pub(crate) dtype: String,
    /// Precision policy: pure (everything in --dtype, torch's optimizers), mixed (fp32 master
    /// weights and states: DeepSpeed's 16 bytes/param), mixed-fp32-grads (Megatron's 18),
    /// autocast (fp32 parameters, 16-bit matmuls)
    #[arg(long, default_value = "pure")]
    pub(crate) precision: String,
    /// Optimizer: adamw, adamw-8bit, adafactor, sgd, lion, muon
    #[arg(long, default_value = "adamw")]
    pub(crate) optimizer: String,
    /// Attention implementation: sdpa (flash kernel) or eager
    #[arg(long, default_value = "sdpa")]
    pub(crate) attn_impl: String,
    /// Gradient checkpointing of every layer (non-reentrant)
    #[arg(long)]
    pub(crate) checkpointing: bool,
    /// Kernels: cuda (1-byte dropout masks, fp32 LayerNorm statistics) or cpu (as measured)
    #[arg(long, default_value = "cuda")]
    pub(crate) device: String,
    /// Count attention FLOPs over the full s×s matrix or the causal triangle
    #[arg(long, value_enum, default_value_t = AttentionConvention::Causal)]
    pub(crate) attention: AttentionConvention,
    /// Freeze parts under full fine-tuning: embeddings, attention, mlp, norms, head
    #[arg(long, value_delimiter = ',')]
    pub(crate) freeze: Vec<String>,
    /// LoRA rank (trains adapters on a frozen base)
    #[arg(long, value_parser = parse_size)]
    pub(crate) lora_rank: Option<u64>,
    /// LoRA targets: all-linear, default (peft's per-model list), or module names
    /// (q_proj,v_proj)
    #[arg(long, default_value = "all-linear")]
    pub(crate) lora_targets: String,
    /// LoRA dropout probability
    #[arg(long, default_value = "0")]
    pub(crate) lora_dropout: f64,
    /// DoRA: a trained magnitude vector per adapted module
    #[arg(long)]
    pub(crate) dora: bool,
    /// QLoRA: the frozen base in NF4 with double quantization
    #[arg(long)]
    pub(crate) qlora: bool,
    /// The GPU(s) to fit: `h100`, `h100x8`, `rtx4090`; the per-GPU peak is compared with
    /// one GPU's memory (exit 1 when it does not fit)
    #[arg(long)]
    pub(crate) gpu: Option<String>,
    /// Data-parallel replicas (default: the GPUs of `--gpu` over tp·pp·cp)
    #[arg(long, value_parser = parse_size)]
    pub(crate) dp: Option<u64>,
    /// Tensor parallelism (Megatron: heads and MLP width split)
    #[arg(long, default_value = "1", value_parser = parse_size)]
    pub(crate) tp: u64,
    /// Pipeline stages (1F1B)
    #[arg(long, default_value = "1", value_parser = parse_size)]
    pub(crate) pp: u64,
    /// Context parallelism (the sequence split over GPUs)
    #[arg(long, default_value = "1", value_parser = parse_size)]
    pub(crate) cp: u64,
    /// Expert parallelism (MoE experts split over the data-parallel GPUs)
    #[arg(long, default_value = "1", value_parser = parse_size)]
    pub(crate) ep: u64,
    /// ZeRO stage: 0 (DDP), 1 (optimizer states), 2 (+ gradients), 3 (+ parameters)
    #[arg(long, default_value = "0")]
    pub(crate) zero: u8,
    /// FSDP sharding: full (= ZeRO-3), grad-op (= ZeRO-2), hybrid (full shard within 8 GPUs)
    #[arg(long)]
    pub(crate) fsdp: Option<String>,
    /// FSDP hybrid shard: GPUs per sharding group
    #[arg(long, value_parser = parse_size)]
    pub(crate) shard_group: Option<u64>,
    /// Megatron sequence parallelism (with --tp)
    #[arg(long, visible_alias = "sequence-parallel")]
    pub(crate) sp: bool,
    /// Optimizer states and master weights in CPU memory (ZeRO-Offload)
    #[arg(long)]
    pub(crate) offload_optimizer: bool,
    /// Parameters in CPU memory (ZeRO-3 / FSDP)
    #[arg(long)]
    pub(crate) offload_params: bool,
    /// Micro-batches per optimizer step (gradient accumulation; pipeline micro-batches;
    /// default 1, or pp with --pp)
    #[arg(long, value_parser = parse_size)]
    pub(crate) micro_batches: Option<u64>,
    /// Virtual pipeline stages per GPU (interleaved 1F1B)
    #[arg(long, default_value = "1", value_parser = parse_size)]
    pub(crate) interleave: u64,
    /// Search the largest batch that fits the GPU
    #[arg(long)]
    pub(crate) max_batch: bool,
    /// Search the longest sequence that fits the GPU
    #[arg(long)]
    pub(crate) max_seq: bool,
    /// Tokens of the whole run (e.g. 2T, 300B), for wall time, GPU-hours and cost
    #[arg(long, value_parser = parse_count)]
    pub(crate) tokens: Option<u64>,
    /// Model FLOPs utilisation assumed for time
    #[arg(long, default_value = "0.4")]
    pub(crate) mfu: f64,
    /// Price in dollars per GPU-hour, for cost
    #[arg(long)]
    pub(crate) price: Option<f64>,
    #[command(flatten)]
    pub(crate) out: OutputArgs,
    /// Print every formula, and what the article's rules of thumb assume
    #[arg(long, conflicts_with_all = ["json", "format"])]
    pub(crate) explain: bool,
}

#[derive(Debug, Args)]
pub(crate) struct ParamsArgs {
    /// Preset names, `config.json` files or directories containing one
    #[arg(value_name = "MODEL")]
    pub(crate) models: Vec<String>,

    #[command(flatten)]
    pub(crate) out: OutputArgs,

    /// Print the derivation: every formula with its symbols and its numbers
    #[arg(long, conflicts_with_all = ["json", "format"])]
    pub(crate) explain: bool,

    /// Override a config field before counting (repeatable), e.g. `num_key_value_heads=8`;
    /// the value is read as JSON when it parses, else as a string
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub(crate) set: Vec<String>,

    /// Count a model type llmsize does not know as this known type (e.g. `llama`); every
    /// figure is then marked as an estimate. Without it, an unknown type is an error
    #[arg(long, value_name = "TYPE")]
    pub(crate) assume: Option<String>,

    /// A vision-language model's text tower alone (its vision and audio towers and projectors
    /// left out)
    #[arg(long)]
    pub(crate) text_only: bool,

    /// Which head to count for encoders: the class in `architectures` (`config`), the bare
    /// encoder with pooler as papers quote (`base`), or the language-model head (`lm`)
    #[arg(long, value_enum, default_value_t = HeadChoice::Config)]
    pub(crate) head: HeadChoice,

    #[command(flatten)]
    pub(crate) hub: HubArgs,

    #[command(flatten)]
    pub(crate) design: DesignArgs,
}

/// A model described on the command line.
#[derive(Debug, Args)]
#[command(next_help_heading = "Describe a model instead of naming one")]
pub(crate) struct DesignArgs {
    /// Hidden size d
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..), requires = "layers")]
    pub(crate) hidden: Option<u64>,
    /// Number of layers L
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..), requires = "hidden")]
    pub(crate) layers: Option<u64>,
    /// Vocabulary size V [default: 50257 gpt, 32000 llama]
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..), requires = "hidden")]
    pub(crate) vocab: Option<u64>,
    /// Attention heads [default: d/64 gpt, d/128 llama]
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..), requires = "hidden")]
    pub(crate) heads: Option<u64>,
    /// Key/value heads (GQA/MQA) [default: = heads]
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..), requires = "hidden")]
    pub(crate) kv_heads: Option<u64>,
    /// FFN inner size [default: 4d gpt; 8d/3 rounded up to 256 llama]
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..), requires = "hidden")]
    pub(crate) ffn: Option<u64>,
    /// Context length (learned position rows for gpt) [default: 2048 gpt, 4096 llama]
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..), requires = "hidden")]
    pub(crate) ctx: Option<u64>,
    /// Block style
    #[arg(long, value_enum, default_value_t = Style::Gpt)]
    pub(crate) style: Style,
}

/// `llmsize design`.
#[allow(
    clippy::struct_excessive_bools,
    reason = "each is a flag of the command"
)]
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("target").args(["params", "memory", "train_memory", "compute"])))]
pub(crate) struct DesignCmdArgs {
    /// Parameters to reach: `7B`, `8.03B`, `350M`, `1.5e9`; counts within half a unit of
    /// the last digit typed rank as equally close
    #[arg(long, value_name = "COUNT", value_parser = llmsize_engine::design_args::parse_params, help_heading = "Target")]
    pub(crate) params: Option<(u64, u64)>,
    /// With --params: the count without the input embeddings
    #[arg(
        long,
        requires = "params",
        conflicts_with = "active",
        help_heading = "Target"
    )]
    pub(crate) non_embedding: bool,
    /// With --params: the parameters one token uses (a mixture of experts)
    #[arg(long, requires = "params", help_heading = "Target")]
    pub(crate) active: bool,
    /// The largest model whose weights (in --dtype) and KV cache (--ctx tokens) fit this
    /// memory: `24GiB`, `80GB`
    #[arg(long, value_name = "SIZE", value_parser = llmsize_engine::design_args::parse_memory, help_heading = "Target")]
    pub(crate) memory: Option<u64>,
    /// The largest model whose one training step (`llmsize train`: the most loaded GPU) fits
    /// this memory per GPU: `80GiB`, `24GB`, or a GPU (`h100`)
    #[arg(long, value_name = "SIZE|GPU", value_parser = llmsize_engine::design_args::parse_train_memory, help_heading = "Target")]
    pub(crate) train_memory: Option<u64>,
    /// Training compute in FLOPs (`1e23`): compute-optimal N and D by three rules, then
    /// shapes for N by --fit
    #[arg(long, value_name = "FLOPS", value_parser = llmsize_engine::design_args::parse_flops, help_heading = "Target")]
    pub(crate) compute: Option<f64>,
    /// With --compute: the rule whose N the shapes aim at
    #[arg(long, value_enum, default_value_t = llmsize_engine::OptimalRule::Hoffmann, help_heading = "Target")]
    pub(crate) fit: llmsize_engine::OptimalRule,
    /// Accepted distance from --params (or --compute's N), e.g. `1%`, `0.5%`
    #[arg(long, default_value = "1%", value_parser = llmsize_engine::design_args::parse_percent, help_heading = "Target")]
    pub(crate) tolerance: f64,
    /// Weight format for --memory (see `memory --dtype`); the parameters' dtype for
    /// --train-memory (bf16, fp16, fp32)
    #[arg(long, default_value = "bf16", value_parser = llmsize_engine::design_args::parse_dtype, help_heading = "Target")]
    pub(crate) dtype: llmsize_core::formats::WeightFormat,
    /// KV cache element type for --memory
    #[arg(long, default_value = "bf16", value_parser = llmsize_engine::design_args::parse_kv_dtype, help_heading = "Target")]
    pub(crate) kv_dtype: llmsize_core::formats::KvDtype,
    /// Tokens of context: the KV cache of --memory, the FLOPs per token, the sequence of
    /// --train-memory [default: 4096; 2048 with --train-memory, as `llmsize train`]
    #[arg(long, visible_alias = "seq-len", value_parser = parse_size, help_heading = "Target")]
    pub(crate) ctx: Option<u64>,
    /// With --train-memory: sequences per micro-batch on each GPU
    #[arg(long, default_value = "1", conflicts_with_all = ["params", "memory", "compute"], value_parser = parse_size, help_heading = "Training (--train-memory, as `llmsize train`)")]
    pub(crate) batch: u64,
    /// With --train-memory: precision policy: pure, mixed (DeepSpeed's 16 bytes/param),
    /// mixed-fp32-grads, autocast
    #[arg(long, default_value = "pure", conflicts_with_all = ["params", "memory", "compute"], help_heading = "Training (--train-memory, as `llmsize train`)")]
    pub(crate) precision: String,
    /// With --train-memory: optimizer: adamw, adamw-8bit, adafactor, sgd, lion, muon
    #[arg(long, default_value = "adamw", conflicts_with_all = ["params", "memory", "compute"], help_heading = "Training (--train-memory, as `llmsize train`)")]
    pub(crate) optimizer: String,
    /// With --train-memory: gradient checkpointing of every layer
    #[arg(long, conflicts_with_all = ["params", "memory", "compute"], help_heading = "Training (--train-memory, as `llmsize train`)")]
    pub(crate) checkpointing: bool,
    /// With --train-memory: LoRA rank on all linear layers of a frozen base
    #[arg(long, conflicts_with_all = ["params", "memory", "compute"], value_parser = parse_size, help_heading = "Training (--train-memory, as `llmsize train`)")]
    pub(crate) lora_rank: Option<u64>,
    /// With --train-memory and --lora-rank: the frozen base in NF4 (QLoRA)
    #[arg(
        long,
        requires = "lora_rank",
        help_heading = "Training (--train-memory, as `llmsize train`)"
    )]
    pub(crate) qlora: bool,
    /// With --train-memory: ZeRO stage 0-3 over --dp replicas
    #[arg(long, default_value = "0", conflicts_with_all = ["params", "memory", "compute"], value_parser = clap::value_parser!(u8).range(0..=3), help_heading = "Training (--train-memory, as `llmsize train`)")]
    pub(crate) zero: u8,
    /// With --train-memory: data-parallel replicas (GPUs with --tp 1 --pp 1)
    #[arg(long, default_value = "1", conflicts_with_all = ["params", "memory", "compute"], value_parser = parse_size, help_heading = "Training (--train-memory, as `llmsize train`)")]
    pub(crate) dp: u64,

    /// Block style to size [default: llama]
    #[arg(long, value_enum, conflicts_with = "like", help_heading = "Structure")]
    pub(crate) style: Option<llmsize_engine::DesignStyle>,
    /// Resize a real model (a preset, a config.json): keep its norms, biases, tying, GQA
    /// ratio, FFN rule and vocabulary, change only the sizes
    #[arg(long, value_name = "MODEL", help_heading = "Structure")]
    pub(crate) like: Option<String>,
    /// Routed experts (MoE)
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=llmsize_engine::design_args::MAX_EXPERTS), help_heading = "Structure")]
    pub(crate) experts: Option<u64>,
    /// Experts per token (MoE)
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=llmsize_engine::design_args::MAX_EXPERTS), help_heading = "Structure")]
    pub(crate) top_k: Option<u64>,

    /// Vocabulary size [default: the model's or the style's]
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=llmsize_engine::design_args::MAX_VOCAB), help_heading = "Constraints")]
    pub(crate) vocab: Option<u64>,
    /// Head widths allowed, e.g. `64,128` [default: the model's; 128 llama/moe, 64 gpt]
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u64).range(1..=llmsize_engine::design_args::MAX_HEAD_DIM), help_heading = "Constraints")]
    pub(crate) head_dim: Vec<u64>,
    /// KV heads allowed, e.g. `8` or `4,8`
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u64).range(1..=llmsize_engine::design_args::MAX_KV_HEADS), conflicts_with = "gqa_group", help_heading = "Constraints")]
    pub(crate) kv_heads: Vec<u64>,
    /// Query heads per KV head allowed, e.g. `4` or `1,8` (1 = multi-head) [default: the
    /// model's ratio]
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u64).range(1..=llmsize_engine::design_args::MAX_KV_HEADS), help_heading = "Constraints")]
    pub(crate) gqa_group: Vec<u64>,
    /// FFN width rule: `4d`, `swiglu` (8d/3 rounded up to --multiple-of, LLaMA), `mult:X`
    /// (LLaMA-3's ffn_dim_multiplier X on 8d/3), `ratio:X` (X·d) [default: the model's]
    #[arg(long, value_name = "RULE", value_parser = llmsize_engine::design_args::parse_ffn_rule, help_heading = "Constraints")]
    pub(crate) ffn_rule: Option<llmsize_engine::design_args::FfnSpec>,
    /// The FFN rule's rounding [default: 256 swiglu and mult, 1 for 4d and ratio]
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=llmsize_engine::design_args::MAX_MULTIPLE), help_heading = "Constraints")]
    pub(crate) multiple_of: Option<u64>,
    /// Hidden size and FFN width multiples of this, e.g. 128 [default: 64]
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=llmsize_engine::design_args::MAX_MULTIPLE), help_heading = "Constraints")]
    pub(crate) align: Option<u64>,
    /// Tensor-parallel degree: heads, hidden size and FFN width divisible by it
    #[arg(long, default_value = "1", value_parser = clap::value_parser!(u64).range(1..=llmsize_engine::design_args::MAX_DEGREE), help_heading = "Constraints")]
    pub(crate) tp: u64,
    /// Pipeline stages: layers divisible by it
    #[arg(long, default_value = "1", value_parser = clap::value_parser!(u64).range(1..=llmsize_engine::design_args::MAX_DEGREE), help_heading = "Constraints")]
    pub(crate) pp: u64,
    /// Aspect ratio d/L range, `MIN..MAX` [default: 16..512]
    #[arg(long, value_name = "MIN..MAX", value_parser = llmsize_engine::design_args::parse_aspect, help_heading = "Constraints")]
    pub(crate) aspect: Option<(f64, f64)>,
    /// Aspect ratio d/L preferred at equal distance [default: the model's, 128 for a style]
    #[arg(long, value_parser = llmsize_engine::design_args::parse_positive, help_heading = "Constraints")]
    pub(crate) prefer_aspect: Option<f64>,
    /// Hidden sizes searched, `MIN..MAX` [default: 64..32768]
    #[arg(long, value_name = "MIN..MAX", value_parser = llmsize_engine::design_args::parse_range, help_heading = "Constraints")]
    pub(crate) hidden_range: Option<(u64, u64)>,
    /// Layer counts searched, `MIN..MAX` [default: 1..256]
    #[arg(long, value_name = "MIN..MAX", value_parser = llmsize_engine::design_args::parse_range, help_heading = "Constraints")]
    pub(crate) layers_range: Option<(u64, u64)>,

    /// Candidates to print
    #[arg(long, default_value = "10", value_parser = clap::value_parser!(u16).range(1..=i64::from(llmsize_engine::design_args::MAX_TOP)))]
    pub(crate) top: u16,
    #[command(flatten)]
    pub(crate) hub: HubArgs,
    #[command(flatten)]
    pub(crate) out: OutputArgs,
}

#[derive(Debug, Args)]
pub(crate) struct WeightsArgs {
    /// A `.safetensors`, `model.safetensors.index.json`, `.gguf`, a directory, or a Hub repo id
    #[arg(value_name = "MODEL")]
    pub(crate) model: String,
    #[command(flatten)]
    pub(crate) hub: HubArgs,
    #[command(flatten)]
    pub(crate) out: OutputArgs,
}

#[derive(Debug, Args)]
pub(crate) struct PresetsArgs {
    #[command(flatten)]
    pub(crate) out: OutputArgs,
}

/// `llmsize presets`.
#[derive(Debug, Args)]
pub(crate) struct PresetsListArgs {
    #[command(flatten)]
    pub(crate) out: OutputArgs,

    /// List the model types read exactly (any config of these types is counted), not the
    /// built-in models
    #[arg(long)]
    pub(crate) types: bool,
}

/// What a command prints. `--json` stays the public contract (`--format json` is the same);
/// table, Markdown and CSV render one document of the report; SVG and Mermaid draw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Format {
    /// A table for people, fitted to the terminal's width
    Table,
    /// The JSON contract, integers in plain units
    Json,
    /// Markdown: the table's columns, every table with a header
    Markdown,
    /// CSV: one row per line item, plain numbers
    Csv,
    /// An SVG chart of the report (params, memory, flops, train)
    Svg,
    /// A Mermaid flowchart of where the parameters go (params)
    Mermaid,
}

/// How the output is written: the format, and whether tables fit the terminal.
#[derive(Debug, Args)]
pub(crate) struct OutputArgs {
    /// Output format
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub(crate) format: Option<Format>,
    /// Print JSON: the same as `--format json`
    #[arg(long, conflicts_with = "format")]
    pub(crate) json: bool,
    /// One line per table row however wide (default: fit `COLUMNS` or the terminal; a pipe
    /// or file gets one line per row too)
    #[arg(long)]
    pub(crate) wide: bool,
}

impl OutputArgs {
    /// The format asked for: `--json`, `--format`, or the table.
    pub(crate) fn format(&self) -> Format {
        if self.json {
            Format::Json
        } else {
            self.format.unwrap_or(Format::Table)
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn verify_cli() {
        super::Cli::command().debug_assert();
    }
}
