//! BLT, the Byte Latent Transformer (`modeling_blt.py`, transformers 5.24): a byte-level local
//! encoder, a global transformer over patches, a byte-level local decoder that cross-attends to
//! the patches, hash n-gram embeddings, and (with `patch_in_forward`) the small entropy model
//! that cuts the patches.
//!
//! The local decoder makes the logits, so it is the stack (its self-attention is what a
//! byte-by-byte decode caches); the encoder, the global transformer, the patcher and the
//! embeddings are tensors of the model, counted by category.

use llmsize_core::Category;
use llmsize_core::expr::{Expr, Sym};
use llmsize_core::spec::{Extra, Layers, ModelSpec, Norm};
use serde_json::{Map, Value};

use crate::error::ConfigError;
use crate::hf_config::decoder::{Decoder, layer, mha, mlp};
use crate::hf_config::family::Family;
use crate::hf_config::raw::RawConfig;
use crate::hf_config::{architecture, is_bare};

/// One of BLT's transformers, read from its sub-config.
struct Sub {
    /// Module path (`model.local_encoder`).
    path: &'static str,
    /// Symbols of its width and depth.
    d_sym: &'static str,
    l_sym: &'static str,
    hidden: u64,
    layers: u64,
    heads: u64,
    kv: u64,
    ffn: u64,
    /// `hidden // heads`.
    head_dim: u64,
}

impl Sub {
    /// `hidden // heads`, the head width of its self- and cross-attention.
    fn head_dim(&self) -> u64 {
        self.head_dim
    }

    fn d(&self) -> Expr {
        Expr::sym(Sym::Named(self.d_sym), self.hidden)
    }
}

/// The class defaults of a sub-config: hidden, layers, heads, intermediate (`None`: 8d/3).
struct SubDefaults {
    key: &'static str,
    class: &'static str,
    path: &'static str,
    d_sym: &'static str,
    l_sym: &'static str,
    hidden: u64,
    layers: u64,
    heads: u64,
    ffn: Option<u64>,
}

const ENCODER: SubDefaults = SubDefaults {
    key: "encoder_config",
    class: "BltLocalEncoderConfig",
    path: "model.local_encoder",
    d_sym: "d_enc",
    l_sym: "L_enc",
    hidden: 1024,
    layers: 1,
    heads: 16,
    ffn: None,
};
const DECODER: SubDefaults = SubDefaults {
    key: "decoder_config",
    class: "BltLocalDecoderConfig",
    path: "model.local_decoder",
    d_sym: "d",
    l_sym: "L",
    hidden: 1024,
    layers: 9,
    heads: 16,
    ffn: Some(2816),
};
const GLOBAL: SubDefaults = SubDefaults {
    key: "global_config",
    class: "BltGlobalTransformerConfig",
    path: "model.global_transformer",
    d_sym: "d_glob",
    l_sym: "L_glob",
    hidden: 2048,
    layers: 25,
    heads: 16,
    ffn: Some(5632),
};
const PATCHER: SubDefaults = SubDefaults {
    key: "patcher_config",
    class: "BltPatcherConfig",
    path: "model.patcher",
    d_sym: "d_patch",
    l_sym: "L_patch",
    hidden: 768,
    layers: 14,
    heads: 12,
    ffn: Some(2048),
};

/// A sub-config's keys, with its class defaults; its assumptions join the parent's, prefixed.
struct SubConfig<'m> {
    map: &'m Map<String, Value>,
}

fn sub_map<'m>(
    raw: &RawConfig<'m>,
    key: &str,
    empty: &'m Map<String, Value>,
) -> Result<SubConfig<'m>, ConfigError> {
    match raw.value(key) {
        None => Ok(SubConfig { map: empty }),
        Some(Value::Object(m)) => Ok(SubConfig { map: m }),
        Some(v) => Err(raw.invalid(key, v, "an object holding the sub-model's config")),
    }
}

