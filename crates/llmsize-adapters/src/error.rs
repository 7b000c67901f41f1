//! Errors of the readers: each names the file, the key and what was expected.

use llmsize_core::SpecError;

/// A `config.json` that cannot be turned into a model description.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The text is not JSON.
    #[error("`{file}`: invalid JSON at line {line}, column {column}: {message}")]
    Json {
        /// The file.
        file: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// `serde_json`'s description.
        message: String,
    },
    /// The text starts with a UTF-8 byte-order mark, which JSON text must not.
    #[error(
        "`{file}` starts with a UTF-8 byte-order mark (EF BB BF): JSON text must not (Python's `json.loads`, which transformers uses, refuses it too); save the file without it"
    )]
    ByteOrderMark {
        /// The file.
        file: String,
    },
    /// The JSON is not an object.
    #[error("`{file}`: expected a JSON object at the top level, found {found}")]
    NotObject {
        /// The file.
        file: String,
        /// The kind of value found.
        found: String,
    },
    /// A key the count needs is absent.
    #[error("`{file}`: missing key `{key}`: expected {expected}")]
    Missing {
        /// The file.
        file: String,
        /// The key (or its accepted spellings).
        key: String,
        /// What it should hold.
        expected: String,
    },
    /// A key holds a value of the wrong type or out of range.
    #[error("`{file}`: key `{key}` is {found}: expected {expected}")]
    Invalid {
        /// The file.
        file: String,
        /// The key.
        key: String,
        /// The value found, as JSON.
        found: String,
        /// What it should hold.
        expected: String,
    },
    /// The `model_type` is not one llmsize knows.
    #[error("`{file}`: `model_type` `{found}` is not supported; supported: {supported}")]
    Unsupported {
        /// The file.
        file: String,
        /// The model type found.
        found: String,
        /// The supported model types.
        supported: String,
    },
    /// The `model_type` of a config is not in the registry.
    #[error(
        "`{file}`: `model_type` `{found}` is not supported{near}; llmsize reads {count} model types exactly (`llmsize presets --types` lists them); `--assume TYPE` counts it as one of them, with every figure marked as an estimate"
    )]
    UnsupportedType {
        /// The file.
        file: String,
        /// The model type found.
        found: String,
        /// How many types are supported.
        count: usize,
        /// ` (did you mean `x`?)` when a supported type is close, else empty.
        near: String,
    },
    /// `--assume TYPE` names a type llmsize does not read either.
    #[error("`--assume {given}`: not a supported model type; supported: {supported}")]
    UnknownAssume {
        /// The type given.
        given: String,
        /// The supported model types.
        supported: String,
    },
    /// A `--set` override is malformed.
    #[error("`--set {given}`: {problem}")]
    Override {
        /// The argument as given.
        given: String,
        /// What is wrong.
        problem: String,
    },
    /// The description is inconsistent or its counts overflow.
    #[error("`{file}`: {source}")]
    Spec {
        /// The file.
        file: String,
        /// The core's error.
        #[source]
        source: SpecError,
    },
}
