//! The one description of a model from which every figure is derived.
//!
//! A [`ModelSpec`] is fully resolved: every default has been filled in by the adapter that
//! built it (and recorded in [`ModelSpec::assumptions`]), so counting never guesses. Layers
//! are described per kind, because real models mix layer kinds (dense and MoE layers,
//! sliding-window and global attention, a first layer without an attention norm), and held as
//! runs of those kinds ([`Layers`]), so a million layers cost what a few do; and per stack,
//! because encoder-decoders have two.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::ops::Range;

use crate::category::Category;
use crate::checked;
use crate::error::{Overflow, SpecError};
use crate::expr::{Expr, Sym};
use crate::layout::Form;

/// A fully resolved Transformer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelSpec {
    /// Display name (preset id, file name or design description).
    pub name: String,
    /// The Hugging Face `model_type` (or `design` for a model described by flags).
    pub model_type: String,
    /// The model class this spec mirrors (`LlamaForCausalLM`, `BertModel`, …).
    pub architecture: String,
    /// Model width `d` (`hidden_size`, `n_embd`, `d_model`, …).
    pub hidden_size: u64,
    /// Vocabulary size `V`.
    pub vocab_size: u64,
    /// Context the model was trained for (`max_position_embeddings`, `n_positions`), if known.
    pub context_length: Option<u64>,
    /// Input token table (`V × dim`); `dim` differs from the hidden size for OPT-350m.
    pub token_embedding: Option<Table>,
    /// Further untied copies of the token table (BART's encoder and decoder `embed_tokens`
    /// when `tie_word_embeddings` is false); 0 almost always.
    pub extra_token_tables: u64,
    /// Projections between embedding width and hidden width (OPT `project_in`/`project_out`).
    pub embedding_projections: Vec<Linear>,
    /// The layer stacks: one for decoder-only and encoder-only models, two for encoder-decoders.
    pub stacks: Vec<Stack>,
    /// The output head.
    pub head: OutputHead,
    /// BERT-style pooler (`dense` `d × d` + bias) of a bare encoder.
    pub pooler: Option<Linear>,
    /// Every value that was not read from the input but filled in, with the reason.
    pub assumptions: Vec<Assumption>,
    /// Things the user should know (e.g. an unknown `model_type` counted as llama-style).
    pub warnings: Vec<String>,
    /// Where each formula symbol came from (`d` → `n_embd`), for the legend of `--explain`.
    pub symbol_sources: BTreeMap<Sym, String>,
    /// Tensors outside the stacks that the typed parts do not describe: a vision tower and
    /// its projector, hyper-connection heads, per-layer input tables. Counted by category;
    /// a text token multiplies by none of the vision or audio ones.
    pub extras: Vec<Extra>,
    /// `None` when every figure is exact for this model type; else why it is an estimate
    /// (a type counted as another with `--assume`). Every output shows it.
    pub estimate: Option<String>,
    /// A vision-language model's positions per image in the text sequence, and the config
    /// key that says so (`image_seq_length`, `mm_tokens_per_image`, …); `None` when the
    /// count depends on the image's resolution (Qwen-VL) or the model has no vision tower.
    pub image_tokens: Option<(u64, String)>,
    /// The release's quantization as its config states it (`quantization_config`,
    /// `compression_config`); `None` for weights stored as plain floats.
    pub quantization: Option<crate::quant::Quantization>,
    /// How the family's code computes a layer, for training activations and LoRA module
    /// names; `None` where the type's training step is not derived.
    pub training: Option<crate::profile::TrainingProfile>,
    /// What the model type's record says beyond shapes (module names, peft's rules, the
    /// runtimes' rules), so no consumer looks at [`ModelSpec::model_type`].
    pub facts: crate::facts::TypeFacts,
}

