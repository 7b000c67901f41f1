//! `llmsize`: the command-line tool. Glue only: parse arguments, read files, pick a
//! renderer, write the output, map the outcome to an exit status.

mod cli;
mod commands;
mod hub;
mod output;
mod remote;
mod resolve;
mod weights_io;

use std::process::ExitCode;

use clap::Parser;

/// Outcome of a command, mapped to the exit status in one place.
pub(crate) enum Outcome {
    /// Exit 0.
    Success,
    /// Exit 1: a well-formed "no" (does not fit; an audit disagrees).
    No,
}

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    let result = match &cli.command {
        cli::Command::Params(args) => commands::params::run(args),
        cli::Command::Memory(args) => commands::memory::run(args),
        cli::Command::Flops(args) => commands::flops::run(args),
        cli::Command::Inspect(args) => commands::inspect::inspect(args),
        cli::Command::Audit(args) => commands::inspect::audit(args),
        cli::Command::Presets(args) => commands::presets::run(args),
        cli::Command::Gpus(args) => commands::presets::gpus(args),
    };
    match result {
        Ok(Outcome::Success) => ExitCode::SUCCESS,
        Ok(Outcome::No) => ExitCode::from(1),
        Err(err) => {
            if output::is_broken_pipe(&err) {
                return ExitCode::SUCCESS;
            }
            output::print_error(&err);
            ExitCode::from(2)
        }
    }
}
