//! What a model type's record says beyond shapes: how its code names its modules, what peft
//! does with them, and which runtime rules apply to it.
//!
//! Core never looks at a `model_type` string: the adapter that reads a type copies these
//! typed facts from the type's one record (`llmsize-adapters`, `hf_config::facts`) onto the
//! spec, and LoRA, the quantizers' module paths and the llama.cpp cache read them there. A new
//! model type therefore changes one record, not a `match` in each consumer.

use crate::layout::{Tensor, TensorKind};
use crate::spec::ModelSpec;

/// The facts of one model type; [`TypeFacts::NONE`] for a type with no record (a model
/// described by flags), which means llama's module names and no runtime rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TypeFacts {
    /// The type's module names for its linear layers where they differ from llama's
    /// ([`LLAMA_MODULES`]), as `modeling_*.py` names them: peft's suffix match and the
    /// Hugging Face quantizers' module lists see these. The fused ones (`gate_up_proj`) name
    /// two kinds alike, which makes them one module.
    pub modules: &'static [(TensorKind, &'static str)],
    /// The module names peft 0.21's `LoraConfig()` targets when `target_modules` is not given
    /// (`TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING`); `None` where peft has no
    /// default and raises `Please specify target_modules`.
    pub peft_default: Option<&'static [&'static str]>,
    /// How peft converts the type's transformers-5 MoE into parameter targets; `None` where
    /// it does not (its routers and experts are then out of reach of module names).
    pub moe_conversion: Option<MoeConversion>,
    /// The MoE router is an `nn.Linear` (all-linear reaches it), not a parameter of its own
    /// module (`TopKRouter.weight`).
    pub linear_router: bool,
    /// The llama.cpp architecture the type converts to keeps a sliding-window cache
    /// (`swa_type` set in `load_hparams`, `src/llama-model.cpp`); otherwise llama.cpp runs its
    /// sliding layers over the whole context.
    pub llama_cpp_swa: bool,
    /// What of the type's running llmsize does not model (Reformer's cache of past hidden
    /// states and hash buckets, its LSH attention): memory and FLOPs refuse the type naming
    /// it, rather than answer a figure that leaves it out. Its parameters are still exact.
    pub unmodelled: Option<&'static str>,
    /// The MoE router's weight is created in fp32 (`nn.Parameter(torch.zeros(E, d,
    /// dtype=torch.float32))` in DeepSeek-V3's `TopkRouter` and the types that copy it) and
    /// reads `hidden.float()`: the weight and its gradient stay fp32 under a bf16 model, and
    /// a trained router saves that fp32 copy of its input.
    pub router_fp32: bool,
}

impl TypeFacts {
    /// No record: llama's names, no peft default, no conversion, no runtime rule.
    pub const NONE: TypeFacts = TypeFacts {
        modules: &[],
        peft_default: None,
        moe_conversion: None,
        linear_router: false,
        llama_cpp_swa: false,
        unmodelled: None,
        router_fp32: false,
    };
}

/// `Ok` where memory and FLOPs are modelled for the spec's type; else the refusal that names
/// what is not.
pub fn modelled(spec: &crate::ModelSpec) -> Result<(), crate::SpecError> {
    match spec.facts.unmodelled {
        None => Ok(()),
        Some(what) => Err(crate::SpecError::NotModelled {
            model_type: spec.model_type.clone(),
            what: what.to_owned(),
        }),
    }
}

impl Default for TypeFacts {
    fn default() -> Self {
        TypeFacts::NONE
    }
}

/// How peft converts a transformers-5 MoE (`_MOE_TARGET_MODULE_MAPPING`): the v4 module names
/// it turns into parameter targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MoeConversion {
    /// The router's v4 module name (`gate` → the parameter `gate.weight`).
    pub router: &'static str,
    /// The experts' v4 gate and up matrices, fused into `gate_up_proj`.
    pub gate_up: [&'static str; 2],
    /// The experts' v4 down matrix, `down_proj`.
    pub down: &'static str,
}

