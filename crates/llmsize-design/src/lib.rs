//! llmsize-design: inverse sizing. Given a target (parameters, serving memory, the memory
//! of a training step, training compute) and constraints (a block style or a real model to
//! resize, head widths, KV heads, the FFN rule, divisibility by tensor and pipeline
//! parallelism, an aspect range), search every shape of the declared space and return the
//! best, each counted exactly.
//!
//! Exactness: the count of the base model resized is a closed form of its sizes whose
//! integer coefficients are measured with the real reader ([`form`]); the search evaluates
//! the form (a multiply-add per shape, [`search`]); every candidate returned is re-read by the
//! config reader and re-counted by the core, and must agree with the form.
//!
//! Pure: no I/O. The caller passes the base model's parsed `config.json`.

#![deny(missing_docs)]

pub mod base;
pub mod error;
pub mod form;
pub mod optimal;
pub mod search;
pub mod train;

use llmsize_adapters::hf_config::{ReadOptions, read_config_map};
use llmsize_core::ModelSpec;
use llmsize_core::flops::{AttentionConvention, flops};
use llmsize_core::formats::{KvDtype, WeightFormat};
use llmsize_core::limits::{MAX_CHOICES, MAX_TOP};
use llmsize_core::memory::{CachePolicy, MemoryOptions, MlaCache, memory};
use llmsize_train::TrainOptions;
use serde_json::{Map, Value};

pub use base::{Base, DesignStyle, Shape};
pub use error::DesignError;
pub use form::{Forms, Quantity};
pub use search::{FfnRule, KvChoice};

/// What the search aims at.
#[derive(Debug, Clone, PartialEq)]
pub enum Goal {
    /// A parameter count (`--params 7B`), of a quantity (total, non-embedding, active).
    Params {
        /// The count.
        value: u64,
        /// One unit of the last digit typed (`8.03B` → 10M): counts that round to the target
        /// as typed (within half a unit) rank as equally close.
        resolution: u64,
        /// Which count.
        quantity: Quantity,
    },
    /// The largest model whose weights and KV cache fit `bytes` (`--memory 24GiB`).
    Memory {
        /// The budget.
        bytes: u64,
        /// Weight format.
        format: WeightFormat,
        /// KV cache element type.
        kv_dtype: KvDtype,
    },
    /// The largest model whose one training step fits `bytes` per GPU (`--train-memory
    /// 80GiB`), as `llmsize train` computes it with `options` (their `seq_len` is the
    /// request's `ctx`).
    TrainMemory {
        /// The budget per GPU.
        bytes: u64,
        /// The training step: precision, optimizer, checkpointing, LoRA, parallelism.
        options: Box<TrainOptions>,
    },
    /// Compute-optimal N for C training FLOPs (`--compute 1e23`), by a rule.
    Compute {
        /// FLOPs.
        flops: f64,
        /// Which rule gives N.
        rule: optimal::Rule,
    },
}

/// What users constrain; `None`: the base's own choice.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Constraints {
    /// Vocabulary.
    pub vocab: Option<u64>,
    /// Head widths.
    pub head_dims: Option<Vec<u64>>,
    /// KV heads or GQA groups.
    pub kv: Option<KvChoice>,
    /// FFN rule.
    pub ffn: Option<FfnRule>,
    /// Hidden size (and FFN width) multiple of this [default 64].
    pub align: Option<u64>,
    /// Tensor-parallel degree.
    pub tp: u64,
    /// Pipeline stages.
    pub pp: u64,
    /// d/L range [default [`ASPECT_RANGE`]].
    pub aspect: Option<(f64, f64)>,
    /// Hidden sizes searched [default 64..=32768].
    pub hidden: Option<(u64, u64)>,
    /// Layer counts searched [default 1..=256].
    pub layers: Option<(u64, u64)>,
    /// Routed experts.
    pub experts: Option<u64>,
    /// Experts per token.
    pub top_k: Option<u64>,
    /// Preferred aspect d/L [default: the base's own for `--like`, 128 for a style].
    pub prefer_aspect: Option<f64>,
}

/// A design question.
#[derive(Debug, Clone)]
pub struct Request {
    /// The structure kept.
    pub base: Base,
    /// The target.
    pub goal: Goal,
    /// Relative tolerance around a parameter target (0.01 = 1%).
    pub tolerance: f64,
    /// Constraints.
    pub constraints: Constraints,
    /// Candidates to return.
    pub top: usize,
    /// Context for the KV cache (`--memory`) and the FLOPs per token.
    pub ctx: u64,
}

