//! LoRA (and DoRA, QLoRA) as peft 0.21 applies it: which modules a `target_modules` value
//! reaches in a family, and what the adapters add.
//!
//! peft wraps each targeted module and trains two factors beside its frozen weight:
//! - a `torch.nn.Linear` (or GPT-2's `Conv1D`) `n_in → n_out` becomes `lora.Linear` with
//!   `lora_A` `[r, n_in]` and `lora_B` `[n_out, r]`: `r·(n_in + n_out)` parameters in 2
//!   tensors; DoRA (`use_dora=True`) adds `lora_magnitude_vector` `[n_out]`, a third tensor
//!   (`peft/tuners/lora/layer.py`, `LoraLayer.update_layer`, `DoraLinearLayer`);
//! - a parameter (`target_parameters`) becomes `lora.ParamWrapper`: for a 3-D expert tensor
//!   `[E, out, in]`, `lora_A` `[r·E, in]` and `lora_B` `[out, r·E]`, i.e. `r·E·(in + out)`;
//!   for a 2-D router weight `[E, d]`, `r·(d + E)` (`ParamWrapper.update_layer`). It refuses
//!   `lora_dropout != 0` and DoRA.
//!
//! `target_modules="all-linear"` is every `nn.Linear`/`Conv1D` but the output head
//! (`tuners_utils._maybe_include_all_linear_layers`). On transformers 5 the routed experts of
//! an MoE are 3-D parameters and the router a parameter of its own module, so all-linear does
//! not reach them as modules; but for the model types transformers converts from their v4
//! checkpoints (Mixtral-style and Qwen2-MoE-style, `conversion_mapping._MODEL_TO_CONVERSION_PATTERN`)
//! peft adds the v4 names of the router and experts and turns them into `target_parameters`
//! (`utils/transformers_weight_conversion._convert_peft_config_moe`): the router as
//! `gate.weight`, the experts' `gate_up_proj` (with rank and alpha doubled, two v4 matrices
//! fused) and `down_proj`. Linear modules that carry one of those v4 names (a shared expert's
//! or a dense layer's `gate_proj`/`up_proj`/`down_proj` on the Qwen2-MoE style) leave the
//! module targets on the way and are not adapted. peft then reports `target_modules` as the
//! attention projections only; [`LoraPlan::resolved`] lists what is really adapted.
//!
//! A list of names matches a module when the module's path ends with the name
//! (`check_target_module_exists`: `key == target or key.endswith("." + target)`), so `q_proj`
//! reaches `model.layers.0.self_attn.q_proj` and GPT-2's `c_proj` reaches both the attention
//! output and the MLP's down projection. A fused module (`c_attn`, `query_key_value`,
//! Phi-3's `qkv_proj` and `gate_up_proj`) is one module with its full width.
//!
//! Two refusals go beyond peft, which accepts both: a name in the user's list that reaches no
//! module (peft skips it silently as long as another name matches, so a typo would quietly
//! train fewer adapters), and a rank above a projection's smaller side (the adapter would
//! hold more parameters than the matrix and adapt nothing a full update could not).

use llmsize_core::SpecError;
use llmsize_core::checked::{self, Checked};
use llmsize_core::facts::{MoeConversion, module_name};
use llmsize_core::layout::{Form, Layout, Place, TensorKind};
use llmsize_core::spec::{Attention, ModelSpec, OutputHead, StackRole};
use std::collections::BTreeSet;
use std::ops::Range;

/// `--lora-targets`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoraTargets {
    /// peft's `"all-linear"`: every linear module but the output head.
    AllLinear,
    /// peft's per-model-type default (`LoraConfig()` without `target_modules`).
    Default,
    /// Module names (peft matches a name against the end of each module path).
    Modules(Vec<String>),
}

/// What the user asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct LoraOptions {
    /// Rank `r`.
    pub rank: u64,
    /// The targets.
    pub targets: LoraTargets,
    /// `lora_dropout`.
    pub dropout: f64,
    /// DoRA (`use_dora=True`): a trained magnitude vector per adapted module.
    pub dora: bool,
}

