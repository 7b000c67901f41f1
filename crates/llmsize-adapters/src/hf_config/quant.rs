//! `quantization_config` (and compressed-tensors' older `compression_config`) → the
//! [`Quantization`] a release ships, with the tensor kinds it converts.
//!
//! Each method follows the code that writes its files:
//! - `mxfp4` (transformers' `Mxfp4HfQuantizer`): only the MoE experts (`GptOssExperts`)
//!   become MXFP4 blocks; `modules_to_not_convert` and every other tensor stay as stored;
//! - `fp8` (`FineGrainedFP8Config`): every linear layer but `modules_to_not_convert`, E4M3
//!   with an fp32 `weight_scale_inv` per `weight_block_size` block (per tensor without one);
//!   `fbgemm_fp8`: per output channel, fp32 scales;
//! - `gptq`, `awq`: the linear layers of the decoder blocks, `bits` in groups of
//!   `group_size` (−1: per channel) with their `qweight`/`qzeros`/`scales`(/`g_idx`);
//! - `bitsandbytes`: every linear layer but `llm_int8_skip_modules` (default: the output
//!   head), NF4/FP4 with or without double quantization, or `LLM.int8()`;
//! - `compressed-tensors`: the `Linear` targets of `config_groups` (the output head too,
//!   unless `ignore`d), by the group's `weights` (`num_bits`, `type`, `strategy`,
//!   `group_size`, `symmetric`, `actorder`) and the `format`;
//! - `modelopt`: `quant_algo` `NVFP4` or `FP8`, but `exclude_modules`.
//!
//! Module lists are matched against each tensor's Hugging Face module path
//! ([`llmsize_core::quant::module_path`]) with the matcher of the tool that reads them:
//! transformers' `should_convert_module` (a regex from the start up to a module boundary, or
//! a suffix), compressed-tensors' (`re:` regexes from the start, else the exact name),
//! `ModelOpt`'s (shell globs). An unknown method is never silent: the weights are sized as
//! 16-bit and a warning says the method is not modelled.

use llmsize_core::ModelSpec;
use llmsize_core::formats::{Fp8Scales, IntPacking, KindSet, Quant, Scheme, WeightFormat};
use llmsize_core::layout::{TensorKind, tensors};
use llmsize_core::quant::{Quantization, module_path};
use regex::Regex;
use serde_json::{Map, Value};

use crate::error::ConfigError;
use crate::hf_config::raw::describe;

/// Layers of one tensor whose module paths are matched (a hostile config's million layers
/// are sampled by their runs' first layers beyond this).
const MATCH_LAYERS: u64 = 4096;

/// How a method matches its list of unconverted modules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Matching {
    /// transformers' `should_convert_module`.
    Transformers,
    /// compressed-tensors' `ignore`.
    CompressedTensors,
    /// `ModelOpt`'s `exclude_modules` (fnmatch).
    Glob,
}

/// One compiled entry of a module list.
struct Pattern {
    /// As written, for messages.
    text: String,
    /// The regex a module path must match in full.
    full: Option<Regex>,
    /// transformers also skips a module whose path ends with the entry.
    suffix: bool,
}

impl Pattern {
    fn new(text: &str, how: Matching) -> Pattern {
        let full = match how {
            // `re.match(rf"(?:{key}){boundary}", name)`: from the start, ending at a module
            // boundary (the end, a `.` next, or a key that ends with `.`).
            Matching::Transformers => {
                let tail = if text.ends_with('.') {
                    ".*"
                } else {
                    r"(?:\..*)?"
                };
                Regex::new(&format!("^(?:{text}){tail}$")).ok()
            }
            Matching::CompressedTensors => match text.strip_prefix("re:") {
                Some(re) => Regex::new(&format!("^(?:{re})")).ok(),
                None => Regex::new(&format!("^{}$", regex::escape(text))).ok(),
            },
            Matching::Glob => {
                let body: String = text
                    .chars()
                    .map(|c| match c {
                        '*' => ".*".to_owned(),
                        '?' => ".".to_owned(),
                        c => regex::escape(&c.to_string()),
                    })
                    .collect();
                Regex::new(&format!("^{body}$")).ok()
            }
        };
        Pattern {
            text: text.to_owned(),
            full,
            suffix: how == Matching::Transformers,
        }
    }

    fn matches(&self, path: &str) -> bool {
        self.full.as_ref().is_some_and(|r| r.is_match(path))
            || (self.suffix && path.ends_with(self.text.as_str()))
    }
}