/// One shape found, counted by the reader.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// The sizes.
    pub shape: Shape,
    /// Its complete `config.json`.
    pub config: Map<String, Value>,
    /// All parameters (the reader's count).
    pub total: u64,
    /// Without input tables.
    pub non_embedding: u64,
    /// Per token (MoE), else the total.
    pub active: u64,
    /// KV cache per token of context, bf16.
    pub kv_bytes_per_token: u64,
    /// Forward FLOPs of one token at `ctx` tokens of context.
    pub flops_per_token: u128,
    /// Weights + KV cache at `ctx` (memory goals).
    pub memory_bytes: Option<u64>,
    /// The most loaded GPU's bytes of one training step (training-memory goals).
    pub train_bytes_per_gpu: Option<u128>,
    /// The `llmsize train` command that measures it (training-memory goals).
    pub train_command: Option<String>,
    /// The `llmsize params` command that counts it.
    pub command: String,
}

/// The answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The base's name.
    pub base: String,
    /// Shapes evaluated.
    pub evaluated: u64,
    /// Shapes that met the target and constraints.
    pub matched: u64,
    /// The best, ranked.
    pub candidates: Vec<Candidate>,
    /// The declared space, one line per dimension.
    pub space: Vec<(String, String)>,
    /// How candidates are ranked.
    pub rank_rule: String,
    /// For `--compute`: the three rules' N, D and loss.
    pub optima: Option<[optimal::Optimum; 3]>,
    /// The parameter target searched for (after `--compute`), and the quantity.
    pub target: Option<(u64, Quantity)>,
    /// When nothing matched: the constraints whose relaxation would give shapes.
    pub relax: Vec<String>,
    /// When nothing matched: the smallest and largest value of the quantity aimed at over the
    /// space (parameters; micro-bytes for a memory target), if the space holds any shape.
    pub extent: Option<(i128, i128)>,
    /// The closed form of the total, for the record.
    pub forms: Forms,
}

/// Default hidden sizes searched.
pub const HIDDEN_RANGE: (u64, u64) = (64, 32_768);
/// Default layer counts searched.
pub const LAYER_RANGE: (u64, u64) = (1, 256);
/// Default aspect range d/L: Kaplan et al. 2020 (section 3.1, Figure 5) find the loss
/// depends only weakly on the shape over a wide range of aspect ratios; outside it (a single
/// very wide layer, hundreds of narrow ones) no model of the studied families lives. Real
/// models span about 19 (SmolLM2-135M, 576/30) to 130 (Llama-3.1-405B, 16384/126).
pub const ASPECT_RANGE: (f64, f64) = (16.0, 512.0);
/// How far a relaxation widens the default hidden sizes and layer counts.
const WIDE_HIDDEN: u64 = 262_144;
const WIDE_LAYERS: u64 = 4096;
/// Default alignment of hidden sizes and FFN widths.
pub const ALIGN: u64 = 64;

