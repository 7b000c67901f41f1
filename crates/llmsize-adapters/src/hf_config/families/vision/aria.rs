//! Aria (`modeling_aria.py`, `AriaForConditionalGeneration`): an `Idefics3VisionTransformer`
//! (`AutoModel` of `vision_config`, `idefics3_vision` by default), the `AriaProjector` (learned
//! queries cross-attending to the patches, then an MLP into the text width) and the
//! `aria_text` MoE model of `text_config`; the LM head is its own (`tie_word_embeddings`,
//! default false).

use llmsize_core::spec::ModelSpec;
use serde_json::Value;

use super::parts::{lit, mul, object, sub_type, sym};
use super::{Tie, idefics, text, vision, with_parts};
use crate::error::ConfigError;
use crate::hf_config::HeadChoice;
use crate::hf_config::family::Family;
use crate::hf_config::raw::RawConfig;

/// `AriaConfig.projector_patch_to_query_dict` default `{1225: 128, 4900: 256}`: the number of
/// learned queries is its largest value, unless the config saves
/// `max_value_projector_patch_to_query_dict` (kwargs are set after `__post_init__` computes it).
fn max_queries(raw: &mut RawConfig<'_>) -> Result<u64, ConfigError> {
    if let Some(n) = raw.size_opt("max_value_projector_patch_to_query_dict")? {
        return Ok(n);
    }
    let key = "projector_patch_to_query_dict";
    match raw.value(key) {
        None | Some(Value::Null) => {
            raw.assume(
                key,
                "{1225: 128, 4900: 256}",
                "absent; `AriaConfig` default",
            );
            Ok(256)
        }
        Some(v @ Value::Object(m)) => {
            let mut best = None::<u64>;
            for x in m.values() {
                let n = match x {
                    Value::Number(n) => n.as_u64(),
                    Value::String(s) => s.parse().ok(),
                    _ => None,
                }
                .ok_or_else(|| raw.invalid(key, v, "an object of patch counts to query counts"))?;
                best = Some(best.map_or(n, |b| b.max(n)));
            }
            best.filter(|n| *n > 0)
                .ok_or_else(|| raw.invalid(key, v, "a non-empty object of query counts"))
        }
        Some(v) => Err(raw.invalid(key, v, "an object of patch counts to query counts")),
    }
}

/// `AriaForConditionalGeneration`.
pub(crate) fn aria(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let spec = text(raw, f, "aria_text", head, Tie::Top(false))?;
    object(raw, "vision_config")?;
    let t = sub_type(raw, "vision_config", "idefics3_vision")?;
    if t != "idefics3_vision" {
        return Err(crate::hf_config::unsupported(
            &format!("{} (vision_config)", raw.file),
            t,
        ));
    }
    let mut p = vision();
    let tower = idefics::tower(
        raw,
        "Idefics3VisionConfig",
        (1152, 3072, 12, 224, 32),
        &mut p,
    )?;
    let q = max_queries(raw)?;
    let one = lit(1);
    let dv = sym("d_vis", tower.hidden);
    let d = sym("d", spec.hidden_size);
    let part = "multimodal projector";
    let pre = "model.multi_modal_projector";
    p.table(format!("{pre}.query"), part, (lit(q), dv.clone()), &one);
    // `AriaCrossAttention`: unbiased q/k/v, a biased `nn.MultiheadAttention` (in_proj 3d,
    // out_proj), a biased `linear`, `layer_norm` and `layer_norm_kv`.
    for n in ["q_proj", "k_proj", "v_proj"] {
        p.linear(
            format!("{pre}.cross_attn.{n}"),
            part,
            (dv.clone(), dv.clone()),
            false,
            &one,
        );
    }
    p.linear(
        format!("{pre}.cross_attn.multihead_attn.in_proj"),
        part,
        (dv.clone(), mul(lit(3), dv.clone())),
        true,
        &one,
    );
    for n in ["multihead_attn.out_proj", "linear"] {
        p.linear(
            format!("{pre}.cross_attn.{n}"),
            part,
            (dv.clone(), dv.clone()),
            true,
            &one,
        );
    }
    for n in [
        "cross_attn.layer_norm",
        "cross_attn.layer_norm_kv",
        "layer_norm",
    ] {
        p.norm(format!("{pre}.{n}"), part, &dv, true, &one);
    }
    // `AriaProjectorMLP(d_vis, d, d)`: unbiased `linear_in`, `linear_out`.
    p.linear(
        format!("{pre}.feed_forward.linear_in"),
        part,
        (dv, d.clone()),
        false,
        &one,
    );
    p.linear(
        format!("{pre}.feed_forward.linear_out"),
        part,
        (d.clone(), d),
        false,
        &one,
    );
    Ok(with_parts(spec, p))
}
