//! Inference memory: weights in a storage format, the KV cache from each layer's real
//! attention, a prefill activation workspace and a runtime overhead, per GPU.
//!
//! Every line item carries its formula and assumption; nothing is hidden in a fudge factor.

use crate::checked::{self, Checked};
use crate::error::{Overflow, SpecError};
use crate::expr::Expr;
use crate::formats::{KvDtype, MixContext, WeightFormat};
use crate::gpu::Gpu;
use crate::layout::{AttentionGeometry, CacheShape, StateGeometry, layout, tensors};
use crate::spec::{Attention, Ffn, ModelSpec, OutputHead, StackRole};

/// How a DeepSeek MLA cache is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum MlaCache {
    /// The compressed latent `kv_lora_rank + qk_rope_head_dim` per token and layer (vLLM,
    /// `SGLang`, transformers).
    #[default]
    #[cfg_attr(
        feature = "clap",
        value(help = "`kv_lora_rank + qk_rope_head_dim` per token and layer")
    )]
    Latent,
    /// Keys and values expanded per head (`n_h·(d_nope + d_rope)` + `n_h·d_v`), as some
    /// runtimes do.
    #[cfg_attr(feature = "clap", value(help = "Per-head K and V"))]
    Expanded,
}

/// Whose KV cache layout to size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum CachePolicy {
    /// What transformers' own cache holds after a prefill: `sliding_window − 1` tokens in a
    /// sliding layer, and the heads its attention caches (Falcon's new layout: all of them).
    #[default]
    #[cfg_attr(
        feature = "clap",
        value(help = "What transformers' cache holds after a prefill")
    )]
    Transformers,
    /// A serving runtime (vLLM, llama.cpp): the whole window, grouped KV heads only.
    #[cfg_attr(
        feature = "clap",
        value(help = "What a serving runtime (vLLM, llama.cpp) holds")
    )]
    Runtime,
}

/// The question asked.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MemoryOptions {
    /// Weight storage.
    pub format: WeightFormat,
    /// Tokens per sequence (prompt + generated so far).
    pub seq_len: u64,
    /// Sequences.
    pub batch: u64,
    /// KV element type.
    pub kv_dtype: KvDtype,
    /// Tensor-parallel degree (weights and KV heads split this many ways).
    pub tp: u64,
    /// GPUs and their model, if asked whether it fits.
    pub gpu: Option<(&'static Gpu, u64)>,
    /// MLA cache form.
    pub mla: MlaCache,
    /// Whose cache layout (transformers' or a serving runtime's).
    pub window: CachePolicy,
    /// Runtime overhead per GPU (CUDA context, allocator), bytes.
    pub overhead_bytes: u64,
}

/// Weights of one storage kind (`Q4_K`, `16-bit`, …).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StorageLine {
    /// How the tensors are stored.
    pub storage: String,
    /// Their parameters.
    pub params: u64,
    /// Their bytes.
    pub bytes: u64,
}

/// KV cache of layers that cache alike.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KvGroup {
    /// Which stack.
    pub stack: StackRole,
    /// Layers in the group.
    pub layers: u64,
    /// What they cache (`2·n_kv·d_h`, the MLA latent, …).
    pub what: String,
    /// Elements cached per token and layer (whole model, before TP sharding).
    pub elements_per_token: u64,
    /// Tokens each layer keeps.
    pub tokens: u64,
    /// The layers' sliding window (self-attention), if they slide.
    pub window: Option<u64>,
    /// Bytes of the group for the whole batch (all GPUs).
    pub bytes: u64,
    /// Bytes of the group on one GPU.
    pub bytes_per_gpu: u64,
}