/// `7B`, `8.03B`, `350M`, `1.5e9`, `124439808`: a count and its resolution (one unit of the
/// last digit typed: `8.03B` → 10M, `7B` → 1B, `124439808` → 1).
pub fn parse_count(s: &str) -> Result<(u64, u64), String> {
    let t = s.trim().replace('_', "");
    let bad = || format!("`{s}` is not a parameter count (e.g. 7B, 8.03B, 350M, 1.5e9)");
    let (num, mult): (&str, u64) = match t.chars().last().map(|c| c.to_ascii_lowercase()) {
        Some('k') => (&t[..t.len() - 1], 1_000),
        Some('m') => (&t[..t.len() - 1], 1_000_000),
        Some('b' | 'g') => (&t[..t.len() - 1], 1_000_000_000),
        Some('t') => (&t[..t.len() - 1], 1_000_000_000_000),
        _ => (t.as_str(), 1),
    };
    if num.contains(['e', 'E']) {
        let x: f64 = num.parse().map_err(|_| bad())?;
        #[expect(clippy::cast_precision_loss, reason = "a multiplier")]
        let v = x * mult as f64;
        if !(1.0..1e19).contains(&v) {
            return Err(bad());
        }
        // `1.5e9`: the mantissa's digits give the resolution.
        let mantissa = num.split(['e', 'E']).next().unwrap_or("");
        let decimals = mantissa.split_once('.').map_or(0, |(_, f)| f.len());
        let exp: i32 = num
            .split(['e', 'E'])
            .nth(1)
            .and_then(|e| e.parse().ok())
            .ok_or_else(bad)?;
        #[expect(clippy::cast_precision_loss, reason = "a multiplier")]
        let unit = 10f64.powi(exp - i32::try_from(decimals).unwrap_or(0)) * mult as f64;
        return Ok((to_u64(v), to_u64(unit.max(1.0))));
    }
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    if int.is_empty() && frac.is_empty()
        || !int.bytes().all(|b| b.is_ascii_digit())
        || !frac.bytes().all(|b| b.is_ascii_digit())
    {
        return Err(bad());
    }
    let digits: u128 = format!("{int}{frac}").parse().map_err(|_| bad())?;
    let scale = 10u128
        .checked_pow(u32::try_from(frac.len()).map_err(|_| bad())?)
        .ok_or_else(bad)?;
    let value = digits
        .checked_mul(u128::from(mult))
        .map(|v| v / scale)
        .ok_or_else(bad)?;
    let unit = (u128::from(mult) / scale).max(1);
    let value = u64::try_from(value).map_err(|_| bad())?;
    if value == 0 {
        return Err(format!("`{s}`: a parameter count is at least 1"));
    }
    Ok((value, u64::try_from(unit).unwrap_or(u64::MAX)))
}

#[expect(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "checked range"
)]
fn to_u64(x: f64) -> u64 {
    if (0.0..1.8e19).contains(&x) {
        x.round() as u64
    } else {
        u64::MAX
    }
}

/// Three significant digits of `n`: one unit of its third digit.
fn three_digits(n: u64) -> u64 {
    let mut unit = 1u64;
    while n / unit >= 1000 {
        unit *= 10;
    }
    unit
}

/// The search space of a request.
fn space_of(req: &Request) -> Result<search::Space, DesignError> {
    let c = &req.constraints;
    let base = &req.base;
    let align = c.align.unwrap_or(ALIGN);
    let invalid = |flag: &str, problem: String| DesignError::Invalid {
        flag: flag.to_owned(),
        problem,
    };
    if align == 0 {
        return Err(invalid("--align", "must be at least 1".into()));
    }
    let (h_lo, h_hi) = c.hidden.unwrap_or(HIDDEN_RANGE);
    let (l_lo, l_hi) = c.layers.unwrap_or(LAYER_RANGE);
    if h_lo > h_hi || h_hi > 1 << 20 {
        return Err(invalid(
            "--hidden-range",
            format!("{h_lo}..{h_hi}: from at most to, and to at most 1048576"),
        ));
    }
    if l_lo == 0 || l_lo > l_hi || l_hi > 4096 {
        return Err(invalid(
            "--layers-range",
            format!("{l_lo}..{l_hi}: from 1, from at most to, and to at most 4096"),
        ));
    }
    let head_dims = c
        .head_dims
        .clone()
        .unwrap_or_else(|| vec![base.shape.head_dim]);
    if head_dims.contains(&0) {
        return Err(invalid("--head-dim", "must be at least 1".into()));
    }
    let kv = c.kv.clone().unwrap_or_else(|| {
        let (h, k) = (base.shape.heads, base.shape.kv_heads.max(1));
        if h.is_multiple_of(k) {
            KvChoice::Group(vec![h / k])
        } else {
            KvChoice::Heads(vec![k])
        }
    });
    let ffn = c
        .ffn
        .unwrap_or_else(|| FfnRule::of_model(base.shape.hidden, base.shape.ffn));
    Ok(search::Space {
        head_dims,
        hidden: (h_lo, h_hi, align),
        layers: (l_lo, l_hi),
        kv,
        ffn,
        ffn_align: align,
        tp: c.tp.max(1),
        pp: c.pp.max(1),
        aspect: Some(c.aspect.unwrap_or(ASPECT_RANGE)),
        vocab: base.shape.vocab,
        mha_only: base.keys.kv_heads.is_none(),
    })
}

