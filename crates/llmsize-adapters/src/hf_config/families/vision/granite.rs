//! Granite-Docling (`modeling_granite_docling.py`): a SigLIP-style tower (biased patch
//! convolution, a position per patch, the encoder, `post_layernorm`) with the connector
//! inside it (`ln_in`; a coarse path at `scale_factor` and, with `use_fine_route`, a fine one
//! at half of it, each an unbiased pixel-shuffle projection and one `DeepStack` merger per
//! `deepstack_visual_indexes` entry; `ln_mid`, `mlp_fc2`, `ln_out`), and a Llama-style text
//! model (`GraniteDoclingTextConfig`: 4 KV heads; its multipliers change no shape).

use llmsize_core::spec::{ModelSpec, OutputHead};

use super::parts::{Parts, lit, mul, object, sym, with_sub};
use super::vision;
use super::vit::{VitLayer, layers, siglip_embeddings, vit_keys};
use crate::error::ConfigError;
use crate::hf_config::HeadChoice;
use crate::hf_config::architecture;
use crate::hf_config::family::{Block, Family, LLAMA, Read, read_block};
use crate::hf_config::raw::RawConfig;

/// `GraniteDoclingTextConfig`'s block.
const TEXT: Block = Block {
    kv_default: Some(4),
    tie: true,
    ..LLAMA
};

/// The text model's entry (read from `text_config`, not a registered type).
const TEXT_FAMILY: Family = Family {
    model_type: "granite_docling_text",
    config_class: "GraniteDoclingTextConfig",
    architecture: "GraniteDoclingForConditionalGeneration",
    read: Read::Block(&TEXT),
};

/// One connector path at `scale`: the projection and its `DeepStack` mergers.
/// `scale2` is `scale²`.
fn path(p: &mut Parts, pre: &str, (d_vis, out, scale2, mergers): (u64, u64, u64, u64)) {
    let one = lit(1);
    let part = "connector";
    let wide = mul(sym("d_vis", d_vis), lit(scale2));
    let o = sym("out_hidden_size", out);
    p.linear(
        format!("{pre}.projection"),
        part,
        (wide.clone(), o.clone()),
        false,
        &one,
    );
    if mergers > 0 {
        let m = sym("n_deepstack", mergers);
        let mp = format!("{pre}.deepstack_mergers");
        p.norm(format!("{mp}.layer_norm"), part, &wide, true, &m);
        p.linear(format!("{mp}.linear_1"), part, (wide, o.clone()), true, &m);
        p.linear(format!("{mp}.linear_2"), part, (o.clone(), o), true, &m);
    }
}

/// `GraniteDoclingForConditionalGeneration`, tied by `tie_word_embeddings` (default true).
pub(crate) fn granite_docling(
    raw: &mut RawConfig<'_>,
    f: &Family,
    _head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    if raw.size_opt("density_router_hidden_size")?.is_some() {
        // The router's tensors belong to no category of the ground truth.
        return Err(super::not_read(
            raw,
            f.model_type,
            "density_router_hidden_size",
            "Granite-Docling without a density router (`density_router_hidden_size: null`)",
        ));
    }
    let key = "text_config";
    let map = object(raw, key)?;
    let mut inner = raw.nested(key, map);
    let mut spec = read_block(&mut inner, &TEXT_FAMILY, &TEXT)?;
    for a in inner.assumptions {
        raw.assume(&format!("{key}.{}", a.field), a.value, &a.reason);
    }
    for (symbol, source) in inner.sources {
        raw.source(symbol, &format!("{key}.{source}"));
    }
    let reason = "absent; `GraniteDoclingConfig` default";
    let text_explicit = map
        .get("tie_word_embeddings")
        .and_then(serde_json::Value::as_bool);
    let top = raw.flag("tie_word_embeddings")?;
    let tied = raw.flag_or("tie_word_embeddings", true, reason)?
        && !(top.is_none() && text_explicit == Some(false));
    if let OutputHead::Lm { tied: t, .. } = &mut spec.head {
        *t = tied;
    }
    f.model_type.clone_into(&mut spec.model_type);
    spec.architecture = architecture(raw, f.architecture);
    let mut p = vision();
    with_sub(raw, "vision_config", "GraniteDoclingVisionConfig", |s| {
        let k = vit_keys(s, (768, 3072, 12, 512, 16))?;
        let out = s.size("out_hidden_size", 1024)?;
        let scale = s.size("scale_factor", 4)?;
        let deep = s.list("deepstack_visual_indexes", &[3, 7, 10])?.len() as u64;
        let fine = s.flag("use_fine_route", true)?;
        let pre = "model.vision_model";
        siglip_embeddings(&mut p, pre, &k);
        let layer = VitLayer::clip(k.d(), k.ff());
        layers(&mut p, &format!("{pre}.encoder.layers"), &k.l(), &layer);
        let one = lit(1);
        p.norm(
            format!("{pre}.post_layernorm"),
            "vision norms",
            &k.d(),
            true,
            &one,
        );
        let c = format!("{pre}.connector");
        let o = sym("out_hidden_size", out);
        p.norm(format!("{c}.ln_in"), "connector", &k.d(), true, &one);
        let coarse = s.mul(scale, scale, "scale_factor²")?;
        path(
            &mut p,
            &format!("{c}.coarse"),
            (k.hidden, out, coarse, deep),
        );
        if fine {
            let half = scale / 2;
            let fine = s.mul(half, half, "(scale_factor / 2)²")?;
            path(&mut p, &format!("{c}.fine"), (k.hidden, out, fine, deep));
        }
        p.norm(format!("{c}.ln_mid"), "connector", &o, true, &one);
        p.linear(
            format!("{c}.mlp_fc2"),
            "connector",
            (o.clone(), o.clone()),
            false,
            &one,
        );
        p.norm(format!("{c}.ln_out"), "connector", &o, true, &one);
        Ok(())
    })?;
    spec.extras.extend(p.out);
    Ok(spec)
}
