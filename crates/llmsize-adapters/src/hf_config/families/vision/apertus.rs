//! Apertus 1.5 (`modeling_apertus1p5.py`, `Apertus1p5ForConditionalGeneration`): the
//! `apertus1p5_text` model with its own LM head, an image tokenizer (EMU3.5's VQ-GAN encoder,
//! `vision`) and an audio tokenizer (`AutoModel` of `audio_config`, `WavTokenizer`'s encoder,
//! `audio`). Images and audio become token ids of the shared vocabulary: no projector.

use llmsize_core::Category;
use llmsize_core::expr::Expr;
use llmsize_core::spec::ModelSpec;

use super::parts::{Parts, Sub, lit, mul, sub_type, sym, with_sub};
use super::{Tie, text, vision, with_parts};
use crate::error::ConfigError;
use crate::hf_config::HeadChoice;
use crate::hf_config::family::Family;
use crate::hf_config::raw::RawConfig;
use llmsize_core::checked;

/// `Apertus1p5ForConditionalGeneration`.
pub(crate) fn apertus1p5(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let spec = text(raw, f, "apertus1p5_text", head, Tie::Top(false))?;
    let mut p = vision();
    with_sub(
        raw,
        "vision_config",
        "Apertus1p5VisionTokenizerConfig",
        |s| vq_encoder(s, &mut p),
    )?;
    let t = sub_type(raw, "audio_config", "wavtokenizer_encoder")?;
    if t != "wavtokenizer_encoder" {
        return Err(crate::hf_config::unsupported(
            &format!("{} (audio_config)", raw.file),
            t,
        ));
    }
    let mut a = Parts::new(Category::Audio);
    with_sub(raw, "audio_config", "WavTokenizerEncoderConfig", |s| {
        wavtokenizer_encoder(s, &mut a, "model.audio_tokenizer")
    })?;
    p.out.extend(a.out);
    Ok(with_parts(spec, p))
}

/// A 3×3 (`k` = 9) or 1×1 convolution `input → output` with its bias, `copies` times.
fn conv(p: &mut Parts, name: String, (input, k, output): (&Expr, u64, &Expr), copies: &Expr) {
    p.conv(
        name,
        "vision tokenizer",
        (input.clone(), lit(k), output.clone()),
        true,
        copies,
    );
}

/// `Apertus1p5VisionTokenizerResnetBlock(in, out)`: `GroupNorm`s (weight and bias) before
/// each 3×3 convolution, a 1×1 `nin_shortcut` when the widths differ.
fn resnet(p: &mut Parts, pre: &str, (cin, cout): (u64, u64), copies: &Expr) {
    let i = lit(cin);
    let o = lit(cout);
    let part = "vision tokenizer";
    p.norm(format!("{pre}.norm1"), part, &i, true, copies);
    conv(p, format!("{pre}.conv1"), (&i, 9, &o), copies);
    p.norm(format!("{pre}.norm2"), part, &o, true, copies);
    conv(p, format!("{pre}.conv2"), (&o, 9, &o), copies);
    if cin != cout {
        conv(p, format!("{pre}.nin_shortcut"), (&i, 1, &o), copies);
    }
}

/// `Apertus1p5VisionTokenizerAttnBlock(c)`: a `GroupNorm` and 1×1 `q`, `k`, `v`, `proj_out`.
fn attn(p: &mut Parts, pre: &str, c: u64, copies: &Expr) {
    let w = lit(c);
    p.norm(format!("{pre}.norm"), "vision tokenizer", &w, true, copies);
    for n in ["q", "k", "v", "proj_out"] {
        conv(p, format!("{pre}.{n}"), (&w, 1, &w), copies);
    }
}

