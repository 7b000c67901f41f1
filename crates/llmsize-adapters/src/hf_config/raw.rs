//! Typed, strict access to the keys of a `config.json`.
//!
//! `RawConfig` never invents a value silently: a key that is absent either is an error
//! (sizes the count cannot do without) or takes the default of the `transformers`
//! configuration class, recorded as an [`Assumption`] that every output shows.

use llmsize_core::expr::Sym;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

use llmsize_core::spec::Assumption;
use serde_json::{Map, Value};

use crate::error::ConfigError;

/// A parsed `config.json` with the file name for messages and the assumptions made so far.
#[derive(Debug)]
pub struct RawConfig<'a> {
    pub(crate) file: &'a str,
    pub(crate) map: &'a Map<String, Value>,
    /// Defaults filled in.
    pub(crate) assumptions: Vec<Assumption>,
    /// Formula symbol → the key its value came from.
    pub(crate) sources: BTreeMap<Sym, String>,
    /// Every key looked up, so `--set` of a key the family never reads can be reported.
    pub(crate) read: RefCell<BTreeSet<String>>,
}

pub(crate) fn describe(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 60 {
        format!("{}…", &s[..s.floor_char_boundary(60)])
    } else {
        s
    }
}

impl<'a> RawConfig<'a> {
    pub(crate) fn new(file: &'a str, map: &'a Map<String, Value>) -> Self {
        RawConfig {
            file,
            map,
            assumptions: Vec::new(),
            sources: BTreeMap::new(),
            read: RefCell::new(BTreeSet::new()),
        }
    }

