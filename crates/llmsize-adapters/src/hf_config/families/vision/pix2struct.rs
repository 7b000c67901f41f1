//! Pix2Struct (`modeling_pix2struct.py`): the vision encoder (a biased linear patch
//! projection, row and column embeddings of `seq_len`, T5-style `RMSNorm` layers of unbiased
//! attention over `num_attention_heads·d_kv` and a gated MLP, a final norm) and the T5-style
//! text decoder (`d → d` attention, cross-attention to the image in every block, relative
//! position buckets in the first, a gated MLP, an untied head by default).

use llmsize_core::Category;
use llmsize_core::expr::Sym;
use llmsize_core::spec::{
    Attention, Extra, Ffn, Layer, Layers, ModelSpec, Norm, PositionEmbedding,
};

use super::parts::{lit, mul, sym, with_sub};
use super::vision;
use super::vit::mlp;
use crate::error::ConfigError;
use crate::hf_config::decoder::{Decoder, mha};
use crate::hf_config::family::Family;
use crate::hf_config::raw::RawConfig;
use crate::hf_config::{HeadChoice, architecture};

/// `Pix2StructForConditionalGeneration`; `tie_word_embeddings` (default false) is copied
/// into the text config.
pub(crate) fn pix2struct(
    raw: &mut RawConfig<'_>,
    f: &Family,
    _head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let arch = architecture(raw, f.architecture);
    let tied = {
        let reason = "absent; `Pix2StructConfig` default";
        raw.flag_or("tie_word_embeddings", false, reason)?
    };
    let mut spec = with_sub(raw, "text_config", "Pix2StructTextConfig", |s| {
        let vocab = s.size("vocab_size", 50_244)?;
        let hidden = s.size("hidden_size", 768)?;
        let ffn = s.size("d_ff", 2048)?;
        let n = s.count("num_layers", 12)?;
        let heads = s.size("num_heads", 12)?;
        let buckets = s.size("relative_attention_num_buckets", 32)?;
        s.r.raw.source(Sym::Hidden, "hidden_size");
        s.r.raw.source(Sym::Vocab, "vocab_size");
        let head_dim =
            s.r.raw
                .derived_head_dim(hidden, "hidden_size", heads, "num_heads")?;
        let d = sym("d", hidden);
        let part = "cross-attention";
        let extras = ["query", "key", "value", "output"]
            .into_iter()
            .map(|n| {
                Extra::linear(
                    format!("encoder_decoder_attention.attention.{n}.weight"),
                    part,
                    Category::Attention,
                    d.clone(),
                    d.clone(),
                )
            })
            .collect();
        let rms = Norm::rms_norm(hidden);
        let layer = Layer {
            attention: Attention::Standard(mha(hidden, heads, heads, head_dim, false)),
            cross_attention: None,
            ffn: Ffn::Dense(crate::hf_config::decoder::mlp(hidden, ffn, true, false)),
            norms: vec![rms; 3],
            sliding_window: None,
            extras,
            state: None,
        };
        let mut dec = Decoder::new(
            f.model_type,
            arch,
            hidden,
            vocab,
            Layers::repeat(layer, n),
            Some(rms),
            tied,
        );
        if n > 0 {
            dec.position = Some(PositionEmbedding::RelativeBias { buckets, heads });
        }
        Ok(dec.into_spec())
    })?;
    let mut p = vision();
    with_sub(raw, "vision_config", "Pix2StructVisionConfig", |s| {
        let hidden = s.size("hidden_size", 768)?;
        let patch = s.size("patch_embed_hidden_size", 768)?;
        let ffn = s.size("d_ff", 2048)?;
        let kv = s.size("d_kv", 64)?;
        let n = s.count("num_hidden_layers", 12)?;
        let heads = s.size("num_attention_heads", 12)?;
        let seq = s.size("seq_len", 4096)?;
        let (d, l, one) = (sym("d_vis", hidden), sym("L_vis", n), lit(1));
        let pre = "encoder";
        let part = "vision embeddings";
        p.linear(
            format!("{pre}.embeddings.patch_projection"),
            part,
            (sym("patch_embed_hidden_size", patch), d.clone()),
            true,
            &one,
        );
        for e in ["row_embedder", "column_embedder"] {
            p.table(
                format!("{pre}.embeddings.{e}"),
                part,
                (lit(seq), d.clone()),
                &one,
            );
        }
        let inner = mul(lit(heads), lit(kv));
        let part = "vision encoder layers";
        let lp = format!("{pre}.encoder.layer");
        for q in ["query", "key", "value"] {
            p.linear(
                format!("{lp}.attention.{q}"),
                part,
                (d.clone(), inner.clone()),
                false,
                &l,
            );
        }
        p.linear(
            format!("{lp}.attention.output"),
            part,
            (inner, d.clone()),
            false,
            &l,
        );
        p.norm(
            format!("{lp}.pre_attention_layer_norm"),
            part,
            &d,
            false,
            &l,
        );
        p.norm(format!("{lp}.pre_mlp_layer_norm"), part, &d, false, &l);
        mlp(
            &mut p,
            &format!("{lp}.mlp"),
            (&d, &sym("d_ff_vis", ffn)),
            true,
            false,
            &l,
        );
        p.norm(format!("{pre}.layernorm"), "vision norms", &d, false, &one);
        Ok(())
    })?;
    spec.extras.extend(p.out);
    Ok(spec)
}
