//! The training profile of each model type whose training step is derived: which layer code
//! (`modeling_*.py`) it runs, which dropouts are active, its rotary width and peft's module
//! names. Read from the same `config.json` as the shapes, with the configuration classes'
//! defaults (transformers 5.24).

use llmsize_core::facts::TypeFacts;
use llmsize_core::profile::{
    BlockNorms, LayerStyle, NormCode, PositionIds, RopeTables, Routing, SharedExpertOrder,
    TrainingProfile,
};
use serde_json::{Map, Value};

fn num(map: &Map<String, Value>, key: &str, default: f64) -> f64 {
    map.get(key).and_then(Value::as_f64).unwrap_or(default)
}

/// The MLP's activation saves its input, as `SiLU`'s and `GELU`'s derivatives do (`hidden_act`, or
/// Exaone's `activation_function`; the class default when absent): `ReLU` saves its output,
/// which is the next op's saved input too, so one tensor fewer is kept.
fn act_saves_input(map: &Map<String, Value>) -> bool {
    let act = map
        .get("hidden_act")
        .or_else(|| map.get("activation_function"))
        .and_then(Value::as_str);
    act.is_none_or(|a| matches!(a, "silu" | "swish" | "gelu" | "gelu_pytorch_tanh" | "relu2"))
}

/// `partial_rotary_factor`, in `rope_parameters` (transformers 5) or at the top level.
fn rotary_factor(map: &Map<String, Value>) -> Option<f64> {
    map.get("rope_parameters")
        .and_then(|r| r.get("partial_rotary_factor"))
        .or_else(|| map.get("partial_rotary_factor"))
        .and_then(Value::as_f64)
}

/// The rotary dimensions of a head of `head_dim`: `partial_rotary_factor` (in
/// `rope_parameters` or at the top level; `default` when absent) of it, rounded down.
fn rotary_part(map: &Map<String, Value>, head_dim: u64, default: f64) -> u64 {
    let factor = rotary_factor(map).unwrap_or(default);
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss,
        reason = "a head's width times a factor in (0, 1]: small and positive"
    )]
    let r = (head_dim as f64 * factor) as u64;
    r
}

/// A rotary width rounded up to even (`2·⌈r/2⌉`: the tables are built over `r/2`
/// frequencies, rounded up).
fn even_rotary(r: u64) -> u64 {
    // saturates: never, a head's rotary width is far below u64::MAX / 2.
    r.div_ceil(2).saturating_mul(2)
}

/// The rotary turns every dimension of a head (no `partial_rotary_factor` below 1, no
/// `rotary_dim` of its own).
fn full_rotary(map: &Map<String, Value>) -> bool {
    let factor = rotary_factor(map);
    let dim = map.get("rotary_dim").and_then(Value::as_u64);
    let head = map.get("head_dim").and_then(Value::as_u64);
    factor.is_none_or(|f| (f - 1.0).abs() < f64::EPSILON) && dim.is_none_or(|r| Some(r) == head)
}

/// Distinct entries of `layer_types` (0 without the list).
fn layer_type_count(map: &Map<String, Value>) -> usize {
    let mut kinds: Vec<&str> = map
        .get("layer_types")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    kinds.sort_unstable();
    kinds.dedup();
    kinds.len()
}

/// Some `SmolLM3` layer uses the rotary (`no_rope_layers` holds a 1, or the interval leaves one).
fn smollm3_has_rope(map: &Map<String, Value>) -> bool {
    match map.get("no_rope_layers").and_then(Value::as_array) {
        Some(list) => list.iter().any(|v| v.as_u64() == Some(1)),
        None => map.get("no_rope_layer_interval").and_then(Value::as_u64) != Some(1),
    }
}

/// Every LFM2 layer is attention (`layer_types` all `full_attention`; the config class makes
/// every layer attention when neither it nor `full_attn_idxs` is given).
fn lfm2_all_attention(map: &Map<String, Value>) -> bool {
    match map.get("layer_types").and_then(Value::as_array) {
        Some(list) => list.iter().all(|v| v.as_str() == Some("full_attention")),
        None => !map.contains_key("full_attn_idxs"),
    }
}

