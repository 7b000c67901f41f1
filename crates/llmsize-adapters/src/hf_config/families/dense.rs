//! Dense decoders that are Llama with switches: Cohere 1/2, GLM 1/4, Granite (and its sliding
//! variant), EXAONE 3/4, `OLMo` 3, `SmolLM3`, Ministral 3, Seed-OSS, Helium, Arcee, Apertus
//! (and Apertus 1.5's text model), ERNIE 4.5, `InternLM3`, `IQuest-Coder`, CWM, `VaultGemma`,
//! `HyperCLOVA X`, Jais 2, `BitNet`, `DiffLlama`, `NanoChat`, Doge, Mellum; and the odd ones
//! built on the same block: HRM-Text (two stacks run in cycles) and Dory (nGPT scales, looped
//! middle layers); and ZAYA (a code reader: convolutional attention, a router network).
//! Each entry is the configuration class's defaults (transformers 5.24, `configuration_*.py`)
//! and the switches of its `modeling_*.py`; a `tweak` adds what the switches do not say (a
//! window pattern of its own, extra norms, an activation with parameters).

use llmsize_core::Category;
use llmsize_core::expr::{Expr, Sym};
use llmsize_core::spec::{
    Attention, Extra, Ffn, Layer, Layers, ModelSpec, Moe, Norm, NormKind, OutputHead,
    RecurrentState,
};

use crate::error::ConfigError;
use crate::hf_config::architecture;
use crate::hf_config::decoder::{Decoder, layer, mha, mlp};
use crate::hf_config::family::{
    ALL_SPARSE, AttentionRule, Block, Family, HeadDim, LLAMA, LLAMA_ATTENTION, LLAMA_MLP, MlpRule,
    MoeRule, NO, NormRule, PLAIN_ATTENTION, QkNorm, RMS2, Reader, Shared, StandardRule, Switch,
    Windows, YES, key_or,
};
use crate::hf_config::family::{map_kinds, map_layers_by, try_map_kinds};
use crate::hf_config::raw::RawConfig;
use crate::hf_config::runs::Runs;
use llmsize_core::checked::Checked;

// ---------------------------------------------------------------------------------------------
// Helpers for the tweaks: rebuild a spec's layers kind by kind (never layer by layer).
// ---------------------------------------------------------------------------------------------

/// `base` with the configuration class's defaults for the five sizes every entry reads.
const fn sized(base: &Block, d: u64, l: u64, n_h: u64, v: u64, d_ff: u64) -> Block {
    Block {
        hidden: key_or(&["hidden_size"], d),
        layers: key_or(&["num_hidden_layers"], l),
        heads: key_or(&["num_attention_heads"], n_h),
        vocab: key_or(&["vocab_size"], v),
        mlp: MlpRule {
            width: key_or(&["intermediate_size"], d_ff),
            ..base.mlp
        },
        ..*base
    }
}

/// The decoder's sliding windows set layer by layer (value `i`: `None` is global), each
/// distinct (kind, window) built once.
fn set_windows(spec: &mut ModelSpec, windows: &Runs<Option<u64>>) -> Result<(), ConfigError> {
    map_layers_by(spec, windows, |layer, window| {
        Ok(Layer {
            sliding_window: *window,
            ..layer.clone()
        })
    })
}

/// A layer with nothing in it (never reached: run kinds always exist).
fn empty_layer() -> Layer {
    Layer {
        attention: Attention::Absent,
        cross_attention: None,
        ffn: Ffn::Absent,
        norms: Vec::new(),
        sliding_window: None,
        extras: Vec::new(),
        state: None,
    }
}

/// The decoder's layer count.
fn layer_count(spec: &ModelSpec) -> u64 {
    spec.stacks.first().map_or(0, |s| s.layers.len())
}

/// `head_dim: null` in a class whose default is a number: `__post_init__` (or the attention's
/// `getattr(…) or hidden // heads`) falls back to `hidden_size // num_attention_heads`.
fn null_head_dim_splits(raw: &mut RawConfig<'_>, spec: &mut ModelSpec) -> Result<(), ConfigError> {
    if !raw.has("head_dim") || raw.value("head_dim").is_some() {
        return Ok(());
    }
    let hidden = spec.hidden_size;
    let mut heads = None;
    for layer in spec.layer_kinds() {
        if let Attention::Standard(a) = &layer.attention {
            heads = Some(a.num_heads);
        }
    }
    let Some(heads) = heads else {
        return Ok(());
    };
    let d_h = raw.derived_head_dim(hidden, "hidden_size", heads, "num_attention_heads")?;
    raw.assume(
        "head_dim",
        d_h,
        "null; the class uses hidden_size // num_attention_heads",
    );
    map_kinds(spec, |layer| {
        if let Attention::Standard(a) = &mut layer.attention {
            let old = a.head_dim;
            a.head_dim = d_h;
            // Per-head q/k norms follow the head width; full-width ones the projection width.
            for n in [&mut a.q_norm, &mut a.k_norm].into_iter().flatten() {
                if n.dim == old {
                    n.dim = d_h;
                }
            }
        }
    });
    Ok(())
}

/// When `layer_types` is absent, `layer_types[i]` = full attention where `i % every == 0`,
/// sliding elsewhere (`CwmConfig`, `GraniteSWAConfig`); `layer_types` itself wins.
fn full_every(
    raw: &mut RawConfig<'_>,
    spec: &mut ModelSpec,
    every: u64,
    class: &str,
) -> Result<(), ConfigError> {
    if raw.value("layer_types").is_some() {
        return Ok(());
    }
    raw.assume(
        "layer_types",
        format!("full attention every {every} layers from layer 0, sliding between"),
        &format!("absent; `{class}` default"),
    );
    let Some(window) = raw.uint("sliding_window")?.filter(|w| *w > 0) else {
        return Ok(());
    };
    // Global where `i % every == 0`: one global, then `every − 1` sliding, repeated.
    let n = layer_count(spec);
    let windows = Runs::periodic(n, &[(None, 1), (Some(window), every.saturating_sub(1))]);
    set_windows(spec, &windows)
}

/// Norms added to every layer's block norms (`BitNet`'s sub-norms, `HyperCLOVA X`'s post-norms).
fn add_norms(spec: &mut ModelSpec, norms: &[Norm]) {
    map_kinds(spec, |layer| layer.norms.extend_from_slice(norms));
}

// ---------------------------------------------------------------------------------------------
// The blocks.
// ---------------------------------------------------------------------------------------------

/// An MLP without biases, gated.
const NO_BIAS_MLP: MlpRule = MlpRule {
    up_bias: NO,
    down_bias: NO,
    ..LLAMA_MLP
};

/// An ungated `up_proj` → `down_proj` MLP with `mlp_bias` (`ArceeMLP`, `Jais2MLP`).
const UNGATED_MLP: MlpRule = MlpRule {
    gated: false,
    ..LLAMA_MLP
};

/// Cohere (`modeling_cohere.py`): one `input_layernorm` per layer (attention and MLP in
/// parallel), `CohereLayerNorm` with a weight only, optional q/k norms of shape
/// `(heads, head_dim)` (`use_qk_norm`), q/k/v/o biased by `attention_bias`, an MLP without
/// biases, tied.
const COHERE: Block = Block {
    attention: AttentionRule::Standard(StandardRule {
        qk_norm: QkNorm::FullWidth,
        qk_norm_on: Switch::Key("use_qk_norm", false),
        ..LLAMA_ATTENTION
    }),
    mlp: NO_BIAS_MLP,
    norm: NormRule {
        kind: NormKind::LayerNorm,
        bias: NO,
        per_layer: 1,
    },
    tie: true,
    ..sized(&LLAMA, 8192, 40, 64, 256_000, 22528)
};

/// Cohere 2: Cohere without q/k norms, 3 sliding layers per global one
/// (`sliding_window_pattern`). `Cohere2Config.__post_init__` sets `head_dim` to
/// `hidden // heads`, but a `head_dim` in the JSON is set after it and wins.
const COHERE2: Block = Block {
    attention: AttentionRule::Standard(LLAMA_ATTENTION),
    windows: Windows::Pattern(4),
    ..COHERE
};

