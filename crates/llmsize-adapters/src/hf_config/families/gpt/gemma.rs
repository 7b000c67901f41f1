//! Gemma 3n and Gemma 4 text decoders (transformers 5.24, `modeling_gemma3n.py`,
//! `modeling_gemma4.py`, `modeling_gemma4_unified.py`) and the Gemma 4 assistants
//! (`modeling_gemma4_assistant.py`, `modeling_gemma4_unified_assistant.py`).
//!
//! What is new against Gemma 3: the last `num_kv_shared_layers` layers reuse the keys and
//! values of the last earlier layer of their kind, so they hold only `q_proj`, `q_norm` and
//! `o_proj` and cache nothing; per-layer inputs (`embed_tokens_per_layer`, a `d → L·p`
//! projection and a gate/projection pair in every layer); Gemma 3n's `AltUp` and `LAuReL`
//! blocks; Gemma 4's per-layer overrides (`per_layer_config`: full-attention layers with
//! `global_head_dim`), its optional MoE block beside the dense MLP, and double-wide MLPs in
//! shared layers.

use llmsize_core::Category;
use llmsize_core::expr::{Expr, Sym};
use llmsize_core::spec::{
    Attention, Extra, Ffn, Layer, Linear, Mlp, ModelSpec, Moe, Norm, OutputHead,
};
use serde_json::Value;

use crate::error::ConfigError;
use crate::hf_config::architecture;
use crate::hf_config::decoder::{Decoder, mha, mlp};
use crate::hf_config::family::{Family, Reader, Switch, key_or};
use crate::hf_config::raw::RawConfig;
use crate::hf_config::runs::{Runs, layers_of, zip_runs};

/// Which text model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `Gemma3nTextConfig`.
    Gemma3n,
    /// `Gemma4TextConfig`.
    Gemma4,
    /// `Gemma4UnifiedTextConfig` (no per-layer inputs, no MoE).
    Gemma4Unified,
}

/// The class defaults that differ between the text configs.
struct Defaults {
    hidden: u64,
    layers: u64,
    heads: u64,
    kv: u64,
    vocab: u64,
    ffn: u64,
    window: u64,
    shared: u64,
}

impl Kind {
    fn defaults(self) -> Defaults {
        match self {
            Kind::Gemma3n => Defaults {
                hidden: 2048,
                layers: 35,
                heads: 8,
                kv: 2,
                vocab: 262_400,
                ffn: 16_384,
                window: 512,
                shared: 15,
            },
            Kind::Gemma4 => Defaults {
                hidden: 2304,
                layers: 30,
                heads: 8,
                kv: 4,
                vocab: 262_144,
                ffn: 9216,
                window: 512,
                shared: 0,
            },
            Kind::Gemma4Unified => Defaults {
                window: 1024,
                ..Kind::Gemma4.defaults()
            },
        }
    }
}

/// One layer's shape before it is built; equal plans make one layer kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Plan {
    sliding: bool,
    /// Reuses another layer's keys and values (`kv_sharing_modes[i] == "reuse"`).
    shared: bool,
    head_dim: u64,
    kv: u64,
    ffn: u64,
    /// `attention_k_eq_v` on a full layer: values from `k_proj`, no `v_proj`.
    v_from_k: bool,
}

/// The per-layer sizes a family's layers need besides the plan.
struct Common {
    hidden: u64,
    heads: u64,
    bias: bool,
    window: u64,
    /// `hidden_size_per_layer_input` (0: none).
    ple: u64,
    /// `altup_num_inputs` and `laurel_rank` (Gemma 3n).
    altup: Option<(u64, u64)>,
    /// Gemma 4's MoE block: experts, top-k, expert width.
    moe: Option<(u64, u64, u64)>,
}

fn reason(class: &str) -> String {
    format!("absent; `{class}` default")
}

/// A count that may be 0 (`hidden_size_per_layer_input`, `num_kv_shared_layers`).
fn count_or(r: &mut Reader<'_, '_>, key: &str, default: u64) -> Result<u64, ConfigError> {
    if let Some(n) = r.raw.uint(key)? {
        return Ok(n);
    }
    let why = reason(r.class);
    r.raw.assume(key, default, &why);
    Ok(default)
}

