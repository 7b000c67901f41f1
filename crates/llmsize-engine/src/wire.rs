//! The JSON contract: dedicated serialization types, separate from the core's report types,
//! so that the wire format changes only on purpose.
//!
//! ## Wire format (`schema_version` 1)
//!
//! Every report object (`params`, `memory`, `flops`, `inspect`, `audit`) is wrapped in an
//! [`Envelope`], which writes `schema_version` ([`SCHEMA_VERSION`]) first, then the report's
//! keys in a fixed order. Several `params` models, and a `memory --sweep`, are JSON arrays of
//! such objects. Integers are exact (counts are `u64`, FLOPs `u128`); bytes are plain bytes.
//! The lists of `presets` and `gpus` are bare arrays of rows, without a version.
//!
//! - `params`: `name`, `source`, `model_type`, `architecture`, `hidden_size`, `vocab_size`,
//!   `exact`, `estimate_basis` (when not exact), `total`, `non_embedding`,
//!   `tied_embeddings`, `components` (the 17 categories, all present), `formulas` (the same keys, each the symbolic formula), `stacks`, `estimates`,
//!   `assumptions`, `warnings`; MoE only: `active_per_token`,
//!   `active_per_token_excl_token_embedding`; vision-language and audio models only:
//!   `modalities` (`text`, `vision`, `audio`).
//! - every report carries `exact` (false when the model type was assumed with `--assume`,
//!   and then `estimate_basis` says what was assumed).
//! - `memory`: the options, `params`, `weights_bytes` and lines, the KV cache by group,
//!   activations, overhead, per-GPU and total bytes, `fits`, `assumptions`; `gpu` with a GPU;
//!   `max_context` and `max_context_bound` with `--max-context`; `swept` in a sweep.
//! - `flops`: the options, `forward` and `per_token` lines with their totals, the parameter
//!   counts, the article's 2·P and 6·P; `speed` with a GPU.
//! - `inspect` and `audit`: the checkpoint's count by component and dtype, buffers apart;
//!   the audit's two counts and explained differences.

use std::collections::BTreeMap;

use llmsize_adapters::checkpoint::{Audit, Checkpoint, Entry, Format, Ignored, Summary};
use llmsize_core::flops::{FlopsLine, FlopsReport};
use llmsize_core::memory::{MaxContext, MemoryReport};
use llmsize_core::speed::SpeedReport;
use llmsize_core::{Category, ParamsReport};
use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};

/// The version of the JSON contract, written once, by [`Envelope`].
pub const SCHEMA_VERSION: u32 = 1;

/// A report object with `schema_version` first.
#[derive(Debug, Clone, Serialize)]
pub struct Envelope<T> {
    /// Always [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The report's own keys.
    #[serde(flatten)]
    pub report: T,
}

impl<T> Envelope<T> {
    /// Wrap a report.
    pub fn new(report: T) -> Self {
        Envelope {
            schema_version: SCHEMA_VERSION,
            report,
        }
    }
}

/// Pretty JSON with a final newline, as every `--json` prints.
pub fn to_pretty(value: &impl Serialize) -> Result<String, crate::Error> {
    let mut s = serde_json::to_string_pretty(value).map_err(|e| crate::Error::Internal {
        message: format!("the JSON report: {e}"),
    })?;
    s.push('\n');
    Ok(s)
}

/// A JSON object whose keys keep the order given (serde's maps would sort or hash them).
#[derive(Debug, Clone, PartialEq)]
pub struct Ordered<V>(pub Vec<(String, V)>);

impl<V: Serialize> Serialize for Ordered<V> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// Every category, in [`Category::ALL`] order, zeros included.
fn all_components(map: &BTreeMap<Category, u64>) -> Ordered<u64> {
    Ordered(
        Category::ALL
            .iter()
            .map(|c| (c.as_str().to_owned(), map.get(c).copied().unwrap_or(0)))
            .collect(),
    )
}

// ---------------------------------------------------------------------------------------
// params

