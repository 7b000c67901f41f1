//! Typed requests: the options the command-line flags carry, as plain values. Strings stay
//! strings where the engine validates them with a message and a hint (`dtype`, `gpu`), so
//! every front end gets the same errors.

use llmsize_adapters::HeadChoice;
use llmsize_core::design::Style;
use llmsize_core::flops::AttentionConvention;
use llmsize_core::memory::{CachePolicy, MlaCache};
use llmsize_core::runtime::Runtime;

use crate::Error;

/// Where Hub repo ids are looked up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HubOptions {
    /// Fetch a repo that is not in the local cache from the Hub (config and headers only).
    pub online: bool,
    /// Branch, tag or commit.
    pub revision: String,
    /// One file of a repo that holds several (`--file`, or `org/name:FILE`): every GGUF
    /// quant repo holds a dozen. A split GGUF is named by any of its shards.
    pub file: Option<String>,
    /// `--online`: give up on a request when connecting, or waiting for its next bytes,
    /// takes longer than this.
    pub timeout: std::time::Duration,
    /// `--online`: give up on a file when all of its requests take longer than this (a
    /// server dripping bytes never trips `timeout`).
    pub deadline: std::time::Duration,
    /// `--online`: requests in flight at once (shard headers are fetched in parallel).
    pub jobs: usize,
}

impl HubOptions {
    /// The default `--timeout`: a Hub answer takes well under a second; 30 s tells a stalled
    /// server from a slow one without leaving the user waiting a minute in silence.
    pub const DEFAULT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);
    /// The default `--deadline` for one file: 120 s. The largest header read (a 100 MB
    /// SafeTensors header, the limit) arrives in that time at 7 Mbit/s, a real one (a few MB
    /// at most: Llama-3's GGUF tokenizer is 8.5 MB) at under 1 Mbit/s; a server slower than
    /// that is stalled in all but name, and four `--timeout`s is long enough to wait.
    pub const DEFAULT_DEADLINE: std::time::Duration = std::time::Duration::from_mins(2);
    /// The default `--jobs`: `huggingface_hub`'s `snapshot_download` fetches 8 files at once
    /// (`max_workers=8`); the Hub is used to that, and 8 hides most of a round trip's latency.
    pub const DEFAULT_JOBS: usize = 8;
}

impl Default for HubOptions {
    fn default() -> Self {
        HubOptions {
            online: false,
            revision: "main".into(),
            file: None,
            timeout: Self::DEFAULT_TIMEOUT,
            deadline: Self::DEFAULT_DEADLINE,
            jobs: Self::DEFAULT_JOBS,
        }
    }
}

/// A model described by its sizes instead of a config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Design {
    /// The core's description (hidden, layers and the optional sizes).
    pub sizes: llmsize_core::design::Design,
    /// The block style.
    pub style: Style,
}

/// `params`: one or several models, or a design.
#[derive(Debug, Clone, Default)]
pub struct ParamsRequest {
    /// Preset names, `config.json` files, directories, GGUF files or Hub repo ids.
    pub models: Vec<String>,
    /// `KEY=VALUE` overrides of config fields, applied to every model.
    pub overrides: Vec<String>,
    /// `--assume TYPE`: count a model type llmsize does not know as this one, marked as an
    /// estimate everywhere.
    pub assume: Option<String>,
    /// `--text-only`: a vision-language model's text tower alone.
    pub text_only: bool,
    /// Which head to count for encoders.
    pub head: HeadChoice,
    /// Where Hub repo ids are looked up.
    pub hub: HubOptions,
    /// A model described by flags, counted after the named ones.
    pub design: Option<Design>,
}

impl ParamsRequest {
    /// A request for these models with default options.
    pub fn models<S: Into<String>>(models: impl IntoIterator<Item = S>) -> Self {
        ParamsRequest {
            models: models.into_iter().map(Into::into).collect(),
            ..ParamsRequest::default()
        }
    }
}

/// What a sweep varies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SweepAxis {
    /// Tokens per sequence.
    SeqLen,
    /// Sequences.
    Batch,
    /// Weight format (`--dtype`).
    Dtype,
    /// GPU and count (`--gpu`).
    Gpu,
}

