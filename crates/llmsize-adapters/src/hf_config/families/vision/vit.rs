//! The plain `ViT` towers: CLIP's and `SigLIP`'s vision transformers (`modeling_clip.py`,
//! `modeling_siglip.py`), and the pre-norm encoder layer most towers share.

use llmsize_core::expr::Expr;

use super::parts::{Parts, Sub, lit, mul, sym, with_sub};
use crate::error::ConfigError;
use crate::hf_config::raw::RawConfig;
use llmsize_core::checked;

/// One pre-norm encoder layer: `layer_norm1` → attention (q, k, v `d → a`, out `a → d`) →
/// `layer_norm2` → MLP (`fc1`/`fc2`, or gated `gate`/`up`/`down`).
#[allow(
    clippy::struct_excessive_bools,
    reason = "each is a switch of the real module"
)]
#[derive(Debug, Clone)]
pub(crate) struct VitLayer {
    /// `d_vis`.
    pub hidden: Expr,
    /// The width of q, k and v (`n_h·d_h`, usually `d_vis`).
    pub attn: Expr,
    /// The width of k and v when it differs from q's (grouped heads).
    pub kv: Option<Expr>,
    /// `d_ff_vis`.
    pub ffn: Expr,
    /// Biases on q, k, v.
    pub qkv_bias: bool,
    /// Bias on the output projection.
    pub o_bias: bool,
    /// One fused `qkv` (counts the same).
    pub fused: bool,
    /// MLP biases.
    pub mlp_bias: bool,
    /// Gated MLP (three matrices).
    pub gated: bool,
    /// Norms are `LayerNorm`s with biases (else `RMSNorm`/weight-only).
    pub norm_bias: bool,
    /// q/k norms over this width, if any.
    pub qk_norm: Option<(Expr, bool)>,
    /// Learned per-channel scales on both residual branches (`lambda_1`, `lambda_2`).
    pub layer_scale: bool,
    /// The MLP is part of the layer (false: the caller writes its own).
    pub with_mlp: bool,
}

impl VitLayer {
    /// CLIP's layer: every projection and norm biased, `fc1`/`fc2`.
    pub(crate) fn clip(hidden: Expr, ffn: Expr) -> Self {
        VitLayer {
            attn: hidden.clone(),
            hidden,
            kv: None,
            ffn,
            qkv_bias: true,
            o_bias: true,
            fused: false,
            mlp_bias: true,
            gated: false,
            norm_bias: true,
            qk_norm: None,
            layer_scale: false,
            with_mlp: true,
        }
    }
}

/// `layers` copies of `l` under `prefix`.
pub(crate) fn layers(p: &mut Parts, prefix: &str, layers: &Expr, l: &VitLayer) {
    let part = "vision encoder layers";
    let kv = l.kv.clone().unwrap_or_else(|| l.attn.clone());
    p.norm(
        format!("{prefix}.layer_norm1"),
        part,
        &l.hidden,
        l.norm_bias,
        layers,
    );
    if l.fused {
        p.linear(
            format!("{prefix}.attn.qkv"),
            part,
            (
                l.hidden.clone(),
                Expr::sum(vec![l.attn.clone(), kv.clone(), kv.clone()]),
            ),
            l.qkv_bias,
            layers,
        );
    } else {
        for (name, out) in [("q_proj", &l.attn), ("k_proj", &kv), ("v_proj", &kv)] {
            p.linear(
                format!("{prefix}.self_attn.{name}"),
                part,
                (l.hidden.clone(), out.clone()),
                l.qkv_bias,
                layers,
            );
        }
    }
    p.linear(
        format!("{prefix}.self_attn.out_proj"),
        part,
        (l.attn.clone(), l.hidden.clone()),
        l.o_bias,
        layers,
    );
    if let Some((dim, bias)) = &l.qk_norm {
        p.norm(
            format!("{prefix}.self_attn.q_norm"),
            part,
            dim,
            *bias,
            layers,
        );
        p.norm(
            format!("{prefix}.self_attn.k_norm"),
            part,
            dim,
            *bias,
            layers,
        );
    }
    p.norm(
        format!("{prefix}.layer_norm2"),
        part,
        &l.hidden,
        l.norm_bias,
        layers,
    );
    if l.with_mlp {
        mlp(
            p,
            &format!("{prefix}.mlp"),
            (&l.hidden, &l.ffn),
            l.gated,
            l.mlp_bias,
            layers,
        );
    }
    if l.layer_scale {
        p.vector(format!("{prefix}.lambda_1"), part, l.hidden.clone(), layers);
        p.vector(format!("{prefix}.lambda_2"), part, l.hidden.clone(), layers);
    }
}

