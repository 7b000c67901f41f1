//! `DeepSeek`-VL (`modeling_deepseek_vl.py`) and its hybrid (`modeling_deepseek_vl_hybrid.py`):
//! a `SigLIP` tower (`AutoModel` of `vision_config`), the hybrid's high-resolution SAM encoder
//! with a second neck and two convolutions, and the aligner; Llama text, tied by the
//! top-level key (default true).

use llmsize_core::spec::ModelSpec;

use super::parts::{lit, mul, sym, with_sub};
use super::sam::sam_encoder;
use super::{Tie, text, vision, vision_tower, with_parts};
use crate::error::ConfigError;
use crate::hf_config::HeadChoice;
use crate::hf_config::family::Family;
use crate::hf_config::raw::RawConfig;

/// `DeepseekVLForConditionalGeneration`: the tower and `aligner` (`linear1` `d_vis → d`,
/// `linear2` `d → d`, biased).
pub(crate) fn deepseek_vl(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let spec = text(raw, f, "llama", head, Tie::Top(true))?;
    let mut p = vision();
    let t = vision_tower(raw, "vision_config", "siglip_vision_model", &mut p)?;
    let one = lit(1);
    let d = sym("d", spec.hidden_size);
    let part = "aligner";
    p.linear(
        "model.aligner.linear1",
        part,
        (sym("d_vis", t.hidden), d.clone()),
        true,
        &one,
    );
    p.linear("model.aligner.linear2", part, (d.clone(), d), true, &one);
    Ok(with_parts(spec, p))
}

/// `DeepseekVLHybridForConditionalGeneration`: the `SigLIP` tower, a `SamVisionModel` of
/// `high_res_vision_config` with another neck (`high_res_vision_neck`), two stride-2 3×3
/// convolutions `c → 2c → 4c` without bias, the scalar `high_res_vision_alpha`, and the
/// aligner (`vision_proj` `d_vis → d/2`, `high_res_vision_proj` `4c → d/2`, `proj` `d → d`,
/// biased).
pub(crate) fn deepseek_vl_hybrid(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let spec = text(raw, f, "llama", head, Tie::Top(true))?;
    let mut p = vision();
    let t = vision_tower(raw, "vision_config", "siglip_vision_model", &mut p)?;
    let key = "high_res_vision_config";
    let high_type = super::parts::sub_type(raw, key, "sam_vision_model")?;
    if high_type != "sam_vision_model" {
        return Err(crate::hf_config::unsupported(
            &format!("{} ({key})", raw.file),
            high_type,
        ));
    }
    let (c, hidden) = with_sub(raw, key, "SamVisionConfig", |s| {
        let c = sam_encoder(
            s,
            &mut p,
            "model.high_res_vision_model.vision_encoder",
            true,
            1024,
        )?;
        Ok((c, s.size("hidden_size", 768)?))
    })?;
    let one = lit(1);
    let oc = sym("c_out", c);
    let part = "vision neck";
    let pre = "model.high_res_vision_neck";
    p.conv(
        format!("{pre}.conv1"),
        part,
        (sym("d_sam", hidden), lit(1), oc.clone()),
        false,
        &one,
    );
    p.norm(format!("{pre}.layer_norm1"), part, &oc, true, &one);
    p.conv(
        format!("{pre}.conv2"),
        part,
        (oc.clone(), lit(9), oc.clone()),
        false,
        &one,
    );
    p.norm(format!("{pre}.layer_norm2"), part, &oc, true, &one);
    let two = mul(lit(2), oc.clone());
    let four = mul(lit(4), oc.clone());
    let pre = "model.high_res_vision_proj";
    p.conv(
        format!("{pre}.conv1"),
        part,
        (oc, lit(9), two.clone()),
        false,
        &one,
    );
    p.conv(
        format!("{pre}.conv2"),
        part,
        (two, lit(9), four.clone()),
        false,
        &one,
    );
    p.vector("model.high_res_vision_alpha", part, lit(1), &one);
    let d = sym("d", spec.hidden_size);
    let half = lit(spec.hidden_size / 2);
    let part = "aligner";
    p.linear(
        "model.aligner.vision_proj",
        part,
        (sym("d_vis", t.hidden), half.clone()),
        true,
        &one,
    );
    p.linear(
        "model.aligner.high_res_vision_proj",
        part,
        (four, half),
        true,
        &one,
    );
    p.linear("model.aligner.proj", part, (d.clone(), d), true, &one);
    Ok(with_parts(spec, p))
}
