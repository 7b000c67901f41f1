//! SigLIP-style native-resolution towers (a 2-D patch convolution, pre-norm encoder layers
//! with separate biased q/k/v/out projections and a biased two-layer MLP, a final
//! `LayerNorm`): `VideoLLaMA` 3 (`modeling_video_llama_3.py`) and PaddleOCR-VL
//! (`modeling_paddleocr_vl.py`).

use llmsize_core::expr::Expr;
use llmsize_core::spec::ModelSpec;

use super::parts::{Parts, lit, mul, sym, with_sub, with_top as with_sub_top};
use super::{vision, with_parts};
use crate::error::ConfigError;
use crate::hf_config::HeadChoice;
use crate::hf_config::families::vision::{Tie, text};
use crate::hf_config::family::Family;
use crate::hf_config::raw::RawConfig;
use llmsize_core::{Overflow, checked};

/// What a tower's encoder layers name their tensors: the two norms, the attention module
/// and its output projection (`q_proj`, `k_proj`, `v_proj` and the MLP's `fc1`, `fc2` are
/// named alike everywhere).
pub(super) struct LayerNames {
    pub norms: [&'static str; 2],
    pub attention: &'static str,
    pub out: &'static str,
}

/// The names of `SigLIP`'s layers (`layer_norm1`, `self_attn.out_proj`).
pub(super) const SIGLIP_NAMES: LayerNames = LayerNames {
    norms: ["layer_norm1", "layer_norm2"],
    attention: "self_attn",
    out: "out_proj",
};

/// `MoonViT`'s names (`norm1`, `attn.proj`).
pub(super) const MOONVIT_NAMES: LayerNames = LayerNames {
    norms: ["norm1", "norm2"],
    attention: "attn",
    out: "proj",
};

/// `L` encoder layers of width `d` and MLP width `f`: two biased `LayerNorm`s, biased
/// `q_proj`, `k_proj`, `v_proj`, output projection, biased `fc1`, `fc2`.
pub(super) fn encoder_layers(
    p: &mut Parts,
    (pre, names): (&str, &LayerNames),
    d: &Expr,
    f: &Expr,
    l: &Expr,
) {
    for n in names.norms {
        p.norm(format!("{pre}.{n}"), "vision norms", d, true, l);
    }
    for name in ["q_proj", "k_proj", "v_proj", names.out] {
        p.linear(
            format!("{pre}.{}.{name}", names.attention),
            "vision attention",
            (d.clone(), d.clone()),
            true,
            l,
        );
    }
    p.linear(
        format!("{pre}.mlp.fc1"),
        "vision mlp",
        (d.clone(), f.clone()),
        true,
        l,
    );
    p.linear(
        format!("{pre}.mlp.fc2"),
        "vision mlp",
        (f.clone(), d.clone()),
        true,
        l,
    );
}

/// The tower's sizes: `d_vis`, `d_ff_vis`, `L_vis`, channels, patch side.
struct Sizes {
    d: u64,
    f: u64,
    l: u64,
    channels: u64,
    patch: u64,
}

/// The encoder every tower of this file shares: the biased patch convolution and the
/// layers, then the final `LayerNorm`.
fn tower(p: &mut Parts, pre: &str, k: &Sizes, positions: Option<u64>) -> Result<(), Overflow> {
    let one = lit(1);
    let d = sym("d_vis", k.d);
    let kernel = checked::mul("vision_config.patch_size²", k.patch, k.patch)?;
    p.conv(
        format!("{pre}.embeddings.patch_embedding"),
        "vision embeddings",
        (lit(k.channels), lit(kernel), d.clone()),
        true,
        &one,
    );
    if let Some(n) = positions {
        p.table(
            format!("{pre}.embeddings.position_embedding"),
            "vision embeddings",
            (lit(n), d.clone()),
            &one,
        );
    }
    encoder_layers(
        p,
        (&format!("{pre}.encoder.layers"), &SIGLIP_NAMES),
        &d,
        &sym("d_ff_vis", k.f),
        &sym("L_vis", k.l),
    );
    p.norm(
        format!("{pre}.post_layernorm"),
        "vision norms",
        &d,
        true,
        &one,
    );
    Ok(())
}

/// `VideoLlama3ForConditionalGeneration`: the `VideoLlama3VisionModel` tower (no position
/// table), the projector (`readout`: `d_vis → d → d`, biased), the text model (`qwen2` by
/// default); the text config's `tie_word_embeddings` forwarded to the composite's.
pub(super) fn video_llama_3(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let spec = text(raw, f, "qwen2", head, Tie::Either(false))?;
    // `AutoModel` builds the tower: only its own is read here.
    let kind = super::parts::sub_type(raw, "vision_config", "video_llama_3_vision")?;
    if kind != "video_llama_3_vision" {
        return Err(crate::hf_config::unsupported(
            &format!("{} (vision_config)", raw.file),
            kind,
        ));
    }
    let mut p = vision();
    let k = with_sub(raw, "vision_config", "VideoLlama3VisionConfig", |s| {
        Ok(Sizes {
            d: s.size("hidden_size", 768)?,
            f: s.size("intermediate_size", 3072)?,
            l: s.size("num_hidden_layers", 12)?,
            channels: s.size("num_channels", 3)?,
            patch: s.size("patch_size", 16)?,
        })
    })?;
    raw.check(tower(&mut p, "model.vision_model", &k, None))?;
    let one = lit(1);
    let d = sym("d", spec.hidden_size);
    let part = "multimodal projector";
    let pre = "model.projector.readout";
    p.linear(
        format!("{pre}.0"),
        part,
        (sym("d_vis", k.d), d.clone()),
        true,
        &one,
    );
    p.linear(format!("{pre}.2"), part, (d.clone(), d), true, &one);
    Ok(with_parts(spec, p))
}

/// `PaddleOCRVLForConditionalGeneration`: the `PaddleOCRVisionModel` tower (a position table
/// of `(image_size / patch_size)²`), the projector (`pre_norm` over `d_vis`, `linear_1`
/// `d_vis·m² → d_vis·m²`, `linear_2` `→ d`, biased), the text model; tied by default.
pub(super) fn paddleocr_vl(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let spec = text(raw, f, "paddleocr_vl_text", head, Tie::Either(true))?;
    let mut p = vision();
    let (k, side, m) = with_sub(raw, "vision_config", "PaddleOCRVisionConfig", |s| {
        let k = Sizes {
            d: s.size("hidden_size", 1152)?,
            f: s.size("intermediate_size", 4304)?,
            l: s.size("num_hidden_layers", 27)?,
            channels: s.size("num_channels", 3)?,
            patch: s.size("patch_size", 14)?,
        };
        let image = s.size("image_size", 384)?;
        let side = s.check(checked::div("image_size / patch_size", image, k.patch))?;
        let positions = s.mul(side, side, "(image_size / patch_size)²")?;
        Ok((k, positions, s.size("spatial_merge_size", 2)?))
    })?;
    raw.check(tower(&mut p, "model.visual.vision_model", &k, Some(side)))?;
    let one = lit(1);
    let dv = sym("d_vis", k.d);
    let wide = mul(
        dv.clone(),
        lit(raw.mul(m, m, "vision_config.spatial_merge_size²")?),
    );
    let part = "multimodal projector";
    p.norm("model.projector.pre_norm", part, &dv, true, &one);
    p.linear(
        "model.projector.linear_1",
        part,
        (wide.clone(), wide.clone()),
        true,
        &one,
    );
    p.linear(
        "model.projector.linear_2",
        part,
        (wide, sym("d", spec.hidden_size)),
        true,
        &one,
    );
    Ok(with_parts(spec, p))
}

/// `Kimi_K25ForConditionalGeneration` (`modeling_kimi_k25.py`): `MoonViT` (a biased patch
/// convolution from 3 channels, a learned `pos_emb_height × pos_emb_width` position grid,
/// pre-norm layers with biased q/k/v/`proj` and `fc1`/`fc2`, `final_layernorm`), the
/// projector (`pre_norm` over `projection_hidden_size`, `in_proj` `d_vis·k_h·k_w →
/// d_vis·k_h·k_w`, `out_proj` `→ d`, biased), the text model (`deepseek_v3` by default, and
/// for the hub's `kimi_k2`, as `Kimi_K25Config.__post_init__` renames it);
/// tied by the composite's `tie_word_embeddings` (default true).
pub(super) fn kimi_k25(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let renames = [("kimi_k2", "deepseek_v3")];
    let spec = super::text_renamed(raw, f, "deepseek_v3", &renames, head, Tie::Top(true))?;
    let mut p = vision();
    let (k, (ph, pw), (mh, mw)) = with_sub(raw, "vision_config", "Kimi_K25VisionConfig", |s| {
        let k = Sizes {
            d: s.size("hidden_size", 1152)?,
            f: s.size("intermediate_size", 4304)?,
            l: s.size("num_hidden_layers", 27)?,
            channels: 3,
            patch: s.size("patch_size", 14)?,
        };
        let grid = (s.size("pos_emb_height", 64)?, s.size("pos_emb_width", 64)?);
        Ok((k, grid, s.pair("merge_kernel_size", 2)?))
    })?;
    let norm_width = with_sub_top(raw, f.config_class, |s| {
        s.size("projection_hidden_size", 1152)
    })?;
    let one = lit(1);
    let d = sym("d_vis", k.d);
    let pre = "model.vision_tower";
    let part = "vision embeddings";
    p.conv(
        format!("{pre}.patch_embed.proj"),
        part,
        (
            lit(k.channels),
            lit(raw.mul(k.patch, k.patch, "vision_config.patch_size²")?),
            d.clone(),
        ),
        true,
        &one,
    );
    p.table(
        format!("{pre}.patch_embed.pos_emb.position_embeddings"),
        part,
        (
            lit(raw.mul(ph, pw, "vision_config.pos_emb_height·pos_emb_width")?),
            d.clone(),
        ),
        &one,
    );
    let l = sym("L_vis", k.l);
    let ff = sym("d_ff_vis", k.f);
    encoder_layers(
        &mut p,
        (&format!("{pre}.layers"), &MOONVIT_NAMES),
        &d,
        &ff,
        &l,
    );
    p.norm(
        format!("{pre}.final_layernorm"),
        "vision norms",
        &d,
        true,
        &one,
    );
    let wide = mul(d, lit(raw.mul(mh, mw, "vision_config.merge_kernel_size²")?));
    let part = "multimodal projector";
    let pre = "model.mm_projector";
    p.norm(
        format!("{pre}.pre_norm"),
        part,
        &lit(norm_width),
        true,
        &one,
    );
    p.linear(
        format!("{pre}.in_proj"),
        part,
        (wide.clone(), wide.clone()),
        true,
        &one,
    );
    p.linear(
        format!("{pre}.out_proj"),
        part,
        (wide, sym("d", spec.hidden_size)),
        true,
        &one,
    );
    Ok(with_parts(spec, p))
}

/// `MiniMaxM3VL…ForConditionalGeneration` (`modeling_minimax_m3_vl.py`): the CLIP-like tower
/// (a bias-free 3-D patch convolution, `pre_layrnorm`, the encoder layers, no final norm),
/// the projector (`linear_1` `d_vis → P`, `linear_2` `P → d`, then over `d·m²` gathered
/// patches `merge_linear_1` `→ P`, `merge_linear_2` `P → d`, all biased; `P` =
/// `projector_hidden_size`), the text model; the text config's `tie_word_embeddings`
/// forwarded to the composite's.
pub(super) fn minimax_m3_vl(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let spec = text(raw, f, "minimax_m3_vl_text", head, Tie::Either(false))?;
    let mut p = vision();
    let (k, t, m) = with_sub(raw, "vision_config", "MiniMaxM3VLVisionConfig", |s| {
        let k = Sizes {
            d: s.size("hidden_size", 1280)?,
            f: s.size("intermediate_size", 5120)?,
            l: s.size("num_hidden_layers", 32)?,
            channels: s.size("num_channels", 3)?,
            patch: s.size("patch_size", 14)?,
        };
        let t = s.size("temporal_patch_size", 2)?;
        Ok((k, t, s.size("spatial_merge_size", 2)?))
    })?;
    let proj = with_sub_top(raw, f.config_class, |s| {
        s.size("projector_hidden_size", 6144)
    })?;
    let one = lit(1);
    let dv = sym("d_vis", k.d);
    let pre = "model.vision_tower";
    let kernel = raw.check(checked::product(
        "vision_config.temporal_patch_size·patch_size²",
        [t, k.patch, k.patch],
    ))?;
    p.conv(
        format!("{pre}.embeddings.proj"),
        "vision embeddings",
        (lit(k.channels), lit(kernel), dv.clone()),
        false,
        &one,
    );
    p.norm(
        format!("{pre}.pre_layrnorm"),
        "vision norms",
        &dv,
        true,
        &one,
    );
    encoder_layers(
        &mut p,
        (&format!("{pre}.layers"), &SIGLIP_NAMES),
        &dv,
        &sym("d_ff_vis", k.f),
        &sym("L_vis", k.l),
    );
    let d = sym("d", spec.hidden_size);
    let pp = sym("d_proj", proj);
    let part = "multimodal projector";
    let pre = "model.multi_modal_projector";
    let wide = mul(
        d.clone(),
        lit(raw.mul(m, m, "vision_config.spatial_merge_size²")?),
    );
    for (name, io) in [
        ("linear_1", (dv, pp.clone())),
        ("linear_2", (pp.clone(), d.clone())),
        ("merge_linear_1", (wide, pp.clone())),
        ("merge_linear_2", (pp, d)),
    ] {
        p.linear(format!("{pre}.{name}"), part, io, true, &one);
    }
    Ok(with_parts(spec, p))
}

/// `Cosmos3EdgeForConditionalGeneration` (`modeling_cosmos3_edge.py`): a SigLIP2-style tower
/// (a biased linear patch embedding of `channels·patch²`, a position table of
/// `num_patches`, the encoder layers, `post_layernorm`), the merger (a `LayerNorm` over
/// `d_vis`, `linear_fc1` `d_vis·m² → P`, `linear_fc2` `P → d`, biased; `P` =
/// `projector_hidden_size`), the text model; never tied (`_tied_weights_keys = {}` on the
/// class, so `tie_word_embeddings: true` leaves the head its own).
pub(super) fn cosmos3_edge(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let spec = text(raw, f, "cosmos3_edge_text", head, Tie::Never)?;
    let mut p = vision();
    let (k, n, m) = with_sub(raw, "vision_config", "Cosmos3EdgeVisionConfig", |s| {
        let k = Sizes {
            d: s.size("hidden_size", 1152)?,
            f: s.size("intermediate_size", 4304)?,
            l: s.size("num_hidden_layers", 27)?,
            channels: s.size("num_channels", 3)?,
            patch: s.size("patch_size", 16)?,
        };
        let n = s.size("num_patches", 256)?;
        Ok((k, n, s.size("spatial_merge_size", 2)?))
    })?;
    let proj = with_sub_top(raw, f.config_class, |s| {
        s.size("projector_hidden_size", 11520)
    })?;
    raw.check(tower(&mut p, "model.visual", &k, Some(n)))?;
    let one = lit(1);
    let dv = sym("d_vis", k.d);
    let pp = sym("d_proj", proj);
    let part = "multimodal projector";
    p.norm("model.merger.norm", part, &dv, true, &one);
    p.linear(
        "model.merger.linear_fc1",
        part,
        (
            mul(dv, lit(raw.mul(m, m, "vision_config.spatial_merge_size²")?)),
            pp.clone(),
        ),
        true,
        &one,
    );
    p.linear(
        "model.merger.linear_fc2",
        part,
        (pp, sym("d", spec.hidden_size)),
        true,
        &one,
    );
    Ok(with_parts(spec, p))
}
