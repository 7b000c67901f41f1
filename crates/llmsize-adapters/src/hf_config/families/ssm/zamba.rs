//! Zamba and Zamba2: Mamba layers, some of which ("hybrid") also run a transformer block
//! fed the concatenation of the hidden state and the embeddings (width A = 2·d) and followed
//! by a per-layer `linear` d → d. Every hybrid layer builds its own block; the blocks are
//! shared (one in Zamba, `num_mem_blocks` in Zamba2) only through the `_tied_weights_keys`
//! that `ZambaModel.__init__` / `Zamba2Model.get_layers` set, which
//! `PreTrainedModel.get_expanded_tied_weights_keys` applies only when the config's
//! `tie_word_embeddings` is true (the class default). Untied, each hybrid layer owns its block.
//!
//! The blocks' tensors are model-level extras (times the blocks that remain, in their own
//! categories), and each hybrid layer carries an [`Attention::CacheOnly`]: no weights, its
//! own KV cache (`n_kv·d_h` keys and values per token, as transformers caches them per
//! layer). FLOPs count a tied block's projections once per token, not once per hybrid
//! layer that runs it (an undercount, said in the closing notes of issue 9).

use llmsize_core::Category;
use llmsize_core::expr::{Expr, Sym};
use llmsize_core::spec::{Attention, Extra, Layer, ModelSpec, Norm};
use serde_json::Value;

use super::hybrid::layer_list;
use super::mixer::{Mamba1, Mamba2, mixer_layer};
use super::{dt_rank, expanded, tied};
use crate::error::ConfigError;
use crate::hf_config::architecture;
use crate::hf_config::decoder::{Decoder, kv_heads, mha};
use crate::hf_config::family::{Family, Reader, Switch, key_or};
use crate::hf_config::raw::RawConfig;
use crate::hf_config::runs::Runs;
use llmsize_core::checked::{self, Checked};

fn sym(s: Sym, v: u64) -> Expr {
    Expr::sym(s, v)
}

fn named(n: &'static str, v: u64) -> Expr {
    Expr::sym(Sym::Named(n), v)
}

/// The widths of the shared transformer block.
struct Shared {
    hidden: u64,
    /// `attention_hidden_size` A (2·d by default).
    input: u64,
    heads: u64,
    kv: u64,
    head_dim: u64,
    ffn: u64,
    /// Biases on the MLP (Zamba2's `add_bias_linear`).
    mlp_bias: bool,
    /// Zamba2 fuses gate and up as `gate_up_proj` (counts the same).
    fused: bool,
}

impl Shared {
    /// One copy of the block: q, k, v from A, o to d, the gated MLP, `input_layernorm` (A)
    /// and `pre_ff_layernorm` (d).
    fn extras(&self, prefix: &str) -> Vec<Extra> {
        let a = named("d_attn_in", self.input);
        let d = sym(Sym::Hidden, self.hidden);
        let q = Expr::product(vec![
            sym(Sym::Heads, self.heads),
            sym(Sym::HeadDim, self.head_dim),
        ]);
        let kv = Expr::product(vec![
            sym(Sym::KvHeads, self.kv),
            sym(Sym::HeadDim, self.head_dim),
        ]);
        let f = sym(Sym::Ffn, self.ffn);
        let (at, ff, no) = (Category::Attention, Category::Ffn, Category::Norm);
        // One part per category: `count` files a part under its first tensor's category.
        let (pa, pf, pn) = ("shared attention", "shared mlp", "shared norms");
        let n = |s: &str| format!("{prefix}.{s}");
        let mut out = vec![
            Extra::linear(n("self_attn.q_proj.weight"), pa, at, a.clone(), q.clone()),
            Extra::linear(n("self_attn.k_proj.weight"), pa, at, a.clone(), kv.clone()),
            Extra::linear(n("self_attn.v_proj.weight"), pa, at, a.clone(), kv),
            Extra::linear(n("self_attn.o_proj.weight"), pa, at, q, d.clone()),
        ];
        if self.fused {
            out.push(Extra::linear(
                n("feed_forward.gate_up_proj.weight"),
                pf,
                ff,
                d.clone(),
                Expr::product(vec![Expr::Lit(2), f.clone()]),
            ));
            if self.mlp_bias {
                out.push(Extra::vector(
                    n("feed_forward.gate_up_proj.bias"),
                    pf,
                    ff,
                    Expr::product(vec![Expr::Lit(2), f.clone()]),
                ));
            }
        } else {
            out.push(Extra::linear(
                n("feed_forward.gate_proj.weight"),
                pf,
                ff,
                d.clone(),
                f.clone(),
            ));
            out.push(Extra::linear(
                n("feed_forward.up_proj.weight"),
                pf,
                ff,
                d.clone(),
                f.clone(),
            ));
        }
        out.push(Extra::linear(
            n("feed_forward.down_proj.weight"),
            pf,
            ff,
            f,
            d.clone(),
        ));
        if self.mlp_bias {
            out.push(Extra::vector(
                n("feed_forward.down_proj.bias"),
                pf,
                ff,
                d.clone(),
            ));
        }
        out.push(Extra::vector(n("input_layernorm.weight"), pn, no, a));
        out.push(Extra::vector(n("pre_ff_layernorm.weight"), pn, no, d));
        out
    }

