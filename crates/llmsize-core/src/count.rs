//! Exact parameter counting of a [`ModelSpec`], by component, with the formula of each count.
//!
//! The categories are the 13 of the ground truth (`shared/truth/README.md`), which is also
//! the public JSON contract of `llmsize params --json`. Every count is an [`Expr`], so the
//! table, `--explain` and JSON all come from the same tree.

use std::collections::BTreeMap;

use crate::error::{Overflow, SpecError};
use crate::expr::Expr;
use crate::spec::{
    Attention, Ffn, LatentAttention, Layer, Linear, Mlp, ModelSpec, Moe, Norm, NormKind,
    OutputHead, PositionEmbedding, Stack, StackRole, StandardAttention,
};

pub use crate::category::Category;

/// One category's count and the formula it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Component {
    /// The category.
    pub category: Category,
    /// The formula (symbols and numbers); `0` when the model has none.
    pub formula: Expr,
    /// Its value.
    pub count: u64,
}

/// One named tensor group of a layer (`q_proj`, `mlp`, `input_layernorm`, …) for `--explain`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    /// What it is.
    pub label: String,
    /// Its category.
    pub category: Category,
    /// Its formula.
    pub formula: Expr,
    /// Its value.
    pub count: u64,
}

/// Layers of one stack that are identical, counted together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayerGroup {
    /// Which stack.
    pub stack: StackRole,
    /// The layers of the group, as runs of consecutive 0-based indices.
    pub runs: Vec<std::ops::Range<u64>>,
    /// Number of layers in the group.
    pub layers: u64,
    /// A short description (`dense`, `MoE`, `sliding window 4096`).
    pub kind: String,
    /// The parts of one layer.
    pub parts: Vec<Part>,
    /// Parameters of one layer.
    pub per_layer: u64,
    /// MoE layers: the routed experts a token uses, `k·(one expert)`.
    pub active_routed: Option<Expr>,
}

/// Parameters of a stack (its layers, position tables and norms; not the shared token table).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StackCount {
    /// Which stack.
    pub role: StackRole,
    /// Number of layers.
    pub layers: u64,
    /// Parameters.
    pub params: u64,
}

/// Active parameters per token of a mixture of experts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActiveCount {
    /// Everything but routed experts, plus routed experts × k / E per layer.
    pub per_token: u64,
    /// The same without the input token table (how OpenAI and DeepSeek quote "active").
    pub per_token_excl_token_embedding: u64,
    /// The formula of the routed experts that are active.
    pub routed_formula: Expr,
}

/// The exact count of a model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamCount {
    /// All 13 categories in contract order (zeros included).
    pub components: Vec<Component>,
    /// Sum of the components.
    pub total: u64,
    /// Per stack (for encoder-decoders).
    pub stacks: Vec<StackCount>,
    /// Distinct layer kinds, for the one-layer derivation.
    pub layer_groups: Vec<LayerGroup>,
    /// Present for MoE models.
    pub active: Option<ActiveCount>,
}

impl ParamCount {
    /// The count of one category.
    pub fn get(&self, category: Category) -> u64 {
        self.components
            .iter()
            .find(|c| c.category == category)
            .map_or(0, |c| c.count)
    }

    /// Total minus the input tables (token, position, token type).
    pub fn non_embedding(&self) -> u64 {
        self.components
            .iter()
            .filter(|c| !c.category.is_input_embedding())
            .map(|c| c.count)
            .sum()
    }
}

/// Symbols of a model, named the way the article writes them.
struct Names {
    hidden: u64,
}

impl Names {
    fn d(&self) -> Expr {
        Expr::sym("d", self.hidden)
    }

    /// A width: `d` when it equals the hidden size, else the given symbol.
    fn width(&self, value: u64, name: &str) -> Expr {
        if value == self.hidden {
            self.d()
        } else {
            Expr::sym(name, value)
        }
    }
}

/// `input·output (+ output)` for a linear layer with named widths.
fn linear(input: &Expr, output: &Expr, bias: bool) -> Expr {
    Expr::sum(vec![
        Expr::product(vec![input.clone(), output.clone()]),
        if bias { output.clone() } else { Expr::Lit(0) },
    ])
}

fn norm_expr(norm: &Norm, width: Expr) -> Expr {
    match (norm.kind, norm.bias) {
        (NormKind::LayerNorm, true) => Expr::product(vec![Expr::Lit(2), width]),
        _ => width,
    }
}

