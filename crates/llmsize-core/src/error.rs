//! Typed errors of the core: arithmetic overflow and invalid model descriptions.

use crate::expr::Expr;

/// A formula on input-derived integers that has no exact value in its type: it overflows, goes
/// below zero or divides by zero (see [`crate::checked`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{formula}` {problem} (with values: {numbers})")]
pub struct Overflow {
    /// The formula, with symbols.
    pub formula: String,
    /// The formula (or its failing step), with numbers.
    pub numbers: String,
    /// What went wrong.
    pub problem: Problem,
}

/// Why a checked formula has no value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Problem {
    /// The result does not fit in this many bits.
    Overflows(u32),
    /// A difference would be negative.
    Negative,
    /// A divisor is zero.
    DividesByZero,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Problem::Overflows(bits) => write!(f, "overflows {bits} bits"),
            Problem::Negative => f.write_str("is negative"),
            Problem::DividesByZero => f.write_str("divides by zero"),
        }
    }
}

impl Overflow {
    pub(crate) fn new(expr: &Expr) -> Self {
        Overflow {
            formula: expr.symbolic(),
            numbers: expr.numeric(),
            problem: Problem::Overflows(64),
        }
    }
}

/// A floating-point figure (a time, a rate, a cost) that is not a finite number: the inputs
/// make it infinite or undefined, and printing it would be a made-up figure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the {what} `{formula}` = {numbers} is not a finite number of {unit}")]
pub struct NotFinite {
    /// What the figure is (`cost`, `wall time`).
    pub what: &'static str,
    /// Its formula, with symbols.
    pub formula: &'static str,
    /// The formula with the values put in.
    pub numbers: String,
    /// Its unit (`dollars`, `seconds`).
    pub unit: &'static str,
}

impl NotFinite {
    /// `v` when it is a finite number, else the error naming the figure, its formula and the
    /// values (`numbers` is only built then).
    pub fn check(
        v: f64,
        (what, formula, unit): (&'static str, &'static str, &'static str),
        numbers: impl FnOnce() -> String,
    ) -> Result<f64, NotFinite> {
        if v.is_finite() {
            Ok(v)
        } else {
            Err(NotFinite {
                what,
                formula,
                numbers: numbers(),
                unit,
            })
        }
    }
}

/// A model description that cannot be counted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SpecError {
    /// A size that must be positive is zero.
    #[error("`{field}` must be a positive integer, found 0")]
    Zero {
        /// The field, as the user knows it (the config key or flag).
        field: String,
    },
    /// The attention heads do not divide the hidden size and no explicit head size was given.
    #[error(
        "`{heads_field}` = {heads} does not divide `{hidden_field}` = {hidden}: the head size must be whole (model types that read `head_dim` accept it explicitly)"
    )]
    HeadsDoNotDivide {
        /// The heads field name.
        heads_field: String,
        /// Number of heads.
        heads: u64,
        /// The hidden-size field name.
        hidden_field: String,
        /// Hidden size.
        hidden: u64,
    },
    /// Query heads are not a multiple of key/value heads (GQA needs whole groups).
    #[error(
        "`num_attention_heads` = {heads} is not a multiple of `num_key_value_heads` = {kv_heads}"
    )]
    KvHeadsDoNotDivide {
        /// Query heads.
        heads: u64,
        /// Key/value heads.
        kv_heads: u64,
    },
    /// A field holds a value outside its valid range.
    #[error("`{field}` = {found} is invalid: expected {expected}")]
    Invalid {
        /// The field.
        field: String,
        /// What was found.
        found: String,
        /// What was expected.
        expected: String,
    },
    /// A stack changes layer kind more often than a training step walks.
    #[error(
        "a stack of {layers} layers changes layer kind {runs} times: a training step walks at most {max} runs of one kind (the config's layer count and its layer pattern make them)"
    )]
    TooManyRuns {
        /// Layers of the stack.
        layers: String,
        /// Its runs of one kind.
        runs: String,
        /// The bound.
        max: String,
    },
    /// The model type runs with something llmsize does not model, so this figure is refused.
    #[error(
        "`{model_type}`: {what}; its parameters are counted exactly, but memory and FLOPs would leave this out, so they are not answered"
    )]
    NotModelled {
        /// The model type.
        model_type: String,
        /// What is not modelled.
        what: String,
    },
    /// A count overflowed.
    #[error(transparent)]
    Overflow(#[from] Overflow),
    /// A time, rate or cost is not a finite number.
    #[error(transparent)]
    NotFinite(#[from] NotFinite),
    /// A size computed from the question (batch, length, model) overflows 64 bits.
    #[error("`{what}` overflows 64 bits: use a smaller batch, length or model")]
    TooLarge {
        /// What was being computed.
        what: String,
    },
}