/// Sizes of one sub-transformer.
fn sizes(raw: &mut RawConfig<'_>, def: &SubDefaults) -> Result<Sub, ConfigError> {
    let why = format!("absent; `{}` default", def.class);
    let hidden = raw.size_or(&["hidden_size"], Sym::Named(def.d_sym), def.hidden, &why)?;
    let layers = raw.size_or(
        &["num_hidden_layers"],
        Sym::Named(def.l_sym),
        def.layers,
        &why,
    )?;
    let heads = raw.size_or(&["num_attention_heads"], Sym::Heads, def.heads, &why)?;
    // `num_key_value_heads or num_attention_heads`.
    let kv = match raw.uint("num_key_value_heads")? {
        Some(n) if n > 0 => n,
        _ => {
            raw.assume(
                "num_key_value_heads",
                heads,
                "absent, null or 0; the attention heads",
            );
            heads
        }
    };
    // `intermediate_size or int(8 * hidden_size / 3)`.
    let ffn = match raw.uint("intermediate_size")? {
        Some(n) if n > 0 => n,
        present => {
            let eight_thirds = raw.mul(hidden, 8, "8·hidden_size")? / 3;
            if let (None, Some(d)) = (present, def.ffn) {
                raw.assume("intermediate_size", d, &why);
                d
            } else {
                raw.assume(
                    "intermediate_size",
                    eight_thirds,
                    "absent, null or 0; int(8·hidden_size / 3)",
                );
                eight_thirds
            }
        }
    };
    if heads > hidden {
        return Err(raw.invalid(
            "num_attention_heads",
            &heads.into(),
            &format!("at most `hidden_size` ({hidden})"),
        ));
    }
    if !heads.is_multiple_of(kv) {
        return Err(raw.invalid(
            "num_key_value_heads",
            &kv.into(),
            &format!("a divisor of `num_attention_heads` ({heads})"),
        ));
    }
    Ok(Sub {
        path: def.path,
        d_sym: def.d_sym,
        l_sym: def.l_sym,
        hidden,
        layers,
        heads,
        kv,
        ffn,
        head_dim: raw.div(hidden, heads, "hidden_size // num_attention_heads")?,
    })
}

/// Read sub-config `def.key` (its class defaults when absent), recording its assumptions
/// under the parent's, prefixed with the key.
fn read(
    raw: &mut RawConfig<'_>,
    def: &SubDefaults,
) -> Result<(Sub, Map<String, Value>), ConfigError> {
    let empty = Map::new();
    let sub = sub_map(raw, def.key, &empty)?;
    let map = sub.map.clone();
    let mut inner = raw.nested(def.key, &map);
    let s = sizes(&mut inner, def)?;
    for a in inner.assumptions {
        raw.assume(&format!("{}.{}", def.key, a.field), a.value, &a.reason);
    }
    for (symbol, source) in inner.sources {
        raw.source(symbol, &format!("{}.{source}", def.key));
    }
    Ok((s, map))
}

fn copies(s: &Sub, n: u64) -> Expr {
    if n == s.layers {
        Expr::sym(Sym::Named(s.l_sym), n)
    } else {
        Expr::Lit(n)
    }
}