/// `layer_types`, or the class's default pattern: per layer, whether it slides.
fn layer_types(raw: &mut RawConfig<'_>, kind: Kind, n: u64) -> Result<Runs<bool>, ConfigError> {
    let mut types = if let Some(v) = raw.value("layer_types") {
        let list = v
            .as_array()
            .ok_or_else(|| raw.invalid("layer_types", v, "a list of layer kinds"))?;
        if list.len() as u64 != n {
            return Err(raw.invalid("layer_types", v, &format!("one entry per layer ({n})")));
        }
        let mut types = Runs::default();
        for t in list {
            match t.as_str() {
                Some("sliding_attention") => types.push(true, 1),
                Some("full_attention") => types.push(false, 1),
                _ => {
                    return Err(raw.invalid(
                        "layer_types",
                        t,
                        "`sliding_attention` or `full_attention`",
                    ));
                }
            }
        }
        types
    } else {
        let (pattern, what) = match kind {
            Kind::Gemma3n => (5, "every 5th layer full"),
            _ => (6, "every 6th layer full"),
        };
        raw.assume("layer_types", what, "absent; the class's default pattern");
        Runs::every(n, pattern).map(|full| !full)
    };
    // Gemma 4 forces the last layer to full attention.
    if kind != Kind::Gemma3n {
        types.overwrite(n.saturating_sub(1)..n, &false);
    }
    Ok(types)
}

/// `kv_sharing_modes`: per layer, whether it reuses an earlier layer's keys and values.
fn shared_layers(
    raw: &RawConfig<'_>,
    kind: Kind,
    (sliding, n): (&Runs<bool>, u64),
    shared: u64,
) -> Result<Runs<bool>, ConfigError> {
    if shared == 0 && kind == Kind::Gemma3n {
        return Ok(Runs::uniform(false, n));
    }
    if shared == n && kind != Kind::Gemma3n {
        return Ok(Runs::uniform(true, n));
    }
    let first = n.checked_sub(shared).ok_or_else(|| {
        raw.invalid(
            "num_kv_shared_layers",
            &shared.into(),
            &format!("at most `num_hidden_layers` ({n})"),
        )
    })?;
    let reusing = Runs::from_index(n, first);
    // Every kind of layer that reuses must have a producer of that kind before `first`.
    let both = sliding.zip(&reusing);
    for kind in [true, false] {
        if both.any(|&(s, _)| s == kind) != both.any(|&(s, r)| s == kind && !r) {
            return Err(raw.invalid(
                "num_kv_shared_layers",
                &shared.into(),
                "a count leaving a cache-producing layer of every kind in `layer_types`",
            ));
        }
    }
    Ok(reusing)
}

/// A layer's `(head_dim, num_key_value_heads)` overrides.
type Override = (Option<u64>, Option<u64>);

