//! Multi-head latent attention (MLA) and DeepSeek's relatives: DeepSeek-V2/V3, `SarvamMLA`
//! (a `DeepseekV3ForCausalLM`), Mistral 4, GLM-4-MoE-Lite, `MiniCPM3` and Youtu. Each entry is
//! the configuration class's defaults and the switches of its `modeling_*.py`
//! (transformers 5.24): an MLA block (`q_a_proj`/`q_a_layernorm`/`q_b_proj` or a full
//! `q_proj`, `kv_a_proj_with_mqa`, `kv_a_layernorm`, `kv_b_proj`, `o_proj`), two `RMSNorm`s
//! per layer, and either a `SwiGLU` MLP or DeepSeek's `…MoE` (router `d → E` without bias, the
//! `E` experts as `gate_up_proj`/`down_proj`, `n_shared_experts` shared experts as one MLP
//! of `moe_intermediate_size · n_shared_experts`).

use llmsize_core::spec::{Ffn, Layer, Layers, ModelSpec};

use crate::error::ConfigError;
use crate::hf_config::decoder::mlp;
use crate::hf_config::family::{
    AttentionRule, Block, Family, LLAMA, LLAMA_MLP, MlpRule, MoeRule, NO, Read, Shared, Sparsity,
    Switch, key_or,
};
use crate::hf_config::raw::RawConfig;

/// Rebuild every stack's layers through `f` (a layer and its index), keeping runs.
fn map_layers(
    spec: &mut ModelSpec,
    mut f: impl FnMut(&Layer, u64) -> Result<Layer, ConfigError>,
) -> Result<(), ConfigError> {
    for stack in &mut spec.stacks {
        let mut out = Layers::new();
        for run in stack.layers.runs() {
            if let Some(kind) = stack.layers.kinds().get(run.kind) {
                for i in run.range() {
                    out.push(f(kind, i)?);
                }
            }
        }
        stack.layers = out;
    }
    Ok(())
}

/// Rebuild every stack's layers through `f`, one call per run (no per-layer work).
fn map_kinds(spec: &mut ModelSpec, mut f: impl FnMut(&mut Layer)) {
    for stack in &mut spec.stacks {
        let mut out = Layers::new();
        for run in stack.layers.runs() {
            if let Some(kind) = stack.layers.kinds().get(run.kind) {
                let mut layer = kind.clone();
                f(&mut layer);
                out.push_run(layer, run.count);
            }
        }
        stack.layers = out;
    }
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
    moe: Some(MoeRule {
        experts: key_or(&["n_routed_experts", "num_local_experts"], 256),
        top_k: key_or(&["num_experts_per_tok"], 8),
        expert_width: key_or(&["moe_intermediate_size"], 2048),
        router_bias: NO,
        expert_bias: NO,
        shared: Shared::Count(key_or(&["n_shared_experts"], 1)),
        shared_gate: false,
        sparsity: Sparsity {
            first_dense: Some(key_or(&["first_k_dense_replace"], 3)),
            step: None,
            dense_list: None,
        },
    }),
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
        experts: key_or(&["n_routed_experts", "num_experts", "num_local_experts"], 128),
        top_k: key_or(&["num_experts_per_tok"], 8),
        expert_width: key_or(&["moe_intermediate_size"], 2048),
        router_bias: NO,
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
        router_bias: NO,
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
        router_bias: NO,
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
        router_bias: NO,
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
    let sparse: Vec<bool> = match raw.value("mlp_layer_types") {
        Some(v) => {
            let list = v
                .as_array()
                .filter(|l| l.len() as u64 == n)
                .ok_or_else(|| raw.invalid("mlp_layer_types", v, &format!("{n} layer kinds")))?;
            list.iter()
                .map(|t| match t.as_str() {
                    Some("sparse") => Ok(true),
                    Some("dense") => Ok(false),
                    _ => Err(raw.invalid("mlp_layer_types", t, "`dense` or `sparse`")),
                })
                .collect::<Result<_, _>>()?
        }
        None => {
            raw.assume(
                "mlp_layer_types",
                format!("{first_dense} dense, then sparse"),
                &format!("absent; `{class}` default"),
            );
            (0..n).map(|i| i >= first_dense).collect()
        }
    };
    let hidden = spec.hidden_size;
    let dense = if sparse.iter().any(|s| !s) {
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
    map_layers(spec, |layer, i| {
        let mut l = layer.clone();
        let is_sparse = sparse.get(usize::try_from(i).unwrap_or(usize::MAX)) == Some(&true);
        if !is_sparse && let Some(d) = dense {
            l.ffn = Ffn::Dense(d);
        }
        Ok(l)
    })
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

/// The entries of this file.
pub(crate) const FAMILIES: &[Family] = &[
    Family {
        model_type: "deepseek_v2",
        config_class: "DeepseekV2Config",
        architecture: "DeepseekV2ForCausalLM",
        read: Read::Block(&DEEPSEEK_V2),
    },
    Family {
        model_type: "deepseek_v3",
        config_class: "DeepseekV3Config",
        architecture: "DeepseekV3ForCausalLM",
        read: Read::Block(&DEEPSEEK_V3),
    },
    Family {
        model_type: "sarvam_mla",
        config_class: "SarvamMLAConfig",
        architecture: "DeepseekV3ForCausalLM",
        read: Read::Block(&SARVAM_MLA),
    },
    Family {
        model_type: "mistral4",
        config_class: "Mistral4Config",
        architecture: "Mistral4ForCausalLM",
        read: Read::Block(&MISTRAL4),
    },
    Family {
        model_type: "glm4_moe_lite",
        config_class: "Glm4MoeLiteConfig",
        architecture: "Glm4MoeLiteForCausalLM",
        read: Read::Block(&GLM4_MOE_LITE),
    },
    Family {
        model_type: "minicpm3",
        config_class: "MiniCPM3Config",
        architecture: "MiniCPM3ForCausalLM",
        read: Read::Block(&MINICPM3),
    },
    Family {
        model_type: "youtu",
        config_class: "YoutuConfig",
        architecture: "YoutuForCausalLM",
        read: Read::Block(&YOUTU),
    },
];