/// GLM: q/k/v biased by `attention_bias` (default true), `o_proj` never; fused `gate_up_proj`
/// without biases; 2 KV heads, `head_dim` 128.
const GLM: Block = Block {
    kv_default: Some(2),
    head_dim: HeadDim::KeyOr(128),
    attention: AttentionRule::Standard(StandardRule {
        qkv_bias: Switch::Key("attention_bias", true),
        o_bias: NO,
        ..LLAMA_ATTENTION
    }),
    mlp: NO_BIAS_MLP,
    tweak: Some(null_head_dim_splits),
    ..sized(&LLAMA, 4096, 40, 32, 151_552, 13696)
};

/// GLM-4: GLM with sandwich norms (`post_self_attn_layernorm`, `post_mlp_layernorm`).
const GLM4: Block = Block {
    norm: NormRule {
        per_layer: 4,
        ..RMS2
    },
    ..GLM
};

/// Granite: Llama with multipliers (no parameters).
const GRANITE: Block = sized(&LLAMA, 4096, 32, 32, 32000, 11008);

/// Granite-SWA: Granite with a learned sink logit per head (`self.sinks`), 4 KV heads, tied,
/// full attention on every 4th layer from layer 0.
const GRANITE_SWA: Block = Block {
    kv_default: Some(4),
    attention: AttentionRule::Standard(StandardRule {
        sinks: YES,
        ..LLAMA_ATTENTION
    }),
    tie: true,
    tweak: Some(granite_swa),
    ..sized(&LLAMA, 2560, 24, 20, 100_352, 8192)
};

fn granite_swa(raw: &mut RawConfig<'_>, spec: &mut ModelSpec) -> Result<(), ConfigError> {
    full_every(raw, spec, 4, "GraniteSWAConfig")
}

/// EXAONE 4: per-head q/k norms always, norms after attention and after the MLP (no
/// pre-norms), no biases, 32 KV heads, 3 sliding layers per global one.
const EXAONE4: Block = Block {
    kv_default: Some(32),
    attention: AttentionRule::Standard(StandardRule {
        qk_norm: QkNorm::PerHead,
        ..PLAIN_ATTENTION
    }),
    mlp: NO_BIAS_MLP,
    windows: Windows::Pattern(4),
    ..sized(&LLAMA, 4096, 32, 32, 102_400, 16384)
};

/// `OLMo` 3: `OLMo` 2's full-width q/k norms, `post_attention` and `post_feedforward` norms,
/// q/k/v/o biased by `attention_bias`, 3 sliding layers per global one.
const OLMO3: Block = Block {
    attention: AttentionRule::Standard(StandardRule {
        qk_norm: QkNorm::FullWidth,
        ..LLAMA_ATTENTION
    }),
    mlp: NO_BIAS_MLP,
    windows: Windows::Pattern(4),
    ..sized(&LLAMA, 4096, 32, 32, 50304, 11008)
};

/// `SmolLM3`: Llama with 4 KV heads, tied; sliding layers only from `layer_types` (or, when
/// absent, `use_sliding_window` on the layers without rotary embedding).
const SMOLLM3: Block = Block {
    kv_default: Some(4),
    tie: true,
    tweak: Some(smollm3),
    ..sized(&LLAMA, 2048, 36, 16, 128_256, 11008)
};

/// `SmolLM3Config.__post_init__`: without `layer_types`, a layer slides when
/// `use_sliding_window`, `sliding_window` is set and `no_rope_layers[i]` is 0 (the default
/// `no_rope_layers[i]` = `(i + 1) % no_rope_layer_interval != 0`, interval 4).
fn smollm3(raw: &mut RawConfig<'_>, spec: &mut ModelSpec) -> Result<(), ConfigError> {
    if raw.value("layer_types").is_some() {
        return Ok(());
    }
    let reason = "absent; `SmolLM3Config` default";
    let on = raw.flag_or("use_sliding_window", false, reason)?;
    let window = raw.uint("sliding_window")?;
    let (true, Some(window)) = (on, window) else {
        return Ok(());
    };
    let n = layer_count(spec);
    let rope: Runs<bool> = if let Some(v) = raw.value("no_rope_layers") {
        let list = v
            .as_array()
            .filter(|l| l.len() as u64 == n)
            .ok_or_else(|| raw.invalid("no_rope_layers", v, "one 0 or 1 per layer"))?;
        let mut rope = Runs::default();
        for x in list {
            match x.as_u64() {
                Some(0) => rope.push(false, 1),
                Some(1) => rope.push(true, 1),
                _ => return Err(raw.invalid("no_rope_layers", x, "0 or 1")),
            }
        }
        rope
    } else {
        let interval = if let Some(i) = raw.size_opt("no_rope_layer_interval")? {
            i
        } else {
            raw.assume("no_rope_layer_interval", 4, reason);
            4
        };
        // RoPE on all but every `interval`-th layer.
        Runs::every(n, interval).map(|nope| !nope)
    };
    set_windows(spec, &rope.map(|r| (!r).then_some(window)))
}

/// Ministral 3: Mistral's block (no biases, 8 KV heads, every layer slides when
/// `sliding_window` is set), `head_dim` 128.
const MINISTRAL3: Block = Block {
    kv_default: Some(8),
    head_dim: HeadDim::KeyOr(128),
    attention: AttentionRule::Standard(PLAIN_ATTENTION),
    mlp: NO_BIAS_MLP,
    windows: Windows::All,
    tweak: Some(null_head_dim_splits),
    ..sized(&LLAMA, 4096, 34, 32, 131_072, 14336)
};

/// Ministral (`modeling_ministral.py`, Ministral-8B): Mistral's block (no biases, 8 KV heads),
/// each layer sliding as `layer_types` says (`__post_init__` makes every layer slide when
/// `sliding_window` is set).
const MINISTRAL: Block = Block {
    kv_default: Some(8),
    attention: AttentionRule::Standard(PLAIN_ATTENTION),
    mlp: NO_BIAS_MLP,
    windows: Windows::All,
    tweak: Some(head_dim_required),
    ..sized(&LLAMA, 4096, 32, 32, 32000, 14336)
};

/// Ministral: the block read with `MinistralConfig`'s `sliding_window` 4096 written in when
/// the key is absent (the sliding layers keep it; `null` is no window).
fn read_ministral(
    raw: &mut RawConfig<'_>,
    family: &Family,
    _: crate::hf_config::HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    super::experts::read_patched(raw, family, &MINISTRAL, |raw, map| {
        if !raw.has("sliding_window") {
            raw.assume("sliding_window", 4096, "absent; `MinistralConfig` default");
            map.insert("sliding_window".to_owned(), 4096.into());
        }
        Ok(())
    })
}

/// `MinistralAttention` reads `getattr(config, "head_dim", hidden // heads)`: the attribute
/// always exists, so its class default `null` (or an absent key) is multiplied as `None` and
/// the model does not build; the published configs give it.
pub(super) fn head_dim_required(
    raw: &mut RawConfig<'_>,
    _: &mut ModelSpec,
) -> Result<(), ConfigError> {
    required(raw, "head_dim")
}

/// A key whose class default `null` the attention multiplies as `None` (the model does not
/// build): refused when absent or `null`.
fn required(raw: &RawConfig<'_>, key: &str) -> Result<(), ConfigError> {
    if raw.value(key).is_none() {
        return Err(raw.missing(
            key,
            "a positive integer (the attention multiplies by it; `null` does not build)",
        ));
    }
    Ok(())
}

/// Nemotron (`modeling_nemotron.py`): `NemotronLayerNorm1P` (a `LayerNorm` with weight and
/// bias, applied as `weight + 1`), an ungated `up_proj` → `ReLU²` → `down_proj` MLP biased by
/// `mlp_bias`, q/k/v/o biased by `attention_bias`; `head_dim` defaults to
/// `hidden_size // num_attention_heads` (`__post_init__`); partial rotary adds no parameter.
const NEMOTRON: Block = Block {
    head_dim: HeadDim::KeyOrFloor,
    mlp: UNGATED_MLP,
    norm: NormRule {
        kind: NormKind::LayerNorm,
        bias: YES,
        per_layer: 2,
    },
    tweak: Some(kv_heads_required),
    ..sized(&LLAMA, 6144, 32, 48, 256_000, 24576)
};

/// `NemotronAttention` divides and multiplies by `config.num_key_value_heads` as given: its
/// class default `null` does not build (Nemotron-4 and Minitron configs give it).
fn kv_heads_required(raw: &mut RawConfig<'_>, _: &mut ModelSpec) -> Result<(), ConfigError> {
    required(raw, "num_key_value_heads")
}

