//! Checked arithmetic for every integer that comes from input: the one place where `+`, `-`,
//! `*` and `/` on sizes, counts and flags are done.
//!
//! A config, a weight header or a flag can hold any number up to `2^64 − 1`; a product of two
//! of them can overflow, a difference can go below zero, a divisor can be zero. Each of those
//! is a typed [`Overflow`] naming the formula and the values it was given — never a panic, a
//! wrapped value or a saturated number printed as data. The crates that read input
//! (`llmsize-core`, `llmsize-adapters`, `llmsize-weights`, `llmsize-engine`) deny clippy's
//! `arithmetic_side_effects`, so an operator on an integer outside this module does not
//! compile there; this module is where the lint is allowed, once, for the operations it checks.
//!
//! Two forms, for two shapes of code:
//! - functions for one step: `checked::mul("b·s·d", b, s)?`;
//! - [`Checked`] for an expression: `(Checked::new(b) * s * d + 4).get("b·s·d + 4")?`, which
//!   carries the first failure through the rest of the expression and names it at the end,
//!   with the operands of the step that failed.

use std::fmt;
use std::ops::{Add, Div, Mul, Sub};

use crate::error::{Overflow, Problem};

/// An unsigned integer type the helpers work on.
pub trait Int: Copy + fmt::Display + Ord {
    /// Width in bits, for the message.
    const BITS: u32;
    /// The value as `u128`, for the message.
    fn wide(self) -> u128;
    /// `self + rhs`, if it fits.
    fn add(self, rhs: Self) -> Option<Self>;
    /// `self − rhs`, if not below zero.
    fn sub(self, rhs: Self) -> Option<Self>;
    /// `self · rhs`, if it fits.
    fn mul(self, rhs: Self) -> Option<Self>;
    /// `self / rhs`, unless `rhs` is zero.
    fn div(self, rhs: Self) -> Option<Self>;
    /// `self % rhs`, unless `rhs` is zero.
    fn rem(self, rhs: Self) -> Option<Self>;
}

macro_rules! int {
    ($($t:ty),*) => {$(
        impl Int for $t {
            const BITS: u32 = <$t>::BITS;
            fn wide(self) -> u128 { u128::from(self) }
            fn add(self, rhs: Self) -> Option<Self> { self.checked_add(rhs) }
            fn sub(self, rhs: Self) -> Option<Self> { self.checked_sub(rhs) }
            fn mul(self, rhs: Self) -> Option<Self> { self.checked_mul(rhs) }
            fn div(self, rhs: Self) -> Option<Self> { self.checked_div(rhs) }
            fn rem(self, rhs: Self) -> Option<Self> { self.checked_rem(rhs) }
        }
    )*};
}
int!(u8, u16, u32, u64, u128);

// `usize` has no `From` into `u128` (its width is the target's), so it is spelled out.
impl Int for usize {
    const BITS: u32 = usize::BITS;
    fn wide(self) -> u128 {
        // `usize` is at most 64 bits on every target Rust supports today.
        u128::try_from(self).unwrap_or(u128::MAX)
    }
    fn add(self, rhs: Self) -> Option<Self> {
        self.checked_add(rhs)
    }
    fn sub(self, rhs: Self) -> Option<Self> {
        self.checked_sub(rhs)
    }
    fn mul(self, rhs: Self) -> Option<Self> {
        self.checked_mul(rhs)
    }
    fn div(self, rhs: Self) -> Option<Self> {
        self.checked_div(rhs)
    }
    fn rem(self, rhs: Self) -> Option<Self> {
        self.checked_rem(rhs)
    }
}

/// The operation that failed, with its operands, kept until the formula is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Failed {
    op: char,
    lhs: u128,
    rhs: u128,
    problem: Problem,
}

impl Failed {
    fn of<T: Int>(op: char, lhs: T, rhs: T) -> Self {
        let problem = match op {
            '−' => Problem::Negative,
            '/' | '%' => Problem::DividesByZero,
            _ => Problem::Overflows(T::BITS),
        };
        Failed {
            op,
            lhs: lhs.wide(),
            rhs: rhs.wide(),
            problem,
        }
    }

    /// The error, naming `formula` and the step's operands.
    #[must_use]
    pub fn named(self, formula: &str) -> Overflow {
        Overflow {
            formula: formula.to_owned(),
            numbers: format!("{} {} {}", self.lhs, self.op, self.rhs),
            problem: self.problem,
        }
    }
}