/// The profile of `model_type`, or `None` where its training step is not derived.
pub(crate) fn profile(
    model_type: &str,
    map: &Map<String, Value>,
    head_dim: Option<u64>,
    facts: &TypeFacts,
) -> Option<TrainingProfile> {
    let on = |key: &str, default: f64| num(map, key, default) > 0.0;
    let rope = head_dim;
    let base = |style| TrainingProfile {
        attention_dropout: on("attention_dropout", 0.0),
        rotary_dims: rope,
        sliding_window_applies: map.get("use_sliding_window").and_then(Value::as_bool)
            != Some(false),
        peft_default: facts.peft_default,
        ..TrainingProfile::plain(style, facts.modules)
    };
    let profile = Some(match model_type {
        // transformers maps exaone, internlm3 and iquestcoder to `LlamaForCausalLM`
        // (`auto/modeling_auto.py`); Arcee's layers are llama's with an ungated MLP (relu²,
        // which saves what a gated MLP's two inputs would).
        // The backward's op rules were traced on llama's, Qwen2's (q/k/v biases) and Qwen3's
        // (per-head norms) code, which Mistral's and the `LlamaForCausalLM` types' are.
        "llama" | "mistral" | "qwen2" | "qwen3" | "exaone" | "internlm3" | "iquestcoder" => {
            TrainingProfile {
                backward_traced: true,
                ..base(LayerStyle::Llama)
            }
        }
        "arcee" => base(LayerStyle::Llama),
        // Mixtral's MoE backward was traced on its grouped experts.
        "mixtral" => TrainingProfile {
            backward_traced: true,
            ..base(LayerStyle::Llama)
        },
        // CWM: llama's layers with per-layer sliding windows.
        "cwm" => TrainingProfile {
            sliding_window_applies: true,
            backward_traced: true,
            ..base(LayerStyle::Llama)
        },
        // SmolLM3's NoPE layers skip the rotary; with none left the cos/sin are not kept.
        "smollm3" if smollm3_has_rope(map) => TrainingProfile {
            sliding_window_applies: true,
            ..base(LayerStyle::Llama)
        },
        // LFM2's attention layers are llama's with Qwen3's per-head norms (attention dropout
        // hard-coded to 0); its short-conv layers are not derived.
        "lfm2" if lfm2_all_attention(map) => TrainingProfile {
            attention_dropout: false,
            backward_traced: true,
            ..base(LayerStyle::Llama)
        },
        // OLMoE and Mellum (`modeling_olmoe.py` `OlmoeTopKRouter`): the top-k weights are cast
        // to the logits' dtype; renormalised only with `norm_topk_prob` (OLMoE's default
        // false, Mellum's true). OLMoE's `clip_qkv` clamps in place (a saved clone each): not
        // derived. Mellum computes one rotary per layer type: one type only.
        "olmoe" if map.get("clip_qkv").is_none_or(Value::is_null) => TrainingProfile {
            routing_weights_in_dtype: true,
            topk_renormalized: map.get("norm_topk_prob").and_then(Value::as_bool) == Some(true),
            ..base(LayerStyle::Llama)
        },
        "mellum" if layer_type_count(map) <= 1 => TrainingProfile {
            routing_weights_in_dtype: true,
            topk_renormalized: map.get("norm_topk_prob").and_then(Value::as_bool) != Some(false),
            ..base(LayerStyle::Llama)
        },
        // Granite (`modeling_granite.py`): llama's layers with scalar multipliers (embedding,
        // residual, attention, logits), which save nothing; the embedding's one matters
        // under checkpointing with a frozen embedding.
        "granite" => TrainingProfile {
            scaled_embedding_output: true,
            ..base(LayerStyle::Llama)
        },
        // HyperCLOVA X (`modeling_hyperclovax.py`): Granite's multipliers (the logits
        // multiplied, not divided, by theirs) with Peri-LN, a norm after each block too
        // (`use_post_norm`, default true).
        "hyperclovax" => TrainingProfile {
            scaled_embedding_output: true,
            block_norms: if map.get("use_post_norm").and_then(Value::as_bool) == Some(false) {
                BlockNorms::Pre
            } else {
                BlockNorms::Sandwich
            },
            ..base(LayerStyle::Llama)
        },
        // Granite-MoE (`GraniteMoeTopKGating`): top-k on the fp32 logits, then a softmax over
        // the k, cast to the dtype. Granite-MoE-Shared's layer adds its `shared_mlp` after
        // the routed experts.
        "granitemoe" | "granitemoeshared" => TrainingProfile {
            shared_expert: SharedExpertOrder::After,
            routing_weights_in_dtype: true,
            routing: Routing::TopKThenSoftmax {
                logits_in_dtype: false,
            },
            scaled_embedding_output: true,
            ..base(LayerStyle::Llama)
        },
        // MiniMax-M2: its rotary ends in `cat([q_embed, q_pass])`; full rotary only.
        "minimax_m2" if full_rotary(map) => TrainingProfile {
            rope_concatenated: true,
            ..base(LayerStyle::Llama)
        },
        // GLM (`modeling_glm.py`): interleaved rotary copies per layer, on the first
        // `partial_rotary_factor` (0.5) of each head, ending in a `cat`. GLM-4
        // (`modeling_glm4.py`) runs GLM's attention and MLP between sandwich norms
        // (`post_self_attn_layernorm`, `post_mlp_layernorm`).
        "glm" | "glm4" => TrainingProfile {
            rope_tables: RopeTables::Interleaved,
            rope_concatenated: true,
            rotary_dims: head_dim.map(|hd| rotary_part(map, hd, 0.5)),
            block_norms: if model_type == "glm4" {
                BlockNorms::Sandwich
            } else {
                BlockNorms::Pre
            },
            ..base(LayerStyle::Llama)
        },
        // Helium (`modeling_helium.py`): interleaved rotary copies per layer; RMSNorms that
        // multiply by their fp32 weight in fp32.
        "helium" => TrainingProfile {
            rope_tables: RopeTables::Interleaved,
            norm: NormCode::Fp32Weight,
            ..base(LayerStyle::Llama)
        },
        // ERNIE 4.5: fp32 rotary tables, interleaved per layer.
        "ernie4_5" => TrainingProfile {
            rope_tables: RopeTables::Interleaved,
            rotary_fp32: true,
            ..base(LayerStyle::Llama)
        },
        // Ministral 3: q scaled by `get_llama_4_attn_scale` in every layer.
        "ministral3" => TrainingProfile {
            q_position_scale: true,
            ..base(LayerStyle::Llama)
        },
        // Emu3's text model (`modeling_emu3.py`): llama's layers with `attention_dropout`
        // (0.1 by default) on the probabilities and on each block's output.
        "emu3" => TrainingProfile {
            attention_dropout: on("attention_dropout", 0.1),
            hidden_dropout: on("attention_dropout", 0.1),
            ..base(LayerStyle::Llama)
        },
        // Seed-OSS (`modeling_seed_oss.py`): llama's layers (q/k/v biased by the layout) with
        // `attention_dropout` on the probabilities and `residual_dropout` on each block's
        // output (0.1 each by default).
        "seed_oss" => TrainingProfile {
            attention_dropout: on("attention_dropout", 0.1),
            hidden_dropout: on("residual_dropout", 0.1),
            ..base(LayerStyle::Llama)
        },
        // BitNet (`modeling_bitnet.py`): llama's layers with a sub-norm before `o_proj` and
        // before `down_proj` (relu², gated: saved as SiLU's gate is).
        "bitnet" => TrainingProfile {
            sub_norms: true,
            ..base(LayerStyle::Llama)
        },
        // Jais 2: StarCoder 2's layer (LayerNorms with biases, separate q/k/v, an ungated
        // biased MLP: relu² saves what GELU's input does).
        "jais2" => base(LayerStyle::Starcoder2),
        // Hunyuan-V3 (`modeling_hy_v3.py`): an fp32 router over `hidden.float()`, sigmoid
        // scores with a bias for the choice, always renormalised; `HYV3MoE.forward` adds the
        // shared experts after the routed ones.
        "hy_v3" => TrainingProfile {
            shared_expert: SharedExpertOrder::After,
            ..base(LayerStyle::Llama)
        },
        // DeepSeek-V3's router in GLM-4-MoE's code (`Glm4MoeTopkRouter`: an fp32 weight over
        // `hidden.float()`), Solar Open's and EXAONE-MoE's; GLM-4-MoE's rotary (partial,
        // 0.5 by default, ending in a `cat`), which SARVAM-MoE runs too. Each block
        // (`Glm4MoeMoE`, `SolarOpenMoE`, `ExaoneMoeSparseMoEBlock`) adds the shared experts
        // after the routed ones.
        "glm4_moe" | "sarvam_moe" | "solar_open" | "exaone_moe" => {
            let glm = matches!(model_type, "glm4_moe" | "sarvam_moe");
            TrainingProfile {
                shared_expert: SharedExpertOrder::After,
                routing: Routing::Grouped {
                    groups: map.get("n_group").and_then(Value::as_u64).unwrap_or(1),
                    top_groups: map.get("topk_group").and_then(Value::as_u64).unwrap_or(1),
                },
                topk_renormalized: map.get("norm_topk_prob").and_then(Value::as_bool)
                    != Some(false),
                rope_concatenated: glm,
                rotary_dims: if glm {
                    head_dim.map(|hd| even_rotary(rotary_part(map, hd, 0.5)))
                } else {
                    rope
                },
                ..base(LayerStyle::Llama)
            }
        }
        // Aria (`AriaTextMoELayer`): top-k on the bf16 logits, then a softmax over the k; the
        // shared experts after the routed ones.
        "aria_text" => TrainingProfile {
            shared_expert: SharedExpertOrder::After,
            routing_weights_in_dtype: true,
            routing: Routing::TopKThenSoftmax {
                logits_in_dtype: true,
            },
            ..base(LayerStyle::Llama)
        },
        // Qwen2-MoE has Qwen3-MoE's routing (weights in the dtype, `norm_topk_prob` default
        // false), with a sigmoid-gated shared expert (the layout's; Qwen3-MoE has none).
        "qwen2_moe" | "qwen3_moe" => TrainingProfile {
            shared_expert: SharedExpertOrder::Before,
            routing_weights_in_dtype: true,
            topk_renormalized: map.get("norm_topk_prob").and_then(Value::as_bool) == Some(true),
            ..base(LayerStyle::Llama)
        },
        // Phi-3's residual dropouts (`resid_pdrop`) decide whether a checkpointed layer is
        // re-run whole (a dropout mask is its last saved tensor).
        "phi3" => TrainingProfile {
            hidden_dropout: on("resid_pdrop", 0.0),
            backward_traced: true,
            ..base(LayerStyle::Llama)
        },
        "gpt2" | "gpt-sw3" => TrainingProfile {
            attention_dropout: on("attn_pdrop", 0.1),
            hidden_dropout: on("resid_pdrop", 0.1),
            embedding_dropout: on("embd_pdrop", 0.1),
            rotary_dims: None,
            ..base(LayerStyle::Gpt2)
        },
        "gpt_neox" => {
            let r = head_dim.map(|hd| rotary_part(map, hd, num(map, "rotary_pct", 0.25)));
            TrainingProfile {
                hidden_dropout: on("hidden_dropout", 0.0),
                rotary_dims: r,
                parallel_residual: map.get("use_parallel_residual").and_then(Value::as_bool)
                    != Some(false),
                backward_traced: true,
                ..base(LayerStyle::GptNeox)
            }
        }
        "opt" => TrainingProfile {
            hidden_dropout: on("dropout", 0.1),
            rotary_dims: None,
            ..base(LayerStyle::Opt)
        },
        "bloom" => TrainingProfile {
            hidden_dropout: on("hidden_dropout", 0.0),
            rotary_dims: None,
            eager_only: true,
            ..base(LayerStyle::Bloom)
        },
        "falcon" => TrainingProfile {
            hidden_dropout: on("hidden_dropout", 0.0),
            ..base(LayerStyle::Falcon)
        },
        "starcoder2" => TrainingProfile {
            hidden_dropout: on("residual_dropout", 0.0),
            embedding_dropout: on("embedding_dropout", 0.0),
            ..base(LayerStyle::Starcoder2)
        },
        // `BertLMHeadModel` (transformers 5.24 `models/bert/modeling_bert.py`): the embeddings'
        // and every block's dropout is `hidden_dropout_prob`, the attention's
        // `attention_probs_dropout_prob` (both 0.1 by default).
        // Derived for its default `is_decoder: false` (bidirectional, no mask without padding).
        // RoBERTa's copies of the BERT layers (CamemBERT, XLM-R, Data2Vec-Text) number their
        // positions from the input ids; BERT-Generation has no token types or head transform,
        // ELECTRA's generator embeds at `embedding_size` and projects (the layout says both).
        // RoBERTa-PreLayerNorm, XLM-RoBERTa-XL and Megatron-BERT move the norms before
        // attention and the MLP and end the encoder in one; XLM-R-XL has no dropout after
        // the MLP, Megatron-BERT no SDPA attention and an all-ones mask of its own. (RemBERT's
        // head is not a transform of the layout: not derived.)
        "bert"
        | "roberta"
        | "camembert"
        | "xlm-roberta"
        | "data2vec-text"
        | "ernie"
        | "bert-generation"
        | "electra"
        | "roberta-prelayernorm"
        | "xlm-roberta-xl"
        | "megatron-bert"
            if map.get("is_decoder").and_then(Value::as_bool) != Some(true)
                && gelu(map, "hidden_act") =>
        {
            bert_family(model_type, &on, &base(LayerStyle::Bert))
        }
        "bart" | "mbart" | "plbart" | "marian" | "pegasus" | "blenderbot" | "blenderbot-small"
        | "mvp" | "trocr"
            if bart_family_derived(model_type, map) =>
        {
            bart_family(model_type, &on, &base(LayerStyle::Bert))
        }
        // `BioGptForCausalLM` (`modeling_biogpt.py`): mBART's pre-LayerNorm layers with
        // BERT's dropout keys (`hidden_dropout_prob`, `attention_probs_dropout_prob`, both
        // 0.1), no embedding LayerNorm, the position ids handed to every layer, and
        // transformers' `ForCausalLMLoss` (fp32 logits, shifted labels).
        "biogpt" if gelu(map, "hidden_act") => biogpt(&on, &base(LayerStyle::Bert)),
        // `XGLMForCausalLM` (`modeling_xglm.py`): pre-LayerNorm layers of BART's shape with a
        // sinusoidal buffer for positions, `dropout` and `attention_dropout` (0.1 each), its
        // own eager attention only (the masked scores clamped), `ForCausalLMLoss`.
        "xglm" if gelu(map, "activation_function") => TrainingProfile {
            attention_dropout: on("attention_dropout", 0.1),
            hidden_dropout: on("dropout", 0.1),
            embedding_dropout: on("dropout", 0.1),
            activation_dropout: on("activation_dropout", 0.0),
            rotary_dims: None,
            eager_only: true,
            scores_clamped: true,
            ..base(LayerStyle::Bert)
        },
        _ => return placed_norms(model_type, map, &base(LayerStyle::Llama)),
    });
    profile.filter(|p| p.style != LayerStyle::Llama || act_saves_input(map))
}

