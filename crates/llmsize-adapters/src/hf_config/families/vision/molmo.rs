//! Molmo 2 (`modeling_molmo2.py`): a SigLIP-style vision model (learned positions, a biased
//! linear patch embedding, biased grouped-head attention layers; no final norm), the adapter
//! (attention pooling over the concatenated `vision_feature_layer` outputs and a gated MLP into
//! the text width), and an OLMo-style text model (biased q/k/v by `attention_bias`, an unbiased
//! output, q/k `RMSNorm` per head (`qwen3`) or over the projections (`olmo`), extra token
//! rows for `additional_vocab_size`). Nothing ties the head.

use llmsize_core::expr::{Expr, Sym};
use llmsize_core::spec::{Attention, Ffn, Layer, Layers, ModelSpec, Norm, Table};

use super::parts::{Parts, Sub, lit, mul, sym, with_sub};
use super::vision;
use super::vit::VitLayer;
use crate::error::ConfigError;
use crate::hf_config::decoder::{Decoder, mha, mlp};
use crate::hf_config::family::Family;
use crate::hf_config::raw::RawConfig;
use crate::hf_config::{HeadChoice, architecture};
use llmsize_core::checked::{self, Checked};

/// `Molmo2TextModel` and an untied head.
fn text_model(s: &mut Sub<'_, '_>, arch: String) -> Result<ModelSpec, ConfigError> {
    let hidden = s.size("hidden_size", 4096)?;
    let heads = s.size("num_attention_heads", 32)?;
    let kv = s.size("num_key_value_heads", 8)?;
    let head_dim = s.size("head_dim", 128)?;
    let vocab = s.size("vocab_size", 151_936)?;
    let extra = s.count("additional_vocab_size", 128)?;
    let bias = s.flag("attention_bias", false)?;
    let qk = s.string("qk_norm_type", "qwen3")?;
    let n = s.count("num_hidden_layers", 36)?;
    let ffn = s.size("intermediate_size", 12_288)?;
    s.r.raw.source(Sym::Hidden, "hidden_size");
    s.r.raw.source(Sym::Vocab, "vocab_size");
    let (q_norm, k_norm) = match qk.as_str() {
        "qwen3" => (head_dim, head_dim),
        "olmo" => (
            s.mul(heads, head_dim, "num_attention_heads·head_dim")?,
            s.mul(kv, head_dim, "num_key_value_heads·head_dim")?,
        ),
        _ => {
            return Err(s
                .r
                .raw
                .invalid("qk_norm_type", &qk.into(), "`qwen3` or `olmo`"));
        }
    };
    let mut a = mha(hidden, heads, kv, head_dim, false);
    a.q_bias = bias;
    a.k_bias = bias;
    a.v_bias = bias;
    a.q_norm = Some(Norm::rms_norm(q_norm));
    a.k_norm = Some(Norm::rms_norm(k_norm));
    let rms = Norm::rms_norm(hidden);
    let layer = Layer {
        attention: Attention::Standard(a),
        cross_attention: None,
        ffn: Ffn::Dense(mlp(hidden, ffn, true, false)),
        norms: vec![rms; 2],
        sliding_window: None,
        extras: Vec::new(),
        state: None,
    };
    let mut spec = Decoder::new(
        "molmo2",
        arch,
        hidden,
        vocab,
        Layers::repeat(layer, n),
        Some(rms),
        false,
    )
    .into_spec();
    spec.token_embedding = Some(Table {
        rows: s.check(checked::add(
            "vocab_size + additional_vocab_size",
            vocab,
            extra,
        ))?,
        dim: hidden,
    });
    Ok(spec)
}

/// A biased-by-`bias` attention `input → n_h·d_h` (k, v: `n_kv·d_h`) `→ output`.
fn attention(
    p: &mut Parts,
    pre: &str,
    (input, output): (&Expr, &Expr),
    (heads, kv, hd): (u64, u64, u64),
    bias: bool,
    copies: &Expr,
) {
    let part = "vision attention";
    let q = mul(lit(heads), lit(hd));
    let k = mul(lit(kv), lit(hd));
    p.linear(
        format!("{pre}.q_proj"),
        part,
        (input.clone(), q.clone()),
        bias,
        copies,
    );
    p.linear(
        format!("{pre}.k_proj"),
        part,
        (input.clone(), k.clone()),
        bias,
        copies,
    );
    p.linear(
        format!("{pre}.v_proj"),
        part,
        (input.clone(), k),
        bias,
        copies,
    );
    p.linear(
        format!("{pre}.o_proj"),
        part,
        (q, output.clone()),
        bias,
        copies,
    );
}