/// `params --json`: one model.
#[derive(Debug, Clone, Serialize)]
pub struct ParamsJson {
    /// Display name.
    pub name: String,
    /// Where the config came from (a path, `preset …`, the Hub).
    pub source: String,
    /// The config's `model_type`.
    pub model_type: String,
    /// The class counted (`LlamaForCausalLM`).
    pub architecture: String,
    /// d.
    pub hidden_size: u64,
    /// V.
    pub vocab_size: u64,
    /// True when every number is exact for this model type.
    pub exact: bool,
    /// When not exact: what was assumed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub estimate_basis: Option<String>,
    /// Every parameter, a tied matrix once.
    pub total: u64,
    /// Total minus the embedding tables.
    pub non_embedding: u64,
    /// Whether the output head shares the token table (none: no head).
    pub tied_embeddings: Option<bool>,
    /// Parameters by category.
    pub components: Ordered<u64>,
    /// The symbolic formula of each category.
    pub formulas: Ordered<String>,
    /// Parameters by stack (encoder, decoder).
    pub stacks: Vec<StackJson>,
    /// The article's estimates next to the exact count.
    pub estimates: Vec<EstimateJson>,
    /// Values filled in from a class default.
    pub assumptions: Vec<AssumptionJson>,
    /// Warnings about the config.
    pub warnings: Vec<String>,
    /// MoE: parameters one token passes through.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub active_per_token: Option<u64>,
    /// MoE: the same without the token table.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub active_per_token_excl_token_embedding: Option<u64>,
    /// Vision-language and audio models: the text model (embeddings and head included), the
    /// vision tower with its projector, the audio tower.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub modalities: Option<ModalitiesJson>,
}

/// The split of a multimodal model.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct ModalitiesJson {
    /// Everything a text token uses.
    pub text: u64,
    /// Vision towers and projectors.
    pub vision: u64,
    /// Audio towers and projectors.
    pub audio: u64,
}

/// `params --json`: one object, or an array for several models.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum ParamsWire {
    /// One model.
    One(Box<Envelope<ParamsJson>>),
    /// Several models, in the order asked.
    Many(Vec<Envelope<ParamsJson>>),
}

/// One stack's parameters.
#[derive(Debug, Clone, Serialize)]
pub struct StackJson {
    /// `encoder` or `decoder`.
    pub role: String,
    /// Its layers.
    pub layers: u64,
    /// Its parameters.
    pub params: u64,
}

/// An estimate with its formula.
#[derive(Debug, Clone, Serialize)]
pub struct EstimateJson {
    /// Which estimate.
    pub key: String,
    /// Its formula.
    pub formula: String,
    /// Its value.
    pub value: u64,
    /// Who uses it.
    pub source: String,
}

/// A value assumed from a default.
#[derive(Debug, Clone, Serialize)]
pub struct AssumptionJson {
    /// The config key or flag.
    pub field: String,
    /// The value used.
    pub value: String,
    /// Why.
    pub reason: String,
}

impl From<&ParamsReport> for ParamsJson {
    fn from(report: &ParamsReport) -> Self {
        let c = &report.count;
        ParamsJson {
            name: report.name.clone(),
            source: report.source.clone(),
            model_type: report.model_type.clone(),
            architecture: report.architecture.clone(),
            hidden_size: report.hidden_size,
            vocab_size: report.vocab_size,
            exact: report.estimate.is_none(),
            estimate_basis: report.estimate.clone(),
            total: c.total,
            non_embedding: c.non_embedding(),
            tied_embeddings: report.tied_embeddings,
            components: Ordered(
                c.components
                    .iter()
                    .map(|comp| (comp.category.as_str().to_owned(), comp.count))
                    .collect(),
            ),
            formulas: Ordered(
                c.components
                    .iter()
                    .map(|comp| (comp.category.as_str().to_owned(), comp.formula.symbolic()))
                    .collect(),
            ),
            stacks: c
                .stacks
                .iter()
                .map(|s| StackJson {
                    role: s.role.as_str().to_owned(),
                    layers: s.layers,
                    params: s.params,
                })
                .collect(),
            estimates: report
                .estimates
                .iter()
                .map(|e| EstimateJson {
                    key: e.key.to_owned(),
                    formula: e.formula.symbolic(),
                    value: e.value,
                    source: e.source.to_owned(),
                })
                .collect(),
            assumptions: report
                .assumptions
                .iter()
                .map(|a| AssumptionJson {
                    field: a.field.clone(),
                    value: a.value.clone(),
                    reason: a.reason.clone(),
                })
                .collect(),
            warnings: report.warnings.clone(),
            active_per_token: c.active.as_ref().map(|a| a.per_token),
            active_per_token_excl_token_embedding: c
                .active
                .as_ref()
                .map(|a| a.per_token_excl_token_embedding),
            modalities: {
                let (vision, audio) = (c.get(Category::Vision), c.get(Category::Audio));
                (vision > 0 || audio > 0).then(|| ModalitiesJson {
                    // vision + audio ≤ total: they are two of its components.
                    text: c.total.saturating_sub(vision).saturating_sub(audio),
                    vision,
                    audio,
                })
            },
        }
    }
}

