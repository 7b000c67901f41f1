//! Model states and activations per GPU under data, tensor, pipeline, context and expert
//! parallelism, `ZeRO` and FSDP, with CPU offload: the bytes of the most loaded GPU.
//!
//! Every GPU of a job is one rank of a grid `dp × tp × pp × cp` (expert parallelism `ep` lives
//! inside `dp × cp`). Ranks of one pipeline stage hold the same bytes (tensor-parallel ranks
//! hold equal slices, data-parallel ranks equal shards, expert-parallel ranks equal numbers of
//! experts), so the most loaded GPU is found over the pipeline stages: every stage is
//! evaluated, with its layers (counted exactly from the runs of layer kinds), its share of the
//! non-layer tensors, and the micro-batches its schedule keeps in flight.
//!
//! The rules, each from the code that does it:
//! - **Tensor parallelism** (Megatron-LM, Shoeybi et al. 2019, `megatron/core/tensor_parallel`):
//!   q/k/v (or the fused qkv), the MLP's gate/up, MLA's `q_b`/`kv_b` are column-parallel
//!   (output rows ÷ `tp`, with their biases); `o_proj` and `down` are row-parallel (input
//!   columns ÷ `tp`; their biases stay whole); the token embedding and the head are
//!   vocab-parallel (`⌈V/tp⌉` rows; Megatron also pads `V` to a multiple of 128·`tp`, which is
//!   not modelled); norms, routers, position tables, MLA's down-projections (TE's
//!   `parallel_mode='duplicated'` in `multi_latent_attention.py`) stay whole on every rank.
//!   Routed experts are split by `tp` as well (Megatron's `--expert-tensor-parallel-size`
//!   defaults to `tp`). Tensors the typed layout does not describe (state-space mixers, vision
//!   towers) and `LoRA` adapters are kept whole on every rank (an estimate when `tp > 1`).
//! - **KV heads with `tp` > `n_kv`**: Megatron-core (`attention.py`, `num_query_groups <
//!   world_size`) still splits the qkv weight evenly over the ranks, all-gathers its output and
//!   gives every rank one whole KV head: the weights are ÷ `tp`, the K/V activations are not
//!   (counted ÷ `tp` with the rest, and marked an estimate).
//! - **Sequence parallelism** (Korthikanti et al. 2022, Table 2): the activations at the full
//!   width (norms, residual stream, the layer inputs kept by checkpointing) are ÷ `tp` too;
//!   without it only the head- and MLP-width activations are.
//! - **Pipeline parallelism**: `L/pp` whole layers per stage (strict: `pp` must divide the
//!   layers, Megatron's default `Number of layers should be divisible by the
//!   pipeline-model-parallel size`; uneven first/last stages are not modelled); the embedding on
//!   the first stage, the final norm, head and loss on the last; a tied head keeps a second copy
//!   of the embedding (with its gradient and optimizer states) on the last stage when `pp > 1`
//!   (`LanguageModule.setup_embeddings_and_output_layer`). 1F1B keeps `min(pp − r, m)`
//!   micro-batches in flight on stage `r` (`schedules.py`, `num_warmup_microbatches = pp − r −
//!   1`, plus the one in its steady state); interleaved 1F1B with `v` chunks keeps `min(2(pp − r
//!   − 1) + (v − 1)·pp + 1, m·v)` chunks of `L/(pp·v)` layers — on stage 0 this is Megatron's
//!   factor `1 + (pp − 1)/(pp·v)` of `theoretical_memory_usage.py`.
//! - **Activations per stage** (from [`Activations`]' split): the layers' bytes are spread
//!   over the stages in proportion to their layers (exact when every stage holds the same mix
//!   of layer kinds, else an estimate); everything outside the layers (the final norm, the head
//!   and the loss, which dominate it) and the loss's transient (`forward_peak − retained`) sit
//!   on the last stage, ÷ `tp` (the vocab-parallel cross-entropy keeps `V/tp` logits per rank)
//!   and ÷ `cp`. Other stages get no transient: the split carries no per-layer working set.
//! - **Context parallelism**: activations ÷ `cp` (each rank holds `s/cp` tokens; ring
//!   attention's K/V exchange buffers are not counted, an estimate).
//! - **Expert parallelism**: each rank holds `E/ep` experts; with balanced routing its expert
//!   activations are those of one GPU. `ZeRO` shards experts over the expert-data-parallel group
//!   (`dp·cp/ep`, Megatron's `expert_data_parallel_size`).
//! - **`ZeRO` / FSDP** (Rajbhandari et al. 2020; `deepspeed/runtime/zero`): stage 1 shards the
//!   optimizer states and master weights over `dp·cp` ranks (Megatron's distributed optimizer
//!   shards over the same group), stage 2 the gradients too, stage 3 (FSDP `FULL_SHARD`) the
//!   parameters too, plus the units gathered in flight: the two largest units of the rank (one
//!   decoder layer each; the non-layer tensors of the stage as one root unit), as FSDP2 keeps
//!   two all-gather outputs alive in the forward (current + prefetched; pytorch/pytorch#128884).
//!   FSDP `HYBRID_SHARD` shards within `shard_group` ranks. Each shard is rounded up.
//! - **The optimizer step** (`deepspeed/runtime/zero/stage_1_and_2.py` `step`, `stage3.py`
//!   `_prepare_fp32_grad_for_sub_group`): with 16-bit gradients and fp32 master weights
//!   ([`Precision::Mixed`]), `DeepSpeed` makes an fp32 copy of the rank's gradient partition for
//!   the step (per `sub_group_size` = 10⁹ elements under ZeRO-3). It is live when activations
//!   are freed, so the GPU's peak is `states + max(forward peak, that copy)`.
//! - **Offload** (ZeRO-Offload, Ren et al. 2021): `offload_optimizer` keeps the optimizer
//!   states, master weights and the gradient partition (fp32 under mixed precision) in CPU
//!   memory (`cpu_bytes`); the GPU keeps its 16-bit weights, and full gradients only under
//!   stages 0–1. `offload_params` (ZeRO-3 only) moves the parameter shards too (and implies the
//!   optimizer's offload, as FSDP's `CPUOffload(offload_params=True)` and `DeepSpeed`'s
//!   estimator assume).
//!
//! Not counted: communication buffers (DDP's 25 MB buckets, `DeepSpeed`'s `reduce_bucket_size`,
//! NCCL), `DeepSpeed` ZeRO-3's persistent small parameters (`param_persistence_threshold`),
//! allocator rounding, torch's per-tensor `step` scalars (on the CPU).

use std::fmt::Write as _;

use crate::Term;
use crate::activations::Activations;
use crate::states::{self, Held, Optimizer, Precision};
use llmsize_core::checked::{self, Checked};
use llmsize_core::layout::{Layout, Place, Tensor, TensorKind};
use llmsize_core::limits::MAX_GPUS;
use llmsize_core::spec::{Attention, Ffn, ModelSpec, OutputHead};
use llmsize_core::units::{thousands, thousands_u128};
use llmsize_core::{Overflow, SpecError};

