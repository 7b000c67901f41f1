//! Multi-head latent attention (MLA) and DeepSeek's relatives: DeepSeek-V2/V3, `SarvamMLA`
//! (a `DeepseekV3ForCausalLM`), Mistral 4, GLM-4-MoE-Lite, `MiniCPM3`, Youtu and `LongCat-Flash`.
//! Each entry is the configuration class's defaults and the switches of its `modeling_*.py`
//! (transformers 5.24): an MLA block (`q_a_proj`/`q_a_layernorm`/`q_b_proj` or a full
//! `q_proj`, `kv_a_proj_with_mqa`, `kv_a_layernorm`, `kv_b_proj`, `o_proj`), two `RMSNorm`s
//! per layer, and either a `SwiGLU` MLP or DeepSeek's `…MoE` (router `d → E` without bias, the
//! `E` experts as `gate_up_proj`/`down_proj`, `n_shared_experts` shared experts as one MLP
//! of `moe_intermediate_size · n_shared_experts`).
//!
//! The [`Block`] entries are read through [`mla_block`], which only fills the MLA sizes'
//! class defaults that [`AttentionRule::Latent`] reads as required. DeepSeek-V3.2 and
//! GLM-MoE-DSA add the DSA indexer: its weights are layer extras, and the key it caches per
//! token widens the MLA cache (`LatentAttention::indexer_key_dim`). DeepSeek-V4 (compressed
//! sliding-window caches, hyper-connections) is not here.

use llmsize_core::Category;
use llmsize_core::expr::{Expr, Sym};
use llmsize_core::spec::{
    Attention, Extra, Ffn, LatentAttention, Layer, Mlp, ModelSpec, Moe, Norm,
};

use crate::error::ConfigError;
use crate::hf_config::decoder::{Decoder, mlp};
use crate::hf_config::family::{
    AttentionRule, Block, Family, LLAMA, LLAMA_MLP, MlpRule, MoeRule, NO, Reader, Shared, Size,
    Sparsity, Switch, key_or, read_block,
};
use crate::hf_config::family::{map_kinds, map_layers_by};
use crate::hf_config::raw::RawConfig;
use crate::hf_config::runs::Runs;
use crate::hf_config::{HeadChoice, architecture};
use llmsize_core::checked;

/// The class defaults of the MLA sizes, which [`AttentionRule::Latent`] reads as required.
struct MlaDefaults {
    kv_lora: u64,
    nope: u64,
    rope: u64,
    /// `v_head_dim`; `None`: `hidden_size // num_attention_heads` (`MiniCPM3Config`).
    v: Option<u64>,
    /// `hidden_size` and `num_attention_heads` defaults, for a derived `v_head_dim`.
    hidden: u64,
    heads: u64,
}

/// DeepSeek-V3's MLA sizes, shared by most of its copies.
const V3_MLA: MlaDefaults = MlaDefaults {
    kv_lora: 512,
    nope: 128,
    rope: 64,
    v: Some(128),
    hidden: 0,
    heads: 0,
};

/// Read a [`Block`] whose MLA sizes fall back to the class defaults when absent (or `null`):
/// the config is read through a copy holding those defaults, each recorded as an assumption.
fn mla_block(
    raw: &mut RawConfig<'_>,
    family: &Family,
    block: &Block,
    d: &MlaDefaults,
) -> Result<ModelSpec, ConfigError> {
    let reason = format!("absent; `{}` default", family.config_class);
    let v = if let Some(v) = d.v {
        v
    } else if raw.value("v_head_dim").is_some() {
        0
    } else {
        let hidden = raw.size_opt("hidden_size")?.unwrap_or(d.hidden);
        let heads = raw.size_opt("num_attention_heads")?.unwrap_or(d.heads);
        raw.derived_head_dim(hidden, "hidden_size", heads, "num_attention_heads")?
    };
    let mut map = raw.map.clone();
    let mut filled = Vec::new();
    for (key, value, symbol) in [
        ("kv_lora_rank", d.kv_lora, Sym::KvRank),
        ("qk_nope_head_dim", d.nope, Sym::NopeDim),
        ("qk_rope_head_dim", d.rope, Sym::RopeDim),
        ("v_head_dim", v, Sym::ValueDim),
    ] {
        if raw.value(key).is_none() {
            map.insert(key.to_owned(), value.into());
            let why = if d.v.is_none() && key == "v_head_dim" {
                format!("{reason}: `hidden_size // num_attention_heads`")
            } else {
                reason.clone()
            };
            raw.assume(key, value, &why);
            filled.push((key, symbol));
        }
    }
    let mut inner = raw.sibling(&map);
    let spec = read_block(&mut inner, family, block);
    raw.assumptions.append(&mut inner.assumptions);
    raw.sources.append(&mut inner.sources);
    for (key, symbol) in filled {
        raw.sources.insert(symbol, format!("{key} (default)"));
    }
    raw.read.borrow_mut().extend(inner.read.into_inner());
    let spec = spec?;
    if let Some(m) = &block.moe {
        // More dense layers than layers leaves no MoE layer: a config error, as before.
        if let Some(first) = m.sparsity.first_dense
            && let Some(key) = first.keys.first()
            && let Some(k) = raw.uint(key)?
            && k > spec.num_layers()
        {
            return Err(raw.invalid(
                key,
                &k.into(),
                &format!("at most `num_hidden_layers` ({})", spec.num_layers()),
            ));
        }
        // The shared width's source by its keys (`moe_intermediate_size·n_shared_experts`).
        if let Shared::Count(s) = m.shared
            && raw.sources.contains_key(&Sym::SharedFfn)
            && let (Some(w), Some(c)) = (m.expert_width.keys.first(), s.keys.first())
        {
            raw.sources.insert(Sym::SharedFfn, format!("{w}·{c}"));
        }
    }
    Ok(spec)
}

