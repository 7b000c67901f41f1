//! Formulas that know both their symbols and their numbers.
//!
//! Every count llmsize prints is built as an [`Expr`]: a small tree of named symbols
//! (`d`, `L`, `n_kv·d_h`, …), integer literals, products and sums. The same tree is
//! evaluated with checked arithmetic (so a 10-trillion-parameter model is exact and an
//! overflow is an error, never a wrap) and rendered twice: once with symbols
//! (`L·(d·3d + 3d)`) and once with the numbers filled in (`12·(768·2304 + 2304)`), the way a
//! person derives a count by hand. Keeping one tree for the value and both renderings means
//! the printed formula can never drift from the number it explains.

use crate::error::Overflow;

/// The quantities formulas are written in: one variant per symbol, so a width cannot be
/// misspelled and every symbol has one written form and one meaning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Sym {
    /// `d`: the width of the residual stream.
    Hidden,
    /// `3d`: q, k and v fused in one `d → 3d` matrix.
    ThreeHidden,
    /// `V`: vocabulary entries.
    Vocab,
    /// `L`: layers of a single-stack model.
    Layers,
    /// `L_enc`: encoder layers of an encoder-decoder.
    EncoderLayers,
    /// `L_dec`: decoder layers of an encoder-decoder.
    DecoderLayers,
    /// `L_dense`: layers with a dense MLP in a model that also has MoE layers.
    DenseLayers,
    /// `L_moe`: layers with experts.
    MoeLayers,
    /// `n_h`: query heads.
    Heads,
    /// `n_h_dec`: query heads of a decoder stack that differs from the encoder's.
    DecoderHeads,
    /// `n_kv`: key/value heads.
    KvHeads,
    /// `d_h`: the width of one head.
    HeadDim,
    /// `d_ff`: the inner width of a dense MLP.
    Ffn,
    /// `d_ff_dec`: a decoder stack's MLP width that differs from the encoder's.
    DecoderFfn,
    /// `d_e`: the inner width of one routed expert.
    ExpertFfn,
    /// `d_s`: the inner width of the shared expert(s).
    SharedFfn,
    /// `E`: routed experts.
    Experts,
    /// `k`: experts per token.
    TopK,
    /// `d_emb`: the width of a token or position table that differs from `d`.
    EmbeddingDim,
    /// `d_norm`: a norm over a width other than `d`.
    NormDim,
    /// `n_ctx`: rows of a learned position table (positions).
    Context,
    /// `buckets`: T5's relative-position buckets.
    Buckets,
    /// `n_types`: BERT's token types.
    TokenTypes,
    /// `r_q`: the rank of MLA's query compression.
    QueryRank,
    /// `r_kv`: the rank of MLA's key/value compression.
    KvRank,
    /// `d_nope`: MLA's per-head query/key width without rotary part.
    NopeDim,
    /// `d_rope`: MLA's per-head rotary width.
    RopeDim,
    /// `d_v`: MLA's per-head value width.
    ValueDim,
    /// A quantity one family names for itself (`d_inner`, `d_state`, `d_conv`, `L_vis`),
    /// written as given: what a new mixer or tower needs without a variant here each.
    Named(&'static str),
}

impl Sym {
    /// How the symbol is written in formulas.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Sym::Hidden => "d",
            Sym::ThreeHidden => "3d",
            Sym::Vocab => "V",
            Sym::Layers => "L",
            Sym::EncoderLayers => "L_enc",
            Sym::DecoderLayers => "L_dec",
            Sym::DenseLayers => "L_dense",
            Sym::MoeLayers => "L_moe",
            Sym::Heads => "n_h",
            Sym::DecoderHeads => "n_h_dec",
            Sym::KvHeads => "n_kv",
            Sym::HeadDim => "d_h",
            Sym::Ffn => "d_ff",
            Sym::DecoderFfn => "d_ff_dec",
            Sym::ExpertFfn => "d_e",
            Sym::SharedFfn => "d_s",
            Sym::Experts => "E",
            Sym::TopK => "k",
            Sym::EmbeddingDim => "d_emb",
            Sym::NormDim => "d_norm",
            Sym::Context => "n_ctx",
            Sym::Buckets => "buckets",
            Sym::TokenTypes => "n_types",
            Sym::QueryRank => "r_q",
            Sym::KvRank => "r_kv",
            Sym::NopeDim => "d_nope",
            Sym::RopeDim => "d_rope",
            Sym::ValueDim => "d_v",
            Sym::Named(name) => name,
        }
    }

    /// What a derived symbol means when no config key gave it (for `--explain`'s legend).
    #[must_use]
    pub fn meaning(self) -> &'static str {
        match self {
            Sym::ThreeHidden => "3·d: q, k and v fused in one matrix",
            Sym::DenseLayers => "layers with a dense MLP",
            Sym::MoeLayers => "layers with experts",
            Sym::TopK => "experts per token",
            _ => "",
        }
    }
}

