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

/// A named quantity with its value, e.g. `d = 768`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Symbol {
    /// How the symbol is written in formulas (`d`, `n_kv·d_h`, `3d`).
    pub name: String,
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
    /// A symbol with a name and a value.
    pub fn sym(name: impl Into<String>, value: u64) -> Self {
        Expr::Sym(Symbol {
            name: name.into(),
            value,
        })
    }

    /// A product; a single factor collapses to itself.
    #[must_use]
    pub fn product(factors: Vec<Expr>) -> Self {
        if factors.len() == 1 {
            factors.into_iter().next().expect("length checked above")
        } else {
            Expr::Product(factors)
        }
    }

    /// A sum of the terms, dropping literal zeros; a single term collapses to itself and an
    /// empty sum is `0`.
    #[must_use]
    pub fn sum(terms: Vec<Expr>) -> Self {
        let mut terms: Vec<Expr> = terms.into_iter().filter(|t| !t.is_zero()).collect();
        match terms.len() {
            0 => Expr::Lit(0),
            1 => terms.pop().expect("length checked above"),
            _ => Expr::Sum(terms),
        }
    }

    /// A sum in which equal terms are gathered: `d·d + d·d + d·d_ff` → `2·d·d + d·d_ff`
    /// (first-occurrence order), so a layer reads like the article's formulas.
    #[must_use]
    pub fn sum_merged(terms: Vec<Expr>) -> Self {
        let mut gathered: Vec<(Expr, u64)> = Vec::new();
        for t in terms.into_iter().filter(|t| !t.is_zero()) {
            match gathered.iter_mut().find(|(g, _)| *g == t) {
                Some((_, n)) => *n += 1,
                None => gathered.push((t, 1)),
            }
        }
        Expr::sum(
            gathered
                .into_iter()
                .map(|(t, n)| match (n, t) {
                    (1, t) => t,
                    (n, Expr::Product(mut fs)) => match fs.first() {
                        Some(Expr::Lit(m)) if m.checked_mul(n).is_some() => {
                            fs[0] = Expr::Lit(m * n);
                            Expr::Product(fs)
                        }
                        _ => {
                            fs.insert(0, Expr::Lit(n));
                            Expr::Product(fs)
                        }
                    },
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

    /// True for the literal `0` (used to drop absent terms such as missing biases).
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
    pub fn symbolic(&self) -> String {
        self.render(&|s| s.name.clone())
    }

    /// The formula with the numbers filled in: `12·(768·2304 + 2304)`.
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
        let d = || Expr::sym("d", 768);
        let three_d = || Expr::sym("3d", 2304);
        let layer = Expr::sum(vec![
            Expr::product(vec![d(), three_d()]),
            three_d(),
            Expr::product(vec![d(), d()]),
            d(),
        ]);
        let all = layer.times(Expr::sym("L", 12));
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
        let e = Expr::sum(vec![Expr::Lit(0), Expr::sym("d", 5)]);
        assert_eq!(e, Expr::sym("d", 5));
        assert_eq!(Expr::sum(vec![]).eval(), Ok(0));
    }
}
