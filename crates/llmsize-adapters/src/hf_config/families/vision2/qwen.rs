//! The Qwen-VL towers (`modeling_qwen2_vl.py`, `modeling_qwen2_5_vl.py`,
//! `modeling_qwen3_vl.py`) and their composites.

use llmsize_core::expr::Expr;
use llmsize_core::spec::ModelSpec;

use super::parts::{Parts, Sub, lit, mul, sub_type, sym, with_sub};
use super::{vision, with_parts};
use crate::error::ConfigError;
use crate::hf_config::families::vision::{Tie, text};
use crate::hf_config::family::Family;
use crate::hf_config::raw::RawConfig;
use crate::hf_config::{HeadChoice, architecture};
use llmsize_core::checked::{self, Checked};

/// The 3-D patch convolution `PatchEmbed.proj`: `in_channels·temporal·patch² → d`.
pub(super) fn patch_embed(
    s: &mut Sub<'_, '_>,
    p: &mut Parts,
    name: &str,
    d: &Expr,
    patch_default: u64,
    bias: bool,
) -> Result<(), ConfigError> {
    let c = s.size("in_channels", 3)?;
    let t = s.size("temporal_patch_size", 2)?;
    let ps = s.size("patch_size", patch_default)?;
    let kernel = s.check(checked::product(
        "temporal_patch_size·patch_size²",
        [t, ps, ps],
    ))?;
    p.conv(
        format!("{name}.proj"),
        "vision embeddings",
        (lit(c), lit(kernel), d.clone()),
        bias,
        &lit(1),
    );
    Ok(())
}

/// The attention of a vision block: a fused biased `qkv` and `proj` (bias `proj_bias`).
pub(super) fn attention(
    p: &mut Parts,
    pre: &str,
    d: &Expr,
    qkv_bias: bool,
    proj_bias: bool,
    n: &Expr,
) {
    let part = "vision attention";
    p.linear(
        format!("{pre}.attn.qkv"),
        part,
        (d.clone(), mul(lit(3), d.clone())),
        qkv_bias,
        n,
    );
    p.linear(
        format!("{pre}.attn.proj"),
        part,
        (d.clone(), d.clone()),
        proj_bias,
        n,
    );
}

/// A gated MLP `gate_proj`, `up_proj` `d → f`, `down_proj` `f → d`.
pub(super) fn gated(p: &mut Parts, pre: &str, d: &Expr, f: &Expr, bias: bool, n: &Expr) {
    let part = "vision mlp";
    p.linear(
        format!("{pre}.gate_proj"),
        part,
        (d.clone(), f.clone()),
        bias,
        n,
    );
    p.linear(
        format!("{pre}.up_proj"),
        part,
        (d.clone(), f.clone()),
        bias,
        n,
    );
    p.linear(
        format!("{pre}.down_proj"),
        part,
        (f.clone(), d.clone()),
        bias,
        n,
    );
}

/// A two-layer MLP `a → b → c`, biased.
fn two(p: &mut Parts, pre: &str, names: (&str, &str), (a, b, c): (&Expr, &Expr, &Expr), n: &Expr) {
    let part = "vision mlp";
    p.linear(
        format!("{pre}.{}", names.0),
        part,
        (a.clone(), b.clone()),
        true,
        n,
    );
    p.linear(
        format!("{pre}.{}", names.1),
        part,
        (b.clone(), c.clone()),
        true,
        n,
    );
}

/// The patch merger (`PatchMerger`): a norm over `d` (`LayerNorm` when `ln_bias`, else
/// `RMSNorm`), `Linear(d·m², d·m²)`, GELU, `Linear(d·m², out)`, both biased.
fn merger(p: &mut Parts, pre: &str, d: &Expr, m2: u64, out: &Expr, ln_bias: bool) {
    let one = lit(1);
    let wide = mul(d.clone(), lit(m2));
    p.norm(
        format!("{pre}.ln_q"),
        "multimodal projector",
        d,
        ln_bias,
        &one,
    );
    two(
        p,
        &format!("{pre}.mlp"),
        ("0", "2"),
        (&wide, &wide, out),
        &one,
    );
}