/// An MLP `d → d_ff → d` (`fc1`/`fc2`), or gated (`gate`, `up`, `down`).
pub(crate) fn mlp(
    p: &mut Parts,
    prefix: &str,
    (d, ff): (&Expr, &Expr),
    gated: bool,
    bias: bool,
    copies: &Expr,
) {
    let part = "vision mlp";
    if gated {
        for name in ["gate_proj", "up_proj"] {
            p.linear(
                format!("{prefix}.{name}"),
                part,
                (d.clone(), ff.clone()),
                bias,
                copies,
            );
        }
        p.linear(
            format!("{prefix}.down_proj"),
            part,
            (ff.clone(), d.clone()),
            bias,
            copies,
        );
    } else {
        p.linear(
            format!("{prefix}.fc1"),
            part,
            (d.clone(), ff.clone()),
            bias,
            copies,
        );
        p.linear(
            format!("{prefix}.fc2"),
            part,
            (ff.clone(), d.clone()),
            bias,
            copies,
        );
    }
}

/// What a projector needs to know of the tower it follows.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Tower {
    /// `d_vis`.
    pub hidden: u64,
}

/// The common `ViT` keys of a vision sub-config.
pub(crate) struct VitKeys {
    pub hidden: u64,
    pub ffn: u64,
    pub layers: u64,
    pub channels: u64,
    /// Image side(s).
    pub image: (u64, u64),
    /// Patch side(s).
    pub patch: (u64, u64),
    /// `(image / patch)²`, the patches of an image.
    patches: u64,
    /// `(image / patch)² + 1`, the positions of a tower with a class token.
    positions: u64,
    /// The pixels of one patch, `p_h·p_w`.
    kernel: u64,
}

/// `ViT` defaults of a configuration class: `(hidden, intermediate, layers, image, patch)`.
pub(crate) fn vit_keys(
    s: &mut Sub<'_, '_>,
    (hidden, ffn, layers, image, patch): (u64, u64, u64, u64, u64),
) -> Result<VitKeys, ConfigError> {
    let ffn = s.size("intermediate_size", ffn)?;
    Ok(VitKeys {
        ffn,
        ..vit_keys_without_ffn(s, (hidden, layers, image, patch))?
    })
}

/// [`vit_keys`] of a class whose MLP width has another key (`mlp_dim`): `ffn` is 0.
pub(crate) fn vit_keys_without_ffn(
    s: &mut Sub<'_, '_>,
    (hidden, layers, image, patch): (u64, u64, u64, u64),
) -> Result<VitKeys, ConfigError> {
    let hidden = s.size("hidden_size", hidden)?;
    let layers = s.count("num_hidden_layers", layers)?;
    let channels = s.size("num_channels", 3)?;
    let image = s.pair("image_size", image)?;
    let patch = s.pair("patch_size", patch)?;
    let side = |i: u64, p: u64| checked::div("image_size / patch_size", i, p);
    let patches = s
        .check(side(image.0, patch.0).and_then(|h| {
            checked::mul("(image_size / patch_size)²", h, side(image.1, patch.1)?)
        }))?;
    Ok(VitKeys {
        hidden,
        ffn: 0,
        layers,
        channels,
        image,
        patch,
        patches,
        positions: s.check(checked::add("(image_size / patch_size)² + 1", patches, 1))?,
        kernel: s.mul(patch.0, patch.1, "patch_size²")?,
    })
}