fn describe_space(space: &search::Space, base: &Base) -> Vec<(String, String)> {
    let list = |v: &[u64]| v.iter().map(u64::to_string).collect::<Vec<_>>().join(", ");
    let mut out = vec![
        (
            "hidden d".to_owned(),
            format!(
                "{}..{} in steps of {}",
                space.hidden.0, space.hidden.1, space.hidden.2
            ),
        ),
        (
            "layers L".to_owned(),
            format!("{}..{}", space.layers.0, space.layers.1),
        ),
        ("head_dim".to_owned(), list(&space.head_dims)),
        (
            "kv heads".to_owned(),
            if space.mha_only {
                "= heads (the type has no KV heads of its own)".to_owned()
            } else {
                match &space.kv {
                    KvChoice::Heads(v) => list(v),
                    KvChoice::Group(g) => format!("heads / {}", list(g)),
                }
            },
        ),
        ("ffn".to_owned(), space.ffn.describe()),
        ("vocab".to_owned(), base.shape.vocab.to_string()),
    ];
    if space.tp > 1 || space.pp > 1 {
        out.push((
            "parallel".to_owned(),
            format!(
                "tp {} (heads, d, ffn divisible), pp {} (layers divisible)",
                space.tp, space.pp
            ),
        ));
    }
    if let Some((a, b)) = space.aspect {
        out.push(("aspect d/L".to_owned(), format!("{a}..{b}")));
    }
    if base.experts > 0 {
        out.push((
            "experts".to_owned(),
            format!("{} routed, top-{}", base.experts, base.top_k),
        ));
    }
    out
}

/// Read a shape with the real reader.
fn read(base: &Base, shape: &Shape) -> Result<ModelSpec, DesignError> {
    read_config_map(
        base.config_of(shape),
        "design",
        &base.name,
        &ReadOptions::default(),
    )
    .map_err(|e| DesignError::Reader {
        model: base.name.clone(),
        shape: form::describe(shape),
        message: e.to_string(),
    })
}

fn memory_options(ctx: u64, format: WeightFormat, kv: KvDtype) -> MemoryOptions {
    MemoryOptions {
        format,
        seq_len: ctx,
        batch: 1,
        kv_dtype: kv,
        tp: 1,
        gpu: None,
        mla: MlaCache::Latent,
        window: CachePolicy::Transformers,
        overhead_bytes: 0,
    }
}

/// Count a shape with the reader and the core; check the form agrees.
fn candidate(
    base: &Base,
    forms: &Forms,
    shape: &Shape,
    ctx: u64,
    goal: &Goal,
) -> Result<Candidate, DesignError> {
    let spec = read(base, shape)?;
    let reader = |e: llmsize_core::SpecError| DesignError::Reader {
        model: base.name.clone(),
        shape: form::describe(shape),
        message: e.to_string(),
    };
    let count = llmsize_core::count(&spec).map_err(reader)?;
    let total = count.total;
    if i128::from(total) != forms.total.eval(shape) {
        return Err(DesignError::Internal(format!(
            "the closed form of `{}` counts {} at {}, the reader {total}",
            base.name,
            forms.total.eval(shape),
            form::describe(shape)
        )));
    }
    let bf16 = memory(
        &spec,
        &memory_options(ctx, WeightFormat::Bf16, KvDtype::Bf16),
    )
    .map_err(reader)?;
    let memory_bytes = match goal {
        Goal::Memory {
            format, kv_dtype, ..
        } => {
            let m = memory(&spec, &memory_options(ctx, *format, *kv_dtype)).map_err(reader)?;
            Some(m.weights_bytes.saturating_add(m.kv_bytes))
        }
        _ => None,
    };
    let (train_bytes_per_gpu, train_command) = match goal {
        Goal::TrainMemory { options, .. } => (
            Some(train::step_bytes(base, shape, options)?),
            Some(base.train_command(shape, &train::flags(options))),
        ),
        _ => (None, None),
    };
    let f = flops(&spec, ctx, 1, AttentionConvention::Causal).map_err(reader)?;
    Ok(Candidate {
        shape: *shape,
        config: base.config_of(shape),
        total,
        non_embedding: count.non_embedding(),
        active: count.active.as_ref().map_or(total, |a| a.per_token),
        kv_bytes_per_token: bf16.kv_bytes_per_token_full,
        flops_per_token: f.per_token_flops,
        memory_bytes,
        train_bytes_per_gpu,
        train_command,
        command: base.command(shape),
    })
}

