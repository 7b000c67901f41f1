//! The declared space of shapes, and its exhaustive search.
//!
//! The space is nested loops: head widths × hidden sizes (multiples of the alignment) × KV
//! head counts × layer counts, the FFN width following from the hidden size by the FFN rule.
//! For each (head width, hidden size, KV heads) the per-layer and global parts of the closed
//! form are computed once; each layer count then costs one multiply-add and the filters. The
//! outer pairs are spread over all cores (rayon); each core keeps its best candidates, merged
//! at the end.

use rayon::prelude::*;

use crate::base::Shape;
use crate::form::Form;

/// How the FFN width follows the hidden size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FfnRule {
    /// f = ⌈(num/den)·d / m⌉·m: `4d` (4/1, m = 1), a real model's ratio.
    Ratio {
        /// Numerator.
        num: u64,
        /// Denominator.
        den: u64,
        /// Round up to a multiple of this.
        multiple_of: u64,
    },
    /// Meta's LLaMA rule (`llama/model.py`, `FeedForward`): h = ⌊2·4d/3⌋; with
    /// `ffn_dim_multiplier` x, h = ⌊x·h⌋; then h rounded up to a multiple of `multiple_of`.
    /// LLaMA-2 7B: d = 4096, m = 256 → 11,008; LLaMA-3 8B: x = 1.3, m = 1024 → 14,336.
    Llama {
        /// `ffn_dim_multiplier` as num/den (1/1 when absent).
        mult_num: u64,
        /// Its denominator.
        mult_den: u64,
        /// `multiple_of`.
        multiple_of: u64,
    },
}

impl FfnRule {
    /// The FFN width of hidden size `d`.
    #[must_use]
    pub fn ffn(&self, d: u64) -> u64 {
        let round_up = |x: u64, m: u64| x.div_ceil(m.max(1)) * m.max(1);
        match *self {
            FfnRule::Ratio {
                num,
                den,
                multiple_of,
            } => round_up((num * d).div_ceil(den.max(1)), multiple_of),
            FfnRule::Llama {
                mult_num,
                mult_den,
                multiple_of,
            } => {
                let h = 8 * d / 3;
                round_up(h * mult_num / mult_den.max(1), multiple_of)
            }
        }
    }

    /// How it reads: `4d`, `⌈8d/3⌉ to 256`, `1.3 × 8d/3 to 1024`, `37/7·d to 256`.
    #[must_use]
    pub fn describe(&self) -> String {
        match *self {
            FfnRule::Ratio {
                num,
                den,
                multiple_of,
            } => {
                let r = if den == 1 {
                    format!("{num}d")
                } else {
                    format!("{num}/{den}·d")
                };
                if multiple_of > 1 {
                    format!("{r} rounded up to {multiple_of}")
                } else {
                    r
                }
            }
            FfnRule::Llama {
                mult_num,
                mult_den,
                multiple_of,
            } => {
                if mult_num == mult_den {
                    format!("8d/3 rounded up to {multiple_of} (LLaMA)")
                } else {
                    format!(
                        "{} × 8d/3 rounded up to {multiple_of} (LLaMA-3's ffn_dim_multiplier)",
                        decimal(mult_num, mult_den)
                    )
                }
            }
        }
    }

    /// The rule a real model's (d, f) follows: 4d, LLaMA's 8d/3 to 256, LLaMA-3's 1.3 × 8d/3
    /// to 1024, else its own ratio f/d rounded up to the largest power of two (at most 256)
    /// that divides f.
    #[must_use]
    pub fn of_model(d: u64, f: u64) -> Self {
        let candidates = [
            FfnRule::Ratio {
                num: 4,
                den: 1,
                multiple_of: 1,
            },
            FfnRule::Llama {
                mult_num: 1,
                mult_den: 1,
                multiple_of: 256,
            },
            FfnRule::Llama {
                mult_num: 13,
                mult_den: 10,
                multiple_of: 1024,
            },
        ];
        if let Some(r) = candidates.into_iter().find(|r| r.ffn(d) == f) {
            return r;
        }
        let g = gcd(f, d).max(1);
        let multiple_of = 1u64 << f.trailing_zeros().min(8);
        FfnRule::Ratio {
            num: f / g,
            den: (d / g).max(1),
            multiple_of,
        }
    }
}

