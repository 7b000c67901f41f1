//! The registry of model types: one file per family, each a list of [`Family`] entries.
//!
//! A new model type is an entry in the file of its family (or a new file listed here): the
//! keys its configuration class reads with their defaults, and the switches of its block, or
//! a reader of its own for what is really new. Dispatch, `llmsize presets`, error messages and
//! the README's list all come from [`REGISTRY`].

mod classic;
mod dense;
mod encoders;
mod experts;
mod gpt;
mod latent;
mod llama;
mod recurrent;
mod ssm;
mod vision;

use super::family::Family;

/// Every family file's entries.
pub(crate) const REGISTRY: &[&[Family]] = &[
    classic::FAMILIES,
    llama::FAMILIES,
    dense::FAMILIES,
    gpt::FAMILIES,
    experts::FAMILIES,
    latent::FAMILIES,
    ssm::FAMILIES,
    recurrent::FAMILIES,
    encoders::FAMILIES,
    vision::FAMILIES,
];

/// The entry of a model type.
pub(crate) fn find(model_type: &str) -> Option<&'static Family> {
    REGISTRY
        .iter()
        .flat_map(|f| f.iter())
        .find(|f| f.model_type == model_type)
}

/// Every supported model type, in registry order.
pub(crate) fn model_types() -> impl Iterator<Item = &'static str> {
    REGISTRY.iter().flat_map(|f| f.iter()).map(|f| f.model_type)
}