// ---------------------------------------------------------------------------------------
// memory

/// `memory --json`: one configuration (or one point of a sweep).
#[derive(Debug, Clone, Serialize)]
pub struct MemoryJson {
    /// Display name.
    pub name: String,
    /// The weight format, or `files` when measured from weight files.
    pub format: String,
    /// Tokens per sequence.
    pub seq_len: u64,
    /// Sequences.
    pub batch: u64,
    /// KV cache element type.
    pub kv_dtype: String,
    /// Tensor-parallel degree.
    pub tp: u64,
    /// True when the model's structure is known exactly (the weights and caches are then
    /// exact; activations and overhead are always estimates, see `assumptions`).
    pub exact: bool,
    /// When not exact: what was assumed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub estimate_basis: Option<String>,
    /// Parameters.
    pub params: u64,
    /// Bytes of the weights.
    pub weights_bytes: u64,
    /// Weights by storage.
    pub weights: Vec<StorageJson>,
    /// Bytes of the KV cache.
    pub kv_cache_bytes: u64,
    /// KV cache bytes per token, every layer at full length.
    pub kv_cache_bytes_per_token: u64,
    /// The KV cache by group of layers.
    pub kv_cache: Vec<KvJson>,
    /// Convolution and recurrent states of state-space / linear-attention layers, bytes
    /// (all sequences; they do not grow with the context).
    pub state_bytes: u64,
    /// Their formula, when the model keeps any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state_formula: Option<String>,
    /// Activation workspace.
    pub activation_bytes: u64,
    /// Runtime overhead per GPU.
    pub overhead_bytes: u64,
    /// Weights on each GPU.
    pub weights_bytes_per_gpu: u64,
    /// KV cache on each GPU.
    pub kv_cache_bytes_per_gpu: u64,
    /// Everything on each GPU.
    pub per_gpu_bytes: u64,
    /// Everything, all GPUs.
    pub total_bytes: u64,
    /// Whether it fits the GPU (none without one).
    pub fits: Option<bool>,
    /// The assumptions of the estimate.
    pub assumptions: Vec<String>,
    /// The GPU, when one is named.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu: Option<GpuUsedJson>,
    /// `--max-context`: the longest context that fits (null: not even one token).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_context: Option<Option<u64>>,
    /// `--max-context`: what bounds it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_context_bound: Option<Option<String>>,
    /// In a sweep: the swept option and its value here.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub swept: Option<Ordered<u64>>,
    /// The weight files measured (when the weights come from files) and those not read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub files: Option<FilesJson>,
}

/// Weight files read and not read.
#[derive(Debug, Clone, Serialize)]
pub struct FilesJson {
    /// The files read.
    pub used: Vec<String>,
    /// Weight files beside them that were not read.
    pub ignored: Vec<IgnoredJson>,
}

/// A weight file not read.
#[derive(Debug, Clone, Serialize)]
pub struct IgnoredJson {
    /// The file.
    pub file: String,
    /// Why it was not read.
    pub why: String,
}

impl IgnoredJson {
    fn all(ignored: &[Ignored]) -> Vec<Self> {
        ignored
            .iter()
            .map(|i| IgnoredJson {
                file: i.file.clone(),
                why: i.why.clone(),
            })
            .collect()
    }
}

impl FilesJson {
    /// The JSON of the files of a memory answer.
    #[must_use]
    pub fn new(used: &[String], ignored: &[Ignored]) -> Self {
        FilesJson {
            used: used.to_vec(),
            ignored: IgnoredJson::all(ignored),
        }
    }
}

