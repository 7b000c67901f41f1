//! Hunyuan VL (`modeling_hunyuan_vl.py`, `HunYuanVLForConditionalGeneration`, the model of
//! tencent/`HunyuanOCR`): a `ViT` with a learned position grid and a convolutional patch merger
//! ending in a linear to the text width, and the `hunyuan_vl_text` model (Hunyuan dense's
//! layers). Legacy checkpoints write the text keys at the top level (and some under old names);
//! `HunYuanVLConfig.__post_init__` and `HunYuanVLTextConfig.attribute_map` fold them, and so
//! does [`normalized`].

use llmsize_core::checked;
use llmsize_core::expr::Expr;
use llmsize_core::spec::ModelSpec;
use serde_json::{Map, Value};

use super::parts::{Parts, Sub, lit, mul, sym};
use super::{text_or_default, vision, with_parts, with_sub_or_default};
use crate::error::ConfigError;
use crate::hf_config::HeadChoice;
use crate::hf_config::families::vision::Tie;
use crate::hf_config::family::Family;
use crate::hf_config::raw::RawConfig;

/// `HunYuanVLTextConfig`'s own fields (and the legacy `RoPE` keys), which
/// `HunYuanVLConfig.__post_init__` moves from the top level into `text_config` when that is
/// absent. The inherited `PreTrainedConfig` fields it also moves shape nothing but
/// `tie_word_embeddings`, which is listed.
const TEXT_KEYS: &[&str] = &[
    "vocab_size",
    "hidden_size",
    "intermediate_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "hidden_act",
    "max_position_embeddings",
    "initializer_range",
    "rms_norm_eps",
    "use_cache",
    "pad_token_id",
    "bos_token_id",
    "eos_token_id",
    "eod_token_id",
    "pretraining_tp",
    "tie_word_embeddings",
    "rope_parameters",
    "attention_bias",
    "attention_dropout",
    "head_dim",
    "sep_token_id",
    "rope_scaling",
    "rope_theta",
    "attention_head_dim",
    "org_vocab_size",
    "pad_id",
];

/// `HunYuanVLTextConfig.attribute_map`: legacy name → canonical field. The legacy name wins
/// when both are given (`PreTrainedConfig.__init__` writes it over the field).
const ALIASES: &[(&str, &str)] = &[
    ("attention_head_dim", "head_dim"),
    ("org_vocab_size", "vocab_size"),
    ("pad_id", "pad_token_id"),
];

/// The configuration as the classes see it: a flat layout's text keys moved into
/// `text_config` (only when `text_config` is absent or null, as `__post_init__` does), and the
/// text config's legacy names written over their fields.
fn normalized(map: &Map<String, Value>) -> Map<String, Value> {
    let mut out = map.clone();
    if out.get("text_config").is_none_or(Value::is_null) {
        let mut text = Map::new();
        for key in TEXT_KEYS {
            if let Some(v) = out.remove(*key) {
                text.insert((*key).to_owned(), v);
            }
        }
        out.insert("text_config".to_owned(), Value::Object(text));
    }
    if let Some(Value::Object(text)) = out.get_mut("text_config") {
        for (old, new) in ALIASES {
            if let Some(v) = text.remove(*old) {
                text.insert((*new).to_owned(), v);
            }
        }
    }
    out
}

/// The vision tower (`HunYuanVLVisionTransformer`): a patch convolution (`c·p² → d`, biased)
/// and a learned position table of `(max_image_size / p)² + 1` rows; `num_hidden_layers`
/// blocks of `LayerNorm`, attention (q, k, v, o biased, `heads · d/heads` wide), `LayerNorm`,
/// MLP (`fc1`, `fc2`, biased); then the merger (`HunYuanVLVisionPatchMerger`): an `RMSNorm`,
/// a `m×m` convolution `d → 2d` and a 1×1 convolution `2d → 4d` (biased; the widths do not
/// follow `m`), a linear `4d → text` (biased, `text` = the text model's `hidden_size`, which
/// `__post_init__` writes into `text_hidden_size`), a learned `image_newline` (`4d`),
/// `image_begin`, `image_end` and `image_sep` (`text`), and an `RMSNorm` over `text`.
fn tower(s: &mut Sub<'_, '_>, p: &mut Parts, text: u64) -> Result<(), ConfigError> {
    let d = s.size("hidden_size", 1152)?;
    let n = s.size("num_hidden_layers", 27)?;
    let heads = s.size("num_attention_heads", 16)?;
    let f = s.size("intermediate_size", 4304)?;
    let channels = s.size("num_channels", 3)?;
    let patch = s.size("patch_size", 16)?;
    let max_image = s.size("max_image_size", 2048)?;
    let merge = s.size("spatial_merge_size", 2)?;
    let hd = match s.size_opt("head_dim")? {
        Some(h) => h,
        None => s.check(checked::div("hidden_size / num_attention_heads", d, heads))?,
    };
    super::hy::patch_embedding(s, p, (channels, patch, max_image), d)?;
    let dv = || sym("d_vis", d);
    blocks(
        p,
        dv(),
        mul(sym("heads_vis", heads), sym("d_head_vis", hd)),
        sym("d_ff_vis", f),
        &sym("L_vis", n),
    );
    merger(p, &dv(), sym("m", merge), &sym("d", text));
    Ok(())
}