/// Scale every coefficient of a form.
fn scaled(f: &form::Form, k: i128) -> form::Form {
    form::Form {
        layer: f.layer.map(|c| c * k),
        global: f.global.map(|c| c * k),
    }
}

/// Longest context `--ctx` takes (16M tokens).
pub const MAX_CTX: u64 = llmsize_core::limits::MAX_CONTEXT_SEARCH;

/// Micro-units per unit in the memory form.
const MICRO: i128 = 1_000_000;

/// Answer a design question.
///
/// In phases: the request's bounds ([`check`]) and its base ([`base_of`]), the objective the
/// search meets ([`objective`]), the shapes found, measured and ranked ([`measured`]), and,
/// where none is left, the constraints whose relaxation would give shapes ([`relax`]).
pub fn design(req: &Request) -> Result<Outcome, DesignError> {
    check(req)?;
    let base = base_of(req)?;
    let forms = form::measure(&base)?;
    let space = space_of(&Request {
        base: base.clone(),
        ..req.clone()
    })?;
    let pref = search::Preference {
        aspect: req
            .constraints
            .prefer_aspect
            .unwrap_or_else(|| match base.origin {
                base::Origin::Like(_) => base.shape.aspect(),
                base::Origin::Style(_) => 128.0,
            }),
    };
    // The training step runs on `ctx` tokens.
    let mut goal = req.goal.clone();
    if let Goal::TrainMemory { options, .. } = &mut goal {
        options.seq_len = req.ctx;
    }
    let aim = objective(req, &base, &forms, &space, &goal)?;
    let keep = match req.goal {
        Goal::Memory { .. } | Goal::TrainMemory { .. } => 4000,
        _ => req.top,
    };
    let found = search::search(&space, &aim.form, &aim.target, pref, keep);
    let candidates = measured(req, &base, &forms, &goal, &found)?;
    let (relax, extent) = if candidates.is_empty() {
        let relax = relax(req, &base, (&forms, &space), &aim, &goal, pref)?;
        (relax, search::extent(&space, &aim.form))
    } else {
        (Vec::new(), None)
    };
    Ok(Outcome {
        base: base.name.clone(),
        evaluated: found.evaluated,
        matched: found.matched,
        candidates,
        space: describe_space(&space, &base),
        rank_rule: rank_rule(&goal, pref),
        optima: aim.optima,
        target: aim.record,
        relax,
        extent,
        forms,
    })
}

fn invalid(flag: &str, problem: String) -> DesignError {
    DesignError::Invalid {
        flag: flag.to_owned(),
        problem,
    }
}

/// The request's bounds: the tolerance, `--top`, the choices of head width and KV heads,
/// the context.
fn check(req: &Request) -> Result<(), DesignError> {
    if !(req.tolerance >= 0.0 && req.tolerance <= 0.5) {
        return Err(invalid(
            "--tolerance",
            format!("{}%: from 0% to 50%", req.tolerance * 100.0),
        ));
    }
    if req.top == 0 || req.top > MAX_TOP {
        return Err(invalid("--top", format!("from 1 to {MAX_TOP}")));
    }
    let c = &req.constraints;
    let kv = match &c.kv {
        Some(search::KvChoice::Heads(v)) => Some(("--kv-heads", v.len())),
        Some(search::KvChoice::Group(v)) => Some(("--gqa-group", v.len())),
        None => None,
    };
    for (flag, n) in [("--head-dim", c.head_dims.as_ref().map_or(0, Vec::len))]
        .into_iter()
        .chain(kv)
    {
        if n > MAX_CHOICES {
            return Err(invalid(
                flag,
                format!("{n} values: at most {MAX_CHOICES} (each multiplies the space searched)"),
            ));
        }
    }
    // At most 16M tokens: the memory form's KV term stays far inside 128-bit integers.
    if req.ctx == 0 || req.ctx > MAX_CTX {
        return Err(invalid(
            "--ctx",
            format!("{}: from 1 to {MAX_CTX} tokens", req.ctx),
        ));
    }
    Ok(())
}

