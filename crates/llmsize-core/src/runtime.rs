//! Serving runtimes: where llama.cpp and vLLM put the weights and the KV cache, and a
//! pipeline (layer) split across GPUs beside tensor parallelism.
//!
//! `memory` alone answers "what does transformers hold"; a runtime allocates differently:
//!
//! - **llama.cpp** allocates the KV cache for the whole context up front, `n_ctx` cells padded
//!   to a multiple of 256 (`cparams.n_ctx = GGML_PAD(cparams.n_ctx, 256)`,
//!   `src/llama-context.cpp`), in f16 unless `--cache-type-k/v` says otherwise, shared by all
//!   sequences (the unified cache `llama-server` uses). Models whose llama.cpp architecture has
//!   a sliding-window cache (Gemma 2/3, Cohere2, gpt-oss, …) keep a second cache for their
//!   sliding layers of `GGML_PAD(min(n_ctx, n_swa·n_seq + n_ubatch), 256)` cells
//!   (`src/llama-kv-cache-iswa.cpp`), or the whole `n_ctx` with `--swa-full`. Layers go to the
//!   GPUs in `--tensor-split` proportions (`--split-mode layer`, its default), the last
//!   `--n-gpu-layers` of them (the rest stay in system RAM with their KV), the output layer on
//!   the last GPU when every layer is offloaded, and the token table always in system RAM
//!   ("there is very little benefit to offloading the input layer", `src/llama-model.cpp`,
//!   `load_tensors`).
//! - **vLLM** takes `gpu_memory_utilization` (0.9) of each GPU, subtracts the weights, the
//!   activation peak of a profiling run and non-torch memory, and cuts the rest into blocks of
//!   `block_size` (16) tokens of every layer: `num_blocks = available // page_size //
//!   num_layers` (`get_num_blocks`, `vllm/v1/core/kv_cache_utils.py`). A request at
//!   `max_model_len` needs `cdiv(max_model_len, block_size)` blocks of a full-attention group
//!   and `cdiv(min(window − 1 + max_num_batched_tokens, max_model_len), block_size) + 1` of a
//!   sliding-window group (`SlidingWindowSpec.max_memory_usage_bytes`); the maximum
//!   concurrency is `num_blocks` over the blocks one request needs
//!   (`get_max_concurrency_for_kv_cache_config`). Sliding and full layers of a hybrid model
//!   form groups of equal size that share one pool (`_get_kv_cache_groups_uniform_page_size`).
//! - **A pipeline split** (`--pp`) gives each stage a contiguous run of layers, vLLM's
//!   partition (`get_pp_indices`: `L // pp` each, the remainder one by one to the stages
//!   before the last), the embeddings to the first stage and the head to the last.

use std::ops::Range;

use crate::Category;
use crate::checked::{self, Checked};
use crate::error::{Overflow, SpecError};
use crate::formats::WeightFormat;
use crate::gpu::Gpu;
use crate::layout::{self, AttentionGeometry, CacheShape, Place, tensors};
use crate::memory::{
    self, CachePolicy, MemoryOptions, MemoryReport, StorageLine, kept, mix_context, overflow,
};
use crate::spec::{ModelSpec, OutputHead};
use crate::units::bytes_both;

/// Whose allocation to size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Runtime {
    /// transformers (`generate`): the cache grows with the tokens; `device_map` splits layers.
    #[default]
    #[cfg_attr(
        feature = "clap",
        value(help = "transformers' own cache, grown to the tokens")
    )]
    Transformers,
    /// llama.cpp: f16 KV for the whole padded `n_ctx`, layer split, `-ngl` offload.
    #[cfg_attr(
        feature = "clap",
        value(
            name = "llama.cpp",
            alias = "llamacpp",
            alias = "llama-cpp",
            help = "llama.cpp: KV for the whole --ctx-size, layer split, --n-gpu-layers"
        )
    )]
    LlamaCpp,
    /// vLLM: `gpu_memory_utilization`, paged KV blocks, max concurrent sequences.
    #[cfg_attr(
        feature = "clap",
        value(help = "vLLM: gpu_memory_utilization, paged KV blocks, max sequences")
    )]
    Vllm,
}

impl Runtime {
    /// The name in tables and JSON.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Runtime::Transformers => "transformers",
            Runtime::LlamaCpp => "llama.cpp",
            Runtime::Vllm => "vllm",
        }
    }
}

/// The runtime's settings (each named after the runtime's own flag).
#[derive(Debug, Clone, PartialEq)]
pub struct ServingOptions {
    /// Whose allocation.
    pub runtime: Runtime,
    /// Pipeline stages (layer-split groups of GPUs), each `tp` GPUs wide.
    pub pp: u64,
    /// llama.cpp `--ctx-size`: KV cells for all sequences (None: `seq_len · batch`).
    pub ctx_size: Option<u64>,
    /// llama.cpp `--n-gpu-layers` (None: every layer and the output layer).
    pub n_gpu_layers: Option<u64>,
    /// llama.cpp `--tensor-split` proportions, one per GPU (empty: equal).
    pub tensor_split: Vec<f64>,
    /// llama.cpp `--swa-full`: sliding layers keep the whole context.
    pub swa_full: bool,
    /// llama.cpp `--ubatch-size` (512).
    pub n_ubatch: u64,
    /// vLLM `--gpu-memory-utilization` (0.9).
    pub gpu_memory_utilization: f64,
    /// vLLM `--block-size` (16).
    pub block_size: u64,
    /// vLLM `--max-model-len` (None: `seq_len`).
    pub max_model_len: Option<u64>,
    /// vLLM `--max-num-batched-tokens` (None: vLLM's default for the GPU).
    pub max_num_batched_tokens: Option<u64>,
}

impl Default for ServingOptions {
    fn default() -> Self {
        ServingOptions {
            runtime: Runtime::Transformers,
            pp: 1,
            ctx_size: None,
            n_gpu_layers: None,
            tensor_split: Vec::new(),
            swa_full: false,
            n_ubatch: 512,
            gpu_memory_utilization: 0.9,
            block_size: 16,
            max_model_len: None,
            max_num_batched_tokens: None,
        }
    }
}

/// What one GPU of a stage (or the host) holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stage {
    /// `GPU 0`, `GPUs 0–1` (a stage `tp` wide: each of them holds this), or `CPU`.
    pub device: String,
    /// A GPU (else system RAM).
    pub gpu: bool,
    /// The layers it holds, as half-open runs over all stacks in order.
    pub layers: Vec<Range<u64>>,
    /// What besides layers: `token table`, `output`, `towers`.
    pub extras: Vec<&'static str>,
    /// Weights, bytes.
    pub weights: u64,
    /// KV cache, bytes.
    pub kv: u64,
    /// Recurrent state, bytes.
    pub state: u64,
    /// Activation workspace or compute buffer, bytes (an estimate).
    pub activations: u64,
    /// Runtime overhead, bytes.
    pub overhead: u64,
    /// The sum.
    pub total: u64,
}

/// llama.cpp's cache sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LlamaCppView {
    /// `n_ctx` asked for (`--ctx-size`).
    pub n_ctx_asked: u64,
    /// `n_ctx` padded to 256: the cells of every full-attention layer.
    pub n_ctx: u64,
    /// Cells of a sliding layer, when the architecture has a sliding-window cache.
    pub swa_cells: Option<u64>,
    /// Layers offloaded (`--n-gpu-layers`, capped at the layers + 1).
    pub n_gpu_layers: u64,
    /// The output layer is on a GPU.
    pub output_on_gpu: bool,
}