impl SweepAxis {
    /// The name in tables and JSON (`seq_len`, `batch`, `dtype`, `gpu`).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            SweepAxis::SeqLen => "seq_len",
            SweepAxis::Batch => "batch",
            SweepAxis::Dtype => "dtype",
            SweepAxis::Gpu => "gpu",
        }
    }
}

/// One value of a sweep: the option it sets, with a value of that option's type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Swept {
    /// `--seq-len`.
    SeqLen(u64),
    /// `--batch`.
    Batch(u64),
    /// `--dtype`, validated where the format is read (with the list of valid names).
    Dtype(String),
    /// `--gpu`, validated where the GPU is looked up.
    Gpu(String),
}

impl Swept {
    /// The option it sets.
    #[must_use]
    pub fn axis(&self) -> SweepAxis {
        match self {
            Swept::SeqLen(_) => SweepAxis::SeqLen,
            Swept::Batch(_) => SweepAxis::Batch,
            Swept::Dtype(_) => SweepAxis::Dtype,
            Swept::Gpu(_) => SweepAxis::Gpu,
        }
    }

    /// The value as a table writes it (`8,192`, `q4_k_m`, `h100x2`).
    #[must_use]
    pub fn label(&self) -> String {
        match self {
            Swept::SeqLen(n) | Swept::Batch(n) => llmsize_core::units::thousands(*n),
            Swept::Dtype(s) | Swept::Gpu(s) => s.clone(),
        }
    }
}

/// A sweep: one option, several values of its type, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sweep {
    /// `seq=1k,8k,128k`.
    SeqLen(Vec<u64>),
    /// `batch=1,8,32`.
    Batch(Vec<u64>),
    /// `dtype=bf16,q8_0,q4_k_m`.
    Dtype(Vec<String>),
    /// `gpu=rtx4090,a100,h100`.
    Gpu(Vec<String>),
}

impl Sweep {
    /// `seq=1k,8k`, `batch=1,8`, `dtype=bf16,q4_k_m` or `gpu=rtx4090,h100x2`.
    pub fn parse(s: &str) -> Result<Sweep, Error> {
        let bad = || {
            Error::bad_input(
                format!("`--sweep {s}` is not understood"),
                "use `seq=1k,8k,32k,128k`, `batch=1,8,32`, `dtype=bf16,q8_0,q4_k_m` or `gpu=rtx4090,a100,h100`",
            )
        };
        let (axis, values) = s.split_once('=').ok_or_else(bad)?;
        // Counted before anything is parsed or allocated: the text may be megabytes long.
        let points = values.split(',').count();
        if points > llmsize_core::limits::MAX_SWEEP_POINTS {
            return Err(crate::bounds::too_many_points(points));
        }
        let sizes = || {
            values
                .split(',')
                .map(|v| {
                    parse_size(v).map_err(|e| {
                        Error::bad_input(
                            format!("`--sweep {s}`: {e}"),
                            "values are positive sizes such as 8k",
                        )
                    })
                })
                .collect::<Result<Vec<u64>, Error>>()
        };
        let names = || -> Result<Vec<String>, Error> {
            let list: Vec<String> = values.split(',').map(|v| v.trim().to_owned()).collect();
            if list.iter().any(String::is_empty) {
                return Err(Error::bad_input(
                    format!("`--sweep {s}`: an empty value"),
                    "separate the values with commas, e.g. `dtype=bf16,q4_k_m`",
                ));
            }
            Ok(list)
        };
        Ok(match axis.trim() {
            "seq" | "seq-len" | "seq_len" | "context" => Sweep::SeqLen(sizes()?),
            "batch" => Sweep::Batch(sizes()?),
            "dtype" => Sweep::Dtype(names()?),
            "gpu" => Sweep::Gpu(names()?),
            _ => return Err(bad()),
        })
    }

    /// The option swept.
    #[must_use]
    pub fn axis(&self) -> SweepAxis {
        match self {
            Sweep::SeqLen(_) => SweepAxis::SeqLen,
            Sweep::Batch(_) => SweepAxis::Batch,
            Sweep::Dtype(_) => SweepAxis::Dtype,
            Sweep::Gpu(_) => SweepAxis::Gpu,
        }
    }