/// Typed access to the keys of one quantization object, naming `quantization_config.key`
/// in messages.
struct Keys<'a> {
    file: &'a str,
    section: &'a str,
    map: &'a Map<String, Value>,
}

impl<'a> Keys<'a> {
    fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    fn invalid(&self, key: &str, v: &Value, expected: &str) -> ConfigError {
        ConfigError::Invalid {
            file: self.file.to_owned(),
            key: format!("{}.{key}", self.section),
            found: describe(v),
            expected: expected.to_owned(),
        }
    }

    fn str(&self, key: &str) -> Result<Option<&'a str>, ConfigError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(v) => Err(self.invalid(key, v, "a string")),
        }
    }

    fn bool(&self, key: &str, default: bool) -> Result<bool, ConfigError> {
        match self.get(key) {
            None => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(v) => Err(self.invalid(key, v, "true or false")),
        }
    }

    /// Bits of a quantized weight: one of `allowed`.
    fn bits(&self, key: &str, default: u8, allowed: &[u8]) -> Result<u8, ConfigError> {
        let Some(v) = self.get(key) else {
            return Ok(default);
        };
        v.as_u64()
            .and_then(|b| u8::try_from(b).ok())
            .filter(|b| allowed.contains(b))
            .ok_or_else(|| {
                let list: Vec<String> = allowed.iter().map(u8::to_string).collect();
                self.invalid(key, v, &format!("one of {}", list.join(", ")))
            })
    }

    /// A group size: a positive integer, or −1 (one group per output channel) → 0.
    fn group(&self, key: &str, default: u32) -> Result<u32, ConfigError> {
        let Some(v) = self.get(key) else {
            return Ok(default);
        };
        match v.as_i64() {
            Some(-1) => Ok(0),
            Some(g) if g > 0 => {
                u32::try_from(g).map_err(|_| self.invalid(key, v, "a group size below 2^32, or -1"))
            }
            _ => Err(self.invalid(key, v, "a positive group size, or -1 for per-channel")),
        }
    }

    /// A list of module names (a string counts as a list of one).
    fn list(&self, key: &str) -> Result<Vec<String>, ConfigError> {
        match self.get(key) {
            None => Ok(Vec::new()),
            Some(Value::String(s)) => Ok(vec![s.clone()]),
            Some(Value::Array(a)) => a
                .iter()
                .map(|x| match x {
                    Value::String(s) => Ok(s.clone()),
                    other => Err(self.invalid(key, other, "a list of module names")),
                })
                .collect(),
            Some(v) => Err(self.invalid(key, v, "a list of module names")),
        }
    }
}

/// The routed experts: all MXFP4 converts (transformers replaces `GptOssExperts` only).
fn experts() -> KindSet {
    [
        TensorKind::ExpertGate,
        TensorKind::ExpertUp,
        TensorKind::ExpertDown,
    ]
    .into_iter()
    .fold(KindSet::EMPTY, KindSet::with)
}

/// What one method's keys say.
struct Read {
    scheme: Option<Scheme>,
    /// Kinds the method converts before its skip list.
    kinds: KindSet,
    skipped: Vec<String>,
    matching: Matching,
    notes: Vec<String>,
}