/// The MLA attention of `DeepseekV3Config` and its copies: `attention_bias` on `q_a_proj`,
/// `kv_a_proj_with_mqa` and `o_proj`.
const fn latent(q_lora_default: Option<u64>) -> AttentionRule {
    AttentionRule::Latent {
        q_lora_default,
        bias: Switch::Key("attention_bias", false),
    }
}

/// The MLP of DeepSeek-V3 and its copies: gated, never biased.
const PLAIN_MLP: MlpRule = MlpRule {
    up_bias: NO,
    down_bias: NO,
    ..LLAMA_MLP
};

/// DeepSeek-V3 (`modeling_deepseek_v3.py`): the first `first_k_dense_replace` layers dense,
/// the rest `DeepseekV3MoE` (its router's `e_score_correction_bias` is a buffer, not a
/// parameter).
const DEEPSEEK_V3: Block = Block {
    hidden: key_or(&["hidden_size"], 7168),
    layers: key_or(&["num_hidden_layers"], 61),
    heads: key_or(&["num_attention_heads"], 128),
    vocab: key_or(&["vocab_size"], 129_280),
    attention: latent(Some(1536)),
    mlp: MlpRule {
        width: key_or(&["intermediate_size"], 18432),
        ..PLAIN_MLP
    },
    moe: Some(V3_MOE),
    ..LLAMA
};

/// `SarvamMLAConfig` (`modular_sarvam_mla.py`): a `DeepseekV3Config` with its own defaults
/// (full `q_proj`, one dense layer) and the original checkpoint's key names
/// (`num_experts`, `num_shared_experts`), built as `DeepseekV3ForCausalLM`.
const SARVAM_MLA: Block = Block {
    hidden: key_or(&["hidden_size"], 4096),
    layers: key_or(&["num_hidden_layers"], 32),
    heads: key_or(&["num_attention_heads"], 64),
    vocab: key_or(&["vocab_size"], 262_144),
    attention: latent(None),
    mlp: MlpRule {
        width: key_or(&["intermediate_size"], 16384),
        ..PLAIN_MLP
    },
    moe: Some(MoeRule {
        experts: key_or(
            &["n_routed_experts", "num_experts", "num_local_experts"],
            128,
        ),
        top_k: key_or(&["num_experts_per_tok"], 8),
        expert_width: key_or(&["moe_intermediate_size"], 2048),
        correction_bias: NO,
        expert_bias: NO,
        shared: Shared::Count(key_or(&["n_shared_experts", "num_shared_experts"], 1)),
        shared_gate: false,
        sparsity: Sparsity {
            first_dense: Some(key_or(&["first_k_dense_replace"], 1)),
            step: None,
            dense_list: None,
        },
    }),
    ..LLAMA
};

/// Mistral 4 (`modeling_mistral4.py`): DeepSeek-V3's block with its own defaults; every
/// layer MoE by default (`first_k_dense_replace` 0).
const MISTRAL4: Block = Block {
    hidden: key_or(&["hidden_size"], 4096),
    layers: key_or(&["num_hidden_layers"], 36),
    heads: key_or(&["num_attention_heads"], 32),
    vocab: key_or(&["vocab_size"], 131_072),
    attention: latent(Some(1024)),
    mlp: MlpRule {
        width: key_or(&["intermediate_size"], 12288),
        ..PLAIN_MLP
    },
    moe: Some(MoeRule {
        experts: key_or(&["n_routed_experts", "num_local_experts"], 128),
        top_k: key_or(&["num_experts_per_tok"], 4),
        expert_width: key_or(&["moe_intermediate_size"], 2048),
        correction_bias: NO,
        expert_bias: NO,
        shared: Shared::Count(key_or(&["n_shared_experts"], 1)),
        shared_gate: false,
        sparsity: Sparsity {
            first_dense: Some(key_or(&["first_k_dense_replace"], 0)),
            step: None,
            dense_list: None,
        },
    }),
    ..LLAMA
};

