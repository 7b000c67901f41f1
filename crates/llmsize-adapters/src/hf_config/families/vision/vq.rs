//! The VQ-GAN image tokenizer (`modeling_janus.py`, `JanusVQVAE`, Chameleon's lineage): a
//! convolutional encoder and decoder of residual blocks (`GroupNorm`, 3×3 convolutions, a
//! 1×1 shortcut when the width changes), attention blocks at the lowest resolution, a
//! codebook and the 1×1 `quant_conv`/`post_quant_conv`. And Janus, which adds it to a
//! SigLIP-like understanding tower.

use llmsize_core::Category;
use llmsize_core::spec::{Extra, ModelSpec};

use super::parts::{Parts, Sub, lit, sym, with_sub};
use super::vit::{VitLayer, vit_keys_without_ffn};
use super::{Tie, text, vision, with_parts};
use crate::error::ConfigError;
use crate::hf_config::HeadChoice;
use crate::hf_config::family::Family;
use crate::hf_config::raw::RawConfig;
use llmsize_core::checked;
use llmsize_core::expr::Expr;

/// `copies` of a convolution `i → o` with bias over a kernel of `area` (9 for 3×3).
fn conv(p: &mut Parts, name: String, (i, area, o): (u64, u64, u64), copies: &Expr) {
    p.conv(name, "vq-vae", (lit(i), lit(area), lit(o)), true, copies);
}

/// `GroupNorm` with affine weight and bias.
fn group_norm(p: &mut Parts, name: String, c: u64, copies: &Expr) {
    p.norm(name, "vq-vae", &lit(c), true, copies);
}

/// `copies` of `…ResnetBlock(i, o)`.
fn resnet(p: &mut Parts, pre: &str, (i, o): (u64, u64), copies: &Expr) {
    group_norm(p, format!("{pre}.norm1"), i, copies);
    conv(p, format!("{pre}.conv1"), (i, 9, o), copies);
    group_norm(p, format!("{pre}.norm2"), o, copies);
    conv(p, format!("{pre}.conv2"), (o, 9, o), copies);
    if i != o {
        conv(p, format!("{pre}.nin_shortcut"), (i, 1, o), copies);
    }
}

/// `copies` of `…AttnBlock(c)`: a `GroupNorm` and four 1×1 convolutions.
fn attn(p: &mut Parts, pre: &str, c: u64, copies: &Expr) {
    group_norm(p, format!("{pre}.norm"), c, copies);
    for n in ["q", "k", "v", "proj_out"] {
        conv(p, format!("{pre}.{n}"), (c, 1, c), copies);
    }
}

/// `…MidBlock(c)`.
fn mid(p: &mut Parts, pre: &str, c: u64) {
    let one = lit(1);
    resnet(p, &format!("{pre}.block_1"), (c, c), &one);
    attn(p, &format!("{pre}.attn_1"), c, &one);
    resnet(p, &format!("{pre}.block_2"), (c, c), &one);
}

/// `blocks` resnet blocks of a level, `i → o` then `o → o` (the rest identical, one tensor
/// of `blocks − 1` copies, so a hostile count costs nothing), and an attention block after
/// each when `with_attn`.
fn level(p: &mut Parts, pre: &str, (i, o): (u64, u64), blocks: u64, with_attn: bool) {
    if blocks == 0 {
        return;
    }
    let one = lit(1);
    resnet(p, &format!("{pre}.block.0"), (i, o), &one);
    if blocks > 1 {
        resnet(
            p,
            &format!("{pre}.block.N"),
            (o, o),
            &lit(blocks.saturating_sub(1)),
        );
    }
    if with_attn {
        attn(p, &format!("{pre}.attn.N"), o, &lit(blocks));
    }
}

/// The VQ-VAE's keys.
pub(crate) struct VqKeys {
    pub embed_dim: u64,
    pub codes: u64,
}