/// `memory --json`: one object, or an array for a sweep.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum MemoryWire {
    /// One configuration.
    One(Box<Envelope<MemoryJson>>),
    /// A sweep: one object per value, each with `swept`.
    Sweep(Vec<Envelope<MemoryJson>>),
}

/// Weights in one storage format.
#[derive(Debug, Clone, Serialize)]
pub struct StorageJson {
    /// The storage (`bf16`, `Q4_K`, …).
    pub storage: String,
    /// Parameters stored so.
    pub params: u64,
    /// Their bytes.
    pub bytes: u64,
}

/// The KV cache of a group of layers.
#[derive(Debug, Clone, Serialize)]
pub struct KvJson {
    /// The stack.
    pub stack: String,
    /// Layers in the group.
    pub layers: u64,
    /// What is cached.
    pub what: String,
    /// Elements per token and layer.
    pub elements_per_token: u64,
    /// Tokens kept.
    pub tokens: u64,
    /// Bytes.
    pub bytes: u64,
    /// Bytes on each GPU.
    pub bytes_per_gpu: u64,
}

/// The GPU a memory estimate is for.
#[derive(Debug, Clone, Serialize)]
pub struct GpuUsedJson {
    /// Its name.
    pub name: String,
    /// How many.
    pub count: u64,
    /// Memory of one.
    pub memory_bytes: u64,
    /// Where the memory figure comes from.
    pub source: String,
}

impl MemoryJson {
    /// The JSON of a report; `max_context` when it was asked for.
    #[must_use]
    pub fn new(name: &str, r: &MemoryReport, max_context: Option<Option<MaxContext>>) -> Self {
        let o = &r.options;
        MemoryJson {
            name: name.to_owned(),
            format: if r.weights_from_files {
                "files"
            } else {
                o.format.name()
            }
            .to_owned(),
            seq_len: o.seq_len,
            batch: o.batch,
            kv_dtype: o.kv_dtype.name().to_owned(),
            tp: o.tp,
            exact: r.estimate.is_none(),
            estimate_basis: r.estimate.clone(),
            params: r.params,
            weights_bytes: r.weights_bytes,
            weights: r
                .weights
                .iter()
                .map(|l| StorageJson {
                    storage: l.storage.clone(),
                    params: l.params,
                    bytes: l.bytes,
                })
                .collect(),
            kv_cache_bytes: r.kv_bytes,
            kv_cache_bytes_per_token: r.kv_bytes_per_token_full,
            kv_cache: r
                .kv
                .iter()
                .map(|g| KvJson {
                    stack: g.stack.as_str().to_owned(),
                    layers: g.layers,
                    what: g.what.clone(),
                    elements_per_token: g.elements_per_token,
                    tokens: g.tokens,
                    bytes: g.bytes,
                    bytes_per_gpu: g.bytes_per_gpu,
                })
                .collect(),
            state_bytes: r.state_bytes,
            state_formula: r.state_formula.clone(),
            activation_bytes: r.activation_bytes,
            overhead_bytes: o.overhead_bytes,
            weights_bytes_per_gpu: r.weights_per_gpu,
            kv_cache_bytes_per_gpu: r.kv_per_gpu,
            per_gpu_bytes: r.per_gpu,
            total_bytes: r.total,
            fits: r.fits,
            assumptions: r.assumptions.clone(),
            gpu: o.gpu.map(|(gpu, count)| GpuUsedJson {
                name: gpu.name.to_owned(),
                count,
                memory_bytes: gpu.memory_bytes,
                source: gpu.memory_source.to_owned(),
            }),
            max_context: max_context.map(|mc| mc.map(|m| m.tokens)),
            max_context_bound: max_context.map(|mc| mc.map(|m| m.bound.to_owned())),
            swept: None,
            files: None,
        }
    }
}

// ---------------------------------------------------------------------------------------
// flops

/// The convention every FLOP count follows.
pub const FLOPS_CONVENTION: &str = "multiply-add = 2 FLOPs; embedding lookups, norms, activations, softmax, biases = 0; output head included";