impl MoeConversion {
    /// transformers' `mixtral` conversion pattern (`w1`, `w3`, `w2`).
    pub const MIXTRAL: MoeConversion = MoeConversion {
        router: "gate",
        gate_up: ["w1", "w3"],
        down: "w2",
    };
    /// transformers' `qwen2_moe` conversion pattern (`gate_proj`, `up_proj`, `down_proj`).
    pub const QWEN2_MOE: MoeConversion = MoeConversion {
        router: "gate",
        gate_up: ["gate_proj", "up_proj"],
        down: "down_proj",
    };

    /// Every v4 name it converts.
    #[must_use]
    pub fn names(self) -> [&'static str; 4] {
        [self.router, self.gate_up[0], self.gate_up[1], self.down]
    }
}

/// Module names of llama-style families (`q_proj` … `down_proj`, router `gate`).
pub const LLAMA_MODULES: &[(TensorKind, &str)] = &[
    (TensorKind::AttnQ, "q_proj"),
    (TensorKind::AttnK, "k_proj"),
    (TensorKind::AttnV, "v_proj"),
    (TensorKind::AttnQkv, "qkv_proj"),
    (TensorKind::AttnOutput, "o_proj"),
    (TensorKind::FfnGate, "gate_proj"),
    (TensorKind::FfnUp, "up_proj"),
    (TensorKind::FfnDown, "down_proj"),
    (TensorKind::Router, "gate"),
    (TensorKind::ExpertGate, "experts.gate_up_proj"),
    (TensorKind::ExpertUp, "experts.gate_up_proj"),
    (TensorKind::ExpertDown, "experts.down_proj"),
    (TensorKind::SharedGate, "shared_expert.gate_proj"),
    (TensorKind::SharedUp, "shared_expert.up_proj"),
    (TensorKind::SharedDown, "shared_expert.down_proj"),
    (TensorKind::SharedExpertGate, "shared_expert_gate"),
];

/// The name of a tensor's module within its layer as peft (and the Hugging Face quantizers'
/// module lists) see it: `q_proj`, `experts.gate_up_proj`, `lm_head`.
#[must_use]
pub fn hf_module_name(spec: &ModelSpec, t: &Tensor) -> String {
    module_name(t, spec.facts.modules)
}

/// peft's name of a tensor's module under the module table `names`: the profile's (or the
/// family's), else the layout's own part name for attention and embedding projections
/// (`q_proj`, `kv_a_proj_with_mqa`, `project_out`), else llama's. Written here, beside the
/// tables it reads, because both LoRA's targets and the quantizers' module paths
/// ([`crate::quant::module_path`]) name modules this one way.
#[must_use]
pub fn module_name(t: &Tensor, names: &[(TensorKind, &'static str)]) -> String {
    use TensorKind as K;
    match t.kind {
        // OPT's `project_in` and `project_out` share a kind.
        K::EmbeddingProjection => return t.name.local.to_string(),
        // An extra part's matrix by the last component of its path, as peft's suffix match
        // sees it (`model.vision_tower.*.self_attn.q_proj.weight (…)` → `q_proj`).
        K::Matrix => {
            let path = t.name.local.split(" (").next().unwrap_or_default();
            let path = path.trim_end_matches(".weight");
            return path.rsplit('.').next().unwrap_or(path).to_string();
        }
        K::Output => return "lm_head".into(),
        K::HeadTransform => return "transform.dense".into(),
        K::Pooler => return "pooler.dense".into(),
        _ => {}
    }
    let from = |table: &[(TensorKind, &'static str)]| {
        table.iter().find(|(k, _)| *k == t.kind).map(|(_, n)| *n)
    };
    let named = from(names);
    let attention = t.kind.is_attention_projection();
    let name = match named {
        Some(n) => n.to_string(),
        None if attention => t.part.to_string(),
        None => from(LLAMA_MODULES).map_or_else(|| t.part.to_string(), str::to_string),
    };
    if t.name.cross {
        format!("cross_attn.{name}")
    } else {
        name
    }
}