/// The base with the request's experts, top-k and vocabulary.
fn base_of(req: &Request) -> Result<Base, DesignError> {
    let mut base = req.base.clone();
    base.set_experts(req.constraints.experts, req.constraints.top_k)?;
    if let Some(v) = req.constraints.vocab {
        if v == 0 {
            return Err(invalid("--vocab", "must be at least 1".into()));
        }
        base.set_vocab(v);
    }
    if base.experts > 0 && (base.top_k == 0 || base.top_k > base.experts) {
        return Err(invalid(
            "--top-k",
            format!("{}: from 1 to the {} experts", base.top_k, base.experts),
        ));
    }
    Ok(base)
}

/// What the search aims at.
struct Objective {
    /// The closed form of the quantity searched (micro-bytes for a memory goal).
    form: form::Form,
    target: search::Target,
    /// For `--compute`: the three rules' optima.
    optima: Option<[optimal::Optimum; 3]>,
    /// The parameter target and its quantity, for the record.
    record: Option<(u64, Quantity)>,
}

/// The objective of `goal` (its training step on `ctx` tokens).
fn objective(
    req: &Request,
    base: &Base,
    forms: &Forms,
    space: &search::Space,
    goal: &Goal,
) -> Result<Objective, DesignError> {
    let tol = |v: u64| -> i128 {
        #[expect(clippy::cast_precision_loss, reason = "a tolerance")]
        let t = v as f64 * req.tolerance;
        i128::from(to_u64(t))
    };
    let params = |n: u64, resolution: u64| search::Target {
        value: i128::from(n),
        tolerance: tol(n),
        resolution: i128::from(resolution),
        maximize: false,
    };
    Ok(match goal {
        Goal::Params {
            value,
            resolution,
            quantity,
        } => {
            if *quantity == Quantity::Active && base.experts == 0 {
                return Err(invalid(
                    "--active",
                    format!(
                        "`{}` is not a mixture of experts: every parameter is active",
                        base.name
                    ),
                ));
            }
            let form = *forms.get(*quantity);
            Objective {
                form,
                target: params(*value, *resolution),
                optima: None,
                record: Some((*value, *quantity)),
            }
        }
        Goal::Compute { flops: c, rule } => {
            if !(c.is_finite() && *c >= 1e12 && *c <= 1e32) {
                return Err(invalid(
                    "--compute",
                    format!("{c}: from 1e12 to 1e32 FLOPs"),
                ));
            }
            let optima = optimal::optima(*c);
            let n = optima
                .iter()
                .find(|o| o.rule == *rule)
                .map_or(0, |o| to_u64(o.params));
            Objective {
                form: forms.total,
                target: params(n, three_digits(n)),
                optima: Some(optima),
                record: Some((n, Quantity::Total)),
            }
        }
        Goal::Memory {
            bytes,
            format,
            kv_dtype,
        } => {
            let budget = i128::from(*bytes) * MICRO;
            Objective {
                form: memory_form(req, base, forms, *format, *kv_dtype)?,
                target: search::Target {
                    value: budget,
                    // Prune at 10% over the budget: the estimate's error is far smaller.
                    tolerance: budget / 10,
                    resolution: (budget / 200).max(1),
                    maximize: true,
                },
                optima: None,
                record: None,
            }
        }
        Goal::TrainMemory { bytes, options } => {
            let budget = i128::from(*bytes) * MICRO;
            Objective {
                // Micro-bytes by the fitted bound of `train`; it prunes only: every candidate
                // is then measured by the training planner's step.
                form: train::bound(base, forms, space, options)?,
                target: search::Target {
                    value: budget,
                    // Prune at 20% over the budget: the bound is the step itself on dense
                    // steps and at most 15% over it on the others tried (LoRA, QLoRA,
                    // ZeRO-3, MoE; `tests/train_bound.rs`), so no shape that fits is lost.
                    tolerance: budget / 5,
                    resolution: (budget / 200).max(1),
                    maximize: true,
                },
                optima: None,
                record: None,
            }
        }
    })
}

/// The memory form: bytes ≈ `r·total + ctx·2·L·kv_heads·head_dim·(KV bytes per element)`,
/// in micro-bytes; `r` is measured on the base model. An estimate used to prune only: every
/// candidate is then measured by the core's memory model.
fn memory_form(
    req: &Request,
    base: &Base,
    forms: &Forms,
    format: WeightFormat,
    kv_dtype: KvDtype,
) -> Result<form::Form, DesignError> {
    let own = read(base, &base.shape)?;
    let m = memory(&own, &memory_options(req.ctx, format, kv_dtype))
        .map_err(|e| DesignError::Internal(e.to_string()))?;
    let r = i128::from(m.weights_bytes) * MICRO / i128::from(m.params.max(1));
    let per_elem = i128::from(kv_dtype.bytes(1_000_000).unwrap_or(2_000_000));
    let mut f = scaled(&forms.total, r);
    // w = kv_heads·head_dim: 2 (K and V) · ctx · bytes per element.
    if let Some(c4) = f.layer.get_mut(4) {
        *c4 += 2 * i128::from(req.ctx) * per_elem;
    }
    Ok(f)
}