/// `flops --json`.
#[derive(Debug, Clone, Serialize)]
pub struct FlopsJson {
    /// Display name.
    pub name: String,
    /// Tokens per sequence.
    pub seq_len: u64,
    /// Sequences.
    pub batch: u64,
    /// `causal` or `full`.
    pub attention: String,
    /// [`FLOPS_CONVENTION`].
    pub convention: String,
    /// True when the model's structure is known exactly.
    pub exact: bool,
    /// When not exact: what was assumed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub estimate_basis: Option<String>,
    /// FLOPs of a forward pass over every sequence.
    pub forward_flops: u128,
    /// The forward pass by component.
    pub forward: Vec<FlopsLineJson>,
    /// FLOPs of one generated token.
    pub per_token_flops: u128,
    /// One token by component.
    pub per_token: Vec<FlopsLineJson>,
    /// Parameters.
    pub params: u64,
    /// Parameters active per token.
    pub active_params: u64,
    /// Parameters in matrix products per token.
    pub matmul_params_per_token: u64,
    /// 2·P.
    pub estimate_2p_per_token: u128,
    /// 6·P.
    pub estimate_6p_per_training_token: u128,
    /// Speed on a GPU, when one is named.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speed: Option<SpeedJson>,
}

/// One component's FLOPs.
#[derive(Debug, Clone, Serialize)]
pub struct FlopsLineJson {
    /// The component.
    pub key: String,
    /// FLOPs.
    pub flops: u128,
    /// The formula with its numbers.
    pub formula: String,
}

/// The roofline speed estimate.
#[derive(Debug, Clone, Serialize)]
pub struct SpeedJson {
    /// The GPU.
    pub gpu: String,
    /// How many.
    pub gpus: u64,
    /// Model FLOPs utilisation assumed.
    pub mfu: f64,
    /// Fraction of peak bandwidth assumed.
    pub bandwidth_efficiency: f64,
    /// Peak FLOP/s of all GPUs.
    pub peak_flops: f64,
    /// Seconds for the prefill.
    pub prefill_seconds: f64,
    /// Bytes one decode step reads.
    pub decode_bytes_per_step: u64,
    /// FLOPs of one decode step.
    pub decode_flops_per_step: u128,
    /// Seconds per decode step.
    pub decode_step_seconds: f64,
    /// `memory` or `compute`.
    pub decode_bound: String,
    /// Generated tokens per second, all sequences.
    pub decode_tokens_per_second: f64,
    /// Whether the model fits.
    pub fits: Option<bool>,
    /// Memory on each GPU.
    pub memory_per_gpu_bytes: u64,
    /// The assumptions of the estimate.
    pub assumptions: Vec<String>,
}

fn flops_lines(lines: &[FlopsLine]) -> Vec<FlopsLineJson> {
    lines
        .iter()
        .map(|l| FlopsLineJson {
            key: l.key.to_owned(),
            flops: l.flops,
            formula: l.formula.clone(),
        })
        .collect()
}

impl FlopsJson {
    /// The JSON of a report, with its speed estimate when a GPU was named.
    #[must_use]
    pub fn new(name: &str, r: &FlopsReport, speed: Option<&SpeedReport>) -> Self {
        FlopsJson {
            name: name.to_owned(),
            seq_len: r.seq_len,
            batch: r.batch,
            attention: r.convention.name().to_owned(),
            convention: FLOPS_CONVENTION.to_owned(),
            exact: r.estimate.is_none(),
            estimate_basis: r.estimate.clone(),
            forward_flops: r.forward_flops,
            forward: flops_lines(&r.forward),
            per_token_flops: r.per_token_flops,
            per_token: flops_lines(&r.per_token),
            params: r.params,
            active_params: r.active_params,
            matmul_params_per_token: r.matmul_params,
            estimate_2p_per_token: 2 * u128::from(r.params),
            estimate_6p_per_training_token: 6 * u128::from(r.params),
            speed: speed.map(|s| SpeedJson {
                gpu: s.options.gpu.name.to_owned(),
                gpus: s.options.gpus,
                mfu: s.options.mfu,
                bandwidth_efficiency: s.options.bandwidth_efficiency,
                peak_flops: s.peak,
                prefill_seconds: s.prefill_seconds,
                decode_bytes_per_step: s.decode_bytes,
                decode_flops_per_step: s.decode_flops,
                decode_step_seconds: s.decode_step_seconds,
                decode_bound: s.decode_bound.to_owned(),
                decode_tokens_per_second: s.decode_tokens_per_second,
                fits: s.fits,
                memory_per_gpu_bytes: s.memory_per_gpu,
                assumptions: s.assumptions.clone(),
            }),
        }
    }
}