/// How the step is spread over GPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parallelism {
    /// Data-parallel replicas (DDP, or the `ZeRO`/FSDP sharding group).
    pub dp: u64,
    /// Tensor parallelism.
    pub tp: u64,
    /// Pipeline stages.
    pub pp: u64,
    /// Context parallelism.
    pub cp: u64,
    /// Expert parallelism.
    pub ep: u64,
    /// `ZeRO` stage 0–3 (FSDP full shard = 3, `SHARD_GRAD_OP` = 2).
    pub zero: u8,
    /// FSDP hybrid shard: shard within groups of this many GPUs, replicate across them.
    pub shard_group: Option<u64>,
    /// Megatron sequence parallelism (with TP).
    pub sequence_parallel: bool,
    /// Optimizer states (and master weights) offloaded to the CPU.
    pub offload_optimizer: bool,
    /// Parameters offloaded to the CPU (ZeRO-3 / FSDP).
    pub offload_params: bool,
    /// Micro-batches per step (gradient accumulation; pipeline micro-batches).
    pub micro_batches: u64,
    /// Virtual pipeline stages per GPU (interleaved 1F1B); 1 = plain 1F1B.
    pub interleave: u64,
}

impl Default for Parallelism {
    fn default() -> Self {
        Parallelism {
            dp: 1,
            tp: 1,
            pp: 1,
            cp: 1,
            ep: 1,
            zero: 0,
            shard_group: None,
            sequence_parallel: false,
            offload_optimizer: false,
            offload_params: false,
            micro_batches: 1,
            interleave: 1,
        }
    }
}

impl Parallelism {
    /// GPUs used: `dp·tp·pp·cp`.
    ///
    /// [`validate`] refuses a layout of more than [`MAX_GPUS`] GPUs, so on a validated layout
    /// this is exact; on another one it saturates, and is only compared with a bound.
    #[must_use]
    pub fn gpus(&self) -> u64 {
        self.checked_gpus().unwrap_or(u64::MAX)
    }

    /// GPUs used, `dp·tp·pp·cp`, or the error naming the degrees.
    pub fn checked_gpus(&self) -> Result<u64, Overflow> {
        checked::product("dp·tp·pp·cp", [self.dp, self.tp, self.pp, self.cp])
    }

    /// The ranks `ZeRO`/FSDP shards over: `shard_group` (hybrid shard), else `dp·cp`; 1 without
    /// `ZeRO`.
    #[must_use]
    pub fn shard_degree(&self) -> u64 {
        if self.zero == 0 {
            1
        } else {
            // saturates: only on a layout `validate` refuses (dp·cp ≤ MAX_GPUS).
            self.shard_group
                .unwrap_or_else(|| self.dp.saturating_mul(self.cp))
        }
    }
}

/// The most loaded GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PerGpu {
    /// Its peak bytes: model states on the GPU + the larger of the forward's peak (activations
    /// of the micro-batches in flight, the loss's transient, ZeRO-3's gathered units) and the
    /// optimizer step's fp32 gradient copy.
    pub bytes: u128,
    /// Bytes kept in CPU memory for this GPU (offload).
    pub cpu_bytes: u128,
    /// Its terms (they sum to `bytes`).
    pub terms: Vec<Term>,
    /// The CPU terms (they sum to `cpu_bytes`).
    pub cpu_terms: Vec<Term>,
    /// Which rank and why it is the most loaded.
    pub most_loaded: String,
    /// Its pipeline stage (0-based).
    pub stage: u64,
    /// GPUs of the job (`dp·tp·pp·cp`).
    pub gpus: u64,
    /// Facts about the setup worth saying (`ZeRO` over one rank shards nothing, …).
    pub notes: Vec<String>,
    /// `None` when exact; else why the placement is an estimate.
    pub estimate: Option<String>,
}

/// The question: the step as one GPU sees it, and how it is spread.
#[derive(Debug, Clone, Copy)]
pub struct ParallelInput<'a> {
    /// The model.
    pub spec: &'a ModelSpec,
    /// Its layout (`layout(spec)`).
    pub layout: &'a Layout,
    /// The parameter groups as the step holds them: the first `layout.tensors.len()` in the
    /// layout's order (as `train()` builds them), then any `LoRA` adapters.
    pub held: &'a [Held],
    /// Precision policy.
    pub precision: Precision,
    /// Optimizer.
    pub optimizer: Optimizer,
    /// The parallel layout of the job.
    pub parallel: &'a Parallelism,
    /// The activations of one micro-batch on one GPU, with the tensor-parallel split.
    pub activations: &'a Activations,
    /// Sequences per micro-batch.
    pub batch: u64,
    /// Tokens per sequence.
    pub seq: u64,
}

fn invalid(field: &str, found: impl std::fmt::Display, expected: impl Into<String>) -> SpecError {
    SpecError::Invalid {
        field: field.into(),
        found: found.to_string(),
        expected: expected.into(),
    }
}

/// `⌈a/b⌉`, `a` when `b` is 0.
fn ceil(a: u128, b: u128) -> u128 {
    if b == 0 { a } else { a.div_ceil(b) }
}

/// `⌈a·num/den⌉`, checked (`what` names `a·num`).
fn scaled(what: &str, a: u128, num: u128, den: u128) -> Result<u128, Overflow> {
    Ok(ceil(checked::mul(what, a, num)?, den))
}

