//! `llmsize design`: resolve the model to resize (`--like`: a preset, a `config.json`, its
//! JSON text, a cached Hub repo), run the search of `llmsize-design`, and give the outcome
//! with its JSON contract:
//! `{"evaluated": N, "candidates": [{"config": {…}, "total": n, "command": "llmsize params …"}, …]}`.

use llmsize_adapters::hf_config::parse_json;
use llmsize_adapters::presets;
use llmsize_core::checked::Checked;
use llmsize_design::{Base, Constraints, DesignError, DesignStyle, Goal, Quantity};
use llmsize_train::TrainOptions;
use llmsize_train::parallel::Parallelism;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::resolve::{Lookup, Want, resolve_model};
use crate::{Error, HubEnv, HubOptions};

pub use llmsize_design::optimal::Rule as OptimalRule;
pub use llmsize_design::{Candidate, FfnRule, KvChoice, Outcome as DesignResult};

/// What to resize.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DesignBase {
    /// A real model (`--like MODEL`).
    Like(String),
    /// A block style (`--style`).
    Style(DesignStyle),
}

/// `llmsize design`.
#[derive(Debug, Clone)]
pub struct DesignRequest {
    /// What to resize.
    pub base: DesignBase,
    /// The target; `None` with `--like MODEL`: the model's own total, to three digits.
    pub goal: Option<Goal>,
    /// Relative tolerance of a parameter target.
    pub tolerance: f64,
    /// Constraints.
    pub constraints: Constraints,
    /// Candidates.
    pub top: usize,
    /// Context of the KV cache and FLOPs per token.
    pub ctx: u64,
    /// Where Hub repo ids are looked up.
    pub hub: HubOptions,
    /// The training step of `--train-memory` (`Goal::TrainMemory`'s options are built from
    /// it, as `llmsize train` builds them from the same flags).
    pub train: DesignTrain,
}

/// The training step `--train-memory` measures, as `llmsize train`'s flags; the defaults are
/// `train`'s (bf16 parameters, `pure` precision, `AdamW`, micro-batch 1, no checkpointing).
/// The sequence is the design's `--ctx`; tensor and pipeline parallelism its `--tp`, `--pp`.
#[allow(
    clippy::struct_excessive_bools,
    reason = "each is a flag of the command"
)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DesignTrain {
    /// Sequences per micro-batch per GPU.
    pub batch: u64,
    /// The parameters' dtype: `bf16`, `fp16`, `fp32`.
    pub dtype: String,
    /// `pure`, `mixed`, `mixed-fp32-grads`, `autocast`.
    pub precision: String,
    /// The optimizer.
    pub optimizer: String,
    /// Gradient checkpointing.
    pub checkpointing: bool,
    /// LoRA rank (all linear layers), on a frozen base.
    pub lora_rank: Option<u64>,
    /// `QLoRA`: the frozen base in NF4 with double quantization.
    pub qlora: bool,
    /// ZeRO stage.
    pub zero: u8,
    /// Data-parallel replicas.
    pub dp: u64,
}

impl Default for DesignTrain {
    fn default() -> Self {
        DesignTrain {
            batch: 1,
            dtype: "bf16".into(),
            precision: "pure".into(),
            optimizer: "adamw".into(),
            checkpointing: false,
            lora_rank: None,
            qlora: false,
            zero: 0,
            dp: 1,
        }
    }
}

/// The training step of `--train-memory`: the design's flags as a `llmsize train` request,
/// read by `train`'s own option parser and layout (one reading of `--precision`, `--lora-rank`,
/// `--qlora`, `--dp` and the rest, with the same messages). The design's `--tp`/`--pp` are the
/// step's; its sequence length is the request's `ctx`, set by the search.
fn train_options(t: &DesignTrain, c: &Constraints) -> Result<TrainOptions, Error> {
    if t.batch == 0 {
        return Err(Error::bad_input(
            "`--batch 0` trains on nothing",
            "give sequences per micro-batch, at least 1",
        ));
    }
    if t.zero > 3 {
        return Err(Error::bad_input(
            format!("`--zero {}` is not a ZeRO stage", t.zero),
            "0 (DDP), 1 (optimizer states), 2 (+ gradients) or 3 (+ parameters)",
        ));
    }
    let mut req = crate::TrainRequest::new("");
    req.batch = t.batch;
    req.dtype.clone_from(&t.dtype);
    req.precision.clone_from(&t.precision);
    req.optimizer.clone_from(&t.optimizer);
    req.checkpointing = t.checkpointing;
    req.lora_rank = t.lora_rank;
    req.qlora = t.qlora;
    req.dp = Some(t.dp);
    req.parallel = Parallelism {
        tp: c.tp.max(1),
        pp: c.pp.max(1),
        zero: t.zero,
        ..Parallelism::default()
    };
    let mut options = crate::train::options(&req)?;
    options.parallel = crate::train::layout_of(&req, None)?;
    Ok(options)
}