/// `x` times `y`, checked, as a fresh symbol (so `3d` renders as `2304`, the way people write it).
fn scaled_sym(name: &str, factor: u64, value: u64) -> Expr {
    match factor.checked_mul(value) {
        Some(v) => Expr::sym(name, v),
        None => Expr::product(vec![Expr::Lit(factor), Expr::sym("d", value)]),
    }
}

fn standard_attention_parts(a: &StandardAttention, names: &Names, cross: bool) -> Vec<Part> {
    let prefix = if cross { "cross_attn." } else { "" };
    let d = names.d();
    let d_h = Expr::sym("d_h", a.head_dim);
    let q_out = if a.num_heads.checked_mul(a.head_dim) == Some(a.hidden) {
        d.clone()
    } else {
        Expr::product(vec![Expr::sym("n_h", a.num_heads), d_h.clone()])
    };
    let kv_out = if a.num_kv_heads == a.num_heads {
        q_out.clone()
    } else {
        Expr::product(vec![Expr::sym("n_kv", a.num_kv_heads), d_h.clone()])
    };
    let mut parts = Vec::new();
    let mut push = |label: &str, category: Category, formula: Expr| {
        parts.push((format!("{prefix}{label}"), category, formula));
    };
    let uniform_bias = a.q_bias == a.k_bias && a.k_bias == a.v_bias;
    if a.fused_qkv && uniform_bias {
        let fused = if q_out == d && kv_out == d {
            scaled_sym("3d", 3, a.hidden)
        } else {
            let kv2 = Expr::product(vec![Expr::Lit(2), Expr::sym("n_kv", a.num_kv_heads)]);
            Expr::product(vec![
                Expr::sum(vec![Expr::sym("n_h", a.num_heads), kv2]),
                d_h,
            ])
        };
        push(
            "qkv_proj",
            Category::Attention,
            linear(&d, &fused, a.q_bias),
        );
    } else {
        push("q_proj", Category::Attention, linear(&d, &q_out, a.q_bias));
        push("k_proj", Category::Attention, linear(&d, &kv_out, a.k_bias));
        push("v_proj", Category::Attention, linear(&d, &kv_out, a.v_bias));
    }
    push("o_proj", Category::Attention, linear(&q_out, &d, a.o_bias));
    if let Some(n) = &a.q_norm {
        let w = norm_width(n.dim, a, names);
        push("q_norm", Category::Attention, norm_expr(n, w));
    }
    if let Some(n) = &a.k_norm {
        let w = norm_width(n.dim, a, names);
        push("k_norm", Category::Attention, norm_expr(n, w));
    }
    if a.sinks {
        push("sinks", Category::Attention, Expr::sym("n_h", a.num_heads));
    }
    parts
        .into_iter()
        .map(|(label, category, formula)| Part {
            label,
            category,
            count: 0,
            formula,
        })
        .collect()
}

/// Name a q/k-norm width by what it equals: `d_h`, `n_h·d_h`, `n_kv·d_h` or `d`.
fn norm_width(dim: u64, a: &StandardAttention, names: &Names) -> Expr {
    let d_h = Expr::sym("d_h", a.head_dim);
    if dim == a.head_dim {
        d_h
    } else if dim == a.hidden {
        names.d()
    } else if Some(dim) == a.num_heads.checked_mul(a.head_dim) {
        Expr::product(vec![Expr::sym("n_h", a.num_heads), d_h])
    } else if Some(dim) == a.num_kv_heads.checked_mul(a.head_dim) {
        Expr::product(vec![Expr::sym("n_kv", a.num_kv_heads), d_h])
    } else {
        Expr::sym("d_norm", dim)
    }
}

fn latent_attention_parts(a: &LatentAttention, names: &Names) -> Vec<Part> {
    let d = names.d();
    let n_h = Expr::sym("n_h", a.num_heads);
    let d_nope = Expr::sym("d_nope", a.qk_nope_head_dim);
    let d_rope = Expr::sym("d_rope", a.qk_rope_head_dim);
    let d_v = Expr::sym("d_v", a.v_head_dim);
    let r_kv = Expr::sym("r_kv", a.kv_lora_rank);
    let q_head = Expr::product(vec![
        n_h.clone(),
        Expr::sum(vec![d_nope.clone(), d_rope.clone()]),
    ]);
    let mut parts: Vec<(&str, Expr)> = Vec::new();
    match a.q_lora_rank {
        Some(rank) => {
            let r_q = Expr::sym("r_q", rank);
            parts.push(("q_a_proj", linear(&d, &r_q, a.bias)));
            parts.push(("q_a_layernorm", r_q.clone()));
            parts.push(("q_b_proj", linear(&r_q, &q_head, false)));
        }
        None => parts.push(("q_proj", linear(&d, &q_head, false))),
    }
    let kv_a_out = Expr::sum(vec![r_kv.clone(), d_rope]);
    parts.push(("kv_a_proj_with_mqa", linear(&d, &kv_a_out, a.bias)));
    parts.push(("kv_a_layernorm", r_kv.clone()));
    let kv_b_out = Expr::product(vec![n_h.clone(), Expr::sum(vec![d_nope, d_v.clone()])]);
    parts.push(("kv_b_proj", linear(&r_kv, &kv_b_out, false)));
    let o_in = Expr::product(vec![n_h, d_v]);
    parts.push(("o_proj", linear(&o_in, &d, a.bias)));
    parts
        .into_iter()
        .map(|(label, formula)| Part {
            label: label.to_owned(),
            category: Category::Attention,
            count: 0,
            formula,
        })
        .collect()
}