/// The bad-input rules: every degree positive, `ZeRO` stage 0–3, offload and hybrid shard only
/// with `ZeRO`, `tp` dividing every layer's heads and widths, `pp` (× `interleave`) dividing the
/// layers, `ep` dividing the experts and `dp·cp`.
pub fn validate(parallel: &Parallelism, spec: &ModelSpec) -> Result<(), SpecError> {
    let p = parallel;
    for (field, value) in [
        ("--dp", p.dp),
        ("--tp", p.tp),
        ("--pp", p.pp),
        ("--cp", p.cp),
        ("--ep", p.ep),
        ("--micro-batches", p.micro_batches),
        ("--interleave", p.interleave),
        ("--shard-group", p.shard_group.unwrap_or(1)),
    ] {
        if value == 0 {
            return Err(SpecError::Zero {
                field: field.into(),
            });
        }
    }
    if p.checked_gpus().map_or(true, |g| g > MAX_GPUS) {
        return Err(invalid(
            "--dp·--tp·--pp·--cp",
            format!("{}·{}·{}·{}", p.dp, p.tp, p.pp, p.cp),
            format!("at most {} GPUs in all", thousands(MAX_GPUS)),
        ));
    }
    if p.zero > 3 {
        return Err(invalid(
            "--zero",
            p.zero,
            "a ZeRO stage: 0 (DDP), 1 (optimizer states sharded), 2 (+ gradients) or 3 (+ parameters, FSDP full shard)",
        ));
    }
    if p.offload_optimizer && p.zero == 0 {
        return Err(invalid(
            "--offload-optimizer",
            "with --zero 0",
            "ZeRO stage 1, 2 or 3: ZeRO-Offload moves the sharded optimizer states",
        ));
    }
    if p.offload_params && p.zero != 3 {
        return Err(invalid(
            "--offload-params",
            format!("with --zero {}", p.zero),
            "ZeRO stage 3 (FSDP full shard): only sharded parameters can live on the CPU",
        ));
    }
    let dp_cp = checked::mul("dp·cp", p.dp, p.cp)?;
    if let Some(g) = p.shard_group {
        if p.zero == 0 {
            return Err(invalid(
                "--shard-group",
                g,
                "ZeRO stage 1–3 (hybrid shard shards within the group)",
            ));
        }
        if !dp_cp.is_multiple_of(g) {
            return Err(invalid(
                "--shard-group",
                g,
                format!("a divisor of the {dp_cp} data-parallel ranks (dp·cp)"),
            ));
        }
        if !g.is_multiple_of(p.ep) {
            return Err(invalid(
                "--shard-group",
                g,
                format!(
                    "a multiple of --ep = {} (experts are sharded over group/ep ranks)",
                    p.ep
                ),
            ));
        }
    }
    let layers = spec.num_layers();
    let stages = checked::mul("pp·interleave", p.pp, p.interleave)?;
    if !layers.is_multiple_of(stages) {
        return Err(if p.interleave == 1 {
            invalid(
                "--pp",
                p.pp,
                format!(
                    "a divisor of the {layers} layers: every stage holds the same number of whole layers (Megatron's default rule; uneven first/last stages are not modelled)"
                ),
            )
        } else {
            invalid(
                "--interleave",
                p.interleave,
                format!(
                    "a value with pp·interleave dividing the {layers} layers (each virtual stage holds the same number of whole layers)"
                ),
            )
        });
    }
    if p.interleave > 1 {
        if p.pp < 2 {
            return Err(invalid(
                "--interleave",
                p.interleave,
                "1 without pipeline parallelism (interleaving splits a stage's layers into chunks)",
            ));
        }
        if !p.micro_batches.is_multiple_of(p.pp) {
            return Err(invalid(
                "--micro-batches",
                p.micro_batches,
                format!(
                    "a multiple of --pp = {} with an interleaved schedule (Megatron's schedule runs micro-batches in groups of pp)",
                    p.pp
                ),
            ));
        }
    }
    let mut moe = false;
    for layer in spec.layer_kinds() {
        for a in std::iter::once(&layer.attention).chain(&layer.cross_attention) {
            match a {
                Attention::Standard(a) | Attention::CacheOnly(a) => {
                    if !a.num_heads.is_multiple_of(p.tp) {
                        return Err(invalid(
                            "--tp",
                            p.tp,
                            format!(
                                "a divisor of the {} attention heads (each rank computes whole heads)",
                                a.num_heads
                            ),
                        ));
                    }
                    let kv = a.num_kv_heads;
                    if kv >= p.tp && !kv.is_multiple_of(p.tp) {
                        return Err(invalid(
                            "--tp",
                            p.tp,
                            format!(
                                "a divisor of the {kv} key/value heads, or a multiple of them (each rank then keeps one whole KV head, as Megatron does)"
                            ),
                        ));
                    }
                    if kv < p.tp && !p.tp.is_multiple_of(kv) {
                        return Err(invalid(
                            "--tp",
                            p.tp,
                            format!(
                                "a multiple of the {kv} key/value heads when larger than them (each rank keeps one whole KV head, as Megatron does)"
                            ),
                        ));
                    }
                }
                Attention::Latent(a) => {
                    if !a.num_heads.is_multiple_of(p.tp) {
                        return Err(invalid(
                            "--tp",
                            p.tp,
                            format!("a divisor of the {} attention heads", a.num_heads),
                        ));
                    }
                }
                Attention::Absent => {}
            }
        }
        let width = |m: &llmsize_core::spec::Mlp, what: &str| {
            if m.intermediate.is_multiple_of(p.tp) {
                Ok(())
            } else {
                Err(invalid(
                    "--tp",
                    p.tp,
                    format!("a divisor of the {what} width {}", m.intermediate),
                ))
            }
        };
        match &layer.ffn {
            Ffn::Dense(m) => width(m, "MLP")?,
            Ffn::Moe(m) => {
                moe = true;
                width(&m.expert, "expert")?;
                if let Some(s) = &m.shared {
                    width(s, "shared expert")?;
                }
                if !m.num_experts.is_multiple_of(p.ep) {
                    return Err(invalid(
                        "--ep",
                        p.ep,
                        format!("a divisor of the {} experts", m.num_experts),
                    ));
                }
            }
            Ffn::Absent => {}
        }
    }
    if p.ep > 1 {
        if !moe {
            return Err(invalid(
                "--ep",
                p.ep,
                "1 for a model without mixture-of-experts layers",
            ));
        }
        if !dp_cp.is_multiple_of(p.ep) {
            return Err(invalid(
                "--ep",
                p.ep,
                format!(
                    "a divisor of the {dp_cp} data-parallel ranks (dp·cp): expert parallelism lives inside data parallelism"
                ),
            ));
        }
    }
    Ok(())
}

/// Bytes of a group of tensors: weights, gradients, optimizer states on the GPU (master
/// weights included, torch's CPU `step` scalars not), trained elements, and elements of a
/// quantized base whose bytes are given as one total.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Part {
    w: u128,
    g: u128,
    o: u128,
    n: u128,
    q: u128,
}

impl Part {
    fn plus(self, x: Part) -> Result<Part, Overflow> {
        let f = |a, b| checked::add("bytes of the parameter groups", a, b);
        Ok(Part {
            w: f(self.w, x.w)?,
            g: f(self.g, x.g)?,
            o: f(self.o, x.o)?,
            n: f(self.n, x.n)?,
            q: f(self.q, x.q)?,
        })
    }

    fn times(self, k: u128) -> Result<Part, Overflow> {
        let f = |a| checked::mul("bytes of one tensor·layers", a, k);
        Ok(Part {
            w: f(self.w)?,
            g: f(self.g)?,
            o: f(self.o)?,
            n: f(self.n)?,
            q: f(self.q)?,
        })
    }

    /// `self·num/den`, rounded down (exact when `den` divides, as for whole layers).
    fn share(self, num: u128, den: u128) -> Result<Part, Overflow> {
        if den == 0 {
            return Ok(Part::default());
        }
        let f = |x: u128| {
            (Checked::new(x) * num / den).get("bytes of a kind·layers on the stage / its layers")
        };
        Ok(Part {
            w: f(self.w)?,
            g: f(self.g)?,
            o: f(self.o)?,
            n: f(self.n)?,
            q: f(self.q)?,
        })
    }
}

/// Dense and routed-expert bytes (sharded over different groups).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Pair {
    dense: Part,
    expert: Part,
}

impl Pair {
    fn plus(self, x: Pair) -> Result<Pair, Overflow> {
        Ok(Pair {
            dense: self.dense.plus(x.dense)?,
            expert: self.expert.plus(x.expert)?,
        })
    }

    fn share(self, num: u128, den: u128) -> Result<Pair, Overflow> {
        Ok(Pair {
            dense: self.dense.share(num, den)?,
            expert: self.expert.share(num, den)?,
        })
    }

    fn all(self) -> Result<Part, Overflow> {
        self.dense.plus(self.expert)
    }
}

/// How tensor parallelism cuts a tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cut {
    /// Whole on every rank.
    Whole,
    /// Output rows ÷ `tp` (column-parallel, vocab-parallel tables).
    Rows,
    /// Input columns (or a vector's length) ÷ `tp` (row-parallel, column-parallel biases).
    Cols,
}