    /// The attention a hybrid layer carries for its KV cache: `n_kv·d_h` keys and values per
    /// token, and no weights, the shared block's being counted once, model-level.
    fn cache_only(&self) -> Attention {
        Attention::CacheOnly(mha(self.hidden, self.heads, self.kv, self.head_dim, false))
    }
}

/// A hybrid layer: the Mamba layer, its `linear` d → d (`layer_extras`), the KV cache of the
/// shared block's attention.
fn hybrid_layer(mut mamba: Layer, shared: &Shared) -> Layer {
    mamba.extras.push(Extra::linear(
        "linear.weight",
        "hybrid linear",
        Category::LayerExtras,
        sym(Sym::Hidden, shared.hidden),
        sym(Sym::Hidden, shared.hidden),
    ));
    mamba.attention = shared.cache_only();
    mamba
}

/// The layer kinds: `layers_block_type` (or `layer_types`), legacy names remapped, whose
/// length is the layer count; else `default`.
fn block_types(
    raw: &mut RawConfig<'_>,
    class: &str,
    default: impl FnOnce() -> Runs<bool>,
) -> Result<Runs<bool>, ConfigError> {
    let list = if let Some(l) = layer_list(raw, "layers_block_type")? {
        Some(l)
    } else {
        layer_list(raw, "layer_types")?
    };
    let kinds = if let Some(list) = list {
        raw.bound_layers("layers_block_type", list.len() as u64)?;
        Runs::from_list(list.iter().map(|t| t == "hybrid"))
    } else {
        raw.assume(
            "layers_block_type",
            "computed",
            &format!("absent; `{class}` default"),
        );
        default()
    };
    raw.source(Sym::Layers, "len(layers_block_type)");
    Ok(kinds)
}

/// An optional size: the key's value, else `default` (the class computing it in
/// `__post_init__`; the config's own key wins, as transformers applies it afterwards).
fn size_or_else(
    r: &mut Reader<'_, '_>,
    keys: &[&str],
    symbol: Sym,
    default: u64,
    why: &str,
) -> Result<u64, ConfigError> {
    for k in keys {
        if let Some(n) = r.raw.size_opt(k)? {
            r.raw.source(symbol, k);
            return Ok(n);
        }
    }
    let key = keys.first().copied().unwrap_or_default();
    r.raw.assume(
        key,
        default,
        &format!("absent or null; `{}` uses {why}", r.class),
    );
    Ok(default)
}

