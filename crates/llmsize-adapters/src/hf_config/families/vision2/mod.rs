//! Vision-language (and omni) models with native-resolution or windowed towers: the Qwen-VL
//! line (a 3-D patch convolution, rotary vision blocks, a patch merger gathering
//! `spatial_merge_size²` patches), GLM-V, and their descendants. The text model is read
//! through the registry from `text_config` (the composites' own text types are entries of
//! this file when no other file has them); the towers and projectors are model-level extras in
//! the `vision` (and `audio`) category. The KV cache is the text model's.
//!
//! Files: `qwen.rs` (Qwen2-VL, Qwen2.5-VL, Qwen3-VL(-MoE), Qwen3.5(-MoE) towers; Cosmos3-Omni,
//! HyperCLOVAX-Vision-V2, EXAONE 4.5), `glm.rs` (GLM-4V(-MoE), GLM-4.6V, GLM-OCR),
//! `omni.rs` (the Qwen omni thinkers' audio encoders), `navit.rs` (SigLIP-style towers:
//! `VideoLLaMA` 3, PaddleOCR-VL, Kimi-K2.5, MiniMax-M3-VL, Cosmos3-Edge), `ernie.rs`
//! (ERNIE 4.5-VL-MoE), `muse.rs` (Muse-Glimmer), `step.rs` (Step-3.7), `inkling.rs`
//! (Inkling, Inkling 2, Inkling 2 Loop), `dots3.rs` (dots.llm3: an expert-pyramid tower and an
//! audio encoder), `hy.rs` (HY-V4-VL), `hunyuan_vl.rs`
//! (Hunyuan VL / `HunyuanOCR`), `text.rs` (the composites' text types as blocks).

// The tower vocabulary of the vision family (`families/vision/parts.rs`).
use super::vision::parts;

mod dots3;
mod ernie;
mod glm;
mod hunyuan_vl;
mod hy;
mod inkling;
mod muse;
mod navit;
mod omni;
mod qwen;
mod step;
mod text;

use llmsize_core::Category;
use llmsize_core::expr::Expr;
use llmsize_core::spec::ModelSpec;

use serde_json::{Map, Value};

use crate::error::ConfigError;
use crate::hf_config::HeadChoice;
use crate::hf_config::families::vision::{Tie, text};
use crate::hf_config::family::{Family, Reader};
use crate::hf_config::raw::RawConfig;
use parts::{Parts, Sub};

/// A new vision parts list.
fn vision() -> Parts {
    Parts::new(Category::Vision)
}

/// The text model under `text_config` (of `default_type` when it names none), read as
/// [`text`] does, except that a `model_type` the composite's configuration class renames
/// (`renames`: old → new, as its `__post_init__` does for first releases) is read as the new
/// type.
fn text_renamed(
    raw: &mut RawConfig<'_>,
    family: &Family,
    default_type: &str,
    renames: &[(&str, &str)],
    head: HeadChoice,
    tie: Tie,
) -> Result<ModelSpec, ConfigError> {
    let found = parts::sub_type(raw, "text_config", default_type)?;
    let Some((_, new)) = renames.iter().find(|(old, _)| *old == found) else {
        return text(raw, family, default_type, head, tie);
    };
    let mut map = raw.map.clone();
    if let Some(Value::Object(sub)) = map.get_mut("text_config") {
        sub.insert("model_type".to_owned(), Value::from(*new));
    }
    let mut inner = raw.sibling(&map);
    let spec = text(&mut inner, family, default_type, head, tie)?;
    let reason = format!("`{}` reads `{found}` as `{new}`", family.config_class);
    raw.assume("text_config.model_type", new, &reason);
    for a in inner.assumptions {
        raw.assume(&a.field, a.value, &a.reason);
    }
    for (symbol, source) in inner.sources {
        raw.source(symbol, &source);
    }
    Ok(spec)
}

