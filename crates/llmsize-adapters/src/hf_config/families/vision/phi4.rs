//! Phi-4-multimodal (`modeling_phi4_multimodal.py`, `Phi4MultimodalForCausalLM`): a Phi-3
//! decoder (fused `qkv_proj`, fused `gate_up_proj`, no biases) read from the top-level keys,
//! and `embed_tokens_extend` holding the image embedding (a `SigLIP` tower with pooling head,
//! two feature vectors and a projection `d_vis → d → d`) and the audio embedding (a conformer
//! encoder and two projections `d_audio·downsample_rate → d → d`).

use llmsize_core::Category;
use llmsize_core::expr::Expr;
use llmsize_core::spec::ModelSpec;

use super::parts::{Parts, lit, mul, sym, with_sub};
use super::vit::{siglip_body, vit_keys};
use super::with_parts;
use crate::error::ConfigError;
use crate::hf_config::HeadChoice;
use crate::hf_config::family::{
    AttentionRule, Block, Family, LLAMA, PLAIN_ATTENTION, StandardRule, Windows, key_or,
    read_block, unbiased_mlp,
};
use crate::hf_config::raw::RawConfig;
use llmsize_core::checked;

/// `Phi4MultimodalModel`'s decoder with `Phi4MultimodalConfig`'s defaults.
const PHI4_MM: Block = Block {
    hidden: key_or(&["hidden_size"], 3072),
    layers: key_or(&["num_hidden_layers"], 32),
    heads: key_or(&["num_attention_heads"], 32),
    vocab: key_or(&["vocab_size"], 200_064),
    kv_default: Some(8),
    attention: AttentionRule::Standard(StandardRule {
        fused: true,
        ..PLAIN_ATTENTION
    }),
    mlp: unbiased_mlp(key_or(&["intermediate_size"], 8192)),
    windows: Windows::All,
    ..LLAMA
};

/// `Phi4MultimodalForCausalLM`.
pub(crate) fn phi4_multimodal(
    raw: &mut RawConfig<'_>,
    f: &Family,
    _head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let spec = read_block(raw, f, &PHI4_MM)?;
    let d = spec.hidden_size;
    let mut p = Parts::new(Category::Vision);
    image(raw, &mut p, d)?;
    let mut a = Parts::new(Category::Audio);
    audio(raw, &mut a, d)?;
    p.out.extend(a.out);
    Ok(with_parts(spec, p))
}

/// `Phi4MultimodalImageEmbedding`: `Phi4MultimodalVisionModel` (`SigLIP`'s embeddings with a
/// position per patch, encoder, `post_layernorm`, pooling head), `global_img_feature_extensor`
/// and `sub_img_feature_extensor` of `d_vis`, biased `img_projection_up` `d_vis → d` and
/// `img_projection_down` `d → d`.
fn image(raw: &mut RawConfig<'_>, p: &mut Parts, d: u64) -> Result<(), ConfigError> {
    let pre = "model.embed_tokens_extend.image_embed";
    let k = with_sub(raw, "vision_config", "Phi4MultimodalVisionConfig", |s| {
        vit_keys(s, (1152, 4304, 27, 448, 14))
    })?;
    siglip_body(p, &format!("{pre}.img_processor"), &k, true, true);
    let one = lit(1);
    let part = "vision projector";
    for n in ["global_img_feature_extensor", "sub_img_feature_extensor"] {
        p.vector(format!("{pre}.{n}"), part, k.d(), &one);
    }
    let dt = sym("d", d);
    p.linear(
        format!("{pre}.img_projection_up"),
        part,
        (k.d(), dt.clone()),
        true,
        &one,
    );
    p.linear(
        format!("{pre}.img_projection_down"),
        part,
        (dt.clone(), dt),
        true,
        &one,
    );
    Ok(())
}

/// The audio sizes of `Phi4MultimodalAudioConfig`.
struct AudioKeys {
    d: u64,
    ff: u64,
    blocks: u64,
    heads: u64,
    ext: u64,
    dsep: u64,
    mult: u64,
    kernel: u64,
    buckets: u64,
    sampling: u64,
    channels: u64,
    final_size: u64,
    downsample: u64,
    /// `d_a / heads`, a head's width.
    head_width: u64,
}

