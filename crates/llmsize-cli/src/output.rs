//! Where text goes: data to stdout, warnings and errors to stderr.

#![expect(
    clippy::print_stderr,
    reason = "this module is the one place that writes to the terminal"
)]

use std::io::Write as _;

use crate::Failure;

/// Write data to stdout.
pub(crate) fn print(text: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()
}

/// Warning lines on stderr.
pub(crate) fn warn_all(warnings: &[String]) {
    for w in warnings {
        eprintln!("warning: {w}");
    }
}

/// `error: …`, one `caused by: …` per source not already quoted, then the `hint:`.
pub(crate) fn print_error(failure: &Failure) {
    let (top, hint): (&dyn std::error::Error, Option<&str>) = match failure {
        Failure::Engine(e) => (e, e.hint()),
        Failure::Output(e) => (e, None),
    };
    let mut previous = match failure {
        // `> /dev/full`, a full disk: say what was being written, not only the OS's words.
        Failure::Output(e) => format!("cannot write the output to stdout: {e}"),
        Failure::Engine(e) => e.to_string(),
    };
    eprintln!("error: {previous}");
    let mut cause = top.source();
    while let Some(c) = cause {
        let text = c.to_string();
        // Typed errors often quote their source already; print each cause once.
        if !previous.ends_with(&text) {
            eprintln!("  caused by: {text}");
            previous = text;
        }
        cause = c.source();
    }
    if let Some(h) = hint {
        eprintln!("\nhint: {h}");
    }
}
