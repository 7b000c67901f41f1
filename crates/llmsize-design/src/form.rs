//! The count of a resized model as an exact closed form of its sizes, found by asking the
//! real reader.
//!
//! Every Transformer the search resizes counts, for d = `heads·head_dim`, `w = kv_heads·head_dim`,
//! f the FFN (one expert's) width, V the vocabulary and L the layers, as
//!
//! ```text
//! total = L · (c0·d² + c1·d·w + c2·d·f + c3·d + c4·w + c5·f + c6·head_dim + c7·heads + c8·kv_heads + c9)
//!       + g0·V·d + g1·V + g2·d + g3
//! ```
//!
//! with integer coefficients fixed by the structure kept (biases, norms, a gated FFN, a tied
//! head, E experts and their router, learned positions…): a layer's matrices are products of
//! two widths, its vectors one width; the input table and the head are `V·d`. Rather than
//! writing the coefficients per model type (and risking a reader the form forgets), they are
//! *measured*: the reader counts a handful of small configs of the base, and finite
//! differences give each coefficient exactly (integer arithmetic, every division checked to
//! be exact). The form is then checked against the reader on shapes it was not fitted on,
//! the base model's own among them; any mismatch refuses the model ("not a closed form of its
//! sizes": per-layer lists, layers that differ by position…). Finally every printed
//! candidate is re-counted by the reader, so a form that was exact on the checks but not on
//! some shape could only cause an internal error, never a wrong number.

use llmsize_adapters::hf_config::{ReadOptions, read_config_map};

use crate::base::{Base, Shape};
use crate::error::DesignError;

/// The quantities a form is kept for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quantity {
    /// All parameters.
    Total,
    /// Without the input tables (token, position).
    NonEmbedding,
    /// Per token: routed experts × k/E (= total for a dense model).
    Active,
}

const QUANTITIES: [Quantity; 3] = [Quantity::Total, Quantity::NonEmbedding, Quantity::Active];

/// The coefficients of one quantity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Form {
    /// Per layer: d², d·w, d·f, d, w, f, `head_dim`, heads, `kv_heads`, 1.
    pub layer: [i128; 10],
    /// Once: V·d, V, d, 1.
    pub global: [i128; 4],
}

impl Form {
    /// One layer's count.
    #[must_use]
    pub fn per_layer(&self, s: &Shape) -> i128 {
        let [c0, c1, c2, c3, c4, c5, c6, c7, c8, c9] = self.layer;
        let (d, w, f) = (
            i128::from(s.hidden),
            i128::from(s.kv_heads * s.head_dim),
            i128::from(s.ffn),
        );
        d * (c0 * d + c1 * w + c2 * f + c3)
            + c4 * w
            + c5 * f
            + c6 * i128::from(s.head_dim)
            + c7 * i128::from(s.heads)
            + c8 * i128::from(s.kv_heads)
            + c9
    }

    /// What is counted once (embeddings, head, final norm, positions).
    #[must_use]
    pub fn global(&self, s: &Shape) -> i128 {
        let [g0, g1, g2, g3] = self.global;
        let (d, v) = (i128::from(s.hidden), i128::from(s.vocab));
        v * (g0 * d + g1) + g2 * d + g3
    }

