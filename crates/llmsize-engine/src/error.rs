//! The one error type of the engine, and the kind a front end maps to its own status
//! (an exit code, an HTTP status, a Python exception class).

use llmsize_adapters::ConfigError;
use llmsize_core::SpecError;
use llmsize_weights::WeightsError;

/// What went wrong, coarsely: enough for a caller to choose a status without parsing text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The input is malformed or inconsistent: a config, a header, a flag value.
    BadInput,
    /// A file, preset, cached repo or Hub repo does not exist.
    NotFound,
    /// Well-formed, but llmsize does not handle it (a `model_type`, a GGUF architecture).
    Unsupported,
    /// A file exists but could not be read.
    Io,
    /// The Hub could not be reached or answered unexpectedly.
    Network,
    /// A bug in llmsize.
    Internal,
}

/// An error of the engine. Every message names the file (or model) and the key; a `hint`
/// says what to do about it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A config (file, preset, GGUF metadata or `--set`) that cannot be read into a model.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A weight file's header is malformed.
    #[error(transparent)]
    Weights(#[from] WeightsError),
    /// A model description is inconsistent, or a count over it overflows.
    #[error("{model}: {source}")]
    Spec {
        /// The model's name.
        model: String,
        /// The core's error.
        #[source]
        source: SpecError,
    },
    /// A model described by flags (`--hidden`, `--layers`, …) is inconsistent.
    #[error(transparent)]
    Design(SpecError),
    /// A file or directory exists but could not be read.
    #[error("failed to {what}")]
    Io {
        /// What was attempted, naming the path: "read `config.json`".
        what: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A request option or argument is wrong (a flag out of range, an unknown format).
    #[error("{message}")]
    BadInput {
        /// What is wrong, naming the option.
        message: String,
        /// What to do instead.
        hint: Option<String>,
    },
    /// A file, preset or repository does not exist.
    #[error("{message}")]
    NotFound {
        /// What was looked for, and where.
        message: String,
        /// What to do instead.
        hint: Option<String>,
    },
    /// The Hub could not be reached, refused, or answered something unexpected.
    #[error("{message}")]
    Network {
        /// The URL and what happened.
        message: String,
        /// What to do about it.
        hint: Option<String>,
        /// The transport's error, if any.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
    /// Something that cannot happen did.
    #[error("internal error: {message}")]
    Internal {
        /// What.
        message: String,
    },
}

impl Error {
    /// The kind of error, for a front end's status.
    #[must_use]
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Config(
                ConfigError::Unsupported { .. } | ConfigError::UnsupportedType { .. },
            ) => ErrorKind::Unsupported,
            Error::Config(_)
            | Error::Weights(_)
            | Error::Spec { .. }
            | Error::Design(_)
            | Error::BadInput { .. } => ErrorKind::BadInput,
            Error::Io { .. } => ErrorKind::Io,
            Error::NotFound { .. } => ErrorKind::NotFound,
            Error::Network { .. } => ErrorKind::Network,
            Error::Internal { .. } => ErrorKind::Internal,
        }
    }

    /// What to do about it, when llmsize can tell.
    #[must_use]
    pub fn hint(&self) -> Option<&str> {
        match self {
            Error::BadInput { hint, .. }
            | Error::NotFound { hint, .. }
            | Error::Network { hint, .. } => hint.as_deref(),
            _ => None,
        }
    }

    pub(crate) fn bad_input(message: impl Into<String>, hint: impl Into<String>) -> Self {
        Error::BadInput {
            message: message.into(),
            hint: Some(hint.into()),
        }
    }

    pub(crate) fn not_found(message: impl Into<String>, hint: impl Into<String>) -> Self {
        Error::NotFound {
            message: message.into(),
            hint: Some(hint.into()),
        }
    }

    pub(crate) fn network(message: impl Into<String>) -> Self {
        Error::Network {
            message: message.into(),
            hint: None,
            source: None,
        }
    }

    pub(crate) fn spec(model: &str) -> impl FnOnce(SpecError) -> Self + '_ {
        move |source| Error::Spec {
            model: model.to_owned(),
            source,
        }
    }

    pub(crate) fn io(
        action: &'static str,
        path: &std::path::Path,
    ) -> impl FnOnce(std::io::Error) -> Self {
        let what = format!("{action} `{}`", path.display());
        move |source| Error::Io { what, source }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_and_hints() {
        let e = Error::not_found("`x`: no such file or directory", "check the path");
        assert_eq!(e.kind(), ErrorKind::NotFound);
        assert_eq!(e.hint(), Some("check the path"));
        let e = Error::Config(ConfigError::Unsupported {
            file: "c.json".into(),
            found: "mamba".into(),
            supported: "llama".into(),
        });
        assert_eq!(e.kind(), ErrorKind::Unsupported);
        assert!(e.to_string().contains("c.json"));
        let e = Error::Config(ConfigError::Missing {
            file: "c.json".into(),
            key: "hidden_size".into(),
            expected: "a positive integer".into(),
        });
        assert_eq!(e.kind(), ErrorKind::BadInput);
        assert_eq!(e.hint(), None);
    }
}