/// One adapted module kind (the same module in every layer of a layer kind).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Adapted {
    /// peft's module name (`q_proj`, `c_attn`, `experts.gate_up_proj`).
    pub name: String,
    /// The base tensor it adapts (the first of a fused module: `FfnGate` for Phi-3's
    /// `gate_up_proj`, `ExpertGate` for the experts' `gate_up_proj`).
    pub kind: TensorKind,
    /// The stack.
    pub stack: Option<StackRole>,
    /// The layers (within the stack) that hold it.
    pub layer_runs: Vec<Range<u64>>,
    /// How many layers hold it.
    pub layers: u64,
    /// Input features of the base module (of one expert).
    pub n_in: u64,
    /// Output features of the base module (of one expert).
    pub n_out: u64,
    /// Experts wrapped by peft's `ParamWrapper` (1 for a plain `Linear` and a router).
    pub copies: u64,
    /// The adapter's rank: `r`, or `2r` for the experts' fused `gate_up_proj` (peft doubles
    /// rank and alpha where two v4 matrices were fused).
    pub rank: u64,
    /// Adapted through `lora.ParamWrapper` (a parameter, not a module): peft merges
    /// `W + scaling·B·A` in every forward.
    pub param_wrapper: bool,
    /// The trainable tensors it adds in one layer, `[rows, cols]`: `lora_A` `[rank·copies,
    /// n_in]`, `lora_B` `[n_out, rank·copies]` and, for DoRA, the magnitude `[1, n_out]`.
    pub factors: Vec<(u64, u64)>,
    /// Trainable parameters this module adds in one layer.
    pub params: u64,
    /// Trainable tensors it adds in one layer.
    pub tensors: u64,
    /// It adapts a module the forward never runs (a decoder's cross-attention without an
    /// encoder): trainable, but no gradient ever reaches it.
    pub idle: bool,
    /// It adapts a module that runs but that no gradient reaches (the DSA indexer's): its
    /// forward and saved tensors are as any adapter's, its factors get no gradient.
    pub gradless: bool,
}

/// The resolved adapters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoraPlan {
    /// Rank.
    pub rank: u64,
    /// `lora_dropout` > 0.
    pub dropout: bool,
    /// DoRA.
    pub dora: bool,
    /// Every adapted module kind.
    pub modules: Vec<Adapted>,
    /// The module names reached, sorted (peft's `target_modules` after resolution, with the
    /// router and experts peft adapts through `ParamWrapper` named too).
    pub resolved: Vec<String>,
    /// Trainable parameters (adapters only).
    pub trainable: u64,
    /// Trainable tensors.
    pub tensors: u64,
}

/// How peft reaches a module.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Reach {
    /// An `nn.Linear` (or `Conv1D`): all-linear and names reach it.
    Linear,
    /// The output head: a Linear that all-linear leaves out, reached only by name.
    Head,
    /// A parameter peft's MoE conversion targets (`ParamWrapper`); the v4 names that reach it
    /// (all of them needed: the fused `gate_up_proj` takes both of its v4 matrices).
    Param(Vec<&'static str>),
}

/// A module of the model that LoRA could adapt.
#[derive(Debug, Clone)]
struct Module {
    name: String,
    kind: TensorKind,
    place: Place,
    stack: Option<StackRole>,
    layer_runs: Vec<Range<u64>>,
    layers: u64,
    n_in: u64,
    n_out: u64,
    copies: u64,
    /// 2 for the experts' fused `gate_up_proj`.
    rank_factor: u64,
    reach: Reach,
    /// The forward never runs it (a decoder's cross-attention without an encoder).
    idle: bool,
    /// Runs, but no gradient reaches it ([`llmsize_core::layout::Tensor::gradless`]).
    gradless: bool,
}

impl Module {
    /// The last component of its name (`gate_proj` of `shared_expert.gate_proj`).
    fn leaf(&self) -> &str {
        self.name.rsplit('.').next().unwrap_or(&self.name)
    }