/// Gemma 4's `per_layer_config`: per layer, `(head_dim, num_key_value_heads)` overrides.
fn per_layer_overrides(
    r: &mut Reader<'_, '_>,
    (sliding, n): (&Runs<bool>, u64),
    k_eq_v: bool,
) -> Result<Runs<Override>, ConfigError> {
    let Some(v) = r.raw.value("per_layer_config") else {
        // `__post_init__`: full layers take `global_head_dim` (and, with `attention_k_eq_v`,
        // `num_global_key_value_heads`).
        let global = r.size(key_or(&["global_head_dim"], 512), Sym::Named("d_h_global"))?;
        let global_kv = if k_eq_v {
            r.raw.size_opt("num_global_key_value_heads")?
        } else {
            None
        };
        return Ok(sliding.map(|s| {
            if *s {
                (None, None)
            } else {
                (Some(global), global_kv)
            }
        }));
    };
    let map = v.as_object().ok_or_else(|| {
        r.raw
            .invalid("per_layer_config", v, "an object of layer overrides")
    })?;
    // The layers the object names (its size is the input's), in order.
    let mut listed: Vec<(u64, Override)> = Vec::with_capacity(map.len());
    for (k, o) in map {
        let bad_index = || {
            r.raw.invalid(
                "per_layer_config",
                &Value::from(k.as_str()),
                &format!("layer indices below `num_hidden_layers` ({n})"),
            )
        };
        let i: u64 = k.trim().parse().map_err(|_| bad_index())?;
        if i >= n {
            return Err(bad_index());
        }
        let fields = o.as_object().ok_or_else(|| {
            r.raw
                .invalid("per_layer_config", o, "an object of attribute overrides")
        })?;
        let mut slot: Override = (None, None);
        for (field, value) in fields {
            let size = value.as_u64().filter(|n| *n > 0).ok_or_else(|| {
                r.raw.invalid(
                    &format!("per_layer_config.{k}.{field}"),
                    value,
                    "a positive integer",
                )
            })?;
            match field.as_str() {
                "head_dim" => slot.0 = Some(size),
                "num_key_value_heads" => slot.1 = Some(size),
                _ => {
                    return Err(r.raw.invalid(
                        &format!("per_layer_config.{k}"),
                        o,
                        "overrides of `head_dim` and `num_key_value_heads` only (llmsize reads no others)",
                    ));
                }
            }
        }
        listed.push((i, slot));
    }
    // In layer order (a stable sort: a layer named twice, `"1"` and `" 1"`, takes the
    // fields of both, the later winning).
    listed.sort_by_key(|(i, _)| *i);
    let mut merged: Vec<(u64, Override)> = Vec::with_capacity(listed.len());
    for (i, o) in listed {
        match merged.last_mut() {
            Some((j, m)) if *j == i => *m = (o.0.or(m.0), o.1.or(m.1)),
            _ => merged.push((i, o)),
        }
    }
    let mut out = Runs::default();
    let mut next = 0u64;
    for (i, o) in merged {
        // `next ≤ i < n`.
        out.push((None, None), i.saturating_sub(next));
        out.push(o, 1);
        // saturates: never, i < n (above).
        next = i.saturating_add(1);
    }
    out.push((None, None), n.saturating_sub(next));
    // `Gemma4TextRotaryEmbedding` reads `per_layer_config[layer_type]`, which requires every
    // layer of a kind to have the same overrides.
    let both = out.zip(sliding);
    for kind in [true, false] {
        let mut seen = both
            .runs()
            .iter()
            .filter(|((_, s), _)| *s == kind)
            .map(|((o, _), _)| o);
        if let Some(first) = seen.next()
            && seen.any(|o| o != first)
        {
            return Err(r.raw.invalid(
                "per_layer_config",
                v,
                "the same overrides for every layer of a kind (`layer_types`)",
            ));
        }
    }
    Ok(out)
}

fn sym(s: Sym, v: u64) -> Expr {
    Expr::sym(s, v)
}

fn prod(a: Expr, b: Expr) -> Expr {
    Expr::product(vec![a, b])
}

/// A bias-free linear layer's weight as an extra.
fn linear(name: &'static str, part: &'static str, c: Category, input: Expr, output: Expr) -> Extra {
    Extra::linear(name, part, c, input, output)
}

/// The attention of a layer that reuses keys and values: `q_proj`, `q_norm`, `o_proj` (and
/// their biases with `attention_bias`); it caches nothing.
fn shared_attention(c: &Common, head_dim: u64) -> Vec<Extra> {
    let d = sym(Sym::Hidden, c.hidden);
    let width = prod(sym(Sym::Heads, c.heads), sym(Sym::HeadDim, head_dim));
    let part = "attention (shared KV)";
    let mut out = vec![
        linear(
            "self_attn.q_proj.weight",
            part,
            Category::Attention,
            d.clone(),
            width.clone(),
        ),
        Extra::vector(
            "self_attn.q_norm.weight",
            part,
            Category::Attention,
            sym(Sym::HeadDim, head_dim),
        ),
        linear(
            "self_attn.o_proj.weight",
            part,
            Category::Attention,
            width.clone(),
            d.clone(),
        ),
    ];
    if c.bias {
        out.push(Extra::vector(
            "self_attn.q_proj.bias",
            part,
            Category::Attention,
            width,
        ));
        out.push(Extra::vector(
            "self_attn.o_proj.bias",
            part,
            Category::Attention,
            d,
        ));
    }
    out
}