/// A tensor the typed parts ([`Attention`], [`Ffn`], norms) do not describe, written by the
/// adapter from the modeling code: a state-space mixer's projections, convolution and `A`/`D`
/// vectors, a layer's residual gates, a vision tower's patch embedding. What is really new in a
/// family is a list of these, so counting, formats and FLOPs need no code per family: they
/// treat an extra by its [`Form`] and [`Category`].
#[allow(
    clippy::struct_excessive_bools,
    reason = "each switch is a fact of the real parameter, as its modeling code sets it"
)]
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Extra {
    /// Its name within the layer or model (`mixer.in_proj.weight`).
    pub name: Cow<'static, str>,
    /// The part `--explain` lists it under (`mamba mixer`).
    pub part: Cow<'static, str>,
    /// Its category.
    pub category: Category,
    /// Identical copies (a vision tower's layers, `L_vis`), usually `1`.
    pub copies: Expr,
    /// Copies one token multiplies by: all of them, except for experts of which a router
    /// picks `k` (`JetMoE`'s attention experts).
    pub active_copies: Expr,
    /// Output features (`1` for a vector).
    pub rows: Expr,
    /// Input features, or a vector's length.
    pub cols: Expr,
    /// How its count is written, and whether a token multiplies by it ([`Form::Linear`]).
    pub form: Form,
    /// Built but never run by this model's forward: a decoder's cross-attention when the
    /// model is the decoder alone (`BartForCausalLM`'s `encoder_attn`). Its parameters count
    /// and require grad, but no step gives them a gradient.
    pub idle: bool,
    /// A parameter that never requires grad, whatever is trained: `RoFormer`'s
    /// `nn.Embedding(…, _freeze=True)` positions, a Whisper-style audio tower's
    /// `embed_positions.requires_grad_(False)`, `nn.Parameter(…, requires_grad=False)`.
    pub frozen: bool,
    /// Run by the forward, but its output reaches the loss only through an op without a
    /// derivative (the DSA indexer's scores feed `topk`, whose indices pick the keys): it
    /// requires grad and never gets one.
    pub gradless: bool,
    /// Created in fp32 whatever dtype the model is built in (`nn.Parameter(torch.empty(n,
    /// dtype=torch.float32))`): its weight and gradient take four bytes an element.
    pub fp32: bool,
}

impl Extra {
    fn new(
        name: impl Into<Cow<'static, str>>,
        part: impl Into<Cow<'static, str>>,
        category: Category,
        (rows, cols): (Expr, Expr),
        form: Form,
    ) -> Self {
        Extra {
            name: name.into(),
            part: part.into(),
            category,
            copies: Expr::Lit(1),
            active_copies: Expr::Lit(1),
            rows,
            cols,
            form,
            idle: false,
            frozen: false,
            gradless: false,
            fp32: false,
        }
    }

    /// A linear layer's weight `input → output` (`[output, input]`).
    #[must_use]
    pub fn linear(
        name: impl Into<Cow<'static, str>>,
        part: impl Into<Cow<'static, str>>,
        category: Category,
        input: Expr,
        output: Expr,
    ) -> Self {
        Self::new(name, part, category, (output, input), Form::Linear)
    }

    /// A vector of `len` (a bias, a norm weight, `A_log`, `D`).
    #[must_use]
    pub fn vector(
        name: impl Into<Cow<'static, str>>,
        part: impl Into<Cow<'static, str>>,
        category: Category,
        len: Expr,
    ) -> Self {
        Self::new(name, part, category, (Expr::Lit(1), len), Form::Vector)
    }

    /// A lookup table or any other block of `rows × cols` that no token multiplies by
    /// (a depthwise convolution's kernel, a learned position table).
    #[must_use]
    pub fn table(
        name: impl Into<Cow<'static, str>>,
        part: impl Into<Cow<'static, str>>,
        category: Category,
        rows: Expr,
        cols: Expr,
    ) -> Self {
        Self::new(name, part, category, (rows, cols), Form::Table)
    }

    /// `copies` of this tensor (one per layer of a tower held at model level), all of which a
    /// token goes through.
    #[must_use]
    pub fn times(self, copies: Expr) -> Self {
        Extra {
            active_copies: copies.clone(),
            copies,
            ..self
        }
    }

    /// Never run by this model's forward ([`Extra::idle`]).
    #[must_use]
    pub fn idle(self) -> Self {
        Extra { idle: true, ..self }
    }

    /// Created in fp32 ([`Extra::fp32`]).
    #[must_use]
    pub fn fp32(self) -> Self {
        Extra { fp32: true, ..self }
    }

    /// Reached by no gradient ([`Extra::gradless`]).
    #[must_use]
    pub fn gradless(self) -> Self {
        Extra {
            gradless: true,
            ..self
        }
    }

    /// Never requires grad ([`Extra::frozen`]).
    #[must_use]
    pub fn frozen(self) -> Self {
        Extra {
            frozen: true,
            ..self
        }
    }

    /// `copies` experts of which a token uses `active` (a router picks them).
    #[must_use]
    pub fn experts(self, copies: Expr, active: Expr) -> Self {
        Extra {
            copies,
            active_copies: active,
            ..self
        }
    }
}