/// DeepSeek-V2 (`modeling_deepseek_v2.py`): `mlp_bias` on the dense MLP and the shared
/// experts (not the routed ones), every layer MoE by default. `num_experts_per_tok` is
/// `None` in `DeepseekV2Config` (see [`deepseek_v2`]).
const DEEPSEEK_V2: Block = Block {
    hidden: key_or(&["hidden_size"], 4096),
    layers: key_or(&["num_hidden_layers"], 32),
    heads: key_or(&["num_attention_heads"], 32),
    vocab: key_or(&["vocab_size"], 102_400),
    attention: latent(Some(1536)),
    mlp: MlpRule {
        width: key_or(&["intermediate_size"], 11008),
        ..LLAMA_MLP
    },
    moe: Some(MoeRule {
        experts: key_or(&["n_routed_experts", "num_experts"], 64),
        top_k: key_or(&["num_experts_per_tok"], DEEPSEEK_V2_TOP_K),
        expert_width: key_or(&["moe_intermediate_size"], 1407),
        correction_bias: NO,
        expert_bias: NO,
        shared: Shared::Count(key_or(&["n_shared_experts"], 2)),
        shared_gate: false,
        sparsity: Sparsity {
            first_dense: Some(key_or(&["first_k_dense_replace"], 0)),
            step: None,
            dense_list: None,
        },
    }),
    tweak: Some(deepseek_v2),
    ..LLAMA
};

/// Experts per token of every DeepSeek-V2 checkpoint (V2, V2-Lite, V2.5), used when the
/// config leaves `num_experts_per_tok` at the class's `None`.
const DEEPSEEK_V2_TOP_K: u64 = 6;

/// DeepSeek-V2's changes to the block: `DeepseekV2MLP(intermediate_size = moe_intermediate_size
/// · n_shared_experts)` carries `mlp_bias` like the dense MLP; and `DeepseekV2Config` leaves
/// `num_experts_per_tok` `None` (transformers builds the router, whose `topk` then cannot
/// run), which no parameter depends on: FLOPs take the checkpoints' 6, said as such.
fn deepseek_v2(raw: &mut RawConfig<'_>, spec: &mut ModelSpec) -> Result<(), ConfigError> {
    let bias = raw.flag_or("mlp_bias", false, "absent; `DeepseekV2Config` default")?;
    map_kinds(spec, |layer| {
        if let Ffn::Moe(m) = &mut layer.ffn
            && let Some(s) = &mut m.shared
        {
            s.up_bias = bias;
            s.down_bias = bias;
        }
    });
    if raw.value("num_experts_per_tok").is_none() {
        let reason = "`None` in `DeepseekV2Config` (transformers' router cannot pick experts); \
                      DeepSeek-V2 checkpoints use 6, taken for FLOPs and active parameters only";
        for a in &mut raw.assumptions {
            if a.field == "num_experts_per_tok" {
                reason.clone_into(&mut a.reason);
            }
        }
        spec.warnings.push(format!(
            "`num_experts_per_tok` is not set: {reason}; parameters and memory do not depend on it"
        ));
    }
    Ok(())
}

/// GLM-4-MoE-Lite (`modeling_glm4_moe_lite.py`): DeepSeek-V3's block whose dense layers are
/// those `mlp_layer_types` names `"dense"` (default: the first only).
const GLM4_MOE_LITE: Block = Block {
    hidden: key_or(&["hidden_size"], 2048),
    layers: key_or(&["num_hidden_layers"], 47),
    heads: key_or(&["num_attention_heads"], 20),
    vocab: key_or(&["vocab_size"], 154_880),
    attention: latent(Some(768)),
    mlp: MlpRule {
        width: key_or(&["intermediate_size"], 10240),
        ..PLAIN_MLP
    },
    moe: Some(MoeRule {
        experts: key_or(&["n_routed_experts", "num_local_experts"], 64),
        top_k: key_or(&["num_experts_per_tok"], 4),
        expert_width: key_or(&["moe_intermediate_size"], 1536),
        correction_bias: NO,
        expert_bias: NO,
        shared: Shared::Count(key_or(&["n_shared_experts"], 1)),
        shared_gate: false,
        sparsity: Sparsity {
            first_dense: None,
            step: None,
            dense_list: None,
        },
    }),
    tweak: Some(mlp_layer_types_first_dense_1),
    ..LLAMA
};

/// `mlp_layer_types` of `Glm4MoeLiteConfig`: `["dense"] + ["sparse"] · (L − 1)` by default.
fn mlp_layer_types_first_dense_1(
    raw: &mut RawConfig<'_>,
    spec: &mut ModelSpec,
) -> Result<(), ConfigError> {
    mlp_layer_types(raw, spec, 1, 10240, "Glm4MoeLiteConfig")
}