    /// How many values it holds.
    #[must_use]
    pub fn points_len(&self) -> usize {
        match self {
            Sweep::SeqLen(v) | Sweep::Batch(v) => v.len(),
            Sweep::Dtype(v) | Sweep::Gpu(v) => v.len(),
        }
    }

    /// Its values, one [`Swept`] each, in order.
    #[must_use]
    pub fn points(&self) -> Vec<Swept> {
        match self {
            Sweep::SeqLen(v) => v.iter().copied().map(Swept::SeqLen).collect(),
            Sweep::Batch(v) => v.iter().copied().map(Swept::Batch).collect(),
            Sweep::Dtype(v) => v.iter().cloned().map(Swept::Dtype).collect(),
            Sweep::Gpu(v) => v.iter().cloned().map(Swept::Gpu).collect(),
        }
    }
}

/// Sizes with `k`/`m` suffixes (1k = 1024 tokens, as context lengths are quoted).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim().to_ascii_lowercase();
    let (num, mult) = if let Some(n) = t.strip_suffix('k') {
        (n, 1024u64)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 1024 * 1024)
    } else {
        (t.as_str(), 1)
    };
    let n: u64 = num
        .parse()
        .map_err(|_| format!("`{s}` is not a positive whole number (e.g. 4096, 8k, 128k)"))?;
    let v = n
        .checked_mul(mult)
        .ok_or_else(|| format!("`{s}` is too large"))?;
    if v == 0 {
        return Err(format!("`{s}`: must be at least 1"));
    }
    Ok(v)
}

/// Token counts of a training run with decimal suffixes, as they are quoted: `2T`, `1.4T`,
/// `300B`, `15M`, `20k` (powers of 1,000), or a plain number.
pub fn parse_count(s: &str) -> Result<u64, String> {
    let t = s.trim().to_ascii_lowercase().replace('_', "");
    let (num, mult) = match t.char_indices().last() {
        Some((i, 'k')) => (&t[..i], 1e3),
        Some((i, 'm')) => (&t[..i], 1e6),
        Some((i, 'b' | 'g')) => (&t[..i], 1e9),
        Some((i, 't')) => (&t[..i], 1e12),
        _ => (t.as_str(), 1.0),
    };
    let bad = || format!("`{s}` is not a token count (e.g. 2T, 1.4T, 300B, 15000000)");
    let x: f64 = num.parse().map_err(|_| bad())?;
    let v = x * mult;
    if !(1.0..1.8e19).contains(&v) {
        return Err(bad());
    }
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "checked range"
    )]
    Ok(v.round() as u64)
}

/// `--seq-len` of `memory` when none is given (capped at a learned position table).
pub const MEMORY_SEQ_LEN: u64 = 4096;
/// `--seq-len` of `flops` when none is given (capped at a learned position table).
pub const FLOPS_SEQ_LEN: u64 = 2048;

/// Runtime overhead per GPU of `memory` (and of the fit check of `flops --gpu`), MiB.
pub const OVERHEAD_MIB: u64 = 512;

/// `memory`: models under one set of serving options (or a sweep over one of them).
#[derive(Debug, Clone)]
pub struct MemoryRequest {
    /// The models, side by side.
    pub models: Vec<String>,
    /// `KEY=VALUE` overrides of config fields.
    pub overrides: Vec<String>,
    /// `--assume TYPE`: count a model type llmsize does not know as this one, marked as an
    /// estimate everywhere.
    pub assume: Option<String>,
    /// `--text-only`: a vision-language model's text tower alone.
    pub text_only: bool,
    /// `--images N`: images per sequence, whose positions join each sequence's tokens.
    pub images: u64,
    /// `--image-tokens T`: positions per image, where the config does not fix it.
    pub image_tokens: Option<u64>,
    /// Where Hub repo ids are looked up.
    pub hub: HubOptions,
    /// Weight format [default: bf16; weight files are measured as stored].
    pub dtype: Option<String>,
    /// Tokens per sequence [default: [`MEMORY_SEQ_LEN`], capped at a learned position
    /// table, with a note]; more than the table is an error.
    pub seq_len: Option<u64>,
    /// Sequences served at once.
    pub batch: u64,
    /// KV cache element type [default: bf16; f16 under llama.cpp, its default].
    pub kv_dtype: Option<String>,
    /// GPU and count, e.g. `h100x8`.
    pub gpu: Option<String>,
    /// A GPU described by flags, alone or overriding `gpu`'s figures.
    pub custom_gpu: CustomGpuFlags,
    /// Tensor-parallel degree [default: the GPU count when the heads divide by it].
    pub tp: Option<u64>,
    /// Pipeline (layer-split) stages [default: 1, or what tensor parallelism cannot use].
    pub pp: Option<u64>,
    /// A serving runtime's view and its settings.
    pub runtime: RuntimeFlags,
    /// DeepSeek MLA cache layout.
    pub mla_cache: MlaCache,
    /// Whose KV cache layout.
    pub cache: CachePolicy,
    /// Runtime overhead per GPU, MiB.
    pub overhead_mib: u64,
    /// Also find the longest context that fits the GPU.
    pub max_context: bool,
    /// A sweep over lengths, batches, formats or GPUs instead of one point.
    pub sweep: Option<Sweep>,
}