fn step<T: Int>(op: char, a: T, b: T, f: fn(T, T) -> Option<T>) -> Result<T, Failed> {
    f(a, b).ok_or_else(|| Failed::of(op, a, b))
}

/// `a + b`, or an error naming `formula` and both values.
pub fn add<T: Int>(formula: &str, a: T, b: T) -> Result<T, Overflow> {
    step('+', a, b, T::add).map_err(|e| e.named(formula))
}

/// `a − b`, or an error (the result would be negative).
pub fn sub<T: Int>(formula: &str, a: T, b: T) -> Result<T, Overflow> {
    step('−', a, b, T::sub).map_err(|e| e.named(formula))
}

/// `a · b`, or an error naming `formula` and both values.
pub fn mul<T: Int>(formula: &str, a: T, b: T) -> Result<T, Overflow> {
    step('·', a, b, T::mul).map_err(|e| e.named(formula))
}

/// `a / b` (rounded down), or an error when `b` is zero.
pub fn div<T: Int>(formula: &str, a: T, b: T) -> Result<T, Overflow> {
    step('/', a, b, T::div).map_err(|e| e.named(formula))
}

/// `a mod b`, or an error when `b` is zero.
pub fn rem<T: Int>(formula: &str, a: T, b: T) -> Result<T, Overflow> {
    step('%', a, b, T::rem).map_err(|e| e.named(formula))
}

/// `⌈a / b⌉`, or an error when `b` is zero.
pub fn div_ceil<T: Int>(formula: &str, a: T, b: T) -> Result<T, Overflow> {
    let q = div(formula, a, b)?;
    let r = rem(formula, a, b)?;
    let zero = sub(formula, b, b)?;
    if r == zero {
        Ok(q)
    } else {
        // q < a / b + 1 ≤ T::MAX whenever b ≥ 2 (r ≠ 0 implies b ≥ 2).
        let one = div(formula, b, b)?;
        add(formula, q, one)
    }
}

/// The product of `factors` (1 when empty), or an error naming `formula` and the step.
pub fn product<T: Int + From<u8>>(
    formula: &str,
    factors: impl IntoIterator<Item = T>,
) -> Result<T, Overflow> {
    factors
        .into_iter()
        .try_fold(T::from(1), |acc, f| step('·', acc, f, T::mul))
        .map_err(|e| e.named(formula))
}

/// The sum of `terms` (0 when empty), or an error naming `formula` and the step.
pub fn sum<T: Int + From<u8>>(
    formula: &str,
    terms: impl IntoIterator<Item = T>,
) -> Result<T, Overflow> {
    terms
        .into_iter()
        .try_fold(T::from(0), |acc, t| step('+', acc, t, T::add))
        .map_err(|e| e.named(formula))
}

/// `a · b` of two `u64`, exact in 128 bits (it cannot overflow: (2^64 − 1)^2 < 2^128); for a
/// message that states what an overflowing 64-bit product would have been.
#[must_use]
pub fn wide_mul(a: u64, b: u64) -> u128 {
    u128::from(a).wrapping_mul(u128::from(b))
}

/// `a + b` of two `u64`, exact in 128 bits (it cannot overflow).
#[must_use]
pub fn wide_add(a: u64, b: u64) -> u128 {
    u128::from(a).wrapping_add(u128::from(b))
}

/// A `u128` (FLOPs, byte products) as `u64`, or an error naming `formula`.
pub fn to_u64(formula: &str, v: u128) -> Result<u64, Overflow> {
    u64::try_from(v).map_err(|_| Overflow {
        formula: formula.to_owned(),
        numbers: v.to_string(),
        problem: Problem::Overflows(64),
    })
}

/// A `u64` (a count, a degree) as `usize`, for an index or a length, or an error naming
/// `formula` (on targets whose `usize` is narrower than 64 bits).
pub fn to_usize(formula: &str, v: u64) -> Result<usize, Overflow> {
    usize::try_from(v).map_err(|_| Overflow {
        formula: formula.to_owned(),
        numbers: v.to_string(),
        problem: Problem::Overflows(usize::BITS),
    })
}

/// An expression in progress: its value so far, or the first step that failed.
///
/// Operators take another `Checked` or a plain value of the same type, so an expression reads
/// as the formula it computes; [`Checked::get`] names the formula once, at the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use = "a checked expression does nothing until `get` names its formula"]
pub struct Checked<T>(Result<T, Failed>);

impl<T: Int> Checked<T> {
    /// Start an expression at `v`.
    pub fn new(v: T) -> Self {
        Checked(Ok(v))
    }