    /// The form as people write it: `L·(2·d² + 2·d·w + 3·d·f + 2·d) + 2·V·d + d`, with
    /// w = `kv_heads·head_dim`, h = `head_dim`, n = heads, k = `kv_heads`.
    #[must_use]
    pub fn describe(&self) -> String {
        fn sum(terms: &[(i128, &str)]) -> String {
            let mut out = String::new();
            for (c, m) in terms.iter().filter(|(c, _)| *c != 0) {
                let (sign, a) = if *c < 0 { ("-", -c) } else { ("+", *c) };
                if out.is_empty() {
                    if sign == "-" {
                        out.push('-');
                    }
                } else {
                    out.push(' ');
                    out.push_str(sign);
                    out.push(' ');
                }
                match (a, m.is_empty()) {
                    (_, true) => out.push_str(&a.to_string()),
                    (1, false) => out.push_str(m),
                    (_, false) => {
                        out.push_str(&a.to_string());
                        out.push('·');
                        out.push_str(m);
                    }
                }
            }
            if out.is_empty() { "0".to_owned() } else { out }
        }
        let [c0, c1, c2, c3, c4, c5, c6, c7, c8, c9] = self.layer;
        let [g0, g1, g2, g3] = self.global;
        let layer = sum(&[
            (c0, "d²"),
            (c1, "d·w"),
            (c2, "d·f"),
            (c3, "d"),
            (c4, "w"),
            (c5, "f"),
            (c6, "h"),
            (c7, "n"),
            (c8, "k"),
            (c9, ""),
        ]);
        let global = sum(&[(g0, "V·d"), (g1, "V"), (g2, "d"), (g3, "")]);
        format!("L·({layer}) + {global}")
    }

    /// The count of `s`.
    #[must_use]
    pub fn eval(&self, s: &Shape) -> i128 {
        i128::from(s.layers) * self.per_layer(s) + self.global(s)
    }
}

/// The forms of a base: total, non-embedding, active.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Forms {
    /// All parameters.
    pub total: Form,
    /// Without input tables.
    pub non_embedding: Form,
    /// Per token.
    pub active: Form,
}

impl Forms {
    /// The form of a quantity.
    #[must_use]
    pub fn get(&self, q: Quantity) -> &Form {
        match q {
            Quantity::Total => &self.total,
            Quantity::NonEmbedding => &self.non_embedding,
            Quantity::Active => &self.active,
        }
    }
}

/// The reader's counts of a shape: total, non-embedding, active.
pub fn read_counts(base: &Base, shape: &Shape) -> Result<[i128; 3], DesignError> {
    let spec = read_config_map(
        base.config_of(shape),
        "design",
        &base.name,
        &ReadOptions::default(),
    )
    .map_err(|e| DesignError::Reader {
        model: base.name.clone(),
        shape: describe(shape),
        message: e.to_string(),
    })?;
    let count = llmsize_core::count(&spec).map_err(|e| DesignError::Reader {
        model: base.name.clone(),
        shape: describe(shape),
        message: e.to_string(),
    })?;
    let total = i128::from(count.total);
    let active = count
        .active
        .as_ref()
        .map_or(total, |a| i128::from(a.per_token));
    Ok([total, i128::from(count.non_embedding()), active])
}

/// `d=4096 L=32 heads=32 kv=8 head_dim=128 ffn=14336 V=128256`.
#[must_use]
pub fn describe(s: &Shape) -> String {
    format!(
        "d={} L={} heads={} kv={} head_dim={} ffn={} V={}",
        s.hidden, s.layers, s.heads, s.kv_heads, s.head_dim, s.ffn, s.vocab
    )
}

/// `a / b`, exactly, or an error naming what was being measured.
fn exact(a: i128, b: i128, what: &str) -> Result<i128, DesignError> {
    if b == 0 || a % b != 0 {
        return Err(not_closed(what));
    }
    Ok(a / b)
}

fn not_closed(what: &str) -> DesignError {
    DesignError::Internal(format!("the {what} coefficient is not an integer"))
}

/// Probing point: (heads, `head_dim`, `kv_heads`, ffn, vocab).
type Point = (u64, u64, u64, u64, u64);

/// Per-layer and global counts of every quantity at a point (two reads: 1 and 2 layers).
fn layer_and_global(base: &Base, p: Point) -> Result<([i128; 3], [i128; 3]), DesignError> {
    let (heads, head_dim, kv_heads, ffn, vocab) = p;
    let shape = |layers| Shape {
        hidden: heads * head_dim,
        layers,
        heads,
        kv_heads,
        head_dim,
        ffn,
        vocab,
    };
    let one = read_counts(base, &shape(1))?;
    let two = read_counts(base, &shape(2))?;
    let mut layer = [0; 3];
    let mut global = [0; 3];
    for i in 0..3 {
        let (Some(a), Some(b)) = (one.get(i), two.get(i)) else {
            continue;
        };
        if let (Some(l), Some(g)) = (layer.get_mut(i), global.get_mut(i)) {
            *l = b - a;
            *g = a - (b - a);
        }
    }
    Ok((layer, global))
}