/// Hunyuan dense (`modeling_hunyuan_v1_dense.py`): Llama's block (q/k/v/o biased by
/// `attention_bias`) with per-head `query_layernorm`/`key_layernorm` `RMSNorm`s and an MLP
/// without biases; `num_key_value_heads` `null` is MHA (`__post_init__`), and `head_dim` is
/// required as Ministral's ([`head_dim_required`]). Hunyuan MoE builds on it.
pub(super) const HUNYUAN_V1_DENSE: Block = Block {
    attention: AttentionRule::Standard(StandardRule {
        qk_norm: QkNorm::PerHead,
        ..LLAMA_ATTENTION
    }),
    mlp: NO_BIAS_MLP,
    tweak: Some(head_dim_required),
    ..sized(&LLAMA, 4096, 32, 32, 290_943, 11008)
};

/// Seed-OSS: q/k/v biased by `attention_bias` (default true), `o_proj` by
/// `attention_out_bias`, the MLP by `mlp_bias`; 8 KV heads, `head_dim` 128.
const SEED_OSS: Block = Block {
    kv_default: Some(8),
    head_dim: HeadDim::KeyOr(128),
    attention: AttentionRule::Standard(StandardRule {
        qkv_bias: Switch::Key("attention_bias", true),
        o_bias: Switch::Key("attention_out_bias", false),
        ..LLAMA_ATTENTION
    }),
    tweak: Some(null_head_dim_splits),
    ..sized(&LLAMA, 4096, 64, 80, 155_136, 27648)
};

/// Helium: q/k/v biased by `attention_bias`, `o_proj` `hidden → hidden` without bias; 20 KV
/// heads, `head_dim` 128.
const HELIUM: Block = Block {
    kv_default: Some(20),
    head_dim: HeadDim::KeyOr(128),
    attention: AttentionRule::Standard(StandardRule {
        o_bias: NO,
        ..LLAMA_ATTENTION
    }),
    tweak: Some(helium),
    ..sized(&LLAMA, 2560, 24, 20, 48000, 7040)
};

/// `HeliumAttention.o_proj` is `nn.Linear(hidden_size, hidden_size)` whatever the heads:
/// where `num_attention_heads · head_dim` is not `hidden_size` the model still builds (only
/// its forward would fail), so the layer's projections are counted as built, as extras
/// ([`helium_projections`]), and the attention only caches.
fn helium(raw: &mut RawConfig<'_>, spec: &mut ModelSpec) -> Result<(), ConfigError> {
    null_head_dim_splits(raw, spec)?;
    let hidden = spec.hidden_size;
    try_map_kinds(spec, |layer| {
        let mut l = layer.clone();
        if let Attention::Standard(a) = &layer.attention
            && a.num_heads.checked_mul(a.head_dim) != Some(hidden)
        {
            l.extras.extend(helium_projections(a));
            l.attention = Attention::CacheOnly(a.clone());
        }
        Ok::<_, ConfigError>(l)
    })
}

/// Helium's q, k, v (`d → n_h·d_h`, `d → n_kv·d_h`, biased as the attention says) and its
/// `o_proj` `d → d` without bias.
fn helium_projections(a: &llmsize_core::spec::StandardAttention) -> Vec<Extra> {
    let d = || Expr::sym(Sym::Hidden, a.hidden);
    let width = |heads, n| {
        Expr::product(vec![
            Expr::sym(heads, n),
            Expr::sym(Sym::HeadDim, a.head_dim),
        ])
    };
    let q = width(Sym::Heads, a.num_heads);
    let kv = width(Sym::KvHeads, a.num_kv_heads);
    let (part, c) = ("attention", Category::Attention);
    let mut out = vec![
        Extra::linear("self_attn.q_proj.weight", part, c, d(), q.clone()),
        Extra::linear("self_attn.k_proj.weight", part, c, d(), kv.clone()),
        Extra::linear("self_attn.v_proj.weight", part, c, d(), kv.clone()),
        Extra::linear("self_attn.o_proj.weight", part, c, d(), d()),
    ];
    if a.q_bias {
        out.push(Extra::vector("self_attn.q_proj.bias", part, c, q));
        out.push(Extra::vector("self_attn.k_proj.bias", part, c, kv.clone()));
        out.push(Extra::vector("self_attn.v_proj.bias", part, c, kv));
    }
    out
}

/// Arcee: Llama with an ungated `up_proj` → `ReLU²` → `down_proj` MLP.
const ARCEE: Block = Block {
    mlp: UNGATED_MLP,
    ..sized(&LLAMA, 2560, 32, 32, 32000, 18432)
};

/// Apertus: per-head q/k norms always, an ungated MLP without biases whose `xielu`
/// activation (the default `hidden_act`) has two scalar parameters (`alpha_p`, `alpha_n`),
/// `attention_layernorm` and `feedforward_layernorm`.
const APERTUS: Block = Block {
    attention: AttentionRule::Standard(StandardRule {
        qk_norm: QkNorm::PerHead,
        ..LLAMA_ATTENTION
    }),
    mlp: MlpRule {
        gated: false,
        ..NO_BIAS_MLP
    },
    tweak: Some(apertus),
    ..sized(&LLAMA, 4096, 32, 32, 131_072, 14336)
};

/// `ApertusMLP`: `ACT2CLS["xielu"]` holds `alpha_p` and `alpha_n`, one value each.
fn apertus(raw: &mut RawConfig<'_>, spec: &mut ModelSpec) -> Result<(), ConfigError> {
    let act = if let Some(v) = raw.value("hidden_act") {
        v.as_str()
            .ok_or_else(|| raw.invalid("hidden_act", v, "an activation name"))?
    } else {
        raw.assume("hidden_act", "xielu", "absent; `ApertusConfig` default");
        "xielu"
    };
    if act == "xielu" {
        let alphas = [
            Extra::vector("mlp.act_fn.alpha_p", "xIELU", Category::Ffn, Expr::Lit(1)),
            Extra::vector("mlp.act_fn.alpha_n", "xIELU", Category::Ffn, Expr::Lit(1)),
        ];
        map_kinds(spec, |layer| layer.extras.extend(alphas.iter().cloned()));
    }
    Ok(())
}

/// ERNIE 4.5: every projection biased by `use_bias`; 2 KV heads, `head_dim` 128, tied.
const ERNIE4_5: Block = Block {
    kv_default: Some(2),
    head_dim: HeadDim::KeyOr(128),
    attention: AttentionRule::Standard(StandardRule {
        qkv_bias: Switch::Key("use_bias", false),
        o_bias: Switch::Key("use_bias", false),
        ..LLAMA_ATTENTION
    }),
    mlp: MlpRule {
        up_bias: Switch::Key("use_bias", false),
        down_bias: Switch::Key("use_bias", false),
        ..LLAMA_MLP
    },
    tie: true,
    tweak: Some(null_head_dim_splits),
    ..sized(&LLAMA, 1024, 18, 16, 103_424, 3072)
};

/// `InternLM3` (built as `LlamaForCausalLM`): 2 KV heads, `head_dim` 128; `qkv_bias` and
/// `bias` are aliases of `attention_bias` and `mlp_bias` (`attribute_map`).
const INTERNLM3: Block = Block {
    kv_default: Some(2),
    head_dim: HeadDim::KeyOr(128),
    tweak: Some(internlm3),
    ..sized(&LLAMA, 4096, 48, 32, 128_512, 10240)
};

/// `InternLM3Config.attribute_map`: an alias in the JSON sets the field it names.
fn internlm3(raw: &mut RawConfig<'_>, spec: &mut ModelSpec) -> Result<(), ConfigError> {
    null_head_dim_splits(raw, spec)?;
    let qkv = raw.flag("qkv_bias")?;
    let mlp = raw.flag("bias")?;
    map_kinds(spec, |layer| {
        if let (Some(b), Attention::Standard(a)) = (qkv, &mut layer.attention) {
            a.q_bias = b;
            a.k_bias = b;
            a.v_bias = b;
            a.o_bias = b;
        }
        if let (Some(b), Ffn::Dense(m)) = (mlp, &mut layer.ffn) {
            m.up_bias = b;
            m.down_bias = b;
        }
    });
    Ok(())
}