/// The tower's `l` blocks (`HunYuanVLVisionBlock`): biased `LayerNorm`s and linears.
fn blocks(p: &mut Parts, d: Expr, width: Expr, ff: Expr, all: &Expr) {
    let pre = "vision_tower.layers";
    p.norm(format!("{pre}.layer_norm1"), "vision blocks", &d, true, all);
    for name in ["q_proj", "k_proj", "v_proj"] {
        p.linear(
            format!("{pre}.self_attn.{name}"),
            "vision blocks",
            (d.clone(), width.clone()),
            true,
            all,
        );
    }
    p.linear(
        format!("{pre}.self_attn.o_proj"),
        "vision blocks",
        (width, d.clone()),
        true,
        all,
    );
    p.norm(format!("{pre}.layer_norm2"), "vision blocks", &d, true, all);
    p.linear(
        format!("{pre}.mlp.fc1"),
        "vision blocks",
        (d.clone(), ff.clone()),
        true,
        all,
    );
    p.linear(
        format!("{pre}.mlp.fc2"),
        "vision blocks",
        (ff, d),
        true,
        all,
    );
}

/// `HunYuanVLVisionPatchMerger` (see [`tower`]).
fn merger(p: &mut Parts, d: &Expr, m: Expr, text: &Expr) {
    let pre = "vision_tower.patch_merger";
    let one = lit(1);
    let d2 = || mul(lit(2), d.clone());
    let d4 = || mul(lit(4), d.clone());
    p.norm(format!("{pre}.before_rms"), "vision merger", d, false, &one);
    p.conv(
        format!("{pre}.proj_conv"),
        "vision merger",
        (d.clone(), mul(m.clone(), m), d2()),
        true,
        &one,
    );
    p.conv(
        format!("{pre}.proj_out"),
        "vision merger",
        (d2(), lit(1), d4()),
        true,
        &one,
    );
    p.linear(
        format!("{pre}.mlp"),
        "vision merger",
        (d4(), text.clone()),
        true,
        &one,
    );
    p.vector(format!("{pre}.image_newline"), "vision merger", d4(), &one);
    for name in ["image_begin", "image_end", "image_sep"] {
        p.vector(format!("{pre}.{name}"), "vision merger", text.clone(), &one);
    }
    p.norm(
        format!("{pre}.after_rms"),
        "vision merger",
        text,
        false,
        &one,
    );
}

/// `HunYuanVLForConditionalGeneration`: the text model of `text_config` (a flat layout's keys
/// folded in, [`normalized`]; its `lm_head` tied by `tie_word_embeddings`, default true, or
/// the text config's) and the vision tower, which ends in the text model's width.
pub(super) fn hunyuan_vl(
    raw: &mut RawConfig<'_>,
    f: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let map = normalized(raw.map);
    let mut inner = raw.sibling(&map);
    let spec = text_or_default(&mut inner, f, "hunyuan_vl_text", head, Tie::Either(true))?;
    let text = with_sub_or_default(&mut inner, "text_config", "HunYuanVLTextConfig", |s| {
        s.size("hidden_size", 4096)
    })?;
    let mut p = vision();
    with_sub_or_default(&mut inner, "vision_config", "HunYuanVLVisionConfig", |s| {
        tower(s, &mut p, text)
    })?;
    for a in inner.assumptions {
        raw.assume(&a.field, a.value, &a.reason);
    }
    for (symbol, source) in inner.sources {
        raw.source(symbol, &source);
    }
    Ok(with_parts(spec, p))
}