    /// The value, or the error naming `formula` and the step that failed.
    pub fn get(self, formula: &str) -> Result<T, Overflow> {
        self.0.map_err(|e| e.named(formula))
    }

    /// The value, if no step failed.
    #[must_use]
    pub fn ok(self) -> Option<T> {
        self.0.ok()
    }

    /// `⌈self / rhs⌉`.
    pub fn div_ceil(self, rhs: impl Into<Checked<T>>) -> Self {
        let rhs = rhs.into();
        match (self.0, rhs.0) {
            (Ok(a), Ok(b)) => Checked(div_ceil("", a, b).map_err(|_| Failed::of('/', a, b))),
            (Err(e), _) | (_, Err(e)) => Checked(Err(e)),
        }
    }

    fn then(self, rhs: Checked<T>, op: char, f: fn(T, T) -> Option<T>) -> Self {
        match (self.0, rhs.0) {
            (Ok(a), Ok(b)) => Checked(step(op, a, b, f)),
            (Err(e), _) | (_, Err(e)) => Checked(Err(e)),
        }
    }
}

impl<T: Int> From<T> for Checked<T> {
    fn from(v: T) -> Self {
        Checked(Ok(v))
    }
}

macro_rules! operator {
    ($trait:ident, $method:ident, $op:literal, $f:path) => {
        impl<T: Int, R: Into<Checked<T>>> $trait<R> for Checked<T> {
            type Output = Checked<T>;
            fn $method(self, rhs: R) -> Checked<T> {
                self.then(rhs.into(), $op, $f)
            }
        }
    };
}
operator!(Add, add, '+', Int::add);
operator!(Sub, sub, '−', Int::sub);
operator!(Mul, mul, '·', Int::mul);
operator!(Div, div, '/', Int::div);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_step_names_formula_and_values() {
        assert_eq!(mul("b·s", 3u64, 4).unwrap(), 12);
        let e = mul("b·s", u64::MAX, 2).unwrap_err();
        assert_eq!(
            e.to_string(),
            "`b·s` overflows 64 bits (with values: 18446744073709551615 · 2)"
        );
        let e = sub("t0 − 1", 0u64, 1).unwrap_err();
        assert_eq!(e.to_string(), "`t0 − 1` is negative (with values: 0 − 1)");
        let e = div("d / n_h", 64u64, 0).unwrap_err();
        assert_eq!(
            e.to_string(),
            "`d / n_h` divides by zero (with values: 64 / 0)"
        );
        let e = add("FLOPs", u128::MAX, 1).unwrap_err();
        assert!(e.to_string().contains("overflows 128 bits"), "{e}");
    }

    #[test]
    fn expressions_carry_the_first_failure() {
        let v = (Checked::new(2u64) * 3u64 + 4u64).get("2·3 + 4").unwrap();
        assert_eq!(v, 10);
        // The product fails; the later `+ 1` and `/ 0` do not replace its operands.
        let e = (Checked::new(u64::MAX) * 2u64 + 1u64) / 0u64;
        let e = e.get("x·2 + 1").unwrap_err();
        assert_eq!(
            e.to_string(),
            "`x·2 + 1` overflows 64 bits (with values: 18446744073709551615 · 2)"
        );
        assert_eq!(Checked::new(7u64).div_ceil(2u64).ok(), Some(4));
        assert_eq!(Checked::new(8u64).div_ceil(2u64).ok(), Some(4));
        assert_eq!(Checked::new(u64::MAX).div_ceil(2u64).ok(), Some(1 << 63));
        assert!(Checked::new(8u64).div_ceil(0u64).ok().is_none());
    }

    #[test]
    fn folds() {
        assert_eq!(product("n", [2u64, 3, 4]).unwrap(), 24);
        assert_eq!(sum("n", [2u128, 3, 4]).unwrap(), 9);
        assert_eq!(product::<u64>("n", []).unwrap(), 1);
        assert!(product("n", [1u64 << 32, 1 << 32]).is_err());
        assert_eq!(to_u64("f", 5).unwrap(), 5);
        assert_eq!(wide_mul(u64::MAX, u64::MAX), u128::from(u64::MAX).pow(2));
        assert_eq!(wide_add(u64::MAX, u64::MAX), 2 * u128::from(u64::MAX));
        assert!(to_u64("f", u128::from(u64::MAX) + 1).is_err());
        assert_eq!(div_ceil("c", 0u64, 3).unwrap(), 0);
        assert_eq!(div_ceil("c", u64::MAX, 1).unwrap(), u64::MAX);
    }
}