/// `Molmo2ForConditionalGeneration`.
pub(crate) fn molmo2(
    raw: &mut RawConfig<'_>,
    f: &Family,
    _head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let arch = architecture(raw, f.architecture);
    let mut spec = with_sub(raw, "text_config", "Molmo2TextConfig", |s| {
        text_model(s, arch)
    })?;
    let mut p = vision();
    with_sub(raw, "vision_config", "Molmo2VisionConfig", |s| {
        let hidden = s.size("hidden_size", 1152)?;
        let ffn = s.size("intermediate_size", 4304)?;
        let n = s.count("num_hidden_layers", 25)?;
        let heads = s.size("num_attention_heads", 16)?;
        let kv = s.size("num_key_value_heads", 16)?;
        let hd = s.size("head_dim", 72)?;
        let image = s.list("image_size", &[378, 378])?;
        let patch = s.size("patch_size", 14)?;
        let channels = s.size("num_channels", 3)?;
        let bias = s.flag("attention_bias", true)?;
        // `Molmo2VisionConfig.__post_init__`: one position per patch of `image_size`.
        let positions = if let Some(n) = s.size_opt("num_position_embeddings")? {
            n
        } else if let [h, w] = image.as_slice() {
            s.check(
                (Checked::new(*h) / patch * (Checked::new(*w) / patch))
                    .get("(image_size / patch_size)²"),
            )?
        } else {
            let v = serde_json::Value::from(image.clone());
            return Err(s.r.raw.invalid("image_size", &v, "two integers"));
        };
        let (d, l, one) = (sym("d_vis", hidden), sym("L_vis", n), lit(1));
        let pre = "model.vision_tower";
        let part = "vision embeddings";
        p.table(
            format!("{pre}.positional_embedding"),
            part,
            (lit(positions), d.clone()),
            &one,
        );
        p.linear(
            format!("{pre}.patch_embedding"),
            part,
            (
                mul(lit(s.mul(patch, patch, "patch_size²")?), lit(channels)),
                d.clone(),
            ),
            true,
            &one,
        );
        let lp = format!("{pre}.layers");
        attention(
            &mut p,
            &format!("{lp}.self_attn"),
            (&d, &d),
            (heads, kv, hd),
            bias,
            &l,
        );
        let layer = VitLayer::clip(d.clone(), sym("d_ff_vis", ffn));
        let part = "vision encoder layers";
        p.norm(format!("{lp}.layer_norm1"), part, &d, true, &l);
        p.norm(format!("{lp}.layer_norm2"), part, &d, true, &l);
        super::vit::mlp(
            &mut p,
            &format!("{lp}.mlp"),
            (&d, &layer.ffn),
            false,
            true,
            &l,
        );
        Ok(())
    })?;
    with_sub(raw, "adapter_config", "Molmo2AdapterConfig", |s| {
        // `Molmo2AdapterConfig.__post_init__`: two layers, `[24, 18]`, when absent.
        let n = if s.r.raw.value("vision_feature_layer").is_some() {
            s.list_len_or_one("vision_feature_layer")?
        } else {
            let reason = "absent; `Molmo2AdapterConfig` default";
            s.r.raw.assume("vision_feature_layer", "[24, 18]", reason);
            2
        };
        let hidden = s.size("hidden_size", 1152)?;
        let heads = s.size("num_attention_heads", 16)?;
        let kv = s.size("num_key_value_heads", 16)?;
        let hd = s.size("head_dim", 72)?;
        let bias = s.flag("attention_bias", true)?;
        let inner = s.size("intermediate_size", 18_944)?;
        let text = s.size("text_hidden_size", 3584)?;
        let mlp_bias = s.flag("mlp_bias", false)?;
        let one = lit(1);
        let pre = "model.multi_modal_projector";
        let d = sym("d_adapter", hidden);
        let wide = mul(d.clone(), lit(n));
        attention(
            &mut p,
            &format!("{pre}.image_pooling_2d"),
            (&wide, &d),
            (heads, kv, hd),
            bias,
            &one,
        );
        let part = "image projector";
        let ff = sym("d_ff_adapter", inner);
        p.linear(
            format!("{pre}.image_projector.gate_proj"),
            part,
            (d.clone(), ff.clone()),
            mlp_bias,
            &one,
        );
        p.linear(
            format!("{pre}.image_projector.up_proj"),
            part,
            (d.clone(), ff.clone()),
            mlp_bias,
            &one,
        );
        p.linear(
            format!("{pre}.image_projector.down_proj"),
            part,
            (ff, sym("text_hidden_size", text)),
            false,
            &one,
        );
        Ok(())
    })?;
    spec.extras.extend(p.out);
    Ok(spec)
}
