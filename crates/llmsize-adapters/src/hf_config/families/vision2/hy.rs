//! HY-V4-VL (`modeling_hy_v4_vl.py`, `HYV4VLForConditionalGeneration`): a `ViT` with a learned
//! position grid and a convolutional patch merger, and the `hy_v4_vl_text` model (HY-V4's
//! layers: MLA with a DSA indexer, output gates, sinks and hyper-connections).

use llmsize_core::spec::ModelSpec;

use super::parts::{Parts, Sub, lit, mul, sym};
use super::{text_or_default, vision, with_parts, with_sub_or_default};
use crate::error::ConfigError;
use crate::hf_config::HeadChoice;
use crate::hf_config::families::vision::Tie;
use crate::hf_config::family::Family;
use crate::hf_config::raw::RawConfig;
use llmsize_core::checked;

/// The vision tower (`HYV4VLVisionModel`): a patch convolution (`c·p² → d`, biased) plus a
/// learned position table of `(max_image_size / p)² + 1` rows; `num_hidden_layers` blocks of
/// `LayerNorm`, attention (q, k, v, o biased), `LayerNorm`, MLP (`fc1`, `fc2`, biased); then
/// the merger: an `RMSNorm`, a `m×m` convolution `d → m²·d` and a 1×1 convolution to
/// `out_hidden_size` (biased), and a learned `image_newline`.
fn hy_v4_vl_tower(s: &mut Sub<'_, '_>, p: &mut Parts) -> Result<(), ConfigError> {
    let d = s.size("hidden_size", 1536)?;
    let n = s.size("num_hidden_layers", 40)?;
    let heads = s.size("num_attention_heads", 16)?;
    let f = s.size("intermediate_size", 6144)?;
    let channels = s.size("num_channels", 3)?;
    let patch = s.size("patch_size", 16)?;
    let max_image = s.size("max_image_size", 2048)?;
    let out = s.size("out_hidden_size", 6144)?;
    let merge = s.size("spatial_merge_size", 2)?;
    let hd = match s.size_opt("head_dim")? {
        Some(h) => h,
        None => s.check(checked::div("hidden_size / num_attention_heads", d, heads))?,
    };
    if hd == 0 {
        return Err(s.r.raw.invalid(
            "num_attention_heads",
            &heads.into(),
            &format!("at most `hidden_size` ({d})"),
        ));
    }
    patch_embedding(s, p, (channels, patch, max_image), d)?;
    let one = lit(1);
    let dv = || sym("d_vis", d);
    let all = sym("L_vis", n);
    let width = mul(sym("heads_vis", heads), sym("d_head_vis", hd));
    p.norm(
        "vision_tower.layers.layer_norm1",
        "vision blocks",
        &dv(),
        true,
        &all,
    );
    for name in ["q_proj", "k_proj", "v_proj"] {
        p.linear(
            format!("vision_tower.layers.self_attn.{name}"),
            "vision blocks",
            (dv(), width.clone()),
            true,
            &all,
        );
    }
    p.linear(
        "vision_tower.layers.self_attn.o_proj",
        "vision blocks",
        (width, dv()),
        true,
        &all,
    );
    p.norm(
        "vision_tower.layers.layer_norm2",
        "vision blocks",
        &dv(),
        true,
        &all,
    );
    p.linear(
        "vision_tower.layers.mlp.fc1",
        "vision blocks",
        (dv(), sym("d_ff_vis", f)),
        true,
        &all,
    );
    p.linear(
        "vision_tower.layers.mlp.fc2",
        "vision blocks",
        (sym("d_ff_vis", f), dv()),
        true,
        &all,
    );
    let m2 = || mul(sym("m", merge), sym("m", merge));
    p.norm(
        "vision_tower.patch_merger.before_rms",
        "vision merger",
        &dv(),
        false,
        &one,
    );
    p.conv(
        "vision_tower.patch_merger.proj_conv",
        "vision merger",
        (dv(), m2(), mul(dv(), m2())),
        true,
        &one,
    );
    p.conv(
        "vision_tower.patch_merger.proj_out",
        "vision merger",
        (mul(dv(), m2()), lit(1), sym("d", out)),
        true,
        &one,
    );
    p.vector(
        "vision_tower.patch_merger.image_newline",
        "vision merger",
        sym("d", out),
        &one,
    );
    Ok(())
}

/// `HYV4VLForConditionalGeneration`: the text model of `text_config` (a float32 `lm_head`,
/// tied by the composite's `tie_word_embeddings`, default false) and the vision tower.
pub(super) fn hy_v4_vl(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let spec = text_or_default(raw, f, "hy_v4_vl_text", head, Tie::Top(false))?;
    let mut p = vision();
    with_sub_or_default(raw, "vision_config", "HYV4VLVisionConfig", |s| {
        hy_v4_vl_tower(s, &mut p)
    })?;
    Ok(with_parts(spec, p))
}

/// The `HunYuan` towers' patch embedding: a biased convolution `c·p² → d` and a learned
/// position table of `(max_image_size / p)² + 1` rows (HY-V4-VL and `HunYuanVLVisionTransformer`
/// alike).
pub(super) fn patch_embedding(
    s: &mut Sub<'_, '_>,
    p: &mut Parts,
    (channels, patch, max_image): (u64, u64, u64),
    d: u64,
) -> Result<(), ConfigError> {
    let edge = s.check(checked::div(
        "max_image_size / patch_size",
        max_image,
        patch,
    ))?;
    let rows = edge
        .checked_mul(edge)
        .and_then(|x| x.checked_add(1))
        .ok_or_else(|| {
            s.r.raw.invalid(
                "max_image_size",
                &max_image.into(),
                "a size whose position grid fits",
            )
        })?;
    let one = lit(1);
    let dv = || sym("d_vis", d);
    p.conv(
        "vision_tower.embeddings.patch_embedding",
        "vision patch embedding",
        (
            sym("num_channels", channels),
            mul(sym("p", patch), sym("p", patch)),
            dv(),
        ),
        true,
        &one,
    );
    p.table(
        "vision_tower.embeddings.position_embedding.weight",
        "vision patch embedding",
        (sym("positions_vis", rows), dv()),
        &one,
    );
    Ok(())
}