/// One layer from its plan.
fn build_layer(c: &Common, p: &Plan) -> Layer {
    let d = sym(Sym::Hidden, c.hidden);
    let rms = Norm::rms_norm(c.hidden);
    // input, post-attention, pre- and post-feedforward norms.
    let mut norms = vec![rms; 4];
    let mut extras = Vec::new();
    let attention = if p.shared {
        extras.extend(shared_attention(c, p.head_dim));
        Attention::Absent
    } else {
        let mut a = mha(c.hidden, c.heads, p.kv, p.head_dim, c.bias);
        a.v_from_k = p.v_from_k;
        a.q_norm = Some(Norm::rms_norm(p.head_dim));
        a.k_norm = Some(Norm::rms_norm(p.head_dim));
        Attention::Standard(a)
    };
    if let Some((n, rank)) = c.altup {
        // `Gemma3nTextAltUp`: `correct_output_scale`, `correction_coefs` n→n,
        // `prediction_coefs` n→n², `modality_router` d→n, `router_norm`.
        let n_in = sym(Sym::Named("n_altup"), n);
        let part = "altup";
        extras.extend([
            Extra::vector(
                "altup.correct_output_scale",
                part,
                Category::LayerExtras,
                d.clone(),
            ),
            linear(
                "altup.correction_coefs.weight",
                part,
                Category::LayerExtras,
                n_in.clone(),
                n_in.clone(),
            ),
            linear(
                "altup.prediction_coefs.weight",
                part,
                Category::LayerExtras,
                n_in.clone(),
                prod(n_in.clone(), n_in.clone()),
            ),
            linear(
                "altup.modality_router.weight",
                part,
                Category::LayerExtras,
                d.clone(),
                n_in,
            ),
        ]);
        // `Gemma3nTextLaurelBlock`: `linear_left` d→r, `linear_right` r→d, `post_laurel_norm`.
        let r = sym(Sym::Named("r_laurel"), rank);
        extras.extend([
            linear(
                "laurel.linear_left.weight",
                "laurel",
                Category::LayerExtras,
                d.clone(),
                r.clone(),
            ),
            linear(
                "laurel.linear_right.weight",
                "laurel",
                Category::LayerExtras,
                r,
                d.clone(),
            ),
        ]);
        // `altup.router_norm`, `laurel.post_laurel_norm`.
        norms.extend([rms, rms]);
    }
    if c.ple > 0 {
        // `per_layer_input_gate` d→p, `per_layer_projection` p→d, `post_per_layer_input_norm`.
        let p_in = sym(Sym::Named("d_ple"), c.ple);
        extras.extend([
            linear(
                "per_layer_input_gate.weight",
                "per-layer input",
                Category::LayerExtras,
                d.clone(),
                p_in.clone(),
            ),
            linear(
                "per_layer_projection.weight",
                "per-layer input",
                Category::LayerExtras,
                p_in,
                d.clone(),
            ),
        ]);
    }
    // Gemma 3n builds the per-layer input path whatever its width (its norm is over d);
    // Gemma 4 only when `hidden_size_per_layer_input` is set.
    if c.ple > 0 || c.altup.is_some() {
        norms.push(rms);
    }
    let dense = mlp(c.hidden, p.ffn, true, false);
    let ffn = if let Some((experts, top_k, width)) = c.moe {
        // `Gemma4TextDecoderLayer` with `enable_moe_block`: the dense MLP runs beside a router
        // (`proj` d→E, `scale` d, `per_expert_scale` E) and experts (`gate_up_proj`,
        // `down_proj`), with three more norms.
        let f = sym(Sym::Ffn, p.ffn);
        let part = "dense MLP beside the experts";
        extras.extend([
            linear(
                "mlp.gate_proj.weight",
                part,
                Category::Ffn,
                d.clone(),
                f.clone(),
            ),
            linear(
                "mlp.up_proj.weight",
                part,
                Category::Ffn,
                d.clone(),
                f.clone(),
            ),
            linear("mlp.down_proj.weight", part, Category::Ffn, f, d.clone()),
            Extra::vector("router.scale", "router", Category::MoeRouter, d),
            Extra::vector(
                "router.per_expert_scale",
                "router",
                Category::MoeRouter,
                sym(Sym::Experts, experts),
            ),
        ]);
        norms.extend([rms; 3]);
        Ffn::Moe(Moe {
            num_experts: experts,
            experts_per_token: top_k,
            expert: Mlp {
                hidden: c.hidden,
                intermediate: width,
                gated: true,
                up_bias: false,
                down_bias: false,
            },
            router_bias: llmsize_core::spec::RouterBias::None,
            router: true,
            shared: None,
            shared_gate: false,
        })
    } else {
        Ffn::Dense(dense)
    };
    Layer {
        attention,
        cross_attention: None,
        ffn,
        norms,
        sliding_window: p.sliding.then_some(c.window),
        extras,
        state: None,
    }
}

