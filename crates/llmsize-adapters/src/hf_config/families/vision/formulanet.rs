//! PP-FormulaNet (`modeling_pp_formulanet.py`): the SAM-style encoder with its neck and a
//! projector (two stride-2 3×3 convolutions without bias, two biased linears into
//! `decoder_hidden_size`), and an mBART-style decoder (learned positions with 2 offset rows,
//! an embedding `LayerNorm`, post-norm blocks of biased self- and cross-attention and a
//! biased MLP, a final `LayerNorm`); the head is never tied (`_tied_weights_keys` is empty).

use llmsize_core::Category;
use llmsize_core::expr::Sym;
use llmsize_core::spec::{
    Attention, Extra, Ffn, Layer, Layers, ModelSpec, Norm, PositionEmbedding, Table,
};

use super::parts::{lit, sym, with_sub};
use super::sam::sam_encoder;
use super::vision;
use crate::error::ConfigError;
use crate::hf_config::decoder::{Decoder, mha, mlp};
use crate::hf_config::family::Family;
use crate::hf_config::raw::RawConfig;
use crate::hf_config::{HeadChoice, architecture};

/// `PPFormulaNetForConditionalGeneration`.
pub(crate) fn pp_formulanet(
    raw: &mut RawConfig<'_>,
    f: &Family,
    _head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let arch = architecture(raw, f.architecture);
    let mut spec = with_sub(raw, "text_config", "PPFormulaNetTextConfig", |s| {
        let vocab = s.size("vocab_size", 50_000)?;
        let d = s.size("d_model", 512)?;
        let n = s.count("decoder_layers", 8)?;
        let ffn = s.size("decoder_ffn_dim", 2048)?;
        let heads = s.size("decoder_attention_heads", 16)?;
        let positions = s.size("max_position_embeddings", 2560)?;
        s.r.raw.source(Sym::Hidden, "d_model");
        s.r.raw.source(Sym::Vocab, "vocab_size");
        let head_dim =
            s.r.raw
                .derived_head_dim(d, "d_model", heads, "decoder_attention_heads")?;
        let ds = sym("d", d);
        let part = "cross-attention";
        let mut extras = Vec::new();
        for name in ["q_proj", "k_proj", "v_proj", "out_proj"] {
            extras.push(Extra::linear(
                format!("encoder_attn.{name}.weight"),
                part,
                Category::Attention,
                ds.clone(),
                ds.clone(),
            ));
            extras.push(Extra::vector(
                format!("encoder_attn.{name}.bias"),
                part,
                Category::Attention,
                ds.clone(),
            ));
        }
        let ln = Norm::layer_norm(d);
        let layer = Layer {
            attention: Attention::Standard(mha(d, heads, heads, head_dim, true)),
            cross_attention: None,
            ffn: Ffn::Dense(mlp(d, ffn, false, true)),
            norms: vec![ln; 3],
            sliding_window: None,
            extras,
            state: None,
        };
        let mut dec = Decoder::new(
            f.model_type,
            arch,
            d,
            vocab,
            Layers::repeat(layer, n),
            Some(ln),
            false,
        );
        dec.position = Some(PositionEmbedding::Learned {
            table: Table {
                rows: s.check(llmsize_core::checked::add(
                    "max_position_embeddings + 2",
                    positions,
                    2,
                ))?,
                dim: d,
            },
            offset: 2,
        });
        dec.embedding_norm = Some(ln);
        Ok(dec.into_spec())
    })?;
    let mut p = vision();
    with_sub(raw, "vision_config", "PPFormulaNetVisionConfig", |s| {
        sam_encoder(s, &mut p, "model.encoder", false, 512)?;
        let c_in = s.size("post_conv_in_channels", 256)?;
        let c_mid = s.size("post_conv_mid_channels", 512)?;
        let c_out = s.size("post_conv_out_channels", 1024)?;
        let dec = s.size("decoder_hidden_size", 512)?;
        let one = lit(1);
        let part = "multimodal projector";
        let pre = "model.encoder.multi_modal_projector";
        let (i, m, o) = (lit(c_in), lit(c_mid), sym("c_post", c_out));
        p.conv(
            format!("{pre}.conv1"),
            part,
            (i, lit(9), m.clone()),
            false,
            &one,
        );
        p.conv(
            format!("{pre}.conv2"),
            part,
            (m, lit(9), o.clone()),
            false,
            &one,
        );
        p.linear(
            format!("{pre}.linear_1"),
            part,
            (o.clone(), o.clone()),
            true,
            &one,
        );
        p.linear(
            format!("{pre}.linear_2"),
            part,
            (o, sym("decoder_hidden_size", dec)),
            true,
            &one,
        );
        Ok(())
    })?;
    spec.extras.extend(p.out);
    Ok(spec)
}