/// `Apertus1p5VisionTokenizerModel`: `conv_in` `in_channels → base`, one stage per
/// `channel_multiplier` entry (`num_res_blocks` resnet blocks `base·m[s−1] → base·m[s]`, each
/// followed by an attention block when `resolution / 2^s` is in `attn_resolutions`; a 3×3
/// stride-2 downsample on all but the last stage), the middle (resnet, attention, resnet),
/// `norm_out`, `conv_out` `→ latent_channels`; `quant_conv` `latent → embed_dim` and the
/// codebook `quantize.embedding` (`embed_dim → codebook_size`, no bias).
fn vq_encoder(s: &mut Sub<'_, '_>, p: &mut Parts) -> Result<(), ConfigError> {
    let codebook = s.size("codebook_size", 131_072)?;
    let embed = s.size("embed_dim", 256)?;
    let latent = s.size("latent_channels", 256)?;
    let channels = s.size("in_channels", 3)?;
    let base = s.size("base_channels", 256)?;
    let mults = s.list("channel_multiplier", &[1, 1, 2, 2, 4])?;
    let blocks = s.count("num_res_blocks", 4)?;
    let attn_res = s.list("attn_resolutions", &[16])?;
    let resolution = s.size("resolution", 256)?;
    let Some(&last) = mults.last() else {
        return Err(s.r.raw.invalid(
            "channel_multiplier",
            &serde_json::Value::Array(Vec::new()),
            "a non-empty list",
        ));
    };
    let pre = "model.vision_tokenizer";
    let one = lit(1);
    conv(
        p,
        format!("{pre}.encoder.conv_in"),
        (&lit(channels), 9, &lit(base)),
        &one,
    );
    let mut prev = 1;
    for (i, &m) in mults.iter().enumerate() {
        let st = format!("{pre}.encoder.stages.{i}");
        let cin = s.mul(base, prev, "base_channels·channel_multiplier")?;
        let cout = s.mul(base, m, "base_channels·channel_multiplier")?;
        // `resolution // 2^i` (0 past 2^63, where no `attn_resolutions` entry is).
        let res = u32::try_from(i)
            .ok()
            .and_then(|e| 2u64.checked_pow(e))
            .and_then(|div| resolution.checked_div(div))
            .unwrap_or(0);
        let with_attn = attn_res.contains(&res);
        if blocks > 0 {
            resnet(p, &format!("{st}.layers.0.resnet"), (cin, cout), &one);
            if blocks > 1 {
                resnet(
                    p,
                    &format!("{st}.layers.N.resnet"),
                    (cout, cout),
                    &lit(s.check(checked::sub("num_res_blocks − 1", blocks, 1))?),
                );
            }
            if with_attn {
                attn(p, &format!("{st}.layers.N.attention"), cout, &lit(blocks));
            }
        }
        if i < mults.len().saturating_sub(1) {
            conv(
                p,
                format!("{st}.downsample.conv"),
                (&lit(cout), 9, &lit(cout)),
                &one,
            );
        }
        prev = m;
    }
    let c = s.mul(base, last, "base_channels·channel_multiplier[-1]")?;
    resnet(p, &format!("{pre}.encoder.mid.block_1"), (c, c), &one);
    attn(p, &format!("{pre}.encoder.mid.attn_1"), c, &one);
    resnet(p, &format!("{pre}.encoder.mid.block_2"), (c, c), &one);
    p.norm(
        format!("{pre}.encoder.norm_out"),
        "vision tokenizer",
        &lit(c),
        true,
        &one,
    );
    conv(
        p,
        format!("{pre}.encoder.conv_out"),
        (&lit(c), 9, &lit(latent)),
        &one,
    );
    conv(
        p,
        format!("{pre}.quant_conv"),
        (&lit(latent), 1, &lit(embed)),
        &one,
    );
    p.linear(
        format!("{pre}.quantize.embedding"),
        "vision tokenizer",
        (lit(embed), lit(codebook)),
        false,
        &one,
    );
    Ok(())
}

/// `WavTokenizerConv1d`: a biased `Conv1d` under `weight_norm` (a gain per output channel
/// beside the direction) or followed by `GroupNorm(1, out)` (`time_group_norm`).
fn wt_conv(
    p: &mut Parts,
    name: &str,
    (input, k, output): (u64, u64, u64),
    weight_norm: bool,
    copies: &Expr,
) {
    let part = "audio tokenizer";
    let o = lit(output);
    p.conv(
        name.to_owned(),
        part,
        (lit(input), lit(k), o.clone()),
        true,
        copies,
    );
    if weight_norm {
        p.vector(format!("{name}.weight_g"), part, o, copies);
    } else {
        p.norm(format!("{name}.norm"), part, &o, true, copies);
    }
}

