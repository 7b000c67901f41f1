//! The one layout of a model: every weight, bias and norm vector with its shape, written
//! once, from which every figure is derived.
//!
//! Each tensor carries its shape as checked expressions over typed symbols ([`Sym`]): the
//! parameter count and its formulas (`--explain`, the JSON `formulas`) are the sums of these
//! shapes, part by part; storage formats (GGUF mixes, GPTQ groups, NF4 blocks) size these
//! tensors; FLOPs multiply by these matrices; and the attention geometry of each layer kind
//! (score and value widths, what a KV cache holds per token) is written here too. No other
//! module writes a layer's shape.
//!
//! Tensors of a layer are listed once per distinct layer kind, with the runs of layers that
//! hold them, so the layout of a 1,000,000-layer model is as small as that of a 1-layer one.
//!
//! Matrices are `[output, input]` like `nn.Linear.weight`; GGUF's `ne[0]` is the input.

use std::borrow::Cow;
use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use crate::category::Category;
use crate::checked::{self, Checked};
use crate::error::{Overflow, SpecError};
use crate::expr::{Expr, Sym};
use crate::spec::{
    Attention, Extra, Ffn, LatentAttention, Layer, Mlp, ModelSpec, Norm, NormKind, OutputHead,
    PositionEmbedding, RecurrentState, RouterBias, StackRole, StandardAttention,
};

/// What a tensor is, at the granularity storage formats and FLOPs care about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TensorKind {
    /// Input token table.
    TokenEmbedding,
    /// Learned position table or relative-position bias.
    PositionEmbedding,
    /// Token-type table.
    TokenTypeEmbedding,
    /// OPT `project_in`/`project_out`.
    EmbeddingProjection,
    /// Query projection (or MLA `q_b_proj`/`q_proj`).
    AttnQ,
    /// Key projection.
    AttnK,
    /// Value projection.
    AttnV,
    /// Fused q/k/v.
    AttnQkv,
    /// Output projection.
    AttnOutput,
    /// MLA query down-projection `q_a_proj`.
    AttnQA,
    /// MLA key/value down-projection `kv_a_proj_with_mqa`.
    AttnKvA,
    /// MLA key/value up-projection `kv_b_proj`.
    AttnKvB,
    /// Gate projection of a gated MLP.
    FfnGate,
    /// Up projection.
    FfnUp,
    /// Down projection.
    FfnDown,
    /// MoE router.
    Router,
    /// Routed experts' gate (one 3-D tensor `[E, d_e, d]`).
    ExpertGate,
    /// Routed experts' up.
    ExpertUp,
    /// Routed experts' down.
    ExpertDown,
    /// Shared experts' gate.
    SharedGate,
    /// Shared experts' up.
    SharedUp,
    /// Shared experts' down.
    SharedDown,
    /// Qwen2-MoE's shared-expert gate `d → 1`.
    SharedExpertGate,
    /// A norm weight or bias (including q/k norms and MLA latent norms).
    Norm,
    /// A bias vector of a projection.
    Bias,
    /// gpt-oss attention sinks.
    Sinks,
    /// Output projection to the vocabulary.
    Output,
    /// MLM transform `dense`.
    HeadTransform,
    /// BERT pooler.
    Pooler,
    /// A matrix of a part the typed blocks do not describe ([`crate::spec::Extra`]): a
    /// state-space mixer's projections, a vision tower's; a token multiplies by it.
    Matrix,
    /// Any other block of an extra part (a depthwise convolution kernel, a table).
    Block,
    /// A vector of an extra part (bias, norm, `A_log`, `D`, a residual scale).
    Vector,
}

impl TensorKind {
    /// A projection of attention: q, k, v, a fused qkv, the output, and MLA's down and up
    /// projections (what `--freeze attention`, Megatron's tensor split and peft's
    /// `attn.`-prefixed targets mean by attention).
    #[must_use]
    pub fn is_attention_projection(self) -> bool {
        use TensorKind::{AttnK, AttnKvA, AttnKvB, AttnOutput, AttnQ, AttnQA, AttnQkv, AttnV};
        matches!(
            self,
            AttnQ | AttnK | AttnV | AttnQkv | AttnOutput | AttnQA | AttnKvA | AttnKvB
        )
    }

    /// A tensor of the MLP block: the dense FFN, the router, the routed and shared experts and
    /// the shared expert's gate (transformers' `mlp.` module; what `--freeze mlp` freezes).
    #[must_use]
    pub fn is_mlp(self) -> bool {
        use TensorKind::{
            ExpertDown, ExpertGate, ExpertUp, FfnDown, FfnGate, FfnUp, Router, SharedDown,
            SharedExpertGate, SharedGate, SharedUp,
        };
        matches!(
            self,
            FfnGate
                | FfnUp
                | FfnDown
                | Router
                | ExpertGate
                | ExpertUp
                | ExpertDown
                | SharedGate
                | SharedUp
                | SharedDown
                | SharedExpertGate
        )
    }