impl MemoryRequest {
    /// A request for `model` with the command line's defaults.
    pub fn new(model: impl Into<String>) -> Self {
        MemoryRequest {
            models: vec![model.into()],
            overrides: Vec::new(),
            assume: None,
            text_only: false,
            images: 0,
            image_tokens: None,
            hub: HubOptions::default(),
            dtype: None,
            seq_len: None,
            batch: 1,
            kv_dtype: None,
            gpu: None,
            custom_gpu: CustomGpuFlags::default(),
            tp: None,
            pp: None,
            runtime: RuntimeFlags::default(),
            mla_cache: MlaCache::Latent,
            cache: CachePolicy::Transformers,
            overhead_mib: OVERHEAD_MIB,
            max_context: false,
            sweep: None,
        }
    }
}

/// `--gpu-mem 24GiB --gpu-bw 936GB/s --gpu-tflops 71`: a GPU by its figures, as typed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CustomGpuFlags {
    /// Memory (`24GiB`, `24GB`).
    pub memory: Option<String>,
    /// Bandwidth (`936GB/s`).
    pub bandwidth: Option<String>,
    /// Dense 16-bit peak in TFLOP/s (`71`).
    pub tflops: Option<String>,
}

/// A serving runtime and its settings, each named after the runtime's own flag.
#[derive(Debug, Clone, PartialEq)]
pub struct RuntimeFlags {
    /// `--runtime` [default: llama.cpp for a GGUF file, else transformers].
    pub runtime: Option<Runtime>,
    /// llama.cpp `--ctx-size` [default: `seq_len · batch`].
    pub ctx_size: Option<u64>,
    /// llama.cpp `--n-gpu-layers` [default: every layer and the output].
    pub n_gpu_layers: Option<u64>,
    /// llama.cpp `--tensor-split` proportions [default: equal].
    pub tensor_split: Vec<f64>,
    /// llama.cpp `--swa-full`.
    pub swa_full: bool,
    /// vLLM `--gpu-memory-utilization`.
    pub gpu_memory_utilization: f64,
    /// vLLM `--block-size`.
    pub block_size: u64,
    /// vLLM `--max-model-len` [default: `seq_len`].
    pub max_model_len: Option<u64>,
    /// vLLM `--max-num-batched-tokens` [default: vLLM's for the GPU].
    pub max_num_batched_tokens: Option<u64>,
}

impl Default for RuntimeFlags {
    fn default() -> Self {
        RuntimeFlags {
            runtime: None,
            ctx_size: None,
            n_gpu_layers: None,
            tensor_split: Vec::new(),
            swa_full: false,
            gpu_memory_utilization: 0.9,
            block_size: 16,
            max_model_len: None,
            max_num_batched_tokens: None,
        }
    }
}