impl VitKeys {
    pub(crate) fn tower(&self) -> Tower {
        Tower {
            hidden: self.hidden,
        }
    }

    /// `(image / patch)²`.
    pub(crate) fn patches(&self) -> u64 {
        self.patches
    }

    /// The positions of a tower with a class token: `(image / patch)² + 1`.
    pub(crate) fn positions(&self) -> u64 {
        self.positions
    }

    /// The pixels of one patch, `p_h·p_w`.
    pub(crate) fn kernel(&self) -> u64 {
        self.kernel
    }

    pub(crate) fn d(&self) -> Expr {
        sym("d_vis", self.hidden)
    }

    pub(crate) fn ff(&self) -> Expr {
        sym("d_ff_vis", self.ffn)
    }

    pub(crate) fn l(&self) -> Expr {
        sym("L_vis", self.layers)
    }

    /// The patch convolution `c·p² → d_vis` (a linear over each patch).
    pub(crate) fn patch_conv(&self, p: &mut Parts, name: String, bias: bool) {
        p.conv(
            name,
            "vision embeddings",
            (lit(self.channels), lit(self.kernel()), self.d()),
            bias,
            &lit(1),
        );
    }
}

/// `CLIPVisionModel`: class token, patch convolution (no bias), positions for every patch
/// and the class token, `pre_layrnorm`, the encoder, `post_layernorm`.
pub(crate) fn clip(
    raw: &mut RawConfig<'_>,
    key: &str,
    p: &mut Parts,
) -> Result<Tower, ConfigError> {
    clip_with(
        raw,
        key,
        "CLIPVisionConfig",
        (768, 3072, 12, 224, 32),
        p,
        "vision_tower",
    )
}

/// The CLIP tower under `key` with another class's defaults
/// `(hidden, intermediate, layers, image, patch)` (Kosmos-2's, GIT's).
pub(crate) fn clip_with(
    raw: &mut RawConfig<'_>,
    key: &str,
    class: &'static str,
    defaults: (u64, u64, u64, u64, u64),
    p: &mut Parts,
    pre: &str,
) -> Result<Tower, ConfigError> {
    with_sub(raw, key, class, |s| {
        let k = vit_keys(s, defaults)?;
        let one = lit(1);
        p.vector(
            format!("{pre}.embeddings.class_embedding"),
            "vision embeddings",
            k.d(),
            &one,
        );
        k.patch_conv(p, format!("{pre}.embeddings.patch_embedding"), false);
        p.table(
            format!("{pre}.embeddings.position_embedding"),
            "vision embeddings",
            (lit(k.positions()), k.d()),
            &one,
        );
        p.norm(
            format!("{pre}.pre_layrnorm"),
            "vision norms",
            &k.d(),
            true,
            &one,
        );
        layers(
            p,
            &format!("{pre}.encoder.layers"),
            &k.l(),
            &VitLayer::clip(k.d(), k.ff()),
        );
        p.norm(
            format!("{pre}.post_layernorm"),
            "vision norms",
            &k.d(),
            true,
            &one,
        );
        Ok(k.tower())
    })
}

/// `SiglipVisionModel`: patch convolution with bias, a position per patch, the encoder,
/// `post_layernorm`, and with `vision_use_head` the attention-pooling head (a probe,
/// `nn.MultiheadAttention`, a norm and an MLP).
pub(crate) fn siglip(
    raw: &mut RawConfig<'_>,
    key: &str,
    p: &mut Parts,
) -> Result<Tower, ConfigError> {
    with_sub(raw, key, "SiglipVisionConfig", |s| {
        let k = vit_keys(s, (768, 3072, 12, 224, 16))?;
        let head = s.flag("vision_use_head", true)?;
        siglip_body(p, "vision_tower", &k, head, true);
        Ok(k.tower())
    })
}