/// EXAONE 3 (built as `LlamaForCausalLM`): 8 KV heads; `num_layers` is an alias of
/// `num_hidden_layers`.
const EXAONE: Block = Block {
    layers: key_or(&["num_layers", "num_hidden_layers"], 32),
    kv_default: Some(8),
    ..sized(&LLAMA, 4096, 32, 32, 102_400, 14336)
};

/// `IQuest-Coder` (built as `LlamaForCausalLM`): 8 KV heads, `head_dim` 128.
const IQUESTCODER: Block = Block {
    kv_default: Some(8),
    head_dim: HeadDim::KeyOr(128),
    tweak: Some(null_head_dim_splits),
    ..sized(&LLAMA, 5120, 80, 40, 76800, 27648)
};

/// CWM: no attention biases, the MLP biased by `mlp_bias`, 8 KV heads, `head_dim` 128; full
/// attention on every 4th layer from layer 0, sliding (8192) between.
const CWM: Block = Block {
    kv_default: Some(8),
    head_dim: HeadDim::KeyOr(128),
    attention: AttentionRule::Standard(PLAIN_ATTENTION),
    tweak: Some(cwm),
    ..sized(&LLAMA, 6144, 64, 48, 128_256, 21504)
};

fn cwm(raw: &mut RawConfig<'_>, spec: &mut ModelSpec) -> Result<(), ConfigError> {
    null_head_dim_splits(raw, spec)?;
    full_every(raw, spec, 4, "CwmConfig")
}

/// `VaultGemma`: Gemma 2 without the post-norms (`input_layernorm` and
/// `pre_feedforward_layernorm`), `head_dim` 256, 4 KV heads, even layers slide, tied.
const VAULTGEMMA: Block = Block {
    kv_default: Some(4),
    head_dim: HeadDim::KeyOr(256),
    mlp: NO_BIAS_MLP,
    tie: true,
    windows: Windows::Alternate,
    tweak: Some(null_head_dim_splits),
    ..sized(&LLAMA, 2304, 26, 8, 256_000, 9216)
};

/// `HyperCLOVA X`: Granite with `post_norm1` and `post_norm2` when `use_post_norm`
/// (default true).
const HYPERCLOVAX: Block = Block {
    tweak: Some(hyperclovax),
    ..sized(&LLAMA, 4096, 32, 32, 32000, 11008)
};

fn hyperclovax(raw: &mut RawConfig<'_>, spec: &mut ModelSpec) -> Result<(), ConfigError> {
    if raw.flag_or("use_post_norm", true, "absent; `HyperCLOVAXConfig` default")? {
        add_norms(spec, &[Norm::rms_norm(spec.hidden_size); 2]);
    }
    Ok(())
}

/// Jais 2: `nn.LayerNorm`s with biases, an ungated MLP biased by `mlp_bias` (default true),
/// q/k/v/o biased by `attention_bias` (default true).
const JAIS2: Block = Block {
    attention: AttentionRule::Standard(StandardRule {
        qkv_bias: Switch::Key("attention_bias", true),
        o_bias: Switch::Key("attention_bias", true),
        ..LLAMA_ATTENTION
    }),
    mlp: MlpRule {
        gated: false,
        up_bias: Switch::Key("mlp_bias", true),
        down_bias: Switch::Key("mlp_bias", true),
        ..LLAMA_MLP
    },
    norm: NormRule {
        kind: NormKind::LayerNorm,
        bias: YES,
        per_layer: 2,
    },
    ..sized(&LLAMA, 3328, 32, 26, 150_272, 26624)
};

/// `BitNet`: Llama with `attn_sub_norm` (over `hidden_size`) before `o_proj` and
/// `ffn_sub_norm` (over `intermediate_size`) before `down_proj`; 5 KV heads, no MLP biases.
const BITNET: Block = Block {
    kv_default: Some(5),
    mlp: NO_BIAS_MLP,
    tweak: Some(bitnet),
    ..sized(&LLAMA, 2560, 30, 20, 128_256, 6912)
};

#[allow(clippy::unnecessary_wraps, reason = "a tweak's signature")]
fn bitnet(_raw: &mut RawConfig<'_>, spec: &mut ModelSpec) -> Result<(), ConfigError> {
    let d = spec.hidden_size;
    map_kinds(spec, |layer| {
        if let Ffn::Dense(m) = &layer.ffn {
            let sub = [Norm::rms_norm(d), Norm::rms_norm(m.intermediate)];
            layer.norms.extend_from_slice(&sub);
        }
    });
    Ok(())
}

/// Apertus 1.5's text model: Apertus whose `lm_head` may be narrower than the input table
/// (`output_vocab_size`, the text-only prefix of the vocabulary).
const APERTUS1P5_TEXT: Block = Block {
    tweak: Some(apertus1p5_text),
    ..sized(&APERTUS, 4096, 32, 32, 266_752, 14336)
};

/// `Apertus1p5TextForCausalLM.lm_head` is `hidden → output_vocab_size or vocab_size`
/// (`__post_init__` drops an `output_vocab_size` equal to `vocab_size`).
fn apertus1p5_text(raw: &mut RawConfig<'_>, spec: &mut ModelSpec) -> Result<(), ConfigError> {
    apertus(raw, spec)?;
    let Some(out) = raw.size_opt("output_vocab_size")? else {
        return Ok(());
    };
    if out > spec.vocab_size {
        return Err(raw.invalid(
            "output_vocab_size",
            &out.into(),
            &format!("at most vocab_size ({})", spec.vocab_size),
        ));
    }
    if let OutputHead::Lm { tied: false, .. } = spec.head
        && out != spec.vocab_size
    {
        spec.head = OutputHead::None;
        spec.extras.push(Extra::linear(
            "lm_head.weight",
            "output head",
            Category::LmHead,
            Expr::sym(llmsize_core::expr::Sym::Hidden, spec.hidden_size),
            Expr::sym(llmsize_core::expr::Sym::Named("V_out"), out),
        ));
    }
    Ok(())
}

/// `DiffLlama`: Llama whose differential attention adds `lambda_q1`, `lambda_k1`, `lambda_q2`,
/// `lambda_k2` (one `head_dim` vector each; its `groupnorm` has no weight); KV heads must be
/// even.
const DIFFLLAMA: Block = Block {
    mlp: NO_BIAS_MLP,
    tweak: Some(diffllama),
    ..sized(&LLAMA, 2048, 16, 32, 32000, 8192)
};

fn diffllama(raw: &mut RawConfig<'_>, spec: &mut ModelSpec) -> Result<(), ConfigError> {
    let mut bad = None;
    map_kinds(spec, |layer| {
        if let Attention::Standard(a) = &layer.attention {
            if !a.num_kv_heads.is_multiple_of(2) {
                bad = Some(a.num_kv_heads);
            }
            let d_h = Expr::sym(llmsize_core::expr::Sym::HeadDim, a.head_dim);
            for name in ["lambda_q1", "lambda_k1", "lambda_q2", "lambda_k2"] {
                layer.extras.push(Extra::vector(
                    format!("self_attn.{name}"),
                    "differential attention",
                    Category::Attention,
                    d_h.clone(),
                ));
            }
        }
    });
    if let Some(n) = bad {
        return Err(raw.invalid(
            "num_key_value_heads",
            &n.into(),
            "an even number (DiffLlama splits the values in two along the KV heads)",
        ));
    }
    Ok(())
}

/// `NanoChat`: weightless RMS norms everywhere (blocks, q/k, final), an ungated
/// `fc1` → `ReLU²` → `fc2` MLP without biases, q/k/v/o biased by `attention_bias`.
const NANOCHAT: Block = Block {
    mlp: MlpRule {
        gated: false,
        ..NO_BIAS_MLP
    },
    norm: NormRule {
        per_layer: 0,
        ..RMS2
    },
    tweak: Some(no_final_norm),
    ..sized(&LLAMA, 768, 12, 6, 50304, 8192)
};

#[allow(clippy::unnecessary_wraps, reason = "a tweak's signature")]
fn no_final_norm(_raw: &mut RawConfig<'_>, spec: &mut ModelSpec) -> Result<(), ConfigError> {
    for stack in &mut spec.stacks {
        stack.final_norm = None;
    }
    Ok(())
}