/// Make the layers `mlp_layer_types` names `"dense"` a dense MLP of `intermediate_size`, the
/// `"sparse"` ones the block's MoE (`config.mlp_layer_types[layer_idx] == "sparse"`); without
/// the key, the first `first_dense` layers are dense.
fn mlp_layer_types(
    raw: &mut RawConfig<'_>,
    spec: &mut ModelSpec,
    first_dense: u64,
    width_default: u64,
    class: &str,
) -> Result<(), ConfigError> {
    let n = spec.num_layers();
    let sparse: Runs<bool> = if let Some(v) = raw.value("mlp_layer_types") {
        let list = v
            .as_array()
            .filter(|l| l.len() as u64 == n)
            .ok_or_else(|| raw.invalid("mlp_layer_types", v, &format!("{n} layer kinds")))?;
        let mut sparse = Runs::default();
        for t in list {
            match t.as_str() {
                Some("sparse") => sparse.push(true, 1),
                Some("dense") => sparse.push(false, 1),
                _ => return Err(raw.invalid("mlp_layer_types", t, "`dense` or `sparse`")),
            }
        }
        sparse
    } else {
        raw.assume(
            "mlp_layer_types",
            format!("{first_dense} dense, then sparse"),
            &format!("absent; `{class}` default"),
        );
        Runs::from_index(n, first_dense)
    };
    let hidden = spec.hidden_size;
    let dense = if sparse.any(|s| !s) {
        let reason = format!("absent; `{class}` default");
        let w = raw.size_or(
            &["intermediate_size"],
            llmsize_core::expr::Sym::Ffn,
            width_default,
            &reason,
        )?;
        Some(mlp(hidden, w, true, false))
    } else {
        None
    };
    map_layers_by(spec, &sparse, |layer, is_sparse| {
        let mut l = layer.clone();
        if !is_sparse && let Some(d) = dense {
            l.ffn = Ffn::Dense(d);
        }
        Ok(l)
    })
}

/// DeepSeek-V3.2 (`modeling_deepseek_v32.py`): DeepSeek-V3's block (always `q_a_proj`;
/// `mlp_bias` is read by the class but no module uses it) whose attention adds the DSA
/// indexer (see [`indexer`]); dense layers from `mlp_layer_types`, by default the first
/// `min(first_k_dense_replace, L)`.
const DEEPSEEK_V32: Block = Block {
    moe: Some(MoeRule {
        sparsity: Sparsity {
            first_dense: None,
            step: None,
            dense_list: None,
        },
        ..V3_MOE
    }),
    tweak: Some(deepseek_v32),
    ..DEEPSEEK_V3
};

/// DeepSeek-V3's `MoeRule`.
const V3_MOE: MoeRule = MoeRule {
    experts: key_or(&["n_routed_experts", "num_local_experts"], 256),
    top_k: key_or(&["num_experts_per_tok"], 8),
    expert_width: key_or(&["moe_intermediate_size"], 2048),
    correction_bias: NO,
    expert_bias: NO,
    shared: Shared::Count(key_or(&["n_shared_experts"], 1)),
    shared_gate: false,
    sparsity: Sparsity {
        first_dense: Some(key_or(&["first_k_dense_replace"], 3)),
        step: None,
        dense_list: None,
    },
};

fn deepseek_v32(raw: &mut RawConfig<'_>, spec: &mut ModelSpec) -> Result<(), ConfigError> {
    dsa(raw, spec, "DeepseekV32Config", 18432, 64, false)
}

/// GLM-MoE-DSA (`modeling_glm_moe_dsa.py`): DeepSeek-V3.2's block with GLM's sizes, where
/// only the layers `indexer_types` names `"full"` build an indexer (`"shared"` ones reuse
/// the previous layer's top-k).
const GLM_MOE_DSA: Block = Block {
    hidden: key_or(&["hidden_size"], 6144),
    layers: key_or(&["num_hidden_layers"], 78),
    heads: key_or(&["num_attention_heads"], 64),
    vocab: key_or(&["vocab_size"], 154_880),
    attention: latent(Some(2048)),
    mlp: MlpRule {
        width: key_or(&["intermediate_size"], 12288),
        ..PLAIN_MLP
    },
    moe: Some(MoeRule {
        experts: key_or(
            &["n_routed_experts", "num_experts", "num_local_experts"],
            256,
        ),
        sparsity: Sparsity {
            first_dense: None,
            step: None,
            dense_list: None,
        },
        ..V3_MOE
    }),
    tweak: Some(glm_moe_dsa),
    ..LLAMA
};

fn glm_moe_dsa(raw: &mut RawConfig<'_>, spec: &mut ModelSpec) -> Result<(), ConfigError> {
    dsa(raw, spec, "GlmMoeDsaConfig", 12288, 32, true)
}

