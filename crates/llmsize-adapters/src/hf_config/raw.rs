//! Typed, strict access to the keys of a `config.json`.
//!
//! `RawConfig` never invents a value silently: a key that is absent either is an error
//! (sizes the count cannot do without) or takes the default of the `transformers`
//! configuration class, recorded as an [`Assumption`] that every output shows.

use llmsize_core::expr::Sym;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use llmsize_core::Overflow;
use llmsize_core::checked;
use llmsize_core::limits::MAX_LAYERS;
use llmsize_core::spec::Assumption;
use serde_json::{Map, Value};

use super::runs::Runs;
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
    /// Where `map` sits in the file (`vision_config.`; empty at the top): messages name a
    /// key by its whole path, as the user wrote it.
    pub(crate) prefix: String,
    /// The first key looked up that holds `NaN` or `Infinity` (its path and literal), shared
    /// with the readers of the sub-configs.
    pub(crate) non_finite: Rc<RefCell<Option<(String, &'static str)>>>,
    /// Per-layer lists a family derives where the config has none, as runs.
    pub(crate) derived: Derived,
}

/// Per-layer lists a family's `__post_init__` derives where the config has none (which
/// layers slide, which are dense), held as runs: the block reads them in place of
/// `layer_types` and of its dense rule, so a derived list is never one JSON value per layer.
#[derive(Debug, Default, Clone)]
pub(crate) struct Derived {
    /// Which layers slide (`sliding_attention`), where `layer_types` is absent.
    pub sliding: Option<Runs<bool>>,
    /// Which layers are dense, beside the block's own dense rule.
    pub dense: Option<Runs<bool>>,
}

/// Keys that count layers in some configuration class: of a text stack, an encoder or
/// decoder, a vision, audio or projector tower, MTP modules, loops over a stack. Every integer
/// read goes through [`RawConfig::uint`] or [`RawConfig::size_opt`], which bound these by
/// [`MAX_LAYERS`], so no reader of any family can be handed a larger count.
const LAYER_COUNT_KEYS: &[&str] = &[
    "aligner_num_add_layers",
    "decoder_layers",
    "decoder_num_layers",
    "depth",
    "depths",
    "encoder_layers",
    "layers",
    "loop_num_passes",
    "loops",
    "max_window_layers",
    "mem_blocks",
    "n_input_layers",
    "n_layer",
    "n_layers",
    "n_layers_per_attn_res_block",
    "n_output_layers",
    "n_recurrent_layers",
    "n_recurrent_loops",
    "num_blocks",
    "num_decoder_layers",
    "num_dense_layers",
    "num_encoder_layers",
    "num_global_layers",
    "num_hidden_layers",
    "num_kv_shared_layers",
    "num_layers",
    "num_layers_per_stack",
    "num_lstm_layers",
    "num_mem_blocks",
    "num_mtp_layers",
    "num_nextn_predict_layers",
    "num_passes",
    "num_res_blocks",
    "num_residual_layers",
    "resampler_depth",
];

/// The keys whose integers count layers, each bounded by [`MAX_LAYERS`] wherever it is read.
#[must_use]
pub fn layer_count_keys() -> &'static [&'static str] {
    LAYER_COUNT_KEYS
}

/// True when `key` (or the last part of a dotted path) counts layers.
pub(crate) fn is_layer_count(key: &str) -> bool {
    let last = key.rsplit('.').next().unwrap_or(key);
    LAYER_COUNT_KEYS.binary_search(&last).is_ok()
}

/// The text that stands for Python's `NaN`, `Infinity` and `-Infinity` in a parsed config
/// (JSON has no such numbers); [`non_finite`] reads it back. Typed accessors find a string
/// where they want a number and name the key; a reader that reads a key holding one
/// fails at the end ([`RawConfig::non_finite_read`]); keys nobody reads (Mamba-2's
/// `time_step_limit`) never matter.
pub(crate) const NON_FINITE_PREFIX: &str = "\u{0}llmsize:non-finite:";

/// The Python literal a parsed value stands for, when it is one of the non-finite sentinels.
pub(crate) fn non_finite(v: &Value) -> Option<&'static str> {
    let rest = v.as_str()?.strip_prefix(NON_FINITE_PREFIX)?;
    ["-Infinity", "Infinity", "NaN"]
        .into_iter()
        .find(|w| *w == rest)
}

/// An overflow in the sizes of `file`, as its error.
pub(crate) fn overflow(file: &str, e: Overflow) -> ConfigError {
    ConfigError::Spec {
        file: file.to_owned(),
        source: llmsize_core::SpecError::Overflow(e),
    }
}