/// What a state-space or linear-attention layer keeps per sequence between tokens, in place of
/// a KV cache that grows: a convolution window and a recurrent state, each of fixed size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RecurrentState {
    /// Elements of the convolution state (`conv_dim × kernel` as transformers keeps it).
    pub conv: u64,
    /// Elements of the recurrent (SSM / `DeltaNet` / RG-LRU) state.
    pub recurrent: u64,
    /// The recurrent state is kept in float32 whatever the model's dtype (Mamba-2,
    /// gated `DeltaNet` caches do).
    pub recurrent_f32: bool,
    /// The convolution state is kept in float32 too.
    pub conv_f32: bool,
}

/// A value filled in because the input did not give it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assumption {
    /// The field (config key or flag).
    pub field: String,
    /// The value used.
    pub value: String,
    /// Why this value (e.g. "`LlamaConfig` default", "4·d, GPT convention").
    pub reason: String,
}

/// An embedding table of `rows × dim`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Table {
    /// Rows (vocabulary entries, positions, token types).
    pub rows: u64,
    /// Width of each row.
    pub dim: u64,
}

/// A dense projection `input → output` (weight `output × input`, optional bias of `output`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Linear {
    /// Input features.
    pub input: u64,
    /// Output features.
    pub output: u64,
    /// Whether it carries a bias vector.
    pub bias: bool,
}

/// Which part of an encoder-decoder a stack is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StackRole {
    /// Causal decoder of a decoder-only model.
    Decoder,
    /// Bidirectional encoder (BERT, the T5/BART encoder).
    Encoder,
    /// Decoder of an encoder-decoder (with cross-attention).
    CrossDecoder,
}

impl StackRole {
    /// Lowercase name used in tables and JSON.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            StackRole::Decoder | StackRole::CrossDecoder => "decoder",
            StackRole::Encoder => "encoder",
        }
    }
}

/// A stack of layers with its own position embedding and norms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stack {
    /// What the stack is.
    pub role: StackRole,
    /// Position parameters of the stack (none for RoPE/ALiBi).
    pub position: Option<PositionEmbedding>,
    /// Token-type (segment) table (BERT).
    pub token_type: Option<Table>,
    /// Norm applied to the embeddings (BLOOM `word_embeddings_layernorm`, BERT, BART).
    pub embedding_norm: Option<Norm>,
    /// The layers, in order, held as runs of identical layers.
    pub layers: Layers,
    /// The norm after the last layer.
    pub final_norm: Option<Norm>,
}

/// The layers of a stack as distinct layer kinds and runs of consecutive identical layers.
///
/// A config says how many layers a model has, and a hostile one says a million; real models
/// have one to four distinct kinds (dense and MoE, sliding and global). Holding each kind once
/// and each run as `(kind, start, count)` makes every figure cost work in the number of kinds
/// and runs, never in `num_hidden_layers`: a 1,000,000-layer llama is one kind and one run.
#[derive(Debug, Clone, Default)]
pub struct Layers {
    kinds: Vec<Layer>,
    runs: Vec<Run>,
    len: u64,
    index: HashMap<Layer, usize>,
}

/// Two stacks of layers are equal when they hold the same layers in the same order.
impl PartialEq for Layers {
    fn eq(&self, other: &Self) -> bool {
        self.kinds == other.kinds && self.runs == other.runs
    }
}

impl Eq for Layers {}

/// `count` consecutive layers, from layer `start`, all equal to kind `kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Run {
    /// Index into [`Layers::kinds`].
    pub kind: usize,
    /// 0-based index of the first layer of the run.
    pub start: u64,
    /// Layers in the run (at least 1).
    pub count: u64,
}

impl Run {
    /// The layer indices of the run.
    #[must_use]
    pub fn range(&self) -> Range<u64> {
        // saturates: never, a run ends at most at its stack's length, a u64.
        self.start..self.start.saturating_add(self.count)
    }
}

impl Layers {
    /// No layers.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// `count` copies of one layer.
    #[must_use]
    pub fn repeat(layer: Layer, count: u64) -> Self {
        let mut layers = Self::new();
        layers.push_run(layer, count);
        layers
    }

    /// Layers from a per-layer pattern of keys (a window, dense or sparse, …): consecutive
    /// equal keys become one run and each distinct key's layer is made once, so a million
    /// alternating layers cost a million run entries, never a million layers to build, compare
    /// or hash.
    pub fn from_pattern<K: PartialEq>(
        keys: impl IntoIterator<Item = K>,
        mut make: impl FnMut(&K) -> Layer,
    ) -> Self {
        let mut layers = Layers::new();
        let mut seen: Vec<(K, usize)> = Vec::new();
        for key in keys {
            let index = if let Some((_, i)) = seen.iter().find(|(k, _)| *k == key) {
                *i
            } else {
                let i = layers.add_kind(make(&key));
                seen.push((key, i));
                i
            };
            layers.push_index(index, 1);
        }
        layers
    }