/// `JanusVQVAE` (encoder, quantizer codebook, `quant_conv`, `post_quant_conv`, decoder).
pub(crate) fn vqvae(s: &mut Sub<'_, '_>, p: &mut Parts, pre: &str) -> Result<VqKeys, ConfigError> {
    let embed_dim = s.size("embed_dim", 8)?;
    let codes = s.size("num_embeddings", 16_384)?;
    let double = s.flag("double_latent", false)?;
    let latent = s.size("latent_channels", 256)?;
    let in_ch = s.size("in_channels", 3)?;
    let base = s.size("base_channels", 128)?;
    let mult = s.list("channel_multiplier", &[1, 1, 2, 2, 4])?;
    let blocks = s.count("num_res_blocks", 2)?;
    let out_ch = s.size("out_channels", 3)?;
    let Some(&last) = mult.last() else {
        return Err(s.r.raw.invalid(
            "channel_multiplier",
            &serde_json::Value::Array(Vec::new()),
            "a non-empty list",
        ));
    };
    let r = mult.len();
    let one = lit(1);
    // Encoder.
    let e = format!("{pre}.encoder");
    conv(p, format!("{e}.conv_in"), (in_ch, 9, base), &one);
    let mut block_in = base;
    for (i, &m) in mult.iter().enumerate() {
        let in_mult = i
            .checked_sub(1)
            .and_then(|j| mult.get(j))
            .copied()
            .unwrap_or(1);
        let width = |m| s.mul(base, m, "base_channels·channel_multiplier");
        let (from, block_out) = (width(in_mult)?, width(m)?);
        // saturates: never, a level index below the levels.
        let last_level = i.saturating_add(1) == r;
        level(
            p,
            &format!("{e}.down.{i}"),
            (from, block_out),
            blocks,
            last_level,
        );
        block_in = if blocks > 0 { block_out } else { from };
        if !last_level {
            conv(
                p,
                format!("{e}.down.{i}.downsample.conv"),
                (block_in, 9, block_in),
                &one,
            );
        }
    }
    mid(p, &format!("{e}.mid"), block_in);
    group_norm(p, format!("{e}.norm_out"), block_in, &one);
    let z = if double {
        s.mul(latent, 2, "2·latent_channels")?
    } else {
        latent
    };
    conv(p, format!("{e}.conv_out"), (block_in, 9, z), &one);
    // Quantizer and the 1×1 convolutions around it.
    p.table(
        format!("{pre}.quantize.embedding"),
        "vq-vae",
        (sym("codes", codes), lit(embed_dim)),
        &one,
    );
    conv(p, format!("{pre}.quant_conv"), (latent, 1, embed_dim), &one);
    conv(
        p,
        format!("{pre}.post_quant_conv"),
        (embed_dim, 1, latent),
        &one,
    );
    // Decoder: `num_res_blocks + 1` blocks a level.
    let d = format!("{pre}.decoder");
    let mut block_in = s.mul(base, last, "base_channels·channel_multiplier")?;
    conv(p, format!("{d}.conv_in"), (latent, 9, block_in), &one);
    mid(p, &format!("{d}.mid"), block_in);
    let up_blocks = s.check(checked::add("num_res_blocks + 1", blocks, 1))?;
    for (i, &m) in mult.iter().enumerate().rev() {
        let block_out = s.mul(base, m, "base_channels·channel_multiplier")?;
        // saturates: never, a level index below the levels.
        let last_level = i.saturating_add(1) == r;
        level(
            p,
            &format!("{d}.up.{i}"),
            (block_in, block_out),
            up_blocks,
            last_level,
        );
        block_in = block_out;
        if i != 0 {
            conv(
                p,
                format!("{d}.up.{i}.upsample.conv"),
                (block_in, 9, block_in),
                &one,
            );
        }
    }
    group_norm(p, format!("{d}.norm_out"), block_in, &one);
    conv(p, format!("{d}.conv_out"), (block_in, 9, out_ch), &one);
    Ok(VqKeys { embed_dim, codes })
}

/// An MLP `fc1` `i → h` then `n − 1` layers `h → h`, all biased (Janus's aligners).
fn aligner(p: &mut Parts, pre: &str, (i, h): (u64, u64), n: u64) {
    let one = lit(1);
    p.linear(
        format!("{pre}.fc1"),
        "aligner",
        (lit(i), lit(h)),
        true,
        &one,
    );
    if n > 1 {
        p.linear(
            format!("{pre}.hidden_layers"),
            "aligner",
            (lit(h), lit(h)),
            true,
            &lit(n.saturating_sub(1)),
        );
    }
}

/// `int(hidden · mlp_ratio)`.
fn ratio_width(s: &mut Sub<'_, '_>, hidden: u64) -> Result<u64, ConfigError> {
    let r = s.float("mlp_ratio", 4.0)?;
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss,
        reason = "Python's `int(hidden_size * mlp_ratio)` of sizes far below 2^52"
    )]
    let n = (hidden as f64 * r).trunc() as u64;
    Ok(n)
}

/// `JanusForConditionalGeneration`: the understanding tower (`JanusVisionModel`: `SigLIP`
/// embeddings, attention with a biased `projection_layer` and optional `LayerNorm` q/k
/// norms, an `int(d·mlp_ratio)` MLP, `post_layernorm`) and its aligner, the VQ-VAE, the
/// generation embeddings (a token table), aligner and head; Llama text, tied by default.
pub(crate) fn janus(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let mut spec = text(raw, f, "llama", head, Tie::Top(true))?;
    let mut p = vision();
    with_sub(raw, "vision_config", "JanusVisionConfig", |s| {
        let mut k = vit_keys_without_ffn(s, (1024, 24, 384, 16))?;
        k.ffn = ratio_width(s, k.hidden)?;
        let bias = s.flag("attention_bias", true)?;
        let qk = s.flag("use_qk_norm", false)?;
        let proj = s.size("projection_dim", 2048)?;
        let depth = s.count("depth", 2)?;
        super::vit::siglip_body_with(
            &mut p,
            "model.vision_model",
            &k,
            &VitLayer {
                qkv_bias: bias,
                qk_norm: qk.then(|| (k.d(), true)),
                ..VitLayer::clip(k.d(), k.ff())
            },
        );
        aligner(&mut p, "model.aligner", (k.hidden, proj), depth);
        Ok(())
    })?;
    let (vq, proj, n, image_dim) = with_sub(raw, "vq_config", "JanusVQVAEConfig", |s| {
        let vq = vqvae(s, &mut p, "model.vqmodel")?;
        Ok((
            vq,
            s.size("projection_dim", 2048)?,
            s.count("num_hidden_layers", 2)?,
            s.size("image_token_embed_dim", 2048)?,
        ))
    })?;
    spec.extras.push(Extra::table(
        "model.generation_embeddings.weight",
        "generation embeddings",
        Category::TokenEmbedding,
        sym("codes", vq.codes),
        lit(vq.embed_dim),
    ));
    aligner(&mut p, "model.generation_aligner", (vq.embed_dim, proj), n);
    let one = lit(1);
    let part = "generation head";
    p.linear(
        "model.generation_head.proj_out",
        part,
        (lit(image_dim), lit(proj)),
        true,
        &one,
    );
    p.linear(
        "model.generation_head.vision_head",
        part,
        (lit(proj), sym("codes", vq.codes)),
        true,
        &one,
    );
    Ok(with_parts(spec, p))
}
