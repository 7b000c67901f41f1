//! `design`'s options as a front end receives them, read once for every front end: the text
//! forms (`7B`, `1%`, `h100`, `16..512`, `mult:1.3`), their bounds, and the request they make.
//! The CLI's clap parsers and the Python package call these same functions, so `--params 7B`
//! and `params="7B"` cannot mean two things.

use llmsize_core::formats::{KvDtype, WeightFormat};
use llmsize_design::{DesignStyle, Goal, KvChoice, Quantity};

use crate::design::{DesignBase, DesignRequest, DesignTrain, FfnRule, OptimalRule};
use crate::{DesignConstraints, HubOptions};

/// The most routed experts (and experts per token) a design asks for.
pub const MAX_EXPERTS: u64 = 4096;
/// The largest vocabulary a design takes.
pub const MAX_VOCAB: u64 = 16_777_216;
/// The widest head a design allows.
pub const MAX_HEAD_DIM: u64 = 4096;
/// The most KV heads (and query heads per KV head) a design allows.
pub const MAX_KV_HEADS: u64 = 65_536;
/// The largest rounding of `multiple_of` and `align`.
pub const MAX_MULTIPLE: u64 = 65_536;
/// The largest tensor- or pipeline-parallel degree a design divides by.
pub const MAX_DEGREE: u64 = 1024;
/// The most candidates a design prints.
pub const MAX_TOP: u16 = 1000;

/// `ffn_rule` as typed; the rounding (`multiple_of`) joins it in [`FfnSpec::rule`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FfnSpec {
    /// `4d`.
    FourD,
    /// `swiglu`: 8d/3.
    Swiglu,
    /// `mult:X`: X · 8d/3, X = num/den.
    Mult(u64, u64),
    /// `ratio:X`: X·d.
    Ratio(u64, u64),
}

impl FfnSpec {
    /// The rule with its rounding: `multiple_of`, else 256 for the LLaMA rules and 1 for
    /// the ratios.
    #[must_use]
    pub fn rule(self, multiple_of: Option<u64>) -> FfnRule {
        match self {
            FfnSpec::FourD => FfnRule::Ratio {
                num: 4,
                den: 1,
                multiple_of: multiple_of.unwrap_or(1),
            },
            FfnSpec::Ratio(num, den) => FfnRule::Ratio {
                num,
                den,
                multiple_of: multiple_of.unwrap_or(1),
            },
            FfnSpec::Swiglu => FfnRule::Llama {
                mult_num: 1,
                mult_den: 1,
                multiple_of: multiple_of.unwrap_or(256),
            },
            FfnSpec::Mult(mult_num, mult_den) => FfnRule::Llama {
                mult_num,
                mult_den,
                multiple_of: multiple_of.unwrap_or(256),
            },
        }
    }
}

/// `1.3` → (13, 10); at most 6 decimals, positive, at most 1000.
fn decimal_ratio(s: &str) -> Option<(u64, u64)> {
    let s = s.trim();
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    if frac.len() > 6
        || (int.is_empty() && frac.is_empty())
        || !int.bytes().all(|b| b.is_ascii_digit())
        || !frac.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let den = 10u64.checked_pow(u32::try_from(frac.len()).ok()?)?;
    let num: u64 = format!("{int}{frac}").parse().ok()?;
    let (mut a, mut b) = (num, den);
    while let Some(r) = a.checked_rem(b) {
        (a, b) = (b, r);
    }
    let g = a.max(1);
    let most = den.checked_mul(1000)?;
    (num > 0 && num <= most).then_some((num.checked_div(g)?, den.checked_div(g)?))
}