    /// peft's suffix match of a name against the module path. The path's start is not
    /// modelled, so a name that is longer than ours but ends with it also matches
    /// (`self_attn.q_proj` reaches `q_proj`).
    fn matches(&self, target: &str) -> bool {
        let tail = |long: &str, short: &str| {
            long.strip_suffix(short)
                .is_some_and(|head| head.ends_with('.'))
        };
        if self.name == target || tail(&self.name, target) {
            return true;
        }
        if !tail(target, &self.name) {
            return false;
        }
        // A longer path than ours: its parent decides between modules that share a leaf
        // name (GPT-2's `attn.c_proj` and `mlp.c_proj`, NeoX's `attention.dense`).
        let head = target
            .strip_suffix(self.name.as_str())
            .and_then(|h| h.strip_suffix('.'))
            .unwrap_or(target);
        let parent = head.rsplit('.').next().unwrap_or(head);
        let attention = self.kind.is_attention_projection();
        match parent {
            "attn" | "self_attn" | "attention" | "self_attention" | "mixer" => attention,
            "mlp" | "feed_forward" | "ffn" | "block_sparse_moe" | "shared_expert" => !attention,
            _ => true,
        }
    }
}

fn invalid(field: &str, found: impl Into<String>, expected: impl Into<String>) -> SpecError {
    SpecError::Invalid {
        field: field.into(),
        found: found.into(),
        expected: expected.into(),
    }
}

/// The spec's layer of a layout place.
fn layer_of(spec: &ModelSpec, place: Place) -> Option<&llmsize_core::spec::Layer> {
    match place {
        Place::Layer { stack, kind } => spec.stacks.get(stack)?.layers.kinds().get(kind),
        _ => None,
    }
}