/// Qwen2-VL's tower (`Qwen2VisionTransformerPretrainedModel`): `LayerNorm`s, a biased
/// `qkv`/`proj`, an MLP `embed_dim → embed_dim·mlp_ratio`, the merger to `hidden_size`.
pub(super) fn qwen2_vl_tower(
    raw: &mut RawConfig<'_>,
    key: &str,
    p: &mut Parts,
) -> Result<(), ConfigError> {
    with_sub(raw, key, "Qwen2VLVisionConfig", |s| {
        let d = sym("d_vis", s.size("embed_dim", 1280)?);
        let out = sym("d_out", s.size("hidden_size", 3584)?);
        let l = sym("L_vis", s.size("depth", 32)?);
        let ratio = s.size("mlp_ratio", 4)?;
        let m = s.size("spatial_merge_size", 2)?;
        let f = mul(d.clone(), lit(ratio));
        patch_embed(s, p, "visual.patch_embed", &d, 14, false)?;
        let pre = "visual.blocks";
        p.norm(format!("{pre}.norm1"), "vision norms", &d, true, &l);
        p.norm(format!("{pre}.norm2"), "vision norms", &d, true, &l);
        attention(p, pre, &d, true, true, &l);
        two(p, &format!("{pre}.mlp"), ("fc1", "fc2"), (&d, &f, &d), &l);
        let m2 = s.mul(m, m, "spatial_merge_size²")?;
        merger(p, "visual.merger", &d, m2, &out, true);
        Ok(())
    })
}

/// Qwen2.5-VL's tower (`Qwen2_5_VisionTransformerPretrainedModel`): `RMSNorm`s, a biased
/// `qkv`/`proj`, a biased gated MLP of `intermediate_size`, the merger (`RMSNorm`) to
/// `out_hidden_size`. With `gqa` (EXAONE 4.5's copy), `qkv` yields `num_heads` queries and
/// `num_key_value_heads` keys and values of `hidden_size // num_heads`.
pub(super) fn qwen2_5_vl_tower(
    raw: &mut RawConfig<'_>,
    key: &str,
    class: &'static str,
    gqa: bool,
    p: &mut Parts,
) -> Result<(), ConfigError> {
    with_sub(raw, key, class, |s| {
        let dv = s.size("hidden_size", 3584)?;
        let d = sym("d_vis", dv);
        let f = sym("d_ff_vis", s.size("intermediate_size", 3420)?);
        let out = sym("d_out", s.size("out_hidden_size", 3584)?);
        let l = sym("L_vis", s.size("depth", 32)?);
        let m = s.size("spatial_merge_size", 2)?;
        patch_embed(s, p, "visual.patch_embed", &d, 14, false)?;
        let pre = "visual.blocks";
        p.norm(format!("{pre}.norm1"), "vision norms", &d, false, &l);
        p.norm(format!("{pre}.norm2"), "vision norms", &d, false, &l);
        if gqa {
            let heads = s.size("num_heads", 16)?;
            let kv = s.size("num_key_value_heads", 8)?;
            let dh = s.check(checked::div("hidden_size / num_heads", dv, heads))?;
            let qkv = s.check(
                (Checked::new(heads) * dh + Checked::new(kv) * dh * 2u64)
                    .get("num_heads·d_h + 2·num_key_value_heads·d_h"),
            )?;
            let part = "vision attention";
            p.linear(
                format!("{pre}.attn.qkv"),
                part,
                (d.clone(), lit(qkv)),
                true,
                &l,
            );
            p.linear(
                format!("{pre}.attn.proj"),
                part,
                (d.clone(), d.clone()),
                true,
                &l,
            );
        } else {
            attention(p, pre, &d, true, true, &l);
        }
        gated(p, &format!("{pre}.mlp"), &d, &f, true, &l);
        let m2 = s.mul(m, m, "spatial_merge_size²")?;
        merger(p, "visual.merger", &d, m2, &out, false);
        Ok(())
    })
}