/// vLLM's block pool.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VllmView {
    /// `gpu_memory_utilization`.
    pub gpu_memory_utilization: f64,
    /// What vLLM may use of one GPU, bytes.
    pub budget: u64,
    /// What is left for the KV cache on the most constrained GPU, bytes.
    pub kv_budget: u64,
    /// Tokens per block.
    pub block_size: u64,
    /// Bytes of one block of one layer on one GPU (`block_size · 2 · n_kv/tp · d_h · bytes`).
    pub page_bytes: u64,
    /// Layers (or, for a hybrid model, layers per group) that share a block id.
    pub layers_per_block: u64,
    /// Blocks.
    pub num_blocks: u64,
    /// Blocks one request at `max_model_len` needs (summed over the groups).
    pub blocks_per_request: u64,
    /// `max_model_len`.
    pub max_model_len: u64,
    /// `max_num_batched_tokens` (chunked prefill; the profiling run's tokens).
    pub max_num_batched_tokens: u64,
    /// `num_blocks / blocks_per_request`.
    pub max_concurrency: f64,
    /// Whole requests at `max_model_len` that fit at once.
    pub max_sequences: u64,
    /// Tokens the pool holds (vLLM's "GPU KV cache size").
    pub kv_tokens: u64,
}

/// A runtime's placement of a model.
#[derive(Debug, Clone, PartialEq)]
pub struct ServingReport {
    /// The runtime.
    pub runtime: Runtime,
    /// Tensor-parallel degree within a stage.
    pub tp: u64,
    /// Pipeline stages.
    pub pp: u64,
    /// Each stage's GPU (and, for llama.cpp, the host last).
    pub stages: Vec<Stage>,
    /// The stage whose GPU is the most loaded.
    pub most_loaded: usize,
    /// llama.cpp's cache sizes.
    pub llama_cpp: Option<LlamaCppView>,
    /// vLLM's pool.
    pub vllm: Option<VllmView>,
}

pub use crate::limits::MAX_PLACED_LAYERS;

/// Weights by where they sit, as runtimes place them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PlacedWeights {
    /// Token and position tables, embedding norms and projections (llama.cpp's input layer).
    pub input: u64,
    /// Vision and audio towers and their projectors.
    pub towers: u64,
    /// Each layer, stacks in order.
    pub layers: Vec<u64>,
    /// Final norms and the head (llama.cpp's output layer).
    pub output: u64,
    /// Bytes of the token table, when the head is tied to it: a runtime that puts the output
    /// on another device than the input loads it there again.
    pub tied_table: u64,
}

impl PlacedWeights {
    fn layers_in(&self, r: &Range<u64>) -> Result<u64, Overflow> {
        let from = checked::to_usize("first layer", r.start)?;
        let to = checked::to_usize("last layer", r.end)?;
        checked::sum(
            "weights of the layers",
            self.layers
                .get(from..to)
                .unwrap_or_default()
                .iter()
                .copied(),
        )
    }
}

fn checked_layers(spec: &ModelSpec) -> Result<u64, SpecError> {
    let n = spec.num_layers();
    if n > MAX_PLACED_LAYERS {
        return Err(SpecError::Invalid {
            field: "num_hidden_layers".into(),
            found: n.to_string(),
            expected: format!("at most {MAX_PLACED_LAYERS} layers for a runtime's placement"),
        });
    }
    Ok(n)
}

/// The first layer of each stack, over all stacks in order.
fn stack_offsets(spec: &ModelSpec) -> Vec<u64> {
    let mut at = 0u64;
    spec.stacks
        .iter()
        .map(|s| {
            let o = at;
            // saturates: never, the layers are at most MAX_PLACED_LAYERS (`checked_layers`).
            at = at.saturating_add(s.layers.len());
            o
        })
        .collect()
}

/// Weights by place, from the layout in a storage format (per layer, so a llama.cpp mix's
/// per-layer types land on their layer).
pub fn placed_from_layout(
    spec: &ModelSpec,
    format: WeightFormat,
) -> Result<PlacedWeights, SpecError> {
    let n = checked_layers(spec)?;
    let ctx = mix_context(spec);
    let offsets = stack_offsets(spec);
    let mut p = PlacedWeights {
        layers: vec![0; checked::to_usize("layers", n)?],
        ..PlacedWeights::default()
    };
    let tied = matches!(spec.head, OutputHead::Lm { tied: true, .. });
    for t in tensors(spec)? {
        let one = |layer: u64| {
            format
                .tensor_bytes(&t, layer, ctx)
                .map(|(b, _)| b)
                .ok_or_else(|| overflow(&format!("bytes of `{}`", t.name)))
        };
        if matches!(t.category, Category::Vision | Category::Audio) {
            p.towers = (Checked::new(p.towers) + Checked::new(one(0)?) * t.layers.max(1))
                .get("bytes of the towers")?;
            continue;
        }
        match t.place {
            Place::Layer { stack, .. } => {
                let base = offsets.get(stack).copied().unwrap_or(0);
                for r in t.layer_runs.iter() {
                    for i in r.clone() {
                        let at = checked::to_usize(
                            "stack offset + layer",
                            checked::add("stack offset + layer", base, i)?,
                        )?;
                        if let Some(slot) = p.layers.get_mut(at) {
                            *slot = checked::add("bytes of a layer", *slot, one(i)?)?;
                        }
                    }
                }
            }
            Place::Input | Place::StackStart(_) => {
                let b = one(0)?;
                p.input = checked::add("bytes of the input tables", p.input, b)?;
                if tied && t.category == Category::TokenEmbedding && p.tied_table == 0 {
                    p.tied_table = b;
                }
            }
            Place::StackEnd(_) | Place::Output => {
                p.output = checked::add("bytes of the output side", p.output, one(0)?)?;
            }
        }
    }
    Ok(p)
}

/// The layer a tensor name belongs to: the number after a `blk`, `layers`, `layer`, `h`,
/// `block` or `blocks` segment (`blk.12.attn_q.weight`, `model.layers.3.mlp.up_proj.weight`,
/// `transformer.h.0.attn.c_attn.weight`).
#[must_use]
pub fn layer_of_name(name: &str) -> Option<u64> {
    let parts: Vec<&str> = name.split('.').collect();
    parts.windows(2).find_map(|w| match w {
        [seg, num] if matches!(*seg, "blk" | "layers" | "layer" | "h" | "block" | "blocks") => {
            num.parse().ok()
        }
        _ => None,
    })
}

/// Weights by place, from the tensors of weight files (`(name, category, bytes)`): a tensor
/// with a layer number goes to that layer (a decoder's after an encoder's), token tables to
/// the input, towers apart, everything else to the output side.
pub fn placed_from_files(
    spec: &ModelSpec,
    entries: &[(&str, Category, u64)],
) -> Result<PlacedWeights, SpecError> {
    let n = checked_layers(spec)?;
    let offsets = stack_offsets(spec);
    let mut p = PlacedWeights {
        layers: vec![0; checked::to_usize("layers", n)?],
        ..PlacedWeights::default()
    };
    let tied = matches!(spec.head, OutputHead::Lm { tied: true, .. });
    for &(name, category, bytes) in entries {
        if matches!(category, Category::Vision | Category::Audio) {
            p.towers = checked::add("bytes of the towers", p.towers, bytes)?;
            continue;
        }
        let decoder_of_two = spec.stacks.len() > 1 && name.split('.').any(|s| s == "decoder");
        let layer = layer_of_name(name).map(|i| {
            let base = if decoder_of_two {
                offsets.get(1).copied().unwrap_or(0)
            } else {
                0
            };
            // saturates: harmless, a layer number past the layers (past u64::MAX too)
            // goes to the output side.
            base.saturating_add(i)
        });
        match layer
            .and_then(|i| usize::try_from(i).ok())
            .filter(|i| *i < p.layers.len())
        {
            Some(i) => {
                if let Some(slot) = p.layers.get_mut(i) {
                    *slot = checked::add("bytes of a layer", *slot, bytes)?;
                }
            }
            None => match category {
                Category::TokenEmbedding
                | Category::PositionEmbedding
                | Category::TokenTypeEmbedding
                | Category::EmbeddingProjection => {
                    p.input = checked::add("bytes of the input tables", p.input, bytes)?;
                    if tied && category == Category::TokenEmbedding && p.tied_table == 0 {
                        p.tied_table = bytes;
                    }
                }
                _ => p.output = checked::add("bytes of the output side", p.output, bytes)?,
            },
        }
    }
    Ok(p)
}

