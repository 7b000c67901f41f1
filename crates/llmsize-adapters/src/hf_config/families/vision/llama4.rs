//! Llama 4 (`modeling_llama4.py`): `Llama4ForConditionalGeneration` is the vision model (an
//! unfolded linear patch embedding, class token, learned positions, `LayerNorm`s before and
//! after, biased attention and MLP layers, the pixel-shuffle MLP adapter), an unbiased
//! projector, and `Llama4ForCausalLM` of `text_config`; `Llama4ForCausalLM` named in
//! `architectures` is the text model alone.

use llmsize_core::spec::ModelSpec;

use super::parts::{lit, mul, sym, with_sub};
use super::vit::{VitLayer, layers, vit_keys};
use super::{Tie, text, vision, with_parts};
use crate::error::ConfigError;
use crate::hf_config::family::Family;
use crate::hf_config::raw::RawConfig;
use crate::hf_config::{HeadChoice, architecture};

/// `Llama4ForConditionalGeneration`, or the text model for `Llama4ForCausalLM`. The head is
/// the inner `Llama4ForCausalLM`'s, tied by the text config.
pub(crate) fn llama4(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let spec = text(raw, f, "llama4_text", head, Tie::Text)?;
    if architecture(raw, f.architecture).ends_with("ForCausalLM") {
        return Ok(spec);
    }
    let mut p = vision();
    let out = with_sub(raw, "vision_config", "Llama4VisionConfig", |s| {
        let k = vit_keys(s, (768, 5632, 34, 448, 14))?;
        let out_dim = s.size("vision_output_dim", 7680)?;
        let proj_in = s.size("projector_input_dim", 4096)?;
        let proj_out = s.size("projector_output_dim", 4096)?;
        let one = lit(1);
        let pre = "model.vision_model";
        let part = "vision embeddings";
        p.linear(
            format!("{pre}.patch_embedding.linear"),
            part,
            (mul(lit(k.channels), lit(k.kernel())), k.d()),
            false,
            &one,
        );
        p.vector(format!("{pre}.class_embedding"), part, k.d(), &one);
        p.table(
            format!("{pre}.positional_embedding_vlm"),
            part,
            (lit(k.positions()), k.d()),
            &one,
        );
        p.norm(
            format!("{pre}.layernorm_pre"),
            "vision norms",
            &k.d(),
            true,
            &one,
        );
        p.norm(
            format!("{pre}.layernorm_post"),
            "vision norms",
            &k.d(),
            true,
            &one,
        );
        layers(
            &mut p,
            &format!("{pre}.model.layers"),
            &k.l(),
            &VitLayer::clip(k.d(), k.ff()),
        );
        let part = "vision adapter";
        p.linear(
            format!("{pre}.vision_adapter.mlp.fc1"),
            part,
            (k.ff(), sym("projector_input_dim", proj_in)),
            false,
            &one,
        );
        let po = sym("projector_output_dim", proj_out);
        p.linear(
            format!("{pre}.vision_adapter.mlp.fc2"),
            part,
            (po.clone(), po),
            false,
            &one,
        );
        Ok(out_dim)
    })?;
    p.linear(
        "model.multi_modal_projector.linear_1",
        "multimodal projector",
        (sym("vision_output_dim", out), sym("d", spec.hidden_size)),
        false,
        &lit(1),
    );
    Ok(with_parts(spec, p))
}