/// Doge: Llama with per-head q/k norms and dynamic-mask attention (`A`, one value per KV
/// head, and `dt_proj` `n_kv·d_h → n_kv`, biased by `attention_bias`), learned residual
/// weights `input_residual` and `post_attention_residual`; every layer slides when
/// `sliding_window` is set; with `is_moe`, the MLP becomes the shared expert of a
/// cross-domain MoE of `num_experts` one-row experts.
const DOGE: Block = Block {
    attention: AttentionRule::Standard(StandardRule {
        qk_norm: QkNorm::PerHead,
        ..LLAMA_ATTENTION
    }),
    windows: Windows::All,
    tweak: Some(doge),
    ..sized(&LLAMA, 1024, 32, 8, 32768, 2048)
};

fn doge(raw: &mut RawConfig<'_>, spec: &mut ModelSpec) -> Result<(), ConfigError> {
    let reason = "absent; `DogeConfig` default";
    let moe = if raw.flag_or("is_moe", false, reason)? {
        Some(raw.size_or(
            &["num_experts"],
            llmsize_core::expr::Sym::Experts,
            16384,
            reason,
        )?)
    } else {
        None
    };
    let bias = raw.flag_or("attention_bias", false, "absent; `DogeConfig` default")?;
    let d = Expr::sym(llmsize_core::expr::Sym::Hidden, spec.hidden_size);
    map_kinds(spec, |layer| {
        if let Attention::Standard(a) = &layer.attention {
            let kv = Expr::sym(llmsize_core::expr::Sym::KvHeads, a.num_kv_heads);
            let kv_width = Expr::product(vec![
                kv.clone(),
                Expr::sym(llmsize_core::expr::Sym::HeadDim, a.head_dim),
            ]);
            layer.extras.push(Extra::vector(
                "self_attn.A",
                "dynamic mask",
                Category::Attention,
                kv.clone(),
            ));
            layer.extras.push(Extra::linear(
                "self_attn.dt_proj.weight",
                "dynamic mask",
                Category::Attention,
                kv_width,
                kv.clone(),
            ));
            if bias {
                layer.extras.push(Extra::vector(
                    "self_attn.dt_proj.bias",
                    "dynamic mask",
                    Category::Attention,
                    kv,
                ));
            }
        }
        for name in ["input_residual", "post_attention_residual"] {
            layer.extras.push(Extra::vector(
                name,
                "residual weights",
                Category::LayerExtras,
                d.clone(),
            ));
        }
        if let Some(experts) = moe {
            // `DogeCDMoE`: the gated MLP stays as the shared expert; `router_gate` scores
            // `2·⌊√E⌋` product keys; each expert is a row of `down_embed` and of `up_embed`
            // (`nn.Embedding`s, counted with the token tables as transformers' split does).
            let keys = Expr::product(vec![
                Expr::Lit(2),
                Expr::sym(llmsize_core::expr::Sym::Named("⌊√E⌋"), experts.isqrt()),
            ]);
            layer.extras.push(Extra::linear(
                "mlp.router_gate.weight",
                "cross-domain router",
                Category::Ffn,
                d.clone(),
                keys,
            ));
            for name in ["mlp.down_embed.weight", "mlp.up_embed.weight"] {
                layer.extras.push(Extra::table(
                    name,
                    "cross-domain experts",
                    Category::TokenEmbedding,
                    Expr::sym(llmsize_core::expr::Sym::Experts, experts),
                    d.clone(),
                ));
            }
        }
    });
    Ok(())
}

/// Mellum: per-head q/k norms always, q/k/v/o biased by `attention_bias`, 4 KV heads,
/// `head_dim` 128; a top-k router without bias over `num_experts` (alias of
/// `num_local_experts`) gated experts on the layers `mlp_layer_types` calls `sparse` (all by
/// default), a dense MLP of `intermediate_size` on the others. MTP layers are not built.
const MELLUM: Block = Block {
    kv_default: Some(4),
    head_dim: HeadDim::KeyOr(128),
    attention: AttentionRule::Standard(StandardRule {
        qk_norm: QkNorm::PerHead,
        ..LLAMA_ATTENTION
    }),
    mlp: NO_BIAS_MLP,
    moe: Some(MoeRule {
        experts: key_or(&["num_experts", "num_local_experts"], 64),
        top_k: key_or(&["num_experts_per_tok"], 8),
        expert_width: key_or(&["moe_intermediate_size"], 896),
        correction_bias: NO,
        expert_bias: NO,
        shared: Shared::None,
        shared_gate: false,
        sparsity: ALL_SPARSE,
    }),
    tweak: Some(mellum),
    ..sized(&LLAMA, 2304, 28, 32, 98304, 7168)
};

/// `MellumDecoderLayer`: `mlp_layer_types[i] == "sparse"` → MoE, anything else → a dense MLP.
fn mellum(raw: &mut RawConfig<'_>, spec: &mut ModelSpec) -> Result<(), ConfigError> {
    null_head_dim_splits(raw, spec)?;
    let Some(v) = raw.value("mlp_layer_types") else {
        return Ok(());
    };
    let n = usize::try_from(layer_count(spec)).unwrap_or(usize::MAX);
    let list = v
        .as_array()
        .filter(|l| l.len() == n)
        .ok_or_else(|| raw.invalid("mlp_layer_types", v, "one `sparse` or `dense` per layer"))?;
    let sparse: Vec<bool> = list
        .iter()
        .map(|t| {
            t.as_str()
                .map(|t| t == "sparse")
                .ok_or_else(|| raw.invalid("mlp_layer_types", t, "strings such as `sparse`"))
        })
        .collect::<Result<_, _>>()?;
    if sparse.iter().all(|s| *s) {
        return Ok(());
    }
    let reason = "absent; `MellumConfig` default";
    let width = raw.size_or(
        &["intermediate_size"],
        llmsize_core::expr::Sym::Ffn,
        7168,
        reason,
    )?;
    let dense = Ffn::Dense(mlp(spec.hidden_size, width, true, false));
    for stack in &mut spec.stacks {
        let kinds = stack.layers.kinds();
        let keys = stack.layers.runs().iter().flat_map(|r| {
            let sparse = &sparse;
            r.range().map(move |i| {
                let s = usize::try_from(i)
                    .ok()
                    .and_then(|i| sparse.get(i))
                    .copied()
                    .unwrap_or(true);
                (r.kind, s)
            })
        });
        stack.layers = Layers::from_pattern(keys, |&(kind, s)| {
            let mut layer = kinds.get(kind).cloned().unwrap_or_else(empty_layer);
            if !s {
                layer.ffn = dense.clone();
            }
            layer
        });
    }
    Ok(())
}

/// HRM-Text: two stacks of `num_layers_per_stack` layers (`L_module`, `H_module`) run
/// `H_cycles · L_cycles` and `H_cycles` times; each run of a layer caches its own keys and
/// values (`num_hidden_layers` = `num_layers_per_stack · H_cycles · (L_cycles + 1)` cache
/// slots). Attention has no KV grouping (k and v have `num_attention_heads` heads) and a
/// `gate_proj` `d → n_h·d_h`; norms have no weights; `z_L_init` is a start state that never trains.
const HRM_TEXT: Block = Block {
    layers: key_or(&["num_layers_per_stack", "num_hidden_layers"], 16),
    head_dim: HeadDim::KeyOr(128),
    mlp: LLAMA_MLP,
    norm: NormRule {
        per_layer: 0,
        ..RMS2
    },
    tweak: Some(hrm_text),
    ..sized(&LLAMA, 1536, 16, 12, 151_808, 4096)
};