/// One cache of one layer: bytes of one token on one GPU.
#[derive(Debug, Clone, Copy)]
struct LayerCache {
    per_token_gpu: u64,
    window: Option<u64>,
    cross: bool,
    prefix: u64,
}

/// Every layer's caches (self-attention, cross-attention), stacks in order.
fn layer_caches(
    spec: &ModelSpec,
    options: &MemoryOptions,
) -> Result<Vec<Vec<LayerCache>>, SpecError> {
    let one = MemoryOptions {
        seq_len: 1,
        batch: 1,
        ..*options
    };
    let mut out = Vec::new();
    for stack in &spec.stacks {
        let mut kinds: Vec<Vec<LayerCache>> = Vec::new();
        for layer in stack.layers.kinds() {
            let mut caches = Vec::new();
            let mut push = |g: Option<AttentionGeometry>| -> Result<(), SpecError> {
                let Some(mut g) = g else { return Ok(()) };
                let window = g.window.take();
                let mut prefix = 0;
                if let CacheShape::Heads { prefix: p, .. } = &mut g.cache {
                    prefix = std::mem::take(p);
                }
                for group in memory::kv_groups_of(std::slice::from_ref(&g), &one)? {
                    caches.push(LayerCache {
                        per_token_gpu: group.bytes_per_gpu,
                        window,
                        cross: g.cross,
                        prefix,
                    });
                }
                Ok(())
            };
            push(layout::geometry(
                &layer.attention,
                stack.role,
                1,
                false,
                layer.sliding_window,
            )?)?;
            if let Some(c) = &layer.cross_attention {
                push(layout::geometry(c, stack.role, 1, true, None)?)?;
            }
            kinds.push(caches);
        }
        for r in stack.layers.runs() {
            let caches = kinds.get(r.kind).cloned().unwrap_or_default();
            for _ in r.range() {
                out.push(caches.clone());
            }
        }
    }
    Ok(out)
}

/// vLLM's pipeline partition: `L // pp` layers each, the remainder one each to the stages
/// before the last (`get_pp_indices`, `vllm/distributed/utils.py`).
#[must_use]
#[expect(
    clippy::arithmetic_side_effects,
    reason = "pp ≥ 1 (`max(1)`); each size is L // pp or one more, and one more only with a \
              remainder, so at most L; the sizes sum to L, so every running start and end is at \
              most L, a u64"
)]
pub fn pipeline_partition(layers: u64, pp: u64) -> Vec<Range<u64>> {
    let pp = pp.max(1);
    let mut sizes = vec![layers / pp; usize::try_from(pp).unwrap_or(1)];
    let remaining = layers % pp;
    // The `remaining` stages before the last get one more layer each.
    let len = sizes.len();
    let before_last = len.saturating_sub(1);
    let from = before_last.saturating_sub(usize::try_from(remaining).unwrap_or(usize::MAX));
    for s in sizes.get_mut(from..before_last).unwrap_or_default() {
        *s += 1;
    }
    let mut at = 0;
    sizes
        .into_iter()
        .map(|s| {
            let r = at..at + s;
            at += s;
            r
        })
        .collect()
}

/// llama.cpp's device of layer `i` (`None`: the CPU): the last `n_gpu_layers` layers go to
/// the GPUs by the cumulative `--tensor-split` fractions, computed in `f32` as llama.cpp does
/// (`std::upper_bound(splits, float(i - i_gpu_start)/act_gpu_layers)`); `i = n_layer` is the
/// output layer.
#[expect(
    clippy::arithmetic_side_effects,
    reason = "n_layer ≤ MAX_PLACED_LAYERS (`checked_layers`), so n_layer + 1 fits; act ≥ 1 where \
              the output layer is placed (ngl > n_layer); i ≥ i_gpu_start past the early return"
)]
fn llama_device(i: u64, n_layer: u64, ngl: u64, splits: &[f32]) -> Option<usize> {
    // llama.cpp's `max(n_layer − n_gpu_layers, 0)`.
    let i_gpu_start = n_layer.saturating_sub(ngl);
    let act = ngl.min(n_layer + 1);
    if i == n_layer {
        if ngl <= n_layer {
            return None;
        }
    } else if i < i_gpu_start {
        return None;
    }
    #[expect(clippy::cast_precision_loss, reason = "as llama.cpp, in f32")]
    let x = if i == n_layer {
        (act - 1) as f32 / act as f32
    } else {
        (i - i_gpu_start) as f32 / act as f32
    };
    let d = splits.iter().position(|s| *s > x).unwrap_or(splits.len());
    Some(d.min(splits.len().saturating_sub(1)))
}

fn pad256(n: u64) -> Result<u64, Overflow> {
    (Checked::new(n).div_ceil(256u64) * 256u64).get("GGML_PAD(n_ctx, 256)")
}

fn ranges_of(layers: &[u64]) -> Vec<Range<u64>> {
    let mut out: Vec<Range<u64>> = Vec::new();
    for &i in layers {
        // saturates: never, `i` is a layer index, below the layer count.
        let next = i.saturating_add(1);
        match out.last_mut() {
            Some(r) if r.end == i => r.end = next,
            _ => out.push(i..next),
        }
    }
    out
}

/// Layers of a stage's range (its end is never before its start).
fn range_len(r: &Range<u64>) -> u64 {
    r.end.saturating_sub(r.start)
}

/// A stage's bytes: weights + KV cache + state + activations + overhead.
fn stage_total(parts: [u64; 5]) -> Result<u64, Overflow> {
    checked::sum(
        "weights + KV cache + state + activations + overhead (a stage)",
        parts,
    )
}

/// A stage's share of the recurrent states, in proportion to its layers:
/// `⌈state ÷ tp⌉·stage layers / all layers` (an approximation).
fn state_share(state: u64, tp: u64, layers: u64, n_layer: u64) -> Result<u64, Overflow> {
    let share = (Checked::new(u128::from(state.div_ceil(tp))) * u128::from(layers)
        / u128::from(n_layer.max(1)))
    .get("⌈state ÷ tp⌉·stage layers / layers")?;
    checked::to_u64("a stage's state bytes", share)
}

/// The memory question under a runtime: the transformers report with its per-GPU figures
/// replaced by the runtime's most loaded GPU, and the placement in `serving`.
///
/// `placed`: the weights by place (from the weight files); `None` sizes them from the layout
/// in `options.format`.
pub fn serve(
    spec: &ModelSpec,
    options: &MemoryOptions,
    serving: &ServingOptions,
    from_files: Option<&[StorageLine]>,
    placed: Option<&PlacedWeights>,
) -> Result<MemoryReport, SpecError> {
    let pp = serving.pp;
    if pp == 0 {
        return Err(SpecError::Zero {
            field: "--pp".into(),
        });
    }
    if serving.runtime == Runtime::Transformers && pp == 1 {
        // Nothing to place: the plain report, at the cost of the layer kinds (a hostile
        // config's million layers included).
        return memory::memory_with(spec, options, from_files);
    }
    let n_layer = checked_layers(spec)?;
    if pp > n_layer.max(1) {
        return Err(SpecError::Invalid {
            field: "--pp".into(),
            found: pp.to_string(),
            expected: format!("at most the model's {n_layer} layers"),
        });
    }
    let tp = options.tp.max(1);
    let placed = match placed {
        Some(p) => p.clone(),
        None => placed_from_layout(spec, options.format)?,
    };
    match serving.runtime {
        Runtime::Transformers => pipeline(spec, options, serving, from_files, &placed),
        Runtime::Vllm => vllm(spec, options, serving, from_files, &placed),
        Runtime::LlamaCpp => {
            if tp > 1 {
                return Err(SpecError::Invalid {
                    field: "--tp".into(),
                    found: tp.to_string(),
                    expected: "1 under llama.cpp: its layer split (`--split-mode layer`, the default) is modelled, its row split is not; give the GPUs with `--gpu NAMExN`".into(),
                });
            }
            llama_cpp(spec, options, serving, from_files, &placed)
        }
    }
}