/// Read the spec's quantization from the config, if it has one; warnings (an unknown
/// method, an approximation) go to `spec.warnings`.
pub(crate) fn read(
    map: &Map<String, Value>,
    spec: &mut ModelSpec,
    file: &str,
) -> Result<Option<Quantization>, ConfigError> {
    let (section, value) = match (
        map.get("quantization_config"),
        map.get("compression_config"),
    ) {
        (Some(v), _) if !v.is_null() => ("quantization_config", v),
        (_, Some(v)) if !v.is_null() => ("compression_config", v),
        _ => return Ok(None),
    };
    let Value::Object(q) = value else {
        return Err(ConfigError::Invalid {
            file: file.to_owned(),
            key: section.to_owned(),
            found: describe(value),
            expected: "an object".into(),
        });
    };
    let keys = Keys {
        file,
        section,
        map: q,
    };
    let method = match keys.str("quant_method")? {
        Some(m) => m.to_owned(),
        // compressed-tensors' `compression_config` and bitsandbytes' oldest configs omit it.
        None if q.contains_key("config_groups") => "compressed-tensors".to_owned(),
        None if q.contains_key("load_in_4bit") || q.contains_key("load_in_8bit") => {
            "bitsandbytes".to_owned()
        }
        None => {
            return Err(ConfigError::Missing {
                file: file.to_owned(),
                key: format!("{section}.quant_method"),
                expected: "the quantization method, e.g. `gptq`, `awq`, `fp8`, `mxfp4`".into(),
            });
        }
    };
    let block = KindSet::block_matrices();
    let r = match method.to_ascii_lowercase().as_str() {
        "mxfp4" => Read {
            scheme: Some(Scheme::Mxfp4),
            kinds: experts(),
            skipped: keys.list("modules_to_not_convert")?,
            matching: Matching::Transformers,
            notes: vec![
                "transformers' MXFP4 quantizer converts the experts (`GptOssExperts`) alone".into(),
            ],
        },
        "fp8" => fp8(&keys)?,
        "fbgemm_fp8" => Read {
            scheme: Some(Scheme::Fp8 {
                scales: Fp8Scales::Channel,
                scale_bytes: 4,
                input_scale: false,
            }),
            kinds: block,
            skipped: keys.list("modules_to_not_convert")?,
            matching: Matching::Transformers,
            notes: Vec::new(),
        },
        "gptq" => gptq(&keys)?,
        "awq" => awq(&keys)?,
        "bitsandbytes" | "bitsandbytes_4bit" | "bitsandbytes_8bit" => bitsandbytes(&keys, &method)?,
        "compressed-tensors" | "compressed_tensors" => compressed_tensors(&keys)?,
        "modelopt" => modelopt(&keys)?,
        _ => Read {
            scheme: None,
            kinds: block,
            skipped: Vec::new(),
            matching: Matching::Transformers,
            notes: Vec::new(),
        },
    };
    let Some(scheme) = r.scheme else {
        spec.warnings.push(format!(
            "`{section}`: the quantization method `{method}` is not modelled; the weights are sized as 16-bit (weight files, when present, are still measured as stored)"
        ));
        return Ok(Some(Quantization {
            method,
            format: None,
            skipped: r.skipped,
            notes: r.notes,
            mtp_layers: mtp_layers(map, spec, file)?,
        }));
    };
    let mut notes = r.notes;
    let kinds =
        resolve_kinds(spec, r.kinds, &r.skipped, r.matching, &mut notes).map_err(|source| {
            ConfigError::Spec {
                file: file.to_owned(),
                source,
            }
        })?;
    Ok(Some(Quantization {
        method,
        format: Some(WeightFormat::Quantized(Quant { scheme, kinds })),
        skipped: r.skipped,
        notes,
        mtp_layers: mtp_layers(map, spec, file)?,
    }))
}

/// DeepSeek-V3's multi-token-prediction layers, which its files hold and transformers does
/// not build (`DeepseekV3Model` makes `num_hidden_layers` layers).
fn mtp_layers(map: &Map<String, Value>, spec: &ModelSpec, file: &str) -> Result<u64, ConfigError> {
    if matches!(spec.model_type.as_str(), "deepseek_v3" | "kimi_k2") {
        let raw = super::raw::RawConfig::new(file, map);
        Ok(raw.uint("num_nextn_predict_layers")?.unwrap_or(0))
    } else {
        Ok(0)
    }
}

/// `fp8`: per-tensor scales, or `weight_block_size` blocks; static input scales with
/// `activation_scheme: static`.
fn fp8(keys: &Keys<'_>) -> Result<Read, ConfigError> {
    let scales = match keys.get("weight_block_size") {
        None => Fp8Scales::Tensor,
        Some(v) => {
            let pair = v.as_array().and_then(|a| match a.as_slice() {
                [r, c] => Some((r.as_u64()?, c.as_u64()?)),
                _ => None,
            });
            match pair.and_then(|(r, c)| Some((u32::try_from(r).ok()?, u32::try_from(c).ok()?))) {
                Some((rows, cols)) if rows > 0 && cols > 0 => Fp8Scales::Block { rows, cols },
                _ => {
                    return Err(keys.invalid(
                        "weight_block_size",
                        v,
                        "two positive integers, e.g. [128, 128]",
                    ));
                }
            }
        }
    };
    let mut notes = Vec::new();
    if let Some(fmt) = keys.str("fmt")?
        && !fmt.eq_ignore_ascii_case("e4m3")
    {
        notes.push(format!("`fmt: {fmt}` is stored in 1 byte like E4M3"));
    }
    let input_scale = keys.str("activation_scheme")? == Some("static");
    Ok(Read {
        scheme: Some(Scheme::Fp8 {
            scales,
            scale_bytes: 4,
            input_scale,
        }),
        kinds: KindSet::block_matrices(),
        skipped: keys.list("modules_to_not_convert")?,
        matching: Matching::Transformers,
        notes,
    })
}