    /// The index of a layer kind, added if new.
    fn add_kind(&mut self, layer: Layer) -> usize {
        // Real models have a handful of kinds: comparing stops at the first field that
        // differs, where hashing walks the whole layer (extras included) every time.
        if self.kinds.len() <= 8 {
            if let Some(k) = self.kinds.iter().position(|k| *k == layer) {
                return k;
            }
        } else if let Some(&k) = self.index.get(&layer) {
            return k;
        }
        let k = self.kinds.len();
        self.kinds.push(layer.clone());
        self.index.insert(layer, k);
        k
    }

    /// Append `count` layers of kind `index` (a valid index into `kinds`).
    fn push_index(&mut self, index: usize, count: u64) {
        // Layers past u64::MAX are dropped (readers refuse far fewer, `limits::MAX_LAYERS`),
        // so `len` is always the sum of the runs' counts.
        let start = self.len;
        let count = count.min(u64::MAX.abs_diff(start));
        let Some(end) = start.checked_add(count).filter(|_| count > 0) else {
            return;
        };
        self.len = end;
        match self.runs.last_mut() {
            // saturates: never, the runs' counts sum to `len`.
            Some(last) if last.kind == index => last.count = last.count.saturating_add(count),
            _ => self.runs.push(Run {
                kind: index,
                start,
                count,
            }),
        }
    }

    /// Append one layer (joins the last run when equal to it).
    pub fn push(&mut self, layer: Layer) {
        self.push_run(layer, 1);
    }

    /// Append `count` copies of a layer.
    pub fn push_run(&mut self, layer: Layer, count: u64) {
        if count == 0 {
            return;
        }
        // The common case first: the same layer again extends the last run, no hashing.
        if let Some(last) = self.runs.last()
            && self.kinds.get(last.kind) == Some(&layer)
        {
            let index = last.kind;
            self.push_index(index, count);
            return;
        }
        let kind = self.add_kind(layer);
        self.push_index(kind, count);
    }

    /// Number of layers.
    #[must_use]
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True when there are no layers.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The distinct layer kinds, in order of first occurrence.
    #[must_use]
    pub fn kinds(&self) -> &[Layer] {
        &self.kinds
    }

    /// The runs, in layer order.
    #[must_use]
    pub fn runs(&self) -> &[Run] {
        &self.runs
    }

    /// Each distinct kind with the number of layers of that kind.
    #[must_use]
    pub fn kind_counts(&self) -> Vec<(&Layer, u64)> {
        let mut counts = vec![0u64; self.kinds.len()];
        for r in &self.runs {
            if let Some(c) = counts.get_mut(r.kind) {
                // saturates: never, the runs' counts sum to `len`, a u64.
                *c = c.saturating_add(r.count);
            }
        }
        self.kinds.iter().zip(counts).collect()
    }

    /// The runs of one kind.
    pub fn runs_of(&self, kind: usize) -> impl Iterator<Item = &Run> {
        self.runs.iter().filter(move |r| r.kind == kind)
    }
}

impl FromIterator<Layer> for Layers {
    fn from_iter<I: IntoIterator<Item = Layer>>(iter: I) -> Self {
        let mut layers = Layers::new();
        for l in iter {
            layers.push(l);
        }
        layers
    }
}

/// Position parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PositionEmbedding {
    /// A learned absolute table; `rows` includes any offset rows (OPT and BART add 2).
    Learned {
        /// The table.
        table: Table,
        /// Rows added beyond the context length (OPT/BART offset 2), for the explanation.
        offset: u64,
    },
    /// A sinusoidal table held as a parameter that never requires grad
    /// (`nn.Embedding(_freeze=True)`: Marian's and Pegasus's `embed_positions`): counted in
    /// the parameters, never trained, its lookup saves nothing for backward.
    Sinusoidal {
        /// The table.
        table: Table,
    },
    /// T5's relative-position bias: `buckets × heads`, once per stack.
    RelativeBias {
        /// `relative_attention_num_buckets`.
        buckets: u64,
        /// Attention heads.
        heads: u64,
    },
}

/// One layer of a stack.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Layer {
    /// Self-attention.
    pub attention: Attention,
    /// Cross-attention to the encoder (encoder-decoder decoders).
    pub cross_attention: Option<Attention>,
    /// The feed-forward part.
    pub ffn: Ffn,
    /// Every norm of the block outside attention's q/k norms.
    pub norms: Vec<Norm>,
    /// Sliding-window size when this layer attends locally (none: global attention).
    pub sliding_window: Option<u64>,
    /// Tensors of the layer the typed parts do not describe (a Mamba mixer, residual gates).
    pub extras: Vec<Extra>,
    /// The state a recurrent mixer of this layer keeps per sequence.
    pub state: Option<RecurrentState>,
}