/// The cut of a tensor, and whether it is a routed expert's.
fn cut_of(kind: TensorKind, t: Option<&Tensor>) -> (Cut, bool) {
    use TensorKind as K;
    match kind {
        K::TokenEmbedding
        | K::Output
        | K::AttnQ
        | K::AttnK
        | K::AttnV
        | K::AttnQkv
        | K::AttnKvB
        | K::FfnGate
        | K::FfnUp
        | K::SharedGate
        | K::SharedUp => (Cut::Rows, false),
        K::AttnOutput | K::FfnDown | K::SharedDown | K::Sinks => (Cut::Cols, false),
        K::ExpertGate | K::ExpertUp => (Cut::Rows, true),
        K::ExpertDown => (Cut::Cols, true),
        // A bias follows its projection: split with a column-parallel one, whole after a
        // row-parallel one (added once, after the all-reduce).
        K::Bias => match t.map(|t| t.name.local.as_ref()) {
            Some(
                "attn_q" | "attn_k" | "attn_v" | "attn_qkv" | "ffn_gate" | "ffn_up"
                | "ffn_gate_shexp" | "ffn_up_shexp",
            ) => (Cut::Cols, false),
            Some("ffn_gate_up_exps.bias") => (Cut::Cols, true),
            Some("ffn_down_exps.bias") => (Cut::Whole, true),
            Some(l) if l.starts_with("output.bias") => (Cut::Cols, false),
            _ => (Cut::Whole, false),
        },
        _ => (Cut::Whole, false),
    }
}

/// One tensor of the group as one rank holds it.
fn local(h: &Held, t: Option<&Tensor>, p: &Parallelism) -> Result<(Held, bool), SpecError> {
    let (cut, expert) = if h.adapter {
        (Cut::Whole, false)
    } else {
        cut_of(h.kind, t)
    };
    let (elements, matrix) = if let Some(t) = t {
        let copies = if expert {
            t.copies.div_ceil(p.ep)
        } else {
            t.copies
        };
        let (rows, cols) = match cut {
            Cut::Whole => (t.rows, t.cols),
            Cut::Rows => (t.rows.div_ceil(p.tp), t.cols),
            Cut::Cols => (t.rows, t.cols.div_ceil(p.tp)),
        };
        let elements = (Checked::new(copies) * rows * cols).get("copies·rows·cols on a rank")?;
        (elements, h.matrix.map(|_| (rows, cols)))
    } else {
        let mut e = h.elements;
        if cut != Cut::Whole {
            e = e.div_ceil(p.tp);
        }
        if expert {
            e = e.div_ceil(p.ep);
        }
        (e, h.matrix)
    };
    Ok((
        Held {
            elements,
            tensors: 1,
            matrix,
            stored_bytes: h.stored_bytes.map(|_| 0),
            ..h.clone()
        },
        expert,
    ))
}

/// Where a group sits along the pipeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum At {
    /// In the layers of one kind (global kind index).
    Kind(usize),
    /// The first stage (embeddings, model-level extras such as a vision tower).
    First,
    /// The last stage (final norm, head).
    Last,
    /// With layer `i` of all stacks (a later stack's own tensors).
    Index(u64),
}

/// The layer stacks as one sequence of layers: offsets, and a global index per layer kind.
struct Kinds {
    offsets: Vec<u64>,
    lens: Vec<u64>,
    id: Vec<Vec<usize>>,
    counts: Vec<u64>,
}

impl Kinds {
    fn new(spec: &ModelSpec) -> Self {
        let mut k = Kinds {
            offsets: Vec::new(),
            lens: Vec::new(),
            id: Vec::new(),
            counts: Vec::new(),
        };
        let mut offset = 0u64;
        for s in &spec.stacks {
            k.offsets.push(offset);
            k.lens.push(s.layers.len());
            // saturates: never once `ModelSpec::total_layers` (checked) is a u64, and the
            // offsets are read only then.
            offset = offset.saturating_add(s.layers.len());
            let mut ids = Vec::new();
            for (_, n) in s.layers.kind_counts() {
                ids.push(k.counts.len());
                k.counts.push(n);
            }
            k.id.push(ids);
        }
        k
    }

    fn at(&self, h: &Held) -> At {
        let last_stack = self.offsets.len().saturating_sub(1);
        match h.place {
            Place::Input => At::First,
            Place::StackStart(s) => match self.offsets.get(s) {
                Some(&o) if s > 0 => At::Index(o),
                _ => At::First,
            },
            Place::Layer { stack, kind } => self
                .id
                .get(stack)
                .and_then(|ids| ids.get(kind))
                .map_or(At::First, |&k| At::Kind(k)),
            Place::StackEnd(s) if s < last_stack => match (self.offsets.get(s), self.lens.get(s)) {
                // The last layer of the stack; saturates: never, o + n − 1 ≤ the total layers.
                (Some(&o), Some(&n)) => At::Index(o.saturating_add(n.saturating_sub(1))),
                _ => At::Last,
            },
            // Model-level extras (a vision tower, per-layer input tables) feed the input.
            Place::Output
                if matches!(
                    h.kind,
                    TensorKind::Matrix | TensorKind::Block | TensorKind::Vector
                ) =>
            {
                At::First
            }
            Place::StackEnd(_) | Place::Output => At::Last,
        }
    }
}

/// What one pipeline stage's GPU holds.
#[allow(
    clippy::struct_excessive_bools,
    reason = "each flag is a fact of the stage the description names"
)]
#[derive(Debug, Clone, Default)]
struct Rank {
    stage: u64,
    /// Layers on the stage.
    layers: u64,
    /// Chunks of `c` layers in flight (micro-batches × chunks).
    chunks: u64,
    first: bool,
    last: bool,
    tied_copy: bool,
    /// The stage holds every layer kind in the model's proportion.
    proportional: bool,
    weights: u128,
    grads: u128,
    optimizer: u128,
    gathered: u128,
    units: (u128, u128),
    act_layers: u128,
    act_outside: u128,
    act_transient: u128,
    step: u128,
    cpu_weights: u128,
    cpu_grads: u128,
    cpu_optimizer: u128,
    /// The rank's tensors before `ZeRO` (for the formulas).
    held: Pair,
    stored: (u128, u128),
    total: u128,
}

impl Rank {
    fn forward(&self) -> Result<u128, Overflow> {
        checked::sum(
            "forward peak on a rank",
            [
                self.gathered,
                self.act_layers,
                self.act_outside,
                self.act_transient,
            ],
        )
    }
}

/// The layers on each pipeline rank, as runs of `(global kind, layers)`: virtual stage `vs`
/// holds layers `[vs·c, (vs + 1)·c)` of the stacks taken as one sequence, and sits on rank
/// `vs mod pp`. O(runs + stages), never O(layers).
fn stage_layers(
    spec: &ModelSpec,
    kinds: &Kinds,
    chunk: u64,
    pp: u64,
) -> Result<Vec<Vec<(usize, u64)>>, Overflow> {
    let mut on_rank: Vec<Vec<(usize, u64)>> = vec![Vec::new(); checked::to_usize("--pp", pp)?];
    for (si, stack) in spec.stacks.iter().enumerate() {
        let offset = kinds.offsets.get(si).copied().unwrap_or(0);
        for run in stack.layers.runs() {
            let Some(&k) = kinds.id.get(si).and_then(|ids| ids.get(run.kind)) else {
                continue;
            };
            let g0 = checked::add("offset + run start", offset, run.start)?;
            let g1 = checked::add("run start + count", g0, run.count)?;
            let mut vs = checked::div("layer / c", g0, chunk)?;
            loop {
                let start = checked::mul("virtual stage·c", vs, chunk)?;
                if start >= g1 {
                    break;
                }
                // saturates: harmless, a bound of `min` with the run's end.
                let end = g1.min(start.saturating_add(chunk));
                let n = checked::sub("layers of a run on a stage", end, g0.max(start))?;
                let r = checked::rem("virtual stage mod pp", vs, pp)?;
                if let Some(list) = on_rank.get_mut(checked::to_usize("stage", r)?) {
                    match list.last_mut() {
                        Some((last, m)) if *last == k => {
                            *m = checked::add("layers on a rank", *m, n)?;
                        }
                        _ => list.push((k, n)),
                    }
                }
                vs = checked::add("virtual stage + 1", vs, 1)?;
            }
        }
    }
    Ok(on_rank)
}

