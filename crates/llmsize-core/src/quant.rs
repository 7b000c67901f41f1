//! A release's quantization as its `config.json` states it, and the Hugging Face module path
//! of each layout tensor that its lists of unconverted modules are matched against.
//!
//! The adapter reads `quantization_config` (or `compression_config`) into a [`Quantization`];
//! `memory` then stores the weights in its format unless `--dtype` says otherwise. What a
//! method does is decided by the quantizer that wrote the files (transformers' `mxfp4`,
//! `fp8`, `gptq`, `awq`, `bitsandbytes` quantizers; compressed-tensors), not by llmsize.

use crate::checked::{self, Checked};
use crate::error::SpecError;
use crate::formats::WeightFormat;
use crate::layout::{Place, Tensor, TensorKind, tensors};
use crate::memory::{mix_context, overflow};
use crate::spec::ModelSpec;

/// A release's quantization.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quantization {
    /// `quant_method` as the config writes it (`mxfp4`, `fp8`, `gptq`, `compressed-tensors`).
    pub method: String,
    /// The storage it describes; `None` when the method is not modelled (the weights are
    /// then sized as 16-bit, with a warning).
    pub format: Option<WeightFormat>,
    /// The modules the config leaves unconverted, as written (`modules_to_not_convert`,
    /// `ignore`, `llm_int8_skip_modules`).
    pub skipped: Vec<String>,
    /// What else the config says that the bytes depend on, and any simplification made.
    pub notes: Vec<String>,
    /// Multi-token-prediction layers the release's files hold beyond the layers the model
    /// builds (DeepSeek-V3's `num_nextn_predict_layers`): transformers does not load them,
    /// serving runtimes only for speculative decoding.
    pub mtp_layers: u64,
}

impl Quantization {
    /// The assumption line `memory` prints when it sizes the weights in this format.
    #[must_use]
    pub fn assumption(&self) -> String {
        let mut s = match self.format {
            Some(f) => format!(
                "weights: as the release ships them, `quant_method: {}` → `{}` ({})",
                self.method,
                f.name(),
                f.describe()
            ),
            None => format!(
                "weights: sized as 16-bit; the quantization method `{}` is not modelled",
                self.method
            ),
        };
        if !self.skipped.is_empty() {
            s.push_str("; not converted by the config: ");
            s.push_str(&self.skipped.join(", "));
        }
        for n in &self.notes {
            s.push_str("; ");
            s.push_str(n);
        }
        s
    }
}

/// The Hugging Face module path of a tensor's module in layer `layer` of its stack
/// (`model.layers.3.self_attn.q_proj`, `model.layers.3.mlp.experts.gate_up_proj`,
/// `model.embed_tokens`, `lm_head`), as transformers' quantizers and compressed-tensors match
/// their module lists against it. The name within the layer is peft's
/// ([`crate::facts::hf_module_name`]); the parents are those of the llama-style
/// decoders the quantized releases use.
#[must_use]
pub fn module_path(spec: &ModelSpec, t: &Tensor, layer: u64) -> String {
    use TensorKind as K;
    // The type's own names (gpt-oss's `mlp.router`, DeepSeek's `shared_experts`) are in its
    // record's module table.
    let leaf = crate::facts::hf_module_name(spec, t);
    match t.kind {
        // An extra part's matrix carries its own path (`model.vision_tower.layers.*.…`, or
        // `mixer.in_proj` within a layer); `*` stands for any index, matched as the first.
        K::Matrix => {
            let path = t.name.local.split(" (").next().unwrap_or_default();
            let path = path.trim_end_matches(".weight").replace('*', "0");
            if t.stack.is_some() && !path.starts_with("model.") {
                format!("model.layers.{layer}.{path}")
            } else {
                path
            }
        }
        K::TokenEmbedding => "model.embed_tokens".into(),
        K::PositionEmbedding => "model.embed_positions".into(),
        K::Output => "lm_head".into(),
        k if k.is_attention_projection() => format!("model.layers.{layer}.self_attn.{leaf}"),
        k if k.is_mlp() => format!("model.layers.{layer}.mlp.{leaf}"),
        _ if t.stack.is_some() => format!("model.layers.{layer}.{leaf}"),
        _ => leaf,
    }
}

/// The bytes of the multi-token-prediction layers a DeepSeek-V3-style release's files hold
/// (`model.layers.{L}` and on): each is a decoder layer like the last one (stored in
/// `format`), plus its own copy of the token table and of the output head
/// (`embed_tokens`, `shared_head.head`), the `eh_proj` `d × 2d` that joins the two inputs and
/// three norms (`enorm`, `hnorm`, `shared_head.norm`), all 16-bit as the release stores them.
/// `None` when the spec has no such layers.
pub fn mtp_bytes(
    spec: &ModelSpec,
    format: WeightFormat,
) -> Result<Option<(String, u64)>, SpecError> {
    let layers = spec.quantization.as_ref().map_or(0, |q| q.mtp_layers);
    let Some(stack) = spec.stacks.first().filter(|_| layers > 0) else {
        return Ok(None);
    };
    // A stack without layers: layer 0's types.
    let last = stack.layers.len().saturating_sub(1);
    let ctx = mix_context(spec);
    let mut layer = 0u64;
    for t in tensors(spec)? {
        let in_last = matches!(t.place, Place::Layer { stack: 0, .. })
            && t.layer_runs.iter().any(|r| r.contains(&last));
        if in_last {
            let (b, _) = format
                .tensor_bytes(&t, last, ctx)
                .ok_or_else(|| overflow(&format!("bytes of `{}`", t.name)))?;
            layer = checked::add("bytes of the last layer", layer, b)?;
        }
    }
    let (v, d) = (spec.vocab_size, spec.hidden_size);
    // embed_tokens + shared_head.head (V·d each), eh_proj (d·2d), 3 norms (d), 2 bytes each.
    let own = ((Checked::new(v) * d * 2u64 + Checked::new(d) * d * 2u64 + Checked::new(d) * 3u64)
        * 2u64)
        .get("(2·V·d + 2·d² + 3·d)·2 B (an MTP layer's own tensors)")?;
    let bytes = (Checked::new(layer) + own)
        .get("last layer + own tensors")
        .and_then(|one| checked::mul("MTP layer·num_nextn_predict_layers", one, layers))?;
    Ok(Some((
        format!(
            "{layers} multi-token-prediction layer(s) (`num_nextn_predict_layers`): a decoder layer + its own embedding, head and `eh_proj`, in the files, loaded only for speculative decoding"
        ),
        bytes,
    )))
}
