//! The vocabulary every tower file writes in: a builder of model-level [`Extra`]s (linear
//! layers with their biases, norms, tables, per-layer copies) and access to the nested
//! sub-configs (`vision_config`, `qformer_config`, …) with their classes' defaults.

use std::borrow::Cow;

use llmsize_core::Category;
use llmsize_core::expr::{Expr, Sym};
use llmsize_core::spec::Extra;
use serde_json::{Map, Value};

use crate::error::ConfigError;
use crate::hf_config::family::{Reader, Switch};
use crate::hf_config::raw::{RawConfig, is_layer_count};

/// A named width of a tower (`d_vis`, `d_ff_vis`, …) with its value.
pub(crate) fn sym(name: &'static str, value: u64) -> Expr {
    Expr::sym(Sym::Named(name), value)
}

/// A literal.
pub(crate) fn lit(value: u64) -> Expr {
    Expr::Lit(value)
}

/// `a·b`.
pub(crate) fn mul(a: Expr, b: Expr) -> Expr {
    Expr::product(vec![a, b])
}

/// The tensors of a tower or projector, in one category, each `copies` times (1 for the
/// embeddings, `L_vis` for the layers of an encoder).
pub(crate) struct Parts {
    /// `Vision` or `Audio`.
    pub category: Category,
    /// What is built so far.
    pub out: Vec<Extra>,
}

impl Parts {
    /// No tensors yet.
    pub(crate) fn new(category: Category) -> Self {
        Parts {
            category,
            out: Vec::new(),
        }
    }

    fn push(&mut self, e: Extra, copies: &Expr) {
        self.out.push(if *copies == Expr::Lit(1) {
            e
        } else {
            e.times(copies.clone())
        });
    }

    /// A linear layer `input → output`, with a bias of `output` when `bias`.
    pub(crate) fn linear(
        &mut self,
        name: impl Into<Cow<'static, str>>,
        part: &'static str,
        (input, output): (Expr, Expr),
        bias: bool,
        copies: &Expr,
    ) {
        let name: Cow<'static, str> = name.into();
        if bias {
            let b = Extra::vector(format!("{name}.bias"), part, self.category, output.clone());
            let w = Extra::linear(format!("{name}.weight"), part, self.category, input, output);
            self.push(w, copies);
            self.push(b, copies);
        } else {
            let w = Extra::linear(format!("{name}.weight"), part, self.category, input, output);
            self.push(w, copies);
        }
    }

    /// A norm over `dim`: weight, and a bias when `bias` (`LayerNorm`).
    pub(crate) fn norm(
        &mut self,
        name: impl Into<Cow<'static, str>>,
        part: &'static str,
        dim: &Expr,
        bias: bool,
        copies: &Expr,
    ) {
        let name: Cow<'static, str> = name.into();
        let w = Extra::vector(format!("{name}.weight"), part, self.category, dim.clone());
        self.push(w, copies);
        if bias {
            let b = Extra::vector(format!("{name}.bias"), part, self.category, dim.clone());
            self.push(b, copies);
        }
    }

    /// A vector (a class token, a learned scale).
    pub(crate) fn vector(
        &mut self,
        name: impl Into<Cow<'static, str>>,
        part: &'static str,
        len: Expr,
        copies: &Expr,
    ) {
        let e = Extra::vector(name, part, self.category, len);
        self.push(e, copies);
    }

    /// A table no token multiplies by (positions, a convolution kernel, learned queries).
    pub(crate) fn table(
        &mut self,
        name: impl Into<Cow<'static, str>>,
        part: &'static str,
        (rows, cols): (Expr, Expr),
        copies: &Expr,
    ) {
        let e = Extra::table(name, part, self.category, rows, cols);
        self.push(e, copies);
    }