/// The longest context that fits under a runtime (`None` inside: not one token), found by
/// bisection over `seq_len` with everything else as asked; the plain transformers view uses
/// [`memory::max_context`]. Capped as it is: the position table, the trained context, `limit`.
pub fn max_context(
    spec: &ModelSpec,
    options: &MemoryOptions,
    serving: &ServingOptions,
    from_files: Option<&[StorageLine]>,
    placed: Option<&PlacedWeights>,
    limit: u64,
) -> Result<Option<memory::MaxContext>, SpecError> {
    if serving.runtime == Runtime::Transformers && serving.pp == 1 {
        return memory::max_context(spec, options, from_files, limit);
    }
    if options.gpu.is_none() {
        return Ok(None);
    }
    // The context is what varies: a fixed `--ctx-size`/`--max-model-len` would hide it.
    let serving = ServingOptions {
        ctx_size: None,
        max_model_len: None,
        ..serving.clone()
    };
    let placed = match placed {
        Some(p) => p.clone(),
        None => placed_from_layout(spec, options.format)?,
    };
    let fits = |s: u64| -> Result<bool, SpecError> {
        let r = serve(
            spec,
            &MemoryOptions {
                seq_len: s,
                ..*options
            },
            &serving,
            from_files,
            Some(&placed),
        )?;
        Ok(r.fits == Some(true))
    };
    memory::longest_context(spec, limit, fits)
}

/// The first stage holds the input and towers, the last the output (and, when tied and not
/// the first too, a copy of the token table).
fn stage_weights(
    placed: &PlacedWeights,
    r: &Range<u64>,
    first: bool,
    last: bool,
) -> Result<(u64, Vec<&'static str>), SpecError> {
    let mut w = placed.layers_in(r)?;
    let mut extras = Vec::new();
    if first {
        w = checked::sum(
            "weights + input tables + towers",
            [w, placed.input, placed.towers],
        )?;
        extras.push("embeddings");
        if placed.towers > 0 {
            extras.push("towers");
        }
    }
    if last {
        w = checked::add("weights + output side", w, placed.output)?;
        extras.push("head");
        if !first && placed.tied_table > 0 {
            w = checked::add("weights + tied table's copy", w, placed.tied_table)?;
            extras.push("tied head's copy of the token table");
        }
    }
    Ok((w, extras))
}

fn gpus_label(stage: u64, tp: u64) -> Result<String, Overflow> {
    Ok(if tp == 1 {
        format!("GPU {stage}")
    } else {
        let first = checked::mul("stage·tp", stage, tp)?;
        let last = (Checked::new(first) + tp - 1u64).get("stage·tp + tp − 1")?;
        format!("GPUs {first}–{last}")
    })
}

/// Replace the report's per-GPU figures by the most loaded stage's.
fn apply(
    mut r: MemoryReport,
    serving: ServingReport,
    gpu: Option<&Gpu>,
    fits: Option<bool>,
) -> Result<MemoryReport, Overflow> {
    if let Some(s) = serving.stages.get(serving.most_loaded) {
        r.weights_per_gpu = s.weights;
        r.kv_per_gpu = s.kv;
        r.activation_bytes = s.activations;
        r.per_gpu = s.total;
    }
    let mut gpu_stages = serving.stages.iter().filter(|s| s.gpu);
    r.total = gpu_stages.try_fold(0u64, |total, s| {
        (Checked::new(total) + Checked::new(s.total) * serving.tp).get("Σ stage·tp (all GPUs)")
    })?;
    r.fits = fits.or_else(|| gpu.map(|g| r.per_gpu <= g.memory_bytes));
    r.serving = Some(serving);
    Ok(r)
}

fn most_loaded(stages: &[Stage]) -> usize {
    let mut best = 0;
    for (i, s) in stages.iter().enumerate() {
        if s.gpu && stages.get(best).is_none_or(|b| !b.gpu || s.total > b.total) {
            best = i;
        }
    }
    best
}

/// transformers (or any runtime sized like it) over `pp` stages.
fn pipeline(
    spec: &ModelSpec,
    options: &MemoryOptions,
    serving: &ServingOptions,
    from_files: Option<&[StorageLine]>,
    placed: &PlacedWeights,
) -> Result<MemoryReport, SpecError> {
    let mut r = memory::memory_with(spec, options, from_files)?;
    let pp = serving.pp;
    if pp == 1 {
        return Ok(r);
    }
    let tp = options.tp.max(1);
    let caches = layer_caches(spec, options)?;
    let n_layer = u64::try_from(caches.len()).map_err(|_| overflow("layers"))?;
    let logits = (Checked::new(options.batch) * spec.vocab_size * 4u64).get("b·V·4 B")?;
    // The report's activations hold these logits: never floored.
    let layer_act = r.activation_bytes.saturating_sub(logits);
    let mut stages = Vec::new();
    for (s, range) in (0u64..).zip(pipeline_partition(n_layer, pp)) {
        let (first, last) = (s == 0, Some(s) == pp.checked_sub(1));
        let (w, extras) = stage_weights(placed, &range, first, last)?;
        let mut kv = 0u64;
        for c in caches
            .get(usize::try_from(range.start).unwrap_or(0)..usize::try_from(range.end).unwrap_or(0))
            .unwrap_or_default()
            .iter()
            .flatten()
        {
            let tokens = if c.cross {
                options.seq_len
            } else {
                checked::add(
                    "tokens kept + prefix tokens",
                    kept(c.window, options.seq_len, options.window),
                    c.prefix,
                )?
            };
            kv = (Checked::new(kv) + Checked::new(c.per_token_gpu) * tokens * options.batch)
                .get("Σ bytes per token·tokens·b (a stage's KV cache)")?;
        }
        // Recurrent states split with their layers, in proportion (an approximation).
        let state = state_share(r.state_bytes, tp, range_len(&range), n_layer)?;
        let activations = if last { r.activation_bytes } else { layer_act };
        let weights = w.div_ceil(tp);
        let total = stage_total([weights, kv, state, activations, options.overhead_bytes])?;
        stages.push(Stage {
            device: gpus_label(s, tp)?,
            gpu: true,
            layers: vec![range],
            extras,
            weights,
            kv,
            state,
            activations,
            overhead: options.overhead_bytes,
            total,
        });
    }
    let most = most_loaded(&stages);
    r.assumptions.push(format!(
        "pipeline split over {pp} stages{}: layers in vLLM's partition (L // pp each, the remainder to the stages before the last), embeddings on the first stage, the head on the last{}; per GPU below is the most loaded stage's",
        if tp > 1 {
            format!(" of {tp} tensor-parallel GPUs")
        } else {
            String::new()
        },
        if placed.tied_table > 0 {
            " (the tied head loads its own copy of the token table there)"
        } else {
            ""
        }
    ));
    let gpu = options.gpu.map(|(g, _)| g);
    Ok(apply(
        r,
        ServingReport {
            runtime: Runtime::Transformers,
            tp,
            pp,
            stages,
            most_loaded: most,
            llama_cpp: None,
            vllm: None,
        },
        gpu,
        None,
    )?)
}

/// llama.cpp's `--tensor-split`: the GPUs' proportions (equal unless given) and the
/// cumulative f32 splits `llama_device` places layers by.
fn layer_split(serving: &ServingOptions) -> Result<(Vec<f64>, Vec<f32>), SpecError> {
    let n_dev = serving.pp;
    let proportions: Vec<f64> = if serving.tensor_split.is_empty() {
        vec![1.0; usize::try_from(n_dev).map_err(|_| overflow("GPUs"))?]
    } else {
        serving.tensor_split.clone()
    };
    if u64::try_from(proportions.len()).ok() != Some(n_dev)
        || proportions.iter().any(|p| !(p.is_finite() && *p >= 0.0))
        || proportions.iter().sum::<f64>() <= 0.0
    {
        return Err(SpecError::Invalid {
            field: "--tensor-split".into(),
            found: format!("{:?}", serving.tensor_split),
            expected: format!(
                "{n_dev} non-negative proportions, one per GPU, not all 0 (e.g. 3,1)"
            ),
        });
    }
    #[expect(clippy::cast_possible_truncation, reason = "llama.cpp's f32 splits")]
    let splits: Vec<f32> = {
        let mut acc = 0f32;
        let cumulative: Vec<f32> = proportions
            .iter()
            .map(|p| {
                acc += *p as f32;
                acc
            })
            .collect();
        cumulative.iter().map(|c| c / acc).collect()
    };
    Ok((proportions, splits))
}

