//! The logical tensors of a model: every weight, bias and norm vector with its shape.
//!
//! Counting needs only sizes, but storage formats (GGUF mixes, GPTQ groups, NF4 blocks),
//! FLOPs, LoRA and checkpoint audits need to know *which* matrix a parameter belongs to and
//! its shape. This list is derived from the same [`ModelSpec`] as the count, and a test
//! checks that its elements sum to the exact total for every preset.
//!
//! Matrices are `[output, input]` like `nn.Linear.weight`; GGUF's `ne[0]` is the input.

use crate::count::Category;
use crate::spec::{
    Attention, Ffn, Linear, ModelSpec, Norm, NormKind, OutputHead, PositionEmbedding, StackRole,
    StandardAttention,
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
}

impl TensorKind {
    /// A dense matrix that a linear layer multiplies by (what quantizers and LoRA target).
    pub fn is_block_matrix(self) -> bool {
        use TensorKind::*;
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
        )
    }
}

/// One tensor (or one group of identical routed-expert matrices), listed once per layer kind:
/// a layer tensor stands for the same tensor in every layer of its kind (`layers` of them, in
/// `layer_runs`), so the list grows with the number of distinct layer kinds, not with
/// `num_hidden_layers`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tensor {
    /// A readable name (`decoder.3.attn_q`), stable for tests.
    pub name: String,
    /// What it is.
    pub kind: TensorKind,
    /// Its category in the 13-way split.
    pub category: Category,
    /// The stack it belongs to (none for embeddings and the head).
    pub stack: Option<StackRole>,
    /// The layers (0-based, within its stack) that hold this tensor, as runs; empty outside
    /// layers. Per-layer rules (llama.cpp's mixes) read the positions from here.
    pub layer_runs: std::sync::Arc<[std::ops::Range<u64>]>,
    /// How many layers hold it (1 outside layers).
    pub layers: u64,
    /// Layers in that stack (llama.cpp's mixing rules depend on the position).
    pub stack_layers: u64,
    /// How many identical matrices (routed experts: `E`; otherwise 1).
    pub copies: u64,
    /// How many of the copies one token multiplies by (routed experts: `k`; otherwise 1).
    pub active_copies: u64,
    /// Output features (rows) — `1` for vectors.
    pub rows: u64,
    /// Input features (columns) — the vector length for vectors.
    pub cols: u64,
}

impl Tensor {
    /// Elements of one instance (one layer's tensor), checked.
    pub fn elements(&self) -> Option<u64> {
        self.copies.checked_mul(self.rows)?.checked_mul(self.cols)
    }

    /// Elements over every layer that holds it, checked.
    pub fn total_elements(&self) -> Option<u64> {
        self.elements()?.checked_mul(self.layers)
    }

    /// A vector (norm, bias): stored unquantized by every format.
    pub fn is_vector(&self) -> bool {
        self.rows == 1
    }
}

struct Builder {
    out: Vec<Tensor>,
    prefix: String,
    stack: Option<StackRole>,
    layer_runs: std::sync::Arc<[std::ops::Range<u64>]>,
    layers: u64,
    stack_layers: u64,
}

impl Builder {
    fn push(&mut self, name: &str, kind: TensorKind, category: Category, rows: u64, cols: u64) {
        self.push_n(name, kind, category, (1, 1), rows, cols);
    }

    fn push_n(
        &mut self,
        name: &str,
        kind: TensorKind,
        category: Category,
        (copies, active_copies): (u64, u64),
        rows: u64,
        cols: u64,
    ) {
        let full = if self.prefix.is_empty() {
            name.to_owned()
        } else {
            format!("{}.{name}", self.prefix)
        };
        self.out.push(Tensor {
            name: full,
            kind,
            category,
            stack: self.stack,
            layer_runs: self.layer_runs.clone(),
            layers: self.layers,
            stack_layers: self.stack_layers,
            copies,
            active_copies,
            rows,
            cols,
        });
    }