    /// A dense matrix that a linear layer multiplies by (what quantizers and `LoRA` target).
    #[must_use]
    pub fn is_block_matrix(self) -> bool {
        use TensorKind::{
            AttnK, AttnKvA, AttnKvB, AttnOutput, AttnQ, AttnQA, AttnQkv, AttnV, ExpertDown,
            ExpertGate, ExpertUp, FfnDown, FfnGate, FfnUp, Matrix, SharedDown, SharedGate,
            SharedUp,
        };
        matches!(
            self,
            AttnQ
                | AttnK
                | AttnV
                | AttnQkv
                | AttnOutput
                | AttnQA
                | AttnKvA
                | AttnKvB
                | FfnGate
                | FfnUp
                | FfnDown
                | ExpertGate
                | ExpertUp
                | ExpertDown
                | SharedGate
                | SharedUp
                | SharedDown
                | Matrix
        )
    }
}

/// How a tensor's element count is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Form {
    /// A lookup table (or the output head, which may be tied to one): `rows·cols`, `V·d`.
    Table,
    /// A linear layer's weight: `input·output`, `d·d_ff`.
    Linear,
    /// A vector (norm, bias, sinks): its length.
    Vector,
}

/// A tensor's shape as formulas: `copies` matrices (routed experts) of `rows × cols`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shape {
    /// Identical copies (`E` for routed experts, else `1`).
    pub copies: Expr,
    /// Copies one token uses (`k` for routed experts, else `1`).
    pub active_copies: Expr,
    /// Output features (`1` for vectors).
    pub rows: Expr,
    /// Input features, or the length of a vector.
    pub cols: Expr,
    /// How the element count is written.
    pub form: Form,
}

impl Shape {
    fn one(rows: Expr, cols: Expr, form: Form) -> Self {
        Shape {
            copies: ONE,
            active_copies: ONE,
            rows,
            cols,
            form,
        }
    }

    /// A lookup table `rows × cols`.
    fn table(rows: Expr, cols: Expr) -> Self {
        Self::one(rows, cols, Form::Table)
    }

    /// A vector of `len`.
    fn vector(len: Expr) -> Self {
        Self::one(ONE, len, Form::Vector)
    }

    /// A linear layer's weight `[output, input]`.
    fn linear(input: Expr, output: Expr) -> Self {
        Self::one(output, input, Form::Linear)
    }

    /// `copies` of this shape, `active` of which one token uses (routed experts).
    fn times(self, copies: &Expr, active: &Expr) -> Self {
        Shape {
            copies: copies.clone(),
            active_copies: active.clone(),
            ..self
        }
    }

    /// Elements of one copy, as the article writes them.
    #[must_use]
    pub fn elements_of_one(&self) -> Expr {
        let (a, b) = match self.form {
            Form::Table => (&self.rows, &self.cols),
            Form::Linear => (&self.cols, &self.rows),
            Form::Vector => return self.cols.clone(),
        };
        // A `d → 1` gate is written `d`, not `d·1`.
        let factors: Vec<Expr> = [a, b].into_iter().filter(|f| **f != ONE).cloned().collect();
        if factors.is_empty() {
            ONE
        } else {
            Expr::product(factors)
        }
    }
}

/// Where a tensor sits, which decides how its count is gathered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// Token tables and embedding projections, before any stack.
    Input,
    /// A stack's own tensors before its layers (positions, token types, embedding norm).
    StackStart(usize),
    /// A layer of kind `kind` (index into the stack's [`crate::spec::Layers::kinds`]).
    Layer {
        /// Index of the stack.
        stack: usize,
        /// Index of the layer kind within the stack.
        kind: usize,
    },
    /// A stack's tensors after its layers (final norm).
    StackEnd(usize),
    /// The head: MLM transform, output projection and biases, pooler.
    Output,
}

/// A tensor's readable name (`decoder.3.cross_attn_q.weight`), kept in pieces and joined only
/// when shown: counting needs no names, and a model has thousands of tensors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorName {
    /// Stack and first layer of the kind (`decoder.3`), empty for embeddings and the head.
    pub prefix: Arc<str>,
    /// Part of a layer's cross-attention (`cross_attn_` before the local name).
    pub cross: bool,
    /// The name within the layer (`attn_q`, `norm1`).
    pub local: Cow<'static, str>,
    /// `.weight`, `.bias` or nothing.
    pub suffix: &'static str,
}

impl fmt::Display for TensorName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.prefix.is_empty() {
            write!(f, "{}.", self.prefix)?;
        }
        if self.cross {
            f.write_str("cross_")?;
        }
        write!(f, "{}{}", self.local, self.suffix)
    }
}