/// Run `f` on the sub-config under `key`, or on the class defaults when it is absent.
pub(super) fn with_sub_or_default<T>(
    raw: &mut RawConfig<'_>,
    key: &str,
    class: &'static str,
    f: impl FnOnce(&mut Sub<'_, '_>) -> Result<T, ConfigError>,
) -> Result<T, ConfigError> {
    if raw.value(key).is_some_and(|v| !v.is_null()) {
        return parts::with_sub(raw, key, class, f);
    }
    let empty = Map::new();
    let mut inner = raw.nested(key, &empty);
    let out = f(&mut Sub {
        r: Reader {
            raw: &mut inner,
            class,
        },
    })?;
    for a in inner.assumptions {
        raw.assume(&format!("{key}.{}", a.field), a.value, &a.reason);
    }
    Ok(out)
}

/// [`text`], with the text configuration class's defaults when `text_config` is absent or
/// null (as `sub_configs_defaults` builds it).
fn text_or_default(
    raw: &mut RawConfig<'_>,
    family: &Family,
    default_type: &str,
    head: HeadChoice,
    tie: Tie,
) -> Result<ModelSpec, ConfigError> {
    if raw.value("text_config").is_some() {
        return text(raw, family, default_type, head, tie);
    }
    let mut map = raw.map.clone();
    map.insert("text_config".to_owned(), Value::Object(Map::new()));
    let mut inner = raw.sibling(&map);
    let spec = text(&mut inner, family, default_type, head, tie)?;
    raw.assume(
        "text_config",
        "{}",
        &format!(
            "absent; `{}` builds the text config's defaults",
            family.config_class
        ),
    );
    for a in inner.assumptions {
        raw.assume(&a.field, a.value, &a.reason);
    }
    for (symbol, source) in inner.sources {
        raw.source(symbol, &source);
    }
    Ok(spec)
}

/// A spec with the parts appended.
fn with_parts(mut spec: ModelSpec, p: Parts) -> ModelSpec {
    spec.extras.extend(p.out);
    spec
}