    /// The value of `key`, treating JSON `null` as absent.
    pub(crate) fn value(&self, key: &str) -> Option<&'a Value> {
        self.read.borrow_mut().insert(key.to_owned());
        self.map.get(key).filter(|v| !v.is_null())
    }

    /// True if the key is present (even as `null`).
    pub(crate) fn has(&self, key: &str) -> bool {
        self.read.borrow_mut().insert(key.to_owned());
        self.map.contains_key(key)
    }

    pub(crate) fn invalid(&self, key: &str, found: &Value, expected: &str) -> ConfigError {
        ConfigError::Invalid {
            file: self.file.to_owned(),
            key: key.to_owned(),
            found: describe(found),
            expected: expected.to_owned(),
        }
    }

    pub(crate) fn missing(&self, key: &str, expected: &str) -> ConfigError {
        ConfigError::Missing {
            file: self.file.to_owned(),
            key: key.to_owned(),
            expected: expected.to_owned(),
        }
    }

    /// A non-negative integer, if present.
    pub(crate) fn uint(&self, key: &str) -> Result<Option<u64>, ConfigError> {
        match self.value(key) {
            None => Ok(None),
            Some(v) => match v.as_u64() {
                Some(n) => Ok(Some(n)),
                None => Err(self.invalid(key, v, "a non-negative integer")),
            },
        }
    }

    /// A positive integer, if present (0 is an error: sizes are never zero).
    pub(crate) fn size_opt(&self, key: &str) -> Result<Option<u64>, ConfigError> {
        match self.value(key) {
            None => Ok(None),
            Some(v) => match v.as_u64() {
                Some(n) if n > 0 => Ok(Some(n)),
                _ => Err(self.invalid(key, v, "a positive integer")),
            },
        }
    }

    /// The first present spelling of a required positive size; `symbol` records its source.
    pub(crate) fn size(&mut self, keys: &[&str], symbol: Sym) -> Result<u64, ConfigError> {
        for key in keys {
            if let Some(n) = self.size_opt(key)? {
                self.source(symbol, key);
                return Ok(n);
            }
        }
        Err(self.missing(&keys.join("` or `"), "a positive integer"))
    }

    /// A positive size with the configuration class's default when absent.
    pub(crate) fn size_or(
        &mut self,
        keys: &[&str],
        symbol: Sym,
        default: u64,
        reason: &str,
    ) -> Result<u64, ConfigError> {
        for key in keys {
            if let Some(n) = self.size_opt(key)? {
                self.source(symbol, key);
                return Ok(n);
            }
        }
        let key = keys.first().copied().unwrap_or_default();
        self.assume(key, default, reason);
        self.source(symbol, &format!("{key} (default)"));
        Ok(default)
    }

    /// A boolean with the configuration class's default when absent.
    pub(crate) fn flag_or(
        &mut self,
        key: &str,
        default: bool,
        reason: &str,
    ) -> Result<bool, ConfigError> {
        match self.value(key) {
            None => {
                self.assume(key, default, reason);
                Ok(default)
            }
            Some(Value::Bool(b)) => Ok(*b),
            Some(v) => Err(self.invalid(key, v, "`true` or `false`")),
        }
    }

    /// A boolean if present.
    pub(crate) fn flag(&self, key: &str) -> Result<Option<bool>, ConfigError> {
        match self.value(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(v) => Err(self.invalid(key, v, "`true` or `false`")),
        }
    }

    /// Record a filled-in value.
    #[allow(
        clippy::needless_pass_by_value,
        reason = "takes numbers, flags and strings alike"
    )]
    pub(crate) fn assume(&mut self, key: &str, value: impl ToString, reason: &str) {
        // Two switches read from one key (q/k/v and o biases) assume it once.
        if self.assumptions.iter().any(|a| a.field == key) {
            return;
        }
        self.assumptions.push(Assumption {
            field: key.to_owned(),
            value: value.to_string(),
            reason: reason.to_owned(),
        });
    }

    /// Record where a formula symbol's value came from.
    pub(crate) fn source(&mut self, symbol: Sym, key: &str) {
        self.sources.entry(symbol).or_insert_with(|| key.to_owned());
    }

    /// `head_dim` if given, else hidden / heads, which must divide.
    pub(crate) fn head_dim(
        &mut self,
        keys: &[&str],
        hidden: u64,
        hidden_key: &str,
        heads: u64,
        heads_key: &str,
    ) -> Result<u64, ConfigError> {
        for key in keys {
            if let Some(n) = self.size_opt(key)? {
                self.source(Sym::HeadDim, key);
                return Ok(n);
            }
        }
        self.derived_head_dim(hidden, hidden_key, heads, heads_key)
    }

    /// hidden / heads (the rule when the class has no `head_dim` field), which must divide.
    pub(crate) fn derived_head_dim(
        &mut self,
        hidden: u64,
        hidden_key: &str,
        heads: u64,
        heads_key: &str,
    ) -> Result<u64, ConfigError> {
        if !hidden.is_multiple_of(heads) {
            return Err(ConfigError::Spec {
                file: self.file.to_owned(),
                source: llmsize_core::SpecError::HeadsDoNotDivide {
                    heads_field: heads_key.to_owned(),
                    heads,
                    hidden_field: hidden_key.to_owned(),
                    hidden,
                },
            });
        }
        self.source(Sym::HeadDim, &format!("{hidden_key} / {heads_key}"));
        Ok(hidden / heads)
    }

    /// `checked_mul` with an error naming the keys when it overflows.
    pub(crate) fn mul(&self, a: u64, b: u64, what: &str) -> Result<u64, ConfigError> {
        a.checked_mul(b).ok_or_else(|| ConfigError::Spec {
            file: self.file.to_owned(),
            source: llmsize_core::SpecError::Invalid {
                field: what.to_owned(),
                found: format!("{a} × {b}, which overflows 64 bits"),
                expected: "sizes whose products fit in 64 bits".to_owned(),
            },
        })
    }

    /// A layer count as `usize`, for the per-layer patterns a reader walks (window patterns,
    /// `layer_types`); the spec itself holds runs, whatever the count.
    pub(crate) fn layer_count(&self, key: &str, n: u64) -> Result<usize, ConfigError> {
        use llmsize_core::design::MAX_LAYERS;
        if n > MAX_LAYERS {
            return Err(self.invalid(key, &Value::from(n), "at most 1,000,000 layers"));
        }
        usize::try_from(n).map_err(|_| self.invalid(key, &Value::from(n), "a layer count"))
    }
}