/// The memory of serving a model.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryReport {
    /// The options.
    pub options: MemoryOptions,
    /// Weights by storage kind.
    pub weights: Vec<StorageLine>,
    /// All weights, bytes.
    pub weights_bytes: u64,
    /// Parameters.
    pub params: u64,
    /// KV groups.
    pub kv: Vec<KvGroup>,
    /// Whole KV cache, bytes (all GPUs).
    pub kv_bytes: u64,
    /// KV bytes per token of context (one sequence, averaged over `seq_len`).
    pub kv_bytes_per_token_full: u64,
    /// Recurrent state of state-space / linear-attention layers (convolution and recurrent
    /// states, all sequences), bytes: fixed, whatever the context length.
    pub state_bytes: u64,
    /// Its formula, when the model keeps one.
    pub state_formula: Option<String>,
    /// Activation workspace per GPU, bytes.
    pub activation_bytes: u64,
    /// Its formula.
    pub activation_formula: String,
    /// Weights on one GPU.
    pub weights_per_gpu: u64,
    /// KV on one GPU.
    pub kv_per_gpu: u64,
    /// Total on one GPU.
    pub per_gpu: u64,
    /// Total over all GPUs.
    pub total: u64,
    /// Does it fit the named GPU (per GPU total ≤ its memory)?
    pub fits: Option<bool>,
    /// The weights were measured from weight files, not estimated from `format`.
    pub weights_from_files: bool,
    /// When the weights were measured from files: what the config's own format says they
    /// weigh, shown beside the measurement.
    pub weights_estimate_bytes: Option<u64>,
    /// Weights a release's files hold that the model does not load (DeepSeek-V3's
    /// multi-token-prediction layer, read only for speculative decoding): what they are and
    /// their bytes. Not in any total.
    pub files_only: Option<(String, u64)>,
    /// Assumptions behind the numbers.
    pub assumptions: Vec<String>,
    /// The model is an encoder alone: one forward, no KV cache, no generated tokens.
    pub encoder_only: bool,
    /// `None` when the model's structure is known exactly; else why the weights, cache and
    /// state are an estimate (`--assume`).
    pub estimate: Option<String>,
    /// A serving runtime's placement (llama.cpp, vLLM, a pipeline split), when one was asked
    /// for; the per-GPU figures above are then its most loaded GPU's.
    pub serving: Option<crate::runtime::ServingReport>,
}

/// An overflow where no operands are at hand (a storage format's `Option` arithmetic):
/// [`SpecError::TooLarge`] naming what was computed.
pub(crate) fn overflow(what: &str) -> SpecError {
    SpecError::TooLarge {
        what: what.to_owned(),
    }
}

/// The context a storage mix needs.
#[must_use]
pub fn mix_context(spec: &ModelSpec) -> MixContext {
    let mut gqa = 1;
    let mut experts = 0;
    for l in spec.layers_by_run() {
        if let Attention::Standard(a) | Attention::CacheOnly(a) = &l.attention {
            gqa = a.num_heads.checked_div(a.num_kv_heads.max(1)).unwrap_or(0);
        }
        if let Ffn::Moe(m) = &l.ffn {
            experts = m.num_experts;
        }
    }
    MixContext {
        gqa,
        experts,
        is_70b: spec.num_layers() == 80 && spec.hidden_size == 8192,
        has_output: matches!(spec.head, OutputHead::Lm { tied: false, .. }),
    }
}

/// Weights by storage kind under a format.
pub fn weight_lines(spec: &ModelSpec, format: WeightFormat) -> Result<Vec<StorageLine>, SpecError> {
    let ctx = mix_context(spec);
    let mut lines: Vec<StorageLine> = Vec::new();
    for t in tensors(spec)? {
        let stored = format
            .tensor_storage(&t, ctx)
            .ok_or_else(|| overflow(&format!("bytes of `{}`", t.name)))?;
        for (params, bytes, storage) in stored {
            match lines.iter_mut().find(|l| l.storage == storage) {
                Some(l) => {
                    l.params = checked::add("parameters of a storage", l.params, params)?;
                    l.bytes = checked::add("bytes of a storage", l.bytes, bytes)?;
                }
                None => lines.push(StorageLine {
                    storage: storage.to_owned(),
                    params,
                    bytes,
                }),
            }
        }
    }
    lines.sort_by_key(|l| std::cmp::Reverse(l.bytes));
    Ok(lines)
}

/// Tokens a layer keeps after `seq_len` tokens.
pub(crate) fn kept(window: Option<u64>, seq_len: u64, policy: CachePolicy) -> u64 {
    match window {
        None => seq_len,
        Some(w) => match policy {
            CachePolicy::Transformers => seq_len.min(w.saturating_sub(1).max(1)),
            CachePolicy::Runtime => seq_len.min(w),
        },
    }
}