    /// A convolution `in → out` with a `k` kernel (`k` = the product of its sides): as a
    /// linear of `in·k → out` (each output position is one), with its bias.
    pub(crate) fn conv(
        &mut self,
        name: impl Into<Cow<'static, str>>,
        part: &'static str,
        (input, kernel, output): (Expr, Expr, Expr),
        bias: bool,
        copies: &Expr,
    ) {
        self.linear(name, part, (mul(input, kernel), output), bias, copies);
    }
}

/// A sub-config's reader: its keys with the defaults of `class`.
pub(crate) struct Sub<'r, 'a> {
    pub r: Reader<'r, 'a>,
}

impl Sub<'_, '_> {
    fn reason(&self) -> String {
        format!("absent; `{}` default", self.r.class)
    }

    /// `a·b`, or an error naming `what` (this sub-config's keys) when it overflows.
    pub(crate) fn mul(&self, a: u64, b: u64, what: &str) -> Result<u64, ConfigError> {
        self.r.raw.mul(a, b, what)
    }

    /// The result of a checked formula on this sub-config's keys.
    pub(crate) fn check<T>(&self, r: Result<T, llmsize_core::Overflow>) -> Result<T, ConfigError> {
        self.r.raw.check(r)
    }

    /// A positive size, `default` when absent.
    pub(crate) fn size(&mut self, key: &'static str, default: u64) -> Result<u64, ConfigError> {
        let reason = self.reason();
        self.r
            .raw
            .size_or(&[key], Sym::Named(key), default, &reason)
    }

    /// A positive size if present.
    pub(crate) fn size_opt(&mut self, key: &'static str) -> Result<Option<u64>, ConfigError> {
        self.r.raw.size_opt(key)
    }

    /// A count that may be 0, `default` when absent.
    pub(crate) fn count(&mut self, key: &'static str, default: u64) -> Result<u64, ConfigError> {
        if let Some(n) = self.r.raw.uint(key)? {
            return Ok(n);
        }
        let reason = self.reason();
        self.r.raw.assume(key, default, &reason);
        Ok(default)
    }

    /// A boolean, `default` when absent.
    pub(crate) fn flag(&mut self, key: &'static str, default: bool) -> Result<bool, ConfigError> {
        self.r.switch(Switch::Key(key, default))
    }

    /// A string, `default` when absent.
    pub(crate) fn string(
        &mut self,
        key: &'static str,
        default: &'static str,
    ) -> Result<String, ConfigError> {
        match self.r.raw.value(key) {
            None => {
                let reason = self.reason();
                self.r.raw.assume(key, default, &reason);
                Ok(default.to_owned())
            }
            Some(Value::String(s)) => Ok(s.clone()),
            Some(v) => Err(self.r.raw.invalid(key, v, "a string")),
        }
    }

    /// A side given as one integer or a pair (`image_size: [448, 448]`), `default` when
    /// absent: `(height, width)`.
    pub(crate) fn pair(
        &mut self,
        key: &'static str,
        default: u64,
    ) -> Result<(u64, u64), ConfigError> {
        if let Some(Value::Array(a)) = self.r.raw.value(key) {
            if let [h, w] = a.as_slice()
                && let (Some(h), Some(w)) = (h.as_u64(), w.as_u64())
                && h > 0
                && w > 0
            {
                return Ok((h, w));
            }
            let v = Value::Array(a.clone());
            return Err(self.r.raw.invalid(key, &v, "two positive integers"));
        }
        let n = self.size(key, default)?;
        Ok((n, n))
    }

    /// A float, `default` when absent.
    pub(crate) fn float(&mut self, key: &'static str, default: f64) -> Result<f64, ConfigError> {
        match self.r.raw.value(key) {
            None => {
                let reason = self.reason();
                self.r.raw.assume(key, default, &reason);
                Ok(default)
            }
            Some(v) => v
                .as_f64()
                .filter(|x| x.is_finite())
                .ok_or_else(|| self.r.raw.invalid(key, v, "a number")),
        }
    }