/// The GPUs' bytes under `input.parallel`, and the most loaded one.
///
/// In phases: the groups' bytes on one rank by where they sit ([`Groups::of`]), the layers of
/// each stage ([`Stages::new`]), each rank's bytes ([`rank`]), and what is estimated or worth
/// saying ([`estimates`], [`notes`]).
pub fn per_gpu(input: &ParallelInput<'_>) -> Result<PerGpu, SpecError> {
    let p = input.parallel;
    validate(p, input.spec)?;
    let sp = sequence_split(input)?;
    let kinds = Kinds::new(input.spec);
    let groups = Groups::of(input, &kinds)?;
    let stages = Stages::new(input.spec, &kinds, p)?;
    let a = input.activations;
    let step = Step {
        input: *input,
        kinds: &kinds,
        groups: &groups,
        stages: &stages,
        s: u128::from(p.shard_degree()),
        s_e: u128::from(checked::div("shard degree / ep", p.shard_degree(), p.ep)?.max(1)),
        sp,
        // The peak includes what is held: never floored.
        transient: a.forward_peak.saturating_sub(a.retained),
        kinds_used: kinds
            .counts
            .iter()
            .enumerate()
            .filter(|&(k, n)| *n > 0 && groups.per_kind.get(k).is_some())
            .count(),
    };

    let mut best: Option<Rank> = None;
    let mut uneven_mix = false;
    let mut first_last: (u128, u128) = (0, 0);
    for (stage, list) in (0u64..).zip(&stages.on_rank) {
        let rank = rank(&step, stage, list)?;
        uneven_mix |= !rank.proportional;
        if rank.first {
            first_last.0 = rank.total;
        }
        if rank.last {
            first_last.1 = rank.total;
        }
        if best.as_ref().is_none_or(|b| rank.total > b.total) {
            best = Some(rank);
        }
    }
    // `--pp` ≥ 1 (validated): there is a rank.
    let rank = best.ok_or_else(|| SpecError::Zero {
        field: "--pp".into(),
    })?;

    let why = estimates(input, &groups, uneven_mix);
    let notes = notes(p, &rank)?;
    let (terms, cpu_terms) = terms(&rank, input, step.s, step.s_e, sp, step.transient)?;
    let bytes = crate::sum(&terms, "memory per GPU")?;
    let cpu_bytes = crate::sum(&cpu_terms, "CPU memory per GPU")?;
    let most_loaded = describe(&rank, p, first_last);
    Ok(PerGpu {
        bytes,
        cpu_bytes,
        terms,
        cpu_terms,
        most_loaded,
        stage: rank.stage,
        gpus: p.gpus(),
        notes,
        estimate: (!why.is_empty()).then(|| why.join("; ")),
    })
}

/// The tokens as context and sequence parallelism split them: `cp` divides the sequence,
/// and under sequence parallelism `tp` divides each context-parallel rank's tokens. Returns
/// whether sequence parallelism is on.
fn sequence_split(input: &ParallelInput<'_>) -> Result<bool, SpecError> {
    let p = input.parallel;
    if !input.seq.is_multiple_of(p.cp) {
        return Err(invalid(
            "--cp",
            p.cp,
            format!(
                "a divisor of the {} tokens (each rank holds s/cp of them)",
                input.seq
            ),
        ));
    }
    let sp = p.sequence_parallel && p.tp > 1;
    let per_cp = checked::div("s / cp", input.seq, p.cp)?;
    if sp && !per_cp.is_multiple_of(p.tp) {
        return Err(invalid(
            "--tp",
            p.tp,
            format!(
                "a divisor of the {per_cp} tokens per context-parallel rank under sequence parallelism (each rank holds s/tp of them)"
            ),
        ));
    }
    Ok(sp)
}

/// Every parameter group's bytes on one rank, by where it sits along the pipeline.
#[derive(Debug, Clone, Default)]
struct Groups {
    /// In the layers, by global layer kind.
    per_kind: Vec<Pair>,
    /// Outside the layers (the tied embedding's copy on the last stage among them).
    parts: Vec<(At, Pair)>,
    /// A quantized base's bytes, given as one total for its elements.
    stored_total: u128,
    stored_elements: u128,
    /// The token embedding's copy on the last stage: a tied head under pipeline parallelism.
    tied_copy: Option<Pair>,
    /// Some group is a tensor the layout does not type (a mixer, a vision tower).
    extras: bool,
    /// Some group is a `LoRA` adapter.
    adapters: bool,
}

impl Groups {
    fn of(input: &ParallelInput<'_>, kinds: &Kinds) -> Result<Self, SpecError> {
        let p = input.parallel;
        let tied = matches!(input.spec.head, OutputHead::Lm { tied: true, .. }) && p.pp > 1;
        let mut g = Groups {
            per_kind: vec![Pair::default(); kinds.counts.len()],
            ..Groups::default()
        };
        for (i, h) in input.held.iter().enumerate() {
            let t = input
                .layout
                .tensors
                .get(i)
                .filter(|t| !h.adapter && t.kind == h.kind && t.place == h.place);
            let (one, expert) = local(h, t, p)?;
            let unit = unit(input, h, &one)?.times(u128::from(h.tensors))?;
            if let Some(b) = h.stored_bytes {
                g.stored_total = checked::add("quantized base bytes", g.stored_total, b)?;
                g.stored_elements = (Checked::new(g.stored_elements)
                    + Checked::new(u128::from(h.elements)) * u128::from(h.tensors))
                .get("quantized base elements")?;
            }
            g.extras |= matches!(
                h.kind,
                TensorKind::Matrix | TensorKind::Block | TensorKind::Vector
            );
            g.adapters |= h.adapter;
            let pair = if expert {
                Pair {
                    expert: unit,
                    ..Pair::default()
                }
            } else {
                Pair {
                    dense: unit,
                    ..Pair::default()
                }
            };
            match kinds.at(h) {
                At::Kind(k) => {
                    if let Some(x) = g.per_kind.get_mut(k) {
                        *x = x.plus(pair)?;
                    }
                }
                at => g.parts.push((at, pair)),
            }
            if tied && g.tied_copy.is_none() && h.kind == TensorKind::TokenEmbedding && !h.adapter {
                g.tied_copy = Some(pair);
            }
        }
        if let Some(copy) = g.tied_copy {
            g.parts.push((At::Last, copy));
        }
        Ok(g)
    }

    /// The quantized base's bytes of `q` of its elements, in proportion.
    fn stored(&self, q: u128) -> Result<u128, Overflow> {
        Ok(
            checked::mul("quantized bytes·elements", self.stored_total, q)?
                .checked_div(self.stored_elements)
                .unwrap_or(0),
        )
    }
}

