//! Where text goes: data to stdout, warnings and errors to stderr.

use std::io::{IsTerminal as _, Write as _};
use std::sync::Mutex;

use llmsize_core::render::doc::TextOptions;
use llmsize_engine::{FetchProgress, ProgressSink, TransferProgress, TransferSink};

use crate::Failure;

/// `--online`'s progress, on stderr so stdout (a table, `--json`) stays clean. On a terminal,
/// one line redrawn in place (`fetching headers: 12/50 files`) and erased when done; to a
/// file or pipe, plain lines for two files or more: the start, every tenth of the files for 20 or
/// more, and the end with the time taken. The same with or without `--json`: stderr is not the data.
pub(crate) fn fetch_progress() -> ProgressSink {
    let tty = std::io::stderr().is_terminal();
    let last_tenth = Mutex::new(0usize);
    ProgressSink::new(move |p: FetchProgress| {
        let FetchProgress {
            done,
            total,
            elapsed,
        } = p;
        let files = if total == 1 { "file" } else { "files" };
        let mut err = std::io::stderr().lock();
        if tty {
            if done == total && done > 0 {
                let _ = write!(err, "\r\x1b[2K");
            } else {
                let _ = write!(err, "\r\x1b[2Kfetching headers: {done}/{total} {files}");
            }
            let _ = err.flush();
            return;
        }
        let tenth = (done * 10).checked_div(total).unwrap_or(10);
        let Ok(mut last) = last_tenth.lock() else {
            return;
        };
        if total < 2 {
            // One file: nothing worth a line in a log.
        } else if done == 0 {
            *last = 0;
            let _ = writeln!(err, "fetching headers: 0/{total} {files}");
        } else if done == total {
            let _ = writeln!(
                err,
                "fetching headers: {done}/{total} {files}, done in {:.1} s",
                elapsed.as_secs_f64()
            );
        } else if total >= 20 && tenth > *last {
            *last = tenth;
            let _ = writeln!(err, "fetching headers: {done}/{total} {files}");
        }
    })
}

/// A slow `--online` transfer, on stderr as its own line (the engine reports one after 2 s,
/// then every 5 s): `fetching `model-00001-of-00004.safetensors` header: 1.20 MiB in 5 s`.
/// On a terminal the line `fetch_progress` draws is cleared first, and redrawn by its next
/// report.
pub(crate) fn slow_transfer() -> TransferSink {
    let tty = std::io::stderr().is_terminal();
    TransferSink::new(move |p: TransferProgress| {
        let mut err = std::io::stderr().lock();
        if tty {
            let _ = write!(err, "\r\x1b[2K");
        }
        let _ = writeln!(
            err,
            "fetching {}: {} in {:.0} s",
            p.what,
            llmsize_core::units::human_bytes(p.bytes),
            p.elapsed.as_secs_f64()
        );
    })
}

/// How tables are laid out on this process's stdout: fitted to `COLUMNS` or the terminal's
/// width unless `--wide` (a pipe or a file without `COLUMNS` gets one line per row, as scripts
/// expect); coloured on a terminal unless `NO_COLOR` is set (<https://no-color.org>).
pub(crate) fn text_options(wide: bool) -> TextOptions {
    let tty = std::io::stdout().is_terminal();
    let columns = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|c| *c > 0);
    let width = if wide {
        None
    } else {
        columns.or_else(|| {
            tty.then(terminal_size::terminal_size)
                .flatten()
                .map(|(w, _)| usize::from(w.0))
        })
    };
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    TextOptions {
        width,
        color: tty && !no_color,
    }
}

/// Write data to stdout.
pub(crate) fn print(text: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()
}

/// Text on stderr. A failed write is ignored, as ripgrep does: stderr is where a failure
/// would be reported, so there is nowhere left to say it (`2>/dev/full` must not turn a
/// warning into a crash, nor an error into a panic).
pub(crate) fn to_stderr(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(text.as_bytes());
    let _ = err.flush();
}

/// Warning lines on stderr.
pub(crate) fn warn_all(warnings: &[String]) {
    for w in warnings {
        to_stderr(&format!("warning: {w}\n"));
    }
}

/// `error: …`, one `caused by: …` per source not already quoted, then the `hint:`.
pub(crate) fn print_error(failure: &Failure) {
    if std::io::stderr().is_terminal() {
        // Erase a progress line an error cut short.
        to_stderr("\r\x1b[2K");
    }
    to_stderr(&error_text(failure));
}

/// The text [`print_error`] writes, for `llmsize serve` to answer a bad request with the very
/// message the command line prints.
pub(crate) fn error_text(failure: &Failure) -> String {
    use std::fmt::Write as _;
    let (top, hint): (&dyn std::error::Error, Option<&str>) = match failure {
        Failure::Engine(e) => (e, e.hint()),
        Failure::Output(e) => (e, None),
        Failure::Usage(m) => return format!("error: {m}\n"),
    };
    let mut previous = match failure {
        // `> /dev/full`, a full disk: say what was being written, not only the OS's words.
        Failure::Output(e) => format!("cannot write the output to stdout: {e}"),
        Failure::Engine(e) => e.to_string(),
        Failure::Usage(m) => m.clone(),
    };
    let mut out = format!("error: {previous}\n");
    let mut cause = top.source();
    while let Some(c) = cause {
        let text = c.to_string();
        // Typed errors often quote their source already; print each cause once.
        if !previous.ends_with(&text) {
            let _ = writeln!(out, "  caused by: {text}");
            previous = text;
        }
        cause = c.source();
    }
    if let Some(h) = hint {
        let _ = write!(out, "\nhint: {h}\n");
    }
    out
}