/// DeepSeek Sparse Attention: `mlp_layer_types` (default: the first
/// `min(first_k_dense_replace, L)` dense), and the indexer of each indexed layer.
fn dsa(
    raw: &mut RawConfig<'_>,
    spec: &mut ModelSpec,
    class: &str,
    width_default: u64,
    heads_default: u64,
    by_indexer_types: bool,
) -> Result<(), ConfigError> {
    let reason = format!("absent; `{class}` default");
    let first = if raw.value("mlp_layer_types").is_some() {
        0
    } else {
        raw.uint("first_k_dense_replace")?.unwrap_or_else(|| {
            raw.assume("first_k_dense_replace", 3, &reason);
            3
        })
    };
    mlp_layer_types(raw, spec, first, width_default, class)?;
    let n = spec.num_layers();
    let full: Runs<bool> = if by_indexer_types {
        indexer_types(raw, n)?
    } else {
        Runs::uniform(true, n)
    };
    let heads = raw.size_or(
        &["index_n_heads"],
        Sym::Named("n_idx"),
        heads_default,
        &reason,
    )?;
    let dim = raw.size_or(&["index_head_dim"], Sym::Named("d_idx"), 128, &reason)?;
    let extras = indexer(raw, spec, heads, dim)?;
    map_layers_by(spec, &full, |layer, on| {
        let mut l = layer.clone();
        if *on {
            l.extras.extend(extras.iter().cloned());
            // The indexer caches one key of `index_head_dim` per token beside the latent.
            if let Attention::Latent(a) = &mut l.attention {
                a.indexer_key_dim = Some(dim);
            }
        }
        Ok(l)
    })
}