/// One tensor (or one group of identical routed-expert matrices), listed once per layer kind:
/// a layer tensor stands for the same tensor in every layer of its kind (`layers` of them, in
/// `layer_runs`), so the list grows with the number of distinct layer kinds, not with
/// `num_hidden_layers`.
#[allow(
    clippy::struct_excessive_bools,
    reason = "each switch is a fact of the real parameter, copied from its Extra"
)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tensor {
    /// A readable name (`decoder.3.attn_q.weight`, after the first layer of its kind).
    pub name: TensorName,
    /// The part of the model it belongs to (`q_proj`, `mlp (gated)`, `2 norms`), as
    /// `--explain` lists them (with `cross_attn.` before a cross-attention part);
    /// consecutive tensors of a part are counted together.
    pub part: Cow<'static, str>,
    /// What it is.
    pub kind: TensorKind,
    /// Its category in the 13-way split.
    pub category: Category,
    /// Where it sits.
    pub place: Place,
    /// The stack it belongs to (none for embeddings and the head).
    pub stack: Option<StackRole>,
    /// The layers (0-based, within its stack) that hold this tensor, as runs; empty outside
    /// layers. Per-layer rules (llama.cpp's mixes) read the positions from here.
    pub layer_runs: Arc<[Range<u64>]>,
    /// How many layers hold it (1 outside layers).
    pub layers: u64,
    /// Layers in that stack (llama.cpp's mixing rules depend on the position).
    pub stack_layers: u64,
    /// The shape as formulas.
    pub shape: Shape,
    /// `shape.copies`, evaluated.
    pub copies: u64,
    /// `shape.active_copies`, evaluated.
    pub active_copies: u64,
    /// `shape.rows`, evaluated (`1` for vectors).
    pub rows: u64,
    /// `shape.cols`, evaluated.
    pub cols: u64,
    /// Never run by the model's forward ([`crate::spec::Extra::idle`]): no gradient.
    pub idle: bool,
    /// Never requires grad, whatever is trained ([`crate::spec::PositionEmbedding::Sinusoidal`]):
    /// a frozen parameter.
    pub frozen: bool,
    /// Run, but reached by no gradient ([`crate::spec::Extra::gradless`]).
    pub gradless: bool,
    /// Created in fp32 whatever the model's dtype ([`crate::spec::Extra::fp32`]).
    pub fp32: bool,
}

impl Tensor {
    /// The part's label: `q_proj`, or `cross_attn.q_proj` in a cross-attention.
    #[must_use]
    pub fn part_label(&self) -> String {
        if self.name.cross {
            format!("cross_attn.{}", self.part)
        } else {
            self.part.to_string()
        }
    }

    /// Elements of one instance (one layer's tensor), checked.
    pub fn elements(&self) -> Result<u64, Overflow> {
        (Checked::new(self.copies) * self.rows * self.cols).get("copies·rows·cols of a tensor")
    }

    /// Elements over every layer that holds it, checked.
    pub fn total_elements(&self) -> Result<u64, Overflow> {
        checked::mul("elements·layers of a tensor", self.elements()?, self.layers)
    }

    /// One row (norm, bias, sinks, a `d → 1` gate, a one-type token-type table): stored
    /// unquantized by every format, as llama.cpp's quantizer keeps a tensor of one
    /// non-trivial dimension (`ggml_n_dims(t) >= 2`, `src/llama-quant.cpp`).
    #[must_use]
    pub fn is_vector(&self) -> bool {
        self.rows == 1
    }

    /// Not a vector by form: a table or a Linear's weight, even of one output row
    /// (Qwen2-MoE's `d → 1` `shared_expert_gate` is a matmul `FlopCounterMode` counts).
    #[must_use]
    pub fn is_matrix(&self) -> bool {
        self.shape.form != Form::Vector
    }
}

/// What one attention module of a layer kind attends with and caches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttentionGeometry {
    /// The stack.
    pub stack: StackRole,
    /// Layers of this kind.
    pub layers: u64,
    /// Cross-attention to the encoder output (not the layer's self-attention).
    pub cross: bool,
    /// Sliding window of the layer (self-attention only).
    pub window: Option<u64>,
    /// Query/key width of all heads, `n_h·d_qk`.
    pub qk_width: u64,
    /// Value width of all heads, `n_h·d_v`.
    pub v_width: u64,
    /// What a cache holds per token.
    pub cache: CacheShape,
}

/// Elements a KV cache holds per token and layer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CacheShape {
    /// K and V of `n_kv` heads: `2·n_kv·d_h` (plus an indexer's key, `d_idx`).
    Heads {
        /// `2·n_kv·d_h`, as written.
        formula: Expr,
        /// Elements of a sparse-attention indexer's key per token (0: none), held whole by
        /// every rank.
        indexer: u64,
        /// Tokens cached beyond the input (CPM-Ant's prompt).
        prefix: u64,
        /// Key/value heads of the model.
        kv_heads: u64,
        /// Heads transformers' own cache holds (Falcon's new layout expands them).
        transformers_heads: u64,
        /// Head width.
        head_dim: u64,
        /// K and V are one tensor, cached once (DeepSeek-V4).
        shared_kv: bool,
        /// A compressed cache beside the window (DeepSeek-V4).
        compressed: Option<crate::spec::CompressedCache>,
    },
    /// DeepSeek MLA: the compressed latent `r_kv + d_rope`, or K and V expanded per head.
    Latent {
        /// `r_kv + d_rope`.
        latent: Expr,
        /// `n_h·(d_nope + d_rope) + n_h·d_v`.
        expanded: Expr,
    },
}

/// The recurrent state of the layers of one kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateGeometry {
    /// The stack.
    pub stack: StackRole,
    /// Layers of this kind.
    pub layers: u64,
    /// What each layer keeps per sequence.
    pub state: RecurrentState,
}

/// The layout of a model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// Every tensor, in a stable order (embeddings, stacks kind by kind, head, extras).
    pub tensors: Vec<Tensor>,
    /// The attention of every layer kind (self, then cross), stack by stack.
    pub attention: Vec<AttentionGeometry>,
    /// The recurrent state of every layer kind that keeps one.
    pub states: Vec<StateGeometry>,
}

/// Widths named the way the article writes them: a width equal to the model's is `d`, as the
/// article writes `4d²` for attention; any other takes the symbol of its role.
struct Widths {
    hidden: u64,
}