/// The shapes `found`, measured and ranked: the `--top` best.
fn measured(
    req: &Request,
    base: &Base,
    forms: &Forms,
    goal: &Goal,
    found: &search::Found,
) -> Result<Vec<Candidate>, DesignError> {
    if let Goal::TrainMemory { bytes, options } = goal {
        // Every shape kept is measured: the bound errs by a few percent either way, more
        // than neighbouring shapes differ, so the first printed is the largest that fits of
        // all kept. The largest total first (the question is the largest model a budget
        // trains), then hardware, then aspect.
        let mut fits = Vec::new();
        for h in &found.hits {
            if train::step_bytes(base, &h.shape, options)? <= u128::from(*bytes) {
                fits.push((forms.total.eval(&h.shape), h));
            }
        }
        fits.sort_by(|(ta, ha), (tb, hb)| {
            tb.cmp(ta)
                .then(ha.penalty.cmp(&hb.penalty))
                .then(ha.aspect_gap.total_cmp(&hb.aspect_gap))
        });
        return fits
            .into_iter()
            .take(req.top)
            .map(|(_, h)| candidate(base, forms, &h.shape, req.ctx, goal))
            .collect();
    }
    let Some(bytes) = budget_of(goal) else {
        return found
            .hits
            .iter()
            .map(|h| candidate(base, forms, &h.shape, req.ctx, goal))
            .collect();
    };
    // The largest first (by the estimate), measured exactly until enough fit.
    let mut hits = found.hits.clone();
    hits.sort_by_key(|h| std::cmp::Reverse(h.value));
    let mut fits = Vec::new();
    for h in hits {
        let c = candidate(base, forms, &h.shape, req.ctx, goal)?;
        if c.memory_bytes.is_some_and(|m| m <= bytes) {
            fits.push((h, c));
            if fits.len() >= 3 * req.top {
                break;
            }
        }
    }
    // Rank: the largest total (to 0.5% of the best), then hardware, then aspect.
    let best = fits.iter().map(|(_, c)| c.total).max().unwrap_or(0);
    let res = (best / 200).max(1);
    fits.sort_by(|(ha, a), (hb, b)| {
        ((best - a.total) / res)
            .cmp(&((best - b.total) / res))
            .then(ha.penalty.cmp(&hb.penalty))
            .then(ha.aspect_gap.total_cmp(&hb.aspect_gap))
            .then(b.total.cmp(&a.total))
    });
    Ok(fits.into_iter().take(req.top).map(|(_, c)| c).collect())
}

/// The constraints whose relaxation alone gives shapes, where the search left none.
fn relax(
    req: &Request,
    base: &Base,
    (forms, space): (&Forms, &search::Space),
    aim: &Objective,
    goal: &Goal,
    pref: search::Preference,
) -> Result<Vec<String>, DesignError> {
    Ok(match goal {
        // A training step's bound is only a bound: a relaxation counts when a shape it
        // gives is measured to fit.
        Goal::TrainMemory { bytes, options } => {
            let fits = train::Fits {
                base,
                options,
                bytes: *bytes,
            };
            let mut r = relaxations(req, base, space, &aim.form, &fits.target(), pref, &|f| {
                fits.any(f, options)
            });
            r.extend(train::relaxations(base, forms, space, &fits, pref)?);
            r
        }
        _ => relaxations(req, base, space, &aim.form, &aim.target, pref, &|f| {
            !f.hits.is_empty()
        }),
    })
}

/// How the candidates of `goal` are ranked.
fn rank_rule(goal: &Goal, pref: search::Preference) -> String {
    match goal {
        Goal::TrainMemory { .. } => format!(
            "largest total whose training step fits, then hidden and FFN multiples of 128, \
             then aspect d/L nearest {:.0}",
            pref.aspect
        ),
        Goal::Memory { .. } => format!(
            "largest total that fits (to 0.5%), then hidden and FFN multiples of 128, then \
             aspect d/L nearest {:.0}",
            pref.aspect
        ),
        _ => format!(
            "distance to the target (to the precision typed), then hidden and FFN multiples \
             of 128, then aspect d/L nearest {:.0}",
            pref.aspect
        ),
    }
}