/// The llama-layer types that differ in their norms' code and placement and in
/// soft-capping (Gemma 1–3, `VaultGemma`, `OLMo` 2/3, `FlexOlmo`, EXAONE 4), from `base`
/// (llama's profile of this config); `None` for any other type.
fn placed_norms(
    model_type: &str,
    map: &Map<String, Value>,
    base: &TrainingProfile,
) -> Option<TrainingProfile> {
    let profile = match model_type {
        // Gemma (`modeling_gemma.py`): llama's layers with `(1 + w)` norms in fp32 and the
        // embeddings scaled by a `√d` tensor.
        "gemma" => TrainingProfile {
            backward_traced: true,
            ..gemma(base)
        },
        // Gemma 2: Gemma's norms around each block, the scores and logits soft-capped where
        // the config sets a cap (the class defaults do), no SDPA (`_supports_sdpa = False`).
        // Its backward was traced with both soft-cappings on.
        "gemma2" => {
            let p = TrainingProfile {
                block_norms: BlockNorms::Sandwich,
                eager_only: true,
                ..softcaps(map, true, &gemma(base))
            };
            TrainingProfile {
                backward_traced: p.attn_softcap && p.logit_softcap,
                ..p
            }
        }
        // VaultGemma (`modeling_vaultgemma.py`): Gemma 2's attention and soft-capping with
        // Gemma's pre-norm layers (no norm after a block); no SDPA.
        "vaultgemma" => TrainingProfile {
            eager_only: true,
            ..softcaps(map, true, &gemma(base))
        },
        // Gemma 3 (`modeling_gemma3.py` `Gemma3ForCausalLM`): Gemma 2's sandwich norms with
        // Gemma's per-head q/k norms (the layout's), SDPA, one rotary table per kind of
        // `layer_types` (each in the dtype), soft-capping only where the config sets a cap
        // (the class default is none).
        "gemma3_text" => TrainingProfile {
            block_norms: BlockNorms::Sandwich,
            rotary_tables: u64::try_from(layer_type_count(map).max(1)).unwrap_or(1),
            ..softcaps(map, false, &gemma(base))
        },
        // OLMo 2: a norm after each block only (the blocks read the residual stream), OLMo's
        // norm code, full-width q/k norms (the layout's), fp32 rotary tables.
        "olmo2" => TrainingProfile {
            backward_traced: true,
            ..olmo2(base)
        },
        // EXAONE 4 (`modeling_exaone4.py`): a llama norm after each block only (as OLMo 2's
        // placement), per-head q/k norms (the layout's), the rotary only on sliding layers.
        "exaone4" => TrainingProfile {
            block_norms: BlockNorms::Output,
            ..base.clone()
        },
        // OLMo 3: OLMo 2's layers, one fp32 rotary per kind of `layer_types`.
        "olmo3" => TrainingProfile {
            rotary_tables: u64::try_from(layer_type_count(map).max(1)).unwrap_or(1),
            ..olmo2(base)
        },
        // FlexOlmo: OLMo 2's layers with OLMoE's routing (weights cast to the dtype,
        // renormalised only with `norm_topk_prob`, default false).
        "flex_olmo" => TrainingProfile {
            routing_weights_in_dtype: true,
            topk_renormalized: map.get("norm_topk_prob").and_then(Value::as_bool) == Some(true),
            ..olmo2(base)
        },
        _ => return None,
    };
    Some(profile).filter(|_| act_saves_input(map))
}