impl Widths {
    fn d(&self) -> Expr {
        Expr::sym(Sym::Hidden, self.hidden)
    }

    fn width(&self, value: u64, otherwise: Sym) -> Expr {
        if value == self.hidden {
            self.d()
        } else {
            Expr::sym(otherwise, value)
        }
    }
}

struct Builder {
    out: Vec<Tensor>,
    prefix: Arc<str>,
    cross: bool,
    place: Place,
    stack: Option<StackRole>,
    layer_runs: Arc<[Range<u64>]>,
    layers: u64,
    stack_layers: u64,
}

const ONE: Expr = Expr::Lit(1);

impl Builder {
    #[allow(
        clippy::too_many_arguments,
        reason = "one call per tensor, each argument named"
    )]
    fn push(
        &mut self,
        (local, suffix): (impl Into<Label>, &'static str),
        part: impl Into<Label>,
        kind: TensorKind,
        category: Category,
        shape: Shape,
    ) -> Result<(), Overflow> {
        self.out.push(Tensor {
            name: TensorName {
                prefix: self.prefix.clone(),
                cross: self.cross,
                local: local.into(),
                suffix,
            },
            part: part.into(),
            kind,
            category,
            place: self.place,
            stack: self.stack,
            layer_runs: self.layer_runs.clone(),
            layers: self.layers,
            stack_layers: self.stack_layers,
            copies: shape.copies.eval()?,
            active_copies: shape.active_copies.eval()?,
            rows: shape.rows.eval()?,
            cols: shape.cols.eval()?,
            shape,
            idle: false,
            frozen: false,
            gradless: false,
            fp32: false,
        });
        Ok(())
    }

    /// A linear layer `input → output`: `name.weight` `[output, input]` and `name.bias`.
    #[allow(
        clippy::too_many_arguments,
        reason = "one call per tensor, each argument named"
    )]
    fn linear(
        &mut self,
        name: impl Into<Label>,
        part: impl Into<Label>,
        kind: TensorKind,
        category: Category,
        (input, output): (Expr, Expr),
        bias: bool,
    ) -> Result<(), Overflow> {
        let (name, part): (Label, Label) = (name.into(), part.into());
        let weight = Shape::linear(input, output.clone());
        self.push(
            (name.clone(), ".weight"),
            part.clone(),
            kind,
            category,
            weight,
        )?;
        if bias {
            let bias = Shape::vector(output);
            self.push((name, ".bias"), part, TensorKind::Bias, category, bias)?;
        }
        Ok(())
    }

    /// A tensor of a part the typed blocks do not describe, by its form.
    fn extra(&mut self, e: &Extra) -> Result<(), Overflow> {
        let kind = match e.form {
            Form::Linear => TensorKind::Matrix,
            Form::Table => TensorKind::Block,
            Form::Vector => TensorKind::Vector,
        };
        let shape = Shape {
            copies: e.copies.clone(),
            active_copies: e.active_copies.clone(),
            rows: e.rows.clone(),
            cols: e.cols.clone(),
            form: e.form,
        };
        self.push(
            (e.name.clone(), ""),
            e.part.clone(),
            kind,
            e.category,
            shape,
        )?;
        if let Some(t) = self.out.last_mut() {
            t.idle = e.idle;
            t.frozen = e.frozen;
            t.gradless = e.gradless;
            t.fp32 = e.fp32;
        }
        Ok(())
    }

    fn norm(
        &mut self,
        name: impl Into<Label>,
        part: impl Into<Label>,
        category: Category,
        n: Norm,
        width: Expr,
    ) -> Result<(), Overflow> {
        let (name, part): (Label, Label) = (name.into(), part.into());
        let weight = Shape::vector(width.clone());
        self.push(
            (name.clone(), ".weight"),
            part.clone(),
            TensorKind::Norm,
            category,
            weight,
        )?;
        if n.kind == NormKind::LayerNorm && n.bias {
            self.push(
                (name, ".bias"),
                part,
                TensorKind::Norm,
                category,
                Shape::vector(width),
            )?;
        }
        Ok(())
    }
}

/// Names of a layer's norms, by position.
const NORMS: [&str; 4] = ["norm0", "norm1", "norm2", "norm3"];

/// A name or a part label: almost always a `&'static str`, built only when it holds a number.
type Label = Cow<'static, str>;

/// `x·y` as one symbol (`3d` = 2304), the way people write a fused width.
fn scaled(sym: Sym, factor: u64, value: u64, w: &Widths) -> Expr {
    match factor.checked_mul(value) {
        Some(v) => Expr::sym(sym, v),
        None => Expr::product(vec![Expr::Lit(factor), w.d()]),
    }
}

/// Name a q/k-norm width by what it equals: `d_h`, `d`, `n_h·d_h`, `n_kv·d_h` or `d_norm`.
fn qk_norm_width(dim: u64, a: &StandardAttention, w: &Widths) -> Expr {
    let d_h = Expr::sym(Sym::HeadDim, a.head_dim);
    if dim == a.head_dim {
        d_h
    } else if dim == a.hidden {
        w.d()
    } else if Some(dim) == a.num_heads.checked_mul(a.head_dim) {
        Expr::product(vec![Expr::sym(Sym::Heads, a.num_heads), d_h])
    } else if Some(dim) == a.num_kv_heads.checked_mul(a.head_dim) {
        Expr::product(vec![Expr::sym(Sym::KvHeads, a.num_kv_heads), d_h])
    } else {
        Expr::sym(Sym::NormDim, dim)
    }
}