impl std::fmt::Display for Sym {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A symbol with its value, e.g. `d = 768`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Symbol {
    /// Which quantity.
    pub sym: Sym,
    /// Its value.
    pub value: u64,
}

/// A formula over [`Symbol`]s and integer literals.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Expr {
    /// An integer literal, written the same way in both renderings (`2`, `4`).
    Lit(u64),
    /// A named quantity.
    Sym(Symbol),
    /// The product of the factors (rendered with `·`).
    Product(Vec<Expr>),
    /// The sum of the terms (rendered with ` + `).
    Sum(Vec<Expr>),
}

impl Expr {
    /// A symbol with its value.
    #[must_use]
    pub fn sym(sym: Sym, value: u64) -> Self {
        Expr::Sym(Symbol { sym, value })
    }

    /// A product; a single factor collapses to itself.
    #[must_use]
    pub fn product(factors: Vec<Expr>) -> Self {
        match <[Expr; 1]>::try_from(factors) {
            Ok([single]) => single,
            Err(factors) => Expr::Product(factors),
        }
    }

    /// A sum of the terms, dropping literal zeros; a single term collapses to itself and an
    /// empty sum is `0`.
    #[must_use]
    pub fn sum(terms: Vec<Expr>) -> Self {
        let mut terms: Vec<Expr> = terms.into_iter().filter(|t| !t.is_zero()).collect();
        match terms.len() {
            0 => Expr::Lit(0),
            1 => terms.pop().unwrap_or(Expr::Lit(0)),
            _ => Expr::Sum(terms),
        }
    }

    /// A sum in which equal terms are gathered: `d·d + d·d + d·d_ff` → `2·d·d + d·d_ff`
    /// (first-occurrence order), so a layer reads like the article's formulas.
    #[must_use]
    pub fn sum_merged(terms: Vec<Expr>) -> Self {
        Self::gathered(terms, |a, b| a == b)
    }

    /// [`Expr::sum_merged`] that also gathers products of the same factors in another order
    /// (`d·d_ff` and `d_ff·d`): within one block, an MLP's up (`d → d_ff`) and down
    /// (`d_ff → d`) matrices are written as the article writes them, `2·d·d_ff`.
    #[must_use]
    pub fn sum_merged_commutative(terms: Vec<Expr>) -> Self {
        Self::gathered(terms, Expr::same_factors)
    }

    /// The factors of a product, nested products flattened.
    fn factors(&self) -> Vec<&Expr> {
        match self {
            Expr::Product(fs) => fs.iter().flat_map(Expr::factors).collect(),
            e => vec![e],
        }
    }

    /// Two terms with the same factors, in any order.
    fn same_factors(a: &Expr, b: &Expr) -> bool {
        let (fa, mut fb) = (a.factors(), b.factors());
        if fa.len() != fb.len() {
            return false;
        }
        for f in fa {
            match fb.iter().position(|g| *g == f) {
                Some(i) => {
                    fb.swap_remove(i);
                }
                None => return false,
            }
        }
        true
    }

    fn gathered(terms: Vec<Expr>, same: impl Fn(&Expr, &Expr) -> bool) -> Self {
        let mut gathered: Vec<(Expr, u64)> = Vec::new();
        for t in terms.into_iter().filter(|t| !t.is_zero()) {
            match gathered.iter_mut().find(|(g, _)| same(g, &t)) {
                // saturates: never, `n` counts elements of a `Vec`.
                Some((_, n)) => *n = n.saturating_add(1),
                None => gathered.push((t, 1)),
            }
        }
        Expr::sum(
            gathered
                .into_iter()
                .map(|(t, n)| match (n, t) {
                    (1, t) => t,
                    (n, Expr::Product(mut fs)) => {
                        // `2·(2·d)` is written `4·d`: fold the count into a leading literal.
                        let folded = fs.first().and_then(|f| f.lit_times(n));
                        match (folded, fs.first_mut()) {
                            (Some(folded), Some(first)) => *first = folded,
                            _ => fs.insert(0, Expr::Lit(n)),
                        }
                        Expr::Product(fs)
                    }
                    (n, t) => Expr::Product(vec![Expr::Lit(n), t]),
                })
                .collect(),
        )
    }