/// Self- or cross-attention.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Attention {
    /// Multi-head attention with `n_kv` key/value heads (MHA, GQA, MQA).
    Standard(StandardAttention),
    /// DeepSeek's multi-head latent attention.
    Latent(LatentAttention),
    /// No attention: the layer mixes tokens another way (a state-space mixer in
    /// [`Layer::extras`]), or not at all.
    Absent,
    /// Attention whose weights belong to a block shared by several layers (Zamba's shared
    /// transformer, counted once in [`ModelSpec::extras`]), but which caches its own keys
    /// and values in this layer: the layer holds no attention tensor, the cache is per layer.
    CacheOnly(StandardAttention),
}

/// MHA/GQA/MQA: q `d → n_h·d_h`, k and v `d → n_kv·d_h`, o `n_h·d_h → d`.
#[allow(
    clippy::struct_excessive_bools,
    reason = "each bias is a switch of the real module, as config.json names them"
)]
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct StandardAttention {
    /// Width of the residual stream.
    pub hidden: u64,
    /// Query heads `n_h`.
    pub num_heads: u64,
    /// Key/value heads `n_kv` (= `n_h` for MHA, 1 for MQA).
    pub num_kv_heads: u64,
    /// Head size `d_h`.
    pub head_dim: u64,
    /// q, k, v are one fused matrix (GPT-2 `c_attn`, `NeoX` `query_key_value`); counts the same.
    pub fused_qkv: bool,
    /// Bias on the query projection.
    pub q_bias: bool,
    /// Bias on the key projection.
    pub k_bias: bool,
    /// Bias on the value projection.
    pub v_bias: bool,
    /// Bias on the output projection.
    pub o_bias: bool,
    /// Norm on queries (Qwen3: per head, `d_h`; `OLMo2`: full width, `n_h·d_h`).
    pub q_norm: Option<Norm>,
    /// Norm on keys.
    pub k_norm: Option<Norm>,
    /// One learned attention-sink logit per head (gpt-oss).
    pub sinks: bool,
    /// A sparse-attention indexer (DeepSeek's DSA on GQA layers: dots.llm3, Hunyuan-V4)
    /// caches one key of this width per token beside K and V; its weights are the layer's
    /// extras.
    pub indexer_key_dim: Option<u64>,
    /// Tokens every sequence's cache holds beyond its input (CPM-Ant prepends
    /// `prompt_length` learned prompt tokens in every layer).
    pub cache_prefix_tokens: u64,
    /// Values are the key projection's output (Gemma 4's `attention_k_eq_v` on full
    /// layers): no `v_proj`, but the cache still holds keys and values.
    pub v_from_k: bool,
    /// Key/value heads transformers' implementation actually caches when it differs from
    /// `num_kv_heads` (Falcon's new decoder layout broadcasts K and V to every query head
    /// before caching); runtimes that cache the grouped heads use `num_kv_heads`.
    pub transformers_cache_heads: Option<u64>,
    /// Keys and values are one tensor (DeepSeek-V4's shared-KV MQA, `modeling_deepseek_v4.py`
    /// `DeepseekV4HCACache.update`: `self.values = self.keys`): the cache holds it once.
    pub shared_kv: bool,
    /// A compressed cache beside the layer's window (DeepSeek-V4's CSA/HCA compressors).
    pub compressed: Option<CompressedCache>,
}

/// DeepSeek-V4's compressed cache (`modeling_deepseek_v4.py`, `DeepseekV4HCACache` and
/// `DeepseekV4CSACache`): one entry of `entry` elements per `rate` source tokens, the
/// `seq mod rate` tokens of an unfinished window buffered (their kv projection, `entry`
/// wide, twice that with the CSA's overlapping series, in the cache; their gate beside it as
/// state), and with the CSA's overlap the last window's first series (`rate·entry`, kv and a
/// float32 gate) once a window closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CompressedCache {
    /// Source tokens per entry (`compress_rates`).
    pub rate: u64,
    /// Elements of one entry: the compressor's `d_h`, plus the indexer's `index_head_dim`.
    pub entry: u64,
    /// Overlapping windows (CSA): two series per token, the last window's first carried.
    pub overlap: bool,
}