/// `indexer_types` of `GlmMoeDsaConfig` (`"full"` builds an indexer): the key, else
/// `index_topk_pattern` (`"F"`/`"S"` per layer), else `index_topk_freq` and
/// `index_skip_topk_offset`: layer `i` is full when `max(i − offset + 1, 0) % freq == 0`.
pub(super) fn indexer_types(raw: &mut RawConfig<'_>, n: u64) -> Result<Runs<bool>, ConfigError> {
    let list = |key: &str, v: &serde_json::Value, items: Vec<Option<bool>>| {
        if items.len() as u64 == n && items.iter().all(Option::is_some) {
            Ok(Runs::from_list(items.into_iter().map(|x| x == Some(true))))
        } else {
            Err(raw.invalid(key, v, &format!("{n} entries, `full` or `shared`")))
        }
    };
    if let Some(v) = raw.value("indexer_types") {
        let items = v
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|t| match t.as_str() {
                        Some("full") => Some(true),
                        Some("shared") => Some(false),
                        _ => None,
                    })
                    .collect()
            })
            .unwrap_or_default();
        return list("indexer_types", v, items);
    }
    if let Some(v) = raw.value("index_topk_pattern") {
        let items = match v {
            serde_json::Value::String(p) => p
                .chars()
                .map(|c| match c {
                    'F' => Some(true),
                    'S' => Some(false),
                    _ => None,
                })
                .collect(),
            serde_json::Value::Array(a) => a
                .iter()
                .map(|t| match t.as_str() {
                    Some("full") => Some(true),
                    Some("shared") => Some(false),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        };
        return list("index_topk_pattern", v, items);
    }
    let freq = raw.uint("index_topk_freq")?.unwrap_or(1).max(1);
    let offset = raw.uint("index_skip_topk_offset")?.unwrap_or(2);
    Ok(topk_full(n, freq, offset))
}

/// Layer `i` is full when `max(i + 1 − offset, 0) % freq == 0` (`freq ≥ 1`): the first
/// `offset` layers (where the difference is 0), then every `freq`-th from layer `offset`
/// on (`i + 1 − offset = freq, 2·freq, …`).
pub(crate) fn topk_full(n: u64, freq: u64, offset: u64) -> Runs<bool> {
    let head = n.min(offset);
    let mut full = Runs::uniform(true, head);
    full.append(Runs::every(n.saturating_sub(head), freq));
    full
}

/// The DSA indexer (`DeepseekV32Indexer`): `wq_b` `q_lora_rank → n_idx·d_idx`, `wk`
/// `d → d_idx`, `k_norm` a `LayerNorm(d_idx)` with bias, `weights_proj` `d → n_idx`; all
/// attention. Its key cache (`d_idx` per token and layer) is not in the spec's MLA cache.
pub(super) fn indexer(
    raw: &RawConfig<'_>,
    spec: &ModelSpec,
    heads: u64,
    dim: u64,
) -> Result<Vec<Extra>, ConfigError> {
    let hidden = spec.hidden_size;
    let q_lora = spec
        .layer_kinds()
        .find_map(|l| match &l.attention {
            Attention::Latent(a) => a.q_lora_rank,
            _ => None,
        })
        .ok_or_else(|| {
            raw.invalid(
                "q_lora_rank",
                &serde_json::Value::Null,
                "a positive integer (the DSA indexer reads the query latent)",
            )
        })?;
    let d = || Expr::sym(Sym::Hidden, hidden);
    let n = || Expr::sym(Sym::Named("n_idx"), heads);
    let k = || Expr::sym(Sym::Named("d_idx"), dim);
    let part = "indexer";
    let c = Category::Attention;
    // Its scores only pick keys (`topk` indices, an additive 0/−inf mask): no gradient
    // reaches its weights (`DeepseekV32Indexer`, `GlmMoeDsaIndexer`).
    Ok(vec![
        Extra::linear(
            "self_attn.indexer.wq_b.weight",
            part,
            c,
            Expr::sym(Sym::QueryRank, q_lora),
            Expr::product(vec![n(), k()]),
        )
        .gradless(),
        Extra::linear("self_attn.indexer.wk.weight", part, c, d(), k()).gradless(),
        Extra::vector("self_attn.indexer.k_norm.weight", part, c, k()).gradless(),
        Extra::vector("self_attn.indexer.k_norm.bias", part, c, k()).gradless(),
        Extra::linear("self_attn.indexer.weights_proj.weight", part, c, d(), n()).gradless(),
    ])
}

/// `MiniCPM3` (`modeling_minicpm3.py`): MLA with a Llama MLP (`mlp_bias`), tied; its
/// embedding and residual scales are not parameters.
const MINICPM3: Block = Block {
    hidden: key_or(&["hidden_size"], 2560),
    layers: key_or(&["num_hidden_layers"], 62),
    heads: key_or(&["num_attention_heads"], 40),
    vocab: key_or(&["vocab_size"], 73448),
    attention: latent(Some(768)),
    mlp: MlpRule {
        width: key_or(&["intermediate_size"], 6400),
        ..LLAMA_MLP
    },
    tie: true,
    ..LLAMA
};

/// Youtu (`modeling_youtu.py`): MLA with an unbiased `SwiGLU` MLP, tied.
const YOUTU: Block = Block {
    hidden: key_or(&["hidden_size"], 2048),
    layers: key_or(&["num_hidden_layers"], 32),
    heads: key_or(&["num_attention_heads"], 16),
    vocab: key_or(&["vocab_size"], 128_256),
    attention: latent(Some(1536)),
    mlp: MlpRule {
        width: key_or(&["intermediate_size"], 6144),
        ..PLAIN_MLP
    },
    tie: true,
    ..LLAMA
};

/// The MLA keys of a configuration class with its defaults.
struct MlaKeys {
    heads: Size,
    /// `q_lora_rank` when absent; `None`: a full `q_proj`.
    q_lora: Option<u64>,
    kv_lora: u64,
    nope: u64,
    rope: u64,
    v: u64,
}

/// Read an MLA block (`modeling_deepseek_v3.py`'s `DeepseekV3Attention` and its copies), every
/// size with the class default; `attention_bias` on `q_a_proj`, `kv_a_proj_with_mqa`, `o_proj`.
fn read_mla(
    r: &mut Reader<'_, '_>,
    hidden: u64,
    k: &MlaKeys,
) -> Result<LatentAttention, ConfigError> {
    let q_lora_rank = if r.raw.has("q_lora_rank") {
        let q = r.raw.size_opt("q_lora_rank")?;
        if q.is_some() {
            r.raw.source(Sym::QueryRank, "q_lora_rank");
        }
        q
    } else if let Some(d) = k.q_lora {
        Some(r.size(key_or(&["q_lora_rank"], d), Sym::QueryRank)?)
    } else {
        let reason = format!("absent; `{}` default", r.class);
        r.raw.assume("q_lora_rank", "null", &reason);
        None
    };
    Ok(LatentAttention {
        hidden,
        num_heads: r.size(k.heads, Sym::Heads)?,
        q_lora_rank,
        kv_lora_rank: r.size(key_or(&["kv_lora_rank"], k.kv_lora), Sym::KvRank)?,
        qk_nope_head_dim: r.size(key_or(&["qk_nope_head_dim"], k.nope), Sym::NopeDim)?,
        qk_rope_head_dim: r.size(key_or(&["qk_rope_head_dim"], k.rope), Sym::RopeDim)?,
        v_head_dim: r.size(key_or(&["v_head_dim"], k.v), Sym::ValueDim)?,
        bias: r.switch(Switch::Key("attention_bias", false))?,
        indexer_key_dim: None,
        category: llmsize_core::Category::Attention,
    })
}

/// `RMSNorm` over `d`.
fn rms(d: u64) -> Norm {
    Norm::rms_norm(d)
}

/// `LongCat-Flash` (`modeling_longcat_flash.py`): each of the `num_layers` decoder layers holds
/// two MLA sublayers (`self_attn.0/1`, cached as layers `2i` and `2i + 1`), two dense MLPs of
/// `ffn_hidden_size` (`mlps.0/1`), four norms, and one "shortcut" MoE fed from the first
/// sublayer. The MoE routes over `n_routed_experts + zero_expert_num` (the zero experts are
/// identities): its router `classifier` is `d → E + Z`, and `experts.gate_up_proj` is built
/// for all `E + Z` experts while `down_proj` holds only the `E` real ones. Here each decoder
/// layer is two layers: the first carries the MoE (with `mlps.0` and the zero experts' rows as
/// extras), the second `mlps.1`.
fn longcat_flash(
    raw: &mut RawConfig<'_>,
    family: &Family,
    _head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let mut r = Reader {
        raw,
        class: family.config_class,
    };
    let hidden = r.size(key_or(&["hidden_size"], 6144), Sym::Hidden)?;
    let vocab = r.size(key_or(&["vocab_size"], 131_072), Sym::Vocab)?;
    // `num_hidden_layers` is a property, `2 · num_layers`; its setter halves.
    let layers = match (
        r.raw.size_opt("num_layers")?,
        r.raw.size_opt("num_hidden_layers")?,
    ) {
        (Some(n), _) => {
            r.raw.source(Sym::Layers, "num_layers");
            n
        }
        (None, Some(n)) if n >= 2 => {
            r.raw.source(Sym::Layers, "num_hidden_layers / 2");
            n / 2
        }
        _ => r.size(key_or(&["num_layers"], 28), Sym::Layers)?,
    };
    let n = r.raw.bound_layers("num_layers", layers)?;
    let attention = read_mla(
        &mut r,
        hidden,
        &MlaKeys {
            heads: key_or(&["num_attention_heads"], 64),
            q_lora: Some(1536),
            kv_lora: 512,
            nope: 128,
            rope: 64,
            v: 128,
        },
    )?;
    if attention.q_lora_rank.is_none() {
        let v = serde_json::Value::Null;
        return Err(r.raw.invalid(
            "q_lora_rank",
            &v,
            "a positive integer (LongCat-Flash always has `q_a_proj`)",
        ));
    }
    // `q_b_proj` is `n_h · qk_head_dim`, a key of its own defaulting to `nope + rope`.
    let qk = r.raw.check(checked::add(
        "qk_nope_head_dim + qk_rope_head_dim",
        attention.qk_nope_head_dim,
        attention.qk_rope_head_dim,
    ))?;
    if let Some(q) = r.raw.size_opt("qk_head_dim")?
        && q != qk
    {
        return Err(r.raw.invalid(
            "qk_head_dim",
            &q.into(),
            &format!("`qk_nope_head_dim + qk_rope_head_dim` ({qk})"),
        ));
    }
    let ffn = r.size(
        key_or(&["ffn_hidden_size", "intermediate_size"], 12288),
        Sym::Ffn,
    )?;
    let expert_ffn = r.size(
        key_or(&["expert_ffn_hidden_size", "moe_intermediate_size"], 2048),
        Sym::ExpertFfn,
    )?;
    let experts = r.size(
        key_or(&["n_routed_experts", "num_local_experts"], 512),
        Sym::Experts,
    )?;
    let top_k = r.size(key_or(&["moe_topk", "num_experts_per_tok"], 12), Sym::TopK)?;
    // `config.zero_expert_num or 0`: an explicit `null` is none.
    let zero = if r.raw.has("zero_expert_num") && r.raw.value("zero_expert_num").is_none() {
        0
    } else {
        r.count(key_or(&["zero_expert_num"], 256))?
    };
    let router_bias = r.switch(Switch::Key("router_bias", false))?;
    let tied = r.switch(Switch::Key("tie_word_embeddings", false))?;
    let dense = mlp(hidden, ffn, true, false);
    let d = || Expr::sym(Sym::Hidden, hidden);
    let f = || Expr::sym(Sym::Ffn, ffn);
    let mut extras = vec![
        Extra::linear("mlps.0.gate_proj.weight", "mlps.0", Category::Ffn, d(), f()),
        Extra::linear("mlps.0.up_proj.weight", "mlps.0", Category::Ffn, d(), f()),
        Extra::linear("mlps.0.down_proj.weight", "mlps.0", Category::Ffn, f(), d()),
    ];
    if zero > 0 {
        let z = || Expr::sym(Sym::Named("zero_experts"), zero);
        extras.push(Extra::linear(
            "mlp.router.classifier.weight (zero experts)",
            "router",
            Category::MoeRouter,
            d(),
            z(),
        ));
        if router_bias {
            extras.push(Extra::vector(
                "mlp.router.classifier.bias (zero experts)",
                "router",
                Category::MoeRouter,
                z(),
            ));
        }
        extras.push(Extra::table(
            "mlp.experts.gate_up_proj (zero experts)",
            "experts",
            Category::MoeExperts,
            Expr::product(vec![
                z(),
                Expr::Lit(2),
                Expr::sym(Sym::ExpertFfn, expert_ffn),
            ]),
            d(),
        ));
    }
    let first = Layer {
        attention: Attention::Latent(attention.clone()),
        cross_attention: None,
        ffn: Ffn::Moe(Moe {
            num_experts: experts,
            experts_per_token: top_k,
            expert: Mlp {
                hidden,
                intermediate: expert_ffn,
                gated: true,
                up_bias: false,
                down_bias: false,
            },
            router_bias: if router_bias {
                llmsize_core::spec::RouterBias::Linear
            } else {
                llmsize_core::spec::RouterBias::None
            },
            router: true,
            shared: None,
            shared_gate: false,
        }),
        norms: vec![rms(hidden); 2],
        sliding_window: None,
        extras,
        state: None,
    };
    let second = Layer {
        attention: Attention::Latent(attention),
        cross_attention: None,
        ffn: Ffn::Dense(dense),
        norms: vec![rms(hidden); 2],
        sliding_window: None,
        extras: Vec::new(),
        state: None,
    };
    // Each of the `num_layers` modules holds two decoder layers: the MoE one, then the dense.
    let both = r.raw.check(checked::mul("2·num_layers", n, 2))?;
    let max = llmsize_core::limits::MAX_LAYERS;
    if both > max {
        let units = |n| llmsize_core::units::thousands(n);
        return Err(r.raw.invalid(
            "num_layers",
            &n.into(),
            &format!(
                "at most {} (each holds two decoder layers; llmsize's bound is {} layers)",
                units(max / 2),
                units(max)
            ),
        ));
    }
    let stack = Runs::periodic(both, &[(true, 1), (false, 1)])
        .layers(|&moe| if moe { first.clone() } else { second.clone() });
    Ok(Decoder::new(
        family.model_type,
        architecture(r.raw, family.architecture),
        hidden,
        vocab,
        stack,
        Some(rms(hidden)),
        tied,
    )
    .into_spec())
}

/// The entries of this file.
pub(crate) const FAMILIES: &[Family] = &[
    Family::code(
        "deepseek_v2",
        "DeepseekV2Config",
        "DeepseekV2ForCausalLM",
        |r, f, _| mla_block(r, f, &DEEPSEEK_V2, &V3_MLA),
    ),
    Family::code(
        "deepseek_v3",
        "DeepseekV3Config",
        "DeepseekV3ForCausalLM",
        |r, f, _| mla_block(r, f, &DEEPSEEK_V3, &V3_MLA),
    ),
    // Kimi K2's `config.json` says `kimi_k2`, a type transformers 5.24 does not have: its
    // repository's remote code is DeepSeek-V3's (`DeepseekV3Config`, `DeepseekV3ForCausalLM`),
    // and Moonshot's deployment guide says the type only lets engines tell the two apart
    // ("change `model_type` to `deepseek_v3`" where an engine does not know it).
    Family::code(
        "kimi_k2",
        "DeepseekV3Config",
        "DeepseekV3ForCausalLM",
        |r, f, _| mla_block(r, f, &DEEPSEEK_V3, &V3_MLA),
    ),
    Family::code(
        "sarvam_mla",
        "SarvamMLAConfig",
        "DeepseekV3ForCausalLM",
        |r, f, _| mla_block(r, f, &SARVAM_MLA, &V3_MLA),
    ),
    Family::code(
        "mistral4",
        "Mistral4Config",
        "Mistral4ForCausalLM",
        |r, f, _| {
            mla_block(
                r,
                f,
                &MISTRAL4,
                &MlaDefaults {
                    kv_lora: 256,
                    nope: 64,
                    ..V3_MLA
                },
            )
        },
    ),
    Family::code(
        "glm4_moe_lite",
        "Glm4MoeLiteConfig",
        "Glm4MoeLiteForCausalLM",
        |r, f, _| {
            mla_block(
                r,
                f,
                &GLM4_MOE_LITE,
                &MlaDefaults {
                    nope: 192,
                    v: Some(256),
                    ..V3_MLA
                },
            )
        },
    ),
    Family::code(
        "minicpm3",
        "MiniCPM3Config",
        "MiniCPM3ForCausalLM",
        |r, f, _| {
            mla_block(
                r,
                f,
                &MINICPM3,
                &MlaDefaults {
                    kv_lora: 256,
                    nope: 64,
                    rope: 32,
                    v: None,
                    hidden: 2560,
                    heads: 40,
                },
            )
        },
    ),
    Family::code("youtu", "YoutuConfig", "YoutuForCausalLM", |r, f, _| {
        mla_block(r, f, &YOUTU, &V3_MLA)
    }),
    Family::code(
        "longcat_flash",
        "LongcatFlashConfig",
        "LongcatFlashForCausalLM",
        longcat_flash,
    ),
    Family::code(
        "deepseek_v32",
        "DeepseekV32Config",
        "DeepseekV32ForCausalLM",
        |r, f, _| mla_block(r, f, &DEEPSEEK_V32, &V3_MLA),
    ),
    Family::code(
        "glm_moe_dsa",
        "GlmMoeDsaConfig",
        "GlmMoeDsaForCausalLM",
        |r, f, _| {
            mla_block(
                r,
                f,
                &GLM_MOE_DSA,
                &MlaDefaults {
                    nope: 192,
                    v: Some(256),
                    ..V3_MLA
                },
            )
        },
    ),
];