/// `flops`: models' FLOPs, and their speed on a GPU.
#[derive(Debug, Clone)]
pub struct FlopsRequest {
    /// The models, side by side.
    pub models: Vec<String>,
    /// `KEY=VALUE` overrides of config fields.
    pub overrides: Vec<String>,
    /// `--assume TYPE`: count a model type llmsize does not know as this one, marked as an
    /// estimate everywhere.
    pub assume: Option<String>,
    /// `--text-only`: a vision-language model's text tower alone.
    pub text_only: bool,
    /// `--images N`: images per sequence, whose positions join each sequence's tokens.
    pub images: u64,
    /// `--image-tokens T`: positions per image, where the config does not fix it.
    pub image_tokens: Option<u64>,
    /// Where Hub repo ids are looked up.
    pub hub: HubOptions,
    /// Tokens per sequence [default: [`FLOPS_SEQ_LEN`], capped at a learned position table,
    /// with a note]; the context of a decode step.
    pub seq_len: Option<u64>,
    /// Prompt tokens per sequence, for the time to first token [default: `seq_len`].
    pub prompt: Option<u64>,
    /// Sequences.
    pub batch: u64,
    /// Attention over the causal triangle or the full matrix.
    pub attention: AttentionConvention,
    /// Estimate speed on this GPU.
    pub gpu: Option<String>,
    /// Weight format for the bytes a decode step reads [default: a quantized release's
    /// format as its config states it, else bf16]. Any value given, bf16 included,
    /// overrides the release's format (with a note).
    pub dtype: Option<String>,
    /// KV cache element type for the bytes a decode step reads.
    pub kv_dtype: String,
    /// Model FLOPs utilisation, in (0, 1].
    pub mfu: f64,
    /// Fraction of peak bandwidth, in (0, 1].
    pub bw_eff: f64,
    /// Dollars per GPU-hour, for the cost of a million tokens.
    pub price: Option<f64>,
    /// A sweep over lengths, batches, formats or GPUs instead of one point.
    pub sweep: Option<Sweep>,
}

impl FlopsRequest {
    /// A request for `model` with the command line's defaults.
    pub fn new(model: impl Into<String>) -> Self {
        FlopsRequest {
            models: vec![model.into()],
            overrides: Vec::new(),
            assume: None,
            text_only: false,
            images: 0,
            image_tokens: None,
            hub: HubOptions::default(),
            seq_len: None,
            prompt: None,
            batch: 1,
            attention: AttentionConvention::Causal,
            gpu: None,
            dtype: None,
            kv_dtype: "bf16".into(),
            mfu: 0.5,
            bw_eff: 0.8,
            price: None,
            sweep: None,
        }
    }
}

/// `inspect`: weight files as a count.
#[derive(Debug, Clone, Default)]
pub struct InspectRequest {
    /// Weight files, a directory or a Hub repo id.
    pub model: String,
    /// Where Hub repo ids are looked up.
    pub hub: HubOptions,
}

/// `audit`: the config against the weight files.
#[derive(Debug, Clone, Default)]
pub struct AuditRequest {
    /// Weight files with their config, a directory or a Hub repo id.
    pub model: String,
    /// Where Hub repo ids are looked up.
    pub hub: HubOptions,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("8k"), Ok(8192));
        assert_eq!(parse_size("1M"), Ok(1 << 20));
        assert!(parse_size("0").is_err());
        assert!(parse_size("-5").is_err());
        assert!(parse_size("99999999999999999999k").is_err());
    }

    #[test]
    fn sweeps() {
        assert_eq!(
            Sweep::parse("seq=1k,8k").unwrap(),
            Sweep::SeqLen(vec![1024, 8192])
        );
        let gpus = Sweep::parse("gpu=rtx4090, h100x2").unwrap();
        assert_eq!(gpus.axis(), SweepAxis::Gpu);
        assert_eq!(
            gpus.points(),
            vec![Swept::Gpu("rtx4090".into()), Swept::Gpu("h100x2".into())]
        );
        assert_eq!(
            Sweep::parse("dtype=bf16,q4_k_m").unwrap().points()[1].label(),
            "q4_k_m"
        );
        assert_eq!(Swept::Batch(1024).label(), "1,024");
        assert!(Sweep::parse("dtype=bf16,,q8_0").is_err());
        assert!(Sweep::parse("batch=1,x").is_err());
        let e = Sweep::parse("heads=1").unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::BadInput);
        assert!(e.hint().unwrap().contains("seq=1k"));
    }
}
