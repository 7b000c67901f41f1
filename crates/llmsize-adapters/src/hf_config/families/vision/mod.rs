//! Vision-language models: a text model read through the registry from `text_config` (or
//! a text model of its own), and the vision tower with its projector as model-level extras in
//! the `vision` category (audio towers would go in `audio`). The KV cache is the text
//! model's. `parts.rs` is the vocabulary (extras builder, sub-config reader); the towers are
//! written once each and combined as each `modeling_*.py` does:
//!
//! | file | towers and composites |
//! |---|---|
//! | `vit.rs` | CLIP, `SigLIP`, `SigLIP` 2 towers; the pre-norm ViT layer most towers share |
//! | `pixtral.rs` | Pixtral; Mistral 3, LightOnOCR |
//! | `intern.rs` | `InternViT`; `InternVL`, Qianfan-OCR |
//! | `sam.rs` | the SAM-style encoder; GOT-OCR 2, PP-Chart2Table |
//! | `vq.rs` | the VQ-GAN tokenizer; Janus |
//! | `blip.rs`, `bert.rs` | BLIP-2's EVA tower and Q-Former, BLIP; BERT-style text decoders |
//! | `pix2struct.rs` | the Pix2Struct encoder (Kosmos-2.5's too) |
//! | `radio.rs` | RADIO; Nemotron-H Omni |
//! | others | one composite each (`llava.rs` holds the `LLaVA` family) |

mod apertus;
mod aria;
mod bert;
mod blip;
mod deepseek;
mod emu3;
mod evolla;
mod florence;
mod formulanet;
mod gemma;
mod gemma4;
mod git;
mod granite;
mod idefics;
mod idefics1;
mod intern;
mod kosmos;
mod large4;
mod lfm3;
mod llama4;
mod llava;
mod minicpm;
mod mllama;
mod molmo;
mod ovis;
pub(crate) mod parts;
mod phi4;
mod pix2struct;
mod pixtral;
mod radio;
mod sam;
mod shuffle;
mod t5gemma2;
mod udop;
mod unlimited;
mod ved;
mod vit;
mod vq;

use llmsize_core::Category;
use llmsize_core::spec::{ModelSpec, OutputHead};

use crate::error::ConfigError;
use crate::hf_config::family::{Family, read_sub_config};
use crate::hf_config::raw::RawConfig;
use crate::hf_config::{HeadChoice, architecture};
use parts::{Parts, sub_type};
use vit::Tower;

/// How the composite decides tying the LM head to the token table.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Tie {
    /// The top-level `tie_word_embeddings` (class default given) or the text config's
    /// (`LlavaConfig.__post_init__`: `if not self.tie and text.tie: self.tie = text.tie`).
    Either(bool),
    /// The text config's alone.
    Text,
    /// The top-level key alone, with the class default.
    Top(bool),
    /// The class ties nothing (its `_tied_weights_keys` is empty or absent, so
    /// `PreTrainedModel.get_expanded_tied_weights_keys` finds no pair whatever the config says):
    /// the head is its own tensor even under `tie_word_embeddings: true`.
    Never,
}

/// The text model under `text_config` (of `default_type` when it names none), renamed as
/// the composite, with the composite's tying rule.
pub(crate) fn text(
    raw: &mut RawConfig<'_>,
    family: &Family,
    default_type: &str,
    head: HeadChoice,
    tie: Tie,
) -> Result<ModelSpec, ConfigError> {
    text_at(raw, family, "text_config", default_type, head, tie)
}