/// `gptq`: `bits` in `group_size` groups, the head too with `lm_head`.
fn gptq(keys: &Keys<'_>) -> Result<Read, ConfigError> {
    let bits = keys.bits("bits", 4, &[2, 3, 4, 8])?;
    let group = keys.group("group_size", 128)?;
    let mut notes = Vec::new();
    if let Some(fmt) = keys.str("checkpoint_format")?
        && fmt != "gptq"
    {
        notes.push(format!(
            "`checkpoint_format: {fmt}` sized as the gptq layout"
        ));
    }
    // `desc_act` and `sym` change no byte: g_idx and qzeros are stored either way.
    let _ = (keys.bool("desc_act", false)?, keys.bool("sym", true)?);
    let mut skipped = keys.list("modules_to_not_convert")?;
    if keys.bool("lm_head", false)? {
        notes.push("`lm_head: true`: the output head is quantized too".into());
    }
    skipped.extend(keys.list("modules_to_not_quantize")?);
    Ok(Read {
        scheme: Some(Scheme::Int {
            bits,
            group,
            packing: IntPacking::Gptq,
        }),
        kinds: if keys.bool("lm_head", false)? {
            KindSet::block_matrices().with(TensorKind::Output)
        } else {
            KindSet::block_matrices()
        },
        skipped,
        matching: Matching::Transformers,
        notes,
    })
}

/// `awq`: 4 bits in `group_size` groups, zeros with `zero_point`.
fn awq(keys: &Keys<'_>) -> Result<Read, ConfigError> {
    let bits = keys.bits("bits", 4, &[4])?;
    let group = keys.group("group_size", 128)?;
    let zero = keys.bool("zero_point", true)?;
    let mut notes = Vec::new();
    let version = keys.str("version")?.unwrap_or("gemm").to_ascii_lowercase();
    if version != "gemm" {
        notes.push(format!(
            "AWQ `version: {version}` sized as the GEMM layout (same weights, scales and zeros; its padding is not modelled)"
        ));
    }
    Ok(Read {
        scheme: Some(Scheme::Int {
            bits,
            group,
            packing: IntPacking::Awq { zero },
        }),
        kinds: KindSet::block_matrices(),
        skipped: keys.list("modules_to_not_convert")?,
        matching: Matching::Transformers,
        notes,
    })
}

/// bitsandbytes: 4-bit (`nf4`/`fp4`, double quantization) or 8-bit, from the flags or the
/// method's name; the output head skipped unless `llm_int8_skip_modules` says otherwise.
fn bitsandbytes(keys: &Keys<'_>, method: &str) -> Result<Read, ConfigError> {
    let four = keys.bool("load_in_4bit", false)? || keys.bool("_load_in_4bit", false)?;
    let eight = keys.bool("load_in_8bit", false)? || keys.bool("_load_in_8bit", false)?;
    let scheme = if four || method.ends_with("4bit") {
        let fp4 = match keys.str("bnb_4bit_quant_type")? {
            None | Some("fp4") => true,
            Some("nf4") => false,
            Some(other) => {
                return Err(keys.invalid(
                    "bnb_4bit_quant_type",
                    &Value::String(other.to_owned()),
                    "`nf4` or `fp4`",
                ));
            }
        };
        Some(Scheme::Bnb4 {
            double_quant: keys.bool("bnb_4bit_use_double_quant", false)?,
            fp4,
        })
    } else if eight || method.ends_with("8bit") {
        Some(Scheme::Bnb8)
    } else {
        None
    };
    let mut skipped = keys.list("llm_int8_skip_modules")?;
    if skipped.is_empty() {
        // transformers' `get_keys_to_not_convert`: the output head stays as stored.
        skipped.push("lm_head".into());
    }
    Ok(Read {
        scheme,
        kinds: KindSet::block_matrices(),
        skipped,
        matching: Matching::Transformers,
        notes: Vec::new(),
    })
}

