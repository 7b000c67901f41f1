//! Exact parameter counting of a [`ModelSpec`], by component, with the formula of each count.
//!
//! The categories are the 13 of the ground truth (`shared/truth/README.md`), which is also
//! the public JSON contract of `llmsize params --json`. Every count is an [`Expr`], so the
//! table, `--explain` and JSON all come from the same tree.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::checked::{self, Checked};
use crate::error::{Overflow, SpecError};
use crate::expr::{Expr, Sym};
use crate::layout::{Place, Tensor, layout};
use crate::spec::{Attention, Ffn, Layer, ModelSpec, StackRole};

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
    /// The same without the input token table (how `OpenAI` and DeepSeek quote "active").
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
    #[must_use]
    pub fn get(&self, category: Category) -> u64 {
        self.components
            .iter()
            .find(|c| c.category == category)
            .map_or(0, |c| c.count)
    }

    /// Total minus the input tables (token, position, token type).
    #[must_use]
    pub fn non_embedding(&self) -> u64 {
        self.components
            .iter()
            .filter(|c| !c.category.is_input_embedding())
            .map(|c| c.count)
            // saturates: never, these are parts of `total`, a checked sum.
            .fold(0, u64::saturating_add)
    }
}

/// The parts of a run of tensors: consecutive tensors of the same part (and category) are one
/// formula, as
/// a person writes a block (`d·3d + 3d`, `3·d·d_ff`, `2·d` for a `LayerNorm`). Routed experts'
/// matrices share the `E` factor: `E·(3·d·d_e + 2·d_e + d)`. Returns the parts and, for
/// routed experts, what one token uses (`k·(3·d·d_e)`).
fn parts_of(tensors: &[&Tensor]) -> Result<(Vec<Part>, Option<Expr>), Overflow> {
    let mut parts: Vec<Part> = Vec::new();
    let mut active = None;
    for run in tensors.chunk_by(|a, b| {
        a.part == b.part
            && a.category == b.category
            && a.name.cross == b.name.cross
            && a.place == b.place
    }) {
        let Some(first) = run.first() else { continue };
        let shared_copies = run
            .iter()
            .all(|t| t.shape.copies == first.shape.copies && t.shape.copies != Expr::Lit(1));
        let formula = if shared_copies {
            let one = Expr::sum_merged_commutative(
                run.iter().map(|t| t.shape.elements_of_one()).collect(),
            );
            if first.shape.active_copies != Expr::Lit(1) {
                active = Some(one.clone().times(first.shape.active_copies.clone()));
            }
            one.times(first.shape.copies.clone())
        } else {
            Expr::sum_merged_commutative(
                run.iter()
                    .map(|t| t.shape.elements_of_one().times(t.shape.copies.clone()))
                    .collect(),
            )
        };
        parts.push(Part {
            label: first.part_label(),
            category: first.category,
            count: formula.eval()?,
            formula,
        });
    }
    Ok((parts, active))
}

fn layer_kind(layer: &Layer) -> String {
    let mut kind = match &layer.ffn {
        Ffn::Dense(_) => "dense".to_owned(),
        Ffn::Moe(_) => "MoE".to_owned(),
        Ffn::Absent if layer.state.is_some() => "recurrent".to_owned(),
        Ffn::Absent => "no MLP".to_owned(),
    };
    if matches!(layer.attention, Attention::Absent) && layer.state.is_some() {
        kind.push_str(", no attention");
    }
    if let Some(w) = layer.sliding_window {
        let _ = write!(kind, ", sliding window {w}");
    }
    kind
}

