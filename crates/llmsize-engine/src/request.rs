//! Typed requests: the options the command-line flags carry, as plain values. Strings stay
//! strings where the engine validates them with a message and a hint (`dtype`, `gpu`), so
//! every front end gets the same errors.

use llmsize_adapters::HeadChoice;
use llmsize_core::design::Style;
use llmsize_core::flops::AttentionConvention;
use llmsize_core::memory::{CachePolicy, MlaCache};

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
    /// `--online`: requests in flight at once (shard headers are fetched in parallel).
    pub jobs: usize,
}

impl HubOptions {
    /// The default `--timeout`: a Hub answer takes well under a second; 30 s tells a stalled
    /// server from a slow one without leaving the user waiting a minute in silence.
    pub const DEFAULT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);
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

/// What a memory sweep varies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SweepAxis {
    /// Tokens per sequence.
    SeqLen,
    /// Sequences.
    Batch,
}

impl SweepAxis {
    /// The name in tables and JSON (`seq_len`, `batch`).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            SweepAxis::SeqLen => "seq_len",
            SweepAxis::Batch => "batch",
        }
    }
}

/// A memory sweep: one axis, several values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sweep {
    /// What varies.
    pub axis: SweepAxis,
    /// Its values, in order.
    pub values: Vec<u64>,
}

impl Sweep {
    /// `seq=1k,8k` or `batch=1,8`.
    pub fn parse(s: &str) -> Result<Sweep, Error> {
        let bad = || {
            Error::bad_input(
                format!("`--sweep {s}` is not understood"),
                "use `seq=1k,8k,32k,128k` or `batch=1,8,32`",
            )
        };
        let (axis, values) = s.split_once('=').ok_or_else(bad)?;
        let axis = match axis.trim() {
            "seq" | "seq-len" | "seq_len" | "context" => SweepAxis::SeqLen,
            "batch" => SweepAxis::Batch,
            _ => return Err(bad()),
        };
        let values = values
            .split(',')
            .map(|v| {
                parse_size(v).map_err(|e| {
                    Error::bad_input(
                        format!("`--sweep {s}`: {e}"),
                        "values are positive sizes such as 8k",
                    )
                })
            })
            .collect::<Result<Vec<u64>, Error>>()?;
        Ok(Sweep { axis, values })
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

/// `memory`: one model under one set of serving options (or a sweep over one of them).
#[derive(Debug, Clone)]
pub struct MemoryRequest {
    /// The model.
    pub model: String,
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
    /// Tokens per sequence.
    pub seq_len: u64,
    /// Sequences served at once.
    pub batch: u64,
    /// KV cache element type.
    pub kv_dtype: String,
    /// GPU and count, e.g. `h100x8`.
    pub gpu: Option<String>,
    /// Tensor-parallel degree [default: the GPU count].
    pub tp: Option<u64>,
    /// DeepSeek MLA cache layout.
    pub mla_cache: MlaCache,
    /// Whose KV cache layout.
    pub cache: CachePolicy,
    /// Runtime overhead per GPU, MiB.
    pub overhead_mib: u64,
    /// Also find the longest context that fits the GPU.
    pub max_context: bool,
    /// A sweep over lengths or batches instead of one point.
    pub sweep: Option<Sweep>,
}

impl MemoryRequest {
    /// A request for `model` with the command line's defaults.
    pub fn new(model: impl Into<String>) -> Self {
        MemoryRequest {
            model: model.into(),
            overrides: Vec::new(),
            assume: None,
            text_only: false,
            images: 0,
            image_tokens: None,
            hub: HubOptions::default(),
            dtype: None,
            seq_len: 4096,
            batch: 1,
            kv_dtype: "bf16".into(),
            gpu: None,
            tp: None,
            mla_cache: MlaCache::Latent,
            cache: CachePolicy::Transformers,
            overhead_mib: 512,
            max_context: false,
            sweep: None,
        }
    }
}

/// `flops`: one model's FLOPs, and its speed on a GPU.
#[derive(Debug, Clone)]
pub struct FlopsRequest {
    /// The model.
    pub model: String,
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
    /// Tokens per sequence.
    pub seq_len: u64,
    /// Sequences.
    pub batch: u64,
    /// Attention over the causal triangle or the full matrix.
    pub attention: AttentionConvention,
    /// Estimate speed on this GPU.
    pub gpu: Option<String>,
    /// Weight format for the bytes a decode step reads.
    pub dtype: String,
    /// KV cache element type for the bytes a decode step reads.
    pub kv_dtype: String,
    /// Model FLOPs utilisation, in (0, 1].
    pub mfu: f64,
    /// Fraction of peak bandwidth, in (0, 1].
    pub bw_eff: f64,
}

impl FlopsRequest {
    /// A request for `model` with the command line's defaults.
    pub fn new(model: impl Into<String>) -> Self {
        FlopsRequest {
            model: model.into(),
            overrides: Vec::new(),
            assume: None,
            text_only: false,
            images: 0,
            image_tokens: None,
            hub: HubOptions::default(),
            seq_len: 2048,
            batch: 1,
            attention: AttentionConvention::Causal,
            gpu: None,
            dtype: "bf16".into(),
            kv_dtype: "bf16".into(),
            mfu: 0.5,
            bw_eff: 0.8,
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
            Sweep {
                axis: SweepAxis::SeqLen,
                values: vec![1024, 8192]
            }
        );
        let e = Sweep::parse("heads=1").unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::BadInput);
        assert!(e.hint().unwrap().contains("seq=1k"));
    }
}