/// NVIDIA `ModelOpt`: `NVFP4` or `FP8` (`quant_algo`), the head included, skip lists as globs.
fn modelopt(keys: &Keys<'_>) -> Result<Read, ConfigError> {
    let algo = keys
        .str("quant_algo")?
        .unwrap_or_default()
        .to_ascii_uppercase();
    let scheme = match algo.as_str() {
        "NVFP4" => Some(Scheme::Nvfp4),
        "FP8" => Some(Scheme::Fp8 {
            scales: Fp8Scales::Tensor,
            scale_bytes: 4,
            input_scale: true,
        }),
        _ => None,
    };
    // Newer ModelOpt configs write the list as `ignore`, older ones (and
    // `hf_quant_config.json`) as `exclude_modules`.
    let mut skipped = keys.list("exclude_modules")?;
    skipped.extend(keys.list("ignore")?);
    Ok(Read {
        scheme,
        kinds: KindSet::block_matrices().with(TensorKind::Output),
        skipped,
        matching: Matching::Glob,
        notes: Vec::new(),
    })
}

/// compressed-tensors: the `weights` of the group that targets `Linear`, and the `format`.
fn compressed_tensors(keys: &Keys<'_>) -> Result<Read, ConfigError> {
    let mut notes = Vec::new();
    let format = keys.str("format")?.unwrap_or("dense").to_owned();
    let groups = match keys.get("config_groups") {
        Some(Value::Object(g)) => g,
        Some(v) => return Err(keys.invalid("config_groups", v, "an object of scheme groups")),
        None => {
            return Err(ConfigError::Missing {
                file: keys.file.to_owned(),
                key: format!("{}.config_groups", keys.section),
                expected: "the quantization scheme groups".into(),
            });
        }
    };
    let targets_linear = |g: &Value| {
        g.get("targets")
            .and_then(Value::as_array)
            .is_some_and(|t| t.iter().any(|x| x.as_str() == Some("Linear")))
    };
    let (name, group) = groups
        .iter()
        .find(|(_, g)| targets_linear(g))
        .or_else(|| groups.iter().next())
        .ok_or_else(|| {
            keys.invalid(
                "config_groups",
                &Value::Object(groups.clone()),
                "at least one scheme group",
            )
        })?;
    if groups.len() > 1 {
        notes.push(format!(
            "{} scheme groups: every linear layer sized by `{name}`",
            groups.len()
        ));
    }
    let Some(Value::Object(w)) = group.get("weights") else {
        return Err(keys.invalid(
            &format!("config_groups.{name}.weights"),
            group.get("weights").unwrap_or(&Value::Null),
            "the weights' quantization (num_bits, type, strategy)",
        ));
    };
    let wk = Keys {
        file: keys.file,
        section: keys.section,
        map: w,
    };
    let bits = wk.bits("num_bits", 8, &[2, 3, 4, 8])?;
    let ty = wk.str("type")?.unwrap_or("int").to_ascii_lowercase();
    let strategy = wk.str("strategy")?.unwrap_or("tensor").to_ascii_lowercase();
    let symmetric = wk.bool("symmetric", true)?;
    let actorder = wk.get("actorder").is_some_and(|v| v != &Value::Bool(false));
    let group_size = match strategy.as_str() {
        "group" | "tensor_group" => wk.group("group_size", 128)?,
        _ => 0,
    };
    let static_input = group
        .get("input_activations")
        .and_then(|a| a.get("dynamic"))
        .is_some_and(|d| d == &Value::Bool(false));
    let scheme = match (format.as_str(), ty.as_str(), bits) {
        ("nvfp4-pack-quantized", _, _) | (_, "float", 4) => Some(Scheme::Nvfp4),
        ("float-quantized" | "naive-quantized", "float", 8) => Some(Scheme::Fp8 {
            scales: match strategy.as_str() {
                "channel" => Fp8Scales::Channel,
                "block" => {
                    let bs = w
                        .get("block_structure")
                        .and_then(Value::as_array)
                        .and_then(|a| {
                            Some((
                                u32::try_from(a.first()?.as_u64()?).ok()?,
                                u32::try_from(a.get(1)?.as_u64()?).ok()?,
                            ))
                        })
                        .unwrap_or((128, 128));
                    Fp8Scales::Block {
                        rows: bs.0,
                        cols: bs.1,
                    }
                }
                _ => Fp8Scales::Tensor,
            },
            // llm-compressor writes scales in the model's dtype (bf16) except per tensor.
            scale_bytes: if strategy == "tensor" { 4 } else { 2 },
            input_scale: static_input,
        }),
        ("pack-quantized", "int", _) => Some(Scheme::Int {
            bits,
            group: group_size,
            packing: IntPacking::Packed {
                zero: !symmetric,
                g_idx: actorder,
            },
        }),
        ("int-quantized" | "naive-quantized", "int", _) => Some(Scheme::Int {
            bits,
            group: group_size,
            packing: IntPacking::Plain { zero: !symmetric },
        }),
        _ => None,
    };
    if scheme.is_none() {
        notes.push(format!(
            "format `{format}` with {bits}-bit {ty} weights is not modelled"
        ));
    }
    Ok(Read {
        scheme,
        // `targets: ["Linear"]` reaches every nn.Linear, the head and routers included.
        kinds: KindSet::block_matrices()
            .with(TensorKind::Output)
            .with(TensorKind::Router),
        skipped: keys.list("ignore")?,
        matching: Matching::CompressedTensors,
        notes,
    })
}