/// The entries of this file.
pub(crate) const FAMILIES: &[Family] = &[
    Family::code(
        "hunyuan_vl",
        "HunYuanVLConfig",
        "HunYuanVLForConditionalGeneration",
        hunyuan_vl::hunyuan_vl,
    ),
    Family::block(
        "hunyuan_vl_text",
        "HunYuanVLTextConfig",
        "HunYuanVLForConditionalGeneration",
        &super::dense::HUNYUAN_V1_DENSE,
    ),
    Family::code(
        "hy_v4_vl",
        "HYV4VLConfig",
        "HYV4VLForConditionalGeneration",
        hy::hy_v4_vl,
    ),
    Family::code(
        "dots3_note",
        "Dots3NoteConfig",
        "Dots3NoteForConditionalGeneration",
        dots3::dots3_note,
    ),
    Family::code(
        "qwen2_vl",
        "Qwen2VLConfig",
        "Qwen2VLForConditionalGeneration",
        qwen::qwen2_vl,
    ),
    Family::code(
        "qwen2_5_vl",
        "Qwen2_5_VLConfig",
        "Qwen2_5_VLForConditionalGeneration",
        qwen::qwen2_5_vl,
    ),
    Family::code(
        "qwen3_vl",
        "Qwen3VLConfig",
        "Qwen3VLForConditionalGeneration",
        qwen::qwen3_vl,
    ),
    Family::code(
        "qwen3_vl_moe",
        "Qwen3VLMoeConfig",
        "Qwen3VLMoeForConditionalGeneration",
        qwen::qwen3_vl,
    ),
    Family::code(
        "qwen3_5",
        "Qwen3_5Config",
        "Qwen3_5ForConditionalGeneration",
        qwen::qwen3_5,
    ),
    Family::code(
        "qwen3_5_moe",
        "Qwen3_5MoeConfig",
        "Qwen3_5MoeForConditionalGeneration",
        qwen::qwen3_5,
    ),
    Family::code(
        "glm4v",
        "Glm4vConfig",
        "Glm4vForConditionalGeneration",
        glm::glm4v,
    ),
    Family::code(
        "glm4v_moe",
        "Glm4vMoeConfig",
        "Glm4vMoeForConditionalGeneration",
        glm::glm4v,
    ),
    Family::code(
        "glm46v",
        "Glm46VConfig",
        "Glm46VForConditionalGeneration",
        glm::glm46v,
    ),
    Family::code(
        "glmga",
        "Glm46VConfig",
        "Glm46VForConditionalGeneration",
        glm::glm46v,
    ),
    Family::code(
        "glm_ocr",
        "GlmOcrConfig",
        "GlmOcrForConditionalGeneration",
        glm::glm_ocr,
    ),
    Family::code(
        "glm5_next",
        "Glm5NextConfig",
        "Glm5NextForConditionalGeneration",
        glm::glm5_next,
    ),
    Family::code(
        "cosmos3_omni",
        "Cosmos3OmniConfig",
        "Cosmos3OmniForConditionalGeneration",
        qwen::cosmos3_omni,
    ),
    Family::code(
        "hyperclovax_vision_v2",
        "HyperCLOVAXVisionV2Config",
        "HyperCLOVAXVisionV2ForConditionalGeneration",
        qwen::hyperclovax_vision_v2,
    ),
    Family::code(
        "exaone4_5",
        "Exaone4_5_Config",
        "Exaone4_5_ForConditionalGeneration",
        qwen::exaone4_5,
    ),
    Family::code(
        "video_llama_3",
        "VideoLlama3Config",
        "VideoLlama3ForConditionalGeneration",
        navit::video_llama_3,
    ),
    Family::code(
        "paddleocr_vl",
        "PaddleOCRVLConfig",
        "PaddleOCRVLForConditionalGeneration",
        navit::paddleocr_vl,
    ),
    Family::code(
        "qwen2_5_omni_thinker",
        "Qwen2_5OmniThinkerConfig",
        "Qwen2_5OmniThinkerForConditionalGeneration",
        omni::qwen2_5_omni_thinker,
    ),
    Family::code(
        "qwen3_omni_moe_thinker",
        "Qwen3OmniMoeThinkerConfig",
        "Qwen3OmniMoeThinkerForConditionalGeneration",
        omni::qwen3_omni_moe_thinker,
    ),
    Family::block(
        "qwen2_5_omni_text",
        "Qwen2_5OmniTextConfig",
        "Qwen2_5OmniThinkerForConditionalGeneration",
        &text::QWEN2_5_OMNI_TEXT,
    ),
    Family::block(
        "qwen3_omni_moe_text",
        "Qwen3OmniMoeTextConfig",
        "Qwen3OmniMoeThinkerForConditionalGeneration",
        &text::QWEN3_OMNI_MOE_TEXT,
    ),
    Family::code(
        "kimi_k25",
        "Kimi_K25Config",
        "Kimi_K25ForConditionalGeneration",
        navit::kimi_k25,
    ),
    Family::code(
        "minimax_m3_vl",
        "MiniMaxM3VLConfig",
        "MiniMaxM3SparseForConditionalGeneration",
        navit::minimax_m3_vl,
    ),
    Family::code(
        "cosmos3_edge",
        "Cosmos3EdgeConfig",
        "Cosmos3EdgeForConditionalGeneration",
        navit::cosmos3_edge,
    ),
    Family::block(
        "cosmos3_edge_text",
        "Cosmos3EdgeTextConfig",
        "Cosmos3EdgeForConditionalGeneration",
        &text::COSMOS3_EDGE_TEXT,
    ),
    Family::code(
        "ernie4_5_vl_moe",
        "Ernie4_5_VLMoeConfig",
        "Ernie4_5_VLMoeForConditionalGeneration",
        ernie::ernie4_5_vl_moe,
    ),
    Family::code(
        "ernie4_5_vl_moe_text",
        "Ernie4_5_VLMoeTextConfig",
        "Ernie4_5_VLMoeForConditionalGeneration",
        ernie::ernie4_5_vl_moe_text,
    ),
    Family::code(
        "inkling2",
        "Inkling2Config",
        "Inkling2ForConditionalGeneration",
        inkling::inkling2,
    ),
    Family::code(
        "inkling2_loop",
        "Inkling2LoopConfig",
        "Inkling2LoopForConditionalGeneration",
        inkling::inkling2_loop,
    ),
    Family::code(
        "inkling_mm_model",
        "InklingConfig",
        "InklingForConditionalGeneration",
        inkling::inkling_mm_model,
    ),
    Family::code(
        "muse_glimmer",
        "MuseGlimmerConfig",
        "MuseGlimmerForConditionalGeneration",
        muse::muse_glimmer,
    ),
    Family::code(
        "muse_glimmer_text",
        "MuseGlimmerTextConfig",
        "MuseGlimmerForConditionalGeneration",
        muse::muse_glimmer_text,
    ),
    Family::code(
        "step3p7",
        "Step3p7Config",
        "Step3p7ForConditionalGeneration",
        step::step3p7,
    ),
    Family::code(
        "muse_spark",
        "MuseSparkConfig",
        "MuseSparkForConditionalGeneration",
        muse::muse_spark,
    ),
    Family::code(
        "muse_spark_text",
        "MuseSparkTextConfig",
        "MuseSparkForConditionalGeneration",
        muse::muse_spark_text,
    ),
    Family::block(
        "paddleocr_vl_text",
        "PaddleOCRTextConfig",
        "PaddleOCRVLForConditionalGeneration",
        &text::PADDLEOCR_VL_TEXT,
    ),
    Family::block(
        "qwen2_vl_text",
        "Qwen2VLTextConfig",
        "Qwen2VLForConditionalGeneration",
        &text::QWEN2_VL_TEXT,
    ),
    Family::block(
        "qwen2_5_vl_text",
        "Qwen2_5_VLTextConfig",
        "Qwen2_5_VLForConditionalGeneration",
        &text::QWEN2_VL_TEXT,
    ),
    Family::block(
        "qwen3_vl_text",
        "Qwen3VLTextConfig",
        "Qwen3VLForConditionalGeneration",
        &text::QWEN3_VL_TEXT,
    ),
    Family::block(
        "qwen3_vl_moe_text",
        "Qwen3VLMoeTextConfig",
        "Qwen3VLMoeForConditionalGeneration",
        &text::QWEN3_VL_MOE_TEXT,
    ),
    Family::block(
        "glm4v_text",
        "Glm4vTextConfig",
        "Glm4vForConditionalGeneration",
        &text::GLM4V_TEXT,
    ),
    Family::block(
        "glm4v_moe_text",
        "Glm4vMoeTextConfig",
        "Glm4vMoeForConditionalGeneration",
        &text::GLM4V_MOE_TEXT,
    ),
    Family::block(
        "glm_ocr_text",
        "GlmOcrTextConfig",
        "GlmOcrForConditionalGeneration",
        &text::GLM_OCR_TEXT,
    ),
];