/// `13/10` → `1.3`.
fn decimal(num: u64, den: u64) -> String {
    #[expect(clippy::cast_precision_loss, reason = "display")]
    let x = num as f64 / den.max(1) as f64;
    let s = format!("{x:.6}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// Greatest common divisor.
#[must_use]
pub fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// KV heads of a shape: fixed counts, or query heads per KV head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KvChoice {
    /// `--kv-heads 8` (several allowed).
    Heads(Vec<u64>),
    /// `--gqa-group 4`: heads / group KV heads (1 = multi-head attention).
    Group(Vec<u64>),
}

/// The declared space.
#[derive(Debug, Clone, PartialEq)]
pub struct Space {
    /// Head widths.
    pub head_dims: Vec<u64>,
    /// Hidden sizes: from, to (inclusive), step (the alignment).
    pub hidden: (u64, u64, u64),
    /// Layer counts, inclusive.
    pub layers: (u64, u64),
    /// KV heads.
    pub kv: KvChoice,
    /// FFN rule.
    pub ffn: FfnRule,
    /// FFN widths must be multiples of this (the alignment, and the tensor-parallel degree).
    pub ffn_align: u64,
    /// Tensor-parallel degree: heads and hidden size divisible; KV heads divide or are
    /// divided by it.
    pub tp: u64,
    /// Pipeline stages: layers divisible.
    pub pp: u64,
    /// d/L range, inclusive.
    pub aspect: Option<(f64, f64)>,
    /// Vocabulary.
    pub vocab: u64,
    /// The KV heads must equal the heads (a type without KV heads of its own, GPT-2).
    pub mha_only: bool,
}

/// What the search aims at.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Target {
    /// The value of the quantity aimed at.
    pub value: i128,
    /// Accepted distance either side.
    pub tolerance: i128,
    /// Distances are ranked in units of this, rounded (within half a unit of the target is
    /// 0): the precision of the target as typed.
    pub resolution: i128,
    /// Maximize the quantity instead (memory targets: the largest model under a bound; the
    /// bound is `value + tolerance`, and `value` is the bound's own lower end).
    pub maximize: bool,
}

/// Preferences that order candidates at equal distance.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Preference {
    /// The aspect ratio d/L preferred (the like model's, or 128).
    pub aspect: f64,
}

/// One shape that meets the target.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    /// The shape.
    pub shape: Shape,
    /// Its quantity (closed form).
    pub value: i128,
    /// Distance bucket (distance / resolution).
    pub bucket: i128,
    /// Hardware penalty: hidden size and FFN width not multiples of 128.
    pub penalty: u8,
    /// |ln(aspect / preferred)|.
    pub aspect_gap: f64,
}

impl Hit {
    fn key(&self) -> (i128, u8, f64, i128, u64, u64) {
        (
            self.bucket,
            self.penalty,
            self.aspect_gap,
            self.value,
            self.shape.hidden,
            self.shape.layers,
        )
    }

    /// The ranking: distance bucket, hardware penalty, aspect gap, then the value and the
    /// shape (for a stable order).
    #[must_use]
    pub fn cmp_rank(&self, other: &Hit) -> std::cmp::Ordering {
        let (a, b) = (self.key(), other.key());
        a.0.cmp(&b.0)
            .then(a.1.cmp(&b.1))
            .then(a.2.total_cmp(&b.2))
            .then(a.3.cmp(&b.3))
            .then(a.4.cmp(&b.4))
            .then(a.5.cmp(&b.5))
    }
}

/// The result of a search.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    /// Shapes evaluated (the whole declared space: every layer count of every admissible
    /// (head width, hidden size, KV heads)).
    pub evaluated: u64,
    /// The best hits, ranked.
    pub hits: Vec<Hit>,
    /// Hits before keeping the best.
    pub matched: u64,
}

/// The (head width, hidden size, heads, FFN) tuples of the space, with their KV choices.
fn outer(space: &Space) -> Vec<(u64, u64, u64, u64, Vec<u64>)> {
    let (lo, hi, step) = space.hidden;
    let step = step.max(1);
    let mut out = Vec::new();
    for &hd in &space.head_dims {
        if hd == 0 {
            continue;
        }
        let mut d = lo.div_ceil(step) * step;
        while d <= hi {
            let next = d + step;
            if !d.is_multiple_of(hd) || d == 0 {
                d = next;
                continue;
            }
            let heads = d / hd;
            let f = space.ffn.ffn(d);
            let tp = space.tp.max(1);
            if !heads.is_multiple_of(tp)
                || !d.is_multiple_of(tp)
                || f == 0
                || !f.is_multiple_of(space.ffn_align.max(1))
                || !f.is_multiple_of(tp)
            {
                d = next;
                continue;
            }
            let kvs: Vec<u64> = if space.mha_only {
                vec![heads]
            } else {
                match &space.kv {
                    KvChoice::Heads(list) => list.clone(),
                    KvChoice::Group(groups) => groups
                        .iter()
                        .filter(|g| **g > 0 && heads.is_multiple_of(**g))
                        .map(|g| heads / g)
                        .collect(),
                }
            };
            let kvs: Vec<u64> = kvs
                .into_iter()
                .filter(|kv| {
                    *kv > 0
                        && heads.is_multiple_of(*kv)
                        && (kv.is_multiple_of(tp) || tp.is_multiple_of(*kv))
                })
                .collect();
            if !kvs.is_empty() {
                out.push((hd, d, heads, f, kvs));
            }
            d = next;
        }
    }
    out
}