/// Shapes a relaxation's search keeps, for a training step's check.
pub(crate) const RELAX_KEEP: usize = 128;

/// The budget of a memory or training-memory goal.
fn budget_of(goal: &Goal) -> Option<u64> {
    match goal {
        Goal::Memory { bytes, .. } | Goal::TrainMemory { bytes, .. } => Some(*bytes),
        _ => None,
    }
}

/// The constraints whose relaxation alone gives shapes: each tried in turn.
fn relaxations(
    req: &Request,
    base: &Base,
    space: &search::Space,
    form: &form::Form,
    target: &search::Target,
    pref: search::Preference,
    gives: &dyn Fn(&search::Found) -> bool,
) -> Vec<String> {
    let c = &req.constraints;
    let mut tries: Vec<(String, search::Space, search::Target)> = Vec::new();
    let with = |f: &dyn Fn(&mut search::Space)| {
        let mut s = space.clone();
        f(&mut s);
        s
    };
    if space.tp > 1 {
        tries.push((format!("--tp {}", space.tp), with(&|s| s.tp = 1), *target));
    }
    if space.pp > 1 {
        tries.push((format!("--pp {}", space.pp), with(&|s| s.pp = 1), *target));
    }
    if let Some((a, b)) = space.aspect {
        tries.push((
            format!("--aspect {a}..{b}"),
            with(&|s| s.aspect = None),
            *target,
        ));
    }
    let list = |v: &[u64]| v.iter().map(u64::to_string).collect::<Vec<_>>().join(",");
    if let Some(h) = &c.head_dims {
        tries.push((
            format!("--head-dim {}", list(h)),
            with(&|s| s.head_dims = vec![32, 64, 80, 96, 128, 256]),
            *target,
        ));
    }
    if let Some(kv) = &c.kv {
        tries.push((
            match kv {
                KvChoice::Heads(v) => format!("--kv-heads {}", list(v)),
                KvChoice::Group(v) => format!("--gqa-group {}", list(v)),
            },
            with(&|s| s.kv = KvChoice::Group(vec![1, 2, 4, 8])),
            *target,
        ));
    }
    if let Some(a) = c.align.filter(|a| *a > 1) {
        tries.push((
            format!("--align {a}"),
            with(&|s| {
                s.hidden.2 = 1;
                s.ffn_align = 1;
            }),
            *target,
        ));
    }
    if let Some((a, b)) = c.hidden {
        tries.push((
            format!("--hidden-range {a}..{b}"),
            with(&|s| {
                s.hidden.0 = HIDDEN_RANGE.0;
                s.hidden.1 = HIDDEN_RANGE.1;
            }),
            *target,
        ));
    }
    if let Some((a, b)) = c.layers {
        tries.push((
            format!("--layers-range {a}..{b}"),
            with(&|s| s.layers = LAYER_RANGE),
            *target,
        ));
    }
    if c.hidden.is_none() {
        tries.push((
            format!("--hidden-range {}..{}", HIDDEN_RANGE.0, HIDDEN_RANGE.1),
            with(&|s| s.hidden.1 = WIDE_HIDDEN),
            *target,
        ));
    }
    if c.layers.is_none() {
        tries.push((
            format!("--layers-range {}..{}", LAYER_RANGE.0, LAYER_RANGE.1),
            with(&|s| s.layers.1 = WIDE_LAYERS),
            *target,
        ));
    }
    if c.ffn.is_some() {
        let own = FfnRule::of_model(base.shape.hidden, base.shape.ffn);
        tries.push(("--ffn-rule".into(), with(&|s| s.ffn = own), *target));
    }
    if !target.maximize {
        tries.push((
            "--tolerance".into(),
            space.clone(),
            search::Target {
                tolerance: (target.value / 10).max(target.tolerance),
                ..*target
            },
        ));
    }
    tries
        .into_iter()
        .filter(|(_, s, t)| gives(&search::search(s, form, t, pref, RELAX_KEEP)))
        .map(|(name, ..)| name)
        .collect()
}