fn mlp_expr(m: &Mlp, names: &Names, inner_name: &str) -> Expr {
    let d = names.d();
    let f = Expr::sym(inner_name, m.intermediate);
    let d_f = Expr::product(vec![d.clone(), f.clone()]);
    let inputs = if m.gated { 2 } else { 1 };
    let mut terms = vec![d_f.clone(); inputs];
    terms.extend(vec![if m.up_bias { f } else { Expr::Lit(0) }; inputs]);
    terms.push(d_f);
    terms.push(if m.down_bias { d } else { Expr::Lit(0) });
    Expr::sum_merged(terms)
}

fn moe_parts(m: &Moe, names: &Names) -> Vec<Part> {
    let d = names.d();
    let e = Expr::sym("E", m.num_experts);
    let mut parts = vec![
        Part {
            label: "router".into(),
            category: Category::MoeRouter,
            formula: linear(&d, &e, m.router_bias),
            count: 0,
        },
        Part {
            label: "experts".into(),
            category: Category::MoeExperts,
            formula: mlp_expr(&m.expert, names, "d_e").times(e),
            count: 0,
        },
    ];
    if let Some(shared) = &m.shared {
        parts.push(Part {
            label: "shared_experts".into(),
            category: Category::MoeSharedExperts,
            formula: mlp_expr(shared, names, "d_s"),
            count: 0,
        });
    }
    if m.shared_gate {
        parts.push(Part {
            label: "shared_expert_gate".into(),
            category: Category::MoeSharedExperts,
            formula: d,
            count: 0,
        });
    }
    parts
}

fn layer_parts(layer: &Layer, names: &Names) -> Vec<Part> {
    let mut parts = match &layer.attention {
        Attention::Standard(a) => standard_attention_parts(a, names, false),
        Attention::Latent(a) => latent_attention_parts(a, names),
    };
    if let Some(cross) = &layer.cross_attention {
        parts.extend(match cross {
            Attention::Standard(a) => standard_attention_parts(a, names, true),
            Attention::Latent(a) => latent_attention_parts(a, names),
        });
    }
    match &layer.ffn {
        Ffn::Dense(m) => parts.push(Part {
            label: if m.gated { "mlp (gated)" } else { "mlp" }.into(),
            category: Category::Ffn,
            formula: mlp_expr(m, names, "d_ff"),
            count: 0,
        }),
        Ffn::Moe(m) => parts.extend(moe_parts(m, names)),
    }
    if !layer.norms.is_empty() {
        let norms: Vec<Expr> = layer
            .norms
            .iter()
            .map(|n| norm_expr(n, names.width(n.dim, "d_norm")))
            .collect();
        parts.push(Part {
            label: format!("{} norms", layer.norms.len()),
            category: Category::Norm,
            formula: Expr::sum_merged(norms),
            count: 0,
        });
    }
    parts
}

fn layer_kind(layer: &Layer) -> String {
    let mut kind = match &layer.ffn {
        Ffn::Dense(_) => "dense".to_owned(),
        Ffn::Moe(_) => "MoE".to_owned(),
    };
    if let Some(w) = layer.sliding_window {
        kind.push_str(&format!(", sliding window {w}"));
    }
    kind
}

fn evaluated(mut parts: Vec<Part>) -> Result<Vec<Part>, Overflow> {
    for p in &mut parts {
        p.count = p.formula.eval()?;
    }
    Ok(parts)
}