/// Keep the best `k` of `hits` (ranked).
fn keep_best(mut hits: Vec<Hit>, k: usize) -> Vec<Hit> {
    hits.sort_by(Hit::cmp_rank);
    hits.truncate(k);
    hits
}

/// Search the space for shapes whose `form` value meets `target`; keep the best `keep`.
#[must_use]
pub fn search(space: &Space, form: &Form, target: &Target, pref: Preference, keep: usize) -> Found {
    let outer = outer(space);
    let (l_lo, l_hi) = space.layers;
    let pp = space.pp.max(1);
    let keep = keep.max(1);
    let (lo, hi) = if target.maximize {
        (i128::MIN, target.value + target.tolerance)
    } else {
        (
            target.value - target.tolerance,
            target.value + target.tolerance,
        )
    };
    let resolution = target.resolution.max(1);
    let pref_ln = pref.aspect.max(f64::MIN_POSITIVE).ln();
    let (evaluated, matched, hits) = outer
        .par_iter()
        .fold(
            || (0u64, 0u64, Vec::<Hit>::new()),
            |(mut evaluated, mut matched, mut best), (hd, d, heads, f, kvs)| {
                for &kv in kvs {
                    let mut shape = Shape {
                        hidden: *d,
                        layers: 1,
                        heads: *heads,
                        kv_heads: kv,
                        head_dim: *hd,
                        ffn: *f,
                        vocab: space.vocab,
                    };
                    let per_layer = form.per_layer(&shape);
                    let global = form.global(&shape);
                    for layers in l_lo..=l_hi {
                        evaluated += 1;
                        let value = i128::from(layers) * per_layer + global;
                        if value < lo || value > hi || !layers.is_multiple_of(pp) {
                            continue;
                        }
                        shape.layers = layers;
                        let aspect = shape.aspect();
                        if let Some((a_lo, a_hi)) = space.aspect
                            && (aspect < a_lo || aspect > a_hi)
                        {
                            continue;
                        }
                        matched += 1;
                        let distance = if target.maximize {
                            hi - value
                        } else {
                            (value - target.value).abs()
                        };
                        let hit = Hit {
                            shape,
                            value,
                            bucket: (2 * distance + resolution) / (2 * resolution),
                            penalty: u8::from(!d.is_multiple_of(128))
                                + u8::from(!f.is_multiple_of(128)),
                            aspect_gap: (aspect.ln() - pref_ln).abs(),
                        };
                        best.push(hit);
                        if best.len() >= 4 * keep {
                            best = keep_best(best, keep);
                        }
                    }
                }
                (evaluated, matched, best)
            },
        )
        .reduce(
            || (0, 0, Vec::new()),
            |a, b| {
                let mut hits = a.2;
                hits.extend(b.2);
                (a.0 + b.0, a.1 + b.1, keep_best(hits, keep))
            },
        );
    Found {
        evaluated,
        hits: keep_best(hits, keep),
        matched,
    }
}

/// Shapes in the space (what a search evaluates), without searching.
#[must_use]
pub fn size(space: &Space) -> u64 {
    let (l_lo, l_hi) = space.layers;
    let per = l_hi.saturating_sub(l_lo) + u64::from(l_hi >= l_lo);
    outer(space)
        .iter()
        .map(|(.., kvs)| kvs.len() as u64 * per)
        .sum()
}

/// The smallest and largest value of `form` over the space (ignoring the aspect range and
/// pipeline divisibility): what a target must lie within.
#[must_use]
pub fn extent(space: &Space, form: &Form) -> Option<(i128, i128)> {
    let (l_lo, l_hi) = space.layers;
    let mut out: Option<(i128, i128)> = None;
    for (hd, d, heads, f, kvs) in outer(space) {
        for kv in kvs {
            let shape = Shape {
                hidden: d,
                layers: 1,
                heads,
                kv_heads: kv,
                head_dim: hd,
                ffn: f,
                vocab: space.vocab,
            };
            let (p, g) = (form.per_layer(&shape), form.global(&shape));
            let a = i128::from(l_lo) * p + g;
            let b = i128::from(l_hi) * p + g;
            let (lo, hi) = (a.min(b), a.max(b));
            out = Some(out.map_or((lo, hi), |(x, y)| (x.min(lo), y.max(hi))));
        }
    }
    out
}