/// `4d`, `swiglu` (or `8d/3`), `mult:X`, `ratio:X`.
pub fn parse_ffn_rule(s: &str) -> Result<FfnSpec, String> {
    let t = s.trim().to_ascii_lowercase();
    let bad = || {
        format!(
            "`{s}` is not an FFN rule: `4d`, `swiglu`, `mult:X` (e.g. mult:1.3) or `ratio:X` (e.g. ratio:3.5)"
        )
    };
    match t.as_str() {
        "4d" => Ok(FfnSpec::FourD),
        "swiglu" | "8d/3" => Ok(FfnSpec::Swiglu),
        _ => {
            if let Some(x) = t.strip_prefix("mult:") {
                let (n, d) = decimal_ratio(x).ok_or_else(bad)?;
                Ok(FfnSpec::Mult(n, d))
            } else if let Some(x) = t.strip_prefix("ratio:") {
                let (n, d) = decimal_ratio(x).ok_or_else(bad)?;
                Ok(FfnSpec::Ratio(n, d))
            } else {
                Err(bad())
            }
        }
    }
}

/// A parameter count (`7B`, `8.03B`, `350M`, `1.5e9`) and the half-unit of its last digit.
pub fn parse_params(s: &str) -> Result<(u64, u64), String> {
    llmsize_design::parse_count(s)
}

/// `1e23`, `3.8e25`, `5.88e23`: FLOPs, from 1e12 to 1e32.
pub fn parse_flops(s: &str) -> Result<f64, String> {
    let x: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number of FLOPs (e.g. 1e23)"))?;
    if !(1e12..=1e32).contains(&x) {
        return Err(format!("`{s}`: training compute from 1e12 to 1e32 FLOPs"));
    }
    Ok(x)
}

/// `1%`, `0.5%`, `0.01`: a fraction from 0 to 0.5.
pub fn parse_percent(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let bad = || format!("`{s}` is not a tolerance (e.g. 1%, 0.5%, 0.01)");
    let x = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map_err(|_| bad())? / 100.0,
        None => t.parse::<f64>().map_err(|_| bad())?,
    };
    if !(0.0..=0.5).contains(&x) {
        return Err(format!("`{s}`: a tolerance from 0% to 50%"));
    }
    Ok(x)
}

/// A finite number above 0.
pub fn parse_positive(s: &str) -> Result<f64, String> {
    let x: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number"))?;
    if !(x > 0.0 && x.is_finite()) {
        return Err(format!("`{s}`: must be more than 0"));
    }
    Ok(x)
}

/// `MIN..MAX` of positive numbers, MIN ≤ MAX.
pub fn parse_aspect(s: &str) -> Result<(f64, f64), String> {
    let (a, b) = s
        .split_once("..")
        .ok_or_else(|| format!("`{s}` is not a range MIN..MAX (e.g. 32..256)"))?;
    let (a, b) = (parse_positive(a)?, parse_positive(b)?);
    if a > b {
        return Err(format!("`{s}`: MIN is more than MAX"));
    }
    Ok((a, b))
}

/// `MIN..MAX` of whole numbers from 1, MIN ≤ MAX.
pub fn parse_range(s: &str) -> Result<(u64, u64), String> {
    let bad = || format!("`{s}` is not a range MIN..MAX of whole numbers (e.g. 1024..8192)");
    let (a, b) = s.split_once("..").ok_or_else(bad)?;
    let a: u64 = a.trim().parse().map_err(|_| bad())?;
    let b: u64 = b.trim().parse().map_err(|_| bad())?;
    if a == 0 || a > b {
        return Err(format!("`{s}`: MIN from 1 and at most MAX"));
    }
    Ok((a, b))
}

/// A weight format (`bf16`, `q4_k_m`, …).
pub fn parse_dtype(s: &str) -> Result<WeightFormat, String> {
    WeightFormat::parse(s).ok_or_else(|| {
        format!(
            "`{s}` is not a weight format: {}",
            WeightFormat::names().join(", ")
        )
    })
}

/// A KV cache element type.
pub fn parse_kv_dtype(s: &str) -> Result<KvDtype, String> {
    KvDtype::parse(s)
        .ok_or_else(|| format!("`{s}` is not a KV cache type: bf16, fp16, fp32, fp8, q8_0, q4_0"))
}

/// `memory`: a size with its unit (`24GiB`, `80GB`).
pub fn parse_memory(s: &str) -> Result<u64, String> {
    llmsize_core::gpu::parse_memory(s)
}