/// Gemma's layer code: `(1 + w)` `RMSNorm`s in fp32, the embeddings scaled by a `√d` tensor.
fn gemma(base: &TrainingProfile) -> TrainingProfile {
    TrainingProfile {
        norm: NormCode::Gemma,
        embedding_normalizer: true,
        ..base.clone()
    }
}

/// Gemma 2's soft-capping: of the scores where `attn_logit_softcapping` is set, of the
/// logits where `final_logit_softcapping` is; an absent key takes the class's default (a cap
/// where `class_caps`: Gemma 2's and `VaultGemma`'s 50 and 30, Gemma 3's none).
fn softcaps(map: &Map<String, Value>, class_caps: bool, base: &TrainingProfile) -> TrainingProfile {
    let set = |k: &str| map.get(k).map_or(class_caps, |v| !v.is_null());
    TrainingProfile {
        attn_softcap: set("attn_logit_softcapping"),
        logit_softcap: set("final_logit_softcapping"),
        ..base.clone()
    }
}

/// `OLMo` 2's layer code: a norm after each block only, `OLMo`'s norm code, fp32 rotary
/// tables.
fn olmo2(base: &TrainingProfile) -> TrainingProfile {
    TrainingProfile {
        norm: NormCode::Olmo,
        block_norms: BlockNorms::Output,
        rotary_fp32: true,
        ..base.clone()
    }
}