/// KV cache groups for `seq_len` tokens of `batch` sequences, sharded `tp` ways.
pub fn kv_groups(spec: &ModelSpec, options: &MemoryOptions) -> Result<Vec<KvGroup>, SpecError> {
    kv_groups_of(&layout(spec)?.attention, options)
}

/// KV cache groups of a layout's attention geometry.
pub(crate) fn kv_groups_of(
    attention: &[AttentionGeometry],
    options: &MemoryOptions,
) -> Result<Vec<KvGroup>, SpecError> {
    let mut groups: Vec<KvGroup> = Vec::new();
    let tp = options.tp.max(1);
    let written = |e: &Expr| format!("{} = {}", e.symbolic(), e.numeric());
    for g in attention {
        // An encoder attends once over its whole input and caches nothing; only decoder
        // self-attention (and cross-attention over the encoder output) is cached.
        if g.stack == StackRole::Encoder && !g.cross {
            continue;
        }
        // (what, elements, per-gpu elements, tokens)
        let (what, per, per_gpu, tokens) = match &g.cache {
            CacheShape::Heads {
                formula,
                indexer,
                prefix,
                kv_heads,
                transformers_heads,
                head_dim,
                shared_kv,
                compressed,
            } => {
                // The label writes the model's `n_kv`; under transformers' layout Falcon's new
                // decoder caches every query head, and the bytes count those (the label was
                // kept as it was printed before the layout, so the JSON stays the same).
                let cached = match (g.cross, options.window) {
                    (false, CachePolicy::Transformers) => *transformers_heads,
                    _ => *kv_heads,
                };
                let copies = if *shared_kv { 1u64 } else { 2 };
                let per = (Checked::new(copies) * cached * *head_dim + *indexer)
                    .get("2·n_kv·d_h + indexer (cache elements per token)")?;
                // KV heads split across ranks; replicated when there are fewer than ranks.
                let heads_per_gpu = cached.div_ceil(tp).max(1);
                let per_gpu = (Checked::new(copies) * heads_per_gpu * *head_dim + *indexer)
                    .get("2·⌈n_kv ÷ tp⌉·d_h + indexer (cache elements per token per GPU)")?;
                if let Some(c) = compressed.filter(|_| !g.cross) {
                    compressed_group(&mut groups, g, c, options)?;
                }
                if g.cross {
                    (
                        format!(
                            "cross-attention K and V of the encoder output: {}",
                            written(formula)
                        ),
                        per,
                        per_gpu,
                        options.seq_len,
                    )
                } else {
                    let tokens = checked::add(
                        "tokens kept + prefix tokens",
                        kept(g.window, options.seq_len, options.window),
                        *prefix,
                    )?;
                    let what = match g.window {
                        Some(w) => format!("K and V: {}, sliding window {w}", written(formula)),
                        None => format!("K and V: {}", written(formula)),
                    };
                    (what, per, per_gpu, tokens)
                }
            }
            CacheShape::Latent { latent, expanded } => {
                let (what, per) = match options.mla {
                    MlaCache::Latent => {
                        (format!("MLA latent: {}", written(latent)), latent.eval()?)
                    }
                    MlaCache::Expanded => (
                        format!("MLA expanded: {}", written(expanded)),
                        expanded.eval()?,
                    ),
                };
                // The latent is shared by all heads, so every rank holds all of it.
                let per_gpu = match options.mla {
                    MlaCache::Latent => per,
                    MlaCache::Expanded => per.div_ceil(tp),
                };
                // A sliding MLA layer keeps its window like any other.
                (
                    what,
                    per,
                    per_gpu,
                    kept(g.window, options.seq_len, options.window),
                )
            }
        };
        let n = g.layers;
        let seqs = checked::mul("batch·tokens", options.batch, tokens)?;
        // Bytes of the `n` layers of this kind.
        let bytes = (Checked::new(options.kv_dtype.checked_bytes(per)?) * seqs * n)
            .get("bytes per token·batch·tokens·layers (KV cache)")?;
        let bytes_per_gpu = (Checked::new(options.kv_dtype.checked_bytes(per_gpu)?) * seqs * n)
            .get("bytes per token·batch·tokens·layers (KV cache per GPU)")?;
        match groups
            .iter_mut()
            .find(|x| x.stack == g.stack && x.what == what && x.tokens == tokens)
        {
            Some(x) => {
                x.layers = checked::add("layers of a KV group", x.layers, n)?;
                x.bytes = checked::add("KV cache bytes", x.bytes, bytes)?;
                x.bytes_per_gpu =
                    checked::add("KV cache bytes per GPU", x.bytes_per_gpu, bytes_per_gpu)?;
            }
            None => groups.push(KvGroup {
                stack: g.stack,
                layers: n,
                what,
                elements_per_token: per,
                tokens,
                window: if g.cross { None } else { g.window },
                bytes,
                bytes_per_gpu,
            }),
        }
    }
    Ok(groups)
}

