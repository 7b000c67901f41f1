//! The commands: a request in, a typed outcome out (with its warnings), nothing printed.

use llmsize_adapters::checkpoint::{self, Audit, Checkpoint, Summary};
use llmsize_adapters::presets::PRESETS;
use llmsize_adapters::{ReadOptions, read_config};
use llmsize_core::design::design_spec;
use llmsize_core::flops::{FlopsReport, flops as count_flops};
use llmsize_core::formats::{KvDtype, WeightFormat};
use llmsize_core::gpu::{self, GPUS, Gpu};
use llmsize_core::memory::{
    CachePolicy, MaxContext, MemoryOptions, MemoryReport, MlaCache, StorageLine,
};
use llmsize_core::runtime::{
    PlacedWeights, Runtime, ServingOptions, max_context as runtime_max_context, placed_from_files,
    serve,
};
use llmsize_core::spec::Attention;
use llmsize_core::speed::{SpeedOptions, SpeedReport, speed};
use llmsize_core::units::thousands;
use llmsize_core::{ModelSpec, ParamsReport, count};

use crate::Error;
use crate::hub::HubEnv;
use crate::request::{
    AuditRequest, CustomGpuFlags, FLOPS_SEQ_LEN, FlopsRequest, HubOptions, InspectRequest,
    MEMORY_SEQ_LEN, MemoryRequest, OVERHEAD_MIB, ParamsRequest, Sweep, SweepAxis, Swept,
};
use crate::resolve::{Lookup, Model, Want, resolve_model};
use crate::wire::{
    self, AuditJson, Envelope, FlopsJson, FlopsWire, GpuJson, InspectJson, MemoryJson, MemoryWire,
    ParamsJson, ParamsWire, PresetJson,
};

use llmsize_core::limits::MAX_CONTEXT_SEARCH;

fn lookup(hub: &HubOptions, weights: Want) -> Lookup {
    Lookup {
        hub: hub.clone(),
        weights,
    }
}

/// Resolve one MODEL and read its spec; its warnings, prefixed with its name, go to `warnings`.
pub(crate) fn read_model(
    model: &str,
    options: &ReadOptions,
    hub: &HubOptions,
    want: Want,
    env: &HubEnv,
    warnings: &mut Vec<String>,
) -> Result<(ModelSpec, Model), Error> {
    let model = resolve_model(model, &lookup(hub, want), env)?;
    let spec = model.spec(options)?;
    warnings.extend(spec.warnings.iter().map(|w| format!("{}: {w}", spec.name)));
    Ok((spec, model))
}

// ---------------------------------------------------------------------------------------
// params

/// The counts of `params`.
#[derive(Debug, Clone)]
pub struct ParamsOutcome {
    /// One report per model, in the order asked (a design last).
    pub reports: Vec<ParamsReport>,
    /// Warnings, each prefixed with its model's name.
    pub warnings: Vec<String>,
}

impl ParamsOutcome {
    /// The wire form: one object, or an array for several models.
    #[must_use]
    pub fn wire(&self) -> ParamsWire {
        let mut list: Vec<_> = self
            .reports
            .iter()
            .map(|r| Envelope::new(ParamsJson::from(r)))
            .collect();
        if list.len() == 1 {
            ParamsWire::One(Box::new(list.remove(0)))
        } else {
            ParamsWire::Many(list)
        }
    }

    /// `--json`.
    pub fn to_json(&self) -> Result<String, Error> {
        wire::to_pretty(&self.wire())
    }
}

pub(crate) fn params(req: &ParamsRequest, env: &HubEnv) -> Result<ParamsOutcome, Error> {
    let options = ReadOptions {
        overrides: req.overrides.clone(),
        head: req.head,
        assume: req.assume.clone(),
        text_only: req.text_only,
    };
    let lookup = lookup(&req.hub, Want::No);
    let mut specs = Vec::new();
    for arg in &req.models {
        let model = resolve_model(arg, &lookup, env)?;
        let source = model
            .config
            .as_ref()
            .map_or_else(|| format!("{arg} (GGUF metadata)"), |c| c.source.clone());
        specs.push((model.spec(&options)?, source));
    }
    if let Some(design) = &req.design {
        if !req.overrides.is_empty() {
            return Err(Error::BadInput {
                message: "`--set` changes config fields; with `--hidden`/`--layers` give the sizes as flags".into(),
                hint: None,
            });
        }
        let spec = design_spec(&design.sizes, design.style).map_err(Error::Design)?;
        specs.push((spec, "command-line flags".into()));
    }
    if specs.is_empty() {
        return Err(Error::bad_input(
            "no MODEL given",
            "name a preset (`llmsize params llama-2-7b`), a config.json, or describe one with `--hidden 4096 --layers 32`",
        ));
    }
    let mut reports = Vec::with_capacity(specs.len());
    let mut warnings = Vec::new();
    for (spec, source) in &specs {
        let report = ParamsReport::new(spec, source.clone()).map_err(Error::spec(&spec.name))?;
        warnings.extend(
            report
                .warnings
                .iter()
                .map(|w| format!("{}: {w}", report.name)),
        );
        reports.push(report);
    }
    Ok(ParamsOutcome { reports, warnings })
}

// ---------------------------------------------------------------------------------------
// memory

/// One point or a sweep.
#[derive(Debug, Clone)]
pub enum MemoryResult {
    /// One set of options.
    Single {
        /// The estimate.
        report: Box<MemoryReport>,
        /// `--max-context`: the longest context that fits (`None` inside: not one token).
        max_context: Option<Option<MaxContext>>,
    },
    /// A sweep.
    Sweep {
        /// What varied.
        axis: SweepAxis,
        /// Each value and its estimate.
        points: Vec<(Swept, MemoryReport)>,
    },
}

/// The estimate of one model.
#[derive(Debug, Clone)]
pub struct ModelMemory {
    /// The model's name.
    pub name: String,
    /// The estimate.
    pub result: MemoryResult,
    /// The weight files measured, when the weights come from files.
    pub files: Option<FilesUsed>,
}

impl ModelMemory {
    fn files_json(&self) -> Option<wire::FilesJson> {
        self.files
            .as_ref()
            .map(|f| wire::FilesJson::new(&f.used, &f.ignored))
    }

    /// Its objects on the wire: one, or one per point of a sweep (each with `swept`).
    fn wire(&self) -> Vec<Envelope<MemoryJson>> {
        match &self.result {
            MemoryResult::Single {
                report,
                max_context,
            } => {
                let mut j = MemoryJson::new(&self.name, report, *max_context);
                j.files = self.files_json();
                vec![Envelope::new(j)]
            }
            MemoryResult::Sweep { points, .. } => points
                .iter()
                .map(|(v, r)| {
                    let mut j = MemoryJson::new(&self.name, r, None);
                    j.files = self.files_json();
                    j.swept = Some(wire::swept(v));
                    Envelope::new(j)
                })
                .collect(),
        }
    }
}