/// What llama.cpp keeps for the sliding layers: a sliding-window cache of `cells` where its
/// architecture has one, else the whole context.
fn swa_note(spec: &ModelSpec, serving: &ServingOptions, swa: bool, cells: u64) -> String {
    if !swa {
        format!(
            "llama.cpp: sliding layers keep the whole n_ctx: `{}` has no sliding-window cache in llama.cpp",
            spec.model_type
        )
    } else if serving.swa_full {
        "llama.cpp --swa-full: sliding layers keep the whole n_ctx".to_owned()
    } else {
        format!(
            "llama.cpp: sliding layers keep GGML_PAD(min(n_ctx, n_swa·n_seq + n_ubatch), 256) = {} cells (n_ubatch {}, src/llama-kv-cache-iswa.cpp); --swa-full keeps n_ctx",
            cells, serving.n_ubatch
        )
    }
}

/// llama.cpp's allocation.
fn llama_cpp(
    spec: &ModelSpec,
    options: &MemoryOptions,
    serving: &ServingOptions,
    from_files: Option<&[StorageLine]>,
    placed: &PlacedWeights,
) -> Result<MemoryReport, SpecError> {
    let n_dev = serving.pp;
    let n_ctx_asked = match serving.ctx_size {
        Some(c) => c,
        None => checked::mul("seq_len·batch (n_ctx)", options.seq_len, options.batch)?,
    };
    if n_ctx_asked == 0 {
        return Err(SpecError::Zero {
            field: "--ctx-size".into(),
        });
    }
    let n_ctx = pad256(n_ctx_asked)?;
    let base = MemoryOptions {
        seq_len: n_ctx,
        batch: 1,
        window: CachePolicy::Runtime,
        ..*options
    };
    let mut r = memory::memory_with(spec, &base, from_files)?;
    // The report was asked about `seq_len × batch`; its options say so.
    r.options.seq_len = options.seq_len;
    r.options.batch = options.batch;
    // llama.cpp architectures without a sliding-window cache run their sliding layers over
    // the whole context: Mistral and Qwen2 convert to architectures without one, and Phi-3's
    // is disabled ("Phi SWA is currently disabled").
    let swa = spec.facts.llama_cpp_swa;
    let has_windows = r.kv.iter().any(|g| g.window.is_some());
    let caches = layer_caches(spec, &base)?;
    let n_layer = u64::try_from(caches.len()).map_err(|_| overflow("layers"))?;
    // Cells of a sliding layer: `GGML_PAD(min(n_ctx, n_swa·n_seq + n_ubatch), 256)`, with the
    // batch as `n_seq_max` of the unified cache.
    let swa_cells = |w: u64| -> Result<u64, Overflow> {
        if serving.swa_full {
            return Ok(n_ctx);
        }
        let want =
            (Checked::new(w) * options.batch + serving.n_ubatch).get("n_swa·n_seq + n_ubatch")?;
        pad256(n_ctx.min(want))
    };
    let cells = |c: &LayerCache| -> Result<u64, Overflow> {
        match c.window {
            Some(w) if swa && !c.cross => swa_cells(w),
            _ => Ok(n_ctx),
        }
    };
    // The KV groups as llama.cpp sizes them.
    let mut swa_seen = None;
    for g in &mut r.kv {
        let tokens = match g.window {
            Some(w) if swa => {
                let c = swa_cells(w)?;
                swa_seen = Some(c);
                c
            }
            _ => n_ctx,
        };
        if g.tokens > 0 && g.tokens != tokens {
            g.bytes = (Checked::new(g.bytes) / g.tokens * tokens).get("bytes / tokens·cells")?;
            g.bytes_per_gpu =
                (Checked::new(g.bytes_per_gpu) / g.tokens * tokens).get("bytes / tokens·cells")?;
            g.tokens = tokens;
        }
    }
    r.kv_bytes = checked::sum("KV cache bytes", r.kv.iter().map(|g| g.bytes))?;

    let (proportions, splits) = layer_split(serving)?;
    // saturates: never, n_layer ≤ MAX_PLACED_LAYERS (`checked_layers`).
    let placeable = n_layer.saturating_add(1);
    let ngl = serving.n_gpu_layers.unwrap_or(placeable).min(placeable);
    let dev_count = splits.len();
    // One list per GPU, then the CPU's; saturates: never, `dev_count` = n_dev ≤ n_layer.
    let mut dev_layers: Vec<Vec<u64>> = vec![Vec::new(); dev_count.saturating_add(1)];
    let mut dev_kv = vec![0u64; dev_count.saturating_add(1)];
    let cpu = dev_count;
    for (i, layer) in (0u64..).zip(&caches) {
        let d = llama_device(i, n_layer, ngl, &splits).unwrap_or(cpu);
        if let Some(v) = dev_layers.get_mut(d) {
            v.push(i);
        }
        for c in layer {
            let b = checked::mul("bytes per cell·cells", c.per_token_gpu, cells(c)?)?;
            if let Some(k) = dev_kv.get_mut(d) {
                *k = checked::add("a device's KV cache", *k, b)?;
            }
        }
    }
    let output_dev = llama_device(n_layer, n_layer, ngl, &splits);
    // Compute buffers, an estimate: f32 activations of one ubatch through the widest part of
    // a layer on every GPU, and the f32 logits of a ubatch where the output layer is.
    let (per_token, widest, _) = memory::activation_elements_per_token(spec)?;
    let ubatch = serving.n_ubatch.min(n_ctx);
    let layer_buffer =
        (Checked::new(ubatch) * per_token * 4u64).get("n_ubatch·(2·d + widest)·4 B")?;
    let logits = (Checked::new(ubatch) * spec.vocab_size * 4u64).get("n_ubatch·V·4 B")?;
    let mut stages = Vec::new();
    for d in 0..=dev_count {
        let is_gpu = d < dev_count;
        let layers = dev_layers.get(d).cloned().unwrap_or_default();
        let mut weights = 0u64;
        for &i in &layers {
            let layer = placed
                .layers
                .get(usize::try_from(i).unwrap_or(usize::MAX))
                .copied()
                .unwrap_or(0);
            weights = checked::add("a device's weights", weights, layer)?;
        }
        let mut extras = Vec::new();
        let holds_output = match output_dev {
            Some(o) => o == d,
            None => !is_gpu,
        };
        if !is_gpu {
            weights = checked::add("a device's weights + token table", weights, placed.input)?;
            extras.push("token table");
        }
        if holds_output {
            weights = checked::add("a device's weights + output", weights, placed.output)?;
            extras.push("output layer");
            if is_gpu && placed.tied_table > 0 {
                weights = checked::add(
                    "a device's weights + tied table's copy",
                    weights,
                    placed.tied_table,
                )?;
                extras.push("tied output's copy of the token table");
            }
        }
        if d == 0 && is_gpu && placed.towers > 0 {
            weights = checked::add("a device's weights + towers", weights, placed.towers)?;
            extras.push("towers");
        }
        if !is_gpu && dev_count == 0 {
            continue;
        }
        let kv = dev_kv.get(d).copied().unwrap_or(0);
        let state = if layers.is_empty() {
            0
        } else {
            state_share(r.state_bytes, 1, layers.len() as u64, n_layer)?
        };
        let activations = if is_gpu {
            checked::add(
                "layer buffer + logits (a compute buffer)",
                if layers.is_empty() { 0 } else { layer_buffer },
                if holds_output { logits } else { 0 },
            )?
        } else {
            0
        };
        let overhead = if is_gpu { options.overhead_bytes } else { 0 };
        let total = stage_total([weights, kv, state, activations, overhead])?;
        stages.push(Stage {
            device: if is_gpu {
                format!("GPU {d}")
            } else {
                "CPU (system RAM)".into()
            },
            gpu: is_gpu,
            layers: ranges_of(&layers),
            extras,
            weights,
            kv,
            state,
            activations,
            overhead,
            total,
        });
    }
    let most = most_loaded(&stages);
    r.activation_formula = format!(
        "llama.cpp compute buffer, an estimate: n_ubatch·(2·d + widest)·4 B on every GPU with layers + n_ubatch·V·4 B where the output is = {ubatch}·(2·{} + {widest})·4 + {ubatch}·{}·4",
        spec.hidden_size, spec.vocab_size
    );
    let a = &mut r.assumptions;
    a.retain(|x| {
        !x.starts_with("KV cache as")
            && !x.starts_with("activations:")
            && !x.starts_with("weights split evenly")
    });
    a.push(format!(
        "llama.cpp: KV cache for n_ctx = {} cells{} ({} per sequence × {} sequences unless --ctx-size), padded to a multiple of 256 (src/llama-context.cpp), shared by all sequences (unified cache); type {} (--cache-type-k/v; llama.cpp's default f16)",
        n_ctx,
        if n_ctx == n_ctx_asked {
            String::new()
        } else {
            format!(" (asked {n_ctx_asked})")
        },
        options.seq_len,
        options.batch,
        options.kv_dtype.name(),
    ));
    if has_windows {
        a.push(swa_note(spec, serving, swa, swa_seen.unwrap_or(n_ctx)));
    }
    a.push(format!(
        "llama.cpp layer split (--split-mode layer) over {dev_count} GPU(s) in proportions {proportions:?}{}: the last {} of {n_layer} layers on the GPUs (--n-gpu-layers {ngl}), the output layer on {}, the token table in system RAM (llama.cpp keeps the input layer on the CPU); each layer's KV cache where its layer is",
        if serving.tensor_split.is_empty() {
            " (equal; llama.cpp's default follows each GPU's free memory)"
        } else {
            ""
        },
        ngl.min(n_layer),
        if output_dev.is_some() {
            "the last GPU"
        } else {
            "the CPU (every layer and the output need --n-gpu-layers ≥ layers + 1)"
        },
    ));
    a.push(format!(
        "compute buffers, an estimate: f32 activations of one {ubatch}-token ubatch (n_ubatch) through a layer's widest part ({}) on every GPU with layers, plus the ubatch's f32 logits ({}) where the output layer is; llama.cpp reserves them from its worst-case graph at load",
        bytes_both(layer_buffer),
        bytes_both(logits)
    ));
    let gpu = options.gpu.map(|(g, _)| g);
    Ok(apply(
        r,
        ServingReport {
            runtime: Runtime::LlamaCpp,
            tp: 1,
            pp: n_dev,
            stages,
            most_loaded: most,
            llama_cpp: Some(LlamaCppView {
                n_ctx_asked,
                n_ctx,
                swa_cells: if swa && has_windows { swa_seen } else { None },
                n_gpu_layers: ngl,
                output_on_gpu: output_dev.is_some(),
            }),
            vllm: None,
        },
        gpu,
        None,
    )?)
}