    fn linear(&mut self, name: &str, kind: TensorKind, category: Category, l: Linear) {
        self.push(&format!("{name}.weight"), kind, category, l.output, l.input);
        if l.bias {
            self.push(
                &format!("{name}.bias"),
                TensorKind::Bias,
                category,
                1,
                l.output,
            );
        }
    }

    fn norm(&mut self, name: &str, category: Category, n: Norm) {
        self.push(
            &format!("{name}.weight"),
            TensorKind::Norm,
            category,
            1,
            n.dim,
        );
        if n.kind == NormKind::LayerNorm && n.bias {
            self.push(
                &format!("{name}.bias"),
                TensorKind::Norm,
                category,
                1,
                n.dim,
            );
        }
    }

    fn standard_attention(&mut self, a: &StandardAttention, prefix: &str) {
        let q = a.num_heads.saturating_mul(a.head_dim);
        let kv = a.num_kv_heads.saturating_mul(a.head_dim);
        let c = Category::Attention;
        let lin = |output, input, bias| Linear {
            input,
            output,
            bias,
        };
        if a.fused_qkv && a.q_bias == a.k_bias && a.k_bias == a.v_bias {
            let width = q.saturating_add(kv.saturating_mul(2));
            self.linear(
                &format!("{prefix}qkv"),
                TensorKind::AttnQkv,
                c,
                lin(width, a.hidden, a.q_bias),
            );
        } else {
            self.linear(
                &format!("{prefix}q"),
                TensorKind::AttnQ,
                c,
                lin(q, a.hidden, a.q_bias),
            );
            self.linear(
                &format!("{prefix}k"),
                TensorKind::AttnK,
                c,
                lin(kv, a.hidden, a.k_bias),
            );
            self.linear(
                &format!("{prefix}v"),
                TensorKind::AttnV,
                c,
                lin(kv, a.hidden, a.v_bias),
            );
        }
        self.linear(
            &format!("{prefix}output"),
            TensorKind::AttnOutput,
            c,
            lin(a.hidden, q, a.o_bias),
        );
        if let Some(n) = a.q_norm {
            self.norm(&format!("{prefix}q_norm"), c, n);
        }
        if let Some(n) = a.k_norm {
            self.norm(&format!("{prefix}k_norm"), c, n);
        }
        if a.sinks {
            self.push(
                &format!("{prefix}sinks"),
                TensorKind::Sinks,
                c,
                1,
                a.num_heads,
            );
        }
    }

    fn attention(&mut self, attention: &Attention, prefix: &str) {
        match attention {
            Attention::Standard(a) => self.standard_attention(a, prefix),
            Attention::Latent(a) => {
                let c = Category::Attention;
                let qk = a.qk_nope_head_dim.saturating_add(a.qk_rope_head_dim);
                let heads_qk = a.num_heads.saturating_mul(qk);
                let lin = |output, input, bias| Linear {
                    input,
                    output,
                    bias,
                };
                match a.q_lora_rank {
                    Some(r) => {
                        self.linear(
                            &format!("{prefix}q_a"),
                            TensorKind::AttnQA,
                            c,
                            lin(r, a.hidden, a.bias),
                        );
                        self.norm(&format!("{prefix}q_a_norm"), c, Norm::rms_norm(r));
                        self.linear(
                            &format!("{prefix}q_b"),
                            TensorKind::AttnQ,
                            c,
                            lin(heads_qk, r, false),
                        );
                    }
                    None => self.linear(
                        &format!("{prefix}q"),
                        TensorKind::AttnQ,
                        c,
                        lin(heads_qk, a.hidden, false),
                    ),
                }
                let kv_a = a.kv_lora_rank.saturating_add(a.qk_rope_head_dim);
                self.linear(
                    &format!("{prefix}kv_a"),
                    TensorKind::AttnKvA,
                    c,
                    lin(kv_a, a.hidden, a.bias),
                );
                self.norm(
                    &format!("{prefix}kv_a_norm"),
                    c,
                    Norm::rms_norm(a.kv_lora_rank),
                );
                let kv_b = a
                    .num_heads
                    .saturating_mul(a.qk_nope_head_dim.saturating_add(a.v_head_dim));
                self.linear(
                    &format!("{prefix}kv_b"),
                    TensorKind::AttnKvB,
                    c,
                    lin(kv_b, a.kv_lora_rank, false),
                );
                let o_in = a.num_heads.saturating_mul(a.v_head_dim);
                self.linear(
                    &format!("{prefix}output"),
                    TensorKind::AttnOutput,
                    c,
                    lin(a.hidden, o_in, a.bias),
                );
            }
        }
    }
}