/// DeepSeek-V4's compressed entries, buffered tokens and carried overlap of `g`'s layers, a
/// group of their own (one per sequence, held whole by every rank).
fn compressed_group(
    groups: &mut Vec<KvGroup>,
    g: &AttentionGeometry,
    c: crate::spec::CompressedCache,
    options: &MemoryOptions,
) -> Result<(), SpecError> {
    let (elements, _, _) = c.after(options.seq_len)?;
    let bytes =
        (Checked::new(options.kv_dtype.checked_bytes(elements)?) * options.batch * g.layers)
            .get("compressed cache bytes·batch·layers")?;
    let what = format!(
        "compressed K=V: one entry of {} per {} tokens{}",
        c.entry,
        c.rate,
        if c.overlap {
            ", overlapping windows"
        } else {
            ""
        }
    );
    match groups
        .iter_mut()
        .find(|x| x.stack == g.stack && x.what == what)
    {
        Some(x) => {
            x.layers = checked::add("layers of a KV group", x.layers, g.layers)?;
            x.bytes = checked::add("KV cache bytes", x.bytes, bytes)?;
            x.bytes_per_gpu = checked::add("KV cache bytes per GPU", x.bytes_per_gpu, bytes)?;
        }
        None => groups.push(KvGroup {
            stack: g.stack,
            layers: g.layers,
            what,
            elements_per_token: c.entry,
            tokens: options.seq_len.checked_div(c.rate).unwrap_or(0),
            window: None,
            bytes,
            bytes_per_gpu: bytes,
        }),
    }
    Ok(())
}

/// The state DeepSeek-V4's compressors keep beside their cache: the buffered tokens' gate
/// (model dtype) and the carried overlap's gate (float32), in bytes for the batch.
fn compressed_state(
    attention: &[AttentionGeometry],
    options: &MemoryOptions,
) -> Result<u64, SpecError> {
    let mut total = 0u64;
    for g in attention {
        if let CacheShape::Heads {
            compressed: Some(c),
            ..
        } = &g.cache
        {
            let (_, gate, carried) = c.after(options.seq_len)?;
            let one = checked::add(
                "buffered gate + overlap gate bytes",
                options.kv_dtype.checked_bytes(gate)?,
                checked::mul("4·overlap gate elements", carried, 4)?,
            )?;
            total = (Checked::new(total) + Checked::new(one) * g.layers * options.batch)
                .get("b·Σ layers·compressor state bytes")?;
        }
    }
    Ok(total)
}

/// The largest layer working set of a prefill, in elements per token: the residual and its
/// normed copy, plus the wider of attention (q, k, v, output) and the MLP's inner activations.
/// Returns `(2·d + widest, widest, what the widest is)`.
pub(crate) fn activation_elements_per_token(
    spec: &ModelSpec,
) -> Result<(u64, u64, String), SpecError> {
    let mut widest = 0u64;
    let mut why = String::new();
    for l in spec.layer_kinds() {
        let attention = match &l.attention {
            Attention::Standard(a) | Attention::CacheOnly(a) => {
                ((Checked::new(a.num_heads) * 2u64 + Checked::new(a.num_kv_heads) * 2u64)
                    * a.head_dim)
                    .get("(2·n_h + 2·n_kv)·d_h (attention activations per token)")?
            }
            Attention::Latent(a) => {
                ((Checked::new(a.qk_nope_head_dim) + a.qk_rope_head_dim) * a.num_heads * 2u64
                    + Checked::new(a.num_heads) * a.v_head_dim * 2u64)
                    .get("2·n_h·(d_nope + d_rope) + 2·n_h·d_v (attention activations per token)")?
            }
            Attention::Absent => 0,
        };
        let mlp = match &l.ffn {
            Ffn::Dense(m) => checked::mul(
                "intermediate·(3 gated, else 1) (MLP activations per token)",
                m.intermediate,
                if m.gated { 3 } else { 1 },
            )?,
            Ffn::Moe(m) => (Checked::new(m.experts_per_token) * m.expert.intermediate * 3u64
                + Checked::new(m.shared.map_or(0, |s| s.intermediate)) * 3u64)
                .get("3·k·f_expert + 3·f_shared (MoE activations per token)")?,
            Ffn::Absent => 0,
        };
        if attention.max(mlp) > widest {
            widest = attention.max(mlp);
            why = if mlp >= attention {
                "MLP inner activations (gate, up, product)".into()
            } else {
                "q, k, v, attention output and its projection".into()
            };
        }
    }
    let per_token = (Checked::new(spec.hidden_size) * 2u64 + widest)
        .get("2·d + widest (activations per token)")?;
    Ok((per_token, widest, why))
}