fn hrm_text(raw: &mut RawConfig<'_>, spec: &mut ModelSpec) -> Result<(), ConfigError> {
    null_head_dim_splits(raw, spec)?;
    let reason = "absent; `HrmTextConfig` default";
    let h = raw.size_or(
        &["H_cycles"],
        llmsize_core::expr::Sym::Named("H"),
        2,
        reason,
    )?;
    let l = raw.size_or(
        &["L_cycles"],
        llmsize_core::expr::Sym::Named("L_c"),
        3,
        reason,
    )?;
    let bias = raw.flag_or("attention_bias", false, reason)?;
    let low_runs = raw.mul(h, l, "H_cycles·L_cycles")?;
    let mut err = None;
    for stack in &mut spec.stacks {
        stack.final_norm = None;
        let mut layers = Layers::new();
        for runs in [low_runs, h] {
            for run in stack.layers.runs() {
                let Some(kind) = stack.layers.kinds().get(run.kind) else {
                    continue;
                };
                let mut kind = kind.clone();
                if let Attention::Standard(a) = &mut kind.attention {
                    a.num_kv_heads = a.num_heads;
                    match a.num_heads.checked_mul(runs) {
                        Some(c) => a.transformers_cache_heads = Some(c),
                        None => err = Some(runs),
                    }
                    let width = Expr::product(vec![
                        Expr::sym(llmsize_core::expr::Sym::Heads, a.num_heads),
                        Expr::sym(llmsize_core::expr::Sym::HeadDim, a.head_dim),
                    ]);
                    kind.extras.push(Extra::linear(
                        "self_attn.gate_proj.weight",
                        "attention gate",
                        Category::Attention,
                        Expr::sym(llmsize_core::expr::Sym::Hidden, a.hidden),
                        width.clone(),
                    ));
                    if bias {
                        kind.extras.push(Extra::vector(
                            "self_attn.gate_proj.bias",
                            "attention gate",
                            Category::Attention,
                            width,
                        ));
                    }
                }
                layers.push_run(kind, run.count);
            }
        }
        stack.layers = layers;
    }
    if let Some(runs) = err {
        return Err(raw.invalid(
            "H_cycles",
            &runs.into(),
            "cycles whose cache fits in 64 bits",
        ));
    }
    raw.sources.insert(
        llmsize_core::expr::Sym::Layers,
        "2·num_layers_per_stack (L_module and H_module)".to_owned(),
    );
    spec.extras.push(
        Extra::vector(
            "model.z_L_init",
            "start state",
            Category::LayerExtras,
            Expr::sym(llmsize_core::expr::Sym::Hidden, spec.hidden_size),
        )
        // `nn.Parameter(torch.zeros(hidden_size), requires_grad=False)`.
        .frozen(),
    );
    Ok(())
}

/// Dory (`modeling_dory.py`): an nGPT-style decoder whose norms are weightless L2 norms, with
/// learned scales instead: `sqk` and `s_gate` (`n_h·d_h` each) and a `gate_proj`
/// `d → n_h·d_h` in attention, `suv_gate` and `suv_up` (`d_ff` each) in the gated MLP,
/// `lambda_1` and `lambda_2` (`d` each) on the residual stream, `logit_scale` (`V`) on the
/// head. The middle `n_recurrent_layers` run `n_recurrent_loops` times; with
/// `recurrent_kv_cache_mode` `per_loop` each loop caches its own keys and values.
const DORY: Block = Block {
    kv_default: Some(4),
    head_dim: HeadDim::KeyOr(256),
    norm: NormRule {
        per_layer: 0,
        ..RMS2
    },
    windows: Windows::Pattern(4),
    ..sized(&LLAMA, 2560, 36, 16, 131_072, 7168)
};

/// `DoryConfig.__post_init__`: a released `config.json` lists attention and MLP as separate
/// blocks (`layer_types` with `"mlp"` entries, every count doubled); each pair is one layer.
fn dory(
    raw: &mut RawConfig<'_>,
    family: &Family,
    _head: crate::hf_config::HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let reason = "absent; `DoryConfig` default";
    let mut map = raw.map.clone();
    let paired = raw
        .value("layer_types")
        .and_then(serde_json::Value::as_array)
        .is_some_and(|l| l.iter().any(|t| t.as_str() == Some("mlp")));
    let count = |raw: &mut RawConfig<'_>, key: &str, default: u64| -> Result<u64, ConfigError> {
        let n = if let Some(n) = raw.uint(key)? {
            n
        } else {
            raw.assume(key, default, reason);
            default
        };
        Ok(if paired { n / 2 } else { n })
    };
    let layers = count(raw, "num_hidden_layers", 36)?;
    let input = count(raw, "n_input_layers", 8)?;
    let output = count(raw, "n_output_layers", 8)?;
    let recurrent = match raw.uint("n_recurrent_layers")? {
        Some(n) => {
            if paired {
                n / 2
            } else {
                n
            }
        }
        None => layers
            .checked_sub(input)
            .and_then(|r| r.checked_sub(output))
            .ok_or_else(|| {
                raw.invalid(
                    "n_input_layers",
                    &input.into(),
                    "input and output layers within num_hidden_layers",
                )
            })?,
    };
    if input
        .checked_add(recurrent)
        .and_then(|n| n.checked_add(output))
        != Some(layers)
    {
        return Err(raw.invalid(
            "n_recurrent_layers",
            &recurrent.into(),
            &format!("n_input_layers + n_recurrent_layers + n_output_layers = num_hidden_layers ({layers})"),
        ));
    }
    if paired {
        map.insert("num_hidden_layers".into(), layers.into());
        if let Some(serde_json::Value::Array(l)) = map.get_mut("layer_types") {
            *l = l.iter().step_by(2).cloned().collect();
        }
    }
    let loops = raw.size_or(
        &["n_recurrent_loops"],
        llmsize_core::expr::Sym::Named("loops"),
        2,
        reason,
    )?;
    let per_loop = match raw.value("recurrent_kv_cache_mode") {
        None => {
            raw.assume("recurrent_kv_cache_mode", "per_loop", reason);
            true
        }
        Some(v) => match v.as_str() {
            Some("per_loop") => true,
            Some("last_loop") => false,
            _ => {
                return Err(raw.invalid("recurrent_kv_cache_mode", v, "`per_loop` or `last_loop`"));
            }
        },
    };
    let mut inner = raw.sibling(&map);
    let mut spec = crate::hf_config::family::read_block(&mut inner, family, &DORY)?;
    for a in inner.assumptions {
        raw.assume(&a.field, a.value, &a.reason);
    }
    for (symbol, source) in inner.sources {
        raw.source(symbol, &source);
    }
    if paired {
        raw.sources.insert(
            llmsize_core::expr::Sym::Layers,
            "num_hidden_layers / 2 (attention and MLP blocks listed apart)".to_owned(),
        );
    }
    let d = Expr::sym(llmsize_core::expr::Sym::Hidden, spec.hidden_size);
    // Looped: the recurrent layers `input..input + recurrent` (their sum was checked).
    let mut looped = Runs::uniform(false, layers);
    if per_loop {
        // saturates: never, input + recurrent was checked above.
        looped.overwrite(input..input.saturating_add(recurrent), &true);
    }
    for stack in &mut spec.stacks {
        stack.final_norm = None;
        let mut overflow = false;
        stack.layers = crate::hf_config::runs::remap(&stack.layers, &looped, |kind, &looped| {
            let mut layer = kind.clone();
            if let Attention::Standard(a) = &mut layer.attention {
                if looped {
                    a.transformers_cache_heads = a.num_kv_heads.checked_mul(loops);
                    overflow |= a.transformers_cache_heads.is_none();
                }
                let width = Expr::product(vec![
                    Expr::sym(llmsize_core::expr::Sym::Heads, a.num_heads),
                    Expr::sym(llmsize_core::expr::Sym::HeadDim, a.head_dim),
                ]);
                layer.extras.push(Extra::linear(
                    "self_attn.gate_proj.weight",
                    "attention gate and scales",
                    Category::Attention,
                    d.clone(),
                    width.clone(),
                ));
                for name in ["self_attn.sqk", "self_attn.s_gate"] {
                    layer.extras.push(Extra::vector(
                        name,
                        "attention gate and scales",
                        Category::Attention,
                        width.clone(),
                    ));
                }
            }
            if let Ffn::Dense(m) = &layer.ffn {
                let d_ff = Expr::sym(llmsize_core::expr::Sym::Ffn, m.intermediate);
                for name in ["mlp.suv_gate", "mlp.suv_up"] {
                    layer.extras.push(Extra::vector(
                        name,
                        "MLP scales",
                        Category::Ffn,
                        d_ff.clone(),
                    ));
                }
            }
            for name in ["lambda_1", "lambda_2"] {
                layer.extras.push(Extra::vector(
                    name,
                    "residual scales",
                    Category::LayerExtras,
                    d.clone(),
                ));
            }
            Ok::<Layer, ConfigError>(layer)
        })?;
        if overflow {
            return Err(raw.invalid(
                "n_recurrent_loops",
                &loops.into(),
                "loops whose cache fits in 64 bits",
            ));
        }
    }
    if let OutputHead::Lm { biases, .. } = &mut spec.head {
        // `DoryLMHead.logit_scale`: one value per vocabulary entry, kept when tied.
        *biases = 1;
    }
    Ok(spec)
}

