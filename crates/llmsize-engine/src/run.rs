//! The commands: a request in, a typed outcome out (with its warnings), nothing printed.

use llmsize_adapters::checkpoint::{self, Audit, Checkpoint, Summary};
use llmsize_adapters::presets::PRESETS;
use llmsize_adapters::{ReadOptions, read_config};
use llmsize_core::design::design_spec;
use llmsize_core::flops::{FlopsReport, flops as count_flops};
use llmsize_core::formats::{KvDtype, WeightFormat};
use llmsize_core::gpu::{self, GPUS, Gpu};
use llmsize_core::memory::{
    CachePolicy, MaxContext, MemoryOptions, MemoryReport, MlaCache, StorageLine, max_context,
    memory as core_memory, memory_with,
};
use llmsize_core::speed::{SpeedOptions, SpeedReport, speed};
use llmsize_core::{ModelSpec, ParamsReport, count};

use crate::Error;
use crate::hub::HubEnv;
use crate::request::{
    AuditRequest, FlopsRequest, HubOptions, InspectRequest, MemoryRequest, ParamsRequest, SweepAxis,
};
use crate::resolve::{Lookup, Model, Want, resolve_model};
use crate::wire::{
    self, AuditJson, Envelope, FlopsJson, GpuJson, InspectJson, MemoryJson, MemoryWire, Ordered,
    ParamsJson, ParamsWire, PresetJson,
};

/// Longest context `--max-context` searches.
const MAX_CONTEXT_SEARCH: u64 = 1 << 24;

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
        points: Vec<(u64, MemoryReport)>,
    },
}

/// The estimate of `memory`.
#[derive(Debug, Clone)]
pub struct MemoryOutcome {
    /// The model's name.
    pub name: String,
    /// The estimate.
    pub result: MemoryResult,
    /// Warnings.
    pub warnings: Vec<String>,
    /// The weight files measured, when the weights come from files.
    pub files: Option<FilesUsed>,
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

    /// `files used: …` and one `ignored: FILE (why)` line each, for a table.
    #[must_use]
    pub fn table(&self) -> String {
        let used: Vec<&str> = self.used.iter().map(String::as_str).collect();
        checkpoint::render::files_lines(&used, &self.ignored)
    }
}

impl MemoryOutcome {
    fn files_json(&self) -> Option<wire::FilesJson> {
        self.files
            .as_ref()
            .map(|f| wire::FilesJson::new(&f.used, &f.ignored))
    }

    /// False when a GPU was named and the model does not fit it (at any point of a sweep).
    #[must_use]
    pub fn fits(&self) -> bool {
        match &self.result {
            MemoryResult::Single { report, .. } => report.fits != Some(false),
            MemoryResult::Sweep { points, .. } => points.iter().all(|(_, r)| r.fits != Some(false)),
        }
    }

