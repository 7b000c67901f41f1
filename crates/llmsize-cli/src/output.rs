//! Where text goes: data to stdout, warnings and errors to stderr; a closed pipe
//! (`llmsize presets | head`) ends the program quietly.

#![expect(
    clippy::print_stderr,
    reason = "this module is the one place that writes to the terminal"
)]

use std::io::Write as _;

/// Write data to stdout.
pub(crate) fn print(text: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()
}

/// A warning line on stderr.
pub(crate) fn warn(message: &str) {
    eprintln!("warning: {message}");
}

/// True when the error is stdout being closed by the reader.
pub(crate) fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// `error: …`, one `caused by: …` per source, then any `hint:` attached as context.
pub(crate) fn print_error(err: &anyhow::Error) {
    let mut chain = err.chain();
    let mut previous = String::new();
    if let Some(top) = chain.next() {
        previous = top.to_string();
        eprintln!("error: {previous}");
    }
    let mut hints = Vec::new();
    for cause in chain {
        let text = cause.to_string();
        if let Some(h) = text.strip_prefix("hint: ") {
            hints.push(h.to_owned());
        } else if !previous.ends_with(&text) {
            // Typed errors often quote their source already; print each cause once.
            eprintln!("  caused by: {text}");
            previous = text;
        }
    }
    for h in hints {
        eprintln!("\nhint: {h}");
    }
}