/// The entries of this file.
pub(crate) const FAMILIES: &[Family] = &[
    Family::code("zaya", "ZayaConfig", "ZayaForCausalLM", |r, f, _| {
        zaya(r, f)
    }),
    Family::block("cohere", "CohereConfig", "CohereForCausalLM", &COHERE),
    Family::block("cohere2", "Cohere2Config", "Cohere2ForCausalLM", &COHERE2),
    Family::block("glm", "GlmConfig", "GlmForCausalLM", &GLM),
    Family::block("glm4", "Glm4Config", "Glm4ForCausalLM", &GLM4),
    Family::block("granite", "GraniteConfig", "GraniteForCausalLM", &GRANITE),
    Family::block(
        "granite_swa",
        "GraniteSWAConfig",
        "GraniteSWAForCausalLM",
        &GRANITE_SWA,
    ),
    Family::block("exaone4", "Exaone4Config", "Exaone4ForCausalLM", &EXAONE4),
    Family::block("olmo3", "Olmo3Config", "Olmo3ForCausalLM", &OLMO3),
    Family::block("smollm3", "SmolLM3Config", "SmolLM3ForCausalLM", &SMOLLM3),
    Family::block(
        "ministral3",
        "Ministral3Config",
        "Ministral3ForCausalLM",
        &MINISTRAL3,
    ),
    Family::code(
        "ministral",
        "MinistralConfig",
        "MinistralForCausalLM",
        read_ministral,
    ),
    Family::block(
        "nemotron",
        "NemotronConfig",
        "NemotronForCausalLM",
        &NEMOTRON,
    ),
    Family::block(
        "hunyuan_v1_dense",
        "HunYuanDenseV1Config",
        "HunYuanDenseV1ForCausalLM",
        &HUNYUAN_V1_DENSE,
    ),
    Family::block("seed_oss", "SeedOssConfig", "SeedOssForCausalLM", &SEED_OSS),
    Family::block("helium", "HeliumConfig", "HeliumForCausalLM", &HELIUM),
    Family::block("arcee", "ArceeConfig", "ArceeForCausalLM", &ARCEE),
    Family::block("apertus", "ApertusConfig", "ApertusForCausalLM", &APERTUS),
    Family::block(
        "ernie4_5",
        "Ernie4_5Config",
        "Ernie4_5ForCausalLM",
        &ERNIE4_5,
    ),
    Family::block(
        "internlm3",
        "InternLM3Config",
        "LlamaForCausalLM",
        &INTERNLM3,
    ),
    Family::block("exaone", "ExaoneConfig", "LlamaForCausalLM", &EXAONE),
    Family::block(
        "iquestcoder",
        "IQuestCoderConfig",
        "LlamaForCausalLM",
        &IQUESTCODER,
    ),
    Family::block("cwm", "CwmConfig", "CwmForCausalLM", &CWM),
    Family::block(
        "vaultgemma",
        "VaultGemmaConfig",
        "VaultGemmaForCausalLM",
        &VAULTGEMMA,
    ),
    Family::block(
        "hyperclovax",
        "HyperCLOVAXConfig",
        "HyperCLOVAXForCausalLM",
        &HYPERCLOVAX,
    ),
    Family::block("jais2", "Jais2Config", "Jais2ForCausalLM", &JAIS2),
    Family::block("bitnet", "BitNetConfig", "BitNetForCausalLM", &BITNET),
    Family::block(
        "apertus1p5_text",
        "Apertus1p5TextConfig",
        "Apertus1p5TextForCausalLM",
        &APERTUS1P5_TEXT,
    ),
    Family::block(
        "diffllama",
        "DiffLlamaConfig",
        "DiffLlamaForCausalLM",
        &DIFFLLAMA,
    ),
    Family::block(
        "nanochat",
        "NanoChatConfig",
        "NanoChatForCausalLM",
        &NANOCHAT,
    ),
    Family::block("doge", "DogeConfig", "DogeForCausalLM", &DOGE),
    Family::block("mellum", "MellumConfig", "MellumForCausalLM", &MELLUM),
    Family::block("hrm_text", "HrmTextConfig", "HrmTextForCausalLM", &HRM_TEXT),
    Family::code("dory", "DoryConfig", "DoryForCausalLM", dory),
];

// ---------------------------------------------------------------------------------------------
// ZAYA (`modeling_zaya.py`): CCA attention, a router network, residual scalings.
// ---------------------------------------------------------------------------------------------

/// `v · k` as a formula.
fn times(a: Expr, b: Expr) -> Expr {
    Expr::product(vec![a, b])
}

/// ZAYA's sliding layers: `layer_types` (`hybrid`/`hybrid_sliding`, one per layer), by
/// default `["hybrid"] * num_hidden_layers`.
fn zaya_sliding(raw: &RawConfig<'_>, n: u64) -> Result<Runs<bool>, ConfigError> {
    Ok(match raw.value("layer_types") {
        None => Runs::uniform(false, n),
        Some(v) => {
            let list = v
                .as_array()
                .filter(|l| l.len() as u64 == n)
                .ok_or_else(|| {
                    raw.invalid(
                        "layer_types",
                        v,
                        &format!("a list of {n} `hybrid`/`hybrid_sliding`"),
                    )
                })?;
            let mut sliding = Runs::default();
            for t in list {
                match t.as_str() {
                    Some("hybrid") => sliding.push(false, 1),
                    Some("hybrid_sliding") => sliding.push(true, 1),
                    _ => {
                        return Err(raw.invalid(
                            "layer_types",
                            v,
                            "`hybrid` or `hybrid_sliding` entries",
                        ));
                    }
                }
            }
            sliding
        }
    })
}

/// ZAYA's CCA convolutions over `channels = (n_h + n_kv)·d_h` (`conv_qk_depthwise`, kernel
/// `cca_time0`; `conv_qk_grouped`, `d_h` inputs per channel, kernel `cca_time1`; both with
/// bias) and `qk_norm.temp` (`n_kv`).
fn cca_extras(channels: u64, head_dim: u64, kv: u64, (t0, t1): (u64, u64)) -> Vec<Extra> {
    let c_x = || Expr::sym(Sym::Named("cca_channels"), channels);
    let h_x = || Expr::sym(Sym::HeadDim, head_dim);
    vec![
        Extra::linear(
            "self_attn.qkv_proj.conv_qk_depthwise.weight",
            "cca convolution",
            Category::Attention,
            Expr::sym(Sym::Named("cca_time0"), t0),
            c_x(),
        ),
        Extra::vector(
            "self_attn.qkv_proj.conv_qk_depthwise.bias",
            "cca convolution",
            Category::Attention,
            c_x(),
        ),
        Extra::linear(
            "self_attn.qkv_proj.conv_qk_grouped.weight",
            "cca convolution",
            Category::Attention,
            times(h_x(), Expr::sym(Sym::Named("cca_time1"), t1)),
            c_x(),
        ),
        Extra::vector(
            "self_attn.qkv_proj.conv_qk_grouped.bias",
            "cca convolution",
            Category::Attention,
            c_x(),
        ),
        Extra::vector(
            "self_attn.qk_norm.temp",
            "cca convolution",
            Category::Attention,
            Expr::sym(Sym::KvHeads, kv),
        ),
    ]
}