/// The layers of a `ViT` with per-channel layer scales (Inkling 2's and Step's towers):
/// `pre_layernorm`, then per layer `layernorm_before`/`layernorm_after`, biased q/k/v/out
/// `d → d`, `fc1`/`fc2` through `ff`, and the scales `lambda_1`, `lambda_2` (`l` layers).
pub(super) fn scaled_vit_layers(p: &mut Parts, pre: &str, d: &Expr, ff: Expr, l: &Expr) {
    let one = parts::lit(1);
    p.norm(
        format!("{pre}.pre_layernorm"),
        "vision norms",
        d,
        true,
        &one,
    );
    let lp = format!("{pre}.layers");
    for n in ["layernorm_before", "layernorm_after"] {
        p.norm(format!("{lp}.{n}"), "vision norms", d, true, l);
    }
    for name in ["q_proj", "k_proj", "v_proj", "out_proj"] {
        p.linear(
            format!("{lp}.self_attn.{name}"),
            "vision attention",
            (d.clone(), d.clone()),
            true,
            l,
        );
    }
    p.linear(
        format!("{lp}.mlp.fc1"),
        "vision mlp",
        (d.clone(), ff.clone()),
        true,
        l,
    );
    p.linear(
        format!("{lp}.mlp.fc2"),
        "vision mlp",
        (ff, d.clone()),
        true,
        l,
    );
    for n in ["lambda_1", "lambda_2"] {
        p.vector(format!("{lp}.{n}"), "vision layer scales", d.clone(), l);
    }
}