/// Every module of the model LoRA could adapt, fused modules merged, in layout order.
fn modules(
    spec: &ModelSpec,
    layout: &Layout,
    conv: Option<MoeConversion>,
) -> Result<Vec<Module>, SpecError> {
    use TensorKind as K;
    let names = spec.facts.modules;
    let has_encoder = crate::has_encoder(spec);
    let mut out: Vec<Module> = Vec::new();
    for t in &layout.tensors {
        let matrix = t.shape.form == Form::Linear
            && t.kind != K::Bias
            && (t.kind.is_block_matrix()
                || matches!(
                    t.kind,
                    K::Router
                        | K::SharedExpertGate
                        | K::EmbeddingProjection
                        | K::HeadTransform
                        | K::Pooler
                ));
        let head = t.kind == K::Output;
        if !matrix && !head {
            continue;
        }
        let expert = matches!(t.kind, K::ExpertGate | K::ExpertUp | K::ExpertDown);
        let reach = match (t.kind, conv) {
            (K::Output, _) => Reach::Head,
            (K::Router, Some(c)) => Reach::Param(vec![c.router]),
            (K::ExpertGate | K::ExpertUp, Some(c)) => Reach::Param(c.gate_up.to_vec()),
            (K::ExpertDown, Some(c)) => Reach::Param(vec![c.down]),
            (K::Router, None) if spec.facts.linear_router => Reach::Linear,
            // transformers 5 holds routers (`TopKRouter.weight`) and routed experts (3-D
            // tensors) as parameters, not `nn.Linear`: no module target reaches them.
            (K::Router | K::ExpertGate | K::ExpertUp | K::ExpertDown, None) => continue,
            // An extra part's matrices that a token uses only some of (experts of a part the
            // typed blocks do not describe) are 3-D parameters too.
            _ if t.copies > 1 && t.active_copies < t.copies => continue,
            _ => Reach::Linear,
        };
        // An extra part's matrix repeated `copies` times (a vision tower's layers) is that
        // many `nn.Linear` modules.
        let repeats = if expert { 1 } else { t.copies };
        let (n_in, n_out) = if head {
            (spec.hidden_size, spec.vocab_size)
        } else {
            (t.cols, t.rows)
        };
        let m = Module {
            name: module_name(t, names),
            kind: t.kind,
            place: t.place,
            stack: t.stack,
            layer_runs: t.layer_runs.to_vec(),
            layers: checked::mul("layers·copies of a module", t.layers, repeats)?,
            n_in,
            n_out,
            copies: if expert { t.copies } else { 1 },
            rank_factor: 1,
            reach,
            idle: crate::never_run(t, has_encoder),
            gradless: t.gradless,
        };
        // Fused modules: the layout lists their parts; peft sees one module of the full width.
        let fused_qkv = !t.name.cross
            && matches!(t.kind, K::AttnK | K::AttnV)
            && matches!(layer_of(spec, t.place), Some(l) if matches!(&l.attention, Attention::Standard(a) if a.fused_qkv));
        let merges_into = |prev: &Module| -> bool {
            match (prev.kind, m.kind) {
                (K::AttnQ | K::AttnQkv, K::AttnK) | (K::AttnQkv, K::AttnV) => fused_qkv,
                (K::ExpertGate, K::ExpertUp) => true,
                (K::FfnGate, K::FfnUp) | (K::SharedGate, K::SharedUp) => prev.name == m.name,
                // Qwen3-Next/Qwen3.5's gated attention: `q_proj` also makes the output gate,
                // which the layout lists as the extra `attn_q_gate`.
                (K::AttnQ, K::Matrix) => {
                    m.name == "attn_q_gate" && !prev.name.starts_with("cross_attn.")
                }
                _ => false,
            }
        };
        // The modules of this tensor's layer kind are the last ones listed.
        let fused = out
            .iter_mut()
            .rev()
            .take_while(|prev| prev.place == m.place)
            .find(|prev| merges_into(prev));
        match fused {
            Some(prev) => {
                prev.n_out = checked::add("fused module outputs", prev.n_out, m.n_out)?;
                if prev.kind == K::AttnQ && m.kind != K::Matrix {
                    prev.kind = K::AttnQkv;
                    prev.name = names
                        .iter()
                        .find(|(k, _)| *k == K::AttnQkv)
                        .map_or_else(|| "qkv_proj".to_string(), |(_, n)| (*n).to_string());
                }
                if prev.kind == K::ExpertGate {
                    prev.rank_factor = 2;
                }
            }
            None => out.push(m),
        }
    }
    if !layout.tensors.iter().any(|t| t.kind == K::Output)
        && let OutputHead::Lm { tied: true, .. } = spec.head
    {
        // A tied head is still an `nn.Linear` (`lm_head`) sharing the table's weight.
        out.push(Module {
            name: "lm_head".into(),
            kind: K::Output,
            place: Place::Output,
            stack: None,
            layer_runs: Vec::new(),
            layers: 1,
            n_in: spec.hidden_size,
            n_out: spec.vocab_size,
            copies: 1,
            rank_factor: 1,
            reach: Reach::Head,
            idle: false,
            gradless: false,
        });
    }
    Ok(out)
}

/// The names a user can give, for error messages.
fn known_names(all: &[Module]) -> String {
    let mut names = BTreeSet::new();
    for m in all {
        match &m.reach {
            Reach::Param(v4) => {
                let what = if m.kind == TensorKind::Router {
                    "the router"
                } else {
                    "the experts"
                };
                names.insert(format!("{} ({what})", v4.join(" + ")));
            }
            _ => {
                names.insert(m.name.clone());
            }
        }
    }
    names.into_iter().collect::<Vec<_>>().join(", ")
}

