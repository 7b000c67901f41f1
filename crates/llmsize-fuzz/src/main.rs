//! `llmsize-fuzz`: see the library's documentation. Exit status: 0 no finding, 1 findings,
//! 2 usage or setup error.

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a command-line tool: the report goes to stdout, progress to stderr"
)]

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use llmsize_fuzz::{Options, Scope, alloc, exercise, input, repository_root, run, seeds};

/// Mutation fuzzer for the weight-header readers and the config → spec → count path.
///
/// Seeds are the repository's fixtures: SafeTensors and GGUF headers, and config.json files.
/// Each input runs through `safetensors::parse_header`, `gguf::parse_header` (real length and
/// `u64::MAX`), `parse_index`, and what they accept (and every JSON input) through the
/// adapters and the core's count, memory and flops. A panic, a stage slower than
/// --max-input-ms or allocating more than --max-input-mib is a finding: its input goes to
/// the findings directory, and the exit status is 1.
#[derive(Parser, Debug)]
#[command(name = "llmsize-fuzz", version)]
struct Args {
    /// Stop after this many inputs (default 10000 when --seconds is not given).
    #[arg(long)]
    iterations: Option<u64>,
    /// Stop after this many seconds.
    #[arg(long)]
    seconds: Option<f64>,
    /// Seed of the generator: the same seed gives the same inputs.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// A stage that takes longer than this on one input is a finding.
    #[arg(long, default_value_t = 1000)]
    max_input_ms: u64,
    /// A stage whose allocations peak above this on one input is a finding.
    #[arg(long, default_value_t = 256)]
    max_input_mib: u64,
    /// An input still running after this long stops the run (a finding).
    #[arg(long, default_value_t = 60_000)]
    hang_ms: u64,
    /// Which stages run: the weight readers only, or all.
    #[arg(long, value_enum, default_value_t = ScopeArg::All)]
    stages: ScopeArg,
    /// Which findings make the exit status 1: in any stage, or only in the weight readers
    /// (findings elsewhere are still saved and printed).
    #[arg(long, value_enum, default_value_t = ScopeArg::All)]
    fail_on: ScopeArg,
    /// Allocations beyond this many MiB in use fail (the process aborts, naming the
    /// iteration), so that a blow-up does not take the machine down.
    #[arg(long, default_value_t = 4096)]
    hard_cap_mib: u64,
    /// Repository root (seeds are read from its fixtures).
    #[arg(long)]
    root: Option<PathBuf>,
    /// Where to write findings [default: <root>/target/fuzz-findings].
    #[arg(long)]
    findings: Option<PathBuf>,
    /// Write the input of this iteration (with --seed) to the findings directory and exit.
    #[arg(long)]
    dump: Option<u64>,
    /// Run one file through every stage and print what each did.
    #[arg(long, conflicts_with = "dump")]
    replay: Option<PathBuf>,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum ScopeArg {
    Weights,
    All,
}

impl From<ScopeArg> for Scope {
    fn from(s: ScopeArg) -> Scope {
        match s {
            ScopeArg::Weights => Scope::Weights,
            ScopeArg::All => Scope::All,
        }
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    let root = args.root.clone().unwrap_or_else(repository_root);
    let findings_dir = args
        .findings
        .clone()
        .unwrap_or_else(|| root.join("target/fuzz-findings"));
    alloc::set_hard_cap(
        usize::try_from(args.hard_cap_mib.saturating_mul(1 << 20)).unwrap_or(usize::MAX),
    );

    if let Some(path) = &args.replay {
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) => {
                eprintln!("error: failed to read `{}`: {e}", path.display());
                return ExitCode::from(2);
            }
        };
        for r in exercise(&bytes, None, true) {
            println!(
                "{:45} {:>9.3} ms {:>10} KiB  {}",
                r.stage,
                r.elapsed.as_secs_f64() * 1000.0,
                r.peak_bytes >> 10,
                r.panic.as_deref().unwrap_or("ok")
            );
        }
        return ExitCode::SUCCESS;
    }

    let seeds = match seeds::load(&root) {
        Ok(s) if !s.is_empty() => s,
        Ok(_) => {
            eprintln!("error: no seed files under `{}`", root.display());
            return ExitCode::from(2);
        }
        Err(e) => {
            eprintln!(
                "error: failed to read the seeds under `{}`: {e}",
                root.display()
            );
            return ExitCode::from(2);
        }
    };

    if let Some(iteration) = args.dump {
        let (index, bytes) = input(&seeds, args.seed, iteration);
        let path = findings_dir.join(format!("input-seed{}-{iteration}.bin", args.seed));
        let written =
            std::fs::create_dir_all(&findings_dir).and_then(|()| std::fs::write(&path, bytes));
        if let Err(e) = written {
            eprintln!("error: failed to write `{}`: {e}", path.display());
            return ExitCode::from(2);
        }
        let from = seeds.get(index).map_or("?", |s| s.name.as_str());
        println!("{} (from {from})", path.display());
        return ExitCode::SUCCESS;
    }

    let options = Options {
        iterations: args.iterations.or(if args.seconds.is_none() {
            Some(10_000)
        } else {
            None
        }),
        duration: args.seconds.map(|s| Duration::from_secs_f64(s.max(0.0))),
        seed: args.seed,
        max_input: Duration::from_millis(args.max_input_ms),
        max_input_bytes: usize::try_from(args.max_input_mib.saturating_mul(1 << 20))
            .unwrap_or(usize::MAX),
        hang: Duration::from_millis(args.hang_ms),
        findings_dir,
        stages: args.stages.into(),
    };
    eprintln!(
        "llmsize-fuzz: seed {}, {} seed files, findings in `{}`",
        options.seed,
        seeds.len(),
        options.findings_dir.display()
    );
    let summary = run(&options, &seeds, &mut |line| {
        eprintln!("llmsize-fuzz: {line}");
    });

    println!(
        "{} inputs in {:.1} s, seed {}",
        summary.iterations,
        summary.elapsed.as_secs_f64(),
        options.seed
    );
    println!(
        "{:45} {:>9} {:>12} {:>12}",
        "stage", "inputs", "slowest", "peak"
    );
    for (stage, (n, slowest, peak)) in &summary.stages {
        println!(
            "{stage:45} {n:>9} {:>9.1} ms {:>8} KiB",
            slowest.as_secs_f64() * 1000.0,
            peak >> 10
        );
    }
    if summary.findings.is_empty() {
        println!("no findings");
        return ExitCode::SUCCESS;
    }
    let fail_on = Scope::from(args.fail_on);
    println!(
        "\n{} findings ({} more of the same kinds not saved):",
        summary.findings.len(),
        summary.repeats
    );
    for f in &summary.findings {
        println!(
            "  {:?} in {} (iteration {}, from {}): {}",
            f.problem,
            f.stage,
            f.iteration,
            f.seed_file,
            f.detail.lines().next().unwrap_or_default()
        );
        if let Some(path) = &f.saved {
            println!("    input: {}", path.display());
        }
    }
    if summary.fails(fail_on) {
        ExitCode::from(1)
    } else {
        let scope = match args.fail_on {
            ScopeArg::Weights => "weights",
            ScopeArg::All => "all",
        };
        println!("(none in the stages of `--fail-on {scope}`: exit 0)");
        ExitCode::SUCCESS
    }
}