/// Whether tensor parallelism of degree `tp` splits every layer's heads (see `check_tp`).
#[must_use]
pub fn tp_fits(spec: &ModelSpec, tp: u64) -> bool {
    tp >= 1 && check_tp(spec, tp).is_ok()
}

/// Tensor parallelism splits query heads evenly across ranks (as vLLM and Megatron require),
/// and KV heads either evenly or by replication (ranks a multiple of the KV heads).
pub(crate) fn check_tp(spec: &ModelSpec, tp: u64) -> Result<(), SpecError> {
    if tp == 1 {
        return Ok(());
    }
    for l in spec.layer_kinds() {
        let (heads, kv) = match &l.attention {
            Attention::Standard(a) | Attention::CacheOnly(a) => (a.num_heads, Some(a.num_kv_heads)),
            Attention::Latent(a) => (a.num_heads, None),
            Attention::Absent => continue,
        };
        if !heads.is_multiple_of(tp) {
            return Err(SpecError::Invalid {
                field: "--tp".into(),
                found: tp.to_string(),
                expected: format!("a divisor of the {heads} attention heads"),
            });
        }
        if let Some(kv) = kv
            && !kv.is_multiple_of(tp)
            && !tp.is_multiple_of(kv)
        {
            return Err(SpecError::Invalid {
                field: "--tp".into(),
                found: tp.to_string(),
                expected: format!("a divisor or a multiple of the {kv} key/value heads"),
            });
        }
    }
    Ok(())
}

/// Answer the memory question.
pub fn memory(spec: &ModelSpec, options: &MemoryOptions) -> Result<MemoryReport, SpecError> {
    memory_with(spec, options, None)
}

/// The memory question with the weights measured from real files (`Some`: their tensors by
/// stored type) instead of estimated from a format.
pub fn memory_with(
    spec: &ModelSpec,
    options: &MemoryOptions,
    from_files: Option<&[StorageLine]>,
) -> Result<MemoryReport, SpecError> {
    crate::facts::modelled(spec)?;
    let (weights, geometry) = context_free(spec, options, from_files)?;
    memory_of(spec, options, &weights, &geometry, from_files.is_some())
}

/// What the memory answer needs that does not depend on the context length: the weights
/// (as stored in files, else in the format) and the layout's attention.
fn context_free(
    spec: &ModelSpec,
    options: &MemoryOptions,
    from_files: Option<&[StorageLine]>,
) -> Result<(Vec<StorageLine>, Geometry), SpecError> {
    spec.validate()?;
    let weights = match from_files {
        Some(lines) => lines.to_vec(),
        None => weight_lines(spec, options.format)?,
    };
    let layout = layout(spec)?;
    Ok((
        weights,
        Geometry {
            attention: layout.attention,
            states: layout.states,
        },
    ))
}

/// What a cache holds per layer kind: attention's keys and values, recurrent states.
struct Geometry {
    attention: Vec<AttentionGeometry>,
    states: Vec<StateGeometry>,
}