/// One group per distinct layer kind of a stack, in order of first occurrence: each kind is
/// derived once, however many layers share it.
fn group_layers(stack: &Stack, names: &Names) -> Result<Vec<LayerGroup>, Overflow> {
    let mut groups = Vec::with_capacity(stack.layers.kinds().len());
    for (kind, (layer, n)) in stack.layers.kind_counts().into_iter().enumerate() {
        let parts = evaluated(layer_parts(layer, names))?;
        let per_layer = parts
            .iter()
            .try_fold(0u64, |acc, p| acc.checked_add(p.count))
            .ok_or_else(|| Overflow {
                formula: "one layer".into(),
                numbers: String::new(),
            })?;
        groups.push(LayerGroup {
            stack: stack.role,
            runs: stack.layers.runs_of(kind).map(|r| r.range()).collect(),
            layers: n,
            kind: layer_kind(layer),
            parts,
            per_layer,
            active_routed: match &layer.ffn {
                Ffn::Moe(m) => Some(
                    mlp_expr(&m.expert, names, "d_e").times(Expr::sym("k", m.experts_per_token)),
                ),
                Ffn::Dense(_) => None,
            },
        });
    }
    Ok(groups)
}

/// Count every parameter of the model, exactly.
pub fn count(spec: &ModelSpec) -> Result<ParamCount, SpecError> {
    spec.validate()?;
    let names = Names {
        hidden: spec.hidden_size,
    };
    let d = names.d();
    let mut terms: BTreeMap<Category, Vec<Expr>> = BTreeMap::new();
    let mut add = |c: Category, e: Expr| terms.entry(c).or_default().push(e);

    if let Some(t) = spec.token_embedding {
        let table = Expr::product(vec![Expr::sym("V", t.rows), names.width(t.dim, "d_emb")]);
        add(
            Category::TokenEmbedding,
            table.times(Expr::Lit(1 + spec.extra_token_tables)),
        );
    }
    for p in &spec.embedding_projections {
        let input = names.width(p.input, "d_emb");
        let output = names.width(p.output, "d_emb");
        add(
            Category::EmbeddingProjection,
            linear(&input, &output, p.bias),
        );
    }

    let multi_stack = spec.stacks.len() > 1;
    let mut layer_groups = Vec::new();
    let mut stack_terms: Vec<(StackRole, u64, Vec<Expr>)> = Vec::new();
    for stack in &spec.stacks {
        let mut own: Vec<(Category, Expr)> = Vec::new();
        match stack.position {
            Some(PositionEmbedding::Learned { table, offset }) => {
                let rows = Expr::sum(vec![
                    Expr::sym("n_ctx", table.rows - offset.min(table.rows)),
                    Expr::Lit(offset),
                ]);
                own.push((
                    Category::PositionEmbedding,
                    Expr::product(vec![rows, names.width(table.dim, "d_emb")]),
                ));
            }
            Some(PositionEmbedding::RelativeBias { buckets, heads }) => own.push((
                Category::PositionEmbedding,
                Expr::product(vec![Expr::sym("buckets", buckets), Expr::sym("n_h", heads)]),
            )),
            None => {}
        }
        if let Some(t) = stack.token_type {
            own.push((
                Category::TokenTypeEmbedding,
                Expr::product(vec![
                    Expr::sym("n_types", t.rows),
                    names.width(t.dim, "d_emb"),
                ]),
            ));
        }
        if let Some(n) = &stack.embedding_norm {
            own.push((Category::Norm, norm_expr(n, names.width(n.dim, "d_emb"))));
        }
        let groups = group_layers(stack, &names)?;
        let layer_symbol = match (multi_stack, stack.role) {
            (false, _) => "L",
            (true, StackRole::Encoder) => "L_enc",
            (true, _) => "L_dec",
        };
        let stack_layers = stack.layers.len();
        let has_moe = stack
            .layers
            .kinds()
            .iter()
            .any(|l| matches!(l.ffn, Ffn::Moe(_)));
        let has_dense = stack
            .layers
            .kinds()
            .iter()
            .any(|l| matches!(l.ffn, Ffn::Dense(_)));
        for category in Category::ALL {
            // Layers whose parts of this category are equal count together, even when the
            // layers differ elsewhere (DeepSeek's attention is the same in dense and MoE layers).
            let mut same: Vec<(Expr, u64)> = Vec::new();
            for g in &groups {
                let parts: Vec<Expr> = g
                    .parts
                    .iter()
                    .filter(|p| p.category == category)
                    .map(|p| p.formula.clone())
                    .collect();
                if parts.is_empty() {
                    continue;
                }
                let e = Expr::sum_merged(parts);
                let n = g.layers;
                match same.iter_mut().find(|(x, _)| *x == e) {
                    Some((_, m)) => *m += n,
                    None => same.push((e, n)),
                }
            }
            let single = same.len() == 1;
            let per_group: Vec<Expr> = same
                .into_iter()
                .map(|(e, n)| {
                    let count = if single && n == stack_layers {
                        Expr::sym(layer_symbol, n)
                    } else if single && has_moe && has_dense {
                        let name = if category == Category::Ffn {
                            "L_dense"
                        } else {
                            "L_moe"
                        };
                        Expr::sym(name, n)
                    } else {
                        Expr::Lit(n)
                    };
                    e.times(count)
                })
                .collect();
            if !per_group.is_empty() {
                own.push((category, Expr::sum(per_group)));
            }
        }
        if let Some(n) = &stack.final_norm {
            own.push((Category::Norm, norm_expr(n, names.width(n.dim, "d_norm"))));
        }
        let mut stack_total = Vec::new();
        for (c, e) in own {
            stack_total.push(e.clone());
            add(c, e);
        }
        stack_terms.push((stack.role, stack.layers.len(), stack_total));
        layer_groups.extend(groups);
    }

    match &spec.head {
        OutputHead::None => {}
        OutputHead::Lm {
            tied,
            biases,
            transform,
        } => {
            if let Some(t) = transform {
                add(Category::LmHeadTransform, linear(&d, &d, t.dense.bias));
                add(
                    Category::Norm,
                    norm_expr(&t.norm, names.width(t.norm.dim, "d_norm")),
                );
            }
            let v = Expr::sym("V", spec.vocab_size);
            if !tied {
                // The head reads the embedding width (OPT-350m: `word_embed_proj_dim`).
                let width = spec.token_embedding.map_or(spec.hidden_size, |t| t.dim);
                add(
                    Category::LmHead,
                    Expr::product(vec![v.clone(), names.width(width, "d_emb")]),
                );
            }
            if *biases > 0 {
                add(Category::LmHead, v.times(Expr::Lit(*biases)));
            }
        }
    }
    if let Some(Linear { bias, .. }) = spec.pooler {
        add(Category::Pooler, linear(&d, &d, bias));
    }

    let mut components = Vec::with_capacity(Category::ALL.len());
    let mut total: u64 = 0;
    for category in Category::ALL {
        let formula = Expr::sum(terms.remove(&category).unwrap_or_default());
        let count = formula.eval()?;
        total = total.checked_add(count).ok_or_else(|| Overflow {
            formula: "total".into(),
            numbers: format!("{total} + {count}"),
        })?;
        components.push(Component {
            category,
            formula,
            count,
        });
    }
    let stacks = stack_terms
        .into_iter()
        .map(|(role, layers, terms)| {
            Ok(StackCount {
                role,
                layers,
                params: Expr::sum(terms).eval()?,
            })
        })
        .collect::<Result<Vec<_>, Overflow>>()?;
    let active = active_count(&layer_groups, total, &components)?;
    Ok(ParamCount {
        components,
        total,
        stacks,
        layer_groups,
        active,
    })
}