/// The MLP's activation (`key`; the class default, GELU, when absent) is the exact `gelu`,
/// the one the BERT and BART layer code is derived for: it saves its input, where `gelu_new`
/// in Python keeps its temporaries and `ReLU` its output.
fn gelu(map: &Map<String, Value>, key: &str) -> bool {
    map.get(key)
        .and_then(Value::as_str)
        .is_none_or(|a| a == "gelu")
}

/// The encoder-decoders' `…ForCausalLM` (their decoder alone) is derived for the class's
/// layer code: a GELU MLP, no MVP prompts, `TrOCR`'s learned positions.
fn bart_family_derived(model_type: &str, map: &Map<String, Value>) -> bool {
    let gelu = gelu(map, "activation_function");
    let flag = |k: &str| map.get(k).and_then(Value::as_bool);
    gelu && match model_type {
        "mvp" => flag("use_prompt") != Some(true),
        "trocr" => flag("use_learned_position_embeddings") != Some(false),
        _ => true,
    }
}

/// `BartForCausalLM` and its copies (transformers 5.24 `modeling_bart.py`, `modeling_mbart.py`,
/// …): BART's attention (separate q/k/v, the eager softmax in the weights' dtype) with a
/// causal mask; post-`LayerNorm` blocks (BART, `PLBart`, Marian, Blenderbot-Small, MVP, `TrOCR`)
/// or pre-`LayerNorm` ones (`mBART`, Pegasus, Blenderbot); `dropout` on the embeddings and
/// after each block (0.1 by default), `attention_dropout` (0.1 for `PLBart`, else 0) and
/// `activation_dropout` (0); the loss is `CrossEntropyLoss` on the logits as they are, the
/// labels unshifted. The position ids are `arange(s)` (`[1, s]`), or `[b, s]` where the
/// position table expands them itself (MVP, `TrOCR`, which have no SDPA attention).
fn bart_family(
    model_type: &str,
    on: &dyn Fn(&str, f64) -> bool,
    base: &TrainingProfile,
) -> TrainingProfile {
    let eager_only = matches!(model_type, "mvp" | "trocr");
    TrainingProfile {
        attention_dropout: on(
            "attention_dropout",
            if model_type == "plbart" { 0.1 } else { 0.0 },
        ),
        hidden_dropout: on("dropout", 0.1),
        embedding_dropout: on("dropout", 0.1),
        activation_dropout: on("activation_dropout", 0.0),
        rotary_dims: None,
        position_ids: if eager_only {
            PositionIds::ArangeBatch
        } else {
            PositionIds::Arange
        },
        post_norm: !matches!(model_type, "mbart" | "pegasus" | "blenderbot"),
        loss_in_dtype: true,
        eager_only,
        ones_attention_mask: true,
        decoder_locals: true,
        embedding_norm_before_positions: model_type == "blenderbot-small",
        ..base.clone()
    }
}