/// Bytes of the recurrent states of `batch` sequences (whole model, and on one GPU), with
/// the formula; states split across tensor-parallel ranks by heads.
fn state_bytes(
    states: &[StateGeometry],
    options: &MemoryOptions,
) -> Result<(u64, u64, Option<String>), SpecError> {
    if states.is_empty() {
        return Ok((0, 0, None));
    }
    // Layer kinds that differ elsewhere (a Mamba layer with a dense MLP or with experts) keep
    // the same state: one term each.
    let mut same: Vec<StateGeometry> = Vec::new();
    for g in states {
        match same.iter_mut().find(|x| x.state == g.state) {
            Some(x) => x.layers = checked::add("layers with a state", x.layers, g.layers)?,
            None => same.push(*g),
        }
    }
    let mut total = 0u64;
    let mut terms = Vec::new();
    for g in &same {
        let bytes = |elements: u64, f32: bool| -> Result<u64, Overflow> {
            if f32 {
                checked::mul("4·state elements", elements, 4)
            } else {
                options.kv_dtype.checked_bytes(elements)
            }
        };
        let s = g.state;
        let one = checked::add(
            "conv + recurrent state bytes",
            bytes(s.conv, s.conv_f32)?,
            bytes(s.recurrent, s.recurrent_f32)?,
        )?;
        total = (Checked::new(total) + Checked::new(one) * g.layers * options.batch)
            .get("b·Σ layers·(conv + recurrent) state bytes")?;
        terms.push(format!(
            "{} layers × (conv {} + recurrent {}{})",
            g.layers,
            s.conv,
            s.recurrent,
            if s.recurrent_f32 { " in fp32" } else { "" }
        ));
    }
    let tp = options.tp.max(1);
    Ok((
        total,
        total.div_ceil(tp),
        Some(format!("b·Σ {} elements", terms.join(" + "))),
    ))
}