/// Active parameters per token: routed experts contribute `k/E` of their weights.
fn active_count(
    groups: &[LayerGroup],
    total: u64,
    components: &[Component],
) -> Result<Option<ActiveCount>, Overflow> {
    let layers: u64 = groups.iter().map(|g| g.layers).sum();
    let mut same: Vec<(Expr, u64)> = Vec::new();
    for g in groups {
        if let Some(e) = &g.active_routed {
            let n = g.layers;
            match same.iter_mut().find(|(x, _)| x == e) {
                Some((_, m)) => *m += n,
                None => same.push((e.clone(), n)),
            }
        }
    }
    let single = same.len() == 1;
    let routed_terms: Vec<Expr> = same
        .into_iter()
        .map(|(e, n)| {
            let count = match (single, n == layers) {
                (true, true) => Expr::sym("L", n),
                (true, false) => Expr::sym("L_moe", n),
                (false, _) => Expr::Lit(n),
            };
            e.times(count)
        })
        .collect();
    if routed_terms.is_empty() {
        return Ok(None);
    }
    let routed_formula = Expr::sum(routed_terms);
    let routed_active = routed_formula.eval()?;
    let get = |category| {
        components
            .iter()
            .find(|c: &&Component| c.category == category)
            .map_or(0, |c| c.count)
    };
    // routed_active ≤ routed_all ≤ total because k ≤ E (validated), so these cannot underflow.
    let per_token = total - get(Category::MoeExperts) + routed_active;
    Ok(Some(ActiveCount {
        per_token,
        per_token_excl_token_embedding: per_token - get(Category::TokenEmbedding),
        routed_formula,
    }))
}