/// Zamba (`modeling_zamba.py`): every layer is a `ZambaMambaDecoderLayer` (`RMSNorm` + a
/// Mamba-1 mixer whose x/dt projections are split over `n_mamba_heads`, the same counts);
/// hybrid layers add the shared block (one per hybrid layer, untied) and their `linear`.
/// `final_layernorm`, tied head.
pub(super) fn zamba(raw: &mut RawConfig<'_>, family: &Family) -> Result<ModelSpec, ConfigError> {
    let mut r = Reader {
        raw,
        class: family.config_class,
    };
    let hidden = r.size(key_or(&["hidden_size"], 3712), Sym::Hidden)?;
    let layers = r.size(key_or(&["num_hidden_layers"], 76), Sym::Layers)?;
    let vocab = r.size(key_or(&["vocab_size"], 32000), Sym::Vocab)?;
    let heads = r.size(key_or(&["num_attention_heads"], 16), Sym::Heads)?;
    let period = r.size(key_or(&["attn_layer_period"], 6), Sym::Named("attn_period"))?;
    let offset = r.count(key_or(&["attn_layer_offset"], 4))?;
    let n = r.raw.bound_layers("num_hidden_layers", layers)?;
    let class = r.class;
    // Two Mamba layers, a hybrid, then hybrid where `i % attn_layer_period ==
    // attn_layer_offset` (`i` counted after those three).
    let kinds = block_types(r.raw, class, || {
        let mut l = Runs::from_list([false, false, true]);
        l.append(Runs::at_offset(n.saturating_sub(3), period, offset));
        l
    })?;
    let two_d = r.raw.mul(2, hidden, "2·hidden_size")?;
    let expand = r.size(key_or(&["mamba_expand"], 2), Sym::Named("expand"))?;
    let inner = expanded(&mut r, expand, hidden, "mamba_expand·hidden_size")?;
    let mamba_heads = r.size(key_or(&["n_mamba_heads"], 2), Sym::Named("n_ssm_heads"))?;
    if !inner.is_multiple_of(mamba_heads) {
        return Err(r.raw.invalid(
            "n_mamba_heads",
            &mamba_heads.into(),
            &format!("a divisor of mamba_expand·hidden_size ({inner})"),
        ));
    }
    let m = Mamba1 {
        hidden,
        inner,
        state: r.size(key_or(&["mamba_d_state"], 16), Sym::Named("d_state"))?,
        kernel: r.size(key_or(&["mamba_d_conv"], 4), Sym::Named("d_conv"))?,
        dt_rank: dt_rank(&mut r, "mamba_dt_rank", hidden)?,
        proj_bias: r.switch(Switch::Key("mamba_proj_bias", false))?,
        conv_bias: r.switch(Switch::Key("mamba_conv_bias", true))?,
        inner_norms: false,
    };
    let mamba = mixer_layer(
        m.extras("mamba"),
        m.state(r.raw)?,
        vec![Norm::rms_norm(hidden)],
    );
    let any_hybrid = kinds.any(|&h| h);
    let shared = if any_hybrid {
        let input = size_or_else(
            &mut r,
            &["attention_hidden_size"],
            Sym::Named("d_attn_in"),
            two_d,
            "2·hidden_size",
        )?;
        let split = r
            .raw
            .div(two_d, heads, "2·hidden_size / num_attention_heads")?;
        let head_dim = size_or_else(
            &mut r,
            &["attention_head_dim", "head_dim"],
            Sym::HeadDim,
            split,
            "2·hidden_size / num_attention_heads",
        )?;
        Some(Shared {
            hidden,
            input,
            heads,
            kv: kv_heads(r.raw, heads, class, Some(16))?,
            head_dim,
            ffn: r.size(key_or(&["intermediate_size"], 14848), Sym::Ffn)?,
            mlp_bias: false,
            fused: false,
        })
    } else {
        None
    };
    let tie = tied(&mut r, true)?;
    let stack = kinds.layers(|&h| match (&shared, h) {
        (Some(s), true) => hybrid_layer(mamba.clone(), s),
        _ => mamba.clone(),
    });
    let mut spec = Decoder::new(
        family.model_type,
        architecture(r.raw, family.architecture),
        hidden,
        vocab,
        stack,
        Some(Norm::rms_norm(hidden)),
        tie,
    )
    .into_spec();
    if let Some(s) = &shared {
        // At most the layers (bounded), so never past 2^64 − 1.
        let hybrids = kinds.count_true().unwrap_or(u64::MAX);
        let copies = named("shared_blocks", if tie { 1 } else { hybrids });
        spec.extras = s
            .extras("shared_transf")
            .into_iter()
            .map(|e| e.times(copies.clone()))
            .collect();
    }
    Ok(spec)
}

/// The adapters the built blocks hold. Each `Zamba2AttentionDecoderLayer` of id `b` gets one
/// per slot `i` of `hybrid_layer_ids` with `i % num_mem_blocks == b` (`Zamba2MLP`,
/// `Zamba2Attention.__init__`), so `q_s + [b < r_s]` with `slots = q_s·blocks + r_s`. Every
/// hybrid layer `j` builds a block of id `j % num_mem_blocks` (`Zamba2Model.get_layers`);
/// only a tying config (`tie_word_embeddings`, `get_expanded_tied_weights_keys`) ties the
/// later ones to the first `min(num_mem_blocks, hybrids)`, which then remain.
fn zamba2_adapters(
    raw: &RawConfig<'_>,
    slots: u64,
    blocks: u64,
    hybrids: u64,
    tie: bool,
) -> Result<u64, ConfigError> {
    let rem = |a: u64| raw.check(checked::rem("hybrid_layer_ids % num_mem_blocks", a, blocks));
    let (qs, rs) = (
        raw.div(slots, blocks, "hybrid_layer_ids / num_mem_blocks")?,
        rem(slots)?,
    );
    if tie {
        let unique = blocks.min(hybrids);
        return raw.check(
            (Checked::new(unique) * qs + rs.min(unique))
                .get("min(blocks, hybrids)·(slots / blocks) + min(slots % blocks, blocks)"),
        );
    }
    // Σ_b (q_h + [b < r_h])·(q_s + [b < r_s]) over the ids b < blocks.
    let (qh, rh) = (
        raw.div(hybrids, blocks, "hybrids / num_mem_blocks")?,
        rem(hybrids)?,
    );
    raw.check(
        (Checked::new(blocks) * qh * qs
            + Checked::new(qh) * rs
            + Checked::new(rh) * qs
            + rh.min(rs))
        .get("blocks·q_h·q_s + q_h·r_s + r_h·q_s + min(r_h, r_s)"),
    )
}