/// Self-attention, MLP and the two norms of `n` layers of `s`, as model tensors.
fn transformer_layers(s: &Sub, out: &mut Vec<Extra>) {
    let d = s.d();
    let d_h = Expr::sym(Sym::HeadDim, s.head_dim());
    let q = Expr::product(vec![Expr::sym(Sym::Heads, s.heads), d_h.clone()]);
    let kv = Expr::product(vec![Expr::sym(Sym::KvHeads, s.kv), d_h]);
    let f = Expr::sym(Sym::Named("d_ff"), s.ffn);
    let n = copies(s, s.layers);
    let p = s.path;
    let attn = format!("{p} attention");
    let mlp_part = format!("{p} MLP");
    let norms = format!("{p} norms");
    for (name, input, output) in [
        ("q_proj", d.clone(), q.clone()),
        ("k_proj", d.clone(), kv.clone()),
        ("v_proj", d.clone(), kv),
        ("o_proj", q, d.clone()),
    ] {
        out.push(
            Extra::linear(
                format!("{p}.layers.*.self_attn.{name}.weight"),
                attn.clone(),
                Category::Attention,
                input,
                output,
            )
            .times(n.clone()),
        );
    }
    for (name, input, output) in [
        ("gate_proj", d.clone(), f.clone()),
        ("up_proj", d.clone(), f.clone()),
        ("down_proj", f, d.clone()),
    ] {
        out.push(
            Extra::linear(
                format!("{p}.layers.*.mlp.{name}.weight"),
                mlp_part.clone(),
                Category::Ffn,
                input,
                output,
            )
            .times(n.clone()),
        );
    }
    for name in ["input_layernorm", "post_attention_layernorm"] {
        out.push(
            Extra::vector(
                format!("{p}.layers.*.{name}.weight"),
                norms.clone(),
                Category::Norm,
                d.clone(),
            )
            .times(n.clone()),
        );
    }
}

/// `count` `BltCrossAttention` modules of `s`: q/k/v/o and the `RMSNorm(d)` q/k norms.
fn cross_layers(s: &Sub, count: u64, out: &mut Vec<Extra>) {
    let d = s.d();
    let d_h = Expr::sym(Sym::HeadDim, s.head_dim());
    let q = Expr::product(vec![Expr::sym(Sym::Heads, s.heads), d_h.clone()]);
    let kv = Expr::product(vec![Expr::sym(Sym::KvHeads, s.kv), d_h]);
    let n = copies(s, count);
    let p = s.path;
    let part = format!("{p} cross-attention");
    for (name, input, output) in [
        ("q_proj", d.clone(), q.clone()),
        ("k_proj", d.clone(), kv.clone()),
        ("v_proj", d.clone(), kv),
        ("o_proj", q, d.clone()),
    ] {
        out.push(
            Extra::linear(
                format!("{p}.cross_attn_layers.*.{name}.weight"),
                part.clone(),
                Category::Attention,
                input,
                output,
            )
            .times(n.clone()),
        );
    }
    for name in ["q_norm", "k_norm"] {
        out.push(
            Extra::vector(
                format!("{p}.cross_attn_layers.*.{name}.weight"),
                part.clone(),
                Category::Attention,
                d.clone(),
            )
            .times(n.clone()),
        );
    }
}

fn flag(
    raw: &mut RawConfig<'_>,
    key: &str,
    default: bool,
    class: &str,
) -> Result<bool, ConfigError> {
    raw.flag_or(key, default, &format!("absent; `{class}` default"))
}