/// Qwen3-VL's tower (`Qwen3VLVisionModel`): a biased patch convolution, learned positions
/// (`num_position_embeddings`), `LayerNorm` blocks with a biased two-layer MLP, the merger
/// (`LayerNorm` over `d`) and, with `deepstack`, one deepstack merger (`LayerNorm` over
/// `d·m²`) per `deepstack_visual_indexes` entry (Qwen3.5's tower has none).
pub(super) fn qwen3_vl_tower(
    raw: &mut RawConfig<'_>,
    key: &str,
    class: &'static str,
    deepstack: bool,
    p: &mut Parts,
) -> Result<(), ConfigError> {
    with_sub(raw, key, class, |s| {
        let d = sym("d_vis", s.size("hidden_size", 1152)?);
        let f = sym("d_ff_vis", s.size("intermediate_size", 4304)?);
        let out = sym("d_out", s.size("out_hidden_size", 3584)?);
        let l = sym("L_vis", s.size("depth", 27)?);
        let m = s.size("spatial_merge_size", 2)?;
        let positions = s.size("num_position_embeddings", 2304)?;
        let deep = if deepstack {
            s.list("deepstack_visual_indexes", &[8, 16, 24])?.len() as u64
        } else {
            0
        };
        let one = lit(1);
        patch_embed(s, p, "visual.patch_embed", &d, 16, true)?;
        p.table(
            "visual.pos_embed",
            "vision embeddings",
            (lit(positions), d.clone()),
            &one,
        );
        let pre = "visual.blocks";
        p.norm(format!("{pre}.norm1"), "vision norms", &d, true, &l);
        p.norm(format!("{pre}.norm2"), "vision norms", &d, true, &l);
        attention(p, pre, &d, true, true, &l);
        two(
            p,
            &format!("{pre}.mlp"),
            ("linear_fc1", "linear_fc2"),
            (&d, &f, &d),
            &l,
        );
        let wide = mul(d.clone(), lit(s.mul(m, m, "spatial_merge_size²")?));
        let part = "multimodal projector";
        p.norm("visual.merger.norm", part, &d, true, &one);
        two(
            p,
            "visual.merger",
            ("linear_fc1", "linear_fc2"),
            (&wide, &wide, &out),
            &one,
        );
        if deep > 0 {
            let n = lit(deep);
            let pre = "visual.deepstack_merger_list";
            p.norm(format!("{pre}.norm"), part, &wide, true, &n);
            two(
                p,
                pre,
                ("linear_fc1", "linear_fc2"),
                (&wide, &wide, &out),
                &n,
            );
        }
        Ok(())
    })
}

/// `Qwen2VLForConditionalGeneration`.
pub(super) fn qwen2_vl(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let spec = text(raw, f, "qwen2_vl_text", head, Tie::Either(false))?;
    let mut p = vision();
    qwen2_vl_tower(raw, "vision_config", &mut p)?;
    Ok(with_parts(spec, p))
}

/// `Qwen2_5_VLForConditionalGeneration`.
pub(super) fn qwen2_5_vl(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let spec = text(raw, f, "qwen2_5_vl_text", head, Tie::Either(false))?;
    let mut p = vision();
    qwen2_5_vl_tower(
        raw,
        "vision_config",
        "Qwen2_5_VLVisionConfig",
        false,
        &mut p,
    )?;
    Ok(with_parts(spec, p))
}

/// `Qwen3VLForConditionalGeneration` and the MoE one (`tie_word_embeddings` of the
/// composite alone: the text config's default differs and is not forwarded).
pub(super) fn qwen3_vl(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let (text_type, vis_class) = match f.model_type {
        "qwen3_vl_moe" => ("qwen3_vl_moe_text", "Qwen3VLMoeVisionConfig"),
        _ => ("qwen3_vl_text", "Qwen3VLVisionConfig"),
    };
    let spec = text(raw, f, text_type, head, Tie::Top(false))?;
    let mut p = vision();
    qwen3_vl_tower(raw, "vision_config", vis_class, true, &mut p)?;
    Ok(with_parts(spec, p))
}

/// `Qwen3_5ForConditionalGeneration` and the MoE one: the Qwen3-VL tower without deepstack
/// mergers, the hybrid text model of `text_config`, tied by the composite's
/// `tie_word_embeddings` alone. `Qwen3_5ForCausalLM` (named in `architectures`) is the text
/// model alone, tied by the text config.
pub(super) fn qwen3_5(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let (text_type, vis_class) = match f.model_type {
        "qwen3_5_moe" => ("qwen3_5_moe_text", "Qwen3_5MoeVisionConfig"),
        _ => ("qwen3_5_text", "Qwen3_5VisionConfig"),
    };
    if architecture(raw, f.architecture).ends_with("ForCausalLM") {
        return text(raw, f, text_type, head, Tie::Text);
    }
    let spec = text(raw, f, text_type, head, Tie::Top(false))?;
    let mut p = vision();
    qwen3_vl_tower(raw, "vision_config", vis_class, false, &mut p)?;
    Ok(with_parts(spec, p))
}