/// The outcome of `design`.
#[derive(Debug, Clone)]
pub struct DesignOutcome {
    /// The search's answer.
    pub result: DesignResult,
    /// Warnings.
    pub warnings: Vec<String>,
}

/// One candidate on the wire.
#[derive(Debug, Serialize)]
struct CandidateWire<'a> {
    config: &'a Map<String, Value>,
    total: u64,
    command: &'a str,
    non_embedding: u64,
    active: u64,
    kv_bytes_per_token: u64,
    flops_per_token: u128,
    #[serde(skip_serializing_if = "Option::is_none")]
    memory_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    train_bytes_per_gpu: Option<u128>,
    #[serde(skip_serializing_if = "Option::is_none")]
    train_command: Option<&'a str>,
}

#[derive(Debug, Serialize)]
struct OptimumWire {
    rule: &'static str,
    source: &'static str,
    params: f64,
    tokens: f64,
    loss: f64,
}

#[derive(Debug, Serialize)]
struct DesignWire<'a> {
    evaluated: u64,
    candidates: Vec<CandidateWire<'a>>,
    base: &'a str,
    matched: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    target: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    quantity: Option<&'static str>,
    rank_rule: &'a str,
    /// The closed form of the total the search evaluated.
    closed_form: String,
    space: Map<String, Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    compute_optimal: Option<Vec<OptimumWire>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    relax: Vec<String>,
}

/// The name of a quantity on the wire.
#[must_use]
pub fn quantity_name(q: Quantity) -> &'static str {
    match q {
        Quantity::Total => "total",
        Quantity::NonEmbedding => "non_embedding",
        Quantity::Active => "active",
    }
}

impl DesignOutcome {
    /// The JSON contract.
    pub fn to_json(&self) -> Result<String, Error> {
        let r = &self.result;
        let wire = DesignWire {
            evaluated: r.evaluated,
            candidates: r
                .candidates
                .iter()
                .map(|c| CandidateWire {
                    config: &c.config,
                    total: c.total,
                    command: &c.command,
                    non_embedding: c.non_embedding,
                    active: c.active,
                    kv_bytes_per_token: c.kv_bytes_per_token,
                    flops_per_token: c.flops_per_token,
                    memory_bytes: c.memory_bytes,
                    train_bytes_per_gpu: c.train_bytes_per_gpu,
                    train_command: c.train_command.as_deref(),
                })
                .collect(),
            base: &r.base,
            matched: r.matched,
            target: r.target.map(|t| t.0),
            quantity: r.target.map(|t| quantity_name(t.1)),
            rank_rule: &r.rank_rule,
            closed_form: r.forms.total.describe(),
            space: r
                .space
                .iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect(),
            compute_optimal: r.optima.map(|o| {
                o.iter()
                    .map(|o| OptimumWire {
                        rule: match o.rule {
                            OptimalRule::Hoffmann => "hoffmann",
                            OptimalRule::Epoch => "epoch",
                            OptimalRule::Tokens20 => "tokens20",
                        },
                        source: o.source,
                        params: o.params,
                        tokens: o.tokens,
                        loss: o.loss,
                    })
                    .collect()
            }),
            relax: r.relax.clone(),
        };
        crate::wire::to_pretty(&wire)
    }
}

fn from_design(e: DesignError) -> Error {
    match e {
        DesignError::Invalid { .. } => Error::BadInput {
            message: e.to_string(),
            hint: None,
        },
        DesignError::Unsupported { .. } | DesignError::Reader { .. } => Error::BadInput {
            message: e.to_string(),
            hint: Some(
                "`--like` resizes decoders whose count is a closed form of hidden size, layers, \
                 heads, KV heads, FFN width and vocabulary (LLaMA, Qwen2, Mistral, Mixtral, \
                 GPT-2, …); or use `--style llama|gpt|moe`"
                    .into(),
            ),
        },
        DesignError::Internal(message) => Error::Internal { message },
        _ => Error::Internal {
            message: e.to_string(),
        },
    }
}