/// Which modules `names` reach (peft's list semantics, after its MoE conversion). `strict`:
/// every name must reach something (the user's list); else only one (peft's default).
fn select(
    all: &[Module],
    names: &[String],
    conv: Option<MoeConversion>,
    strict: bool,
) -> Result<Vec<bool>, SpecError> {
    // peft's `_convert_peft_config_moe`: a name equal to (or ending with) a v4 name becomes a
    // parameter target and leaves the module targets.
    let v4_of = |n: &str| {
        conv.and_then(|c| {
            c.names()
                .into_iter()
                .find(|v| n == *v || n.ends_with(&format!(".{v}")))
        })
    };
    let mut param_names = BTreeSet::new();
    let mut module_targets = Vec::new();
    for n in names {
        match v4_of(n) {
            Some(v) => {
                param_names.insert(v);
            }
            None => module_targets.push(n.as_str()),
        }
    }
    if let Some(c) = conv {
        let [a, b] = c.gate_up.map(|v| param_names.contains(v));
        if a != b {
            let (present, missing) = if a {
                (c.gate_up[0], c.gate_up[1])
            } else {
                (c.gate_up[1], c.gate_up[0])
            };
            return Err(invalid(
                "--lora-targets",
                present,
                format!(
                    "`{present}` together with `{missing}`: peft converts them to the experts' \
                     fused `gate_up_proj` on transformers 5 and refuses one without the other"
                ),
            ));
        }
    }
    let chosen: Vec<bool> = all
        .iter()
        .map(|m| match &m.reach {
            Reach::Param(v4) => v4.iter().all(|v| param_names.contains(v)),
            Reach::Linear | Reach::Head => module_targets.iter().any(|t| m.matches(t)),
        })
        .collect();
    let reached = |n: &str| {
        all.iter().zip(&chosen).any(|(m, &c)| {
            c && match &m.reach {
                Reach::Param(v4) => v4_of(n).is_some_and(|v| v4.contains(&v)),
                _ => m.matches(n),
            }
        })
    };
    let missing: Vec<&str> = names
        .iter()
        .map(String::as_str)
        .filter(|n| !reached(n))
        .collect();
    if (strict && !missing.is_empty()) || !chosen.iter().any(|&c| c) {
        let found = if missing.is_empty() {
            names.join(",")
        } else {
            missing.join(",")
        };
        return Err(invalid(
            "--lora-targets",
            found,
            format!(
                "module names of this model (peft matches a name against the end of each \
                 module path): {}",
                known_names(all)
            ),
        ));
    }
    Ok(chosen)
}