/// One tensor of group `h` as a rank holds it (`one`): its bytes, trained and quantized
/// elements.
fn unit(input: &ParallelInput<'_>, h: &Held, one: &Held) -> Result<Part, SpecError> {
    let s = states::model_states(std::slice::from_ref(one), input.precision, input.optimizer)?;
    Ok(Part {
        w: s.weights_bytes,
        g: s.gradient_bytes,
        o: checked::sub(
            "optimizer states − CPU step scalars",
            s.optimizer_state_bytes,
            s.step_bytes_cpu,
        )?,
        n: if h.trainable {
            u128::from(one.elements)
        } else {
            0
        },
        q: if h.stored_bytes.is_some() {
            u128::from(one.elements)
        } else {
            0
        },
    })
}

/// The layers of each pipeline stage, from the runs: O(runs + stages).
struct Stages {
    /// Layers of the model.
    layers: u64,
    /// Layers of one virtual stage (`c`).
    chunk: u64,
    pp: u64,
    /// The last stage.
    last: u64,
    /// The runs of `(global kind, layers)` on each rank.
    on_rank: Vec<Vec<(usize, u64)>>,
}

impl Stages {
    fn new(spec: &ModelSpec, kinds: &Kinds, p: &Parallelism) -> Result<Self, SpecError> {
        let layers = spec.total_layers()?;
        let chunk = checked::div(
            "layers / (pp·interleave)",
            layers,
            checked::mul("pp·interleave", p.pp, p.interleave)?,
        )?;
        Ok(Stages {
            layers,
            chunk,
            pp: p.pp,
            on_rank: stage_layers(spec, kinds, chunk, p.pp)?,
            last: checked::sub("pp − 1", p.pp, 1)?,
        })
    }

    /// The rank of a group outside the layers.
    fn rank_of(&self, at: At) -> Result<u64, Overflow> {
        Ok(match at {
            At::First | At::Kind(_) => 0,
            At::Last => self.last,
            // No layers: every index is layer 0's.
            At::Index(i) => {
                let virtual_stage = checked::div(
                    "layer / c",
                    i.min(self.layers.saturating_sub(1)),
                    self.chunk,
                )?;
                checked::rem("virtual stage mod pp", virtual_stage, self.pp)?
            }
        })
    }
}

/// What every rank's arithmetic shares.
struct Step<'a> {
    input: ParallelInput<'a>,
    kinds: &'a Kinds,
    groups: &'a Groups,
    stages: &'a Stages,
    /// The shard degree of dense states (`S`) and of routed experts' (`S_e`).
    s: u128,
    s_e: u128,
    /// Sequence parallelism is on.
    sp: bool,
    /// The forward's peak beyond what is retained (the loss's transient).
    transient: u128,
    /// Layer kinds with layers and groups.
    kinds_used: usize,
}

/// The bytes of pipeline stage `stage`'s GPU, holding the layer runs `list`.
fn rank(step: &Step<'_>, stage: u64, list: &[(usize, u64)]) -> Result<Rank, SpecError> {
    let last_stage = step.stages.last;
    let mut rank = Rank {
        stage,
        first: stage == 0,
        last: stage == last_stage,
        tied_copy: step.groups.tied_copy.is_some() && stage == last_stage,
        ..Rank::default()
    };
    let units = held_on(step, list, &mut rank)?;
    model_states_on(step, units, &mut rank)?;
    activations_on(step, &mut rank)?;
    rank.total = checked::sum(
        "bytes on a rank",
        [
            rank.weights,
            rank.grads,
            rank.optimizer,
            rank.forward()?.max(rank.step),
        ],
    )?;
    Ok(rank)
}

/// What the rank holds before `ZeRO`: its layers' share of each kind and the groups outside
/// the layers on its stage. Sets its layers, `proportional` and `held`; returns the units
/// `ZeRO`-3 gathers, as (bytes of one, how many): a layer of each kind, the groups outside
/// the layers as one.
fn held_on(
    step: &Step<'_>,
    list: &[(usize, u64)],
    rank: &mut Rank,
) -> Result<Vec<(u128, u64)>, SpecError> {
    let g = step.groups;
    let mut held = Pair::default();
    let mut units: Vec<(u128, u64)> = Vec::new();
    let mut distinct = 0usize;
    rank.proportional = true;
    for &(k, n) in list {
        let (Some(total), Some(&count)) = (g.per_kind.get(k), step.kinds.counts.get(k)) else {
            continue;
        };
        held = held.plus(total.share(u128::from(n), u128::from(count))?)?;
        rank.layers = checked::add("layers on a rank", rank.layers, n)?;
        let all = total.all()?;
        let one = ((Checked::new(all.w) + g.stored(all.q)?) / u128::from(count.max(1)))
            .get("(W + stored bytes) / layers of the kind")?;
        units.push((one, n));
        if n.checked_mul(step.input.parallel.pp) != Some(count) {
            rank.proportional = false;
        }
        distinct = checked::add("layer kinds on a rank", distinct, 1)?;
    }
    if distinct != step.kinds_used {
        rank.proportional = false;
    }
    let mut root = 0u128;
    for (at, pair) in &g.parts {
        if step.stages.rank_of(*at)? == rank.stage {
            held = held.plus(*pair)?;
            let all = pair.all()?;
            root = checked::sum("bytes outside the layers", [root, all.w, g.stored(all.q)?])?;
        }
    }
    if root > 0 {
        units.push((root, 1));
    }
    rank.held = held;
    Ok(units)
}

/// The rank's weights, gradients, optimizer states and the optimizer step's fp32 gradient
/// copy under `ZeRO` and offload; `units` are what `ZeRO`-3 gathers (see [`held_on`]).
fn model_states_on(
    step: &Step<'_>,
    mut units: Vec<(u128, u64)>,
    rank: &mut Rank,
) -> Result<(), SpecError> {
    let p = step.input.parallel;
    let (s, s_e) = (step.s, step.s_e);
    let offload = p.offload_optimizer || p.offload_params;
    let (d, e) = (rank.held.dense, rank.held.expert);
    rank.stored = (step.groups.stored(d.q)?, step.groups.stored(e.q)?);
    let (wd, we) = (
        checked::add("W_dense + stored bytes", d.w, rank.stored.0)?,
        checked::add("W_experts + stored bytes", e.w, rank.stored.1)?,
    );
    let sharded =
        |x: u128, y: u128| checked::add("⌈dense ÷ S⌉ + ⌈experts ÷ S_e⌉", ceil(x, s), ceil(y, s_e));
    // Weights.
    if p.zero == 3 {
        let w = sharded(wd, we)?;
        if p.offload_params {
            rank.cpu_weights = w;
        } else {
            rank.weights = w;
        }
        units.sort_by_key(|u| std::cmp::Reverse(u.0));
        let mut two = units
            .iter()
            .flat_map(|&(w, n)| std::iter::repeat_n(w, if n >= 2 { 2 } else { 1 }))
            .take(2);
        rank.units = (two.next().unwrap_or(0), two.next().unwrap_or(0));
        rank.gathered = checked::add("two units in flight", rank.units.0, rank.units.1)?;
    } else {
        rank.weights = checked::add("W_dense + W_experts", wd, we)?;
    }
    // Gradients.
    if p.zero >= 2 {
        if !offload {
            rank.grads = sharded(d.g, e.g)?;
        }
    } else {
        rank.grads = checked::add("G_dense + G_experts", d.g, e.g)?;
    }
    // Optimizer states and master weights.
    let opt = if p.zero >= 1 {
        sharded(d.o, e.o)?
    } else {
        checked::add("O_dense + O_experts", d.o, e.o)?
    };
    let mixed = step.input.precision == Precision::Mixed;
    if offload {
        rank.cpu_optimizer = opt;
        rank.cpu_grads = if mixed {
            sharded(
                checked::mul("4·N_dense", d.n, 4)?,
                checked::mul("4·N_experts", e.n, 4)?,
            )?
        } else {
            sharded(d.g, e.g)?
        };
    } else {
        rank.optimizer = opt;
    }
    // The optimizer step's fp32 copy of the gradient partition.
    if mixed && p.zero >= 1 && !offload {
        let elements = sharded(d.n, e.n)?;
        let elements = if p.zero == 3 {
            elements.min(ZERO3_SUB_GROUP)
        } else {
            elements
        };
        rank.step = checked::mul("4·⌈N_trained ÷ S⌉", elements, 4)?;
    }
    Ok(())
}