/// Zamba2 (`modeling_zamba2.py`): every layer is a `Zamba2MambaDecoderLayer` (`RMSNorm` + a
/// Mamba-2 mixer; the convolution always biased, `in_proj`/`out_proj` with
/// `add_bias_linear`); hybrid layers add one of `num_mem_blocks` shared blocks (cycled) and
/// their `linear` (untied, every hybrid layer its own block). Each block holds, for every
/// slot i of `hybrid_layer_ids` with i % `num_mem_blocks` = its id, a LoRA-style adapter
/// d → `adapter_rank` → 2·f on the MLP, and with `use_shared_attention_adapter` three
/// A → rank → A adapters on q, k, v ([`zamba2_adapters`]).
pub(super) fn zamba2(raw: &mut RawConfig<'_>, family: &Family) -> Result<ModelSpec, ConfigError> {
    let mut r = Reader {
        raw,
        class: family.config_class,
    };
    let hidden = r.size(key_or(&["hidden_size"], 2560), Sym::Hidden)?;
    let vocab = r.size(key_or(&["vocab_size"], 32000), Sym::Vocab)?;
    let heads = r.size(key_or(&["num_attention_heads"], 32), Sym::Heads)?;
    let class = r.class;
    let kinds = block_types(r.raw, class, || {
        let mut l = Runs::uniform(false, 1);
        for _ in 0..7 {
            l.push(false, 5);
            l.push(true, 1);
        }
        for before in [4, 3] {
            l.push(false, before);
            l.push(true, 1);
        }
        l.push(false, 2);
        l
    })?;
    // At most the layers (bounded), so never past 2^64 − 1.
    let hybrids = kinds.count_true().ok_or_else(|| {
        r.raw
            .invalid("layers_block_type", &Value::Null, "a list of layer kinds")
    })?;
    let two_d = r.raw.mul(2, hidden, "2·hidden_size")?;
    let expand = r.size(key_or(&["mamba_expand"], 2), Sym::Named("expand"))?;
    let inner = expanded(&mut r, expand, hidden, "mamba_expand·hidden_size")?;
    let mamba_heads = r.size(key_or(&["n_mamba_heads"], 8), Sym::Named("n_ssm_heads"))?;
    let split = r.raw.div(
        inner,
        mamba_heads,
        "mamba_expand·hidden_size / n_mamba_heads",
    )?;
    let head_dim = size_or_else(
        &mut r,
        &["mamba_headdim"],
        Sym::Named("d_ssm_head"),
        split,
        "mamba_expand·hidden_size / n_mamba_heads",
    )?;
    let unrunnable = headdim_mismatch(r.raw, mamba_heads, head_dim, inner)?;
    let bias = r.switch(Switch::Key("add_bias_linear", false))?;
    let m = Mamba2 {
        hidden,
        inner,
        heads: mamba_heads,
        head_dim,
        groups: r.size(key_or(&["mamba_ngroups"], 1), Sym::Named("n_groups"))?,
        state: r.size(key_or(&["mamba_d_state"], 64), Sym::Named("d_state"))?,
        kernel: r.size(key_or(&["mamba_d_conv"], 4), Sym::Named("d_conv"))?,
        in_bias: bias,
        out_bias: bias,
        conv_bias: true,
        norm: true,
    };
    let mamba = mixer_layer(
        m.extras("mamba"),
        m.state(r.raw)?,
        vec![Norm::rms_norm(hidden)],
    );
    let shared = if hybrids > 0 {
        let input = size_or_else(
            &mut r,
            &["attention_hidden_size"],
            Sym::Named("d_attn_in"),
            two_d,
            "2·hidden_size",
        )?;
        let split = r
            .raw
            .div(two_d, heads, "2·hidden_size / num_attention_heads")?;
        let attn_head_dim = size_or_else(
            &mut r,
            &["attention_head_dim", "head_dim"],
            Sym::HeadDim,
            split,
            "2·hidden_size / num_attention_heads",
        )?;
        let four_d = r.raw.mul(4, hidden, "4·hidden_size")?;
        let ffn = size_or_else(
            &mut r,
            &["intermediate_size"],
            Sym::Ffn,
            four_d,
            "4·hidden_size",
        )?;
        Some(Shared {
            hidden,
            input,
            heads,
            kv: kv_heads(r.raw, heads, class, None)?,
            head_dim: attn_head_dim,
            ffn,
            mlp_bias: bias,
            fused: true,
        })
    } else {
        None
    };
    let tie = tied(&mut r, true)?;
    let mut extras = Vec::new();
    if let Some(s) = &shared {
        let blocks = r.size(key_or(&["num_mem_blocks"], 1), Sym::Named("mem_blocks"))?;
        let unique = blocks.min(hybrids);
        // Adapter slots: `hybrid_layer_ids` (the config's own list wins over the one
        // `__post_init__` derives from the layer kinds).
        let slots = match r.raw.value("hybrid_layer_ids") {
            Some(Value::Array(a)) => a.len() as u64,
            Some(v) => {
                return Err(r
                    .raw
                    .invalid("hybrid_layer_ids", v, "a list of layer indices"));
            }
            None => hybrids,
        };
        let adapters = zamba2_adapters(r.raw, slots, blocks, hybrids, tie)?;
        let rank = r.size(key_or(&["adapter_rank"], 128), Sym::Named("adapter_rank"))?;
        let attn_adapters = r.switch(Switch::Key("use_shared_attention_adapter", false))?;
        let copies = named("mem_blocks", if tie { unique } else { hybrids });
        extras.extend(
            s.extras("shared_transformer")
                .into_iter()
                .map(|e| e.times(copies.clone())),
        );
        if adapters > 0 {
            let k = named("adapters", adapters);
            let rk = named("adapter_rank", rank);
            let d = sym(Sym::Hidden, hidden);
            let f2 = Expr::product(vec![Expr::Lit(2), sym(Sym::Ffn, s.ffn)]);
            let (pf, pa) = ("shared mlp adapters", "shared attention adapters");
            extras.push(
                Extra::linear(
                    "gate_up_proj_adapter.0.weight",
                    pf,
                    Category::Ffn,
                    d,
                    rk.clone(),
                )
                .times(k.clone()),
            );
            extras.push(
                Extra::linear(
                    "gate_up_proj_adapter.1.weight",
                    pf,
                    Category::Ffn,
                    rk.clone(),
                    f2,
                )
                .times(k.clone()),
            );
            if attn_adapters {
                let a = named("d_attn_in", s.input);
                for p in ["q", "k", "v"] {
                    extras.push(
                        Extra::linear(
                            format!("linear_{p}_adapter.0.weight"),
                            pa,
                            Category::Attention,
                            a.clone(),
                            rk.clone(),
                        )
                        .times(k.clone()),
                    );
                    extras.push(
                        Extra::linear(
                            format!("linear_{p}_adapter.1.weight"),
                            pa,
                            Category::Attention,
                            rk.clone(),
                            a.clone(),
                        )
                        .times(k.clone()),
                    );
                }
            }
        }
    }
    let stack = kinds.layers(|&h| match (&shared, h) {
        (Some(s), true) => hybrid_layer(mamba.clone(), s),
        _ => mamba.clone(),
    });
    let mut spec = Decoder::new(
        family.model_type,
        architecture(r.raw, family.architecture),
        hidden,
        vocab,
        stack,
        Some(Norm::rms_norm(hidden)),
        tie,
    )
    .into_spec();
    spec.extras = extras;
    spec.warnings.extend(unrunnable);
    Ok(spec)
}

/// `mamba_headdim` sizes no weight (`Zamba2MambaMixer` builds `in_proj`, `conv1d`, `norm`
/// and `out_proj` from `int(mamba_expand·hidden_size)` and `n_mamba_heads` alone), so a saved
/// value that no longer splits the mixer (`__post_init__` derives it, the config's own key
/// wins) still builds; only the forward's reshape to `n_mamba_heads × mamba_headdim` fails. The
/// weights are exact; the state, sized from the key, belongs to no model that runs: a warning.
fn headdim_mismatch(
    raw: &RawConfig<'_>,
    heads: u64,
    head_dim: u64,
    inner: u64,
) -> Result<Option<String>, ConfigError> {
    let split = raw.mul(heads, head_dim, "n_mamba_heads·mamba_headdim")?;
    Ok((split != inner).then(|| {
        format!(
            "`n_mamba_heads·mamba_headdim` ({split}) is not `mamba_expand·hidden_size` ({inner}): \
             transformers builds these weights but its forward cannot split the mixer into heads, \
             so the recurrent state and FLOPs describe no model that runs"
        )
    }))
}
