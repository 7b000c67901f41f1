//! The Qwen omni thinkers (`modeling_qwen2_5_omni.py`, `modeling_qwen3_omni_moe.py`): a
//! Whisper-style audio encoder (in the `audio` category), a Qwen-VL vision tower and the text
//! model; the thinker's `tie_word_embeddings` alone ties the head.

use llmsize_core::Category;
use llmsize_core::expr::Expr;
use llmsize_core::spec::ModelSpec;

use super::parts::{Parts, lit, sym, with_sub};
use super::qwen::{qwen2_5_vl_tower, qwen3_vl_tower};
use super::{vision, with_parts};
use crate::error::ConfigError;
use crate::hf_config::HeadChoice;
use crate::hf_config::families::vision::{Tie, text};
use crate::hf_config::family::Family;
use crate::hf_config::raw::RawConfig;

/// `L` audio encoder layers: `self_attn_layer_norm` and `final_layer_norm` (biased
/// `LayerNorm`s), `q_proj`, `k_proj` (biased when `k_bias`), `v_proj`, `out_proj`, `fc1`,
/// `fc2` (biased).
fn audio_layers(p: &mut Parts, d: &Expr, f: &Expr, l: &Expr, k_bias: bool) {
    let pre = "audio_tower.layers";
    p.norm(
        format!("{pre}.self_attn_layer_norm"),
        "audio norms",
        d,
        true,
        l,
    );
    p.norm(format!("{pre}.final_layer_norm"), "audio norms", d, true, l);
    for (name, bias) in [
        ("q_proj", true),
        ("k_proj", k_bias),
        ("v_proj", true),
        ("out_proj", true),
    ] {
        p.linear(
            format!("{pre}.self_attn.{name}"),
            "audio attention",
            (d.clone(), d.clone()),
            bias,
            l,
        );
    }
    p.linear(
        format!("{pre}.fc1"),
        "audio mlp",
        (d.clone(), f.clone()),
        true,
        l,
    );
    p.linear(
        format!("{pre}.fc2"),
        "audio mlp",
        (f.clone(), d.clone()),
        true,
        l,
    );
}

/// The sizes every audio encoder here reads: `d_model`, `encoder_ffn_dim`,
/// `encoder_layers`, `num_mel_bins`, `output_dim`.
fn audio_sizes(s: &mut super::parts::Sub<'_, '_>) -> Result<[u64; 5], ConfigError> {
    Ok([
        s.size("d_model", 1280)?,
        s.size("encoder_ffn_dim", 5120)?,
        s.size("encoder_layers", 32)?,
        s.size("num_mel_bins", 128)?,
        s.size("output_dim", 3584)?,
    ])
}

/// `Qwen2_5OmniAudioEncoder`: two biased 1-D convolutions (kernel 3, `mel → d → d`), the
/// `audio_bos_eos_token` table (2 × `output_dim`), the layers (`k_proj` bias-free),
/// `ln_post`, the biased `proj` `d → output_dim` (the sinusoidal positions are a buffer).
fn qwen2_5_omni_audio(raw: &mut RawConfig<'_>, p: &mut Parts) -> Result<(), ConfigError> {
    let [d, f, l, mel, out] = with_sub(
        raw,
        "audio_config",
        "Qwen2_5OmniAudioEncoderConfig",
        audio_sizes,
    )?;
    let one = lit(1);
    let (d, out) = (sym("d_audio", d), sym("d_out", out));
    let part = "audio embeddings";
    p.conv(
        "audio_tower.conv1",
        part,
        (lit(mel), lit(3), d.clone()),
        true,
        &one,
    );
    p.conv(
        "audio_tower.conv2",
        part,
        (d.clone(), lit(3), d.clone()),
        true,
        &one,
    );
    p.table(
        "audio_tower.audio_bos_eos_token",
        part,
        (lit(2), out.clone()),
        &one,
    );
    audio_layers(p, &d, &sym("d_ff_audio", f), &sym("L_audio", l), false);
    p.norm("audio_tower.ln_post", "audio norms", &d, true, &one);
    p.linear("audio_tower.proj", "audio projector", (d, out), true, &one);
    Ok(())
}

/// `Qwen3OmniMoeAudioEncoder`: three biased 2-D convolutions (3×3, `1 → h → h → h`, `h` =
/// `downsample_hidden_size`), a bias-free `conv_out` from `h` times the mel bins thrice
/// halved (`((((mel + 1) // 2 + 1) // 2 + 1) // 2`) to `d`, the layers (all biased),
/// `ln_post`, biased `proj1` `d → d` and `proj2` `d → output_dim`.
fn qwen3_omni_audio(raw: &mut RawConfig<'_>, p: &mut Parts) -> Result<(), ConfigError> {
    let ([d, f, l, mel, out], h) =
        with_sub(raw, "audio_config", "Qwen3OmniMoeAudioEncoderConfig", |s| {
            Ok((audio_sizes(s)?, s.size("downsample_hidden_size", 480)?))
        })?;
    let one = lit(1);
    let bins = mel.div_ceil(2).div_ceil(2).div_ceil(2);
    let (d, out, h) = (sym("d_audio", d), sym("d_out", out), sym("d_down", h));
    let part = "audio embeddings";
    p.conv(
        "audio_tower.conv2d1",
        part,
        (lit(1), lit(9), h.clone()),
        true,
        &one,
    );
    p.conv(
        "audio_tower.conv2d2",
        part,
        (h.clone(), lit(9), h.clone()),
        true,
        &one,
    );
    p.conv(
        "audio_tower.conv2d3",
        part,
        (h.clone(), lit(9), h.clone()),
        true,
        &one,
    );
    p.conv(
        "audio_tower.conv_out",
        part,
        (h, lit(bins), d.clone()),
        false,
        &one,
    );
    audio_layers(p, &d, &sym("d_ff_audio", f), &sym("L_audio", l), true);
    p.norm("audio_tower.ln_post", "audio norms", &d, true, &one);
    p.linear(
        "audio_tower.proj1",
        "audio projector",
        (d.clone(), d.clone()),
        true,
        &one,
    );
    p.linear("audio_tower.proj2", "audio projector", (d, out), true, &one);
    Ok(())
}

/// `Qwen2_5OmniThinkerForConditionalGeneration`: the audio encoder, Qwen2.5-VL's tower
/// (separate biased `q`, `k`, `v`: the same tensors as its fused `qkv`), the text model.
pub(super) fn qwen2_5_omni_thinker(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let spec = text(raw, f, "qwen2_5_omni_text", head, Tie::Top(false))?;
    let mut a = Parts::new(Category::Audio);
    qwen2_5_omni_audio(raw, &mut a)?;
    let mut p = vision();
    qwen2_5_vl_tower(
        raw,
        "vision_config",
        "Qwen2_5OmniVisionEncoderConfig",
        false,
        &mut p,
    )?;
    p.out.extend(a.out);
    Ok(with_parts(spec, p))
}

/// `Qwen3OmniMoeThinkerForConditionalGeneration`: the audio encoder, Qwen3-VL's tower with
/// its deepstack mergers, the MoE text model.
pub(super) fn qwen3_omni_moe_thinker(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let spec = text(raw, f, "qwen3_omni_moe_text", head, Tie::Top(false))?;
    let mut a = Parts::new(Category::Audio);
    qwen3_omni_audio(raw, &mut a)?;
    let mut p = vision();
    qwen3_vl_tower(
        raw,
        "vision_config",
        "Qwen3OmniMoeVisionEncoderConfig",
        true,
        &mut p,
    )?;
    p.out.extend(a.out);
    Ok(with_parts(spec, p))
}