/// Every tensor of the model, in a stable order (embeddings, stacks kind by kind, head).
pub fn tensors(spec: &ModelSpec) -> Vec<Tensor> {
    let mut b = Builder {
        out: Vec::new(),
        prefix: String::new(),
        stack: None,
        layer_runs: std::sync::Arc::new([]),
        layers: 1,
        stack_layers: 0,
    };
    if let Some(t) = spec.token_embedding {
        for i in 0..=spec.extra_token_tables {
            let name = if i == 0 {
                "token_embd".to_owned()
            } else {
                format!("token_embd.copy{i}")
            };
            b.push(
                &name,
                TensorKind::TokenEmbedding,
                Category::TokenEmbedding,
                t.rows,
                t.dim,
            );
        }
    }
    for (i, p) in spec.embedding_projections.iter().enumerate() {
        let name = if i == 0 { "project_in" } else { "project_out" };
        b.linear(
            name,
            TensorKind::EmbeddingProjection,
            Category::EmbeddingProjection,
            *p,
        );
    }
    for stack in &spec.stacks {
        let role = match stack.role {
            StackRole::Encoder => "encoder",
            StackRole::Decoder | StackRole::CrossDecoder => "decoder",
        };
        b.prefix = role.to_owned();
        b.stack = Some(stack.role);
        b.stack_layers = stack.layers.len();
        match stack.position {
            Some(PositionEmbedding::Learned { table, .. }) => {
                b.push(
                    "position_embd",
                    TensorKind::PositionEmbedding,
                    Category::PositionEmbedding,
                    table.rows,
                    table.dim,
                );
            }
            Some(PositionEmbedding::RelativeBias { buckets, heads }) => {
                b.push(
                    "relative_bias",
                    TensorKind::PositionEmbedding,
                    Category::PositionEmbedding,
                    buckets,
                    heads,
                );
            }
            None => {}
        }
        if let Some(t) = stack.token_type {
            b.push(
                "token_types",
                TensorKind::TokenTypeEmbedding,
                Category::TokenTypeEmbedding,
                t.rows,
                t.dim,
            );
        }
        if let Some(n) = stack.embedding_norm {
            b.norm("embd_norm", Category::Norm, n);
        }
        for (kind, (layer, n)) in stack.layers.kind_counts().into_iter().enumerate() {
            // Shared by every tensor of the kind (a hostile config can have a million runs).
            b.layer_runs = stack.layers.runs_of(kind).map(|r| r.range()).collect();
            b.layers = n;
            // Named after the first layer of the kind: `decoder.0.attn_q`.
            let first = b.layer_runs.first().map_or(0, |r| r.start);
            b.prefix = format!("{role}.{first}");
            b.attention(&layer.attention, "attn_");
            if let Some(cross) = &layer.cross_attention {
                b.attention(cross, "cross_attn_");
            }
            mlp_tensors(&mut b, &layer.ffn);
            for (j, n) in layer.norms.iter().enumerate() {
                b.norm(&format!("norm{j}"), Category::Norm, *n);
            }
        }
        b.prefix = role.to_owned();
        b.layer_runs = std::sync::Arc::new([]);
        b.layers = 1;
        if let Some(n) = stack.final_norm {
            b.norm("output_norm", Category::Norm, n);
        }
    }
    b.prefix.clear();
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
                TensorKind::HeadTransform,
                Category::LmHeadTransform,
                t.dense,
            );
            b.norm("head_transform_norm", Category::Norm, t.norm);
        }
        if !tied {
            let width = spec.token_embedding.map_or(spec.hidden_size, |t| t.dim);
            b.push(
                "output.weight",
                TensorKind::Output,
                Category::LmHead,
                spec.vocab_size,
                width,
            );
        }
        for i in 0..*biases {
            b.push(
                &format!("output.bias{i}"),
                TensorKind::Bias,
                Category::LmHead,
                1,
                spec.vocab_size,
            );
        }
    }
    if let Some(p) = spec.pooler {
        b.linear("pooler", TensorKind::Pooler, Category::Pooler, p);
    }
    b.out
}