// ---------------------------------------------------------------------------------------
// inspect and audit

/// `inspect --json`.
#[derive(Debug, Clone, Serialize)]
pub struct InspectJson {
    /// Display name.
    pub name: String,
    /// `safetensors` or `gguf`.
    pub format: String,
    /// True when every tensor's category is known (the counts are then the files' own);
    /// false when some names matched no rule (listed under `unknown`, out of `total`).
    pub exact: bool,
    /// The files read and their lengths.
    pub files: Vec<FileJson>,
    /// Weight files beside them that were not read, and why.
    pub ignored: Vec<IgnoredJson>,
    /// Where the files disagree with their index (an index naming tensors no shard holds, a
    /// wrong `metadata.total_size`).
    pub index_disagreements: Vec<String>,
    /// Parameters (buffers and unknown names excluded).
    pub total: u64,
    /// Parameters by category.
    pub components: Ordered<u64>,
    /// Bytes by category.
    pub component_bytes: Ordered<u64>,
    /// Bytes of the parameters.
    pub parameter_bytes: u64,
    /// Bits per parameter.
    pub bits_per_weight: f64,
    /// Parameters and bytes by stored type.
    pub by_dtype: Vec<DtypeJson>,
    /// Tensors that are not parameters.
    pub buffers: Vec<TensorJson>,
    /// Elements of the buffers.
    pub buffer_elements: u64,
    /// Tensors no rule places.
    pub unknown: Vec<TensorJson>,
    /// Notable metadata, as text.
    pub metadata: Ordered<String>,
}

/// A file and its length.
#[derive(Debug, Clone, Serialize)]
pub struct FileJson {
    /// The file.
    pub file: String,
    /// Its length.
    pub bytes: u64,
}

/// A stored type's share.
#[derive(Debug, Clone, Serialize)]
pub struct DtypeJson {
    /// The stored type.
    pub dtype: String,
    /// Parameters.
    pub params: u64,
    /// Bytes.
    pub bytes: u64,
}

/// A tensor outside the count.
#[derive(Debug, Clone, Serialize)]
pub struct TensorJson {
    /// Its name.
    pub name: String,
    /// Its stored type.
    pub dtype: &'static str,
    /// Its shape.
    pub shape: Vec<u64>,
    /// Its elements.
    pub elements: u64,
    /// Its bytes.
    pub bytes: u64,
}

impl From<&Entry> for TensorJson {
    fn from(e: &Entry) -> Self {
        TensorJson {
            name: e.name.clone(),
            dtype: e.dtype,
            shape: e.shape.clone(),
            elements: e.params,
            bytes: e.bytes,
        }
    }
}

#[expect(clippy::cast_precision_loss, reason = "a ratio for display")]
fn bits_per_weight(bytes: u64, params: u64) -> f64 {
    bytes as f64 * 8.0 / params.max(1) as f64
}

impl InspectJson {
    /// The JSON of a checkpoint's count.
    pub fn new(name: &str, c: &Checkpoint, s: &Summary) -> Self {
        InspectJson {
            name: name.to_owned(),
            format: match c.format {
                Format::Safetensors => "safetensors",
                Format::Gguf => "gguf",
            }
            .to_owned(),
            exact: s.unknown.is_empty(),
            files: c
                .files
                .iter()
                .map(|(f, l)| FileJson {
                    file: f.clone(),
                    bytes: *l,
                })
                .collect(),
            ignored: IgnoredJson::all(&c.ignored),
            index_disagreements: c.file_problems.clone(),
            total: s.total,
            components: all_components(&s.components),
            component_bytes: all_components(&s.component_bytes),
            parameter_bytes: s.param_bytes,
            bits_per_weight: bits_per_weight(s.param_bytes, s.total),
            by_dtype: s
                .by_dtype
                .iter()
                .map(|(d, (p, b))| DtypeJson {
                    dtype: d.clone(),
                    params: *p,
                    bytes: *b,
                })
                .collect(),
            buffers: s.buffers.iter().map(TensorJson::from).collect(),
            buffer_elements: s.buffers.iter().map(|b| b.params).sum(),
            unknown: s.unknown.iter().map(TensorJson::from).collect(),
            metadata: Ordered(c.metadata.clone()),
        }
    }
}