/// Measure the forms of `base`, then check them on shapes they were not measured on.
pub fn measure(base: &Base) -> Result<Forms, DesignError> {
    let unsupported = |reason: String| DesignError::Unsupported {
        model: base.name.clone(),
        reason,
    };
    // Probing widths: two head widths, heads 2/4/6, one or two KV heads (dividing every head
    // count), two FFN widths, two vocabularies. Small, so every read is quick; the checks
    // below use realistic sizes.
    let (h1, h2) = (64_i128, 128_i128);
    let (f1, f2) = (256_i128, 512_i128);
    let (v1, v2) = (1000_i128, 2000_i128);
    let u = |x: i128| u64::try_from(x).unwrap_or(0);
    let lg = |nh: i128, hd: i128, nkv: i128, f: i128, v: i128| {
        layer_and_global(base, (u(nh), u(hd), u(nkv), u(f), u(v)))
    };
    let mut forms = [Form::default(); 3];
    // Reads shared by the three quantities.
    let a = lg(2, h1, 1, f1, v1)?; // d = 128
    let b = lg(2, h1, 1, f2, v1)?;
    let c = lg(4, h1, 1, f1, v1)?; // d = 256
    let dd = lg(4, h1, 1, f2, v1)?;
    let e = lg(2, h1, 2, f1, v1)?;
    let g = lg(4, h1, 2, f1, v1)?;
    let h = lg(6, h1, 1, f1, v1)?; // d = 384
    let i = lg(2, h2, 1, f1, v1)?; // d = 256, head 128
    let j = lg(2, h2, 2, f1, v1)?;
    let k = lg(4, h2, 1, f1, v1)?; // d = 512
    let l = lg(6, h2, 1, f1, v1)?; // d = 768
    let m = lg(2, h1, 1, f1, v2)?;
    let n = lg(4, h1, 1, f1, v2)?;
    for (q, form) in forms.iter_mut().enumerate() {
        let at = |x: &([i128; 3], [i128; 3])| {
            (
                x.0.get(q).copied().unwrap_or(0),
                x.1.get(q).copied().unwrap_or(0),
            )
        };
        let (pa, ga) = at(&a);
        let (pb, _) = at(&b);
        let (pc, gc) = at(&c);
        let (pd, _) = at(&dd);
        let (pe, _) = at(&e);
        let (pg, _) = at(&g);
        let (ph, _) = at(&h);
        let (pi, _) = at(&i);
        let (pj, _) = at(&j);
        let (pk, _) = at(&k);
        let (pl, _) = at(&l);
        let (_, gm) = at(&m);
        let (_, gn) = at(&n);
        // f-slope S(d) = c2·d + c5 at d = 2·h1 and 4·h1.
        let s1 = exact(pb - pa, f2 - f1, "d·f")?;
        let s2 = exact(pd - pc, f2 - f1, "d·f")?;
        let c2 = exact(s2 - s1, 2 * h1, "d·f")?;
        let c5 = s1 - c2 * 2 * h1;
        let slope = |nh: i128, hd: i128| c2 * nh * hd + c5;
        // f-free part R = P − f·S.
        let r = |p: i128, nh: i128, hd: i128| p - f1 * slope(nh, hd);
        // KV-slope U(nh, hd) = c1·nh·hd² + c4·hd + c8.
        let u21 = r(pe, 2, h1) - r(pa, 2, h1);
        let u41 = r(pg, 4, h1) - r(pc, 4, h1);
        let u22 = r(pj, 2, h2) - r(pi, 2, h2);
        let c1 = exact(u41 - u21, 2 * h1 * h1, "d·w")?;
        let w1 = u21 - c1 * 2 * h1 * h1; // c4·h1 + c8
        let w2 = u22 - c1 * 2 * h2 * h2; // c4·h2 + c8
        let c4 = exact(w2 - w1, h2 - h1, "w")?;
        let c8 = w1 - c4 * h1;
        let uu = |nh: i128, hd: i128| c1 * nh * hd * hd + c4 * hd + c8;
        // Q(nh, hd) = R at no KV head: c0·nh²·hd² + (c3·hd + c7)·nh + (c6·hd + c9).
        let qq = |p: i128, nh: i128, hd: i128| r(p, nh, hd) - uu(nh, hd);
        let quad = |q2: i128, q4: i128, q6: i128| -> Result<(i128, i128, i128), DesignError> {
            // Q(n) = a2·n² + a1·n + a0 at n = 2, 4, 6.
            let a2 = exact(q6 - 2 * q4 + q2, 8, "d²")?;
            let a1 = exact(q4 - q2 - 12 * a2, 2, "d")?;
            let a0 = q2 - 4 * a2 - 2 * a1;
            Ok((a2, a1, a0))
        };
        let (a2, a1, a0) = quad(qq(pa, 2, h1), qq(pc, 4, h1), qq(ph, 6, h1))?;
        let (b2, b1, b0) = quad(qq(pi, 2, h2), qq(pk, 4, h2), qq(pl, 6, h2))?;
        let c0 = exact(a2, h1 * h1, "d²")?;
        if b2 != c0 * h2 * h2 {
            return Err(unsupported(
                "its count is not a closed form of its sizes (the d² term differs with the head width)".into(),
            ));
        }
        let c3 = exact(a1 - b1, h1 - h2, "d")?;
        let c7 = a1 - c3 * h1;
        let c6 = exact(a0 - b0, h1 - h2, "head_dim")?;
        let c9 = a0 - c6 * h1;
        // Global G(d, V) = g0·V·d + g1·V + g2·d + g3 at d = 2·h1, 4·h1 and V = v1, v2.
        let (d1, d2) = (2 * h1, 4 * h1);
        let g0 = exact(gn - gm - gc + ga, (d2 - d1) * (v2 - v1), "V·d")?;
        let sv = exact(gm - ga, v2 - v1, "V")?; // g0·d1 + g1
        let g1 = sv - g0 * d1;
        let z1 = ga - sv * v1; // g2·d1 + g3
        let z2 = gc - (g0 * d2 + g1) * v1;
        let g2 = exact(z2 - z1, d2 - d1, "d")?;
        let g3 = z1 - g2 * d1;
        *form = Form {
            layer: [c0, c1, c2, c3, c4, c5, c6, c7, c8, c9],
            global: [g0, g1, g2, g3],
        };
    }
    let [total, non_embedding, active] = forms;
    let forms = Forms {
        total,
        non_embedding,
        active,
    };
    // Checks on shapes the form was not measured on: the base's own, and realistic others.
    let own = base.shape;
    let checks = [
        own,
        Shape { layers: 3, ..own },
        Shape {
            hidden: 1024,
            layers: 5,
            heads: 8,
            kv_heads: 2,
            head_dim: 128,
            ffn: 2816,
            vocab: 32_003,
        },
        Shape {
            hidden: 3072,
            layers: 7,
            heads: 48,
            kv_heads: 48,
            head_dim: 64,
            ffn: 8192,
            vocab: own.vocab,
        },
    ];
    for s in &checks {
        // A check shape the type cannot hold (GPT-2 has no KV heads of its own) is skipped.
        if base.keys.kv_heads.is_none() && s.kv_heads != s.heads {
            continue;
        }
        let real = read_counts(base, s)?;
        for (q, r) in QUANTITIES.iter().zip(real) {
            let f = forms.get(*q).eval(s);
            if f != r {
                return Err(unsupported(format!(
                    "its count is not a closed form of its sizes: at {} the reader counts {r}, \
                     the form {f} (layers that differ by position, per-layer lists…)",
                    describe(s)
                )));
            }
        }
    }
    Ok(forms)
}