/// The activations of the micro-batches in flight on the rank, and on the last stage what
/// lives outside the layers and the loss's transient.
fn activations_on(step: &Step<'_>, rank: &mut Rank) -> Result<(), SpecError> {
    let p = step.input.parallel;
    let a = step.input.activations;
    let (m, v) = (p.micro_batches, p.interleave);
    rank.chunks = if v == 1 {
        checked::sub("pp − stage", p.pp, rank.stage)?.min(m)
    } else {
        // saturates: harmless, a bound of `min` (a true m·v above u64::MAX loses to the
        // other side either way).
        let bound = m.saturating_mul(v);
        ((Checked::new(p.pp) - rank.stage - 1u64) * 2u64 + (Checked::new(v) - 1u64) * p.pp + 1u64)
            .get("2·(pp − stage − 1) + (v − 1)·pp + 1")?
            .min(bound)
    };
    let (tp, cp) = (u128::from(p.tp), u128::from(p.cp));
    let l = u128::from(step.stages.layers);
    let rep_div = if step.sp { tp } else { 1 };
    let layer_mb = checked::mul(
        "chunks·c",
        u128::from(rank.chunks),
        u128::from(step.stages.chunk),
    )?;
    let tp_cp = checked::mul("tp·cp", tp, cp)?;
    rank.act_layers = checked::add(
        "activations of the layers in flight",
        scaled(
            "A_heads·layers in flight",
            a.layer_sharded,
            layer_mb,
            checked::mul("L·tp·cp", l, tp_cp)?,
        )?,
        scaled(
            "A_width·layers in flight",
            a.layer_replicated,
            layer_mb,
            (Checked::new(l) * rep_div * cp).get("L·(tp under SP)·cp")?,
        )?,
    )?;
    if rank.last {
        rank.act_outside = ceil(a.outside, tp_cp);
        rank.act_transient = ceil(step.transient, tp_cp);
    }
    Ok(())
}

/// Why the placement is an estimate (`uneven_mix`: the stages hold different mixes of
/// layer kinds).
fn estimates(input: &ParallelInput<'_>, groups: &Groups, uneven_mix: bool) -> Vec<String> {
    let p = input.parallel;
    let spec = input.spec;
    let mut why: Vec<String> = Vec::new();
    if p.pp > 1 && uneven_mix {
        why.push(
            "the stages hold different mixes of layer kinds, and the activations are spread over the stages in proportion to their layers (the split gives totals only)".into(),
        );
    }
    if p.tp > 1 {
        let replicated_kv = spec.layer_kinds().any(|l| {
            std::iter::once(&l.attention)
                .chain(&l.cross_attention)
                .any(|a| match a {
                    Attention::Standard(a) | Attention::CacheOnly(a) => a.num_kv_heads < p.tp,
                    _ => false,
                })
        });
        if replicated_kv {
            why.push(format!(
                "tp = {} exceeds the key/value heads: every rank keeps one whole KV head's K and V activations, counted as ÷ tp with the rest",
                p.tp
            ));
        }
        if groups.extras {
            why.push("tensors the layout does not type (mixers, vision towers) are kept whole on every tensor-parallel rank".into());
        }
        if groups.adapters {
            why.push("LoRA adapters are kept whole on every tensor-parallel rank (Megatron-style LoRA splits one of A and B)".into());
        }
    }
    if p.cp > 1 {
        why.push(format!(
            "context parallelism: activations ÷ cp = {}; ring attention's key/value exchange buffers are not counted",
            p.cp
        ));
    }
    if groups.stored_elements > 0 && (p.tp > 1 || p.pp > 1 || p.zero == 3) {
        why.push("the quantized base's bytes are spread over the ranks in proportion to their parameters".into());
    }
    if spec.stacks.len() > 1 && p.pp > 1 {
        why.push("an encoder-decoder's stacks are split as one sequence of layers".into());
    }
    why
}

/// Facts about the setup worth saying, for the most loaded `rank`.
fn notes(p: &Parallelism, rank: &Rank) -> Result<Vec<String>, Overflow> {
    let mut notes: Vec<String> = Vec::new();
    if p.zero >= 1 && p.shard_degree() == 1 {
        notes.push(format!(
            "ZeRO-{} over one data-parallel rank shards nothing",
            p.zero
        ));
    }
    if p.sequence_parallel && p.tp == 1 {
        notes.push("sequence parallelism needs tp > 1: off (Megatron turns it off)".into());
    }
    if p.pp > 1 && p.micro_batches < p.pp {
        notes.push(format!(
            "{} micro-batches for {} pipeline stages: the pipeline is never full (at most {} in flight)",
            p.micro_batches, p.pp, p.micro_batches
        ));
    }
    let fwd = rank.forward()?;
    if rank.step > 0 && rank.step <= fwd {
        notes.push(format!(
            "the optimizer step's fp32 gradient copy ({} bytes) stays below the forward's peak",
            thousands_u128(rank.step)
        ));
    }
    Ok(notes)
}

/// `DeepSpeed` ZeRO-3's default `sub_group_size`: the step's fp32 gradient copy is made one
/// sub-group of at most this many elements at a time.
const ZERO3_SUB_GROUP: u128 = 1_000_000_000;

fn describe(rank: &Rank, p: &Parallelism, (first, last): (u128, u128)) -> String {
    let n = thousands_u128;
    let mut how = Vec::new();
    if p.dp > 1 || p.zero > 0 {
        how.push(match p.zero {
            0 => format!("DDP over {}", p.dp),
            z => format!("ZeRO-{z} over {}", p.shard_degree()),
        });
    }
    if p.tp > 1 {
        how.push(format!(
            "tp {}{}",
            p.tp,
            if p.sequence_parallel { " + SP" } else { "" }
        ));
    }
    if p.cp > 1 {
        how.push(format!("cp {}", p.cp));
    }
    if p.ep > 1 {
        how.push(format!("ep {}", p.ep));
    }
    let how = if how.is_empty() {
        String::new()
    } else {
        format!(" ({})", how.join(", "))
    };
    if p.pp == 1 {
        return if p.gpus() == 1 {
            "one GPU".into()
        } else {
            format!("every GPU alike{how}")
        };
    }
    let role = if rank.first {
        format!(
            "the embedding and {} {} in flight",
            rank.chunks,
            if p.interleave > 1 {
                "model chunks"
            } else {
                "micro-batches"
            }
        )
    } else if rank.last {
        format!(
            "the head, the loss and its transient{}",
            if rank.tied_copy {
                ", and the tied embedding's copy"
            } else {
                ""
            }
        )
    } else {
        format!("{} micro-batches in flight", rank.chunks)
    };
    format!(
        "pipeline stage {} of {}{how}: {role}; the first stage holds {} bytes, the last {}",
        rank.stage,
        p.pp,
        n(first),
        n(last)
    )
}