/// BERT's layer code and its copies (the doc at `profile`'s arm).
fn bert_family(
    model_type: &str,
    on: &dyn Fn(&str, f64) -> bool,
    base: &TrainingProfile,
) -> TrainingProfile {
    TrainingProfile {
        attention_dropout: on("attention_probs_dropout_prob", 0.1),
        hidden_dropout: on("hidden_dropout_prob", 0.1),
        embedding_dropout: on("hidden_dropout_prob", 0.1),
        rotary_dims: None,
        position_ids: if matches!(
            model_type,
            "roberta"
                | "camembert"
                | "xlm-roberta"
                | "data2vec-text"
                | "roberta-prelayernorm"
                | "xlm-roberta-xl"
        ) {
            PositionIds::FromInputIds
        } else {
            PositionIds::Buffer
        },
        // The pre-LayerNorm copies: `LayerNorm` before attention and before the
        // MLP, one after the last layer.
        post_norm: !matches!(
            model_type,
            "roberta-prelayernorm" | "xlm-roberta-xl" | "megatron-bert"
        ),
        bidirectional: true,
        eager_only: model_type == "megatron-bert",
        ones_attention_mask: model_type == "megatron-bert",
        token_types_zeros: model_type == "megatron-bert",
        mlp_output_undropped: model_type == "xlm-roberta-xl",
        ..base.clone()
    }
}

/// `BioGptForCausalLM` (the doc at `profile`'s arm).
fn biogpt(on: &dyn Fn(&str, f64) -> bool, base: &TrainingProfile) -> TrainingProfile {
    TrainingProfile {
        attention_dropout: on("attention_probs_dropout_prob", 0.1),
        hidden_dropout: on("hidden_dropout_prob", 0.1),
        embedding_dropout: on("hidden_dropout_prob", 0.1),
        activation_dropout: on("activation_dropout", 0.0),
        rotary_dims: None,
        position_ids: PositionIds::Arange,
        ones_attention_mask: true,
        decoder_locals: true,
        layers_take_position_ids: true,
        ..base.clone()
    }
}
