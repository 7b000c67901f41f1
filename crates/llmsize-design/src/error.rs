//! The errors of a design search.

/// Why a search could not run. A search that runs and finds no shape is not an error: it is
/// an outcome with no candidates and the constraints to relax.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DesignError {
    /// A constraint or target is malformed or out of range.
    #[error("{flag}: {problem}")]
    Invalid {
        /// The flag, as typed (`--tolerance`).
        flag: String,
        /// What is wrong with its value.
        problem: String,
    },
    /// The model cannot be resized by this search (its sizes are not where the search looks,
    /// or its count is not a closed form of them).
    #[error("`--like {model}`: cannot resize this model: {reason}")]
    Unsupported {
        /// The model.
        model: String,
        /// Why.
        reason: String,
    },
    /// The real reader refused a config the search built.
    #[error("`{model}` resized to {shape}: {message}")]
    Reader {
        /// The model.
        model: String,
        /// The shape, `d=… L=…`.
        shape: String,
        /// The reader's message.
        message: String,
    },
    /// Something that cannot happen did (the closed form disagreed with the reader).
    #[error("internal error: {0}")]
    Internal(String),
}
