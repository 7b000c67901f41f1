//! Linear-attention, gated-`DeltaNet`, short-convolution and RNN-like decoders: hybrids whose
//! mixer layers keep a fixed-size state (a convolution window and a recurrent state) instead
//! of a growing KV cache. Each mixer is a list of [`Extra`](llmsize_core::spec::Extra)s of
//! category `Ssm` on a layer with `Attention::Absent` and a
//! [`RecurrentState`](llmsize_core::spec::RecurrentState) sized as transformers' cache keeps
//! it; everything else (attention, MLP, MoE, norms) is the generic block of `family.rs`.

mod delta_net;
mod kda;
mod lfm;
mod minimax;
mod rglru;
mod rwkv;
mod xlstm;

pub(super) use kda::kimi_kda;

use llmsize_core::expr::{Expr, Sym};
use llmsize_core::spec::{Layer, ModelSpec};

use crate::error::ConfigError;
use crate::hf_config::family::{Family, Reader, Size};
use crate::hf_config::raw::RawConfig;
use crate::hf_config::runs::Runs;

/// The entries of this file.
pub(crate) const FAMILIES: &[Family] = &[
    delta_net::QWEN3_NEXT,
    delta_net::QWEN3_5_TEXT,
    delta_net::QWEN3_5_MOE_TEXT,
    delta_net::OLMO_HYBRID,
    lfm::LFM2,
    lfm::LFM2_MOE,
    lfm::LFM3,
    minimax::MINIMAX,
    kda::BAILING_HYBRID,
    kda::KIMI_LINEAR,
    rglru::RECURRENT_GEMMA,
    rwkv::RWKV,
    xlstm::XLSTM,
];

/// A family's own quantity as a formula symbol.
fn named(name: &'static str, value: u64) -> Expr {
    Expr::sym(Sym::Named(name), value)
}

/// A size of the mixer, read with the class default and recorded under a named symbol.
fn mixer_size(
    raw: &mut RawConfig<'_>,
    class: &'static str,
    size: Size,
    name: &'static str,
) -> Result<u64, ConfigError> {
    Reader { raw, class }.size(size, Sym::Named(name))
}

/// The `layer_types` list of strings (one per layer), if the config has one.
fn layer_types(raw: &RawConfig<'_>, layers: u64) -> Result<Option<Vec<String>>, ConfigError> {
    let Some(v) = raw.value("layer_types") else {
        return Ok(None);
    };
    let list = v
        .as_array()
        .ok_or_else(|| raw.invalid("layer_types", v, "a list of layer kinds"))?;
    if list.len() as u64 != layers {
        return Err(raw.invalid("layer_types", v, &format!("one entry per layer ({layers})")));
    }
    list.iter()
        .map(|t| {
            t.as_str()
                .map(str::to_owned)
                .ok_or_else(|| raw.invalid("layer_types", t, "strings such as `full_attention`"))
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// Rebuild the first stack's layers: layer `i` becomes `make(old layer i, keys[i])`, made once
/// per distinct (old kind, key), so the work is in the runs and kinds, not one layer each.
fn relayer<K: Clone + std::hash::Hash + Eq>(
    spec: &mut ModelSpec,
    keys: &Runs<K>,
    make: impl FnMut(&Layer, &K) -> Result<Layer, ConfigError>,
) -> Result<(), ConfigError> {
    let Some(stack) = spec.stacks.first_mut() else {
        return Ok(());
    };
    stack.layers = crate::hf_config::runs::remap(&stack.layers, keys, make)?;
    Ok(())
}