/// The estimate of `memory`.
#[derive(Debug, Clone)]
pub struct MemoryOutcome {
    /// One estimate per model, in the order asked.
    pub models: Vec<ModelMemory>,
    /// Warnings, each prefixed with its model's name.
    pub warnings: Vec<String>,
}

/// The weight files read, and those beside them that were not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilesUsed {
    /// Files read.
    pub used: Vec<String>,
    /// Files not read, and why.
    pub ignored: Vec<llmsize_adapters::checkpoint::Ignored>,
}

impl FilesUsed {
    fn of(c: &Checkpoint) -> Self {
        FilesUsed {
            used: c.files.iter().map(|(f, _)| f.clone()).collect(),
            ignored: c.ignored.clone(),
        }
    }

    /// One row per file read (a set of shards as one row) and per file not read, with why.
    #[must_use]
    pub fn table(&self) -> llmsize_core::render::doc::Table {
        let used: Vec<&str> = self.used.iter().map(String::as_str).collect();
        checkpoint::render::files(&used, &self.ignored)
    }
}

impl MemoryOutcome {
    /// False when a GPU was named and a model does not fit it (at any point of a sweep).
    #[must_use]
    pub fn fits(&self) -> bool {
        self.models.iter().all(|m| match &m.result {
            MemoryResult::Single { report, .. } => report.fits != Some(false),
            MemoryResult::Sweep { points, .. } => points.iter().all(|(_, r)| r.fits != Some(false)),
        })
    }

    /// The wire form: one object for one model at one point; an array for a sweep or for
    /// several models (every model's objects in order, as `params` does).
    #[must_use]
    pub fn wire(&self) -> MemoryWire {
        let mut list: Vec<_> = self.models.iter().flat_map(ModelMemory::wire).collect();
        let single = matches!(
            self.models.as_slice(),
            [ModelMemory {
                result: MemoryResult::Single { .. },
                ..
            }]
        );
        if single && list.len() == 1 {
            MemoryWire::One(Box::new(list.remove(0)))
        } else {
            MemoryWire::Many(list)
        }
    }

    /// `--json`.
    pub fn to_json(&self) -> Result<String, Error> {
        wire::to_pretty(&self.wire())
    }
}

pub(crate) fn weight_format(name: &str) -> Result<WeightFormat, Error> {
    WeightFormat::parse(name).ok_or_else(|| {
        Error::bad_input(
            format!("unknown weight format `{name}` for `--dtype`"),
            format!("valid: {}", WeightFormat::names().join(", ")),
        )
    })
}

fn kv_dtype(name: &str) -> Result<KvDtype, Error> {
    KvDtype::parse(name).ok_or_else(|| {
        Error::bad_input(
            format!("unknown KV cache type `{name}` for `--kv-dtype`"),
            format!("valid: {}", KvDtype::NAMES.join(", ")),
        )
    })
}

pub(crate) fn gpu_spec(spec: Option<&str>) -> Result<Option<(&'static Gpu, u64)>, Error> {
    spec.map(|s| {
        gpu::parse_spec(s).map_err(|e| {
            Error::bad_input(
                format!("`--gpu {s}`: {e}"),
                "`llmsize gpus` lists them with their memory",
            )
        })
    })
    .transpose()
}

/// `--images N` (and `--image-tokens T`): the positions the images add to each sequence, and
/// the sentence that says so; `None` without images.
fn image_positions(
    spec: &ModelSpec,
    images: u64,
    image_tokens: Option<u64>,
) -> Result<Option<(u64, String)>, Error> {
    if images == 0 {
        if image_tokens.is_some() {
            return Err(Error::bad_input(
                "`--image-tokens` without `--images`",
                "say how many images each sequence holds, e.g. `--images 2`",
            ));
        }
        return Ok(None);
    }
    if !spec
        .extras
        .iter()
        .any(|e| e.category == llmsize_core::Category::Vision)
    {
        return Err(Error::bad_input(
            format!(
                "`--images`: `{}` has no vision tower (or `--text-only` left it out)",
                spec.name
            ),
            "images need a vision-language model",
        ));
    }
    let (per, from) = match (image_tokens, &spec.image_tokens) {
        (Some(t), _) => (t, "`--image-tokens`".to_owned()),
        (None, Some((t, key))) => (*t, format!("the config's `{key}`")),
        (None, None) => {
            return Err(Error::bad_input(
                format!(
                    "`--images`: how many positions an image takes in `{}` depends on its resolution",
                    spec.model_type
                ),
                "give it with `--image-tokens T`",
            ));
        }
    };
    if per == 0 {
        return Err(Error::bad_input(
            "`--image-tokens 0` is out of range",
            "an image takes at least one position",
        ));
    }
    let extra = images.checked_mul(per).ok_or_else(|| {
        Error::bad_input(
            "`--images` × `--image-tokens` overflows",
            "give smaller numbers",
        )
    })?;
    Ok(Some((
        extra,
        format!(
            "images: {images} × {per} positions ({from}) join each sequence's tokens; the vision tower's own FLOPs are not counted"
        ),
    )))
}

/// A sequence's positions with its images': `seq_len + extra`, checked.
fn with_images(seq_len: u64, extra: u64) -> Result<u64, Error> {
    seq_len.checked_add(extra).ok_or_else(|| {
        Error::bad_input(
            "`--seq-len` plus the images' positions overflows",
            "give smaller numbers",
        )
    })
}

/// `--gpu` with `--gpu-mem`/`--gpu-bw`/`--gpu-tflops`: the GPU and its count; a described
/// GPU is interned by the core (see [`gpu::custom`]).
pub(crate) fn gpu_choice(
    spec: Option<&str>,
    flags: &CustomGpuFlags,
) -> Result<Option<(&'static Gpu, u64)>, Error> {
    let named = gpu_spec(spec)?;
    let bad = |flag: &str, e: String| {
        Error::bad_input(
            format!("`{flag}`: {e}"),
            "describe a GPU as `--gpu-mem 24GiB --gpu-bw 936GB/s --gpu-tflops 71`",
        )
    };
    let custom = gpu::CustomGpu {
        base: named.map(|(g, _)| g),
        memory_bytes: flags
            .memory
            .as_deref()
            .map(gpu::parse_memory)
            .transpose()
            .map_err(|e| bad("--gpu-mem", e))?,
        bandwidth: flags
            .bandwidth
            .as_deref()
            .map(gpu::parse_bandwidth)
            .transpose()
            .map_err(|e| bad("--gpu-bw", e))?,
        peak_16bit: flags
            .tflops
            .as_deref()
            .map(gpu::parse_tflops)
            .transpose()
            .map_err(|e| bad("--gpu-tflops", e))?,
    };
    if named.is_none() && custom.is_empty() {
        return Ok(None);
    }
    let g = gpu::custom(&custom).map_err(|e| bad("--gpu-mem", e))?;
    Ok(Some((g, named.map_or(1, |(_, n)| n))))
}