    /// The length of a list (`vision_feature_layer` given as layers), 1 for a single value.
    pub(crate) fn list_len_or_one(&mut self, key: &'static str) -> Result<u64, ConfigError> {
        match self.r.raw.value(key) {
            Some(Value::Array(a)) if a.is_empty() => Err(self.r.raw.invalid(
                key,
                &Value::Array(Vec::new()),
                "a non-empty list of layers",
            )),
            Some(Value::Array(a)) => Ok(a.len() as u64),
            _ => Ok(1),
        }
    }

    /// The sizes of a list of integers (`depths`, `embed_dim`), or `default` when absent.
    pub(crate) fn list(
        &mut self,
        key: &'static str,
        default: &[u64],
    ) -> Result<Vec<u64>, ConfigError> {
        match self.r.raw.value(key) {
            None => {
                let reason = self.reason();
                self.r.raw.assume(key, format!("{default:?}"), &reason);
                Ok(default.to_vec())
            }
            // Each entry of a list of layer counts (`depths`) is bounded as one count is.
            Some(Value::Array(a)) => a
                .iter()
                .map(|x| {
                    let n = x.as_u64().ok_or_else(|| {
                        self.r
                            .raw
                            .invalid(key, x, "a list of non-negative integers")
                    })?;
                    if is_layer_count(key) {
                        self.r.raw.bound_layers(key, n)
                    } else {
                        Ok(n)
                    }
                })
                .collect(),
            Some(v) => Err(self
                .r
                .raw
                .invalid(key, v, "a list of non-negative integers")),
        }
    }
}

/// The object under `key`, or an error naming it.
pub(crate) fn object<'a>(
    raw: &RawConfig<'a>,
    key: &str,
) -> Result<&'a Map<String, Value>, ConfigError> {
    let v = raw
        .value(key)
        .ok_or_else(|| raw.missing(key, "an object holding the sub-model's config"))?;
    v.as_object()
        .ok_or_else(|| raw.invalid(key, v, "an object holding the sub-model's config"))
}

/// The `model_type` of the sub-config under `key`, `default` when it names none.
pub(crate) fn sub_type<'a>(
    raw: &RawConfig<'a>,
    key: &str,
    default: &'a str,
) -> Result<&'a str, ConfigError> {
    let map = object(raw, key)?;
    match map.get("model_type") {
        Some(Value::String(s)) => Ok(s.as_str()),
        Some(Value::Null) | None => Ok(default),
        Some(v) => Err(raw.invalid(&format!("{key}.model_type"), v, "a string")),
    }
}

/// Run `f` on the sub-config under `key` read with `class`'s defaults; its assumptions and
/// symbol sources join the parent's, prefixed with `key.`.
pub(crate) fn with_sub<'a, T>(
    raw: &mut RawConfig<'a>,
    key: &str,
    class: &'static str,
    f: impl FnOnce(&mut Sub<'_, 'a>) -> Result<T, ConfigError>,
) -> Result<T, ConfigError> {
    let map = object(raw, key)?;
    let mut inner = raw.nested(key, map);
    let out = {
        let mut sub = Sub {
            r: Reader {
                raw: &mut inner,
                class,
            },
        };
        f(&mut sub)?
    };
    for a in inner.assumptions {
        raw.assume(&format!("{key}.{}", a.field), a.value, &a.reason);
    }
    for (symbol, source) in inner.sources {
        if let Sym::Named(_) = symbol {
            continue;
        }
        raw.source(symbol, &format!("{key}.{source}"));
    }
    Ok(out)
}

/// Run `f` on the top-level config itself, read with `class`'s defaults.
pub(crate) fn with_top<'a, T>(
    raw: &mut RawConfig<'a>,
    class: &'static str,
    f: impl FnOnce(&mut Sub<'_, 'a>) -> Result<T, ConfigError>,
) -> Result<T, ConfigError> {
    let mut sub = Sub {
        r: Reader { raw, class },
    };
    f(&mut sub)
}