/// Count every parameter of the model, exactly, from its [`layout`].
pub fn count(spec: &ModelSpec) -> Result<ParamCount, SpecError> {
    spec.validate()?;
    let layout = layout(spec)?;
    let mut terms: BTreeMap<Category, Vec<Expr>> = BTreeMap::new();
    let mut add = |c: Category, e: Expr| terms.entry(c).or_default().push(e);
    let at = |place: Place| -> Vec<&Tensor> {
        layout.tensors.iter().filter(|t| t.place == place).collect()
    };

    for p in parts_of(&at(Place::Input))?.0 {
        add(p.category, p.formula);
    }

    let multi_stack = spec.stacks.len() > 1;
    let mut layer_groups = Vec::new();
    let mut stack_terms: Vec<(StackRole, u64, Vec<Expr>)> = Vec::new();
    for (si, stack) in spec.stacks.iter().enumerate() {
        let mut own: Vec<(Category, Expr)> = parts_of(&at(Place::StackStart(si)))?
            .0
            .into_iter()
            .map(|p| (p.category, p.formula))
            .collect();
        // One group per distinct layer kind, in order of first occurrence: each kind is
        // derived once, however many layers share it.
        let mut groups = Vec::with_capacity(stack.layers.kinds().len());
        for (kind, (layer, n)) in stack.layers.kind_counts().into_iter().enumerate() {
            if n == 0 {
                // A kind added but never used holds no layer.
                continue;
            }
            let (parts, active_routed) = parts_of(&at(Place::Layer { stack: si, kind }))?;
            let per_layer = checked::sum("parameters of one layer", parts.iter().map(|p| p.count))?;
            groups.push(LayerGroup {
                stack: stack.role,
                runs: stack
                    .layers
                    .runs_of(kind)
                    .map(super::spec::Run::range)
                    .collect(),
                layers: n,
                kind: layer_kind(layer),
                parts,
                per_layer,
                active_routed,
            });
        }
        let layer_symbol = match (multi_stack, stack.role) {
            (false, _) => Sym::Layers,
            (true, StackRole::Encoder) => Sym::EncoderLayers,
            (true, _) => Sym::DecoderLayers,
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
                    Some((_, m)) => *m = checked::add("layers with equal parts", *m, n)?,
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
                        let sym = if category == Category::Ffn {
                            Sym::DenseLayers
                        } else {
                            Sym::MoeLayers
                        };
                        Expr::sym(sym, n)
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
        for p in parts_of(&at(Place::StackEnd(si)))?.0 {
            own.push((p.category, p.formula));
        }
        let mut stack_total = Vec::new();
        for (c, e) in own {
            stack_total.push(e.clone());
            add(c, e);
        }
        stack_terms.push((stack.role, stack.layers.len(), stack_total));
        layer_groups.extend(groups);
    }

    for p in parts_of(&at(Place::Output))?.0 {
        add(p.category, p.formula);
    }

    let mut components = Vec::with_capacity(Category::ALL.len());
    let mut total: u64 = 0;
    for category in Category::ALL {
        let formula = Expr::sum(terms.remove(&category).unwrap_or_default());
        let count = formula.eval()?;
        total = crate::checked::add("total", total, count)?;
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
    let layers = checked::sum("layers", groups.iter().map(|g| g.layers))?;
    let mut same: Vec<(Expr, u64)> = Vec::new();
    for g in groups {
        if let Some(e) = &g.active_routed {
            let n = g.layers;
            match same.iter_mut().find(|(x, _)| x == e) {
                Some((_, m)) => *m = checked::add("MoE layers alike", *m, n)?,
                None => same.push((e.clone(), n)),
            }
        }
    }
    let single = same.len() == 1;
    let routed_terms: Vec<Expr> = same
        .into_iter()
        .map(|(e, n)| {
            let count = match (single, n == layers) {
                (true, true) => Expr::sym(Sym::Layers, n),
                (true, false) => Expr::sym(Sym::MoeLayers, n),
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
    // routed_active ≤ routed_all ≤ total because k ≤ E (validated): never negative.
    let per_token = (Checked::new(total) - get(Category::MoeExperts) + routed_active)
        .get("total − routed experts + active routed experts")?;
    Ok(Some(ActiveCount {
        per_token,
        per_token_excl_token_embedding: checked::sub(
            "active per token − token embedding",
            per_token,
            get(Category::TokenEmbedding),
        )?,
        routed_formula,
    }))
}