impl CompressedCache {
    /// (KV-dtype cache elements, model-dtype state elements, float32 state elements) after
    /// a prefill of `seq` tokens.
    pub fn after(&self, seq: u64) -> Result<(u64, u64, u64), crate::error::Overflow> {
        use crate::checked::Checked;
        let rate = self.rate.max(1);
        let series = if self.overlap { 2u64 } else { 1 };
        let left = seq.checked_rem(rate).unwrap_or(0);
        let buffer =
            (Checked::new(left) * series * self.entry).get("buffered tokens·series·entry")?;
        let carried = if self.overlap && seq >= rate {
            (Checked::new(rate) * self.entry).get("rate·entry (overlap)")?
        } else {
            0
        };
        let kv = (Checked::new(seq.checked_div(rate).unwrap_or(0)) * self.entry + buffer + carried)
            .get("entries·entry + buffer + overlap (compressed cache)")?;
        Ok((kv, buffer, carried))
    }
}

/// Multi-head latent attention (DeepSeek-V2/V3).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LatentAttention {
    /// Width of the residual stream.
    pub hidden: u64,
    /// Heads.
    pub num_heads: u64,
    /// Rank of the query compression (`None`: a full `q_proj`).
    pub q_lora_rank: Option<u64>,
    /// Rank of the key/value compression.
    pub kv_lora_rank: u64,
    /// Per-head query/key size without rotary part.
    pub qk_nope_head_dim: u64,
    /// Per-head rotary part (shared key part).
    pub qk_rope_head_dim: u64,
    /// Per-head value size.
    pub v_head_dim: u64,
    /// Bias on the down projections and `o_proj` (`attention_bias`).
    pub bias: bool,
    /// DeepSeek Sparse Attention (V3.2, GLM-MoE-DSA): the lightning indexer caches one key of
    /// this width per token beside the latent (its weights are the layer's extras).
    pub indexer_key_dim: Option<u64>,
    /// The category its tensors count in: [`Category::Attention`], except where the ground
    /// truth's rules file the module elsewhere (Kimi-Linear's MLA class is named
    /// `KimiLinearAttention`, which the coverage truth's documented rule puts under `ssm`).
    pub category: Category,
}

/// Feed-forward part of a layer.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Ffn {
    /// One MLP.
    Dense(Mlp),
    /// A mixture of experts.
    Moe(Moe),
    /// No feed-forward part (a Mamba layer is norm + mixer).
    Absent,
}

/// An MLP `d → d_ff → d`: 2 matrices, or 3 when gated (SwiGLU/GeGLU).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Mlp {
    /// Width of the residual stream.
    pub hidden: u64,
    /// Inner width `d_ff`.
    pub intermediate: u64,
    /// Gated: `gate` and `up` both `d → d_ff`.
    pub gated: bool,
    /// Bias on the input projection(s).
    pub up_bias: bool,
    /// Bias on the output projection.
    pub down_bias: bool,
}

/// The bias a router holds beside its `d → E` matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum RouterBias {
    /// None.
    #[default]
    None,
    /// `nn.Linear(d, E, bias=True)`'s bias (gpt-oss): it trains with the router.
    Linear,
    /// A selection-only correction bias added to the scores before top-k, held as
    /// `nn.Parameter(…, requires_grad=False)` (`AfMoE`'s `expert_bias`, Laguna's and
    /// ERNIE-4.5-MoE's `e_score_correction_bias`): counted, never trained.
    Correction,
}

impl RouterBias {
    /// Whether the router holds a bias vector of `E`.
    #[must_use]
    pub fn present(self) -> bool {
        self != RouterBias::None
    }
}

/// A mixture-of-experts block.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Moe {
    /// Routed experts `E`.
    pub num_experts: u64,
    /// Experts chosen per token `k`.
    pub experts_per_token: u64,
    /// One routed expert.
    pub expert: Mlp,
    /// The router's bias, if any.
    pub router_bias: RouterBias,
    /// The router is that one `d → E` matrix; `false` when it is a network of its own (Zaya),
    /// whose tensors the family lists in [`Layer::extras`] under [`Category::MoeRouter`].
    pub router: bool,
    /// Always-on shared expert(s), as one MLP of the summed width.
    pub shared: Option<Mlp>,
    /// A sigmoid gate `d → 1` on the shared expert (Qwen2-MoE).
    pub shared_gate: bool,
}

/// Output head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutputHead {
    /// Bare model (`BertModel`, `BartModel`).
    None,
    /// Projection to the vocabulary.
    Lm {
        /// The projection is the token embedding (counted once, in `token_embedding`).
        tied: bool,
        /// Output bias vectors of `V`: 1 for Phi, GPT-J and MLM decoders; 2 for an untied
        /// BERT/RoBERTa MLM head (the decoder's bias and the head's own stop being one tensor).
        biases: u64,
        /// MLM transform (`dense` + norm) before the decoder.
        transform: Option<HeadTransform>,
    },
}