/// `SigLIP`'s embeddings, encoder, post norm (when `post_norm`) and optional pooling head.
pub(crate) fn siglip_body(p: &mut Parts, pre: &str, k: &VitKeys, head: bool, post_norm: bool) {
    siglip_embeddings(p, pre, k);
    layers(
        p,
        &format!("{pre}.encoder.layers"),
        &k.l(),
        &VitLayer::clip(k.d(), k.ff()),
    );
    let one = lit(1);
    if post_norm {
        p.norm(
            format!("{pre}.post_layernorm"),
            "vision norms",
            &k.d(),
            true,
            &one,
        );
    }
    if head {
        pooling_head(p, &format!("{pre}.head"), &k.d(), &k.ff());
    }
}

/// `SigLIP`'s embeddings, encoder layers `layer` and `post_layernorm`.
pub(crate) fn siglip_body_with(p: &mut Parts, pre: &str, k: &VitKeys, layer: &VitLayer) {
    siglip_embeddings(p, pre, k);
    layers(p, &format!("{pre}.encoder.layers"), &k.l(), layer);
    p.norm(
        format!("{pre}.post_layernorm"),
        "vision norms",
        &k.d(),
        true,
        &lit(1),
    );
}

/// `SigLIP`'s embeddings: a biased patch convolution, a position per patch.
pub(crate) fn siglip_embeddings(p: &mut Parts, pre: &str, k: &VitKeys) {
    let one = lit(1);
    k.patch_conv(p, format!("{pre}.embeddings.patch_embedding"), true);
    p.table(
        format!("{pre}.embeddings.position_embedding"),
        "vision embeddings",
        (lit(k.patches()), k.d()),
        &one,
    );
}

/// `SigLIP`'s `MultiheadAttentionPoolingHead`.
pub(crate) fn pooling_head(p: &mut Parts, pre: &str, d: &Expr, ff: &Expr) {
    let one = lit(1);
    let part = "vision pooling head";
    p.vector(format!("{pre}.probe"), part, d.clone(), &one);
    p.linear(
        format!("{pre}.attention.in_proj"),
        part,
        (d.clone(), mul(lit(3), d.clone())),
        true,
        &one,
    );
    p.linear(
        format!("{pre}.attention.out_proj"),
        part,
        (d.clone(), d.clone()),
        true,
        &one,
    );
    p.norm(format!("{pre}.layernorm"), part, d, true, &one);
    mlp(p, &format!("{pre}.mlp"), (d, ff), false, true, &one);
}

/// `Siglip2VisionModel`: a linear patch embedding `c·p² → d_vis` (biased), `num_patches`
/// positions, `SigLIP`'s encoder, `post_layernorm` and the optional pooling head.
pub(crate) fn siglip2(
    raw: &mut RawConfig<'_>,
    key: &str,
    p: &mut Parts,
) -> Result<Tower, ConfigError> {
    with_sub(raw, key, "Siglip2VisionConfig", |s| {
        let hidden = s.size("hidden_size", 768)?;
        let ffn = s.size("intermediate_size", 3072)?;
        let layers_n = s.count("num_hidden_layers", 12)?;
        let channels = s.size("num_channels", 3)?;
        let patch = s.size("patch_size", 16)?;
        let patches = s.size("num_patches", 256)?;
        let head = s.flag("vision_use_head", true)?;
        let (d, ff, l) = (
            sym("d_vis", hidden),
            sym("d_ff_vis", ffn),
            sym("L_vis", layers_n),
        );
        let one = lit(1);
        let pre = "vision_tower.vision_model";
        p.linear(
            format!("{pre}.embeddings.patch_embedding"),
            "vision embeddings",
            (
                mul(lit(channels), lit(s.mul(patch, patch, "patch_size²")?)),
                d.clone(),
            ),
            true,
            &one,
        );
        p.table(
            format!("{pre}.embeddings.position_embedding"),
            "vision embeddings",
            (lit(patches), d.clone()),
            &one,
        );
        layers(
            p,
            &format!("{pre}.encoder.layers"),
            &l,
            &VitLayer::clip(d.clone(), ff.clone()),
        );
        p.norm(
            format!("{pre}.post_layernorm"),
            "vision norms",
            &d,
            true,
            &one,
        );
        if head {
            pooling_head(p, &format!("{pre}.head"), &d, &ff);
        }
        Ok(Tower { hidden })
    })
}