    /// The wire form: one object, or an array for a sweep (each point with `swept`).
    #[must_use]
    pub fn wire(&self) -> MemoryWire {
        match &self.result {
            MemoryResult::Single {
                report,
                max_context,
            } => {
                let mut j = MemoryJson::new(&self.name, report, *max_context);
                j.files = self.files_json();
                MemoryWire::One(Box::new(Envelope::new(j)))
            }
            MemoryResult::Sweep { axis, points } => MemoryWire::Sweep(
                points
                    .iter()
                    .map(|(v, r)| {
                        let mut j = MemoryJson::new(&self.name, r, None);
                        j.files = self.files_json();
                        j.swept = Some(Ordered(vec![(axis.as_str().to_owned(), *v)]));
                        Envelope::new(j)
                    })
                    .collect(),
            ),
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

/// Request → core options, validated in one place.
fn memory_options(req: &MemoryRequest) -> Result<MemoryOptions, Error> {
    let gpu = gpu_spec(req.gpu.as_deref())?;
    let count = gpu.map_or(1, |(_, n)| n);
    let tp = req.tp.unwrap_or(count);
    if tp == 0 {
        return Err(Error::bad_input(
            "`--tp 0` is out of range",
            "give the tensor-parallel degree, at least 1",
        ));
    }
    if gpu.is_some() && tp > count {
        return Err(Error::bad_input(
            format!("`--tp {tp}` is more than the {count} GPU(s) of `--gpu`"),
            "name as many GPUs as the tensor-parallel degree, e.g. `--gpu h100x8`",
        ));
    }
    Ok(MemoryOptions {
        format: weight_format(req.dtype.as_deref().unwrap_or("bf16"))?,
        seq_len: req.seq_len,
        batch: req.batch,
        kv_dtype: kv_dtype(&req.kv_dtype)?,
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
    })
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
    let buffer_bytes = summary
        .buffers
        .iter()
        .fold(0u64, |a, b| a.saturating_add(b.bytes));
    if buffer_bytes > 0 {
        lines.push(StorageLine {
            storage: BUFFER_STORAGE.into(),
            params: 0,
            bytes: buffer_bytes,
        });
    }
    if !summary.unknown.is_empty() {
        let (mut params, mut bytes) = (0u64, 0u64);
        for u in &summary.unknown {
            params = params.saturating_add(u.params);
            bytes = bytes.saturating_add(u.bytes);
        }
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

/// The storage line of saved tensors that are not parameters.
const BUFFER_STORAGE: &str = "buffers";

/// The storage line of tensors the name table does not place.
const OTHER_STORAGE: &str = "other";

pub(crate) fn memory(req: &MemoryRequest, env: &HubEnv) -> Result<MemoryOutcome, Error> {
    let mut warnings = Vec::new();
    let (spec, model) = read_model(
        &req.model,
        &ReadOptions {
            overrides: req.overrides.clone(),
            assume: req.assume.clone(),
            text_only: req.text_only,
            ..ReadOptions::default()
        },
        &req.hub,
        Want::IfPresent,
        env,
        &mut warnings,
    )?;
    let mut options = memory_options(req)?;
    let images = image_positions(&spec, req.images, req.image_tokens)?;
    let extra = images.as_ref().map_or(0, |(n, _)| *n);
    if images.is_some() && req.max_context {
        return Err(Error::bad_input(
            "`--max-context` with `--images`",
            "ask for the longest context without images, or add the images' positions to `--seq-len`",
        ));
    }
    options.seq_len = with_images(options.seq_len, extra)?;
    // Weight files, when the model has them, are measured rather than estimated.
    let mut files_used = None;
    let from_files = match &model.weights {
        None => None,
        Some(w) => {
            let checkpoint = w.checkpoint()?;
            warnings.extend(
                checkpoint
                    .file_problems
                    .iter()
                    .map(|p| format!("{}: {p}", spec.name)),
            );
            files_used = Some(FilesUsed::of(&checkpoint));
            Some(storage_lines(&checkpoint, &spec.name, &mut warnings)?)
        }
    };
    let files = from_files.as_deref();
    if files.is_some() && req.dtype.is_some() {
        warnings
            .push("`--dtype` is ignored: the weights are measured from the files as stored".into());
    }
    let wrap = Error::spec;
    let result = if let Some(sweep) = &req.sweep {
        let mut points = Vec::with_capacity(sweep.values.len());
        for &v in &sweep.values {
            let o = match sweep.axis {
                SweepAxis::Batch => MemoryOptions {
                    batch: v,
                    ..options
                },
                SweepAxis::SeqLen => MemoryOptions {
                    seq_len: v.saturating_add(extra),
                    ..options
                },
            };
            let mut report = memory_with(&spec, &o, files).map_err(wrap(&spec.name))?;
            if let Some((_, note)) = &images {
                report.assumptions.push(note.clone());
            }
            points.push((v, report));
        }
        MemoryResult::Sweep {
            axis: sweep.axis,
            points,
        }
    } else {
        let mut report = memory_with(&spec, &options, files).map_err(wrap(&spec.name))?;
        if let Some((_, note)) = &images {
            report.assumptions.push(note.clone());
        }
        let longest = if req.max_context {
            if options.gpu.is_none() {
                return Err(Error::bad_input(
                    "`--max-context` needs a GPU",
                    "name one with `--gpu`, e.g. `--gpu rtx4090`",
                ));
            }
            Some(
                max_context(&spec, &options, files, MAX_CONTEXT_SEARCH)
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
    Ok(MemoryOutcome {
        name: spec.name,
        result,
        warnings,
        files: files_used,
    })
}

// ---------------------------------------------------------------------------------------
// flops

/// The counts of `flops`.
#[derive(Debug, Clone)]
pub struct FlopsOutcome {
    /// The model's name.
    pub name: String,
    /// FLOPs by component.
    pub report: FlopsReport,
    /// The speed estimate, when a GPU was named.
    pub speed: Option<SpeedReport>,
    /// Warnings.
    pub warnings: Vec<String>,
}

impl FlopsOutcome {
    /// The wire form.
    #[must_use]
    pub fn wire(&self) -> Envelope<FlopsJson> {
        Envelope::new(FlopsJson::new(
            &self.name,
            &self.report,
            self.speed.as_ref(),
        ))
    }

    /// `--json`.
    pub fn to_json(&self) -> Result<String, Error> {
        wire::to_pretty(&self.wire())
    }
}

pub(crate) fn flops(req: &FlopsRequest, env: &HubEnv) -> Result<FlopsOutcome, Error> {
    let mut warnings = Vec::new();
    let (spec, _) = read_model(
        &req.model,
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
    for (flag, v) in [("--mfu", req.mfu), ("--bw-eff", req.bw_eff)] {
        if !(v > 0.0 && v <= 1.0) {
            return Err(Error::bad_input(
                format!("`{flag} {v}` is out of range"),
                "give a fraction in (0, 1], e.g. 0.5",
            ));
        }
    }
    // Validate every option up front, even those only the speed estimate uses.
    let format = weight_format(&req.dtype)?;
    let kv = kv_dtype(&req.kv_dtype)?;
    let wrap = Error::spec;
    let images = image_positions(&spec, req.images, req.image_tokens)?;
    let seq_len = match &images {
        None => req.seq_len,
        Some((extra, note)) => {
            warnings.push(format!("{}: {note}", spec.name));
            with_images(req.seq_len, *extra)?
        }
    };
    let report = count_flops(&spec, seq_len, req.batch, req.attention).map_err(wrap(&spec.name))?;
    let speed_report = match gpu_spec(req.gpu.as_deref())? {
        None => None,
        Some((gpu, count)) => {
            let mem = core_memory(
                &spec,
                &MemoryOptions {
                    format,
                    seq_len,
                    batch: req.batch,
                    kv_dtype: kv,
                    tp: count,
                    gpu: Some((gpu, count)),
                    mla: MlaCache::Latent,
                    window: CachePolicy::Transformers,
                    overhead_bytes: 0,
                },
            )
            .map_err(wrap(&spec.name))?;
            Some(
                speed(
                    &spec,
                    &mem,
                    &report,
                    SpeedOptions {
                        gpu,
                        gpus: count,
                        mfu: req.mfu,
                        bandwidth_efficiency: req.bw_eff,
                    },
                )
                .map_err(wrap(&spec.name))?,
            )
        }
    };
    Ok(FlopsOutcome {
        name: spec.name,
        report,
        speed: speed_report,
        warnings,
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
    /// The table.
    #[must_use]
    pub fn table(&self) -> String {
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

    /// The table.
    #[must_use]
    pub fn table(&self) -> String {
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