/// `train_memory`: a size (`80GiB`, `24GB`) or a GPU's name (`h100`: its memory).
pub fn parse_train_memory(s: &str) -> Result<u64, String> {
    llmsize_core::gpu::parse_memory(s).or_else(|e| {
        llmsize_core::gpu::find(s)
            .map(|g| g.memory_bytes)
            .ok_or_else(|| format!("{e}, or name a GPU (e.g. h100, a100-40gb, rtx4090)"))
    })
}

/// A block style by the name users type (`llama`, `gpt`, `moe`).
pub fn parse_style(s: &str) -> Result<DesignStyle, String> {
    [DesignStyle::Llama, DesignStyle::Gpt, DesignStyle::Moe]
        .into_iter()
        .find(|st| st.name().eq_ignore_ascii_case(s.trim()))
        .ok_or_else(|| format!("`{s}` is not a block style: llama, gpt, moe"))
}

/// A compute-optimal rule by the name users type (`hoffmann`, `epoch`, `tokens20`).
pub fn parse_fit(s: &str) -> Result<OptimalRule, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "hoffmann" => Ok(OptimalRule::Hoffmann),
        "epoch" => Ok(OptimalRule::Epoch),
        "tokens20" => Ok(OptimalRule::Tokens20),
        _ => Err(format!(
            "`{s}` is not a compute-optimal rule: hoffmann, epoch, tokens20"
        )),
    }
}

/// Every option of `design`, read: what the CLI's flags and Python's keyword arguments both
/// become. Which options go together (one target; the training options with
/// `train_memory` alone) is each front end's to enforce, in its own spelling.
#[allow(
    clippy::struct_excessive_bools,
    reason = "each is a switch of the command"
)]
#[derive(Debug, Clone)]
pub struct DesignOptions {
    /// A parameter count and its half-unit.
    pub params: Option<(u64, u64)>,
    /// With `params`: the count without the input embeddings.
    pub non_embedding: bool,
    /// With `params`: the parameters one token uses.
    pub active: bool,
    /// Bytes the weights and KV cache must fit.
    pub memory: Option<u64>,
    /// Bytes per GPU one training step must fit.
    pub train_memory: Option<u64>,
    /// Training compute in FLOPs.
    pub compute: Option<f64>,
    /// The rule whose N `compute` aims at.
    pub fit: OptimalRule,
    /// Accepted distance from the target.
    pub tolerance: f64,
    /// The weight format (the parameters' dtype for `train_memory`).
    pub dtype: WeightFormat,
    /// The KV cache element type.
    pub kv_dtype: KvDtype,
    /// Tokens of context; `None`: 2048 for a training step, else 4096.
    pub ctx: Option<u64>,
    /// The training step of `train_memory`.
    pub train: DesignTrain,
    /// The block style (`None`: llama, unless `like`).
    pub style: Option<DesignStyle>,
    /// A model to resize.
    pub like: Option<String>,
    /// Routed experts.
    pub experts: Option<u64>,
    /// Experts per token.
    pub top_k: Option<u64>,
    /// Vocabulary size.
    pub vocab: Option<u64>,
    /// Head widths allowed (empty: the model's).
    pub head_dim: Vec<u64>,
    /// KV heads allowed.
    pub kv_heads: Vec<u64>,
    /// Query heads per KV head allowed.
    pub gqa_group: Vec<u64>,
    /// The FFN width rule.
    pub ffn_rule: Option<FfnSpec>,
    /// The FFN rule's rounding.
    pub multiple_of: Option<u64>,
    /// Hidden size and FFN width multiples of this.
    pub align: Option<u64>,
    /// Tensor-parallel degree.
    pub tp: u64,
    /// Pipeline stages.
    pub pp: u64,
    /// Aspect ratio range.
    pub aspect: Option<(f64, f64)>,
    /// Preferred aspect ratio.
    pub prefer_aspect: Option<f64>,
    /// Hidden sizes searched.
    pub hidden_range: Option<(u64, u64)>,
    /// Layer counts searched.
    pub layers_range: Option<(u64, u64)>,
    /// Candidates to give.
    pub top: u16,
    /// Where `like`'s Hub repo ids are looked up.
    pub hub: HubOptions,
}