/// Resolve `options` on a model.
pub fn plan(
    spec: &ModelSpec,
    layout: &Layout,
    options: &LoraOptions,
) -> Result<LoraPlan, SpecError> {
    let r = options.rank;
    if r == 0 {
        return Err(SpecError::Zero {
            field: "--lora-rank".into(),
        });
    }
    let conv = spec.facts.moe_conversion;
    let all = modules(spec, layout, conv)?;
    let chosen = match &options.targets {
        LoraTargets::AllLinear => {
            // peft resolves all-linear to every Linear but the head; on a converted MoE it
            // adds the router's and experts' v4 names, and the Linear modules carrying one of
            // those names go with them to the parameter targets.
            let v4 = conv.map(MoeConversion::names).unwrap_or_default();
            let chosen: Vec<bool> = all
                .iter()
                .map(|m| match &m.reach {
                    Reach::Linear => !v4.contains(&m.leaf()),
                    Reach::Param(_) => true,
                    Reach::Head => false,
                })
                .collect();
            if !chosen.iter().any(|&c| c) {
                return Err(invalid(
                    "--lora-targets",
                    "all-linear",
                    "a model with linear layers: this one has none peft can adapt",
                ));
            }
            chosen
        }
        LoraTargets::Default => {
            let names = spec
                .facts
                .peft_default
                // peft's transformers-5 MoE conversion empties the default before reading it.
                .filter(|_| conv.is_none())
                .ok_or_else(|| {
                    let why = if conv.is_some() {
                        "its transformers-5 MoE conversion leaves `LoraConfig()` without targets"
                    } else {
                        "it has no default target modules for this model type"
                    };
                    invalid(
                        "--lora-targets",
                        "default",
                        format!(
                            "module names or all-linear for `{}`: {why} (peft 0.21's \
                             `LoraConfig()` raises)",
                            spec.model_type
                        ),
                    )
                })?;
            let names: Vec<String> = names.iter().map(|s| (*s).to_string()).collect();
            select(&all, &names, conv, false)?
        }
        LoraTargets::Modules(names) => {
            if names.is_empty() {
                return Err(invalid(
                    "--lora-targets",
                    "(empty)",
                    "all-linear, default, or module names (q_proj,v_proj)",
                ));
            }
            select(&all, names, conv, true)?
        }
    };
    let named = matches!(options.targets, LoraTargets::Modules(_));
    let dropout = options.dropout > 0.0;
    let mut out = Vec::new();
    let (mut trainable, mut tensors) = (0u64, 0u64);
    for (m, _) in all.iter().zip(&chosen).filter(|(_, c)| **c) {
        let wrapper = matches!(m.reach, Reach::Param(_));
        if wrapper && (dropout || options.dora) {
            let (flag, what) = if options.dora {
                ("--dora", "use_dora=True")
            } else {
                ("--lora-dropout", "lora_dropout != 0")
            };
            return Err(invalid(
                flag,
                format!("on `{}`", m.name),
                format!(
                    "targets without the router and experts: peft adapts them through \
                     lora.ParamWrapper, which does not work with {what}; name the attention \
                     and dense modules instead (e.g. q_proj,k_proj,v_proj,o_proj)"
                ),
            ));
        }
        // A rank above a matrix's smaller side trains more parameters than the matrix has and
        // adapts nothing a full update could not: refused for the projections of attention,
        // MLPs and experts, and for any module the user names. A router's or gate's small side
        // is its expert count (a score per expert), and all-linear also reaches small
        // matrices of other parts (a `dt_proj`, Gemma 3n's `correction_coefs`): peft adapts
        // those at any rank, so they are not checked (a named router only against its input).
        let projection = m.kind.is_block_matrix() && m.kind != TensorKind::Matrix;
        let limit = match m.kind {
            TensorKind::Router | TensorKind::SharedExpertGate if named => Some(m.n_in),
            TensorKind::Router | TensorKind::SharedExpertGate => None,
            _ if named || projection => Some(m.n_in.min(m.n_out)),
            _ => None,
        };
        if let Some(limit) = limit.filter(|&l| r > l) {
            return Err(invalid(
                "--lora-rank",
                r.to_string(),
                format!(
                    "at most {limit} for `{}` ({} → {}): a rank above a matrix's smaller side \
                     trains more parameters than the matrix has and adapts nothing a full \
                     update could not",
                    m.name, m.n_in, m.n_out
                ),
            ));
        }
        let rank = checked::mul("r·rank factor", r, m.rank_factor)?;
        let inner = checked::mul("r·copies", rank, m.copies)?;
        let mut factors = vec![(inner, m.n_in), (m.n_out, inner)];
        if options.dora {
            factors.push((1, m.n_out));
        }
        let params = factors
            .iter()
            .map(|&(rows, cols)| checked::mul("LoRA rows·cols", rows, cols))
            .try_fold(0u64, |a, p| {
                checked::add("LoRA parameters of a module", a, p?)
            })?;
        let n = factors.len() as u64;
        trainable = (Checked::new(trainable) + Checked::new(params) * m.layers)
            .get("LoRA parameters·layers")?;
        tensors =
            (Checked::new(tensors) + Checked::new(n) * m.layers).get("LoRA tensors·layers")?;
        out.push(Adapted {
            name: m.name.clone(),
            kind: m.kind,
            stack: m.stack,
            layer_runs: m.layer_runs.clone(),
            layers: m.layers,
            n_in: m.n_in,
            n_out: m.n_out,
            copies: m.copies,
            rank,
            param_wrapper: wrapper,
            factors,
            params,
            tensors: n,
            idle: m.idle,
            gradless: m.gradless,
        });
    }
    let resolved: BTreeSet<String> = out.iter().map(|m| m.name.clone()).collect();
    Ok(LoraPlan {
        rank: r,
        dropout,
        dora: options.dora,
        modules: out,
        resolved: resolved.into_iter().collect(),
        trainable,
        tensors,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use llmsize_core::design::{Design, Style, design_spec};
    use llmsize_core::layout::layout;
    use llmsize_core::spec::{Ffn, Layers, Mlp, Moe};

    fn options(rank: u64, targets: LoraTargets) -> LoraOptions {
        LoraOptions {
            rank,
            targets,
            dropout: 0.0,
            dora: false,
        }
    }

    fn names(list: &[&str]) -> LoraTargets {
        LoraTargets::Modules(list.iter().map(|s| (*s).to_string()).collect())
    }

    fn run(spec: &ModelSpec, o: &LoraOptions) -> Result<LoraPlan, SpecError> {
        plan(spec, &layout(spec).unwrap(), o)
    }

    /// LLaMA-7B by design: the shapes of Llama-2-7b-hf (d 4096, 32 layers, F 11008).
    fn llama_7b() -> ModelSpec {
        let design = Design {
            hidden: 4096,
            layers: 32,
            vocab: Some(32_000),
            ..Design::default()
        };
        design_spec(&design, Style::Llama).unwrap()
    }

    /// Mixtral-8x7B: LLaMA-7B attention with 8 KV heads, 8 experts of 14336, top-2.
    fn mixtral() -> ModelSpec {
        let design = Design {
            hidden: 4096,
            layers: 32,
            vocab: Some(32_000),
            kv_heads: Some(8),
            ..Design::default()
        };
        let mut spec = design_spec(&design, Style::Llama).unwrap();
        spec.model_type = "mixtral".into();
        spec.facts.moe_conversion = Some(MoeConversion::MIXTRAL);
        let stack = &mut spec.stacks[0];
        let mut layer = stack.layers.kinds()[0].clone();
        let Ffn::Dense(mlp) = layer.ffn else {
            panic!("a dense llama layer")
        };
        layer.ffn = Ffn::Moe(Moe {
            num_experts: 8,
            experts_per_token: 2,
            expert: Mlp {
                intermediate: 14_336,
                ..mlp
            },
            router_bias: llmsize_core::spec::RouterBias::None,
            router: true,
            shared: None,
            shared_gate: false,
        });
        stack.layers = Layers::repeat(layer, 32);
        spec
    }

    #[test]
    fn all_linear_on_llama_is_seven_modules_per_layer() {
        // train.json, Llama-2-7b-hf, params.lora_r16_all_linear: 39,976,960 in 448 tensors.
        // Per layer 16·(4·(4096+4096) + 3·(4096+11008)) = 1,249,280; × 32.
        let p = run(&llama_7b(), &options(16, LoraTargets::AllLinear)).unwrap();
        assert_eq!((p.trainable, p.tensors), (39_976_960, 448));
        assert_eq!(
            p.resolved,
            [
                "down_proj",
                "gate_proj",
                "k_proj",
                "o_proj",
                "q_proj",
                "up_proj",
                "v_proj"
            ]
        );
        assert!(p.modules.iter().all(|m| m.layers == 32 && m.tensors == 2));
    }

    #[test]
    fn names_match_the_end_of_module_paths() {
        // train.json, Llama-2-7b-hf, params.lora_r8_qv: 4,194,304 in 128 tensors.
        for list in [&["q_proj", "v_proj"][..], &["self_attn.q_proj", "v_proj"]] {
            let p = run(&llama_7b(), &options(8, names(list))).unwrap();
            assert_eq!((p.trainable, p.tensors), (4_194_304, 128), "{list:?}");
            assert_eq!(p.resolved, ["q_proj", "v_proj"]);
        }
    }

    #[test]
    fn dora_adds_a_magnitude_vector_of_the_output_width() {
        // peft DoraLinearLayer: `lora_magnitude_vector` [n_out]. q/v at r 8 on LLaMA-7B:
        // 4,194,304 + 32·(4096 + 4096) = 4,456,448 in 32·2·3 = 192 tensors.
        let o = LoraOptions {
            dora: true,
            ..options(8, names(&["q_proj", "v_proj"]))
        };
        let p = run(&llama_7b(), &o).unwrap();
        assert_eq!((p.trainable, p.tensors), (4_456_448, 192));
        assert_eq!(p.modules[0].factors, [(8, 4096), (4096, 8), (1, 4096)]);
    }

    #[test]
    fn a_fused_module_is_adapted_once() {
        // truth.json, gpt2 (the GPT block by design is GPT-2 small): r 16 all-linear
        // 2,359,296 = 12·16·((768+2304) + (768+768) + (768+3072) + (3072+768)); c_attn is
        // one module of 3d outputs.
        let design = Design {
            hidden: 768,
            layers: 12,
            ..Design::default()
        };
        let spec = design_spec(&design, Style::Gpt).unwrap();
        let p = run(&spec, &options(16, LoraTargets::AllLinear)).unwrap();
        assert_eq!((p.trainable, p.tensors), (2_359_296, 96));
        let qkv = &p.modules[0];
        assert_eq!(
            (qkv.kind, qkv.n_in, qkv.n_out),
            (TensorKind::AttnQkv, 768, 2304)
        );
    }

    #[test]
    fn all_linear_on_mixtral_wraps_router_and_experts() {
        // train.json, Mixtral-8x7B-v0.1, params.lora_r16_all_linear: 359,665,664 in 448
        // tensors. Per layer: attention 16·(2·8192 + 2·5120) = 425,984; router
        // 16·(4096 + 8) = 65,664; gate_up (rank 2r = 32, 8 experts) 256·4096 + 28672·256 =
        // 8,388,608; down 128·14336 + 4096·128 = 2,359,296.
        let p = run(&mixtral(), &options(16, LoraTargets::AllLinear)).unwrap();
        assert_eq!((p.trainable, p.tensors), (359_665_664, 448));
        let gate_up = p.modules.iter().find(|m| m.kind == TensorKind::ExpertGate);
        let gate_up = gate_up.unwrap();
        assert_eq!(
            (gate_up.rank, gate_up.copies, gate_up.n_out),
            (32, 8, 28_672)
        );
        assert_eq!(gate_up.factors, [(256, 4096), (28_672, 256)]);
        assert!(gate_up.param_wrapper);
        assert!(p.resolved.contains(&"experts.gate_up_proj".to_string()));
        // train.json, params.lora_r8_qv: 3,407,872 (q 8·8192 + v 8·5120 per layer).
        let p = run(&mixtral(), &options(8, names(&["q_proj", "v_proj"]))).unwrap();
        assert_eq!(p.trainable, 3_407_872);
        // The v4 names reach the experts; one of the fused pair alone is refused.
        let p = run(&mixtral(), &options(16, names(&["w1", "w3", "w2"]))).unwrap();
        assert_eq!(p.trainable, 32 * (8_388_608 + 2_359_296));
        assert!(run(&mixtral(), &options(16, names(&["w1"]))).is_err());
    }

    #[test]
    fn refusals_name_what_to_do() {
        let text = |r: Result<LoraPlan, SpecError>| r.unwrap_err().to_string();
        // train.json, Mixtral params.lora_default: NoMatchingPeftModuleError.
        let e = text(run(&mixtral(), &options(8, LoraTargets::Default)));
        assert!(e.contains("conversion"), "{e}");
        // lora.ParamWrapper refuses dropout and DoRA.
        let dropout = LoraOptions {
            dropout: 0.05,
            ..options(16, LoraTargets::AllLinear)
        };
        assert!(text(run(&mixtral(), &dropout)).contains("ParamWrapper"));
        let dora = LoraOptions {
            dora: true,
            ..options(16, LoraTargets::AllLinear)
        };
        assert!(text(run(&mixtral(), &dora)).contains("use_dora"));
        // A name that reaches nothing lists the model's modules.
        let e = text(run(&llama_7b(), &options(8, names(&["q_proj", "qkv"]))));
        assert!(
            e.contains("qkv") && e.contains("down_proj, gate_proj"),
            "{e}"
        );
        // A rank above a matrix's smaller side.
        let e = text(run(&llama_7b(), &options(4097, names(&["q_proj"]))));
        assert!(e.contains("at most 4096"), "{e}");
        assert!(run(&llama_7b(), &options(4096, names(&["q_proj"]))).is_ok());
        // The designed model has no peft default.
        assert!(text(run(&llama_7b(), &options(8, LoraTargets::Default))).contains("design"));
    }

    #[test]
    fn a_million_layers_cost_one_module_each() {
        let design = Design {
            hidden: 256,
            layers: 1_000_000,
            vocab: Some(256),
            ..Design::default()
        };
        let spec = design_spec(&design, Style::Llama).unwrap();
        let p = run(&spec, &options(4, LoraTargets::AllLinear)).unwrap();
        assert_eq!(p.modules.len(), 7);
        assert_eq!(p.tensors, 14_000_000);
    }
}