fn standard_attention(
    b: &mut Builder,
    a: &StandardAttention,
    w: &Widths,
    cross: bool,
) -> Result<(), Overflow> {
    // A cross-attention's names and parts are marked by the builder's `cross` flag.
    b.cross = cross;
    let c = Category::Attention;
    let d = w.d();
    let d_h = Expr::sym(Sym::HeadDim, a.head_dim);
    let q_out = if a.num_heads.checked_mul(a.head_dim) == Some(a.hidden) {
        d.clone()
    } else {
        Expr::product(vec![Expr::sym(Sym::Heads, a.num_heads), d_h.clone()])
    };
    let kv_out = if a.num_kv_heads == a.num_heads {
        q_out.clone()
    } else {
        Expr::product(vec![Expr::sym(Sym::KvHeads, a.num_kv_heads), d_h.clone()])
    };
    if a.fused_qkv && a.q_bias == a.k_bias && a.k_bias == a.v_bias {
        let fused = if q_out == d && kv_out == d {
            scaled(Sym::ThreeHidden, 3, a.hidden, w)
        } else {
            let kv2 = Expr::product(vec![Expr::Lit(2), Expr::sym(Sym::KvHeads, a.num_kv_heads)]);
            Expr::product(vec![
                Expr::sum(vec![Expr::sym(Sym::Heads, a.num_heads), kv2]),
                d_h,
            ])
        };
        b.linear(
            "attn_qkv",
            "qkv_proj",
            TensorKind::AttnQkv,
            c,
            (d.clone(), fused),
            a.q_bias,
        )?;
    } else {
        for (n, p, kind, out, bias) in [
            ("attn_q", "q_proj", TensorKind::AttnQ, &q_out, a.q_bias),
            ("attn_k", "k_proj", TensorKind::AttnK, &kv_out, a.k_bias),
            ("attn_v", "v_proj", TensorKind::AttnV, &kv_out, a.v_bias),
        ] {
            if kind == TensorKind::AttnV && a.v_from_k {
                continue;
            }
            b.linear(n, p, kind, c, (d.clone(), out.clone()), bias)?;
        }
    }
    b.linear(
        "attn_output",
        "o_proj",
        TensorKind::AttnOutput,
        c,
        (q_out, d),
        a.o_bias,
    )?;
    if let Some(n) = a.q_norm {
        let width = qk_norm_width(n.dim, a, w);
        b.norm("attn_q_norm", "q_norm", c, n, width)?;
    }
    if let Some(n) = a.k_norm {
        let width = qk_norm_width(n.dim, a, w);
        b.norm("attn_k_norm", "k_norm", c, n, width)?;
    }
    if a.sinks {
        let sinks = Shape::vector(Expr::sym(Sym::Heads, a.num_heads));
        b.push(("attn_sinks", ""), "sinks", TensorKind::Sinks, c, sinks)?;
    }
    b.cross = false;
    Ok(())
}

fn latent_attention(b: &mut Builder, a: &LatentAttention, w: &Widths) -> Result<(), Overflow> {
    let c = a.category;
    let d = w.d();
    let n_h = Expr::sym(Sym::Heads, a.num_heads);
    let d_nope = Expr::sym(Sym::NopeDim, a.qk_nope_head_dim);
    let d_rope = Expr::sym(Sym::RopeDim, a.qk_rope_head_dim);
    let d_v = Expr::sym(Sym::ValueDim, a.v_head_dim);
    let r_kv = Expr::sym(Sym::KvRank, a.kv_lora_rank);
    let q_head = Expr::product(vec![
        n_h.clone(),
        Expr::sum(vec![d_nope.clone(), d_rope.clone()]),
    ]);
    match a.q_lora_rank {
        Some(rank) => {
            let r_q = Expr::sym(Sym::QueryRank, rank);
            b.linear(
                "attn_q_a",
                "q_a_proj",
                TensorKind::AttnQA,
                c,
                (d.clone(), r_q.clone()),
                a.bias,
            )?;
            b.norm(
                "attn_q_a_norm",
                "q_a_layernorm",
                c,
                Norm::rms_norm(rank),
                r_q.clone(),
            )?;
            b.linear(
                "attn_q_b",
                "q_b_proj",
                TensorKind::AttnQ,
                c,
                (r_q, q_head),
                false,
            )?;
        }
        None => b.linear(
            "attn_q",
            "q_proj",
            TensorKind::AttnQ,
            c,
            (d.clone(), q_head),
            false,
        )?,
    }
    b.linear(
        "attn_kv_a",
        "kv_a_proj_with_mqa",
        TensorKind::AttnKvA,
        c,
        (d.clone(), Expr::sum(vec![r_kv.clone(), d_rope])),
        a.bias,
    )?;
    b.norm(
        "attn_kv_a_norm",
        "kv_a_layernorm",
        c,
        Norm::rms_norm(a.kv_lora_rank),
        r_kv.clone(),
    )?;
    let kv_b_out = Expr::product(vec![n_h.clone(), Expr::sum(vec![d_nope, d_v.clone()])]);
    b.linear(
        "attn_kv_b",
        "kv_b_proj",
        TensorKind::AttnKvB,
        c,
        (r_kv, kv_b_out),
        false,
    )?;
    b.linear(
        "attn_output",
        "o_proj",
        TensorKind::AttnOutput,
        c,
        (Expr::product(vec![n_h, d_v]), d),
        a.bias,
    )
}