/// [`text`] under another key.
pub(crate) fn text_at(
    raw: &mut RawConfig<'_>,
    family: &Family,
    key: &str,
    default_type: &str,
    head: HeadChoice,
    tie: Tie,
) -> Result<ModelSpec, ConfigError> {
    let mut spec = read_sub_config(raw, key, default_type, head)?;
    let text_tied = matches!(spec.head, OutputHead::Lm { tied: true, .. });
    let reason = format!("absent; `{}` default", family.config_class);
    let tied = match tie {
        Tie::Text => text_tied,
        Tie::Either(d) => raw.flag_or("tie_word_embeddings", d, &reason)? || text_tied,
        Tie::Top(d) => raw.flag_or("tie_word_embeddings", d, &reason)?,
        Tie::Never => false,
    };
    // An explicit `tie_word_embeddings: false` (at the top, or in `text_config` when the top
    // does not say) unties the loaded model whatever the class rule ties.
    let explicit = match raw.flag("tie_word_embeddings")? {
        Some(b) => Some(b),
        None => parts::object(raw, key)?
            .get("tie_word_embeddings")
            .and_then(serde_json::Value::as_bool),
    };
    let tied = tied && explicit != Some(false);
    if let OutputHead::Lm { tied: t, .. } = &mut spec.head {
        *t = tied;
    }
    family.model_type.clone_into(&mut spec.model_type);
    spec.architecture = architecture(raw, family.architecture);
    Ok(spec)
}

/// The vision tower under `key` (`default_type` when it names none), by its `model_type`.
pub(crate) fn vision_tower(
    raw: &mut RawConfig<'_>,
    key: &str,
    default_type: &str,
    p: &mut Parts,
) -> Result<Tower, ConfigError> {
    let t = sub_type(raw, key, default_type)?;
    match t {
        "clip_vision_model" => vit::clip(raw, key, p),
        "siglip_vision_model" => vit::siglip(raw, key, p),
        "siglip2_vision_model" => vit::siglip2(raw, key, p),
        "pixtral" => pixtral::pixtral(raw, key, p),
        other => Err(crate::hf_config::unsupported(
            &format!("{} ({key})", raw.file),
            other,
        )),
    }
}

/// The refusal of a switch whose tensors the ground truth cannot file under a category
/// (it lists them as `other`), so no exact figure exists: `what` names the switch.
pub(crate) fn not_read(
    raw: &RawConfig<'_>,
    model_type: &str,
    what: &str,
    why: &str,
) -> ConfigError {
    ConfigError::Unsupported {
        file: raw.file.to_owned(),
        found: format!("{model_type}` with `{what}"),
        supported: why.to_owned(),
    }
}

/// A spec with the vision parts appended.
pub(crate) fn with_parts(mut spec: ModelSpec, p: Parts) -> ModelSpec {
    spec.extras.extend(p.out);
    spec
}

/// A new vision parts list.
pub(crate) fn vision() -> Parts {
    Parts::new(Category::Vision)
}

