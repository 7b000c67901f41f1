//! The one data model every output format renders: a model's exact count, its formulas,
//! the classic estimates next to it, and every assumption that was made.

use crate::count::{ParamCount, count};
use crate::error::SpecError;
use crate::expr::{Expr, Sym};
use crate::spec::{Assumption, ModelSpec, StackRole};

/// A classic closed-form estimate shown next to the exact count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Estimate {
    /// A stable key for JSON (`kaplan_12_l_d2`).
    pub key: &'static str,
    /// Where the formula comes from.
    pub source: &'static str,
    /// The formula with symbols and numbers.
    pub formula: Expr,
    /// Its value.
    pub value: u64,
}

/// Everything `llmsize params` says about one model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamsReport {
    /// Display name.
    pub name: String,
    /// Where the model came from (preset, file, flags).
    pub source: String,
    /// `model_type`.
    pub model_type: String,
    /// Model class mirrored.
    pub architecture: String,
    /// Hidden size `d`.
    pub hidden_size: u64,
    /// Vocabulary `V`.
    pub vocab_size: u64,
    /// The exact count.
    pub count: ParamCount,
    /// The article's estimates.
    pub estimates: Vec<Estimate>,
    /// Values filled in.
    pub assumptions: Vec<Assumption>,
    /// Notes for the user.
    pub warnings: Vec<String>,
    /// Legend: formula symbol → where its value came from.
    pub symbol_sources: Vec<(Sym, String)>,
    /// Whether the output head is tied to the token table (`None`: no head).
    pub tied_embeddings: Option<bool>,
    /// The stacks' roles, for labels.
    pub stack_roles: Vec<StackRole>,
    /// `None` when the count is exact; else why it is an estimate (`--assume`).
    pub estimate: Option<String>,
}

impl ParamsReport {
    /// Count a spec and gather everything the renderers need.
    pub fn new(spec: &ModelSpec, source: impl Into<String>) -> Result<Self, SpecError> {
        let count = count(spec)?;
        let d = Expr::sym(Sym::Hidden, spec.hidden_size);
        let l = Expr::sym(Sym::Layers, spec.num_layers());
        let v = Expr::sym(Sym::Vocab, spec.vocab_size);
        let d2 = Expr::product(vec![d.clone(), d.clone()]);
        let kaplan = Expr::product(vec![Expr::Lit(12), l.clone(), d.clone(), d.clone()]);
        let article = Expr::sum(vec![
            Expr::product(vec![v, d.clone()]),
            Expr::product(vec![
                l,
                Expr::sum(vec![
                    Expr::product(vec![Expr::Lit(12), d2]),
                    Expr::product(vec![Expr::Lit(13), d]),
                ]),
            ]),
        ]);
        // An estimate that overflows (absurd widths) is left out; the exact count stands.
        let estimates = [
            (
                "kaplan_12_l_d2",
                "Kaplan et al. 2020: non-embedding parameters of a GPT block with d_ff = 4d",
                kaplan,
            ),
            (
                "article_vd_l_12d2_13d",
                "the article: GPT block with biases and LayerNorm, tied head, no position table",
                article,
            ),
        ]
        .into_iter()
        .filter_map(|(key, source, formula)| {
            Some(Estimate {
                key,
                source,
                value: formula.eval().ok()?,
                formula,
            })
        })
        .collect();
        let tied_embeddings = match &spec.head {
            crate::spec::OutputHead::None => None,
            crate::spec::OutputHead::Lm { tied, .. } => Some(*tied),
        };
        Ok(ParamsReport {
            name: spec.name.clone(),
            source: source.into(),
            model_type: spec.model_type.clone(),
            architecture: spec.architecture.clone(),
            hidden_size: spec.hidden_size,
            vocab_size: spec.vocab_size,
            count,
            estimates,
            assumptions: spec.assumptions.clone(),
            warnings: spec.warnings.clone(),
            symbol_sources: spec
                .symbol_sources
                .iter()
                .map(|(k, v)| (*k, v.clone()))
                .collect(),
            tied_embeddings,
            stack_roles: spec.stacks.iter().map(|s| s.role).collect(),
            estimate: spec.estimate.clone(),
        })
    }
}
