//! Evolla (`modeling_evolla.py`, `EvollaForProteinText2Text`): a Llama decoder read from the
//! top-level keys, a protein encoder and cross-attention adapters, all filed under `vision`
//! (the truth's category for a non-text encoder):
//!
//! - `protein_encoder.model`, `SaProt` (`protein_encoder_config`): an ESM-style BERT encoder
//!   (token table, a position table only for `position_embedding_type: absolute`, an optional
//!   `emb_layer_norm_before`, biased q/k/v/o, a `LayerNorm` after attention and before the
//!   MLP, biased `d_p → ff → d_p`, `emb_layer_norm_after`);
//! - `sequence_compressor_resampler`: `resampler_num_latents` latents of `d_p`,
//!   `resampler_depth` blocks of a perceiver attention (`norm_media`, `norm_latents`, `to_q`,
//!   `to_kv`, `to_out` over `resampler_heads · resampler_dim_head`) and a feed-forward
//!   (`LayerNorm`, `fc1` `d_p → d_p·resampler_ff_mult`, `fc2`), a biased `protein_projector`
//!   `d_p → d` and a `LayerNorm(d)`;
//! - on decoder layer `i` with `(i + 1) % max(L / aligner_num_add_layers, 1) == 0`, an
//!   `adapter`: biased `query`, `key_protein`, `value_protein` (`d → d`), `attention_norm`,
//!   `out_proj` (biased by `aligner_enable_bias`), a feed-forward (`LayerNorm`, `fc1`
//!   `d → d·aligner_ffn_mult`, `fc2`) and two gates. It attends to the protein, caching nothing.

use llmsize_core::Category;
use llmsize_core::expr::Expr;
use llmsize_core::spec::{Extra, ModelSpec};

use super::parts::{Parts, lit, mul, sym, with_sub, with_top};
use super::{vision, with_parts};
use crate::error::ConfigError;
use crate::hf_config::HeadChoice;
use crate::hf_config::family::map_layers_by;
use crate::hf_config::family::{Block, Family, LLAMA, key_or, read_block};
use crate::hf_config::raw::RawConfig;
use crate::hf_config::runs::Runs;

/// `EvollaModel`'s decoder with `EvollaConfig`'s defaults.
const EVOLLA: Block = Block {
    hidden: key_or(&["hidden_size"], 4096),
    layers: key_or(&["num_hidden_layers"], 32),
    heads: key_or(&["num_attention_heads"], 32),
    vocab: key_or(&["vocab_size"], 128_256),
    kv_default: Some(8),
    mlp: crate::hf_config::family::MlpRule {
        width: key_or(&["intermediate_size"], 14336),
        ..crate::hf_config::family::LLAMA_MLP
    },
    ..LLAMA
};

/// `EvollaForProteinText2Text`.
pub(crate) fn evolla(
    raw: &mut RawConfig<'_>,
    f: &Family,
    _head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let mut spec = read_block(raw, f, &EVOLLA)?;
    // `EvollaForProteinText2Text` has no `_tied_weights_keys`: its head is its own tensor even
    // under `tie_word_embeddings: true`.
    if let llmsize_core::spec::OutputHead::Lm { tied, .. } = &mut spec.head {
        *tied = false;
    }
    let d = spec.hidden_size;
    let heads = raw.size_or(
        &["num_attention_heads"],
        llmsize_core::expr::Sym::Heads,
        32,
        "absent; `EvollaConfig` default",
    )?;
    let mut p = vision();
    let dp = protein_encoder(raw, &mut p)?;
    let k = with_top(raw, f.config_class, |s| {
        Ok((
            s.count("resampler_depth", 6)?,
            s.size("resampler_dim_head", 64)?,
            s.size("resampler_heads", 8)?,
            s.size("resampler_num_latents", 64)?,
            s.size("resampler_ff_mult", 4)?,
            s.size("aligner_ffn_mult", 4)?,
            s.flag("aligner_enable_bias", true)?,
            s.size("aligner_num_add_layers", 8)?,
        ))
    })?;
    let (depth, dim_head, r_heads, latents, r_mult, a_mult, a_bias, n_add) = k;
    resampler(&mut p, d, dp, (depth, dim_head, r_heads, latents, r_mult));
    // The adapter of a decoder layer, as that layer's extras.
    let mut a = Parts::new(Category::Vision);
    let one = lit(1);
    let dm = sym("d", d);
    let inner = mul(
        lit(heads),
        lit(raw.div(d, heads, "hidden_size / num_attention_heads")?),
    );
    let part = "protein adapter";
    let pre = "adapter";
    for n in ["query", "key_protein", "value_protein"] {
        let input = dm.clone();
        a.linear(
            format!("{pre}.{n}"),
            part,
            (input, inner.clone()),
            true,
            &one,
        );
    }
    a.vector(
        format!("{pre}.attention_norm.weight"),
        part,
        dm.clone(),
        &one,
    );
    a.linear(
        format!("{pre}.out_proj"),
        part,
        (dm.clone(), dm.clone()),
        a_bias,
        &one,
    );
    feed_forward(
        &mut a,
        &format!("{pre}.ff"),
        &dm,
        &mul(dm.clone(), lit(a_mult)),
        &one,
    );
    a.vector(format!("{pre}.gate_attention"), part, lit(1), &one);
    a.vector(format!("{pre}.gate_ffw"), part, lit(1), &one);
    let adapter: Vec<Extra> = a.out;
    // An adapter on every `max(L // aligner_num_add_layers, 1)`-th layer.
    let n = spec.num_layers();
    let every = raw
        .div(n, n_add, "num_hidden_layers / aligner_num_add_layers")?
        .max(1);
    map_layers_by(&mut spec, &Runs::every(n, every), |layer, adapted| {
        let mut l = layer.clone();
        if *adapted {
            l.extras.extend(adapter.iter().cloned());
        }
        Ok(l)
    })?;
    Ok(with_parts(spec, p))
}