/// The one preset a short name stands for, as people say a model (`llama-3-8b` for
/// `Meta-Llama-3-8B`, `mixtral-8x7b` for `Mixtral-8x7B-v0.1`): its id starts or ends with the
/// name on `-` boundaries. `None` when the name is a preset already, a path, or ambiguous.
fn short_preset(name: &str) -> Option<&'static presets::Preset> {
    if presets::find(name).is_some()
        || name.contains(['/', '\\', '{'])
        || std::path::Path::new(name)
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("json"))
    {
        return None;
    }
    let want = name.trim().to_ascii_lowercase().replace('_', "-");
    let mut hits = presets::PRESETS.iter().filter(|p| {
        let id = p.id.to_ascii_lowercase();
        id.starts_with(&format!("{want}-")) || id.ends_with(&format!("-{want}"))
    });
    let first = hits.next()?;
    hits.next().is_none().then_some(first)
}

/// A count rounded to three significant digits, with one unit of its last digit:
/// 7,615,616,512 → (7,620,000,000, 10,000,000), as a person would type `7.62B`.
fn three_digits(n: u64) -> (u64, u64) {
    let digits = n.checked_ilog10().unwrap_or(0);
    let unit = 10u64.pow(digits.saturating_sub(2));
    let rounded = (Checked::new(n) + Checked::new(unit) / 2u64) / unit * unit;
    // Within a half unit of 2^64 the count is already its own three digits.
    (rounded.ok().unwrap_or(n), unit)
}

pub(crate) fn run(req: &DesignRequest, env: &HubEnv) -> Result<DesignOutcome, Error> {
    let mut warnings = Vec::new();
    // The like-model's own total, when it is the target.
    let mut own = None;
    let base = match &req.base {
        DesignBase::Style(s) => Base::style(*s).map_err(from_design)?,
        DesignBase::Like(typed) => {
            let lookup = Lookup {
                hub: req.hub.clone(),
                weights: Want::No,
            };
            let short = short_preset(typed);
            if let Some(p) = short {
                warnings.push(format!("`--like {typed}`: the preset `{}`", p.id));
            }
            let arg = &short.map_or_else(|| typed.clone(), |p| p.id.to_owned());
            let model = resolve_model(arg, &lookup, env)?;
            let found = model.config.as_ref().ok_or_else(|| {
                Error::bad_input(
                    format!("`{arg}` has no config.json to resize"),
                    "name a preset (`llmsize presets`), a config.json or a folder holding one",
                )
            })?;
            let map = parse_json(&found.text, &found.file)?;
            // The command names the preset by its id, anything else as typed.
            let name = presets::find(arg).map_or_else(|| arg.clone(), |p| p.id.to_owned());
            if req.goal.is_none() {
                let spec = llmsize_adapters::read_config_map(
                    map.clone(),
                    &found.file,
                    &name,
                    &llmsize_adapters::ReadOptions::default(),
                )
                .map_err(Error::Config)?;
                let total = llmsize_core::count(&spec)
                    .map_err(Error::spec(&name))?
                    .total;
                own = Some(total);
            }
            Base::like(&name, map).map_err(from_design)?
        }
    };
    let mut goal = match (&req.goal, own) {
        (Some(goal), _) => goal.clone(),
        // `--like MODEL` alone: shapes of the model's own size, as a person would type it.
        (None, Some(total)) => {
            let (value, resolution) = three_digits(total);
            warnings.push(format!(
                "no target given: {}'s own size, {} to three digits (`--params {value}`)",
                base.name,
                llmsize_core::units::human_count(total)
            ));
            Goal::Params {
                value,
                resolution,
                quantity: Quantity::Total,
            }
        }
        (None, None) => {
            return Err(Error::bad_input(
                "`llmsize design` needs a target",
                "give --params, --memory, --train-memory or --compute (or --like MODEL alone, for shapes of that model's own size)",
            ));
        }
    };
    if let Goal::TrainMemory { options, .. } = &mut goal {
        **options = train_options(&req.train, &req.constraints)?;
        if req.train.zero > 0 && req.train.dp == 1 {
            warnings.push(format!(
                "`--zero {}` over `--dp 1` shards nothing (ZeRO-3 only adds its gather \
                 buffers): give the data-parallel GPUs, e.g. `--dp 8`",
                req.train.zero
            ));
        }
    }
    let request = llmsize_design::Request {
        base,
        goal,
        tolerance: req.tolerance,
        constraints: req.constraints.clone(),
        top: req.top,
        ctx: req.ctx,
    };
    let result = llmsize_design::design(&request).map_err(from_design)?;
    Ok(DesignOutcome { result, warnings })
}