/// The greatest common divisor of the query-head counts of every attention kind (0 when the
/// model has no attention): every tensor-parallel degree that splits the heads divides it.
fn heads_gcd(spec: &ModelSpec) -> u64 {
    spec.layer_kinds()
        .filter_map(|l| match &l.attention {
            Attention::Standard(a) | Attention::CacheOnly(a) => Some(a.num_heads),
            Attention::Latent(a) => Some(a.num_heads),
            Attention::Absent => None,
        })
        .fold(0, gcd)
}

fn gcd(a: u64, b: u64) -> u64 {
    match a.checked_rem(b) {
        None => a,
        Some(r) => gcd(b, r),
    }
}

/// The tensor-parallel degrees up to `max` that split `spec`'s heads, in increasing order.
///
/// Candidates are the divisors of the heads' gcd, never the numbers up to a GPU count: the
/// work is bounded by `max` (itself at most `limits::MAX_GPUS`) whatever the input holds.
fn tp_degrees(spec: &ModelSpec, max: u64) -> Vec<u64> {
    let heads = heads_gcd(spec);
    let max = max.min(llmsize_core::limits::MAX_GPUS);
    // Without attention every degree splits the (absent) heads; the core's rule decides.
    let limit = if heads == 0 { max } else { max.min(heads) };
    (1..=limit)
        .filter(|d| heads == 0 || heads.is_multiple_of(*d))
        .filter(|d| llmsize_core::memory::tp_fits(spec, *d))
        .collect()
}

/// The widest tensor parallelism over a divisor of `count` GPUs that splits the heads.
fn widest_tp(spec: &ModelSpec, count: u64) -> u64 {
    let g = match heads_gcd(spec) {
        0 => count,
        heads => gcd(heads, count),
    };
    tp_degrees(spec, g)
        .into_iter()
        .filter(|d| count.is_multiple_of(*d))
        .max()
        .unwrap_or(1)
}

/// A layer split llmsize chose itself (no `--pp` given) that the model cannot take: the
/// error names the GPU count the user gave, not a `--pp` they never typed.
fn check_derived_split(spec: &ModelSpec, count: u64, tp: u64, pp: u64) -> Result<(), Error> {
    let layers = spec.num_layers().max(1);
    if pp <= layers {
        return Ok(());
    }
    let widest = tp_degrees(spec, llmsize_core::limits::MAX_GPUS)
        .into_iter()
        .max()
        .unwrap_or(1);
    let most = llmsize_core::checked::mul("tp·L", widest, layers)
        .map_err(|e| Error::spec(&spec.name)(e.into()))?;
    Err(Error::bad_input(
        format!(
            "`--gpu`: {} GPUs cannot hold one copy of `{}`: tensor parallelism {tp} (the widest that splits its heads and divides {}) leaves {} pipeline stages for its {layers} layers",
            thousands(count),
            spec.name,
            thousands(count),
            thousands(pp),
        ),
        format!(
            "name at most {} GPUs (tensor parallelism {widest} × {layers} stages), or choose the layout with `--tp`/`--pp`",
            thousands(most)
        ),
    ))
}