/// `EvollaFeedForward(dim, mult)`: `LayerNorm(dim)`, unbiased `fc1` `dim → inner`, `fc2`.
fn feed_forward(p: &mut Parts, pre: &str, dim: &Expr, inner: &Expr, copies: &Expr) {
    let part = "protein feed-forward";
    p.norm(format!("{pre}.norm"), part, dim, true, copies);
    p.linear(
        format!("{pre}.fc1"),
        part,
        (dim.clone(), inner.clone()),
        false,
        copies,
    );
    p.linear(
        format!("{pre}.fc2"),
        part,
        (inner.clone(), dim.clone()),
        false,
        copies,
    );
}

/// `EvollaSaProtProteinEncoder` under `protein_encoder_config` (`SaProtConfig`); its width.
fn protein_encoder(raw: &mut RawConfig<'_>, p: &mut Parts) -> Result<u64, ConfigError> {
    with_sub(raw, "protein_encoder_config", "SaProtConfig", |s| {
        let vocab = s.size("vocab_size", 446)?;
        let h = s.size("hidden_size", 1280)?;
        let layers = s.count("num_hidden_layers", 33)?;
        let heads = s.size("num_attention_heads", 20)?;
        let ff = s.size("intermediate_size", 5120)?;
        let positions = s.size("max_position_embeddings", 1026)?;
        let kind = s.string("position_embedding_type", "rotary")?;
        let norm_before = s.flag("emb_layer_norm_before", false)?;
        let one = lit(1);
        let pre = "model.protein_encoder.model";
        let part = "protein encoder";
        let hd = sym("d_protein", h);
        p.table(
            format!("{pre}.embeddings.word_embeddings"),
            part,
            (lit(vocab), hd.clone()),
            &one,
        );
        if kind == "absolute" {
            p.table(
                format!("{pre}.embeddings.position_embeddings"),
                part,
                (lit(positions), hd.clone()),
                &one,
            );
        }
        if norm_before {
            p.norm(
                format!("{pre}.embeddings.layer_norm"),
                part,
                &hd,
                true,
                &one,
            );
        }
        let l = sym("L_protein", layers);
        let lay = format!("{pre}.encoder.layer");
        let inner = mul(
            lit(heads),
            lit(s.check(llmsize_core::checked::div(
                "hidden_size / num_attention_heads",
                h,
                heads,
            ))?),
        );
        for n in ["query", "key", "value"] {
            p.linear(
                format!("{lay}.attention.self.{n}"),
                part,
                (hd.clone(), inner.clone()),
                true,
                &l,
            );
        }
        p.linear(
            format!("{lay}.attention.output.dense"),
            part,
            (inner, hd.clone()),
            true,
            &l,
        );
        p.norm(format!("{lay}.attention.LayerNorm"), part, &hd, true, &l);
        let f = sym("d_ff_protein", ff);
        p.linear(
            format!("{lay}.intermediate.dense"),
            part,
            (hd.clone(), f.clone()),
            true,
            &l,
        );
        p.linear(
            format!("{lay}.output.dense"),
            part,
            (f, hd.clone()),
            true,
            &l,
        );
        p.norm(format!("{lay}.LayerNorm"), part, &hd, true, &l);
        p.norm(
            format!("{pre}.encoder.emb_layer_norm_after"),
            part,
            &hd,
            true,
            &one,
        );
        Ok(h)
    })
}

/// `EvollaSequenceCompressorResampler`.
fn resampler(
    p: &mut Parts,
    d: u64,
    dp: u64,
    (depth, dim_head, heads, latents, mult): (u64, u64, u64, u64, u64),
) {
    let one = lit(1);
    let pre = "model.protein_encoder.sequence_compressor_resampler";
    let part = "protein resampler";
    let hd = sym("d_protein", dp);
    p.table(
        format!("{pre}.latents"),
        part,
        (lit(latents), hd.clone()),
        &one,
    );
    if depth > 0 {
        let n = lit(depth);
        let inner = mul(lit(heads), lit(dim_head));
        p.norm(format!("{pre}.layers.0.norm_media"), part, &hd, true, &n);
        p.norm(format!("{pre}.layers.0.norm_latents"), part, &hd, true, &n);
        p.linear(
            format!("{pre}.layers.0.to_q"),
            part,
            (hd.clone(), inner.clone()),
            false,
            &n,
        );
        p.linear(
            format!("{pre}.layers.0.to_kv"),
            part,
            (hd.clone(), mul(lit(2), inner.clone())),
            false,
            &n,
        );
        p.linear(
            format!("{pre}.layers.0.to_out"),
            part,
            (inner, hd.clone()),
            false,
            &n,
        );
        feed_forward(
            p,
            &format!("{pre}.layers.1"),
            &hd,
            &mul(hd.clone(), lit(mult)),
            &n,
        );
    }
    let dm = sym("d", d);
    p.linear(
        format!("{pre}.protein_projector"),
        part,
        (hd, dm.clone()),
        true,
        &one,
    );
    p.norm(format!("{pre}.norm"), part, &dm, true, &one);
}