/// An MLP's three (or two) matrices and biases as one part.
#[allow(
    clippy::too_many_arguments,
    reason = "one call per MLP, each argument named"
)]
fn mlp(
    b: &mut Builder,
    m: &Mlp,
    w: &Widths,
    part: &'static str,
    category: Category,
    inner: Sym,
    names: [&'static str; 3],
    kinds: [TensorKind; 3],
) -> Result<(), Overflow> {
    let d = w.width(m.hidden, Sym::Hidden);
    let f = Expr::sym(inner, m.intermediate);
    if m.gated {
        b.linear(
            names[0],
            part,
            kinds[0],
            category,
            (d.clone(), f.clone()),
            m.up_bias,
        )?;
    }
    b.linear(
        names[1],
        part,
        kinds[1],
        category,
        (d.clone(), f.clone()),
        m.up_bias,
    )?;
    b.linear(names[2], part, kinds[2], category, (f, d), m.down_bias)
}

fn layer_tensors(b: &mut Builder, layer: &Layer, w: &Widths) -> Result<(), Overflow> {
    use TensorKind as K;
    for (attention, cross) in std::iter::once((&layer.attention, false))
        .chain(layer.cross_attention.iter().map(|c| (c, true)))
    {
        match attention {
            Attention::Standard(a) => standard_attention(b, a, w, cross)?,
            Attention::Latent(a) => latent_attention(b, a, w)?,
            // The shared block's tensors are counted once, at model level.
            Attention::Absent | Attention::CacheOnly(_) => {}
        }
    }
    match &layer.ffn {
        Ffn::Dense(m) => mlp(
            b,
            m,
            w,
            if m.gated { "mlp (gated)" } else { "mlp" },
            Category::Ffn,
            Sym::Ffn,
            ["ffn_gate", "ffn_up", "ffn_down"],
            [K::FfnGate, K::FfnUp, K::FfnDown],
        )?,
        Ffn::Moe(moe) => {
            let d = w.width(moe.expert.hidden, Sym::Hidden);
            let e = Expr::sym(Sym::Experts, moe.num_experts);
            if moe.router {
                b.linear(
                    "ffn_gate_inp",
                    "router",
                    K::Router,
                    Category::MoeRouter,
                    (d.clone(), e.clone()),
                    moe.router_bias.present(),
                )?;
                if moe.router_bias == RouterBias::Correction
                    && let Some(t) = b.out.last_mut()
                {
                    t.frozen = true;
                }
            }
            let x = moe.expert;
            let k = Expr::sym(Sym::TopK, moe.experts_per_token);
            let f = Expr::sym(Sym::ExpertFfn, x.intermediate);
            // One tensor per matrix for all `E` experts (`[E, d_e, d]`, as llama.cpp stores them).
            let mut expert = |name, kind, shape: Shape| {
                b.push(
                    (name, ""),
                    "experts",
                    kind,
                    Category::MoeExperts,
                    shape.times(&e, &k),
                )
            };
            let (up, down) = (
                Shape::linear(d.clone(), f.clone()),
                Shape::linear(f.clone(), d.clone()),
            );
            if x.gated {
                expert("ffn_gate_exps.weight", K::ExpertGate, up.clone())?;
            }
            expert("ffn_up_exps.weight", K::ExpertUp, up)?;
            expert("ffn_down_exps.weight", K::ExpertDown, down)?;
            if x.up_bias {
                let len = if x.gated {
                    Expr::product(vec![Expr::Lit(2), f])
                } else {
                    f
                };
                expert("ffn_gate_up_exps.bias", K::Bias, Shape::vector(len))?;
            }
            if x.down_bias {
                expert("ffn_down_exps.bias", K::Bias, Shape::vector(d.clone()))?;
            }
            if let Some(s) = &moe.shared {
                mlp(
                    b,
                    s,
                    w,
                    "shared_experts",
                    Category::MoeSharedExperts,
                    Sym::SharedFfn,
                    ["ffn_gate_shexp", "ffn_up_shexp", "ffn_down_shexp"],
                    [K::SharedGate, K::SharedUp, K::SharedDown],
                )?;
            }
            if moe.shared_gate {
                b.linear(
                    "ffn_gate_inp_shexp",
                    "shared_expert_gate",
                    K::SharedExpertGate,
                    Category::MoeSharedExperts,
                    (d, ONE),
                    false,
                )?;
            }
        }
        Ffn::Absent => {}
    }
    for e in &layer.extras {
        b.extra(e)?;
    }
    let part: Label = match layer.norms.len() {
        1 => "1 norms".into(),
        2 => "2 norms".into(),
        3 => "3 norms".into(),
        4 => "4 norms".into(),
        n => format!("{n} norms").into(),
    };
    for (j, n) in layer.norms.iter().enumerate() {
        b.norm(
            NORMS
                .get(j)
                .map_or_else(|| Label::from(format!("norm{j}")), |s| Label::from(*s)),
            part.clone(),
            Category::Norm,
            *n,
            w.width(n.dim, Sym::NormDim),
        )?;
    }
    Ok(())
}

pub(crate) fn geometry(
    a: &Attention,
    stack: StackRole,
    layers: u64,
    cross: bool,
    window: Option<u64>,
) -> Result<Option<AttentionGeometry>, Overflow> {
    let checked = |e: Expr| e.eval().map(|v| (e, v));
    Ok(Some(match a {
        Attention::Absent => return Ok(None),
        Attention::Standard(a) | Attention::CacheOnly(a) => {
            let (_, width) = checked(Expr::product(vec![
                Expr::sym(Sym::Heads, a.num_heads),
                Expr::sym(Sym::HeadDim, a.head_dim),
            ]))?;
            let kv = Expr::product(vec![
                Expr::Lit(if a.shared_kv { 1 } else { 2 }),
                Expr::sym(Sym::KvHeads, a.num_kv_heads),
                Expr::sym(Sym::HeadDim, a.head_dim),
            ]);
            let (formula, _) = checked(match a.indexer_key_dim {
                Some(d) => Expr::sum(vec![kv, Expr::sym(Sym::Named("d_idx"), d)]),
                None => kv,
            })?;
            AttentionGeometry {
                stack,
                layers,
                cross,
                window,
                qk_width: width,
                v_width: width,
                cache: CacheShape::Heads {
                    formula,
                    indexer: a.indexer_key_dim.unwrap_or(0),
                    prefix: a.cache_prefix_tokens,
                    kv_heads: a.num_kv_heads,
                    transformers_heads: a.transformers_cache_heads.unwrap_or(a.num_kv_heads),
                    head_dim: a.head_dim,
                    shared_kv: a.shared_kv,
                    compressed: a.compressed,
                },
            }
        }
        Attention::Latent(a) => {
            let n_h = Expr::sym(Sym::Heads, a.num_heads);
            let d_nope = Expr::sym(Sym::NopeDim, a.qk_nope_head_dim);
            let d_rope = Expr::sym(Sym::RopeDim, a.qk_rope_head_dim);
            let d_v = Expr::sym(Sym::ValueDim, a.v_head_dim);
            let qk = Expr::product(vec![n_h.clone(), Expr::sum(vec![d_nope, d_rope.clone()])]);
            let v = Expr::product(vec![n_h, d_v]);
            let (qk, qk_width) = checked(qk)?;
            let (v, v_width) = checked(v)?;
            let index = a.indexer_key_dim.map(|d| Expr::sym(Sym::Named("d_idx"), d));
            let (latent, _) = checked(Expr::sum(
                [Expr::sym(Sym::KvRank, a.kv_lora_rank), d_rope]
                    .into_iter()
                    .chain(index.clone())
                    .collect(),
            ))?;
            let (expanded, _) = checked(Expr::sum([qk, v].into_iter().chain(index).collect()))?;
            AttentionGeometry {
                stack,
                layers,
                cross,
                window,
                qk_width,
                v_width,
                cache: CacheShape::Latent { latent, expanded },
            }
        }
    }))
}

/// The layout of a model: every tensor and the attention of every layer kind.
pub fn layout(spec: &ModelSpec) -> Result<Layout, SpecError> {
    let w = Widths {
        hidden: spec.hidden_size,
    };
    let mut b = Builder {
        out: Vec::new(),
        prefix: Arc::from(""),
        cross: false,
        place: Place::Input,
        stack: None,
        layer_runs: Arc::new([]),
        layers: 1,
        stack_layers: 0,
    };
    let mut attention = Vec::new();
    let mut states = Vec::new();
    let vocab = |rows| Expr::sym(Sym::Vocab, rows);
    if let Some(t) = spec.token_embedding {
        for i in 0..=spec.extra_token_tables {
            let name: Label = if i == 0 {
                "token_embd".into()
            } else {
                format!("token_embd.copy{i}").into()
            };
            b.push(
                (name, ""),
                "token_embd",
                TensorKind::TokenEmbedding,
                Category::TokenEmbedding,
                Shape::table(vocab(t.rows), w.width(t.dim, Sym::EmbeddingDim)),
            )?;
        }
    }
    for (i, p) in spec.embedding_projections.iter().enumerate() {
        let name = if i == 0 { "project_in" } else { "project_out" };
        b.linear(
            name,
            name,
            TensorKind::EmbeddingProjection,
            Category::EmbeddingProjection,
            (
                w.width(p.input, Sym::EmbeddingDim),
                w.width(p.output, Sym::EmbeddingDim),
            ),
            p.bias,
        )?;
    }
    for (si, stack) in spec.stacks.iter().enumerate() {
        let role = stack.role.as_str();
        b.prefix = Arc::from(role);
        b.place = Place::StackStart(si);
        b.stack = Some(stack.role);
        b.stack_layers = stack.layers.len();
        // A position table: learned (`rows − offset` positions and the offset rows), or a
        // sinusoidal one held as a parameter that never trains.
        let table = match stack.position {
            Some(PositionEmbedding::Learned { table, offset }) => Some((
                Expr::sum(vec![
                    // `rows − offset`, the context; an offset beyond the table leaves none.
                    Expr::sym(Sym::Context, table.rows.saturating_sub(offset)),
                    Expr::Lit(offset),
                ]),
                table,
                false,
            )),
            Some(PositionEmbedding::Sinusoidal { table }) => {
                Some((Expr::sym(Sym::Context, table.rows), table, true))
            }
            _ => None,
        };
        if let Some((rows, table, frozen)) = table {
            b.push(
                ("position_embd", ""),
                "position_embd",
                TensorKind::PositionEmbedding,
                Category::PositionEmbedding,
                Shape::table(rows, w.width(table.dim, Sym::EmbeddingDim)),
            )?;
            if let Some(t) = b.out.last_mut() {
                t.frozen = frozen;
            }
        }
        if let Some(PositionEmbedding::RelativeBias { buckets, heads }) = stack.position {
            b.push(
                ("relative_bias", ""),
                "relative_bias",
                TensorKind::PositionEmbedding,
                Category::PositionEmbedding,
                Shape::table(
                    Expr::sym(Sym::Buckets, buckets),
                    Expr::sym(Sym::Heads, heads),
                ),
            )?;
        }
        if let Some(t) = stack.token_type {
            b.push(
                ("token_types", ""),
                "token_types",
                TensorKind::TokenTypeEmbedding,
                Category::TokenTypeEmbedding,
                Shape::table(
                    Expr::sym(Sym::TokenTypes, t.rows),
                    w.width(t.dim, Sym::EmbeddingDim),
                ),
            )?;
        }
        if let Some(n) = stack.embedding_norm {
            b.norm(
                "embd_norm",
                "embd_norm",
                Category::Norm,
                n,
                w.width(n.dim, Sym::EmbeddingDim),
            )?;
        }
        for (kind, (layer, n)) in stack.layers.kind_counts().into_iter().enumerate() {
            if n == 0 {
                // A kind added but never used holds no layer.
                continue;
            }
            // Shared by every tensor of the kind (a hostile config can have a million runs).
            b.layer_runs = stack
                .layers
                .runs_of(kind)
                .map(super::spec::Run::range)
                .collect();
            b.layers = n;
            b.place = Place::Layer { stack: si, kind };
            // Named after the first layer of the kind: `decoder.0.attn_q`.
            let first = b.layer_runs.first().map_or(0, |r| r.start);
            b.prefix = format!("{role}.{first}").into();
            layer_tensors(&mut b, layer, &w)?;
            attention.extend(geometry(
                &layer.attention,
                stack.role,
                n,
                false,
                layer.sliding_window,
            )?);
            if let Some(c) = &layer.cross_attention {
                attention.extend(geometry(c, stack.role, n, true, None)?);
            }
            if let Some(state) = layer.state {
                states.push(StateGeometry {
                    stack: stack.role,
                    layers: n,
                    state,
                });
            }
        }
        b.prefix = Arc::from(role);
        b.place = Place::StackEnd(si);
        b.layer_runs = Arc::new([]);
        b.layers = 1;
        if let Some(n) = stack.final_norm {
            b.norm(
                "output_norm",
                "output_norm",
                Category::Norm,
                n,
                w.width(n.dim, Sym::NormDim),
            )?;
        }
    }
    b.prefix = Arc::from("");
    b.place = Place::Output;
    b.stack = None;
    b.stack_layers = 0;
    if let OutputHead::Lm {
        tied,
        biases,
        transform,
    } = &spec.head
    {
        if let Some(t) = transform {
            b.linear(
                "head_transform",
                "head_transform",
                TensorKind::HeadTransform,
                Category::LmHeadTransform,
                (
                    w.width(t.dense.input, Sym::EmbeddingDim),
                    w.width(t.dense.output, Sym::EmbeddingDim),
                ),
                t.dense.bias,
            )?;
            b.norm(
                "head_transform_norm",
                "head_transform_norm",
                Category::Norm,
                t.norm,
                w.width(t.norm.dim, Sym::NormDim),
            )?;
        }
        if !tied {
            // The head reads the embedding width (OPT-350m: `word_embed_proj_dim`).
            let width = spec.token_embedding.map_or(spec.hidden_size, |t| t.dim);
            b.push(
                ("output", ".weight"),
                "output",
                TensorKind::Output,
                Category::LmHead,
                Shape::table(vocab(spec.vocab_size), w.width(width, Sym::EmbeddingDim)),
            )?;
        }
        for i in 0..*biases {
            b.push(
                (
                    match i {
                        0 => Label::from("output.bias0"),
                        1 => Label::from("output.bias1"),
                        i => Label::from(format!("output.bias{i}")),
                    },
                    "",
                ),
                "output biases",
                TensorKind::Bias,
                Category::LmHead,
                Shape::vector(vocab(spec.vocab_size)),
            )?;
        }
    }
    if let Some(p) = spec.pooler {
        b.linear(
            "pooler",
            "pooler",
            TensorKind::Pooler,
            Category::Pooler,
            (
                w.width(p.input, Sym::Hidden),
                w.width(p.output, Sym::Hidden),
            ),
            p.bias,
        )?;
    }
    for e in &spec.extras {
        b.extra(e)?;
    }
    Ok(Layout {
        tensors: b.out,
        attention,
        states,
    })
}

/// Every tensor of the model, in a stable order (embeddings, stacks kind by kind, head).
pub fn tensors(spec: &ModelSpec) -> Result<Vec<Tensor>, SpecError> {
    Ok(layout(spec)?.tensors)
}