/// Request → core options, validated in one place: the GPUs' layout (tensor parallelism
/// where the heads allow it, else a layer split) and the runtime's settings.
fn memory_options(
    req: &MemoryRequest,
    spec: &ModelSpec,
    gguf: bool,
) -> Result<(MemoryOptions, ServingOptions, Vec<String>), Error> {
    let gpu = gpu_choice(req.gpu.as_deref(), &req.custom_gpu)?;
    let count = gpu.map_or(1, |(_, n)| n);
    let mut notes = Vec::new();
    // A GGUF is served by llama.cpp, which places layers one by one; past the layers a
    // placement takes, the plain report (and a note) rather than an error nobody asked for.
    let placeable = spec.num_layers() <= llmsize_core::runtime::MAX_PLACED_LAYERS;
    let runtime = req.runtime.runtime.unwrap_or(if gguf && placeable {
        Runtime::LlamaCpp
    } else {
        Runtime::Transformers
    });
    if gguf && !placeable && req.runtime.runtime.is_none() {
        notes.push(format!(
            "a GGUF file of {} layers: sized as transformers holds it (llama.cpp's placement is worked out for at most {} layers)",
            spec.num_layers(),
            llmsize_core::runtime::MAX_PLACED_LAYERS
        ));
    }
    for (flag, v) in [("--tp", req.tp), ("--pp", req.pp)] {
        if v == Some(0) {
            return Err(Error::bad_input(
                format!("`{flag} 0` is out of range"),
                "give a degree of at least 1",
            ));
        }
    }
    let degrees = |max| {
        tp_degrees(spec, max)
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    if let Some(tp) = req.tp
        && !llmsize_core::memory::tp_fits(spec, tp)
    {
        return Err(Error::bad_input(
            format!(
                "`--tp {tp}` does not split `{}`'s attention heads evenly",
                spec.name
            ),
            format!(
                "tensor-parallel degrees that work: {}; or split the layers with `--pp`",
                degrees(count.max(tp))
            ),
        ));
    }
    if runtime == Runtime::Vllm && gpu.is_none() {
        return Err(Error::bad_input(
            "`--runtime vllm` needs a GPU: vLLM sizes its KV cache from the GPU's memory",
            "name one with `--gpu h100`, or describe it with `--gpu-mem 80GiB`",
        ));
    }
    if runtime == Runtime::LlamaCpp
        && let Some(tp) = req.tp.filter(|t| *t > 1)
    {
        return Err(Error::bad_input(
            format!(
                "`--tp {tp}` under llama.cpp: its row split (`--split-mode row`) is not modelled"
            ),
            "drop `--tp`: llama.cpp's default layer split over the GPUs of `--gpu` is",
        ));
    }
    let (tp, pp) = match (runtime, req.tp, req.pp) {
        // llama.cpp's default multi-GPU mode is a layer split over every GPU.
        (Runtime::LlamaCpp, tp, pp) => (tp.unwrap_or(1), pp.unwrap_or(count)),
        (_, Some(tp), pp) => (tp, pp.unwrap_or(1)),
        // The widest tensor parallelism the heads allow within each stage's share of GPUs.
        (_, None, Some(pp)) => (
            tp_degrees(spec, count.checked_div(pp).unwrap_or(1).max(1))
                .into_iter()
                .max()
                .unwrap_or(1),
            pp,
        ),
        (_, None, None) => {
            // The widest tensor parallelism the heads allow over a divisor of the GPUs; the
            // rest of the GPUs become pipeline stages.
            let tp = widest_tp(spec, count);
            let pp = count.checked_div(tp).unwrap_or(count);
            if tp < count {
                notes.push(format!(
                    "{count} GPUs: tensor parallelism {count} does not split the attention heads (degrees that work: {}), so the layers are split into {} pipeline stages{}; choose with --tp/--pp",
                    degrees(count),
                    pp,
                    if tp > 1 {
                        format!(" of tensor parallelism {tp}")
                    } else {
                        String::new()
                    }
                ));
            }
            check_derived_split(spec, count, tp, pp)?;
            (tp, pp)
        }
    };
    // saturates: never, tp and pp are at most MAX_GPUS (2^20) each (bounds.rs).
    if gpu.is_some() && tp.saturating_mul(pp) > count {
        return Err(Error::bad_input(
            format!("`--tp {tp}` × `--pp {pp}` is more than the {count} GPU(s) of `--gpu`"),
            "name as many GPUs as tp × pp, e.g. `--gpu h100x8`",
        ));
    }
    let kv_default = if runtime == Runtime::LlamaCpp {
        "f16"
    } else {
        "bf16"
    };
    let options = MemoryOptions {
        format: weight_format(req.dtype.as_deref().unwrap_or("bf16"))?,
        // The length is settled per model (`context_length`): a position table caps it.
        seq_len: req.seq_len.unwrap_or(MEMORY_SEQ_LEN),
        batch: req.batch,
        kv_dtype: kv_dtype(req.kv_dtype.as_deref().unwrap_or(kv_default))?,
        tp,
        gpu,
        mla: req.mla_cache,
        window: req.cache,
        overhead_bytes: req
            .overhead_mib
            .checked_mul(1 << 20)
            .ok_or_else(|| Error::BadInput {
                message: "`--overhead` is too large".into(),
                hint: None,
            })?,
    };
    let f = &req.runtime;
    let serving = ServingOptions {
        runtime,
        pp,
        ctx_size: f.ctx_size,
        n_gpu_layers: f.n_gpu_layers,
        tensor_split: f.tensor_split.clone(),
        swa_full: f.swa_full,
        n_ubatch: 512,
        gpu_memory_utilization: f.gpu_memory_utilization,
        block_size: f.block_size,
        max_model_len: f.max_model_len,
        max_num_batched_tokens: f.max_num_batched_tokens,
    };
    if runtime != Runtime::LlamaCpp
        && (f.ctx_size.is_some()
            || f.n_gpu_layers.is_some()
            || !f.tensor_split.is_empty()
            || f.swa_full)
    {
        return Err(Error::bad_input(
            "`--ctx-size`, `--n-gpu-layers`, `--tensor-split` and `--swa-full` are llama.cpp's",
            "add `--runtime llama.cpp`",
        ));
    }
    if runtime != Runtime::Vllm
        && (f.max_model_len.is_some()
            || f.max_num_batched_tokens.is_some()
            || (f.gpu_memory_utilization - 0.9).abs() > f64::EPSILON
            || f.block_size != 16)
    {
        return Err(Error::bad_input(
            "`--gpu-memory-utilization`, `--block-size`, `--max-model-len` and `--max-num-batched-tokens` are vLLM's",
            "add `--runtime vllm`",
        ));
    }
    if gguf && placeable && req.runtime.runtime.is_none() {
        notes.push("a GGUF file: sized as llama.cpp serves it (`--runtime transformers` for transformers' cache)".into());
    }
    Ok((options, serving, notes))
}

/// The storage a quantized release's config states, applied where `--dtype` is not given or
/// names the release's own format (which then keeps the release's own choice of tensors); a
/// `--dtype` that overrides it is warned about.
fn release_format(
    spec: &ModelSpec,
    dtype_given: bool,
    given_format: Option<WeightFormat>,
    warnings: &mut Vec<String>,
) -> Option<WeightFormat> {
    let q = spec.quantization.as_ref()?;
    let f = q.format?;
    if dtype_given && !same_format(given_format, f) {
        warnings.push(format!(
            "{}: `--dtype` overrides the release's quantization (`quant_method: {}`, stored as `{}`)",
            spec.name,
            q.method,
            f.name()
        ));
    }
    Some(f)
}

/// `--dtype` names the release's format (`fp8-block` for DeepSeek-V3's 128×128 FP8).
fn same_format(given: Option<WeightFormat>, release: WeightFormat) -> bool {
    given.is_some_and(|g| g.name() == release.name())
}

/// The config's estimate beside measured weights, and the bytes the files hold that the
/// model does not load (with what they are).
type Beside = (Option<u64>, Option<(String, u64)>);

/// What goes beside the weights: the estimate in `format` when the weights were measured
/// from files, and what the release's files hold that the model does not load.
fn release_beside(
    spec: &ModelSpec,
    format: WeightFormat,
    measured: bool,
) -> Result<Beside, llmsize_core::SpecError> {
    let estimate = if measured {
        let lines = llmsize_core::memory::weight_lines(spec, format)?;
        Some(
            lines
                .iter()
                .try_fold(0u64, |a, l| a.checked_add(l.bytes))
                .ok_or_else(|| llmsize_core::SpecError::TooLarge {
                    what: "weights".into(),
                })?,
        )
    } else {
        None
    };
    Ok((estimate, llmsize_core::quant::mtp_bytes(spec, format)?))
}

/// Weight files as storage lines: bytes as stored, by dtype, and the tensors the name table
/// does not recognise as one `other` line (they are loaded all the same), with a warning.
fn storage_lines(
    checkpoint: &Checkpoint,
    name: &str,
    warnings: &mut Vec<String>,
) -> Result<Vec<StorageLine>, Error> {
    let summary = checkpoint.summary().map_err(Error::spec(name))?;
    let mut lines: Vec<StorageLine> = summary
        .by_dtype
        .into_iter()
        .map(|(storage, (params, bytes))| StorageLine {
            storage,
            params,
            bytes,
        })
        .collect();
    // Saved tensors that are not parameters (quantization scales such as gpt-oss's MXFP4
    // `*_scales` and FP8 `weight_scale_inv`, `inv_freq`, …) are loaded with the weights.
    let sum = |what: &str, xs: &mut dyn Iterator<Item = u64>| {
        llmsize_core::checked::sum(what, xs).map_err(|e| Error::spec(name)(e.into()))
    };
    let buffer_bytes = sum("buffer bytes", &mut summary.buffers.iter().map(|b| b.bytes))?;
    if buffer_bytes > 0 {
        lines.push(StorageLine {
            storage: BUFFER_STORAGE.into(),
            params: 0,
            bytes: buffer_bytes,
        });
    }
    if !summary.unknown.is_empty() {
        let params = sum(
            "unrecognised parameters",
            &mut summary.unknown.iter().map(|u| u.params),
        )?;
        let bytes = sum(
            "unrecognised bytes",
            &mut summary.unknown.iter().map(|u| u.bytes),
        )?;
        lines.push(StorageLine {
            storage: OTHER_STORAGE.into(),
            params,
            bytes,
        });
        let shown: Vec<String> = summary
            .unknown
            .iter()
            .take(3)
            .map(|u| format!("`{}`", u.name))
            .collect();
        warnings.push(format!(
            "{name}: {} tensor(s) the name table does not recognise ({bytes} bytes) are counted as `{OTHER_STORAGE}`: {}{}",
            summary.unknown.len(),
            shown.join(", "),
            if summary.unknown.len() > 3 { ", …" } else { "" }
        ));
    }
    Ok(lines)
}

/// The config field a learned position table's size comes from, with its value, for
/// messages: the first of the usual keys whose value is the table's `limit` (top level or one
/// level down, as `text_config`), else the table's rows.
fn position_field(model: &Model, limit: u64) -> String {
    const KEYS: [&str; 5] = [
        "max_position_embeddings",
        "n_positions",
        "n_ctx",
        "max_source_positions",
        "max_target_positions",
    ];
    let value = model
        .config
        .as_ref()
        .and_then(|c| serde_json::from_str::<serde_json::Value>(&c.text).ok());
    let found = value.as_ref().and_then(|v| {
        let objects = std::iter::once(v).chain(
            v.as_object()
                .into_iter()
                .flat_map(|o| o.values().filter(|x| x.is_object())),
        );
        objects
            .flat_map(|o| KEYS.iter().map(move |k| (*k, o.get(*k))))
            .find_map(|(k, x)| (x.and_then(serde_json::Value::as_u64) == Some(limit)).then_some(k))
    });
    match found {
        Some(k) => format!("`{k}` = {limit}"),
        None => format!("its learned position table ({limit} rows)"),
    }
}

/// Tokens per sequence for a model: the length given, else `default` capped at a learned
/// position table (with a note saying so). A length given past the table is counted as asked,
/// with a note that the model has no position for those tokens. `extra` positions (images)
/// join each sequence.
fn context_length(
    spec: &ModelSpec,
    model: &Model,
    given: Option<u64>,
    default: u64,
    extra: u64,
    flag: &str,
) -> Result<(u64, Option<String>), Error> {
    let total = with_images(given.unwrap_or(default), extra)?;
    let Some(p) = spec.position_limit().filter(|p| total > *p) else {
        return Ok((total, None));
    };
    let images = if extra > 0 {
        format!(" plus {extra} image positions")
    } else {
        String::new()
    };
    let field = position_field(model, p);
    if let Some(s) = given {
        // Asked for explicitly: counted as asked and said (the arithmetic of a longer context
        // is well defined: the ground truth's FLOP and KV counts of GPT-2 go past its table).
        return Ok((
            total,
            Some(format!(
                "`{flag} {s}`{images} is longer than `{}` can take ({field}): counted as asked, though the model has no position for the tokens past {p}",
                spec.name
            )),
        ));
    }
    if p <= extra {
        return Err(Error::bad_input(
            format!(
                "the {extra} image positions are more than `{}` can take: {field}",
                spec.name
            ),
            "give fewer images",
        ));
    }
    Ok((
        p,
        Some(format!(
            "{flag} defaults to {default} tokens; capped at {} positions{images}, the most `{}` can take ({field})",
            p.saturating_sub(extra), // saturates: `p > extra` was checked above
            spec.name
        )),
    ))
}

/// The request with one swept option set.
fn memory_point(req: &MemoryRequest, point: Option<&Swept>) -> MemoryRequest {
    let mut r = req.clone();
    match point {
        None => {}
        Some(Swept::SeqLen(v)) => r.seq_len = Some(*v),
        Some(Swept::Batch(v)) => r.batch = *v,
        Some(Swept::Dtype(d)) => r.dtype = Some(d.clone()),
        Some(Swept::Gpu(g)) => r.gpu = Some(g.clone()),
    }
    r
}

/// The storage line of saved tensors that are not parameters.
const BUFFER_STORAGE: &str = "buffers";

/// The storage line of an index's `metadata.total_size` when its shards are not at hand.
const INDEX_STORAGE: &str = "index total_size";

/// The storage line of tensors the name table does not place.
const OTHER_STORAGE: &str = "other";

pub(crate) fn memory(req: &MemoryRequest, env: &HubEnv) -> Result<MemoryOutcome, Error> {
    if req.models.is_empty() {
        return Err(Error::bad_input(
            "no MODEL given",
            "name a preset (`llmsize presets`), a config.json, a directory or a Hub repo id",
        ));
    }
    let mut warnings = Vec::new();
    let mut models = Vec::with_capacity(req.models.len());
    for model in &req.models {
        models.push(memory_model(req, model, env, &mut warnings)?);
    }
    Ok(MemoryOutcome { models, warnings })
}

/// One point of `memory`: the report, and the runtime and placement it was made under (what
/// `--max-context` searches again).
type Point = (MemoryReport, ServingOptions, Option<PlacedWeights>);

/// `memory` for one MODEL argument.
fn memory_model(
    req: &MemoryRequest,
    arg: &str,
    env: &HubEnv,
    warnings: &mut Vec<String>,
) -> Result<ModelMemory, Error> {
    let (spec, model) = read_model(
        arg,
        &ReadOptions {
            overrides: req.overrides.clone(),
            assume: req.assume.clone(),
            text_only: req.text_only,
            ..ReadOptions::default()
        },
        &req.hub,
        Want::IfPresent,
        env,
        warnings,
    )?;
    let checkpoint = model
        .weights
        .as_ref()
        .map(crate::weights_io::Weights::checkpoint)
        .transpose()?;
    let gguf = checkpoint
        .as_ref()
        .is_some_and(|c| c.format == checkpoint::Format::Gguf);
    // A quantized release is sized as it ships unless `--dtype` (or a sweep of them) says
    // otherwise.
    let dtype_given = req.dtype.is_some() || matches!(req.sweep, Some(Sweep::Dtype(_)));
    let given = req.dtype.as_deref().and_then(WeightFormat::parse);
    let release = release_format(&spec, dtype_given, given, warnings);
    let images = image_positions(&spec, req.images, req.image_tokens)?;
    let extra = images.as_ref().map_or(0, |(n, _)| *n);
    if images.is_some() && req.max_context {
        return Err(Error::bad_input(
            "`--max-context` with `--images`",
            "ask for the longest context without images, or add the images' positions to `--seq-len`",
        ));
    }
    // Weight files, when the model has them, are measured rather than estimated.
    let mut files_used = None;
    let from_files = match &checkpoint {
        // A config and its index without the shards: the index's `total_size` is the files'
        // bytes (one line), and the config's estimate goes beside it.
        None => match &model.index_only {
            None => None,
            Some(i) => {
                warnings.push(format!(
                    "{}: `{}` names {} shard(s), {} of them not here: the weights are its `metadata.total_size`, with the config's estimate beside",
                    spec.name, i.file, i.shards, i.missing
                ));
                files_used = Some(FilesUsed {
                    used: vec![i.file.clone()],
                    ignored: Vec::new(),
                });
                Some(vec![StorageLine {
                    storage: INDEX_STORAGE.into(),
                    params: count(&spec).map_err(Error::spec(&spec.name))?.total,
                    bytes: i.total_size,
                }])
            }
        },
        Some(c) => {
            warnings.extend(
                c.file_problems
                    .iter()
                    .map(|p| format!("{}: {p}", spec.name)),
            );
            files_used = Some(FilesUsed::of(c));
            Some(storage_lines(c, &spec.name, warnings)?)
        }
    };
    let files = from_files.as_deref();
    if files.is_some() && matches!(req.sweep, Some(Sweep::Dtype(_))) {
        return Err(Error::bad_input(
            format!(
                "`--sweep dtype=…`: `{}` is measured from its weight files as stored",
                spec.name
            ),
            "sweep formats over a config.json or a preset, without weight files",
        ));
    }
    // Where the files' tensors sit, for a runtime that places layers (worked out once, when
    // one asks).
    let mut placed_once: Option<PlacedWeights> = None;
    let mut placement = |serving: &ServingOptions| -> Result<Option<PlacedWeights>, Error> {
        let plain = serving.runtime == Runtime::Transformers && serving.pp == 1;
        match (&checkpoint, plain) {
            (Some(c), false) => {
                if placed_once.is_none() {
                    let entries: Vec<(&str, llmsize_core::Category, u64)> = c
                        .entries
                        .iter()
                        .map(|e| (e.name.as_str(), e.role, e.bytes))
                        .collect();
                    placed_once =
                        Some(placed_from_files(&spec, &entries).map_err(Error::spec(&spec.name))?);
                }
                Ok(placed_once.clone())
            }
            _ => Ok(None),
        }
    };
    if files.is_some() && req.dtype.is_some() {
        warnings.push(format!(
            "{}: `--dtype` is ignored: the weights are measured from the files as stored",
            spec.name
        ));
    }
    let wrap = Error::spec;
    // One point: the request with the swept option set, validated as the flags are.
    let mut estimate = |point: Option<&Swept>| -> Result<Point, Error> {
        let r = memory_point(req, point);
        let (mut options, serving, notes) = memory_options(&r, &spec, gguf)?;
        if let Some(f) = release
            && (r.dtype.is_none()
                || same_format(r.dtype.as_deref().and_then(WeightFormat::parse), f))
        {
            options.format = f;
        }
        let (seq_len, note) =
            context_length(&spec, &model, r.seq_len, MEMORY_SEQ_LEN, extra, "--seq-len")?;
        options.seq_len = seq_len;
        let placed = placement(&serving)?;
        let mut report =
            serve(&spec, &options, &serving, files, placed.as_ref()).map_err(wrap(&spec.name))?;
        // The config's estimate goes beside measured files when there is a config.json to
        // estimate from (a GGUF's metadata describes its own file).
        (report.weights_estimate_bytes, report.files_only) = release_beside(
            &spec,
            options.format,
            files.is_some() && model.config.is_some(),
        )
        .map_err(wrap(&spec.name))?;
        if let (Some(i), None) = (&model.index_only, &checkpoint) {
            report.assumptions.push(format!(
                "weights: `{}`'s `metadata.total_size` stands for the files ({} of its {} shards are not here)",
                i.file, i.missing, i.shards
            ));
        }
        report.assumptions.extend(notes);
        report.assumptions.extend(note);
        if let Some((_, note)) = &images {
            report.assumptions.push(note.clone());
        }
        Ok((report, serving, placed))
    };
    let result = if let Some(sweep) = &req.sweep {
        let mut points = Vec::new();
        for v in sweep.points() {
            let (report, _, _) = estimate(Some(&v))?;
            points.push((v, report));
        }
        MemoryResult::Sweep {
            axis: sweep.axis(),
            points,
        }
    } else {
        let (report, serving, placed) = estimate(None)?;
        let longest = if req.max_context {
            if report.options.gpu.is_none() {
                return Err(Error::bad_input(
                    "`--max-context` needs a GPU",
                    "name one with `--gpu`, e.g. `--gpu rtx4090`",
                ));
            }
            Some(
                runtime_max_context(
                    &spec,
                    &report.options,
                    &serving,
                    files,
                    placed.as_ref(),
                    MAX_CONTEXT_SEARCH,
                )
                .map_err(wrap(&spec.name))?,
            )
        } else {
            None
        };
        MemoryResult::Single {
            report: Box::new(report),
            max_context: longest,
        }
    };
    Ok(ModelMemory {
        name: spec.name,
        result,
        files: files_used,
    })
}

// ---------------------------------------------------------------------------------------
// flops

/// Decode batches of the tokens/s table when no `--sweep batch=` gives them (the asked
/// `--batch` joins them).
const SPEED_BATCHES: [u64; 4] = [1, 8, 32, 128];

/// One model's FLOPs (at one point of a sweep), and its speed on a GPU.
#[derive(Debug, Clone)]
pub struct FlopsPoint {
    /// The model's name.
    pub name: String,
    /// The swept option's value here, in a sweep.
    pub swept: Option<Swept>,
    /// FLOPs by component.
    pub report: FlopsReport,
    /// The speed estimate, when a GPU was named.
    pub speed: Option<SpeedReport>,
    /// Notes on the options (a default length capped at a position table).
    pub notes: Vec<String>,
}

impl FlopsPoint {
    fn json(&self) -> Envelope<FlopsJson> {
        let mut j = FlopsJson::new(&self.name, &self.report, self.speed.as_ref());
        j.swept = self.swept.as_ref().map(wire::swept);
        j.notes.clone_from(&self.notes);
        Envelope::new(j)
    }
}

/// The counts of `flops`.
#[derive(Debug, Clone)]
pub struct FlopsOutcome {
    /// One point per model (per model and value in a sweep), in order.
    pub points: Vec<FlopsPoint>,
    /// What was swept, in a sweep.
    pub sweep: Option<SweepAxis>,
    /// Warnings.
    pub warnings: Vec<String>,
}

impl FlopsOutcome {
    /// The wire form: one object for one model at one point, else an array (as `params`).
    #[must_use]
    pub fn wire(&self) -> FlopsWire {
        let mut list: Vec<_> = self.points.iter().map(FlopsPoint::json).collect();
        if list.len() == 1 && self.sweep.is_none() {
            FlopsWire::One(Box::new(list.remove(0)))
        } else {
            FlopsWire::Many(list)
        }
    }

    /// `--json`.
    pub fn to_json(&self) -> Result<String, Error> {
        wire::to_pretty(&self.wire())
    }
}

pub(crate) fn flops(req: &FlopsRequest, env: &HubEnv) -> Result<FlopsOutcome, Error> {
    if req.models.is_empty() {
        return Err(Error::bad_input(
            "no MODEL given",
            "name a preset (`llmsize presets`), a config.json, a directory or a Hub repo id",
        ));
    }
    for (flag, v) in [("--mfu", req.mfu), ("--bw-eff", req.bw_eff)] {
        if !(v > 0.0 && v <= 1.0) {
            return Err(Error::bad_input(
                format!("`{flag} {v}` is out of range"),
                "give a fraction in (0, 1], e.g. 0.5",
            ));
        }
    }
    if let Some(p) = req.price
        && !(p.is_finite() && p > 0.0)
    {
        return Err(Error::bad_input(
            format!("`--price {p}` is out of range"),
            "give dollars per GPU-hour, e.g. 2.5",
        ));
    }
    let gpu_swept = matches!(req.sweep, Some(Sweep::Gpu(_)));
    if req.price.is_some() && req.gpu.is_none() && !gpu_swept {
        return Err(Error::bad_input(
            "`--price` prices GPU time, and no GPU is named",
            "name one with `--gpu`, e.g. `--gpu h100 --price 2.5`",
        ));
    }
    if let Some(Sweep::Dtype(_)) = &req.sweep
        && req.gpu.is_none()
    {
        return Err(Error::bad_input(
            "`--sweep dtype=…` changes only the speed estimate, which needs a GPU",
            "name one with `--gpu`, e.g. `--gpu h100`",
        ));
    }
    let mut warnings = Vec::new();
    let mut points = Vec::new();
    for model in &req.models {
        let (spec, resolved) = read_model(
            model,
            &ReadOptions {
                overrides: req.overrides.clone(),
                assume: req.assume.clone(),
                text_only: req.text_only,
                ..ReadOptions::default()
            },
            &req.hub,
            Want::No,
            env,
            &mut warnings,
        )?;
        let images = image_positions(&spec, req.images, req.image_tokens)?;
        if let Some((_, note)) = &images {
            warnings.push(format!("{}: {note}", spec.name));
        }
        let extra = images.as_ref().map_or(0, |(n, _)| *n);
        match &req.sweep {
            None => points.push(flops_point(req, &spec, &resolved, extra, None)?),
            Some(sweep) => {
                for v in sweep.points() {
                    points.push(flops_point(req, &spec, &resolved, extra, Some(v))?);
                }
            }
        }
    }
    Ok(FlopsOutcome {
        points,
        sweep: req.sweep.as_ref().map(Sweep::axis),
        warnings,
    })
}

/// One model at one point: FLOPs, and the roofline when a GPU is named.
fn flops_point(
    req: &FlopsRequest,
    spec: &ModelSpec,
    model: &Model,
    extra: u64,
    point: Option<Swept>,
) -> Result<FlopsPoint, Error> {
    let (mut seq_given, mut batch, mut dtype, mut gpu) =
        (req.seq_len, req.batch, req.dtype.clone(), req.gpu.clone());
    match &point {
        None => {}
        Some(Swept::SeqLen(v)) => seq_given = Some(*v),
        Some(Swept::Batch(v)) => batch = *v,
        Some(Swept::Dtype(d)) => dtype = Some(d.clone()),
        Some(Swept::Gpu(g)) => gpu = Some(g.clone()),
    }
    // Validate every option up front, even those only the speed estimate uses.
    let mut extra_notes = Vec::new();
    let mut format = weight_format(dtype.as_deref().unwrap_or("bf16"))?;
    if gpu.is_some()
        && let Some(q) = &spec.quantization
        && let Some(f) = q.format
    {
        // A quantized release's decode reads its weights as stored, unless a `--dtype` (or a
        // swept one), bf16 included, asks what another format would read; one that names the
        // release's own format is the release (as in `memory`).
        if dtype.is_none() || same_format(Some(format), f) {
            format = f;
            extra_notes.push(format!(
                "decode bytes in the release's format `{}` (`quant_method: {}`); `--dtype` overrides it",
                f.name(),
                q.method
            ));
        } else {
            extra_notes.push(format!(
                "`--dtype` overrides the release's quantization (`quant_method: {}`, stored as `{}`)",
                q.method,
                f.name()
            ));
        }
    }
    let kv = kv_dtype(&req.kv_dtype)?;
    let wrap = Error::spec;
    // A prompt longer than the default context makes the context; longer than an explicit
    // one is a contradiction.
    if let (Some(p), Some(s)) = (req.prompt, seq_given)
        && p > s
    {
        return Err(Error::bad_input(
            format!("`--prompt {p}` is longer than `--seq-len {s}`"),
            "the context holds the prompt and the generated tokens: give `--seq-len` at least the prompt",
        ));
    }
    let default = req.prompt.map_or(FLOPS_SEQ_LEN, |p| p.max(FLOPS_SEQ_LEN));
    let (seq_len, note) = context_length(spec, model, seq_given, default, extra, "--seq-len")?;
    let prompt = match req.prompt {
        None => seq_len,
        Some(p) => context_length(spec, model, Some(p), p, extra, "--prompt")?.0,
    };
    let report = count_flops(spec, seq_len, batch, req.attention).map_err(wrap(&spec.name))?;
    let speed_report = match gpu_spec(gpu.as_deref())? {
        None => None,
        Some((gpu, count)) => {
            // Tensor parallelism where the heads allow it; the other GPUs would be pipeline
            // stages, which do not shorten one step.
            let tp = widest_tp(spec, count);
            if tp < count {
                extra_notes.push(format!(
                    "{count} GPUs: the speed is for tensor parallelism {tp} (the attention heads do not split {count} ways); pipeline stages do not shorten a decode step"
                ));
            }
            let count = tp;
            let memory = MemoryOptions {
                format,
                seq_len,
                batch,
                kv_dtype: kv,
                tp: count,
                gpu: Some((gpu, count)),
                mla: MlaCache::Latent,
                window: CachePolicy::Transformers,
                overhead_bytes: OVERHEAD_MIB << 20,
            };
            let mut batches: Vec<u64> = match (&point, &req.sweep) {
                // A sweep's table is the sweep: no second table per point.
                (Some(_), _) => Vec::new(),
                _ => SPEED_BATCHES.iter().copied().chain([batch]).collect(),
            };
            batches.sort_unstable();
            batches.dedup();
            Some(
                speed(
                    spec,
                    &memory,
                    prompt,
                    req.attention,
                    SpeedOptions {
                        gpu,
                        gpus: count,
                        mfu: req.mfu,
                        bandwidth_efficiency: req.bw_eff,
                        price_per_gpu_hour: req.price,
                    },
                    &batches,
                )
                .map_err(wrap(&spec.name))?,
            )
        }
    };
    Ok(FlopsPoint {
        name: spec.name.clone(),
        swept: point,
        report,
        speed: speed_report,
        notes: note.into_iter().chain(extra_notes).collect(),
    })
}

// ---------------------------------------------------------------------------------------
// inspect and audit

/// Weight files as a count.
#[derive(Debug, Clone)]
pub struct InspectOutcome {
    /// The model's name.
    pub name: String,
    /// Every tensor.
    pub checkpoint: Checkpoint,
    /// Their count.
    pub summary: Summary,
}

impl InspectOutcome {
    /// The tables: files, tensors by component and by stored type, buffers, metadata.
    #[must_use]
    pub fn table(&self) -> llmsize_core::render::doc::Doc {
        checkpoint::render::inspect(&self.name, &self.checkpoint, &self.summary)
    }

    /// The wire form.
    #[must_use]
    pub fn wire(&self) -> Envelope<InspectJson> {
        Envelope::new(InspectJson::new(
            &self.name,
            &self.checkpoint,
            &self.summary,
        ))
    }

    /// `--json`.
    pub fn to_json(&self) -> Result<String, Error> {
        wire::to_pretty(&self.wire())
    }
}

/// The config against the weight files.
#[derive(Debug, Clone)]
pub struct AuditOutcome {
    /// The model's name.
    pub name: String,
    /// The comparison.
    pub audit: Audit,
}

impl AuditOutcome {
    /// True when every component agrees.
    #[must_use]
    pub fn agrees(&self) -> bool {
        self.audit.agrees()
    }

    /// The config against the files, component by component, and the verdict.
    #[must_use]
    pub fn table(&self) -> llmsize_core::render::doc::Doc {
        checkpoint::render::audit(&self.name, &self.audit)
    }

    /// The wire form.
    #[must_use]
    pub fn wire(&self) -> Envelope<AuditJson> {
        Envelope::new(AuditJson::new(&self.name, &self.audit))
    }

    /// `--json`.
    pub fn to_json(&self) -> Result<String, Error> {
        wire::to_pretty(&self.wire())
    }
}

/// A model with weights; `(name, checkpoint, model)`.
fn load_weights(model: &str, hub: &HubOptions, env: &HubEnv) -> Result<(Model, Checkpoint), Error> {
    let resolved = resolve_model(model, &lookup(hub, Want::Required), env)?;
    let Some(weights) = &resolved.weights else {
        return Err(Error::not_found(
            format!("`{model}` has no weight files (.safetensors or .gguf)"),
            "pass the weights' directory or file, or a Hub repo id with `--online`",
        ));
    };
    let checkpoint = weights.checkpoint()?;
    Ok((resolved, checkpoint))
}

pub(crate) fn inspect(req: &InspectRequest, env: &HubEnv) -> Result<InspectOutcome, Error> {
    let (model, checkpoint) = load_weights(&req.model, &req.hub, env)?;
    let summary = checkpoint.summary().map_err(Error::spec(&model.name))?;
    Ok(InspectOutcome {
        name: model.name,
        checkpoint,
        summary,
    })
}

pub(crate) fn audit(req: &AuditRequest, env: &HubEnv) -> Result<AuditOutcome, Error> {
    let (model, checkpoint) = load_weights(&req.model, &req.hub, env)?;
    let spec = model.spec(&ReadOptions::default())?;
    let audit = checkpoint::audit(&spec, &checkpoint).map_err(Error::spec(&model.name))?;
    Ok(AuditOutcome {
        name: model.name,
        audit,
    })
}

// ---------------------------------------------------------------------------------------
// lists

/// The MODEL to pass on for a Hub id that names a built-in preset: the preset's own id, or for
/// a tuned release of one (`meta-llama/Llama-3.1-8B-Instruct`) the release's name, which the
/// engine counts as its base. `None` when the id is no preset's. A server that reads no files
/// a request names (`llmsize serve`) turns ids into names with it, so an id that is also a
/// relative path is never read from its disk.
#[must_use]
pub fn preset_for_repo_id(id: &str) -> Option<String> {
    if let Some(p) = llmsize_adapters::presets::find(id) {
        return Some(p.id.to_owned());
    }
    let (_, repo) = id.split_once('/')?;
    (llmsize_adapters::presets::find_tuned(id).is_some()
        && llmsize_adapters::presets::find_tuned(repo).is_some())
    .then(|| repo.to_owned())
}

/// The built-in presets with their sizes (`llmsize presets`).
pub fn presets() -> Result<Vec<PresetJson>, Error> {
    PRESETS
        .iter()
        .map(|p| {
            let spec = read_config(p.config, p.id, p.id, &ReadOptions::default())?;
            let c = count(&spec).map_err(Error::spec(p.id))?;
            Ok(PresetJson {
                id: p.id.to_owned(),
                hf_repo: p.hf_repo.map(str::to_owned),
                family: p.family.to_owned(),
                model_type: spec.model_type,
                total: c.total,
                active_per_token: c.active.map(|a| a.per_token),
            })
        })
        .collect()
}

/// Every model type read exactly (`llmsize presets --types`), from the registry that
/// dispatches.
#[must_use]
pub fn model_types() -> Vec<wire::ModelTypeJson> {
    llmsize_adapters::hf_config::model_type_infos()
        .into_iter()
        .map(|t| wire::ModelTypeJson {
            model_type: t.model_type.to_owned(),
            config_class: t.config_class.to_owned(),
            default_class: t.architecture.to_owned(),
            reader: if t.declarative { "block" } else { "code" }.to_owned(),
            group: t.group.to_owned(),
        })
        .collect()
}

/// The built-in GPUs (`llmsize gpus`).
#[must_use]
pub fn gpus() -> Vec<GpuJson> {
    GPUS.iter()
        .map(|g| GpuJson {
            name: g.name.to_owned(),
            memory_bytes: g.memory_bytes,
            memory_source: g.memory_source.to_owned(),
            bandwidth_bytes_per_s: g.bandwidth,
            peak_16bit_flops: g.peak_16bit,
            peak_fp8_flops: g.peak_fp8,
            source: g.source.to_owned(),
        })
        .collect()
}