/// `WavTokenizerEncoderModel`: the `SEANet` encoder (a first conv `audio_channels → F`, then
/// per ratio of `reversed(upsampling_ratios)` at width `w`: `num_residual_layers` residual
/// blocks (conv `w → w / compress` of `residual_kernel_size`, conv `→ w` of 1, a 1×1
/// shortcut when `use_conv_shortcut`) and a downsampling conv `w → 2w` of `2·ratio`; an LSTM
/// of `num_lstm_layers` at the final width; a last conv `→ hidden_size`). The quantizer's
/// codebook is buffers.
pub(crate) fn wavtokenizer_encoder(
    s: &mut Sub<'_, '_>,
    p: &mut Parts,
    pre: &str,
) -> Result<(), ConfigError> {
    let channels = s.size("audio_channels", 1)?;
    let filters = s.size("num_filters", 32)?;
    let ratios = s.list("upsampling_ratios", &[6, 5, 5, 4])?;
    let residual = s.count("num_residual_layers", 1)?;
    let compress = s.size("compress", 2)?;
    let shortcut = s.flag("use_conv_shortcut", true)?;
    let norm = s.string("norm_type", "weight_norm")?;
    let kernel = s.size("kernel_size", 7)?;
    let last_kernel = s.size("last_kernel_size", 7)?;
    let res_kernel = s.size("residual_kernel_size", 3)?;
    let lstm_layers = s.count("num_lstm_layers", 2)?;
    let hidden = s.size("hidden_size", 512)?;
    let wn = match norm.as_str() {
        "weight_norm" => true,
        "time_group_norm" => false,
        _ => {
            return Err(s.r.raw.invalid(
                "norm_type",
                &serde_json::Value::String(norm.clone()),
                "`weight_norm` or `time_group_norm`",
            ));
        }
    };
    let one = lit(1);
    let enc = format!("{pre}.encoder.layers");
    wt_conv(
        p,
        &format!("{enc}.conv_in"),
        (channels, kernel, filters),
        wn,
        &one,
    );
    let mut width = filters;
    for (i, &r) in ratios.iter().rev().enumerate() {
        if residual > 0 {
            let n = lit(residual);
            let inner = s.check(checked::div("filters·2^i / compress", width, compress))?;
            let b = format!("{enc}.stage{i}.block");
            wt_conv(p, &format!("{b}.conv1"), (width, res_kernel, inner), wn, &n);
            wt_conv(p, &format!("{b}.conv2"), (inner, 1, width), wn, &n);
            if shortcut {
                wt_conv(p, &format!("{b}.shortcut"), (width, 1, width), wn, &n);
            }
        }
        let wider = s.mul(width, 2, "filters·2^i")?;
        wt_conv(
            p,
            &format!("{enc}.stage{i}.downsample"),
            (width, s.mul(r, 2, "2·upsampling_ratios")?, wider),
            wn,
            &one,
        );
        width = wider;
    }
    if lstm_layers > 0 {
        // `nn.LSTM(w, w, layers)`: per layer `weight_ih`, `weight_hh` (4w × w) and two biases.
        let w = sym("w_lstm", width);
        let n = lit(lstm_layers);
        let part = "audio tokenizer";
        for m in ["weight_ih", "weight_hh"] {
            p.linear(
                format!("{enc}.lstm.{m}"),
                part,
                (w.clone(), mul(lit(4), w.clone())),
                false,
                &n,
            );
        }
        for m in ["bias_ih", "bias_hh"] {
            p.vector(format!("{enc}.lstm.{m}"), part, mul(lit(4), w.clone()), &n);
        }
    }
    wt_conv(
        p,
        &format!("{enc}.conv_out"),
        (width, last_kernel, hidden),
        wn,
        &one,
    );
    Ok(())
}