/// The entries of this file.
pub(crate) const FAMILIES: &[Family] = &[
    Family::code(
        "llava",
        "LlavaConfig",
        "LlavaForConditionalGeneration",
        llava::llava,
    ),
    Family::code(
        "llava_next",
        "LlavaNextConfig",
        "LlavaNextForConditionalGeneration",
        llava::llava_next,
    ),
    Family::code(
        "llava_next_video",
        "LlavaNextVideoConfig",
        "LlavaNextVideoForConditionalGeneration",
        llava::llava_next,
    ),
    Family::code(
        "llava_onevision",
        "LlavaOnevisionConfig",
        "LlavaOnevisionForConditionalGeneration",
        llava::llava_onevision,
    ),
    Family::code(
        "vipllava",
        "VipLlavaConfig",
        "VipLlavaForConditionalGeneration",
        llava::vipllava,
    ),
    Family::code(
        "video_llava",
        "VideoLlavaConfig",
        "VideoLlavaForConditionalGeneration",
        llava::video_llava,
    ),
    Family::code(
        "paligemma",
        "PaliGemmaConfig",
        "PaliGemmaForConditionalGeneration",
        gemma::paligemma,
    ),
    Family::code(
        "gemma3",
        "Gemma3Config",
        "Gemma3ForConditionalGeneration",
        gemma::gemma3,
    ),
    Family::code(
        "shieldgemma2",
        "ShieldGemma2Config",
        "Gemma3ForConditionalGeneration",
        gemma::gemma3,
    ),
    Family::code(
        "mistral3",
        "Mistral3Config",
        "Mistral3ForConditionalGeneration",
        pixtral::mistral3,
    ),
    Family::code(
        "lighton_ocr",
        "LightOnOcrConfig",
        "LightOnOcrForConditionalGeneration",
        pixtral::lighton_ocr,
    ),
    Family::code(
        "internvl",
        "InternVLConfig",
        "InternVLForConditionalGeneration",
        intern::internvl,
    ),
    Family::code(
        "qianfan_ocr",
        "QianfanOCRConfig",
        "QianfanOCRForConditionalGeneration",
        intern::internvl,
    ),
    Family::code(
        "idefics2",
        "Idefics2Config",
        "Idefics2ForConditionalGeneration",
        idefics::idefics2,
    ),
    Family::code(
        "idefics3",
        "Idefics3Config",
        "Idefics3ForConditionalGeneration",
        idefics::idefics3,
    ),
    Family::code(
        "smolvlm",
        "SmolVLMConfig",
        "SmolVLMForConditionalGeneration",
        idefics::idefics3,
    ),
    Family::code(
        "got_ocr2",
        "GotOcr2Config",
        "GotOcr2ForConditionalGeneration",
        sam::got_ocr2,
    ),
    Family::code(
        "pp_chart2table",
        "PPChart2TableConfig",
        "GotOcr2ForConditionalGeneration",
        sam::got_ocr2,
    ),
    Family::code(
        "deepseek_vl",
        "DeepseekVLConfig",
        "DeepseekVLForConditionalGeneration",
        deepseek::deepseek_vl,
    ),
    Family::code(
        "deepseek_vl_hybrid",
        "DeepseekVLHybridConfig",
        "DeepseekVLHybridForConditionalGeneration",
        deepseek::deepseek_vl_hybrid,
    ),
    Family::code(
        "blip-2",
        "Blip2Config",
        "Blip2ForConditionalGeneration",
        blip::blip2,
    ),
    Family::code(
        "instructblip",
        "InstructBlipConfig",
        "InstructBlipForConditionalGeneration",
        blip::blip2,
    ),
    Family::code(
        "instructblipvideo",
        "InstructBlipVideoConfig",
        "InstructBlipVideoForConditionalGeneration",
        blip::blip2,
    ),
    Family::code(
        "ovis2",
        "Ovis2Config",
        "Ovis2ForConditionalGeneration",
        ovis::ovis2,
    ),
    Family::code(
        "cohere2_vision",
        "Cohere2VisionConfig",
        "Cohere2VisionForConditionalGeneration",
        shuffle::cohere2_vision,
    ),
    Family::code(
        "lfm2_vl",
        "Lfm2VlConfig",
        "Lfm2VlForConditionalGeneration",
        shuffle::lfm2_vl,
    ),
    Family::code("fuyu", "FuyuConfig", "FuyuForCausalLM", shuffle::fuyu),
    Family::code(
        "janus",
        "JanusConfig",
        "JanusForConditionalGeneration",
        vq::janus,
    ),
    Family::code(
        "llama4",
        "Llama4Config",
        "Llama4ForConditionalGeneration",
        llama4::llama4,
    ),
    Family::code(
        "mllama",
        "MllamaConfig",
        "MllamaForConditionalGeneration",
        mllama::mllama,
    ),
    Family::code("emu3", "Emu3Config", "Emu3ForCausalLM", emu3::emu3),
    Family::code("git", "GitConfig", "GitForCausalLM", git::git),
    Family::code(
        "blip",
        "BlipConfig",
        "BlipForConditionalGeneration",
        blip::blip,
    ),
    Family::code(
        "vision-encoder-decoder",
        "VisionEncoderDecoderConfig",
        "VisionEncoderDecoderModel",
        ved::vision_encoder_decoder,
    ),
    Family::code(
        "kosmos-2",
        "Kosmos2Config",
        "Kosmos2ForConditionalGeneration",
        kosmos::kosmos2,
    ),
    Family::code(
        "minicpmv4_6",
        "MiniCPMV4_6Config",
        "MiniCPMV4_6ForConditionalGeneration",
        minicpm::minicpm,
    ),
    Family::code(
        "minicpmv4_7",
        "MiniCPMV4_7Config",
        "MiniCPMV4_7ForConditionalGeneration",
        minicpm::minicpm,
    ),
    Family::code(
        "minicpm_ocr",
        "MiniCPMOcrConfig",
        "MiniCPMOcrForConditionalGeneration",
        minicpm::minicpm,
    ),
    Family::code(
        "lfm3_vl",
        "Lfm3VlConfig",
        "Lfm3VlForConditionalGeneration",
        lfm3::lfm3_vl,
    ),
    Family::code(
        "pix2struct",
        "Pix2StructConfig",
        "Pix2StructForConditionalGeneration",
        pix2struct::pix2struct,
    ),
    Family::code(
        "idefics",
        "IdeficsConfig",
        "IdeficsForVisionText2Text",
        idefics1::idefics,
    ),
    Family::code(
        "pp_formulanet",
        "PPFormulaNetConfig",
        "PPFormulaNetForConditionalGeneration",
        formulanet::pp_formulanet,
    ),
    Family::code(
        "kosmos-2.5",
        "Kosmos2_5Config",
        "Kosmos2_5ForConditionalGeneration",
        kosmos::kosmos2_5,
    ),
    Family::code(
        "molmo2",
        "Molmo2Config",
        "Molmo2ForConditionalGeneration",
        molmo::molmo2,
    ),
    Family::code(
        "granite_docling",
        "GraniteDoclingConfig",
        "GraniteDoclingForConditionalGeneration",
        granite::granite_docling,
    ),
    Family::code(
        "florence2",
        "Florence2Config",
        "Florence2ForConditionalGeneration",
        florence::florence2,
    ),
    Family::code(
        "gemma4",
        "Gemma4Config",
        "Gemma4ForConditionalGeneration",
        gemma4::gemma4,
    ),
    Family::code(
        "gemma4_unified",
        "Gemma4UnifiedConfig",
        "Gemma4UnifiedForConditionalGeneration",
        gemma4::gemma4,
    ),
    Family::code(
        "nemotron_h_omni",
        "NemotronH_Omni_Reasoning_V3_Config",
        "NemotronH_Omni_Reasoning_V3",
        radio::nemotron_h_omni,
    ),
    Family::code(
        "aya_vision",
        "AyaVisionConfig",
        "AyaVisionForConditionalGeneration",
        shuffle::aya_vision,
    ),
    Family::code(
        "aria",
        "AriaConfig",
        "AriaForConditionalGeneration",
        aria::aria,
    ),
    Family::code(
        "mistral_large4",
        "MistralLarge4Config",
        "MistralLarge4ForConditionalGeneration",
        large4::mistral_large4,
    ),
    Family::code(
        "mistral_large4_text",
        "MistralLarge4TextConfig",
        "MistralLarge4TextModel",
        large4::mistral_large4_text,
    ),
    Family::code(
        "phi4_multimodal",
        "Phi4MultimodalConfig",
        "Phi4MultimodalForCausalLM",
        phi4::phi4_multimodal,
    ),
    Family::code(
        "apertus1p5",
        "Apertus1p5Config",
        "Apertus1p5ForConditionalGeneration",
        apertus::apertus1p5,
    ),
    Family::code(
        "t5gemma2",
        "T5Gemma2Config",
        "T5Gemma2ForConditionalGeneration",
        t5gemma2::t5gemma2,
    ),
    Family::code(
        "udop",
        "UdopConfig",
        "UdopForConditionalGeneration",
        udop::udop,
    ),
    Family::code(
        "evolla",
        "EvollaConfig",
        "EvollaForProteinText2Text",
        evolla::evolla,
    ),
    Family::code(
        "unlimited_ocr",
        "UnlimitedOcrConfig",
        "UnlimitedOcrForConditionalGeneration",
        unlimited::unlimited_ocr,
    ),
];