/// The memory question with the parts that do not depend on the context (weights, the
/// layout's attention) already worked out, so `max_context` can bisect without redoing them.
fn memory_of(
    spec: &ModelSpec,
    options: &MemoryOptions,
    weights: &[StorageLine],
    geometry: &Geometry,
    weights_from_files: bool,
) -> Result<MemoryReport, SpecError> {
    let attention = &geometry.attention;
    if options.seq_len == 0 {
        return Err(SpecError::Zero {
            field: "--seq-len".into(),
        });
    }
    if options.batch == 0 {
        return Err(SpecError::Zero {
            field: "--batch".into(),
        });
    }
    let tp = options.tp.max(1);
    check_tp(spec, tp)?;
    let weights = weights.to_vec();
    let weights_bytes = checked::sum("weight bytes", weights.iter().map(|l| l.bytes))?;
    let params = checked::sum("parameters", weights.iter().map(|l| l.params))?;
    let kv = kv_groups_of(attention, options)?;
    let kv_bytes = checked::sum("KV cache bytes", kv.iter().map(|g| g.bytes))?;
    let kv_per_gpu = checked::sum("KV cache bytes per GPU", kv.iter().map(|g| g.bytes_per_gpu))?;
    let one_token = kv_groups_of(
        attention,
        &MemoryOptions {
            seq_len: 1,
            batch: 1,
            tp: 1,
            ..*options
        },
    )?;
    let kv_bytes_per_token_full = checked::sum(
        "KV cache bytes per token",
        one_token.iter().map(|g| g.bytes),
    )?;
    let (state_bytes, state_per_gpu, state_formula) = state_bytes(&geometry.states, options)?;
    let compressor_state = compressed_state(attention, options)?;
    let state_bytes = checked::add("state + compressor state", state_bytes, compressor_state)?;
    let state_per_gpu = checked::add(
        "state + compressor state per GPU",
        state_per_gpu,
        compressor_state,
    )?;

    // Workspace: one layer's activations for the whole prefill in bf16 (no FlashAttention
    // score matrix), plus fp32 logits of the last position of each sequence; an encoder's one
    // forward ends instead in the bf16 logits of every position (an MLM head), or in the hidden
    // states already counted (a bare encoder).
    let (per_token, widest_elements, widest) = activation_elements_per_token(spec)?;
    let tokens = checked::mul("batch·seq_len", options.batch, options.seq_len)?;
    let layer_bytes = (Checked::new(tokens) * per_token * 2u64).get("b·s·(2·d + widest)·2 B")?;
    let encoder_only = spec.stacks.iter().all(|s| s.role == StackRole::Encoder);
    // (bytes, symbols, numbers)
    let (logits, logits_sym, logits_num) = match (encoder_only, &spec.head) {
        (false, _) => (
            (Checked::new(options.batch) * spec.vocab_size * 4u64).get("b·V·4 B")?,
            "b·V·4 B",
            format!("{}·{}·4", options.batch, spec.vocab_size),
        ),
        (true, OutputHead::Lm { .. }) => (
            (Checked::new(tokens) * spec.vocab_size * 2u64).get("b·s·V·2 B")?,
            "b·s·V·2 B",
            format!(
                "{}·{}·{}·2",
                options.batch, options.seq_len, spec.vocab_size
            ),
        ),
        (true, OutputHead::None) => (0, "0 B (no head)", "0".to_owned()),
    };
    let activation_bytes = checked::add("activations + logits", layer_bytes.div_ceil(tp), logits)?;
    let activation_formula = format!(
        "b·s·(2·d + widest)·2 B{} + {logits_sym} = {}·{}·(2·{} + {})·2{} + {logits_num} (widest: {widest})",
        if tp > 1 { " / tp" } else { "" },
        options.batch,
        options.seq_len,
        spec.hidden_size,
        widest_elements,
        if tp > 1 {
            format!(" / {tp}")
        } else {
            String::new()
        },
    );

    let weights_per_gpu = weights_bytes.div_ceil(tp);
    let per_gpu = checked::sum(
        "weights + KV cache + state + activations + overhead (per GPU)",
        [
            weights_per_gpu,
            kv_per_gpu,
            state_per_gpu,
            activation_bytes,
            options.overhead_bytes,
        ],
    )?;
    let total = checked::mul("per GPU·tp", per_gpu, tp)?;
    let fits = options.gpu.map(|(g, _)| per_gpu <= g.memory_bytes);
    let mut assumptions = vec![
        if weights_from_files {
            "weights: the bytes the weight files hold, as stored (`--dtype` is ignored)".to_owned()
        } else if let Some(q) = spec.quantization.as_ref().filter(|q| q.format == Some(options.format)) {
            q.assumption()
        } else {
            format!("weights: {}", options.format.describe())
        },
        "weights split evenly across tensor-parallel ranks (norms are replicated in practice; negligible)".to_owned(),
        match (encoder_only, options.window) {
            (true, _) => "an encoder keeps no KV cache and generates nothing: it reads its input in one forward".to_owned(),
            (false, CachePolicy::Transformers) => "KV cache as transformers' own cache holds it after a prefill (sliding layers keep `sliding_window − 1` tokens); `--cache runtime` for a serving runtime's layout".to_owned(),
            (false, CachePolicy::Runtime) => "KV cache as a serving runtime holds it: whole sliding windows, grouped KV heads only".to_owned(),
        },
        if encoder_only {
            "activations: one layer's working set of the forward in bf16 (FlashAttention-style, no s×s score matrix) and the bf16 logits of every position when the model has an LM head; an estimate".to_owned()
        } else {
            "activations: one layer's prefill working set in bf16 (FlashAttention-style, no s×s score matrix) and fp32 logits of the last position; an estimate".to_owned()
        },
        format!("runtime overhead per GPU: {} MiB (CUDA context and allocator reserve; set with --overhead)", options.overhead_bytes >> 20),
    ];
    if spec.stacks.iter().any(|s| {
        s.layers
            .kinds()
            .iter()
            .any(|l| matches!(l.attention, Attention::Latent(_)))
    }) {
        assumptions.push(match options.mla {
            MlaCache::Latent => "MLA caches the compressed latent (vLLM, SGLang, transformers); --mla-cache expanded for per-head K/V".to_owned(),
            MlaCache::Expanded => "MLA cache expanded to per-head K and V".to_owned(),
        });
    }
    if spec.stacks.len() > 1 {
        assumptions.push(
            "encoder-decoder: the encoder input and the decoder output both have --seq-len tokens"
                .to_owned(),
        );
    }
    // Past a learned position table the engine says so, naming the config field; past a
    // trained context (rotary positions go on) the model runs, but was not trained there.
    let past_table = spec.position_limit().is_some_and(|p| options.seq_len > p);
    if let Some(c) = spec
        .context_length
        .filter(|c| !past_table && options.seq_len > *c)
    {
        assumptions.push(format!(
            "warning: {} tokens exceed the trained context of {c} tokens",
            options.seq_len
        ));
    }
    Ok(MemoryReport {
        options: *options,
        weights,
        weights_bytes,
        params,
        kv,
        kv_bytes,
        kv_bytes_per_token_full,
        state_bytes,
        state_formula,
        activation_bytes,
        activation_formula,
        weights_per_gpu,
        kv_per_gpu,
        per_gpu,
        total,
        fits,
        weights_from_files,
        weights_estimate_bytes: None,
        files_only: None,
        assumptions,
        encoder_only,
        estimate: spec.estimate.clone(),
        serving: None,
    })
}