/// The MLM head's transform: `d → d` dense plus a norm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeadTransform {
    /// The dense projection.
    pub dense: Linear,
    /// The norm after it.
    pub norm: Norm,
}

/// Kind of normalisation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NormKind {
    /// `LayerNorm`: weight, and bias unless disabled.
    LayerNorm,
    /// `RMSNorm`: weight only.
    RmsNorm,
}

/// A norm over `dim` features.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Norm {
    /// `LayerNorm` or `RMSNorm`.
    pub kind: NormKind,
    /// Normalised width.
    pub dim: u64,
    /// Carries a bias vector (`LayerNorm` only).
    pub bias: bool,
}

impl Norm {
    /// `LayerNorm` with weight and bias.
    #[must_use]
    pub fn layer_norm(dim: u64) -> Self {
        Norm {
            kind: NormKind::LayerNorm,
            dim,
            bias: true,
        }
    }
    /// `RMSNorm` (weight only).
    #[must_use]
    pub fn rms_norm(dim: u64) -> Self {
        Norm {
            kind: NormKind::RmsNorm,
            dim,
            bias: false,
        }
    }
}

impl ModelSpec {
    /// The longest input the parameters allow: a learned position table has one row per
    /// position (minus any offset rows); rotary and relative positions have no such limit.
    #[must_use]
    pub fn position_limit(&self) -> Option<u64> {
        self.stacks
            .iter()
            .filter_map(|s| match s.position {
                Some(PositionEmbedding::Learned { table, offset }) => {
                    // Offset rows beyond the table leave no position.
                    Some(table.rows.saturating_sub(offset))
                }
                Some(PositionEmbedding::Sinusoidal { table }) => Some(table.rows),
                _ => None,
            })
            .min()
    }

    /// Total layers over all stacks, for comparisons and messages: it saturates past
    /// `u64::MAX` layers in all (readers refuse a stack of more than
    /// [`MAX_LAYERS`](crate::limits::MAX_LAYERS)); arithmetic uses
    /// [`ModelSpec::total_layers`].
    #[must_use]
    pub fn num_layers(&self) -> u64 {
        self.total_layers().unwrap_or(u64::MAX)
    }

    /// Total layers over all stacks, or the error when they do not fit a `u64`.
    pub fn total_layers(&self) -> Result<u64, Overflow> {
        checked::sum(
            "layers of all stacks",
            self.stacks.iter().map(|s| s.layers.len()),
        )
    }

    /// The layer of each run of each stack, in layer order: "the last layer that…" questions
    /// see the same answer as over every layer, at the cost of the runs.
    pub fn layers_by_run(&self) -> impl Iterator<Item = &Layer> {
        self.stacks.iter().flat_map(|s| {
            s.layers
                .runs()
                .iter()
                .filter_map(|r| s.layers.kinds().get(r.kind))
        })
    }

    /// Every distinct layer kind of every stack (each once per stack).
    pub fn layer_kinds(&self) -> impl Iterator<Item = &Layer> {
        self.stacks.iter().flat_map(|s| s.layers.kinds())
    }

    /// Checks the invariants counting relies on: positive sizes and whole head groups.
    pub fn validate(&self) -> Result<(), SpecError> {
        positive("hidden_size", self.hidden_size)?;
        positive("vocab_size", self.vocab_size)?;
        if self.stacks.iter().all(|s| s.layers.is_empty()) {
            return Err(SpecError::Zero {
                field: "num_hidden_layers".into(),
            });
        }
        for layer in self.layer_kinds() {
            for attention in std::iter::once(&layer.attention).chain(&layer.cross_attention) {
                match attention {
                    Attention::Standard(a) | Attention::CacheOnly(a) => {
                        positive("num_attention_heads", a.num_heads)?;
                        positive("num_key_value_heads", a.num_kv_heads)?;
                        positive("head_dim", a.head_dim)?;
                        if !a.num_heads.is_multiple_of(a.num_kv_heads) {
                            return Err(SpecError::KvHeadsDoNotDivide {
                                heads: a.num_heads,
                                kv_heads: a.num_kv_heads,
                            });
                        }
                    }
                    Attention::Latent(a) => {
                        positive("num_attention_heads", a.num_heads)?;
                        positive("kv_lora_rank", a.kv_lora_rank)?;
                        // NoPE MLA (GLM-5-Next's DSA layers) has no rotary part: the query/key
                        // head is the sum, which must be positive.
                        positive(
                            "qk_nope_head_dim + qk_rope_head_dim",
                            // saturates: only tested against 0; the layout's checked sums
                            // refuse an overflow of the same two values.
                            a.qk_nope_head_dim.saturating_add(a.qk_rope_head_dim),
                        )?;
                        positive("v_head_dim", a.v_head_dim)?;
                        if let Some(r) = a.q_lora_rank {
                            positive("q_lora_rank", r)?;
                        }
                    }
                    Attention::Absent => {}
                }
            }
            match &layer.ffn {
                Ffn::Dense(m) => positive("intermediate_size", m.intermediate)?,
                Ffn::Moe(m) => {
                    positive("num_experts", m.num_experts)?;
                    positive("num_experts_per_tok", m.experts_per_token)?;
                    positive("moe_intermediate_size", m.expert.intermediate)?;
                    if m.experts_per_token > m.num_experts {
                        return Err(SpecError::Invalid {
                            field: "num_experts_per_tok".into(),
                            found: m.experts_per_token.to_string(),
                            expected: format!("at most the number of experts ({})", m.num_experts),
                        });
                    }
                }
                Ffn::Absent => {}
            }
        }
        Ok(())
    }
}

