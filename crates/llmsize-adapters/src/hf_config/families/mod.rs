//! The registry of model types: one file per family, each a list of [`Family`] entries.
//!
//! A new model type is an entry in the file of its family (or a new file listed here): the
//! keys its configuration class reads with their defaults, and the switches of its block, or
//! a reader of its own for what is really new. Dispatch, `llmsize presets`, error messages and
//! the README's list all come from [`REGISTRY`].

mod action;
mod classic;
mod dense;
mod encoders;
mod experts;
mod gpt;
mod latent;
mod latent2;
mod llama;
mod music;
mod recurrent;
mod reformer;
mod ssm;
mod vision;
mod vision2;

use super::family::Family;

/// Every family file's entries, with what the file holds (the README's list is grouped so).
pub(crate) const REGISTRY: &[(&str, &[Family])] = &[
    ("the first families", classic::FAMILIES),
    ("LLaMA and its close relatives", llama::FAMILIES),
    ("dense decoders", dense::FAMILIES),
    ("GPT-style and other decoders", gpt::FAMILIES),
    ("mixtures of experts", experts::FAMILIES),
    ("multi-head latent attention", latent::FAMILIES),
    ("compressed sparse attention", latent2::FAMILIES),
    ("state-space models and hybrids", ssm::FAMILIES),
    ("linear attention and recurrent mixers", recurrent::FAMILIES),
    (
        "encoders and encoder-decoders as causal LMs",
        encoders::FAMILIES,
    ),
    ("vision-language models", vision::FAMILIES),
    (
        "vision-language models with native-resolution towers",
        vision2::FAMILIES,
    ),
    ("vision-language-action models", action::FAMILIES),
    ("music-generation decoders", music::FAMILIES),
    (
        "reversible layers with LSH and local attention",
        reformer::FAMILIES,
    ),
];

/// Every entry with its group, in registry order.
pub(crate) fn entries() -> impl Iterator<Item = (&'static str, &'static Family)> {
    REGISTRY
        .iter()
        .flat_map(|(group, f)| f.iter().map(move |e| (*group, e)))
}

/// The entry of a model type: the first in registry order.
pub(crate) fn find(model_type: &str) -> Option<&'static Family> {
    entries()
        .map(|(_, f)| f)
        .find(|f| f.model_type == model_type)
}

/// Every supported model type, in registry order (each once).
pub(crate) fn model_types() -> impl Iterator<Item = &'static str> {
    let mut seen = std::collections::HashSet::new();
    entries()
        .map(|(_, f)| f.model_type)
        .filter(move |t| seen.insert(*t))
}