/// `BltForCausalLM`.
pub(crate) fn blt(raw: &mut RawConfig<'_>, family: &Family) -> Result<ModelSpec, ConfigError> {
    let class = family.config_class;
    let why = format!("absent; `{class}` default");
    let vocab = raw.size_or(&["vocab_size"], Sym::Vocab, 260, &why)?;
    let cross_k = raw.size_or(&["cross_attn_k"], Sym::Named("k_cross"), 2, &why)?;
    let hash_vocab = raw.size_or(
        &["encoder_hash_byte_group_vocab"],
        Sym::Named("V_hash"),
        500_002,
        &why,
    )?;
    let hash_functions = raw
        .uint("encoder_hash_byte_group_nb_functions")?
        .unwrap_or_else(|| {
            raw.assume("encoder_hash_byte_group_nb_functions", 1, &why);
            1
        });
    // `encoder_hash_byte_group_size or [3, 4, 5, 6, 7, 8]`.
    let groups = match raw.value("encoder_hash_byte_group_size") {
        Some(Value::Array(a)) if !a.is_empty() => a.len() as u64,
        Some(Value::Array(_)) | None => {
            raw.assume("encoder_hash_byte_group_size", "[3, 4, 5, 6, 7, 8]", &why);
            6
        }
        Some(v) => {
            return Err(raw.invalid("encoder_hash_byte_group_size", v, "a list of n-gram sizes"));
        }
    };
    let patcher_on = flag(raw, "patch_in_forward", true, class)?;
    let tied = flag(raw, "tie_word_embeddings", false, class)?;
    let arch = architecture(raw, family.architecture);

    let (enc, enc_map) = read(raw, &ENCODER)?;
    let (dec, dec_map) = read(raw, &DECODER)?;
    let (glob, _) = read(raw, &GLOBAL)?;
    let patcher = if patcher_on {
        Some(read(raw, &PATCHER)?.0)
    } else {
        None
    };
    // Per-module switches of the local encoder and decoder.
    let mut enc_raw = raw.nested(ENCODER.key, &enc_map);
    let enc_all = flag(&mut enc_raw, "cross_attn_all_layers", false, ENCODER.class)?;
    let enc_k = enc_raw.size_or(
        &["cross_attn_k"],
        Sym::Named("k_cross"),
        2,
        "absent; `BltLocalEncoderConfig` default",
    )?;
    let enc_vocab = enc_raw.size_or(
        &["vocab_size"],
        Sym::Named("V_enc"),
        260,
        "absent; `BltLocalEncoderConfig` default",
    )?;
    let mut dec_raw = raw.nested(DECODER.key, &dec_map);
    let dec_all = flag(&mut dec_raw, "cross_attn_all_layers", true, DECODER.class)?;
    let dec_k = dec_raw.size_or(
        &["cross_attn_k"],
        Sym::Named("k_cross"),
        2,
        "absent; `BltLocalDecoderConfig` default",
    )?;
    let dec_global = dec_raw.size_or(
        &["hidden_size_global"],
        Sym::Named("d_glob"),
        2048,
        "absent; `BltLocalDecoderConfig` default",
    )?;
    for a in enc_raw.assumptions {
        raw.assume(&format!("encoder_config.{}", a.field), a.value, &a.reason);
    }
    for a in dec_raw.assumptions {
        raw.assume(&format!("decoder_config.{}", a.field), a.value, &a.reason);
    }
    // `BltForCausalLM._tied_weights_keys` ties `model.local_encoder.embed_tokens.weight` *to*
    // `lm_head.weight` when the config ties (`get_expanded_tied_weights_keys`): `tie_weights`
    // sets the head's `vocab_size × decoder hidden_size` matrix as the byte table whatever the
    // table's own shape, and it is named first as the encoder's table. The bare `BltModel`
    // has no head and no tie.
    let shared = tied && !is_bare(&arch);

    let mut extras = Vec::new();
    // Local encoder: `embed_tokens`, its layers, `patch_embedding_projection` d → k·d, and one
    // cross-attention (all layers' with `cross_attn_all_layers`).
    let d_enc = enc.d();
    if !shared {
        extras.push(Extra::table(
            "model.local_encoder.embed_tokens.weight",
            "byte embeddings",
            Category::TokenEmbedding,
            Expr::sym(Sym::Named("V_enc"), enc_vocab),
            d_enc.clone(),
        ));
    }
    // `encoder_hash_tok_embedding`: V_hash · functions · groups rows of d_enc.
    extras.push(Extra::table(
        "model.encoder_hash_tok_embedding.weight",
        "hash n-gram embeddings",
        Category::TokenEmbedding,
        Expr::product(vec![
            Expr::sym(Sym::Named("V_hash"), hash_vocab),
            Expr::Lit(hash_functions),
            Expr::Lit(groups),
        ]),
        d_enc.clone(),
    ));
    transformer_layers(&enc, &mut extras);
    cross_layers(&enc, if enc_all { enc.layers } else { 1 }, &mut extras);
    extras.push(Extra::linear(
        "model.local_encoder.patch_embedding_projection.weight",
        "patch projections",
        Category::EmbeddingProjection,
        d_enc.clone(),
        Expr::product(vec![Expr::Lit(enc_k), d_enc.clone()]),
    ));
    // Local decoder's `patch_embedding_projection` d_glob → k·d.
    extras.push(Extra::linear(
        "model.local_decoder.patch_embedding_projection.weight",
        "patch projections",
        Category::EmbeddingProjection,
        Expr::sym(Sym::Named("d_glob"), dec_global),
        Expr::product(vec![Expr::Lit(dec_k), dec.d()]),
    ));
    // Global transformer (no final norm); a `token_embedding_projection` when the encoder's
    // k·d differs from its width.
    transformer_layers(&glob, &mut extras);
    let cross_out = raw.mul(enc.hidden, cross_k, "encoder hidden_size·cross_attn_k")?;
    if cross_out != glob.hidden {
        return Err(raw.invalid(
            "cross_attn_k",
            &cross_k.into(),
            "`global_config.hidden_size / encoder_config.hidden_size` (the global transformer's `token_embedding_projection` is not modelled yet)",
        ));
    }
    // The patcher: its own byte table, layers, final norm and head.
    if let Some(p) = &patcher {
        let d_p = p.d();
        let v_p = Expr::sym(Sym::Named("V_patch"), vocab_of_patcher(raw)?);
        extras.push(Extra::table(
            "model.patcher.embed_tokens.weight",
            "patcher embeddings",
            Category::TokenEmbedding,
            v_p.clone(),
            d_p.clone(),
        ));
        transformer_layers(p, &mut extras);
        extras.push(Extra::vector(
            "model.patcher.norm.weight",
            "patcher norm",
            Category::Norm,
            d_p.clone(),
        ));
        extras.push(Extra::linear(
            "model.patcher.lm_head.weight",
            "patcher head",
            Category::LmHead,
            d_p,
            v_p,
        ));
    }
    // The local decoder is the stack: self-attention, MLP, two norms per layer, its cross-
    // attention (every layer's with `cross_attn_all_layers`, else the first's), final norm.
    let mut cross = Vec::new();
    cross_layers(&dec, if dec_all { dec.layers } else { 1 }, &mut cross);
    extras.extend(cross);
    let n = raw.layer_count("decoder_config.num_hidden_layers", dec.layers)?;
    let l = layer(
        mha(dec.hidden, dec.heads, dec.kv, dec.head_dim(), false),
        mlp(dec.hidden, dec.ffn, true, false),
        vec![Norm::rms_norm(dec.hidden); 2],
    );
    let mut spec = Decoder::new(
        family.model_type,
        arch,
        dec.hidden,
        vocab,
        Layers::repeat(l, n as u64),
        Some(Norm::rms_norm(dec.hidden)),
        shared,
    )
    .into_spec();
    if !shared {
        // No table of `vocab_size` × d: the byte tables are the encoder's and the patcher's.
        spec.token_embedding = None;
    }
    spec.extras = extras;
    Ok(spec)
}

/// `patcher_config.vocab_size` (class default 260).
fn vocab_of_patcher(raw: &mut RawConfig<'_>) -> Result<u64, ConfigError> {
    let empty = Map::new();
    let sub = sub_map(raw, "patcher_config", &empty)?;
    let map = sub.map.clone();
    let mut inner = raw.nested("patcher_config", &map);
    let v = inner.size_or(
        &["vocab_size"],
        Sym::Named("V_patch"),
        260,
        "absent; `BltPatcherConfig` default",
    )?;
    for a in inner.assumptions {
        raw.assume(&format!("patcher_config.{}", a.field), a.value, &a.reason);
    }
    Ok(v)
}