/// ZAYA's router network: `down_proj` `d → r` with bias, `router_mlp` (`RMSNorm(r)`,
/// `fc1`/`fc2` `r → r` with bias, `out_proj` `r → E + 1`).
fn zaya_router(d: u64, rh: u64, experts: u64) -> Vec<Extra> {
    let d_x = || Expr::sym(Sym::Hidden, d);
    let r_x = || Expr::sym(Sym::Named("router_hidden_size"), rh);
    let mut router = vec![
        Extra::linear(
            "mlp.gate.down_proj.weight",
            "router network",
            Category::MoeRouter,
            d_x(),
            r_x(),
        ),
        Extra::vector(
            "mlp.gate.down_proj.bias",
            "router network",
            Category::MoeRouter,
            r_x(),
        ),
        Extra::vector(
            "mlp.gate.router_mlp.norm.weight",
            "router norm",
            Category::Norm,
            r_x(),
        ),
    ];
    for fc in ["fc1", "fc2"] {
        let (w, b) = if fc == "fc1" {
            (
                "mlp.gate.router_mlp.fc1.weight",
                "mlp.gate.router_mlp.fc1.bias",
            )
        } else {
            (
                "mlp.gate.router_mlp.fc2.weight",
                "mlp.gate.router_mlp.fc2.bias",
            )
        };
        router.push(Extra::linear(
            w,
            "router network",
            Category::MoeRouter,
            r_x(),
            r_x(),
        ));
        router.push(Extra::vector(
            b,
            "router network",
            Category::MoeRouter,
            r_x(),
        ));
    }
    router.push(Extra::linear(
        "mlp.gate.router_mlp.out_proj.weight",
        "router network",
        Category::MoeRouter,
        r_x(),
        Expr::sum(vec![Expr::sym(Sym::Experts, experts), Expr::Lit(1)]),
    ));
    router
}

/// ZAYA (`modular_zaya.py`, transformers 5.24). Every layer: `input_layernorm` and
/// `post_attention_layernorm` (RMS, `d`); `ZayaAttention` = `ZayaCCAProjection` (`q_proj`
/// `d → n_h·d_h`, `k_proj` `d → n_kv·d_h`, `v_proj_current`/`v_proj_delayed`
/// `d → n_kv·d_h/2` each, all with `attention_bias`; `conv_qk_depthwise` over
/// `C = (n_h + n_kv)·d_h` channels, kernel `cca_time0`, with bias; `conv_qk_grouped` in
/// `n_h + n_kv` groups (so `d_h` inputs per channel), kernel `cca_time1`, with bias),
/// `ZayaQKNorm.temp` (`n_kv`) and `o_proj`; a `ZayaSparseMoeBlock` whose router is a network
/// (`down_proj` `d → r` with bias, `router_states_scale` (`r`) on every layer but the first,
/// `router_mlp` = `RMSNorm(r)` (a norm), `fc1`/`fc2` `r → r` with bias, `out_proj`
/// `r → E + 1`) and `Qwen3MoeExperts` (gated, no biases; `num_experts_per_tok` must be 1);
/// two `ZayaResidualScaling` (4 vectors of `d` each). The model adds
/// `input_hidden_states_scale`/`_bias` (`d` each) and a final `RMSNorm`; the head ties to the
/// embedding by default and carries `lm_head_bias`. The cache keeps per layer the conv window
/// (`C × (cca_time0 − 1 + cca_time1 − 1)`) and the delayed value (`n_kv·d_h/2`) beside K and
/// V; `hybrid_sliding` layers keep a `sliding_window` cache.
fn zaya(raw: &mut RawConfig<'_>, family: &Family) -> Result<ModelSpec, ConfigError> {
    let mut r = Reader {
        raw,
        class: family.config_class,
    };
    let d = r.size(key_or(&["hidden_size"], 2048), Sym::Hidden)?;
    let layers = r.size(key_or(&["num_hidden_layers"], 40), Sym::Layers)?;
    let heads = r.size(key_or(&["num_attention_heads"], 8), Sym::Heads)?;
    let kv = r.size(key_or(&["num_key_value_heads"], 2), Sym::KvHeads)?;
    let head_dim = r.size(key_or(&["head_dim"], 128), Sym::HeadDim)?;
    let vocab = r.size(key_or(&["vocab_size"], 262_272), Sym::Vocab)?;
    let expert_width = r.size(key_or(&["moe_intermediate_size"], 2048), Sym::ExpertFfn)?;
    let experts = r.size(key_or(&["num_experts"], 16), Sym::Experts)?;
    let top_k = r.size(key_or(&["num_experts_per_tok"], 1), Sym::TopK)?;
    let rh = r.size(
        key_or(&["router_hidden_size"], 256),
        Sym::Named("router_hidden_size"),
    )?;
    let t0 = r.size(key_or(&["cca_time0"], 2), Sym::Named("cca_time0"))?;
    let t1 = r.size(key_or(&["cca_time1"], 2), Sym::Named("cca_time1"))?;
    let bias = r.switch(Switch::Key("attention_bias", false))?;
    let head_bias = r.switch(Switch::Key("lm_head_bias", false))?;
    let tied = r.switch(Switch::Key("tie_word_embeddings", true))?;
    let raw = r.raw;
    if top_k != 1 {
        return Err(raw.invalid(
            "num_experts_per_tok",
            &top_k.into(),
            "1 (`ZayaConfig.validate_architecture`)",
        ));
    }
    if !heads.is_multiple_of(kv) {
        return Err(raw.invalid(
            "num_key_value_heads",
            &kv.into(),
            &format!("a divisor of `num_attention_heads` ({heads})"),
        ));
    }
    let kv_width = kv
        .checked_mul(head_dim)
        .filter(|w| w.is_multiple_of(2))
        .ok_or_else(|| {
            raw.invalid(
                "head_dim",
                &head_dim.into(),
                "an even n_kv·d_h (`v_proj_current`/`v_proj_delayed` halve it)",
            )
        })?;
    let channels = heads
        .checked_add(kv)
        .and_then(|g| g.checked_mul(head_dim))
        .ok_or_else(|| raw.invalid("head_dim", &head_dim.into(), "a smaller size"))?;
    let window = raw.size_opt("sliding_window")?;
    let n = layers;
    let sliding = zaya_sliding(raw, n)?;
    if sliding.any(|s| *s) && window.is_none() {
        return Err(raw.missing(
            "sliding_window",
            "a window (`layer_types` has `hybrid_sliding`)",
        ));
    }

    let d_x = || Expr::sym(Sym::Hidden, d);
    let r_x = || Expr::sym(Sym::Named("router_hidden_size"), rh);
    let scalings = ["post_attention_residual_scale", "post_mlp_residual_scale"]
        .into_iter()
        .flat_map(|m| {
            [
                ("hidden_states_scale", m),
                ("hidden_states_bias", m),
                ("residual_scale", m),
                ("residual_bias", m),
            ]
        })
        .map(|(v, m)| {
            Extra::vector(
                format!("{m}.{v}"),
                "residual scaling",
                Category::LayerExtras,
                d_x(),
            )
        });
    let mut extras = cca_extras(channels, head_dim, kv, (t0, t1));
    extras.extend(zaya_router(d, rh, experts));
    extras.extend(scalings);

    let mut base = layer(
        mha(d, heads, kv, head_dim, bias),
        mlp(d, expert_width, true, false),
        vec![Norm::rms_norm(d); 2],
    );
    base.ffn = Ffn::Moe(Moe {
        num_experts: experts,
        experts_per_token: top_k,
        expert: mlp(d, expert_width, true, false),
        router_bias: llmsize_core::spec::RouterBias::None,
        router: false,
        shared: None,
        shared_gate: false,
    });
    base.extras = extras;
    base.state = Some(RecurrentState {
        conv: raw.check(
            (Checked::new(channels) * ((Checked::new(t0) - 1u64) + (Checked::new(t1) - 1u64)))
                .get("cca_channels·((cca_time0 − 1) + (cca_time1 − 1))"),
        )?,
        recurrent: raw.div(kv_width, 2, "num_key_value_heads·head_dim / 2")?,
        recurrent_f32: false,
        conv_f32: false,
    });
    let mut later = base.clone();
    later.extras.push(Extra::vector(
        "mlp.gate.router_states_scale",
        "router network",
        Category::MoeRouter,
        r_x(),
    ));
    // Each distinct (first, sliding) layer is built once; the rest are runs of them.
    let mut first = Runs::uniform(true, n.min(1));
    first.push(false, n.saturating_sub(1));
    let stack = first.zip_layers(&sliding, |&(first, slides)| {
        let mut l = if first { base.clone() } else { later.clone() };
        if slides {
            l.sliding_window = window;
        }
        l
    });
    let mut spec = Decoder {
        head_bias,
        ..Decoder::new(
            family.model_type,
            architecture(raw, family.architecture),
            d,
            vocab,
            stack,
            Some(Norm::rms_norm(d)),
            tied,
        )
    }
    .into_spec();
    for v in ["input_hidden_states_scale", "input_hidden_states_bias"] {
        spec.extras.push(Extra::vector(
            v,
            "input scaling",
            Category::LayerExtras,
            d_x(),
        ));
    }
    Ok(spec)
}