/// A Qwen-VL tower built by `AutoModel` from the sub-config under `key` (`default_type` when
/// it names none); the width it hands the text model (`out_hidden_size` or `hidden_size`).
pub(super) fn auto_tower(
    raw: &mut RawConfig<'_>,
    key: &str,
    default_type: &str,
    p: &mut Parts,
) -> Result<(), ConfigError> {
    match sub_type(raw, key, default_type)? {
        "qwen2_vl_vision" => qwen2_vl_tower(raw, key, p),
        "qwen2_5_vl_vision" => qwen2_5_vl_tower(raw, key, "Qwen2_5_VLVisionConfig", false, p),
        "qwen3_vl_vision" => qwen3_vl_tower(raw, key, "Qwen3VLVisionConfig", true, p),
        "qwen3_vl_moe_vision" => qwen3_vl_tower(raw, key, "Qwen3VLMoeVisionConfig", true, p),
        "qwen3_5_vision" => qwen3_vl_tower(raw, key, "Qwen3_5VisionConfig", false, p),
        "qwen3_5_moe_vision" => qwen3_vl_tower(raw, key, "Qwen3_5MoeVisionConfig", false, p),
        other => Err(crate::hf_config::unsupported(
            &format!("{} ({key})", raw.file),
            other,
        )),
    }
}

/// `Cosmos3OmniForConditionalGeneration`: a Qwen3-VL tower and text model, each built by
/// `AutoModel` (the vision config is always read as `qwen3_vl_vision`); tied by the
/// composite's `tie_word_embeddings` alone.
pub(super) fn cosmos3_omni(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let spec = text(raw, f, "qwen3_vl_text", head, Tie::Top(false))?;
    let mut p = vision();
    qwen3_vl_tower(raw, "vision_config", "Qwen3VLVisionConfig", true, &mut p)?;
    Ok(with_parts(spec, p))
}

/// `HyperCLOVAXVisionV2ForConditionalGeneration`: an `AutoModel` tower (Qwen2.5-VL's by
/// default), a biased `projector` `out_hidden_size → d`, the text model (`hyperclovax` by
/// default); tied by the composite's `tie_word_embeddings` (default true).
pub(super) fn hyperclovax_vision_v2(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let spec = text(raw, f, "hyperclovax", head, Tie::Top(true))?;
    let tower = sub_type(raw, "vision_config", "qwen2_5_vl_vision")?;
    if tower == "qwen2_vl_vision" {
        // `Qwen2VLVisionConfig` has no `out_hidden_size` for the projector to read.
        return Err(crate::hf_config::unsupported(
            &format!("{} (vision_config)", raw.file),
            tower,
        ));
    }
    let mut p = vision();
    auto_tower(raw, "vision_config", "qwen2_5_vl_vision", &mut p)?;
    let out = with_sub(raw, "vision_config", "Qwen2_5_VLVisionConfig", |s| {
        s.size("out_hidden_size", 3584)
    })?;
    p.linear(
        "model.projector",
        "multimodal projector",
        (sym("d_out", out), sym("d", spec.hidden_size)),
        true,
        &lit(1),
    );
    Ok(with_parts(spec, p))
}

/// `Exaone4_5_ForConditionalGeneration`: Qwen2.5-VL's tower with grouped keys and values,
/// the text model (`exaone4`; the first releases' `exaone4_5_text` is read as it, as
/// `Exaone4_5_Config.__post_init__` does); tied by
/// the composite's `tie_word_embeddings` alone.
pub(super) fn exaone4_5(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let renames = [("exaone4_5_text", "exaone4")];
    let spec = super::text_renamed(raw, f, "exaone4", &renames, head, Tie::Top(false))?;
    let mut p = vision();
    qwen2_5_vl_tower(raw, "vision_config", "Exaone4_5_VisionConfig", true, &mut p)?;
    Ok(with_parts(spec, p))
}