pub(crate) fn describe(v: &Value) -> String {
    if let Some(literal) = non_finite(v) {
        return format!("`{literal}`");
    }
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
            prefix: String::new(),
            non_finite: Rc::default(),
            derived: Derived::default(),
        }
    }

    /// A reader of the sub-config `map` found under `key` (`vision_config`): its messages
    /// name keys as `key.inner`.
    pub(crate) fn nested<'b>(&self, key: &str, map: &'b Map<String, Value>) -> RawConfig<'b>
    where
        'a: 'b,
    {
        RawConfig {
            prefix: format!("{}{key}.", self.prefix),
            ..self.sibling(map)
        }
    }

    /// A reader of `map` at this reader's place in the file (a copy of its map with keys
    /// derived by a family's `__post_init__` written in).
    pub(crate) fn sibling<'b>(&self, map: &'b Map<String, Value>) -> RawConfig<'b>
    where
        'a: 'b,
    {
        RawConfig {
            file: self.file,
            map,
            assumptions: Vec::new(),
            sources: BTreeMap::new(),
            read: RefCell::new(BTreeSet::new()),
            prefix: self.prefix.clone(),
            non_finite: Rc::clone(&self.non_finite),
            derived: Derived::default(),
        }
    }

    /// `key` as the user wrote it: with the path of the sub-config it is in.
    pub(crate) fn path(&self, key: &str) -> String {
        format!("{}{key}", self.prefix)
    }

    /// The value of `key`, treating JSON `null` as absent.
    pub(crate) fn value(&self, key: &str) -> Option<&'a Value> {
        self.read.borrow_mut().insert(key.to_owned());
        let v = self.map.get(key).filter(|v| !v.is_null());
        if let Some(found) = v.and_then(non_finite) {
            self.non_finite
                .borrow_mut()
                .get_or_insert_with(|| (self.path(key), found));
        }
        v
    }

    /// The first key read that holds `NaN` or `Infinity`, as an error; readers that take a
    /// value of the wrong type as absent would otherwise read it so.
    pub(crate) fn non_finite_read(&self) -> Result<(), ConfigError> {
        match self.non_finite.borrow().as_ref() {
            Some((key, found)) => Err(ConfigError::Invalid {
                file: self.file.to_owned(),
                key: key.clone(),
                found: format!("`{found}`"),
                expected: "a finite number (transformers cannot build a model from it either)"
                    .to_owned(),
            }),
            None => Ok(()),
        }
    }

    /// True if the key is present (even as `null`).
    pub(crate) fn has(&self, key: &str) -> bool {
        self.read.borrow_mut().insert(key.to_owned());
        self.map.contains_key(key)
    }

    pub(crate) fn invalid(&self, key: &str, found: &Value, expected: &str) -> ConfigError {
        ConfigError::Invalid {
            file: self.file.to_owned(),
            key: self.path(key),
            found: describe(found),
            expected: expected.to_owned(),
        }
    }

    pub(crate) fn missing(&self, key: &str, expected: &str) -> ConfigError {
        ConfigError::Missing {
            file: self.file.to_owned(),
            key: self.path(key),
            expected: expected.to_owned(),
        }
    }

    /// A non-negative integer, if present (a layer count at most [`MAX_LAYERS`]).
    pub(crate) fn uint(&self, key: &str) -> Result<Option<u64>, ConfigError> {
        match self.value(key) {
            None => Ok(None),
            Some(v) => match v.as_u64() {
                Some(n) => self.bounded(key, n).map(Some),
                None => Err(self.invalid(key, v, "a non-negative integer")),
            },
        }
    }

    /// A positive integer, if present (0 is an error: sizes are never zero; a layer count
    /// is at most [`MAX_LAYERS`]).
    pub(crate) fn size_opt(&self, key: &str) -> Result<Option<u64>, ConfigError> {
        match self.value(key) {
            None => Ok(None),
            Some(v) => match v.as_u64() {
                Some(n) if n > 0 => self.bounded(key, n).map(Some),
                _ => Err(self.invalid(key, v, "a positive integer")),
            },
        }
    }

    /// `n` read from `key`, refused past [`MAX_LAYERS`] when `key` counts layers.
    fn bounded(&self, key: &str, n: u64) -> Result<u64, ConfigError> {
        if is_layer_count(key) {
            self.bound_layers(key, n)
        } else {
            Ok(n)
        }
    }

    /// A layer count read from `key`, if at most [`MAX_LAYERS`]: the one bound every stack,
    /// tower, projector and MTP count meets.
    pub(crate) fn bound_layers(&self, key: &str, n: u64) -> Result<u64, ConfigError> {
        if n > MAX_LAYERS {
            let bound = llmsize_core::units::thousands(MAX_LAYERS);
            return Err(self.invalid(
                key,
                &Value::from(n),
                &format!("at most {bound} layers (llmsize's bound on one stack or tower)"),
            ));
        }
        Ok(n)
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
        let what = format!("{hidden_key} / {heads_key}");
        self.source(Sym::HeadDim, &what);
        self.div(hidden, heads, &what)
    }

    /// `a·b`, or an error naming `what` (the keys, `hidden_size·num_attention_heads`) and
    /// both values when it overflows.
    pub(crate) fn mul(&self, a: u64, b: u64, what: &str) -> Result<u64, ConfigError> {
        self.check(checked::mul(what, a, b))
    }

    /// `a / b` rounded down, or an error naming `what` when `b` is 0.
    pub(crate) fn div(&self, a: u64, b: u64, what: &str) -> Result<u64, ConfigError> {
        self.check(checked::div(what, a, b))
    }

    /// The result of a checked step ([`llmsize_core::checked`]), its overflow an error of
    /// this file.
    /// In a sub-config the formula says where its keys are (`vision_config: patch_size²`).
    pub(crate) fn check<T>(&self, r: Result<T, Overflow>) -> Result<T, ConfigError> {
        r.map_err(|mut e| {
            if let Some(sub) = self.prefix.strip_suffix('.') {
                e.formula = format!("{sub}: {}", e.formula);
            }
            overflow(self.file, e)
        })
    }

    /// A layer count as `usize`, for the per-layer patterns a reader walks (window patterns,
    /// `layer_types`); the spec itself holds runs, whatever the count.
    pub(crate) fn layer_count(&self, key: &str, n: u64) -> Result<usize, ConfigError> {
        let n = self.bound_layers(key, n)?;
        usize::try_from(n).map_err(|_| self.invalid(key, &Value::from(n), "a layer count"))
    }
}