/// A text model of `kind`.
pub(crate) fn text(
    raw: &mut RawConfig<'_>,
    family: &Family,
    kind: Kind,
) -> Result<ModelSpec, ConfigError> {
    text_model(raw, Names::of(family), kind, false)
}

/// The names a text model is reported under.
#[derive(Clone, Copy)]
struct Names {
    model_type: &'static str,
    class: &'static str,
    architecture: &'static str,
}

impl Names {
    fn of(f: &Family) -> Self {
        Names {
            model_type: f.model_type,
            class: f.config_class,
            architecture: f.architecture,
        }
    }
}

/// A text model of `kind`; `assistant`: every layer reuses keys and values when
/// `num_kv_shared_layers` is 0 (`Gemma4AssistantConfig.__post_init__`) and the assistant's
/// rules hold.
fn text_model(
    raw: &mut RawConfig<'_>,
    names: Names,
    kind: Kind,
    assistant: bool,
) -> Result<ModelSpec, ConfigError> {
    let def = kind.defaults();
    let mut r = Reader {
        raw,
        class: names.class,
    };
    let hidden = r.size(key_or(&["hidden_size"], def.hidden), Sym::Hidden)?;
    let layers = r.size(key_or(&["num_hidden_layers"], def.layers), Sym::Layers)?;
    let heads = r.size(key_or(&["num_attention_heads"], def.heads), Sym::Heads)?;
    let kv = r.size(key_or(&["num_key_value_heads"], def.kv), Sym::KvHeads)?;
    let head_dim = r.size(key_or(&["head_dim"], 256), Sym::HeadDim)?;
    let vocab = r.size(key_or(&["vocab_size"], def.vocab), Sym::Vocab)?;
    let window = r.size(key_or(&["sliding_window"], def.window), Sym::Named("w"))?;
    let bias = r.switch(Switch::Key("attention_bias", false))?;
    let tied = r.switch(Switch::Key("tie_word_embeddings", true))?;
    let n = r.raw.bound_layers("num_hidden_layers", layers)?;
    if kind == Kind::Gemma3n && !hidden.is_multiple_of(heads) {
        // `Gemma3nTextConfig.validate_architecture`.
        return Err(r.raw.invalid(
            "hidden_size",
            &hidden.into(),
            &format!("a multiple of `num_attention_heads` ({heads})"),
        ));
    }
    // Gemma 4 with `use_bidirectional_attention: "all"` halves the window
    // (`sliding_window // 2 + 1`).
    let window = match r.raw.value("use_bidirectional_attention") {
        Some(Value::String(s)) if s == "all" && kind != Kind::Gemma3n => r.raw.check(
            (llmsize_core::checked::Checked::new(window) / 2u64 + 1u64)
                .get("sliding_window // 2 + 1"),
        )?,
        _ => window,
    };
    let sliding = layer_types(r.raw, kind, n)?;
    let mut shared = count_or(&mut r, "num_kv_shared_layers", def.shared)?;
    if assistant && shared == 0 {
        shared = layers;
    }
    let is_shared = shared_layers(r.raw, kind, (&sliding, n), shared)?;
    // MLP widths: Gemma 3n may list one per layer; Gemma 4 doubles shared layers' with
    // `use_double_wide_mlp`.
    let listed = match r.raw.value("intermediate_size") {
        Some(v @ Value::Array(list)) if kind == Kind::Gemma3n => Some((v, list)),
        _ => None,
    };
    let widths: Runs<u64> = if let Some((v, list)) = listed {
        if list.len() as u64 != n {
            return Err(r.raw.invalid(
                "intermediate_size",
                v,
                &format!("one width per layer ({n}) or one for all"),
            ));
        }
        let mut widths = Runs::default();
        for w in list {
            let w = w
                .as_u64()
                .filter(|w| *w > 0)
                .ok_or_else(|| r.raw.invalid("intermediate_size", w, "positive integers"))?;
            widths.push(w, 1);
        }
        widths
    } else {
        let w = r.size(key_or(&["intermediate_size"], def.ffn), Sym::Ffn)?;
        Runs::uniform(w, n)
    };
    let double = kind != Kind::Gemma3n && r.switch(Switch::Key("use_double_wide_mlp", false))?;
    let k_eq_v = kind != Kind::Gemma3n && r.switch(Switch::Key("attention_k_eq_v", false))?;
    let overrides = if kind == Kind::Gemma3n {
        Runs::uniform((None, None), n)
    } else {
        per_layer_overrides(&mut r, (&sliding, n), k_eq_v)?
    };
    let (ple, ple_vocab) = if kind == Kind::Gemma4Unified {
        (0, 0)
    } else {
        let p = count_or(&mut r, "hidden_size_per_layer_input", 256)?;
        let v = count_or(&mut r, "vocab_size_per_layer_input", 262_144)?;
        (p, v)
    };
    let altup = if kind == Kind::Gemma3n {
        let n_in = r.size(key_or(&["altup_num_inputs"], 4), Sym::Named("n_altup"))?;
        let rank = r.size(key_or(&["laurel_rank"], 64), Sym::Named("r_laurel"))?;
        Some((n_in, rank))
    } else {
        None
    };
    let moe = if kind == Kind::Gemma4 && r.switch(Switch::Key("enable_moe_block", false))? {
        let experts = r.raw.size(&["num_experts"], Sym::Experts)?;
        let top_k = r.raw.size(&["top_k_experts"], Sym::TopK)?;
        if top_k > experts {
            return Err(r.raw.invalid(
                "top_k_experts",
                &top_k.into(),
                &format!("at most `num_experts` ({experts})"),
            ));
        }
        let width = r.raw.size(&["moe_intermediate_size"], Sym::ExpertFfn)?;
        Some((experts, top_k, width))
    } else {
        None
    };
    if assistant && (ple != 0 || ple_vocab != 0 || moe.is_some() || double || shared != layers) {
        // `Gemma4AssistantConfig.validate_architecture`.
        return Err(r.raw.invalid(
            "num_kv_shared_layers",
            &shared.into(),
            "an assistant's text model: every layer shared, no per-layer inputs, no MoE, no double-wide MLP",
        ));
    }
    let common = Common {
        hidden,
        heads,
        bias,
        window,
        ple,
        altup,
        moe,
    };
    // One plan per run of equal (sliding, shared, width, overrides), read lazily: checked in
    // a first pass, built in a second.
    let runs = || {
        zip_runs(
            zip_runs(zip_runs(sliding.iter(), is_shared.iter()), widths.iter()),
            overrides.iter(),
        )
    };
    let plan = |(((s, sh), w), (hd, kvo)): (((bool, bool), u64), Override)| {
        let ffn = if double && sh { w.checked_mul(2)? } else { w };
        Some(Plan {
            sliding: s,
            shared: sh,
            head_dim: hd.unwrap_or(head_dim),
            kv: kvo.unwrap_or(kv),
            ffn,
            // Full layers then take their values from `k_proj` and still cache both.
            v_from_k: k_eq_v && !s && !sh,
        })
    };
    for (k, _) in runs() {
        let (((_, sh), w), _) = k;
        if double && sh {
            r.raw.mul(w, 2, "2·intermediate_size")?;
        }
        let Some(p) = plan(k) else {
            continue;
        };
        if !heads.is_multiple_of(p.kv) {
            return Err(r.raw.invalid(
                "num_key_value_heads",
                &p.kv.into(),
                &format!("a divisor of `num_attention_heads` ({heads})"),
            ));
        }
    }
    let stack = layers_of(
        || runs().filter_map(|(k, c)| Some((plan(k)?, c))),
        |p| build_layer(&common, p),
    );
    let mut spec = Decoder::new(
        names.model_type,
        architecture(r.raw, names.architecture),
        hidden,
        vocab,
        stack,
        Some(Norm::rms_norm(hidden)),
        tied,
    )
    .into_spec();
    let d = sym(Sym::Hidden, hidden);
    if ple > 0 {
        // `embed_tokens_per_layer` V_p × L·p, `per_layer_model_projection` d → L·p,
        // `per_layer_projection_norm` p.
        let lp = prod(sym(Sym::Layers, layers), sym(Sym::Named("d_ple"), ple));
        // One part per category: a part is counted under its first tensor's category.
        spec.extras.extend([
            Extra::table(
                "embed_tokens_per_layer.weight",
                "per-layer input table",
                Category::TokenEmbedding,
                sym(Sym::Named("V_ple"), ple_vocab),
                lp.clone(),
            ),
            linear(
                "per_layer_model_projection.weight",
                "per-layer input projection",
                Category::LayerExtras,
                d.clone(),
                lp,
            ),
            Extra::vector(
                "per_layer_projection_norm.weight",
                "per-layer input norm",
                Category::Norm,
                sym(Sym::Named("d_ple"), ple),
            ),
        ]);
    }
    if let Some((n_in, _)) = altup {
        // `altup_projections` and `altup_unembed_projections`: n − 1 maps d→d each.
        let copies = sym(Sym::Named("(n_altup − 1)"), n_in.saturating_sub(1));
        for name in [
            "altup_projections.*.weight",
            "altup_unembed_projections.*.weight",
        ] {
            spec.extras.push(
                linear(name, "altup", Category::LayerExtras, d.clone(), d.clone())
                    .times(copies.clone()),
            );
        }
    }
    Ok(spec)
}

