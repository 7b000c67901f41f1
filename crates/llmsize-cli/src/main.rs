//! `llmsize`: the command-line tool. Arguments in, the engine's outcome out: pick a
//! renderer, write the output, map the outcome to an exit status. Everything else (finding
//! models, reading files and the Hub, the arithmetic, the JSON contract) is in
//! `llmsize-engine` and below.

mod cli;
mod commands;
mod output;
mod serve;

use std::process::ExitCode;

use clap::Parser;

/// Outcome of a command, mapped to the exit status in one place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Exit 0.
    Success,
    /// Exit 1: a well-formed "no" (does not fit; an audit disagrees).
    No,
}

/// Why a command failed: the engine said so, or stdout could not be written.
#[derive(Debug)]
pub(crate) enum Failure {
    /// An error of the engine (bad input, not found, network, …).
    Engine(llmsize_engine::Error),
    /// Writing the output failed (a closed pipe exits quietly: see `main`).
    Output(std::io::Error),
    /// A question the command cannot answer as asked (exit 2): a picture it has none of, a
    /// chart past its limits, a design without a target.
    Usage(String),
}

impl From<llmsize_charts::ChartError> for Failure {
    fn from(e: llmsize_charts::ChartError) -> Self {
        Failure::Usage(e.to_string())
    }
}

impl From<llmsize_engine::Error> for Failure {
    fn from(e: llmsize_engine::Error) -> Self {
        Failure::Engine(e)
    }
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Self {
        Failure::Output(e)
    }
}

/// 128 + SIGPIPE (13): the exit status of a process killed by a closed pipe.
const BROKEN_PIPE: u8 = 141;

fn main() -> ExitCode {
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return clap_exit(&e),
    };
    let env = commands::Env::process(output::text_options(cli.command.wide()));
    let result = commands::run(&cli.command, &env).and_then(|r| {
        output::warn_all(&r.warnings);
        output::print(&r.text)?;
        Ok(r.outcome)
    });
    match result {
        Ok(Outcome::Success) => ExitCode::SUCCESS,
        Ok(Outcome::No) => ExitCode::from(1),
        Err(failure) => failed(&failure),
    }
}

/// The exit status of a failure, its message written (quietly for a closed pipe).
fn failed(failure: &Failure) -> ExitCode {
    match failure {
        // `llmsize presets | head`: the reader closed the pipe, so the output was cut short.
        // Quietly, with the status a shell reports for a C tool killed by SIGPIPE (coreutils'
        // `seq 1 1000000 | head -1` leaves `PIPESTATUS` 141): `set -o pipefail` scripts see
        // the same failure for llmsize as for `seq`, and never mistake a cut output for a
        // whole one. (Rust ignores SIGPIPE, so the write returns `BrokenPipe` instead.)
        Failure::Output(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            ExitCode::from(BROKEN_PIPE)
        }
        _ => {
            output::print_error(failure);
            ExitCode::from(2)
        }
    }
}

/// clap's own answers: `--help` and `--version` are data on stdout, and a failed write of
/// them is a failure like any other (clap's `exit` would ignore it and exit 0); usage
/// errors go to stderr, whose failure nothing can report.
fn clap_exit(e: &clap::Error) -> ExitCode {
    let code = u8::try_from(e.exit_code()).unwrap_or(2);
    if e.use_stderr() {
        let _ = e.print();
        return ExitCode::from(code);
    }
    let styled = e.render();
    let text = if std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        styled.ansi().to_string()
    } else {
        styled.to_string()
    };
    match output::print(&text) {
        Ok(()) => ExitCode::from(code),
        Err(io) => failed(&Failure::Output(io)),
    }
}