    /// `count·(self)`, or `self` when the count is a literal 1.
    #[must_use]
    pub fn times(self, count: Expr) -> Self {
        if count == Expr::Lit(1) {
            self
        } else {
            Expr::Product(vec![count, self])
        }
    }

    /// A literal times `n`, when it is a literal and the product fits.
    fn lit_times(&self, n: u64) -> Option<Expr> {
        match self {
            Expr::Lit(m) => m.checked_mul(n).map(Expr::Lit),
            _ => None,
        }
    }

    /// True for the literal `0` (used to drop absent terms such as missing biases).
    #[must_use]
    pub fn is_zero(&self) -> bool {
        matches!(self, Expr::Lit(0))
    }

    /// The value, with every operation checked.
    pub fn eval(&self) -> Result<u64, Overflow> {
        match self {
            Expr::Lit(v) => Ok(*v),
            Expr::Sym(s) => Ok(s.value),
            Expr::Product(fs) => fs.iter().try_fold(1u64, |acc, f| {
                acc.checked_mul(f.eval()?)
                    .ok_or_else(|| Overflow::new(self))
            }),
            Expr::Sum(ts) => ts.iter().try_fold(0u64, |acc, t| {
                acc.checked_add(t.eval()?)
                    .ok_or_else(|| Overflow::new(self))
            }),
        }
    }

    /// The formula with symbols: `L·(d·3d + 3d)`.
    #[must_use]
    pub fn symbolic(&self) -> String {
        self.render(&|s| s.sym.as_str().to_owned())
    }

    /// The formula with the numbers filled in: `12·(768·2304 + 2304)`.
    #[must_use]
    pub fn numeric(&self) -> String {
        self.render(&|s| s.value.to_string())
    }

    fn render(&self, leaf: &dyn Fn(&Symbol) -> String) -> String {
        match self {
            Expr::Lit(v) => v.to_string(),
            Expr::Sym(s) => leaf(s),
            Expr::Product(fs) => fs
                .iter()
                .map(|f| match f {
                    Expr::Sum(_) => format!("({})", f.render(leaf)),
                    _ => f.render(leaf),
                })
                .collect::<Vec<_>>()
                .join("·"),
            Expr::Sum(ts) => ts
                .iter()
                .map(|t| t.render(leaf))
                .collect::<Vec<_>>()
                .join(" + "),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpt2_attention_renders_like_the_article() {
        // GPT-2 small: c_attn d→3d with bias, c_proj d→d with bias, 12 layers.
        let d = || Expr::sym(Sym::Hidden, 768);
        let three_d = || Expr::sym(Sym::ThreeHidden, 2304);
        let layer = Expr::sum(vec![
            Expr::product(vec![d(), three_d()]),
            three_d(),
            Expr::product(vec![d(), d()]),
            d(),
        ]);
        let all = layer.times(Expr::sym(Sym::Layers, 12));
        assert_eq!(all.symbolic(), "L·(d·3d + 3d + d·d + d)");
        assert_eq!(all.numeric(), "12·(768·2304 + 2304 + 768·768 + 768)");
        assert_eq!(all.eval(), Ok(28_348_416));
    }

    #[test]
    fn overflow_is_an_error_not_a_wrap() {
        let big = Expr::product(vec![Expr::Lit(u64::MAX), Expr::Lit(2)]);
        assert!(big.eval().is_err());
        let big_sum = Expr::sum(vec![Expr::Lit(u64::MAX), Expr::Lit(1)]);
        assert!(big_sum.eval().is_err());
    }

    #[test]
    fn zero_terms_vanish_and_singletons_collapse() {
        let e = Expr::sum(vec![Expr::Lit(0), Expr::sym(Sym::Hidden, 5)]);
        assert_eq!(e, Expr::sym(Sym::Hidden, 5));
        assert_eq!(Expr::sum(vec![]).eval(), Ok(0));
    }
}