fn positive(field: &str, value: u64) -> Result<(), SpecError> {
    if value == 0 {
        Err(SpecError::Zero {
            field: field.to_owned(),
        })
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layer(window: Option<u64>) -> Layer {
        Layer {
            attention: Attention::Standard(StandardAttention {
                hidden: 8,
                num_heads: 2,
                num_kv_heads: 2,
                head_dim: 4,
                fused_qkv: false,
                q_bias: false,
                k_bias: false,
                v_bias: false,
                o_bias: false,
                q_norm: None,
                k_norm: None,
                sinks: false,
                transformers_cache_heads: None,
                v_from_k: false,
                indexer_key_dim: None,
                cache_prefix_tokens: 0,
                shared_kv: false,
                compressed: None,
            }),
            cross_attention: None,
            ffn: Ffn::Dense(Mlp {
                hidden: 8,
                intermediate: 16,
                gated: true,
                up_bias: false,
                down_bias: false,
            }),
            norms: vec![Norm::rms_norm(8); 2],
            sliding_window: window,
            extras: Vec::new(),
            state: None,
        }
    }

    #[test]
    fn runs_of_kinds_answer_like_a_list_of_layers() {
        // Gemma-2 style: sliding, global, sliding, global, then three global.
        let list = [Some(4), None, Some(4), None, None, None];
        let layers: Layers = list.iter().map(|w| layer(*w)).collect();
        assert_eq!(layers.len(), 6);
        assert_eq!(layers.kinds().len(), 2);
        assert_eq!(layers.runs().len(), 4); // 0, 1, 2, 3–5
        // Expanding the runs gives back the list.
        let kinds = layers.kinds();
        let expanded: Vec<Option<u64>> = layers
            .runs()
            .iter()
            .flat_map(|r| r.range().map(move |_| kinds[r.kind].sliding_window))
            .collect();
        assert_eq!(expanded, list);
        let counts: Vec<u64> = layers.kind_counts().iter().map(|(_, n)| *n).collect();
        assert_eq!(counts, vec![2, 4]);
        let global: Vec<_> = layers.runs_of(1).map(Run::range).collect();
        assert_eq!(global, vec![1..2, 3..6]);
    }

    #[test]
    fn a_pattern_makes_each_kind_once_and_runs_of_it() {
        let mut made = 0;
        let pattern = (0..1_000_000u64).map(|i| i % 2 == 0).chain([false, false]);
        let layers = Layers::from_pattern(pattern, |slides| {
            made += 1;
            layer(slides.then_some(4))
        });
        assert_eq!(made, 2, "one layer built per distinct key");
        assert_eq!(layers.len(), 1_000_002);
        assert_eq!(layers.kinds().len(), 2);
        // 999,999 alternations, then the last global run takes the two extra layers.
        assert_eq!(layers.runs().len(), 1_000_000);
        assert_eq!(layers.runs().last().map(|r| r.count), Some(3));
        let counts: Vec<u64> = layers.kind_counts().iter().map(|(_, n)| *n).collect();
        assert_eq!(counts, vec![500_000, 500_002]);
    }

    #[test]
    fn a_repeated_layer_is_one_run_whatever_the_count() {
        let layers = Layers::repeat(layer(None), u64::MAX);
        assert_eq!(layers.len(), u64::MAX);
        assert_eq!(layers.runs().len(), 1);
        assert_eq!(layers.runs()[0].range(), 0..u64::MAX);
    }
}
