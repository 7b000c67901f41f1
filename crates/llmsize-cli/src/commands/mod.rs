//! One module per subcommand: flags → an engine request, the outcome → a [`Rendered`] output
//! and a status. Nothing here prints: `main` writes what a command returns, and `llmsize
//! serve` answers HTTP requests with the same text.

pub(crate) mod design;
pub(crate) mod flops;
pub(crate) mod inspect;
pub(crate) mod memory;
pub(crate) mod params;
pub(crate) mod presets;
pub(crate) mod train;

use llmsize_core::render::doc::{Doc, TextOptions};
use llmsize_engine::{Engine, HubEnv, HubOptions};

use crate::cli::{Command, Format, HubArgs};
use crate::{Failure, Outcome};

/// Where a command runs: the engine it asks, and how a table is laid out.
#[derive(Debug, Clone)]
pub(crate) struct Env {
    /// The engine (the process's Hugging Face environment for the CLI; none for the server).
    pub(crate) engine: Engine,
    /// The terminal's width and colour (none for a pipe, a file or the server).
    pub(crate) text: TextOptions,
}

impl Env {
    /// This process's environment: Hub repo ids resolved with its Hugging Face variables,
    /// `--online`'s progress drawn on stderr, tables fitted to `width`.
    pub(crate) fn process(text: TextOptions) -> Self {
        let mut env = HubEnv::from_vars(|k| std::env::var_os(k));
        env.progress = Some(crate::output::fetch_progress());
        env.transfer = Some(crate::output::slow_transfer());
        Env {
            engine: Engine::new(env),
            text,
        }
    }
}

/// What a command produced: the text for stdout, the warnings for stderr, the exit status.
#[derive(Debug)]
pub(crate) struct Rendered {
    /// The output, in the format asked for.
    pub(crate) text: String,
    /// Warnings (stderr on the command line; a JSON field of the server's answers).
    pub(crate) warnings: Vec<String>,
    /// Success, or a well-formed "no".
    pub(crate) outcome: Outcome,
}

impl Rendered {
    /// Text with its warnings and a success status.
    pub(crate) fn new(text: String, warnings: Vec<String>) -> Self {
        Rendered {
            text,
            warnings,
            outcome: Outcome::Success,
        }
    }

    /// Exit 1 unless `yes` (fits, agrees).
    pub(crate) fn status(mut self, yes: bool) -> Self {
        self.outcome = if yes { Outcome::Success } else { Outcome::No };
        self
    }
}

/// A document in a text format: the terminal table, Markdown or CSV. JSON is each command's
/// own (the engine's wire types), never rendered from the document.
pub(crate) fn doc_text(doc: &Doc, format: Format, env: &Env) -> String {
    match format {
        Format::Markdown => doc.to_markdown(),
        Format::Csv => doc.to_csv(),
        Format::Table | Format::Json | Format::Svg | Format::Mermaid => doc.to_text(&env.text),
    }
}

/// `--format svg` or `mermaid` asked of a command that has no such picture.
pub(crate) fn no_picture(command: &str, format: Format) -> Failure {
    let (name, has) = match format {
        Format::Mermaid => ("mermaid", "`params`"),
        _ => ("svg", "`params`, `memory`, `flops` and `train`"),
    };
    Failure::Usage(format!(
        "`llmsize {command}` has no {name} picture: {has} draw one; use --format table, json, markdown or csv"
    ))
}

/// Run a command.
pub(crate) fn run(command: &Command, env: &Env) -> Result<Rendered, Failure> {
    match command {
        Command::Serve(args) => {
            crate::serve::run(args).map(|()| Rendered::new(String::new(), Vec::new()))
        }
        Command::Completions(args) => Ok(Rendered::new(completions(args.shell), Vec::new())),
        Command::Man => Ok(Rendered::new(man()?, Vec::new())),
        Command::Params(args) => params::run(args, env),
        Command::Memory(args) => memory::run(args, env),
        Command::Flops(args) => flops::run(args, env),
        Command::Train(args) => train::run(args, env),
        Command::Inspect(args) => inspect::inspect(args, env),
        Command::Audit(args) => inspect::audit(args, env),
        Command::Design(args) => design::run(args, env),
        Command::Presets(args) => presets::run(args, env),
        Command::Gpus(args) => presets::gpus(args, env),
    }
}

/// A completion script for `shell`, from the command's own definition (`clap_complete`).
fn completions(shell: clap_complete::Shell) -> String {
    use clap::CommandFactory as _;
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut crate::cli::Cli::command(), "llmsize", &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// The manual page, from the command's own definition (`clap_mangen`), with every subcommand
/// as a section so one page documents the tool.
fn man() -> Result<String, Failure> {
    use clap::CommandFactory as _;
    let command = crate::cli::Cli::command();
    let mut out = Vec::new();
    let man = clap_mangen::Man::new(command.clone());
    man.render_title(&mut out)?;
    man.render_name_section(&mut out)?;
    man.render_synopsis_section(&mut out)?;
    man.render_description_section(&mut out)?;
    man.render_options_section(&mut out)?;
    man.render_subcommands_section(&mut out)?;
    for sub in command.get_subcommands().filter(|s| s.get_name() != "help") {
        let page =
            clap_mangen::Man::new(sub.clone().bin_name(format!("llmsize {}", sub.get_name())));
        let mut section = Vec::new();
        page.render_synopsis_section(&mut section)?;
        page.render_description_section(&mut section)?;
        page.render_options_section(&mut section)?;
        // Each subcommand's sections become subsections of one page.
        let text = String::from_utf8_lossy(&section).replace(".SH ", ".SS ");
        out.extend_from_slice(
            format!(".SH \"LLMSIZE {}\"\n", sub.get_name().to_uppercase()).as_bytes(),
        );
        out.extend_from_slice(text.as_bytes());
    }
    man.render_extra_section(&mut out)?;
    man.render_version_section(&mut out)?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

pub(crate) fn hub(args: &HubArgs) -> HubOptions {
    HubOptions {
        online: args.online,
        revision: args.revision.clone(),
        file: args.file.clone(),
        timeout: args.timeout,
        deadline: args.deadline,
        jobs: usize::from(args.jobs),
    }
}