/// `Phi4MultimodalAudioEmbedding`: `Phi4MultimodalAudioModel` and the speech projections.
///
/// The model: `NemoConvSubsampling` (a `Conv2d(1, C, 3)`, then `log2(time_reduction) − 1`
/// pairs of a depthwise `Conv2d(C, C, 3, groups=C)` and a pointwise `Conv2d(C, C, 1)`, all
/// biased, and `out` `C·nemo_final_size → d_a`), the relative attention bias table
/// (`bias_max_distance`, doubled unless `bias_symmetric`, × heads), and `num_blocks` conformer
/// layers: two `MLP`s (`LayerNorm`, `gate_up_proj` `d_a → 2·ff`, `down_proj`, biased),
/// biased q/k/v/o of `heads·(d_a / heads)`, the conv module (`LayerNorm`, GLU point-wise
/// conv `d_a → 2·ext` with `b1`, `b2`, depthwise `d_a → d_a·m` of `kernel_size`, point-wise
/// `d_a·m → dsep`, `ext_pw_conv_1d` `d_a → ext`), `layer_norm_att` and `layer_norm`.
fn audio(raw: &mut RawConfig<'_>, p: &mut Parts, d: u64) -> Result<(), ConfigError> {
    let k = with_sub(raw, "audio_config", "Phi4MultimodalAudioConfig", |s| {
        let reduction = s.size("time_reduction", 8)?;
        let symmetric = s.flag("bias_symmetric", false)?;
        let distance = s.size("bias_max_distance", 1000)?;
        Ok(AudioKeys {
            d: s.size("hidden_size", 1024)?,
            ff: s.size("intermediate_size", 1536)?,
            blocks: s.count("num_blocks", 24)?,
            heads: s.size("num_attention_heads", 16)?,
            ext: s.size("ext_pw_out_channel", 1024)?,
            dsep: s.size("depthwise_separable_out_channel", 1024)?,
            mult: s.size("depthwise_multiplier", 1)?,
            kernel: s.size("kernel_size", 3)?,
            buckets: if symmetric {
                distance
            } else {
                s.mul(distance, 2, "2·bias_max_distance")?
            },
            // `int(math.log2(time_reduction))`.
            sampling: u64::from(reduction.ilog2()),
            channels: s.size("nemo_conv_channels", 1024)?,
            final_size: s.size("nemo_final_size", 10)?,
            downsample: s.size("downsample_rate", 1)?,
            head_width: {
                let d = s.size("hidden_size", 1024)?;
                let heads = s.size("num_attention_heads", 16)?;
                s.check(checked::div("hidden_size / num_attention_heads", d, heads))?
            },
        })
    })?;
    let one = lit(1);
    let pre = "model.embed_tokens_extend.audio_embed";
    let enc = format!("{pre}.encoder");
    let c = sym("C_audio", k.channels);
    let da = sym("d_audio", k.d);
    let part = "audio encoder";
    p.conv(
        format!("{enc}.embed.conv.0"),
        part,
        (lit(1), lit(9), c.clone()),
        true,
        &one,
    );
    // `log2(time_reduction) − 1` pairs (none below 2).
    let pairs = lit(k.sampling.saturating_sub(1));
    if k.sampling > 1 {
        // Depthwise: one 3×3 kernel per channel.
        p.linear(
            format!("{enc}.embed.conv.dw"),
            part,
            (lit(9), c.clone()),
            true,
            &pairs,
        );
        p.linear(
            format!("{enc}.embed.conv.pw"),
            part,
            (c.clone(), c.clone()),
            true,
            &pairs,
        );
    }
    p.linear(
        format!("{enc}.embed.out"),
        part,
        (mul(c, lit(k.final_size)), da.clone()),
        true,
        &one,
    );
    p.table(
        format!("{enc}.relative_attention_bias_layer.bias_values"),
        part,
        (lit(k.buckets), lit(k.heads)),
        &one,
    );
    let l = sym("L_audio", k.blocks);
    let lay = format!("{enc}.encoders");
    let ff = sym("d_ff_audio", k.ff);
    for m in ["feed_forward_in", "feed_forward_out"] {
        p.norm(format!("{lay}.{m}.layer_norm"), part, &da, true, &l);
        p.linear(
            format!("{lay}.{m}.gate_up_proj"),
            part,
            (da.clone(), mul(lit(2), ff.clone())),
            true,
            &l,
        );
        p.linear(
            format!("{lay}.{m}.down_proj"),
            part,
            (ff.clone(), da.clone()),
            true,
            &l,
        );
    }
    let inner = mul(lit(k.heads), lit(k.head_width));
    for m in ["q_proj", "k_proj", "v_proj"] {
        p.linear(
            format!("{lay}.self_attn.{m}"),
            part,
            (da.clone(), inner.clone()),
            true,
            &l,
        );
    }
    p.linear(
        format!("{lay}.self_attn.o_proj"),
        part,
        (inner, da.clone()),
        true,
        &l,
    );
    let ext = sym("ext_audio", k.ext);
    p.norm(format!("{lay}.conv.layer_norm"), part, &da, true, &l);
    p.linear(
        format!("{lay}.conv.glu.ext_pw_conv_1d"),
        part,
        (da.clone(), mul(lit(2), ext.clone())),
        true,
        &l,
    );
    p.vector(format!("{lay}.conv.glu.b1"), part, ext.clone(), &l);
    p.vector(format!("{lay}.conv.glu.b2"), part, ext.clone(), &l);
    let dm = mul(da.clone(), lit(k.mult));
    p.linear(
        format!("{lay}.conv.dw_sep_conv_1d.dw_conv"),
        part,
        (lit(k.kernel), dm.clone()),
        true,
        &l,
    );
    p.linear(
        format!("{lay}.conv.dw_sep_conv_1d.pw_conv"),
        part,
        (dm, lit(k.dsep)),
        true,
        &l,
    );
    p.linear(
        format!("{lay}.conv.ext_pw_conv_1d"),
        part,
        (da.clone(), ext),
        true,
        &l,
    );
    p.norm(format!("{lay}.layer_norm_att"), part, &da, true, &l);
    p.norm(format!("{lay}.layer_norm"), part, &da, true, &l);
    let dt = sym("d", d);
    let wide: Expr = mul(da, lit(k.downsample));
    for m in ["speech", "vision_speech"] {
        p.linear(
            format!("{pre}.up_proj_for_{m}"),
            "audio projector",
            (wide.clone(), dt.clone()),
            true,
            &one,
        );
        p.linear(
            format!("{pre}.down_proj_for_{m}"),
            "audio projector",
            (dt.clone(), dt.clone()),
            true,
            &one,
        );
    }
    Ok(())
}