/// `audit --json`.
#[derive(Debug, Clone, Serialize)]
pub struct AuditJson {
    /// Display name.
    pub name: String,
    /// True when the config's model type is read exactly (an audit never assumes one).
    pub exact: bool,
    /// Whether every category agrees.
    pub agrees: bool,
    /// The config-based total.
    pub config_total: u64,
    /// The tensor-based total.
    pub tensor_total: u64,
    /// Config-based, by category.
    pub config_components: Ordered<u64>,
    /// Tensor-based, by category.
    pub tensor_components: Ordered<u64>,
    /// Disagreements, explained.
    pub differences: Vec<DifferenceJson>,
    /// Buffers in the files.
    pub buffers: Vec<BufferJson>,
    /// Names of tensors no rule places.
    pub unknown: Vec<String>,
    /// Where the files disagree with their index (each makes `agrees` false).
    pub index_disagreements: Vec<String>,
}

/// One disagreeing category.
#[derive(Debug, Clone, Serialize)]
pub struct DifferenceJson {
    /// The category.
    pub category: String,
    /// From the config.
    pub config: u64,
    /// From the tensors.
    pub tensors: u64,
    /// What explains it.
    pub explanation: String,
    /// Tensors involved.
    pub names: Vec<String>,
}

/// A buffer and its elements.
#[derive(Debug, Clone, Serialize)]
pub struct BufferJson {
    /// Its name.
    pub name: String,
    /// Its elements.
    pub elements: u64,
}

impl AuditJson {
    /// The JSON of an audit.
    #[must_use]
    pub fn new(name: &str, a: &Audit) -> Self {
        AuditJson {
            name: name.to_owned(),
            exact: true,
            agrees: a.agrees(),
            config_total: a.config_total,
            tensor_total: a.summary.total,
            config_components: all_components(&a.config),
            tensor_components: all_components(&a.summary.components),
            differences: a
                .differences
                .iter()
                .map(|d| DifferenceJson {
                    category: d.category.as_str().to_owned(),
                    config: d.config,
                    tensors: d.tensors,
                    explanation: d.explanation.clone(),
                    names: d.names.clone(),
                })
                .collect(),
            buffers: a
                .summary
                .buffers
                .iter()
                .map(|b| BufferJson {
                    name: b.name.clone(),
                    elements: b.params,
                })
                .collect(),
            unknown: a.summary.unknown.iter().map(|u| u.name.clone()).collect(),
            index_disagreements: a.file_problems.clone(),
        }
    }
}

// ---------------------------------------------------------------------------------------
// lists

/// A row of `presets --json`.
#[derive(Debug, Clone, Serialize)]
pub struct PresetJson {
    /// The preset's id.
    pub id: String,
    /// Its Hub repository.
    pub hf_repo: Option<String>,
    /// `decoder`, `moe`, `encoder` or `seq2seq`.
    pub family: String,
    /// Its `model_type`.
    pub model_type: String,
    /// Parameters.
    pub total: u64,
    /// MoE: active per token.
    pub active_per_token: Option<u64>,
}

/// A row of `presets --types --json`: a model type read exactly.
#[derive(Debug, Clone, Serialize)]
pub struct ModelTypeJson {
    /// The `model_type`.
    pub model_type: String,
    /// Its transformers configuration class.
    pub config_class: String,
    /// The class counted when the config's `architectures` names none.
    pub default_class: String,
    /// `block` (the generic decoder block with switches) or `code` (a reader of its own).
    pub reader: String,
    /// The family group it belongs to.
    pub group: String,
}

/// A row of `gpus --json`.
#[derive(Debug, Clone, Serialize)]
pub struct GpuJson {
    /// The name.
    pub name: String,
    /// Memory.
    pub memory_bytes: u64,
    /// Where the memory figure comes from.
    pub memory_source: String,
    /// Bytes per second.
    pub bandwidth_bytes_per_s: f64,
    /// Dense 16-bit FLOP/s.
    pub peak_16bit_flops: f64,
    /// Dense fp8 FLOP/s, if any.
    pub peak_fp8_flops: Option<f64>,
    /// Where the figures come from.
    pub source: String,
}
