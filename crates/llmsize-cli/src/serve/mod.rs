//! `llmsize serve`: a local web calculator over the same commands as the CLI.

use crate::Failure;
use crate::cli::ServeArgs;

/// Serve the page and its API on 127.0.0.1 until interrupted.
pub(crate) fn run(_args: &ServeArgs) -> Result<(), Failure> {
    Err(Failure::Output(std::io::Error::other(
        "llmsize serve is not built yet",
    )))
}