fn mlp_tensors(b: &mut Builder, ffn: &Ffn) {
    let lin = |output, input, bias| Linear {
        input,
        output,
        bias,
    };
    match ffn {
        Ffn::Dense(m) => {
            let c = Category::Ffn;
            if m.gated {
                b.linear(
                    "ffn_gate",
                    TensorKind::FfnGate,
                    c,
                    lin(m.intermediate, m.hidden, m.up_bias),
                );
            }
            b.linear(
                "ffn_up",
                TensorKind::FfnUp,
                c,
                lin(m.intermediate, m.hidden, m.up_bias),
            );
            b.linear(
                "ffn_down",
                TensorKind::FfnDown,
                c,
                lin(m.hidden, m.intermediate, m.down_bias),
            );
        }
        Ffn::Moe(moe) => {
            b.linear(
                "ffn_gate_inp",
                TensorKind::Router,
                Category::MoeRouter,
                lin(moe.num_experts, moe.expert.hidden, moe.router_bias),
            );
            let e = (moe.num_experts, moe.experts_per_token);
            let x = moe.expert;
            let c = Category::MoeExperts;
            b.push_n(
                "ffn_gate_exps.weight",
                TensorKind::ExpertGate,
                c,
                e,
                x.intermediate,
                x.hidden,
            );
            b.push_n(
                "ffn_up_exps.weight",
                TensorKind::ExpertUp,
                c,
                e,
                x.intermediate,
                x.hidden,
            );
            b.push_n(
                "ffn_down_exps.weight",
                TensorKind::ExpertDown,
                c,
                e,
                x.hidden,
                x.intermediate,
            );
            if x.up_bias {
                b.push_n(
                    "ffn_gate_up_exps.bias",
                    TensorKind::Bias,
                    c,
                    e,
                    1,
                    x.intermediate.saturating_mul(2),
                );
            }
            if x.down_bias {
                b.push_n("ffn_down_exps.bias", TensorKind::Bias, c, e, 1, x.hidden);
            }
            if let Some(s) = moe.shared {
                let c = Category::MoeSharedExperts;
                b.linear(
                    "ffn_gate_shexp",
                    TensorKind::SharedGate,
                    c,
                    lin(s.intermediate, s.hidden, s.up_bias),
                );
                b.linear(
                    "ffn_up_shexp",
                    TensorKind::SharedUp,
                    c,
                    lin(s.intermediate, s.hidden, s.up_bias),
                );
                b.linear(
                    "ffn_down_shexp",
                    TensorKind::SharedDown,
                    c,
                    lin(s.hidden, s.intermediate, s.down_bias),
                );
            }
            if moe.shared_gate {
                b.linear(
                    "ffn_gate_inp_shexp",
                    TensorKind::SharedExpertGate,
                    Category::MoeSharedExperts,
                    lin(1, moe.expert.hidden, false),
                );
            }
        }
    }
}