fn shard_formula(sym: &str, dense: u128, expert: u128, s: u128, s_e: u128, shard: bool) -> String {
    let n = thousands_u128;
    match (shard, expert > 0) {
        (false, false) => format!("{sym} = {}", n(dense)),
        (false, true) => format!("{sym}_dense + {sym}_experts = {} + {}", n(dense), n(expert)),
        (true, false) => format!("⌈{sym} ÷ S⌉ = ⌈{} ÷ {s}⌉", n(dense)),
        (true, true) => format!(
            "⌈{sym}_dense ÷ S⌉ + ⌈{sym}_experts ÷ S_e⌉ = ⌈{} ÷ {s}⌉ + ⌈{} ÷ {s_e}⌉",
            n(dense),
            n(expert)
        ),
    }
}

fn terms(
    rank: &Rank,
    input: &ParallelInput<'_>,
    s: u128,
    s_e: u128,
    sp: bool,
    transient: u128,
) -> Result<(Vec<Term>, Vec<Term>), SpecError> {
    let p = input.parallel;
    let n = thousands_u128;
    let (d, e) = (rank.held.dense, rank.held.expert);
    let (wd, we) = (
        checked::add("W_dense + stored bytes", d.w, rank.stored.0)?,
        checked::add("W_experts + stored bytes", e.w, rank.stored.1)?,
    );
    let layers = input.spec.total_layers()?;
    let mut holds = format!("{} of {layers} layers", rank.layers);
    if p.pp > 1 || p.tp > 1 || p.ep > 1 {
        let mut cut = Vec::new();
        if p.tp > 1 {
            cut.push(format!("÷ tp = {}", p.tp));
        }
        if p.ep > 1 {
            cut.push(format!("experts ÷ ep = {}", p.ep));
        }
        if !cut.is_empty() {
            let _ = write!(holds, " ({})", cut.join(", "));
        }
        if rank.first {
            holds.push_str(", the embedding");
        }
        if rank.last {
            holds.push_str(", the final norm and head");
        }
        if rank.tied_copy {
            holds.push_str(", the tied embedding's copy");
        }
    }
    let mut t = Vec::new();
    let mut cpu = Vec::new();
    let weights = format!(
        "{holds}: {}",
        shard_formula("W", wd, we, s, s_e, p.zero == 3)
    );
    if p.offload_params {
        cpu.push(Term::new(
            "cpu_weights",
            "parameter shards, offloaded to the CPU",
            weights,
            rank.cpu_weights,
        ));
    } else {
        t.push(Term::new(
            "weights",
            if p.zero == 3 {
                "weights: this rank's shard (ZeRO-3)"
            } else {
                "weights on this GPU"
            },
            weights,
            rank.weights,
        ));
    }
    let offload = p.offload_optimizer || p.offload_params;
    if p.zero < 2 || !offload {
        t.push(Term::new(
            "gradients",
            if p.zero >= 2 {
                "gradients: this rank's shard"
            } else {
                "gradients on this GPU"
            },
            shard_formula("G", d.g, e.g, s, s_e, p.zero >= 2),
            rank.grads,
        ));
    }
    let opt = shard_formula("O", d.o, e.o, s, s_e, p.zero >= 1);
    if offload {
        cpu.push(Term::new(
            "cpu_optimizer_states",
            "optimizer states and master weights, offloaded to the CPU",
            opt,
            rank.cpu_optimizer,
        ));
        cpu.push(Term::new(
            "cpu_gradients",
            "the gradient partition the CPU optimizer steps with",
            if input.precision == Precision::Mixed {
                format!(
                    "fp32: {}",
                    shard_formula(
                        "4·N",
                        checked::mul("4·N_dense", d.n, 4)?,
                        checked::mul("4·N_experts", e.n, 4)?,
                        s,
                        s_e,
                        true
                    )
                )
            } else {
                shard_formula("G", d.g, e.g, s, s_e, true)
            },
            rank.cpu_grads,
        ));
    } else {
        t.push(Term::new(
            "optimizer_states",
            "optimizer states (with any fp32 master weights)",
            opt,
            rank.optimizer,
        ));
    }
    let fwd = rank.forward()?;
    if rank.step > fwd {
        t.push(Term::new(
            "optimizer_step",
            "the step's fp32 copy of the gradient partition (DeepSpeed), above the forward's peak",
            format!(
                "4·⌈N_trained ÷ S⌉ = 4·{} (forward peak: {})",
                n(rank.step / 4),
                n(fwd)
            ),
            rank.step,
        ));
        return Ok((t, cpu));
    }
    if p.zero == 3 {
        t.push(Term::new(
            "gathered_units",
            "full parameters of the two units in flight (current + prefetched; FSDP2 keeps two all-gathers alive)",
            format!("{} + {}", n(rank.units.0), n(rank.units.1)),
            rank.gathered,
        ));
    }
    let a = input.activations;
    let chunk = checked::div(
        "layers / (pp·interleave)",
        layers,
        checked::mul("pp·interleave", p.pp, p.interleave)?,
    )?;
    let in_flight = if p.interleave > 1 {
        format!("{} chunks × {chunk} layers", rank.chunks)
    } else {
        format!("{} × {chunk} layers", rank.chunks)
    };
    let tp_cp = checked::mul("tp·cp", p.tp, p.cp)?;
    let cp = if p.cp > 1 {
        format!(" ÷ cp {}", p.cp)
    } else {
        String::new()
    };
    t.push(Term::new(
        "activations",
        "activations held for backward by the layers, for every micro-batch in flight",
        format!(
            "{in_flight} of {layers}: (A_heads ÷ tp + A_width{}){cp} = ({} ÷ {} + {}{}) × {}/{}{cp}",
            if sp { " ÷ tp" } else { "" },
            n(a.layer_sharded),
            p.tp,
            n(a.layer_replicated),
            if sp {
                format!(" ÷ {}", p.tp)
            } else {
                String::new()
            },
            checked::mul("chunks·c", u128::from(rank.chunks), u128::from(chunk))?,
            layers
        ),
        rank.act_layers,
    ));
    if rank.last {
        t.push(Term::new(
            "activations_outside",
            "activations outside the layers (final norm, head, loss; vocab-parallel)",
            format!("⌈{} ÷ {tp_cp}⌉", n(a.outside)),
            rank.act_outside,
        ));
        t.push(Term::new(
            "activation_transient",
            "the loss's transient at the forward's peak (vocab-parallel)",
            format!("⌈(peak − held) ÷ {tp_cp}⌉ = ⌈{} ÷ {tp_cp}⌉", n(transient)),
            rank.act_transient,
        ));
    }
    Ok((t, cpu))
}
