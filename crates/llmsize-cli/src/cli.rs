//! Command-line arguments (clap derive); validation into settings happens in `commands`.

use clap::{Args, Parser, Subcommand, ValueEnum};

const EXIT_CODES: &str = "\
Exit status: 0 success; 1 a well-formed \"no\" (e.g. does not fit); 2 any error \
(bad input, unsupported model, usage).";

/// Exact Transformer sizes: parameters by component, with the formulas that give them.
#[derive(Debug, Parser)]
#[command(name = "llmsize", version, after_help = EXIT_CODES, arg_required_else_help = true)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Count a model's parameters, by component, exactly
    ///
    /// MODEL is a built-in preset (`llmsize presets`), a `config.json`, or a directory that
    /// holds one. Several MODELs print a side-by-side comparison. Or describe a model with
    /// `--hidden`/`--layers` (and optionally `--vocab`, `--heads`, `--kv-heads`, `--ffn`,
    /// `--ctx`, `--style`).
    #[command(after_help = EXIT_CODES)]
    Params(ParamsArgs),
    /// List the built-in presets with their sizes
    #[command(after_help = EXIT_CODES)]
    Presets(PresetsArgs),
}

#[derive(Debug, Args)]
pub(crate) struct ParamsArgs {
    /// Preset names, `config.json` files or directories containing one
    #[arg(value_name = "MODEL")]
    pub(crate) models: Vec<String>,

    /// Print one JSON object (an array for several models), integers in plain units
    #[arg(long, conflicts_with = "explain")]
    pub(crate) json: bool,

    /// Print the derivation: every formula with its symbols and its numbers
    #[arg(long)]
    pub(crate) explain: bool,

    /// Override a config field before counting (repeatable), e.g. `num_key_value_heads=8`;
    /// the value is read as JSON when it parses, else as a string
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub(crate) set: Vec<String>,

    /// Which head to count for encoders: the class in `architectures` (`config`), the bare
    /// encoder with pooler as papers quote (`base`), or the language-model head (`lm`)
    #[arg(long, value_enum, default_value_t = HeadArg::Config)]
    pub(crate) head: HeadArg,

    #[command(flatten)]
    pub(crate) design: DesignArgs,
}

/// A model described on the command line.
#[derive(Debug, Args)]
#[command(next_help_heading = "Describe a model instead of naming one")]
pub(crate) struct DesignArgs {
    /// Hidden size d
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..), requires = "layers")]
    pub(crate) hidden: Option<u64>,
    /// Number of layers L
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..), requires = "hidden")]
    pub(crate) layers: Option<u64>,
    /// Vocabulary size V [default: 50257 gpt, 32000 llama]
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..), requires = "hidden")]
    pub(crate) vocab: Option<u64>,
    /// Attention heads [default: d/64 gpt, d/128 llama]
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..), requires = "hidden")]
    pub(crate) heads: Option<u64>,
    /// Key/value heads (GQA/MQA) [default: = heads]
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..), requires = "hidden")]
    pub(crate) kv_heads: Option<u64>,
    /// FFN inner size [default: 4d gpt; 8d/3 rounded up to 256 llama]
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..), requires = "hidden")]
    pub(crate) ffn: Option<u64>,
    /// Context length (learned position rows for gpt) [default: 2048 gpt, 4096 llama]
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..), requires = "hidden")]
    pub(crate) ctx: Option<u64>,
    /// Block style
    #[arg(long, value_enum, default_value_t = StyleArg::Gpt)]
    pub(crate) style: StyleArg,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum StyleArg {
    /// GPT-2/3 block: d_ff = 4d, biases, LayerNorm, learned positions, tied head
    Gpt,
    /// LLaMA block: SwiGLU, RMSNorm, RoPE, no biases, untied head
    Llama,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum HeadArg {
    /// The class named in the config's `architectures`
    Config,
    /// The bare model (`AutoModel`; BERT's with pooler)
    Base,
    /// The language-model head (causal or masked)
    Lm,
}

#[derive(Debug, Args)]
pub(crate) struct PresetsArgs {
    /// Print JSON
    #[arg(long)]
    pub(crate) json: bool,
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn verify_cli() {
        super::Cli::command().debug_assert();
    }
}