/// The kinds converted: `kinds` less those whose modules the skip list names. A list that
/// names some layers of a kind but not others cannot be held by a set of kinds: the kind
/// goes by the majority of its layers, and a note says so.
fn resolve_kinds(
    spec: &mut ModelSpec,
    kinds: KindSet,
    skipped: &[String],
    matching: Matching,
    notes: &mut Vec<String>,
) -> Result<KindSet, llmsize_core::SpecError> {
    if skipped.is_empty() {
        return Ok(kinds);
    }
    let patterns: Vec<Pattern> = skipped.iter().map(|s| Pattern::new(s, matching)).collect();
    for p in patterns.iter().filter(|p| p.full.is_none()) {
        spec.warnings.push(format!(
            "the quantization's module pattern `{}` is not a valid regular expression; only its suffix is matched",
            p.text
        ));
    }
    let all = tensors(spec)?;
    // (kind, layers matched, layers seen)
    let mut seen: Vec<(TensorKind, u64, u64)> = Vec::new();
    for t in all
        .iter()
        .filter(|t| kinds.contains(t.kind) && !t.is_vector())
    {
        let layers: Vec<u64> = if t.layer_runs.is_empty() {
            vec![0]
        } else {
            let mut v = Vec::new();
            for r in t.layer_runs.iter() {
                let room = MATCH_LAYERS.saturating_sub(v.len() as u64);
                v.extend(r.clone().take(usize::try_from(room.max(1)).unwrap_or(1)));
            }
            v
        };
        let hit = layers
            .iter()
            .filter(|&&l| {
                let path = module_path(spec, t, l);
                patterns.iter().any(|p| p.matches(&path))
            })
            .count() as u64;
        match seen.iter_mut().find(|(k, _, _)| *k == t.kind) {
            Some(e) => {
                e.1 = llmsize_core::checked::add("layers matched", e.1, hit)?;
                e.2 = llmsize_core::checked::add("layers seen", e.2, layers.len() as u64)?;
            }
            None => seen.push((t.kind, hit, layers.len() as u64)),
        }
    }
    let mut out = kinds;
    for (kind, hit, total) in seen {
        let most = llmsize_core::checked::mul("2·layers matched", hit, 2)? > total;
        if most {
            out = out.without(kind);
        }
        if hit > 0 && hit < total {
            notes.push(format!(
                "the module list names {hit} of {total} layers' {kind:?}; sized as if {}",
                if most {
                    "none were converted"
                } else {
                    "all were converted"
                }
            ));
        }
    }
    Ok(out)
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    reason = "a test fails loudly on what it did not expect"
)]
mod tests {
    use super::*;
    use crate::{ReadOptions, read_config};

    #[test]
    fn transformers_matching_stops_at_module_boundaries() {
        // `should_convert_module` (transformers 5.24): from the start up to a boundary, a
        // regex, or a suffix.
        let p = |s: &str| Pattern::new(s, Matching::Transformers);
        assert!(p("model.layers.*.self_attn").matches("model.layers.3.self_attn.q_proj"));
        assert!(p("lm_head").matches("lm_head"));
        assert!(p("mlp.gate").matches("model.layers.0.mlp.gate"));
        assert!(!p("mlp.gate").matches("model.layers.0.mlp.gate_proj"));
        assert!(p("layer.1").matches("layer.1.attn"));
        assert!(!p("layer.1").matches("layer.11.attn"));
        assert!(p("model.layers.1.").matches("model.layers.1.mlp"));
    }