/// A Gemma 4 assistant: the text model under `text_config` (every layer reusing the target
/// model's keys and values), `pre_projection` 2·`backbone_hidden_size` → d and
/// `post_projection` d → `backbone_hidden_size`, and the head, tied by default.
pub(crate) fn assistant(
    raw: &mut RawConfig<'_>,
    family: &Family,
    kind: Kind,
    backbone_default: u64,
) -> Result<ModelSpec, ConfigError> {
    let class = family.config_class;
    let why = reason(class);
    let backbone = raw.size_or(
        &["backbone_hidden_size"],
        Sym::Named("d_backbone"),
        backbone_default,
        &why,
    )?;
    let tied = raw.flag_or("tie_word_embeddings", true, &why)?;
    if raw.flag_or("use_ordered_embeddings", false, &why)? {
        return Err(raw.invalid(
            "use_ordered_embeddings",
            &true.into(),
            "`false` (the centroid embedder is not modelled yet)",
        ));
    }
    let arch = architecture(raw, family.architecture);
    let value = raw
        .value("text_config")
        .ok_or_else(|| raw.missing("text_config", "an object holding the text model's config"))?;
    let sub = value.as_object().ok_or_else(|| {
        raw.invalid(
            "text_config",
            value,
            "an object holding the text model's config",
        )
    })?;
    let (text_type, text_class) = match kind {
        Kind::Gemma4Unified => ("gemma4_unified_text", "Gemma4UnifiedTextConfig"),
        _ => ("gemma4_text", "Gemma4TextConfig"),
    };
    match sub.get("model_type") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) if s == text_type => {}
        Some(v) => {
            return Err(raw.invalid("text_config.model_type", v, &format!("`{text_type}`")));
        }
    }
    let names = Names {
        class: text_class,
        ..Names::of(family)
    };
    let mut inner = raw.nested("text_config", sub);
    let mut spec = text_model(&mut inner, names, kind, true)?;
    for a in inner.assumptions {
        raw.assume(&format!("text_config.{}", a.field), a.value, &a.reason);
    }
    for (symbol, source) in inner.sources {
        raw.source(symbol, &format!("text_config.{source}"));
    }
    let hidden = spec.hidden_size;
    let double = raw.mul(2, backbone, "2·backbone_hidden_size")?;
    spec.embedding_projections = vec![
        Linear {
            input: double,
            output: hidden,
            bias: false,
        },
        Linear {
            input: hidden,
            output: backbone,
            bias: false,
        },
    ];
    spec.architecture = arch;
    spec.head = OutputHead::Lm {
        tied,
        biases: 0,
        transform: None,
    };
    Ok(spec)
}