/// The longest context that fits, and what stopped the search.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MaxContext {
    /// Tokens per sequence.
    pub tokens: u64,
    /// `memory` (the GPU is full), `position table` (a learned table has no more rows),
    /// `trained context` (the config's context length) or `search limit`.
    pub bound: &'static str,
}

/// The longest context that fits the GPU at the given batch and formats, capped at what the
/// model can take (None: not even 1 token fits, or no GPU was named).
pub fn max_context(
    spec: &ModelSpec,
    options: &MemoryOptions,
    from_files: Option<&[StorageLine]>,
    limit: u64,
) -> Result<Option<MaxContext>, SpecError> {
    let Some((gpu, _)) = options.gpu else {
        return Ok(None);
    };
    // What does not depend on the context is worked out once for the whole bisection.
    let (weights, geometry) = context_free(spec, options, from_files)?;
    let fits = |s: u64| -> Result<bool, SpecError> {
        let r = memory_of(
            spec,
            &MemoryOptions {
                seq_len: s,
                ..*options
            },
            &weights,
            &geometry,
            from_files.is_some(),
        )?;
        Ok(r.per_gpu <= gpu.memory_bytes)
    };
    longest_context(spec, limit, fits)
}

/// The longest context for which `fits`, by bisection: `None` when not one token fits, else
/// capped by the position table, the trained context or `limit`, whichever comes first (and
/// named as the bound), or by memory. Shared by the plain and the runtime views.
pub(crate) fn longest_context(
    spec: &ModelSpec,
    limit: u64,
    fits: impl Fn(u64) -> Result<bool, SpecError>,
) -> Result<Option<MaxContext>, SpecError> {
    if !fits(1)? {
        return Ok(None);
    }
    let (cap, bound) = match (spec.position_limit(), spec.context_length) {
        (Some(p), _) if p <= limit => (p, "position table"),
        (_, Some(c)) if c <= limit => (c, "trained context"),
        _ => (limit.max(1), "search limit"),
    };
    if fits(cap)? {
        return Ok(Some(MaxContext { tokens: cap, bound }));
    }
    let (mut lo, mut hi) = (1u64, cap);
    while hi.checked_sub(lo).is_some_and(|gap| gap > 1) {
        let mid = lo.midpoint(hi);
        if fits(mid)? {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(Some(MaxContext {
        tokens: lo,
        bound: "memory",
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::design::{Design, Style, design_spec};

    #[test]
    fn a_cache_past_u64_names_its_formula_and_values() {
        // LLaMA-7B: 32 heads of 128 (MHA), so 2·n_kv·d_h = 2·32·128 = 8,192 elements per token
        // per layer, 2 bytes each in bf16: 16,384 B. 2^32 tokens × 2^24 sequences = 2^56, and
        // 16,384 · 2^56 = 2^70 > 2^64.
        let spec = design_spec(
            &Design {
                hidden: 4096,
                layers: 32,
                vocab: Some(32_000),
                ..Design::default()
            },
            Style::Llama,
        )
        .unwrap();
        let options = MemoryOptions {
            format: WeightFormat::Bf16,
            seq_len: 1 << 32,
            batch: 1 << 24,
            kv_dtype: KvDtype::Bf16,
            tp: 1,
            gpu: None,
            mla: MlaCache::Latent,
            window: CachePolicy::Transformers,
            overhead_bytes: 0,
        };
        let e = memory(&spec, &options).unwrap_err();
        assert_eq!(
            e.to_string(),
            "`bytes per token·batch·tokens·layers (KV cache)` overflows 64 bits \
             (with values: 16384 · 72057594037927936)"
        );
    }
}