    #[test]
    fn compressed_tensors_and_glob_matching() {
        let ct = |s: &str| Pattern::new(s, Matching::CompressedTensors);
        assert!(ct("re:.*mlp.gate$").matches("model.layers.0.mlp.gate"));
        assert!(!ct("re:.*mlp.gate$").matches("model.layers.0.mlp.gate_proj"));
        assert!(ct("lm_head").matches("lm_head"));
        assert!(!ct("lm_head").matches("model.lm_head.x"));
        let g = |s: &str| Pattern::new(s, Matching::Glob);
        assert!(g("*.mlp.gate").matches("model.layers.7.mlp.gate"));
        assert!(!g("lm_head").matches("lm_head_2"));
    }

    /// A llama-style config of 4 layers with `quantization_config`.
    fn llama(q: &str) -> String {
        format!(
            r#"{{"model_type": "llama", "hidden_size": 256, "intermediate_size": 512,
            "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 4,
            "vocab_size": 1000, "tie_word_embeddings": false, "quantization_config": {q}}}"#
        )
    }

    fn read(q: &str) -> ModelSpec {
        read_config(&llama(q), "config.json", "t", &ReadOptions::default()).unwrap()
    }

    #[test]
    fn compressed_tensors_quantizes_the_head_unless_ignored() {
        let q = |ignore: &str| {
            read(&format!(
                r#"{{"quant_method": "compressed-tensors", "format": "pack-quantized",
                "config_groups": {{"group_0": {{"targets": ["Linear"], "weights": {{"num_bits": 4,
                "type": "int", "strategy": "group", "group_size": 128, "symmetric": true}}}}}},
                "ignore": {ignore}}}"#
            ))
            .quantization
            .unwrap()
        };
        let kinds = |q: Quantization| match q.format {
            Some(WeightFormat::Quantized(f)) => f.kinds,
            other => panic!("{other:?}"),
        };
        assert!(kinds(q("[]")).contains(TensorKind::Output));
        let ignored = kinds(q(r#"["lm_head"]"#));
        assert!(!ignored.contains(TensorKind::Output));
        assert!(ignored.contains(TensorKind::AttnQ));
    }

    #[test]
    fn an_ignored_vision_tower_stays_16_bit() {
        // llm-compressor's VLM recipes ignore the tower by regex: its matrices (the `Matrix`
        // kind of the tower) leave the set, the text tower's stay.
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/coverage/configs/llava.default.json"
        );
        let mut c: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        c["quantization_config"] = serde_json::json!({
            "quant_method": "compressed-tensors", "format": "pack-quantized",
            "config_groups": {"group_0": {"targets": ["Linear"], "weights": {"num_bits": 4,
                "type": "int", "strategy": "group", "group_size": 128, "symmetric": true}}},
            "ignore": ["lm_head", "re:.*vision_tower.*", "re:.*multi_modal_projector.*"]});
        let spec =
            read_config(&c.to_string(), "config.json", "t", &ReadOptions::default()).unwrap();
        let Some(WeightFormat::Quantized(f)) = spec.quantization.unwrap().format else {
            panic!()
        };
        assert!(!f.kinds.contains(TensorKind::Matrix));
        assert!(f.kinds.contains(TensorKind::FfnDown));
        assert!(!f.kinds.contains(TensorKind::Output));
    }

    #[test]
    fn a_list_naming_some_layers_is_noted() {
        // Layers 0 of 4 left unconverted: the kind stays quantized (3 of 4), with a note.
        let q = read(
            r#"{"quant_method": "gptq", "bits": 4, "group_size": 128,
            "modules_to_not_convert": ["model.layers.0.self_attn"]}"#,
        )
        .quantization
        .unwrap();
        assert!(
            q.notes.iter().any(|n| n.contains("names 1 of 4 layers")),
            "{:?}",
            q.notes
        );
        let Some(WeightFormat::Quantized(f)) = q.format else {
            panic!()
        };
        assert!(f.kinds.contains(TensorKind::AttnQ));
    }

    #[test]
    fn bad_values_name_the_key() {
        let err = read_config(
            &llama(r#"{"quant_method": "fp8", "weight_block_size": [128]}"#),
            "config.json",
            "t",
            &ReadOptions::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("quantization_config.weight_block_size"),
            "{err}"
        );
        assert!(err.contains("[128, 128]"), "{err}");
    }
}