impl DesignOptions {
    /// The context: `ctx`, else 2048 for a training step (`train`'s sequence), else 4096.
    #[must_use]
    pub fn ctx(&self) -> u64 {
        self.ctx.unwrap_or(if self.train_memory.is_some() {
            2048
        } else {
            4096
        })
    }

    /// The engine's request (no target: the `like` model's own size).
    #[must_use]
    pub fn request(&self) -> DesignRequest {
        let base = match &self.like {
            Some(m) => DesignBase::Like(m.clone()),
            None => DesignBase::Style(self.style.unwrap_or(DesignStyle::Llama)),
        };
        DesignRequest {
            base,
            goal: self.goal(),
            tolerance: self.tolerance,
            constraints: self.constraints(),
            top: usize::from(self.top),
            ctx: self.ctx(),
            hub: self.hub.clone(),
            train: self.train.clone(),
        }
    }

    fn goal(&self) -> Option<Goal> {
        if let Some((value, resolution)) = self.params {
            let quantity = if self.active {
                Quantity::Active
            } else if self.non_embedding {
                Quantity::NonEmbedding
            } else {
                Quantity::Total
            };
            return Some(Goal::Params {
                value,
                resolution,
                quantity,
            });
        }
        if let Some(bytes) = self.memory {
            return Some(Goal::Memory {
                bytes,
                format: self.dtype,
                kv_dtype: self.kv_dtype,
            });
        }
        if let Some(bytes) = self.train_memory {
            // The engine fills the options from `train`.
            return Some(Goal::TrainMemory {
                bytes,
                options: Box::default(),
            });
        }
        self.compute.map(|flops| Goal::Compute {
            flops,
            rule: self.fit,
        })
    }

    fn constraints(&self) -> DesignConstraints {
        let kv = if !self.kv_heads.is_empty() {
            Some(KvChoice::Heads(self.kv_heads.clone()))
        } else if !self.gqa_group.is_empty() {
            Some(KvChoice::Group(self.gqa_group.clone()))
        } else {
            None
        };
        // `multiple_of` alone: the LLaMA rule with that rounding.
        let ffn = self
            .ffn_rule
            .or(self.multiple_of.map(|_| FfnSpec::Swiglu))
            .map(|r| r.rule(self.multiple_of));
        DesignConstraints {
            vocab: self.vocab,
            head_dims: (!self.head_dim.is_empty()).then(|| self.head_dim.clone()),
            kv,
            ffn,
            align: self.align,
            tp: self.tp,
            pp: self.pp,
            aspect: self.aspect,
            hidden: self.hidden_range,
            layers: self.layers_range,
            experts: self.experts,
            top_k: self.top_k,
            prefer_aspect: self.prefer_aspect,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_forms_read_as_the_cli_documents_them() {
        assert_eq!(parse_ffn_rule("mult:1.3"), Ok(FfnSpec::Mult(13, 10)));
        assert_eq!(parse_ffn_rule("ratio:3.5"), Ok(FfnSpec::Ratio(7, 2)));
        assert!(parse_ffn_rule("mult:1001").is_err());
        assert_eq!(parse_percent("0.5%"), Ok(0.005));
        assert!(parse_percent("60%").is_err());
        assert_eq!(parse_range("16..32"), Ok((16, 32)));
        assert!(parse_range("0..3").is_err());
        // A GPU's name is the memory its driver reports: an H100 SXM's 81,559 MiB.
        assert_eq!(parse_train_memory("h100"), Ok(81_559 << 20));
        assert_eq!(parse_train_memory("24GiB"), Ok(24 << 30));
        assert_eq!(parse_style("GPT"), Ok(DesignStyle::Gpt));
        assert_eq!(parse_fit("tokens20"), Ok(OptimalRule::Tokens20));
    }
}