/// vLLM's defaults for `max_num_batched_tokens` and `max_num_seqs` under `vllm serve`:
/// 8192 and 1024 on GPUs of at least 70 GiB other than the A100, else 2048 and 256
/// (`EngineArgs.get_batch_defaults`, `vllm/engine/arg_utils.py`).
fn vllm_batch_defaults(gpu: &Gpu) -> (u64, u64) {
    if gpu.memory_bytes >= 70 << 30 && !gpu.name.to_ascii_lowercase().contains("a100") {
        (8192, 1024)
    } else {
        (2048, 256)
    }
}

/// One pipeline stage of vLLM before its blocks are counted.
struct StagePlan {
    range: Range<u64>,
    weights: u64,
    extras: Vec<&'static str>,
    activations: u64,
    kv_budget: u64,
    // (page bytes, window) of each cached layer.
    specs: Vec<(u64, Option<u64>)>,
}

/// vLLM's allocation.
#[expect(clippy::too_many_lines, reason = "one runtime's rules, in order")]
fn vllm(
    spec: &ModelSpec,
    options: &MemoryOptions,
    serving: &ServingOptions,
    from_files: Option<&[StorageLine]>,
    placed: &PlacedWeights,
) -> Result<MemoryReport, SpecError> {
    let Some((gpu, _)) = options.gpu else {
        return Err(SpecError::Invalid {
            field: "--runtime vllm".into(),
            found: "no GPU".into(),
            expected: "a GPU: vLLM sizes its cache from the GPU's memory (--gpu, or --gpu-mem)"
                .into(),
        });
    };
    let util = serving.gpu_memory_utilization;
    if !(util > 0.0 && util <= 1.0) {
        return Err(SpecError::Invalid {
            field: "--gpu-memory-utilization".into(),
            found: util.to_string(),
            expected: "a fraction in (0, 1], e.g. 0.9".into(),
        });
    }
    let block_size = serving.block_size;
    if block_size == 0 {
        return Err(SpecError::Zero {
            field: "--block-size".into(),
        });
    }
    let tp = options.tp.max(1);
    let pp = serving.pp;
    let max_model_len = serving.max_model_len.unwrap_or(options.seq_len);
    if max_model_len == 0 {
        return Err(SpecError::Zero {
            field: "--max-model-len".into(),
        });
    }
    let (default_tokens, max_num_seqs) = vllm_batch_defaults(gpu);
    let mnbt = serving.max_num_batched_tokens.unwrap_or(default_tokens);
    let base = MemoryOptions {
        seq_len: max_model_len,
        window: CachePolicy::Runtime,
        ..*options
    };
    let mut r = memory::memory_with(spec, &base, from_files)?;
    let caches = layer_caches(spec, &base)?;
    let n_layer = u64::try_from(caches.len()).map_err(|_| overflow("layers"))?;
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss,
        reason = "a fraction of the memory, floored as vLLM's int()"
    )]
    let budget = (gpu.memory_bytes as f64 * util).floor() as u64;
    let (per_token, widest, _) = memory::activation_elements_per_token(spec)?;
    let act_layer = (Checked::new(mnbt) * per_token * 2u64)
        .get("max_num_batched_tokens·(2·d + widest)·2 B")?
        .div_ceil(tp);
    let logits = (Checked::new(max_num_seqs) * spec.vocab_size * 4u64).get("max_num_seqs·V·4 B")?;

    let mut plans = Vec::new();
    for (s, range) in (0u64..).zip(pipeline_partition(n_layer, pp)) {
        let (first, last) = (s == 0, Some(s) == pp.checked_sub(1));
        let (w, extras) = stage_weights(placed, &range, first, last)?;
        let weights = w.div_ceil(tp);
        let activations = if last {
            checked::add("activations + logits", act_layer, logits)?
        } else {
            act_layer
        };
        let used = checked::sum(
            "weights + activations + overhead (a stage)",
            [weights, activations, options.overhead_bytes],
        )?;
        let mut specs = Vec::new();
        for c in caches
            .get(usize::try_from(range.start).unwrap_or(0)..usize::try_from(range.end).unwrap_or(0))
            .unwrap_or_default()
            .iter()
            .flatten()
        {
            specs.push((
                checked::mul(
                    "bytes per token·block_size (a page)",
                    c.per_token_gpu,
                    block_size,
                )?,
                if c.cross { None } else { c.window },
            ));
        }
        plans.push(StagePlan {
            range,
            weights,
            extras,
            activations,
            // What the stage has left for the cache: none when the rest does not fit.
            kv_budget: budget.saturating_sub(used),
            specs,
        });
    }
    // Each stage's blocks; vLLM gives every rank the smallest count.
    let blocks_of = |p: &StagePlan| -> (u64, u64, u64, u64) {
        // (num_blocks, layers per block id, page bytes, bytes per block id)
        let mut types: Vec<((u64, Option<u64>), u64)> = Vec::new();
        for s in &p.specs {
            match types.iter_mut().find(|(t, _)| t == s) {
                // saturates: never, `n` counts elements of a `Vec`.
                Some((_, n)) => *n = n.saturating_add(1),
                None => types.push((*s, 1)),
            }
        }
        if types.is_empty() {
            return (0, 0, 0, 0);
        }
        let pages: Vec<u64> = types.iter().map(|((p, _), _)| *p).collect();
        let uniform_page = pages.iter().all(|x| Some(x) == pages.first());
        let windows: Vec<Option<u64>> = types.iter().map(|((_, w), _)| *w).collect();
        let one_type = windows.iter().all(|w| Some(w) == windows.first());
        if one_type || !uniform_page {
            // One group (pages may differ: UniformTypeKVCacheSpecs): a block id takes a page
            // of every layer.
            // A block past u64::MAX bytes leaves 0 blocks, on this stage and so on all: it only
            // divides the budget and multiplies a block count of 0.
            let per_block: u64 = p
                .specs
                .iter()
                .map(|(pg, _)| *pg)
                .fold(0, u64::saturating_add); // saturates: harmless, see above
            let n = u64::try_from(p.specs.len()).unwrap_or(u64::MAX);
            (
                p.kv_budget.checked_div(per_block).unwrap_or(0),
                n,
                pages.first().copied().unwrap_or(0),
                per_block,
            )
        } else {
            let counts: Vec<u64> = types.iter().map(|(_, n)| *n).collect();
            let min = counts.iter().copied().min().unwrap_or(1);
            let max = counts.iter().copied().max().unwrap_or(1);
            #[expect(clippy::cast_precision_loss, reason = "vLLM's 1.5 heuristic")]
            let group_size = if (max as f64) < (min as f64) * 1.5 {
                max
            } else {
                min
            };
            let page = pages.first().copied().unwrap_or(0);
            // saturates: harmless, as `per_block` above.
            let per_block = page.saturating_mul(group_size);
            (
                p.kv_budget.checked_div(per_block).unwrap_or(0),
                group_size,
                page,
                per_block,
            )
        }
    };
    let per_stage: Vec<(u64, u64, u64, u64)> = plans.iter().map(blocks_of).collect();
    let num_blocks = per_stage.iter().map(|b| b.0).min().unwrap_or(0);
    // Blocks one request at max_model_len needs, group by group (of the whole model).
    let mut all_types: Vec<(Option<u64>, u64)> = Vec::new();
    for p in &plans {
        for (_, w) in &p.specs {
            match all_types.iter_mut().find(|(t, _)| t == w) {
                // saturates: never, `n` counts cached layers, at most MAX_PLACED_LAYERS.
                Some((_, n)) => *n = n.saturating_add(1),
                None => all_types.push((*w, 1)),
            }
        }
    }
    let group_size = per_stage.iter().map(|b| b.1).max().unwrap_or(1).max(1);
    let hybrid = all_types.len() > 1;
    let blocks_per_request = if all_types.is_empty() {
        0
    } else if !hybrid {
        max_model_len.div_ceil(block_size)
    } else {
        all_types.iter().try_fold(0u64, |total, (w, n)| {
            let groups = n.div_ceil(group_size);
            let per = match w {
                None => max_model_len.div_ceil(block_size),
                Some(w) => {
                    // saturates: harmless, a bound of `min` with max_model_len.
                    let tokens = w.saturating_sub(1).saturating_add(mnbt).min(max_model_len);
                    checked::add(
                        "cdiv(tokens, block_size) + 1",
                        tokens.div_ceil(block_size),
                        1,
                    )?
                }
            };
            (Checked::new(total) + Checked::new(groups) * per)
                .get("Σ groups·blocks per group (blocks per request)")
        })?
    };
    #[expect(clippy::cast_precision_loss, reason = "a ratio, shown")]
    let max_concurrency = if blocks_per_request == 0 {
        f64::INFINITY
    } else {
        num_blocks as f64 / blocks_per_request as f64
    };
    let max_sequences = num_blocks
        .checked_div(blocks_per_request)
        .unwrap_or(u64::MAX);
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss,
        reason = "vLLM's int(max_concurrency × max_model_len)"
    )]
    let kv_tokens = if hybrid {
        (max_concurrency * max_model_len as f64) as u64
    } else {
        checked::mul("num_blocks·block_size", num_blocks, block_size)?
    };
    let mut stages = Vec::new();
    for (s, (p, b)) in (0u64..).zip(plans.iter().zip(&per_stage)) {
        let kv = checked::mul("num_blocks·bytes per block", num_blocks, b.3)?;
        let state = state_share(r.state_bytes, tp, range_len(&p.range), n_layer)?;
        let total = stage_total([p.weights, kv, state, p.activations, options.overhead_bytes])?;
        stages.push(Stage {
            device: gpus_label(s, tp)?,
            gpu: true,
            layers: vec![p.range.clone()],
            extras: p.extras.clone(),
            weights: p.weights,
            kv,
            state,
            activations: p.activations,
            overhead: options.overhead_bytes,
            total,
        });
    }
    let most = most_loaded(&stages);
    r.activation_formula = format!(
        "vLLM profiling peak, an estimate: max_num_batched_tokens·(2·d + widest)·2 B{} + max_num_seqs·V·4 B on the last stage = {mnbt}·(2·{} + {})·2{} + {max_num_seqs}·{}·4",
        if tp > 1 { " / tp" } else { "" },
        spec.hidden_size,
        widest,
        if tp > 1 {
            format!(" / {tp}")
        } else {
            String::new()
        },
        spec.vocab_size
    );
    let constrained = per_stage
        .iter()
        .position(|b| b.0 == num_blocks)
        .unwrap_or(0);
    let kv_budget = plans.get(constrained).map_or(0, |p| p.kv_budget);
    let page_bytes = per_stage.get(constrained).map_or(0, |b| b.2);
    let a = &mut r.assumptions;
    a.retain(|x| !x.starts_with("KV cache as") && !x.starts_with("activations:"));
    a.push(format!(
        "vLLM: {util} (gpu_memory_utilization) × {} = {} per GPU; minus weights, the profiling run's activation peak and {} of non-torch memory (--overhead: CUDA context, NCCL; CUDA graphs not counted) leaves {} for the KV cache on the most constrained GPU",
        bytes_both(gpu.memory_bytes),
        bytes_both(budget),
        bytes_both(options.overhead_bytes),
        bytes_both(kv_budget)
    ));
    a.push(format!(
        "vLLM activation peak, an estimate: one layer's bf16 working set for max_num_batched_tokens = {mnbt} tokens{} and the sampler's f32 logits of max_num_seqs = {max_num_seqs} sequences on the last stage (vLLM's defaults for this GPU under `vllm serve`)",
        if tp > 1 { format!(" / tp {tp}") } else { String::new() }
    ));
    a.push(format!(
        "vLLM paged KV: blocks of {block_size} tokens (block_size), {} B per block of a layer on one GPU; num_blocks = KV budget // page // {group_size} {} = {num_blocks}{}; a request of max_model_len {max_model_len} needs {blocks_per_request} blocks; max concurrency {max_concurrency:.2}",
        page_bytes,
        if hybrid { "layers per group" } else { "layers" },
        if pp > 1 {
            " (the smallest over the pipeline stages, as vLLM gives every rank)"
        } else {
            ""
        }
    ));
    if hybrid {
        a.push(format!(
            "vLLM hybrid cache: sliding and full layers in groups of {group_size} sharing one pool (_get_kv_cache_groups_uniform_page_size); a sliding group needs cdiv(min(window − 1 + {mnbt}, max_model_len), {block_size}) + 1 blocks per request"
        ));
    }
    if r.state_bytes > 0 {
        a.push("vLLM: recurrent (Mamba / linear-attention) states are sized as transformers holds them, outside the block pool; an approximation".into());
    }
    let fits = max_sequences >= options.batch;
    Ok(apply(
        r,
        ServingReport {
            runtime: Runtime::Vllm,
            tp,
            pp,
            stages,
            most_loaded: most,
            llama_cpp: None,
            vllm: Some(VllmView {
                gpu_memory_utilization: util,
                budget,
                kv_budget,
                block_size,
                page_bytes,
                layers_per_block: group_size,
                num_blocks,
                blocks_per_request,
                max_model_len,
                max_num_batched_tokens: mnbt,
                max_concurrency,
                max_sequences,
                kv_tokens,
            }),
        },
        Some(gpu),
        Some(fits),
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::design::{Design, Style, design_spec};
    use crate::formats::KvDtype;
    use crate::memory::MlaCache;

    /// Llama-3-8B's shape: d 4096, 32 layers, 32 heads, 8 KV heads, FFN 14336, V 128256.
    fn llama3_8b() -> ModelSpec {
        design_spec(
            &Design {
                hidden: 4096,
                layers: 32,
                vocab: Some(128_256),
                heads: Some(32),
                kv_heads: Some(8),
                ffn: Some(14_336),
                ctx: Some(8192),
            },
            Style::Llama,
        )
        .unwrap()
    }

    fn options(gpu: &str, seq_len: u64, kv: KvDtype) -> MemoryOptions {
        MemoryOptions {
            format: WeightFormat::parse("bf16").unwrap(),
            seq_len,
            batch: 1,
            kv_dtype: kv,
            tp: 1,
            gpu: Some(crate::gpu::parse_spec(gpu).unwrap()),
            mla: MlaCache::Latent,
            window: CachePolicy::Transformers,
            overhead_bytes: 512 << 20,
        }
    }

    #[test]
    fn partition_is_vllms() {
        // 32 layers over 3 stages: 10 each, the remaining 2 to the stages before the last.
        assert_eq!(pipeline_partition(32, 3), vec![0..11, 11..22, 22..32]);
        assert_eq!(
            pipeline_partition(80, 4),
            vec![0..20, 20..40, 40..60, 60..80]
        );
        assert_eq!(pipeline_partition(5, 1), vec![0..5]);
    }

    #[test]
    fn llama_cpp_devices() {
        let third = [1.0f32 / 3.0, 2.0 / 3.0, 1.0];
        // 32 layers, all 33 offloaded over 3 equal GPUs: i/33 against 1/3 and 2/3 (in f32,
        // 11/33 equals the first split, so layer 11 is on GPU 1).
        let dev = |i| llama_device(i, 32, 33, &third);
        assert_eq!(dev(10), Some(0));
        assert_eq!(dev(11), Some(1));
        assert_eq!(dev(21), Some(1));
        assert_eq!(dev(22), Some(2));
        assert_eq!(dev(31), Some(2));
        assert_eq!(dev(32), Some(2), "the output layer on the last GPU");
        // -ngl 20 on one GPU: layers 0–11 and the output on the CPU, 12–31 on the GPU.
        let one = [1.0f32];
        assert_eq!(llama_device(11, 32, 20, &one), None);
        assert_eq!(llama_device(12, 32, 20, &one), Some(0));
        assert_eq!(llama_device(32, 32, 20, &one), None);
        // -ngl 32: every layer but not the output.
        assert_eq!(llama_device(0, 32, 32, &one), Some(0));
        assert_eq!(llama_device(32, 32, 32, &one), None);
    }

    #[test]
    fn names_give_layers() {
        assert_eq!(layer_of_name("blk.12.attn_q.weight"), Some(12));
        assert_eq!(layer_of_name("model.layers.3.mlp.up_proj.weight"), Some(3));
        assert_eq!(layer_of_name("transformer.h.0.attn.c_attn.weight"), Some(0));
        assert_eq!(layer_of_name("token_embd.weight"), None);
        assert_eq!(layer_of_name("output_norm.weight"), None);
    }

    #[test]
    fn placed_layout_adds_up() {
        let spec = llama3_8b();
        let p = placed_from_layout(&spec, WeightFormat::parse("q4_k_m").unwrap()).unwrap();
        let lines = memory::weight_lines(&spec, WeightFormat::parse("q4_k_m").unwrap()).unwrap();
        let total: u64 = lines.iter().map(|l| l.bytes).sum();
        let placed = p.input + p.towers + p.output + p.layers.iter().sum::<u64>();
        assert_eq!(placed, total);
        // Q4_K_M gives some layers Q6_K attn_v/ffn_down: layer 0 is larger than layer 10.
        assert!(p.layers[0] > p.layers[10]);
        // bf16: V·d·2 bytes of token table in front, the untied head behind.
        let p = placed_from_layout(&spec, WeightFormat::parse("bf16").unwrap()).unwrap();
        assert_eq!(p.input, 128_256 * 4096 * 2);
        assert_eq!(p.output, 128_256 * 4096 * 2 + 4096 * 2);
        assert_eq!(p.tied_table, 0);
    }

    #[test]
    fn vllm_llama3_8b_on_a100() {
        let spec = llama3_8b();
        let o = options("a100", 8192, KvDtype::Bf16);
        let r = serve(
            &spec,
            &o,
            &ServingOptions {
                runtime: Runtime::Vllm,
                ..ServingOptions::default()
            },
            None,
            None,
        )
        .unwrap();
        let v = r.serving.as_ref().unwrap().vllm.unwrap();
        // 0.9 × 81,920 MiB = 77,309,411,328 B.
        assert_eq!(v.budget, 77_309_411_328);
        // Weights 16,060,522,496 (bf16); activations 2048 tokens (an A100's default
        // max_num_batched_tokens) × (2·4096 + 3·14336) × 2 B = 209,715,200; logits 256 × 128,256
        // × 4 = 131,334,144; overhead 512 MiB: 60,370,968,576 B left.
        assert_eq!(r.weights_per_gpu, 16_060_522_496);
        assert_eq!(v.kv_budget, 60_370_968_576);
        // A block of one layer: 16 tokens · 2 · 8 heads · 128 · 2 B = 65,536 B; × 32 layers.
        assert_eq!(v.page_bytes, 65_536);
        assert_eq!(v.num_blocks, 60_370_968_576 / (65_536 * 32));
        assert_eq!(v.num_blocks, 28_787);
        // 8192 tokens = 512 blocks a request: 56 whole requests (56.22×).
        assert_eq!(v.blocks_per_request, 512);
        assert_eq!(v.max_sequences, 56);
        assert!((v.max_concurrency - 56.224_609_375).abs() < 1e-9);
        assert_eq!(v.kv_tokens, 28_787 * 16);
        assert_eq!(r.fits, Some(true));
    }

    #[test]
    fn llama_cpp_pads_and_splits() {
        let spec = llama3_8b();
        let mut o = options("rtx3090x3", 5000, KvDtype::Fp16);
        o.tp = 1;
        let r = serve(
            &spec,
            &o,
            &ServingOptions {
                runtime: Runtime::LlamaCpp,
                pp: 3,
                ..ServingOptions::default()
            },
            None,
            None,
        )
        .unwrap();
        let s = r.serving.as_ref().unwrap();
        let l = s.llama_cpp.unwrap();
        // 5000 cells padded to 5120; f16 KV 2·8·128·2 B = 4096 B per token and layer.
        assert_eq!(l.n_ctx, 5120);
        assert_eq!(r.kv_bytes, 5120 * 4096 * 32);
        assert_eq!(s.stages.len(), 4);
        assert_eq!(s.stages[0].layers, vec![0..11]);
        assert_eq!(s.stages[1].layers, vec![11..22]);
        assert_eq!(s.stages[2].layers, vec![22..32]);
        assert_eq!(s.stages[0].kv, 11 * 5120 * 4096);
        assert_eq!(s.stages[2].kv, 10 * 5120 * 4096);
        // The token table stays in system RAM: V·d·2 B.
        assert_eq!(s.stages[3].weights, 128_256 * 4096 * 2);
        assert!(s.stages[2].extras.contains(&"output layer"));
    }
}
